//! The `outbox` table: messages for the outside world (webhooks), written in
//! the same transaction as the state change that causes them.

use sqlx::AnyConnection;

use super::{Backend, backend_of};
use crate::domain::ids::UserId;
use crate::domain::trace::{SAMPLED, TraceContext};

/// One message to write.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// `coupon.expired`, `coupon.locked`, ... (API.md, Webhooks).
    pub event_type: &'static str,
    pub user_id: Option<UserId>,
    /// The coupon or order the message is about.
    pub subject_id: Option<String>,
    /// The `data` of the delivered JSON.
    pub payload: String,
    pub created_at: i64,
}

/// Most rows in one INSERT: bounds the JSON document one statement carries.
const ROWS_PER_STATEMENT: usize = 1_000;

/// Writes messages, each chunk with one INSERT whose rows come from ONE
/// parameter, a JSON array, unpacked by the database (`json_to_recordset`
/// on PostgreSQL, `json_each` on SQLite). One parameter instead of five
/// per row: the statement text no longer depends on the row count (one
/// prepared statement), and SQLite binds a statement's parameters by name
/// lookups that cost time quadratic in their number (measured: 19 % of an
/// expiry batch went to `sqlite3_bind_parameter_name` with 2,500
/// parameters). Rows are inserted in the order given, so ids follow it.
pub async fn insert_many(conn: &mut AnyConnection, msgs: &[NewMessage]) -> Result<(), sqlx::Error> {
    insert_many_traced(conn, msgs, None).await
}

/// [`insert_many`] for messages a traced request caused: each keeps the
/// trace (`$2` its id, `$3` its flags, both null without one), so every
/// attempt of their deliveries sends a `traceparent` in it.
pub async fn insert_many_traced(
    conn: &mut AnyConnection,
    msgs: &[NewMessage],
    trace: Option<&TraceContext>,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("outbox.insert_many");
    let sql = insert_many_sql(backend_of(conn));
    let trace_id = trace.map(|t| t.trace_id.as_str());
    let trace_flags = trace.map(|t| i64::from(t.flags & SAMPLED));
    for chunk in msgs.chunks(ROWS_PER_STATEMENT) {
        let rows: Vec<serde_json::Value> = chunk
            .iter()
            .map(|m| {
                serde_json::json!({
                    "event_type": m.event_type,
                    "user_id": m.user_id,
                    "subject_id": m.subject_id,
                    "payload": m.payload,
                    "created_at": m.created_at,
                })
            })
            .collect();
        let doc = serde_json::Value::Array(rows).to_string();
        sqlx::query(sql)
            .bind(doc)
            .bind(trace_id)
            .bind(trace_flags)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The statement of [`insert_many`] (`$1` the JSON array of rows, `$2`
/// and `$3` the trace id and flags of them all).
fn insert_many_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => {
            "INSERT INTO outbox (event_type, user_id, subject_id, payload, created_at, dispatched_at, trace_id, trace_flags)
             SELECT r.event_type, r.user_id, r.subject_id, r.payload, r.created_at, NULL,
                    CAST($2 AS TEXT), CAST($3 AS BIGINT)
             FROM ROWS FROM (json_to_recordset(CAST($1 AS json))
                  AS (event_type TEXT, user_id TEXT, subject_id TEXT, payload TEXT, created_at BIGINT))
                  WITH ORDINALITY AS r(event_type, user_id, subject_id, payload, created_at, n)
             ORDER BY r.n"
        }
        Backend::Sqlite => {
            "INSERT INTO outbox (event_type, user_id, subject_id, payload, created_at, dispatched_at, trace_id, trace_flags)
             SELECT json_extract(value, '$.event_type'), json_extract(value, '$.user_id'),
                    json_extract(value, '$.subject_id'), json_extract(value, '$.payload'),
                    json_extract(value, '$.created_at'), NULL, $2, $3
             FROM json_each($1) ORDER BY key"
        }
    }
}

/// Messages not yet dispatched (for tests and the console).
pub async fn count_pending(conn: &mut AnyConnection, event_type: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM outbox WHERE event_type = $1 AND dispatched_at IS NULL",
    )
    .bind(event_type)
    .fetch_one(conn)
    .await
}

/// Messages not yet fanned out into deliveries, and when the oldest of
/// them was written (`/metrics`). Both read the partial index
/// `outbox_undispatched_idx`, which holds only those messages; the oldest
/// is the first in id order.
pub async fn undispatched_summary(
    conn: &mut AnyConnection,
) -> Result<(i64, Option<i64>), sqlx::Error> {
    let _timed = super::timing::call("outbox.undispatched_summary");
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM outbox WHERE dispatched_at IS NULL",
    )
    .fetch_one(&mut *conn)
    .await?;
    let oldest: Option<i64> = sqlx::query_scalar(
        "SELECT created_at FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT 1",
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok((n, oldest))
}
