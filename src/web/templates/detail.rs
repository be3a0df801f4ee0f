//! A template's page: its facts, the forms that manage it (pause /
//! resume, end claiming, edit), its bulk jobs, code batches and staff log.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use leptos::prelude::*;

use super::create::{CreateForm, refund_rule_options, text_input_at};
use super::words::{
    StandingBadge, budget_text, count_or_unlimited, counts_text, status_label, stock_text,
    view_words,
};
use crate::domain::discount::DiscountKind;
use crate::domain::ids::TemplateId;
use crate::domain::money::Cents;
use crate::domain::permissions::Permission;
use crate::domain::template::{
    ClaimStanding, TemplateChanges, parse_claiming_detail, spread_words,
};
use crate::domain::time::parse_rfc3339;
use crate::http::AppState;
use crate::service::audit::StaffAuditView;
use crate::service::templates::actions;
use crate::service::views::TemplateView;
use crate::web::auth::{Staff, WebError};
use crate::web::bulk::BulkSection;
use crate::web::codes::CodeBatches;
use crate::web::components::{IdsDetails, OptTime, StaffLog, StaffLogRow, Time};
use crate::web::context::{csrf_token, lang, viewer_may};
use crate::web::i18n::Lang;
use crate::web::layout::{FieldErrors, actor_text, field_error, words_text};
use crate::web::paths;
use crate::web::posted::OrPage;

/// The forms of the detail page as typed, with their messages, after a
/// refused post.
#[derive(Debug, Clone, Default)]
pub(super) struct DetailForms {
    pub(super) reason: String,
    pub(super) name: Option<String>,
    pub(super) total_stock: String,
    pub(super) claim_ends_at: String,
    /// The safe edit's budget as typed, after a refusal.
    pub(super) budget_now: Option<String>,
    /// The full edit as typed (every term), after a refusal.
    pub(super) terms: Option<CreateForm>,
    pub(super) errors: FieldErrors,
    /// The redeem-code form as typed ([`crate::web::codes`]).
    pub(super) codes: crate::web::codes::CodeForm,
}

/// The template's page with the redeem-code form as typed after a refusal
/// (422).
pub(super) async fn detail_with_codes(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    codes: crate::web::codes::CodeForm,
) -> Result<Response, WebError> {
    let forms = DetailForms {
        codes,
        ..DetailForms::default()
    };
    detail_page(s, staff, id, forms).await
}

pub(super) async fn detail(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
) -> Result<Response, WebError> {
    detail_page(&s, &staff, &id, DetailForms::default()).await
}

pub(super) async fn detail_page(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    forms: DetailForms,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let t = s.service.get_template(id).await.or_page(l)?;
    let history = s.service.template_history(id).await.or_page(l)?;
    let refused = !forms.errors.is_empty() || forms.codes.is_refused();
    let batches = crate::web::codes::template_batches(s, staff, &t).await;
    let title = crate::tr!(l, "template-title", name = t.name.clone());
    let jobs = crate::web::bulk::template_jobs(s, &t).await;
    let mut r = staff.page(&title, move || {
        let codes_form = forms.codes.clone();
        let manage = viewer_may(Permission::ManageTemplates)
            .then(|| view! { <ManageForms template=t.clone() forms=forms/> });
        view! {
            <TemplateFacts template=t.clone()/>
            {manage}
            <BulkSection template_id=t.id.clone() jobs=jobs/>
            <CodeBatches template_id=t.id.clone() batches=batches form=codes_form/>
            <section aria-labelledby="template-history">
                <h2 id="template-history">{l.t("template-history")}</h2>
                <TemplateHistory rows=history/>
            </section>
        }
    });
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(r)
}

