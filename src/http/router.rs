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
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::TraceLayer;

use super::middleware::{
    RandomRequestId, limit, observe, panic_response, plain_request_id, refuse_control_characters,
};
use super::ops::{healthz, metrics, readyz};
use super::security_headers::security_headers;
use super::state::AppState;
use crate::error::ApiError;

/// The whole HTTP surface of the process.
pub fn router(state: AppState) -> Router {
    let body_read_timeout = state.body_read_timeout;
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
        .layer(from_fn(refuse_control_characters))
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
            // The path too: a client chooses it (quoted, cut at 200).
            let path = crate::log_safe::LogSafe(req.uri().path());
            // Checked hex digits (`super::trace`), or "-".
            let trace_id = req
                .extensions()
                .get::<super::trace::RequestTrace>()
                .map_or("-", |t| t.context.trace_id.as_str());
            tracing::info_span!("request", method = %req.method(), path = %path, request_id = %id, trace_id = %trace_id)
        }))
        // Before the span is made: it names the request's trace.
        .layer(from_fn(super::trace::trace_context))
        .layer(SetRequestIdLayer::x_request_id(RandomRequestId))
        // Before a request id is set: an incoming one that is long or not
        // plain text is dropped (and a fresh one made) rather than echoed
        // and logged.
        .layer(from_fn(plain_request_id))
        // Every body read, whichever extractor reads it, ends after this
        // long (408); see `super::serve` for the header-read timeout.
        .layer(RequestBodyTimeoutLayer::new(body_read_timeout))
        .with_state(state)
}

async fn not_found() -> Response {
    ApiError::not_found("no such route").into_response()
}

/// A method the route does not take. A browser that lands on a console
/// address only a form posts to (reloading a refused form, switching the
/// language there, a bookmark) is sent to the page the form belongs to,
/// the address without its last segment, instead of an error; the API
/// answers 405 as JSON.
async fn method_not_allowed(req: Request) -> Response {
    let path = req.uri().path();
    if matches!(
        *req.method(),
        axum::http::Method::GET | axum::http::Method::HEAD
    ) && path.starts_with("/console/")
        && let Some((parent, _)) = path.trim_end_matches('/').rsplit_once('/')
        && parent.starts_with("/console")
    {
        // Staff accounts have no page of their own: their forms live on
        // the staff list.
        let to = if parent.starts_with("/console/staff/") {
            "/console/staff"
        } else {
            parent
        };
        return axum::response::Redirect::to(to).into_response();
    }
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request",
        "method not allowed on this route",
    )
    .into_response()
}
