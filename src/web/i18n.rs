//! The language of a console or self-check page: the `ck_lang` cookie
//! (set by the switch on every page), else `Accept-Language`, Chinese by
//! default. The words themselves are in the catalog, [`crate::i18n`].

use axum::http::HeaderMap;

pub use crate::i18n::{Lang, from_accept_language};

/// Name of the cookie that remembers the language switch.
pub const LANG_COOKIE: &str = "ck_lang";

impl Lang {
    /// The language of a page request: the cookie, else `Accept-Language`.
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
}
