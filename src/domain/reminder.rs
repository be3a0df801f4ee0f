//! Pre-expiry reminders (到期提醒): the plan of offsets, quiet hours in the
//! business time zone, aggregation per user and slot, channel tiers, rate
//! limits and the customers' message texts.
//!
//! Pure rules: no I/O, "now" is always an argument. The service
//! (`service::reminders`) reads candidates, calls these rules and writes the
//! marks, the outbox row and the in-app message in one transaction.
//!
//! Time zone: `COUPONKEEPER_BUSINESS_TZ` is a fixed UTC offset (`+08:00`,
//! `-05:30`, `UTC`) or one of the named zones without daylight saving time
//! that map to one ([`NAMED_ZONES`], `Asia/Shanghai` = `+08:00`). A zone with
//! DST is refused rather than silently mis-handled (no `chrono-tz`: its tz
//! database is a heavy build for the one zone the shop uses).

use chrono::{DateTime, Duration, FixedOffset, NaiveTime, TimeZone, Utc};

use super::discount::DiscountRule;
use super::money::Cents;

/// The default plan: three days, one day and thirty minutes before `ends_at`.
pub const DEFAULT_OFFSETS: &str = "3d,1d,30m";
/// Default quiet hours, in the business time zone.
pub const DEFAULT_QUIET_HOURS: &str = "22:00-08:00";
/// Default business time zone.
pub const DEFAULT_BUSINESS_TZ: &str = "Asia/Shanghai";
/// Default aggregation window.
pub const DEFAULT_WINDOW_SECONDS: i64 = 3600;
/// Default sms threshold: coupons worth at least 50.00 yuan.
pub const DEFAULT_SMS_MIN_CENTS: i64 = 5000;
/// Most offsets in one plan.
pub const MAX_OFFSETS: usize = 10;
/// Shortest offset: one second.
pub const MIN_OFFSET_SECONDS: i64 = 1;
/// Longest offset: 90 days.
pub const MAX_OFFSET_SECONDS: i64 = 90 * 24 * 3600;
/// A user without a claim, order or self-check visit for this long gets
/// no sms.
pub const INACTIVE_AFTER_DAYS: i64 = 30;

/// Named zones accepted for `COUPONKEEPER_BUSINESS_TZ`: none of them has
/// daylight saving time, so each is one fixed offset (seconds east of UTC).
pub const NAMED_ZONES: &[(&str, i32)] = &[
    ("Asia/Shanghai", 8 * 3600),
    ("Asia/Chongqing", 8 * 3600),
    ("Asia/Hong_Kong", 8 * 3600),
    ("Asia/Macau", 8 * 3600),
    ("Asia/Taipei", 8 * 3600),
    ("Asia/Singapore", 8 * 3600),
    ("Asia/Tokyo", 9 * 3600),
    ("Asia/Seoul", 9 * 3600),
    ("UTC", 0),
    ("Etc/UTC", 0),
];

/// UTC+8, the default business time zone (`Asia/Shanghai`, no DST).
pub fn shanghai() -> FixedOffset {
    FixedOffset::east_opt(8 * 3600).expect("+08:00 is a valid offset")
}

/// Parses one duration: a whole number followed by `s`, `m`, `h` or `d`
/// (`45s`, `30m`, `2h`, `3d`).
pub fn parse_duration(raw: &str) -> Result<i64, String> {
    let s = raw.trim();
    let unit = s.chars().last().unwrap_or(' ');
    let digits = &s[..s.len() - unit.len_utf8()];
    let per = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => {
            return Err(format!(
                "{s:?}: expected a number with a unit s, m, h or d (e.g. 45s, 30m, 3d)"
            ));
        }
    };
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("{s:?}: expected a whole number before the unit"))?;
    n.checked_mul(per)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// Parses the reminder plan (`3d,1d,30m,45s`): each offset 1 s to 90 days,
