//! The coupon picker (选券): the one rule that says whether a coupon can go on an
//! order and for how much, and the picker built on it.
//!
//! [`discount_on_order`] is called by order creation, by the deposit
//! payment and by the picker alike, so the picker's discount is exactly
//! what the order snapshots and its reason is exactly the order's refusal.
//! [`pick`] sorts a customer's coupons for a cart: usable ones by discount
//! (largest first), then by end (soonest first, so the coupon that would
//! die first is spent first); the best is the first without a warning.

use chrono::{DateTime, Utc};

use super::campaign::Policy;
use super::coupon::{CouponStatus, Unusable, check_usable};
use super::discount::{CouponTerms, NotApplicable};
use super::line::Line;
use super::money::Cents;
use super::order::{OrderKind, presale_discount_cap};
use super::reminder::ends_before_window;

/// The parts of an order that decide a coupon's discount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderTerms<'a> {
    pub kind: OrderKind,
    /// At least one line.
    pub lines: &'a [Line],
    /// Σ of the lines' amounts.
    pub total: Cents,
    /// Zero for a normal order.
    pub deposit: Cents,
}

impl OrderTerms<'_> {
    /// The most all of the order's coupons may take off together: the
    /// total for a normal order, what the deposit leaves for a presale one.
    pub fn discount_cap(&self) -> Cents {
        match self.kind {
            OrderKind::Presale => presale_discount_cap(self.total, self.deposit),
            OrderKind::Normal => self.total,
        }
    }
}

/// A coupon as the rule reads it at one moment.
#[derive(Debug, Clone, Copy)]
pub struct CouponOnOrder<'a> {
    /// Whether the order's customer holds the coupon.
    pub owner_matches: bool,
    pub stored: CouponStatus,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub terms: &'a CouponTerms,
}

/// Why a coupon cannot go on an order; each is one refusal of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfit {
    /// Owner, status or validity window (`coupon_not_owned`,
    /// `coupon_not_available`, `coupon_expired`, `coupon_not_started`).
    Unusable(Unusable),
    /// `threshold_not_met`: the order lacks `shortfall` to reach the
    /// coupon's minimum spend.
    ThresholdNotMet { shortfall: Cents },
    /// `coupon_not_applicable`: no line of the order is eligible
    /// (category, SKU, shop).
    NoEligibleLine,
}

/// The discount `coupon` gives on `order` at `now`, or why it cannot be
/// used. Checks in the order the API refuses in: owner, status, start,
/// an eligible line, the threshold on the eligible amount. The discount is
/// the coupon's rule on the eligible amount; a presale order's is capped
/// so that the deposit and the discount never exceed the total.
pub fn discount_on_order(
    coupon: &CouponOnOrder<'_>,
    order: &OrderTerms<'_>,
    now: DateTime<Utc>,
) -> Result<Cents, Unfit> {
    check_usable(
        coupon.owner_matches,
        coupon.stored,
        coupon.starts_at,
        coupon.ends_at,
        now,
    )
    .map_err(Unfit::Unusable)?;
    let eligible = coupon
        .terms
        .check_applies(order.lines)
        .map_err(|n| match n {
            NotApplicable::ThresholdNotMet => Unfit::ThresholdNotMet {
                shortfall: coupon.terms.min_order.saturating_sub(
                    coupon
                        .terms
                        .eligible_amount(order.lines)
                        .unwrap_or(Cents::ZERO),
                ),
            },
            NotApplicable::NoEligibleLine => Unfit::NoEligibleLine,
        })?;
    let discount = coupon.terms.rule.discount(eligible);
    Ok(match order.kind {
        OrderKind::Presale => discount.min(presale_discount_cap(order.total, order.deposit)),
        OrderKind::Normal => discount,
    })
}

/// What a presale campaign means for a coupon put on its deposit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresaleTerms {
    pub policy: Policy,
    pub final_payment_starts: DateTime<Utc>,
}

/// A caution the customer should read before paying a deposit with a
/// coupon; the coupon is still usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Warning {
    /// `strict`: the coupon ends before the final payment opens, so the
    /// final payment gets no discount from it.
    ExpiresBeforeFinalPayment,
    /// `swap_or_compensate`: the coupon ends before the final payment
    /// opens, so it will be swapped for another of the customer's coupons
    /// or compensated.
    MayBeReplacedAtFinalPayment,
}

