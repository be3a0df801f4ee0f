//! Coupon templates (券模板) in the console, on the same service functions
//! as `GET /templates`, `POST /templates`, `PATCH /templates/{id}` and
//! pause / resume:
//!
//! - `/console/templates`: the list, filtered by standing, kind and a part
//!   of the name (kept in the address), 50 per keyset page; each row with
//!   its rule in words, stock claimed / total / left and its coupons by
//!   effective status.
//! - `/console/templates/new`: the create form. Money is typed in yuan and
//!   turned into cents by [`Cents::parse_yuan`], times in the business time zone;
//!   "Preview" shows the rule in words ([`preview_words`]) without saving;
//!   a refused form comes back (422) as typed, each message beside its
//!   field.
//! - `/console/templates/{id}`: the numbers, a link to its coupons, its
//!   change history (the staff log), and for operators and admins the
//!   forms to pause / resume (with a reason), end claiming early (now or
//!   at a typed time) and make the safe edits (name, more stock). A
//!   refused form comes back on the page (422) with the reason beside the
//!   field; each action lands back on the page with a flash.
//!
//! Every staff role reads; managing is for operators and admins, enforced
//! in the service ([`viewer_may`] only decides which forms a
//! page shows).
//!
//! [`Cents::parse_yuan`]: crate::domain::money::Cents::parse_yuan
//! [`preview_words`]: crate::domain::template::preview_words
//! [`viewer_may`]: crate::web::context::viewer_may

mod actions;
mod create;
pub(super) mod detail;
mod list;
mod words;

pub(crate) use words::{budget_figures, budget_percent};

use axum::Router;
use axum::routing::{get, post};

use crate::http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(words::LIST, get(list::list))
        .route(words::NEW, get(create::new_form).post(create::create))
        .route("/console/templates/{id}", get(detail::detail))
        .route(
            "/console/templates/{id}/pause",
            post(|s, staff, id, body| actions::claiming(s, staff, id, body, true)),
        )
        .route(
            "/console/templates/{id}/resume",
            post(|s, staff, id, body| actions::claiming(s, staff, id, body, false)),
        )
        .route("/console/templates/{id}/edit", post(actions::edit))
        .route(
            "/console/templates/{id}/code-batches",
            post(actions::generate_codes),
        )
}
