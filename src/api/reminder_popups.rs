//! `POST /users/{user_id}/reminder-popups/seen` `{ids?}` -> 204: the shop
//! showed the customer's pending reminder pop-ups (the picker's
//! `reminder_popups`) and marks them seen, so they are not shown again.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{ApiCaller, JsonBody, PathParam, RequestMeta};
use crate::domain::ids::UserId;
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::reminder_popups::parse_seen_ids;
use crate::service::{Executed, ServiceError};

/// Which pop-ups the customer saw.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct PopupsSeenBody {
    /// The pop-ups' `id`s as the picker gave them (at most 50); absent or
    /// null: every pending pop-up of the customer. An id that names no
    /// pending pop-up of this customer is passed over.
    pub ids: Option<Vec<String>>,
}

#[utoipa::path(post, path = "/api/v1/users/{user_id}/reminder-popups/seen", operation_id = "mark_reminder_popups_seen", tag = "claiming",
    params(("user_id" = String, Path)), request_body = PopupsSeenBody,
    responses((status = 204, description = "marked seen (pop-ups seen before, or not pending, change nothing)"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub async fn seen(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(user_id): PathParam,
    body: JsonBody<PopupsSeenBody>,
) -> Response {
    let user_id = match UserId::parse(&user_id) {
        Ok(u) => u,
        Err(e) => return ApiError::from(ServiceError::Invalid(e)).into_response(),
    };
    let ids = match parse_seen_ids(body.value.ids) {
        Ok(ids) => ids,
        Err(e) => return ApiError::from(ServiceError::Invalid(e)).into_response(),
    };
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::NO_CONTENT);
    let result = s
        .service
        .mark_reminder_popups_seen(idem.as_ref(), &user_id, ids)
        .await;
    match result {
        Ok(Executed::Fresh(_)) => StatusCode::NO_CONTENT.into_response(),
        Ok(Executed::Replayed { status, .. }) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::NO_CONTENT),
            [(
                axum::http::HeaderName::from_static("idempotent-replayed"),
                "true",
            )],
        )
            .into_response(),
        Err(e) => {
            let err = ApiError::from(e);
            if let Some(i) = idem.as_ref()
                && err.is_replayable()
            {
                s.service
                    .remember_refusal(i, err.status.as_u16(), err.body_json())
                    .await;
            }
            err.into_response()
        }
    }
}
