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

/// Stores a first response. `Ok(false)`: a record for this key appeared
/// since the caller looked (another instance finished the same key in
/// between); nothing was written, and the caller rolls back and replays it.
pub async fn insert(
    conn: &mut AnyConnection,
    scope: &str,
    key: &str,
    fingerprint: &str,
    status_code: u16,
    body: &str,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "INSERT INTO idempotency_keys (scope, idem_key, fingerprint, status_code, body, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope, idem_key) DO NOTHING",
    )
    .bind(scope)
    .bind(key)
    .bind(fingerprint)
    .bind(i64::from(status_code))
    .bind(body)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
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

/// Takes the key's lock and reads its record. The lock: on PostgreSQL a
/// transaction-scoped advisory lock, tried without waiting, so a second
/// instance handling the same key at the same moment learns at once that
/// the first is still running (instead of blocking on the unique index);
/// always granted on SQLite, where one process owns the file.
///
/// On PostgreSQL both are one statement (one round trip per keyed write
/// instead of two). Its snapshot is taken before the lock is granted, so
/// a first request on another instance that commits in between is not
/// seen here: the record INSERT then finds the key taken ([`insert`]
/// returns false) and a refused operation re-reads the record after its
/// rollback (`service::Service::write`), so the caller still gets the
/// replay.
pub async fn lock_and_find(
    conn: &mut AnyConnection,
    lock_key: i64,
    scope: &str,
    key: &str,
) -> Result<(bool, Option<StoredResponse>), sqlx::Error> {
    match backend_of(conn) {
        Backend::Sqlite => Ok((true, find(conn, scope, key).await?)),
        Backend::Postgres => {
            let row = sqlx::query(
                "SELECT pg_try_advisory_xact_lock($1) AS got,
                        i.fingerprint, i.status_code, i.body, i.created_at
                 FROM (SELECT 1 AS one) AS probe
                 LEFT JOIN idempotency_keys i ON i.scope = $2 AND i.idem_key = $3",
            )
            .bind(lock_key)
            .bind(scope)
            .bind(key)
            .fetch_one(conn)
            .await?;
            let got: bool = row.try_get("got")?;
            let stored = match row.try_get::<Option<String>, _>("fingerprint")? {
                Some(fingerprint) => Some(StoredResponse {
                    fingerprint,
                    status_code: row.try_get("status_code")?,
                    body: row.try_get("body")?,
                    created_at: row.try_get("created_at")?,
                }),
                None => None,
            };
            Ok((got, stored))
        }
    }
}
