//! The reminder plan (提醒计划): operators and admins see the pre-expiry
//! reminder plan and channel tiers as configured (read-only: each comes
//! from an environment variable, named next to it), the last 24 hours'
//! reminders by channel and by offset, and the 20 most recent reminders.
//! Support gets a 403 page.

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use super::layout::time_text;
use crate::domain::reminder::{INACTIVE_AFTER_DAYS, QuietHours, ReminderSettings};
use crate::domain::staff::Role;
use crate::domain::time::{from_ms, rfc3339};
use crate::http::AppState;
use crate::service::reminders::ReminderActivity;

const PAGE: &str = "/console/reminders";
/// Recent reminders listed.
const RECENT: i64 = 20;
const CHANNELS: [&str; 3] = ["sms", "push", "in_app"];

pub fn routes() -> Router<AppState> {
    Router::new().route(PAGE, get(page))
}

/// `3 天前` / `3 days before`, in the largest whole unit.
pub fn offset_label(l: Lang, secs: i64) -> String {
    let (n, zh, en) = if secs % 86_400 == 0 {
        (secs / 86_400, "天", "day")
    } else if secs % 3600 == 0 {
        (secs / 3600, "小时", "hour")
    } else if secs % 60 == 0 {
        (secs / 60, "分钟", "minute")
    } else {
        (secs, "秒", "second")
    };
    let plural = if n == 1 { "" } else { "s" };
    l.pick(format!("{n} {zh}前"), format!("{n} {en}{plural} before"))
}

fn channel_label(l: Lang, c: &str) -> &'static str {
    match c {
        "sms" => l.t("短信", "SMS"),
        "push" => l.t("推送", "Push"),
        "in_app" => l.t("仅站内信", "In-app only"),
        _ => l.t("未知", "unknown"),
    }
}

fn hhmm(minutes: u32) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

fn quiet_text(l: Lang, q: Option<QuietHours>) -> String {
    match q {
        Some(q) => format!("{}–{}", hhmm(q.start), hhmm(q.end)),
        None => l
            .t("无（不设免打扰时段）", "none (no quiet hours)")
            .to_string(),
    }
}

fn window_text(l: Lang, secs: i64) -> String {
    if secs == 0 {
        return l.t("0（不合并）", "0 (no aggregation)").to_string();
    }
    l.pick(format!("{secs} 秒"), format!("{secs} seconds"))
}

fn time_ms(ms: i64) -> String {
    time_text(&rfc3339(from_ms(ms)))
}

/// One row of the settings table: what, the value, the variable.
fn setting_row(
    what: &'static str,
    value: String,
    var: &'static str,
    testid: &'static str,
) -> impl IntoView + use<> {
    view! {
        <tr data-testid=testid>
            <th scope="row">{what}</th>
            <td>{value}</td>
            <td class="mono">{var}</td>
        </tr>
    }
}

