//! Redeem codes (兑换码) in the console, on the same service functions as
//! the code-batch API:
//!
//! - on a template's page (`/console/templates/{id}`, [`CodeBatches`]):
//!   its code batches with their progress, and for operators and admins the
//!   form that asks for a batch (count, prefix, length); a refused form
//!   comes back on the template's page (422) as typed, the message beside
//!   its field;
//! - `/console/code-batches/{id}`: one batch: progress, redeemed and voided
//!   codes, its staff log; while it is generated (or its void runs) the
//!   page refreshes itself (`<meta http-equiv="refresh">`, no JavaScript)
//!   and has a refresh link; the CSV of its codes when done, and the void
//!   form (a reason and a confirmation) for operators and admins.
//!
//! Every staff role reads; asking for codes, downloading them and voiding
//! them is for operators and admins, enforced in the service (the code
//! list is printed money, so the CSV is checked here too).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{FLASH_COOKIE, Staff, WebError, set_cookie};
use super::components::{IdsDetails, OptTime, StaffLog, StaffLogRow, Time};
use super::context::{csrf_token, lang, viewer_may};
use super::i18n::Lang;
use super::layout::{FieldErrors, actor_text, field_error};
use super::paths;
use super::posted::{OrPage, Posted};
use crate::domain::FieldError;
use crate::domain::ids::{CodeBatchId, TemplateId};
use crate::domain::permissions::Permission;
use crate::domain::redeem_code::{
    BatchSpec, BatchStatus, MAX_LENGTH, MAX_PREFIX_CHARS, MIN_LENGTH,
};
use crate::http::AppState;
use crate::service::audit::StaffAuditView;
use crate::service::codes::{CodeBatchView, actions};
use crate::service::views::TemplateView;
use crate::service::{Executed, IdempotencyRequest, ServiceError};

/// Seconds between refreshes of a batch page while its work runs.
const REFRESH_SECONDS: u32 = 3;
/// The length a new batch's form proposes.
const DEFAULT_LENGTH: i64 = 8;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/code-batches/{id}", get(batch_page))
        .route("/console/code-batches/{id}/codes.csv", get(csv))
        .route("/console/code-batches/{id}/void", post(void))
}

fn may_manage(staff: &Staff) -> bool {
    staff.may(Permission::ManageTemplates)
}

fn forbidden(l: Lang) -> Response {
    WebError::forbidden(l.t("codes-need-operator")).into_response()
}

/// The generate form as typed, with its messages.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CodeForm {
    pub count: String,
    pub prefix: String,
    pub length: String,
    pub form_id: Option<String>,
    #[serde(skip)]
    pub errors: FieldErrors,
}

impl CodeForm {
    pub fn is_refused(&self) -> bool {
        !self.errors.is_empty()
    }
}

/// A batch's status as a coloured badge.
#[component]
fn BatchStatusBadge(status: BatchStatus) -> impl IntoView {
    let class = match status {
        BatchStatus::Running => "badge status-locked",
        BatchStatus::Done => "badge badge-ok",
        BatchStatus::Failed => "badge badge-problem",
    };
    view! { <span class=class data-batch-status=status.as_str()>{lang().t(status.label_key())}</span> }
}

fn prefix_text(l: Lang, prefix: &str) -> String {
    if prefix.is_empty() {
        l.t("codes-no-prefix").to_string()
    } else {
        prefix.to_string()
    }
}

/// A batch's progress in words: generated / asked for.
fn progress_text(l: Lang, b: &CodeBatchView) -> String {
    crate::tr!(
        l,
        "codes-progress",
        generated = b.generated,
        count = b.count
    )
}

/// Whether the batch page should refresh itself: generation or the void
/// still runs.
fn working(b: &CodeBatchView) -> bool {
    b.status == BatchStatus::Running || (b.voided_at.is_some() && !b.void_finished)
}

// ------------------------------------------------- on the template page

/// A template's code batches for [`CodeBatches`]: the list, or why it
/// could not be read, in words.
pub async fn template_batches(
    s: &AppState,
    staff: &Staff,
    t: &TemplateView,
) -> Result<Vec<CodeBatchView>, String> {
    s.service
        .list_code_batches(&t.id)
        .await
        .map_err(|e| WebError::from_service(staff.lang, e).message)
}

