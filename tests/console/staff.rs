//! Staff management in the console (`/console/staff`): admins only, every
//! action behind the session's CSRF token, the self and last-admin rules,
//! and changes that sign the changed account out. Through the real router
//! on a fresh database of either store.

use crate::common::console::{Browser, PASSWORD, add_staff, signed_in};
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::staff::{Password, Role, StaffName};
use couponkeeper::service::ServiceError;
use couponkeeper::service::staff::{StaffChange, StaffSession, StaffView};

const NEW_PASSWORD: &str = "a brand new passphrase";

/// The account as stored, if it exists.
async fn account(app: &TestApp, name: &str) -> Option<StaffView> {
    app.service
        .list_staff()
        .await
        .expect("list staff")
        .into_iter()
        .find(|a| a.name == name)
}

/// Role and disabled flag of every account, to show nothing changed.
async fn snapshot(app: &TestApp) -> Vec<(String, String, bool)> {
    app.service
        .list_staff()
        .await
        .expect("list staff")
        .into_iter()
        .map(|a| (a.name, a.role, a.disabled))
        .collect()
}

/// Whether `name` can sign in with `password` (in a fresh browser).
async fn can_sign_in(app: &TestApp, name: &str, password: &str) -> bool {
    let mut b = Browser::new(app);
    b.sign_in_as(name, password).await;
    b.cookies.contains_key("ck_session")
}

/// A browser signed in as an existing account.
async fn browser_for<'a>(app: &'a TestApp, name: &str) -> Browser<'a> {
    let mut b = Browser::new(app);
    let r = b.sign_in_as(name, PASSWORD).await;
    assert_eq!(r.location.as_deref(), Some("/console"), "{name} signs in");
    b
}

/// Every action on `/console/staff`, with valid fields, aimed at `target`.
fn actions(target: &str) -> Vec<(String, Vec<(&'static str, &'static str)>)> {
    vec![
        (
            "/console/staff".to_string(),
            vec![
                ("name", "newcomer"),
                ("role", "admin"),
                ("password", NEW_PASSWORD),
                ("password_again", NEW_PASSWORD),
            ],
        ),
        (
            format!("/console/staff/{target}/role"),
            vec![("role", "admin")],
        ),
        (
            format!("/console/staff/{target}/password"),
            vec![
                ("password", NEW_PASSWORD),
                ("password_again", NEW_PASSWORD),
                ("own_password", PASSWORD),
            ],
        ),
        (format!("/console/staff/{target}/disable"), vec![]),
        (format!("/console/staff/{target}/enable"), vec![]),
    ]
}

/// Posts a form with the session's own token and returns the flash the
/// redirect leads to.
async fn post_and_read_flash(b: &mut Browser<'_>, path: &str, fields: &[(&str, &str)]) -> String {
    let csrf = b.csrf().await;
    let mut all: Vec<(&str, &str)> = fields.to_vec();
    all.push(("csrf", &csrf));
    let r = b.post_form(path, &all).await;
    assert_eq!(r.status, 303, "{path}: {}", r.text);
    assert_eq!(r.location.as_deref(), Some("/console/staff"), "{path}");
    let page = b.get("/console/staff").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let start = page
        .text
        .find("data-testid=\"flash\"")
        .unwrap_or_else(|| panic!("a flash message after {path}: {}", page.text));
    let rest = &page.text[start..];
    let rest = &rest[rest.find('>').map_or(0, |i| i + 1)..];
    rest[..rest.find("</div>").unwrap_or(rest.len())].to_string()
}

/// The row of account `name` on a staff page.
fn row_of<'p>(html: &'p str, name: &str) -> &'p str {
    let start = html
        .find(&format!("<tr data-staff=\"{name}\""))
        .unwrap_or_else(|| panic!("a row for {name}: {html}"));
    let end = html[start..]
        .find("</tr>")
        .map_or(html.len(), |e| start + e);
    &html[start..end]
}

