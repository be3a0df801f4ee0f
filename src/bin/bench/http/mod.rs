//! `bench http`: the service measured as its callers meet it, over HTTP.
//!
//! Per store, on a fresh database: pre-made rows ([`premade`]), then the
//! real `couponkeeper serve` in its own process ([`server`]) driven by
//! `wrk` with the Lua scripts of `bench/` at fixed concurrency, each row
//! followed at once by its baseline on the same database server
//! ([`load`]): `pgbench` with the SQL scripts of `bench/` on PostgreSQL,
//! the same scripts through sqlx on SQLite. The table gives requests/s,
//! p50/p99 and non-2xx answers per row, the baseline's figures and the
//! ratio; the machine is noisy, so read the ratios.
//!
//! Rows (API requests carry the bearer token and a fresh Idempotency-Key,
//! as API.md asks of callers):
//! - `claim`: one hot template (16 stock shards, per-user limit 1, every
//!   request a new user), at each of `--connections`; baseline the naive
//!   claim transaction (`bench/naive_claim.sql`: one stock row locked by
//!   `SELECT … FOR UPDATE`, then `UPDATE` and `INSERT`) at the same
//!   concurrency. Checked after each: claimed == coupons <= stock, and at
//!   least as many coupons as 201s;
//! - `claim, one template vs 64`: claims by new users at 64 connections
//!   on one template, then dealt over 64 templates (the ratio is hot over
//!   spread), with the wait-event sample of the pay pair on PostgreSQL;
//! - `pay`, `deposit-payment`, `final-payment` at 32 connections over
//!   pre-made orders, each once; baselines their bare conditional
//!   primary-key UPDATEs (`bench/bare_*.sql`) over their own pre-made
//!   rows. Checked: orders and coupons moved together, at least one per
//!   2xx, and the pre-made rows did not run out;
//! - `pay's writes, bare SQL`: everything pay writes (order, coupon, two
//!   events, the outbox row, the idempotency record) hand-written in one
//!   transaction (`bench/pay_writes.sql`), against the pay row's bare
//!   UPDATE: the most pay can reach while it keeps its promises;
//! - `order page + health check`: the console's order page with the check
//!   run (signed in as a support member) at 32 connections; baseline the
//!   three reads it needs at least (`bench/bare_order_page.sql`);
//! - `POST orders, 1 line vs 50`: new orders without a coupon at 32
//!   connections, of one line, then of 50 lines (the ratio is one over
//!   fifty). Checked: every 2xx made its order, with all its lines;
//! - `POST refunds, 1 unit vs whole`: over pre-made paid orders of three
//!   lines with a used coupon, each once, at 32 connections: a refund by
//!   line of one unit (the coupon kept), then the whole-order refund of
//!   other such orders (the coupon returned). Checked: a refund row per
//!   2xx, the partly refunded orders still paid, the wholly refunded ones
//!   refunded with their coupons back;
//! - `healthz` at 64 connections: the HTTP stack's own ceiling, no
//!   baseline.

mod load;
mod premade;
pub(crate) mod server;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use couponkeeper::clock::SystemClock;
use couponkeeper::config::Config;
use couponkeeper::domain::ids::TemplateId;
use couponkeeper::domain::staff::{Password, Role, StaffName};
use couponkeeper::server::build_service;
use couponkeeper::service::staff::SessionPolicy;
use couponkeeper::service::{Ctx, Service};
use couponkeeper::store::Db;

use self::load::{Measure, Script, Value, pgbench, run_script, wrk};
use self::premade::{
    SPREAD_TEMPLATES, Set, SetSpec, Shape, make_campaign, make_set, progress, progress_by_prefix,
    settle_all, spread_set,
};
use self::server::{Server, server_binary};
use crate::claims::collapse_to_one_shard;
use crate::data::create_template;
use crate::scratch::{Target, close_pool};
use crate::stats::load_average;
use crate::{Result, Store, StoreArg, stores_of};

/// Connections of the order rows and their baselines.
const ORDER_CONNECTIONS: usize = 32;
/// Connections of the `/healthz` row.
const HEALTHZ_CONNECTIONS: usize = 64;
/// Seconds per row in `--short` mode (CI).
const SHORT_SECONDS: u64 = 2;
/// Longest accepted `--seconds`.
const MAX_SECONDS: u64 = 600;
/// Most connections accepted in `--connections` (PostgreSQL's default
/// `max_connections` is 100, and the server's pool needs some).
const MAX_CONNECTIONS: usize = 80;
/// Pre-made rows per second of run for the API's sets and for the bare-SQL
/// baselines' (per store: SQLite's bare UPDATEs in process run faster than
/// pgbench's over a socket). A set that runs out shows as non-2xx answers
/// or a failed check, never as faster no-op requests. Sized for a quiet
/// machine with room to spare: pgbench hands each client its own share of
/// rows, and one fast client running past its share failed CI's check
/// (22,475 bare UPDATEs in 2 s on an idle 2-core machine against 24,000
/// rows).
const API_ROWS_PER_SECOND: usize = 6_000;
const SQL_ROWS_PER_SECOND_PG: usize = 40_000;
const SQL_ROWS_PER_SECOND_SQLITE: usize = 40_000;
/// Orders the order-page row picks from at random.
const VIEW_ROWS: usize = 1_000;
/// Stock of the hot template and of the naive baseline's one stock row:
/// more than any run can claim, so no row measures cheap refusals.
const HOT_STOCK: usize = 100_000_000;

#[derive(clap::Args, Clone)]
pub(crate) struct HttpArgs {
    /// Which store(s) to measure.
    #[arg(long, value_enum, default_value_t = StoreArg::Both)]
    store: StoreArg,
    /// Seconds per row and per baseline.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Connections of the claim rows (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 64])]
    connections: Vec<usize>,
    /// CI mode: 2 seconds per row (overrides --seconds).
    #[arg(long)]
    short: bool,
    /// Only these rows (comma-separated: healthz, claim, pay, deposit,
    /// final, page, orders, refunds); default all. For profiling one row at a time.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The couponkeeper binary to serve (default: the one next to this
    /// executable; build it first with `cargo build --release --bin
    /// couponkeeper`).
    #[arg(long)]
    server: Option<PathBuf>,
}

