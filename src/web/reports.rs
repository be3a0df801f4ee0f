//! Reports (报表) in the console, on the same service functions as
//! `GET /templates/{id}/report` and `GET /presale-campaigns/{id}/report`:
//!
//! - `/console/templates/{id}/report[?from=&to=]` and
//!   `/console/campaigns/{id}/report[?from=&to=]`: the range form (business
//!   dates), the totals, a line chart (claimed and used per day) and a bar
//!   chart (discount per day) drawn as SVG on the server (each point's
//!   number in its `<title>`, scaled to the page's width by its viewBox),
//!   and a table of the same numbers.
//! - `.../report.csv`: the table as CSV.
//!
//! For operators and admins, enforced in the service (support gets 403).

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::context::lang;
use super::i18n::Lang;
use super::layout::{FieldErrors, enc, field_error};
use super::paths;
use crate::domain::FieldError;
use crate::domain::ids::{CampaignId, TemplateId};
use crate::domain::money::CentsDelta;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::reports::{Report, ReportDay};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/templates/{id}/report", get(template_page))
        .route("/console/templates/{id}/report.csv", get(template_csv))
        .route("/console/campaigns/{id}/report", get(campaign_page))
        .route("/console/campaigns/{id}/report.csv", get(campaign_csv))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Template,
    Campaign,
}

/// What a report is of: a template or a presale campaign.
#[derive(Debug, Clone)]
enum Subject {
    Template(TemplateId),
    Campaign(CampaignId),
}

impl Subject {
    fn kind(&self) -> Kind {
        match self {
            Subject::Template(_) => Kind::Template,
            Subject::Campaign(_) => Kind::Campaign,
        }
    }

    /// The page of the template or campaign.
    fn base(&self) -> String {
        match self {
            Subject::Template(id) => paths::template(id),
            Subject::Campaign(id) => paths::campaign(id),
        }
    }

    /// The report of the template or campaign.
    fn report(&self) -> String {
        match self {
            Subject::Template(id) => paths::template_report(id),
            Subject::Campaign(id) => paths::campaign_report(id),
        }
    }
}

