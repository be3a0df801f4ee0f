//! Redeem codes (兑换码): `POST /templates/{id}/code-batches`,
//! `GET /code-batches/{id}`, `GET /code-batches/{id}/codes.csv`,
//! `POST /code-batches/{id}/void` and `POST /users/{user_id}/redemptions`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{ApiCaller, JsonBody, PathParam, RequestMeta, respond};
use crate::domain::ids::{CodeBatchId, TemplateId, UserId};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::http::limits::ClientIp;
use crate::service::ServiceError;
use crate::service::codes::CodeBatchView;
use crate::service::views::CouponView;

/// A batch of codes to generate.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CodeBatchBody {
    /// 1-100,000 codes.
    pub count: Option<i64>,
    /// Up to 8 characters of the alphabet (digits 2-9, letters without I,
    /// L, O), any case; empty or absent: none.
    pub prefix: Option<String>,
    /// 4-16 random characters after the prefix; the code space must hold
    /// at least 1,000 codes per code asked for.
    pub length: Option<i64>,
}

/// Why a batch is voided.
#[derive(Debug, Deserialize, ToSchema)]
pub struct VoidBatchBody {
    pub reason: Option<String>,
}

/// A code a customer typed.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RedemptionBody {
    /// Case-insensitive; spaces and `-` are ignored.
    pub code: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/templates/{id}/code-batches", operation_id = "create_code_batch", tag = "codes",
    params(("id" = String, Path, description = "template id")),
    request_body = CodeBatchBody,
    responses((status = 202, description = "accepted: the code job generates the codes", body = CodeBatchView),
        (status = 400, description = "invalid_request: `count` (also when the code space of `length` is under 1,000 × count), `prefix` or `length`", body = ErrorBody),
        (status = 404, description = "not_found: no such template", body = ErrorBody)))]
pub async fn create_batch(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<CodeBatchBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::ACCEPTED);
    let b = body.value;
    let result = s
        .service
        .create_code_batch(
            &meta.ctx(&caller),
            idem.as_ref(),
            TemplateId::from_wire(id),
            b.count,
            b.prefix,
            b.length,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::ACCEPTED, result).await
}

#[utoipa::path(get, path = "/api/v1/code-batches/{id}", operation_id = "get_code_batch", tag = "codes",
    params(("id" = String, Path, description = "code batch id")),
    responses((status = 200, body = CodeBatchView), (status = 404, description = "not_found", body = ErrorBody)))]
pub async fn get_batch(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
) -> Response {
    match s.service.get_code_batch(&CodeBatchId::from_wire(id)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(get, path = "/api/v1/code-batches/{id}/codes.csv", operation_id = "code_batch_csv", tag = "codes",
    params(("id" = String, Path, description = "code batch id")),
    responses((status = 200, description = "`code,status,redeemed_at,user_id,coupon_id`, one code a line", content_type = "text/csv", body = String),
        (status = 404, description = "not_found", body = ErrorBody),
        (status = 409, description = "code_batch_not_ready: still being generated, or its generation failed", body = ErrorBody)))]
pub async fn codes_csv(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
) -> Response {
    match s.service.code_batch_csv(&CodeBatchId::from_wire(id)).await {
        Ok((b, csv)) => (
            [
                (
                    axum::http::header::CONTENT_TYPE,
                    "text/csv; charset=utf-8".to_string(),
                ),
                (
                    axum::http::header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"codes-{}.csv\"", b.id),
                ),
            ],
            csv,
        )
            .into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(post, path = "/api/v1/code-batches/{id}/void", operation_id = "void_code_batch", tag = "codes",
    params(("id" = String, Path, description = "code batch id")),
    request_body = VoidBatchBody,
    responses((status = 200, description = "the batch, voided: none of its codes redeems any more", body = CodeBatchView),
        (status = 400, description = "invalid_request: `reason`", body = ErrorBody),
        (status = 404, description = "not_found", body = ErrorBody)))]
pub async fn void_batch(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<VoidBatchBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let result = s
        .service
        .void_code_batch(
            &meta.ctx(&caller),
            idem.as_ref(),
            CodeBatchId::from_wire(id),
            body.value.reason,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/users/{user_id}/redemptions", operation_id = "redeem_code", tag = "codes",
    params(("user_id" = String, Path)),
    request_body = RedemptionBody,
    responses((status = 201, description = "the coupon the code gave", body = CouponView),
        (status = 400, description = "invalid_request: `code`", body = ErrorBody),
        (status = 404, description = "code_not_found (also a voided code)", body = ErrorBody),
        (status = 409, description = "code_already_redeemed, template_inactive, out_of_stock, claim_limit_reached", body = ErrorBody),
        (status = 429, description = "rate_limited: too many failed redemptions by this user or from this address", body = ErrorBody)))]
pub async fn redeem(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(user_id): PathParam,
    body: JsonBody<RedemptionBody>,
) -> Response {
    let user_id = match UserId::parse(&user_id) {
        Ok(u) => u,
        Err(e) => return ApiError::invalid(e.field, e.message).into_response(),
    };
    let Some(code) = body.value.code else {
        return ApiError::invalid("code", "is required").into_response();
    };
    // The failure limits, before the code is looked up: one serialized
    // step on the database reserves the attempt or refuses it.
    let address = ClientIp(meta.address.as_deref().and_then(|a| a.parse().ok())).text();
    let limits = s.limiters.redeem_limits();
    let attempt_id = match s
        .service
        .reserve_redemption(&user_id, &address, limits)
        .await
    {
        Ok(Ok(id)) => id,
        Ok(Err(wait_seconds)) => {
            s.metrics.incr("rate_limited_redeem");
            let mut r = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("too many failed redemptions; retry after {wait_seconds} s"),
            )
            .into_response();
            if let Ok(v) = axum::http::HeaderValue::from_str(&wait_seconds.to_string()) {
                r.headers_mut().insert(axum::http::header::RETRY_AFTER, v);
            }
            return r;
        }
        Err(e) => return ApiError::from(e).into_response(),
    };
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::CREATED);
    let result = s
        .service
        .redeem_code(
            &meta.ctx(&caller),
            idem.as_ref(),
            user_id.clone(),
            code,
            Some(attempt_id),
        )
        .await;
    let failed = match &result {
        Ok(_) => {
            s.metrics.incr("redeem");
            false
        }
        Err(ServiceError::NotFound { .. }) => {
            s.metrics.incr("code_not_found");
            true
        }
        Err(ServiceError::Refused { refusal, .. }) => {
            s.metrics.incr(refusal.code());
            *refusal == crate::service::Refusal::CodeAlreadyRedeemed
        }
        Err(_) => false,
    };
    if failed {
        s.metrics.incr("redeem_failed");
    }
    // A fresh redemption settled its attempt in its own transaction; a
    // replay or a refusal settles it here.
    if !matches!(result, Ok(crate::service::Executed::Fresh(_))) {
        s.service.settle_redemption(attempt_id, failed).await;
    }
    match result {
        Err(ServiceError::NotFound { .. }) => {
            let err = ApiError::new(
                StatusCode::NOT_FOUND,
                "code_not_found",
                "no such code, or it is no longer valid",
            );
            if let Some(i) = &idem {
                s.service
                    .remember_refusal(i, err.status.as_u16(), err.body_json())
                    .await;
            }
            err.into_response()
        }
        other => respond(&s, idem.as_ref(), StatusCode::CREATED, other).await,
    }
}
