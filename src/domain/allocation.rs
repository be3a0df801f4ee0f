//! The discount split over an order's lines (优惠分摊): the one function
//! that divides a coupon's discount into whole cents per line
//! ([`split`]). The picker, order creation, the deposit payment, the final
//! payment and refunds all call it, so a line's share is the same wherever
//! it is shown or refunded.
//!
//! The rule (the HTTP contract's "Allocation"): each eligible line gets the
//! discount in proportion to its amount, rounded down to a whole cent; the
//! cents the rounding left over go one each to the lines with the largest
//! remainders, the earlier line first on a tie (the largest-remainder, or
//! Hamilton, method). The parts add up exactly to the discount, and no line
//! gets more than its amount as long as the discount is at most the lines'
//! total, which every discount is (a coupon never takes off more than the
//! amount it is judged on).

use super::discount::CouponTerms;
use super::line::Line;
use super::money::Cents;

/// One coupon's split over an order's lines: for each line, in order,
/// `Some(share)` when the coupon covers the line (a share may be zero
/// cents), `None` when it does not.
pub type Split = Vec<Option<Cents>>;

/// Splits `discount` (a coupon's discount on `lines`) over the lines its
/// `terms` cover, by [`split`].
pub fn allocate(terms: &CouponTerms, lines: &[Line], discount: Cents) -> Split {
    let covered: Vec<bool> = lines.iter().map(|l| terms.covers(l)).collect();
    let amounts: Vec<Cents> = lines
        .iter()
        .zip(&covered)
        .filter(|(_, c)| **c)
        .map(|(l, _)| l.amount())
        .collect();
    let mut parts = split(discount, &amounts).into_iter();
    covered
        .into_iter()
        .map(|c| if c { parts.next() } else { None })
        .collect()
}

/// Splits `discount` over lines of the given `amounts` by largest
/// remainder. One part per amount, in the same order. A discount above the
/// amounts' total (which no caller passes) is split as the total, so no
/// line is ever given more than its amount; with no amount, or a zero
/// total, every part is zero.
pub fn split(discount: Cents, amounts: &[Cents]) -> Vec<Cents> {
    let total: i128 = amounts.iter().map(|a| i128::from(a.get())).sum();
    if total == 0 {
        return vec![Cents::ZERO; amounts.len()];
    }
    let discount = i128::from(discount.get()).min(total);
    // discount <= total and each amount <= MAX_CENTS (1e12), so every
    // product fits in i128 with room to spare.
    let mut parts: Vec<i128> = Vec::with_capacity(amounts.len());
    let mut remainders: Vec<(i128, usize)> = Vec::with_capacity(amounts.len());
    for (i, a) in amounts.iter().enumerate() {
        let product = discount * i128::from(a.get());
        parts.push(product / total);
        remainders.push((product % total, i));
    }
    let handed_out: i128 = parts.iter().sum();
    // Fewer than the number of lines with a non-zero remainder: the
    // remainders sum to `left * total` and each is below `total`.
    let left = usize::try_from(discount - handed_out).unwrap_or(0);
    // Largest remainder first; on a tie the earlier line.
    remainders.sort_by(|(ra, ia), (rb, ib)| rb.cmp(ra).then(ia.cmp(ib)));
    for &(_, i) in remainders.iter().take(left) {
        parts[i] += 1;
    }
    parts
        .into_iter()
        .map(|p| Cents::from_stored(i64::try_from(p).unwrap_or(0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn c(v: i64) -> Cents {
        Cents::from_stored(v)
    }

    fn cents(v: &[i64]) -> Vec<Cents> {
        v.iter().copied().map(c).collect()
    }

    #[test]
    fn only_the_lines_a_coupon_covers_get_a_share() {
        use crate::domain::discount::{DiscountRule, LineScope, PartialRefundRule};
        let terms = CouponTerms {
            rule: DiscountRule::Fixed { value: c(1000) },
            min_order: c(0),
            categories: vec!["beauty".into()],
            scope: LineScope::default(),
            refund_rule: PartialRefundRule::Proportional,
            stackable: true,
        };
        let line = |id: &str, category: &str, cents: i64| Line {
            line_id: id.into(),
            ..Line::whole_order(category.into(), c(cents))
        };
        let lines = [
            line("1", "beauty", 3000),
            line("2", "food", 5000),
            line("3", "beauty", 1),
        ];
        assert_eq!(
            allocate(&terms, &lines, c(1000)),
            vec![Some(c(1000)), None, Some(c(0))],
            "999.67 and 0.33: the cent goes to the larger remainder"
        );
    }

    #[test]
    fn a_discount_is_split_in_proportion_to_the_line_amounts() {
        assert_eq!(
            split(c(5000), &cents(&[20000, 10000])),
            cents(&[3333, 1667]),
            "3333.33 and 1666.67: the larger remainder gets the cent"
        );
        assert_eq!(split(c(300), &cents(&[100, 200])), cents(&[100, 200]));
    }

    #[test]
    fn leftover_cents_go_to_the_earlier_line_on_a_tie() {
        assert_eq!(split(c(2), &cents(&[1, 1, 1])), cents(&[1, 1, 0]));
        assert_eq!(split(c(2), &cents(&[100, 100, 100])), cents(&[1, 1, 0]));
        assert_eq!(split(c(1), &cents(&[100, 100, 100])), cents(&[1, 0, 0]));
    }

    #[test]
    fn a_line_of_zero_gets_nothing_and_an_empty_order_gets_nothing() {
        assert_eq!(split(c(50), &cents(&[0, 100, 0])), cents(&[0, 50, 0]));
        assert_eq!(split(c(50), &cents(&[0, 0])), cents(&[0, 0]));
        assert_eq!(split(c(50), &[]), Vec::<Cents>::new());
    }

    #[test]
    fn a_discount_above_the_total_is_split_as_the_total() {
        assert_eq!(split(c(999), &cents(&[10, 20])), cents(&[10, 20]));
    }

    #[test]
    fn the_largest_amounts_do_not_overflow() {
        let max = crate::domain::money::MAX_CENTS;
        assert_eq!(
            split(c(max), &cents(&[max / 2, max / 2])),
            cents(&[max / 2, max / 2])
        );
        let parts = split(c(max - 1), &cents(&[max / 3, max / 3, max / 3 + 1]));
        assert_eq!(parts.iter().map(|p| p.get()).sum::<i64>(), max - 1);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn the_parts_add_up_exactly_and_no_line_gets_more_than_its_amount(
            amounts in prop::collection::vec(0i64..=10_000_000, 1..=50),
            fraction in 0u32..=1000,
        ) {
            let total: i64 = amounts.iter().sum();
            let discount = total * i64::from(fraction) / 1000;
            let parts = split(c(discount), &cents(&amounts));
            prop_assert_eq!(parts.len(), amounts.len());
            prop_assert_eq!(parts.iter().map(|p| p.get()).sum::<i64>(), discount);
            for (p, a) in parts.iter().zip(&amounts) {
                prop_assert!(p.get() <= *a, "part {} over amount {}", p.get(), a);
                // Within one cent of the exact proportional share.
                let exact = i128::from(discount) * i128::from(*a);
                let lo = exact / i128::from(total.max(1));
                prop_assert!(i128::from(p.get()) == lo || i128::from(p.get()) == lo + 1);
            }
        }
    }
}