impl Kind {
    fn claimed_key(self) -> &'static str {
        match self {
            Kind::Template => "report-claimed",
            Kind::Campaign => "report-campaign-claimed",
        }
    }

    fn available_key(self) -> &'static str {
        match self {
            Kind::Template => "report-available",
            Kind::Campaign => "report-campaign-available",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
struct RangeQuery {
    from: Option<String>,
    to: Option<String>,
}

impl RangeQuery {
    fn given(v: &Option<String>) -> Option<String> {
        v.as_ref()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    fn query(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = Self::given(&self.from) {
            parts.push(format!("from={}", enc(&f)));
        }
        if let Some(t) = Self::given(&self.to) {
            parts.push(format!("to={}", enc(&t)));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }
}

async fn load(
    s: &AppState,
    staff: &Staff,
    subject: Subject,
    q: &RangeQuery,
) -> Result<Report, ServiceError> {
    let (from, to) = (RangeQuery::given(&q.from), RangeQuery::given(&q.to));
    match subject {
        Subject::Template(id) => {
            s.service
                .template_report(&staff.authority(), id, from, to)
                .await
        }
        Subject::Campaign(id) => {
            s.service
                .campaign_report(&staff.authority(), id, from, to)
                .await
        }
    }
}

async fn template_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    Query(q): Query<RangeQuery>,
) -> Response {
    page(&s, &staff, Subject::Template(id), q).await
}

async fn campaign_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
    Query(q): Query<RangeQuery>,
) -> Response {
    page(&s, &staff, Subject::Campaign(id), q).await
}

async fn template_csv(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<TemplateId>,
    Query(q): Query<RangeQuery>,
) -> Response {
    csv(&s, &staff, Subject::Template(id), q).await
}

async fn campaign_csv(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CampaignId>,
    Query(q): Query<RangeQuery>,
) -> Response {
    csv(&s, &staff, Subject::Campaign(id), q).await
}

fn forbidden(l: Lang) -> Response {
    WebError::forbidden(l.t("report-needs-operator")).into_response()
}

/// The words of a refused range, beside its field.
fn range_error(l: Lang, e: &FieldError) -> (&'static str, String) {
    let key = if e.message.contains("after") {
        "report-from-after-to"
    } else if e.message.contains("at most") {
        "report-range-too-long"
    } else {
        "report-date-invalid"
    };
    let field = if e.field == "from" { "from" } else { "to" };
    (field, l.t(key).to_string())
}

async fn page(s: &AppState, staff: &Staff, subject: Subject, q: RangeQuery) -> Response {
    let l = staff.lang;
    let zone = crate::i18n::zone::offset_text(
        crate::i18n::zone::current().offset_seconds(s.service.now()),
    );
    match load(s, staff, subject.clone(), &q).await {
        Ok(r) => render(zone, staff, &q, Some(r), FieldErrors::default(), &subject),
        Err(ServiceError::Invalid(e)) => {
            let mut errors = FieldErrors::default();
            let (field, text) = range_error(l, &e);
            errors.add(field, text);
            let mut resp = render(zone, staff, &q, None, errors, &subject);
            *resp.status_mut() = StatusCode::BAD_REQUEST;
            resp
        }
        Err(ServiceError::Forbidden(_)) => forbidden(l),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

fn count(n: i64) -> String {
    super::dashboard::thousands(n)
}

fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

fn render(
    zone: String,
    staff: &Staff,
    q: &RangeQuery,
    r: Option<Report>,
    errors: FieldErrors,
    subject: &Subject,
) -> Response {
    let l = staff.lang;
    let kind = subject.kind();
    let name = r.as_ref().map(|r| r.name.clone()).unwrap_or_default();
    let title = if name.is_empty() {
        l.t("report").to_string()
    } else {
        crate::tr!(l, "report-title", name = name.clone())
    };
    let base = subject.base();
    let back_key = match kind {
        Kind::Template => "report-back-template",
        Kind::Campaign => "report-back-campaign",
    };
    let from = r
        .as_ref()
        .map(|r| r.from.clone())
        .or_else(|| q.from.clone())
        .unwrap_or_default();
    let to = r
        .as_ref()
        .map(|r| r.to.clone())
        .or_else(|| q.to.clone())
        .unwrap_or_default();
    let action = subject.report();
    let csv_href = format!("{}.csv{}", subject.report(), q.query());
    staff.page(&title, move || {
        view! {
            <p><a href=base data-testid="report-back">{l.t(back_key)}</a></p>
            <RangeForm action=action from=from to=to errors=errors zone=zone/>
            {r.map(|r| view! { <ReportSections kind=kind report=r csv_href=csv_href/> })}
        }
    })
}

/// The form that chooses the report's days (`from`, `to`, business
/// dates, each with its message when refused), posted to `action`, and
/// the note on the time zone (`zone`) the days are in.
#[component]
fn RangeForm(
    action: String,
    from: String,
    to: String,
    errors: FieldErrors,
    zone: String,
) -> impl IntoView {
    let l = lang();
    let from_state = errors.input_attrs("from", "report-from");
    let to_state = errors.input_attrs("to", "report-to");
    view! {
        <form method="get" action=action class="filters" data-testid="report-range">
            <label for="report-from">{l.t("report-from")}</label>
            <input type="date" id="report-from" name="from" value=from
                aria-invalid=from_state.invalid aria-describedby=from_state.described_by.clone()/>
            {field_error(&from_state)}
            <label for="report-to">{l.t("report-to")}</label>
            <input type="date" id="report-to" name="to" value=to
                aria-invalid=to_state.invalid aria-describedby=to_state.described_by.clone()/>
            {field_error(&to_state)}
            <button type="submit">{l.t("report-show")}</button>
        </form>
        <p class="note">{crate::tr!(l, "report-days-note", zone = zone)}</p>
    }
}

/// A report's numbers: the totals (with the CSV link, `csv_href`), the
/// line and bar charts, and the table of every day, newest first.
#[component]
fn ReportSections(kind: Kind, report: Report, csv_href: String) -> impl IntoView {
    let (l, r) = (lang(), report);
    let t = &r.totals;
    let line_days = r.days.clone();
    let bar_days = r.days.clone();
    let rows = r
        .days
        .iter()
        .rev()
        .map(|d| {
            view! {
                <tr data-testid="report-row">
                    <th scope="row" data-label=l.t("report-day")>{d.day.clone()}</th>
                    <td data-label=l.t(kind.claimed_key())>{count(d.claimed)}</td>
                    <td data-label=l.t("report-used")>{count(d.used)}</td>
                    <td data-label=l.t("report-returned")>{count(d.returned)}</td>
                    <td data-label=l.t("report-expired")>{count(d.expired)}</td>
                    <td data-label=l.t("report-invalidated")>{count(d.invalidated)}</td>
                    <td data-label=l.t("report-discount")>{CentsDelta::from_stored(d.discount_cents).shown()}</td>
                    <td data-label=l.t("report-compensation")>{CentsDelta::from_stored(d.compensation_cents).shown()}</td>
                    <td data-label=l.t("report-refunded-discount")>{CentsDelta::from_stored(d.refunded_discount_cents).shown()}</td>
                </tr>
            }
        })
        .collect_view();
    let budget = r.budget.map(|b| {
        let text = crate::web::templates::budget_figures(l, b.budget_cents, b.budget_used_cents);
        view! { <dt>{l.t("template-budget")}</dt><dd data-testid="report-budget">{text}</dd> }
    });
    view! {
        <section aria-labelledby="report-totals">
            <h2 id="report-totals">{l.t("report-totals")}</h2>
            <dl class="facts" data-testid="report-totals">
                <dt>{l.t(kind.claimed_key())}</dt><dd data-testid="total-claimed">{count(t.claimed)}</dd>
                <dt>{l.t("report-used")}</dt><dd data-testid="total-used">{count(t.used)}</dd>
                <dt>{l.t("report-returned")}</dt><dd>{count(t.returned)}</dd>
                <dt>{l.t("report-expired")}</dt><dd>{count(t.expired)}</dd>
                <dt>{l.t("report-invalidated")}</dt><dd>{count(t.invalidated)}</dd>
                <dt>{l.t("report-discount")}</dt><dd data-testid="total-discount">{CentsDelta::from_stored(t.discount_cents).shown()}</dd>
                <dt>{l.t("report-compensation")}</dt><dd>{CentsDelta::from_stored(t.compensation_cents).shown()}</dd>
                <dt>{l.t("report-refunded-discount")}</dt><dd data-testid="total-refunded-discount">{CentsDelta::from_stored(t.refunded_discount_cents).shown()}</dd>
                <dt>{l.t(kind.available_key())}</dt><dd data-testid="total-available">{count(t.available)}</dd>
                <dt>{l.t("report-rate")}</dt><dd data-testid="total-rate">{percent(t.redemption_rate)}</dd>
                {budget}
            </dl>
            <p class="actions"><a class="button" href=csv_href data-testid="report-csv">{l.t("export-csv")}</a></p>
        </section>
        <section aria-labelledby="report-line">
            <h2 id="report-line">{l.t("report-line-chart")}</h2>
            <div class="report-chart" data-testid="report-line-chart">
                <LineChart kind=kind days=line_days/>
            </div>
        </section>
        <section aria-labelledby="report-bars">
            <h2 id="report-bars">{l.t("report-bar-chart")}</h2>
            <div class="report-chart" data-testid="report-bar-chart">
                <BarChart days=bar_days/>
            </div>
        </section>
        <section aria-labelledby="report-table">
            <h2 id="report-table">{l.t("report-table")}</h2>
            <table class="stack" data-testid="report-table">
                <thead><tr>
                    <th scope="col">{l.t("report-day")}</th>
                    <th scope="col">{l.t(kind.claimed_key())}</th>
                    <th scope="col">{l.t("report-used")}</th>
                    <th scope="col">{l.t("report-returned")}</th>
                    <th scope="col">{l.t("report-expired")}</th>
                    <th scope="col">{l.t("report-invalidated")}</th>
                    <th scope="col">{l.t("report-discount")}</th>
                    <th scope="col">{l.t("report-compensation")}</th>
                    <th scope="col">{l.t("report-refunded-discount")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </section>
    }
}

async fn csv(s: &AppState, staff: &Staff, subject: Subject, q: RangeQuery) -> Response {
    let l = staff.lang;
    let kind = subject.kind();
    let r = match load(s, staff, subject, &q).await {
        Ok(r) => r,
        Err(ServiceError::Forbidden(_)) => return forbidden(l),
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let cell = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let header = [
        "report-day",
        kind.claimed_key(),
        "report-used",
        "report-returned",
        "report-expired",
        "report-invalidated",
        "report-discount-yuan",
        "report-compensation-yuan",
        "report-refunded-discount-yuan",
        "report-discount-cents",
        "report-compensation-cents",
        "report-refunded-discount-cents",
    ]
    .iter()
    .map(|k| cell(l.t(k)))
    .collect::<Vec<_>>()
    .join(",");
    let mut out = format!("{header}\n");
    for d in &r.days {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}\n",
            d.day,
            d.claimed,
            d.used,
            d.returned,
            d.expired,
            d.invalidated,
            CentsDelta::from_stored(d.discount_cents).yuan(),
            CentsDelta::from_stored(d.compensation_cents).yuan(),
            CentsDelta::from_stored(d.refunded_discount_cents).yuan(),
            d.discount_cents,
            d.compensation_cents,
            d.refunded_discount_cents
        ));
    }
    let file = format!("report-{}-{}.csv", r.from, r.to);
    super::layout::csv_download(&file, out)
}

// ---------------------------------------------------------------- charts

const W: f64 = 640.0;
const H: f64 = 240.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 24.0;
const BOTTOM: f64 = 36.0;

/// The colour of the axes and their labels.
const AXIS: &str = "#5a6472";
/// The colour of the legend's words.
const INK: &str = "#1d232b";
/// The claimed line.
const CLAIMED: &str = "#1f5f99";
/// The used line, and a bar below zero.
const RED: &str = "#b4232a";
/// A bar at or above zero.
const GREEN: &str = "#2e7d4f";

/// `MM-DD` of a `YYYY-MM-DD` day.
fn short_day(day: &str) -> &str {
    day.get(5..).unwrap_or(day)
}

/// The left margin that fits the axis labels `texts` (12 px text, about
/// 7 px a character, 8 px to spare), at least [`LEFT`]: a long amount is
/// not cut off at the edge.
fn left_for(texts: &[&str]) -> f64 {
    let widest = texts.iter().map(|t| t.chars().count()).max().unwrap_or(0);
    (widest as f64 * 7.0 + 8.0).max(LEFT)
}

/// The day labels under the x axis: the `x` and `MM-DD` of every
/// `step`-th day (and of the last one of a week or less).
fn day_labels(days: &[ReportDay], x_of: impl Fn(usize) -> f64) -> Vec<(f64, String)> {
    let step = days.len().div_ceil(6).max(1);
    days.iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || (i + 1 == days.len() && days.len() <= 7))
        .map(|(i, d)| (x_of(i), short_day(&d.day).to_string()))
        .collect()
}

/// The frame of a chart: the SVG (scaling with the page by its viewBox),
/// the axes from `left`, the labels of the top value, of zero (at
/// `zero_y`) and, when the chart goes below zero, of the bottom value, the
/// day labels, and then the chart's own marks (`children`).
#[component]
fn ChartFrame(
    label: &'static str,
    left: f64,
    top_text: String,
    zero_y: f64,
    bottom_text: Option<String>,
    day_labels: Vec<(f64, String)>,
    children: Children,
) -> impl IntoView {
    let base = H - BOTTOM;
    let zero = format!("{zero_y:.1}");
    let label_x = format!("{}", left - 4.0);
    let bottom = bottom_text.map(|text| {
        view! {
            <text x=label_x.clone() y=format!("{base}") text-anchor="end" font-size="12" fill=AXIS
                data-testid="axis-bottom">{text}</text>
        }
    });
    let labels = day_labels
        .into_iter()
        .map(|(x, text)| {
            view! {
                <text x=format!("{x}") y=format!("{}", base + 18.0) text-anchor="middle" font-size="12"
                    fill=AXIS data-testid="axis-label">{text}</text>
            }
        })
        .collect_view();
    view! {
        <svg viewBox=format!("0 0 {W} {H}") width="100%" preserveAspectRatio="xMidYMid meet" role="img"
            aria-label=label xmlns="http://www.w3.org/2000/svg">
            <line x1=format!("{left}") y1=zero.clone() x2=format!("{}", W - RIGHT) y2=zero.clone() stroke=AXIS/>
            <line x1=format!("{left}") y1=format!("{TOP}") x2=format!("{left}") y2=format!("{base}") stroke=AXIS/>
            <text x=label_x.clone() y=format!("{}", TOP + 4.0) text-anchor="end" font-size="12" fill=AXIS
                data-testid="axis-top">{top_text}</text>
            <text x=label_x y=zero text-anchor="end" font-size="12" fill=AXIS>"0"</text>
            {bottom}
            {labels}
            {children()}
        </svg>
    }
}

/// Claimed and used per day: two lines, a dot per day with its number in
/// a `<title>`, and a legend.
#[component]
fn LineChart(kind: Kind, days: Vec<ReportDay>) -> impl IntoView {
    let l = lang();
    let claimed_word = l.t(kind.claimed_key());
    let used_word = l.t("report-used");
    let max = days
        .iter()
        .map(|d| d.claimed.max(d.used))
        .max()
        .unwrap_or(0)
        .max(1);
    let n = days.len().max(1);
    let top_text = count(max);
    let left = left_for(&[&top_text]);
    let span = W - left - RIGHT - 8.0;
    let x_of = |i: usize| {
        if n == 1 {
            left + 4.0 + span / 2.0
        } else {
            left + 4.0 + span * i as f64 / (n - 1) as f64
        }
    };
    let base = H - BOTTOM;
    let y_of = |v: i64| base - (v.max(0) as f64 / max as f64) * (base - TOP);
    let labels = day_labels(&days, x_of);
    let series = [
        (
            "claimed",
            CLAIMED,
            claimed_word,
            (|d: &ReportDay| d.claimed) as fn(&ReportDay) -> i64,
        ),
        ("used", RED, used_word, |d: &ReportDay| d.used),
    ]
    .into_iter()
    .map(|(series, color, word, value)| {
        let points = days
            .iter()
            .enumerate()
            .map(|(i, d)| format!("{:.1},{:.1}", x_of(i), y_of(value(d))))
            .collect::<Vec<_>>()
            .join(" ");
        let dots = days
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let v = value(d);
                let title = format!("{} {}: {}", d.day, word, count(v));
                view! {
                    <circle cx=format!("{:.1}", x_of(i)) cy=format!("{:.1}", y_of(v)) r="3" fill=color
                        data-testid=format!("point-{series}") data-value=v.to_string()><title>{title}</title></circle>
                }
            })
            .collect_view();
        view! {
            <polyline fill="none" stroke=color stroke-width="2" points=points/>
            {dots}
        }
    })
    .collect_view();
    view! {
        <ChartFrame label=l.t("report-line-chart") left=left top_text=top_text zero_y=base
            bottom_text=None day_labels=labels>
            {series}
            <rect x=format!("{left}") y="4" width="10" height="10" fill=CLAIMED/>
            <text x=format!("{}", left + 14.0) y="13" font-size="12" fill=INK>{claimed_word}</text>
            <rect x=format!("{}", left + 140.0) y="4" width="10" height="10" fill=RED/>
            <text x=format!("{}", left + 154.0) y="13" font-size="12" fill=INK>{used_word}</text>
        </ChartFrame>
    }
}

