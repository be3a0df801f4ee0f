//! Template budgets over HTTP (API.md, "Budgets"): the discount reserved
//! when a coupon is locked, given back when it is released or returned,
//! 409 `budget_exhausted` past it, the picker's reason, and never over
//! budget under concurrency.

use crate::common::fixtures::count;
use crate::common::{TestApp, spawn_app};
use serde_json::{Value, json};

fn order(no: &str, user: &str, coupon: &str) -> Value {
    json!({"order_no": no, "user_id": user, "kind": "normal", "category": "phones",
        "total_cents": 40_000, "coupon_id": coupon})
}

/// A 满300减50 template with a budget of `budget` cents; its id.
async fn budgeted(app: &TestApp, budget: i64) -> String {
    let t = app
        .template(json!({"budget_cents": budget, "total_stock": 1000}))
        .await;
    assert_eq!(t["budget_cents"], budget);
    assert_eq!(t["budget_used_cents"], 0);
    t["id"].as_str().expect("template id").to_string()
}

async fn claim(app: &TestApp, user: &str, template: &str) -> String {
    app.claim(user, template).await["id"]
        .as_str()
        .expect("coupon id")
        .to_string()
}

async fn used(app: &TestApp, template: &str) -> i64 {
    let r = app.get(&format!("/api/v1/templates/{template}")).await;
    r.body["budget_used_cents"].as_i64().unwrap_or(-1)
}

