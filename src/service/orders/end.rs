//! The end of an order: cancel (`closed`) or refund (`refunded`), with its
//! coupon released (locked) or returned (used) in the same transaction; a
//! used coupon archived since is brought back first.

use sqlx::AnyConnection;

use super::coupons::release_further;
use super::refunds::{refund_remainder, reverse_compensation};
use super::steps::{load_order, move_order, release_bound_coupon, require_status};
use super::view::order_view;
use crate::domain::ids::OrderNo;
use crate::domain::order::{CouponLockStatus, OrderStatus, OrderStep};
use crate::domain::reason::parse_reason;
use crate::domain::time::to_ms;
use crate::service::views::OrderView;
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Service, ServiceError};
use crate::store::archive;
use crate::store::coupons;
use crate::store::orders::{self, OrderRow};

/// Whether the order's coupon is bound to it, in the live table or (a used
/// coupon archived since) in the archive.
async fn coupon_bound_to(c: &mut AnyConnection, order: &OrderRow) -> Result<bool, ServiceError> {
    let Some(id) = order.coupon_id.as_ref() else {
        return Ok(false);
    };
    let row = match coupons::get(c, id).await? {
        Some(r) => Some(r),
        None => archive::get(c, id).await?,
    };
    Ok(row.is_some_and(|cp| cp.order_no.as_ref() == Some(&order.order_no)))
}

impl Service {
    /// Cancels an unpaid order (`closed`); a coupon locked to it is released
    /// in the same transaction.
    pub async fn cancel(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let reason = match reason {
            Some(r) => Some(parse_reason(Some(r))?),
            None => None,
        };
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                let from = require_status(
                    &o,
                    &[
                        OrderStatus::PendingPayment,
                        OrderStatus::PendingDeposit,
                        OrderStatus::DepositPaid,
                    ],
                )?;
                let stored =
                    end_order(c, &op, &o, from, OrderStep::Cancel, reason.as_deref()).await?;
                order_view(c, stored, op.now, false).await
            })
        })
        .await
    }

    /// Refunds a paid order (or a presale deposit): order `refunded`, its
    /// coupon released (locked) or returned (used) in the same transaction.
    pub async fn refund(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let reason = parse_reason(reason)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move {
                // Locked like a refund by line, so the two take turns.
                let o = orders::get_for_update(c, &order_no)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
                let from = require_status(
                    &o,
                    &[
                        OrderStatus::Paid,
                        OrderStatus::DepositPaid,
                        OrderStatus::FinalPaid,
                    ],
                )?;
                let stored = end_order(c, &op, &o, from, OrderStep::Refund, Some(&reason)).await?;
                order_view(c, stored, op.now, false).await
            })
        })
        .await
    }
}

/// Closes or refunds an order and releases or returns its coupon.
pub(crate) async fn end_order(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    from: OrderStatus,
    step: OrderStep,
    reason: Option<&str>,
) -> Result<OrderRow, ServiceError> {
    let now_ms = to_ms(op.now);
    let mut next = o.clone();
    match step {
        OrderStep::Refund => next.refunded_at = Some(now_ms),
        _ => next.closed_at = Some(now_ms),
    }
    next.checkout_lock_expires_at = None;
    if coupon_bound_to(c, o).await? {
        next.coupon_lock_status = CouponLockStatus::Released;
    }
    // A paid order's refund refunds every unit left, recorded by line.
    if step == OrderStep::Refund && matches!(from, OrderStatus::Paid | OrderStatus::FinalPaid) {
        // The order row first, as every refund takes it.
        orders::get_for_update(c, &o.order_no).await?;
        let plan = refund_remainder(c, op, o, reason.unwrap_or_default()).await?;
        next.refunded_cents = o.refunded_cents.saturating_add(plan.refund);
        next.refund_count = o.refund_count + 1;
    }
    let stored = move_order(c, op, from, step, &next, reason).await?;
    if step == OrderStep::Refund && from == OrderStatus::FinalPaid {
        reverse_compensation(c, op, o).await?;
    }
    let coupon_action = match step {
        OrderStep::Refund => "refund_release",
        _ => "cancel_release",
    };
    release_bound_coupon(c, op, o, coupon_action, reason).await?;
    release_further(c, op, o, coupon_action, reason).await?;
    Ok(stored)
}
