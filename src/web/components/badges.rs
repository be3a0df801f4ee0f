//! Statuses as coloured badges: a coupon's, an order's, a health check's.

use leptos::prelude::*;

use crate::domain::coupon::CouponStatus;
use crate::domain::health::CheckResult;
use crate::domain::order::OrderStatus;
use crate::web::context::lang;

/// A coupon status as a coloured badge, in the page's language.
#[component]
pub fn CouponBadge(status: CouponStatus) -> impl IntoView {
    let class = format!("badge status-{status}");
    let text = lang().t(status.label_key());
    view! { <span class=class data-status=status.to_string()>{text}</span> }
}

/// An order status as a badge.
#[component]
pub fn OrderBadge(status: OrderStatus) -> impl IntoView {
    let class = format!("badge order-{status}");
    let text = lang().t(status.label_key());
    view! { <span class=class data-status=status.to_string()>{text}</span> }
}

/// A health-check result (`ok`, `warning`, `problem`) as a badge.
#[component]
pub fn ResultBadge(result: CheckResult) -> impl IntoView {
    let class = match result {
        CheckResult::Ok => "badge badge-ok",
        CheckResult::Warning => "badge badge-warning",
        CheckResult::Problem => "badge badge-problem",
    };
    let text = lang().t(result.label_key());
    view! { <span class=class data-result=result.as_str()>{text}</span> }
}
