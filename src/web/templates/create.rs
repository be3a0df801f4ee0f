//! The create form (also a copy of a template): what is typed, how it
//! parses, the preview of its rule, and the post that creates.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use leptos::prelude::*;
use serde::Deserialize;

use super::words::{LIST, NEW, forbidden, instant, may_manage};
use crate::domain::FieldError;
use crate::domain::discount::{DiscountKind, PartialRefundRule};
use crate::domain::ids::TemplateId;
use crate::domain::money::Cents;
use crate::domain::template::{TemplateInput, preview_words};
use crate::http::AppState;
use crate::i18n::Msg;
use crate::service::views::TemplateView;
use crate::service::{Executed, IdempotencyRequest, ServiceError};
use crate::web::auth::{Staff, WebError};
use crate::web::console::parse_console_time;
use crate::web::context::{csrf_token, lang};
use crate::web::i18n::Lang;
use crate::web::layout::{FieldErrors, field_error, words_text};
use crate::web::paths;
use crate::web::posted::{OrPage, Posted};

/// The create form as typed: every field a string, as the page shows it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(super) struct CreateForm {
    csrf: Option<String>,
    form_id: Option<String>,
    /// `preview` or `create`.
    intent: Option<String>,
    pub(super) name: String,
    pub(super) kind: String,
    /// Yuan.
    pub(super) value: String,
    pub(super) percent_off: String,
    /// Yuan.
    pub(super) max_discount: String,
    /// Yuan.
    pub(super) min_order: String,
    pub(super) categories: String,
    pub(super) valid_days: String,
    pub(super) valid_from: String,
    pub(super) valid_until: String,
    pub(super) total_stock: String,
    pub(super) stock_unlimited: Option<String>,
    pub(super) per_user_limit: String,
    pub(super) claim_ends_at: String,
    /// Minutes (the API takes seconds).
    pub(super) expiry_spread_minutes: String,
    /// A shop coupon's shop; empty: a platform coupon.
    pub(super) shop_id: String,
    /// SKUs, separated by commas, spaces or new lines.
    pub(super) skus: String,
    pub(super) exclude_skus: String,
    /// `proportional` or `clawback`.
    pub(super) partial_refund_rule: String,
    /// Ticked: the template's coupons must be an order's only coupon.
    pub(super) alone: Option<String>,
    /// Yuan; empty: no budget.
    pub(super) budget: String,
    /// Set by the template page's edit form while every term may change
    /// (no coupon claimed yet): the post is a full edit.
    pub(super) full: Option<String>,
}

/// The form's input field a service field is shown beside.
pub(super) fn form_field(service_field: &str) -> &'static str {
    match service_field {
        "name" => "name",
        "kind" => "kind",
        "value_cents" => "value",
        "percent_off" => "percent_off",
        "max_discount_cents" => "max_discount",
        "min_order_cents" => "min_order",
        "categories" => "categories",
        "valid_seconds" => "valid_days",
        "valid_from" => "valid_from",
        "valid_until" => "valid_until",
        "total_stock" => "total_stock",
        "per_user_limit" => "per_user_limit",
        "claim_ends_at" => "claim_ends_at",
        "expiry_spread_seconds" => "expiry_spread_minutes",
        "shop_id" => "shop_id",
        "skus" => "skus",
        "exclude_skus" => "exclude_skus",
        "partial_refund_rule" => "partial_refund_rule",
        "budget_cents" => "budget",
        _ => "form",
    }
}

