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
use super::components::{Pager, Time};
use super::context::lang;
use super::i18n::Lang;
use super::layout::{EventTarget, action_text, actor_text, change_text, enc, reason_text};
use crate::domain::event::EventAction;
use crate::domain::filters::AuditQuery;
use crate::domain::ids::{JobId, TemplateId};
use crate::domain::permissions::Permission;
use crate::http::AppState;
use crate::service::audit::{AuditEventView, AuditLog, MAX_EXPORT_ROWS, StaffAuditView};

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
    (!staff.may(Permission::ReadAuditLog)).then(|| staff.session.actor())
}

/// An action typed as the page shows it (`作废`, `Invalidate`), in either
/// language and any case, as its stored word; anything else as typed.
fn action_word(log: AuditLog, typed: &str) -> String {
    let t = typed.trim();
    let same = |key: &str| {
        [Lang::Zh, Lang::En]
            .iter()
            .any(|l| l.t(key).eq_ignore_ascii_case(t))
    };
    match log {
        AuditLog::Events => EventAction::ALL
            .into_iter()
            .find(|a| a.as_str() == t || same(a.label_key()))
            .map(|a| a.as_str().to_string()),
        AuditLog::Staff => staff_actions()
            .into_iter()
            .find(|(word, key)| *word == t || same(key))
            .map(|(word, _)| word.to_string()),
    }
    .unwrap_or_else(|| t.to_string())
}

/// Every staff-log action word with its catalog key.
fn staff_actions() -> Vec<(&'static str, String)> {
    let all = crate::service::staff::actions::ALL
        .iter()
        .chain(crate::service::templates::actions::ALL.iter())
        .chain(crate::service::wakeup::actions::ALL.iter())
        .chain(crate::service::codes::actions::ALL.iter())
        .chain([crate::service::categories::ACTION].iter());
    all.filter_map(|w| staff_action_key(w).map(|k| (*w, k)))
        .collect()
}

/// The catalog key of a staff-log action word, whichever module writes it.
fn staff_action_key(word: &str) -> Option<String> {
    crate::service::staff::actions::label_key(word)
        .or_else(|| crate::service::templates::actions::label_key(word))
        .or_else(|| crate::service::wakeup::actions::label_key(word))
        .or_else(|| crate::service::codes::actions::label_key(word))
        .or_else(|| {
            (word == crate::service::categories::ACTION).then(|| format!("staff-action-{word}"))
        })
}

/// A person typed as the page shows them: a staff name alone (`wang.op`)
/// is that staff member (`staff:wang.op`); a stored actor (`job:…`,
/// `api:…`, `anonymous`, `cli`) as it is.
fn actor_word(typed: &str) -> String {
    let t = typed.trim();
    // Actors stored without a prefix: a refused sign-in and the CLI.
    if t.contains(':') || t.is_empty() || matches!(t, "anonymous" | "cli") {
        t.to_string()
    } else {
        format!("staff:{}", t.to_lowercase())
    }
}

impl AuditParams {
    /// The filters read as people type them: names, words and codes as
    /// the page shows them become what is stored (see [`action_word`],
    /// [`actor_word`], [`crate::service::Service::audit_event_target`]).
    async fn interpreted(mut self, s: &AppState, log: AuditLog) -> Result<Self, WebError> {
        if let Some(a) = nonempty(&self.actor) {
            self.actor = Some(actor_word(&a));
        }
        if let Some(a) = nonempty(&self.action) {
            self.action = Some(action_word(log, &a));
        }
        if log == AuditLog::Events
            && let Some(t) = nonempty(&self.target)
        {
            self.target = Some(
                s.service
                    .audit_event_target(&t)
                    .await
                    .map_err(|e| WebError::bad_request(e.to_string()))?,
            );
        }
        Ok(self)
    }

