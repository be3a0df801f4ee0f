//! Console sign-in, sessions, CSRF, roles and language, through the real
//! router on a fresh database.

use crate::common::console::{Browser, PASSWORD, add_staff, signed_in};
use crate::common::{TestApp, presale_order, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::json;

/// Every console page a GET can reach (with ids that need not exist: the
/// session check comes first).
const CONSOLE_PAGES: &[&str] = &[
    "/console",
    "/console/coupons/cpn_x",
    "/console/orders/P1",
    "/console/orders",
    "/console/orders.csv",
];

#[tokio::test]
async fn every_console_page_without_a_session_redirects_to_sign_in() {
    let app = spawn_app().await;
    let mut b = Browser::new(&app);
    for path in CONSOLE_PAGES {
        let r = b.get(path).await;
        assert_eq!(r.status, 303, "{path}");
        let to = r.location.unwrap_or_default();
        assert!(to.starts_with("/login?next="), "{path} -> {to}");
    }
    // A made-up cookie is no session either.
    b.cookies.insert("ck_session".into(), "ab".repeat(32));
    assert_eq!(b.get("/console").await.status, 303);
}

#[tokio::test]
async fn signing_in_sets_a_strict_cookie_and_shows_who_is_signed_in() {
    let app = spawn_app().await;
    add_staff(&app, "alice", Role::Support).await;
    let mut b = Browser::new(&app);
    let r = b.sign_in_as("Alice", PASSWORD).await;
    assert_eq!(r.status, 303);
    assert_eq!(r.location.as_deref(), Some("/console"));
    let cookie = r
        .set_cookies
        .iter()
        .find(|c| c.starts_with("ck_session="))
        .expect("session cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"));
    assert!(!cookie.contains("Secure"));
    let home = b.get("/console").await;
    assert_eq!(home.status, 200);
    assert!(home.contains("alice"), "{}", home.text);
    assert!(home.contains("客服"));
}

#[tokio::test]
async fn each_sign_in_gets_a_new_session_id() {
    let app = spawn_app().await;
    add_staff(&app, "alice", Role::Support).await;
    let mut b = Browser::new(&app);
    b.sign_in_as("alice", PASSWORD).await;
    let first = b.cookies.get("ck_session").cloned().expect("cookie");
    // Signing in again from the same browser, e.g. after a fixation attempt.
    b.cookies.remove("ck_session");
    b.sign_in_as("alice", PASSWORD).await;
    let second = b.cookies.get("ck_session").cloned().expect("cookie");
    assert_ne!(first, second);
}

#[tokio::test]
async fn a_wrong_password_is_refused_without_saying_which_part_was_wrong() {
    let app = spawn_app().await;
    add_staff(&app, "alice", Role::Support).await;
    let mut b = Browser::new(&app);
    let wrong_password = b.sign_in_as("alice", "not the password!").await;
    assert_eq!(wrong_password.status, 303);
    assert!(!b.cookies.contains_key("ck_session"));
    let page = b
        .visit(wrong_password.location.as_deref().unwrap_or("/login"))
        .await;
    assert!(page.contains("用户名或密码错误"), "{}", page.text);
    let mut b2 = Browser::new(&app);
    b2.sign_in_as("nobody", "not the password!").await;
    let page2 = b2.visit("/login").await;
    assert!(page2.contains("用户名或密码错误"));
}

#[tokio::test]
async fn five_failures_lock_the_account_for_fifteen_minutes_even_with_the_right_password() {
    let app = spawn_app().await;
    add_staff(&app, "alice", Role::Support).await;
    let mut b = Browser::new(&app);
    for _ in 0..5 {
        b.sign_in_as("alice", "wrong wrong wrong").await;
    }
    b.sign_in_as("alice", PASSWORD).await;
    assert!(!b.cookies.contains_key("ck_session"), "locked out");
    let page = b.visit("/login").await;
    assert!(page.contains("失败次数过多"), "{}", page.text);
    app.advance(15 * 60 + 1);
    let r = b.sign_in_as("alice", PASSWORD).await;
    assert_eq!(r.location.as_deref(), Some("/console"));
    assert!(b.cookies.contains_key("ck_session"));
}

