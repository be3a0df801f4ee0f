//! Presale campaigns (预售场次) for operators: the list
//! (`/console/campaigns`), a campaign's page (`/console/campaigns/{id}`:
//! its final-payment window, orders by status, locked coupons that will be
//! past their end when the window opens, the policy in words for staff and
//! in the customer's own words, the compensation mode, the history of
//! changes), the create form (`/console/campaigns/new`, times typed in the
//! business time zone), and the policy change: choose a policy, see a
//! preview of how many orders' final-payment outcome changes and the extra
//! compensation, confirm with a reason. The compensation mode changes the
//! same way, without a preview (it changes no outcome, only how the
//! compensation is given).
//!
//! Every staff role may read; operators and admins create and change (the
//! service enforces it; support sees no forms). A refused form comes back
//! (422) with what was typed and the message beside its field; a change
//! after the window opened is refused with the message at the policy (or
//! mode) field.

mod create;
pub(super) mod detail;
mod list;
mod mode;
mod policy;
mod words;

use axum::Router;
use axum::routing::get;

use crate::http::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(words::LIST, get(list::list))
        .route(words::NEW, get(create::new_page).post(create::create))
        .route("/console/campaigns/{id}", get(detail::detail))
        .route(
            "/console/campaigns/{id}/policy",
            get(policy::preview_page).post(policy::change_policy),
        )
        .route(
            "/console/campaigns/{id}/compensation-mode",
            get(mode::mode_page).post(mode::change_mode),
        )
}
