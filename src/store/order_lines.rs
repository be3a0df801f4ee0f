//! The `order_lines` and `order_line_discounts` tables: an order's lines
//! and each coupon's share of each line it covers (migration 0034).

use sqlx::AnyConnection;

use crate::domain::allocation::Split;
use crate::domain::ids::{CouponId, LineId, OrderNo, ShopId, Sku};
use crate::domain::line::Line;
use crate::domain::money::Cents;

/// One stored line.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LineRow {
    /// 0-based, the order the shop sent the lines in.
    pub line_no: i64,
    pub line_id: LineId,
    pub sku: Option<Sku>,
    pub category: String,
    pub shop_id: Option<ShopId>,
    pub quantity: i64,
    pub unit_price_cents: Cents,
    pub refunded_quantity: i64,
    pub refunded_cents: Cents,
}

impl LineRow {
    /// The line as the rules read it.
    pub fn line(&self) -> Line {
        Line {
            line_id: self.line_id.clone(),
            sku: self.sku.clone(),
            category: self.category.clone(),
            shop_id: self.shop_id.clone(),
            quantity: self.quantity,
            unit_price: self.unit_price_cents,
        }
    }
}

/// One coupon's share of one line.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ShareRow {
    pub coupon_id: CouponId,
    pub line_no: i64,
    pub cents: Cents,
}

const COLUMNS: &str = "line_no, line_id, sku, category, shop_id, quantity, unit_price_cents, \
     refunded_quantity, refunded_cents";

/// Most lines one INSERT carries (8 parameters each): an order's 500 lines
/// go in 5 statements, far below either store's parameter limit.
const LINES_PER_STATEMENT: usize = 100;

/// Inserts an order's lines, numbered from 0 in the given order, nothing
/// refunded; `refunded` gives, per line, units and cents already refunded
/// (an order's lines written for the first time after refunds recorded on
/// the order row alone).
pub async fn insert(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    lines: &[Line],
    refunded: &[(i64, Cents)],
) -> Result<(), sqlx::Error> {
    for (chunk_no, chunk) in lines.chunks(LINES_PER_STATEMENT).enumerate() {
        let mut values = Vec::with_capacity(chunk.len());
        for i in 0..chunk.len() {
            let p = i * 10;
            values.push(format!(
                "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6,
                p + 7,
                p + 8,
                p + 9,
                p + 10
            ));
        }
        let sql = format!(
            "INSERT INTO order_lines (order_no, {COLUMNS}) VALUES {}",
            values.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for (i, l) in chunk.iter().enumerate() {
            let line_no = chunk_no * LINES_PER_STATEMENT + i;
            let (units, cents) = refunded.get(line_no).copied().unwrap_or((0, Cents::ZERO));
            q = q
                .bind(order_no)
                .bind(i64::try_from(line_no).unwrap_or(i64::MAX))
                .bind(&l.line_id)
                .bind(&l.sku)
                .bind(&l.category)
                .bind(&l.shop_id)
                .bind(l.quantity)
                .bind(l.unit_price)
                .bind(units)
                .bind(cents);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// An order's lines in order; empty for an order stored before lines
/// existed and not migrated (a row an older release wrote meanwhile).
pub async fn of_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<LineRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM order_lines WHERE order_no = $1 ORDER BY line_no LIMIT 1000"
    ))
    .bind(order_no)
    .fetch_all(conn)
    .await
}

/// The rows of `select` (a statement ending in `WHERE order_no IN`) for
/// several orders, `order_nos` filling the list, each with its order.
async fn for_orders<T>(
    conn: &mut AnyConnection,
    select: &str,
    order: &str,
    order_nos: &[OrderNo],
) -> Result<Vec<(OrderNo, T)>, sqlx::Error>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    #[derive(sqlx::FromRow)]
    struct Row<T> {
        order_no: OrderNo,
        #[sqlx(flatten)]
        row: T,
    }
    if order_nos.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "{select} ({}) ORDER BY {order}",
        super::param_list(1, order_nos.len())
    );
    let mut q = sqlx::query_as::<_, Row<T>>(&sql);
    for no in order_nos {
        q = q.bind(no);
    }
    Ok(q.fetch_all(conn)
        .await?
        .into_iter()
        .map(|r| (r.order_no, r.row))
        .collect())
}

/// The lines of several orders (a page of a list), each with its order.
pub async fn of_orders(
    conn: &mut AnyConnection,
    order_nos: &[OrderNo],
) -> Result<Vec<(OrderNo, LineRow)>, sqlx::Error> {
    let select = format!("SELECT order_no, {COLUMNS} FROM order_lines WHERE order_no IN");
    for_orders(conn, &select, "order_no, line_no", order_nos).await
}

/// Every share of the lines of several orders, each with its order.
pub async fn shares_of_orders(
    conn: &mut AnyConnection,
    order_nos: &[OrderNo],
) -> Result<Vec<(OrderNo, ShareRow)>, sqlx::Error> {
    let select =
        "SELECT order_no, coupon_id, line_no, cents FROM order_line_discounts WHERE order_no IN";
    for_orders(conn, select, "order_no, coupon_id, line_no", order_nos).await
}

/// Every coupon's share of every line of an order.
pub async fn shares_of(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<ShareRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT coupon_id, line_no, cents FROM order_line_discounts WHERE order_no = $1
         ORDER BY coupon_id, line_no LIMIT 10000",
    )
    .bind(order_no)
    .fetch_all(conn)
    .await
}

/// Replaces `coupon_id`'s split on the order with `split` (one entry per
/// line: `Some(share)` where it covers the line).
pub async fn replace_shares(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    split: &Split,
) -> Result<(), sqlx::Error> {
    delete_shares(conn, order_no, coupon_id).await?;
    let rows: Vec<(i64, Cents)> = split
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|c| (i64::try_from(i).unwrap_or(i64::MAX), c)))
        .collect();
    for chunk in rows.chunks(LINES_PER_STATEMENT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|i| format!("($1, $2, ${}, ${})", 3 + i * 2, 4 + i * 2))
            .collect();
        let sql = format!(
            "INSERT INTO order_line_discounts (order_no, coupon_id, line_no, cents) VALUES {}",
            values.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(order_no).bind(coupon_id);
        for (line_no, cents) in chunk {
            q = q.bind(*line_no).bind(*cents);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// Removes `coupon_id`'s split from the order (its outcome at the final
/// payment took its discount away).
pub async fn delete_shares(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM order_line_discounts WHERE order_no = $1 AND coupon_id = $2")
        .bind(order_no)
        .bind(coupon_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Gives `from`'s shares of the order's lines to `to` (the order was
/// pointed at the coupon actually bound to it, with the same discount).
pub async fn move_shares(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    from: &CouponId,
    to: &CouponId,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE order_line_discounts SET coupon_id = $3 WHERE order_no = $1 AND coupon_id = $2",
    )
    .bind(order_no)
    .bind(from)
    .bind(to)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records `units` more refunded units and `cents` more refunded money on
/// one line, only while `before` units were refunded (the conditional
/// update that keeps two refunds of the same units from both
/// succeeding). `Ok(false)`: the line changed meanwhile; nothing written.
pub async fn add_refund(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    line_no: i64,
    before: i64,
    units: i64,
    cents: Cents,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE order_lines SET refunded_quantity = refunded_quantity + $4,
             refunded_cents = refunded_cents + $5
         WHERE order_no = $1 AND line_no = $2 AND refunded_quantity = $3
           AND refunded_quantity + $4 <= quantity",
    )
    .bind(order_no)
    .bind(line_no)
    .bind(before)
    .bind(units)
    .bind(cents)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}