fn plan_view(l: Lang, s: &ReminderSettings) -> impl IntoView + use<> {
    let offsets = s
        .offsets
        .iter()
        .map(|o| {
            view! { <li data-offset=o.to_string()>{offset_label(l, *o)}</li> }
        })
        .collect_view();
    let inactivity = l.pick(
        format!(
            "{INACTIVE_AFTER_DAYS} 天内没有领券、下单或访问自助查询页的用户不发短信（改为推送）。固定规则，不可配置。"
        ),
        format!(
            "Users without a claim, an order or a self-check visit in the last {INACTIVE_AFTER_DAYS} days get no sms (push instead). A fixed rule, not configurable."
        ),
    );
    view! {
        <section aria-labelledby="plan-heading">
            <h2 id="plan-heading">{l.t("提醒计划与分级", "Plan and tiers")}</h2>
            <p class="note">{l.t(
                "以下设置来自部署环境变量（只读），修改需更新部署配置并重启。",
                "These settings come from the deployment's environment (read-only); change them there and restart.",
            )}</p>
            <div class="table-wrap"><table data-testid="settings">
                <thead><tr>
                    <th scope="col">{l.t("设置", "Setting")}</th>
                    <th scope="col">{l.t("当前值", "Value")}</th>
                    <th scope="col">{l.t("环境变量", "Variable")}</th>
                </tr></thead>
                <tbody>
                    <tr data-testid="offsets">
                        <th scope="row">{l.t("提醒时点（到期前）", "Offsets (before the end)")}</th>
                        <td><ul class="inline">{offsets}</ul></td>
                        <td class="mono">"COUPONKEEPER_REMINDER_OFFSETS"</td>
                    </tr>
                    {setting_row(l.t("合并窗口", "Aggregation window"), window_text(l, s.window_seconds), "COUPONKEEPER_REMINDER_WINDOW_SECONDS", "window")}
                    {setting_row(l.t("免打扰时段（业务时区）", "Quiet hours (business time zone)"), quiet_text(l, s.quiet_hours), "COUPONKEEPER_QUIET_HOURS", "quiet-hours")}
                    {setting_row(l.t("业务时区", "Business time zone"), s.tz.to_string(), "COUPONKEEPER_BUSINESS_TZ", "business-tz")}
                    {setting_row(l.t("短信门槛（券总价值不低于）", "SMS threshold (total value at least)"), l.money(s.sms_min_cents), "COUPONKEEPER_SMS_MIN_CENTS", "sms-threshold")}
                    {setting_row(l.t("每人每 24 小时短信上限", "SMS per user per 24 hours"), s.limits.sms_per_day.to_string(), "COUPONKEEPER_REMINDER_SMS_PER_DAY", "sms-cap")}
                    {setting_row(l.t("每人每 24 小时推送上限", "Push per user per 24 hours"), s.limits.push_per_day.to_string(), "COUPONKEEPER_REMINDER_PUSH_PER_DAY", "push-cap")}
                </tbody>
            </table></div>
            <p class="note" data-testid="tiers">{l.t(
                "分级：同一时点合并后的券总价值达到短信门槛且用户活跃时发短信，否则发推送；超过短信上限改发推送，超过推送上限只留站内信。每条提醒都有站内信副本。",
                "Tiers: a reminder whose coupons together reach the sms threshold goes by sms if the user is active, otherwise by push; over the sms cap it becomes a push, over the push cap only the in-app copy. Every reminder also has an in-app copy.",
            )}</p>
            <p class="note" data-testid="inactivity">{inactivity}</p>
        </section>
    }
}

