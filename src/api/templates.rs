//! `POST /templates`, `GET /templates/{id}`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{ApiCaller, JsonBody, PathParam, RequestMeta, respond};
use crate::domain::template::TemplateInput;
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::views::TemplateView;

/// A new template. Validity: `valid_from` + `valid_until` (absolute), or
/// `valid_seconds` after the claim (capped by `valid_until` when given).
#[derive(Debug, Deserialize, ToSchema)]
pub struct CreateTemplateBody {
    pub name: Option<String>,
    /// `fixed` or `percent`.
    pub kind: Option<String>,
    /// Required for `fixed`.
    pub value_cents: Option<i64>,
    /// Required for `percent`, 1-100.
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<i64>,
    pub min_order_cents: Option<i64>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub valid_seconds: Option<i64>,
    /// `null` or absent: unlimited.
    pub total_stock: Option<i64>,
    /// `null` or absent: unlimited.
    pub per_user_limit: Option<i64>,
    /// Empty or absent: every category.
    pub categories: Option<Vec<String>>,
}

impl From<CreateTemplateBody> for TemplateInput {
    fn from(b: CreateTemplateBody) -> Self {
        TemplateInput {
            name: b.name,
            kind: b.kind,
            value_cents: b.value_cents,
            percent_off: b.percent_off,
            max_discount_cents: b.max_discount_cents,
            min_order_cents: b.min_order_cents,
            valid_from: b.valid_from,
            valid_until: b.valid_until,
            valid_seconds: b.valid_seconds,
            total_stock: b.total_stock,
            per_user_limit: b.per_user_limit,
            categories: b.categories,
        }
    }
}

#[utoipa::path(post, path = "/api/v1/templates", operation_id = "create_template", tag = "templates",
    request_body = CreateTemplateBody,
    responses((status = 201, body = TemplateView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub async fn create(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    body: JsonBody<CreateTemplateBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::CREATED);
    let result = s
        .service
        .create_template(&meta.ctx(&caller), idem.as_ref(), body.value.into())
        .await;
    respond(&s, idem.as_ref(), StatusCode::CREATED, result).await
}

#[utoipa::path(get, path = "/api/v1/templates/{id}", operation_id = "get_template", tag = "templates",
    params(("id" = String, Path, description = "template id")),
    responses((status = 200, body = TemplateView), (status = 404, body = ErrorBody)))]
pub async fn get(
    State(s): State<AppState>,
    _caller: ApiCaller,
    PathParam(id): PathParam,
) -> Response {
    match s.service.get_template(&id).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
