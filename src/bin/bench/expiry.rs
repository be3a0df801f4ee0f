//! `bench expiry`: draining a million coupons that end in the same second
//!
//! Coupons valid "until midnight" all fall due in the same second. The
//! expiry engine drains them with [`Service::expire_due_batch`]: at most 500
//! coupons per transaction, taken oldest first from the `(status, ends_at)`
//! index, each batch writing its `expire` events and `coupon.expired` outbox
//! rows in the same transaction. The seeds warn against two naive designs;
//! this benchmark times all three, each on its own fresh database holding
//! the same data:
//!
//! - `batched` (ours): `expire_due_batch("job:bench", 500)` until it
//!   returns 0, no pause between batches;
//! - `per-row`: `SELECT` every due id, then one autocommit
//!   `UPDATE coupons SET status = 'expired' ... WHERE id = $1 AND status =
//!   'available'` per coupon. Stopped after `--per-row-max-seconds`; the
//!   drain time and lag are then extrapolated at the measured rate (marked
//!   `~`) and the rest is expired untimed, so the checks still apply;
//! - `unbounded`: one `UPDATE coupons SET status = 'expired' ... WHERE
//!   status = 'available' AND ends_at <= now`.
//!
//! The naive designs write no events and no outbox rows (they also set
//! `updated_at`, as `expire_due` does): they do less work than ours, so
//! their drain figures flatter them.
//!
//! Data: `N` `available` coupons whose `ends_at` spread over the milliseconds
//! of the second before the insert, written by ONE set-based statement
//! (`generate_series` on PostgreSQL, a recursive CTE on SQLite), plus a
//! background of `B` other coupons (default `N / 4`: 70% `available` and due
//! within the next 30 days, 20% `used`, 10% expired long ago) that no drain
//! may touch. PostgreSQL then gets `VACUUM ANALYZE` and a `CHECKPOINT`,
//! SQLite a WAL checkpoint, like a table whose rows were written long before
//! they fall due.
//!
//! Figures per design: drain seconds (drain start to the last commit),
//! rows per second, and the expiry lag p50/p99. The clock passes the
//! coupons' second at the drain start (the insert and the idle baseline run
//! before, while nothing drains; they are not counted), so a coupon's lag is
//! the time from the drain start to the commit that stored it `expired`:
//! every row of a batch gets its batch's commit, every row of the unbounded
//! statement the one commit, each per-row update its own.
//!
//! And how long a concurrent request waits: one task sends requests through
//! the service on unrelated data, one after the other with a short pause
//! between rounds: claim a coupon of another template, create a normal
//! order with it, pay it, read the coupon ([`Service::get_coupon`]). Each
//! request's latency is recorded, first for `--idle-seconds` with no drain
//! (the baseline, on the same database just before the drain), then during
//! the drain. The figure to read is `req p99 vs idle`; failed requests are
//! counted. On SQLite the naive statements go straight to the pool, outside
//! the service's in-process write gate, as a naive job would: the service's
//! writes then wait in SQLite's busy handler.
//!
//! Checks after each drain: all `N` coupons stored `expired`, the background
//! unchanged; for `batched` exactly `N` `expire` events and `N`
//! `coupon.expired` outbox rows, one per coupon; for the naive designs none.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::ValueEnum;

use couponkeeper::clock::SystemClock;
use couponkeeper::config::Config;
use couponkeeper::domain::cart::{OrderInput, OrderSpec};
use couponkeeper::domain::coupon::CouponStatus;
use couponkeeper::domain::ids::{TemplateId, UserId};
use couponkeeper::server::build_service;
use couponkeeper::service::{Ctx, Service};
use couponkeeper::store::Db;

use crate::data::{create_template, generated_insert, insert_generated, settle};
use crate::scratch::{Target, close_pool};
use crate::stats::{load_average, ms, percentile};
use crate::{Result, Store, StoreArg, stores_of};

