//! Logging text that came from outside (OWASP ASVS 7.3.1): a
//! user-supplied value is written to the log as one quoted string, so a
//! sign-in name `bob address=10.9.9.9 staff=admin` reads as one value and
//! not as extra fields, a name holding `\n` cannot forge a log line, one
//! holding an ANSI escape cannot repaint a terminal and one holding U+2028
//! or U+202E cannot break or reverse a line in a viewer. Long values are
//! cut: a log line is not a place to store what a client sent.

use std::fmt;

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Most characters of a value written to the log; the rest is counted.
pub const MAX_LOGGED_CHARS: usize = 200;

/// Displays `0` in double quotes, with `"` and `\` escaped, every control
/// character, format character (Unicode category Cf: U+200B, U+202E, ...)
/// and line or paragraph separator (U+2028, U+2029) written as a Rust
/// escape (`\n`, `\u{1b}`, `\u{2028}`), and at most
/// [`MAX_LOGGED_CHARS`] characters followed by how many were left out.
#[derive(Debug, Clone, Copy)]
pub struct LogSafe<'a>(pub &'a str);

/// Whether `c` is written as an escape in the log.
fn escaped(c: char) -> bool {
    c.is_control()
        || c == '\\'
        || c == '"'
        || matches!(
            c.general_category(),
            GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
}

impl fmt::Display for LogSafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        let mut shown = 0usize;
        for c in self.0.chars() {
            if shown == MAX_LOGGED_CHARS {
                break;
            }
            shown += 1;
            if c == '"' {
                f.write_str("\\\"")?;
            } else if escaped(c) {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        f.write_str("\"")?;
        let left_out = self.0.chars().skip(shown).count();
        if left_out > 0 {
            write!(f, "(+{left_out} chars)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_in_a_logged_name_stays_on_one_line() {
        let forged = "bob\n2026-12-01T00:00:00Z INFO staff signed in staff=admin";
        let logged = LogSafe(forged).to_string();
        assert!(!logged.contains('\n'));
        assert!(logged.starts_with("\"bob\\n2026"));
    }

    #[test]
    fn a_name_with_spaces_and_equals_signs_is_one_quoted_value() {
        let logged = LogSafe("bob address=10.9.9.9 staff=admin").to_string();
        assert_eq!(logged, "\"bob address=10.9.9.9 staff=admin\"");
        // A quote inside cannot close the value early.
        assert_eq!(
            LogSafe("a\" staff=\"admin").to_string(),
            "\"a\\\" staff=\\\"admin\""
        );
    }

    #[test]
    fn terminal_escapes_and_backslashes_are_written_as_escapes() {
        assert_eq!(LogSafe("a\u{1b}[2Jb").to_string(), "\"a\\u{1b}[2Jb\"");
        assert_eq!(LogSafe("a\\nb").to_string(), "\"a\\\\nb\"");
        assert_eq!(LogSafe("\r\t\0").to_string(), "\"\\r\\t\\u{0}\"");
        assert_eq!(LogSafe("小李 ok").to_string(), "\"小李 ok\"");
    }

    #[test]
    fn line_separators_and_format_characters_are_escaped() {
        assert_eq!(LogSafe("a\u{2028}b").to_string(), "\"a\\u{2028}b\"");
        assert_eq!(LogSafe("\u{202e}RTL").to_string(), "\"\\u{202e}RTL\"");
        assert_eq!(LogSafe("a\u{200b}b").to_string(), "\"a\\u{200b}b\"");
    }

    #[test]
    fn a_long_value_is_cut_and_says_how_much_was_left_out() {
        let long = "x".repeat(60_000);
        let logged = LogSafe(&long).to_string();
        assert!(logged.len() < 260, "{}", logged.len());
        assert!(logged.ends_with(&format!("\"(+{} chars)", 60_000 - MAX_LOGGED_CHARS)));
    }
}
