//! The create form: times typed in the business time zone, refused
//! fields shown beside the form as typed, and the post that creates.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::Deserialize;

use super::words::{LIST, NEW, mode_label, operator_only};
use crate::domain::campaign::{CompensationMode, Policy};
use crate::domain::ids::CampaignId;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::campaigns::CampaignInput;
use crate::web::actions::{form_id, idem};
use crate::web::auth::{Staff, WebError};
use crate::web::context::{csrf_token, lang};
use crate::web::i18n::Lang;
use crate::web::layout::{FieldErrors, field_error, policy_label};
use crate::web::paths;

/// The create form as typed.
#[derive(Debug, Clone, Default, Deserialize)]
struct CreateForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    starts: String,
    #[serde(default)]
    ends: String,
    #[serde(default)]
    policy: String,
    #[serde(default)]
    compensation_mode: String,
}

/// The create form, as typed (`typed`) with each refused field's message
/// beside it (`errors`); the times are typed in the business time zone,
/// whose offset at `now` the labels name.
#[component]
fn NewCampaignForm(now: DateTime<Utc>, typed: CreateForm, errors: FieldErrors) -> impl IntoView {
    let l = lang();
    let csrf = csrf_token();
    let fid = form_id();
    let name = errors.input_attrs("name", "name");
    let starts = errors.input_attrs("final_payment_starts_at", "starts");
    let ends = errors.input_attrs("final_payment_ends_at", "ends");
    let policy = errors.input_attrs("policy", "policy");
    let mode = errors.input_attrs("compensation_mode", "compensation_mode");
    let chosen_policy = Policy::parse(&typed.policy).unwrap_or(Policy::Lock);
    let chosen_mode = CompensationMode::parse(&typed.compensation_mode).unwrap_or_default();
    let policies = Policy::ALL
        .into_iter()
        .map(|p| view! { <option value=p.as_str() selected={p == chosen_policy}>{policy_label(l, p)}</option> })
        .collect_view();
    let modes = CompensationMode::ALL
        .into_iter()
        .map(|m| view! { <option value=m.as_str() selected={m == chosen_mode}>{mode_label(l, m)}</option> })
        .collect_view();
    let zone = crate::i18n::zone::offset_text(crate::i18n::zone::current().offset_seconds(now));
    view! {
        <form method="post" action=NEW class="stack" data-testid="create-form">
            <input type="hidden" name="csrf" value=csrf/>
            <input type="hidden" name="form_id" value=fid/>
            <label for="name">{l.t("name")}</label>
            <input id="name" name="name" required maxlength="200" value=typed.name.clone()
                aria-invalid=name.invalid aria-describedby=name.described_by.clone()/>
            {field_error(&name)}
            <label for="starts">{crate::tr!(l, "campaign-field-starts", zone = zone.clone())}</label>
            <input id="starts" name="starts" type="datetime-local" required value=typed.starts.clone()
                aria-invalid=starts.invalid aria-describedby=starts.described_by.clone()/>
            {field_error(&starts)}
            <label for="ends">{crate::tr!(l, "campaign-field-ends", zone = zone)}</label>
            <input id="ends" name="ends" type="datetime-local" required value=typed.ends.clone()
                aria-invalid=ends.invalid aria-describedby=ends.described_by.clone()/>
            {field_error(&ends)}
            <label for="policy">{l.t("policy")}</label>
            <select id="policy" name="policy" aria-invalid=policy.invalid aria-describedby=policy.described_by.clone()>{policies}</select>
            {field_error(&policy)}
            <label for="compensation_mode">{l.t("campaign-mode")}</label>
            <select id="compensation_mode" name="compensation_mode" aria-invalid=mode.invalid aria-describedby=mode.described_by.clone()>{modes}</select>
            {field_error(&mode)}
            <p class="note">{l.t("campaign-mode-applies-only-to-swap")}</p>
            <p class="actions">
                <button type="submit" class="primary" data-testid="create">{l.t("campaign-create-button")}</button>
                <a class="button" href=LIST>{l.t("cancel")}</a>
            </p>
        </form>
    }
}

