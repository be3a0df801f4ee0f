//! Benchmarks of couponkeeper's two hot paths and of the support console's
//! reads, each on SQLite and on
//! PostgreSQL in the same run, each scenario on a fresh database and checked
//! afterwards (a failed check exits non-zero). The machine running them is
//! noisy: read the ratios to the baselines measured in the same run, never
//! the absolute figures.
//!
//! ```text
//! cargo run --release --bin bench -- claims [--claims N] [--concurrency C]
//!     [--store sqlite|postgres|both] [--warmup W] [--rounds R]
//! cargo run --release --bin bench -- expiry [--coupons N] [--background B]
//!     [--store sqlite|postgres|both] [--designs batched,per-row,unbounded]
//!     [--idle-seconds S] [--probe-pause-ms P] [--per-row-max-seconds M]
//! cargo run --release --bin bench -- console [--store sqlite|postgres|both]
//!     [--coupons N] [--runs R] [--max-op-seconds S] [--batch B] [--seed X]
//! cargo run --release --bin bench -- reminders [--store sqlite|postgres|both]
//!     [--coupons N] [--users M] [--spread-minutes S] [--receiver-delay-ms D]
//!     [--concurrency C] [--no-delivery]
//! ```
//!
//! `bench reminders` is described where its code starts (planning,
//! expiry, then delivery to a fast and a slow webhook receiver) and in the
//! README (Reminders, Benchmark).
//!
//! PostgreSQL: a fresh database `ck_bench_<pid>_<n>` per scenario on the
//! server of `COUPONKEEPER_BENCH_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), dropped afterwards.
//! SQLite: a file in a temporary directory, removed afterwards.
//!
//! # `bench claims`: claims per second of ONE hot template
//!
//! A flash sale puts every claim on the same template. Each claim is one
//! transaction that bumps the `(template, user)` quota counter, takes one unit
//! of stock with a conditional `UPDATE` and inserts the coupon and its event.
//! If the stock lived in one row, every claim on PostgreSQL would queue on
//! that row's lock until the previous claim commits: a global lock per
//! template. The design splits the stock over up to 16 shard rows
//! (`domain::template::stock_shards`) so concurrent claims lock different
//! rows. This benchmark checks that the split pays off, by timing three
//! scenarios per store in the same run:
//!
//! - `hot-sharded`: one template with `total_stock = N`, sharded as the
//!   service creates it (the real design);
//! - `hot-single-row`: the same template with its stock collapsed into one
//!   shard row afterwards (the naive "one hot counter row" baseline);
//! - `spread`: claims round-robin over 32 templates, so no stock row is
//!   shared by concurrent claims (the upper bound). Each of them has stock
//!   `N` too, the hot template's shard shape, and receives only `N / 32`
//!   claims: its shards never run full, so no claim pays for probing full
//!   shards (which claims on a nearly sold-out template do).
//!
//! Claims go through [`Service::claim`] in process, `C` concurrent tokio tasks
//! on a multi-thread runtime, every claim by a distinct user (per-user limit
//! 1, so the quota upsert runs too). The result to read is the ratio to
//! `hot-single-row`. Every scenario runs after a short warm-up on a separate
//! template, and is checked: exactly `N` coupons, `SUM(claimed) = N`, `N`
//! quota rows; on the hot template one more claim is refused as out of
//! stock, and in `spread` each template holds exactly its round-robin share.
//!
//! # `bench expiry`: draining a million coupons that end in the same second
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
//!
//! # `bench console`: the support console's reads on N coupons
//!
//! Support staff search, list and check coupons while the table holds
//! millions of them; every console read is meant to be a bounded set of
//! index lookups (see `store::search` and `migrations/*/0003_support.sql`).
//! This benchmark fills a fresh database per store with `N` coupons
//! (default 1,000,000, at most 10,000,000) spread like production and times
//! each read against a primary-key lookup measured in the same run:
//!
//! - about `N / 5` users, scattered, plus 10 heavy users holding every
//!   100th coupon between them; 50 templates, created through the service
//!   and sold out, one hot template holding 20 % of the coupons;
//! - status 50 % available, 25 % used, 19 % expired, 4 % locked,
//!   2 % invalidated; `ends_at` within 60 days either side of now
//!   (available ones ahead, expired ones behind); an order for every used
//!   (`paid`) and locked (`pending_payment`, checkout lock running) coupon;
//! - written by [`generated_insert`] `--batch` coupons per statement (one
//!   transaction each) plus one `INSERT ... SELECT` of that batch's orders,
//!   then settled as in `bench expiry` (and the orders analysed).
//!
//! The service runs on a [`ManualClock`] fixed at the instant the data was
//! generated around. Every operation gets 5 untimed runs and then `--runs`
//! timed ones (default 200), each with keys drawn at random (seeded) from
//! the data: `get_coupon` (the baseline), `search` by code, order number,
//! user and a miss, `list_coupons` first pages of 50 under each filter the
//! console offers, the 20th page of the hot template (following `next`),
//! `user_overview` and `user_health_check` of a heavy user,
//! `order_health_check` of orders on the hot template and on the others
//! (its stock check reads the last reconciliation's verdict on the
//! template, not a count of its coupons), and one
//! `export_coupons_csv` of 10,000 rows. An operation stops after
//! `--max-op-seconds` of timed runs; its run count says so. Every result is
//! checked (the coupon searched for is found, pages are full, the stock
//! check is `ok`); no latency is asserted.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use clap::{Parser, Subcommand, ValueEnum};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sqlx::{AnyConnection, Connection, Executor};
use tracing_subscriber::EnvFilter;

use couponkeeper::clock::{ManualClock, SystemClock};
use couponkeeper::config::Config;
use couponkeeper::domain::coupon::CouponStatus;
use couponkeeper::domain::ids::UserId;
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::server::build_service;
use couponkeeper::service::orders::OrderInput;
use couponkeeper::service::support::{
    CouponFilter, OVERVIEW_COUPONS, SearchOutcome, USER_HEALTH_ORDERS,
};
use couponkeeper::service::{Ctx, Refusal, Service, ServiceError};
use couponkeeper::store::{Db, templates};

/// Templates the `spread` scenario claims from, round-robin.
const SPREAD_TEMPLATES: usize = 32;
/// Largest PostgreSQL pool, whatever the concurrency.
const MAX_PG_POOL: usize = 40;
/// Largest accepted concurrency (tasks are cheap, but connections are not).
const MAX_CONCURRENCY: usize = 1024;
/// Largest accepted number of rounds.
const MAX_ROUNDS: usize = 20;
/// Default admin URL of the PostgreSQL server.
const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = BoxError> = std::result::Result<T, E>;

#[derive(Parser)]
#[command(name = "bench", about = "couponkeeper benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Claims per second of one hot template vs. baselines, per store.
    Claims(ClaimsArgs),
    /// Draining N coupons due in the same second: batched vs. naive designs.
    Expiry(ExpiryArgs),
    /// Latency of the support console's reads on N coupons, per store.
    Console(ConsoleArgs),
    /// Pre-expiry reminders for N coupons of M users crossing one offset:
    /// messages produced vs. user-slot pairs, and the drain time.
    Reminders(RemindersArgs),
}

#[derive(clap::Args, Clone)]
struct RemindersArgs {
    /// Coupons that reach the offset.
    #[arg(long, default_value_t = 100_000)]
    coupons: usize,
    /// Users they belong to, round-robin.
    #[arg(long, default_value_t = 20_000)]
    users: usize,
    /// Minutes over which the coupons reach the offset (the simulated
    /// clock steps one minute at a time through them).
    #[arg(long, default_value_t = 180)]
    spread_minutes: i64,
    /// Which store(s) to measure.
    #[arg(long, value_enum, default_value_t = StoreArg::Both)]
    store: StoreArg,
    /// How long the slow receiver waits before answering 200, in ms.
    #[arg(long, default_value_t = 100)]
    receiver_delay_ms: u64,
    /// Sends in flight per subscriber (`COUPONKEEPER_WEBHOOK_CONCURRENCY`).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Skip the delivery phase (planning only).
    #[arg(long)]
    no_delivery: bool,
}

#[derive(clap::Args, Clone)]
struct ClaimsArgs {
    /// Claims timed per scenario (also the hot template's stock).
    #[arg(long, default_value_t = 4000)]
    claims: usize,
    /// Concurrent claiming tasks.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Which store(s) to measure.
    #[arg(long, value_enum, default_value_t = StoreArg::Both)]
    store: StoreArg,
    /// Untimed claims before each scenario, on a separate template.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Runs of every scenario; the table shows the median-throughput run.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
}

