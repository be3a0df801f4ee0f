//! `bench reminders`: pre-expiry reminders planned on a manual clock, then
//! delivered to a fast and a slow webhook receiver.
//!
//! Reminders: N coupons of M users reach the 1d offset over a few hours (a
//! user's coupons about 20 minutes apart plus up to 30 minutes of jitter,
//! wrapping round the spread, so users get one to three slots); the planner
//! runs on a manual clock stepping a minute at a time, each step drained to
//! completion. Every message must be one user-slot pair: the expected pairs
//! are computed independently from the stored coupons with the pure
//! aggregation rule.
//!
//! Delivery: the reminders just planned go to two webhook subscribers that
//! take `reminder.coupons_expiring` (an SMS gateway's share of the events),
//! one answering at once (the baseline) and one after --receiver-delay-ms.
//! Both are real HTTP servers in this process; the dispatcher is the one
//! `serve` runs ([`Dispatcher`]), fanning out every message in the outbox
//! (the reminders and the 100,000 coupon.expired ones, which no subscriber
//! here takes). Each receiver checks every signature and counts distinct
//! message ids; its drain time is when it holds every message.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use couponkeeper::clock::ManualClock;
use couponkeeper::config::Config;
use couponkeeper::server::build_service;
use couponkeeper::service::{Ctx, Service};
use couponkeeper::store::Db;

use crate::data::{create_template, generated_insert, insert_generated, settle};
use crate::scratch::{Target, close_pool};
use crate::stats::load_average;
use crate::{Result, Store, StoreArg, stores_of};

#[derive(clap::Args, Clone)]
pub(crate) struct RemindersArgs {
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

/// The offset the benchmark's coupons cross.
const REMINDER_OFFSET: i64 = 86_400;

pub(crate) async fn reminders(args: RemindersArgs) -> Result<()> {
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
    use couponkeeper::domain::ids::{CouponId, UserId};
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
    let rows: Vec<(UserId, CouponId, i64)> =
        sqlx::query_as("SELECT user_id, id, ends_at FROM coupons WHERE template_id = $1")
            .bind(&tpl)
            .fetch_all(db.pool())
            .await?;
    let mut by_user: std::collections::HashMap<UserId, Vec<DueCoupon>> =
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
