//! A campaign's page: its window, orders, policy for staff and in the
//! customer's words, the changes an operator may start, and its history.

use axum::extract::{Path, State};
use axum::response::Response;
use chrono::{DateTime, Duration, Utc};
use leptos::prelude::*;

use super::words::{mode_label, policy_staff_text, standing_text};
use crate::domain::campaign::{CompensationMode, Policy};
use crate::domain::ids::CampaignId;
use crate::domain::order::OrderStatus;
use crate::domain::permissions::Permission;
use crate::domain::time::parse_rfc3339;
use crate::http::AppState;
use crate::i18n::Arg;
use crate::service::campaigns::{CampaignChange, CampaignDetail, CampaignOrderCounts};
use crate::service::views::CampaignView;
use crate::web::auth::{Staff, WebError};
use crate::web::components::{IdsDetails, StaffLog, StaffLogRow, Time};
use crate::web::context::{lang, viewer_may};
use crate::web::i18n::Lang;
use crate::web::layout::{actor_text, order_status_label, policy_label};
use crate::web::paths;
use crate::web::posted::OrPage;

pub(super) async fn detail(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let d = s.service.campaign_detail(&id).await.or_page(l)?;
    let now = s.service.now();
    Ok(staff.page(l.t("campaign-title"), move || {
        view! { <CampaignBody now=now detail=d/> }
    }))
}

/// A campaign's page: its facts and where its window stands at `now`,
/// its orders, its policy (for staff and in the customer's words), the
/// changes the signed-in staff member may make, and its history.
#[component]
fn CampaignBody(now: DateTime<Utc>, detail: CampaignDetail) -> impl IntoView {
    let (l, d) = (lang(), detail);
    let may = viewer_may(Permission::RunCampaigns);
    let c = d.campaign;
    let standing = standing_text(l, now, &c);
    let policy = c.policy;
    let mode = c.compensation_mode;
    let past_end_note = match policy {
        Policy::Lock => l.t("campaign-past-end-lock"),
        Policy::Strict => l.t("campaign-past-end-strict"),
        Policy::SwapOrCompensate => l.t("campaign-past-end-swap"),
    };
    let mode_note = if policy == Policy::SwapOrCompensate {
        l.t("campaign-mode-applies")
    } else {
        l.t("campaign-mode-applies-only-to-swap")
    };
    let customer = customer_words(l, &c)
        .into_iter()
        .map(|w| view! { <li data-testid="customer-words">{w}</li> })
        .collect_view();
    let changes = if d.window_opened {
        view! { <p class="note" data-testid="window-opened">{l.t("campaign-window-opened-no-change")}</p> }
            .into_any()
    } else if may {
        view! { <ChangeForms campaign=c.clone()/> }.into_any()
    } else {
        view! { <p class="note">{l.t("campaign-change-needs-operator")}</p> }.into_any()
    };
    let name = c.name.clone();
    let report_href = paths::campaign_report(&c.id);
    let report = may.then(|| {
        view! { <p class="actions"><a class="button" href=report_href data-testid="campaign-report">{l.t("report-link")}</a></p> }
    });
    view! {
        <section aria-labelledby="campaign-heading">
            <h2 id="campaign-heading" data-testid="campaign-name">{name}</h2>
            <dl class="facts">
                <dt>{l.t("final-payment-window")}</dt>
                <dd><Time at=c.final_payment_starts_at.clone()/>" — "<Time at=c.final_payment_ends_at.clone()/></dd>
                <dt>{l.t("campaign-standing")}</dt>
                <dd data-testid="campaign-standing">{standing}</dd>
                <dt>{l.t("policy")}</dt>
                <dd data-testid="campaign-policy">{policy_label(l, policy)}</dd>
                <dt>{l.t("campaign-mode")}</dt>
                <dd data-testid="campaign-mode">{mode_label(l, mode)}</dd>
                <dt>{l.t("created-2")}</dt>
                <dd><Time at=c.created_at.clone()/></dd>
            </dl>
            {report}
        </section>
        <section aria-labelledby="orders-heading">
            <h2 id="orders-heading">{l.t("campaign-orders")}</h2>
            <OrderCounts counts=d.orders/>
            <p data-testid="past-end">
                {crate::tr!(l, "campaign-coupons-past-end", n = d.coupons_past_end_at_opening)}
            </p>
            <p class="note">{past_end_note}</p>
        </section>
        <section aria-labelledby="policy-heading">
            <h2 id="policy-heading">{l.t("campaign-policy-heading")}</h2>
            <p data-testid="policy-staff">{policy_staff_text(l, policy)}</p>
            <h3>{l.t("campaign-customer-words")}</h3>
            <p class="note">{l.t("campaign-customer-words-example")}</p>
            <ul>{customer}</ul>
            <h3>{l.t("campaign-mode")}</h3>
            <p data-testid="mode-staff">{match mode {
                CompensationMode::Deduction => l.t("campaign-mode-staff-deduction"),
                CompensationMode::Coupon => l.t("campaign-mode-staff-coupon"),
            }}</p>
            <p class="note">{mode_note}</p>
        </section>
        <section aria-labelledby="change-heading">
            <h2 id="change-heading">{l.t("campaign-change-heading")}</h2>
            {changes}
        </section>
        <CampaignHistory history=d.history/>
        <IdsDetails ids=vec![("id-campaign", c.id.to_string())]/>
    }
}

