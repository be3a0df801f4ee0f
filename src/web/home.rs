//! The console's home page as a work queue (`/console`), and the two lists
//! it links to that no other page shows: presale orders whose locked
//! coupon ends before their final payment opens (`/console/queue/at-risk`)
//! and checkout locks lapsing within the hour (`/console/queue/lapsing`).
//!
//! Each line is a count from one indexed query ([`crate::store::queue`])
//! and a link to the page that lists it, so an agent's day starts from
//! what needs a person, not from an empty search box.

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::components::Time;
use super::context::lang;
use super::i18n::Lang;
use super::layout::{EventTarget, action_text, enc};
use super::paths;
use crate::domain::permissions::Permission;
use crate::http::AppState;
use crate::service::audit::AuditEventView;
use crate::service::queue::{AtRiskOrder, LapsingOrder, WorkQueue};

/// The home page and the queue lists.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console", get(home))
        .route("/console/queue/at-risk", get(at_risk_page))
        .route("/console/queue/lapsing", get(lapsing_page))
}

/// The words of a reconciliation kind (the same as the reconciliation
/// page's headings).
fn kind_text(l: Lang, kind: &str) -> &'static str {
    super::reconcile::kind_label(l, kind)
}

/// One line of the queue: a count, its words and where it leads.
fn line(testid: &'static str, count: i64, text: String, href: String) -> impl IntoView + use<> {
    let class = if count > 0 {
        "queue-line"
    } else {
        "queue-line queue-zero"
    };
    view! {
        <li class=class data-testid=testid data-count=count.to_string()>
            <a href=href><span class="queue-count">{count.to_string()}</span>" "{text}</a>
        </li>
    }
}

/// The signed-in staff member's last actions, each with what it was
/// about, and the link to all of them (`me` is their audit name).
#[component]
fn MyActions(rows: Vec<AuditEventView>, #[prop(into)] me: String) -> impl IntoView {
    let l = lang();
    let all = paths::audit_of_actor(&me);
    if rows.is_empty() {
        return view! {
            <p class="note" data-testid="my-actions-empty">{l.t("queue-no-actions-yet")}</p>
        }
        .into_any();
    }
    let items = rows
        .into_iter()
        .map(|e| {
            let target = match EventTarget::of(
                l,
                &e.subject,
                e.coupon_id.as_ref(),
                e.coupon_code.as_deref(),
                e.order_no.as_ref(),
            ) {
                Some(EventTarget::Coupon { href, code }) => {
                    view! { <a href=href class="mono">{code}</a> }.into_any()
                }
                Some(EventTarget::Order { href, order_no }) => {
                    view! { <a href=href>{order_no}</a> }.into_any()
                }
                None => view! { "—" }.into_any(),
            };
            let action = action_text(l, &e.action);
            view! {
                <li><Time at=e.at/>" · "{action}" · "{target}</li>
            }
        })
        .collect_view();
    view! {
        <ul class="queue-actions" data-testid="my-actions">{items}</ul>
        <p><a href=all>{l.t("queue-all-my-actions")}</a></p>
    }
    .into_any()
}

