//! The `order_refunds`, `order_refund_lines` and `order_refund_coupons`
//! tables: refunds by line, what each returned per line and what each did
//! to each coupon (migration 0034).

use sqlx::AnyConnection;

use crate::domain::ids::{CouponId, OrderNo, RefundId};
use crate::domain::money::Cents;
use crate::domain::refund::CouponRefundOutcome;

/// One refund.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RefundRow {
    pub refund_id: RefundId,
    /// The whole-order refund of the units left (`POST .../refund`).
    pub whole: i64,
    pub reason: String,
    pub refund_cents: Cents,
    pub clawback_cents: Cents,
    pub actor: String,
    pub at: i64,
}

/// One refunded line of a refund.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RefundLineRow {
    pub refund_id: RefundId,
    pub line_no: i64,
    pub quantity: i64,
    pub refund_cents: Cents,
    pub discount_cents: Cents,
}

/// What one refund did to one coupon.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RefundCouponRow {
    pub refund_id: RefundId,
    pub coupon_id: CouponId,
    pub outcome: CouponRefundOutcome,
    pub clawback_cents: Cents,
    /// The coupon's share of the refunded units (migration 0035).
    pub discount_cents: Cents,
}

/// A refund to write, with its lines and coupons.
#[derive(Debug, Clone)]
pub struct NewRefund<'a> {
    pub order_no: &'a OrderNo,
    pub refund: RefundRow,
    pub lines: Vec<RefundLineRow>,
    pub coupons: Vec<RefundCouponRow>,
}

/// Refund lines per INSERT (5 parameters each).
const ROWS_PER_STATEMENT: usize = 100;

/// Writes a refund and its lines and coupons. A refund id the order
/// already has is a unique violation (the caller looked first, in the same
/// transaction; a concurrent twin loses here).
pub async fn insert(conn: &mut AnyConnection, r: &NewRefund<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO order_refunds (order_no, refund_id, whole, reason, refund_cents, clawback_cents, actor, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(r.order_no)
    .bind(&r.refund.refund_id)
    .bind(r.refund.whole)
    .bind(&r.refund.reason)
    .bind(r.refund.refund_cents)
    .bind(r.refund.clawback_cents)
    .bind(&r.refund.actor)
    .bind(r.refund.at)
    .execute(&mut *conn)
    .await?;
    // One statement per 100 rows (a refund names at most 500 lines).
    for chunk in r.lines.chunks(ROWS_PER_STATEMENT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|i| {
                let p = 2 + i * 5;
                format!(
                    "($1, ${}, ${}, ${}, ${}, ${})",
                    p,
                    p + 1,
                    p + 2,
                    p + 3,
                    p + 4
                )
            })
            .collect();
        let sql = format!(
            "INSERT INTO order_refund_lines (order_no, refund_id, line_no, quantity, refund_cents, discount_cents)
             VALUES {}",
            values.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(r.order_no);
        for l in chunk {
            q = q
                .bind(&l.refund_id)
                .bind(l.line_no)
                .bind(l.quantity)
                .bind(l.refund_cents)
                .bind(l.discount_cents);
        }
        q.execute(&mut *conn).await?;
    }
    for c in &r.coupons {
        sqlx::query(
            "INSERT INTO order_refund_coupons (order_no, refund_id, coupon_id, outcome, clawback_cents, discount_cents)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(r.order_no)
        .bind(&c.refund_id)
        .bind(&c.coupon_id)
        .bind(c.outcome.as_str())
        .bind(c.clawback_cents)
        .bind(c.discount_cents)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Most refunds one order lists: one per unit of its lines at most, and
/// no shop refunds an order this many times.
const MAX_REFUNDS: i64 = 1_000;

/// An order's refunds, oldest first.
pub async fn of_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<RefundRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT refund_id, whole, reason, refund_cents, clawback_cents, actor, at
         FROM order_refunds WHERE order_no = $1 ORDER BY at, refund_id LIMIT $2",
    )
    .bind(order_no)
    .bind(MAX_REFUNDS)
    .fetch_all(conn)
    .await
}

/// One refund of an order.
pub async fn get(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    refund_id: &RefundId,
) -> Result<Option<RefundRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT refund_id, whole, reason, refund_cents, clawback_cents, actor, at
         FROM order_refunds WHERE order_no = $1 AND refund_id = $2",
    )
    .bind(order_no)
    .bind(refund_id)
    .fetch_optional(conn)
    .await
}

/// Rows of `table` (`columns`, ordered by `order_by`) of an order's
/// refunds: all of them, or those of one refund.
async fn rows_of_refunds<T>(
    conn: &mut AnyConnection,
    (columns, table, order_by): (&str, &str, &str),
    order_no: &OrderNo,
    refund_id: Option<&RefundId>,
) -> Result<Vec<T>, sqlx::Error>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    let filter = if refund_id.is_some() {
        "AND refund_id = $2"
    } else {
        ""
    };
    let sql = format!(
        "SELECT {columns} FROM {table} WHERE order_no = $1 {filter} ORDER BY {order_by} LIMIT 100000"
    );
    let q = sqlx::query_as(&sql).bind(order_no);
    let q = match refund_id {
        Some(id) => q.bind(id),
        None => q,
    };
    q.fetch_all(conn).await
}

/// The refunded lines of an order's refunds (all of them, or one).
pub async fn lines_of(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    refund_id: Option<&RefundId>,
) -> Result<Vec<RefundLineRow>, sqlx::Error> {
    rows_of_refunds(
        conn,
        (
            "refund_id, line_no, quantity, refund_cents, discount_cents",
            "order_refund_lines",
            "refund_id, line_no",
        ),
        order_no,
        refund_id,
    )
    .await
}

/// The coupon outcomes of an order's refunds (all of them, or one).
pub async fn coupons_of(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    refund_id: Option<&RefundId>,
) -> Result<Vec<RefundCouponRow>, sqlx::Error> {
    rows_of_refunds(
        conn,
        (
            "refund_id, coupon_id, outcome, clawback_cents, discount_cents",
            "order_refund_coupons",
            "refund_id, coupon_id",
        ),
        order_no,
        refund_id,
    )
    .await
}
