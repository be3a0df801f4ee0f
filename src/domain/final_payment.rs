//! The final payment (尾款) of a presale order: what the campaign's policy
//! does with the coupon locked at the deposit ([`plan_final_payment`]), and
//! what that outcome leaves the order's coupon lock at
//! ([`CouponOutcome::lock_status`]).
//!
//! The decision is a pure function of the order, its coupon, the user's
//! other coupons and the time, so the read-only quote and the final payment
//! itself can never disagree: both call [`plan_final_payment`]. The policy
//! preview of the campaign page judges each order with it too.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::campaign::{CompensationMode, Policy};
use super::coupon::CouponStatus;
use super::discount::{CouponTerms, DiscountKind};
use super::ids::{CouponId, OrderNo};
use super::line::Line;
use super::money::Cents;
use super::order::{CouponLockStatus, OrderMoney, final_amount, presale_discount_cap};

/// What the final payment does with the order's coupon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CouponOutcome {
    Applied,
    NoDiscountExpired,
    Swapped,
    Compensated,
    None,
}

impl CouponOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CouponOutcome::Applied => "applied",
            CouponOutcome::NoDiscountExpired => "no_discount_expired",
            CouponOutcome::Swapped => "swapped",
            CouponOutcome::Compensated => "compensated",
            CouponOutcome::None => "none",
        }
    }

    /// The order's coupon lock after a final payment with this outcome,
    /// `current` being what the order records before it: a coupon spent
    /// on the order (its own or the swapped-in one) is `used`; one that
    /// expired and gave nothing or was compensated is `released`. With no
    /// coupon the order keeps what it recorded (`none`, or `released` after
    /// support force-released its coupon), as the payment of a normal order
    /// does; writing `none` would erase the release from the order.
    pub fn lock_status(self, current: CouponLockStatus) -> CouponLockStatus {
        match self {
            CouponOutcome::Applied | CouponOutcome::Swapped => CouponLockStatus::Used,
            CouponOutcome::NoDiscountExpired | CouponOutcome::Compensated => {
                CouponLockStatus::Released
            }
            CouponOutcome::None => current,
        }
    }
}

/// The order's own coupon as the decision needs it.
#[derive(Debug, Clone)]
pub struct HeldCoupon {
    pub stored_status: CouponStatus,
    /// The order this coupon is locked to, if any.
    pub locked_to: Option<OrderNo>,
    pub ends_at: DateTime<Utc>,
    /// `fixed` or `percent`: a replacement must be of the same kind.
    pub kind: DiscountKind,
}

/// Another coupon of the same user that might replace an expired one.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: CouponId,
    pub stored_status: CouponStatus,
    pub terms: CouponTerms,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
}

/// The presale order as the decision needs it.
#[derive(Debug, Clone)]
pub struct PresaleOrder<'a> {
    pub order_no: &'a OrderNo,
    /// What a replacement coupon is judged on.
    pub lines: &'a [Line],
    pub money: OrderMoney,
    /// The discount snapshotted at deposit payment.
    pub snapshot_discount: Cents,
}

/// The decided final payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalPaymentPlan {
    pub outcome: CouponOutcome,
    pub discount: Cents,
    pub compensation: Cents,
    pub replacement_coupon_id: Option<CouponId>,
    pub amount_due: Cents,
    /// For the customer (catalog keys `final-payment-*`).
    pub message: crate::i18n::Msg,
    /// The compensation is a new coupon of that value, not a deduction
    /// (`amount_due` is then not reduced by it).
    pub compensation_coupon: bool,
}

/// The coupon is not (or no longer) locked to this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CouponLockMismatch;

/// Decides the final payment. `coupon` is the order's coupon (`None` when
/// the order has none); `candidates` are the user's other coupons, used only
/// by `swap_or_compensate`. Compensation, when due, is a deduction; see
/// [`plan_final_payment_in`] for a campaign's own compensation mode.
pub fn plan_final_payment(
    policy: Policy,
    order: &PresaleOrder<'_>,
    coupon: Option<&HeldCoupon>,
    candidates: &[Candidate],
    now: DateTime<Utc>,
) -> Result<FinalPaymentPlan, CouponLockMismatch> {
    plan_final_payment_in(
        policy,
        CompensationMode::Deduction,
        order,
        coupon,
        candidates,
        now,
    )
}

