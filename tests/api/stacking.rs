//! Several coupons on one order over HTTP (API.md, "Several coupons on one
//! order"): `coupon_ids`, the clashes refused as `coupons_not_combinable`,
//! shop coupons applied before the platform coupon, and every coupon
//! locked, used, released and returned with its order.

use crate::common::{TestApp, spawn_app};
use serde_json::{Value, json};

fn line(id: &str, category: &str, shop: Option<&str>, q: i64, p: i64) -> Value {
    json!({"line_id": id, "sku": null, "category": category, "shop_id": shop,
        "quantity": q, "unit_price_cents": p})
}

/// A coupon of a template made from the default 满300减50 with
/// `overrides`, claimed by `user`; its id.
async fn coupon(app: &TestApp, user: &str, overrides: Value) -> String {
    let t = app.template(overrides).await;
    let c = app
        .claim(user, t["id"].as_str().expect("template id"))
        .await;
    c["id"].as_str().expect("coupon id").to_string()
}

/// Shop A: 2 × ¥100; shop B: 1 × ¥150; shop B again: 1 × ¥50.
fn two_shop_cart() -> Vec<Value> {
    vec![
        line("a", "beauty", Some("A"), 2, 10000),
        line("b", "beauty", Some("B"), 1, 15000),
        line("c", "food", Some("B"), 1, 5000),
    ]
}

fn order(no: &str, user: &str, coupons: &[&str], lines: Vec<Value>) -> Value {
    json!({"order_no": no, "user_id": user, "kind": "normal", "lines": lines,
        "coupon_ids": coupons})
}

async fn status_of(app: &TestApp, coupon: &str) -> String {
    let r = app.get(&format!("/api/v1/coupons/{coupon}")).await;
    r.body["status"].as_str().unwrap_or("").to_string()
}

/// A platform 满300减30 and shop coupons A 满150减20 and B 满100减10, all
/// held by u1: `(platform, shop_a, shop_b)`.
async fn three_coupons(app: &TestApp) -> (String, String, String) {
    let platform = coupon(
        app,
        "u1",
        json!({"value_cents": 3000, "min_order_cents": 30000}),
    )
    .await;
    let shop_a = coupon(
        app,
        "u1",
        json!({"value_cents": 2000, "min_order_cents": 15000, "shop_id": "A"}),
    )
    .await;
    let shop_b = coupon(
        app,
        "u1",
        json!({"value_cents": 1000, "min_order_cents": 10000, "shop_id": "B"}),
    )
    .await;
    (platform, shop_a, shop_b)
}