impl Warning {
    /// The API's `warning.code`.
    pub fn code(self) -> &'static str {
        match self {
            Warning::ExpiresBeforeFinalPayment => "expires_before_final_payment",
            Warning::MayBeReplacedAtFinalPayment => "may_be_replaced_at_final_payment",
        }
    }

    /// The catalog key of the customer's message.
    pub fn message_key(self) -> &'static str {
        match self {
            Warning::ExpiresBeforeFinalPayment => "picker-warning-expires_before_final_payment",
            Warning::MayBeReplacedAtFinalPayment => {
                "picker-warning-may_be_replaced_at_final_payment"
            }
        }
    }
}

/// The warning for a coupon ending at `ends_at` on a deposit of a campaign
/// with `presale` terms: only when it ends before the window opens (the
/// same instant rule as the strict reminder), and never under `lock`.
pub fn presale_warning(presale: &PresaleTerms, ends_at: DateTime<Utc>) -> Option<Warning> {
    if !ends_before_window(ends_at, presale.final_payment_starts) {
        return None;
    }
    match presale.policy {
        Policy::Lock => None,
        Policy::Strict => Some(Warning::ExpiresBeforeFinalPayment),
        Policy::SwapOrCompensate => Some(Warning::MayBeReplacedAtFinalPayment),
    }
}

/// One usable coupon: its index in the input, its discount, its warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub index: usize,
    pub discount: Cents,
    pub warning: Option<Warning>,
}

/// One coupon that cannot go on the cart: its index and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Misfit {
    pub index: usize,
    pub unfit: Unfit,
}

/// The picker's answer, by index into the coupons it was given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Picked {
    /// Largest discount first, then the earliest end, then input order.
    pub usable: Vec<Fit>,
    /// In input order.
    pub unusable: Vec<Misfit>,
    /// The first usable coupon without a warning.
    pub best: Option<usize>,
}

/// Sorts `coupons` (a customer's coupons whose effective status is
/// `available`) for the cart `order`. A coupon the order would refuse for
/// its owner, status or end is left out: the picker covers only coupons
/// the customer can still spend, and those reasons are not about the cart.
pub fn pick(
    coupons: &[CouponOnOrder<'_>],
    order: &OrderTerms<'_>,
    presale: Option<&PresaleTerms>,
    now: DateTime<Utc>,
) -> Picked {
    let mut out = Picked::default();
    for (index, coupon) in coupons.iter().enumerate() {
        match discount_on_order(coupon, order, now) {
            Ok(discount) => out.usable.push(Fit {
                index,
                discount,
                warning: presale.and_then(|p| presale_warning(p, coupon.ends_at)),
            }),
            Err(Unfit::Unusable(Unusable::NotStarted)) => out.unusable.push(Misfit {
                index,
                unfit: Unfit::Unusable(Unusable::NotStarted),
            }),
            Err(Unfit::Unusable(_)) => {}
            Err(unfit) => out.unusable.push(Misfit { index, unfit }),
        }
    }
    // Stable: equal discounts and ends keep the input order.
    out.usable.sort_by(|a, b| {
        b.discount
            .cmp(&a.discount)
            .then_with(|| coupons[a.index].ends_at.cmp(&coupons[b.index].ends_at))
    });
    out.best = out
        .usable
        .iter()
        .find(|f| f.warning.is_none())
        .map(|f| f.index);
    out
}

/// The usable coupons of a cart that end within a window from now: what a
/// cart's "2 张券即将过期" banner says, so that the customer spends them
/// before they are lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpiringSoon {
    pub count: usize,
    /// The first of their ends; `None` when there are none.
    pub earliest_ends_at: Option<DateTime<Utc>>,
    /// Their discounts on this cart together.
    pub total_value: Cents,
}

