//! `GET /expirations/pending`: coupons due to expire, by hour, and the
//! overdue count.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::{ApiCaller, QueryParams};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::jobs::{MAX_PENDING_WINDOW_SECONDS, PendingExpirations};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PendingQuery {
    /// Window in seconds from now, 1 to 2678400 (31 days); default 86400.
    pub within_seconds: Option<i64>,
}

#[utoipa::path(get, path = "/api/v1/expirations/pending", operation_id = "pending_expirations", tag = "operations",
    params(PendingQuery),
    responses((status = 200, body = PendingExpirations), (status = 400, body = ErrorBody)))]
pub async fn pending(
    State(s): State<AppState>,
    _caller: ApiCaller,
    QueryParams(q): QueryParams<PendingQuery>,
) -> Response {
    let within = q.within_seconds.unwrap_or(86_400);
    if !(1..=MAX_PENDING_WINDOW_SECONDS).contains(&within) {
        return ApiError::invalid(
            "within_seconds",
            format!("must be between 1 and {MAX_PENDING_WINDOW_SECONDS}"),
        )
        .into_response();
    }
    match s.service.pending_expirations(within).await {
        Ok(p) => axum::Json(p).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
