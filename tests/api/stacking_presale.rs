//! Several coupons on a presale order over HTTP (API.md, "Several coupons
//! on one order" and "Allocation"): every coupon snapshotted and locked at
//! the deposit, the campaign's policy applied to each at the final
//! payment (an expired coupon under `strict` loses only its own discount;
//! under `swap_or_compensate` each is swapped or compensated), and every
//! coupon released with a cancelled order and returned with a refunded
//! one.

use crate::common::{TestApp, spawn_app};
use serde_json::{Value, json};

const TEN_DAYS: i64 = 10 * 24 * 3600;
/// The final-payment window opens an hour after the start.
const OPENS_IN: i64 = 3600;

fn line(id: &str, category: &str, shop: &str, q: i64, p: i64) -> Value {
    json!({"line_id": id, "sku": null, "category": category, "shop_id": shop,
        "quantity": q, "unit_price_cents": p})
}

/// Shop A: 2 × ¥100; shop B: ¥150 and ¥50. ¥400.00 in all.
fn cart() -> Vec<Value> {
    vec![
        line("a", "beauty", "A", 2, 10000),
        line("b", "beauty", "B", 1, 15000),
        line("c", "food", "B", 1, 5000),
    ]
}

async fn coupon(app: &TestApp, user: &str, overrides: Value) -> String {
    let t = app.template(overrides).await;
    let c = app
        .claim(user, t["id"].as_str().expect("template id"))
        .await;
    c["id"].as_str().expect("coupon id").to_string()
}

/// A platform 满300减30, shop A 满150减20 and shop B 满100减10, held by
/// u1, each valid `seconds` after its claim: `(platform, shop_a, shop_b)`.
async fn three(app: &TestApp, seconds: [i64; 3]) -> (String, String, String) {
    let platform = coupon(
        app,
        "u1",
        json!({"value_cents": 3000, "min_order_cents": 30000, "valid_seconds": seconds[0]}),
    )
    .await;
    let shop_a = coupon(
        app,
        "u1",
        json!({"value_cents": 2000, "min_order_cents": 15000, "shop_id": "A",
            "valid_seconds": seconds[1]}),
    )
    .await;
    let shop_b = coupon(
        app,
        "u1",
        json!({"value_cents": 1000, "min_order_cents": 10000, "shop_id": "B",
            "valid_seconds": seconds[2]}),
    )
    .await;
    (platform, shop_a, shop_b)
}

