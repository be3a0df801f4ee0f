//! The business time zone (`COUPONKEEPER_BUSINESS_TZ`): a fixed UTC offset
//! (`+08:00`, `-05:30`, `Z`) or an IANA zone name (`Asia/Shanghai`,
//! `America/New_York`, `UTC`), parsed once at start. Every time a person
//! reads is shown in it, and the business day (support's compensation cap,
//! reminders' quiet hours) is counted in it.
//!
//! A leaf of the domain: the message catalog (`i18n::zone`) renders times
//! with it, so it imports nothing that reaches the catalog.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, FixedOffset, LocalResult, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// Default business time zone.
pub const DEFAULT_BUSINESS_TZ: &str = "Asia/Shanghai";

/// The business time zone: a fixed UTC offset or an IANA zone with its
/// daylight saving rules. Every local-time rule of this module goes
/// through [`BusinessTz::local`] (instant to wall clock) and
/// [`BusinessTz::resolve`] (wall clock to instants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusinessTz {
    /// `+08:00`, `-05:30`, `Z`: the same offset all year.
    Fixed(FixedOffset),
    /// `Asia/Shanghai`, `America/New_York`, `UTC`: the tz database's rules.
    Iana(Tz),
}

impl BusinessTz {
    /// The wall-clock time in the zone at `at`.
    pub fn local(self, at: DateTime<Utc>) -> NaiveDateTime {
        match self {
            BusinessTz::Fixed(o) => at.with_timezone(&o).naive_local(),
            BusinessTz::Iana(tz) => at.with_timezone(&tz).naive_local(),
        }
    }

    /// The instants the wall-clock time `local` names: one, two (a fall-back
    /// fold, earlier first) or none (a spring-forward gap).
    pub fn resolve(self, local: NaiveDateTime) -> LocalResult<DateTime<Utc>> {
        match self {
            BusinessTz::Fixed(o) => o.from_local_datetime(&local).map(|d| d.to_utc()),
            BusinessTz::Iana(tz) => tz.from_local_datetime(&local).map(|d| d.to_utc()),
        }
    }

    /// The business day `at` falls on, as the instants it starts and the
    /// next one starts (23 or 25 hours apart on a daylight-saving change):
    /// what "today" means for daily caps and reports.
    pub fn day_bounds(self, at: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
        self.date_bounds(self.local(at).date(), at)
    }

    /// The business day `day` as the instants it starts and the next one
    /// starts; `fallback` only answers for a date at the end of chrono's
    /// range.
    pub fn date_bounds(
        self,
        day: chrono::NaiveDate,
        fallback: DateTime<Utc>,
    ) -> (DateTime<Utc>, DateTime<Utc>) {
        let start_of = |d: chrono::NaiveDate| {
            let midnight = d.and_time(chrono::NaiveTime::MIN);
            match self.resolve(midnight) {
                LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t,
                // Midnight skipped by a spring-forward gap: the day starts
                // when the gap ends (the first instant an hour later names).
                LocalResult::None => self
                    .resolve(midnight + chrono::Duration::hours(1))
                    .earliest()
                    .map(|t| t - chrono::Duration::hours(1))
                    .unwrap_or(fallback),
            }
        };
        let start = start_of(day);
        let next = day
            .succ_opt()
            .map(start_of)
            .unwrap_or(start + chrono::Duration::days(1));
        (start, next)
    }

    /// The zone's offset from UTC at `at`, in seconds east.
    pub fn offset_seconds(self, at: DateTime<Utc>) -> i32 {
        use chrono::Offset;
        match self {
            BusinessTz::Fixed(o) => o.local_minus_utc(),
            BusinessTz::Iana(tz) => at.with_timezone(&tz).offset().fix().local_minus_utc(),
        }
    }

    /// How much longer than its wall-clock length a quiet night can last:
    /// a fall-back transition repeats up to two hours (one almost
    /// everywhere; `Antarctica/Troll` shifts by two). None for a fixed
    /// offset.
    pub fn max_dst_shift_seconds(self) -> i64 {
        match self {
            BusinessTz::Fixed(_) => 0,
            BusinessTz::Iana(_) => 2 * 3600,
        }
    }
}

/// As configured: the IANA name (`America/New_York`), or `UTC+08:00` for
/// a fixed offset.
impl fmt::Display for BusinessTz {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BusinessTz::Fixed(o) => write!(f, "UTC{o}"),
            BusinessTz::Iana(tz) => f.write_str(tz.name()),
        }
    }
}

/// `Asia/Shanghai`, the default business time zone (UTC+8, no DST since 1991).
pub fn shanghai() -> BusinessTz {
    BusinessTz::Iana(chrono_tz::Asia::Shanghai)
}

/// Parses the business time zone: a fixed offset `+HH:MM` / `-HH:MM`
/// (up to 14 hours), `Z`, or an IANA zone name as the tz database spells
/// it (case-sensitive: `Asia/Shanghai`, `America/New_York`, `UTC`).
pub fn parse_business_tz(raw: &str) -> Result<BusinessTz, String> {
    let raw = raw.trim();
    let bad = || {
        format!(
            "{raw:?}: expected a fixed UTC offset (+08:00, -05:30, Z) or an IANA time zone name as the tz database spells it (Asia/Shanghai, America/New_York, Europe/London, UTC)"
        )
    };
    if raw == "Z" {
        return FixedOffset::east_opt(0)
            .map(BusinessTz::Fixed)
            .ok_or_else(bad);
    }
    let (sign, rest) = match raw.chars().next() {
        Some('+') => (1, &raw[1..]),
        Some('-') => (-1, &raw[1..]),
        _ => return Tz::from_str(raw).map(BusinessTz::Iana).map_err(|_| bad()),
    };
    let (h, m) = rest.split_once(':').ok_or_else(bad)?;
    let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if h > 14 || !(0..60).contains(&m) || h < 0 {
        return Err(bad());
    }
    FixedOffset::east_opt(sign * (h * 3600 + m * 60))
        .map(BusinessTz::Fixed)
        .ok_or_else(bad)
}
