//! Money as integer cents (minor units). Never floats.

use serde::{Serialize, Serializer};

/// Upper bound on any amount: 10 billion yuan in cents. Keeps every product
/// (`total_cents * percent_off`) far inside `i64` and refuses absurd input.
pub const MAX_CENTS: i64 = 1_000_000_000_000;

/// A non-negative amount of money in cents, at most [`MAX_CENTS`].
///
/// The only constructor checks the range, so arithmetic on two `Cents` can
/// neither go negative (subtraction saturates at zero) nor overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Cents(i64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoneyError {
    Negative,
    TooLarge,
}

impl std::fmt::Display for MoneyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MoneyError::Negative => write!(f, "must not be negative"),
            MoneyError::TooLarge => write!(f, "must be at most {MAX_CENTS} cents"),
        }
    }
}

impl Cents {
    pub const ZERO: Cents = Cents(0);

    pub fn new(cents: i64) -> Result<Self, MoneyError> {
        if cents < 0 {
            Err(MoneyError::Negative)
        } else if cents > MAX_CENTS {
            Err(MoneyError::TooLarge)
        } else {
            Ok(Cents(cents))
        }
    }

    /// For values read back from our own database, which only ever stored
    /// checked amounts; clamps instead of failing so a hand-edited row can
    /// never crash a read.
    pub fn from_stored(cents: i64) -> Self {
        Cents(cents.clamp(0, MAX_CENTS))
    }

    pub fn get(self) -> i64 {
        self.0
    }

    pub fn saturating_sub(self, other: Cents) -> Cents {
        Cents((self.0 - other.0).max(0))
    }

    /// Sum of two amounts, capped at [`MAX_CENTS`].
    pub fn saturating_add(self, other: Cents) -> Cents {
        Cents((self.0 + other.0).min(MAX_CENTS))
    }

    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// "50.00": yuan with two decimals, for messages read to customers.
    pub fn yuan(self) -> String {
        format!("{}.{:02}", self.0 / 100, self.0 % 100)
    }

    /// Money for people, the same in every language: `¥50.00`.
    pub fn shown(self) -> String {
        format!("¥{}", self.yuan())
    }
}

impl Serialize for Cents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_amounts_are_refused() {
        assert_eq!(Cents::new(-1), Err(MoneyError::Negative));
        assert_eq!(Cents::new(MAX_CENTS + 1), Err(MoneyError::TooLarge));
        assert_eq!(Cents::new(0).map(Cents::get), Ok(0));
    }

    #[test]
    fn subtraction_never_goes_below_zero() {
        let a = Cents::from_stored(100);
        let b = Cents::from_stored(250);
        assert_eq!(a.saturating_sub(b), Cents::ZERO);
        assert_eq!(b.saturating_sub(a).get(), 150);
    }

    #[test]
    fn yuan_formatting_keeps_two_decimals() {
        assert_eq!(Cents::from_stored(5000).yuan(), "50.00");
        assert_eq!(Cents::from_stored(24905).yuan(), "249.05");
        assert_eq!(Cents::from_stored(7).yuan(), "0.07");
    }
}