#[tokio::test]
async fn a_platform_coupon_stacks_on_shop_coupons_and_applies_to_what_they_leave() {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three_coupons(&app).await;
    let r = app
        .order(order(
            "N1",
            "u1",
            &[&shop_a, &platform, &shop_b],
            two_shop_cart(),
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["coupon_id"], platform, "the platform coupon");
    assert_eq!(r.body["coupon_discount_cents"], 6000, "20 + 10 + 30");
    assert_eq!(r.body["amount_due_cents"], 40000 - 6000);
    assert_eq!(
        r.body["coupons"],
        json!([
            {"coupon_id": platform, "discount_cents": 3000, "lock_status": "locked",
                "compensation_cents": 0},
            {"coupon_id": shop_a, "discount_cents": 2000, "lock_status": "locked",
                "compensation_cents": 0},
            {"coupon_id": shop_b, "discount_cents": 1000, "lock_status": "locked",
                "compensation_cents": 0},
        ])
    );
    // Shop A's 20.00 on line a; shop B's 10.00 over 150 and 50 (7.50,
    // 2.50); the platform's 30.00 over what is left: 180, 142.50, 47.50
    // (of 370.00) → 14.60, 11.55, 3.85 by largest remainder.
    let shares = |i: usize| -> Vec<(String, i64)> {
        r.body["lines"][i]["discounts"]
            .as_array()
            .map(|ds| {
                ds.iter()
                    .map(|d| {
                        (
                            d["coupon_id"].as_str().unwrap_or("").to_string(),
                            d["cents"].as_i64().unwrap_or(-1),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut a = shares(0);
    a.sort();
    let mut want = vec![(shop_a.clone(), 2000), (platform.clone(), 1460)];
    want.sort();
    assert_eq!(a, want);
    let total: i64 = (0..3)
        .flat_map(shares)
        .filter(|(id, _)| *id == platform)
        .map(|(_, c)| c)
        .sum();
    assert_eq!(total, 3000, "the platform coupon's split adds up");
    for (i, payable) in [
        (0, 20000 - 2000 - 1460),
        (1, 15000 - 750 - 1155),
        (2, 5000 - 250 - 385),
    ] {
        assert_eq!(r.body["lines"][i]["payable_cents"], payable, "line {i}");
    }
    for c in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, c).await, "locked");
    }

    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for c in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, c).await, "used");
    }
    let locks: Vec<&str> = r.body["coupons"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["lock_status"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(locks, vec!["used", "used", "used"]);
    // Each template's report counts what its own coupon gave.
    for (c, discount) in [(&platform, 3000), (&shop_a, 2000), (&shop_b, 1000)] {
        let coupon = app.get(&format!("/api/v1/coupons/{c}")).await;
        let tid = coupon.body["template_id"].as_str().unwrap_or("");
        let r = app.get(&format!("/api/v1/templates/{tid}/report")).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["totals"]["used"], 1, "{}", r.text);
        assert_eq!(r.body["totals"]["discount_cents"], discount, "{}", r.text);
    }

    let r = app
        .post("/api/v1/orders/N1/refund", json!({"reason": "退货"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    for c in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, c).await, "available", "returned");
    }
}

#[tokio::test]
async fn a_cancelled_order_releases_every_coupon_it_locked() {
    let app = spawn_app().await;
    let (platform, shop_a, _) = three_coupons(&app).await;
    let r = app
        .order(order("N1", "u1", &[&platform, &shop_a], two_shop_cart()))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/cancel", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let locks: Vec<&str> = r.body["coupons"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["lock_status"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(locks, vec!["released", "released"]);
    for c in [&platform, &shop_a] {
        assert_eq!(status_of(&app, c).await, "available");
    }
}

#[tokio::test]
async fn coupons_that_may_not_go_together_are_refused_and_nothing_is_locked() {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three_coupons(&app).await;
    let platform_2 = coupon(&app, "u1", json!({"value_cents": 1000})).await;
    let shop_a_2 = coupon(
        &app,
        "u1",
        json!({"value_cents": 500, "min_order_cents": 0, "shop_id": "A"}),
    )
    .await;
    let alone = coupon(
        &app,
        "u1",
        json!({"value_cents": 500, "min_order_cents": 0, "stackable": false}),
    )
    .await;
    for (n, ids, named) in [
        (1, vec![&platform, &platform_2], "platform"),
        (2, vec![&shop_a, &shop_b, &shop_a_2], "shop A"),
        (3, vec![&shop_a, &alone], "cannot be combined"),
    ] {
        let ids: Vec<&str> = ids.iter().map(|s| s.as_str()).collect();
        let r = app
            .order(order(&format!("N{n}"), "u1", &ids, two_shop_cart()))
            .await;
        assert_eq!(r.status, 409, "{}", r.text);
        assert_eq!(r.code(), "coupons_not_combinable");
        assert!(r.text.contains(named), "{}", r.text);
        let r = app.get(&format!("/api/v1/orders/N{n}")).await;
        assert_eq!(r.status, 404, "no order was made");
    }
    for c in [&platform, &platform_2, &shop_a, &shop_b, &shop_a_2, &alone] {
        assert_eq!(status_of(&app, c).await, "available");
    }
    // Alone it is fine.
    let r = app
        .order(order("N9", "u1", &[&alone], two_shop_cart()))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let t = app.get("/api/v1/templates?limit=200").await;
    let stackable: Vec<bool> = t.body["templates"]
        .as_array()
        .map(|ts| ts.iter().filter_map(|t| t["stackable"].as_bool()).collect())
        .unwrap_or_default();
    assert_eq!(stackable.iter().filter(|s| !**s).count(), 1, "{}", t.text);
}

#[tokio::test]
async fn the_platform_threshold_is_judged_after_the_shop_coupons() {
    let app = spawn_app().await;
    // 满380减30 on ¥400 at list price, but ¥370 after the shop coupons.
    let platform = coupon(
        &app,
        "u1",
        json!({"value_cents": 3000, "min_order_cents": 38000}),
    )
    .await;
    let (_, shop_a, shop_b) = three_coupons(&app).await;
    let r = app
        .order(order(
            "N1",
            "u1",
            &[&platform, &shop_a, &shop_b],
            two_shop_cart(),
        ))
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.code(), "threshold_not_met");
    assert!(r.text.contains(&platform), "names the coupon: {}", r.text);
    assert!(r.text.contains("¥10.00"), "the shortfall: {}", r.text);
    for c in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, c).await, "available");
    }
    // With one shop coupon it is met: 400 − 20 = 380.
    let r = app
        .order(order("N2", "u1", &[&platform, &shop_a], two_shop_cart()))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["coupon_discount_cents"], 5000);
}