    /// What was searched, in words, for an empty result.
    fn searched(&self, l: Lang) -> String {
        let mut parts = Vec::new();
        if let Some(a) = nonempty(&self.actor) {
            parts.push(format!("{}: {}", l.t("actor"), actor_text(l, &a)));
        }
        if let Some(a) = nonempty(&self.action) {
            parts.push(format!("{}: {}", l.t("action"), action_text(l, &a)));
        }
        if let Some(t) = nonempty(&self.target) {
            parts.push(format!("{}: {t}", l.t("audit-target")));
        }
        if let Some(d) = nonempty(&self.from) {
            parts.push(format!("{}: {d}", l.t("filter-from-date")));
        }
        if let Some(d) = nonempty(&self.to) {
            parts.push(format!("{}: {d}", l.t("filter-to-date")));
        }
        parts.join(" · ")
    }

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
    let log = match p.log(l) {
        Ok(log) => log,
        Err(e) => return e.into_response(),
    };
    let typed = (p.actor.clone(), p.action.clone(), p.target.clone());
    let mut p = match p.interpreted(&s, log).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let q = match p.query(l) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let searched = p.searched(l);
    // The form shows what was typed, not the stored words it became.
    (p.actor, p.action, p.target) = typed;
    let after = nonempty(&p.after);
    let (rows, next) = match log {
        AuditLog::Events => match s.service.audit_events(q, after.as_deref(), PAGE_SIZE).await {
            Ok(page) => (AuditRows::Events(page.rows), page.next),
            Err(e) => return WebError::from_service(l, e).into_response(),
        },
        AuditLog::Staff => match s.service.audit_staff(q, after.as_deref(), PAGE_SIZE).await {
            Ok(page) => (AuditRows::Staff(page.rows), page.next),
            Err(e) => return WebError::from_service(l, e).into_response(),
        },
    };
    let count = rows.len();
    let fq = p.filter_query();
    let sep = if fq.is_empty() { "" } else { "&" };
    let csv_href = format!("/console/audit.csv?{fq}");
    let next = next.map(|n| format!("/console/audit?{fq}{sep}after={}", enc(&n)));
    let first = after.is_some().then(|| format!("/console/audit?{fq}"));
    let tab = move |this: AuditLog, label: &'static str| {
        let href = format!("/console/audit?log={}", this.as_str());
        let current = (this == log).then_some("page");
        let testid = format!("tab-{}", this.as_str());
        view! { <a href=href aria-current=current class="tab" data-testid=testid>{label}</a> }
    };
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let (actor_opt, action_opt) = (p.actor.clone(), p.action.clone());
    let (target, from, to) = (value(&p.target), value(&p.from), value(&p.to));
    let target_label = match log {
        AuditLog::Events => l.t("target-coupon-id-or-order-no"),
        AuditLog::Staff => l.t("target-staff-name-or-webhook-subscriber"),
    };

    let log_value = log.as_str();
    // Pickers of what the page shows: people and jobs, actions in words.
    let chosen_actor = nonempty(&actor_opt)
        .map(|a| actor_word(&a))
        .unwrap_or_default();
    let mut people: Vec<(String, String)> =
        vec![(String::new(), l.t("audit-any-actor").to_string())];
    if own.is_none() {
        let accounts = s.service.list_staff().await.unwrap_or_default();
        people.extend(accounts.into_iter().map(|a| {
            let actor = format!("staff:{}", a.name);
            (actor.clone(), actor_text(l, &actor))
        }));
        people.extend(crate::domain::event::Job::ALL.into_iter().map(|j| {
            let actor = format!("job:{}", j.name());
            (actor.clone(), actor_text(l, &actor))
        }));
    }
    if !chosen_actor.is_empty() && !people.iter().any(|(v, _)| *v == chosen_actor) {
        people.push((chosen_actor.clone(), actor_text(l, &chosen_actor)));
    }
    let actor_options = people
        .into_iter()
        .map(|(value, label)| {
            let selected = value == chosen_actor;
            view! { <option value=value selected=selected>{label}</option> }
        })
        .collect_view();
    let chosen_action = nonempty(&action_opt)
        .map(|a| action_word(log, &a))
        .unwrap_or_default();
    let mut actions: Vec<(String, String)> =
        vec![(String::new(), l.t("audit-any-action").to_string())];
    match log {
        AuditLog::Events => actions.extend(
            EventAction::ALL
                .into_iter()
                .map(|a| (a.as_str().to_string(), l.t(a.label_key()).to_string())),
        ),
        AuditLog::Staff => actions.extend(
            staff_actions()
                .into_iter()
                .map(|(w, k)| (w.to_string(), l.t(&k).to_string())),
        ),
    }
    if !chosen_action.is_empty() && !actions.iter().any(|(v, _)| *v == chosen_action) {
        actions.push((chosen_action.clone(), chosen_action.clone()));
    }
    let action_options = actions
        .into_iter()
        .map(|(value, label)| {
            let selected = value == chosen_action;
            view! { <option value=value selected=selected>{label}</option> }
        })
        .collect_view();
    staff.page(l.t("audit-log"), move || {
        let table = match rows {
            AuditRows::Events(rows) => {
                view! { <EventsTable rows=rows searched=searched/> }.into_any()
            }
            AuditRows::Staff(rows) => view! { <StaffTable rows=rows searched=searched/> }.into_any(),
        };
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
                            <label>{l.t("actor")}
                                <select name="actor" data-testid="audit-actor-picker">{actor_options}</select></label>
                        }.into_any(),
                        Some(_) => view! {
                            <p class="note" data-testid="audit-own-only">{l.t("audit-own-actions-only")}</p>
                        }.into_any(),
                    }}
                    <label>{l.t("action")}
                        <select name="action" data-testid="audit-action-picker">{action_options}</select></label>
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
                <Pager first=first next=next/>
            </section>
        }
    })
}

