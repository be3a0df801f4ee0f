//! Expiry spreading and the wake-up on the real router, both stores: expiry spreading
//! (coupons end earlier by a fixed per-coupon amount, never later than
//! promised, and the pending-expirations bars spread), the activity
//! endpoint, and the wake-up before expiry (once per expiring coupon,
//! control and inactive users get nothing, the wake-up coupon's stock and
//! limit, two planners at once, the rule page's figures and roles).

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::common::console::{field_error, input_value, signed_in, visible_text};
use crate::common::fixtures::count;
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::ids::WakeupRuleId;
use couponkeeper::domain::staff::Role;
use couponkeeper::domain::template::spread_window;
use couponkeeper::domain::time::parse_rfc3339;
use couponkeeper::domain::wakeup::{WakeupRuleInput, WakeupRuleSpec, in_control};
use couponkeeper::service::support::Authority;
use couponkeeper::service::wakeup::{WakeupReport, WakeupRuleView};
use couponkeeper::service::{Ctx, ServiceError};

const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;

fn t(s: &str) -> DateTime<Utc> {
    parse_rfc3339(s).expect("a time the service wrote")
}

// ---------------------------------------------------------------- spread

#[tokio::test]
async fn a_spread_template_never_ends_a_coupon_later_than_promised_and_always_the_same() {
    let app = spawn_app().await;
    let until = app.now() + Duration::days(10);
    let tpl = app
        .template(json!({
            "valid_seconds": null,
            "valid_until": until.to_rfc3339(),
            "total_stock": 1000,
            "expiry_spread_seconds": 4 * HOUR,
        }))
        .await;
    assert_eq!(tpl["expiry_spread_seconds"], 4 * HOUR);
    let id = tpl["id"].as_str().expect("id").to_string();
    let mut ends = Vec::new();
    for i in 0..40 {
        let c = app.claim(&format!("u{i}"), &id).await;
        let starts = t(c["starts_at"].as_str().expect("starts"));
        let end = t(c["ends_at"].as_str().expect("ends"));
        assert!(end <= until, "never later than promised: {end} > {until}");
        assert!(end > until - Duration::hours(4), "within the spread: {end}");
        assert!(end > starts);
        // Deterministic: the rule recomputed from the coupon's id.
        let (_, again) = spread_window(
            (starts, until),
            app.now(),
            4 * HOUR,
            c["id"].as_str().expect("id"),
        );
        assert_eq!(end, again, "the same id ends the same");
        // And stored: a read gives the same end.
        let read = app.coupon(c["id"].as_str().expect("id")).await;
        assert_eq!(read["ends_at"], c["ends_at"]);
        ends.push(end);
    }
    ends.sort();
    ends.dedup();
    assert!(
        ends.len() > 30,
        "ends spread over the window: {} distinct",
        ends.len()
    );

    // The pending-expirations bars come from the data: four hours of them.
    let p = app
        .get(&format!(
            "/api/v1/expirations/pending?within_seconds={}",
            11 * DAY
        ))
        .await;
    assert_eq!(p.status, 200, "{}", p.text);
    assert_eq!(p.body["total"], 40);
    let buckets = p.body["buckets"].as_array().expect("buckets");
    assert!(buckets.len() >= 3, "spread over hours: {buckets:?}");
    // A coupon may end exactly at `until` (a spread offset of zero), and
    // `until` is on the hour: its bucket then starts at `until`.
    for b in buckets {
        assert!(t(b["starts_at"].as_str().expect("hour")) <= until);
    }

    // A relative template: never after claim + validity.
    let rel = app
        .template(json!({"valid_seconds": DAY, "expiry_spread_seconds": HOUR}))
        .await;
    let c = app.claim("r1", rel["id"].as_str().expect("id")).await;
    let (starts, end) = (
        t(c["starts_at"].as_str().expect("s")),
        t(c["ends_at"].as_str().expect("e")),
    );
    assert!(end <= starts + Duration::days(1) && end > starts + Duration::hours(23));
}

