//! `/console/audit` and `/console/audit.csv`: the audit log. Operators and
//! admins read everyone's; a `support` member reads their own actions and
//! sign-ins only (the actor filter is fixed to them: the log shows every
//! staff member's actions, sign-ins and addresses).
//!
//! Two tabs of one page, each one table: coupon and order events (every
//! state change by staff, API callers and jobs) and the staff log
//! (accounts and sign-ins). Filters by actor, action, target and UTC date
//! range; keyset pages of 50 newest first; the same filters export CSV.

use axum::Router;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::NaiveDate;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use super::layout::{
    EventTarget, action_text, actor_text, change_text, enc, reason_text, time_text,
};
use crate::http::AppState;
use crate::service::audit::{AuditEventView, AuditLog, MAX_EXPORT_ROWS, StaffAuditView};
use crate::store::audit::AuditQuery;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/audit", get(audit_page))
        .route("/console/audit.csv", get(audit_csv))
}

/// Rows per page.
pub const PAGE_SIZE: i64 = 50;

#[derive(Deserialize, Default)]
struct AuditParams {
    log: Option<String>,
    actor: Option<String>,
    action: Option<String>,
    target: Option<String>,
    /// First UTC day, `YYYY-MM-DD`.
    from: Option<String>,
    /// Last UTC day (inclusive), `YYYY-MM-DD`.
    to: Option<String>,
    after: Option<String>,
}

fn nonempty(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| v.chars().take(200).collect())
}

/// Midnight of a `YYYY-MM-DD` business day (the filter's dates are read
/// in the business time zone, like every time on the page).
fn day_ms(raw: &str) -> Option<i64> {
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .ok()
        .and_then(crate::i18n::zone::start_of_day)
        .map(|t| t.timestamp_millis())
}

impl AuditParams {
    fn log(&self, l: Lang) -> Result<AuditLog, WebError> {
        AuditLog::parse(self.log.as_deref().unwrap_or(""))
            .ok_or_else(|| WebError::bad_request(l.t("unknown-log").to_string()))
    }

    fn query(&self, l: Lang) -> Result<AuditQuery, WebError> {
        let bad_date = || WebError::bad_request(l.t("dates-are-yyyy-mm-dd").to_string());
        let from_ms = match nonempty(&self.from) {
            None => None,
            Some(d) => Some(day_ms(&d).ok_or_else(bad_date)?),
        };
        let until_ms = match nonempty(&self.to) {
            None => None,
            Some(d) => Some(day_ms(&d).ok_or_else(bad_date)? + 86_400_000),
        };
        Ok(AuditQuery {
            actor: nonempty(&self.actor),
            action: nonempty(&self.action),
            target: nonempty(&self.target),
            from_ms,
            until_ms,
        })
    }

    /// The filter part of the query string (with the log), for links.
    fn filter_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("log", &self.log),
            ("actor", &self.actor),
            ("action", &self.action),
            ("target", &self.target),
            ("from", &self.from),
            ("to", &self.to),
        ] {
            if let Some(v) = nonempty(v) {
                q.append_pair(k, &v);
            }
        }
        q.finish()
    }
}

/// What of the log the reader may see: everyone's (`None`), or only their
/// own (`Some(actor)`, forced onto the filters).
fn readable_actor(staff: &Staff) -> Option<String> {
    (!staff.session.role.may_read_audit_log()).then(|| staff.session.actor())
}

impl AuditParams {
    /// The filters with the actor fixed to `own` when the reader may only
    /// see their own entries.
    fn scoped(mut self, own: Option<&str>) -> Self {
        if let Some(own) = own {
            self.actor = Some(own.to_string());
        }
        self
    }
}