fn counts_view(l: Lang, s: &ReminderSettings, a: &ReminderActivity) -> impl IntoView + use<> {
    let by_channel = |c: &str| -> i64 {
        a.counts
            .iter()
            .filter(|r| r.channel == c)
            .map(|r| r.n)
            .sum()
    };
    let total: i64 = a.counts.iter().map(|r| r.n).sum();
    let channel_rows = CHANNELS
        .into_iter()
        .map(|c| {
            view! {
                <tr data-channel=c>
                    <th scope="row">{channel_label(l, c)}</th>
                    <td class="num" data-testid="count">{by_channel(c)}</td>
                </tr>
            }
        })
        .collect_view();
    // Every configured offset, and any other one seen (an earlier plan).
    let mut offsets = s.offsets.clone();
    for r in &a.counts {
        if !offsets.contains(&r.offset_seconds) {
            offsets.push(r.offset_seconds);
        }
    }
    offsets.sort_unstable_by(|x, y| y.cmp(x));
    let offset_rows = offsets
        .into_iter()
        .map(|o| {
            let cell = |c: &str| -> i64 {
                a.counts
                    .iter()
                    .filter(|r| r.offset_seconds == o && r.channel == c)
                    .map(|r| r.n)
                    .sum()
            };
            let all: i64 = a
                .counts
                .iter()
                .filter(|r| r.offset_seconds == o)
                .map(|r| r.n)
                .sum();
            let configured = s.offsets.contains(&o);
            view! {
                <tr data-offset=o.to_string()>
                    <th scope="row">
                        {offset_label(l, o)}
                        {(!configured).then(|| view! { " "<span class="badge badge-warning">{l.t("已不在计划中", "no longer planned")}</span> })}
                    </th>
                    <td class="num" data-channel="sms">{cell("sms")}</td>
                    <td class="num" data-channel="push">{cell("push")}</td>
                    <td class="num" data-channel="in_app">{cell("in_app")}</td>
                    <td class="num" data-testid="offset-total">{all}</td>
                </tr>
            }
        })
        .collect_view();
    let since = time_text(&rfc3339(a.since));
    view! {
        <section aria-labelledby="counts-heading">
            <h2 id="counts-heading">{l.t("最近 24 小时", "Last 24 hours")}</h2>
            <p class="note">{l.t("自", "Since")}" "{since}" · "{l.t("合计", "total")}" "<span data-testid="total">{total}</span></p>
            <div class="table-wrap"><table data-testid="by-channel">
                <thead><tr>
                    <th scope="col">{l.t("渠道", "Channel")}</th>
                    <th scope="col">{l.t("提醒数", "Reminders")}</th>
                </tr></thead>
                <tbody>{channel_rows}</tbody>
            </table></div>
            <div class="table-wrap"><table data-testid="by-offset">
                <thead><tr>
                    <th scope="col">{l.t("时点", "Offset")}</th>
                    <th scope="col">{channel_label(l, "sms")}</th>
                    <th scope="col">{channel_label(l, "push")}</th>
                    <th scope="col">{channel_label(l, "in_app")}</th>
                    <th scope="col">{l.t("合计", "Total")}</th>
                </tr></thead>
                <tbody>{offset_rows}</tbody>
            </table></div>
        </section>
    }
}

fn recent_view(l: Lang, a: &ReminderActivity) -> impl IntoView + use<> {
    let table = if a.recent.is_empty() {
        view! { <p class="note" data-testid="no-reminders">{l.t("还没有发出提醒。", "No reminders sent yet.")}</p> }.into_any()
    } else {
        let rows = a
            .recent
            .iter()
            .map(|r| {
                view! {
                    <tr data-slot=r.id.clone()>
                        <td class="mono">{r.user_id.clone()}</td>
                        <td>{offset_label(l, r.offset_seconds)}</td>
                        <td data-channel=r.channel.clone()>{channel_label(l, &r.channel)}</td>
                        <td class="num">{r.coupon_count}</td>
                        <td class="num">{l.money(r.total_value_cents)}</td>
                        <td class="nowrap">{time_ms(r.send_at)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <div class="table-wrap"><table data-testid="recent">
                <thead><tr>
                    <th scope="col">{l.t("用户", "User")}</th>
                    <th scope="col">{l.t("时点", "Offset")}</th>
                    <th scope="col">{l.t("渠道", "Channel")}</th>
                    <th scope="col">{l.t("券数", "Coupons")}</th>
                    <th scope="col">{l.t("总价值", "Total value")}</th>
                    <th scope="col">{l.t("发送时间", "Send time")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        }
        .into_any()
    };
    view! {
        <section aria-labelledby="recent-heading">
            <h2 id="recent-heading">{l.t("最近 20 条提醒", "The 20 most recent reminders")}</h2>
            {table}
        </section>
    }
}

async fn page(State(s): State<AppState>, staff: Staff) -> Response {
    let l = staff.lang;
    if !staff.session.role.includes(Role::Operator) {
        return WebError::forbidden(l.t(
            "查看提醒计划需要运营权限。",
            "The reminder plan needs the operator role.",
        ))
        .into_response();
    }
    let activity = match s.service.reminder_activity(RECENT).await {
        Ok(a) => a,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let settings = s.service.settings().reminders.clone();
    staff.page(
        l.t("提醒计划", "Reminders"),
        view! {
            {plan_view(l, &settings)}
            {counts_view(l, &settings, &activity)}
            {recent_view(l, &activity)}
        },
    )
}
