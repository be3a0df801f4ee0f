//! The one source of "now". `serve` runs on a [`DatabaseClock`], which
//! follows the database server's clock so that every instance decides
//! expiry, lock lapses and payment windows on the same time; tests use
//! [`ManualClock`] and move time forward without sleeping; the commands
//! that run once (`staff add`, demo data) use [`SystemClock`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration as StdDuration, Instant};

use chrono::{DateTime, Duration, Utc};
use futures_util::future::BoxFuture;
use tokio::sync::watch;

use crate::domain::time::{from_ms, to_ms};

/// Reads the current instant, in UTC.
pub trait Clock: Send + Sync + 'static {
    /// The instant every decision reads.
    fn now(&self) -> DateTime<Utc>;

    /// This instance's own clock, for the skew gauge (this instance's
    /// clock minus the database's). The same as [`Clock::now`] unless the
    /// clock follows another source, as [`DatabaseClock`] does; then it is
    /// the machine's wall clock, which the decisions no longer read.
    fn wall_now(&self) -> DateTime<Utc> {
        self.now()
    }
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

/// A monotonic count of microseconds from an arbitrary start: what
/// [`DatabaseClock`] measures elapsed time with. It never jumps when the
/// wall clock is set.
pub trait Ticks: Send + Sync + 'static {
    fn micros(&self) -> i64;
}

/// [`Ticks`] from `std::time::Instant` (`CLOCK_MONOTONIC` on Linux: not
/// moved by setting the wall clock, only slewed by NTP's rate corrections;
/// it stands still while the machine is suspended, which the next
/// re-anchoring corrects).
#[derive(Debug, Clone, Copy)]
pub struct InstantTicks {
    start: Instant,
}

impl InstantTicks {
    pub fn new() -> Self {
        InstantTicks {
            start: Instant::now(),
        }
    }
}

impl Default for InstantTicks {
    fn default() -> Self {
        Self::new()
    }
}

impl Ticks for InstantTicks {
    fn micros(&self) -> i64 {
        i64::try_from(self.start.elapsed().as_micros()).unwrap_or(i64::MAX)
    }
}

/// [`Ticks`] that move only when told to, for tests.
#[derive(Debug, Default)]
pub struct ManualTicks {
    micros: AtomicI64,
}

impl ManualTicks {
    pub fn advance_ms(&self, ms: i64) {
        self.micros.fetch_add(ms * 1000, Ordering::SeqCst);
    }
}

impl Ticks for ManualTicks {
    fn micros(&self) -> i64 {
        self.micros.load(Ordering::SeqCst)
    }
}

/// One reading of the database server's clock: the [`Ticks`] just before
/// the query went out and just after its answer came back (after any wait
/// for a pooled connection, which would otherwise widen the round trip),
/// and the time the database gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSample {
    pub sent_us: i64,
    pub database_ms: i64,
    pub received_us: i64,
}

/// Why a reading of the database's clock failed.
pub type TimeSourceError = Box<dyn std::error::Error + Send + Sync>;

/// Where [`DatabaseClock`] reads the database's clock: `store::Db` in
/// production, a scripted source in tests.
pub trait TimeSource: Send + Sync + 'static {
    /// Reads the database's clock once, stamping the round trip with
    /// `ticks`.
    fn sample<'a>(
        &'a self,
        ticks: &'a dyn Ticks,
    ) -> BoxFuture<'a, Result<TimeSample, TimeSourceError>>;
}

/// A reading whose round trip took longer than this is not used once the
/// clock is anchored: the database's answer may come from anywhere within
/// the round trip, so half of it is the reading's uncertainty, and a
/// half-second is already more than the current anchor drifts in minutes.
pub const MAX_ROUND_TRIP_MS: i64 = 1_000;

/// How long one reading may take before it counts as failed.
pub const SAMPLE_TIMEOUT: StdDuration = StdDuration::from_secs(5);

/// A step of the clock larger than this when re-anchoring is logged as a
/// warning (the database's clock was set, or this machine was suspended).
const STEP_WARN_MS: i64 = 1_000;

/// No anchor yet: [`DatabaseClock`] reads its fallback.
const NO_ANCHOR: i64 = i64::MIN;

/// What one re-anchoring did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resync {
    /// The reading is the new anchor. `step_ms`: how far it moved the
    /// clock at that moment (negative: the database is behind this
    /// clock's reading; [`DatabaseClock::now`] then holds still until the
    /// database catches up instead of going back).
    Anchored { step_ms: i64, round_trip_ms: i64 },
    /// The round trip took longer than [`MAX_ROUND_TRIP_MS`]; the anchor
    /// stays as it was.
    TooSlow { round_trip_ms: i64 },
}

