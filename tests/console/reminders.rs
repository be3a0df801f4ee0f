//! The reminder plan page (`/console/reminders`): operators and admins see
//! the plan and tiers as configured (each with its environment variable),
//! the last 24 hours' reminders by channel and offset after planner runs
//! on the manual clock, and the most recent reminders; each offset's
//! channel, the recommended channels and the pop-ups among the counts;
//! support gets 403 and no session goes to sign-in. Both stores.

use crate::common::console::{Browser, Page, signed_in};
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::reminder;
use couponkeeper::domain::staff::Role;
use serde_json::json;

const DAY: i64 = 24 * 3600;
const PAGE: &str = "/console/reminders";

/// The number in the first `<td ... marker ...>` after `anchor`, skipping
/// any markup between the cell's opening tag and its digits.
fn number_after(text: &str, anchor: &str, marker: &str) -> i64 {
    let at = text
        .find(anchor)
        .unwrap_or_else(|| panic!("{anchor} not on the page"));
    let rest = &text[at..];
    let cell = rest
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} after {anchor}"));
    let rest = &rest[cell..];
    let open = rest.find('>').expect("tag ends") + 1;
    let rest = &rest[open..];
    let mut digits = String::new();
    let mut in_tag = false;
    for ch in rest.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag && c.is_ascii_digit() => digits.push(c),
            _ if !in_tag && !digits.is_empty() => break,
            _ => {}
        }
        if ch == '<' && !digits.is_empty() {
            break;
        }
    }
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after {anchor} {marker}"))
}

fn channel_count(page: &Page, channel: &str) -> i64 {
    let by_channel = &page.text[page.text.find("data-testid=\"by-channel\"").expect("table")..];
    number_after(
        by_channel,
        &format!("data-channel=\"{channel}\""),
        "data-testid=\"count\"",
    )
}

fn offset_total(page: &Page, offset: i64) -> i64 {
    let by_offset = &page.text[page.text.find("data-testid=\"by-offset\"").expect("table")..];
    number_after(
        by_offset,
        &format!("data-offset=\"{offset}\""),
        "data-testid=\"offset-total\"",
    )
}

async fn slots(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM reminder_slots")
        .fetch_one(app.db.db.pool())
        .await
        .expect("count")
}

#[tokio::test]
async fn an_operator_sees_the_configured_plan_and_the_variables_that_set_it() {
    let app = TestApp::builder()
        .with_config(|c| {
            c.reminders.offsets = reminder::parse_offsets("2d,6h,90s").expect("offsets");
            c.reminders.quiet_hours = reminder::parse_quiet_hours("23:00-07:30").expect("quiet");
            c.reminders.tz = reminder::parse_business_tz("America/New_York").expect("tz");
            c.reminders.sms_min_cents = 8800;
            c.reminders.window_seconds = 600;
            c.reminders.limits.sms_per_day = 3;
            c.reminders.limits.push_per_day = 9;
        })
        .start()
        .await;
    let mut b = signed_in(&app, Role::Operator).await;
    b.accept_language = Some("en".into());
    let page = b.get(PAGE).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("data-testid=\"nav-reminders\""));
    for s in [
        "2 days before",
        "6 hours before",
        "90 seconds before",
        "¥88.00",
        "23:00–07:30",
        "America/New_York",
        "600 seconds",
        "30 days",
        "self-check visit",
        "COUPONKEEPER_REMINDER_OFFSETS",
        "COUPONKEEPER_REMINDER_WINDOW_SECONDS",
        "COUPONKEEPER_QUIET_HOURS",
        "COUPONKEEPER_BUSINESS_TZ",
        "COUPONKEEPER_SMS_MIN_CENTS",
        "COUPONKEEPER_REMINDER_SMS_PER_DAY",
        "COUPONKEEPER_REMINDER_PUSH_PER_DAY",
        "data-testid=\"no-reminders\"",
    ] {
        assert!(page.contains(s), "{s} missing: {}", page.text);
    }
    assert!(
        !page.contains("3 days before"),
        "the default plan is not shown"
    );
    let caps = &page.text[page.text.find("data-testid=\"sms-cap\"").expect("sms cap")..];
    assert!(caps.contains(">3<"), "sms cap 3");
    let caps = &page.text[page
        .text
        .find("data-testid=\"push-cap\"")
        .expect("push cap")..];
    assert!(caps.contains(">9<"), "push cap 9");
    assert_eq!(channel_count(&page, "sms"), 0);

    // Chinese by default; admins see it too.
    let mut admin = signed_in(&app, Role::Admin).await;
    let page = admin.get(PAGE).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("2 天前"), "{}", page.text);
    assert!(page.contains("提醒计划"));
}

