//! Who is asking: the staff session behind every console page, the CSRF
//! checks behind every form, flash messages, and the sign-in, sign-out and
//! language-switch handlers.
//!
//! - The session cookie is HttpOnly and SameSite=Lax; with
//!   `COUPONKEEPER_SECURE_COOKIES=on` it is also Secure and named
//!   `__Host-ck_session` (so no subdomain can set it).
//! - Every state-changing request is a POST that must carry the session's
//!   CSRF token and must not come from another site (`Sec-Fetch-Site`, and
//!   `Origin` when present). The sign-in form, which has no session yet,
//!   uses a double-submit cookie instead, whose value the server signs
//!   ([`crate::domain::form_token`]) so a planted cookie is worthless.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use leptos::prelude::*;
use serde::Deserialize;

use super::components;
use super::cookie;
use super::i18n::{LANG_COOKIE, Lang};
use super::layout::{self, Flash, FlashKind};
use super::settings::ConsoleSettings;
use crate::domain::form_token;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::staff::{SignInError, StaffSession};

/// Session cookie name without TLS.
pub const SESSION_COOKIE: &str = "ck_session";
/// Session cookie name behind TLS: `__Host-` binds it to this host and path.
pub const SECURE_SESSION_COOKIE: &str = "__Host-ck_session";
/// The sign-in form's double-submit CSRF cookie (its value is signed, see
/// [`crate::domain::form_token`]).
pub const LOGIN_CSRF_COOKIE: &str = "ck_login_csrf";
/// The same behind TLS: `__Host-` so no subdomain or plain-http answer can
/// set it.
pub const SECURE_LOGIN_CSRF_COOKIE: &str = "__Host-ck_login_csrf";
/// One-shot message shown on the page after a redirect.
pub const FLASH_COOKIE: &str = "ck_flash";

/// Sign-in, sign-out and the language switch.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .route("/lang", post(switch_lang))
}

fn login_csrf_cookie_name(s: &ConsoleSettings) -> &'static str {
    if s.secure_cookies {
        SECURE_LOGIN_CSRF_COOKIE
    } else {
        LOGIN_CSRF_COOKIE
    }
}

fn session_cookie_name(s: &ConsoleSettings) -> &'static str {
    if s.secure_cookies {
        SECURE_SESSION_COOKIE
    } else {
        SESSION_COOKIE
    }
}

/// A `Set-Cookie` value with the attributes every cookie here shares.
pub fn set_cookie(
    s: &ConsoleSettings,
    name: &str,
    value: &str,
    max_age_seconds: Option<i64>,
) -> HeaderValue {
    let mut c = format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax");
    if let Some(age) = max_age_seconds {
        c.push_str(&format!("; Max-Age={age}"));
    }
    if s.secure_cookies {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).unwrap_or_else(|_| HeaderValue::from_static("invalid=; Max-Age=0"))
}

/// Only paths on this site, so `next=` cannot send anyone elsewhere.
pub fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with("/console")
                && !n.starts_with("//")
                && !n.contains('\\')
                && !n.chars().any(|c| c.is_control()) =>
        {
            n.to_string()
        }
        _ => "/console".to_string(),
    }
}

/// Where the language switch goes back to: a console page, the sign-in
/// page, or the self-check page (with its token); anything else is the
/// console home.
pub fn lang_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if (n.starts_with("/login") || n == "/self-check" || n.starts_with("/self-check?"))
                && !n.starts_with("//")
                && !n.contains('\\')
                && !n.chars().any(|c| c.is_control()) =>
        {
            n.to_string()
        }
        other => safe_next(other),
    }
}

/// A 303 redirect carrying a flash message.
pub fn redirect_with_flash(s: &ConsoleSettings, to: &str, flash: &Flash) -> Response {
    let mut r = Redirect::to(to).into_response();
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(s, FLASH_COOKIE, &flash.encode(), Some(60)),
    );
    r
}

