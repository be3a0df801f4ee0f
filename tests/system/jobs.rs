//! The operations the background jobs run (`src/service/jobs.rs`), driven
//! directly through the service with manual clocks: batched expiry with its
//! events and outbox rows, expiry of given ids, checkout-lock lapse, presale
//! timeout, the zombie-lock reaper, the pending-expiration figures; two
//! workers on one database; a deposit payment racing the expiry of its
//! coupon; and the query plans of the expiry statements on a big table.

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use sqlx::{AnyPool, Row};
use tokio::sync::Barrier;

use crate::common::fixtures::{ctx, order, secs};
use crate::common::{Store, TestService, epoch, store};
use couponkeeper::clock::{ManualClock, SharedClock};
use couponkeeper::config::Config;
use couponkeeper::domain::cart::{OrderInput, OrderSpec};
use couponkeeper::domain::ids::{CampaignId, CouponId, TemplateId, UserId};
use couponkeeper::domain::order::OrderStatus;
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::server::build_service;
use couponkeeper::service::campaigns::CampaignInput;
use couponkeeper::service::jobs::PassReport;
use couponkeeper::service::{Executed, Refusal, Service, ServiceError};
use couponkeeper::store::expiry::{DUE_BY_SQL, expire_due_sql, expire_ids_sql};
use couponkeeper::store::{Backend, Db};

/// The actor every job call in these tests names.
const JOB: &str = "job:test";
const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
/// Above the templates' 300-yuan minimum spend.
const TOTAL: i64 = 39900;
const DEPOSIT: i64 = 10000;

fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// The fresh value of a write made without an idempotency key.
fn fresh<T>(r: Result<Executed<T>, ServiceError>, what: &str) -> T {
    match r {
        Ok(Executed::Fresh(v)) => v,
        Ok(Executed::Replayed { status, body }) => {
            panic!("{what}: replayed ({status} {body}) although no key was given")
        }
        Err(e) => panic!("{what} failed: {e:?}"),
    }
}

// ---------------------------------------------------------------------------
// Set-up through the service's own operations.

/// A 满300减50 template whose coupons live `valid_seconds` from their claim.
async fn relative_template(svc: &Service, valid_seconds: i64) -> TemplateId {
    let input = TemplateInput {
        name: Some(format!("valid {valid_seconds}s")),
        kind: Some("fixed".into()),
        value_cents: Some(5000),
        min_order_cents: Some(30000),
        valid_seconds: Some(valid_seconds),
        categories: Some(Vec::new()),
        ..TemplateInput::default()
    };
    fresh(
        svc.create_template(&ctx(), None, input).await,
        "create template",
    )
    .id
}

/// A template whose coupons all end at `until`.
async fn absolute_template(svc: &Service, until: DateTime<Utc>) -> TemplateId {
    let input = TemplateInput {
        name: Some(format!("until {until}")),
        kind: Some("fixed".into()),
        value_cents: Some(5000),
        min_order_cents: Some(30000),
        valid_from: Some((epoch() - secs(DAY)).to_rfc3339()),
        valid_until: Some(until.to_rfc3339()),
        categories: Some(Vec::new()),
        ..TemplateInput::default()
    };
    fresh(
        svc.create_template(&ctx(), None, input).await,
        "create template",
    )
    .id
}

async fn claim(svc: &Service, user: &str, template_id: &TemplateId) -> CouponId {
    let uid = UserId::parse(user).expect("test user ids are valid");
    fresh(
        svc.claim(&ctx(), None, uid, template_id.clone()).await,
        "claim",
    )
    .id
}

async fn campaign(
    svc: &Service,
    starts: DateTime<Utc>,
    ends: DateTime<Utc>,
    policy: &str,
) -> CampaignId {
    let input = CampaignInput {
        name: Some(format!("{policy} campaign")),
        final_payment_starts_at: Some(starts.to_rfc3339()),
        final_payment_ends_at: Some(ends.to_rfc3339()),
        policy: Some(policy.into()),
        compensation_mode: None,
    };
    fresh(
        svc.create_campaign(&ctx(), None, input).await,
        "create campaign",
    )
    .id
}

/// A normal order of 399 yuan; with a coupon it checkout-locks it.
async fn normal_order(svc: &Service, order_no: &str, user: &str, coupon: Option<&CouponId>) {
    let input = OrderInput {
        order_no: Some(order_no.into()),
        user_id: Some(user.into()),
        kind: Some("normal".into()),
        category: Some("phones".into()),
        total_cents: Some(TOTAL),
        lines: None,
        coupon_id: coupon.map(CouponId::to_string),
        ..OrderInput::default()
    };
    let o = fresh(
        svc.create_order(
            &ctx(),
            None,
            OrderSpec::parse(input).expect("a well-formed order"),
        )
        .await,
        "create normal order",
    );
    assert_eq!(o.status, OrderStatus::PendingPayment);
}

/// A presale order of 399 yuan with a 100-yuan deposit, still unpaid.
async fn presale_order(
    svc: &Service,
    order_no: &str,
    user: &str,
    coupon: &CouponId,
    campaign: &CampaignId,
) {
    let input = OrderInput {
        order_no: Some(order_no.into()),
        user_id: Some(user.into()),
        kind: Some("presale".into()),
        category: Some("phones".into()),
        total_cents: Some(TOTAL),
        lines: None,
        coupon_id: Some(coupon.to_string()),
        coupon_ids: None,
        campaign_id: Some(campaign.to_string()),
        deposit_cents: Some(DEPOSIT),
    };
    let o = fresh(
        svc.create_order(
            &ctx(),
            None,
            OrderSpec::parse(input).expect("a well-formed order"),
        )
        .await,
        "create presale order",
    );
    assert_eq!(o.status, OrderStatus::PendingDeposit);
}

async fn pay(svc: &Service, order_no: &str) {
    let o = fresh(svc.pay(&ctx(), None, order(order_no)).await, "pay");
    assert_eq!(o.status, OrderStatus::Paid);
}

async fn pay_deposit(svc: &Service, order_no: &str) {
    let o = fresh(
        svc.pay_deposit(&ctx(), None, order(order_no)).await,
        "pay deposit",
    );
    assert_eq!(o.status, OrderStatus::DepositPaid);
}

/// A second `Service` on the same database with its own clock: on
/// PostgreSQL a second pool, like a second instance; on SQLite the same
/// pool, like the API and the jobs in the one process that owns the file.
async fn second_service(ts: &TestService, now: DateTime<Utc>) -> (Service, Arc<ManualClock>) {
    let db = match store() {
        Store::Postgres => Db::connect(&ts.db.url, 10, 8)
            .await
            .expect("a second pool on the test database"),
        Store::Sqlite => ts.db.db.clone(),
    };
    let clock = Arc::new(ManualClock::new(now));
    let shared: SharedClock = clock.clone();
    (build_service(&Config::default(), db, shared), clock)
}

// ---------------------------------------------------------------------------
// Reading what was stored.

#[derive(Debug, Clone, PartialEq, Eq)]
struct Ev {
    action: String,
    actor: String,
    from: Option<String>,
    to: String,
    reason: Option<String>,
    order_no: Option<String>,
    at: i64,
}

