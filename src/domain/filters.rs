//! What a console list may be filtered by: plain values that the page
//! parses from its query string, the service passes on and the store turns
//! into its WHERE clause. Here so that pages name no store type.
//!
//! A filter typed as text comes in an `…Input` form (the text as sent)
//! and is checked once at the edge by its `parse`; the service takes only
//! the checked form.

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};

use super::FieldError;
use super::business_tz::BusinessTz;
use super::coupon::CouponStatus;
use super::ids::{CampaignId, TemplateId, UserId};
use super::time::{parse_rfc3339, to_ms};

/// Which customer a list is narrowed to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum UserFilter {
    /// Every customer.
    #[default]
    Any,
    /// Only this customer.
    Only(UserId),
    /// Filter text that no customer's id can be (inner whitespace, format
    /// characters, too long): every stored user id is a checked one, so
    /// it matches nothing.
    Nobody,
}

impl UserFilter {
    /// Reads checked filter text (trimmed, not empty): a user id, or
    /// text that matches nobody.
    fn of_text(text: &str) -> UserFilter {
        match UserId::parse(text) {
            Ok(user) => UserFilter::Only(user),
            Err(_) => UserFilter::Nobody,
        }
    }
}

/// Largest page of the console's coupon list.
pub const MAX_COUPON_PAGE: i64 = 200;
/// Largest CSV export of the console's coupon list.
pub const MAX_COUPON_EXPORT_ROWS: usize = 100_000;
/// Longest template or user id the coupon list's filter takes, in bytes.
const MAX_COUPON_FILTER_KEY: usize = 128;

/// Filters of the console's coupon list as sent: the status and the date
/// already read by the page, the template and user as typed (checked by
/// [`CouponFilter::parse`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CouponFilterInput {
    /// Effective status.
    pub status: Option<CouponStatus>,
    /// A template id as typed.
    pub template_id: Option<String>,
    /// A user id as typed.
    pub user_id: Option<String>,
    /// Only coupons whose `ends_at` is before this.
    pub expiring_before: Option<DateTime<Utc>>,
}

/// Checked filters of the console's coupon list. `status` is the effective
/// status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CouponFilter {
    /// Effective status (`available` excludes coupons past `ends_at`,
    /// `expired` includes them).
    pub status: Option<CouponStatus>,
    /// Only this template's coupons.
    pub template_id: Option<TemplateId>,
    /// Only this user's coupons.
    pub user: UserFilter,
    /// Only coupons whose `ends_at` is before this.
    pub expiring_before: Option<DateTime<Utc>>,
}

/// Filter text of the coupon list: trimmed, blank is none; longer than
/// [`MAX_COUPON_FILTER_KEY`] bytes or holding a control character is a
/// field error.
fn filter_key(field: &'static str, raw: Option<String>) -> Result<Option<String>, FieldError> {
    match raw.map(|s| s.trim().to_string()) {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) if s.len() > MAX_COUPON_FILTER_KEY || s.chars().any(char::is_control) => {
            Err(FieldError::new(
                field,
                format!("must be at most {MAX_COUPON_FILTER_KEY} characters"),
            ))
        }
        Some(s) => Ok(Some(s)),
    }
}

impl CouponFilter {
    /// Checks the typed template and user, in that order, naming the field
    /// at fault. A user id that no customer can have is not an error: it
    /// matches nobody ([`UserFilter::Nobody`]).
    pub fn parse(i: CouponFilterInput) -> Result<CouponFilter, FieldError> {
        let template_id = filter_key("template_id", i.template_id)?.map(TemplateId::from_wire);
        let user = match filter_key("user_id", i.user_id)? {
            None => UserFilter::Any,
            Some(text) => UserFilter::of_text(&text),
        };
        Ok(CouponFilter {
            status: i.status,
            template_id,
            user,
            expiring_before: i.expiring_before,
        })
    }
}

/// A page of the console's coupon list as asked for: its size and its
/// filter, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponListQuery {
    /// 1 to [`MAX_COUPON_PAGE`].
    pub limit: i64,
    /// Which coupons.
    pub filter: CouponFilter,
}

