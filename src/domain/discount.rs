//! Discount arithmetic and applicability (threshold, category scope).
//!
//! fixed   = min(value_cents, total_cents)
//! percent = floor(total_cents * percent_off / 100), capped by max_discount_cents
//! A coupon applies only when total >= min_order_cents and the order's
//! category is in the coupon's categories (empty list: every category).

use serde::Serialize;

use super::FieldError;
use super::category::MAX_CATEGORY_LEN;
use super::money::Cents;
use crate::i18n::Msg;

/// Most categories one template may name; bounds every applicability check.
pub const MAX_CATEGORIES: usize = 50;

/// A coupon's `kind`: a fixed amount off, or a percentage off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscountKind {
    Fixed,
    Percent,
}

impl DiscountKind {
    pub const ALL: [DiscountKind; 2] = [DiscountKind::Fixed, DiscountKind::Percent];

    /// `fixed` or `percent`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            DiscountKind::Fixed => "fixed",
            DiscountKind::Percent => "percent",
        }
    }

    /// The stored word back as a kind; `None` for any other word.
    pub fn parse(s: &str) -> Option<Self> {
        DiscountKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The catalog key of the kind's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            DiscountKind::Fixed => "discount-kind-fixed",
            DiscountKind::Percent => "discount-kind-percent",
        }
    }
}

impl std::fmt::Display for DiscountKind {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a coupon takes money off an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscountRule {
    Fixed {
        value: Cents,
    },
    Percent {
        percent_off: u8,
        max_discount: Option<Cents>,
    },
}

impl DiscountRule {
    /// The rule's kind as a value (`fixed` or `percent`).
    pub fn discount_kind(&self) -> DiscountKind {
        match self {
            DiscountRule::Fixed { .. } => DiscountKind::Fixed,
            DiscountRule::Percent { .. } => DiscountKind::Percent,
        }
    }

    /// Builds a rule from the API's loose fields, naming the field at fault.
    pub fn parse(
        kind: Option<&str>,
        value_cents: Option<i64>,
        percent_off: Option<i64>,
        max_discount_cents: Option<i64>,
    ) -> Result<Self, FieldError> {
        match kind {
            Some("fixed") => {
                if percent_off.is_some() {
                    return Err(FieldError::new(
                        "percent_off",
                        "only allowed when kind is \"percent\"",
                    ));
                }
                if max_discount_cents.is_some() {
                    return Err(FieldError::new(
                        "max_discount_cents",
                        "only allowed when kind is \"percent\"",
                    ));
                }
                let v = value_cents.ok_or_else(|| {
                    FieldError::new("value_cents", "is required for kind \"fixed\"")
                })?;
                let value =
                    Cents::new(v).map_err(|e| FieldError::new("value_cents", e.to_string()))?;
                if value.is_zero() {
                    return Err(FieldError::new("value_cents", "must be greater than 0"));
                }
                Ok(DiscountRule::Fixed { value })
            }
            Some("percent") => {
                if value_cents.is_some() {
                    return Err(FieldError::new(
                        "value_cents",
                        "only allowed when kind is \"fixed\"",
                    ));
                }
                let p = percent_off.ok_or_else(|| {
                    FieldError::new("percent_off", "is required for kind \"percent\"")
                })?;
                if !(1..=100).contains(&p) {
                    return Err(FieldError::new("percent_off", "must be between 1 and 100"));
                }
                let max_discount = match max_discount_cents {
                    None => None,
                    Some(m) => {
                        let m = Cents::new(m)
                            .map_err(|e| FieldError::new("max_discount_cents", e.to_string()))?;
                        if m.is_zero() {
                            return Err(FieldError::new(
                                "max_discount_cents",
                                "must be greater than 0",
                            ));
                        }
                        Some(m)
                    }
                };
                // `p` is in 1..=100, so the cast cannot truncate.
                Ok(DiscountRule::Percent {
                    percent_off: p as u8,
                    max_discount,
                })
            }
            Some(_) => Err(FieldError::new("kind", "must be \"fixed\" or \"percent\"")),
            None => Err(FieldError::new("kind", "is required")),
        }
    }

