//! `/console/expirations`: the pending-expirations dashboard, for every
//! staff role. The chart is an SVG drawn on the server (no script): one bar
//! per hour for the next 72 hours, each with a `<title>` that browsers show
//! on hover, and a visually hidden table of the same numbers for screen
//! readers. Every figure comes from [`crate::service::dashboard`], whose
//! counts are the `GET /api/v1/expirations/pending` call itself.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use chrono::{DateTime, Duration, Timelike, Utc};
use leptos::prelude::*;
use leptos::tachys::html::attribute::custom::{CustomAttr, custom_attribute};

use super::auth::{Staff, WebError};
use super::components::{OptTime, Time};
use super::context::lang;
use super::i18n::Lang;
use super::layout::enc;
use super::posted::OrPage;
use crate::http::AppState;
use crate::service::dashboard::{ExpiryDashboard, JobRunView, LAG_SAMPLE, LagSample, TemplateDue};

pub fn routes() -> Router<AppState> {
    Router::new().route("/console/expirations", get(dashboard))
}

/// Hours the chart shows.
pub const CHART_HOURS: usize = 72;

async fn dashboard(State(s): State<AppState>, staff: Staff) -> Result<Response, WebError> {
    let l = staff.lang;
    let d = s.service.expiry_dashboard().await.or_page(l)?;
    Ok(staff.page(l.t("pending-expirations"), move || {
        view! { <DashboardBody dashboard=d/> }
    }))
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// A duration for people: `2 天 3 小时` / `2 d 3 h`, down to seconds.
pub fn duration_text(l: Lang, seconds: i64) -> String {
    let s = seconds.max(0);
    let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60);
    let parts: Vec<String> = if d > 0 {
        vec![crate::tr!(l, "d", d = d), crate::tr!(l, "h", h = h)]
    } else if h > 0 {
        vec![crate::tr!(l, "h-2", h = h), crate::tr!(l, "min", m = m)]
    } else if m > 0 {
        vec![crate::tr!(l, "min-2", m = m), crate::tr!(l, "s", sec = sec)]
    } else {
        vec![crate::tr!(l, "s-2", sec = sec)]
    };
    parts.join(" ")
}

fn ms_text(ms: Option<i64>) -> String {
    match ms {
        None => "—".to_string(),
        Some(ms) if ms < 10_000 => format!("{:.1} s", ms as f64 / 1000.0),
        Some(ms) => format!("{} s", thousands(ms / 1000)),
    }
}

/// The chart's hours: `CHART_HOURS` hours from the start of the current
/// hour, each with its count from the API's buckets; and the count of any
/// bucket past them (the window's last partial hour when now is not on
/// the hour).
pub fn hours(d: &ExpiryDashboard) -> (Vec<(DateTime<Utc>, i64)>, i64) {
    let now = DateTime::parse_from_rfc3339(&d.now)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|_| Utc::now());
    let first = now
        .with_minute(0)
        .and_then(|t| t.with_second(0))
        .and_then(|t| t.with_nanosecond(0))
        .unwrap_or(now);
    let mut out: Vec<(DateTime<Utc>, i64)> = (0..CHART_HOURS)
        .map(|i| (first + Duration::hours(i as i64), 0))
        .collect();
    let mut beyond = 0;
    for b in &d.pending.buckets {
        let Ok(t) = DateTime::parse_from_rfc3339(&b.starts_at) else {
            continue;
        };
        let i = (t.with_timezone(&Utc) - first).num_hours();
        match usize::try_from(i).ok().and_then(|i| out.get_mut(i)) {
            Some(slot) => slot.1 += b.count,
            None => beyond += b.count,
        }
    }
    (out, beyond)
}

/// The colour of the axes and their labels.
const AXIS: &str = "#5a6472";

/// `class="…"` as an attribute in its place among the others: leptos
/// writes a `class=` after all other attributes, and the chart's readers
/// (and tests) look for `<rect class="bar"`.
fn class_first(class: &'static str) -> CustomAttr<&'static str, &'static str> {
    custom_attribute("class", class)
}

