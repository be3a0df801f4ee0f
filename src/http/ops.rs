//! The operator's endpoints outside the API: liveness (`/healthz`),
//! readiness (`/readyz`: 503 while draining, else through [`probe`], the
//! one readiness check; the front page shows its answer too) and
//! Prometheus metrics (`/metrics`).

use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::state::AppState;
use crate::error::ApiError;
use crate::service::Service;

/// Why the database is not ready.
#[derive(Debug)]
pub enum NotReady {
    /// The database answered with an error.
    Failed(sqlx::Error),
    /// The database did not answer within [`PROBE_TIMEOUT`].
    TimedOut,
}

/// How long the readiness probe waits for the database.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The readiness probe: the database answers a ping within
/// [`PROBE_TIMEOUT`].
pub async fn probe(service: &Service) -> Result<(), NotReady> {
    match tokio::time::timeout(PROBE_TIMEOUT, service.db().ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(NotReady::Failed(e)),
        Err(_) => Err(NotReady::TimedOut),
    }
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "service", responses((status = 200, description = "alive")))]
pub async fn healthz() -> Response {
    axum::Json(serde_json::json!({"status": "ok"})).into_response()
}

/// Readiness: the process is not draining and the database answers.
#[utoipa::path(get, path = "/readyz", tag = "service",
    responses((status = 200, description = "ready"), (status = 503, description = "database unreachable, or the process is draining after SIGTERM")))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    if s.draining.is_draining() {
        // Not a failure: `serve` logged the drain once when it began.
        return ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "this instance is shutting down and takes no new work",
        )
        .into_response();
    }
    match probe(&s.service).await {
        Ok(()) => axum::Json(serde_json::json!({
            "status": "ready",
            "store": s.service.db().backend().name(),
        }))
        .into_response(),
        Err(NotReady::Failed(e)) => {
            tracing::warn!(error = %e, "readiness check failed");
            ApiError::unavailable().into_response()
        }
        Err(NotReady::TimedOut) => {
            tracing::warn!("readiness check timed out");
            ApiError::unavailable().into_response()
        }
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "service", responses((status = 200, description = "Prometheus text")))]
pub async fn metrics(State(s): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let authorization = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !s.metrics_allowed(authorization) {
        let mut r = crate::error::ApiError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            "unauthorized",
            "/metrics needs the metrics token (COUPONKEEPER_METRICS_TOKEN)",
        )
        .into_response();
        r.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    // Gauges come from indexed queries (expiry; the webhook backlog) and
    // the database's clock; a database outage leaves them out rather than
    // failing the scrape.
    let now = s.service.now();
    let pending = s.service.pending_expirations(3600).await;
    let skew = s.service.clock_skew_ms().await;
    let gauges = match pending.and_then(|p| skew.map(|skew_ms| (p, skew_ms))) {
        Ok((p, skew_ms)) => Some(crate::metrics::ExpiryGauges {
            due_next_hour: p.total,
            overdue: p.overdue,
            oldest_overdue_age_seconds: p
                .oldest_overdue_ends_at
                .as_deref()
                .and_then(|t| crate::domain::time::parse_rfc3339(t).ok())
                .map(|t| (now - t).num_milliseconds().max(0) as f64 / 1000.0)
                .unwrap_or(0.0),
            clock_skew_seconds: skew_ms as f64 / 1000.0,
        }),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: cannot read expiry gauges");
            None
        }
    };
    let backlog = match s.service.webhook_backlog().await {
        Ok(b) => Some(b),
        Err(e) => {
            tracing::warn!(error = %e, "metrics: cannot read the webhook backlog");
            None
        }
    };
    let scrape = crate::metrics::Scrape {
        expiry: gauges,
        webhooks: backlog.as_ref(),
        queries: s.service.db().query_timings(),
    };
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        s.metrics.render_scrape(scrape),
    )
        .into_response()
}
