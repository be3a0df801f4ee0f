//! Wake-up rules (过期前唤醒) in the operator console, on
//! [`crate::service::wakeup`]:
//!
//! - `/console/wakeup`: the rules with their results (woken against
//!   control) and the create form (name, hours before the end, active
//!   within days, templates or all, an optional wake-up coupon's template,
//!   control share). A refused form comes back (422) as typed with the
//!   message at the field.
//! - `/console/wakeup/{id}`: one rule in words, its results per group
//!   (woken, control, inactive, ordered since: users, expiring coupons, used before their
//!   end, share used, wake-up coupons) and pause / resume with a reason.
//!
//! Operators and admins only, enforced in the service; support gets the
//! 403 page.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::components::Time;
use super::context::{csrf_token, lang};
use super::i18n::Lang;
use super::layout::{FieldErrors, actor_text, field_error};
use super::paths;
use super::reminders::offset_label;
use crate::domain::ids::WakeupRuleId;
use crate::domain::permissions::Permission;
use crate::domain::wakeup::{WakeupOutcome, WakeupRuleInput, WakeupRuleSpec};
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::views::TemplateView;
use crate::service::wakeup::{OutcomeFigures, WakeupRuleReport, per_mille_text};

const LIST: &str = "/console/wakeup";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(LIST, get(list).post(create))
        .route("/console/wakeup/{id}", get(detail))
        .route(
            "/console/wakeup/{id}/pause",
            post(|s, staff, id, body| switch(s, staff, id, body, false)),
        )
        .route(
            "/console/wakeup/{id}/resume",
            post(|s, staff, id, body| switch(s, staff, id, body, true)),
        )
}

fn forbidden(l: Lang) -> Response {
    WebError::forbidden(l.t("wakeup-needs-operator")).into_response()
}

/// The create form as typed.
#[derive(Debug, Clone, Default)]
struct CreateForm {
    csrf: Option<String>,
    name: String,
    lead_hours: String,
    active_days: String,
    template_ids: Vec<String>,
    bonus_template_id: String,
    control_percent: String,
}

/// `template_ids` repeats, so the form is read pair by pair.
fn parse_create(body: &Bytes) -> CreateForm {
    let mut f = CreateForm {
        control_percent: "10".into(),
        ..CreateForm::default()
    };
    let mut control_seen = false;
    for (k, v) in form_urlencoded::parse(body) {
        match k.as_ref() {
            "csrf" => f.csrf = Some(v.into_owned()),
            "name" => f.name = v.into_owned(),
            "lead_hours" => f.lead_hours = v.into_owned(),
            "active_days" => f.active_days = v.into_owned(),
            "template_ids" if f.template_ids.len() < 100 => f.template_ids.push(v.into_owned()),
            "bonus_template_id" => f.bonus_template_id = v.into_owned(),
            "control_percent" if !control_seen => {
                control_seen = true;
                f.control_percent = v.into_owned();
            }
            _ => {}
        }
    }
    f
}

