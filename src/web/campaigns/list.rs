//! The campaign list: filtered by a part of the name, policy and phase, a
//! page at a time, each with where its final-payment window stands.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::Deserialize;

use super::words::{LIST, NEW, PAGE_SIZE, may_change, standing_text};
use crate::domain::campaign::{CampaignPhase, Policy};
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::campaigns::{CampaignListItem, CampaignSearch};
use crate::web::auth::{Staff, WebError};
use crate::web::components::{Pager, Time};
use crate::web::context::lang;
use crate::web::layout::{enc, policy_label};
use crate::web::paths;

#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
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

pub(super) async fn list(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<ListQuery>,
) -> Response {
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
