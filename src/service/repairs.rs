//! Repairs of a broken link between an order and its coupon (the anomaly
//! kinds `order_active_coupon_not_locked` and `coupon_order_mismatch`), of
//! a stale lock on a paid order (`locked_coupon_order_paid`) and of a
//! coupon its order's refunds by line did not return
//! (`coupon_not_returned_after_refunds`), decided by
//! [`crate::domain::repair`] and applied in one transaction that re-reads
//! every fact first. Support staff may run them: each is refused unless
//! every fact agrees, so it can only restore what the order and the
//! coupon's own history already say.

use super::orders::{order_view, release_bound_coupon};
use super::support::{coupon_facts, coupon_units, order_facts};
use super::views::OrderView;
use crate::domain::reason::parse_reason;
use sqlx::AnyConnection;

use super::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::domain::coupon::CouponStatus;
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::order::CouponLockStatus;
use crate::domain::repair::{LinkRepair, plan_link_repair, plan_mark_used, plan_return};
use crate::domain::time::to_ms;
use crate::store::{archive, coupons, orders};

/// The repairs of an order's coupon a person (or the shop's backend)
/// confirms, each with its own transaction below.
#[derive(Debug, Clone, Copy)]
enum Repair {
    /// [`Service::repair_coupon_link`].
    Link,
    /// [`Service::mark_coupon_used`].
    MarkUsed,
    /// [`Service::return_coupon`].
    Return,
}

impl Service {
    /// Repairs `order_no`'s link to `coupon_id`: locks the order's own
    /// freed coupon to it again (relock), or points the order at the coupon
    /// bound to it (relink). Refused with `repair_not_applicable` when the
    /// facts do not call for it; `reason` is required.
    pub async fn repair_coupon_link(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
        coupon_id: CouponId,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        self.run_repair(ctx, idem, order_no, coupon_id, reason, Repair::Link)
            .await
    }
}

impl Service {
    /// Marks `coupon_id`, still `locked` to the paid order `order_no` that
    /// names it, `used` for that order (the stale lock of
    /// `locked_coupon_order_paid`). One transaction: the facts are read
    /// again and checked ([`plan_mark_used`]), then the order row is
    /// updated on the condition that it is still in the status read and
    /// still names the coupon (its lock status becomes `used`; order event
    /// `mark_coupon_used`), then the coupon `locked` -> `used` on the
    /// condition that it is still locked to this order (coupon event
    /// `mark_used`). Either condition failing refuses the repair with
    /// `repair_not_applicable` and writes nothing. `reason` is required.
    pub async fn mark_coupon_used(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
        coupon_id: CouponId,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        self.run_repair(ctx, idem, order_no, coupon_id, reason, Repair::MarkUsed)
            .await
    }
}

impl Service {
    /// Returns `coupon_id`, still `used` by `order_no` after every unit it
    /// discounted was refunded by line, to its customer by the release
    /// rule (`available` while valid, else `expired`). One transaction:
    /// the order row is taken first, as refunds take it; the facts and the
    /// order's lines are read again and checked ([`plan_return`]); the
    /// order's lock status becomes `released` on the condition that it is
    /// still in the status read and still names the coupon (order event
    /// `return_coupon`); then the coupon `used` -> `available`/`expired`
    /// on the condition that it is still used by this order (coupon event
    /// `refund_release`). Refused with `repair_not_applicable` otherwise;
    /// `reason` is required.
    pub async fn return_coupon(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
        coupon_id: CouponId,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        self.run_repair(ctx, idem, order_no, coupon_id, reason, Repair::Return)
            .await
    }

    /// One repair of an order's coupon in its own write transaction, with
    /// the reason checked first.
    async fn run_repair(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
        coupon_id: CouponId,
        reason: Option<String>,
        repair: Repair,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let reason = parse_reason(reason)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let (order_no, coupon_id, reason, op) = (
                order_no.clone(),
                coupon_id.clone(),
                reason.clone(),
                op.clone(),
            );
            Box::pin(async move {
                let (no, coupon, why) = (&order_no, &coupon_id, reason.as_str());
                match repair {
                    Repair::Link => repair_coupon_link_tx(c, &op, no, coupon, why).await,
                    Repair::MarkUsed => mark_coupon_used_tx(c, &op, no, coupon, why).await,
                    Repair::Return => return_coupon_tx(c, &op, no, coupon, why).await,
                }
            })
        })
        .await
    }
}

