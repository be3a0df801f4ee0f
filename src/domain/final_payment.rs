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

use super::allocation::Split;
use super::campaign::{CompensationMode, Policy};
use super::coupon::CouponStatus;
use super::discount::{CouponTerms, DiscountKind};
use super::ids::{CouponId, OrderNo, ShopId, TemplateId};
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
    /// Its template's budget as the plan reads it; `None`: no budget.
    pub budget: Option<BudgetLeft>,
}

/// What a template's budget has left when a plan is read. A stand-in
/// whose discount it cannot take is no stand-in: its lock at the final
/// payment would be refused `budget_exhausted`. (Two stand-ins of one
/// plan never share a template: they stand in for coupons of different
/// shops, or for the platform coupon.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetLeft {
    pub template_id: TemplateId,
    pub left: Cents,
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

/// The coupon is not (or no longer) locked to this order, and how: a
/// caller (and support) acts differently on a coupon that is free again
/// than on one another order holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CouponLockMismatch {
    /// Not locked at all: available again, expired, used, withdrawn.
    NotLocked,
    /// Locked, but to another order.
    LockedToAnotherOrder,
}

impl CouponLockMismatch {
    /// How a coupon stored as `status`, naming `locked_to`, stands against
    /// `order_no`: `None` when it is locked to that order.
    pub fn of(
        status: CouponStatus,
        locked_to: Option<&OrderNo>,
        order_no: &OrderNo,
    ) -> Option<Self> {
        match (status, locked_to) {
            (CouponStatus::Locked, Some(o)) if o == order_no => None,
            (CouponStatus::Locked, Some(_)) => Some(CouponLockMismatch::LockedToAnotherOrder),
            _ => Some(CouponLockMismatch::NotLocked),
        }
    }
}

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
    let Some(coupon) = coupon else {
        let due = final_amount(without_discounts(order.money));
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
    let cap = presale_discount_cap(order.money.total, order.money.deposit);
    let d = decide(
        policy,
        order.order_no,
        coupon,
        &OnLines {
            lines: order.lines,
            snapshot: order.snapshot_discount,
            cap,
        },
        candidates,
        now,
    )?;
    let due = due_after(order.money, mode, d.discount, d.compensation);
    let message = match d.outcome {
        CouponOutcome::Applied => crate::msg!(
            "final-payment-applied",
            due = due.yuan(),
            discount = d.discount.yuan()
        ),
        CouponOutcome::NoDiscountExpired => {
            crate::msg!("final-payment-coupon-expired", due = due.yuan())
        }
        CouponOutcome::Swapped => crate::msg!(
            "final-payment-swapped",
            discount = d.discount.yuan(),
            due = due.yuan()
        ),
        CouponOutcome::Compensated if mode == CompensationMode::Coupon => crate::msg!(
            "final-payment-compensated-coupon",
            compensation = d.compensation.yuan(),
            due = due.yuan()
        ),
        CouponOutcome::Compensated => crate::msg!(
            "final-payment-compensated",
            compensation = d.compensation.yuan(),
            due = due.yuan()
        ),
        CouponOutcome::None => crate::msg!("final-payment-due", due = due.yuan()),
    };
    Ok(FinalPaymentPlan {
        outcome: d.outcome,
        discount: d.discount,
        compensation: d.compensation,
        replacement_coupon_id: d.replacement,
        amount_due: due,
        message,
        compensation_coupon: d.outcome == CouponOutcome::Compensated
            && mode == CompensationMode::Coupon,
    })
}

/// The order's money before any discount or compensation.
fn without_discounts(money: OrderMoney) -> OrderMoney {
    OrderMoney {
        discount: Cents::ZERO,
        compensation: Cents::ZERO,
        ..money
    }
}

/// The final payment after `discount` and `compensation`: a compensation
/// coupon (`CompensationMode::Coupon`) deducts nothing.
fn due_after(
    money: OrderMoney,
    mode: CompensationMode,
    discount: Cents,
    compensation: Cents,
) -> Cents {
    final_amount(OrderMoney {
        discount,
        compensation: if mode == CompensationMode::Coupon {
            Cents::ZERO
        } else {
            compensation
        },
        ..without_discounts(money)
    })
}

/// What one coupon's outcome is judged on.
struct OnLines<'a> {
    /// The lines as the coupon saw them at the deposit (a platform coupon
    /// among several: what the shop coupons left of each).
    lines: &'a [Line],
    /// Its discount as snapshotted at the deposit.
    snapshot: Cents,
    /// The most a replacement may give.
    cap: Cents,
}

