//! Pacing of the operators' batch jobs (bulk issue and void, redeem
//! codes): how many rows the next batch takes and how long the job rests
//! after it. Pure: the runners time their batches and ask.
//!
//! Why: on SQLite there is one writer, and every write of a request queues
//! behind the batch in progress (the store's write gate is first come,
//! first served). A batch of a fixed 100 bulk-issue lines took about 50 ms
//! on a 2-core machine, so a customer's checkout (three writes) waited up
//! to three batches: `bench bulk` measured its p99 at 164 ms during a bulk
//! issue against 15 ms idle. A shared-writer pace sizes each batch to take
//! about [`SHARED_WRITER_TARGET`] and then rests as long as the batch ran,
//! so a request waits behind at most about one short batch and the job
//! takes at most half of the writer's time. On PostgreSQL a batch holds
//! only its own rows' locks and requests do not queue behind it: the pace
//! is fixed (the batch rows and a short rest).

use std::time::Duration;

/// How long one batch may hold SQLite's writer.
pub const SHARED_WRITER_TARGET: Duration = Duration::from_millis(10);
/// Fewest rows a shared-writer batch takes (below this a batch's own
/// transaction costs more than its rows).
pub const SHARED_WRITER_MIN_ROWS: i64 = 5;

/// The pace of one job runner.
#[derive(Debug, Clone)]
pub struct Pace {
    rows: i64,
    min_rows: i64,
    max_rows: i64,
    /// `Some`: the batch duration aimed at, and the rest equals the
    /// batch's time (a shared writer); `None`: fixed rows.
    target: Option<Duration>,
    min_rest: Duration,
}

impl Pace {
    /// Fixed batches of `rows`, each followed by `rest` (PostgreSQL).
    pub fn fixed(rows: i64, rest: Duration) -> Pace {
        let rows = rows.max(1);
        Pace {
            rows,
            min_rows: rows,
            max_rows: rows,
            target: None,
            min_rest: rest,
        }
    }

    /// Batches sized to take about [`SHARED_WRITER_TARGET`], at most
    /// `max_rows` (the first batch takes `max_rows`), each followed by a
    /// rest as long as the batch ran and at least `min_rest` (SQLite).
    pub fn shared_writer(max_rows: i64, min_rest: Duration) -> Pace {
        let max_rows = max_rows.max(SHARED_WRITER_MIN_ROWS);
        Pace {
            rows: max_rows,
            min_rows: SHARED_WRITER_MIN_ROWS,
            max_rows,
            target: Some(SHARED_WRITER_TARGET),
            min_rest,
        }
    }

    /// Rows the next batch takes.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// After a batch that took `took`: the rest before the next one. A
    /// shared-writer pace also resizes the next batch toward its target,
    /// at most halving or doubling it at a time (one slow batch, a
    /// checkpoint say, does not collapse it).
    pub fn after(&mut self, took: Duration) -> Duration {
        let Some(target) = self.target else {
            return self.min_rest;
        };
        let took_s = took.as_secs_f64().max(1e-6);
        let scaled = (self.rows as f64 * target.as_secs_f64() / took_s).round();
        let scaled = if scaled.is_finite() {
            scaled.min(i64::MAX as f64) as i64
        } else {
            self.max_rows
        };
        self.rows = scaled
            .clamp(self.rows / 2, self.rows.saturating_mul(2))
            .clamp(self.min_rows, self.max_rows);
        took.max(self.min_rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REST: Duration = Duration::from_millis(2);

    #[test]
    fn a_fixed_pace_never_changes_its_rows_or_its_rest() {
        let mut p = Pace::fixed(500, REST);
        for took in [1, 50, 5_000] {
            assert_eq!(p.after(Duration::from_millis(took)), REST);
            assert_eq!(p.rows(), 500);
        }
    }

    #[test]
    fn a_slow_shared_writer_batch_shrinks_the_next_toward_the_target_at_most_by_half() {
        let mut p = Pace::shared_writer(100, REST);
        assert_eq!(p.rows(), 100);
        // 100 rows in 50 ms: 20 would take 10 ms, but one step halves.
        assert_eq!(
            p.after(Duration::from_millis(50)),
            Duration::from_millis(50)
        );
        assert_eq!(p.rows(), 50);
        // 50 rows in 25 ms: 20 would fit, again at most halved.
        p.after(Duration::from_millis(25));
        assert_eq!(p.rows(), 25);
        // 25 rows in 12.5 ms: 20.
        p.after(Duration::from_micros(12_500));
        assert_eq!(p.rows(), 20);
        // On target: unchanged, and the rest is as long as the batch.
        assert_eq!(
            p.after(Duration::from_millis(10)),
            Duration::from_millis(10)
        );
        assert_eq!(p.rows(), 20);
    }

    #[test]
    fn a_fast_shared_writer_batch_grows_the_next_at_most_double_and_never_past_the_maximum() {
        let mut p = Pace::shared_writer(100, REST);
        p.after(Duration::from_millis(400));
        assert_eq!(p.rows(), 50);
        // 50 rows in 1 ms: 500 would fit, one step doubles.
        assert_eq!(p.after(Duration::from_millis(1)), REST);
        assert_eq!(p.rows(), 100);
        p.after(Duration::from_millis(1));
        assert_eq!(p.rows(), 100, "never past the maximum");
    }

    #[test]
    fn a_shared_writer_batch_never_drops_below_the_minimum_rows_nor_rests_under_the_minimum() {
        let mut p = Pace::shared_writer(100, REST);
        for _ in 0..20 {
            p.after(Duration::from_secs(10));
        }
        assert_eq!(p.rows(), SHARED_WRITER_MIN_ROWS);
        assert_eq!(p.after(Duration::ZERO), REST);
        assert!(p.rows() <= SHARED_WRITER_MIN_ROWS * 2);
    }
}
