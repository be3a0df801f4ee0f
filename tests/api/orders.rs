//! Normal and presale orders over HTTP: checkout lock, pay, deposit, the
//! final payment under each campaign policy, cancel and refund.

use crate::common::fixtures::{deposit_paid_under, user_with_coupon};
use crate::common::{TestApp, normal_order, presale_order, spawn_app};
use serde_json::{Value, json};

/// User u1's coupon (valid `coupon_seconds`) on presale order P1 of a
/// `policy` campaign whose window opens in 60 s for an hour, deposit paid.
/// Returns the coupon id.
async fn deposit_paid(app: &TestApp, policy: &str, coupon_seconds: i64) -> String {
    deposit_paid_under(app, "P1", "u1", policy, coupon_seconds).await
}

async fn stored_coupon_status(app: &TestApp, id: &str) -> String {
    sqlx::query_scalar("SELECT status FROM coupons WHERE id = $1")
        .bind(id)
        .fetch_one(app.db.db.pool())
        .await
        .expect("coupon row")
}

fn actions(v: &Value) -> Vec<String> {
    v["events"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    format!(
                        "{}:{}",
                        e["subject"].as_str().unwrap_or(""),
                        e["action"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_normal_order_checkout_locks_its_coupon_and_payment_uses_it() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 3600).await;
    let r = app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["status"], "pending_payment");
    assert_eq!(r.body["coupon_lock_status"], "locked");
    assert_eq!(r.body["coupon_discount_cents"], 5000);
    assert_eq!(r.body["amount_due_cents"], 34900);
    assert_eq!(
        r.body["checkout_lock_expires_at"],
        "2026-11-11T00:15:00.000Z"
    );
    let c = app.coupon(&cid).await;
    assert_eq!(
        (c["status"].as_str(), c["order_no"].as_str()),
        (Some("locked"), Some("N1"))
    );
    assert!(c["locked_at"].is_string());
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "paid");
    assert_eq!(r.body["coupon_lock_status"], "used");
    assert_eq!(r.body["amount_due_cents"], 0);
    assert_eq!(app.coupon(&cid).await["status"], "used");
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "invalid_order_status"));
}

#[tokio::test]
async fn an_order_without_a_coupon_is_paid_in_full() {
    let app = spawn_app().await;
    let r = app.order(normal_order("N1", "u1", None, 1234)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        (
            r.body["amount_due_cents"].as_i64(),
            r.body["coupon_lock_status"].as_str()
        ),
        (Some(1234), Some("none"))
    );
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.body["status"], "paid");
}

#[tokio::test]
async fn coupon_validation_refuses_with_the_specific_code_and_writes_nothing() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"categories": ["phones"], "valid_seconds": 100}))
        .await;
    let tid = t["id"].as_str().expect("id");
    let mine = app.claim("u1", tid).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    let r = app
        .order(normal_order("N1", "u2", Some(&mine), 39900))
        .await;
    assert_eq!((r.status, r.code()), (409, "coupon_not_owned"));
    let r = app
        .order(normal_order("N1", "u1", Some(&mine), 29999))
        .await;
    assert_eq!((r.status, r.code()), (409, "threshold_not_met"));
    let mut food = normal_order("N1", "u1", Some(&mine), 39900);
    food["category"] = json!("food");
    let r = app.order(food).await;
    assert_eq!((r.status, r.code()), (409, "coupon_not_applicable"));
    let r = app
        .order(normal_order("N1", "u1", Some("cpn_missing"), 39900))
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app
        .order(normal_order("N1", "u1", Some(&mine), 39900))
        .await;
    assert_eq!(r.status, 201);
    let r = app
        .order(normal_order("N2", "u1", Some(&mine), 39900))
        .await;
    assert_eq!((r.status, r.code()), (409, "coupon_not_available"));
    let r = app.order(normal_order("N1", "u1", None, 100)).await;
    assert_eq!((r.status, r.code()), (409, "order_exists"));
    let other = app.claim("u1", tid).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    app.advance(100);
    let r = app
        .order(normal_order("N3", "u1", Some(&other), 39900))
        .await;
    assert_eq!((r.status, r.code()), (409, "coupon_expired"));
    let orders: i64 = sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM orders")
        .fetch_one(app.db.db.pool())
        .await
        .expect("count");
    assert_eq!(orders, 1, "only N1 was written");
}