/// One coupon's outcome, before the order's sums and message.
struct Decision {
    outcome: CouponOutcome,
    discount: Cents,
    compensation: Cents,
    replacement: Option<CouponId>,
}

/// The policy applied to one held coupon: locked to this order or a
/// mismatch; under `lock`, or while valid, its snapshot; expired under
/// `strict`, nothing; expired under `swap_or_compensate`, a replacement
/// ([`choose_replacement`]) or its snapshot as compensation.
fn decide(
    policy: Policy,
    order_no: &OrderNo,
    coupon: &HeldCoupon,
    on: &OnLines<'_>,
    candidates: &[Candidate],
    now: DateTime<Utc>,
) -> Result<Decision, CouponLockMismatch> {
    if let Some(mismatch) =
        CouponLockMismatch::of(coupon.stored_status, coupon.locked_to.as_ref(), order_no)
    {
        return Err(mismatch);
    }
    let applied = Decision {
        outcome: CouponOutcome::Applied,
        discount: on.snapshot,
        compensation: Cents::ZERO,
        replacement: None,
    };
    let still_valid = now < coupon.ends_at;
    Ok(match policy {
        Policy::Lock => applied,
        _ if still_valid => applied,
        Policy::Strict => Decision {
            outcome: CouponOutcome::NoDiscountExpired,
            discount: Cents::ZERO,
            compensation: Cents::ZERO,
            replacement: None,
        },
        Policy::SwapOrCompensate => {
            let replacement =
                choose_replacement(on.lines, on.snapshot, coupon.kind, candidates, on.cap, now);
            match replacement {
                Some((id, discount)) => Decision {
                    outcome: CouponOutcome::Swapped,
                    discount,
                    compensation: Cents::ZERO,
                    replacement: Some(id),
                },
                None => Decision {
                    outcome: CouponOutcome::Compensated,
                    discount: Cents::ZERO,
                    compensation: on.snapshot,
                    replacement: None,
                },
            }
        }
    })
}

/// One coupon of a presale order of several, as the final payment reads
/// it.
#[derive(Debug, Clone)]
pub struct StackedCoupon {
    pub id: CouponId,
    pub held: HeldCoupon,
    /// The shop of a shop coupon; `None` for the platform coupon.
    pub shop: Option<ShopId>,
    /// Its discount as snapshotted at the deposit.
    pub snapshot: Cents,
    /// Its share of each line as snapshotted at the deposit.
    pub split: Split,
}

/// What the final payment does with one coupon of an order of several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CouponPlan {
    pub coupon_id: CouponId,
    pub outcome: CouponOutcome,
    pub discount: Cents,
    pub compensation: Cents,
    pub replacement_coupon_id: Option<CouponId>,
    /// What a replacement was judged on: the lines as the coupon it
    /// replaces saw them (its split is taken over these).
    pub judged_on: Vec<Line>,
}

/// The final payment of a presale order of several coupons: the order's
/// whole (the discounts and compensations summed; the outcome and
/// replacement of the first coupon, which the order row names) and each
/// coupon's part, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackedPlan {
    pub whole: FinalPaymentPlan,
    pub coupons: Vec<CouponPlan>,
}