type EvTuple = (
    String,
    String,
    Option<String>,
    String,
    Option<String>,
    Option<String>,
    i64,
);

fn ev(t: EvTuple) -> Ev {
    Ev {
        action: t.0,
        actor: t.1,
        from: t.2,
        to: t.3,
        reason: t.4,
        order_no: t.5,
        at: t.6,
    }
}

/// A coupon's own events, oldest first.
async fn coupon_events(pool: &AnyPool, coupon_id: &CouponId) -> Vec<Ev> {
    sqlx::query_as::<_, EvTuple>(
        "SELECT action, actor, from_status, to_status, reason, order_no, at FROM events
         WHERE subject = 'coupon' AND coupon_id = $1 ORDER BY id",
    )
    .bind(coupon_id.to_string())
    .fetch_all(pool)
    .await
    .expect("read coupon events")
    .into_iter()
    .map(ev)
    .collect()
}

/// An order's own events, oldest first.
async fn order_events(pool: &AnyPool, order_no: &str) -> Vec<Ev> {
    sqlx::query_as::<_, EvTuple>(
        "SELECT action, actor, from_status, to_status, reason, order_no, at FROM events
         WHERE subject = 'order' AND order_no = $1 ORDER BY id",
    )
    .bind(order_no.to_string())
    .fetch_all(pool)
    .await
    .expect("read order events")
    .into_iter()
    .map(ev)
    .collect()
}

fn count_action(events: &[Ev], action: &str) -> usize {
    events.iter().filter(|e| e.action == action).count()
}

/// A coupon as stored: (status, order_no, locked_at, updated_at).
async fn coupon_row(pool: &AnyPool, id: &CouponId) -> (String, Option<String>, Option<i64>, i64) {
    sqlx::query_as("SELECT status, order_no, locked_at, updated_at FROM coupons WHERE id = $1")
        .bind(id.to_string())
        .fetch_one(pool)
        .await
        .expect("coupon row exists")
}

async fn coupon_status(pool: &AnyPool, id: &CouponId) -> String {
    coupon_row(pool, id).await.0
}

/// An order as stored: (status, coupon_lock_status, checkout_lock_expires_at).
async fn order_row(pool: &AnyPool, order_no: &str) -> (String, String, Option<i64>) {
    sqlx::query_as(
        "SELECT status, coupon_lock_status, checkout_lock_expires_at FROM orders WHERE order_no = $1",
    )
    .bind(order_no.to_string())
    .fetch_one(pool)
    .await
    .expect("order row exists")
}

/// Outbox rows about a subject: (event_type, user_id, payload, created_at).
async fn outbox_for(
    pool: &AnyPool,
    subject_id: &CouponId,
) -> Vec<(String, Option<String>, String, i64)> {
    sqlx::query_as(
        "SELECT event_type, user_id, payload, created_at FROM outbox WHERE subject_id = $1 AND event_type = 'coupon.expired' ORDER BY id",
    )
    .bind(subject_id.to_string())
    .fetch_all(pool)
    .await
    .expect("read outbox")
}

async fn count(pool: &AnyPool, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("count query {sql:?} failed: {e}"))
}

/// Checks the one `expire` event and the one `coupon.expired` outbox row of
/// a coupon expired by `actor` at `now`.
async fn assert_expired_once(
    pool: &AnyPool,
    id: &CouponId,
    owner: &str,
    actor: &str,
    now: DateTime<Utc>,
) {
    let (status, order_no, _, updated_at) = coupon_row(pool, id).await;
    assert_eq!(status, "expired", "coupon {id} is stored expired");
    assert_eq!(order_no, None);
    assert_eq!(updated_at, ms(now), "coupon {id} updated at the expiry");
    let expires: Vec<Ev> = coupon_events(pool, id)
        .await
        .into_iter()
        .filter(|e| e.action == "expire")
        .collect();
    assert_eq!(
        expires,
        vec![Ev {
            action: "expire".into(),
            actor: actor.into(),
            from: Some("available".into()),
            to: "expired".into(),
            reason: None,
            order_no: None,
            at: ms(now),
        }],
        "coupon {id} has exactly one expire event"
    );
    let outbox = outbox_for(pool, id).await;
    assert_eq!(
        outbox.len(),
        1,
        "coupon {id} has one outbox row: {outbox:?}"
    );
    let (event_type, user_id, payload, created_at) = &outbox[0];
    assert_eq!(event_type, "coupon.expired");
    assert_eq!(user_id.as_deref(), Some(owner));
    assert_eq!(*created_at, ms(now));
    let payload: Value = serde_json::from_str(payload).expect("outbox payload is JSON");
    assert_eq!(
        payload["id"],
        id.as_str(),
        "payload is the coupon: {payload}"
    );
    assert_eq!(payload["status"], "expired", "payload: {payload}");
    assert_eq!(payload["user_id"], owner, "payload: {payload}");
}

/// Checks that a coupon has no expire event and no outbox row.
async fn assert_never_expired(pool: &AnyPool, id: &CouponId) {
    assert_eq!(
        count_action(&coupon_events(pool, id).await, "expire"),
        0,
        "coupon {id} has no expire event"
    );
    assert!(
        outbox_for(pool, id).await.is_empty(),
        "coupon {id} has no outbox row"
    );
}

fn sorted(mut v: Vec<i64>) -> Vec<i64> {
    v.sort_unstable();
    v
}

// ---------------------------------------------------------------------------
// 1. Batched expiry.

#[tokio::test]
async fn expire_due_batch_expires_overdue_coupons_oldest_first_in_bounded_batches_with_one_event_and_one_outbox_row_each()
 {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let pool = ts.db.db.pool();
    let t0 = epoch();
    let tpl = relative_template(svc, HOUR).await;

    // Locked and used coupons that are just as overdue as the others.
    let locked = claim(svc, "u-locked", &tpl).await;
    normal_order(svc, "O-LOCKED", "u-locked", Some(&locked)).await;
    let used = claim(svc, "u-used", &tpl).await;
    normal_order(svc, "O-USED", "u-used", Some(&used)).await;
    pay(svc, "O-USED").await;

    // Seven coupons ending a minute apart: t0+1h, t0+1h+1m, ...
    let mut overdue = Vec::new();
    for i in 0..7 {
        ts.clock.set(t0 + secs(60 * i));
        let user = format!("u{i}");
        overdue.push((claim(svc, &user, &tpl).await, user));
    }
    // Ends at t0+1h30m+1h, after the expiry runs.
    ts.clock.set(t0 + secs(1800));
    let not_due = claim(svc, "u-later", &tpl).await;

    // 400 s after the first end: lags 400, 340, ..., 40 s.
    let now = t0 + secs(HOUR + 400);
    ts.clock.set(now);

    let first = svc
        .expire_due_batch(JOB, 5)
        .await
        .expect("first batch runs");
    assert_eq!(first.count, 5, "a batch of 5 expires 5 of the 7");
    assert_eq!(
        sorted(first.lags_ms),
        vec![160_000, 220_000, 280_000, 340_000, 400_000],
        "the five oldest go first, each lag being now - ends_at"
    );
    for (id, _) in &overdue[..5] {
        assert_eq!(coupon_status(pool, id).await, "expired");
    }
    for (id, _) in &overdue[5..] {
        assert_eq!(
            coupon_status(pool, id).await,
            "available",
            "the two youngest wait for the next batch"
        );
    }

    let second = svc
        .expire_due_batch(JOB, 5)
        .await
        .expect("second batch runs");
    assert_eq!(second.count, 2);
    assert_eq!(sorted(second.lags_ms), vec![40_000, 100_000]);

    let third = svc
        .expire_due_batch(JOB, 5)
        .await
        .expect("third batch runs");
    assert_eq!(third.count, 0, "nothing left: {third:?}");
    assert!(third.lags_ms.is_empty());

    for (id, user) in &overdue {
        assert_expired_once(pool, id, user, JOB, now).await;
    }
    assert_eq!(
        coupon_row(pool, &locked).await.0,
        "locked",
        "a locked coupon past its end is the lock's business, not the expiry's"
    );
    assert_eq!(
        coupon_row(pool, &locked).await.1.as_deref(),
        Some("O-LOCKED")
    );
    assert_eq!(coupon_status(pool, &used).await, "used");
    assert_eq!(coupon_status(pool, &not_due).await, "available");
    for id in [&locked, &used, &not_due] {
        assert_never_expired(pool, id).await;
    }
    assert_eq!(
        count(pool, "SELECT COUNT(*) FROM events WHERE action = 'expire'").await,
        7
    );
    assert_eq!(
        count(
            pool,
            "SELECT COUNT(*) FROM outbox WHERE event_type = 'coupon.expired'"
        )
        .await,
        7
    );
}