/// One line of the table.
struct Row {
    store: Store,
    name: String,
    connections: usize,
    api: Measure,
    baseline: Option<(String, Measure)>,
    check: String,
    ok: bool,
}

pub(crate) async fn http(args: HttpArgs) -> Result<()> {
    let seconds = if args.short {
        SHORT_SECONDS
    } else {
        args.seconds
    };
    if seconds == 0 || seconds > MAX_SECONDS {
        return Err(format!("--seconds must be between 1 and {MAX_SECONDS}").into());
    }
    const ROWS: [&str; 8] = [
        "healthz", "claim", "pay", "deposit", "final", "page", "orders", "refunds",
    ];
    if let Some(bad) = args.only.iter().find(|r| !ROWS.contains(&r.as_str())) {
        return Err(format!("--only {bad}: rows are {}", ROWS.join(", ")).into());
    }
    if args.connections.is_empty()
        || args
            .connections
            .iter()
            .any(|&c| c == 0 || c > MAX_CONNECTIONS)
    {
        return Err(format!("--connections must be 1 to {MAX_CONNECTIONS} each").into());
    }
    sqlx::any::install_default_drivers();
    let scripts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench");
    let bin = server_binary(args.server.as_deref())?;
    eprintln!(
        "bench http: {seconds}s per row, claim connections {:?}, server {}, load average {}",
        args.connections,
        bin.display(),
        load_average()
    );
    let mut rows = Vec::new();
    for &store in stores_of(args.store) {
        let (target, url) = Target::create(store).await?;
        let logs = std::env::temp_dir().join(format!(
            "ck_bench_http_{}_{}",
            std::process::id(),
            store.name()
        ));
        std::fs::create_dir_all(&logs)?;
        let measured = measure_store(store, &url, &args, seconds, &bin, &scripts, &logs).await;
        let removed = target.remove().await;
        match measured {
            Ok(r) => {
                let _ = std::fs::remove_dir_all(&logs);
                rows.extend(r);
            }
            Err(e) => {
                print_table(&rows);
                return Err(
                    format!("{}: {e} (logs kept in {})", store.name(), logs.display()).into(),
                );
            }
        }
        removed?;
    }
    print_table(&rows);
    println!("\nload average after the run: {}", load_average());
    if let Some(bad) = rows.iter().find(|r| !r.ok) {
        return Err(format!(
            "check failed: {} {} at {}: {}",
            bad.store.name(),
            bad.name,
            bad.connections,
            bad.check
        )
        .into());
    }
    Ok(())
}

/// Everything one store's rows need besides the server.
struct Setup {
    db: Db,
    hot: TemplateId,
    naive: TemplateId,
    sets: Vec<(Set, Set, &'static str, &'static str)>,
    /// Orders for `pay_writes.sql` (pay's writes as bare SQL).
    pay_writes: Set,
    /// Orders whose coupons all come from one template, and the same
    /// orders' coupons dealt over 64 templates: the hot-row pair.
    hot_pay: Set,
    spread_pay: Set,
    /// A template of its own and 64 more: the claim pair (empty when the
    /// claim rows are left out).
    claim_hot: Vec<TemplateId>,
    claim_spread: Vec<TemplateId>,
    views: Set,
    /// Paid orders of three lines: refunded one unit, and refunded whole.
    refunds: (Set, Set),
    cookie: String,
    now_ms: i64,
}

async fn measure_store(
    store: Store,
    url: &str,
    args: &HttpArgs,
    seconds: u64,
    bin: &Path,
    scripts: &Path,
    logs: &Path,
) -> Result<Vec<Row>> {
    let db = Db::connect(url, 8, Config::default().tx_retries).await?;
    let result = async {
        db.migrate().await?;
        let setup = prepare(&db, store, seconds, &args.only).await?;
        let token = format!(
            "{:032x}{:032x}",
            rand::random::<u128>(),
            rand::random::<u128>()
        );
        let mut server = Server::start(bin, url, &token, logs.join("serve.log")).await?;
        let rows = run_rows(
            store, url, args, seconds, scripts, logs, &setup, &server, &token,
        )
        .await;
        server.stop();
        let problems = server.log_problems();
        if !problems.is_empty() {
            // The same message many times over is one finding: grouped by
            // what follows the timestamp.
            let mut kinds: Vec<(String, usize)> = Vec::new();
            for p in &problems {
                let text = p
                    .split_once(' ')
                    .map_or(p.as_str(), |(_, rest)| rest)
                    .trim()
                    .to_string();
                match kinds.iter_mut().find(|(k, _)| *k == text) {
                    Some((_, n)) => *n += 1,
                    None => kinds.push((text, 1)),
                }
            }
            eprintln!(
                "  {} server log: {} WARN/ERROR line(s):",
                store.name(),
                problems.len()
            );
            for (text, n) in kinds.iter().take(5) {
                eprintln!("    {n} x {text}");
            }
        }
        rows
    }
    .await;
    close_pool(&db).await;
    result
}

