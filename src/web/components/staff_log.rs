//! A thing's staff log as a table: when, who, what, (before → after,) why.
//! Templates, code batches and campaigns each show theirs this way.

use leptos::prelude::*;

use crate::web::context::lang;

use super::Time;

/// One row, in words already (the page knows its own actions).
#[derive(Debug, Clone)]
pub struct StaffLogRow {
    /// RFC 3339.
    pub at: String,
    /// Who, as people read it ([`crate::web::layout::actor_text`]).
    pub actor: String,
    /// The action's code, for `data-action`; `None` writes none.
    pub action_code: Option<String>,
    /// What was done, in words.
    pub what: String,
    /// Before → after, when the table has that column.
    pub change: String,
    pub reason: String,
}

/// The log of `rows`, newest as given. `testid` names the table and
/// `row_testid` each row; `what_key` is the catalog key of the "what"
/// column and `change_key`, when given, adds the before → after column.
/// With `cell_testids` the change and reason cells carry
/// `history-change` / `history-reason`.
#[component]
pub fn StaffLog(
    rows: Vec<StaffLogRow>,
    testid: &'static str,
    row_testid: &'static str,
    what_key: &'static str,
    #[prop(optional)] change_key: Option<&'static str>,
    #[prop(optional)] cell_testids: bool,
) -> impl IntoView {
    let l = lang();
    let (change_id, reason_id) = if cell_testids {
        (Some("history-change"), Some("history-reason"))
    } else {
        (None, None)
    };
    let rows = rows
        .into_iter()
        .map(|r| {
            let change = change_key.map(|key| {
                view! { <td data-label=l.t(key) data-testid=change_id>{r.change}</td> }
            });
            view! {
                <tr data-testid=row_testid data-action=r.action_code>
                    <td class="nowrap" data-label=l.t("when")><Time at=r.at/></td>
                    <td data-label=l.t("actor")>{r.actor}</td>
                    <td data-label=l.t(what_key)>{r.what}</td>
                    {change}
                    <td data-label=l.t("reason") data-testid=reason_id>{r.reason}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid=testid>
                <thead><tr>
                    <th scope="col">{l.t("when")}</th>
                    <th scope="col">{l.t("actor")}</th>
                    <th scope="col">{l.t(what_key)}</th>
                    {change_key.map(|key| view! { <th scope="col">{l.t(key)}</th> })}
                    <th scope="col">{l.t("reason")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}