#[tokio::test]
async fn the_sign_in_form_needs_its_own_token_and_a_same_site_post() {
    let app = spawn_app().await;
    add_staff(&app, "alice", Role::Support).await;
    let mut b = Browser::new(&app);
    // No token at all.
    b.post_form("/login", &[("name", "alice"), ("password", PASSWORD)])
        .await;
    assert!(!b.cookies.contains_key("ck_session"));
    // The right token, posted from another site.
    let csrf = b.get("/login").await.csrf().expect("token");
    b.post_form_with(
        "/login",
        &[("name", "alice"), ("password", PASSWORD), ("csrf", &csrf)],
        "cross-site",
    )
    .await;
    assert!(!b.cookies.contains_key("ck_session"));
}

#[tokio::test]
async fn signing_out_needs_the_token_and_ends_the_session_on_the_server() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let stolen = b.cookies.get("ck_session").cloned().expect("cookie");
    let forged = b.post_form("/logout", &[("csrf", "forged")]).await;
    assert_eq!(forged.status, 403);
    let missing = b.post_form("/logout", &[]).await;
    assert_eq!(missing.status, 403);
    let csrf = b.csrf().await;
    let cross = b
        .post_form_with("/logout", &[("csrf", &csrf)], "cross-site")
        .await;
    assert_eq!(cross.status, 403);
    assert_eq!(b.get("/console").await.status, 200, "still signed in");
    let out = b.post_form("/logout", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303);
    assert_eq!(out.location.as_deref(), Some("/login"));
    // The old cookie value is dead on the server, not just in this browser.
    let mut thief = Browser::new(&app);
    thief.cookies.insert("ck_session".into(), stolen);
    assert_eq!(thief.get("/console").await.status, 303);
}

#[tokio::test]
async fn a_session_ends_after_thirty_idle_minutes_and_after_twelve_hours_regardless() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    app.advance(29 * 60);
    assert_eq!(b.get("/console").await.status, 200);
    app.advance(29 * 60);
    assert_eq!(b.get("/console").await.status, 200, "activity keeps it");
    app.advance(31 * 60);
    assert_eq!(b.get("/console").await.status, 303, "idle too long");

    let mut busy = signed_in_again(&app).await;
    for _ in 0..(12 * 3) {
        app.advance(20 * 60);
        let s = busy.get("/console").await.status;
        if s == 303 {
            return;
        }
    }
    panic!("a session stayed alive for more than twelve hours");
}

async fn signed_in_again(app: &crate::common::TestApp) -> Browser<'_> {
    let mut b = Browser::new(app);
    let r = b.sign_in_as("support-1", PASSWORD).await;
    assert_eq!(r.status, 303);
    assert!(b.cookies.contains_key("ck_session"));
    b
}

#[tokio::test]
async fn behind_tls_the_session_cookie_is_secure_and_host_bound() {
    let app = TestApp::builder()
        .with_config(|c| c.console.secure_cookies = true)
        .start()
        .await;
    add_staff(&app, "alice", Role::Support).await;
    let mut b = Browser::new(&app);
    let r = b.sign_in_as("alice", PASSWORD).await;
    let cookie = r
        .set_cookies
        .iter()
        .find(|c| c.starts_with("__Host-ck_session="))
        .expect("__Host- cookie");
    assert!(cookie.contains("Secure") && cookie.contains("Path=/"));
    assert!(!cookie.contains("Domain"));
    assert_eq!(b.get("/console").await.status, 200);
}