// ---------------------------------------------------------------------------
// 2. Expiry of given ids (a timing-wheel slot).

#[tokio::test]
async fn expire_coupons_changes_only_the_listed_coupons_that_are_due_and_a_second_call_changes_nothing()
 {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let pool = ts.db.db.pool();
    let t0 = epoch();
    let tpl = relative_template(svc, HOUR).await;

    let a = claim(svc, "ua", &tpl).await;
    let b = claim(svc, "ub", &tpl).await;
    let unlisted = claim(svc, "ud", &tpl).await;
    let locked = claim(svc, "ue", &tpl).await;
    normal_order(svc, "O-E", "ue", Some(&locked)).await;
    ts.clock.set(t0 + secs(1800));
    let later = claim(svc, "uc", &tpl).await; // ends at t0 + 2h30m

    let now = t0 + secs(HOUR + 100);
    ts.clock.set(now);
    let ids = vec![
        a.clone(),
        b.clone(),
        later.clone(),
        locked.clone(),
        CouponId::from("cpn_does_not_exist"),
    ];
    let done = svc.expire_coupons(JOB, &ids).await.expect("expiry runs");
    assert_eq!(done.count, 2, "only a and b are listed, available and due");
    assert_eq!(done.lags_ms, vec![100_000, 100_000]);
    assert_expired_once(pool, &a, "ua", JOB, now).await;
    assert_expired_once(pool, &b, "ub", JOB, now).await;
    assert_eq!(coupon_status(pool, &later).await, "available");
    assert_eq!(
        coupon_status(pool, &unlisted).await,
        "available",
        "an unlisted coupon is left for its own slot or the sweep"
    );
    assert_eq!(coupon_status(pool, &locked).await, "locked");
    for id in [&later, &unlisted, &locked] {
        assert_never_expired(pool, id).await;
    }

    ts.clock.advance(secs(1));
    let again = svc.expire_coupons(JOB, &ids).await.expect("expiry runs");
    assert_eq!(again.count, 0, "the second call finds nothing to do");
    assert!(again.lags_ms.is_empty());
    assert_expired_once(pool, &a, "ua", JOB, now).await;
    assert_expired_once(pool, &b, "ub", JOB, now).await;
    assert_eq!(
        count(pool, "SELECT COUNT(*) FROM events WHERE action = 'expire'").await,
        2
    );

    // Once its own end passes, the later coupon goes too.
    let its_end = t0 + secs(1800 + HOUR);
    ts.clock.set(its_end);
    let last = svc.expire_coupons(JOB, &ids).await.expect("expiry runs");
    assert_eq!(last.count, 1);
    assert_eq!(last.lags_ms, vec![0]);
    assert_expired_once(pool, &later, "uc", JOB, its_end).await;
}

// ---------------------------------------------------------------------------
// 3. Checkout-lock lapse.

#[tokio::test]
async fn a_pending_payment_order_is_closed_and_its_coupon_released_once_its_checkout_lock_lapses_and_not_before()
 {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let pool = ts.db.db.pool();
    let t0 = epoch();
    let lock_seconds = Config::default().checkout_lock_seconds;
    assert_eq!(
        lock_seconds, 900,
        "COUPONKEEPER_CHECKOUT_LOCK_SECONDS default"
    );
    let long = relative_template(svc, 10 * DAY).await;
    let short = relative_template(svc, 600).await;

    let valid = claim(svc, "u1", &long).await;
    normal_order(svc, "O-VALID", "u1", Some(&valid)).await;
    // Its coupon ends at t0+600, before the lock lapses at t0+900.
    let ending = claim(svc, "u2", &short).await;
    normal_order(svc, "O-ENDING", "u2", Some(&ending)).await;
    let paid = claim(svc, "u3", &long).await;
    normal_order(svc, "O-PAID", "u3", Some(&paid)).await;
    normal_order(svc, "O-NOCOUPON", "u4", None).await;
    ts.clock.set(t0 + secs(60));
    pay(svc, "O-PAID").await;

    let lapse = t0 + secs(lock_seconds);
    assert_eq!(order_row(pool, "O-VALID").await.2, Some(ms(lapse)));

    ts.clock.set(lapse - Duration::milliseconds(1));
    assert_eq!(
        svc.close_lapsed_checkouts(JOB, 100)
            .await
            .expect("pass runs"),
        PassReport::default(),
        "1 ms before the lapse nothing is due"
    );
    assert!(
        !svc.close_lapsed_checkout(JOB, &order("O-VALID"))
            .await
            .expect("runs"),
        "an order whose lock holds is not closed"
    );
    assert_eq!(order_row(pool, "O-VALID").await.0, "pending_payment");
    assert_eq!(coupon_status(pool, &valid).await, "locked");
    assert_eq!(coupon_status(pool, &ending).await, "locked");

    ts.clock.set(lapse);
    assert_eq!(
        svc.close_lapsed_checkouts(JOB, 100)
            .await
            .expect("pass runs"),
        PassReport {
            examined: 2,
            changed: 2
        },
        "the two unpaid orders with a coupon are closed"
    );
    for (order_no, coupon, to) in [
        ("O-VALID", &valid, "available"),
        ("O-ENDING", &ending, "expired"),
    ] {
        let (status, lock, lock_expires) = order_row(pool, order_no).await;
        assert_eq!(
            (status.as_str(), lock.as_str(), lock_expires),
            ("closed", "released", None),
            "{order_no}"
        );
        let closing: Vec<Ev> = order_events(pool, order_no)
            .await
            .into_iter()
            .filter(|e| e.action == "checkout_lock_lapsed")
            .collect();
        assert_eq!(closing.len(), 1, "{order_no}: {closing:?}");
        assert_eq!(closing[0].actor, JOB);
        assert_eq!(closing[0].from.as_deref(), Some("pending_payment"));
        assert_eq!(closing[0].to, "closed");
        assert_eq!(closing[0].at, ms(lapse));

        let (c_status, c_order, c_locked_at, _) = coupon_row(pool, coupon).await;
        assert_eq!(
            (c_status.as_str(), c_order, c_locked_at),
            (to, None, None),
            "{order_no}'s coupon is released to {to}"
        );
        let last = coupon_events(pool, coupon)
            .await
            .pop()
            .expect("the release event");
        assert_eq!(last.actor, JOB);
        assert_eq!(
            (last.from.as_deref(), last.to.as_str()),
            (Some("locked"), to)
        );
        assert_eq!(last.order_no.as_deref(), Some(order_no));
    }
    assert_eq!(order_row(pool, "O-PAID").await.0, "paid");
    assert_eq!(coupon_status(pool, &paid).await, "used");
    assert_eq!(
        order_row(pool, "O-NOCOUPON").await.0,
        "pending_payment",
        "an order without a coupon holds no lock"
    );

    ts.clock.advance(secs(HOUR));
    assert!(
        !svc.close_lapsed_checkout(JOB, &order("O-PAID"))
            .await
            .expect("runs"),
        "a paid order is never closed"
    );
    assert!(
        !svc.close_lapsed_checkout(JOB, &order("O-VALID"))
            .await
            .expect("runs"),
        "a closed order is not closed twice"
    );
    assert!(
        !svc.close_lapsed_checkout(JOB, &order("O-MISSING"))
            .await
            .expect("runs")
    );
    assert_eq!(
        svc.close_lapsed_checkouts(JOB, 100)
            .await
            .expect("pass runs"),
        PassReport::default()
    );
    assert_eq!(order_row(pool, "O-PAID").await.0, "paid");
    assert_eq!(coupon_status(pool, &paid).await, "used");
    assert_eq!(
        count_action(&order_events(pool, "O-VALID").await, "checkout_lock_lapsed"),
        1
    );
}

