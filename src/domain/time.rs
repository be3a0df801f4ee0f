//! Instants in UTC, stored as integer milliseconds since the Unix epoch.
//!
//! Both stores keep timestamps as `BIGINT` milliseconds: the same comparison
//! and index behaviour on SQLite and PostgreSQL, no time-zone ambiguity, and
//! one query text for both (see README, "Two stores").

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
