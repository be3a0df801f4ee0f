//! Partial refunds (部分退款): what refunding some units of some lines gives
//! back, what it claws back, and which coupons come back
//! ([`plan_refund`]); and a refund request as the API sends it
//! ([`RefundInput`]) and once checked ([`RefundSpec`]).
//!
//! The money rule (the HTTP contract's "Partial refunds"): refunding `q`
//! more units of a line of `n` units, `r` of them refunded before, returns
//! `floor(payable × (r+q) / n) − floor(payable × r / n)` of the line's
//! payable amount ([`units_share`]). Summed over a line's refunds the
//! floors telescope, so refunding every unit returns exactly the line's
//! payable amount, whatever the order of the refunds: no cent is lost or
//! made.

use std::collections::HashSet;

use super::FieldError;
use super::discount::PartialRefundRule;
use super::ids::{LineId, RefundId};
use super::line::{MAX_LINES, MAX_QUANTITY, line_field};
use super::money::Cents;
use super::reason::parse_reason;

/// `floor(x × (r+q) / n) − floor(x × r / n)`: the part of `x` that `q`
/// more units of `n` carry when `r` went before. Zero for a line of no
/// units; `r + q` beyond `n` counts as `n`.
pub fn units_share(x: Cents, n: i64, r: i64, q: i64) -> Cents {
    if n <= 0 {
        return Cents::ZERO;
    }
    let upto = |k: i64| -> i128 {
        let k = i128::from(k.clamp(0, n));
        i128::from(x.get()) * k / i128::from(n)
    };
    let part = upto(r.saturating_add(q)) - upto(r);
    Cents::from_stored(i64::try_from(part).unwrap_or(0))
}

/// A line's money as it stands before a refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineBook {
    pub quantity: i64,
    pub refunded_quantity: i64,
    pub unit_price: Cents,
    /// The line's amount less every coupon's share of it.
    pub payable: Cents,
    /// Every coupon's share of the line, summed.
    pub discount: Cents,
}

impl LineBook {
    pub fn units_left(&self) -> i64 {
        (self.quantity - self.refunded_quantity).max(0)
    }
}

/// A coupon spent on the order (its lock `used`), as a refund reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponBook {
    pub refund_rule: PartialRefundRule,
    pub min_order: Cents,
    /// `(line index, share)` for every line the coupon covers; a share may
    /// be zero cents.
    pub shares: Vec<(usize, Cents)>,
    /// An earlier refund already clawed this coupon's discount back.
    pub clawed_back: bool,
}

/// The lines whose units keep a coupon on its order, of its `shares`
/// (`(line index, share)` for every line it covers): those it discounted
/// (a share above zero), or every line it covers when it discounted none.
/// The refund returns the coupon when their last unit is refunded; the
/// health check and reconciliation count the same units.
pub fn holding_lines(shares: &[(usize, Cents)]) -> impl Iterator<Item = usize> + '_ {
    let any_share = shares.iter().any(|(_, s)| !s.is_zero());
    shares
        .iter()
        .filter(move |(_, s)| !any_share || !s.is_zero())
        .map(|(i, _)| *i)
}

impl CouponBook {
    /// [`holding_lines`] of this coupon.
    fn holding_lines(&self) -> impl Iterator<Item = usize> + '_ {
        holding_lines(&self.shares)
    }
}

/// What a refund does to one coupon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CouponRefundOutcome {
    /// Some unit it discounted is still kept by the customer: it stays
    /// `used`.
    Kept,
    /// Every unit it discounted is refunded: it goes back to its user
    /// (`available` while valid, else `expired`).
    Returned,
}

impl CouponRefundOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CouponRefundOutcome::Kept => "kept",
            CouponRefundOutcome::Returned => "returned",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "kept" => Some(CouponRefundOutcome::Kept),
            "returned" => Some(CouponRefundOutcome::Returned),
            _ => None,
        }
    }
}

/// One refunded line of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefundLinePlan {
    /// Index into the order's lines.
    pub index: usize,
    pub quantity: i64,
    /// Of the line's payable amount.
    pub refund: Cents,
    /// Of the line's discount (information for the shop).
    pub discount: Cents,
}

