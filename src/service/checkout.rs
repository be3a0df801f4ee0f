//! The checkout picker (选券): for a cart that is not yet an order, which
//! of a customer's coupons fit, for how much, why the others do not, and
//! the best one (`POST /users/{user_id}/coupon-options`, and the console's
//! "try a cart" form).
//!
//! Read-only. One indexed read of the user's coupons stored `available`
//! (no template is read: each coupon carries its own terms) and of their
//! pending reminder pop-ups ([`reminder_popups`]), then the domain's
//! [`pick`], whose rule is the one `POST /orders` and the deposit
//! payment apply ([`crate::domain::picker::discount_on_order`]).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::reminder_popups::{self, ReminderPopupView};
use super::views::{CouponView, coupon_terms};
use super::{Refusal, Service, ServiceError};
use crate::domain::cart::CartSpec;
use crate::domain::coupon::Unusable;
use crate::domain::discount::CouponTerms;
use crate::domain::ids::LineId;
use crate::domain::ids::{CampaignId, CouponId, TemplateId, UserId};
use crate::domain::money::Cents;
use crate::domain::picker::{
    CouponOnOrder, OrderTerms, PresaleTerms, Unfit, Warning, expiring_soon, pick,
};
use crate::domain::stacking::{Offer, best_combination};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::i18n::{Lang, Msg, zone};
use crate::service::views::LineDiscountView;
use crate::store::budgets;
use crate::store::campaigns;
use crate::store::coupons::{self, CouponRow};

/// Most coupons the picker reads for one user (earliest end first). A
/// customer holding more sees the ones ending soonest, which are the ones
/// worth spending first.
pub const PICKER_MAX_COUPONS: i64 = 500;

/// The picker's answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CouponOptions {
    /// The id of the first usable coupon without a warning; null when none.
    #[schema(value_type = Option<String>)]
    pub best: Option<CouponId>,
    /// Largest discount first, then the earliest end.
    pub usable: Vec<UsableCoupon>,
    /// Coupons the customer holds that this cart cannot use, with why.
    pub unusable: Vec<UnusableCoupon>,
    /// The usable coupons together that give the most (one platform
    /// coupon, one shop coupon per shop): exactly what `POST /orders` with
    /// these `coupon_ids` would snapshot. Null when no coupon is usable;
    /// absent for the single-category form, as the contract has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<BestCombination>)]
    pub best_combination: Option<Option<BestCombination>>,
    /// The usable coupons ending soon: a cart's banner.
    pub expiring_soon: ExpiringSoonView,
    /// The customer's pending reminder pop-ups (reminders that went by
    /// `popup`), newest first, at most 3; empty when there are none. A
    /// cart shows them and then marks them seen with
    /// `POST /users/{user_id}/reminder-popups/seen`.
    pub reminder_popups: Vec<ReminderPopupView>,
}

/// The usable coupons that end soon (within `COUPONKEEPER_EXPIRING_SOON_HOURS`
/// of now), for a cart's "2 张券即将过期" banner. Always present; `count` 0,
/// `earliest_ends_at` null and `total_value_cents` 0 when there are none.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ExpiringSoonView {
    /// How many of `usable` end within the window.
    pub count: u32,
    /// The first of their ends (RFC 3339, UTC); null when `count` is 0.
    pub earliest_ends_at: Option<String>,
    /// Their `discount_cents` on this cart together.
    #[schema(value_type = i64)]
    pub total_value_cents: Cents,
}

/// The best combination of a customer's coupons for a cart.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BestCombination {
    /// In the order `POST /orders` keeps them: the platform coupon first.
    #[schema(value_type = Vec<String>)]
    pub coupon_ids: Vec<CouponId>,
    /// Their discounts together.
    #[schema(value_type = i64)]
    pub discount_cents: Cents,
    /// Every line of the cart with each chosen coupon's share of it.
    pub lines: Vec<CombinationLine>,
}

