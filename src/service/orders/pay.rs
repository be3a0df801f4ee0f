//! Paying a normal order: its checkout-locked coupon becomes `used` and
//! the order `paid`, unless the checkout lock has lapsed.

use super::coupons::{coupons_of, move_all};
use super::steps::{load_order, move_order, require_kind, require_status};
use super::view::order_view;
use crate::domain::coupon::CouponStatus;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus, OrderStep};
use crate::domain::time::to_ms;
use crate::service::views::OrderView;
use sqlx::AnyConnection;

use crate::domain::ids::OrderNo;
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};

impl Service {
    /// Pays a normal order: coupon `used`, order `paid`.
    pub async fn pay(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let op = op.clone();
            Box::pin(async move { pay_tx(c, &op, &order_no).await })
        })
        .await
    }
}

/// The transaction of [`Service::pay`].
async fn pay_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
) -> Result<OrderView, ServiceError> {
    let o = load_order(c, order_no).await?;
    require_kind(&o, OrderKind::Normal)?;
    require_status(&o, &[OrderStatus::PendingPayment])?;
    let now_ms = to_ms(op.now);
    let mut next = o.clone();
    next.paid_at = Some(now_ms);
    if o.coupon_id.is_some() {
        if o.checkout_lock_expires_at.is_some_and(|t| t <= now_ms) {
            return Err(ServiceError::refused(
                Refusal::CheckoutLockExpired,
                "the checkout lock on this order's coupon has lapsed; the order will be closed",
            ));
        }
        next.coupon_lock_status = CouponLockStatus::Used;
    }
    next.checkout_lock_expires_at = None;
    let stored = move_order(
        c,
        op,
        OrderStatus::PendingPayment,
        OrderStep::Pay,
        &next,
        None,
    )
    .await?;
    let held = coupons_of(c, &o).await?;
    move_all(
        c,
        op,
        &o,
        &held,
        (CouponStatus::Locked, CouponStatus::Used),
        (CouponLockStatus::Locked, CouponLockStatus::Used),
        "use",
    )
    .await?;
    // A normal order's view reads nothing more: answer from
    // the row as stored instead of reading it again.
    order_view(c, stored, op.now, false).await
}
