//! The API's error model: one type that every failure becomes, rendered as
//! `{"error": {"code", "message", "field"?, "detail"?}}` with the status of
//! API.md (`detail`: which case of a refusal, for a program to act on).
//!
//! `message` follows the request's `Accept-Language` (`zh*` Chinese, else
//! English; [`in_api_language`]) and comes from the catalog, written for a
//! customer: a refusal in the catalog's words, other codes a catalog
//! sentence, English keeping the precise detail of bad input.
//!
//! Failures are logged once, here, where they are turned into a response:
//! database trouble as `error`, business refusals not at all (they are
//! answers, not failures).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::i18n::Lang;
use crate::service::{Refusal, RefusalCause, ServiceError};

tokio::task_local! {
    static API_LANG: Lang;
}

/// Middleware: the language of the API's error messages for this request,
/// from `Accept-Language`.
pub async fn in_api_language(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let lang = Lang::for_api(
        req.headers()
            .get(axum::http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    );
    API_LANG.scope(lang, next.run(req)).await
}

/// The language of the current request's API messages (English outside a
/// request).
pub fn api_lang() -> Lang {
    API_LANG.try_with(|l| *l).unwrap_or(Lang::En)
}

/// An error response.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    /// A refusal's subject in the catalog's words, said after its
    /// sentence.
    pub detail: Option<crate::i18n::Msg>,
    /// Which case of a refusal this is (the body's `detail`), where one
    /// code has cases a caller must tell apart.
    pub cause: Option<RefusalCause>,
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Which case of the refusal this is, machine-readable; so far only
    /// `coupon_lock_mismatch` of a payment: `not_locked` (the coupon is
    /// not locked at all) or `locked_to_another_order`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "not_locked")]
    pub detail: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            detail: None,
            cause: None,
        }
    }

    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        let field = field.into();
        let message = message.into();
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_request",
            message: format!("{field}: {message}"),
            field: Some(field),
            detail: None,
            cause: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    pub fn unauthorized() -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or invalid bearer token",
        )
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn unavailable() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the database is unavailable; try again shortly",
        )
    }

    /// The JSON body, as stored for idempotent replays.
    pub fn body_json(&self) -> String {
        serde_json::to_string(&self.body()).unwrap_or_else(|_| String::from("{}"))
    }

    fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message_in(api_lang()),
                field: self.field.clone(),
                detail: self.cause.map(|c| c.code().to_string()),
            },
        }
    }

    /// The message for a reader of `lang`: a refusal in the catalog's words
    /// in either language; any other code with its precise English detail,
    /// or in Chinese the catalog's sentence for the code (naming the field
    /// of bad input).
    pub fn message_in(&self, lang: Lang) -> String {
        if let Some(r) = Refusal::ALL.iter().find(|r| r.code() == self.code) {
            let sentence = lang.t(r.message_key());
            return match &self.detail {
                Some(d) => format!("{sentence} {}", lang.msg(d)),
                None => sentence.to_string(),
            };
        }
        let key = match self.code {
            "invalid_request" => "api-error-invalid_request",
            "unauthorized" => "api-error-unauthorized",
            "forbidden" => "api-error-forbidden",
            "not_found" => "api-error-not_found",
            "rate_limited" => "api-error-rate_limited",
            "unavailable" => "api-error-unavailable",
            "idempotency_key_reused" => "api-error-idempotency_key_reused",
            "idempotency_in_progress" => "api-error-idempotency_in_progress",
            "code_not_found" => "api-error-code_not_found",
            _ => "api-error-refused",
        };
        match (lang, self.code) {
            (Lang::En, _) => self.message.clone(),
            (_, "invalid_request") => match &self.field {
                Some(field) => crate::tr!(lang, "api-error-invalid_field", field = field),
                None => lang.t(key).to_string(),
            },
            _ => lang.t(key).to_string(),
        }
    }

    /// Whether a retry with the same Idempotency-Key should replay this
    /// answer: business refusals and missing objects, yes; conflicts about
    /// the key itself, auth and outages, no.
    pub fn is_replayable(&self) -> bool {
        matches!(self.status, StatusCode::NOT_FOUND | StatusCode::CONFLICT)
            && self.code != "idempotency_in_progress"
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        match e {
            ServiceError::Invalid(f) => ApiError::invalid(f.field, f.message),
            ServiceError::NotFound { .. } => ApiError::not_found(e.to_string()),
            ServiceError::Refused {
                refusal,
                message,
                detail,
                cause,
            } => ApiError {
                detail,
                cause,
                ..ApiError::new(StatusCode::CONFLICT, refusal.code(), message)
            },
            ServiceError::Forbidden(message) => {
                ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
            }
            ServiceError::IdempotencyKeyReused => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                e.to_string(),
            ),
            ServiceError::IdempotencyInProgress => ApiError::new(
                StatusCode::CONFLICT,
                "idempotency_in_progress",
                e.to_string(),
            ),
            ServiceError::IllegalTransition(msg) => {
                tracing::error!(error = %msg, "refused an illegal state transition");
                ApiError::new(
                    StatusCode::CONFLICT,
                    "illegal_transition",
                    "this change is not allowed in the current state",
                )
            }
            ServiceError::Db(db) => {
                tracing::error!(error = %db, "database error");
                ApiError::unavailable()
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}
