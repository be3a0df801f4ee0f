//! Reconciliation rules: which coupon–order pairs are anomalies, of which
//! kind, and which repair fits each. Pure: the service gathers the facts
//! in bounded, index-driven batches and asks these functions.
//!
//! Kinds (the first four are API.md's):
//! - `locked_coupon_order_closed`: a coupon still `locked` to an order that
//!   is closed, refunded or missing.
//! - `order_active_coupon_not_locked`: a live order (deposit paid, or a
//!   normal order within its checkout lock) whose coupon is not locked to it.
//! - `coupon_order_mismatch`: a coupon bound (locked or used) to an order
//!   that names another coupon, or none.
//! - `stale_checkout_lock`: a normal order past its checkout lock, still
//!   awaiting payment, its coupon still locked.
//! - `locked_coupon_order_paid`: a coupon still `locked` to the paid (or
//!   fully paid) order that names it: a stale lock. Repaired by marking it
//!   `used` for that order when the order was paid with it, by a release
//!   when the final payment withdrew its discount.
//! - `used_coupon_order_unpaid`: a coupon `used` by an order that was never
//!   paid (awaiting payment or the deposit, or closed).
//! - `template_stock_mismatch`: a template's claimed counter differs from the
//!   number of coupons it issued.
//! - `template_counts_mismatch`: a template's report counters (the all-days
//!   row of `template_counts`: claimed, coupons by status, discount given)
//!   differ from a recount of its coupons: the reports would be wrong.
//!
//! Kinds of orders with lines (优惠分摊, 部分退款):
//! - `split_mismatch`: a coupon's shares of the order's lines do not add up
//!   to the discount the order took for it (with a final payment's
//!   deducted compensation, which keeps the deposit's split), or a coupon
//!   the order does not name still has shares.
//! - `refund_over_payable`: a line refunded more money than it is payable.
//! - `coupon_not_returned_after_refunds`: the order's coupon still reads
//!   `used` after every unit it discounted was refunded. Repaired by
//!   returning it ([`super::repair::plan_return`]).
//!
//! Kinds of several coupons and budgets (叠加, 预算):
//! - `coupons_out_of_step`: a further coupon of an order whose record on
//!   the order (its lock state) disagrees with the coupon itself, or with
//!   the order's first coupon or status (they are locked, used and
//!   released together; only a refund by line returns one before another).
//! - `budget_mismatch`: a template's budget use (the budget less what its
//!   shards have left) differs from its reservations, or its reservations
//!   from what its coupons on orders take off them.

use chrono::{DateTime, Utc};

use crate::i18n::{Arg, Msg};

use super::coupon::CouponStatus;
use super::facts::{CouponFacts, OrderFacts};
use super::ids::{CouponId, OrderNo, TemplateId, UserId};
use super::money::Cents;
use super::order::{CouponLockStatus, OrderStatus, checkout_lapsed};
use super::repair::{order_took_coupon, plan_link_repair, plan_mark_used, plan_return};
use super::report::Counts;

/// An anomaly kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AnomalyKind {
    LockedCouponOrderClosed,
    LockedCouponOrderPaid,
    OrderActiveCouponNotLocked,
    CouponOrderMismatch,
    StaleCheckoutLock,
    UsedCouponOrderUnpaid,
    TemplateStockMismatch,
    TemplateCountsMismatch,
    SplitMismatch,
    RefundOverPayable,
    CouponNotReturnedAfterRefunds,
    CouponsOutOfStep,
    BudgetMismatch,
}

impl serde::Serialize for AnomalyKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl serde::Serialize for Fix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl AnomalyKind {
    pub const ALL: [AnomalyKind; 13] = [
        AnomalyKind::LockedCouponOrderClosed,
        AnomalyKind::LockedCouponOrderPaid,
        AnomalyKind::OrderActiveCouponNotLocked,
        AnomalyKind::CouponOrderMismatch,
        AnomalyKind::StaleCheckoutLock,
        AnomalyKind::UsedCouponOrderUnpaid,
        AnomalyKind::TemplateStockMismatch,
        AnomalyKind::TemplateCountsMismatch,
        AnomalyKind::SplitMismatch,
        AnomalyKind::RefundOverPayable,
        AnomalyKind::CouponNotReturnedAfterRefunds,
        AnomalyKind::CouponsOutOfStep,
        AnomalyKind::BudgetMismatch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AnomalyKind::LockedCouponOrderClosed => "locked_coupon_order_closed",
            AnomalyKind::LockedCouponOrderPaid => "locked_coupon_order_paid",
            AnomalyKind::OrderActiveCouponNotLocked => "order_active_coupon_not_locked",
            AnomalyKind::CouponOrderMismatch => "coupon_order_mismatch",
            AnomalyKind::StaleCheckoutLock => "stale_checkout_lock",
            AnomalyKind::UsedCouponOrderUnpaid => "used_coupon_order_unpaid",
            AnomalyKind::TemplateStockMismatch => "template_stock_mismatch",
            AnomalyKind::TemplateCountsMismatch => "template_counts_mismatch",
            AnomalyKind::SplitMismatch => "split_mismatch",
            AnomalyKind::RefundOverPayable => "refund_over_payable",
            AnomalyKind::CouponNotReturnedAfterRefunds => "coupon_not_returned_after_refunds",
            AnomalyKind::CouponsOutOfStep => "coupons_out_of_step",
            AnomalyKind::BudgetMismatch => "budget_mismatch",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        AnomalyKind::ALL.into_iter().find(|k| k.as_str() == raw)
    }
}