/// at most [`MAX_OFFSETS`], duplicates dropped. Returned largest first, the
/// order in which a coupon reaches them.
pub fn parse_offsets(raw: &str) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    for part in raw.split(',').map(str::trim) {
        if part.is_empty() {
            return Err("empty offset (expected e.g. 3d,1d,30m)".into());
        }
        let secs = parse_duration(part)?;
        if !(MIN_OFFSET_SECONDS..=MAX_OFFSET_SECONDS).contains(&secs) {
            return Err(format!("{part:?}: each offset must be between 1s and 90d"));
        }
        out.push(secs);
    }
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
    if out.len() > MAX_OFFSETS {
        return Err(format!("at most {MAX_OFFSETS} offsets, got {}", out.len()));
    }
    Ok(out)
}

/// Quiet hours in the business time zone: `[start, end)` as minutes of the
/// day; `start > end` crosses midnight (`22:00-08:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    pub start: u32,
    pub end: u32,
}

fn parse_hhmm(s: &str) -> Result<u32, String> {
    let t = NaiveTime::parse_from_str(s.trim(), "%H:%M")
        .map_err(|_| format!("{s:?}: expected HH:MM (00:00 to 23:59)"))?;
    Ok(chrono::Timelike::hour(&t) * 60 + chrono::Timelike::minute(&t))
}

/// Parses `HH:MM-HH:MM`; an empty value means no quiet hours.
pub fn parse_quiet_hours(raw: &str) -> Result<Option<QuietHours>, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let (a, b) = raw
        .split_once('-')
        .ok_or_else(|| format!("{raw:?}: expected HH:MM-HH:MM, e.g. 22:00-08:00"))?;
    let (start, end) = (parse_hhmm(a)?, parse_hhmm(b)?);
    if start == end {
        return Err(format!(
            "{raw:?}: start and end are equal; leave the variable empty for no quiet hours"
        ));
    }
    Ok(Some(QuietHours { start, end }))
}

/// Parses the business time zone: a named zone of [`NAMED_ZONES`], `Z`,
/// or a fixed offset `+HH:MM` / `-HH:MM`.
pub fn parse_business_tz(raw: &str) -> Result<FixedOffset, String> {
    let raw = raw.trim();
    if let Some((_, secs)) = NAMED_ZONES.iter().find(|(n, _)| *n == raw) {
        return FixedOffset::east_opt(*secs).ok_or_else(|| "bad offset".into());
    }
    if raw == "Z" {
        return FixedOffset::east_opt(0).ok_or_else(|| "bad offset".into());
    }
    let bad = || {
        format!(
            "{raw:?}: expected a fixed offset like +08:00 or one of {} (zones with daylight saving time are not supported)",
            NAMED_ZONES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let (sign, rest) = match raw.chars().next() {
        Some('+') => (1, &raw[1..]),
        Some('-') => (-1, &raw[1..]),
        _ => return Err(bad()),
    };
    let (h, m) = rest.split_once(':').ok_or_else(bad)?;
    let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if h > 14 || !(0..60).contains(&m) || h < 0 {
        return Err(bad());
    }
    FixedOffset::east_opt(sign * (h * 3600 + m * 60)).ok_or_else(bad)
}

/// When a coupon reaches an offset: `offset_seconds` before it ends.
pub fn slot_time(ends_at: DateTime<Utc>, offset_seconds: i64) -> DateTime<Utc> {
    ends_at - Duration::seconds(offset_seconds)
}

/// Minute of the day of `at` in `tz`.
fn local_minute(at: DateTime<Utc>, tz: FixedOffset) -> u32 {
    let l = at.with_timezone(&tz);
    chrono::Timelike::hour(&l) * 60 + chrono::Timelike::minute(&l)
}

/// The end of the quiet period `at` falls in, or `None` outside quiet hours.
pub fn quiet_end_after(
    at: DateTime<Utc>,
    quiet: Option<QuietHours>,
    tz: FixedOffset,
) -> Option<DateTime<Utc>> {
    let q = quiet?;
    let m = local_minute(at, tz);
    let inside = if q.start < q.end {
        (q.start..q.end).contains(&m)
    } else {
        m >= q.start || m < q.end
    };
    if !inside {
        return None;
    }
    let local = at.with_timezone(&tz);
    let end_time = NaiveTime::from_hms_opt(q.end / 60, q.end % 60, 0)?;
    let mut day = local.date_naive();
    if m >= q.end {
        day = day.succ_opt()?;
    }
    let end = tz.from_local_datetime(&day.and_time(end_time)).single()?;
    Some(end.with_timezone(&Utc))
}

/// When a reminder due at `at` goes out: at `at`, or, inside quiet hours,
/// at their end, unless the coupon (its earliest, for a group) ends by
/// then: a late reminder is useless, so it goes out at `at` after all.
pub fn delay_for_quiet_hours(
    at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    quiet: Option<QuietHours>,
    tz: FixedOffset,
) -> DateTime<Utc> {
    match quiet_end_after(at, quiet, tz) {
        Some(end) if end < ends_at => end,
        _ => at,
    }
}

/// The value a reminder tells: a fixed coupon's amount, a percent coupon's
/// cap (`max_discount_cents`); an uncapped percent coupon counts 0, as its
/// saving depends on the order.
pub fn coupon_value(rule: &DiscountRule) -> Cents {
    match rule {
        DiscountRule::Fixed { value } => *value,
        DiscountRule::Percent { max_discount, .. } => max_discount.unwrap_or(Cents::ZERO),
    }
}

/// One coupon that may be reminded at an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueCoupon {
    pub id: String,
    pub ends_at: DateTime<Utc>,
    pub value: Cents,
}

/// One reminder: a user's coupons reaching one offset together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// When its first coupon reached the offset.
    pub opened_at: DateTime<Utc>,
    /// When it goes out (after quiet hours, see [`delay_for_quiet_hours`]).
    pub send_at: DateTime<Utc>,
    /// Earliest end first.
    pub coupons: Vec<DueCoupon>,
}

