//! Coupon templates (券模板): what each claimed coupon will offer, how long it
//! lives, and how many may be handed out.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::FieldError;
use super::discount::{CouponTerms, DiscountRule, parse_categories};
use super::money::Cents;
use super::time::parse_rfc3339;

/// Longest relative validity: ten years. Keeps `claim + valid_seconds` far
/// from chrono's range limits.
pub const MAX_VALID_SECONDS: i64 = 10 * 366 * 24 * 3600;
/// Largest stock one template may have.
pub const MAX_TOTAL_STOCK: i64 = 1_000_000_000;
/// Largest per-user limit.
pub const MAX_PER_USER_LIMIT: i64 = 10_000;
/// Longest template name in characters.
pub const MAX_NAME_CHARS: usize = 200;

/// Whether a template hands out coupons, as stored in `templates.status`.
/// Its claim period (`Validity`) is a separate question: an active
/// template outside its period still refuses claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateStatus {
    Active,
    /// Paused by an operator: claims are refused, issued coupons are
    /// unaffected. Stored as `disabled`, the word migration 0001 allows.
    Paused,
}

impl TemplateStatus {
    pub const ALL: [TemplateStatus; 2] = [TemplateStatus::Active, TemplateStatus::Paused];

    pub fn as_str(self) -> &'static str {
        match self {
            TemplateStatus::Active => "active",
            TemplateStatus::Paused => "disabled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        TemplateStatus::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether claims are accepted at all (the claim period decides next).
    pub fn accepts_claims(self) -> bool {
        self == TemplateStatus::Active
    }
}

impl std::fmt::Display for TemplateStatus {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a template stands for claiming, as `GET /templates` reports and
/// filters it: derived from its stored status, its claim period and its
/// validity at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStanding {
    /// Claims are accepted.
    Active,
    /// Paused by an operator.
    Paused,
    /// Its coupons' validity has not begun.
    NotStarted,
    /// Claiming ended early, or its coupons' hard end has passed.
    Ended,
}

impl ClaimStanding {
    pub const ALL: [ClaimStanding; 4] = [
        ClaimStanding::Active,
        ClaimStanding::Paused,
        ClaimStanding::NotStarted,
        ClaimStanding::Ended,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStanding::Active => "active",
            ClaimStanding::Paused => "paused",
            ClaimStanding::NotStarted => "not_started",
            ClaimStanding::Ended => "ended",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ClaimStanding::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// The standing of a template at `now`. Paused wins; then an end of
/// claiming (early, or the coupons' hard end) that has passed; then a
/// validity that begins later.
pub fn claim_standing(
    status: TemplateStatus,
    valid_from: Option<DateTime<Utc>>,
    valid_until: Option<DateTime<Utc>>,
    claim_ends_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> ClaimStanding {
    if status == TemplateStatus::Paused {
        return ClaimStanding::Paused;
    }
    if claim_ends_at.is_some_and(|e| e <= now) || valid_until.is_some_and(|u| u <= now) {
        return ClaimStanding::Ended;
    }
    if valid_from.is_some_and(|f| f > now) {
        return ClaimStanding::NotStarted;
    }
    ClaimStanding::Active
}

/// A safe edit of a template that has issued coupons: nothing that would
/// change what an issued coupon means.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateEdit {
    pub name: Option<String>,
    /// The new total; only ever larger, and never below what was claimed.
    pub total_stock: Option<i64>,
    /// Claiming ends at this instant (no later than the coupons' hard end).
    pub claim_ends_at: Option<DateTime<Utc>>,
}

/// Why an edit is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditRefusal {
    /// Unlimited stock stays unlimited; a limited one only grows.
    StockMayOnlyGrow,
    /// The end of claiming must be in the future.
    ClaimEndPassed,
}

/// Checks `edit` against the template's current stock (`None`: unlimited)
/// and `now`.
pub fn check_edit(
    edit: &TemplateEdit,
    total_stock: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(), EditRefusal> {
    if let Some(new) = edit.total_stock {
        match total_stock {
            Some(old) if new >= old => {}
            _ => return Err(EditRefusal::StockMayOnlyGrow),
        }
    }
    if edit.claim_ends_at.is_some_and(|e| e <= now) {
        return Err(EditRefusal::ClaimEndPassed);
    }
    Ok(())
}

/// When a claimed coupon can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// `[from, until)` for every coupon.
    Absolute {
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    },
    /// `seconds` from the moment the coupon becomes usable (the claim, or
    /// `not_before` for a pre-release), cut at `until` when given.
    Relative {
        seconds: i64,
        not_before: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    },
}

impl Validity {
    /// `now` is the template's creation time: an absolute window without
    /// `valid_from` starts then.
    pub fn parse(
        valid_from: Option<&str>,
        valid_until: Option<&str>,
        valid_seconds: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<Self, FieldError> {
        let from = valid_from
            .map(|s| parse_rfc3339(s).map_err(|m| FieldError::new("valid_from", m)))
            .transpose()?;
        let until = valid_until
            .map(|s| parse_rfc3339(s).map_err(|m| FieldError::new("valid_until", m)))
            .transpose()?;
        if let (Some(f), Some(u)) = (from, until)
            && f >= u
        {
            return Err(FieldError::new("valid_until", "must be after valid_from"));
        }
        match valid_seconds {
            Some(s) => {
                if !(1..=MAX_VALID_SECONDS).contains(&s) {
                    return Err(FieldError::new(
                        "valid_seconds",
                        format!("must be between 1 and {MAX_VALID_SECONDS}"),
                    ));
                }
                Ok(Validity::Relative {
                    seconds: s,
                    not_before: from,
                    until,
                })
            }
            None => {
                let until = until.ok_or_else(|| {
                    FieldError::new("valid_until", "is required unless valid_seconds is given")
                })?;
                let from = from.unwrap_or(now);
                if from >= until {
                    return Err(FieldError::new(
                        "valid_until",
                        "must be after valid_from (or after now when valid_from is absent)",
                    ));
                }
                Ok(Validity::Absolute { from, until })
            }
        }
    }

    /// The `[starts_at, ends_at)` window of a coupon claimed at `claim_at`, or
    /// `None` when such a coupon would be dead on arrival.
    pub fn window_for_claim(
        &self,
        claim_at: DateTime<Utc>,
    ) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        let (starts, ends) = match *self {
            Validity::Absolute { from, until } => (from, until),
            Validity::Relative {
                seconds,
                not_before,
                until,
            } => {
                let starts = match not_before {
                    Some(nb) if nb > claim_at => nb,
                    _ => claim_at,
                };
                let natural = starts + Duration::seconds(seconds);
                let ends = match until {
                    Some(u) if u < natural => u,
                    _ => natural,
                };
                (starts, ends)
            }
        };
        (ends > starts && ends > claim_at).then_some((starts, ends))
    }

