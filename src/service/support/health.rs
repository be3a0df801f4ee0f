//! The one-click health check (一键检测): gathers the facts about an order
//! (its coupon, the order that coupon is locked to, stray locks, the
//! campaign, the template's stock) and runs the pure rules of
//! [`crate::domain::health`] on them; a user's check does so for their
//! recent orders and their locked coupons.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use crate::domain::campaign::PaymentWindow;
use crate::domain::facts::{CouponUnits, FurtherCoupon};
use crate::domain::health::{
    self, CampaignFacts, Check, CheckResult, CompensationGiven, CouponFacts, HealthFacts,
    HeldFurther, OrderFacts, PartnerOrder, StockFacts, SuggestedAction,
};
use crate::domain::ids::{CouponId, OrderNo, TemplateId, UserId};
use crate::domain::money::Cents;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderMoney, OrderStatus};
use crate::domain::time::from_ms;
use crate::service::orders::{kind_of, status_of};
use crate::service::{Service, ServiceError};
use crate::store::archive;
use crate::store::campaigns;
use crate::store::coupons::CouponRow;
use crate::store::orders::{self, OrderRow};
use crate::store::search;
use crate::store::templates;

/// Orders a user health check looks at (the most recent).
pub const USER_HEALTH_ORDERS: i64 = 50;
/// Locked coupons of a user a user health check looks at.
const USER_HEALTH_LOCKS: i64 = 100;

/// A suggested action with its parameters, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ActionView {
    /// `release_coupon`, `issue_compensation`, `cancel_order`, `repair_link`,
    /// `mark_coupon_used` or `return_coupon`.
    pub code: String,
    /// `release_coupon`, `repair_link`, `mark_coupon_used`,
    /// `return_coupon`: the coupon; `issue_compensation`: the coupon of
    /// the order whose discount is lost, when the check names one (the
    /// compensation's `for_coupon_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub coupon_id: Option<CouponId>,
    /// `issue_compensation`: the customer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub user_id: Option<UserId>,
    /// `issue_compensation`, `cancel_order`, `repair_link`,
    /// `mark_coupon_used`, `return_coupon`: the order.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub order_no: Option<OrderNo>,
    /// The suggested compensation.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<i64>)]
    pub amount_cents: Option<Cents>,
    /// `issue_compensation`: the fitting preset of the rules in force
    /// ([`crate::domain::compensation::fitting_preset`]), if one fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset_id: Option<String>,
    /// The action itself, for a page to match on.
    #[serde(skip)]
    #[schema(ignore)]
    pub action: SuggestedAction,
}

impl From<&SuggestedAction> for ActionView {
    fn from(a: &SuggestedAction) -> Self {
        let mut v = ActionView {
            code: a.code().to_string(),
            coupon_id: None,
            user_id: None,
            order_no: None,
            amount_cents: None,
            preset_id: None,
            action: a.clone(),
        };
        match a {
            SuggestedAction::ReleaseCoupon { coupon_id } => v.coupon_id = Some(coupon_id.clone()),
            SuggestedAction::IssueCompensation {
                user_id,
                order_no,
                amount_cents,
                coupon_id,
            } => {
                v.coupon_id = coupon_id.clone();
                v.user_id = Some(user_id.clone());
                v.order_no = Some(order_no.clone());
                // Always positive: the rule suggests it only for a loss.
                v.amount_cents = Some(Cents::from_stored(*amount_cents));
            }
            SuggestedAction::CancelOrder { order_no } => v.order_no = Some(order_no.clone()),
            SuggestedAction::RepairLink {
                order_no,
                coupon_id,
            }
            | SuggestedAction::MarkCouponUsed {
                order_no,
                coupon_id,
            }
            | SuggestedAction::ReturnCoupon {
                order_no,
                coupon_id,
            } => {
                v.order_no = Some(order_no.clone());
                v.coupon_id = Some(coupon_id.clone());
            }
        }
        v
    }
}