impl Slot {
    pub fn total_value(&self) -> Cents {
        self.coupons
            .iter()
            .fold(Cents::ZERO, |a, c| a.saturating_add(c.value))
    }

    pub fn earliest_ends_at(&self) -> DateTime<Utc> {
        self.coupons
            .first()
            .map(|c| c.ends_at)
            .unwrap_or(self.opened_at)
    }
}

/// Aggregates one user's coupons at one offset into slots: the earliest
/// coupon to reach the offset opens a slot, and every coupon reaching it
/// before the slot's send time plus `window_seconds` joins (so a slot held
/// back by quiet hours also takes what came due meanwhile); the next
/// coupon after that opens the next slot.
pub fn aggregate(
    coupons: &[DueCoupon],
    offset_seconds: i64,
    window_seconds: i64,
    quiet: Option<QuietHours>,
    tz: FixedOffset,
) -> Vec<Slot> {
    let mut sorted: Vec<&DueCoupon> = coupons.iter().collect();
    sorted.sort_by(|a, b| a.ends_at.cmp(&b.ends_at).then_with(|| a.id.cmp(&b.id)));
    let mut slots: Vec<Slot> = Vec::new();
    let mut closes_at: Option<DateTime<Utc>> = None;
    for c in sorted {
        let at = slot_time(c.ends_at, offset_seconds);
        match (slots.last_mut(), closes_at) {
            (Some(slot), Some(close)) if at < close => slot.coupons.push(c.clone()),
            _ => {
                let send_at = delay_for_quiet_hours(at, c.ends_at, quiet, tz);
                closes_at = Some(send_at.max(at) + Duration::seconds(window_seconds.max(0)));
                slots.push(Slot {
                    opened_at: at,
                    send_at,
                    coupons: vec![c.clone()],
                });
            }
        }
    }
    slots
}

/// Where a reminder goes. Every reminder also gets an in-app copy (a
/// `user_messages` row), whatever its channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Sms,
    Push,
    /// Only the in-app copy: the user hit the push cap.
    InApp,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Sms => "sms",
            Channel::Push => "push",
            Channel::InApp => "in_app",
        }
    }
}

