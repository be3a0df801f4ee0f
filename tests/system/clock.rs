//! The database clock (`couponkeeper::clock::DatabaseClock`, what `serve`
//! decides on) on a real database of the store under test: it reads the
//! database's time, and two instances whose machines disagree read the
//! same time. The clock's rules (midpoint of the round trip, wall clock
//! jumps, re-anchoring forward and back) are unit tests in `src/clock.rs`
//! on a scripted database.

use std::sync::Arc;

use chrono::{Duration, Utc};

use crate::common::TestDb;
use couponkeeper::clock::{Clock, DatabaseClock, InstantTicks, ManualClock, Resync};
use couponkeeper::domain::time::to_ms;

/// Slack beyond the reading's own uncertainty (half its round trip): a
/// loaded test machine may pause a thread between two readings.
const SLACK_MS: i64 = 50;

/// Anchors `clock` on `db` and returns the reading's round trip.
async fn anchor(clock: &DatabaseClock, db: &TestDb) -> i64 {
    match clock
        .resync(&db.db)
        .await
        .expect("reads the database's clock")
    {
        Resync::Anchored { round_trip_ms, .. } => round_trip_ms,
        other => panic!("a first reading is always the anchor: {other:?}"),
    }
}

#[tokio::test]
async fn the_database_clock_reads_the_databases_time_within_its_round_trip() {
    let db = TestDb::fresh().await;
    // A fallback an hour off: once anchored, it must not matter.
    let clock = DatabaseClock::with_parts(
        Arc::new(ManualClock::new(Utc::now() - Duration::hours(1))),
        Arc::new(InstantTicks::new()),
    );
    assert!(!clock.is_anchored());
    let round_trip_ms = anchor(&clock, &db).await;
    assert!(clock.is_anchored());
    let tolerance_ms = round_trip_ms / 2 + 1 + SLACK_MS;
    let mut farthest_ms = 0;
    for _ in 0..5 {
        let before = db.db.clock_ms().await.expect("database clock");
        let ours = to_ms(clock.now());
        let after = db.db.clock_ms().await.expect("database clock");
        assert!(
            before - tolerance_ms <= ours && ours <= after + tolerance_ms,
            "the clock reads {ours}, the database {before}..{after} (tolerance {tolerance_ms} ms)"
        );
        farthest_ms = farthest_ms.max(before - ours).max(ours - after);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    println!(
        "clock test ({:?}): anchored with a round trip of {round_trip_ms} ms; at most {farthest_ms} ms outside the database's readings around it",
        crate::common::store()
    );
    // The skew gauge still sees the machine's (here: the fallback's) clock.
    let skew_ms = to_ms(clock.wall_now()) - to_ms(clock.now());
    assert!(
        (-3_600_000 - 1_000..-3_600_000 + 1_000).contains(&skew_ms),
        "{skew_ms}"
    );
}

#[tokio::test]
async fn two_instances_whose_machine_clocks_disagree_by_two_hours_read_the_same_time() {
    let db = TestDb::fresh().await;
    let instance = |offset: Duration| {
        DatabaseClock::with_parts(
            Arc::new(ManualClock::new(Utc::now() + offset)),
            Arc::new(InstantTicks::new()),
        )
    };
    let ahead = instance(Duration::hours(1));
    let behind = instance(Duration::hours(-1));
    // Anchored as `serve` does it: before anything reads the clock.
    let tolerance_ms =
        anchor(&ahead, &db).await / 2 + anchor(&behind, &db).await / 2 + 2 + 2 * SLACK_MS;
    for _ in 0..5 {
        let a = to_ms(ahead.now());
        let b = to_ms(behind.now());
        assert!(
            (a - b).abs() <= tolerance_ms,
            "two instances on one database read {a} and {b} (tolerance {tolerance_ms} ms)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
