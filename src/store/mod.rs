//! SQL, and nothing else: one module per table, each function taking
//! `&mut AnyConnection` so the caller (the service) decides which transaction
//! it runs in.
//!
//! Both stores run the same query text through sqlx's `Any` driver: queries
//! use `$1`-style parameters (PostgreSQL's syntax, which SQLite accepts
//! too), timestamps are `BIGINT` milliseconds, and the few real dialect
//! differences (how a write transaction begins, advisory locks) are branches
//! on [`Backend`] in this module, not copies of queries.

pub mod archive;
pub mod audit;
pub mod budgets;
pub mod bulk;
pub mod campaigns;
pub mod capture;
pub mod categories;
mod codec;
pub mod codes;
pub mod compensation_rules;
pub mod counters;
pub mod coupons;
pub mod deliveries;
pub mod dynamic;
pub mod events;
pub mod expiry;
pub mod idempotency;
pub mod ledger;
pub mod names;
pub mod order_coupons;
pub mod order_lines;
pub mod orders;
pub mod outbox;
pub mod queue;
pub mod reconcile;
pub mod redeem_attempts;
pub mod refunds;
pub mod reminder_popups;
pub mod reminders;
pub mod search;
pub mod staff;
pub mod support_requests;
pub mod templates;
pub mod timing;
pub mod views;
pub mod wakeup;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Any, AnyConnection, AnyPool, Connection, Executor, Transaction};
use tracing::Instrument;

/// Which database a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn from_url(url: &str) -> Option<Self> {
        if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Some(Backend::Postgres)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// How long a SQLite connection waits for another process's write lock
/// before giving up with SQLITE_BUSY (which we then retry).
const SQLITE_BUSY_TIMEOUT_MS: u32 = 5_000;

/// Errors that may carry a database error, so [`Db::write`] can tell a
/// retryable conflict from a business refusal.
pub trait DbErrorSource {
    fn db_error(&self) -> Option<&sqlx::Error>;
}

impl DbErrorSource for sqlx::Error {
    fn db_error(&self) -> Option<&sqlx::Error> {
        Some(self)
    }
}

/// True for errors that mean "another transaction got in the way; run the
/// whole transaction again": PostgreSQL serialization failures (40001) and
/// deadlocks (40P01), SQLite BUSY/LOCKED.
pub fn is_retryable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code();
            matches!(
                code.as_deref(),
                Some("40001") | Some("40P01") | Some("5") | Some("6") | Some("517") | Some("261")
            ) || db.message().contains("database is locked")
        }
        _ => false,
    }
}

/// True when the error says the database itself cannot serve now (gone,
/// unreachable, shutting down, out of space, read-only, still locked after
/// the retries), as opposed to refusing one statement about one row.
pub fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code();
            let code = code.as_deref().unwrap_or("");
            // PostgreSQL classes 08 (connection), 53 (resources), 57
            // (operator intervention: shutdown, cannot connect now), 58
            // (system); SQLite's primary codes BUSY 5, LOCKED 6, READONLY 8,
            // IOERR 10, FULL 13, CANTOPEN 14 and their extended forms.
            ["08", "53", "57", "58"]
                .iter()
                .any(|class| code.starts_with(class))
                || code
                    .parse::<u32>()
                    .is_ok_and(|n| matches!(n & 0xff, 5 | 6 | 8 | 10 | 13 | 14))
                || is_retryable(e)
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        _ => false,
    }
}

/// True when the error says a unique index refused the row.
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => {
            matches!(
                db.code().as_deref(),
                Some("23505") | Some("2067") | Some("1555")
            ) || db.message().contains("UNIQUE constraint failed")
        }
        _ => false,
    }
}