#[tokio::test]
async fn the_language_follows_accept_language_until_the_switch_is_used() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    b.accept_language = Some("en-US,en;q=0.9".into());
    let en = b.get("/console").await;
    assert!(en.contains("Support console") && en.contains("lang=\"en\""));
    let r = b
        .post_form("/lang", &[("lang", "zh"), ("next", "/console")])
        .await;
    assert_eq!(r.status, 303);
    assert!(r.set_cookies.iter().any(|c| c.starts_with("ck_lang=zh")));
    let zh = b.get("/console").await;
    assert!(zh.contains("客服控制台") && zh.contains("lang=\"zh-CN\""));
    // An outside `next` is not followed.
    let r = b
        .post_form(
            "/lang",
            &[("lang", "en"), ("next", "https://evil.example/")],
        )
        .await;
    assert_eq!(r.location.as_deref(), Some("/console"));
}

#[tokio::test]
async fn the_bootstrap_admin_is_created_only_when_there_is_no_staff() {
    let app = spawn_app().await;
    assert!(
        app.service
            .bootstrap_admin("root:a long enough password")
            .await
            .expect("bootstrap")
    );
    assert!(
        !app.service
            .bootstrap_admin("second:a long enough password")
            .await
            .expect("no-op")
    );
    let mut b = Browser::new(&app);
    b.sign_in_as("root", "a long enough password").await;
    let home = b.get("/console").await;
    assert!(home.contains("管理员"), "{}", home.text);
    assert!(app.service.bootstrap_admin("nocolon").await.is_err());
    assert!(app.service.bootstrap_admin("x:short").await.is_err());
}

#[tokio::test]
async fn the_coupon_page_shows_the_status_badge_the_bound_order_and_the_timeline() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let t = app.template(json!({})).await;
    let c = app.claim("u1", t["id"].as_str().unwrap_or_default()).await;
    let cid = c["id"].as_str().unwrap_or_default().to_string();
    let camp = app.campaign("lock", 3600, 3600).await;
    app.order(presale_order(
        "P1",
        "u1",
        Some(&cid),
        camp["id"].as_str().unwrap_or_default(),
    ))
    .await;
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let page = b.get(&format!("/console/coupons/{cid}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("锁定中"));
    assert!(page.contains(c["code"].as_str().unwrap_or("?")));
    assert!(page.contains("href=\"/console/orders/P1\""));
    assert!(page.contains("data-testid=\"timeline\""));
    assert!(page.contains("待使用 → 锁定中"), "statuses in words");
    assert!(
        page.contains(">付定金锁定</td>"),
        "the locking action is named in words"
    );

    let order = b.get("/console/orders/P1").await;
    assert_eq!(order.status, 200);
    assert!(order.contains("已付定金"));
    assert!(order.contains("¥399.00") && order.contains("¥100.00") && order.contains("¥50.00"));
    assert!(order.contains("定金锁券"));

    let missing = b.get("/console/coupons/cpn_nope").await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn the_purge_deletes_ended_sessions_and_day_old_attempts_but_not_live_ones() {
    let app = spawn_app().await;
    let _gone = signed_in(&app, Role::Support).await;
    let mut failed = Browser::new(&app);
    failed.sign_in_as("support-1", "wrong wrong wrong").await;
    app.advance(13 * 3600);
    let mut live = signed_in_again(&app).await;
    let count = |sql: &'static str| {
        let pool = app.db.db.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .expect("count")
        }
    };
    assert_eq!(count("SELECT COUNT(*) FROM staff_sessions").await, 2);
    let purged = app.service.purge_sessions(1000).await.expect("purge");
    assert_eq!(purged, 1, "only the session past its absolute end");
    assert_eq!(count("SELECT COUNT(*) FROM staff_sessions").await, 1);
    assert_eq!(live.get("/console").await.status, 200);
    assert_eq!(
        count("SELECT COUNT(*) FROM login_attempts").await,
        3,
        "no attempt is a day old yet"
    );
    app.advance(24 * 3600);
    app.service.purge_sessions(1000).await.expect("purge");
    assert_eq!(count("SELECT COUNT(*) FROM login_attempts").await, 0);
    assert_eq!(count("SELECT COUNT(*) FROM staff_sessions").await, 0);
}