fn new_response(
    staff: &Staff,
    now: DateTime<Utc>,
    typed: &CreateForm,
    errors: &FieldErrors,
) -> Response {
    let l = staff.lang;
    let (typed, shown_errors) = (typed.clone(), errors.clone());
    let mut r = staff.page(l.t("campaign-new"), move || {
        view! {
            <section aria-labelledby="new-heading">
                <h2 id="new-heading">{l.t("campaign-new")}</h2>
                <p class="note">{l.t("campaign-new-explained")}</p>
                <NewCampaignForm now=now typed=typed errors=shown_errors/>
            </section>
        }
    });
    if !errors.is_empty() {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

pub(super) async fn new_page(State(s): State<AppState>, staff: Staff) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    new_response(
        &staff,
        s.service.now(),
        &CreateForm::default(),
        &FieldErrors::default(),
    )
}

/// A `datetime-local` value (`2026-11-11T20:00`) in the business zone.
fn local_time(raw: &str) -> Option<DateTime<Utc>> {
    use chrono::NaiveDateTime;
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(raw.trim(), f).ok())
        .and_then(crate::i18n::zone::from_local)
}

/// The message beside a field of the create form for the service's
/// refusal of it.
fn create_field_message(l: Lang, field: &str) -> Option<(&'static str, &'static str)> {
    Some(match field {
        "name" => ("name", l.t("campaign-error-name")),
        "final_payment_starts_at" => ("final_payment_starts_at", l.t("campaign-error-time")),
        "final_payment_ends_at" => ("final_payment_ends_at", l.t("campaign-error-ends")),
        "policy" => ("policy", l.t("campaign-error-policy")),
        "compensation_mode" => ("compensation_mode", l.t("campaign-error-mode")),
        _ => return None,
    })
}

pub(super) async fn create(
    State(s): State<AppState>,
    staff: Staff,
    body: Bytes,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    #[derive(Deserialize)]
    struct WithId {
        form_id: Option<String>,
    }
    let form: CreateForm = staff.posted(&body)?;
    let fid = crate::web::auth::parse_form::<WithId>(&body)
        .ok()
        .and_then(|w| w.form_id);
    let l = staff.lang;
    let mut errors = FieldErrors::default();
    let starts = local_time(&form.starts);
    let ends = local_time(&form.ends);
    if starts.is_none() {
        errors.add(
            "final_payment_starts_at",
            l.t("campaign-error-time").to_string(),
        );
    }
    if ends.is_none() {
        errors.add(
            "final_payment_ends_at",
            l.t("campaign-error-time").to_string(),
        );
    }
    if form.name.trim().is_empty() {
        errors.add("name", l.t("campaign-error-name").to_string());
    }
    if !errors.is_empty() {
        return Ok(new_response(&staff, s.service.now(), &form, &errors));
    }
    let input = CampaignInput {
        name: Some(form.name.clone()),
        final_payment_starts_at: starts.map(crate::domain::time::rfc3339),
        final_payment_ends_at: ends.map(crate::domain::time::rfc3339),
        policy: Some(form.policy.clone()),
        compensation_mode: Some(form.compensation_mode.clone()),
    };
    let key = idem(&staff, fid.as_deref(), NEW, &body);
    Ok(
        match s
            .service
            .create_campaign_as(&staff.ctx(), &staff.authority(), key.as_ref(), input)
            .await
        {
            Ok(done) => {
                let v = match done {
                    crate::service::Executed::Fresh(v) => Some((v.id, v.name)),
                    crate::service::Executed::Replayed { body, .. } => {
                        serde_json::from_str::<serde_json::Value>(&body)
                            .ok()
                            .and_then(|v| {
                                Some((
                                    CampaignId::from_wire(v.get("id")?.as_str()?),
                                    v.get("name")?.as_str()?.to_string(),
                                ))
                            })
                    }
                };
                match v {
                    Some((id, name)) => staff.done(
                        &paths::campaign(&id),
                        crate::tr!(l, "campaign-created", name = name),
                    ),
                    None => staff.done(LIST, l.t("campaign-created-plain").to_string()),
                }
            }
            Err(ServiceError::Invalid(f)) => {
                match create_field_message(l, f.field) {
                    Some((field, m)) => errors.add(field, m.to_string()),
                    None => errors.add("name", f.message),
                }
                new_response(&staff, s.service.now(), &form, &errors)
            }
            Err(ServiceError::IdempotencyKeyReused | ServiceError::IdempotencyInProgress) => {
                errors.add("name", l.t("action-error-form-reused").to_string());
                new_response(&staff, s.service.now(), &form, &errors)
            }
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}