    /// The hard end of the template, if it has one: no claim at or after it.
    pub fn hard_end(&self) -> Option<DateTime<Utc>> {
        match *self {
            Validity::Absolute { until, .. } => Some(until),
            Validity::Relative { until, .. } => until,
        }
    }

    pub fn valid_from(&self) -> Option<DateTime<Utc>> {
        match *self {
            Validity::Absolute { from, .. } => Some(from),
            Validity::Relative { not_before, .. } => not_before,
        }
    }

    pub fn valid_seconds(&self) -> Option<i64> {
        match *self {
            Validity::Relative { seconds, .. } => Some(seconds),
            Validity::Absolute { .. } => None,
        }
    }
}

/// A checked template ready to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateSpec {
    pub name: String,
    pub terms: CouponTerms,
    pub validity: Validity,
    /// `None`: unlimited.
    pub total_stock: Option<i64>,
    /// `None`: unlimited.
    pub per_user_limit: Option<i64>,
}

/// The API's template fields before checking.
#[derive(Debug, Clone, Default)]
pub struct TemplateInput {
    pub name: Option<String>,
    pub kind: Option<String>,
    pub value_cents: Option<i64>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<i64>,
    pub min_order_cents: Option<i64>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub valid_seconds: Option<i64>,
    pub total_stock: Option<i64>,
    pub per_user_limit: Option<i64>,
    pub categories: Option<Vec<String>>,
}

impl TemplateSpec {
    /// Checks the API's fields; `now` is the creation time.
    pub fn parse(input: TemplateInput, now: DateTime<Utc>) -> Result<Self, FieldError> {
        let name = input.name.unwrap_or_default().trim().to_string();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(FieldError::new(
                "name",
                format!("must be 1-{MAX_NAME_CHARS} characters"),
            ));
        }
        let rule = DiscountRule::parse(
            input.kind.as_deref(),
            input.value_cents,
            input.percent_off,
            input.max_discount_cents,
        )?;
        let min_order = Cents::new(input.min_order_cents.unwrap_or(0))
            .map_err(|e| FieldError::new("min_order_cents", e.to_string()))?;
        let categories = parse_categories(input.categories)?;
        let validity = Validity::parse(
            input.valid_from.as_deref(),
            input.valid_until.as_deref(),
            input.valid_seconds,
            now,
        )?;
        if let Some(s) = input.total_stock
            && !(1..=MAX_TOTAL_STOCK).contains(&s)
        {
            return Err(FieldError::new(
                "total_stock",
                format!("must be between 1 and {MAX_TOTAL_STOCK}, or null for unlimited"),
            ));
        }
        if let Some(l) = input.per_user_limit
            && !(1..=MAX_PER_USER_LIMIT).contains(&l)
        {
            return Err(FieldError::new(
                "per_user_limit",
                format!("must be between 1 and {MAX_PER_USER_LIMIT}, or null for unlimited"),
            ));
        }
        Ok(TemplateSpec {
            name,
            terms: CouponTerms {
                rule,
                min_order,
                categories,
            },
            validity,
            total_stock: input.total_stock,
            per_user_limit: input.per_user_limit,
        })
    }
}

