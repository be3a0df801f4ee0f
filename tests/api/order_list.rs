//! The order list for support: `GET /orders` (filters, newest first,
//! keyset pages, clear refusals) and the plan of every filter it offers,
//! on both stores.

use crate::common::fixtures::{count, plant, user_with_coupon};
use crate::common::{Store, TestApp, normal_order, presale_order, spawn_app, store};
use couponkeeper::domain::ids::CampaignId;
use couponkeeper::domain::order::{CouponLockStatus, OrderKind, OrderStatus};
use couponkeeper::store::orders::{OrderPageQuery, explain_page};
use serde_json::{Value, json};

fn order_nos(page: &Value) -> Vec<String> {
    page["orders"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| o["order_no"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Three normal orders (one paid, one cancelled, one waiting) and one
/// presale order with its deposit paid, a second apart, oldest first.
async fn shop(app: &TestApp) -> String {
    let cid = user_with_coupon(app, "u1", 30 * 86_400).await;
    assert_eq!(
        app.order(normal_order("N-100", "u1", Some(&cid), 40_000))
            .await
            .status,
        201
    );
    assert_eq!(
        app.post("/api/v1/orders/N-100/pay", json!({})).await.status,
        200
    );
    app.advance(1);
    assert_eq!(
        app.order(normal_order("N-101", "u2", None, 10_000))
            .await
            .status,
        201
    );
    assert_eq!(
        app.post("/api/v1/orders/N-101/cancel", json!({}))
            .await
            .status,
        200
    );
    app.advance(1);
    assert_eq!(
        app.order(normal_order("n-102", "u3", None, 10_000))
            .await
            .status,
        201
    );
    app.advance(1);
    let cmp = app.campaign("strict", 3600, 3600).await;
    let cmp_id = cmp["id"].as_str().expect("campaign id").to_string();
    let pcid = user_with_coupon(app, "u4", 30 * 86_400).await;
    assert_eq!(
        app.order(presale_order("P-200", "u4", Some(&pcid), &cmp_id))
            .await
            .status,
        201
    );
    assert_eq!(
        app.post("/api/v1/orders/P-200/deposit-payment", json!({}))
            .await
            .status,
        200
    );
    cmp_id
}

#[tokio::test]
async fn orders_list_newest_first_and_each_filter_narrows_the_rows() {
    let app = spawn_app().await;
    let cmp = shop(&app).await;
    let all = app.get("/api/v1/orders").await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(order_nos(&all.body), ["P-200", "n-102", "N-101", "N-100"]);
    assert!(all.body["next"].is_null());
    assert_eq!(all.body["orders"][0]["status"], "deposit_paid");
    assert_eq!(all.body["orders"][0]["coupon_lock_status"], "locked");
    assert!(
        all.body["orders"][0].get("events").is_none(),
        "a list row carries no timeline"
    );
    let cases: [(String, Vec<&str>); 8] = [
        ("status=paid".into(), vec!["N-100"]),
        ("status=closed".into(), vec!["N-101"]),
        ("kind=presale".into(), vec!["P-200"]),
        (format!("campaign_id={cmp}"), vec!["P-200"]),
        ("coupon_lock_status=used".into(), vec!["N-100"]),
        ("coupon_lock_status=locked".into(), vec!["P-200"]),
        // Exact prefix: "N-10" is not "n-10".
        ("order_no_prefix=N-10".into(), vec!["N-101", "N-100"]),
        ("kind=normal&status=pending_payment".into(), vec!["n-102"]),
    ];
    for (q, want) in cases {
        let r = app.get(&format!("/api/v1/orders?{q}")).await;
        assert_eq!(r.status, 200, "{q}: {}", r.text);
        assert_eq!(order_nos(&r.body), want, "{q}");
    }
    // Created between: instants, and business days covering today.
    let from = app.at(-2);
    let r = app
        .get(&format!(
            "/api/v1/orders?created_from={}&created_to={}",
            urlencode(&app.at(-2)),
            urlencode(&app.at(0))
        ))
        .await;
    assert_eq!(order_nos(&r.body), ["n-102", "N-101"], "from {from}");
    let today = app.service.settings().reminders.tz.local(app.now()).date();
    let r = app
        .get(&format!(
            "/api/v1/orders?created_from={today}&created_to={today}"
        ))
        .await;
    assert_eq!(order_nos(&r.body).len(), 4, "{}", r.text);
}

fn urlencode(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}

#[tokio::test]
async fn orders_list_pages_by_cursor_without_repeats_or_gaps() {
    let app = spawn_app().await;
    // Several orders in the same millisecond: the cursor must still walk
    // them by order number.
    for i in 0..7 {
        let no = format!("S-{i}");
        assert_eq!(
            app.order(normal_order(&no, "u1", None, 1000)).await.status,
            201
        );
        if i % 3 == 2 {
            app.advance(1);
        }
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let path = match &cursor {
            None => "/api/v1/orders?limit=2".to_string(),
            Some(c) => format!("/api/v1/orders?limit=2&cursor={c}"),
        };
        let r = app.get(&path).await;
        assert_eq!(r.status, 200, "{}", r.text);
        seen.extend(order_nos(&r.body));
        match r.body["next"].as_str() {
            Some(n) => cursor = Some(n.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, ["S-6", "S-5", "S-4", "S-3", "S-2", "S-1", "S-0"]);
}

#[tokio::test]
async fn bad_order_list_filters_are_refused_naming_the_field() {
    let app = spawn_app().await;
    for (q, field) in [
        ("status=lost", "status"),
        ("kind=gift", "kind"),
        ("coupon_lock_status=held", "coupon_lock_status"),
        ("created_from=yesterday", "created_from"),
        ("created_to=2026-02-30", "created_to"),
        (
            "created_from=2026-12-02&created_to=2026-12-01",
            "created_to",
        ),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("cursor=nonsense", "cursor"),
    ] {
        let r = app.get(&format!("/api/v1/orders?{q}")).await;
        assert_eq!(
            (r.status, r.code(), r.field()),
            (400, "invalid_request", field),
            "{q}: {}",
            r.text
        );
    }
    let r = app.get_as("/api/v1/orders", None).await;
    assert_eq!(r.status, 401, "the list needs the API token");
}

/// Fills `orders` with `n` rows: statuses, kinds, lock statuses and a few
/// campaigns spread as a shop's would be, for the plan tests.
async fn fill_orders(app: &TestApp, n: i64, now_ms: i64) {
    let (with, source) = crate::common::series(n);
    plant(
        app,
        &format!(
            "INSERT INTO presale_campaigns (id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at)
             VALUES ('cmp-1', 'bulk 1', {now_ms}, {now_ms} + 1, 'lock', 0),
                    ('cmp-2', 'bulk 2', {now_ms}, {now_ms} + 1, 'strict', 0)"
        ),
    )
    .await;
    plant(
        app,
        &format!(
            "{with} INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, deposit_cents,
                 campaign_id, coupon_id, replaced_coupon_id, coupon_discount_cents, discount_snapshot_cents,
                 coupon_lock_status, compensation_cents, final_payment_cents, checkout_lock_expires_at,
                 created_at, deposit_paid_at, paid_at, closed_at, refunded_at, updated_at)
             SELECT 'BULK-' || CAST(g AS TEXT), 'user-' || CAST(g % 5000 AS TEXT),
                 CASE WHEN g % 10 = 0 THEN 'presale' ELSE 'normal' END, 'phones',
                 CASE WHEN g % 10 = 0 THEN 'deposit_paid' WHEN g % 7 = 0 THEN 'closed' ELSE 'paid' END,
                 10000, 0,
                 CASE WHEN g % 10 = 0 THEN CASE WHEN g % 20 = 0 THEN 'cmp-1' ELSE 'cmp-2' END ELSE NULL END,
                 NULL, NULL, 0, 0,
                 CASE WHEN g % 10 = 0 THEN 'locked' WHEN g % 7 = 0 THEN 'none' ELSE 'used' END,
                 0, NULL, NULL, {now_ms} - g * 1000, NULL, NULL, NULL, NULL, {now_ms}
             FROM {source}"
        ),
    )
    .await;
    plant(app, "ANALYZE").await;
}

#[tokio::test]
async fn every_order_list_filter_reads_an_index_range_without_sorting_all_orders() {
    let app = spawn_app().await;
    let now_ms = app.now().timestamp_millis();
    let n = match store() {
        Store::Postgres => 200_000,
        Store::Sqlite => 20_000,
    };
    fill_orders(&app, n, now_ms).await;
    assert_eq!(count(&app, "SELECT COUNT(*) FROM orders").await, n);
    let (cmp1, cmp2) = (CampaignId::from("cmp-1"), CampaignId::from("cmp-2"));
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    let day_ms = 86_400_000;
    let filters: Vec<(&str, OrderPageQuery<'_>)> = vec![
        ("no filter", OrderPageQuery::default()),
        (
            "status",
            OrderPageQuery {
                status: Some(OrderStatus::DepositPaid),
                ..Default::default()
            },
        ),
        (
            "kind",
            OrderPageQuery {
                kind: Some(OrderKind::Presale),
                ..Default::default()
            },
        ),
        (
            "campaign",
            OrderPageQuery {
                campaign_id: Some(&cmp1),
                ..Default::default()
            },
        ),
        (
            "lock status",
            OrderPageQuery {
                coupon_lock_status: Some(CouponLockStatus::Locked),
                ..Default::default()
            },
        ),
        (
            "created between",
            OrderPageQuery {
                created_from: Some(now_ms - day_ms),
                created_to: Some(now_ms),
                ..Default::default()
            },
        ),
        (
            "order number prefix",
            OrderPageQuery {
                order_no_prefix: Some("BULK-1999"),
                ..Default::default()
            },
        ),
        (
            "status and campaign and days",
            OrderPageQuery {
                status: Some(OrderStatus::DepositPaid),
                campaign_id: Some(&cmp2),
                created_from: Some(now_ms - day_ms),
                ..Default::default()
            },
        ),
    ];
    for (what, base) in filters {
        for before in [None, Some((now_ms - 5_000_000, "BULK-5000"))] {
            let q = OrderPageQuery {
                before,
                limit: 51,
                ..base.clone()
            };
            let plan = explain_page(&mut conn, &q)
                .await
                .expect("explain")
                .join("\n");
            println!("{what} (cursor: {}):\n{plan}\n", before.is_some());
            // A table scan, or walking a whole index without a range, is
            // allowed only where the walk is in page order and stops at
            // the LIMIT: no filter, and the kind (two values, no index of
            // its own), which walk orders_created_idx newest first.
            assert!(
                !plan.contains("Seq Scan on orders")
                    && !plan
                        .lines()
                        .any(|l| l.trim() == "SCAN orders" || l.trim() == "SCAN TABLE orders"),
                "{what} must not read the table:\n{plan}"
            );
            let walk = ["no filter", "kind"].contains(&what);
            if walk {
                assert!(
                    plan.contains("orders_created_idx"),
                    "{what} walks the creation index:\n{plan}"
                );
            } else {
                assert!(
                    plan.contains("SEARCH") || plan.contains("Index Cond"),
                    "{what} reads an index range:\n{plan}"
                );
            }
            // Only a prefix alone may sort, and then only its own matches.
            if what != "order number prefix" {
                assert!(
                    !plan.contains("TEMP B-TREE") && !plan.contains("Sort"),
                    "{what} must come out of the index in page order:\n{plan}"
                );
            }
        }
    }
    // And the page it plans returns the right rows.
    let rows = couponkeeper::store::orders::page(
        &mut conn,
        &OrderPageQuery {
            campaign_id: Some(&cmp1),
            limit: 3,
            ..Default::default()
        },
    )
    .await
    .expect("page");
    let nos: Vec<&str> = rows.iter().map(|r| r.order_no.as_str()).collect();
    assert_eq!(nos, ["BULK-20", "BULK-40", "BULK-60"]);
}