impl CouponListQuery {
    /// Checks the page size, then the filter ([`CouponFilter::parse`]):
    /// a bad limit is named before a bad template or user.
    pub fn parse(limit: i64, filter: CouponFilterInput) -> Result<CouponListQuery, FieldError> {
        if !(1..=MAX_COUPON_PAGE).contains(&limit) {
            return Err(FieldError::new(
                "limit",
                format!("must be 1 to {MAX_COUPON_PAGE}"),
            ));
        }
        Ok(CouponListQuery {
            limit,
            filter: CouponFilter::parse(filter)?,
        })
    }
}

/// A CSV export of the console's coupon list as asked for: how many rows
/// at most, and the filter, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponExportQuery {
    /// 1 to [`MAX_COUPON_EXPORT_ROWS`].
    pub max_rows: usize,
    /// Which coupons.
    pub filter: CouponFilter,
}

impl CouponExportQuery {
    /// Checks the number of rows, then the filter
    /// ([`CouponFilter::parse`]): a bad `max_rows` is named before a bad
    /// template or user.
    pub fn parse(
        max_rows: usize,
        filter: CouponFilterInput,
    ) -> Result<CouponExportQuery, FieldError> {
        if !(1..=MAX_COUPON_EXPORT_ROWS).contains(&max_rows) {
            return Err(FieldError::new(
                "max_rows",
                format!("must be 1 to {MAX_COUPON_EXPORT_ROWS}"),
            ));
        }
        Ok(CouponExportQuery {
            max_rows,
            filter: CouponFilter::parse(filter)?,
        })
    }
}

/// Largest page of the compensation ledger.
pub const MAX_LEDGER_PAGE: i64 = 200;
/// Most rows one CSV export of the compensation ledger holds.
pub const MAX_LEDGER_EXPORT_ROWS: usize = 100_000;
/// Longest text of a ledger filter (order, staff, preset, campaign), in
/// characters.
const MAX_LEDGER_FILTER_CHARS: usize = 200;

/// The compensation ledger's filters as a caller types them (the query of
/// `GET /compensation-ledger`, the console's ledger page), before
/// checking by [`LedgerFilter::parse`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerFilterInput {
    /// A business day `YYYY-MM-DD` (from its start), or an RFC 3339
    /// instant (inclusive).
    pub from: Option<String>,
    /// A business day `YYYY-MM-DD` (to its end, inclusive), or an RFC 3339
    /// instant (exclusive).
    pub to: Option<String>,
    /// An order number.
    pub order_no: Option<String>,
    /// A staff name (`alice`), or an exact actor (`staff:alice`,
    /// `api:…`, `job:…`).
    pub staff: Option<String>,
    /// A preset id.
    pub preset_id: Option<String>,
    /// A campaign id.
    pub campaign_id: Option<String>,
}

/// Checked filters of the compensation ledger; `None` means any. The
/// texts are matched exactly: one that no entry holds matches nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerFilter {
    /// `at >= this` (ms).
    pub from_ms: Option<i64>,
    /// `at < this` (ms).
    pub until_ms: Option<i64>,
    /// The order number (trimmed, at most 200 characters).
    pub order_no: Option<String>,
    /// Exact actor (`staff:alice`, `api:…`, `job:…`).
    pub actor: Option<String>,
    /// The preset id (trimmed, at most 200 characters).
    pub preset_id: Option<String>,
    /// The campaign.
    pub campaign_id: Option<CampaignId>,
}

/// Filter text, trimmed; blank is none.
fn nonempty(raw: Option<String>) -> Option<String> {
    raw.as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
}

/// A ledger filter's text: trimmed, blank is none, longer than
/// [`MAX_LEDGER_FILTER_CHARS`] a field error.
fn ledger_text(field: &'static str, raw: Option<String>) -> Result<Option<String>, FieldError> {
    match nonempty(raw) {
        Some(v) if v.chars().count() > MAX_LEDGER_FILTER_CHARS => Err(FieldError::new(
            field,
            format!("is at most {MAX_LEDGER_FILTER_CHARS} characters"),
        )),
        v => Ok(v),
    }
}

