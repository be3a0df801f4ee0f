//! Pre-expiry reminders (到期提醒): the plan of offsets, quiet hours in the
//! business time zone, aggregation per user and slot, channel tiers, rate
//! limits and the customers' message texts.
//!
//! Pure rules: no I/O, "now" is always an argument. The service
//! (`service::reminders`) reads candidates, calls these rules and writes the
//! marks, the outbox row and the in-app message in one transaction.
//!
//! Time zone: `COUPONKEEPER_BUSINESS_TZ` is a fixed UTC offset (`+08:00`,
//! `-05:30`, `Z`) or an IANA zone name (`Asia/Shanghai`, `America/New_York`,
//! `UTC`), parsed once at start into a [`BusinessTz`]. IANA zones follow the
//! tz database (`chrono-tz`), daylight saving time included: quiet hours are
//! wall-clock times of the zone, so a quiet night that crosses a transition
//! is an hour shorter (spring forward) or longer (fall back) in real time.
//! A quiet-hours end that the clock skips goes at the first instant after
//! the gap; one that the clock shows twice at the first of the two (see
//! [`quiet_end_after`]).

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, NaiveTime, Utc};

pub use super::business_tz::{BusinessTz, DEFAULT_BUSINESS_TZ, parse_business_tz, shanghai};
use super::discount::DiscountRule;
use super::ids::CouponId;
use super::money::Cents;
use crate::i18n::Msg;

/// The default plan: three days, one day and thirty minutes before `ends_at`.
pub const DEFAULT_OFFSETS: &str = "3d,1d,30m";
/// Default quiet hours, in the business time zone.
pub const DEFAULT_QUIET_HOURS: &str = "22:00-08:00";
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

/// Parses one duration: a whole number followed by `s`, `m`, `h` or `d`
/// (`45s`, `30m`, `2h`, `3d`).
pub fn parse_duration(raw: &str) -> Result<i64, String> {
    let s = raw.trim();
    // An empty text has no unit and is refused before it is cut.
    let unit = s.chars().last().unwrap_or(' ');
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
    let digits = &s[..s.len() - unit.len_utf8()];
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

/// When a coupon reaches an offset: `offset_seconds` before it ends.
pub fn slot_time(ends_at: DateTime<Utc>, offset_seconds: i64) -> DateTime<Utc> {
    ends_at - Duration::seconds(offset_seconds)
}

/// Minute of the day of a wall-clock time.
fn minute_of(l: NaiveDateTime) -> u32 {
    chrono::Timelike::hour(&l) * 60 + chrono::Timelike::minute(&l)
}

/// The longest spring-forward gap searched past (Pacific/Apia skipped a
/// whole day in 2011).
const MAX_GAP_MINUTES: i64 = 48 * 60;

/// The first instant after `after` at which the clock of `tz` shows the
/// wall-clock time `local`, for the end of a quiet period:
/// - a time the clock shows once: that instant;
/// - a time it shows twice (fall-back fold): the earlier instant, the
///   first time the clock reaches the end; the later one only when the
///   earlier is not after `after` (a reminder due in the repeated hour's
///   second pass, which is quiet again by the wall clock);
/// - a time it skips (spring-forward gap): the first instant after the gap,
///   that is the transition itself (the clock jumps from before the end to
///   after it; zones change on whole minutes, which the search steps by).
fn quiet_end_instant(
    tz: BusinessTz,
    local: NaiveDateTime,
    after: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    match tz.resolve(local) {
        LocalResult::Single(t) => Some(t),
        LocalResult::Ambiguous(earlier, later) => {
            Some(if earlier > after { earlier } else { later })
        }
        LocalResult::None => (1..=MAX_GAP_MINUTES).find_map(|m| {
            tz.resolve(local + Duration::minutes(m))
                .earliest()
                .filter(|t| *t > after)
        }),
    }
}

/// The end of the quiet period `at` falls in, or `None` outside quiet hours.
/// Membership and the end are wall-clock times in `tz`; across a DST
/// transition the end is resolved as [`quiet_end_instant`] says (skipped
/// end: the first instant after the gap; repeated end: the earlier one).
pub fn quiet_end_after(
    at: DateTime<Utc>,
    quiet: Option<QuietHours>,
    tz: BusinessTz,
) -> Option<DateTime<Utc>> {
    let q = quiet?;
    let local = tz.local(at);
    let m = minute_of(local);
    let inside = if q.start < q.end {
        (q.start..q.end).contains(&m)
    } else {
        m >= q.start || m < q.end
    };
    if !inside {
        return None;
    }
    let end_time = NaiveTime::from_hms_opt(q.end / 60, q.end % 60, 0)?;
    let mut day = local.date();
    if m >= q.end {
        day = day.succ_opt()?;
    }
    quiet_end_instant(tz, day.and_time(end_time), at)
}

/// When a reminder due at `at` goes out: at `at`, or, inside quiet hours,
/// at their end, unless the coupon (its earliest, for a group) ends by
/// then: a late reminder is useless, so it goes out at `at` after all.
pub fn delay_for_quiet_hours(
    at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    quiet: Option<QuietHours>,
    tz: BusinessTz,
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
    pub id: CouponId,
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
    tz: BusinessTz,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    Sms,
    Push,
    /// Only the in-app copy: the step says so, or the user hit the push
    /// cap.
    InApp,
    /// A pop-up the shop shows at the customer's next visit (the picker's
    /// `reminder_popups`, the self-check page), pending until seen or until
    /// its coupons have ended.
    Popup,
}

impl Channel {
    /// Every channel, in the order pages list them.
    pub const ALL: [Channel; 4] = [Channel::Sms, Channel::Push, Channel::InApp, Channel::Popup];

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Sms => "sms",
            Channel::Push => "push",
            Channel::InApp => "in_app",
            Channel::Popup => "popup",
        }
    }

    /// The channel a stored or configured word names.
    pub fn parse(word: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.as_str() == word)
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