#[tokio::test]
async fn a_spread_must_be_shorter_than_the_validity_and_bounded() {
    let app = spawn_app().await;
    for (spread, valid) in [(DAY, DAY), (-1, DAY), (8 * DAY, 30 * DAY)] {
        let r = app
            .post(
                "/api/v1/templates",
                crate::common::merge(
                    crate::common::template_body(),
                    json!({"valid_seconds": valid, "expiry_spread_seconds": spread}),
                ),
            )
            .await;
        assert_eq!(r.status, 400, "{spread}: {}", r.text);
        assert_eq!(r.field(), "expiry_spread_seconds");
    }
    assert_eq!(
        count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM templates").await,
        0,
        "nothing created"
    );
    // Without the field: no spreading, the exact end.
    let tpl = app.template(json!({"valid_seconds": DAY})).await;
    assert_eq!(tpl["expiry_spread_seconds"], 0);
    let c = app.claim("u1", tpl["id"].as_str().expect("id")).await;
    assert_eq!(
        t(c["ends_at"].as_str().expect("e")),
        t(c["starts_at"].as_str().expect("s")) + Duration::days(1)
    );
}

#[tokio::test]
async fn the_console_form_takes_a_spread_in_minutes_and_the_page_says_it_in_words() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get("/console/templates/new").await;
    let csrf = page.csrf().expect("token");
    let fields = |spread: &'static str, csrf: &str| -> Vec<(String, String)> {
        [
            ("csrf", csrf),
            ("intent", "create"),
            ("name", "打散券"),
            ("kind", "fixed"),
            ("value", "10"),
            ("min_order", "100"),
            ("valid_days", "1"),
            ("total_stock", "100"),
            ("per_user_limit", "1"),
            ("expiry_spread_minutes", spread),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    };
    // As long as the validity: refused at the field, input kept.
    let f = fields("1440", &csrf);
    let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = b.post_form("/console/templates/new", &pairs).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        field_error(&r.text, "expiry_spread_minutes").is_some(),
        "{}",
        r.text
    );
    assert_eq!(
        input_value(&r.text, "expiry_spread_minutes").as_deref(),
        Some("1440")
    );
    let f = fields("90", &csrf);
    let pairs: Vec<(&str, &str)> = f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = b.post_form("/console/templates/new", &pairs).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let to = r.location.clone().expect("to the template's page");
    let page = b.get(&to).await;
    assert_eq!(page.status, 200);
    assert!(
        page.contains("到期时间打散：最多提前 90 分钟"),
        "{}",
        page.text
    );
}

// ---------------------------------------------------------------- activity

