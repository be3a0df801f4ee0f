//! `/console/compensation` (the compensation ledger for finance, with its
//! CSV export `/console/compensation.csv`) and
//! `/console/compensation/rules` (support's caps and the compensation
//! presets, edited as a whole new version, and the versions before).
//! Operators and admins only; support staff get 403 (they see the caps
//! and presets in force on their compensation form).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::components::{Pager, Time};
use super::context::lang;
use super::i18n::Lang;
use super::layout::{FieldErrors, actor_text, enc, field_error, reason_text};
use super::paths;
use super::posted::OrPage;
use super::presets::preset_terms;
use crate::domain::compensation::{self, Preset, PresetInput, RuleChange, RulesInput};
use crate::domain::filters::{LedgerExportQuery, LedgerFilterInput, LedgerPageQuery};
use crate::domain::money::Cents;
use crate::domain::permissions::Permission;
use crate::domain::time::rfc3339;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::compensation::{
    Breakdown, GroupView, LedgerEntryView, MAX_EXPORT_ROWS, RulesVersionView,
};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/compensation", get(ledger_page))
        .route("/console/compensation.csv", get(ledger_csv))
        .route(
            "/console/compensation/rules",
            get(rules_page).post(save_rules),
        )
}

/// Rows per ledger page.
pub const PAGE_SIZE: i64 = 50;

fn may_manage(staff: &Staff) -> Result<(), WebError> {
    if staff.may(Permission::ManageCompensation) {
        Ok(())
    } else {
        Err(WebError::forbidden(staff.lang.t("comp-forbidden")))
    }
}

// ---------------------------------------------------------------- ledger

#[derive(Deserialize, Default, Clone)]
struct LedgerParams {
    from: Option<String>,
    to: Option<String>,
    staff: Option<String>,
    preset: Option<String>,
    campaign: Option<String>,
    order_no: Option<String>,
    after: Option<String>,
}

fn nonempty(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(|v| v.chars().take(200).collect())
}

impl LedgerParams {
    /// The filters as typed (each cut to 200 characters), for
    /// [`LedgerPageQuery::parse`] and [`LedgerExportQuery::parse`].
    fn filter(&self) -> LedgerFilterInput {
        LedgerFilterInput {
            from: nonempty(&self.from),
            to: nonempty(&self.to),
            order_no: nonempty(&self.order_no),
            staff: nonempty(&self.staff),
            preset_id: nonempty(&self.preset),
            campaign_id: nonempty(&self.campaign),
        }
    }

    fn filter_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("from", &self.from),
            ("to", &self.to),
            ("staff", &self.staff),
            ("preset", &self.preset),
            ("campaign", &self.campaign),
            ("order_no", &self.order_no),
        ] {
            if let Some(v) = nonempty(v) {
                q.append_pair(k, &v);
            }
        }
        q.finish()
    }
}

/// A bad filter (a date that does not parse, a bad cursor) is a 400 page
/// in the reader's language.
fn filter_error(l: Lang, e: ServiceError) -> Response {
    match e {
        ServiceError::Invalid(f) if f.field == "from" || f.field == "to" => {
            WebError::bad_request(l.t("dates-are-yyyy-mm-dd").to_string()).into_response()
        }
        ServiceError::Invalid(_) => {
            WebError::bad_request(l.t("comp-bad-filter").to_string()).into_response()
        }
        e => WebError::from_service(l, e).into_response(),
    }
}

fn kind_text(l: Lang, kind: &str) -> &'static str {
    match kind {
        "coupon" => l.t("compensation-coupon"),
        "final_payment_deduction" => l.t("taken-off-the-final-payment"),
        "refund_reversal" => l.t("comp-kind-refund-reversal"),
        _ => l.t("comp-kind-other"),
    }
}

fn dash(v: Option<String>) -> String {
    v.filter(|s| !s.is_empty())
        .unwrap_or_else(|| "—".to_string())
}

