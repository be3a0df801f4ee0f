//! The events table of a coupon, an order or a user: when, what changed,
//! which action, who, why.

use leptos::prelude::*;

use crate::service::views::EventView;
use crate::web::context::lang;
use crate::web::layout::{EventTarget, action_text, actor_text, change_text, reason_text};

use super::Time;

/// One row per event, oldest first as given. With `show_subject`, a
/// column links each event to the coupon (by code) or order it is about,
/// for timelines that mix them.
#[component]
pub fn Timeline(events: Vec<EventView>, #[prop(optional)] show_subject: bool) -> impl IntoView {
    let l = lang();
    if events.is_empty() {
        return view! { <p class="note">{l.t("no-events-yet")}</p> }.into_any();
    }
    let rows = events
        .into_iter()
        .map(|e| {
            let subject = show_subject.then(|| {
                match EventTarget::of(
                    l,
                    &e.subject,
                    e.coupon_id.as_ref(),
                    e.coupon_code.as_deref(),
                    e.order_no.as_ref(),
                ) {
                    Some(EventTarget::Coupon { href, code }) => {
                        let label = crate::tr!(l, "coupon-6", id = code);
                        view! { <td data-label=l.t("subject")><a href=href class="mono">{label}</a></td> }.into_any()
                    }
                    Some(EventTarget::Order { href, order_no }) => {
                        let label = crate::tr!(l, "order-5", no = &order_no);
                        view! { <td data-label=l.t("subject")><a href=href>{label}</a></td> }.into_any()
                    }
                    None => view! { <td data-label=l.t("subject")>"—"</td> }.into_any(),
                }
            });
            let change = change_text(l, &e.subject, e.from.as_deref(), &e.to);
            let reason = e
                .reason
                .as_deref()
                .map(|r| reason_text(l, r))
                .unwrap_or_default();
            let action = action_text(l, &e.action);
            let actor = actor_text(l, &e.actor);
            view! {
                <tr data-action=e.action.clone()>
                    <td class="nowrap" data-label=l.t("when")><Time at=e.at/></td>
                    {subject}
                    <td data-label=l.t("change")>{change}</td>
                    <td data-label=l.t("action")>{action}</td>
                    <td data-label=l.t("actor")>{actor}</td>
                    <td data-label=l.t("reason")>{reason}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="timeline stack" data-testid="timeline">
                <thead><tr>
                    <th scope="col">{l.t("when")}</th>
                    {show_subject.then(|| view! { <th scope="col">{l.t("subject")}</th> })}
                    <th scope="col">{l.t("change")}</th>
                    <th scope="col">{l.t("action")}</th>
                    <th scope="col">{l.t("actor")}</th>
                    <th scope="col">{l.t("reason")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}