/// The campaign's policy applied to each coupon of a presale order of
/// several (the order row's first): each decided as a single coupon would
/// be ([`plan_final_payment_in`]) on its own snapshot, so an expired
/// coupon under `strict` loses only its own discount. A replacement under
/// `swap_or_compensate` takes the expired coupon's place in the
/// combination: of the same shop (or a platform coupon for the platform
/// coupon), stackable, not one of the order's coupons nor the replacement
/// of another, judged on the lines as the expired coupon saw them (list
/// prices for a shop coupon; what the shop coupons left for the platform
/// coupon) and capped so the discounts together stay within what the
/// deposit leaves. A single coupon is [`plan_final_payment_in`] itself.
pub fn plan_stacked(
    policy: Policy,
    mode: CompensationMode,
    order: &PresaleOrder<'_>,
    coupons: &[StackedCoupon],
    candidates: &[Candidate],
    now: DateTime<Utc>,
) -> Result<StackedPlan, CouponLockMismatch> {
    if coupons.len() <= 1 {
        let whole = plan_final_payment_in(
            policy,
            mode,
            order,
            coupons.first().map(|c| &c.held),
            candidates,
            now,
        )?;
        let parts = coupons
            .first()
            .map(|c| CouponPlan {
                coupon_id: c.id.clone(),
                outcome: whole.outcome,
                discount: whole.discount,
                compensation: whole.compensation,
                replacement_coupon_id: whole.replacement_coupon_id.clone(),
                judged_on: order.lines.to_vec(),
            })
            .into_iter()
            .collect();
        return Ok(StackedPlan {
            whole,
            coupons: parts,
        });
    }
    let cap = presale_discount_cap(order.money.total, order.money.deposit);
    let snapshots = coupons
        .iter()
        .fold(Cents::ZERO, |s, c| s.saturating_add(c.snapshot));
    // What the shop coupons left of each line: the platform coupon's base.
    let shop_shares: Vec<Cents> = (0..order.lines.len())
        .map(|i| {
            coupons
                .iter()
                .filter(|c| c.shop.is_some())
                .filter_map(|c| c.split.get(i).copied().flatten())
                .fold(Cents::ZERO, Cents::saturating_add)
        })
        .collect();
    let after_shops: Vec<Line> = order
        .lines
        .iter()
        .zip(&shop_shares)
        .map(|(l, share)| Line {
            quantity: 1,
            unit_price: l.amount().saturating_sub(*share),
            ..l.clone()
        })
        .collect();
    let mut taken: Vec<CouponId> = coupons.iter().map(|c| c.id.clone()).collect();
    let mut parts = Vec::with_capacity(coupons.len());
    for c in coupons {
        let judged_on = if c.shop.is_some() {
            order.lines.to_vec()
        } else {
            after_shops.clone()
        };
        let fitting: Vec<Candidate> = candidates
            .iter()
            .filter(|k| k.terms.stackable && k.terms.scope.shop_id == c.shop)
            .filter(|k| !taken.contains(&k.id))
            .cloned()
            .collect();
        let others = snapshots.saturating_sub(c.snapshot);
        let d = decide(
            policy,
            order.order_no,
            &c.held,
            &OnLines {
                lines: &judged_on,
                snapshot: c.snapshot,
                cap: cap.saturating_sub(others),
            },
            &fitting,
            now,
        )?;
        if let Some(r) = &d.replacement {
            taken.push(r.clone());
        }
        parts.push(CouponPlan {
            coupon_id: c.id.clone(),
            outcome: d.outcome,
            discount: d.discount,
            compensation: d.compensation,
            replacement_coupon_id: d.replacement,
            judged_on,
        });
    }
    let discount = parts
        .iter()
        .fold(Cents::ZERO, |s, p| s.saturating_add(p.discount));
    let compensation = parts
        .iter()
        .fold(Cents::ZERO, |s, p| s.saturating_add(p.compensation));
    let due = due_after(order.money, mode, discount, compensation);
    let expired = parts
        .iter()
        .filter(|p| p.outcome != CouponOutcome::Applied)
        .count();
    let message = if expired == 0 {
        crate::msg!(
            "final-payment-stacked",
            due = due.yuan(),
            coupons = parts.len(),
            discount = discount.yuan()
        )
    } else if mode == CompensationMode::Coupon {
        crate::msg!(
            "final-payment-stacked-expired-coupon",
            due = due.yuan(),
            coupons = parts.len(),
            expired = expired,
            discount = discount.yuan(),
            compensation = compensation.yuan()
        )
    } else {
        crate::msg!(
            "final-payment-stacked-expired",
            due = due.yuan(),
            coupons = parts.len(),
            expired = expired,
            discount = discount.yuan(),
            compensation = compensation.yuan()
        )
    };
    let first = parts.first();
    let whole = FinalPaymentPlan {
        outcome: first.map_or(CouponOutcome::None, |p| p.outcome),
        discount,
        compensation,
        replacement_coupon_id: first.and_then(|p| p.replacement_coupon_id.clone()),
        amount_due: due,
        message,
        compensation_coupon: mode == CompensationMode::Coupon && !compensation.is_zero(),
    };
    Ok(StackedPlan {
        whole,
        coupons: parts,
    })
}