/// Posts a form that is refused beside account `name`'s row: the page
/// comes back (422) with the message at `field` inside that row, which is
/// returned.
async fn post_and_read_row_error(
    b: &mut Browser<'_>,
    path: &str,
    fields: &[(&str, &str)],
    name: &str,
    field: &str,
) -> String {
    let csrf = b.csrf().await;
    let mut all: Vec<(&str, &str)> = fields.to_vec();
    all.push(("csrf", &csrf));
    let r = b.post_form(path, &all).await;
    assert_eq!(r.status, 422, "{path}: {}", r.text);
    assert!(!r.text.contains("data-testid=\"flash\""), "not a flash");
    let row = row_of(&r.text, name);
    let marker = format!("data-field-error=\"{field}\"");
    let start = row
        .find(&marker)
        .unwrap_or_else(|| panic!("a message at {field} in {name}'s row after {path}: {row}"));
    let rest = &row[start..];
    let rest = &rest[rest.find('>').map_or(0, |i| i + 1)..];
    rest[..rest.find("</p>").unwrap_or(rest.len())].to_string()
}

/// Posts a form that is refused with a message at `field`: the page comes
/// back (422, not a redirect) with the message beside that field, which
/// is returned.
async fn post_and_read_field_error(
    b: &mut Browser<'_>,
    path: &str,
    fields: &[(&str, &str)],
    field: &str,
) -> String {
    let csrf = b.csrf().await;
    let mut all: Vec<(&str, &str)> = fields.to_vec();
    all.push(("csrf", &csrf));
    let r = b.post_form(path, &all).await;
    assert_eq!(r.status, 422, "{path}: {}", r.text);
    let marker = format!("data-field-error=\"{field}\"");
    let start = r
        .text
        .find(&marker)
        .unwrap_or_else(|| panic!("a message at {field} after {path}: {}", r.text));
    let rest = &r.text[start..];
    let rest = &rest[rest.find('>').map_or(0, |i| i + 1)..];
    rest[..rest.find("</p>").unwrap_or(rest.len())].to_string()
}

#[tokio::test]
async fn an_admin_sees_every_account_and_adds_one_that_can_then_sign_in() {
    let app = spawn_app().await;
    add_staff(&app, "sam", Role::Support).await;
    let mut admin = signed_in(&app, Role::Admin).await;

    let home = admin.get("/console").await;
    assert!(
        home.contains("href=\"/console/staff\""),
        "admins see the nav link"
    );
    let page = admin.get("/console/staff").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("员工账户") && page.contains("添加账户"));
    assert!(page.contains("data-staff=\"sam\"") && page.contains("data-staff=\"admin-1\""));
    assert!(page.contains("客服") && page.contains("管理员"));
    assert!(page.contains("<th scope=\"col\">"));
    assert!(page.contains("for=\"new-name\"") && page.contains("id=\"new-name\""));
    assert!(page.contains("for=\"pw-sam\"") && page.contains("id=\"pw-sam\""));
    assert!(
        !page.contains("action=\"/console/staff/admin-1/disable\""),
        "no disable button on one's own row"
    );

    let flash = post_and_read_flash(
        &mut admin,
        "/console/staff",
        &[
            ("name", "Carol"),
            ("role", "operator"),
            ("password", NEW_PASSWORD),
            ("password_again", NEW_PASSWORD),
        ],
    )
    .await;
    assert!(flash.contains("已添加账户 carol"), "{flash}");
    let carol = account(&app, "carol").await.expect("carol exists");
    assert_eq!(carol.role, "operator");
    assert!(!carol.disabled);

    let mut b = Browser::new(&app);
    let r = b.sign_in_as("carol", NEW_PASSWORD).await;
    assert_eq!(r.location.as_deref(), Some("/console"));
    let home = b.get("/console").await;
    assert!(home.contains("运营"), "{}", home.text);
    assert!(
        !home.contains("href=\"/console/staff\""),
        "no link for operators"
    );

    let again = post_and_read_field_error(
        &mut admin,
        "/console/staff",
        &[
            ("name", "carol"),
            ("role", "support"),
            ("password", NEW_PASSWORD),
            ("password_again", NEW_PASSWORD),
        ],
        "name",
    )
    .await;
    assert!(
        again.contains("已被使用"),
        "a taken name is refused: {again}"
    );
    assert_eq!(
        account(&app, "carol").await.map(|a| a.role).as_deref(),
        Some("operator")
    );
}

