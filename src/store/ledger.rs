//! The `compensation_ledger` table: every cent handed out to make up for a
//! coupon, with who, why and for which order.

use sqlx::AnyConnection;

#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    pub user_id: &'a str,
    pub order_no: Option<&'a str>,
    pub coupon_id: Option<&'a str>,
    /// `final_payment_deduction` (taken off a final payment), `coupon`
    /// (a compensation coupon was issued) or `final_payment_coupon` (a
    /// `coupon`-mode campaign's final payment issued one).
    pub kind: &'static str,
    pub amount_cents: i64,
    pub reason: &'a str,
    pub actor: &'a str,
    pub request_id: Option<&'a str>,
    pub at_ms: i64,
}

pub async fn insert(conn: &mut AnyConnection, e: &NewEntry<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO compensation_ledger (user_id, order_no, coupon_id, kind, amount_cents, reason, actor, request_id, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(e.user_id)
    .bind(e.order_no)
    .bind(e.coupon_id)
    .bind(e.kind)
    .bind(e.amount_cents)
    .bind(e.reason)
    .bind(e.actor)
    .bind(e.request_id)
    .bind(e.at_ms)
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EntryRow {
    pub id: i64,
    pub user_id: String,
    pub order_no: Option<String>,
    pub coupon_id: Option<String>,
    pub kind: String,
    pub amount_cents: i64,
    pub reason: String,
    pub actor: String,
    pub at: i64,
}

/// Ledger entries of one order, oldest first (an order has at most a few).
pub async fn for_order(
    conn: &mut AnyConnection,
    order_no: &str,
) -> Result<Vec<EntryRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, user_id, order_no, coupon_id, kind, amount_cents, reason, actor, at
         FROM compensation_ledger WHERE order_no = $1 ORDER BY id LIMIT 100",
    )
    .bind(order_no)
    .fetch_all(conn)
    .await
}