/// The bar chart of the coupons due per hour, an SVG drawn on the server:
/// a bar per hour with its hour and count in a `<title>`, the y axis from
/// zero to the largest count, and a label every 6 hours.
#[component]
fn DueChart(hours: Vec<(DateTime<Utc>, i64)>, total: i64) -> impl IntoView {
    const LEFT: f64 = 56.0;
    const TOP: f64 = 12.0;
    const HEIGHT: f64 = 180.0;
    const BAR: f64 = 10.0;
    let l = lang();
    let width = LEFT + BAR * hours.len() as f64 + 12.0;
    let max = hours.iter().map(|h| h.1).max().unwrap_or(0).max(1);
    let peak = hours.iter().max_by_key(|h| h.1);
    let label = match peak {
        Some((t, n)) if *n > 0 => crate::tr!(
            l,
            "bar-chart-of-coupons-due-per-2",
            total = thousands(total),
            utc = crate::i18n::zone::local_minutes(*t),
            n = thousands(*n)
        ),
        _ => l.t("bar-chart-of-coupons-due-per").to_string(),
    };
    let base = TOP + HEIGHT;
    let bars = hours
        .iter()
        .enumerate()
        .map(|(i, (t, n))| {
            let x = LEFT + BAR * i as f64 + 1.0;
            let h = (*n as f64 / max as f64 * HEIGHT).max(if *n > 0 { 1.0 } else { 0.0 });
            let title = format!(
                "{}: {}",
                crate::i18n::zone::local_minutes(*t),
                thousands(*n)
            );
            let local = crate::i18n::zone::current().local(*t);
            let tick = local.hour().is_multiple_of(6).then(|| {
                let text = if local.hour() == 0 {
                    local.format("%m-%d").to_string()
                } else {
                    local.format("%H:%M").to_string()
                };
                view! {
                    <line x1=format!("{x}") y1=format!("{base}") x2=format!("{x}") y2=format!("{}", base + 5.0)
                        stroke=AXIS/>
                    <text x=format!("{x}") y=format!("{}", base + 18.0) font-size="11" fill=AXIS
                        data-testid="axis-label">{text}</text>
                }
            });
            view! {
                <rect {class_first("bar")} data-testid="bar" data-count=n.to_string() x=format!("{x}")
                    y=format!("{}", base - h) width=format!("{}", BAR - 2.0) height=format!("{h}")
                    fill="#b4232a"><title>{title}</title></rect>
                {tick}
            }
        })
        .collect_view();
    view! {
        <svg {class_first("chart")} data-testid="due-chart-svg" role="img" aria-label=label
            viewBox=format!("0 0 {width} {}", base + 40.0) width="100%" preserveAspectRatio="xMinYMin meet"
            xmlns="http://www.w3.org/2000/svg">
            // The y axis: zero and the maximum.
            <line x1=format!("{LEFT}") y1=format!("{base}") x2=format!("{}", width - 8.0) y2=format!("{base}")
                stroke=AXIS/>
            <line x1=format!("{LEFT}") y1=format!("{TOP}") x2=format!("{LEFT}") y2=format!("{base}") stroke=AXIS/>
            <text x=format!("{}", LEFT - 4.0) y=format!("{}", TOP + 10.0) text-anchor="end" font-size="11"
                fill=AXIS>{thousands(max)}</text>
            <text x=format!("{}", LEFT - 4.0) y=format!("{base}") text-anchor="end" font-size="11"
                fill=AXIS>"0"</text>
            {bars}
            <text x=format!("{LEFT}") y=format!("{}", base + 34.0) font-size="11" fill=AXIS>
                {l.t("chart-hour-axis")}
            </text>
        </svg>
    }
}

