//! Instants in UTC, stored as integer milliseconds since the Unix epoch.
//!
//! Both stores keep timestamps as `BIGINT` milliseconds: the same comparison
//! and index behaviour on SQLite and PostgreSQL, no time-zone ambiguity, and
//! one query text for both (see docs/src/development/design.md, "Two stores").

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

/// Milliseconds since the epoch, UTC.
pub fn to_ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

/// Inverse of [`to_ms`]; out-of-range values (never written by us) clamp to
/// the epoch instead of panicking.
pub fn from_ms(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// RFC 3339 in UTC with a `Z` suffix and millisecond precision.
pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses RFC 3339 with any offset and normalises to UTC. Timestamps before
/// 1970 or after 9999 are refused: nothing in a coupon's life lives there.
pub fn parse_rfc3339(s: &str) -> Result<DateTime<Utc>, String> {
    let t = DateTime::parse_from_rfc3339(s.trim())
        .map_err(|e| format!("must be an RFC 3339 timestamp ({e})"))?
        .with_timezone(&Utc);
    if t.timestamp() < 0 || t.timestamp() > 253_402_300_799 {
        return Err("must be between 1970 and 9999".to_string());
    }
    Ok(t)
}

/// Which end of a half-open `[from, to)` list filter a typed bound is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeEdge {
    From,
    To,
}

/// A bound of a list filter by time as the API and the console take it:
/// an RFC 3339 instant as it is, or a business day `YYYY-MM-DD` in `tz`,
/// which as `from` means the day's first instant and as `to` includes the
/// whole day (the next day's first instant, the range being half-open).
/// So `from=2026-12-01&to=2026-12-01` is that one business day.
pub fn parse_range_bound(
    raw: &str,
    tz: crate::domain::reminder::BusinessTz,
    edge: RangeEdge,
) -> Result<DateTime<Utc>, String> {
    let raw = raw.trim();
    if let Ok(day) = chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        if !(1970..=9998).contains(&chrono::Datelike::year(&day)) {
            return Err("must be between 1970 and 9998".to_string());
        }
        let (start, next) = tz.date_bounds(day, DateTime::<Utc>::UNIX_EPOCH);
        return Ok(match edge {
            RangeEdge::From => start,
            RangeEdge::To => next,
        });
    }
    parse_rfc3339(raw).map_err(|_| "must be a day YYYY-MM-DD or an RFC 3339 timestamp".to_string())
}

/// Serde helpers so view structs can hold `DateTime<Utc>` and still print
/// the API's `...Z` format.
pub mod serde_rfc3339 {
    use chrono::{DateTime, Utc};
    use serde::Serializer;

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::rfc3339(*t))
    }

    pub mod option {
        use chrono::{DateTime, Utc};
        use serde::Serializer;

        pub fn serialize<S: Serializer>(
            t: &Option<DateTime<Utc>>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_str(&super::super::rfc3339(*t)),
                None => s.serialize_none(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_normalised_to_utc() {
        let t = parse_rfc3339("2026-11-11T08:00:00+08:00").expect("valid");
        assert_eq!(rfc3339(t), "2026-11-11T00:00:00.000Z");
    }

    #[test]
    fn garbage_and_ancient_dates_are_refused() {
        assert!(parse_rfc3339("tomorrow").is_err());
        assert!(parse_rfc3339("1969-12-31T23:59:59Z").is_err());
    }

    #[test]
    fn milliseconds_round_trip() {
        let t = parse_rfc3339("2026-11-29T09:00:00.123Z").expect("valid");
        assert_eq!(from_ms(to_ms(t)), t);
    }
}

#[cfg(test)]
mod range_bound_tests {
    use super::*;
    use crate::domain::reminder::BusinessTz;

    fn shanghai() -> BusinessTz {
        crate::domain::reminder::parse_business_tz("Asia/Shanghai").expect("zone")
    }

    #[test]
    fn a_business_day_bounds_the_range_from_its_first_instant_through_its_last() {
        let from = parse_range_bound("2026-12-01", shanghai(), RangeEdge::From).expect("from");
        let to = parse_range_bound("2026-12-01", shanghai(), RangeEdge::To).expect("to");
        assert_eq!(rfc3339(from), "2026-11-30T16:00:00.000Z");
        assert_eq!(rfc3339(to), "2026-12-01T16:00:00.000Z");
    }

    #[test]
    fn an_instant_is_taken_as_it_is_and_anything_else_is_refused() {
        let t = parse_range_bound("2026-12-01T08:00:00+08:00", shanghai(), RangeEdge::To)
            .expect("instant");
        assert_eq!(rfc3339(t), "2026-12-01T00:00:00.000Z");
        assert!(parse_range_bound("yesterday", shanghai(), RangeEdge::From).is_err());
        assert!(parse_range_bound("2026-13-01", shanghai(), RangeEdge::From).is_err());
    }
}