#[tokio::test]
async fn bad_order_bodies_name_the_field() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({"user_id": "u1", "kind": "normal", "total_cents": 1}),
            "order_no",
        ),
        (
            json!({"order_no": "N1", "kind": "normal", "total_cents": 1}),
            "user_id",
        ),
        (
            json!({"order_no": "N1", "user_id": "u1", "kind": "gift", "total_cents": 1}),
            "kind",
        ),
        (
            json!({"order_no": "N1", "user_id": "u1", "kind": "normal", "total_cents": -5}),
            "total_cents",
        ),
        (
            json!({"order_no": "N1", "user_id": "u1", "kind": "normal", "total_cents": "5"}),
            "total_cents",
        ),
        (
            json!({"order_no": "N1", "user_id": "u1", "kind": "normal", "total_cents": 5, "campaign_id": "c"}),
            "campaign_id",
        ),
        (
            json!({"order_no": "N1", "user_id": "u1", "kind": "presale", "total_cents": 5, "deposit_cents": 1}),
            "campaign_id",
        ),
        (
            json!({"order_no": "N1", "user_id": "u1", "kind": "presale", "total_cents": 5, "campaign_id": "c"}),
            "deposit_cents",
        ),
        (
            json!({"order_no": "N1", "user_id": "u1", "kind": "presale", "total_cents": 5, "campaign_id": "c", "deposit_cents": 6}),
            "deposit_cents",
        ),
        (
            json!({"order_no": "N 1", "user_id": "u1", "kind": "normal", "total_cents": 5}),
            "order_no",
        ),
    ];
    for (body, field) in cases {
        let r = app.order(body.clone()).await;
        assert_eq!((r.status, r.field()), (400, field), "{body}: {}", r.text);
    }
}

#[tokio::test]
async fn paying_after_the_checkout_lock_lapsed_is_refused() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 86400).await;
    app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    app.advance(900);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "checkout_lock_expired"));
    assert_eq!(app.order_view("N1").await["status"], "pending_payment");
}

#[tokio::test]
async fn cancelling_releases_the_coupon_while_valid_and_expires_it_after_its_end() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 100).await;
    app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    let r = app.post("/api/v1/orders/N1/cancel", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (
            r.body["status"].as_str(),
            r.body["coupon_lock_status"].as_str()
        ),
        (Some("closed"), Some("released"))
    );
    let c = app.coupon(&cid).await;
    assert_eq!(
        (c["status"].as_str(), c["order_no"].as_str()),
        (Some("available"), None)
    );

    app.order(normal_order("N2", "u1", Some(&cid), 39900)).await;
    app.advance(100);
    let r = app.post("/api/v1/orders/N2/cancel", json!({})).await;
    assert_eq!(r.status, 200);
    assert_eq!(stored_coupon_status(&app, &cid).await, "expired");
    let r = app.post("/api/v1/orders/N2/cancel", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "invalid_order_status"));
}

