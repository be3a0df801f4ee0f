//! `/console/categories`: what people call the shop's category codes.
//! Every staff member sees the names; operators and admins name a code or
//! rename it (the form doubles as the rename form when opened from a row,
//! `?edit=<code>`). A refused form comes back (422) as typed with the
//! message at the field; nothing is changed.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::context::{csrf_token, lang, viewer_may};
use super::i18n::Lang;
use super::layout::{FieldErrors, field_error};
use super::paths;
use super::posted::OrPage;
use crate::domain::category::CategoryName;
use crate::domain::permissions::Permission;
use crate::http::AppState;
use crate::service::ServiceError;

const LIST: &str = "/console/categories";

pub fn routes() -> Router<AppState> {
    Router::new().route(LIST, get(list).post(save))
}

#[derive(Deserialize, Default)]
struct ListQuery {
    edit: Option<String>,
}

/// The form as typed. `was_*` are the names the operator saw when
/// renaming (empty when naming a new code).
#[derive(Debug, Clone, Default)]
struct NameForm {
    csrf: Option<String>,
    code: String,
    name_zh: String,
    name_en: String,
    was_zh: String,
    was_en: String,
}

impl NameForm {
    fn parse(body: &Bytes) -> Self {
        let mut f = NameForm::default();
        for (k, v) in form_urlencoded::parse(body) {
            let v = v.into_owned();
            match k.as_ref() {
                "csrf" => f.csrf = Some(v),
                "code" => f.code = v,
                "name_zh" => f.name_zh = v,
                "name_en" => f.name_en = v,
                "was_zh" => f.was_zh = v,
                "was_en" => f.was_en = v,
                _ => {}
            }
        }
        f
    }

    fn renaming(&self) -> bool {
        !self.was_zh.is_empty() || !self.was_en.is_empty()
    }
}

async fn list(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<ListQuery>,
) -> Result<Response, WebError> {
    let names = s.service.category_names().await.or_page(staff.lang)?;
    let form = q
        .edit
        .as_deref()
        .and_then(|code| names.list().into_iter().find(|n| n.code() == code).cloned())
        .map(|n| NameForm {
            code: n.code().to_string(),
            name_zh: n.zh().to_string(),
            name_en: n.en().to_string(),
            was_zh: n.zh().to_string(),
            was_en: n.en().to_string(),
            csrf: None,
        })
        .unwrap_or_default();
    page(&s, &staff, form, FieldErrors::default()).await
}

async fn page(
    s: &AppState,
    staff: &Staff,
    form: NameForm,
    errors: FieldErrors,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let names = s.service.category_names().await.or_page(l)?;
    let names: Vec<CategoryName> = names.list().into_iter().cloned().collect();
    let refused = !errors.is_empty();
    let mut r = staff.page(l.t("category-title"), move || {
        view! {
            <p class="note">{l.t("category-intro")}</p>
            <section aria-labelledby="category-list">
                <h2 id="category-list">{l.t("category-list")}</h2>
                <CategoryTable names=names/>
            </section>
            {viewer_may(Permission::NameCategories)
                .then(|| view! { <NameFormSection form=form errors=errors/> })}
        }
    });
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(r)
}

