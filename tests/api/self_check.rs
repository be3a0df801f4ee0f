//! The customers' self-check through the real router, on the store chosen
//! by `COUPONKEEPER_TEST_STORE`: the link API (auth, validation, no secret),
//! the page for a good link (only that customer's data, in plain words),
//! every kind of bad link (tampered, other user, changed expiry, wrong
//! version, foreign secret, garbage, missing, expired: 403 showing nothing),
//! the check on a planted anomaly in customer words without internal ids,
//! and what the cards say before the check: a lapsed checkout and a closed
//! presale order with nothing to pay or deduct, and percent coupons in the
//! customers' words, in both languages.

use crate::common::console::Browser;
use crate::common::fixtures::{
    coupon_with_code as coupon_for, deposit_paid_with_code as deposit_paid,
};
use crate::common::{TOKEN, TestApp, epoch, spawn_app};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Duration;
use couponkeeper::domain::ids::UserId;
use couponkeeper::domain::self_check::{Secret, sign};
use couponkeeper::i18n::{Lang, Msg};
use serde_json::json;

const SECRET: &str = "self-check secret for the tests, 32+ bytes";
const PUBLIC: &str = "https://shop.example/ck";
const TTL: i64 = 3600;

async fn app_with_secret() -> TestApp {
    TestApp::builder()
        .with_config(|c| {
            c.self_check.secret = Some(Secret::parse(SECRET).expect("secret"));
            c.self_check.public_url = PUBLIC.to_string();
            c.self_check.ttl_seconds = TTL;
            c.self_check.support_hint = Some("客服热线 400-000-0000".to_string());
        })
        .start()
        .await
}

/// The end-to-end anomaly: the order closed while its coupon stays locked.
async fn closed_with_locked_coupon(app: &TestApp, no: &str, user: &str) -> (String, String) {
    let c = deposit_paid(app, no, user).await;
    sqlx::query("UPDATE orders SET status = 'closed' WHERE order_no = $1")
        .bind(no)
        .execute(app.db.db.pool())
        .await
        .expect("plant");
    c
}

/// Issues a link through the API; (url, expires_at).
async fn link(app: &TestApp, user: &str) -> (String, String) {
    let r = app
        .post(&format!("/api/v1/users/{user}/self-check-link"), json!({}))
        .await;
    assert_eq!(r.status, 200, "link: {}", r.text);
    (
        r.body["url"].as_str().unwrap_or_default().to_string(),
        r.body["expires_at"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// The token of a link.
fn token_of(url: &str) -> String {
    url.split_once("?t=")
        .map(|(_, t)| t.to_string())
        .unwrap_or_default()
}

/// The page for `token` (as given, not encoded further).
async fn open(app: &TestApp, query: &str, lang: Option<&str>) -> crate::common::Resp {
    let mut req = app.client.get(format!("{}/self-check{query}", app.base));
    if let Some(l) = lang {
        req = req.header("accept-language", l);
    }
    let r = req.send().await.expect("request");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap_or_default();
    crate::common::Resp {
        status,
        body: serde_json::Value::Null,
        headers,
        text,
    }
}

/// The list item of `page` that carries `attr` (`data-code="…"`,
/// `data-order-no="…"`), up to its end; empty when there is none.
fn item<'a>(page: &'a str, attr: &str) -> &'a str {
    let Some(at) = page.find(attr) else {
        return "";
    };
    let start = page[..at].rfind("<li").unwrap_or(at);
    let end = page[at..].find("</li>").map_or(page.len(), |e| at + e);
    &page[start..end]
}

fn header<'a>(r: &'a crate::common::Resp, name: &str) -> &'a str {
    r.headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The token with part `i` replaced.
fn with_part(token: &str, i: usize, value: &str) -> String {
    let mut parts: Vec<String> = token.split('.').map(String::from).collect();
    parts[i] = value.to_string();
    parts.join(".")
}

