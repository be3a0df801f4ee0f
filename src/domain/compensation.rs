//! Compensation rules (补偿规则): support's caps and the compensation
//! presets, as operators write them, checked here; which preset fits an
//! order; and what changed from one rules version to the next.
//!
//! Pure: no I/O, no clock. New preset ids come from the caller.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::FieldError;
use super::ids::{CouponId, OrderNo};
use super::money::{Cents, MAX_CENTS};
use super::reason::parse_reason;

/// Shortest validity of a compensation coupon.
pub const MIN_VALID_SECONDS: i64 = 60;
/// Longest validity of a compensation coupon (365 days).
pub const MAX_VALID_SECONDS: i64 = 365 * 24 * 3600;
/// Most presets in one rules version.
pub const MAX_PRESETS: usize = 50;
/// Longest preset reason, in characters.
pub const MAX_PRESET_REASON_CHARS: usize = 100;
/// Longest preset id, in bytes.
pub const MAX_ID_LEN: usize = 64;
/// Longest coupon id a compensation may name as the one it makes up for,
/// in characters as sent (before trimming), as an order's `coupon_ids`.
pub const MAX_FOR_COUPON_CHARS: usize = 64;

/// What a capped (support) staff member may still give as compensation
/// today: the caps of the rules in force, and what the ledger says they
/// gave on this business day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompensationAllowance {
    /// The most one compensation coupon may be worth.
    pub per_coupon_cents: i64,
    /// The most they may give in one business day.
    pub daily_cents: i64,
    /// What they gave today (compensation coupons only).
    pub given_today_cents: i64,
}

/// Which of support's caps a compensation would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapHit {
    /// Worth more than one coupon may be.
    PerCoupon { max_cents: i64 },
    /// More than is left of the business day's allowance.
    Daily {
        daily_cents: i64,
        given_today_cents: i64,
        left_cents: i64,
    },
}

impl CompensationAllowance {
    /// What is left of today's allowance (never below zero).
    pub fn left_today_cents(&self) -> i64 {
        (self.daily_cents - self.given_today_cents).max(0)
    }

    /// The most the next coupon may be worth: the per-coupon cap or what
    /// is left of today, whichever is smaller.
    pub fn next_coupon_cents(&self) -> i64 {
        self.per_coupon_cents.min(self.left_today_cents())
    }

    /// The caps check of a compensation worth `value_cents`: the
    /// per-coupon cap first, then the day's. The service refuses with it
    /// and the console words its message from the cap it names.
    pub fn check(&self, value_cents: i64) -> Result<(), CapHit> {
        if value_cents > self.per_coupon_cents {
            return Err(CapHit::PerCoupon {
                max_cents: self.per_coupon_cents,
            });
        }
        if self.given_today_cents.saturating_add(value_cents) > self.daily_cents {
            return Err(CapHit::Daily {
                daily_cents: self.daily_cents,
                given_today_cents: self.given_today_cents,
                left_cents: self.left_today_cents(),
            });
        }
        Ok(())
    }
}

/// A compensation coupon to issue, as the API and the console's form send
/// it (every field optional, so a missing one is a 400 that names it);
/// [`CompensationRequest::parse`] checks it.
#[derive(Debug, Clone, Default)]
pub struct CompensationInput {
    /// The coupon's fixed discount: 1 cent up to `MAX_CENTS`.
    pub value_cents: Option<i64>,
    /// How long the coupon lasts from now: 60 s to 365 days.
    pub valid_seconds: Option<i64>,
    /// Required, 1-500 characters; written to the ledger and the event.
    pub reason: Option<String>,
    /// The order this makes up for, as typed (trimmed; empty: none); it
    /// must exist and belong to the user.
    pub order_no: Option<String>,
    /// A preset of the rules version in force: then the value, validity,
    /// minimum order and categories come from it (`value_cents` and
    /// `valid_seconds` are ignored), and `reason` defaults to its reason.
    pub preset_id: Option<String>,
    /// Which of the order's coupons this makes up for (an order may hold
    /// several), as sent (trimmed; empty: none); needs `order_no`, and
    /// must be one of that order's coupons.
    pub for_coupon_id: Option<String>,
}