// ---------------------------------------------------------------------------
// 4. Presale timeout.

#[tokio::test]
async fn a_deposit_paid_order_is_closed_and_its_coupon_released_once_the_final_payment_window_plus_grace_has_passed()
 {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let pool = ts.db.db.pool();
    let t0 = epoch();
    let grace = 3600;
    let window_end = t0 + secs(3 * HOUR);
    let cmp = campaign(svc, t0 + secs(HOUR), window_end, "lock").await;
    let long = relative_template(svc, 10 * DAY).await;
    let short = relative_template(svc, 2 * HOUR).await;

    let valid = claim(svc, "u1", &long).await;
    presale_order(svc, "P-VALID", "u1", &valid, &cmp).await;
    pay_deposit(svc, "P-VALID").await;
    // Ends at t0+2h, before the timeout.
    let ending = claim(svc, "u2", &short).await;
    presale_order(svc, "P-ENDING", "u2", &ending, &cmp).await;
    pay_deposit(svc, "P-ENDING").await;
    let final_paid = claim(svc, "u3", &long).await;
    presale_order(svc, "P-FINAL", "u3", &final_paid, &cmp).await;
    pay_deposit(svc, "P-FINAL").await;
    let unpaid = claim(svc, "u4", &long).await;
    presale_order(svc, "P-UNPAID", "u4", &unpaid, &cmp).await;

    ts.clock.set(t0 + secs(HOUR));
    let o = fresh(
        svc.pay_final(&ctx(), None, order("P-FINAL")).await,
        "final payment",
    );
    assert_eq!(o.status, OrderStatus::FinalPaid);

    let deadline = window_end + secs(grace);
    ts.clock.set(deadline - Duration::milliseconds(1));
    assert_eq!(
        svc.close_timed_out_presales(JOB, grace, 100)
            .await
            .expect("pass runs"),
        PassReport::default(),
        "1 ms before window end + grace nothing is due"
    );
    assert!(
        !svc.close_timed_out_presale(JOB, &order("P-VALID"), grace)
            .await
            .expect("runs")
    );
    assert_eq!(order_row(pool, "P-VALID").await.0, "deposit_paid");
    assert_eq!(coupon_status(pool, &valid).await, "locked");

    ts.clock.set(deadline);
    assert_eq!(
        svc.close_timed_out_presales(JOB, grace, 100)
            .await
            .expect("pass runs"),
        PassReport {
            examined: 2,
            changed: 2
        },
        "the two deposit-paid orders are closed"
    );
    for (order_no, coupon, to) in [
        ("P-VALID", &valid, "available"),
        ("P-ENDING", &ending, "expired"),
    ] {
        let (status, lock, _) = order_row(pool, order_no).await;
        assert_eq!(
            (status.as_str(), lock.as_str()),
            ("closed", "released"),
            "{order_no}"
        );
        let closing: Vec<Ev> = order_events(pool, order_no)
            .await
            .into_iter()
            .filter(|e| e.action == "presale_timeout")
            .collect();
        assert_eq!(closing.len(), 1, "{order_no}: {closing:?}");
        assert_eq!(closing[0].actor, JOB);
        assert_eq!(closing[0].from.as_deref(), Some("deposit_paid"));
        assert_eq!(closing[0].to, "closed");

        let (c_status, c_order, _, _) = coupon_row(pool, coupon).await;
        assert_eq!(
            (c_status.as_str(), c_order),
            (to, None),
            "{order_no}'s coupon is released to {to}"
        );
        let last = coupon_events(pool, coupon)
            .await
            .pop()
            .expect("the release event");
        assert_eq!(last.actor, JOB);
        assert_eq!(
            (last.from.as_deref(), last.to.as_str()),
            (Some("locked"), to)
        );
    }
    assert_eq!(order_row(pool, "P-FINAL").await.0, "final_paid");
    assert_eq!(coupon_status(pool, &final_paid).await, "used");
    assert_eq!(
        order_row(pool, "P-UNPAID").await.0,
        "pending_deposit",
        "an order whose deposit was never paid is not this job's"
    );
    assert_eq!(coupon_status(pool, &unpaid).await, "available");

    assert!(
        !svc.close_timed_out_presale(JOB, &order("P-FINAL"), grace)
            .await
            .expect("runs"),
        "a final-paid order is never closed"
    );
    assert!(
        !svc.close_timed_out_presale(JOB, &order("P-VALID"), grace)
            .await
            .expect("runs"),
        "a closed order is not closed twice"
    );
    assert_eq!(
        svc.close_timed_out_presales(JOB, grace, 100)
            .await
            .expect("pass runs"),
        PassReport::default()
    );
    assert_eq!(order_row(pool, "P-FINAL").await.0, "final_paid");
    assert_eq!(
        count_action(&order_events(pool, "P-VALID").await, "presale_timeout"),
        1
    );
}

// ---------------------------------------------------------------------------
// 5. Zombie-lock reaper.

/// Marks a coupon `locked` to `order_no` since `at`, behind the service's
/// back, the way a crash or a bug would leave it.
async fn plant_lock(pool: &AnyPool, coupon_id: &CouponId, order_no: &str, at: DateTime<Utc>) {
    let r = sqlx::query(
        "UPDATE coupons SET status = 'locked', order_no = $1, locked_at = $2, updated_at = $2 WHERE id = $3",
    )
    .bind(order_no.to_string())
    .bind(ms(at))
    .bind(coupon_id.to_string())
    .execute(pool)
    .await
    .expect("plant a lock");
    assert_eq!(r.rows_affected(), 1);
}