/// Whether a request was sent by a page of this site (or typed into the
/// address bar), judged by `Sec-Fetch-Site` and, when present, `Origin`.
/// Browsers too old to send either are let through: the CSRF token still
/// stands.
pub fn same_site_request(headers: &HeaderMap) -> bool {
    let fetch_site_ok = match headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        None => true,
        Some(v) => matches!(v, "same-origin" | "none"),
    };
    let origin_ok = match (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        headers.get(header::HOST).and_then(|v| v.to_str().ok()),
    ) {
        (None, _) => true,
        (Some("null"), _) => false,
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
    };
    fetch_site_ok && origin_ok
}

/// A same-origin form post whose `Origin` the browser blanked to `null`:
/// it does so on pages with `Referrer-Policy: no-referrer` (the self-check
/// page, whose URL holds its token). `Sec-Fetch-Site: same-origin` is set
/// by the browser and cannot be forged by another site. Used by the
/// language switch only; console forms still need a real `Origin`.
pub fn same_origin_without_origin(headers: &HeaderMap) -> bool {
    headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("same-origin")
        && headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) == Some("null")
}

/// Compares two tokens in time independent of where they differ.
fn tokens_match(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && !a.is_empty()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Anyone: the language and flash of a request, for pages without a
/// session (sign-in).
pub struct Visitor {
    pub lang: Lang,
    pub flash: Option<Flash>,
    pub settings: ConsoleSettings,
}

impl FromRequestParts<AppState> for Visitor {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Visitor {
            lang: Lang::from_headers(&parts.headers),
            flash: cookie(&parts.headers, FLASH_COOKIE).and_then(|v| Flash::decode(&v)),
            settings: s.console.as_ref().clone(),
        })
    }
}

/// A signed-in staff member making this request: every console handler
/// takes one, so no console route can be reached without a live session.
/// The extractor leaves a copy in the request's extensions for
/// [`super::posted::Posted`], which checks the form against it.
#[derive(Clone)]
pub struct Staff {
    pub session: StaffSession,
    pub lang: Lang,
    pub flash: Option<Flash>,
    pub settings: ConsoleSettings,
    /// This request's path and query, for links back to it.
    pub here: String,
    /// Whether `Sec-Fetch-Site` / `Origin` say this came from our pages.
    same_site: bool,
    /// Client address, for the audit trail.
    pub address: String,
}

impl Staff {
    /// `staff:<name>`.
    pub fn actor(&self) -> String {
        self.session.actor()
    }

    /// Refuses a form whose CSRF token is missing or wrong, or that was
    /// posted from another site.
    pub fn check_csrf(&self, token: Option<&str>) -> Result<(), WebError> {
        if !self.same_site {
            return Err(WebError::forbidden(
                self.lang.t("this-request-came-from-another-site"),
            ));
        }
        match token {
            Some(t) if tokens_match(t, &self.session.csrf_token) => Ok(()),
            _ => Err(WebError::forbidden(
                self.lang.t("the-form-has-expired-security-token"),
            )),
        }
    }

    /// Whether this staff member's role holds `permission`: which forms
    /// and buttons a page offers (the service decides again).
    pub fn may(&self, permission: crate::domain::permissions::Permission) -> bool {
        crate::domain::permissions::may(self.session.role, permission)
    }

    /// The authority the staff member's actions run on.
    pub fn authority(&self) -> crate::service::support::Authority {
        crate::service::support::Authority::Staff {
            name: self.session.name.clone(),
            role: self.session.role,
        }
    }

    /// The context of the staff member's actions: actor `staff:<name>` and
    /// the client address, for the event rows.
    pub fn ctx(&self) -> crate::service::Ctx {
        crate::service::Ctx::new(self.actor(), None).with_address(Some(self.address.clone()))
    }

    /// Parses a posted form after checking its CSRF token (and that it came
    /// from our pages); either failure is the response to send.
    pub fn posted<T: serde::de::DeserializeOwned>(&self, body: &Bytes) -> Result<T, WebError> {
        #[derive(Deserialize)]
        struct Token {
            csrf: Option<String>,
        }
        let token: Token = parse_form(body)?;
        self.check_csrf(token.csrf.as_deref())?;
        parse_form(body)
    }

