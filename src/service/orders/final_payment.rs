//! The final payment (尾款) of a presale order: the plan by campaign
//! policy (apply, swap, compensate or no discount, [`plan_for`] in
//! `steps`), shown as a quote and applied inside the campaign's window in
//! one transaction.

use sqlx::AnyConnection;

use super::cart::{drop_split, load_cart, set_split};
use super::steps::{
    load_campaign_of, load_coupon, load_order, move_coupon, move_order, plan_for, require_kind,
    require_status, window_of,
};
use super::view::reload;
use crate::domain::coupon::CouponStatus;
use crate::domain::event::system_reasons;
use crate::domain::final_payment::{CouponOutcome, FinalPaymentPlan};
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::money::Cents;
use crate::domain::order::{OrderKind, OrderStatus, OrderStep};
use crate::domain::time::to_ms;
use crate::service::views::{OrderView, QuoteView, coupon_terms};
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::ledger::{self, NewEntry};
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
    let mut next = o.clone();
    next.paid_at = Some(to_ms(op.now));
    next.final_payment_cents = Some(plan.amount_due);
    next.coupon_discount_cents = plan.discount;
    // The order's compensation is what the final payment deducts; a
    // compensation coupon (a `coupon`-mode campaign) deducts nothing.
    next.compensation_cents = if plan.compensation_coupon {
        Cents::ZERO
    } else {
        plan.compensation
    };
    next.coupon_lock_status = plan.outcome.lock_status(o.coupon_lock_status);
    if let Some(replacement) = &plan.replacement_coupon_id {
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
    let lost = || {
        ServiceError::refused(
            Refusal::CouponLockMismatch,
            "the coupon changed meanwhile; read the quote again",
        )
    };
    // An outcome other than `None` comes only from a held coupon.
    let own = o
        .coupon_id
        .clone()
        .unwrap_or_else(|| CouponId::from_wire(""));
    let own = &own;
    match plan.outcome {
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
                return Err(lost());
            }
        }
        CouponOutcome::NoDiscountExpired | CouponOutcome::Compensated | CouponOutcome::Swapped => {
            let why = match plan.outcome {
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
                return Err(lost());
            }
            if plan.outcome == CouponOutcome::Compensated {
                let first = (
                    op.settings.support_compensation_max_cents,
                    op.settings.support_compensation_daily_cents,
                );
                let rules_version =
                    crate::store::compensation_rules::version_in_force(c, first, to_ms(op.now))
                        .await?;
                if plan.compensation_coupon {
                    let reason = system_reasons::FINAL_PAYMENT_COUPON;
                    let given = crate::service::support::insert_compensation_coupon(
                        c,
                        op,
                        &o.user_id,
                        crate::service::support::CompensationTerms {
                            value_cents: plan.compensation,
                            valid: chrono::Duration::days(FINAL_PAYMENT_COUPON_DAYS),
                            min_order_cents: Cents::ZERO,
                            categories: "[]".to_string(),
                        },
                        reason,
                    )
                    .await?;
                    ledger::insert(
                        c,
                        &NewEntry {
                            user_id: &o.user_id,
                            order_no: Some(order_no),
                            coupon_id: Some(&given.id),
                            kind: "final_payment_coupon",
                            amount_cents: plan.compensation,
                            reason,
                            actor: &op.ctx.actor,
                            request_id: op.ctx.request_id.as_deref(),
                            at_ms: to_ms(op.now),
                            preset_id: None,
                            rules_version,
                            campaign_id: o.campaign_id.as_ref(),
                            day: op.day(),
                        },
                    )
                    .await?;
                } else {
                    ledger::insert(
                        c,
                        &NewEntry {
                            user_id: &o.user_id,
                            order_no: Some(order_no),
                            coupon_id: Some(own),
                            kind: "final_payment_deduction",
                            amount_cents: plan.compensation,
                            reason: system_reasons::FINAL_PAYMENT_DEDUCTION,
                            actor: &op.ctx.actor,
                            request_id: op.ctx.request_id.as_deref(),
                            at_ms: to_ms(op.now),
                            preset_id: None,
                            rules_version,
                            campaign_id: o.campaign_id.as_ref(),
                            day: op.day(),
                        },
                    )
                    .await?;
                }
            }
            if let Some(replacement) = plan.replacement_coupon_id.as_ref() {
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
                    return Err(lost());
                }
            }
        }
    }
    resplit(c, &o, own, &plan).await?;
    reload(c, order_no, op.now).await
}

/// The split after the final payment: recomputed only for an outcome that
/// changes the coupon's discount. `no_discount_expired` drops the expired
/// coupon's split; `swapped` replaces it with the replacement's; a
/// compensation deducted from the final payment keeps it (the compensation
/// takes the discount's place on the lines), a compensation coupon drops
/// it (the final payment is not reduced).
async fn resplit(
    c: &mut AnyConnection,
    o: &OrderRow,
    own: &CouponId,
    plan: &FinalPaymentPlan,
) -> Result<(), ServiceError> {
    let drops = match plan.outcome {
        CouponOutcome::NoDiscountExpired | CouponOutcome::Swapped => true,
        CouponOutcome::Compensated => plan.compensation_coupon,
        CouponOutcome::Applied | CouponOutcome::None => false,
    };
    if !drops {
        return Ok(());
    }
    let mut cart = load_cart(c, o).await?;
    drop_split(c, o, &mut cart, own).await?;
    if let Some(replacement) = plan.replacement_coupon_id.as_ref() {
        let row = load_coupon(c, replacement).await?;
        set_split(
            c,
            o,
            &mut cart,
            replacement,
            &coupon_terms(&row),
            plan.discount,
        )
        .await?;
    }
    Ok(())
}