/// A `policy` campaign, and presale order P1 of [`cart`] with a ¥100
/// deposit and `coupons`, its deposit paid; the campaign's id.
async fn deposit_paid(app: &TestApp, policy: &str, coupons: &[&str]) -> String {
    let campaign = app.campaign(policy, OPENS_IN, 86400).await["id"]
        .as_str()
        .expect("campaign id")
        .to_string();
    let r = app
        .order(json!({"order_no": "P1", "user_id": "u1", "kind": "presale",
            "lines": cart(), "deposit_cents": 10000, "campaign_id": campaign,
            "coupon_ids": coupons}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    campaign
}

async fn status_of(app: &TestApp, coupon: &str) -> String {
    app.coupon(coupon).await["status"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// Each coupon's share of line `i` of `order`, sorted.
fn shares(order: &Value, i: usize) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = order["lines"][i]["discounts"]
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
        .unwrap_or_default();
    out.sort();
    out
}

/// The sum of `coupon`'s shares over the order's lines.
fn share_sum(order: &Value, coupon: &str) -> i64 {
    (0..3)
        .flat_map(|i| shares(order, i))
        .filter(|(id, _)| id == coupon)
        .map(|(_, c)| c)
        .sum()
}

#[tokio::test]
async fn a_presale_order_snapshots_and_locks_every_coupon_at_the_deposit_and_uses_them_at_the_final_payment()
 {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS; 3]).await;
    let campaign = app.campaign("strict", OPENS_IN, 86400).await["id"]
        .as_str()
        .expect("campaign id")
        .to_string();
    let r = app
        .order(json!({"order_no": "P1", "user_id": "u1", "kind": "presale",
            "lines": cart(), "deposit_cents": 10000, "campaign_id": campaign,
            "coupon_ids": [shop_a, platform, shop_b]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.body["coupon_lock_status"], "none",
        "locked at the deposit"
    );
    for id in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, id).await, "available");
    }
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_id"], platform);
    assert_eq!(r.body["coupon_discount_cents"], 6000);
    assert_eq!(r.body["discount_snapshot_cents"], 6000);
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
    assert_eq!(share_sum(&r.body, &platform), 3000);
    for id in [&platform, &shop_a, &shop_b] {
        let c = app.coupon(id).await;
        assert_eq!(
            (c["status"].as_str(), c["order_no"].as_str()),
            (Some("locked"), Some("P1"))
        );
    }
    app.advance(OPENS_IN);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.status, 200, "{}", q.text);
    assert_eq!(q.body["amount_due_cents"], 40000 - 10000 - 6000);
    assert_eq!(q.body["coupon_outcome"], "applied");
    let outcomes: Vec<&str> = q.body["coupons"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["outcome"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(outcomes, ["applied", "applied", "applied"]);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["final_payment_cents"], 24000);
    for id in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, id).await, "used");
    }
    let locks: Vec<&str> = r.body["coupons"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["lock_status"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(locks, ["used", "used", "used"]);
}

#[tokio::test]
async fn under_strict_an_expired_shop_coupon_loses_only_its_own_discount() {
    let app = spawn_app().await;
    // Shop A's coupon ends half an hour in, before the window opens.
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS, 1800, TEN_DAYS]).await;
    deposit_paid(&app, "strict", &[&platform, &shop_a, &shop_b]).await;
    app.advance(OPENS_IN);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.status, 200, "{}", q.text);
    let parts: Vec<(String, String, i64)> = q.body["coupons"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["coupon_id"].as_str().unwrap_or("").to_string(),
                        c["outcome"].as_str().unwrap_or("").to_string(),
                        c["discount_cents"].as_i64().unwrap_or(-1),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        parts,
        vec![
            (platform.clone(), "applied".into(), 3000),
            (shop_a.clone(), "no_discount_expired".into(), 0),
            (shop_b.clone(), "applied".into(), 1000),
        ]
    );
    assert_eq!(q.body["discount_cents"], 4000);
    assert_eq!(q.body["amount_due_cents"], 26000);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["final_payment_cents"], 26000);
    assert_eq!(r.body["coupon_discount_cents"], 4000);
    assert_eq!(
        r.body["coupons"][1],
        json!({"coupon_id": shop_a, "discount_cents": 0, "lock_status": "released",
            "compensation_cents": 0})
    );
    assert_eq!(status_of(&app, &shop_a).await, "expired");
    assert_eq!(status_of(&app, &platform).await, "used");
    assert_eq!(status_of(&app, &shop_b).await, "used");
    // Shop A's share left line a; the others' stayed as snapshotted.
    assert_eq!(share_sum(&r.body, &shop_a), 0);
    assert_eq!(share_sum(&r.body, &platform), 3000);
    assert_eq!(share_sum(&r.body, &shop_b), 1000);
    let payable: i64 = (0..3)
        .map(|i| r.body["lines"][i]["payable_cents"].as_i64().unwrap_or(-1))
        .sum();
    assert_eq!(payable, 40000 - 4000);
}