    /// A full page response; clears the flash it showed. `body` builds
    /// the page's content inside the page's context (language, who is
    /// signed in), so it is a closure: a component built before would find
    /// no context.
    pub fn page<V: IntoView + 'static>(
        &self,
        title: &str,
        body: impl FnOnce() -> V + Send + 'static,
    ) -> Response {
        let html = components::render(
            &self.session,
            self.lang,
            &self.here,
            self.flash.as_ref(),
            title,
            body,
        );
        let mut r = Html(html).into_response();
        if self.flash.is_some() {
            r.headers_mut().append(
                header::SET_COOKIE,
                set_cookie(&self.settings, FLASH_COOKIE, "", Some(0)),
            );
        }
        r
    }

    /// Redirect after a successful action, with a flash message.
    pub fn done(&self, to: &str, text: String) -> Response {
        redirect_with_flash(&self.settings, to, &Flash::new(FlashKind::Ok, text))
    }

    /// Redirect after a refused action, with the reason as a flash message.
    pub fn refused(&self, to: &str, text: String) -> Response {
        redirect_with_flash(&self.settings, to, &Flash::new(FlashKind::Error, text))
    }
}

/// The client's address as the limits middleware resolved it (the TCP
/// peer, or the forwarded client behind a trusted proxy), else `unknown`.
fn client_address(parts: &Parts) -> String {
    parts
        .extensions
        .get::<crate::http::limits::ClientIp>()
        .map(|c| c.text())
        .unwrap_or_else(|| "unknown".to_string())
}

impl FromRequestParts<AppState> for Staff {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, Self::Rejection> {
        let settings = s.console.as_ref().clone();
        let lang = Lang::from_headers(&parts.headers);
        let here = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| "/console".to_string());
        let token = cookie(&parts.headers, session_cookie_name(&settings));
        let session = match token {
            Some(t) => s
                .service
                .session(&t, settings.session)
                .await
                .map_err(|e| WebError::from_service(lang, e).into_response())?,
            None => None,
        };
        let Some(session) = session else {
            let next = if parts.method == Method::GET {
                here.clone()
            } else {
                "/console".to_string()
            };
            let to = format!(
                "/login?next={}",
                form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
            );
            return Err(Redirect::to(&to).into_response());
        };
        remember_page_context(&session, lang, &here);
        let staff = Staff {
            session,
            lang,
            flash: cookie(&parts.headers, FLASH_COOKIE).and_then(|v| Flash::decode(&v)),
            settings,
            here,
            same_site: same_site_request(&parts.headers),
            address: client_address(parts),
        };
        parts.extensions.insert(staff.clone());
        Ok(staff)
    }
}

tokio::task_local! {
    /// The signed-in staff member of the console request being served,
    /// set by the [`Staff`] extractor, so an error page can keep the
    /// navigation and search and speak the page's language. Scoped per
    /// request by [`with_page_context`].
    static PAGE_CONTEXT: std::cell::RefCell<Option<(StaffSession, Lang, String)>>;
}

/// Middleware: gives each request an empty page context for [`Staff`] to
/// fill (see [`PAGE_CONTEXT`]).
pub async fn with_page_context(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    PAGE_CONTEXT
        .scope(std::cell::RefCell::new(None), next.run(req))
        .await
}

fn remember_page_context(session: &StaffSession, lang: Lang, here: &str) {
    // Outside a scope (a test calling the extractor directly) there is
    // nothing to remember into.
    let _ = PAGE_CONTEXT.try_with(|c| {
        *c.borrow_mut() = Some((session.clone(), lang, here.to_string()));
    });
}

