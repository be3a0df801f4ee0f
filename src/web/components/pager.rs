//! The links under a list that is read a page at a time: back to the
//! first page, on to the next.

use leptos::prelude::*;

use crate::web::context::lang;

/// `first` is the list without its cursor (given only when not on the
/// first page already); `next` the list after the last row shown (given
/// only when there is more).
#[component]
pub fn Pager(first: Option<String>, next: Option<String>) -> impl IntoView {
    let l = lang();
    let first = first.map(|href| {
        view! { <a class="button" href=href data-testid="first-page">{l.t("first-page")}</a> }
    });
    let next = next.map(|href| {
        view! { <a class="button" href=href rel="next" data-testid="next-page">{l.t("next-page")}</a> }
    });
    view! { <p class="pager">{first}{next}</p> }
}
