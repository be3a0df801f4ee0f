//! Coupon templates (券模板) in the console, on the same service functions
//! as `GET /templates`, `POST /templates`, `PATCH /templates/{id}` and
//! pause / resume:
//!
//! - `/console/templates`: the list, filtered by standing, kind and a part
//!   of the name (kept in the address), 50 per keyset page; each row with
//!   its rule in words, stock claimed / total / left and its coupons by
//!   effective status.
//! - `/console/templates/new`: the create form. Money is typed in yuan and
//!   turned into cents by [`Cents::parse_yuan`], times in the business time zone;
//!   "Preview" shows the rule in words ([`preview_words`]) without saving;
//!   a refused form comes back (422) as typed, each message beside its
//!   field.
//! - `/console/templates/{id}`: the numbers, a link to its coupons, its
//!   change history (the staff log), and for operators and admins the
//!   forms to pause / resume (with a reason), end claiming early (now or
//!   at a typed time) and make the safe edits (name, more stock). A
//!   refused form comes back on the page (422) with the reason beside the
//!   field; each action lands back on the page with a flash.
//!
//! Every staff role reads; managing is for operators and admins, enforced
//! in the service ([`viewer_may`] only decides which forms a
//! page shows).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::bulk::BulkSection;
use super::codes::CodeBatches;
use super::components::{IdsDetails, OptTime, Pager, StaffLog, StaffLogRow, Time};
use super::console::parse_console_time;
use super::context::{csrf_token, lang, viewer_may};
use super::i18n::Lang;
use super::layout::{FieldErrors, actor_text, coupon_status_label, enc, field_error, words_text};
use super::paths;
use super::posted::{OrPage, Posted};
use crate::domain::FieldError;
use crate::domain::coupon::CouponStatus;
use crate::domain::discount::{CouponTerms, DiscountKind, DiscountRule};
use crate::domain::ids::TemplateId;
use crate::domain::money::Cents;
use crate::domain::permissions::Permission;
use crate::domain::template::{
    ClaimStanding, EditRefusal, TemplateChanges, TemplateInput, TemplateStatus, Validity,
    parse_claiming_detail, preview_words, rule_words, spread_words,
};
use crate::domain::time::parse_rfc3339;
use crate::http::AppState;
use crate::i18n::Msg;
use crate::service::audit::StaffAuditView;
use crate::service::templates::{TemplatePatch, actions};
use crate::service::views::TemplateView;
use crate::service::{Executed, IdempotencyRequest, ServiceError};

const LIST: &str = "/console/templates";
const NEW: &str = "/console/templates/new";
/// Templates per list page.
const PAGE_SIZE: i64 = 50;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(LIST, get(list))
        .route(NEW, get(new_form).post(create))
        .route("/console/templates/{id}", get(detail))
        .route(
            "/console/templates/{id}/pause",
            post(|s, staff, id, body| claiming(s, staff, id, body, true)),
        )
        .route(
            "/console/templates/{id}/resume",
            post(|s, staff, id, body| claiming(s, staff, id, body, false)),
        )
        .route("/console/templates/{id}/edit", post(edit))
        .route("/console/templates/{id}/code-batches", post(generate_codes))
}

/// A batch of redeem codes asked for on the template's page
/// ([`super::codes::generate`]); refused, the page again with the form as
/// typed.
async fn generate_codes(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    body: Bytes,
) -> Result<Response, WebError> {
    Ok(match super::codes::generate(&s, &staff, &id, &body).await {
        Ok(r) => r,
        Err(form) => detail_with_codes(&s, &staff, &id, form).await?,
    })
}

/// Whether this staff member sees the forms that change templates.
fn may_manage(staff: &Staff) -> bool {
    staff.may(Permission::ManageTemplates)
}

// ---------------------------------------------------------------- words

/// A standing's name.
fn standing_label(l: Lang, s: ClaimStanding) -> &'static str {
    l.t(match s {
        ClaimStanding::Active => "template-standing-active",
        ClaimStanding::Paused => "template-standing-paused",
        ClaimStanding::NotStarted => "template-standing-not_started",
        ClaimStanding::Ended => "template-standing-ended",
    })
}

/// A template's claiming standing as a coloured badge.
#[component]
fn StandingBadge(standing: ClaimStanding) -> impl IntoView {
    let class = match standing {
        ClaimStanding::Active => "badge badge-ok",
        ClaimStanding::Paused => "badge badge-warning",
        ClaimStanding::NotStarted => "badge status-locked",
        ClaimStanding::Ended => "badge status-expired",
    };
    view! { <span class=class data-standing=standing.as_str()>{standing_label(lang(), standing)}</span> }
}