/// Makes the templates, the campaign, every set of pre-made orders and a
/// support member's console session, through the service where the
/// service makes them (templates, staff, sign-in).
async fn prepare(db: &Db, store: Store, seconds: u64, only: &[String]) -> Result<Setup> {
    let service = build_service(&Config::default(), db.clone(), Arc::new(SystemClock));
    let ctx = Ctx::new("bench", None);
    let now_ms = chrono::Utc::now().timestamp_millis();
    let started = std::time::Instant::now();
    let secs = usize::try_from(seconds)?;
    let api_rows = API_ROWS_PER_SECOND * secs;
    let sql_rows = secs
        * match store {
            Store::Postgres => SQL_ROWS_PER_SECOND_PG,
            Store::Sqlite => SQL_ROWS_PER_SECOND_SQLITE,
        };
    let hot = create_template(&service, &ctx, "hot", HOT_STOCK).await?;
    let naive = create_template(&service, &ctx, "naive", HOT_STOCK).await?;
    collapse_to_one_shard(db, &naive, HOT_STOCK).await?;
    make_campaign(db, now_ms).await?;
    let mut sets = Vec::new();
    let plan: [(&str, &str, Shape, &str, &str); 3] = [
        (
            "pay-",
            "bpay-",
            Shape::PendingPayment,
            "pay",
            "bare_pay.sql",
        ),
        (
            "dep-",
            "bdep-",
            Shape::PendingDeposit,
            "deposit-payment",
            "bare_deposit.sql",
        ),
        (
            "fin-",
            "bfin-",
            Shape::DepositPaid,
            "final-payment",
            "bare_final.sql",
        ),
    ];
    let mut index = 1;
    for (api_prefix, base_prefix, shape, action, script) in plan {
        // Sets of rows left out by --only are made empty (the probe row).
        let short = action.split('-').next().unwrap_or(action);
        let wanted = only.is_empty() || only.iter().any(|r| r == short);
        let (api_rows, sql_rows) = if wanted { (api_rows, sql_rows) } else { (0, 0) };
        let spec = |index, prefix, rows| SetSpec {
            index,
            prefix,
            shape,
            rows,
        };
        let api = make_set(
            db,
            &service,
            store,
            spec(index, api_prefix, api_rows),
            now_ms,
        )
        .await?;
        let base = make_set(
            db,
            &service,
            store,
            spec(index + 1, base_prefix, sql_rows),
            now_ms,
        )
        .await?;
        index += 2;
        sets.push((api, base, action, script));
    }
    let pay_wanted = only.is_empty() || only.iter().any(|r| r == "pay");
    let pay_writes = make_set(
        db,
        &service,
        store,
        SetSpec {
            index,
            prefix: "bwp-",
            shape: Shape::PendingPayment,
            rows: if pay_wanted { sql_rows } else { 0 },
        },
        now_ms,
    )
    .await?;
    index += 1;
    let pair_rows = if pay_wanted { api_rows } else { 0 };
    let hot_pay = make_set(
        db,
        &service,
        store,
        SetSpec {
            index,
            prefix: "hot-",
            shape: Shape::PendingPayment,
            rows: pair_rows,
        },
        now_ms,
    )
    .await?;
    index += 1;
    let spread_pay = make_set(
        db,
        &service,
        store,
        SetSpec {
            index,
            prefix: "spr-",
            shape: Shape::PendingPayment,
            rows: pair_rows,
        },
        now_ms,
    )
    .await?;
    spread_set(db, &service, &spread_pay).await?;
    index += 1;
    let views = make_set(
        db,
        &service,
        store,
        SetSpec {
            index,
            prefix: "view-",
            shape: Shape::PendingPayment,
            rows: VIEW_ROWS,
        },
        now_ms,
    )
    .await?;
    let refund_rows = if only.is_empty() || only.iter().any(|r| r == "refunds") {
        api_rows
    } else {
        0
    };
    let mut refunds = Vec::with_capacity(2);
    for (offset, prefix) in [(1, "rfp-"), (2, "rfw-")] {
        refunds.push(
            make_set(
                db,
                &service,
                store,
                SetSpec {
                    index: index + offset,
                    prefix,
                    shape: Shape::Paid,
                    rows: refund_rows,
                },
                now_ms,
            )
            .await?,
        );
    }
    let whole = refunds.pop().ok_or("the whole-refund set")?;
    let partial = refunds.pop().ok_or("the partial-refund set")?;
    let (claim_hot, claim_spread) = if only.is_empty() || only.iter().any(|r| r == "claim") {
        let hot = create_template(&service, &ctx, "claim-hot", HOT_STOCK).await?;
        let mut spread = Vec::with_capacity(SPREAD_TEMPLATES);
        for i in 0..SPREAD_TEMPLATES {
            spread.push(
                create_template(&service, &ctx, &format!("claim-spread-{i}"), HOT_STOCK).await?,
            );
        }
        (vec![hot], spread)
    } else {
        (Vec::new(), Vec::new())
    };
    let cookie = staff_session(&service, Role::Support).await?;
    settle_all(db, store).await?;
    eprintln!(
        "  {:<8} set-up: {} API rows and {} baseline rows per order set, in {:.1}s",
        store.name(),
        api_rows,
        sql_rows,
        started.elapsed().as_secs_f64()
    );
    Ok(Setup {
        db: db.clone(),
        hot,
        naive,
        sets,
        pay_writes,
        hot_pay,
        spread_pay,
        claim_hot,
        claim_spread,
        views,
        refunds: (partial, whole),
        cookie,
        now_ms,
    })
}

/// A staff member of `role` signed in through the service: the cookie
/// the console's pages want.
pub(crate) async fn staff_session(service: &Service, role: Role) -> Result<String> {
    let name = StaffName::parse(&format!("bench-{}", role.as_str())).map_err(|e| e.to_string())?;
    let raw = format!("{:032x}", rand::random::<u128>());
    let password = Password::parse(&raw, &name).map_err(|p| p.message().to_string())?;
    service.add_staff(&name, role, &password, false).await?;
    let signed = service
        .sign_in(name.as_str(), &raw, "127.0.0.1", SessionPolicy::default())
        .await
        .map_err(|e| format!("signing in the bench's {} member: {e}", role.as_str()))?;
    Ok(format!(
        "{}={}",
        couponkeeper::web::auth::SESSION_COOKIE,
        signed.token
    ))
}

/// Claimed (sum of the shards), coupons and stock of a template, from one
/// statement (one snapshot).
async fn stock_of(db: &Db, template_id: &TemplateId) -> Result<(i64, i64, i64)> {
    Ok(sqlx::query_as(
        "SELECT
             (SELECT CAST(COALESCE(SUM(claimed), 0) AS BIGINT) FROM template_stock_shards WHERE template_id = $1),
             (SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1),
             (SELECT CAST(COALESCE(SUM(capacity), 0) AS BIGINT) FROM template_stock_shards WHERE template_id = $1)",
    )
    .bind(template_id)
    .fetch_one(db.pool())
    .await?)
}

/// Requests wrk gave up on at the end of its run may still be finishing in
/// the server: waits until `count` reads the same twice 200 ms apart (at
/// most 5 s), so the checks see the settled database.
async fn settled<T, F, Fut>(mut count: F) -> Result<T>
where
    T: PartialEq,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut last = count().await?;
    // Bounded: 25 rounds of 200 ms.
    for _ in 0..25 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = count().await?;
        if now == last {
            return Ok(now);
        }
        last = now;
    }
    Ok(last)
}

