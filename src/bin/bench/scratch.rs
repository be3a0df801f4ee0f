//! The scratch databases of the benchmarks: a fresh SQLite file or
//! PostgreSQL database per scenario, removed afterwards, and closing a
//! pool before its database is dropped.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sqlx::{AnyConnection, Connection, Executor};

use couponkeeper::store::Db;

use crate::{Result, Store};

/// Default admin URL of the PostgreSQL server.
const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A database that exists only for one scenario.
pub(crate) enum Target {
    Sqlite { dir: PathBuf },
    Postgres { admin_url: String, name: String },
}

static DB_COUNTER: AtomicU32 = AtomicU32::new(0);

impl Target {
    /// Creates the empty database and returns its URL.
    pub(crate) async fn create(store: Store) -> Result<(Target, String)> {
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
    pub(crate) async fn remove(self) -> Result<()> {
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

/// Closes the pool once every connection is back in it. sqlx returns a
/// connection from a spawned task that first pings it; a ping still in
/// flight when the database is dropped fails with a warning. Waits at most
/// one second.
pub(crate) async fn close_pool(db: &Db) {
    for _ in 0..100 {
        let pool = db.pool();
        if pool.num_idle() >= pool.size() as usize {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    db.pool().close().await;
}
