//! Reminder channels by step (`COUPONKEEPER_REMINDER_CHANNELS`) through
//! the real router, both stores, on the manual clock: each configured step
//! sends its channel in `reminder.coupons_expiring`, a push step still
//! goes by sms at or above the value tier and an sms step stays sms below
//! it, the setting unset keeps the contract's sms-or-push; a pop-up is
//! pending in the picker's `reminder_popups` and on the self-check page
//! until the shop or the customer marks it seen, or until its coupons
//! have ended or been used.

use chrono::Duration;
use serde_json::{Value, json};

use crate::common::console::{Browser, hidden_value};
use crate::common::fixtures::count;
use crate::common::{TOKEN, TestApp, normal_order};
use couponkeeper::config::Config;
use couponkeeper::domain::reminder;
use couponkeeper::domain::self_check::Secret;

const MIN: i64 = 60;
const DAY: i64 = 24 * 3600;
/// The coupons of `template_body()` end 10 days after their claim.
const VALID: i64 = 10 * DAY;

/// The default plan (3 days, 1 day, 30 minutes) without quiet hours, with
/// `channels` as `COUPONKEEPER_REMINDER_CHANNELS` ("" for unset), and
/// self-check links on.
async fn app_with(channels: &str) -> TestApp {
    let channels = channels.to_string();
    TestApp::builder()
        .with_config(move |c: &mut Config| {
            c.reminders.quiet_hours = None;
            c.reminders.channels =
                reminder::parse_channels(&channels, &c.reminders.offsets).expect("valid channels");
            c.self_check.secret =
                Some(Secret::parse("self-check secret for the tests, 32+ bytes").expect("secret"));
        })
        .start()
        .await
}

/// A template of coupons worth `value_cents`, valid 10 days; its id.
async fn template(app: &TestApp, value_cents: i64) -> String {
    let t = app
        .template(json!({"value_cents": value_cents, "min_order_cents": value_cents + 100}))
        .await;
    t["id"].as_str().expect("id").to_string()
}

/// Moves the clock to a minute after the coupons claimed at the start
/// reach `offset` (they end `VALID` after it) and runs the planner.
async fn reach(app: &TestApp, offset: i64) {
    let target = crate::common::epoch() + Duration::seconds(VALID - offset + MIN);
    let now = app.now();
    app.advance((target - now).num_seconds());
    app.service
        .plan_due_reminders(500)
        .await
        .expect("planner runs");
}

/// The `reminder.coupons_expiring` payloads of `user`, oldest first.
async fn reminders_of(app: &TestApp, user: &str) -> Vec<Value> {
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT payload FROM outbox WHERE event_type = 'reminder.coupons_expiring' AND user_id = $1 ORDER BY id",
    )
    .bind(user)
    .fetch_all(app.db.db.pool())
    .await
    .expect("outbox");
    rows.iter()
        .map(|p| serde_json::from_str(p).expect("payload is JSON"))
        .collect()
}