/// One coupon of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CouponRefundPlan {
    pub outcome: CouponRefundOutcome,
    pub clawback: Cents,
    /// The coupon's share of the refunded units, by the floor formula over
    /// its share of each line: summed over every refund of a line, exactly
    /// its share of the line.
    pub discount: Cents,
}

/// A decided refund.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundPlan {
    pub lines: Vec<RefundLinePlan>,
    /// One per coupon given, in the same order.
    pub coupons: Vec<CouponRefundPlan>,
    /// The lines' refunds summed.
    pub lines_refund: Cents,
    pub clawback: Cents,
    /// What the customer gets back: `lines_refund − clawback`.
    pub refund: Cents,
    /// Every unit of every line is refunded after this refund.
    pub order_fully_refunded: bool,
}

/// A quantity beyond what is left of a line (`refund_exceeds_order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefundExceedsOrder {
    /// Index into the order's lines.
    pub index: usize,
    pub left: i64,
}

/// Decides a refund of `request` (`(line index, quantity)`, each line once)
/// on an order whose lines stand at `lines`, with `coupons` spent on it.
/// Each coupon is `kept` until every unit it discounted is refunded, then
/// `returned`. Under `clawback`, when the units the customer keeps of a
/// coupon's lines no longer reach its threshold at list price, the
/// discount still allocated to them (`floor(share × units_left / n)` per
/// line) is deducted from this refund, at most what is left of it, once per
/// coupon.
pub fn plan_refund(
    lines: &[LineBook],
    coupons: &[CouponBook],
    request: &[(usize, i64)],
) -> Result<RefundPlan, RefundExceedsOrder> {
    let mut after: Vec<i64> = lines.iter().map(|l| l.refunded_quantity).collect();
    let mut planned = Vec::with_capacity(request.len());
    let mut lines_refund = Cents::ZERO;
    for &(index, quantity) in request {
        let Some(line) = lines.get(index) else {
            return Err(RefundExceedsOrder { index, left: 0 });
        };
        let left = line.units_left();
        if quantity > left || quantity <= 0 {
            return Err(RefundExceedsOrder { index, left });
        }
        let r = line.refunded_quantity;
        let refund = units_share(line.payable, line.quantity, r, quantity);
        planned.push(RefundLinePlan {
            index,
            quantity,
            refund,
            discount: units_share(line.discount, line.quantity, r, quantity),
        });
        after[index] = r + quantity;
        lines_refund = lines_refund.saturating_add(refund);
    }
    let units_left = |i: usize| (lines[i].quantity - after[i]).max(0);
    let mut clawback = Cents::ZERO;
    let mut outcomes = Vec::with_capacity(coupons.len());
    for coupon in coupons {
        let mut claw = Cents::ZERO;
        if coupon.refund_rule == PartialRefundRule::Clawback && !coupon.clawed_back {
            let kept_at_list = coupon.shares.iter().fold(Cents::ZERO, |sum, (i, _)| {
                sum.saturating_add(Cents::from_stored(
                    lines[*i].unit_price.get().saturating_mul(units_left(*i)),
                ))
            });
            if kept_at_list < coupon.min_order {
                let still = coupon.shares.iter().fold(Cents::ZERO, |sum, (i, share)| {
                    sum.saturating_add(units_share(*share, lines[*i].quantity, 0, units_left(*i)))
                });
                claw = still.min(lines_refund.saturating_sub(clawback));
            }
        }
        clawback = clawback.saturating_add(claw);
        let discount = request.iter().fold(Cents::ZERO, |sum, &(index, quantity)| {
            let share = coupon
                .shares
                .iter()
                .find(|(i, _)| *i == index)
                .map_or(Cents::ZERO, |(_, s)| *s);
            let line = &lines[index];
            sum.saturating_add(units_share(
                share,
                line.quantity,
                line.refunded_quantity,
                quantity,
            ))
        });
        let returned = coupon.holding_lines().all(|i| units_left(i) == 0);
        outcomes.push(CouponRefundPlan {
            outcome: if returned {
                CouponRefundOutcome::Returned
            } else {
                CouponRefundOutcome::Kept
            },
            clawback: claw,
            discount,
        });
    }
    Ok(RefundPlan {
        lines: planned,
        coupons: outcomes,
        lines_refund,
        clawback,
        refund: lines_refund.saturating_sub(clawback),
        order_fully_refunded: (0..lines.len()).all(|i| units_left(i) == 0),
    })
}