/// The repair a finding gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fix {
    /// Release the coupon's lock (available while valid, else expired).
    ReleaseCoupon,
    /// Relock the order's freed coupon, or relink the order to the coupon
    /// bound to it ([`super::repair`]).
    RepairLink,
    /// Close the lapsed order, which releases its coupon.
    CancelOrder,
    /// Mark the coupon `used` for the paid order it is still locked to
    /// ([`super::repair::plan_mark_used`]).
    MarkCouponUsed,
    /// Return the coupon its order's refunds should have returned
    /// ([`super::repair::plan_return`]).
    ReturnCoupon,
    /// Nothing safe to do automatically: a person looks at it.
    None,
}

impl Fix {
    pub const ALL: [Fix; 6] = [
        Fix::ReleaseCoupon,
        Fix::RepairLink,
        Fix::CancelOrder,
        Fix::MarkCouponUsed,
        Fix::ReturnCoupon,
        Fix::None,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Fix::ReleaseCoupon => "release_coupon",
            Fix::RepairLink => "repair_link",
            Fix::CancelOrder => "cancel_order",
            Fix::MarkCouponUsed => "mark_coupon_used",
            Fix::ReturnCoupon => "return_coupon",
            Fix::None => "none",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Fix::ALL.into_iter().find(|f| f.as_str() == raw)
    }
}

/// One anomaly: its kind, the pair, what is wrong and the repair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: AnomalyKind,
    pub coupon_id: Option<CouponId>,
    pub order_no: Option<OrderNo>,
    pub user_id: Option<UserId>,
    /// For `template_stock_mismatch`: the template.
    pub template_id: Option<TemplateId>,
    /// For `template_stock_mismatch`: `(claimed counter, coupons issued)`.
    pub stock: Option<(i64, i64)>,
    /// What is wrong, for the reader to render (catalog keys
    /// `reconcile-*`); stored as its key and arguments.
    pub message: Msg,
    pub fix: Fix,
}

/// The coupon an order names, or the catalog's "no coupon".
fn named_coupon(o: &OrderFacts) -> Arg {
    match o.coupon_id.as_deref() {
        Some(id) => Arg::Text(id.to_string()),
        None => Arg::Key("reconcile-no-coupon".into()),
    }
}

/// Whether an order still holds its coupon locked: a deposit-paid presale
/// order, or a normal order awaiting payment within its checkout lock.
fn holds_lock(o: &OrderFacts, now: DateTime<Utc>) -> bool {
    match o.status {
        OrderStatus::DepositPaid => true,
        OrderStatus::PendingPayment => {
            !checkout_lapsed(o.kind, o.status, o.checkout_lock_expires_at, now)
                && o.checkout_lock_expires_at.is_some()
        }
        _ => false,
    }
}

