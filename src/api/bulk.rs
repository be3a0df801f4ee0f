//! Bulk work (API.md, "Codes, bulk work and reports"):
//! `POST /templates/{id}/bulk-issues` (a `text/csv` file of user ids),
//! `POST /templates/{id}/bulk-void` (`{reason}`, or a `text/csv` file of
//! coupon ids with `?reason=`), `GET /jobs/{id}` and
//! `GET /jobs/{id}/results.csv`. Starting answers 202 with the job; the
//! work is done by `serve`'s job runner.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::extract::{ApiCaller, PathParam, QueryParams, RequestMeta, parse_json, respond};
use crate::domain::ids::{JobId, TemplateId};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::bulk::{JobView, VoidInput};
use crate::service::support::Authority;

pub use crate::domain::bulk::MAX_FILE_BYTES;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BulkIssueQuery {
    /// `true`: each user gets a `coupon.issued` webhook message with the
    /// coupon (default `false`).
    pub notify: Option<bool>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BulkVoidQuery {
    /// With a `text/csv` body: the reason written on every voided coupon
    /// (required then).
    pub reason: Option<String>,
}

/// A void of every available coupon of the template.
#[derive(Debug, Deserialize, ToSchema)]
pub struct BulkVoidBody {
    /// Required, 1-500 characters.
    pub reason: Option<String>,
}

async fn read_file(req: Request) -> Result<axum::body::Bytes, ApiError> {
    axum::body::to_bytes(req.into_body(), MAX_FILE_BYTES)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                format!("the file must be at most {MAX_FILE_BYTES} bytes"),
            )
        })
}

fn is_csv(req: &Request) -> bool {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let v = v.trim_start().to_ascii_lowercase();
            v.starts_with("text/csv") || v.starts_with("text/plain")
        })
}

#[utoipa::path(post, path = "/api/v1/templates/{id}/bulk-issues", operation_id = "start_bulk_issue", tag = "bulk",
    params(("id" = String, Path, description = "template id"), BulkIssueQuery),
    request_body(content = String, content_type = "text/csv",
        description = "one user_id a line, optional header line `user_id`; at most 1,000,000 lines. Invalid user ids are failed lines of the job, not a refusal"),
    responses((status = 202, description = "the job (the same job again for the same file and template)", body = JobView),
        (status = 400, description = "invalid_request: not UTF-8, a NUL character, no line, over 1,000,000 lines (`field` `body`)", body = ErrorBody),
        (status = 404, description = "not_found: no such template", body = ErrorBody),
        (status = 413, description = "invalid_request: the file is over 64 MiB", body = ErrorBody)))]
pub async fn start_issue(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    QueryParams(q): QueryParams<BulkIssueQuery>,
    req: Request,
) -> Response {
    let file = match read_file(req).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let idem = meta.idempotency(&caller, &file, StatusCode::ACCEPTED);
    let result = s
        .service
        .start_bulk_issue(
            &meta.ctx(&caller),
            &Authority::Api,
            idem.as_ref(),
            TemplateId::from_wire(id),
            &file,
            q.notify.unwrap_or(false),
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::ACCEPTED, result).await
}

#[utoipa::path(post, path = "/api/v1/templates/{id}/bulk-void", operation_id = "start_bulk_void", tag = "bulk",
    params(("id" = String, Path, description = "template id"), BulkVoidQuery),
    request_body(content(
        (BulkVoidBody = "application/json"),
        (String = "text/csv")),
        description = "`{reason}`: every available coupon of the template; or a `text/csv` file of coupon ids (optional header `coupon_id`) with `?reason=`"),
    responses((status = 202, description = "the job; locked, used, expired and void coupons are skipped", body = JobView),
        (status = 400, description = "invalid_request: `reason` missing or too long, or a bad file (`field` `body`)", body = ErrorBody),
        (status = 404, description = "not_found: no such template", body = ErrorBody),
        (status = 413, description = "invalid_request: the file is over 64 MiB", body = ErrorBody)))]
pub async fn start_void(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    QueryParams(q): QueryParams<BulkVoidQuery>,
    req: Request,
) -> Response {
    let csv = is_csv(&req);
    let raw = match read_file(req).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let (input, reason) = if csv {
        (VoidInput::File(raw.to_vec()), q.reason)
    } else {
        if raw.len() > super::extract::MAX_BODY_BYTES {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                format!(
                    "a JSON body must be at most {} bytes",
                    super::extract::MAX_BODY_BYTES
                ),
            )
            .into_response();
        }
        match parse_json::<BulkVoidBody>(super::extract::json_text(&raw)) {
            Ok(b) => (VoidInput::All, b.reason),
            Err(e) => return e.into_response(),
        }
    };
    // The fingerprint covers the reason of a file's void too.
    let mut fingerprint = raw.to_vec();
    if let Some(r) = &reason
        && csv
    {
        fingerprint.extend_from_slice(b"\0reason=");
        fingerprint.extend_from_slice(r.as_bytes());
    }
    let idem = meta.idempotency(&caller, &fingerprint, StatusCode::ACCEPTED);
    let result = s
        .service
        .start_bulk_void(
            &meta.ctx(&caller),
            &Authority::Api,
            idem.as_ref(),
            TemplateId::from_wire(id),
            input,
            reason,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::ACCEPTED, result).await
}

#[utoipa::path(get, path = "/api/v1/jobs/{id}", operation_id = "get_job", tag = "bulk",
    params(("id" = String, Path, description = "job id")),
    responses((status = 200, body = JobView), (status = 404, description = "not_found", body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
) -> Response {
    match s.service.get_job(&JobId::from_wire(id)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(get, path = "/api/v1/jobs/{id}/results.csv", operation_id = "get_job_results", tag = "bulk",
    params(("id" = String, Path, description = "job id")),
    responses((status = 200, description = "one line per input: `line,value,outcome,reason,coupon_id`; outcome `pending`, `issued`, `invalidated`, `skipped` or `failed`",
            content_type = "text/csv", body = String),
        (status = 404, description = "not_found", body = ErrorBody)))]
pub async fn results(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
) -> Response {
    results_csv(&s, &JobId::from_wire(id), "job-results.csv").await
}

/// The results of job `id` as a streamed CSV download (the API's and the
/// console's stream come from [`crate::service::Service::job_results_csv`]).
async fn results_csv(s: &AppState, id: &JobId, filename: &str) -> Response {
    let job = match s.service.get_job(id).await {
        Ok(j) => j,
        Err(e) => return ApiError::from(e).into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
        ],
        Body::from_stream(s.service.job_results_csv(&job)),
    )
        .into_response()
}
