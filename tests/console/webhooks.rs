//! The webhook subscribers page: what every staff member sees, what an
//! operator adds and disables, and what is refused (support, forged
//! tokens, bad input, receivers on this host or network, no session)
//! without writing anything. Secrets are only ever shown by their last 4
//! characters.

use crate::common::console::{Browser, Page, attr, field_error, input_value, signed_in, tag_with};
use crate::common::fixtures::count;
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::ids::SubscriberId;
use couponkeeper::domain::network::parse_networks;
use couponkeeper::domain::staff::Role;
use couponkeeper::service::Ctx;
use couponkeeper::service::webhooks::WebhookSettings;

const SECRET: &str = "s3cret-value-for-tests-WXYZ";
const URL: &str = "http://127.0.0.1:9/hook";

/// An app whose console subscribers may be on this host
/// (`COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS=127.0.0.0/8`), as the tests' own
/// receivers are.
async fn loopback_app() -> TestApp {
    TestApp::builder()
        .with_config(|c| {
            c.webhooks.allow_networks = parse_networks("127.0.0.0/8").expect("networks");
        })
        .start()
        .await
}

async fn subscribers(app: &TestApp) -> i64 {
    count(app, "SELECT COUNT(*) FROM webhook_subscribers").await
}

async fn enabled(app: &TestApp) -> i64 {
    count(
        app,
        "SELECT COUNT(*) FROM webhook_subscribers WHERE enabled = 1",
    )
    .await
}

/// Posts the add form with the page's token and `fields`.
async fn add(b: &mut Browser<'_>, fields: &[(&str, &str)]) -> Page {
    let page = b.get("/console/webhooks").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let csrf = page.csrf().expect("token");
    let mut all: Vec<(&str, &str)> = vec![("csrf", &csrf)];
    all.extend_from_slice(fields);
    b.post_form("/console/webhooks", &all).await
}

fn good(url: &str) -> Vec<(&str, &str)> {
    vec![
        ("url", url),
        ("types", "coupon.used"),
        ("types", "coupon.expired"),
        ("secret", SECRET),
        ("secret_again", SECRET),
    ]
}

/// The text of the page's error flash, if any.
fn error_flash(page: &Page) -> Option<String> {
    let start = page.text.find("class=\"flash flash-error\"")?;
    let rest = &page.text[start..];
    let open = rest.find('>')? + 1;
    let close = rest.find("</div>")?;
    Some(rest[open..close].to_string())
}

/// The text of the reason shown beside the URL field, if any.
fn url_error(page: &Page) -> Option<String> {
    let start = page.text.find("data-testid=\"url-error\"")?;
    let rest = &page.text[start..];
    let open = rest.find('>')? + 1;
    let close = rest.find("</p>")?;
    Some(rest[open..close].to_string())
}

/// Asserts a refused add: 422, the reason right after the URL input (which
/// keeps what was typed and is marked invalid), before the types, and
/// nothing written.
async fn assert_refused_beside_the_field(app: &TestApp, page: &Page, url: &str, says: &str) {
    assert_eq!(page.status, 422, "{url}: {}", page.text);
    let message = url_error(page).unwrap_or_default();
    assert!(
        message.contains(says),
        "{url}: expected {says:?} beside the field, got {message:?}"
    );
    let input = page.text.find("id=\"url\"").expect("the URL input");
    let error = page
        .text
        .find("data-testid=\"url-error\"")
        .expect("the reason");
    let types = page.text.find("<fieldset").expect("the types");
    assert!(
        input < error && error < types,
        "{url}: the reason is beside the field"
    );
    let tag = &page.text[input..error];
    assert!(tag.contains("aria-invalid=\"true\""), "{tag}");
    assert!(tag.contains("aria-describedby=\"url-error\""), "{tag}");
    assert!(
        tag.contains(&format!("value=\"{url}\"")),
        "{url}: typed value kept: {tag}"
    );
    assert!(!page.contains(SECRET), "{url}: no secret on the page");
    assert_eq!(subscribers(app).await, 0, "{url}: nothing stored");
    assert_eq!(
        count(
            app,
            "SELECT COUNT(*) FROM staff_audit WHERE action = 'webhook_add'"
        )
        .await,
        0,
        "{url}: nothing logged as added"
    );
}

