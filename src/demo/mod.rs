//! `couponkeeper demo-data`: fills a database with a believable shop so a
//! newcomer opening the support console sees customers, coupons and orders
//! in every state, with real timelines, and a few broken records to fix.
//!
//! How it is made:
//!
//! - Everything ordinary goes through the real service operations (create
//!   template, claim, create order, pay, deposit, final payment, cancel,
//!   refund, and the jobs' expiry / checkout-lapse / presale-timeout
//!   operations), so every coupon and order has a real event timeline. The
//!   actor of every event is [`ACTOR`].
//! - The service runs on a [`ManualClock`] started ten days before `now` and
//!   moved forward step by step to `now`, so timelines carry believable
//!   timestamps. The clock never passes `now`.
//! - After the last step, five kinds of anomaly (kinds of `GET
//!   /reconciliation` in API.md) are planted with raw SQL updates, the way a
//!   bug or a hand edit of the database would leave them: no event row
//!   records the damage. See [`plant_anomalies`].
//!
//! Running it twice writes nothing: when the database already holds a
//! `DEMO-` order, the report of what is there comes back with
//! `already_present` set (the command prints "demo data already present" and
//! exits 0). A load that stopped half-way (fewer `DEMO-` orders than a full
//! load makes) is refused with an error: start again on an empty database.
//!
//! One coupon is `invalidated` through the real invalidate operation (an
//! account caught reselling coupons), so every coupon status is present.
//!
//! One file per concern:
//! - [`seed`]: the service, the demo's clock and the steps the story is
//!   told with (claim, order, pay, ..., the jobs);
//! - [`catalogue`]: the shop's templates and presale campaigns;
//! - [`story`]: ten days of customers claiming and ordering;
//! - [`anomalies`]: the broken records planted after the story;
//! - [`report`]: what the database holds, read back.

mod anomalies;
mod catalogue;
mod report;
mod seed;
mod story;

pub use report::{Anomaly, DemoReport, report};

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::clock::{ManualClock, SharedClock};
use crate::config::Config;
use crate::server::try_build_service;
use crate::service::Ctx;
use crate::store::Db;
use anomalies::plant_anomalies;
use report::demo_order_count;
use seed::Seed;
pub use seed::{ACTOR, DemoError, ORDER_COUNT, ORDER_PREFIX, USERS};

/// How far back the demo's clock starts.
const HISTORY_DAYS: i64 = 10;

/// Loads the demo into `db` (already migrated), with its timeline ending at
/// `now`, unless demo data is already there; either way returns the report
/// of what the database holds.
pub async fn load(db: &Db, config: &Config, now: DateTime<Utc>) -> Result<DemoReport, DemoError> {
    let found = demo_order_count(db).await?;
    if found > 0 {
        if found < ORDER_COUNT {
            return Err(DemoError::Partial { found });
        }
        return report(db, now, true).await;
    }
    let clock = Arc::new(ManualClock::new(now - Duration::days(HISTORY_DAYS)));
    let shared: SharedClock = clock.clone();
    let service = try_build_service(config, db.clone(), shared)?;
    let mut seed = Seed {
        svc: service,
        clock,
        end: now,
        ctx: Ctx::new(ACTOR, None),
        normal_seq: 0,
        presale_seq: 0,
        grace_seconds: config.jobs.presale_grace_seconds,
    };
    let planted = seed.story().await?;
    plant_anomalies(db, &planted, now).await?;
    report(db, now, false).await
}
