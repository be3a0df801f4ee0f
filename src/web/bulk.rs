//! Bulk issue (定向发券) and bulk void (批量作废) in the console, on the
//! same service functions as `POST /templates/{id}/bulk-issues` and
//! `POST /templates/{id}/bulk-void`:
//!
//! - `/console/templates/{id}/bulk-issue`: a CSV file of user ids
//!   (`multipart/form-data`, up to [`MAX_FILE_BYTES`], the API's limit)
//!   or ids pasted one a line, optionally with a message to each user;
//! - `/console/templates/{id}/bulk-void`: all of the template's available
//!   coupons, or those of an uploaded file of coupon ids (up to
//!   [`MAX_CONSOLE_VOID_IDS`]); the preview (how many available coupons
//!   become void, how many locked and used are left alone; for a file,
//!   how many ids it lists), a reason, and a confirmation step before the
//!   job starts;
//! - `/console/jobs/{id}`: the job's progress, refreshing itself without
//!   JavaScript (`<meta http-equiv=refresh>`) while it runs, with its
//!   results file (`/console/jobs/{id}/results.csv`).
//!
//! Starting is for operators and admins, enforced in the service; every
//! staff role reads jobs. A refused form comes back (422) as typed with
//! the message at its field.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::components::{IdsDetails, OptTime, Time};
use super::context::{lang, viewer_may};
use super::i18n::Lang;
use super::layout::{FieldErrors, actor_text, field_error};
use super::paths;
use super::posted::OrPage;
use crate::domain::bulk::{JobKind, LineReason, MAX_FILE_BYTES, parse_lines};
use crate::domain::ids::{JobId, TemplateId};
use crate::domain::permissions::Permission;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::bulk::{JobView, VoidInput};
use crate::service::views::TemplateView;

/// How often a running job's page reloads itself, in seconds.
const REFRESH_SECONDS: u32 = 3;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/console/templates/{id}/bulk-issue",
            // A file of up to a million user ids (the API's limit, not
            // the 2 MB default of every other form), read as it streams
            // in by `read_posted`, which applies the limits.
            get(issue_page).post(issue),
        )
        .route(
            "/console/templates/{id}/bulk-void",
            // A list of up to MAX_CONSOLE_VOID_IDS coupon ids, as a file
            // and again on the confirmation (`read_posted`'s limits).
            get(void_page).post(void),
        )
        .route("/console/jobs/{id}", get(job_page))
        .route("/console/jobs/{id}/results.csv", get(results))
}

fn forbidden(l: Lang) -> Response {
    WebError::forbidden(l.t("template-needs-operator")).into_response()
}

fn kind_words(l: Lang, kind: Option<JobKind>) -> String {
    kind.map(|k| l.t(k.label_key()).to_string())
        .unwrap_or_default()
}

/// The template's recent jobs, for [`BulkSection`] (none when they
/// cannot be read: the section is not worth failing the page for).
pub async fn template_jobs(s: &AppState, t: &TemplateView) -> Vec<JobView> {
    s.service.template_jobs(&t.id).await.unwrap_or_default()
}