/// One page of either log, as read.
enum AuditRows {
    Events(Vec<AuditEventView>),
    Staff(Vec<StaffAuditView>),
}

impl AuditRows {
    fn len(&self) -> usize {
        match self {
            AuditRows::Events(rows) => rows.len(),
            AuditRows::Staff(rows) => rows.len(),
        }
    }
}

/// A staff-log action in words; an unknown word as stored.
fn staff_action_text(l: Lang, action: &str) -> String {
    staff_action_key(action).map_or_else(|| action.to_string(), |k| l.t(&k).to_string())
}

/// Where a change came from: a bulk job (its id is the request id of
/// every change it makes) as a link to its page, named in words; a web
/// request's id as is, for matching the service log.
#[component]
fn RequestCell(request_id: Option<String>) -> impl IntoView {
    match request_id.filter(|r| !r.is_empty()) {
        Some(id) if crate::domain::ids::is_job_id(&id) => {
            let href = super::paths::job(&JobId::from_wire(id));
            view! { <a href=href data-testid="audit-job">{lang().t("bulk-job")}</a> }.into_any()
        }
        Some(id) => view! { <span class="mono">{id}</span> }.into_any(),
        None => view! { "—" }.into_any(),
    }
}

fn dash(v: Option<String>) -> String {
    v.filter(|s| !s.is_empty())
        .unwrap_or_else(|| "—".to_string())
}

/// The empty result: what was searched, and how to widen it.
#[component]
fn EmptyResult(searched: String) -> impl IntoView {
    let l = lang();
    let what = if searched.is_empty() {
        l.t("audit-searched-everything").to_string()
    } else {
        searched
    };
    view! {
        <p class="note" data-testid="audit-empty">
            <span data-testid="audit-searched">{crate::tr!(l, "audit-searched", what = what)}</span>" "
            {l.t("no-entries-match")}
        </p>
    }
}

/// What an event row is about, as a link and its words (`券 K7QM-…`,
/// `订单 P123`): the page links it, the CSV writes the words.
fn event_target(l: Lang, e: &AuditEventView) -> Option<(String, String)> {
    match EventTarget::of(
        l,
        &e.subject,
        e.coupon_id.as_ref(),
        e.coupon_code.as_deref(),
        e.order_no.as_ref(),
    )? {
        EventTarget::Coupon { href, code } => Some((href, crate::tr!(l, "coupon-5", id = code))),
        EventTarget::Order { href, order_no } => {
            Some((href, crate::tr!(l, "order-4", no = &order_no)))
        }
    }
}