/// Discount per day: a bar per day, its amount in a `<title>`. A day
/// whose returns outweigh its use (a negative net discount) is a bar below
/// the zero line, in another colour, and the axis then shows the lowest
/// amount too.
#[component]
fn BarChart(days: Vec<ReportDay>) -> impl IntoView {
    let l = lang();
    let top = days
        .iter()
        .map(|d| d.discount_cents)
        .max()
        .unwrap_or(0)
        .max(0);
    let bottom = days
        .iter()
        .map(|d| d.discount_cents)
        .min()
        .unwrap_or(0)
        .min(0);
    let top = if top == 0 && bottom == 0 { 1 } else { top };
    let range = (top - bottom).max(1) as f64;
    let n = days.len().max(1);
    let top_text = CentsDelta::from_stored(top).shown();
    let bottom_text = (bottom < 0).then(|| CentsDelta::from_stored(bottom).shown());
    let left = left_for(&[&top_text, bottom_text.as_deref().unwrap_or("")]);
    let slot = (W - left - RIGHT) / n as f64;
    let x_of = |i: usize| left + slot * (i as f64 + 0.5);
    let base = H - BOTTOM;
    let y_of = |v: i64| TOP + (top - v) as f64 / range * (base - TOP);
    let zero_y = y_of(0);
    let labels = day_labels(&days, x_of);
    let word = l.t("report-discount");
    let bars = days
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let v = d.discount_cents;
            let (y, h) = if v >= 0 {
                let y = y_of(v);
                (y, (zero_y - y).max(if v > 0 { 1.0 } else { 0.0 }))
            } else {
                (zero_y, (y_of(v) - zero_y).max(1.0))
            };
            let fill = if v < 0 { RED } else { GREEN };
            let w = (slot * 0.8).max(0.5);
            let title = format!("{} {}: {}", d.day, word, CentsDelta::from_stored(v).shown());
            view! {
                <rect x=format!("{:.1}", x_of(i) - w / 2.0) y=format!("{y:.1}") width=format!("{w:.1}")
                    height=format!("{h:.1}") fill=fill data-testid="bar" data-value=v.to_string()><title>{title}</title></rect>
            }
        })
        .collect_view();
    view! {
        <ChartFrame label=l.t("report-bar-chart") left=left top_text=top_text zero_y=zero_y
            bottom_text=bottom_text day_labels=labels>
            {bars}
        </ChartFrame>
    }
}

