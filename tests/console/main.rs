//! The console (`/console`) through the real router: each page's content,
//! its forms (refusals with the input kept and the message at the field),
//! its actions and who may use them, one module per page or area.
//! Browser checks (layout, screenshots) live in `end2end/`.
//!
//! Run one page's tests with `cargo test --test console templates::`.

#[path = "../common/mod.rs"]
mod common;

mod audit;
mod auth;
mod bulk;
mod campaigns;
mod categories;
mod codes;
mod compensation;
mod dashboard;
mod home;
mod links;
mod list_filters;
mod orders;
mod pages;
mod reminders;
mod reports;
mod staff;
mod template_edit;
mod templates;
mod try_cart;
mod webhooks;