/// The tier: coupons worth at least `sms_min_cents` go to sms, unless the
/// user has been inactive for [`INACTIVE_AFTER_DAYS`]; the rest to push.
pub fn channel(total_value: Cents, sms_min_cents: i64, active_within_30d: bool) -> Channel {
    if total_value.get() >= sms_min_cents && active_within_30d {
        Channel::Sms
    } else {
        Channel::Push
    }
}

/// Per-user caps per channel over the last 24 hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    pub sms_per_day: i64,
    pub push_per_day: i64,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            sms_per_day: 2,
            push_per_day: 6,
        }
    }
}

/// Applies the caps: an sms over the cap becomes a push, a push over the
/// cap only the in-app copy. `sent_*` count this user's reminders of the
/// last 24 h on each channel.
pub fn rate_limited(wanted: Channel, sent_sms: i64, sent_push: i64, limits: RateLimits) -> Channel {
    let push_or_less = if sent_push < limits.push_per_day {
        Channel::Push
    } else {
        Channel::InApp
    };
    match wanted {
        Channel::Sms if sent_sms < limits.sms_per_day => Channel::Sms,
        Channel::Sms | Channel::Push => push_or_less,
        Channel::InApp => Channel::InApp,
    }
}

/// Whether the user counts as active: a claim or an order within 30 days.
pub fn active_within_30d(last_activity: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    last_activity.is_some_and(|t| t > now - Duration::days(INACTIVE_AFTER_DAYS))
}

/// Days from `now`'s date to `ends_at`'s date in the business time zone.
fn days_until(ends_at: DateTime<Utc>, now: DateTime<Utc>, tz: FixedOffset) -> i64 {
    let a = now.with_timezone(&tz).date_naive();
    let b = ends_at.with_timezone(&tz).date_naive();
    (b - a).num_days().max(0)
}

/// The reminder text in Chinese and English: "你有 3 张优惠券将于明天过期，
/// 共可省 120.00 元" (今天 / 明天 / N 天后 counted in calendar days of the
/// business time zone, from the earliest coupon's end).
pub fn expiring_message(
    count: usize,
    total_value: Cents,
    earliest_ends_at: DateTime<Utc>,
    now: DateTime<Utc>,
    tz: FixedOffset,
) -> (String, String) {
    let days = days_until(earliest_ends_at, now, tz);
    let (when_zh, when_en) = match days {
        0 => ("今天".to_string(), "today".to_string()),
        1 => ("明天".to_string(), "tomorrow".to_string()),
        n => (format!(" {n} 天后"), format!("in {n} days")),
    };
    let noun = if count == 1 { "coupon" } else { "coupons" };
    if total_value.is_zero() {
        (
            format!("你有 {count} 张优惠券将于{when_zh}过期"),
            format!("You have {count} {noun} expiring {when_en}."),
        )
    } else {
        (
            format!(
                "你有 {count} 张优惠券将于{when_zh}过期，共可省 {} 元",
                total_value.yuan()
            ),
            format!(
                "You have {count} {noun} expiring {when_en}, worth {} yuan in total.",
                total_value.yuan()
            ),
        )
    }
}

/// Local "MM月DD日 HH:MM" and "MM-DD HH:MM" of an instant.
fn local_stamp(t: DateTime<Utc>, tz: FixedOffset) -> (String, String) {
    let l = t.with_timezone(&tz);
    (
        l.format("%m月%d日 %H:%M").to_string(),
        l.format("%m-%d %H:%M").to_string(),
    )
}

/// The final-payment window opened: amount due and saving.
pub fn final_payment_open_message(amount_due: Cents, discount: Cents) -> (String, String) {
    if discount.is_zero() {
        (
            format!("尾款支付已开始，本次尾款 {} 元", amount_due.yuan()),
            format!(
                "Your final payment is open: {} yuan due.",
                amount_due.yuan()
            ),
        )
    } else {
        (
            format!(
                "尾款支付已开始，本次尾款 {} 元，已为你抵扣 {} 元",
                amount_due.yuan(),
                discount.yuan()
            ),
            format!(
                "Your final payment is open: {} yuan due, {} yuan off with your coupon.",
                amount_due.yuan(),
                discount.yuan()
            ),
        )
    }
}

