//! `bench bulk`: the operators' three bulk jobs timed end to
//! end in the real `couponkeeper serve`, each beside the latency of a
//! customer's claim-and-pay measured meanwhile and while idle.
//!
//! Per store, on a fresh database, through the HTTP API with the server's
//! own background jobs and their production pacing:
//! - `generate codes`: `POST /templates/{id}/code-batches` of `--count`
//!   codes (length 12), until `GET /code-batches/{id}` says `done`;
//! - `bulk issue`: `POST /templates/{id}/bulk-issues` with a CSV of
//!   `--count` new user ids, until `GET /jobs/{id}` says `done`;
//! - `bulk void`: `POST /templates/{id}/bulk-void` `{reason}` of that
//!   template (the `--count` coupons just issued), until `done`.
//!
//! The time runs from the request to the first poll (every
//! [`POLL_INTERVAL`]) that sees the job done. Meanwhile a probe, one
//! customer at a time with [`ProbeArgs::probe_pause_ms`] between them,
//! claims a coupon of its own template (`POST /users/{u}/coupons`),
//! places an order with it (`POST /orders`) and pays it (`POST
//! /orders/{no}/pay`): its p50/p99 during each job is printed beside the
//! p99 of the same probe run alone before the jobs (`idle`) and after
//! them (`idle again`, to show the drift of a noisy machine). Read the
//! ratio `p99 / idle p99`.
//!
//! Checked (a failed check exits non-zero): every code generated, every
//! user issued one coupon (none skipped or failed), every one of those
//! coupons voided, and no probe request refused.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::server::{Server, server_binary};
use crate::scratch::Target;
use crate::stats::{load_average, ms, percentile};
use crate::{Result, Store, StoreArg, stores_of};

/// How often a job's progress is read.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// Longest a job may run before the bench gives up on it.
const JOB_TIMEOUT: Duration = Duration::from_secs(3_600);
/// Most items per job accepted in `--count` (the bulk-issue file's limit).
const MAX_COUNT: usize = 1_000_000;
/// Longest accepted `--idle-seconds`.
const MAX_IDLE_SECONDS: u64 = 300;
/// One probe request's timeout: a probe that waits this long is a finding,
/// not a hang of the bench.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(clap::Args, Clone)]
pub(crate) struct BulkArgs {
    /// Which store(s) to measure.
    #[arg(long, value_enum, default_value_t = StoreArg::Both)]
    store: StoreArg,
    /// Codes generated, users issued to and coupons voided per job.
    #[arg(long, default_value_t = 100_000)]
    count: usize,
    #[command(flatten)]
    probe: ProbeArgs,
    /// The couponkeeper binary to serve (default: the one next to this
    /// executable; build it first with `cargo build --release --bin
    /// couponkeeper`).
    #[arg(long)]
    server: Option<PathBuf>,
}

#[derive(clap::Args, Clone, Copy)]
pub(crate) struct ProbeArgs {
    /// Seconds of the idle probe before and after the jobs.
    #[arg(long, default_value_t = 15)]
    idle_seconds: u64,
    /// Pause between two probe customers, in milliseconds.
    #[arg(long, default_value_t = 20)]
    probe_pause_ms: u64,
}

/// One line of the table.
struct Row {
    store: Store,
    name: &'static str,
    items: usize,
    elapsed: Duration,
    probe: Probed,
    idle_p99: Duration,
    check: String,
    ok: bool,
}

/// What the probe saw over one phase.
#[derive(Default)]
struct Probed {
    samples: Vec<Duration>,
    refused: usize,
    first_refusal: Option<String>,
}

pub(crate) async fn bulk(args: BulkArgs) -> Result<()> {
    if args.count == 0 || args.count > MAX_COUNT {
        return Err(format!("--count must be between 1 and {MAX_COUNT}").into());
    }
    if args.probe.idle_seconds == 0 || args.probe.idle_seconds > MAX_IDLE_SECONDS {
        return Err(format!("--idle-seconds must be between 1 and {MAX_IDLE_SECONDS}").into());
    }
    sqlx::any::install_default_drivers();
    let bin = server_binary(args.server.as_deref())?;
    eprintln!(
        "bench bulk: {} items per job, server {}, load average {}",
        args.count,
        bin.display(),
        load_average()
    );
    let mut rows = Vec::new();
    for &store in stores_of(args.store) {
        let (target, url) = Target::create(store).await?;
        let logs = std::env::temp_dir().join(format!(
            "ck_bench_bulk_{}_{}",
            std::process::id(),
            store.name()
        ));
        std::fs::create_dir_all(&logs)?;
        let measured = measure_store(store, &url, &args, &bin, &logs).await;
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
            "check failed: {} {}: {}",
            bad.store.name(),
            bad.name,
            bad.check
        )
        .into());
    }
    Ok(())
}

