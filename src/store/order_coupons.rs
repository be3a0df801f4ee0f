//! The `order_coupons` table: an order's further coupons, beyond the one
//! the order row names (migration 0036). Each row keeps its own discount,
//! its deposit snapshot and its lock state, and changes by a conditional
//! update on that state.

use sqlx::AnyConnection;

use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::money::Cents;
use crate::domain::order::CouponLockStatus;

/// Most further coupons an order can hold: one shop coupon per shop of
/// at most 500 lines.
pub const MAX_FURTHER_COUPONS: usize = 500;

/// One further coupon of an order.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FurtherCouponRow {
    /// From 1, in the order the coupons are listed.
    pub position: i64,
    pub coupon_id: CouponId,
    pub discount_cents: Cents,
    pub snapshot_cents: Cents,
    pub lock_status: CouponLockStatus,
    /// The expired coupon this one replaced at a presale order's final
    /// payment (migration 0038).
    pub replaced_coupon_id: Option<CouponId>,
    /// What the final payment deducted for it in its place (migration
    /// 0038).
    pub compensation_cents: Cents,
}

const COLUMNS: &str = "position, coupon_id, discount_cents, snapshot_cents, lock_status, replaced_coupon_id, compensation_cents";

/// Writes an order's further coupons (one statement each: an order has a
/// handful).
pub async fn insert(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    rows: &[FurtherCouponRow],
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("order_coupons.insert");
    for r in rows.iter().take(MAX_FURTHER_COUPONS) {
        sqlx::query(&format!(
            "INSERT INTO order_coupons (order_no, {COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(order_no)
        .bind(r.position)
        .bind(&r.coupon_id)
        .bind(r.discount_cents)
        .bind(r.snapshot_cents)
        .bind(r.lock_status.as_str())
        .bind(r.replaced_coupon_id.as_ref())
        .bind(r.compensation_cents)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// An order's further coupons, by position.
pub async fn of_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<FurtherCouponRow>, sqlx::Error> {
    let _timed = super::timing::call("order_coupons.of_order");
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM order_coupons WHERE order_no = $1 ORDER BY position LIMIT {MAX_FURTHER_COUPONS}"
    ))
    .bind(order_no)
    .fetch_all(conn)
    .await
}

/// Moves one further coupon's lock state from `from` to `to`; false when
/// it was not in `from` (a lost race).
pub async fn move_lock(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    (from, to): (CouponLockStatus, CouponLockStatus),
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("order_coupons.move_lock");
    let done = sqlx::query(
        "UPDATE order_coupons SET lock_status = $3
         WHERE order_no = $1 AND coupon_id = $2 AND lock_status = $4",
    )
    .bind(order_no)
    .bind(coupon_id)
    .bind(to.as_str())
    .bind(from.as_str())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Sets one further coupon's discount and deposit snapshot (the deposit
/// of a presale order), on the lock state the caller read.
pub async fn set_discount(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    lock_status: CouponLockStatus,
    (discount, snapshot): (Cents, Cents),
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("order_coupons.set_discount");
    let done = sqlx::query(
        "UPDATE order_coupons SET discount_cents = $3, snapshot_cents = $4
         WHERE order_no = $1 AND coupon_id = $2 AND lock_status = $5",
    )
    .bind(order_no)
    .bind(coupon_id)
    .bind(discount)
    .bind(snapshot)
    .bind(lock_status.as_str())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// How the final payment of a presale order settles one further coupon.
#[derive(Debug, Clone, Copy)]
pub struct Settled<'a> {
    /// The coupon on the order now: the held one, or its replacement.
    pub coupon_id: &'a CouponId,
    pub discount: Cents,
    /// Deducted from the final payment in the coupon's place.
    pub compensation: Cents,
    pub lock_status: CouponLockStatus,
}

/// Settles the further coupon `held` (locked to the order) at the final
/// payment: its discount and lock state, and, when it was replaced, the
/// replacement in its place with `held` kept as the one it replaced.
/// False when `held` was no longer locked on the order (a lost race).
pub async fn settle(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    held: &CouponId,
    to: Settled<'_>,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("order_coupons.settle");
    let replaced = (to.coupon_id != held).then_some(held);
    let done = sqlx::query(
        "UPDATE order_coupons
         SET coupon_id = $3, discount_cents = $4, lock_status = $5,
             replaced_coupon_id = COALESCE($6, replaced_coupon_id), compensation_cents = $7
         WHERE order_no = $1 AND coupon_id = $2 AND lock_status = 'locked'",
    )
    .bind(order_no)
    .bind(held)
    .bind(to.coupon_id)
    .bind(to.discount)
    .bind(to.lock_status.as_str())
    .bind(replaced)
    .bind(to.compensation)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The further coupons of several orders, each with its order.
pub async fn of_orders(
    conn: &mut AnyConnection,
    order_nos: &[OrderNo],
) -> Result<Vec<(OrderNo, FurtherCouponRow)>, sqlx::Error> {
    #[derive(sqlx::FromRow)]
    struct WithOrder {
        order_no: OrderNo,
        #[sqlx(flatten)]
        row: FurtherCouponRow,
    }
    let mut out = Vec::new();
    for chunk in order_nos.chunks(500) {
        let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT order_no, {COLUMNS} FROM order_coupons WHERE order_no IN ({})
             ORDER BY order_no, position",
            marks.join(", ")
        );
        let mut q = sqlx::query_as::<_, WithOrder>(&sql);
        for no in chunk {
            q = q.bind(no);
        }
        out.extend(
            q.fetch_all(&mut *conn)
                .await?
                .into_iter()
                .map(|w| (w.order_no, w.row)),
        );
    }
    Ok(out)
}

/// Whether `coupon_id` is a further coupon of order `order_no`.
pub async fn holds(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("order_coupons.holds");
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM order_coupons WHERE order_no = $1 AND coupon_id = $2",
    )
    .bind(order_no)
    .bind(coupon_id)
    .fetch_one(conn)
    .await?;
    Ok(n > 0)
}

/// One further coupon with its order and the coupon row's status and
/// order (`None`: not in the live table), as reconciliation reads them.
#[derive(Debug, Clone)]
pub struct FurtherWithCoupon {
    pub order_no: OrderNo,
    pub row: FurtherCouponRow,
    pub coupon: Option<(String, Option<OrderNo>)>,
}

/// The further coupons after `after` (order number, position), in that
/// order, at most `limit`, each with its coupon row's status and order.
pub async fn page_with_coupons(
    conn: &mut AnyConnection,
    after: (&OrderNo, i64),
    limit: i64,
) -> Result<Vec<FurtherWithCoupon>, sqlx::Error> {
    #[derive(sqlx::FromRow)]
    struct Joined {
        order_no: OrderNo,
        #[sqlx(flatten)]
        row: FurtherCouponRow,
        coupon_status: Option<String>,
        coupon_order_no: Option<OrderNo>,
    }
    let rows: Vec<Joined> = sqlx::query_as(
        "SELECT oc.order_no, oc.position, oc.coupon_id, oc.discount_cents, oc.snapshot_cents,
                oc.lock_status, oc.replaced_coupon_id, oc.compensation_cents,
                c.status AS coupon_status, c.order_no AS coupon_order_no
         FROM order_coupons AS oc LEFT JOIN coupons AS c ON c.id = oc.coupon_id
         WHERE oc.order_no > $1 OR (oc.order_no = $1 AND oc.position > $2)
         ORDER BY oc.order_no, oc.position LIMIT $3",
    )
    .bind(after.0)
    .bind(after.1)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|j| FurtherWithCoupon {
            order_no: j.order_no,
            row: j.row,
            coupon: j.coupon_status.map(|s| (s, j.coupon_order_no)),
        })
        .collect())
}