/// The operator's two changes: choose a policy (then a preview), or the
/// compensation mode.
#[component]
fn ChangeForms(campaign: CampaignView) -> impl IntoView {
    let (l, c) = (lang(), campaign);
    let action = paths::campaign_policy(&c.id);
    let mode_href = paths::campaign_compensation_mode(&c.id);
    let options = Policy::ALL
        .into_iter()
        .filter(|p| *p != c.policy)
        .map(|p| view! { <option value=p.as_str()>{policy_label(l, p)}</option> })
        .collect_view();
    view! {
        <form method="get" action=action class="stack" data-testid="policy-choose">
            <label for="policy">{l.t("campaign-new-policy")}</label>
            <select id="policy" name="policy">{options}</select>
            <p class="actions"><button type="submit" class="primary" data-testid="preview">{l.t("campaign-preview-button")}</button></p>
        </form>
        <p class="actions"><a class="button" href=mode_href data-testid="mode-link">{l.t("campaign-change-mode")}</a></p>
    }
}

/// What a campaign change was and its before → after, in words.
pub(crate) fn change_what(l: Lang, ch: &CampaignChange) -> (String, String) {
    let policy_word = |w: &str| {
        Policy::parse(w).map_or_else(|| w.to_string(), |p| policy_label(l, p).to_string())
    };
    let mode_word = |w: &str| {
        CompensationMode::parse(w).map_or_else(|| w.to_string(), |m| mode_label(l, m).to_string())
    };
    match ch.what {
        "created" => (
            l.t("campaign-change-created").to_string(),
            crate::tr!(
                l,
                "campaign-change-created-with",
                policy = policy_word(&ch.to),
                mode = ch.also.as_deref().map(mode_word).unwrap_or_default()
            ),
        ),
        "policy" => (
            l.t("policy").to_string(),
            format!(
                "{} → {}",
                ch.from.as_deref().map(policy_word).unwrap_or_default(),
                policy_word(&ch.to)
            ),
        ),
        _ => (
            l.t("campaign-mode").to_string(),
            format!(
                "{} → {}",
                ch.from.as_deref().map(mode_word).unwrap_or_default(),
                mode_word(&ch.to)
            ),
        ),
    }
}