/// Strict policy: the order's locked coupon ends before the final-payment
/// window opens, so it will not count then.
pub fn expires_before_final_payment_message(
    order_no: &str,
    ends_at: DateTime<Utc>,
    window_starts: DateTime<Utc>,
    tz: FixedOffset,
) -> (String, String) {
    let (end_zh, end_en) = local_stamp(ends_at, tz);
    let (start_zh, start_en) = local_stamp(window_starts, tz);
    (
        format!(
            "订单 {order_no} 使用的优惠券将于 {end_zh} 过期，早于尾款开始时间 {start_zh}；按本场活动规则，尾款时将不再抵扣"
        ),
        format!(
            "The coupon on order {order_no} expires at {end_en}, before the final payment opens at {start_en}; under this campaign's rules it will not apply then."
        ),
    )
}

/// Strict policy: does a coupon ending at `ends_at` end before the window
/// opening at `window_starts` (so the final payment gives no discount)?
pub fn ends_before_window(ends_at: DateTime<Utc>, window_starts: DateTime<Utc>) -> bool {
    ends_at <= window_starts
}

/// Strict policy: when the second warning goes out, after the one at
/// deposit payment. It rides the reminder plan: the slot of the largest
/// offset at least `min_gap_seconds` after the deposit payment (so the two
/// warnings are not seconds apart), while the coupon still lives. `None`:
/// the coupon ends too soon after the deposit for a second warning.
pub fn second_warning_at(
    deposit_paid_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    offsets: &[i64],
    min_gap_seconds: i64,
) -> Option<DateTime<Utc>> {
    let earliest = deposit_paid_at + Duration::seconds(min_gap_seconds.max(0));
    let mut offsets = offsets.to_vec();
    offsets.sort_unstable_by(|a, b| b.cmp(a));
    offsets
        .into_iter()
        .map(|o| slot_time(ends_at, o))
        .find(|t| *t >= earliest && *t < ends_at)
}

/// Everything the reminder planner needs to know from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReminderSettings {
    /// Largest first.
    pub offsets: Vec<i64>,
    pub quiet_hours: Option<QuietHours>,
    pub tz: FixedOffset,
    pub sms_min_cents: i64,
    pub window_seconds: i64,
    pub limits: RateLimits,
}

impl Default for ReminderSettings {
    fn default() -> Self {
        ReminderSettings {
            offsets: vec![3 * 86_400, 86_400, 1800],
            quiet_hours: Some(QuietHours {
                start: 22 * 60,
                end: 8 * 60,
            }),
            tz: shanghai(),
            sms_min_cents: DEFAULT_SMS_MIN_CENTS,
            window_seconds: DEFAULT_WINDOW_SECONDS,
            limits: RateLimits::default(),
        }
    }
}

impl ReminderSettings {
    /// The next smaller offset after `offset` (0 after the smallest): a
    /// coupon that already reached it is reminded by that one instead.
    pub fn next_smaller(&self, offset: i64) -> i64 {
        self.offsets
            .iter()
            .copied()
            .filter(|o| *o < offset)
            .max()
            .unwrap_or(0)
    }

    /// How far back a slot may lie and still be sent: the longest quiet
    /// period plus an hour, so a reminder held back by quiet hours or by a
    /// short outage still goes out.
    pub fn catch_up_seconds(&self) -> i64 {
        let quiet = self.quiet_hours.map_or(0, |q| {
            let len = (i64::from(q.end) - i64::from(q.start)).rem_euclid(24 * 60);
            len * 60
        });
        quiet + 3600
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("valid literal")
            .with_timezone(&Utc)
    }

    fn cst() -> FixedOffset {
        parse_business_tz("Asia/Shanghai").expect("known zone")
    }

    fn quiet() -> Option<QuietHours> {
        parse_quiet_hours("22:00-08:00").expect("valid")
    }