#[tokio::test]
async fn refunding_a_paid_order_returns_its_coupon_by_the_same_rule() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 100).await;
    app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    app.post("/api/v1/orders/N1/pay", json!({})).await;
    let r = app.post("/api/v1/orders/N1/refund", json!({})).await;
    assert_eq!((r.status, r.field()), (400, "reason"));
    let r = app
        .post("/api/v1/orders/N1/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "refunded");
    assert!(r.body["refunded_at"].is_string());
    assert_eq!(app.coupon(&cid).await["status"], "available");

    app.order(normal_order("N2", "u1", Some(&cid), 39900)).await;
    app.post("/api/v1/orders/N2/pay", json!({})).await;
    app.advance(100);
    app.post("/api/v1/orders/N2/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(stored_coupon_status(&app, &cid).await, "expired");
    let events = app.coupon(&cid).await["events"].as_array().map(Vec::len);
    assert_eq!(
        events,
        Some(7),
        "claim, lock, use, refund, lock, use, refund"
    );
}

#[tokio::test]
async fn the_presale_story_keeps_the_discount_under_the_lock_policy() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 10).await;
    let campaign = app.campaign("lock", 60, 3600).await;
    let cmp = campaign["id"].as_str().expect("id");
    assert_eq!(
        app.get(&format!("/api/v1/presale-campaigns/{cmp}"))
            .await
            .body["policy"],
        "lock"
    );
    let r = app.order(presale_order("P1", "u1", Some(&cid), cmp)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["status"], "pending_deposit");
    assert_eq!(r.body["amount_due_cents"], 10000);
    assert_eq!(r.body["coupon_lock_status"], "none");
    assert_eq!(
        app.coupon(&cid).await["status"],
        "available",
        "a presale order does not lock yet"
    );

    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "deposit_paid");
    assert_eq!(r.body["coupon_discount_cents"], 5000);
    assert_eq!(r.body["coupon_lock_status"], "locked");
    assert_eq!(r.body["amount_due_cents"], 24900);
    let c = app.coupon(&cid).await;
    assert_eq!(
        (c["status"].as_str(), c["order_no"].as_str()),
        (Some("locked"), Some("P1"))
    );

    app.advance(30);
    assert_eq!(
        app.coupon(&cid).await["status"],
        "locked",
        "a locked coupon does not lazily expire"
    );
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "outside_payment_window"));

    app.advance(30);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.status, 200, "{}", q.text);
    assert_eq!(q.body["coupon_outcome"], "applied");
    assert_eq!(q.body["amount_due_cents"], 24900);
    assert_eq!(q.body["discount_cents"], 5000);
    assert_eq!(
        q.body["message"],
        "本次尾款 249.00 元，已为你抵扣 50.00 元。"
    );
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "final_paid");
    assert_eq!(r.body["final_payment_cents"], 24900);
    assert_eq!(r.body["coupon_lock_status"], "used");
    assert_eq!(app.coupon(&cid).await["status"], "used");
    let order = app.order_view("P1").await;
    assert_eq!(
        actions(&order),
        vec![
            "order:create",
            "order:deposit_payment",
            "coupon:lock",
            "order:final_payment",
            "coupon:use"
        ]
    );
    app.advance(3600);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "invalid_order_status"));
}

#[tokio::test]
async fn the_strict_policy_gives_no_discount_for_a_coupon_that_expired_while_waiting() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "strict", 10).await;
    app.advance(60);
    assert_eq!(
        app.order_view("P1").await["amount_due_cents"],
        29900,
        "the order shows what is due now"
    );
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.body["coupon_outcome"], "no_discount_expired");
    assert_eq!(q.body["amount_due_cents"], 29900);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_discount_cents"], 0);
    assert_eq!(r.body["discount_snapshot_cents"], 5000);
    assert_eq!(r.body["final_payment_cents"], 29900);
    assert_eq!(r.body["coupon_lock_status"], "released");
    assert_eq!(app.coupon(&cid).await["status"], "expired");
}

#[tokio::test]
async fn the_strict_policy_applies_a_coupon_that_is_still_valid() {
    let app = spawn_app().await;
    deposit_paid(&app, "strict", 86400).await;
    app.advance(60);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(
        (
            r.body["final_payment_cents"].as_i64(),
            r.body["coupon_lock_status"].as_str()
        ),
        (Some(24900), Some("used"))
    );
}

#[tokio::test]
async fn swap_or_compensate_swaps_in_the_smallest_sufficient_coupon_ending_first() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 10).await;
    let mk = |value: i64, secs: i64| json!({"value_cents": value, "valid_seconds": secs, "min_order_cents": 0});
    let too_small = app.template(mk(4999, 86400)).await;
    let equal_late = app.template(mk(5000, 3 * 86400)).await;
    let equal_early = app.template(mk(5000, 2 * 86400)).await;
    let bigger = app.template(mk(8000, 86400)).await;
    for t in [&too_small, &equal_late, &equal_early, &bigger] {
        app.claim("u1", t["id"].as_str().expect("id")).await;
    }
    let early_id = app.get("/api/v1/users/u1/coupons").await.body["coupons"]
        .as_array()
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["template_id"] == equal_early["id"])
                .cloned()
        })
        .expect("the early 5000 coupon")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let cmp = app.campaign("swap_or_compensate", 60, 3600).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    app.order(presale_order("P1", "u1", Some(&cid), &cmp)).await;
    app.post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    app.advance(60);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.body["coupon_outcome"], "swapped", "{}", q.text);
    assert_eq!(
        q.body["replacement_coupon_id"].as_str(),
        Some(early_id.as_str())
    );
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_id"].as_str(), Some(early_id.as_str()));
    assert_eq!(r.body["replaced_coupon_id"].as_str(), Some(cid.as_str()));
    assert_eq!(r.body["final_payment_cents"], 24900);
    assert_eq!(app.coupon(&cid).await["status"], "expired");
    let swapped = app.coupon(&early_id).await;
    assert_eq!(
        (swapped["status"].as_str(), swapped["order_no"].as_str()),
        (Some("used"), Some("P1"))
    );
}