#[tokio::test]
async fn the_reaper_releases_old_locks_whose_order_is_missing_closed_or_names_another_coupon_and_nothing_else()
 {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let pool = ts.db.db.pool();
    let t0 = epoch();
    let threshold = 7200;
    let long = relative_template(svc, 10 * DAY).await;
    let short = relative_template(svc, HOUR).await;
    let cmp = campaign(svc, t0 + secs(30 * DAY), t0 + secs(31 * DAY), "lock").await;

    // Its order never existed; its end passes before the reaper runs.
    let ghost = claim(svc, "u1", &short).await;
    plant_lock(pool, &ghost, "GHOST-1", t0).await;
    // Its order was cancelled, yet it is locked to it.
    let of_closed = claim(svc, "u2", &long).await;
    normal_order(svc, "O-CLOSED", "u2", Some(&of_closed)).await;
    fresh(
        svc.cancel(&ctx(), None, order("O-CLOSED"), None).await,
        "cancel",
    );
    assert_eq!(coupon_status(pool, &of_closed).await, "available");
    plant_lock(pool, &of_closed, "O-CLOSED", t0).await;
    // Locked to a live order that holds another coupon.
    let holder = claim(svc, "u3", &long).await;
    normal_order(svc, "O-OTHER", "u3", Some(&holder)).await;
    let stray = claim(svc, "u3", &long).await;
    plant_lock(pool, &stray, "O-OTHER", t0).await;
    // A live deposit-paid order's coupon, locked just as long.
    let live = claim(svc, "u5", &long).await;
    presale_order(svc, "P-LIVE", "u5", &live, &cmp).await;
    pay_deposit(svc, "P-LIVE").await;

    let now = t0 + secs(threshold + 1);
    // A zombie, but younger than the threshold.
    let young = claim(svc, "u6", &long).await;
    plant_lock(pool, &young, "GHOST-2", now - secs(threshold - 1)).await;
    ts.clock.set(now);

    let report = svc
        .reap_zombie_locks(JOB, threshold, 100)
        .await
        .expect("reaper runs");
    assert_eq!(
        report.changed, 3,
        "the three zombies are released: {report:?}"
    );
    assert_eq!(
        report.examined, 3,
        "only the three zombies are examined; live locks are not candidates: {report:?}"
    );
    for (coupon, order_no, to, why) in [
        (&ghost, "GHOST-1", "expired", "its order does not exist"),
        (
            &of_closed,
            "O-CLOSED",
            "available",
            "its order is closed or refunded",
        ),
        (
            &stray,
            "O-OTHER",
            "available",
            "its order names another coupon",
        ),
    ] {
        let (status, bound, locked_at, _) = coupon_row(pool, coupon).await;
        assert_eq!(
            (status.as_str(), bound, locked_at),
            (to, None, None),
            "zombie of {order_no} released to {to}"
        );
        let last = coupon_events(pool, coupon)
            .await
            .pop()
            .expect("the release event");
        assert_eq!(last.action, "zombie_release");
        assert_eq!(last.actor, JOB, "the release names its job");
        assert_eq!(
            (last.from.as_deref(), last.to.as_str()),
            (Some("locked"), to)
        );
        assert_eq!(last.order_no.as_deref(), Some(order_no));
        let reason = last.reason.unwrap_or_default();
        assert!(
            reason.starts_with("zombie lock released"),
            "reason {reason:?}"
        );
        assert!(reason.contains(why), "reason {reason:?} says {why:?}");
        assert_eq!(last.at, ms(now));
    }
    assert_eq!(
        coupon_row(pool, &live).await.0,
        "locked",
        "a live deposit-paid order keeps its coupon"
    );
    assert_eq!(coupon_row(pool, &live).await.1.as_deref(), Some("P-LIVE"));
    assert_eq!(order_row(pool, "P-LIVE").await.1, "locked");
    assert_eq!(coupon_row(pool, &holder).await.0, "locked");
    assert_eq!(
        coupon_row(pool, &holder).await.1.as_deref(),
        Some("O-OTHER")
    );
    assert_eq!(
        coupon_row(pool, &young).await.0,
        "locked",
        "a lock younger than the threshold is left alone"
    );
    for id in [&live, &holder, &young] {
        assert_eq!(
            count_action(&coupon_events(pool, id).await, "zombie_release"),
            0
        );
    }

    assert_eq!(
        svc.reap_zombie_locks(JOB, threshold, 100)
            .await
            .expect("reaper runs")
            .changed,
        0,
        "a second pass releases nothing"
    );

    // Two seconds later the young zombie is old enough.
    ts.clock.advance(secs(2));
    assert_eq!(
        svc.reap_zombie_locks(JOB, threshold, 100)
            .await
            .expect("reaper runs")
            .changed,
        1
    );
    assert_eq!(coupon_status(pool, &young).await, "available");
    assert_eq!(coupon_status(pool, &live).await, "locked");
}

// ---------------------------------------------------------------------------
// 6. Pending-expiration figures.

#[tokio::test]
async fn pending_expirations_counts_due_coupons_per_utc_hour_and_the_overdue_ones() {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let t0 = epoch(); // 2026-11-11T00:00:00Z, on the hour
    let at = |minutes: i64| t0 + Duration::minutes(minutes);

    // Minutes after t0 at which coupons end, one coupon each unless repeated.
    let ends = [10, 20, 30, 50, 75, 105, 105, 185, 210, 211];
    let mut templates = std::collections::HashMap::new();
    for (i, m) in ends.iter().enumerate() {
        if !templates.contains_key(m) {
            templates.insert(*m, absolute_template(svc, at(*m)).await);
        }
        claim(svc, &format!("u{i}"), &templates[m]).await;
    }
    // Neither a locked coupon nor a stored-expired one counts.
    let locked = claim(svc, "u-locked", &templates[&75]).await;
    normal_order(svc, "O-LOCKED", "u-locked", Some(&locked)).await;
    let expired = claim(svc, "u-expired", &templates[&10]).await;

    ts.clock.set(at(20));
    let done = svc
        .expire_coupons(JOB, std::slice::from_ref(&expired))
        .await
        .expect("expiry runs");
    assert_eq!(done.count, 1);

    ts.clock.set(at(30)); // 00:30; the window ends at 03:30
    let p = svc
        .pending_expirations(3 * HOUR)
        .await
        .expect("figures are read");
    assert_eq!(p.within_seconds, 3 * HOUR);
    let buckets: Vec<(String, i64)> = p
        .buckets
        .iter()
        .filter(|b| b.count != 0)
        .map(|b| (b.starts_at.clone(), b.count))
        .collect();
    assert_eq!(
        buckets,
        vec![
            ("2026-11-11T00:00:00.000Z".to_string(), 1),
            ("2026-11-11T01:00:00.000Z".to_string(), 3),
            ("2026-11-11T03:00:00.000Z".to_string(), 2),
        ],
        "ends in (00:30, 03:30]: 00:50 | 01:15, 01:45 x2 | 03:05, 03:30; not 03:31, not the locked one"
    );
    for b in &p.buckets {
        assert!(
            b.starts_at.ends_with(":00:00.000Z"),
            "a bucket starts on the hour, in UTC: {}",
            b.starts_at
        );
    }
    assert_eq!(p.total, 6);
    assert_eq!(
        p.overdue, 3,
        "00:10, 00:20 and 00:30 (= now) are past their end and stored available"
    );
    assert_eq!(
        p.oldest_overdue_ends_at.as_deref(),
        Some("2026-11-11T00:10:00.000Z")
    );

    // A one-hour window: only the 00:50 and 01:15 coupons.
    let p = svc.pending_expirations(HOUR).await.expect("figures");
    assert_eq!(p.total, 2);
    assert_eq!(p.overdue, 3);

    // After a sweep nothing is overdue.
    let swept = svc.expire_due_batch(JOB, 500).await.expect("sweep runs");
    assert_eq!(swept.count, 3);
    let p = svc.pending_expirations(3 * HOUR).await.expect("figures");
    assert_eq!((p.total, p.overdue), (6, 0));
    assert_eq!(p.oldest_overdue_ends_at, None);
}