/// One line of a cart under the best combination.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CombinationLine {
    #[schema(value_type = String)]
    pub line_id: LineId,
    /// Each coupon's share of the line (as an order's line lists them).
    pub discounts: Vec<LineDiscountView>,
    #[schema(value_type = i64)]
    pub payable_cents: Cents,
}

/// A coupon that fits the cart.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UsableCoupon {
    pub coupon: CouponView,
    /// Exactly what the order would snapshot (a presale order: at deposit
    /// payment).
    #[schema(value_type = i64)]
    pub discount_cents: Cents,
    /// Null, or a caution before a presale deposit.
    pub warning: Option<OptionWarning>,
}

/// A caution the customer should read before choosing the coupon.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OptionWarning {
    /// `expires_before_final_payment` or `may_be_replaced_at_final_payment`.
    pub code: String,
    /// In the customer's words, in the request's language.
    pub message: String,
    /// The message itself, for a page to render in its reader's language.
    #[serde(skip)]
    #[schema(ignore)]
    pub msg: Msg,
}

/// A coupon the cart cannot use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UnusableCoupon {
    pub coupon: CouponView,
    /// The refusal code `POST /orders` would give: `threshold_not_met`,
    /// `coupon_not_applicable` or `coupon_not_started`.
    pub reason: String,
    /// In the customer's words, in the request's language.
    pub message: String,
    /// `threshold_not_met`: what the cart lacks; otherwise null.
    #[schema(value_type = Option<i64>)]
    pub shortfall_cents: Option<Cents>,
    /// The message itself, for a page to render in its reader's language.
    #[serde(skip)]
    #[schema(ignore)]
    pub msg: Msg,
}

impl CouponOptions {
    /// Writes every `message` in `lang` (the API's `Accept-Language`).
    pub fn in_language(mut self, lang: Lang) -> Self {
        for u in &mut self.usable {
            if let Some(w) = &mut u.warning {
                w.message = lang.msg(&w.msg);
            }
        }
        for u in &mut self.unusable {
            u.message = lang.msg(&u.msg);
        }
        reminder_popups::in_language(&mut self.reminder_popups, lang);
        self
    }
}

/// Why a coupon does not fit, as the customer reads it.
fn unfit_message(unfit: Unfit, terms: &CouponTerms, starts_at: DateTime<Utc>) -> Msg {
    match unfit {
        Unfit::ThresholdNotMet { shortfall } => crate::msg!(
            "picker-threshold-not-met",
            shortfall = shortfall.yuan(),
            threshold = terms.min_order.yuan()
        ),
        Unfit::NoEligibleLine => {
            crate::msg!(
                "picker-not-applicable",
                categories = terms.categories.join(" / ")
            )
        }
        Unfit::Unusable(Unusable::NotStarted) => {
            crate::msg!("picker-not-started", starts = zone::local_text(starts_at))
        }
        // The picker leaves these out (domain::picker::pick); named here
        // so a new reason cannot go without words.
        other => Msg::new(super::orders::unfit_refusal(other).message_key()),
    }
}

fn warning_view(w: Warning, window_starts: DateTime<Utc>) -> OptionWarning {
    OptionWarning {
        code: w.code().to_string(),
        message: String::new(),
        msg: Msg::new(w.message_key()).arg("window", zone::local_text(window_starts)),
    }
}

