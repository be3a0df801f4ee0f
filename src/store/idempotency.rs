//! Stored `Idempotency-Key` results, scoped per API token.
//!
//! The claim, the state change and the stored response share one
//! transaction (see `service::idempotency`), so a crash can never leave a
//! key claimed without its response or a change made without its key.

use sqlx::{AnyConnection, Row};

use super::{Backend, backend_of};

/// A stored first response.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredResponse {
    pub fingerprint: String,
    pub status_code: i64,
    pub body: String,
    pub created_at: i64,
}

pub async fn find(
    conn: &mut AnyConnection,
    scope: &str,
    key: &str,
) -> Result<Option<StoredResponse>, sqlx::Error> {
    sqlx::query_as(
        "SELECT fingerprint, status_code, body, created_at FROM idempotency_keys WHERE scope = $1 AND idem_key = $2",
    )
    .bind(scope)
    .bind(key)
    .fetch_optional(conn)
    .await
}

/// Forgets a record older than the retention window so the key can be used
/// afresh.
pub async fn delete(conn: &mut AnyConnection, scope: &str, key: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM idempotency_keys WHERE scope = $1 AND idem_key = $2")
        .bind(scope)
        .bind(key)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn insert(
    conn: &mut AnyConnection,
    scope: &str,
    key: &str,
    fingerprint: &str,
    status_code: u16,
    body: &str,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO idempotency_keys (scope, idem_key, fingerprint, status_code, body, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(scope)
    .bind(key)
    .bind(fingerprint)
    .bind(i64::from(status_code))
    .bind(body)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes records created before `before_ms`, at most `batch` of them;
/// returns how many went. Bounded so a purge never holds locks for long.
pub async fn purge_older_than(
    conn: &mut AnyConnection,
    before_ms: i64,
    batch: i64,
) -> Result<u64, sqlx::Error> {
    let r = sqlx::query(
        "DELETE FROM idempotency_keys WHERE (scope, idem_key) IN
           (SELECT scope, idem_key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)",
    )
    .bind(before_ms)
    .bind(batch)
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// PostgreSQL only: tries to take a transaction-scoped advisory lock on the
/// key, so a second instance handling the same key at the same moment learns
/// at once that the first is still running (instead of blocking on the
/// unique index). Always true on SQLite, where one process owns the file.
pub async fn try_lock(conn: &mut AnyConnection, lock_key: i64) -> Result<bool, sqlx::Error> {
    match backend_of(conn) {
        Backend::Sqlite => Ok(true),
        Backend::Postgres => {
            let row = sqlx::query("SELECT pg_try_advisory_xact_lock($1) AS got")
                .bind(lock_key)
                .fetch_one(conn)
                .await?;
            row.try_get::<bool, _>("got")
        }
    }
}