#[derive(clap::Args, Clone)]
pub(crate) struct ExpiryArgs {
    /// Coupons whose `ends_at` is the same second.
    #[arg(long, default_value_t = 1_000_000)]
    coupons: usize,
    /// Other coupons in the table, which no drain may touch (default: a
    /// quarter of --coupons).
    #[arg(long)]
    background: Option<usize>,
    /// Which store(s) to measure.
    #[arg(long, value_enum, default_value_t = StoreArg::Both)]
    store: StoreArg,
    /// Drain designs to run, comma-separated, in this order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "batched,per-row,unbounded"
    )]
    designs: Vec<Design>,
    /// Seconds of concurrent requests with no drain (the baseline), before
    /// each drain.
    #[arg(long, default_value_t = 10)]
    idle_seconds: u64,
    /// Pause between two rounds of concurrent requests, in milliseconds.
    #[arg(long, default_value_t = 10)]
    probe_pause_ms: u64,
    /// Coupons per transaction of the batched drain (1 to the service's
    /// maximum), to choose the batch size by measurement (default: the
    /// store's, as the sweep uses: `Service::expiry_batch`).
    #[arg(long)]
    batch: Option<i64>,
    /// Pause between two batches of the batched drain, in milliseconds
    /// (`serve`'s sweep pauses 10 ms so waiting writers get in; 0 drains
    /// flat out).
    #[arg(long, default_value_t = 0)]
    pause_ms: u64,
    /// Time cap of the per-row loop; beyond it the drain is extrapolated.
    #[arg(long, default_value_t = 60)]
    per_row_max_seconds: u64,
}

/// Largest accepted `--coupons` and `--background`.
const MAX_EXPIRY_COUPONS: usize = 5_000_000;
/// Milliseconds in a week: how long the inserted coupons were valid.
const WEEK_MS: i64 = 7 * 86_400_000;
/// Distinct users the inserted coupons belong to.
const BENCH_USERS: i64 = 200_000;
/// Stock of the template the concurrent requests claim from.
const PROBE_STOCK: usize = 1_000_000;
/// Untimed request rounds before the baseline.
const PROBE_WARMUP_ROUNDS: usize = 20;
/// Upper bound of request rounds in one phase; the phase's end stops the
/// loop long before.
const MAX_PROBE_ROUNDS: usize = 10_000_000;
/// Largest accepted `--idle-seconds`.
const MAX_IDLE_SECONDS: u64 = 600;
/// Largest accepted `--per-row-max-seconds`.
const MAX_PER_ROW_SECONDS: u64 = 3600;
/// Largest accepted `--probe-pause-ms`.
const MAX_PROBE_PAUSE_MS: u64 = 10_000;

/// The naive per-row statement (`$1` now in ms, `$2` coupon id).
const PER_ROW_SQL: &str =
    "UPDATE coupons SET status = 'expired', updated_at = $1 WHERE id = $2 AND status = 'available'";

/// The naive unbounded statement (`$1` now in ms).
const UNBOUNDED_SQL: &str = "UPDATE coupons SET status = 'expired', updated_at = $1 WHERE status = 'available' AND ends_at <= $1";

#[derive(Clone, Copy, PartialEq, Eq, Debug, ValueEnum)]
enum Design {
    Batched,
    PerRow,
    Unbounded,
}

impl Design {
    fn name(self) -> &'static str {
        match self {
            Design::Batched => "batched",
            Design::PerRow => "per-row",
            Design::Unbounded => "unbounded",
        }
    }
}

/// A figure that may be extrapolated rather than measured.
#[derive(Clone, Copy, Debug)]
struct Figure {
    value: f64,
    extrapolated: bool,
}

impl Figure {
    fn measured(value: f64) -> Self {
        Figure {
            value,
            extrapolated: false,
        }
    }

    /// The value with `decimals` decimals, `~` in front when extrapolated.
    fn show(self, decimals: usize) -> String {
        let mark = if self.extrapolated { "~" } else { "" };
        format!("{mark}{:.*}", decimals, self.value)
    }
}

/// What one drain did.
#[derive(Clone, Debug)]
struct Drain {
    /// Seconds from the drain start to the commit of the last row.
    seconds: Figure,
    lag_p50: Figure,
    lag_p99: Figure,
    /// Rows the timed drain itself expired.
    rows_timed: u64,
    note: String,
}

/// Latencies of the concurrent requests of one phase.
#[derive(Default)]
struct Requests {
    latencies: Vec<Duration>,
    failures: usize,
    first_failure: Option<String>,
}

