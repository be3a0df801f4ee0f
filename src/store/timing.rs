//! Timing of named store calls, for `/metrics`: the histogram
//! `couponkeeper_db_query_duration_seconds{query}` and the counter
//! `couponkeeper_db_slow_queries_total{query}` (see
//! [`crate::metrics::QueryTimings`]).
//!
//! Why here and this way: store functions take a bare `&mut AnyConnection`
//! and know nothing of the process's metrics, while every transaction of
//! the service runs through [`super::Db::write`] or [`super::Db::read`].
//! Those run the caller's work inside a task-local scope holding the
//! [`QueryTimings`] of the `Db` (when it has one, [`super::Db::with_query_timings`]),
//! and a timed store function starts with one line,
//! `let _timed = timing::call("coupons.get");`, whose guard records the
//! call's duration when it ends (also when it fails or its caller is
//! cancelled). The name is a `&'static str` written in the code: the
//! label set is bounded by the program, never SQL text or ids. A call
//! outside such a scope (a test's own SQL, the migrator) records nothing.
//!
//! A call is timed from its first statement to the end of its last, in the
//! caller's task: it includes waiting for SQLite's worker thread, not for
//! a pool connection or the write gate (those come before the transaction
//! begins). A timed call that makes another timed call is counted in both.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use crate::metrics::QueryTimings;

tokio::task_local! {
    static TIMINGS: Arc<QueryTimings>;
}

/// Runs `work` with `timings` receiving its timed store calls.
pub(crate) async fn scope<F: Future>(timings: Option<Arc<QueryTimings>>, work: F) -> F::Output {
    match timings {
        Some(t) => TIMINGS.scope(t, work).await,
        None => work.await,
    }
}

/// Records the duration of one store call when dropped.
#[must_use = "the call is timed until the guard is dropped"]
pub struct CallTimer {
    name: &'static str,
    started: Instant,
    timings: Option<Arc<QueryTimings>>,
}

/// Starts timing the store call `name` (`table.what`, e.g. `coupons.lock`).
pub fn call(name: &'static str) -> CallTimer {
    CallTimer {
        name,
        started: Instant::now(),
        timings: TIMINGS.try_with(Arc::clone).ok(),
    }
}

impl Drop for CallTimer {
    fn drop(&mut self) {
        let Some(t) = &self.timings else {
            return;
        };
        let elapsed = self.started.elapsed();
        if t.observe(self.name, elapsed) && t.slow_ms() > 0 {
            tracing::warn!(
                query = self.name,
                duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                slow_query_ms = t.slow_ms(),
                "slow store call"
            );
        }
    }
}