/// The API as the bench calls it: base URL, bearer token, one client.
#[derive(Clone)]
struct Api {
    base: String,
    token: String,
    client: reqwest::Client,
}

impl Api {
    /// Sends `method path` with the token, a fresh Idempotency-Key on a
    /// POST, and `body` (JSON, or CSV when it is a string); answers the
    /// status and the JSON body (`Null` when there is none).
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Body>,
    ) -> Result<(u16, Value)> {
        let mut req = self
            .client
            .request(method.clone(), format!("{}{}", self.base, path))
            .bearer_auth(&self.token)
            .timeout(PROBE_TIMEOUT);
        if method == reqwest::Method::POST {
            req = req.header(
                "Idempotency-Key",
                format!("{:032x}", rand::random::<u128>()),
            );
        }
        req = match body {
            Some(Body::Json(v)) => req.json(&v),
            Some(Body::Csv(text)) => req.header("Content-Type", "text/csv").body(text),
            None => req,
        };
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let text = resp.text().await?;
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Ok((status, value))
    }

    async fn post(&self, path: &str, body: Body) -> Result<(u16, Value)> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Result<(u16, Value)> {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// A POST that must answer `want`; its JSON body.
    async fn expect(&self, path: &str, body: Body, want: u16) -> Result<Value> {
        let (status, value) = self.post(path, body).await?;
        if status != want {
            return Err(format!("POST {path}: {status} {value}").into());
        }
        Ok(value)
    }
}

enum Body {
    Json(Value),
    Csv(String),
}

async fn measure_store(
    store: Store,
    url: &str,
    args: &BulkArgs,
    bin: &std::path::Path,
    logs: &std::path::Path,
) -> Result<Vec<Row>> {
    // The server migrates the fresh database itself; everything else goes
    // through the API.
    let token = format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    );
    let mut server = Server::start(bin, url, &token, logs.join("serve.log")).await?;
    let api = Api {
        base: format!("{}/api/v1", server.base_url),
        token,
        client: reqwest::Client::new(),
    };
    let rows = run_jobs(store, args, &api).await;
    server.stop();
    let problems = server.log_problems();
    if !problems.is_empty() {
        eprintln!(
            "  {} server log: {} WARN/ERROR line(s), first: {}",
            store.name(),
            problems.len(),
            problems[0]
        );
    }
    rows
}

