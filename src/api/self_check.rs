//! `POST /users/{user_id}/self-check-link`: a signed link to the customer's
//! self-check page, for the shop's backend to hand to its logged-in
//! customer. Changes nothing, so it needs no idempotency record (the
//! `Idempotency-Key` header is accepted and checked like everywhere).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{ApiCaller, JsonBody, PathParam, RequestMeta};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::self_check::{LinkError, SelfCheckLink};

/// Body of `POST /users/{user_id}/self-check-link`: empty (`{}`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct SelfCheckLinkBody {}

#[utoipa::path(post, path = "/api/v1/users/{user_id}/self-check-link", operation_id = "create_self_check_link", tag = "support",
    params(("user_id" = String, Path)), request_body = SelfCheckLinkBody,
    responses((status = 200, body = SelfCheckLink), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 503, description = "unavailable: COUPONKEEPER_SELF_CHECK_SECRET is not set", body = ErrorBody)))]
pub async fn issue_link(
    State(s): State<AppState>,
    _caller: ApiCaller,
    _meta: RequestMeta,
    PathParam(user_id): PathParam,
    _body: JsonBody<SelfCheckLinkBody>,
) -> Response {
    // The path's user id exactly as the document states it (the service
    // also trims what the console typed).
    let user_id = match crate::domain::ids::UserId::parse(&user_id) {
        Ok(u) => u,
        Err(e) => return ApiError::invalid(e.field, e.message).into_response(),
    };
    match s.service.self_check_link(&s.self_check, &user_id) {
        Ok(link) => axum::Json(link).into_response(),
        Err(LinkError::NotConfigured) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            LinkError::NotConfigured.to_string(),
        )
        .into_response(),
        Err(LinkError::Service(e)) => ApiError::from(e).into_response(),
    }
}