#[tokio::test]
async fn the_page_is_in_english_when_the_browser_asks_for_it() {
    let app = spawn_app().await;
    let mut admin = signed_in(&app, Role::Admin).await;
    admin.accept_language = Some("en-US,en;q=0.9".into());
    let page = admin.get("/console/staff").await;
    assert_eq!(page.status, 200);
    assert!(page.contains("Staff accounts") && page.contains("Add an account"));
    assert!(page.contains(">Staff</a>"), "the nav link in English");
}

#[tokio::test]
async fn support_and_operator_get_a_403_on_the_page_and_on_every_action() {
    let app = spawn_app().await;
    add_staff(&app, "victim", Role::Support).await;
    for role in [Role::Support, Role::Operator] {
        let mut b = signed_in(&app, role).await;
        let home = b.get("/console").await;
        assert!(
            !home.contains("href=\"/console/staff\""),
            "{role:?} has no link"
        );
        assert_eq!(b.get("/console/staff").await.status, 403, "{role:?}");
        let before = snapshot(&app).await;
        let csrf = b.csrf().await;
        for (path, fields) in actions("victim") {
            let mut all = fields.clone();
            all.push(("csrf", &csrf));
            let r = b.post_form(&path, &all).await;
            assert_eq!(r.status, 403, "{role:?} {path}: {}", r.text);
        }
        assert_eq!(snapshot(&app).await, before, "{role:?} changed nothing");
    }
    assert!(account(&app, "newcomer").await.is_none());
    assert!(can_sign_in(&app, "victim", PASSWORD).await);
}

#[tokio::test]
async fn every_action_with_a_forged_or_missing_token_is_a_403_and_changes_nothing() {
    let app = spawn_app().await;
    add_staff(&app, "victim", Role::Support).await;
    let mut victim = browser_for(&app, "victim").await;
    let mut admin = signed_in(&app, Role::Admin).await;
    let before = snapshot(&app).await;
    let csrf = admin.csrf().await;
    for (path, fields) in actions("victim") {
        let mut forged = fields.clone();
        forged.push(("csrf", "forged"));
        assert_eq!(
            admin.post_form(&path, &forged).await.status,
            403,
            "forged {path}"
        );
        assert_eq!(
            admin.post_form(&path, &fields).await.status,
            403,
            "missing {path}"
        );
        let mut real = fields.clone();
        real.push(("csrf", &csrf));
        let cross = admin.post_form_with(&path, &real, "cross-site").await;
        assert_eq!(cross.status, 403, "cross-site {path}");
    }
    assert_eq!(snapshot(&app).await, before);
    assert!(account(&app, "newcomer").await.is_none());
    assert_eq!(
        victim.get("/console").await.status,
        200,
        "victim still signed in"
    );
    assert!(
        can_sign_in(&app, "victim", PASSWORD).await,
        "old password kept"
    );
}

#[tokio::test]
async fn disabling_an_account_ends_its_live_session_and_enabling_lets_it_back_in() {
    let app = spawn_app().await;
    add_staff(&app, "victim", Role::Support).await;
    let mut victim = browser_for(&app, "victim").await;
    let mut admin = signed_in(&app, Role::Admin).await;
    assert_eq!(victim.get("/console").await.status, 200);

    let flash = post_and_read_flash(&mut admin, "/console/staff/victim/disable", &[]).await;
    assert!(flash.contains("已停用 victim"), "{flash}");
    assert!(account(&app, "victim").await.is_some_and(|a| a.disabled));
    let next = victim.get("/console").await;
    assert_eq!(next.status, 303);
    assert!(
        next.location.as_deref().unwrap_or("").starts_with("/login"),
        "{:?}",
        next.location
    );
    assert!(
        !can_sign_in(&app, "victim", PASSWORD).await,
        "disabled accounts cannot sign in"
    );
    let page = admin.get("/console/staff").await;
    assert!(page.contains("data-state=\"disabled\""));
    assert!(page.contains("action=\"/console/staff/victim/enable\""));

    let flash = post_and_read_flash(&mut admin, "/console/staff/victim/enable", &[]).await;
    assert!(flash.contains("已启用 victim"), "{flash}");
    assert!(can_sign_in(&app, "victim", PASSWORD).await);
}

