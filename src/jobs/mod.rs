//! Background jobs, started by `serve` unless `COUPONKEEPER_JOBS=off`.
//!
//! - [`worker::DeadlineWorker`]: the precise path. A timing wheel holds every
//!   deadline due within the horizon (coupon ends, checkout-lock lapses,
//!   presale window ends), refilled from the database's indexes and fed live
//!   by the service; when a slot fires, the job runs at once.
//! - the sweep: the backstop, every `COUPONKEEPER_SWEEP_SECONDS` with
//!   jitter; index-driven bounded batches of everything overdue, so a crash,
//!   restart or clock jump loses nothing.
//! - reconciliation every `COUPONKEEPER_RECONCILE_SECONDS`, recording what
//!   it found ([`crate::service::reconcile`]);
//! - the reminder planner every second ([`crate::service::reminders`]):
//!   pre-expiry reminders per user and slot, presale reminders, written to
//!   the outbox with their in-app copies;
//! - the zombie-lock reaper, archiving, and the purge of idempotency keys,
//!   ended console sessions and day-old sign-in attempts.
//! - the counter fold every second: the report counters' delta rows added
//!   into their day and all-days rows ([`Service::fold_counters`]);
//! - the webhook dispatcher: fan-out of new outbox messages and due
//!   deliveries sent outside any transaction, up to
//!   `COUPONKEEPER_WEBHOOK_CONCURRENCY` in flight per subscriber
//!   ([`crate::service::webhooks::Dispatcher`]); a slow receiver only
//!   delays its own webhooks.
//!
//! The database is the only authority: every job re-checks rows inside its
//! own transaction with conditional updates, so two instances running jobs
//! against one PostgreSQL never apply a change twice (batches are taken with
//! `FOR UPDATE SKIP LOCKED`), and nothing in memory needs to survive a
//! restart. On SQLite one process owns the file and its jobs.

pub mod pace;
mod settings;
pub mod wheel;
pub mod worker;

use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use rand::Rng;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use settings::{
    ACTOR_ARCHIVE, ACTOR_LAPSE, ACTOR_PRESALE, ACTOR_REAPER, ACTOR_RECONCILE, ACTOR_SWEEP,
    ACTOR_WHEEL, BATCH, JobSettings,
};

use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::jobs::Scheduler;
use crate::service::webhooks::{DispatchReport, Dispatcher};

/// Most batches one sweep runs (5 million coupons); the next sweep goes on.
const MAX_SWEEP_BATCHES: usize = 10_000;
/// Pause between sweep batches, so a huge backlog never monopolises the
/// database.
const SWEEP_PAUSE: StdDuration = StdDuration::from_millis(10);
/// How often the idempotency purge runs.
const PURGE_EVERY: StdDuration = StdDuration::from_secs(3600);
/// How often the wake-up planner runs ([`Service::plan_wakeups`]): a
/// wake-up goes out within about a minute of its time.
const WAKEUP_EVERY: StdDuration = StdDuration::from_secs(60);
/// Deadlines the service may queue for the worker before new ones are
/// dropped (the refill and the sweep pick those up).
const INBOX_CAPACITY: usize = 100_000;

/// Pause between webhook dispatcher steps.
const DISPATCH_EVERY: StdDuration = StdDuration::from_secs(1);

/// The running jobs; [`Jobs::stop`] ends them.
pub struct Jobs {
    shutdown: watch::Sender<bool>,
    handles: Vec<JoinHandle<()>>,
}

