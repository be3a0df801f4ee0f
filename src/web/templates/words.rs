//! What several template pages share: their addresses, the words for a
//! template's standing, rule, stock and coupons, and who may manage.

use axum::response::{IntoResponse, Response};
use leptos::prelude::*;

use crate::domain::coupon::CouponStatus;
use crate::domain::discount::{CouponTerms, DiscountRule};
use crate::domain::money::Cents;
use crate::domain::permissions::Permission;
use crate::domain::template::{ClaimStanding, TemplateStatus, Validity, rule_words, spread_words};
use crate::domain::time::parse_rfc3339;
use crate::i18n::Msg;
use crate::service::views::TemplateView;
use crate::web::auth::{Staff, WebError};
use crate::web::context::lang;
use crate::web::i18n::Lang;
use crate::web::layout::coupon_status_label;

pub(super) const LIST: &str = "/console/templates";
pub(super) const NEW: &str = "/console/templates/new";
/// Templates per list page.
pub(super) const PAGE_SIZE: i64 = 50;

/// Whether this staff member sees the forms that change templates.
pub(super) fn may_manage(staff: &Staff) -> bool {
    staff.may(Permission::ManageTemplates)
}

pub(super) fn forbidden(l: Lang) -> Response {
    WebError::forbidden(l.t("template-needs-operator")).into_response()
}

/// A standing's name.
pub(super) fn standing_label(l: Lang, s: ClaimStanding) -> &'static str {
    l.t(match s {
        ClaimStanding::Active => "template-standing-active",
        ClaimStanding::Paused => "template-standing-paused",
        ClaimStanding::NotStarted => "template-standing-not_started",
        ClaimStanding::Ended => "template-standing-ended",
    })
}

/// A template's claiming standing as a coloured badge.
#[component]
pub(super) fn StandingBadge(standing: ClaimStanding) -> impl IntoView {
    let class = match standing {
        ClaimStanding::Active => "badge badge-ok",
        ClaimStanding::Paused => "badge badge-warning",
        ClaimStanding::NotStarted => "badge status-locked",
        ClaimStanding::Ended => "badge status-expired",
    };
    view! { <span class=class data-standing=standing.as_str()>{standing_label(lang(), standing)}</span> }
}

/// A template's stored claiming status in words (the staff log's before
/// and after of a pause or resume).
pub(super) fn status_label(l: Lang, s: TemplateStatus) -> &'static str {
    match s {
        TemplateStatus::Active => l.t("template-standing-active"),
        TemplateStatus::Paused => l.t("template-standing-paused"),
    }
}

pub(super) fn instant(raw: &Option<String>) -> Option<chrono::DateTime<chrono::Utc>> {
    raw.as_deref().and_then(|t| parse_rfc3339(t).ok())
}

/// The template's rule in words, from what the service answered.
pub(super) fn view_words(t: &TemplateView) -> Vec<Msg> {
    let terms = CouponTerms {
        rule: DiscountRule::from_stored(
            t.kind,
            t.value_cents.map(Cents::get),
            t.percent_off,
            t.max_discount_cents.map(Cents::get),
        ),
        min_order: t.min_order_cents,
        categories: t.categories.clone(),
        scope: crate::domain::discount::LineScope {
            skus: t.skus.clone(),
            exclude_skus: t.exclude_skus.clone(),
            shop_id: t.shop_id.clone(),
        },
        refund_rule: t.partial_refund_rule,
        stackable: t.stackable,
    };
    let created = parse_rfc3339(&t.created_at).unwrap_or_default();
    let validity = Validity::from_stored(
        instant(&t.valid_from),
        instant(&t.valid_until),
        t.valid_seconds,
        created,
    );
    let mut words = rule_words(&terms, &validity);
    words.extend(spread_words(t.expiry_spread_seconds));
    words
}

/// A count, or "unlimited".
pub(super) fn count_or_unlimited(l: Lang, n: Option<i64>) -> String {
    n.map_or_else(|| l.t("template-unlimited").to_string(), |n| n.to_string())
}

/// Stock claimed / total / left.
pub(super) fn stock_text(l: Lang, t: &TemplateView) -> String {
    let left = t.total_stock.map(|total| (total - t.claimed).max(0));
    crate::tr!(
        l,
        "template-stock-figures",
        claimed = t.claimed,
        total = count_or_unlimited(l, t.total_stock),
        left = count_or_unlimited(l, left)
    )
}

/// Its budget and what orders hold of it: `¥500.00，已用 ¥412.34（82%）`,
/// or that it has none.
pub(super) fn budget_text(l: Lang, t: &TemplateView) -> String {
    match (t.budget_cents, t.budget_used_cents) {
        (Some(budget), Some(used)) => budget_figures(l, budget.get(), used),
        _ => l.t("template-no-budget").to_string(),
    }
}

/// A budget and its use in words, for the template page and its report.
pub(crate) fn budget_figures(l: Lang, budget: i64, used: i64) -> String {
    crate::tr!(
        l,
        "template-budget-figures",
        budget = l.money(budget),
        used = l.money(used),
        percent = budget_percent(budget, used)
    )
}

/// `used` of `budget` in whole percent, rounded down (so 80% is said only
/// once 80% is reached).
pub(crate) fn budget_percent(budget: i64, used: i64) -> i64 {
    if budget <= 0 {
        return 0;
    }
    i64::try_from(i128::from(used.max(0)) * 100 / i128::from(budget)).unwrap_or(i64::MAX)
}

/// Its coupons by effective status: `待使用 3 · 锁定中 1 · …`.
pub(super) fn counts_text(l: Lang, t: &TemplateView) -> String {
    let c = t.counts;
    [
        (CouponStatus::Available, c.available),
        (CouponStatus::Locked, c.locked),
        (CouponStatus::Used, c.used),
        (CouponStatus::Expired, c.expired),
        (CouponStatus::Invalidated, c.invalidated),
    ]
    .into_iter()
    .map(|(s, n)| format!("{} {n}", coupon_status_label(l, s)))
    .collect::<Vec<_>>()
    .join(" · ")
}
