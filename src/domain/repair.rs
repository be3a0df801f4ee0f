//! Repairing a broken link between an order and its coupon: the pure
//! decision of whether a repair is safe and which one.
//!
//! Two of the anomaly kinds of API.md cannot be fixed by releasing a lock:
//! - `order_active_coupon_not_locked`: a live order names its coupon, but
//!   the coupon was set back to `available` (an update outside the
//!   transaction, a hand edit). The customer would lose the discount at the
//!   next payment, or the final payment would be refused outright. Repair:
//!   lock the coupon to the order again (**relock**), while it is still
//!   available and valid.
//! - `coupon_order_mismatch`: the order names one coupon while another
//!   coupon is bound to (used by, or locked to) the order. Repair: point the
//!   order at the coupon that is bound to it (**relink**), when the coupon
//!   the order names is not bound to it.
//!
//!
//! A third kind, `locked_coupon_order_paid`, is a stale lock: the order was
//! paid with its coupon (a paid normal order, or a fully paid presale order
//! whose final payment applied it), but the coupon still reads `locked`
//! instead of `used`. Repair: mark the coupon **used** for that order
//! ([`plan_mark_used`]); the customer keeps what they paid, and the coupon
//! can no longer be released and used twice.
//!
//! A fourth, a coupon still `used` by an order after every unit it
//! discounted was refunded by line, is a return the refund missed (the
//! refund rule returns a coupon with the last unit it discounted). Repair:
//! **return** it to its customer by the release rule ([`plan_return`]).
//!
//! All are refused unless every fact agrees, so a repair can never take a
//! coupon from another order or another customer.

use chrono::{DateTime, Utc};

use super::coupon::CouponStatus;
use super::facts::{CouponFacts, OrderFacts};
use super::order::{CouponLockStatus, OrderKind, OrderStatus};

/// A safe repair of an order's coupon link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkRepair {
    /// Lock the order's own coupon to it again: coupon `available` →
    /// `locked` bound to the order; the order's lock status `locked`.
    Relock,
    /// Point the order at the coupon bound to it; the order's lock status
    /// becomes `lock_status` (`used` for a paid order, `locked` for a live
    /// one).
    Relink { lock_status: CouponLockStatus },
}

/// Why no repair applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRepair {
    /// The coupon belongs to another customer.
    OtherCustomer,
    /// The order is not in a state that holds a coupon this way.
    OrderState,
    /// The coupon is not in a state this repair starts from.
    CouponState,
    /// The coupon is bound to another order.
    BoundElsewhere,
    /// The coupon the order names is bound to it as well: nothing to relink.
    NamedCouponBound,
    /// The order does not name this coupon.
    NotNamed,
}

impl NoRepair {
    pub fn message(self) -> &'static str {
        match self {
            NoRepair::OtherCustomer => "the coupon belongs to another customer",
            NoRepair::OrderState => "the order is not in a state that holds a coupon this way",
            NoRepair::CouponState => "the coupon is not in a state this repair starts from",
            NoRepair::BoundElsewhere => "the coupon is bound to another order",
            NoRepair::NamedCouponBound => "the coupon the order names is bound to it as well",
            NoRepair::NotNamed => "the order does not use this coupon",
        }
    }
}

/// Whether the order still holds its coupon locked while it waits: a
/// deposit-paid presale order, or a normal order within its checkout lock.
fn holds_locked(o: &OrderFacts, now: DateTime<Utc>) -> bool {
    match (o.kind, o.status) {
        (OrderKind::Presale, OrderStatus::DepositPaid) => true,
        (OrderKind::Normal, OrderStatus::PendingPayment) => {
            o.checkout_lock_expires_at.is_some_and(|t| t > now)
        }
        _ => false,
    }
}

/// Whether an order in `status` with lock status `lock` was paid with its
/// coupon, so that the coupon must read `used` by it: a paid normal order,
/// or a fully paid presale order whose final payment applied the coupon (not
/// one whose discount the campaign's policy withdrew).
pub fn order_took_coupon(status: OrderStatus, lock: CouponLockStatus) -> bool {
    match status {
        OrderStatus::Paid => true,
        OrderStatus::FinalPaid => lock == CouponLockStatus::Used,
        _ => false,
    }
}