/// The "redeem codes" section of a template's page: its batches (or why
/// they could not be read) and, for operators and admins, the generate
/// form (as typed after a refusal).
#[component]
pub fn CodeBatches(
    template_id: TemplateId,
    batches: Result<Vec<CodeBatchView>, String>,
    form: CodeForm,
) -> impl IntoView {
    let l = lang();
    let batches = match batches {
        Ok(b) => b,
        Err(message) => {
            return view! { <section><p class="field-error">{message}</p></section> }.into_any();
        }
    };
    let generate = viewer_may(Permission::ManageTemplates)
        .then(|| view! { <GenerateForm template_id=template_id form=form/> });
    view! {
        <section aria-labelledby="code-batches" data-testid="code-batches">
            <h2 id="code-batches">{l.t("codes-heading")}</h2>
            <p class="note">{l.t("codes-intro")}</p>
            <BatchTable batches=batches/>
            {generate}
        </section>
    }
    .into_any()
}

/// A template's batches, each with its progress and status, linking to
/// its page; a note when there are none.
#[component]
fn BatchTable(batches: Vec<CodeBatchView>) -> impl IntoView {
    let l = lang();
    if batches.is_empty() {
        return view! { <p class="note" data-testid="no-code-batches">{l.t("codes-none")}</p> }
            .into_any();
    }
    let rows = batches
        .into_iter()
        .map(|b| {
            let href = paths::code_batch(&b.id);
            let voided = b.voided_at.is_some().then(|| {
                view! { " "<span class="badge status-invalidated">{l.t("codes-voided-badge")}</span> }
            });
            view! {
                <tr data-testid="code-batch-row">
                    <td data-label=l.t("codes-created-at")><a href=href data-testid="code-batch-link"><Time at=b.created_at.clone()/></a></td>
                    <td data-label=l.t("codes-prefix")>{prefix_text(l, &b.prefix)}</td>
                    <td data-label=l.t("codes-progress-heading")>
                        <progress max=b.count.to_string() value=b.generated.to_string()></progress>" "
                        <span data-testid="code-batch-progress">{progress_text(l, &b)}</span>
                    </td>
                    <td data-label=l.t("codes-status")><BatchStatusBadge status=b.status/>{voided}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="code-batch-table">
                <thead><tr>
                    <th scope="col">{l.t("codes-created-at")}</th>
                    <th scope="col">{l.t("codes-prefix")}</th>
                    <th scope="col">{l.t("codes-progress-heading")}</th>
                    <th scope="col">{l.t("codes-status")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

/// The form that asks for a batch of the template's codes (count, prefix,
/// length), as typed with its messages.
#[component]
fn GenerateForm(template_id: TemplateId, form: CodeForm) -> impl IntoView {
    let (l, f) = (lang(), form);
    // Back at this section after a refusal (see the template page's forms).
    let action = format!(
        "{}#code-batches",
        paths::template_code_batches(&template_id)
    );
    let form_id = format!("{:032x}", rand::random::<u128>());
    let count = f.errors.input_attrs("count", "code-count");
    let prefix = f.errors.input_attrs("prefix", "code-prefix");
    let length = f.errors.input_attrs("length", "code-length");
    let form_error = field_error(&f.errors.input_attrs("form", "code-form"));
    let length_value = if f.length.is_empty() && !f.is_refused() {
        DEFAULT_LENGTH.to_string()
    } else {
        f.length.clone()
    };
    let prefix_hint = crate::tr!(l, "codes-prefix-hint", max = MAX_PREFIX_CHARS);
    let length_hint = crate::tr!(l, "codes-length-hint", min = MIN_LENGTH, max = MAX_LENGTH);
    view! {
        <h3>{l.t("codes-generate")}</h3>
        <form method="post" action=action class="stack" data-testid="code-batch-form" novalidate=true>
            <input type="hidden" name="csrf" value=csrf_token()/>
            <input type="hidden" name="form_id" value=form_id/>
            {form_error}
            <label for="code-count">{l.t("codes-count")}</label>
            <span class="note">{l.t("codes-count-hint")}</span>
            <input id="code-count" name="count" type="text" inputmode="numeric" value=f.count.clone()
                aria-invalid=count.invalid aria-describedby=count.described_by.clone()/>
            {field_error(&count)}
            <label for="code-prefix">{l.t("codes-prefix")}</label>
            <span class="note">{prefix_hint}</span>
            <input id="code-prefix" name="prefix" type="text" maxlength="8" value=f.prefix.clone()
                aria-invalid=prefix.invalid aria-describedby=prefix.described_by.clone()/>
            {field_error(&prefix)}
            <label for="code-length">{l.t("codes-length")}</label>
            <span class="note">{length_hint}</span>
            <input id="code-length" name="length" type="text" inputmode="numeric" value=length_value
                aria-invalid=length.invalid aria-describedby=length.described_by.clone()/>
            {field_error(&length)}
            <p class="actions"><button type="submit" class="primary" data-testid="generate">{l.t("codes-generate-button")}</button></p>
        </form>
    }
}

/// A whole number typed in a field: `None` for anything but 1-12 digits.
fn whole(raw: &str) -> Option<i64> {
    let t = raw.trim();
    (!t.is_empty() && t.len() <= 12 && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

/// The message of a refused field, in the catalog's words.
fn field_words(l: Lang, field: &str, length: Option<i64>) -> String {
    match field {
        "count" => match length {
            Some(len) if (MIN_LENGTH..=MAX_LENGTH).contains(&len) => crate::tr!(
                l,
                "codes-error-count",
                max = BatchSpec::max_count_for(len),
                length = len
            ),
            _ => l.t("codes-error-count-plain").to_string(),
        },
        "prefix" => crate::tr!(l, "codes-error-prefix", max = MAX_PREFIX_CHARS),
        "length" => crate::tr!(l, "codes-error-length", min = MIN_LENGTH, max = MAX_LENGTH),
        _ => l.t("codes-error-form").to_string(),
    }
}

/// `POST /console/templates/{id}/code-batches` (routed by
/// the template pages, which render the template's page again with
/// the form as typed when this answers `Err`).
pub async fn generate(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    body: &Bytes,
) -> Result<Response, CodeForm> {
    let mut form: CodeForm = match staff.posted(body) {
        Ok(f) => f,
        Err(e) => return Ok(e.into_response()),
    };
    let l = staff.lang;
    if !may_manage(staff) {
        return Ok(forbidden(l));
    }
    let count = whole(&form.count);
    let length = whole(&form.length);
    if count.is_none() {
        form.errors.add("count", field_words(l, "count", None));
    }
    if length.is_none() {
        form.errors.add("length", field_words(l, "length", None));
    }
    if form.is_refused() {
        return Err(form);
    }
    let idem = form
        .form_id
        .as_deref()
        .filter(|f| !f.is_empty() && f.len() <= 64)
        .map(|fid| {
            IdempotencyRequest::new(
                format!("console:{}", staff.session.name),
                fid.to_string(),
                "POST",
                &paths::template_code_batches(id),
                body,
                202,
            )
        });
    match s
        .service
        .create_code_batch_as(
            &staff.ctx(),
            &staff.authority(),
            idem.as_ref(),
            id.clone(),
            count,
            Some(form.prefix.trim().to_string()),
            length,
        )
        .await
    {
        Ok(done) => {
            let batch_id = match done {
                Executed::Fresh(v) => v.id,
                Executed::Replayed { body, .. } => {
                    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                    CodeBatchId::from_wire(v["id"].as_str().unwrap_or_default())
                }
            };
            Ok(staff.done(
                &paths::code_batch(&batch_id),
                l.t("codes-generating-flash").to_string(),
            ))
        }
        Err(ServiceError::Invalid(FieldError { field, .. })) => {
            let at = match field {
                "count" => "count",
                "prefix" => "prefix",
                "length" => "length",
                _ => "form",
            };
            form.errors.add(at, field_words(l, at, length));
            Err(form)
        }
        Err(ServiceError::Forbidden(_)) => Ok(forbidden(l)),
        Err(e) => Ok(WebError::from_service(l, e).into_response()),
    }
}

// ------------------------------------------------------ the batch page

/// The void form as typed, with its messages.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct VoidForm {
    reason: String,
    confirm: Option<String>,
    #[serde(skip)]
    errors: FieldErrors,
}

async fn batch_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CodeBatchId>,
) -> Result<Response, WebError> {
    render_batch(&s, &staff, &id, VoidForm::default()).await
}

async fn render_batch(
    s: &AppState,
    staff: &Staff,
    id: &CodeBatchId,
    form: VoidForm,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let b = s.service.get_code_batch(id).await.or_page(l)?;
    let history = s.service.code_batch_history(id).await.or_page(l)?;
    let refused = !form.errors.is_empty();
    let refresh = working(&b);
    let title = crate::tr!(l, "codes-batch-title", name = b.template_name.clone());
    let body = move || {
        let voidable = viewer_may(Permission::ManageTemplates) && b.voided_at.is_none();
        let facts = b.clone();
        view! {
            <BatchFacts batch=facts/>
            {voidable.then(|| view! { <VoidSection batch=b form=form/> })}
            <section aria-labelledby="batch-history">
                <h2 id="batch-history">{l.t("template-history")}</h2>
                <BatchHistory rows=history/>
            </section>
        }
    };
    let mut r = page_with_refresh(staff, &title, body, refresh);
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(r)
}

/// A batch's facts: its status and progress (with a note and a refresh
/// link while its work runs), what was redeemed and voided, the CSV of
/// its codes for operators and admins once done, and its ids.
#[component]
fn BatchFacts(batch: CodeBatchView) -> impl IntoView {
    let (l, b) = (lang(), batch);
    let here = paths::code_batch(&b.id);
    let refreshing = working(&b).then(|| {
        view! {
            <p class="note" data-testid="refreshing">
                {crate::tr!(l, "codes-refreshing", seconds = REFRESH_SECONDS)}" "
                <a href=here data-testid="refresh">{l.t("codes-refresh")}</a>
            </p>
        }
    });
    let download = (viewer_may(Permission::ManageTemplates) && b.status == BatchStatus::Done)
        .then(|| {
            let href = paths::code_batch_codes_csv(&b.id);
            view! { <p class="actions"><a class="button" href=href data-testid="codes-csv">{l.t("codes-download")}</a></p> }
        });
    let failed = b.error.clone().map(|_| {
        view! { <p class="field-error" data-testid="batch-failed">{l.t("codes-failed-note")}</p> }
    });
    let redeemed = b.redeemed.unwrap_or(0).to_string();
    let voided_text = match &b.voided_at {
        None => "—".to_string(),
        Some(_) => crate::tr!(l, "codes-voided-count", count = b.voided),
    };
    let void_reason = b.void_reason.clone().unwrap_or_else(|| "—".to_string());
    let template_href = paths::template(&b.template_id);
    let ids = vec![
        ("codes-batch-id", b.id.to_string()),
        ("id-template", b.template_id.to_string()),
    ];
    view! {
        <section aria-labelledby="batch-facts">
            <h2 id="batch-facts">{l.t("codes-batch")}" "<span data-testid="batch-status"><BatchStatusBadge status=b.status/></span></h2>
            {refreshing}
            {failed}
            <dl class="facts">
                <dt>{l.t("template")}</dt><dd><a href=template_href data-testid="batch-template">{b.template_name.clone()}</a></dd>
                <dt>{l.t("codes-progress-heading")}</dt>
                <dd><progress max=b.count.to_string() value=b.generated.to_string()></progress>" "<span data-testid="batch-progress">{progress_text(l, &b)}</span></dd>
                <dt>{l.t("codes-prefix")}</dt><dd>{prefix_text(l, &b.prefix)}</dd>
                <dt>{l.t("codes-length")}</dt><dd>{b.length.to_string()}</dd>
                <dt>{l.t("codes-redeemed")}</dt><dd data-testid="batch-redeemed">{redeemed}</dd>
                <dt>{l.t("codes-created-by")}</dt><dd>{actor_text(l, &b.created_by)}</dd>
                <dt>{l.t("codes-created-at")}</dt><dd><Time at=b.created_at.clone()/></dd>
                <dt>{l.t("codes-finished-at")}</dt><dd><OptTime at=b.finished_at.clone()/></dd>
                <dt>{l.t("codes-voided-at")}</dt><dd data-testid="batch-voided-at"><OptTime at=b.voided_at.clone()/></dd>
                <dt>{l.t("codes-voided")}</dt><dd data-testid="batch-voided">{voided_text}</dd>
                <dt>{l.t("reason")}</dt><dd>{void_reason}</dd>
            </dl>
            {download}
            <IdsDetails ids=ids/>
        </section>
    }
}

/// [`Staff::page`], plus `<meta http-equiv="refresh">` in the head when
/// `refresh`: the page reloads itself while the work runs, without
/// JavaScript.
fn page_with_refresh<V: IntoView + 'static>(
    staff: &Staff,
    title: &str,
    body: impl FnOnce() -> V + Send + 'static,
    refresh: bool,
) -> Response {
    let mut html = super::components::render(
        &staff.session,
        staff.lang,
        &staff.here,
        staff.flash.as_ref(),
        title,
        body,
    );
    if refresh {
        // The address without any fragment: a refresh of an address with
        // one (a form's `#section` carried through its redirect) would be
        // a jump within the page, not a reload.
        html = html.replacen(
            "<head>",
            &format!(
                "<head><meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}; url={}\">",
                super::escape_html(&staff.here)
            ),
            1,
        );
    }
    let mut r = Html(html).into_response();
    if staff.flash.is_some() {
        r.headers_mut().append(
            header::SET_COOKIE,
            set_cookie(&staff.settings, FLASH_COOKIE, "", Some(0)),
        );
    }
    r
}

/// The form that voids the batch's unredeemed codes: how many, a reason
/// and a confirmation, as typed with their messages.
#[component]
fn VoidSection(batch: CodeBatchView, form: VoidForm) -> impl IntoView {
    let (l, b, f) = (lang(), batch, form);
    let action = paths::code_batch_void(&b.id);
    let reason = f.errors.input_attrs("reason", "void-reason");
    let confirm = f.errors.input_attrs("confirm", "void-confirm");
    let typed = super::escape_html(&f.reason);
    let unredeemed = (b.generated - b.redeemed.unwrap_or(0)).max(0);
    let warning = crate::tr!(l, "codes-void-warning", count = unredeemed);
    view! {
        <section aria-labelledby="batch-void">
            <h2 id="batch-void">{l.t("codes-void")}</h2>
            <form method="post" action=action class="stack" data-testid="void-form" novalidate=true>
                <input type="hidden" name="csrf" value=csrf_token()/>
                <p class="note">{warning}</p>
                <label for="void-reason">{l.t("template-reason")}</label>
                <textarea id="void-reason" name="reason" maxlength="500"
                    aria-invalid=reason.invalid aria-describedby=reason.described_by.clone()>{typed}</textarea>
                {field_error(&reason)}
                <label for="void-confirm"><input type="checkbox" id="void-confirm" name="confirm" value="yes"
                    aria-invalid=confirm.invalid aria-describedby=confirm.described_by.clone()/>" "{l.t("codes-void-confirm")}</label>
                {field_error(&confirm)}
                <p class="actions"><button type="submit" class="danger" data-testid="void">{l.t("codes-void-button")}</button></p>
            </form>
        </section>
    }
}

/// The batch's staff log: when, who, what, and the reason of a void.
#[component]
fn BatchHistory(rows: Vec<StaffAuditView>) -> impl IntoView {
    let l = lang();
    if rows.is_empty() {
        return view! { <p class="note">{l.t("template-no-history")}</p> }.into_any();
    }
    let rows = rows
        .into_iter()
        .map(|e| StaffLogRow {
            what: actions::label_key(&e.action)
                .map_or_else(|| e.action.clone(), |k| l.t(&k).to_string()),
            reason: if e.action == actions::VOID {
                e.detail.clone().unwrap_or_default()
            } else {
                String::new()
            },
            actor: actor_text(l, &e.actor),
            action_code: Some(e.action),
            at: e.at,
            change: String::new(),
        })
        .collect();
    view! {
        <StaffLog rows=rows testid="batch-history" row_testid="batch-history-row" what_key="action"/>
    }
    .into_any()
}

async fn csv(State(s): State<AppState>, staff: Staff, Path(id): Path<CodeBatchId>) -> Response {
    let l = staff.lang;
    if !may_manage(&staff) {
        return forbidden(l);
    }
    match s.service.code_batch_csv(&id).await {
        Ok((b, text)) => super::layout::csv_download(&format!("codes-{}.csv", b.id), text),
        Err(ServiceError::Refused { .. }) => {
            staff.refused(&paths::code_batch(&id), l.t("codes-not-ready").to_string())
        }
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

async fn void(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CodeBatchId>,
    Posted { mut form, .. }: Posted<VoidForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    if !may_manage(&staff) {
        return Ok(forbidden(l));
    }
    if form.reason.trim().is_empty() {
        form.errors
            .add("reason", l.t("template-error-reason").to_string());
    }
    if form.confirm.as_deref() != Some("yes") {
        form.errors
            .add("confirm", l.t("codes-error-confirm").to_string());
    }
    if !form.errors.is_empty() {
        return render_batch(&s, &staff, &id, form).await;
    }
    Ok(
        match s
            .service
            .void_code_batch_as(
                &staff.ctx(),
                &staff.authority(),
                id.clone(),
                Some(form.reason.clone()),
            )
            .await
        {
            Ok(_) => staff.done(
                &paths::code_batch(&id),
                l.t("codes-voided-flash").to_string(),
            ),
            Err(ServiceError::Invalid(f)) if f.field == "reason" => {
                form.errors
                    .add("reason", l.t("template-error-reason").to_string());
                render_batch(&s, &staff, &id, form).await?
            }
            Err(ServiceError::Forbidden(_)) => forbidden(l),
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}