/// One check of a health report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct CheckView {
    /// `order_status`, `coupon_status`, `lock_link`, `coupon_validity`,
    /// `checkout_lock`, `template_stock` (orders) or `stray_lock` (users).
    pub name: String,
    /// `ok`, `warning` or `problem`.
    #[schema(value_type = String)]
    pub result: CheckResult,
    /// For the customer, in English.
    pub message: String,
    /// The same in Simplified Chinese.
    pub message_zh: String,
    /// The message itself, for a page to render in its reader's language.
    #[serde(skip)]
    #[schema(ignore)]
    pub msg: crate::i18n::Msg,
    /// The code of the coupon the check is about, when the order holds
    /// several (the page shows it before the message).
    #[serde(skip)]
    #[schema(ignore)]
    pub coupon: Option<String>,
    /// `release_coupon`, `issue_compensation`, `cancel_order`, `repair_link`,
    /// `mark_coupon_used`, `return_coupon` or null.
    pub suggested_action: Option<String>,
    /// The suggested action with its parameters.
    pub action: Option<ActionView>,
}

impl From<Check> for CheckView {
    fn from(c: Check) -> Self {
        CheckView {
            name: c.name.to_string(),
            result: c.result,
            message: c.en(),
            message_zh: c.zh(),
            coupon: c.coupon,
            msg: c.message,
            suggested_action: c.suggested_action.as_ref().map(|a| a.code().to_string()),
            action: c.suggested_action.as_ref().map(ActionView::from),
        }
    }
}

/// `GET /orders/{order_no}/health-check`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthReport {
    /// The order checked.
    #[schema(value_type = String)]
    pub order_no: OrderNo,
    /// Its customer.
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// The worst result of the checks: `ok`, `warning` or `problem`.
    #[schema(value_type = String)]
    pub overall: CheckResult,
    /// Every check, always all six, in a fixed order.
    pub checks: Vec<CheckView>,
}

/// A user's health: their most recent orders' reports, plus their locked
/// coupons whose orders are not live.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserHealthReport {
    /// The user checked.
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// The worst result over every order and lock.
    #[schema(value_type = String)]
    pub overall: CheckResult,
    /// At most [`USER_HEALTH_ORDERS`], newest first.
    pub orders: Vec<HealthReport>,
    /// `stray_lock` problems: coupons locked to an order that is missing,
    /// over, or uses another coupon.
    pub locks: Vec<CheckView>,
}

pub(crate) fn coupon_facts(r: &CouponRow) -> CouponFacts {
    CouponFacts {
        id: r.id.clone(),
        code: r.code.clone(),
        user_id: r.user_id.clone(),
        stored_status: r.status,
        order_no: r.order_no.clone(),
        ends_at: from_ms(r.ends_at),
        template_id: r.template_id.clone(),
        kind: crate::service::views::coupon_terms(r).rule.discount_kind(),
    }
}

fn partner(o: &OrderRow) -> PartnerOrder {
    PartnerOrder {
        order_no: o.order_no.clone(),
        status: status_of(o),
        coupon_id: o.coupon_id.clone(),
        coupon_lock_status: o.coupon_lock_status,
    }
}

/// The order as the pure health and repair rules see it.
pub(crate) fn order_facts(o: &OrderRow) -> OrderFacts {
    OrderFacts {
        order_no: o.order_no.clone(),
        user_id: o.user_id.clone(),
        kind: kind_of(o),
        status: status_of(o),
        coupon_id: o.coupon_id.clone(),
        coupon_lock_status: o.coupon_lock_status,
        money: OrderMoney {
            total: o.total_cents,
            deposit: o.deposit_cents,
            discount: o.coupon_discount_cents,
            compensation: o.compensation_cents,
        },
        discount_snapshot: o.discount_snapshot_cents,
        checkout_lock_expires_at: o.checkout_lock_expires_at.map(from_ms),
        coupon_units: None,
        further: Vec::new(),
    }
}