/// What a compensation coupon is worth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompensationAmount {
    /// A preset of the rules version in force, by id (whether it is one is
    /// known only when the rules are read, as the coupon is issued).
    Preset(String),
    /// A typed value and validity.
    Typed {
        /// 1 cent up to `MAX_CENTS`.
        value: Cents,
        /// [`MIN_VALID_SECONDS`] to [`MAX_VALID_SECONDS`].
        valid_seconds: i64,
    },
}

/// A checked compensation request: what the coupon is worth, why, and on
/// which order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompensationRequest {
    /// A preset, or a typed value and validity.
    pub amount: CompensationAmount,
    /// Why; `None` only with a preset and no reason typed (the preset's
    /// reason is written then).
    pub reason: Option<String>,
    /// The order it makes up for (that it exists and is the user's is
    /// checked as the coupon is issued).
    pub order_no: Option<OrderNo>,
    /// Which of the order's coupons it makes up for; only with
    /// `order_no` (that the coupon is the order's is checked as the
    /// coupon is issued).
    pub for_coupon_id: Option<CouponId>,
}

impl CompensationRequest {
    /// Checks a compensation's fields in a fixed order, naming the first at
    /// fault: without a preset the amount, then the validity; then the
    /// reason (which a preset makes optional); then the order number
    /// (trimmed; empty: none); then the coupon made up for (at most
    /// [`MAX_FOR_COUPON_CHARS`] as sent, trimmed, empty: none), which
    /// needs an order.
    pub fn parse(i: CompensationInput) -> Result<CompensationRequest, FieldError> {
        let preset_id = i
            .preset_id
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(String::from);
        let amount = match preset_id {
            Some(id) => CompensationAmount::Preset(id),
            None => CompensationAmount::Typed {
                value: typed_value(i.value_cents)?,
                valid_seconds: typed_seconds(i.valid_seconds)?,
            },
        };
        let reason = match (&amount, i.reason.as_deref().map(str::trim)) {
            (CompensationAmount::Preset(_), None | Some("")) => None,
            _ => Some(parse_reason(i.reason)?),
        };
        let order_no = match i.order_no.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(OrderNo::parse(raw)?),
        };
        let for_coupon_id = for_coupon(i.for_coupon_id.as_deref(), order_no.is_some())?;
        Ok(CompensationRequest {
            amount,
            reason,
            order_no,
            for_coupon_id,
        })
    }
}

/// The coupon a compensation makes up for: at most
/// [`MAX_FOR_COUPON_CHARS`] characters as sent, trimmed (empty: none);
/// only for a compensation that names its order, since a coupon is made
/// up for as one of an order's coupons.
fn for_coupon(raw: Option<&str>, has_order: bool) -> Result<Option<CouponId>, FieldError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    if raw.chars().count() > MAX_FOR_COUPON_CHARS {
        return Err(FieldError::new(
            "for_coupon_id",
            format!("must be at most {MAX_FOR_COUPON_CHARS} characters"),
        ));
    }
    match raw.trim() {
        "" => Ok(None),
        _ if !has_order => Err(FieldError::new(
            "for_coupon_id",
            "needs order_no: the coupon made up for is one of that order's coupons",
        )),
        id => Ok(Some(CouponId::from_wire(id))),
    }
}

/// A typed compensation amount: 1 cent up to `MAX_CENTS`.
fn typed_value(v: Option<i64>) -> Result<Cents, FieldError> {
    match v.map(Cents::new) {
        Some(Ok(v)) if !v.is_zero() => Ok(v),
        _ => Err(FieldError::new(
            "value_cents",
            format!("is required, 1 to {MAX_CENTS}"),
        )),
    }
}

/// A typed validity: [`MIN_VALID_SECONDS`] to [`MAX_VALID_SECONDS`].
fn typed_seconds(s: Option<i64>) -> Result<i64, FieldError> {
    match s {
        Some(s) if (MIN_VALID_SECONDS..=MAX_VALID_SECONDS).contains(&s) => Ok(s),
        _ => Err(FieldError::new(
            "valid_seconds",
            format!("is required, {MIN_VALID_SECONDS} to {MAX_VALID_SECONDS} (365 days)"),
        )),
    }
}

