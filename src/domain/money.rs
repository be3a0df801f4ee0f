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

impl Cents {
    /// Yuan as a form types them: `50`, `49.90` (whole yuan without
    /// decimals, so an edit form shows what the operator typed).
    pub fn yuan_input(self) -> String {
        if self.0 % 100 == 0 {
            (self.0 / 100).to_string()
        } else {
            self.yuan()
        }
    }

    /// A deduction on a bill: `−¥50.00` (with the minus sign U+2212, as
    /// the customer's pages write a discount).
    pub fn shown_as_deduction(self) -> String {
        format!("\u{2212}{}", self.shown())
    }

    /// Yuan typed by a person: `50`, `50.5`, `50.05`, `¥50.00`; more than
    /// two decimals, a sign, or anything but digits is refused (`None`),
    /// as is an amount over [`MAX_CENTS`] (through [`Cents::new`] by the
    /// caller) or over `i64`.
    pub fn parse_yuan(raw: &str) -> Option<i64> {
        let t = raw.trim().trim_start_matches('¥').trim();
        let (whole, frac) = match t.split_once('.') {
            Some((w, f)) => (w, f),
            None => (t, ""),
        };
        if whole.is_empty()
            || whole.len() > 10
            || frac.len() > 2
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let yuan: i64 = whole.parse().ok()?;
        let cents: i64 = match frac.len() {
            0 => 0,
            1 => frac.parse::<i64>().ok()? * 10,
            _ => frac.parse().ok()?,
        };
        yuan.checked_mul(100)?.checked_add(cents)
    }
}

/// A signed difference of two amounts, in cents: a day's issued minus
/// returned discount, a balance, a change. Unlike [`Cents`] it may be
/// negative; it is never an amount anyone pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CentsDelta(i64);

impl CentsDelta {
    pub const ZERO: CentsDelta = CentsDelta(0);

    /// `a - b`.
    pub fn between(a: Cents, b: Cents) -> Self {
        CentsDelta(a.0 - b.0)
    }

    /// For sums read back from our own database (report counters), which
    /// are differences of checked amounts.
    pub fn from_stored(cents: i64) -> Self {
        CentsDelta(cents)
    }

    pub fn get(self) -> i64 {
        self.0
    }

    /// How much, whichever the sign.
    pub fn magnitude(self) -> Cents {
        Cents::from_stored(self.0.saturating_abs())
    }

    pub fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// `12.34`, `-12.34`: yuan with two decimals and a sign, for files. A
    /// sum of many amounts may pass [`MAX_CENTS`]; it is written whole.
    pub fn yuan(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        format!("{sign}{}.{:02}", a / 100, a % 100)
    }

    /// `¥12.34`, `-¥12.34`: a signed amount on a chart or in a report.
    pub fn shown(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        format!("{sign}¥{}.{:02}", a / 100, a % 100)
    }

    /// `¥50.00`, or `−¥50.00` (U+2212) when it takes money off: a change to
    /// what a customer pays, in words for people.
    pub fn shown_as_change(self) -> String {
        if self.0 < 0 {
            self.magnitude().shown_as_deduction()
        } else {
            self.magnitude().shown()
        }
    }
}

impl Serialize for CentsDelta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.0)
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
    fn a_signed_difference_shows_its_sign_and_a_deduction_its_minus() {
        let a = Cents::from_stored(150);
        let b = Cents::from_stored(300);
        assert_eq!(CentsDelta::between(a, b).shown(), "-¥1.50");
        assert_eq!(CentsDelta::between(b, a).shown(), "¥1.50");
        assert_eq!(CentsDelta::between(a, b).yuan(), "-1.50");
        assert_eq!(CentsDelta::between(a, b).shown_as_change(), "\u{2212}¥1.50");
        assert_eq!(CentsDelta::between(b, a).shown_as_change(), "¥1.50");
        assert_eq!(
            CentsDelta::from_stored(i64::MIN).magnitude().get(),
            MAX_CENTS
        );
    }

    #[test]
    fn typed_yuan_parse_to_exact_cents_and_forms_show_whole_yuan_bare() {
        assert_eq!(Cents::parse_yuan("50"), Some(5000));
        assert_eq!(Cents::parse_yuan(" ¥50.5 "), Some(5050));
        assert_eq!(Cents::parse_yuan("0.07"), Some(7));
        assert_eq!(Cents::parse_yuan("50.001"), None);
        assert_eq!(Cents::parse_yuan("-5"), None);
        assert_eq!(Cents::parse_yuan("99999999999"), None);
        assert_eq!(Cents::from_stored(5000).yuan_input(), "50");
        assert_eq!(Cents::from_stored(4990).yuan_input(), "49.90");
    }

    #[test]
    fn yuan_formatting_keeps_two_decimals() {
        assert_eq!(Cents::from_stored(5000).yuan(), "50.00");
        assert_eq!(Cents::from_stored(24905).yuan(), "249.05");
        assert_eq!(Cents::from_stored(7).yuan(), "0.07");
    }
}
