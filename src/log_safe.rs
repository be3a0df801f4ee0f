//! Logging text that came from outside: a user-supplied value is written
//! to the log with its control characters escaped, so a name holding `\n`
//! cannot forge a log line and one holding an ANSI escape cannot repaint a
//! terminal (OWASP ASVS 7.3.1). Structured (JSON) logs escape on their
//! own; the text format writes `Display` values as they are, hence this.

use std::fmt;

/// Displays `0` with every control character (and the backslash, so an
/// escape in the log is never ambiguous) written as a Rust escape:
/// `a\nb` for a line break, `\u{1b}` for ESC.
#[derive(Debug, Clone, Copy)]
pub struct LogSafe<'a>(pub &'a str);

impl fmt::Display for LogSafe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c.is_control() || c == '\\' {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
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
        assert!(logged.starts_with("bob\\n2026"));
    }

    #[test]
    fn terminal_escapes_and_backslashes_are_written_as_escapes() {
        assert_eq!(LogSafe("a\u{1b}[2Jb").to_string(), "a\\u{1b}[2Jb");
        assert_eq!(LogSafe("a\\nb").to_string(), "a\\\\nb");
        assert_eq!(LogSafe("\r\t\0").to_string(), "\\r\\t\\u{0}");
        assert_eq!(LogSafe("小李 ok").to_string(), "小李 ok");
    }
}
