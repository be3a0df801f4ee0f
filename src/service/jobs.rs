//! The operations background jobs run, each batch or each order one
//! transaction with conditional updates and event rows, exactly like the
//! API's operations (and through the same helpers): expiry, checkout-lock
//! lapse, presale timeout, the zombie-lock reaper, archiving, and the
//! pending-expiration figures.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

pub use super::deadlines::{Deadline, Scheduler};
use super::orders::{end_order, kind_of, status_of};
use super::{Ctx, Op, Service, ServiceError};
use crate::domain::coupon::{CouponStatus, release_target};
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::order::{OrderKind, OrderStatus, OrderStep};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::store::coupons::{self, CouponRow};
use crate::store::expiry;
use crate::store::orders;
use crate::store::outbox::{self, NewMessage};

/// Coupons expired by one call, with each one's lag behind its `ends_at`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct ExpiredBatch {
    pub count: usize,
    /// Milliseconds between each coupon's `ends_at` and its expiry.
    pub lags_ms: Vec<i64>,
}

/// Result of a job pass over orders or coupons.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PassReport {
    /// Rows examined.
    pub examined: usize,
    /// Rows changed.
    pub changed: usize,
}

/// Runs `one` on each item, each its own transaction, counting the items
/// examined and changed. Stops at the first database error.
async fn each_item<T, F, Fut>(items: Vec<T>, mut one: F) -> Result<PassReport, ServiceError>
where
    F: FnMut(T) -> Fut,
    Fut: std::future::Future<Output = Result<bool, ServiceError>>,
{
    let mut report = PassReport::default();
    for item in items {
        report.examined += 1;
        report.changed += usize::from(one(item).await?);
    }
    Ok(report)
}

/// Hourly counts of coupons due to expire (`GET /expirations/pending`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PendingExpirations {
    /// Coupons due within the window.
    pub total: i64,
    pub buckets: Vec<HourBucket>,
    /// Coupons past `ends_at` whose stored status is still `available`.
    pub overdue: i64,
    /// `ends_at` of the oldest overdue coupon.
    pub oldest_overdue_ends_at: Option<String>,
    pub within_seconds: i64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HourBucket {
    /// Start of the hour (UTC).
    pub starts_at: String,
    pub count: i64,
}

/// Longest window `GET /expirations/pending` covers: 31 days.
pub const MAX_PENDING_WINDOW_SECONDS: i64 = 31 * 24 * 3600;

/// Writes the events and `coupon.expired` outbox rows of coupons just
/// expired, in the caller's transaction.
async fn record_expired(
    c: &mut AnyConnection,
    rows: &[CouponRow],
    actor: &str,
    now: DateTime<Utc>,
    day: i64,
) -> Result<ExpiredBatch, ServiceError> {
    let now_ms = to_ms(now);
    let ids: Vec<&CouponId> = rows.iter().map(|r| &r.id).collect();
    expiry::record_events(c, &ids, actor, now_ms).await?;
    // The report counters: one statement for the batch, grouped by template.
    crate::store::counters::count_expired(c, rows.iter().map(|r| r.template_id.as_ref()), day)
        .await?;
    let msgs: Vec<NewMessage> = rows
        .iter()
        .map(|r| crate::store::coupons::coupon_message("coupon.expired", r.clone(), now_ms))
        .collect();
    outbox::insert_many(c, &msgs).await?;
    Ok(ExpiredBatch {
        count: rows.len(),
        lags_ms: rows.iter().map(|r| (now_ms - r.ends_at).max(0)).collect(),
    })
}

/// Coupons per expiry transaction on SQLite. SQLite has one writer, so a
/// request that writes waits for the batch in progress: measured with
/// `bench expiry` (200,000 coupons due in one second, release build, quiet
/// 2-core machine), batches of 500 drained 10,577 rows/s with requests on
/// other rows at 10.2x their idle p99; batches of 100 drained 6,108 rows/s
/// at 2.5x. PostgreSQL's writers do not wait on each other's rows, and
/// there 200 or 500 made no difference to requests (4.9x and 4.2x, the two
/// cores shared), so it keeps [`expiry::MAX_BATCH`].
pub const SQLITE_EXPIRY_BATCH: i64 = 100;

impl Service {
    /// Coupons per expiry transaction for the store this service runs on
    /// (the sweep's batches and the timing wheel's chunks).
    pub fn expiry_batch(&self) -> i64 {
        match self.db().backend() {
            crate::store::Backend::Sqlite => SQLITE_EXPIRY_BATCH,
            crate::store::Backend::Postgres => expiry::MAX_BATCH,
        }
    }

