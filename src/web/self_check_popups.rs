//! The customer's pending reminder pop-ups at the top of the self-check
//! page (reminders that went by `popup`): each in the customer's words
//! with when its first coupon ends, and one form, "got it", that marks
//! them seen together with the messages (`POST /self-check/messages/read`,
//! the page's token in a hidden field; no JavaScript).

use leptos::prelude::*;

use super::context::lang;
use crate::service::reminder_popups::ReminderPopupView;

/// The pending pop-ups, prominent; nothing when there are none.
#[component]
pub fn PendingPopups(token: String, popups: Vec<ReminderPopupView>) -> impl IntoView {
    let l = lang();
    if popups.is_empty() {
        return ().into_any();
    }
    let items = popups
        .into_iter()
        .map(|p| {
            let text = l.msg(&p.msg);
            let first_end = crate::domain::time::parse_rfc3339(&p.earliest_ends_at).ok().map(|t| {
                let datetime = t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                view! {
                    <p class="sc-note">{l.t("first-coupon-ends")}" "<time datetime=datetime>{crate::i18n::zone::local_minutes(t)}</time></p>
                }
            });
            view! {
                <li class="sc-item sc-msg sc-unread sc-popup" data-testid="sc-popup" data-popup=p.id.to_string()>
                    <p class="sc-sentence"><strong>{text}</strong></p>
                    {first_end}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="sc-card sc-popups" id="popups" aria-labelledby="sc-popups-heading" data-testid="sc-popups">
            <h2 id="sc-popups-heading">{l.t("coupons-about-to-expire")}</h2>
            <ul class="sc-list">{items}</ul>
            <form method="post" action="/self-check/messages/read" class="sc-mark-read">
                <input type="hidden" name="t" value=token/>
                <button type="submit" class="button primary sc-button" data-testid="sc-popups-seen">{l.t("got-it-mark-all-as-read")}</button>
            </form>
        </section>
    }
    .into_any()
}