#[tokio::test]
async fn swap_or_compensate_compensates_in_cash_terms_when_nothing_can_replace_the_coupon() {
    let app = spawn_app().await;
    deposit_paid(&app, "swap_or_compensate", 10).await;
    app.advance(60);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(
        (
            q.body["coupon_outcome"].as_str(),
            q.body["compensation_cents"].as_i64()
        ),
        (Some("compensated"), Some(5000))
    );
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["compensation_cents"], 5000);
    assert_eq!(r.body["final_payment_cents"], 24900);
    let (amount, kind): (i64, String) =
        sqlx::query_as("SELECT amount_cents, kind FROM compensation_ledger WHERE order_no = 'P1'")
            .fetch_one(app.db.db.pool())
            .await
            .expect("one ledger row");
    assert_eq!((amount, kind.as_str()), (5000, "final_payment_deduction"));
}

/// The id of `user`'s coupon from template `template`.
async fn coupon_of_template(app: &TestApp, user: &str, template: &Value) -> String {
    app.get(&format!("/api/v1/users/{user}/coupons")).await.body["coupons"]
        .as_array()
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["template_id"] == template["id"])
                .cloned()
        })
        .and_then(|c| c["id"].as_str().map(String::from))
        .expect("the coupon of that template")
}

#[tokio::test]
async fn swap_or_compensate_ignores_a_bigger_percent_coupon_for_a_fixed_one_and_compensates() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 10).await;
    // 20% off 399.00 = 79.80, more than the 50.00 snapshot, ending first:
    // it would win the old rule, but it is not a fixed coupon.
    let pct = app
        .template(
            json!({"kind": "percent", "value_cents": null, "percent_off": 20,
            "min_order_cents": 0, "valid_seconds": 86400}),
        )
        .await;
    let pct_id = app.claim("u1", pct["id"].as_str().expect("id")).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    let cmp = app.campaign("swap_or_compensate", 60, 3600).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    app.order(presale_order("P1", "u1", Some(&cid), &cmp)).await;
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(60);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.status, 200, "{}", q.text);
    assert_eq!(
        (
            q.body["coupon_outcome"].as_str(),
            q.body["replacement_coupon_id"].as_str(),
            q.body["compensation_cents"].as_i64(),
            q.body["amount_due_cents"].as_i64(),
        ),
        (Some("compensated"), None, Some(5000), Some(24900)),
        "{}",
        q.text
    );
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_id"].as_str(), Some(cid.as_str()));
    assert_eq!(r.body["compensation_cents"], 5000);
    assert_eq!(
        r.body["final_payment_cents"], q.body["amount_due_cents"],
        "the final payment does what the quote said"
    );
    let untouched = app.coupon(&pct_id).await;
    assert_eq!(
        (untouched["status"].as_str(), untouched["order_no"].as_str()),
        (Some("available"), None)
    );
}