#[derive(clap::Args, Clone)]
struct ExpiryArgs {
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
    /// Time cap of the per-row loop; beyond it the drain is extrapolated.
    #[arg(long, default_value_t = 60)]
    per_row_max_seconds: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StoreArg {
    Sqlite,
    Postgres,
    Both,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Store {
    Sqlite,
    Postgres,
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Store::Sqlite => "sqlite",
            Store::Postgres => "postgres",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scenario {
    HotSharded,
    HotSingleRow,
    Spread,
}

impl Scenario {
    const ALL: [Scenario; 3] = [
        Scenario::HotSharded,
        Scenario::HotSingleRow,
        Scenario::Spread,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::HotSharded => "hot-sharded",
            Scenario::HotSingleRow => "hot-single-row",
            Scenario::Spread => "spread",
        }
    }
}

/// One timed scenario.
#[derive(Clone, Debug)]
struct Measurement {
    store: Store,
    scenario: Scenario,
    claims: usize,
    concurrency: usize,
    seconds: f64,
    p50: Duration,
    p99: Duration,
}

impl Measurement {
    fn rate(&self) -> f64 {
        self.claims as f64 / self.seconds.max(f64::MIN_POSITIVE)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // sqlx warns about every statement slower than a second: the expiry
    // benchmark's inserts and drains are meant to be slow.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,sqlx::query=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Claims(args) => runtime.block_on(claims(args)),
        Command::Expiry(args) => runtime.block_on(expiry(args)),
        Command::Console(args) => runtime.block_on(console(args)),
        Command::Reminders(args) => runtime.block_on(reminders(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn stores_of(arg: StoreArg) -> &'static [Store] {
    match arg {
        StoreArg::Sqlite => &[Store::Sqlite],
        StoreArg::Postgres => &[Store::Postgres],
        StoreArg::Both => &[Store::Sqlite, Store::Postgres],
    }
}

async fn claims(args: ClaimsArgs) -> Result<()> {
    if args.claims == 0 || args.claims > 1_000_000 {
        return Err("--claims must be between 1 and 1000000".into());
    }
    if args.concurrency == 0 || args.concurrency > MAX_CONCURRENCY {
        return Err(format!("--concurrency must be between 1 and {MAX_CONCURRENCY}").into());
    }
    if args.rounds == 0 || args.rounds > MAX_ROUNDS {
        return Err(format!("--rounds must be between 1 and {MAX_ROUNDS}").into());
    }
    sqlx::any::install_default_drivers();
    let stores = stores_of(args.store);
    eprintln!(
        "bench claims: {} claims x {} tasks per scenario, warm-up {}, {} round(s), {} worker threads, load average {}",
        args.claims,
        args.concurrency,
        args.warmup,
        args.rounds,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        load_average(),
    );
    let mut table = Vec::new();
    for &store in stores {
        let mut runs: Vec<Vec<Measurement>> = vec![Vec::new(); Scenario::ALL.len()];
        for round in 0..args.rounds {
            for (i, &scenario) in Scenario::ALL.iter().enumerate() {
                let m = run_scenario(store, scenario, &args).await.map_err(|e| {
                    format!(
                        "{} {} (round {}): {e}",
                        store.name(),
                        scenario.name(),
                        round + 1
                    )
                })?;
                eprintln!(
                    "  {:<8} {:<15} round {}: {:.3}s, {:.0} claims/s",
                    store.name(),
                    scenario.name(),
                    round + 1,
                    m.seconds,
                    m.rate()
                );
                runs[i].push(m);
            }
        }
        for mut r in runs {
            r.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
            if let Some(median) = r.get(r.len() / 2) {
                table.push(median.clone());
            }
        }
    }
    print_table(&table);
    Ok(())
}

fn print_table(rows: &[Measurement]) {
    println!();
    println!(
        "{:<9} {:<15} {:>6} {:>5} {:>7} {:>9} {:>7} {:>7} {:>14}",
        "store",
        "scenario",
        "claims",
        "conc",
        "secs",
        "claims/s",
        "p50 ms",
        "p99 ms",
        "vs single-row"
    );
    for m in rows {
        let baseline = rows
            .iter()
            .find(|b| b.store == m.store && b.scenario == Scenario::HotSingleRow)
            .map(Measurement::rate);
        let ratio = match baseline {
            Some(b) if b > 0.0 => format!("{:.2}x", m.rate() / b),
            _ => "-".to_string(),
        };
        println!(
            "{:<9} {:<15} {:>6} {:>5} {:>7.3} {:>9.0} {:>7.2} {:>7.2} {:>14}",
            m.store.name(),
            m.scenario.name(),
            m.claims,
            m.concurrency,
            m.seconds,
            m.rate(),
            ms(m.p50),
            ms(m.p99),
            ratio
        );
    }
}

/// The 1/5/15-minute load averages, for judging how noisy the run was.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_string())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A database that exists only for one scenario.
enum Target {
    Sqlite { dir: PathBuf },
    Postgres { admin_url: String, name: String },
}

static DB_COUNTER: AtomicU32 = AtomicU32::new(0);

impl Target {
    /// Creates the empty database and returns its URL.
    async fn create(store: Store) -> Result<(Target, String)> {
        let n = DB_COUNTER.fetch_add(1, Ordering::SeqCst);
        let pid = std::process::id();
        match store {
            Store::Sqlite => {
                let dir = std::env::temp_dir().join(format!("ck_bench_{pid}_{n}"));
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                let url = format!("sqlite://{}", dir.join("bench.db").display());
                Ok((Target::Sqlite { dir }, url))
            }
            Store::Postgres => {
                let admin_url = std::env::var("COUPONKEEPER_BENCH_PG_URL")
                    .ok()
                    .filter(|u| !u.trim().is_empty())
                    .unwrap_or_else(|| DEFAULT_PG_URL.to_string());
                let name = format!("ck_bench_{pid}_{n}");
                let mut conn = AnyConnection::connect(&admin_url)
                    .await
                    .map_err(|e| format!("PostgreSQL at {admin_url} is unreachable: {e}"))?;
                conn.execute(format!("CREATE DATABASE {name}").as_str())
                    .await
                    .map_err(|e| format!("CREATE DATABASE {name}: {e}"))?;
                conn.close().await?;
                let url = database_url(&admin_url, &name)?;
                Ok((Target::Postgres { admin_url, name }, url))
            }
        }
    }

    /// Removes the database; the pool on it must be closed already.
    async fn remove(self) -> Result<()> {
        match self {
            Target::Sqlite { dir } => std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("cannot remove {}: {e}", dir.display()).into()),
            Target::Postgres { admin_url, name } => {
                let mut conn = AnyConnection::connect(&admin_url).await?;
                conn.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                    .await
                    .map_err(|e| format!("DROP DATABASE {name}: {e}"))?;
                conn.close().await?;
                Ok(())
            }
        }
    }
}

/// The URL of database `name` on the server of `admin_url` (same user, host
/// and query parameters).
fn database_url(admin_url: &str, name: &str) -> Result<String> {
    let (main, query) = match admin_url.split_once('?') {
        Some((m, q)) => (m, Some(q)),
        None => (admin_url, None),
    };
    let after_scheme = main
        .find("://")
        .map(|i| i + 3)
        .ok_or_else(|| format!("not a URL: {admin_url}"))?;
    let base = match main[after_scheme..].find('/') {
        Some(slash) => &main[..after_scheme + slash],
        None => main,
    };
    Ok(match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    })
}

/// Runs one scenario on a fresh database, then removes the database whether
/// or not the scenario succeeded.
async fn run_scenario(store: Store, scenario: Scenario, args: &ClaimsArgs) -> Result<Measurement> {
    let (target, url) = Target::create(store).await?;
    let pool_size = u32::try_from(args.concurrency.clamp(1, MAX_PG_POOL)).unwrap_or(1);
    let retries = Config::default().tx_retries;
    let result = match Db::connect(&url, pool_size, retries).await {
        Ok(db) => {
            let r = measure(&db, store, scenario, args).await;
            close_pool(&db).await;
            r
        }
        Err(e) => Err(format!("cannot connect to {url}: {e}").into()),
    };
    let removed = target.remove().await;
    let m = result?;
    removed?;
    Ok(m)
}

/// Closes the pool once every connection is back in it. sqlx returns a
/// connection from a spawned task that first pings it; a ping still in
/// flight when the database is dropped fails with a warning. Waits at most
/// one second.
async fn close_pool(db: &Db) {
    for _ in 0..100 {
        let pool = db.pool();
        if pool.num_idle() >= pool.size() as usize {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    db.pool().close().await;
}

async fn measure(
    db: &Db,
    store: Store,
    scenario: Scenario,
    args: &ClaimsArgs,
) -> Result<Measurement> {
    db.migrate().await?;
    let service = build_service(&Config::default(), db.clone(), Arc::new(SystemClock));
    let ctx = Ctx::new("bench", None);
    let n = args.claims;

    if args.warmup > 0 {
        let warm = create_template(&service, &ctx, "warm-up", args.warmup).await?;
        let outcome = run_claims(&service, &[warm], args.warmup, args.concurrency, "warm").await;
        outcome.ok_or_fail("warm-up")?;
    }

    let targets = match scenario {
        Scenario::HotSharded => vec![create_template(&service, &ctx, "hot", n).await?],
        Scenario::HotSingleRow => {
            let id = create_template(&service, &ctx, "hot single row", n).await?;
            collapse_to_one_shard(db, &id, n).await?;
            vec![id]
        }
        Scenario::Spread => {
            let k = SPREAD_TEMPLATES.min(n);
            let mut ids = Vec::with_capacity(k);
            for j in 0..k {
                ids.push(create_template(&service, &ctx, &format!("spread {j}"), n).await?);
            }
            ids
        }
    };

    let started = Instant::now();
    let outcome = run_claims(&service, &targets, n, args.concurrency, "user").await;
    let seconds = started.elapsed().as_secs_f64();
    let mut latencies = outcome.ok_or_fail("timed run")?;

    verify(db, &service, &ctx, &targets, n, store, scenario).await?;

    latencies.sort_unstable();
    Ok(Measurement {
        store,
        scenario,
        claims: n,
        concurrency: args.concurrency,
        seconds,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
    })
}

/// Creates an active fixed-amount template with `stock` coupons, one per
/// user; returns its id.
async fn create_template(service: &Service, ctx: &Ctx, name: &str, stock: usize) -> Result<String> {
    let input = TemplateInput {
        name: Some(format!("bench {name}")),
        kind: Some("fixed".into()),
        value_cents: Some(500),
        min_order_cents: Some(0),
        valid_seconds: Some(7 * 24 * 3600),
        total_stock: Some(i64::try_from(stock)?),
        per_user_limit: Some(1),
        ..Default::default()
    };
    let view = service
        .create_template(ctx, None, input)
        .await?
        .fresh()
        .ok_or("create_template without an idempotency key answered a replay")?;
    Ok(view.id)
}

/// The naive design: all of the template's stock in shard 0.
async fn collapse_to_one_shard(db: &Db, template_id: &str, stock: usize) -> Result<()> {
    let mut tx = db.pool().begin().await?;
    sqlx::query("DELETE FROM template_stock_shards WHERE template_id = $1 AND shard > 0")
        .bind(template_id)
        .execute(&mut *tx)
        .await?;
    let updated = sqlx::query(
        "UPDATE template_stock_shards SET capacity = $1 WHERE template_id = $2 AND shard = 0",
    )
    .bind(i64::try_from(stock)?)
    .bind(template_id)
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(format!("template {template_id} has no shard 0").into());
    }
    tx.commit().await?;
    let shards = templates::shard_count(&mut *db.pool().acquire().await?, template_id).await?;
    if shards != 1 {
        return Err(format!("collapsing left {shards} shards, expected 1").into());
    }
    Ok(())
}

/// What a batch of claims did.
struct Outcome {
    latencies: Vec<Duration>,
    failures: usize,
    first_failure: Option<String>,
}

impl Outcome {
    fn ok_or_fail(self, what: &str) -> Result<Vec<Duration>> {
        match self.first_failure {
            None => Ok(self.latencies),
            Some(first) => {
                Err(format!("{what}: {} claim(s) failed, first: {first}", self.failures).into())
            }
        }
    }
}

/// Makes `n` claims with `concurrency` tasks: claim `i` is by user
/// `<prefix>-<i>` on `template_ids[i % len]`. Every claim is expected to
/// succeed.
async fn run_claims(
    service: &Service,
    template_ids: &[String],
    n: usize,
    concurrency: usize,
    prefix: &str,
) -> Outcome {
    let next = Arc::new(AtomicUsize::new(0));
    let template_ids: Arc<[String]> = template_ids.into();
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let next = Arc::clone(&next);
        let template_ids = Arc::clone(&template_ids);
        let service = service.clone();
        let prefix = prefix.to_string();
        tasks.push(tokio::spawn(async move {
            let ctx = Ctx::new("bench", None);
            let mut out = Outcome {
                latencies: Vec::with_capacity(n / concurrency + 1),
                failures: 0,
                first_failure: None,
            };
            // Each iteration takes a fresh index, so at most `n` in total.
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n || template_ids.is_empty() {
                    break;
                }
                let template_id = template_ids[i % template_ids.len()].clone();
                let result = match UserId::parse(&format!("{prefix}-{i}")) {
                    Ok(user) => {
                        let t0 = Instant::now();
                        let r = service.claim(&ctx, None, user, template_id).await;
                        out.latencies.push(t0.elapsed());
                        r.map(|_| ()).map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e.to_string()),
                };
                if let Err(e) = result {
                    out.failures += 1;
                    out.first_failure.get_or_insert(e);
                }
            }
            out
        }));
    }
    let mut all = Outcome {
        latencies: Vec::with_capacity(n),
        failures: 0,
        first_failure: None,
    };
    for task in tasks {
        match task.await {
            Ok(out) => {
                all.latencies.extend(out.latencies);
                all.failures += out.failures;
                if let Some(f) = out.first_failure {
                    all.first_failure.get_or_insert(f);
                }
            }
            Err(e) => {
                all.failures += 1;
                all.first_failure
                    .get_or_insert(format!("claim task died: {e}"));
            }
        }
    }
    all
}

/// Checks the scenario's templates: `n` coupons, `SUM(claimed) = n`, `n`
/// per-user counters in total; each template has exactly its round-robin
/// share (claim `i` went to template `i % len`). Hot templates must also be
/// sold out: one more claim is refused.
async fn verify(
    db: &Db,
    service: &Service,
    ctx: &Ctx,
    template_ids: &[String],
    n: usize,
    store: Store,
    scenario: Scenario,
) -> Result<()> {
    let expected = i64::try_from(n)?;
    let k = template_ids.len().max(1);
    let mut coupons = 0i64;
    let mut claimed = 0i64;
    let mut quota_rows = 0i64;
    let mut uneven = None;
    {
        let mut conn = db.pool().acquire().await?;
        for (j, id) in template_ids.iter().enumerate() {
            let share = i64::try_from(n / k + usize::from(j < n % k))?;
            let c: i64 = sqlx::query_scalar(
                "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1",
            )
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
            let t = templates::claimed(&mut conn, id).await?;
            if (c != share || t != share) && uneven.is_none() {
                uneven = Some(format!(
                    "template {id}: {c} coupons, claimed {t}, expected {share}"
                ));
            }
            coupons += c;
            claimed += t;
            let q: i64 = sqlx::query_scalar(
                "SELECT CAST(COUNT(*) AS BIGINT) FROM template_user_claims WHERE template_id = $1",
            )
            .bind(id)
            .fetch_one(&mut *conn)
            .await?;
            quota_rows += q;
        }
    }
    let mut refused = 0usize;
    let mut probe_error = uneven;
    let sold_out = scenario != Scenario::Spread;
    for (j, id) in template_ids.iter().enumerate().filter(|_| sold_out) {
        let user = UserId::parse(&format!("probe-{j}"))?;
        match service.claim(ctx, None, user, id.clone()).await {
            Err(ServiceError::Refused {
                refusal: Refusal::OutOfStock,
                ..
            }) => refused += 1,
            Ok(_) => {
                probe_error
                    .get_or_insert_with(|| format!("an extra claim on {id} succeeded: oversold"));
            }
            Err(e) => {
                probe_error.get_or_insert_with(|| {
                    format!("an extra claim on {id} failed unexpectedly: {e}")
                });
            }
        }
    }
    let ok = coupons == expected
        && claimed == expected
        && quota_rows == expected
        && probe_error.is_none();
    let extra = if sold_out {
        format!(
            "extra claim refused out_of_stock on {refused}/{} template(s)",
            template_ids.len()
        )
    } else {
        format!("each of {} templates holds its share", template_ids.len())
    };
    eprintln!(
        "  {:<8} {:<15} check: coupons={coupons} sum(claimed)={claimed} quota rows={quota_rows} \
         (expected {expected}), {extra}: {}",
        store.name(),
        scenario.name(),
        if ok { "ok" } else { "FAILED" }
    );
    if let Some(e) = probe_error {
        return Err(e.into());
    }
    if !ok {
        return Err(format!(
            "correctness check failed: coupons={coupons}, sum(claimed)={claimed}, quota rows={quota_rows}, expected {expected}"
        )
        .into());
    }
    Ok(())
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ---------------------------------------------------------------------------
// bench expiry

/// Largest accepted `--coupons` and `--background`.
const MAX_EXPIRY_COUPONS: usize = 5_000_000;
/// Coupons per `expire_due_batch` call: the service's maximum.
const EXPIRY_BATCH: i64 = 500;
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

/// The columns of `coupons`, in the order the generated inserts give them.
const COUPON_COLUMNS: &str = "id, code, user_id, template_id, source, kind, value_cents, percent_off, \
     max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no, \
     locked_at, used_at, created_at, updated_at";

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

async fn expiry(args: ExpiryArgs) -> Result<()> {
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
    if args.probe_pause_ms > MAX_PROBE_PAUSE_MS {
        return Err(format!("--probe-pause-ms must be at most {MAX_PROBE_PAUSE_MS}").into());
    }
    sqlx::any::install_default_drivers();
    let designs: Vec<&str> = args.designs.iter().map(|d| d.name()).collect();
    eprintln!(
        "bench expiry: {} coupons due in the same second + {background} background, designs {}, \
         idle baseline {}s, request pause {}ms, per-row cap {}s, {} worker threads, load average {}",
        args.coupons,
        designs.join(","),
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
            Design::Batched => drain_batched(&service, n, drain_start).await,
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
    template_id: &str,
    prefix: &str,
    pause: Duration,
    work: impl Future<Output = Result<T>>,
) -> Result<(Requests, T)> {
    let stop = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(probe_loop(
        service.clone(),
        template_id.to_string(),
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
    template_id: String,
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
    template_id: &str,
    key: &str,
    stop: &AtomicBool,
    latencies: &mut Vec<Duration>,
) -> Result<(), String> {
    let user = UserId::parse(key).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let claimed = service
        .claim(ctx, None, user, template_id.to_string())
        .await;
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
        coupon_id: Some(coupon.id.clone()),
        ..Default::default()
    };
    let t = Instant::now();
    let created = service.create_order(ctx, None, input).await;
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
    if view.status != "used" {
        return Err(format!(
            "get_coupon: {} is {} after payment, expected used",
            coupon.id, view.status
        ));
    }
    Ok(())
}

/// Our design: `expire_due_batch` until it finds nothing. Every row of a
/// batch counts as committed when the call returns.
async fn drain_batched(service: &Service, n: usize, start: Instant) -> Result<Drain> {
    let max_batches = n / EXPIRY_BATCH as usize + 10;
    let mut commits: Vec<(Duration, u64)> = Vec::with_capacity(max_batches);
    let mut emptied = false;
    for _ in 0..=max_batches {
        let batch = service.expire_due_batch("job:bench", EXPIRY_BATCH).await?;
        let at = start.elapsed();
        if batch.count == 0 {
            emptied = true;
            break;
        }
        commits.push((at, u64::try_from(batch.count)?));
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
            "{} tx of <= {EXPIRY_BATCH} with events + outbox; first/last 10%: {first:.0}/{final_tenth:.0} rows/s",
            commits.len()
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

/// `INSERT INTO coupons ... SELECT` of one generated row per `i` from `$1`
/// to `$2`, with `$3` the template id: `inner` is a SELECT list over `i`
/// giving `user_id, status, starts_at, ends_at, order_no, locked_at, used_at,
/// created_at, updated_at`. Rows come from `generate_series` on PostgreSQL and from a
/// recursive CTE on SQLite. Ids carry the creation time like the service's
/// (so they are roughly insertion-ordered); codes are unique and scattered
/// (`i * 2654435761 mod 4294967311` is one-to-one below that prime; see
/// [`generated_code`]).
fn generated_insert(store: Store, inner: &str) -> String {
    let (id, code, rows) = match store {
        Store::Postgres => (
            "'cpn_' || lpad(to_hex(created_at), 12, '0') || lpad(to_hex(i), 16, '0')",
            "'B' || lpad(CAST(i * 2654435761 % 4294967311 AS TEXT), 10, '0')",
            "generate_series(CAST($1 AS BIGINT), CAST($2 AS BIGINT)) AS s(i)",
        ),
        Store::Sqlite => (
            "printf('cpn_%012x%016x', created_at, i)",
            "printf('B%010d', i * 2654435761 % 4294967311)",
            "s",
        ),
    };
    let insert = format!(
        "INSERT INTO coupons ({COUPON_COLUMNS})
         SELECT {id}, {code}, user_id, $3, 'claim', 'fixed',
                500, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), 0, '[]', status, starts_at,
                ends_at, order_no, locked_at, used_at, created_at, updated_at
         FROM (SELECT i, {inner} FROM {rows}) AS g"
    );
    match store {
        Store::Postgres => insert,
        Store::Sqlite => format!(
            "WITH RECURSIVE s(i) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT i + 1 FROM s WHERE i < $2)
             {insert}"
        ),
    }
}

/// The code [`generated_insert`] gives coupon number `i`.
fn generated_code(i: u64) -> String {
    format!("B{:010}", i.wrapping_mul(2_654_435_761) % 4_294_967_311)
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

/// Inserts `count` generated coupons numbered from `first`, with one
/// statement.
async fn insert_generated(
    db: &Db,
    store: Store,
    sql: &str,
    first: usize,
    count: usize,
    template_id: &str,
    time_ms: i64,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let from = i64::try_from(first)?;
    let to = from + i64::try_from(count)? - 1;
    let done = sqlx::query(sql)
        .bind(from)
        .bind(to)
        .bind(template_id)
        .bind(time_ms)
        .execute(db.pool())
        .await
        .map_err(|e| format!("inserting coupons on {}: {e}", store.name()))?;
    if done.rows_affected() != u64::try_from(count)? {
        return Err(format!(
            "inserted {} coupons, expected {count}",
            done.rows_affected()
        )
        .into());
    }
    Ok(())
}

/// Leaves the freshly written table as one written long ago would be:
/// PostgreSQL vacuumed, analysed and checkpointed, SQLite's WAL folded
/// into the database file.
async fn settle(db: &Db, store: Store) -> Result<()> {
    let mut conn = db.pool().acquire().await?;
    match store {
        Store::Postgres => {
            conn.execute("VACUUM (ANALYZE) coupons").await?;
            conn.execute("CHECKPOINT").await?;
        }
        Store::Sqlite => {
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").await?;
        }
    }
    Ok(())
}

/// `(status, count)` of a template's coupons, by status.
async fn status_counts(db: &Db, template_id: &str) -> Result<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT status, CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1
         GROUP BY status ORDER BY status",
    )
    .bind(template_id)
    .fetch_all(db.pool())
    .await?)
}

async fn count_status(db: &Db, template_id: &str, status: &str) -> Result<i64> {
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
    hot: &str,
    n: usize,
    other: &str,
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

// ---------------------------------------------------------------------------
// bench console

/// Largest accepted `console --coupons`.
const MAX_CONSOLE_COUPONS: usize = 10_000_000;
/// Largest accepted `console --runs`.
const MAX_CONSOLE_RUNS: usize = 10_000;
/// Largest accepted `console --batch`.
const MAX_CONSOLE_BATCH: usize = 200_000;
/// Templates of the console data; the first is the hot one.
const CONSOLE_TEMPLATES: usize = 50;
/// Share of all coupons the hot template holds, in percent.
const HOT_PERCENT: usize = 20;
/// Heavy users: every 100th coupon belongs to one of them, round-robin.
const HEAVY_USERS: u64 = 10;
/// Page size of the console's coupon list.
const CONSOLE_PAGE: i64 = 50;
/// The deep-page figure is the latency of this page (following `next`).
const DEEP_PAGE: usize = 20;
/// Rows of the CSV export.
const CONSOLE_EXPORT_ROWS: usize = 10_000;
/// Untimed runs of each operation before its timed runs.
const CONSOLE_WARMUP: usize = 5;
/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;
/// Seconds in the 60 days that `ends_at` spreads over on either side of now.
const SPREAD_SECONDS: i64 = 60 * 86_400;

#[derive(clap::Args, Clone)]
struct ConsoleArgs {
    /// Which store(s) to measure.
    #[arg(long, value_enum, default_value_t = StoreArg::Both)]
    store: StoreArg,
    /// Coupons in the database (about a fifth as many users, 50 templates).
    #[arg(long, default_value_t = 1_000_000)]
    coupons: usize,
    /// Timed runs of every operation, each with fresh random keys.
    #[arg(long, default_value_t = 200)]
    runs: usize,
    /// An operation stops after this many seconds of timed runs (its run
    /// count is then smaller and shown), so an operation that does not
    /// scale cannot stall the benchmark.
    #[arg(long, default_value_t = 60)]
    max_op_seconds: u64,
    /// Coupons per INSERT statement (one transaction each) of the fill.
    #[arg(long, default_value_t = 50_000)]
    batch: usize,
    /// Seed of the random keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// One row of the console table.
#[derive(Clone, Debug)]
struct OpRow {
    name: String,
    runs: usize,
    p50: Duration,
    p99: Duration,
    note: String,
}

/// What the fill made, for picking keys.
struct ConsoleData {
    /// Template ids; the first is the hot one.
    templates: Vec<String>,
    /// Coupon numbers `1..=hot` belong to the hot template.
    hot: u64,
    coupons: u64,
    users: u64,
    orders: i64,
    fill: Duration,
    settle: Duration,
}

/// The coupon a code lookup found: the keys of the searches.
struct Sampled {
    id: String,
    code: String,
    user_id: String,
    order_no: Option<String>,
}

async fn console(args: ConsoleArgs) -> Result<()> {
    if args.coupons < 1000 || args.coupons > MAX_CONSOLE_COUPONS {
        return Err(format!("--coupons must be between 1000 and {MAX_CONSOLE_COUPONS}").into());
    }
    if args.runs == 0 || args.runs > MAX_CONSOLE_RUNS {
        return Err(format!("--runs must be between 1 and {MAX_CONSOLE_RUNS}").into());
    }
    if args.batch == 0 || args.batch > MAX_CONSOLE_BATCH {
        return Err(format!("--batch must be between 1 and {MAX_CONSOLE_BATCH}").into());
    }
    if args.max_op_seconds == 0 {
        return Err("--max-op-seconds must be at least 1".into());
    }
    sqlx::any::install_default_drivers();
    eprintln!(
        "bench console: {} coupons, {} timed runs per operation (cap {}s), insert batches of {}, {} worker threads, load average {}",
        args.coupons,
        args.runs,
        args.max_op_seconds,
        args.batch,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        load_average(),
    );
    for &store in stores_of(args.store) {
        let (target, url) = Target::create(store).await?;
        let config = Config::default();
        let result = match Db::connect(&url, config.db_max_connections, config.tx_retries).await {
            Ok(db) => {
                let r = measure_console(&db, store, &args).await;
                close_pool(&db).await;
                r
            }
            Err(e) => Err(format!("cannot connect to {url}: {e}").into()),
        };
        let removed = target.remove().await;
        let (data, rows) = result.map_err(|e| format!("{}: {e}", store.name()))?;
        removed?;
        print_console_table(store, &data, &rows);
    }
    eprintln!("bench console: done, load average {}", load_average());
    Ok(())
}

fn print_console_table(store: Store, data: &ConsoleData, rows: &[OpRow]) {
    println!();
    println!(
        "{}: {} coupons ({} on the hot template), {} users, {} templates, {} orders; fill {:.1}s, settle {:.1}s",
        store.name(),
        data.coupons,
        data.hot,
        data.users,
        data.templates.len(),
        data.orders,
        data.fill.as_secs_f64(),
        data.settle.as_secs_f64(),
    );
    println!(
        "| {:<42} | {:>5} | {:>9} | {:>9} | {:>17} | notes",
        "operation", "runs", "p50 ms", "p99 ms", "p99 / baseline p99"
    );
    println!(
        "|{:-<44}|{:-<7}|{:-<11}|{:-<11}|{:-<19}|------",
        "", "", "", "", ""
    );
    let baseline = rows.first().map(|r| ms(r.p99)).unwrap_or(0.0);
    for r in rows {
        let ratio = if baseline > 0.0 {
            format!("{:.1}x", ms(r.p99) / baseline)
        } else {
            "-".to_string()
        };
        println!(
            "| {:<42} | {:>5} | {:>9.2} | {:>9.2} | {:>17} | {}",
            r.name,
            r.runs,
            ms(r.p50),
            ms(r.p99),
            ratio,
            r.note
        );
    }
}

/// The coupons' SQL list over `i` for [`generated_insert`] (`$4` now, in
/// ms). Coupon `i` gets:
/// - user: every 100th coupon one of [`HEAVY_USERS`] heavy users, the
///   others one of `users` users, scattered;
/// - status by a scattered bucket of 100: 50 available, 25 used,
///   19 expired, 4 locked, 2 invalidated;
/// - `ends_at`: available ones within the next 60 days, expired ones within
///   the last 60 days, the others either side; valid for 70 days and a bit;
/// - used and locked ones an order number `ord-<i, 10 digits>`, locked ones
///   locked within the last 11 minutes, used ones used an hour after the
///   claim.
fn console_coupons_sql(store: Store, users: u64) -> String {
    let user = format!(
        "CASE WHEN i % 100 = 0 THEN 'heavy-' || CAST((i / 100) % {HEAVY_USERS} AS TEXT)
              ELSE 'user-' || CAST(i * 7919 % {users} AS TEXT) END"
    );
    // Scattered by the same multiplicative hash as the codes: a user's
    // coupons (numbers `users` apart) get independent statuses.
    let bucket = "((i * 2654435761 % 4294967311) % 100)";
    let status = format!(
        "CASE WHEN {bucket} < 50 THEN 'available' WHEN {bucket} < 75 THEN 'used'
              WHEN {bucket} < 94 THEN 'expired' WHEN {bucket} < 98 THEN 'locked'
              ELSE 'invalidated' END"
    );
    // Products of constants are computed here: PostgreSQL would multiply
    // two INTEGER literals in 32 bits and overflow.
    let spread_ms = SPREAD_SECONDS * 1000;
    let valid_ms = 70 * DAY_MS;
    let off = format!("(i * 7919 % {SPREAD_SECONDS}) * 1000");
    let ends = format!(
        "CASE WHEN {bucket} < 50 THEN $4 + 1000 + {off}
              WHEN {bucket} < 75 THEN $4 - {spread_ms} + 2 * {off}
              WHEN {bucket} < 94 THEN $4 - 1000 - {off}
              ELSE $4 - {spread_ms} + 2 * {off} END"
    );
    let created = format!("({ends}) - {valid_ms} - (i % 86400) * 1000");
    let order_no = match store {
        Store::Postgres => "'ord-' || lpad(CAST(i AS TEXT), 10, '0')",
        Store::Sqlite => "printf('ord-%010d', i)",
    };
    let locked_at = "$4 - 60000 - (i % 600) * 1000";
    let used_at = format!("{created} + 3600000");
    format!(
        "{user} AS user_id,
         {status} AS status,
         {created} AS starts_at,
         {ends} AS ends_at,
         CASE WHEN {bucket} >= 50 AND {bucket} < 75 OR {bucket} >= 94 AND {bucket} < 98
              THEN {order_no} ELSE CAST(NULL AS TEXT) END AS order_no,
         CASE WHEN {bucket} >= 94 AND {bucket} < 98 THEN {locked_at}
              ELSE CAST(NULL AS BIGINT) END AS locked_at,
         CASE WHEN {bucket} >= 50 AND {bucket} < 75 THEN {used_at}
              ELSE CAST(NULL AS BIGINT) END AS used_at,
         {created} AS created_at,
         CASE WHEN {bucket} < 50 THEN {created}
              WHEN {bucket} < 75 THEN {used_at}
              WHEN {bucket} < 94 THEN {ends}
              WHEN {bucket} < 98 THEN {locked_at}
              ELSE {created} + 7200000 END AS updated_at"
    )
}

/// The orders of the coupons whose order numbers lie in `[$1, $2]`, read
/// back from the coupons just inserted: a locked coupon's order is a normal
/// order `pending_payment` whose checkout lock lasts 30 minutes from the
/// lock, a used coupon's order is `paid`.
const CONSOLE_ORDERS_SQL: &str = "INSERT INTO orders (order_no, user_id, kind, category, status,
     total_cents, deposit_cents, coupon_id, coupon_discount_cents, discount_snapshot_cents,
     coupon_lock_status, checkout_lock_expires_at, created_at, paid_at, updated_at)
     SELECT order_no, user_id, 'normal', 'bench',
            CASE WHEN status = 'locked' THEN 'pending_payment' ELSE 'paid' END,
            10000, 0, id, 500, 500, status,
            CASE WHEN status = 'locked' THEN locked_at + 1800000 ELSE CAST(NULL AS BIGINT) END,
            COALESCE(locked_at, used_at - 60000), used_at, COALESCE(used_at, locked_at)
     FROM coupons WHERE order_no >= $1 AND order_no <= $2";

fn console_order_no(i: u64) -> String {
    format!("ord-{i:010}")
}

/// Fills the empty database: [`CONSOLE_TEMPLATES`] templates created
/// through the service, each sold out with its coupons (the hot one
/// [`HOT_PERCENT`] % of them), coupon numbers given to the templates in
/// consecutive ranges and inserted `batch` at a time, each batch's orders
/// right after it; then the stock counters set to the coupons issued.
async fn fill_console(
    db: &Db,
    store: Store,
    service: &Service,
    n: u64,
    batch: u64,
    now_ms: i64,
) -> Result<ConsoleData> {
    let ctx = Ctx::new("bench", None);
    let users = (n / 5).max(1);
    let hot = n * HOT_PERCENT as u64 / 100;
    let rest = n - hot;
    let others = CONSOLE_TEMPLATES as u64 - 1;
    let mut sizes = vec![hot];
    sizes.extend((0..others).map(|j| rest / others + u64::from(j < rest % others)));
    let coupons_sql = generated_insert(store, &console_coupons_sql(store, users));
    let started = Instant::now();
    let mut templates = Vec::with_capacity(sizes.len());
    let mut first = 1u64;
    for (j, &size) in sizes.iter().enumerate() {
        let name = if j == 0 {
            "console hot".to_string()
        } else {
            format!("console {j}")
        };
        let id = create_template(service, &ctx, &name, usize::try_from(size)?).await?;
        let mut from = first;
        while from < first + size {
            let count = batch.min(first + size - from);
            insert_generated(
                db,
                store,
                &coupons_sql,
                usize::try_from(from)?,
                usize::try_from(count)?,
                &id,
                now_ms,
            )
            .await?;
            sqlx::query(CONSOLE_ORDERS_SQL)
                .bind(console_order_no(from))
                .bind(console_order_no(from + count - 1))
                .execute(db.pool())
                .await
                .map_err(|e| format!("inserting orders on {}: {e}", store.name()))?;
            from += count;
        }
        templates.push(id);
        first += size;
        if j % 10 != 0 {
            continue;
        }
        eprintln!(
            "  {:<8} fill: template {}/{} done, {} coupons in {:.0}s",
            store.name(),
            j + 1,
            sizes.len(),
            first - 1,
            started.elapsed().as_secs_f64()
        );
    }
    // Every template sold out: each shard claimed up to its capacity, so
    // SUM(claimed) is the template's coupons, as the stock check expects.
    sqlx::query("UPDATE template_stock_shards SET claimed = capacity")
        .execute(db.pool())
        .await?;
    let fill = started.elapsed();
    let t = Instant::now();
    settle(db, store).await?;
    if store == Store::Postgres {
        let mut conn = db.pool().acquire().await?;
        conn.execute("VACUUM (ANALYZE) orders").await?;
        conn.execute("VACUUM (ANALYZE) template_stock_shards")
            .await?;
    }
    let settle = t.elapsed();
    let (coupons, with_order): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT), CAST(COUNT(order_no) AS BIGINT) FROM coupons",
    )
    .fetch_one(db.pool())
    .await?;
    let orders: i64 = sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM orders")
        .fetch_one(db.pool())
        .await?;
    if u64::try_from(coupons)? != n || orders != with_order {
        return Err(format!(
            "the fill made {coupons} coupons ({with_order} with an order) and {orders} orders, expected {n} coupons and one order each"
        )
        .into());
    }
    Ok(ConsoleData {
        templates,
        hot,
        coupons: n,
        users,
        orders,
        fill,
        settle,
    })
}

/// The coupon numbered `i`, found by its code (untimed).
async fn sample_coupon(db: &Db, i: u64) -> Result<Sampled> {
    let code = generated_code(i);
    let row: Option<(String, String, Option<String>)> =
        sqlx::query_as("SELECT id, user_id, order_no FROM coupons WHERE code = $1")
            .bind(&code)
            .fetch_optional(db.pool())
            .await?;
    let (id, user_id, order_no) = row.ok_or_else(|| format!("no coupon has code {code}"))?;
    Ok(Sampled {
        id,
        code,
        user_id,
        order_no,
    })
}

/// Order numbers of random coupons numbered in `range` that have an order.
async fn sample_orders(
    db: &Db,
    rng: &mut StdRng,
    range: std::ops::RangeInclusive<u64>,
    want: usize,
) -> Result<Vec<String>> {
    let mut out = Vec::with_capacity(want);
    for _ in 0..want * 50 {
        if out.len() == want {
            break;
        }
        if let Some(o) = sample_coupon(db, rng.random_range(range.clone()))
            .await?
            .order_no
        {
            out.push(o);
        }
    }
    if out.len() < want {
        return Err(format!("found only {} orders to sample", out.len()).into());
    }
    Ok(out)
}

/// Times `op` on each key after [`CONSOLE_WARMUP`] untimed runs, until the
/// keys run out or `cap` has passed. `op` returns the latency to count
/// (`None`: the whole call) and a note.
async fn time_op<K, F, Fut>(name: &str, keys: Vec<K>, cap: Duration, mut op: F) -> Result<OpRow>
where
    F: FnMut(K) -> Fut,
    Fut: Future<Output = Result<Option<Duration>>>,
{
    let mut latencies = Vec::with_capacity(keys.len());
    // The cap counts the timed runs only.
    let mut timed_since = Instant::now();
    for (k, key) in keys.into_iter().enumerate() {
        if k == CONSOLE_WARMUP {
            timed_since = Instant::now();
        }
        if k > CONSOLE_WARMUP && timed_since.elapsed() >= cap {
            break;
        }
        let t = Instant::now();
        let counted = op(key).await.map_err(|e| format!("{name}: {e}"))?;
        if k >= CONSOLE_WARMUP {
            latencies.push(counted.unwrap_or_else(|| t.elapsed()));
        }
    }
    latencies.sort_unstable();
    let row = OpRow {
        name: name.to_string(),
        runs: latencies.len(),
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        note: String::new(),
    };
    eprintln!(
        "    {name}: {} runs, p50 {:.2}ms p99 {:.2}ms",
        row.runs,
        ms(row.p50),
        ms(row.p99)
    );
    Ok(row)
}

/// A random stored status a console filter asks for.
fn random_status(rng: &mut StdRng) -> CouponStatus {
    const PICK: [CouponStatus; 4] = [
        CouponStatus::Available,
        CouponStatus::Used,
        CouponStatus::Expired,
        CouponStatus::Locked,
    ];
    PICK[rng.random_range(0..PICK.len())]
}

async fn measure_console(
    db: &Db,
    store: Store,
    args: &ConsoleArgs,
) -> Result<(ConsoleData, Vec<OpRow>)> {
    db.migrate().await?;
    // The clock stands still for the whole run: every read sees the same
    // "now" the data was generated around.
    let now_ms = (Utc::now().timestamp_millis() / 1000) * 1000;
    let now = couponkeeper::domain::time::from_ms(now_ms);
    let clock = Arc::new(ManualClock::new(now));
    let service = build_service(&Config::default(), db.clone(), clock);
    let n = u64::try_from(args.coupons)?;
    let data = fill_console(db, store, &service, n, u64::try_from(args.batch)?, now_ms).await?;
    eprintln!(
        "  {:<8} fill: {n} coupons, {} orders in {:.1}s ({:.0} coupons/s), settled in {:.1}s",
        store.name(),
        data.orders,
        data.fill.as_secs_f64(),
        n as f64 / data.fill.as_secs_f64().max(f64::MIN_POSITIVE),
        data.settle.as_secs_f64()
    );

    let mut rng = StdRng::seed_from_u64(args.seed);
    let runs = args.runs + CONSOLE_WARMUP;
    let cap = Duration::from_secs(args.max_op_seconds);
    let hot = data.templates[0].clone();
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        samples.push(sample_coupon(db, rng.random_range(1..=n)).await?);
    }
    let cold_orders = sample_orders(db, &mut rng, data.hot + 1..=n, runs).await?;
    let hot_orders = sample_orders(db, &mut rng, 1..=data.hot, runs).await?;
    let users: Vec<String> = (0..runs)
        .map(|_| format!("user-{}", rng.random_range(0..data.users)))
        .collect();
    let heavy: Vec<String> = (0..runs)
        .map(|_| format!("heavy-{}", rng.random_range(0..HEAVY_USERS)))
        .collect();
    let statuses: Vec<CouponStatus> = (0..runs).map(|_| random_status(&mut rng)).collect();
    let templates: Vec<String> = (0..runs)
        .map(|_| data.templates[rng.random_range(0..data.templates.len())].clone())
        .collect();
    let window = SPREAD_SECONDS * 1000;
    let befores: Vec<i64> = (0..runs)
        .map(|_| now_ms + rng.random_range(-window..=window))
        .collect();
    let misses: Vec<String> = (0..runs)
        .map(|_| format!("nobody-{}", rng.random::<u32>()))
        .collect();
    eprintln!("  {:<8} keys sampled; timing", store.name());

    let s = &service;
    let mut rows = Vec::new();
    rows.push(
        time_op(
            "baseline: get_coupon(id)",
            samples.iter().map(|x| x.id.clone()).collect(),
            cap,
            |id: String| async move {
                let v = s.get_coupon(&id).await?;
                if v.id != id {
                    return Err(format!("get_coupon({id}) answered {}", v.id).into());
                }
                Ok(None)
            },
        )
        .await?,
    );
    rows.push(
        time_op(
            "search: coupon code",
            samples
                .iter()
                .map(|x| (x.code.clone(), x.id.clone()))
                .collect(),
            cap,
            |(code, id): (String, String)| async move {
                match s.search(&code).await? {
                    SearchOutcome::Coupon(found) if found == id => Ok(None),
                    other => Err(format!("search({code}) answered {other:?}").into()),
                }
            },
        )
        .await?,
    );
    rows.push(
        time_op(
            "search: order_no",
            cold_orders.clone(),
            cap,
            |order_no: String| async move {
                match s.search(&order_no).await? {
                    SearchOutcome::Order(found) if found == order_no => Ok(None),
                    other => Err(format!("search({order_no}) answered {other:?}").into()),
                }
            },
        )
        .await?,
    );
    rows.push(
        time_op(
            "search: user_id",
            samples.iter().map(|x| x.user_id.clone()).collect(),
            cap,
            |user: String| async move {
                match s.search(&user).await? {
                    SearchOutcome::User(found) if found == user => Ok(None),
                    other => Err(format!("search({user}) answered {other:?}").into()),
                }
            },
        )
        .await?,
    );
    rows.push(
        time_op("search: miss", misses, cap, |q: String| async move {
            match s.search(&q).await? {
                SearchOutcome::Nothing => Ok(None),
                other => Err(format!("search({q}) answered {other:?}").into()),
            }
        })
        .await?,
    );

    let page = |filter: CouponFilter, full: bool| async move {
        let p = s.list_coupons(filter.clone(), None, CONSOLE_PAGE).await?;
        if full && p.coupons.len() != CONSOLE_PAGE as usize {
            return Err(format!(
                "list_coupons({filter:?}) gave {} coupons, expected a full page",
                p.coupons.len()
            )
            .into());
        }
        Ok(None)
    };
    rows.push(
        time_op(
            "list_coupons: status (random)",
            statuses.clone(),
            cap,
            |status| {
                page(
                    CouponFilter {
                        status: Some(status),
                        ..Default::default()
                    },
                    true,
                )
            },
        )
        .await?,
    );
    rows.push(
        time_op("list_coupons: template (hot)", vec![(); runs], cap, |()| {
            page(
                CouponFilter {
                    template_id: Some(hot.clone()),
                    ..Default::default()
                },
                true,
            )
        })
        .await?,
    );
    rows.push(
        time_op(
            "list_coupons: template + status (random)",
            templates.iter().cloned().zip(statuses.clone()).collect(),
            cap,
            |(template, status)| {
                page(
                    CouponFilter {
                        status: Some(status),
                        template_id: Some(template),
                        ..Default::default()
                    },
                    false,
                )
            },
        )
        .await?,
    );
    rows.push(
        time_op("list_coupons: user", users.clone(), cap, |user| {
            page(
                CouponFilter {
                    user_id: Some(user),
                    ..Default::default()
                },
                false,
            )
        })
        .await?,
    );
    rows.push(
        time_op(
            "list_coupons: user + status (random)",
            users.iter().cloned().zip(statuses.clone()).collect(),
            cap,
            |(user, status)| {
                page(
                    CouponFilter {
                        status: Some(status),
                        user_id: Some(user),
                        ..Default::default()
                    },
                    false,
                )
            },
        )
        .await?,
    );
    rows.push(
        time_op(
            "list_coupons: expiring_before (random)",
            befores,
            cap,
            |before| {
                page(
                    CouponFilter {
                        expiring_before: Some(couponkeeper::domain::time::from_ms(before)),
                        ..Default::default()
                    },
                    true,
                )
            },
        )
        .await?,
    );
    rows.push(
        time_op(
            &format!("list_coupons: template (hot), page {DEEP_PAGE}"),
            vec![(); runs],
            cap,
            |()| {
                let hot = hot.clone();
                async move {
                    let filter = CouponFilter {
                        template_id: Some(hot),
                        ..Default::default()
                    };
                    let mut after = None;
                    let mut last = Duration::ZERO;
                    for k in 1..=DEEP_PAGE {
                        let t = Instant::now();
                        let p = s.list_coupons(filter.clone(), after, CONSOLE_PAGE).await?;
                        last = t.elapsed();
                        if p.coupons.len() != CONSOLE_PAGE as usize {
                            return Err(format!("page {k} has {} coupons", p.coupons.len()).into());
                        }
                        after = p.next;
                    }
                    Ok(Some(last))
                }
            },
        )
        .await?,
    );
    let heavy_coupons = n / 100 / HEAVY_USERS;
    rows.push(
        time_op(
            "user_overview (heavy user)",
            heavy.clone(),
            cap,
            |user| async move {
                let v = s.user_overview(&user).await?;
                if v.coupons.is_empty() || v.coupons.len() > OVERVIEW_COUPONS as usize {
                    return Err(format!("{user}'s page shows {} coupons", v.coupons.len()).into());
                }
                Ok(None)
            },
        )
        .await
        .map(|mut row| {
            row.note = format!(
                "~{heavy_coupons} coupons, ~{} orders",
                heavy_coupons * 29 / 100
            );
            row
        })?,
    );
    let health = |order_no: String| async move {
        let r = s.order_health_check(&order_no).await?;
        let stock = r.checks.iter().find(|c| c.name == "template_stock");
        if stock.map(|c| c.result.as_str()) != Some("ok") {
            return Err(format!("{order_no}: template_stock check {stock:?}").into());
        }
        Ok(None)
    };
    let mut row = time_op(
        "order_health_check (other templates)",
        cold_orders,
        cap,
        health,
    )
    .await?;
    row.note = format!(
        "template of ~{} coupons; stock from the last reconciliation",
        (n - data.hot) / (CONSOLE_TEMPLATES as u64 - 1)
    );
    rows.push(row);
    let mut row = time_op("order_health_check (hot template)", hot_orders, cap, health).await?;
    row.note = format!(
        "template of {} coupons; stock from the last reconciliation",
        data.hot
    );
    rows.push(row);
    let mut row = time_op(
        "user_health_check (normal user)",
        users.clone(),
        cap,
        |user: String| async move {
            s.user_health_check(&user).await?;
            Ok(None)
        },
    )
    .await?;
    row.note = "its orders' checks, and its locked coupons".into();
    rows.push(row);
    let mut row = time_op(
        "user_health_check (heavy user)",
        heavy,
        cap,
        |user: String| async move {
            let r = s.user_health_check(&user).await?;
            if r.orders.len() > USER_HEALTH_ORDERS as usize {
                return Err(format!("{user}'s health check has {} orders", r.orders.len()).into());
            }
            Ok(None)
        },
    )
    .await?;
    row.note = format!("{USER_HEALTH_ORDERS} orders over up to {CONSOLE_TEMPLATES} templates");
    rows.push(row);

    // The export: one run, a template's first 10,000 coupons.
    let filter = CouponFilter {
        template_id: Some(hot.clone()),
        ..Default::default()
    };
    let t = Instant::now();
    let csv = service
        .export_coupons_csv(filter, CONSOLE_EXPORT_ROWS)
        .await?;
    let took = t.elapsed();
    let lines = csv.matches("\r\n").count();
    let expected = CONSOLE_EXPORT_ROWS.min(usize::try_from(data.hot)?) + 1;
    if lines != expected {
        return Err(format!("the export has {lines} lines, expected {expected}").into());
    }
    eprintln!("    export: {:.0}ms, {} bytes", ms(took), csv.len());
    rows.push(OpRow {
        name: format!("export_coupons_csv ({CONSOLE_EXPORT_ROWS} rows, hot)"),
        runs: 1,
        p50: took,
        p99: took,
        note: format!("one run, {} KiB", csv.len() / 1024),
    });
    Ok((data, rows))
}

// ---------------------------------------------------------------------------
// Reminders: N coupons of M users reach the 1d offset over a few hours (a
// user's coupons about 20 minutes apart plus up to 30 minutes of jitter,
// wrapping round the spread, so users get one to three slots); the planner
// runs on a manual clock stepping a minute at a time, each step drained to
// completion. Every message must be one user-slot pair: the expected pairs
// are computed independently from the stored coupons with the pure
// aggregation rule.

/// The offset the benchmark's coupons cross.
const REMINDER_OFFSET: i64 = 86_400;

async fn reminders(args: RemindersArgs) -> Result<()> {
    if args.coupons == 0 || args.coupons > 2_000_000 {
        return Err("--coupons must be between 1 and 2000000".into());
    }
    if args.users == 0 || args.users > args.coupons {
        return Err("--users must be between 1 and --coupons".into());
    }
    if !(1..=24 * 60).contains(&args.spread_minutes) {
        return Err("--spread-minutes must be between 1 and 1440".into());
    }
    if args.receiver_delay_ms > 10_000 {
        return Err("--receiver-delay-ms must be at most 10000".into());
    }
    if !(1..=256).contains(&args.concurrency) {
        return Err("--concurrency must be between 1 and 256".into());
    }
    sqlx::any::install_default_drivers();
    eprintln!(
        "bench reminders: {} coupons of {} users reach the 1d offset over {} minutes, window 1h, \
         no quiet hours, {} worker threads, load average {}",
        args.coupons,
        args.users,
        args.spread_minutes,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        load_average(),
    );
    println!(
        "| store | coupons | users | user-slot pairs | messages | equal | drain total (s) | slowest step (s) | coupons/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut delivered = Vec::new();
    for &store in stores_of(args.store) {
        let (target, url) = Target::create(store).await?;
        let config = Config::default();
        let result = match Db::connect(&url, config.db_max_connections, config.tx_retries).await {
            Ok(db) => {
                let r = measure_reminders(&db, store, &args).await;
                close_pool(&db).await;
                r
            }
            Err(e) => Err(format!("cannot connect to {url}: {e}").into()),
        };
        let removed = target.remove().await;
        delivered.extend(result?);
        removed?;
    }
    if !delivered.is_empty() {
        print_delivery_table(&delivered, &args);
    }
    Ok(())
}

async fn measure_reminders(
    db: &Db,
    store: Store,
    args: &RemindersArgs,
) -> Result<Vec<DeliveryMeasurement>> {
    use couponkeeper::domain::reminder::{self, DueCoupon};
    use couponkeeper::domain::time::from_ms;

    db.migrate().await?;
    let mut config = Config::default();
    config.reminders.offsets = vec![REMINDER_OFFSET];
    config.reminders.quiet_hours = None;
    config.reminders.window_seconds = 3600;
    config.webhooks.concurrency = args.concurrency;
    // The benchmark's receivers listen on this host.
    config.webhooks.allow_networks =
        couponkeeper::domain::network::parse_networks("127.0.0.0/8,::1/128")?;
    // A whole minute: the clock starts at one, so steps are round.
    let start_ms = (Utc::now().timestamp_millis() / 60_000) * 60_000;
    let clock = Arc::new(ManualClock::new(from_ms(start_ms)));
    let service = build_service(&config, db.clone(), clock.clone());
    let ctx = Ctx::new("bench", None);
    let tpl = create_template(&service, &ctx, "reminded", args.coupons).await?;

    let spread_ms = args.spread_minutes * 60_000;
    let day_ms = REMINDER_OFFSET * 1000;
    let users = args.users;
    let sql = generated_insert(
        store,
        &format!(
            "'user-' || CAST(i % {users} AS TEXT) AS user_id, CAST('available' AS TEXT) AS status,
             $4 - {day_ms} AS starts_at,
             $4 + {day_ms} + 1 + ((i / {users}) * 1234567 + i * 7919 + i * 104729 % 1800000) % {spread_ms} AS ends_at,
             CAST(NULL AS TEXT) AS order_no, CAST(NULL AS BIGINT) AS locked_at,
             CAST(NULL AS BIGINT) AS used_at, $4 - {day_ms} AS created_at,
             $4 - {day_ms} AS updated_at"
        ),
    );
    let t0 = Instant::now();
    insert_generated(db, store, &sql, 1, args.coupons, &tpl, start_ms).await?;
    settle(db, store).await?;
    eprintln!(
        "  {:<8} data: {} coupons inserted and settled in {:.1}s",
        store.name(),
        args.coupons,
        t0.elapsed().as_secs_f64()
    );

    // The expected user-slot pairs, from the stored rows and the pure rule.
    let rows: Vec<(String, String, i64)> =
        sqlx::query_as("SELECT user_id, id, ends_at FROM coupons WHERE template_id = $1")
            .bind(&tpl)
            .fetch_all(db.pool())
            .await?;
    let mut by_user: std::collections::HashMap<String, Vec<DueCoupon>> =
        std::collections::HashMap::new();
    for (user, id, ends_at) in rows {
        by_user.entry(user).or_default().push(DueCoupon {
            id,
            ends_at: from_ms(ends_at),
            value: couponkeeper::domain::money::Cents::ZERO,
        });
    }
    let s = &config.reminders;
    let expected: usize = by_user
        .values()
        .map(|c| {
            reminder::aggregate(c, REMINDER_OFFSET, s.window_seconds, s.quiet_hours, s.tz).len()
        })
        .sum();

    // The planner, one simulated minute at a time, each step drained.
    let mut messages = 0usize;
    let mut coupons = 0usize;
    let mut raced = 0usize;
    let mut total = Duration::ZERO;
    let mut slowest = Duration::ZERO;
    let mut cursor = couponkeeper::service::reminders::ReminderCursor::default();
    for minute in 0..=args.spread_minutes + 1 {
        clock.set(from_ms(start_ms + minute * 60_000));
        let step = Instant::now();
        loop {
            let r = service.plan_due_reminders_with(&mut cursor, 500).await?;
            messages += r.slots;
            coupons += r.coupons;
            raced += r.raced;
            if r.slots == 0 {
                break;
            }
        }
        let took = step.elapsed();
        total += took;
        slowest = slowest.max(took);
    }
    let outbox: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM outbox WHERE event_type = 'reminder.coupons_expiring'",
    )
    .fetch_one(db.pool())
    .await?;
    let marks: i64 = sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM reminder_marks")
        .fetch_one(db.pool())
        .await?;
    let equal = messages == expected && outbox == i64::try_from(expected)?;
    println!(
        "| {} | {} | {} | {} | {} | {} | {:.1} | {:.2} | {:.0} |",
        store.name(),
        args.coupons,
        by_user.len(),
        expected,
        outbox,
        if equal { "yes" } else { "NO" },
        total.as_secs_f64(),
        slowest.as_secs_f64(),
        coupons as f64 / total.as_secs_f64().max(f64::MIN_POSITIVE),
    );
    if !equal || marks != i64::try_from(args.coupons)? || coupons != args.coupons || raced != 0 {
        return Err(format!(
            "{}: {messages} messages ({outbox} in the outbox) for {expected} user-slot pairs, \
             {coupons} coupons reminded and {marks} marks for {} coupons, {raced} races",
            store.name(),
            args.coupons
        )
        .into());
    }
    if args.no_delivery {
        return Ok(Vec::new());
    }

    // The coupons end: every one expires (one coupon.expired message each).
    clock.set(from_ms(start_ms + day_ms + spread_ms + 60_000));
    let t = Instant::now();
    let mut expired = 0usize;
    for _ in 0..args.coupons {
        let batch = service.expire_due_batch("bench", 500).await?;
        if batch.count == 0 {
            break;
        }
        expired += batch.count;
    }
    eprintln!(
        "  {:<8} expiry: {expired} coupons expired in {:.1}s",
        store.name(),
        t.elapsed().as_secs_f64()
    );
    if expired != args.coupons {
        return Err(format!("{expired} coupons expired of {}", args.coupons).into());
    }
    measure_delivery(&service, store, args, expected).await
}

// ---------------------------------------------------------------------------
// Delivery: the reminders just planned go to two webhook subscribers that
// take `reminder.coupons_expiring` (an SMS gateway's share of the events),
// one answering at once (the baseline) and one after --receiver-delay-ms.
// Both are real HTTP servers in this process; the dispatcher is the one
// `serve` runs ([`Dispatcher`]), fanning out every message in the outbox
// (the reminders and the 100,000 coupon.expired ones, which no subscriber
// here takes). Each receiver checks every signature and counts distinct
// message ids; its drain time is when it holds every message.

/// One receiver's delivery figures.
struct DeliveryMeasurement {
    store: Store,
    receiver: &'static str,
    delay_ms: u64,
    messages: usize,
    received: usize,
    distinct: usize,
    bad_signatures: usize,
    drain: Duration,
}

/// A webhook receiver for the benchmark.
#[derive(Clone)]
struct BenchReceiver {
    secret: &'static str,
    delay: Duration,
    expected: usize,
    state: Arc<std::sync::Mutex<ReceiverState>>,
}

#[derive(Default)]
struct ReceiverState {
    received: usize,
    ids: std::collections::HashSet<String>,
    bad_signatures: usize,
    /// When the last missing message arrived.
    complete_at: Option<Instant>,
}

impl BenchReceiver {
    async fn start(
        secret: &'static str,
        delay: Duration,
        expected: usize,
    ) -> Result<(BenchReceiver, String)> {
        let r = BenchReceiver {
            secret,
            delay,
            expected,
            state: Arc::default(),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(bench_receive))
            .with_state(r.clone());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("bench receiver stopped: {e}");
            }
        });
        Ok((r, url))
    }

    fn complete(&self) -> bool {
        self.state
            .lock()
            .map(|s| s.complete_at.is_some())
            .unwrap_or(true)
    }
}

