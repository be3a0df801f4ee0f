//! Redeem codes (兑换码): the alphabet, how a typed code is normalized, the
//! rules of a batch request (count, prefix, length and the code space
//! they leave), and drawing one code. Pure: the random source is an
//! argument.
//!
//! The alphabet has no look-alikes: no `0`/`O`, no `1`/`I`/`L`, so a code
//! read aloud or copied from print is not mistaken. A code is its prefix
//! followed by `length` characters drawn uniformly from the alphabet;
//! it is stored normalized (upper case, without spaces and dashes), and
//! whatever a customer types is normalized the same way before lookup.

use rand::Rng;

use super::FieldError;

/// The characters of a code: digits 2-9 and the letters without I, L, O.
pub const ALPHABET: &[u8; 31] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// Most codes one batch request may ask for.
pub const MAX_COUNT: i64 = 100_000;
/// Fewest random characters of a code.
pub const MIN_LENGTH: i64 = 4;
/// Most random characters of a code.
pub const MAX_LENGTH: i64 = 16;
/// Most characters of a prefix.
pub const MAX_PREFIX_CHARS: usize = 8;
/// A batch's code space must hold at least this many codes per code asked
/// for, so that a code is hard to guess and draws rarely collide.
pub const SPACE_PER_CODE: u128 = 1_000;
/// Longest text a redemption may carry before normalization.
pub const MAX_TYPED_CHARS: usize = 64;

/// A limit on failed attempts: at most `failures` failed (or still
/// pending) attempts within any `window_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureLimit {
    pub failures: u32,
    pub window_seconds: u64,
}

/// The failure limits of code redemption: per user and per client
/// address; `None` turns one off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RedeemLimits {
    pub per_user: Option<FailureLimit>,
    pub per_address: Option<FailureLimit>,
}

/// Where a batch's generation stands, as stored in `code_batches.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    /// The job is still generating its codes.
    Running,
    /// Every code asked for exists (or the batch was voided meanwhile).
    Done,
    /// The job gave up (codes could not be drawn unique).
    Failed,
}

impl BatchStatus {
    pub const ALL: [BatchStatus; 3] =
        [BatchStatus::Running, BatchStatus::Done, BatchStatus::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            BatchStatus::Running => "running",
            BatchStatus::Done => "done",
            BatchStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        BatchStatus::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The catalog key of the status's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            BatchStatus::Running => "code-batch-status-running",
            BatchStatus::Done => "code-batch-status-done",
            BatchStatus::Failed => "code-batch-status-failed",
        }
    }
}

/// A batch request that passed the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSpec {
    pub count: i64,
    /// Upper case, from the alphabet, possibly empty.
    pub prefix: String,
    /// Random characters after the prefix.
    pub length: i64,
}

/// How many codes of `length` random characters exist (saturating).
pub fn code_space(length: i64) -> u128 {
    let mut space: u128 = 1;
    for _ in 0..length.clamp(0, MAX_LENGTH) {
        space = space.saturating_mul(ALPHABET.len() as u128);
    }
    space
}

/// Whether `c` (upper case) is a character of the alphabet.
pub fn in_alphabet(c: char) -> bool {
    c.is_ascii() && ALPHABET.contains(&(c as u8))
}

impl BatchSpec {
    /// Checks a batch request: `count` 1..=100,000; `prefix` at most 8
    /// characters of the alphabet (any case; stored upper case); `length`
    /// 4..=16; and a code space of at least 1,000 codes per code asked for
    /// (else `count` is at fault: fewer codes fit that length).
    pub fn parse(
        count: Option<i64>,
        prefix: Option<&str>,
        length: Option<i64>,
    ) -> Result<BatchSpec, FieldError> {
        let count = count.ok_or_else(|| FieldError::new("count", "is required"))?;
        if !(1..=MAX_COUNT).contains(&count) {
            return Err(FieldError::new(
                "count",
                format!("must be between 1 and {MAX_COUNT}"),
            ));
        }
        let prefix = prefix.unwrap_or("").to_ascii_uppercase();
        if prefix.chars().count() > MAX_PREFIX_CHARS {
            return Err(FieldError::new(
                "prefix",
                format!("must be at most {MAX_PREFIX_CHARS} characters"),
            ));
        }
        if !prefix.chars().all(in_alphabet) {
            return Err(FieldError::new(
                "prefix",
                "may only hold the digits 2-9 and the letters A-Z without I, L and O",
            ));
        }
        let length = length.ok_or_else(|| FieldError::new("length", "is required"))?;
        if !(MIN_LENGTH..=MAX_LENGTH).contains(&length) {
            return Err(FieldError::new(
                "length",
                format!("must be between {MIN_LENGTH} and {MAX_LENGTH}"),
            ));
        }
        let needed = SPACE_PER_CODE * count as u128;
        if code_space(length) < needed {
            return Err(FieldError::new(
                "count",
                format!(
                    "too many codes for length {length}: the code space must hold at least 1000 codes per code asked for; ask for fewer codes or a longer length"
                ),
            ));
        }
        Ok(BatchSpec {
            count,
            prefix,
            length,
        })
    }

