//! The policy change: choose a policy, see a preview of the orders whose
//! final-payment outcome changes and the extra compensation, confirm.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use leptos::prelude::*;
use serde::Deserialize;

use super::words::{ChangeForm, change_refusal, operator_only, policy_staff_text};
use crate::domain::campaign::Policy;
use crate::domain::final_payment::CouponOutcome;
use crate::domain::ids::CampaignId;
use crate::domain::money::CentsDelta;
use crate::domain::time::parse_rfc3339;
use crate::http::AppState;
use crate::service::campaigns::{CampaignPatch, PolicyChangePreview};
use crate::web::actions::{form_id, idem};
use crate::web::auth::{Staff, WebError};
use crate::web::context::lang;
use crate::web::i18n::Lang;
use crate::web::layout::{FieldErrors, field_error, policy_label, time_at};
use crate::web::paths;

#[derive(Debug, Deserialize)]
pub(super) struct PolicyQuery {
    policy: Option<String>,
}

fn outcome_label(l: Lang, o: CouponOutcome) -> &'static str {
    match o {
        CouponOutcome::Applied => l.t("campaign-outcome-applied"),
        CouponOutcome::NoDiscountExpired => l.t("campaign-outcome-no-discount"),
        CouponOutcome::Swapped => l.t("campaign-outcome-swapped"),
        CouponOutcome::Compensated => l.t("campaign-outcome-compensated"),
        CouponOutcome::None => l.t("campaign-outcome-none"),
    }
}

/// What a policy change would do: the policy before → after, when it is
/// judged, the orders read and changed, the extra compensation, and the
/// changes of outcome.
#[component]
fn PreviewFigures(preview: PolicyChangePreview) -> impl IntoView {
    let (l, p) = (lang(), preview);
    let f = &p.figures;
    let at_least = |n: String| {
        if p.capped {
            crate::tr!(l, "campaign-preview-at-least", n = n)
        } else {
            n
        }
    };
    let changed = at_least(f.changed_orders.to_string());
    let cost = at_least(CentsDelta::from_stored(f.extra_compensation_cents).shown_as_change());
    let rows = f
        .changes
        .iter()
        .map(|c| {
            view! {
                <tr data-testid="preview-change">
                    <td data-label=l.t("campaign-outcome-now")>{outcome_label(l, c.from)}</td>
                    <td data-label=l.t("campaign-outcome-then")>{outcome_label(l, c.to)}</td>
                    <td data-label=l.t("campaign-orders")>{c.orders}</td>
                    <td class="money" data-label=l.t("campaign-extra-cost")>{CentsDelta::from_stored(c.extra_compensation_cents).shown_as_change()}</td>
                </tr>
            }
        })
        .collect_view();
    let table = (!f.changes.is_empty()).then(|| {
        view! {
            <div class="table-wrap">
                <table class="stack" data-testid="preview-changes">
                    <thead><tr>
                        <th scope="col">{l.t("campaign-outcome-now")}</th>
                        <th scope="col">{l.t("campaign-outcome-then")}</th>
                        <th scope="col">{l.t("campaign-orders")}</th>
                        <th scope="col">{l.t("campaign-extra-cost")}</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
    });
    let judged = parse_rfc3339(&p.judged_at).ok();
    view! {
        <dl class="facts" data-testid="preview">
            <dt>{l.t("policy")}</dt>
            <dd>{policy_label(l, p.campaign.policy)}" → "<strong data-testid="proposed">{policy_label(l, p.proposed)}</strong></dd>
            <dt>{l.t("campaign-preview-judged-at")}</dt>
            <dd>{judged.map(time_at)}</dd>
            <dt>{l.t("campaign-preview-orders-read")}</dt>
            <dd data-testid="orders-read">{at_least(f.orders_read.to_string())}</dd>
            <dt>{l.t("campaign-preview-changed")}</dt>
            <dd data-testid="changed-orders">{changed}</dd>
            <dt>{l.t("campaign-extra-cost")}</dt>
            <dd class="money" data-testid="extra-cost">{cost}</dd>
        </dl>
        {table}
        <p class="note">{l.t("campaign-preview-explained")}</p>
        <p class="note">{policy_staff_text(l, p.proposed)}</p>
    }
}

fn preview_response(
    staff: &Staff,
    p: &PolicyChangePreview,
    reason: &str,
    errors: &FieldErrors,
) -> Response {
    let l = staff.lang;
    let action = paths::campaign_policy(&p.campaign.id);
    let csrf = staff.session.csrf_token.clone();
    let fid = form_id();
    let st = errors.input_attrs("reason", "reason");
    let pol = errors.input_attrs("policy", "policy");
    let typed = crate::web::escape_html(reason);
    let back = paths::campaign(&p.campaign.id);
    let title = crate::tr!(l, "campaign-preview-title", name = p.campaign.name.clone());
    let heading = title.clone();
    let proposed = p.proposed.as_str();
    let preview = p.clone();
    let mut r = staff.page(&title, move || {
        view! {
            <section class="confirm" aria-labelledby="preview-heading">
                <h2 id="preview-heading">{heading}</h2>
                <PreviewFigures preview=preview/>
                <form method="post" action=action class="stack" data-testid="confirm-form">
                    <input type="hidden" name="csrf" value=csrf/>
                    <input type="hidden" name="form_id" value=fid/>
                    <input type="hidden" name="policy" value=proposed/>
                    {field_error(&pol)}
                    <label for="reason">{l.t("campaign-reason")}</label>
                    <textarea id="reason" name="reason" required=true maxlength="500"
                        aria-invalid=st.invalid aria-describedby=st.described_by.clone()>{typed}</textarea>
                    {field_error(&st)}
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="confirm">{l.t("campaign-confirm-policy")}</button>
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

pub(super) async fn preview_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
    Query(q): Query<PolicyQuery>,
) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    let l = staff.lang;
    let Some(proposed) = q.policy.as_deref().and_then(Policy::parse) else {
        return WebError::bad_request(l.t("campaign-error-policy").to_string()).into_response();
    };
    match s
        .service
        .preview_policy_change(&id, proposed.as_str())
        .await
    {
        Ok(p) => preview_response(&staff, &p, "", &FieldErrors::default()),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

pub(super) async fn change_policy(
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
    let path = paths::campaign_policy(&id);
    let key = idem(&staff, form.form_id.as_deref(), &path, &body);
    let patch = CampaignPatch {
        policy: Some(form.policy.clone()),
        compensation_mode: None,
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
                "campaign-policy-changed",
                policy = Policy::parse(&form.policy).map_or("", |p| policy_label(l, p))
            ),
        ),
        Err(e) => {
            let Some((field, message)) = change_refusal(l, &e, "policy") else {
                return Err(WebError::from_service(l, e));
            };
            let mut errors = FieldErrors::default();
            errors.add(field, message);
            match s.service.preview_policy_change(&id, &form.policy).await {
                Ok(p) => preview_response(&staff, &p, &form.reason, &errors),
                Err(e) => WebError::from_service(l, e).into_response(),
            }
        }
    })
}
