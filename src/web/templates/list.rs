//! The template list: filtered by standing, kind and a part of the name,
//! a keyset page at a time.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use leptos::prelude::*;
use serde::Deserialize;

use super::words::{
    LIST, NEW, PAGE_SIZE, StandingBadge, counts_text, standing_label, stock_text, view_words,
};
use crate::domain::discount::DiscountKind;
use crate::domain::permissions::Permission;
use crate::domain::template::ClaimStanding;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::views::TemplateView;
use crate::web::auth::{Staff, WebError};
use crate::web::components::Pager;
use crate::web::context::{lang, viewer_may};
use crate::web::layout::{enc, words_text};
use crate::web::paths;

#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    standing: Option<String>,
    kind: Option<String>,
    q: Option<String>,
    after: Option<String>,
}

impl ListQuery {
    fn standing(&self) -> Option<ClaimStanding> {
        self.standing
            .as_deref()
            .filter(|s| !s.is_empty())
            .and_then(ClaimStanding::parse)
    }

    fn kind(&self) -> Option<DiscountKind> {
        self.kind
            .as_deref()
            .filter(|s| !s.is_empty())
            .and_then(DiscountKind::parse)
    }

    /// The filters as a query string (no cursor), for the next page.
    fn filter_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("standing", &self.standing),
            ("kind", &self.kind),
            ("q", &self.q),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                q.append_pair(k, v);
            }
        }
        q.finish()
    }
}

pub(super) async fn list(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<ListQuery>,
) -> Response {
    let l = staff.lang;
    let unknown =
        |raw: &Option<String>, known: bool| raw.as_deref().is_some_and(|v| !v.is_empty()) && !known;
    if unknown(&q.standing, q.standing().is_some()) || unknown(&q.kind, q.kind().is_some()) {
        return WebError::bad_request(l.t("template-unknown-filter").to_string()).into_response();
    }
    let page = match s
        .service
        .list_templates(
            q.standing(),
            q.kind(),
            q.q.clone(),
            q.after.clone().filter(|a| !a.is_empty()),
            PAGE_SIZE,
        )
        .await
    {
        Ok(p) => p,
        Err(ServiceError::Invalid(f)) if f.field == "cursor" || f.field == "q" => {
            return WebError::bad_request(l.t("template-unknown-filter").to_string())
                .into_response();
        }
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let fq = q.filter_query();
    let next = page.next.map(|n| format!("{LIST}?{fq}&after={}", enc(&n)));
    let first = q
        .after
        .as_deref()
        .is_some_and(|a| !a.is_empty())
        .then(|| format!("{LIST}?{fq}"));
    let (standing, kind, typed) = (q.standing(), q.kind(), q.q.unwrap_or_default());
    let templates = page.templates;
    staff.page(l.t("templates-title"), move || {
        let create = viewer_may(Permission::ManageTemplates).then(|| {
            view! { <p class="actions"><a class="button primary" href=NEW data-testid="new-template">{l.t("template-new")}</a></p> }
        });
        view! {
            {create}
            <TemplateFilters standing=standing kind=kind typed=typed/>
            <section aria-labelledby="results">
                <h2 id="results" class="visually-hidden">{l.t("templates-title")}</h2>
                <TemplateTable templates=templates/>
                <Pager first=first next=next/>
            </section>
        }
    })
}

/// The list's filters: standing, kind and a part of the name, as chosen.
#[component]
fn TemplateFilters(
    standing: Option<ClaimStanding>,
    kind: Option<DiscountKind>,
    #[prop(into)] typed: String,
) -> impl IntoView {
    let l = lang();
    let standing_options = ClaimStanding::ALL
        .into_iter()
        .map(|st| {
            let selected = standing == Some(st);
            view! { <option value=st.as_str() selected=selected>{standing_label(l, st)}</option> }
        })
        .collect_view();
    let kind_options = DiscountKind::ALL
        .into_iter()
        .map(|k| {
            let selected = kind == Some(k);
            view! { <option value=k.as_str() selected=selected>{l.t(k.label_key())}</option> }
        })
        .collect_view();
    view! {
        <section aria-labelledby="filters">
            <h2 id="filters" class="visually-hidden">{l.t("filters")}</h2>
            <form method="get" action=LIST class="filters" data-testid="template-filters">
                <label>{l.t("template-standing")}
                    <select name="standing">
                        <option value="">{l.t("any")}</option>
                        {standing_options}
                    </select>
                </label>
                <label>{l.t("template-kind")}
                    <select name="kind">
                        <option value="">{l.t("any")}</option>
                        {kind_options}
                    </select>
                </label>
                <label>{l.t("template-name-contains")}
                    <input type="search" name="q" value=typed maxlength="200"/>
                </label>
                <button type="submit" class="primary">{l.t("filter")}</button>
            </form>
        </section>
    }
}

/// One row a template: its name (linking to its page), its rule in
/// words, its stock, its coupons by status and its standing; a note when
/// none match.
#[component]
fn TemplateTable(templates: Vec<TemplateView>) -> impl IntoView {
    let l = lang();
    if templates.is_empty() {
        return view! { <p class="note" data-testid="no-templates">{l.t("template-none-match")}</p> }
            .into_any();
    }
    let rows = templates
        .into_iter()
        .map(|t| {
            let href = paths::template(&t.id);
            let words = words_text(l, &view_words(&t));
            let stock = stock_text(l, &t);
            let counts = counts_text(l, &t);
            view! {
                <tr data-testid="template-row">
                    <td data-label=l.t("template-name")><a href=href data-testid="template-name">{t.name.clone()}</a></td>
                    <td data-label=l.t("template-rule")>{words}</td>
                    <td class="nowrap" data-label=l.t("template-stock-heading")>{stock}</td>
                    <td data-label=l.t("template-coupons-by-status")>{counts}</td>
                    <td class="nowrap" data-label=l.t("template-standing")><StandingBadge standing=t.status/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="template-table">
                <thead><tr>
                    <th scope="col">{l.t("template-name")}</th>
                    <th scope="col">{l.t("template-rule")}</th>
                    <th scope="col">{l.t("template-stock-heading")}</th>
                    <th scope="col">{l.t("template-coupons-by-status")}</th>
                    <th scope="col">{l.t("template-standing")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}
