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

/// Longest incoming `X-Request-Id` kept.
pub const MAX_REQUEST_ID_CHARS: usize = 64;

/// Whether an incoming request id is kept: 1 to [`MAX_REQUEST_ID_CHARS`]
/// characters of ASCII letters, digits and `-`, `_`, `.`, `:` (what UUIDs,
/// trace ids and proxies' ids are made of).
pub fn plain_request_id_value(id: &str) -> bool {
    (1..=MAX_REQUEST_ID_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// Drops an incoming `X-Request-Id` that is not plain (see
/// [`plain_request_id_value`]), and every one when there are several, so
/// [`RandomRequestId`] makes a fresh id: a client's id is echoed in the
/// answer and written to every log line of the request, so it must be
/// short and unable to carry anything but an id.
pub async fn plain_request_id(mut req: Request, next: Next) -> Response {
    let headers = req.headers();
    let mut ids = headers.get_all("x-request-id").iter();
    let keep = match (ids.next(), ids.next()) {
        (None, _) => true,
        (Some(v), None) => v.to_str().is_ok_and(plain_request_id_value),
        (Some(_), Some(_)) => false,
    };
    if !keep {
        req.headers_mut().remove("x-request-id");
    }
    next.run(req).await
}

/// Refuses a page request whose path or query, once percent-decoded,
/// holds a control character (the query: other than tab and line breaks),
/// with 400 before any handler runs: `/console/orders/%00` would otherwise
/// reach the database, which cannot store or compare NUL on PostgreSQL.
/// The API checks its own parameters and answers in JSON
/// ([`crate::api::extract`]); this covers the pages.
pub async fn refuse_control_characters(req: Request, next: Next) -> Response {
    let uri = req.uri();
    if !uri.path().starts_with("/api/") && has_control_character(uri.path(), uri.query()) {
        tracing::info!(
            path = %crate::log_safe::LogSafe(uri.path()),
            "page request refused: a control character in the path or query"
        );
        return (
            StatusCode::BAD_REQUEST,
            Html(crate::web::layout::error_page(
                400,
                &crate::web::auth::form_control_character_message(),
            )),
        )
            .into_response();
    }
    next.run(req).await
}

/// Whether a percent-decoded path holds any control byte, or a decoded
/// query name or value a control character other than tab and line breaks.
fn has_control_character(path: &str, query: Option<&str>) -> bool {
    use crate::domain::text::forbidden_control;
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                i += 2;
                u8::from_str_radix(hex, 16).unwrap_or(b'%')
            }
            b => b,
        };
        if b < 0x20 || b == 0x7f {
            return true;
        }
        i += 1;
    }
    query.is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes())
            .any(|(k, v)| k.chars().any(forbidden_control) || v.chars().any(forbidden_control))
    })
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

#[cfg(test)]
mod tests {
    use super::{has_control_character, plain_request_id_value};

    #[test]
    fn encoded_nul_and_escape_in_a_path_or_query_are_found() {
        assert!(has_control_character("/console/orders/%00", None));
        assert!(has_control_character("/console/orders/a%1Bb", None));
        assert!(has_control_character("/console/search", Some("q=a%00")));
        assert!(has_control_character("/console/search", Some("q%00=a")));
        assert!(!has_control_character("/console/orders/P-1%20x", None));
        assert!(!has_control_character(
            "/console/search",
            Some("q=%E4%B8%AD+a%0A")
        ));
        // A lone or short escape is not a control character.
        assert!(!has_control_character("/console/a%", None));
        assert!(!has_control_character("/console/a%0", None));
        assert!(!has_control_character("/console/a%zz", None));
    }

    #[test]
    fn only_short_plain_request_ids_are_kept() {
        assert!(plain_request_id_value(
            "3f2a9c1e-7b4d-4e8a-9f00-1c2d3e4f5a6b"
        ));
        assert!(plain_request_id_value("trace:abc.DEF_1"));
        assert!(!plain_request_id_value(""));
        assert!(!plain_request_id_value(&"a".repeat(65)));
        assert!(!plain_request_id_value("a b"));
        assert!(!plain_request_id_value("a\"b"));
        assert!(!plain_request_id_value("id=1 staff=admin"));
    }
}