// ---------------------------------------------------------------------------
// 7. Two workers on one database.

/// How many copies of a claimed coupon the two-worker test drains.
const TWO_WORKER_COUPONS: i64 = 2000;

/// Copies coupon `from` `n` times with new ids and codes, each ending `k` ms
/// earlier than the original (k = 1..n), in one statement.
async fn copy_coupon(pool: &AnyPool, from: &CouponId, n: i64) {
    let sql = format!(
        "WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < {n})
         INSERT INTO coupons (id, code, user_id, template_id, source, kind, value_cents, percent_off,
             max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no,
             locked_at, used_at, created_at, updated_at)
         SELECT c.id || '-' || CAST(seq.n AS TEXT), c.code || '-' || CAST(seq.n AS TEXT), c.user_id,
             c.template_id, c.source, c.kind, c.value_cents, c.percent_off, c.max_discount_cents,
             c.min_order_cents, c.categories, c.status, c.starts_at, c.ends_at - seq.n, NULL, NULL,
             NULL, c.created_at, c.updated_at
         FROM seq, coupons c WHERE c.id = $1"
    );
    let r = sqlx::query(&sql)
        .bind(from.to_string())
        .execute(pool)
        .await
        .expect("copy coupons");
    assert_eq!(r.rows_affected(), n as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_on_one_database_expire_every_coupon_exactly_once() {
    let ts = TestService::start().await;
    let pool = ts.db.db.pool();
    let tpl = relative_template(&ts.service, HOUR).await;
    let original = claim(&ts.service, "u1", &tpl).await;
    copy_coupon(pool, &original, TWO_WORKER_COUPONS - 1).await;
    let n = TWO_WORKER_COUPONS;
    assert_eq!(
        count(
            pool,
            "SELECT COUNT(*) FROM coupons WHERE status = 'available'"
        )
        .await,
        n
    );

    let now = epoch() + secs(HOUR + 60);
    ts.clock.set(now);
    let (other, _clock) = second_service(&ts, now).await;
    let started = Instant::now();
    let barrier = Arc::new(Barrier::new(2));
    let mut workers = Vec::new();
    for (name, svc) in [
        ("job:expiry-a", ts.service.clone()),
        ("job:expiry-b", other),
    ] {
        let barrier = barrier.clone();
        workers.push(tokio::spawn(async move {
            barrier.wait().await;
            let (mut total, mut batches) = (0, 0);
            loop {
                let b = svc
                    .expire_due_batch(name, 100)
                    .await
                    .unwrap_or_else(|e| panic!("{name}: batch failed: {e:?}"));
                assert!(b.count <= 100, "{name}: a batch is bounded: {}", b.count);
                if b.count == 0 {
                    return (name, total, batches);
                }
                total += b.count;
                batches += 1;
            }
        }));
    }
    let mut expired_by_workers = 0;
    for w in workers {
        let (name, total, batches) = w.await.expect("worker does not panic");
        println!("{name}: {total} coupons in {batches} batches");
        expired_by_workers += total;
    }
    println!(
        "two workers ({:?}) drained {n} coupons in {:?}",
        store(),
        started.elapsed()
    );
    assert_eq!(expired_by_workers as i64, n, "the workers' counts add up");
    assert_eq!(
        count(
            pool,
            "SELECT COUNT(*) FROM coupons WHERE status <> 'expired'"
        )
        .await,
        0
    );
    assert_eq!(
        count(pool, "SELECT COUNT(*) FROM events WHERE action = 'expire'").await,
        n
    );
    assert_eq!(
        count(
            pool,
            "SELECT COUNT(*) FROM (SELECT c.id FROM coupons c LEFT JOIN events e
                 ON e.coupon_id = c.id AND e.action = 'expire' AND e.subject = 'coupon'
                 GROUP BY c.id HAVING COUNT(e.id) <> 1) x"
        )
        .await,
        0,
        "every coupon has exactly one expire event"
    );
    assert_eq!(
        count(
            pool,
            "SELECT COUNT(*) FROM (SELECT c.id FROM coupons c LEFT JOIN outbox o
                 ON o.subject_id = c.id AND o.event_type = 'coupon.expired'
                 GROUP BY c.id HAVING COUNT(o.id) <> 1) x"
        )
        .await,
        0,
        "every coupon has exactly one coupon.expired outbox row"
    );
    assert_eq!(
        count(
            pool,
            "SELECT COUNT(*) FROM outbox WHERE event_type = 'coupon.expired'"
        )
        .await,
        n
    );
}

// ---------------------------------------------------------------------------
// 8. A deposit payment racing the expiry of its coupon.

