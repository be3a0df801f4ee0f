//! `POST /presale-campaigns`, `GET /presale-campaigns` (newest first,
//! keyset pages), `GET /presale-campaigns/{id}`, `PATCH
//! /presale-campaigns/{id}` (policy and compensation mode, before the
//! final-payment window opens).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use utoipa::IntoParams;

use super::extract::{ApiCaller, JsonBody, PathParam, QueryParams, RequestMeta, respond};
use crate::domain::ids::CampaignId;
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::campaigns::{CampaignInput, CampaignPatch};
use crate::service::support::Authority;
use crate::service::views::CampaignView;

#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateCampaignBody {
    pub name: Option<String>,
    pub final_payment_starts_at: Option<String>,
    pub final_payment_ends_at: Option<String>,
    /// `lock`, `strict` or `swap_or_compensate`; absent or null: `lock`.
    pub policy: Option<String>,
    /// `deduction` (absent or null) or `coupon`: how `swap_or_compensate`
    /// compensates an expired coupon when no replacement is found.
    pub compensation_mode: Option<String>,
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
        compensation_mode: b.compensation_mode,
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
    match s.service.get_campaign(&CampaignId::from_wire(id)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CampaignListQuery {
    /// 1-200, default 50.
    pub limit: Option<i64>,
    /// The previous page's `next`.
    pub cursor: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/presale-campaigns", operation_id = "list_campaigns", tag = "campaigns",
    params(CampaignListQuery),
    responses((status = 200, body = crate::service::campaigns::CampaignPage), (status = 400, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    _caller: ApiCaller,
    QueryParams(q): QueryParams<CampaignListQuery>,
) -> Response {
    match s
        .service
        .list_campaigns(q.cursor, q.limit.unwrap_or(50))
        .await
    {
        Ok(page) => axum::Json(page).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// A change of policy and/or compensation mode, with the reason.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PatchCampaignBody {
    /// `lock`, `strict` or `swap_or_compensate`.
    pub policy: Option<String>,
    /// `deduction` or `coupon`.
    pub compensation_mode: Option<String>,
    /// Required; recorded in the staff log.
    pub reason: Option<String>,
}

#[utoipa::path(patch, path = "/api/v1/presale-campaigns/{id}", operation_id = "change_campaign", tag = "campaigns",
    params(("id" = String, Path)), request_body = PatchCampaignBody,
    responses((status = 200, body = CampaignView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "campaign_window_open", body = ErrorBody)))]
pub async fn patch(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<PatchCampaignBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let b = body.value;
    let patch = CampaignPatch {
        policy: b.policy,
        compensation_mode: b.compensation_mode,
        reason: b.reason,
    };
    let result = s
        .service
        .change_campaign(
            &meta.ctx(&caller),
            &Authority::Api,
            idem.as_ref(),
            CampaignId::from_wire(id),
            patch,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}