/// [`plan_final_payment`] under a campaign's compensation mode: under
/// [`CompensationMode::Coupon`] a compensated order pays the final payment
/// without the deduction and is given a coupon of the same value instead
/// (`compensation` is that value, `compensation_coupon` is set).
pub fn plan_final_payment_in(
    policy: Policy,
    mode: CompensationMode,
    order: &PresaleOrder<'_>,
    coupon: Option<&HeldCoupon>,
    candidates: &[Candidate],
    now: DateTime<Utc>,
) -> Result<FinalPaymentPlan, CouponLockMismatch> {
    let base = OrderMoney {
        discount: Cents::ZERO,
        compensation: Cents::ZERO,
        ..order.money
    };
    let Some(coupon) = coupon else {
        let due = final_amount(base);
        return Ok(FinalPaymentPlan {
            outcome: CouponOutcome::None,
            discount: Cents::ZERO,
            compensation: Cents::ZERO,
            replacement_coupon_id: None,
            amount_due: due,
            message: crate::msg!("final-payment-due", due = due.yuan()),
            compensation_coupon: false,
        });
    };
    let locked_here = coupon.stored_status == CouponStatus::Locked
        && coupon.locked_to.as_deref() == Some(order.order_no);
    if !locked_here {
        return Err(CouponLockMismatch);
    }
    let still_valid = now < coupon.ends_at;
    let applied = |discount: Cents| {
        let due = final_amount(OrderMoney { discount, ..base });
        FinalPaymentPlan {
            outcome: CouponOutcome::Applied,
            discount,
            compensation: Cents::ZERO,
            replacement_coupon_id: None,
            amount_due: due,
            message: crate::msg!(
                "final-payment-applied",
                due = due.yuan(),
                discount = discount.yuan()
            ),
            compensation_coupon: false,
        }
    };
    match policy {
        Policy::Lock => Ok(applied(order.snapshot_discount)),
        _ if still_valid => Ok(applied(order.snapshot_discount)),
        Policy::Strict => {
            let due = final_amount(base);
            Ok(FinalPaymentPlan {
                outcome: CouponOutcome::NoDiscountExpired,
                discount: Cents::ZERO,
                compensation: Cents::ZERO,
                replacement_coupon_id: None,
                amount_due: due,
                message: crate::msg!("final-payment-coupon-expired", due = due.yuan()),
                compensation_coupon: false,
            })
        }
        Policy::SwapOrCompensate => {
            let cap = presale_discount_cap(order.money.total, order.money.deposit);
            match choose_replacement(order, coupon.kind, candidates, cap, now) {
                Some((id, discount)) => {
                    let due = final_amount(OrderMoney { discount, ..base });
                    Ok(FinalPaymentPlan {
                        outcome: CouponOutcome::Swapped,
                        discount,
                        compensation: Cents::ZERO,
                        replacement_coupon_id: Some(id),
                        amount_due: due,
                        message: crate::msg!(
                            "final-payment-swapped",
                            discount = discount.yuan(),
                            due = due.yuan()
                        ),
                        compensation_coupon: false,
                    })
                }
                None if mode == CompensationMode::Coupon => {
                    let compensation = order.snapshot_discount;
                    let due = final_amount(base);
                    Ok(FinalPaymentPlan {
                        outcome: CouponOutcome::Compensated,
                        discount: Cents::ZERO,
                        compensation,
                        replacement_coupon_id: None,
                        amount_due: due,
                        message: crate::msg!(
                            "final-payment-compensated-coupon",
                            compensation = compensation.yuan(),
                            due = due.yuan()
                        ),
                        compensation_coupon: true,
                    })
                }
                None => {
                    let compensation = order.snapshot_discount;
                    let due = final_amount(OrderMoney {
                        compensation,
                        ..base
                    });
                    Ok(FinalPaymentPlan {
                        outcome: CouponOutcome::Compensated,
                        discount: Cents::ZERO,
                        compensation,
                        replacement_coupon_id: None,
                        amount_due: due,
                        message: crate::msg!(
                            "final-payment-compensated",
                            compensation = compensation.yuan(),
                            due = due.yuan()
                        ),
                        compensation_coupon: false,
                    })
                }
            }
        }
    }
}

