//! The deadline worker (timing wheel) and the job loops, driven with a
//! manual clock.

use std::sync::Arc;

use crate::common::fixtures::order;
use crate::common::{TestService, epoch, spawn_app};
use chrono::Duration;
use couponkeeper::domain::cart::{OrderInput, OrderSpec};
use couponkeeper::domain::coupon::CouponStatus;
use couponkeeper::domain::ids::{CouponId, TemplateId, UserId};
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::jobs::JobSettings;
use couponkeeper::jobs::Jobs;
use couponkeeper::jobs::worker::DeadlineWorker;
use couponkeeper::metrics::Metrics;
use couponkeeper::service::jobs::Scheduler;
use serde_json::json;

fn worker(ts: &TestService) -> DeadlineWorker {
    let (scheduler, inbox) = Scheduler::channel(10_000);
    ts.service.attach_scheduler(scheduler);
    DeadlineWorker::new(
        ts.service.clone(),
        JobSettings::default(),
        Arc::new(Metrics::default()),
        inbox,
    )
}

async fn template(ts: &TestService, valid_seconds: i64) -> TemplateId {
    ts.service
        .create_template(
            &ts.ctx(),
            None,
            TemplateInput {
                name: Some("满300减50".into()),
                kind: Some("fixed".into()),
                value_cents: Some(5000),
                min_order_cents: Some(30000),
                valid_seconds: Some(valid_seconds),
                ..Default::default()
            },
        )
        .await
        .expect("template")
        .fresh()
        .expect("fresh")
        .id
}

async fn claim(ts: &TestService, user: &str, tpl: &TemplateId) -> CouponId {
    ts.service
        .claim(
            &ts.ctx(),
            None,
            UserId::parse(user).expect("user"),
            tpl.clone(),
        )
        .await
        .expect("claim")
        .fresh()
        .expect("fresh")
        .id
}

async fn stored_status(ts: &TestService, id: &CouponId) -> String {
    sqlx::query_scalar("SELECT status FROM coupons WHERE id = $1")
        .bind(id)
        .fetch_one(ts.db.db.pool())
        .await
        .expect("row")
}

async fn expire_events(ts: &TestService, id: &CouponId) -> Vec<String> {
    sqlx::query_scalar("SELECT actor FROM events WHERE coupon_id = $1 AND action = 'expire'")
        .bind(id)
        .fetch_all(ts.db.db.pool())
        .await
        .expect("events")
}

#[tokio::test]
async fn a_coupon_claimed_while_the_worker_runs_expires_at_the_first_tick_after_its_end() {
    let ts = TestService::start().await;
    let mut w = worker(&ts);
    w.refill().await.expect("refill");
    let tpl = template(&ts, 10).await;
    let id = claim(&ts, "u1", &tpl).await;
    ts.clock.advance(Duration::milliseconds(9_999));
    let r = w.tick().await.expect("tick");
    assert_eq!(r.expired, 0);
    assert_eq!(stored_status(&ts, &id).await, "available");
    ts.clock.advance(Duration::milliseconds(1));
    let r = w.tick().await.expect("tick");
    assert_eq!(r.expired, 1);
    assert_eq!(stored_status(&ts, &id).await, "expired");
    assert_eq!(expire_events(&ts, &id).await, vec!["job:expiry-wheel"]);
    assert_eq!(w.pending(), 0);
}

#[tokio::test]
async fn the_refill_loads_what_is_due_within_the_horizon_and_leaves_the_rest_to_later() {
    let ts = TestService::start().await;
    let soon = template(&ts, 300).await;
    let later = template(&ts, 3600).await;
    let a = claim(&ts, "u1", &soon).await;
    let b = claim(&ts, "u1", &later).await;
    let mut w = worker(&ts);
    assert_eq!(
        w.refill().await.expect("refill"),
        1,
        "only the coupon due within 600 s"
    );
    ts.clock.advance(Duration::seconds(300));
    assert_eq!(w.tick().await.expect("tick").expired, 1);
    assert_eq!(stored_status(&ts, &a).await, "expired");
    ts.clock.advance(Duration::seconds(3000));
    w.refill().await.expect("refill");
    w.tick().await.expect("tick");
    assert_eq!(stored_status(&ts, &b).await, "available", "not due yet");
    ts.clock.advance(Duration::seconds(300));
    assert_eq!(w.tick().await.expect("tick").expired, 1);
    assert_eq!(stored_status(&ts, &b).await, "expired");
}