#[tokio::test]
async fn an_admin_cannot_disable_or_demote_their_own_account() {
    let app = spawn_app().await;
    let mut admin = signed_in(&app, Role::Admin).await;
    // Their row offers neither; a forged post is refused beside its buttons.
    for (path, fields) in [
        ("/console/staff/admin-1/role", vec![("role", "support")]),
        ("/console/staff/admin-1/role", vec![("role", "operator")]),
        ("/console/staff/admin-1/disable", vec![]),
    ] {
        let text = post_and_read_row_error(&mut admin, path, &fields, "admin-1", "form").await;
        assert!(
            text.contains("不能停用自己的账户或降低自己的角色"),
            "{path}: {text}"
        );
    }
    let me = account(&app, "admin-1").await.expect("admin");
    assert_eq!(me.role, "admin");
    assert!(!me.disabled);
    assert_eq!(
        admin.get("/console/staff").await.status,
        200,
        "still signed in as admin"
    );
}

#[tokio::test]
async fn the_last_enabled_admin_can_be_neither_demoted_nor_disabled() {
    let app = spawn_app().await;
    add_staff(&app, "other", Role::Admin).await;
    let mut admin = signed_in(&app, Role::Admin).await;
    // With two admins, one may disable the other ...
    let flash = post_and_read_flash(&mut admin, "/console/staff/other/disable", &[]).await;
    assert!(flash.contains("已停用 other"), "{flash}");
    // ... and a disabled admin does not count as a second one.
    let text = post_and_read_row_error(
        &mut admin,
        "/console/staff/admin-1/disable",
        &[],
        "admin-1",
        "form",
    )
    .await;
    assert!(text.contains("不能停用自己"), "{text}");
    // A session whose admin role was taken away meanwhile cannot act: the
    // rules are checked against the stored account, not the session.
    let stale = StaffSession {
        name: StaffName::parse("other").expect("name"),
        role: Role::Admin,
        csrf_token: String::new(),
    };
    for result in [
        app.service
            .set_staff_role(&stale, "admin-1", Role::Support, None)
            .await,
        app.service
            .set_staff_disabled(&stale, "admin-1", true, None)
            .await,
    ] {
        assert!(
            matches!(result, Err(ServiceError::Forbidden(_))),
            "{result:?}"
        );
    }
    let me = account(&app, "admin-1").await.expect("admin");
    assert_eq!((me.role.as_str(), me.disabled), ("admin", false));
}

#[tokio::test]
async fn two_admins_demoting_each_other_at_once_leave_exactly_one_admin() {
    let app = spawn_app().await;
    for round in 0..3 {
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        add_staff(&app, &a, Role::Admin).await;
        add_staff(&app, &b, Role::Admin).await;
        // Earlier rounds' survivors are demoted first, so a and b are the
        // only enabled admins.
        let session = |n: &str| StaffSession {
            name: StaffName::parse(n).expect("name"),
            role: Role::Admin,
            csrf_token: String::new(),
        };
        for old in app.service.list_staff().await.expect("list") {
            if old.role == "admin" && old.name != a && old.name != b && !old.disabled {
                app.service
                    .set_staff_disabled(&session(&a), &old.name, true, None)
                    .await
                    .expect("disable an earlier admin");
            }
        }
        let (sa, sb) = (session(&a), session(&b));
        let (ra, rb) = if round == 1 {
            tokio::join!(
                app.service.set_staff_disabled(&sa, &b, true, None),
                app.service.set_staff_disabled(&sb, &a, true, None),
            )
        } else {
            tokio::join!(
                app.service.set_staff_role(&sa, &b, Role::Support, None),
                app.service.set_staff_role(&sb, &a, Role::Operator, None),
            )
        };
        let changed = [&ra, &rb]
            .iter()
            .filter(|r| matches!(r, Ok(StaffChange::Changed)))
            .count();
        assert_eq!(changed, 1, "round {round}: {ra:?} {rb:?}");
        let refused = [&ra, &rb]
            .iter()
            .filter(|r| matches!(r, Err(ServiceError::Forbidden(_))))
            .count();
        assert_eq!(refused, 1, "round {round}: {ra:?} {rb:?}");
        let admins = app
            .service
            .list_staff()
            .await
            .expect("list")
            .into_iter()
            .filter(|s| s.role == "admin" && !s.disabled)
            .count();
        assert_eq!(admins, 1, "round {round}");
    }
}