/// The work queue: the open reconciliation findings by kind, the at-risk
/// orders, the lapsing locks, the coupons ending today, today's
/// compensation (when capped), the signed-in staff member's last actions
/// (`me` is their audit name) and where to start.
#[component]
fn QueueBody(#[prop(into)] me: String, queue: WorkQueue) -> impl IntoView {
    let (l, q) = (lang(), queue);
    let findings = match &q.run {
        None => view! {
            <li class="queue-line" data-testid="queue-no-run">
                <a href="/console/reconciliation">{l.t("queue-no-reconciliation-yet")}</a>
            </li>
        }
        .into_any(),
        Some((_, at)) if q.open_findings.is_empty() => {
            let text = crate::tr!(
                l,
                "queue-findings-none",
                at = crate::i18n::zone::local_minutes(*at)
            );
            view! {
                <li class="queue-line queue-zero" data-testid="queue-findings-none">
                    <a href="/console/reconciliation">{text}</a>
                </li>
            }
            .into_any()
        }
        Some((_, at)) => {
            let when = crate::i18n::zone::local_minutes(*at);
            q.open_findings
                .iter()
                .map(|(kind, n)| {
                    let text = crate::tr!(
                        l,
                        "queue-findings",
                        kind = kind_text(l, kind.as_str()),
                        at = when.clone()
                    );
                    let href = format!("/console/reconciliation#kind-{}", kind.as_str());
                    line("queue-findings", *n, text, href)
                })
                .collect_view()
                .into_any()
        }
    };
    let expiring_href = format!(
        "/console/coupons?status=available&expiring_before={}",
        enc(&crate::domain::time::rfc3339(q.day_ends_at))
    );
    let day = q.business_day;
    let compensation = q.compensation_today.map(|(given, cap)| {
        let href = format!(
            "{}&action=compensation&from={}",
            paths::audit_of_actor(&me),
            day.format("%Y-%m-%d")
        );
        let text = crate::tr!(
            l,
            "queue-compensation-today",
            given = l.money(given),
            cap = l.money(cap),
            left = l.money((cap - given).max(0))
        );
        view! {
            <li class="queue-line" data-testid="queue-compensation" data-given=given.to_string()>
                <a href=href>{text}</a>
            </li>
        }
    });
    let skew = q.clock_skew_ms.map(|ms| {
        let text = crate::tr!(
            l,
            "clock-skew-warning",
            seconds = format!("{:.1}", ms as f64 / 1000.0)
        );
        view! { <p class="field-error" role="alert" data-testid="clock-skew">{text}</p> }
    });
    let budgets = q
        .budgets_running_out
        .iter()
        .map(|(id, name, budget, used)| {
            let text = crate::tr!(
                l,
                "queue-budget-running-out",
                name = name.clone(),
                used = l.money(*used),
                budget = l.money(*budget),
                percent = crate::web::templates::budget_percent(*budget, *used)
            );
            let href = format!("/console/templates/{}", enc(id.as_str()));
            view! {
                <li class="queue-line" data-testid="queue-budget">
                    <a href=href>{text}</a>
                </li>
            }
        })
        .collect_view();
    view! {
        {skew}
        <section aria-labelledby="queue-heading">
            <h2 id="queue-heading">{l.t("queue-heading")}</h2>
            <ul class="queue" data-testid="queue">
                {line(
                    "queue-support-requests",
                    q.support_requests,
                    l.t("queue-support-requests").to_string(),
                    paths::SUPPORT_REQUESTS.to_string(),
                )}
                {findings}
                {line(
                    "queue-at-risk",
                    q.at_risk_orders,
                    l.t("queue-at-risk").to_string(),
                    "/console/queue/at-risk".to_string(),
                )}
                {line(
                    "queue-lapsing",
                    q.lapsing_locks,
                    l.t("queue-lapsing").to_string(),
                    "/console/queue/lapsing".to_string(),
                )}
                {line(
                    "queue-expiring-today",
                    q.expiring_today,
                    l.t("queue-expiring-today").to_string(),
                    expiring_href,
                )}
                {compensation}
                {budgets}
            </ul>
        </section>
        <section aria-labelledby="mine-heading">
            <h2 id="mine-heading">{l.t("queue-my-last-actions")}</h2>
            <MyActions rows=q.my_actions me=me/>
        </section>
        <section aria-labelledby="start-heading">
            <h2 id="start-heading">{l.t("start-here")}</h2>
            <p>{l.t("type-a-coupon-code-coupon-id")}</p>
            <ul class="links">
                <li><a href="/console/coupons">{l.t("filter-coupons-with-csv-export")}</a></li>
            </ul>
        </section>
    }
}