/// Adds a subscriber directly; its id.
async fn added(app: &TestApp) -> SubscriberId {
    app.service
        .add_webhook_subscriber(
            URL,
            SECRET,
            &["coupon.used".into()],
            &Ctx::new("staff:test", None),
        )
        .await
        .expect("added")
        .id
}

#[tokio::test]
async fn the_list_renders_for_every_role_and_names_the_default_subscriber() {
    let app = loopback_app().await;
    added(&app).await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/webhooks").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("data-testid=\"subscribers\""));
    assert!(page.contains(URL));
    assert!(page.contains("…WXYZ"));
    // Event types by name; the code is for the receiving program.
    assert!(page.contains("券已使用"), "{}", page.text);
    assert!(!page.contains(">coupon.used<"), "{}", page.text);
    assert!(!page.contains(SECRET));
    // The default subscriber is named as people see it, not by the
    // variable that sets it (that is in the documentation).
    assert!(page.contains("部署配置") || page.contains("deployment"));
    assert!(!page.contains("COUPONKEEPER_WEBHOOK_URL"));
    // Support sees no form, no disable link and no nav link.
    assert!(!page.contains("data-testid=\"add-form\""));
    assert!(!page.contains("data-testid=\"disable\""));
    assert!(!page.contains("data-testid=\"nav-webhooks\""));

    let app = TestApp::builder()
        .with_config(|c| {
            c.webhooks = WebhookSettings {
                default_url: Some("http://127.0.0.1:9/env".into()),
                default_secret: Some("environment-secret-ABCD".into()),
                ..WebhookSettings::default()
            }
        })
        .start()
        .await;
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get("/console/webhooks").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("http://127.0.0.1:9/env"));
    assert!(page.contains("…ABCD"));
    assert!(!page.contains("environment-secret-ABCD"));
    assert!(page.contains("data-testid=\"nav-webhooks\""));
    assert!(page.contains("data-testid=\"add-form\""));
    // The environment's subscriber cannot be disabled here.
    assert!(!page.contains("data-testid=\"disable\""));
    assert_eq!(b.get("/console/webhooks/default/disable").await.status, 404);
}