/// A connection pool plus the rules for running transactions on it.
#[derive(Clone)]
pub struct Db {
    pool: AnyPool,
    backend: Backend,
    /// SQLite has one writer at a time. Queueing writers here, in process,
    /// instead of in SQLite's busy handler (which polls with sleeps) keeps
    /// throughput steady under contention; `BEGIN IMMEDIATE` still guards
    /// against other processes.
    write_gate: Option<Arc<tokio::sync::Mutex<()>>>,
    retries: u32,
    /// [`PoolSettings::tx_timeout_ms`].
    tx_timeout: Duration,
    /// Where the timed store calls of this handle's transactions are
    /// recorded ([`timing`]); `None`: nowhere.
    query_timings: Option<Arc<crate::metrics::QueryTimings>>,
}

/// How the pool behaves: its size, how long a caller waits for a
/// connection, how often a transaction that lost a race is rerun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    pub max_connections: u32,
    /// Retries of a transaction after a serialization failure, deadlock or
    /// busy error.
    pub tx_retries: u32,
    /// How long a caller waits for a free connection (or a new one) before
    /// the request fails with 503 `unavailable`. Short, so that during a
    /// database outage callers learn it at once instead of queueing.
    pub acquire_timeout_ms: u64,
    /// How long one transaction (from `BEGIN` to the end of `COMMIT`) may
    /// take before it is abandoned and its caller answered 503
    /// `unavailable`. sqlx sets no deadline on a statement: a database that
    /// stops answering without closing the connection (a network black
    /// hole, a frozen server) would otherwise hold the request, and the
    /// connection, until the kernel gives up on the socket, which takes
    /// minutes. PostgreSQL's `statement_timeout` cannot help there: it is
    /// enforced by the server that has gone silent.
    pub tx_timeout_ms: u64,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            max_connections: 10,
            tx_retries: 5,
            acquire_timeout_ms: 2_000,
            tx_timeout_ms: 10_000,
        }
    }
}

/// How long a connection coming back to the pool may take to show it is
/// healthy (see [`release_check`]); one that does not answer is closed
/// rather than holding its pool slot for as long as the silence lasts.
const RELEASE_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// The error of a transaction abandoned after [`PoolSettings::tx_timeout_ms`]:
/// an I/O time-out, which [`is_unavailable`] reads as the database being
/// away (503 `unavailable`), never retried within the request.
fn tx_timed_out(limit: Duration) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "the database did not finish a transaction within {} ms",
            limit.as_millis()
        ),
    ))
}

impl Db {
    /// Connects with the default acquire timeout (see [`PoolSettings`]).
    pub async fn connect(url: &str, max_connections: u32, retries: u32) -> Result<Db, sqlx::Error> {
        Self::connect_with(
            url,
            PoolSettings {
                max_connections,
                tx_retries: retries,
                ..PoolSettings::default()
            },
        )
        .await
    }

