//! The reminder plan (提醒计划): operators and admins see the pre-expiry
//! reminder plan, each offset's channel and the channel tiers as
//! configured (read-only: each comes from an environment variable, named
//! next to it, with the recommended channels per offset), the last 24
//! hours' reminders by channel and by offset, and the 20 most recent
//! reminders.
//! Support gets a 403 page.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::components::Time;
use super::context::lang;
use super::i18n::Lang;
use super::layout::time_string;
use super::posted::OrPage;
use crate::domain::permissions::Permission;
use crate::domain::reminder::{
    Channel, INACTIVE_AFTER_DAYS, QuietHours, RECOMMENDED_CHANNELS, ReminderSettings,
};
use crate::domain::time::{from_ms, rfc3339};
use crate::http::AppState;
use crate::service::reminders::ReminderActivity;

const PAGE: &str = "/console/reminders";
/// Recent reminders listed.
const RECENT: i64 = 20;
const CHANNELS: [&str; 4] = ["sms", "push", "in_app", "popup"];

pub fn routes() -> Router<AppState> {
    Router::new().route(PAGE, get(page))
}

/// `3 天前` / `3 days before`, in the largest whole unit.
pub fn offset_label(l: Lang, secs: i64) -> String {
    if secs % 86_400 == 0 {
        crate::tr!(l, "offset-days-before", n = secs / 86_400)
    } else if secs % 3600 == 0 {
        crate::tr!(l, "offset-hours-before", n = secs / 3600)
    } else if secs % 60 == 0 {
        crate::tr!(l, "offset-minutes-before", n = secs / 60)
    } else {
        crate::tr!(l, "offset-seconds-before", n = secs)
    }
}

fn channel_label(l: Lang, c: &str) -> &'static str {
    match c {
        "sms" => l.t("sms"),
        "push" => l.t("push"),
        "in_app" => l.t("in-app-only"),
        "popup" => l.t("popup"),
        _ => l.t("term-unknown"),
    }
}

fn hhmm(minutes: u32) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

fn quiet_text(l: Lang, q: Option<QuietHours>) -> String {
    match q {
        Some(q) => format!("{}–{}", hhmm(q.start), hhmm(q.end)),
        None => l.t("none-no-quiet-hours").to_string(),
    }
}

fn window_text(l: Lang, secs: i64) -> String {
    if secs == 0 {
        return l.t("n-0-no-aggregation").to_string();
    }
    crate::tr!(l, "seconds", secs = secs)
}