/// The channel a step asks for once the value tier is applied, before the
/// caps: a `push` step becomes `sms` at or above the tier for an active
/// user ([`channel`]); an `sms`, `in_app` or `popup` step stays what it is.
pub fn tiered(step: Channel, total_value: Cents, sms_min_cents: i64, active: bool) -> Channel {
    match step {
        Channel::Push => channel(total_value, sms_min_cents, active),
        other => other,
    }
}

/// Whether [`tiered`] depends on the user's activity for this step and
/// value: only a push step at or above the tier (so the activity is read
/// only then).
pub fn tier_needs_activity(step: Channel, total_value: Cents, sms_min_cents: i64) -> bool {
    step == Channel::Push && total_value.get() >= sms_min_cents
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
/// last 24 h on each channel. A pop-up has no cap: it shows only when the
/// customer comes, so it costs nothing and wakes no one, and the
/// aggregation window already keeps one step's pop-ups apart.
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
        Channel::Popup => Channel::Popup,
    }
}

/// The channel a reminder goes by: the step's channel, then the value tier
/// ([`tiered`]), then the caps ([`rate_limited`]). `active`: the user's
/// activity, which only a push step at or above the tier looks at. The
/// planner applies the same two steps in this order, reading the activity
/// ([`tier_needs_activity`]) and the day's counts (sms and push only) from
/// the database only when they matter.
pub fn choose_channel(
    step: Channel,
    total_value: Cents,
    sms_min_cents: i64,
    active: bool,
    sent_sms: i64,
    sent_push: i64,
    limits: RateLimits,
) -> Channel {
    rate_limited(
        tiered(step, total_value, sms_min_cents, active),
        sent_sms,
        sent_push,
        limits,
    )
}

/// The plan the write-up (seed 004 §4.1) recommends: three days before,
/// in-app; one day before, push (sms at or above the value tier); thirty
/// minutes before, a pop-up. Documented and shown on the console's
/// reminder page; not the default, which is the contract's (every step
/// push, sms at or above the tier).
pub const RECOMMENDED_CHANNELS: &str = "3d=in_app,1d=push,30m=popup";

/// Parses the channel per step (`3d=in_app,1d=push,30m=popup`): each part
/// an offset of `offsets` (the same duration syntax as the plan) and a
/// channel (`in_app`, `push`, `sms`, `popup`), each offset at most once.
/// Empty: no step has its own channel. Returned largest offset first.
pub fn parse_channels(raw: &str, offsets: &[i64]) -> Result<Vec<(i64, Channel)>, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let mut out: Vec<(i64, Channel)> = Vec::new();
    for part in raw.split(',').map(str::trim) {
        let (offset, word) = part.split_once('=').ok_or_else(|| {
            format!("{part:?}: expected <offset>=<channel>, e.g. {RECOMMENDED_CHANNELS}")
        })?;
        let secs = parse_duration(offset)?;
        if !offsets.contains(&secs) {
            return Err(format!(
                "{:?} is not one of the reminder offsets (COUPONKEEPER_REMINDER_OFFSETS)",
                offset.trim()
            ));
        }
        let ch = Channel::parse(word.trim()).ok_or_else(|| {
            format!(
                "{:?}: unknown channel (expected in_app, push, sms or popup)",
                word.trim()
            )
        })?;
        if out.iter().any(|(o, _)| *o == secs) {
            return Err(format!("{:?}: the offset is given twice", offset.trim()));
        }
        out.push((secs, ch));
    }
    out.sort_unstable_by_key(|(offset, _)| std::cmp::Reverse(*offset));
    Ok(out)
}

/// Whether the user counts as active: a claim or an order within 30 days.
pub fn active_within_30d(last_activity: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    last_activity.is_some_and(|t| t > now - Duration::days(INACTIVE_AFTER_DAYS))
}

/// Days from `now`'s date to `ends_at`'s date in the business time zone.
pub fn days_until(ends_at: DateTime<Utc>, now: DateTime<Utc>, tz: BusinessTz) -> i64 {
    let a = tz.local(now).date();
    let b = tz.local(ends_at).date();
    (b - a).num_days().max(0)
}