/// Decides whether `coupon` may be marked `used` for `order`: the order
/// names it and was paid with it ([`order_took_coupon`]), and the coupon,
/// the same customer's, is still `locked` to that order.
pub fn plan_mark_used(order: &OrderFacts, coupon: &CouponFacts) -> Result<(), NoRepair> {
    if coupon.user_id != order.user_id {
        return Err(NoRepair::OtherCustomer);
    }
    if order.coupon_id.as_deref() != Some(coupon.id.as_str()) {
        return Err(NoRepair::NotNamed);
    }
    if coupon.order_no.as_deref() != Some(order.order_no.as_str()) {
        return Err(NoRepair::BoundElsewhere);
    }
    if coupon.stored_status != CouponStatus::Locked {
        return Err(NoRepair::CouponState);
    }
    if !order_took_coupon(order.status, order.coupon_lock_status) {
        return Err(NoRepair::OrderState);
    }
    Ok(())
}

/// Decides whether `coupon` may be returned to its customer: the order
/// names it, it is `used` by that order, and every unit of the lines it
/// discounted has been refunded (`order.coupon_units`, read with the
/// order's lines) while the order still counts it as used.
pub fn plan_return(order: &OrderFacts, coupon: &CouponFacts) -> Result<(), NoRepair> {
    if coupon.user_id != order.user_id {
        return Err(NoRepair::OtherCustomer);
    }
    if order.coupon_id.as_deref() != Some(coupon.id.as_str()) {
        return Err(NoRepair::NotNamed);
    }
    if coupon.order_no.as_deref() != Some(order.order_no.as_str()) {
        return Err(NoRepair::BoundElsewhere);
    }
    if coupon.stored_status != CouponStatus::Used {
        return Err(NoRepair::CouponState);
    }
    let refunded_every_unit = order
        .coupon_units
        .is_some_and(|u| u.refunded > 0 && u.kept == 0);
    if !refunded_every_unit || !order_took_coupon(order.status, order.coupon_lock_status) {
        return Err(NoRepair::OrderState);
    }
    Ok(())
}

