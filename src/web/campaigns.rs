//! Presale campaigns (预售场次) for operators: the list
//! (`/console/campaigns`), a campaign's page (`/console/campaigns/{id}`:
//! its final-payment window, orders by status, locked coupons that will be
//! past their end when the window opens, the policy in words for staff and
//! in the customer's own words, the compensation mode, the history of
//! changes), the create form (`/console/campaigns/new`, times typed in the
//! business time zone), and the policy change: choose a policy, see a
//! preview of how many orders' final-payment outcome changes and the extra
//! compensation, confirm with a reason. The compensation mode changes the
//! same way, without a preview (it changes no outcome, only how the
//! compensation is given).
//!
//! Every staff role may read; operators and admins create and change (the
//! service enforces it; support sees no forms). A refused form comes back
//! (422) with what was typed and the message beside its field; a change
//! after the window opened is refused with the message at the policy (or
//! mode) field.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Duration, Utc};
use leptos::prelude::*;
use serde::Deserialize;

use super::actions::{form_id, idem};
use super::auth::{Staff, WebError};
use super::components::{IdsDetails, Pager, StaffLog, StaffLogRow, Time};
use super::context::{csrf_token, lang, viewer_may};
use super::i18n::Lang;
use super::layout::{
    FieldErrors, actor_text, enc, field_error, order_status_label, policy_label, time_at,
};
use super::paths;
use super::posted::OrPage;
use crate::domain::campaign::{CampaignPhase, CompensationMode, Policy};
use crate::domain::final_payment::CouponOutcome;
use crate::domain::ids::CampaignId;
use crate::domain::money::CentsDelta;
use crate::domain::order::OrderStatus;
use crate::domain::permissions::Permission;
use crate::domain::time::parse_rfc3339;
use crate::http::AppState;
use crate::i18n::Arg;
use crate::service::campaigns::{
    CampaignChange, CampaignDetail, CampaignInput, CampaignListItem, CampaignOrderCounts,
    CampaignPatch, CampaignSearch, PolicyChangePreview,
};
use crate::service::views::CampaignView;
use crate::service::{Refusal, ServiceError};

const LIST: &str = "/console/campaigns";
const NEW: &str = "/console/campaigns/new";
/// Campaigns per list page.
const PAGE_SIZE: i64 = 50;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(LIST, get(list))
        .route(NEW, get(new_page).post(create))
        .route("/console/campaigns/{id}", get(detail))
        .route(
            "/console/campaigns/{id}/policy",
            get(preview_page).post(change_policy),
        )
        .route(
            "/console/campaigns/{id}/compensation-mode",
            get(mode_page).post(change_mode),
        )
}

fn may_change(staff: &Staff) -> bool {
    staff.may(Permission::RunCampaigns)
}

fn operator_only(staff: &Staff) -> Option<Response> {
    (!may_change(staff))
        .then(|| WebError::forbidden(staff.lang.t("campaign-needs-operator")).into_response())
}

/// `3 天 4 小时` / `3 days 4 hours`: a span for "opens in" and "closes in",
/// to the minute, at most two units.
fn span_text(l: Lang, span: Duration) -> String {
    let minutes = span.num_minutes().max(1);
    let (days, hours, mins) = (minutes / 1440, (minutes % 1440) / 60, minutes % 60);
    if days > 0 {
        crate::tr!(l, "campaign-span-days", days = days, hours = hours)
    } else if hours > 0 {
        crate::tr!(l, "campaign-span-hours", hours = hours, minutes = mins)
    } else {
        crate::tr!(l, "campaign-span-minutes", minutes = mins)
    }
}

/// Where the window stands at `now`, in words.
fn standing_text(l: Lang, now: DateTime<Utc>, c: &CampaignView) -> String {
    let (Ok(starts), Ok(ends)) = (
        parse_rfc3339(&c.final_payment_starts_at),
        parse_rfc3339(&c.final_payment_ends_at),
    ) else {
        return String::new();
    };
    if now < starts {
        crate::tr!(l, "campaign-opens-in", span = span_text(l, starts - now))
    } else if now < ends {
        crate::tr!(l, "campaign-closes-in", span = span_text(l, ends - now))
    } else {
        crate::tr!(l, "campaign-closed-ago", span = span_text(l, now - ends))
    }
}

