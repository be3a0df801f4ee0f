//! The final payment (尾款) of a presale order: the plan by campaign
//! policy (apply, swap, compensate or no discount, [`plan_for`] in
//! `plan`), shown as a quote and applied inside the campaign's window in
//! one transaction.

use sqlx::AnyConnection;

use super::cart::{drop_split, load_cart, put_split};
use super::coupons::{coupons_of, lock_mismatch};
use super::plan::plan_for;
use super::steps::{
    load_campaign_of, load_coupon, load_order, move_coupon, move_order, require_kind,
    require_status, window_of,
};
use super::view::reload;
use crate::domain::allocation::allocate;
use crate::domain::coupon::CouponStatus;
use crate::domain::event::system_reasons;
use crate::domain::final_payment::{CouponOutcome, CouponPlan};
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::money::Cents;
use crate::domain::order::{OrderKind, OrderStatus, OrderStep};
use crate::domain::time::to_ms;
use crate::service::views::{OrderView, QuoteCouponView, QuoteView, coupon_terms};
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::ledger::{self, NewEntry};
use crate::store::order_coupons;
use crate::store::orders::OrderRow;

/// How long the compensation coupon of a `coupon`-mode campaign's final
/// payment stays valid, in days from the final payment.
pub const FINAL_PAYMENT_COUPON_DAYS: i64 = 30;

impl Service {
    /// What the final payment would do right now. Read-only. Under a
    /// `coupon`-mode campaign a compensated quote reports the coupon's value
    /// as `compensation_cents` and an `amount_due_cents` without any
    /// deduction; its message says a coupon is given.
    pub async fn final_payment_quote(&self, order_no: &OrderNo) -> Result<QuoteView, ServiceError> {
        let order_no = order_no.clone();
        let now = self.now();
        self.read(move |c| {
            let order_no = order_no.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                require_kind(&o, OrderKind::Presale)?;
                require_status(&o, &[OrderStatus::DepositPaid])?;
                let campaign = load_campaign_of(c, &o).await?;
                let plan = plan_for(c, &o, &campaign, now).await?;
                let coupons = plan
                    .coupons
                    .iter()
                    .map(|p| QuoteCouponView {
                        coupon_id: p.coupon_id.clone(),
                        outcome: p.outcome.as_str().into(),
                        discount_cents: p.discount,
                        compensation_cents: p.compensation,
                        replacement_coupon_id: p.replacement_coupon_id.clone(),
                    })
                    .collect();
                let plan = plan.whole;
                Ok(QuoteView {
                    order_no: o.order_no,
                    amount_due_cents: plan.amount_due,
                    discount_cents: plan.discount,
                    compensation_cents: plan.compensation,
                    coupon_outcome: plan.outcome.as_str().into(),
                    replacement_coupon_id: plan.replacement_coupon_id,
                    message: crate::i18n::Lang::Zh.msg(&plan.message),
                    message_en: crate::i18n::Lang::En.msg(&plan.message),
                    policy: campaign.policy,
                    window_open: window_of(&campaign).contains(now),
                    coupons,
                })
            })
        })
        .await
    }

    /// Pays the final payment (尾款) inside the campaign's window, applying
    /// the quote's outcome in one transaction.
    pub async fn pay_final(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let op = op.clone();
            Box::pin(async move { pay_final_tx(c, &op, &order_no).await })
        })
        .await
    }
}

