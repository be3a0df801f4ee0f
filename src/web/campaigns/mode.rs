//! The compensation mode change: choose the mode and give a reason, no
//! preview (it changes no outcome, only how the compensation is given).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use leptos::prelude::*;

use super::words::{ChangeForm, change_refusal, mode_label, operator_only};
use crate::domain::campaign::CompensationMode;
use crate::domain::ids::CampaignId;
use crate::http::AppState;
use crate::service::campaigns::CampaignPatch;
use crate::service::views::CampaignView;
use crate::web::actions::{form_id, idem};
use crate::web::auth::{Staff, WebError};
use crate::web::layout::{FieldErrors, field_error};
use crate::web::paths;

fn mode_response(
    staff: &Staff,
    c: &CampaignView,
    chosen: CompensationMode,
    reason: &str,
    errors: &FieldErrors,
) -> Response {
    let l = staff.lang;
    let action = paths::campaign_compensation_mode(&c.id);
    let csrf = staff.session.csrf_token.clone();
    let fid = form_id();
    let st = errors.input_attrs("reason", "reason");
    let mode = errors.input_attrs("compensation_mode", "compensation_mode");
    let typed = crate::web::escape_html(reason);
    let back = paths::campaign(&c.id);
    let options = CompensationMode::ALL
        .into_iter()
        .map(|m| view! { <option value=m.as_str() selected={m == chosen}>{mode_label(l, m)}</option> })
        .collect_view();
    let title = crate::tr!(l, "campaign-mode-title", name = c.name.clone());
    let heading = title.clone();
    let mut r = staff.page(&title, move || {
        view! {
            <section class="confirm" aria-labelledby="mode-heading">
                <h2 id="mode-heading">{heading}</h2>
                <p>{l.t("campaign-mode-staff-deduction")}</p>
                <p>{l.t("campaign-mode-staff-coupon")}</p>
                <form method="post" action=action class="stack" data-testid="mode-form">
                    <input type="hidden" name="csrf" value=csrf/>
                    <input type="hidden" name="form_id" value=fid/>
                    <label for="compensation_mode">{l.t("campaign-mode")}</label>
                    <select id="compensation_mode" name="compensation_mode" aria-invalid=mode.invalid aria-describedby=mode.described_by.clone()>{options}</select>
                    {field_error(&mode)}
                    <label for="reason">{l.t("campaign-reason")}</label>
                    <textarea id="reason" name="reason" required=true maxlength="500"
                        aria-invalid=st.invalid aria-describedby=st.described_by.clone()>{typed}</textarea>
                    {field_error(&st)}
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="confirm">{l.t("campaign-confirm-mode")}</button>
                        <a class="button" href=back>{l.t("cancel")}</a>
                    </p>
                </form>
            </section>
        }
    });
    if !errors.is_empty() {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

pub(super) async fn mode_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    match s.service.get_campaign(&id).await {
        Ok(c) => {
            let other = match c.compensation_mode {
                CompensationMode::Deduction => CompensationMode::Coupon,
                CompensationMode::Coupon => CompensationMode::Deduction,
            };
            mode_response(&staff, &c, other, "", &FieldErrors::default())
        }
        Err(e) => WebError::from_service(staff.lang, e).into_response(),
    }
}

pub(super) async fn change_mode(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
    body: Bytes,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    let form: ChangeForm = staff.posted(&body)?;
    let l = staff.lang;
    let path = paths::campaign_compensation_mode(&id);
    let key = idem(&staff, form.form_id.as_deref(), &path, &body);
    let patch = CampaignPatch {
        policy: None,
        compensation_mode: Some(form.compensation_mode.clone()),
        reason: Some(form.reason.clone()),
    };
    let result = s
        .service
        .change_campaign(
            &staff.ctx(),
            &staff.authority(),
            key.as_ref(),
            id.clone(),
            patch,
        )
        .await;
    Ok(match result {
        Ok(_) => staff.done(
            &paths::campaign(&id),
            crate::tr!(
                l,
                "campaign-mode-changed",
                mode = CompensationMode::parse(&form.compensation_mode)
                    .map_or("", |m| mode_label(l, m))
            ),
        ),
        Err(e) => {
            let Some((field, message)) = change_refusal(l, &e, "compensation_mode") else {
                return Err(WebError::from_service(l, e));
            };
            let mut errors = FieldErrors::default();
            errors.add(field, message);
            match s.service.get_campaign(&id).await {
                Ok(c) => {
                    let chosen = CompensationMode::parse(&form.compensation_mode)
                        .unwrap_or(c.compensation_mode);
                    mode_response(&staff, &c, chosen, &form.reason, &errors)
                }
                Err(e) => WebError::from_service(l, e).into_response(),
            }
        }
    })
}