async fn ledger_page(
    State(s): State<AppState>,
    staff: Staff,
    Query(p): Query<LedgerParams>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    if let Err(e) = may_manage(&staff) {
        return Ok(e.into_response());
    }
    let tz = s.service.settings().reminders.tz;
    let query = match LedgerPageQuery::parse(PAGE_SIZE, p.filter(), tz) {
        Ok(query) => query,
        Err(e) => return Ok(filter_error(l, e.into())),
    };
    let after = nonempty(&p.after);
    let authority = staff.authority();
    let page = match s
        .service
        .compensation_ledger(&authority, &query, after.as_deref())
        .await
    {
        Ok(page) => page,
        Err(e) => return Ok(filter_error(l, e)),
    };
    let breakdown = match s
        .service
        .compensation_breakdown(&authority, &query.filter)
        .await
    {
        Ok(b) => b,
        Err(e) => return Ok(filter_error(l, e)),
    };
    let (presets, campaigns) = s.service.compensation_filter_choices().await.or_page(l)?;
    let fq = p.filter_query();
    let sep = if fq.is_empty() { "" } else { "&" };
    let csv_href = format!("/console/compensation.csv?{fq}");
    let next = page
        .next
        .as_ref()
        .map(|n| format!("/console/compensation?{fq}{sep}after={}", enc(n)));
    let first = after
        .is_some()
        .then(|| format!("/console/compensation?{fq}"));
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let (from, to, staff_name, order_no) = (
        value(&p.from),
        value(&p.to),
        value(&p.staff),
        value(&p.order_no),
    );
    let chosen_preset = value(&p.preset);
    let chosen_campaign = value(&p.campaign);
    let preset_options = presets
        .into_iter()
        .map(|(id, reason)| {
            let selected = id == chosen_preset;
            view! { <option value=id selected=selected>{reason}</option> }
        })
        .collect_view();
    let campaign_options = campaigns
        .into_iter()
        .map(|(id, name)| {
            let selected = id == chosen_campaign;
            view! { <option value=id selected=selected>{name}</option> }
        })
        .collect_view();
    let totals = crate::tr!(
        l,
        "comp-totals",
        count = page.totals.count,
        value = l.money(page.totals.value_cents)
    );
    let total_cents = page.totals.value_cents.to_string();
    let total_count = page.totals.count.to_string();
    let count = page.entries.len();
    Ok(staff.page(
        l.t("compensation-ledger"),
        move || view! {
            <p class="note"><a href="/console/compensation/rules" data-testid="rules-link">{l.t("comp-rules")}</a></p>
            <section aria-labelledby="comp-filters">
                <h2 id="comp-filters" class="visually-hidden">{l.t("filters")}</h2>
                <form method="get" action="/console/compensation" class="filters" data-testid="comp-filters">
                    <label>{l.t("comp-from-day")}<input type="date" name="from" value=from/></label>
                    <label>{l.t("comp-to-day")}<input type="date" name="to" value=to/></label>
                    <label>{l.t("comp-staff-name")}<input type="text" name="staff" value=staff_name/></label>
                    <label>{l.t("comp-reason-preset")}
                        <select name="preset">
                            <option value="">{l.t("comp-any")}</option>
                            {preset_options}
                        </select></label>
                    <label>{l.t("comp-campaign")}
                        <select name="campaign">
                            <option value="">{l.t("comp-any")}</option>
                            {campaign_options}
                        </select></label>
                    <label>{l.t("comp-order-no")}<input type="text" name="order_no" value=order_no/></label>
                    <button type="submit" class="primary">{l.t("filter")}</button>
                    <a class="button" href=csv_href data-testid="csv">{l.t("export-csv")}</a>
                </form>
            </section>
            <section aria-labelledby="comp-totals">
                <h2 id="comp-totals">{l.t("comp-totals-heading")}</h2>
                <p data-testid="comp-total" data-count=total_count data-cents=total_cents>{totals}</p>
                <BreakdownTables breakdown=breakdown/>
            </section>
            <section aria-labelledby="comp-results">
                <h2 id="comp-results">{crate::tr!(l, "on-this-page-newest-first", count = count)}</h2>
                <LedgerEntries entries=page.entries/>
                <Pager first=first next=next/>
            </section>
        },
    ))
}

fn group_label(l: Lang, g: &GroupView) -> String {
    if let Some(actor) = &g.actor {
        return actor_text(l, actor);
    }
    match (&g.preset, g.kind.as_deref()) {
        (Some((_, reason)), _) => reason.clone(),
        (None, Some("coupon")) => l.t("comp-free-amount").to_string(),
        (None, Some(kind)) => kind_text(l, kind).to_string(),
        (None, None) => "—".to_string(),
    }
}

