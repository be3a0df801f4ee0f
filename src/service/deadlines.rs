//! The deadlines the service hands to the expiry worker's timing wheel
//! ([`Deadline`], through the bounded [`Scheduler`]). A module of its own,
//! importing no operation, so that every operation that creates a deadline
//! (claims, checkout locks, campaigns) can schedule it without importing
//! the jobs' operations, which call those operations in turn.

use chrono::{DateTime, Utc};

use super::Service;
use crate::domain::time::to_ms;

/// A deadline the timing wheel acts on. The database stays the authority:
/// when one fires, the job re-checks the row inside its transaction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Deadline {
    /// A coupon's `ends_at`.
    CouponEnd(String),
    /// A normal order's checkout lock lapses.
    CheckoutLapse(String),
    /// A presale campaign's final-payment window ends (the worker adds the
    /// grace period).
    PresaleWindowEnd(String),
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
}

impl Service {
    /// Connects the expiry worker: from now on new deadlines (claims,
    /// checkout locks, campaigns, overdue coupons seen by reads) are handed
    /// to it. Only the first call takes effect.
    pub fn attach_scheduler(&self, scheduler: Scheduler) {
        let _ = self.inner.scheduler.set(scheduler);
    }

    /// Hands a deadline to the worker, if one is attached. Never blocks.
    pub(crate) fn schedule(&self, due: DateTime<Utc>, deadline: Deadline) {
        if let Some(s) = self.inner.scheduler.get() {
            let _ = s.tx.try_send((to_ms(due), deadline));
        }
    }
}