impl Jobs {
    /// Starts every job on the current runtime.
    pub fn start(service: Service, settings: JobSettings, metrics: Arc<Metrics>) -> Jobs {
        let (shutdown, rx) = watch::channel(false);
        let (scheduler, inbox) = Scheduler::channel(INBOX_CAPACITY);
        service.attach_scheduler(scheduler);
        let mut handles = Vec::new();
        let worker =
            worker::DeadlineWorker::new(service.clone(), settings.clone(), metrics.clone(), inbox);
        handles.push(tokio::spawn(worker.run(rx.clone())));
        handles.push(tokio::spawn(periodic(
            "sweep",
            service.clone(),
            settings.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(periodic(
            "zombie-reaper",
            service.clone(),
            settings.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(periodic(
            "archive",
            service.clone(),
            settings.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(periodic(
            "reconcile",
            service.clone(),
            settings.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(reminders(
            service.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(periodic(
            "wakeups",
            service.clone(),
            settings.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(dispatcher(
            service.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(bulk_jobs(
            service.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(codes(
            service.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(counter_fold(
            service.clone(),
            metrics.clone(),
            rx.clone(),
        )));
        handles.push(tokio::spawn(periodic(
            "idempotency-purge",
            service,
            settings,
            metrics,
            rx,
        )));
        Jobs { shutdown, handles }
    }

    /// Asks every job to stop after its current step and waits for them.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for h in self.handles {
            let _ = h.await;
        }
    }
}

fn interval_of(job: &str, s: &JobSettings) -> StdDuration {
    let secs = match job {
        "sweep" => s.sweep_seconds,
        "zombie-reaper" => s.reaper_seconds,
        "archive" => s.archive_seconds,
        "reconcile" => s.reconcile_seconds,
        "wakeups" => return WAKEUP_EVERY,
        _ => return PURGE_EVERY,
    };
    StdDuration::from_secs(u64::try_from(secs.max(1)).unwrap_or(1))
}

/// Up to 20 % extra, so instances started together do not run in step.
fn jittered(d: StdDuration) -> StdDuration {
    let extra = rand::rng().random_range(0.0..0.2);
    d.mul_f64(1.0 + extra)
}

/// Runs one periodic job forever: a first run a few seconds after start
/// (to catch up after downtime), then every interval with jitter.
async fn periodic(
    job: &'static str,
    service: Service,
    settings: JobSettings,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut wait = jittered(StdDuration::from_secs(5));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.changed() => return,
        }
        let started_at = service.now();
        let started = Instant::now();
        let result = run_once(job, &service, &settings, &metrics, &shutdown).await;
        let seconds = started.elapsed().as_secs_f64();
        let (rows, error) = match result {
            Ok(rows) => (rows, None),
            Err(e) => {
                tracing::warn!(job, error = %e, "background job failed; it will run again");
                (0, Some(e.to_string()))
            }
        };
        metrics.observe_job(job, seconds, rows, error.is_some());
        if let Err(e) = service.record_job_run(job, started_at, rows, error).await {
            tracing::warn!(job, error = %e, "cannot record job run");
        }
        wait = jittered(interval_of(job, &settings));
    }
}

/// How often the reminder planner runs: a reminder goes out within about
/// this long (plus one run) of its time.
pub const REMINDER_EVERY: StdDuration = StdDuration::from_secs(1);

/// The reminder planner, every [`REMINDER_EVERY`]: each run drains what is
/// due in bounded pages ([`Service::plan_due_reminders_with`], keeping its
/// cursor between runs). Only runs that wrote something or failed are
/// recorded in `job_runs`, so an idle planner does not add a row a second.
async fn reminders(service: Service, metrics: Arc<Metrics>, mut shutdown: watch::Receiver<bool>) {
    let job = "reminders";
    let mut cursor = crate::service::reminders::ReminderCursor::default();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(REMINDER_EVERY) => {}
            _ = shutdown.changed() => return,
        }
        let started_at = service.now();
        let started = Instant::now();
        let result = service.plan_due_reminders_with(&mut cursor, BATCH).await;
        let seconds = started.elapsed().as_secs_f64();
        let (rows, error) = match result {
            Ok(r) => (r.messages() as u64, None),
            Err(e) => {
                tracing::warn!(job, error = %e, "reminder planner failed; it will run again");
                (0, Some(e.to_string()))
            }
        };
        metrics.observe_job(job, seconds, rows, error.is_some());
        if (rows > 0 || error.is_some())
            && let Err(e) = service.record_job_run(job, started_at, rows, error).await
        {
            tracing::warn!(job, error = %e, "cannot record job run");
        }
    }
}

/// How often the code job looks for work when idle.
pub const CODES_EVERY: StdDuration = StdDuration::from_secs(1);
/// Most steps (chunks) one run of the code job takes: 100,000 codes at
/// 500 a chunk, then the next run goes on.
const MAX_CODE_STEPS: usize = 200;
/// Least pause between chunks (PostgreSQL's pause; on SQLite the pause is
/// as long as the chunk ran, see [`pace`]).
const CODE_PAUSE: StdDuration = StdDuration::from_millis(2);

/// The code job ([`Service::code_work_step`]): generates running code
/// batches and voids voided ones, one bounded chunk a transaction; idle,
/// it looks again every [`CODES_EVERY`]. Only runs that did something or
/// failed are recorded in `job_runs`.
async fn codes(service: Service, metrics: Arc<Metrics>, mut shutdown: watch::Receiver<bool>) {
    const JOB: &str = "codes";
    let mut pace = batch_pace(&service, crate::service::codes::CHUNK_ROWS, CODE_PAUSE);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(CODES_EVERY) => {}
            _ = shutdown.changed() => return,
        }
        let started_at = service.now();
        let started = Instant::now();
        let mut rows = 0u64;
        let mut error = None;
        for _ in 0..MAX_CODE_STEPS {
            if *shutdown.borrow() {
                break;
            }
            let step_started = Instant::now();
            match service.code_work_step(pace.rows()).await {
                Ok(step) if step.idle() => break,
                Ok(step) => rows += step.generated + step.voided,
                Err(e) => {
                    tracing::warn!(job = JOB, error = %e, "code job failed; it will run again");
                    error = Some(e.to_string());
                    break;
                }
            }
            tokio::time::sleep(pace.after(step_started.elapsed())).await;
        }
        metrics.observe_job(JOB, started.elapsed().as_secs_f64(), rows, error.is_some());
        if (rows > 0 || error.is_some())
            && let Err(e) = service.record_job_run(JOB, started_at, rows, error).await
        {
            tracing::warn!(job = JOB, error = %e, "cannot record job run");
        }
    }
}

/// How often the counter fold looks for deltas.
pub const FOLD_EVERY: StdDuration = StdDuration::from_secs(1);

/// Deltas per fold transaction.
const FOLD_BATCH: i64 = crate::service::reports::FOLD_BATCH;

/// Most fold transactions per run (1,000,000 deltas); the next run goes on.
const MAX_FOLD_STEPS: usize = 200;

/// The counter fold ([`Service::fold_counters`]): every second, the report
/// counters' deltas in batches of 5,000 until none are left (at most 200
/// batches a run). Changes never wait for the counters; this job is where
/// the adding happens, one writer of the counter rows per instance.
async fn counter_fold(
    service: Service,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) {
    const JOB: &str = "counter-fold";
    loop {
        tokio::select! {
            _ = tokio::time::sleep(FOLD_EVERY) => {}
            _ = shutdown.changed() => return,
        }
        let started = Instant::now();
        let mut rows = 0u64;
        let mut failed = false;
        for _ in 0..MAX_FOLD_STEPS {
            if *shutdown.borrow() {
                break;
            }
            match service.fold_counters(FOLD_BATCH).await {
                Ok(0) => break,
                Ok(n) => rows += n,
                Err(e) => {
                    tracing::warn!(job = JOB, error = %e, "counter fold failed; it will run again");
                    failed = true;
                    break;
                }
            }
        }
        metrics.observe_job(JOB, started.elapsed().as_secs_f64(), rows, failed);
    }
}

/// The webhook dispatcher ([`Dispatcher`]): sends stay in flight while
/// new deliveries are claimed; idle, it looks again every second. Its work
/// is recorded in `job_runs` once per second at most, and not when idle.
async fn dispatcher(service: Service, metrics: Arc<Metrics>, shutdown: watch::Receiver<bool>) {
    const JOB: &str = "webhook-dispatch";
    let mut dispatcher = Dispatcher::new(service.clone());
    let mut window = DispatchWindow::new(&service);
    while !*shutdown.borrow() {
        let (idle, error) = match dispatcher.turn(DISPATCH_EVERY).await {
            Ok(turn) => {
                window.report.add(turn.sends);
                (turn.idle() && dispatcher.in_flight() == 0, None)
            }
            Err(e) => {
                tracing::warn!(job = JOB, error = %e, "webhook dispatch failed; it will run again");
                (true, Some(e.to_string()))
            }
        };
        if error.is_some() || window.started.elapsed() >= DISPATCH_EVERY {
            window.record(&service, &metrics, error).await;
            window = DispatchWindow::new(&service);
        }
        if idle {
            let mut shutdown = shutdown.clone();
            tokio::select! {
                _ = tokio::time::sleep(DISPATCH_EVERY) => {}
                _ = shutdown.changed() => break,
            }
        }
    }
    // Sends in flight get the attempt timeout to finish; the rest are sent
    // again when their leases run out.
    let grace = StdDuration::from_secs(
        u64::try_from(service.webhooks().timeout_seconds.max(1)).unwrap_or(10),
    );
    window.report.add(dispatcher.drain(grace).await);
    window.record(&service, &metrics, None).await;
}

/// The dispatcher's counts since its last `job_runs` row.
struct DispatchWindow {
    started_at: chrono::DateTime<chrono::Utc>,
    started: Instant,
    report: DispatchReport,
}

impl DispatchWindow {
    fn new(service: &Service) -> DispatchWindow {
        DispatchWindow {
            started_at: service.now(),
            started: Instant::now(),
            report: DispatchReport::default(),
        }
    }

    /// Metrics always; a `job_runs` row when it did something or failed.
    async fn record(&self, service: &Service, metrics: &Metrics, error: Option<String>) {
        const JOB: &str = "webhook-dispatch";
        let rows = (self.report.fanned_out + self.report.sent) as u64;
        metrics.observe_job(
            JOB,
            self.started.elapsed().as_secs_f64(),
            rows,
            error.is_some(),
        );
        if (rows > 0 || error.is_some())
            && let Err(e) = service
                .record_job_run(JOB, self.started_at, rows, error)
                .await
        {
            tracing::warn!(job = JOB, error = %e, "cannot record job run");
        }
    }
}

/// The pace of a batch job on this store ([`pace`]): on SQLite, batches
/// of at most `rows` sized to hold the one writer about 10 ms, each
/// followed by a rest as long as it ran; on PostgreSQL, `rows` a batch
/// and `rest` between them.
fn batch_pace(service: &Service, rows: i64, rest: StdDuration) -> pace::Pace {
    if service.has_one_writer() {
        pace::Pace::shared_writer(rows, rest)
    } else {
        pace::Pace::fixed(rows, rest)
    }
}

/// How often the bulk-job runner looks for work when it has none.
const BULK_IDLE: StdDuration = StdDuration::from_secs(1);
/// Least pause between two batches of a bulk job (PostgreSQL's pause; on
/// SQLite the pause is as long as the batch ran and batches are sized to
/// about 10 ms, see [`pace`]).
const BULK_PAUSE: StdDuration = StdDuration::from_millis(2);

/// The bulk issue / bulk void runner ([`Service::run_bulk_batch`]): drains
/// running jobs batch by batch (each batch one transaction; instances on
/// one PostgreSQL take different jobs' rows, `FOR UPDATE SKIP LOCKED`),
/// then looks again every [`BULK_IDLE`]. A run that did something or
/// failed is recorded in `job_runs`.
async fn bulk_jobs(service: Service, metrics: Arc<Metrics>, mut shutdown: watch::Receiver<bool>) {
    const JOB: &str = "bulk-jobs";
    let mut pace = batch_pace(&service, service.bulk_batch_rows(), BULK_PAUSE);
    loop {
        let started_at = service.now();
        let started = Instant::now();
        let mut rows = 0u64;
        let mut error = None;
        for _ in 0..MAX_SWEEP_BATCHES {
            if *shutdown.borrow() {
                break;
            }
            let batch_started = Instant::now();
            match service.run_bulk_batch(pace.rows()).await {
                Ok(Some(report)) => {
                    rows += report.lines as u64;
                    tokio::time::sleep(pace.after(batch_started.elapsed())).await;
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(job = JOB, error = %e, "bulk job batch failed; it will run again");
                    error = Some(e.to_string());
                    break;
                }
            }
        }
        metrics.observe_job(JOB, started.elapsed().as_secs_f64(), rows, error.is_some());
        if (rows > 0 || error.is_some())
            && let Err(e) = service.record_job_run(JOB, started_at, rows, error).await
        {
            tracing::warn!(job = JOB, error = %e, "cannot record job run");
        }
        tokio::select! {
            _ = tokio::time::sleep(BULK_IDLE) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// One run of a periodic job; returns the rows it changed.
pub async fn run_once(
    job: &str,
    service: &Service,
    settings: &JobSettings,
    metrics: &Metrics,
    shutdown: &watch::Receiver<bool>,
) -> Result<u64, crate::service::ServiceError> {
    match job {
        "sweep" => sweep(service, settings, metrics, shutdown).await,
        "zombie-reaper" => Ok(service
            .reap_zombie_locks(ACTOR_REAPER, settings.zombie_lock_seconds, BATCH)
            .await?
            .changed as u64),
        "archive" => {
            let mut moved = 0u64;
            for _ in 0..MAX_SWEEP_BATCHES {
                if *shutdown.borrow() {
                    break;
                }
                let n = service
                    .archive_terminal(settings.archive_after_days, BATCH)
                    .await?;
                moved += n as u64;
                if n == 0 {
                    break;
                }
                tokio::time::sleep(SWEEP_PAUSE).await;
            }
            Ok(moved)
        }
        "reconcile" => Ok(service.run_reconciliation(ACTOR_RECONCILE).await?.found as u64),
        "wakeups" => Ok(service.plan_wakeups(BATCH).await?.decided() as u64),
        _ => Ok(service.purge_idempotency_keys(10_000).await?
            + service.purge_sessions(10_000).await?
            + service.purge_redeem_attempts(10_000).await?),
    }
}

/// The backstop: everything overdue, in bounded index-driven batches with a
/// pause between them, then lapsed checkouts and timed-out presales.
pub async fn sweep(
    service: &Service,
    settings: &JobSettings,
    metrics: &Metrics,
    shutdown: &watch::Receiver<bool>,
) -> Result<u64, crate::service::ServiceError> {
    let mut changed = 0u64;
    for _ in 0..MAX_SWEEP_BATCHES {
        if *shutdown.borrow() {
            break;
        }
        let batch = service
            .expire_due_batch(ACTOR_SWEEP, service.expiry_batch())
            .await?;
        if batch.count == 0 {
            break;
        }
        metrics.observe_expiry(&batch.lags_ms);
        changed += batch.count as u64;
        tokio::time::sleep(SWEEP_PAUSE).await;
    }
    changed += service
        .close_lapsed_checkouts(ACTOR_LAPSE, BATCH)
        .await?
        .changed as u64;
    changed += service
        .close_timed_out_presales(ACTOR_PRESALE, settings.presale_grace_seconds, BATCH)
        .await?
        .changed as u64;
    Ok(changed)
}

#[cfg(test)]
mod actor_tests {
    use super::*;
    use crate::domain::event::Actor;

    #[test]
    fn every_job_actor_is_a_job_pages_can_name() {
        for actor in [
            ACTOR_WHEEL,
            ACTOR_SWEEP,
            ACTOR_LAPSE,
            ACTOR_PRESALE,
            ACTOR_REAPER,
            ACTOR_RECONCILE,
            ACTOR_ARCHIVE,
            crate::service::webhooks::ACTOR_DISPATCHER,
        ] {
            assert!(matches!(Actor::parse(actor), Actor::Job(_)), "{actor}");
        }
    }
}