/// The answer for `rows` (a user's coupons stored `available`) on `cart`;
/// `budget_left` is what the budgets of their templates have left (for
/// templates with one): a coupon whose discount is more is unusable.
fn options_for(
    rows: Vec<CouponRow>,
    user_id: &UserId,
    cart: &CartSpec,
    presale: Option<&PresaleTerms>,
    budget_left: &[(TemplateId, i64)],
    expiring_window: chrono::Duration,
    now: DateTime<Utc>,
) -> CouponOptions {
    let terms: Vec<CouponTerms> = rows.iter().map(coupon_terms).collect();
    let on: Vec<CouponOnOrder<'_>> = rows
        .iter()
        .zip(&terms)
        .map(|(r, t)| super::orders::on_order(r, user_id, t))
        .collect();
    let mut picked = pick(&on, &cart.terms(), presale, now);
    let over_budget = |i: usize, discount: Cents| {
        rows[i].template_id.as_ref().is_some_and(|t| {
            budget_left
                .iter()
                .any(|(id, left)| id == t && *left < discount.get())
        })
    };
    let (over, fits): (Vec<_>, Vec<_>) = std::mem::take(&mut picked.usable)
        .into_iter()
        .partition(|f| over_budget(f.index, f.discount));
    picked.usable = fits;
    if picked
        .best
        .is_some_and(|b| over.iter().any(|f| f.index == b))
    {
        picked.best = picked
            .usable
            .iter()
            .find(|f| f.warning.is_none())
            .map(|f| f.index);
    }
    let view = |i: usize| CouponView::from_row(rows[i].clone(), now);
    let usable = picked
        .usable
        .iter()
        .map(|f| UsableCoupon {
            coupon: view(f.index),
            discount_cents: f.discount,
            warning: f
                .warning
                .zip(presale)
                .map(|(w, p)| warning_view(w, p.final_payment_starts)),
        })
        .collect();
    let unusable = picked
        .unusable
        .iter()
        .map(|m| UnusableCoupon {
            coupon: view(m.index),
            reason: super::orders::unfit_refusal(m.unfit).code().to_string(),
            message: String::new(),
            shortfall_cents: match m.unfit {
                Unfit::ThresholdNotMet { shortfall } => Some(shortfall),
                _ => None,
            },
            msg: unfit_message(m.unfit, &terms[m.index], on[m.index].starts_at),
        })
        .chain(over.iter().map(|f| UnusableCoupon {
            coupon: view(f.index),
            reason: Refusal::BudgetExhausted.code().to_string(),
            message: String::new(),
            shortfall_cents: None,
            msg: Msg::new("picker-budget-exhausted"),
        }))
        .collect();
    let usable_on: Vec<usize> = picked.usable.iter().map(|f| f.index).collect();
    let soon = expiring_soon(
        picked
            .usable
            .iter()
            .map(|f| (on[f.index].ends_at, f.discount)),
        now,
        expiring_window,
    );
    CouponOptions {
        best: picked.best.map(|i| rows[i].id.clone()),
        usable,
        unusable,
        best_combination: cart
            .has_lines
            .then(|| combination(&rows, &on, &usable_on, &cart.terms())),
        expiring_soon: ExpiringSoonView {
            count: u32::try_from(soon.count).unwrap_or(u32::MAX),
            earliest_ends_at: soon.earliest_ends_at.map(rfc3339),
            total_value_cents: soon.total_value,
        },
        reminder_popups: Vec::new(),
    }
}

