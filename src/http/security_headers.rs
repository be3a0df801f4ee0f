//! The response headers every answer of this server carries (OWASP ASVS
//! 14.4): a content security policy without inline script or style,
//! `nosniff`, no framing, a same-origin referrer, `no-store` for every
//! signed-in page and export, and HSTS behind TLS. One middleware around
//! the whole router, so a new page cannot forget them; a handler that set
//! a stricter value of its own (the self-check page's `no-referrer`, its
//! CSP without script) keeps it.

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use super::state::AppState;

/// The console's policy: scripts and styles from this origin only (no
/// inline ones, so an injected `<script>` or `style=` does nothing),
/// images from here or `data:`, forms post only here, never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// HSTS behind TLS (`COUPONKEEPER_SECURE_COOKIES=on`): a year, this host
/// only (subdomains may be other services of the shop).
pub const STRICT_TRANSPORT_SECURITY: &str = "max-age=31536000";

/// Paths whose answers are about a signed-in person or hold exported
/// data: never stored by the browser or a proxy.
fn private_path(path: &str) -> bool {
    path == "/login"
        || path == "/console"
        || path.starts_with("/console/")
        || path.starts_with("/self-check")
        || path.starts_with("/api/")
}

/// Adds the security headers to every response.
pub async fn security_headers(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let private = private_path(req.uri().path());
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    let mut set_default = |name: HeaderName, value: &'static str| {
        if !h.contains_key(&name) {
            h.insert(name, HeaderValue::from_static(value));
        }
    };
    set_default(header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY);
    set_default(header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set_default(header::X_FRAME_OPTIONS, "DENY");
    set_default(header::REFERRER_POLICY, "same-origin");
    if s.console.secure_cookies {
        set_default(header::STRICT_TRANSPORT_SECURITY, STRICT_TRANSPORT_SECURITY);
    }
    if private {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_in_pages_exports_and_the_api_are_private_and_static_files_are_not() {
        assert!(private_path("/console"));
        assert!(private_path("/console/coupons.csv"));
        assert!(private_path("/console/audit.csv"));
        assert!(private_path("/login"));
        assert!(private_path("/self-check"));
        assert!(private_path("/api/v1/coupons/x"));
        assert!(!private_path("/style/main.css"));
        assert!(!private_path("/console.js"));
        assert!(!private_path("/"));
    }
}