/// The further coupons (叠加) of `orders`, as the checks read them, by
/// order number; one statement.
pub(crate) async fn further_of(
    c: &mut AnyConnection,
    orders: &[OrderNo],
) -> Result<HashMap<OrderNo, Vec<FurtherCoupon>>, ServiceError> {
    let mut out: HashMap<OrderNo, Vec<FurtherCoupon>> = HashMap::new();
    for (no, r) in crate::store::order_coupons::of_orders(c, orders).await? {
        out.entry(no).or_default().push(FurtherCoupon {
            id: r.coupon_id,
            discount: r.discount_cents,
            compensation: r.compensation_cents,
            lock_status: r.lock_status,
        });
    }
    Ok(out)
}

/// [`order_facts`] with the order's further coupons read.
pub(crate) async fn order_facts_read(
    c: &mut AnyConnection,
    o: &OrderRow,
) -> Result<OrderFacts, ServiceError> {
    let mut f = order_facts(o);
    if o.coupon_id.is_some() {
        f.further = further_of(c, std::slice::from_ref(&o.order_no))
            .await?
            .remove(&o.order_no)
            .unwrap_or_default();
    }
    Ok(f)
}

/// The units of the lines `o`'s coupon discounted (those it has a share
/// above zero of, else every line it covers), kept and refunded; `None`
/// before any refund by line.
pub(crate) async fn coupon_units(
    c: &mut AnyConnection,
    o: &OrderRow,
) -> Result<Option<CouponUnits>, ServiceError> {
    let Some(id) = o.coupon_id.as_ref() else {
        return Ok(None);
    };
    if o.refund_count == 0 {
        return Ok(None);
    }
    let cart = crate::service::orders::load_cart(c, o).await?;
    Ok(Some(cart.coupon_units(id)))
}