/// A template's standing, rule, stock, limits and times, with links to
/// its coupons (and, for operators and admins, its report and a copy)
/// and its ids.
#[component]
fn TemplateFacts(template: TemplateView) -> impl IntoView {
    let (l, t) = (lang(), template);
    let words = words_text(l, &view_words(&t));
    let coupons_href = paths::coupons_of_template(&t.id);
    let report_href = paths::template_report(&t.id);
    let copy_href = paths::template_copy(&t.id);
    let report = viewer_may(Permission::ManageTemplates).then(|| {
        view! {
            " "<a class="button" href=report_href data-testid="template-report">{l.t("report-link")}</a>
            " "<a class="button" href=copy_href data-testid="duplicate-template">{l.t("template-duplicate")}</a>
        }
    });
    let kind = l.t(t.kind.label_key());
    let per_user = count_or_unlimited(l, t.per_user_limit);
    let spread = spread_words(t.expiry_spread_seconds).map_or_else(
        || l.t("template-no-expiry-spread").to_string(),
        |m| l.msg(&m),
    );
    let ids = vec![("id-template", t.id.to_string())];
    view! {
        <section aria-labelledby="template-facts">
            <h2 id="template-facts">
                {l.t("template")}" "
                <span data-testid="template-standing"><StandingBadge standing=t.status/></span>
            </h2>
            <dl class="facts">
                <dt>{l.t("template-name")}</dt><dd data-testid="template-name">{t.name.clone()}</dd>
                <dt>{l.t("template-rule")}</dt><dd data-testid="template-rule">{words}</dd>
                <dt>{l.t("template-kind")}</dt><dd>{kind}</dd>
                <dt>{l.t("template-stock-heading")}</dt><dd data-testid="template-stock">{stock_text(l, &t)}</dd>
                <dt>{l.t("template-budget")}</dt><dd data-testid="template-budget">{budget_text(l, &t)}</dd>
                <dt>{l.t("template-per-user-limit")}</dt><dd>{per_user}</dd>
                <dt>{l.t("template-expiry-spread")}</dt><dd data-testid="template-expiry-spread">{spread}</dd>
                <dt>{l.t("template-coupons-by-status")}</dt><dd data-testid="template-counts">{counts_text(l, &t)}</dd>
                <dt>{l.t("template-paused-at")}</dt><dd><OptTime at=t.paused_at.clone()/></dd>
                <dt>{l.t("template-claim-ends-at")}</dt><dd data-testid="template-claim-ends"><OptTime at=t.claim_ends_at.clone()/></dd>
                <dt>{l.t("template-created-at")}</dt><dd><Time at=t.created_at.clone()/></dd>
            </dl>
            <p class="actions"><a class="button" href=coupons_href data-testid="template-coupons">{l.t("template-its-coupons")}</a>{report}</p>
            <IdsDetails ids=ids/>
        </section>
    }
}

/// Pause / resume, end claiming early, and the safe edit, as typed after
/// a refusal.
#[component]
fn ManageForms(template: TemplateView, forms: DetailForms) -> impl IntoView {
    let (l, t, f) = (lang(), template, forms);
    let paused = t.status == ClaimStanding::Paused;
    let (switch_href, switch_label, switch_id) = if paused {
        (
            paths::template_resume(&t.id),
            l.t("template-resume"),
            "resume",
        )
    } else {
        (paths::template_pause(&t.id), l.t("template-pause"), "pause")
    };
    // Each form posts to an address ending in `#template-manage`: a
    // refused form comes back scrolled to this section, where its message
    // is, and a change lands where it was made (a redirect keeps the
    // fragment), not at the top of a long page.
    let switch_href = format!("{switch_href}#template-manage");
    let edit_href = format!("{}#template-manage", paths::template_edit(&t.id));
    let reason = f.errors.input_attrs("reason", "reason");
    let typed_reason = crate::web::escape_html(&f.reason);
    // A full edit's messages belong to its own form; the end-claiming
    // form shares the field name of the claim end.
    let no_errors = FieldErrors::default();
    let end_errors = if f.terms.is_some() {
        &no_errors
    } else {
        &f.errors
    };
    let ends = end_errors.input_attrs("claim_ends_at", "end-claim-at");
    let form_error = field_error(&f.errors.input_attrs("form", "edit-form"));
    let ends_value = if f.terms.is_some() {
        String::new()
    } else {
        f.claim_ends_at.clone()
    };
    let edit = view! { <EditTemplateForm action=edit_href.clone() template=t forms=f/> };
    view! {
        <section aria-labelledby="template-manage">
            <h2 id="template-manage">{l.t("template-manage")}</h2>
            {form_error}
            <h3>{switch_label}</h3>
            <form method="post" action=switch_href class="stack" data-testid="claiming-form">
                <input type="hidden" name="csrf" value=csrf_token()/>
                <label for="reason">{l.t("template-reason")}</label>
                <textarea id="reason" name="reason" maxlength="500"
                    aria-invalid=reason.invalid aria-describedby=reason.described_by.clone()>{typed_reason}</textarea>
                {field_error(&reason)}
                <p class="actions"><button type="submit" class="primary" data-testid=switch_id>{switch_label}</button></p>
            </form>
            <h3>{l.t("template-end-claiming")}</h3>
            <form method="post" action=edit_href class="stack" data-testid="end-claiming-form">
                <input type="hidden" name="csrf" value=csrf_token()/>
                <label for="end-claim-at">{l.t("template-end-claiming-at")}</label>
                <span class="note">{l.t("template-business-time")}</span>
                <input id="end-claim-at" name="claim_ends_at" type="datetime-local" value=ends_value
                    aria-invalid=ends.invalid aria-describedby=ends.described_by.clone()/>
                {field_error(&ends)}
                <p class="actions">
                    <button type="submit" data-testid="end-at">{l.t("template-end-at-button")}</button>
                    <button type="submit" name="now" value="1" class="danger" data-testid="end-now">{l.t("template-end-now-button")}</button>
                </p>
            </form>
            {edit}
        </section>
    }
}

