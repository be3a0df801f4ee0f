//! Request extractors that turn every malformed input into a clear JSON
//! error instead of axum's plain-text rejections: bearer auth, the JSON
//! body (with the failing field named), path segments, query strings and
//! the `Idempotency-Key` header.

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Path, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::http::AppState;
pub use crate::http::state::ApiCaller;
use crate::service::idempotency::check_key;
use crate::service::{Ctx, Executed, IdempotencyRequest, ServiceError};

/// Largest request body accepted. Every body of the API is a small JSON
/// object; anything bigger is a mistake or an attack.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

impl<S> FromRequestParts<S> for ApiCaller
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = AppState::from_ref(state);
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(ApiError::unauthorized)?;
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(ApiError::unauthorized)?;
        app.authenticate(token).ok_or_else(ApiError::unauthorized)
    }
}

/// Method, path, request id and idempotency key of a request.
#[derive(Debug, Clone)]
pub struct RequestMeta {
    pub method: String,
    pub path: String,
    pub request_id: Option<String>,
    pub idempotency_key: Option<String>,
    /// The caller's TCP peer, when the server records it (`serve` does).
    pub address: Option<String>,
    /// The request's trace ([`crate::http::trace`]).
    pub trace: Option<crate::domain::trace::TraceContext>,
}

impl<S: Send + Sync> FromRequestParts<S> for RequestMeta {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let request_id = parts
            .headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(128).collect());
        let idempotency_key = match parts.headers.get("idempotency-key") {
            None => None,
            Some(v) => {
                let s = v
                    .to_str()
                    .map_err(|_| ApiError::invalid("Idempotency-Key", "must be visible ASCII"))?;
                Some(check_key(s).map_err(|m| ApiError::invalid("Idempotency-Key", m))?)
            }
        };
        // The client behind trusted proxies, as the limits middleware
        // resolved it (`None` for in-process callers without a socket).
        let address = parts
            .extensions
            .get::<crate::http::limits::ClientIp>()
            .and_then(|c| c.0)
            .map(|ip| ip.to_string());
        let trace = parts
            .extensions
            .get::<crate::http::trace::RequestTrace>()
            .map(|t| t.context.clone());
        Ok(RequestMeta {
            address,
            trace,
            method: parts.method.as_str().to_string(),
            path: parts.uri.path().to_string(),
            request_id,
            idempotency_key,
        })
    }
}

impl RequestMeta {
    pub fn ctx(&self, caller: &ApiCaller) -> Ctx {
        Ctx::new(caller.actor.clone(), self.request_id.clone())
            .with_address(self.address.clone())
            .with_trace(self.trace.clone())
    }

    /// The idempotency record for this request, if it carries a key.
    pub fn idempotency(
        &self,
        caller: &ApiCaller,
        body: &[u8],
        success: StatusCode,
    ) -> Option<IdempotencyRequest> {
        self.idempotency_key.as_ref().map(|k| {
            IdempotencyRequest::new(
                caller.scope.clone(),
                k.clone(),
                &self.method,
                &self.path,
                body,
                success.as_u16(),
            )
        })
    }
}

async fn read_body(req: Request) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            if body_timed_out(&e) {
                ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "invalid_request",
                    "the request body did not arrive in time",
                )
            } else {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "invalid_request",
                    format!("request body must be at most {MAX_BODY_BYTES} bytes"),
                )
            }
        })
}

/// Whether reading a body failed on the body-read timeout
/// (`COUPONKEEPER_BODY_READ_TIMEOUT_SECONDS`, [`crate::http::serve`]).
pub fn body_timed_out(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    // Bounded: an error chain is a handful of links.
    for _ in 0..8 {
        match source {
            Some(err) if err.is::<tower_http::timeout::TimeoutError>() => return true,
            Some(err) => source = err.source(),
            None => return false,
        }
    }
    false
}

/// A JSON body parsed into `T`, plus its raw bytes (for the idempotency
/// fingerprint). A type error names the field it happened in.
pub struct JsonBody<T> {
    pub value: T,
    pub raw: Bytes,
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let raw = read_body(req).await?;
        let value = parse_json(json_text(&raw))?;
        Ok(JsonBody { value, raw })
    }
}

/// The JSON text of a body: an empty body (no bytes at all) is `{}`, which
/// is how a body whose fields are all optional may be left out. Anything
/// else is parsed as sent, so a body of only spaces is not JSON and is
/// refused like any other malformed body.
pub fn json_text(raw: &[u8]) -> &[u8] {
    if raw.is_empty() { b"{}" } else { raw }
}

/// Parses JSON, reporting the path of the field at fault.
///
/// A number with a zero fraction (`5.0`, `1e3`) is read as the integer it
/// equals: JSON and the OpenAPI document's `integer` (JSON Schema) do not
/// tell them apart, so a field documented as an integer takes both.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!("request body is not a valid JSON object: {e}"))
    })?;
    // serde reads a struct from an array too (its fields by position):
    // `[]` or `["tpl_1"]` would pass as a body. Every body is an object.
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "request body is not a valid JSON object: expected an object",
        ));
    }
    if let Some(field) = nul_at(&value, "") {
        return Err(ApiError::invalid(field, NUL_REFUSED));
    }
    integral_floats_as_integers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path.is_empty() || path == "." {
            ApiError::bad_request(format!("request body is not a valid JSON object: {inner}"))
        } else {
            ApiError::invalid(path, inner.to_string())
        }
    })
}

