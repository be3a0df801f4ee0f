//! After refunds by line: what the reports, the compensation ledger,
//! reconciliation and support make of them. The refunded discount counted
//! by day, the final payment's compensation reversed when its order is
//! refunded in full, the cart anomalies reconciliation finds, and the
//! return of a coupon a refund left `used`.

use crate::carts::{paid_beauty_order, refund};
use crate::common::fixtures::{deposit_paid_under, plant};
use crate::common::{TestApp, spawn_app};
use serde_json::{Value, json};

async fn template_of(app: &TestApp, coupon_id: &str) -> String {
    app.coupon(coupon_id).await["template_id"]
        .as_str()
        .expect("the coupon's template")
        .to_string()
}

async fn anomalies(app: &TestApp) -> Vec<Value> {
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body["anomalies"].as_array().cloned().unwrap_or_default()
}

fn of_kind<'a>(all: &'a [Value], kind: &str) -> Vec<&'a Value> {
    all.iter().filter(|a| a["kind"] == kind).collect()
}

#[tokio::test]
async fn the_template_report_counts_the_discount_of_refunded_items_on_the_day_of_each_refund() {
    let app = spawn_app().await;
    // 满300减50 on the beauty lines a (2 × ¥100, share 2857) and b (¥150,
    // share 2143).
    let cid = paid_beauty_order(&app, "proportional").await;
    let tid = template_of(&app, &cid).await;
    let r = app
        .post("/api/v1/orders/N1/refunds", refund("r1", &[("a", 1)]))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["coupons"][0]["discount_cents"], 1428, "{}", r.text);
    let report = app.get(&format!("/api/v1/templates/{tid}/report")).await;
    assert_eq!(report.status, 200, "{}", report.text);
    let totals = &report.body["totals"];
    assert_eq!(totals["refunded_discount_cents"], 1428, "{totals}");
    assert_eq!(totals["discount_cents"], 5000, "the coupon stays used");
    let days = report.body["days"].as_array().cloned().unwrap_or_default();
    let today = days.last().expect("today");
    assert_eq!(today["refunded_discount_cents"], 1428);

    // The next day the rest of what it discounted: the coupon comes back.
    app.advance(86_400);
    let r = app
        .post(
            "/api/v1/orders/N1/refunds",
            refund("r2", &[("a", 1), ("b", 1)]),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["coupons"][0]["outcome"], "returned");
    assert_eq!(r.body["coupons"][0]["discount_cents"], 1429 + 2143);
    let report = app.get(&format!("/api/v1/templates/{tid}/report")).await;
    let totals = &report.body["totals"];
    assert_eq!(totals["refunded_discount_cents"], 5000, "{totals}");
    assert_eq!(totals["returned"], 1);
    assert_eq!(totals["discount_cents"], 0);
    let days = report.body["days"].as_array().cloned().unwrap_or_default();
    let per_day: Vec<i64> = days
        .iter()
        .rev()
        .take(2)
        .filter_map(|d| d["refunded_discount_cents"].as_i64())
        .collect();
    assert_eq!(per_day, vec![3572, 1428], "newest first");
}