#[tokio::test]
async fn a_read_that_finds_an_overdue_coupon_hands_it_to_the_worker() {
    let ts = TestService::start().await;
    let tpl = template(&ts, 3600).await;
    let id = claim(&ts, "u1", &tpl).await;
    let mut w = worker(&ts);
    ts.clock.advance(Duration::seconds(3600));
    // The worker never loaded it (no refill); the read reports it expired
    // without writing and queues it.
    let view = ts.service.get_coupon(&id).await.expect("read");
    assert_eq!(view.status, CouponStatus::Expired);
    assert_eq!(stored_status(&ts, &id).await, "available");
    assert_eq!(w.tick().await.expect("tick").expired, 1);
    assert_eq!(stored_status(&ts, &id).await, "expired");
}

#[tokio::test]
async fn a_lapsed_checkout_lock_is_closed_by_the_wheel() {
    let ts = TestService::start().await;
    let mut w = worker(&ts);
    let tpl = template(&ts, 86_400).await;
    let id = claim(&ts, "u1", &tpl).await;
    checkout(&ts, "N1", "u1", &id).await;
    ts.clock.advance(Duration::seconds(899));
    assert_eq!(w.tick().await.expect("tick").orders_closed, 0);
    ts.clock.advance(Duration::seconds(1));
    assert_eq!(w.tick().await.expect("tick").orders_closed, 1);
    let o = ts.service.get_order(&order("N1")).await.expect("order");
    assert_eq!(
        (o.status.as_str(), o.coupon_lock_status.as_str()),
        ("closed", "released")
    );
    assert_eq!(stored_status(&ts, &id).await, "available");
}

