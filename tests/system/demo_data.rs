//! `couponkeeper demo-data`: the demo load on a fresh database (SQLite, or
//! PostgreSQL with `COUPONKEEPER_TEST_STORE=postgres`).

use std::collections::BTreeSet;

use couponkeeper::config::Config;
use couponkeeper::demo::{self, DemoReport};
use couponkeeper::store::Db;

use crate::common::{TestDb, epoch};

async fn load(db: &Db) -> DemoReport {
    demo::load(db, &Config::default(), epoch())
        .await
        .unwrap_or_else(|e| panic!("demo load failed: {e}"))
}

async fn count(db: &Db, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(db.pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Row counts of every table the demo writes.
async fn table_counts(db: &Db) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for t in [
        "templates",
        "template_stock_shards",
        "template_user_claims",
        "coupons",
        "presale_campaigns",
        "orders",
        "events",
        "compensation_ledger",
        "outbox",
    ] {
        out.push((
            t.to_string(),
            count(db, &format!("SELECT COUNT(*) FROM {t}")).await,
        ));
    }
    out
}

#[tokio::test]
async fn a_fresh_database_gets_every_order_status_and_every_coupon_status() {
    let t = TestDb::fresh().await;
    let r = load(&t.db).await;
    assert!(!r.already_present);
    assert_eq!(r.orders, demo::ORDER_COUNT, "{r:?}");
    assert_eq!(r.templates, 8);
    for s in [
        "normal/pending_payment",
        "normal/paid",
        "normal/closed",
        "normal/refunded",
        "presale/pending_deposit",
        "presale/deposit_paid",
        "presale/final_paid",
        "presale/closed",
        "presale/refunded",
    ] {
        assert!(
            r.orders_by_status.get(s).copied().unwrap_or(0) > 0,
            "no {s} order: {:?}",
            r.orders_by_status
        );
    }
    // Stored statuses, not just effective ones: the demo ran the expiry.
    for s in ["available", "locked", "used", "expired", "invalidated"] {
        let n = count(
            &t.db,
            &format!("SELECT COUNT(*) FROM coupons WHERE status = '{s}'"),
        )
        .await;
        assert!(n > 0, "no {s} coupon");
    }
    // Each presale policy, and the three window positions.
    for p in ["lock", "strict", "swap_or_compensate"] {
        assert_eq!(
            count(
                &t.db,
                &format!("SELECT COUNT(*) FROM presale_campaigns WHERE policy = '{p}'")
            )
            .await,
            1
        );
    }
    // The presale stories: strict expiry, swap, compensation, timeout.
    for (action, reason_like) in [
        ("release_expired", "%strict%"),
        ("release_expired", "%swap_or_compensate%"),
        ("presale_timeout", "%"),
        ("checkout_lock_lapsed", "%"),
        ("swap_lock", "%"),
    ] {
        let n = count(
            &t.db,
            &format!(
                "SELECT COUNT(*) FROM events WHERE action = '{action}' AND COALESCE(reason, '') LIKE '{reason_like}'"
            ),
        )
        .await;
        assert!(n > 0, "no {action} event ({reason_like})");
    }
    assert_eq!(
        count(&t.db, "SELECT COUNT(*) FROM compensation_ledger").await,
        1
    );
    // The sold-out template handed out exactly its stock.
    assert_eq!(
        count(
            &t.db,
            "SELECT COUNT(*) FROM coupons c JOIN templates t ON t.id = c.template_id \
             WHERE t.total_stock = 8"
        )
        .await,
        8
    );
    // A deposit-paid order on the future campaign whose coupon ends before
    // the final-payment window opens.
    assert!(
        count(
            &t.db,
            "SELECT COUNT(*) FROM orders o JOIN coupons c ON c.id = o.coupon_id \
             JOIN presale_campaigns p ON p.id = o.campaign_id \
             WHERE o.status = 'deposit_paid' AND c.status = 'locked' \
             AND c.ends_at < p.final_payment_starts_at"
        )
        .await
            > 0
    );
}

#[tokio::test]
async fn each_planted_anomaly_is_really_in_the_rows() {
    let t = TestDb::fresh().await;
    let r = load(&t.db).await;
    let kinds: Vec<&str> = r.anomalies.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "locked_coupon_order_closed",
            "order_active_coupon_not_locked",
            "coupon_order_mismatch",
            "coupon_not_returned_after_refunds",
            "stale_checkout_lock",
        ],
        "exactly the planted anomalies, none by accident: {:?}",
        r.anomalies
    );
    let now_ms = epoch().timestamp_millis();
    for a in &r.anomalies {
        let (o_status, o_kind, o_coupon, lock_ms): (String, String, Option<String>, Option<i64>) =
            sqlx::query_as(
                "SELECT status, kind, coupon_id, checkout_lock_expires_at FROM orders WHERE order_no = $1",
            )
            .bind(&a.order_no)
            .fetch_one(t.db.pool())
            .await
            .expect("the anomaly's order exists");
        let (c_status, c_order, c_code, c_user): (String, Option<String>, String, String) =
            sqlx::query_as("SELECT status, order_no, code, user_id FROM coupons WHERE id = $1")
                .bind(&a.coupon_id)
                .fetch_one(t.db.pool())
                .await
                .expect("the anomaly's coupon exists");
        assert_eq!(c_code, a.code);
        assert_eq!(c_user, a.user_id);
        match a.kind.as_str() {
            "locked_coupon_order_closed" => {
                // The end-to-end test's main scenario.
                assert_eq!((o_kind.as_str(), o_status.as_str()), ("presale", "closed"));
                assert_eq!(c_status, "locked");
                assert_eq!(c_order.as_deref(), Some(a.order_no.as_str()));
                assert_eq!(o_coupon.as_deref(), Some(a.coupon_id.as_str()));
            }
            "order_active_coupon_not_locked" => {
                assert_eq!(
                    (o_kind.as_str(), o_status.as_str()),
                    ("presale", "deposit_paid")
                );
                assert_eq!(c_status, "available");
                assert_eq!(c_order, None);
                assert_eq!(o_coupon.as_deref(), Some(a.coupon_id.as_str()));
            }
            "coupon_order_mismatch" => {
                assert_eq!(c_status, "used");
                assert_eq!(c_order.as_deref(), Some(a.order_no.as_str()));
                assert!(o_coupon.is_some() && o_coupon.as_deref() != Some(a.coupon_id.as_str()));
            }
            "stale_checkout_lock" => {
                assert_eq!(
                    (o_kind.as_str(), o_status.as_str()),
                    ("normal", "pending_payment")
                );
                assert!(lock_ms.is_some_and(|l| l <= now_ms), "lock lapsed");
                assert_eq!(c_status, "locked");
                assert_eq!(c_order.as_deref(), Some(a.order_no.as_str()));
            }
            "coupon_not_returned_after_refunds" => {
                // Paid, partly refunded by line; its coupon still used
                // although every item it discounted is marked refunded.
                assert_eq!((o_kind.as_str(), o_status.as_str()), ("normal", "paid"));
                assert_eq!(c_status, "used");
                assert_eq!(c_order.as_deref(), Some(a.order_no.as_str()));
                assert_eq!(o_coupon.as_deref(), Some(a.coupon_id.as_str()));
            }
            other => panic!("unexpected kind {other}"),
        }
    }
}