/// Rounds of the race: a thousand on each store (about 2-5 s on SQLite and
/// on PostgreSQL here).
fn race_rounds() -> usize {
    1000
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposit_payment_and_the_expiry_of_its_coupon_at_ends_at_never_both_win_and_never_both_lose()
 {
    let ts = TestService::start().await;
    let pool = ts.db.db.pool();
    let svc = &ts.service;
    let t0 = epoch();
    let rounds = race_rounds();
    let tpl = relative_template(svc, HOUR).await;
    let cmp = campaign(svc, t0 + secs(30 * DAY), t0 + secs(31 * DAY), "lock").await;
    let mut pairs = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let user = format!("u{i}");
        let coupon = claim(svc, &user, &tpl).await;
        let order_no = order(&format!("R{i}"));
        presale_order(svc, &order_no, &user, &coupon, &cmp).await;
        pairs.push((coupon, order_no));
    }
    // Every coupon ends at t0 + 1h. The payer's clock is 1 ms before that,
    // the expiry worker's exactly at it.
    let ends_at = t0 + secs(HOUR);
    ts.clock.set(ends_at - Duration::milliseconds(1));
    let (worker, _clock) = second_service(&ts, ends_at).await;

    let started = Instant::now();
    let (mut deposit_won, mut expiry_won) = (0, 0);
    // How the payer was refused when the expiry won: `coupon_expired` (it
    // read the coupon after the expiry), `coupon_not_available` (it read it
    // before and lost at the conditional update).
    let mut refusals = std::collections::BTreeMap::new();
    for (round, (coupon, order_no)) in pairs.into_iter().enumerate() {
        let barrier = Arc::new(Barrier::new(2));
        let payer = {
            let (svc, barrier, order_no) = (ts.service.clone(), barrier.clone(), order_no.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                svc.pay_deposit(&ctx(), None, order_no).await
            })
        };
        let expirer = {
            let (svc, barrier, ids) = (worker.clone(), barrier.clone(), vec![coupon.clone()]);
            tokio::spawn(async move {
                barrier.wait().await;
                svc.expire_coupons("job:expiry", &ids).await
            })
        };
        let paid = payer.await.expect("payer does not panic");
        let expired = expirer
            .await
            .expect("expirer does not panic")
            .unwrap_or_else(|e| panic!("round {round}: expiry failed: {e:?}"))
            .count;

        let (c_status, c_order, _, _) = coupon_row(pool, &coupon).await;
        let (o_status, o_lock, _) = order_row(pool, &order_no).await;
        let expire_events = count_action(&coupon_events(pool, &coupon).await, "expire");
        let state = format!(
            "round {round}: deposit {paid:?}, expired {expired}; coupon {c_status} {c_order:?}, \
             order {o_status} lock {o_lock}, expire events {expire_events}"
        );
        match paid {
            Ok(Executed::Fresh(view)) => {
                assert_eq!(expired, 0, "both won: {state}");
                assert_eq!(view.status, OrderStatus::DepositPaid, "{state}");
                assert_eq!(c_status, "locked", "{state}");
                assert_eq!(c_order.as_deref(), Some(order_no.as_str()), "{state}");
                assert_eq!(
                    (o_status.as_str(), o_lock.as_str()),
                    ("deposit_paid", "locked"),
                    "{state}"
                );
                assert_eq!(expire_events, 0, "{state}");
                deposit_won += 1;
            }
            Err(ServiceError::Refused {
                refusal: refusal @ (Refusal::CouponNotAvailable | Refusal::CouponExpired),
                ..
            }) => {
                assert_eq!(expired, 1, "neither won: {state}");
                assert_eq!((c_status.as_str(), c_order), ("expired", None), "{state}");
                assert_eq!(
                    (o_status.as_str(), o_lock.as_str()),
                    ("pending_deposit", "none"),
                    "{state}"
                );
                assert_eq!(expire_events, 1, "{state}");
                expiry_won += 1;
                *refusals.entry(refusal.code()).or_insert(0) += 1;
            }
            _ => panic!("unexpected outcome: {state}"),
        }
    }
    println!(
        "race on {:?}: {rounds} rounds in {:?}; deposit won {deposit_won}, expiry won {expiry_won} \
         (payer refused with {refusals:?})",
        store(),
        started.elapsed()
    );
    assert_eq!(deposit_won + expiry_won, rounds);
}

// ---------------------------------------------------------------------------
// 9. Query plans on a big table.

/// Rows in the big table: a million on PostgreSQL; SQLite only shows the
/// plan shape, on a tenth of that.
fn big_table_rows() -> i64 {
    match store() {
        Store::Sqlite => 100_000,
        Store::Postgres => 1_000_000,
    }
}

/// Fills `coupons` with `n` rows, a realistic mix relative to `now_ms`:
/// 60% expired, 25% used, 2% locked, 1% invalidated, 12% available with
/// ends spread over the next 30 days (the first hour of that spread being
/// already overdue).
async fn fill_coupons(pool: &AnyPool, n: i64, now_ms: i64) {
    let (with, source) = crate::common::series(n);
    let day = DAY * 1000;
    let long_ago = now_ms - 40 * day;
    let sql = format!(
        "{with}
         INSERT INTO coupons (id, code, user_id, template_id, source, kind, value_cents, percent_off,
             max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no,
             locked_at, used_at, created_at, updated_at)
         SELECT 'bulk-' || CAST(g AS TEXT), 'BULK' || CAST(g AS TEXT), 'user-' || CAST(g % 50000 AS TEXT),
             NULL, 'claim', 'fixed', 5000, NULL, NULL, 30000, '[]',
             CASE WHEN m < 60 THEN 'expired' WHEN m < 85 THEN 'used' WHEN m < 87 THEN 'locked'
                  WHEN m < 88 THEN 'invalidated' ELSE 'available' END,
             {long_ago},
             CASE WHEN m >= 88 THEN {now_ms} - 3600000 + spread ELSE {now_ms} - 1000 - spread END,
             CASE WHEN m >= 60 AND m < 87 THEN 'ORD' || CAST(g AS TEXT) END,
             CASE WHEN m >= 60 AND m < 87 THEN {now_ms} - {day} END,
             CASE WHEN m >= 60 AND m < 85 THEN {now_ms} - {day} END,
             {long_ago},
             {now_ms} - spread
         FROM (SELECT g, g % 100 AS m, ((g * 7919) % 2592000) * 1000 AS spread FROM {source}) s"
    );
    let r = sqlx::query(&sql)
        .execute(pool)
        .await
        .expect("fill the coupons table");
    assert_eq!(r.rows_affected(), n as u64);
}

/// Checks one plan: the `(status, ends_at)` index and no full scan of
/// `coupons`.
fn assert_index_plan(what: &str, plan: &str) {
    println!("{what}:\n{plan}\n");
    assert!(
        plan.contains("coupons_status_ends_at_idx"),
        "{what} uses coupons_status_ends_at_idx:\n{plan}"
    );
    for full_scan in ["Seq Scan on coupons", "SCAN coupons", "SCAN TABLE coupons"] {
        assert!(
            !plan.contains(full_scan),
            "{what} must not scan all of coupons ({full_scan}):\n{plan}"
        );
    }
    assert!(
        !plan.contains("TEMP B-TREE FOR ORDER BY"),
        "{what} reads in index order, without sorting:\n{plan}"
    );
}

