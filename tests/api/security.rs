//! The security controls (ASVS L2), through the real router on a fresh
//! database of either store: the atomic sign-in limit under a burst of
//! parallel guesses, failures counted per account and address, the
//! signed sign-in form token, response headers on every kind of page,
//! request rate limits with `Retry-After`, client addresses behind
//! trusted proxies, changing one's own password, CSV cells that cannot
//! run as formulas.

use std::sync::Arc;

use crate::common::console::{Browser, PASSWORD, add_staff, signed_in};
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::staff::Role;
use couponkeeper::http::limits::Rate;
use couponkeeper::service::staff::{SessionPolicy, SignInError};

/// Sign-in attempts recorded so far (pending, failed or succeeded).
async fn attempts(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM login_attempts")
        .fetch_one(app.db.db.pool())
        .await
        .expect("count attempts")
}

async fn sessions(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM staff_sessions")
        .fetch_one(app.db.db.pool())
        .await
        .expect("count sessions")
}

#[tokio::test]
async fn two_hundred_parallel_guesses_verify_at_most_five_passwords_and_open_no_session() {
    let app = spawn_app().await;
    add_staff(&app, "admin", Role::Admin).await;
    let before = app.service.password_verifications();
    let gate = Arc::new(tokio::sync::Barrier::new(200));
    let mut tasks = Vec::new();
    for i in 0..200 {
        let service = app.service.clone();
        let gate = gate.clone();
        let pool = app.db.db.pool().clone();
        tasks.push(tokio::spawn(async move {
            gate.wait().await;
            // The right password is guess #25: it waits until the limit's
            // worth of attempts is on record, as it would arrive behind
            // them in a real burst; the others race.
            let password = if i == 24 {
                for _ in 0..2_000 {
                    let n: i64 =
                        sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM login_attempts")
                            .fetch_one(&pool)
                            .await
                            .unwrap_or(0);
                    if n >= 5 {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                PASSWORD.to_string()
            } else {
                format!("wrong guess number {i}")
            };
            service
                .sign_in("admin", &password, "203.0.113.7", SessionPolicy::default())
                .await
        }));
    }
    let mut limited = 0;
    let mut refused = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(_) => panic!("a guess signed in"),
            Err(SignInError::RateLimited) => limited += 1,
            Err(SignInError::BadCredentials) => refused += 1,
            Err(SignInError::Service(e)) => panic!("service error: {e}"),
            Err(SignInError::Busy) => panic!("a guess found every password slot busy"),
        }
    }
    let verified = app.service.password_verifications() - before;
    eprintln!(
        "200 parallel guesses: {verified} password verifications, {limited} refused by the limit"
    );
    assert!(verified <= 5, "{verified} password verifications");
    assert_eq!(refused, verified, "every verified guess was refused");
    assert_eq!(limited + refused, 200);
    assert_eq!(sessions(&app).await, 0, "no session");
    assert_eq!(attempts(&app).await, 5, "refused guesses are not recorded");
}

#[tokio::test]
async fn failures_from_one_address_do_not_lock_the_account_for_another() {
    let app = spawn_app().await;
    add_staff(&app, "admin", Role::Admin).await;
    let policy = SessionPolicy::default();
    for _ in 0..5 {
        let r = app
            .service
            .sign_in("admin", "wrong wrong wrong", "198.51.100.1", policy)
            .await;
        assert!(matches!(r, Err(SignInError::BadCredentials)));
    }
    let r = app
        .service
        .sign_in("admin", PASSWORD, "198.51.100.1", policy)
        .await;
    assert!(
        matches!(r, Err(SignInError::RateLimited)),
        "the guesser is locked out"
    );
    let r = app
        .service
        .sign_in("admin", PASSWORD, "192.0.2.50", policy)
        .await;
    assert!(r.is_ok(), "the admin at another address signs in");
    // One address guessing at many accounts is stopped at 30.
    for i in 0..30 {
        let _ = app
            .service
            .sign_in(
                &format!("user{i}"),
                "wrong wrong wrong",
                "198.51.100.9",
                policy,
            )
            .await;
    }
    let r = app
        .service
        .sign_in("admin", PASSWORD, "198.51.100.9", policy)
        .await;
    assert!(matches!(r, Err(SignInError::RateLimited)));
}