/// Gathers the facts about one order and runs the checks, inside the
/// caller's read transaction.
///
/// `stock_seen` caches the template stock facts per template for the rest
/// of the caller's read (a user's orders often share a template, and
/// counting a big template's coupons is the most expensive read here).
async fn order_report(
    c: &mut AnyConnection,
    o: &OrderRow,
    now: DateTime<Utc>,
    stock_seen: &mut HashMap<TemplateId, StockFacts>,
) -> Result<HealthReport, ServiceError> {
    let mut facts = order_facts_read(c, o).await?;
    // The order's lines after a refund by line, read once for the units
    // of each of its coupons.
    let cart = if o.coupon_id.is_some() && o.refund_count > 0 {
        Some(crate::service::orders::load_cart(c, o).await?)
    } else {
        None
    };
    facts.coupon_units = match (&cart, o.coupon_id.as_ref()) {
        (Some(cart), Some(id)) => Some(cart.coupon_units(id)),
        _ => None,
    };
    let coupon = match o.coupon_id.as_ref() {
        Some(id) => archive::get_live_or_archived(c, id).await?,
        None => None,
    };
    let coupon_order = match coupon.as_ref().and_then(|r| r.order_no.as_ref()) {
        Some(other) if *other != o.order_no => orders::get(c, other).await?.map(|p| partner(&p)),
        _ => None,
    };
    let strays: Vec<CouponFacts> = search::bound_to_order(c, &o.order_no)
        .await?
        .iter()
        .filter(|r| !facts.holds(&r.id))
        .map(coupon_facts)
        .collect();
    let campaign = match o.campaign_id.as_ref() {
        Some(id) => campaigns::get(c, id).await?.map(|r| CampaignFacts {
            window: PaymentWindow {
                starts: from_ms(r.final_payment_starts_at),
                ends: from_ms(r.final_payment_ends_at),
            },
            policy: r.policy,
        }),
        None => None,
    };
    let stock = match coupon.as_ref().and_then(|r| r.template_id.clone()) {
        Some(template_id) => match stock_seen.get(&template_id) {
            Some(seen) => Some(seen.clone()),
            None => {
                let claimed = templates::claimed(c, &template_id).await?;
                let (checked_at, mismatch) = match crate::store::reconcile::latest_run(c).await? {
                    Some((run_id, finished_at)) => {
                        let found =
                            crate::store::reconcile::template_mismatch(c, run_id, &template_id)
                                .await?;
                        (
                            Some(from_ms(finished_at)),
                            found.map(|f| {
                                (f.stock_claimed.unwrap_or(0), f.stock_issued.unwrap_or(0))
                            }),
                        )
                    }
                    None => (None, None),
                };
                let template_name = templates::get(c, &template_id)
                    .await?
                    .map(|t| t.name)
                    .unwrap_or_else(|| template_id.to_string());
                let facts = StockFacts {
                    template_id: template_id.clone(),
                    template_name,
                    claimed,
                    checked_at,
                    mismatch,
                };
                stock_seen.insert(template_id, facts.clone());
                Some(facts)
            }
        },
        None => None,
    };
    let coupon_facts = coupon.as_ref().map(coupon_facts);
    // What was given for the order so far: read only for a paid presale
    // order one of whose coupons was released at the final payment (the
    // one check that asks), one index range of
    // `compensation_ledger_order_idx`.
    let released_at_final_payment = facts.coupon_lock_status == CouponLockStatus::Released
        || facts
            .further
            .iter()
            .any(|f| f.lock_status == CouponLockStatus::Released);
    let entries = if facts.kind == OrderKind::Presale
        && facts.status == OrderStatus::FinalPaid
        && released_at_final_payment
    {
        crate::store::ledger::for_order(c, &o.order_no).await?
    } else {
        Vec::new()
    };
    // The coupon the order names is made up for by the entries naming it,
    // and by those naming no coupon (every entry before they could).
    let compensated = given_for(&entries, |named| {
        named.is_none() || named == o.coupon_id.as_ref()
    });
    // The further coupons of an order of several, each with what the
    // checks of that coupon read: awaiting a presale final payment (its
    // validity on its own snapshot), or paid (its status and link, and
    // after a final payment its own lost discount and compensation).
    let reads_further = !facts.further.is_empty()
        && match facts.status {
            OrderStatus::DepositPaid => facts.kind == OrderKind::Presale,
            OrderStatus::Paid | OrderStatus::FinalPaid => true,
            _ => false,
        };
    let mut further = Vec::new();
    if reads_further {
        for r in crate::store::order_coupons::of_order(c, &o.order_no).await? {
            let Some(row) = archive::get_live_or_archived(c, &r.coupon_id).await? else {
                continue;
            };
            let coupon_order = match row.order_no.as_ref() {
                Some(other) if *other != o.order_no => {
                    orders::get(c, other).await?.map(|p| partner(&p))
                }
                _ => None,
            };
            further.push(HeldFurther {
                coupon: self::coupon_facts(&row),
                snapshot: r.snapshot_cents,
                discount: r.discount_cents,
                lock_status: r.lock_status,
                units: cart.as_ref().map(|cart| cart.coupon_units(&r.coupon_id)),
                coupon_order,
                compensated: given_for(&entries, |named| named == Some(&r.coupon_id)),
            });
        }
    }
    let checks = health::check_order(&HealthFacts {
        order: &facts,
        coupon: coupon_facts.as_ref(),
        coupon_order: coupon_order.as_ref(),
        strays: &strays,
        campaign: campaign.as_ref(),
        stock: stock.as_ref(),
        compensated,
        further: &further,
        now,
    });
    let overall = health::overall(&checks);
    let mut checks: Vec<CheckView> = checks.into_iter().map(CheckView::from).collect();
    suggest_presets(c, o, &mut checks).await?;
    Ok(HealthReport {
        order_no: o.order_no.clone(),
        user_id: o.user_id.clone(),
        overall,
        checks,
    })
}

/// The compensation among `entries` (an order's ledger entries) whose
/// coupon made up for (`for_coupon_id`) passes `named`: their sum and the
/// latest's time; `None` when there is none.
fn given_for(
    entries: &[crate::store::ledger::EntryRow],
    named: impl Fn(Option<&CouponId>) -> bool,
) -> Option<CompensationGiven> {
    let mine: Vec<_> = entries
        .iter()
        .filter(|e| named(e.for_coupon_id.as_ref()))
        .collect();
    mine.iter()
        .map(|e| e.at)
        .max()
        .map(|last| CompensationGiven {
            cents: mine.iter().map(|e| e.amount_cents.get()).sum(),
            last_at: from_ms(last),
        })
}

