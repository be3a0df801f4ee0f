//! Orders as couponkeeper sees them: kinds, the two status machines, the
//! coupon-lock status shown on an order, and what the customer owes next.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::money::Cents;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKind {
    Normal,
    Presale,
}

impl OrderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderKind::Normal => "normal",
            OrderKind::Presale => "presale",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "normal" => Some(OrderKind::Normal),
            "presale" => Some(OrderKind::Presale),
            _ => None,
        }
    }
}

impl std::fmt::Display for OrderKind {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Normal: `pending_payment -> paid -> refunded`, `pending_payment -> closed`.
/// Presale: `pending_deposit -> deposit_paid -> final_paid -> refunded`,
/// `pending_deposit -> closed`, `deposit_paid -> closed | refunded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    PendingPayment,
    Paid,
    PendingDeposit,
    DepositPaid,
    FinalPaid,
    Closed,
    Refunded,
}

impl OrderStatus {
    pub const ALL: [OrderStatus; 7] = [
        OrderStatus::PendingPayment,
        OrderStatus::Paid,
        OrderStatus::PendingDeposit,
        OrderStatus::DepositPaid,
        OrderStatus::FinalPaid,
        OrderStatus::Closed,
        OrderStatus::Refunded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::PendingPayment => "pending_payment",
            OrderStatus::Paid => "paid",
            OrderStatus::PendingDeposit => "pending_deposit",
            OrderStatus::DepositPaid => "deposit_paid",
            OrderStatus::FinalPaid => "final_paid",
            OrderStatus::Closed => "closed",
            OrderStatus::Refunded => "refunded",
        }
    }

    /// The catalog key of the status's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            OrderStatus::PendingPayment => "order-status-pending_payment",
            OrderStatus::Paid => "order-status-paid",
            OrderStatus::PendingDeposit => "order-status-pending_deposit",
            OrderStatus::DepositPaid => "order-status-deposit_paid",
            OrderStatus::FinalPaid => "order-status-final_paid",
            OrderStatus::Closed => "order-status-closed",
            OrderStatus::Refunded => "order-status-refunded",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        OrderStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Live orders may still hold a coupon lock legitimately.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            OrderStatus::PendingPayment | OrderStatus::PendingDeposit | OrderStatus::DepositPaid
        )
    }

    /// The status a new order of `kind` starts in.
    pub fn initial(kind: OrderKind) -> Self {
        match kind {
            OrderKind::Normal => OrderStatus::PendingPayment,
            OrderKind::Presale => OrderStatus::PendingDeposit,
        }
    }
}

impl std::fmt::Display for OrderStatus {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An order status change the machine does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalOrderTransition {
    pub kind: OrderKind,
    pub from: OrderStatus,
    pub to: OrderStatus,
}

impl std::fmt::Display for IllegalOrderTransition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a {} order that is {} cannot become {}",
            self.kind.as_str(),
            self.from.as_str(),
            self.to.as_str()
        )
    }
}

/// The one function that knows which order transitions exist.
pub fn check_order_transition(
    kind: OrderKind,
    from: OrderStatus,
    to: OrderStatus,
) -> Result<(), IllegalOrderTransition> {
    use OrderStatus::*;
    let allowed = match kind {
        OrderKind::Normal => matches!(
            (from, to),
            (PendingPayment, Paid) | (Paid, Refunded) | (PendingPayment, Closed)
        ),
        OrderKind::Presale => matches!(
            (from, to),
            (PendingDeposit, DepositPaid)
                | (DepositPaid, FinalPaid)
                | (FinalPaid, Refunded)
                | (PendingDeposit, Closed)
                | (DepositPaid, Closed)
                | (DepositPaid, Refunded)
        ),
    };
    if allowed {
        Ok(())
    } else {
        Err(IllegalOrderTransition { kind, from, to })
    }
}

/// A step in an order's life after its creation. Each step knows where it
/// takes an order ([`OrderStep::target`]), so a service names what happened
/// (`OrderStep::DepositPayment`) and the domain decides the statuses; the
/// step's word is the `action` of the order's event row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrderStep {
    /// A normal order paid (its coupon used).
    Pay,
    /// A presale deposit paid (its coupon locked, the discount snapshotted).
    DepositPayment,
    /// A presale final payment inside the campaign's window.
    FinalPayment,
    /// Closed by the shop or the customer before payment.
    Cancel,
    /// Money returned after payment.
    Refund,
    /// Closed by the sweep: a normal order's checkout lock lapsed unpaid.
    CheckoutLockLapsed,
    /// Closed by the sweep: a presale order missed its payment window.
    PresaleTimeout,
}