/// The channels of `user`'s reminders, oldest first.
async fn channels_of(app: &TestApp, user: &str) -> Vec<String> {
    reminders_of(app, user)
        .await
        .iter()
        .map(|p| p["channel"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// The picker's answer for `user` on a ¥1000 cart, in `lang`.
async fn picker(app: &TestApp, user: &str, lang: &str) -> Value {
    let auth = format!("Bearer {TOKEN}");
    let r = app
        .post_raw(
            &format!("/api/v1/users/{user}/coupon-options"),
            json!({"kind": "normal", "category": "phones", "total_cents": 100_000}).to_string(),
            &[("authorization", &auth), ("accept-language", lang)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn popups(app: &TestApp, user: &str) -> Vec<Value> {
    picker(app, user, "en").await["reminder_popups"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn seen(app: &TestApp, user: &str, body: Value) -> crate::common::Resp {
    app.post(&format!("/api/v1/users/{user}/reminder-popups/seen"), body)
        .await
}

#[tokio::test]
async fn each_configured_step_sends_its_channel_in_the_webhook_and_keeps_an_in_app_copy() {
    let app = app_with(reminder::RECOMMENDED_CHANNELS).await;
    let small = template(&app, 1000).await;
    app.claim("u1", &small).await;

    reach(&app, 3 * DAY).await;
    reach(&app, DAY).await;
    reach(&app, 30 * MIN).await;
    assert_eq!(channels_of(&app, "u1").await, ["in_app", "push", "popup"]);
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT channel FROM reminder_slots WHERE user_id = 'u1' ORDER BY offset_seconds DESC",
    )
    .fetch_all(app.db.db.pool())
    .await
    .expect("slots");
    assert_eq!(stored, ["in_app", "push", "popup"]);
    // Every reminder, whatever its channel, has its in-app copy.
    assert_eq!(
        count(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM user_messages WHERE user_id = 'u1' AND kind = 'reminder.coupons_expiring'"
        )
        .await,
        3
    );
    // Only the pop-up is pending.
    assert_eq!(
        count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM reminder_popups").await,
        1
    );
}

#[tokio::test]
async fn a_push_step_goes_by_sms_at_or_above_the_tier_and_an_sms_step_stays_sms_below_it() {
    // 3 days: in-app; 1 day: not listed, so push (sms at the tier); 30
    // minutes: sms whatever the value.
    let app = app_with("3d=in_app,30m=sms").await;
    let (rich, poor) = (template(&app, 5000).await, template(&app, 1000).await);
    app.claim("rich", &rich).await;
    app.claim("poor", &poor).await;

    reach(&app, 3 * DAY).await;
    reach(&app, DAY).await;
    reach(&app, 30 * MIN).await;
    assert_eq!(channels_of(&app, "rich").await, ["in_app", "sms", "sms"]);
    assert_eq!(channels_of(&app, "poor").await, ["in_app", "push", "sms"]);
    assert!(popups(&app, "rich").await.is_empty());
}

#[tokio::test]
async fn without_the_setting_every_step_keeps_the_contracts_sms_or_push() {
    let app = app_with("").await;
    assert!(app.service.settings().reminders.channels.is_empty());
    let (rich, poor) = (template(&app, 5000).await, template(&app, 4999).await);
    app.claim("rich", &rich).await;
    app.claim("poor", &poor).await;

    for offset in [3 * DAY, DAY, 30 * MIN] {
        reach(&app, offset).await;
    }
    assert_eq!(channels_of(&app, "rich").await, ["sms", "sms", "sms"]);
    assert_eq!(channels_of(&app, "poor").await, ["push", "push", "push"]);
    assert_eq!(
        count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM reminder_popups").await,
        0
    );
    assert!(popups(&app, "rich").await.is_empty());
}

#[tokio::test]
async fn a_pending_popup_shows_in_the_picker_until_the_shop_marks_it_seen() {
    let app = app_with("30m=popup").await;
    let a = template(&app, 1000).await;
    let b = template(&app, 2000).await;
    app.claim("u1", &a).await;
    app.claim("u1", &b).await;
    app.claim("u2", &a).await;
    assert!(popups(&app, "u1").await.is_empty(), "none before the step");

    reach(&app, 30 * MIN).await;
    let sent = reminders_of(&app, "u1").await;
    assert_eq!(sent.len(), 1, "one reminder for both coupons: {sent:?}");
    assert_eq!(sent[0]["channel"], "popup");
    let slot = sent[0]["slot_id"].as_str().expect("slot id").to_string();

    let shown = popups(&app, "u1").await;
    assert_eq!(shown.len(), 1, "{shown:?}");
    let p = &shown[0];
    assert_eq!(p["id"], slot.as_str(), "the webhook's slot id");
    assert_eq!(p["count"], 2);
    assert_eq!(p["total_value_cents"], 3000);
    assert_eq!(p["earliest_ends_at"], sent[0]["earliest_ends_at"]);
    assert_eq!(
        p["message"],
        "You have 2 coupons expiring today, worth 30.00 yuan in total."
    );
    let zh = picker(&app, "u1", "zh-CN").await;
    assert_eq!(
        zh["reminder_popups"][0]["message"],
        "你有 2 张优惠券将于今天过期，共可省 30.00 元"
    );
    let u2 = popups(&app, "u2").await;
    assert_eq!(u2.len(), 1);
    let u2_slot = u2[0]["id"].as_str().expect("id").to_string();

    // Bad input is refused and changes nothing.
    let many: Vec<String> = (0..51).map(|i| format!("rms_{i}")).collect();
    for body in [
        json!({"ids": many}),
        json!({"ids": [""]}),
        json!({"ids": "rms_1"}),
    ] {
        let r = seen(&app, "u1", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
    }
    let r = seen(&app, "not a user!", json!({})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    // Another customer's pop-up id does not mark it.
    let r = seen(&app, "u1", json!({"ids": [u2_slot]})).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert_eq!(popups(&app, "u1").await.len(), 1);
    assert_eq!(popups(&app, "u2").await.len(), 1);

    // Seen: no longer pending, and seen twice is seen once.
    let r = seen(&app, "u1", json!({"ids": [slot]})).await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    assert!(popups(&app, "u1").await.is_empty());
    let seen_at: Option<i64> =
        sqlx::query_scalar("SELECT seen_at FROM reminder_popups WHERE slot_id = $1")
            .bind(&slot)
            .fetch_one(app.db.db.pool())
            .await
            .expect("row");
    assert_eq!(seen_at, Some(app.now().timestamp_millis()));
    app.advance(5);
    let r = seen(&app, "u1", json!({})).await;
    assert_eq!(r.status, 204);
    let again: Option<i64> =
        sqlx::query_scalar("SELECT seen_at FROM reminder_popups WHERE slot_id = $1")
            .bind(&slot)
            .fetch_one(app.db.db.pool())
            .await
            .expect("row");
    assert_eq!(again, seen_at, "the first time is kept");
    // Without ids: every pending pop-up of the customer.
    let r = seen(&app, "u2", json!({"ids": null})).await;
    assert_eq!(r.status, 204);
    assert!(popups(&app, "u2").await.is_empty());
}

#[tokio::test]
async fn a_popup_stops_being_pending_once_its_coupons_are_used_or_have_ended() {
    let app = app_with("30m=popup").await;
    let a = template(&app, 1000).await;
    let b = template(&app, 2000).await;
    let first = app.claim("u1", &a).await;
    app.claim("u1", &b).await;

    reach(&app, 30 * MIN).await;
    assert_eq!(popups(&app, "u1").await[0]["count"], 2);

    // One coupon goes on an order: the pop-up counts the other one.
    let first = first["id"].as_str().expect("id");
    let r = app
        .order(normal_order("P-POPUP-1", "u1", Some(first), 50_000))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let shown = popups(&app, "u1").await;
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["count"], 1);
    assert_eq!(shown[0]["total_value_cents"], 2000);

    // A second before the other one ends it is still pending; at its end
    // it is not, although nobody saw it.
    app.advance(29 * MIN - 1);
    assert_eq!(popups(&app, "u1").await.len(), 1);
    app.advance(1);
    assert!(popups(&app, "u1").await.is_empty());
    let unseen: i64 = count(
        &app,
        "SELECT CAST(COUNT(*) AS BIGINT) FROM reminder_popups WHERE seen_at IS NULL",
    )
    .await;
    assert_eq!(unseen, 1, "ended, not seen");
}

/// The text of `page` from `from` to the first `to` after it.
fn between<'a>(page: &'a str, from: &str, to: &str) -> &'a str {
    let start = page.find(from).unwrap_or(page.len());
    let rest = &page[start..];
    &rest[..rest.find(to).unwrap_or(rest.len())]
}

#[tokio::test]
async fn the_self_check_page_shows_a_pending_popup_first_and_got_it_marks_it_seen() {
    let app = app_with("30m=popup").await;
    let a = template(&app, 1000).await;
    app.claim("u1", &a).await;
    reach(&app, 30 * MIN).await;

    let r = app
        .post("/api/v1/users/u1/self-check-link", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let url = r.body["url"].as_str().expect("url").to_string();
    let token = url
        .split_once("?t=")
        .map(|(_, t)| t.to_string())
        .expect("token");
    let here = format!("/self-check?t={token}");

    let mut b = Browser::new(&app);
    let page = b.get(&here).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let main = between(&page.text, "<main", "</main>");
    let (popup, check) = (
        main.find(r#"data-testid="sc-popups""#)
            .expect("the pop-ups"),
        main.find(r#"id="check""#).expect("the check"),
    );
    assert!(popup < check, "the pop-ups come first");
    let section = between(main, r#"data-testid="sc-popups""#, "</section>");
    assert!(
        section.contains("你有 1 张优惠券将于今天过期，共可省 10.00 元"),
        "{section}"
    );
    assert!(section.contains("<time datetime="), "{section}");
    assert_eq!(section.matches(r#"data-testid="sc-popup""#).count(), 1);
    assert_eq!(hidden_value(section, "t").as_deref(), Some(token.as_str()));

    b.accept_language = Some("en".into());
    let page = b.get(&here).await;
    assert!(page.contains("You have 1 coupon expiring today, worth 10.00 yuan in total."));

    // "Got it": the page's own form, the token its only credential.
    let r = b
        .post_form("/self-check/messages/read", &[("t", &token)])
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let page = b.get(&here).await;
    assert_eq!(page.status, 200);
    assert!(
        !page.contains(r#"data-testid="sc-popups""#),
        "{}",
        page.text
    );
    assert!(popups(&app, "u1").await.is_empty(), "seen for the shop too");
    assert_eq!(
        count(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM user_messages WHERE user_id = 'u1' AND read_at IS NULL"
        )
        .await,
        0,
        "and the in-app copy read"
    );
}