/// The reminder text (catalog keys `reminder-coupons-expiring*`): "你有 3
/// 张优惠券将于明天过期，共可省 120.00 元" (今天 / 明天 / N 天后 counted in
/// calendar days of the business time zone, from the earliest coupon's end).
pub fn expiring_message(
    count: usize,
    total_value: Cents,
    earliest_ends_at: DateTime<Utc>,
    now: DateTime<Utc>,
    tz: BusinessTz,
) -> Msg {
    let days = days_until(earliest_ends_at, now, tz);
    if total_value.is_zero() {
        crate::msg!("reminder-coupons-expiring", count = count, days = days)
    } else {
        crate::msg!(
            "reminder-coupons-expiring-worth",
            count = count,
            days = days,
            worth = total_value.yuan()
        )
    }
}

/// Local "MM月DD日 HH:MM" / "MM-DD HH:MM" of an instant in `tz` (catalog
/// key `reminder-local-stamp`). The parts are preformatted text arguments,
/// not an instant: the zone is the reminder settings', which need not be
/// the reader's.
fn local_stamp(t: DateTime<Utc>, tz: BusinessTz) -> Msg {
    let l = tz.local(t);
    crate::msg!(
        "reminder-local-stamp",
        month = l.format("%m").to_string(),
        day = l.format("%d").to_string(),
        time = l.format("%H:%M").to_string()
    )
}

/// `m` with the parts of a [`local_stamp`] as `{prefix}_month`,
/// `{prefix}_day` and `{prefix}_time`.
fn with_stamp(m: Msg, prefix: &str, stamp: Msg) -> Msg {
    stamp.args.into_iter().fold(m, |m, (name, value)| {
        m.arg(&format!("{prefix}_{name}"), value)
    })
}

/// The final-payment window opened: amount due and saving (catalog keys
/// `reminder-final-payment-open*`).
pub fn final_payment_open_message(amount_due: Cents, discount: Cents) -> Msg {
    if discount.is_zero() {
        crate::msg!("reminder-final-payment-open", due = amount_due.yuan())
    } else {
        crate::msg!(
            "reminder-final-payment-open-discount",
            due = amount_due.yuan(),
            discount = discount.yuan()
        )
    }
}

/// Strict policy: the order's locked coupon ends before the final-payment
/// window opens, so it will not count then (catalog key
/// `reminder-expires-before-final-payment`, times local in `tz`).
pub fn expires_before_final_payment_message(
    order_no: &str,
    ends_at: DateTime<Utc>,
    window_starts: DateTime<Utc>,
    tz: BusinessTz,
) -> Msg {
    let m = crate::msg!("reminder-expires-before-final-payment", order_no = order_no);
    let m = with_stamp(m, "ends", local_stamp(ends_at, tz));
    with_stamp(m, "starts", local_stamp(window_starts, tz))
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
    pub tz: BusinessTz,
    pub sms_min_cents: i64,
    pub window_seconds: i64,
    pub limits: RateLimits,
    /// The channel of each step that has its own
    /// (`COUPONKEEPER_REMINDER_CHANNELS`), largest offset first; a step
    /// not listed is a push step ([`ReminderSettings::step_channel`]).
    pub channels: Vec<(i64, Channel)>,
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
            channels: Vec::new(),
        }
    }
}

impl ReminderSettings {
    /// The channel a step asks for before the tier and the caps: its own
    /// (`COUPONKEEPER_REMINDER_CHANNELS`), else push, which the tier makes
    /// sms at or above `sms_min_cents` (the contract's rule).
    pub fn step_channel(&self, offset: i64) -> Channel {
        self.channels
            .iter()
            .find(|(o, _)| *o == offset)
            .map_or(Channel::Push, |(_, c)| *c)
    }

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
    /// period (a fall-back night makes it longer than its wall-clock
    /// length, [`BusinessTz::max_dst_shift_seconds`]) plus an hour, so a
    /// reminder held back by quiet hours or by a short outage still goes out.
    pub fn catch_up_seconds(&self) -> i64 {
        let quiet = self.quiet_hours.map_or(0, |q| {
            let len = (i64::from(q.end) - i64::from(q.start)).rem_euclid(24 * 60);
            len * 60 + self.tz.max_dst_shift_seconds()
        });
        quiet + 3600
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("valid literal")
            .with_timezone(&Utc)
    }

    fn cst() -> BusinessTz {
        parse_business_tz("Asia/Shanghai").expect("known zone")
    }

    fn zone(name: &str) -> BusinessTz {
        parse_business_tz(name).expect("known zone")
    }

    fn fixed(raw: &str) -> BusinessTz {
        parse_business_tz(raw).expect("valid offset")
    }