impl OrderStep {
    pub const ALL: [OrderStep; 7] = [
        OrderStep::Pay,
        OrderStep::DepositPayment,
        OrderStep::FinalPayment,
        OrderStep::Cancel,
        OrderStep::Refund,
        OrderStep::CheckoutLockLapsed,
        OrderStep::PresaleTimeout,
    ];

    /// The event row's `action` word.
    pub fn as_str(self) -> &'static str {
        match self {
            OrderStep::Pay => "pay",
            OrderStep::DepositPayment => "deposit_payment",
            OrderStep::FinalPayment => "final_payment",
            OrderStep::Cancel => "cancel",
            OrderStep::Refund => "refund",
            OrderStep::CheckoutLockLapsed => "checkout_lock_lapsed",
            OrderStep::PresaleTimeout => "presale_timeout",
        }
    }

    /// The status this step leads to.
    fn to_status(self) -> OrderStatus {
        match self {
            OrderStep::Pay => OrderStatus::Paid,
            OrderStep::DepositPayment => OrderStatus::DepositPaid,
            OrderStep::FinalPayment => OrderStatus::FinalPaid,
            OrderStep::Refund => OrderStatus::Refunded,
            OrderStep::Cancel | OrderStep::CheckoutLockLapsed | OrderStep::PresaleTimeout => {
                OrderStatus::Closed
            }
        }
    }

    /// Where this step takes an order of `kind` that is `from`, or why it
    /// cannot: the transition table of [`check_order_transition`] decides.
    pub fn target(
        self,
        kind: OrderKind,
        from: OrderStatus,
    ) -> Result<OrderStatus, IllegalOrderTransition> {
        let to = self.to_status();
        check_order_transition(kind, from, to)?;
        Ok(to)
    }
}

impl std::fmt::Display for OrderStep {
    /// The stored word, as event rows and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The coupon side of an order, as the order records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CouponLockStatus {
    None,
    Locked,
    Used,
    Released,
}

impl CouponLockStatus {
    /// The catalog key of the state's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            CouponLockStatus::None => "lock-status-none",
            CouponLockStatus::Locked => "lock-status-locked",
            CouponLockStatus::Used => "lock-status-used",
            CouponLockStatus::Released => "lock-status-released",
        }
    }

    pub const ALL: [CouponLockStatus; 4] = [
        CouponLockStatus::None,
        CouponLockStatus::Locked,
        CouponLockStatus::Used,
        CouponLockStatus::Released,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CouponLockStatus::None => "none",
            CouponLockStatus::Locked => "locked",
            CouponLockStatus::Used => "used",
            CouponLockStatus::Released => "released",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(CouponLockStatus::None),
            "locked" => Some(CouponLockStatus::Locked),
            "used" => Some(CouponLockStatus::Used),
            "released" => Some(CouponLockStatus::Released),
            _ => None,
        }
    }
}