#[tokio::test]
async fn a_worker_killed_mid_drain_loses_nothing_and_its_successor_expires_each_coupon_once() {
    let ts = TestService::start().await;
    let tpl = template(&ts, 60).await;
    let mut ids = Vec::new();
    for i in 0..1200 {
        ids.push(claim(&ts, &format!("u{i}"), &tpl).await);
    }
    ts.clock.advance(Duration::seconds(60));
    let mut first = worker(&ts);
    first.refill().await.expect("refill");
    let pool = ts.db.db.pool().clone();
    let drain = tokio::spawn(async move { first.tick().await });
    // Kill it once some, but not necessarily all, batches have committed.
    for _ in 0..2000 {
        let n: i64 = sqlx::query_scalar(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE status = 'expired'",
        )
        .fetch_one(&pool)
        .await
        .expect("count");
        if n > 0 || drain.is_finished() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    drain.abort();
    let _ = drain.await;
    let (scheduler, inbox) = Scheduler::channel(10);
    drop(scheduler);
    let mut second = DeadlineWorker::new(
        ts.service.clone(),
        JobSettings::default(),
        Arc::new(Metrics::default()),
        inbox,
    );
    second.refill().await.expect("refill after restart");
    second.tick().await.expect("tick after restart");
    let (expired, events): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE status = 'expired'),
                (SELECT CAST(COUNT(*) AS BIGINT) FROM events WHERE action = 'expire')",
    )
    .fetch_one(ts.db.db.pool())
    .await
    .expect("counts");
    assert_eq!(
        (expired, events),
        (1200, 1200),
        "every coupon expired exactly once"
    );
    let per_coupon_max: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(MAX(n), 0) AS BIGINT) FROM
           (SELECT COUNT(*) AS n FROM events WHERE action = 'expire' GROUP BY coupon_id) t",
    )
    .fetch_one(ts.db.db.pool())
    .await
    .expect("max");
    assert_eq!(per_coupon_max, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_jobs_expire_a_coupon_soon_after_its_end() {
    let ts = TestService::start().await;
    let tpl = template(&ts, 10).await;
    let jobs = Jobs::start(
        ts.service.clone(),
        JobSettings::default(),
        Arc::new(Metrics::default()),
    );
    let id = claim(&ts, "u1", &tpl).await;
    ts.clock.advance(Duration::seconds(10));
    // The loop turns every 200 ms of real time; give it at most 10 s.
    let mut status = String::new();
    for _ in 0..100 {
        status = stored_status(&ts, &id).await;
        if status == "expired" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    jobs.stop().await;
    assert_eq!(status, "expired");
}

#[tokio::test]
async fn pending_expirations_are_counted_per_hour_over_http() {
    let app = spawn_app().await;
    let in_30_min = app.template(json!({"valid_seconds": 1800})).await;
    let in_90_min = app.template(json!({"valid_seconds": 5400})).await;
    let gone = app.template(json!({"valid_seconds": 10})).await;
    for t in [&in_30_min, &in_90_min, &in_90_min, &gone] {
        app.claim("u1", t["id"].as_str().expect("id")).await;
    }
    app.advance(10);
    let r = app
        .get("/api/v1/expirations/pending?within_seconds=7200")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["total"], 3);
    assert_eq!(r.body["overdue"], 1);
    let buckets: Vec<(String, i64)> = r.body["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| {
            (
                b["starts_at"].as_str().unwrap_or("").to_string(),
                b["count"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    let start = epoch();
    assert_eq!(
        buckets,
        vec![
            (couponkeeper::domain::time::rfc3339(start), 1),
            (
                couponkeeper::domain::time::rfc3339(start + Duration::hours(1)),
                2
            ),
        ]
    );
    let r = app
        .get("/api/v1/expirations/pending?within_seconds=0")
        .await;
    assert_eq!((r.status, r.field()), (400, "within_seconds"));
    let r = app.get("/api/v1/expirations/pending").await;
    assert_eq!(r.body["total"], 3, "default window is 24 h");
}

#[tokio::test]
async fn the_sweep_expires_everything_overdue_in_bounded_batches_exactly_once() {
    let ts = TestService::start().await;
    let tpl = template(&ts, 10).await;
    let mut ids = Vec::new();
    for i in 0..1203 {
        ids.push(claim(&ts, &format!("u{i}"), &tpl).await);
    }
    ts.clock.advance(Duration::seconds(10));
    let metrics = Metrics::default();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let changed = couponkeeper::jobs::sweep(&ts.service, &JobSettings::default(), &metrics, &rx)
        .await
        .expect("sweep");
    assert_eq!(changed, 1203);
    let sweep_events: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM events WHERE action = 'expire' AND actor = 'job:expiry-sweep'",
    )
    .fetch_one(ts.db.db.pool())
    .await
    .expect("count");
    assert_eq!(sweep_events, 1203);
    // The store's batch: 100 on SQLite (one writer: requests wait for the
    // batch in progress), 500 on PostgreSQL.
    let (batch, batches) = match ts.db.db.backend() {
        couponkeeper::store::Backend::Sqlite => (100, 13),
        couponkeeper::store::Backend::Postgres => (500, 3),
    };
    assert_eq!(ts.service.expiry_batch(), batch);
    let rendered = metrics.render(None);
    assert!(
        rendered.contains(&format!("couponkeeper_expiry_batch_rows_count {batches}")),
        "1203 in batches of {batch}: {rendered}"
    );
    let again = couponkeeper::jobs::sweep(&ts.service, &JobSettings::default(), &metrics, &rx)
        .await
        .expect("sweep");
    assert_eq!(again, 0, "nothing twice");
}

#[tokio::test]
async fn archived_coupons_leave_the_hot_table_but_can_still_be_read() {
    let ts = TestService::start().await;
    let tpl = template(&ts, 10).await;
    let old = claim(&ts, "u1", &tpl).await;
    ts.clock.advance(Duration::seconds(10));
    ts.service
        .expire_due_batch("job:test", 500)
        .await
        .expect("expire");
    let young = claim(&ts, "u1", &tpl).await;
    ts.clock.advance(Duration::days(30) + Duration::seconds(1));
    let moved = ts.service.archive_terminal(30, 500).await.expect("archive");
    assert_eq!(moved, 1, "only the coupon terminal for more than 30 days");
    let hot: i64 = sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE id = $1")
        .bind(&old)
        .fetch_one(ts.db.db.pool())
        .await
        .expect("count");
    assert_eq!(hot, 0);
    let view = ts
        .service
        .get_coupon(&old)
        .await
        .expect("archived coupon is found");
    assert_eq!(view.status, CouponStatus::Expired);
    let actions: Vec<&str> = view
        .events
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|e| e.action.as_str())
        .collect();
    assert_eq!(actions, vec!["claim", "expire"]);
    let listed = ts
        .service
        .list_user_coupons(UserId::parse("u1").expect("user"), None, 100)
        .await
        .expect("list");
    let listed: Vec<&str> = listed.iter().map(|c| c.id.as_str()).collect();
    assert!(listed.contains(&old.as_str()) && listed.contains(&young.as_str()));
    assert_eq!(
        ts.service.archive_terminal(30, 500).await.expect("archive"),
        0
    );
}

/// Aborting a job or dropping a request mid-transaction happens in
/// production (a deploy, a client hanging up). Cancelled at any point of a
/// write, between `BEGIN` and its answer included, the caller must leave
/// the pool fit for the next transaction; with one connection a poisoned
/// one would be reused at once.
#[tokio::test]
async fn a_write_cancelled_at_any_point_leaves_the_pool_fit_for_the_next() {
    let tdb = crate::common::TestDb::fresh_with(1).await;
    let db = tdb.db.clone();
    for round in 0..400u32 {
        let write = db.write(|c| {
            Box::pin(async move {
                sqlx::query("SELECT 1").execute(&mut *c).await?;
                Ok::<_, sqlx::Error>(())
            })
        });
        let yields = round % 16;
        tokio::select! {
            _ = write => {}
            _ = async {
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
            } => {}
        }
        db.write(|c| {
            Box::pin(async move {
                sqlx::query("SELECT 1").execute(&mut *c).await?;
                Ok::<_, sqlx::Error>(())
            })
        })
        .await
        .unwrap_or_else(|e| panic!("round {round}: the write after a cancelled one failed: {e}"));
    }
}

/// Makes the database refuse one row's change, as a conflicting write
/// would: a trigger that raises for `column = value` on `table`.
async fn refuse_updates_of(ts: &TestService, table: &str, column: &str, value: &str) {
    let pool = ts.db.db.pool();
    if ts.db.url.starts_with("sqlite") {
        sqlx::query(&format!(
            "CREATE TRIGGER refuse_one BEFORE UPDATE ON {table} WHEN OLD.{column} = '{value}'
             BEGIN SELECT RAISE(ABORT, 'refused for the test'); END"
        ))
        .execute(pool)
        .await
        .expect("trigger");
    } else {
        sqlx::query(
            "CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN RAISE EXCEPTION 'refused for the test'; END $$",
        )
        .execute(pool)
        .await
        .expect("function");
        sqlx::query(&format!(
            "CREATE TRIGGER refuse_one BEFORE UPDATE ON {table} FOR EACH ROW
             WHEN (OLD.{column} = '{value}') EXECUTE FUNCTION refuse_one()"
        ))
        .execute(pool)
        .await
        .expect("trigger");
    }
}

async fn allow_updates_again(ts: &TestService, table: &str) {
    let sql = if ts.db.url.starts_with("sqlite") {
        "DROP TRIGGER refuse_one".to_string()
    } else {
        format!("DROP TRIGGER refuse_one ON {table}")
    };
    sqlx::query(&sql)
        .execute(ts.db.db.pool())
        .await
        .expect("drop trigger");
}

#[tokio::test]
async fn one_coupon_the_database_refuses_is_skipped_and_counted_while_the_rest_of_the_tick_expires()
{
    let ts = TestService::start().await;
    let tpl = template(&ts, 60).await;
    let a = claim(&ts, "u1", &tpl).await;
    let b = claim(&ts, "u2", &tpl).await;
    let c = claim(&ts, "u3", &tpl).await;
    refuse_updates_of(&ts, "coupons", "id", &b).await;
    let metrics = Arc::new(Metrics::default());
    let (scheduler, inbox) = Scheduler::channel(100);
    ts.service.attach_scheduler(scheduler);
    let mut w = DeadlineWorker::new(
        ts.service.clone(),
        JobSettings::default(),
        metrics.clone(),
        inbox,
    );
    w.refill().await.expect("refill");
    ts.clock.advance(Duration::seconds(60));
    let r = w
        .tick()
        .await
        .expect("a refused item does not fail the tick");
    assert_eq!(r.expired, 2);
    assert_eq!(stored_status(&ts, &a).await, "expired");
    assert_eq!(stored_status(&ts, &b).await, "available");
    assert_eq!(stored_status(&ts, &c).await, "expired");
    assert!(
        metrics
            .render(None)
            .contains("couponkeeper_wheel_skipped_total{deadline=\"coupon\"} 1"),
        "{}",
        metrics.render(None)
    );
    allow_updates_again(&ts, "coupons").await;
    w.refill().await.expect("refill");
    assert_eq!(w.tick().await.expect("tick").expired, 1);
    assert_eq!(expire_events(&ts, &b).await, vec!["job:expiry-wheel"]);
}

#[tokio::test]
async fn one_lapsed_order_the_database_refuses_is_skipped_while_the_others_close() {
    let ts = TestService::start().await;
    let metrics = Arc::new(Metrics::default());
    let (scheduler, inbox) = Scheduler::channel(100);
    ts.service.attach_scheduler(scheduler);
    let mut w = DeadlineWorker::new(
        ts.service.clone(),
        JobSettings::default(),
        metrics.clone(),
        inbox,
    );
    let tpl = template(&ts, 86_400).await;
    for n in ["N1", "N2", "N3"] {
        let user = format!("u{n}");
        let id = claim(&ts, &user, &tpl).await;
        checkout(&ts, n, &user, &id).await;
    }
    refuse_updates_of(&ts, "orders", "order_no", "N2").await;
    ts.clock.advance(Duration::seconds(900));
    let r = w
        .tick()
        .await
        .expect("a refused item does not fail the tick");
    assert_eq!(r.orders_closed, 2);
    for (n, want) in [
        ("N1", "closed"),
        ("N2", "pending_payment"),
        ("N3", "closed"),
    ] {
        let o = ts.service.get_order(&order(n)).await.expect("order");
        assert_eq!(o.status.as_str(), want, "{n}");
    }
    assert!(
        metrics
            .render(None)
            .contains("couponkeeper_wheel_skipped_total{deadline=\"checkout_lapse\"} 1")
    );
}

/// Places one normal order that locks `coupon` for checkout.
async fn checkout(ts: &TestService, order_no: &str, user: &str, coupon: &CouponId) {
    ts.service
        .create_order(
            &ts.ctx(),
            None,
            OrderSpec::parse(OrderInput {
                order_no: Some(order_no.into()),
                user_id: Some(user.into()),
                kind: Some("normal".into()),
                category: Some("phones".into()),
                total_cents: Some(39_900),
                lines: None,
                coupon_id: Some(coupon.to_string()),
                ..Default::default()
            })
            .expect("a well-formed order"),
        )
        .await
        .expect("order");
}

/// An NTP step or a VM resumed after a pause moves the clock by a lot at
/// once. Forward: what fell due meanwhile expires at the next tick (on the
/// wheel) or the next sweep (beyond the wheel's horizon), and nothing
/// that is still valid does.
#[tokio::test]
async fn a_clock_jumping_an_hour_forward_expires_what_fell_due_and_nothing_else() {
    let ts = TestService::start().await;
    let ten_min = template(&ts, 600).await;
    let half_hour = template(&ts, 1800).await;
    let two_hours = template(&ts, 7200).await;
    let a = claim(&ts, "u1", &ten_min).await;
    let b = claim(&ts, "u1", &half_hour).await;
    let c = claim(&ts, "u1", &two_hours).await;
    let mut w = worker(&ts);
    w.refill().await.expect("refill");
    assert_eq!(
        w.pending(),
        1,
        "only the ten-minute coupon is within the horizon"
    );
    ts.clock.advance(Duration::hours(1));
    assert_eq!(w.tick().await.expect("tick").expired, 1);
    assert_eq!(stored_status(&ts, &a).await, "expired");
    assert_eq!(
        stored_status(&ts, &b).await,
        "available",
        "not on the wheel"
    );
    let (_, shutdown) = tokio::sync::watch::channel(false);
    let swept = couponkeeper::jobs::sweep(
        &ts.service,
        &JobSettings::default(),
        &Metrics::default(),
        &shutdown,
    )
    .await
    .expect("sweep");
    assert_eq!(swept, 1, "the sweep catches up with the half-hour coupon");
    assert_eq!(stored_status(&ts, &b).await, "expired");
    assert_eq!(stored_status(&ts, &c).await, "available", "still valid");
    assert_eq!(
        ts.service.get_coupon(&c).await.expect("read").status,
        CouponStatus::Available
    );
}

/// Backward: a clock stepped back a minute makes nothing happen early,
/// neither an expiry nor a checkout lapse, however often the wheel turns;
/// both happen at the first tick once the clock has passed their time again.
#[tokio::test]
async fn a_clock_stepping_a_minute_back_expires_and_releases_nothing_early() {
    let ts = TestService::start().await;
    let mut w = worker(&ts);
    let short = template(&ts, 120).await;
    let long = template(&ts, 86_400).await;
    // Ends 120 s from now; the checkout lock of the other lapses at 900 s.
    let ending = claim(&ts, "u1", &short).await;
    let locked = claim(&ts, "u2", &long).await;
    checkout(&ts, "N1", "u2", &locked).await;
    w.refill().await.expect("refill");
    w.tick().await.expect("tick");
    ts.clock.advance(Duration::seconds(100));
    w.tick().await.expect("tick");
    ts.clock.advance(Duration::seconds(-60));
    for _ in 0..5 {
        ts.clock.advance(Duration::seconds(15));
        w.tick().await.expect("tick");
        ts.clock.advance(Duration::seconds(-15));
    }
    // Now 40 s after the claim: the coupon has 80 s left.
    ts.clock.advance(Duration::seconds(79));
    assert_eq!(w.tick().await.expect("tick").expired, 0);
    assert_eq!(stored_status(&ts, &ending).await, "available");
    ts.clock.advance(Duration::seconds(1));
    assert_eq!(w.tick().await.expect("tick").expired, 1);
    assert_eq!(stored_status(&ts, &ending).await, "expired");
    // The checkout lock of N1 lapses 900 s after its order: 780 s to go.
    ts.clock.advance(Duration::seconds(779));
    w.refill().await.expect("refill");
    assert_eq!(w.tick().await.expect("tick").orders_closed, 0);
    assert_eq!(stored_status(&ts, &locked).await, "locked");
    ts.clock.advance(Duration::seconds(1));
    assert_eq!(w.tick().await.expect("tick").orders_closed, 1);
    assert_eq!(stored_status(&ts, &locked).await, "available");
}