/// One line of a refund request, before checking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefundLineInput {
    pub line_id: Option<String>,
    pub quantity: Option<i64>,
}

/// A refund request as the API sends it, before checking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RefundInput {
    pub refund_id: Option<String>,
    pub lines: Option<Vec<RefundLineInput>>,
    pub reason: Option<String>,
}

/// A checked refund request: its id, 1-500 distinct lines with 1-9,999
/// units each, and a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundSpec {
    pub refund_id: RefundId,
    pub lines: Vec<(LineId, i64)>,
    pub reason: String,
}

impl RefundSpec {
    /// Checks a request in a fixed order (id, lines, reason), naming the
    /// first field at fault.
    pub fn parse(i: RefundInput) -> Result<RefundSpec, FieldError> {
        let refund_id = RefundId::parse(i.refund_id.as_deref().unwrap_or(""))?;
        let raw = i.lines.unwrap_or_default();
        if raw.is_empty() || raw.len() > MAX_LINES {
            return Err(FieldError::new(
                "lines",
                format!("must hold 1-{MAX_LINES} lines"),
            ));
        }
        let mut seen = HashSet::with_capacity(raw.len());
        let mut lines = Vec::with_capacity(raw.len());
        for (n, line) in raw.into_iter().enumerate() {
            let id = LineId::parse(line.line_id.as_deref().unwrap_or(""))
                .map_err(|e| FieldError::new(line_field(n, "line_id"), e.message))?;
            let quantity = match line.quantity {
                Some(q) if (1..=MAX_QUANTITY).contains(&q) => q,
                _ => {
                    return Err(FieldError::new(
                        line_field(n, "quantity"),
                        format!("must be between 1 and {MAX_QUANTITY}"),
                    ));
                }
            };
            if !seen.insert(id.clone()) {
                return Err(FieldError::new(
                    line_field(n, "line_id"),
                    format!("names a line twice: {id}"),
                ));
            }
            lines.push((id, quantity));
        }
        let reason = parse_reason(i.reason)?;
        Ok(RefundSpec {
            refund_id,
            lines,
            reason,
        })
    }