/// A baseline run: pgbench on PostgreSQL, the same script through sqlx on
/// SQLite (with a pool of `connections`).
#[allow(clippy::too_many_arguments)]
async fn baseline(
    store: Store,
    url: &str,
    script: &Path,
    connections: usize,
    seconds: u64,
    vars: &[(&str, Value)],
    random_rows: i64,
    logs: &Path,
) -> Result<Measure> {
    match store {
        Store::Postgres => {
            let mut defines: Vec<(&str, String)> = vars
                .iter()
                .map(|(k, v)| {
                    (
                        *k,
                        match v {
                            Value::Int(n) => n.to_string(),
                            Value::Text(t) => t.clone(),
                        },
                    )
                })
                .collect();
            defines.push(("nclients", connections.to_string()));
            defines.push(("k", "0".into()));
            defines.push(("rows", random_rows.to_string()));
            pgbench(script, url, connections, seconds, &defines, logs).await
        }
        Store::Sqlite => {
            let parsed = Script::load(script)?;
            let db = Db::connect(
                url,
                u32::try_from(connections)?,
                Config::default().tx_retries,
            )
            .await?;
            let m = run_script(&db, &parsed, connections, seconds, vars, random_rows).await;
            close_pool(&db).await;
            m
        }
    }
}

/// Sends one request before a timed run (the probe row 0 of a set, or one
/// claim) and fails unless it answers `want`: a row the API refuses is a
/// broken set-up, not a measurement.
async fn probe(
    client: &reqwest::Client,
    req: reqwest::RequestBuilder,
    want: u16,
    what: &str,
) -> Result<()> {
    let _ = client;
    let resp = req.timeout(Duration::from_secs(10)).send().await?;
    let status = resp.status().as_u16();
    if status != want {
        let body = resp.text().await.unwrap_or_default();
        let body: String = body.chars().take(400).collect();
        return Err(format!("probe {what}: expected {want}, got {status}: {body}").into());
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn run_rows(
    store: Store,
    url: &str,
    args: &HttpArgs,
    seconds: u64,
    scripts: &Path,
    logs: &Path,
    setup: &Setup,
    server: &Server,
    token: &str,
) -> Result<Vec<Row>> {
    let base = server.base_url.as_str();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let api_env = |extra: &[(&str, String)]| {
        let mut env = vec![("CK_TOKEN".to_string(), token.to_string())];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        env
    };
    let db = &setup.db;
    let mut rows = Vec::new();
    let say = |r: &Row| {
        eprintln!(
            "  {:<8} {:<28} {:>3} conns: {:>7.0}/s{} {}",
            r.store.name(),
            r.name,
            r.connections,
            r.api.rate(),
            r.baseline
                .as_ref()
                .map(|(_, b)| format!(
                    " vs {:.0}/s ({:.2}x)",
                    b.rate(),
                    r.api.rate() / b.rate().max(f64::MIN_POSITIVE)
                ))
                .unwrap_or_default(),
            r.check
        );
    };

    let wanted = |row: &str| args.only.is_empty() || args.only.iter().any(|r| r == row);
    eprintln!(
        "  {:<8} server pid {} at {base}",
        store.name(),
        server.pid()
    );

    // The HTTP stack's ceiling.
    if wanted("healthz") {
        let m = wrk(
            &scripts.join("healthz.lua"),
            base,
            HEALTHZ_CONNECTIONS,
            seconds,
            api_env(&[("CK_RUN", "healthz".into())]),
        )
        .await?;
        let row = Row {
            store,
            name: "GET /healthz".into(),
            connections: HEALTHZ_CONNECTIONS,
            ok: m.failed == 0,
            check: format!("{} non-2xx", m.failed),
            api: m,
            baseline: None,
        };
        say(&row);
        rows.push(row);
    }

    // Claims on the hot template, each beside the naive claim.
    if wanted("claim") {
        probe(
            &client,
            client
                .post(format!("{base}/api/v1/users/probe-claim/coupons"))
                .bearer_auth(token)
                .json(&serde_json::json!({ "template_id": setup.hot })),
            201,
            "claim",
        )
        .await?;
        for &c in &args.connections {
            let (_, before, _) = stock_of(db, &setup.hot).await?;
            let m = wrk(
                &scripts.join("claim.lua"),
                base,
                c,
                seconds,
                api_env(&[
                    ("CK_TEMPLATES", setup.hot.to_string()),
                    ("CK_RUN", format!("{}c{c}", store.name())),
                ]),
            )
            .await?;
            let (claimed, coupons, stock) = settled(|| stock_of(db, &setup.hot)).await?;
            let created = m.requests.saturating_sub(m.failed);
            let api_ok = claimed == coupons
                && coupons <= stock
                && coupons - before >= i64::try_from(created)?;
            let (n_claimed_before, _, _) = stock_of(db, &setup.naive).await?;
            let b = baseline(
                store,
                url,
                &scripts.join("naive_claim.sql"),
                c,
                seconds,
                &[
                    ("tid", Value::Text(setup.naive.to_string())),
                    ("run", Value::Text(format!("n{c}"))),
                    ("now", Value::Int(setup.now_ms)),
                    ("nclients", Value::Int(i64::try_from(c)?)),
                ],
                1,
                logs,
            )
            .await?;
            let (n_claimed, n_coupons, n_stock) = stock_of(db, &setup.naive).await?;
            let naive_ok = n_claimed == n_coupons
                && n_coupons <= n_stock
                && n_claimed - n_claimed_before == i64::try_from(b.requests)?;
            let row = Row {
                store,
                name: "claim (hot template)".into(),
                connections: c,
                check: format!(
                    "{}: claimed {claimed} = coupons {coupons} <= stock, {created} 201s; naive: claimed {n_claimed} = coupons {n_coupons} <= stock",
                    if api_ok && naive_ok {
                        "0 oversold"
                    } else {
                        "FAILED"
                    }
                ),
                ok: api_ok && naive_ok,
                api: m,
                baseline: Some(("naive claim (FOR UPDATE)".into(), b)),
            };
            say(&row);
            rows.push(row);
        }
        let row = claim_pair_row(store, base, scripts, setup, seconds, &api_env).await?;
        say(&row);
        rows.push(row);
    }

    // Order actions over pre-made orders, each beside its bare SQL.
    for (api_set, base_set, action, script) in &setup.sets {
        let short = action.split('-').next().unwrap_or(action);
        if !wanted(short) {
            continue;
        }
        probe(
            &client,
            client
                .post(format!("{base}/api/v1/orders/{}0/{action}", api_set.prefix))
                .bearer_auth(token)
                .json(&serde_json::json!({})),
            200,
            action,
        )
        .await?;
        let m = wrk(
            &scripts.join("order_action.lua"),
            base,
            ORDER_CONNECTIONS,
            seconds,
            api_env(&[
                ("CK_PREFIX", api_set.prefix.to_string()),
                ("CK_ACTION", action.to_string()),
                ("CK_RUN", store.name().to_string()),
            ]),
        )
        .await?;
        let (orders, coupons) = settled(|| progress(db, api_set)).await?;
        let answered = i64::try_from(m.requests.saturating_sub(m.failed))?;
        let rows_made = i64::try_from(api_set.rows)? + 1;
        let api_ok = orders == coupons && orders > answered && orders < rows_made;
        let b = baseline(
            store,
            url,
            &scripts.join(script),
            ORDER_CONNECTIONS,
            seconds,
            &[
                ("now", Value::Int(setup.now_ms)),
                ("nclients", Value::Int(i64::try_from(ORDER_CONNECTIONS)?)),
            ],
            1,
            logs,
        )
        .await?;
        let (b_orders, b_coupons) = progress(db, base_set).await?;
        let transactions = i64::try_from(b.requests)?;
        // The bare pay UPDATE leaves the coupon alone.
        let coupons_follow = base_set.shape == Shape::PendingPayment || b_coupons == b_orders;
        let base_ok = b_orders == transactions
            && coupons_follow
            && b_orders < i64::try_from(base_set.rows)? + 1;
        let row = Row {
            store,
            name: format!("POST {action}"),
            connections: ORDER_CONNECTIONS,
            check: format!(
                "{}: {orders} orders and {coupons} coupons moved for {answered} 2xx (+1 probe) of {rows_made} rows; baseline {b_orders} rows for {transactions} transactions",
                if api_ok && base_ok { "ok" } else { "FAILED" }
            ),
            ok: api_ok && base_ok,
            api: m,
            baseline: Some((format!("bare SQL ({script})"), b.clone())),
        };
        say(&row);
        rows.push(row);
        if *action == "pay" {
            let row = hot_pair_row(store, base, scripts, setup, seconds, &api_env).await?;
            say(&row);
            rows.push(row);
            let row = pay_writes_row(store, url, scripts, logs, setup, seconds, b).await?;
            say(&row);
            rows.push(row);
        }
    }

    // New orders carried as lines: one line, then fifty.
    if wanted("orders") {
        let row = order_lines_pair_row(store, base, scripts, setup, seconds, &api_env).await?;
        say(&row);
        rows.push(row);
    }

    // A refund of one unit beside the whole-order refund.
    if wanted("refunds") {
        let row = refund_pair_row(
            store, base, &client, token, scripts, setup, seconds, &api_env,
        )
        .await?;
        say(&row);
        rows.push(row);
    }

    // The console's order page with its health check.
    if wanted("page") {
        probe(
            &client,
            client
                .get(format!(
                    "{base}/console/orders/{}0?check=1",
                    setup.views.prefix
                ))
                .header(reqwest::header::COOKIE, &setup.cookie),
            200,
            "console order page",
        )
        .await?;
        let m = wrk(
            &scripts.join("order_page.lua"),
            base,
            ORDER_CONNECTIONS,
            seconds,
            api_env(&[
                ("CK_PREFIX", setup.views.prefix.to_string()),
                ("CK_ROWS", setup.views.rows.to_string()),
                ("CK_COOKIE", setup.cookie.clone()),
                ("CK_RUN", store.name().to_string()),
            ]),
        )
        .await?;
        let views = i64::try_from(setup.views.rows)?;
        let b = baseline(
            store,
            url,
            &scripts.join("bare_order_page.sql"),
            ORDER_CONNECTIONS,
            seconds,
            &[("rows", Value::Int(views))],
            views,
            logs,
        )
        .await?;
        let row = Row {
            store,
            name: "console order page + check".into(),
            connections: ORDER_CONNECTIONS,
            ok: m.failed == 0 && b.failed == 0,
            check: format!("{} non-2xx, {} failed reads", m.failed, b.failed),
            api: m,
            baseline: Some(("bare reads (bare_order_page.sql)".into(), b)),
        };
        say(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The environment of a wrk run: the token and the row's variables.
type ApiEnv<'a> = dyn Fn(&[(&str, String)]) -> Vec<(String, String)> + 'a;

/// Connections of the hot-row pair.
const PAIR_CONNECTIONS: usize = 64;

/// How often the wait-event sample looks at the active backends.
const WAIT_SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// What the active backends of the database were waiting on during a run:
/// samples of `pg_stat_activity` every [`WAIT_SAMPLE_EVERY`], by
/// `wait_event_type:wait_event` (`CPU` when not waiting).
#[derive(Debug, Default, Clone)]
pub(crate) struct WaitSample {
    pub(crate) by_event: std::collections::BTreeMap<String, u64>,
}

impl WaitSample {
    fn total(&self) -> u64 {
        self.by_event.values().sum()
    }

    /// The share of samples waiting on a lock (`Lock:*`).
    pub(crate) fn lock_share(&self) -> f64 {
        let locks: u64 = self
            .by_event
            .iter()
            .filter(|(k, _)| k.starts_with("Lock:"))
            .map(|(_, n)| n)
            .sum();
        locks as f64 / self.total().max(1) as f64
    }

    /// The five most frequent, as `event share%`.
    pub(crate) fn top(&self) -> String {
        let mut v: Vec<(&String, &u64)> = self.by_event.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter()
            .take(5)
            .map(|(k, n)| {
                format!(
                    "{k} {:.0}%",
                    **n as f64 * 100.0 / self.total().max(1) as f64
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Samples the waits of the other active backends until `stop` is set
/// (PostgreSQL only; bounded by the run it watches).
async fn sample_waits(db: Db, stop: Arc<std::sync::atomic::AtomicBool>) -> WaitSample {
    let mut sample = WaitSample::default();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let rows: std::result::Result<Vec<(Option<String>, Option<String>)>, _> = sqlx::query_as(
            "SELECT CAST(wait_event_type AS TEXT), CAST(wait_event AS TEXT) FROM pg_stat_activity
             WHERE state = 'active' AND datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_all(db.pool())
        .await;
        for (kind, event) in rows.unwrap_or_default() {
            let key = match (kind, event) {
                (Some(k), Some(e)) => format!("{k}:{e}"),
                (Some(k), None) => k,
                _ => "CPU".to_string(),
            };
            *sample.by_event.entry(key).or_default() += 1;
        }
        tokio::time::sleep(WAIT_SAMPLE_EVERY).await;
    }
    sample
}

/// One wrk run of a hot-row pair at [`PAIR_CONNECTIONS`], with the wait
/// events of the database's active backends sampled throughout on
/// PostgreSQL (`None` on SQLite).
async fn wrk_sampled(
    store: Store,
    db: &Db,
    script: &Path,
    base: &str,
    seconds: u64,
    env: Vec<(String, String)>,
) -> Result<(Measure, Option<WaitSample>)> {
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler =
        (store == Store::Postgres).then(|| tokio::spawn(sample_waits(db.clone(), stop.clone())));
    let measured = wrk(script, base, PAIR_CONNECTIONS, seconds, env).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let waits = match sampler {
        Some(h) => Some(h.await.map_err(|e| e.to_string())?),
        None => None,
    };
    Ok((measured?, waits))
}

/// The lock shares of a pair's two runs and the hot run's top waits, for
/// the row's check (empty without samples).
fn pair_waits(hot: Option<&WaitSample>, spread: Option<&WaitSample>) -> String {
    match (hot, spread) {
        (Some(h), Some(s)) => format!(
            "; Lock:* {:.0}% of active samples hot, {:.0}% spread (hot: {})",
            h.lock_share() * 100.0,
            s.lock_share() * 100.0,
            h.top()
        ),
        _ => String::new(),
    }
}

/// The row "pay, one hot template vs 64": the same pre-made orders paid at
/// 64 connections, once with every coupon from one template and once
/// dealt over 64 templates; the ratio is hot over spread. On PostgreSQL the
/// active backends' wait events are sampled during each run, and the
/// check gives the share waiting on a lock.
async fn hot_pair_row(
    store: Store,
    base: &str,
    scripts: &Path,
    setup: &Setup,
    seconds: u64,
    api_env: &ApiEnv<'_>,
) -> Result<Row> {
    let mut measured = Vec::new();
    for set in [&setup.hot_pay, &setup.spread_pay] {
        let (m, waits) = wrk_sampled(
            store,
            &setup.db,
            &scripts.join("order_action.lua"),
            base,
            seconds,
            api_env(&[
                ("CK_PREFIX", set.prefix.to_string()),
                ("CK_ACTION", "pay".to_string()),
                ("CK_RUN", format!("{}-pair", store.name())),
            ]),
        )
        .await?;
        let (orders, coupons) = settled(|| progress_by_prefix(&setup.db, set)).await?;
        measured.push((m, waits, orders, coupons));
    }
    let mut it = measured.into_iter();
    let (hot, hot_waits, hot_orders, hot_coupons) = it.next().ok_or("the hot run")?;
    let (spread, spread_waits, s_orders, s_coupons) = it.next().ok_or("the spread run")?;
    let ok = hot_orders == hot_coupons
        && s_orders == s_coupons
        && hot_orders >= i64::try_from(hot.requests.saturating_sub(hot.failed))?
        && s_orders >= i64::try_from(spread.requests.saturating_sub(spread.failed))?;
    let waits = pair_waits(hot_waits.as_ref(), spread_waits.as_ref());
    Ok(Row {
        store,
        name: "pay, one template vs 64".into(),
        connections: PAIR_CONNECTIONS,
        ok,
        check: format!(
            "{}: {hot_orders} + {s_orders} orders paid with their coupons used{waits}",
            if ok { "ok" } else { "FAILED" }
        ),
        api: hot,
        baseline: Some((
            format!("the same over {SPREAD_TEMPLATES} templates"),
            spread,
        )),
    })
}

/// Orders made with `prefix` and their lines, from one statement.
async fn orders_and_lines(db: &Db, prefix: &str) -> Result<(i64, i64)> {
    let counted: (i64, i64) = sqlx::query_as(
        "SELECT CAST(COUNT(DISTINCT o.order_no) AS BIGINT), CAST(COUNT(l.line_no) AS BIGINT)
         FROM orders o LEFT JOIN order_lines l ON l.order_no = o.order_no
         WHERE o.order_no LIKE $1",
    )
    .bind(format!("{prefix}%"))
    .fetch_one(db.pool())
    .await?;
    Ok(counted)
}

/// `POST /orders` of one line beside the same of 50 lines, each at
/// [`ORDER_CONNECTIONS`]: what a cart's size costs an order.
async fn order_lines_pair_row(
    store: Store,
    base: &str,
    scripts: &Path,
    setup: &Setup,
    seconds: u64,
    api_env: &ApiEnv<'_>,
) -> Result<Row> {
    let mut measured = Vec::new();
    for (lines, prefix) in [(1_i64, "l1-"), (50, "l50-")] {
        let m = wrk(
            &scripts.join("create_order.lua"),
            base,
            ORDER_CONNECTIONS,
            seconds,
            api_env(&[
                ("CK_PREFIX", prefix.to_string()),
                ("CK_LINES", lines.to_string()),
                ("CK_RUN", format!("{}-lines{lines}", store.name())),
            ]),
        )
        .await?;
        let (orders, stored_lines) = settled(|| orders_and_lines(&setup.db, prefix)).await?;
        let created = i64::try_from(m.requests.saturating_sub(m.failed))?;
        let ok = orders >= created && stored_lines == orders * lines;
        measured.push((m, orders, stored_lines, ok));
    }
    let mut it = measured.into_iter();
    let (one, one_orders, one_lines, one_ok) = it.next().ok_or("the 1-line run")?;
    let (fifty, fifty_orders, fifty_lines, fifty_ok) = it.next().ok_or("the 50-line run")?;
    let ok = one_ok && fifty_ok;
    Ok(Row {
        store,
        name: "POST orders, 1 line vs 50".into(),
        connections: ORDER_CONNECTIONS,
        ok,
        check: format!(
            "{}: {one_orders} orders with {one_lines} lines, {fifty_orders} orders with {fifty_lines} lines",
            if ok { "ok" } else { "FAILED" }
        ),
        api: one,
        baseline: Some(("the same of 50 lines".into(), fifty)),
    })
}

/// Refunds of a set's orders (whole ones, or by line), and its orders in
/// `status`, from one statement.
async fn refunds_of_set(db: &Db, prefix: &str, whole: bool, status: &str) -> Result<(i64, i64)> {
    let counted: (i64, i64) = sqlx::query_as(
        "SELECT
             (SELECT CAST(COUNT(*) AS BIGINT) FROM order_refunds
              WHERE order_no LIKE $1 AND whole = $2),
             (SELECT CAST(COUNT(*) AS BIGINT) FROM orders WHERE order_no LIKE $1 AND status = $3)",
    )
    .bind(format!("{prefix}%"))
    .bind(i64::from(whole))
    .bind(status)
    .fetch_one(db.pool())
    .await?;
    Ok(counted)
}

/// A refund by line of one unit of a paid order's three lines, beside the
/// whole-order refund of the same kind of order, each over its own
/// pre-made orders at [`ORDER_CONNECTIONS`]: what refunding by line costs
/// against the refund callers had before.
#[allow(clippy::too_many_arguments)]
async fn refund_pair_row(
    store: Store,
    base: &str,
    client: &reqwest::Client,
    token: &str,
    scripts: &Path,
    setup: &Setup,
    seconds: u64,
    api_env: &ApiEnv<'_>,
) -> Result<Row> {
    let (partial, whole) = &setup.refunds;
    probe(
        client,
        client
            .post(format!("{base}/api/v1/orders/{}0/refunds", partial.prefix))
            .bearer_auth(token)
            .json(&serde_json::json!({"refund_id": "r1", "reason": "probe",
                "lines": [{"line_id": "a", "quantity": 1}]})),
        201,
        "refund by line",
    )
    .await?;
    probe(
        client,
        client
            .post(format!("{base}/api/v1/orders/{}0/refund", whole.prefix))
            .bearer_auth(token)
            .json(&serde_json::json!({"reason": "probe"})),
        200,
        "whole refund",
    )
    .await?;
    let mut measured = Vec::new();
    for (set, mode, is_whole, status) in [
        (partial, "partial", false, "paid"),
        (whole, "whole", true, "refunded"),
    ] {
        let m = wrk(
            &scripts.join("refund.lua"),
            base,
            ORDER_CONNECTIONS,
            seconds,
            api_env(&[
                ("CK_PREFIX", set.prefix.to_string()),
                ("CK_MODE", mode.to_string()),
                ("CK_RUN", format!("{}-refund-{mode}", store.name())),
            ]),
        )
        .await?;
        let (refunds, orders) =
            settled(|| refunds_of_set(&setup.db, set.prefix, is_whole, status)).await?;
        let answered = i64::try_from(m.requests.saturating_sub(m.failed))?;
        let rows = i64::try_from(set.rows)?;
        // The probe made one refund more; a partly refunded order stays
        // paid, a wholly refunded one gives its coupon back.
        let moved = if is_whole {
            let (refunded, available) = settled(|| progress(&setup.db, set)).await?;
            refunded == refunds && available == refunds && orders == refunds
        } else {
            orders == rows + 1
        };
        let ok = refunds > answered && refunds <= rows + 1 && moved;
        measured.push((m, refunds, ok));
    }
    let mut it = measured.into_iter();
    let (part, part_refunds, part_ok) = it.next().ok_or("the partial run")?;
    let (all, all_refunds, all_ok) = it.next().ok_or("the whole run")?;
    let ok = part_ok && all_ok;
    Ok(Row {
        store,
        name: "POST refunds, 1 unit vs whole".into(),
        connections: ORDER_CONNECTIONS,
        ok,
        check: format!(
            "{}: {part_refunds} refunds by line, {all_refunds} whole refunds (+1 probe each) of {} rows each",
            if ok { "ok" } else { "FAILED" },
            partial.rows
        ),
        api: part,
        baseline: Some(("the whole-order refund".into(), all)),
    })
}

/// Claimed (the shards' sum), coupons and stock of several templates
/// together, from one statement.
async fn stock_of_all(db: &Db, templates: &[TemplateId]) -> Result<(i64, i64, i64)> {
    let list = (1..=templates.len())
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT
             (SELECT CAST(COALESCE(SUM(claimed), 0) AS BIGINT) FROM template_stock_shards WHERE template_id IN ({list})),
             (SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id IN ({list})),
             (SELECT CAST(COALESCE(SUM(capacity), 0) AS BIGINT) FROM template_stock_shards WHERE template_id IN ({list}))"
    );
    let mut q = sqlx::query_as(&sql);
    for t in templates {
        q = q.bind(t);
    }
    Ok(q.fetch_one(db.pool()).await?)
}

/// The row "claim, one template vs 64": claims by new users at 64
/// connections, once all on one template and once dealt over 64
/// templates; the ratio is hot over spread. On PostgreSQL the wait events
/// are sampled as in the pay pair. Checked after each run: claimed ==
/// coupons <= stock, and at least one coupon per 201.
async fn claim_pair_row(
    store: Store,
    base: &str,
    scripts: &Path,
    setup: &Setup,
    seconds: u64,
    api_env: &ApiEnv<'_>,
) -> Result<Row> {
    let mut measured = Vec::new();
    for (name, templates) in [("hot", &setup.claim_hot), ("spread", &setup.claim_spread)] {
        let (_, before, _) = stock_of_all(&setup.db, templates).await?;
        let (m, waits) = wrk_sampled(
            store,
            &setup.db,
            &scripts.join("claim.lua"),
            base,
            seconds,
            api_env(&[
                ("CK_TEMPLATES", templates.join(",")),
                ("CK_RUN", format!("{}-pair-{name}", store.name())),
            ]),
        )
        .await?;
        let (claimed, coupons, stock) = settled(|| stock_of_all(&setup.db, templates)).await?;
        let created = i64::try_from(m.requests.saturating_sub(m.failed))?;
        let ok = claimed == coupons && coupons <= stock && coupons - before >= created;
        measured.push((m, waits, coupons - before, ok));
    }
    let mut it = measured.into_iter();
    let (hot, hot_waits, hot_coupons, hot_ok) = it.next().ok_or("the hot run")?;
    let (spread, spread_waits, s_coupons, s_ok) = it.next().ok_or("the spread run")?;
    let ok = hot_ok && s_ok;
    let waits = pair_waits(hot_waits.as_ref(), spread_waits.as_ref());
    Ok(Row {
        store,
        name: "claim, one template vs 64".into(),
        connections: PAIR_CONNECTIONS,
        ok,
        check: format!(
            "{}: {hot_coupons} + {s_coupons} coupons, claimed = coupons <= stock{waits}",
            if ok { "0 oversold" } else { "FAILED" }
        ),
        api: hot,
        baseline: Some((
            format!("the same over {SPREAD_TEMPLATES} templates"),
            spread,
        )),
    })
}

/// The row "pay's writes, bare SQL": `pay_writes.sql` (everything pay
/// writes, hand-written, no HTTP and no reads) against the bare UPDATE just
/// measured for the pay row. Its ratio is the most pay can reach while it
/// writes what it promises; pay's own ratio is read against it.
async fn pay_writes_row(
    store: Store,
    url: &str,
    scripts: &Path,
    logs: &Path,
    setup: &Setup,
    seconds: u64,
    bare_update: Measure,
) -> Result<Row> {
    let set = &setup.pay_writes;
    let m = baseline(
        store,
        url,
        &scripts.join("pay_writes.sql"),
        ORDER_CONNECTIONS,
        seconds,
        &[
            ("now", Value::Int(setup.now_ms)),
            ("nclients", Value::Int(i64::try_from(ORDER_CONNECTIONS)?)),
        ],
        1,
        logs,
    )
    .await?;
    let (orders, coupons) = progress(&setup.db, set).await?;
    let transactions = i64::try_from(m.requests)?;
    let ok = orders == transactions && coupons == orders && orders < i64::try_from(set.rows)? + 1;
    Ok(Row {
        store,
        name: "pay's writes, bare SQL".into(),
        connections: ORDER_CONNECTIONS,
        check: format!(
            "{}: {orders} orders and {coupons} coupons for {transactions} transactions",
            if ok { "ok" } else { "FAILED" }
        ),
        ok,
        api: m,
        baseline: Some(("bare SQL (bare_pay.sql)".into(), bare_update)),
    })
}

fn print_table(rows: &[Row]) {
    if rows.is_empty() {
        return;
    }
    println!();
    println!(
        "| store | row | conns | req/s | p50 ms | p99 ms | non-2xx | baseline | req/s | p50 ms | p99 ms | ratio | check |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let (bname, brate, bp50, bp99, ratio) = match &r.baseline {
            Some((name, b)) => (
                name.clone(),
                format!("{:.0}", b.rate()),
                format!("{:.2}", b.p50_ms),
                format!("{:.2}", b.p99_ms),
                format!("{:.2}x", r.api.rate() / b.rate().max(f64::MIN_POSITIVE)),
            ),
            None => ("-".into(), "-".into(), "-".into(), "-".into(), "-".into()),
        };
        println!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {} |",
            r.store.name(),
            r.name,
            r.connections,
            r.api.rate(),
            r.api.p50_ms,
            r.api.p99_ms,
            r.api.failed,
            bname,
            brate,
            bp50,
            bp99,
            ratio,
            r.check
        );
    }
    // The targets, per store.
    for store in [Store::Sqlite, Store::Postgres] {
        let claim = |c: usize| {
            rows.iter()
                .find(|r| r.store == store && r.name.starts_with("claim") && r.connections == c)
        };
        let mut notes = Vec::new();
        if let (Some(one), Some(many)) = (claim(1), claim(64)) {
            let vs = many
                .baseline
                .as_ref()
                .map(|(_, b)| many.api.rate() / b.rate().max(f64::MIN_POSITIVE))
                .unwrap_or(0.0);
            notes.push(format!(
                "claim@64 {vs:.2}x naive (target >= 3x: {}), claim@64 / claim@1 {:.2} (no collapse: {})",
                if vs >= 3.0 { "met" } else { "MISSED" },
                many.api.rate() / one.api.rate().max(f64::MIN_POSITIVE),
                if many.api.rate() >= one.api.rate() { "met" } else { "MISSED" }
            ));
        }
        if let Some(pay) = rows
            .iter()
            .find(|r| r.store == store && r.name == "POST pay")
            && let Some((_, b)) = &pay.baseline
        {
            let vs = pay.api.rate() / b.rate().max(f64::MIN_POSITIVE);
            notes.push(format!(
                "pay {vs:.2}x bare UPDATE (target >= 0.5x: {})",
                if vs >= 0.5 { "met" } else { "MISSED" }
            ));
            if let Some(writes) = rows
                .iter()
                .find(|r| r.store == store && r.name == "pay's writes, bare SQL")
            {
                notes.push(format!(
                    "pay's writes as bare SQL {:.2}x bare UPDATE, pay {:.2}x its writes",
                    writes.api.rate() / b.rate().max(f64::MIN_POSITIVE),
                    pay.api.rate() / writes.api.rate().max(f64::MIN_POSITIVE)
                ));
            }
        }
        if !notes.is_empty() {
            println!("\n{} targets: {}", store.name(), notes.join("; "));
        }
    }
}
