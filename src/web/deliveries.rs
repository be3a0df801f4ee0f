//! Webhook deliveries: every staff member can list them (filter by status,
//! type, user) and open one with its attempts; operators can redeliver a
//! dead or delivered one (confirmation page, CSRF).
//!
//! What an attempt did is shown to operators and admins as recorded (they
//! configure subscribers and need the reason); `support` sees only its
//! class ([`crate::domain::delivery::classify`]: timeout, refused, TLS,
//! DNS, the HTTP status, other), never the error text, which names
//! addresses and ports.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::components::{ConfirmForm, Time};
use super::context::{lang, viewer_may};
use super::i18n::Lang;
use super::paths;
use super::posted::OrPage;
use crate::domain::delivery::classify;
use crate::domain::filters::{DeliveryFilter, DeliveryFilterInput, DeliveryStatus};
use crate::domain::permissions::Permission;
use crate::http::AppState;
use crate::service::webhooks::{AttemptView, DeliveryView, EVENT_TYPES};

/// Deliveries listed per page.
const SHOWN: i64 = 200;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/deliveries", get(list))
        .route("/console/deliveries/{id}", get(detail))
        .route(
            "/console/deliveries/{id}/redeliver",
            get(confirm_page).post(redeliver),
        )
}

#[derive(Debug, Deserialize, Default)]
struct Filter {
    status: Option<String>,
    #[serde(rename = "type")]
    event_type: Option<String>,
    user: Option<String>,
}

fn some(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn status_label(l: Lang, s: &str) -> &'static str {
    match s {
        "pending" => l.t("pending"),
        "delivered" => l.t("delivered"),
        "dead" => l.t("dead-letter"),
        _ => l.t("term-unknown"),
    }
}

/// A delivery's status (`pending`, `delivered`, `dead`) as a badge.
#[component]
fn DeliveryBadge(#[prop(into)] status: String) -> impl IntoView {
    let class = match status.as_str() {
        "delivered" => "badge badge-ok",
        "dead" => "badge badge-problem",
        _ => "badge badge-warning",
    };
    let text = status_label(lang(), &status);
    view! { <span class=class data-status=status>{text}</span> }
}

fn operator(staff: &Staff) -> bool {
    staff.may(Permission::ManageWebhooks)
}

async fn list(
    State(s): State<AppState>,
    staff: Staff,
    Query(f): Query<Filter>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    // The user as typed, shown again in the form.
    let user = some(f.user.clone());
    let filter = DeliveryFilter::parse(
        DeliveryFilterInput {
            status: f.status,
            event_type: f.event_type,
            user_id: f.user,
        },
        &EVENT_TYPES,
    );
    let (status, event_type) = (filter.status, filter.event_type);
    let rows = s.service.deliveries(filter, SHOWN).await.or_page(l)?;
    let status_options = DeliveryStatus::ALL
        .into_iter()
        .map(|d| {
            let (v, selected) = (d.as_str(), status == Some(d));
            view! { <option value=v selected=selected>{status_label(l, v)}</option> }
        })
        .collect_view();
    let type_options = EVENT_TYPES
        .into_iter()
        .map(|v| {
            let selected = event_type == Some(v);
            view! { <option value=v selected=selected>{super::webhooks::event_type_label(l, v)}</option> }
        })
        .collect_view();
    Ok(staff.page(l.t("deliveries"), move || {
        let table = if rows.is_empty() {
            view! { <p class="note" data-testid="no-deliveries">{l.t("no-deliveries-match")}</p> }
                .into_any()
        } else {
            view! { <DeliveryTable rows=rows/> }.into_any()
        };
        view! {
            <section aria-labelledby="deliveries-heading">
                <h2 id="deliveries-heading">{l.t("webhook-deliveries")}</h2>
                <form method="get" action="/console/deliveries" class="filters">
                    <label>{l.t("status")}
                        <select id="status" name="status">
                            <option value="">{l.t("all")}</option>
                            {status_options}
                        </select></label>
                    <label>{l.t("type")}
                        <select id="type" name="type">
                            <option value="">{l.t("all")}</option>
                            {type_options}
                        </select></label>
                    <label>{l.t("user")}
                        <input id="user" name="user" type="text" value=user.unwrap_or_default() maxlength="100"/></label>
                    <button type="submit">{l.t("filter")}</button>
                </form>
                <p class="note">{l.t("newest-200-at-most-every-message")}</p>
                {table}
            </section>
        }
    }))
}

/// An outcome as the signed-in staff member may see it: the recorded text
/// for operators, its class for support. With its class as `data-class`.
#[component]
fn Outcome(status_code: Option<i64>, error: Option<String>) -> impl IntoView {
    let l = lang();
    let raw = viewer_may(Permission::ManageWebhooks);
    let class = classify(status_code, error.as_deref());
    let text = match (raw, status_code, error) {
        (true, Some(code), _) => format!("HTTP {code}"),
        (true, None, Some(e)) => e,
        _ => match class.status_code() {
            Some(code) => crate::tr!(l, "attempt-class-status", code = u32::from(code)),
            None => l.t(class.message_key()).to_string(),
        },
    };
    view! { <span data-class=class.code()>{text}</span> }
}