/// A template through the API: fixed 5.00 off, valid a week after the
/// claim, `stock` (None: unlimited), one per user.
async fn template(api: &Api, name: &str, stock: Option<usize>) -> Result<String> {
    let body = json!({
        "name": format!("bench bulk {name}"),
        "kind": "fixed",
        "value_cents": 500,
        "min_order_cents": 0,
        "valid_seconds": 7 * 24 * 3600,
        "total_stock": stock,
        "per_user_limit": 1,
    });
    let v = api.expect("/templates", Body::Json(body), 201).await?;
    v["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("POST /templates answered no id: {v}").into())
}

async fn run_jobs(store: Store, args: &BulkArgs, api: &Api) -> Result<Vec<Row>> {
    let n = args.count;
    let probe_template = template(api, "probe", None).await?;
    let code_template = template(api, "codes", None).await?;
    let issue_template = template(api, "issue", Some(n)).await?;
    let probe = Prober {
        api: api.clone(),
        template: probe_template,
        pause: Duration::from_millis(args.probe.probe_pause_ms),
        prefix: format!("p{:08x}", rand::random::<u32>()),
    };
    let idle_for = Duration::from_secs(args.probe.idle_seconds);
    let idle = probe.alone(idle_for, "idle").await?;
    let idle_p99 = p99(&idle);
    let mut rows = vec![row(store, "idle", 0, idle_for, idle, idle_p99, Ok(()))];

    // Codes.
    let body = Body::Json(json!({"count": n, "prefix": "BK", "length": 12}));
    let path = format!("/templates/{code_template}/code-batches");
    let (elapsed, probed, job) = probe
        .job("codes", api, &path, body, "/code-batches")
        .await?;
    let check = match job["generated"].as_u64() {
        Some(g) if g == n as u64 => Ok(()),
        other => Err(format!("generated {other:?} of {n}")),
    };
    let name = "generate codes";
    rows.push(row(store, name, n, elapsed, probed, idle_p99, check));

    // Bulk issue to n new users.
    let mut csv = String::with_capacity(n * 16 + 8);
    csv.push_str("user_id\n");
    for i in 0..n {
        csv.push_str(&format!("bulk-{i:07}\n"));
    }
    let path = format!("/templates/{issue_template}/bulk-issues");
    let (elapsed, probed, job) = probe
        .job("issue", api, &path, Body::Csv(csv), "/jobs")
        .await?;
    let check = exact_job(&job, n);
    rows.push(row(
        store,
        "bulk issue",
        n,
        elapsed,
        probed,
        idle_p99,
        check,
    ));

    // Bulk void of what was just issued.
    let body = Body::Json(json!({"reason": "bench bulk: voiding the issued coupons"}));
    let path = format!("/templates/{issue_template}/bulk-void");
    let (elapsed, probed, job) = probe.job("void", api, &path, body, "/jobs").await?;
    let mut check = exact_job(&job, n);
    if check.is_ok() {
        let (_, t) = api.get(&format!("/templates/{issue_template}")).await?;
        let counts = (&t["counts"]["invalidated"], &t["counts"]["available"]);
        if counts.0.as_u64() != Some(n as u64) || counts.1.as_u64() != Some(0) {
            check = Err(format!(
                "after the void the template counts {} invalidated and {} available",
                counts.0, counts.1
            ));
        }
    }
    rows.push(row(store, "bulk void", n, elapsed, probed, idle_p99, check));

    let again = probe.alone(idle_for, "idle again").await?;
    rows.push(row(
        store,
        "idle again",
        0,
        idle_for,
        again,
        idle_p99,
        Ok(()),
    ));
    Ok(rows)
}

/// A bulk job that handled every one of its `n` lines with success.
fn exact_job(job: &Value, n: usize) -> std::result::Result<(), String> {
    let n = n as u64;
    let field = |k: &str| job[k].as_u64();
    if field("total") == Some(n) && field("succeeded") == Some(n) && field("skipped") == Some(0) {
        Ok(())
    } else {
        Err(format!(
            "total {:?}, succeeded {:?}, skipped {:?}, failed {:?}, reasons {}",
            field("total"),
            field("succeeded"),
            field("skipped"),
            field("failed"),
            job["reasons"]
        ))
    }
}

/// Polls `path` until its `status` is `done`; the last answer. `failed`,
/// an error answer or [`JOB_TIMEOUT`] ends it with an error.
async fn wait_done(api: &Api, path: &str) -> Result<Value> {
    let started = Instant::now();
    // Bounded by JOB_TIMEOUT.
    loop {
        let (status, v) = api.get(path).await?;
        if status != 200 {
            return Err(format!("GET {path}: {status} {v}").into());
        }
        match v["status"].as_str() {
            Some("done") => return Ok(v),
            Some("failed") => return Err(format!("GET {path}: the job failed: {v}").into()),
            _ => {}
        }
        if started.elapsed() > JOB_TIMEOUT {
            return Err(format!("GET {path}: not done after {JOB_TIMEOUT:?}: {v}").into());
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// The claim-and-pay probe: one customer at a time.
struct Prober {
    api: Api,
    template: String,
    pause: Duration,
    /// Makes the probe's user ids and order numbers unique to this run.
    prefix: String,
}

impl Prober {
    /// The probe alone for `for_`.
    async fn alone(&self, for_: Duration, phase: &str) -> Result<Probed> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(for_).await;
            flag.store(true, Ordering::Relaxed);
        });
        let probed = self.run(phase, &stop).await;
        timer.abort();
        probed
    }

    /// The probe while `job` runs: the job's time, the probe's samples and
    /// the job's answer.
    async fn during<F>(&self, phase: &str, job: F) -> Result<(Duration, Probed, Value)>
    where
        F: std::future::Future<Output = Result<Value>>,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let job = async {
            let r = job.await;
            let elapsed = started.elapsed();
            stop.store(true, Ordering::Relaxed);
            r.map(|v| (elapsed, v))
        };
        let (job, probed) = tokio::join!(job, self.run(phase, &stop));
        let (elapsed, value) = job?;
        Ok((elapsed, probed?, value))
    }

    /// The probe while a job runs: `POST start` with `body` (202), then
    /// `GET {poll}/{id}` until done.
    async fn job(
        &self,
        phase: &str,
        api: &Api,
        start: &str,
        body: Body,
        poll: &str,
    ) -> Result<(Duration, Probed, Value)> {
        self.during(phase, async {
            let started = api.expect(start, body, 202).await?;
            let id = started["id"]
                .as_str()
                .ok_or_else(|| format!("POST {start} answered no id: {started}"))?;
            wait_done(api, &format!("{poll}/{id}")).await
        })
        .await
    }

    /// Customers until `stop`; each one's claim, order and payment timed
    /// together.
    async fn run(&self, phase: &str, stop: &AtomicBool) -> Result<Probed> {
        let mut probed = Probed::default();
        let mut i = 0u64;
        // Bounded by `stop`, which the caller's timer or job sets.
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let user = format!("{}-{phase}-{i}", self.prefix).replace(' ', "-");
            let started = Instant::now();
            match self.customer(&user).await {
                Ok(()) => probed.samples.push(started.elapsed()),
                Err(e) => {
                    probed.refused += 1;
                    probed.first_refusal.get_or_insert(e.to_string());
                }
            }
            tokio::time::sleep(self.pause).await;
        }
        Ok(probed)
    }

    async fn customer(&self, user: &str) -> Result<()> {
        let api = &self.api;
        let coupon = api
            .expect(
                &format!("/users/{user}/coupons"),
                Body::Json(json!({"template_id": self.template})),
                201,
            )
            .await?;
        let coupon_id = coupon["id"].as_str().ok_or("a claim without an id")?;
        let order_no = format!("o-{user}");
        let order = json!({
            "order_no": order_no,
            "user_id": user,
            "kind": "normal",
            "category": "general",
            "total_cents": 10_000,
            "coupon_id": coupon_id,
        });
        api.expect("/orders", Body::Json(order), 201).await?;
        api.expect(
            &format!("/orders/{order_no}/pay"),
            Body::Json(json!({})),
            200,
        )
        .await?;
        Ok(())
    }
}