async fn home(State(s): State<AppState>, staff: Staff) -> Response {
    let l = staff.lang;
    let me = staff.actor();
    let capped = !staff.may(Permission::UncappedCompensation);
    match s.service.work_queue(&me, capped).await {
        Ok(q) => staff.page(l.t("support-console"), move || {
            view! { <QueueBody me=me queue=q/> }
        }),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

/// The presale orders whose locked coupon ends before their final
/// payment opens; a note when there are none.
#[component]
fn AtRiskTable(rows: Vec<AtRiskOrder>) -> impl IntoView {
    let l = lang();
    if rows.is_empty() {
        return view! { <p class="note" data-testid="queue-empty">{l.t("queue-at-risk-empty")}</p> }
            .into_any();
    }
    let body = rows
        .into_iter()
        .map(|r| {
            let order = paths::order_health(&r.order_no);
            let user = paths::user(&r.user_id);
            view! {
                <tr data-testid="queue-row">
                    <td><a href=order>{r.order_no.clone()}</a></td>
                    <td><a href=user>{r.user_id.clone()}</a></td>
                    <td>{r.campaign_name.clone()}</td>
                    <td>{super::layout::policy_label(l, r.policy)}</td>
                    <td class="mono">{r.code.clone()}</td>
                    <td><Time at=r.coupon_ends_at.clone()/></td>
                    <td><Time at=r.window_starts_at.clone()/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap"><table data-testid="queue-table">
            <thead><tr>
                <th scope="col">{l.t("order-2")}</th>
                <th scope="col">{l.t("user")}</th>
                <th scope="col">{l.t("campaign")}</th>
                <th scope="col">{l.t("policy")}</th>
                <th scope="col">{l.t("code")}</th>
                <th scope="col">{l.t("queue-coupon-ends")}</th>
                <th scope="col">{l.t("queue-window-opens")}</th>
            </tr></thead>
            <tbody>{body}</tbody>
        </table></div>
    }
    .into_any()
}

/// A queue list page: its title, what it lists, and the table `table`
/// builds (inside the page, where components find their context).
fn list_page<V: IntoView + 'static>(
    staff: &Staff,
    title_key: &'static str,
    explained_key: &'static str,
    table: impl FnOnce() -> V + Send + 'static,
) -> Response {
    let l = staff.lang;
    staff.page(l.t(title_key), move || {
        view! {
            <section aria-labelledby="list-heading">
                <h2 id="list-heading">{l.t(title_key)}</h2>
                <p class="note">{l.t(explained_key)}</p>
                {table()}
            </section>
        }
    })
}

async fn at_risk_page(State(s): State<AppState>, staff: Staff) -> Response {
    let l = staff.lang;
    match s.service.at_risk_orders().await {
        Ok(rows) => list_page(
            &staff,
            "queue-at-risk-title",
            "queue-at-risk-explained",
            move || view! { <AtRiskTable rows=rows/> },
        ),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

/// The checkout locks lapsing within the hour; a note when there are
/// none.
#[component]
fn LapsingTable(rows: Vec<LapsingOrder>) -> impl IntoView {
    let l = lang();
    if rows.is_empty() {
        return view! { <p class="note" data-testid="queue-empty">{l.t("queue-lapsing-empty")}</p> }
            .into_any();
    }
    let body = rows
        .into_iter()
        .map(|r| {
            let order = paths::order(&r.order_no);
            let user = paths::user(&r.user_id);
            view! {
                <tr data-testid="queue-row">
                    <td><a href=order>{r.order_no.clone()}</a></td>
                    <td><a href=user>{r.user_id.clone()}</a></td>
                    <td class="money">{r.total_cents.shown()}</td>
                    <td><Time at=r.lapses_at.clone()/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap"><table data-testid="queue-table">
            <thead><tr>
                <th scope="col">{l.t("order-2")}</th>
                <th scope="col">{l.t("user")}</th>
                <th scope="col">{l.t("total-2")}</th>
                <th scope="col">{l.t("checkout-lock-lapses")}</th>
            </tr></thead>
            <tbody>{body}</tbody>
        </table></div>
    }
    .into_any()
}

async fn lapsing_page(State(s): State<AppState>, staff: Staff) -> Response {
    let l = staff.lang;
    match s.service.lapsing_orders().await {
        Ok(rows) => list_page(
            &staff,
            "queue-lapsing-title",
            "queue-lapsing-explained",
            move || view! { <LapsingTable rows=rows/> },
        ),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}