/// The replacement rule: an `available` coupon of the same user and of the
/// same `kind` as the expired one (`fixed` for `fixed`, `percent` for
/// `percent`), valid now, applicable to the order, whose discount is at
/// least the snapshot and which its template's budget can still take;
/// the smallest such discount, then the earliest `ends_at` (then the id,
/// so the choice is deterministic).
pub fn choose_replacement(
    lines: &[Line],
    snapshot: Cents,
    kind: DiscountKind,
    candidates: &[Candidate],
    cap: Cents,
    now: DateTime<Utc>,
) -> Option<(CouponId, Cents)> {
    let budget_takes = |c: &Candidate, d: Cents| c.budget.as_ref().is_none_or(|b| b.left >= d);
    candidates
        .iter()
        .filter(|c| c.stored_status == CouponStatus::Available)
        .filter(|c| c.terms.rule.discount_kind() == kind)
        .filter(|c| c.starts_at <= now && now < c.ends_at)
        .filter_map(|c| {
            let discount = c.terms.discount_on(lines).ok()?;
            Some((c, discount.min(cap)))
        })
        .filter(|(_, d)| *d >= snapshot && !d.is_zero())
        .filter(|(c, d)| budget_takes(c, *d))
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
        self.record(before.outcome, after.outcome, extra);
    }

    /// [`PolicyPreview::add`] for an order of several coupons, each with
    /// its own deposit snapshot: the policy applies to each coupon, so each
    /// is judged on its own. The order counts once: past its end when any
    /// coupon is, changed when any coupon's outcome changes (under the
    /// first such coupon's change), with the extra compensation of all its
    /// coupons.
    pub fn add_each(
        &mut self,
        current: Policy,
        proposed: Policy,
        order: &PresaleOrder<'_>,
        coupons: &[(HeldCoupon, Cents)],
        opens: DateTime<Utc>,
    ) {
        self.orders_read += 1;
        if coupons.iter().any(|(c, _)| c.ends_at <= opens) {
            self.coupons_past_end += 1;
        }
        let mut change: Option<(CouponOutcome, CouponOutcome)> = None;
        let mut extra: i64 = 0;
        for (coupon, snapshot) in coupons {
            let one = PresaleOrder {
                snapshot_discount: *snapshot,
                ..order.clone()
            };
            let (Ok(before), Ok(after)) = (
                plan_final_payment(current, &one, Some(coupon), &[], opens),
                plan_final_payment(proposed, &one, Some(coupon), &[], opens),
            ) else {
                return;
            };
            if before.outcome != after.outcome {
                change.get_or_insert((before.outcome, after.outcome));
                extra = extra.saturating_add(
                    after
                        .compensation
                        .get()
                        .saturating_sub(before.compensation.get()),
                );
            }
        }
        if let Some((from, to)) = change {
            self.record(from, to, extra);
        }
    }

    /// One changed order: `from` → `to`, costing `extra` more
    /// compensation.
    fn record(&mut self, from: CouponOutcome, to: CouponOutcome, extra: i64) {
        self.changed_orders += 1;
        self.extra_compensation_cents = self.extra_compensation_cents.saturating_add(extra);
        match self
            .changes
            .iter_mut()
            .find(|c| c.from == from && c.to == to)
        {
            Some(c) => {
                c.orders += 1;
                c.extra_compensation_cents = c.extra_compensation_cents.saturating_add(extra);
            }
            None => self.changes.push(OutcomeChange {
                from,
                to,
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
            budget: None,
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
    fn a_coupon_no_longer_locked_is_a_mismatch_that_says_not_locked() {
        let now = Utc::now();
        for status in [
            CouponStatus::Available,
            CouponStatus::Expired,
            CouponStatus::Used,
        ] {
            let mut c = held(now + Duration::days(1));
            c.stored_status = status;
            assert_eq!(
                plan_final_payment(Policy::Lock, &order(), Some(&c), &[], now),
                Err(CouponLockMismatch::NotLocked)
            );
        }
    }

    #[test]
    fn a_coupon_locked_elsewhere_is_a_mismatch_under_every_policy() {
        let now = Utc::now();
        let mut c = held(now + Duration::days(1));
        c.locked_to = Some("P2".into());
        for policy in [Policy::Lock, Policy::Strict, Policy::SwapOrCompensate] {
            assert_eq!(
                plan_final_payment(policy, &order(), Some(&c), &[], now),
                Err(CouponLockMismatch::LockedToAnotherOrder)
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

    mod stacked {
        use super::*;
        use crate::domain::discount::LineScope;
        use crate::domain::ids::LineId;

        static LINES: std::sync::LazyLock<Vec<Line>> = std::sync::LazyLock::new(|| {
            ["A", "B"]
                .iter()
                .map(|shop| Line {
                    line_id: LineId::from_stored(shop.to_lowercase()),
                    sku: None,
                    category: "phones".into(),
                    shop_id: Some(ShopId::from_stored((*shop).into())),
                    quantity: 1,
                    unit_price: cents(20_000),
                })
                .collect()
        });

        fn order() -> PresaleOrder<'static> {
            PresaleOrder {
                order_no: &P1,
                lines: &LINES,
                money: OrderMoney {
                    total: cents(40_000),
                    deposit: cents(10_000),
                    discount: cents(6_000),
                    compensation: Cents::ZERO,
                },
                snapshot_discount: cents(6_000),
            }
        }

        fn shop(s: &str) -> Option<ShopId> {
            Some(ShopId::from_stored(s.into()))
        }

        /// The platform coupon (30.00 over what the shops left: 18,000 and
        /// 19,000), shop A's 20.00 and shop B's 10.00; `expired` end
        /// before `now`.
        fn held(now: DateTime<Utc>, expired: &[&str]) -> Vec<StackedCoupon> {
            [
                (
                    "P",
                    None,
                    3_000,
                    vec![Some(cents(1_459)), Some(cents(1_541))],
                ),
                ("A", shop("A"), 2_000, vec![Some(cents(2_000)), None]),
                ("B", shop("B"), 1_000, vec![None, Some(cents(1_000))]),
            ]
            .into_iter()
            .map(|(id, shop, snapshot, split)| StackedCoupon {
                id: id.into(),
                held: HeldCoupon {
                    stored_status: CouponStatus::Locked,
                    locked_to: Some("P1".into()),
                    ends_at: if expired.contains(&id) {
                        now - Duration::hours(1)
                    } else {
                        now + Duration::days(1)
                    },
                    kind: DiscountKind::Fixed,
                },
                shop,
                snapshot: cents(snapshot),
                split,
            })
            .collect()
        }

        fn of_shop(
            id: &str,
            value: i64,
            shop_id: Option<ShopId>,
            min: i64,
            now: DateTime<Utc>,
        ) -> Candidate {
            let mut c = candidate(id, value, now + Duration::days(5), now);
            c.terms.scope = LineScope {
                shop_id,
                ..LineScope::default()
            };
            c.terms.min_order = cents(min);
            c
        }

        #[test]
        fn under_strict_an_expired_coupon_loses_only_its_own_discount() {
            let now = Utc::now();
            let plan = plan_stacked(
                Policy::Strict,
                CompensationMode::Deduction,
                &order(),
                &held(now, &["A"]),
                &[],
                now,
            )
            .expect("all locked here");
            let outcomes: Vec<_> = plan
                .coupons
                .iter()
                .map(|p| (p.outcome, p.discount))
                .collect();
            assert_eq!(
                outcomes,
                vec![
                    (CouponOutcome::Applied, cents(3_000)),
                    (CouponOutcome::NoDiscountExpired, Cents::ZERO),
                    (CouponOutcome::Applied, cents(1_000)),
                ]
            );
            assert_eq!(plan.whole.discount, cents(4_000));
            assert_eq!(plan.whole.amount_due, cents(26_000));
            assert_eq!(
                plan.whole.outcome,
                CouponOutcome::Applied,
                "the first coupon's"
            );
        }

        #[test]
        fn under_lock_every_coupon_keeps_its_snapshot_past_its_end() {
            let now = Utc::now();
            let plan = plan_stacked(
                Policy::Lock,
                CompensationMode::Deduction,
                &order(),
                &held(now, &["P", "A", "B"]),
                &[],
                now,
            )
            .expect("all locked here");
            assert!(
                plan.coupons
                    .iter()
                    .all(|p| p.outcome == CouponOutcome::Applied)
            );
            assert_eq!(plan.whole.amount_due, cents(24_000));
        }

        #[test]
        fn a_replacement_takes_the_expired_coupons_place_and_each_is_used_once() {
            let now = Utc::now();
            let candidates = [
                // Shop A's coupon cannot stand in for the platform coupon.
                of_shop("A2", 9_000, shop("A"), 0, now),
                // 满37,000 at list, but the platform coupon's base after
                // the shop coupons is 37,000: met, 35.00 ≥ 30.00.
                of_shop("P2", 3_500, None, 37_000, now),
                // 满37,001: met at list, not on what the shops left.
                of_shop("P3", 3_200, None, 37_001, now),
                // Shop B has none: B is compensated.
            ];
            let plan = plan_stacked(
                Policy::SwapOrCompensate,
                CompensationMode::Deduction,
                &order(),
                &held(now, &["P", "B"]),
                &candidates,
                now,
            )
            .expect("all locked here");
            let got: Vec<_> = plan
                .coupons
                .iter()
                .map(|p| {
                    (
                        p.outcome,
                        p.discount,
                        p.compensation,
                        p.replacement_coupon_id.clone(),
                    )
                })
                .collect();
            assert_eq!(
                got,
                vec![
                    (
                        CouponOutcome::Swapped,
                        cents(3_500),
                        Cents::ZERO,
                        Some("P2".into())
                    ),
                    (CouponOutcome::Applied, cents(2_000), Cents::ZERO, None),
                    (CouponOutcome::Compensated, Cents::ZERO, cents(1_000), None),
                ]
            );
            assert_eq!(plan.whole.replacement_coupon_id, Some("P2".into()));
            assert_eq!(
                plan.whole.amount_due,
                cents(40_000 - 10_000 - 5_500 - 1_000)
            );
            // The same stand-in is not given to two expired coupons.
            let two = [of_shop("B2", 2_500, shop("B"), 0, now)];
            let mut twice = held(now, &["B"]);
            twice[1].shop = shop("B");
            twice[1].held.ends_at = now - Duration::hours(1);
            let plan = plan_stacked(
                Policy::SwapOrCompensate,
                CompensationMode::Deduction,
                &order(),
                &twice,
                &two,
                now,
            )
            .expect("all locked here");
            let outcomes: Vec<_> = plan.coupons.iter().map(|p| p.outcome).collect();
            assert_eq!(
                outcomes,
                vec![
                    CouponOutcome::Applied,
                    CouponOutcome::Swapped,
                    CouponOutcome::Compensated
                ]
            );
        }

        #[test]
        fn a_stand_in_its_budget_cannot_take_is_passed_over_for_the_next_or_compensation() {
            let now = Utc::now();
            let budget = |left: i64| {
                Some(BudgetLeft {
                    template_id: "T".into(),
                    left: cents(left),
                })
            };
            // B's snapshot is 10.00: B2 gives 10.00 but its budget has
            // 9.99 left; B3 gives 15.00 and its budget can take it.
            let mut b2 = of_shop("B2", 1_000, shop("B"), 0, now);
            b2.budget = budget(999);
            let mut b3 = of_shop("B3", 1_500, shop("B"), 0, now);
            b3.budget = budget(1_500);
            let plan = |candidates: &[Candidate]| {
                plan_stacked(
                    Policy::SwapOrCompensate,
                    CompensationMode::Deduction,
                    &order(),
                    &held(now, &["B"]),
                    candidates,
                    now,
                )
                .expect("all locked here")
            };
            let swapped = plan(&[b2.clone(), b3]);
            let b = &swapped.coupons[2];
            assert_eq!(
                (b.outcome, b.replacement_coupon_id.clone(), b.discount),
                (CouponOutcome::Swapped, Some("B3".into()), cents(1_500))
            );
            let compensated = plan(&[b2]);
            let b = &compensated.coupons[2];
            assert_eq!(
                (b.outcome, b.compensation),
                (CouponOutcome::Compensated, cents(1_000))
            );
        }

        #[test]
        fn one_coupon_locked_elsewhere_refuses_the_whole_final_payment() {
            let now = Utc::now();
            let mut coupons = held(now, &[]);
            coupons[2].held.locked_to = Some("P9".into());
            for policy in [Policy::Lock, Policy::Strict, Policy::SwapOrCompensate] {
                assert_eq!(
                    plan_stacked(
                        policy,
                        CompensationMode::Deduction,
                        &order(),
                        &coupons,
                        &[],
                        now
                    ),
                    Err(CouponLockMismatch::LockedToAnotherOrder)
                );
            }
        }

        #[test]
        fn coupon_mode_gives_the_compensation_as_a_coupon_and_deducts_nothing() {
            let now = Utc::now();
            let plan = plan_stacked(
                Policy::SwapOrCompensate,
                CompensationMode::Coupon,
                &order(),
                &held(now, &["A"]),
                &[],
                now,
            )
            .expect("all locked here");
            assert_eq!(plan.whole.compensation, cents(2_000));
            assert!(plan.whole.compensation_coupon);
            assert_eq!(plan.whole.amount_due, cents(40_000 - 10_000 - 4_000));
        }
    }
}