    /// Connects and configures the pool. SQLite files are created when
    /// missing and opened in WAL mode with foreign keys on and a busy timeout.
    ///
    /// A connection given back to the pool while still inside a transaction
    /// is closed, never reused: a cancelled caller's dropped `Transaction`
    /// queues its ROLLBACK, and what is still open after it has no owner.
    /// Reused, such a connection fails every later `BEGIN IMMEDIATE` and on
    /// SQLite holds the write lock; closing it rolls the transaction back.
    /// (A BEGIN still in flight when its caller is cancelled is not counted
    /// by sqlx at all; `Db::begin` runs it to the end in a task of its own.)
    pub async fn connect_with(url: &str, settings: PoolSettings) -> Result<Db, sqlx::Error> {
        sqlx::any::install_default_drivers();
        let backend = Backend::from_url(url).ok_or_else(|| {
            sqlx::Error::Configuration(
                format!("unsupported DATABASE_URL scheme in {url:?}: use sqlite:// or postgres://")
                    .into(),
            )
        })?;
        let url = match backend {
            Backend::Sqlite if !url.contains("mode=") => {
                let sep = if url.contains('?') { '&' } else { '?' };
                format!("{url}{sep}mode=rwc")
            }
            _ => url.to_string(),
        };
        let options: AnyConnectOptions = url.parse()?;
        let pool = AnyPoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .acquire_timeout(Duration::from_millis(settings.acquire_timeout_ms.max(1)))
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                        conn.execute(
                            format!("PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}").as_str(),
                        )
                        .await?;
                    }
                    Ok(())
                })
            })
            .after_release(|conn, _meta| {
                Box::pin(async move {
                    // Silent past the limit: close it (Ok(false)).
                    tokio::time::timeout(RELEASE_CHECK_TIMEOUT, release_check(conn))
                        .await
                        .unwrap_or(Ok(false))
                })
            })
            .connect_with(options)
            .await?;
        Ok(Db {
            pool,
            backend,
            write_gate: (backend == Backend::Sqlite).then(|| Arc::new(tokio::sync::Mutex::new(()))),
            retries: settings.tx_retries,
            tx_timeout: Duration::from_millis(settings.tx_timeout_ms.max(1)),
            query_timings: None,
        })
    }

    /// The same pool, its transactions' timed store calls recorded in
    /// `timings` (see [`timing`]).
    pub fn with_query_timings(mut self, timings: Arc<crate::metrics::QueryTimings>) -> Db {
        self.query_timings = Some(timings);
        self
    }

    /// Where this handle records its timed store calls, if anywhere.
    pub fn query_timings(&self) -> Option<&crate::metrics::QueryTimings> {
        self.query_timings.as_deref()
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Applies the migrations of this backend (`migrations/sqlite` or
    /// `migrations/postgres`). Safe to run from several instances at once:
    /// sqlx takes a database lock while migrating.
    pub async fn migrate(&self) -> Result<(), sqlx::migrate::MigrateError> {
        self.migrate_through(i64::MAX).await
    }

    /// PostgreSQL: whether the server runs with `autovacuum = off`. Then
    /// nothing removes the dead rows every status change leaves in
    /// `coupons`, `orders` and the counters' delta queue, and nothing
    /// re-plans the statements prepared while the tables were small (the
    /// planner keeps their first plans until an ANALYZE): after a bulk job
    /// a coupon's primary-key UPDATE was seen walking a status index
    /// (docs/src/operations/postgresql.md). `false` on SQLite, which has no such setting.
    pub async fn autovacuum_off(&self) -> Result<bool, sqlx::Error> {
        if self.backend != Backend::Postgres {
            return Ok(false);
        }
        let setting: String = sqlx::query_scalar("SELECT current_setting('autovacuum')")
            .fetch_one(&self.pool)
            .await?;
        Ok(setting == "off")
    }

    /// Applies the migrations up to and including `last_version`: the tests
    /// of a migration write rows the way the version before it did.
    pub async fn migrate_through(
        &self,
        last_version: i64,
    ) -> Result<(), sqlx::migrate::MigrateError> {
        let mut migrator = match self.backend {
            Backend::Sqlite => sqlx::migrate!("migrations/sqlite"),
            Backend::Postgres => sqlx::migrate!("migrations/postgres"),
        };
        let kept: Vec<sqlx::migrate::Migration> = migrator
            .migrations
            .iter()
            .filter(|m| m.version <= last_version)
            .cloned()
            .collect();
        migrator.migrations = std::borrow::Cow::Owned(kept);
        migrator.run(&self.pool).await
    }

    /// Cheap liveness probe of the database, for `/readyz`.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        let mut conn = self.pool.acquire().await?;
        conn.ping().await
    }

    /// The database server's clock, in milliseconds since the epoch. On
    /// SQLite the "server" is this host, so it only tells the process's
    /// injected clock from the system's.
    pub async fn clock_ms(&self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar(self.clock_sql())
            .fetch_one(&self.pool)
            .await
    }

    /// The query that reads the database server's clock in milliseconds
    /// (`clock_timestamp()`, not `now()`: the latter is the start of the
    /// transaction).
    fn clock_sql(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => {
                "SELECT CAST(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) AS BIGINT)"
            }
            Backend::Sqlite => "SELECT CAST((julianday('now') - 2440587.5) * 86400000.0 AS BIGINT)",
        }
    }

    /// The span the caller's work in a transaction runs in: what
    /// [`capture::SqlCapture`] tells the service's statements by. Trace
    /// level, so a normal log filter disables it at its callsite.
    fn tx_span(&self) -> tracing::Span {
        tracing::trace_span!(capture::TX_SPAN, store = self.backend.name())
    }

    /// Runs `op` in one write transaction and commits it.
    ///
    /// SQLite: `BEGIN IMMEDIATE`, so the write lock is taken up front and a
    /// read-then-write transaction cannot fail half-way with SQLITE_BUSY.
    /// Both stores: a serialization failure, deadlock or busy error reruns
    /// the whole of `op` on a fresh transaction, at most `retries` times, with
    /// a short growing pause; clients never see those errors. Any `Err` from
    /// `op` rolls everything back. An attempt that has not committed after
    /// [`PoolSettings::tx_timeout_ms`] is abandoned (dropping it rolls it
    /// back, see [`release_check`]) and fails as unavailable.
    pub async fn write<T, E, F>(&self, mut op: F) -> Result<T, E>
    where
        F: for<'c> FnMut(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, E>>,
        E: From<sqlx::Error> + DbErrorSource,
    {
        let mut attempt: u32 = 0;
        loop {
            let result = {
                let _gate = match &self.write_gate {
                    Some(g) => Some(g.lock().await),
                    None => None,
                };
                match tokio::time::timeout(self.tx_timeout, self.write_once(&mut op)).await {
                    Ok(result) => result,
                    Err(_) => Err(E::from(tx_timed_out(self.tx_timeout))),
                }
            };
            match result {
                Err(e) if attempt < self.retries && e.db_error().is_some_and(is_retryable) => {
                    attempt += 1;
                    let jitter_ms = u64::from(rand::random::<u8>() % 10);
                    tokio::time::sleep(Duration::from_millis(u64::from(attempt) * 5 + jitter_ms))
                        .await;
                }
                other => return other,
            }
        }
    }

    async fn write_once<T, E, F>(&self, op: &mut F) -> Result<T, E>
    where
        F: for<'c> FnMut(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, E>>,
        E: From<sqlx::Error>,
    {
        let mut tx = match self.backend {
            Backend::Sqlite => self.begin("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.begin("BEGIN").await?,
        };
        let work = op(&mut tx).instrument(self.tx_span());
        match timing::scope(self.query_timings.clone(), work).await {
            Ok(value) => {
                tx.commit().await?;
                Ok(value)
            }
            Err(e) => {
                // Roll back now rather than on drop: sqlx only queues a
                // dropped transaction's ROLLBACK for the connection's next
                // use, and until then its locks stay held (SQLite's write
                // lock, PostgreSQL's advisory and row locks), so the next
                // transaction could find them taken. A failed rollback
                // closes the connection, which releases them as well.
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    /// Runs `op` in a read transaction, so everything it reads is one
    /// consistent snapshot. Never writes. Bounded by
    /// [`PoolSettings::tx_timeout_ms`] like [`Db::write`].
    pub async fn read<T, E, F>(&self, op: F) -> Result<T, E>
    where
        F: for<'c> FnMut(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, E>>,
        E: From<sqlx::Error>,
    {
        match tokio::time::timeout(self.tx_timeout, self.read_once(op)).await {
            Ok(result) => result,
            Err(_) => Err(E::from(tx_timed_out(self.tx_timeout))),
        }
    }

    /// Takes a connection and sends `statement` (a `BEGIN`) in a task of
    /// its own, so that a caller cancelled while the BEGIN is in flight (a
    /// client hung up, the transaction deadline) cannot leave a
    /// transaction nobody owns on a pooled connection. sqlx 0.8 counts a
    /// transaction only once BEGIN's answer is read: a BEGIN dropped
    /// before then goes back to the pool uncounted, the release check
    /// sees no transaction, and the next caller's BEGIN runs inside it
    /// (PostgreSQL: "there is already a transaction in progress"; after a
    /// read's `READ ONLY` BEGIN, the code job's next write failed with
    /// "cannot execute SELECT FOR UPDATE in a read-only transaction").
    /// In its own task the BEGIN completes; a transaction nobody takes
    /// any more is dropped there, which queues its ROLLBACK, and the
    /// release check runs it before the connection is reused.
    async fn begin(
        &self,
        statement: &'static str,
    ) -> Result<Transaction<'static, Any>, sqlx::Error> {
        let pool = self.pool.clone();
        tokio::spawn(async move { pool.begin_with(statement).await })
            .await
            .map_err(|_| sqlx::Error::WorkerCrashed)?
    }

    async fn read_once<T, E, F>(&self, mut op: F) -> Result<T, E>
    where
        F: for<'c> FnMut(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, E>>,
        E: From<sqlx::Error>,
    {
        let mut tx = match self.backend {
            Backend::Sqlite => self.begin("BEGIN").await?,
            Backend::Postgres => {
                self.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .await?
            }
        };
        let work = op(&mut tx).instrument(self.tx_span());
        let result = timing::scope(self.query_timings.clone(), work).await;
        // Ended explicitly either way (see `write_once`).
        let ended = tx.rollback().await;
        let value = result?;
        ended?;
        Ok(value)
    }
}

/// The database's clock for [`crate::clock::DatabaseClock`]: the round
/// trip is stamped after a connection is in hand, so a wait for the pool
/// does not widen it (and push the reading's midpoint early).
impl crate::clock::TimeSource for Db {
    fn sample<'a>(
        &'a self,
        ticks: &'a dyn crate::clock::Ticks,
    ) -> BoxFuture<'a, Result<crate::clock::TimeSample, crate::clock::TimeSourceError>> {
        Box::pin(async move {
            let mut conn = self.pool.acquire().await?;
            let sent_us = ticks.micros();
            let database_ms: i64 = sqlx::query_scalar(self.clock_sql())
                .fetch_one(&mut *conn)
                .await?;
            Ok(crate::clock::TimeSample {
                sent_us,
                database_ms,
                received_us: ticks.micros(),
            })
        })
    }
}