#[tokio::test]
async fn swap_or_compensate_swaps_a_fixed_coupon_for_a_fixed_one_even_beside_a_closer_percent_one()
{
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 10).await;
    // 13% off 399.00 = 51.87: the smallest discount of at least the 50.00
    // snapshot, ending first. The old rule picked it; it is not fixed.
    let pct = app
        .template(
            json!({"kind": "percent", "value_cents": null, "percent_off": 13,
            "min_order_cents": 0, "valid_seconds": 86400}),
        )
        .await;
    app.claim("u1", pct["id"].as_str().expect("id")).await;
    let fixed = app
        .template(json!({"value_cents": 6000, "min_order_cents": 0, "valid_seconds": 3 * 86400}))
        .await;
    app.claim("u1", fixed["id"].as_str().expect("id")).await;
    let fixed_id = coupon_of_template(&app, "u1", &fixed).await;
    let pct_id = coupon_of_template(&app, "u1", &pct).await;
    let cmp = app.campaign("swap_or_compensate", 60, 3600).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    app.order(presale_order("P1", "u1", Some(&cid), &cmp)).await;
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(60);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.body["coupon_outcome"], "swapped", "{}", q.text);
    assert_eq!(
        q.body["replacement_coupon_id"].as_str(),
        Some(fixed_id.as_str())
    );
    assert_eq!(q.body["discount_cents"], 6000);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_id"].as_str(), Some(fixed_id.as_str()));
    assert_eq!(r.body["coupon_discount_cents"], 6000);
    assert_eq!(r.body["final_payment_cents"], q.body["amount_due_cents"]);
    assert_eq!(r.body["final_payment_cents"], 39900 - 10000 - 6000);
    assert_eq!(app.coupon(&fixed_id).await["status"], "used");
    assert_eq!(app.coupon(&pct_id).await["status"], "available");
}

#[tokio::test]
async fn a_coupon_that_expired_before_the_deposit_is_refused_and_the_order_stays_unpaid() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 10).await;
    let cmp = app.campaign("lock", 60, 3600).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    app.order(presale_order("P1", "u1", Some(&cid), &cmp)).await;
    app.advance(10);
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!((r.status, r.code()), (409, "coupon_expired"));
    let o = app.order_view("P1").await;
    assert_eq!(
        (o["status"].as_str(), o["coupon_lock_status"].as_str()),
        (Some("pending_deposit"), Some("none"))
    );
}

#[tokio::test]
async fn the_final_payment_refuses_a_coupon_locked_to_another_order() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "lock", 86400).await;
    sqlx::query("UPDATE coupons SET order_no = 'P-OTHER' WHERE id = $1")
        .bind(&cid)
        .execute(app.db.db.pool())
        .await
        .expect("plant the anomaly");
    app.advance(60);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "coupon_lock_mismatch"));
    let r = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!((r.status, r.code()), (409, "coupon_lock_mismatch"));
    assert_eq!(app.order_view("P1").await["status"], "deposit_paid");
}

/// P1's final payment refused for its coupon's lock, as a Chinese and an
/// English caller read it: the `detail` of both, and each message.
async fn lock_refusal(app: &TestApp) -> (String, String, String) {
    let auth = format!("Bearer {}", crate::common::TOKEN);
    let mut seen = Vec::new();
    for lang in ["zh-CN", "en"] {
        let r = app
            .post_raw(
                "/api/v1/orders/P1/final-payment",
                "{}",
                &[("authorization", &auth), ("accept-language", lang)],
            )
            .await;
        assert_eq!(
            (r.status, r.code()),
            (409, "coupon_lock_mismatch"),
            "{lang}"
        );
        seen.push((
            r.body["error"]["detail"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            r.body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ));
    }
    assert_eq!(
        seen[0].0, seen[1].0,
        "the detail does not follow the language"
    );
    (seen[0].0.clone(), seen[0].1.clone(), seen[1].1.clone())
}

#[tokio::test]
async fn a_final_payment_refused_because_the_coupon_is_no_longer_locked_says_so_and_to_contact_support()
 {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "lock", 86400).await;
    crate::common::fixtures::plant(
        &app,
        &format!(
            "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL \
             WHERE id = '{cid}'"
        ),
    )
    .await;
    app.advance(60);
    let (detail, zh, en) = lock_refusal(&app).await;
    assert_eq!(detail, "not_locked");
    assert!(zh.contains("联系客服"), "{zh}");
    assert!(en.contains("contact support"), "{en}");
    assert_eq!(app.order_view("P1").await["status"], "deposit_paid");
}

#[tokio::test]
async fn a_final_payment_refused_because_another_order_holds_the_coupon_says_so_and_to_contact_support()
 {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "lock", 86400).await;
    crate::common::fixtures::plant(
        &app,
        &format!("UPDATE coupons SET order_no = 'P-OTHER' WHERE id = '{cid}'"),
    )
    .await;
    app.advance(60);
    let (detail, zh, en) = lock_refusal(&app).await;
    assert_eq!(detail, "locked_to_another_order");
    assert!(zh.contains("另一个订单") && zh.contains("联系客服"), "{zh}");
    assert!(
        en.contains("another order") && en.contains("contact support"),
        "{en}"
    );
    assert_eq!(app.order_view("P1").await["status"], "deposit_paid");
}