#[tokio::test]
async fn under_swap_or_compensate_each_expired_coupon_is_swapped_or_compensated_and_a_refund_undoes_both()
 {
    let app = spawn_app().await;
    // The platform coupon and shop B's end before the window opens.
    let (platform, shop_a, shop_b) = three(&app, [1800, TEN_DAYS, 1800]).await;
    // A platform 满300减35 can stand in for the platform coupon; nothing
    // can for shop B's (shop A's 满0减15 is of another shop).
    let stand_in = coupon(
        &app,
        "u1",
        json!({"value_cents": 3500, "min_order_cents": 30000, "valid_seconds": TEN_DAYS}),
    )
    .await;
    let other_shop = coupon(
        &app,
        "u1",
        json!({"value_cents": 1500, "min_order_cents": 0, "shop_id": "A",
            "valid_seconds": TEN_DAYS}),
    )
    .await;
    deposit_paid(&app, "swap_or_compensate", &[&platform, &shop_a, &shop_b]).await;
    app.advance(OPENS_IN);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.status, 200, "{}", q.text);
    assert_eq!(q.body["coupon_outcome"], "swapped");
    assert_eq!(q.body["replacement_coupon_id"], stand_in);
    assert_eq!(q.body["coupons"][2]["outcome"], "compensated");
    assert_eq!(q.body["coupons"][2]["compensation_cents"], 1000);
    assert_eq!(q.body["discount_cents"], 3500 + 2000);
    assert_eq!(q.body["compensation_cents"], 1000);
    assert_eq!(q.body["amount_due_cents"], 40000 - 10000 - 5500 - 1000);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["final_payment_cents"], 23500);
    assert_eq!(r.body["coupon_id"], stand_in);
    assert_eq!(r.body["replaced_coupon_id"], platform);
    assert_eq!(
        r.body["coupons"],
        json!([
            {"coupon_id": stand_in, "discount_cents": 3500, "lock_status": "used",
                "compensation_cents": 0, "replaced_coupon_id": platform},
            {"coupon_id": shop_a, "discount_cents": 2000, "lock_status": "used",
                "compensation_cents": 0},
            {"coupon_id": shop_b, "discount_cents": 0, "lock_status": "released",
                "compensation_cents": 1000},
        ])
    );
    assert_eq!(share_sum(&r.body, &platform), 0);
    assert_eq!(share_sum(&r.body, &stand_in), 3500);
    assert_eq!(status_of(&app, &platform).await, "expired");
    assert_eq!(status_of(&app, &shop_b).await, "expired");
    assert_eq!(status_of(&app, &stand_in).await, "used");
    assert_eq!(status_of(&app, &other_shop).await, "available");
    let ledger: Vec<(i64, String, Option<String>)> = sqlx::query_as(
        "SELECT amount_cents, kind, coupon_id FROM compensation_ledger WHERE order_no = 'P1'",
    )
    .fetch_all(app.db.db.pool())
    .await
    .expect("the ledger");
    assert_eq!(
        ledger,
        vec![(
            1000,
            "final_payment_deduction".to_string(),
            Some(shop_b.clone())
        )]
    );
    // The expired coupons still name the order; neither the health check
    // nor reconciliation takes them for strays.
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.body["anomalies"], json!([]), "{}", r.text);
    let r = app.get("/api/v1/orders/P1/health-check").await;
    let problems: Vec<&Value> = r.body["checks"]
        .as_array()
        .map(|cs| cs.iter().filter(|c| c["result"] == "problem").collect())
        .unwrap_or_default();
    assert!(problems.is_empty(), "{}", r.text);
    // The whole refund returns the coupons spent and reverses the
    // compensation.
    let r = app
        .post("/api/v1/orders/P1/refund", json!({"reason": "退货"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(status_of(&app, &stand_in).await, "available");
    assert_eq!(status_of(&app, &shop_a).await, "available");
    assert_eq!(status_of(&app, &shop_b).await, "expired");
    let net: (i64,) = sqlx::query_as(
        "SELECT CAST(SUM(amount_cents) AS BIGINT) FROM compensation_ledger WHERE order_no = 'P1'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("the ledger's sum");
    assert_eq!(net.0, 0, "the deduction reversed");
}

#[tokio::test]
async fn a_stand_in_whose_budget_cannot_take_its_discount_is_passed_over_and_the_coupon_compensated()
 {
    let app = spawn_app().await;
    // Only the platform coupon ends before the window opens.
    let (platform, shop_a, shop_b) = three(&app, [1800, TEN_DAYS, TEN_DAYS]).await;
    // A platform 满300减35 whose template's budget has ¥34.99: its lock
    // at the final payment would be refused, so it stands in for nothing.
    let over_budget = coupon(
        &app,
        "u1",
        json!({"value_cents": 3500, "min_order_cents": 30000, "valid_seconds": TEN_DAYS,
            "budget_cents": 3499}),
    )
    .await;
    deposit_paid(&app, "swap_or_compensate", &[&platform, &shop_a, &shop_b]).await;
    app.advance(OPENS_IN);
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.status, 200, "{}", q.text);
    assert_eq!(q.body["coupon_outcome"], "compensated", "{}", q.text);
    assert_eq!(q.body["replacement_coupon_id"], Value::Null);
    assert_eq!(q.body["compensation_cents"], 3000);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_id"], platform);
    assert_eq!(r.body["compensation_cents"], 3000);
    assert_eq!(r.body["final_payment_cents"], 40000 - 10000 - 3000 - 3000);
    assert_eq!(status_of(&app, &over_budget).await, "available");
    assert_eq!(status_of(&app, &platform).await, "expired");
}

#[tokio::test]
async fn cancelling_a_presale_order_after_its_deposit_releases_every_coupon() {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS; 3]).await;
    deposit_paid(&app, "lock", &[&platform, &shop_a, &shop_b]).await;
    let r = app.post("/api/v1/orders/P1/cancel", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for id in [&platform, &shop_a, &shop_b] {
        assert_eq!(status_of(&app, id).await, "available");
    }
    let locks: Vec<&str> = r.body["coupons"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["lock_status"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(locks, ["released", "released", "released"]);
}

#[tokio::test]
async fn a_coupon_of_several_taken_before_the_deposit_refuses_the_deposit_and_locks_nothing() {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS; 3]).await;
    let campaign = app.campaign("lock", OPENS_IN, 86400).await["id"]
        .as_str()
        .expect("campaign id")
        .to_string();
    let r = app
        .order(json!({"order_no": "P1", "user_id": "u1", "kind": "presale",
            "lines": cart(), "deposit_cents": 10000, "campaign_id": campaign,
            "coupon_ids": [platform, shop_a, shop_b]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    // Shop B's coupon goes on a normal order first.
    let r = app
        .order(json!({"order_no": "N1", "user_id": "u1", "kind": "normal",
            "lines": [line("x", "food", "B", 1, 20000)], "coupon_ids": [shop_b]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(r.code(), "coupon_not_available", "{}", r.text);
    assert_eq!(status_of(&app, &platform).await, "available");
    assert_eq!(status_of(&app, &shop_a).await, "available");
    assert_eq!(app.order_view("P1").await["status"], "pending_deposit");
}

#[tokio::test]
async fn the_picker_stacks_coupons_for_a_presale_cart_within_what_the_deposit_leaves() {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS; 3]).await;
    let campaign = app.campaign("lock", OPENS_IN, 86400).await["id"]
        .as_str()
        .expect("campaign id")
        .to_string();
    let ask = |deposit: i64| {
        json!({"kind": "presale", "lines": cart(), "deposit_cents": deposit,
            "campaign_id": campaign})
    };
    let r = app
        .post("/api/v1/users/u1/coupon-options", ask(10000))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let best = &r.body["best_combination"];
    assert_eq!(best["discount_cents"], 6000, "{}", r.text);
    assert_eq!(best["coupon_ids"][0], platform);
    let mut ids: Vec<&str> = best["coupon_ids"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    ids.sort_unstable();
    let mut want = vec![platform.as_str(), shop_a.as_str(), shop_b.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want);
    // A ¥360 deposit leaves ¥40: the discounts together stay within it.
    let r = app
        .post("/api/v1/users/u1/coupon-options", ask(36000))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["best_combination"]["discount_cents"], 4000,
        "{}",
        r.text
    );
}

#[tokio::test]
async fn the_health_check_names_the_coupon_of_several_that_ends_before_the_final_payment() {
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS, 1800, TEN_DAYS]).await;
    deposit_paid(&app, "strict", &[&platform, &shop_a, &shop_b]).await;
    let code = app.coupon(&shop_a).await["code"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    let r = app.get("/api/v1/orders/P1/health-check").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let checks = r.body["checks"].as_array().cloned().unwrap_or_default();
    assert_eq!(checks.len(), 6, "always six checks");
    let validity = checks
        .iter()
        .find(|c| c["name"] == "coupon_validity")
        .cloned()
        .unwrap_or_default();
    assert_eq!(validity["result"], "warning", "{validity}");
    let zh = validity["message_zh"].as_str().unwrap_or("");
    assert!(zh.starts_with(&format!("券 {code}：")), "{zh}");
    assert!(zh.contains("20.00"), "shop A's own discount: {zh}");
    assert_eq!(validity["action"]["amount_cents"], 2000, "{validity}");
    // With every coupon lasting, the check is ok.
    let app = spawn_app().await;
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS; 3]).await;
    deposit_paid(&app, "strict", &[&platform, &shop_a, &shop_b]).await;
    let r = app.get("/api/v1/orders/P1/health-check").await;
    assert_eq!(r.body["overall"], "ok", "{}", r.text);
}

#[tokio::test]
async fn the_policy_preview_judges_each_coupon_of_an_order_of_several_on_its_own_discount() {
    let app = spawn_app().await;
    // Shop A's coupon (20.00) ends before the window opens; the others
    // last.
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS, 1800, TEN_DAYS]).await;
    let campaign = deposit_paid(&app, "lock", &[&platform, &shop_a, &shop_b]).await;
    let preview = app
        .service
        .preview_policy_change(
            &couponkeeper::domain::ids::CampaignId::from_wire(&campaign),
            "swap_or_compensate",
        )
        .await
        .expect("a preview");
    let f = &preview.figures;
    assert_eq!(
        (f.orders_read, f.coupons_past_end, f.changed_orders),
        (1, 1, 1)
    );
    // Under swap_or_compensate with no stand-in assumed, shop A's own
    // 20.00 is compensated: not the order's 60.00.
    assert_eq!(f.extra_compensation_cents, 2000);
    let changes: Vec<(&str, &str, u64)> = f
        .changes
        .iter()
        .map(|c| (c.from.as_str(), c.to.as_str(), c.orders))
        .collect();
    assert_eq!(changes, [("applied", "compensated", 1)]);
}

