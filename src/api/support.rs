//! Support routes of API.md "Operations" and the order health check:
//! `GET /orders/{order_no}/health-check`, `POST /coupons/{id}/release`,
//! `POST /coupons/{id}/invalidate`,
//! `POST /users/{user_id}/compensation-coupons`, the repairs
//! `POST /orders/{order_no}/repair-coupon-link`,
//! `POST /orders/{order_no}/mark-coupon-used` and
//! `POST /orders/{order_no}/return-coupon`, and `GET /reconciliation`.
//! Thin: parse, call one service function with [`Authority::Api`], render.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{
    ApiCaller, JsonBody, PathParam, RequestMeta, not_found_read, not_found_write, respond,
};
use crate::domain::compensation::{CompensationInput, CompensationRequest};
use crate::domain::ids::{CouponId, OrderNo, UserId};
use crate::domain::reason::parse_reason;
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::support::{Authority, HealthReport};
use crate::service::views::CouponView;

/// Body of `POST /coupons/{id}/release`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReleaseBody {
    /// Required, 1-500 characters.
    pub reason: Option<String>,
    /// Release even though the coupon's order is still live (its discount
    /// is withdrawn).
    #[serde(default)]
    pub force: Option<bool>,
}

/// Body of `POST /coupons/{id}/invalidate`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct InvalidateBody {
    /// Required, 1-500 characters.
    pub reason: Option<String>,
}

/// Body of `POST /users/{user_id}/compensation-coupons`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CompensationBody {
    /// 1 cent or more.
    pub value_cents: Option<i64>,
    /// 60 seconds to 365 days.
    pub valid_seconds: Option<i64>,
    /// Required, 1-500 characters.
    pub reason: Option<String>,
    /// The order this makes up for; must belong to the user.
    pub order_no: Option<String>,
    /// A preset of the compensation rules in force: then `value_cents`
    /// and `valid_seconds` come from it (and may be left out), the coupon
    /// carries its minimum order and categories, and `reason` defaults to
    /// the preset's.
    pub preset_id: Option<String>,
    /// Which of the order's coupons this makes up for (an order may hold
    /// several): needs `order_no`, and must be one of that order's
    /// coupons, or one they replaced (409 `coupon_not_on_order`).
    pub for_coupon_id: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/orders/{order_no}/health-check", operation_id = "order_health_check", tag = "support",
    params(("order_no" = String, Path)),
    responses((status = 200, body = HealthReport), (status = 404, body = ErrorBody)))]
pub async fn health_check(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(order_no): PathParam,
) -> Response {
    // Trimmed, as the service always did with this path segment.
    let order_no = order_no.trim();
    let result = match OrderNo::parse(order_no) {
        Ok(order_no) => s.service.order_health_check(&order_no).await,
        // Malformed: no order has that number.
        Err(_) => not_found_read(&s, "order", order_no.to_string()).await,
    };
    match result {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(post, path = "/api/v1/coupons/{id}/release", operation_id = "release_coupon", tag = "support",
    params(("id" = String, Path)), request_body = ReleaseBody,
    responses((status = 200, body = CouponView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "order_active, coupon_not_available", body = ErrorBody)))]
pub async fn release(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<ReleaseBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let b = body.value;
    let result = s
        .service
        .release_coupon(
            &meta.ctx(&caller),
            &Authority::Api,
            idem.as_ref(),
            CouponId::from_wire(id),
            b.reason,
            b.force.unwrap_or(false),
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/coupons/{id}/invalidate", operation_id = "invalidate_coupon", tag = "support",
    params(("id" = String, Path)), request_body = InvalidateBody,
    responses((status = 200, body = CouponView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "coupon_not_available", body = ErrorBody)))]
pub async fn invalidate(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<InvalidateBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let result = s
        .service
        .invalidate_coupon(
            &meta.ctx(&caller),
            &Authority::Api,
            idem.as_ref(),
            CouponId::from_wire(id),
            body.value.reason,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/users/{user_id}/compensation-coupons", operation_id = "issue_compensation_coupon", tag = "support",
    params(("user_id" = String, Path)), request_body = CompensationBody,
    responses((status = 201, body = CouponView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "order_not_owned, coupon_not_on_order, compensation_limit_exceeded", body = ErrorBody)))]
pub async fn compensation(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(user_id): PathParam,
    body: JsonBody<CompensationBody>,
) -> Response {
    // The path's user id exactly as the document states it (the service
    // also trims what the console's form typed).
    let user_id = match UserId::parse(&user_id) {
        Ok(u) => u,
        Err(e) => return ApiError::invalid(e.field, e.message).into_response(),
    };
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::CREATED);
    let b = body.value;
    let input = CompensationInput {
        value_cents: b.value_cents,
        valid_seconds: b.valid_seconds,
        reason: b.reason,
        order_no: b.order_no,
        preset_id: b.preset_id,
        for_coupon_id: b.for_coupon_id,
    };
    let result = match CompensationRequest::parse(input) {
        Ok(request) => {
            s.service
                .issue_compensation(
                    &meta.ctx(&caller),
                    &Authority::Api,
                    idem.as_ref(),
                    user_id,
                    request,
                )
                .await
        }
        Err(e) => Err(e.into()),
    };
    respond(&s, idem.as_ref(), StatusCode::CREATED, result).await
}

