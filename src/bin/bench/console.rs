//! `bench console`: the support console's reads on N coupons
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

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sqlx::Executor;

use couponkeeper::clock::ManualClock;
use couponkeeper::config::Config;
use couponkeeper::domain::cart::{CartInput, CartSpec, OrderInput, OrderSpec};
use couponkeeper::domain::coupon::CouponStatus;
use couponkeeper::domain::filters::{
    CouponExportQuery, CouponFilterInput, CouponListQuery, LedgerFilterInput, LedgerPageQuery,
};
use couponkeeper::domain::ids::{CouponId, OrderNo, TemplateId, UserId};
use couponkeeper::domain::line::LineInput;
use couponkeeper::domain::order::{CouponLockStatus, OrderStatus};
use couponkeeper::domain::staff::Role;
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::server::build_service;
use couponkeeper::service::support::{OVERVIEW_COUPONS, SearchOutcome, USER_HEALTH_ORDERS};
use couponkeeper::service::{Ctx, Service};
use couponkeeper::store::Db;

use crate::data::{create_template, generated_code, generated_insert, insert_generated, settle};
use crate::scratch::{Target, close_pool};
use crate::stats::{load_average, ms, percentile};
use crate::{Result, Store, StoreArg, stores_of};

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
/// Presale campaigns of the console data.
const CONSOLE_CAMPAIGNS: u64 = 20;
/// Presale orders (deposit paid, no coupon) per 100 coupons, over the
/// campaigns: at 1,000,000 coupons 10,000 of them, bringing the orders to
/// 300,000 (290,000 normal orders of the used and locked coupons).
const PRESALE_ORDERS_PER_100_COUPONS: u64 = 1;
/// Seconds in the 60 days that `ends_at` spreads over on either side of now.
const SPREAD_SECONDS: i64 = 60 * 86_400;

#[derive(clap::Args, Clone)]
pub(crate) struct ConsoleArgs {
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
    templates: Vec<TemplateId>,
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
    id: CouponId,
    code: String,
    user_id: UserId,
    order_no: Option<OrderNo>,
}

pub(crate) async fn console(args: ConsoleArgs) -> Result<()> {
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

/// [`CONSOLE_CAMPAIGNS`] presale campaigns (final payment opening in one to
/// twenty days) and `n / 100` presale orders with their deposits paid and no
/// coupon, created over the last 30 days, numbered `pre-…`; returns how many
/// orders.
async fn fill_presale_orders(db: &Db, store: Store, n: u64, now_ms: i64) -> Result<i64> {
    for c in 1..=CONSOLE_CAMPAIGNS {
        let starts = now_ms + i64::try_from(c)? * DAY_MS;
        sqlx::query(
            "INSERT INTO presale_campaigns (id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(format!("cmp_bench{c:03}"))
        .bind(format!("bench campaign {c}"))
        .bind(starts)
        .bind(starts + 3 * DAY_MS)
        .bind(["lock", "strict", "swap_or_compensate"][usize::try_from(c % 3)?])
        .bind(now_ms - 40 * DAY_MS)
        .execute(db.pool())
        .await?;
    }
    let count = i64::try_from(n * PRESALE_ORDERS_PER_100_COUPONS / 100)?;
    if count == 0 {
        return Ok(0);
    }
    let (with, rows, no, campaign) = match store {
        Store::Postgres => (
            "",
            "generate_series(CAST(1 AS BIGINT), CAST($1 AS BIGINT)) AS s(i)",
            "'pre-' || lpad(CAST(i AS TEXT), 10, '0')",
            "'cmp_bench' || lpad(CAST(i % 20 + 1 AS TEXT), 3, '0')",
        ),
        Store::Sqlite => (
            "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < $1)",
            "s",
            "printf('pre-%010d', i)",
            "printf('cmp_bench%03d', i % 20 + 1)",
        ),
    };
    let sql = format!(
        "{with} INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, deposit_cents,
             campaign_id, coupon_lock_status, created_at, deposit_paid_at, updated_at)
         SELECT {no}, 'presale-' || CAST(i % 5000 AS TEXT), 'presale', 'bench', 'deposit_paid', 100000, 10000,
             {campaign}, 'none', $2 - (i * 2592000000 / $1), $2 - (i * 2592000000 / $1) + 60000, $2
         FROM {rows}"
    );
    let done = sqlx::query(&sql)
        .bind(count)
        .bind(now_ms)
        .execute(db.pool())
        .await
        .map_err(|e| format!("inserting presale orders on {}: {e}", store.name()))?;
    if i64::try_from(done.rows_affected())? != count {
        return Err(format!(
            "inserted {} presale orders, expected {count}",
            done.rows_affected()
        )
        .into());
    }
    // Two compensation ledger rows per presale order (a final-payment
    // deduction and a support coupon), spread over the last 30 days and
    // five staff, for the finance ledger's rows.
    let ledger = format!(
        "{with} INSERT INTO compensation_ledger (user_id, order_no, coupon_id, kind, amount_cents, reason, actor,
             request_id, at, preset_id, rules_version, campaign_id)
         SELECT 'presale-' || CAST(i % 5000 AS TEXT), {no}, NULL,
             CASE WHEN i % 2 = 0 THEN 'final_payment_deduction' ELSE 'coupon' END, 500 + i % 1000,
             'bench', 'staff:bench' || CAST(i % 5 AS TEXT), NULL, $2 - (i * 1296000000 / $1), NULL, 1, {campaign}
         FROM {rows}"
    );
    let done = sqlx::query(&ledger)
        .bind(count * 2)
        .bind(now_ms)
        .execute(db.pool())
        .await
        .map_err(|e| format!("inserting ledger rows on {}: {e}", store.name()))?;
    if i64::try_from(done.rows_affected())? != count * 2 {
        return Err(format!("inserted {} ledger rows", done.rows_affected()).into());
    }
    Ok(count)
}

