//! A category's name: what people call the shop's category code
//! (`phones` → 手机 / Phones). Parsed once, so a stored name is never
//! empty, never too long and never carries control or format characters.

use super::FieldError;

/// Longest category name.
pub const MAX_CATEGORY_LEN: usize = 64;

/// Longest name, in characters.
pub const MAX_NAME_CHARS: usize = 32;

/// Most categories that can be named.
pub const MAX_NAMED: usize = 500;

/// A category code with its names in both languages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryName {
    code: String,
    zh: String,
    en: String,
}

impl CategoryName {
    /// Checks a code and its two names; the first field at fault is named.
    pub fn parse(code: &str, zh: &str, en: &str) -> Result<Self, FieldError> {
        let code = code.trim();
        if code.is_empty()
            || code.chars().count() > MAX_CATEGORY_LEN
            || code.chars().any(|c| c.is_whitespace() || c == ',')
            || code
                .chars()
                .any(|c| super::text::forbidden_control(c) || super::text::is_format(c))
        {
            return Err(FieldError::new(
                "code",
                format!("must be 1-{MAX_CATEGORY_LEN} characters without spaces or commas"),
            ));
        }
        let name = |field: &'static str, raw: &str| -> Result<String, FieldError> {
            let v = raw.trim();
            if v.is_empty()
                || v.chars().count() > MAX_NAME_CHARS
                || v.chars()
                    .any(|c| c.is_control() || super::text::is_format(c))
            {
                return Err(FieldError::new(
                    field,
                    format!("must be 1-{MAX_NAME_CHARS} characters"),
                ));
            }
            Ok(v.to_string())
        };
        Ok(CategoryName {
            code: code.to_string(),
            zh: name("name_zh", zh)?,
            en: name("name_en", en)?,
        })
    }

    /// A row read back from storage (checked when it was written).
    pub fn from_stored(code: String, zh: String, en: String) -> Self {
        CategoryName { code, zh, en }
    }

    pub fn code(&self) -> &str {
        &self.code
    }

    pub fn zh(&self) -> &str {
        &self.zh
    }

    pub fn en(&self) -> &str {
        &self.en
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_needs_a_plain_code_and_two_short_names() {
        let ok = CategoryName::parse(" phones ", " 手机 ", "Phones").expect("fine");
        assert_eq!((ok.code(), ok.zh(), ok.en()), ("phones", "手机", "Phones"));
        assert_eq!(
            CategoryName::parse("", "a", "b").map_err(|e| e.field),
            Err("code")
        );
        assert_eq!(
            CategoryName::parse("a b", "a", "b").map_err(|e| e.field),
            Err("code")
        );
        assert_eq!(
            CategoryName::parse("x", " ", "b").map_err(|e| e.field),
            Err("name_zh")
        );
        assert_eq!(
            CategoryName::parse("x", "a", &"b".repeat(33)).map_err(|e| e.field),
            Err("name_en")
        );
        assert_eq!(
            CategoryName::parse("x", "a\u{202e}", "b").map_err(|e| e.field),
            Err("name_zh")
        );
    }
}
