//! Reconciliation: every anomaly kind found by `GET /reconciliation` and by
//! recorded runs, each repaired (per finding and per kind) with a re-check,
//! the job, the console page and who may use it, on a fresh database.

use crate::common::console::{Browser, Page, signed_in};
use crate::common::fixtures::{coupon_for, deposit_paid, deposit_paid_under, plant};
use crate::common::{TestApp, normal_order, spawn_app};
use couponkeeper::domain::reconcile::AnomalyKind;
use couponkeeper::domain::staff::{Role, StaffName};
use couponkeeper::service::Ctx;
use couponkeeper::service::support::Authority;
use serde_json::{Value, json};

/// Plants one anomaly of each of API.md's four kinds; returns
/// (kind, coupon id, order no) of each.
async fn plant_all_four(app: &TestApp) -> Vec<(&'static str, String, String)> {
    // 1. A presale order closed while its coupon stays locked.
    let c1 = deposit_paid(app, "P1", "u1").await;
    plant(
        app,
        "UPDATE orders SET status = 'closed' WHERE order_no = 'P1'",
    )
    .await;
    // 2. A deposit-paid order whose coupon was set back to available.
    let c2 = deposit_paid(app, "P2", "u2").await;
    plant(
        app,
        &format!("UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL WHERE id = '{c2}'"),
    )
    .await;
    // 3. A paid order re-pointed at another coupon of the same customer.
    let used = coupon_for(app, "u3").await;
    let other = coupon_for(app, "u3").await;
    let r = app
        .order(normal_order("N3", "u3", Some(&used), 39900))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        app.post("/api/v1/orders/N3/pay", json!({})).await.status,
        200
    );
    plant(
        app,
        &format!("UPDATE orders SET coupon_id = '{other}' WHERE order_no = 'N3'"),
    )
    .await;
    // 4. A checkout whose lock lapsed (the clock moves past it).
    let c4 = coupon_for(app, "u4").await;
    let r = app.order(normal_order("N4", "u4", Some(&c4), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    app.advance(901);
    vec![
        ("locked_coupon_order_closed", c1, "P1".into()),
        ("order_active_coupon_not_locked", c2, "P2".into()),
        ("coupon_order_mismatch", used, "N3".into()),
        ("stale_checkout_lock", c4, "N4".into()),
    ]
}

fn anomalies(body: &Value) -> Vec<Value> {
    body["anomalies"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn healthy_data_has_no_anomalies_and_the_route_needs_a_token() {
    let app = spawn_app().await;
    deposit_paid(&app, "P1", "u1").await;
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(anomalies(&r.body).len(), 0, "{}", r.text);
    assert_eq!(r.body["counts"]["locked_coupon_order_closed"], 0);
    assert_eq!(r.body["truncated"], false);
    assert_eq!(app.get_as("/api/v1/reconciliation", None).await.status, 401);
}

#[tokio::test]
async fn the_four_kinds_of_api_md_are_each_found_once_with_their_fix() {
    let app = spawn_app().await;
    let planted = plant_all_four(&app).await;
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let found = anomalies(&r.body);
    assert_eq!(found.len(), 4, "{}", r.text);
    let fixes = [
        "release_coupon",
        "repair_link",
        "repair_link",
        "cancel_order",
    ];
    for ((kind, coupon, order), fix) in planted.iter().zip(fixes) {
        let a = found
            .iter()
            .find(|a| a["kind"] == *kind)
            .unwrap_or_else(|| panic!("{kind} not found in {}", r.text));
        assert_eq!(a["coupon_id"], coupon.as_str(), "{kind}");
        assert_eq!(a["order_no"], order.as_str(), "{kind}");
        assert_eq!(a["suggested_action"], fix, "{kind}");
        assert!(
            a["detail"]
                .as_str()
                .is_some_and(|d| d.contains(order.as_str()))
        );
        assert_eq!(r.body["counts"][*kind], 1);
    }
}

#[tokio::test]
async fn the_two_extra_kinds_are_reported_for_a_person() {
    let app = spawn_app().await;
    let c = coupon_for(&app, "u1").await;
    let r = app.order(normal_order("N1", "u1", Some(&c), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        app.post("/api/v1/orders/N1/pay", json!({})).await.status,
        200
    );
    plant(
        &app,
        "UPDATE orders SET status = 'closed' WHERE order_no = 'N1'",
    )
    .await;
    plant(
        &app,
        "UPDATE template_stock_shards SET claimed = claimed + 3 WHERE shard = 0",
    )
    .await;
    let r = app.get("/api/v1/reconciliation").await;
    let found = anomalies(&r.body);
    let unpaid = found
        .iter()
        .find(|a| a["kind"] == "used_coupon_order_unpaid")
        .expect("used coupon on a closed order");
    assert!(unpaid["suggested_action"].is_null());
    assert!(
        found.iter().any(|a| a["kind"] == "template_stock_mismatch"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn report_counters_that_drifted_from_the_coupons_are_found_with_both_figures() {
    let app = spawn_app().await;
    let t = app.template(json!({"name": "计数核对券"})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    for user in ["u1", "u2", "u3"] {
        app.claim(user, &tid).await;
    }
    let clean = app.get("/api/v1/reconciliation").await;
    assert_eq!(anomalies(&clean.body).len(), 0, "{}", clean.text);
    assert_eq!(
        clean.body["scanned"]["templates_not_recounted"], 0,
        "{}",
        clean.text
    );
    // The all-days row says 5 available where the coupons say 3 (folded
    // first: until the counter-fold job runs, the changes are deltas).
    app.service.fold_counters(5000).await.expect("the fold");
    plant(
        &app,
        &format!(
            "UPDATE template_counts SET status_available = status_available + 2 \
             WHERE template_id = '{tid}' AND day = -1 AND shard = \
             (SELECT MIN(shard) FROM template_counts WHERE template_id = '{tid}' AND day = -1)"
        ),
    )
    .await;
    let r = app.get("/api/v1/reconciliation").await;
    let found = anomalies(&r.body);
    assert_eq!(found.len(), 1, "{}", r.text);
    let a = &found[0];
    assert_eq!(a["kind"], "template_counts_mismatch");
    assert!(a["suggested_action"].is_null(), "a person looks at it");
    let detail = a["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&tid)
            && detail.contains("available coupons")
            && detail.contains('5')
            && detail.contains('3'),
        "the template, the figure and both values: {detail}"
    );
    // A recorded run on the console names the template as people do.
    let mut b = signed_in(&app, Role::Operator).await;
    let csrf = b.csrf().await;
    let run = b
        .post_form("/console/reconciliation/run", &[("csrf", &csrf)])
        .await;
    assert_eq!(run.status, 303, "{}", run.text);
    let page = b.get("/console/reconciliation").await;
    let text = crate::common::console::visible_text(&page.text);
    assert!(
        text.contains("计数核对券") && !text.contains(&tid),
        "the finding names the template: {text}"
    );
}

fn operator() -> Authority {
    Authority::Staff {
        name: StaffName::parse("op").expect("name"),
        role: Role::Operator,
    }
}

#[tokio::test]
async fn a_recorded_run_is_repaired_finding_by_finding_and_the_next_run_is_clean() {
    let app = spawn_app().await;
    plant_all_four(&app).await;
    let run = app
        .service
        .run_reconciliation("job:reconcile")
        .await
        .expect("run");
    assert_eq!(run.found, 4);
    let findings = app
        .service
        .reconcile_findings(run.id, None, 100)
        .await
        .expect("findings");
    assert_eq!(findings.len(), 4);
    let ctx = Ctx::new("staff:op", None);
    for f in &findings {
        app.service
            .repair_finding(&ctx, &operator(), f.id, Some("reconciliation".into()))
            .await
            .unwrap_or_else(|e| panic!("repair {} failed: {e}", f.kind.as_str()));
    }
    // A second repair of the same finding is refused.
    assert!(
        app.service
            .repair_finding(&ctx, &operator(), findings[0].id, Some("again".into()))
            .await
            .is_err()
    );
    let runs = app.service.reconcile_runs(10).await.expect("runs");
    assert_eq!((runs[0].found, runs[0].repaired), (4, 4));
    let next = app
        .service
        .run_reconciliation("job:reconcile")
        .await
        .expect("run");
    assert_eq!(
        next.found, 0,
        "everything repaired: {:?}",
        next.found_by_kind
    );
    for o in ["P1", "P2", "N3", "N4"] {
        let h = app.get(&format!("/api/v1/orders/{o}/health-check")).await;
        assert_ne!(h.body["overall"], "problem", "{o}: {}", h.text);
    }
}

#[tokio::test]
async fn a_repair_rechecks_and_changes_nothing_when_the_anomaly_changed_meanwhile() {
    let app = spawn_app().await;
    let planted = plant_all_four(&app).await;
    let run = app
        .service
        .run_reconciliation("job:reconcile")
        .await
        .expect("run");
    // Someone fixes the closed order's lock by hand before the repair.
    let (_, c1, _) = &planted[0];
    let r = app
        .post(
            &format!("/api/v1/coupons/{c1}/release"),
            json!({"reason": "fixed by hand"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // The lapsed checkout gets paid... it cannot: instead it is cancelled.
    assert_eq!(
        app.post("/api/v1/orders/N4/cancel", json!({})).await.status,
        200
    );
    let findings = app
        .service
        .reconcile_findings(run.id, None, 100)
        .await
        .expect("findings");
    let ctx = Ctx::new("staff:op", None);
    for kind in ["locked_coupon_order_closed", "stale_checkout_lock"] {
        let f = findings
            .iter()
            .find(|f| f.kind.as_str() == kind)
            .expect("finding");
        let before = app.coupon(f.coupon_id.as_deref().unwrap_or_default()).await;
        let r = app
            .service
            .repair_finding(&ctx, &operator(), f.id, Some("late".into()))
            .await;
        assert!(r.is_err(), "{kind}: a changed anomaly is refused");
        let after = app.coupon(f.coupon_id.as_deref().unwrap_or_default()).await;
        assert_eq!(before["events"], after["events"], "{kind}: nothing written");
        let noted = app.service.reconcile_finding(f.id).await.expect("finding");
        assert!(noted.repair_note.is_some() && noted.repaired_at.is_none());
    }
}

#[tokio::test]
async fn repair_all_of_a_kind_repairs_each_in_its_own_transaction() {
    let app = spawn_app().await;
    for i in 0..3 {
        deposit_paid(&app, &format!("P{i}"), &format!("u{i}")).await;
        plant(
            &app,
            &format!("UPDATE orders SET status = 'closed' WHERE order_no = 'P{i}'"),
        )
        .await;
    }
    let run = app
        .service
        .run_reconciliation("job:reconcile")
        .await
        .expect("run");
    assert_eq!(
        run.found_by_kind.get("locked_coupon_order_closed"),
        Some(&3)
    );
    let out = app
        .service
        .repair_all_of_kind(
            &Ctx::new("staff:op", None),
            &operator(),
            run.id,
            AnomalyKind::LockedCouponOrderClosed,
            Some("bulk".into()),
        )
        .await
        .expect("repair all");
    assert_eq!((out.repaired, out.refused), (3, 0));
    let support = Authority::Staff {
        name: StaffName::parse("s").expect("name"),
        role: Role::Support,
    };
    assert!(
        app.service
            .repair_all_of_kind(
                &Ctx::new("staff:s", None),
                &support,
                run.id,
                AnomalyKind::LockedCouponOrderClosed,
                Some("x".into()),
            )
            .await
            .is_err(),
        "support may not repair from reconciliation"
    );
}

#[tokio::test]
async fn scans_page_through_more_rows_than_one_batch_without_missing_or_repeating() {
    let app = spawn_app().await;
    let cid = coupon_for(&app, "u1").await;
    // 1,234 locks left on orders that do not exist, copies of one coupon.
    let mut tx = app.db.db.pool().begin().await.expect("tx");
    for i in 0..1234 {
        sqlx::query(
            "INSERT INTO coupons (id, code, user_id, template_id, source, kind, value_cents, percent_off,
                 max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no,
                 locked_at, used_at, created_at, updated_at)
             SELECT $1, $2, user_id, template_id, source, kind, value_cents, percent_off,
                 max_discount_cents, min_order_cents, categories, 'locked', starts_at, ends_at, $3,
                 $4, NULL, created_at, updated_at FROM coupons WHERE id = $5",
        )
        .bind(format!("ghost-{i:05}"))
        .bind(format!("GHOST-{i:05}"))
        .bind(format!("NOPE-{i}"))
        .bind(i64::from(i % 7))
        .bind(&cid)
        .execute(&mut *tx)
        .await
        .expect("insert");
    }
    tx.commit().await.expect("commit");
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200);
    let found: Vec<Value> = anomalies(&r.body)
        .into_iter()
        .filter(|a| a["kind"] == "locked_coupon_order_closed")
        .collect();
    assert_eq!(found.len(), 1234);
    let mut ids: Vec<&str> = found
        .iter()
        .filter_map(|a| a["coupon_id"].as_str())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 1234, "no coupon twice");
    assert_eq!(r.body["scanned"]["locked_coupons"], 1234);
}

#[tokio::test]
async fn the_reconcile_job_records_a_run() {
    let app = spawn_app().await;
    plant_all_four(&app).await;
    let settings = couponkeeper::jobs::JobSettings::default();
    let metrics = couponkeeper::metrics::Metrics::default();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let rows = couponkeeper::jobs::run_once("reconcile", &app.service, &settings, &metrics, &rx)
        .await
        .expect("job");
    assert_eq!(rows, 4);
    let runs = app.service.reconcile_runs(5).await.expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].actor, "job:reconcile");
}

/// A paid normal order `no` of `user` whose coupon update was lost: the
/// coupon still reads `locked` to it. The coupon id.
async fn paid_with_stale_lock(app: &TestApp, no: &str, user: &str) -> String {
    let cid = coupon_for(app, user).await;
    let r = app.order(normal_order(no, user, Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post(&format!("/api/v1/orders/{no}/pay"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    plant(
        app,
        &format!("UPDATE coupons SET status = 'locked', used_at = NULL WHERE id = '{cid}'"),
    )
    .await;
    cid
}

/// A presale order `no` of `user` fully paid with its coupon under the
/// `lock` policy, then left with the coupon `locked`. The coupon id.
async fn final_paid_with_stale_lock(app: &TestApp, no: &str, user: &str) -> String {
    // A 满300减50 coupon of the default ten days, its deposit paid under a
    // lock campaign whose window opens in 60 s.
    let cid = deposit_paid_under(app, no, user, "lock", 10 * 24 * 3600).await;
    app.advance(60);
    let r = app
        .post(&format!("/api/v1/orders/{no}/final-payment"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_lock_status"], "used");
    plant(
        app,
        &format!("UPDATE coupons SET status = 'locked', used_at = NULL WHERE id = '{cid}'"),
    )
    .await;
    cid
}

fn actions_of(coupon: &Value) -> Vec<String> {
    coupon["events"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["action"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_coupon_left_locked_on_a_paid_or_fully_paid_order_is_found_and_marked_used() {
    let app = spawn_app().await;
    let c1 = paid_with_stale_lock(&app, "N1", "u1").await;
    let c2 = final_paid_with_stale_lock(&app, "P2", "u2").await;
    let r = app.get("/api/v1/reconciliation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let found = anomalies(&r.body);
    assert_eq!(found.len(), 2, "{}", r.text);
    for (cid, no) in [(&c1, "N1"), (&c2, "P2")] {
        let a = found
            .iter()
            .find(|a| a["order_no"] == no)
            .unwrap_or_else(|| panic!("{no} not found in {}", r.text));
        assert_eq!(a["kind"], "locked_coupon_order_paid", "{no}");
        assert_eq!(a["coupon_id"], cid.as_str());
        assert_eq!(a["suggested_action"], "mark_coupon_used");
    }
    assert_eq!(r.body["counts"]["locked_coupon_order_paid"], 2);
    // The health check says the same, with the same fix.
    let h = app.get("/api/v1/orders/N1/health-check").await;
    assert_eq!(h.body["overall"], "problem", "{}", h.text);
    let check = h.body["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "coupon_status").cloned())
        .unwrap_or_default();
    assert_eq!(check["suggested_action"], "mark_coupon_used", "{}", h.text);
    assert_eq!(check["action"]["coupon_id"], c1.as_str());
    assert_eq!(check["action"]["order_no"], "N1");

    // Repaired from a recorded run: one finding, then the rest of the kind.
    let run = app
        .service
        .run_reconciliation("job:reconcile")
        .await
        .expect("run");
    assert_eq!(run.found_by_kind.get("locked_coupon_order_paid"), Some(&2));
    let findings = app
        .service
        .reconcile_findings(run.id, Some(AnomalyKind::LockedCouponOrderPaid), 10)
        .await
        .expect("findings");
    assert!(
        findings
            .iter()
            .all(|f| f.fix.as_str() == "mark_coupon_used")
    );
    let ctx = Ctx::new("staff:op", None);
    let first = findings
        .iter()
        .find(|f| f.order_no.as_deref() == Some("N1"))
        .expect("N1 finding");
    app.service
        .repair_finding(&ctx, &operator(), first.id, Some("stale lock".into()))
        .await
        .expect("repair");
    let out = app
        .service
        .repair_all_of_kind(
            &ctx,
            &operator(),
            run.id,
            AnomalyKind::LockedCouponOrderPaid,
            Some("stale locks".into()),
        )
        .await
        .expect("repair all");
    assert_eq!((out.repaired, out.refused), (1, 0));
    for (cid, no, reason) in [(&c1, "N1", "stale lock"), (&c2, "P2", "stale locks")] {
        let c = app.coupon(cid).await;
        assert_eq!(
            (c["status"].as_str(), c["order_no"].as_str()),
            (Some("used"), Some(no)),
            "{c:#}"
        );
        let last = c["events"]
            .as_array()
            .and_then(|e| e.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            (
                last["action"].as_str(),
                last["from"].as_str(),
                last["to"].as_str(),
                last["actor"].as_str(),
                last["reason"].as_str()
            ),
            (
                Some("mark_used"),
                Some("locked"),
                Some("used"),
                Some("staff:op"),
                Some(reason)
            )
        );
        let o = app.order_view(no).await;
        assert_eq!(o["coupon_lock_status"], "used");
        let order_event = o["events"].as_array().and_then(|e| {
            e.iter()
                .find(|e| e["action"] == "mark_coupon_used")
                .cloned()
        });
        assert!(order_event.is_some(), "{o:#}");
        let h = app.get(&format!("/api/v1/orders/{no}/health-check")).await;
        assert_ne!(h.body["overall"], "problem", "{no}: {}", h.text);
    }
    let next = app.get("/api/v1/reconciliation").await;
    assert_eq!(anomalies(&next.body).len(), 0, "{}", next.text);
    // Refunding the order now returns the coupon once, by the usual rule.
    let r = app
        .post("/api/v1/orders/N1/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(app.coupon(&c1).await["status"], "available");
}

#[tokio::test]
async fn marking_a_stale_lock_used_goes_through_the_api_and_is_refused_when_the_facts_changed() {
    let app = spawn_app().await;
    let cid = paid_with_stale_lock(&app, "N1", "u1").await;
    let path = "/api/v1/orders/N1/mark-coupon-used";
    let r = app.post(path, json!({"reason": "stale lock"})).await;
    assert_eq!((r.status, r.field()), (400, "coupon_id"), "{}", r.text);
    let r = app.post(path, json!({"coupon_id": cid})).await;
    assert_eq!((r.status, r.field()), (400, "reason"), "{}", r.text);
    let r = app
        .post(
            "/api/v1/orders/NOPE/mark-coupon-used",
            json!({"coupon_id": cid, "reason": "x"}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    // Another coupon of the customer's that the order does not name.
    let other = coupon_for(&app, "u1").await;
    let r = app
        .post(path, json!({"coupon_id": other, "reason": "x"}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "repair_not_applicable"),
        "{}",
        r.text
    );
    assert_eq!(app.coupon(&other).await["status"], "available");

    let r = app
        .post_idem(
            path,
            "mark-1",
            json!({"coupon_id": cid, "reason": "stale lock"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["coupon_lock_status"], "used");
    assert_eq!(r.body["status"], "paid");
    let c = app.coupon(&cid).await;
    assert_eq!(c["status"], "used");
    let events = c["events"].clone();
    // A retry replays; a second repair is refused; neither writes.
    let again = app
        .post_idem(
            path,
            "mark-1",
            json!({"coupon_id": cid, "reason": "stale lock"}),
        )
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let r = app
        .post(path, json!({"coupon_id": cid, "reason": "again"}))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "repair_not_applicable"),
        "{}",
        r.text
    );
    assert_eq!(app.coupon(&cid).await["events"], events);

    // The order was refunded after the lock went stale (the refund returned
    // the locked coupon): the finding recorded before is refused.
    let c2 = paid_with_stale_lock(&app, "N2", "u2").await;
    let run = app
        .service
        .run_reconciliation("job:reconcile")
        .await
        .expect("run");
    let r = app
        .post("/api/v1/orders/N2/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(app.coupon(&c2).await["status"], "available");
    let before = app.coupon(&c2).await["events"].clone();
    let f = app
        .service
        .reconcile_findings(run.id, Some(AnomalyKind::LockedCouponOrderPaid), 10)
        .await
        .expect("findings")
        .into_iter()
        .find(|f| f.order_no.as_deref() == Some("N2"))
        .expect("N2 finding");
    let ctx = Ctx::new("staff:op", None);
    assert!(
        app.service
            .repair_finding(&ctx, &operator(), f.id, Some("late".into()))
            .await
            .is_err(),
        "the order is refunded now"
    );
    assert_eq!(app.coupon(&c2).await["events"], before, "nothing written");
    let noted = app.service.reconcile_finding(f.id).await.expect("finding");
    assert!(noted.repair_note.is_some() && noted.repaired_at.is_none());

    // The order changed status while the coupon stayed locked: refused.
    let c3 = paid_with_stale_lock(&app, "N3", "u3").await;
    plant(
        &app,
        "UPDATE orders SET status = 'refunded' WHERE order_no = 'N3'",
    )
    .await;
    let o_before = app.order_view("N3").await;
    let r = app
        .post(
            "/api/v1/orders/N3/mark-coupon-used",
            json!({"coupon_id": c3, "reason": "x"}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "repair_not_applicable"),
        "{}",
        r.text
    );
    assert_eq!(app.coupon(&c3).await["status"], "locked");
    assert_eq!(app.order_view("N3").await, o_before);
    assert_eq!(
        actions_of(&app.coupon(&cid).await),
        vec!["claim", "checkout_lock", "use", "mark_used"],
        "the planted lock wrote no event; the repair wrote one"
    );
}

async fn confirm(b: &mut Browser<'_>, path: &str, fields: &[(&str, &str)]) -> Page {
    let page = b.get(path).await;
    assert_eq!(page.status, 200, "{path}: {}", page.text);
    let csrf = page.csrf().expect("token");
    let mut all: Vec<(&str, &str)> = vec![("csrf", &csrf)];
    all.extend_from_slice(fields);
    b.post_form(path, &all).await
}

#[tokio::test]
async fn the_console_page_lists_findings_and_operators_repair_them() {
    let app = spawn_app().await;
    plant_all_four(&app).await;
    // Support may look and run, not repair.
    let mut support = signed_in(&app, Role::Support).await;
    let page = support.get("/console/reconciliation").await;
    assert_eq!(page.status, 200);
    assert!(page.contains("data-testid=\"no-run\""));
    let csrf = support.csrf().await;
    let r = support
        .post_form("/console/reconciliation/run", &[("csrf", &csrf)])
        .await;
    assert_eq!(r.status, 303);
    let page = support.get("/console/reconciliation").await;
    assert!(
        page.contains("data-testid=\"kind-locked_coupon_order_closed\""),
        "{}",
        page.text
    );
    assert!(page.contains("href=\"/console/orders/P1\""));
    assert!(
        !page.contains("data-testid=\"repair\""),
        "no repair buttons for support"
    );
    let runs = app.service.reconcile_runs(1).await.expect("runs");
    let run = &runs[0];
    let findings = app
        .service
        .reconcile_findings(run.id, None, 100)
        .await
        .expect("findings");
    let first = &findings[0];
    assert_eq!(
        support
            .get(&format!(
                "/console/reconciliation/findings/{}/repair",
                first.id
            ))
            .await
            .status,
        403
    );
    let forced = support
        .post_form(
            &format!("/console/reconciliation/findings/{}/repair", first.id),
            &[("csrf", &csrf), ("reason", "x")],
        )
        .await;
    assert_eq!(forced.status, 403);

    // An operator repairs one finding, then all of another kind.
    let mut op = signed_in(&app, Role::Operator).await;
    let page = op.get("/console/reconciliation").await;
    assert!(page.contains("data-testid=\"repair\"") && page.contains("data-testid=\"repair-all\""));
    let forged = op
        .post_form(
            &format!("/console/reconciliation/findings/{}/repair", first.id),
            &[("csrf", "forged"), ("reason", "x")],
        )
        .await;
    assert_eq!(forged.status, 403);
    let r = confirm(
        &mut op,
        &format!("/console/reconciliation/findings/{}/repair", first.id),
        &[("reason", "found by reconciliation")],
    )
    .await;
    assert_eq!(r.status, 303);
    assert!(
        app.service
            .reconcile_finding(first.id)
            .await
            .expect("f")
            .repaired_at
            .is_some()
    );
    let r = confirm(
        &mut op,
        &format!(
            "/console/reconciliation/runs/{}/kinds/stale_checkout_lock/repair",
            run.id
        ),
        &[("reason", "lapsed checkouts")],
    )
    .await;
    assert_eq!(r.status, 303);
    let page = op.visit("/console/reconciliation").await;
    assert!(
        page.contains("已修复 1 个") || page.contains("1 repaired"),
        "{}",
        page.text
    );
    assert!(page.contains("data-testid=\"history\""));
    assert_eq!(app.order_view("N4").await["status"], "closed");
}

#[tokio::test]
async fn the_reconciliation_page_needs_a_session() {
    let app = spawn_app().await;
    let mut b = Browser::new(&app);
    for path in [
        "/console/reconciliation",
        "/console/reconciliation/findings/1/repair",
        "/console/reconciliation/runs/1/kinds/stale_checkout_lock/repair",
    ] {
        let r = b.get(path).await;
        assert_eq!(r.status, 303, "{path}");
    }
    let r = b.post_form("/console/reconciliation/run", &[]).await;
    assert_eq!(r.status, 303);
    assert!(
        app.service
            .reconcile_runs(5)
            .await
            .expect("runs")
            .is_empty()
    );
}

/// The scan statements read their indexes in order on a big table: no full
/// scan of coupons or orders, no sort.
#[tokio::test]
async fn the_scan_statements_use_their_indexes_on_a_big_table() {
    use couponkeeper::store::Backend;
    use couponkeeper::store::reconcile::{
        locked_page_sql, orders_in_status_page_sql, refunded_orders_page_sql, used_since_page_sql,
    };
    let app = spawn_app().await;
    let pool = app.db.db.pool();
    let n: i64 = match app.db.db.backend() {
        Backend::Postgres => 200_000,
        Backend::Sqlite => 20_000,
    };
    let series = match app.db.db.backend() {
        Backend::Postgres => format!(
            "SELECT g FROM generate_series(CAST(1 AS BIGINT), CAST({n} AS BIGINT)) AS gs(g)"
        ),
        Backend::Sqlite => format!(
            "WITH RECURSIVE seq(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM seq WHERE g < {n}) SELECT g FROM seq"
        ),
    };
    plant(
        &app,
        &format!(
            "INSERT INTO coupons (id, code, user_id, template_id, source, kind, value_cents, percent_off,
                 max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no,
                 locked_at, used_at, created_at, updated_at)
             SELECT 'b-' || CAST(g AS TEXT), 'B-' || CAST(g AS TEXT), 'u-' || CAST(g % 9000 AS TEXT), NULL,
                 'claim', 'fixed', 500, NULL, NULL, 0, '[]',
                 CASE WHEN g % 100 < 60 THEN 'available' WHEN g % 100 < 90 THEN 'used'
                      WHEN g % 100 < 98 THEN 'expired' ELSE 'locked' END,
                 0, 9999999999999, 'O-' || CAST(g AS TEXT), g, g, 0, g
             FROM ({series}) s"
        ),
    )
    .await;
    plant(
        &app,
        &format!(
            "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, deposit_cents,
                 coupon_id, coupon_discount_cents, discount_snapshot_cents, coupon_lock_status,
                 compensation_cents, created_at, updated_at)
             SELECT 'O-' || CAST(g AS TEXT), 'u-' || CAST(g % 9000 AS TEXT), 'normal', 'c',
                 CASE WHEN g % 100 < 90 THEN 'paid' WHEN g % 100 < 95 THEN 'closed' ELSE 'pending_payment' END,
                 1000, 0, 'b-' || CAST(g AS TEXT), 0, 0, 'used', 0, 0, 0
             FROM ({series}) s"
        ),
    )
    .await;
    plant(
        &app,
        &format!(
            "INSERT INTO order_refunds (order_no, refund_id, whole, reason, refund_cents,
                 clawback_cents, actor, at)
             SELECT 'O-' || CAST(g AS TEXT), 'r1', 0, 'bench', 100, 0, 'api', g
             FROM ({series}) s WHERE g % 10 = 0"
        ),
    )
    .await;
    match app.db.db.backend() {
        Backend::Postgres => {
            plant(&app, "ANALYZE coupons").await;
            plant(&app, "ANALYZE orders").await;
            plant(&app, "ANALYZE order_refunds").await;
        }
        Backend::Sqlite => plant(&app, "ANALYZE").await,
    }
    let statements: [(&str, String, &str); 4] = [
        (
            "locked coupons",
            locked_page_sql(),
            "coupons_status_locked_at_idx",
        ),
        (
            "used coupons",
            used_since_page_sql(),
            "coupons_status_updated_at_idx",
        ),
        (
            "live orders",
            orders_in_status_page_sql(),
            "orders_status_no_idx",
        ),
        (
            "refunded orders",
            refunded_orders_page_sql().to_string(),
            "order_refunds_at_idx",
        ),
    ];
    let mut conn = pool.acquire().await.expect("connection");
    for (what, sql, index) in &statements {
        let explain = crate::common::explain_sql(app.db.db.backend(), sql);
        let q = sqlx::query(&explain);
        let q = match *what {
            "locked coupons" => q.bind(100_i64).bind("b-1").bind(500_i64),
            "used coupons" => q.bind(1000_i64).bind("b-1").bind(500_i64),
            "refunded orders" => q.bind(1000_i64).bind("O-1").bind(500_i64),
            _ => q.bind("pending_payment").bind("").bind(500_i64),
        };
        let rows = q.fetch_all(&mut *conn).await.expect("explain");
        let plan = crate::common::plan_text(&rows, app.db.db.backend());
        println!("{what}:\n{plan}\n");
        assert!(plan.contains(index), "{what} uses {index}:\n{plan}");
        for full in [
            "Seq Scan on coupons",
            "Seq Scan on orders",
            "SCAN coupons",
            "SCAN orders",
            "Seq Scan on order_refunds",
            "SCAN order_refunds",
        ] {
            assert!(
                !plan.contains(full),
                "{what} must not scan the whole table:\n{plan}"
            );
        }
        assert!(
            !plan.contains("TEMP B-TREE FOR ORDER BY") && !plan.contains("Sort"),
            "{what} reads in index order:\n{plan}"
        );
    }
}

#[tokio::test]
async fn a_finding_stored_as_prose_before_the_catalog_still_reads_in_both_languages() {
    use couponkeeper::i18n::{Lang, Msg};
    use sqlx::Row;
    let t = crate::common::TestDb::fresh_through(4, 13).await;
    let pool = t.db.pool();
    sqlx::query(
        "INSERT INTO reconcile_runs (actor, started_at, finished_at, found, found_by_kind)
         VALUES ('job:reconcile', 1, 2, 1, '{}')",
    )
    .execute(pool)
    .await
    .expect("run");
    sqlx::query(
        "INSERT INTO reconcile_findings (run_id, kind, coupon_id, order_no, detail, detail_zh, fix)
         VALUES (1, 'stale_checkout_lock', 'cpn_1', 'P1', 'order P1 is past its lock', '订单 P1 结算锁已过期', 'cancel_order')",
    )
    .execute(pool)
    .await
    .expect("a finding written the old way");
    t.db.migrate().await.expect("the rest of the migrations");
    let row = sqlx::query("SELECT message_key, message_args FROM reconcile_findings")
        .fetch_one(pool)
        .await
        .expect("the finding");
    let key: String = row.get(0);
    let args: String = row.get(1);
    let m = Msg::from_stored(&key, &args);
    assert_eq!(Lang::Zh.msg(&m), "订单 P1 结算锁已过期");
    assert_eq!(Lang::En.msg(&m), "order P1 is past its lock");
}

#[tokio::test]
async fn findings_orders_coupons_and_the_audit_log_name_things_as_people_do() {
    let app = spawn_app().await;
    plant_all_four(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let csrf = b.csrf().await;
    let r = b
        .post_form("/console/reconciliation/run", &[("csrf", &csrf)])
        .await;
    assert_eq!(r.status, 303);
    let mut pages = vec![
        "/console/reconciliation".to_string(),
        "/console/audit".to_string(),
    ];
    let orders: Vec<String> = sqlx::query_scalar("SELECT order_no FROM orders ORDER BY order_no")
        .fetch_all(app.db.db.pool())
        .await
        .expect("orders");
    let coupons: Vec<String> = sqlx::query_scalar("SELECT id FROM coupons ORDER BY id")
        .fetch_all(app.db.db.pool())
        .await
        .expect("coupons");
    assert!(!orders.is_empty() && !coupons.is_empty());
    for no in &orders {
        pages.push(format!("/console/orders/{no}?check=1"));
    }
    for id in &coupons {
        pages.push(format!("/console/coupons/{id}"));
    }
    for path in pages {
        let page = b.get(&path).await;
        assert_eq!(page.status, 200, "{path}");
        // The audit filter's hint spells out the stored actor format for
        // the filter field; the rows are what people read.
        let html = match page.text.split_once("data-testid=\"audit-table\"") {
            Some((_, rows)) => rows,
            None => page.text.as_str(),
        };
        let bad =
            crate::common::console::unreadable_words(&crate::common::console::visible_text(html));
        assert!(bad.is_empty(), "{path} shows {bad:#?}");
    }
}

#[tokio::test]
async fn a_finding_fixed_after_the_run_shows_as_resolved_by_whom_without_a_new_run() {
    let app = spawn_app().await;
    let planted = plant_all_four(&app).await;
    let (_, closed_coupon, _) = planted
        .iter()
        .find(|(k, _, _)| *k == "locked_coupon_order_closed")
        .cloned()
        .expect("planted");
    let mut op = signed_in(&app, Role::Operator).await;
    let csrf = op.csrf().await;
    op.post_form("/console/reconciliation/run", &[("csrf", &csrf)])
        .await;
    let before = op.get("/console/reconciliation").await;
    assert!(!before.contains("data-testid=\"resolved\""));

    // Support fixes it from the coupon page, not from reconciliation.
    let mut support = signed_in(&app, Role::Support).await;
    let r = crate::common::console::confirm(
        &mut support,
        &format!("/console/coupons/{closed_coupon}/release"),
        &[("reason", "客户来电")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);

    let after = op.get("/console/reconciliation").await;
    let section = after
        .text
        .split_once("data-testid=\"kind-locked_coupon_order_closed\"")
        .map(|(_, s)| s.split("</section>").next().unwrap_or(""))
        .unwrap_or("");
    assert!(section.contains("data-testid=\"resolved\""), "{section}");
    assert!(section.contains("客服后台：support-1"), "{section}");
    assert!(section.contains("客服释放"), "{section}");
    // The counts agree: found 1, still open 0, and no repair-all for it.
    let row = after
        .text
        .split_once("<tr data-kind=\"locked_coupon_order_closed\"")
        .map(|(_, s)| s.split("</tr>").next().unwrap_or(""))
        .unwrap_or("");
    let cell = |html: &str, testid: &str| -> String {
        html.split_once(&format!("data-testid=\"{testid}\""))
            .and_then(|(_, rest)| rest.split_once('>'))
            .map(|(_, rest)| rest.split('<').next().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    assert_eq!(cell(row, "count"), "1", "{row}");
    assert_eq!(cell(row, "open-count"), "0", "{row}");
    assert!(!row.contains("repair-all"), "{row}");
    // The other kinds stay open.
    let other = after
        .text
        .split_once("<tr data-kind=\"coupon_order_mismatch\"")
        .map(|(_, s)| s.split("</tr>").next().unwrap_or(""))
        .unwrap_or("");
    assert_eq!(cell(other, "open-count"), "1", "{other}");
}