/// Every named category code with its Chinese and English names, each
/// with a rename link for those who may name categories; a note when
/// there are none.
#[component]
fn CategoryTable(names: Vec<CategoryName>) -> impl IntoView {
    let l = lang();
    if names.is_empty() {
        return view! { <p class="note" data-testid="no-categories">{l.t("category-none")}</p> }
            .into_any();
    }
    let may_name = viewer_may(Permission::NameCategories);
    let rows = names
        .into_iter()
        .map(|n| {
            let edit = may_name.then(|| {
                let href = paths::category_rename(n.code());
                view! { <a href=href data-testid="rename-category">{l.t("category-rename")}</a> }
            });
            view! {
                <tr data-testid="category-row" data-code=n.code().to_string()>
                    <td data-label=l.t("category-code")><span class="mono">{n.code().to_string()}</span></td>
                    <td data-label=l.t("category-name-zh")>{n.zh().to_string()}</td>
                    <td data-label=l.t("category-name-en")>{n.en().to_string()}</td>
                    <td>{edit}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="categories">
                <thead><tr>
                    <th scope="col">{l.t("category-code")}</th>
                    <th scope="col">{l.t("category-name-zh")}</th>
                    <th scope="col">{l.t("category-name-en")}</th>
                    <th scope="col"><span class="visually-hidden">{l.t("category-rename")}</span></th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

/// The form that names a new code, or renames the one it was opened for,
/// as typed, with the message of a refused field beside it.
#[component]
fn NameFormSection(form: NameForm, errors: FieldErrors) -> impl IntoView {
    let (l, f) = (lang(), form);
    let renaming = f.renaming();
    let heading = if renaming {
        l.t("category-rename-heading")
    } else {
        l.t("category-new-heading")
    };
    let row = |field: &'static str, label: &'static str, value: String, readonly: bool| {
        let st = errors.input_attrs(field, field);
        view! {
            <div class="row">
                <label for=field>{label}</label>
                <input id=field name=field type="text" value=value readonly=readonly
                    aria-invalid=st.invalid aria-describedby=st.described_by.clone()/>
                {field_error(&st)}
            </div>
        }
    };
    let form_error = field_error(&errors.input_attrs("form", "form"));
    view! {
        <section aria-labelledby="category-form">
            <h2 id="category-form">{heading}</h2>
            <form method="post" action=format!("{LIST}#category-form") class="stack" data-testid="category-form" novalidate=true>
                <input type="hidden" name="csrf" value=csrf_token()/>
                <input type="hidden" name="was_zh" value=f.was_zh.clone()/>
                <input type="hidden" name="was_en" value=f.was_en.clone()/>
                {form_error}
                {row("code", l.t("category-code"), f.code.clone(), renaming)}
                {row("name_zh", l.t("category-name-zh"), f.name_zh.clone(), false)}
                {row("name_en", l.t("category-name-en"), f.name_en.clone(), false)}
                <p class="actions"><button type="submit" class="primary" data-testid="save-category">{l.t("category-save")}</button></p>
            </form>
        </section>
    }
}

/// The words of a refused field.
fn field_words(l: Lang, field: &str) -> (&'static str, &'static str) {
    match field {
        "code" => ("code", l.t("category-error-code")),
        "name_zh" => ("name_zh", l.t("category-error-name")),
        "name_en" => ("name_en", l.t("category-error-name")),
        _ => ("form", l.t("category-error-changed")),
    }
}

async fn save(State(s): State<AppState>, staff: Staff, body: Bytes) -> Result<Response, WebError> {
    let form = NameForm::parse(&body);
    if let Err(e) = staff.check_csrf(form.csrf.as_deref()) {
        return Ok(e.into_response());
    }
    let l = staff.lang;
    if !staff.may(Permission::NameCategories) {
        return Err(WebError::forbidden(l.t("category-needs-operator")));
    }
    let name = match CategoryName::parse(&form.code, &form.name_zh, &form.name_en) {
        Ok(n) => n,
        Err(e) => {
            let mut errors = FieldErrors::default();
            let (field, words) = field_words(l, e.field);
            errors.add(field, words.to_string());
            return page(&s, &staff, form, errors).await;
        }
    };
    let was = form
        .renaming()
        .then(|| (form.was_zh.clone(), form.was_en.clone()));
    Ok(
        match s
            .service
            .name_category_as(&staff.ctx(), &staff.authority(), name.clone(), was)
            .await
        {
            Ok(()) => staff.done(
                &format!("{LIST}#category-list"),
                crate::tr!(
                    l,
                    "category-saved-flash",
                    code = name.code().to_string(),
                    name = if l == Lang::Zh { name.zh() } else { name.en() }.to_string()
                ),
            ),
            Err(ServiceError::Refused { .. }) => {
                let mut errors = FieldErrors::default();
                let key = if form.renaming() {
                    "category-error-changed"
                } else {
                    "category-error-exists"
                };
                errors.add("form", l.t(key).to_string());
                page(&s, &staff, form, errors).await?
            }
            Err(ServiceError::Forbidden(_)) => {
                WebError::forbidden(l.t("category-needs-operator")).into_response()
            }
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}
