//! The `outbox` table: messages for the outside world (webhooks), written in
//! the same transaction as the state change that causes them.

use sqlx::AnyConnection;

/// One message to write.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// `coupon.expired`, `coupon.locked`, ... (API.md, Webhooks).
    pub event_type: &'static str,
    pub user_id: Option<String>,
    /// The coupon or order the message is about.
    pub subject_id: Option<String>,
    /// The `data` of the delivered JSON.
    pub payload: String,
    pub created_at: i64,
}

/// Most rows in one multi-row INSERT: 6 parameters each stays far below
/// both stores' parameter limits.
const ROWS_PER_STATEMENT: usize = 500;

/// Writes messages with multi-row INSERTs (bounded per statement).
pub async fn insert_many(conn: &mut AnyConnection, msgs: &[NewMessage]) -> Result<(), sqlx::Error> {
    for chunk in msgs.chunks(ROWS_PER_STATEMENT) {
        let mut sql = String::from(
            "INSERT INTO outbox (event_type, user_id, subject_id, payload, created_at, dispatched_at) VALUES ",
        );
        for i in 0..chunk.len() {
            let b = i * 5;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, ${}, ${}, ${}, ${}, NULL)",
                b + 1,
                b + 2,
                b + 3,
                b + 4,
                b + 5
            ));
        }
        let mut q = sqlx::query(&sql);
        for m in chunk {
            q = q
                .bind(m.event_type)
                .bind(m.user_id.clone())
                .bind(m.subject_id.clone())
                .bind(m.payload.clone())
                .bind(m.created_at);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
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