/// Checks a coupon bound to an order (stored `locked` or `used` with an
/// `order_no`), seen from the coupon's side. `order` is the order it names
/// (`None`: missing); `named` is the coupon that order names, when it is
/// another one.
pub fn check_bound_coupon(
    coupon: &CouponFacts,
    order: Option<&OrderFacts>,
    named: Option<&CouponFacts>,
    now: DateTime<Utc>,
) -> Option<Finding> {
    let no = coupon.order_no.clone()?;
    let finding = |kind, message: Msg, fix| Finding {
        kind,
        coupon_id: Some(coupon.id.clone()),
        order_no: Some(no.clone()),
        user_id: Some(coupon.user_id.clone()),
        template_id: None,
        stock: None,
        message,
        fix,
    };
    let Some(o) = order else {
        return (coupon.stored_status == CouponStatus::Locked).then(|| {
            finding(
                AnomalyKind::LockedCouponOrderClosed,
                crate::msg!(
                    "reconcile-locked-to-missing-order",
                    coupon = coupon.id.as_str(),
                    no = no.as_str()
                ),
                Fix::ReleaseCoupon,
            )
        });
    };
    let names_it = o.holds(&coupon.id);
    match coupon.stored_status {
        CouponStatus::Locked => {
            if matches!(o.status, OrderStatus::Closed | OrderStatus::Refunded) {
                return Some(finding(
                    AnomalyKind::LockedCouponOrderClosed,
                    crate::msg!(
                        "reconcile-locked-to-ended-order",
                        coupon = coupon.id.as_str(),
                        no = no.as_str(),
                        status = Arg::Key(o.status.label_key().into())
                    ),
                    Fix::ReleaseCoupon,
                ));
            }
            if !names_it {
                let fix = if plan_link_repair(o, named, coupon, now).is_ok() {
                    Fix::RepairLink
                } else if !holds_lock(o, now) || named.is_some() {
                    Fix::ReleaseCoupon
                } else {
                    Fix::None
                };
                return Some(finding(
                    AnomalyKind::CouponOrderMismatch,
                    crate::msg!(
                        "reconcile-locked-but-order-names-another",
                        coupon = coupon.id.as_str(),
                        no = no.as_str(),
                        named = named_coupon(o)
                    ),
                    fix,
                ));
            }
            if matches!(o.status, OrderStatus::Paid | OrderStatus::FinalPaid) {
                let fix = if plan_mark_used(o, coupon).is_ok() {
                    Fix::MarkCouponUsed
                } else if !order_took_coupon(o.status, o.coupon_lock_status) {
                    // The final payment withdrew the discount (policy): the
                    // lock should have ended with it.
                    Fix::ReleaseCoupon
                } else {
                    Fix::None
                };
                return Some(finding(
                    AnomalyKind::LockedCouponOrderPaid,
                    crate::msg!(
                        "reconcile-locked-to-paid-order",
                        coupon = coupon.id.as_str(),
                        no = no.as_str(),
                        status = Arg::Key(o.status.label_key().into())
                    ),
                    fix,
                ));
            }
            if checkout_lapsed(o.kind, o.status, o.checkout_lock_expires_at, now) {
                return Some(finding(
                    AnomalyKind::StaleCheckoutLock,
                    crate::msg!(
                        "reconcile-stale-checkout-lock",
                        coupon = coupon.id.as_str(),
                        no = no.as_str()
                    ),
                    Fix::CancelOrder,
                ));
            }
            None
        }
        CouponStatus::Used => {
            if !names_it {
                let fix = if plan_link_repair(o, named, coupon, now).is_ok() {
                    Fix::RepairLink
                } else {
                    Fix::None
                };
                return Some(finding(
                    AnomalyKind::CouponOrderMismatch,
                    crate::msg!(
                        "reconcile-used-but-order-names-another",
                        coupon = coupon.id.as_str(),
                        no = no.as_str(),
                        named = named_coupon(o)
                    ),
                    fix,
                ));
            }
            if matches!(
                o.status,
                OrderStatus::PendingPayment | OrderStatus::PendingDeposit | OrderStatus::Closed
            ) {
                return Some(finding(
                    AnomalyKind::UsedCouponOrderUnpaid,
                    crate::msg!(
                        "reconcile-used-on-unpaid-order",
                        coupon = coupon.id.as_str(),
                        no = no.as_str(),
                        status = Arg::Key(o.status.label_key().into())
                    ),
                    Fix::None,
                ));
            }
            None
        }
        _ => None,
    }
}

/// Checks a live order's coupon, seen from the order's side. `coupon` is
/// the coupon the order names (`None`: missing).
pub fn check_live_order(
    order: &OrderFacts,
    coupon: Option<&CouponFacts>,
    now: DateTime<Utc>,
) -> Option<Finding> {
    let coupon_id = order.coupon_id.clone()?;
    if !holds_lock(order, now) {
        return None;
    }
    let no = &order.order_no;
    let status = Arg::Key(order.status.label_key().into());
    let (message, fix) = match coupon {
        None => (
            crate::msg!(
                "reconcile-live-order-coupon-missing",
                no = no,
                status = status,
                coupon = coupon_id.as_str()
            ),
            Fix::None,
        ),
        Some(c) if c.stored_status == CouponStatus::Locked && c.order_no.as_deref() == Some(no) => {
            return None;
        }
        Some(c) => {
            let fix = if plan_link_repair(order, Some(c), c, now).is_ok() {
                Fix::RepairLink
            } else {
                Fix::None
            };
            let coupon_status = Arg::Key(c.stored_status.label_key().into());
            let message = match c.order_no.as_deref() {
                Some(n) => crate::msg!(
                    "reconcile-live-order-coupon-bound-elsewhere",
                    no = no,
                    status = status,
                    coupon = coupon_id.as_str(),
                    coupon_status = coupon_status,
                    other = n
                ),
                None => crate::msg!(
                    "reconcile-live-order-coupon-not-locked",
                    no = no,
                    status = status,
                    coupon = coupon_id.as_str(),
                    coupon_status = coupon_status
                ),
            };
            (message, fix)
        }
    };
    Some(Finding {
        kind: AnomalyKind::OrderActiveCouponNotLocked,
        coupon_id: Some(coupon_id.clone()),
        order_no: Some(no.clone()),
        user_id: Some(order.user_id.clone()),
        template_id: None,
        stock: None,
        message,
        fix,
    })
}

