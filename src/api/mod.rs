//! The JSON API of `API.md` under `/api/v1`, plus `/healthz`, `/readyz` and
//! `/metrics`. Handlers are thin: parse, call one service function, render.

pub mod campaigns;
pub mod coupons;
pub mod expirations;
pub mod extract;
pub mod limits;
pub mod openapi;
pub mod orders;
pub mod self_check;
pub mod support;
pub mod templates;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sha2::{Digest, Sha256};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::TraceLayer;

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::idempotency::token_scope;
use extract::ApiCaller;

/// Everything a handler may use.
#[derive(Clone)]
pub struct AppState {
    pub service: Service,
    pub metrics: Arc<Metrics>,
    /// Console cookie and session settings.
    pub console: Arc<crate::web::ConsoleSettings>,
    /// The customers' self-check links: secret, public base URL, lifetime.
    pub self_check: Arc<crate::config::SelfCheckSettings>,
    /// SHA-256 of each configured API token; tokens themselves are not kept
    /// around longer than start-up.
    token_hashes: Arc<Vec<[u8; 32]>>,
    /// Request rate limits and the trusted proxies ([`limits`]).
    pub limiters: Arc<limits::Limiters>,
}

impl AppState {
    pub fn new(service: Service, metrics: Arc<Metrics>, tokens: &[String]) -> Self {
        let token_hashes = tokens
            .iter()
            .map(|t| Sha256::digest(t.as_bytes()).into())
            .collect();
        AppState {
            service,
            metrics,
            console: Arc::new(crate::web::ConsoleSettings::default()),
            self_check: Arc::new(crate::config::SelfCheckSettings::default()),
            token_hashes: Arc::new(token_hashes),
            limiters: Arc::new(limits::Limiters::default()),
        }
    }

    /// The same state with these rate limits and trusted proxies.
    pub fn with_limits(mut self, limits: &limits::HttpLimits) -> Self {
        self.limiters = Arc::new(limits::Limiters::new(limits));
        self
    }

    /// The same state with these console settings.
    pub fn with_console(mut self, console: crate::web::ConsoleSettings) -> Self {
        self.console = Arc::new(console);
        self
    }

    /// The same state with these self-check link settings.
    pub fn with_self_check(mut self, settings: crate::config::SelfCheckSettings) -> Self {
        self.self_check = Arc::new(settings);
        self
    }

    /// The caller a bearer token stands for. Compares hashes in constant
    /// time, so response timing says nothing about how close a guess was.
    pub fn authenticate(&self, token: &str) -> Option<ApiCaller> {
        let h: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = false;
        for known in self.token_hashes.iter() {
            let diff = known
                .iter()
                .zip(h.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            found |= diff == 0;
        }
        found.then(|| {
            let scope = token_scope(token);
            ApiCaller {
                actor: format!("api:{}", &scope[..12]),
                scope,
            }
        })
    }
}

/// The whole HTTP surface of the process.
pub fn router(state: AppState) -> Router {
    let v1 = Router::new()
        .route("/templates", post(templates::create))
        .route("/templates/{id}", get(templates::get))
        .route(
            "/users/{user_id}/coupons",
            post(coupons::claim).get(coupons::list),
        )
        .route("/coupons/{id}", get(coupons::get))
        .route("/presale-campaigns", post(campaigns::create))
        .route("/presale-campaigns/{id}", get(campaigns::get))
        .route("/orders", post(orders::create))
        .route("/orders/{order_no}", get(orders::get))
        .route("/orders/{order_no}/pay", post(orders::pay))
        .route(
            "/orders/{order_no}/deposit-payment",
            post(orders::deposit_payment),
        )
        .route(
            "/orders/{order_no}/final-payment-quote",
            get(orders::final_payment_quote),
        )
        .route(
            "/orders/{order_no}/final-payment",
            post(orders::final_payment),
        )
        .route("/orders/{order_no}/cancel", post(orders::cancel))
        .route("/orders/{order_no}/refund", post(orders::refund))
        .route(
            "/orders/{order_no}/health-check",
            get(support::health_check),
        )
        .route("/reconciliation", get(support::reconciliation))
        .route("/coupons/{id}/release", post(support::release))
        .route(
            "/orders/{order_no}/repair-coupon-link",
            post(support::repair_link),
        )
        .route(
            "/orders/{order_no}/mark-coupon-used",
            post(support::mark_coupon_used),
        )
        .route("/coupons/{id}/invalidate", post(support::invalidate))
        .route(
            "/users/{user_id}/compensation-coupons",
            post(support::compensation),
        )
        .route(
            "/users/{user_id}/self-check-link",
            post(self_check::issue_link),
        )
        .route("/expirations/pending", get(expirations::pending))
        .route("/openapi.json", get(openapi::serve));

    Router::new()
        .nest("/api/v1", v1)
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .merge(crate::web::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::web::in_business_zone,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(middleware::from_fn_with_state(state.clone(), limits::limit))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::web::security_headers::security_headers,
        ))
        // Outside the limits, so a 429 speaks the caller's language too.
        .layer(middleware::from_fn(crate::error::in_api_language))
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

/// Request ids: 16 random hex digits, unless the caller sent one.
#[derive(Clone, Copy)]
struct RandomRequestId;

impl MakeRequestId for RandomRequestId {
    fn make_request_id<B>(&mut self, _req: &axum::http::Request<B>) -> Option<RequestId> {
        let id = format!("{:016x}", rand::random::<u64>());
        HeaderValue::from_str(&id).ok().map(RequestId::new)
    }
}

fn panic_response(_err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("request handler panicked");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "the request could not be completed; nothing was changed",
    )
    .into_response()
}

async fn observe(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().as_str().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let resp = next.run(req).await;
    s.metrics.observe_request(
        &method,
        &route,
        resp.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    resp
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

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "service", responses((status = 200, description = "alive")))]
pub async fn healthz() -> Response {
    axum::Json(serde_json::json!({"status": "ok"})).into_response()
}

/// Readiness: the database answers.
#[utoipa::path(get, path = "/readyz", tag = "service",
    responses((status = 200, description = "ready"), (status = 503, description = "database unreachable")))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    match tokio::time::timeout(std::time::Duration::from_secs(3), s.service.db().ping()).await {
        Ok(Ok(())) => axum::Json(serde_json::json!({
            "status": "ready",
            "store": s.service.db().backend().name(),
        }))
        .into_response(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness check failed");
            ApiError::unavailable().into_response()
        }
        Err(_) => {
            tracing::warn!("readiness check timed out");
            ApiError::unavailable().into_response()
        }
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "service", responses((status = 200, description = "Prometheus text")))]
pub async fn metrics(State(s): State<AppState>) -> Response {
    // Gauges come from two indexed queries; a database outage leaves them
    // out rather than failing the scrape.
    let now = s.service.now();
    let gauges = match s.service.pending_expirations(3600).await {
        Ok(p) => Some(crate::metrics::ExpiryGauges {
            due_next_hour: p.total,
            overdue: p.overdue,
            oldest_overdue_age_seconds: p
                .oldest_overdue_ends_at
                .as_deref()
                .and_then(|t| crate::domain::time::parse_rfc3339(t).ok())
                .map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0)
                .unwrap_or(0.0),
        }),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: cannot read expiry gauges");
            None
        }
    };
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        s.metrics.render(gauges),
    )
        .into_response()
}
