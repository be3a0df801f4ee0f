//! Support operations through the real HTTP app (and, for staff
//! authorities, the service the console calls): the one-click health check
//! for each anomaly kind of API.md, releasing stuck locks, invalidating
//! coupons, compensation coupons with their caps, and the console's search,
//! keyset lists and CSV export. Every test runs on a fresh database of the
//! store chosen by `COUPONKEEPER_TEST_STORE`.

use std::collections::HashSet;

use crate::common::fixtures::{self, deposit_paid_under as deposit_paid, plant, user_with_coupon};
use crate::common::{Store, TestApp, normal_order, spawn_app, store};
use chrono::Duration;
use couponkeeper::domain::compensation::{CompensationInput, CompensationRequest};
use couponkeeper::domain::coupon::CouponStatus;
use couponkeeper::domain::filters::{CouponExportQuery, CouponFilterInput, CouponListQuery};
use couponkeeper::domain::ids::{CouponId, TemplateId, UserId};
use couponkeeper::domain::staff::{Role, StaffName};
use couponkeeper::service::support::{Authority, MoreMatches, SearchOutcome};
use couponkeeper::service::{Ctx, ServiceError};
use couponkeeper::store::search::{CouponPageQuery, explain_coupon_page};
use serde_json::{Value, json};

/// The columns `coupons` and `coupons_archive` share and a row is copied
/// by (not `c.*`: the generated search key cannot be written).
const COUPON_COLUMNS: &str = "id, code, user_id, template_id, source, kind, value_cents, \
     percent_off, max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, \
     order_no, locked_at, used_at, created_at, updated_at";

async fn scalar(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(app.db.db.pool())
        .await
        .expect("a number")
}

async fn health(app: &TestApp, order_no: &str) -> Value {
    let r = app
        .get(&format!("/api/v1/orders/{order_no}/health-check"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("check {name} in {report:#}"))
}

/// (result, suggested_action) of one check.
fn outcome(report: &Value, name: &str) -> (String, Option<String>) {
    let c = check(report, name);
    (
        c["result"].as_str().unwrap_or("").to_string(),
        c["suggested_action"].as_str().map(String::from),
    )
}

fn staff(name: &str, role: Role) -> (Ctx, Authority) {
    let name = StaffName::parse(name).expect("staff name");
    (
        Ctx::new(name.actor(), None),
        Authority::Staff { name, role },
    )
}

fn last_event(v: &Value) -> Value {
    v["events"]
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or(Value::Null)
}

const NAMES: [&str; 6] = [
    "order_status",
    "coupon_status",
    "lock_link",
    "coupon_validity",
    "checkout_lock",
    "template_stock",
];

#[tokio::test]
async fn a_healthy_presale_order_is_ok_under_every_policy_and_tells_the_customer_what_they_get() {
    let app = spawn_app().await;
    for (i, policy) in ["lock", "strict", "swap_or_compensate"].iter().enumerate() {
        let no = format!("P{i}");
        deposit_paid(&app, &no, &format!("u{i}"), policy, 10 * 24 * 3600).await;
        let r = health(&app, &no).await;
        let names: Vec<&str> = r["checks"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, NAMES);
        assert_eq!(r["overall"], "ok", "{policy}: {r:#}");
        assert_eq!(r["order_no"], no.as_str());
        let c = check(&r, "coupon_status");
        assert_eq!(
            c["message_zh"],
            format!("这张券已为订单 {no} 锁定，付尾款时自动抵扣 50.00 元。")
        );
        assert!(
            c["message"]
                .as_str()
                .is_some_and(|m| m.contains("50.00 yuan"))
        );
        assert!(c["suggested_action"].is_null());
    }
}

#[tokio::test]
async fn a_coupon_ending_before_the_final_payment_is_explained_by_the_campaign_policy() {
    let app = spawn_app().await;
    let mut seen = Vec::new();
    let mut coupons = Vec::new();
    for (i, policy) in ["lock", "strict", "swap_or_compensate"].iter().enumerate() {
        let no = format!("P{i}");
        coupons.push(deposit_paid(&app, &no, &format!("u{i}"), policy, 30).await);
        seen.push(outcome(&health(&app, &no).await, "coupon_validity"));
    }
    assert_eq!(
        seen,
        vec![
            ("ok".to_string(), None),
            (
                "warning".to_string(),
                Some("issue_compensation".to_string())
            ),
            ("ok".to_string(), None),
        ]
    );
    let r = health(&app, "P1").await;
    let action = &check(&r, "coupon_validity")["action"];
    // The coupon whose discount is lost is named, for `for_coupon_id`.
    assert_eq!(
        action,
        &json!({"code": "issue_compensation", "user_id": "u1", "order_no": "P1", "amount_cents": 5000,
            "coupon_id": coupons[1]})
    );
    assert_eq!(r["overall"], "warning");
}

#[tokio::test]
async fn a_coupon_locked_to_a_closed_or_refunded_order_is_a_problem_and_releasing_it_heals_the_order()
 {
    let app = spawn_app().await;
    for (no, status) in [("P1", "closed"), ("P2", "refunded")] {
        let cid = deposit_paid(&app, no, &format!("user-{no}"), "lock", 10 * 24 * 3600).await;
        plant(
            &app,
            &format!("UPDATE orders SET status = '{status}' WHERE order_no = '{no}'"),
        )
        .await;
        let r = health(&app, no).await;
        assert_eq!(r["overall"], "problem");
        assert_eq!(
            outcome(&r, "coupon_status"),
            ("problem".into(), Some("release_coupon".into()))
        );
        assert_eq!(
            check(&r, "coupon_status")["action"]["coupon_id"],
            cid.as_str()
        );
        let rel = app
            .post(
                &format!("/api/v1/coupons/{cid}/release"),
                json!({"reason": "order is over, lock left behind"}),
            )
            .await;
        assert_eq!(rel.status, 200, "{}", rel.text);
        assert_eq!(rel.body["status"], "available");
        assert!(rel.body["order_no"].is_null());
        assert_eq!(health(&app, no).await["overall"], "ok");
    }
}

#[tokio::test]
async fn a_live_order_whose_coupon_was_freed_is_a_problem_repaired_by_relocking_it() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 10 * 24 * 3600).await;
    plant(
        &app,
        &format!(
            "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL WHERE id = '{cid}'"
        ),
    )
    .await;
    let r = health(&app, "P1").await;
    assert_eq!(
        outcome(&r, "coupon_status"),
        ("problem".into(), Some("repair_link".into()))
    );
    assert_eq!(
        check(&r, "coupon_status")["action"],
        json!({"code": "repair_link", "order_no": "P1", "coupon_id": cid})
    );
    assert_eq!(r["overall"], "problem");
    let fixed = app
        .post(
            "/api/v1/orders/P1/repair-coupon-link",
            json!({"coupon_id": cid, "reason": "coupon freed by a bug"}),
        )
        .await;
    assert_eq!(fixed.status, 200, "{}", fixed.text);
    assert_eq!(fixed.body["coupon_lock_status"], "locked");
    assert_eq!(app.coupon(&cid).await["status"], "locked");
    assert_eq!(app.coupon(&cid).await["order_no"], "P1");
    assert_eq!(health(&app, "P1").await["overall"], "ok");
    // Nothing left to repair: refused, nothing changes.
    let again = app
        .post(
            "/api/v1/orders/P1/repair-coupon-link",
            json!({"coupon_id": cid, "reason": "again"}),
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_eq!(again.code(), "repair_not_applicable");
}

#[tokio::test]
async fn a_live_order_whose_freed_coupon_has_ended_is_a_problem_suggesting_compensation() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 3600).await;
    plant(
        &app,
        &format!(
            "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL WHERE id = '{cid}'"
        ),
    )
    .await;
    app.advance(3601);
    let r = health(&app, "P1").await;
    assert_eq!(
        check(&r, "coupon_status")["action"],
        json!({"code": "issue_compensation", "user_id": "u1", "order_no": "P1", "amount_cents": 5000,
            "coupon_id": cid})
    );
}