#[tokio::test]
async fn coupon_id_and_coupon_ids_together_are_a_bad_request() {
    let app = spawn_app().await;
    let (platform, shop_a, _) = three_coupons(&app).await;
    let mut body = order("N1", "u1", &[&shop_a], two_shop_cart());
    body["coupon_id"] = json!(platform);
    let r = app.order(body).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.field(), "coupon_ids");
    let r = app
        .order(order("N1", "u1", &[&shop_a, &shop_a], two_shop_cart()))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.field(), "coupon_ids");
}

#[tokio::test]
async fn of_two_orders_racing_for_one_coupon_of_a_combination_the_loser_locks_nothing() {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three_coupons(&app).await;
    let first = app.order(order("N1", "u1", &[&platform, &shop_a], two_shop_cart()));
    let second = app.order(order("N2", "u1", &[&platform, &shop_b], two_shop_cart()));
    let (first, second) = tokio::join!(first, second);
    let won: Vec<u16> = [first.status, second.status]
        .into_iter()
        .filter(|s| *s == 201)
        .collect();
    assert_eq!(won.len(), 1, "{} / {}", first.text, second.text);
    let (winner_shop, loser_shop) = if first.status == 201 {
        (&shop_a, &shop_b)
    } else {
        (&shop_b, &shop_a)
    };
    let loser = if first.status == 201 { &second } else { &first };
    assert_eq!(loser.status, 409, "{}", loser.text);
    assert_eq!(status_of(&app, &platform).await, "locked");
    assert_eq!(status_of(&app, winner_shop).await, "locked");
    assert_eq!(
        status_of(&app, loser_shop).await,
        "available",
        "the loser locks nothing"
    );
}