/// Body of `POST /orders/{order_no}/repair-coupon-link`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RepairLinkBody {
    /// The coupon to link the order with: the order's own coupon that was
    /// freed by mistake (relock), or the coupon bound to the order while
    /// the order names another (relink).
    pub coupon_id: Option<String>,
    /// Required, 1-500 characters.
    pub reason: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/repair-coupon-link", operation_id = "repair_coupon_link", tag = "support",
    params(("order_no" = String, Path)), request_body = RepairLinkBody,
    responses((status = 200, body = crate::service::views::OrderView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "repair_not_applicable, coupon_not_available", body = ErrorBody)))]
pub async fn repair_link(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<RepairLinkBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let b = body.value;
    let Some(coupon_id) = b.coupon_id.filter(|c| !c.trim().is_empty()) else {
        return ApiError::from(crate::service::ServiceError::Invalid(
            crate::domain::FieldError::new("coupon_id", "is required"),
        ))
        .into_response();
    };
    let coupon_id = CouponId::from_wire(coupon_id);
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => {
            s.service
                .repair_coupon_link(
                    &meta.ctx(&caller),
                    idem.as_ref(),
                    order_no,
                    coupon_id,
                    b.reason,
                )
                .await
        }
        // Malformed: no order has that number; the reason is checked
        // first, as the service does.
        Err(_) => match parse_reason(b.reason) {
            Err(e) => Err(e.into()),
            Ok(_) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
        },
    };
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

/// Body of `POST /orders/{order_no}/mark-coupon-used` and
/// `POST /orders/{order_no}/return-coupon`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct MarkUsedBody {
    /// The coupon the order names: still locked to the paid order (mark
    /// used), or still used by it after every unit it discounted was
    /// refunded (return).
    pub coupon_id: Option<String>,
    /// Required, 1-500 characters.
    pub reason: Option<String>,
}

/// The repairs of an order's own coupon that take the same body.
#[derive(Debug, Clone, Copy)]
enum CouponRepair {
    MarkUsed,
    Return,
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/mark-coupon-used", operation_id = "mark_coupon_used", tag = "support",
    params(("order_no" = String, Path)), request_body = MarkUsedBody,
    responses((status = 200, body = crate::service::views::OrderView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "repair_not_applicable", body = ErrorBody)))]
/// Marks a coupon still `locked` to the paid order that names it `used` for
/// that order (the repair of `locked_coupon_order_paid`).
pub async fn mark_coupon_used(
    s: State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    order_no: PathParam,
    body: JsonBody<MarkUsedBody>,
) -> Response {
    coupon_repair(s, caller, meta, order_no, body, CouponRepair::MarkUsed).await
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/return-coupon", operation_id = "return_coupon", tag = "support",
    params(("order_no" = String, Path)), request_body = MarkUsedBody,
    responses((status = 200, body = crate::service::views::OrderView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "repair_not_applicable", body = ErrorBody)))]
/// Returns to its customer a coupon still `used` by the order after every
/// unit it discounted was refunded by line (the repair of
/// `coupon_not_returned_after_refunds`): `available` while valid, else
/// `expired`.
pub async fn return_coupon(
    s: State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    order_no: PathParam,
    body: JsonBody<MarkUsedBody>,
) -> Response {
    coupon_repair(s, caller, meta, order_no, body, CouponRepair::Return).await
}

async fn coupon_repair(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<MarkUsedBody>,
    kind: CouponRepair,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let b = body.value;
    let Some(coupon_id) = b.coupon_id.filter(|c| !c.trim().is_empty()) else {
        return ApiError::from(crate::service::ServiceError::Invalid(
            crate::domain::FieldError::new("coupon_id", "is required"),
        ))
        .into_response();
    };
    let coupon_id = CouponId::from_wire(coupon_id);
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => {
            let ctx = meta.ctx(&caller);
            match kind {
                CouponRepair::MarkUsed => {
                    s.service
                        .mark_coupon_used(&ctx, idem.as_ref(), order_no, coupon_id, b.reason)
                        .await
                }
                CouponRepair::Return => {
                    s.service
                        .return_coupon(&ctx, idem.as_ref(), order_no, coupon_id, b.reason)
                        .await
                }
            }
        }
        // Malformed: no order has that number; the reason is checked
        // first, as the service does.
        Err(_) => match parse_reason(b.reason) {
            Err(e) => Err(e.into()),
            Ok(_) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
        },
    };
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(get, path = "/api/v1/reconciliation", operation_id = "reconciliation", tag = "support",
    responses((status = 200, body = crate::service::reconcile::ReconcileReport)))]
/// Every coupon–order anomaly now (a fresh, bounded scan; nothing recorded).
pub async fn reconciliation(State(s): State<AppState>, _caller: ApiCaller) -> Response {
    match s.service.reconcile().await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