/// One compensation preset: a reason and the coupon it gives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preset {
    /// Stable across versions while the preset is kept.
    pub id: String,
    /// What the compensation is for (预售券过期补偿, 物流延误, ...).
    pub reason: String,
    /// The coupon's fixed discount.
    pub value_cents: i64,
    /// How long the coupon lasts from its issue.
    pub valid_seconds: i64,
    /// The coupon applies to orders of at least this much.
    pub min_order_cents: i64,
    /// The coupon applies to these categories; empty means every one.
    pub categories: Vec<String>,
}

/// One version of the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    pub version: i64,
    /// The most one compensation coupon issued by support may be worth.
    pub support_max_cents: i64,
    /// The most one support staff member may issue per business day.
    pub support_daily_cents: i64,
    /// In the order staff see them.
    pub presets: Vec<Preset>,
}

impl Rules {
    /// The preset `id` of this version.
    pub fn preset(&self, id: &str) -> Option<&Preset> {
        self.presets.iter().find(|p| p.id == id)
    }
}

/// A preset as written by an operator, before checking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PresetInput {
    /// Absent: a new preset (it gets a new id). Present: a preset of the
    /// current version, kept (possibly changed) under the same id.
    pub id: Option<String>,
    pub reason: Option<String>,
    pub value_cents: Option<i64>,
    pub valid_seconds: Option<i64>,
    pub min_order_cents: Option<i64>,
    pub categories: Option<Vec<String>>,
}

/// A whole new rules version as written by an operator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RulesInput {
    pub support_max_cents: Option<i64>,
    pub support_daily_cents: Option<i64>,
    pub presets: Option<Vec<PresetInput>>,
}

/// The `presets[i].<name>` field names, made once for the bounded number
/// of presets a version may hold (a field name is `&'static str`).
pub fn preset_field(i: usize, name: &str) -> &'static str {
    const NAMES: [&str; 6] = [
        "id",
        "reason",
        "value_cents",
        "valid_seconds",
        "min_order_cents",
        "categories",
    ];
    static FIELDS: OnceLock<Vec<[&'static str; 6]>> = OnceLock::new();
    let fields = FIELDS.get_or_init(|| {
        (0..MAX_PRESETS)
            .map(|i| NAMES.map(|n| &*Box::leak(format!("presets[{i}].{n}").into_boxed_str())))
            .collect()
    });
    match (fields.get(i), NAMES.iter().position(|n| *n == name)) {
        (Some(row), Some(j)) => row[j],
        _ => "presets",
    }
}

fn cents(field: &'static str, v: Option<i64>, min: i64) -> Result<i64, FieldError> {
    match v {
        Some(v) if (min..=MAX_CENTS).contains(&v) => Ok(v),
        _ => Err(FieldError::new(
            field,
            format!("is required, {min} to {MAX_CENTS} cents"),
        )),
    }
}