    /// Moves up to `batch` terminal coupons unchanged for `after_days` to
    /// the archive tables, in one transaction. Returns how many moved.
    pub async fn archive_terminal(
        &self,
        after_days: i64,
        batch: i64,
    ) -> Result<usize, ServiceError> {
        let now = self.now();
        let before_ms = to_ms(now - Duration::days(after_days));
        Ok(self
            .write(None, move |c| {
                Box::pin(async move {
                    Ok(
                        crate::store::archive::archive_batch(c, before_ms, batch, to_ms(now))
                            .await?,
                    )
                })
            })
            .await?
            .fresh()
            .unwrap_or(0))
    }

    /// Records one run of a background job (for the dashboard's history).
    pub async fn record_job_run(
        &self,
        job: &str,
        started: DateTime<Utc>,
        rows: u64,
        error: Option<String>,
    ) -> Result<(), ServiceError> {
        let job = job.to_string();
        let finished = self.now();
        self.write(None, move |c| {
            let job = job.clone();
            let error = error.clone();
            Box::pin(async move {
                expiry::insert_job_run(
                    c,
                    &expiry::NewJobRun {
                        job: &job,
                        started_at: to_ms(started),
                        finished_at: to_ms(finished),
                        rows: i64::try_from(rows).unwrap_or(i64::MAX),
                        error: error.as_deref(),
                    },
                )
                .await?;
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    /// Deletes idempotency records older than 24 h, at most `batch`.
    pub async fn purge_idempotency_keys(&self, batch: i64) -> Result<u64, ServiceError> {
        let before_ms = to_ms(self.now() - Duration::hours(super::idempotency::RETENTION_HOURS));
        Ok(self
            .write(None, move |c| {
                Box::pin(async move {
                    Ok(crate::store::idempotency::purge_older_than(c, before_ms, batch).await?)
                })
            })
            .await?
            .fresh()
            .unwrap_or(0))
    }

    /// Deadlines due by `until` for the wheel: coupon ends, checkout
    /// lapses and campaign window ends (each list bounded by `limit`).
    pub async fn deadlines_due_by(
        &self,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<(i64, Deadline)>, ServiceError> {
        let until_ms = to_ms(until);
        self.read(move |c| {
            Box::pin(async move {
                let mut out: Vec<(i64, Deadline)> = expiry::due_by(c, until_ms, limit)
                    .await?
                    .into_iter()
                    .map(|(id, t)| (t, Deadline::CouponEnd(id)))
                    .collect();
                out.extend(
                    expiry::checkout_lapses_by(c, until_ms, limit)
                        .await?
                        .into_iter()
                        .map(|(o, t)| (t, Deadline::CheckoutLapse(o))),
                );
                out.extend(
                    expiry::campaigns_ending_by(c, until_ms, limit)
                        .await?
                        .into_iter()
                        .map(|(id, t)| (t, Deadline::PresaleWindowEnd(id))),
                );
                Ok(out)
            })
        })
        .await
    }

    /// Expires up to `batch` overdue coupons, oldest first, in one
    /// transaction (index-driven; the sweep and the lazy path use it).
    pub async fn expire_due_batch(
        &self,
        actor: &str,
        batch: i64,
    ) -> Result<ExpiredBatch, ServiceError> {
        let actor = actor.to_string();
        let now = self.now();
        let day = crate::domain::report::day_number(self.settings().reminders.tz, now);
        Ok(self
            .write(None, move |c| {
                let actor = actor.clone();
                Box::pin(async move {
                    let rows = expiry::expire_due(c, to_ms(now), batch).await?;
                    record_expired(c, &rows, &actor, now, day).await
                })
            })
            .await?
            .fresh()
            .unwrap_or_default())
    }

    /// Expires the given coupons if they are still `available` and past
    /// their end (a timing-wheel slot), in one transaction per 500.
    pub async fn expire_coupons(
        &self,
        actor: &str,
        ids: &[CouponId],
    ) -> Result<ExpiredBatch, ServiceError> {
        let mut total = ExpiredBatch::default();
        for chunk in ids.chunks(expiry::MAX_BATCH as usize) {
            let chunk = chunk.to_vec();
            let actor = actor.to_string();
            let now = self.now();
            let day = crate::domain::report::day_number(self.settings().reminders.tz, now);
            let done = self
                .write(None, move |c| {
                    let chunk = chunk.clone();
                    let actor = actor.clone();
                    Box::pin(async move {
                        let rows = expiry::expire_ids(c, &chunk, to_ms(now)).await?;
                        record_expired(c, &rows, &actor, now, day).await
                    })
                })
                .await?
                .fresh()
                .unwrap_or_default();
            total.count += done.count;
            total.lags_ms.extend(done.lags_ms);
        }
        Ok(total)
    }

    /// Closes one normal order whose checkout lock has lapsed and releases
    /// its coupon, re-reading the order inside the transaction (a payment
    /// that got in first wins). Returns whether it closed the order.
    pub async fn close_lapsed_checkout(
        &self,
        actor: &str,
        order_no: &OrderNo,
    ) -> Result<bool, ServiceError> {
        let op = self.op(&Ctx::new(actor, None));
        let order_no = order_no.clone();
        Ok(self
            .write(None, move |c| {
                let op = op.clone();
                let order_no = order_no.clone();
                Box::pin(async move {
                    let Some(o) = orders::get(c, &order_no).await? else {
                        return Ok(false);
                    };
                    let lapsed = o
                        .checkout_lock_expires_at
                        .is_some_and(|t| t <= to_ms(op.now));
                    if kind_of(&o) != OrderKind::Normal
                        || status_of(&o) != OrderStatus::PendingPayment
                        || !lapsed
                    {
                        return Ok(false);
                    }
                    end_order(
                        c,
                        &op,
                        &o,
                        OrderStatus::PendingPayment,
                        OrderStep::CheckoutLockLapsed,
                        None,
                    )
                    .await?;
                    Ok(true)
                })
            })
            .await?
            .fresh()
            .unwrap_or(false))
    }

    /// Closes one `deposit_paid` presale order whose campaign's
    /// final-payment window ended more than `grace_seconds` ago, releasing
    /// its coupon. Returns whether it closed the order.
    pub async fn close_timed_out_presale(
        &self,
        actor: &str,
        order_no: &OrderNo,
        grace_seconds: i64,
    ) -> Result<bool, ServiceError> {
        let op = self.op(&Ctx::new(actor, None));
        let order_no = order_no.clone();
        Ok(self
            .write(None, move |c| {
                let op = op.clone();
                let order_no = order_no.clone();
                Box::pin(async move {
                    close_timed_out_presale_tx(c, &op, &order_no, grace_seconds).await
                })
            })
            .await?
            .fresh()
            .unwrap_or(false))
    }

    /// Closes every lapsed checkout due by now, at most `batch` orders.
    pub async fn close_lapsed_checkouts(
        &self,
        actor: &str,
        batch: i64,
    ) -> Result<PassReport, ServiceError> {
        let now_ms = to_ms(self.now());
        let due = self
            .read(move |c| {
                Box::pin(async move { Ok(expiry::checkout_lapses_by(c, now_ms, batch).await?) })
            })
            .await?;
        let due = due.into_iter().map(|(order_no, _)| order_no).collect();
        each_item(due, |order_no| async move {
            self.close_lapsed_checkout(actor, &order_no).await
        })
        .await
    }

    /// Closes deposit-paid orders of campaigns whose window ended more than
    /// `grace_seconds` ago, at most `batch` orders.
    pub async fn close_timed_out_presales(
        &self,
        actor: &str,
        grace_seconds: i64,
        batch: i64,
    ) -> Result<PassReport, ServiceError> {
        let cutoff_ms = to_ms(self.now() - Duration::seconds(grace_seconds));
        let due = self
            .read(move |c| {
                Box::pin(async move {
                    let mut out = Vec::new();
                    for (campaign_id, _) in expiry::campaigns_ending_by(c, cutoff_ms, 50).await? {
                        let left = batch - out.len() as i64;
                        if left <= 0 {
                            break;
                        }
                        out.extend(expiry::deposit_paid_orders(c, &campaign_id, left).await?);
                    }
                    Ok(out)
                })
            })
            .await?;
        each_item(due, |order_no| async move {
            self.close_timed_out_presale(actor, &order_no, grace_seconds)
                .await
        })
        .await
    }

    /// Releases one coupon locked for longer than `older_than_seconds` whose
    /// order is missing, closed or refunded, or names another coupon. The
    /// order is re-read inside the transaction, so a concurrent payment is
    /// never undone. Returns whether it released the coupon.
    pub async fn release_zombie_lock(
        &self,
        actor: &str,
        coupon_id: &CouponId,
        older_than_seconds: i64,
    ) -> Result<bool, ServiceError> {
        let op = self.op(&Ctx::new(actor, None));
        let coupon_id = coupon_id.clone();
        Ok(self
            .write(None, move |c| {
                let op = op.clone();
                let coupon_id = coupon_id.clone();
                Box::pin(async move {
                    release_zombie_lock_tx(c, &op, &coupon_id, older_than_seconds).await
                })
            })
            .await?
            .fresh()
            .unwrap_or(false))
    }

    /// One pass of the zombie-lock reaper over at most `batch` old locks.
    pub async fn reap_zombie_locks(
        &self,
        actor: &str,
        older_than_seconds: i64,
        batch: i64,
    ) -> Result<PassReport, ServiceError> {
        let before_ms = to_ms(self.now() - Duration::seconds(older_than_seconds));
        let ids = self
            .read(move |c| {
                Box::pin(async move { Ok(expiry::locked_before(c, before_ms, batch).await?) })
            })
            .await?;
        each_item(ids, |id| async move {
            self.release_zombie_lock(actor, &id, older_than_seconds)
                .await
        })
        .await
    }

    /// Coupons due to expire within `within_seconds`, by hour, and the
    /// overdue count.
    pub async fn pending_expirations(
        &self,
        within_seconds: i64,
    ) -> Result<PendingExpirations, ServiceError> {
        let now = self.now();
        let within_seconds = within_seconds.clamp(1, MAX_PENDING_WINDOW_SECONDS);
        let until = now + Duration::seconds(within_seconds);
        self.read(move |c| {
            Box::pin(async move {
                let rows = expiry::due_per_hour(c, to_ms(now), to_ms(until)).await?;
                let (overdue, oldest) = expiry::overdue(c, to_ms(now)).await?;
                Ok(PendingExpirations {
                    total: rows.iter().map(|(_, n)| n).sum(),
                    buckets: rows
                        .into_iter()
                        .map(|(hour, count)| HourBucket {
                            starts_at: rfc3339(from_ms(hour)),
                            count,
                        })
                        .collect(),
                    overdue,
                    oldest_overdue_ends_at: oldest.map(|t| rfc3339(from_ms(t))),
                    within_seconds,
                })
            })
        })
        .await
    }
}

/// The transaction of [`Service::release_zombie_lock`].
async fn release_zombie_lock_tx(
    c: &mut AnyConnection,
    op: &Op,
    coupon_id: &CouponId,
    older_than_seconds: i64,
) -> Result<bool, ServiceError> {
    let Some(coupon) = coupons::get(c, coupon_id).await? else {
        return Ok(false);
    };
    let old_enough = coupon
        .locked_at
        .is_some_and(|t| t < to_ms(op.now - Duration::seconds(older_than_seconds)));
    if coupon.status != CouponStatus::Locked || !old_enough {
        return Ok(false);
    }
    let order = match &coupon.order_no {
        Some(order_no) => orders::get(c, order_no).await?,
        None => None,
    };
    let further = match &order {
        Some(o) => crate::store::order_coupons::holds(c, &o.order_no, &coupon.id).await?,
        None => false,
    };
    let why = match &order {
        None => "its order does not exist",
        Some(o) if o.coupon_id.as_ref() != Some(&coupon.id) && !further => {
            "its order names another coupon"
        }
        Some(o) if matches!(status_of(o), OrderStatus::Closed | OrderStatus::Refunded) => {
            "its order is closed or refunded"
        }
        Some(_) => return Ok(false),
    };
    let to = release_target(from_ms(coupon.ends_at), op.now);
    let reason = format!("zombie lock released: {why}");
    // Not through `move_coupon`: a zombie may name no order at
    // all, and the update must then match `order_no IS NULL`
    // rather than an empty order number.
    Ok(coupons::transition(
        c,
        &coupons::CouponChange {
            coupon_id: &coupon.id,
            from: CouponStatus::Locked,
            to,
            order_no: coupon.order_no.as_ref(),
            action: "zombie_release",
            actor: &op.ctx.actor,
            reason: Some(&reason),
            request_id: None,
            trace: None,
            address: None,
            now_ms: to_ms(op.now),
            day: op.day(),
        },
    )
    .await?)
}

/// The transaction of [`Service::close_timed_out_presale`].
async fn close_timed_out_presale_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
    grace_seconds: i64,
) -> Result<bool, ServiceError> {
    let Some(o) = orders::get(c, order_no).await? else {
        return Ok(false);
    };
    if kind_of(&o) != OrderKind::Presale || status_of(&o) != OrderStatus::DepositPaid {
        return Ok(false);
    }
    let Some(campaign_id) = &o.campaign_id else {
        return Ok(false);
    };
    let Some(campaign) = crate::store::campaigns::get(c, campaign_id).await? else {
        return Ok(false);
    };
    let deadline = from_ms(campaign.final_payment_ends_at) + Duration::seconds(grace_seconds);
    if op.now < deadline {
        return Ok(false);
    }
    end_order(
        c,
        op,
        &o,
        OrderStatus::DepositPaid,
        OrderStep::PresaleTimeout,
        None,
    )
    .await?;
    Ok(true)
}
