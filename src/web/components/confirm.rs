//! The form that confirms an action before it is taken: the signed-in
//! staff member's form token, whatever the action asks for, an optional
//! reason, the button and a way back.

use leptos::prelude::*;

use crate::domain::reason::MAX_REASON_CHARS;
use crate::web::context::{csrf_token, lang};

/// Posts to `action`; `cancel` is where "cancel" (or `cancel_label`)
/// leads (the page the action started from). A `danger` action (one that
/// cannot be undone) has a red button. With `reason_label`, a required reason (at most
/// [`MAX_REASON_CHARS`], the service's limit) is asked for under that label.
#[component]
pub fn ConfirmForm(
    #[prop(into)] action: String,
    button: &'static str,
    #[prop(into)] cancel: String,
    #[prop(optional)] cancel_label: Option<&'static str>,
    #[prop(optional)] danger: bool,
    #[prop(optional)] reason_label: Option<&'static str>,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    let l = lang();
    let button_class = if danger { "danger primary" } else { "primary" };
    let reason = reason_label.map(|label| {
        view! {
            <label for="reason">{label}</label>
            <textarea id="reason" name="reason" required=true maxlength=MAX_REASON_CHARS.to_string()></textarea>
        }
    });
    view! {
        <form method="post" action=action class="stack">
            <input type="hidden" name="csrf" value=csrf_token()/>
            {children.map(|c| c())}
            {reason}
            <p class="actions">
                <button type="submit" class=button_class data-testid="confirm">{button}</button>
                <a class="button" href=cancel>{cancel_label.unwrap_or_else(|| l.t("cancel"))}</a>
            </p>
        </form>
    }
}