/// A presale order `no` of `user` paid in full under `swap_or_compensate`
/// with its coupon expired and nothing to swap: ¥50 deducted from the final
/// payment.
async fn compensated(app: &TestApp, no: &str, user: &str) {
    deposit_paid_under(app, no, user, "swap_or_compensate", 10).await;
    app.advance(60);
    let r = app
        .post(&format!("/api/v1/orders/{no}/final-payment"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["compensation_cents"], 5000, "{}", r.text);
}

async fn ledger_of(app: &TestApp, no: &str) -> Value {
    let r = app
        .get(&format!("/api/v1/compensation-ledger?order_no={no}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

#[tokio::test]
async fn refunding_a_compensated_order_in_full_reverses_its_compensation_once() {
    let app = spawn_app().await;
    compensated(&app, "P1", "u1").await;
    let r = app
        .post("/api/v1/orders/P1/refund", json!({"reason": "不想要了"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let ledger = ledger_of(&app, "P1").await;
    let kinds: Vec<(String, i64)> = ledger["entries"]
        .as_array()
        .map(|es| {
            es.iter()
                .map(|e| {
                    (
                        e["kind"].as_str().unwrap_or("").to_string(),
                        e["value_cents"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        kinds,
        vec![
            ("refund_reversal".to_string(), -5000),
            ("final_payment_deduction".to_string(), 5000)
        ],
        "newest first"
    );
    assert_eq!(ledger["totals"], json!({"count": 2, "value_cents": 0}));
    // The campaign's report nets it out.
    let campaign = app.order_view("P1").await["campaign_id"].clone();
    let report = app
        .get(&format!(
            "/api/v1/presale-campaigns/{}/report",
            campaign.as_str().unwrap_or_default()
        ))
        .await;
    assert_eq!(report.status, 200, "{}", report.text);
    assert_eq!(report.body["totals"]["compensation_cents"], 0);
    // A refund cannot come twice, nor can a reversal.
    let again = app
        .post("/api/v1/orders/P1/refund", json!({"reason": "again"}))
        .await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_eq!(ledger_of(&app, "P1").await["totals"]["count"], 2);
}

#[tokio::test]
async fn the_last_refund_by_line_of_a_compensated_order_reverses_its_compensation_and_a_partial_one_does_not()
 {
    let app = spawn_app().await;
    compensated(&app, "P1", "u1").await;
    // The single-category order is one line "1" of one unit.
    let r = app
        .post("/api/v1/orders/P1/refunds", refund("r1", &[("1", 1)]))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(app.order_view("P1").await["status"], "refunded");
    let ledger = ledger_of(&app, "P1").await;
    assert_eq!(ledger["totals"], json!({"count": 2, "value_cents": 0}));
    assert_eq!(ledger["entries"][0]["kind"], "refund_reversal");
    assert!(
        ledger["entries"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("refunded in full")),
        "{ledger}"
    );
}

#[tokio::test]
async fn support_returns_a_coupon_its_refunds_left_used_and_reconciliation_finds_it_first() {
    let app = spawn_app().await;
    let cid = paid_beauty_order(&app, "proportional").await;
    let r = app
        .post("/api/v1/orders/N1/refunds", refund("r1", &[("a", 1)]))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Still used for the units kept: no finding, no action.
    assert!(of_kind(&anomalies(&app).await, "coupon_not_returned_after_refunds").is_empty());
    let body = json!({"coupon_id": cid, "reason": "工单 123"});
    let early = app
        .post("/api/v1/orders/N1/return-coupon", body.clone())
        .await;
    assert_eq!(early.status, 409, "{}", early.text);
    assert_eq!(early.code(), "repair_not_applicable", "{}", early.text);

    // Every unit it discounted refunded, the coupon still used: what a
    // refund that lost its coupon's return would leave.
    plant(
        &app,
        "UPDATE order_lines SET refunded_quantity = quantity WHERE order_no = 'N1' AND line_id IN ('a', 'b')",
    )
    .await;
    let all = anomalies(&app).await;
    let found = of_kind(&all, "coupon_not_returned_after_refunds");
    assert_eq!(found.len(), 1, "{all:?}");
    assert_eq!(found[0]["suggested_action"], "return_coupon");
    assert_eq!(found[0]["coupon_id"].as_str(), Some(cid.as_str()));
    let health = app.get("/api/v1/orders/N1/health-check").await;
    let check = health.body["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "coupon_status").cloned())
        .expect("a coupon_status check");
    assert_eq!(check["suggested_action"], "return_coupon", "{check}");
    assert_eq!(check["action"]["coupon_id"].as_str(), Some(cid.as_str()));

    // Refused without a reason, changing nothing.
    let bare = app
        .post("/api/v1/orders/N1/return-coupon", json!({"coupon_id": cid}))
        .await;
    assert_eq!(bare.status, 400, "{}", bare.text);
    assert_eq!(app.coupon(&cid).await["status"], "used");

    let r = app
        .post("/api/v1/orders/N1/return-coupon", body.clone())
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_lock_status"], "released", "{}", r.text);
    let c = app.coupon(&cid).await;
    assert_eq!(
        (c["status"].as_str(), c["order_no"].as_str()),
        (Some("available"), None)
    );
    let events: Vec<String> = app.order_view("N1").await["events"]
        .as_array()
        .map(|es| {
            es.iter()
                .filter_map(|e| e["action"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    assert!(events.contains(&"return_coupon".to_string()), "{events:?}");
    // Once.
    let twice = app.post("/api/v1/orders/N1/return-coupon", body).await;
    assert_eq!(twice.status, 409, "{}", twice.text);
    assert!(of_kind(&anomalies(&app).await, "coupon_not_returned_after_refunds").is_empty());
}

#[tokio::test]
async fn reconciliation_finds_a_split_that_does_not_add_up_and_a_line_refunded_beyond_its_payable()
{
    let app = spawn_app().await;
    let cid = paid_beauty_order(&app, "proportional").await;
    let r = app
        .post("/api/v1/orders/N1/refunds", refund("r1", &[("c", 1)]))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let clean = anomalies(&app).await;
    assert!(clean.is_empty(), "{clean:?}");

    plant(
        &app,
        "UPDATE order_line_discounts SET cents = cents + 1 WHERE order_no = 'N1' AND line_no = 0",
    )
    .await;
    plant(
        &app,
        "UPDATE order_lines SET refunded_cents = refunded_cents + 1 WHERE order_no = 'N1' AND line_id = 'c'",
    )
    .await;
    let all = anomalies(&app).await;
    let split = of_kind(&all, "split_mismatch");
    assert_eq!(split.len(), 1, "{all:?}");
    assert_eq!(split[0]["coupon_id"].as_str(), Some(cid.as_str()));
    assert_eq!(split[0]["suggested_action"], Value::Null);
    assert!(
        split[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("5001")),
        "{}",
        split[0]
    );
    let over = of_kind(&all, "refund_over_payable");
    assert_eq!(over.len(), 1, "{all:?}");
    assert!(
        over[0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("line c") && d.contains("8001")),
        "{}",
        over[0]
    );
    assert!(
        over[0]["detail_zh"]
            .as_str()
            .is_some_and(|d| d.contains("超过")),
        "{}",
        over[0]
    );
}

#[tokio::test]
async fn a_forced_release_takes_the_coupon_s_split_off_the_order_s_lines() {
    let app = spawn_app().await;
    let t = app.template(json!({"categories": ["beauty"]})).await;
    let cid = app
        .claim("u1", t["id"].as_str().expect("template id"))
        .await["id"]
        .as_str()
        .expect("coupon id")
        .to_string();
    let r = app
        .order(
            json!({"order_no": "N1", "user_id": "u1", "kind": "normal", "coupon_id": cid,
            "lines": [{"line_id": "a", "sku": null, "category": "beauty", "shop_id": null,
                       "quantity": 2, "unit_price_cents": 20000}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["lines"][0]["payable_cents"], 35000);
    let r = app
        .post(
            &format!("/api/v1/coupons/{cid}/release"),
            json!({"reason": "客户要求换券", "force": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let o = app.order_view("N1").await;
    assert_eq!(o["coupon_id"], Value::Null);
    assert_eq!(o["lines"][0]["discounts"], json!([]), "{o}");
    assert_eq!(o["lines"][0]["payable_cents"], 40000);
    assert!(anomalies(&app).await.is_empty());
}