/// Checks a template's stock counter against the coupons it issued.
pub fn check_template_stock(
    template_id: &TemplateId,
    claimed: i64,
    issued: i64,
) -> Option<Finding> {
    (claimed != issued).then(|| Finding {
        kind: AnomalyKind::TemplateStockMismatch,
        coupon_id: None,
        order_no: None,
        user_id: None,
        template_id: Some(template_id.clone()),
        stock: Some((claimed, issued)),
        message: crate::msg!(
            "reconcile-template-stock-mismatch",
            template = template_id,
            claimed = claimed,
            issued = issued
        ),
        fix: Fix::None,
    })
}

/// Checks a template's report counters (`counted`, its all-days row)
/// against a recount of its coupons (`recounted`): claimed, the five
/// stored statuses and the discount given. The first figure that differs
/// is named, with both values.
pub fn check_template_counts(
    template_id: &TemplateId,
    counted: &Counts,
    recounted: &Counts,
) -> Option<Finding> {
    let figures = [
        (
            "reconcile-figure-claimed",
            counted.claimed,
            recounted.claimed,
        ),
        (
            "reconcile-figure-available",
            counted.status_available,
            recounted.status_available,
        ),
        (
            "reconcile-figure-locked",
            counted.status_locked,
            recounted.status_locked,
        ),
        (
            "reconcile-figure-used",
            counted.status_used,
            recounted.status_used,
        ),
        (
            "reconcile-figure-expired",
            counted.status_expired,
            recounted.status_expired,
        ),
        (
            "reconcile-figure-invalidated",
            counted.status_invalidated,
            recounted.status_invalidated,
        ),
        (
            "reconcile-figure-discount",
            counted.discount_cents,
            recounted.discount_cents,
        ),
    ];
    let (figure, counted, recounted) = figures.into_iter().find(|(_, a, b)| a != b)?;
    Some(Finding {
        kind: AnomalyKind::TemplateCountsMismatch,
        coupon_id: None,
        order_no: None,
        user_id: None,
        template_id: Some(template_id.clone()),
        stock: None,
        message: crate::msg!(
            "reconcile-template-counts-mismatch",
            template = template_id,
            figure = Arg::Key(figure.to_string()),
            counted = counted,
            recounted = recounted
        ),
        fix: Fix::None,
    })
}

/// A further coupon of an order as `coupons_out_of_step` reads it: the
/// order's record of it, and the coupon row itself (`None`: not in the
/// live table, archived after its use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FurtherRecord {
    pub coupon_id: CouponId,
    pub record: CouponLockStatus,
    pub coupon: Option<(CouponStatus, Option<OrderNo>)>,
}

/// `coupons_out_of_step`: the further coupon `f` of order `o` against the
/// coupon row and against the order's first coupon and status.
pub fn check_further(o: &OrderFacts, f: &FurtherRecord) -> Option<Finding> {
    let bound_here = |status: CouponStatus| {
        f.coupon
            .as_ref()
            .is_some_and(|(s, no)| *s == status && no.as_ref() == Some(&o.order_no))
    };
    let held_here = f.coupon.as_ref().is_none_or(|(s, no)| {
        matches!(s, CouponStatus::Locked | CouponStatus::Used) && no.as_ref() == Some(&o.order_no)
    });
    let row_agrees = match f.record {
        CouponLockStatus::Locked => bound_here(CouponStatus::Locked),
        // Archived after its use: only a used coupon leaves the table.
        CouponLockStatus::Used => f.coupon.is_none() || bound_here(CouponStatus::Used),
        CouponLockStatus::Released | CouponLockStatus::None => f.coupon.is_some() && !held_here,
    };
    let with_first = match (o.coupon_lock_status, f.record) {
        // Locked and not yet locked together.
        (CouponLockStatus::Locked | CouponLockStatus::None, r) => r == o.coupon_lock_status,
        // Used: a refund by line may return one before the other.
        (CouponLockStatus::Used | CouponLockStatus::Released, r) => {
            matches!(r, CouponLockStatus::Used | CouponLockStatus::Released)
        }
    };
    let over = matches!(o.status, OrderStatus::Closed | OrderStatus::Refunded)
        && matches!(f.record, CouponLockStatus::Locked | CouponLockStatus::Used);
    if row_agrees && with_first && !over {
        return None;
    }
    let coupon_status = match &f.coupon {
        Some((s, _)) => Arg::Key(s.label_key().into()),
        None => Arg::Key(CouponStatus::Used.label_key().into()),
    };
    Some(Finding {
        kind: AnomalyKind::CouponsOutOfStep,
        coupon_id: Some(f.coupon_id.clone()),
        order_no: Some(o.order_no.clone()),
        user_id: Some(o.user_id.clone()),
        template_id: None,
        stock: None,
        message: crate::msg!(
            "reconcile-coupons-out-of-step",
            coupon = f.coupon_id.as_str(),
            no = o.order_no.as_str(),
            record = Arg::Key(f.record.label_key().into()),
            first = Arg::Key(o.coupon_lock_status.label_key().into()),
            status = coupon_status
        ),
        fix: Fix::None,
    })
}

