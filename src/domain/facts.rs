//! The facts about an order and a coupon that the health check
//! ([`super::health`]), the repairs ([`super::repair`]) and reconciliation
//! ([`super::reconcile`]) decide on: plain data read from the rows, in a
//! module of its own so that those three share it without importing each
//! other.

use chrono::{DateTime, Utc};

use super::coupon::CouponStatus;
use super::discount::DiscountKind;
use super::ids::{CouponId, OrderNo, TemplateId, UserId};
use super::money::Cents;
use super::order::{CouponLockStatus, OrderKind, OrderMoney, OrderStatus};

/// The order as the checks need it.
#[derive(Debug, Clone)]
pub struct OrderFacts {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub kind: OrderKind,
    pub status: OrderStatus,
    pub coupon_id: Option<CouponId>,
    pub coupon_lock_status: CouponLockStatus,
    pub money: OrderMoney,
    /// The discount promised at deposit (presale) or checkout (normal).
    pub discount_snapshot: Cents,
    pub checkout_lock_expires_at: Option<DateTime<Utc>>,
    /// After a refund by line: the units of the lines the order's coupon
    /// discounted, kept and refunded. `None` when nothing was refunded by
    /// line (or the order has no coupon).
    pub coupon_units: Option<CouponUnits>,
    /// Its coupons beyond the one it names (叠加), in order.
    pub further: Vec<FurtherCoupon>,
}

impl OrderFacts {
    /// Whether `id` is one of the order's coupons: the one it names or a
    /// further one.
    pub fn holds(&self, id: &CouponId) -> bool {
        self.coupon_id.as_ref() == Some(id) || self.further.iter().any(|f| f.id == *id)
    }
}

/// A coupon of an order beyond the one the order names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FurtherCoupon {
    pub id: CouponId,
    /// What it takes off the order.
    pub discount: Cents,
    /// What a presale order's final payment deducted in its place (its
    /// share stays on the lines).
    pub compensation: Cents,
    pub lock_status: CouponLockStatus,
}

/// Units of the lines an order's coupon discounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CouponUnits {
    /// Still with the customer: the coupon stays used for them.
    pub kept: i64,
    pub refunded: i64,
}

/// A coupon as the checks need it.
#[derive(Debug, Clone)]
pub struct CouponFacts {
    pub id: CouponId,
    /// What people call it: messages name the coupon by its code.
    pub code: String,
    /// The customer who owns it.
    pub user_id: UserId,
    pub stored_status: CouponStatus,
    /// The order the coupon is bound to (locked to or used by), if any.
    pub order_no: Option<OrderNo>,
    pub ends_at: DateTime<Utc>,
    pub template_id: Option<TemplateId>,
    /// `fixed` or `percent`.
    pub kind: DiscountKind,
}
