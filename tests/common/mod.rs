//! Test harness: a fresh database per test on the store chosen by
//! `COUPONKEEPER_TEST_STORE` (`sqlite`, the default, or `postgres`), the
//! real router on a random port, a manual clock, and builders for
//! request bodies.
//!
//! PostgreSQL tests create their own database (`ck_test_<pid>_<n>_<rand>`)
//! on the server at `COUPONKEEPER_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`) and drop it afterwards, so
//! runs never see each other's rows. An unreachable server fails the test:
//! asking for PostgreSQL and silently getting nothing would hide bugs. A
//! fully migrated database is copied from one template per test process
//! (`ck_tpl_<pid>_<rand>`, see [`pg_template`]), so the migrations run once
//! per test binary instead of once per test.

#![allow(dead_code)]

pub mod console;
pub mod fixtures;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};
use sqlx::{Connection, Executor};

use couponkeeper::clock::{ManualClock, SharedClock};
use couponkeeper::config::Config;
use couponkeeper::http::router;
use couponkeeper::server::{app_state, build_service};
use couponkeeper::service::{Ctx, Service};
use couponkeeper::store::Db;

/// The token every test app accepts.
pub const TOKEN: &str = "test-token";

/// Where every test clock starts: a fixed instant, so failures reproduce.
pub fn epoch() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-11T00:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .expect("valid literal")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Sqlite,
    Postgres,
}

pub fn store() -> Store {
    match std::env::var("COUPONKEEPER_TEST_STORE").as_deref() {
        Ok("postgres") | Ok("pg") => Store::Postgres,
        _ => Store::Sqlite,
    }
}

fn pg_admin_url() -> String {
    std::env::var("COUPONKEEPER_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh, migrated database that is removed when dropped.
pub struct TestDb {
    pub db: Db,
    pub url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    Sqlite(tempfile::TempDir),
    Postgres { name: String },
}

impl TestDb {
    pub async fn fresh() -> TestDb {
        Self::fresh_with(20).await
    }

    pub async fn fresh_with(max_connections: u32) -> TestDb {
        Self::fresh_through(max_connections, i64::MAX).await
    }

    /// A fresh database migrated up to and including `last_version` only.
    pub async fn fresh_through(max_connections: u32, last_version: i64) -> TestDb {
        sqlx::any::install_default_drivers();
        capture_sql_if_asked();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let (url, cleanup) = match store() {
            Store::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite://{}", dir.path().join("test.db").display());
                (url, Cleanup::Sqlite(dir))
            }
            Store::Postgres => {
                let admin = pg_admin_url();
                let name = format!(
                    "ck_test_{}_{}_{:08x}",
                    std::process::id(),
                    n,
                    rand::random::<u32>()
                );
                let create = if last_version == i64::MAX {
                    format!("CREATE DATABASE {name} TEMPLATE {}", pg_template())
                } else {
                    format!("CREATE DATABASE {name}")
                };
                let mut conn = sqlx::AnyConnection::connect(&admin).await.unwrap_or_else(|e| {
                    panic!("PostgreSQL at {admin} is unreachable ({e}); the postgres test run needs it")
                });
                conn.execute(create.as_str())
                    .await
                    .expect("create test database");
                let _ = conn.close().await;
                let base = admin
                    .rsplit_once('/')
                    .map(|(b, _)| b.to_string())
                    .unwrap_or(admin);
                (format!("{base}/{name}"), Cleanup::Postgres { name })
            }
        };
        // Generous waits: on a loaded 2-core CI machine a burst of 200
        // parallel requests can queue for the pool longer than the
        // service's 2 s default (tests/system/outage.rs sets its own).
        let db = Db::connect_with(
            &url,
            couponkeeper::store::PoolSettings {
                max_connections,
                tx_retries: 8,
                acquire_timeout_ms: 30_000,
                tx_timeout_ms: 60_000,
            },
        )
        .await
        .expect("connect test db");
        // A copy of the template is migrated already; migrating again finds
        // nothing to do, and checks that.
        db.migrate_through(last_version)
            .await
            .expect("migrate test db");
        TestDb { db, url, cleanup }
    }
}

/// The migrated database this test process copies its PostgreSQL databases
/// from, made on first use. Nobody stays connected to it (a copy needs
/// that). It outlives the process: the next process drops every template
/// whose process is gone, so at most one run's templates are left on the
/// server.
fn pg_template() -> &'static str {
    static TEMPLATE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        // Made on a thread with its own runtime: the first caller is inside
        // a test's runtime, whose connections must not outlive it.
        std::thread::spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the template database")
                .block_on(make_pg_template())
        })
        .join()
        .expect("the template database is made")
    })
}