    /// Whether `other` asks for the same refund: the same lines and units,
    /// in any order, and the same reason.
    pub fn same_request(&self, lines: &[(LineId, i64)], reason: &str) -> bool {
        let mut a = self.lines.clone();
        let mut b = lines.to_vec();
        a.sort();
        b.sort();
        a == b && self.reason == reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn c(v: i64) -> Cents {
        Cents::from_stored(v)
    }

    fn book(quantity: i64, unit_price: i64, discount: i64) -> LineBook {
        LineBook {
            quantity,
            refunded_quantity: 0,
            unit_price: c(unit_price),
            payable: c(quantity * unit_price - discount),
            discount: c(discount),
        }
    }

    #[test]
    fn one_unit_of_three_returns_the_floor_of_a_third_and_the_last_unit_the_rest() {
        let p = c(1000);
        assert_eq!(units_share(p, 3, 0, 1), c(333));
        assert_eq!(units_share(p, 3, 1, 1), c(333));
        assert_eq!(units_share(p, 3, 2, 1), c(334));
        assert_eq!(units_share(p, 3, 0, 3), c(1000));
        assert_eq!(
            units_share(p, 3, 2, 5),
            c(334),
            "past the end counts as the end"
        );
        assert_eq!(units_share(p, 0, 0, 1), c(0));
    }

    #[test]
    fn a_coupon_is_kept_until_every_unit_it_discounted_is_refunded() {
        let lines = [book(2, 5000, 1000), book(1, 3000, 0)];
        let coupon = CouponBook {
            refund_rule: PartialRefundRule::Proportional,
            min_order: c(0),
            shares: vec![(0, c(1000))],
            clawed_back: false,
        };
        let first = plan_refund(&lines, std::slice::from_ref(&coupon), &[(0, 1)]).unwrap();
        assert_eq!(first.lines[0].refund, c(4500));
        assert_eq!(first.lines[0].discount, c(500));
        assert_eq!(first.coupons[0].outcome, CouponRefundOutcome::Kept);
        assert!(!first.order_fully_refunded);
        let mut after = lines;
        after[0].refunded_quantity = 1;
        let second = plan_refund(&after, std::slice::from_ref(&coupon), &[(0, 1)]).unwrap();
        assert_eq!(second.coupons[0].outcome, CouponRefundOutcome::Returned);
        assert!(!second.order_fully_refunded, "line 2 is still kept");
    }

    #[test]
    fn a_quantity_beyond_what_is_left_is_refused() {
        let mut lines = [book(2, 100, 0)];
        lines[0].refunded_quantity = 1;
        assert_eq!(
            plan_refund(&lines, &[], &[(0, 2)]),
            Err(RefundExceedsOrder { index: 0, left: 1 })
        );
    }

    #[test]
    fn clawback_takes_back_what_is_still_allocated_once_the_threshold_is_lost() {
        // 满300减50 on three lines of 100 each (shares 17, 17, 16).
        let lines = [
            book(1, 10000, 1667),
            book(1, 10000, 1667),
            book(1, 10000, 1666),
        ];
        let mut coupon = CouponBook {
            refund_rule: PartialRefundRule::Clawback,
            min_order: c(30000),
            shares: vec![(0, c(1667)), (1, c(1667)), (2, c(1666))],
            clawed_back: false,
        };
        let p = plan_refund(&lines, std::slice::from_ref(&coupon), &[(0, 1)]).unwrap();
        assert_eq!(p.lines_refund, c(8333));
        assert_eq!(
            p.coupons[0].clawback,
            c(3333),
            "1667 + 1666 still allocated"
        );
        assert_eq!(p.refund, c(5000));
        // Once per coupon.
        coupon.clawed_back = true;
        let mut after = lines;
        after[0].refunded_quantity = 1;
        let p = plan_refund(&after, std::slice::from_ref(&coupon), &[(1, 1)]).unwrap();
        assert_eq!(p.clawback, c(0));
        // Proportional never claws back.
        coupon.clawed_back = false;
        coupon.refund_rule = PartialRefundRule::Proportional;
        let p = plan_refund(&lines, std::slice::from_ref(&coupon), &[(0, 1)]).unwrap();
        assert_eq!(p.clawback, c(0));
        assert_eq!(p.refund, c(8333));
    }

    #[test]
    fn a_clawback_is_at_most_the_refund() {
        // A cheap line refunded off a big one: the threshold is lost, but
        // only the cheap line's refund can be taken.
        let lines = [book(1, 100, 10), book(1, 30000, 4990)];
        let coupon = CouponBook {
            refund_rule: PartialRefundRule::Clawback,
            min_order: c(30100),
            shares: vec![(0, c(10)), (1, c(4990))],
            clawed_back: false,
        };
        let p = plan_refund(&lines, &[coupon], &[(0, 1)]).unwrap();
        assert_eq!(p.lines_refund, c(90));
        assert_eq!(p.clawback, c(90));
        assert_eq!(p.refund, c(0));
    }

    #[test]
    fn a_request_is_checked_field_by_field() {
        let ok = RefundInput {
            refund_id: Some("r1".into()),
            lines: Some(vec![RefundLineInput {
                line_id: Some("a".into()),
                quantity: Some(1),
            }]),
            reason: Some("damaged".into()),
        };
        assert!(RefundSpec::parse(ok.clone()).is_ok());
        let e = RefundSpec::parse(RefundInput {
            refund_id: None,
            ..ok.clone()
        })
        .unwrap_err();
        assert_eq!(e.field, "refund_id");
        let e = RefundSpec::parse(RefundInput {
            lines: Some(vec![]),
            ..ok.clone()
        })
        .unwrap_err();
        assert_eq!(e.field, "lines");
        let twice = RefundLineInput {
            line_id: Some("a".into()),
            quantity: Some(1),
        };
        let e = RefundSpec::parse(RefundInput {
            lines: Some(vec![twice.clone(), twice]),
            ..ok.clone()
        })
        .unwrap_err();
        assert_eq!(e.field, "lines[1].line_id");
        let e = RefundSpec::parse(RefundInput {
            lines: Some(vec![RefundLineInput {
                line_id: Some("a".into()),
                quantity: Some(0),
            }]),
            ..ok.clone()
        })
        .unwrap_err();
        assert_eq!(e.field, "lines[0].quantity");
        let e = RefundSpec::parse(RefundInput { reason: None, ..ok }).unwrap_err();
        assert_eq!(e.field, "reason");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Random refunds of random lines, until every unit is refunded:
        /// each line gives back exactly its payable amount and its
        /// discount, and the coupon comes back exactly once, with the last
        /// unit it discounted.
        #[test]
        fn refunding_every_unit_in_any_order_returns_exactly_the_payable_amounts(
            spec in prop::collection::vec((1i64..=7, 0i64..=100_000), 1..=8),
            discount_fraction in 0u32..=100,
            order in prop::collection::vec((0usize..8, 1i64..=7), 1..=60),
        ) {
            let amounts: Vec<Cents> = spec.iter().map(|(q, p)| c(q * p)).collect();
            let total: i64 = amounts.iter().map(|a| a.get()).sum();
            let discount = c(total * i64::from(discount_fraction) / 100);
            let shares = crate::domain::allocation::split(discount, &amounts);
            let mut lines: Vec<LineBook> = spec
                .iter()
                .zip(&shares)
                .map(|((q, p), s)| LineBook {
                    quantity: *q,
                    refunded_quantity: 0,
                    unit_price: c(*p),
                    payable: c(q * p - s.get()),
                    discount: *s,
                })
                .collect();
            let coupon = CouponBook {
                refund_rule: PartialRefundRule::Proportional,
                min_order: c(0),
                shares: shares.iter().copied().enumerate().collect(),
                clawed_back: false,
            };
            let mut refunded = vec![Cents::ZERO; lines.len()];
            let mut discount_back = vec![Cents::ZERO; lines.len()];
            let mut returned = 0;
            let mut coupon_back = Cents::ZERO;
            let mut steps = order.into_iter().map(|(i, q)| (i % lines.len(), q)).collect::<Vec<_>>();
            // Then whatever is left, line by line.
            steps.extend((0..lines.len()).map(|i| (i, 7)));
            for (i, q) in steps {
                let q = q.min(lines[i].units_left());
                if q == 0 {
                    continue;
                }
                let was_returned = returned > 0;
                let p = plan_refund(&lines, std::slice::from_ref(&coupon), &[(i, q)]).unwrap();
                refunded[i] = refunded[i].saturating_add(p.lines[0].refund);
                discount_back[i] = discount_back[i].saturating_add(p.lines[0].discount);
                // One coupon: its share of the units is the line's discount.
                prop_assert_eq!(p.coupons[0].discount, p.lines[0].discount);
                coupon_back = coupon_back.saturating_add(p.coupons[0].discount);
                lines[i].refunded_quantity += q;
                if p.coupons[0].outcome == CouponRefundOutcome::Returned && !was_returned {
                    returned += 1;
                    // Returned with the last unit it discounted.
                    prop_assert!(coupon.holding_lines().all(|h| lines[h].units_left() == 0));
                }
                if was_returned {
                    prop_assert_eq!(p.coupons[0].outcome, CouponRefundOutcome::Returned);
                }
            }
            prop_assert_eq!(returned, 1);
            prop_assert_eq!(coupon_back, discount);
            for (i, l) in lines.iter().enumerate() {
                prop_assert_eq!(refunded[i], l.payable);
                prop_assert_eq!(discount_back[i], l.discount);
            }
        }
    }
}
