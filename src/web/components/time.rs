//! A time for people: in the business time zone with its offset, the
//! exact UTC instant in the markup.

use leptos::prelude::*;

use crate::web::layout::time_text;

/// `<time datetime="2026-11-11T00:00:00Z">2026-11-11 08:00:00
/// (UTC+8)</time>`; text that is not an RFC 3339 time is shown as it is.
#[component]
pub fn Time(#[prop(into)] at: String) -> impl IntoView {
    time_text(&at)
}

/// [`Time`] of a moment that may not have happened: "—" when it has not.
#[component]
pub fn OptTime(at: Option<String>) -> impl IntoView {
    match at {
        Some(t) => time_text(&t).into_any(),
        None => "—".into_any(),
    }
}