fn page_context() -> Option<(StaffSession, Lang, String)> {
    PAGE_CONTEXT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// An error page.
#[derive(Debug)]
pub struct WebError {
    pub status: StatusCode,
    pub message: String,
}

impl WebError {
    pub fn forbidden(message: &str) -> Self {
        WebError {
            status: StatusCode::FORBIDDEN,
            message: message.to_string(),
        }
    }

    pub fn bad_request(message: String) -> Self {
        WebError {
            status: StatusCode::BAD_REQUEST,
            message,
        }
    }

    /// 503: the server cannot take this now; the caller adds
    /// `Retry-After`.
    pub fn unavailable(message: String) -> Self {
        WebError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message,
        }
    }

    pub fn not_found(lang: Lang, what: &str) -> Self {
        WebError {
            status: StatusCode::NOT_FOUND,
            message: format!("{}: {what}", lang.t("not-found")),
        }
    }

    /// "找不到订单 DEMO-X-1234" / "Order DEMO-X-1234 was not found", in
    /// the page's language.
    pub fn missing(lang: Lang, what: &str, id: &str) -> Self {
        let what_key = match what {
            "order" => "what-order",
            "coupon" => "what-coupon",
            "presale campaign" => "what-campaign",
            "template" => "what-template",
            "finding" => "what-finding",
            "staff" => "what-staff",
            "delivery" | "outbox message" => "what-delivery",
            "code batch" => "what-code-batch",
            "support request" => "what-support-request",
            _ => "what-page",
        };
        WebError {
            status: StatusCode::NOT_FOUND,
            message: crate::tr!(lang, "not-found-thing", what = lang.t(what_key), id = id),
        }
    }

    /// The page for a service error. Database trouble is logged here, once,
    /// and shown as "try again"; refusals show their message.
    pub fn from_service(lang: Lang, e: ServiceError) -> Self {
        match e {
            ServiceError::NotFound { what, id } => WebError::missing(lang, what, &id),
            ServiceError::Refused { refusal, .. } => WebError {
                status: StatusCode::CONFLICT,
                message: lang.t(refusal.message_key()).to_string(),
            },
            ServiceError::Invalid(f) => {
                WebError::bad_request(format!("{}: {}", f.field, f.message))
            }
            ServiceError::Db(err) => {
                tracing::error!(error = %err, "console: database error");
                WebError {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    message: lang.t("the-database-is-unavailable-try-again").to_string(),
                }
            }
            ServiceError::Forbidden(m) => WebError {
                status: StatusCode::FORBIDDEN,
                message: m,
            },
            other => WebError {
                status: StatusCode::CONFLICT,
                message: other.to_string(),
            },
        }
    }
}

impl IntoResponse for WebError {
    /// Inside the console (a staff member is signed in), the error page
    /// keeps the header, navigation and search and is in the page's
    /// language; elsewhere it is the bare page in both languages.
    fn into_response(self) -> Response {
        let body = match page_context() {
            Some((session, lang, here)) => {
                let title = lang
                    .t(layout::error_title_key(self.status.as_u16()))
                    .to_string();
                let message = self.message.clone();
                let heading = format!("{} {title}", self.status.as_u16());
                components::render(&session, lang, &here, None, &title, move || {
                    leptos::view! {
                        <section class="error-page" data-testid="error-page">
                            <h2>{heading}</h2>
                            <p data-testid="error-message">{message}</p>
                            <p><a href="/console">{lang.t("console-home")}</a></p>
                        </section>
                    }
                })
            }
            None => layout::error_page(self.status.as_u16(), &self.message),
        };
        (self.status, Html(body)).into_response()
    }
}

/// Parses an urlencoded form body; a malformed one is a 400 page, and one
/// whose names or values hold a control character other than tab and line
/// breaks (NUL, ESC, DEL, ...) a 422 page: such text cannot be typed,
/// PostgreSQL cannot store NUL, and nothing of the form is used.
pub fn parse_form<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, WebError> {
    use crate::domain::text::forbidden_control;
    if let Some((name, _)) = form_urlencoded::parse(body)
        .find(|(k, v)| k.chars().any(forbidden_control) || v.chars().any(forbidden_control))
    {
        tracing::info!(field = %crate::log_safe::LogSafe(&name), "form refused: a control character in a field");
        return Err(WebError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message: form_control_character_message(),
        });
    }
    serde_urlencoded::from_bytes(body)
        .map_err(|e| WebError::bad_request(format!("malformed form: {e}")))
}

/// The refusal of text holding a control character, in both languages
/// (the page's language is not known where forms and addresses are read).
pub fn form_control_character_message() -> String {
    format!(
        "{} · {}",
        Lang::Zh.t("control-character-refused"),
        Lang::En.t("control-character-refused")
    )
}

#[derive(Deserialize)]
struct NextQuery {
    next: Option<String>,
}

