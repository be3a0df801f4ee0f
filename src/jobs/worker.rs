//! The precise path of the expiry engine: a timing wheel of deadlines due
//! within the horizon, fired every [`TICK`].
//!
//! [`DeadlineWorker::tick`] and [`DeadlineWorker::refill`] are the steps;
//! [`DeadlineWorker::run`] only loops over them on real time. Tests drive
//! the steps directly with a manual clock.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use chrono::Duration;
use tokio::sync::{mpsc, watch};

use super::settings::{ACTOR_LAPSE, ACTOR_PRESALE, ACTOR_WHEEL, BATCH, JobSettings};
use super::wheel::TimingWheel;
use crate::domain::ids::{CampaignId, CouponId, OrderNo};
use crate::domain::time::to_ms;
use crate::log_safe::LogSafe;
use crate::metrics::Metrics;
use crate::service::jobs::{Deadline, ExpiredBatch};
use crate::service::{Service, ServiceError};

/// Whether a failure is the database's (unreachable, timed out, gone away)
/// rather than one item's (a refusal, a row the database would not take):
/// the former stops the tick, the latter skips the item.
fn is_database_error(e: &ServiceError) -> bool {
    e.is_unavailable()
}

/// How often the wheel turns. With one-second slots and this tick, a
/// deadline is acted on within about 1.2 s of its time.
pub const TICK: StdDuration = StdDuration::from_millis(200);
/// Width of one wheel slot.
const SLOT_MS: i64 = 1000;
/// Most deadlines the wheel holds; beyond that the sweep is the path.
const WHEEL_CAPACITY: usize = 500_000;
/// Most inbox messages taken per tick.
const INBOX_PER_TICK: usize = 50_000;

/// What one tick did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TickReport {
    pub fired: usize,
    pub expired: usize,
    pub orders_closed: usize,
}

/// The timing wheel and what feeds it.
pub struct DeadlineWorker {
    service: Service,
    settings: JobSettings,
    metrics: Arc<Metrics>,
    inbox: mpsc::Receiver<(i64, Deadline)>,
    wheel: TimingWheel<Deadline>,
    last_refill: Option<Instant>,
}

impl DeadlineWorker {
    pub fn new(
        service: Service,
        settings: JobSettings,
        metrics: Arc<Metrics>,
        inbox: mpsc::Receiver<(i64, Deadline)>,
    ) -> Self {
        let slots = usize::try_from(settings.horizon_seconds.max(1)).unwrap_or(600) + 1;
        let wheel = TimingWheel::new(SLOT_MS, slots, to_ms(service.now()), WHEEL_CAPACITY);
        DeadlineWorker {
            service,
            settings,
            metrics,
            inbox,
            wheel,
            last_refill: None,
        }
    }

    /// Deadlines on the wheel now.
    pub fn pending(&self) -> usize {
        self.wheel.len()
    }

    fn place(&mut self, due_ms: i64, d: Deadline) {
        let due_ms = match d {
            Deadline::PresaleWindowEnd(_) => due_ms + self.settings.presale_grace_seconds * 1000,
            _ => due_ms,
        };
        // Refused entries (beyond the horizon, duplicates, a full wheel)
        // are found again by the next refill or the sweep.
        let _ = self.wheel.insert(due_ms, d);
    }

    /// Loads every deadline due within the horizon from the database's
    /// indexes. Returns how many it placed on the wheel.
    pub async fn refill(&mut self) -> Result<usize, ServiceError> {
        let now = self.service.now();
        let until = now + Duration::seconds(self.settings.horizon_seconds);
        // Entries refused as beyond the horizon would be lost until the next
        // refill if the cursor lagged behind now; turning first prevents it.
        let early = self.wheel.advance(to_ms(now));
        for d in early {
            // Already due: put back so the next tick acts on them.
            let _ = self.wheel.insert(to_ms(now), d);
        }
        let before = self.wheel.len();
        let due = self
            .service
            .deadlines_due_by(until, i64::try_from(WHEEL_CAPACITY).unwrap_or(i64::MAX))
            .await?;
        for (t, d) in due {
            self.place(t, d);
        }
        self.last_refill = Some(Instant::now());
        Ok(self.wheel.len().saturating_sub(before))
    }

