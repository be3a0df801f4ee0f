//! The one-click health check's report (一键检测): the overall result,
//! then each check with its message and the button for its suggested fix.

use leptos::prelude::*;

use crate::domain::health::{CheckResult, SuggestedAction};
use crate::domain::permissions;
use crate::domain::staff::Role;
use crate::i18n::Lang;
use crate::service::support::{ActionView, CheckView};
use crate::web::context::{lang, viewer};
use crate::web::layout::enc;
use crate::web::paths;
use crate::web::paths::with_back;

use super::ResultBadge;

/// Each fix button leads to its confirmation page, which comes back to
/// `back` (the page with `?check=1#health`, so the check runs again). Only
/// the fixes the signed-in staff member may make are offered.
#[component]
pub fn HealthReport(
    overall: CheckResult,
    checks: Vec<CheckView>,
    #[prop(into)] back: String,
) -> impl IntoView {
    let l = lang();
    let role = viewer().map(|v| v.role);
    let overall_text = match overall {
        CheckResult::Ok => l.t("everything-is-in-order"),
        CheckResult::Warning => l.t("something-needs-attention"),
        CheckResult::Problem => l.t("there-is-a-problem-to-fix"),
    };
    let items = checks
        .into_iter()
        .map(|c| {
            let class = format!("result-{}", c.result.as_str());
            let message = crate::domain::health::about_coupon(l, c.coupon.as_deref(), &c.msg);
            let name = check_label(l, &c.name);
            // `cancel_order` from `order_status` is a lapsed checkout, which
            // support may close (`permissions::may_cancel_order`).
            let lapsed_checkout = c.name == "order_status";
            let fix = match (c.action.as_ref(), role) {
                (Some(a), Some(role)) => fix_button(l, role, a, lapsed_checkout, &back),
                _ => None,
            };
            let check_name = c.name.clone();
            view! {
                <li class=class data-check=check_name>
                    <ResultBadge result=c.result/>" "<span class="check-name">{name}</span>
                    <p class="check-message">{message}</p>
                    {fix}
                </li>
            }
        })
        .collect_view();
    view! {
        <p class="overall" data-testid="overall" data-result=overall.as_str()>
            <ResultBadge result=overall/>" "{overall_text}
        </p>
        <ul class="checks" data-testid="checks">{items}</ul>
    }
}

fn check_label(l: Lang, name: &str) -> &'static str {
    match name {
        "order_status" => l.t("order-status"),
        "coupon_status" => l.t("coupon-status"),
        "lock_link" => l.t("coupon-and-order-name-each-other"),
        "coupon_validity" => l.t("coupon-validity-vs-payment-window"),
        "checkout_lock" => l.t("checkout-lock"),
        "template_stock" => l.t("template-stock"),
        "stray_lock" => l.t("stray-lock"),
        _ => l.t("check"),
    }
}

/// The button for a suggested fix, leading to its confirmation page, which
/// comes back to `back`; none when this role may not do it.
fn fix_button(
    l: Lang,
    role: Role,
    a: &ActionView,
    lapsed_checkout: bool,
    back: &str,
) -> Option<AnyView> {
    let (href, label) = match &a.action {
        SuggestedAction::ReleaseCoupon { coupon_id } => {
            (paths::coupon_release(coupon_id), l.t("release-the-lock"))
        }
        SuggestedAction::IssueCompensation {
            user_id,
            order_no,
            amount_cents,
            coupon_id,
        } => (
            // The form comes with the order, the amount, the fitting
            // preset and the coupon whose discount is lost preselected.
            format!(
                "{}&amount_cents={amount_cents}{}{}",
                paths::user_compensation_for_order(user_id, order_no),
                a.preset_id
                    .as_deref()
                    .map(|p| format!("&preset_id={}", enc(p)))
                    .unwrap_or_default(),
                coupon_id
                    .as_ref()
                    .map(|c| format!("&for_coupon_id={}", enc(c.as_str())))
                    .unwrap_or_default()
            ),
            l.t("issue-compensation"),
        ),
        SuggestedAction::RepairLink {
            order_no,
            coupon_id,
        } => (
            paths::order_repair_for(order_no, coupon_id),
            l.t("repair-the-coupon-link"),
        ),
        SuggestedAction::MarkCouponUsed {
            order_no,
            coupon_id,
        } => (
            paths::order_mark_coupon_used_for(order_no, coupon_id),
            l.t("mark-the-coupon-used-2"),
        ),
        SuggestedAction::ReturnCoupon {
            order_no,
            coupon_id,
        } => (
            paths::order_return_coupon_for(order_no, coupon_id),
            l.t("return-the-coupon"),
        ),
        SuggestedAction::CancelOrder { order_no }
            if permissions::may_cancel_order(role, lapsed_checkout) =>
        {
            (paths::order_cancel(order_no), l.t("cancel-the-order-2"))
        }
        SuggestedAction::CancelOrder { .. } => {
            return Some(
                view! { <p class="note">{l.t("suggested-cancel-the-order-an-operator")}</p> }
                    .into_any(),
            );
        }
    };
    let code = a.action.code();
    let href = with_back(&href, back);
    Some(view! { <p><a class="button primary" href=href data-fix=code>{label}</a></p> }.into_any())
}