/// The template page's part: the two forms' links for operators and the
/// template's recent jobs for everyone.
#[component]
pub fn BulkSection(template_id: TemplateId, jobs: Vec<JobView>) -> impl IntoView {
    let l = lang();
    let starts = viewer_may(Permission::ManageTemplates).then(|| {
        let (issue, void) = (
            paths::template_bulk_issue(&template_id),
            paths::template_bulk_void(&template_id),
        );
        view! {
            <p class="actions">
                <a class="button" href=issue data-testid="bulk-issue-link">{l.t("bulk-issue-title")}</a>
                <a class="button danger" href=void data-testid="bulk-void-link">{l.t("bulk-void-title")}</a>
            </p>
        }
    });
    let list = if jobs.is_empty() {
        view! { <p class="note">{l.t("bulk-no-jobs")}</p> }.into_any()
    } else {
        let rows = jobs
            .into_iter()
            .map(|j| {
                let href = paths::job(&j.id);
                let kind = kind_words(l, j.kind());
                let status = l.t(j.status().label_key());
                let progress = crate::tr!(l, "bulk-progress-short", done = j.done, total = j.total);
                view! {
                    <tr data-testid="bulk-job-row">
                        <td data-label=l.t("bulk-kind")><a href=href>{kind}</a></td>
                        <td data-label=l.t("bulk-status")>{status}</td>
                        <td data-label=l.t("bulk-progress")>{progress}</td>
                        <td class="nowrap" data-label=l.t("bulk-started-at")><Time at=j.created_at/></td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <div class="table-wrap"><table>
                <thead><tr>
                    <th>{l.t("bulk-kind")}</th><th>{l.t("bulk-status")}</th>
                    <th>{l.t("bulk-progress")}</th><th>{l.t("bulk-started-at")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        }
        .into_any()
    };
    view! {
        <section aria-labelledby="template-bulk">
            <h2 id="template-bulk">{l.t("bulk-section")}</h2>
            {starts}
            {list}
        </section>
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct IssueForm {
    user_ids: String,
    notify: Option<String>,
}

async fn issue_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
) -> Result<Response, WebError> {
    if !staff.may(Permission::ManageTemplates) {
        return Ok(forbidden(staff.lang));
    }
    render_issue(
        &s,
        &staff,
        &id,
        IssueForm::default(),
        FieldErrors::default(),
    )
    .await
}

async fn render_issue(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    form: IssueForm,
    errors: FieldErrors,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let t = s.service.get_template(id).await.or_page(l)?;
    let refused = !errors.is_empty();
    let action = paths::template_bulk_issue(id);
    let back = paths::template(id);
    let field = errors.input_attrs("user_ids", "user-ids");
    let file_field = errors.input_attrs("file", "user-file");
    let typed = super::escape_html(&form.user_ids);
    let notify = form.notify.is_some();
    let title = crate::tr!(l, "bulk-issue-page-title", name = t.name.clone());
    let csrf = staff.session.csrf_token.clone();
    let mut r = staff.page(
        &title,
        move || view! {
            <section aria-labelledby="bulk-issue">
                <h2 id="bulk-issue">{l.t("bulk-issue-title")}</h2>
                <p class="note">{l.t("bulk-issue-explained")}</p>
                <form method="post" action=action class="stack" enctype="multipart/form-data" data-testid="bulk-issue-form">
                    <input type="hidden" name="csrf" value=csrf/>
                    <label for="user-file">{l.t("bulk-user-file")}</label>
                    <span class="note">{l.t("bulk-user-file-note")}</span>
                    <input type="file" id="user-file" name="file" accept=".csv,.txt,text/csv,text/plain"
                        aria-invalid=file_field.invalid aria-describedby=file_field.described_by.clone()/>
                    {field_error(&file_field)}
                    <label for="user-ids">{l.t("bulk-user-ids")}</label>
                    <span class="note">{l.t("bulk-user-ids-note")}</span>
                    <textarea id="user-ids" name="user_ids" rows="12"
                        aria-invalid=field.invalid aria-describedby=field.described_by.clone()>{typed}</textarea>
                    {field_error(&field)}
                    <label><input type="checkbox" name="notify" value="1" checked=notify/>" "{l.t("bulk-notify")}</label>
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="bulk-issue-start">{l.t("bulk-issue-start")}</button>
                        <a class="button" href=back>{l.t("bulk-back-to-template")}</a>
                    </p>
                </form>
            </section>
        },
    );
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(r)
}

/// Most bytes of a posted text field (the carried list of up to
/// [`MAX_CONSOLE_VOID_IDS`] coupon ids is the largest), and of a whole
/// urlencoded post.
const MAX_FIELD_BYTES: usize = 8 * 1024 * 1024;

/// Why a posted form was not read: an answer to send as it is.
type NotRead = Response;

/// Reads a posted form that may carry a file: `multipart/form-data`
/// (the file part named `file`, when one was chosen) or urlencoded (a
/// browser without the file field). The text parts are read into `T`
/// like any form, and the session's CSRF token is checked either way.
///
/// Called only after the session and the role were checked, so nobody
/// else makes the server read an upload. The body is read as it arrives,
/// in one of the process's upload slots (see
/// [`crate::http::state::MAX_CONCURRENT_UPLOADS`]; all busy for a few
/// seconds: 503 with `Retry-After`); the file goes to an anonymous
/// temporary file (removed when closed), never into memory while it
/// arrives, and is read back once complete, at most [`MAX_FILE_BYTES`].
async fn read_posted<T: serde::de::DeserializeOwned>(
    s: &AppState,
    staff: &Staff,
    headers: &HeaderMap,
    body: Body,
) -> Result<(T, Option<Vec<u8>>), NotRead> {
    let l = staff.lang;
    let Some(_slot) = s.upload_slot().await else {
        return Err(uploads_busy(l));
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let bad = || WebError::bad_request(l.t("bulk-error-upload").to_string()).into_response();
    let Ok(boundary) = multer::parse_boundary(content_type) else {
        let bytes = axum::body::to_bytes(body, MAX_FIELD_BYTES)
            .await
            .map_err(|_| bad())?;
        return Ok((
            staff.posted(&bytes).map_err(IntoResponse::into_response)?,
            None,
        ));
    };
    let limits = multer::Constraints::new().size_limit(
        multer::SizeLimit::new()
            .whole_stream(MAX_FILE_BYTES as u64 + MAX_FIELD_BYTES as u64)
            .per_field(MAX_FILE_BYTES as u64),
    );
    let mut parts = multer::Multipart::with_constraints(body.into_data_stream(), boundary, limits);
    // Collected, then encoded after the last await: the encoder is not
    // `Send`, and the handler's future must be.
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut file = None;
    // Bounded by the stream's size limit: each part consumes some of it.
    while let Some(mut part) = parts.next_field().await.map_err(|_| bad())? {
        let name = part.name().unwrap_or_default().to_string();
        if name == "file" {
            let mut spooled = Spooled::new().await.map_err(|_| bad())?;
            while let Some(chunk) = part.chunk().await.map_err(|_| bad())? {
                spooled.write(&chunk).await.map_err(|_| bad())?;
            }
            // A file input left empty still sends a part, with no bytes.
            if spooled.len > 0 {
                file = Some(spooled.read_back().await.map_err(|_| bad())?);
            }
        } else {
            let mut text = Vec::new();
            while let Some(chunk) = part.chunk().await.map_err(|_| bad())? {
                if text.len() + chunk.len() > MAX_FIELD_BYTES {
                    return Err(bad());
                }
                text.extend_from_slice(&chunk);
            }
            fields.push((name, String::from_utf8_lossy(&text).into_owned()));
        }
    }
    let encoded = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    let form = staff
        .posted(&Bytes::from(encoded))
        .map_err(IntoResponse::into_response)?;
    Ok((form, file))
}

/// An uploaded file on its way in: an anonymous temporary file (no name
/// on disk, gone when closed) and how many bytes it holds.
struct Spooled {
    file: tokio::fs::File,
    len: usize,
}

impl Spooled {
    async fn new() -> std::io::Result<Spooled> {
        let file = tokio::task::spawn_blocking(tempfile::tempfile)
            .await
            .map_err(std::io::Error::other)??;
        Ok(Spooled {
            file: tokio::fs::File::from_std(file),
            len: 0,
        })
    }

    async fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        if self.len + chunk.len() > MAX_FILE_BYTES {
            return Err(std::io::Error::other("the file is too large"));
        }
        self.file.write_all(chunk).await?;
        self.len += chunk.len();
        Ok(())
    }

    async fn read_back(mut self) -> std::io::Result<Vec<u8>> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};
        self.file.flush().await?;
        self.file.seek(std::io::SeekFrom::Start(0)).await?;
        let mut bytes = Vec::with_capacity(self.len);
        self.file
            .take(MAX_FILE_BYTES as u64)
            .read_to_end(&mut bytes)
            .await?;
        Ok(bytes)
    }
}

/// Every upload slot stayed busy: 503 with `Retry-After`, nothing read.
fn uploads_busy(l: Lang) -> Response {
    let seconds = crate::http::state::UPLOAD_RETRY_AFTER_SECONDS;
    let mut r = WebError::unavailable(crate::tr!(l, "bulk-uploads-busy", seconds = seconds))
        .into_response();
    if let Ok(v) = axum::http::HeaderValue::from_str(&seconds.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

async fn issue(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, WebError> {
    let l = staff.lang;
    // The role before a byte of the body is read.
    if !staff.may(Permission::ManageTemplates) {
        return Ok(forbidden(l));
    }
    let (form, file): (IssueForm, _) = match read_posted(&s, &staff, &headers, body).await {
        Ok(p) => p,
        Err(r) => return Ok(r),
    };
    if file.is_some() && !form.user_ids.trim().is_empty() {
        let mut errors = FieldErrors::default();
        errors.add("file", l.t("bulk-error-file-and-list").to_string());
        return render_issue(&s, &staff, &id, form, errors).await;
    }
    let from_file = file.is_some();
    let lines = file.unwrap_or_else(|| form.user_ids.clone().into_bytes());
    let result = s
        .service
        .start_bulk_issue(
            &staff.ctx(),
            &staff.authority(),
            None,
            id.clone(),
            &lines,
            form.notify.is_some(),
        )
        .await;
    Ok(match result {
        Ok(done) => match done.fresh() {
            Some(job) => staff.done(
                &paths::job(&job.id),
                crate::tr!(l, "bulk-started-flash", total = job.total),
            ),
            None => staff.done(&paths::template(&id), l.t("bulk-started-plain").to_string()),
        },
        Err(ServiceError::Invalid(_)) => {
            let mut errors = FieldErrors::default();
            if from_file {
                errors.add("file", l.t("bulk-error-file").to_string());
            } else {
                errors.add("user_ids", l.t("bulk-error-user-ids").to_string());
            }
            render_issue(&s, &staff, &id, form, errors).await?
        }
        Err(ServiceError::Forbidden(_)) => forbidden(l),
        Err(e) => WebError::from_service(l, e).into_response(),
    })
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct VoidForm {
    reason: String,
    confirm: Option<String>,
    /// The coupon ids of an uploaded list, one a line, carried from the
    /// first step to the confirmation in a hidden field (a browser sends
    /// its line breaks back as CRLF, which the parser takes; empty: all of
    /// the template).
    list: String,
}

/// Most coupon ids a list voided from the console may hold: the
/// confirmation page carries them (about 33 bytes each); bigger lists go
/// through the API (up to [`crate::domain::bulk::MAX_LINES`]).
const MAX_CONSOLE_VOID_IDS: usize = 100_000;

/// The coupon ids of an uploaded file or of the carried list, one a line
/// for the service; `Err` with the catalog key of the refusal.
fn void_list(file: Option<&[u8]>, carried: &str) -> Result<Option<String>, &'static str> {
    let text = match file {
        Some(bytes) => std::str::from_utf8(bytes).map_err(|_| "bulk-error-void-file")?,
        None if carried.trim().is_empty() => return Ok(None),
        None => carried,
    };
    let lines =
        parse_lines(JobKind::BulkVoid, text.as_bytes()).map_err(|_| "bulk-error-void-file")?;
    if lines.is_empty() || lines.len() > MAX_CONSOLE_VOID_IDS {
        return Err("bulk-error-void-file");
    }
    let ids: Vec<&str> = lines.iter().map(|l| l.value.as_str()).collect();
    Ok(Some(ids.join("\n")))
}

async fn void_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
) -> Result<Response, WebError> {
    if !staff.may(Permission::ManageTemplates) {
        return Ok(forbidden(staff.lang));
    }
    render_void(
        &s,
        &staff,
        &id,
        VoidForm::default(),
        FieldErrors::default(),
        false,
    )
    .await
}

/// The void form with its preview; `confirming`: the reason is in and the
/// page asks to confirm.
async fn render_void(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    form: VoidForm,
    errors: FieldErrors,
    confirming: bool,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let t = s.service.get_template(id).await.or_page(l)?;
    let refused = !errors.is_empty();
    let action = paths::template_bulk_void(id);
    let back = paths::template(id);
    let field = errors.input_attrs("reason", "void-reason");
    let file_field = errors.input_attrs("file", "void-file");
    let listed = form.list.lines().filter(|v| !v.trim().is_empty()).count();
    let preview = if listed > 0 {
        crate::tr!(l, "bulk-void-list-preview", count = listed)
    } else {
        crate::tr!(
            l,
            "bulk-void-preview",
            available = t.counts.available,
            locked = t.counts.locked,
            used = t.counts.used
        )
    };
    let title = crate::tr!(l, "bulk-void-page-title", name = t.name.clone());
    let csrf = staff.session.csrf_token.clone();
    let step = if confirming {
        let reason = form.reason.clone();
        let question = if listed > 0 {
            crate::tr!(l, "bulk-void-list-confirm-question", count = listed)
        } else {
            crate::tr!(
                l,
                "bulk-void-confirm-question",
                available = t.counts.available
            )
        };
        let list = form.list.clone();
        view! {
            <form method="post" action=action class="stack" data-testid="bulk-void-confirm-form">
                <input type="hidden" name="csrf" value=csrf/>
                <input type="hidden" name="reason" value=reason.clone()/>
                <input type="hidden" name="list" value=list/>
                <input type="hidden" name="confirm" value="1"/>
                <p class="warning" role="alert" data-testid="bulk-void-question">{question}</p>
                <dl class="facts"><dt>{l.t("template-reason")}</dt><dd data-testid="bulk-void-reason">{reason}</dd></dl>
                <p class="actions">
                    <button type="submit" class="danger primary" data-testid="bulk-void-confirm">{l.t("bulk-void-confirm")}</button>
                    <a class="button" href=back>{l.t("bulk-back-to-template")}</a>
                </p>
            </form>
        }
        .into_any()
    } else {
        let typed = super::escape_html(&form.reason);
        view! {
            <form method="post" action=action class="stack" enctype="multipart/form-data" data-testid="bulk-void-form">
                <input type="hidden" name="csrf" value=csrf/>
                <label for="void-file">{l.t("bulk-void-file")}</label>
                <span class="note">{l.t("bulk-void-file-note")}</span>
                <input type="file" id="void-file" name="file" accept=".csv,.txt,text/csv,text/plain"
                    aria-invalid=file_field.invalid aria-describedby=file_field.described_by.clone()/>
                {field_error(&file_field)}
                <label for="void-reason">{l.t("template-reason")}</label>
                <textarea id="void-reason" name="reason" maxlength="500"
                    aria-invalid=field.invalid aria-describedby=field.described_by.clone()>{typed}</textarea>
                {field_error(&field)}
                <p class="actions">
                    <button type="submit" class="primary" data-testid="bulk-void-next">{l.t("bulk-void-next")}</button>
                    <a class="button" href=back>{l.t("bulk-back-to-template")}</a>
                </p>
            </form>
        }
        .into_any()
    };
    let mut r = staff.page(&title, move || {
        view! {
            <section aria-labelledby="bulk-void">
                <h2 id="bulk-void">{l.t("bulk-void-title")}</h2>
                <p data-testid="bulk-void-preview">{preview}</p>
                {step}
            </section>
        }
    });
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(r)
}

async fn void(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, WebError> {
    let l = staff.lang;
    // The role before a byte of the body is read.
    if !staff.may(Permission::ManageTemplates) {
        return Ok(forbidden(l));
    }
    let (mut form, file): (VoidForm, Option<Vec<u8>>) =
        match read_posted(&s, &staff, &headers, body).await {
            Ok(p) => p,
            Err(r) => return Ok(r),
        };
    let mut errors = FieldErrors::default();
    match void_list(file.as_deref(), &form.list) {
        Ok(list) => form.list = list.unwrap_or_default(),
        Err(key) => {
            form.list.clear();
            errors.add("file", l.t(key).to_string());
        }
    }
    if crate::domain::reason::parse_reason(Some(form.reason.clone())).is_err() {
        errors.add("reason", l.t("please-give-a-reason").to_string());
    }
    if !errors.is_empty() {
        return render_void(&s, &staff, &id, form, errors, false).await;
    }
    if form.confirm.is_none() {
        return render_void(&s, &staff, &id, form, FieldErrors::default(), true).await;
    }
    let input = if form.list.is_empty() {
        VoidInput::All
    } else {
        VoidInput::File(form.list.clone().into_bytes())
    };
    let result = s
        .service
        .start_bulk_void(
            &staff.ctx(),
            &staff.authority(),
            None,
            id.clone(),
            input,
            Some(form.reason.clone()),
        )
        .await;
    Ok(match result {
        Ok(done) => match done.fresh() {
            Some(job) => staff.done(
                &paths::job(&job.id),
                crate::tr!(l, "bulk-started-flash", total = job.total),
            ),
            None => staff.done(&paths::template(&id), l.t("bulk-started-plain").to_string()),
        },
        Err(ServiceError::Invalid(_)) => {
            let mut errors = FieldErrors::default();
            errors.add("reason", l.t("please-give-a-reason").to_string());
            render_void(&s, &staff, &id, form, errors, false).await?
        }
        Err(ServiceError::Forbidden(_)) => forbidden(l),
        Err(e) => WebError::from_service(l, e).into_response(),
    })
}

async fn job_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<JobId>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let job = s.service.get_job(&id).await.or_page(l)?;
    let template = s.service.get_template(&job.template_id).await.or_page(l)?;
    let title = crate::tr!(
        l,
        "bulk-job-title",
        kind = kind_words(l, job.kind()),
        name = template.name.clone()
    );
    Ok(staff.page(
        &title,
        move || view! { <JobBody job=job template=template/> },
    ))
}

/// A bulk job's progress (reloading itself while it runs), its counts,
/// why lines were skipped or failed, its results file and its ids.
#[component]
fn JobBody(job: JobView, template: TemplateView) -> impl IntoView {
    let l = lang();
    let kind = job.kind();
    let status = job.status();
    let here = paths::job(&job.id);
    let refresh = status.is_active().then(|| {
        // The address without any fragment (see `web::codes`).
        let here = here.clone();
        view! {
            <meta http-equiv="refresh" content=format!("{REFRESH_SECONDS}; url={here}")/>
            <p class="note" data-testid="bulk-refreshing">{l.t("bulk-refreshing")}" "<a href=here>{l.t("bulk-refresh-now")}</a></p>
        }
    });
    let succeeded_key = match kind {
        Some(JobKind::BulkVoid) => "bulk-voided",
        _ => "bulk-issued",
    };
    let reasons = job
        .reasons
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| {
            let words = LineReason::parse(r)
                .map(|r| l.t(&r.label_key()).to_string())
                .unwrap_or_else(|| l.t("bulk-reason-other").to_string());
            view! { <li data-testid="bulk-reason" data-reason=r.clone()>{words}": "{*n}</li> }
        })
        .collect_view();
    let results = paths::job_results_csv(&job.id);
    let template_href = paths::template(&template.id);
    let ids = vec![
        ("bulk-id-job", job.id.to_string()),
        ("id-template", template.id.to_string()),
    ];
    let reason = job.reason.clone().map(|r| {
        view! { <dt>{l.t("template-reason")}</dt><dd>{r}</dd> }
    });
    let notify = (kind == Some(JobKind::BulkIssue)).then(|| {
        let words = if job.notify {
            l.t("bulk-notify-yes")
        } else {
            l.t("bulk-notify-no")
        };
        view! { <dt>{l.t("bulk-notify")}</dt><dd>{words}</dd> }
    });
    let actor = actor_text(l, &job.actor);
    view! {
        {refresh}
        <section aria-labelledby="bulk-job">
            <h2 id="bulk-job">{l.t("bulk-job")}" "<span class="badge" data-testid="bulk-status" data-status=status.as_str()>{l.t(status.label_key())}</span></h2>
            <dl class="facts">
                <dt>{l.t("bulk-kind")}</dt><dd>{kind_words(l, kind)}</dd>
                <dt>{l.t("template")}</dt><dd><a href=template_href>{template.name.clone()}</a></dd>
                <dt>{l.t("bulk-total")}</dt><dd data-testid="bulk-total">{job.total}</dd>
                <dt>{l.t("bulk-done")}</dt><dd data-testid="bulk-done">{job.done}</dd>
                <dt>{l.t(succeeded_key)}</dt><dd data-testid="bulk-succeeded">{job.succeeded}</dd>
                <dt>{l.t("bulk-skipped")}</dt><dd data-testid="bulk-skipped">{job.skipped}</dd>
                <dt>{l.t("bulk-failed")}</dt><dd data-testid="bulk-failed">{job.failed}</dd>
                {reason}
                {notify}
                <dt>{l.t("bulk-started-by")}</dt><dd>{actor}</dd>
                <dt>{l.t("bulk-started-at")}</dt><dd><Time at=job.created_at.clone()/></dd>
                <dt>{l.t("bulk-finished-at")}</dt><dd><OptTime at=job.finished_at.clone()/></dd>
            </dl>
            <h3>{l.t("bulk-reasons")}</h3>
            <ul data-testid="bulk-reasons">{reasons}</ul>
            <p class="actions"><a class="button" href=results data-testid="bulk-results">{l.t("bulk-results-file")}</a></p>
            <IdsDetails ids=ids/>
        </section>
    }
}

async fn results(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<JobId>,
) -> Result<Response, WebError> {
    let job: JobView = s.service.get_job(&id).await.or_page(staff.lang)?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"job-results.csv\"".to_string(),
            ),
        ],
        Body::from_stream(s.service.job_results_csv(&job)),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::bulk::JobStatus;

    #[test]
    fn every_status_and_reason_has_words_in_both_languages() {
        for lang in [Lang::Zh, Lang::En] {
            for st in JobStatus::ALL {
                assert_ne!(lang.t(st.label_key()), st.label_key());
            }
            for r in LineReason::ALL {
                assert_ne!(lang.t(&r.label_key()), r.label_key());
            }
        }
    }
}