/// The report counters (migration 0026) of the generated coupons, which
/// were written by bare SQL: a day row per (template, business day in
/// UTC+8, shard of the creation second) and an all-days row per template,
/// as the writes would have left them.
async fn fill_report_counters(db: &Db) -> Result<()> {
    const SUMS: &str = "CAST(COUNT(*) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'used' THEN 1 ELSE 0 END) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'expired' THEN 1 ELSE 0 END) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'invalidated' THEN 1 ELSE 0 END) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'available' THEN 1 ELSE 0 END) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'locked' THEN 1 ELSE 0 END) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'used' THEN 1 ELSE 0 END) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'expired' THEN 1 ELSE 0 END) AS BIGINT),
        CAST(SUM(CASE WHEN status = 'invalidated' THEN 1 ELSE 0 END) AS BIGINT)";
    const COLS: &str = "template_id, day, shard, claimed, used, expired, invalidated,
        status_available, status_locked, status_used, status_expired, status_invalidated";
    // SQLite reads a constant in GROUP BY as a column number: the
    // all-days rows group by the template alone.
    const DAY: &str = "(created_at + 28800000) / 86400000";
    const SHARD: &str = "(created_at / 1000) % 16";
    for (day, shard, group) in [
        (DAY, SHARD, format!("template_id, {DAY}, {SHARD}")),
        ("-1", "0", "template_id".to_string()),
    ] {
        sqlx::query(&format!(
            "INSERT INTO template_counts ({COLS})
             SELECT template_id, {day}, {shard}, {SUMS} FROM coupons WHERE template_id IS NOT NULL
             GROUP BY {group}"
        ))
        .execute(db.pool())
        .await?;
    }
    Ok(())
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
    let presale = fill_presale_orders(db, store, n, now_ms).await?;
    fill_report_counters(db).await?;
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
    if u64::try_from(coupons)? != n || orders != with_order + presale {
        return Err(format!(
            "the fill made {coupons} coupons ({with_order} with an order) and {orders} orders, expected {n} coupons, one order each and {presale} presale orders"
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
    let row: Option<(CouponId, UserId, Option<OrderNo>)> =
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
) -> Result<Vec<OrderNo>> {
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
    let users: Vec<UserId> = (0..runs)
        .map(|_| UserId::parse(&format!("user-{}", rng.random_range(0..data.users))))
        .collect::<std::result::Result<_, _>>()?;
    let heavy: Vec<UserId> = (0..runs)
        .map(|_| UserId::parse(&format!("heavy-{}", rng.random_range(0..HEAVY_USERS))))
        .collect::<std::result::Result<_, _>>()?;
    let statuses: Vec<CouponStatus> = (0..runs).map(|_| random_status(&mut rng)).collect();
    let templates: Vec<TemplateId> = (0..runs)
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
            |id: CouponId| async move {
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
            |(code, id): (String, CouponId)| async move {
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
            |order_no: OrderNo| async move {
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
            |user: UserId| async move {
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

    let page = |filter: CouponFilterInput, full: bool| async move {
        let query = CouponListQuery::parse(CONSOLE_PAGE, filter.clone())
            .map_err(|e| format!("list_coupons {}: {}", e.field, e.message))?;
        let p = s.list_coupons(query, None).await?;
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
                    CouponFilterInput {
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
                CouponFilterInput {
                    template_id: Some(hot.to_string()),
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
                    CouponFilterInput {
                        status: Some(status),
                        template_id: Some(template.to_string()),
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
                CouponFilterInput {
                    user_id: Some(user.to_string()),
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
                    CouponFilterInput {
                        status: Some(status),
                        user_id: Some(user.to_string()),
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
                    CouponFilterInput {
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
                let hot = hot.to_string();
                async move {
                    let filter = CouponFilterInput {
                        template_id: Some(hot),
                        ..Default::default()
                    };
                    let query = CouponListQuery::parse(CONSOLE_PAGE, filter)
                        .map_err(|e| format!("list_coupons {}: {}", e.field, e.message))?;
                    let mut after = None;
                    let mut last = Duration::ZERO;
                    for k in 1..=DEEP_PAGE {
                        let t = Instant::now();
                        let p = s.list_coupons(query.clone(), after).await?;
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
    let health = |order_no: OrderNo| async move {
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
        |user: UserId| async move {
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
        |user: UserId| async move {
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
    let filter = CouponFilterInput {
        template_id: Some(hot.to_string()),
        ..Default::default()
    };
    let query = CouponExportQuery::parse(CONSOLE_EXPORT_ROWS, filter)
        .map_err(|e| format!("export_coupons_csv {}: {}", e.field, e.message))?;
    let t = Instant::now();
    let csv = service
        .export_coupons_csv(query, couponkeeper::i18n::Lang::Zh)
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
    // The home page's work queue: five counts over the same data (checkout
    // locks lapsing within the hour among the 40,000 pending orders,
    // coupons ending today among the 500,000 available ones).
    rows.push(
        time_op(
            "home: work_queue (support)",
            vec![(); runs],
            cap,
            |()| async move {
                let q = s.work_queue("staff:bench", true).await?;
                if q.expiring_today < 0 || q.lapsing_locks < 0 {
                    return Err("negative counts".into());
                }
                Ok(None)
            },
        )
        .await?,
    );
    rows.extend(picker_rows(s, &mut rng, runs, cap).await?);
    rows.extend(order_list_rows(s, &mut rng, now_ms, data.orders, runs, cap).await?);
    let authority = couponkeeper::service::support::Authority::Api;
    let report_templates: Vec<TemplateId> = (0..runs)
        .map(|_| data.templates[rng.random_range(0..data.templates.len())].clone())
        .collect();
    rows.push(
        time_op(
            "report: a template, last 30 days",
            report_templates.clone(),
            cap,
            |id: TemplateId| {
                let authority = authority.clone();
                async move {
                    let r = s.template_report(&authority, id, None, None).await?;
                    if r.days.len() != 30 {
                        return Err(format!("{} days reported", r.days.len()).into());
                    }
                    Ok(None)
                }
            },
        )
        .await?,
    );
    // 366 days ending today in the business time zone (a UTC date would
    // be a day short of it in the evening, and the range one day too long).
    let year_from = (couponkeeper::i18n::zone::business_day(now) - chrono::Duration::days(365))
        .format("%Y-%m-%d")
        .to_string();
    rows.push(
        time_op(
            "report: the hot template, 366 days",
            vec![data.templates[0].clone(); runs],
            cap,
            |id: TemplateId| {
                let authority = authority.clone();
                let from = year_from.clone();
                async move {
                    let r = s.template_report(&authority, id, Some(from), None).await?;
                    if r.totals.claimed == 0 {
                        return Err("the hot template's report counts nothing".into());
                    }
                    Ok(None)
                }
            },
        )
        .await?,
    );
    rows.extend(report_page_rows(s, &report_templates, &data.templates[0], &year_from, cap).await?);
    Ok((data, rows))
}

/// The report page as an operator's browser gets it: the real router
/// (`couponkeeper::http::router`, the whole middleware stack) on a
/// loopback port in this process, `GET /console/templates/{id}/report`
/// with an operator's session, the whole HTML (two SVG charts and the
/// table) read and checked for both charts.
async fn report_page_rows(
    s: &Service,
    templates: &[TemplateId],
    hot: &TemplateId,
    year_from: &str,
    cap: Duration,
) -> Result<Vec<OpRow>> {
    let state = couponkeeper::server::app_state(&Config::default(), s.clone());
    let app = couponkeeper::http::router(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let cookie = crate::http::staff_session(s, Role::Operator).await?;
    let client = reqwest::Client::new();
    let page = |url: String| {
        let req = client.get(url).header("cookie", cookie.clone());
        async move {
            let r = req.send().await?;
            let status = r.status();
            let html = r.text().await?;
            if status != reqwest::StatusCode::OK
                || !html.contains("report-line-chart")
                || !html.contains("report-bar-chart")
            {
                return Err(format!("the report page answered {status} without its charts").into());
            }
            Ok(None)
        }
    };
    let mut rows = Vec::new();
    let result = async {
        rows.push(
            time_op(
                "report page (HTML): a template, last 30 days",
                templates.to_vec(),
                cap,
                |id: TemplateId| page(format!("{base}/console/templates/{id}/report")),
            )
            .await?,
        );
        rows.push(
            time_op(
                "report page (HTML): the hot template, 366 days",
                vec![hot.clone(); templates.len()],
                cap,
                |id: TemplateId| {
                    page(format!(
                        "{base}/console/templates/{id}/report?from={year_from}"
                    ))
                },
            )
            .await?,
        );
        Ok::<_, crate::BoxError>(())
    }
    .await;
    server.abort();
    result?;
    Ok(rows)
}

/// The order list (`GET /orders`, `/console/orders`): a first page of 50
/// under each filter support uses, the 20th page following `next`, and one
/// CSV export of 10,000 rows. Each row's keys vary: a random campaign, a
/// random day in the last 30, a random order-number prefix.
async fn order_list_rows(
    s: &Service,
    rng: &mut StdRng,
    now_ms: i64,
    orders: i64,
    runs: usize,
    cap: Duration,
) -> Result<Vec<OpRow>> {
    use couponkeeper::service::orders::{OrderListParams, OrderPage};
    let list = |p: OrderListParams, full: bool| async move {
        let filter = s.order_filter(&p)?;
        let page: OrderPage = s.list_orders(filter, None, CONSOLE_PAGE).await?;
        if full && page.orders.len() != CONSOLE_PAGE as usize {
            return Err(format!(
                "list_orders({p:?}) gave {} orders, expected a full page",
                page.orders.len()
            )
            .into());
        }
        Ok(None)
    };
    // `runs` counts the warm-up runs too.
    let n = runs;
    let tz = s.settings().reminders.tz;
    let day = |back: i64| {
        tz.local(couponkeeper::domain::time::from_ms(now_ms - back * DAY_MS))
            .date()
            .to_string()
    };
    let mut rows = Vec::new();
    rows.push(
        time_op("orders: first page, no filter", vec![(); n], cap, |()| {
            list(OrderListParams::default(), true)
        })
        .await?,
    );
    rows.push(
        time_op("orders: status paid", vec![(); n], cap, |()| {
            list(
                OrderListParams {
                    status: Some("paid".into()),
                    ..Default::default()
                },
                true,
            )
        })
        .await?,
    );
    let campaigns: Vec<String> = (0..n)
        .map(|_| format!("cmp_bench{:03}", rng.random_range(1..=CONSOLE_CAMPAIGNS)))
        .collect();
    rows.push(
        time_op(
            "orders: campaign (deposit paid)",
            campaigns,
            cap,
            |c: String| {
                list(
                    OrderListParams {
                        campaign_id: Some(c),
                        status: Some("deposit_paid".into()),
                        ..Default::default()
                    },
                    false,
                )
            },
        )
        .await?,
    );
    rows.push(
        time_op("orders: coupon locked", vec![(); n], cap, |()| {
            list(
                OrderListParams {
                    coupon_lock_status: Some("locked".into()),
                    ..Default::default()
                },
                true,
            )
        })
        .await?,
    );
    let days: Vec<String> = (0..n).map(|_| day(rng.random_range(1..30))).collect();
    rows.push(
        time_op("orders: one business day", days, cap, |d: String| {
            list(
                OrderListParams {
                    created_from: Some(d.clone()),
                    created_to: Some(d),
                    ..Default::default()
                },
                false,
            )
        })
        .await?,
    );
    let prefixes: Vec<String> = (0..n)
        .map(|_| format!("ord-{:07}", rng.random_range(1..=9_999_999u64)))
        .collect();
    rows.push(
        time_op("orders: order_no prefix", prefixes, cap, |p: String| {
            list(
                OrderListParams {
                    order_no_prefix: Some(p),
                    ..Default::default()
                },
                false,
            )
        })
        .await?,
    );
    let mut deep = time_op(
        "orders: page 20 (following next)",
        vec![(); n],
        cap,
        |()| async move {
            let mut cursor = None;
            let mut last = Duration::ZERO;
            for _ in 0..DEEP_PAGE {
                let t = Instant::now();
                let page = s
                    .list_orders(Default::default(), cursor, CONSOLE_PAGE)
                    .await?;
                last = t.elapsed();
                cursor = page.next;
                if cursor.is_none() {
                    return Err("the order list ended before page 20".into());
                }
            }
            Ok(Some(last))
        },
    )
    .await?;
    deep.note = "the 20th page's own latency".into();
    rows.push(deep);
    rows.push(
        time_op(
            "templates: first page (50, counts)",
            vec![(); n],
            cap,
            |()| async move {
                let p = s
                    .list_templates(None, None, None, None, CONSOLE_PAGE)
                    .await?;
                if p.templates.len() != CONSOLE_TEMPLATES.min(CONSOLE_PAGE as usize) {
                    return Err(format!("{} templates listed", p.templates.len()).into());
                }
                Ok(None)
            },
        )
        .await?,
    );
    rows.push(
        time_op(
            "campaigns: first page (counts)",
            vec![(); n],
            cap,
            |()| async move {
                let p = s.list_campaigns(None, CONSOLE_PAGE).await?;
                if p.campaigns.len() != CONSOLE_CAMPAIGNS as usize {
                    return Err(format!("{} campaigns listed", p.campaigns.len()).into());
                }
                Ok(None)
            },
        )
        .await?,
    );
    let ledger_days: Vec<String> = (0..n).map(|_| day(rng.random_range(1..15))).collect();
    rows.push(
        time_op(
            "ledger: first page + totals",
            vec![(); n],
            cap,
            |()| async move {
                let authority = couponkeeper::service::support::Authority::Api;
                let tz = s.settings().reminders.tz;
                let q = LedgerPageQuery::parse(CONSOLE_PAGE, LedgerFilterInput::default(), tz)
                    .map_err(|e| format!("ledger {}: {}", e.field, e.message))?;
                let p = s.compensation_ledger(&authority, &q, None).await?;
                if p.entries.len() != CONSOLE_PAGE as usize {
                    return Err(format!("{} ledger entries", p.entries.len()).into());
                }
                Ok(None)
            },
        )
        .await?,
    );
    rows.push(
        time_op(
            "ledger: one business day + totals",
            ledger_days,
            cap,
            |d: String| async move {
                let authority = couponkeeper::service::support::Authority::Api;
                let f = LedgerFilterInput {
                    from: Some(d.clone()),
                    to: Some(d),
                    ..Default::default()
                };
                let q = LedgerPageQuery::parse(CONSOLE_PAGE, f, s.settings().reminders.tz)
                    .map_err(|e| format!("ledger {}: {}", e.field, e.message))?;
                s.compensation_ledger(&authority, &q, None).await?;
                Ok(None)
            },
        )
        .await?,
    );
    let t = Instant::now();
    let csv = s
        .export_orders_csv(
            Default::default(),
            CONSOLE_EXPORT_ROWS,
            couponkeeper::i18n::Lang::Zh,
        )
        .await?;
    let took = t.elapsed();
    let lines = csv.matches("\r\n").count();
    let expected = CONSOLE_EXPORT_ROWS.min(usize::try_from(orders)?) + 1;
    if lines != expected {
        return Err(format!("the order export has {lines} lines, expected {expected}").into());
    }
    rows.push(OpRow {
        name: format!("export_orders_csv ({CONSOLE_EXPORT_ROWS} rows)"),
        runs: 1,
        p50: took,
        p99: took,
        note: format!("one run, {} KiB", csv.len() / 1024),
    });
    // Last: its orders would change what the order rows and the export
    // count.
    rows.extend(pay_stack_rows(s, runs, cap).await?);
    Ok(rows)
}

/// Coupons of the picker's user: four templates of [`PICKER_EACH`].
const PICKER_EACH: usize = 50;
/// The user the picker rows read.
const PICKER_USER: &str = "picker-200";

/// The checkout picker (`POST /users/{id}/coupon-options`) for a user
/// holding 200 available coupons of four kinds of terms (50 off 300, 10 %
/// off capped at 30 yuan, phones only, and one starting tomorrow), timed
/// against listing the same user's coupons (`GET /users/{id}/coupons`,
/// 200 rows) in the same run; the note gives the picker's p99 over the
/// list's. Carts are random (total 1 to 1,000 yuan, phones or shoes).
async fn picker_rows(
    s: &Service,
    rng: &mut StdRng,
    runs: usize,
    cap: Duration,
) -> Result<Vec<OpRow>> {
    let ctx = Ctx::new("bench", None);
    let stock = Some(i64::try_from(PICKER_EACH)?);
    let now = s.now();
    let base = TemplateInput {
        kind: Some("fixed".into()),
        value_cents: Some(5000),
        min_order_cents: Some(30_000),
        valid_seconds: Some(30 * 86_400),
        total_stock: stock,
        per_user_limit: stock,
        ..Default::default()
    };
    let terms = [
        TemplateInput {
            name: Some("picker 50 off 300".into()),
            ..base.clone()
        },
        TemplateInput {
            name: Some("picker 10% off".into()),
            kind: Some("percent".into()),
            value_cents: None,
            percent_off: Some(10),
            max_discount_cents: Some(3000),
            min_order_cents: Some(0),
            ..base.clone()
        },
        TemplateInput {
            name: Some("picker phones".into()),
            categories: Some(vec!["phones".into()]),
            ..base.clone()
        },
        TemplateInput {
            name: Some("picker tomorrow".into()),
            valid_from: Some(couponkeeper::domain::time::rfc3339(
                now + chrono::Duration::days(1),
            )),
            ..base.clone()
        },
    ];
    let user = UserId::parse(PICKER_USER)?;
    for input in terms {
        let t = s
            .create_template(&ctx, None, input)
            .await?
            .fresh()
            .ok_or("create_template answered a replay")?;
        for _ in 0..PICKER_EACH {
            s.claim(&ctx, None, user.clone(), t.id.clone()).await?;
        }
    }
    let held = 4 * PICKER_EACH;
    let list = time_op(
        "user coupons: GET list (200 coupons)",
        vec![(); runs],
        cap,
        |()| {
            let user = user.clone();
            async move {
                let got = s.list_user_coupons(user, None, 200).await?;
                if got.len() != held {
                    return Err(format!("listed {} coupons, expected {held}", got.len()).into());
                }
                Ok(None)
            }
        },
    )
    .await?;
    let carts: Vec<(i64, &'static str)> = (0..runs)
        .map(|_| {
            (
                rng.random_range(100..=100_000),
                if rng.random_bool(0.5) {
                    "phones"
                } else {
                    "shoes"
                },
            )
        })
        .collect();
    let mut picker = time_op(
        "picker: coupon-options (200 coupons)",
        carts,
        cap,
        |(total, category)| {
            let user = user.clone();
            async move {
                let cart = CartInput {
                    kind: Some("normal".into()),
                    category: Some(category.into()),
                    total_cents: Some(total),
                    lines: None,
                    campaign_id: None,
                    deposit_cents: None,
                };
                let cart = CartSpec::parse(cart)
                    .map_err(|e| format!("cart {}: {}", e.field, e.message))?;
                let o = s.coupon_options(user, cart).await?;
                let seen = o.usable.len() + o.unusable.len();
                if seen != held {
                    return Err(format!("the picker saw {seen} coupons, expected {held}").into());
                }
                Ok(None)
            }
        },
    )
    .await?;
    let ratio = ms(picker.p99) / ms(list.p99).max(f64::MIN_POSITIVE);
    picker.note = format!("p99 {ratio:.2}x the list's (target <= 2x)");
    let mut stacked = stacking_row(s, rng, runs, cap).await?;
    let ratio = ms(stacked.p99) / ms(list.p99).max(f64::MIN_POSITIVE);
    stacked.note = format!("p99 {ratio:.2}x the list's (target <= 3x)");
    Ok(vec![list, picker, stacked])
}

/// Paying a normal order of three coupons (a platform coupon and shop
/// coupons of shops A and B) beside paying one of the platform coupon
/// alone, on the same two-line cart: what stacking costs the payment
/// (every coupon moved, the further coupons' rows and each coupon's
/// report counters, in the order's one transaction). The orders are made
/// beforehand through the service, one user each (not timed); every
/// answer is checked: the order paid, every coupon used.
async fn pay_stack_rows(s: &Service, runs: usize, cap: Duration) -> Result<Vec<OpRow>> {
    let ctx = Ctx::new("bench", None);
    let mut templates = Vec::new();
    for (name, shop) in [
        ("pay platform", None),
        ("pay shop A", Some("A")),
        ("pay shop B", Some("B")),
    ] {
        let t = s
            .create_template(
                &ctx,
                None,
                TemplateInput {
                    name: Some(name.into()),
                    kind: Some("fixed".into()),
                    value_cents: Some(500),
                    min_order_cents: Some(0),
                    valid_seconds: Some(30 * 86_400),
                    per_user_limit: Some(2),
                    shop_id: shop.map(String::from),
                    ..Default::default()
                },
            )
            .await?
            .fresh()
            .ok_or("create_template answered a replay")?;
        templates.push(t.id);
    }
    let lines = || {
        ["A", "B"]
            .iter()
            .map(|shop| LineInput {
                line_id: Some(shop.to_lowercase()),
                sku: None,
                category: Some("phones".into()),
                shop_id: Some((*shop).into()),
                quantity: Some(1),
                unit_price_cents: Some(10_000),
            })
            .collect::<Vec<_>>()
    };
    let mut rows = Vec::new();
    for n in [1usize, 3] {
        let mut orders = Vec::with_capacity(runs);
        for i in 0..runs {
            let user = format!("pay-stack-{n}-{i}");
            let mut ids = Vec::with_capacity(n);
            for t in templates.iter().take(n) {
                let c = s
                    .claim(&ctx, None, UserId::parse(&user)?, t.clone())
                    .await?
                    .fresh()
                    .ok_or("claim answered a replay")?;
                ids.push(c.id.to_string());
            }
            let order_no = format!("PAYSTACK-{n}-{i}");
            let spec = OrderSpec::parse(OrderInput {
                order_no: Some(order_no.clone()),
                user_id: Some(user),
                kind: Some("normal".into()),
                lines: Some(lines()),
                coupon_ids: Some(ids),
                ..OrderInput::default()
            })
            .map_err(|e| format!("order {}: {}", e.field, e.message))?;
            s.create_order(&ctx, None, spec).await?;
            orders.push(OrderNo::parse(&order_no)?);
        }
        let name = if n == 1 {
            "pay: an order of 1 coupon".to_string()
        } else {
            "pay: an order of 3 coupons (platform + 2 shops)".to_string()
        };
        let ctx = &ctx;
        rows.push(
            time_op(&name, orders, cap, |order_no| async move {
                let paid = s
                    .pay(ctx, None, order_no)
                    .await?
                    .fresh()
                    .ok_or("pay answered a replay")?;
                let used = paid
                    .coupons
                    .iter()
                    .filter(|c| c.lock_status == CouponLockStatus::Used)
                    .count();
                if paid.status != OrderStatus::Paid || used != n {
                    return Err(format!("{}: {used} of {n} coupons used", paid.order_no).into());
                }
                Ok(None)
            })
            .await?,
        );
    }
    if let [one, three] = rows.as_mut_slice() {
        let ratio = ms(three.p99) / ms(one.p99).max(f64::MIN_POSITIVE);
        three.note = format!("p99 {ratio:.2}x paying an order of 1 coupon");
    }
    Ok(rows)
}

/// A user holding 200 coupons for stacking: 40 platform coupons (5
/// templates) and 20 shop coupons for each of 8 shops (2 templates each).
const STACK_USER: &str = "picker-stack-200";
const STACK_SHOPS: usize = 8;

/// The picker with a 20-line cart over the 8 shops for [`STACK_USER`]:
/// every coupon judged alone, then `best_combination` searched over them
/// (one platform coupon, one shop coupon per shop). Each answer is
/// checked: every coupon is seen and a best combination is found.
async fn stacking_row(s: &Service, rng: &mut StdRng, runs: usize, cap: Duration) -> Result<OpRow> {
    let ctx = Ctx::new("bench", None);
    let user = UserId::parse(STACK_USER)?;
    let mut made = Vec::new();
    for i in 0..5i64 {
        made.push((
            TemplateInput {
                name: Some(format!("stack platform {i}")),
                kind: Some("fixed".into()),
                value_cents: Some(1000 + 500 * i),
                min_order_cents: Some(20_000 * i),
                valid_seconds: Some(30 * 86_400 + 3_600 * i),
                ..Default::default()
            },
            8usize,
        ));
    }
    for shop in 0..STACK_SHOPS {
        for j in 0..2i64 {
            made.push((
                TemplateInput {
                    name: Some(format!("stack shop {shop} {j}")),
                    kind: Some(if j == 0 { "fixed" } else { "percent" }.into()),
                    value_cents: (j == 0).then_some(500 + 100 * i64::try_from(shop)?),
                    percent_off: (j == 1).then_some(5),
                    min_order_cents: Some(5_000 * j),
                    valid_seconds: Some(30 * 86_400),
                    shop_id: Some(format!("shop-{shop}")),
                    ..Default::default()
                },
                10usize,
            ));
        }
    }
    let mut held = 0;
    for (mut input, n) in made {
        let stock = Some(i64::try_from(n)?);
        input.total_stock = stock;
        input.per_user_limit = stock;
        let t = s
            .create_template(&ctx, None, input)
            .await?
            .fresh()
            .ok_or("create_template answered a replay")?;
        for _ in 0..n {
            s.claim(&ctx, None, user.clone(), t.id.clone()).await?;
            held += 1;
        }
    }
    let carts: Vec<Vec<LineInput>> = (0..runs)
        .map(|_| {
            (0..20usize)
                .map(|i| LineInput {
                    line_id: Some(format!("L{i}")),
                    sku: None,
                    category: Some(
                        if rng.random_bool(0.5) {
                            "phones"
                        } else {
                            "shoes"
                        }
                        .into(),
                    ),
                    shop_id: Some(format!("shop-{}", i % STACK_SHOPS)),
                    quantity: Some(rng.random_range(1..=3)),
                    unit_price_cents: Some(rng.random_range(1_000..=50_000)),
                })
                .collect()
        })
        .collect();
    time_op(
        "picker: 20-line cart, best combination (200 coupons)",
        carts,
        cap,
        |lines| {
            let user = user.clone();
            async move {
                let cart = CartSpec::parse(CartInput {
                    kind: Some("normal".into()),
                    lines: Some(lines),
                    ..CartInput::default()
                })
                .map_err(|e| format!("cart {}: {}", e.field, e.message))?;
                let o = s.coupon_options(user, cart).await?;
                let seen = o.usable.len() + o.unusable.len();
                if seen != held {
                    return Err(format!("the picker saw {seen} coupons, expected {held}").into());
                }
                if !matches!(o.best_combination, Some(Some(_))) {
                    return Err("no best combination for a cart every coupon fits".into());
                }
                Ok(None)
            }
        },
    )
    .await
}