impl std::fmt::Display for CouponLockStatus {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The money fields of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderMoney {
    pub total: Cents,
    /// Zero for normal orders.
    pub deposit: Cents,
    pub discount: Cents,
    pub compensation: Cents,
}

/// What the customer must pay at the order's next payment; zero once no
/// payment is pending.
pub fn amount_due(kind: OrderKind, status: OrderStatus, m: OrderMoney) -> Cents {
    match (kind, status) {
        (OrderKind::Normal, OrderStatus::PendingPayment) => m.total.saturating_sub(m.discount),
        (OrderKind::Presale, OrderStatus::PendingDeposit) => m.deposit,
        (OrderKind::Presale, OrderStatus::DepositPaid) => final_amount(m),
        _ => Cents::ZERO,
    }
}

/// The final payment of a presale order: total less deposit, discount and
/// compensation, never below zero.
pub fn final_amount(m: OrderMoney) -> Cents {
    m.total
        .saturating_sub(m.deposit)
        .saturating_sub(m.discount)
        .saturating_sub(m.compensation)
}

/// The discount a coupon may give on a presale order: never more than what
/// is left after the deposit, so nobody is owed money at final payment.
pub fn presale_discount_cap(total: Cents, deposit: Cents) -> Cents {
    total.saturating_sub(deposit)
}

/// Whether a normal order still awaiting payment has outlived its checkout
/// lock: it can no longer be paid, its coupon is no longer held for it, and
/// closing it is what the sweep does next.
pub fn checkout_lapsed(
    kind: OrderKind,
    status: OrderStatus,
    checkout_lock_expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> bool {
    kind == OrderKind::Normal
        && status == OrderStatus::PendingPayment
        && checkout_lock_expires_at.is_some_and(|t| t <= now)
}

/// Whether an order still holds its coupon: it is live and, if it is a
/// normal order awaiting payment, its checkout lock has not lapsed.
/// Releasing such a coupon takes the customer's discount away.
pub fn holds_coupon(
    kind: OrderKind,
    status: OrderStatus,
    checkout_lock_expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> bool {
    status.is_live() && !checkout_lapsed(kind, status, checkout_lock_expires_at, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_and_presale_machines_allow_only_their_own_edges() {
        use OrderStatus::*;
        assert!(check_order_transition(OrderKind::Normal, PendingPayment, Paid).is_ok());
        assert!(check_order_transition(OrderKind::Normal, PendingDeposit, DepositPaid).is_err());
        assert!(check_order_transition(OrderKind::Presale, DepositPaid, Refunded).is_ok());
        assert!(check_order_transition(OrderKind::Presale, FinalPaid, Closed).is_err());
        assert!(check_order_transition(OrderKind::Normal, Paid, Closed).is_err());
        let mut count = 0;
        for kind in [OrderKind::Normal, OrderKind::Presale] {
            for from in OrderStatus::ALL {
                for to in OrderStatus::ALL {
                    count += usize::from(check_order_transition(kind, from, to).is_ok());
                }
            }
        }
        assert_eq!(count, 9, "3 normal edges + 6 presale edges");
    }

    #[test]
    fn every_edge_of_the_machines_is_reached_by_exactly_one_step() {
        use OrderStatus::*;
        let mut reached = std::collections::BTreeMap::new();
        for kind in [OrderKind::Normal, OrderKind::Presale] {
            for from in OrderStatus::ALL {
                for step in OrderStep::ALL {
                    if let Ok(to) = step.target(kind, from) {
                        assert!(check_order_transition(kind, from, to).is_ok());
                        reached
                            .entry((kind.as_str(), from.as_str(), to.as_str()))
                            .or_insert_with(Vec::new)
                            .push(step);
                    }
                }
            }
        }
        // 9 edges; the three closing steps share the `-> closed` edges.
        assert_eq!(reached.len(), 9);
        assert_eq!(
            OrderStep::DepositPayment.target(OrderKind::Presale, PendingDeposit),
            Ok(DepositPaid)
        );
        assert!(
            OrderStep::Pay
                .target(OrderKind::Presale, PendingDeposit)
                .is_err()
        );
        assert!(
            OrderStep::Refund
                .target(OrderKind::Normal, PendingPayment)
                .is_err()
        );
        assert_eq!(
            OrderStep::CheckoutLockLapsed.target(OrderKind::Normal, PendingPayment),
            Ok(Closed)
        );
    }

    #[test]
    fn only_orders_awaiting_a_payment_are_live() {
        use OrderStatus::*;
        let live: Vec<OrderStatus> = OrderStatus::ALL
            .into_iter()
            .filter(|s| s.is_live())
            .collect();
        assert_eq!(live, vec![PendingPayment, PendingDeposit, DepositPaid]);
    }

    #[test]
    fn a_live_order_holds_its_coupon_until_its_checkout_lapses() {
        use OrderStatus::*;
        let now = Utc::now();
        let later = Some(now + chrono::Duration::seconds(1));
        let earlier = Some(now - chrono::Duration::seconds(1));
        assert!(holds_coupon(OrderKind::Normal, PendingPayment, later, now));
        assert!(holds_coupon(OrderKind::Normal, PendingPayment, None, now));
        assert!(!holds_coupon(
            OrderKind::Normal,
            PendingPayment,
            earlier,
            now
        ));
        assert!(holds_coupon(OrderKind::Presale, DepositPaid, earlier, now));
        assert!(!holds_coupon(OrderKind::Normal, Paid, later, now));
        assert!(!holds_coupon(OrderKind::Presale, Closed, None, now));
    }

    #[test]
    fn amount_due_follows_the_next_payment() {
        let m = OrderMoney {
            total: Cents::from_stored(39900),
            deposit: Cents::from_stored(10000),
            discount: Cents::from_stored(5000),
            compensation: Cents::ZERO,
        };
        assert_eq!(
            amount_due(OrderKind::Presale, OrderStatus::PendingDeposit, m).get(),
            10000
        );
        assert_eq!(
            amount_due(OrderKind::Presale, OrderStatus::DepositPaid, m).get(),
            24900
        );
        assert_eq!(
            amount_due(OrderKind::Presale, OrderStatus::FinalPaid, m).get(),
            0
        );
        let n = OrderMoney {
            deposit: Cents::ZERO,
            ..m
        };
        assert_eq!(
            amount_due(OrderKind::Normal, OrderStatus::PendingPayment, n).get(),
            34900
        );
    }
}
