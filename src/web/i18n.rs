//! The console's two languages, Simplified Chinese and English.
//!
//! Every label is written as a pair at the place it is used
//! (`l.t("待使用", "available")`), so a string cannot exist in one language
//! only. The language comes from the `ck_lang` cookie (set by the switch on
//! every page) and otherwise from `Accept-Language`; Chinese by default.

use axum::http::HeaderMap;

use crate::domain::money::Cents;

/// Name of the cookie that remembers the language switch.
pub const LANG_COOKIE: &str = "ck_lang";

/// A page's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Zh,
    En,
}

impl Lang {
    /// Picks the text for this language.
    pub fn t(self, zh: &'static str, en: &'static str) -> &'static str {
        match self {
            Lang::Zh => zh,
            Lang::En => en,
        }
    }

    /// Picks between two owned texts.
    pub fn pick(self, zh: String, en: String) -> String {
        match self {
            Lang::Zh => zh,
            Lang::En => en,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::En => "en",
        }
    }

    /// The `lang` attribute of the page.
    pub fn html_lang(self) -> &'static str {
        match self {
            Lang::Zh => "zh-CN",
            Lang::En => "en",
        }
    }

    pub fn parse(raw: &str) -> Option<Lang> {
        match raw {
            "zh" => Some(Lang::Zh),
            "en" => Some(Lang::En),
            _ => None,
        }
    }

    /// The other language, for the switch.
    pub fn other(self) -> Lang {
        match self {
            Lang::Zh => Lang::En,
            Lang::En => Lang::Zh,
        }
    }

    /// The switch's label, in the language it switches to.
    pub fn switch_label(self) -> &'static str {
        match self.other() {
            Lang::Zh => "中文",
            Lang::En => "English",
        }
    }

    /// The language of a request: the cookie, else `Accept-Language`.
    pub fn from_headers(headers: &HeaderMap) -> Lang {
        if let Some(l) = super::cookie(headers, LANG_COOKIE).and_then(|v| Lang::parse(&v)) {
            return l;
        }
        headers
            .get(axum::http::header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok())
            .map(from_accept_language)
            .unwrap_or(Lang::Zh)
    }

    /// Money for people: `¥50.00`.
    pub fn money(self, cents: i64) -> String {
        format!("¥{}", Cents::from_stored(cents).yuan())
    }
}

/// The highest-weighted of Chinese and English in an `Accept-Language`
/// value; Chinese when neither is named.
pub fn from_accept_language(raw: &str) -> Lang {
    let mut best: Option<(f32, Lang)> = None;
    for part in raw.split(',').take(32) {
        let mut pieces = part.split(';');
        let tag = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = pieces
            .find_map(|p| p.trim().strip_prefix("q="))
            .and_then(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0);
        let lang = if tag == "zh" || tag.starts_with("zh-") {
            Lang::Zh
        } else if tag == "en" || tag.starts_with("en-") {
            Lang::En
        } else {
            continue;
        };
        if best.is_none_or(|(bq, _)| q > bq) {
            best = Some((q, lang));
        }
    }
    best.map(|(_, l)| l).unwrap_or(Lang::Zh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_the_highest_weighted_known_language() {
        assert_eq!(from_accept_language("en-US,en;q=0.9"), Lang::En);
        assert_eq!(from_accept_language("zh-CN,zh;q=0.9,en;q=0.8"), Lang::Zh);
        assert_eq!(from_accept_language("fr, en;q=0.5, zh;q=0.7"), Lang::Zh);
        assert_eq!(from_accept_language("de"), Lang::Zh);
        assert_eq!(from_accept_language(""), Lang::Zh);
        assert_eq!(from_accept_language("en;q=abc"), Lang::En);
    }
}