    fn coupon(id: &str, ends_at: &str, cents: i64) -> DueCoupon {
        DueCoupon {
            id: id.into(),
            ends_at: t(ends_at),
            value: Cents::new(cents).expect("valid"),
        }
    }

    #[test]
    fn offsets_parse_with_every_unit_largest_first_without_duplicates() {
        assert_eq!(
            parse_offsets("30m, 3d,1d,45s,1d,2h").unwrap(),
            vec![259_200, 86_400, 7200, 1800, 45]
        );
        assert_eq!(
            parse_offsets(DEFAULT_OFFSETS).unwrap(),
            ReminderSettings::default().offsets
        );
    }

    #[test]
    fn offsets_outside_one_second_to_ninety_days_or_too_many_are_refused_clearly() {
        assert!(
            parse_offsets("0s")
                .unwrap_err()
                .contains("between 1s and 90d")
        );
        assert!(
            parse_offsets("91d")
                .unwrap_err()
                .contains("between 1s and 90d")
        );
        assert!(parse_offsets("3x").unwrap_err().contains("unit"));
        assert!(parse_offsets("3天").unwrap_err().contains("unit"));
        assert!(parse_offsets("d").unwrap_err().contains("whole number"));
        assert!(parse_offsets("1d,,2d").unwrap_err().contains("empty"));
        let eleven = (1..=11)
            .map(|i| format!("{i}s"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(parse_offsets(&eleven).unwrap_err().contains("at most 10"));
        assert!(
            parse_offsets(
                &(1..=10)
                    .map(|i| format!("{i}m"))
                    .collect::<Vec<_>>()
                    .join(",")
            )
            .is_ok()
        );
    }

    #[test]
    fn quiet_hours_parse_across_midnight_and_empty_means_none() {
        assert_eq!(
            parse_quiet_hours("22:00-08:00").unwrap(),
            Some(QuietHours {
                start: 1320,
                end: 480
            })
        );
        assert_eq!(parse_quiet_hours("  ").unwrap(), None);
        assert!(
            parse_quiet_hours("22:00")
                .unwrap_err()
                .contains("HH:MM-HH:MM")
        );
        assert!(
            parse_quiet_hours("25:00-08:00")
                .unwrap_err()
                .contains("HH:MM")
        );
        assert!(
            parse_quiet_hours("08:00-08:00")
                .unwrap_err()
                .contains("equal")
        );
    }

    #[test]
    fn business_time_zone_is_a_fixed_offset_or_a_zone_without_daylight_saving() {
        assert_eq!(cst(), FixedOffset::east_opt(8 * 3600).unwrap());
        assert_eq!(
            parse_business_tz("-05:30").unwrap(),
            FixedOffset::west_opt(5 * 3600 + 1800).unwrap()
        );
        assert_eq!(
            parse_business_tz("UTC").unwrap(),
            FixedOffset::east_opt(0).unwrap()
        );
        let e = parse_business_tz("Europe/Berlin").unwrap_err();
        assert!(e.contains("daylight saving"), "{e}");
        assert!(parse_business_tz("+15:00").is_err());
    }

    #[test]
    fn a_slot_is_the_offset_before_the_end() {
        assert_eq!(
            slot_time(t("2026-11-11T12:00:00Z"), 45),
            t("2026-11-11T11:59:15Z")
        );
    }

    #[test]
    fn a_reminder_inside_quiet_hours_waits_for_their_end_in_the_business_time_zone() {
        // 23:00 in Shanghai is 15:00 UTC; quiet hours end at 08:00 local = 00:00 UTC.
        let at = t("2026-11-11T15:00:00Z");
        let ends = t("2026-11-12T15:00:00Z");
        assert_eq!(
            delay_for_quiet_hours(at, ends, quiet(), cst()),
            t("2026-11-12T00:00:00Z")
        );
        // 03:00 local (19:00 UTC the day before) waits until 08:00 the same local day.
        assert_eq!(
            delay_for_quiet_hours(t("2026-11-11T19:00:00Z"), ends, quiet(), cst()),
            t("2026-11-12T00:00:00Z")
        );
    }

    #[test]
    fn a_reminder_outside_quiet_hours_or_without_them_goes_at_its_time() {
        let at = t("2026-11-11T04:00:00Z"); // 12:00 local
        let ends = t("2026-11-12T04:00:00Z");
        assert_eq!(delay_for_quiet_hours(at, ends, quiet(), cst()), at);
        let night = t("2026-11-11T15:00:00Z");
        assert_eq!(delay_for_quiet_hours(night, ends, None, cst()), night);
    }

    #[test]
    fn a_coupon_that_would_expire_before_quiet_hours_end_is_reminded_at_once() {
        let at = t("2026-11-11T15:00:00Z"); // 23:00 local
        let ends = t("2026-11-11T15:30:00Z"); // 23:30 local, before 08:00
        assert_eq!(delay_for_quiet_hours(at, ends, quiet(), cst()), at);
    }

    #[test]
    fn coupons_reaching_an_offset_within_the_window_share_one_slot() {
        let day = 86_400;
        let slots = aggregate(
            &[
                coupon("c", "2026-11-12T05:50:00Z", 3000),
                coupon("a", "2026-11-12T05:00:00Z", 5000),
                coupon("b", "2026-11-12T05:30:00Z", 4000),
                coupon("d", "2026-11-12T06:00:00Z", 1000),
            ],
            day,
            3600,
            None,
            cst(),
        );
        assert_eq!(slots.len(), 2, "{slots:?}");
        let ids: Vec<&str> = slots[0].coupons.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(slots[0].total_value().get(), 12_000);
        assert_eq!(slots[0].opened_at, t("2026-11-11T05:00:00Z"));
        assert_eq!(slots[0].earliest_ends_at(), t("2026-11-12T05:00:00Z"));
        assert_eq!(slots[1].coupons[0].id, "d");
        assert_eq!(slots[1].opened_at, t("2026-11-11T06:00:00Z"));
    }

    #[test]
    fn a_slot_held_back_by_quiet_hours_takes_what_came_due_meanwhile() {
        // 23:00 and 03:00 local reach the 1d offset; both go at 08:00 local in one slot.
        let slots = aggregate(
            &[
                coupon("late", "2026-11-12T19:00:00Z", 100),
                coupon("early", "2026-11-12T15:00:00Z", 100),
            ],
            86_400,
            3600,
            quiet(),
            cst(),
        );
        assert_eq!(slots.len(), 1, "{slots:?}");
        assert_eq!(slots[0].send_at, t("2026-11-12T00:00:00Z"));
        assert_eq!(slots[0].coupons.len(), 2);
    }

    #[test]
    fn worth_at_least_the_threshold_goes_to_sms_unless_the_user_is_inactive() {
        let c = |n| Cents::new(n).unwrap();
        assert_eq!(channel(c(5000), 5000, true), Channel::Sms);
        assert_eq!(channel(c(4999), 5000, true), Channel::Push);
        assert_eq!(channel(c(50_000), 5000, false), Channel::Push);
    }

    #[test]
    fn activity_counts_for_thirty_days() {
        let now = t("2026-11-11T00:00:00Z");
        assert!(active_within_30d(Some(now - Duration::days(29)), now));
        assert!(!active_within_30d(Some(now - Duration::days(30)), now));
        assert!(!active_within_30d(None, now));
    }

    #[test]
    fn rate_limits_step_sms_down_to_push_and_push_down_to_in_app() {
        let l = RateLimits::default();
        assert_eq!(rate_limited(Channel::Sms, 1, 0, l), Channel::Sms);
        assert_eq!(rate_limited(Channel::Sms, 2, 0, l), Channel::Push);
        assert_eq!(rate_limited(Channel::Sms, 2, 6, l), Channel::InApp);
        assert_eq!(rate_limited(Channel::Push, 0, 5, l), Channel::Push);
        assert_eq!(rate_limited(Channel::Push, 0, 6, l), Channel::InApp);
    }

    #[test]
    fn a_coupon_is_worth_its_fixed_value_or_its_percent_cap() {
        let c = |n| Cents::new(n).unwrap();
        assert_eq!(
            coupon_value(&DiscountRule::Fixed { value: c(5000) }),
            c(5000)
        );
        assert_eq!(
            coupon_value(&DiscountRule::Percent {
                percent_off: 20,
                max_discount: Some(c(3000))
            }),
            c(3000)
        );
        assert_eq!(
            coupon_value(&DiscountRule::Percent {
                percent_off: 20,
                max_discount: None
            }),
            Cents::ZERO
        );
    }

    #[test]
    fn the_message_says_how_many_when_and_how_much_in_the_business_time_zone() {
        let now = t("2026-11-11T02:00:00Z"); // 10:00 local on the 11th
        let v = Cents::new(12_000).unwrap();
        let (zh, en) = expiring_message(3, v, t("2026-11-12T02:00:00Z"), now, cst());
        assert_eq!(zh, "你有 3 张优惠券将于明天过期，共可省 120.00 元");
        assert_eq!(
            en,
            "You have 3 coupons expiring tomorrow, worth 120.00 yuan in total."
        );
        // 23:30 local on the 11th is still today there although UTC says 15:30.
        let (zh, _) = expiring_message(1, v, t("2026-11-11T15:30:00Z"), now, cst());
        assert!(zh.contains("今天"), "{zh}");
        // 16:30 UTC is 00:30 local on the 12th: tomorrow.
        let (zh, _) = expiring_message(1, v, t("2026-11-11T16:30:00Z"), now, cst());
        assert!(zh.contains("明天"), "{zh}");
        let (zh, en) = expiring_message(2, v, t("2026-11-14T02:00:00Z"), now, cst());
        assert!(zh.contains("将于 3 天后过期"), "{zh}");
        assert!(en.contains("in 3 days"), "{en}");
        let (zh, _) = expiring_message(1, Cents::ZERO, t("2026-11-12T02:00:00Z"), now, cst());
        assert_eq!(zh, "你有 1 张优惠券将于明天过期");
    }

    #[test]
    fn the_final_payment_message_tells_the_amount_due_and_the_saving() {
        let (zh, _) =
            final_payment_open_message(Cents::new(24_900).unwrap(), Cents::new(5000).unwrap());
        assert!(
            zh.contains("本次尾款 249.00 元，已为你抵扣 50.00 元"),
            "{zh}"
        );
    }

    #[test]
    fn the_second_strict_warning_rides_the_first_offset_after_the_deposit() {
        let offsets = [259_200, 86_400, 1800];
        let paid = t("2026-11-11T00:00:00Z");
        // Ends in 5 days: warned again 3 days before.
        assert_eq!(
            second_warning_at(paid, t("2026-11-16T00:00:00Z"), &offsets, 3600),
            Some(t("2026-11-13T00:00:00Z"))
        );
        // Ends in 2 days: 1 day before.
        assert_eq!(
            second_warning_at(paid, t("2026-11-13T00:00:00Z"), &offsets, 3600),
            Some(t("2026-11-12T00:00:00Z"))
        );
        // Ends in 20 minutes: the deposit warning is all there is.
        assert_eq!(
            second_warning_at(paid, t("2026-11-11T00:20:00Z"), &offsets, 3600),
            None
        );
        assert!(ends_before_window(
            t("2026-11-12T00:00:00Z"),
            t("2026-11-12T00:00:00Z")
        ));
        assert!(!ends_before_window(
            t("2026-11-12T00:00:01Z"),
            t("2026-11-12T00:00:00Z")
        ));
    }

    #[test]
    fn an_offset_hands_over_to_the_next_smaller_one_and_catch_up_covers_quiet_hours() {
        let s = ReminderSettings::default();
        assert_eq!(s.next_smaller(259_200), 86_400);
        assert_eq!(s.next_smaller(1800), 0);
        assert_eq!(s.catch_up_seconds(), 10 * 3600 + 3600);
    }
}
