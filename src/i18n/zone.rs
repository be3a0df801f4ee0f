//! Times for people: every time a person reads is in the business time
//! zone (`COUPONKEEPER_BUSINESS_TZ`) with its offset shown,
//! `2026-12-01 08:00:00 (UTC+8)`; storage and the API stay UTC.
//!
//! The zone of a request is set once, around the page handlers, by
//! [`scope`] (the web layer's middleware), and read by the formatting
//! functions here, so a page does not thread it through every helper.
//! Outside a scope (jobs, tests of pure helpers) the default zone,
//! Asia/Shanghai, applies.

use std::future::Future;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

use crate::domain::reminder::{BusinessTz, shanghai};

tokio::task_local! {
    static ZONE: BusinessTz;
}

/// Runs `f` with `tz` as the zone its times are shown in.
pub async fn scope<F: Future>(tz: BusinessTz, f: F) -> F::Output {
    ZONE.scope(tz, f).await
}

/// The zone of the current request, else the default.
pub fn current() -> BusinessTz {
    ZONE.try_with(|z| *z).unwrap_or_else(|_| shanghai())
}

/// `UTC+8`, `UTC-5`, `UTC+5:30`, `UTC+0`: an offset as people read it.
pub fn offset_text(offset_seconds: i32) -> String {
    let sign = if offset_seconds < 0 { '-' } else { '+' };
    let abs = offset_seconds.unsigned_abs();
    let (h, m) = (abs / 3600, (abs % 3600) / 60);
    if m == 0 {
        format!("UTC{sign}{h}")
    } else {
        format!("UTC{sign}{h}:{m:02}")
    }
}

/// `2026-12-01 08:00:00 (UTC+8)` in zone `tz`.
pub fn local_text_in(tz: BusinessTz, at: DateTime<Utc>, with_seconds: bool) -> String {
    let local = tz.local(at);
    let format = if with_seconds {
        "%Y-%m-%d %H:%M:%S"
    } else {
        "%Y-%m-%d %H:%M"
    };
    format!(
        "{} ({})",
        local.format(format),
        offset_text(tz.offset_seconds(at))
    )
}

/// [`local_text_in`] in the current zone, with seconds.
pub fn local_text(at: DateTime<Utc>) -> String {
    local_text_in(current(), at, true)
}

/// [`local_text_in`] in the current zone, to the minute.
pub fn local_minutes(at: DateTime<Utc>) -> String {
    local_text_in(current(), at, false)
}

/// The instant a local date and time in the current zone names (the
/// earlier one in a fall-back fold; the end of a spring-forward gap is
/// read as the first instant after it).
pub fn from_local(local: NaiveDateTime) -> Option<DateTime<Utc>> {
    let tz = current();
    match tz.resolve(local) {
        chrono::LocalResult::Single(t) => Some(t),
        chrono::LocalResult::Ambiguous(a, _) => Some(a),
        chrono::LocalResult::None => {
            // In a gap: an hour later exists; take the instant the gap ends.
            let later = local + chrono::Duration::hours(1);
            tz.resolve(later)
                .earliest()
                .map(|t| t - chrono::Duration::hours(1))
        }
    }
}

/// Midnight starting `day` in the current zone.
pub fn start_of_day(day: NaiveDate) -> Option<DateTime<Utc>> {
    from_local(day.and_time(NaiveTime::MIN))
}

/// The business day (the date in the current zone) that `at` falls on.
pub fn business_day(at: DateTime<Utc>) -> NaiveDate {
    current().local(at).date()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::reminder::parse_business_tz;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.to_utc())
            .expect("time")
    }

    #[test]
    fn a_shanghai_midnight_reads_as_midnight_with_its_offset() {
        let tz = shanghai();
        assert_eq!(
            local_text_in(tz, at("2026-11-30T16:00:00Z"), false),
            "2026-12-01 00:00 (UTC+8)"
        );
    }

    #[test]
    fn daylight_saving_changes_the_offset_shown() {
        let ny = parse_business_tz("America/New_York").expect("zone");
        assert_eq!(
            local_text_in(ny, at("2026-07-01T12:00:00Z"), true),
            "2026-07-01 08:00:00 (UTC-4)"
        );
        assert_eq!(
            local_text_in(ny, at("2026-12-01T12:00:00Z"), true),
            "2026-12-01 07:00:00 (UTC-5)"
        );
        let india = parse_business_tz("+05:30").expect("zone");
        assert_eq!(
            local_text_in(india, at("2026-12-01T00:00:00Z"), false),
            "2026-12-01 05:30 (UTC+5:30)"
        );
    }

    #[test]
    fn a_business_day_is_23_or_25_hours_across_a_daylight_saving_change() {
        let ny = parse_business_tz("America/New_York").expect("zone");
        // 2026-03-08: clocks go from 02:00 to 03:00.
        let (start, next) = ny.day_bounds(at("2026-03-08T12:00:00Z"));
        assert_eq!(start, at("2026-03-08T05:00:00Z"));
        assert_eq!((next - start).num_hours(), 23);
        // 2026-11-01: clocks go from 02:00 back to 01:00.
        let (start, next) = ny.day_bounds(at("2026-11-01T12:00:00Z"));
        assert_eq!((next - start).num_hours(), 25);
        let (start, next) = shanghai().day_bounds(at("2026-11-30T16:00:00Z"));
        assert_eq!(
            (start, next),
            (at("2026-11-30T16:00:00Z"), at("2026-12-01T16:00:00Z"))
        );
    }

    #[tokio::test]
    async fn a_scope_sets_the_zone_and_its_absence_means_shanghai() {
        assert_eq!(current(), shanghai());
        let utc = parse_business_tz("UTC").expect("zone");
        let shown = scope(utc, async { local_text(at("2026-12-01T08:00:00Z")) }).await;
        assert_eq!(shown, "2026-12-01 08:00:00 (UTC+0)");
        let day = scope(shanghai(), async {
            start_of_day(NaiveDate::from_ymd_opt(2026, 12, 1).expect("day"))
        })
        .await;
        assert_eq!(day, Some(at("2026-11-30T16:00:00Z")));
    }
}
