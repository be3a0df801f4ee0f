//! `GET /api/v1/openapi.json`: the OpenAPI document, generated from the
//! handlers' annotations and the view types, so it cannot drift from code.

use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    campaigns, compensation, coupons, expirations, orders, self_check, support, templates,
};
use crate::error::{ErrorBody, ErrorDetail};
use crate::service::views::{
    CampaignView, CouponView, EventView, OrderView, QuoteView, TemplateView,
};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "couponkeeper", description = "Coupon lifecycle service: the contract of API.md"),
    paths(
        templates::create, templates::get, templates::list, templates::pause, templates::resume, templates::patch,
        coupons::claim, coupons::list, coupons::get, coupons::options,
        campaigns::create, campaigns::get, campaigns::list, campaigns::patch,
        orders::create, orders::list, orders::get, orders::pay, orders::deposit_payment,
        orders::final_payment_quote, orders::final_payment, orders::cancel, orders::refund,
        expirations::pending,
        support::health_check, support::release, support::invalidate, support::compensation, support::repair_link, support::mark_coupon_used, support::reconciliation,
        self_check::issue_link,
        compensation::get_rules, compensation::put_rules, compensation::ledger,
        crate::http::ops::healthz, crate::http::ops::readyz, crate::http::ops::metrics,
    ),
    components(schemas(
        TemplateView, CouponView, crate::service::jobs::PendingExpirations, crate::service::jobs::HourBucket, EventView, CampaignView, OrderView, QuoteView, ErrorBody, ErrorDetail,
        templates::CreateTemplateBody, templates::ClaimingBody, templates::PatchTemplateBody, crate::service::templates::TemplatePage, crate::service::views::StatusCounts, coupons::ClaimBody, coupons::CouponList, coupons::CartBody,
        crate::service::checkout::CouponOptions, crate::service::checkout::UsableCoupon, crate::service::checkout::UnusableCoupon, crate::service::checkout::OptionWarning,
        campaigns::CreateCampaignBody, campaigns::PatchCampaignBody, crate::service::campaigns::CampaignPage, crate::service::campaigns::CampaignListItem, crate::service::campaigns::CampaignOrderCounts, orders::CreateOrderBody, orders::ReasonBody, orders::EmptyBody, crate::service::orders::OrderPage,
        crate::service::support::HealthReport, crate::service::reconcile::ReconcileReport, crate::service::reconcile::AnomalyView, crate::service::support::CheckView, crate::service::support::ActionView,
        support::ReleaseBody, support::InvalidateBody, support::CompensationBody, support::RepairLinkBody, support::MarkUsedBody,
        self_check::SelfCheckLinkBody, crate::service::self_check::SelfCheckLink,
        compensation::RulesBody, compensation::PresetBody, crate::service::compensation::RulesView, crate::service::compensation::PresetView,
        crate::service::compensation::LedgerPage, crate::service::compensation::LedgerEntryView, crate::service::compensation::LedgerTotals,
    )),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
)]
pub struct ApiDoc;

pub async fn serve() -> Response {
    axum::Json(ApiDoc::openapi()).into_response()
}
