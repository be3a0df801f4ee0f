//! Compensation presets in words, for the compensation form and the rules
//! page.

use super::i18n::Lang;
use crate::domain::compensation::Preset;

/// A validity in words: whole days, else hours, else seconds.
pub fn validity_text(l: Lang, seconds: i64) -> String {
    if seconds % 86_400 == 0 {
        crate::tr!(l, "comp-valid-days", days = seconds / 86_400)
    } else if seconds % 3600 == 0 {
        crate::tr!(l, "comp-valid-hours", hours = seconds / 3600)
    } else {
        crate::tr!(l, "comp-valid-seconds", seconds = seconds)
    }
}

/// A preset's coupon in words: amount, minimum order, categories, validity.
pub fn preset_terms(l: Lang, p: &Preset) -> String {
    let min = if p.min_order_cents > 0 {
        crate::tr!(l, "comp-preset-min-order", min = l.money(p.min_order_cents))
    } else {
        l.t("comp-preset-any-order").to_string()
    };
    let cats = if p.categories.is_empty() {
        l.t("comp-preset-every-category").to_string()
    } else {
        crate::i18n::names::categories(l, &p.categories, ", ")
    };
    crate::tr!(
        l,
        "comp-preset-terms",
        value = l.money(p.value_cents),
        min = min,
        categories = cats,
        validity = validity_text(l, p.valid_seconds)
    )
}