/// Of `usable` (each usable coupon's end and discount on the cart), the
/// ones that end no later than `now + window`. A usable coupon has not
/// ended, so each counted one ends after `now`.
pub fn expiring_soon(
    usable: impl IntoIterator<Item = (DateTime<Utc>, Cents)>,
    now: DateTime<Utc>,
    window: chrono::Duration,
) -> ExpiringSoon {
    let until = now + window;
    usable
        .into_iter()
        .filter(|(ends_at, _)| *ends_at <= until)
        .fold(
            ExpiringSoon {
                count: 0,
                earliest_ends_at: None,
                total_value: Cents::ZERO,
            },
            |acc, (ends_at, discount)| ExpiringSoon {
                count: acc.count + 1,
                earliest_ends_at: Some(acc.earliest_ends_at.map_or(ends_at, |e| e.min(ends_at))),
                total_value: acc.total_value.saturating_add(discount),
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::discount::DiscountRule;
    use chrono::Duration;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).expect("valid")
    }

    fn c(v: i64) -> Cents {
        Cents::from_stored(v)
    }

    fn fixed(value: i64, min_order: i64, categories: &[&str]) -> CouponTerms {
        CouponTerms {
            rule: DiscountRule::Fixed { value: c(value) },
            min_order: c(min_order),
            categories: categories.iter().map(|s| s.to_string()).collect(),
            scope: Default::default(),
            refund_rule: Default::default(),
            stackable: true,
        }
    }

    fn one_line(total: i64, category: &str) -> Vec<Line> {
        vec![Line::whole_order(category.to_string(), c(total))]
    }

    fn on<'a>(terms: &'a CouponTerms, ends_in_s: i64) -> CouponOnOrder<'a> {
        CouponOnOrder {
            owner_matches: true,
            stored: CouponStatus::Available,
            starts_at: now() - Duration::days(1),
            ends_at: now() + Duration::seconds(ends_in_s),
            terms,
        }
    }

    fn normal(lines: &[Line]) -> OrderTerms<'_> {
        OrderTerms {
            kind: OrderKind::Normal,
            lines,
            total: lines
                .iter()
                .map(Line::amount)
                .fold(Cents::ZERO, Cents::saturating_add),
            deposit: Cents::ZERO,
        }
    }

    #[test]
    fn the_shortfall_is_what_the_cart_lacks_to_reach_the_threshold() {
        let t = fixed(5_000, 30_000, &[]);
        assert_eq!(
            discount_on_order(&on(&t, 60), &normal(&one_line(28_000, "x")), now()),
            Err(Unfit::ThresholdNotMet {
                shortfall: c(2_000)
            })
        );
        // At the threshold exactly, it applies.
        assert_eq!(
            discount_on_order(&on(&t, 60), &normal(&one_line(30_000, "x")), now()),
            Ok(c(5_000))
        );
    }

    #[test]
    fn the_shortfall_and_the_discount_count_only_the_eligible_lines() {
        let t = CouponTerms {
            rule: DiscountRule::Percent {
                percent_off: 10,
                max_discount: None,
            },
            ..fixed(0, 30_000, &["shoes"])
        };
        let mut lines = one_line(20_000, "shoes");
        lines.push(Line {
            line_id: "2".into(),
            ..Line::whole_order("food".into(), c(50_000))
        });
        assert_eq!(
            discount_on_order(&on(&t, 60), &normal(&lines), now()),
            Err(Unfit::ThresholdNotMet {
                shortfall: c(10_000)
            })
        );
        lines.push(Line {
            line_id: "3".into(),
            ..Line::whole_order("shoes".into(), c(15_000))
        });
        assert_eq!(
            discount_on_order(&on(&t, 60), &normal(&lines), now()),
            Ok(c(3_500))
        );
    }

    #[test]
    fn a_presale_discount_never_exceeds_what_is_left_after_the_deposit() {
        let t = fixed(5_000, 0, &[]);
        let lines = one_line(10_000, "x");
        let order = OrderTerms {
            kind: OrderKind::Presale,
            lines: &lines,
            total: c(10_000),
            deposit: c(8_000),
        };
        assert_eq!(discount_on_order(&on(&t, 60), &order, now()), Ok(c(2_000)));
    }

    #[test]
    fn the_order_of_checks_is_the_order_of_refusals() {
        // Not started and below the threshold: the start is refused first,
        // as POST /orders does.
        let t = fixed(5_000, 30_000, &["phones"]);
        let mut early = on(&t, 60);
        early.starts_at = now() + Duration::hours(1);
        assert_eq!(
            discount_on_order(&early, &normal(&one_line(100, "shoes")), now()),
            Err(Unfit::Unusable(Unusable::NotStarted))
        );
        // Below the threshold and the wrong category: no line is
        // eligible, which the contract answers `coupon_not_applicable`
        // (a shortfall would ask for more of what the coupon cannot cover).
        assert_eq!(
            discount_on_order(&on(&t, 60), &normal(&one_line(100, "shoes")), now()),
            Err(Unfit::NoEligibleLine)
        );
        assert_eq!(
            discount_on_order(&on(&t, 60), &normal(&one_line(40_000, "shoes")), now()),
            Err(Unfit::NoEligibleLine)
        );
    }

    #[test]
    fn usable_coupons_sort_by_discount_then_the_soonest_end_and_the_best_has_no_warning() {
        let big = fixed(5_000, 0, &[]);
        let small = fixed(1_000, 0, &[]);
        let tiny = fixed(1, 0, &[]);
        let coupons = [
            on(&small, 100), // 0
            on(&big, 5_000), // 1: big, ends later
            on(&big, 100),   // 2: big, ends sooner
            on(&tiny, 1),    // 3: ends soonest, tiny
        ];
        let p = pick(&coupons, &normal(&one_line(10_000, "x")), None, now());
        let order: Vec<usize> = p.usable.iter().map(|f| f.index).collect();
        assert_eq!(order, vec![2, 1, 0, 3]);
        assert_eq!(p.best, Some(2));
    }

    #[test]
    fn under_strict_a_coupon_ending_before_the_window_is_usable_but_never_best() {
        let big = fixed(5_000, 0, &[]);
        let small = fixed(1_000, 0, &[]);
        let coupons = [on(&big, 60), on(&small, 7_200)];
        let lines = one_line(20_000, "x");
        let order = OrderTerms {
            kind: OrderKind::Presale,
            lines: &lines,
            total: c(20_000),
            deposit: c(2_000),
        };
        let window = now() + Duration::hours(1);
        let strict = PresaleTerms {
            policy: Policy::Strict,
            final_payment_starts: window,
        };
        let p = pick(&coupons, &order, Some(&strict), now());
        assert_eq!(p.usable[0].index, 0);
        assert_eq!(
            p.usable[0].warning,
            Some(Warning::ExpiresBeforeFinalPayment)
        );
        assert_eq!(p.usable[1].warning, None);
        assert_eq!(p.best, Some(1));

        let swap = PresaleTerms {
            policy: Policy::SwapOrCompensate,
            ..strict
        };
        let p = pick(&coupons, &order, Some(&swap), now());
        assert_eq!(
            p.usable[0].warning,
            Some(Warning::MayBeReplacedAtFinalPayment)
        );
        let lock = PresaleTerms {
            policy: Policy::Lock,
            ..strict
        };
        let p = pick(&coupons, &order, Some(&lock), now());
        assert!(p.usable.iter().all(|f| f.warning.is_none()));
        assert_eq!(p.best, Some(0));
    }

    #[test]
    fn a_coupon_ending_exactly_when_the_window_opens_is_warned_about() {
        let strict = PresaleTerms {
            policy: Policy::Strict,
            final_payment_starts: now() + Duration::hours(1),
        };
        assert_eq!(
            presale_warning(&strict, now() + Duration::hours(1)),
            Some(Warning::ExpiresBeforeFinalPayment)
        );
        assert_eq!(
            presale_warning(
                &strict,
                now() + Duration::hours(1) + Duration::milliseconds(1)
            ),
            None
        );
    }

    #[test]
    fn coupons_the_customer_can_no_longer_spend_are_left_out() {
        let t = fixed(1_000, 0, &[]);
        let mut ended = on(&t, 0);
        ended.ends_at = now();
        let mut used = on(&t, 60);
        used.stored = CouponStatus::Used;
        let mut early = on(&t, 60);
        early.starts_at = now() + Duration::minutes(5);
        let p = pick(
            &[ended, used, early],
            &normal(&one_line(10_000, "x")),
            None,
            now(),
        );
        assert!(p.usable.is_empty());
        assert_eq!(
            p.unusable,
            vec![Misfit {
                index: 2,
                unfit: Unfit::Unusable(Unusable::NotStarted)
            }]
        );
        assert_eq!(p.best, None);
    }

    #[test]
    fn expiring_soon_counts_the_coupons_ending_within_the_window_and_sums_their_discounts() {
        let window = Duration::hours(48);
        let at = |h: i64| now() + Duration::hours(h);
        let soon = expiring_soon(
            [
                (at(49), c(100)),
                (at(47), c(300)),
                (at(2), c(500)),
                (at(48), c(7)),
            ],
            now(),
            window,
        );
        assert_eq!(
            soon,
            ExpiringSoon {
                count: 3,
                earliest_ends_at: Some(at(2)),
                total_value: c(807),
            }
        );
        assert_eq!(
            expiring_soon([(at(49), c(100))], now(), window),
            ExpiringSoon {
                count: 0,
                earliest_ends_at: None,
                total_value: Cents::ZERO,
            }
        );
    }
}
