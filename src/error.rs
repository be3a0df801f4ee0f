//! The API's error model: one type that every failure becomes, rendered as
//! `{"error": {"code", "message", "field"?}}` with the status of API.md.
//!
//! Failures are logged once, here, where they are turned into a response:
//! database trouble as `error`, business refusals not at all (they are
//! answers, not failures).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::service::ServiceError;

/// An error response.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
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
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
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
                message: self.message.clone(),
                field: self.field.clone(),
            },
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
            ServiceError::Refused { refusal, message } => {
                ApiError::new(StatusCode::CONFLICT, refusal.code(), message)
            }
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
