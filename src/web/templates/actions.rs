//! The template page's posts: pause / resume, end claiming and the edits,
//! and a batch of redeem codes; refused, the page again as typed.

use crate::domain::money::Cents;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::create::{CreateForm, field_words, form_field, time_field, whole_number};
use super::detail::{DetailForms, detail_page, detail_with_codes};
use super::words::{forbidden, may_manage};
use crate::domain::FieldError;
use crate::domain::ids::TemplateId;
use crate::domain::template::EditRefusal;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::templates::TemplatePatch;
use crate::web::auth::{Staff, WebError};
use crate::web::paths;
use crate::web::posted::{OrPage, Posted};

/// A batch of redeem codes asked for on the template's page
/// ([`crate::web::codes::generate`]); refused, the page again with the form as
/// typed.
pub(super) async fn generate_codes(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    body: Bytes,
) -> Result<Response, WebError> {
    Ok(
        match crate::web::codes::generate(&s, &staff, &id, &body).await {
            Ok(r) => r,
            Err(form) => detail_with_codes(&s, &staff, &id, form).await?,
        },
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ClaimingForm {
    reason: String,
}

pub(super) async fn claiming(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    body: Bytes,
    pause: bool,
) -> Result<Response, WebError> {
    let form: ClaimingForm = staff.posted(&body)?;
    let l = staff.lang;
    Ok(
        match s
            .service
            .set_template_claiming_as(
                &staff.ctx(),
                &staff.authority(),
                None,
                id.clone(),
                pause,
                Some(form.reason.clone()),
            )
            .await
        {
            Ok(done) => {
                let name = done.fresh().map(|v| v.name).unwrap_or_default();
                let key = if pause {
                    "template-paused-flash"
                } else {
                    "template-resumed-flash"
                };
                staff.done(&paths::template(&id), crate::tr!(l, key, name = name))
            }
            Err(ServiceError::Invalid(f)) if f.field == "reason" => {
                let mut forms = DetailForms {
                    reason: form.reason,
                    ..DetailForms::default()
                };
                forms
                    .errors
                    .add("reason", l.t("template-error-reason").to_string());
                detail_page(&s, &staff, &id, forms).await?
            }
            Err(ServiceError::Forbidden(_)) => forbidden(l),
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct EditForm {
    name: Option<String>,
    total_stock: Option<String>,
    claim_ends_at: Option<String>,
    now: Option<String>,
    /// The budget in yuan (a template with a budget, after its first
    /// claim).
    budget_now: Option<String>,
}

pub(super) async fn edit(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    Posted { form, body }: Posted<EditForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let full: CreateForm = staff.posted(&body)?;
    if full.full.is_some() {
        return edit_terms(&s, &staff, &id, full).await;
    }
    let current = s.service.get_template(&id).await.or_page(l)?;
    let mut forms = DetailForms {
        name: form.name.clone(),
        total_stock: form.total_stock.clone().unwrap_or_default(),
        claim_ends_at: form.claim_ends_at.clone().unwrap_or_default(),
        budget_now: form.budget_now.clone(),
        ..DetailForms::default()
    };
    let mut patch = TemplatePatch {
        end_claiming_now: form.now.is_some(),
        ..TemplatePatch::default()
    };
    // Only what changed is sent: an unchanged name or stock is no edit.
    if let Some(name) = form.name.as_deref().filter(|n| n.trim() != current.name) {
        patch.name = Some(name.to_string());
    }
    match whole_number(form.total_stock.as_deref().unwrap_or_default()) {
        Ok(n) if n != current.total_stock => patch.total_stock = n,
        Ok(_) => {}
        Err(()) => forms
            .errors
            .add("total_stock", l.t("template-error-total-stock").to_string()),
    }
    if let Some(typed) = form.budget_now.as_deref() {
        match super::create::yuan_field(typed) {
            Ok(Some(cents)) if Some(cents) != current.budget_cents.map(Cents::get) => {
                patch.budget_cents = Some(cents);
            }
            Ok(Some(_)) => {}
            _ => forms
                .errors
                .add("budget_now", l.t("template-error-budget").to_string()),
        }
    }
    if !patch.end_claiming_now {
        // The end-claiming form sends its time field, the edit form none.
        match form.claim_ends_at.as_deref().map(time_field) {
            None => {}
            Some(Ok(Some(at))) => patch.claim_ends_at = Some(at),
            Some(_) => forms.errors.add(
                "claim_ends_at",
                l.t("template-error-claim-ends-at").to_string(),
            ),
        }
    }
    if !forms.errors.is_empty() {
        return detail_page(&s, &staff, &id, forms).await;
    }
    let (ending, ending_now) = (patch.claim_ends_at.is_some(), patch.end_claiming_now);
    Ok(
        match s
            .service
            .edit_template_as(&staff.ctx(), &staff.authority(), None, id.clone(), patch)
            .await
        {
            Ok(done) => {
                let name = done.fresh().map(|v| v.name).unwrap_or_default();
                let text = if ending_now || ending {
                    crate::tr!(l, "template-claiming-ends-flash", name = name)
                } else {
                    crate::tr!(l, "template-saved-flash", name = name)
                };
                staff.done(&paths::template(&id), text)
            }
            Err(ServiceError::Refused { message, .. })
                if EditRefusal::from_message(&message).is_some() =>
            {
                let why = EditRefusal::from_message(&message).unwrap_or(EditRefusal::UnsafeField);
                // The budget of the safe edit is its own field (the
                // full edit's is disabled once coupons are claimed).
                let field = match why.field() {
                    "budget" => "budget_now",
                    other => other,
                };
                forms.errors.add(field, l.t(why.label_key()).to_string());
                detail_page(&s, &staff, &id, forms).await?
            }
            Err(ServiceError::Invalid(f)) => {
                let field = match f.field {
                    "name" => "name",
                    "total_stock" => "total_stock",
                    "claim_ends_at" => "claim_ends_at",
                    "budget_cents" => "budget_now",
                    _ => "form",
                };
                let words = match field {
                    "name" => l.t("template-error-name"),
                    "total_stock" => l.t("template-error-total-stock"),
                    "claim_ends_at" => l.t("template-error-claim-ends-at"),
                    "budget_now" => l.t("template-error-budget"),
                    _ => l.t("template-error-form"),
                };
                forms.errors.add(field, words.to_string());
                detail_page(&s, &staff, &id, forms).await?
            }
            Err(ServiceError::Forbidden(_)) => forbidden(l),
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}

/// A full edit (every term, before the first claim) as typed: refused,
/// the page again with the form as typed and the message beside its
/// field; saved, the page with a flash.
async fn edit_terms(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    form: CreateForm,
) -> Result<Response, WebError> {
    let l = staff.lang;
    if !may_manage(staff) {
        return Ok(forbidden(l));
    }
    let (input, mut errors) = form.input(l);
    if errors.is_empty() {
        match s
            .service
            .edit_template_terms_as(&staff.ctx(), &staff.authority(), id.clone(), input)
            .await
        {
            Ok(done) => {
                let name = done.fresh().map(|v| v.name).unwrap_or_default();
                return Ok(staff.done(
                    &paths::template(id),
                    crate::tr!(l, "template-saved-flash", name = name),
                ));
            }
            Err(ServiceError::Refused { message, .. })
                if EditRefusal::from_message(&message).is_some() =>
            {
                let why =
                    EditRefusal::from_message(&message).unwrap_or(EditRefusal::AlreadyClaimed);
                errors.add(why.field(), l.t(why.label_key()).to_string());
            }
            Err(ServiceError::Invalid(FieldError { field, .. })) => {
                let at = form_field(field);
                errors.add(at, field_words(l, at));
            }
            Err(ServiceError::Forbidden(_)) => return Ok(forbidden(l)),
            Err(e) => return Err(WebError::from_service(l, e)),
        }
    }
    let forms = DetailForms {
        terms: Some(form),
        errors,
        ..DetailForms::default()
    };
    detail_page(s, staff, id, forms).await
}
