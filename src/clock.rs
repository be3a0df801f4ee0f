//! The one source of "now". Production uses [`SystemClock`]; tests use
//! [`ManualClock`] and move time forward without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Duration, Utc};

use crate::domain::time::{from_ms, to_ms};

/// Reads the current instant, in UTC.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
}

/// Shared handle to whichever clock the process runs on.
pub type SharedClock = Arc<dyn Clock>;

/// The machine's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that only moves when told to; millisecond resolution, like the
/// store.
#[derive(Debug)]
pub struct ManualClock {
    now_ms: AtomicI64,
}

impl ManualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now_ms: AtomicI64::new(to_ms(start)),
        }
    }

    pub fn set(&self, t: DateTime<Utc>) {
        self.now_ms.store(to_ms(t), Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        self.now_ms
            .fetch_add(by.num_milliseconds(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        from_ms(self.now_ms.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = Utc::now();
        let c = ManualClock::new(start);
        assert_eq!(to_ms(c.now()), to_ms(start));
        c.advance(Duration::seconds(11));
        assert_eq!(to_ms(c.now()) - to_ms(start), 11_000);
    }
}
