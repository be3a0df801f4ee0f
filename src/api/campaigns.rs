//! `POST /presale-campaigns`, `GET /presale-campaigns/{id}`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{ApiCaller, JsonBody, PathParam, RequestMeta, respond};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::campaigns::CampaignInput;
use crate::service::views::CampaignView;

#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateCampaignBody {
    pub name: Option<String>,
    pub final_payment_starts_at: Option<String>,
    pub final_payment_ends_at: Option<String>,
    /// `lock`, `strict` or `swap_or_compensate`; absent or null: `lock`.
    pub policy: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/presale-campaigns", operation_id = "create_campaign", tag = "campaigns",
    request_body = CreateCampaignBody,
    responses((status = 201, body = CampaignView), (status = 400, body = ErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    body: JsonBody<CreateCampaignBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::CREATED);
    let b = body.value;
    let input = CampaignInput {
        name: b.name,
        final_payment_starts_at: b.final_payment_starts_at,
        final_payment_ends_at: b.final_payment_ends_at,
        policy: b.policy,
    };
    let result = s
        .service
        .create_campaign(&meta.ctx(&caller), idem.as_ref(), input)
        .await;
    respond(&s, idem.as_ref(), StatusCode::CREATED, result).await
}

#[utoipa::path(get, path = "/api/v1/presale-campaigns/{id}", operation_id = "get_campaign", tag = "campaigns",
    params(("id" = String, Path)),
    responses((status = 200, body = CampaignView), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
) -> Response {
    match s.service.get_campaign(&id).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