async fn make_pg_template() -> String {
    let admin = pg_admin_url();
    let mut conn = sqlx::AnyConnection::connect(&admin)
        .await
        .unwrap_or_else(|e| {
            panic!("PostgreSQL at {admin} is unreachable ({e}); the postgres test run needs it")
        });
    let old: Vec<String> =
        sqlx::query_scalar("SELECT datname::text FROM pg_database WHERE datname LIKE 'ck_tpl_%'")
            .fetch_all(&mut conn)
            .await
            .expect("list template databases");
    for db in old {
        let pid = db.split('_').nth(2).and_then(|p| p.parse::<u32>().ok());
        let alive = pid.is_some_and(|p| std::path::Path::new(&format!("/proc/{p}")).exists());
        if !alive {
            let _ = conn
                .execute(format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)").as_str())
                .await;
        }
    }
    let name = format!(
        "ck_tpl_{}_{:08x}",
        std::process::id(),
        rand::random::<u32>()
    );
    conn.execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .expect("create the template database");
    let _ = conn.close().await;
    let base = admin
        .rsplit_once('/')
        .map(|(b, _)| b.to_string())
        .unwrap_or(admin);
    let db = Db::connect_with(
        &format!("{base}/{name}"),
        couponkeeper::store::PoolSettings {
            max_connections: 1,
            tx_retries: 8,
            acquire_timeout_ms: 30_000,
            tx_timeout_ms: 60_000,
        },
    )
    .await
    .expect("connect the template database");
    db.migrate_through(i64::MAX)
        .await
        .expect("migrate the template database");
    db.pool().close().await;
    name
}

/// Records the service's SQL when `COUPONKEEPER_CAPTURE_SQL` is set
/// (`.ci/capture-sql`; see `couponkeeper::store::capture`). Once per test
/// process, before its first database.
fn capture_sql_if_asked() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        couponkeeper::store::capture::SqlCapture::install_from_env()
            .expect("COUPONKEEPER_CAPTURE_SQL names a directory that can be created");
    });
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Cleanup::Postgres { name } = &self.cleanup {
            let name = name.clone();
            let admin = pg_admin_url();
            // Drop runs inside the test's runtime; a separate thread with its
            // own runtime can block on the DROP without deadlocking it.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(rt) = rt {
                    rt.block_on(async move {
                        if let Ok(mut c) = sqlx::AnyConnection::connect(&admin).await {
                            let _ = c
                                .execute(
                                    format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str(),
                                )
                                .await;
                            let _ = c.close().await;
                        }
                    });
                }
            })
            .join();
        }
    }
}

/// A service on a fresh database with a manual clock, without HTTP.
pub struct TestService {
    pub service: Service,
    pub clock: Arc<ManualClock>,
    pub db: TestDb,
}

impl TestService {
    pub async fn start() -> TestService {
        let db = TestDb::fresh().await;
        let clock = Arc::new(ManualClock::new(epoch()));
        let shared: SharedClock = clock.clone();
        let service = build_service(&Config::default(), db.db.clone(), shared);
        TestService { service, clock, db }
    }

    pub fn ctx(&self) -> Ctx {
        Ctx::new("test", None)
    }
}

/// The real router on a random local port, on a fresh database.
pub struct TestApp {
    pub addr: SocketAddr,
    pub base: String,
    pub client: reqwest::Client,
    pub clock: Arc<ManualClock>,
    pub service: Service,
    pub db: TestDb,
    server: tokio::task::JoinHandle<()>,
}

/// A response with its JSON body (`Value::Null` when the body is not JSON).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Resp {
    /// The error code of an error response.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    pub fn field(&self) -> &str {
        self.body["error"]["field"].as_str().unwrap_or("")
    }

    pub fn id(&self) -> String {
        self.body["id"].as_str().unwrap_or_default().to_string()
    }
}

type ConfigTweak<'a> = Box<dyn FnOnce(&mut Config) + 'a>;

/// How a test's app is started: `TestApp::builder()`, then what differs
/// from the default (a fresh database, two API tokens, the manual clock at
/// [`epoch`], axum's plain server), then `start()`.
#[must_use]
pub struct TestAppBuilder<'a> {
    tweaks: Vec<ConfigTweak<'a>>,
    peers: bool,
}

