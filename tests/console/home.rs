//! The console's home page is a work queue: open findings of the last
//! reconciliation by kind, presale orders whose coupon dies before the
//! final payment, checkout locks lapsing within the hour, coupons ending
//! today, the compensation a support agent gave today against the cap,
//! and their last actions; each line a link to the page that lists it.

use crate::common::console::{confirm, signed_in};
use crate::common::fixtures::{deposit_paid_under, plant};
use crate::common::{normal_order, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::json;

/// The `data-count` of the queue line `testid`.
fn count_of(html: &str, testid: &str) -> Option<i64> {
    let marker = format!("data-testid=\"{testid}\" data-count=\"");
    let rest = html.split_once(&marker)?.1;
    rest.split('"').next()?.parse().ok()
}

#[tokio::test]
async fn a_quiet_shop_shows_an_empty_queue_with_what_to_do_next() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console").await;
    assert_eq!(page.status, 200);
    assert!(
        page.contains("data-testid=\"queue-no-run\""),
        "{}",
        page.text
    );
    for line in [
        "queue-support-requests",
        "queue-at-risk",
        "queue-lapsing",
        "queue-expiring-today",
    ] {
        assert_eq!(count_of(&page.text, line), Some(0), "{line}");
    }
    assert!(page.contains("data-testid=\"my-actions-empty\""));
    assert!(page.contains("今天已发补偿 ¥0.00，每日上限"));
}

#[tokio::test]
async fn each_line_counts_what_needs_a_person_and_links_to_its_list() {
    let app = spawn_app().await;
    // A strict presale order whose coupon (30 s) dies before its window
    // opens (in 60 s); the same under `lock` is not at risk.
    deposit_paid_under(&app, "P-RISK", "u1", "strict", 30).await;
    deposit_paid_under(&app, "P-LOCK", "u2", "lock", 30).await;
    // A normal order holding a checkout lock (15 minutes).
    let t = app.template(json!({"min_order_cents": 0})).await;
    let c = app.claim("u3", t["id"].as_str().unwrap_or_default()).await;
    let r = app
        .order(normal_order("N-LAPSE", "u3", c["id"].as_str(), 10_000))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // A closed order whose coupon stays locked: a reconciliation finding.
    plant(
        &app,
        "UPDATE orders SET status = 'closed' WHERE order_no = 'P-LOCK'",
    )
    .await;

    let mut op = signed_in(&app, Role::Operator).await;
    let csrf = op.csrf().await;
    let r = op
        .post_form("/console/reconciliation/run", &[("csrf", &csrf)])
        .await;
    assert_eq!(r.status, 303);

    let mut b = signed_in(&app, Role::Support).await;
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[("amount", "20"), ("valid_days", "30"), ("reason", "delay")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);

    let page = b.get("/console").await;
    let html = &page.text;
    assert_eq!(count_of(html, "queue-at-risk"), Some(1), "{html}");
    assert_eq!(count_of(html, "queue-lapsing"), Some(1));
    // The two 30-second coupons of the presale orders are locked, not
    // available; the checkout coupon is locked too; the compensation coupon
    // lives 30 days: nothing available ends today.
    assert_eq!(count_of(html, "queue-expiring-today"), Some(0));
    assert_eq!(count_of(html, "queue-findings"), Some(1), "{html}");
    assert!(html.contains("href=\"/console/reconciliation#kind-locked_coupon_order_closed\""));
    assert!(html.contains("data-given=\"2000\""));
    assert!(html.contains("今天已发补偿 ¥20.00"));
    assert!(html.contains("data-testid=\"my-actions\""));
    assert!(
        html.contains("补偿发券"),
        "the compensation is among my actions"
    );

    let list = b.get("/console/queue/at-risk").await;
    assert_eq!(list.status, 200);
    assert!(
        list.contains("P-RISK") && !list.contains("P-LOCK"),
        "{}",
        list.text
    );
    assert!(list.contains("双11预售"));
    let list = b.get("/console/queue/lapsing").await;
    assert!(list.contains("N-LAPSE"));

    // A coupon ending later today counts; once its hour has passed the
    // lapsing lock is gone from the queue.
    let short = app
        .template(json!({"valid_seconds": 3600, "min_order_cents": 0}))
        .await;
    app.claim("u4", short["id"].as_str().unwrap_or_default())
        .await;
    app.advance(16 * 60);
    let page = b.get("/console").await;
    assert_eq!(count_of(&page.text, "queue-expiring-today"), Some(1));
    assert_eq!(count_of(&page.text, "queue-lapsing"), Some(0));
}