/// How many stock shards a template gets. Claims spread over the shards, so
/// on PostgreSQL concurrent claims of one hot template lock different rows
/// instead of queueing on one (see README, "Claiming without overselling").
pub const MAX_STOCK_SHARDS: i64 = 16;

/// Splits `total_stock` over shards: `None` (unlimited) gives
/// [`MAX_STOCK_SHARDS`] uncapped shards; a limit gives at most that many
/// shards, whose capacities differ by at most one and add up to the stock.
pub fn stock_shards(total_stock: Option<i64>) -> Vec<Option<i64>> {
    match total_stock {
        None => vec![None; MAX_STOCK_SHARDS as usize],
        Some(stock) => {
            let n = stock.clamp(1, MAX_STOCK_SHARDS);
            let base = stock / n;
            let extra = stock % n;
            (0..n).map(|i| Some(base + i64::from(i < extra))).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        parse_rfc3339(s).expect("valid")
    }

    #[test]
    fn relative_validity_starts_at_claim_and_is_capped() {
        let v = Validity::parse(
            None,
            Some("2026-01-01T00:00:10Z"),
            Some(60),
            t("2025-12-31T00:00:00Z"),
        )
        .expect("ok");
        let (s, e) = v
            .window_for_claim(t("2026-01-01T00:00:00Z"))
            .expect("alive");
        assert_eq!(s, t("2026-01-01T00:00:00Z"));
        assert_eq!(e, t("2026-01-01T00:00:10Z"));
    }

    #[test]
    fn pre_release_coupons_start_at_valid_from() {
        let v = Validity::parse(
            Some("2026-02-01T00:00:00Z"),
            None,
            Some(3600),
            t("2026-01-01T00:00:00Z"),
        )
        .expect("ok");
        let (s, e) = v
            .window_for_claim(t("2026-01-01T00:00:00Z"))
            .expect("alive");
        assert_eq!(s, t("2026-02-01T00:00:00Z"));
        assert_eq!(e, t("2026-02-01T01:00:00Z"));
    }

    #[test]
    fn a_window_already_over_gives_no_coupon() {
        let v = Validity::parse(
            Some("2026-01-01T00:00:00Z"),
            Some("2026-01-02T00:00:00Z"),
            None,
            t("2025-12-01T00:00:00Z"),
        )
        .expect("ok");
        assert!(v.window_for_claim(t("2026-01-02T00:00:00Z")).is_none());
        assert!(v.window_for_claim(t("2026-01-01T12:00:00Z")).is_some());
    }

    #[test]
    fn validity_needs_an_end() {
        let e = Validity::parse(
            Some("2026-01-01T00:00:00Z"),
            None,
            None,
            t("2026-01-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "valid_until");
        let e = Validity::parse(None, None, Some(0), t("2026-01-01T00:00:00Z")).unwrap_err();
        assert_eq!(e.field, "valid_seconds");
        let e = Validity::parse(
            Some("2026-01-02T00:00:00Z"),
            Some("2026-01-01T00:00:00Z"),
            None,
            t("2025-12-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "valid_until");
    }

    #[test]
    fn an_absolute_window_without_a_start_begins_at_creation() {
        let now = t("2026-01-01T00:00:00Z");
        let v = Validity::parse(None, Some("2026-01-08T00:00:00Z"), None, now).expect("ok");
        assert_eq!(
            v.window_for_claim(t("2026-01-02T00:00:00Z")),
            Some((now, t("2026-01-08T00:00:00Z")))
        );
        let e = Validity::parse(None, Some("2025-12-31T00:00:00Z"), None, now).unwrap_err();
        assert_eq!(e.field, "valid_until");
    }

    #[test]
    fn shards_split_stock_evenly_and_exactly() {
        assert_eq!(stock_shards(Some(10)).len(), 10);
        let s = stock_shards(Some(100));
        assert_eq!(s.len(), 16);
        assert_eq!(s.iter().map(|c| c.unwrap_or(0)).sum::<i64>(), 100);
        assert!(s.iter().all(|c| matches!(c, Some(6) | Some(7))));
        assert!(stock_shards(None).iter().all(Option::is_none));
    }

    #[test]
    fn template_parse_checks_limits() {
        let base = TemplateInput {
            name: Some("满300减50".into()),
            kind: Some("fixed".into()),
            value_cents: Some(5000),
            min_order_cents: Some(30000),
            valid_seconds: Some(10),
            ..Default::default()
        };
        assert!(TemplateSpec::parse(base.clone(), t("2026-01-01T00:00:00Z")).is_ok());
        let e = TemplateSpec::parse(
            TemplateInput {
                total_stock: Some(0),
                ..base.clone()
            },
            t("2026-01-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "total_stock");
        let e = TemplateSpec::parse(
            TemplateInput {
                name: Some("  ".into()),
                ..base
            },
            t("2026-01-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "name");
    }
}