    fn hours(raw: &str) -> Option<QuietHours> {
        parse_quiet_hours(raw).expect("valid quiet hours")
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
    fn business_time_zone_is_a_fixed_offset_or_an_iana_zone_with_its_daylight_saving_rules() {
        assert_eq!(cst(), BusinessTz::Iana(chrono_tz::Asia::Shanghai));
        assert_eq!(cst(), shanghai());
        assert_eq!(
            fixed("-05:30"),
            BusinessTz::Fixed(FixedOffset::west_opt(5 * 3600 + 1800).expect("constant"))
        );
        assert_eq!(
            fixed("Z"),
            BusinessTz::Fixed(FixedOffset::east_opt(0).expect("constant"))
        );
        assert_eq!(
            zone(" Europe/Berlin "),
            BusinessTz::Iana(chrono_tz::Europe::Berlin)
        );
        assert_eq!(zone("UTC"), BusinessTz::Iana(chrono_tz::UTC));
        for bad in [
            "+15:00",
            "08:00",
            "+8",
            "Mars/Olympus",
            "america/new_york",
            "CST+8",
            "",
        ] {
            let e = parse_business_tz(bad).unwrap_err();
            assert!(
                e.contains("+08:00") && e.contains("America/New_York"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn the_zone_shows_as_configured_an_iana_name_or_a_utc_offset() {
        assert_eq!(zone("America/New_York").to_string(), "America/New_York");
        assert_eq!(zone("Asia/Calcutta").to_string(), "Asia/Calcutta");
        assert_eq!(fixed("+09:00").to_string(), "UTC+09:00");
        assert_eq!(fixed("-05:30").to_string(), "UTC-05:30");
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
    fn quiet_hours_across_the_new_york_spring_forward_night_end_at_eight_daylight_time() {
        let ny = zone("America/New_York");
        // 2026-03-08 02:00 EST -> 03:00 EDT: 22:00-08:00 lasts 9 real hours.
        let end = t("2026-03-08T12:00:00Z"); // 08:00 EDT
        for at in [
            "2026-03-08T03:00:00Z", // 22:00 EST on the 7th
            "2026-03-08T06:59:00Z", // 01:59 EST, just before the jump
            "2026-03-08T07:00:00Z", // 03:00 EDT, just after
            "2026-03-08T11:59:00Z", // 07:59 EDT
        ] {
            assert_eq!(quiet_end_after(t(at), quiet(), ny), Some(end), "{at}");
        }
        assert_eq!(quiet_end_after(end, quiet(), ny), None);
        // A fixed -05:00 offset knows no DST: 08:00 at -05:00 is 13:00 UTC.
        assert_eq!(
            quiet_end_after(t("2026-03-08T03:00:00Z"), quiet(), fixed("-05:00")),
            Some(t("2026-03-08T13:00:00Z"))
        );
    }

    #[test]
    fn quiet_hours_across_the_new_york_fall_back_night_end_at_eight_standard_time() {
        let ny = zone("America/New_York");
        // 2026-11-01 02:00 EDT -> 01:00 EST: 22:00-08:00 lasts 11 real hours.
        let end = t("2026-11-01T13:00:00Z"); // 08:00 EST
        for at in [
            "2026-11-01T02:00:00Z", // 22:00 EDT on Oct 31
            "2026-11-01T05:30:00Z", // 01:30 EDT, first pass
            "2026-11-01T06:30:00Z", // 01:30 EST, second pass
            "2026-11-01T12:59:00Z", // 07:59 EST
        ] {
            assert_eq!(quiet_end_after(t(at), quiet(), ny), Some(end), "{at}");
        }
        assert_eq!(end - t("2026-11-01T02:00:00Z"), Duration::hours(11));
        assert_eq!(quiet_end_after(end, quiet(), ny), None);
    }

    #[test]
    fn quiet_hours_across_the_london_transitions_end_at_eight_local() {
        let london = zone("Europe/London");
        // 2026-03-29 01:00 GMT -> 02:00 BST.
        assert_eq!(
            quiet_end_after(t("2026-03-28T22:00:00Z"), quiet(), london),
            Some(t("2026-03-29T07:00:00Z"))
        );
        assert_eq!(
            quiet_end_after(t("2026-03-29T00:59:00Z"), quiet(), london),
            Some(t("2026-03-29T07:00:00Z"))
        );
        // 2026-10-25 02:00 BST -> 01:00 GMT.
        assert_eq!(
            quiet_end_after(t("2026-10-24T21:00:00Z"), quiet(), london),
            Some(t("2026-10-25T08:00:00Z"))
        );
        assert_eq!(
            quiet_end_after(t("2026-10-25T01:30:00Z"), quiet(), london),
            Some(t("2026-10-25T08:00:00Z"))
        );
        // Summer and winter days away from the transitions.
        assert_eq!(
            quiet_end_after(t("2026-07-01T22:00:00Z"), quiet(), london),
            Some(t("2026-07-02T07:00:00Z"))
        );
        assert_eq!(
            quiet_end_after(t("2026-12-01T22:00:00Z"), quiet(), london),
            Some(t("2026-12-02T08:00:00Z"))
        );
    }

    #[test]
    fn a_quiet_end_skipped_by_spring_forward_is_the_first_instant_after_the_gap() {
        // New York: 01:00-02:30, but 02:00-03:00 does not exist on 2026-03-08;
        // the quiet period ends when the clock jumps to 03:00 EDT (07:00 UTC).
        let ny = zone("America/New_York");
        let q = hours("01:00-02:30");
        for at in [
            "2026-03-08T06:00:00Z",
            "2026-03-08T06:15:00Z",
            "2026-03-08T06:59:59Z",
        ] {
            assert_eq!(
                quiet_end_after(t(at), q, ny),
                Some(t("2026-03-08T07:00:00Z")),
                "{at}"
            );
        }
        assert_eq!(quiet_end_after(t("2026-03-08T07:00:00Z"), q, ny), None);
        // London: 00:00-01:30, but 01:00-02:00 does not exist on 2026-03-29.
        let london = zone("Europe/London");
        assert_eq!(
            quiet_end_after(t("2026-03-29T00:45:00Z"), hours("00:00-01:30"), london),
            Some(t("2026-03-29T01:00:00Z"))
        );
    }

    #[test]
    fn a_quiet_end_repeated_by_fall_back_is_the_earlier_instant_unless_that_has_passed() {
        // New York, 2026-11-01: 01:00-02:00 happens twice (EDT, then EST).
        let ny = zone("America/New_York");
        let q = hours("22:00-01:30");
        // In the first pass, quiet ends at the first 01:30 (EDT).
        assert_eq!(
            quiet_end_after(t("2026-11-01T04:30:00Z"), q, ny),
            Some(t("2026-11-01T05:30:00Z"))
        );
        assert_eq!(quiet_end_after(t("2026-11-01T05:45:00Z"), q, ny), None);
        // The clock shows 01:10 again (EST): quiet by the wall clock, until
        // the second 01:30, never a time already past.
        assert_eq!(
            quiet_end_after(t("2026-11-01T06:10:00Z"), q, ny),
            Some(t("2026-11-01T06:30:00Z"))
        );
        // London, 2026-10-25: 01:00-02:00 twice (BST, then GMT).
        let london = zone("Europe/London");
        assert_eq!(
            quiet_end_after(t("2026-10-24T23:00:00Z"), hours("23:00-01:30"), london),
            Some(t("2026-10-25T00:30:00Z"))
        );
    }

    #[test]
    fn a_coupon_ending_before_quiet_hours_end_on_a_transition_night_is_still_reminded_at_once() {
        let ny = zone("America/New_York");
        // Due 22:00 EST, quiet hours end 08:00 EDT = 12:00 UTC.
        let at = t("2026-03-08T03:00:00Z");
        // Ends 07:30 EDT: before the end, so at once.
        assert_eq!(
            delay_for_quiet_hours(at, t("2026-03-08T11:30:00Z"), quiet(), ny),
            at
        );
        // Ends 08:30 EDT: after the end, so it waits. (A fixed -05:00 would
        // put the end at 13:00 UTC, after this coupon, and send at once.)
        assert_eq!(
            delay_for_quiet_hours(at, t("2026-03-08T12:30:00Z"), quiet(), ny),
            t("2026-03-08T12:00:00Z")
        );
        assert_eq!(
            delay_for_quiet_hours(at, t("2026-03-08T12:30:00Z"), quiet(), fixed("-05:00")),
            at
        );
        // In the gap window: ends 01:50 EST, before the jump at 07:00 UTC.
        let at = t("2026-03-08T06:30:00Z");
        assert_eq!(
            delay_for_quiet_hours(at, t("2026-03-08T06:50:00Z"), hours("01:00-02:30"), ny),
            at
        );
        assert_eq!(
            delay_for_quiet_hours(at, t("2026-03-08T07:30:00Z"), hours("01:00-02:30"), ny),
            t("2026-03-08T07:00:00Z")
        );
        // Fall back: due 22:00 EDT, ends 07:30 EST (12:30 UTC), before 08:00 EST.
        let at = t("2026-11-01T02:00:00Z");
        assert_eq!(
            delay_for_quiet_hours(at, t("2026-11-01T12:30:00Z"), quiet(), ny),
            at
        );
    }

    #[test]
    fn asia_shanghai_and_fixed_offsets_keep_their_quiet_hours() {
        for tz in [cst(), fixed("+08:00")] {
            assert_eq!(
                delay_for_quiet_hours(
                    t("2026-03-08T15:00:00Z"),
                    t("2026-03-09T15:00:00Z"),
                    quiet(),
                    tz
                ),
                t("2026-03-09T00:00:00Z")
            );
        }
        // Fixed offsets never move, not even on New York's or London's nights.
        let minus5 = fixed("-05:00");
        assert_eq!(
            quiet_end_after(t("2026-11-01T03:00:00Z"), quiet(), minus5),
            Some(t("2026-11-01T13:00:00Z"))
        );
        let zero = fixed("Z");
        assert_eq!(
            quiet_end_after(t("2026-03-28T22:00:00Z"), quiet(), zero),
            Some(t("2026-03-29T08:00:00Z"))
        );
        assert_eq!(
            quiet_end_after(t("2026-03-29T00:45:00Z"), hours("00:00-01:30"), zero),
            Some(t("2026-03-29T01:30:00Z"))
        );
    }

    #[test]
    fn tomorrow_and_day_counts_follow_the_local_calendar_across_dst() {
        let v = Cents::new(5000).expect("valid");
        let ny = zone("America/New_York");
        // 23:30 EST Mar 7 -> 00:30 EDT Mar 9 is two local days, though only
        // 24 real hours; a fixed -05:00 would say tomorrow (23:30 Mar 8).
        let now = t("2026-03-08T04:30:00Z");
        let ends = t("2026-03-09T04:30:00Z");
        let (zh, en) = expiring_message(1, v, ends, now, ny).both();
        assert!(zh.contains("将于 2 天后过期"), "{zh}");
        assert!(en.contains("in 2 days"), "{en}");
        let (zh, _) = expiring_message(1, v, ends, now, fixed("-05:00")).both();
        assert!(zh.contains("明天"), "{zh}");
        // 00:30 EDT Oct 31 -> 23:30 EST Nov 1: tomorrow (a fixed -04:00
        // would count Nov 2).
        let (zh, en) = expiring_message(
            1,
            v,
            t("2026-11-02T04:30:00Z"),
            t("2026-10-31T04:30:00Z"),
            ny,
        )
        .both();
        assert!(zh.contains("明天"), "{zh}");
        assert!(en.contains("tomorrow"), "{en}");
        // London: 00:30 BST -> 23:30 GMT the same day (24 real hours): today.
        let (zh, en) = expiring_message(
            1,
            v,
            t("2026-10-25T23:30:00Z"),
            t("2026-10-24T23:30:00Z"),
            zone("Europe/London"),
        )
        .both();
        assert!(zh.contains("今天"), "{zh}");
        assert!(en.contains("today"), "{en}");
    }

    #[test]
    fn the_strict_warning_stamps_local_time_with_the_season_s_offset() {
        let ny = zone("America/New_York");
        let (zh, en) = expires_before_final_payment_message(
            "P1",
            t("2026-07-01T12:00:00Z"),
            t("2026-12-01T12:00:00Z"),
            ny,
        )
        .both();
        assert!(zh.contains("07月01日 08:00"), "{zh}");
        assert!(zh.contains("12月01日 07:00"), "{zh}");
        assert!(
            en.contains("07-01 08:00") && en.contains("12-01 07:00"),
            "{en}"
        );
    }

    #[test]
    fn a_slot_held_back_on_the_spring_forward_night_goes_at_eight_daylight_time() {
        // Coupons ending 00:00 EDT and 02:30 EDT Mar 9 reach the 1d offset
        // at 22:00 EST Mar 7 and 01:30 EST Mar 8; both go at 08:00 EDT.
        let slots = aggregate(
            &[
                coupon("a", "2026-03-09T04:00:00Z", 100),
                coupon("b", "2026-03-09T06:30:00Z", 100),
            ],
            86_400,
            3600,
            quiet(),
            zone("America/New_York"),
        );
        assert_eq!(slots.len(), 1, "{slots:?}");
        assert_eq!(slots[0].send_at, t("2026-03-08T12:00:00Z"));
        assert_eq!(slots[0].coupons.len(), 2);
    }

    mod dst_properties {
        use super::*;
        use proptest::prelude::*;

        /// Transition instants (UTC) of the zones below, and the zones.
        const TRANSITIONS: &[&str] = &[
            "2026-03-08T07:00:00Z",
            "2026-11-01T06:00:00Z",
            "2026-03-29T01:00:00Z",
            "2026-10-25T01:00:00Z",
            "2026-04-04T15:00:00Z",
            "2011-12-30T10:00:00Z",
            "2026-07-01T00:00:00Z",
        ];
        const ZONES: &[&str] = &[
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "Pacific/Apia",
            "Antarctica/Troll",
            "Asia/Shanghai",
        ];

        fn inside(at: DateTime<Utc>, q: QuietHours, tz: BusinessTz) -> bool {
            quiet_end_after(at, Some(q), tz).is_some()
        }

        fn offset_at(tz: BusinessTz, at: DateTime<Utc>) -> Duration {
            tz.local(at) - at.naive_utc()
        }

        proptest! {
            #[test]
            fn quiet_hours_end_after_every_quiet_minute_near_any_transition(
                base in 0..TRANSITIONS.len(),
                z in 0..ZONES.len(),
                shift in -36 * 3600i64..36 * 3600,
                start in 0u32..1440,
                end in 0u32..1440,
            ) {
                prop_assume!(start != end);
                let q = QuietHours { start, end };
                let tz = zone(ZONES[z]);
                let at = t(TRANSITIONS[base]) + Duration::seconds(shift);
                let Some(stop) = quiet_end_after(at, Some(q), tz) else {
                    return Ok(());
                };
                prop_assert!(stop > at, "{at} -> {stop}");
                let wall = i64::from((end + 1440 - start) % 1440) * 60;
                prop_assert!(
                    (stop - at).num_seconds() <= wall + tz.max_dst_shift_seconds(),
                    "{at} -> {stop}"
                );
                // Every minute until the end is quiet, except the minutes a
                // fall-back repeats from before the window's start: the clock
                // runs back out of the window for a moment and into it again
                // (Antarctica/Troll falls back two hours), and the end is
                // then the window's end after the repeat, the cautious
                // answer for messages that must not wake anyone.
                let mut m = at;
                while m < stop {
                    let fell_back = offset_at(tz, m) < offset_at(tz, at);
                    prop_assert!(inside(m, q, tz) || fell_back, "{at} -> {stop}: {m} not quiet");
                    m += Duration::minutes(1);
                }
                // The end shows the configured end time, or is the jump over
                // a gap that swallowed it.
                let shows_end = minute_of(tz.local(stop)) == end;
                let jump = offset_at(tz, stop) != offset_at(tz, stop - Duration::seconds(1));
                prop_assert!(shows_end || jump, "{at} -> {stop}");
                if shows_end {
                    prop_assert!(!inside(stop, q, tz), "{at} -> {stop} still quiet");
                }
            }

            #[test]
            fn asia_shanghai_behaves_as_a_fixed_plus_eight(
                secs in 1_767_225_600i64..1_798_761_600,
                start in 0u32..1440,
                end in 0u32..1440,
            ) {
                prop_assume!(start != end);
                let q = Some(QuietHours { start, end });
                let at = DateTime::from_timestamp(secs, 0).expect("in range");
                prop_assert_eq!(
                    quiet_end_after(at, q, cst()),
                    quiet_end_after(at, q, fixed("+08:00"))
                );
            }
        }
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
    fn each_step_kind_goes_by_its_channel_with_the_tier_and_the_caps_applied() {
        let c = |n| Cents::new(n).unwrap();
        let l = RateLimits::default();
        let (below, above) = (c(4999), c(5000));
        use Channel::*;
        // (step, value, active, sent sms, sent push) -> channel
        let cases = [
            // A push step: sms at or above the tier for an active user.
            (Push, below, true, 0, 0, Push),
            (Push, above, true, 0, 0, Sms),
            (Push, above, false, 0, 0, Push),
            (Push, above, true, 2, 0, Push),
            (Push, above, true, 2, 6, InApp),
            (Push, below, true, 0, 6, InApp),
            // An sms step stays sms, below the tier and for an inactive
            // user too; over the sms cap push, over both in-app.
            (Sms, below, true, 0, 0, Sms),
            (Sms, above, false, 1, 0, Sms),
            (Sms, below, true, 2, 0, Push),
            (Sms, above, true, 2, 6, InApp),
            // An in-app step stays in-app whatever the value.
            (InApp, below, true, 0, 0, InApp),
            (InApp, above, true, 0, 0, InApp),
            // A pop-up stays a pop-up: no tier, no cap.
            (Popup, below, true, 0, 0, Popup),
            (Popup, above, true, 0, 0, Popup),
            (Popup, above, true, 9, 9, Popup),
        ];
        for (step, value, active, sms, push, want) in cases {
            assert_eq!(
                choose_channel(step, value, 5000, active, sms, push, l),
                want,
                "{step:?} {value:?} active={active} sms={sms} push={push}"
            );
        }
        assert!(tier_needs_activity(Push, above, 5000));
        assert!(!tier_needs_activity(Push, below, 5000));
        assert!(!tier_needs_activity(Sms, above, 5000));
        assert!(!tier_needs_activity(Popup, above, 5000));
    }

    #[test]
    fn a_step_without_a_channel_of_its_own_is_a_push_step() {
        let s = ReminderSettings {
            channels: parse_channels("3d=in_app,30m=popup", &[259_200, 86_400, 1800])
                .expect("valid"),
            ..ReminderSettings::default()
        };
        assert_eq!(s.step_channel(259_200), Channel::InApp);
        assert_eq!(s.step_channel(86_400), Channel::Push);
        assert_eq!(s.step_channel(1800), Channel::Popup);
        assert_eq!(
            ReminderSettings::default().step_channel(1800),
            Channel::Push
        );
    }

    #[test]
    fn channels_by_step_parse_against_the_offsets_and_refuse_what_they_cannot_mean() {
        let offsets = parse_offsets(DEFAULT_OFFSETS).unwrap();
        assert_eq!(
            parse_channels(RECOMMENDED_CHANNELS, &offsets).unwrap(),
            vec![
                (259_200, Channel::InApp),
                (86_400, Channel::Push),
                (1800, Channel::Popup)
            ]
        );
        // Any order, spaces, another spelling of the same duration.
        assert_eq!(
            parse_channels(" 1800s = sms , 72h=popup ", &offsets).unwrap(),
            vec![(259_200, Channel::Popup), (1800, Channel::Sms)]
        );
        assert_eq!(parse_channels("", &offsets).unwrap(), vec![]);
        assert_eq!(parse_channels("  ", &offsets).unwrap(), vec![]);
        for (bad, says) in [
            ("3d=fax", "unknown channel"),
            ("3d=", "unknown channel"),
            ("3d=IN_APP", "unknown channel"),
            ("2d=push", "not one of the reminder offsets"),
            ("3d=push,72h=sms", "twice"),
            ("3d=push,,1d=sms", "expected <offset>=<channel>"),
            ("3d", "expected <offset>=<channel>"),
            ("garbage", "expected <offset>=<channel>"),
            ("x=push", "unit"),
            ("=push", "unit"),
        ] {
            let e = parse_channels(bad, &offsets).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
        assert_eq!(Channel::parse("popup"), Some(Channel::Popup));
        for c in Channel::ALL {
            assert_eq!(Channel::parse(c.as_str()), Some(c));
        }
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
        let (zh, en) = expiring_message(3, v, t("2026-11-12T02:00:00Z"), now, cst()).both();
        assert_eq!(zh, "你有 3 张优惠券将于明天过期，共可省 120.00 元");
        assert_eq!(
            en,
            "You have 3 coupons expiring tomorrow, worth 120.00 yuan in total."
        );
        // 23:30 local on the 11th is still today there although UTC says 15:30.
        let (zh, _) = expiring_message(1, v, t("2026-11-11T15:30:00Z"), now, cst()).both();
        assert!(zh.contains("今天"), "{zh}");
        // 16:30 UTC is 00:30 local on the 12th: tomorrow.
        let (zh, _) = expiring_message(1, v, t("2026-11-11T16:30:00Z"), now, cst()).both();
        assert!(zh.contains("明天"), "{zh}");
        let (zh, en) = expiring_message(2, v, t("2026-11-14T02:00:00Z"), now, cst()).both();
        assert!(zh.contains("将于 3 天后过期"), "{zh}");
        assert!(en.contains("in 3 days"), "{en}");
        let (zh, _) =
            expiring_message(1, Cents::ZERO, t("2026-11-12T02:00:00Z"), now, cst()).both();
        assert_eq!(zh, "你有 1 张优惠券将于明天过期");
    }

    #[test]
    fn the_final_payment_message_tells_the_amount_due_and_the_saving() {
        let (zh, _) =
            final_payment_open_message(Cents::new(24_900).unwrap(), Cents::new(5000).unwrap())
                .both();
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
        // Asia/Shanghai is an IANA zone: room for a fall-back night too.
        assert_eq!(s.catch_up_seconds(), 10 * 3600 + 2 * 3600 + 3600);
        let s = ReminderSettings {
            tz: fixed("+08:00"),
            ..ReminderSettings::default()
        };
        assert_eq!(s.catch_up_seconds(), 10 * 3600 + 3600);
        let s = ReminderSettings {
            quiet_hours: None,
            ..ReminderSettings::default()
        };
        assert_eq!(s.catch_up_seconds(), 3600);
    }

    /// The texts as they were built before the catalog (`format!` in both
    /// languages), to show the catalog's read the same.
    mod before_the_catalog {
        use super::*;

        /// The reminder text in Chinese and English: "你有 3 张优惠券将于明天过期，
        /// 共可省 120.00 元" (今天 / 明天 / N 天后 counted in calendar days of the
        /// business time zone, from the earliest coupon's end).
        fn old_expiring_message(
            count: usize,
            total_value: Cents,
            earliest_ends_at: DateTime<Utc>,
            now: DateTime<Utc>,
            tz: BusinessTz,
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
        fn old_local_stamp(t: DateTime<Utc>, tz: BusinessTz) -> (String, String) {
            let l = tz.local(t);
            (
                l.format("%m月%d日 %H:%M").to_string(),
                l.format("%m-%d %H:%M").to_string(),
            )
        }

        /// The final-payment window opened: amount due and saving.
        fn old_final_payment_open_message(amount_due: Cents, discount: Cents) -> (String, String) {
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
        fn old_expires_before_final_payment_message(
            order_no: &str,
            ends_at: DateTime<Utc>,
            window_starts: DateTime<Utc>,
            tz: BusinessTz,
        ) -> (String, String) {
            let (end_zh, end_en) = old_local_stamp(ends_at, tz);
            let (start_zh, start_en) = old_local_stamp(window_starts, tz);
            (
                format!(
                    "订单 {order_no} 使用的优惠券将于 {end_zh} 过期，早于尾款开始时间 {start_zh}；按本场活动规则，尾款时将不再抵扣"
                ),
                format!(
                    "The coupon on order {order_no} expires at {end_en}, before the final payment opens at {start_en}; under this campaign's rules it will not apply then."
                ),
            )
        }

        #[test]
        fn the_catalog_texts_read_exactly_as_the_formatted_ones_did() {
            let now = t("2026-11-11T02:00:00Z");
            for tz in [cst(), zone("America/New_York"), fixed("-05:30")] {
                for count in [1, 2, 3, 11, 1000] {
                    for cents in [0, 7, 5000, 12_000, 1_234_567] {
                        for days in [0, 1, 2, 3, 30] {
                            let v = Cents::new(cents).expect("valid");
                            let ends = now + Duration::days(days);
                            assert_eq!(
                                expiring_message(count, v, ends, now, tz).both(),
                                old_expiring_message(count, v, ends, now, tz),
                                "{count} {cents} {days} {tz}"
                            );
                        }
                    }
                }
                for (due, off) in [(24_900, 5000), (24_900, 0), (0, 0), (7, 12_000)] {
                    let (due, off) = (
                        Cents::new(due).expect("valid"),
                        Cents::new(off).expect("valid"),
                    );
                    assert_eq!(
                        final_payment_open_message(due, off).both(),
                        old_final_payment_open_message(due, off)
                    );
                }
                let (ends, starts) = (t("2026-07-01T12:00:00Z"), t("2026-12-31T23:59:00Z"));
                assert_eq!(
                    expires_before_final_payment_message("P-20261111-1", ends, starts, tz).both(),
                    old_expires_before_final_payment_message("P-20261111-1", ends, starts, tz)
                );
                assert_eq!(local_stamp(ends, tz).both(), old_local_stamp(ends, tz));
            }
        }
    }
}
