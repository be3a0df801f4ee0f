//! The JSON API of `API.md` under `/api/v1`. Handlers are thin: parse,
//! call one service function, render. The state they get, the router that
//! mounts these routes beside the pages, and the middleware around both are
//! in [`crate::http`].

pub mod activity;
pub mod bulk;
pub mod campaigns;
pub mod codes;
pub mod compensation;
pub mod coupons;
pub mod expirations;
pub mod extract;
pub mod openapi;
pub mod orders;
pub mod reminder_popups;
pub mod reports;
pub mod self_check;
pub mod support;
pub mod templates;

use axum::Router;
use axum::routing::{get, post};

use crate::http::AppState;

/// The API's routes, under `/api/v1`.
pub fn routes() -> Router<AppState> {
    let v1 = Router::new()
        .route("/templates", post(templates::create).get(templates::list))
        .route(
            "/templates/{id}",
            get(templates::get).patch(templates::patch),
        )
        .route("/templates/{id}/pause", post(templates::pause))
        .route("/templates/{id}/resume", post(templates::resume))
        .route(
            "/users/{user_id}/coupons",
            post(coupons::claim).get(coupons::list),
        )
        .route("/users/{user_id}/coupon-options", post(coupons::options))
        .route(
            "/users/{user_id}/reminder-popups/seen",
            post(reminder_popups::seen),
        )
        .route("/coupons/{id}", get(coupons::get))
        .route(
            "/presale-campaigns",
            post(campaigns::create).get(campaigns::list),
        )
        .route(
            "/presale-campaigns/{id}",
            get(campaigns::get).patch(campaigns::patch),
        )
        .route("/orders", post(orders::create).get(orders::list))
        .route("/orders/{order_no}", get(orders::get))
        .route("/orders/{order_no}/pay", post(orders::pay))
        .route(
            "/orders/{order_no}/deposit-payment",
            post(orders::deposit_payment),
        )
        .route(
            "/orders/{order_no}/final-payment-quote",
            get(orders::final_payment_quote),
        )
        .route(
            "/orders/{order_no}/final-payment",
            post(orders::final_payment),
        )
        .route("/orders/{order_no}/cancel", post(orders::cancel))
        .route("/orders/{order_no}/refund", post(orders::refund))
        .route(
            "/orders/{order_no}/refunds",
            post(orders::refund_lines).get(orders::list_refunds),
        )
        .route(
            "/orders/{order_no}/health-check",
            get(support::health_check),
        )
        .route("/reconciliation", get(support::reconciliation))
        .route("/coupons/{id}/release", post(support::release))
        .route(
            "/orders/{order_no}/repair-coupon-link",
            post(support::repair_link),
        )
        .route(
            "/orders/{order_no}/mark-coupon-used",
            post(support::mark_coupon_used),
        )
        .route(
            "/orders/{order_no}/return-coupon",
            post(support::return_coupon),
        )
        .route("/coupons/{id}/invalidate", post(support::invalidate))
        .route(
            "/users/{user_id}/compensation-coupons",
            post(support::compensation),
        )
        .route(
            "/users/{user_id}/self-check-link",
            post(self_check::issue_link),
        )
        .route(
            "/compensation-rules",
            get(compensation::get_rules).put(compensation::put_rules),
        )
        .route("/compensation-ledger", get(compensation::ledger))
        .route("/expirations/pending", get(expirations::pending))
        .route("/users/{user_id}/activity", post(activity::record))
        .route("/openapi.json", get(openapi::serve))
        .route("/templates/{id}/bulk-issues", post(bulk::start_issue))
        .route("/templates/{id}/bulk-void", post(bulk::start_void))
        .route("/jobs/{id}", get(bulk::get))
        .route("/jobs/{id}/results.csv", get(bulk::results))
        .route("/templates/{id}/report", get(reports::template))
        .route("/presale-campaigns/{id}/report", get(reports::campaign))
        .route("/templates/{id}/code-batches", post(codes::create_batch))
        .route("/code-batches/{id}", get(codes::get_batch))
        .route("/code-batches/{id}/codes.csv", get(codes::codes_csv))
        .route("/code-batches/{id}/void", post(codes::void_batch))
        .route("/users/{user_id}/redemptions", post(codes::redeem));

    Router::new().nest("/api/v1", v1)
}
