//! Paying a presale order's deposit: the coupon validated again and
//! locked to the order, the discount snapshotted, and a reminder planned
//! when the coupon may expire before the final payment.

use super::cart::{load_cart, put_split, set_split};
use super::coupons::{OrderCoupon, choose, coupons_of, move_all};
use super::steps::{
    load_campaign_of, load_coupon, load_order, money_of, move_coupon, move_order, policy_of,
    require_kind, require_status, validate_coupon, window_of,
};
use super::view::order_view_of;
use crate::domain::campaign::Policy;
use crate::domain::coupon::CouponStatus;
use crate::domain::money::Cents;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus, OrderStep};
use crate::domain::picker::OrderTerms;
use crate::domain::time::{from_ms, to_ms};
use crate::service::views::{OrderView, coupon_terms};
use sqlx::AnyConnection;

use crate::domain::ids::{CouponId, OrderNo};
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::campaigns::CampaignRow;
use crate::store::coupons::CouponRow;
use crate::store::order_coupons;
use crate::store::orders::OrderRow;

impl Service {
    /// Pays a presale deposit: in one transaction the coupon is validated
    /// again and locked to the order, the discount is snapshotted, and the
    /// order becomes `deposit_paid`.
    pub async fn pay_deposit(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let op = op.clone();
            Box::pin(async move { pay_deposit_tx(c, &op, &order_no).await })
        })
        .await
    }
}

/// The transaction of [`Service::pay_deposit`].
async fn pay_deposit_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
) -> Result<OrderView, ServiceError> {
    let o = load_order(c, order_no).await?;
    require_kind(&o, OrderKind::Presale)?;
    require_status(&o, &[OrderStatus::PendingDeposit])?;
    let campaign = load_campaign_of(c, &o).await?;
    if op.now >= window_of(&campaign).ends {
        return Err(ServiceError::refused(
            Refusal::OutsidePaymentWindow,
            "this presale campaign's final-payment window has ended",
        ));
    }
    let held = coupons_of(c, &o).await?;
    if held.len() > 1 {
        return pay_deposit_of_several(c, op, &o, &campaign, &held).await;
    }
    let coupon = match o.coupon_id.as_ref() {
        Some(id) => Some(load_coupon(c, id).await?),
        None => None,
    };
    let money = money_of(&o);
    let mut cart = load_cart(c, &o).await?;
    let lines = cart.lines();
    let discount = match &coupon {
        Some(cp) => validate_coupon(
            cp,
            &o.user_id,
            &OrderTerms {
                kind: OrderKind::Presale,
                lines: &lines,
                total: money.total,
                deposit: money.deposit,
            },
            op.now,
        )?,
        None => Cents::ZERO,
    };
    let stored = mark_deposit_paid(c, op, &o, discount, coupon.is_some()).await?;
    // The deposit snapshot includes the split.
    if let Some(cp) = &coupon {
        set_split(c, &o, &mut cart, &cp.id, &coupon_terms(cp), discount).await?;
    }
    if let Some(cp) = &coupon
        && !move_coupon(
            c,
            op,
            &cp.id,
            (CouponStatus::Available, CouponStatus::Locked),
            &o.order_no,
            "lock",
            None,
        )
        .await?
    {
        return Err(ServiceError::refused(
            Refusal::CouponNotAvailable,
            "this coupon was just locked or changed by another request",
        ));
    }
    warn_if_strict(c, op, &o, &campaign, coupon.as_ref()).await?;
    order_view_of(c, stored, cart, op.now, false).await
}

/// [`pay_deposit_tx`] for an order of several coupons: every coupon
/// validated again and the combination applied again
/// ([`super::coupons::choose`]), each discount and split snapshotted,
/// and every coupon locked to the order; the strict policy's warning
/// names the coupon that ends first.
async fn pay_deposit_of_several(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    campaign: &CampaignRow,
    held: &[OrderCoupon],
) -> Result<OrderView, ServiceError> {
    let money = money_of(o);
    let mut cart = load_cart(c, o).await?;
    let lines = cart.lines();
    let ids: Vec<CouponId> = held.iter().map(|h| h.coupon_id.clone()).collect();
    let chosen = choose(
        c,
        &o.user_id,
        &OrderTerms {
            kind: OrderKind::Presale,
            lines: &lines,
            total: money.total,
            deposit: money.deposit,
        },
        &ids,
        op.now,
    )
    .await?;
    let stored = mark_deposit_paid(c, op, o, chosen.total, true).await?;
    // The further coupons' discounts first: a budget reservation reads a
    // coupon's discount on the order as the coupon is locked.
    for (row, applied) in chosen.rows.iter().zip(&chosen.applied) {
        let further = held.iter().any(|h| h.position > 0 && h.coupon_id == row.id);
        if further
            && !order_coupons::set_discount(
                c,
                &o.order_no,
                &row.id,
                CouponLockStatus::None,
                (applied.discount, applied.discount),
            )
            .await?
        {
            return Err(ServiceError::refused(
                Refusal::CouponNotAvailable,
                "the order's coupons changed meanwhile; try again",
            ));
        }
        put_split(c, o, &mut cart, &row.id, &applied.split).await?;
    }
    move_all(
        c,
        op,
        o,
        held,
        (CouponStatus::Available, CouponStatus::Locked),
        (CouponLockStatus::None, CouponLockStatus::Locked),
        "lock",
    )
    .await?;
    let first_to_end = chosen.rows.iter().min_by_key(|r| r.ends_at);
    warn_if_strict(c, op, o, campaign, first_to_end).await?;
    order_view_of(c, stored, cart, op.now, false).await
}

/// Under the strict policy, the warning at the deposit when `coupon`
/// ends before the final-payment window opens (one per order).
async fn warn_if_strict(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    campaign: &CampaignRow,
    coupon: Option<&CouponRow>,
) -> Result<(), ServiceError> {
    let Some(cp) = coupon.filter(|_| policy_of(campaign) == Policy::Strict) else {
        return Ok(());
    };
    let risk = crate::service::reminders::AtRisk {
        order_no: &o.order_no,
        user_id: &o.user_id,
        coupon_id: &cp.id,
        ends_at: from_ms(cp.ends_at),
        window_starts: window_of(campaign).starts,
    };
    crate::service::reminders::warn_at_deposit(c, &op.settings.reminders, &risk, op.now).await?;
    Ok(())
}

/// The order row at the deposit: `deposit_paid`, with the discount
/// snapshotted (and its coupons locked, when it has any), by one
/// conditional update on `pending_deposit`.
async fn mark_deposit_paid(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    discount: Cents,
    locked: bool,
) -> Result<OrderRow, ServiceError> {
    let mut next = o.clone();
    next.deposit_paid_at = Some(to_ms(op.now));
    next.coupon_discount_cents = discount;
    next.discount_snapshot_cents = discount;
    if locked {
        next.coupon_lock_status = CouponLockStatus::Locked;
    }
    move_order(
        c,
        op,
        OrderStatus::PendingDeposit,
        OrderStep::DepositPayment,
        &next,
        None,
    )
    .await
}