/// A page of the coupon and order events; when there is none, what was
/// searched.
#[component]
fn EventsTable(rows: Vec<AuditEventView>, searched: String) -> impl IntoView {
    let l = lang();
    if rows.is_empty() {
        return view! { <EmptyResult searched=searched/> }.into_any();
    }
    let rows = rows
        .into_iter()
        .map(|e| {
            let target = match event_target(l, &e) {
                Some((href, label)) => {
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
                    <td class="nowrap" data-label=l.t("when")><Time at=e.at.clone()/></td>
                    <td data-testid="audit-actor" data-actor=e.actor.clone() data-label=l.t("actor")>{actor}</td>
                    <td data-testid="audit-action" data-action=e.action.clone() data-label=l.t("action")>{action}</td>
                    <td data-label=l.t("target")>{target}</td>
                    <td data-testid="audit-change" data-label=l.t("before-after")>{change}</td>
                    <td data-testid="audit-reason" data-label=l.t("reason")>{reason}</td>
                    <td class="mono" data-testid="audit-address" data-label=l.t("address")>{dash(e.address)}</td>
                    <td data-testid="audit-request" data-label=l.t("request-id")><RequestCell request_id=e.request_id/></td>
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

/// A page of the staff log; when there is none, what was searched.
#[component]
fn StaffTable(rows: Vec<StaffAuditView>, searched: String) -> impl IntoView {
    let l = lang();
    if rows.is_empty() {
        return view! { <EmptyResult searched=searched/> }.into_any();
    }
    let rows = rows
        .into_iter()
        .map(|e| {
            let id = e.id.to_string();
            view! {
                <tr data-testid="audit-row" data-id=id>
                    <td class="nowrap" data-label=l.t("when")><Time at=e.at.clone()/></td>
                    <td data-testid="audit-actor" data-actor=e.actor.clone() data-label=l.t("actor")>{actor_text(l, &e.actor)}</td>
                    <td data-testid="audit-action" data-action=e.action.clone() data-label=l.t("action")>{staff_action_text(l, &e.action)}</td>
                    <td data-testid="audit-target" data-label=l.t("target")>{staff_target(l, &e)}</td>
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
                    <th scope="col">{l.t("target")}</th>
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
    let log = match p.log(l) {
        Ok(log) => log,
        Err(e) => return e.into_response(),
    };
    let q = match p.interpreted(&s, log).await.and_then(|p| p.query(l)) {
        Ok(q) => q,
        Err(e) => return e.into_response(),
    };
    let filename = format!("audit-{}.csv", log.as_str());
    let event = |e: &AuditEventView| -> Vec<String> {
        let target = event_target(l, e)
            .map(|(_, label)| label)
            .unwrap_or_default();
        vec![
            super::layout::time_string(&e.at),
            actor_text(l, &e.actor),
            action_text(l, &e.action),
            target,
            change_text(l, &e.subject, e.from_status.as_deref(), &e.to_status),
            e.reason
                .as_deref()
                .map(|r| reason_text(l, r))
                .unwrap_or_default(),
        ]
    };
    let staff_row = |e: &StaffAuditView| -> Vec<String> {
        vec![
            super::layout::time_string(&e.at),
            actor_text(l, &e.actor),
            staff_action_text(l, &e.action),
            staff_target(l, e),
            staff_detail(l, e),
        ]
    };
    let header: &[&str] = match log {
        AuditLog::Events => &[
            "at_local",
            "actor_text",
            "action_text",
            "target_text",
            "change_text",
            "reason_text",
        ],
        AuditLog::Staff => &[
            "at_local",
            "actor_text",
            "action_text",
            "target_text",
            "detail_text",
        ],
    };
    let words = crate::service::audit::CsvWords {
        header,
        event: &event,
        staff: &staff_row,
    };
    match s
        .service
        .export_audit_csv(log, q, MAX_EXPORT_ROWS, &words)
        .await
    {
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
            let (what, change) = super::campaigns::detail::change_what(l, &ch);
            match ch.reason.as_deref().filter(|r| !r.is_empty()) {
                Some(reason) => format!("{what}: {change} ({reason})"),
                None => format!("{what}: {change}"),
            }
        }
        None if e.action.starts_with("template_") => {
            let (change, reason) = super::templates::detail::history_change(l, e);
            match reason.as_str() {
                "" => change,
                r => format!("{change} ({r})"),
            }
        }
        None => other_detail(l, e),
    }
}

/// What a staff-log row changed, by name: a staff account, a template, a
/// campaign, a code batch (by its template), a wake-up rule, a webhook
/// subscriber (by its address) or the compensation rules.
fn staff_target(l: Lang, e: &StaffAuditView) -> String {
    match (&e.target_name, e.target.as_str()) {
        (Some(name), t) if t.starts_with("cbt_") => {
            crate::tr!(l, "staff-target-code-batch", template = name.clone())
        }
        (Some(name), _) => name.clone(),
        (None, crate::service::compensation::RULES_TARGET) => {
            l.t("staff-target-compensation-rules").to_string()
        }
        (None, code) if e.action == crate::service::categories::ACTION => {
            crate::i18n::names::category(l, code)
        }
        (None, t) if crate::domain::ids::is_named_id(t) => l.t("term-unknown").to_string(),
        (None, t) => t.to_string(),
    }
}

/// A code batch's creation as the staff log keeps it.
#[derive(Deserialize)]
struct BatchDetail {
    template_id: TemplateId,
    count: i64,
    #[serde(default)]
    prefix: String,
    length: i64,
}

/// A wake-up rule's creation as the staff log keeps it.
#[derive(Deserialize)]
struct WakeupDetail {
    lead_seconds: i64,
    active_within_seconds: i64,
    #[serde(default)]
    template_ids: Vec<TemplateId>,
    bonus_template_id: Option<TemplateId>,
    control_percent: i64,
}

/// The other staff-log details in words: code batches, wake-up rules,
/// accounts' roles, compensation rules, webhook subscribers. Ids become
/// the names the service looked up; a detail in no known shape (a row
/// written by an older release) is shown as stored.
fn other_detail(l: Lang, e: &StaffAuditView) -> String {
    use crate::service::{codes, compensation, staff, wakeup};
    let Some(detail) = e.detail.as_deref().filter(|d| !d.is_empty()) else {
        return "—".to_string();
    };
    let name = |id: &str| {
        e.detail_names
            .get(id)
            .cloned()
            .unwrap_or_else(|| l.t("term-unknown").to_string())
    };
    let sep = l.t("template-change-separator");
    let words = match e.action.as_str() {
        codes::actions::CREATE => serde_json::from_str::<BatchDetail>(detail).ok().map(|b| {
            let prefix = if b.prefix.is_empty() {
                l.t("codes-no-prefix").to_string()
            } else {
                b.prefix
            };
            crate::tr!(
                l,
                "staff-detail-code-batch",
                template = name(&b.template_id),
                count = b.count,
                prefix = prefix,
                length = b.length
            )
        }),
        wakeup::actions::CREATE => serde_json::from_str::<WakeupDetail>(detail).ok().map(|w| {
            let templates = if w.template_ids.is_empty() {
                l.t("wakeup-all-templates").to_string()
            } else {
                w.template_ids
                    .iter()
                    .map(|t| name(t))
                    .collect::<Vec<_>>()
                    .join(sep)
            };
            let bonus = w
                .bonus_template_id
                .as_deref()
                .map_or_else(|| l.t("staff-detail-no-bonus").to_string(), name);
            crate::tr!(
                l,
                "staff-detail-wakeup-rule",
                lead = super::reminders::offset_label(l, w.lead_seconds),
                days = w.active_within_seconds / 86_400,
                templates = templates,
                bonus = bonus,
                control = w.control_percent
            )
        }),
        wakeup::actions::PAUSE | wakeup::actions::RESUME => detail
            .split_once(": ")
            .map(|(_, reason)| reason.to_string()),
        staff::actions::CREATE => detail.strip_prefix("role ").map(|role| {
            crate::tr!(
                l,
                "staff-detail-role",
                role = super::layout::role_label(l, role)
            )
        }),
        staff::actions::REPLACE => detail
            .strip_prefix("role ")
            .and_then(|rest| rest.strip_suffix(", new password"))
            .map(|role| {
                crate::tr!(
                    l,
                    "staff-detail-role-new-password",
                    role = super::layout::role_label(l, role)
                )
            }),
        staff::actions::ROLE_CHANGE => detail.split_once(" -> ").map(|(from, to)| {
            format!(
                "{} → {}",
                super::layout::role_label(l, from),
                super::layout::role_label(l, to)
            )
        }),
        compensation::RULES_CHANGE_ACTION => {
            crate::domain::compensation::RulesChangeLog::parse(detail).map(|log| {
                let mut parts = vec![crate::tr!(
                    l,
                    "staff-detail-rules-version",
                    from = log.from_version,
                    to = log.to_version
                )];
                parts.extend(
                    log.changes
                        .iter()
                        .map(|c| super::compensation::change_text(l, c)),
                );
                let text = parts.join(sep);
                match log.reason.as_str() {
                    "" => text,
                    r => format!("{text} ({r})"),
                }
            })
        }
        crate::service::categories::ACTION => {
            serde_json::from_str::<crate::service::categories::NameChange>(detail)
                .ok()
                .map(|n| {
                    let now = format!("{} / {}", n.zh, n.en);
                    match n.before {
                        Some((zh, en)) => format!("{zh} / {en} → {now}"),
                        None => now,
                    }
                })
        }
        staff::actions::WEBHOOK_ADD => detail.split_once(" types=").map(|(url, types)| {
            let types: Vec<String> = serde_json::from_str(types).unwrap_or_default();
            crate::tr!(
                l,
                "staff-detail-webhook",
                url = url,
                types = super::webhooks::types_text(l, &types)
            )
        }),
        _ => None,
    };
    words.unwrap_or_else(|| detail.to_string())
}