/// The campaign's changes, oldest first: when, who, what, before → after
/// and the reason.
#[component]
fn CampaignHistory(history: Vec<CampaignChange>) -> impl IntoView {
    let l = lang();
    let body = if history.is_empty() {
        view! { <p class="note">{l.t("campaign-no-history")}</p> }.into_any()
    } else {
        let rows = history
            .into_iter()
            .map(|ch| {
                let (what, change) = change_what(l, &ch);
                StaffLogRow {
                    reason: ch
                        .reason
                        .clone()
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| "—".into()),
                    actor: actor_text(l, &ch.actor),
                    action_code: None,
                    at: ch.at,
                    what,
                    change,
                }
            })
            .collect();
        view! {
            <StaffLog rows=rows testid="history" row_testid="history-row"
                what_key="campaign-what" change_key="before-after" cell_testids=true/>
        }
        .into_any()
    };
    view! {
        <section aria-labelledby="history-heading">
            <h2 id="history-heading">{l.t("campaign-history")}</h2>
            {body}
        </section>
    }
}

/// The words the customer reads about a coupon that ends before the window
/// opens, under the campaign's policy and compensation mode: the health
/// check's and self-check's own message, the checkout picker's warning
/// (where the policy has one) and the final payment's message, shown for an
/// example: a ¥50.00 coupon ending a day before the window opens, on a
/// ¥399.00 order with a ¥100.00 deposit.
fn customer_words(l: Lang, c: &CampaignView) -> Vec<String> {
    let Ok(starts) = parse_rfc3339(&c.final_payment_starts_at) else {
        return Vec::new();
    };
    let ends = Arg::Time(starts - Duration::days(1));
    let window = Arg::Time(starts);
    let text = |s: &str| Arg::Text(s.to_string());
    let coupon_mode = c.compensation_mode == CompensationMode::Coupon;
    let health = match c.policy {
        Policy::Lock => Some(l.tr(
            "health-the-coupon-ends-at-but",
            &[("ends", ends), ("discount", text("50.00"))],
        )),
        Policy::Strict => Some(l.tr(
            "health-the-coupon-ends-at-before",
            &[("ends", ends), ("discount", text("50.00"))],
        )),
        // Its words promise a deduction; under the coupon mode the final
        // payment's own message below says what happens.
        Policy::SwapOrCompensate if coupon_mode => None,
        Policy::SwapOrCompensate => Some(l.tr(
            "health-the-coupon-ends-at-before-3",
            &[
                ("ends", ends),
                ("discount", text("50.00")),
                ("audience", text("customer")),
            ],
        )),
    };
    let picker = match c.policy {
        Policy::Lock => None,
        Policy::Strict => Some(l.tr(
            "picker-warning-expires_before_final_payment",
            &[("window", window)],
        )),
        Policy::SwapOrCompensate => Some(l.tr(
            "picker-warning-may_be_replaced_at_final_payment",
            &[("window", window)],
        )),
    };
    let at_final = match c.policy {
        Policy::Lock => l.tr(
            "final-payment-applied",
            &[("due", text("249.00")), ("discount", text("50.00"))],
        ),
        Policy::Strict => l.tr("final-payment-coupon-expired", &[("due", text("299.00"))]),
        Policy::SwapOrCompensate if coupon_mode => l.tr(
            "final-payment-compensated-coupon",
            &[("compensation", text("50.00")), ("due", text("299.00"))],
        ),
        Policy::SwapOrCompensate => l.tr(
            "final-payment-compensated",
            &[("compensation", text("50.00")), ("due", text("249.00"))],
        ),
    };
    health
        .into_iter()
        .chain(picker)
        .chain(std::iter::once(at_final))
        .collect()
}

/// The campaign's orders, counted by status.
#[component]
fn OrderCounts(counts: CampaignOrderCounts) -> impl IntoView {
    let (l, o) = (lang(), counts);
    let rows = [
        (OrderStatus::PendingDeposit, o.pending_deposit),
        (OrderStatus::DepositPaid, o.deposit_paid),
        (OrderStatus::FinalPaid, o.final_paid),
        (OrderStatus::Closed, o.closed),
        (OrderStatus::Refunded, o.refunded),
    ]
    .into_iter()
    .map(|(st, n)| {
        let testid = format!("count-{}", st.as_str().replace('_', "-"));
        view! { <dt>{order_status_label(l, st)}</dt><dd data-testid=testid>{n}</dd> }
    })
    .collect_view();
    view! { <dl class="facts" data-testid="order-counts">{rows}</dl> }
}