#[derive(Clone, Debug)]
struct RequestStats {
    count: usize,
    failures: usize,
    first_failure: Option<String>,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

impl Requests {
    fn stats(mut self) -> RequestStats {
        self.latencies.sort_unstable();
        RequestStats {
            count: self.latencies.len(),
            failures: self.failures,
            first_failure: self.first_failure,
            p50: percentile(&self.latencies, 0.50),
            p99: percentile(&self.latencies, 0.99),
            max: self.latencies.last().copied().unwrap_or(Duration::ZERO),
        }
    }
}

/// One row of the expiry table.
#[derive(Clone, Debug)]
struct ExpiryRow {
    store: Store,
    design: Design,
    coupons: usize,
    drain: Drain,
    idle: RequestStats,
    busy: RequestStats,
}

impl ExpiryRow {
    fn rate(&self) -> Figure {
        Figure {
            value: self.coupons as f64 / self.drain.seconds.value.max(f64::MIN_POSITIVE),
            extrapolated: self.drain.seconds.extrapolated,
        }
    }
}

pub(crate) async fn expiry(args: ExpiryArgs) -> Result<()> {
    let background = args.background.unwrap_or(args.coupons / 4);
    if args.coupons == 0 || args.coupons > MAX_EXPIRY_COUPONS {
        return Err(format!("--coupons must be between 1 and {MAX_EXPIRY_COUPONS}").into());
    }
    if background > MAX_EXPIRY_COUPONS {
        return Err(format!("--background must be at most {MAX_EXPIRY_COUPONS}").into());
    }
    if args.designs.is_empty() {
        return Err("--designs must name at least one design".into());
    }
    if args.idle_seconds == 0 || args.idle_seconds > MAX_IDLE_SECONDS {
        return Err(format!("--idle-seconds must be between 1 and {MAX_IDLE_SECONDS}").into());
    }
    if args.per_row_max_seconds == 0 || args.per_row_max_seconds > MAX_PER_ROW_SECONDS {
        return Err(
            format!("--per-row-max-seconds must be between 1 and {MAX_PER_ROW_SECONDS}").into(),
        );
    }
    if args.pause_ms > MAX_PROBE_PAUSE_MS {
        return Err(format!("--pause-ms must be at most {MAX_PROBE_PAUSE_MS}").into());
    }
    if args.probe_pause_ms > MAX_PROBE_PAUSE_MS {
        return Err(format!("--probe-pause-ms must be at most {MAX_PROBE_PAUSE_MS}").into());
    }
    sqlx::any::install_default_drivers();
    let designs: Vec<&str> = args.designs.iter().map(|d| d.name()).collect();
    eprintln!(
        "bench expiry: {} coupons due in the same second + {background} background, designs {}, \
         batch {} with {}ms pauses, idle baseline {}s, request pause {}ms, per-row cap {}s, {} worker threads, load average {}",
        args.coupons,
        designs.join(","),
        args.batch
            .map_or_else(|| "the store's".to_string(), |b| b.to_string()),
        args.pause_ms,
        args.idle_seconds,
        args.probe_pause_ms,
        args.per_row_max_seconds,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        load_average(),
    );
    let started = Instant::now();
    let mut table = Vec::new();
    for &store in stores_of(args.store) {
        for &design in &args.designs {
            match run_expiry(store, design, background, &args).await {
                Ok(row) => table.push(row),
                Err(e) => {
                    print_expiry_table(&table, &args);
                    return Err(format!("{} {}: {e}", store.name(), design.name()).into());
                }
            }
        }
    }
    print_expiry_table(&table, &args);
    eprintln!(
        "bench expiry: done in {:.0}s, load average {}",
        started.elapsed().as_secs_f64(),
        load_average()
    );
    Ok(())
}

fn print_expiry_table(rows: &[ExpiryRow], args: &ExpiryArgs) {
    if rows.is_empty() {
        return;
    }
    println!();
    println!(
        "{:<9} {:<10} {:>8} {:>8} {:>8} {:>9} {:>9} {:>10} {:>10} {:>10} {:>11} {:>15} {:>5} {:>4}  notes",
        "store",
        "design",
        "coupons",
        "drain s",
        "rows/s",
        "lag p50 s",
        "lag p99 s",
        "req p50 ms",
        "req p99 ms",
        "req max ms",
        "idle p99 ms",
        "req p99 vs idle",
        "reqs",
        "fail",
    );
    for r in rows {
        let idle = ms(r.idle.p99);
        let ratio = if idle > 0.0 {
            format!("{:.2}x", ms(r.busy.p99) / idle)
        } else {
            "-".to_string()
        };
        println!(
            "{:<9} {:<10} {:>8} {:>8} {:>8} {:>9} {:>9} {:>10.2} {:>10.2} {:>10.2} {:>11.2} {:>15} {:>5} {:>4}  {}",
            r.store.name(),
            r.design.name(),
            r.coupons,
            r.drain.seconds.show(2),
            r.rate().show(0),
            r.drain.lag_p50.show(2),
            r.drain.lag_p99.show(2),
            ms(r.busy.p50),
            ms(r.busy.p99),
            ms(r.busy.max),
            idle,
            ratio,
            r.busy.count,
            r.busy.failures,
            r.drain.note,
        );
    }
    println!();
    println!(
        "lag: from the drain start (the clock passing the coupons' second) to the commit that \
         stored the coupon expired. req: claim, create order, pay, read coupon on unrelated data, \
         one at a time with {}ms between rounds; idle = the same with no drain, on the same \
         database just before. ~ = extrapolated at the measured rate (per-row stopped after {}s). \
         per-row and unbounded write no events and no outbox rows.",
        args.probe_pause_ms, args.per_row_max_seconds
    );
}

/// Runs one design on a fresh database, then removes the database whether
/// or not the run succeeded.
async fn run_expiry(
    store: Store,
    design: Design,
    background: usize,
    args: &ExpiryArgs,
) -> Result<ExpiryRow> {
    let (target, url) = Target::create(store).await?;
    let config = Config::default();
    let result = match Db::connect(&url, config.db_max_connections, config.tx_retries).await {
        Ok(db) => {
            let r = measure_expiry(&db, store, design, background, args).await;
            close_pool(&db).await;
            r
        }
        Err(e) => Err(format!("cannot connect to {url}: {e}").into()),
    };
    let removed = target.remove().await;
    let row = result?;
    removed?;
    Ok(row)
}

async fn measure_expiry(
    db: &Db,
    store: Store,
    design: Design,
    background: usize,
    args: &ExpiryArgs,
) -> Result<ExpiryRow> {
    let label = format!("{:<8} {:<9}", store.name(), design.name());
    let n = args.coupons;
    db.migrate().await?;
    let service = build_service(&Config::default(), db.clone(), Arc::new(SystemClock));
    let ctx = Ctx::new("bench", None);
    let hot = create_template(&service, &ctx, "expiring", n).await?;
    let other = create_template(&service, &ctx, "background", background.max(1)).await?;
    let probe = create_template(&service, &ctx, "probe", PROBE_STOCK).await?;

    // The data: N coupons ending within the second before now, so all due.
    let t0 = Instant::now();
    let now_ms = Utc::now().timestamp_millis();
    let due_second_ms = (now_ms.div_euclid(1000) - 1) * 1000;
    insert_generated(db, store, &due_sql(store), 1, n, &hot, due_second_ms).await?;
    let due_inserted = t0.elapsed();
    insert_generated(
        db,
        store,
        &background_sql(store),
        n + 1,
        background,
        &other,
        now_ms,
    )
    .await?;
    let all_inserted = t0.elapsed();
    settle(db, store).await?;
    eprintln!(
        "  {label} data: {n} due coupons in {:.1}s, {background} background in {:.1}s, settled in {:.1}s",
        due_inserted.as_secs_f64(),
        (all_inserted - due_inserted).as_secs_f64(),
        (t0.elapsed() - all_inserted).as_secs_f64(),
    );
    let hot_before = status_counts(db, &hot).await?;
    if hot_before != [("available".to_string(), i64::try_from(n)?)] {
        return Err(format!("after the insert the due coupons stand {hot_before:?}").into());
    }
    let other_before = status_counts(db, &other).await?;

    // Baseline: the concurrent requests with no drain.
    let pause = Duration::from_millis(args.probe_pause_ms);
    let warm = probe_loop(
        service.clone(),
        probe.clone(),
        "warm".into(),
        Arc::new(AtomicBool::new(false)),
        Duration::ZERO,
        PROBE_WARMUP_ROUNDS,
    )
    .await;
    if let Some(e) = warm.first_failure {
        return Err(format!("warm-up request failed: {e}").into());
    }
    let idle = probe_for(&service, &probe, "idle", pause, async {
        tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
        Ok(())
    })
    .await?
    .0
    .stats();
    if let Some(e) = &idle.first_failure {
        return Err(format!(
            "{} request(s) failed with no drain, first: {e}",
            idle.failures
        )
        .into());
    }

    // The drain, with the same requests running alongside.
    let drain_wall_ms = Utc::now().timestamp_millis();
    let drain_start = Instant::now();
    let cap = Duration::from_secs(args.per_row_max_seconds);
    let (busy, drain) = probe_for(&service, &probe, "drain", pause, async {
        match design {
            Design::Batched => {
                let pause = Duration::from_millis(args.pause_ms);
                let batch = args.batch.unwrap_or_else(|| service.expiry_batch());
                drain_batched(&service, n, batch, pause, drain_start).await
            }
            Design::PerRow => drain_per_row(db, drain_start, cap).await,
            Design::Unbounded => drain_unbounded(db, drain_start).await,
        }
    })
    .await?;
    let busy = busy.stats();
    eprintln!(
        "  {label} drain: {}s for {} rows timed ({}); the coupons' second ended {:.1}s before the drain start",
        drain.seconds.show(2),
        drain.rows_timed,
        drain.note,
        (drain_wall_ms - (due_second_ms + 999)) as f64 / 1000.0,
    );
    eprintln!(
        "  {label} requests: idle {} p50 {:.2}ms p99 {:.2}ms max {:.2}ms; during the drain {} p50 {:.2}ms p99 {:.2}ms max {:.2}ms, {} failed{}",
        idle.count,
        ms(idle.p50),
        ms(idle.p99),
        ms(idle.max),
        busy.count,
        ms(busy.p50),
        ms(busy.p99),
        ms(busy.max),
        busy.failures,
        busy.first_failure
            .as_deref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default(),
    );

    // A capped per-row loop left coupons behind: check it expired exactly
    // what it reports, then expire the rest, untimed. (Any other drain
    // that leaves coupons behind fails the check below.)
    if design == Design::PerRow && drain.seconds.extrapolated {
        let expired = count_status(db, &hot, "expired").await?;
        if u64::try_from(expired)? != drain.rows_timed {
            return Err(format!(
                "the timed drain reports {} rows but {expired} coupons are expired",
                drain.rows_timed
            )
            .into());
        }
        let rest = sqlx::query(UNBOUNDED_SQL)
            .bind(Utc::now().timestamp_millis())
            .execute(db.pool())
            .await?;
        eprintln!(
            "  {label} expired the remaining {} coupons untimed",
            rest.rows_affected()
        );
    }
    verify_expiry(db, &label, design, &hot, n, &other, &other_before).await?;
    Ok(ExpiryRow {
        store,
        design,
        coupons: n,
        drain,
        idle,
        busy,
    })
}

/// Runs `work` while one task sends requests (see [`probe_loop`]); stops
/// the requests when `work` ends and returns both results.
async fn probe_for<T>(
    service: &Service,
    template_id: &TemplateId,
    prefix: &str,
    pause: Duration,
    work: impl Future<Output = Result<T>>,
) -> Result<(Requests, T)> {
    let stop = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(probe_loop(
        service.clone(),
        template_id.clone(),
        prefix.to_string(),
        Arc::clone(&stop),
        pause,
        MAX_PROBE_ROUNDS,
    ));
    let done = work.await;
    stop.store(true, Ordering::Relaxed);
    let requests = task.await.map_err(|e| format!("request task died: {e}"))?;
    Ok((requests, done?))
}

/// Rounds of requests, one at a time with `pause` between rounds, until
/// `stop` is set or `rounds` rounds are done. A failed request ends its
/// round and is counted.
async fn probe_loop(
    service: Service,
    template_id: TemplateId,
    prefix: String,
    stop: Arc<AtomicBool>,
    pause: Duration,
    rounds: usize,
) -> Requests {
    let ctx = Ctx::new("bench", None);
    let mut out = Requests::default();
    for i in 0..rounds {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let key = format!("{prefix}-{i}");
        let round = probe_round(
            &service,
            &ctx,
            &template_id,
            &key,
            &stop,
            &mut out.latencies,
        );
        if let Err(e) = round.await {
            out.failures += 1;
            out.first_failure.get_or_insert(e);
        }
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    out
}

/// One shopper's checkout on data no drain touches: claim a coupon of
/// `template_id` as user `key`, create normal order `key` with it, pay it,
/// read the coupon back (it must be `used`). Each request's latency goes
/// to `latencies`; stops early, without error, once `stop` is set.
async fn probe_round(
    service: &Service,
    ctx: &Ctx,
    template_id: &TemplateId,
    key: &str,
    stop: &AtomicBool,
    latencies: &mut Vec<Duration>,
) -> Result<(), String> {
    let user = UserId::parse(key).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let claimed = service.claim(ctx, None, user, template_id.clone()).await;
    latencies.push(t.elapsed());
    let coupon = claimed
        .map_err(|e| format!("claim: {e}"))?
        .fresh()
        .ok_or_else(|| "claim answered a replay".to_string())?;
    if stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    let input = OrderInput {
        order_no: Some(key.to_string()),
        user_id: Some(key.to_string()),
        kind: Some("normal".into()),
        category: Some("bench".into()),
        total_cents: Some(10_000),
        lines: None,
        coupon_id: Some(coupon.id.to_string()),
        coupon_ids: None,
        ..Default::default()
    };
    let t = Instant::now();
    let spec = OrderSpec::parse(input).map_err(|e| format!("order {}: {}", e.field, e.message))?;
    let created = service.create_order(ctx, None, spec).await;
    latencies.push(t.elapsed());
    let order = created
        .map_err(|e| format!("create_order: {e}"))?
        .fresh()
        .ok_or_else(|| "create_order answered a replay".to_string())?;
    if stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    let t = Instant::now();
    let paid = service.pay(ctx, None, order.order_no).await;
    latencies.push(t.elapsed());
    paid.map_err(|e| format!("pay: {e}"))?;
    if stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    let t = Instant::now();
    let read = service.get_coupon(&coupon.id).await;
    latencies.push(t.elapsed());
    let view = read.map_err(|e| format!("get_coupon: {e}"))?;
    if view.status != CouponStatus::Used {
        return Err(format!(
            "get_coupon: {} is {} after payment, expected used",
            coupon.id, view.status
        ));
    }
    Ok(())
}

/// Our design: `expire_due_batch` until it finds nothing. Every row of a
/// batch counts as committed when the call returns.
async fn drain_batched(
    service: &Service,
    n: usize,
    batch: i64,
    pause: Duration,
    start: Instant,
) -> Result<Drain> {
    let size = usize::try_from(batch.clamp(1, couponkeeper::store::expiry::MAX_BATCH))?;
    let max_batches = n / size + 10;
    let mut commits: Vec<(Duration, u64)> = Vec::with_capacity(max_batches);
    let mut emptied = false;
    for _ in 0..=max_batches {
        let batch = service.expire_due_batch("job:bench", size as i64).await?;
        let at = start.elapsed();
        if batch.count == 0 {
            emptied = true;
            break;
        }
        commits.push((at, u64::try_from(batch.count)?));
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    if !emptied {
        return Err(format!("still finding due coupons after {max_batches} batches").into());
    }
    let rows: u64 = commits.iter().map(|c| c.1).sum();
    let last = commits.last().map_or(Duration::ZERO, |c| c.0);
    let lag = |p| Figure::measured(commit_percentile(&commits, rows, p, |_| last).as_secs_f64());
    // Whether batches slow down as the drain goes on (dead index entries).
    let tenth = (commits.len() / 10).max(1);
    let first = rate_of(&commits, 0, tenth);
    let final_tenth = rate_of(&commits, commits.len().saturating_sub(tenth), commits.len());
    Ok(Drain {
        seconds: Figure::measured(last.as_secs_f64()),
        lag_p50: lag(0.50),
        lag_p99: lag(0.99),
        rows_timed: rows,
        note: format!(
            "{} tx of <= {size} with events + outbox, {} ms apart; first/last 10%: {first:.0}/{final_tenth:.0} rows/s",
            commits.len(),
            pause.as_millis()
        ),
    })
}

/// Rows per second of commits `from..to`, timed from the commit before
/// `from` (or the drain start).
fn rate_of(commits: &[(Duration, u64)], from: usize, to: usize) -> f64 {
    let Some(slice) = commits.get(from..to) else {
        return 0.0;
    };
    let begin = from
        .checked_sub(1)
        .and_then(|i| commits.get(i))
        .map_or(Duration::ZERO, |c| c.0);
    let end = slice.last().map_or(begin, |c| c.0);
    let rows: u64 = slice.iter().map(|c| c.1).sum();
    rows as f64
        / end
            .saturating_sub(begin)
            .as_secs_f64()
            .max(f64::MIN_POSITIVE)
}

/// The naive loop: read every due id, then one autocommit UPDATE per id, on
/// one connection, until done or `cap` has passed since `start`; beyond the
/// cap the drain is extrapolated at the rate of the rows done.
async fn drain_per_row(db: &Db, start: Instant, cap: Duration) -> Result<Drain> {
    let now_ms = Utc::now().timestamp_millis();
    let mut conn = db.pool().acquire().await?;
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT id FROM coupons WHERE status = 'available' AND ends_at <= $1 ORDER BY ends_at",
    )
    .bind(now_ms)
    .fetch_all(&mut *conn)
    .await?;
    let selected = start.elapsed();
    let mut commits: Vec<(Duration, u64)> = Vec::with_capacity(ids.len());
    for id in &ids {
        if start.elapsed() >= cap {
            break;
        }
        let done = sqlx::query(PER_ROW_SQL)
            .bind(now_ms)
            .bind(id.as_str())
            .execute(&mut *conn)
            .await?;
        commits.push((start.elapsed(), done.rows_affected()));
    }
    drop(conn);
    let rows: u64 = commits.iter().map(|c| c.1).sum();
    let total = u64::try_from(ids.len())?;
    let capped = commits.len() < ids.len();
    let last = commits.last().map_or(selected, |c| c.0);
    // Row k (1-based) of the untimed rest would commit at the measured rate.
    let per_row = last.saturating_sub(selected).as_secs_f64() / commits.len().max(1) as f64;
    let at = |rank: u64| Duration::from_secs_f64(selected.as_secs_f64() + rank as f64 * per_row);
    let lag = |p: f64| {
        let rank = (p * total as f64).ceil() as u64;
        Figure {
            value: commit_percentile(&commits, total, p, at).as_secs_f64(),
            extrapolated: rank > rows,
        }
    };
    let seconds = if capped {
        Figure {
            value: at(total).as_secs_f64(),
            extrapolated: true,
        }
    } else {
        Figure::measured(last.as_secs_f64())
    };
    let note = if capped {
        format!(
            "1 autocommit/row, no events; SELECT {:.1}s, {rows} rows in {:.0}s, rest extrapolated",
            selected.as_secs_f64(),
            last.as_secs_f64()
        )
    } else {
        format!(
            "1 autocommit/row, no events; SELECT {:.1}s",
            selected.as_secs_f64()
        )
    };
    Ok(Drain {
        seconds,
        lag_p50: lag(0.50),
        lag_p99: lag(0.99),
        rows_timed: rows,
        note,
    })
}

/// The other naive design: one UPDATE of every due coupon.
async fn drain_unbounded(db: &Db, start: Instant) -> Result<Drain> {
    let done = sqlx::query(UNBOUNDED_SQL)
        .bind(Utc::now().timestamp_millis())
        .execute(db.pool())
        .await?;
    let at = start.elapsed().as_secs_f64();
    Ok(Drain {
        seconds: Figure::measured(at),
        lag_p50: Figure::measured(at),
        lag_p99: Figure::measured(at),
        rows_timed: done.rows_affected(),
        note: "1 statement, 1 tx, no events".into(),
    })
}

/// Nearest-rank percentile `p` of the commit times of `total` rows, given
/// the commits measured (time since the drain start, rows committed) in
/// commit order; a rank beyond the measured rows is `extrapolate(rank)`.
fn commit_percentile(
    commits: &[(Duration, u64)],
    total: u64,
    p: f64,
    extrapolate: impl Fn(u64) -> Duration,
) -> Duration {
    if total == 0 {
        return Duration::ZERO;
    }
    let rank = ((p * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0u64;
    for &(at, rows) in commits {
        seen += rows;
        if seen >= rank {
            return at;
        }
    }
    extrapolate(rank)
}

/// The `user_id` of the expiry benchmark's coupons: [`BENCH_USERS`] users,
/// round-robin.
fn expiry_user_sql() -> String {
    format!("'user-' || CAST(i % {BENCH_USERS} AS TEXT) AS user_id")
}

/// The due coupons (`$4` the start of their second, in ms): `available`,
/// `ends_at` spread over that second's milliseconds, claimed a week before.
fn due_sql(store: Store) -> String {
    generated_insert(
        store,
        &format!(
            "{}, CAST('available' AS TEXT) AS status,
             $4 + i % 1000 - {WEEK_MS} AS starts_at,
             $4 + i % 1000 AS ends_at, CAST(NULL AS TEXT) AS order_no,
             CAST(NULL AS BIGINT) AS locked_at, CAST(NULL AS BIGINT) AS used_at, $4 + i % 1000 - {WEEK_MS} AS created_at,
             $4 + i % 1000 - {WEEK_MS} AS updated_at",
            expiry_user_sql()
        ),
    )
}

/// The background (`$4` now, in ms): 70% `available` and ending within the
/// next 30 days (from an hour on), 20% `used`, 10% expired over the last 30
/// days; none due.
fn background_sql(store: Store) -> String {
    let offset = "(i * 7919 % 2592000) * 1000";
    let created_recent = "$4 - 86400000 - (i % 86400) * 1000";
    let ended = format!("$4 - 3600000 - {offset}");
    let starts = format!("CASE WHEN i % 10 = 9 THEN {ended} - {WEEK_MS} ELSE {created_recent} END");
    let used_at = "CASE WHEN i % 10 IN (7, 8) THEN $4 - 60000 - (i % 86400) * 1000 ELSE CAST(NULL AS BIGINT) END";
    generated_insert(
        store,
        &format!(
            "{},
             CASE WHEN i % 10 < 7 THEN 'available' WHEN i % 10 < 9 THEN 'used' ELSE 'expired' END AS status,
             {starts} AS starts_at,
             CASE WHEN i % 10 = 9 THEN {ended} ELSE $4 + 3600000 + {offset} END AS ends_at,
             CASE WHEN i % 10 IN (7, 8) THEN 'bg-' || CAST(i AS TEXT) ELSE CAST(NULL AS TEXT) END AS order_no,
             CAST(NULL AS BIGINT) AS locked_at, {used_at} AS used_at,
             {starts} AS created_at,
             CASE WHEN i % 10 IN (7, 8) THEN $4 - 60000 - (i % 86400) * 1000
                  WHEN i % 10 = 9 THEN {ended} ELSE {created_recent} END AS updated_at",
            expiry_user_sql()
        ),
    )
}

/// `(status, count)` of a template's coupons, by status.
async fn status_counts(db: &Db, template_id: &TemplateId) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT status, CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1
         GROUP BY status ORDER BY status",
    )
    .bind(template_id)
    .fetch_all(db.pool())
    .await?)
}

async fn count_status(db: &Db, template_id: &TemplateId, status: &str) -> Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1 AND status = $2",
    )
    .bind(template_id)
    .bind(status)
    .fetch_one(db.pool())
    .await?)
}