async fn login_page(
    State(s): State<AppState>,
    visitor: Visitor,
    headers: HeaderMap,
    Query(q): Query<NextQuery>,
) -> Response {
    let settings = s.console.as_ref().clone();
    // Already signed in: straight to the console.
    if let Some(t) = cookie(&headers, session_cookie_name(&settings))
        && let Ok(Some(_)) = s.service.session(&t, settings.session).await
    {
        return Redirect::to(&safe_next(q.next.as_deref())).into_response();
    }
    let key = match s.service.login_form_key().await {
        Ok(k) => k,
        Err(e) => return WebError::from_service(visitor.lang, e).into_response(),
    };
    let now = s.service.now();
    // Keep a token this browser already holds while it has ten minutes
    // left (two tabs of the form both work), else sign a new one.
    let csrf = cookie(&headers, login_csrf_cookie_name(&settings))
        .filter(|c| form_token::expires_at(&key, c).is_some_and(|exp| exp - now.timestamp() > 600))
        .unwrap_or_else(|| {
            form_token::sign(&key, &format!("{:032x}", rand::random::<u128>()), now)
        });
    let html = components::login_page(
        visitor.lang,
        visitor.flash.as_ref(),
        &csrf,
        &safe_next(q.next.as_deref()),
    );
    let mut r = Html(html).into_response();
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            &settings,
            login_csrf_cookie_name(&settings),
            &csrf,
            Some(form_token::LOGIN_FORM_SECONDS),
        ),
    );
    if visitor.flash.is_some() {
        r.headers_mut().append(
            header::SET_COOKIE,
            set_cookie(&settings, FLASH_COOKIE, "", Some(0)),
        );
    }
    r
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    csrf: Option<String>,
    next: Option<String>,
}

