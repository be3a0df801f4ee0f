//! The system around the API: the background jobs and the deadline
//! worker on a manual clock, webhook delivery (plain and TLS), the
//! database clock, the demo data, and the real `couponkeeper serve`
//! process under `kill -9`, SIGTERM, a database outage and a rolling
//! upgrade (`served`).
//!
//! Run one area with `cargo test --test system jobs::`.

#[path = "../common/mod.rs"]
mod common;
mod served;

mod clock;
mod crash;
mod delivery;
mod delivery_tls;
mod demo_data;
mod drain;
mod hardening;
mod jobs;
mod migration_compat;
mod outage;
mod reminders;
mod sql_capture;
mod worker;
