//! Order routes: create, pay, deposit-payment, final-payment-quote,
//! final-payment, cancel, refund, get.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{
    ApiCaller, JsonBody, PathParam, QueryParams, RequestMeta, not_found_read, not_found_write,
    respond,
};
use crate::domain::cart::{OrderInput, OrderSpec};
use crate::domain::ids::OrderNo;
use crate::domain::line::LineInput;
use crate::domain::reason::parse_reason;
use crate::domain::refund::{RefundInput, RefundLineInput, RefundSpec};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::views::{OrderView, QuoteView, RefundList, RefundView};

/// One order line (购物车明细).
#[derive(Debug, Deserialize, ToSchema)]
pub struct LineBody {
    /// The shop's id of the line, unique in the order (1-64 characters).
    pub line_id: Option<String>,
    pub sku: Option<String>,
    pub category: Option<String>,
    /// A marketplace shop; null for a single-shop order.
    pub shop_id: Option<String>,
    /// 1-9,999.
    pub quantity: Option<i64>,
    pub unit_price_cents: Option<i64>,
}

impl From<LineBody> for LineInput {
    fn from(b: LineBody) -> Self {
        LineInput {
            line_id: b.line_id,
            sku: b.sku,
            category: b.category,
            shop_id: b.shop_id,
            quantity: b.quantity,
            unit_price_cents: b.unit_price_cents,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateOrderBody {
    pub order_no: Option<String>,
    pub user_id: Option<String>,
    /// `normal` or `presale`.
    pub kind: Option<String>,
    /// The single-category form, with `total_cents` (one line).
    pub category: Option<String>,
    pub total_cents: Option<i64>,
    /// 1-500 lines, in place of `category` and `total_cents`.
    pub lines: Option<Vec<LineBody>>,
    pub coupon_id: Option<String>,
    /// Several coupons, in place of `coupon_id`: one platform coupon and
    /// at most one shop coupon per shop.
    pub coupon_ids: Option<Vec<String>>,
    /// Presale only.
    pub campaign_id: Option<String>,
    /// Presale only.
    pub deposit_cents: Option<i64>,
}

/// One line of a refund: which line, how many units.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RefundLineBody {
    pub line_id: Option<String>,
    /// 1-9,999, at most the units left on the line.
    pub quantity: Option<i64>,
}

/// Body of a refund by line.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RefundBody {
    /// The shop's id of the refund (1-64 characters): the same id and body
    /// answer the same refund.
    pub refund_id: Option<String>,
    /// 1-500 lines, each line once.
    pub lines: Option<Vec<RefundLineBody>>,
    /// Why (required, 1-500 characters).
    pub reason: Option<String>,
}

/// Body of actions that take none; any JSON object is accepted.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct EmptyBody {}

/// Body of a refund: why (required, 1-500 characters).
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReasonBody {
    pub reason: Option<String>,
}

/// Body of a cancel: an optional reason (1-500 characters when given).
#[derive(Debug, Deserialize, ToSchema)]
pub struct CancelBody {
    pub reason: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/orders", operation_id = "create_order", tag = "orders",
    request_body = CreateOrderBody,
    responses((status = 201, body = OrderView), (status = 400, body = ErrorBody),
        (status = 404, description = "not_found: the `coupon_id` or `campaign_id` does not exist", body = ErrorBody),
        (status = 409, description = "order_exists, coupon_not_owned, coupon_not_available, coupon_expired, coupon_not_started, threshold_not_met, coupon_not_applicable, coupons_not_combinable", body = ErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    body: JsonBody<CreateOrderBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::CREATED);
    let b = body.value;
    let input = OrderInput {
        order_no: b.order_no,
        user_id: b.user_id,
        kind: b.kind,
        category: b.category,
        total_cents: b.total_cents,
        lines: b
            .lines
            .map(|ls| ls.into_iter().map(LineInput::from).collect()),
        coupon_id: b.coupon_id,
        coupon_ids: b.coupon_ids,
        campaign_id: b.campaign_id,
        deposit_cents: b.deposit_cents,
    };
    let result = match OrderSpec::parse(input) {
        Ok(spec) => {
            s.service
                .create_order(&meta.ctx(&caller), idem.as_ref(), spec)
                .await
        }
        Err(e) => Err(e.into()),
    };
    respond(&s, idem.as_ref(), StatusCode::CREATED, result).await
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/pay", operation_id = "pay_order", tag = "orders",
    params(("order_no" = String, Path)),
    responses((status = 200, body = OrderView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn pay(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<EmptyBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => {
            s.service
                .pay(&meta.ctx(&caller), idem.as_ref(), order_no)
                .await
        }
        // Malformed: no order has that number.
        Err(_) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
    };
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/deposit-payment", operation_id = "pay_deposit", tag = "orders",
    params(("order_no" = String, Path)),
    responses((status = 200, body = OrderView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn deposit_payment(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<EmptyBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => {
            s.service
                .pay_deposit(&meta.ctx(&caller), idem.as_ref(), order_no)
                .await
        }
        // Malformed: no order has that number.
        Err(_) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
    };
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(get, path = "/api/v1/orders/{order_no}/final-payment-quote", operation_id = "final_payment_quote", tag = "orders",
    params(("order_no" = String, Path)),
    responses((status = 200, body = QuoteView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn final_payment_quote(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(order_no): PathParam,
) -> Response {
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => s.service.final_payment_quote(&order_no).await,
        // Malformed: no order has that number.
        Err(_) => not_found_read(&s, "order", order_no).await,
    };
    match result {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/final-payment", operation_id = "pay_final", tag = "orders",
    params(("order_no" = String, Path)),
    responses((status = 200, body = OrderView), (status = 404, body = ErrorBody),
        (status = 409, description = "outside_payment_window, coupon_lock_mismatch", body = ErrorBody)))]
pub async fn final_payment(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<EmptyBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => {
            s.service
                .pay_final(&meta.ctx(&caller), idem.as_ref(), order_no)
                .await
        }
        // Malformed: no order has that number.
        Err(_) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
    };
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/cancel", operation_id = "cancel_order", tag = "orders",
    params(("order_no" = String, Path)), request_body = CancelBody,
    responses((status = 200, body = OrderView), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn cancel(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<CancelBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let reason = body.value.reason;
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => {
            s.service
                .cancel(&meta.ctx(&caller), idem.as_ref(), order_no, reason)
                .await
        }
        // Malformed: no order has that number; a reason given is checked
        // first, as the service does.
        Err(_) => match reason.map(|r| parse_reason(Some(r))).transpose() {
            Err(e) => Err(e.into()),
            Ok(_) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
        },
    };
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/refund", operation_id = "refund_order", tag = "orders",
    params(("order_no" = String, Path)), request_body = ReasonBody,
    responses((status = 200, body = OrderView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn refund(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<ReasonBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let reason = body.value.reason;
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => {
            s.service
                .refund(&meta.ctx(&caller), idem.as_ref(), order_no, reason)
                .await
        }
        // Malformed: no order has that number; the reason is checked
        // first, as the service does.
        Err(_) => match parse_reason(reason) {
            Err(e) => Err(e.into()),
            Ok(_) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
        },
    };
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/orders/{order_no}/refunds", operation_id = "refund_lines", tag = "orders",
    params(("order_no" = String, Path)), request_body = RefundBody,
    responses((status = 201, description = "a new refund", body = RefundView),
        (status = 200, description = "the refund this `refund_id` made before, asked again with the same body", body = RefundView),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "refund_exists, refund_exceeds_order, invalid_order_status", body = ErrorBody)))]
pub async fn refund_lines(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(order_no): PathParam,
    body: JsonBody<RefundBody>,
) -> Response {
    let b = body.value;
    let spec = RefundSpec::parse(RefundInput {
        refund_id: b.refund_id,
        lines: b.lines.map(|ls| {
            ls.into_iter()
                .map(|l| RefundLineInput {
                    line_id: l.line_id,
                    quantity: l.quantity,
                })
                .collect()
        }),
        reason: b.reason,
    });
    let order = OrderNo::parse(&order_no);
    // A refund id asked again answers 200, a new one 201.
    let success = match (&order, &spec) {
        (Ok(no), Ok(spec)) => match s.service.refund_exists(no, &spec.refund_id).await {
            Ok(true) => StatusCode::OK,
            _ => StatusCode::CREATED,
        },
        _ => StatusCode::CREATED,
    };
    let idem = meta.idempotency(&caller, &body.raw, success);
    let result = match (order, spec) {
        (_, Err(e)) => Err(e.into()),
        (Ok(order_no), Ok(spec)) => {
            s.service
                .refund_lines(&meta.ctx(&caller), idem.as_ref(), order_no, spec)
                .await
        }
        // Malformed: no order has that number.
        (Err(_), Ok(_)) => not_found_write(&s, idem.as_ref(), "order", order_no).await,
    };
    respond(&s, idem.as_ref(), success, result).await
}

#[utoipa::path(get, path = "/api/v1/orders/{order_no}/refunds", operation_id = "list_refunds", tag = "orders",
    params(("order_no" = String, Path)),
    responses((status = 200, body = RefundList), (status = 404, body = ErrorBody)))]
pub async fn list_refunds(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(order_no): PathParam,
) -> Response {
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => s
            .service
            .refunds_of(&order_no)
            .await
            .map(|refunds| RefundList { refunds }),
        // Malformed: no order has that number.
        Err(_) => not_found_read(&s, "order", order_no)
            .await
            .map(|refunds: Vec<RefundView>| RefundList { refunds }),
    };
    match result {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(get, path = "/api/v1/orders/{order_no}", operation_id = "get_order", tag = "orders",
    params(("order_no" = String, Path)),
    responses((status = 200, body = OrderView), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(order_no): PathParam,
) -> Response {
    let result = match OrderNo::parse(&order_no) {
        Ok(order_no) => s.service.get_order(&order_no).await,
        // Malformed: no order has that number.
        Err(_) => not_found_read(&s, "order", order_no).await,
    };
    match result {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(get, path = "/api/v1/orders", operation_id = "list_orders", tag = "orders",
    params(crate::service::orders::OrderListParams),
    responses((status = 200, body = crate::service::orders::OrderPage), (status = 400, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    _caller: ApiCaller,
    QueryParams(q): QueryParams<crate::service::orders::OrderListParams>,
) -> Response {
    let filter = match s.service.order_filter(&q) {
        Ok(f) => f,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let limit = q
        .limit
        .unwrap_or(crate::service::orders::DEFAULT_ORDER_PAGE);
    match s.service.list_orders(filter, q.cursor, limit).await {
        Ok(page) => axum::Json(page).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
