//! Trace context on every request: the caller's W3C `traceparent` when it
//! sent one valid header, otherwise a trace of couponkeeper's own, so the
//! request's log span, its event rows and the webhooks it causes always
//! carry a trace id (see `docs/src/integration/tracing.md`).
//!
//! An invalid or repeated `traceparent` is ignored as if absent, never
//! refused: tracing must not turn a good request into an error. The answer
//! carries `traceparent` with the trace and this request's span id, so a
//! caller that sent none learns the trace id to look for.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

pub use crate::domain::trace::TRACEPARENT;
use crate::domain::trace::{
    TraceContext, parse_traceparent, span_id_from, trace_id_from, traceparent,
};

/// The trace of one request, in its extensions: what the log span, the
/// service's [`crate::service::Ctx`] and the answer's header read.
#[derive(Debug, Clone)]
pub struct RequestTrace {
    pub context: TraceContext,
    /// This request's span in the trace (a fresh id).
    pub span_id: String,
    /// Whether the trace came from the caller's `traceparent`.
    pub from_caller: bool,
}

impl RequestTrace {
    /// The caller's trace when `headers` hold exactly one valid
    /// `traceparent`, else a new one (not sampled: couponkeeper records no
    /// spans of its own).
    pub fn of(headers: &axum::http::HeaderMap) -> RequestTrace {
        let mut values = headers.get_all(TRACEPARENT).iter();
        let caller = match (values.next(), values.next()) {
            (Some(v), None) => v.to_str().ok().and_then(parse_traceparent),
            _ => None,
        };
        let span_id = span_id_from(rand::random());
        match caller {
            Some(p) => RequestTrace {
                context: p.context,
                span_id,
                from_caller: true,
            },
            None => RequestTrace {
                context: TraceContext {
                    trace_id: trace_id_from(rand::random()),
                    flags: 0,
                },
                span_id,
                from_caller: false,
            },
        }
    }
}

/// Puts the request's [`RequestTrace`] into its extensions (before the log
/// span is made, which names its trace id) and `traceparent` on the answer.
pub async fn trace_context(mut req: Request, next: Next) -> Response {
    let trace = RequestTrace::of(req.headers());
    let header = traceparent(&trace.context, &trace.span_id);
    req.extensions_mut().insert(trace);
    let mut resp = next.run(req).await;
    if let Ok(v) = HeaderValue::from_str(&header) {
        resp.headers_mut().insert(TRACEPARENT, v);
    }
    resp
}