#[tokio::test]
async fn a_paid_order_pointing_at_the_wrong_coupon_is_relinked_to_the_one_it_used() {
    let app = spawn_app().await;
    let used = user_with_coupon(&app, "u1", 3600).await;
    let other = user_with_coupon(&app, "u1", 3600).await;
    let r = app
        .order(normal_order("N1", "u1", Some(&used), 39900))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    plant(
        &app,
        &format!("UPDATE orders SET coupon_id = '{other}' WHERE order_no = 'N1'"),
    )
    .await;
    let r = health(&app, "N1").await;
    assert_eq!(
        outcome(&r, "lock_link"),
        ("problem".into(), Some("repair_link".into()))
    );
    assert_eq!(check(&r, "lock_link")["action"]["coupon_id"], used.as_str());
    // Another customer's coupon or the wrong one is refused.
    let wrong = app
        .post(
            "/api/v1/orders/N1/repair-coupon-link",
            json!({"coupon_id": other, "reason": "x"}),
        )
        .await;
    assert_eq!(wrong.status, 409, "{}", wrong.text);
    let fixed = app
        .post(
            "/api/v1/orders/N1/repair-coupon-link",
            json!({"coupon_id": used, "reason": "order re-pointed by a bad script"}),
        )
        .await;
    assert_eq!(fixed.status, 200, "{}", fixed.text);
    assert_eq!(fixed.body["coupon_id"], used.as_str());
    assert_eq!(fixed.body["coupon_lock_status"], "used");
    assert_eq!(health(&app, "N1").await["overall"], "ok");
    let o = app.order_view("N1").await;
    let events = o["events"].as_array().cloned().unwrap_or_default();
    assert!(events.iter().any(
        |e| e["action"] == "relink_coupon" && e["reason"] == "order re-pointed by a bad script"
    ));
}

#[tokio::test]
async fn a_coupon_bound_to_another_order_breaks_the_lock_link() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 10 * 24 * 3600).await;
    let r = app.order(normal_order("N2", "u1", None, 1000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N2/cancel", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    plant(
        &app,
        &format!("UPDATE coupons SET order_no = 'N2' WHERE id = '{cid}'"),
    )
    .await;
    let r = health(&app, "P1").await;
    assert_eq!(
        outcome(&r, "lock_link"),
        ("problem".into(), Some("release_coupon".into()))
    );
    assert!(
        check(&r, "lock_link")["message"]
            .as_str()
            .is_some_and(|m| m.contains("N2"))
    );
    // The coupon names P1 but P1 names none: P1 sees a stray lock.
    let cid2 = user_with_coupon(&app, "u1", 3600).await;
    let r = app.order(normal_order("N3", "u1", None, 1000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    plant(
        &app,
        &format!("UPDATE coupons SET status = 'locked', order_no = 'N3', locked_at = 1 WHERE id = '{cid2}'"),
    )
    .await;
    let r = health(&app, "N3").await;
    assert_eq!(
        outcome(&r, "lock_link"),
        ("problem".into(), Some("release_coupon".into()))
    );
    assert_eq!(check(&r, "lock_link")["action"]["coupon_id"], cid2.as_str());
}

#[tokio::test]
async fn a_lapsed_checkout_lock_is_a_problem_and_its_coupon_can_be_released_without_force() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 3600).await;
    let r = app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(health(&app, "N1").await["overall"], "ok");
    app.advance(901);
    let r = health(&app, "N1").await;
    assert_eq!(
        outcome(&r, "checkout_lock"),
        ("problem".into(), Some("release_coupon".into()))
    );
    assert_eq!(
        outcome(&r, "order_status"),
        ("problem".into(), Some("cancel_order".into()))
    );
    let rel = app
        .post(
            &format!("/api/v1/coupons/{cid}/release"),
            json!({"reason": "checkout lock lapsed"}),
        )
        .await;
    assert_eq!(rel.status, 200, "{}", rel.text);
    assert_eq!(rel.body["status"], "available");
    let o = app.order_view("N1").await;
    assert_eq!(o["coupon_lock_status"], "released");
    assert_eq!(o["status"], "pending_payment");
    assert_eq!(outcome(&health(&app, "N1").await, "checkout_lock").0, "ok");
}

#[tokio::test]
async fn an_unknown_order_has_no_health_check_and_the_route_needs_a_token() {
    let app = spawn_app().await;
    let r = app.get("/api/v1/orders/NOPE/health-check").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app.get_as("/api/v1/orders/NOPE/health-check", None).await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn the_template_stock_check_reports_the_last_reconciliations_verdict() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 3600).await;
    let r = app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let before = health(&app, "N1").await;
    assert_eq!(outcome(&before, "template_stock").0, "ok");
    assert!(
        check(&before, "template_stock")["message"]
            .as_str()
            .is_some_and(|m| m.contains("has not checked"))
    );
    plant(
        &app,
        "UPDATE template_stock_shards SET claimed = claimed + 1 WHERE shard = 0",
    )
    .await;
    // The check does not count the template's coupons itself (that grows
    // with the template): it reads what the last reconciliation found.
    app.service
        .run_reconciliation("job:reconcile")
        .await
        .expect("reconcile");
    let after = health(&app, "N1").await;
    assert_eq!(outcome(&after, "template_stock").0, "warning");
    assert!(
        check(&after, "template_stock")["message"]
            .as_str()
            .is_some_and(|m| m.contains("2 claimed but 1 coupons"))
    );
}

#[tokio::test]
async fn releasing_the_coupon_of_a_live_order_is_refused_unless_forced_and_forcing_detaches_it() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 10 * 24 * 3600).await;
    let path = format!("/api/v1/coupons/{cid}/release");
    let r = app.post(&path, json!({"reason": "customer asked"})).await;
    assert_eq!((r.status, r.code()), (409, "order_active"), "{}", r.text);
    assert_eq!(app.coupon(&cid).await["status"], "locked");
    let r = app
        .post(&path, json!({"reason": "customer asked", "force": false}))
        .await;
    assert_eq!(r.code(), "order_active");
    let r = app
        .post(&path, json!({"reason": "customer asked", "force": true}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "available");
    let c = app.coupon(&cid).await;
    let e = last_event(&c);
    assert_eq!(e["action"], "force_release");
    assert_eq!(e["reason"], "customer asked");
    assert!(e["actor"].as_str().is_some_and(|a| a.starts_with("api:")));
    let o = app.order_view("P1").await;
    assert_eq!(o["coupon_lock_status"], "released");
    assert!(o["coupon_id"].is_null());
    assert_eq!(o["status"], "deposit_paid");
    assert_eq!(o["amount_due_cents"], 29900, "no discount any more");
    let e = o["events"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["action"] == "force_release_coupon"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(e["reason"], "customer asked");
    assert_eq!(e["coupon_id"], cid.as_str());
    // The order proceeds without the coupon.
    app.advance(61);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["final_payment_cents"], 29900);
}

#[tokio::test]
async fn a_forced_release_stays_recorded_on_a_presale_order_after_its_final_payment() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 10 * 24 * 3600).await;
    let r = app
        .post(
            &format!("/api/v1/coupons/{cid}/release"),
            json!({"reason": "customer asked", "force": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(61);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Found by tests/api/model.rs: the final payment wrote `none`, as if the
    // order had never had a coupon; a normal order's payment keeps
    // `released`.
    assert_eq!(
        (
            r.body["status"].as_str(),
            r.body["coupon_lock_status"].as_str(),
            r.body["coupon_id"].is_null()
        ),
        (Some("final_paid"), Some("released"), true)
    );
    assert_eq!(app.order_view("P1").await["coupon_lock_status"], "released");
}

#[tokio::test]
async fn a_forced_release_on_a_checkout_lets_the_order_be_paid_in_full_without_the_coupon() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 3600).await;
    let r = app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post(
            &format!("/api/v1/coupons/{cid}/release"),
            json!({"reason": "wrong coupon", "force": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let o = app.order_view("N1").await;
    assert_eq!(
        (
            o["coupon_id"].is_null(),
            o["coupon_lock_status"].as_str(),
            o["amount_due_cents"].as_i64(),
            o["checkout_lock_expires_at"].is_null()
        ),
        (true, Some("released"), Some(39900), true)
    );
    assert_eq!(health(&app, "N1").await["overall"], "ok");
    app.advance(3600);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(app.coupon(&cid).await["status"], "expired");
}

#[tokio::test]
async fn a_released_coupon_past_its_end_becomes_expired() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 30).await;
    app.advance(40);
    let r = app
        .post(
            &format!("/api/v1/coupons/{cid}/release"),
            json!({"reason": "stuck", "force": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "expired");
    let stored: String = sqlx::query_scalar("SELECT status FROM coupons WHERE id = $1")
        .bind(&cid)
        .fetch_one(app.db.db.pool())
        .await
        .expect("row");
    assert_eq!(stored, "expired");
}

#[tokio::test]
async fn only_a_locked_coupon_can_be_released_and_an_unknown_one_is_not_found() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 3600).await;
    let r = app
        .post(
            &format!("/api/v1/coupons/{cid}/release"),
            json!({"reason": "x", "force": true}),
        )
        .await;
    assert_eq!((r.status, r.code()), (409, "coupon_not_available"));
    let r = app
        .post("/api/v1/coupons/cpn_none/release", json!({"reason": "x"}))
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
}

#[tokio::test]
async fn support_staff_may_release_stuck_locks_but_not_force_and_operators_may_force() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 10 * 24 * 3600).await;
    let (ctx, amy) = staff("amy", Role::Support);
    let r = app
        .service
        .release_coupon(
            &ctx,
            &amy,
            None,
            cid.as_str().into(),
            Some("asked".into()),
            true,
        )
        .await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
    let r = app
        .service
        .release_coupon(
            &ctx,
            &amy,
            None,
            cid.as_str().into(),
            Some("asked".into()),
            false,
        )
        .await;
    assert!(
        matches!(&r, Err(ServiceError::Refused { refusal, .. }) if refusal.code() == "order_active"),
        "{r:?}"
    );
    let (octx, olga) = staff("olga", Role::Operator);
    let v = app
        .service
        .release_coupon(
            &octx,
            &olga,
            None,
            cid.as_str().into(),
            Some("asked".into()),
            true,
        )
        .await
        .expect("operator forces")
        .fresh()
        .expect("fresh");
    assert_eq!(v.status, CouponStatus::Available);
    assert_eq!(last_event(&app.coupon(&cid).await)["actor"], "staff:olga");
}

