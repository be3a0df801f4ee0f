//! Reports (报表): what each coupon change adds to the report counters, the
//! business day a change falls on, and the report's range rule. Pure.
//!
//! The counters (`template_counts`, `campaign_counts`, migration 0026) are
//! written in the same transaction as the change they count; a report
//! only sums them.

use chrono::{DateTime, NaiveDate, Utc};

use super::FieldError;
use super::coupon::CouponStatus;
use super::reminder::BusinessTz;

/// The `day` of the all-days row: it receives every delta a day row does.
pub const ALL_DAYS: i64 = -1;

/// Counter rows per (subject, day), chosen at random per change, so
/// concurrent changes of one hot template spread over rows.
pub const COUNTER_SHARDS: i64 = 16;

/// Most days one report covers.
pub const MAX_REPORT_DAYS: i64 = 366;

/// Days a report covers when no range is given: the last 30, today
/// included.
pub const DEFAULT_REPORT_DAYS: i64 = 30;

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or(NaiveDate::MIN)
}

/// The business day `at` falls on, as days since 1970-01-01 of the local
/// date (the counters' `day`).
pub fn day_number(tz: BusinessTz, at: DateTime<Utc>) -> i64 {
    (tz.local(at).date() - epoch()).num_days()
}

/// A date as a counter `day`.
pub fn date_number(date: NaiveDate) -> i64 {
    (date - epoch()).num_days()
}

/// A counter `day` as a date.
pub fn number_date(day: i64) -> NaiveDate {
    epoch()
        .checked_add_signed(chrono::Duration::days(day))
        .unwrap_or(NaiveDate::MAX)
}

/// The counter columns, in the order of [`Counts::as_array`].
pub const COUNTER_COLUMNS: [&str; 13] = [
    "claimed",
    "used",
    "returned",
    "expired",
    "invalidated",
    "discount_cents",
    "compensation_cents",
    "status_available",
    "status_locked",
    "status_used",
    "status_expired",
    "status_invalidated",
    "refunded_discount_cents",
];

/// One counter row's numbers (or a sum of rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub claimed: i64,
    pub used: i64,
    pub returned: i64,
    pub expired: i64,
    pub invalidated: i64,
    pub discount_cents: i64,
    pub compensation_cents: i64,
    pub status_available: i64,
    pub status_locked: i64,
    pub status_used: i64,
    pub status_expired: i64,
    pub status_invalidated: i64,
    /// The discount of refunded units, on the day of each refund
    /// (`order_refund_coupons.discount_cents`), whether the coupon stayed
    /// on the order or went back.
    pub refunded_discount_cents: i64,
}

impl Counts {
    pub fn as_array(&self) -> [i64; 13] {
        [
            self.claimed,
            self.used,
            self.returned,
            self.expired,
            self.invalidated,
            self.discount_cents,
            self.compensation_cents,
            self.status_available,
            self.status_locked,
            self.status_used,
            self.status_expired,
            self.status_invalidated,
            self.refunded_discount_cents,
        ]
    }

    pub fn from_array(a: [i64; 13]) -> Self {
        Counts {
            claimed: a[0],
            used: a[1],
            returned: a[2],
            expired: a[3],
            invalidated: a[4],
            discount_cents: a[5],
            compensation_cents: a[6],
            status_available: a[7],
            status_locked: a[8],
            status_used: a[9],
            status_expired: a[10],
            status_invalidated: a[11],
            refunded_discount_cents: a[12],
        }
    }

    pub fn add(&mut self, o: &Counts) {
        self.claimed += o.claimed;
        self.used += o.used;
        self.returned += o.returned;
        self.expired += o.expired;
        self.invalidated += o.invalidated;
        self.discount_cents += o.discount_cents;
        self.compensation_cents += o.compensation_cents;
        self.status_available += o.status_available;
        self.status_locked += o.status_locked;
        self.status_used += o.status_used;
        self.status_expired += o.status_expired;
        self.status_invalidated += o.status_invalidated;
        self.refunded_discount_cents += o.refunded_discount_cents;
    }

    fn status_mut(&mut self, s: CouponStatus) -> &mut i64 {
        match s {
            CouponStatus::Available => &mut self.status_available,
            CouponStatus::Locked => &mut self.status_locked,
            CouponStatus::Used => &mut self.status_used,
            CouponStatus::Expired => &mut self.status_expired,
            CouponStatus::Invalidated => &mut self.status_invalidated,
        }
    }
}

/// What one coupon change adds to its template's counters, and the sign
/// of the order's `coupon_discount_cents` it adds (`+1` a use, `-1` a use
/// given back, `0` none). `from` is `None` for a new coupon.
pub fn template_delta(from: Option<CouponStatus>, to: CouponStatus) -> (Counts, i64) {
    use CouponStatus::*;
    let mut d = Counts::default();
    match from {
        None => d.claimed = 1,
        Some(f) => *d.status_mut(f) -= 1,
    }
    *d.status_mut(to) += 1;
    let mut discount = 0;
    if from == Some(Used) {
        d.returned = 1;
        discount = -1;
    }
    match to {
        Used => {
            d.used = 1;
            discount = 1;
        }
        Expired => d.expired = 1,
        Invalidated => d.invalidated = 1,
        _ => {}
    }
    (d, discount)
}