/// Whether a connection coming back to the pool may be reused: only when
/// no transaction is left open on it. A dropped `Transaction` queues its
/// ROLLBACK on the connection, so the depth can still read 1 here; a ping
/// goes through the same queue after that ROLLBACK, and what is still open
/// after it has no owner (see [`Db::connect_with`]).
async fn release_check(conn: &mut AnyConnection) -> Result<bool, sqlx::Error> {
    if !conn.is_in_transaction() {
        return Ok(true);
    }
    conn.ping().await?;
    let orphaned = conn.is_in_transaction();
    if orphaned {
        tracing::warn!(
            "closing a pooled connection left inside a transaction by a cancelled caller"
        );
    }
    Ok(!orphaned)
}

/// Serializes whatever the caller does under `key` for the rest of the
/// transaction. PostgreSQL: a transaction-scoped advisory lock on the
/// key's hash, shared by every instance on the database (a hash collision
/// only serializes two unrelated keys). SQLite: nothing to do, a write
/// transaction already holds the database lock.
pub async fn advisory_lock(conn: &mut AnyConnection, key: &str) -> Result<(), sqlx::Error> {
    if backend_of(conn) == Backend::Postgres {
        sqlx::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtext($1))) AS locked")
            .bind(key)
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Which backend a connection belongs to, for the few dialect branches.
/// `$first, $first+1, …` for `n` values: the parameters of an `IN (…)`.
pub(crate) fn param_list(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn backend_of(conn: &AnyConnection) -> Backend {
    if conn.backend_name().eq_ignore_ascii_case("postgresql") {
        Backend::Postgres
    } else {
        Backend::Sqlite
    }
}
