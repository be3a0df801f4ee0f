//! `POST /users/{user_id}/activity` `{kind, at}` -> 204: the shop reports
//! what a customer did (browse, cart, visit), for the wake-up rules
//! (`service::wakeup`). The latest instant per user and kind is kept.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::extract::{ApiCaller, JsonBody, PathParam, RequestMeta};
use crate::domain::ids::UserId;
use crate::error::{ApiError, ErrorBody};
use crate::http::AppState;
use crate::service::{Executed, ServiceError};

/// A customer's activity.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ActivityBody {
    /// `browse`, `cart` or `visit`.
    pub kind: Option<String>,
    /// RFC 3339, any offset; at most 5 minutes ahead of the service's
    /// clock.
    pub at: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/users/{user_id}/activity", operation_id = "record_activity", tag = "wakeup",
    params(("user_id" = String, Path)), request_body = ActivityBody,
    responses((status = 204, description = "recorded (an older report than the one kept changes nothing)"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)))]
pub async fn record(
    State(s): State<AppState>,
    caller: ApiCaller,
    meta: RequestMeta,
    PathParam(user_id): PathParam,
    body: JsonBody<ActivityBody>,
) -> Response {
    // Checked first, as the service did (a 400 naming `user_id`).
    let user_id = match UserId::parse(&user_id) {
        Ok(u) => u,
        Err(e) => return ApiError::from(ServiceError::Invalid(e)).into_response(),
    };
    let idem = meta.idempotency(&caller, &body.raw, StatusCode::NO_CONTENT);
    let result = s
        .service
        .record_activity(
            idem.as_ref(),
            &user_id,
            body.value.kind.as_deref(),
            body.value.at.as_deref(),
        )
        .await;
    match result {
        Ok(Executed::Fresh(())) => StatusCode::NO_CONTENT.into_response(),
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
