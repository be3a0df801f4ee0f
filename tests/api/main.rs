//! The API as its callers see it: the HTTP contract (`../shared/API.md`)
//! on the real router and a fresh database of the store chosen by
//! `COUPONKEEPER_TEST_STORE`, one module per area. Races, random
//! operation sequences (the model test), hardening and security controls
//! are here too, because they speak HTTP.
//!
//! One test binary instead of one per file: the crate is compiled and
//! linked once for all of them. Run one area with
//! `cargo test --test api orders::`.

#[path = "../common/mod.rs"]
mod common;

mod budgets;
mod bulk;
mod campaigns;
mod cart_properties;
mod cart_repairs;
mod carts;
mod checkout;
mod claims;
mod codes;
mod compensation_rules;
mod concurrency;
mod conventions;
mod invariants;
mod language;
mod model;
mod observability;
mod openapi;
mod order_list;
mod orders;
mod reconcile;
mod reminder_channels;
mod reports;
mod security;
mod self_check;
mod stacking;
mod stacking_presale;
mod stacking_properties;
mod support;
mod templates;
mod wakeup;
