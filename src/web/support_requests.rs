//! Support's work queue of customers' requests (客服请求), on
//! [`crate::service::support_requests`]:
//!
//! - `/console/support-requests`: the open requests, oldest first (the
//!   next to take is on top), with how many wait; `?status=handled`: the
//!   latest handled ones. Each shows the order (linked to its page with
//!   the health check run, so support reads the request beside today's
//!   check), the customer, when, the check's findings as the customer read
//!   them when they asked, and their note.
//! - `POST /console/support-requests/{id}/handled`: marks one handled and
//!   lands where it was pressed (the queue or the order page).
//! - [`OrderSupportRequests`]: the same list on an order's page.
//!
//! Every staff role may read and handle them.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::routing::{get, post};
use leptos::prelude::*;
use serde::Deserialize;

use super::actions::safe_back;
use super::auth::{Staff, WebError};
use super::components::{ResultBadge, Time};
use super::context::{csrf_token, lang};
use super::layout::actor_text;
use super::paths;
use super::posted::OrPage;
use crate::domain::support_request::RequestStatus;
use crate::domain::time::rfc3339;
use crate::http::AppState;
use crate::service::support_requests::{SupportRequestView, finding_message};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(paths::SUPPORT_REQUESTS, get(queue))
        .route("/console/support-requests/{id}/handled", post(mark_handled))
}

#[derive(Debug, Default, Deserialize)]
struct QueueQuery {
    status: Option<String>,
}

async fn queue(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<QueueQuery>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let status = match q.status.as_deref() {
        Some("handled") => RequestStatus::Handled,
        _ => RequestStatus::Open,
    };
    let (requests, total) = s.service.support_queue(status).await.or_page(l)?;
    let open = match status {
        RequestStatus::Open => total,
        RequestStatus::Handled => s.service.open_support_requests().await.or_page(l)?,
    };
    let back = staff.here.clone();
    Ok(staff.page(l.t("support-requests-title"), move || {
        let l = lang();
        let tabs = view! {
            <nav class="tabs" aria-label=l.t("support-requests-title")>
                <a href=paths::SUPPORT_REQUESTS class="tab" data-testid="support-requests-open"
                    aria-current=(status == RequestStatus::Open).then_some("page")>
                    {crate::tr!(l, "support-requests-open-n", n = open)}
                </a>
                <a href=format!("{}?status=handled", paths::SUPPORT_REQUESTS) class="tab" data-testid="support-requests-handled"
                    aria-current=(status == RequestStatus::Handled).then_some("page")>
                    {l.t("support-requests-handled-tab")}
                </a>
            </nav>
        };
        let empty = match status {
            RequestStatus::Open => l.t("support-requests-none-open"),
            RequestStatus::Handled => l.t("support-requests-none-handled"),
        };
        let more = (total > requests.len() as i64).then(|| {
            view! { <p class="note">{crate::tr!(l, "support-requests-more", shown = requests.len(), total = total)}</p> }
        });
        let list = if requests.is_empty() {
            view! { <p class="empty" data-testid="support-requests-empty">{empty}</p> }.into_any()
        } else {
            view! { <RequestList requests=requests back=back show_order=true/> }.into_any()
        };
        view! {
            <p class="note">{l.t("support-requests-intro")}</p>
            {tabs}
            {more}
            {list}
        }
    }))
}