/// The edit form. While no coupon has been claimed every term may change
/// (the create form's fields, filled with the template's terms, sent as
/// a full edit); after the first claim the terms are shown but locked,
/// with why, and only the name and more stock can be saved.
#[component]
fn EditTemplateForm(
    #[prop(into)] action: String,
    template: TemplateView,
    forms: DetailForms,
) -> impl IntoView {
    let (l, t, f) = (lang(), template, forms);
    let locked = t.claimed > 0;
    let e = &f.errors;
    let name = e.input_attrs("name", "edit-name");
    let stock = e.input_attrs("total_stock", "edit-total-stock");
    let typed = f.terms.clone();
    let terms = typed.clone().unwrap_or_else(|| CreateForm::of_template(&t));
    let name_value = match &typed {
        Some(form) => form.name.clone(),
        None => f.name.clone().unwrap_or_else(|| t.name.clone()),
    };
    let stock_value = match &typed {
        Some(form) => form.total_stock.clone(),
        None if f.total_stock.is_empty() => {
            t.total_stock.map(|n| n.to_string()).unwrap_or_default()
        }
        None => f.total_stock.clone(),
    };
    let stock_note = if !locked {
        l.t("template-stock-any-before-claim").to_string()
    } else if t.total_stock.is_some() {
        crate::tr!(l, "template-stock-only-grows", claimed = t.claimed)
    } else {
        l.t("template-unlimited-stays").to_string()
    };
    let (heading, locked_note, full) = if locked {
        (
            l.t("template-safe-edit"),
            Some(
                view! { <p class="note" data-testid="terms-locked">{l.t("template-terms-locked")}</p> },
            ),
            None,
        )
    } else {
        (
            l.t("template-edit"),
            None,
            Some(view! { <input type="hidden" name="full" value="1"/> }),
        )
    };
    let terms_error = field_error(&e.input_attrs("terms", "edit-terms"));
    let kind = e.input_attrs("kind", "edit-kind");
    let kind_options = DiscountKind::ALL
        .into_iter()
        .map(|k| {
            let selected = terms.kind == k.as_str();
            view! { <option value=k.as_str() selected=selected>{l.t(k.label_key())}</option> }
        })
        .collect_view();
    let rule_options = refund_rule_options(l, &terms.partial_refund_rule);
    let unlimited = terms.stock_unlimited.is_some();
    let unlimited_box = (!locked).then(|| {
        view! {
            <label for="edit-stock-unlimited"><input type="checkbox" id="edit-stock-unlimited" name="stock_unlimited" value="on" checked=unlimited/>" "{l.t("template-stock-unlimited")}</label>
        }
    });
    let id = |field: &str| format!("edit-{}", field.replace('_', "-"));
    let hint_time = Some(l.t("template-business-time"));
    // Once coupons are claimed the terms are locked, but a budget may
    // still grow, or shrink down to what is used.
    let budget_now = match (locked, t.budget_cents) {
        (true, Some(budget)) => {
            let at = e.input_attrs("budget_now", "edit-budget-now");
            let used = Cents::from_stored(t.budget_used_cents.unwrap_or_default());
            let value = f.budget_now.clone().unwrap_or_else(|| budget.yuan_input());
            Some(view! {
                <label for="edit-budget-now">{l.t("template-budget-yuan")}</label>
                <span class="note">{crate::tr!(l, "template-budget-edit-hint", used = used.shown())}</span>
                <input id="edit-budget-now" name="budget_now" type="text" inputmode="decimal" value=value
                    aria-invalid=at.invalid aria-describedby=at.described_by.clone()/>
                {field_error(&at)}
            })
        }
        _ => None,
    };
    view! {
        <h3>{heading}</h3>
        <form method="post" action=action class="stack" data-testid="edit-form" novalidate=true>
            <input type="hidden" name="csrf" value=csrf_token()/>
            {full}
            <label for="edit-name">{l.t("template-name")}</label>
            <input id="edit-name" name="name" type="text" maxlength="200" value=name_value
                aria-invalid=name.invalid aria-describedby=name.described_by.clone()/>
            {field_error(&name)}
            <label for="edit-total-stock">{l.t("template-total-stock")}</label>
            <span class="note">{stock_note}</span>
            <input id="edit-total-stock" name="total_stock" type="text" inputmode="numeric" value=stock_value
                aria-invalid=stock.invalid aria-describedby=stock.described_by.clone()/>
            {field_error(&stock)}
            {unlimited_box}
            {budget_now}
            <fieldset data-testid="edit-terms" disabled=locked aria-describedby=locked.then_some("edit-terms-locked")>
                <legend>{l.t("template-terms")}</legend>
                <span id="edit-terms-locked">{locked_note}</span>
                {terms_error}
                <div class="row">
                    <label for="edit-kind">{l.t("template-kind")}</label>
                    <select id="edit-kind" name="kind" aria-invalid=kind.invalid aria-describedby=kind.described_by.clone()>
                        {kind_options}
                    </select>
                    {field_error(&kind)}
                </div>
                {text_input_at(e, "value", id("value"), l.t("template-value-yuan"), terms.value.clone(), Some(l.t("template-value-hint")), "text")}
                {text_input_at(e, "percent_off", id("percent_off"), l.t("template-percent-off"), terms.percent_off.clone(), Some(l.t("template-percent-hint")), "text")}
                {text_input_at(e, "max_discount", id("max_discount"), l.t("template-max-discount-yuan"), terms.max_discount.clone(), Some(l.t("template-optional")), "text")}
                {text_input_at(e, "min_order", id("min_order"), l.t("template-min-order-yuan"), terms.min_order.clone(), Some(l.t("template-min-order-hint")), "text")}
                {text_input_at(e, "categories", id("categories"), l.t("template-categories"), terms.categories.clone(), Some(l.t("template-categories-hint")), "text")}
                <p class="note">{l.t("template-validity-hint")}</p>
                {text_input_at(e, "valid_days", id("valid_days"), l.t("template-valid-days"), terms.valid_days.clone(), None, "text")}
                {text_input_at(e, "valid_from", id("valid_from"), l.t("template-valid-from"), terms.valid_from.clone(), hint_time, "datetime-local")}
                {text_input_at(e, "valid_until", id("valid_until"), l.t("template-valid-until"), terms.valid_until.clone(), hint_time, "datetime-local")}
                {text_input_at(e, "per_user_limit", id("per_user_limit"), l.t("template-per-user-limit"), terms.per_user_limit.clone(), Some(l.t("template-per-user-hint")), "text")}
                {text_input_at(e, "claim_ends_at", id("claim_ends_at"), l.t("template-claim-ends-at"), terms.claim_ends_at.clone(), Some(l.t("template-claim-ends-hint")), "datetime-local")}
                {text_input_at(e, "expiry_spread_minutes", id("expiry_spread_minutes"), l.t("template-expiry-spread-minutes"), terms.expiry_spread_minutes.clone(), Some(l.t("template-expiry-spread-hint")), "text")}
                {text_input_at(e, "shop_id", id("shop_id"), l.t("template-shop"), terms.shop_id.clone(), Some(l.t("template-shop-hint")), "text")}
                {text_input_at(e, "skus", id("skus"), l.t("template-skus"), terms.skus.clone(), Some(l.t("template-skus-hint")), "text")}
                {text_input_at(e, "exclude_skus", id("exclude_skus"), l.t("template-exclude-skus"), terms.exclude_skus.clone(), Some(l.t("template-skus-hint")), "text")}
                <div class="row">
                    <label for="edit-partial-refund-rule">{l.t("template-partial-refund-rule")}</label>
                    <select id="edit-partial-refund-rule" name="partial_refund_rule">{rule_options}</select>
                </div>
                <label for="edit-alone"><input type="checkbox" id="edit-alone" name="alone" value="on" checked=terms.alone.is_some()/>" "{l.t("template-alone")}</label>
                {text_input_at(e, "budget", id("budget"), l.t("template-budget-yuan"), terms.budget.clone(), Some(l.t("template-budget-hint")), "text")}
            </fieldset>
            <p class="actions"><button type="submit" class="primary" data-testid="save">{l.t("template-save")}</button></p>
        </form>
    }
}

