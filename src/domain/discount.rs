//! Discount arithmetic and applicability (scope, threshold).
//!
//! fixed   = min(value_cents, eligible amount)
//! percent = floor(eligible amount * percent_off / 100), capped by max_discount_cents
//! A line is eligible for a coupon when its category is in the coupon's
//! categories (empty list: every category), its SKU passes `skus` and
//! `exclude_skus`, and, for a shop coupon, its shop is the coupon's. The
//! eligible amount is the eligible lines' amounts summed; a coupon applies
//! only when some line is eligible and the eligible amount reaches
//! min_order_cents.

use serde::Serialize;

use super::FieldError;
use super::category::MAX_CATEGORY_LEN;
use super::ids::{ShopId, Sku};
use super::line::Line;
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

    /// The most the discount can grow when its base grows by `by_cents`
    /// from any base at or above `from`: a bound on `discount(b + by) -
    /// discount(b)` for every `b >= from`. Both rules are non-decreasing
    /// and, but for the percent rule's rounding down (one cent at most),
    /// concave, so the growth is largest at `from`. Stacking uses it to
    /// drop a choice of shop coupons that gives more up front than the
    /// platform coupon could ever give back.
    pub fn most_gain(&self, from: Cents, by: Cents) -> Cents {
        match *self {
            DiscountRule::Fixed { value } => value
                .min(from.saturating_add(by))
                .saturating_sub(value.min(from)),
            DiscountRule::Percent {
                percent_off,
                max_discount,
            } => {
                // floor(p(b + by)/100) - floor(pb/100) <= floor((99 + p by)/100);
                // by <= MAX_CENTS (1e12), so by * 100 fits in i64.
                let by = by.get().clamp(0, super::money::MAX_CENTS);
                let linear = Cents::from_stored((by * i64::from(percent_off) + 99) / 100);
                match max_discount {
                    Some(cap) => linear.min(cap.saturating_sub(self.discount(from))),
                    None => linear,
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

/// Most SKUs a template may name in `skus`, and again in `exclude_skus`.
pub const MAX_SKUS: usize = 100;

/// Which lines a coupon may discount besides their category: by SKU, and
/// by shop for a shop coupon.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineScope {
    /// Only lines of these SKUs; empty: any SKU.
    pub skus: Vec<Sku>,
    /// Never lines of these SKUs.
    pub exclude_skus: Vec<Sku>,
    /// A shop coupon's shop: only that shop's lines. `None`: a platform
    /// coupon, on any shop's lines.
    pub shop_id: Option<ShopId>,
}

impl LineScope {
    /// Whether a line of `sku` from `shop` passes: a line without a SKU
    /// passes only when neither list names any; a shop coupon takes only
    /// its shop's lines.
    pub fn passes(&self, sku: Option<&Sku>, shop: Option<&ShopId>) -> bool {
        let sku_passes = match sku {
            None => self.skus.is_empty() && self.exclude_skus.is_empty(),
            Some(s) => {
                (self.skus.is_empty() || self.skus.contains(s)) && !self.exclude_skus.contains(s)
            }
        };
        let shop_passes = match &self.shop_id {
            None => true,
            Some(own) => shop == Some(own),
        };
        sku_passes && shop_passes
    }
}

/// What a partial refund does to a coupon's discount when the lines left
/// no longer reach its threshold (the HTTP contract's
/// `partial_refund_rule`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartialRefundRule {
    /// Each refunded line returns its payable share; the customer keeps
    /// the rest of the discount.
    #[default]
    Proportional,
    /// When the lines left fall below the threshold at list price, the
    /// discount still allocated to them is deducted from the refund.
    Clawback,
}

impl PartialRefundRule {
    pub const ALL: [PartialRefundRule; 2] =
        [PartialRefundRule::Proportional, PartialRefundRule::Clawback];

    /// The stored and API word.
    pub fn as_str(self) -> &'static str {
        match self {
            PartialRefundRule::Proportional => "proportional",
            PartialRefundRule::Clawback => "clawback",
        }
    }

    /// The word back as a rule; `None` for any other word.
    pub fn parse(s: &str) -> Option<Self> {
        PartialRefundRule::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The catalog key of the rule's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            PartialRefundRule::Proportional => "partial-refund-rule-proportional",
            PartialRefundRule::Clawback => "partial-refund-rule-clawback",
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
    /// SKUs and shop.
    pub scope: LineScope,
    /// What a partial refund does to the discount.
    pub refund_rule: PartialRefundRule,
    /// False: the coupon must be its order's only coupon.
    pub stackable: bool,
}

/// Why a coupon does not apply to an order's lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotApplicable {
    /// The eligible amount is below the coupon's minimum spend.
    ThresholdNotMet,
    /// No line of the order is eligible.
    NoEligibleLine,
}

impl CouponTerms {
    /// Whether the coupon may discount `line` (category, SKU, shop).
    pub fn covers(&self, line: &Line) -> bool {
        (self.categories.is_empty() || self.categories.contains(&line.category))
            && self.scope.passes(line.sku.as_ref(), line.shop_id.as_ref())
    }

    /// The eligible amount of `lines`: what the threshold and the discount
    /// are judged on; `None` when no line is eligible.
    pub fn eligible_amount(&self, lines: &[Line]) -> Option<Cents> {
        lines
            .iter()
            .filter(|l| self.covers(l))
            .fold(None, |sum: Option<Cents>, l| {
                Some(sum.unwrap_or(Cents::ZERO).saturating_add(l.amount()))
            })
    }

    /// The eligible amount when the coupon applies to `lines`, or why it
    /// does not: no eligible line first, then the threshold.
    pub fn check_applies(&self, lines: &[Line]) -> Result<Cents, NotApplicable> {
        let amount = self
            .eligible_amount(lines)
            .ok_or(NotApplicable::NoEligibleLine)?;
        if amount < self.min_order {
            return Err(NotApplicable::ThresholdNotMet);
        }
        Ok(amount)
    }

    /// The coupon's discount on `lines`, or why it does not apply.
    pub fn discount_on(&self, lines: &[Line]) -> Result<Cents, NotApplicable> {
        self.check_applies(lines).map(|a| self.rule.discount(a))
    }
}

/// Checks a list of SKUs (`skus` or `exclude_skus` of a template):
/// bounded count, each a valid SKU, repeats dropped.
pub fn parse_skus(field: &'static str, raw: Option<Vec<String>>) -> Result<Vec<Sku>, FieldError> {
    let list = raw.unwrap_or_default();
    if list.len() > MAX_SKUS {
        return Err(FieldError::new(field, format!("at most {MAX_SKUS} SKUs")));
    }
    let mut out: Vec<Sku> = Vec::with_capacity(list.len());
    for s in list {
        let sku = Sku::parse(&s).map_err(|e| FieldError::new(field, e.message))?;
        if !out.contains(&sku) {
            out.push(sku);
        }
    }
    Ok(out)
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

    fn one(category: &str, total: i64) -> Vec<Line> {
        vec![Line::whole_order(category.into(), c(total))]
    }

    fn line(id: &str, sku: Option<&str>, category: &str, shop: Option<&str>, cents: i64) -> Line {
        Line {
            line_id: id.into(),
            sku: sku.map(Sku::from),
            category: category.into(),
            shop_id: shop.map(ShopId::from),
            quantity: 1,
            unit_price: c(cents),
        }
    }

    fn shoes_300_minus_50() -> CouponTerms {
        CouponTerms {
            rule: DiscountRule::Fixed { value: c(5000) },
            min_order: c(30000),
            categories: vec!["shoes".into()],
            scope: LineScope::default(),
            refund_rule: PartialRefundRule::Proportional,
            stackable: true,
        }
    }

    #[test]
    fn threshold_and_category_decide_applicability() {
        let terms = shoes_300_minus_50();
        assert_eq!(terms.check_applies(&one("shoes", 30000)), Ok(c(30000)));
        assert_eq!(
            terms.check_applies(&one("shoes", 29999)),
            Err(NotApplicable::ThresholdNotMet)
        );
        assert_eq!(
            terms.check_applies(&one("food", 30000)),
            Err(NotApplicable::NoEligibleLine)
        );
        let anywhere = CouponTerms {
            categories: vec![],
            ..terms
        };
        assert_eq!(anywhere.check_applies(&one("food", 30000)), Ok(c(30000)));
    }

    #[test]
    fn the_threshold_and_the_discount_are_judged_on_the_eligible_lines_only() {
        let terms = CouponTerms {
            rule: DiscountRule::Percent {
                percent_off: 10,
                max_discount: None,
            },
            ..shoes_300_minus_50()
        };
        let cart = vec![
            line("1", None, "shoes", None, 20000),
            line("2", None, "food", None, 90000),
            line("3", None, "shoes", None, 10000),
        ];
        assert_eq!(terms.check_applies(&cart), Ok(c(30000)));
        assert_eq!(
            terms.discount_on(&cart),
            Ok(c(3000)),
            "10% of 300, not of 1200"
        );
        assert_eq!(
            terms.check_applies(&cart[..2]),
            Err(NotApplicable::ThresholdNotMet),
            "food does not count toward a shoes threshold"
        );
    }

    #[test]
    fn skus_exclusions_and_the_shop_narrow_the_eligible_lines() {
        let scoped = CouponTerms {
            categories: vec![],
            min_order: c(0),
            scope: LineScope {
                skus: vec![],
                exclude_skus: vec![Sku::from("X")],
                shop_id: Some(ShopId::from("shop-a")),
            },
            ..shoes_300_minus_50()
        };
        assert!(scoped.covers(&line("1", Some("Y"), "any", Some("shop-a"), 1)));
        assert!(
            !scoped.covers(&line("1", Some("X"), "any", Some("shop-a"), 1)),
            "excluded"
        );
        assert!(
            !scoped.covers(&line("1", Some("Y"), "any", Some("shop-b"), 1)),
            "other shop"
        );
        assert!(
            !scoped.covers(&line("1", Some("Y"), "any", None, 1)),
            "no shop"
        );
        assert!(
            !scoped.covers(&line("1", None, "any", Some("shop-a"), 1)),
            "a line without a SKU passes only empty lists"
        );
        let only = CouponTerms {
            scope: LineScope {
                skus: vec![Sku::from("A")],
                ..LineScope::default()
            },
            ..scoped.clone()
        };
        assert!(
            only.covers(&line("1", Some("A"), "any", Some("shop-z"), 1)),
            "platform"
        );
        assert!(!only.covers(&line("1", Some("B"), "any", None, 1)));
        let platform = CouponTerms {
            scope: LineScope::default(),
            ..scoped
        };
        assert!(platform.covers(&line("1", None, "any", None, 1)));
    }

    #[test]
    fn sku_lists_are_checked_deduplicated_and_bounded() {
        assert_eq!(
            parse_skus("skus", Some(vec!["A".into(), "A".into(), "B".into()])),
            Ok(vec![Sku::from("A"), Sku::from("B")])
        );
        assert_eq!(
            parse_skus("exclude_skus", Some(vec!["a b".into()]))
                .unwrap_err()
                .field,
            "exclude_skus"
        );
        assert!(parse_skus("skus", Some(vec!["s".into(); MAX_SKUS + 1])).is_err());
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

    mod most_gain {
        use super::*;
        use proptest::prelude::*;

        #[test]
        fn a_fixed_amount_grows_only_until_the_base_reaches_it() {
            let r = DiscountRule::Fixed { value: c(1_000) };
            assert_eq!(r.most_gain(c(400), c(300)), c(300));
            assert_eq!(r.most_gain(c(900), c(300)), c(100));
            assert_eq!(r.most_gain(c(1_000), c(5_000)), c(0));
        }

        #[test]
        fn a_capped_percentage_grows_by_its_rate_until_the_cap() {
            let r = DiscountRule::Percent {
                percent_off: 10,
                max_discount: Some(c(500)),
            };
            // 10% of 30.00, rounded up for the floor on either side.
            assert_eq!(r.most_gain(c(1_000), c(3_000)), c(300));
            assert_eq!(r.most_gain(c(1_000), c(3_001)), c(301));
            // 4.50 given at 45.00: 0.50 left under the cap.
            assert_eq!(r.most_gain(c(4_500), c(3_000)), c(50));
            assert_eq!(r.most_gain(c(9_000), c(3_000)), c(0));
        }

        fn rule() -> impl Strategy<Value = DiscountRule> {
            prop_oneof![
                (0i64..10_000).prop_map(|v| DiscountRule::Fixed { value: c(v) }),
                (0u8..=100, proptest::option::of(0i64..10_000)).prop_map(|(p, cap)| {
                    DiscountRule::Percent {
                        percent_off: p,
                        max_discount: cap.map(c),
                    }
                }),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]

            /// No base at or above `from` grows by more than the bound.
            #[test]
            fn the_bound_holds_for_every_base_above_from(
                r in rule(),
                from in 0i64..50_000,
                above in 0i64..50_000,
                by in 0i64..50_000,
            ) {
                let b = c(from + above);
                let grew = r.discount(c(from + above + by)).saturating_sub(r.discount(b));
                prop_assert!(grew <= r.most_gain(c(from), c(by)), "{r:?} from {from} +{above} by {by}: grew {grew:?}");
            }
        }
    }
}
