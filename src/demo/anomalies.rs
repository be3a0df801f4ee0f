//! The planted anomalies: after the story, five kinds of broken record
//! (kinds of `GET /reconciliation`) made with raw SQL, the way a bug or a
//! hand edit of the database would leave them.

use chrono::{DateTime, Utc};

use super::DemoError;
use super::seed::step;
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::time::to_ms;
use crate::service::ServiceError;
use crate::store::Db;

/// Order numbers and coupons the anomalies are planted on.
#[derive(Debug)]
pub(super) struct ToPlant {
    /// Presale order to close while its coupon stays locked.
    pub(super) closed_with_locked_coupon: OrderNo,
    /// Deposit-paid order whose coupon is freed.
    pub(super) active_with_free_coupon: (OrderNo, CouponId),
    /// Paid order to re-point at `.1` (another coupon of the same user).
    pub(super) mismatch: (OrderNo, CouponId),
    /// Normal pending order whose checkout lock is moved into the past.
    pub(super) stale_checkout: OrderNo,
    /// Paid order of lines, partly refunded, whose other discounted lines
    /// are marked refunded by hand while its coupon stays used.
    pub(super) refunds_left_used: OrderNo,
}

/// Plants the anomalies with raw SQL, in one transaction, after the story.
/// These edits deliberately bypass the service: they are what a bug or a
/// hand edit of the database leaves behind, so no event row records them,
/// and they are what `GET /reconciliation` and the console exist to find.
pub(super) async fn plant_anomalies(
    db: &Db,
    p: &ToPlant,
    now: DateTime<Utc>,
) -> Result<(), DemoError> {
    let now_ms = to_ms(now);
    let closed = p.closed_with_locked_coupon.clone();
    let (free_order, free_coupon) = p.active_with_free_coupon.clone();
    let (mismatch_order, other_coupon) = p.mismatch.clone();
    let stale = p.stale_checkout.clone();
    let left_used = p.refunds_left_used.clone();
    db.write::<(), ServiceError, _>(move |c| {
        let closed = closed.clone();
        let free_order = free_order.clone();
        let free_coupon = free_coupon.clone();
        let mismatch_order = mismatch_order.clone();
        let other_coupon = other_coupon.clone();
        let stale = stale.clone();
        let left_used = left_used.clone();
        Box::pin(async move {
            // locked_coupon_order_closed: the shop's order system closed the
            // deposit-paid order straight in the database (as an old admin
            // script did), so its coupon was never released and stays
            // `locked` to a closed order.
            let n = sqlx::query(
                "UPDATE orders SET status = 'closed', closed_at = $2, updated_at = $2 \
                 WHERE order_no = $1 AND status = 'deposit_paid'",
            )
            .bind(&closed)
            .bind(now_ms - 20 * 60_000)
            .execute(&mut *c)
            .await?
            .rows_affected();
            one_row(n, "close the presale order")?;
            // order_active_coupon_not_locked: someone "gave the coupon back"
            // to the customer by hand; the order is still deposit_paid and
            // counts on a coupon that is `available` again.
            let n = sqlx::query(
                "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL, \
                 updated_at = $3 WHERE id = $1 AND order_no = $2 AND status = 'locked'",
            )
            .bind(&free_coupon)
            .bind(&free_order)
            .bind(now_ms - 90 * 60_000)
            .execute(&mut *c)
            .await?
            .rows_affected();
            one_row(n, "free the coupon")?;
            // coupon_order_mismatch: a bad data fix re-pointed a paid order
            // at another coupon of the same customer; the coupon it used
            // still names the order, the order names a different coupon.
            let n = sqlx::query("UPDATE orders SET coupon_id = $2 WHERE order_no = $1")
                .bind(&mismatch_order)
                .bind(&other_coupon)
                .execute(&mut *c)
                .await?
                .rows_affected();
            one_row(n, "re-point the order")?;
            // stale_checkout_lock: an app server with a fast clock wrote a
            // checkout lock that had already lapsed; the order is still
            // pending_payment and its coupon still `locked`, waiting for the
            // lapse job (which, in `serve`, closes it at its first sweep).
            let n = sqlx::query(
                "UPDATE orders SET checkout_lock_expires_at = $2 \
                 WHERE order_no = $1 AND status = 'pending_payment'",
            )
            .bind(&stale)
            .bind(now_ms - 10 * 60_000)
            .execute(&mut *c)
            .await?
            .rows_affected();
            one_row(n, "backdate the checkout lock")?;
            // coupon_not_returned_after_refunds: the shop's returns script
            // marked the rest of the cart's discounted items refunded
            // straight in the database, money included, so the refund that
            // would have given the coupon back never ran: the coupon stays
            // `used` although every item it discounted came back.
            let n = sqlx::query(
                "UPDATE order_lines SET refunded_quantity = quantity, \
                 refunded_cents = quantity * unit_price_cents - COALESCE((SELECT SUM(d.cents) \
                   FROM order_line_discounts d WHERE d.order_no = order_lines.order_no \
                   AND d.line_no = order_lines.line_no), 0) \
                 WHERE order_no = $1 AND refunded_quantity < quantity AND EXISTS \
                   (SELECT 1 FROM order_line_discounts d WHERE d.order_no = order_lines.order_no \
                    AND d.line_no = order_lines.line_no AND d.cents > 0)",
            )
            .bind(&left_used)
            .execute(&mut *c)
            .await?
            .rows_affected();
            if n != 2 {
                return Err(ServiceError::IllegalTransition(format!(
                    "planting: mark the cart's beauty lines refunded changed {n} rows instead of 2"
                )));
            }
            Ok(())
        })
    })
    .await
    .map_err(|e| match e {
        ServiceError::Db(e) => DemoError::Db(e),
        other => step("plant anomalies")(other),
    })
}

/// A planting edit must change exactly one row, or the story and the
/// planting have drifted apart.
fn one_row(n: u64, what: &str) -> Result<(), ServiceError> {
    if n == 1 {
        Ok(())
    } else {
        Err(ServiceError::IllegalTransition(format!(
            "planting: {what} changed {n} rows instead of 1"
        )))
    }
}