async fn login(
    State(s): State<AppState>,
    visitor: Visitor,
    ConnectInfoOpt(address): ConnectInfoOpt,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let settings = visitor.settings.clone();
    let lang = visitor.lang;
    let form: LoginForm = match parse_form(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let next = safe_next(form.next.as_deref());
    let back = format!(
        "/login?next={}",
        form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
    );
    let key = match s.service.login_form_key().await {
        Ok(k) => k,
        Err(e) => return WebError::from_service(lang, e).into_response(),
    };
    let cookie_token = cookie(&headers, login_csrf_cookie_name(&settings));
    let csrf_ok = match (&cookie_token, &form.csrf) {
        (Some(c), Some(f)) => tokens_match(c, f) && form_token::verify(&key, f, s.service.now()),
        _ => false,
    };
    if !same_site_request(&headers) || !csrf_ok {
        return redirect_with_flash(
            &settings,
            &back,
            &Flash::new(
                FlashKind::Error,
                lang.t("the-sign-in-form-expired-please").to_string(),
            ),
        );
    }
    match s
        .service
        .sign_in(&form.name, &form.password, &address, settings.session)
        .await
    {
        Ok(signed_in) => {
            let mut r = Redirect::to(&next).into_response();
            let h = r.headers_mut();
            h.append(
                header::SET_COOKIE,
                set_cookie(
                    &settings,
                    session_cookie_name(&settings),
                    &signed_in.token,
                    None,
                ),
            );
            h.append(
                header::SET_COOKIE,
                set_cookie(&settings, login_csrf_cookie_name(&settings), "", Some(0)),
            );
            r
        }
        Err(e) => {
            let text = match e {
                SignInError::BadCredentials => lang.t("wrong-name-or-password"),
                SignInError::RateLimited => lang.t("too-many-failed-attempts-try-again"),
                SignInError::Busy => return password_checks_busy(lang),
                SignInError::Service(e) => {
                    return WebError::from_service(lang, e).into_response();
                }
            };
            redirect_with_flash(
                &settings,
                &back,
                &Flash::new(FlashKind::Error, text.to_string()),
            )
        }
    }
}

#[derive(Deserialize)]
struct CsrfForm {
    csrf: Option<String>,
}

/// Every password slot stayed busy (a burst of sign-ins): 503 with
/// `Retry-After`, nothing checked or counted.
fn password_checks_busy(lang: Lang) -> Response {
    let seconds = crate::service::passwords::BUSY_RETRY_AFTER_SECONDS;
    let mut r = (
        StatusCode::SERVICE_UNAVAILABLE,
        Html(crate::web::layout::error_page(
            503,
            &crate::tr!(lang, "password-checks-busy-retry-after", seconds = seconds),
        )),
    )
        .into_response();
    if let Ok(v) = axum::http::HeaderValue::from_str(&seconds.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

async fn logout(
    State(s): State<AppState>,
    staff: Staff,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form: CsrfForm = match parse_form(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = staff.check_csrf(form.csrf.as_deref()) {
        return e.into_response();
    }
    let name = session_cookie_name(&staff.settings);
    if let Some(t) = cookie(&headers, name)
        && let Err(e) = s.service.sign_out(&t, Some(&staff.address)).await
    {
        return WebError::from_service(staff.lang, e).into_response();
    }
    tracing::info!(staff = %staff.session.name, "staff signed out");
    let mut r = redirect_with_flash(
        &staff.settings,
        "/login",
        &Flash::new(
            FlashKind::Ok,
            staff.lang.t("you-are-signed-out").to_string(),
        ),
    );
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&staff.settings, name, "", Some(0)),
    );
    r
}

#[derive(Deserialize)]
struct LangForm {
    lang: Option<String>,
    next: Option<String>,
}

/// Remembers the language choice in a cookie (a preference of this
/// browser, not server state) and goes back.
async fn switch_lang(visitor: Visitor, headers: HeaderMap, body: Bytes) -> Response {
    let form: LangForm = match parse_form(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    if !same_site_request(&headers) && !same_origin_without_origin(&headers) {
        return WebError::forbidden("cross-site request refused").into_response();
    }
    let lang = form
        .lang
        .as_deref()
        .and_then(Lang::parse)
        .unwrap_or(visitor.lang);
    let next = lang_next(form.next.as_deref());
    let mut r = Redirect::to(&next).into_response();
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(
            &visitor.settings,
            LANG_COOKIE,
            lang.code(),
            Some(365 * 24 * 3600),
        ),
    );
    r
}

/// The client's address when the server was started with connect info
/// (`serve` does; in-process tests do not), else `unknown`.
pub struct ConnectInfoOpt(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ConnectInfoOpt {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ConnectInfoOpt(client_address(parts)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_may_only_point_into_the_console() {
        assert_eq!(safe_next(Some("/console/coupons/x")), "/console/coupons/x");
        assert_eq!(safe_next(Some("https://evil.example/")), "/console");
        assert_eq!(safe_next(Some("//evil.example")), "/console");
        assert_eq!(safe_next(Some("/console\\..")), "/console");
        assert_eq!(safe_next(None), "/console");
    }

    #[test]
    fn the_language_switch_returns_to_console_sign_in_or_self_check_only() {
        assert_eq!(
            lang_next(Some("/self-check?t=v1.a.1.ff&check=1")),
            "/self-check?t=v1.a.1.ff&check=1"
        );
        assert_eq!(
            lang_next(Some("/login?next=%2Fconsole")),
            "/login?next=%2Fconsole"
        );
        assert_eq!(lang_next(Some("/console/x")), "/console/x");
        assert_eq!(lang_next(Some("/self-checker")), "/console");
        assert_eq!(lang_next(Some("/self-check?\\evil")), "/console");
        assert_eq!(lang_next(Some("/self-check?t=a\nb")), "/console");
        assert_eq!(
            lang_next(Some("https://evil.example/self-check?")),
            "/console"
        );
        assert_eq!(lang_next(None), "/console");
    }

    #[test]
    fn cross_site_posts_are_recognised() {
        let mut h = HeaderMap::new();
        assert!(same_site_request(&h));
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_site_request(&h));
        h.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:3000"));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:3000"),
        );
        assert!(same_site_request(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_site_request(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_site_request(&h));
        assert!(same_origin_without_origin(&h));
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_origin_without_origin(&h));
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(tokens_match("abc", "abc"));
        assert!(!tokens_match("abc", "abd"));
        assert!(!tokens_match("", ""));
        assert!(!tokens_match("abc", "abcd"));
    }
}
