//! couponkeeper: the system of record for coupons and for the coupon side of
//! orders.
//!
//! A map of the crate, from pure rules outwards:
//!
//! - [`domain`]: value types and rules with no I/O: money, ids, the coupon
//!   and order state machines, discounts, validity windows, the presale
//!   final-payment decision, staff roles, the health check, link repairs,
//!   reconciliation, self-check tokens.
//! - [`clock`]: the one injectable source of "now" (`serve` follows the
//!   database's clock, tests move a manual one).
//! - [`store`]: SQL, one module per table, on SQLite or PostgreSQL through
//!   one query text; transactions (`BEGIN IMMEDIATE`, retries).
//! - [`service`]: one function per business operation, each one
//!   transaction with conditional updates and event rows; idempotency.
//! - [`jobs`]: background jobs: the expiry timing wheel, the backstop
//!   sweep, checkout-lapse and presale timeouts, the zombie-lock reaper,
//!   archiving, reconciliation, purges, and the operators' long work:
//!   redeem-code generation, bulk issue and void, wake-ups before expiry.
//! - [`http`]: what the API and the pages share: the state handlers get,
//!   the router that mounts both, the middleware (request ids, metrics,
//!   rate limits and the client address, security headers) and the
//!   operator endpoints (`/healthz`, `/readyz`, `/metrics`).
//! - [`api`]: the axum JSON API of `API.md`: thin handlers, auth, errors.
//! - [`web`]: server-rendered pages (leptos SSR): the support console
//!   (sign-in, search, coupon/order/user pages, actions, reconciliation,
//!   dashboard, audit log, staff) and the customers' self-check page.
//! - [`config`], [`error`], [`log_safe`], [`metrics`], [`server`]: process
//!   plumbing.
//! - [`demo`]: `couponkeeper demo-data`, a believable shop (with planted
//!   anomalies) loaded through the service on a manual clock.

// Console pages are leptos views whose types nest as deep as the page;
// the largest pass the compiler's default query depth (128).
#![recursion_limit = "256"]

pub mod api;
pub mod clock;
pub mod config;
pub mod demo;
pub mod domain;
pub mod error;
pub mod http;
pub mod i18n;
pub mod jobs;
pub mod log_safe;
pub mod metrics;
pub mod server;
pub mod service;
pub mod store;
pub mod web;