/// Requests as cards: the order (when `show_order`), the customer, when,
/// the findings and the note, and for an open one the button that marks
/// it handled (landing on `back`).
#[component]
fn RequestList(requests: Vec<SupportRequestView>, back: String, show_order: bool) -> impl IntoView {
    let l = lang();
    let items = requests
        .into_iter()
        .map(|r| {
            let order = show_order.then(|| {
                let href = paths::order_health(&r.order_no);
                let no = r.order_no.as_str().to_string();
                view! { <p class="request-order"><a href=href data-testid="support-request-order">{crate::tr!(l, "order-8", order_no = no)}</a></p> }
            });
            let user_href = paths::user(&r.user_id);
            let user = r.user_id.as_str().to_string();
            let note = match &r.note {
                Some(n) => view! { <blockquote class="request-note" data-testid="support-request-note">{n.clone()}</blockquote> }.into_any(),
                None => view! { <p class="note">{l.t("support-request-no-note")}</p> }.into_any(),
            };
            let findings = if r.findings.is_empty() {
                view! { <p class="note">{l.t("support-request-no-findings")}</p> }.into_any()
            } else {
                let items = r
                    .findings
                    .iter()
                    .map(|f| {
                        let text = crate::domain::health::about_coupon(
                            l,
                            f.coupon.as_deref(),
                            &finding_message(f),
                        );
                        let result = f.result;
                        view! { <li data-testid="support-request-finding"><ResultBadge result=result/>" "{text}</li> }
                    })
                    .collect_view();
                view! { <ul class="plain request-findings">{items}</ul> }.into_any()
            };
            let state = match r.status {
                RequestStatus::Open => {
                    let action = paths::support_request_handled(&r.id);
                    view! {
                        <form method="post" action=action class="inline" data-testid="support-request-handle">
                            <input type="hidden" name="csrf" value=csrf_token()/>
                            <input type="hidden" name="back" value=back.clone()/>
                            <button type="submit" class="primary">{l.t("support-request-mark-handled")}</button>
                        </form>
                    }
                    .into_any()
                }
                RequestStatus::Handled => {
                    let by = r.handled_by.as_deref().map(|a| actor_text(l, a)).unwrap_or_default();
                    let at = r.handled_at.map(rfc3339).unwrap_or_default();
                    view! { <p class="note" data-testid="support-request-handled-by">{crate::tr!(l, "support-request-handled-by", by = by)}" · "<Time at=at/></p> }.into_any()
                }
            };
            let status = r.status.as_str();
            let created = rfc3339(r.created_at);
            view! {
                <li class="card request" data-testid="support-request" data-status=status>
                    {order}
                    <p class="request-head">
                        <ResultBadge result=r.overall/>" "
                        <span class="badge">{l.t(r.status.label_key())}</span>" "
                        {l.t("support-request-asked-at")}" "<Time at=created/>" · "
                        {l.t("support-request-customer")}" "<a href=user_href class="mono">{user}</a>
                    </p>
                    <h3 class="request-sub">{l.t("support-request-note")}</h3>
                    {note}
                    <h3 class="request-sub">{l.t("support-request-findings")}</h3>
                    {findings}
                    {state}
                </li>
            }
        })
        .collect_view();
    view! { <ul class="plain requests" data-testid="support-requests">{items}</ul> }
}

/// An order's support requests, newest first, on its page: nothing when
/// it has none.
#[component]
pub fn OrderSupportRequests(requests: Vec<SupportRequestView>, back: String) -> impl IntoView {
    let l = lang();
    (!requests.is_empty()).then(|| {
        view! {
            <section aria-labelledby="support-requests" id="support-requests-section">
                <h2 id="support-requests">{l.t("support-requests-of-order")}</h2>
                <RequestList requests=requests back=back show_order=false/>
            </section>
        }
    })
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HandledForm {
    back: Option<String>,
}

async fn mark_handled(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    let form: HandledForm = staff.posted(&body)?;
    let l = staff.lang;
    let to = safe_back(form.back.as_deref()).unwrap_or_else(|| paths::SUPPORT_REQUESTS.to_string());
    match s
        .service
        .mark_support_request_handled(&staff.ctx(), &id)
        .await
        .or_page(l)?
    {
        Some(r) => Ok(staff.done(
            &to,
            crate::tr!(l, "support-request-done", order_no = r.order_no.as_str()),
        )),
        None => Ok(staff.refused(&to, l.t("support-request-already-handled").to_string())),
    }
}