#[tokio::test]
async fn a_planted_or_forged_sign_in_cookie_is_refused() {
    let app = spawn_app().await;
    add_staff(&app, "alice", Role::Support).await;
    let mut b = Browser::new(&app);
    // The old double-submit form: any 32 hex digits in cookie and form.
    let planted = "00112233445566778899aabbccddeeff";
    b.cookies.insert("ck_login_csrf".into(), planted.into());
    b.post_form(
        "/login",
        &[("name", "alice"), ("password", PASSWORD), ("csrf", planted)],
    )
    .await;
    assert!(
        !b.cookies.contains_key("ck_session"),
        "a planted token is refused"
    );
    // A real token with its expiry moved on is refused too.
    let token = b.get("/login").await.csrf().expect("token");
    let (expires, rest) = token.split_once('.').expect("expiry first");
    let later = format!("{}.{rest}", expires.parse::<i64>().unwrap_or(0) + 86_400);
    b.cookies.insert("ck_login_csrf".into(), later.clone());
    b.post_form(
        "/login",
        &[("name", "alice"), ("password", PASSWORD), ("csrf", &later)],
    )
    .await;
    assert!(!b.cookies.contains_key("ck_session"));
    // The form as served works, and expires after an hour.
    let r = b.sign_in_as("alice", PASSWORD).await;
    assert_eq!(r.location.as_deref(), Some("/console"));
    let mut late = Browser::new(&app);
    let token = late.get("/login").await.csrf().expect("token");
    app.advance(3601);
    late.post_form(
        "/login",
        &[("name", "alice"), ("password", PASSWORD), ("csrf", &token)],
    )
    .await;
    assert!(!late.cookies.contains_key("ck_session"), "an hour-old form");
}

#[tokio::test]
async fn behind_tls_the_sign_in_cookie_is_host_bound_and_pages_send_hsts() {
    let app = TestApp::builder()
        .with_config(|c| c.console.secure_cookies = true)
        .start()
        .await;
    let mut b = Browser::new(&app);
    let page = b.get("/login").await;
    let cookie = page
        .set_cookies
        .iter()
        .find(|c| c.starts_with("__Host-ck_login_csrf="))
        .expect("a __Host- sign-in cookie");
    assert!(
        cookie.contains("Secure") && cookie.contains("Path=/"),
        "{cookie}"
    );
    assert_eq!(
        page.header("strict-transport-security"),
        Some("max-age=31536000")
    );
    let plain = spawn_app().await;
    let page = Browser::new(&plain).get("/login").await;
    assert_eq!(page.header("strict-transport-security"), None);
}

/// The headers every page kind must carry.
fn assert_secure_headers(page: &crate::common::console::Page, what: &str, private: bool) {
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("default-src 'none'"), "{what}: {csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    assert!(!csp.contains("unsafe-inline"), "{what}: {csp}");
    assert_eq!(
        page.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"), "{what}");
    assert!(page.header("referrer-policy").is_some(), "{what}");
    if private {
        assert_eq!(page.header("cache-control"), Some("no-store"), "{what}");
    }
}

#[tokio::test]
async fn console_pages_sign_in_and_csv_exports_carry_the_security_headers() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Admin).await;
    for path in [
        "/console",
        "/console/coupons",
        "/console/coupons.csv",
        "/console/audit.csv",
        "/console/staff",
        "/console/password",
        "/console/no-such-page",
    ] {
        let page = b.get(path).await;
        assert_secure_headers(&page, path, true);
        assert_eq!(
            page.header("referrer-policy"),
            Some("same-origin"),
            "{path}"
        );
    }
    let mut anonymous = Browser::new(&app);
    let login = anonymous.get("/login").await;
    assert_secure_headers(&login, "/login", true);
    let front = anonymous.get("/").await;
    assert_secure_headers(&front, "/", false);
    let api = app.get("/api/v1/coupons/cpn_missing").await;
    assert_eq!(api.status, 404);
}