#[tokio::test]
async fn a_deposit_paid_order_can_be_cancelled_or_refunded_and_its_coupon_comes_back() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "lock", 86400).await;
    let cmp = app.order_view("P1").await["campaign_id"]
        .as_str()
        .expect("campaign")
        .to_string();
    let r = app
        .post(
            "/api/v1/orders/P1/cancel",
            json!({"reason": "changed my mind"}),
        )
        .await;
    assert_eq!(r.body["status"], "closed", "{}", r.text);
    assert_eq!(app.coupon(&cid).await["status"], "available");

    app.order(presale_order("P2", "u1", Some(&cid), &cmp)).await;
    app.post("/api/v1/orders/P2/deposit-payment", json!({}))
        .await;
    let r = app
        .post(
            "/api/v1/orders/P2/refund",
            json!({"reason": "deposit refunded"}),
        )
        .await;
    assert_eq!(r.body["status"], "refunded", "{}", r.text);
    assert_eq!(app.coupon(&cid).await["status"], "available");

    app.order(presale_order("P3", "u1", Some(&cid), &cmp)).await;
    app.post("/api/v1/orders/P3/deposit-payment", json!({}))
        .await;
    app.advance(60);
    app.post("/api/v1/orders/P3/final-payment", json!({})).await;
    let r = app
        .post("/api/v1/orders/P3/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.body["status"], "refunded", "{}", r.text);
    assert_eq!(app.coupon(&cid).await["status"], "available");
}

#[tokio::test]
async fn actions_on_the_wrong_kind_of_order_are_refused() {
    let app = spawn_app().await;
    let cmp = app.campaign("lock", 60, 3600).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    app.order(presale_order("P1", "u1", None, &cmp)).await;
    app.order(normal_order("N1", "u1", None, 100)).await;
    let r = app.post("/api/v1/orders/P1/pay", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "order_kind_mismatch"));
    let r = app
        .post("/api/v1/orders/N1/deposit-payment", json!({}))
        .await;
    assert_eq!((r.status, r.code()), (409, "order_kind_mismatch"));
    let r = app.post("/api/v1/orders/N1/final-payment", json!({})).await;
    assert_eq!((r.status, r.code()), (409, "order_kind_mismatch"));
    let r = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!((r.status, r.code()), (409, "invalid_order_status"));
    let r = app.post("/api/v1/orders/NOPE/pay", json!({})).await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app.get("/api/v1/presale-campaigns/cmp_nope").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app.order(presale_order("P9", "u1", None, "cmp_nope")).await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
}

#[tokio::test]
async fn campaign_fields_are_validated() {
    let app = spawn_app().await;
    let good = json!({"name": "预售", "final_payment_starts_at": app.at(10), "final_payment_ends_at": app.at(20), "policy": "lock"});
    for (overrides, field) in [
        (json!({"policy": "maybe"}), "policy"),
        (json!({"policy": ""}), "policy"),
        (json!({"policy": "LOCK"}), "policy"),
        (json!({"policy": 7}), "policy"),
        (
            json!({"final_payment_ends_at": app.at(5)}),
            "final_payment_ends_at",
        ),
        (
            json!({"final_payment_starts_at": "soon"}),
            "final_payment_starts_at",
        ),
        (json!({"name": ""}), "name"),
    ] {
        let r = app
            .post(
                "/api/v1/presale-campaigns",
                crate::common::merge(good.clone(), overrides.clone()),
            )
            .await;
        assert_eq!(
            (r.status, r.field()),
            (400, field),
            "{overrides}: {}",
            r.text
        );
    }
    let r = app.post("/api/v1/presale-campaigns", good).await;
    assert_eq!(r.status, 201);
    assert!(
        r.body["final_payment_starts_at"]
            .as_str()
            .unwrap_or("")
            .ends_with('Z')
    );
}

