//! Money as people read it: `¥50.00`, from integer cents.

use leptos::prelude::*;

use crate::domain::money::Cents;

/// An amount in yuan with two decimals.
#[component]
pub fn Money(cents: Cents) -> impl IntoView {
    view! { <span class="money">{cents.shown()}</span> }
}

/// An amount with its label, as a pair of a definition list.
#[component]
pub fn MoneyRow(label: &'static str, cents: Cents) -> impl IntoView {
    view! { <dt>{label}</dt><dd class="money">{cents.shown()}</dd> }
}