/// A template's stored claiming status in words (the staff log's before
/// and after of a pause or resume).
fn status_label(l: Lang, s: TemplateStatus) -> &'static str {
    match s {
        TemplateStatus::Active => l.t("template-standing-active"),
        TemplateStatus::Paused => l.t("template-standing-paused"),
    }
}

fn instant(raw: &Option<String>) -> Option<chrono::DateTime<chrono::Utc>> {
    raw.as_deref().and_then(|t| parse_rfc3339(t).ok())
}

/// The template's rule in words, from what the service answered.
fn view_words(t: &TemplateView) -> Vec<Msg> {
    let terms = CouponTerms {
        rule: DiscountRule::from_stored(
            t.kind,
            t.value_cents.map(Cents::get),
            t.percent_off,
            t.max_discount_cents.map(Cents::get),
        ),
        min_order: t.min_order_cents,
        categories: t.categories.clone(),
    };
    let created = parse_rfc3339(&t.created_at).unwrap_or_default();
    let validity = Validity::from_stored(
        instant(&t.valid_from),
        instant(&t.valid_until),
        t.valid_seconds,
        created,
    );
    let mut words = rule_words(&terms, &validity);
    words.extend(spread_words(t.expiry_spread_seconds));
    words
}

/// A count, or "unlimited".
fn count_or_unlimited(l: Lang, n: Option<i64>) -> String {
    n.map_or_else(|| l.t("template-unlimited").to_string(), |n| n.to_string())
}

/// Stock claimed / total / left.
fn stock_text(l: Lang, t: &TemplateView) -> String {
    let left = t.total_stock.map(|total| (total - t.claimed).max(0));
    crate::tr!(
        l,
        "template-stock-figures",
        claimed = t.claimed,
        total = count_or_unlimited(l, t.total_stock),
        left = count_or_unlimited(l, left)
    )
}

/// Its coupons by effective status: `待使用 3 · 锁定中 1 · …`.
fn counts_text(l: Lang, t: &TemplateView) -> String {
    let c = t.counts;
    [
        (CouponStatus::Available, c.available),
        (CouponStatus::Locked, c.locked),
        (CouponStatus::Used, c.used),
        (CouponStatus::Expired, c.expired),
        (CouponStatus::Invalidated, c.invalidated),
    ]
    .into_iter()
    .map(|(s, n)| format!("{} {n}", coupon_status_label(l, s)))
    .collect::<Vec<_>>()
    .join(" · ")
}

// ---------------------------------------------------------------- list

#[derive(Debug, Default, Deserialize)]
struct ListQuery {
    standing: Option<String>,
    kind: Option<String>,
    q: Option<String>,
    after: Option<String>,
}

impl ListQuery {
    fn standing(&self) -> Option<ClaimStanding> {
        self.standing
            .as_deref()
            .filter(|s| !s.is_empty())
            .and_then(ClaimStanding::parse)
    }

    fn kind(&self) -> Option<DiscountKind> {
        self.kind
            .as_deref()
            .filter(|s| !s.is_empty())
            .and_then(DiscountKind::parse)
    }

    /// The filters as a query string (no cursor), for the next page.
    fn filter_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("standing", &self.standing),
            ("kind", &self.kind),
            ("q", &self.q),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                q.append_pair(k, v);
            }
        }
        q.finish()
    }
}