/// `budget_mismatch`: template `template_id`'s budget use (`used`: the
/// budget less what its shards have left), its reservations (`reserved`)
/// and what its coupons on orders take off them (`live`, `None` when too
/// many to add up here) agree.
pub fn check_budget(
    template_id: &TemplateId,
    used: i64,
    reserved: i64,
    live: Option<i64>,
) -> Option<Finding> {
    let (key, a, b) = if used != reserved {
        ("reconcile-budget-used-vs-reserved", used, reserved)
    } else {
        match live {
            Some(live) if live != reserved => ("reconcile-budget-reserved-vs-live", reserved, live),
            _ => return None,
        }
    };
    Some(Finding {
        kind: AnomalyKind::BudgetMismatch,
        coupon_id: None,
        order_no: None,
        user_id: None,
        template_id: Some(template_id.clone()),
        stock: None,
        message: crate::msg!(key, template = template_id, a = a, b = b),
        fix: Fix::None,
    })
}

/// An order's stored lines and split, as the cart checks read them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CartFacts {
    /// Each coupon with shares of the order's lines, and their sum.
    pub split: Vec<(CouponId, Cents)>,
    /// Each line: its id, its payable amount (its amount less every
    /// coupon's share) and the money refunded of it.
    pub lines: Vec<(String, Cents, Cents)>,
}

/// `split_mismatch`: the order's coupon's shares add up to the discount the
/// order took for it (`discount + compensation`: a deducted compensation
/// keeps the deposit's split), and no other coupon has shares.
pub fn check_split(o: &OrderFacts, cart: &CartFacts) -> Option<Finding> {
    // The order keeps the discounts' and compensations' sums: its own
    // coupon's are what the further coupons leave of them. A compensation
    // deducted at the final payment keeps the coupon's share on the lines.
    let (further, further_compensation) =
        o.further
            .iter()
            .fold((Cents::ZERO, Cents::ZERO), |(d, k), f| {
                (
                    d.saturating_add(f.discount),
                    k.saturating_add(f.compensation),
                )
            });
    let expected = o
        .money
        .discount
        .saturating_sub(further)
        .saturating_add(o.money.compensation.saturating_sub(further_compensation));
    let named = o.coupon_id.as_ref();
    let finding = |coupon: &CouponId, split: Cents, expected: Cents| Finding {
        kind: AnomalyKind::SplitMismatch,
        coupon_id: Some(coupon.clone()),
        order_no: Some(o.order_no.clone()),
        user_id: Some(o.user_id.clone()),
        template_id: None,
        stock: None,
        message: crate::msg!(
            "reconcile-split-mismatch",
            coupon = coupon.as_str(),
            no = o.order_no.as_str(),
            split = split.get(),
            expected = expected.get()
        ),
        fix: Fix::None,
    };
    // The order names a coupon with no share while one other coupon has
    // them: the order's link is wrong, not its split (the link kinds
    // report it, and the relink moves the split).
    if let Some(n) = named
        && o.further.is_empty()
        && cart.split.len() == 1
        && cart.split.iter().all(|(c, _)| c != n)
    {
        return None;
    }
    for (coupon, split) in &cart.split {
        let want = if Some(coupon) == named {
            expected
        } else {
            o.further
                .iter()
                .find(|f| f.id == *coupon)
                .map_or(Cents::ZERO, |f| f.discount.saturating_add(f.compensation))
        };
        if *split != want {
            return Some(finding(coupon, *split, want));
        }
    }
    // A discount the order took with no share anywhere.
    match named {
        Some(coupon) if !expected.is_zero() && !cart.split.iter().any(|(c, _)| c == coupon) => {
            Some(finding(coupon, Cents::ZERO, expected))
        }
        _ => None,
    }
}

/// `refund_over_payable`: a line whose refunds add up to more than what the
/// customer paid for it.
pub fn check_refunds(o: &OrderFacts, cart: &CartFacts) -> Option<Finding> {
    let (line, payable, refunded) = cart
        .lines
        .iter()
        .find(|(_, payable, refunded)| refunded > payable)?;
    Some(Finding {
        kind: AnomalyKind::RefundOverPayable,
        coupon_id: None,
        order_no: Some(o.order_no.clone()),
        user_id: Some(o.user_id.clone()),
        template_id: None,
        stock: None,
        message: crate::msg!(
            "reconcile-refund-over-payable",
            no = o.order_no.as_str(),
            line = line.as_str(),
            refunded = refunded.get(),
            payable = payable.get()
        ),
        fix: Fix::None,
    })
}