#[tokio::test]
async fn a_weak_password_is_refused_beside_its_field_with_the_form_kept_and_nothing_changes() {
    let app = spawn_app().await;
    add_staff(&app, "victim", Role::Support).await;
    let mut victim = browser_for(&app, "victim").await;
    let mut admin = signed_in(&app, Role::Admin).await;
    let before = snapshot(&app).await;

    let add = |password: &'static str| {
        vec![
            ("name", "shorty"),
            ("role", "operator"),
            ("password", password),
            ("password_again", password),
        ]
    };
    for (password, why) in [
        ("elevenchars", "密码至少需要 12 个字符"),
        ("aaaaaaaaaaaa", "重复的字符"),
        ("password1234", "常见密码"),
        ("my-shorty-plum-rain", "不能包含用户名"),
    ] {
        let text =
            post_and_read_field_error(&mut admin, "/console/staff", &add(password), "password")
                .await;
        assert!(text.contains(why), "{password}: {text}");
    }
    // The form comes back with what was typed (never the password).
    let csrf = admin.csrf().await;
    let mut fields = add("password1234");
    fields.push(("csrf", &csrf));
    let page = admin.post_form("/console/staff", &fields).await;
    assert!(page.contains("value=\"shorty\""), "{}", page.text);
    assert!(
        page.contains("<option value=\"operator\" selected"),
        "{}",
        page.text
    );
    assert!(!page.contains("password1234"));
    assert!(page.contains("aria-describedby=\"new-password-error\""));

    let reset = |password: &'static str, again: &'static str| {
        vec![
            ("password", password),
            ("password_again", again),
            ("own_password", PASSWORD),
        ]
    };
    let text = post_and_read_field_error(
        &mut admin,
        "/console/staff/victim/password",
        &reset("short", "short"),
        "password",
    )
    .await;
    assert!(text.contains("密码至少需要 12 个字符"), "{text}");
    let text = post_and_read_field_error(
        &mut admin,
        "/console/staff/victim/password",
        &reset("victim-plum-rain-harbor", "victim-plum-rain-harbor"),
        "password",
    )
    .await;
    assert!(text.contains("不能包含用户名"), "{text}");
    let text = post_and_read_field_error(
        &mut admin,
        "/console/staff/victim/password",
        &reset(NEW_PASSWORD, "a different passphrase"),
        "password_again",
    )
    .await;
    assert!(text.contains("两次输入的密码不一致"), "{text}");

    assert_eq!(snapshot(&app).await, before);
    assert!(account(&app, "shorty").await.is_none());
    assert_eq!(
        victim.get("/console").await.status,
        200,
        "session untouched"
    );
    assert!(
        can_sign_in(&app, "victim", PASSWORD).await,
        "old password kept"
    );
    // The domain refuses them on its own too.
    let name = StaffName::parse("victim").expect("name");
    assert!(Password::parse("elevenchars", &name).is_err());
    assert!(Password::parse("password1234", &name).is_err());
}

#[tokio::test]
async fn a_password_reset_needs_the_admins_own_password() {
    let app = spawn_app().await;
    add_staff(&app, "victim", Role::Support).await;
    let mut victim = browser_for(&app, "victim").await;
    let mut admin = signed_in(&app, Role::Admin).await;
    let text = post_and_read_field_error(
        &mut admin,
        "/console/staff/victim/password",
        &[
            ("password", NEW_PASSWORD),
            ("password_again", NEW_PASSWORD),
            ("own_password", "not my password at all"),
        ],
        "own_password",
    )
    .await;
    assert!(text.contains("你自己的密码不正确"), "{text}");
    assert_eq!(victim.get("/console").await.status, 200, "not signed out");
    assert!(
        can_sign_in(&app, "victim", PASSWORD).await,
        "old password kept"
    );
    assert!(!can_sign_in(&app, "victim", NEW_PASSWORD).await);
}

