//! The deadlines the service hands to the expiry worker's timing wheel
//! ([`Deadline`], through the bounded [`Scheduler`]; `Service::schedule`
//! hands them over). A leaf, importing no operation, so that every
//! operation that creates a deadline (claims, checkout locks, campaigns)
//! can schedule it without importing the jobs' operations, which call
//! those operations in turn.

use crate::domain::ids::{CampaignId, CouponId, OrderNo};

/// A deadline the timing wheel acts on. The database stays the authority:
/// when one fires, the job re-checks the row inside its transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Deadline {
    /// A coupon's `ends_at`.
    CouponEnd(CouponId),
    /// A normal order's checkout lock lapses.
    CheckoutLapse(OrderNo),
    /// A presale campaign's final-payment window ends (the worker adds the
    /// grace period).
    PresaleWindowEnd(CampaignId),
}

/// Where the service hands new deadlines: the expiry worker's inbox. Bounded;
/// when it is full a deadline is dropped and the next refill or sweep picks
/// it up from the database.
#[derive(Debug, Clone)]
pub struct Scheduler {
    tx: tokio::sync::mpsc::Sender<(i64, Deadline)>,
}

impl Scheduler {
    /// A scheduler and the worker's end of it, holding at most `capacity`.
    pub fn channel(capacity: usize) -> (Scheduler, tokio::sync::mpsc::Receiver<(i64, Deadline)>) {
        let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
        (Scheduler { tx }, rx)
    }

    /// Hands `deadline`, due at `due_ms`, to the worker; drops it when
    /// the inbox is full (the next refill or sweep finds it).
    pub fn try_send(&self, due_ms: i64, deadline: Deadline) {
        let _ = self.tx.try_send((due_ms, deadline));
    }
}
