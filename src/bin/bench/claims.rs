//! `bench claims`: claims per second of ONE hot template
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

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use couponkeeper::clock::SystemClock;
use couponkeeper::config::Config;
use couponkeeper::domain::ids::{TemplateId, UserId};
use couponkeeper::server::build_service;
use couponkeeper::service::{Ctx, Refusal, Service, ServiceError};
use couponkeeper::store::{Db, templates};

use crate::data::create_template;
use crate::scratch::{Target, close_pool};
use crate::stats::{load_average, ms, percentile};
use crate::{Result, Store, StoreArg, stores_of};

/// Templates the `spread` scenario claims from, round-robin.
const SPREAD_TEMPLATES: usize = 32;
/// Largest PostgreSQL pool, whatever the concurrency.
const MAX_PG_POOL: usize = 40;
/// Largest accepted concurrency (tasks are cheap, but connections are not).
const MAX_CONCURRENCY: usize = 1024;
/// Largest accepted number of rounds.
const MAX_ROUNDS: usize = 20;

#[derive(clap::Args, Clone)]
pub(crate) struct ClaimsArgs {
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

pub(crate) async fn claims(args: ClaimsArgs) -> Result<()> {
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

/// The naive design: all of the template's stock in shard 0.
pub(crate) async fn collapse_to_one_shard(
    db: &Db,
    template_id: &TemplateId,
    stock: usize,
) -> Result<()> {
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
    template_ids: &[TemplateId],
    n: usize,
    concurrency: usize,
    prefix: &str,
) -> Outcome {
    let next = Arc::new(AtomicUsize::new(0));
    let template_ids: Arc<[TemplateId]> = template_ids.into();
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
    template_ids: &[TemplateId],
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