fn assert_private(r: &crate::common::Resp) {
    assert_eq!(header(r, "cache-control"), "no-store");
    assert_eq!(header(r, "referrer-policy"), "no-referrer");
    assert!(header(r, "x-robots-tag").contains("noindex"));
    assert!(
        r.text
            .contains(r#"<meta name="robots" content="noindex, nofollow">"#)
    );
    assert!(!r.text.contains("<script"), "no JavaScript on the page");
}

#[tokio::test]
async fn a_link_shows_the_customers_own_coupons_and_orders_in_plain_words() {
    let app = app_with_secret().await;
    let (_, locked_a) = deposit_paid(&app, "P-A1", "alice").await;
    let (_, free_a) = coupon_for(&app, "alice").await;
    let (_, locked_b) = deposit_paid(&app, "P-B1", "bob").await;
    let (_, free_b) = coupon_for(&app, "bob").await;

    let (url, expires_at) = link(&app, "alice").await;
    assert!(
        url.starts_with(&format!("{PUBLIC}/self-check?t=v1.")),
        "{url}"
    );
    assert_eq!(expires_at, "2026-11-11T01:00:00.000Z");
    let token = token_of(&url);

    let r = open(&app, &format!("?t={token}"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_private(&r);
    let page = &r.text;
    for code in [&locked_a, &free_a] {
        assert!(
            page.contains(code.as_str()),
            "alice's coupon {code} is listed"
        );
    }
    assert!(page.contains("这张券已为订单 P-A1 锁定，付尾款时自动抵扣 50.00 元。"));
    let free = item(page, &format!(r#"data-code="{free_a}""#));
    assert!(free.contains(r#"data-testid="sc-coupon-terms">满 ¥300.00 减 ¥50.00<"#));
    assert!(free.contains(r#"data-testid="sc-coupon-ends"><time datetime="2026-11-21T00:00:00Z">2026-11-21 08:00 (UTC+8)</time><"#));
    assert!(free.contains("现在可以使用。"));
    assert!(page.contains("P-A1") && page.contains("待付尾款"));
    assert!(page.contains("−¥50.00"), "the order shows its discount");
    for other in [locked_b.as_str(), free_b.as_str(), "P-B1", "bob"] {
        assert!(!page.contains(other), "bob's {other} must not appear");
    }
    assert!(!page.contains("cpn_") && !page.contains("tpl_") && !page.contains("alice"));

    // English by Accept-Language; the same facts.
    let r = open(&app, &format!("?t={token}"), Some("en-US,en;q=0.9")).await;
    assert_eq!(r.status, 200);
    assert!(r.text.contains(
        "This coupon is locked for order P-A1: 50.00 yuan comes off automatically at the final payment."
    ));
    let free = item(&r.text, &format!(r#"data-code="{free_a}""#));
    assert!(free.contains(r#"data-testid="sc-coupon-terms">¥50.00 off orders from ¥300.00<"#));
    assert!(free.contains("You can use it now."));

    // Bob's own link shows Bob, and nothing of Alice.
    let (url_b, _) = link(&app, "bob").await;
    let r = open(&app, &format!("?t={}", token_of(&url_b)), None).await;
    assert_eq!(r.status, 200);
    assert!(r.text.contains(&locked_b) && r.text.contains("P-B1"));
    assert!(!r.text.contains(&locked_a) && !r.text.contains("P-A1"));
}

#[tokio::test]
async fn changed_foreign_expired_or_missing_links_are_refused_and_show_nothing() {
    let app = app_with_secret().await;
    let (_, code_a) = deposit_paid(&app, "P-A1", "alice").await;
    let (_, code_b) = deposit_paid(&app, "P-B1", "bob").await;
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);
    let sig = token.rsplit('.').next().unwrap_or_default().to_string();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('0') { "1" } else { "0" },
        &sig[1..]
    );
    let later = (epoch() + Duration::days(300)).timestamp().to_string();
    let foreign = sign(
        &Secret::parse("another shop's secret, also 32+ bytes").expect("secret"),
        &UserId::parse("alice").expect("user"),
        epoch() + Duration::hours(1),
    );
    let bad_queries = [
        format!("?t={}", with_part(&token, 3, &flipped)),
        format!(
            "?t={}",
            with_part(&token, 1, &URL_SAFE_NO_PAD.encode("bob"))
        ),
        format!("?t={}", with_part(&token, 2, &later)),
        format!("?t={}", with_part(&token, 0, "v2")),
        format!("?t={foreign}"),
        format!("?t={}", &token[..token.len() - 1]),
        "?t=garbage".to_string(),
        "?t=v1.....".to_string(),
        "?t=".to_string(),
        String::new(),
        "?check=1".to_string(),
        format!("?t={}&check=1", with_part(&token, 3, &flipped)),
        "?t=%FF%FE".to_string(),
    ];
    for q in &bad_queries {
        let r = open(&app, q, None).await;
        assert_eq!(r.status, 403, "{q}: {}", r.text);
        assert_private(&r);
        assert!(r.text.contains("链接无效或已过期"), "{q}");
        assert!(
            r.text.contains("This link is invalid or has expired"),
            "{q}"
        );
        for secret in [
            code_a.as_str(),
            code_b.as_str(),
            "P-A1",
            "P-B1",
            "alice",
            "bob",
        ] {
            assert!(!r.text.contains(secret), "{q} shows {secret}");
        }
    }

    // The genuine link works until its expiry, then not at all.
    assert_eq!(open(&app, &format!("?t={token}"), None).await.status, 200);
    app.advance(TTL - 1);
    assert_eq!(open(&app, &format!("?t={token}"), None).await.status, 200);
    app.advance(1);
    for q in [format!("?t={token}"), format!("?t={token}&check=1")] {
        let r = open(&app, &q, None).await;
        assert_eq!(r.status, 403, "expired: {q}");
        assert!(!r.text.contains(&code_a) && !r.text.contains("P-A1"));
    }
    // A new link from the shop works again.
    let (url, _) = link(&app, "alice").await;
    assert_eq!(
        open(&app, &format!("?t={}", token_of(&url)), None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn without_a_secret_no_link_is_issued_and_the_page_refuses_every_token() {
    let app = spawn_app().await;
    deposit_paid(&app, "P-A1", "alice").await;
    let r = app
        .post("/api/v1/users/alice/self-check-link", json!({}))
        .await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.code(), "unavailable");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("not configured")
    );
    let token = sign(
        &Secret::parse(SECRET).expect("secret"),
        &UserId::parse("alice").expect("user"),
        epoch() + Duration::hours(1),
    );
    let r = open(&app, &format!("?t={token}&check=1"), None).await;
    assert_eq!(r.status, 403);
    assert!(!r.text.contains("P-A1"));
}

#[tokio::test]
async fn the_link_api_needs_a_bearer_token_and_a_valid_user_id() {
    let app = app_with_secret().await;
    let path = "/api/v1/users/alice/self-check-link";
    let r = app.post_raw(path, "{}", &[]).await;
    assert_eq!((r.status, r.code()), (401, "unauthorized"));
    let r = app
        .post_raw(path, "{}", &[("authorization", "Bearer wrong")])
        .await;
    assert_eq!(r.status, 401);
    let bearer = format!("Bearer {TOKEN}");
    let long = "x".repeat(129);
    for bad in ["a%20b", long.as_str(), "%09"] {
        let r = app
            .post_raw(
                &format!("/api/v1/users/{bad}/self-check-link"),
                "{}",
                &[("authorization", &bearer)],
            )
            .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text);
        assert_eq!(r.field(), "user_id", "{bad}");
    }
    let r = app
        .post_raw(path, "[1]", &[("authorization", &bearer)])
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    // An empty body counts as {}, and an Idempotency-Key is accepted.
    let r = app
        .post_raw(
            path,
            "",
            &[("authorization", &bearer), ("idempotency-key", "k-1")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let doc = app.get("/api/v1/openapi.json").await;
    assert_eq!(
        doc.body["paths"]["/api/v1/users/{user_id}/self-check-link"]["post"]["operationId"],
        "create_self_check_link"
    );
}

#[tokio::test]
async fn the_check_finds_a_planted_anomaly_in_customer_words_without_internal_ids() {
    let app = app_with_secret().await;
    let (_, code_a) = closed_with_locked_coupon(&app, "P-A1", "alice").await;
    let (_, code_b) = closed_with_locked_coupon(&app, "P-B1", "bob").await;
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);

    let r = open(&app, &format!("?t={token}"), None).await;
    assert_eq!(r.status, 200);
    assert!(
        r.text.contains("sc-run-check"),
        "the check is one click away"
    );
    assert!(
        !r.text.contains("sc-overall"),
        "and not run before it is asked for"
    );

    let r = open(&app, &format!("?t={token}&check=1"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_private(&r);
    let page = &r.text;
    assert!(
        page.contains(r#"data-testid="sc-overall" data-result="problem""#),
        "{page}"
    );
    assert!(page.contains(r#"data-testid="sc-finding" data-result="problem""#));
    assert!(page.contains(&code_a), "the coupon is named by its code");
    assert!(page.contains("请点下面的“联系客服”"));
    assert!(
        page.contains("您无法使用这张券") && !page.contains("客户无法"),
        "second person"
    );
    assert!(page.contains("客服热线 400-000-0000"));
    for internal in [
        "cpn_",
        "tpl_",
        "staff:",
        "api:",
        "release_coupon",
        "suggested",
        "template_stock",
        "alice",
    ] {
        assert!(!page.contains(internal), "{internal} must not appear");
    }
    assert!(
        !page.contains(&code_b) && !page.contains("P-B1"),
        "nothing of bob"
    );

    let r = open(&app, &format!("?t={token}&check=1"), Some("en")).await;
    assert!(r.text.contains("Press “Contact support” below"));
    assert!(r.text.contains(&code_a) && !r.text.contains("cpn_"));
}

#[tokio::test]
async fn the_language_switch_returns_to_the_same_self_check_page() {
    let app = app_with_secret().await;
    let (url, _) = link(&app, "alice").await;
    let here = format!("/self-check?t={}&check=1", token_of(&url));
    let mut b = Browser::new(&app);
    let r = b
        .post_form("/lang", &[("lang", "en"), ("next", &here)])
        .await;
    assert_eq!(r.status, 303);
    assert_eq!(r.location.as_deref(), Some(here.as_str()));
    let page = b.get(&here).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("One-click check"));

    // Under `Referrer-Policy: no-referrer` the browser sends `Origin: null`
    // with the switch; `Sec-Fetch-Site: same-origin` still lets it through,
    // a cross-site post does not.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let body: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("lang", "zh")
        .append_pair("next", &here)
        .finish();
    for (site, status) in [("same-origin", 303), ("cross-site", 403)] {
        let r = client
            .post(format!("{}/lang", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", "null")
            .header("sec-fetch-site", site)
            .body(body.clone())
            .send()
            .await
            .expect("request");
        assert_eq!(r.status().as_u16(), status, "{site}");
    }
}

/// Plants an in-app message with the given texts, as migration 0015 left
/// the ones written before it: key `legacy-text`, the texts as arguments.
async fn message(app: &TestApp, user: &str, body: &str, created_at: i64, read_at: Option<i64>) {
    let args = json!({ "zh": format!("中文：{body}"), "en": format!("English: {body}") });
    planted(
        app,
        user,
        "legacy-text",
        &args.to_string(),
        created_at,
        read_at,
    )
    .await;
}

/// Plants an in-app message row: a catalog key and its JSON arguments.
async fn planted(
    app: &TestApp,
    user: &str,
    key: &str,
    args: &str,
    created_at: i64,
    read_at: Option<i64>,
) {
    sqlx::query(
        "INSERT INTO user_messages
             (user_id, kind, subject_id, message_key, message_args, created_at, read_at)
         VALUES ($1, 'coupons_expiring', NULL, $2, $3, $4, $5)",
    )
    .bind(user)
    .bind(key)
    .bind(args)
    .bind(created_at)
    .bind(read_at)
    .execute(app.db.db.pool())
    .await
    .expect("plant a message");
}

/// (English text, read_at) of a user's messages, oldest first.
async fn messages_of(app: &TestApp, user: &str) -> Vec<(String, Option<i64>)> {
    let rows: Vec<(String, String, Option<i64>)> = sqlx::query_as(
        "SELECT message_key, message_args, read_at FROM user_messages
         WHERE user_id = $1 ORDER BY id",
    )
    .bind(user)
    .fetch_all(app.db.db.pool())
    .await
    .expect("read messages");
    rows.into_iter()
        .map(|(key, args, read_at)| (Lang::En.msg(&Msg::from_stored(&key, &args)), read_at))
        .collect()
}

fn ms(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp_millis()
}

#[tokio::test]
async fn messages_are_listed_newest_first_with_unread_badges_and_mark_all_read_marks_only_that_users()
 {
    let app = app_with_secret().await;
    let t0 = ms(app.now());
    message(&app, "alice", "oldest, read", t0 - 3_000, Some(t0 - 1_000)).await;
    message(&app, "alice", "middle", t0 - 2_000, None).await;
    message(&app, "bob", "bob's own", t0 - 1_500, None).await;
    message(&app, "alice", "newest", t0 - 1_000, None).await;
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);
    let here = format!("/self-check?t={token}");

    let r = open(&app, &format!("?t={token}"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_private(&r);
    let page = &r.text;
    assert!(
        page.contains("消息（2 条未读）"),
        "the heading counts unread"
    );
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} is listed"));
    assert!(
        at("中文：newest") < at("中文：middle") && at("中文：middle") < at("中文：oldest, read")
    );
    assert_eq!(page.matches(r#"data-testid="sc-message""#).count(), 3);
    assert_eq!(page.matches(r#"data-testid="sc-unread""#).count(), 2);
    assert!(page.contains(">未读<"));
    // The badges sit on the two unread ones.
    let read_item = &page[page.rfind(r#"data-testid="sc-message""#).unwrap_or(0)..];
    assert!(read_item.contains(r#"data-state="read""#) && !read_item.contains("sc-unread"));
    assert!(!page.contains("bob's own") && !page.contains("English:"));
    assert_eq!(
        crate::common::console::hidden_value(page, "t").as_deref(),
        Some(token.as_str())
    );

    let r = open(&app, &format!("?t={token}"), Some("en")).await;
    assert!(r.text.contains("Messages (2 unread)") && r.text.contains(">unread<"));
    assert!(r.text.contains("English: newest") && !r.text.contains("中文："));

    // Marking all read: back to the page; only Alice's unread ones change.
    let mut b = Browser::new(&app);
    app.advance(60);
    let r = b
        .post_form("/self-check/messages/read", &[("t", &token)])
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some(format!("{here}#messages").as_str())
    );
    let now = ms(app.now());
    assert_eq!(
        messages_of(&app, "alice").await,
        vec![
            ("English: oldest, read".to_string(), Some(t0 - 1_000)),
            ("English: middle".to_string(), Some(now)),
            ("English: newest".to_string(), Some(now)),
        ]
    );
    assert_eq!(
        messages_of(&app, "bob").await,
        vec![("English: bob's own".to_string(), None)]
    );
    let page = b.get(&here).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("中文：newest") && !page.contains(r#"data-testid="sc-unread""#));
    assert!(!page.contains("sc-mark-read"), "nothing left to mark");

    // Bob's page still has his unread message.
    let (url_b, _) = link(&app, "bob").await;
    let r = open(&app, &format!("?t={}", token_of(&url_b)), None).await;
    assert_eq!(r.text.matches(r#"data-testid="sc-unread""#).count(), 1);
    assert!(r.text.contains("中文：bob's own") && !r.text.contains("中文：newest"));
}

#[tokio::test]
async fn an_in_app_message_from_before_the_migration_and_one_from_after_show_in_chinese_and_english()
 {
    let app = app_with_secret().await;
    let t0 = ms(app.now());
    // Before 0015 a row held its two finished texts. Undo 0015, write such
    // a row and migrate again.
    let pool = app.db.db.pool();
    for undo in [
        "ALTER TABLE user_messages ADD COLUMN body TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE user_messages ADD COLUMN body_en TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE user_messages DROP COLUMN message_key",
        "ALTER TABLE user_messages DROP COLUMN message_args",
        "DELETE FROM _sqlx_migrations WHERE version = 15",
    ] {
        sqlx::query(undo).execute(pool).await.expect(undo);
    }
    sqlx::query(
        "INSERT INTO user_messages (user_id, kind, subject_id, body, body_en, created_at, read_at)
         VALUES ('alice', 'reminder.coupons_expiring', 'rms1', $1, $2, $3, NULL)",
    )
    .bind("你有 2 张优惠券将于明天过期")
    .bind("You have 2 coupons expiring tomorrow.")
    .bind(t0 - 2_000)
    .execute(pool)
    .await
    .expect("an old row");
    app.db.db.migrate().await.expect("0015 again");
    let (key, args): (String, String) =
        sqlx::query_as("SELECT message_key, message_args FROM user_messages")
            .fetch_one(pool)
            .await
            .expect("the migrated row");
    assert_eq!(key, "legacy-text");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&args).expect("JSON"),
        json!({
            "zh": "你有 2 张优惠券将于明天过期",
            "en": "You have 2 coupons expiring tomorrow.",
        })
    );
    // After it, the service stores the reminder's key and arguments.
    let after = couponkeeper::domain::reminder::final_payment_open_message(
        couponkeeper::domain::money::Cents::new(24_900).expect("cents"),
        couponkeeper::domain::money::Cents::new(5_000).expect("cents"),
    );
    let mut c = pool.acquire().await.expect("connection");
    couponkeeper::store::reminders::insert_user_message(
        &mut c,
        &couponkeeper::store::reminders::NewUserMessage {
            user_id: &UserId::parse("alice").expect("user"),
            kind: "reminder.final_payment_open",
            subject_id: Some("P1"),
            message_key: &after.key,
            message_args: &after.args_json(),
            created_at: t0 - 1_000,
        },
    )
    .await
    .expect("write a message");
    drop(c);
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);

    let zh = open(&app, &format!("?t={token}"), None).await;
    assert_eq!(zh.status, 200, "{}", zh.text);
    let at = |page: &str, s: &str| page.find(s).unwrap_or_else(|| panic!("{s} in {page}"));
    assert!(
        at(
            &zh.text,
            "尾款支付已开始，本次尾款 249.00 元，已为你抵扣 50.00 元"
        ) < at(&zh.text, "你有 2 张优惠券将于明天过期"),
        "newest first"
    );
    assert!(!zh.text.contains("You have") && !zh.text.contains("Your final payment"));

    let en = open(&app, &format!("?t={token}"), Some("en")).await;
    assert_eq!(en.status, 200, "{}", en.text);
    assert!(
        at(
            &en.text,
            "Your final payment is open: 249.00 yuan due, 50.00 yuan off with your coupon."
        ) < at(&en.text, "You have 2 coupons expiring tomorrow."),
        "newest first"
    );
    assert!(!en.text.contains("你有") && !en.text.contains("尾款支付"));
    assert!(!en.text.contains("legacy-text") && !zh.text.contains("legacy-text"));
}

#[tokio::test]
async fn a_bad_token_or_a_cross_site_post_cannot_mark_messages_read() {
    let app = app_with_secret().await;
    let t0 = ms(app.now());
    message(&app, "alice", "a", t0, None).await;
    message(&app, "bob", "b", t0, None).await;
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);
    let sig = token.rsplit('.').next().unwrap_or_default().to_string();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('0') { "1" } else { "0" },
        &sig[1..]
    );
    let later = (epoch() + Duration::days(300)).timestamp().to_string();
    let unread = |app: &TestApp| {
        let pool = app.db.db.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT CAST(COUNT(*) AS BIGINT) FROM user_messages WHERE read_at IS NULL",
            )
            .fetch_one(&pool)
            .await
            .expect("count")
        }
    };

    let mut b = Browser::new(&app);
    for bad in [
        with_part(&token, 3, &flipped),
        with_part(&token, 1, &URL_SAFE_NO_PAD.encode("bob")),
        with_part(&token, 2, &later),
        token[..token.len() - 1].to_string(),
        "garbage".to_string(),
        String::new(),
    ] {
        let r = b
            .post_form("/self-check/messages/read", &[("t", &bad)])
            .await;
        assert_eq!(r.status, 403, "{bad}: {}", r.text);
        assert!(r.location.is_none());
        assert!(r.text.contains(r#"data-testid="sc-refused""#));
    }
    let r = b.post_form("/self-check/messages/read", &[]).await;
    assert_eq!(r.status, 403);
    assert_eq!(unread(&app).await, 2, "nothing was marked");

    // A good token posted from another site is refused too.
    for site in ["cross-site", "same-site"] {
        let r = b
            .post_form_with("/self-check/messages/read", &[("t", &token)], site)
            .await;
        assert_eq!(r.status, 403, "{site}");
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let body: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("t", &token)
        .finish();
    let post = |origin: &'static str, site: Option<&'static str>| {
        let mut req = client
            .post(format!("{}/self-check/messages/read", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", origin)
            .body(body.clone());
        if let Some(s) = site {
            req = req.header("sec-fetch-site", s);
        }
        req
    };
    for (origin, site) in [
        ("https://evil.example", None),
        ("https://evil.example", Some("cross-site")),
        ("null", Some("cross-site")),
        ("null", None),
    ] {
        let r = post(origin, site).send().await.expect("request");
        assert_eq!(r.status().as_u16(), 403, "{origin} {site:?}");
    }
    assert_eq!(unread(&app).await, 2, "nothing was marked");

    // The browser's own post from the page (`Origin: null` under
    // no-referrer, `Sec-Fetch-Site: same-origin`) goes through.
    let r = post("null", Some("same-origin"))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(unread(&app).await, 1, "only Alice's was marked");
    assert_eq!(messages_of(&app, "bob").await[0].1, None);
}

#[tokio::test]
async fn pressing_the_check_button_records_the_visit_at_most_once_a_minute_and_opening_records_none()
 {
    let app = app_with_secret().await;
    let visit = |user: &'static str| {
        let pool = app.db.db.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT last_self_check_at FROM user_activity WHERE user_id = $1",
            )
            .bind(user)
            .fetch_optional(&pool)
            .await
            .expect("read activity")
        }
    };
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);
    assert_eq!(visit("alice").await, None, "issuing a link is no visit");

    // A refused link records nothing, not even for the user it names.
    let r = open(
        &app,
        &format!(
            "?t={}",
            with_part(&token, 1, &URL_SAFE_NO_PAD.encode("bob"))
        ),
        None,
    )
    .await;
    assert_eq!(r.status, 403);
    let r = open(&app, &format!("?t={}", &token[..token.len() - 1]), None).await;
    assert_eq!(r.status, 403);
    assert_eq!(visit("alice").await, None);
    assert_eq!(visit("bob").await, None);

    // Opening the page, even with the check's results, is no visit: a
    // link previewer or scanner opens links too.
    assert_eq!(open(&app, &format!("?t={token}"), None).await.status, 200);
    assert_eq!(
        open(&app, &format!("?t={token}&check=1"), None)
            .await
            .status,
        200
    );
    assert_eq!(visit("alice").await, None);
    let press = || async {
        app.client
            .post(format!("{}/self-check/check", app.base))
            .header("sec-fetch-site", "same-origin")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("t={token}"))
            .send()
            .await
            .expect("request")
            .status()
            .as_u16()
    };
    let first = ms(app.now());
    assert!([200, 303].contains(&press().await));
    assert_eq!(visit("alice").await, Some(first));
    app.advance(30);
    assert!([200, 303].contains(&press().await));
    assert_eq!(visit("alice").await, Some(first), "once a minute is enough");
    app.advance(31);
    assert!([200, 303].contains(&press().await));
    assert_eq!(visit("alice").await, Some(ms(app.now())));
    assert_eq!(visit("bob").await, None);
}

/// The order card of `order_no` on `page`.
fn order_card<'a>(page: &'a str, order_no: &str) -> &'a str {
    item(page, &format!(r#"data-order-no="{order_no}""#))
}

/// The coupon card of `code` on `page`.
fn coupon_card<'a>(page: &'a str, code: &str) -> &'a str {
    item(page, &format!(r#"data-code="{code}""#))
}

/// Words that say money is still to pay or a coupon still to come off.
const TO_PAY: [&str; 8] = [
    r#"data-testid="sc-due""#,
    "应付金额",
    "待付尾款",
    "优惠券抵扣",
    "Amount to pay",
    "Final payment due",
    "Coupon discount",
    "comes off",
];

fn assert_nothing_to_pay(card: &str) {
    assert!(card.contains(r#"data-payable="no""#), "{card}");
    for word in TO_PAY {
        assert!(
            !card.contains(word),
            "{word} on a card that cannot be paid: {card}"
        );
    }
}

#[tokio::test]
async fn a_lapsed_checkout_says_it_can_no_longer_be_paid_and_shows_nothing_to_pay_or_deduct() {
    let app = app_with_secret().await;
    let (cid, code) = coupon_for(&app, "alice").await;
    let r = app
        .order(crate::common::normal_order(
            "N-1",
            "alice",
            Some(&cid),
            39900,
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);

    // While the checkout lock runs: what to pay and the coupon to come off.
    let r = open(&app, &format!("?t={token}"), None).await;
    let card = order_card(&r.text, "N-1");
    assert!(card.contains(r#"data-payable="yes""#), "{card}");
    assert!(card.contains(r#"data-testid="sc-due""#) && card.contains(">¥349.00<"));
    assert!(card.contains("−¥50.00"));
    assert!(coupon_card(&r.text, &code).contains("这张券已为订单 N-1 预留，付款时抵扣 50.00 元。"));

    // The lock lapses (15 minutes; no sweep runs here): no longer payable.
    app.advance(900);
    let r = open(&app, &format!("?t={token}"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let card = order_card(&r.text, "N-1");
    assert_nothing_to_pay(card);
    assert!(!card.contains("−¥50.00"), "no discount on it either");
    assert!(card.contains(
        "付款时限已于 2026-11-11 08:15 (UTC+8) 结束，这笔订单已无法付款，会被自动关闭。"
    ));
    assert!(card.contains(&format!(
        "优惠券 {code} 不会再为这笔订单抵扣；订单关闭后会退回您的账户（届时已过期的除外）。"
    )));
    let coupon = coupon_card(&r.text, &code);
    assert!(coupon.contains("这张券被订单 N-1 占用，但这笔订单已无法付款，不会再抵扣"));
    assert!(!coupon.contains("付款时抵扣"), "{coupon}");
    assert!(coupon.contains(r#"data-testid="sc-coupon-terms">满 ¥300.00 减 ¥50.00<"#));

    let r = open(&app, &format!("?t={token}"), Some("en")).await;
    let card = order_card(&r.text, "N-1");
    assert_nothing_to_pay(card);
    assert!(card.contains(
        "The time to pay ran out at 2026-11-11 08:15 (UTC+8): this order can no longer be paid and will be closed."
    ));
    assert!(
        coupon_card(&r.text, &code)
            .contains("This coupon is held by order N-1, which can no longer be paid")
    );
}

#[tokio::test]
async fn a_closed_presale_order_says_what_became_of_its_deposit_and_coupon_in_both_languages() {
    let app = app_with_secret().await;
    let (_, code) = deposit_paid(&app, "P-A1", "alice").await;
    // A second one whose coupon (valid 10 minutes) expires before it closes.
    let short =
        crate::common::fixtures::deposit_paid_under(&app, "P-A2", "alice", "lock", 600).await;
    let short_code = app.coupon(&short).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);

    // Deposit paid: the final payment, its window in local time.
    let r = open(&app, &format!("?t={token}"), None).await;
    let card = order_card(&r.text, "P-A1");
    assert!(card.contains(r#"data-payable="yes""#), "{card}");
    assert!(card.contains("待付尾款"));
    assert!(card.contains(
        r#"尾款支付时间：<time datetime="2026-11-11T01:00:00Z">2026-11-11 09:00 (UTC+8)</time> 至 <time datetime="2026-11-11T02:00:00Z">2026-11-11 10:00 (UTC+8)</time>"#
    ), "{card}");
    let r = open(&app, &format!("?t={token}"), Some("en")).await;
    assert!(
        order_card(&r.text, "P-A1")
            .contains(r#"Final payment: <time datetime="2026-11-11T01:00:00Z">2026-11-11 09:00 (UTC+8)</time> to <time datetime="2026-11-11T02:00:00Z">2026-11-11 10:00 (UTC+8)</time>"#)
    );

    app.advance(601);
    for no in ["P-A1", "P-A2"] {
        let r = app
            .post(&format!("/api/v1/orders/{no}/cancel"), json!({}))
            .await;
        assert_eq!(r.status, 200, "{no}: {}", r.text);
    }

    let r = open(&app, &format!("?t={token}"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let card = order_card(&r.text, "P-A1");
    assert_nothing_to_pay(card);
    assert!(!card.contains("sc-window"), "no window for a closed order");
    assert!(
        card.contains("这笔预售订单在付尾款前已关闭，不能再付款。"),
        "{card}"
    );
    assert!(card.contains("您已付的定金 ¥100.00 按商城的定金规则处理；如有疑问请联系客服。"));
    assert!(card.contains(&format!(
        "优惠券 {code} 已退回您的账户，2026-11-21 08:00 (UTC+8) 前可以继续使用。"
    )));
    assert!(card.contains("关闭时间") && card.contains("2026-11-11 08:10 (UTC+8)"));
    assert!(
        !card.contains("已退款"),
        "no refund is recorded, so none is named"
    );
    let expired = order_card(&r.text, "P-A2");
    assert_nothing_to_pay(expired);
    assert!(expired.contains(&format!(
        "优惠券 {short_code} 已退回您的账户，但已于 2026-11-11 08:10 (UTC+8) 过期，不能再使用。"
    )));

    let r = open(&app, &format!("?t={token}"), Some("en")).await;
    let card = order_card(&r.text, "P-A1");
    assert_nothing_to_pay(card);
    assert!(card.contains(
        "This presale order was closed before the final payment and can no longer be paid."
    ));
    assert!(
        card.contains("The deposit you paid (¥100.00) is handled under the shop's deposit rules")
    );
    assert!(card.contains(&format!(
        "Coupon {code} is back in your account; you can use it until 2026-11-21 08:00 (UTC+8)."
    )));
    assert!(!card.contains("was refunded"));
    assert!(order_card(&r.text, "P-A2").contains(&format!(
        "Coupon {short_code} came back to your account, but it expired at 2026-11-11 08:10 (UTC+8)"
    )));
    for raw in [
        "cpn_",
        "tpl_",
        "cmp_",
        ">deposit_paid<",
        ">pending_payment<",
    ] {
        assert!(!r.text.contains(raw), "{raw} must not appear");
    }
}

#[tokio::test]
async fn percent_coupons_read_9_zhe_and_10_percent_off_with_threshold_categories_and_end_even_when_locked()
 {
    let app = app_with_secret().await;
    let capped = app
        .template(json!({
            "name": "9折券",
            "kind": "percent",
            "value_cents": null,
            "percent_off": 10,
            "max_discount_cents": 3000,
            "categories": ["phones", "shoes"],
        }))
        .await;
    let capped = app
        .claim("alice", capped["id"].as_str().unwrap_or_default())
        .await;
    let plain = app
        .template(json!({
            "name": "85折券",
            "kind": "percent",
            "value_cents": null,
            "percent_off": 15,
            "min_order_cents": 0,
        }))
        .await;
    let plain = app
        .claim("alice", plain["id"].as_str().unwrap_or_default())
        .await;
    // One that starts tomorrow says so rather than "you can use it now".
    let later = app
        .template(json!({
            "valid_seconds": null,
            "valid_from": app.at(24 * 3600),
            "valid_until": app.at(10 * 24 * 3600),
        }))
        .await;
    let later = app
        .claim("alice", later["id"].as_str().unwrap_or_default())
        .await;
    let code = |c: &serde_json::Value| c["code"].as_str().unwrap_or_default().to_string();
    let (capped_code, plain_code, later_code) = (code(&capped), code(&plain), code(&later));
    // The capped one is locked to a checkout: its card still says it all.
    let r = app
        .order(crate::common::normal_order(
            "N-9",
            "alice",
            capped["id"].as_str(),
            39900,
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);

    let r = open(&app, &format!("?t={token}"), None).await;
    let locked = coupon_card(&r.text, &capped_code);
    assert!(locked.contains(r#"data-status="locked""#), "{locked}");
    for fact in [
        r#"data-testid="sc-coupon-terms">满 ¥300.00 可用，9折，最高减 ¥30.00<"#,
        r#"data-testid="sc-coupon-threshold">满 ¥300.00 可用<"#,
        r#"data-testid="sc-coupon-categories">phones、shoes<"#,
        r#"data-testid="sc-coupon-ends"><time datetime="2026-11-21T00:00:00Z">2026-11-21 08:00 (UTC+8)</time><"#,
    ] {
        assert!(locked.contains(fact), "{fact} in {locked}");
    }
    assert!(locked.contains("这张券已为订单 N-9 预留，付款时抵扣 30.00 元。"));
    let free = coupon_card(&r.text, &plain_code);
    for fact in [
        r#"data-testid="sc-coupon-terms">8.5折<"#,
        r#"data-testid="sc-coupon-threshold">无门槛<"#,
        r#"data-testid="sc-coupon-categories">全部品类<"#,
    ] {
        assert!(free.contains(fact), "{fact} in {free}");
    }
    assert!(!r.text.contains("% 折扣") && !r.text.contains("%"));
    let later = coupon_card(&r.text, &later_code);
    assert!(
        later.contains("2026-11-12 08:00 (UTC+8) 起可以使用。"),
        "{later}"
    );
    assert!(!later.contains("现在可以使用"));

    let r = open(&app, &format!("?t={token}"), Some("en-US,en;q=0.9")).await;
    let locked = coupon_card(&r.text, &capped_code);
    for fact in [
        r#"data-testid="sc-coupon-terms">orders from ¥300.00: 10% off, at most ¥30.00<"#,
        r#"data-testid="sc-coupon-threshold">orders from ¥300.00<"#,
        r#"data-testid="sc-coupon-categories">phones, shoes<"#,
        r#"data-testid="sc-coupon-ends"><time datetime="2026-11-21T00:00:00Z">2026-11-21 08:00 (UTC+8)</time><"#,
    ] {
        assert!(locked.contains(fact), "{fact} in {locked}");
    }
    let free = coupon_card(&r.text, &plain_code);
    for fact in [
        r#"data-testid="sc-coupon-terms">15% off<"#,
        r#"data-testid="sc-coupon-threshold">no minimum<"#,
        r#"data-testid="sc-coupon-categories">all categories<"#,
    ] {
        assert!(free.contains(fact), "{fact} in {free}");
    }
    assert!(
        !r.text.contains("折"),
        "no Chinese discount words in English"
    );
    assert!(coupon_card(&r.text, &later_code).contains("Usable from 2026-11-12 08:00 (UTC+8)."));
}

/// The case the product exists for, after the final payment: a presale
/// under `strict` whose coupon ended before the final payment opened was
/// final-paid with no discount. The staff health check, the compensation
/// form it links to and the customer's self-check all say so, until the
/// compensation is given; then all three say it was.
#[tokio::test]
async fn a_strict_presale_paid_after_its_coupon_expired_is_reported_until_compensated() {
    let app = app_with_secret().await;
    crate::common::fixtures::deposit_paid_under(&app, "P-STRICT", "carol", "strict", 10).await;
    app.advance(61);
    let r = app
        .post("/api/v1/orders/P-STRICT/final-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_discount_cents"], 0, "{}", r.text);

    let report = app.get("/api/v1/orders/P-STRICT/health-check").await;
    assert_eq!(report.body["overall"], "warning", "{}", report.text);
    let validity = report.body["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "coupon_validity"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(validity["result"], "warning", "{validity}");
    assert_eq!(
        validity["action"]["code"], "issue_compensation",
        "{validity}"
    );
    assert_eq!(validity["action"]["amount_cents"], 5000, "{validity}");
    let zh = validity["message_zh"].as_str().unwrap_or_default();
    assert!(
        zh.contains("没有抵扣 50.00 元") && zh.contains("尚未补偿"),
        "{zh}"
    );

    // The customer reads the same, and that support can compensate.
    let (url, _) = link(&app, "carol").await;
    let token = token_of(&url);
    let page = open(&app, &format!("?t={token}&check=1"), Some("zh-CN")).await;
    assert_eq!(page.status, 200);
    assert!(
        page.text
            .contains(r#"data-testid="sc-overall" data-result="warning""#)
            || page
                .text
                .contains(r#"data-result="warning" data-testid="sc-overall""#),
        "{}",
        page.text
    );
    assert!(page.text.contains("没有抵扣 50.00 元"), "{}", page.text);
    assert!(page.text.contains("客服可以为您补偿"), "{}", page.text);
    assert!(!page.text.contains("都正常"), "{}", page.text);

    // Support's compensation form comes filled within support's cap.
    crate::common::console::add_staff(&app, "desk", couponkeeper::domain::staff::Role::Support)
        .await;
    let mut b = Browser::new(&app);
    assert_eq!(
        b.sign_in_as("desk", crate::common::console::PASSWORD)
            .await
            .status,
        303
    );
    let form = b
        .get("/console/users/carol/compensation?order_no=P-STRICT&amount_cents=5000")
        .await;
    assert_eq!(form.status, 200, "{}", form.text);
    assert_eq!(
        crate::common::console::input_value(&form.text, "amount").as_deref(),
        Some("50.00")
    );
    let over = b
        .get("/console/users/carol/compensation?order_no=P-STRICT&amount_cents=999999")
        .await;
    assert_eq!(
        crate::common::console::input_value(&over.text, "amount").as_deref(),
        Some("50.00"),
        "a suggestion above support's cap is filled at the cap"
    );

    let r = app
        .post(
            "/api/v1/users/carol/compensation-coupons",
            json!({"value_cents": 5000, "valid_seconds": 86400 * 30, "reason": "coupon expired before the final payment", "order_no": "P-STRICT"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let report = app.get("/api/v1/orders/P-STRICT/health-check").await;
    assert_eq!(report.body["overall"], "ok", "{}", report.text);
    let text = report.text.clone();
    assert!(text.contains("50.00 yuan compensation was given"), "{text}");
    let page = open(&app, &format!("?t={token}&check=1"), Some("zh-CN")).await;
    assert!(
        page.text
            .contains(r#"data-testid="sc-overall" data-result="ok""#),
        "{}",
        page.text
    );
    assert!(!page.text.contains("客服可以为您补偿"), "{}", page.text);
    // The compensation coupon names the order it makes up for: on the
    // customer's page (not the staff's words) and in the console (with
    // them).
    let given = r.body["code"].as_str().unwrap_or_default().to_string();
    let card = coupon_card(&page.text, &given);
    assert!(card.contains("订单 P-STRICT 的补偿"), "{card}");
    assert!(!card.contains("coupon expired before"), "{card}");
    let console = b
        .get(&format!(
            "/console/coupons/{}",
            r.body["id"].as_str().unwrap_or_default()
        ))
        .await;
    assert!(
        console.text.contains("订单 P-STRICT 的补偿")
            && console
                .text
                .contains("coupon expired before the final payment"),
        "{}",
        console.text
    );
}

/// Times a person reads show the business time zone; the instant itself
/// is in a `<time datetime="…Z">` element, on the self-check page as in
/// the console.
#[tokio::test]
async fn times_on_the_self_check_page_and_in_the_console_carry_their_instant() {
    let app = app_with_secret().await;
    let (cid, _) = coupon_for(&app, "dora").await;
    let ends = app.coupon(&cid).await["ends_at"]
        .as_str()
        .unwrap_or_default()
        .replace(".000Z", "Z");
    let (url, expires) = link(&app, "dora").await;
    let page = open(&app, &format!("?t={}", token_of(&url)), Some("zh-CN")).await;
    assert_eq!(page.status, 200);
    let ends_el = format!(r#"<time datetime="{ends}">"#);
    assert!(page.text.contains(&ends_el), "{ends_el}: {}", page.text);
    let expires_el = format!(r#"<time datetime="{}">"#, expires.replace(".000Z", "Z"));
    assert!(
        page.text.contains(&expires_el),
        "{expires_el}: {}",
        page.text
    );
    assert!(page.text.contains("(UTC+8)</time>"), "{}", page.text);

    crate::common::console::add_staff(&app, "desk", couponkeeper::domain::staff::Role::Support)
        .await;
    let mut b = Browser::new(&app);
    assert_eq!(
        b.sign_in_as("desk", crate::common::console::PASSWORD)
            .await
            .status,
        303
    );
    let console = b.get(&format!("/console/coupons/{cid}")).await;
    assert_eq!(console.status, 200);
    assert!(console.text.contains(&ends_el), "{}", console.text);
}

/// An order card shows what the next payment will really be: after
/// support released a deposit-paid order's coupon, no discount that no
/// longer holds; once paid, the discount and what was paid at each stage.
#[tokio::test]
async fn an_order_card_never_shows_a_discount_that_no_longer_holds_and_a_paid_one_shows_each_payment()
 {
    let app = app_with_secret().await;
    let cid =
        crate::common::fixtures::deposit_paid_under(&app, "P-REL", "erin", "lock", 10 * 24 * 3600)
            .await;
    crate::common::fixtures::deposit_paid_under(&app, "P-PAID", "erin", "lock", 10 * 24 * 3600)
        .await;
    let r = app
        .post(
            &format!("/api/v1/coupons/{cid}/release"),
            json!({"reason": "customer asked", "force": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(61);
    let r = app
        .post("/api/v1/orders/P-PAID/final-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let (url, _) = link(&app, "erin").await;
    let page = open(&app, &format!("?t={}", token_of(&url)), Some("zh-CN")).await;
    let released = order_card(&page.text, "P-REL");
    assert!(!released.contains("sc-discount"), "{released}");
    assert!(!released.contains("−¥50.00"), "{released}");
    assert!(
        released.contains(r#"data-testid="sc-due" class="money sc-due">¥299.00<"#),
        "{released}"
    );
    assert!(released.contains("已付定金"), "{released}");
    let paid = order_card(&page.text, "P-PAID");
    assert!(paid.contains("−¥50.00"), "{paid}");
    assert!(
        paid.contains("已付定金") && paid.contains("¥100.00"),
        "{paid}"
    );
    assert!(
        paid.contains("已付尾款") && paid.contains("¥249.00"),
        "{paid}"
    );
    assert!(!paid.contains("sc-due"), "{paid}");
}

#[tokio::test]
async fn a_coupons_categories_read_by_the_names_an_operator_gave_them() {
    use couponkeeper::domain::category::CategoryName;
    use couponkeeper::service::support::Authority;
    let app = app_with_secret().await;
    let t = app.template(json!({"categories": ["phones"]})).await;
    app.claim("alice", t["id"].as_str().expect("id")).await;
    let (url, _) = link(&app, "alice").await;
    let query = format!("?t={}", token_of(&url));
    let page = open(&app, &query, None).await;
    assert!(
        page.text.contains("phones"),
        "unnamed, the code: {}",
        page.text
    );

    app.service
        .name_category_as(
            &couponkeeper::service::Ctx::new("api:test", None),
            &Authority::Api,
            CategoryName::parse("phones", "手机", "Phones").expect("names"),
            None,
        )
        .await
        .expect("named");
    let page = open(&app, &query, None).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("手机"), "{}", page.text);
    assert!(!page.text.contains("phones"), "{}", page.text);
    let page = open(&app, &query, Some("en")).await;
    assert!(page.text.contains("Phones"), "{}", page.text);
}

#[tokio::test]
async fn a_partly_refunded_order_says_what_came_back_why_the_coupon_stayed_and_what_was_taken_back()
{
    let app = app_with_secret().await;
    let t = app
        .template(json!({"categories": ["beauty"], "partial_refund_rule": "clawback"}))
        .await;
    let c = app
        .claim("alice", t["id"].as_str().unwrap_or_default())
        .await;
    let code = c["code"].as_str().unwrap_or_default().to_string();
    let line = |id: &str, category: &str, q: i64, p: i64| {
        json!({"line_id": id, "sku": null, "category": category, "shop_id": null,
            "quantity": q, "unit_price_cents": p})
    };
    let r = app
        .order(
            json!({"order_no": "N1", "user_id": "alice", "kind": "normal",
            "coupon_id": c["id"], "lines": [line("a", "beauty", 2, 10000),
            line("b", "beauty", 1, 15000), line("c", "food", 1, 8000)]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        app.post("/api/v1/orders/N1/pay", json!({})).await.status,
        200
    );
    let r = app
        .post(
            "/api/v1/orders/N1/refunds",
            json!({"refund_id": "r1", "lines": [{"line_id": "b", "quantity": 1}],
                "reason": "退货"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let token = token_of(&link(&app, "alice").await.0);
    let zh = open(&app, &format!("?t={token}"), None).await;
    assert_eq!(zh.status, 200, "{}", zh.text);
    let card = item(&zh.text, r#"data-order-no="N1""#);
    for words in [
        "这笔订单已部分退款：退了 1 件商品，退回 ¥100.00。",
        "其中扣回优惠 ¥28.57",
        &format!("券 {code} 仍用于你没有退的商品"),
    ] {
        assert!(card.contains(words), "{words} in {card}");
    }
    let en = open(&app, &format!("?t={token}"), Some("en")).await;
    let card = item(&en.text, r#"data-order-no="N1""#);
    for words in [
        "Part of this order was refunded: 1 item, ¥100.00 back to you.",
        "¥28.57 of the discount was taken back",
        &format!("Coupon {code} still counts for the items you kept"),
    ] {
        assert!(card.contains(words), "{words} in {card}");
    }
}

#[tokio::test]
async fn an_order_of_several_coupons_lists_each_coupon_by_code_with_what_it_gave() {
    let app = app_with_secret().await;
    let mut codes = Vec::new();
    let mut ids = Vec::new();
    for (value, shop) in [(3000, None), (2000, Some("A"))] {
        let t = app
            .template(json!({"value_cents": value, "min_order_cents": 0, "shop_id": shop}))
            .await;
        let c = app
            .claim("carol", t["id"].as_str().unwrap_or_default())
            .await;
        ids.push(c["id"].as_str().unwrap_or_default().to_string());
        codes.push(c["code"].as_str().unwrap_or_default().to_string());
    }
    let r = app
        .order(
            json!({"order_no": "S-1", "user_id": "carol", "kind": "normal",
            "coupon_ids": ids,
            "lines": [{"line_id": "a", "sku": null, "category": "beauty", "shop_id": "A",
                "quantity": 1, "unit_price_cents": 40000}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let (url, _) = link(&app, "carol").await;
    let page = open(&app, &format!("?t={}", token_of(&url)), None).await;
    assert_eq!(page.status, 200, "{}", page.text);
    // The order's money list (its coupons are a list inside it).
    let at = page.text.find("data-order-no=\"S-1\"").unwrap_or(0);
    let card = &page.text[at..];
    let card = &card[..card.find("</dl>").unwrap_or(card.len())];
    assert!(card.contains("本单用券"), "{card}");
    let each: Vec<&str> = card
        .split("data-testid=\"sc-order-coupon\"")
        .skip(1)
        .collect();
    assert_eq!(each.len(), 2, "{card}");
    assert!(
        each[0].contains(&codes[0]) && each[0].contains("¥30.00"),
        "{card}"
    );
    assert!(
        each[1].contains(&codes[1]) && each[1].contains("¥20.00"),
        "{card}"
    );
    // The shop coupon's own card says what it takes off this order.
    let shop_card = item(&page.text, &format!("data-code=\"{}\"", codes[1]));
    assert!(
        shop_card.contains("S-1") && shop_card.contains("20"),
        "{shop_card}"
    );
    assert!(!page.text.contains(&ids[1]), "no coupon id on the page");
}

// ---------------------------------------------------------------- contact support

async fn requests_of(app: &TestApp, order_no: &str) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT id, status, handled_by FROM support_requests WHERE order_no = $1 ORDER BY created_at, id",
    )
    .bind(order_no)
    .fetch_all(app.db.db.pool())
    .await
    .expect("requests")
}

async fn count_of(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(app.db.db.pool())
        .await
        .expect("count")
}

#[tokio::test]
async fn contact_support_sends_the_check_and_the_note_once_an_hour_and_support_handles_it_from_the_queue()
 {
    let app = app_with_secret().await;
    let (_, code) = closed_with_locked_coupon(&app, "P-A1", "alice").await;
    deposit_paid(&app, "P-B1", "bob").await;
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);

    // The form is under each order of the check, not before it.
    let before = open(&app, &format!("?t={token}"), None).await;
    assert!(!before.text.contains(r#"data-testid="sc-support-form""#));
    let page = open(&app, &format!("?t={token}&check=1"), None).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains(r#"data-testid="sc-support-form""#));
    assert!(page.text.contains(r#"name="order_no" value="P-A1""#));

    let mut b = Browser::new(&app);
    let note = "定金付了，券还锁着 <b>?</b>";
    let r = b
        .post_form(
            "/self-check/support",
            &[("t", &token), ("order_no", "P-A1"), ("note", note)],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let to = r.location.clone().unwrap_or_default();
    assert!(
        to.starts_with("/self-check?t=") && to.ends_with("&check=1#check"),
        "{to}"
    );
    assert_eq!(requests_of(&app, "P-A1").await.len(), 1);
    assert_eq!(
        count_of(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM events WHERE order_no = 'P-A1' AND action = 'support_requested' AND actor = 'customer:self-check'").await,
        1,
        "an event row on the order"
    );

    // The webhook carries the diagnosis in both languages, codes not ids.
    let (payload, user): (String, String) = sqlx::query_as(
        "SELECT payload, user_id FROM outbox WHERE event_type = 'support.requested'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("one message");
    assert_eq!(user, "alice");
    assert!(!payload.contains("cpn_"), "{payload}");
    let p: serde_json::Value = serde_json::from_str(&payload).expect("json");
    assert_eq!(p["order_no"], "P-A1");
    assert_eq!(p["note"], note);
    assert_eq!(p["overall"], "problem");
    let findings = p["findings"].as_array().cloned().unwrap_or_default();
    let problem = findings
        .iter()
        .find(|f| f["result"] == "problem")
        .expect("the planted problem is in the request");
    assert_eq!(problem["contact_support"], true);
    assert!(
        problem["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&code)
            || problem["coupon_code"] == code.as_str(),
        "{problem}"
    );
    assert!(
        !problem["message_en"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
    );

    // The check now says when it was sent instead of the form.
    let page = open(&app, &format!("?t={token}&check=1"), None).await;
    assert!(page.text.contains(r#"data-testid="sc-support-sent""#));
    assert!(!page.text.contains(r#"name="order_no" value="P-A1""#));

    // Again within the hour: nothing new, the page still says sent.
    app.advance(1800);
    let r = b
        .post_form(
            "/self-check/support",
            &[("t", &token), ("order_no", "P-A1")],
        )
        .await;
    assert_eq!(r.status, 303);
    assert_eq!(requests_of(&app, "P-A1").await.len(), 1);

    // Bob's order through Alice's link, an unknown or malformed one: 404
    // saying nothing, nothing written.
    for other in ["P-B1", "NO-SUCH", ""] {
        let r = b
            .post_form("/self-check/support", &[("t", &token), ("order_no", other)])
            .await;
        assert_eq!(r.status, 404, "{other}: {}", r.text);
        assert!(r.text.contains(r#"data-testid="sc-no-such-order""#));
        assert!(!r.text.contains("bob"));
    }
    assert_eq!(requests_of(&app, "P-B1").await.len(), 0);
    // A cross-site post or a bad token: the page's 403, nothing written.
    let r = b
        .post_form_with(
            "/self-check/support",
            &[("t", &token), ("order_no", "P-A1")],
            "cross-site",
        )
        .await;
    assert_eq!(r.status, 403);
    let r = b
        .post_form(
            "/self-check/support",
            &[("t", "garbage"), ("order_no", "P-A1")],
        )
        .await;
    assert_eq!(r.status, 403);

    // After the hour, a note too long comes back with the page, the note
    // as typed and the message at the field; nothing written.
    app.advance(1801);
    // (A new link: the first one lived an hour.)
    let (url, _) = link(&app, "alice").await;
    let token = token_of(&url);
    let long = "券".repeat(501);
    let r = b
        .post_form(
            "/self-check/support",
            &[("t", &token), ("order_no", "P-A1"), ("note", &long)],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains(r#"data-field-error="note""#));
    assert!(r.text.contains("留言最多 500 个字"));
    assert!(r.text.contains(&long), "the note as typed");
    assert!(r.text.contains(r#"aria-invalid="true""#));
    assert_eq!(requests_of(&app, "P-A1").await.len(), 1);
    // Then a second request goes through.
    let r = b
        .post_form(
            "/self-check/support",
            &[("t", &token), ("order_no", "P-A1"), ("note", "还是没好")],
        )
        .await;
    assert_eq!(r.status, 303);
    let requests = requests_of(&app, "P-A1").await;
    assert_eq!(requests.len(), 2);

    // Support: the queue lists both, oldest first, with note and findings
    // by code, no ids.
    let mut s =
        crate::common::console::signed_in(&app, couponkeeper::domain::staff::Role::Support).await;
    let q = s.get("/console/support-requests").await;
    assert_eq!(q.status, 200, "{}", q.text);
    assert_eq!(
        q.text.matches(r#"data-testid="support-request" "#).count(),
        2
    );
    let first = q.text.find("定金付了").unwrap_or(usize::MAX);
    let second = q.text.find("还是没好").unwrap_or(0);
    assert!(first < second, "oldest first");
    assert!(
        q.text.contains("&lt;b&gt;?&lt;/b&gt;"),
        "the note is text, not markup"
    );
    assert!(q.text.contains("待处理（2）"));
    let visible = crate::common::console::visible_text(&q.text);
    assert!(
        visible.contains(&code) && !visible.contains("cpn_"),
        "{visible}"
    );
    // The home page's work queue counts them and links to the queue.
    let home = s.get("/console").await;
    assert!(
        home.text
            .contains(r#"data-testid="queue-support-requests" data-count="2""#),
        "{}",
        home.text
    );

    // On the order page, beside the health check; marked handled there,
    // it lands back there.
    let order = s.get("/console/orders/P-A1").await;
    assert!(order.text.contains(r#"id="support-requests-section""#));
    let csrf = order.csrf().expect("token");
    let id = &requests[0].0;
    let r = s
        .post_form(
            &format!("/console/support-requests/{id}/handled"),
            &[("csrf", &csrf), ("back", "/console/orders/P-A1")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.location.as_deref(), Some("/console/orders/P-A1"));
    let requests = requests_of(&app, "P-A1").await;
    assert_eq!(requests[0].1, "handled");
    assert_eq!(requests[0].2.as_deref(), Some("staff:support-1"));
    assert_eq!(requests[1].1, "open");
    // Twice: refused, nothing more written.
    let r = s
        .post_form(
            &format!("/console/support-requests/{id}/handled"),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status, 303);
    assert_eq!(r.location.as_deref(), Some("/console/support-requests"));
    assert_eq!(
        count_of(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM events WHERE action = 'support_request_handled'"
        )
        .await,
        1
    );
    let q = s.get("/console/support-requests").await;
    assert!(q.text.contains("待处理（1）"));
    let handled = s.get("/console/support-requests?status=handled").await;
    assert!(handled.text.contains("support-1"));
    // Without a session token the post changes nothing.
    let r = s
        .post_form(
            &format!("/console/support-requests/{}/handled", requests[1].0),
            &[],
        )
        .await;
    assert_ne!(r.status, 303);
    assert_eq!(requests_of(&app, "P-A1").await[1].1, "open");
}