#[tokio::test]
async fn every_coupon_and_order_has_a_timeline_written_by_the_demo_actor_in_the_past() {
    let t = TestDb::fresh().await;
    load(&t.db).await;
    assert_eq!(
        count(
            &t.db,
            "SELECT COUNT(*) FROM coupons c WHERE NOT EXISTS \
             (SELECT 1 FROM events e WHERE e.coupon_id = c.id)"
        )
        .await,
        0,
        "a coupon without events"
    );
    assert_eq!(
        count(
            &t.db,
            "SELECT COUNT(*) FROM orders o WHERE NOT EXISTS \
             (SELECT 1 FROM events e WHERE e.subject = 'order' AND e.order_no = o.order_no)"
        )
        .await,
        0,
        "an order without events"
    );
    assert_eq!(
        count(
            &t.db,
            "SELECT COUNT(*) FROM events WHERE actor <> 'demo:seed'"
        )
        .await,
        0
    );
    let now_ms = epoch().timestamp_millis();
    let (first, last): (i64, i64) = sqlx::query_as("SELECT MIN(at), MAX(at) FROM events")
        .fetch_one(t.db.pool())
        .await
        .expect("events");
    assert!(last <= now_ms, "no event after now");
    assert!(
        now_ms - first >= 9 * 86_400_000,
        "the timeline spans days, not seconds"
    );
    let distinct = count(&t.db, "SELECT COUNT(DISTINCT at) FROM events").await;
    assert!(distinct > 100, "timestamps spread out, got {distinct}");
    let orders: BTreeSet<String> = sqlx::query_scalar("SELECT order_no FROM orders")
        .fetch_all(t.db.pool())
        .await
        .expect("orders")
        .into_iter()
        .collect();
    assert!(orders.contains("DEMO-N-0001") && orders.contains("DEMO-P-0001"));
    assert!(
        orders
            .iter()
            .all(|o| o.starts_with("DEMO-N-") || o.starts_with("DEMO-P-"))
    );
}