fn mode_label(l: Lang, m: CompensationMode) -> &'static str {
    match m {
        CompensationMode::Deduction => l.t("campaign-mode-deduction"),
        CompensationMode::Coupon => l.t("campaign-mode-coupon"),
    }
}

fn policy_staff_text(l: Lang, p: Policy) -> &'static str {
    match p {
        Policy::Lock => l.t("campaign-policy-staff-lock"),
        Policy::Strict => l.t("campaign-policy-staff-strict"),
        Policy::SwapOrCompensate => l.t("campaign-policy-staff-swap"),
    }
}

fn outcome_label(l: Lang, o: CouponOutcome) -> &'static str {
    match o {
        CouponOutcome::Applied => l.t("campaign-outcome-applied"),
        CouponOutcome::NoDiscountExpired => l.t("campaign-outcome-no-discount"),
        CouponOutcome::Swapped => l.t("campaign-outcome-swapped"),
        CouponOutcome::Compensated => l.t("campaign-outcome-compensated"),
        CouponOutcome::None => l.t("campaign-outcome-none"),
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

#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    cursor: Option<String>,
    /// A part of the name.
    q: Option<String>,
    policy: Option<String>,
    phase: Option<String>,
}

impl ListQuery {
    fn policy(&self) -> Option<Policy> {
        self.policy
            .as_deref()
            .filter(|p| !p.is_empty())
            .and_then(Policy::parse)
    }

    fn phase(&self) -> Option<CampaignPhase> {
        self.phase
            .as_deref()
            .filter(|p| !p.is_empty())
            .and_then(CampaignPhase::parse)
    }

    /// Whether a filter names a policy or phase that is none.
    fn unknown(&self) -> bool {
        let unknown = |raw: &Option<String>, known: bool| {
            raw.as_deref().is_some_and(|v| !v.is_empty()) && !known
        };
        unknown(&self.policy, self.policy().is_some())
            || unknown(&self.phase, self.phase().is_some())
    }

    fn narrowed(&self) -> bool {
        self.q.as_deref().is_some_and(|q| !q.trim().is_empty())
            || self.policy().is_some()
            || self.phase().is_some()
    }

    /// The filters as a query string (no cursor), for the pager.
    fn filter_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("q", &self.q),
            ("policy", &self.policy),
            ("phase", &self.phase),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                q.append_pair(k, v);
            }
        }
        q.finish()
    }
}