/// Where a bound of the ledger's range lies (ms): a business day's start
/// (or the next day's start, for `to`), or an instant.
fn ledger_bound(
    tz: BusinessTz,
    field: &'static str,
    raw: &str,
    end_of_day: bool,
) -> Result<i64, FieldError> {
    if let Ok(day) = NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        // Noon exists on every day in every zone; its business day's bounds
        // are the day's.
        let noon = day.and_time(NaiveTime::from_hms_opt(12, 0, 0).unwrap_or(NaiveTime::MIN));
        let at = tz
            .resolve(noon)
            .earliest()
            .ok_or_else(|| FieldError::new(field, "is not a day in the business time zone"))?;
        let (start, end) = tz.day_bounds(at);
        return Ok(to_ms(if end_of_day { end } else { start }));
    }
    parse_rfc3339(raw).map(to_ms).map_err(|_| {
        FieldError::new(
            field,
            "must be a business day YYYY-MM-DD or an RFC 3339 time",
        )
    })
}

impl LedgerFilter {
    /// Checks the typed filters in a fixed order (`from`, `to`, `staff`,
    /// `order_no`, `preset_id`, `campaign_id`), naming the first at fault;
    /// days are business days of `tz`. A staff name becomes its actor
    /// (`Alice` → `staff:alice`); text with a `:` is an actor as it is.
    pub fn parse(i: LedgerFilterInput, tz: BusinessTz) -> Result<LedgerFilter, FieldError> {
        let from_ms = match nonempty(i.from) {
            None => None,
            Some(d) => Some(ledger_bound(tz, "from", &d, false)?),
        };
        let until_ms = match nonempty(i.to) {
            None => None,
            Some(d) => Some(ledger_bound(tz, "to", &d, true)?),
        };
        let actor = ledger_text("staff", i.staff)?.map(|s| {
            if s.contains(':') {
                s
            } else {
                format!("staff:{}", s.to_lowercase())
            }
        });
        let order_no = ledger_text("order_no", i.order_no)?;
        let preset_id = ledger_text("preset_id", i.preset_id)?;
        let campaign_id = ledger_text("campaign_id", i.campaign_id)?.map(CampaignId::from_wire);
        Ok(LedgerFilter {
            from_ms,
            until_ms,
            order_no,
            actor,
            preset_id,
            campaign_id,
        })
    }
}

/// A page of the compensation ledger as asked for: its size and its
/// filter, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerPageQuery {
    /// 1 to [`MAX_LEDGER_PAGE`].
    pub limit: i64,
    /// Which entries.
    pub filter: LedgerFilter,
}

impl LedgerPageQuery {
    /// Checks the page size, then the filter ([`LedgerFilter::parse`]): a
    /// bad limit is named before a bad filter.
    pub fn parse(
        limit: i64,
        filter: LedgerFilterInput,
        tz: BusinessTz,
    ) -> Result<LedgerPageQuery, FieldError> {
        if !(1..=MAX_LEDGER_PAGE).contains(&limit) {
            return Err(FieldError::new(
                "limit",
                format!("must be 1 to {MAX_LEDGER_PAGE}"),
            ));
        }
        Ok(LedgerPageQuery {
            limit,
            filter: LedgerFilter::parse(filter, tz)?,
        })
    }
}

/// A CSV export of the compensation ledger as asked for: how many rows at
/// most, and the filter, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerExportQuery {
    /// 1 to [`MAX_LEDGER_EXPORT_ROWS`].
    pub max_rows: usize,
    /// Which entries.
    pub filter: LedgerFilter,
}