#[tokio::test]
async fn an_operator_adds_a_subscriber_and_its_secret_is_never_shown_whole() {
    let app = loopback_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let r = add(&mut b, &good(URL)).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.location.as_deref(), Some("/console/webhooks"));
    assert_eq!(subscribers(&app).await, 1);
    let stored: (String, String, String) =
        sqlx::query_as("SELECT url, secret, event_types FROM webhook_subscribers")
            .fetch_one(app.db.db.pool())
            .await
            .expect("row");
    assert_eq!(stored.0, URL);
    assert_eq!(stored.1, SECRET);
    assert_eq!(stored.2, r#"["coupon.expired","coupon.used"]"#);
    // The staff log names who added it, from where, and where it sends.
    let logged: (String, String, String, Option<String>) = sqlx::query_as(
        "SELECT actor, target, detail, address FROM staff_audit WHERE action = 'webhook_add'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("one staff log row");
    assert_eq!(logged.0, "staff:operator-1");
    assert!(logged.1.starts_with("whk_"), "{logged:?}");
    assert!(
        logged.2.contains(URL) && !logged.2.contains(SECRET),
        "{logged:?}"
    );
    assert!(logged.3.is_some(), "the client address: {logged:?}");

    let page = b.visit("/console/webhooks").await;
    assert!(page.contains(URL));
    assert!(page.contains("…WXYZ"));
    assert!(page.contains("券过期；券已使用"), "{}", page.text);
    // The staff log says it in the same words, the subscriber by its
    // address.
    let log = b.visit("/console/audit?log=staff&action=webhook_add").await;
    assert_eq!(log.status, 200, "{}", log.text);
    assert!(
        log.contains(&format!("{URL}，券过期；券已使用")),
        "{}",
        log.text
    );
    assert!(
        !log.contains("types=") && !log.contains("whk_"),
        "{}",
        log.text
    );
    assert!(
        page.contains("客服后台：operator-1"),
        "the creator in words"
    );
    let id = app.service.webhook_subscribers().await.expect("list")[0]
        .id
        .clone();
    for path in [
        "/console/webhooks".to_string(),
        format!("/console/webhooks/{id}/disable"),
        "/console/deliveries".to_string(),
        "/console".to_string(),
    ] {
        let p = b.get(&path).await;
        assert_eq!(p.status, 200, "{path}");
        assert!(!p.contains(SECRET), "{path} shows the secret");
    }

    // "All types" is stored as `*`; an https:// receiver is taken like an
    // http:// one.
    let r = add(
        &mut b,
        &[
            ("url", "https://hooks.example.com/all"),
            ("types", "*"),
            ("secret", SECRET),
            ("secret_again", SECRET),
        ],
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM webhook_subscribers WHERE event_types = '*' AND url = 'https://hooks.example.com/all'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn support_may_not_add_or_disable() {
    let app = loopback_app().await;
    let id = added(&app).await;
    let mut b = signed_in(&app, Role::Support).await;
    let csrf = b.csrf().await;
    let mut fields = good("http://127.0.0.1:9/other");
    fields.push(("csrf", &csrf));
    assert_eq!(b.post_form("/console/webhooks", &fields).await.status, 403);
    let path = format!("/console/webhooks/{id}/disable");
    assert_eq!(b.get(&path).await.status, 403);
    assert_eq!(b.post_form(&path, &[("csrf", &csrf)]).await.status, 403);
    assert_eq!(subscribers(&app).await, 1);
    assert_eq!(enabled(&app).await, 1);
}

#[tokio::test]
async fn forged_or_cross_site_tokens_are_refused_and_change_nothing() {
    let app = loopback_app().await;
    let id = added(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let csrf = b.csrf().await;
    let path = format!("/console/webhooks/{id}/disable");

    let mut forged = good("http://127.0.0.1:9/other");
    forged.push(("csrf", "0123456789abcdef"));
    assert_eq!(b.post_form("/console/webhooks", &forged).await.status, 403);
    let missing = good("http://127.0.0.1:9/other");
    assert_eq!(b.post_form("/console/webhooks", &missing).await.status, 403);
    let mut cross = good("http://127.0.0.1:9/other");
    cross.push(("csrf", &csrf));
    assert_eq!(
        b.post_form_with("/console/webhooks", &cross, "cross-site")
            .await
            .status,
        403
    );
    assert_eq!(
        b.post_form(&path, &[("csrf", "0123456789abcdef")])
            .await
            .status,
        403
    );
    assert_eq!(b.post_form(&path, &[]).await.status, 403);
    assert_eq!(
        b.post_form_with(&path, &[("csrf", &csrf)], "cross-site")
            .await
            .status,
        403
    );
    assert_eq!(subscribers(&app).await, 1);
    assert_eq!(enabled(&app).await, 1);
}

#[tokio::test]
async fn an_operator_disables_a_subscriber_through_the_confirmation_page() {
    let app = loopback_app().await;
    let id = added(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let list = b.get("/console/webhooks").await;
    let path = format!("/console/webhooks/{id}/disable");
    assert!(list.contains(&format!("href=\"{path}\"")));

    let page = b.get(&path).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("data-testid=\"confirm\""));
    assert!(page.contains(URL));
    let csrf = page.csrf().expect("token");
    let r = b.post_form(&path, &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.location.as_deref(), Some("/console/webhooks"));
    assert_eq!(enabled(&app).await, 0);
    assert_eq!(subscribers(&app).await, 1);
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT COUNT(*) FROM staff_audit WHERE action = 'webhook_disable' \
                 AND actor = 'staff:operator-1' AND target = '{id}'"
            )
        )
        .await,
        1
    );

    let list = b.visit("/console/webhooks").await;
    assert!(list.contains("接收方已停用"), "flash: {}", list.text);
    assert!(error_flash(&list).is_none());
    assert!(list.contains("data-enabled=\"false\""));
    assert!(!list.contains("data-testid=\"disable\""));

    // Again: refused with a message, nothing else changes.
    let again = b.get(&path).await;
    assert_eq!(again.status, 303);
    let r = b.post_form(&path, &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303);
    let flash = error_flash(&b.visit("/console/webhooks").await).unwrap_or_default();
    assert!(flash.contains("已停用"), "{flash:?}");
    assert_eq!(
        b.get("/console/webhooks/whk_nosuch/disable").await.status,
        404
    );

    // Enabled again through its own confirmation page, logged.
    let enable = format!("/console/webhooks/{id}/enable");
    let list = b.visit("/console/webhooks").await;
    assert!(
        list.contains(&format!("href=\"{enable}\"")),
        "{}",
        list.text
    );
    let page = b.get(&enable).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("data-testid=\"confirm\""));
    let r = b.post_form(&enable, &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(enabled(&app).await, 1);
    let list = b.visit("/console/webhooks").await;
    assert!(list.contains("接收方已重新启用"), "flash: {}", list.text);
    assert!(list.contains("data-enabled=\"true\""));
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT COUNT(*) FROM staff_audit WHERE action = 'webhook_enable' \
                 AND actor = 'staff:operator-1' AND target = '{id}'"
            )
        )
        .await,
        1
    );
    // An enabled one cannot be enabled again; support may not enable.
    assert_eq!(b.get(&enable).await.status, 303);
    let mut support = signed_in(&app, Role::Support).await;
    assert_eq!(support.get(&enable).await.status, 403);
}

