//! The HTML shell every page is rendered into, HTML escaping and the
//! request's cookies: what every page module needs and nothing else, so it
//! imports none of them (a leaf of `web`).

use axum::http::header;

/// The HTML shell every page shares.
pub fn document(title: &str, body: &str) -> String {
    document_in("zh-CN", title, body)
}

/// The HTML shell in a given language (`lang` attribute).
pub fn document_in(lang: &str, title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><link rel=\"icon\" href=\"/favicon.svg\" type=\"image/svg+xml\">\
         <link rel=\"stylesheet\" href=\"/style/main.css\">\
         <script src=\"/console.js\" defer></script></head><body>{body}</body></html>",
        escape_html(title)
    )
}

pub fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The value of cookie `name` in the request, if any.
pub fn cookie(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}