/// A clock that follows the database server's clock, so that every
/// instance on one database decides on the same time, and that does not
/// move when this machine's wall clock is set.
///
/// The anchor is one reading of the database's clock, taken as the time at
/// the midpoint of the query's round trip; [`Clock::now`] is that time plus
/// the monotonic time elapsed since the midpoint ([`Ticks`]). A background
/// task ([`DatabaseClock::keep_anchored`]) takes a new reading every
/// interval. Until the first reading succeeds the clock reads `fallback`
/// (the system clock in `serve`).
///
/// Never backwards: every reading is at least the previous one in this
/// process. When a new anchor (or the first one, after the fallback) would
/// move time back, the clock holds still until the new anchor's time
/// passes the last reading: held, nothing expires, lapses or is released
/// earlier than the database's clock says; moving back would instead let
/// a decision already taken (a coupon expired at 12:00:00.5) be followed
/// by one that reads an earlier time.
///
/// On SQLite the database's clock is this machine's clock read through
/// SQLite; the same code runs there, so the clock still ignores wall clock
/// steps until the next re-anchoring and both stores behave alike.
pub struct DatabaseClock {
    fallback: SharedClock,
    ticks: Arc<dyn Ticks>,
    /// Database microseconds minus ticks at the anchor; [`NO_ANCHOR`]
    /// before the first reading. One atomic, so `now` needs no lock.
    offset_us: AtomicI64,
    /// The latest reading handed out (milliseconds): the floor of the next.
    floor_ms: AtomicI64,
    /// The last reading failed (a failure is logged once, then its end).
    failing: AtomicBool,
}

impl DatabaseClock {
    /// The production clock: the system clock as fallback, `Instant` ticks.
    pub fn new() -> Self {
        Self::with_parts(Arc::new(SystemClock), Arc::new(InstantTicks::new()))
    }

    /// A clock on the given fallback and ticks (tests pass manual ones).
    pub fn with_parts(fallback: SharedClock, ticks: Arc<dyn Ticks>) -> Self {
        DatabaseClock {
            fallback,
            ticks,
            offset_us: AtomicI64::new(NO_ANCHOR),
            floor_ms: AtomicI64::new(i64::MIN),
            failing: AtomicBool::new(false),
        }
    }

    /// Whether a reading of the database's clock has succeeded yet.
    pub fn is_anchored(&self) -> bool {
        self.offset_us.load(Ordering::Acquire) != NO_ANCHOR
    }

    /// What the anchor (or the fallback) says now, before the floor.
    fn reading_ms(&self) -> i64 {
        match self.offset_us.load(Ordering::Acquire) {
            NO_ANCHOR => to_ms(self.fallback.now()),
            offset => self.ticks.micros().saturating_add(offset).div_euclid(1000),
        }
    }

    /// Milliseconds since the epoch, never less than a reading already
    /// handed out.
    pub fn now_ms(&self) -> i64 {
        let reading = self.reading_ms();
        let before = self.floor_ms.fetch_max(reading, Ordering::AcqRel);
        before.max(reading)
    }

    /// Reads the database's clock once through `source` and, unless the
    /// round trip was too slow (and an anchor exists), makes it the anchor.
    pub async fn resync(&self, source: &dyn TimeSource) -> Result<Resync, TimeSourceError> {
        let sample = source.sample(self.ticks.as_ref()).await?;
        let round_trip_us = (sample.received_us - sample.sent_us).max(0);
        let round_trip_ms = round_trip_us / 1000;
        if round_trip_ms > MAX_ROUND_TRIP_MS && self.is_anchored() {
            return Ok(Resync::TooSlow { round_trip_ms });
        }
        let midpoint_us = sample.sent_us + round_trip_us / 2;
        let offset = sample
            .database_ms
            .saturating_mul(1000)
            .saturating_sub(midpoint_us);
        let before = self.reading_ms();
        self.offset_us.store(offset, Ordering::Release);
        let step_ms = self.reading_ms() - before;
        Ok(Resync::Anchored {
            step_ms,
            round_trip_ms,
        })
    }

