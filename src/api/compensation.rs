//! `GET /compensation-rules`, `PUT /compensation-rules` and
//! `GET /compensation-ledger`. Thin: parse, call one service function with
//! [`Authority::Api`], render.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::extract::{ApiCaller, JsonBody, QueryParams, RequestMeta, respond};
use crate::domain::compensation::{PresetInput, RulesInput};
use crate::domain::filters::{LedgerFilterInput, LedgerPageQuery};
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::compensation::{LedgerPage, RulesView};
use crate::service::support::Authority;

/// One preset of `PUT /compensation-rules`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct PresetBody {
    /// Leave out for a new preset; a preset of the current version keeps
    /// its id.
    pub id: Option<String>,
    /// 1-100 characters, unique within the version.
    pub reason: Option<String>,
    /// 1 cent up to `support_max_cents`.
    pub value_cents: Option<i64>,
    /// 60 seconds to 365 days.
    pub valid_seconds: Option<i64>,
    /// Default 0.
    pub min_order_cents: Option<i64>,
    /// Empty or absent: every category.
    pub categories: Option<Vec<String>>,
}

/// Body of `PUT /compensation-rules`: a whole new version.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RulesBody {
    pub support_max_cents: Option<i64>,
    pub support_daily_cents: Option<i64>,
    pub presets: Option<Vec<PresetBody>>,
    /// Why; recorded with the version and in the staff log.
    pub reason: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/compensation-rules", operation_id = "get_compensation_rules", tag = "compensation",
    responses((status = 200, body = RulesView), (status = 401, body = ErrorBody)))]
pub async fn get_rules(State(s): State<AppState>, _caller: ApiCaller) -> Response {
    match s.service.compensation_rules().await {
        Ok(r) => axum::Json(RulesView::from(r)).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[utoipa::path(put, path = "/api/v1/compensation-rules", operation_id = "put_compensation_rules", tag = "compensation",
    request_body = RulesBody,
    responses((status = 200, body = RulesView), (status = 400, description = "invalid_request with field, e.g. presets[2].value_cents (also a preset above support_max_cents)", body = ErrorBody)))]
pub async fn put_rules(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    body: JsonBody<RulesBody>,
) -> Response {
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::OK);
    let b = body.value;
    let input = RulesInput {
        support_max_cents: b.support_max_cents,
        support_daily_cents: b.support_daily_cents,
        presets: b.presets.map(|list| {
            list.into_iter()
                .map(|p| PresetInput {
                    id: p.id,
                    reason: p.reason,
                    value_cents: p.value_cents,
                    valid_seconds: p.valid_seconds,
                    min_order_cents: p.min_order_cents,
                    categories: p.categories,
                })
                .collect()
        }),
    };
    let result = s
        .service
        .put_compensation_rules(
            &meta.ctx(&caller),
            &Authority::Api,
            idem.as_ref(),
            input,
            b.reason,
        )
        .await;
    respond(&s, idem.as_ref(), StatusCode::OK, result).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LedgerQueryParams {
    /// A business day `YYYY-MM-DD` (from its start in
    /// `COUPONKEEPER_BUSINESS_TZ`) or an RFC 3339 instant (inclusive).
    pub from: Option<String>,
    /// A business day `YYYY-MM-DD` (through its end) or an RFC 3339
    /// instant (exclusive).
    pub to: Option<String>,
    pub order_no: Option<String>,
    /// A staff name, or an exact actor such as `api:…`.
    pub staff: Option<String>,
    pub preset_id: Option<String>,
    pub campaign_id: Option<String>,
    /// 1-200, default 50.
    pub limit: Option<i64>,
    /// The previous page's `next`.
    pub cursor: Option<String>,
}

#[utoipa::path(get, path = "/api/v1/compensation-ledger", operation_id = "compensation_ledger", tag = "compensation",
    params(LedgerQueryParams),
    responses((status = 200, body = LedgerPage), (status = 400, body = ErrorBody)))]
pub async fn ledger(
    State(s): State<AppState>,
    _caller: ApiCaller,
    QueryParams(q): QueryParams<LedgerQueryParams>,
) -> Response {
    let filter = LedgerFilterInput {
        from: q.from,
        to: q.to,
        order_no: q.order_no,
        staff: q.staff,
        preset_id: q.preset_id,
        campaign_id: q.campaign_id,
    };
    let tz = s.service.settings().reminders.tz;
    let page = match LedgerPageQuery::parse(q.limit.unwrap_or(50), filter, tz) {
        Ok(query) => {
            s.service
                .compensation_ledger(&Authority::Api, &query, q.cursor.as_deref())
                .await
        }
        Err(e) => Err(e.into()),
    };
    match page {
        Ok(page) => axum::Json(page).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