/// The ledger's totals grouped by reason and by staff member, a table
/// each.
#[component]
fn BreakdownTables(breakdown: Breakdown) -> impl IntoView {
    let (l, b) = (lang(), breakdown);
    let table = |title: &'static str, testid: &'static str, groups: Vec<GroupView>| {
        let rows = groups
            .iter()
            .map(|g| {
                let label = group_label(l, g);
                let cents = g.value_cents.get().to_string();
                view! {
                    <tr data-testid="comp-group" data-cents=cents>
                        <td data-label=title>{label}</td>
                        <td data-label=l.t("comp-count")>{g.count}</td>
                        <td class="money" data-label=l.t("amount")>{g.value_cents.shown()}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <div class="table-wrap">
                <table class="stack" data-testid=testid>
                    <thead><tr>
                        <th scope="col">{title}</th>
                        <th scope="col">{l.t("comp-count")}</th>
                        <th scope="col">{l.t("amount")}</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
    };
    view! {
        {table(l.t("comp-by-reason"), "comp-by-reason", b.by_reason)}
        {table(l.t("comp-by-staff"), "comp-by-staff", b.by_staff)}
    }
}

/// The ledger entries of the page, newest first, or a note when none
/// match.
#[component]
fn LedgerEntries(entries: Vec<LedgerEntryView>) -> impl IntoView {
    let l = lang();
    if entries.is_empty() {
        return view! { <p class="note" data-testid="comp-empty">{l.t("no-entries-match")}</p> }
            .into_any();
    }
    let rows = entries
        .into_iter()
        .map(|e| {
            let user_href = paths::user(&e.user_id);
            let order = e.order_no.clone().map(|no| {
                let href = paths::order(&no);
                view! { <a href=href data-testid="comp-order">{no}</a> }
            });
            let coupon = e.coupon_id.clone().map(|id| {
                let href = paths::coupon(&id);
                let code = e.coupon_code.clone().unwrap_or_else(|| l.t("coupon").to_string());
                view! { <a href=href class="mono">{code}</a> }
            });
            // Which of the order's coupons it makes up for, by code.
            let for_coupon = match (e.for_coupon_id.clone(), e.for_coupon_code.clone()) {
                (Some(id), Some(code)) => {
                    let href = paths::coupon(&id);
                    view! { <a href=href class="mono" data-testid="comp-for-coupon">{code}</a> }
                        .into_any()
                }
                _ => view! { "—" }.into_any(),
            };
            let preset = match (&e.preset_id, &e.preset_reason) {
                (Some(_), Some(r)) => r.clone(),
                (Some(id), None) => id.clone(),
                (None, _) => "—".to_string(),
            };
            let version = e
                .rules_version
                .map(|v| crate::tr!(l, "comp-version-n", version = v))
                .unwrap_or_else(|| "—".to_string());
            let id = e.id.clone();
            view! {
                <tr data-testid="comp-row" data-id=id>
                    <td class="nowrap" data-label=l.t("when")><Time at=e.at.clone()/></td>
                    <td data-label=l.t("kind")>{kind_text(l, &e.kind)}</td>
                    <td class="money" data-label=l.t("amount")>{e.value_cents.shown()}</td>
                    <td data-label=l.t("comp-customer")><a href=user_href>{e.user_id.clone()}</a></td>
                    <td data-label=l.t("comp-order-no")>{order}</td>
                    <td data-label=l.t("comp-campaign")>{dash(e.campaign_name.clone())}</td>
                    <td data-label=l.t("coupon")>{coupon}</td>
                    <td data-label=l.t("comp-for-coupon")>{for_coupon}</td>
                    <td data-testid="comp-preset" data-label=l.t("comp-preset")>{preset}</td>
                    <td data-testid="comp-version" data-label=l.t("comp-rules-version")>{version}</td>
                    <td data-label=l.t("reason")>{reason_text(l, &e.reason)}</td>
                    <td data-label=l.t("actor")>{actor_text(l, &e.actor)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="comp-table">
                <thead><tr>
                    <th scope="col">{l.t("when")}</th>
                    <th scope="col">{l.t("kind")}</th>
                    <th scope="col">{l.t("amount")}</th>
                    <th scope="col">{l.t("comp-customer")}</th>
                    <th scope="col">{l.t("comp-order-no")}</th>
                    <th scope="col">{l.t("comp-campaign")}</th>
                    <th scope="col">{l.t("coupon")}</th>
                    <th scope="col">{l.t("comp-for-coupon")}</th>
                    <th scope="col">{l.t("comp-preset")}</th>
                    <th scope="col">{l.t("comp-rules-version")}</th>
                    <th scope="col">{l.t("reason")}</th>
                    <th scope="col">{l.t("actor")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

async fn ledger_csv(
    State(s): State<AppState>,
    staff: Staff,
    Query(p): Query<LedgerParams>,
) -> Response {
    let l = staff.lang;
    if let Err(e) = may_manage(&staff) {
        return e.into_response();
    }
    let tz = s.service.settings().reminders.tz;
    let query = match LedgerExportQuery::parse(MAX_EXPORT_ROWS, p.filter(), tz) {
        Ok(query) => query,
        Err(e) => return filter_error(l, e.into()),
    };
    match s
        .service
        .export_compensation_csv(
            &staff.authority(),
            &query,
            (
                &["kind_text", "actor_text"],
                &|e: &crate::service::compensation::LedgerEntryView| {
                    vec![kind_text(l, &e.kind).to_string(), actor_text(l, &e.actor)]
                },
            ),
        )
        .await
    {
        Ok(csv) => super::layout::csv_download("compensation-ledger.csv", csv),
        Err(e) => filter_error(l, e),
    }
}

// ----------------------------------------------------------------- rules

/// One preset row of the rules form, as typed.
#[derive(Debug, Clone, Default)]
struct RowState {
    id: String,
    reason: String,
    value: String,
    validity: String,
    min_order: String,
    categories: String,
    remove: bool,
}

impl RowState {
    fn blank(&self) -> bool {
        self.id.is_empty()
            && [
                &self.reason,
                &self.value,
                &self.validity,
                &self.min_order,
                &self.categories,
            ]
            .iter()
            .all(|v| v.trim().is_empty())
    }

    fn of(p: &Preset) -> Self {
        RowState {
            id: p.id.clone(),
            reason: p.reason.clone(),
            value: Cents::from_stored(p.value_cents).yuan(),
            validity: validity_input(p.valid_seconds),
            min_order: if p.min_order_cents > 0 {
                Cents::from_stored(p.min_order_cents).yuan()
            } else {
                String::new()
            },
            categories: p.categories.join(", "),
            remove: false,
        }
    }
}

/// The rules form as typed.
#[derive(Debug, Clone, Default)]
struct RulesForm {
    max: String,
    daily: String,
    rows: Vec<RowState>,
    reason: String,
    errors: FieldErrors,
}

/// Blank rows offered for new presets.
const NEW_ROWS: usize = 2;

/// A validity as the form shows it: `7` (days) or `12h` or `90s`.
fn validity_input(seconds: i64) -> String {
    if seconds % 86_400 == 0 {
        (seconds / 86_400).to_string()
    } else if seconds % 3600 == 0 {
        format!("{}h", seconds / 3600)
    } else {
        format!("{seconds}s")
    }
}

/// `7` → 7 days, `12h` → 12 hours, `90s` → 90 seconds, in seconds.
fn parse_validity(raw: &str) -> Option<i64> {
    let t = raw.trim().to_ascii_lowercase();
    let (digits, unit) = match t.strip_suffix('h') {
        Some(d) => (d, 3600),
        None => match t.strip_suffix('s') {
            Some(d) => (d, 1),
            None => (t.as_str(), 86_400),
        },
    };
    let n: i64 = digits
        .trim()
        .parse()
        .ok()
        .filter(|n: &i64| *n > 0 && *n <= 400 * 86_400)?;
    Some(n * unit)
}

fn split_categories(raw: &str) -> Vec<String> {
    raw.split([',', '\u{ff0c}', '\u{3001}'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// The form's rows from posted pairs `p<i>_<name>`.
fn rows_of(pairs: &[(String, String)]) -> Vec<RowState> {
    let mut rows: Vec<RowState> = Vec::new();
    for (k, v) in pairs {
        let Some((i, name)) = k
            .strip_prefix('p')
            .and_then(|rest| rest.split_once('_'))
            .and_then(|(i, name)| i.parse::<usize>().ok().map(|i| (i, name)))
        else {
            continue;
        };
        if i >= compensation::MAX_PRESETS + NEW_ROWS {
            continue;
        }
        if rows.len() <= i {
            rows.resize(i + 1, RowState::default());
        }
        let r = &mut rows[i];
        match name {
            "id" => r.id = v.trim().to_string(),
            "reason" => r.reason = v.clone(),
            "value" => r.value = v.clone(),
            "validity" => r.validity = v.clone(),
            "min_order" => r.min_order = v.clone(),
            "categories" => r.categories = v.clone(),
            "remove" => r.remove = matches!(v.as_str(), "on" | "true" | "1"),
            _ => {}
        }
    }
    rows
}

async fn rules_page(State(s): State<AppState>, staff: Staff) -> Result<Response, WebError> {
    if let Err(e) = may_manage(&staff) {
        return Ok(e.into_response());
    }
    let rules = s.service.compensation_rules().await.or_page(staff.lang)?;
    let form = RulesForm {
        max: Cents::from_stored(rules.support_max_cents).yuan(),
        daily: Cents::from_stored(rules.support_daily_cents).yuan(),
        rows: rules.presets.iter().map(RowState::of).collect(),
        ..RulesForm::default()
    };
    render_rules(&s, &staff, form).await
}

/// The message beside a field of the rules form, in the reader's words.
fn rules_error_text(l: Lang, field: &str, above_cap: bool) -> &'static str {
    if field == "reason" {
        return l.t("please-give-a-reason");
    }
    if field == "presets" {
        return l.t("comp-too-many-presets");
    }
    match field.rsplit('.').next().unwrap_or(field) {
        "support_max_cents" | "support_daily_cents" => l.t("comp-enter-cap"),
        "reason" => l.t("comp-preset-reason-invalid"),
        "value_cents" if above_cap => l.t("comp-preset-above-cap"),
        "value_cents" => l.t("comp-enter-preset-amount"),
        "valid_seconds" => l.t("comp-validity-invalid"),
        "min_order_cents" => l.t("comp-min-order-invalid"),
        "categories" => l.t("comp-categories-invalid"),
        "id" => l.t("comp-preset-gone"),
        _ => l.t("comp-bad-filter"),
    }
}

async fn save_rules(
    State(s): State<AppState>,
    staff: Staff,
    body: Bytes,
) -> Result<Response, WebError> {
    let l = staff.lang;
    if let Err(e) = may_manage(&staff) {
        return Ok(e.into_response());
    }
    let pairs: Vec<(String, String)> = staff.posted(&body)?;
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut form = RulesForm {
        max: get("support_max"),
        daily: get("support_daily"),
        rows: rows_of(&pairs),
        reason: get("reason"),
        errors: FieldErrors::default(),
    };
    let max = Cents::parse_yuan(&form.max);
    if max.is_none() {
        form.errors
            .add("support_max_cents", l.t("comp-enter-cap").to_string());
    }
    let daily = Cents::parse_yuan(&form.daily);
    if daily.is_none() {
        form.errors
            .add("support_daily_cents", l.t("comp-enter-cap").to_string());
    }
    if form.reason.trim().is_empty() {
        form.errors
            .add("reason", l.t("please-give-a-reason").to_string());
    }
    // The rows that become presets, and the form row of each (a domain
    // error names the preset's index in the list sent).
    let mut kept: Vec<usize> = Vec::new();
    let mut presets: Vec<PresetInput> = Vec::new();
    for (r, row) in form.rows.iter().enumerate() {
        if row.remove || row.blank() {
            continue;
        }
        let field = |name| compensation::preset_field(r, name);
        let value = Cents::parse_yuan(&row.value).filter(|v| *v > 0);
        if value.is_none() {
            form.errors.add(
                field("value_cents"),
                l.t("comp-enter-preset-amount").to_string(),
            );
        } else if let (Some(v), Some(m)) = (value, max)
            && v > m
        {
            form.errors.add(
                field("value_cents"),
                l.t("comp-preset-above-cap").to_string(),
            );
        }
        let validity = parse_validity(&row.validity);
        if validity.is_none() {
            form.errors.add(
                field("valid_seconds"),
                l.t("comp-validity-invalid").to_string(),
            );
        }
        let min_order = if row.min_order.trim().is_empty() {
            Some(0)
        } else {
            Cents::parse_yuan(&row.min_order)
        };
        if min_order.is_none() {
            form.errors.add(
                field("min_order_cents"),
                l.t("comp-min-order-invalid").to_string(),
            );
        }
        if row.reason.trim().is_empty() {
            form.errors.add(
                field("reason"),
                l.t("comp-preset-reason-invalid").to_string(),
            );
        }
        kept.push(r);
        presets.push(PresetInput {
            id: Some(row.id.clone()).filter(|i| !i.is_empty()),
            reason: Some(row.reason.clone()),
            value_cents: value,
            valid_seconds: validity,
            min_order_cents: min_order,
            categories: Some(split_categories(&row.categories)),
        });
    }
    if !form.errors.is_empty() {
        return render_rules(&s, &staff, form).await;
    }
    let input = RulesInput {
        support_max_cents: max,
        support_daily_cents: daily,
        presets: Some(presets.clone()),
    };
    Ok(
        match s
            .service
            .put_compensation_rules(
                &staff.ctx(),
                &staff.authority(),
                None,
                input,
                Some(form.reason.clone()),
            )
            .await
        {
            Ok(done) => {
                let version = match &done {
                    crate::service::Executed::Fresh(v) => v.version,
                    crate::service::Executed::Replayed { .. } => 0,
                };
                staff.done(
                    "/console/compensation/rules",
                    crate::tr!(l, "comp-rules-saved", version = version),
                )
            }
            Err(ServiceError::Invalid(f)) => {
                // Back to the form row the preset came from.
                let field = match preset_index(f.field) {
                    Some((i, name)) => match kept.get(i) {
                        Some(r) => compensation::preset_field(*r, name),
                        None => "form",
                    },
                    None => f.field,
                };
                let above_cap = f.message.contains("cap");
                let text = rules_error_text(l, field, above_cap).to_string();
                form.errors.add(field, text);
                render_rules(&s, &staff, form).await?
            }
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}

/// `presets[3].value_cents` → (3, "value_cents").
fn preset_index(field: &str) -> Option<(usize, &str)> {
    let rest = field.strip_prefix("presets[")?;
    let (i, name) = rest.split_once("].")?;
    Some((i.parse().ok()?, name))
}

async fn render_rules(
    s: &AppState,
    staff: &Staff,
    mut form: RulesForm,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let history = s
        .service
        .compensation_rule_history(&staff.authority())
        .await
        .or_page(l)?;
    let current = history.first().map(|v| {
        crate::tr!(
            l,
            "comp-version-in-force",
            version = v.rules.version,
            at = crate::i18n::zone::local_minutes(v.created_at),
            actor = actor_text(l, &v.actor)
        )
    });
    while form.rows.iter().rev().take_while(|r| r.blank()).count() < NEW_ROWS
        && form.rows.len() < compensation::MAX_PRESETS + NEW_ROWS
    {
        form.rows.push(RowState::default());
    }
    let invalid = !form.errors.is_empty();
    let max = form.errors.input_attrs("support_max_cents", "support_max");
    let daily = form
        .errors
        .input_attrs("support_daily_cents", "support_daily");
    let reason = form.errors.input_attrs("reason", "reason");
    let form_err = field_error(&form.errors.input_attrs("form", "form"));
    let csrf = staff.session.csrf_token.clone();
    let typed_reason = super::escape_html(&form.reason);
    let mut resp = staff.page(l.t("comp-rules"), move || {
        let rows = form
            .rows
            .into_iter()
            .enumerate()
            .map(|(index, row)| {
                view! { <PresetRow index=index row=row errors=form.errors.clone()/> }
            })
            .collect_view();
        view! {
            <p class="note"><a href="/console/compensation" data-testid="ledger-link">{l.t("compensation-ledger")}</a></p>
            <p class="note" data-testid="version-in-force">{current}</p>
            <section aria-labelledby="rules-edit">
                <h2 id="rules-edit">{l.t("comp-edit-rules")}</h2>
                <p class="note">{l.t("comp-rules-explained")}</p>
                {form_err}
                <form method="post" action="/console/compensation/rules" class="stack" data-testid="rules-form">
                    <input type="hidden" name="csrf" value=csrf/>
                    <label for="support_max">{l.t("comp-support-max")}</label>
                    <input id="support_max" name="support_max" type="text" inputmode="decimal" required=true value=form.max.clone()
                        aria-invalid=max.invalid aria-describedby=max.described_by.clone()/>
                    {field_error(&max)}
                    <label for="support_daily">{l.t("comp-support-daily")}</label>
                    <input id="support_daily" name="support_daily" type="text" inputmode="decimal" required=true value=form.daily.clone()
                        aria-invalid=daily.invalid aria-describedby=daily.described_by.clone()/>
                    {field_error(&daily)}
                    <fieldset class="presets">
                        <legend>{l.t("comp-presets")}</legend>
                        <p class="note">{l.t("comp-presets-explained")}</p>
                        {rows}
                    </fieldset>
                    <label for="reason">{l.t("reason-required-recorded-in-the-timeline")}</label>
                    <textarea id="reason" name="reason" required=true maxlength="500"
                        aria-invalid=reason.invalid aria-describedby=reason.described_by.clone()>{typed_reason}</textarea>
                    {field_error(&reason)}
                    <p class="actions"><button type="submit" class="primary" data-testid="save-rules">{l.t("comp-save-rules")}</button></p>
                </form>
            </section>
            <section aria-labelledby="rules-history">
                <h2 id="rules-history">{l.t("comp-versions")}</h2>
                <RulesHistory history=history/>
            </section>
        }
    });
    if invalid {
        *resp.status_mut() = axum::http::StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(resp)
}

/// One preset of the rules form (the `index`-th row): its reason, amount,
/// validity, minimum order and categories as typed, each with its message
/// from `errors`; an existing preset can be ticked for removal.
#[component]
fn PresetRow(index: usize, row: RowState, errors: FieldErrors) -> impl IntoView {
    let l = lang();
    let f = |name: &str, input: &str| {
        errors.input_attrs(
            compensation::preset_field(index, name),
            &format!("p{index}-{input}"),
        )
    };
    let (reason, value, validity, min_order, categories) = (
        f("reason", "reason"),
        f("value_cents", "value"),
        f("valid_seconds", "validity"),
        f("min_order_cents", "min-order"),
        f("categories", "categories"),
    );
    let id_of = |s: &str| format!("p{index}-{s}");
    let name_of = |s: &str| format!("p{index}_{s}");
    let existing = !row.id.is_empty();
    let remove = existing.then(|| {
        let (id, name) = (id_of("remove"), name_of("remove"));
        view! {
            <label class="inline"><input type="checkbox" id=id name=name checked=row.remove data-testid="preset-remove"/>" "{l.t("comp-remove-preset")}</label>
        }
    });
    let legend = if existing {
        l.t("comp-preset")
    } else {
        l.t("comp-new-preset")
    };
    view! {
        <div class="preset-row" data-testid="preset-row" data-preset-id=row.id.clone()>
            <p class="preset-legend">{legend}</p>
            <input type="hidden" name=name_of("id") value=row.id.clone()/>
            <label for=id_of("reason")>{l.t("comp-preset-reason")}</label>
            <input id=id_of("reason") name=name_of("reason") type="text" maxlength="100" value=row.reason.clone()
                aria-invalid=reason.invalid aria-describedby=reason.described_by.clone()/>
            {field_error(&reason)}
            <label for=id_of("value")>{l.t("amount-yuan")}</label>
            <input id=id_of("value") name=name_of("value") type="text" inputmode="decimal" value=row.value.clone()
                aria-invalid=value.invalid aria-describedby=value.described_by.clone()/>
            {field_error(&value)}
            <label for=id_of("validity")>{l.t("comp-preset-validity")}</label>
            <input id=id_of("validity") name=name_of("validity") type="text" value=row.validity.clone()
                aria-invalid=validity.invalid aria-describedby=validity.described_by.clone()/>
            {field_error(&validity)}
            <label for=id_of("min-order")>{l.t("comp-preset-min-order-label")}</label>
            <input id=id_of("min-order") name=name_of("min_order") type="text" inputmode="decimal" value=row.min_order.clone()
                aria-invalid=min_order.invalid aria-describedby=min_order.described_by.clone()/>
            {field_error(&min_order)}
            <label for=id_of("categories")>{l.t("comp-preset-categories-label")}</label>
            <input id=id_of("categories") name=name_of("categories") type="text" value=row.categories.clone()
                aria-invalid=categories.invalid aria-describedby=categories.described_by.clone()/>
            {field_error(&categories)}
            {remove}
        </div>
    }
}

/// One change of the rules in words (this page's history and the staff
/// log).
pub(super) fn change_text(l: Lang, c: &RuleChange) -> String {
    match c {
        RuleChange::SupportMax { from, to } => crate::tr!(
            l,
            "comp-change-max",
            from = l.money(*from),
            to = l.money(*to)
        ),
        RuleChange::SupportDaily { from, to } => crate::tr!(
            l,
            "comp-change-daily",
            from = l.money(*from),
            to = l.money(*to)
        ),
        RuleChange::PresetAdded { preset: p } => crate::tr!(
            l,
            "comp-change-added",
            reason = p.reason.clone(),
            terms = preset_terms(l, p)
        ),
        RuleChange::PresetRemoved { preset: p } => {
            crate::tr!(l, "comp-change-removed", reason = p.reason.clone())
        }
        RuleChange::PresetChanged { before, after } => crate::tr!(
            l,
            "comp-change-changed",
            reason = after.reason.clone(),
            before = format!("{}: {}", before.reason, preset_terms(l, before)),
            after = preset_terms(l, after)
        ),
    }
}

/// The versions of the rules, newest first: who made each and when, the
/// caps, the reason and what changed.
#[component]
fn RulesHistory(history: Vec<RulesVersionView>) -> impl IntoView {
    let l = lang();
    let items = history
        .into_iter()
        .map(|v| {
            let head = crate::tr!(
                l,
                "comp-version-head",
                version = v.rules.version,
                at = crate::i18n::zone::local_minutes(v.created_at),
                actor = actor_text(l, &v.actor)
            );
            let caps = crate::tr!(
                l,
                "comp-version-caps",
                max = l.money(v.rules.support_max_cents),
                daily = l.money(v.rules.support_daily_cents),
                presets = v.rules.presets.len()
            );
            let reason = (!v.reason.is_empty()
                && v.actor != crate::service::compensation::SETTINGS_ACTOR)
                .then(|| view! { <p class="note">{l.t("reason")}": "{v.reason.clone()}</p> });
            let from_settings = (v.actor == crate::service::compensation::SETTINGS_ACTOR)
                .then(|| view! { <p class="note">{l.t("comp-version-from-settings")}</p> });
            let changes = v
                .changes
                .iter()
                .map(|c| view! { <li>{change_text(l, c)}</li> })
                .collect_view();
            let version = v.rules.version.to_string();
            let at = rfc3339(v.created_at);
            view! {
                <li data-testid="rules-version" data-version=version data-at=at>
                    <p><strong>{head}</strong></p>
                    <p class="note">{caps}</p>
                    {from_settings}
                    {reason}
                    <ul data-testid="rules-changes">{changes}</ul>
                </li>
            }
        })
        .collect_view();
    view! { <ol class="versions" data-testid="rules-versions">{items}</ol> }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_is_days_hours_or_seconds() {
        assert_eq!(parse_validity("7"), Some(7 * 86_400));
        assert_eq!(parse_validity("12h"), Some(12 * 3600));
        assert_eq!(parse_validity("90s"), Some(90));
        assert_eq!(parse_validity("x"), None);
        assert_eq!(parse_validity("0"), None);
        assert_eq!(validity_input(7 * 86_400), "7");
        assert_eq!(validity_input(3600), "1h");
    }

    #[test]
    fn posted_rows_are_read_by_their_index() {
        let pairs = vec![
            ("p1_reason".to_string(), "b".to_string()),
            ("p0_id".to_string(), "cps_1".to_string()),
            ("p0_remove".to_string(), "on".to_string()),
        ];
        let rows = rows_of(&pairs);
        assert_eq!(rows.len(), 2);
        assert!(rows[0].remove && rows[0].id == "cps_1");
        assert_eq!(rows[1].reason, "b");
        assert_eq!(
            preset_index("presets[3].value_cents"),
            Some((3, "value_cents"))
        );
    }
}