#[tokio::test]
async fn sign_in_posts_past_the_rate_get_429_with_retry_after() {
    let app = TestApp::builder()
        .with_peers()
        .with_config(|c| {
            c.http_limits.login = "3/min".parse::<Rate>().ok();
        })
        .start()
        .await;
    let mut b = Browser::new(&app);
    let token = b.get("/login").await.csrf().expect("token");
    for _ in 0..3 {
        let r = b
            .post_form(
                "/login",
                &[
                    ("name", "x"),
                    ("password", "nope nope nope"),
                    ("csrf", &token),
                ],
            )
            .await;
        assert_eq!(r.status, 303);
    }
    let r = b
        .post_form(
            "/login",
            &[
                ("name", "x"),
                ("password", "nope nope nope"),
                ("csrf", &token),
            ],
        )
        .await;
    assert_eq!(r.status, 429, "{}", r.text);
    let wait: u64 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in seconds");
    assert!((1..=60).contains(&wait), "{wait}");
    assert!(r.contains("请求过于频繁"), "{}", r.text);
    // Pages are not limited by the sign-in bucket.
    assert_eq!(b.get("/login").await.status, 200);
}

#[tokio::test]
async fn the_self_check_page_is_limited_per_address_by_default() {
    let app = TestApp::builder()
        .with_peers()
        .with_config(|c| {
            c.http_limits.self_check = "2/min".parse::<Rate>().ok();
        })
        .start()
        .await;
    let mut b = Browser::new(&app);
    assert_eq!(b.get("/self-check?t=x").await.status, 403);
    assert_eq!(b.get("/self-check?t=y").await.status, 403);
    let r = b.get("/self-check?t=z").await;
    assert_eq!(r.status, 429);
    assert!(r.header("retry-after").is_some());
}

#[tokio::test]
async fn the_api_is_unlimited_by_default_and_limited_per_token_when_configured() {
    let open = spawn_app().await;
    for _ in 0..30 {
        assert_eq!(open.get("/api/v1/coupons/cpn_x").await.status, 404);
    }
    let app = TestApp::builder()
        .with_config(|c| {
            c.http_limits.api = "2/min".parse::<Rate>().ok();
        })
        .start()
        .await;
    assert_eq!(app.get("/api/v1/coupons/cpn_x").await.status, 404);
    assert_eq!(app.get("/api/v1/coupons/cpn_x").await.status, 404);
    let r = app.get("/api/v1/coupons/cpn_x").await;
    assert_eq!(r.status, 429);
    assert_eq!(r.code(), "rate_limited");
    assert!(r.headers.get("retry-after").is_some());
    // Another token has its own bucket.
    let other = app
        .get_as("/api/v1/coupons/cpn_x", Some("second-token"))
        .await;
    assert_eq!(other.status, 404);
}

#[tokio::test]
async fn forwarded_for_names_the_client_only_behind_a_trusted_proxy() {
    // Not trusted: the header is the client's own claim and is ignored,
    // so rotating it does not get around the limit.
    let app = TestApp::builder()
        .with_peers()
        .with_config(|c| {
            c.http_limits.login = "2/min".parse::<Rate>().ok();
        })
        .start()
        .await;
    let mut statuses = Vec::new();
    for i in 0..3 {
        let mut b = Browser::new(&app);
        b.extra_headers = vec![("x-forwarded-for".into(), format!("198.51.100.{i}"))];
        let token = b.get("/login").await.csrf().expect("token");
        let r = b
            .post_form(
                "/login",
                &[
                    ("name", "x"),
                    ("password", "nope nope nope"),
                    ("csrf", &token),
                ],
            )
            .await;
        statuses.push(r.status);
    }
    assert_eq!(statuses, vec![303, 303, 429]);

    // Trusted (the test client is the "proxy" on 127.0.0.1): each
    // forwarded client has its own bucket, and the audit log records it.
    let app = TestApp::builder()
        .with_peers()
        .with_config(|c| {
            c.http_limits.login = "2/min".parse::<Rate>().ok();
            c.http_limits.trusted_proxies = vec!["127.0.0.0/8".parse().expect("cidr")];
        })
        .start()
        .await;
    add_staff(&app, "alice", Role::Support).await;
    for i in 0..3 {
        let mut b = Browser::new(&app);
        b.extra_headers = vec![("x-forwarded-for".into(), format!("1.2.3.4, 198.51.100.{i}"))];
        let r = b.sign_in_as("alice", PASSWORD).await;
        assert_eq!(r.status, 303, "client {i}");
    }
    let addresses: Vec<String> =
        sqlx::query_scalar("SELECT address FROM login_attempts ORDER BY id")
            .fetch_all(app.db.db.pool())
            .await
            .expect("addresses");
    assert_eq!(
        addresses,
        vec!["198.51.100.0", "198.51.100.1", "198.51.100.2"],
        "the proxy's client, not the forged left-most hop"
    );
}