#[tokio::test]
async fn a_campaign_created_without_a_policy_is_a_lock_campaign() {
    let app = spawn_app().await;
    let body = json!({"name": "预售", "final_payment_starts_at": app.at(10), "final_payment_ends_at": app.at(20)});
    let r = app.post("/api/v1/presale-campaigns", body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["policy"], "lock");
    let read = app
        .get(&format!("/api/v1/presale-campaigns/{}", r.id()))
        .await;
    assert_eq!(read.body["policy"], "lock", "{}", read.text);
    // An explicit null is the same as leaving it out.
    let r = app
        .post(
            "/api/v1/presale-campaigns",
            json!({"name": "预售2", "final_payment_starts_at": app.at(10), "final_payment_ends_at": app.at(20), "policy": null}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["policy"], "lock");
}

/// Runs the archive job once, as `serve` does; returns the coupons moved.
async fn run_archive_job(app: &TestApp) -> u64 {
    let settings = couponkeeper::jobs::JobSettings::default();
    let metrics = couponkeeper::metrics::Metrics::default();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    couponkeeper::jobs::run_once("archive", &app.service, &settings, &metrics, &rx)
        .await
        .expect("archive job")
}

async fn rows_in(app: &TestApp, table: &str, id: &str) -> i64 {
    sqlx::query_scalar(&format!(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM {table} WHERE id = $1"
    ))
    .bind(id)
    .fetch_one(app.db.db.pool())
    .await
    .expect("count")
}

fn coupon_actions(v: &Value) -> Vec<String> {
    v["events"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["action"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_refund_after_the_archive_job_brings_the_used_coupon_back_available() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 60 * 86400).await;
    let r = app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(31 * 86400);
    assert_eq!(
        run_archive_job(&app).await,
        1,
        "the used coupon is archived"
    );
    assert_eq!(rows_in(&app, "coupons", &cid).await, 0);
    assert_eq!(rows_in(&app, "coupons_archive", &cid).await, 1);

    let r = app
        .post("/api/v1/orders/N1/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "refunded");
    assert_eq!(r.body["coupon_lock_status"], "released");
    assert_eq!(
        rows_in(&app, "coupons", &cid).await,
        1,
        "back in the hot table"
    );
    assert_eq!(rows_in(&app, "coupons_archive", &cid).await, 0);
    let c = app.coupon(&cid).await;
    assert_eq!(
        (c["status"].as_str(), c["order_no"].as_str()),
        (Some("available"), None),
        "{c:#}"
    );
    assert_eq!(
        coupon_actions(&c),
        vec![
            "claim",
            "checkout_lock",
            "use",
            "unarchive",
            "refund_release"
        ],
        "{c:#}"
    );
    let last = c["events"].as_array().and_then(|e| e.last()).cloned();
    let last = last.unwrap_or_default();
    assert_eq!(
        (
            last["from"].as_str(),
            last["to"].as_str(),
            last["reason"].as_str()
        ),
        (Some("used"), Some("available"), Some("returned"))
    );
    // The customer can use it again.
    let listed = app.get("/api/v1/users/u1/coupons?status=available").await;
    assert!(
        listed.body["coupons"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|x| x["id"] == cid.as_str())),
        "{}",
        listed.text
    );
    let r = app.order(normal_order("N2", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    // The order's timeline shows the coupon's whole story again.
    let o = app.order_view("N1").await;
    let story = actions(&o);
    assert!(
        story.contains(&"coupon:use".to_string())
            && story.contains(&"coupon:unarchive".to_string())
            && story.contains(&"coupon:refund_release".to_string()),
        "{story:?}"
    );
}

#[tokio::test]
async fn a_refund_after_the_archive_job_expires_a_returned_coupon_past_its_end() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 31 * 86400).await;
    app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(31 * 86400 + 1);
    assert_eq!(run_archive_job(&app).await, 1);
    let r = app
        .post("/api/v1/orders/N1/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let c = app.coupon(&cid).await;
    assert_eq!(c["status"], "expired", "{c:#}");
    assert_eq!(stored_coupon_status(&app, &cid).await, "expired");
    assert_eq!(
        coupon_actions(&c),
        vec![
            "claim",
            "checkout_lock",
            "use",
            "unarchive",
            "refund_release"
        ]
    );
}

#[tokio::test]
async fn refunding_a_final_paid_order_brings_back_its_archived_swapped_in_coupon() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 10).await;
    let spare = app
        .template(json!({"value_cents": 5000, "min_order_cents": 0, "valid_seconds": 90 * 86400}))
        .await;
    app.claim("u1", spare["id"].as_str().expect("id")).await;
    let spare_id = coupon_of_template(&app, "u1", &spare).await;
    let cmp = app.campaign("swap_or_compensate", 60, 3600).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    app.order(presale_order("P1", "u1", Some(&cid), &cmp)).await;
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(60);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_id"].as_str(), Some(spare_id.as_str()));
    app.advance(31 * 86400);
    assert_eq!(
        run_archive_job(&app).await,
        2,
        "the expired original and the used replacement"
    );
    let r = app
        .post("/api/v1/orders/P1/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "refunded");
    let c = app.coupon(&spare_id).await;
    assert_eq!(
        (c["status"].as_str(), c["order_no"].as_str()),
        (Some("available"), None),
        "{c:#}"
    );
    assert_eq!(
        coupon_actions(&c),
        vec!["claim", "swap_lock", "use", "unarchive", "refund_release"]
    );
    // The original coupon expired unbound: it stays archived and expired.
    assert_eq!(rows_in(&app, "coupons_archive", &cid).await, 1);
    assert_eq!(app.coupon(&cid).await["status"], "expired");
}

#[tokio::test]
async fn refunding_a_final_paid_lock_order_brings_back_its_archived_coupon() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "lock", 60 * 86400).await;
    app.advance(60);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(31 * 86400);
    assert_eq!(run_archive_job(&app).await, 1);
    let r = app
        .post("/api/v1/orders/P1/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let c = app.coupon(&cid).await;
    assert_eq!(c["status"], "available", "{c:#}");
    assert_eq!(
        coupon_actions(&c),
        vec!["claim", "lock", "use", "unarchive", "refund_release"]
    );
}

/// A refund returning an old used coupon while the archive job runs: on
/// PostgreSQL the job skips the row the refund holds (it would otherwise
/// copy the coupon as it was and then delete the returned one). SQLite runs
/// one write transaction at a time, so there is nothing to interleave.
#[tokio::test]
async fn the_archive_job_skips_a_coupon_another_transaction_is_changing() {
    let app = spawn_app().await;
    if app.db.db.backend() != couponkeeper::store::Backend::Postgres {
        return;
    }
    let cid = user_with_coupon(&app, "u1", 60 * 86400).await;
    app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(31 * 86400);
    let mut holder = app.db.db.pool().begin().await.expect("tx");
    sqlx::query("SELECT id FROM coupons WHERE id = $1 FOR UPDATE")
        .bind(&cid)
        .fetch_all(&mut *holder)
        .await
        .expect("lock the row");
    let moved = tokio::time::timeout(std::time::Duration::from_secs(20), run_archive_job(&app))
        .await
        .expect("the job does not wait for the row");
    assert_eq!(moved, 0);
    holder.rollback().await.expect("rollback");
    assert_eq!(rows_in(&app, "coupons", &cid).await, 1);
    assert_eq!(
        run_archive_job(&app).await,
        1,
        "archived once the row is free"
    );
}

#[tokio::test]
async fn the_database_refuses_an_order_status_or_lock_status_no_domain_type_names() {
    let app = spawn_app().await;
    let made = app.order(normal_order("N-CHK", "u1", None, 10_000)).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let pool = app.db.db.pool();
    // Written past the service, a stray word would make every read of the
    // order fail (rows are parsed strictly); the schema refuses it instead.
    for bad in [
        "UPDATE orders SET status = 'shipped' WHERE order_no = 'N-CHK'",
        "UPDATE orders SET coupon_lock_status = 'held' WHERE order_no = 'N-CHK'",
        "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, created_at, updated_at)
         VALUES ('N-BAD', 'u1', 'normal', '', 'PAID', 100, 0, 0)",
    ] {
        assert!(
            sqlx::query(bad).execute(pool).await.is_err(),
            "accepted: {bad}"
        );
    }
    // The known words still go in, and the order still reads.
    sqlx::query("UPDATE orders SET coupon_lock_status = 'released' WHERE order_no = 'N-CHK'")
        .execute(pool)
        .await
        .expect("a known word");
    let order = app.order_view("N-CHK").await;
    assert_eq!(order["status"], "pending_payment");
    assert_eq!(order["coupon_lock_status"], "released");
}
