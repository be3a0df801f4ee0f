//! Server-rendered pages: leptos SSR on the same axum server, no WASM and
//! no JavaScript required (forms post to the server, which answers with a
//! redirect and a flash message: post/redirect/get).
//!
//! - `/`: the public front page (what this service is, whether its
//!   database answers).
//! - `/login`, `/logout`, `/lang`: sign-in, sign-out, the language switch
//!   ([`auth`]).
//! - `/console/...`: the support console ([`console`]), every page behind a
//!   staff session, every form behind a CSRF token; the pending-expirations
//!   dashboard ([`dashboard`]), the audit log ([`audit`]) and
//!   reconciliation ([`reconcile`]), webhook deliveries ([`deliveries`])
//!   and subscribers ([`webhooks`]), the reminder plan ([`reminders`]),
//!   changing one's own password ([`password`]).
//! - `/self-check?t=<token>`: the customers' self-check page
//!   ([`self_check`]), opened only through a signed link.
//!
//! Pages call the same [`crate::service`] functions as the JSON API; no
//! rule lives here. Every console address that names something is written
//! once, in `paths`.

pub mod actions;
pub mod audit;
pub mod auth;
pub mod bulk;
pub mod campaigns;
pub mod categories;
pub mod codes;
pub mod compensation;
pub mod components;
pub mod console;
pub mod context;
pub mod dashboard;
pub mod deliveries;
mod document;
pub mod home;
pub mod i18n;
pub(crate) mod ids;
pub mod layout;
pub mod order_cart;
pub mod orders;
pub mod password;
pub(crate) mod paths;
pub mod posted;
pub mod presets;
pub mod reconcile;
pub mod reminders;
pub mod reports;
pub mod self_check;
pub mod self_check_popups;
pub mod settings;
pub mod staff_admin;
pub mod support_requests;
pub mod templates;
pub mod try_cart;
pub mod wakeup;
pub mod webhooks;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;

pub use document::{cookie, document, document_in, escape_html};

use crate::http::AppState;
use crate::i18n::Lang;

/// The stylesheet, compiled into the binary so `cargo run` from any folder
/// serves it.
const STYLE_CSS: &str = include_str!("../../style/main.css");
/// The site icon.
const FAVICON_SVG: &str = include_str!("../../public/favicon.svg");
/// Optional enhancements (the `/` search shortcut); every page works
/// without it.
const CONSOLE_JS: &str = include_str!("../../public/console.js");

/// Routes of the pages and their static files.
/// Middleware: the request's times are shown in the business time zone
/// (`COUPONKEEPER_BUSINESS_TZ`), see [`crate::i18n::zone`].
pub async fn in_business_zone(
    State(s): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let tz = s.service.settings().reminders.tz;
    let path = req.uri().path();
    let page = path.starts_with("/console") || path.starts_with("/self-check");
    // A page's category codes by their names; when the names cannot be
    // read the codes are shown (the page itself will say what is wrong).
    let names = if page {
        s.service.category_names().await.unwrap_or_default()
    } else {
        Default::default()
    };
    crate::i18n::zone::scope(
        tz,
        crate::i18n::names::scope(names, auth::with_page_context(req, next)),
    )
    .await
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(front_page))
        .route("/style/main.css", get(stylesheet))
        .route("/favicon.svg", get(favicon))
        .route("/console.js", get(script))
        .merge(auth::routes())
        .merge(home::routes())
        .merge(console::routes())
        .merge(orders::routes())
        .merge(actions::routes())
        .merge(reconcile::routes())
        .merge(support_requests::routes())
        .merge(staff_admin::routes())
        .merge(password::routes())
        .merge(self_check::routes())
        .merge(dashboard::routes())
        .merge(audit::routes())
        .merge(compensation::routes())
        .merge(deliveries::routes())
        .merge(webhooks::routes())
        .merge(reminders::routes())
        .merge(templates::routes())
        .merge(campaigns::routes())
        .merge(wakeup::routes())
        .merge(bulk::routes())
        .merge(reports::routes())
        .merge(codes::routes())
        .merge(categories::routes())
        .route("/console/{*rest}", axum::routing::any(console_not_found))
}

/// Any `/console/…` address no page answers: the console's own 404 page
/// (with navigation, in the page's language), never the API's JSON.
async fn console_not_found(staff: auth::Staff, uri: axum::http::Uri) -> Response {
    auth::WebError::missing(staff.lang, "page", uri.path()).into_response()
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        STYLE_CSS,
    )
        .into_response()
}

async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        CONSOLE_JS,
    )
        .into_response()
}

async fn favicon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        FAVICON_SVG,
    )
        .into_response()
}

/// What the front page reports.
#[derive(Debug, Clone)]
pub struct FrontPage {
    pub store: &'static str,
    pub database_ok: bool,
    pub version: &'static str,
}

async fn front_page(State(s): State<AppState>) -> Response {
    let database_ok = crate::http::ops::probe(&s.service).await.is_ok();
    let page = FrontPage {
        store: s.service.db().backend().name(),
        database_ok,
        version: env!("CARGO_PKG_VERSION"),
    };
    let status = if database_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Html(render_front_page(&page))).into_response()
}

/// Renders the front page to a complete HTML document.
pub fn render_front_page(p: &FrontPage) -> String {
    let p = p.clone();
    let body = Owner::new().with(move || view! { <Front page=p/> }.to_html());
    document("couponkeeper", &body)
}

#[component]
fn Front(page: FrontPage) -> impl IntoView {
    let (badge_class, badge_key) = if page.database_ok {
        ("badge badge-ok", "front-database-reachable")
    } else {
        ("badge badge-problem", "front-database-unreachable")
    };
    // The front page is read before any language is chosen: both, from
    // the catalog, Chinese first.
    let both = |key: &str| format!("{} · {}", Lang::Zh.t(key), Lang::En.t(key));
    view! {
        <header class="site-header">
            <h1>"couponkeeper"</h1>
            <p class="tagline">{both("front-tagline")}</p>
        </header>
        <main class="content">
            <section aria-labelledby="status-heading">
                <h2 id="status-heading">{both("front-status")}</h2>
                <dl class="facts">
                    <dt>{both("front-database")}</dt>
                    <dd>
                        <span class=badge_class data-testid="database-status">
                            {both(badge_key)}
                        </span>
                    </dd>
                    <dt>{both("front-store")}</dt>
                    <dd data-testid="store">{page.store}</dd>
                    <dt>{both("front-version")}</dt>
                    <dd>{page.version}</dd>
                </dl>
            </section>
            <section aria-labelledby="api-heading">
                <h2 id="api-heading">{both("front-api")}</h2>
                <ul class="links">
                    <li><a href="/console">{both("front-console")}</a></li>
                    <li><a href="/api/v1/openapi.json">{both("front-openapi")}</a></li>
                    <li><a href="/healthz">{both("front-healthz")}</a></li>
                    <li><a href="/readyz">{both("front-readyz")}</a></li>
                    <li><a href="/metrics">{both("front-metrics")}</a></li>
                </ul>
                <p class="note">
                    {both("front-api-note")}
                </p>
            </section>
        </main>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_page_names_the_store_and_the_database_state() {
        let html = render_front_page(&FrontPage {
            store: "sqlite",
            database_ok: true,
            version: "0.1.0",
        });
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("数据库正常"));
        assert!(html.contains(">sqlite<"));
        let down = render_front_page(&FrontPage {
            store: "postgres",
            database_ok: false,
            version: "0.1.0",
        });
        assert!(down.contains("数据库不可用"));
    }
}