async fn list(State(s): State<AppState>, staff: Staff, Query(q): Query<ListQuery>) -> Response {
    let l = staff.lang;
    if q.unknown() {
        return WebError::bad_request(l.t("campaign-unknown-filter").to_string()).into_response();
    }
    let search = CampaignSearch {
        q: q.q.clone(),
        policy: q.policy(),
        phase: q.phase(),
    };
    let page = match s
        .service
        .search_campaigns(search, q.cursor.clone(), PAGE_SIZE)
        .await
    {
        Ok(p) => p,
        Err(ServiceError::Invalid(f)) if f.field == "q" => {
            return WebError::bad_request(l.t("campaign-unknown-filter").to_string())
                .into_response();
        }
        Err(ServiceError::Invalid(_)) => {
            return WebError::bad_request(l.t("campaign-bad-cursor").to_string()).into_response();
        }
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let now = s.service.now();
    let none_key = if q.narrowed() {
        "campaign-none-match"
    } else {
        "campaign-none-yet"
    };
    let campaigns = page.campaigns;
    let fq = q.filter_query();
    let next = page.next.map(|n| format!("{LIST}?{fq}&cursor={}", enc(&n)));
    let first = q
        .cursor
        .as_deref()
        .is_some_and(|c| !c.is_empty())
        .then(|| format!("{LIST}?{fq}"));
    let new = may_change(&staff).then(|| {
        view! { <p class="actions"><a class="button primary" href=NEW data-testid="new-campaign">{l.t("campaign-new")}</a></p> }
    });
    let policy_options = Policy::ALL
        .into_iter()
        .map(|p| {
            let selected = q.policy() == Some(p);
            view! { <option value=p.as_str() selected=selected>{policy_label(l, p)}</option> }
        })
        .collect_view();
    let phase_options = CampaignPhase::ALL
        .into_iter()
        .map(|p| {
            let selected = q.phase() == Some(p);
            view! { <option value=p.as_str() selected=selected>{l.t(p.label_key())}</option> }
        })
        .collect_view();
    let typed = q.q.clone().unwrap_or_default();
    staff.page(l.t("campaigns-title"), move || {
        let table = if campaigns.is_empty() {
            view! { <p class="note" data-testid="no-campaigns">{l.t(none_key)}</p> }.into_any()
        } else {
            view! { <CampaignTable now=now campaigns=campaigns/> }.into_any()
        };
        view! {
            <section aria-labelledby="campaigns-heading">
                <h2 id="campaigns-heading">{l.t("campaigns-title")}</h2>
                <p class="note">{l.t("campaigns-explained")}</p>
                {new}
                <form method="get" action=LIST class="filters" data-testid="campaign-filters">
                    <label>{l.t("campaign-name-contains")}
                        <input type="search" name="q" value=typed maxlength="200" data-testid="campaign-search"/>
                    </label>
                    <label>{l.t("policy")}
                        <select name="policy" data-testid="campaign-policy-filter">
                            <option value="">{l.t("any")}</option>
                            {policy_options}
                        </select>
                    </label>
                    <label>{l.t("campaign-phase")}
                        <select name="phase" data-testid="campaign-phase-filter">
                            <option value="">{l.t("any")}</option>
                            {phase_options}
                        </select>
                    </label>
                    <button type="submit" class="primary" data-testid="campaign-filter">{l.t("filter")}</button>
                </form>
                {table}
                <Pager first=first next=next/>
            </section>
        }
    })
}

/// The campaigns of a list page: each one's name (linking to its page),
/// final-payment window, where the window stands at `now`, policy and
/// orders.
#[component]
fn CampaignTable(now: DateTime<Utc>, campaigns: Vec<CampaignListItem>) -> impl IntoView {
    let l = lang();
    let rows = campaigns
        .into_iter()
        .map(|item| {
            let c = item.campaign;
            let o = item.orders;
            let href = paths::campaign(&c.id);
            let standing = standing_text(l, now, &c);
            let policy = policy_label(l, c.policy);
            let counts = crate::tr!(
                l,
                "campaign-counts",
                deposit_paid = o.deposit_paid,
                final_paid = o.final_paid,
                closed = o.closed + o.refunded
            );
            view! {
                <tr data-testid="campaign-row">
                    <td data-label=l.t("name")><a href=href data-testid="campaign-link">{c.name.clone()}</a></td>
                    <td class="nowrap" data-label=l.t("final-payment-window")>
                        <Time at=c.final_payment_starts_at.clone()/>" — "<Time at=c.final_payment_ends_at.clone()/>
                    </td>
                    <td data-label=l.t("campaign-standing") data-testid="campaign-standing">{standing}</td>
                    <td data-label=l.t("policy") data-testid="campaign-policy">{policy}</td>
                    <td data-label=l.t("campaign-orders") data-testid="campaign-counts">{counts}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="campaigns">
                <thead><tr>
                    <th scope="col">{l.t("name")}</th>
                    <th scope="col">{l.t("final-payment-window")}</th>
                    <th scope="col">{l.t("campaign-standing")}</th>
                    <th scope="col">{l.t("policy")}</th>
                    <th scope="col">{l.t("campaign-orders")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

async fn detail(
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

// ---------------------------------------------------------------- create

/// The create form as typed.
#[derive(Debug, Clone, Default, Deserialize)]
struct CreateForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    starts: String,
    #[serde(default)]
    ends: String,
    #[serde(default)]
    policy: String,
    #[serde(default)]
    compensation_mode: String,
}

/// The create form, as typed (`typed`) with each refused field's message
/// beside it (`errors`); the times are typed in the business time zone,
/// whose offset at `now` the labels name.
#[component]
fn NewCampaignForm(now: DateTime<Utc>, typed: CreateForm, errors: FieldErrors) -> impl IntoView {
    let l = lang();
    let csrf = csrf_token();
    let fid = form_id();
    let name = errors.input_attrs("name", "name");
    let starts = errors.input_attrs("final_payment_starts_at", "starts");
    let ends = errors.input_attrs("final_payment_ends_at", "ends");
    let policy = errors.input_attrs("policy", "policy");
    let mode = errors.input_attrs("compensation_mode", "compensation_mode");
    let chosen_policy = Policy::parse(&typed.policy).unwrap_or(Policy::Lock);
    let chosen_mode = CompensationMode::parse(&typed.compensation_mode).unwrap_or_default();
    let policies = Policy::ALL
        .into_iter()
        .map(|p| view! { <option value=p.as_str() selected={p == chosen_policy}>{policy_label(l, p)}</option> })
        .collect_view();
    let modes = CompensationMode::ALL
        .into_iter()
        .map(|m| view! { <option value=m.as_str() selected={m == chosen_mode}>{mode_label(l, m)}</option> })
        .collect_view();
    let zone = crate::i18n::zone::offset_text(crate::i18n::zone::current().offset_seconds(now));
    view! {
        <form method="post" action=NEW class="stack" data-testid="create-form">
            <input type="hidden" name="csrf" value=csrf/>
            <input type="hidden" name="form_id" value=fid/>
            <label for="name">{l.t("name")}</label>
            <input id="name" name="name" required maxlength="200" value=typed.name.clone()
                aria-invalid=name.invalid aria-describedby=name.described_by.clone()/>
            {field_error(&name)}
            <label for="starts">{crate::tr!(l, "campaign-field-starts", zone = zone.clone())}</label>
            <input id="starts" name="starts" type="datetime-local" required value=typed.starts.clone()
                aria-invalid=starts.invalid aria-describedby=starts.described_by.clone()/>
            {field_error(&starts)}
            <label for="ends">{crate::tr!(l, "campaign-field-ends", zone = zone)}</label>
            <input id="ends" name="ends" type="datetime-local" required value=typed.ends.clone()
                aria-invalid=ends.invalid aria-describedby=ends.described_by.clone()/>
            {field_error(&ends)}
            <label for="policy">{l.t("policy")}</label>
            <select id="policy" name="policy" aria-invalid=policy.invalid aria-describedby=policy.described_by.clone()>{policies}</select>
            {field_error(&policy)}
            <label for="compensation_mode">{l.t("campaign-mode")}</label>
            <select id="compensation_mode" name="compensation_mode" aria-invalid=mode.invalid aria-describedby=mode.described_by.clone()>{modes}</select>
            {field_error(&mode)}
            <p class="note">{l.t("campaign-mode-applies-only-to-swap")}</p>
            <p class="actions">
                <button type="submit" class="primary" data-testid="create">{l.t("campaign-create-button")}</button>
                <a class="button" href=LIST>{l.t("cancel")}</a>
            </p>
        </form>
    }
}

fn new_response(
    staff: &Staff,
    now: DateTime<Utc>,
    typed: &CreateForm,
    errors: &FieldErrors,
) -> Response {
    let l = staff.lang;
    let (typed, shown_errors) = (typed.clone(), errors.clone());
    let mut r = staff.page(l.t("campaign-new"), move || {
        view! {
            <section aria-labelledby="new-heading">
                <h2 id="new-heading">{l.t("campaign-new")}</h2>
                <p class="note">{l.t("campaign-new-explained")}</p>
                <NewCampaignForm now=now typed=typed errors=shown_errors/>
            </section>
        }
    });
    if !errors.is_empty() {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

async fn new_page(State(s): State<AppState>, staff: Staff) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    new_response(
        &staff,
        s.service.now(),
        &CreateForm::default(),
        &FieldErrors::default(),
    )
}

/// A `datetime-local` value (`2026-11-11T20:00`) in the business zone.
fn local_time(raw: &str) -> Option<DateTime<Utc>> {
    use chrono::NaiveDateTime;
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(raw.trim(), f).ok())
        .and_then(crate::i18n::zone::from_local)
}

/// The message beside a field of the create form for the service's
/// refusal of it.
fn create_field_message(l: Lang, field: &str) -> Option<(&'static str, &'static str)> {
    Some(match field {
        "name" => ("name", l.t("campaign-error-name")),
        "final_payment_starts_at" => ("final_payment_starts_at", l.t("campaign-error-time")),
        "final_payment_ends_at" => ("final_payment_ends_at", l.t("campaign-error-ends")),
        "policy" => ("policy", l.t("campaign-error-policy")),
        "compensation_mode" => ("compensation_mode", l.t("campaign-error-mode")),
        _ => return None,
    })
}

async fn create(
    State(s): State<AppState>,
    staff: Staff,
    body: Bytes,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    #[derive(Deserialize)]
    struct WithId {
        form_id: Option<String>,
    }
    let form: CreateForm = staff.posted(&body)?;
    let fid = super::auth::parse_form::<WithId>(&body)
        .ok()
        .and_then(|w| w.form_id);
    let l = staff.lang;
    let mut errors = FieldErrors::default();
    let starts = local_time(&form.starts);
    let ends = local_time(&form.ends);
    if starts.is_none() {
        errors.add(
            "final_payment_starts_at",
            l.t("campaign-error-time").to_string(),
        );
    }
    if ends.is_none() {
        errors.add(
            "final_payment_ends_at",
            l.t("campaign-error-time").to_string(),
        );
    }
    if form.name.trim().is_empty() {
        errors.add("name", l.t("campaign-error-name").to_string());
    }
    if !errors.is_empty() {
        return Ok(new_response(&staff, s.service.now(), &form, &errors));
    }
    let input = CampaignInput {
        name: Some(form.name.clone()),
        final_payment_starts_at: starts.map(crate::domain::time::rfc3339),
        final_payment_ends_at: ends.map(crate::domain::time::rfc3339),
        policy: Some(form.policy.clone()),
        compensation_mode: Some(form.compensation_mode.clone()),
    };
    let key = idem(&staff, fid.as_deref(), NEW, &body);
    Ok(
        match s
            .service
            .create_campaign_as(&staff.ctx(), &staff.authority(), key.as_ref(), input)
            .await
        {
            Ok(done) => {
                let v = match done {
                    crate::service::Executed::Fresh(v) => Some((v.id, v.name)),
                    crate::service::Executed::Replayed { body, .. } => {
                        serde_json::from_str::<serde_json::Value>(&body)
                            .ok()
                            .and_then(|v| {
                                Some((
                                    CampaignId::from_wire(v.get("id")?.as_str()?),
                                    v.get("name")?.as_str()?.to_string(),
                                ))
                            })
                    }
                };
                match v {
                    Some((id, name)) => staff.done(
                        &paths::campaign(&id),
                        crate::tr!(l, "campaign-created", name = name),
                    ),
                    None => staff.done(LIST, l.t("campaign-created-plain").to_string()),
                }
            }
            Err(ServiceError::Invalid(f)) => {
                match create_field_message(l, f.field) {
                    Some((field, m)) => errors.add(field, m.to_string()),
                    None => errors.add("name", f.message),
                }
                new_response(&staff, s.service.now(), &form, &errors)
            }
            Err(ServiceError::IdempotencyKeyReused | ServiceError::IdempotencyInProgress) => {
                errors.add("name", l.t("action-error-form-reused").to_string());
                new_response(&staff, s.service.now(), &form, &errors)
            }
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}

// ---------------------------------------------------------------- policy

#[derive(Debug, Deserialize)]
struct PolicyQuery {
    policy: Option<String>,
}

/// The change form as posted.
#[derive(Debug, Clone, Default, Deserialize)]
struct ChangeForm {
    #[serde(default)]
    policy: String,
    #[serde(default)]
    compensation_mode: String,
    #[serde(default)]
    reason: String,
    form_id: Option<String>,
}

/// What a policy change would do: the policy before → after, when it is
/// judged, the orders read and changed, the extra compensation, and the
/// changes of outcome.
#[component]
fn PreviewFigures(preview: PolicyChangePreview) -> impl IntoView {
    let (l, p) = (lang(), preview);
    let f = &p.figures;
    let at_least = |n: String| {
        if p.capped {
            crate::tr!(l, "campaign-preview-at-least", n = n)
        } else {
            n
        }
    };
    let changed = at_least(f.changed_orders.to_string());
    let cost = at_least(CentsDelta::from_stored(f.extra_compensation_cents).shown_as_change());
    let rows = f
        .changes
        .iter()
        .map(|c| {
            view! {
                <tr data-testid="preview-change">
                    <td data-label=l.t("campaign-outcome-now")>{outcome_label(l, c.from)}</td>
                    <td data-label=l.t("campaign-outcome-then")>{outcome_label(l, c.to)}</td>
                    <td data-label=l.t("campaign-orders")>{c.orders}</td>
                    <td class="money" data-label=l.t("campaign-extra-cost")>{CentsDelta::from_stored(c.extra_compensation_cents).shown_as_change()}</td>
                </tr>
            }
        })
        .collect_view();
    let table = (!f.changes.is_empty()).then(|| {
        view! {
            <div class="table-wrap">
                <table class="stack" data-testid="preview-changes">
                    <thead><tr>
                        <th scope="col">{l.t("campaign-outcome-now")}</th>
                        <th scope="col">{l.t("campaign-outcome-then")}</th>
                        <th scope="col">{l.t("campaign-orders")}</th>
                        <th scope="col">{l.t("campaign-extra-cost")}</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
    });
    let judged = parse_rfc3339(&p.judged_at).ok();
    view! {
        <dl class="facts" data-testid="preview">
            <dt>{l.t("policy")}</dt>
            <dd>{policy_label(l, p.campaign.policy)}" → "<strong data-testid="proposed">{policy_label(l, p.proposed)}</strong></dd>
            <dt>{l.t("campaign-preview-judged-at")}</dt>
            <dd>{judged.map(time_at)}</dd>
            <dt>{l.t("campaign-preview-orders-read")}</dt>
            <dd data-testid="orders-read">{at_least(f.orders_read.to_string())}</dd>
            <dt>{l.t("campaign-preview-changed")}</dt>
            <dd data-testid="changed-orders">{changed}</dd>
            <dt>{l.t("campaign-extra-cost")}</dt>
            <dd class="money" data-testid="extra-cost">{cost}</dd>
        </dl>
        {table}
        <p class="note">{l.t("campaign-preview-explained")}</p>
        <p class="note">{policy_staff_text(l, p.proposed)}</p>
    }
}

fn preview_response(
    staff: &Staff,
    p: &PolicyChangePreview,
    reason: &str,
    errors: &FieldErrors,
) -> Response {
    let l = staff.lang;
    let action = paths::campaign_policy(&p.campaign.id);
    let csrf = staff.session.csrf_token.clone();
    let fid = form_id();
    let st = errors.input_attrs("reason", "reason");
    let pol = errors.input_attrs("policy", "policy");
    let typed = super::escape_html(reason);
    let back = paths::campaign(&p.campaign.id);
    let title = crate::tr!(l, "campaign-preview-title", name = p.campaign.name.clone());
    let heading = title.clone();
    let proposed = p.proposed.as_str();
    let preview = p.clone();
    let mut r = staff.page(&title, move || {
        view! {
            <section class="confirm" aria-labelledby="preview-heading">
                <h2 id="preview-heading">{heading}</h2>
                <PreviewFigures preview=preview/>
                <form method="post" action=action class="stack" data-testid="confirm-form">
                    <input type="hidden" name="csrf" value=csrf/>
                    <input type="hidden" name="form_id" value=fid/>
                    <input type="hidden" name="policy" value=proposed/>
                    {field_error(&pol)}
                    <label for="reason">{l.t("campaign-reason")}</label>
                    <textarea id="reason" name="reason" required=true maxlength="500"
                        aria-invalid=st.invalid aria-describedby=st.described_by.clone()>{typed}</textarea>
                    {field_error(&st)}
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="confirm">{l.t("campaign-confirm-policy")}</button>
                        <a class="button" href=back>{l.t("cancel")}</a>
                    </p>
                </form>
            </section>
        }
    });
    if !errors.is_empty() {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

async fn preview_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
    Query(q): Query<PolicyQuery>,
) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    let l = staff.lang;
    let Some(proposed) = q.policy.as_deref().and_then(Policy::parse) else {
        return WebError::bad_request(l.t("campaign-error-policy").to_string()).into_response();
    };
    match s
        .service
        .preview_policy_change(&id, proposed.as_str())
        .await
    {
        Ok(p) => preview_response(&staff, &p, "", &FieldErrors::default()),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

/// Where a refusal of a change shows: the field and the message.
fn change_refusal(
    l: Lang,
    e: &ServiceError,
    choice_field: &'static str,
) -> Option<(&'static str, String)> {
    match e {
        ServiceError::Invalid(f) => match f.field {
            "reason" => Some(("reason", l.t("please-give-a-reason").to_string())),
            "policy" => Some(("policy", l.t("campaign-error-policy").to_string())),
            "compensation_mode" => {
                Some(("compensation_mode", l.t("campaign-error-mode").to_string()))
            }
            _ => None,
        },
        ServiceError::Refused {
            refusal: Refusal::CampaignWindowOpen,
            ..
        } => Some((
            choice_field,
            l.t(Refusal::CampaignWindowOpen.message_key()).to_string(),
        )),
        ServiceError::IdempotencyKeyReused | ServiceError::IdempotencyInProgress => {
            Some(("reason", l.t("action-error-form-reused").to_string()))
        }
        _ => None,
    }
}

async fn change_policy(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
    body: Bytes,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    let form: ChangeForm = staff.posted(&body)?;
    let l = staff.lang;
    let path = paths::campaign_policy(&id);
    let key = idem(&staff, form.form_id.as_deref(), &path, &body);
    let patch = CampaignPatch {
        policy: Some(form.policy.clone()),
        compensation_mode: None,
        reason: Some(form.reason.clone()),
    };
    let result = s
        .service
        .change_campaign(
            &staff.ctx(),
            &staff.authority(),
            key.as_ref(),
            id.clone(),
            patch,
        )
        .await;
    Ok(match result {
        Ok(_) => staff.done(
            &paths::campaign(&id),
            crate::tr!(
                l,
                "campaign-policy-changed",
                policy = Policy::parse(&form.policy).map_or("", |p| policy_label(l, p))
            ),
        ),
        Err(e) => {
            let Some((field, message)) = change_refusal(l, &e, "policy") else {
                return Err(WebError::from_service(l, e));
            };
            let mut errors = FieldErrors::default();
            errors.add(field, message);
            match s.service.preview_policy_change(&id, &form.policy).await {
                Ok(p) => preview_response(&staff, &p, &form.reason, &errors),
                Err(e) => WebError::from_service(l, e).into_response(),
            }
        }
    })
}

// ---------------------------------------------------------- compensation mode

fn mode_response(
    staff: &Staff,
    c: &CampaignView,
    chosen: CompensationMode,
    reason: &str,
    errors: &FieldErrors,
) -> Response {
    let l = staff.lang;
    let action = paths::campaign_compensation_mode(&c.id);
    let csrf = staff.session.csrf_token.clone();
    let fid = form_id();
    let st = errors.input_attrs("reason", "reason");
    let mode = errors.input_attrs("compensation_mode", "compensation_mode");
    let typed = super::escape_html(reason);
    let back = paths::campaign(&c.id);
    let options = CompensationMode::ALL
        .into_iter()
        .map(|m| view! { <option value=m.as_str() selected={m == chosen}>{mode_label(l, m)}</option> })
        .collect_view();
    let title = crate::tr!(l, "campaign-mode-title", name = c.name.clone());
    let heading = title.clone();
    let mut r = staff.page(&title, move || {
        view! {
            <section class="confirm" aria-labelledby="mode-heading">
                <h2 id="mode-heading">{heading}</h2>
                <p>{l.t("campaign-mode-staff-deduction")}</p>
                <p>{l.t("campaign-mode-staff-coupon")}</p>
                <form method="post" action=action class="stack" data-testid="mode-form">
                    <input type="hidden" name="csrf" value=csrf/>
                    <input type="hidden" name="form_id" value=fid/>
                    <label for="compensation_mode">{l.t("campaign-mode")}</label>
                    <select id="compensation_mode" name="compensation_mode" aria-invalid=mode.invalid aria-describedby=mode.described_by.clone()>{options}</select>
                    {field_error(&mode)}
                    <label for="reason">{l.t("campaign-reason")}</label>
                    <textarea id="reason" name="reason" required=true maxlength="500"
                        aria-invalid=st.invalid aria-describedby=st.described_by.clone()>{typed}</textarea>
                    {field_error(&st)}
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="confirm">{l.t("campaign-confirm-mode")}</button>
                        <a class="button" href=back>{l.t("cancel")}</a>
                    </p>
                </form>
            </section>
        }
    });
    if !errors.is_empty() {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

async fn mode_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    match s.service.get_campaign(&id).await {
        Ok(c) => {
            let other = match c.compensation_mode {
                CompensationMode::Deduction => CompensationMode::Coupon,
                CompensationMode::Coupon => CompensationMode::Deduction,
            };
            mode_response(&staff, &c, other, "", &FieldErrors::default())
        }
        Err(e) => WebError::from_service(staff.lang, e).into_response(),
    }
}

async fn change_mode(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
    body: Bytes,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    let form: ChangeForm = staff.posted(&body)?;
    let l = staff.lang;
    let path = paths::campaign_compensation_mode(&id);
    let key = idem(&staff, form.form_id.as_deref(), &path, &body);
    let patch = CampaignPatch {
        policy: None,
        compensation_mode: Some(form.compensation_mode.clone()),
        reason: Some(form.reason.clone()),
    };
    let result = s
        .service
        .change_campaign(
            &staff.ctx(),
            &staff.authority(),
            key.as_ref(),
            id.clone(),
            patch,
        )
        .await;
    Ok(match result {
        Ok(_) => staff.done(
            &paths::campaign(&id),
            crate::tr!(
                l,
                "campaign-mode-changed",
                mode = CompensationMode::parse(&form.compensation_mode)
                    .map_or("", |m| mode_label(l, m))
            ),
        ),
        Err(e) => {
            let Some((field, message)) = change_refusal(l, &e, "compensation_mode") else {
                return Err(WebError::from_service(l, e));
            };
            let mut errors = FieldErrors::default();
            errors.add(field, message);
            match s.service.get_campaign(&id).await {
                Ok(c) => {
                    let chosen = CompensationMode::parse(&form.compensation_mode)
                        .unwrap_or(c.compensation_mode);
                    mode_response(&staff, &c, chosen, &form.reason, &errors)
                }
                Err(e) => WebError::from_service(l, e).into_response(),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_at_most_two_units() {
        assert_eq!(
            span_text(Lang::En, Duration::hours(50) + Duration::minutes(5)),
            "2 days 2 hours"
        );
        assert_eq!(
            span_text(Lang::En, Duration::minutes(61)),
            "1 hour 1 minute"
        );
        assert_eq!(span_text(Lang::Zh, Duration::seconds(20)), "1 分钟");
    }
}