impl LedgerExportQuery {
    /// Checks the number of rows, then the filter
    /// ([`LedgerFilter::parse`]): a bad `max_rows` is named before a bad
    /// filter.
    pub fn parse(
        max_rows: usize,
        filter: LedgerFilterInput,
        tz: BusinessTz,
    ) -> Result<LedgerExportQuery, FieldError> {
        if !(1..=MAX_LEDGER_EXPORT_ROWS).contains(&max_rows) {
            return Err(FieldError::new(
                "max_rows",
                format!("must be 1 to {MAX_LEDGER_EXPORT_ROWS}"),
            ));
        }
        Ok(LedgerExportQuery {
            max_rows,
            filter: LedgerFilter::parse(filter, tz)?,
        })
    }
}

/// Filters of an audit page (the events and the staff log); `None`
/// means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Exact actor (`staff:alice`, `job:expiry-sweep`, `api:...`).
    pub actor: Option<String>,
    /// Exact action (`staff_release`, `expire`, `role_change`, ...).
    pub action: Option<String>,
    /// A coupon id or an order number (events); a staff name (staff log).
    pub target: Option<String>,
    /// `at >= this` (ms).
    pub from_ms: Option<i64>,
    /// `at < this` (ms).
    pub until_ms: Option<i64>,
}

/// Where a webhook delivery stands (`deliveries.status`), as the
/// deliveries page filters by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Not delivered yet; due again at its next attempt.
    Pending,
    /// The subscriber answered 2xx.
    Delivered,
    /// Given up on (attempts spent, or the subscriber gone).
    Dead,
}

impl DeliveryStatus {
    /// Every status, in the order the page offers them.
    pub const ALL: [DeliveryStatus; 3] = [
        DeliveryStatus::Pending,
        DeliveryStatus::Delivered,
        DeliveryStatus::Dead,
    ];

    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Dead => "dead",
        }
    }

    /// The status a stored word names.
    pub fn parse(s: &str) -> Option<Self> {
        DeliveryStatus::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

/// Filters of the webhook deliveries page as typed (its query string),
/// before [`DeliveryFilter::parse`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryFilterInput {
    /// `pending`, `delivered` or `dead`.
    pub status: Option<String>,
    /// An event type.
    pub event_type: Option<String>,
    /// A user id.
    pub user_id: Option<String>,
}

/// Checked filters of the webhook deliveries page; `None` (and
/// [`UserFilter::Any`]) means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryFilter {
    /// Only deliveries in this status.
    pub status: Option<DeliveryStatus>,
    /// Only deliveries of this event type (one of those the parse was
    /// given).
    pub event_type: Option<&'static str>,
    /// Only deliveries about this user.
    pub user: UserFilter,
}