#[tokio::test]
async fn the_activity_endpoint_answers_204_and_refuses_a_bad_kind_or_time() {
    let app = spawn_app().await;
    let path = "/api/v1/users/u1/activity";
    let r = app
        .post(path, json!({"kind": "browse", "at": app.at(-60)}))
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
    assert!(r.text.is_empty());
    for (body, field) in [
        (json!({"kind": "buy", "at": app.at(0)}), "kind"),
        (json!({"at": app.at(0)}), "kind"),
        (json!({"kind": "cart"}), "at"),
        (json!({"kind": "cart", "at": "yesterday"}), "at"),
        (json!({"kind": "cart", "at": app.at(3600)}), "at"),
    ] {
        let r = app.post(path, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        assert_eq!((r.code(), r.field()), ("invalid_request", field), "{body}");
    }
    // A user id the API refuses elsewhere too.
    let r = app
        .post(
            "/api/v1/users/%20u1/activity",
            json!({"kind": "cart", "at": app.at(0)}),
        )
        .await;
    assert_eq!(r.status, 400);
    // The latest per kind, bounded: an older report changes nothing.
    let r = app
        .post(path, json!({"kind": "browse", "at": app.at(-7200)}))
        .await;
    assert_eq!(r.status, 204);
    let r = app
        .post(path, json!({"kind": "cart", "at": app.at(0)}))
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(
        count(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM user_activity_kinds WHERE user_id = 'u1'"
        )
        .await,
        2
    );
    let kept: i64 = sqlx::query_scalar(
        "SELECT last_at FROM user_activity_kinds WHERE user_id = 'u1' AND kind = 'browse'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("row");
    assert_eq!(kept, (app.now() - Duration::seconds(60)).timestamp_millis());
    // Idempotent replays answer 204 again, marked.
    let body = json!({"kind": "visit", "at": app.at(0)});
    let first = app.post_idem(path, "act-1", body.clone()).await;
    let again = app.post_idem(path, "act-1", body).await;
    assert_eq!((first.status, again.status), (204, 204));
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let other = app
        .post_idem(path, "act-1", json!({"kind": "cart", "at": app.at(0)}))
        .await;
    assert_eq!(other.status, 422);
}

// ---------------------------------------------------------------- wake-up

async fn rule(app: &TestApp, input: WakeupRuleInput) -> WakeupRuleView {
    let spec = WakeupRuleSpec::parse(input).expect("a well-formed rule");
    app.service
        .create_wakeup_rule_as(&Ctx::new("test", None), &Authority::Api, spec)
        .await
        .expect("rule created")
}

fn one_day_rule(control_percent: i64) -> WakeupRuleInput {
    WakeupRuleInput {
        name: Some("到期前一天唤醒".into()),
        lead_seconds: Some(DAY),
        active_within_seconds: Some(7 * DAY),
        template_ids: Vec::new(),
        bonus_template_id: None,
        control_percent: Some(control_percent),
    }
}

async fn active(app: &TestApp, user: &str) {
    let r = app
        .post(
            &format!("/api/v1/users/{user}/activity"),
            json!({"kind": "cart", "at": app.at(0)}),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text);
}

async fn plan(app: &TestApp) -> WakeupReport {
    app.service.plan_wakeups(50).await.expect("planner runs")
}

async fn wakeups_of(app: &TestApp, user: &str) -> i64 {
    count(
        app,
        &format!(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM outbox WHERE event_type = 'reminder.wakeup' AND user_id = '{user}'"
        ),
    )
    .await
}

#[tokio::test]
async fn a_wakeup_goes_out_once_per_expiring_coupon_with_the_saving_in_words() {
    let app = spawn_app().await;
    let tpl = app.template(json!({})).await; // 50.00 off, 10 days
    let tid = tpl["id"].as_str().expect("id");
    app.claim("u1", tid).await;
    app.claim("u1", tid).await;
    let r = rule(&app, one_day_rule(0)).await;
    // Day 8: nothing is within a day of its end.
    app.advance(8 * DAY);
    active(&app, "u1").await;
    assert_eq!(plan(&app).await, WakeupReport::default());
    // Day 9 and a minute: both coupons reached T-1d: one wake-up for both.
    app.advance(DAY + 60);
    let report = plan(&app).await;
    assert_eq!((report.sent, report.control, report.inactive), (1, 0, 0));
    assert_eq!(wakeups_of(&app, "u1").await, 1);
    let payload: String = sqlx::query_scalar(
        "SELECT payload FROM outbox WHERE event_type = 'reminder.wakeup' AND user_id = 'u1'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("payload");
    let p: serde_json::Value = serde_json::from_str(&payload).expect("json");
    assert_eq!(p["coupon_ids"].as_array().map(Vec::len), Some(2));
    assert_eq!(p["total_value_cents"], 10000);
    assert_eq!(p["rule_id"], r.id.as_str());
    assert_eq!(
        p["message"],
        "你有 2 张优惠券将于明天过期，共可省 100.00 元，别错过"
    );
    assert!(p["channel"] == "sms", "worth the sms threshold: {p}");
    assert_eq!(
        count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM user_messages WHERE user_id = 'u1' AND kind = 'reminder.wakeup'").await,
        1,
        "its in-app copy"
    );
    // Never twice: again later, and under a second rule naming the template.
    app.advance(HOUR);
    assert_eq!(plan(&app).await.sent, 0);
    rule(
        &app,
        WakeupRuleInput {
            template_ids: vec![tid.to_string()],
            ..one_day_rule(0)
        },
    )
    .await;
    assert_eq!(plan(&app).await, WakeupReport::default());
    assert_eq!(wakeups_of(&app, "u1").await, 1);
}

#[tokio::test]
async fn control_users_get_nothing_and_inactive_users_get_nothing() {
    let app = spawn_app().await;
    let tpl = app.template(json!({"total_stock": 1000})).await;
    let tid = tpl["id"].as_str().expect("id");
    let users: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
    for u in &users {
        app.claim(u, tid).await;
    }
    app.claim("idle", tid).await;
    app.claim("stale", tid).await;
    let r = rule(&app, one_day_rule(50)).await;
    app.advance(9 * DAY + 60);
    for u in &users {
        active(&app, u).await;
    }
    // Active, but ten days ago: outside the rule's seven.
    let old = (app.now() - Duration::days(10)).to_rfc3339();
    let s = app
        .post(
            "/api/v1/users/stale/activity",
            json!({"kind": "browse", "at": old}),
        )
        .await;
    assert_eq!(s.status, 204);
    let report = plan(&app).await;
    let control: Vec<&String> = users.iter().filter(|u| in_control(&r.id, u, 50)).collect();
    assert!(!control.is_empty() && control.len() < users.len());
    assert_eq!(report.control, control.len());
    assert_eq!(report.sent, users.len() - control.len());
    assert_eq!(report.inactive, 2);
    for u in &users {
        let expected = i64::from(!in_control(&r.id, u, 50));
        assert_eq!(wakeups_of(&app, u).await, expected, "{u}");
    }
    assert_eq!(wakeups_of(&app, "idle").await, 0);
    assert_eq!(wakeups_of(&app, "stale").await, 0);
    assert_eq!(
        count(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM wakeup_marks WHERE outcome = 'inactive'"
        )
        .await,
        2
    );
    // Decided once: a later activity does not wake them after all.
    active(&app, "idle").await;
    assert_eq!(plan(&app).await, WakeupReport::default());
}

#[tokio::test]
async fn a_customer_who_ordered_after_their_activity_is_skipped_and_the_rule_page_counts_them() {
    let app = spawn_app().await;
    let tpl = app.template(json!({"total_stock": 1000})).await;
    let tid = tpl["id"].as_str().expect("id");
    for u in ["buyer", "browser", "again"] {
        app.claim(u, tid).await;
    }
    let r = rule(&app, one_day_rule(0)).await;
    app.advance(8 * DAY);
    // `buyer`: a cart, then an order (without a coupon) an hour later.
    // `again`: an order, then browsing again an hour later.
    // `browser`: only the cart.
    active(&app, "buyer").await;
    active(&app, "browser").await;
    let order = |no: &str, user: &str| {
        json!({"order_no": no, "user_id": user, "kind": "normal",
            "category": "phones", "total_cents": 39900})
    };
    let o = app.order(order("W-AGAIN", "again")).await;
    assert_eq!(o.status, 201, "{}", o.text);
    app.advance(HOUR);
    let o = app.order(order("W-BUYER", "buyer")).await;
    assert_eq!(o.status, 201, "{}", o.text);
    active(&app, "again").await;
    // T-1d: the buyer is skipped; the two others are woken.
    app.advance(DAY - HOUR + 60);
    let report = plan(&app).await;
    assert_eq!(
        (report.sent, report.control, report.inactive, report.ordered),
        (2, 0, 0, 1),
        "{report:?}"
    );
    assert_eq!(wakeups_of(&app, "buyer").await, 0);
    assert_eq!(wakeups_of(&app, "browser").await, 1);
    assert_eq!(
        wakeups_of(&app, "again").await,
        1,
        "the activity came after the order"
    );
    assert_eq!(
        count(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM wakeup_marks WHERE outcome = 'ordered' AND user_id = 'buyer'"
        )
        .await,
        1
    );
    // Decided once: nothing more later.
    app.advance(HOUR);
    assert_eq!(plan(&app).await, WakeupReport::default());

    // The service's figures and the rule page count the skip.
    let figures = app
        .service
        .wakeup_rule_as(&Authority::Api, &r.id)
        .await
        .expect("the rule");
    assert_eq!((figures.ordered.users, figures.ordered.coupons), (1, 1));
    assert_eq!(figures.sent.users, 2);
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get(&format!("/console/wakeup/{}", r.id)).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let row = page
        .text
        .split("data-outcome=\"ordered\"")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("a row for the skipped customers");
    let row = visible_text(row);
    assert!(row.contains("之后已下单"), "{row}");
    assert!(row.contains(" 1 "), "one customer skipped: {row}");
}

#[tokio::test]
async fn the_wakeup_coupon_respects_its_stock_and_per_user_limit() {
    let app = spawn_app().await;
    let expiring = app.template(json!({"total_stock": 1000})).await;
    let eid = expiring["id"].as_str().expect("id");
    let bonus = app
        .template(json!({
            "name": "满50减10",
            "value_cents": 1000,
            "min_order_cents": 5000,
            "total_stock": 2,
            "per_user_limit": 1,
        }))
        .await;
    let bid = bonus["id"].as_str().expect("id");
    // w0 already holds the wake-up template's coupon: its limit is reached.
    app.claim("w0", bid).await;
    for u in ["w0", "w1", "w2", "w3"] {
        app.claim(u, eid).await;
    }
    rule(
        &app,
        WakeupRuleInput {
            bonus_template_id: Some(bid.to_string()),
            ..one_day_rule(0)
        },
    )
    .await;
    app.advance(9 * DAY + 60);
    for u in ["w0", "w1", "w2", "w3"] {
        active(&app, u).await;
    }
    let report = plan(&app).await;
    assert_eq!(report.sent, 4, "every active user is woken: {report:?}");
    // One left in stock after w0's own claim: one wake-up coupon; w0's
    // limit and then the stock refuse the others, who are woken without.
    assert_eq!(report.bonus_coupons, 1, "{report:?}");
    assert_eq!(report.bonus_refused, 3, "{report:?}");
    let b = app.get(&format!("/api/v1/templates/{bid}")).await;
    assert_eq!(b.body["claimed"], 2, "never more than the stock");
    assert_eq!(
        count(
            &app,
            &format!("SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = '{bid}'")
        )
        .await,
        2
    );
    assert_eq!(
        count(&app, &format!("SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = '{bid}' AND user_id = 'w0'")).await,
        1,
        "the per-user limit held"
    );
    let with: String = sqlx::query_scalar(
        "SELECT payload FROM outbox WHERE event_type = 'reminder.wakeup' AND payload LIKE '%另送你一张%'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("one wake-up names its coupon");
    assert!(with.contains("¥10.00 的券，满 ¥50.00 可用"), "{with}");
}

#[tokio::test]
async fn two_planners_at_once_wake_each_coupon_once() {
    let app = spawn_app().await;
    let tpl = app.template(json!({"total_stock": 1000})).await;
    let tid = tpl["id"].as_str().expect("id");
    for i in 0..20 {
        app.claim(&format!("p{i}"), tid).await;
    }
    rule(&app, one_day_rule(0)).await;
    app.advance(9 * DAY + 60);
    for i in 0..20 {
        active(&app, &format!("p{i}")).await;
    }
    let (a, b) = tokio::join!(app.service.plan_wakeups(7), app.service.plan_wakeups(7));
    let (a, b) = (a.expect("a"), b.expect("b"));
    assert_eq!(a.sent + b.sent, 20, "{a:?} {b:?}");
    assert_eq!(
        count(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM outbox WHERE event_type = 'reminder.wakeup'"
        )
        .await,
        20
    );
    assert_eq!(
        count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM wakeup_marks").await,
        20
    );
}

#[tokio::test]
async fn the_rule_page_shows_woken_against_control_and_is_for_operators() {
    let app = spawn_app().await;
    let tpl = app.template(json!({"total_stock": 1000})).await;
    let tid = tpl["id"].as_str().expect("id").to_string();

    // Support: no page, no form, no post; the service refuses too.
    {
        let mut b = signed_in(&app, Role::Support).await;
        assert_eq!(b.get("/console/wakeup").await.status, 403);
        let csrf = b.csrf().await;
        let r = b
            .post_form(
                "/console/wakeup",
                &[
                    ("csrf", &csrf),
                    ("name", "x"),
                    ("lead_hours", "24"),
                    ("active_days", "7"),
                ],
            )
            .await;
        assert_eq!(r.status, 403);
        let home = b.get("/console").await;
        assert!(!home.contains("nav-wakeup"));
    }
    let support = Authority::Staff {
        name: couponkeeper::domain::staff::StaffName::parse("support-1").expect("name"),
        role: Role::Support,
    };
    assert!(matches!(
        app.service
            .create_wakeup_rule_as(
                &Ctx::new("staff:support-1", None),
                &support,
                WakeupRuleSpec::parse(one_day_rule(10)).expect("a well-formed rule")
            )
            .await,
        Err(ServiceError::Forbidden(_))
    ));
    assert!(matches!(
        app.service.wakeup_rules_as(&support).await,
        Err(ServiceError::Forbidden(_))
    ));

    // An operator: a refused form keeps the input, then a rule is created.
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get("/console/wakeup").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let csrf = page.csrf().expect("token");
    let r = b
        .post_form(
            "/console/wakeup",
            &[
                ("csrf", &csrf),
                ("name", "到期前一天"),
                ("lead_hours", "abc"),
                ("active_days", "7"),
                ("control_percent", "50"),
            ],
        )
        .await;
    assert_eq!(r.status, 422);
    assert!(field_error(&r.text, "lead_hours").is_some());
    assert_eq!(input_value(&r.text, "name").as_deref(), Some("到期前一天"));
    let r = b
        .post_form(
            "/console/wakeup",
            &[
                ("csrf", &csrf),
                ("name", "到期前一天"),
                ("lead_hours", "24"),
                ("active_days", "7"),
                ("template_ids", &tid),
                ("control_percent", "50"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let to = r.location.clone().expect("to the rule");
    let rule_id = WakeupRuleId::from_wire(to.rsplit('/').next().expect("id"));
    let audit = count(
        &app,
        &format!("SELECT CAST(COUNT(*) AS BIGINT) FROM staff_audit WHERE action = 'wakeup_rule_create' AND target = '{rule_id}'"),
    )
    .await;
    assert_eq!(audit, 1, "audited");

    // Thirty holders, all active; the woken ones and the control ones each
    // use one coupon before its end.
    let mut coupons = Vec::new();
    for i in 0..30 {
        let u = format!("g{i}");
        coupons.push((
            u.clone(),
            app.claim(&u, &tid).await["id"]
                .as_str()
                .expect("id")
                .to_string(),
        ));
    }
    app.advance(9 * DAY + 60);
    for (u, _) in &coupons {
        active(&app, u).await;
    }
    let report = plan(&app).await;
    assert!(report.sent > 0 && report.control > 0, "{report:?}");
    let woken = coupons
        .iter()
        .find(|(u, _)| !in_control(&rule_id, u, 50))
        .expect("one woken");
    let control = coupons
        .iter()
        .find(|(u, _)| in_control(&rule_id, u, 50))
        .expect("one control");
    for (i, (u, c)) in [woken, control].into_iter().enumerate() {
        let no = format!("WK{i}");
        let o = app
            .order(crate::common::normal_order(&no, u, Some(c), 40000))
            .await;
        assert_eq!(o.status, 201, "{}", o.text);
        let p = app
            .post(&format!("/api/v1/orders/{no}/pay"), json!({}))
            .await;
        assert_eq!(p.status, 200, "{}", p.text);
    }
    let rep = app
        .service
        .wakeup_rule_as(&Authority::Api, &rule_id)
        .await
        .expect("report");
    assert_eq!((rep.sent.used, rep.control.used), (1, 1));
    assert_eq!(rep.sent.users as usize, report.sent);
    assert_eq!(rep.control.users as usize, report.control);
    // Nine days on, the operator signs in again.
    let mut b = crate::common::console::Browser::new(&app);
    let r = b
        .sign_in_as("operator-1", crate::common::console::PASSWORD)
        .await;
    assert_eq!(r.status, 303);
    let csrf = b.csrf().await;
    let page = b.get(&to).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("data-outcome=\"sent\""));
    assert!(page.contains("唤醒组核销率"), "{}", page.text);
    assert!(
        !visible_text(&page.text).contains(rule_id.as_str()),
        "no raw id on the page"
    );
    // Pause needs a reason; then the planner leaves the rule alone.
    let r = b
        .post_form(&format!("{to}/pause"), &[("csrf", &csrf), ("reason", "")])
        .await;
    assert_eq!(r.status, 422);
    let r = b
        .post_form(
            &format!("{to}/pause"),
            &[("csrf", &csrf), ("reason", "活动结束")],
        )
        .await;
    assert_eq!(r.status, 303);
    let paused = app
        .service
        .wakeup_rule_as(&Authority::Api, &rule_id)
        .await
        .expect("rule");
    assert!(!paused.rule.active);
}