    /// Money this rule takes off an order of `total`. Never more than `total`.
    pub fn discount(&self, total: Cents) -> Cents {
        match *self {
            DiscountRule::Fixed { value } => value.min(total),
            DiscountRule::Percent {
                percent_off,
                max_discount,
            } => {
                // total <= MAX_CENTS (1e12), so total * 100 fits in i64.
                let raw = Cents::from_stored(total.get() * i64::from(percent_off) / 100);
                match max_discount {
                    Some(cap) => raw.min(cap),
                    None => raw,
                }
            }
        }
    }

    pub fn value_cents(&self) -> Option<Cents> {
        match *self {
            DiscountRule::Fixed { value } => Some(value),
            DiscountRule::Percent { .. } => None,
        }
    }

    pub fn percent_off(&self) -> Option<u8> {
        match *self {
            DiscountRule::Percent { percent_off, .. } => Some(percent_off),
            DiscountRule::Fixed { .. } => None,
        }
    }

    pub fn max_discount_cents(&self) -> Option<Cents> {
        match *self {
            DiscountRule::Percent { max_discount, .. } => max_discount,
            DiscountRule::Fixed { .. } => None,
        }
    }

    /// Rebuilds a rule from stored columns (the kind already parsed where
    /// the row was read). The table's CHECKs keep the amounts present for
    /// their kind; a missing one reads as zero, so a read never fails.
    pub fn from_stored(
        kind: DiscountKind,
        value_cents: Option<i64>,
        percent_off: Option<i64>,
        max_discount_cents: Option<i64>,
    ) -> Self {
        match kind {
            DiscountKind::Percent => DiscountRule::Percent {
                percent_off: percent_off.unwrap_or(0).clamp(0, 100) as u8,
                max_discount: max_discount_cents.map(Cents::from_stored),
            },
            DiscountKind::Fixed => DiscountRule::Fixed {
                value: Cents::from_stored(value_cents.unwrap_or(0)),
            },
        }
    }
}

/// The 折 figure of a percentage off, as Chinese shoppers say it: what is
/// left to pay, in tenths of the price, without a trailing ".0". 10% off
/// is "9" (9折), 15% off "8.5", 12% off "8.8", 5% off "9.5", 100% off "0".
/// A figure outside 0..=100 is clamped (stored rows keep it in 1..=100).
pub fn zhe_figure(percent_off: i64) -> String {
    let left = 100 - percent_off.clamp(0, 100);
    match left % 10 {
        0 => (left / 10).to_string(),
        tenth => format!("{}.{tenth}", left / 10),
    }
}

/// What a rule takes off, the way customers say it, as a message to render
/// in the reader's language: `满 ¥300.00 减 ¥50.00` / `¥50.00 off orders
/// from ¥300.00`, and for a percentage `满 ¥300.00 可用，9折，最高减
/// ¥30.00` / `orders from ¥300.00: 10% off, at most ¥30.00` (the 折
/// figure from [`zhe_figure`]). The one describer of a discount: coupon
/// pages, the self-check page and the template pages all render this.
pub fn offer_msg(rule: &DiscountRule, min_order: Cents) -> Msg {
    // "none" is the catalog's word for an absent threshold or cap.
    let min = (!min_order.is_zero()).then(|| min_order.shown());
    match *rule {
        DiscountRule::Fixed { value } => match min {
            Some(t) => crate::msg!("off-orders-from", v = value.shown(), t = t),
            None => crate::msg!("off-no-minimum", v = value.shown()),
        },
        DiscountRule::Percent {
            percent_off,
            max_discount,
        } => {
            let pct = i64::from(percent_off);
            crate::msg!(
                "rule-percent-off",
                min = min.unwrap_or_else(|| "none".to_string()),
                pct = pct,
                zhe = zhe_figure(pct),
                cap = max_discount.map_or_else(|| "none".to_string(), Cents::shown)
            )
        }
    }
}

/// What a coupon offers and where it applies: copied from the template onto
/// each coupon at claim time, so later template edits never change a coupon
/// a customer already holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponTerms {
    pub rule: DiscountRule,
    pub min_order: Cents,
    /// Empty: every category.
    pub categories: Vec<String>,
}

/// Why a coupon does not apply to an order's money or category.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotApplicable {
    ThresholdNotMet,
    CategoryNotCovered,
}

