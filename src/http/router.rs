//! The whole HTTP surface of the process: the JSON API's routes
//! ([`crate::api::routes`]), the pages' ([`crate::web::routes`]), the
//! operator endpoints ([`super::ops`]), the fallbacks, and the middleware
//! stack around all of them.

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use super::middleware::{RandomRequestId, limit, observe, panic_response};
use super::ops::{healthz, metrics, readyz};
use super::security_headers::security_headers;
use super::state::AppState;
use crate::error::ApiError;

/// The whole HTTP surface of the process.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(crate::api::routes())
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .merge(crate::web::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state(
            state.clone(),
            crate::web::in_business_zone,
        ))
        .layer(from_fn_with_state(state.clone(), observe))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(from_fn_with_state(state.clone(), limit))
        .layer(from_fn_with_state(state.clone(), security_headers))
        // Outside the limits, so a 429 speaks the caller's language too.
        .layer(from_fn(crate::error::in_api_language))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-");
            // The id may come from the caller: escaped like any logged input.
            let id = crate::log_safe::LogSafe(id);
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
        }))
        .layer(SetRequestIdLayer::x_request_id(RandomRequestId))
        .with_state(state)
}

async fn not_found() -> Response {
    ApiError::not_found("no such route").into_response()
}

async fn method_not_allowed() -> Response {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request",
        "method not allowed on this route",
    )
    .into_response()
}
