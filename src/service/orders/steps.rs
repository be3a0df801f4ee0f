//! What every stage of an order uses: the refund or release reason, the
//! coupon checks for an order, reading an order row (kind, status, money)
//! and its campaign, loading rows, the conditional transitions of an
//! order and of a coupon (a lost race becomes a refusal).

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use crate::domain::campaign::{PaymentWindow, Policy};
use crate::domain::coupon::{CouponStatus, Unusable, release_target};
use crate::domain::discount::CouponTerms;
use crate::domain::ids::{CampaignId, CouponId, OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::order::{OrderKind, OrderMoney, OrderStatus, OrderStep};
use crate::domain::picker::{CouponOnOrder, OrderTerms, Unfit, discount_on_order};
use crate::domain::time::{from_ms, to_ms};
use crate::service::views::coupon_terms;
use crate::service::{Op, Refusal, ServiceError};
use crate::store::archive;
use crate::store::campaigns::{self, CampaignRow};
use crate::store::coupons::{self, CouponChange, CouponRow};
use crate::store::events::{self, NewEvent};
use crate::store::orders::{self, OrderChange, OrderRow};

fn unusable(u: Unusable) -> ServiceError {
    match u {
        Unusable::NotOwned => ServiceError::refused(
            Refusal::CouponNotOwned,
            "this coupon belongs to another user",
        ),
        Unusable::NotAvailable => ServiceError::refused(
            Refusal::CouponNotAvailable,
            "this coupon is not available: it is locked, used or invalidated",
        ),
        Unusable::Expired => {
            ServiceError::refused(Refusal::CouponExpired, "this coupon has expired")
        }
        Unusable::NotStarted => ServiceError::refused(
            Refusal::CouponNotStarted,
            "this coupon cannot be used before its validity starts",
        ),
    }
}

/// The refusal of an order for a coupon that does not fit it; the picker
/// reports the same [`Refusal`] for the same [`Unfit`].
pub(crate) fn unfit_refusal(u: Unfit) -> Refusal {
    match u {
        Unfit::Unusable(Unusable::NotOwned) => Refusal::CouponNotOwned,
        Unfit::Unusable(Unusable::NotAvailable) => Refusal::CouponNotAvailable,
        Unfit::Unusable(Unusable::Expired) => Refusal::CouponExpired,
        Unfit::Unusable(Unusable::NotStarted) => Refusal::CouponNotStarted,
        Unfit::ThresholdNotMet { .. } => Refusal::ThresholdNotMet,
        Unfit::NoEligibleLine => Refusal::CouponNotApplicable,
    }
}

pub(super) fn unfit(u: Unfit) -> ServiceError {
    match u {
        Unfit::Unusable(u) => unusable(u),
        Unfit::ThresholdNotMet { shortfall } => ServiceError::refused(
            unfit_refusal(u),
            format!(
                "the order total is below this coupon's minimum spend by {} cents",
                shortfall.get()
            ),
        ),
        Unfit::NoEligibleLine => ServiceError::refused(
            unfit_refusal(u),
            "this coupon does not apply to the order's category",
        ),
    }
}

/// A coupon row as [`discount_on_order`] reads it, for `user_id`'s order.
pub(crate) fn on_order<'a>(
    coupon: &CouponRow,
    user_id: &UserId,
    terms: &'a CouponTerms,
) -> CouponOnOrder<'a> {
    CouponOnOrder {
        owner_matches: coupon.user_id == *user_id,
        stored: coupon.status,
        starts_at: from_ms(coupon.starts_at),
        ends_at: from_ms(coupon.ends_at),
        terms,
    }
}

/// Full validation of a coupon for an order; returns its discount (for a
/// presale order, capped by what the deposit leaves). The same rule as the
/// checkout picker ([`discount_on_order`]).
pub(super) fn validate_coupon(
    coupon: &CouponRow,
    user_id: &UserId,
    order: &OrderTerms<'_>,
    now: DateTime<Utc>,
) -> Result<Cents, ServiceError> {
    let terms = coupon_terms(coupon);
    discount_on_order(&on_order(coupon, user_id, &terms), order, now).map_err(unfit)
}

pub(crate) fn kind_of(o: &OrderRow) -> OrderKind {
    o.kind
}

pub(crate) fn status_of(o: &OrderRow) -> OrderStatus {
    o.status
}

pub(super) fn money_of(o: &OrderRow) -> OrderMoney {
    OrderMoney {
        total: o.total_cents,
        deposit: o.deposit_cents,
        discount: o.coupon_discount_cents,
        compensation: o.compensation_cents,
    }
}

