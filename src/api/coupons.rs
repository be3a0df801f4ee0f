//! Claiming and reading coupons: `POST /users/{user_id}/coupons`,
//! `GET /users/{user_id}/coupons`, `GET /coupons/{id}`, and the checkout
//! picker `POST /users/{user_id}/coupon-options`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::extract::{ApiCaller, JsonBody, PathParam, QueryParams, RequestMeta, respond};
use crate::domain::cart::{CartInput, CartSpec};
use crate::domain::coupon::CouponStatus;
use crate::domain::ids::{CouponId, TemplateId, UserId};
use crate::error::{ApiError, ErrorBody, api_lang};
use crate::http::AppState;
use crate::service::checkout::CouponOptions;
use crate::service::views::CouponView;

#[derive(Debug, Deserialize, ToSchema)]
pub struct ClaimBody {
    pub template_id: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Effective status: `available`, `locked`, `used`, `expired`, `invalidated`.
    pub status: Option<String>,
    /// 1-1000, default 200.
    pub limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CouponList {
    pub coupons: Vec<CouponView>,
}

fn user(raw: &str) -> Result<UserId, ApiError> {
    UserId::parse(raw).map_err(|e| ApiError::invalid(e.field, e.message))
}

#[utoipa::path(post, path = "/api/v1/users/{user_id}/coupons", operation_id = "claim_coupon", tag = "claiming",
    params(("user_id" = String, Path)),
    request_body = ClaimBody,
    responses((status = 201, body = CouponView), (status = 404, body = ErrorBody),
        (status = 409, description = "out_of_stock, claim_limit_reached, template_inactive", body = ErrorBody)))]
pub async fn claim(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(user_id): PathParam,
    body: JsonBody<ClaimBody>,
) -> Response {
    let user_id = match user(&user_id) {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    let template_id = match body.value.template_id {
        Some(t) if !t.is_empty() && t.chars().count() <= 64 => TemplateId::from_wire(t),
        _ => return ApiError::invalid("template_id", "is required").into_response(),
    };
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::CREATED);
    let result = s
        .service
        .claim(&meta.ctx(&caller), idem.as_ref(), user_id, template_id)
        .await;
    if let Err(crate::service::ServiceError::Refused { refusal, .. }) = &result {
        s.metrics.incr(refusal.code());
    } else if result.is_ok() {
        s.metrics.incr("claim");
    }
    respond(&s, idem.as_ref(), StatusCode::CREATED, result).await
}

#[utoipa::path(get, path = "/api/v1/users/{user_id}/coupons", operation_id = "list_user_coupons", tag = "claiming",
    params(("user_id" = String, Path), ListQuery),
    responses((status = 200, body = CouponList), (status = 400, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(user_id): PathParam,
    QueryParams(q): QueryParams<ListQuery>,
) -> Response {
    let user_id = match user(&user_id) {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    let status = match q.status.as_deref() {
        None | Some("") => None,
        Some(raw) => match CouponStatus::parse(raw) {
            Some(st) => Some(st),
            None => {
                return ApiError::invalid(
                    "status",
                    "must be one of available, locked, used, expired, invalidated",
                )
                .into_response();
            }
        },
    };
    let limit = q.limit.unwrap_or(200);
    if !(1..=1000).contains(&limit) {
        return ApiError::invalid("limit", "must be between 1 and 1000").into_response();
    }
    match s.service.list_user_coupons(user_id, status, limit).await {
        Ok(coupons) => axum::Json(CouponList { coupons }).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(get, path = "/api/v1/coupons/{id}", operation_id = "get_coupon", tag = "claiming",
    params(("id" = String, Path)),
    responses((status = 200, body = CouponView), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
) -> Response {
    match s.service.get_coupon(&CouponId::from_wire(id)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// A cart at checkout: the fields of `POST /orders` that decide a discount.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({"kind": "presale", "category": "phones", "total_cents": 399900,
    "campaign_id": "cmp_0190aabbccdd0011223344556677", "deposit_cents": 50000}))]
pub struct CartBody {
    /// `normal` or `presale`.
    pub kind: Option<String>,
    /// The single-category form, with `total_cents` (one line).
    pub category: Option<String>,
    pub total_cents: Option<i64>,
    /// 1-500 lines, in place of `category` and `total_cents`.
    pub lines: Option<Vec<super::orders::LineBody>>,
    /// Presale only.
    pub campaign_id: Option<String>,
    /// Presale only.
    pub deposit_cents: Option<i64>,
}

#[utoipa::path(post, path = "/api/v1/users/{user_id}/coupon-options", operation_id = "coupon_options", tag = "claiming",
    params(("user_id" = String, Path), ("Accept-Language" = Option<String>, Header, description = "`zh*`: messages in Chinese; otherwise English")),
    request_body = CartBody,
    responses(
        (status = 200, body = CouponOptions, example = json!({
            "best": "cpn_0190aabbccdd0011223344556677",
            "usable": [{"coupon": {"id": "cpn_0190aabbccdd0011223344556677", "code": "K7QM-3XPA-9RTD", "kind": "fixed", "value_cents": 5000, "min_order_cents": 30000, "status": "available"}, "discount_cents": 5000, "warning": null}],
            "unusable": [{"coupon": {"id": "cpn_0190aabbccdd8899aabbccddeeff", "code": "P2WX-7HNE-4KJC", "kind": "fixed", "value_cents": 10000, "min_order_cents": 500000, "status": "available"}, "reason": "threshold_not_met", "message": "Add ¥1001.00 more to use this coupon (minimum spend ¥5000.00).", "shortfall_cents": 100100}],
            "expiring_soon": {"count": 1, "earliest_ends_at": "2026-06-18T15:59:59.000Z", "total_value_cents": 5000},
            "reminder_popups": [{"id": "rms_0190aabbccdd0011223344556677", "message": "You have 1 coupon expiring today, worth 50.00 yuan in total.", "count": 1, "total_value_cents": 5000, "earliest_ends_at": "2026-06-18T15:59:59.000Z"}]
        })),
        (status = 400, description = "invalid_request with `field`", body = ErrorBody),
        (status = 404, description = "unknown campaign_id", body = ErrorBody),
        (status = 409, description = "outside_payment_window: the campaign's final-payment window has ended", body = ErrorBody)))]
pub async fn options(
    State(s): State<AppState>,
    _caller: ApiCaller,
    // Read-only, so nothing is recorded under an `Idempotency-Key`; the
    // header is still checked like on every POST.
    _meta: RequestMeta,
    PathParam(user_id): PathParam,
    body: JsonBody<CartBody>,
) -> Response {
    let user_id = match user(&user_id) {
        Ok(u) => u,
        Err(e) => return e.into_response(),
    };
    let b = body.value;
    let cart = CartInput {
        kind: b.kind,
        category: b.category,
        total_cents: b.total_cents,
        lines: b.lines.map(|ls| {
            ls.into_iter()
                .map(crate::domain::line::LineInput::from)
                .collect()
        }),
        campaign_id: b.campaign_id,
        deposit_cents: b.deposit_cents,
    };
    let result: Result<CouponOptions, _> = match CartSpec::parse(cart) {
        Ok(cart) => s.service.coupon_options(user_id, cart).await,
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(v) => axum::Json(v.in_language(api_lang())).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