impl CouponTerms {
    pub fn check_applies(&self, total: Cents, category: &str) -> Result<(), NotApplicable> {
        if total < self.min_order {
            return Err(NotApplicable::ThresholdNotMet);
        }
        if !self.categories.is_empty() && !self.categories.iter().any(|c| c == category) {
            return Err(NotApplicable::CategoryNotCovered);
        }
        Ok(())
    }
}

/// Checks a category list: bounded count and length, no blanks, no repeats.
pub fn parse_categories(raw: Option<Vec<String>>) -> Result<Vec<String>, FieldError> {
    let list = raw.unwrap_or_default();
    if list.len() > MAX_CATEGORIES {
        return Err(FieldError::new(
            "categories",
            format!("at most {MAX_CATEGORIES} categories"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for c in list {
        let c = c.trim().to_string();
        if c.is_empty() || c.chars().count() > MAX_CATEGORY_LEN {
            return Err(FieldError::new(
                "categories",
                format!("each category must be 1-{MAX_CATEGORY_LEN} characters"),
            ));
        }
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: i64) -> Cents {
        Cents::from_stored(v)
    }

    #[test]
    fn fixed_discount_never_exceeds_the_total() {
        let r = DiscountRule::Fixed { value: c(5000) };
        assert_eq!(r.discount(c(30000)), c(5000));
        assert_eq!(r.discount(c(3000)), c(3000));
    }

    #[test]
    fn percent_discount_floors_and_respects_the_cap() {
        let r = DiscountRule::Percent {
            percent_off: 15,
            max_discount: Some(c(2000)),
        };
        assert_eq!(r.discount(c(999)), c(149), "149.85 floors to 149");
        assert_eq!(r.discount(c(100_000)), c(2000), "15000 capped at 2000");
        let uncapped = DiscountRule::Percent {
            percent_off: 100,
            max_discount: None,
        };
        assert_eq!(
            uncapped.discount(c(1_000_000_000_000)),
            c(1_000_000_000_000)
        );
    }

    #[test]
    fn the_zhe_figure_is_what_is_left_to_pay_in_tenths() {
        let cases = [
            (10, "9"),
            (15, "8.5"),
            (12, "8.8"),
            (5, "9.5"),
            (1, "9.9"),
            (50, "5"),
            (99, "0.1"),
            (100, "0"),
        ];
        for (percent_off, zhe) in cases {
            assert_eq!(zhe_figure(percent_off), zhe, "{percent_off}% off");
        }
        assert_eq!(zhe_figure(-5), "10", "clamped");
        assert_eq!(zhe_figure(250), "0", "clamped");
    }

    #[test]
    fn threshold_and_category_decide_applicability() {
        let terms = CouponTerms {
            rule: DiscountRule::Fixed { value: c(5000) },
            min_order: c(30000),
            categories: vec!["shoes".into()],
        };
        assert_eq!(terms.check_applies(c(30000), "shoes"), Ok(()));
        assert_eq!(
            terms.check_applies(c(29999), "shoes"),
            Err(NotApplicable::ThresholdNotMet)
        );
        assert_eq!(
            terms.check_applies(c(30000), "food"),
            Err(NotApplicable::CategoryNotCovered)
        );
        let anywhere = CouponTerms {
            categories: vec![],
            ..terms
        };
        assert_eq!(anywhere.check_applies(c(30000), "food"), Ok(()));
    }

    #[test]
    fn rule_parsing_names_the_field_at_fault() {
        let e = DiscountRule::parse(Some("fixed"), None, None, None).unwrap_err();
        assert_eq!(e.field, "value_cents");
        let e = DiscountRule::parse(Some("percent"), None, Some(0), None).unwrap_err();
        assert_eq!(e.field, "percent_off");
        let e = DiscountRule::parse(Some("bogus"), None, None, None).unwrap_err();
        assert_eq!(e.field, "kind");
        let e = DiscountRule::parse(Some("fixed"), Some(-5), None, None).unwrap_err();
        assert_eq!(e.field, "value_cents");
    }

    #[test]
    fn categories_are_trimmed_deduplicated_and_bounded() {
        assert_eq!(
            parse_categories(Some(vec![" a".into(), "a".into(), "b".into()])),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
        assert!(parse_categories(Some(vec!["".into()])).is_err());
        assert!(parse_categories(Some(vec!["x".into(); 51])).is_err());
    }
}