#[tokio::test]
async fn a_partial_refund_returns_each_coupon_by_its_own_lines() {
    let app = spawn_app().await;
    // No thresholds, so a refund keeps what it does not return.
    let platform = coupon(
        &app,
        "u1",
        json!({"value_cents": 3000, "min_order_cents": 0}),
    )
    .await;
    let shop_b = coupon(
        &app,
        "u1",
        json!({"value_cents": 1000, "min_order_cents": 0, "shop_id": "B"}),
    )
    .await;
    let r = app
        .order(order("N1", "u1", &[&platform, &shop_b], two_shop_cart()))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Every unit of shop B's lines back: the shop coupon returns, the
    // platform coupon (still on line a) stays used.
    let r = app
        .post(
            "/api/v1/orders/N1/refunds",
            json!({"refund_id": "R1", "reason": "退货",
                "lines": [{"line_id": "b", "quantity": 1}, {"line_id": "c", "quantity": 1}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let outcomes: Vec<(String, String)> = r.body["coupons"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["coupon_id"].as_str().unwrap_or("").to_string(),
                        c["outcome"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(
        outcomes.contains(&(shop_b.clone(), "returned".to_string())),
        "{outcomes:?}"
    );
    assert!(
        outcomes.contains(&(platform.clone(), "kept".to_string())),
        "{outcomes:?}"
    );
    assert_eq!(status_of(&app, &shop_b).await, "available");
    assert_eq!(status_of(&app, &platform).await, "used");
    let r = app.get("/api/v1/orders/N1").await;
    assert_eq!(r.body["status"], "paid");
    assert_eq!(r.body["coupon_lock_status"], "used", "the platform coupon");
    assert_eq!(r.body["coupons"][1]["lock_status"], "released");
    // The rest back: the platform coupon returns too.
    let r = app
        .post(
            "/api/v1/orders/N1/refunds",
            json!({"refund_id": "R2", "reason": "退货",
                "lines": [{"line_id": "a", "quantity": 2}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(status_of(&app, &platform).await, "available");
    let r = app.get("/api/v1/orders/N1").await;
    assert_eq!(r.body["status"], "refunded");
    assert_eq!(r.body["refunded_cents"], 40000 - 4000);
}

#[tokio::test]
async fn an_order_of_several_coupons_is_healthy_to_the_health_check_reconciliation_and_the_reaper()
{
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three_coupons(&app).await;
    let r = app
        .order(order(
            "N1",
            "u1",
            &[&platform, &shop_a, &shop_b],
            two_shop_cart(),
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Locked for a long time on a live order: not a zombie.
    app.advance(3 * 3600);
    let report = app
        .service
        .reap_zombie_locks("job:test", 3600, 100)
        .await
        .expect("the reaper runs");
    assert_eq!(report.changed, 0, "{report:?}");
    for c in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, c).await, "locked");
    }
    app.advance(-3 * 3600);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.get("/api/v1/orders/N1/health-check").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["overall"], "ok", "{}", r.text);
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["anomalies"], json!([]), "{}", r.text);
    // A partial refund returns shop B's coupon; still nothing to report.
    let r = app
        .post(
            "/api/v1/orders/N1/refunds",
            json!({"refund_id": "R1", "reason": "退货",
                "lines": [{"line_id": "b", "quantity": 1}, {"line_id": "c", "quantity": 1}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.body["anomalies"], json!([]), "{}", r.text);
    let r = app.get("/api/v1/orders/N1/health-check").await;
    assert_eq!(r.body["overall"], "ok", "{}", r.text);
}

#[tokio::test]
async fn support_cannot_release_one_coupon_of_a_live_order_of_several_even_by_force() {
    let app = spawn_app().await;
    let (platform, shop_a, _) = three_coupons(&app).await;
    let r = app
        .order(order("N1", "u1", &[&platform, &shop_a], two_shop_cart()))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Neither the further coupon nor the one the order names: a forced
    // release of the platform coupon would leave shop A's locked to an
    // order that no longer lists it.
    for coupon in [&shop_a, &platform] {
        for force in [false, true] {
            let r = app
                .post(
                    &format!("/api/v1/coupons/{coupon}/release"),
                    json!({"reason": "顾客要求", "force": force}),
                )
                .await;
            assert_eq!(r.status, 409, "{}", r.text);
            assert_eq!(r.code(), "order_active");
        }
    }
    assert_eq!(status_of(&app, &shop_a).await, "locked");
    assert_eq!(status_of(&app, &platform).await, "locked");
    let r = app.get("/api/v1/orders/N1").await;
    assert_eq!(r.body["coupon_id"], json!(platform), "{}", r.text);
    assert_eq!(r.body["coupon_lock_status"], "locked");
    assert_eq!(r.body["coupons"][1]["lock_status"], "locked");
}

#[tokio::test]
async fn reconciliation_finds_a_further_coupon_out_of_step_and_a_budget_off_its_orders() {
    let app = spawn_app().await;
    let (platform, shop_a, _) = three_coupons(&app).await;
    let r = app
        .order(order("N1", "u1", &[&platform, &shop_a], two_shop_cart()))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let t = app
        .template(json!({"budget_cents": 100_000, "min_order_cents": 0}))
        .await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let c = app.claim("u2", &tid).await;
    let r = app
        .order(json!({"order_no": "N2", "user_id": "u2", "kind": "normal",
            "category": "phones", "total_cents": 40_000, "coupon_id": c["id"]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.body["anomalies"], json!([]), "{}", r.text);

    // The shop coupon freed behind the order's back; a reservation bent.
    crate::common::fixtures::plant(
        &app,
        &format!(
            "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL \
             WHERE id = '{shop_a}'"
        ),
    )
    .await;
    crate::common::fixtures::plant(&app, "UPDATE budget_reservations SET cents = cents + 1").await;
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let kinds: Vec<(String, String)> = r.body["anomalies"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["kind"].as_str().unwrap_or("").to_string(),
                        // A coupon's finding names it; a template's, in its detail.
                        f["coupon_id"]
                            .as_str()
                            .or(f["detail"].as_str())
                            .unwrap_or("")
                            .to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert!(
        kinds.contains(&("coupons_out_of_step".to_string(), shop_a.clone())),
        "{}",
        r.text
    );
    assert!(
        kinds
            .iter()
            .any(|(k, detail)| k == "budget_mismatch" && detail.contains(&tid)),
        "{}",
        r.text
    );
    assert_eq!(r.body["counts"]["coupons_out_of_step"], 1, "{}", r.text);
    assert_eq!(r.body["counts"]["budget_mismatch"], 1, "{}", r.text);
}

/// Order N1 of [`two_shop_cart`] with all three of [`three_coupons`],
/// paid: `(platform, shop_a, shop_b)`.
async fn paid_with_three(app: &TestApp) -> (String, String, String) {
    let (platform, shop_a, shop_b) = three_coupons(app).await;
    let r = app
        .order(order(
            "N1",
            "u1",
            &[&platform, &shop_a, &shop_b],
            two_shop_cart(),
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    (platform, shop_a, shop_b)
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    crate::common::fixtures::count(app, sql).await
}

#[tokio::test]
async fn a_compensation_naming_a_further_coupon_of_an_order_of_three_is_recorded_and_listed_with_it()
 {
    let app = spawn_app().await;
    let (_, _, shop_b) = paid_with_three(&app).await;
    let r = app
        .post(
            "/api/v1/users/u1/compensation-coupons",
            json!({"value_cents": 1000, "valid_seconds": 86400, "reason": "店铺B的券没抵扣",
                "order_no": "N1", "for_coupon_id": format!(" {shop_b} ")}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let given = r.id();
    // One that names no coupon lists null.
    let r = app
        .post(
            "/api/v1/users/u1/compensation-coupons",
            json!({"value_cents": 500, "valid_seconds": 86400, "reason": "物流延误",
                "order_no": "N1", "for_coupon_id": null}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.get("/api/v1/compensation-ledger?order_no=N1").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let entries = r.body["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(entries.len(), 2, "{}", r.text);
    // Newest first.
    assert_eq!(entries[0]["for_coupon_id"], Value::Null, "{}", r.text);
    assert!(
        entries[0]
            .as_object()
            .is_some_and(|e| e.contains_key("for_coupon_id")),
        "the field is there, null: {}",
        r.text
    );
    assert_eq!(entries[1]["coupon_id"], json!(given));
    assert_eq!(entries[1]["for_coupon_id"], json!(shop_b), "{}", r.text);
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT COUNT(*) FROM compensation_ledger WHERE for_coupon_id = '{shop_b}' AND coupon_id = '{given}'"
            )
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_compensation_naming_a_coupon_not_on_the_order_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    paid_with_three(&app).await;
    // Another coupon of the same customer, on no order.
    let other = coupon(&app, "u1", json!({"value_cents": 500})).await;
    let coupons_before = count(&app, "SELECT COUNT(*) FROM coupons").await;
    for named in [other.as_str(), "cpn_nope"] {
        let r = app
            .post(
                "/api/v1/users/u1/compensation-coupons",
                json!({"value_cents": 1000, "valid_seconds": 86400, "reason": "x",
                    "order_no": "N1", "for_coupon_id": named}),
            )
            .await;
        assert_eq!(
            (r.status, r.code()),
            (409, "coupon_not_on_order"),
            "{}",
            r.text
        );
    }
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM coupons").await,
        coupons_before,
        "no coupon issued"
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM outbox WHERE event_type = 'compensation.issued'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn for_coupon_id_without_an_order_is_a_bad_request_naming_it() {
    let app = spawn_app().await;
    let (_, shop_a, _) = paid_with_three(&app).await;
    for order_no in [Value::Null, json!("  ")] {
        let r = app
            .post(
                "/api/v1/users/u1/compensation-coupons",
                json!({"value_cents": 1000, "valid_seconds": 86400, "reason": "x",
                    "order_no": order_no, "for_coupon_id": shop_a}),
            )
            .await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert_eq!(
            (r.code(), r.field()),
            ("invalid_request", "for_coupon_id"),
            "{}",
            r.text
        );
    }
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );
}

#[tokio::test]
async fn a_paid_order_of_three_whose_further_coupon_left_used_is_flagged_by_that_coupons_code() {
    let app = spawn_app().await;
    let (_, _, shop_b) = paid_with_three(&app).await;
    let code = app.coupon(&shop_b).await["code"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    let r = app.get("/api/v1/orders/N1/health-check").await;
    assert_eq!(r.body["overall"], "ok", "{}", r.text);
    // Shop B's coupon moved out of `used` behind the order's back.
    crate::common::fixtures::plant(
        &app,
        &format!(
            "UPDATE coupons SET status = 'available', order_no = NULL, used_at = NULL \
             WHERE id = '{shop_b}'"
        ),
    )
    .await;
    let r = app.get("/api/v1/orders/N1/health-check").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_ne!(r.body["overall"], "ok", "{}", r.text);
    let status = r.body["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "coupon_status").cloned())
        .unwrap_or_default();
    assert_eq!(status["result"], "warning", "{status}");
    let zh = status["message_zh"].as_str().unwrap_or("");
    assert!(zh.starts_with(&format!("券 {code}：")), "{zh}");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains(&code)),
        "{status}"
    );
}