/// Decides the repair of `order`'s link to `candidate`. `named` is the
/// coupon the order names now (if it names one and it exists).
pub fn plan_link_repair(
    order: &OrderFacts,
    named: Option<&CouponFacts>,
    candidate: &CouponFacts,
    now: DateTime<Utc>,
) -> Result<LinkRepair, NoRepair> {
    if candidate.user_id != order.user_id {
        return Err(NoRepair::OtherCustomer);
    }
    let no = order.order_no.as_str();
    if order.coupon_id.as_deref() == Some(candidate.id.as_str()) {
        // The order names this coupon: relock it if it was freed.
        if !holds_locked(order, now) {
            return Err(NoRepair::OrderState);
        }
        return match (candidate.stored_status, candidate.order_no.as_deref()) {
            (CouponStatus::Available, None) if candidate.ends_at > now => Ok(LinkRepair::Relock),
            (CouponStatus::Available, Some(_)) => Err(NoRepair::BoundElsewhere),
            _ => Err(NoRepair::CouponState),
        };
    }
    // The order names another coupon (or none): relink to this one if it
    // is bound to the order in the way the order's state expects.
    if candidate.order_no.as_deref() != Some(no) {
        return Err(NoRepair::BoundElsewhere);
    }
    if named.is_some_and(|n| n.order_no.as_deref() == Some(no)) {
        return Err(NoRepair::NamedCouponBound);
    }
    match (candidate.stored_status, order.status) {
        (CouponStatus::Used, OrderStatus::Paid | OrderStatus::FinalPaid) => {
            Ok(LinkRepair::Relink {
                lock_status: CouponLockStatus::Used,
            })
        }
        (CouponStatus::Locked, _) if holds_locked(order, now) => Ok(LinkRepair::Relink {
            lock_status: CouponLockStatus::Locked,
        }),
        (CouponStatus::Used | CouponStatus::Locked, _) => Err(NoRepair::OrderState),
        _ => Err(NoRepair::CouponState),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ids::{CouponId, OrderNo};
    use crate::domain::money::Cents;
    use crate::domain::order::OrderMoney;
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

    #[test]
    fn a_used_coupon_is_returned_only_once_every_unit_it_discounted_is_refunded() {
        use crate::domain::facts::CouponUnits;
        let mut o = order(OrderKind::Normal, OrderStatus::Paid, Some("c1"));
        o.coupon_lock_status = CouponLockStatus::Used;
        let c = coupon("c1", CouponStatus::Used, Some("P1"));
        // No refund by line yet, or units still kept: nothing to return.
        assert_eq!(plan_return(&o, &c), Err(NoRepair::OrderState));
        o.coupon_units = Some(CouponUnits {
            kept: 1,
            refunded: 2,
        });
        assert_eq!(plan_return(&o, &c), Err(NoRepair::OrderState));
        o.coupon_units = Some(CouponUnits {
            kept: 0,
            refunded: 3,
        });
        assert_eq!(plan_return(&o, &c), Ok(()));
        // Only the order's own coupon, used by it, of the same customer.
        let locked = coupon("c1", CouponStatus::Locked, Some("P1"));
        assert_eq!(plan_return(&o, &locked), Err(NoRepair::CouponState));
        let elsewhere = coupon("c1", CouponStatus::Used, Some("P9"));
        assert_eq!(plan_return(&o, &elsewhere), Err(NoRepair::BoundElsewhere));
        let other = coupon("c2", CouponStatus::Used, Some("P1"));
        assert_eq!(plan_return(&o, &other), Err(NoRepair::NotNamed));
        let mut theirs = c.clone();
        theirs.user_id = "u2".into();
        assert_eq!(plan_return(&o, &theirs), Err(NoRepair::OtherCustomer));
        // An order already released its coupon: nothing to return.
        o.coupon_lock_status = CouponLockStatus::Released;
        o.status = OrderStatus::FinalPaid;
        assert_eq!(plan_return(&o, &c), Err(NoRepair::OrderState));
    }

    #[test]
    fn a_freed_coupon_of_a_deposit_paid_order_is_relocked_while_valid() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid, Some("c1"));
        let c = coupon("c1", CouponStatus::Available, None);
        assert_eq!(
            plan_link_repair(&o, Some(&c), &c, now()),
            Ok(LinkRepair::Relock)
        );
        let mut ended = c.clone();
        ended.ends_at = now();
        assert_eq!(
            plan_link_repair(&o, Some(&ended), &ended, now()),
            Err(NoRepair::CouponState)
        );
        let used = coupon("c1", CouponStatus::Used, Some("P9"));
        assert_eq!(
            plan_link_repair(&o, Some(&used), &used, now()),
            Err(NoRepair::CouponState)
        );
    }

    #[test]
    fn relock_needs_an_order_that_still_waits_with_its_coupon() {
        let closed = order(OrderKind::Presale, OrderStatus::Closed, Some("c1"));
        let c = coupon("c1", CouponStatus::Available, None);
        assert_eq!(
            plan_link_repair(&closed, Some(&c), &c, now()),
            Err(NoRepair::OrderState)
        );
        let mut checkout = order(OrderKind::Normal, OrderStatus::PendingPayment, Some("c1"));
        checkout.checkout_lock_expires_at = Some(now() + Duration::minutes(5));
        assert_eq!(
            plan_link_repair(&checkout, Some(&c), &c, now()),
            Ok(LinkRepair::Relock)
        );
        checkout.checkout_lock_expires_at = Some(now());
        assert_eq!(
            plan_link_repair(&checkout, Some(&c), &c, now()),
            Err(NoRepair::OrderState)
        );
    }

    #[test]
    fn a_paid_order_pointing_at_the_wrong_coupon_is_relinked_to_the_used_one() {
        let o = order(OrderKind::Normal, OrderStatus::Paid, Some("c2"));
        let named = coupon("c2", CouponStatus::Available, None);
        let used = coupon("c1", CouponStatus::Used, Some("P1"));
        assert_eq!(
            plan_link_repair(&o, Some(&named), &used, now()),
            Ok(LinkRepair::Relink {
                lock_status: CouponLockStatus::Used
            })
        );
        // Not when the named coupon is bound to the order too.
        let named_bound = coupon("c2", CouponStatus::Used, Some("P1"));
        assert_eq!(
            plan_link_repair(&o, Some(&named_bound), &used, now()),
            Err(NoRepair::NamedCouponBound)
        );
        // Not a coupon bound to another order.
        let elsewhere = coupon("c1", CouponStatus::Used, Some("P7"));
        assert_eq!(
            plan_link_repair(&o, Some(&named), &elsewhere, now()),
            Err(NoRepair::BoundElsewhere)
        );
    }

    #[test]
    fn a_live_order_is_relinked_to_a_coupon_locked_to_it() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid, None);
        let locked = coupon("c1", CouponStatus::Locked, Some("P1"));
        assert_eq!(
            plan_link_repair(&o, None, &locked, now()),
            Ok(LinkRepair::Relink {
                lock_status: CouponLockStatus::Locked
            })
        );
        let closed = order(OrderKind::Presale, OrderStatus::Closed, None);
        assert_eq!(
            plan_link_repair(&closed, None, &locked, now()),
            Err(NoRepair::OrderState)
        );
    }

    #[test]
    fn a_coupon_still_locked_to_the_order_paid_with_it_is_marked_used() {
        let c = coupon("c1", CouponStatus::Locked, Some("P1"));
        let mut paid = order(OrderKind::Normal, OrderStatus::Paid, Some("c1"));
        paid.coupon_lock_status = CouponLockStatus::Used;
        assert_eq!(plan_mark_used(&paid, &c), Ok(()));
        let mut fp = order(OrderKind::Presale, OrderStatus::FinalPaid, Some("c1"));
        fp.coupon_lock_status = CouponLockStatus::Used;
        assert_eq!(plan_mark_used(&fp, &c), Ok(()));
        // A final payment that withdrew the discount did not use the coupon.
        fp.coupon_lock_status = CouponLockStatus::Released;
        assert_eq!(plan_mark_used(&fp, &c), Err(NoRepair::OrderState));
        // Not paid (yet, or any more).
        for st in [
            OrderStatus::PendingPayment,
            OrderStatus::DepositPaid,
            OrderStatus::Refunded,
            OrderStatus::Closed,
        ] {
            let o = order(OrderKind::Normal, st, Some("c1"));
            assert_eq!(plan_mark_used(&o, &c), Err(NoRepair::OrderState), "{st:?}");
        }
        // The facts of the coupon must hold too.
        let used = coupon("c1", CouponStatus::Used, Some("P1"));
        assert_eq!(plan_mark_used(&paid, &used), Err(NoRepair::CouponState));
        let elsewhere = coupon("c1", CouponStatus::Locked, Some("P9"));
        assert_eq!(
            plan_mark_used(&paid, &elsewhere),
            Err(NoRepair::BoundElsewhere)
        );
        let other = coupon("c2", CouponStatus::Locked, Some("P1"));
        assert_eq!(plan_mark_used(&paid, &other), Err(NoRepair::NotNamed));
        let mut theirs = c.clone();
        theirs.user_id = "u2".into();
        assert_eq!(plan_mark_used(&paid, &theirs), Err(NoRepair::OtherCustomer));
    }

    #[test]
    fn another_customers_coupon_is_never_linked() {
        let o = order(OrderKind::Presale, OrderStatus::DepositPaid, Some("c1"));
        let mut c = coupon("c1", CouponStatus::Available, None);
        c.user_id = "u2".into();
        assert_eq!(
            plan_link_repair(&o, Some(&c), &c, now()),
            Err(NoRepair::OtherCustomer)
        );
    }
}