/// The words beside a form field the service refused.
pub(super) fn field_words(l: Lang, form_field: &str) -> String {
    let key = match form_field {
        "name" => "template-error-name",
        "kind" => "template-error-kind",
        "value" => "template-error-value",
        "percent_off" => "template-error-percent-off",
        "max_discount" => "template-error-max-discount",
        "min_order" => "template-error-min-order",
        "categories" => "template-error-categories",
        "valid_days" => "template-error-valid-days",
        "valid_from" => "template-error-valid-from",
        "valid_until" => "template-error-valid-until",
        "total_stock" => "template-error-total-stock",
        "per_user_limit" => "template-error-per-user-limit",
        "claim_ends_at" => "template-error-claim-ends-at",
        "expiry_spread_minutes" => "template-error-expiry-spread",
        "shop_id" => "template-error-shop",
        "skus" | "exclude_skus" => "template-error-skus",
        "partial_refund_rule" => "template-error-partial-refund-rule",
        "budget" => "template-error-budget",
        _ => "template-error-form",
    };
    l.t(key).to_string()
}

/// A whole number typed in a field: empty is `None`; anything but digits
/// is refused.
pub(super) fn whole_number(raw: &str) -> Result<Option<i64>, ()> {
    let t = raw.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if t.len() > 12 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(());
    }
    t.parse().map(Some).map_err(|_| ())
}

/// Yuan typed in a field: empty is `None`; more than two decimals or
/// anything but a number is refused ([`Cents::parse_yuan`]).
pub(super) fn yuan_field(raw: &str) -> Result<Option<i64>, ()> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    Cents::parse_yuan(raw).map(Some).ok_or(())
}

/// A time typed in the business time zone, as the API's RFC 3339.
pub(super) fn time_field(raw: &str) -> Result<Option<String>, ()> {
    let t = raw.trim();
    if t.is_empty() {
        return Ok(None);
    }
    parse_console_time(t)
        .map(|at| Some(crate::domain::time::rfc3339(at)))
        .ok_or(())
}

/// Categories typed as a list: commas (either width), the Chinese list
/// mark, semicolons or new lines between them.
fn categories_field(raw: &str) -> Option<Vec<String>> {
    let list: Vec<String> = raw
        .split([',', '\u{ff0c}', '\u{3001}', ';', '\n'])
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    (!list.is_empty()).then_some(list)
}

/// SKUs as typed: separated by commas (either width), 、, semicolons,
/// spaces or new lines; none is `None`.
fn sku_field(raw: &str) -> Option<Vec<String>> {
    let list: Vec<String> = raw
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '\u{ff0c}' | '\u{3001}' | ';'))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    (!list.is_empty()).then_some(list)
}

impl CreateForm {
    /// The API's fields from what was typed, and the fields that do not
    /// even parse (money with three decimals, a day count with letters, a
    /// time that is no time). Only the kind's own amounts are sent.
    pub(super) fn input(&self, l: Lang) -> (TemplateInput, FieldErrors) {
        let mut errors = FieldErrors::default();
        let mut bad = |field: &'static str| errors.add(field, field_words(l, field));
        let kind = self.kind.trim();
        let fixed = kind == "fixed";
        let percent = kind == "percent";
        let mut input = TemplateInput {
            name: Some(self.name.clone()),
            kind: (!kind.is_empty()).then(|| kind.to_string()),
            categories: categories_field(&self.categories),
            skus: sku_field(&self.skus),
            exclude_skus: sku_field(&self.exclude_skus),
            shop_id: Some(self.shop_id.trim())
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            partial_refund_rule: Some(self.partial_refund_rule.trim())
                .filter(|r| !r.is_empty())
                .map(str::to_string),
            stackable: Some(self.alone.is_none()),
            ..TemplateInput::default()
        };
        match yuan_field(&self.budget) {
            Ok(b) => input.budget_cents = b,
            Err(()) => bad("budget"),
        }
        if fixed {
            match yuan_field(&self.value) {
                Ok(v) => input.value_cents = v,
                Err(()) => bad("value"),
            }
        }
        if percent {
            match whole_number(&self.percent_off) {
                Ok(v) => input.percent_off = v,
                Err(()) => bad("percent_off"),
            }
            match yuan_field(&self.max_discount) {
                Ok(v) => input.max_discount_cents = v,
                Err(()) => bad("max_discount"),
            }
        }
        match yuan_field(&self.min_order) {
            Ok(v) => input.min_order_cents = v,
            Err(()) => bad("min_order"),
        }
        match whole_number(&self.valid_days) {
            Ok(Some(days)) => match days.checked_mul(86_400) {
                Some(s) => input.valid_seconds = Some(s),
                None => bad("valid_days"),
            },
            Ok(None) => {}
            Err(()) => bad("valid_days"),
        }
        for (field, raw, slot) in [
            ("valid_from", &self.valid_from, &mut input.valid_from),
            ("valid_until", &self.valid_until, &mut input.valid_until),
            (
                "claim_ends_at",
                &self.claim_ends_at,
                &mut input.claim_ends_at,
            ),
        ] {
            match time_field(raw) {
                Ok(v) => *slot = v,
                Err(()) => bad(field),
            }
        }
        if self.stock_unlimited.is_none() {
            match whole_number(&self.total_stock) {
                Ok(Some(n)) => input.total_stock = Some(n),
                _ => bad("total_stock"),
            }
        }
        match whole_number(&self.per_user_limit) {
            Ok(v) => input.per_user_limit = v,
            Err(()) => bad("per_user_limit"),
        }
        match whole_number(&self.expiry_spread_minutes) {
            Ok(Some(minutes)) => match minutes.checked_mul(60) {
                Some(s) => input.expiry_spread_seconds = Some(s),
                None => bad("expiry_spread_minutes"),
            },
            Ok(None) => {}
            Err(()) => bad("expiry_spread_minutes"),
        }
        (input, errors)
    }
}