#[tokio::test]
async fn counts_follow_the_planner_over_the_last_24_hours() {
    let app = TestApp::builder()
        .with_config(|c| {
            c.reminders.offsets = reminder::parse_offsets("3d,1d").expect("offsets");
            c.reminders.quiet_hours = None;
        })
        .start()
        .await;
    // u1: two coupons worth ¥50.00 each (sms); u2: one worth ¥10.00 (push).
    let big = app.template(json!({"value_cents": 5000})).await;
    let small = app.template(json!({"value_cents": 1000})).await;
    let big = big["id"].as_str().expect("id").to_string();
    let small = small["id"].as_str().expect("id").to_string();
    app.claim("u1", &big).await;
    app.claim("u1", &big).await;
    app.claim("u2", &small).await;

    // 3 days before the end (coupons are valid 10 days).
    app.advance(7 * DAY + 60);
    let r = app.service.plan_due_reminders(500).await.expect("planner");
    assert_eq!(r.slots, 2);
    let mut b = signed_in(&app, Role::Operator).await;
    b.accept_language = Some("en".into());
    let page = b.get(PAGE).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(channel_count(&page, "sms"), 1, "{}", page.text);
    assert_eq!(channel_count(&page, "push"), 1);
    assert_eq!(channel_count(&page, "in_app"), 0);
    assert_eq!(offset_total(&page, 3 * DAY), 2);
    assert_eq!(offset_total(&page, DAY), 0);
    assert!(page.contains("data-testid=\"recent\""));
    assert!(page.contains("¥100.00"), "u1's two coupons together");
    assert!(page.contains("¥10.00"));

    // 1 day before: the 3-day reminders fall out of the last 24 hours but
    // stay among the recent ones.
    app.advance(2 * DAY);
    let r = app.service.plan_due_reminders(500).await.expect("planner");
    assert_eq!(r.slots, 2);
    assert_eq!(slots(&app).await, 4);
    // The operator's session has lapsed meanwhile: an admin looks.
    let mut b = signed_in(&app, Role::Admin).await;
    b.accept_language = Some("en".into());
    let page = b.get(PAGE).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(offset_total(&page, 3 * DAY), 0);
    assert_eq!(offset_total(&page, DAY), 2);
    assert_eq!(channel_count(&page, "sms"), 1);
    assert_eq!(channel_count(&page, "push"), 1);
    assert_eq!(page.text.matches("<tr data-slot=").count(), 4);
    assert!(page.contains("3 days before") && page.contains("1 day before"));
}

#[tokio::test]
async fn support_gets_403_and_no_nav_link() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get(PAGE).await;
    assert_eq!(page.status, 403, "{}", page.text);
    let home = b.get("/console").await;
    assert_eq!(home.status, 200);
    assert!(!home.contains("data-testid=\"nav-reminders\""));
}

#[tokio::test]
async fn no_session_goes_to_sign_in() {
    let app = spawn_app().await;
    let mut b = Browser::new(&app);
    let r = b.get(PAGE).await;
    assert_eq!(r.status, 303);
    let to = r.location.unwrap_or_default();
    assert!(to.starts_with("/login?next="), "{to}");
}

#[tokio::test]
async fn the_page_names_each_offsets_channel_recommends_the_write_ups_and_counts_popups() {
    let app = TestApp::builder()
        .with_config(|c| {
            c.reminders.quiet_hours = None;
            c.reminders.channels =
                reminder::parse_channels("3d=in_app,30m=popup", &c.reminders.offsets)
                    .expect("channels");
        })
        .start()
        .await;
    let small = app.template(json!({"value_cents": 1000})).await;
    app.claim("u1", small["id"].as_str().expect("id")).await;
    // 30 minutes before the end (coupons are valid 10 days).
    app.advance(10 * DAY - 30 * 60 + 60);
    let r = app.service.plan_due_reminders(500).await.expect("planner");
    assert_eq!(r.slots, 1);

    let mut b = signed_in(&app, Role::Operator).await;
    b.accept_language = Some("en".into());
    let page = b.get(PAGE).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let steps = &page.text[page
        .text
        .find("data-testid=\"step-channels\"")
        .expect("the channel per offset")..];
    let steps = &steps[..steps.find("</tr>").expect("row ends")];
    for s in [
        "data-channel=\"in_app\">3 days before: In-app only<",
        "data-channel=\"push\">1 day before: Push (SMS at or above the threshold)<",
        "data-channel=\"popup\">30 minutes before: Pop-up<",
        "COUPONKEEPER_REMINDER_CHANNELS",
    ] {
        assert!(steps.contains(s), "{s} missing: {steps}");
    }
    assert!(
        !steps.contains("in_app<") && !steps.contains("popup<"),
        "names, not codes"
    );
    let recommended = &page.text[page
        .text
        .find("data-testid=\"recommended-channels\"")
        .expect("the recommendation")..];
    assert!(recommended.contains("3d=in_app,1d=push,30m=popup"));
    assert_eq!(channel_count(&page, "popup"), 1, "{}", page.text);
    assert_eq!(channel_count(&page, "push"), 0);
    let by_offset = &page.text[page.text.find("data-testid=\"by-offset\"").expect("table")..];
    assert!(by_offset.contains(">Pop-up</th>"));
    assert_eq!(
        number_after(by_offset, "data-offset=\"1800\"", "data-channel=\"popup\""),
        1
    );
    assert!(
        page.contains("data-channel=\"popup\">Pop-up</td>"),
        "the recent one"
    );

    // In Chinese, by the catalog's words.
    let mut zh = signed_in(&app, Role::Admin).await;
    let page = zh.get(PAGE).await;
    assert!(page.contains("30 分钟前：弹窗"), "{}", page.text);
    assert!(page.contains("1 天前：推送（达到短信门槛发短信）"));
}