/// The staff log of the template: when, who, what, before → after, why.
#[component]
fn TemplateHistory(rows: Vec<StaffAuditView>) -> impl IntoView {
    let l = lang();
    if rows.is_empty() {
        return view! { <p class="note">{l.t("template-no-history")}</p> }.into_any();
    }
    let rows = rows
        .into_iter()
        .map(|e| {
            let (change, reason) = history_change(l, &e);
            StaffLogRow {
                what: history_action(l, &e.action),
                actor: actor_text(l, &e.actor),
                action_code: Some(e.action),
                at: e.at,
                change,
                reason,
            }
        })
        .collect();
    view! {
        <StaffLog rows=rows testid="template-history" row_testid="history-row"
            what_key="action" change_key="template-change"/>
    }
    .into_any()
}

fn history_action(l: Lang, action: &str) -> String {
    actions::label_key(action).map_or_else(|| action.to_string(), |k| l.t(&k).to_string())
}

/// A claim end or a stock in words, `—` for none.
fn ends_text(at: &Option<String>) -> String {
    at.as_deref()
        .and_then(|t| parse_rfc3339(t).ok())
        .map_or_else(|| "—".to_string(), crate::i18n::zone::local_minutes)
}

/// Before → after and the reason of a staff-log row, in words.
pub(crate) fn history_change(l: Lang, e: &StaffAuditView) -> (String, String) {
    let detail = e.detail.as_deref().unwrap_or_default();
    if let Some((from, to, reason)) = parse_claiming_detail(detail) {
        let change = format!("{} → {}", status_label(l, from), status_label(l, to));
        return (change, reason);
    }
    let Some(c) = TemplateChanges::from_detail(detail) else {
        return (detail.to_string(), String::new());
    };
    let created = e.action == actions::CREATE;
    let arrow = |before: String, after: String| {
        if created {
            after
        } else {
            format!("{before} → {after}")
        }
    };
    let part = |field: &str, value: String| {
        crate::tr!(l, "template-change-part", field = field, value = value)
    };
    let mut parts = Vec::new();
    if let Some((before, after)) = &c.name {
        let before = before.clone().unwrap_or_else(|| "—".into());
        parts.push(part(l.t("template-name"), arrow(before, after.clone())));
    }
    if let Some((before, after)) = c.total_stock {
        parts.push(part(
            l.t("template-total-stock"),
            arrow(count_or_unlimited(l, before), count_or_unlimited(l, after)),
        ));
    }
    if let Some((before, after)) = &c.claim_ends_at {
        parts.push(part(
            l.t("template-claim-ends-at"),
            arrow(ends_text(before), ends_text(after)),
        ));
    }
    if let Some((before, after)) = c.per_user_limit {
        parts.push(part(
            l.t("template-per-user-limit"),
            arrow(count_or_unlimited(l, before), count_or_unlimited(l, after)),
        ));
    }
    if let Some((before, after)) = c.budget_cents {
        let money = |v: Option<i64>| {
            v.map(|c| Cents::from_stored(c).shown())
                .unwrap_or_else(|| "—".into())
        };
        parts.push(part(
            l.t("template-budget"),
            arrow(money(before), money(after)),
        ));
    }
    if let Some((before, after)) = &c.terms {
        parts.push(part(
            l.t("template-terms"),
            arrow(
                words_text(l, &before.words()),
                words_text(l, &after.words()),
            ),
        ));
    }
    (parts.join(l.t("template-change-separator")), String::new())
}
