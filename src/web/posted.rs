//! Post/redirect/get for console handlers: the [`Posted`] extractor and
//! [`OrPage::or_page`].
//!
//! A console action handler looks like this:
//!
//! ```ignore
//! async fn release(
//!     State(s): State<AppState>,
//!     staff: Staff,
//!     Path(id): Path<CouponId>,
//!     Posted { form, body }: Posted<ActionForm>,
//! ) -> Result<Response, WebError> {
//!     let l = staff.lang;
//!     let coupon = s.service.get_coupon(&id).await.or_page(l)?;
//!     match s.service.release_coupon(/* ... */).await {
//!         Ok(_) => Ok(staff.done(&to, text)), // redirect
//!         Err(e) => render_release(&s, &staff, &id, f).await, // or re-render
//!     }
//! }
//! ```
//!
//! - extract: [`Staff`] (the session) first, then the address, then
//!   [`Posted`] last, because it reads the body. `Posted` takes the
//!   [`Staff`] the extractor before it found (left in the request's
//!   extensions), so extraction runs in the same order as with a plain
//!   `body: Bytes`: no session is a redirect to sign-in before the address
//!   or the body is looked at. It checks the CSRF token and parses the
//!   form exactly as [`Staff::posted`] does and rejects with the same
//!   error page; it keeps the raw `body` for the idempotency key
//!   (`idem(.., &body)`).
//! - call one service function; `.or_page(staff.lang)?` turns a
//!   [`ServiceError`] into the error page in the staff member's language
//!   ([`WebError::from_service`]).
//! - redirect with a flash message ([`Staff::done`], [`Staff::refused`]) or
//!   render the form again; the handler returns `Result<Response,
//!   WebError>`.
//!
//! Handlers that must answer something else first (a role check before the
//! form is read), and the shared bodies of two routes (which take an extra
//! argument after the body), keep `body: Bytes` and call
//! `staff.posted(&body)?`: the same check, the same error page. Render
//! helpers that load what they show return `Result<Response, WebError>`
//! too, so a handler re-renders with `render_x(..).await` (or `?` inside a
//! `match`).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use crate::http::AppState;
use crate::service::ServiceError;

/// A form posted by the signed-in staff member, CSRF-checked and parsed,
/// with the raw body it came from. Put it after the [`Staff`] extractor:
/// it uses the session that extractor found (and finds it itself when
/// there is none).
pub struct Posted<F> {
    pub form: F,
    pub body: Bytes,
}

impl<F: DeserializeOwned> FromRequest<AppState> for Posted<F> {
    type Rejection = Response;

    async fn from_request(req: Request, s: &AppState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let staff = match parts.extensions.remove::<Staff>() {
            Some(staff) => staff,
            None => Staff::from_request_parts(&mut parts, s).await?,
        };
        let body = Bytes::from_request(Request::from_parts(parts, body), s)
            .await
            .map_err(IntoResponse::into_response)?;
        let form = staff.posted(&body).map_err(IntoResponse::into_response)?;
        Ok(Posted { form, body })
    }
}

/// `.or_page(lang)`: a service error as the error page in `lang`.
pub trait OrPage<T> {
    fn or_page(self, lang: Lang) -> Result<T, WebError>;
}

impl<T> OrPage<T> for Result<T, ServiceError> {
    fn or_page(self, lang: Lang) -> Result<T, WebError> {
        self.map_err(|e| WebError::from_service(lang, e))
    }
}
