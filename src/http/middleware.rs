//! The middleware around every route: request ids, request metrics,
//! turning a panicking handler into a 503, and the client address and rate
//! limits ([`limit`], with the buckets of [`super::limits`]). The security
//! headers have their own module ([`super::security_headers`]).

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use tower_http::request_id::{MakeRequestId, RequestId};

use super::limits::{ClientIp, client_ip};
use super::state::AppState;
use crate::error::ApiError;

/// Request ids: 16 random hex digits, unless the caller sent one.
#[derive(Clone, Copy)]
pub struct RandomRequestId;

impl MakeRequestId for RandomRequestId {
    fn make_request_id<B>(&mut self, _req: &axum::http::Request<B>) -> Option<RequestId> {
        let id = format!("{:016x}", rand::random::<u64>());
        HeaderValue::from_str(&id).ok().map(RequestId::new)
    }
}

/// A handler panicked: logged once, answered as 503 (nothing was changed:
/// its transaction, if any, rolled back).
pub fn panic_response(_err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("request handler panicked");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "the request could not be completed; nothing was changed",
    )
    .into_response()
}

/// Counts every request by method, route and status, with its duration.
pub async fn observe(State(s): State<AppState>, req: Request, next: Next) -> Response {
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

/// Resolves the client's address into the request ([`ClientIp`]) and
/// answers 429 when its bucket is empty.
pub async fn limit(State(s): State<AppState>, mut req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let ip = ClientIp(client_ip(peer, req.headers(), s.limiters.trusted_proxies()));
    req.extensions_mut().insert(ip);
    if let Err(refused) = s
        .limiters
        .admit(req.method(), req.uri().path(), req.headers(), ip)
    {
        s.metrics.incr(refused.metric);
        return too_many(refused.api, refused.wait_seconds);
    }
    next.run(req).await
}

/// The 429 answer, with `Retry-After`.
fn too_many(api: bool, wait_seconds: u64) -> Response {
    let mut r = if api {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many requests; retry after {wait_seconds} s"),
        )
        .into_response()
    } else {
        (
            StatusCode::TOO_MANY_REQUESTS,
            Html(crate::web::layout::error_page(
                429,
                &format!(
                    "{} · {}",
                    crate::tr!(
                        crate::i18n::Lang::Zh,
                        "rate-limited-retry-after",
                        seconds = wait_seconds
                    ),
                    crate::tr!(
                        crate::i18n::Lang::En,
                        "rate-limited-retry-after",
                        seconds = wait_seconds
                    )
                ),
            )),
        )
            .into_response()
    };
    if let Ok(v) = HeaderValue::from_str(&wait_seconds.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}
