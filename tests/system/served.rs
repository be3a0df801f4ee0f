//! The real `couponkeeper serve` process and a journaled mixed load over
//! HTTP, shared by the crash test (`tests/system/crash.rs`) and the outage tests
//! (`tests/system/outage.rs`).
//!
//! Each load client owns its users and orders, so the answers it was given
//! (its journal) say exactly what the database must hold afterwards: a
//! write is retried with the same `Idempotency-Key` until it gets a
//! definitive answer (connection errors while the server is killed, and
//! 503 while the database is away, are not answers), so no change is left
//! in doubt. [`check_promises`] then compares the database with the
//! journals and checks the invariants that hold whatever the load did.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

/// The bearer token the served process accepts (32+ characters, like a
/// real one; the address is loopback either way).
pub const TOKEN: &str = "crash-test-token-0123456789abcdef0123456789";

/// How long one write may go without a definitive answer before the test
/// fails: far beyond a restart or an outage, so only a server that never
/// comes back (or a request that never ends) reaches it.
pub const WRITE_DEADLINE: Duration = Duration::from_secs(90);

/// Per-request client timeout. A request that takes this long is a hang:
/// the server is meant to answer every request within its database
/// timeouts (see the outage tests' bound).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An integer from the environment, else `default`.
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number")),
        Err(_) => default,
    }
}

/// A free port on 127.0.0.1 (bound and released; the server binds it next).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

/// The `couponkeeper serve` child process, restartable on the same port.
pub struct Server {
    child: Option<Child>,
    pub addr: SocketAddr,
    pub base: String,
    database_url: String,
    env: Vec<(String, String)>,
    log: PathBuf,
    /// Wrap the binary in `sh -c 'trap "" XFSZ; exec ...'` so a file size
    /// limit set on it later (`prlimit --pid`) makes writes fail with EFBIG
    /// instead of killing it with SIGXFSZ (the SQLite disk-full test).
    ignore_sigxfsz: bool,
    pub starts: u32,
}

impl Server {
    /// A server on a fresh free port; not started yet.
    pub fn new(database_url: &str, env: &[(&str, &str)], log_dir: &Path) -> Server {
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        Server {
            child: None,
            addr,
            base: format!("http://{addr}"),
            database_url: database_url.to_string(),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            log: log_dir.join("serve.log"),
            ignore_sigxfsz: false,
            starts: 0,
        }
    }