/// Why a text with the NUL character is refused, everywhere: PostgreSQL
/// cannot store it (an error there, a 503), so both stores refuse it alike.
const NUL_REFUSED: &str = "must not contain the NUL character (U+0000)";

/// The path of the first string or key in `v` holding NUL (`""` for the
/// body itself). Depth is bounded by serde_json's nesting limit (128).
fn nul_at(v: &serde_json::Value, at: &str) -> Option<String> {
    let here = || {
        if at.is_empty() {
            "body".to_string()
        } else {
            at.to_string()
        }
    };
    match v {
        serde_json::Value::String(s) if s.contains('\0') => Some(here()),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_at(item, &format!("{}[{i}]", here()))),
        serde_json::Value::Object(map) => map.iter().find_map(|(k, item)| {
            let path = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            if k.contains('\0') {
                Some(here())
            } else {
                nul_at(item, &path)
            }
        }),
        _ => None,
    }
}

/// Rewrites every float with a zero fraction inside the `i64` range as
/// that integer, everywhere in `v`. Recursion is bounded by the body: at
/// most 64 KiB, and serde_json refuses nesting deeper than 128.
fn integral_floats_as_integers(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f)
            {
                // In range and whole (checked above): the cast is exact.
                *v = serde_json::Value::from(f as i64);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        serde_json::Value::Object(map) => map.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

/// Longest path segment accepted (an id, a user id, an order number).
pub const MAX_PATH_SEGMENT_CHARS: usize = 256;

/// A single path segment, with a JSON 400 for undecodable input.
pub struct PathParam(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(v) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(format!("invalid path: {e}")))?;
        if v.contains('\0') {
            return Err(ApiError::bad_request(format!("path segment {NUL_REFUSED}")));
        }
        // Characters, as the OpenAPI document's `maxLength` counts.
        if v.is_empty() || v.chars().count() > MAX_PATH_SEGMENT_CHARS {
            return Err(ApiError::bad_request(format!(
                "path segment must be 1-{MAX_PATH_SEGMENT_CHARS} characters"
            )));
        }
        Ok(PathParam(v))
    }
}

/// A query string parsed into `T`, with a JSON 400 naming the problem.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let q = parts.uri.query().unwrap_or("");
        if let Some((name, _)) =
            form_urlencoded::parse(q.as_bytes()).find(|(k, v)| k.contains('\0') || v.contains('\0'))
        {
            return Err(ApiError::invalid(name.replace('\0', ""), NUL_REFUSED));
        }
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(q.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(QueryParams)
            .map_err(|e| {
                let path = e.path().to_string();
                ApiError::invalid(
                    if path.is_empty() || path == "." {
                        "query".to_string()
                    } else {
                        path
                    },
                    e.into_inner().to_string(),
                )
            })
    }
}

/// Turns a service result into the HTTP answer: the fresh object with
/// `success`, a replayed first response with `Idempotent-Replayed: true`,
/// or the error (remembered under the key when a retry should replay it).
pub async fn respond<T: Serialize>(
    state: &AppState,
    idem: Option<&IdempotencyRequest>,
    success: StatusCode,
    result: Result<Executed<T>, ServiceError>,
) -> Response {
    match result {
        Ok(Executed::Fresh(v)) => (success, axum::Json(v)).into_response(),
        Ok(Executed::Replayed { status, body }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            (
                status,
                [
                    (axum::http::header::CONTENT_TYPE, "application/json"),
                    (
                        axum::http::HeaderName::from_static("idempotent-replayed"),
                        "true",
                    ),
                ],
                body,
            )
                .into_response()
        }
        Err(e) => {
            let err = ApiError::from(e);
            if let Some(i) = idem
                && err.is_replayable()
            {
                state
                    .service
                    .remember_refusal(i, err.status.as_u16(), err.body_json())
                    .await;
            }
            err.into_response()
        }
    }
}

/// The answer of a write for a path segment that names no row because it
/// is not even a well-formed key (an order number with a space): the
/// service used to look such a value up like any other and report `what`
/// not found, inside its write. So it still is, through the same write:
/// a reused `Idempotency-Key` is still reported as such, a first answer
/// replayed, and `respond` records the refusal as before.
pub async fn not_found_write<T>(
    state: &AppState,
    idem: Option<&IdempotencyRequest>,
    what: &'static str,
    raw: String,
) -> Result<Executed<T>, ServiceError>
where
    T: Serialize + Send + Sync + 'static,
{
    state
        .service
        .write(idem, move |_| {
            let e = ServiceError::not_found(what, raw.clone());
            Box::pin(async move { Err(e) })
        })
        .await
}

/// [`not_found_write`] for a read: the lookup's "not found", from the same
/// read (so a database outage still answers 503, not 404).
pub async fn not_found_read<T: Send>(
    state: &AppState,
    what: &'static str,
    raw: String,
) -> Result<T, ServiceError> {
    state
        .service
        .read(move |_| {
            let e = ServiceError::not_found(what, raw.clone());
            Box::pin(async move { Err(e) })
        })
        .await
}