async fn pay_final_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
) -> Result<OrderView, ServiceError> {
    let o = load_order(c, order_no).await?;
    require_kind(&o, OrderKind::Presale)?;
    require_status(&o, &[OrderStatus::DepositPaid])?;
    let campaign = load_campaign_of(c, &o).await?;
    if !window_of(&campaign).contains(op.now) {
        return Err(ServiceError::refused(
            Refusal::OutsidePaymentWindow,
            "the final payment is only possible inside the campaign's final-payment window",
        ));
    }
    let plan = plan_for(c, &o, &campaign, op.now).await?;
    let whole = &plan.whole;
    let mut next = o.clone();
    next.paid_at = Some(to_ms(op.now));
    next.final_payment_cents = Some(whole.amount_due);
    next.coupon_discount_cents = whole.discount;
    // The order's compensation is what the final payment deducts; a
    // compensation coupon (a `coupon`-mode campaign) deducts nothing.
    next.compensation_cents = if whole.compensation_coupon {
        Cents::ZERO
    } else {
        whole.compensation
    };
    next.coupon_lock_status = whole.outcome.lock_status(o.coupon_lock_status);
    if let Some(replacement) = &whole.replacement_coupon_id {
        next.replaced_coupon_id = o.coupon_id.clone();
        next.coupon_id = Some(replacement.clone());
    }
    move_order(
        c,
        op,
        OrderStatus::DepositPaid,
        OrderStep::FinalPayment,
        &next,
        None,
    )
    .await?;
    // Each further coupon's row settles before any coupon moves: a
    // budget reservation and the report counters read a coupon's
    // discount on the order from it.
    let held = coupons_of(c, &o).await?;
    for (cp, part) in held.iter().zip(&plan.coupons).skip(1) {
        let settled = order_coupons::Settled {
            coupon_id: part.replacement_coupon_id.as_ref().unwrap_or(&cp.coupon_id),
            discount: part.discount,
            compensation: if whole.compensation_coupon {
                Cents::ZERO
            } else {
                part.compensation
            },
            lock_status: part.outcome.lock_status(cp.lock_status),
        };
        if !order_coupons::settle(c, order_no, &cp.coupon_id, settled).await? {
            return Err(lost(c, order_no, &cp.coupon_id).await?);
        }
    }
    for part in &plan.coupons {
        settle_coupon(c, op, &o, part, whole.compensation_coupon).await?;
    }
    resplit(c, &o, &plan.coupons, whole.compensation_coupon).await?;
    reload(c, order_no, op.now).await
}

/// Coupon `coupon_id` of the order changed under the final payment.
async fn lost(
    c: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
) -> Result<ServiceError, ServiceError> {
    lock_mismatch(
        c,
        order_no,
        coupon_id,
        "the coupon changed meanwhile; read the quote again",
    )
    .await
}

/// One coupon's outcome applied: used; or released as expired, with its
/// compensation booked (a deduction, or a compensation coupon) or its
/// replacement locked and used.
async fn settle_coupon(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    part: &CouponPlan,
    compensation_coupon: bool,
) -> Result<(), ServiceError> {
    let order_no = &o.order_no;
    let own = &part.coupon_id;
    match part.outcome {
        CouponOutcome::None => {}
        CouponOutcome::Applied => {
            if !move_coupon(
                c,
                op,
                own,
                (CouponStatus::Locked, CouponStatus::Used),
                order_no,
                "use",
                None,
            )
            .await?
            {
                return Err(lost(c, order_no, own).await?);
            }
        }
        CouponOutcome::NoDiscountExpired | CouponOutcome::Compensated | CouponOutcome::Swapped => {
            let why = match part.outcome {
                CouponOutcome::NoDiscountExpired => system_reasons::EXPIRED_BEFORE_FINAL_STRICT,
                _ => system_reasons::EXPIRED_BEFORE_FINAL_SWAP,
            };
            if !move_coupon(
                c,
                op,
                own,
                (CouponStatus::Locked, CouponStatus::Expired),
                order_no,
                "release_expired",
                Some(why),
            )
            .await?
            {
                return Err(lost(c, order_no, own).await?);
            }
            if part.outcome == CouponOutcome::Compensated {
                compensate(c, op, o, own, part.compensation, compensation_coupon).await?;
            }
            if let Some(replacement) = part.replacement_coupon_id.as_ref() {
                let swap_reason = format!("{}{own}", system_reasons::REPLACES_EXPIRED_PREFIX);
                let locked = move_coupon(
                    c,
                    op,
                    replacement,
                    (CouponStatus::Available, CouponStatus::Locked),
                    order_no,
                    "swap_lock",
                    Some(&swap_reason),
                )
                .await?;
                if !locked
                    || !move_coupon(
                        c,
                        op,
                        replacement,
                        (CouponStatus::Locked, CouponStatus::Used),
                        order_no,
                        "use",
                        None,
                    )
                    .await?
                {
                    return Err(lost(c, order_no, replacement).await?);
                }
            }
        }
    }
    Ok(())
}