    pub fn ignoring_sigxfsz(mut self) -> Server {
        self.ignore_sigxfsz = true;
        self
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Starts the process and waits until `/readyz` answers 200.
    pub async fn start(&mut self) {
        assert!(self.child.is_none(), "the server is already running");
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("open the server log");
        let bin = env!("CARGO_BIN_EXE_couponkeeper");
        let mut cmd = if self.ignore_sigxfsz {
            let mut c = Command::new("sh");
            c.arg("-c").arg("trap '' XFSZ; exec \"$0\" serve").arg(bin);
            c
        } else {
            let mut c = Command::new(bin);
            c.arg("serve");
            c
        };
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", &self.database_url)
            .env("COUPONKEEPER_ADDR", self.addr.to_string())
            .env("COUPONKEEPER_API_TOKEN", TOKEN)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("clone log")))
            .stderr(Stdio::from(log));
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        self.child = Some(cmd.spawn().expect("spawn couponkeeper serve"));
        self.starts += 1;
        self.wait_ready(Duration::from_secs(30)).await;
    }

    /// Polls `/readyz` until it answers 200; panics with the log after
    /// `within`.
    pub async fn wait_ready(&mut self, within: Duration) {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("client");
        let started = Instant::now();
        loop {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(exit)) = c.try_wait()
            {
                panic!(
                    "couponkeeper serve exited ({exit}) before it was ready:\n{}",
                    self.log_tail(40)
                );
            }
            if let Ok(r) = http.get(format!("{}/readyz", self.base)).send().await
                && r.status().as_u16() == 200
            {
                return;
            }
            assert!(
                started.elapsed() < within,
                "couponkeeper serve was not ready within {within:?}:\n{}",
                self.log_tail(40)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL (`kill -9`): no shutdown code runs.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM (what an orchestrator sends to stop an instance), through
    /// the `kill` command; returns at once, see [`Server::wait_exit`].
    pub fn terminate(&self) {
        let pid = self.pid().expect("the server is running");
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {pid}: {status}");
    }

    /// Waits up to `within` for the process to exit; its status, or `None`
    /// while it still runs. Once it has exited the server can be started
    /// again.
    pub async fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        loop {
            if let Some(exit) = self.exited() {
                self.child = None;
                return Some(exit);
            }
            if started.elapsed() >= within {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The process has exited on its own (a crash, a panic that aborted).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn log_tail(&self, lines: usize) -> String {
        let text = self.log_text();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Fails when the server log shows a panic.
    pub fn assert_no_panic_logged(&self) {
        let text = self.log_text();
        assert!(
            !text.contains("panicked"),
            "the server log shows a panic:\n{}",
            text.lines()
                .filter(|l| l.contains("panicked"))
                .take(10)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// One HTTP answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
}

impl Answer {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// One HTTP request as the client saw it (the outage tests' timing check).
#[derive(Debug, Clone)]
pub struct Sample {
    pub started: Instant,
    pub elapsed: Duration,
    /// `None`: no HTTP answer (connection refused or reset, client timeout).
    pub status: Option<u16>,
    /// The error code of an error answer; why there was none.
    pub code: String,
    pub what: String,
}

/// A thin JSON client for the served API.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
}

impl Api {
    pub fn new(base: &str) -> Api {
        Api {
            http: reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .pool_idle_timeout(Duration::from_secs(2))
                .build()
                .expect("client"),
            base: base.to_string(),
        }
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Answer, reqwest::Error> {
        let r = req.bearer_auth(TOKEN).send().await?;
        let status = r.status().as_u16();
        let replayed = r
            .headers()
            .get("idempotent-replayed")
            .is_some_and(|v| v.as_bytes() == b"true");
        let text = r.text().await?;
        Ok(Answer {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
            replayed,
        })
    }

    pub async fn post(
        &self,
        path: &str,
        key: &str,
        body: &Value,
    ) -> Result<Answer, reqwest::Error> {
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .header("Idempotency-Key", key)
                .json(body),
        )
        .await
    }

    pub async fn get(&self, path: &str) -> Result<Answer, reqwest::Error> {
        self.send(self.http.get(format!("{}{path}", self.base)))
            .await
    }
}

/// A 2xx answer to a write, as the client got it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub key: String,
    pub path: String,
    pub body: Value,
    pub status: u16,
    pub answer: Value,
}

/// What the load works on: made once before the load starts.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// Stock 120, at most 4 per user: claims race for it and run out.
    pub hot_template: String,
    pub hot_stock: i64,
    /// Unlimited stock.
    pub open_template: String,
    /// A `lock` campaign whose final-payment window opens 2 s after setup.
    pub campaign: String,
    pub window_opens: Instant,
}

impl Fixture {
    pub async fn make(api: &Api, run: &str) -> Fixture {
        let now = chrono::Utc::now();
        let template = |name: &str, stock: Value, per_user: Value| {
            json!({
                "name": name, "kind": "fixed", "value_cents": 5000,
                "min_order_cents": 30000, "valid_seconds": 10 * 24 * 3600,
                "total_stock": stock, "per_user_limit": per_user, "categories": [],
            })
        };
        let hot_stock = 120;
        let hot = created(
            api,
            "/api/v1/templates",
            &format!("{run}-t-hot"),
            &template("hot", json!(hot_stock), json!(4)),
        )
        .await;
        let open = created(
            api,
            "/api/v1/templates",
            &format!("{run}-t-open"),
            &template("open", Value::Null, Value::Null),
        )
        .await;
        let campaign = created(
            api,
            "/api/v1/presale-campaigns",
            &format!("{run}-campaign"),
            &json!({
                "name": "crash",
                "final_payment_starts_at": (now + chrono::Duration::seconds(2)).to_rfc3339(),
                "final_payment_ends_at": (now + chrono::Duration::hours(2)).to_rfc3339(),
                "policy": "lock",
            }),
        )
        .await;
        Fixture {
            hot_template: id_of(&hot),
            hot_stock,
            open_template: id_of(&open),
            campaign: id_of(&campaign),
            window_opens: Instant::now() + Duration::from_millis(2_500),
        }
    }
}

async fn created(api: &Api, path: &str, key: &str, body: &Value) -> Value {
    let a = api
        .post(path, key, body)
        .await
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    assert_eq!(a.status, 201, "POST {path}: {}", a.body);
    a.body
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap_or_default().to_string()
}

/// What a client expects of one coupon it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponExpect {
    pub user: String,
    pub template: String,
    pub status: String,
    pub order_no: Option<String>,
}

/// Counts per outcome, for the test's summary line.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub requests: u64,
    pub by_status: BTreeMap<u16, u64>,
    pub no_answer: u64,
    pub flows: u64,
}

impl Stats {
    pub fn add(&mut self, other: &Stats) {
        self.requests += other.requests;
        self.no_answer += other.no_answer;
        self.flows += other.flows;
        for (s, n) in &other.by_status {
            *self.by_status.entry(*s).or_default() += n;
        }
    }
}

/// One load client: its users, its model of their coupons and orders, its
/// journal and every request it made.
pub struct Client {
    pub id: u32,
    run: String,
    api: Api,
    fx: Fixture,
    rng: StdRng,
    seq: u64,
    users: Vec<String>,
    pub journal: Vec<Entry>,
    pub coupons: HashMap<String, CouponExpect>,
    /// The last acknowledged answer for each order.
    pub orders: HashMap<String, Value>,
    pub samples: Vec<Sample>,
    pub stats: Stats,
    /// Answers of 500 or above other than 503 (never allowed).
    pub server_errors: Vec<String>,
}

impl Client {
    pub fn new(id: u32, run: &str, seed: u64, api: Api, fx: Fixture) -> Client {
        Client {
            id,
            run: run.to_string(),
            api,
            fx,
            rng: StdRng::seed_from_u64(
                seed ^ (u64::from(id) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            seq: 0,
            users: (0..3).map(|u| format!("{run}-c{id}-u{u}")).collect(),
            journal: Vec::new(),
            coupons: HashMap::new(),
            orders: HashMap::new(),
            samples: Vec::new(),
            stats: Stats::default(),
            server_errors: Vec::new(),
        }
    }

    fn note(&mut self, what: &str, started: Instant, result: &Result<Answer, reqwest::Error>) {
        let elapsed = started.elapsed();
        self.stats.requests += 1;
        let (status, code) = match result {
            Ok(a) => {
                *self.stats.by_status.entry(a.status).or_default() += 1;
                if a.status >= 500 && a.status != 503 {
                    self.server_errors
                        .push(format!("{what}: {} {}", a.status, a.body));
                }
                (Some(a.status), a.code().to_string())
            }
            Err(e) => {
                self.stats.no_answer += 1;
                let mut why = e.to_string();
                let mut source = std::error::Error::source(e);
                while let Some(s) = source {
                    why.push_str(&format!(": {s}"));
                    source = s.source();
                }
                (None, why)
            }
        };
        self.samples.push(Sample {
            started,
            elapsed,
            status,
            code,
            what: what.to_string(),
        });
    }

    /// A write with a fresh Idempotency-Key, repeated with the same key
    /// until it gets a definitive answer; a 2xx goes into the journal.
    pub async fn write(&mut self, path: &str, body: Value) -> Answer {
        self.seq += 1;
        let key = format!("{}-c{}-{}", self.run, self.id, self.seq);
        let started = Instant::now();
        loop {
            let t = Instant::now();
            let result = self.api.post(path, &key, &body).await;
            self.note(&format!("POST {path}"), t, &result);
            if let Ok(a) = result {
                let in_doubt =
                    a.status == 503 || (a.status == 409 && a.code() == "idempotency_in_progress");
                if !in_doubt {
                    if a.ok() {
                        self.journal.push(Entry {
                            key,
                            path: path.to_string(),
                            body,
                            status: a.status,
                            answer: a.body.clone(),
                        });
                    }
                    return a;
                }
            }
            assert!(
                started.elapsed() < WRITE_DEADLINE,
                "POST {path} (key {key}) got no definitive answer within {WRITE_DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A read; connection errors and 503 are noted, not retried.
    pub async fn read(&mut self, path: &str) -> Option<Answer> {
        let t = Instant::now();
        let result = self.api.get(path).await;
        self.note(&format!("GET {path}"), t, &result);
        result.ok()
    }

    /// Runs random flows until `stop` is set.
    pub async fn run(mut self, stop: Arc<AtomicBool>) -> Client {
        while !stop.load(Ordering::Relaxed) {
            self.stats.flows += 1;
            let user = self.users[self.rng.random_range(0..self.users.len())].clone();
            match self.rng.random_range(0..100) {
                0..30 => {
                    let hot = self.rng.random_bool(0.5);
                    self.claim(&user, hot).await;
                }
                30..60 => self.normal_flow(&user).await,
                60..90 => self.presale_flow(&user).await,
                _ => {
                    let _ = self
                        .read(&format!("/api/v1/users/{user}/coupons?status=available"))
                        .await;
                    if let Some(no) = self.orders.keys().next().cloned() {
                        let _ = self.read(&format!("/api/v1/orders/{no}")).await;
                    }
                }
            }
        }
        self
    }

    async fn claim(&mut self, user: &str, hot: bool) -> Option<String> {
        let template = if hot {
            self.fx.hot_template.clone()
        } else {
            self.fx.open_template.clone()
        };
        let a = self
            .write(
                &format!("/api/v1/users/{user}/coupons"),
                json!({"template_id": template}),
            )
            .await;
        if a.status != 201 {
            return None;
        }
        let id = id_of(&a.body);
        self.coupons.insert(
            id.clone(),
            CouponExpect {
                user: user.to_string(),
                template,
                status: "available".into(),
                order_no: None,
            },
        );
        Some(id)
    }

    /// An available coupon of `user` (claimed now when there is none).
    async fn coupon_of(&mut self, user: &str) -> Option<String> {
        let mut ids: Vec<&String> = self
            .coupons
            .iter()
            .filter(|(_, c)| c.user == user && c.status == "available")
            .map(|(id, _)| id)
            .collect();
        ids.sort();
        if ids.is_empty() {
            return self.claim(user, false).await;
        }
        Some(ids[self.rng.random_range(0..ids.len())].clone())
    }

    /// Records an acknowledged order answer and what it says of its coupon.
    fn saw_order(&mut self, order: &Value) {
        let no = order["order_no"].as_str().unwrap_or_default().to_string();
        if let Some(cid) = order["coupon_id"].as_str()
            && let Some(c) = self.coupons.get_mut(cid)
        {
            let (status, holder) = match order["coupon_lock_status"].as_str() {
                Some("locked") => ("locked", Some(no.clone())),
                Some("used") => ("used", Some(no.clone())),
                _ => ("available", None),
            };
            // A presale order names its coupon before the deposit locks it;
            // only the order holding a coupon decides its status.
            if holder.is_some() || c.order_no.as_deref() == Some(no.as_str()) {
                c.status = status.to_string();
                c.order_no = holder;
            }
        }
        self.orders.insert(no, order.clone());
    }

    async fn order_action(&mut self, no: &str, action: &str, body: Value) -> bool {
        let a = self
            .write(&format!("/api/v1/orders/{no}/{action}"), body)
            .await;
        if a.status == 200 {
            self.saw_order(&a.body);
            true
        } else {
            false
        }
    }

    async fn create_order(&mut self, body: Value) -> Option<String> {
        let a = self.write("/api/v1/orders", body).await;
        if a.status != 201 {
            return None;
        }
        self.saw_order(&a.body);
        a.body["order_no"].as_str().map(str::to_string)
    }

    fn order_no(&mut self, kind: &str) -> String {
        self.seq += 1;
        format!("{}-{kind}-c{}-{}", self.run, self.id, self.seq)
    }

    async fn normal_flow(&mut self, user: &str) {
        let Some(coupon) = self.coupon_of(user).await else {
            return;
        };
        let no = self.order_no("n");
        let body = json!({
            "order_no": no, "user_id": user, "kind": "normal", "category": "phones",
            "total_cents": 39900, "coupon_id": coupon,
        });
        let Some(no) = self.create_order(body).await else {
            return;
        };
        match self.rng.random_range(0..100) {
            0..50 => {
                let paid = self.order_action(&no, "pay", json!({})).await;
                if paid && self.rng.random_bool(0.3) {
                    self.order_action(&no, "refund", json!({"reason": "crash test refund"}))
                        .await;
                }
            }
            50..70 => {
                self.order_action(&no, "cancel", json!({"reason": "crash test cancel"}))
                    .await;
            }
            70..85 => {
                // Support takes the coupon off the live order (force), the
                // customer then pays without it.
                let a = self
                    .write(
                        &format!("/api/v1/coupons/{coupon}/release"),
                        json!({"reason": "crash test release", "force": true}),
                    )
                    .await;
                if a.status == 200 {
                    if let Some(c) = self.coupons.get_mut(&coupon) {
                        c.status = a.body["status"].as_str().unwrap_or_default().to_string();
                        c.order_no = a.body["order_no"].as_str().map(str::to_string);
                    }
                    if let Some(o) = self.read(&format!("/api/v1/orders/{no}")).await
                        && o.status == 200
                    {
                        self.orders.insert(no.clone(), o.body);
                    } else {
                        // Unknown until read again; the final check reads it.
                        self.orders.insert(no.clone(), Value::Null);
                    }
                }
                self.order_action(&no, "pay", json!({})).await;
            }
            _ => {
                // An abandoned cart: the checkout lock holds the coupon.
            }
        }
    }

    async fn presale_flow(&mut self, user: &str) {
        let Some(coupon) = self.coupon_of(user).await else {
            return;
        };
        let no = self.order_no("p");
        let body = json!({
            "order_no": no, "user_id": user, "kind": "presale", "category": "phones",
            "total_cents": 39900, "deposit_cents": 10000, "coupon_id": coupon,
            "campaign_id": self.fx.campaign,
        });
        let Some(no) = self.create_order(body).await else {
            return;
        };
        if self.rng.random_bool(0.1) {
            self.order_action(&no, "cancel", json!({"reason": "crash test cancel"}))
                .await;
            return;
        }
        if !self.order_action(&no, "deposit-payment", json!({})).await {
            return;
        }
        let window_open = Instant::now() >= self.fx.window_opens;
        match self.rng.random_range(0..100) {
            0..55 if window_open => {
                let paid = self.order_action(&no, "final-payment", json!({})).await;
                if paid && self.rng.random_bool(0.25) {
                    self.order_action(&no, "refund", json!({"reason": "crash test refund"}))
                        .await;
                }
            }
            55..75 => {
                self.order_action(&no, "cancel", json!({"reason": "crash test cancel"}))
                    .await;
            }
            75..85 => {
                self.order_action(&no, "refund", json!({"reason": "deposit refund"}))
                    .await;
            }
            _ => {}
        }
    }
}

/// What the load left behind, all clients together.
pub struct Outcome {
    pub journal: Vec<Entry>,
    pub coupons: HashMap<String, CouponExpect>,
    pub orders: HashMap<String, Value>,
    pub samples: Vec<Sample>,
    pub stats: Stats,
    pub server_errors: Vec<String>,
}

impl Outcome {
    pub fn gather(clients: Vec<Client>) -> Outcome {
        let mut o = Outcome {
            journal: Vec::new(),
            coupons: HashMap::new(),
            orders: HashMap::new(),
            samples: Vec::new(),
            stats: Stats::default(),
            server_errors: Vec::new(),
        };
        for c in clients {
            o.journal.extend(c.journal);
            o.coupons.extend(c.coupons);
            o.orders.extend(c.orders);
            o.samples.extend(c.samples);
            o.stats.add(&c.stats);
            o.server_errors.extend(c.server_errors);
        }
        o
    }
}

/// Spawns `n` clients on `base` until `stop` is set; join with
/// [`join_clients`].
pub fn spawn_clients(
    n: u32,
    run: &str,
    seed: u64,
    base: &str,
    fx: &Fixture,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Client>> {
    (0..n)
        .map(|id| {
            let client = Client::new(id, run, seed, Api::new(base), fx.clone());
            tokio::spawn(client.run(stop.clone()))
        })
        .collect()
}

pub async fn join_clients(handles: Vec<tokio::task::JoinHandle<Client>>) -> Outcome {
    let mut clients = Vec::new();
    for h in handles {
        match h.await {
            Ok(c) => clients.push(c),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    Outcome::gather(clients)
}

/// The promises checked after the load: every acknowledged change is in
/// the database, no coupon is held by two orders, every coupon's events
/// replay to its stored status, claimed counters equal the coupons,
/// reconciliation finds nothing, a replayed key answers the journaled
/// answer, and no answer was a 5xx other than 503.
pub async fn check_promises(pool: &sqlx::AnyPool, api: &Api, out: &Outcome) {
    assert!(
        out.server_errors.is_empty(),
        "answers of 500 or above (never allowed):\n{}",
        out.server_errors.join("\n")
    );

    // Every acknowledged order is there as its last answer left it.
    for (no, answer) in &out.orders {
        let row: Option<(String, Option<String>, String)> = sqlx::query_as(
            "SELECT status, coupon_id, coupon_lock_status FROM orders WHERE order_no = $1",
        )
        .bind(no)
        .fetch_optional(pool)
        .await
        .expect("read order");
        let (status, coupon_id, lock) =
            row.unwrap_or_else(|| panic!("acknowledged order {no} is not in the database"));
        if answer.is_null() {
            continue;
        }
        assert_eq!(
            (
                Some(status.as_str()),
                coupon_id.as_deref(),
                Some(lock.as_str())
            ),
            (
                answer["status"].as_str(),
                answer["coupon_id"].as_str(),
                answer["coupon_lock_status"].as_str()
            ),
            "order {no}: the database differs from the last acknowledged answer {answer}"
        );
    }
    // Every acknowledged coupon is there in the state its answers imply.
    for (id, want) in &out.coupons {
        let row: Option<(String, String, Option<String>)> =
            sqlx::query_as("SELECT user_id, status, order_no FROM coupons WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await
                .expect("read coupon");
        let (user, status, order_no) =
            row.unwrap_or_else(|| panic!("acknowledged coupon {id} is not in the database"));
        assert_eq!(user, want.user, "coupon {id}'s owner");
        assert_eq!(status, want.status, "coupon {id}'s status ({want:?})");
        if status != "available" {
            assert_eq!(order_no, want.order_no, "coupon {id}'s order ({want:?})");
        }
    }

    // No coupon held (locked or used) by two orders at once, and a used
    // coupon's order was paid with it.
    let doubles: Vec<(String, i64)> = sqlx::query_as(
        "SELECT coupon_id, COUNT(*) FROM orders WHERE coupon_id IS NOT NULL \
         AND coupon_lock_status IN ('locked', 'used') GROUP BY coupon_id HAVING COUNT(*) > 1",
    )
    .fetch_all(pool)
    .await
    .expect("doubles");
    assert!(
        doubles.is_empty(),
        "coupons held by two orders: {doubles:?}"
    );
    let used_wrong: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT c.id, c.order_no FROM coupons c LEFT JOIN orders o ON o.order_no = c.order_no \
         WHERE c.status = 'used' AND (o.order_no IS NULL OR o.coupon_id IS NULL \
         OR o.coupon_id <> c.id OR o.coupon_lock_status <> 'used')",
    )
    .fetch_all(pool)
    .await
    .expect("used coupons");
    assert!(
        used_wrong.is_empty(),
        "used coupons whose order does not say so: {used_wrong:?}"
    );

    // Every coupon's events replay to its stored status.
    let statuses: HashMap<String, String> = sqlx::query_as("SELECT id, status FROM coupons")
        .fetch_all(pool)
        .await
        .expect("coupons")
        .into_iter()
        .collect();
    let events: Vec<(String, Option<String>, String, String)> = sqlx::query_as(
        "SELECT coupon_id, from_status, to_status, action FROM events \
         WHERE subject = 'coupon' ORDER BY coupon_id, id",
    )
    .fetch_all(pool)
    .await
    .expect("events");
    let mut replayed: HashMap<&str, &str> = HashMap::new();
    for (cid, from, to, action) in &events {
        let before = replayed.get(cid.as_str()).copied();
        assert_eq!(
            from.as_deref(),
            before,
            "coupon {cid}: event {action} starts from {from:?} but the events before end at {before:?}"
        );
        replayed.insert(cid, to);
    }
    for (id, status) in &statuses {
        assert_eq!(
            replayed.get(id.as_str()).copied(),
            Some(status.as_str()),
            "coupon {id}: its events replay to {:?}, stored {status}",
            replayed.get(id.as_str())
        );
    }

    // Claimed counters equal the coupons, per template and per user.
    let claimed: Vec<(String, i64)> = sqlx::query_as(
        "SELECT template_id, CAST(SUM(claimed) AS BIGINT) FROM template_stock_shards GROUP BY template_id",
    )
    .fetch_all(pool)
    .await
    .expect("shards");
    let issued: HashMap<String, i64> = sqlx::query_as(
        "SELECT template_id, COUNT(*) FROM coupons WHERE source = 'claim' GROUP BY template_id",
    )
    .fetch_all(pool)
    .await
    .expect("issued")
    .into_iter()
    .collect();
    for (t, n) in &claimed {
        assert_eq!(
            issued.get(t).copied().unwrap_or(0),
            *n,
            "template {t}: claimed counter vs coupons"
        );
    }
    let per_user: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "SELECT u.template_id, u.user_id, u.claimed, \
         (SELECT COUNT(*) FROM coupons c WHERE c.template_id = u.template_id \
          AND c.user_id = u.user_id AND c.source = 'claim') FROM template_user_claims u",
    )
    .fetch_all(pool)
    .await
    .expect("per user");
    for (t, u, counter, coupons) in &per_user {
        assert_eq!(counter, coupons, "template {t}, user {u}: per-user counter");
    }
    let over: Vec<(String,)> = sqlx::query_as(
        "SELECT s.template_id FROM template_stock_shards s JOIN templates t ON t.id = s.template_id \
         GROUP BY s.template_id, t.total_stock HAVING t.total_stock IS NOT NULL \
         AND SUM(s.claimed) > t.total_stock",
    )
    .fetch_all(pool)
    .await
    .expect("oversold");
    assert!(over.is_empty(), "templates oversold: {over:?}");

    // Reconciliation finds nothing.
    let rec = api
        .get("/api/v1/reconciliation")
        .await
        .expect("reconciliation answers");
    assert_eq!(rec.status, 200, "reconciliation: {}", rec.body);
    assert_eq!(
        rec.body["anomalies"],
        json!([]),
        "reconciliation found anomalies"
    );

    // Every journaled key replays its journaled answer. Bounded: the
    // journal is as long as the load (seconds), 8 at a time.
    let mut replays = futures_util::stream::iter(out.journal.iter().map(|e| {
        let api = api.clone();
        async move {
            let a = api
                .post(&e.path, &e.key, &e.body)
                .await
                .unwrap_or_else(|err| panic!("replay of {}: {err}", e.key));
            (e, a)
        }
    }))
    .buffer_unordered(8);
    while let Some((e, a)) = replays.next().await {
        assert_eq!(
            (a.status, &a.body),
            (e.status, &e.answer),
            "replay of key {} (POST {})",
            e.key,
            e.path
        );
        assert!(
            a.replayed,
            "replay of key {} lacks Idempotent-Replayed",
            e.key
        );
    }
}
