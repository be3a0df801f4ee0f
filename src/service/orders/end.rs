//! The end of an order: cancel (`closed`) or refund (`refunded`), with its
//! coupon released (locked) or returned (used) in the same transaction; a
//! used coupon archived since is brought back first.

use sqlx::AnyConnection;

use super::steps::{load_order, move_coupon, move_order, require_status};
use super::view::order_view;
use crate::domain::coupon::{CouponStatus, release_target};
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::order::{CouponLockStatus, OrderStatus, OrderStep};
use crate::domain::reason::parse_reason;
use crate::domain::time::{from_ms, to_ms};
use crate::service::views::OrderView;
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::archive;
use crate::store::coupons::{self, CouponRow};
use crate::store::events::{self, NewEvent};
use crate::store::orders::OrderRow;

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

/// The order's coupon from the live table; a coupon the order used that
/// the archive job has moved away since (30 days after the use) is brought
/// back first, with its events and an event saying so, so that returning
/// it works as for any other coupon. In the caller's transaction.
async fn live_coupon_of(
    c: &mut AnyConnection,
    op: &Op,
    order: &OrderRow,
    coupon_id: &CouponId,
    action: &str,
) -> Result<Option<CouponRow>, ServiceError> {
    if let Some(row) = coupons::get(c, coupon_id).await? {
        return Ok(Some(row));
    }
    let Some(row) = archive::restore_used(c, coupon_id, &order.order_no).await? else {
        return Ok(None);
    };
    let why = format!("archived coupon brought back to the live table for {action}");
    events::insert(
        c,
        &NewEvent {
            subject: "coupon",
            coupon_id: Some(coupon_id),
            order_no: Some(&order.order_no),
            from_status: Some(row.status.as_str()),
            to_status: row.status.as_str(),
            action: "unarchive",
            actor: &op.ctx.actor,
            reason: Some(&why),
            request_id: op.ctx.request_id.as_deref(),
            address: op.ctx.address.as_deref(),
            at_ms: to_ms(op.now),
        },
    )
    .await?;
    Ok(Some(row))
}

/// Releases (locked) or returns (used) the order's coupon, if it is still
/// bound to this order: `available` while valid, else `expired`. A used
/// coupon already archived is brought back first. Returns whether a coupon
/// was released.
async fn release_bound_coupon(
    c: &mut AnyConnection,
    op: &Op,
    order: &OrderRow,
    action: &str,
    reason: Option<&str>,
) -> Result<bool, ServiceError> {
    let Some(coupon_id) = order.coupon_id.as_ref() else {
        return Ok(false);
    };
    let Some(coupon) = live_coupon_of(c, op, order, coupon_id, action).await? else {
        return Ok(false);
    };
    let from = coupon.status;
    let bound_here = coupon.order_no.as_ref() == Some(&order.order_no);
    if !bound_here || !matches!(from, CouponStatus::Locked | CouponStatus::Used) {
        return Ok(false);
    }
    let to = release_target(from_ms(coupon.ends_at), op.now);
    if !move_coupon(
        c,
        op,
        coupon_id,
        (from, to),
        &order.order_no,
        action,
        reason,
    )
    .await?
    {
        return Err(ServiceError::refused(
            Refusal::CouponLockMismatch,
            "the coupon changed meanwhile; try again",
        ));
    }
    Ok(true)
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
                let o = load_order(c, &order_no).await?;
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
    let stored = move_order(c, op, from, step, &next, reason).await?;
    let coupon_action = match step {
        OrderStep::Refund => "refund_release",
        _ => "cancel_release",
    };
    release_bound_coupon(c, op, o, coupon_action, reason).await?;
    Ok(stored)
}