#[tokio::test]
async fn staff_change_their_own_password_after_re_entering_it_and_other_sessions_end() {
    let app = spawn_app().await;
    add_staff(&app, "alice", Role::Support).await;
    let mut phone = Browser::new(&app);
    phone.sign_in_as("alice", PASSWORD).await;
    let mut desk = Browser::new(&app);
    desk.sign_in_as("alice", PASSWORD).await;
    let page = desk.get("/console/password").await;
    assert_eq!(page.status, 200);
    assert!(page.contains("修改密码"));
    let csrf = desk.csrf().await;
    let new = "plum rain over the harbor";

    // Wrong current password: refused beside that field, nothing changes.
    let r = desk
        .post_form(
            "/console/password",
            &[
                ("current_password", "not it at all"),
                ("password", new),
                ("password_again", new),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(r.status, 422);
    assert!(
        r.contains("data-field-error=\"current_password\""),
        "{}",
        r.text
    );
    // A weak new one: refused beside the new password.
    let r = desk
        .post_form(
            "/console/password",
            &[
                ("current_password", PASSWORD),
                ("password", "alice-password"),
                ("password_again", "alice-password"),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(r.status, 422);
    assert!(r.contains("data-field-error=\"password\""), "{}", r.text);
    assert!(r.contains("不能包含用户名"), "{}", r.text);

    let r = desk
        .post_form(
            "/console/password",
            &[
                ("current_password", PASSWORD),
                ("password", new),
                ("password_again", new),
                ("csrf", &csrf),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.location.as_deref(), Some("/console/password"));
    assert_eq!(desk.get("/console").await.status, 200, "this session stays");
    assert_eq!(
        phone.get("/console").await.status,
        303,
        "the other one ends"
    );
    let mut b = Browser::new(&app);
    assert_eq!(
        b.sign_in_as("alice", new).await.location.as_deref(),
        Some("/console")
    );
    let changes: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM staff_audit WHERE action = 'password_change' AND target = 'alice'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("audit");
    assert_eq!(changes, 1);
}

#[tokio::test]
async fn a_formula_typed_as_a_reason_is_neutralised_in_the_audit_csv() {
    // Leading spaces are trimmed from reasons on input; `csv_field`'s unit
    // test covers cells that keep them (` =1+1`).
    let app = spawn_app().await;
    let t = app.template(serde_json::json!({})).await;
    let template_id = t["id"].as_str().expect("template id").to_string();
    let coupon = app.claim("u1", &template_id).await;
    let id = coupon["id"].as_str().expect("coupon id").to_string();
    let r = app
        .post(
            &format!("/api/v1/coupons/{id}/invalidate"),
            serde_json::json!({"reason": " =HYPERLINK(\"http://evil.example\")"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut b = signed_in(&app, Role::Admin).await;
    let csv = b.get("/console/audit.csv").await;
    assert_eq!(csv.status, 200);
    assert!(
        csv.text
            .contains("\"'=HYPERLINK(\"\"http://evil.example\"\")\""),
        "{}",
        csv.text
    );
}