#[tokio::test]
async fn a_password_reset_replaces_the_old_password_and_ends_that_accounts_sessions() {
    let app = spawn_app().await;
    add_staff(&app, "victim", Role::Support).await;
    let mut victim = browser_for(&app, "victim").await;
    let mut admin = signed_in(&app, Role::Admin).await;
    let flash = post_and_read_flash(
        &mut admin,
        "/console/staff/victim/password",
        &[
            ("password", NEW_PASSWORD),
            ("password_again", NEW_PASSWORD),
            ("own_password", PASSWORD),
        ],
    )
    .await;
    assert!(flash.contains("已重置 victim 的密码"), "{flash}");
    assert_eq!(victim.get("/console").await.status, 303, "signed out");
    assert!(!can_sign_in(&app, "victim", PASSWORD).await);
    assert!(can_sign_in(&app, "victim", NEW_PASSWORD).await);
}

#[tokio::test]
async fn a_role_change_signs_the_account_out_and_takes_effect_at_its_next_sign_in() {
    let app = spawn_app().await;
    add_staff(&app, "sam", Role::Support).await;
    let mut sam = browser_for(&app, "sam").await;
    let mut admin = signed_in(&app, Role::Admin).await;
    assert_eq!(sam.get("/console/staff").await.status, 403);

    let flash =
        post_and_read_flash(&mut admin, "/console/staff/sam/role", &[("role", "admin")]).await;
    assert!(flash.contains("sam 的角色已改为管理员"), "{flash}");
    assert_eq!(
        sam.get("/console").await.status,
        303,
        "the change signed sam out"
    );
    let mut sam = browser_for(&app, "sam").await;
    let home = sam.get("/console").await;
    assert!(home.contains("管理员") && home.contains("href=\"/console/staff\""));
    assert_eq!(sam.get("/console/staff").await.status, 200);

    let flash = post_and_read_flash(
        &mut admin,
        "/console/staff/sam/role",
        &[("role", "operator")],
    )
    .await;
    assert!(flash.contains("sam 的角色已改为运营"), "{flash}");
    let mut sam = browser_for(&app, "sam").await;
    let home = sam.get("/console").await;
    assert!(home.contains("运营") && !home.contains("href=\"/console/staff\""));
    assert_eq!(sam.get("/console/staff").await.status, 403);

    // The same role again changes nothing and signs nobody out.
    let flash = post_and_read_flash(
        &mut admin,
        "/console/staff/sam/role",
        &[("role", "operator")],
    )
    .await;
    assert!(flash.contains("未做更改"), "{flash}");
    assert_eq!(sam.get("/console").await.status, 200);
}

#[tokio::test]
async fn actions_on_unknown_accounts_or_with_bad_input_are_refused_with_a_message() {
    let app = spawn_app().await;
    let mut admin = signed_in(&app, Role::Admin).await;
    add_staff(&app, "sam", Role::Support).await;
    let before = snapshot(&app).await;
    // No row to show it beside: a flash says the account does not exist.
    for (path, fields) in [
        ("/console/staff/ghost/role", vec![("role", "support")]),
        ("/console/staff/ghost/role", vec![("role", "root")]),
        ("/console/staff/ghost/disable", vec![]),
    ] {
        let flash = post_and_read_flash(&mut admin, path, &fields).await;
        assert!(flash.contains("没有名为 ghost 的账户"), "{path}: {flash}");
    }
    let text = post_and_read_row_error(
        &mut admin,
        "/console/staff/sam/role",
        &[("role", "root")],
        "sam",
        "role",
    )
    .await;
    assert!(text.contains("未知角色"), "{text}");
    let text = post_and_read_field_error(
        &mut admin,
        "/console/staff",
        &[
            ("name", "two words"),
            ("role", "support"),
            ("password", NEW_PASSWORD),
            ("password_again", NEW_PASSWORD),
        ],
        "name",
    )
    .await;
    assert!(text.contains("用户名须为"), "{text}");
    assert_eq!(snapshot(&app).await, before);
}
