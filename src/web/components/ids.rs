//! The ids behind a page's names, folded away: support can copy one for
//! a developer, nobody has to read one.

use leptos::prelude::*;

use crate::web::context::lang;

/// Each id under the catalog key of its name, in a closed `<details>`.
#[component]
pub fn IdsDetails(ids: Vec<(&'static str, String)>) -> impl IntoView {
    let l = lang();
    let rows = ids
        .into_iter()
        .map(|(key, id)| view! { <dt>{l.t(key)}</dt><dd class="mono">{id}</dd> })
        .collect_view();
    view! {
        <details class="ids" data-testid="ids">
            <summary>{l.t("ids-details")}</summary>
            <dl class="facts">{rows}</dl>
        </details>
    }
}