/// `coupon_not_returned_after_refunds`: the order (with `coupon_units`
/// read from its lines) still counts its coupon as used after every unit
/// it discounted was refunded.
pub fn check_coupon_returned(o: &OrderFacts, coupon: &CouponFacts) -> Option<Finding> {
    plan_return(o, coupon).ok()?;
    let refunded = o.coupon_units.map_or(0, |u| u.refunded);
    Some(Finding {
        kind: AnomalyKind::CouponNotReturnedAfterRefunds,
        coupon_id: Some(coupon.id.clone()),
        order_no: Some(o.order_no.clone()),
        user_id: Some(o.user_id.clone()),
        template_id: None,
        stock: None,
        message: crate::msg!(
            "reconcile-coupon-not-returned-after-refunds",
            coupon = coupon.id.as_str(),
            no = o.order_no.as_str(),
            refunded = refunded
        ),
        fix: Fix::ReturnCoupon,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::money::Cents;
    use crate::domain::order::{CouponLockStatus, OrderKind, OrderMoney};
    use chrono::Duration;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    fn order(kind: OrderKind, status: OrderStatus, coupon: Option<&str>) -> OrderFacts {
        OrderFacts {
            order_no: "P1".into(),
            user_id: "u1".into(),
            kind,
            status,
            coupon_id: coupon.map(CouponId::from),
            coupon_lock_status: CouponLockStatus::Locked,
            money: OrderMoney {
                total: Cents::from_stored(39900),
                deposit: Cents::from_stored(10000),
                discount: Cents::from_stored(5000),
                compensation: Cents::ZERO,
            },
            discount_snapshot: Cents::from_stored(5000),
            checkout_lock_expires_at: None,
            coupon_units: None,
            further: Vec::new(),
        }
    }

    fn coupon(id: &str, status: CouponStatus, order_no: Option<&str>) -> CouponFacts {
        CouponFacts {
            id: id.into(),
            code: format!("CODE-{id}"),
            user_id: "u1".into(),
            stored_status: status,
            order_no: order_no.map(OrderNo::from),
            ends_at: now() + Duration::days(3),
            template_id: None,
            kind: crate::domain::discount::DiscountKind::Fixed,
        }
    }

    fn kind_fix(f: Option<Finding>) -> Option<(AnomalyKind, Fix)> {
        f.map(|f| (f.kind, f.fix))
    }

    #[test]
    fn a_lock_left_on_a_closed_refunded_or_missing_order_is_released() {
        let c = coupon("c1", CouponStatus::Locked, Some("P1"));
        for st in [OrderStatus::Closed, OrderStatus::Refunded] {
            let o = order(OrderKind::Presale, st, Some("c1"));
            assert_eq!(
                kind_fix(check_bound_coupon(&c, Some(&o), None, now())),
                Some((AnomalyKind::LockedCouponOrderClosed, Fix::ReleaseCoupon))
            );
        }
        assert_eq!(
            kind_fix(check_bound_coupon(&c, None, None, now())),
            Some((AnomalyKind::LockedCouponOrderClosed, Fix::ReleaseCoupon))
        );
    }

    #[test]
    fn a_healthy_pair_is_no_finding() {
        let c = coupon("c1", CouponStatus::Locked, Some("P1"));
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid, Some("c1"));
        assert_eq!(check_bound_coupon(&c, Some(&o), None, now()), None);
        assert_eq!(check_live_order(&o, Some(&c), now()), None);
        let used = coupon("c1", CouponStatus::Used, Some("P1"));
        let paid = order(OrderKind::Normal, OrderStatus::Paid, Some("c1"));
        assert_eq!(check_bound_coupon(&used, Some(&paid), None, now()), None);
        assert_eq!(check_template_stock(&"t".into(), 5, 5), None);
    }

    #[test]
    fn a_freed_coupon_of_a_live_order_is_relocked_or_left_to_a_person() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid, Some("c1"));
        let freed = coupon("c1", CouponStatus::Available, None);
        assert_eq!(
            kind_fix(check_live_order(&o, Some(&freed), now())),
            Some((AnomalyKind::OrderActiveCouponNotLocked, Fix::RepairLink))
        );
        let gone = coupon("c1", CouponStatus::Expired, None);
        assert_eq!(
            kind_fix(check_live_order(&o, Some(&gone), now())),
            Some((AnomalyKind::OrderActiveCouponNotLocked, Fix::None))
        );
        assert_eq!(
            kind_fix(check_live_order(&o, None, now())),
            Some((AnomalyKind::OrderActiveCouponNotLocked, Fix::None))
        );
        // An order that is over holds nothing.
        let closed = order(OrderKind::Presale, OrderStatus::Closed, Some("c1"));
        assert_eq!(check_live_order(&closed, Some(&freed), now()), None);
    }

    #[test]
    fn a_coupon_bound_to_an_order_that_names_another_is_a_mismatch() {
        let used = coupon("c1", CouponStatus::Used, Some("P1"));
        let named = coupon("c2", CouponStatus::Available, None);
        let paid = order(OrderKind::Normal, OrderStatus::Paid, Some("c2"));
        assert_eq!(
            kind_fix(check_bound_coupon(&used, Some(&paid), Some(&named), now())),
            Some((AnomalyKind::CouponOrderMismatch, Fix::RepairLink))
        );
        // A stray lock on a live order that has its own coupon: release it.
        let stray = coupon("c3", CouponStatus::Locked, Some("P1"));
        let own = coupon("c2", CouponStatus::Locked, Some("P1"));
        let live = order(OrderKind::Presale, OrderStatus::DepositPaid, Some("c2"));
        assert_eq!(
            kind_fix(check_bound_coupon(&stray, Some(&live), Some(&own), now())),
            Some((AnomalyKind::CouponOrderMismatch, Fix::ReleaseCoupon))
        );
    }

    #[test]
    fn a_lapsed_checkout_still_holding_its_coupon_is_closed() {
        let c = coupon("c1", CouponStatus::Locked, Some("P1"));
        let mut o = order(OrderKind::Normal, OrderStatus::PendingPayment, Some("c1"));
        o.checkout_lock_expires_at = Some(now() - Duration::seconds(1));
        assert_eq!(
            kind_fix(check_bound_coupon(&c, Some(&o), None, now())),
            Some((AnomalyKind::StaleCheckoutLock, Fix::CancelOrder))
        );
        o.checkout_lock_expires_at = Some(now() + Duration::seconds(60));
        assert_eq!(check_bound_coupon(&c, Some(&o), None, now()), None);
    }

    #[test]
    fn a_coupon_still_locked_to_its_paid_order_is_marked_used() {
        let c = coupon("c1", CouponStatus::Locked, Some("P1"));
        let mut paid = order(OrderKind::Normal, OrderStatus::Paid, Some("c1"));
        paid.coupon_lock_status = CouponLockStatus::Used;
        assert_eq!(
            kind_fix(check_bound_coupon(&c, Some(&paid), None, now())),
            Some((AnomalyKind::LockedCouponOrderPaid, Fix::MarkCouponUsed))
        );
        let mut fp = order(OrderKind::Presale, OrderStatus::FinalPaid, Some("c1"));
        fp.coupon_lock_status = CouponLockStatus::Used;
        assert_eq!(
            kind_fix(check_bound_coupon(&c, Some(&fp), None, now())),
            Some((AnomalyKind::LockedCouponOrderPaid, Fix::MarkCouponUsed))
        );
        // The final payment withdrew the discount: release the lock.
        fp.coupon_lock_status = CouponLockStatus::Released;
        assert_eq!(
            kind_fix(check_bound_coupon(&c, Some(&fp), None, now())),
            Some((AnomalyKind::LockedCouponOrderPaid, Fix::ReleaseCoupon))
        );
        // Another customer's coupon: a person looks at it.
        let mut theirs = c.clone();
        theirs.user_id = "u2".into();
        assert_eq!(
            kind_fix(check_bound_coupon(&theirs, Some(&paid), None, now())),
            Some((AnomalyKind::LockedCouponOrderPaid, Fix::None))
        );
        // A locked coupon the paid order does not name is a mismatch.
        let stray = coupon("c9", CouponStatus::Locked, Some("P1"));
        assert_eq!(
            check_bound_coupon(&stray, Some(&paid), None, now()).map(|f| f.kind),
            Some(AnomalyKind::CouponOrderMismatch)
        );
    }

    #[test]
    fn a_used_coupon_on_an_unpaid_order_is_reported_for_a_person() {
        let used = coupon("c1", CouponStatus::Used, Some("P1"));
        let o = order(OrderKind::Normal, OrderStatus::Closed, Some("c1"));
        assert_eq!(
            kind_fix(check_bound_coupon(&used, Some(&o), None, now())),
            Some((AnomalyKind::UsedCouponOrderUnpaid, Fix::None))
        );
    }

    #[test]
    fn a_split_must_add_up_to_the_discount_of_the_coupon_the_order_names() {
        let o = order(OrderKind::Normal, OrderStatus::Paid, Some("c1"));
        let c = |v: i64| Cents::from_stored(v);
        let mut cart = CartFacts {
            split: vec![("c1".into(), c(5000))],
            lines: vec![("a".into(), c(34900), c(0))],
        };
        assert_eq!(check_split(&o, &cart), None);
        cart.split = vec![("c1".into(), c(4999))];
        assert_eq!(
            kind_fix(check_split(&o, &cart)),
            Some((AnomalyKind::SplitMismatch, Fix::None))
        );
        // A coupon the order no longer names keeps no share.
        cart.split = vec![("c1".into(), c(5000)), ("c0".into(), c(1))];
        assert_eq!(
            check_split(&o, &cart).and_then(|f| f.coupon_id),
            Some("c0".into())
        );
        // A discount with no share at all.
        cart.split = vec![];
        assert!(check_split(&o, &cart).is_some());
        // Shares of the coupon bound to the order while it names another:
        // a link to repair, which moves the split with it.
        cart.split = vec![("c0".into(), c(5000))];
        assert_eq!(check_split(&o, &cart), None);
        // Shares left on an order that names no coupon.
        let bare = order(OrderKind::Normal, OrderStatus::Paid, None);
        assert!(check_split(&bare, &cart).is_some());
        // A deducted compensation keeps the deposit's split.
        let mut compensated = order(OrderKind::Presale, OrderStatus::FinalPaid, Some("c1"));
        compensated.money.discount = Cents::ZERO;
        compensated.money.compensation = c(5000);
        cart.split = vec![("c1".into(), c(5000))];
        assert_eq!(check_split(&compensated, &cart), None);
    }

    #[test]
    fn a_line_refunded_beyond_its_payable_amount_is_reported_for_a_person() {
        let o = order(OrderKind::Normal, OrderStatus::Paid, Some("c1"));
        let c = |v: i64| Cents::from_stored(v);
        let mut cart = CartFacts {
            split: vec![],
            lines: vec![("a".into(), c(1000), c(1000)), ("b".into(), c(500), c(0))],
        };
        assert_eq!(check_refunds(&o, &cart), None);
        cart.lines[1].2 = c(501);
        let f = check_refunds(&o, &cart);
        assert_eq!(
            kind_fix(f.clone()),
            Some((AnomalyKind::RefundOverPayable, Fix::None))
        );
        assert!(f.is_some_and(|f| crate::i18n::Lang::En.msg(&f.message).contains("line b")));
    }

    #[test]
    fn a_used_coupon_left_after_every_unit_it_discounted_was_refunded_is_returned() {
        use crate::domain::facts::CouponUnits;
        let mut o = order(OrderKind::Normal, OrderStatus::Paid, Some("c1"));
        o.coupon_lock_status = CouponLockStatus::Used;
        let c = coupon("c1", CouponStatus::Used, Some("P1"));
        o.coupon_units = Some(CouponUnits {
            kept: 1,
            refunded: 1,
        });
        assert_eq!(check_coupon_returned(&o, &c), None);
        o.coupon_units = Some(CouponUnits {
            kept: 0,
            refunded: 2,
        });
        assert_eq!(
            kind_fix(check_coupon_returned(&o, &c)),
            Some((
                AnomalyKind::CouponNotReturnedAfterRefunds,
                Fix::ReturnCoupon
            ))
        );
    }

    #[test]
    fn kinds_and_fixes_round_trip_through_their_names() {
        for k in AnomalyKind::ALL {
            assert_eq!(AnomalyKind::parse(k.as_str()), Some(k));
        }
        for f in Fix::ALL {
            assert_eq!(Fix::parse(f.as_str()), Some(f));
        }
        assert_eq!(
            check_template_stock(&"t".into(), 5, 4).map(|f| f.kind),
            Some(AnomalyKind::TemplateStockMismatch)
        );
    }

    #[test]
    fn a_further_coupon_agrees_with_its_row_and_may_outlive_a_first_coupon_returned_by_line() {
        let mut o = order(OrderKind::Normal, OrderStatus::Paid, Some("C1"));
        o.coupon_lock_status = CouponLockStatus::Released;
        let record = |record, status, bound: bool| FurtherRecord {
            coupon_id: "C2".into(),
            record,
            coupon: Some((status, bound.then(|| OrderNo::from("P1")))),
        };
        // The first coupon came back with its lines; the shop coupon stays.
        assert_eq!(
            check_further(
                &o,
                &record(CouponLockStatus::Used, CouponStatus::Used, true)
            ),
            None
        );
        // Recorded used, but the coupon is available: out of step.
        let f = check_further(
            &o,
            &record(CouponLockStatus::Used, CouponStatus::Available, false),
        );
        assert_eq!(f.map(|f| f.kind), Some(AnomalyKind::CouponsOutOfStep));
        // A live order locks its coupons together.
        let mut live = order(OrderKind::Normal, OrderStatus::PendingPayment, Some("C1"));
        live.coupon_lock_status = CouponLockStatus::Locked;
        assert_eq!(
            check_further(
                &live,
                &record(CouponLockStatus::Locked, CouponStatus::Locked, true)
            ),
            None
        );
        let f = check_further(
            &live,
            &record(CouponLockStatus::Released, CouponStatus::Available, false),
        );
        assert_eq!(f.map(|f| f.kind), Some(AnomalyKind::CouponsOutOfStep));
    }

    #[test]
    fn a_budget_agrees_when_its_use_reservations_and_orders_add_up() {
        let t = TemplateId::from("T1");
        assert_eq!(check_budget(&t, 5_000, 5_000, Some(5_000)), None);
        assert_eq!(
            check_budget(&t, 5_000, 5_000, None),
            None,
            "too many to add up"
        );
        let f = check_budget(&t, 5_000, 5_001, Some(5_001));
        assert_eq!(f.map(|f| f.kind), Some(AnomalyKind::BudgetMismatch));
        let f = check_budget(&t, 5_000, 5_000, Some(4_000));
        assert_eq!(f.map(|f| f.kind), Some(AnomalyKind::BudgetMismatch));
    }
}