    /// Takes new deadlines from the service, fires the due slots and acts on
    /// them: coupons expire in batches of at most 500 per transaction; each
    /// lapsed order is closed in its own transaction.
    pub async fn tick(&mut self) -> Result<TickReport, ServiceError> {
        // Turn first, so the horizon is measured from now even after a
        // stall; then take new deadlines (already due ones fire at once).
        let now_ms = to_ms(self.service.now());
        let mut fired = self.wheel.advance(now_ms);
        for _ in 0..INBOX_PER_TICK {
            match self.inbox.try_recv() {
                Ok((t, d)) => self.place(t, d),
                Err(_) => break,
            }
        }
        fired.extend(self.wheel.advance(now_ms));
        let mut report = TickReport {
            fired: fired.len(),
            ..TickReport::default()
        };
        let mut coupons = Vec::new();
        let mut campaigns = BTreeSet::new();
        let mut lapses = Vec::new();
        for d in fired {
            match d {
                Deadline::CouponEnd(id) => coupons.push(id),
                Deadline::CheckoutLapse(o) => lapses.push(o),
                Deadline::PresaleWindowEnd(c) => {
                    campaigns.insert(c);
                }
            }
        }
        // A database error (unreachable, timed out) stops the tick and puts
        // everything not yet done back on the wheel for the next one; any
        // other failure concerns one item: it is retried alone once, then
        // skipped and counted (the refill or the sweep finds it again if it
        // is still due), and the rest of the tick goes on.
        let batch = usize::try_from(self.service.expiry_batch()).unwrap_or(100);
        let chunks: Vec<&[CouponId]> = coupons.chunks(batch).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            match self.service.expire_coupons(ACTOR_WHEEL, chunk).await {
                Ok(done) => self.count_expired(&mut report, done),
                Err(e) if is_database_error(&e) => {
                    let rest = chunks[i..].iter().flat_map(|c| c.iter().cloned());
                    self.put_back(now_ms, rest, &lapses, &campaigns);
                    return Err(e);
                }
                Err(_) => {
                    for (j, id) in chunk.iter().enumerate() {
                        match self.expire_one(id).await {
                            Ok(done) => self.count_expired(&mut report, done),
                            Err(e) if is_database_error(&e) => {
                                let rest = chunk[j..]
                                    .iter()
                                    .chain(chunks[i + 1..].iter().flat_map(|c| c.iter()))
                                    .cloned();
                                self.put_back(now_ms, rest, &lapses, &campaigns);
                                return Err(e);
                            }
                            Err(e) => self.skip("coupon", id, &e),
                        }
                    }
                }
            }
        }
        for (i, order_no) in lapses.iter().enumerate() {
            let mut outcome = self
                .service
                .close_lapsed_checkout(ACTOR_LAPSE, order_no)
                .await;
            if outcome.as_ref().is_err_and(|e| !is_database_error(e)) {
                // Lost a race with a payment or a cancel: read it again.
                outcome = self
                    .service
                    .close_lapsed_checkout(ACTOR_LAPSE, order_no)
                    .await;
            }
            match outcome {
                Ok(closed) => report.orders_closed += usize::from(closed),
                Err(e) if is_database_error(&e) => {
                    self.put_back(now_ms, std::iter::empty(), &lapses[i..], &campaigns);
                    return Err(e);
                }
                Err(e) => self.skip("checkout_lapse", order_no, &e),
            }
        }
        if !campaigns.is_empty() {
            match self
                .service
                .close_timed_out_presales(ACTOR_PRESALE, self.settings.presale_grace_seconds, BATCH)
                .await
            {
                Ok(done) => report.orders_closed += done.changed,
                Err(e) => {
                    self.put_back(now_ms, std::iter::empty(), &[], &campaigns);
                    return Err(e);
                }
            }
        }
        Ok(report)
    }

    fn count_expired(&self, report: &mut TickReport, done: ExpiredBatch) {
        if done.count > 0 {
            self.metrics.observe_expiry(&done.lags_ms);
        }
        report.expired += done.count;
    }

    /// One coupon in its own transaction, retried once: what is left of a
    /// batch that failed for a reason other than the database.
    async fn expire_one(&self, id: &CouponId) -> Result<ExpiredBatch, ServiceError> {
        let ids = [id.clone()];
        match self.service.expire_coupons(ACTOR_WHEEL, &ids).await {
            Err(e) if !is_database_error(&e) => {
                self.service.expire_coupons(ACTOR_WHEEL, &ids).await
            }
            other => other,
        }
    }

    /// Gives up one deadline for this tick: counted on `/metrics` and logged
    /// once here, where it is handled.
    fn skip(&self, kind: &'static str, subject: &str, e: &ServiceError) {
        self.metrics.count_wheel_skip(kind);
        tracing::warn!(
            deadline = kind,
            subject = %LogSafe(subject),
            error = %e,
            "expiry wheel skipped one deadline after a retry; the sweep will catch up"
        );
    }

    /// Puts deadlines that a failed tick did not reach back on the wheel,
    /// due now, so the next tick takes them again.
    fn put_back(
        &mut self,
        now_ms: i64,
        coupons: impl Iterator<Item = CouponId>,
        lapses: &[OrderNo],
        campaigns: &BTreeSet<CampaignId>,
    ) {
        let deadlines = coupons
            .map(Deadline::CouponEnd)
            .chain(lapses.iter().cloned().map(Deadline::CheckoutLapse))
            .chain(campaigns.iter().cloned().map(Deadline::PresaleWindowEnd));
        for d in deadlines {
            // A full wheel refuses it; the refill or the sweep is then the path.
            let _ = self.wheel.insert(now_ms, d);
        }
    }

    /// Turns the wheel on real time until shutdown: a tick every [`TICK`],
    /// a refill every half horizon. A failed step is logged and counted,
    /// and the loop goes on (the sweep is the backstop meanwhile).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let refill_every = StdDuration::from_secs(
            u64::try_from((self.settings.horizon_seconds / 2).max(1)).unwrap_or(300),
        );
        let mut ticker = tokio::time::interval(TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = shutdown.changed() => return,
            }
            if self.last_refill.is_none_or(|t| t.elapsed() >= refill_every) {
                let started = Instant::now();
                match self.refill().await {
                    Ok(n) => self.metrics.observe_job(
                        "wheel-refill",
                        started.elapsed().as_secs_f64(),
                        n as u64,
                        false,
                    ),
                    Err(e) => {
                        // Retry on the next tick rather than after a full period.
                        self.last_refill = None;
                        self.metrics.observe_job(
                            "wheel-refill",
                            started.elapsed().as_secs_f64(),
                            0,
                            true,
                        );
                        tracing::warn!(error = %e, "expiry wheel refill failed");
                        continue;
                    }
                }
            }
            let started = Instant::now();
            match self.tick().await {
                Ok(r) if r.fired > 0 => {
                    self.metrics.observe_job(
                        "wheel-tick",
                        started.elapsed().as_secs_f64(),
                        (r.expired + r.orders_closed) as u64,
                        false,
                    );
                }
                Ok(_) => {}
                Err(e) => {
                    self.metrics.observe_job(
                        "wheel-tick",
                        started.elapsed().as_secs_f64(),
                        0,
                        true,
                    );
                    tracing::warn!(error = %e, "expiry wheel tick failed; the sweep will catch up");
                }
            }
        }
    }
}
