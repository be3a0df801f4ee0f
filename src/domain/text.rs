//! Characters that text from outside may not hold: control characters
//! (which PostgreSQL cannot store, in NUL's case, or which forge and hide
//! text in logs and pages) and Unicode format characters (category Cf:
//! U+200B ZERO WIDTH SPACE, U+202E RIGHT-TO-LEFT OVERRIDE, U+FEFF, ...),
//! which make two ids that look the same differ, or one read backwards.

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// A control character no typed text needs: C0 except tab, line feed and
/// carriage return (which a textarea sends), DEL, and C1.
pub fn forbidden_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\t' | '\n' | '\r')
}

/// A Unicode format character (general category Cf).
pub fn is_format(c: char) -> bool {
    c.general_category() == GeneralCategory::Format
}

/// The format characters of the Basic Multilingual Plane as inclusive
/// ranges, in order: what the OpenAPI document's key pattern lists (a
/// JSON Schema pattern without the `u` flag cannot name the others).
pub fn bmp_format_ranges() -> Vec<(char, char)> {
    let mut ranges: Vec<(char, char)> = Vec::new();
    for c in (0u32..=0xFFFF)
        .filter_map(char::from_u32)
        .filter(|c| is_format(*c))
    {
        match ranges.last_mut() {
            Some((_, end)) if u32::from(*end) + 1 == u32::from(c) => *end = c,
            _ => ranges.push((c, c)),
        }
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_escape_and_del_are_forbidden_but_tab_and_line_breaks_are_not() {
        for c in [
            '\0', '\u{1}', '\u{1b}', '\u{7f}', '\u{85}', '\u{b}', '\u{c}',
        ] {
            assert!(forbidden_control(c), "{c:?}");
        }
        for c in ['\t', '\n', '\r', 'a', '中', ' '] {
            assert!(!forbidden_control(c), "{c:?}");
        }
    }

    #[test]
    fn bidi_overrides_and_zero_width_characters_are_format_characters() {
        for c in [
            '\u{202e}',
            '\u{200b}',
            '\u{200d}',
            '\u{feff}',
            '\u{ad}',
            '\u{e0001}',
        ] {
            assert!(is_format(c), "{c:?}");
        }
        for c in ['a', '中', ' ', '\u{2028}'] {
            assert!(!is_format(c), "{c:?}");
        }
    }

    #[test]
    fn the_bmp_ranges_hold_every_bmp_format_character_and_nothing_else() {
        let ranges = bmp_format_ranges();
        assert!(ranges.contains(&('\u{200b}', '\u{200f}')), "{ranges:?}");
        assert!(ranges.contains(&('\u{202a}', '\u{202e}')), "{ranges:?}");
        let listed = |c: char| ranges.iter().any(|(a, b)| (*a..=*b).contains(&c));
        for c in (0u32..=0xFFFF).filter_map(char::from_u32) {
            assert_eq!(listed(c), is_format(c), "{c:?}");
        }
    }
}
