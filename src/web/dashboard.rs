//! `/console/expirations`: the pending-expirations dashboard, for every
//! staff role. The chart is an SVG drawn on the server (no script): one bar
//! per hour for the next 72 hours, each with a `<title>` that browsers show
//! on hover, and a visually hidden table of the same numbers for screen
//! readers. Every figure comes from [`crate::service::dashboard`], whose
//! counts are the `GET /api/v1/expirations/pending` call itself.

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Duration, Timelike, Utc};
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use super::layout::{enc, opt_time, time_text};
use crate::http::AppState;
use crate::service::dashboard::{ExpiryDashboard, JobRunView, LAG_SAMPLE, LagSample, TemplateDue};

pub fn routes() -> Router<AppState> {
    Router::new().route("/console/expirations", get(dashboard))
}

/// Hours the chart shows.
pub const CHART_HOURS: usize = 72;

async fn dashboard(State(s): State<AppState>, staff: Staff) -> Response {
    let l = staff.lang;
    let d = match s.service.expiry_dashboard().await {
        Ok(d) => d,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    staff.page(l.t("到期看板", "Pending expirations"), body(l, d))
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
        vec![
            l.pick(format!("{d} 天"), format!("{d} d")),
            l.pick(format!("{h} 小时"), format!("{h} h")),
        ]
    } else if h > 0 {
        vec![
            l.pick(format!("{h} 小时"), format!("{h} h")),
            l.pick(format!("{m} 分"), format!("{m} min")),
        ]
    } else if m > 0 {
        vec![
            l.pick(format!("{m} 分"), format!("{m} min")),
            l.pick(format!("{sec} 秒"), format!("{sec} s")),
        ]
    } else {
        vec![l.pick(format!("{sec} 秒"), format!("{sec} s"))]
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

fn escape(s: &str) -> String {
    super::escape_html(s)
}

/// The bar chart as an SVG document fragment.
pub fn chart_svg(l: Lang, hours: &[(DateTime<Utc>, i64)], total: i64) -> String {
    const LEFT: f64 = 56.0;
    const TOP: f64 = 12.0;
    const HEIGHT: f64 = 180.0;
    const BAR: f64 = 10.0;
    let width = LEFT + BAR * hours.len() as f64 + 12.0;
    let max = hours.iter().map(|h| h.1).max().unwrap_or(0).max(1);
    let peak = hours.iter().max_by_key(|h| h.1);
    let label = match peak {
        Some((t, n)) if *n > 0 => l.pick(
            format!(
                "未来 72 小时每小时到期的券数柱状图：共 {} 张，最多在 {}（{} 张）",
                thousands(total),
                t.format("%Y-%m-%d %H:00 UTC"),
                thousands(*n)
            ),
            format!(
                "Bar chart of coupons due per hour over the next 72 hours: {} in all, most at {} ({})",
                thousands(total),
                t.format("%Y-%m-%d %H:00 UTC"),
                thousands(*n)
            ),
        ),
        _ => l
            .t(
                "未来 72 小时每小时到期的券数柱状图：没有券到期",
                "Bar chart of coupons due per hour over the next 72 hours: none due",
            )
            .to_string(),
    };
    let base = TOP + HEIGHT;
    let mut svg = format!(
        "<svg class=\"chart\" data-testid=\"due-chart-svg\" role=\"img\" aria-label=\"{}\" \
         viewBox=\"0 0 {width} {}\" width=\"100%\" preserveAspectRatio=\"xMinYMin meet\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        escape(&label),
        base + 40.0
    );
    // The y axis: zero and the maximum.
    svg.push_str(&format!(
        "<line x1=\"{LEFT}\" y1=\"{base}\" x2=\"{}\" y2=\"{base}\" stroke=\"#5a6472\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{base}\" stroke=\"#5a6472\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"11\" fill=\"#5a6472\">{}</text>\
         <text x=\"{}\" y=\"{base}\" text-anchor=\"end\" font-size=\"11\" fill=\"#5a6472\">0</text>",
        width - 8.0,
        LEFT - 4.0,
        TOP + 10.0,
        thousands(max),
        LEFT - 4.0,
    ));
    for (i, (t, n)) in hours.iter().enumerate() {
        let x = LEFT + BAR * i as f64 + 1.0;
        let h = (*n as f64 / max as f64 * HEIGHT).max(if *n > 0 { 1.0 } else { 0.0 });
        let title = format!("{}: {}", t.format("%Y-%m-%d %H:00 UTC"), thousands(*n));
        svg.push_str(&format!(
            "<rect class=\"bar\" data-testid=\"bar\" data-count=\"{n}\" x=\"{x}\" y=\"{}\" width=\"{}\" height=\"{h}\" fill=\"#b4232a\">\
             <title>{}</title></rect>",
            base - h,
            BAR - 2.0,
            escape(&title)
        ));
        if t.hour() % 6 == 0 {
            let text = if t.hour() == 0 {
                t.format("%m-%d").to_string()
            } else {
                t.format("%H:00").to_string()
            };
            svg.push_str(&format!(
                "<line x1=\"{x}\" y1=\"{base}\" x2=\"{x}\" y2=\"{}\" stroke=\"#5a6472\"/>\
                 <text x=\"{x}\" y=\"{}\" font-size=\"11\" fill=\"#5a6472\" data-testid=\"axis-label\">{}</text>",
                base + 5.0,
                base + 18.0,
                escape(&text)
            ));
        }
    }
    svg.push_str(&format!(
        "<text x=\"{LEFT}\" y=\"{}\" font-size=\"11\" fill=\"#5a6472\">{}</text></svg>",
        base + 34.0,
        escape(l.t("小时（UTC）", "hour (UTC)"))
    ));
    svg
}

fn body(l: Lang, d: ExpiryDashboard) -> impl IntoView + use<> {
    let (hours, beyond) = hours(&d);
    let svg = chart_svg(l, &hours, d.pending.total);
    let total = thousands(d.pending.total);
    let overdue = thousands(d.pending.overdue);
    let oldest = d
        .oldest_overdue_age_seconds
        .map(|s| duration_text(l, s))
        .unwrap_or_else(|| "—".to_string());
    let oldest_ends = opt_time(&d.pending.oldest_overdue_ends_at);
    let read_at = time_text(&d.now);
    let overdue_class = if d.pending.overdue > 0 {
        "badge badge-problem"
    } else {
        "badge badge-ok"
    };
    let beyond_note = (beyond > 0).then(|| {
        view! {
            <p class="note" data-testid="beyond-chart">{l.pick(
                format!("另有 {} 张在窗口最后不足一小时内到期（已计入总数）。", thousands(beyond)),
                format!("{} more are due in the window's last partial hour (counted in the total).", thousands(beyond)),
            )}</p>
        }
    });
    let rows = hours
        .iter()
        .map(|(t, n)| {
            let hour = t.format("%Y-%m-%d %H:00 UTC").to_string();
            view! { <tr><th scope="row">{hour}</th><td>{thousands(*n)}</td></tr> }
        })
        .collect_view();
    let sweep = d.jobs.iter().find(|j| j.job == "sweep").cloned();
    view! {
        <section aria-labelledby="summary-heading">
            <h2 id="summary-heading">{l.t("概况", "Summary")}</h2>
            <dl class="facts" data-testid="summary">
                <dt>{l.t("未来 72 小时到期", "Due in the next 72 hours")}</dt>
                <dd data-testid="due-total">{total}</dd>
                <dt>{l.t("已逾期未处理", "Overdue (still stored available)")}</dt>
                <dd><span class=overdue_class data-testid="overdue">{overdue}</span></dd>
                <dt>{l.t("最早逾期已过", "Oldest overdue for")}</dt>
                <dd data-testid="oldest-overdue-age">{oldest}</dd>
                <dt>{l.t("最早逾期的到期时间", "Oldest overdue ended at")}</dt>
                <dd>{oldest_ends}</dd>
                <dt>{l.t("数据读取时间", "Read at")}</dt>
                <dd data-testid="read-at">{read_at}</dd>
            </dl>
            <p class="note">{l.t(
                "数字与 GET /api/v1/expirations/pending?within_seconds=259200 相同（同一次服务调用）。",
                "The numbers are those of GET /api/v1/expirations/pending?within_seconds=259200 (the same service call).",
            )}</p>
        </section>
        <section aria-labelledby="chart-heading" data-testid="due-chart">
            <h2 id="chart-heading">{l.t("每小时到期数量（未来 72 小时）", "Coupons due per hour (next 72 hours)")}</h2>
            <div class="chart-wrap" inner_html=svg></div>
            {beyond_note}
            // A table ignores a 1 px height, so the wrapper hides it.
            <div class="visually-hidden"><table data-testid="due-table">
                <caption>{l.t("每小时到期数量", "Coupons due per hour")}</caption>
                <thead><tr>
                    <th scope="col">{l.t("小时（UTC）", "Hour (UTC)")}</th>
                    <th scope="col">{l.t("到期张数", "Coupons due")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        </section>
        <section aria-labelledby="worker-heading">
            <h2 id="worker-heading">{l.t("到期任务", "Expiry worker")}</h2>
            {lag_view(l, d.lag)}
            {sweep_view(l, sweep)}
            {jobs_table(l, d.jobs)}
        </section>
        <section aria-labelledby="templates-heading">
            <h2 id="templates-heading">{l.t("未来 24 小时到期最多的券模板", "Templates with most coupons due in the next 24 hours")}</h2>
            {templates_table(l, d.top_templates)}
        </section>
    }
}

fn lag_view(l: Lang, lag: LagSample) -> impl IntoView + use<> {
    let source = l.pick(
        format!(
            "来自数据库中最近一小时的过期事件（所有实例，最多 {} 条）。",
            thousands(LAG_SAMPLE)
        ),
        format!(
            "From the expiry events of the last hour in the database (every instance, at most {}).",
            thousands(LAG_SAMPLE)
        ),
    );
    if lag.count == 0 {
        return view! {
            <p data-testid="lag">{l.t("最近一小时没有券过期。", "No coupon expired in the last hour.")}" "<span class="note">{source}</span></p>
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
            <dt>{l.t("过期延迟 p50", "Expiry lag p50")}</dt><dd data-testid="lag-p50">{ms_text(lag.p50_ms)}</dd>
            <dt>{l.t("过期延迟 p95", "Expiry lag p95")}</dt><dd data-testid="lag-p95">{ms_text(lag.p95_ms)}</dd>
            <dt>{l.t("最大延迟", "Largest lag")}</dt><dd>{ms_text(lag.max_ms)}</dd>
            <dt>{l.t("样本", "Sample")}</dt><dd data-testid="lag-count">{thousands(lag.count as i64)}" ("{by_actor}")"</dd>
            <dt>{l.t("最近一次过期", "Latest expiry")}</dt><dd>{opt_time(&lag.latest_at)}</dd>
        </dl>
        <p class="note">{source}</p>
    }
    .into_any()
}

fn sweep_view(l: Lang, sweep: Option<JobRunView>) -> impl IntoView + use<> {
    match sweep {
        None => view! {
            <p data-testid="last-sweep">{l.t("还没有记录过兜底扫描。", "No backstop sweep has been recorded yet.")}</p>
        }
        .into_any(),
        Some(j) => {
            let status = match &j.error {
                None => view! { <span class="badge badge-ok">{l.t("成功", "ok")}</span> }.into_any(),
                Some(e) => {
                    let e = e.clone();
                    view! { <span class="badge badge-problem" title=e>{l.t("失败", "failed")}</span> }
                        .into_any()
                }
            };
            view! {
                <dl class="facts" data-testid="last-sweep">
                    <dt>{l.t("上次兜底扫描", "Last backstop sweep")}</dt>
                    <dd data-testid="last-sweep-at">{time_text(&j.finished_at)}" "{status}</dd>
                    <dt>{l.t("处理行数", "Rows changed")}</dt>
                    <dd data-testid="last-sweep-rows">{thousands(j.rows)}</dd>
                    <dt>{l.t("耗时", "Duration")}</dt>
                    <dd data-testid="last-sweep-duration">{ms_text(Some(j.duration_ms))}</dd>
                </dl>
            }
            .into_any()
        }
    }
}

fn job_label(l: Lang, job: &str) -> &'static str {
    match job {
        "sweep" => l.t("兜底扫描", "backstop sweep"),
        "zombie-reaper" => l.t("僵尸锁清理", "zombie-lock reaper"),
        "archive" => l.t("归档", "archive"),
        "idempotency-purge" => l.t("幂等键与会话清理", "idempotency and session purge"),
        _ => l.t("任务", "job"),
    }
}

fn jobs_table(l: Lang, jobs: Vec<JobRunView>) -> impl IntoView + use<> {
    if jobs.is_empty() {
        return view! { <p class="note" data-testid="jobs-table">{l.t("还没有任务运行记录。", "No job runs recorded yet.")}</p> }
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
                    <td class="nowrap">{time_text(&j.finished_at)}</td>
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
                <caption>{l.t("各后台任务的最近一次运行（job_runs）", "Last run of each background job (job_runs)")}</caption>
                <thead><tr>
                    <th scope="col">{l.t("任务", "Job")}</th>
                    <th scope="col">{l.t("结束时间", "Finished")}</th>
                    <th scope="col">{l.t("耗时", "Duration")}</th>
                    <th scope="col">{l.t("行数", "Rows")}</th>
                    <th scope="col">{l.t("错误", "Error")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <p class="note">{l.t(
            "精确到期的时间轮持续运行、不写运行记录；它的效果见上面的过期延迟。",
            "The timing wheel runs continuously and records no runs; its work shows in the expiry lag above.",
        )}</p>
    }
    .into_any()
}

fn templates_table(l: Lang, top: Vec<TemplateDue>) -> impl IntoView + use<> {
    if top.is_empty() {
        return view! { <p class="note" data-testid="top-templates">{l.t("未来 24 小时没有模板券到期。", "No template's coupons are due in the next 24 hours.")}</p> }
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
                    <td class="mono">{t.template_id.clone()}</td>
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
                    <th scope="col">{l.t("券模板", "Template")}</th>
                    <th scope="col">{l.t("模板 ID", "Template id")}</th>
                    <th scope="col">{l.t("24 小时内到期", "Due within 24 h")}</th>
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