impl DeliveryFilter {
    /// Reads the typed filters (each trimmed, blank is none). None is ever
    /// refused: a status, or an event type not among `event_types`, that
    /// the page does not offer is no filter; a user id that no customer
    /// can have matches nobody.
    pub fn parse(i: DeliveryFilterInput, event_types: &[&'static str]) -> DeliveryFilter {
        let status = nonempty(i.status).and_then(|s| DeliveryStatus::parse(&s));
        let event_type = nonempty(i.event_type)
            .and_then(|t| event_types.iter().copied().find(|known| *known == t));
        let user = match nonempty(i.user_id) {
            None => UserFilter::Any,
            Some(text) => UserFilter::of_text(&text),
        };
        DeliveryFilter {
            status,
            event_type,
            user,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::business_tz::shanghai;
    use super::*;

    fn coupons(template: Option<&str>, user: Option<&str>) -> CouponFilterInput {
        CouponFilterInput {
            template_id: template.map(String::from),
            user_id: user.map(String::from),
            ..CouponFilterInput::default()
        }
    }

    #[test]
    fn a_blank_template_or_user_filter_means_any() {
        let f = CouponFilter::parse(coupons(Some("  "), Some(""))).expect("filter");
        assert_eq!(f, CouponFilter::default());
    }

    #[test]
    fn coupon_filter_text_is_trimmed_into_ids() {
        let f = CouponFilter::parse(coupons(Some(" tpl_1 "), Some(" u1 "))).expect("filter");
        assert_eq!(f.template_id, Some(TemplateId::from("tpl_1")));
        assert_eq!(f.user, UserFilter::Only(UserId::from("u1")));
    }

    #[test]
    fn a_user_id_no_customer_can_have_matches_nobody() {
        for text in ["a b", "u\u{200b}1", "\u{202e}u1"] {
            let f = CouponFilter::parse(coupons(None, Some(text)));
            assert_eq!(f.map(|f| f.user), Ok(UserFilter::Nobody), "{text:?}");
        }
    }

    #[test]
    fn a_long_or_control_template_or_user_filter_is_a_field_error() {
        let long = "t".repeat(129);
        let field = |i| CouponFilter::parse(i).map_err(|e| e.field);
        assert_eq!(field(coupons(Some(&long), None)), Err("template_id"));
        assert_eq!(field(coupons(Some("t\u{7}"), None)), Err("template_id"));
        assert_eq!(field(coupons(None, Some(&long))), Err("user_id"));
        // The template is checked before the user.
        assert_eq!(field(coupons(Some(&long), Some(&long))), Err("template_id"));
    }

    #[test]
    fn a_bad_page_size_is_named_before_a_bad_filter() {
        let long = "t".repeat(200);
        for limit in [0, -1, MAX_COUPON_PAGE + 1] {
            let q = CouponListQuery::parse(limit, coupons(Some(&long), None));
            assert_eq!(q.map_err(|e| e.field), Err("limit"));
        }
        let q = CouponListQuery::parse(MAX_COUPON_PAGE, coupons(Some(&long), None));
        assert_eq!(q.map_err(|e| e.field), Err("template_id"));
        let q = CouponListQuery::parse(1, CouponFilterInput::default()).expect("query");
        assert_eq!((q.limit, q.filter), (1, CouponFilter::default()));
    }

    #[test]
    fn a_bad_export_size_is_named_before_a_bad_filter() {
        let long = "t".repeat(200);
        for max_rows in [0, MAX_COUPON_EXPORT_ROWS + 1] {
            let q = CouponExportQuery::parse(max_rows, coupons(Some(&long), None));
            assert_eq!(q.map_err(|e| e.field), Err("max_rows"));
        }
        let q = CouponExportQuery::parse(10, coupons(None, Some(&long)));
        assert_eq!(q.map_err(|e| e.field), Err("user_id"));
    }

    fn ledger(from: &str, to: &str, staff: &str) -> LedgerFilterInput {
        LedgerFilterInput {
            from: Some(from.into()),
            to: Some(to.into()),
            staff: Some(staff.into()),
            ..LedgerFilterInput::default()
        }
    }

    fn ms(rfc3339: &str) -> i64 {
        to_ms(parse_rfc3339(rfc3339).expect("a time"))
    }

    #[test]
    fn a_blank_ledger_filter_means_any() {
        let blank = LedgerFilterInput {
            from: Some(" ".into()),
            to: Some(String::new()),
            order_no: Some("  ".into()),
            staff: Some(" ".into()),
            preset_id: Some(String::new()),
            campaign_id: Some(" ".into()),
        };
        assert_eq!(
            LedgerFilter::parse(blank, shanghai()),
            Ok(LedgerFilter::default())
        );
    }

    #[test]
    fn a_business_day_bounds_the_ledger_from_its_start_through_its_end() {
        let tz = shanghai();
        let f = LedgerFilter::parse(ledger("2026-11-11", " 2026-11-11 ", ""), tz).expect("filter");
        assert_eq!(f.from_ms, Some(ms("2026-11-10T16:00:00Z")));
        assert_eq!(f.until_ms, Some(ms("2026-11-11T16:00:00Z")));
        let f = LedgerFilter::parse(
            ledger("2026-11-11T01:02:03Z", "2026-11-12T00:00:00+08:00", ""),
            tz,
        )
        .expect("filter");
        assert_eq!(f.from_ms, Some(ms("2026-11-11T01:02:03Z")));
        assert_eq!(f.until_ms, Some(ms("2026-11-11T16:00:00Z")));
    }

    #[test]
    fn a_staff_name_filters_by_its_actor_and_an_actor_is_taken_as_it_is() {
        let tz = shanghai();
        let actor = |staff: &str| {
            LedgerFilter::parse(ledger("", "", staff), tz)
                .expect("filter")
                .actor
        };
        assert_eq!(actor(" Alice "), Some("staff:alice".to_string()));
        assert_eq!(actor("api:Shop"), Some("api:Shop".to_string()));
    }

    #[test]
    fn ledger_filters_are_checked_in_a_fixed_order() {
        let long = "x".repeat(201);
        let field =
            |i: &LedgerFilterInput| LedgerFilter::parse(i.clone(), shanghai()).map_err(|e| e.field);
        let mut i = LedgerFilterInput {
            from: Some("soon".into()),
            to: Some("later".into()),
            order_no: Some(long.clone()),
            staff: Some(long.clone()),
            preset_id: Some(long.clone()),
            campaign_id: Some(long),
        };
        assert_eq!(field(&i), Err("from"));
        i.from = None;
        assert_eq!(field(&i), Err("to"));
        i.to = None;
        assert_eq!(field(&i), Err("staff"));
        i.staff = None;
        assert_eq!(field(&i), Err("order_no"));
        i.order_no = Some("x".repeat(200));
        assert_eq!(field(&i), Err("preset_id"));
        i.preset_id = None;
        assert_eq!(field(&i), Err("campaign_id"));
        i.campaign_id = None;
        let f = LedgerFilter::parse(i, shanghai()).expect("200 characters are a filter");
        assert_eq!(f.order_no, Some("x".repeat(200)));
    }

    #[test]
    fn a_bad_ledger_page_or_export_size_is_named_before_a_bad_filter() {
        let tz = shanghai();
        let bad = ledger("soon", "", "");
        for limit in [0, MAX_LEDGER_PAGE + 1] {
            let q = LedgerPageQuery::parse(limit, bad.clone(), tz);
            assert_eq!(q.map_err(|e| e.field), Err("limit"));
        }
        let q = LedgerPageQuery::parse(50, bad.clone(), tz);
        assert_eq!(q.map_err(|e| e.field), Err("from"));
        for max_rows in [0, MAX_LEDGER_EXPORT_ROWS + 1] {
            let q = LedgerExportQuery::parse(max_rows, bad.clone(), tz);
            assert_eq!(q.map_err(|e| e.field), Err("max_rows"));
        }
        let q = LedgerExportQuery::parse(10, bad, tz);
        assert_eq!(q.map_err(|e| e.field), Err("from"));
    }

    #[test]
    fn a_delivery_status_or_type_the_page_does_not_offer_is_no_filter() {
        let types = ["coupon.used", "coupon.expired"];
        let f = DeliveryFilter::parse(
            DeliveryFilterInput {
                status: Some(" dead ".into()),
                event_type: Some(" coupon.used ".into()),
                user_id: Some(" u1 ".into()),
            },
            &types,
        );
        assert_eq!(
            f,
            DeliveryFilter {
                status: Some(DeliveryStatus::Dead),
                event_type: Some("coupon.used"),
                user: UserFilter::Only(UserId::from("u1")),
            }
        );
        let f = DeliveryFilter::parse(
            DeliveryFilterInput {
                status: Some("lost".into()),
                event_type: Some("coupon.locked".into()),
                user_id: Some("  ".into()),
            },
            &types,
        );
        assert_eq!(f, DeliveryFilter::default());
    }

    #[test]
    fn a_delivery_user_no_customer_can_have_matches_nobody() {
        let f = DeliveryFilter::parse(
            DeliveryFilterInput {
                user_id: Some("a b".into()),
                ..DeliveryFilterInput::default()
            },
            &[],
        );
        assert_eq!(f.user, UserFilter::Nobody);
    }

    #[test]
    fn delivery_statuses_round_trip() {
        for d in DeliveryStatus::ALL {
            assert_eq!(DeliveryStatus::parse(d.as_str()), Some(d));
        }
        assert_eq!(DeliveryStatus::parse("Dead"), None);
    }
}