    /// [`DatabaseClock::resync`] bounded by [`SAMPLE_TIMEOUT`], logging
    /// what is worth knowing: a failure once (then its end), a large step.
    pub async fn resync_logged(&self, source: &dyn TimeSource) {
        let outcome = match tokio::time::timeout(SAMPLE_TIMEOUT, self.resync(source)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("no answer within {} s", SAMPLE_TIMEOUT.as_secs()).into()),
        };
        match outcome {
            Ok(resync) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("reading the database's clock again");
                }
                match resync {
                    Resync::Anchored {
                        step_ms,
                        round_trip_ms,
                    } if step_ms.abs() > STEP_WARN_MS => tracing::warn!(
                        step_ms,
                        round_trip_ms,
                        "the clock moved to the database's time by more than a second (a backward step is held, not applied)"
                    ),
                    Resync::Anchored {
                        step_ms,
                        round_trip_ms,
                    } => {
                        tracing::debug!(step_ms, round_trip_ms, "clock re-anchored on the database")
                    }
                    Resync::TooSlow { round_trip_ms } => tracing::debug!(
                        round_trip_ms,
                        "database clock reading too slow to use; keeping the anchor"
                    ),
                }
            }
            Err(e) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    let anchored = self.is_anchored();
                    tracing::warn!(
                        error = %e,
                        anchored,
                        "cannot read the database's clock; going on from the last anchor (or the system clock before the first)"
                    );
                }
            }
        }
    }

    /// Re-anchors every `every` until `stop` turns true (or its sender is
    /// gone). One reading at a time, each bounded by [`SAMPLE_TIMEOUT`].
    pub async fn keep_anchored(
        self: Arc<Self>,
        source: Arc<dyn TimeSource>,
        every: StdDuration,
        mut stop: watch::Receiver<bool>,
    ) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                }
            }
            self.resync_logged(source.as_ref()).await;
        }
    }
}

impl Default for DatabaseClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for DatabaseClock {
    fn now(&self) -> DateTime<Utc> {
        from_ms(self.now_ms())
    }

    fn wall_now(&self) -> DateTime<Utc> {
        self.fallback.now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let start = Utc::now();
        let c = ManualClock::new(start);
        assert_eq!(to_ms(c.now()), to_ms(start));
        c.advance(Duration::seconds(11));
        assert_eq!(to_ms(c.now()) - to_ms(start), 11_000);
    }

    /// A database whose clock reads the scripted times, each answer taking
    /// its scripted round trip on the shared ticks.
    struct Scripted {
        ticks: Arc<ManualTicks>,
        /// (database time in ms, round trip in ms), used front first.
        readings: Mutex<Vec<(i64, i64)>>,
    }

