//! The `support_requests` table (migration 0040): customers' requests for
//! support from the self-check page. SQL only; the rules are in
//! `domain::support_request`, the transactions in
//! `service::support_requests`.

use sqlx::AnyConnection;

use crate::domain::ids::{OrderNo, UserId};

/// A stored request.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct RequestRow {
    pub id: String,
    pub user_id: UserId,
    pub order_no: OrderNo,
    pub note: Option<String>,
    /// `ok`, `warning` or `problem`.
    pub overall: String,
    /// JSON array of `domain::support_request::RecordedFinding`.
    pub findings: String,
    /// `open` or `handled`.
    pub status: String,
    pub created_at: i64,
    pub handled_at: Option<i64>,
    pub handled_by: Option<String>,
}

const COLUMNS: &str =
    "id, user_id, order_no, note, overall, findings, status, created_at, handled_at, handled_by";

pub async fn insert(conn: &mut AnyConnection, r: &RequestRow) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("support_requests.insert");
    sqlx::query(&format!(
        "INSERT INTO support_requests ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(&r.id)
    .bind(&r.user_id)
    .bind(&r.order_no)
    .bind(&r.note)
    .bind(&r.overall)
    .bind(&r.findings)
    .bind(&r.status)
    .bind(r.created_at)
    .bind(r.handled_at)
    .bind(&r.handled_by)
    .execute(conn)
    .await?;
    Ok(())
}

/// When the latest request for the order was sent, in ms: one probe of
/// `support_requests_order_idx`.
pub async fn latest_for_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Option<i64>, sqlx::Error> {
    let _timed = super::timing::call("support_requests.latest_for_order");
    sqlx::query_scalar("SELECT MAX(created_at) FROM support_requests WHERE order_no = $1")
        .bind(order_no)
        .fetch_one(conn)
        .await
}

/// The user's latest request per order since `since_ms`: `(order_no,
/// created_at)`, at most `limit` orders.
pub async fn latest_of_user_since(
    conn: &mut AnyConnection,
    user_id: &UserId,
    since_ms: i64,
    limit: i64,
) -> Result<Vec<(OrderNo, i64)>, sqlx::Error> {
    let _timed = super::timing::call("support_requests.latest_of_user_since");
    sqlx::query_as(
        "SELECT order_no, MAX(created_at) FROM support_requests
         WHERE user_id = $1 AND created_at > $2
         GROUP BY order_no ORDER BY MAX(created_at) DESC LIMIT $3",
    )
    .bind(user_id)
    .bind(since_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

pub async fn get(conn: &mut AnyConnection, id: &str) -> Result<Option<RequestRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM support_requests WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Requests of one status: open ones oldest first (a queue), handled
/// ones newest first; at most `limit`.
pub async fn list(
    conn: &mut AnyConnection,
    status: &str,
    limit: i64,
) -> Result<Vec<RequestRow>, sqlx::Error> {
    let _timed = super::timing::call("support_requests.list");
    let order = if status == "open" {
        "created_at, id"
    } else {
        "created_at DESC, id DESC"
    };
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM support_requests WHERE status = $1 ORDER BY {order} LIMIT $2"
    ))
    .bind(status)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// How many requests have this status (the queue's size, beside its
/// bounded page).
pub async fn count(conn: &mut AnyConnection, status: &str) -> Result<i64, sqlx::Error> {
    let _timed = super::timing::call("support_requests.count");
    sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM support_requests WHERE status = $1")
        .bind(status)
        .fetch_one(conn)
        .await
}

/// One order's requests, newest first, at most `limit`.
pub async fn for_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    limit: i64,
) -> Result<Vec<RequestRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM support_requests WHERE order_no = $1
         ORDER BY created_at DESC, id DESC LIMIT $2"
    ))
    .bind(order_no)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Marks an open request handled with one conditional update; false when
/// it was not open (already handled, or no such request).
pub async fn mark_handled(
    conn: &mut AnyConnection,
    id: &str,
    by: &str,
    at_ms: i64,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("support_requests.mark_handled");
    let r = sqlx::query(
        "UPDATE support_requests SET status = 'handled', handled_at = $3, handled_by = $2
         WHERE id = $1 AND status = 'open'",
    )
    .bind(id)
    .bind(by)
    .bind(at_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}