/// The best combination of the usable coupons (`usable`: indexes into
/// `rows` and `on`) on the cart, as [`best_combination`] finds it and
/// [`crate::domain::stacking::apply`] splits it. For a presale cart the
/// discounts together stay within what the deposit leaves
/// ([`OrderTerms::discount_cap`]), as at the deposit.
fn combination(
    rows: &[CouponRow],
    on: &[CouponOnOrder<'_>],
    usable: &[usize],
    order: &OrderTerms<'_>,
) -> Option<BestCombination> {
    let offers: Vec<Offer<'_>> = usable
        .iter()
        .filter_map(|&i| on.get(i))
        .map(Offer::of)
        .collect();
    let best = best_combination(order.lines, &offers, order.discount_cap())?;
    if !best.exact {
        // Past the search's bound: a good combination, not proven the
        // best. Rare enough (dozens of coupons for each of many shops of
        // one cart) to be worth a line in the log when it happens.
        tracing::warn!(
            lines = order.lines.len(),
            coupons = offers.len(),
            peak_states = best.peak_states,
            "best combination past the search bound: not proven the best"
        );
    }
    let ids: Vec<CouponId> = best
        .chosen
        .iter()
        .filter_map(|&p| usable.get(p).and_then(|&i| rows.get(i)))
        .map(|r| r.id.clone())
        .collect();
    let payable = best.applied.payable(order.lines);
    let lines = order
        .lines
        .iter()
        .zip(payable)
        .enumerate()
        .map(|(i, (l, payable_cents))| {
            let mut discounts: Vec<LineDiscountView> = ids
                .iter()
                .zip(&best.applied.coupons)
                .filter_map(|(id, a)| {
                    a.split
                        .get(i)
                        .copied()
                        .flatten()
                        .map(|cents| LineDiscountView {
                            coupon_id: id.clone(),
                            cents,
                        })
                })
                .collect();
            discounts.sort_by(|a, b| a.coupon_id.cmp(&b.coupon_id));
            CombinationLine {
                line_id: l.line_id.clone(),
                discounts,
                payable_cents,
            }
        })
        .collect();
    // The platform coupon first, as the order row names it.
    let mut coupon_ids = ids;
    let platform = best
        .chosen
        .iter()
        .position(|&p| offers.get(p).is_some_and(|o| o.shop().is_none()));
    if let Some(p) = platform {
        let id = coupon_ids.remove(p);
        coupon_ids.insert(0, id);
    }
    Some(BestCombination {
        coupon_ids,
        discount_cents: best.applied.total,
        lines,
    })
}

impl Service {
    /// Which of `user_id`'s coupons fit `cart`, for how much, and why the
    /// others do not. Read-only; messages are left for the caller to write
    /// in its reader's language ([`CouponOptions::in_language`]).
    pub async fn coupon_options(
        &self,
        user_id: UserId,
        cart: CartSpec,
    ) -> Result<CouponOptions, ServiceError> {
        let now = self.now();
        let user = user_id.clone();
        let campaign_id: Option<CampaignId> =
            cart.campaign_id.as_deref().map(CampaignId::from_wire);
        let tz = self.settings().reminders.tz;
        let (rows, presale, left, popups) = self
            .read(move |c| {
                let user_id = user_id.clone();
                let campaign_id = campaign_id.clone();
                Box::pin(async move {
                    let presale = match &campaign_id {
                        None => None,
                        Some(id) => {
                            let campaign = campaigns::get(c, id)
                                .await?
                                .ok_or_else(|| ServiceError::not_found("presale campaign", id))?;
                            // POST /orders refuses every coupon of such a
                            // cart, so the picker does too.
                            if to_ms(now) >= campaign.final_payment_ends_at {
                                return Err(ServiceError::refused(
                                    Refusal::OutsidePaymentWindow,
                                    "this presale campaign's final-payment window has ended",
                                ));
                            }
                            Some(PresaleTerms {
                                policy: campaign.policy,
                                final_payment_starts: from_ms(campaign.final_payment_starts_at),
                            })
                        }
                    };
                    let rows = coupons::available_for_user(c, &user_id, PICKER_MAX_COUPONS).await?;
                    let mut templates: Vec<TemplateId> =
                        rows.iter().filter_map(|r| r.template_id.clone()).collect();
                    templates.sort();
                    templates.dedup();
                    let left = budgets::left_of_templates(c, &templates).await?;
                    let popups = reminder_popups::pending_in(c, &user_id, now, tz).await?;
                    Ok((rows, presale, left, popups))
                })
            })
            .await?;
        for r in &rows {
            self.note_overdue(r, now);
        }
        let mut options = options_for(
            rows,
            &user,
            &cart,
            presale.as_ref(),
            &left,
            chrono::Duration::hours(self.settings().expiring_soon_hours),
            now,
        );
        options.reminder_popups = popups;
        Ok(options)
    }
}