    impl TimeSource for Scripted {
        fn sample<'a>(
            &'a self,
            ticks: &'a dyn Ticks,
        ) -> BoxFuture<'a, Result<TimeSample, TimeSourceError>> {
            Box::pin(async move {
                let next = self
                    .readings
                    .lock()
                    .map_err(|_| "poisoned")?
                    .pop()
                    .ok_or("the database is away")?;
                let (database_ms, round_trip_ms) = next;
                let sent_us = ticks.micros();
                self.ticks.advance_ms(round_trip_ms);
                Ok(TimeSample {
                    sent_us,
                    database_ms,
                    received_us: ticks.micros(),
                })
            })
        }
    }

    /// 2030-01-01T00:00:00Z.
    const DB_MS: i64 = 1_893_456_000_000;

    fn rig(
        wall_ms: i64,
        readings: &[(i64, i64)],
    ) -> (DatabaseClock, Arc<ManualClock>, Arc<ManualTicks>, Scripted) {
        let wall = Arc::new(ManualClock::new(from_ms(wall_ms)));
        let ticks = Arc::new(ManualTicks::default());
        // Popped from the back: reverse so the script reads in order.
        let mut script = readings.to_vec();
        script.reverse();
        let source = Scripted {
            ticks: ticks.clone(),
            readings: Mutex::new(script),
        };
        let clock = DatabaseClock::with_parts(wall.clone(), ticks.clone());
        (clock, wall, ticks, source)
    }

    #[tokio::test]
    async fn before_the_first_reading_the_clock_reads_the_fallback() {
        let (clock, wall, _, source) = rig(DB_MS - 5_000, &[]);
        assert!(!clock.is_anchored());
        assert_eq!(clock.now_ms(), DB_MS - 5_000);
        assert!(clock.resync(&source).await.is_err());
        wall.advance(Duration::seconds(2));
        assert_eq!(clock.now_ms(), DB_MS - 3_000);
    }

    #[tokio::test]
    async fn the_reading_is_placed_at_the_midpoint_of_the_round_trip() {
        let (clock, _, ticks, source) = rig(DB_MS, &[(DB_MS, 200)]);
        ticks.advance_ms(7_000);
        let r = clock.resync(&source).await.expect("reads");
        // The answer came back 200 ms after the query left; the
        // database's time belongs 100 ms before that.
        assert_eq!(
            r,
            Resync::Anchored {
                step_ms: 100,
                round_trip_ms: 200
            }
        );
        assert_eq!(clock.now_ms(), DB_MS + 100);
        ticks.advance_ms(50);
        assert_eq!(clock.now_ms(), DB_MS + 150);
    }

    #[tokio::test]
    async fn a_wall_clock_jump_does_not_move_the_clock() {
        let (clock, wall, ticks, source) = rig(DB_MS, &[(DB_MS, 0)]);
        clock.resync(&source).await.expect("reads");
        wall.advance(Duration::hours(1));
        assert_eq!(clock.now_ms(), DB_MS);
        wall.advance(Duration::hours(-3));
        assert_eq!(clock.now_ms(), DB_MS);
        ticks.advance_ms(1_500);
        assert_eq!(clock.now_ms(), DB_MS + 1_500);
        // The skew gauge still sees the machine's clock.
        assert_eq!(to_ms(clock.wall_now()), DB_MS - 2 * 3_600_000);
    }

    #[tokio::test]
    async fn re_anchoring_forward_moves_the_clock_to_the_database() {
        let (clock, _, ticks, source) = rig(DB_MS, &[(DB_MS, 0), (DB_MS + 32_000, 0)]);
        clock.resync(&source).await.expect("first reading");
        ticks.advance_ms(30_000);
        assert_eq!(clock.now_ms(), DB_MS + 30_000);
        // The database's clock was set 2 s forward meanwhile.
        let r = clock.resync(&source).await.expect("second reading");
        assert_eq!(
            r,
            Resync::Anchored {
                step_ms: 2_000,
                round_trip_ms: 0
            }
        );
        assert_eq!(clock.now_ms(), DB_MS + 32_000);
        ticks.advance_ms(10);
        assert_eq!(clock.now_ms(), DB_MS + 32_010);
    }

    #[tokio::test]
    async fn re_anchoring_backward_holds_the_clock_until_the_database_catches_up() {
        let (clock, _, ticks, source) = rig(DB_MS, &[(DB_MS, 0), (DB_MS + 27_000, 0)]);
        clock.resync(&source).await.expect("first reading");
        ticks.advance_ms(30_000);
        assert_eq!(clock.now_ms(), DB_MS + 30_000);
        // The database says 3 s less than this clock read a moment ago.
        let r = clock.resync(&source).await.expect("second reading");
        assert_eq!(
            r,
            Resync::Anchored {
                step_ms: -3_000,
                round_trip_ms: 0
            }
        );
        let mut last = clock.now_ms();
        assert_eq!(last, DB_MS + 30_000, "held, not moved back");
        for _ in 0..40 {
            ticks.advance_ms(100);
            let now = clock.now_ms();
            assert!(now >= last, "went back from {last} to {now}");
            last = now;
        }
        // 4 s later the database's time (27 s + 4 s) has passed the hold.
        assert_eq!(last, DB_MS + 31_000);
    }

    #[tokio::test]
    async fn the_first_reading_behind_the_fallback_holds_instead_of_going_back() {
        let (clock, _, ticks, source) = rig(DB_MS + 10_000, &[(DB_MS, 0)]);
        assert_eq!(clock.now_ms(), DB_MS + 10_000);
        clock.resync(&source).await.expect("reads");
        assert_eq!(clock.now_ms(), DB_MS + 10_000);
        ticks.advance_ms(10_001);
        assert_eq!(clock.now_ms(), DB_MS + 10_001);
    }

    #[tokio::test]
    async fn a_reading_with_a_slow_round_trip_keeps_the_anchor() {
        let (clock, _, ticks, source) = rig(DB_MS, &[(DB_MS, 0), (DB_MS + 60_000, 4_000)]);
        clock.resync(&source).await.expect("first reading");
        let r = clock.resync(&source).await.expect("second reading");
        assert_eq!(
            r,
            Resync::TooSlow {
                round_trip_ms: 4_000
            }
        );
        // The 4 s of the slow round trip passed on the old anchor.
        assert_eq!(clock.now_ms(), DB_MS + 4_000);
        ticks.advance_ms(1);
        assert_eq!(clock.now_ms(), DB_MS + 4_001);
    }

    #[tokio::test]
    async fn a_failed_reading_keeps_the_anchor() {
        let (clock, wall, ticks, source) = rig(DB_MS, &[(DB_MS - 500, 0)]);
        clock.resync(&source).await.expect("first reading");
        ticks.advance_ms(1_000);
        wall.advance(Duration::minutes(5));
        clock.resync_logged(&source).await;
        assert_eq!(clock.now_ms(), DB_MS + 500);
    }
}