/// Checks a new rules version against the presets of the current one.
/// Every preset's value must be within support's per-coupon cap of the
/// same version (a preset is what support picks, so a preset above the cap
/// could never be used by support): refused with the field
/// `presets[i].value_cents`. A preset with an `id` keeps it, and the id
/// must name a preset of `current`; a preset without one gets
/// `new_id()`. Reasons are unique within a version.
pub fn check_rules(
    input: RulesInput,
    current: &[Preset],
    mut new_id: impl FnMut() -> String,
) -> Result<(i64, i64, Vec<Preset>), FieldError> {
    let max = cents("support_max_cents", input.support_max_cents, 0)?;
    let daily = cents("support_daily_cents", input.support_daily_cents, 0)?;
    let list = input.presets.unwrap_or_default();
    if list.len() > MAX_PRESETS {
        return Err(FieldError::new(
            "presets",
            format!("at most {MAX_PRESETS} presets"),
        ));
    }
    let mut out: Vec<Preset> = Vec::with_capacity(list.len());
    for (i, p) in list.into_iter().enumerate() {
        let f = |name| preset_field(i, name);
        let id = match p.id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(id) => {
                if id.len() > MAX_ID_LEN || !current.iter().any(|c| c.id == id) {
                    return Err(FieldError::new(
                        f("id"),
                        "is not a preset of the current version; leave it out for a new preset",
                    ));
                }
                if out.iter().any(|o| o.id == id) {
                    return Err(FieldError::new(f("id"), "names a preset twice"));
                }
                Some(id.to_string())
            }
        };
        let reason = p.reason.as_deref().map(str::trim).unwrap_or("");
        if reason.is_empty() || reason.chars().count() > MAX_PRESET_REASON_CHARS {
            return Err(FieldError::new(
                f("reason"),
                format!("is required, 1-{MAX_PRESET_REASON_CHARS} characters"),
            ));
        }
        if out.iter().any(|o| o.reason == reason) {
            return Err(FieldError::new(
                f("reason"),
                "another preset has the same reason",
            ));
        }
        let value = cents(f("value_cents"), p.value_cents, 1)?;
        if value > max {
            return Err(FieldError::new(
                f("value_cents"),
                format!("is above support's per-coupon cap (support_max_cents = {max})"),
            ));
        }
        let valid_seconds = match p.valid_seconds {
            Some(s) if (MIN_VALID_SECONDS..=MAX_VALID_SECONDS).contains(&s) => s,
            _ => {
                return Err(FieldError::new(
                    f("valid_seconds"),
                    format!("is required, {MIN_VALID_SECONDS} to {MAX_VALID_SECONDS} (365 days)"),
                ));
            }
        };
        let min_order = cents(
            f("min_order_cents"),
            Some(p.min_order_cents.unwrap_or(0)),
            0,
        )?;
        let categories =
            check_categories(p.categories).map_err(|m| FieldError::new(f("categories"), m))?;
        out.push(Preset {
            id: id.unwrap_or_else(&mut new_id),
            reason: reason.to_string(),
            value_cents: value,
            valid_seconds,
            min_order_cents: min_order,
            categories,
        });
    }
    Ok((max, daily, out))
}

fn check_categories(raw: Option<Vec<String>>) -> Result<Vec<String>, String> {
    super::discount::parse_categories(raw).map_err(|e| e.message)
}

/// The preset a health check suggests for a compensation of `lost_cents`
/// (the discount the customer was promised) on an order of `total_cents`
/// in `category`: among the presets whose coupon would apply to that order
/// (`min_order_cents` at most the order's total, and no categories or the
/// order's among them) and whose value is at least `lost_cents`, the one
/// of the smallest value, the earlier in the list on a tie. None when no
/// preset covers the loss (then support types an amount within the cap).
pub fn fitting_preset<'a>(
    presets: &'a [Preset],
    lost_cents: i64,
    total_cents: i64,
    category: &str,
) -> Option<&'a Preset> {
    if lost_cents <= 0 {
        return None;
    }
    presets
        .iter()
        .filter(|p| p.value_cents >= lost_cents)
        .filter(|p| p.min_order_cents <= total_cents)
        .filter(|p| p.categories.is_empty() || p.categories.iter().any(|c| c == category))
        .min_by_key(|p| p.value_cents)
}

/// One difference between two rules versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RuleChange {
    SupportMax { from: i64, to: i64 },
    SupportDaily { from: i64, to: i64 },
    PresetAdded { preset: Preset },
    PresetRemoved { preset: Preset },
    PresetChanged { before: Preset, after: Preset },
}

/// What changed from `before` to `after`: the caps, then presets added,
/// changed (same id, other terms) and removed.
pub fn changes(before: &Rules, after: &Rules) -> Vec<RuleChange> {
    let mut out = Vec::new();
    if before.support_max_cents != after.support_max_cents {
        out.push(RuleChange::SupportMax {
            from: before.support_max_cents,
            to: after.support_max_cents,
        });
    }
    if before.support_daily_cents != after.support_daily_cents {
        out.push(RuleChange::SupportDaily {
            from: before.support_daily_cents,
            to: after.support_daily_cents,
        });
    }
    for p in &after.presets {
        match before.preset(&p.id) {
            None => out.push(RuleChange::PresetAdded { preset: p.clone() }),
            Some(b) if b != p => out.push(RuleChange::PresetChanged {
                before: b.clone(),
                after: p.clone(),
            }),
            Some(_) => {}
        }
    }
    for p in &before.presets {
        if after.preset(&p.id).is_none() {
            out.push(RuleChange::PresetRemoved { preset: p.clone() });
        }
    }
    out
}