/// A whole number typed in a field (digits only, at most 9 of them).
fn whole(raw: &str) -> Option<i64> {
    let t = raw.trim();
    (!t.is_empty() && t.len() <= 9 && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

impl CreateForm {
    fn input(&self, l: Lang) -> (WakeupRuleInput, FieldErrors) {
        let mut errors = FieldErrors::default();
        let lead = whole(&self.lead_hours).map(|h| h * 3600);
        if lead.is_none() {
            errors.add("lead_hours", l.t("wakeup-error-lead").to_string());
        }
        let active = whole(&self.active_days).map(|d| d * 86_400);
        if active.is_none() {
            errors.add("active_days", l.t("wakeup-error-active").to_string());
        }
        let control = whole(&self.control_percent);
        if control.is_none() {
            errors.add("control_percent", l.t("wakeup-error-control").to_string());
        }
        (
            WakeupRuleInput {
                name: Some(self.name.clone()),
                lead_seconds: lead,
                active_within_seconds: active,
                template_ids: self.template_ids.clone(),
                bonus_template_id: Some(self.bonus_template_id.clone()),
                control_percent: control,
            },
            errors,
        )
    }
}

/// The form field a service field is shown beside, and its words.
fn form_field(l: Lang, service_field: &str) -> (&'static str, String) {
    let (field, key) = match service_field {
        "name" => ("name", "wakeup-error-name"),
        "lead_seconds" => ("lead_hours", "wakeup-error-lead"),
        "active_within_seconds" => ("active_days", "wakeup-error-active"),
        "template_ids" => ("template_ids", "wakeup-error-templates"),
        "bonus_template_id" => ("bonus_template_id", "wakeup-error-bonus"),
        "control_percent" => ("control_percent", "wakeup-error-control"),
        _ => ("form", "template-error-form"),
    };
    (field, l.t(key).to_string())
}

async fn list(State(s): State<AppState>, staff: Staff) -> Response {
    page(
        &s,
        &staff,
        CreateForm {
            control_percent: "10".into(),
            lead_hours: "24".into(),
            active_days: "7".into(),
            ..CreateForm::default()
        },
        FieldErrors::default(),
    )
    .await
}

async fn page(s: &AppState, staff: &Staff, form: CreateForm, errors: FieldErrors) -> Response {
    let l = staff.lang;
    let rules = match s.service.wakeup_rules_as(&staff.authority()).await {
        Ok(r) => r,
        Err(ServiceError::Forbidden(_)) => return forbidden(l),
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let templates = match s.service.list_templates(None, None, None, None, 200).await {
        Ok(p) => p.templates,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let refused = !errors.is_empty();
    let mut r = staff.page(l.t("wakeup-title"), move || {
        view! {
            <p class="note">{l.t("wakeup-intro")}</p>
            <section aria-labelledby="wakeup-rules">
                <h2 id="wakeup-rules">{l.t("wakeup-rules")}</h2>
                <RulesTable rules=rules/>
            </section>
            <CreateRuleForm form=form errors=errors templates=templates/>
        }
    });
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

/// Whether a rule is active or paused, as a badge.
#[component]
fn Standing(active: bool) -> impl IntoView {
    let (class, key) = if active {
        ("badge badge-ok", "wakeup-active")
    } else {
        ("badge badge-warning", "wakeup-paused")
    };
    view! { <span class=class>{lang().t(key)}</span> }
}

fn templates_text(l: Lang, r: &WakeupRuleReport) -> String {
    if r.rule.templates.is_empty() {
        l.t("wakeup-all-templates").to_string()
    } else {
        r.rule
            .templates
            .iter()
            .map(|(_, n)| n.clone())
            .collect::<Vec<_>>()
            .join(l.t("template-change-separator"))
    }
}

fn compare_text(l: Lang, r: &WakeupRuleReport) -> String {
    crate::tr!(
        l,
        "wakeup-compare",
        sent = per_mille_text(r.sent.used_per_mille()),
        control = per_mille_text(r.control.used_per_mille())
    )
}

/// The rules: name, lead, templates, results (woken against control) and
/// whether each is active; a note when there are none.
#[component]
fn RulesTable(rules: Vec<WakeupRuleReport>) -> impl IntoView {
    let l = lang();
    if rules.is_empty() {
        return view! { <p class="note" data-testid="no-wakeup-rules">{l.t("wakeup-none")}</p> }
            .into_any();
    }
    let rows = rules
        .into_iter()
        .map(|r| {
            let href = paths::wakeup_rule(&r.rule.id);
            let lead = offset_label(l, r.rule.lead_seconds);
            let templates = templates_text(l, &r);
            let compare = compare_text(l, &r);
            view! {
                <tr data-testid="wakeup-row">
                    <td data-label=l.t("wakeup-name")><a href=href>{r.rule.name.clone()}</a></td>
                    <td data-label=l.t("wakeup-lead")>{lead}</td>
                    <td data-label=l.t("wakeup-templates")>{templates}</td>
                    <td data-label=l.t("wakeup-results")>{compare}</td>
                    <td class="nowrap" data-label=l.t("wakeup-status")><Standing active=r.rule.active/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="wakeup-rules">
                <thead><tr>
                    <th scope="col">{l.t("wakeup-name")}</th>
                    <th scope="col">{l.t("wakeup-lead")}</th>
                    <th scope="col">{l.t("wakeup-templates")}</th>
                    <th scope="col">{l.t("wakeup-results")}</th>
                    <th scope="col">{l.t("wakeup-status")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

fn text_row(
    errors: &FieldErrors,
    field: &'static str,
    label: &'static str,
    value: String,
    hint: Option<&'static str>,
) -> impl IntoView + use<> {
    let st = errors.input_attrs(field, field);
    let hint = hint.map(|h| view! { <span class="note">{h}</span> });
    view! {
        <div class="row">
            <label for=field>{label}</label>
            {hint}
            <input id=field name=field type="text" value=value
                aria-invalid=st.invalid aria-describedby=st.described_by.clone()/>
            {field_error(&st)}
        </div>
    }
}

/// The create form, as typed (each refused field with its message): name,
/// hours before the end, active within days, templates, the wake-up
/// coupon's template and the control share.
#[component]
fn CreateRuleForm(
    form: CreateForm,
    errors: FieldErrors,
    templates: Vec<TemplateView>,
) -> impl IntoView {
    let (l, f, e) = (lang(), form, &errors);
    let tpl = e.input_attrs("template_ids", "template_ids");
    let bonus = e.input_attrs("bonus_template_id", "bonus_template_id");
    let boxes = templates
        .iter()
        .map(|t| {
            let checked = f.template_ids.iter().any(|x| *x == t.id);
            let id = format!("tpl-{}", t.id);
            view! {
                <label><input type="checkbox" id=id name="template_ids" value=t.id.clone() checked=checked/>" "{t.name.clone()}</label>
            }
        })
        .collect_view();
    let options = templates
        .into_iter()
        .map(|t| {
            let selected = f.bonus_template_id == t.id;
            view! { <option value=t.id selected=selected>{t.name}</option> }
        })
        .collect_view();
    let form_error = field_error(&e.input_attrs("form", "form"));
    view! {
        <section aria-labelledby="wakeup-new">
            <h2 id="wakeup-new">{l.t("wakeup-new")}</h2>
            <form method="post" action=LIST class="stack" data-testid="wakeup-form" novalidate=true>
                <input type="hidden" name="csrf" value=csrf_token()/>
                {form_error}
                {text_row(e, "name", l.t("wakeup-name"), f.name.clone(), None)}
                {text_row(e, "lead_hours", l.t("wakeup-lead-hours"), f.lead_hours.clone(), Some(l.t("wakeup-lead-hint")))}
                {text_row(e, "active_days", l.t("wakeup-active-days"), f.active_days.clone(), Some(l.t("wakeup-active-hint")))}
                <fieldset aria-invalid=tpl.invalid aria-describedby=tpl.described_by.clone()>
                    <legend>{l.t("wakeup-templates")}</legend>
                    <p class="note">{l.t("wakeup-templates-hint")}</p>
                    {boxes}
                    {field_error(&tpl)}
                </fieldset>
                <div class="row">
                    <label for="bonus_template_id">{l.t("wakeup-bonus")}</label>
                    <span class="note">{l.t("wakeup-bonus-hint")}</span>
                    <select id="bonus_template_id" name="bonus_template_id"
                        aria-invalid=bonus.invalid aria-describedby=bonus.described_by.clone()>
                        <option value="">{l.t("wakeup-no-bonus")}</option>
                        {options}
                    </select>
                    {field_error(&bonus)}
                </div>
                {text_row(e, "control_percent", l.t("wakeup-control"), f.control_percent.clone(), Some(l.t("wakeup-control-hint")))}
                <p class="actions"><button type="submit" class="primary" data-testid="create-wakeup">{l.t("wakeup-create")}</button></p>
            </form>
        </section>
    }
}

async fn create(State(s): State<AppState>, staff: Staff, body: Bytes) -> Response {
    let form = parse_create(&body);
    if let Err(e) = staff.check_csrf(form.csrf.as_deref()) {
        return e.into_response();
    }
    let l = staff.lang;
    if !staff.may(Permission::ManageWakeups) {
        return forbidden(l);
    }
    let (input, errors) = form.input(l);
    if !errors.is_empty() {
        return page(&s, &staff, form, errors).await;
    }
    let created = match WakeupRuleSpec::parse(input) {
        Ok(spec) => {
            s.service
                .create_wakeup_rule_as(&staff.ctx(), &staff.authority(), spec)
                .await
        }
        Err(e) => Err(e.into()),
    };
    match created {
        Ok(rule) => staff.done(
            &paths::wakeup_rule(&rule.id),
            crate::tr!(l, "wakeup-created-flash", name = rule.name),
        ),
        Err(ServiceError::Invalid(f)) => {
            let mut errors = FieldErrors::default();
            let (field, words) = form_field(l, f.field);
            errors.add(field, words);
            page(&s, &staff, form, errors).await
        }
        Err(ServiceError::Forbidden(_)) => forbidden(l),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

async fn detail(State(s): State<AppState>, staff: Staff, Path(id): Path<WakeupRuleId>) -> Response {
    detail_page(&s, &staff, &id, String::new(), FieldErrors::default()).await
}

/// One group's results: users, expiring coupons, used before their end,
/// share used, wake-up coupons.
#[component]
fn FiguresRow(outcome: WakeupOutcome, figures: OutcomeFigures) -> impl IntoView {
    let (l, f) = (lang(), figures);
    view! {
        <tr data-testid="wakeup-figures" data-outcome=outcome.as_str()>
            <th scope="row">{l.t(outcome.label_key())}</th>
            <td data-label=l.t("wakeup-users")>{f.users}</td>
            <td data-label=l.t("wakeup-coupons")>{f.coupons}</td>
            <td data-label=l.t("wakeup-used")>{f.used}</td>
            <td data-label=l.t("wakeup-used-share")>{per_mille_text(f.used_per_mille())}</td>
            <td data-label=l.t("wakeup-bonus-coupons")>{f.bonus_coupons}</td>
        </tr>
    }
}

async fn detail_page(
    s: &AppState,
    staff: &Staff,
    id: &WakeupRuleId,
    reason: String,
    errors: FieldErrors,
) -> Response {
    let l = staff.lang;
    let r = match s.service.wakeup_rule_as(&staff.authority(), id).await {
        Ok(r) => r,
        Err(ServiceError::Forbidden(_)) => return forbidden(l),
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let refused = !errors.is_empty();
    let title = crate::tr!(l, "wakeup-rule-title", name = r.rule.name.clone());
    let mut resp = staff.page(&title, move || {
        view! { <RuleDetail report=r reason=reason errors=errors/> }
    });
    if refused {
        *resp.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    resp
}

/// One rule in words (lead, who, templates, wake-up coupon, control share,
/// created), its results per group, and the pause or resume form with
/// the reason as typed (`errors`: its message when refused).
#[component]
fn RuleDetail(report: WakeupRuleReport, reason: String, errors: FieldErrors) -> impl IntoView {
    let (l, r) = (lang(), report);
    let lead = offset_label(l, r.rule.lead_seconds);
    let days = r.rule.active_within_seconds / 86_400;
    let active_words = if r.rule.active_within_seconds % 86_400 == 0 {
        crate::tr!(l, "wakeup-active-words", days = days)
    } else {
        crate::tr!(
            l,
            "wakeup-active-hours-words",
            hours = r.rule.active_within_seconds / 3600
        )
    };
    let control_words = crate::tr!(l, "wakeup-control-words", pct = r.rule.control_percent);
    let bonus = r
        .rule
        .bonus_template
        .as_ref()
        .map_or_else(|| l.t("wakeup-no-bonus").to_string(), |(_, n)| n.clone());
    let (path, label, testid) = if r.rule.active {
        (
            paths::wakeup_rule_pause(&r.rule.id),
            l.t("wakeup-pause"),
            "pause",
        )
    } else {
        (
            paths::wakeup_rule_resume(&r.rule.id),
            l.t("wakeup-resume"),
            "resume",
        )
    };
    let reason_st = errors.input_attrs("reason", "reason");
    let templates = templates_text(l, &r);
    let compare = compare_text(l, &r);
    let created = r.rule.created_at.clone();
    let by = actor_text(l, &r.rule.created_by);
    view! {
        <section aria-labelledby="wakeup-facts">
            <h2 id="wakeup-facts">{l.t("wakeup-rule")}" "<Standing active=r.rule.active/></h2>
            <dl class="facts">
                <dt>{l.t("wakeup-name")}</dt><dd>{r.rule.name.clone()}</dd>
                <dt>{l.t("wakeup-lead")}</dt><dd data-testid="wakeup-lead">{lead}</dd>
                <dt>{l.t("wakeup-who")}</dt><dd>{active_words}</dd>
                <dt>{l.t("wakeup-templates")}</dt><dd>{templates}</dd>
                <dt>{l.t("wakeup-bonus")}</dt><dd data-testid="wakeup-bonus">{bonus}</dd>
                <dt>{l.t("wakeup-control")}</dt><dd>{control_words}</dd>
                <dt>{l.t("wakeup-created-at")}</dt><dd><Time at=created/>" · "{by}</dd>
            </dl>
        </section>
        <section aria-labelledby="wakeup-results">
            <h2 id="wakeup-results">{l.t("wakeup-results")}</h2>
            <p data-testid="wakeup-compare">{compare}</p>
            <p class="note">{l.t("wakeup-results-note")}</p>
            <div class="table-wrap">
                <table class="stack" data-testid="wakeup-figures-table">
                    <thead><tr>
                        <th scope="col">{l.t("wakeup-group")}</th>
                        <th scope="col">{l.t("wakeup-users")}</th>
                        <th scope="col">{l.t("wakeup-coupons")}</th>
                        <th scope="col">{l.t("wakeup-used")}</th>
                        <th scope="col">{l.t("wakeup-used-share")}</th>
                        <th scope="col">{l.t("wakeup-bonus-coupons")}</th>
                    </tr></thead>
                    <tbody>
                        <FiguresRow outcome=WakeupOutcome::Sent figures=r.sent/>
                        <FiguresRow outcome=WakeupOutcome::Control figures=r.control/>
                        <FiguresRow outcome=WakeupOutcome::Inactive figures=r.inactive/>
                        <FiguresRow outcome=WakeupOutcome::Ordered figures=r.ordered/>
                    </tbody>
                </table>
            </div>
        </section>
        <section aria-labelledby="wakeup-switch">
            <h2 id="wakeup-switch">{label}</h2>
            <form method="post" action=path class="stack" data-testid="wakeup-switch-form">
                <input type="hidden" name="csrf" value=csrf_token()/>
                <label for="reason">{l.t("wakeup-reason")}</label>
                <input id="reason" name="reason" type="text" maxlength="500" value=reason
                    aria-invalid=reason_st.invalid aria-describedby=reason_st.described_by.clone()/>
                {field_error(&reason_st)}
                <p class="actions"><button type="submit" class="primary" data-testid=testid>{label}</button></p>
            </form>
            <p class="actions"><a class="button" href=LIST>{l.t("wakeup-all-rules")}</a></p>
        </section>
    }
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct SwitchForm {
    reason: String,
}

async fn switch(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<WakeupRuleId>,
    body: Bytes,
    active: bool,
) -> Result<Response, WebError> {
    let form: SwitchForm = staff.posted(&body)?;
    let l = staff.lang;
    Ok(
        match s
            .service
            .set_wakeup_rule_active_as(
                &staff.ctx(),
                &staff.authority(),
                id.clone(),
                active,
                Some(form.reason.clone()),
            )
            .await
        {
            Ok(()) => {
                let key = if active {
                    "wakeup-resumed-flash"
                } else {
                    "wakeup-paused-flash"
                };
                staff.done(&paths::wakeup_rule(&id), l.t(key).to_string())
            }
            Err(ServiceError::Invalid(f)) if f.field == "reason" => {
                let mut errors = FieldErrors::default();
                errors.add("reason", l.t("wakeup-error-reason").to_string());
                detail_page(&s, &staff, &id, form.reason, errors).await
            }
            Err(ServiceError::Forbidden(_)) => forbidden(l),
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}