/// What one change of a coupon bound to an order of a presale campaign
/// adds to the campaign's counters (see migration 0026): a lock to one of
/// its orders is `claimed`; `status_locked` counts those still locked.
/// `None` when the change does not concern a campaign's order.
pub fn campaign_delta(from: CouponStatus, to: CouponStatus) -> Option<(Counts, i64)> {
    use CouponStatus::*;
    let mut d = Counts::default();
    let mut discount = 0;
    match (from, to) {
        (Available, Locked) => {
            d.claimed = 1;
            d.status_locked = 1;
        }
        (Locked, Used) => {
            d.used = 1;
            d.status_locked = -1;
            d.status_used = 1;
            discount = 1;
        }
        (Locked, Available) => d.status_locked = -1,
        (Locked, Expired) => {
            d.expired = 1;
            d.status_locked = -1;
            d.status_expired = 1;
        }
        (Used, Available) => {
            d.returned = 1;
            d.status_used = -1;
            discount = -1;
        }
        (Used, Expired) => {
            d.returned = 1;
            d.expired = 1;
            d.status_used = -1;
            d.status_expired = 1;
            discount = -1;
        }
        _ => return None,
    }
    Some((d, discount))
}

/// A report's days: `[from, to]`, both business dates, at most
/// [`MAX_REPORT_DAYS`]. Missing ends: `to` is today, `from` is
/// [`DEFAULT_REPORT_DAYS`] days before `to` (today included).
pub fn report_range(
    from: Option<&str>,
    to: Option<&str>,
    today: NaiveDate,
) -> Result<(NaiveDate, NaiveDate), FieldError> {
    let parse = |field: &'static str, raw: &str| {
        NaiveDate::parse_from_str(raw.trim(), "%Y-%m-%d")
            .map_err(|_| FieldError::new(field, "must be a date as YYYY-MM-DD"))
    };
    let to = match to {
        Some(raw) => parse("to", raw)?,
        None => today,
    };
    let from = match from {
        Some(raw) => parse("from", raw)?,
        None => to
            .checked_sub_signed(chrono::Duration::days(DEFAULT_REPORT_DAYS - 1))
            .unwrap_or(to),
    };
    if from > to {
        return Err(FieldError::new("from", "must not be after to"));
    }
    if (to - from).num_days() + 1 > MAX_REPORT_DAYS {
        return Err(FieldError::new(
            "to",
            format!("a report covers at most {MAX_REPORT_DAYS} days"),
        ));
    }
    Ok((from, to))
}

/// Used coupons per claimed coupon, net of uses given back: `0.0` when
/// nothing was claimed. Rounded to four decimals.
pub fn redemption_rate(claimed: i64, used: i64, returned: i64) -> f64 {
    if claimed <= 0 {
        return 0.0;
    }
    let rate = (used - returned).max(0) as f64 / claimed as f64;
    (rate * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::coupon::check_transition;
    use crate::domain::reminder::shanghai;

    #[test]
    fn a_shanghai_evening_in_utc_is_the_next_business_day() {
        let at = DateTime::parse_from_rfc3339("2026-11-30T16:30:00Z")
            .map(|t| t.to_utc())
            .expect("time");
        let day = day_number(shanghai(), at);
        assert_eq!(
            number_date(day),
            NaiveDate::from_ymd_opt(2026, 12, 1).expect("date")
        );
        assert_eq!(date_number(number_date(day)), day);
    }

    #[test]
    fn every_allowed_change_keeps_the_status_counts_summing_to_the_claims() {
        use CouponStatus::*;
        let all = [Available, Locked, Used, Expired, Invalidated];
        for from in all {
            for to in all {
                if check_transition(from, to).is_err() {
                    continue;
                }
                let (d, _) = template_delta(Some(from), to);
                let sum = d.status_available
                    + d.status_locked
                    + d.status_used
                    + d.status_expired
                    + d.status_invalidated;
                assert_eq!(sum, 0, "{from:?} -> {to:?}");
                assert_eq!(d.used - d.returned, d.status_used, "{from:?} -> {to:?}");
            }
        }
        let (d, _) = template_delta(None, Available);
        assert_eq!((d.claimed, d.status_available), (1, 1));
    }

    #[test]
    fn a_range_is_bounded_and_ordered() {
        let today = NaiveDate::from_ymd_opt(2026, 12, 2).expect("date");
        let (from, to) = report_range(None, None, today).expect("default");
        assert_eq!((to - from).num_days() + 1, DEFAULT_REPORT_DAYS);
        assert_eq!(
            report_range(Some("2026-12-03"), Some("2026-12-02"), today)
                .expect_err("reversed")
                .field,
            "from"
        );
        assert_eq!(
            report_range(Some("2025-01-01"), Some("2026-12-02"), today)
                .expect_err("too long")
                .field,
            "to"
        );
        assert_eq!(
            report_range(Some("12/01/2026"), None, today)
                .expect_err("format")
                .field,
            "from"
        );
        assert!(report_range(Some("2026-01-01"), Some("2026-12-31"), today).is_ok());
        assert_eq!(redemption_rate(4, 2, 1), 0.25);
        assert_eq!(redemption_rate(0, 0, 0), 0.0);
    }
}