async fn audit_page(
    State(s): State<AppState>,
    staff: Staff,
    Query(p): Query<AuditParams>,
) -> Response {
    let l = staff.lang;
    let own = readable_actor(&staff);
    let p = p.scoped(own.as_deref());
    let (log, q) = match p.log(l).and_then(|log| Ok((log, p.query(l)?))) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let after = nonempty(&p.after);
    let (table, next, count) = match log {
        AuditLog::Events => match s.service.audit_events(q, after.as_deref(), PAGE_SIZE).await {
            Ok(page) => {
                let n = page.rows.len();
                (events_table(l, page.rows).into_any(), page.next, n)
            }
            Err(e) => return WebError::from_service(l, e).into_response(),
        },
        AuditLog::Staff => match s.service.audit_staff(q, after.as_deref(), PAGE_SIZE).await {
            Ok(page) => {
                let n = page.rows.len();
                (staff_table(l, page.rows).into_any(), page.next, n)
            }
            Err(e) => return WebError::from_service(l, e).into_response(),
        },
    };
    let fq = p.filter_query();
    let sep = if fq.is_empty() { "" } else { "&" };
    let csv_href = format!("/console/audit.csv?{fq}");
    let next = next.map(|n| {
        let href = format!("/console/audit?{fq}{sep}after={}", enc(&n));
        view! { <a class="button" href=href rel="next" data-testid="next-page">{l.t("next-page")}</a> }
    });
    let first = after.is_some().then(|| {
        let href = format!("/console/audit?{fq}");
        view! { <a class="button" href=href>{l.t("first-page")}</a> }
    });
    let tab = |this: AuditLog, label: &'static str| {
        let href = format!("/console/audit?log={}", this.as_str());
        let current = (this == log).then_some("page");
        let testid = format!("tab-{}", this.as_str());
        view! { <a href=href aria-current=current class="tab" data-testid=testid>{label}</a> }
    };
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let (actor, action, target, from, to) = (
        value(&p.actor),
        value(&p.action),
        value(&p.target),
        value(&p.from),
        value(&p.to),
    );
    let target_label = match log {
        AuditLog::Events => l.t("target-coupon-id-or-order-no"),
        AuditLog::Staff => l.t("target-staff-name-or-webhook-subscriber"),
    };
    let action_hint = match log {
        AuditLog::Events => l.t("e-g-staff-release-force-release"),
        AuditLog::Staff => l.t("e-g-role-change-password-reset"),
    };
    let log_value = log.as_str();
    staff.page(
        l.t("audit-log"),
        view! {
            <nav class="tabs" aria-label=l.t("logs")>
                {tab(AuditLog::Events, l.t("audit-tab-events"))}" · "
                {tab(AuditLog::Staff, l.t("audit-tab-staff"))}
            </nav>
            <section aria-labelledby="audit-filters">
                <h2 id="audit-filters" class="visually-hidden">{l.t("filters")}</h2>
                <form method="get" action="/console/audit" class="filters" data-testid="audit-filters">
                    <input type="hidden" name="log" value=log_value/>
                    {match &own {
                        None => view! {
                            <label>{l.t("actor-exact-e-g-staff-alice")}
                                <input type="text" name="actor" value=actor/></label>
                        }.into_any(),
                        Some(_) => view! {
                            <p class="note" data-testid="audit-own-only">{l.t("audit-own-actions-only")}</p>
                        }.into_any(),
                    }}
                    <label>{l.t("action-exact")}
                        <input type="text" name="action" value=action placeholder=action_hint/></label>
                    <label>{target_label}<input type="text" name="target" value=target/></label>
                    <label>{l.t("filter-from-date")}<input type="date" name="from" value=from/></label>
                    <label>{l.t("filter-to-date")}<input type="date" name="to" value=to/></label>
                    <button type="submit" class="primary">{l.t("filter")}</button>
                    <a class="button" href=csv_href data-testid="csv">{l.t("export-csv")}</a>
                </form>
            </section>
            <section aria-labelledby="audit-results">
                <h2 id="audit-results">{crate::tr!(l, "on-this-page-newest-first", count = count)}</h2>
                {table}
                <p class="pager">{first}{next}</p>
            </section>
        },
    )
}

/// A staff-log action in words; an unknown word as stored.
fn staff_action_text(l: Lang, action: &str) -> String {
    crate::service::staff::actions::label_key(action)
        .or_else(|| crate::service::templates::actions::label_key(action))
        .or_else(|| crate::service::wakeup::actions::label_key(action))
        .or_else(|| crate::service::codes::actions::label_key(action))
        .map_or_else(|| action.to_string(), |k| l.t(&k).to_string())
}

fn dash(v: Option<String>) -> String {
    v.filter(|s| !s.is_empty())
        .unwrap_or_else(|| "—".to_string())
}