/// The transaction of [`Service::return_coupon`].
async fn return_coupon_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    reason: &str,
) -> Result<OrderView, ServiceError> {
    let o = orders::get_for_update(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
    let coupon = archive::get_live_or_archived(c, coupon_id)
        .await?
        .ok_or_else(|| ServiceError::not_found("coupon", coupon_id.as_str()))?;
    let mut facts = order_facts(&o);
    facts.coupon_units = coupon_units(c, &o).await?;
    plan_return(&facts, &coupon_facts(&coupon)).map_err(|why| {
        ServiceError::refused(
            Refusal::RepairNotApplicable,
            format!(
                "coupon {coupon_id} cannot be returned from order {order_no}: {}",
                why.message()
            ),
        )
    })?;
    relink(
        c,
        &o,
        &coupon.id,
        CouponLockStatus::Released,
        "return_coupon",
        op,
        reason,
    )
    .await?;
    if !release_bound_coupon(c, op, &o, "refund_release", Some(reason)).await? {
        return Err(ServiceError::refused(
            Refusal::RepairNotApplicable,
            format!("coupon {coupon_id} changed meanwhile; read it again"),
        ));
    }
    let o = orders::get(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
    order_view(c, o, op.now, false).await
}

/// Points the order at `coupon_id`; refused when the order changed since it
/// was read.
async fn relink(
    c: &mut sqlx::AnyConnection,
    o: &crate::store::orders::OrderRow,
    coupon_id: &CouponId,
    lock_status: CouponLockStatus,
    action: &str,
    op: &super::Op,
    reason: &str,
) -> Result<(), ServiceError> {
    let changed = orders::relink_coupon(
        c,
        &orders::Relink {
            order_no: &o.order_no,
            status: o.status,
            expected_coupon_id: o.coupon_id.as_ref(),
            coupon_id,
            lock_status,
            action,
            actor: &op.ctx.actor,
            reason,
            request_id: op.ctx.request_id.as_deref(),
            trace_id: op.ctx.trace_id(),
            address: op.ctx.address.as_deref(),
            now_ms: to_ms(op.now),
        },
    )
    .await?;
    // The split follows the order to the coupon it now names: the
    // discount is the same.
    if changed && let Some(old) = o.coupon_id.as_ref().filter(|old| *old != coupon_id) {
        crate::store::order_lines::move_shares(c, &o.order_no, old, coupon_id).await?;
    }
    if changed {
        Ok(())
    } else {
        Err(ServiceError::refused(
            Refusal::RepairNotApplicable,
            format!("order {} changed meanwhile", o.order_no),
        ))
    }
}

/// The transaction of [`Service::mark_coupon_used`].
async fn mark_coupon_used_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    reason: &str,
) -> Result<OrderView, ServiceError> {
    let o = orders::get(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
    let coupon = coupons::get(c, coupon_id)
        .await?
        .ok_or_else(|| ServiceError::not_found("coupon", coupon_id.as_str()))?;
    plan_mark_used(&order_facts(&o), &coupon_facts(&coupon)).map_err(|why| {
        ServiceError::refused(
            Refusal::RepairNotApplicable,
            format!(
                "coupon {coupon_id} cannot be marked used for order {order_no}: {}",
                why.message()
            ),
        )
    })?;
    // The order row first (the fixed lock order of every
    // operation), so a refund or another repair waits for us or
    // we for it, and the status we read is checked again.
    relink(
        c,
        &o,
        &coupon.id,
        CouponLockStatus::Used,
        "mark_coupon_used",
        op,
        reason,
    )
    .await?;
    let used = coupons::transition(
        c,
        &coupons::CouponChange {
            coupon_id: &coupon.id,
            from: CouponStatus::Locked,
            to: CouponStatus::Used,
            order_no: Some(&o.order_no),
            action: "mark_used",
            actor: &op.ctx.actor,
            reason: Some(reason),
            request_id: op.ctx.request_id.as_deref(),
            trace: op.ctx.trace.as_ref(),
            address: op.ctx.address.as_deref(),
            now_ms: to_ms(op.now),
            day: op.day(),
        },
    )
    .await?;
    if !used {
        return Err(ServiceError::refused(
            Refusal::RepairNotApplicable,
            format!("coupon {coupon_id} changed meanwhile; read it again"),
        ));
    }
    let o = orders::get(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
    order_view(c, o, op.now, false).await
}

/// The transaction of [`Service::repair_coupon_link`]: relock or relink, as the
/// facts call for.
async fn repair_coupon_link_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    reason: &str,
) -> Result<OrderView, ServiceError> {
    let o = orders::get(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
    let candidate = coupons::get(c, coupon_id)
        .await?
        .ok_or_else(|| ServiceError::not_found("coupon", coupon_id.as_str()))?;
    let named = match o.coupon_id.as_ref() {
        Some(id) if *id == candidate.id => Some(candidate.clone()),
        Some(id) => coupons::get(c, id).await?,
        None => None,
    };
    let facts = order_facts(&o);
    let cand = coupon_facts(&candidate);
    let named_facts = named.as_ref().map(coupon_facts);
    let plan = plan_link_repair(&facts, named_facts.as_ref(), &cand, op.now).map_err(|why| {
        ServiceError::refused(
            Refusal::RepairNotApplicable,
            format!(
                "no repair of order {order_no} with coupon {coupon_id}: {}",
                why.message()
            ),
        )
    })?;
    let now_ms = to_ms(op.now);
    let request_id = op.ctx.request_id.as_deref();
    let address = op.ctx.address.as_deref();
    match plan {
        LinkRepair::Relock => {
            let locked = coupons::transition(
                c,
                &coupons::CouponChange {
                    coupon_id: &candidate.id,
                    from: CouponStatus::Available,
                    to: CouponStatus::Locked,
                    order_no: Some(&o.order_no),
                    action: "relock",
                    actor: &op.ctx.actor,
                    reason: Some(reason),
                    request_id,
                    trace: op.ctx.trace.as_ref(),
                    address,
                    now_ms,
                    day: op.day(),
                },
            )
            .await?;
            if !locked {
                return Err(ServiceError::refused(
                    Refusal::CouponNotAvailable,
                    format!("coupon {coupon_id} changed meanwhile or is not valid now"),
                ));
            }
            if o.coupon_lock_status != CouponLockStatus::Locked {
                relink(
                    c,
                    &o,
                    &candidate.id,
                    CouponLockStatus::Locked,
                    "relock_coupon",
                    op,
                    reason,
                )
                .await?;
            }
        }
        LinkRepair::Relink { lock_status } => {
            relink(
                c,
                &o,
                &candidate.id,
                lock_status,
                "relink_coupon",
                op,
                reason,
            )
            .await?;
        }
    }
    let o = orders::get(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
    order_view(c, o, op.now, false).await
}
