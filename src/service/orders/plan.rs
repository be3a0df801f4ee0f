//! The final-payment plan of a presale order, shared by the quote, the
//! final payment itself, the order view and the final-payment reminder,
//! so they never disagree: each of the order's coupons judged by the
//! campaign's policy ([`plan_stacked`]), with the user's coupons that
//! could replace an expired one.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::steps::{load_coupon, money_of, policy_of};
use crate::domain::campaign::Policy;
use crate::domain::discount::DiscountKind;
use crate::domain::final_payment::{
    BudgetLeft, Candidate, HeldCoupon, PresaleOrder, StackedCoupon, StackedPlan, plan_stacked,
};
use crate::domain::ids::TemplateId;
use crate::domain::money::Cents;
use crate::domain::time::{from_ms, to_ms};
use crate::service::ServiceError;
use crate::service::views::coupon_terms;
use crate::store::campaigns::CampaignRow;
use crate::store::coupons;
use crate::store::orders::OrderRow;

/// Sets each candidate's budget to what its template's budget has left,
/// and drops the budget of a candidate whose template has none.
async fn with_budgets_left(
    c: &mut AnyConnection,
    candidates: &mut [Candidate],
) -> Result<(), ServiceError> {
    let mut templates: Vec<TemplateId> = candidates
        .iter()
        .filter_map(|k| k.budget.as_ref().map(|b| b.template_id.clone()))
        .collect();
    templates.sort();
    templates.dedup();
    let left = crate::store::budgets::left_of_templates(c, &templates).await?;
    for k in candidates.iter_mut() {
        k.budget = k.budget.take().and_then(|b| {
            left.iter()
                .find(|(t, _)| *t == b.template_id)
                .map(|(_, cents)| BudgetLeft {
                    template_id: b.template_id,
                    left: Cents::from_stored((*cents).max(0)),
                })
        });
    }
    Ok(())
}

/// How many of a user's coupons a swap looks at (earliest ending first).
const SWAP_CANDIDATES: i64 = 200;

/// The final-payment decision for a `deposit_paid` order, each of its
/// coupons judged by the campaign's policy, read inside the caller's
/// transaction. The quote, the final payment and the order view all use
/// this, so they never disagree.
pub(crate) async fn plan_for(
    c: &mut AnyConnection,
    order: &OrderRow,
    campaign: &CampaignRow,
    now: DateTime<Utc>,
) -> Result<StackedPlan, ServiceError> {
    let policy = policy_of(campaign);
    let on_order = super::coupons::coupons_of(c, order).await?;
    let mut rows = Vec::with_capacity(on_order.len());
    for cp in &on_order {
        rows.push(load_coupon(c, &cp.coupon_id).await?);
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    if policy == Policy::SwapOrCompensate {
        // Only coupons of a held coupon's kind can replace it
        // (`choose_replacement` checks that again): one read per kind.
        let mut kinds: Vec<DiscountKind> = Vec::new();
        for r in &rows {
            let kind = coupon_terms(r).rule.discount_kind();
            if kinds.contains(&kind) {
                continue;
            }
            kinds.push(kind);
            candidates.extend(
                coupons::usable_for_user(c, &order.user_id, kind, to_ms(now), SWAP_CANDIDATES)
                    .await?
                    .into_iter()
                    .map(|r| Candidate {
                        terms: coupon_terms(&r),
                        stored_status: r.status,
                        starts_at: from_ms(r.starts_at),
                        ends_at: from_ms(r.ends_at),
                        // Filled in below, one read for every template.
                        budget: r.template_id.map(|template_id| BudgetLeft {
                            template_id,
                            left: Cents::ZERO,
                        }),
                        id: r.id,
                    }),
            );
        }
        with_budgets_left(c, &mut candidates).await?;
    }
    // The lines (and each coupon's deposit split) matter only for
    // judging a replacement.
    let cart = if candidates.is_empty() {
        None
    } else {
        Some(super::cart::load_cart(c, order).await?)
    };
    let lines = cart.as_ref().map(|k| k.lines()).unwrap_or_default();
    let held: Vec<StackedCoupon> = on_order
        .iter()
        .zip(&rows)
        .map(|(cp, row)| {
            let mut split = vec![None; lines.len()];
            if let Some(k) = &cart {
                for (i, cents) in k.split_of(&cp.coupon_id) {
                    if let Some(s) = split.get_mut(i) {
                        *s = Some(cents);
                    }
                }
            }
            let terms = coupon_terms(row);
            StackedCoupon {
                id: cp.coupon_id.clone(),
                held: HeldCoupon {
                    stored_status: row.status,
                    locked_to: row.order_no.clone(),
                    ends_at: from_ms(row.ends_at),
                    kind: terms.rule.discount_kind(),
                },
                shop: terms.scope.shop_id,
                snapshot: cp.snapshot,
                split,
            }
        })
        .collect();
    let presale = PresaleOrder {
        order_no: &order.order_no,
        lines: &lines,
        money: money_of(order),
        snapshot_discount: order.discount_snapshot_cents,
    };
    plan_stacked(
        policy,
        campaign.compensation_mode,
        &presale,
        &held,
        &candidates,
        now,
    )
    .map_err(|mismatch| {
        ServiceError::lock_mismatch(
            mismatch,
            "the order's coupon is not locked to this order; contact support",
        )
    })
}