    /// The most codes a batch of this length may ask for.
    pub fn max_count_for(length: i64) -> i64 {
        let most = code_space(length) / SPACE_PER_CODE;
        i64::try_from(most.min(MAX_COUNT as u128)).unwrap_or(MAX_COUNT)
    }

    /// One code: the prefix and `length` characters drawn uniformly.
    pub fn draw(&self, rng: &mut impl Rng) -> String {
        let mut code = String::with_capacity(self.prefix.len() + self.length as usize);
        code.push_str(&self.prefix);
        for _ in 0..self.length {
            let i = rng.random_range(0..ALPHABET.len());
            code.push(ALPHABET[i] as char);
        }
        code
    }
}

/// A typed code as stored: spaces (any width) and dashes dropped, ASCII
/// letters upper-cased. `None` when nothing is left or the text is longer
/// than anyone would type.
pub fn normalize(typed: &str) -> Option<String> {
    if typed.chars().count() > MAX_TYPED_CHARS {
        return None;
    }
    let code: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '-' | '\u{2010}'..='\u{2015}' | '\u{2212}'))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (!code.is_empty()).then_some(code)
}

/// A code as printed for people: groups of four separated by dashes
/// (`SPRG-7K3Q-M9XP`); [`normalize`] reads it back.
pub fn grouped(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    chars
        .chunks(4)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alphabet_has_no_look_alikes_and_no_repeats() {
        for c in [b'0', b'O', b'1', b'I', b'L'] {
            assert!(!ALPHABET.contains(&c), "{}", c as char);
        }
        let mut seen = std::collections::HashSet::new();
        assert!(ALPHABET.iter().all(|c| seen.insert(*c)));
    }

    #[test]
    fn a_batch_needs_a_thousand_codes_of_space_per_code() {
        // 31^5 = 28,629,151: room for 28,629 codes.
        assert_eq!(BatchSpec::max_count_for(5), 28_629);
        assert!(BatchSpec::parse(Some(28_629), None, Some(5)).is_ok());
        let e = BatchSpec::parse(Some(28_630), None, Some(5)).expect_err("too many");
        assert_eq!(e.field, "count");
        assert!(BatchSpec::parse(Some(100_000), Some("vkp"), Some(6)).is_ok());
        assert_eq!(
            BatchSpec::parse(Some(0), None, Some(8)).map_err(|e| e.field),
            Err("count")
        );
        assert_eq!(
            BatchSpec::parse(Some(10), Some("VIP0"), Some(8)).map_err(|e| e.field),
            Err("prefix")
        );
        assert_eq!(
            BatchSpec::parse(Some(10), Some("ABCDEFGHJ"), Some(8)).map_err(|e| e.field),
            Err("prefix")
        );
        assert_eq!(
            BatchSpec::parse(Some(10), None, Some(3)).map_err(|e| e.field),
            Err("length")
        );
        assert_eq!(
            BatchSpec::parse(Some(10), None, Some(17)).map_err(|e| e.field),
            Err("length")
        );
    }

    #[test]
    fn codes_are_drawn_from_the_alphabet_after_the_prefix() {
        let spec = BatchSpec::parse(Some(10), Some("vkp"), Some(8)).expect("valid");
        let code = spec.draw(&mut rand::rng());
        assert_eq!(code.len(), 11);
        assert!(code.starts_with("VKP"));
        assert_eq!(
            BatchSpec::parse(Some(10), Some("vip"), Some(8)).map_err(|e| e.field),
            Err("prefix"),
            "I is a look-alike"
        );
        assert!(code.chars().all(in_alphabet));
    }

    #[test]
    fn typed_codes_ignore_case_spaces_and_dashes() {
        assert_eq!(normalize(" vip-7k3q m9xp ").as_deref(), Some("VIP7K3QM9XP"));
        assert_eq!(normalize("VIP\u{3000}7K3Q").as_deref(), Some("VIP7K3Q"));
        assert_eq!(normalize(" - "), None);
        assert_eq!(normalize(&"A".repeat(65)), None);
        assert_eq!(grouped("VIP7K3QM9XP"), "VIP7-K3QM-9XP");
        assert_eq!(
            normalize(&grouped("VIP7K3QM9XP")).as_deref(),
            Some("VIP7K3QM9XP")
        );
    }
}