#[tokio::test]
async fn operators_have_no_daily_cap_line() {
    let app = spawn_app().await;
    let mut op = signed_in(&app, Role::Operator).await;
    let page = op.get("/console").await;
    assert!(!page.contains("data-testid=\"queue-compensation\""));
}

/// An instance whose own clock (here the injected one; under `serve` the
/// machine's, while decisions follow the database's clock) is off the
/// database's by more than a second says so on the home page, and
/// `/metrics` carries the difference either way.
#[tokio::test]
async fn a_server_clock_off_the_database_by_more_than_a_second_is_shown_to_staff() {
    let app = spawn_app().await;
    // In step with the database: no warning.
    app.clock.set(chrono::Utc::now());
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console").await;
    assert_eq!(page.status, 200);
    assert!(
        !page.contains("data-testid=\"clock-skew\""),
        "{}",
        page.text
    );
    // A minute ahead (more would end the console session).
    app.clock
        .set(chrono::Utc::now() + chrono::Duration::minutes(1));
    let page = b.get("/console").await;
    assert!(page.contains("data-testid=\"clock-skew\""), "{}", page.text);
    // About 60 s: the database's clock moves on between the set and the
    // read (59.9 was seen at load average 11).
    let shown: f64 = page
        .text
        .split_once("本服务器的时钟与数据库相差 ")
        .and_then(|(_, rest)| rest.split_once(' '))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no skew figure in {}", page.text));
    assert!((58.0..=61.0).contains(&shown), "{shown}: {}", page.text);
    let metrics = app.get("/metrics").await;
    let skew: f64 = metrics
        .text
        .lines()
        .find_map(|l| l.strip_prefix("couponkeeper_clock_skew_seconds "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no clock gauge in {}", metrics.text));
    assert!((59.0..61.0).contains(&skew), "{skew}");
}

#[tokio::test]
async fn a_finding_fixed_from_the_order_page_leaves_the_queue_at_once_as_on_the_reconciliation_page()
 {
    let app = spawn_app().await;
    let cid = deposit_paid_under(&app, "P-STUCK", "u1", "lock", 10 * 24 * 3600).await;
    plant(
        &app,
        "UPDATE orders SET status = 'closed' WHERE order_no = 'P-STUCK'",
    )
    .await;
    let mut op = signed_in(&app, Role::Operator).await;
    let csrf = op.csrf().await;
    let r = op
        .post_form("/console/reconciliation/run", &[("csrf", &csrf)])
        .await;
    assert_eq!(r.status, 303);
    let home = op.get("/console").await;
    assert_eq!(
        count_of(&home.text, "queue-findings"),
        Some(1),
        "{}",
        home.text
    );

    // Fixed from the coupon page (the health check's release), not from
    // the reconciliation page, and no new run.
    let r = confirm(
        &mut op,
        &format!("/console/coupons/{cid}/release"),
        &[("reason", "order closed")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let home = op.get("/console").await;
    assert_eq!(
        count_of(&home.text, "queue-findings"),
        None,
        "{}",
        home.text
    );
    assert!(
        home.contains("data-testid=\"queue-findings-none\""),
        "{}",
        home.text
    );
    let page = op.get("/console/reconciliation").await;
    let row = page
        .text
        .split("data-kind=\"locked_coupon_order_closed\"")
        .nth(1)
        .unwrap_or_default();
    assert!(
        row.contains("data-testid=\"open-count\" class=\"money\">0<"),
        "the page agrees: {}",
        page.text
    );
}