/// A delivery's attempts: when, what came of each, how long it took and
/// who made it.
#[component]
fn Attempts(history: Vec<AttemptView>) -> impl IntoView {
    let l = lang();
    let rows = history
        .into_iter()
        .map(|a| {
            view! {
                <tr>
                    <td class="nowrap"><Time at=a.at/></td>
                    <td><Outcome status_code=a.status_code error=a.error/></td>
                    <td class="money">{format!("{} ms", a.duration_ms)}</td>
                    <td>{a.actor}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table data-testid="attempts">
            <thead><tr>
                <th scope="col">{l.t("when")}</th>
                <th scope="col">{l.t("result")}</th>
                <th scope="col">{l.t("took")}</th>
                <th scope="col">{l.t("by")}</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// The listed deliveries, each with its attempts folded away.
#[component]
fn DeliveryTable(rows: Vec<DeliveryView>) -> impl IntoView {
    let l = lang();
    let body = rows
        .into_iter()
        .map(|d| {
            let href = paths::delivery(d.id);
            let user = d.user_id.clone().map(|u| {
                let href = paths::deliveries_of_user(&u);
                view! { <a href=href>{u}</a> }
            });
            let n = d.history.len();
            let attempts = view! {
                <details>
                    <summary>{crate::tr!(l, "attempts-4", attempts = &d.attempts)}</summary>
                    {(n > 0).then(|| view! { <Attempts history=d.history.clone()/> })}
                </details>
            };
            view! {
                <tr data-delivery=d.id>
                    <td><a href=href class="mono">{d.message_id.clone()}</a></td>
                    <td>{super::webhooks::event_type_label(l, &d.event_type)}</td>
                    <td>{user}</td>
                    <td>{d.subscriber_url.clone().unwrap_or_else(|| d.subscriber_id.to_string())}</td>
                    <td><DeliveryBadge status=d.status.clone()/></td>
                    <td>{attempts}</td>
                    <td class="nowrap"><Time at=d.created_at.clone()/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap"><table data-testid="deliveries">
            <thead><tr>
                <th scope="col">{l.t("message-id")}</th>
                <th scope="col">{l.t("type")}</th>
                <th scope="col">{l.t("user")}</th>
                <th scope="col">{l.t("subscriber")}</th>
                <th scope="col">{l.t("status")}</th>
                <th scope="col">{l.t("attempts")}</th>
                <th scope="col">{l.t("created-2")}</th>
            </tr></thead>
            <tbody>{body}</tbody>
        </table></div>
    }
}

async fn detail(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<i64>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let d = s.service.delivery(id).await.or_page(l)?;
    let body = s.service.delivery_body(id).await.unwrap_or_default();
    Ok(staff.page(l.t("delivery"), move || {
        let may_redeliver = viewer_may(Permission::ManageWebhooks) && d.status != "pending";
        let redeliver = may_redeliver.then(|| {
            let href = paths::delivery_redeliver(id);
            view! { <a class="button primary" href=href data-testid="redeliver">{l.t("redeliver")}</a> }
        });
        let next = (d.status == "pending").then(|| {
            view! { <dt>{l.t("next-attempt")}</dt><dd><Time at=d.next_attempt_at.clone()/></dd> }
        });
        view! {
            <section aria-labelledby="delivery-heading">
                <h2 id="delivery-heading" class="mono">{d.message_id.clone()}</h2>
                <dl class="facts">
                    <dt>{l.t("type")}</dt><dd>{super::webhooks::event_type_label(l, &d.event_type)}</dd>
                    <dt>{l.t("user")}</dt><dd>{d.user_id.as_deref().unwrap_or_default().to_string()}</dd>
                    <dt>{l.t("subscriber")}</dt>
                    <dd>{d.subscriber_url.clone().unwrap_or_default()}" ("{d.subscriber_id.clone()}")"</dd>
                    <dt>{l.t("status")}</dt><dd><DeliveryBadge status=d.status.clone()/></dd>
                    <dt>{l.t("attempts-2")}</dt><dd>{d.attempts}</dd>
                    <dt>{l.t("last-result")}</dt>
                    <dd data-testid="last-result"><Outcome status_code=d.last_status_code error=d.last_error.clone()/></dd>
                    {next}
                </dl>
                <p class="actions">{redeliver}<a class="button" href="/console/deliveries">{l.t("back-to-the-list")}</a></p>
                <h3>{l.t("attempts-3")}</h3>
                <Attempts history=d.history.clone()/>
                <h3>{l.t("body")}</h3>
                <pre class="mono" data-testid="body">{body}</pre>
            </section>
        }
    }))
}

fn operator_only(staff: &Staff) -> Option<Response> {
    (!operator(staff)).then(|| {
        WebError::forbidden(staff.lang.t("redelivery-needs-the-operator-role")).into_response()
    })
}

async fn confirm_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<i64>,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    let l = staff.lang;
    let d = s.service.delivery(id).await.or_page(l)?;
    let action = paths::delivery_redeliver(id);
    let back = paths::delivery(id);
    Ok(staff.page(
        l.t("confirm-redelivery"),
        move || view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{l.t("redeliver")}" "<span class="mono">{d.message_id.clone()}</span></h2>
                <p>{crate::tr!(l, "the-message-is-sent-to-again", event_type = super::webhooks::event_type_label(l, &d.event_type), subscriber_url = d.subscriber_url.clone().unwrap_or_default())}</p>
                <ConfirmForm action=action button=l.t("redeliver-2") cancel=back/>
            </section>
        },
    ))
}

async fn redeliver(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<i64>,
    body: Bytes,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    staff.posted::<std::collections::HashMap<String, String>>(&body)?;
    let l = staff.lang;
    let to = paths::delivery(id);
    Ok(match s.service.redeliver(id, &staff.actor()).await {
        Ok(()) => staff.done(&to, l.t("redelivery-scheduled").to_string()),
        Err(crate::service::ServiceError::Invalid(f)) => staff.refused(&to, f.message),
        Err(e) => WebError::from_service(l, e).into_response(),
    })
}