#[tokio::test]
async fn the_expiry_statements_use_the_status_ends_at_index_on_a_big_table() {
    let ts = TestService::start().await;
    let pool = ts.db.db.pool();
    let n = big_table_rows();
    let now_ms = ms(epoch());
    let started = Instant::now();
    // On PostgreSQL the secondary indexes are dropped for the bulk load and
    // rebuilt from their own definitions afterwards (a sorted build is many
    // times faster than a million single inserts into seven indexes); the
    // schema the planner sees is the migrated one either way.
    let indexes: Vec<(String, String)> = match store() {
        Store::Postgres => sqlx::query_as(
            "SELECT CAST(indexname AS TEXT), indexdef FROM pg_indexes
             WHERE schemaname = current_schema() AND tablename = 'coupons' AND indexname <> 'coupons_pkey'
             ORDER BY indexname",
        )
        .fetch_all(pool)
        .await
        .expect("read the coupons indexes"),
        Store::Sqlite => Vec::new(),
    };
    for (name, _) in &indexes {
        sqlx::query(&format!("DROP INDEX {name}"))
            .execute(pool)
            .await
            .expect("drop an index for the bulk load");
    }
    fill_coupons(pool, n, now_ms).await;
    for (_, definition) in &indexes {
        sqlx::query(definition)
            .execute(pool)
            .await
            .expect("rebuild an index");
    }
    let filled = started.elapsed();
    if store() == Store::Postgres {
        let names: Vec<String> = sqlx::query_scalar(
            "SELECT CAST(indexname AS TEXT) FROM pg_indexes
             WHERE schemaname = current_schema() AND tablename = 'coupons' AND indexname <> 'coupons_pkey'
             ORDER BY indexname",
        )
        .fetch_all(pool)
        .await
        .expect("read the coupons indexes");
        let before: Vec<String> = indexes.iter().map(|(name, _)| name.clone()).collect();
        assert_eq!(names, before, "every index is back");
        assert!(
            names.contains(&"coupons_status_ends_at_idx".to_string()),
            "{names:?}"
        );
    }
    sqlx::query("ANALYZE coupons")
        .execute(pool)
        .await
        .expect("analyze");
    let overdue = count(
        pool,
        &format!("SELECT COUNT(*) FROM coupons WHERE status = 'available' AND ends_at <= {now_ms}"),
    )
    .await;
    assert!(
        overdue > 0 && overdue < n / 100,
        "a few coupons are overdue: {overdue}"
    );

    let mut conn = pool.acquire().await.expect("a connection");
    let statements = [
        ("the expiry sweep", expire_due_sql(ts.db.db.backend())),
        ("the wheel refill", DUE_BY_SQL.to_string()),
    ];
    for (what, sql) in &statements {
        // With the values bound, as the service runs it.
        let plan = match ts.db.db.backend() {
            Backend::Postgres => sqlx::query_scalar::<_, String>(&format!("EXPLAIN {sql}"))
                .bind(now_ms)
                .bind(500_i64)
                .fetch_all(&mut *conn)
                .await
                .expect("explain"),
            Backend::Sqlite => {
                sqlx::query_as::<_, (i64, i64, i64, String)>(&format!("EXPLAIN QUERY PLAN {sql}"))
                    .bind(now_ms)
                    .bind(500_i64)
                    .fetch_all(&mut *conn)
                    .await
                    .expect("explain query plan")
                    .into_iter()
                    .map(|r| r.3)
                    .collect()
            }
        };
        assert_index_plan(what, &plan.join("\n"));
    }
    // The wheel's statement finds each coupon by its primary key, whatever
    // the table's size: the ids come as one JSON array parameter.
    let ids = r#"["cpn_a","cpn_b","cpn_c"]"#;
    let wheel = expire_ids_sql(ts.db.db.backend());
    let plan: Vec<String> = match ts.db.db.backend() {
        Backend::Postgres => sqlx::query_scalar::<_, String>(&format!("EXPLAIN {wheel}"))
            .bind(now_ms)
            .bind(ids)
            .fetch_all(&mut *conn)
            .await
            .expect("explain the wheel's statement"),
        Backend::Sqlite => {
            sqlx::query_as::<_, (i64, i64, i64, String)>(&format!("EXPLAIN QUERY PLAN {wheel}"))
                .bind(now_ms)
                .bind(ids)
                .fetch_all(&mut *conn)
                .await
                .expect("explain the wheel's statement")
                .into_iter()
                .map(|r| r.3)
                .collect()
        }
    };
    let plan = plan.join("\n");
    println!("the wheel's expiry:\n{plan}\n");
    assert!(
        plan.contains("coupons_pkey")
            || plan.contains("sqlite_autoindex_coupons_1")
            || plan.contains("INTEGER PRIMARY KEY"),
        "the wheel's expiry looks coupons up by primary key:\n{plan}"
    );
    for full_scan in ["Seq Scan on coupons", "SCAN coupons", "SCAN TABLE coupons"] {
        assert!(!plan.contains(full_scan), "{full_scan}:\n{plan}");
    }
    if ts.db.db.backend() == Backend::Postgres {
        // The plan PostgreSQL may settle on for a statement prepared once
        // and run many times, without looking at the values.
        sqlx::raw_sql("SET plan_cache_mode = force_generic_plan")
            .execute(&mut *conn)
            .await
            .expect("force generic plans");
        for (i, (what, sql)) in statements.iter().enumerate() {
            sqlx::raw_sql(&format!("PREPARE ck_plan_{i}(bigint, bigint) AS {sql}"))
                .execute(&mut *conn)
                .await
                .expect("prepare");
            let rows = sqlx::raw_sql(&format!("EXPLAIN EXECUTE ck_plan_{i}({now_ms}, 500)"))
                .fetch_all(&mut *conn)
                .await
                .expect("explain execute");
            let plan: Vec<String> = rows
                .iter()
                .map(|r| r.try_get::<String, _>(0).expect("a plan line"))
                .collect();
            assert_index_plan(&format!("{what} (generic plan)"), &plan.join("\n"));
        }
        sqlx::raw_sql("DEALLOCATE ALL; RESET plan_cache_mode")
            .execute(&mut *conn)
            .await
            .expect("reset");
    }
    println!(
        "big table ({:?}): {n} rows filled in {filled:?}, total {:?}",
        store(),
        started.elapsed()
    );
}

#[tokio::test]
async fn the_reaper_reaches_a_zombie_behind_more_live_locks_than_one_batch_holds() {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let pool = ts.db.db.pool();
    let t0 = epoch();
    let long = relative_template(svc, 10 * DAY).await;
    let cmp = campaign(svc, t0 + secs(30 * DAY), t0 + secs(31 * DAY), "lock").await;
    // Three legitimate presale locks, older than the zombie.
    for i in 0..3 {
        let c = claim(svc, &format!("live{i}"), &long).await;
        presale_order(svc, &format!("P-LIVE-{i}"), &format!("live{i}"), &c, &cmp).await;
        pay_deposit(svc, &format!("P-LIVE-{i}")).await;
    }
    let zombie = claim(svc, "z", &long).await;
    plant_lock(pool, &zombie, "GHOST", t0 + secs(60)).await;
    ts.clock.set(t0 + secs(3 * HOUR));
    let report = svc
        .reap_zombie_locks(JOB, 7200, 2)
        .await
        .expect("reaper runs");
    assert_eq!((report.examined, report.changed), (1, 1), "{report:?}");
    assert_eq!(coupon_status(pool, &zombie).await, "available");
}

#[tokio::test]
async fn the_reaper_releases_a_lock_that_names_no_order_at_all() {
    let ts = TestService::start().await;
    let svc = &ts.service;
    let pool = ts.db.db.pool();
    let t0 = epoch();
    let long = relative_template(svc, 10 * DAY).await;
    let orphan = claim(svc, "u1", &long).await;
    sqlx::query(
        "UPDATE coupons SET status = 'locked', order_no = NULL, locked_at = $2 WHERE id = $1",
    )
    .bind(&orphan)
    .bind(ms(t0))
    .execute(pool)
    .await
    .expect("plant a lock without an order");
    ts.clock.set(t0 + secs(3 * HOUR));
    let report = svc
        .reap_zombie_locks(JOB, 7200, 100)
        .await
        .expect("reaper runs");
    assert_eq!(report.changed, 1, "{report:?}");
    assert_eq!(coupon_status(pool, &orphan).await, "available");
    let events = coupon_events(pool, &orphan).await;
    assert_eq!(count_action(&events, "zombie_release"), 1);
}