/// The create page: the form as typed, the preview of its rule, and the
/// messages beside its fields (422 when there are any).
fn create_page(
    staff: &Staff,
    form: &CreateForm,
    preview: Vec<Msg>,
    errors: FieldErrors,
    refused: bool,
) -> Response {
    let form = form.clone();
    let mut r = staff.page(staff.lang.t("template-new-title"), move || {
        view! { <CreateTemplateForm form=form preview=preview errors=errors/> }
    });
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

/// One labelled text input of the create form with its message.
fn text_input(
    errors: &FieldErrors,
    field: &'static str,
    label: &'static str,
    value: String,
    hint: Option<&'static str>,
    input_type: &'static str,
) -> impl IntoView + use<> {
    text_input_at(
        errors,
        field,
        field.to_string(),
        label,
        value,
        hint,
        input_type,
    )
}

/// [`text_input`] with its own element id (the template page's edit form
/// shares the page with other forms).
pub(super) fn text_input_at(
    errors: &FieldErrors,
    field: &'static str,
    id: String,
    label: &'static str,
    value: String,
    hint: Option<&'static str>,
    input_type: &'static str,
) -> impl IntoView + use<> {
    let st = errors.input_attrs(field, &id);
    let hint = hint.map(|h| view! { <span class="note">{h}</span> });
    view! {
        <div class="row">
            <label for=id.clone()>{label}</label>
            {hint}
            <input id=id name=field type=input_type value=value
                aria-invalid=st.invalid aria-describedby=st.described_by.clone()/>
            {field_error(&st)}
        </div>
    }
}

/// A stored instant as a `datetime-local` value in the business time zone.
fn local_input(raw: &Option<String>) -> String {
    instant(raw).map_or_else(String::new, |at| {
        crate::i18n::zone::current()
            .local(at)
            .format("%Y-%m-%dT%H:%M")
            .to_string()
    })
}

impl CreateForm {
    /// The form filled with a template's terms as it stands (the edit
    /// form, and the create form of a copy). A validity the form cannot
    /// say in whole days is left empty, so saving asks for it instead of
    /// silently changing it.
    pub(super) fn of_template(t: &TemplateView) -> Self {
        let days = t
            .valid_seconds
            .filter(|s| s % 86_400 == 0)
            .map(|s| (s / 86_400).to_string())
            .unwrap_or_default();
        let spread = if t.expiry_spread_seconds > 0 {
            t.expiry_spread_seconds.div_euclid(60).to_string()
        } else {
            String::new()
        };
        CreateForm {
            name: t.name.clone(),
            kind: t.kind.as_str().to_string(),
            value: t.value_cents.map(Cents::yuan_input).unwrap_or_default(),
            percent_off: t.percent_off.map(|p| p.to_string()).unwrap_or_default(),
            max_discount: t
                .max_discount_cents
                .map(Cents::yuan_input)
                .unwrap_or_default(),
            min_order: Some(t.min_order_cents)
                .filter(|m| !m.is_zero())
                .map(Cents::yuan_input)
                .unwrap_or_default(),
            categories: t.categories.join(", "),
            valid_days: days,
            valid_from: local_input(&t.valid_from),
            valid_until: local_input(&t.valid_until),
            total_stock: t.total_stock.map(|n| n.to_string()).unwrap_or_default(),
            stock_unlimited: t.total_stock.is_none().then(|| "on".to_string()),
            per_user_limit: t.per_user_limit.map(|n| n.to_string()).unwrap_or_default(),
            claim_ends_at: local_input(&t.claim_ends_at),
            expiry_spread_minutes: spread,
            shop_id: t
                .shop_id
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_default(),
            skus: t
                .skus
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            exclude_skus: t
                .exclude_skus
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            partial_refund_rule: t.partial_refund_rule.as_str().to_string(),
            alone: (!t.stackable).then(|| "on".to_string()),
            budget: t.budget_cents.map(|b| b.yuan_input()).unwrap_or_default(),
            ..CreateForm::default()
        }
    }
}

/// The partial-refund rule's options, `chosen` selected (empty: the
/// default), for the create and the edit form.
pub(super) fn refund_rule_options(l: Lang, chosen: &str) -> impl IntoView + use<> {
    PartialRefundRule::ALL
        .into_iter()
        .map(|r| {
            let selected =
                chosen == r.as_str() || (chosen.is_empty() && r == PartialRefundRule::default());
            view! { <option value=r.as_str() selected=selected>{l.t(r.label_key())}</option> }
        })
        .collect_view()
}

/// The create form as typed, under the preview of its rule in words,
/// each message beside its field.
#[component]
fn CreateTemplateForm(form: CreateForm, preview: Vec<Msg>, errors: FieldErrors) -> impl IntoView {
    let (l, f) = (lang(), form);
    let form_id = format!("{:032x}", rand::random::<u128>());
    let preview_text = words_text(l, &preview);
    let preview = if preview.is_empty() {
        view! { <p class="note" data-testid="template-preview">{l.t("template-preview-empty")}</p> }
            .into_any()
    } else {
        view! { <p class="preview" data-testid="template-preview">{preview_text}</p> }.into_any()
    };
    let kind = errors.input_attrs("kind", "kind");
    let kind_options = DiscountKind::ALL
        .into_iter()
        .map(|k| {
            let selected = f.kind == k.as_str();
            view! { <option value=k.as_str() selected=selected>{l.t(k.label_key())}</option> }
        })
        .collect_view();
    let unlimited = f.stock_unlimited.is_some();
    let rule = errors.input_attrs("partial_refund_rule", "partial_refund_rule");
    let rule_options = refund_rule_options(l, &f.partial_refund_rule);
    let form_error = field_error(&errors.input_attrs("form", "form"));
    let e = &errors;
    view! {
        <section aria-labelledby="preview-heading" class="confirm">
            <h2 id="preview-heading">{l.t("template-preview")}</h2>
            {preview}
        </section>
        <form method="post" action=NEW class="stack" data-testid="template-form" novalidate=true>
            <input type="hidden" name="csrf" value=csrf_token()/>
            <input type="hidden" name="form_id" value=form_id/>
            {form_error}
            {text_input(e, "name", l.t("template-name"), f.name.clone(), None, "text")}
            <div class="row">
                <label for="kind">{l.t("template-kind")}</label>
                <select id="kind" name="kind" aria-invalid=kind.invalid aria-describedby=kind.described_by.clone()>
                    <option value="">{l.t("template-choose")}</option>
                    {kind_options}
                </select>
                {field_error(&kind)}
            </div>
            {text_input(e, "value", l.t("template-value-yuan"), f.value.clone(), Some(l.t("template-value-hint")), "text")}
            {text_input(e, "percent_off", l.t("template-percent-off"), f.percent_off.clone(), Some(l.t("template-percent-hint")), "text")}
            {text_input(e, "max_discount", l.t("template-max-discount-yuan"), f.max_discount.clone(), Some(l.t("template-optional")), "text")}
            {text_input(e, "min_order", l.t("template-min-order-yuan"), f.min_order.clone(), Some(l.t("template-min-order-hint")), "text")}
            {text_input(e, "categories", l.t("template-categories"), f.categories.clone(), Some(l.t("template-categories-hint")), "text")}
            <fieldset>
                <legend>{l.t("template-lines")}</legend>
                {text_input(e, "shop_id", l.t("template-shop"), f.shop_id.clone(), Some(l.t("template-shop-hint")), "text")}
                {text_input(e, "skus", l.t("template-skus"), f.skus.clone(), Some(l.t("template-skus-hint")), "text")}
                {text_input(e, "exclude_skus", l.t("template-exclude-skus"), f.exclude_skus.clone(), Some(l.t("template-skus-hint")), "text")}
                <div class="row">
                    <label for="partial_refund_rule">{l.t("template-partial-refund-rule")}</label>
                    <span class="note">{l.t("template-partial-refund-hint")}</span>
                    <select id="partial_refund_rule" name="partial_refund_rule" aria-invalid=rule.invalid aria-describedby=rule.described_by.clone()>
                        {rule_options}
                    </select>
                    {field_error(&rule)}
                </div>
                <label for="alone"><input type="checkbox" id="alone" name="alone" value="on" checked=f.alone.is_some()/>" "{l.t("template-alone")}</label>
                {text_input(e, "budget", l.t("template-budget-yuan"), f.budget.clone(), Some(l.t("template-budget-hint")), "text")}
            </fieldset>
            <fieldset>
                <legend>{l.t("template-validity")}</legend>
                <p class="note">{l.t("template-validity-hint")}</p>
                {text_input(e, "valid_days", l.t("template-valid-days"), f.valid_days.clone(), None, "text")}
                {text_input(e, "valid_from", l.t("template-valid-from"), f.valid_from.clone(), Some(l.t("template-business-time")), "datetime-local")}
                {text_input(e, "valid_until", l.t("template-valid-until"), f.valid_until.clone(), Some(l.t("template-business-time")), "datetime-local")}
            </fieldset>
            {text_input(e, "total_stock", l.t("template-total-stock"), f.total_stock.clone(), None, "text")}
            <label for="stock_unlimited"><input type="checkbox" id="stock_unlimited" name="stock_unlimited" value="on" checked=unlimited/>" "{l.t("template-stock-unlimited")}</label>
            {text_input(e, "per_user_limit", l.t("template-per-user-limit"), f.per_user_limit.clone(), Some(l.t("template-per-user-hint")), "text")}
            {text_input(e, "claim_ends_at", l.t("template-claim-ends-at"), f.claim_ends_at.clone(), Some(l.t("template-claim-ends-hint")), "datetime-local")}
            {text_input(e, "expiry_spread_minutes", l.t("template-expiry-spread-minutes"), f.expiry_spread_minutes.clone(), Some(l.t("template-expiry-spread-hint")), "text")}
            <p class="actions">
                <button type="submit" name="intent" value="preview" data-testid="preview">{l.t("template-preview-button")}</button>
                <button type="submit" name="intent" value="create" class="primary" data-testid="create">{l.t("template-create-button")}</button>
                <a class="button" href=LIST>{l.t("cancel")}</a>
            </p>
        </form>
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct NewQuery {
    /// Duplicate this template: the form filled with its terms.
    from: Option<TemplateId>,
}

pub(super) async fn new_form(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<NewQuery>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    if !may_manage(&staff) {
        return Ok(forbidden(l));
    }
    let form = match q.from.as_ref().filter(|f| !f.is_empty()) {
        None => CreateForm {
            kind: "fixed".into(),
            ..CreateForm::default()
        },
        Some(from) => {
            let t = s.service.get_template(from).await.or_page(l)?;
            copy_form(l, &t, s.service.now())
        }
    };
    let (input, _) = form.input(l);
    let preview = preview_words(&input, s.service.now());
    Ok(create_page(
        &staff,
        &form,
        preview,
        FieldErrors::default(),
        false,
    ))
}

/// The create form of a copy of `t`: its terms, its name marked as a copy
/// (cut to the longest name), and no claim end already past. Nothing is
/// created until the form is sent.
fn copy_form(l: Lang, t: &TemplateView, now: chrono::DateTime<chrono::Utc>) -> CreateForm {
    let mut form = CreateForm::of_template(t);
    let name = crate::tr!(l, "template-copy-name", name = t.name.clone());
    form.name = name
        .chars()
        .take(crate::domain::template::MAX_NAME_CHARS)
        .collect();
    if instant(&t.claim_ends_at).is_none_or(|at| at <= now) {
        form.claim_ends_at = String::new();
    }
    form
}

pub(super) async fn create(
    State(s): State<AppState>,
    staff: Staff,
    Posted { form, body }: Posted<CreateForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    if !may_manage(&staff) {
        return Ok(forbidden(l));
    }
    let (input, mut errors) = form.input(l);
    let preview = preview_words(&input, s.service.now());
    if form.intent.as_deref() != Some("create") {
        // Preview (also the form's default button): the words, and the
        // fields that do not parse yet; nothing is saved.
        return Ok(create_page(&staff, &form, preview, errors, false));
    }
    if !errors.is_empty() {
        return Ok(create_page(&staff, &form, preview, errors, true));
    }
    let idem = form
        .form_id
        .as_deref()
        .filter(|f| !f.is_empty() && f.len() <= 64)
        .map(|id| {
            IdempotencyRequest::new(
                format!("console:{}", staff.session.name),
                id.to_string(),
                "POST",
                NEW,
                &body,
                201,
            )
        });
    Ok(
        match s
            .service
            .create_template_as(&staff.ctx(), &staff.authority(), idem.as_ref(), input)
            .await
        {
            Ok(done) => {
                let (id, name) = match done {
                    Executed::Fresh(v) => (v.id, v.name),
                    Executed::Replayed { body, .. } => {
                        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
                        let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
                        (TemplateId::from_wire(text("id")), text("name"))
                    }
                };
                staff.done(
                    &paths::template(&id),
                    crate::tr!(l, "template-created", name = name),
                )
            }
            Err(ServiceError::Invalid(FieldError { field, .. })) => {
                let at = form_field(field);
                errors.add(at, field_words(l, at));
                create_page(&staff, &form, preview, errors, true)
            }
            Err(ServiceError::Forbidden(_)) => forbidden(l),
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_amounts_days_and_lists_parse_or_are_refused() {
        assert_eq!(yuan_field("50"), Ok(Some(5000)));
        assert_eq!(yuan_field(" 49.90 "), Ok(Some(4990)));
        assert_eq!(yuan_field(""), Ok(None));
        assert_eq!(yuan_field("1.234"), Err(()));
        assert_eq!(yuan_field("abc"), Err(()));
        assert_eq!(whole_number("7"), Ok(Some(7)));
        assert_eq!(whole_number("7.5"), Err(()));
        assert_eq!(whole_number("-1"), Err(()));
        assert_eq!(
            categories_field("phones, laptops\u{3001}tv\u{ff0c} "),
            Some(vec!["phones".into(), "laptops".into(), "tv".into()])
        );
        assert_eq!(categories_field(" , "), None);
    }
}