/// The replacement rule: an `available` coupon of the same user and of the
/// same `kind` as the expired one (`fixed` for `fixed`, `percent` for
/// `percent`), valid now, applicable to the order, whose discount is at
/// least the snapshot; the smallest such discount, then the earliest
/// `ends_at` (then the id, so the choice is deterministic).
pub fn choose_replacement(
    order: &PresaleOrder<'_>,
    kind: DiscountKind,
    candidates: &[Candidate],
    cap: Cents,
    now: DateTime<Utc>,
) -> Option<(CouponId, Cents)> {
    candidates
        .iter()
        .filter(|c| c.stored_status == CouponStatus::Available)
        .filter(|c| c.terms.rule.discount_kind() == kind)
        .filter(|c| c.starts_at <= now && now < c.ends_at)
        .filter_map(|c| {
            let discount = c.terms.discount_on(order.lines).ok()?;
            Some((c, discount.min(cap)))
        })
        .filter(|(_, d)| *d >= order.snapshot_discount && !d.is_zero())
        .min_by(|(a, da), (b, db)| {
            da.cmp(db)
                .then(a.ends_at.cmp(&b.ends_at))
                .then(a.id.cmp(&b.id))
        })
        .map(|(c, d)| (c.id.clone(), d))
}

/// One way an order's final-payment outcome would change, and how many
/// orders change that way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutcomeChange {
    pub from: CouponOutcome,
    pub to: CouponOutcome,
    pub orders: u64,
    /// Compensation under the proposed policy less under the current one,
    /// summed over these orders (negative when it saves compensation).
    pub extra_compensation_cents: i64,
}

/// What changing a campaign's policy would do to its `deposit_paid`
/// orders, each judged with [`plan_final_payment`] at the moment the
/// final-payment window opens (the first moment the final payment can be
/// made). No replacement coupon is assumed for `swap_or_compensate`: which
/// coupons a customer will hold then is not known now, so the extra cost is
/// the most the change can cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PolicyPreview {
    /// Orders judged.
    pub orders_read: u64,
    /// Orders whose outcome changes.
    pub changed_orders: u64,
    /// The sum of [`OutcomeChange::extra_compensation_cents`].
    pub extra_compensation_cents: i64,
    /// Of the orders judged, those whose locked coupon will be past its
    /// own end when the window opens.
    pub coupons_past_end: u64,
    /// By (from, to), in the order first seen.
    pub changes: Vec<OutcomeChange>,
}

