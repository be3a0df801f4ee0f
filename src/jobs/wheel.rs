//! A hashed timing wheel: deadlines within a bounded horizon, in slots of a
//! fixed width, fired in order as time passes. Pure data structure: it never
//! reads a clock; the caller passes "now" in milliseconds.
//!
//! It holds only what is due within `slots * slot_ms` of its cursor, so one
//! revolution never wraps onto itself; later deadlines are refused and
//! loaded again by the next refill from the database, which stays the only
//! authority. Entries are deduplicated, so a refill that finds deadlines
//! already present adds nothing.

use std::collections::HashSet;
use std::hash::Hash;

/// Why an entry was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Due after the horizon; the next refill will load it.
    BeyondHorizon,
    /// The wheel holds `capacity` entries already.
    Full,
    /// The same entry is already on the wheel.
    Duplicate,
}

/// Deadlines of type `T` on a wheel of `slots` slots of `slot_ms` each.
#[derive(Debug)]
pub struct TimingWheel<T> {
    slot_ms: i64,
    slots: Vec<Vec<(i64, T)>>,
    /// Start of the earliest slot not yet fully fired.
    cursor_ms: i64,
    present: HashSet<T>,
    capacity: usize,
}

impl<T: Clone + Eq + Hash> TimingWheel<T> {
    /// A wheel starting at `now_ms`. `slots` and `slot_ms` are at least 1.
    pub fn new(slot_ms: i64, slots: usize, now_ms: i64, capacity: usize) -> Self {
        let slot_ms = slot_ms.max(1);
        TimingWheel {
            slot_ms,
            slots: (0..slots.max(1)).map(|_| Vec::new()).collect(),
            cursor_ms: now_ms - now_ms.rem_euclid(slot_ms),
            present: HashSet::new(),
            capacity,
        }
    }

    pub fn len(&self) -> usize {
        self.present.len()
    }

    pub fn is_empty(&self) -> bool {
        self.present.is_empty()
    }

    /// The last instant the wheel accepts (exclusive).
    pub fn horizon_ms(&self) -> i64 {
        self.cursor_ms + self.slot_ms * self.slots.len() as i64
    }

    fn index(&self, due_ms: i64) -> usize {
        (due_ms.div_euclid(self.slot_ms)).rem_euclid(self.slots.len() as i64) as usize
    }

    /// Schedules `item` at `due_ms`. A deadline already past goes into the
    /// current slot and fires at the next [`advance`](Self::advance).
    pub fn insert(&mut self, due_ms: i64, item: T) -> Result<(), Refused> {
        if due_ms >= self.horizon_ms() {
            return Err(Refused::BeyondHorizon);
        }
        if self.present.contains(&item) {
            return Err(Refused::Duplicate);
        }
        if self.present.len() >= self.capacity {
            return Err(Refused::Full);
        }
        let due_ms = due_ms.max(self.cursor_ms);
        let i = self.index(due_ms);
        self.slots[i].push((due_ms, item.clone()));
        self.present.insert(item);
        Ok(())
    }

    /// Takes every entry due at or before `now_ms`, earliest slot first.
    /// Visits at most one revolution of slots per call.
    pub fn advance(&mut self, now_ms: i64) -> Vec<T> {
        let mut fired = Vec::new();
        for _ in 0..self.slots.len() {
            if self.cursor_ms > now_ms {
                break;
            }
            let i = self.index(self.cursor_ms);
            let slot_end = self.cursor_ms + self.slot_ms;
            let entries = std::mem::take(&mut self.slots[i]);
            let (due, later): (Vec<_>, Vec<_>) =
                entries.into_iter().partition(|(d, _)| *d <= now_ms);
            self.slots[i] = later;
            for (_, item) in due {
                self.present.remove(&item);
                fired.push(item);
            }
            if slot_end <= now_ms {
                self.cursor_ms = slot_end;
            } else {
                break;
            }
        }
        // After a jump longer than the horizon every slot has been visited
        // and emptied of due entries; bring the cursor up to now.
        if self.cursor_ms + self.slot_ms <= now_ms {
            self.cursor_ms = now_ms - now_ms.rem_euclid(self.slot_ms);
        }
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_fire_once_their_time_has_come_in_order() {
        let mut w = TimingWheel::new(1000, 10, 0, 100);
        w.insert(2500, "b").expect("fits");
        w.insert(500, "a").expect("fits");
        w.insert(2999, "c").expect("fits");
        assert_eq!(w.advance(499), Vec::<&str>::new());
        assert_eq!(w.advance(500), vec!["a"]);
        assert_eq!(w.advance(2500), vec!["b"]);
        assert_eq!(w.advance(5000), vec!["c"]);
        assert!(w.is_empty());
    }

    #[test]
    fn the_horizon_capacity_and_duplicates_are_refused() {
        let mut w = TimingWheel::new(1000, 10, 0, 2);
        assert_eq!(w.insert(10_000, "late"), Err(Refused::BeyondHorizon));
        w.insert(1, "x").expect("fits");
        assert_eq!(w.insert(2, "x"), Err(Refused::Duplicate));
        w.insert(3, "y").expect("fits");
        assert_eq!(w.insert(4, "z"), Err(Refused::Full));
    }

    #[test]
    fn a_past_deadline_fires_at_the_next_advance() {
        let mut w = TimingWheel::new(1000, 10, 5000, 10);
        w.insert(10, "overdue").expect("fits");
        assert_eq!(w.advance(5000), vec!["overdue"]);
    }

    #[test]
    fn a_jump_beyond_the_horizon_fires_everything_and_keeps_working() {
        let mut w = TimingWheel::new(1000, 4, 0, 10);
        w.insert(3900, "a").expect("fits");
        let mut fired = w.advance(100_000);
        fired.sort_unstable();
        assert_eq!(fired, vec!["a"]);
        w.insert(100_500, "b").expect("fits after the jump");
        assert_eq!(w.advance(100_500), vec!["b"]);
    }

    #[test]
    fn the_wheel_keeps_turning_over_many_revolutions() {
        let mut w = TimingWheel::new(100, 8, 0, 100);
        let mut fired = 0;
        for t in (0..10_000).step_by(50) {
            let _ = w.insert(t + 300, t);
            fired += w.advance(t).len();
        }
        fired += w.advance(20_000).len();
        assert_eq!(fired, 200);
    }
}