#[tokio::test]
async fn an_available_coupon_can_be_invalidated_but_not_a_locked_used_or_expired_one() {
    let app = spawn_app().await;
    let ok = user_with_coupon(&app, "u1", 3600).await;
    let r = app
        .post(
            &format!("/api/v1/coupons/{ok}/invalidate"),
            json!({"reason": "issued by mistake"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "invalidated");
    let e = last_event(&app.coupon(&ok).await);
    assert_eq!(
        (e["action"].as_str(), e["reason"].as_str()),
        (Some("invalidate"), Some("issued by mistake"))
    );
    let again = app
        .post(
            &format!("/api/v1/coupons/{ok}/invalidate"),
            json!({"reason": "twice"}),
        )
        .await;
    assert_eq!(again.code(), "coupon_not_available");

    let locked = user_with_coupon(&app, "u2", 3600).await;
    let r = app
        .order(normal_order("N1", "u2", Some(&locked), 39900))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let used = user_with_coupon(&app, "u3", 3600).await;
    let r = app
        .order(normal_order("N2", "u3", Some(&used), 39900))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N2/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let expired = user_with_coupon(&app, "u4", 10).await;
    app.advance(11);
    for id in [&locked, &used, &expired] {
        let r = app
            .post(
                &format!("/api/v1/coupons/{id}/invalidate"),
                json!({"reason": "no"}),
            )
            .await;
        assert_eq!((r.status, r.code()), (409, "coupon_not_available"), "{id}");
    }
    assert_eq!(app.coupon(&locked).await["status"], "locked");
    let (ctx, amy) = staff("amy", Role::Support);
    let fresh = user_with_coupon(&app, "u5", 3600).await;
    let r = app
        .service
        .invalidate_coupon(&ctx, &amy, None, fresh.as_str().into(), Some("no".into()))
        .await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
}

#[tokio::test]
async fn a_compensation_coupon_is_issued_outside_any_stock_and_recorded_in_the_ledger() {
    let app = spawn_app().await;
    let r = app.order(normal_order("N1", "u1", None, 5000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post(
            "/api/v1/users/u1/compensation-coupons",
            json!({"value_cents": 1234, "valid_seconds": 86400, "reason": "late delivery", "order_no": "N1"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let c = &r.body;
    assert_eq!(c["source"], "compensation");
    assert!(c["template_id"].is_null());
    assert_eq!(c["value_cents"], 1234);
    assert_eq!(c["status"], "available");
    assert_eq!(c["user_id"], "u1");
    assert_eq!(c["ends_at"], "2026-11-12T00:00:00.000Z");
    let id = r.id();
    let (n, sum): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM compensation_ledger
         WHERE kind = 'coupon' AND coupon_id = $1 AND order_no = 'N1' AND reason = 'late delivery' AND actor LIKE 'api:%'",
    )
    .bind(&id)
    .fetch_one(app.db.db.pool())
    .await
    .expect("ledger");
    assert_eq!((n, sum), (1, 1234));
    let e = last_event(&app.coupon(&id).await);
    assert_eq!(
        (e["action"].as_str(), e["reason"].as_str()),
        (Some("compensation"), Some("late delivery"))
    );
    assert_eq!(
        scalar(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM outbox WHERE event_type = 'compensation.issued'"
        )
        .await,
        1
    );
    // Usable like any coupon.
    let r = app.order(normal_order("N2", "u1", Some(&id), 2000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.body["coupon_discount_cents"], 1234);
}

#[tokio::test]
async fn compensation_for_someone_elses_or_an_unknown_order_is_refused_and_writes_nothing() {
    let app = spawn_app().await;
    let r = app.order(normal_order("N1", "u1", None, 5000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let body = |no: &str| json!({"value_cents": 100, "valid_seconds": 3600, "reason": "x", "order_no": no});
    let r = app
        .post("/api/v1/users/u2/compensation-coupons", body("N1"))
        .await;
    assert_eq!((r.status, r.code()), (409, "order_not_owned"));
    let r = app
        .post("/api/v1/users/u2/compensation-coupons", body("NOPE"))
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    assert_eq!(
        scalar(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons").await,
        0
    );
    assert_eq!(
        scalar(
            &app,
            "SELECT CAST(COUNT(*) AS BIGINT) FROM compensation_ledger"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn support_staff_are_capped_per_coupon_and_per_utc_day_and_operators_are_not() {
    let app = spawn_app().await;
    let (ctx, amy) = staff("amy", Role::Support);
    let issue = |value: i64| {
        CompensationRequest::parse(CompensationInput {
            value_cents: Some(value),
            valid_seconds: Some(3600),
            reason: Some("goodwill".into()),
            order_no: None,
            preset_id: None,
            for_coupon_id: None,
        })
        .expect("a well-formed compensation")
    };
    let refused = |r: &Result<_, ServiceError>| matches!(r, Err(ServiceError::Refused { refusal, .. }) if refusal.code() == "compensation_limit_exceeded");
    let r = app
        .service
        .issue_compensation(&ctx, &amy, None, fixtures::user("u1"), issue(5001))
        .await;
    assert!(refused(&r), "{r:?}");
    for _ in 0..4 {
        app.service
            .issue_compensation(&ctx, &amy, None, fixtures::user("u1"), issue(5000))
            .await
            .expect("within the caps");
    }
    let r = app
        .service
        .issue_compensation(&ctx, &amy, None, fixtures::user("u1"), issue(1))
        .await;
    assert!(refused(&r), "20000 a day: {r:?}");
    assert_eq!(
        scalar(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons").await,
        4,
        "a refusal writes nothing"
    );
    assert_eq!(
        scalar(&app, "SELECT CAST(SUM(amount_cents) AS BIGINT) FROM compensation_ledger WHERE actor = 'staff:amy'").await,
        20000
    );
    // Another support member has a cap of their own; an operator has none.
    let (bctx, bob) = staff("bob", Role::Support);
    app.service
        .issue_compensation(&bctx, &bob, None, fixtures::user("u1"), issue(5000))
        .await
        .expect("bob's own cap");
    let (octx, olga) = staff("olga", Role::Operator);
    app.service
        .issue_compensation(&octx, &olga, None, fixtures::user("u1"), issue(1_000_000))
        .await
        .expect("operators are not capped");
    // "A day" is the business day (Asia/Shanghai by default): the epoch is
    // 08:00 there, so 23:59:59 local (15:59:59 UTC) is still today and
    // 16:00 UTC, local midnight, starts afresh.
    app.clock
        .advance(Duration::seconds(15 * 3600 + 59 * 60 + 59));
    let r = app
        .service
        .issue_compensation(&ctx, &amy, None, fixtures::user("u1"), issue(1))
        .await;
    assert!(refused(&r), "still the same business day: {r:?}");
    app.clock.advance(Duration::seconds(1));
    app.service
        .issue_compensation(&ctx, &amy, None, fixtures::user("u1"), issue(5000))
        .await
        .expect("a new business day");
}

#[tokio::test]
async fn a_compensation_retried_with_its_idempotency_key_is_issued_once() {
    let app = spawn_app().await;
    let body = json!({"value_cents": 500, "valid_seconds": 3600, "reason": "sorry"});
    let a = app
        .post_idem("/api/v1/users/u1/compensation-coupons", "k-1", body.clone())
        .await;
    let b = app
        .post_idem("/api/v1/users/u1/compensation-coupons", "k-1", body)
        .await;
    assert_eq!((a.status, b.status), (201, 201), "{}", b.text);
    assert_eq!(a.id(), b.id());
    assert_eq!(
        b.headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(
        scalar(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons").await,
        1
    );
}

#[tokio::test]
async fn bad_input_is_a_400_naming_the_field_never_a_500() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "u1", 3600).await;
    let rel_path = format!("/api/v1/coupons/{cid}/release");
    let inv_path = format!("/api/v1/coupons/{cid}/invalidate");
    let (rel, inv) = (rel_path.as_str(), inv_path.as_str());
    let comp = "/api/v1/users/u1/compensation-coupons";
    let long = "x".repeat(501);
    let ok = json!({"value_cents": 100, "valid_seconds": 3600, "reason": "r"});
    let cases: Vec<(&str, Value, &str)> = vec![
        (rel, json!({}), "reason"),
        (rel, json!({"reason": "  "}), "reason"),
        (rel, json!({"reason": long}), "reason"),
        (rel, json!({"reason": "r", "force": "yes"}), "force"),
        (rel, json!({"reason": 5}), "reason"),
        (inv, json!({}), "reason"),
        (inv, json!({"reason": ["a"]}), "reason"),
        (
            comp,
            json!({"valid_seconds": 3600, "reason": "r"}),
            "value_cents",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"value_cents": 0})),
            "value_cents",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"value_cents": -5})),
            "value_cents",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"value_cents": 1_000_000_000_001_i64})),
            "value_cents",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"value_cents": 1.5})),
            "value_cents",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"value_cents": "100"})),
            "value_cents",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"value_cents": 1e30})),
            "value_cents",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"valid_seconds": 59})),
            "valid_seconds",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"valid_seconds": 365 * 86400 + 1})),
            "valid_seconds",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"valid_seconds": null})),
            "valid_seconds",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"reason": null})),
            "reason",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"order_no": "a b"})),
            "order_no",
        ),
        (
            comp,
            crate::common::merge(ok.clone(), json!({"order_no": "x".repeat(129)})),
            "order_no",
        ),
    ];
    for (path, body, field) in cases {
        let r = app.post(path, body.clone()).await;
        assert_eq!(
            (r.status, r.code(), r.field()),
            (400, "invalid_request", field),
            "{path} {body}: {}",
            r.text
        );
    }
    let long_user = format!("/api/v1/users/{}/compensation-coupons", "u".repeat(129));
    let r = app.post(&long_user, ok.clone()).await;
    assert_eq!((r.status, r.field()), (400, "user_id"), "{}", r.text);
    for raw in ["not json", "[1,2]", "{\"reason\":", "null"] {
        let r = app
            .post_raw(rel, raw, &[("authorization", "Bearer test-token")])
            .await;
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_request"),
            "{raw}: {}",
            r.text
        );
    }
    let r = app
        .post_raw(
            comp,
            ok.to_string(),
            &[
                ("authorization", "Bearer test-token"),
                ("idempotency-key", ""),
            ],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    // Nothing was written by any of it.
    assert_eq!(app.coupon(&cid).await["status"], "available");
    assert_eq!(
        scalar(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons").await,
        1
    );

    // The console's reads refuse bad input the same way.
    let svc = &app.service;
    let field = |r: Result<(), ServiceError>| match r {
        Err(ServiceError::Invalid(f)) => f.field,
        other => panic!("expected a field error, got {other:?}"),
    };
    assert_eq!(field(svc.search("  ").await.map(|_| ())), "q");
    assert_eq!(field(svc.search(&"q".repeat(200)).await.map(|_| ())), "q");
    for limit in [0, 201, -1] {
        assert_eq!(
            field(
                match CouponListQuery::parse(limit, CouponFilterInput::default()) {
                    Ok(q) => svc.list_coupons(q, None).await.map(|_| ()),
                    Err(e) => Err(e.into()),
                }
            ),
            "limit"
        );
    }
    assert_eq!(
        field(
            svc.list_coupons(
                CouponListQuery::parse(10, CouponFilterInput::default()).expect("a page query"),
                Some("garbage".into())
            )
            .await
            .map(|_| ())
        ),
        "after"
    );
    let long_filter = CouponFilterInput {
        template_id: Some("t".repeat(200)),
        ..CouponFilterInput::default()
    };
    assert_eq!(
        field(match CouponListQuery::parse(10, long_filter) {
            Ok(q) => svc.list_coupons(q, None).await.map(|_| ()),
            Err(e) => Err(e.into()),
        }),
        "template_id"
    );
    assert_eq!(
        field(
            match CouponExportQuery::parse(0, CouponFilterInput::default()) {
                Ok(q) => svc
                    .export_coupons_csv(q, couponkeeper::i18n::Lang::Zh)
                    .await
                    .map(|_| ()),
                Err(e) => Err(e.into()),
            }
        ),
        "max_rows"
    );
    assert_eq!(
        field(match UserId::parse("") {
            Ok(u) => svc.user_overview(&u).await.map(|_| ()),
            Err(e) => Err(e.into()),
        }),
        "user_id"
    );
    assert_eq!(
        field(match UserId::parse("a b") {
            Ok(u) => svc.user_health_check(&u).await.map(|_| ()),
            Err(e) => Err(e.into()),
        }),
        "user_id"
    );
}

#[tokio::test]
async fn search_finds_coupons_by_id_or_code_orders_and_users_in_one_box() {
    let app = spawn_app().await;
    let cid = user_with_coupon(&app, "alice", 3600).await;
    let code = app.coupon(&cid).await["code"]
        .as_str()
        .expect("code")
        .to_string();
    let r = app.order(normal_order("ORD-1", "alice", None, 1000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let svc = &app.service;
    assert_eq!(
        svc.search(&cid).await.expect("search"),
        SearchOutcome::Coupon(cid.as_str().into())
    );
    assert_eq!(
        svc.search(&format!("  {}  ", code.to_lowercase()))
            .await
            .expect("search"),
        SearchOutcome::Coupon(cid.as_str().into())
    );
    assert_eq!(
        svc.search(&code.replace('-', "")).await.expect("search"),
        SearchOutcome::Coupon(cid.as_str().into())
    );
    assert_eq!(
        svc.search("ORD-1").await.expect("search"),
        SearchOutcome::Order(fixtures::order("ORD-1"))
    );
    assert_eq!(
        svc.search("alice").await.expect("search"),
        SearchOutcome::User(fixtures::user("alice"))
    );
    assert_eq!(
        svc.search("nobody").await.expect("search"),
        SearchOutcome::Nothing
    );
    // A user whose id is also an order number: both are listed.
    let r = app.order(normal_order("bob", "bob", None, 1000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    match svc.search("bob").await.expect("search") {
        SearchOutcome::Many(list) => {
            let kinds: Vec<&str> = list.hits.iter().map(|h| h.kind.as_str()).collect();
            assert_eq!(kinds, vec!["order", "user"]);
            assert!(list.hits.iter().all(|h| h.key == "bob"));
            assert_eq!(list.more, None);
        }
        other => panic!("expected two hits, got {other:?}"),
    }
    // Archived coupons are found too.
    let archived = user_with_coupon(&app, "carol", 3600).await;
    plant(
        &app,
        &format!(
            "INSERT INTO coupons_archive ({COUPON_COLUMNS}, archived_at) \
             SELECT {COUPON_COLUMNS}, 0 FROM coupons WHERE id = '{archived}'"
        ),
    )
    .await;
    plant(
        &app,
        &format!("DELETE FROM events WHERE coupon_id = '{archived}'"),
    )
    .await;
    plant(
        &app,
        &format!("DELETE FROM coupons WHERE id = '{archived}'"),
    )
    .await;
    assert_eq!(
        svc.search(&archived).await.expect("search"),
        SearchOutcome::Coupon(archived.as_str().into())
    );
    assert_eq!(
        svc.search("carol").await.expect("search"),
        SearchOutcome::User(fixtures::user("carol"))
    );
}

/// The ids of every page of a list, following the cursors.
async fn all_pages(app: &TestApp, filter: CouponFilterInput, limit: i64) -> Vec<CouponId> {
    let query = CouponListQuery::parse(limit, filter).expect("a page query");
    let mut ids = Vec::new();
    let mut after = None;
    for _ in 0..1000 {
        let page = app
            .service
            .list_coupons(query.clone(), after)
            .await
            .expect("page");
        assert!(page.coupons.len() as i64 <= limit);
        ids.extend(page.coupons.into_iter().map(|c| c.id));
        match page.next {
            Some(n) => after = Some(n),
            None => return ids,
        }
    }
    panic!("the cursor never ended");
}

#[tokio::test]
async fn list_coupons_filters_by_effective_status_template_user_and_expiry() {
    let app = spawn_app().await;
    let short = app.template(json!({"valid_seconds": 100})).await;
    let long = app.template(json!({"valid_seconds": 10_000})).await;
    let (short, long) = (
        short["id"].as_str().expect("id").to_string(),
        long["id"].as_str().expect("id").to_string(),
    );
    let mut ids = std::collections::HashMap::new();
    for u in ["u1", "u2"] {
        ids.insert(
            (u, "short"),
            CouponId::from_wire(app.claim(u, &short).await["id"].as_str().expect("id")),
        );
        ids.insert(
            (u, "long"),
            CouponId::from_wire(app.claim(u, &long).await["id"].as_str().expect("id")),
        );
    }
    // u2's long coupon gets locked; u1's long one invalidated.
    let r = app
        .order(normal_order(
            "N1",
            "u2",
            Some(ids[&("u2", "long")].as_str()),
            39900,
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post(
            &format!("/api/v1/coupons/{}/invalidate", ids[&("u1", "long")]),
            json!({"reason": "test"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(200); // the short coupons are past their end, still stored available
    let list = |status: Option<CouponStatus>, template: Option<&str>, user: Option<&str>| {
        CouponFilterInput {
            status,
            template_id: template.map(String::from),
            user_id: user.map(String::from),
            expiring_before: None,
        }
    };
    let set = |v: Vec<CouponId>| v.into_iter().collect::<HashSet<_>>();
    let want = |keys: &[(&str, &str)]| keys.iter().map(|k| ids[k].clone()).collect::<HashSet<_>>();
    let all = set(all_pages(&app, list(None, None, None), 200).await);
    assert_eq!(all.len(), 4);
    let expired = all_pages(&app, list(Some(CouponStatus::Expired), None, None), 200).await;
    assert_eq!(set(expired), want(&[("u1", "short"), ("u2", "short")]));
    assert!(
        all_pages(&app, list(Some(CouponStatus::Available), None, None), 200)
            .await
            .is_empty()
    );
    assert_eq!(
        set(all_pages(&app, list(Some(CouponStatus::Locked), None, None), 200).await),
        want(&[("u2", "long")])
    );
    assert_eq!(
        set(all_pages(
            &app,
            list(Some(CouponStatus::Invalidated), Some(&long), None),
            200
        )
        .await),
        want(&[("u1", "long")])
    );
    assert_eq!(
        set(all_pages(&app, list(None, Some(&short), Some("u1")), 200).await),
        want(&[("u1", "short")])
    );
    assert_eq!(
        set(all_pages(&app, list(None, None, Some("u2")), 200).await),
        want(&[("u2", "short"), ("u2", "long")])
    );
    let soon = CouponFilterInput {
        expiring_before: Some(app.now() + Duration::seconds(1000)),
        ..CouponFilterInput::default()
    };
    assert_eq!(
        set(all_pages(&app, soon, 200).await),
        want(&[("u1", "short"), ("u2", "short")])
    );
    // The views carry the effective status.
    let page = app
        .service
        .list_coupons(
            CouponListQuery::parse(10, list(Some(CouponStatus::Expired), None, None))
                .expect("a page query"),
            None,
        )
        .await
        .expect("page");
    assert!(
        page.coupons
            .iter()
            .all(|c| c.status == CouponStatus::Expired)
    );
    // A fresh claim is available.
    let fresh = app.claim("u3", &long).await["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(
        all_pages(&app, list(Some(CouponStatus::Available), None, None), 200).await,
        vec![fresh]
    );
}

#[tokio::test]
async fn list_coupons_pages_by_cursor_without_duplicates_or_gaps() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"valid_seconds": 3600, "total_stock": null}))
        .await;
    let tid = t["id"].as_str().expect("id").to_string();
    let mut expected = Vec::new();
    for i in 0..23 {
        // Three claims per second: ties on ends_at, broken by id.
        if i % 3 == 0 {
            app.advance(1);
        }
        expected.push(
            app.claim(&format!("u{i}"), &tid).await["id"]
                .as_str()
                .expect("id")
                .to_string(),
        );
    }
    let mut sorted = expected.clone();
    sorted.sort();
    let filter = CouponFilterInput {
        template_id: Some(tid.clone()),
        ..CouponFilterInput::default()
    };
    for limit in [1, 4, 7, 23, 200] {
        let ids = all_pages(&app, filter.clone(), limit).await;
        assert_eq!(ids.len(), 23, "limit {limit}");
        assert_eq!(
            ids.iter().collect::<HashSet<_>>().len(),
            23,
            "no duplicates"
        );
        let mut got = ids.clone();
        got.sort();
        assert_eq!(got, sorted, "no gaps");
    }
    // Ordered by (ends_at, id).
    let page = app
        .service
        .list_coupons(
            CouponListQuery::parse(200, filter.clone()).expect("a page query"),
            None,
        )
        .await
        .expect("page");
    let keys: Vec<(String, CouponId)> = page
        .coupons
        .iter()
        .map(|c| (c.ends_at.clone(), c.id.clone()))
        .collect();
    let mut ordered = keys.clone();
    ordered.sort();
    assert_eq!(keys, ordered);
    // A walk's first page is the first page.
    let first = app
        .service
        .list_coupons(
            CouponListQuery::parse(5, filter.clone()).expect("a page query"),
            None,
        )
        .await
        .expect("page");
    let rest = all_pages(&app, filter.clone(), 5).await;
    assert_eq!(
        &rest[..5],
        first
            .coupons
            .iter()
            .map(|c| c.id.clone())
            .collect::<Vec<_>>()
            .as_slice()
    );
}

#[tokio::test]
async fn the_csv_export_quotes_fields_has_a_header_and_stops_at_max_rows() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"valid_seconds": 3600, "total_stock": null}))
        .await;
    let tid = t["id"].as_str().expect("id").to_string();
    let odd = app.claim("a%2C%22b%22", &tid).await;
    assert_eq!(odd["user_id"], "a,\"b\"");
    let formula = app.claim("%3DSUM(A1)", &tid).await;
    assert_eq!(formula["user_id"], "=SUM(A1)");
    for i in 0..3 {
        app.claim(&format!("u{i}"), &tid).await;
    }
    let csv = app
        .service
        .export_coupons_csv(
            CouponExportQuery::parse(100_000, CouponFilterInput::default())
                .expect("an export query"),
            couponkeeper::i18n::Lang::Zh,
        )
        .await
        .expect("csv");
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 6, "{csv}");
    assert!(lines[0].starts_with("id,code,user_id,template_id,"));
    let odd_line = lines
        .iter()
        .find(|l| l.starts_with(odd["id"].as_str().unwrap_or("?")))
        .expect("the odd row");
    assert!(odd_line.contains(",\"a,\"\"b\"\"\","), "{odd_line}");
    assert!(csv.contains(",'=SUM(A1),"), "{csv}");
    let two = app
        .service
        .export_coupons_csv(
            CouponExportQuery::parse(2, CouponFilterInput::default()).expect("an export query"),
            couponkeeper::i18n::Lang::Zh,
        )
        .await
        .expect("csv");
    assert_eq!(two.split("\r\n").filter(|l| !l.is_empty()).count(), 3);
}

#[tokio::test]
async fn the_user_page_and_user_health_check_show_the_users_coupons_orders_and_stray_locks() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1", "lock", 10 * 24 * 3600).await;
    let spare = user_with_coupon(&app, "u1", 3600).await;
    app.advance(1);
    let r = app.order(normal_order("N1", "u1", None, 1000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let o = app
        .service
        .user_overview(&fixtures::user("u1"))
        .await
        .expect("overview");
    assert_eq!(o.coupons.len(), 2);
    let orders: Vec<&str> = o.orders.iter().map(|o| o.order_no.as_str()).collect();
    assert_eq!(orders, vec!["N1", "P1"], "newest first");
    let h = app
        .service
        .user_health_check(&fixtures::user("u1"))
        .await
        .expect("health");
    assert_eq!(h.overall.as_str(), "ok");
    assert_eq!(h.orders.len(), 2);
    assert!(h.locks.is_empty());
    // A lock naming an order that does not exist.
    plant(
        &app,
        &format!("UPDATE coupons SET status = 'locked', order_no = 'GHOST', locked_at = 1 WHERE id = '{spare}'"),
    )
    .await;
    let h = app
        .service
        .user_health_check(&fixtures::user("u1"))
        .await
        .expect("health");
    assert_eq!(h.overall.as_str(), "problem");
    assert_eq!(h.locks.len(), 1, "{:?}", h.locks);
    assert_eq!(h.locks[0].name, "stray_lock");
    assert_eq!(
        h.locks[0].suggested_action.as_deref(),
        Some("release_coupon")
    );
    assert_eq!(
        h.locks[0]
            .action
            .as_ref()
            .and_then(|a| a.coupon_id.as_deref()),
        Some(spare.as_str())
    );
    assert_ne!(spare, cid);
    let nobody = app
        .service
        .user_health_check(&fixtures::user("nobody"))
        .await
        .expect("health");
    assert_eq!((nobody.overall.as_str(), nobody.orders.len()), ("ok", 0));
}

/// Fills `coupons` with `n` rows over 100 templates and 5000 users, in
/// every status, for the plan tests.
async fn fill(app: &TestApp, n: i64, now_ms: i64) {
    fn pg_source(n: i64) -> String {
        format!("generate_series(CAST(1 AS BIGINT), CAST({n} AS BIGINT)) AS gs(g)")
    }
    fn sqlite_source(_n: i64) -> String {
        "seq".to_string()
    }
    let (with, source): (String, fn(i64) -> String) = match store() {
        Store::Postgres => (String::new(), pg_source),
        Store::Sqlite => (
            "WITH RECURSIVE seq(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM seq WHERE g < {n})"
                .to_string(),
            sqlite_source,
        ),
    };
    let templates = format!(
        "{} INSERT INTO templates (id, name, kind, value_cents, min_order_cents, categories, status, created_at)
         SELECT 'tpl-' || CAST(g AS TEXT), 'bulk', 'fixed', 500, 0, '[]', 'active', 0 FROM {}",
        with.replace("{n}", "100"),
        source(100)
    );
    plant(app, &templates).await;
    let coupons = format!(
        "{} INSERT INTO coupons (id, code, user_id, template_id, source, kind, value_cents, percent_off,
             max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no,
             locked_at, used_at, created_at, updated_at)
         SELECT 'bulk-' || CAST(g AS TEXT), 'BULK-' || CAST(g AS TEXT), 'user-' || CAST(g % 5000 AS TEXT),
             'tpl-' || CAST(g % 100 + 1 AS TEXT), 'claim', 'fixed', 500, NULL, NULL, 0, '[]',
             CASE WHEN m < 50 THEN 'expired' WHEN m < 70 THEN 'used' WHEN m < 72 THEN 'locked'
                  WHEN m < 73 THEN 'invalidated' ELSE 'available' END,
             {now_ms} - 86400000, {now_ms} - 3600000 + spread, NULL, NULL, NULL, {now_ms} - 86400000, {now_ms}
         FROM (SELECT g, g % 97 AS m, ((g * 7919) % 2592000) * 1000 AS spread FROM {}) s",
        with.replace("{n}", &n.to_string()),
        source(n)
    );
    plant(app, &coupons).await;
    plant(app, "ANALYZE").await;
}

#[tokio::test]
async fn every_coupon_list_the_console_offers_is_an_index_range_scan() {
    let app = spawn_app().await;
    let now_ms = app.now().timestamp_millis();
    let n = match store() {
        Store::Postgres => 200_000,
        Store::Sqlite => 20_000,
    };
    fill(&app, n, now_ms).await;
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    let (tpl7, user42) = (TemplateId::from("tpl-7"), fixtures::user("user-42"));
    let mut checked = 0;
    for status in CouponStatus::ALL {
        for (template, user) in [
            (None, None),
            (Some(&tpl7), None),
            (None, Some(&user42)),
            (Some(&tpl7), Some(&user42)),
        ] {
            for (after, before) in [
                (None, None),
                (Some(now_ms), None),
                (None, Some(now_ms + 86_400_000)),
                (Some(now_ms), Some(now_ms + 86_400_000)),
            ] {
                for cursor in [None, Some((now_ms + 1000, "bulk-5"))] {
                    let q = CouponPageQuery {
                        status,
                        template_id: template,
                        user_id: user,
                        ends_after: after,
                        ends_before: before,
                        after: cursor,
                        limit: 201,
                    };
                    let plan = explain_coupon_page(&mut conn, &q)
                        .await
                        .expect("explain")
                        .join("\n");
                    let what = format!("{q:?}");
                    if cursor.is_some() && after.is_some() && before.is_some() {
                        println!("{status:?} template={template:?} user={user:?}:\n{plan}\n");
                    }
                    for full_scan in ["Seq Scan on coupons", "SCAN coupons", "SCAN TABLE coupons"] {
                        assert!(
                            !plan.contains(full_scan),
                            "{what} must not scan all of coupons:\n{plan}"
                        );
                    }
                    assert!(
                        plan.contains("Index")
                            || plan.contains("USING INDEX")
                            || plan.contains("USING COVERING INDEX"),
                        "{what} uses an index:\n{plan}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 5 * 4 * 4 * 2);
}

#[tokio::test]
async fn the_openapi_document_lists_the_support_routes_with_their_operation_ids() {
    let app = spawn_app().await;
    let r = app.get_as("/api/v1/openapi.json", None).await;
    assert_eq!(r.status, 200);
    for (path, method, id) in [
        (
            "/api/v1/orders/{order_no}/health-check",
            "get",
            "order_health_check",
        ),
        ("/api/v1/coupons/{id}/release", "post", "release_coupon"),
        (
            "/api/v1/coupons/{id}/invalidate",
            "post",
            "invalidate_coupon",
        ),
        (
            "/api/v1/users/{user_id}/compensation-coupons",
            "post",
            "issue_compensation_coupon",
        ),
    ] {
        assert_eq!(
            r.body["paths"][path][method]["operationId"], id,
            "{path} {method}"
        );
    }
    assert!(r.body["components"]["schemas"]["HealthReport"].is_object());
}

/// Plants an order `no` of `user`, created at `created_at` (ms).
async fn plant_order(app: &TestApp, no: &str, user: &str, created_at: i64) {
    sqlx::query(
        "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, created_at, updated_at)
         VALUES ($1, $2, 'normal', 'phones', 'paid', 1000, $3, $3)",
    )
    .bind(no)
    .bind(user)
    .bind(created_at)
    .execute(app.db.db.pool())
    .await
    .expect("plant an order");
}

/// The titles (codes, order numbers) of a list, or a panic naming what came.
#[track_caller]
fn titles(outcome: SearchOutcome) -> (Vec<String>, Option<MoreMatches>) {
    match outcome {
        SearchOutcome::Many(list) => (list.hits.into_iter().map(|h| h.title).collect(), list.more),
        other => panic!("expected a list, got {other:?}"),
    }
}

#[tokio::test]
async fn a_code_prefix_in_any_case_with_spaces_or_dashes_opens_its_one_coupon_or_lists_several_newest_first()
 {
    let app = spawn_app().await;
    let svc = &app.service;
    // Three coupons a minute apart whose codes share prefixes.
    let mut ids = Vec::new();
    for (user, code) in [
        ("alice", "K7QM-3XPA-9RTD"),
        ("bob", "K7QM-3XPB-2222"),
        ("carol", "K7QM-3XPA-4444"),
    ] {
        let id = user_with_coupon(&app, user, 3600).await;
        plant(
            &app,
            &format!("UPDATE coupons SET code = '{code}' WHERE id = '{id}'"),
        )
        .await;
        ids.push(id);
        app.advance(60);
    }
    // One match opens it, however it was typed.
    for q in ["k7qm 3xpb", "k7qm-3xpb-2", " K7QM3XPB ", "k-7-q-m-3-x-p-b"] {
        assert_eq!(
            svc.search(q).await.expect("search"),
            SearchOutcome::Coupon(ids[1].as_str().into()),
            "{q}"
        );
    }
    // Several are listed newest first, each with its status and user.
    match svc.search("k7qm 3xpa").await.expect("search") {
        SearchOutcome::Many(list) => {
            let got: Vec<(&str, &str, &str, Option<&str>)> = list
                .hits
                .iter()
                .map(|h| {
                    (
                        h.kind.as_str(),
                        h.title.as_str(),
                        h.user_id.as_str(),
                        h.status_key,
                    )
                })
                .collect();
            assert_eq!(
                got,
                vec![
                    (
                        "coupon",
                        "K7QM-3XPA-4444",
                        "carol",
                        Some("coupon-status-available")
                    ),
                    (
                        "coupon",
                        "K7QM-3XPA-9RTD",
                        "alice",
                        Some("coupon-status-available")
                    ),
                ]
            );
            assert_eq!(list.hits[0].key, ids[2]);
            assert_eq!(list.more, None);
        }
        other => panic!("expected two coupons, got {other:?}"),
    }
    assert_eq!(
        titles(svc.search("k7qm").await.expect("search")),
        (
            vec![
                "K7QM-3XPA-4444".to_string(),
                "K7QM-3XPB-2222".to_string(),
                "K7QM-3XPA-9RTD".to_string(),
            ],
            None
        )
    );
    // Three characters are not a prefix: only an exact match would do.
    for q in ["k7q", "K7Q", "k-7 q", "k7q-"] {
        assert_eq!(
            svc.search(q).await.expect("search"),
            SearchOutcome::Nothing,
            "{q}"
        );
    }
    // No code starts with it.
    assert_eq!(
        svc.search("k7qm 3xpc").await.expect("search"),
        SearchOutcome::Nothing
    );
    // An archived coupon is found by its prefix too.
    plant(
        &app,
        &format!(
            "INSERT INTO coupons_archive ({COUPON_COLUMNS}, archived_at) \
             SELECT {COUPON_COLUMNS}, 0 FROM coupons WHERE id = '{}'",
            ids[2]
        ),
    )
    .await;
    plant(
        &app,
        &format!("DELETE FROM events WHERE coupon_id = '{}'", ids[2]),
    )
    .await;
    plant(
        &app,
        &format!("DELETE FROM coupons WHERE id = '{}'", ids[2]),
    )
    .await;
    assert_eq!(
        svc.search("k7qm3xpa4").await.expect("search"),
        SearchOutcome::Coupon(ids[2].as_str().into())
    );
    assert_eq!(
        titles(svc.search("K7QM-3XPA").await.expect("search")).0,
        vec!["K7QM-3XPA-4444", "K7QM-3XPA-9RTD"]
    );
}

#[tokio::test]
async fn an_order_number_prefix_is_case_insensitive_and_an_exact_number_still_opens_directly() {
    let app = spawn_app().await;
    let svc = &app.service;
    let t0 = app.now().timestamp_millis();
    plant_order(&app, "Shop-2026-0001", "alice", t0).await;
    plant_order(&app, "shop-2026-0002", "bob", t0 + 1000).await;
    plant_order(&app, "SHOP-2026-1000", "carol", t0 + 2000).await;
    plant_order(&app, "ORD-7", "dave", t0 + 3000).await;
    plant_order(&app, "ORD-70", "dave", t0 + 4000).await;

    assert_eq!(
        titles(svc.search("shop 2026 000").await.expect("search")),
        (vec!["shop-2026-0002".into(), "Shop-2026-0001".into()], None)
    );
    assert_eq!(
        titles(svc.search("SHOP-2026").await.expect("search")).0,
        vec!["SHOP-2026-1000", "shop-2026-0002", "Shop-2026-0001"]
    );
    for q in ["shop20261", "Shop 2026-1", "SHOP-2026-1000"] {
        assert_eq!(
            svc.search(q).await.expect("search"),
            SearchOutcome::Order(fixtures::order("SHOP-2026-1000")),
            "{q}"
        );
    }
    // The exact number opens its order although "ORD-70" starts with it;
    // typed another way it is a prefix of both.
    assert_eq!(
        svc.search("ORD-7").await.expect("search"),
        SearchOutcome::Order(fixtures::order("ORD-7"))
    );
    assert_eq!(
        titles(svc.search("ord 7").await.expect("search")).0,
        vec!["ORD-70", "ORD-7"]
    );
    // Three characters list nothing.
    assert_eq!(
        svc.search("sho").await.expect("search"),
        SearchOutcome::Nothing
    );
    // A user whose id starts like the orders is still found exactly.
    assert_eq!(
        svc.search("carol").await.expect("search"),
        SearchOutcome::User(fixtures::user("carol"))
    );

    // More than 50: the 50 newest, and how many there were.
    for i in 1..=52 {
        plant_order(&app, &format!("BULK-{i:04}"), "erin", t0 + i * 1000).await;
    }
    let (listed, more) = titles(svc.search("bulk-00").await.expect("search"));
    assert_eq!(listed.len(), 50);
    assert_eq!(listed.first().map(String::as_str), Some("BULK-0052"));
    assert_eq!(listed.last().map(String::as_str), Some("BULK-0003"));
    assert_eq!(more, Some(MoreMatches::Total(52)));
}

#[tokio::test]
async fn the_search_keys_of_rows_written_before_and_after_their_migration_match_the_rust_rule() {
    use couponkeeper::domain::ids::search_key;
    let t = crate::common::TestDb::fresh_through(4, 16).await;
    let pool = t.db.pool();
    let order = "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, created_at, updated_at)
         VALUES ($1, 'u1', 'normal', 'phones', 'paid', 100, 0, 0)";
    let coupon = format!(
        "INSERT INTO coupons ({COUPON_COLUMNS}) VALUES ($1, $2, 'u1', NULL, 'compensation', 'fixed', 500, \
         NULL, NULL, 0, '[]', 'available', 0, 1, NULL, NULL, NULL, 0, 0)"
    );
    // Tricky numbers: mixed case, spaces, dashes, non-ASCII letters (kept
    // as they are on both stores), a Turkish dotless i, punctuation.
    let before = ["ord-1 a", "Ié-2-ß", "x_y/z.1", "ıi-İI"];
    let after = ["new-1 b", "Éé ñ-3", "a--b  c"];
    for (i, no) in before.iter().enumerate() {
        sqlx::query(order)
            .bind(*no)
            .execute(pool)
            .await
            .expect("order");
        sqlx::query(&coupon)
            .bind(format!("c{i}"))
            .bind(format!("k7qm-{no}"))
            .execute(pool)
            .await
            .expect("coupon");
    }
    t.db.migrate().await.expect("the rest of the migrations");
    for (i, no) in after.iter().enumerate() {
        sqlx::query(order)
            .bind(*no)
            .execute(pool)
            .await
            .expect("order");
        sqlx::query(&coupon)
            .bind(format!("d{i}"))
            .bind(format!("k7qm-{no}"))
            .execute(pool)
            .await
            .expect("coupon");
    }
    sqlx::query(&format!(
        "INSERT INTO coupons_archive ({COUPON_COLUMNS}, archived_at) SELECT {COUPON_COLUMNS}, 0 FROM coupons"
    ))
    .execute(pool)
    .await
    .expect("archive copies");
    let orders: Vec<(String, String)> =
        sqlx::query_as("SELECT order_no, order_no_key FROM orders ORDER BY order_no")
            .fetch_all(pool)
            .await
            .expect("order keys");
    assert_eq!(orders.len(), before.len() + after.len());
    for (no, key) in orders {
        assert_eq!(key, search_key(&no), "{no}");
    }
    for table in ["coupons", "coupons_archive"] {
        let codes: Vec<(String, String)> =
            sqlx::query_as(&format!("SELECT code, code_key FROM {table} ORDER BY id"))
                .fetch_all(pool)
                .await
                .expect("code keys");
        assert_eq!(codes.len(), before.len() + after.len());
        for (code, key) in codes {
            assert_eq!(key, search_key(&code), "{table} {code}");
        }
    }
    // The key is the database's to compute.
    assert!(
        sqlx::query("UPDATE orders SET order_no_key = 'X'")
            .execute(pool)
            .await
            .is_err()
    );
    if store() == Store::Postgres {
        // Byte order whatever the database's collation, so a range is a
        // prefix.
        let collations: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(collation_name AS TEXT) FROM information_schema.columns
             WHERE column_name IN ('code_key', 'order_no_key') ORDER BY table_name",
        )
        .fetch_all(pool)
        .await
        .expect("collations");
        // coupons, coupons_archive, orders, and the part-search copy.
        assert_eq!(collations, vec!["C", "C", "C", "C"]);
    }
}

/// Fills `orders` with `n` paid orders `ORD-1` … `ORD-n`, one a second
/// before `now_ms`, for the plan tests.
async fn fill_orders(app: &TestApp, n: i64, now_ms: i64) {
    let (with, source) = crate::common::series(n);
    plant(
        app,
        &format!(
            "{with} INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, created_at, updated_at)
             SELECT 'ORD-' || CAST(g AS TEXT), 'user-' || CAST(g % 5000 AS TEXT), 'normal', 'bulk', 'paid', 1000,
                 {now_ms} - g * 1000, {now_ms}
             FROM {source}"
        ),
    )
    .await;
    plant(app, "ANALYZE").await;
}

#[tokio::test]
async fn prefix_searches_read_a_range_of_their_key_index_and_stay_bounded_on_100000_rows() {
    use couponkeeper::store::search::{
        ARCHIVED_COUPON_CODE_PREFIX_SQL, COUPON_CODE_PREFIX_SQL, ORDER_NO_PREFIX_SQL, prefix_range,
    };
    let app = spawn_app().await;
    let now_ms = app.now().timestamp_millis();
    let n = 100_000;
    fill(&app, n, now_ms).await;
    // The archive holds a copy of every coupon (as if each were being
    // moved): searched too, and each coupon is still one match.
    plant(
        &app,
        &format!(
            "INSERT INTO coupons_archive ({COUPON_COLUMNS}, archived_at) SELECT {COUPON_COLUMNS}, 0 FROM coupons"
        ),
    )
    .await;
    fill_orders(&app, n, now_ms).await;
    let backend = app.db.db.backend();
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    for (sql, table, index) in [
        (COUPON_CODE_PREFIX_SQL, "coupons", "coupons_code_key_idx"),
        (
            ARCHIVED_COUPON_CODE_PREFIX_SQL,
            "coupons_archive",
            "coupons_archive_code_key_idx",
        ),
        (ORDER_NO_PREFIX_SQL, "orders", "orders_order_no_key_idx"),
    ] {
        // A prefix of one row, and one of every row.
        for prefix in ["BULK12345", "ORD12345", "BULK", "ORD"] {
            let (low, high) = prefix_range(prefix).expect("a range");
            let rows = sqlx::query(&crate::common::explain_sql(backend, sql))
                .bind(low)
                .bind(high)
                .bind(1001_i64)
                .fetch_all(&mut *conn)
                .await
                .expect("explain");
            let plan = crate::common::plan_text(&rows, backend);
            println!("{table} {prefix}:\n{plan}\n");
            assert!(
                plan.contains(index),
                "{table} {prefix} reads {index}:\n{plan}"
            );
            for bad in ["Seq Scan", "Bitmap", "Sort", "TEMP B-TREE"] {
                assert!(!plan.contains(bad), "{table} {prefix}: no {bad}:\n{plan}");
            }
            assert!(
                !plan.lines().any(|l| l.trim() == format!("SCAN {table}")),
                "{table} {prefix}: no full scan:\n{plan}"
            );
        }
    }
    drop(conn);

    // What the search makes of it: codes are BULK-1 … BULK-100000.
    let svc = &app.service;
    assert_eq!(
        svc.search("bulk-12345").await.expect("search"),
        SearchOutcome::Coupon("bulk-12345".into())
    );
    // BULK-123, BULK-1230 … 1239, BULK-12300 … 12399: 111, each live and
    // archived, listed once.
    let (listed, more) = titles(svc.search("bulk 123").await.expect("search"));
    assert_eq!(listed.len(), 50);
    assert_eq!(more, Some(MoreMatches::Total(111)));
    // Tens of thousands start with "BULK1": the search stops reading after
    // 1000 of each table and says so.
    let (listed, more) = titles(svc.search("bulk1").await.expect("search"));
    assert_eq!(listed.len(), 50);
    assert_eq!(more, Some(MoreMatches::Over(1000)));
    // Orders ORD-1 … ORD-100000, ORD-1 the newest.
    let (listed, more) = titles(svc.search("ord-1234").await.expect("search"));
    assert_eq!(listed.len(), 11);
    assert_eq!(listed[..3], ["ORD-1234", "ORD-12340", "ORD-12341"]);
    assert_eq!(more, None);
    let (listed, more) = titles(svc.search("ord 1").await.expect("search"));
    assert_eq!(listed[..2], ["ORD-1", "ORD-10"]);
    assert_eq!(more, Some(MoreMatches::Over(1000)));
    // "ORD-" is three characters once the dash is dropped: no list.
    assert_eq!(
        svc.search("ord-").await.expect("search"),
        SearchOutcome::Nothing
    );
}

#[tokio::test]
async fn any_four_characters_of_an_order_number_or_user_id_find_it_through_a_trigram_index_on_100000_orders()
 {
    use couponkeeper::store::search::{
        ORDER_NO_PART_SQL_POSTGRES, ORDER_NO_PART_SQL_SQLITE, USER_PART_SQL_POSTGRES,
        USER_PART_SQL_SQLITE, fts_phrase, like_pattern,
    };
    let app = spawn_app().await;
    let now_ms = app.now().timestamp_millis();
    fill_orders(&app, 100_000, now_ms).await;
    let backend = app.db.db.backend();
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    for (sql, part, index) in match store() {
        Store::Postgres => [
            (
                ORDER_NO_PART_SQL_POSTGRES,
                like_pattern("2345"),
                "order_parts_order_no_key_trgm",
            ),
            (
                USER_PART_SQL_POSTGRES,
                like_pattern("2345"),
                "order_parts_user_id_trgm",
            ),
        ],
        Store::Sqlite => [
            (
                ORDER_NO_PART_SQL_SQLITE,
                fts_phrase("2345"),
                "VIRTUAL TABLE INDEX",
            ),
            (
                USER_PART_SQL_SQLITE,
                fts_phrase("2345"),
                "VIRTUAL TABLE INDEX",
            ),
        ],
    } {
        let rows = sqlx::query(&crate::common::explain_sql(backend, sql))
            .bind(part)
            .bind(1001_i64)
            .fetch_all(&mut *conn)
            .await
            .expect("explain");
        let plan = crate::common::plan_text(&rows, backend);
        println!("{sql}:\n{plan}\n");
        assert!(plan.contains(index), "reads {index}:\n{plan}");
        assert!(!plan.contains("Seq Scan"), "no full scan:\n{plan}");
    }
    drop(conn);

    let svc = &app.service;
    // "2345" is in ORD-2345, ORD-12345, ORD-22345 … ORD-92345 and
    // ORD-23450 … ORD-23459, and in user-2345 (whose newest order is
    // ORD-2345): 21 hits, newest first, the user before the order of the
    // same moment.
    let (listed, more) = titles(svc.search("2345").await.expect("search"));
    assert_eq!(listed.len(), 21, "{listed:?}");
    assert_eq!(
        listed[..4],
        ["user-2345", "ORD-2345", "ORD-12345", "ORD-22345"]
    );
    assert!(listed.contains(&"ORD-23459".to_string()));
    assert_eq!(more, None);
    // A part only one order or one user holds opens its page.
    assert_eq!(
        svc.search("d-100000").await.expect("search"),
        SearchOutcome::Order(fixtures::order("ORD-100000"))
    );
    assert_eq!(
        svc.search("r-4999").await.expect("search"),
        SearchOutcome::User(fixtures::user("user-4999"))
    );
    // A user id in another case, and a part with LIKE's wildcards, which
    // stand for themselves.
    assert_eq!(
        svc.search("SER-4999").await.expect("search"),
        SearchOutcome::User(fixtures::user("user-4999"))
    );
    assert_eq!(
        svc.search("ser-%").await.expect("search"),
        SearchOutcome::Nothing
    );
    assert_eq!(
        svc.search("r_49").await.expect("search"),
        SearchOutcome::Nothing
    );
}