#[tokio::test]
async fn after_a_strict_final_payment_the_health_check_suggests_compensating_the_further_coupon_that_lost_its_discount()
 {
    let app = spawn_app().await;
    // Shop A's coupon (20.00) ends before the window opens.
    let (platform, shop_a, shop_b) = three(&app, [TEN_DAYS, 1800, TEN_DAYS]).await;
    deposit_paid(&app, "strict", &[&platform, &shop_a, &shop_b]).await;
    app.advance(OPENS_IN);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let code = app.coupon(&shop_a).await["code"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    let validity = |report: &Value| {
        report["checks"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "coupon_validity").cloned())
            .unwrap_or_default()
    };
    let r = app.get("/api/v1/orders/P1/health-check").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let v = validity(&r.body);
    assert_eq!(v["result"], "warning", "{v}");
    let zh = v["message_zh"].as_str().unwrap_or("");
    assert!(zh.starts_with(&format!("券 {code}：")), "{zh}");
    assert_eq!(v["action"]["code"], "issue_compensation", "{v}");
    assert_eq!(v["action"]["amount_cents"], 2000, "its own snapshot: {v}");
    assert_eq!(v["action"]["coupon_id"], json!(shop_a), "{v}");
    // Compensated for that coupon: the check says so and suggests nothing.
    let r = app
        .post(
            "/api/v1/users/u1/compensation-coupons",
            json!({"value_cents": 2000, "valid_seconds": 86400, "reason": "店铺A的券尾款前过期",
                "order_no": "P1", "for_coupon_id": shop_a}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.get("/api/v1/orders/P1/health-check").await;
    let v = validity(&r.body);
    assert_eq!(v["result"], "ok", "{v}");
    assert!(v["action"].is_null(), "{v}");
    assert_eq!(r.body["overall"], "ok", "{}", r.text);
}