/// The dashboard: the summary, the chart of coupons due per hour (and
/// its table for screen readers), the expiry worker and the templates
/// with the most coupons due.
#[component]
fn DashboardBody(dashboard: ExpiryDashboard) -> impl IntoView {
    let (l, d) = (lang(), dashboard);
    let (hours, beyond) = hours(&d);
    let chart_hours = hours.clone();
    let pending_total = d.pending.total;
    let total = thousands(d.pending.total);
    let overdue = thousands(d.pending.overdue);
    let oldest = d
        .oldest_overdue_age_seconds
        .map(|s| duration_text(l, s))
        .unwrap_or_else(|| "—".to_string());
    let overdue_class = if d.pending.overdue > 0 {
        "badge badge-problem"
    } else {
        "badge badge-ok"
    };
    let beyond_note = (beyond > 0).then(|| {
        view! {
            <p class="note" data-testid="beyond-chart">{crate::tr!(l, "more-are-due-in-the-window", beyond = thousands(beyond))}</p>
        }
    });
    let rows = hours
        .iter()
        .map(|(t, n)| {
            let hour = crate::i18n::zone::local_minutes(*t);
            view! { <tr><th scope="row">{hour}</th><td>{thousands(*n)}</td></tr> }
        })
        .collect_view();
    let sweep = d.jobs.iter().find(|j| j.job == "sweep").cloned();
    view! {
        <section aria-labelledby="summary-heading">
            <h2 id="summary-heading">{l.t("summary")}</h2>
            <dl class="facts" data-testid="summary">
                <dt>{l.t("due-in-the-next-72-hours")}</dt>
                <dd data-testid="due-total">{total}</dd>
                <dt>{l.t("overdue-still-stored-available")}</dt>
                <dd><span class=overdue_class data-testid="overdue">{overdue}</span></dd>
                <dt>{l.t("oldest-overdue-for")}</dt>
                <dd data-testid="oldest-overdue-age">{oldest}</dd>
                <dt>{l.t("oldest-overdue-ended-at")}</dt>
                <dd><OptTime at=d.pending.oldest_overdue_ends_at/></dd>
                <dt>{l.t("read-at")}</dt>
                <dd data-testid="read-at"><Time at=d.now/></dd>
            </dl>
            <p class="note">{l.t("the-numbers-are-those-of-get")}</p>
        </section>
        <section aria-labelledby="chart-heading" data-testid="due-chart">
            <h2 id="chart-heading">{l.t("coupons-due-per-hour-next-72")}</h2>
            <div class="chart-wrap">
                <DueChart hours=chart_hours total=pending_total/>
            </div>
            {beyond_note}
            // A table ignores a 1 px height, so the wrapper hides it.
            <div class="visually-hidden"><table data-testid="due-table">
                <caption>{l.t("coupons-due-per-hour")}</caption>
                <thead><tr>
                    <th scope="col">{l.t("chart-hour-heading")}</th>
                    <th scope="col">{l.t("coupons-due")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        </section>
        <section aria-labelledby="worker-heading">
            <h2 id="worker-heading">{l.t("expiry-worker")}</h2>
            <ExpiryLag lag=d.lag/>
            <LastSweep sweep=sweep/>
            <JobsTable jobs=d.jobs/>
        </section>
        <section aria-labelledby="templates-heading">
            <h2 id="templates-heading">{l.t("templates-with-most-coupons-due-in")}</h2>
            <TopTemplates top=d.top_templates/>
        </section>
    }
}

/// How long coupons stayed available past their end before they expired,
/// from the latest expiry events.
#[component]
fn ExpiryLag(lag: LagSample) -> impl IntoView {
    let l = lang();
    let source = crate::tr!(
        l,
        "from-the-expiry-events-of-the",
        lag_sample = thousands(LAG_SAMPLE)
    );
    if lag.count == 0 {
        return view! {
            <p data-testid="lag">{l.t("no-coupon-expired-in-the-last")}" "<span class="note">{source}</span></p>
        }
        .into_any();
    }
    let by_actor = lag
        .by_actor
        .iter()
        .map(|(a, n)| format!("{a}: {}", thousands(*n as i64)))
        .collect::<Vec<_>>()
        .join(", ");
    view! {
        <dl class="facts" data-testid="lag">
            <dt>{l.t("expiry-lag-p50")}</dt><dd data-testid="lag-p50">{ms_text(lag.p50_ms)}</dd>
            <dt>{l.t("expiry-lag-p95")}</dt><dd data-testid="lag-p95">{ms_text(lag.p95_ms)}</dd>
            <dt>{l.t("largest-lag")}</dt><dd>{ms_text(lag.max_ms)}</dd>
            <dt>{l.t("sample")}</dt><dd data-testid="lag-count">{thousands(lag.count as i64)}" ("{by_actor}")"</dd>
            <dt>{l.t("latest-expiry")}</dt><dd><OptTime at=lag.latest_at/></dd>
        </dl>
        <p class="note">{source}</p>
    }
    .into_any()
}

/// The last backstop sweep: when it finished and how, the rows it
/// changed and how long it took.
#[component]
fn LastSweep(sweep: Option<JobRunView>) -> impl IntoView {
    let l = lang();
    match sweep {
        None => view! {
            <p data-testid="last-sweep">{l.t("no-backstop-sweep-has-been-recorded")}</p>
        }
        .into_any(),
        Some(j) => {
            let status = match &j.error {
                None => view! { <span class="badge badge-ok">{l.t("ok")}</span> }.into_any(),
                Some(e) => {
                    let e = e.clone();
                    view! { <span class="badge badge-problem" title=e>{l.t("failed")}</span> }
                        .into_any()
                }
            };
            view! {
                <dl class="facts" data-testid="last-sweep">
                    <dt>{l.t("last-backstop-sweep")}</dt>
                    <dd data-testid="last-sweep-at"><Time at=j.finished_at/>" "{status}</dd>
                    <dt>{l.t("rows-changed")}</dt>
                    <dd data-testid="last-sweep-rows">{thousands(j.rows)}</dd>
                    <dt>{l.t("duration")}</dt>
                    <dd data-testid="last-sweep-duration">{ms_text(Some(j.duration_ms))}</dd>
                </dl>
            }
            .into_any()
        }
    }
}

fn job_label(l: Lang, job: &str) -> &'static str {
    match job {
        "sweep" => l.t("backstop-sweep"),
        "zombie-reaper" => l.t("zombie-lock-reaper"),
        "archive" => l.t("archive"),
        "idempotency-purge" => l.t("idempotency-and-session-purge"),
        _ => l.t("job"),
    }
}