fn time_ms(ms: i64) -> String {
    time_string(&rfc3339(from_ms(ms)))
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

/// The reminder plan and channel tiers as configured, each setting with
/// the environment variable it comes from.
#[component]
fn ReminderPlan(settings: ReminderSettings) -> impl IntoView {
    let (l, s) = (lang(), settings);
    let offsets = s
        .offsets
        .iter()
        .map(|o| {
            view! { <li data-offset=o.to_string()>{offset_label(l, *o)}</li> }
        })
        .collect_view();
    // Each offset's channel before the tier and the caps: a push step
    // goes by sms at or above the threshold.
    let step_channels = s
        .offsets
        .iter()
        .map(|o| {
            let ch = s.step_channel(*o);
            let name = if ch == Channel::Push {
                l.t("push-or-sms-by-tier")
            } else {
                channel_label(l, ch.as_str())
            };
            let text = crate::tr!(
                l,
                "offset-goes-by",
                offset = offset_label(l, *o),
                channel = name
            );
            view! { <li data-offset=o.to_string() data-channel=ch.as_str()>{text}</li> }
        })
        .collect_view();
    let recommended = crate::tr!(l, "recommended-channels", value = RECOMMENDED_CHANNELS);
    let inactivity = crate::tr!(
        l,
        "users-without-a-claim-an-order",
        INACTIVE_AFTER_DAYS = INACTIVE_AFTER_DAYS
    );
    view! {
        <section aria-labelledby="plan-heading">
            <h2 id="plan-heading">{l.t("plan-and-tiers")}</h2>
            <p class="note">{l.t("these-settings-come-from-the-deployments")}</p>
            <div class="table-wrap"><table data-testid="settings">
                <thead><tr>
                    <th scope="col">{l.t("setting")}</th>
                    <th scope="col">{l.t("value")}</th>
                    <th scope="col">{l.t("variable")}</th>
                </tr></thead>
                <tbody>
                    <tr data-testid="offsets">
                        <th scope="row">{l.t("offsets-before-the-end")}</th>
                        <td><ul class="inline">{offsets}</ul></td>
                        <td class="mono">"COUPONKEEPER_REMINDER_OFFSETS"</td>
                    </tr>
                    <tr data-testid="step-channels">
                        <th scope="row">{l.t("channel-per-offset")}</th>
                        <td><ul class="plain">{step_channels}</ul></td>
                        <td class="mono">"COUPONKEEPER_REMINDER_CHANNELS"</td>
                    </tr>
                    {setting_row(l.t("aggregation-window"), window_text(l, s.window_seconds), "COUPONKEEPER_REMINDER_WINDOW_SECONDS", "window")}
                    {setting_row(l.t("quiet-hours-business-time-zone"), quiet_text(l, s.quiet_hours), "COUPONKEEPER_QUIET_HOURS", "quiet-hours")}
                    {setting_row(l.t("business-time-zone"), s.tz.to_string(), "COUPONKEEPER_BUSINESS_TZ", "business-tz")}
                    {setting_row(l.t("sms-threshold-total-value-at-least"), l.money(s.sms_min_cents), "COUPONKEEPER_SMS_MIN_CENTS", "sms-threshold")}
                    {setting_row(l.t("sms-per-user-per-24-hours"), s.limits.sms_per_day.to_string(), "COUPONKEEPER_REMINDER_SMS_PER_DAY", "sms-cap")}
                    {setting_row(l.t("push-per-user-per-24-hours"), s.limits.push_per_day.to_string(), "COUPONKEEPER_REMINDER_PUSH_PER_DAY", "push-cap")}
                </tbody>
            </table></div>
            <p class="note" data-testid="recommended-channels">{recommended}</p>
            <p class="note" data-testid="tiers">{l.t("tiers-a-reminder-whose-coupons-together")}</p>
            <p class="note" data-testid="inactivity">{inactivity}</p>
        </section>
    }
}

/// The last 24 hours' reminders by channel and by offset (every planned
/// offset, and any other one seen).
#[component]
fn ReminderCounts(settings: ReminderSettings, activity: ReminderActivity) -> impl IntoView {
    let (l, s, a) = (lang(), settings, activity);
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
                        {(!configured).then(|| view! { " "<span class="badge badge-warning">{l.t("no-longer-planned")}</span> })}
                    </th>
                    <td class="num" data-channel="sms">{cell("sms")}</td>
                    <td class="num" data-channel="push">{cell("push")}</td>
                    <td class="num" data-channel="in_app">{cell("in_app")}</td>
                    <td class="num" data-channel="popup">{cell("popup")}</td>
                    <td class="num" data-testid="offset-total">{all}</td>
                </tr>
            }
        })
        .collect_view();
    let since = rfc3339(a.since);
    view! {
        <section aria-labelledby="counts-heading">
            <h2 id="counts-heading">{l.t("last-24-hours")}</h2>
            <p class="note">{l.t("since")}" "<Time at=since/>" · "{l.t("total-3")}" "<span data-testid="total">{total}</span></p>
            <div class="table-wrap"><table data-testid="by-channel">
                <thead><tr>
                    <th scope="col">{l.t("channel")}</th>
                    <th scope="col">{l.t("reminders-2")}</th>
                </tr></thead>
                <tbody>{channel_rows}</tbody>
            </table></div>
            <div class="table-wrap"><table data-testid="by-offset">
                <thead><tr>
                    <th scope="col">{l.t("offset")}</th>
                    <th scope="col">{channel_label(l, "sms")}</th>
                    <th scope="col">{channel_label(l, "push")}</th>
                    <th scope="col">{channel_label(l, "in_app")}</th>
                    <th scope="col">{channel_label(l, "popup")}</th>
                    <th scope="col">{l.t("total-4")}</th>
                </tr></thead>
                <tbody>{offset_rows}</tbody>
            </table></div>
        </section>
    }
}

/// The most recent reminders, newest first.
#[component]
fn RecentReminders(activity: ReminderActivity) -> impl IntoView {
    let (l, a) = (lang(), activity);
    let table = if a.recent.is_empty() {
        view! { <p class="note" data-testid="no-reminders">{l.t("no-reminders-sent-yet")}</p> }
            .into_any()
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
                        <td class="num">{r.total_value_cents.shown()}</td>
                        <td class="nowrap">{time_ms(r.send_at)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <div class="table-wrap"><table data-testid="recent">
                <thead><tr>
                    <th scope="col">{l.t("user")}</th>
                    <th scope="col">{l.t("offset")}</th>
                    <th scope="col">{l.t("channel")}</th>
                    <th scope="col">{l.t("coupons-2")}</th>
                    <th scope="col">{l.t("total-value")}</th>
                    <th scope="col">{l.t("send-time")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        }
        .into_any()
    };
    view! {
        <section aria-labelledby="recent-heading">
            <h2 id="recent-heading">{l.t("the-20-most-recent-reminders")}</h2>
            {table}
        </section>
    }
}

async fn page(State(s): State<AppState>, staff: Staff) -> Result<Response, WebError> {
    let l = staff.lang;
    if !staff.may(Permission::ReadReminderPlan) {
        return Err(WebError::forbidden(
            l.t("the-reminder-plan-needs-the-operator"),
        ));
    }
    let activity = s.service.reminder_activity(RECENT).await.or_page(l)?;
    let settings = s.service.settings().reminders.clone();
    Ok(staff.page(l.t("reminders"), move || {
        view! {
            <ReminderPlan settings=settings.clone()/>
            <ReminderCounts settings=settings activity=activity.clone()/>
            <RecentReminders activity=activity/>
        }
    }))
}