pub(super) fn window_of(c: &CampaignRow) -> PaymentWindow {
    PaymentWindow {
        starts: from_ms(c.final_payment_starts_at),
        ends: from_ms(c.final_payment_ends_at),
    }
}

pub(super) fn policy_of(c: &CampaignRow) -> Policy {
    c.policy
}

pub(super) async fn load_order(
    c: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<OrderRow, ServiceError> {
    orders::get(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))
}

pub(super) async fn load_campaign(
    c: &mut AnyConnection,
    id: &CampaignId,
) -> Result<CampaignRow, ServiceError> {
    campaigns::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("presale campaign", id.as_str()))
}

/// The presale campaign an order names; an order without one answers as
/// an unknown campaign with an empty id.
pub(super) async fn load_campaign_of(
    c: &mut AnyConnection,
    o: &OrderRow,
) -> Result<CampaignRow, ServiceError> {
    match o.campaign_id.as_ref() {
        Some(id) => load_campaign(c, id).await,
        None => Err(ServiceError::not_found("presale campaign", "")),
    }
}

pub(super) async fn load_coupon(
    c: &mut AnyConnection,
    id: &CouponId,
) -> Result<CouponRow, ServiceError> {
    coupons::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("coupon", id.as_str()))
}

pub(super) fn require_kind(o: &OrderRow, kind: OrderKind) -> Result<(), ServiceError> {
    if kind_of(o) != kind {
        return Err(ServiceError::refused(
            Refusal::OrderKindMismatch,
            format!(
                "order {} is a {} order; this action is for {} orders",
                o.order_no,
                o.kind,
                kind.as_str()
            ),
        ));
    }
    Ok(())
}

pub(super) fn require_status(
    o: &OrderRow,
    allowed: &[OrderStatus],
) -> Result<OrderStatus, ServiceError> {
    let s = status_of(o);
    if !allowed.contains(&s) {
        return Err(ServiceError::refused(
            Refusal::InvalidOrderStatus,
            format!(
                "order {} is {}; this action is not possible now",
                o.order_no, o.status
            ),
        ));
    }
    Ok(s)
}

/// Takes an order from `from` by `step` (the domain decides where to); a
/// lost race (the order changed meanwhile) becomes a refusal. Returns the
/// row as now stored, so an action can answer without reading it again.
pub(super) async fn move_order(
    c: &mut AnyConnection,
    op: &Op,
    from: OrderStatus,
    step: OrderStep,
    next: &OrderRow,
    reason: Option<&str>,
) -> Result<OrderRow, ServiceError> {
    let stored = orders::transition(
        c,
        &OrderChange {
            kind: kind_of(next),
            from,
            step,
            next,
            actor: &op.ctx.actor,
            reason,
            request_id: op.ctx.request_id.as_deref(),
            trace_id: op.ctx.trace_id(),
            address: op.ctx.address.as_deref(),
            now_ms: to_ms(op.now),
        },
    )
    .await?;
    stored.ok_or_else(|| {
        ServiceError::refused(
            Refusal::InvalidOrderStatus,
            format!("order {} changed meanwhile; read it again", next.order_no),
        )
    })
}

/// Applies a coupon transition; `Ok(false)` when the coupon was no longer
/// in the expected state.
pub(crate) async fn move_coupon(
    c: &mut AnyConnection,
    op: &Op,
    coupon_id: &CouponId,
    (from, to): (CouponStatus, CouponStatus),
    order_no: &OrderNo,
    action: &str,
    reason: Option<&str>,
) -> Result<bool, ServiceError> {
    Ok(coupons::transition(
        c,
        &CouponChange {
            coupon_id,
            from,
            to,
            order_no: Some(order_no),
            action,
            actor: &op.ctx.actor,
            reason,
            request_id: op.ctx.request_id.as_deref(),
            trace: op.ctx.trace.as_ref(),
            address: op.ctx.address.as_deref(),
            now_ms: to_ms(op.now),
            day: op.day(),
        },
    )
    .await?)
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
            trace_id: op.ctx.trace_id(),
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
pub(crate) async fn release_bound_coupon(
    c: &mut AnyConnection,
    op: &Op,
    order: &OrderRow,
    action: &str,
    reason: Option<&str>,
) -> Result<bool, ServiceError> {
    let Some(coupon_id) = order.coupon_id.as_ref() else {
        return Ok(false);
    };
    release_coupon_of(c, op, order, coupon_id, action, reason).await
}

/// [`release_bound_coupon`] of one coupon of the order (the order row's
/// or a further one).
pub(crate) async fn release_coupon_of(
    c: &mut AnyConnection,
    op: &Op,
    order: &OrderRow,
    coupon_id: &CouponId,
    action: &str,
    reason: Option<&str>,
) -> Result<bool, ServiceError> {
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