#[tokio::test]
async fn bad_input_comes_back_with_what_was_typed_and_the_message_beside_the_field_and_writes_nothing()
 {
    let app = loopback_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let other = "another-secret-value-1234";
    // (the form's fields, the field at fault, what its message says)
    type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);
    let cases: Vec<Case> = vec![
        (
            vec![
                ("url", URL),
                ("types", "coupon.used"),
                ("secret", "short"),
                ("secret_again", "short"),
            ],
            "secret",
            "16 到 200 个字符",
        ),
        (
            vec![
                ("url", URL),
                ("types", "coupon.used"),
                ("secret", SECRET),
                ("secret_again", other),
            ],
            "secret_again",
            "不一致",
        ),
        (
            vec![("url", URL), ("secret", SECRET), ("secret_again", SECRET)],
            "types",
            "请至少选择一个事件类型",
        ),
        (
            vec![
                ("url", URL),
                ("types", "coupon.used"),
                ("types", "coupon.nope"),
                ("secret", SECRET),
                ("secret_again", SECRET),
            ],
            "types",
            "coupon.nope",
        ),
    ];
    for (fields, field, message) in cases {
        let r = add(&mut b, &fields).await;
        assert_eq!(r.status, 422, "{fields:?}: {}", r.text);
        let text = field_error(&r.text, field).unwrap_or_default();
        assert!(
            text.contains(message),
            "{fields:?}: expected {message:?} at {field}: {}",
            r.text
        );
        assert!(error_flash(&r).is_none(), "not a flash");
        // What was typed is kept, never the secrets.
        assert_eq!(input_value(&r.text, "url").as_deref(), Some(URL));
        let used = tag_with(&r.text, "id=\"type-coupon-used\"").unwrap_or_default();
        assert_eq!(
            used.contains(" checked"),
            fields.contains(&("types", "coupon.used")),
            "{fields:?}: {used}"
        );
        let secret = tag_with(&r.text, "id=\"secret\"").unwrap_or_default();
        assert_eq!(attr(secret, "value"), None);
        assert!(!r.contains(SECRET) && !r.contains(other));
    }
    // Several at once: a message at each.
    let r = add(
        &mut b,
        &[
            ("url", "ftp://x"),
            ("secret", "short"),
            ("secret_again", "short"),
        ],
    )
    .await;
    assert_eq!(r.status, 422);
    for field in ["url", "types", "secret"] {
        assert!(field_error(&r.text, field).is_some(), "{field}: {}", r.text);
    }
    // In the page's language.
    b.accept_language = Some("en".into());
    let r = add(
        &mut b,
        &[
            ("url", URL),
            ("types", "coupon.used"),
            ("secret", "short"),
            ("secret_again", "short"),
        ],
    )
    .await;
    let text = field_error(&r.text, "secret").unwrap_or_default();
    assert!(text.contains("16 to 200 characters"), "{}", r.text);
    assert_eq!(subscribers(&app).await, 0);
}

#[tokio::test]
async fn without_a_session_every_route_goes_to_sign_in() {
    let app = loopback_app().await;
    let id = added(&app).await;
    let mut b = Browser::new(&app);
    let path = format!("/console/webhooks/{id}/disable");
    for p in ["/console/webhooks", path.as_str()] {
        let r = b.get(p).await;
        assert_eq!(r.status, 303, "GET {p}");
        assert!(r.location.as_deref().unwrap_or("").starts_with("/login"));
    }
    let fields = good("http://127.0.0.1:9/other");
    for p in ["/console/webhooks", path.as_str()] {
        let r = b.post_form(p, &fields).await;
        assert_eq!(r.status, 303, "POST {p}");
        assert!(r.location.as_deref().unwrap_or("").starts_with("/login"));
    }
    assert_eq!(subscribers(&app).await, 1);
    assert_eq!(enabled(&app).await, 1);
}

