//! `POST /templates`, `GET /templates`, `GET /templates/{id}`,
//! `POST /templates/{id}/pause`, `POST /templates/{id}/resume`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::extract::{ApiCaller, JsonBody, PathParam, QueryParams, RequestMeta, respond};
use crate::domain::discount::DiscountKind;
use crate::domain::ids::TemplateId;
use crate::domain::template::{ClaimStanding, TemplateInput};
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
    /// RFC 3339, in the future: claiming ends then, before the coupons'
    /// own end.
    pub claim_ends_at: Option<String>,
    /// 0 (the default) to 604800, shorter than the validity: each claimed
    /// coupon ends a fixed 0 to this many seconds before the nominal end
    /// (drawn from its id), so a big claim wave does not expire in one
    /// second.
    pub expiry_spread_seconds: Option<i64>,
    /// Only lines of these SKUs; empty or absent: any SKU.
    pub skus: Option<Vec<String>>,
    /// Never lines of these SKUs.
    pub exclude_skus: Option<Vec<String>>,
    /// A shop coupon's shop (only that shop's lines); null or absent: a
    /// platform coupon.
    pub shop_id: Option<String>,
    /// `proportional` (the default) or `clawback`: what a partial refund
    /// does when the lines left no longer reach `min_order_cents`.
    pub partial_refund_rule: Option<String>,
    /// False: its coupons must be an order's only coupon; default true.
    pub stackable: Option<bool>,
    /// The discount its coupons may give together, in cents; null or
    /// absent: no budget.
    pub budget_cents: Option<i64>,
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
            claim_ends_at: b.claim_ends_at,
            expiry_spread_seconds: b.expiry_spread_seconds,
            skus: b.skus,
            exclude_skus: b.exclude_skus,
            shop_id: b.shop_id,
            partial_refund_rule: b.partial_refund_rule,
            stackable: b.stackable,
            budget_cents: b.budget_cents,
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
    match s.service.get_template(&TemplateId::from_wire(id)).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TemplateListQuery {
    /// `active`, `paused`, `not_started` or `ended`.
    pub status: Option<String>,
    /// `fixed` or `percent`.
    pub kind: Option<String>,
    /// Part of the name.
    pub q: Option<String>,
    /// 1-200, default 50.
    pub limit: Option<i64>,
    /// The previous page's `next`.
    pub cursor: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/templates", operation_id = "list_templates", tag = "templates",
    params(TemplateListQuery),
    responses((status = 200, body = crate::service::templates::TemplatePage), (status = 400, body = ErrorBody)))]
pub async fn list(
    State(s): State<AppState>,
    _caller: ApiCaller,
    QueryParams(q): QueryParams<TemplateListQuery>,
) -> Response {
    let standing = match q.status.as_deref() {
        None | Some("") => None,
        Some(raw) => match ClaimStanding::parse(raw) {
            Some(st) => Some(st),
            None => {
                return ApiError::invalid(
                    "status",
                    "must be one of active, paused, not_started, ended",
                )
                .into_response();
            }
        },
    };
    let kind = match q.kind.as_deref() {
        None | Some("") => None,
        Some(raw) => match DiscountKind::parse(raw) {
            Some(k) => Some(k),
            None => {
                return ApiError::invalid("kind", "must be fixed or percent").into_response();
            }
        },
    };
    match s
        .service
        .list_templates(standing, kind, q.q, q.cursor, q.limit.unwrap_or(50))
        .await
    {
        Ok(page) => axum::Json(page).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// Body of pause and resume.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ClaimingBody {
    /// Why; recorded in the staff log.
    pub reason: Option<String>,
}

async fn set_claiming(
    s: AppState,
    caller: ApiCaller,
    meta: RequestMeta,
    id: TemplateId,
    body: JsonBody<ClaimingBody>,
    pause: bool,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let result = s
        .service
        .set_template_claiming(
            &meta.ctx(&caller),
            idem.as_ref(),
            id,
            pause,
            body.value.reason,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[utoipa::path(post, path = "/api/v1/templates/{id}/pause", operation_id = "pause_template", tag = "templates",
    params(("id" = String, Path)), request_body = ClaimingBody,
    responses((status = 200, body = TemplateView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn pause(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<ClaimingBody>,
) -> Response {
    set_claiming(s, caller, meta, TemplateId::from_wire(id), body, true).await
}

#[utoipa::path(post, path = "/api/v1/templates/{id}/resume", operation_id = "resume_template", tag = "templates",
    params(("id" = String, Path)), request_body = ClaimingBody,
    responses((status = 200, body = TemplateView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn resume(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<ClaimingBody>,
) -> Response {
    set_claiming(s, caller, meta, TemplateId::from_wire(id), body, false).await
}

/// A safe edit. Any other field is refused with 409 `edit_not_allowed`:
/// it would change what issued coupons mean.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PatchTemplateBody {
    pub name: Option<String>,
    /// Only ever larger, and never below `claimed`.
    pub total_stock: Option<i64>,
    /// RFC 3339; claiming ends then (in the future).
    pub claim_ends_at: Option<String>,
    /// A new budget, for a template that has one: more, or less down to
    /// `budget_used_cents`.
    pub budget_cents: Option<i64>,
    /// Everything else the body holds.
    #[serde(flatten)]
    #[schema(ignore)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

#[utoipa::path(patch, path = "/api/v1/templates/{id}", operation_id = "edit_template", tag = "templates",
    params(("id" = String, Path)), request_body = PatchTemplateBody,
    responses((status = 200, body = TemplateView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "edit_not_allowed", body = ErrorBody)))]
pub async fn patch(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(id): PathParam,
    body: JsonBody<PatchTemplateBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let b = body.value;
    let patch = crate::service::templates::TemplatePatch {
        name: b.name,
        total_stock: b.total_stock,
        claim_ends_at: b.claim_ends_at,
        budget_cents: b.budget_cents,
        end_claiming_now: false,
        unsafe_fields: b.other.keys().cloned().collect(),
    };
    let result = s
        .service
        .edit_template(
            &meta.ctx(&caller),
            idem.as_ref(),
            TemplateId::from_wire(id),
            patch,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}