/// The last run of each background job.
#[component]
fn JobsTable(jobs: Vec<JobRunView>) -> impl IntoView {
    let l = lang();
    if jobs.is_empty() {
        return view! { <p class="note" data-testid="jobs-table">{l.t("no-job-runs-recorded-yet")}</p> }
            .into_any();
    }
    let rows = jobs
        .into_iter()
        .map(|j| {
            let name = format!("{} ({})", job_label(l, &j.job), j.job);
            let error = j.error.clone().unwrap_or_else(|| "—".to_string());
            let job = j.job.clone();
            view! {
                <tr data-job=job>
                    <td>{name}</td>
                    <td class="nowrap"><Time at=j.finished_at/></td>
                    <td>{ms_text(Some(j.duration_ms))}</td>
                    <td>{thousands(j.rows)}</td>
                    <td>{error}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table data-testid="jobs-table">
                <caption>{l.t("last-run-of-each-background-job")}</caption>
                <thead><tr>
                    <th scope="col">{l.t("job-2")}</th>
                    <th scope="col">{l.t("finished")}</th>
                    <th scope="col">{l.t("duration")}</th>
                    <th scope="col">{l.t("rows")}</th>
                    <th scope="col">{l.t("error")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <p class="note">{l.t("the-timing-wheel-runs-continuously-and")}</p>
    }
    .into_any()
}

/// The templates with the most coupons due, each linking to its
/// available coupons.
#[component]
fn TopTemplates(top: Vec<TemplateDue>) -> impl IntoView {
    let l = lang();
    if top.is_empty() {
        return view! { <p class="note" data-testid="top-templates">{l.t("no-templates-coupons-are-due-in")}</p> }
            .into_any();
    }
    let rows = top
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let href = format!(
                "/console/coupons?status=available&template_id={}",
                enc(&t.template_id)
            );
            let rank = i + 1;
            view! {
                <tr data-testid="top-template" data-template-id=t.template_id.clone()>
                    <td>{rank}</td>
                    <td><a href=href>{t.name.clone()}</a></td>
                    <td data-testid="top-template-count">{thousands(t.count)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table data-testid="top-templates">
                <thead><tr>
                    <th scope="col">"#"</th>
                    <th scope="col">{l.t("template")}</th>
                    <th scope="col">{l.t("due-within-24-h")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_durations_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(duration_text(Lang::En, 59), "59 s");
        assert_eq!(duration_text(Lang::En, 3 * 3600 + 120), "3 h 2 min");
        assert_eq!(duration_text(Lang::Zh, 2 * 86_400 + 3600), "2 天 1 小时");
    }
}