/// After a drain: all `n` coupons of `hot` stored `expired`, the background
/// as before; `batched` wrote exactly one `expire` event and one
/// `coupon.expired` outbox row per coupon (and only for those coupons), the
/// naive designs none.
async fn verify_expiry(
    db: &Db,
    label: &str,
    design: Design,
    hot: &TemplateId,
    n: usize,
    other: &TemplateId,
    other_before: &[(String, i64)],
) -> Result<()> {
    let expected = i64::try_from(n)?;
    let hot_after = status_counts(db, hot).await?;
    let other_after = status_counts(db, other).await?;
    let (events, event_coupons, events_on_hot): (i64, i64, i64) = sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT), CAST(COUNT(DISTINCT e.coupon_id) AS BIGINT),
                CAST(COUNT(c.id) AS BIGINT)
         FROM events e LEFT JOIN coupons c ON c.id = e.coupon_id AND c.template_id = $1
         WHERE e.action = 'expire'",
    )
    .bind(hot)
    .fetch_one(db.pool())
    .await?;
    let (outbox, outbox_coupons, outbox_on_hot): (i64, i64, i64) = sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT), CAST(COUNT(DISTINCT o.subject_id) AS BIGINT),
                CAST(COUNT(c.id) AS BIGINT)
         FROM outbox o LEFT JOIN coupons c ON c.id = o.subject_id AND c.template_id = $1
         WHERE o.event_type = 'coupon.expired'",
    )
    .bind(hot)
    .fetch_one(db.pool())
    .await?;
    let want = if design == Design::Batched {
        expected
    } else {
        0
    };
    let all_expired = hot_after == [("expired".to_string(), expected)];
    let background_kept = other_after.as_slice() == other_before;
    let events_ok = events == want && event_coupons == want && events_on_hot == want;
    let outbox_ok = outbox == want && outbox_coupons == want && outbox_on_hot == want;
    let ok = all_expired && background_kept && events_ok && outbox_ok;
    eprintln!(
        "  {label} check: coupons {hot_after:?} (expected {expected} expired), background \
         {}, expire events {events} on {event_coupons} coupons, coupon.expired outbox rows \
         {outbox} on {outbox_coupons} coupons (expected {want} each): {}",
        if background_kept {
            "unchanged"
        } else {
            "CHANGED"
        },
        if ok { "ok" } else { "FAILED" }
    );
    if !ok {
        return Err(format!(
            "correctness check failed: coupons {hot_after:?}, background {other_before:?} -> \
             {other_after:?}, events {events}/{event_coupons}/{events_on_hot}, outbox \
             {outbox}/{outbox_coupons}/{outbox_on_hot}, expected {expected} expired and {want} \
             events and outbox rows"
        )
        .into());
    }
    Ok(())
}