impl PolicyPreview {
    /// Judges one order under `current` and `proposed` at `opens`.
    pub fn add(
        &mut self,
        current: Policy,
        proposed: Policy,
        order: &PresaleOrder<'_>,
        coupon: Option<&HeldCoupon>,
        opens: DateTime<Utc>,
    ) {
        self.orders_read += 1;
        if coupon.is_some_and(|c| c.ends_at <= opens) {
            self.coupons_past_end += 1;
        }
        let (Ok(before), Ok(after)) = (
            plan_final_payment(current, order, coupon, &[], opens),
            plan_final_payment(proposed, order, coupon, &[], opens),
        ) else {
            // A coupon not locked to its order: the final payment refuses
            // under every policy; support's health check is the place.
            return;
        };
        if before.outcome == after.outcome {
            return;
        }
        let extra = after
            .compensation
            .get()
            .saturating_sub(before.compensation.get());
        self.changed_orders += 1;
        self.extra_compensation_cents = self.extra_compensation_cents.saturating_add(extra);
        match self
            .changes
            .iter_mut()
            .find(|c| c.from == before.outcome && c.to == after.outcome)
        {
            Some(c) => {
                c.orders += 1;
                c.extra_compensation_cents = c.extra_compensation_cents.saturating_add(extra);
            }
            None => self.changes.push(OutcomeChange {
                from: before.outcome,
                to: after.outcome,
                orders: 1,
                extra_compensation_cents: extra,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_coupon_spent_at_the_final_payment_is_used_one_that_expired_is_released_and_no_coupon_keeps_the_lock_status()
     {
        for current in [CouponLockStatus::None, CouponLockStatus::Released] {
            assert_eq!(
                CouponOutcome::Applied.lock_status(current),
                CouponLockStatus::Used
            );
            assert_eq!(
                CouponOutcome::Swapped.lock_status(current),
                CouponLockStatus::Used
            );
            assert_eq!(
                CouponOutcome::NoDiscountExpired.lock_status(current),
                CouponLockStatus::Released
            );
            assert_eq!(
                CouponOutcome::Compensated.lock_status(current),
                CouponLockStatus::Released
            );
            assert_eq!(CouponOutcome::None.lock_status(current), current);
        }
    }
    use crate::domain::discount::DiscountRule;
    use chrono::Duration;

    fn cents(v: i64) -> Cents {
        Cents::from_stored(v)
    }

    static P1: std::sync::LazyLock<OrderNo> = std::sync::LazyLock::new(|| OrderNo::from("P1"));
    static PHONES: std::sync::LazyLock<Vec<Line>> =
        std::sync::LazyLock::new(|| vec![Line::whole_order("phones".into(), cents(39900))]);

    fn order() -> PresaleOrder<'static> {
        PresaleOrder {
            order_no: &P1,
            lines: &PHONES,
            money: OrderMoney {
                total: cents(39900),
                deposit: cents(10000),
                discount: cents(5000),
                compensation: Cents::ZERO,
            },
            snapshot_discount: cents(5000),
        }
    }

    fn held(ends_at: DateTime<Utc>) -> HeldCoupon {
        HeldCoupon {
            stored_status: CouponStatus::Locked,
            locked_to: Some("P1".into()),
            ends_at,
            kind: DiscountKind::Fixed,
        }
    }

    fn candidate(id: &str, value: i64, ends_at: DateTime<Utc>, now: DateTime<Utc>) -> Candidate {
        Candidate {
            id: id.into(),
            stored_status: CouponStatus::Available,
            terms: CouponTerms {
                rule: DiscountRule::Fixed {
                    value: cents(value),
                },
                min_order: Cents::ZERO,
                categories: vec![],
                scope: Default::default(),
                refund_rule: Default::default(),
                stackable: true,
            },
            starts_at: now - Duration::days(1),
            ends_at,
        }
    }

    #[test]
    fn lock_policy_applies_the_snapshot_after_expiry() {
        let now = Utc::now();
        let p = plan_final_payment(
            Policy::Lock,
            &order(),
            Some(&held(now - Duration::days(3))),
            &[],
            now,
        )
        .expect("locked here");
        assert_eq!(p.outcome, CouponOutcome::Applied);
        assert_eq!(p.amount_due, cents(24900));
        assert_eq!(
            crate::i18n::Lang::Zh.msg(&p.message),
            "本次尾款 249.00 元，已为你抵扣 50.00 元。"
        );
    }

    #[test]
    fn strict_policy_gives_nothing_for_an_expired_coupon() {
        let now = Utc::now();
        let p =
            plan_final_payment(Policy::Strict, &order(), Some(&held(now)), &[], now).expect("ok");
        assert_eq!(p.outcome, CouponOutcome::NoDiscountExpired);
        assert_eq!(p.amount_due, cents(29900));
        let p = plan_final_payment(
            Policy::Strict,
            &order(),
            Some(&held(now + Duration::seconds(1))),
            &[],
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Applied);
    }

    #[test]
    fn swap_picks_the_smallest_sufficient_discount_then_the_earliest_end() {
        let now = Utc::now();
        let cands = vec![
            candidate("big", 8000, now + Duration::days(1), now),
            candidate("small-late", 5000, now + Duration::days(9), now),
            candidate("small-early", 5000, now + Duration::days(2), now),
            candidate("too-small", 4999, now + Duration::days(1), now),
        ];
        let p = plan_final_payment(
            Policy::SwapOrCompensate,
            &order(),
            Some(&held(now - Duration::seconds(1))),
            &cands,
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Swapped);
        assert_eq!(p.replacement_coupon_id.as_deref(), Some("small-early"));
        assert_eq!(p.discount, cents(5000));
    }

    fn percent_candidate(
        id: &str,
        percent_off: u8,
        ends_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Candidate {
        Candidate {
            terms: CouponTerms {
                rule: DiscountRule::Percent {
                    percent_off,
                    max_discount: None,
                },
                min_order: Cents::ZERO,
                categories: vec![],
                scope: Default::default(),
                refund_rule: Default::default(),
                stackable: true,
            },
            ..candidate(id, 0, ends_at, now)
        }
    }

    #[test]
    fn swap_replaces_a_coupon_only_with_one_of_the_same_kind() {
        let now = Utc::now();
        let expired = now - Duration::seconds(1);
        // 20% of 399.00 = 79.80 off, more than the fixed 50.00 snapshot:
        // still not a replacement for a fixed coupon.
        let percent_only = vec![percent_candidate("pct", 20, now + Duration::days(1), now)];
        let p = plan_final_payment(
            Policy::SwapOrCompensate,
            &order(),
            Some(&held(expired)),
            &percent_only,
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Compensated);
        assert_eq!(p.replacement_coupon_id, None);
        assert_eq!(p.compensation, cents(5000));
        // With a fixed one as well, the fixed one is chosen even though the
        // percent coupon would take off more... and the smallest sufficient.
        let mixed = vec![
            percent_candidate("pct", 13, now + Duration::days(1), now),
            candidate("fixed-80", 8000, now + Duration::days(1), now),
        ];
        let p = plan_final_payment(
            Policy::SwapOrCompensate,
            &order(),
            Some(&held(expired)),
            &mixed,
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Swapped);
        assert_eq!(p.replacement_coupon_id.as_deref(), Some("fixed-80"));
        assert_eq!(p.discount, cents(8000));
        // A percent coupon is replaced by a percent coupon only.
        let mut pct_held = held(expired);
        pct_held.kind = DiscountKind::Percent;
        let p = plan_final_payment(
            Policy::SwapOrCompensate,
            &order(),
            Some(&pct_held),
            &mixed,
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Swapped);
        assert_eq!(p.replacement_coupon_id.as_deref(), Some("pct"));
        assert_eq!(p.discount, cents(5187), "13% of 399.00, floored");
        let fixed_only = vec![candidate("fixed-80", 8000, now + Duration::days(1), now)];
        let p = plan_final_payment(
            Policy::SwapOrCompensate,
            &order(),
            Some(&pct_held),
            &fixed_only,
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Compensated);
    }

    #[test]
    fn swap_without_a_replacement_compensates_the_snapshot() {
        let now = Utc::now();
        let cands = vec![candidate("too-small", 100, now + Duration::days(1), now)];
        let p = plan_final_payment(
            Policy::SwapOrCompensate,
            &order(),
            Some(&held(now - Duration::seconds(1))),
            &cands,
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Compensated);
        assert_eq!(p.compensation, cents(5000));
        assert_eq!(p.amount_due, cents(24900));
    }

    #[test]
    fn a_coupon_locked_elsewhere_is_a_mismatch_under_every_policy() {
        let now = Utc::now();
        let mut c = held(now + Duration::days(1));
        c.locked_to = Some("P2".into());
        for policy in [Policy::Lock, Policy::Strict, Policy::SwapOrCompensate] {
            assert_eq!(
                plan_final_payment(policy, &order(), Some(&c), &[], now),
                Err(CouponLockMismatch)
            );
        }
    }

    #[test]
    fn an_order_without_coupon_pays_total_less_deposit() {
        let now = Utc::now();
        let p = plan_final_payment(Policy::Strict, &order(), None, &[], now).expect("ok");
        assert_eq!(p.outcome, CouponOutcome::None);
        assert_eq!(p.amount_due, cents(29900));
    }
    #[test]
    fn coupon_mode_compensates_with_a_coupon_and_does_not_reduce_the_final_payment() {
        let now = Utc::now();
        let p = plan_final_payment_in(
            Policy::SwapOrCompensate,
            CompensationMode::Coupon,
            &order(),
            Some(&held(now - Duration::seconds(1))),
            &[],
            now,
        )
        .expect("ok");
        assert_eq!(p.outcome, CouponOutcome::Compensated);
        assert_eq!(p.compensation, cents(5000));
        assert!(p.compensation_coupon);
        assert_eq!(p.amount_due, cents(29900), "no deduction");
        let d = plan_final_payment(
            Policy::SwapOrCompensate,
            &order(),
            Some(&held(now - Duration::seconds(1))),
            &[],
            now,
        )
        .expect("ok");
        assert!(!d.compensation_coupon);
        assert_eq!(d.amount_due, cents(24900));
    }

    #[test]
    fn the_preview_counts_changed_outcomes_and_their_extra_compensation_at_the_opening() {
        let opens = Utc::now();
        let mut p = PolicyPreview::default();
        // Ends before the window opens: applied under lock, compensated
        // under swap_or_compensate (no replacement assumed).
        p.add(
            Policy::Lock,
            Policy::SwapOrCompensate,
            &order(),
            Some(&held(opens - Duration::hours(1))),
            opens,
        );
        // Still valid at the opening: applied either way.
        p.add(
            Policy::Lock,
            Policy::SwapOrCompensate,
            &order(),
            Some(&held(opens + Duration::hours(1))),
            opens,
        );
        p.add(
            Policy::Lock,
            Policy::SwapOrCompensate,
            &order(),
            None,
            opens,
        );
        assert_eq!((p.orders_read, p.changed_orders), (3, 1));
        assert_eq!(p.coupons_past_end, 1);
        assert_eq!(p.extra_compensation_cents, 5000);
        assert_eq!(
            p.changes,
            vec![OutcomeChange {
                from: CouponOutcome::Applied,
                to: CouponOutcome::Compensated,
                orders: 1,
                extra_compensation_cents: 5000,
            }]
        );
        let mut back = PolicyPreview::default();
        back.add(
            Policy::SwapOrCompensate,
            Policy::Strict,
            &order(),
            Some(&held(opens)),
            opens,
        );
        assert_eq!(back.extra_compensation_cents, -5000, "strict saves it");
        assert_eq!(back.changes[0].to, CouponOutcome::NoDiscountExpired);
    }
}