/// Books the compensation for the expired coupon `own`: a deduction from
/// the final payment, or (a `coupon`-mode campaign) a new coupon of that
/// value, each with its ledger entry.
async fn compensate(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    own: &CouponId,
    amount: Cents,
    as_coupon: bool,
) -> Result<(), ServiceError> {
    let first = (
        op.settings.support_compensation_max_cents,
        op.settings.support_compensation_daily_cents,
    );
    let rules_version =
        crate::store::compensation_rules::version_in_force(c, first, to_ms(op.now)).await?;
    let (kind, coupon_id, reason) = if as_coupon {
        let reason = system_reasons::FINAL_PAYMENT_COUPON;
        let given = crate::service::support::insert_compensation_coupon(
            c,
            op,
            &o.user_id,
            crate::service::support::CompensationTerms {
                value_cents: amount,
                valid: chrono::Duration::days(FINAL_PAYMENT_COUPON_DAYS),
                min_order_cents: Cents::ZERO,
                categories: "[]".to_string(),
            },
            reason,
        )
        .await?;
        ("final_payment_coupon", given.id, reason)
    } else {
        (
            "final_payment_deduction",
            own.clone(),
            system_reasons::FINAL_PAYMENT_DEDUCTION,
        )
    };
    ledger::insert(
        c,
        &NewEntry {
            user_id: &o.user_id,
            order_no: Some(&o.order_no),
            coupon_id: Some(&coupon_id),
            kind,
            amount_cents: amount,
            reason,
            actor: &op.ctx.actor,
            request_id: op.ctx.request_id.as_deref(),
            at_ms: to_ms(op.now),
            preset_id: None,
            rules_version,
            campaign_id: o.campaign_id.as_ref(),
            // The expired coupon this makes up for, by name as support's
            // compensations may name it.
            for_coupon_id: Some(own),
            day: op.day(),
        },
    )
    .await?;
    Ok(())
}

/// The split after the final payment: recomputed only for a coupon whose
/// outcome changes its discount. `no_discount_expired` drops the expired
/// coupon's split; `swapped` replaces it with the replacement's, split
/// over the lines as the expired coupon saw them; a compensation deducted
/// from the final payment keeps it (the compensation takes the discount's
/// place on the lines), a compensation coupon drops it (the final payment
/// is not reduced).
async fn resplit(
    c: &mut AnyConnection,
    o: &OrderRow,
    parts: &[CouponPlan],
    compensation_coupon: bool,
) -> Result<(), ServiceError> {
    let mut cart = None;
    for part in parts {
        let drops = match part.outcome {
            CouponOutcome::NoDiscountExpired | CouponOutcome::Swapped => true,
            CouponOutcome::Compensated => compensation_coupon,
            CouponOutcome::Applied | CouponOutcome::None => false,
        };
        if !drops {
            continue;
        }
        let cart = match &mut cart {
            Some(k) => k,
            None => cart.insert(load_cart(c, o).await?),
        };
        drop_split(c, o, cart, &part.coupon_id).await?;
        if let Some(replacement) = part.replacement_coupon_id.as_ref() {
            let row = load_coupon(c, replacement).await?;
            let split = allocate(&coupon_terms(&row), &part.judged_on, part.discount);
            put_split(c, o, cart, replacement, &split).await?;
        }
    }
    Ok(())
}