#[tokio::test]
async fn a_budget_is_reserved_at_the_lock_refused_past_it_and_given_back_on_release() {
    let app = spawn_app().await;
    let t = budgeted(&app, 10_000).await;
    let c1 = claim(&app, "u1", &t).await;
    let c2 = claim(&app, "u2", &t).await;
    let c3 = claim(&app, "u3", &t).await;
    for (no, user, c) in [("N1", "u1", &c1), ("N2", "u2", &c2)] {
        let r = app.order(order(no, user, c)).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    assert_eq!(used(&app, &t).await, 10_000);

    let r = app.order(order("N3", "u3", &c3)).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.code(), "budget_exhausted");
    assert_eq!(app.get("/api/v1/orders/N3").await.status, 404);
    let coupon = app.get(&format!("/api/v1/coupons/{c3}")).await;
    assert_eq!(coupon.body["status"], "available", "nothing was locked");
    // The picker says so.
    let r = app
        .post(
            "/api/v1/users/u3/coupon-options",
            json!({"kind": "normal", "category": "phones", "total_cents": 40_000}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["usable"], json!([]));
    assert_eq!(
        r.body["unusable"][0]["reason"], "budget_exhausted",
        "{}",
        r.text
    );
    assert_eq!(r.body["best"], Value::Null);

    // Paying keeps the reservation; cancelling gives it back.
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(used(&app, &t).await, 10_000);
    let r = app.post("/api/v1/orders/N2/cancel", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(used(&app, &t).await, 5_000);
    let r = app.order(order("N3", "u3", &c3)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(used(&app, &t).await, 10_000);
    // A refund returns the coupon and its part of the budget.
    let r = app
        .post("/api/v1/orders/N1/refund", json!({"reason": "退货"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(used(&app, &t).await, 5_000);
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM budget_reservations").await,
        1,
        "one reservation per coupon held"
    );
}

#[tokio::test]
async fn a_bad_budget_is_refused_with_its_field() {
    let app = spawn_app().await;
    for bad in [json!(0), json!(-1), json!(10_000_000_000_000i64)] {
        let mut body = crate::common::template_body();
        body["budget_cents"] = bad;
        let r = app.post("/api/v1/templates", body).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert_eq!(r.field(), "budget_cents");
    }
    let t = app.template(json!({})).await;
    assert_eq!(t["budget_cents"], Value::Null);
    assert_eq!(t["budget_used_cents"], Value::Null);
}

#[tokio::test]
async fn thirty_two_orders_at_once_never_pass_the_budget_and_the_reservations_equal_the_live_discounts()
 {
    let app = spawn_app().await;
    // Room for 10 discounts of 50.00, and 12.34 more that fits none.
    let t = budgeted(&app, 51_234).await;
    let mut coupons = Vec::new();
    for i in 0..32 {
        coupons.push(claim(&app, &format!("u{i}"), &t).await);
    }
    let orders = coupons.iter().enumerate().map(|(i, c)| {
        let app = &app;
        async move {
            app.order(order(&format!("N{i}"), &format!("u{i}"), c))
                .await
        }
    });
    let answers = futures_util::future::join_all(orders).await;
    let won = answers.iter().filter(|r| r.status == 201).count();
    let refused = answers
        .iter()
        .filter(|r| r.status == 409 && r.code() == "budget_exhausted")
        .count();
    assert_eq!(won, 10, "exactly as many as the budget holds");
    assert_eq!(refused, 22);
    assert_eq!(used(&app, &t).await, 50_000);
    let live = count(
        &app,
        "SELECT CAST(COALESCE(SUM(coupon_discount_cents), 0) AS BIGINT) FROM orders WHERE coupon_lock_status = 'locked'",
    )
    .await;
    let reserved = count(
        &app,
        "SELECT CAST(COALESCE(SUM(cents), 0) AS BIGINT) FROM budget_reservations",
    )
    .await;
    assert_eq!(reserved, live);
    assert_eq!(reserved, 50_000);
    let left = count(
        &app,
        "SELECT CAST(COALESCE(SUM(left_cents), 0) AS BIGINT) FROM template_budget_shards",
    )
    .await;
    assert_eq!(left, 1_234, "never below zero, nothing lost");
}

#[tokio::test]
async fn a_budget_grows_or_shrinks_after_claims_but_never_below_what_is_used() {
    let app = spawn_app().await;
    let t = budgeted(&app, 10_000).await;
    let path = format!("/api/v1/templates/{t}");
    let c1 = claim(&app, "u1", &t).await;
    let c2 = claim(&app, "u2", &t).await;
    let c3 = claim(&app, "u3", &t).await;
    for (no, user, c) in [("N1", "u1", &c1), ("N2", "u2", &c2)] {
        let r = app.order(order(no, user, c)).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    assert_eq!(used(&app, &t).await, 10_000);
    let r = app.order(order("N3", "u3", &c3)).await;
    assert_eq!(r.code(), "budget_exhausted", "{}", r.text);
    // More: the third order fits.
    let r = app.patch(&path, json!({"budget_cents": 15_000})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (
            r.body["budget_cents"].as_i64(),
            r.body["budget_used_cents"].as_i64()
        ),
        (Some(15_000), Some(10_000))
    );
    let r = app.order(order("N3", "u3", &c3)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Below what is used: refused, nothing changed.
    let r = app.patch(&path, json!({"budget_cents": 14_999})).await;
    assert_eq!(
        (r.status, r.code()),
        (409, "edit_not_allowed"),
        "{}",
        r.text
    );
    assert!(
        r.text
            .contains("The budget cannot go below what its coupons hold or gave."),
        "{}",
        r.text
    );
    let r = app.patch(&path, json!({"budget_cents": 0})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    // A cancelled order gives back: down to exactly what is used.
    let r = app.post("/api/v1/orders/N3/cancel", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.patch(&path, json!({"budget_cents": 10_000})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(used(&app, &t).await, 10_000);
    let r = app.order(order("N4", "u3", &c3)).await;
    assert_eq!(r.code(), "budget_exhausted", "{}", r.text);
    // A template without a budget does not gain one after its first
    // claim: the discounts already held were never reserved.
    let plain = app.template(json!({})).await["id"]
        .as_str()
        .expect("template id")
        .to_string();
    claim(&app, "u1", &plain).await;
    let r = app
        .patch(
            &format!("/api/v1/templates/{plain}"),
            json!({"budget_cents": 5_000}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "edit_not_allowed"),
        "{}",
        r.text
    );
    // Reconciliation finds the budget in step with its orders.
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["anomalies"], json!([]), "{}", r.text);
}