async fn bench_receive(
    axum::extract::State(r): axum::extract::State<BenchReceiver>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::http::StatusCode {
    use couponkeeper::service::webhooks::{SIGNATURE_HEADER, signature};
    tokio::time::sleep(r.delay).await;
    let body = String::from_utf8_lossy(&body);
    let sig = headers
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let t = sig
        .split(',')
        .find_map(|p| p.strip_prefix("t="))
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(0);
    let valid = signature(r.secret, t, &body) == sig;
    let id = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v["id"].as_str().map(str::to_string))
        .unwrap_or_default();
    if let Ok(mut s) = r.state.lock() {
        s.received += 1;
        if !valid {
            s.bad_signatures += 1;
        }
        s.ids.insert(id);
        if s.ids.len() >= r.expected && s.complete_at.is_none() {
            s.complete_at = Some(Instant::now());
        }
    }
    axum::http::StatusCode::OK
}

/// Most time the delivery phase may take before it is called failed.
const DELIVERY_CAP: Duration = Duration::from_secs(1800);

async fn measure_delivery(
    service: &Service,
    store: Store,
    args: &RemindersArgs,
    expected: usize,
) -> Result<Vec<DeliveryMeasurement>> {
    use couponkeeper::service::webhooks::Dispatcher;
    const FAST_SECRET: &str = "bench-fast-receiver-secret";
    const SLOW_SECRET: &str = "bench-slow-receiver-secret";
    let types = vec!["reminder.coupons_expiring".to_string()];
    let (fast, fast_url) = BenchReceiver::start(FAST_SECRET, Duration::ZERO, expected).await?;
    let (slow, slow_url) = BenchReceiver::start(
        SLOW_SECRET,
        Duration::from_millis(args.receiver_delay_ms),
        expected,
    )
    .await?;
    service
        .add_webhook_subscriber(&fast_url, FAST_SECRET, &types, &Ctx::new("bench", None))
        .await?;
    service
        .add_webhook_subscriber(&slow_url, SLOW_SECRET, &types, &Ctx::new("bench", None))
        .await?;

    let started = Instant::now();
    let mut dispatcher = Dispatcher::new(service.clone());
    let mut last_progress = Instant::now();
    let mut seen = 0usize;
    while !(fast.complete() && slow.complete()) {
        let turn = dispatcher.turn(Duration::from_millis(500)).await?;
        let done = turn.sends.sent + turn.sends.fanned_out;
        if done > 0 {
            seen += done;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > Duration::from_secs(60) || started.elapsed() > DELIVERY_CAP {
            return Err(format!(
                "{}: delivery stalled after {seen} sends and fan-outs",
                store.name()
            )
            .into());
        }
    }
    dispatcher.drain(Duration::from_secs(30)).await;
    let mut out = Vec::new();
    for (receiver, name, delay_ms) in [(&fast, "fast", 0), (&slow, "slow", args.receiver_delay_ms)]
    {
        let s = receiver
            .state
            .lock()
            .map_err(|_| "receiver state poisoned")?;
        out.push(DeliveryMeasurement {
            store,
            receiver: name,
            delay_ms,
            messages: expected,
            received: s.received,
            distinct: s.ids.len(),
            bad_signatures: s.bad_signatures,
            drain: s
                .complete_at
                .map_or_else(|| started.elapsed(), |at| at.duration_since(started)),
        });
    }
    eprintln!(
        "  {:<8} delivery: both receivers complete after {:.1}s",
        store.name(),
        started.elapsed().as_secs_f64()
    );
    if out
        .iter()
        .any(|m| m.distinct != expected || m.bad_signatures > 0)
    {
        return Err(format!(
            "{}: a receiver is missing messages or saw bad signatures",
            store.name()
        )
        .into());
    }
    Ok(out)
}

fn print_delivery_table(rows: &[DeliveryMeasurement], args: &RemindersArgs) {
    println!();
    println!(
        "delivery of the reminders to two subscribers at once, {} sends in flight per subscriber:",
        args.concurrency
    );
    println!(
        "| store | receiver | answers after (ms) | messages | received | distinct | bad signatures | drain (s) | messages/s | drain vs fast |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for m in rows {
        let fast = rows
            .iter()
            .find(|f| f.store.name() == m.store.name() && f.receiver == "fast")
            .map(|f| f.drain.as_secs_f64())
            .unwrap_or(f64::NAN);
        let secs = m.drain.as_secs_f64();
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.0} | {:.2}x |",
            m.store.name(),
            m.receiver,
            m.delay_ms,
            m.messages,
            m.received,
            m.distinct,
            m.bad_signatures,
            secs,
            m.messages as f64 / secs.max(f64::MIN_POSITIVE),
            secs / fast.max(f64::MIN_POSITIVE),
        );
    }
}