#[tokio::test]
async fn a_url_that_is_not_http_or_has_credentials_is_refused_beside_the_field() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    for (url, says) in [
        ("https:///no-host", "不是有效的 https:// 或 http:// 地址"),
        (
            "ftp://example.com/hook",
            "地址须以 https:// 或 http:// 开头",
        ),
        ("", "地址须以 https:// 或 http:// 开头"),
        (
            "http://user:pass@hooks.example.com/",
            "不能包含用户名或密码",
        ),
        ("https://token@hooks.example.com/", "不能包含用户名或密码"),
    ] {
        let page = add(&mut b, &good(url)).await;
        assert_refused_beside_the_field(&app, &page, url, says).await;
    }
    b.accept_language = Some("en".into());
    let url = "http://user:pass@hooks.example.com/";
    let page = add(&mut b, &good(url)).await;
    assert_refused_beside_the_field(&app, &page, url, "user name or password").await;
}

/// The targets an operator could use to reach this host and its network,
/// each refused when added, with the reason beside the URL field.
const INTERNAL: [(&str, &str); 16] = [
    ("http://127.0.0.1:9/", "本机回环地址"),
    ("http://169.254.169.254/latest/meta-data", "链路本地地址"),
    ("http://[::1]/", "本机回环地址"),
    ("http://10.0.0.5/", "内网地址"),
    ("http://localhost/", "本机回环地址"),
    ("http://2130706433/", "本机回环地址"),
    ("http://0x7f.1/", "本机回环地址"),
    ("http://0177.0.0.1:8080/", "本机回环地址"),
    ("http://[::ffff:127.0.0.1]/", "本机回环地址"),
    ("http://0.0.0.0:3000/", "未指定地址"),
    ("http://172.16.0.1/", "内网地址"),
    ("http://192.168.1.1/admin", "内网地址"),
    ("http://100.64.0.1/", "运营商 NAT 共享地址"),
    ("http://[fe80::1]/", "链路本地地址"),
    ("http://[fd00::1]/", "内网地址"),
    ("http://224.0.0.1/", "组播地址"),
];

#[tokio::test]
async fn receivers_on_this_host_or_its_network_are_refused_beside_the_url_field() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    for (url, says) in INTERNAL {
        let page = add(&mut b, &good(url)).await;
        assert_refused_beside_the_field(&app, &page, url, says).await;
        assert!(
            url_error(&page).unwrap_or_default().contains("不能投递到"),
            "{url}"
        );
        // The ticked types are kept for the next try.
        assert!(page.contains("value=\"coupon.used\" checked"), "{url}");
    }
    b.accept_language = Some("en".into());
    for (url, says) in [
        (
            "http://127.0.0.1:9/",
            "Deliveries cannot go to 127.0.0.1: a loopback address",
        ),
        (
            "http://localhost/",
            "localhost: it resolves to 127.0.0.1, a loopback address",
        ),
        (
            "http://169.254.169.254/latest/meta-data",
            "a link-local address (such as the cloud metadata service)",
        ),
    ] {
        let page = add(&mut b, &good(url)).await;
        assert_refused_beside_the_field(&app, &page, url, says).await;
        assert!(
            url_error(&page)
                .unwrap_or_default()
                .contains("the deployment allows"),
            "{url}"
        );
    }
    // The service refuses them too, whoever calls it.
    for (url, _) in INTERNAL {
        let e = app
            .service
            .add_webhook_subscriber(url, SECRET, &[], &Ctx::new("staff:test", None))
            .await
            .expect_err(url);
        assert!(e.to_string().contains("blocked: "), "{url}: {e}");
    }
    assert_eq!(subscribers(&app).await, 0);
}

#[tokio::test]
async fn the_allow_list_lets_its_networks_through_and_nothing_else() {
    let app = loopback_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let r = add(&mut b, &good("http://127.0.0.1:9/hook")).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(subscribers(&app).await, 1);
    for (url, says) in [
        ("http://169.254.169.254/latest/meta-data", "链路本地地址"),
        ("http://10.0.0.5/", "内网地址"),
        ("http://[::1]/", "本机回环地址"),
    ] {
        let page = add(&mut b, &good(url)).await;
        assert_eq!(page.status, 422, "{url}");
        let message = url_error(&page).unwrap_or_default();
        assert!(message.contains(says), "{url}: {message}");
    }
    assert_eq!(subscribers(&app).await, 1);
}