fn events_table(l: Lang, rows: Vec<AuditEventView>) -> impl IntoView + use<> {
    if rows.is_empty() {
        return view! { <p class="note" data-testid="audit-empty">{l.t("no-entries-match")}</p> }
            .into_any();
    }
    let rows = rows
        .into_iter()
        .map(|e| {
            let target = match EventTarget::of(
                l,
                &e.subject,
                e.coupon_id.as_deref(),
                e.coupon_code.as_deref(),
                e.order_no.as_deref(),
            ) {
                Some(EventTarget::Coupon { href, code }) => {
                    let label = crate::tr!(l, "coupon-5", id = code);
                    view! { <a href=href data-testid="audit-target">{label}</a> }.into_any()
                }
                Some(EventTarget::Order { href, order_no }) => {
                    let label = crate::tr!(l, "order-4", no = order_no);
                    view! { <a href=href data-testid="audit-target">{label}</a> }.into_any()
                }
                None => view! { "—" }.into_any(),
            };
            let change = change_text(l, &e.subject, e.from_status.as_deref(), &e.to_status);
            let id = e.id.to_string();
            let actor = actor_text(l, &e.actor);
            let action = action_text(l, &e.action);
            let reason = dash(e.reason.as_deref().map(|r| reason_text(l, r)));
            view! {
                <tr data-testid="audit-row" data-id=id>
                    <td class="nowrap" data-label=l.t("when")>{time_text(&e.at)}</td>
                    <td data-testid="audit-actor" data-actor=e.actor.clone() data-label=l.t("actor")>{actor}</td>
                    <td data-testid="audit-action" data-action=e.action.clone() data-label=l.t("action")>{action}</td>
                    <td data-label=l.t("target")>{target}</td>
                    <td data-testid="audit-change" data-label=l.t("before-after")>{change}</td>
                    <td data-testid="audit-reason" data-label=l.t("reason")>{reason}</td>
                    <td class="mono" data-testid="audit-address" data-label=l.t("address")>{dash(e.address)}</td>
                    <td class="mono" data-label=l.t("request-id")>{dash(e.request_id)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="audit-table">
                <thead><tr>
                    <th scope="col">{l.t("when")}</th>
                    <th scope="col">{l.t("actor")}</th>
                    <th scope="col">{l.t("action")}</th>
                    <th scope="col">{l.t("target")}</th>
                    <th scope="col">{l.t("before-after")}</th>
                    <th scope="col">{l.t("reason")}</th>
                    <th scope="col">{l.t("address")}</th>
                    <th scope="col">{l.t("request-id")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

fn staff_table(l: Lang, rows: Vec<StaffAuditView>) -> impl IntoView + use<> {
    if rows.is_empty() {
        return view! { <p class="note" data-testid="audit-empty">{l.t("no-entries-match")}</p> }
            .into_any();
    }
    let rows = rows
        .into_iter()
        .map(|e| {
            let id = e.id.to_string();
            view! {
                <tr data-testid="audit-row" data-id=id>
                    <td class="nowrap" data-label=l.t("when")>{time_text(&e.at)}</td>
                    <td data-testid="audit-actor" data-actor=e.actor.clone() data-label=l.t("actor")>{actor_text(l, &e.actor)}</td>
                    <td data-testid="audit-action" data-action=e.action.clone() data-label=l.t("action")>{staff_action_text(l, &e.action)}</td>
                    <td data-testid="audit-target" data-label=l.t("staff-account")>{e.target_name.clone().unwrap_or_else(|| e.target.clone())}</td>
                    <td data-testid="audit-detail" data-label=l.t("detail")>{staff_detail(l, &e)}</td>
                    <td class="mono" data-testid="audit-address" data-label=l.t("address")>{dash(e.address)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="audit-table">
                <thead><tr>
                    <th scope="col">{l.t("when")}</th>
                    <th scope="col">{l.t("actor")}</th>
                    <th scope="col">{l.t("action")}</th>
                    <th scope="col">{l.t("staff-account")}</th>
                    <th scope="col">{l.t("detail")}</th>
                    <th scope="col">{l.t("address")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

async fn audit_csv(
    State(s): State<AppState>,
    staff: Staff,
    Query(p): Query<AuditParams>,
) -> Response {
    let l = staff.lang;
    let p = p.scoped(readable_actor(&staff).as_deref());
    let (log, q) = match p.log(l).and_then(|log| Ok((log, p.query(l)?))) {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let filename = format!("audit-{}.csv", log.as_str());
    match s.service.export_audit_csv(log, q, MAX_EXPORT_ROWS).await {
        Ok(csv) => super::layout::csv_download(&filename, csv),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

/// A staff-log row's detail for people: a campaign or template change in
/// words (the stored `lock -> strict: reason` names policies by their
/// codes, a template edit is JSON), as their own pages' histories say it;
/// else as stored.
fn staff_detail(l: Lang, e: &StaffAuditView) -> String {
    match crate::service::campaigns::change_from_log(
        &e.action,
        e.detail.as_deref(),
        e.at.clone(),
        e.actor.clone(),
    ) {
        Some(ch) => {
            let (what, change) = super::campaigns::change_what(l, &ch);
            match ch.reason.as_deref().filter(|r| !r.is_empty()) {
                Some(reason) => format!("{what}: {change} ({reason})"),
                None => format!("{what}: {change}"),
            }
        }
        None if e.action.starts_with("template_") => {
            let (change, reason) = super::templates::history_change(l, e);
            match reason.as_str() {
                "" => change,
                r => format!("{change} ({r})"),
            }
        }
        None => e.detail.clone().unwrap_or_else(|| "—".to_string()),
    }
}