/// A rules change as the staff log keeps it: the versions, what changed
/// and the operator's reason, as JSON, so pages can say it in the reader's
/// language ([`RulesChangeLog::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulesChangeLog {
    pub from_version: i64,
    pub to_version: i64,
    pub changes: Vec<RuleChange>,
    #[serde(default)]
    pub reason: String,
}

impl RulesChangeLog {
    pub fn new(before: &Rules, after: &Rules, reason: &str) -> Self {
        RulesChangeLog {
            from_version: before.version,
            to_version: after.version,
            changes: changes(before, after),
            reason: reason.to_string(),
        }
    }

    /// The staff-log detail.
    pub fn to_detail(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A staff-log detail written by [`RulesChangeLog::to_detail`]; `None`
    /// for anything else.
    pub fn parse(detail: &str) -> Option<Self> {
        serde_json::from_str(detail).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_left_of_the_allowance_never_goes_below_zero_or_above_the_coupon_cap() {
        let a = CompensationAllowance {
            per_coupon_cents: 5000,
            daily_cents: 20000,
            given_today_cents: 17050,
        };
        assert_eq!((a.left_today_cents(), a.next_coupon_cents()), (2950, 2950));
        let fresh = CompensationAllowance {
            given_today_cents: 0,
            ..a
        };
        assert_eq!(
            (fresh.left_today_cents(), fresh.next_coupon_cents()),
            (20000, 5000)
        );
        let over = CompensationAllowance {
            given_today_cents: 25000,
            ..a
        };
        assert_eq!((over.left_today_cents(), over.next_coupon_cents()), (0, 0));
    }

    #[test]
    fn the_caps_check_names_the_per_coupon_cap_first_then_the_days() {
        let a = CompensationAllowance {
            per_coupon_cents: 5000,
            daily_cents: 20000,
            given_today_cents: 17050,
        };
        assert_eq!(a.check(2950), Ok(()));
        assert_eq!(a.check(5001), Err(CapHit::PerCoupon { max_cents: 5000 }));
        assert_eq!(
            a.check(2951),
            Err(CapHit::Daily {
                daily_cents: 20000,
                given_today_cents: 17050,
                left_cents: 2950
            })
        );
        let over = CompensationAllowance {
            given_today_cents: 25000,
            ..a
        };
        assert!(matches!(
            over.check(1),
            Err(CapHit::Daily { left_cents: 0, .. })
        ));
    }

    fn preset(id: &str, value: i64, min: i64, cats: &[&str]) -> Preset {
        Preset {
            id: id.into(),
            reason: format!("r-{id}"),
            value_cents: value,
            valid_seconds: 86_400,
            min_order_cents: min,
            categories: cats.iter().map(|c| c.to_string()).collect(),
        }
    }

    fn input(id: Option<&str>, reason: &str, value: i64) -> PresetInput {
        PresetInput {
            id: id.map(String::from),
            reason: Some(reason.into()),
            value_cents: Some(value),
            valid_seconds: Some(86_400),
            min_order_cents: None,
            categories: None,
        }
    }

    #[test]
    fn kept_presets_keep_their_id_and_new_ones_get_a_fresh_one() {
        let current = vec![preset("p1", 500, 0, &[])];
        let mut n = 0;
        let (max, daily, presets) = check_rules(
            RulesInput {
                support_max_cents: Some(5000),
                support_daily_cents: Some(20000),
                presets: Some(vec![input(Some("p1"), "a", 800), input(None, "b", 900)]),
            },
            &current,
            || {
                n += 1;
                format!("new{n}")
            },
        )
        .expect("valid");
        assert_eq!((max, daily), (5000, 20000));
        assert_eq!(presets[0].id, "p1");
        assert_eq!(presets[1].id, "new1");
    }

    #[test]
    fn a_bad_preset_names_its_field_with_its_index() {
        let bad = |presets: Vec<PresetInput>| {
            check_rules(
                RulesInput {
                    support_max_cents: Some(5000),
                    support_daily_cents: Some(20000),
                    presets: Some(presets),
                },
                &[],
                || "x".into(),
            )
            .expect_err("refused")
            .field
        };
        assert_eq!(
            bad(vec![input(None, "a", 100), input(None, "b", 0)]),
            "presets[1].value_cents"
        );
        assert_eq!(
            bad(vec![
                input(None, "a", 100),
                input(None, "b", 100),
                input(None, "c", 5001)
            ]),
            "presets[2].value_cents"
        );
        assert_eq!(bad(vec![input(None, " ", 100)]), "presets[0].reason");
        assert_eq!(
            bad(vec![input(None, "a", 100), input(None, "a", 200)]),
            "presets[1].reason"
        );
        assert_eq!(bad(vec![input(Some("nope"), "a", 100)]), "presets[0].id");
    }

    #[test]
    fn the_fitting_preset_is_the_smallest_that_covers_the_loss_and_suits_the_order() {
        let presets = vec![
            preset("big", 5000, 0, &[]),
            preset("phones", 2000, 0, &["phone"]),
            preset("small", 1000, 0, &[]),
            preset("threshold", 1500, 50_000, &[]),
        ];
        let id =
            |lost, total, cat| fitting_preset(&presets, lost, total, cat).map(|p| p.id.as_str());
        assert_eq!(id(800, 10_000, "book"), Some("small"));
        assert_eq!(id(1200, 10_000, "phone"), Some("phones"));
        assert_eq!(id(1200, 10_000, "book"), Some("big"));
        assert_eq!(id(1200, 60_000, "book"), Some("threshold"));
        assert_eq!(id(6000, 10_000, "book"), None);
        assert_eq!(id(0, 10_000, "book"), None);
    }

    #[test]
    fn changes_list_caps_and_presets_added_changed_and_removed() {
        let before = Rules {
            version: 1,
            support_max_cents: 5000,
            support_daily_cents: 20000,
            presets: vec![preset("a", 500, 0, &[]), preset("b", 600, 0, &[])],
        };
        let after = Rules {
            version: 2,
            support_max_cents: 3000,
            support_daily_cents: 20000,
            presets: vec![preset("a", 700, 0, &[]), preset("c", 800, 0, &[])],
        };
        let c = changes(&before, &after);
        assert_eq!(c.len(), 4);
        assert!(matches!(
            c[0],
            RuleChange::SupportMax {
                from: 5000,
                to: 3000
            }
        ));
        let log = RulesChangeLog::new(&before, &after, "caps tightened");
        let back = RulesChangeLog::parse(&log.to_detail()).expect("the detail parses back");
        assert_eq!(back, log);
        assert_eq!((back.from_version, back.to_version), (1, 2));
        assert_eq!(back.changes, c);
        assert_eq!(
            RulesChangeLog::parse("version 1 -> 2; support_max_cents 1 -> 2"),
            None
        );
    }

    fn compensation(
        value: Option<i64>,
        seconds: Option<i64>,
        reason: Option<&str>,
    ) -> CompensationInput {
        CompensationInput {
            value_cents: value,
            valid_seconds: seconds,
            reason: reason.map(String::from),
            ..CompensationInput::default()
        }
    }

    #[test]
    fn a_typed_compensation_is_checked_amount_validity_reason_then_order() {
        let field = |i: CompensationInput| CompensationRequest::parse(i).map_err(|e| e.field);
        let bad_order = |mut i: CompensationInput| {
            i.order_no = Some("P 1".into());
            i
        };
        assert_eq!(
            field(bad_order(compensation(None, None, None))),
            Err("value_cents")
        );
        assert_eq!(
            field(bad_order(compensation(Some(0), None, None))),
            Err("value_cents")
        );
        assert_eq!(
            field(bad_order(compensation(Some(MAX_CENTS + 1), None, None))),
            Err("value_cents")
        );
        assert_eq!(
            field(bad_order(compensation(Some(500), Some(59), None))),
            Err("valid_seconds")
        );
        assert_eq!(
            field(bad_order(compensation(
                Some(500),
                Some(MAX_VALID_SECONDS + 1),
                None
            ))),
            Err("valid_seconds")
        );
        assert_eq!(
            field(bad_order(compensation(Some(500), Some(3600), Some(" ")))),
            Err("reason")
        );
        assert_eq!(
            field(bad_order(compensation(
                Some(500),
                Some(3600),
                Some("sorry")
            ))),
            Err("order_no")
        );
    }

    #[test]
    fn a_well_formed_compensation_is_trimmed_into_its_request() {
        let mut i = compensation(Some(500), Some(3600), Some(" sorry "));
        i.order_no = Some(" P1 ".into());
        let r = CompensationRequest::parse(i).expect("a request");
        assert_eq!(
            r,
            CompensationRequest {
                amount: CompensationAmount::Typed {
                    value: Cents::new(500).expect("cents"),
                    valid_seconds: 3600,
                },
                reason: Some("sorry".into()),
                order_no: Some(OrderNo::from("P1")),
                for_coupon_id: None,
            }
        );
    }

    #[test]
    fn the_coupon_made_up_for_needs_an_order_and_is_trimmed() {
        let with = |order: Option<&str>, coupon: &str| {
            let mut i = compensation(Some(500), Some(3600), Some("sorry"));
            i.order_no = order.map(String::from);
            i.for_coupon_id = Some(coupon.into());
            CompensationRequest::parse(i)
        };
        assert_eq!(
            with(Some("P1"), " cpn_2 ").map(|r| r.for_coupon_id),
            Ok(Some(CouponId::from("cpn_2")))
        );
        assert_eq!(with(Some("P1"), "  ").map(|r| r.for_coupon_id), Ok(None));
        // Without an order (none, or a blank one) it names nothing it
        // could be checked against.
        for order in [None, Some(" ")] {
            assert_eq!(
                with(order, "cpn_2").map_err(|e| e.field),
                Err("for_coupon_id")
            );
        }
        // Blank with no order: nothing named, nothing refused.
        assert_eq!(with(None, "").map(|r| r.for_coupon_id), Ok(None));
        let long = "c".repeat(MAX_FOR_COUPON_CHARS + 1);
        assert_eq!(
            with(Some("P1"), &long).map_err(|e| e.field),
            Err("for_coupon_id")
        );
        // Every other field is checked first.
        let mut i = compensation(Some(500), Some(3600), Some(" "));
        i.for_coupon_id = Some("cpn_2".into());
        assert_eq!(
            CompensationRequest::parse(i).map_err(|e| e.field),
            Err("reason")
        );
    }

    #[test]
    fn a_blank_order_number_means_no_order() {
        let mut i = compensation(Some(500), Some(3600), Some("sorry"));
        i.order_no = Some("   ".into());
        let r = CompensationRequest::parse(i).expect("a request");
        assert_eq!(r.order_no, None);
    }

    #[test]
    fn a_preset_ignores_the_typed_amount_and_makes_the_reason_optional() {
        let mut i = compensation(Some(-1), None, Some("  "));
        i.preset_id = Some(" cps_1 ".into());
        let r = CompensationRequest::parse(i).expect("a request");
        assert_eq!(r.amount, CompensationAmount::Preset("cps_1".into()));
        assert_eq!(r.reason, None);
        // A reason typed with a preset is still checked.
        let mut i = compensation(None, None, Some(&"r".repeat(501)));
        i.preset_id = Some("cps_1".into());
        assert_eq!(
            CompensationRequest::parse(i).map_err(|e| e.field),
            Err("reason")
        );
        // A blank preset id is no preset.
        let mut i = compensation(None, Some(3600), Some("sorry"));
        i.preset_id = Some(" ".into());
        assert_eq!(
            CompensationRequest::parse(i).map_err(|e| e.field),
            Err("value_cents")
        );
    }
}