fn p99(p: &Probed) -> Duration {
    let mut s = p.samples.clone();
    s.sort_unstable();
    percentile(&s, 0.99)
}

fn row(
    store: Store,
    name: &'static str,
    items: usize,
    elapsed: Duration,
    probe: Probed,
    idle_p99: Duration,
    check: std::result::Result<(), String>,
) -> Row {
    let (check, ok) = match (check, probe.refused) {
        (Err(e), _) => (e, false),
        (Ok(()), 0) => ("ok".to_string(), true),
        (Ok(()), n) => (
            format!(
                "{n} probe customer(s) refused, first: {}",
                probe.first_refusal.as_deref().unwrap_or("")
            ),
            false,
        ),
    };
    Row {
        store,
        name,
        items,
        elapsed,
        probe,
        idle_p99,
        check,
        ok,
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "\n{:<8} {:<15} {:>8} {:>9} {:>9} {:>7} {:>9} {:>9} {:>10}  check",
        "store", "job", "items", "seconds", "items/s", "probes", "p50 ms", "p99 ms", "p99/idle"
    );
    for r in rows {
        let mut s = r.probe.samples.clone();
        s.sort_unstable();
        let p99 = percentile(&s, 0.99);
        let rate = if r.items == 0 {
            "-".to_string()
        } else {
            format!("{:.0}", r.items as f64 / r.elapsed.as_secs_f64())
        };
        let ratio = if r.idle_p99.is_zero() {
            "-".to_string()
        } else {
            format!("{:.2}x", p99.as_secs_f64() / r.idle_p99.as_secs_f64())
        };
        println!(
            "{:<8} {:<15} {:>8} {:>9.1} {:>9} {:>7} {:>9.1} {:>9.1} {:>10}  {}",
            r.store.name(),
            r.name,
            r.items,
            r.elapsed.as_secs_f64(),
            rate,
            s.len(),
            ms(percentile(&s, 0.5)),
            ms(p99),
            ratio,
            r.check
        );
    }
}