/// The line chart as HTML, as the page renders it.
#[cfg(test)]
fn line_chart(l: Lang, kind: Kind, days: &[ReportDay]) -> String {
    let days = days.to_vec();
    super::context::render_in(l, None, move || view! { <LineChart kind=kind days=days/> })
}

/// The bar chart as HTML, as the page renders it.
#[cfg(test)]
fn bar_chart(l: Lang, days: &[ReportDay]) -> String {
    let days = days.to_vec();
    super::context::render_in(l, None, move || view! { <BarChart days=days/> })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: &str, claimed: i64, used: i64, discount_cents: i64) -> ReportDay {
        ReportDay {
            day: d.into(),
            claimed,
            used,
            returned: 0,
            expired: 0,
            invalidated: 0,
            discount_cents,
            compensation_cents: 0,
            refunded_discount_cents: 0,
        }
    }

    #[test]
    fn every_point_and_bar_carries_its_number_and_the_svg_scales() {
        let days = vec![
            day("2026-12-01", 3, 1, 500),
            day("2026-12-02", 0, 0, 0),
            day("2026-12-03", 7, 2, 1234),
        ];
        let line = line_chart(Lang::En, Kind::Template, &days);
        assert!(line.contains("viewBox=\"0 0 640 240\""));
        assert!(line.contains("width=\"100%\""));
        assert_eq!(line.matches("<title>").count(), 6);
        assert!(line.contains("2026-12-03 Claimed: 7"));
        let bars = bar_chart(Lang::En, &days);
        assert_eq!(bars.matches("<title>").count(), 3);
        assert!(bars.contains("¥12.34"));
        assert!(bars.contains(">12-01<"));
        assert_eq!(CentsDelta::from_stored(-150).shown(), "-¥1.50");
    }

    /// The `(y, height)` of each bar.
    fn bars_of(svg: &str) -> Vec<(f64, f64)> {
        svg.split("<rect x=")
            .filter(|r| r.contains("data-testid=\"bar\""))
            .map(|r| {
                let num = |name: &str| -> f64 {
                    r.split(&format!("{name}=\""))
                        .nth(1)
                        .and_then(|v| v.split('"').next())
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(f64::NAN)
                };
                (num(" y"), num("height"))
            })
            .collect()
    }

    #[test]
    fn a_day_of_only_returns_is_a_bar_below_zero_and_big_amounts_fit_the_axis() {
        let days = vec![
            day("2026-12-01", 0, 3, 1_234_567),
            day("2026-12-02", 0, 0, -50_000),
            day("2026-12-03", 0, 0, 0),
        ];
        let svg = bar_chart(Lang::Zh, &days);
        let bars = bars_of(&svg);
        assert_eq!(bars.len(), 3, "{svg}");
        let zero = bars[0].0 + bars[0].1;
        assert!(bars[0].1 > 100.0, "the big day is tall: {bars:?}");
        assert!(
            (bars[1].0 - zero).abs() < 0.2 && bars[1].1 > 1.0,
            "the return day hangs below zero: {bars:?}"
        );
        assert!(svg.contains("#b4232a"), "in the return colour");
        assert!(
            svg.contains(">¥12345.67<") && svg.contains(">-¥500.00<"),
            "{svg}"
        );
        // The axis labels end 4 px left of the axis and start inside the
        // picture: 10 characters need about 70 px.
        let left = left_for(&["-¥500.00", "¥12345.67"]);
        assert!(left >= 70.0, "{left}");
        assert!(svg.contains(&format!("x1=\"{left}\"")), "{svg}");
        // All zero: the axis still reads 0 to ¥0.01, no bar drawn tall.
        let flat = bar_chart(Lang::Zh, &[day("2026-12-01", 0, 0, 0)]);
        assert!(bars_of(&flat).iter().all(|(_, h)| *h == 0.0), "{flat}");
    }
}