async fn list(State(s): State<AppState>, staff: Staff, Query(q): Query<ListQuery>) -> Response {
    let l = staff.lang;
    let unknown =
        |raw: &Option<String>, known: bool| raw.as_deref().is_some_and(|v| !v.is_empty()) && !known;
    if unknown(&q.standing, q.standing().is_some()) || unknown(&q.kind, q.kind().is_some()) {
        return WebError::bad_request(l.t("template-unknown-filter").to_string()).into_response();
    }
    let page = match s
        .service
        .list_templates(
            q.standing(),
            q.kind(),
            q.q.clone(),
            q.after.clone().filter(|a| !a.is_empty()),
            PAGE_SIZE,
        )
        .await
    {
        Ok(p) => p,
        Err(ServiceError::Invalid(f)) if f.field == "cursor" || f.field == "q" => {
            return WebError::bad_request(l.t("template-unknown-filter").to_string())
                .into_response();
        }
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let fq = q.filter_query();
    let next = page.next.map(|n| format!("{LIST}?{fq}&after={}", enc(&n)));
    let first = q
        .after
        .as_deref()
        .is_some_and(|a| !a.is_empty())
        .then(|| format!("{LIST}?{fq}"));
    let (standing, kind, typed) = (q.standing(), q.kind(), q.q.unwrap_or_default());
    let templates = page.templates;
    staff.page(l.t("templates-title"), move || {
        let create = viewer_may(Permission::ManageTemplates).then(|| {
            view! { <p class="actions"><a class="button primary" href=NEW data-testid="new-template">{l.t("template-new")}</a></p> }
        });
        view! {
            {create}
            <TemplateFilters standing=standing kind=kind typed=typed/>
            <section aria-labelledby="results">
                <h2 id="results" class="visually-hidden">{l.t("templates-title")}</h2>
                <TemplateTable templates=templates/>
                <Pager first=first next=next/>
            </section>
        }
    })
}

/// The list's filters: standing, kind and a part of the name, as chosen.
#[component]
fn TemplateFilters(
    standing: Option<ClaimStanding>,
    kind: Option<DiscountKind>,
    #[prop(into)] typed: String,
) -> impl IntoView {
    let l = lang();
    let standing_options = ClaimStanding::ALL
        .into_iter()
        .map(|st| {
            let selected = standing == Some(st);
            view! { <option value=st.as_str() selected=selected>{standing_label(l, st)}</option> }
        })
        .collect_view();
    let kind_options = DiscountKind::ALL
        .into_iter()
        .map(|k| {
            let selected = kind == Some(k);
            view! { <option value=k.as_str() selected=selected>{l.t(k.label_key())}</option> }
        })
        .collect_view();
    view! {
        <section aria-labelledby="filters">
            <h2 id="filters" class="visually-hidden">{l.t("filters")}</h2>
            <form method="get" action=LIST class="filters" data-testid="template-filters">
                <label>{l.t("template-standing")}
                    <select name="standing">
                        <option value="">{l.t("any")}</option>
                        {standing_options}
                    </select>
                </label>
                <label>{l.t("template-kind")}
                    <select name="kind">
                        <option value="">{l.t("any")}</option>
                        {kind_options}
                    </select>
                </label>
                <label>{l.t("template-name-contains")}
                    <input type="search" name="q" value=typed maxlength="200"/>
                </label>
                <button type="submit" class="primary">{l.t("filter")}</button>
            </form>
        </section>
    }
}

/// One row a template: its name (linking to its page), its rule in
/// words, its stock, its coupons by status and its standing; a note when
/// none match.
#[component]
fn TemplateTable(templates: Vec<TemplateView>) -> impl IntoView {
    let l = lang();
    if templates.is_empty() {
        return view! { <p class="note" data-testid="no-templates">{l.t("template-none-match")}</p> }
            .into_any();
    }
    let rows = templates
        .into_iter()
        .map(|t| {
            let href = paths::template(&t.id);
            let words = words_text(l, &view_words(&t));
            let stock = stock_text(l, &t);
            let counts = counts_text(l, &t);
            view! {
                <tr data-testid="template-row">
                    <td data-label=l.t("template-name")><a href=href data-testid="template-name">{t.name.clone()}</a></td>
                    <td data-label=l.t("template-rule")>{words}</td>
                    <td class="nowrap" data-label=l.t("template-stock-heading")>{stock}</td>
                    <td data-label=l.t("template-coupons-by-status")>{counts}</td>
                    <td class="nowrap" data-label=l.t("template-standing")><StandingBadge standing=t.status/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="template-table">
                <thead><tr>
                    <th scope="col">{l.t("template-name")}</th>
                    <th scope="col">{l.t("template-rule")}</th>
                    <th scope="col">{l.t("template-stock-heading")}</th>
                    <th scope="col">{l.t("template-coupons-by-status")}</th>
                    <th scope="col">{l.t("template-standing")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

// ---------------------------------------------------------------- create

/// The create form as typed: every field a string, as the page shows it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct CreateForm {
    csrf: Option<String>,
    form_id: Option<String>,
    /// `preview` or `create`.
    intent: Option<String>,
    name: String,
    kind: String,
    /// Yuan.
    value: String,
    percent_off: String,
    /// Yuan.
    max_discount: String,
    /// Yuan.
    min_order: String,
    categories: String,
    valid_days: String,
    valid_from: String,
    valid_until: String,
    total_stock: String,
    stock_unlimited: Option<String>,
    per_user_limit: String,
    claim_ends_at: String,
    /// Minutes (the API takes seconds).
    expiry_spread_minutes: String,
    /// Set by the template page's edit form while every term may change
    /// (no coupon claimed yet): the post is a full edit.
    full: Option<String>,
}

/// The form's input field a service field is shown beside.
fn form_field(service_field: &str) -> &'static str {
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
        _ => "form",
    }
}

/// The words beside a form field the service refused.
fn field_words(l: Lang, form_field: &str) -> String {
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
        _ => "template-error-form",
    };
    l.t(key).to_string()
}

/// A whole number typed in a field: empty is `None`; anything but digits
/// is refused.
fn whole_number(raw: &str) -> Result<Option<i64>, ()> {
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
fn yuan_field(raw: &str) -> Result<Option<i64>, ()> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    Cents::parse_yuan(raw).map(Some).ok_or(())
}

/// A time typed in the business time zone, as the API's RFC 3339.
fn time_field(raw: &str) -> Result<Option<String>, ()> {
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

impl CreateForm {
    /// The API's fields from what was typed, and the fields that do not
    /// even parse (money with three decimals, a day count with letters, a
    /// time that is no time). Only the kind's own amounts are sent.
    fn input(&self, l: Lang) -> (TemplateInput, FieldErrors) {
        let mut errors = FieldErrors::default();
        let mut bad = |field: &'static str| errors.add(field, field_words(l, field));
        let kind = self.kind.trim();
        let fixed = kind == "fixed";
        let percent = kind == "percent";
        let mut input = TemplateInput {
            name: Some(self.name.clone()),
            kind: (!kind.is_empty()).then(|| kind.to_string()),
            categories: categories_field(&self.categories),
            ..TemplateInput::default()
        };
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
fn text_input_at(
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
    fn of_template(t: &TemplateView) -> Self {
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
            ..CreateForm::default()
        }
    }
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

fn forbidden(l: Lang) -> Response {
    WebError::forbidden(l.t("template-needs-operator")).into_response()
}

#[derive(Debug, Default, Deserialize)]
struct NewQuery {
    /// Duplicate this template: the form filled with its terms.
    from: Option<TemplateId>,
}

async fn new_form(
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

async fn create(
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

// ---------------------------------------------------------------- detail

/// The forms of the detail page as typed, with their messages, after a
/// refused post.
#[derive(Debug, Clone, Default)]
struct DetailForms {
    reason: String,
    name: Option<String>,
    total_stock: String,
    claim_ends_at: String,
    /// The full edit as typed (every term), after a refusal.
    terms: Option<CreateForm>,
    errors: FieldErrors,
    /// The redeem-code form as typed ([`super::codes`]).
    codes: super::codes::CodeForm,
}

/// The template's page with the redeem-code form as typed after a refusal
/// (422).
async fn detail_with_codes(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    codes: super::codes::CodeForm,
) -> Result<Response, WebError> {
    let forms = DetailForms {
        codes,
        ..DetailForms::default()
    };
    detail_page(s, staff, id, forms).await
}

async fn detail(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
) -> Result<Response, WebError> {
    detail_page(&s, &staff, &id, DetailForms::default()).await
}

async fn detail_page(
    s: &AppState,
    staff: &Staff,
    id: &TemplateId,
    forms: DetailForms,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let t = s.service.get_template(id).await.or_page(l)?;
    let history = s.service.template_history(id).await.or_page(l)?;
    let refused = !forms.errors.is_empty() || forms.codes.is_refused();
    let batches = super::codes::template_batches(s, staff, &t).await;
    let title = crate::tr!(l, "template-title", name = t.name.clone());
    let jobs = super::bulk::template_jobs(s, &t).await;
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
    let typed_reason = super::escape_html(&f.reason);
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
    let unlimited = terms.stock_unlimited.is_some();
    let unlimited_box = (!locked).then(|| {
        view! {
            <label for="edit-stock-unlimited"><input type="checkbox" id="edit-stock-unlimited" name="stock_unlimited" value="on" checked=unlimited/>" "{l.t("template-stock-unlimited")}</label>
        }
    });
    let id = |field: &str| format!("edit-{}", field.replace('_', "-"));
    let hint_time = Some(l.t("template-business-time"));
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

// ---------------------------------------------------------------- actions

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ClaimingForm {
    reason: String,
}

async fn claiming(
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
struct EditForm {
    name: Option<String>,
    total_stock: Option<String>,
    claim_ends_at: Option<String>,
    now: Option<String>,
}

async fn edit(
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
                forms
                    .errors
                    .add(why.field(), l.t(why.label_key()).to_string());
                detail_page(&s, &staff, &id, forms).await?
            }
            Err(ServiceError::Invalid(f)) => {
                let field = match f.field {
                    "name" => "name",
                    "total_stock" => "total_stock",
                    "claim_ends_at" => "claim_ends_at",
                    _ => "form",
                };
                let words = match field {
                    "name" => l.t("template-error-name"),
                    "total_stock" => l.t("template-error-total-stock"),
                    "claim_ends_at" => l.t("template-error-claim-ends-at"),
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