impl TestApp {
    pub fn builder<'a>() -> TestAppBuilder<'a> {
        TestAppBuilder {
            tweaks: Vec::new(),
            peers: false,
        }
    }
}

impl<'a> TestAppBuilder<'a> {
    /// Changes the configuration before the app is built (applied in the
    /// order given).
    pub fn with_config(mut self, tweak: impl FnOnce(&mut Config) + 'a) -> Self {
        self.tweaks.push(Box::new(tweak));
        self
    }

    /// Served as `serve` serves it: each connection's peer address known to
    /// the app (client addresses, proxies, rate limits) and the connection
    /// timeouts applied.
    pub fn with_peers(mut self) -> Self {
        self.peers = true;
        self
    }

    pub async fn start(self) -> TestApp {
        let mut config = Config {
            api_tokens: vec![TOKEN.to_string(), "second-token".to_string()],
            ..Config::default()
        };
        for tweak in self.tweaks {
            tweak(&mut config);
        }
        let peers = self.peers;
        let db = TestDb::fresh().await;
        let clock = Arc::new(ManualClock::new(epoch()));
        let shared: SharedClock = clock.clone();
        let service = build_service(&config, db.db.clone(), shared);
        let app = router(app_state(&config, service.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let timeouts = config.connection_timeouts;
        let server = tokio::spawn(async move {
            if peers {
                // `serve`'s own accept loop; the sender lives as long as the
                // server, so it never stops before the test ends.
                let (_stop, stopped) = tokio::sync::watch::channel(false);
                let _ = couponkeeper::http::serve::serve(listener, app, timeouts, stopped).await;
            } else {
                let _ = axum::serve(listener, app).await;
            }
        });
        TestApp {
            addr,
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            clock,
            service,
            db,
            server,
        }
    }
}

/// The default app: `TestApp::builder().start()`.
pub async fn spawn_app() -> TestApp {
    TestApp::builder().start().await
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl TestApp {
    pub fn now(&self) -> DateTime<Utc> {
        use couponkeeper::clock::Clock;
        self.clock.now()
    }

    pub fn advance(&self, seconds: i64) {
        self.clock.advance(Duration::seconds(seconds));
    }

    /// RFC 3339 of now + `seconds`.
    pub fn at(&self, seconds: i64) -> String {
        (self.now() + Duration::seconds(seconds)).to_rfc3339()
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        let r = req.send().await.expect("request reaches the server");
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp {
            status,
            body,
            headers,
            text,
        }
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.send(
            self.client
                .get(format!("{}{path}", self.base))
                .bearer_auth(TOKEN),
        )
        .await
    }

    pub async fn get_as(&self, path: &str, token: Option<&str>) -> Resp {
        let mut req = self.client.get(format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.send(req).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Resp {
        self.send(
            self.client
                .post(format!("{}{path}", self.base))
                .bearer_auth(TOKEN)
                .json(&body),
        )
        .await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Resp {
        self.send(
            self.client
                .patch(format!("{}{path}", self.base))
                .bearer_auth(TOKEN)
                .json(&body),
        )
        .await
    }

    pub async fn post_raw(
        &self,
        path: &str,
        body: impl Into<reqwest::Body>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    pub async fn post_idem(&self, path: &str, key: &str, body: Value) -> Resp {
        self.post_idem_as(path, key, body, TOKEN).await
    }

    pub async fn post_idem_as(&self, path: &str, key: &str, body: Value, token: &str) -> Resp {
        self.send(
            self.client
                .post(format!("{}{path}", self.base))
                .bearer_auth(token)
                .header("Idempotency-Key", key)
                .json(&body),
        )
        .await
    }

    /// Creates a template from defaults merged with `overrides`; asserts 201.
    pub async fn template(&self, overrides: Value) -> Value {
        let r = self
            .post("/api/v1/templates", merge(template_body(), overrides))
            .await;
        assert_eq!(r.status, 201, "create template: {}", r.text);
        r.body
    }

    /// Claims a coupon; asserts 201.
    pub async fn claim(&self, user: &str, template_id: &str) -> Value {
        let r = self
            .post(
                &format!("/api/v1/users/{user}/coupons"),
                json!({"template_id": template_id}),
            )
            .await;
        assert_eq!(r.status, 201, "claim: {}", r.text);
        r.body
    }

    /// Creates a campaign whose final-payment window opens after
    /// `opens_in` seconds and lasts `lasts` seconds; asserts 201.
    pub async fn campaign(&self, policy: &str, opens_in: i64, lasts: i64) -> Value {
        let r = self
            .post(
                "/api/v1/presale-campaigns",
                json!({
                    "name": "双11预售",
                    "final_payment_starts_at": self.at(opens_in),
                    "final_payment_ends_at": self.at(opens_in + lasts),
                    "policy": policy,
                }),
            )
            .await;
        assert_eq!(r.status, 201, "create campaign: {}", r.text);
        r.body
    }

    /// Creates an order; returns the raw response.
    pub async fn order(&self, body: Value) -> Resp {
        self.post("/api/v1/orders", body).await
    }

    /// The coupon as the API shows it now.
    pub async fn coupon(&self, id: &str) -> Value {
        let r = self.get(&format!("/api/v1/coupons/{id}")).await;
        assert_eq!(r.status, 200, "get coupon: {}", r.text);
        r.body
    }

    pub async fn order_view(&self, order_no: &str) -> Value {
        let r = self.get(&format!("/api/v1/orders/{order_no}")).await;
        assert_eq!(r.status, 200, "get order: {}", r.text);
        r.body
    }
}

/// A 满300减50 template valid 10 days after claim, stock 100.
pub fn template_body() -> Value {
    json!({
        "name": "满300减50",
        "kind": "fixed",
        "value_cents": 5000,
        "min_order_cents": 30000,
        "valid_seconds": 10 * 24 * 3600,
        "total_stock": 100,
        "categories": [],
    })
}

/// A presale order body for `user` with `coupon_id` on `campaign_id`.
pub fn presale_order(
    order_no: &str,
    user: &str,
    coupon_id: Option<&str>,
    campaign_id: &str,
) -> Value {
    json!({
        "order_no": order_no,
        "user_id": user,
        "kind": "presale",
        "category": "phones",
        "total_cents": 39900,
        "deposit_cents": 10000,
        "coupon_id": coupon_id,
        "campaign_id": campaign_id,
    })
}

/// A normal order body.
pub fn normal_order(
    order_no: &str,
    user: &str,
    coupon_id: Option<&str>,
    total_cents: i64,
) -> Value {
    json!({
        "order_no": order_no,
        "user_id": user,
        "kind": "normal",
        "category": "phones",
        "total_cents": total_cents,
        "coupon_id": coupon_id,
    })
}

/// `base` with the keys of `overrides` replaced (`null` removes a key).
pub fn merge(mut base: Value, overrides: Value) -> Value {
    if let (Some(b), Some(o)) = (base.as_object_mut(), overrides.as_object()) {
        for (k, v) in o {
            if v.is_null() {
                b.remove(k);
            } else {
                b.insert(k.clone(), v.clone());
            }
        }
    }
    base
}

/// `EXPLAIN` (PostgreSQL) or `EXPLAIN QUERY PLAN` (SQLite) of `sql`.
pub fn explain_sql(backend: couponkeeper::store::Backend, sql: &str) -> String {
    match backend {
        couponkeeper::store::Backend::Postgres => format!("EXPLAIN {sql}"),
        couponkeeper::store::Backend::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
    }
}

/// The plan text of [`explain_sql`]'s rows, one line per row.
pub fn plan_text(rows: &[sqlx::any::AnyRow], backend: couponkeeper::store::Backend) -> String {
    use sqlx::Row;
    let column = match backend {
        couponkeeper::store::Backend::Postgres => 0,
        couponkeeper::store::Backend::Sqlite => 3,
    };
    rows.iter()
        .map(|r| r.try_get::<String, _>(column).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The numbers 1 to `n` as a row source for bulk `INSERT … SELECT`s:
/// `(with, source)`, where `with` goes before the statement (SQLite's
/// recursive CTE; empty on PostgreSQL) and `source` after `FROM`; the
/// column is `g`, a BIGINT on both stores.
pub fn series(n: i64) -> (String, String) {
    match store() {
        Store::Postgres => (
            String::new(),
            format!("generate_series(CAST(1 AS BIGINT), CAST({n} AS BIGINT)) AS gs(g)"),
        ),
        Store::Sqlite => (
            format!(
                "WITH RECURSIVE seq(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM seq WHERE g < {n})"
            ),
            "seq".to_string(),
        ),
    }
}