/// Names the fitting preset of the rules in force on each suggested
/// compensation (one read of the rules, only when one is suggested).
async fn suggest_presets(
    c: &mut AnyConnection,
    o: &OrderRow,
    checks: &mut [CheckView],
) -> Result<(), ServiceError> {
    let wanted = |v: &CheckView| {
        v.action
            .as_ref()
            .is_some_and(|a| matches!(a.action, SuggestedAction::IssueCompensation { .. }))
    };
    if !checks.iter().any(wanted) {
        return Ok(());
    }
    let Some(version) = crate::store::compensation_rules::latest_version(c).await? else {
        return Ok(());
    };
    let rules = crate::store::compensation_rules::rules_of(c, &version).await?;
    for v in checks.iter_mut() {
        if let Some(a) = v.action.as_mut()
            && let SuggestedAction::IssueCompensation { amount_cents, .. } = &a.action
        {
            a.preset_id = crate::domain::compensation::fitting_preset(
                &rules.presets,
                *amount_cents,
                o.total_cents.get(),
                &o.category,
            )
            .map(|p| p.id.clone());
        }
    }
    Ok(())
}

impl Service {
    /// The one-click health check of an order. Read-only.
    pub async fn order_health_check(
        &self,
        order_no: &OrderNo,
    ) -> Result<HealthReport, ServiceError> {
        let order_no = order_no.clone();
        let now = self.now();
        self.read(move |c| {
            let order_no = order_no.clone();
            Box::pin(async move {
                let o = orders::get(c, &order_no)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
                order_report(c, &o, now, &mut HashMap::new()).await
            })
        })
        .await
    }

    /// The health check of a user: their [`USER_HEALTH_ORDERS`] most recent
    /// orders, and their locked coupons whose orders are not live.
    /// Read-only; an unknown user has an empty, healthy report.
    pub async fn user_health_check(
        &self,
        user_id: &UserId,
    ) -> Result<UserHealthReport, ServiceError> {
        let user = user_id.clone();
        let now = self.now();
        self.read(move |c| {
            let user = user.clone();
            Box::pin(async move { user_health_check_tx(c, user, now).await })
        })
        .await
    }
}

/// Reads the user's recent orders' reports and their locked coupons whose orders are not live.
async fn user_health_check_tx(
    c: &mut AnyConnection,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<UserHealthReport, ServiceError> {
    let mut overall = CheckResult::Ok;
    let mut reports = Vec::new();
    let mut stock_seen = HashMap::new();
    for o in search::orders_for_user(c, &user, USER_HEALTH_ORDERS).await? {
        let r = order_report(c, &o, now, &mut stock_seen).await?;
        overall = overall.max(r.overall);
        reports.push(r);
    }
    let mut locks = Vec::new();
    for r in search::locked_for_user(c, &user, USER_HEALTH_LOCKS).await? {
        let order = match r.order_no.as_ref() {
            Some(no) => orders::get(c, no).await?.map(|o| partner(&o)),
            None => None,
        };
        if let Some(check) = health::stray_lock(&coupon_facts(&r), order.as_ref()) {
            let v = CheckView::from(check);
            overall = overall.max(v.result);
            locks.push(v);
        }
    }
    Ok(UserHealthReport {
        user_id: user,
        overall,
        orders: reports,
        locks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn the_worse_of_two_results_wins() {
        // A user's overall result is the max of its reports' (Ord).
        assert_eq!(
            CheckResult::Ok.max(CheckResult::Warning),
            CheckResult::Warning
        );
        assert_eq!(
            CheckResult::Problem.max(CheckResult::Warning),
            CheckResult::Problem
        );
        assert_eq!(CheckResult::Ok.max(CheckResult::Ok), CheckResult::Ok);
    }
}