#[tokio::test]
async fn a_second_run_writes_nothing_and_reports_what_is_there() {
    let t = TestDb::fresh().await;
    let first = load(&t.db).await;
    let before = table_counts(&t.db).await;
    let second = load(&t.db).await;
    assert!(second.already_present);
    assert_eq!(table_counts(&t.db).await, before);
    assert_eq!(second.orders, first.orders);
    assert_eq!(second.coupons, first.coupons);
    assert_eq!(second.anomalies, first.anomalies);
}

#[tokio::test]
async fn the_load_stays_within_a_bounded_number_of_rows() {
    let t = TestDb::fresh().await;
    let r = load(&t.db).await;
    assert!(r.coupons > 100 && r.coupons < 400, "{} coupons", r.coupons);
    for (table, n) in table_counts(&t.db).await {
        assert!(n < 2000, "{table}: {n} rows");
    }
    assert_eq!(
        count(
            &t.db,
            "SELECT COUNT(DISTINCT user_id) FROM coupons WHERE user_id LIKE 'u100%'"
        )
        .await,
        40
    );
}

#[tokio::test]
async fn a_half_done_load_is_refused_with_a_clear_message() {
    let t = TestDb::fresh().await;
    sqlx::query(
        "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, created_at, updated_at) \
         VALUES ('DEMO-N-0001', 'u10001', 'normal', 'books', 'paid', 100, 0, 0)",
    )
    .execute(t.db.pool())
    .await
    .expect("insert");
    let err = demo::load(&t.db, &Config::default(), epoch())
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("stopped half-way"), "{err}");
}

#[tokio::test]
async fn the_command_prints_one_json_object_and_a_second_run_says_already_present() {
    let t = TestDb::fresh().await;
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_couponkeeper"))
            .args(["demo-data", "--json"])
            .env("DATABASE_URL", &t.url)
            .env("RUST_LOG", "warn")
            .output()
            .expect("run couponkeeper")
    };
    let out = run();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    assert_eq!(v["orders"], demo::ORDER_COUNT);
    assert_eq!(v["already_present"], false);
    assert!(v["templates"].as_i64().unwrap_or(0) > 0);
    assert!(v["coupons"].as_i64().unwrap_or(0) > 0);
    let a = &v["anomalies"][0];
    for k in ["kind", "order_no", "coupon_id", "code", "user_id"] {
        assert!(a[k].is_string(), "anomaly field {k}: {v}");
    }
    let again = run();
    assert!(again.status.success());
    let w: serde_json::Value = serde_json::from_slice(&again.stdout).expect("json");
    assert_eq!(w["already_present"], true);
    assert_eq!(w["orders"], v["orders"]);
    let human = std::process::Command::new(env!("CARGO_BIN_EXE_couponkeeper"))
        .arg("demo-data")
        .env("DATABASE_URL", &t.url)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(human.status.success());
    assert!(text.contains("demo data already present"), "{text}");
    assert!(text.contains("locked_coupon_order_closed"), "{text}");
}
