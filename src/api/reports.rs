//! `GET /templates/{id}/report`, `GET /presale-campaigns/{id}/report`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

use super::extract::{ApiCaller, PathParam, QueryParams};
use crate::domain::ids::{CampaignId, TemplateId};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::reports::Report;
use crate::service::support::Authority;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// First business date, `YYYY-MM-DD` (default: 29 days before `to`).
    pub from: Option<String>,
    /// Last business date, `YYYY-MM-DD` (default: today). At most 366
    /// days from `from`.
    pub to: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/templates/{id}/report", operation_id = "template_report", tag = "templates",
    params(("id" = String, Path, description = "template id"), ReportQuery),
    responses((status = 200, body = Report), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn template(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
    QueryParams(q): QueryParams<ReportQuery>,
) -> Response {
    match s
        .service
        .template_report(&Authority::Api, TemplateId::from_wire(id), q.from, q.to)
        .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(get, path = "/api/v1/presale-campaigns/{id}/report", operation_id = "campaign_report", tag = "campaigns",
    params(("id" = String, Path, description = "campaign id"), ReportQuery),
    responses((status = 200, body = Report), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn campaign(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
    QueryParams(q): QueryParams<ReportQuery>,
) -> Response {
    match s
        .service
        .campaign_report(&Authority::Api, CampaignId::from_wire(id), q.from, q.to)
        .await
    {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
