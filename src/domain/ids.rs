//! Identifiers: the caller's opaque keys (`user_id`, `order_no`) as checked
//! newtypes, and the server's own ids and coupon codes.

use rand::Rng;

use super::FieldError;

/// Longest caller-chosen key we accept, in characters; longer input is almost certainly a bug
/// on the caller's side and would bloat every index it lands in.
pub const MAX_KEY_LEN: usize = 128;

/// Longest `line_id` of an order line, in characters (the HTTP contract's
/// 1-64).
pub const MAX_LINE_ID_LEN: usize = 64;

fn check_key(field: &'static str, raw: &str, max_chars: usize) -> Result<String, FieldError> {
    if raw.is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    // Characters, not bytes: the limit the OpenAPI document can state
    // (`maxLength`), so the document and this check agree exactly.
    if raw.chars().count() > max_chars {
        return Err(FieldError::new(
            field,
            format!("must be at most {max_chars} characters"),
        ));
    }
    if raw
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || super::text::is_format(c))
    {
        return Err(FieldError::new(
            field,
            "must not contain whitespace, control characters or format characters (such as U+200B or U+202E)",
        ));
    }
    Ok(raw.to_string())
}

/// What every id newtype offers besides its constructors: display, a
/// borrowed `&str` (`Deref`, so an id reads as its text wherever text is
/// wanted, a link or a log line, while text never becomes an id without a
/// constructor), and comparison with a string (tests and filters compare an
/// id with the text they hold).
macro_rules! id_conveniences {
    ($name:ident) => {
        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<$name> for str {
            fn eq(&self, other: &$name) -> bool {
                self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

macro_rules! caller_key {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        caller_key!($(#[$doc])* $name, $field, MAX_KEY_LEN);
    };
    ($(#[$doc:meta])* $name:ident, $field:literal, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn parse(raw: &str) -> Result<Self, FieldError> {
                check_key($field, raw, $max).map($name)
            }

            /// For values read back from our own database.
            pub fn from_stored(raw: String) -> Self {
                $name(raw)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        id_conveniences!($name);

        /// Unit tests write keys as literals; outside tests a key is
        /// parsed or read back from the store.
        #[cfg(test)]
        impl From<&str> for $name {
            fn from(raw: &str) -> Self {
                $name(raw.to_string())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        /// Reading one from JSON checks it as [`Self::parse`] does.
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                $name::parse(&raw).map_err(|e| serde::de::Error::custom(e.message))
            }
        }
    };
}

caller_key!(
    /// The shop's user id: opaque, 1-128 characters, no whitespace, control or format characters.
    UserId,
    "user_id"
);
caller_key!(
    /// The shop's order number: opaque, 1-128 characters, no whitespace, control or format characters.
    OrderNo,
    "order_no"
);
caller_key!(
    /// A line of an order, named by the shop: 1-64 characters, unique in
    /// its order, no whitespace, control or format characters.
    LineId,
    "line_id",
    MAX_LINE_ID_LEN
);
caller_key!(
    /// The shop's stock-keeping unit of a line: opaque, 1-128 characters,
    /// no whitespace, control or format characters.
    Sku,
    "sku"
);
caller_key!(
    /// A shop of a marketplace: opaque, 1-128 characters, no whitespace,
    /// control or format characters. A template with one gives shop
    /// coupons; without, platform coupons.
    ShopId,
    "shop_id"
);
caller_key!(
    /// A partial refund, named by the shop: 1-64 characters, unique in its
    /// order, no whitespace, control or format characters.
    RefundId,
    "refund_id",
    MAX_LINE_ID_LEN
);

/// The server's own ids, one type per table, so a template id can never be
/// passed where a coupon id is meant. An id is opaque: whether it names a
/// row is the store's answer (a lookup that finds nothing is "not found"),
/// so taking one from the wire checks nothing and cannot fail. New ids come
/// from `generate`, which gives the table's prefix.
macro_rules! server_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// The prefix of this table's ids, without the underscore.
            pub const PREFIX: &'static str = $prefix;

            /// A new id of this table (see [`new_id`]).
            pub fn generate(now_ms: i64) -> Self {
                $name(new_id($prefix, now_ms))
            }

            /// An id as a caller sent it (a path segment, a form field) or
            /// as our own database holds it.
            pub fn from_wire(raw: impl Into<String>) -> Self {
                $name(raw.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        id_conveniences!($name);

        /// A server id is opaque, so any text can stand for one; tests and
        /// fixtures write ids as literals.
        impl From<&str> for $name {
            fn from(raw: &str) -> Self {
                $name(raw.to_string())
            }
        }
    };
}

server_id!(
    /// A coupon (`cpn_…`).
    CouponId,
    "cpn"
);
server_id!(
    /// A coupon template (`tpl_…`).
    TemplateId,
    "tpl"
);
server_id!(
    /// A presale campaign (`cmp_…`).
    CampaignId,
    "cmp"
);
server_id!(
    /// A batch of redeem codes (`cbt_…`).
    CodeBatchId,
    "cbt"
);
server_id!(
    /// A bulk issue or void job (`job_…`).
    JobId,
    "job"
);
server_id!(
    /// A wake-up rule (`wkr_…`).
    WakeupRuleId,
    "wkr"
);
server_id!(
    /// A webhook subscriber (`whk_…`).
    SubscriberId,
    "whk"
);
server_id!(
    /// One run of the reminder job for one offset (`rms_…`).
    ReminderSlotId,
    "rms"
);

/// A new server id: `prefix` + 12 hex digits of milliseconds + 16 random hex
/// digits. Time first keeps ids roughly insertion-ordered, which keeps B-tree
/// inserts local; the random part makes them unguessable and collision-free
/// across instances.
pub fn new_id(prefix: &str, now_ms: i64) -> String {
    let random: u64 = rand::rng().random();
    format!("{prefix}_{:012x}{random:016x}", now_ms.max(0))
}

/// Whether `id` has the shape [`new_id`] gives a bulk job (`job_` and 28
/// hex digits): a bulk job writes its id as the request id of the changes
/// it makes, and pages link such an id to the job.
pub fn is_job_id(id: &str) -> bool {
    id.strip_prefix("job_")
        .is_some_and(|hex| hex.len() == 28 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Alphabet for coupon codes: no 0/O, 1/I/L, so a code read over the phone
/// is unambiguous.
const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";

/// A coupon code like `K7QM-3XPA-9RTD` (12 symbols, about 59 bits).
pub fn new_coupon_code() -> String {
    let mut rng = rand::rng();
    let mut out = String::with_capacity(14);
    for i in 0..12 {
        if i > 0 && i % 4 == 0 {
            out.push('-');
        }
        let idx = rng.random_range(0..CODE_ALPHABET.len());
        out.push(char::from(CODE_ALPHABET[idx]));
    }
    out
}

/// The search key of a coupon code or order number, and of what staff type
/// to find one: upper case (ASCII letters only), spaces and dashes dropped,
/// so `k7qm 3xpa` and `K7QM-3XPA` are both `K7QM3XPA`. The same rule as the
/// generated `code_key` and `order_no_key` columns
/// (`migrations/*/0017_search_keys.sql`); non-ASCII letters keep their case
/// there and here alike.
pub fn search_key(raw: &str) -> String {
    raw.chars()
        .filter(|c| *c != ' ' && *c != '-')
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// The prefixes of the server ids that pages show by a name or code
/// (`store::names::people_names` looks them up).
const NAMED_PREFIXES: [&str; 6] = ["cpn_", "tpl_", "cmp_", "cbt_", "wkr_", "whk_"];

/// Whether `word` looks like a server id a page shows by its name.
pub fn is_named_id(word: &str) -> bool {
    NAMED_PREFIXES
        .iter()
        .any(|p| word.len() > p.len() && word.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_id_is_recognised_by_its_whole_shape() {
        assert!(is_job_id(&new_id("job", 1_765_000_000_000)));
        assert!(!is_job_id(&new_id("tpl", 1_765_000_000_000)));
        assert!(!is_job_id("job_made-up-by-a-caller"));
        assert!(!is_job_id("job_"));
    }

    #[test]
    fn caller_keys_refuse_empty_long_and_blank_values() {
        assert!(UserId::parse("").is_err());
        assert!(UserId::parse("a b").is_err());
        // Format characters: a reversed or invisible id that looks like
        // another.
        assert!(UserId::parse("\u{202e}RTL").is_err());
        assert!(UserId::parse("u\u{200b}1").is_err());
        assert!(UserId::parse("u\u{e0041}").is_err());
        assert!(OrderNo::parse(&"x".repeat(129)).is_err());
        assert_eq!(
            OrderNo::parse("P123").map(|o| o.as_str().to_string()),
            Ok("P123".into())
        );
    }

    #[test]
    fn coupon_codes_use_the_unambiguous_alphabet() {
        let code = new_coupon_code();
        assert_eq!(code.len(), 14);
        assert!(
            code.chars()
                .all(|c| c == '-' || CODE_ALPHABET.contains(&(c as u8)))
        );
    }

    #[test]
    fn search_keys_drop_spaces_and_dashes_and_fold_ascii_case_only() {
        assert_eq!(search_key("k7qm 3xpa-9rtd"), "K7QM3XPA9RTD");
        assert_eq!(search_key("Shop-2026 0001"), "SHOP20260001");
        assert_eq!(search_key("ord_1/é"), "ORD_1/é");
        assert_eq!(search_key(" - "), "");
    }

    #[test]
    fn ids_carry_their_prefix_and_are_distinct() {
        let a = new_id("cpn", 1);
        let b = new_id("cpn", 1);
        assert!(a.starts_with("cpn_"));
        assert_ne!(a, b);
    }
}
