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
//! - After the last step, four kinds of anomaly (the kinds of `GET
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

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use crate::clock::{Clock, ManualClock, SharedClock};
use crate::config::Config;
use crate::domain::ids::UserId;
use crate::domain::template::TemplateInput;
use crate::domain::time::{rfc3339, to_ms};
use crate::server::{StartError, try_build_service};
use crate::service::campaigns::CampaignInput;
use crate::service::orders::OrderInput;
use crate::service::support::Authority;
use crate::service::{Ctx, Executed, Refusal, Service, ServiceError};
use crate::store::Db;

/// The actor of every event the demo writes.
pub const ACTOR: &str = "demo:seed";
/// Prefix of every demo order number (`DEMO-N-0001`, `DEMO-P-0001`).
pub const ORDER_PREFIX: &str = "DEMO-";
/// Number of demo users: `u10001` ... `u10040`.
pub const USERS: u32 = 40;
/// Orders a full load creates (a smaller count means a half-done load).
pub const ORDER_COUNT: i64 = 48;
/// How far back the demo's clock starts.
const HISTORY_DAYS: i64 = 10;
/// Upper bound on expiry batches per job pass (500 coupons each).
const MAX_EXPIRY_BATCHES: usize = 100;
/// Rows per job batch.
const JOB_BATCH: i64 = 500;
/// Most anomalies of one kind the report lists.
const MAX_LISTED_ANOMALIES: i64 = 50;

/// Why the demo could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("demo step \"{step}\" failed: {source}")]
    Step {
        step: String,
        #[source]
        source: ServiceError,
    },
    #[error(
        "the database holds {found} of the {ORDER_COUNT} demo orders: an earlier load stopped half-way; load the demo into an empty database"
    )]
    Partial { found: i64 },
    #[error(transparent)]
    Start(#[from] StartError),
}

/// One planted anomaly, as the summary and `--json` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anomaly {
    /// One of the reconciliation kinds of API.md.
    pub kind: String,
    pub order_no: String,
    pub coupon_id: String,
    pub code: String,
    pub user_id: String,
}

/// What the database holds after a load (or what was already there).
#[derive(Debug, Clone, Serialize)]
pub struct DemoReport {
    /// Templates the demo users hold coupons of.
    pub templates: i64,
    /// Coupons of the demo users.
    pub coupons: i64,
    /// `DEMO-` orders.
    pub orders: i64,
    /// Anomalies among the demo orders, found by querying the rows.
    pub anomalies: Vec<Anomaly>,
    /// True when nothing was written because demo data was already there.
    pub already_present: bool,
    /// Coupons of the demo users by effective status.
    pub coupons_by_status: BTreeMap<String, i64>,
    /// `DEMO-` orders by `kind/status`.
    pub orders_by_status: BTreeMap<String, i64>,
    /// The instant the demo's timeline ends at.
    pub now: String,
}

impl DemoReport {
    /// The short human summary the command prints.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        if self.already_present {
            out.push_str("demo data already present; nothing written.\n");
        } else {
            out.push_str("demo data loaded.\n");
        }
        out.push_str(&format!(
            "{} templates, {} coupons, {} orders (users u10001-u{}; orders DEMO-N-*, DEMO-P-*)\n",
            self.templates,
            self.coupons,
            self.orders,
            10000 + USERS
        ));
        let join = |m: &BTreeMap<String, i64>, prefix: &str| -> String {
            m.iter()
                .filter_map(|(k, v)| k.strip_prefix(prefix).map(|s| format!("{s} {v}")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "coupons:        {}\n",
            join(&self.coupons_by_status, "")
        ));
        out.push_str(&format!(
            "normal orders:  {}\n",
            join(&self.orders_by_status, "normal/")
        ));
        out.push_str(&format!(
            "presale orders: {}\n",
            join(&self.orders_by_status, "presale/")
        ));
        if self.anomalies.is_empty() {
            out.push_str("anomalies: none left\n");
        } else {
            out.push_str("planted anomalies (raw SQL edits, no event records them):\n");
            for a in &self.anomalies {
                out.push_str(&format!(
                    "  {:<32} {:<12} {}  {}  {}\n",
                    a.kind, a.order_no, a.coupon_id, a.code, a.user_id
                ));
            }
        }
        out
    }

    /// The `--json` object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

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

/// A coupon as the story keeps it.
#[derive(Debug, Clone)]
struct Cpn {
    id: String,
}

/// Order numbers and coupons the anomalies are planted on.
#[derive(Debug, Default)]
struct ToPlant {
    /// Presale order to close while its coupon stays locked.
    closed_with_locked_coupon: String,
    /// Deposit-paid order whose coupon is freed.
    active_with_free_coupon: (String, String),
    /// Paid order to re-point at `.1` (another coupon of the same user).
    mismatch: (String, String),
    /// Normal pending order whose checkout lock is moved into the past.
    stale_checkout: String,
}

struct Seed {
    svc: Service,
    clock: Arc<ManualClock>,
    end: DateTime<Utc>,
    ctx: Ctx,
    normal_seq: u32,
    presale_seq: u32,
    grace_seconds: i64,
}

fn user(n: u32) -> String {
    format!("u{}", 10000 + n)
}

fn step(what: impl Into<String>) -> impl FnOnce(ServiceError) -> DemoError {
    let step = what.into();
    move |source| DemoError::Step { step, source }
}

fn fresh<T>(e: Executed<T>, what: &str) -> Result<T, DemoError> {
    e.fresh().ok_or_else(|| DemoError::Step {
        step: what.to_string(),
        source: ServiceError::IllegalTransition("unexpected idempotent replay".into()),
    })
}

const CATEGORIES: [&str; 5] = ["phones", "appliances", "books", "snacks", "apparel"];

impl Seed {
    /// Moves the clock to `before` before the end of the timeline (never
    /// backwards, never past the end).
    fn at(&self, before: Duration) {
        let t = (self.end - before).min(self.end);
        if t > self.clock.now() {
            self.clock.set(t);
        }
    }

    /// Moves the clock forward a little (never past the end).
    fn tick(&self, minutes: i64) {
        let t = (self.clock.now() + Duration::minutes(minutes)).min(self.end);
        self.clock.set(t);
    }

    fn iso(&self, from_end: Duration) -> String {
        rfc3339(self.end + from_end)
    }

    async fn template(&self, input: TemplateInput) -> Result<String, DemoError> {
        let name = input.name.clone().unwrap_or_default();
        let what = format!("create template {name}");
        let t = self
            .svc
            .create_template(&self.ctx, None, input)
            .await
            .map_err(step(&what))?;
        Ok(fresh(t, &what)?.id)
    }

    async fn campaign(
        &self,
        name: &str,
        opens: Duration,
        closes: Duration,
        policy: &str,
    ) -> Result<String, DemoError> {
        let what = format!("create campaign {name}");
        let c = self
            .svc
            .create_campaign(
                &self.ctx,
                None,
                CampaignInput {
                    name: Some(name.into()),
                    final_payment_starts_at: Some(self.iso(opens)),
                    final_payment_ends_at: Some(self.iso(closes)),
                    policy: Some(policy.into()),
                },
            )
            .await
            .map_err(step(&what))?;
        Ok(fresh(c, &what)?.id)
    }

    async fn claim(&self, n: u32, template_id: &str) -> Result<Cpn, DemoError> {
        let u = user(n);
        let what = format!("{u} claims {template_id}");
        let uid = UserId::parse(&u).map_err(|e| step(&what)(e.into()))?;
        let c = self
            .svc
            .claim(&self.ctx, None, uid, template_id.to_string())
            .await
            .map_err(step(&what))?;
        let c = fresh(c, &what)?;
        Ok(Cpn { id: c.id })
    }

    /// A claim the template's stock must refuse (the sold-out template).
    async fn claim_sold_out(&self, n: u32, template_id: &str) -> Result<(), DemoError> {
        let u = user(n);
        let what = format!("{u} claims sold-out {template_id}");
        let uid = UserId::parse(&u).map_err(|e| step(&what)(e.into()))?;
        match self
            .svc
            .claim(&self.ctx, None, uid, template_id.to_string())
            .await
        {
            Err(ServiceError::Refused {
                refusal: Refusal::OutOfStock,
                ..
            }) => Ok(()),
            Err(e) => Err(step(what)(e)),
            Ok(_) => Err(step(what)(ServiceError::IllegalTransition(
                "the sold-out template handed out one more coupon".into(),
            ))),
        }
    }

    async fn order(&self, input: OrderInput) -> Result<String, DemoError> {
        let no = input.order_no.clone().unwrap_or_default();
        let what = format!("create order {no}");
        self.svc
            .create_order(&self.ctx, None, input)
            .await
            .map_err(step(&what))?;
        Ok(no)
    }

    async fn normal(
        &mut self,
        n: u32,
        coupon: Option<&Cpn>,
        total: i64,
        category: &str,
    ) -> Result<String, DemoError> {
        self.normal_seq += 1;
        let no = format!("{ORDER_PREFIX}N-{:04}", self.normal_seq);
        self.order(OrderInput {
            order_no: Some(no),
            user_id: Some(user(n)),
            kind: Some("normal".into()),
            category: Some(category.into()),
            total_cents: Some(total),
            coupon_id: coupon.map(|c| c.id.clone()),
            campaign_id: None,
            deposit_cents: None,
        })
        .await
    }

    async fn presale(
        &mut self,
        n: u32,
        coupon: Option<&Cpn>,
        campaign: &str,
        total: i64,
        deposit: i64,
    ) -> Result<String, DemoError> {
        self.presale_seq += 1;
        let no = format!("{ORDER_PREFIX}P-{:04}", self.presale_seq);
        self.order(OrderInput {
            order_no: Some(no),
            user_id: Some(user(n)),
            kind: Some("presale".into()),
            category: Some("phones".into()),
            total_cents: Some(total),
            coupon_id: coupon.map(|c| c.id.clone()),
            campaign_id: Some(campaign.into()),
            deposit_cents: Some(deposit),
        })
        .await
    }

    async fn pay(&self, no: &str) -> Result<(), DemoError> {
        self.svc
            .pay(&self.ctx, None, no.into())
            .await
            .map_err(step(format!("pay {no}")))?;
        Ok(())
    }

    async fn deposit(&self, no: &str) -> Result<(), DemoError> {
        self.svc
            .pay_deposit(&self.ctx, None, no.into())
            .await
            .map_err(step(format!("pay deposit of {no}")))?;
        Ok(())
    }

    /// Pays the final payment and checks the outcome the story expects.
    async fn final_payment(&self, no: &str, outcome: &str) -> Result<(), DemoError> {
        let what = format!("final payment of {no}");
        let quote = self
            .svc
            .final_payment_quote(no)
            .await
            .map_err(step(&what))?;
        if quote.coupon_outcome != outcome {
            return Err(step(what)(ServiceError::IllegalTransition(format!(
                "expected outcome {outcome}, the quote says {}",
                quote.coupon_outcome
            ))));
        }
        self.svc
            .pay_final(&self.ctx, None, no.into())
            .await
            .map_err(step(&what))?;
        Ok(())
    }

    async fn cancel(&self, no: &str, reason: &str) -> Result<(), DemoError> {
        self.svc
            .cancel(&self.ctx, None, no.into(), Some(reason.into()))
            .await
            .map_err(step(format!("cancel {no}")))?;
        Ok(())
    }

    async fn refund(&self, no: &str, reason: &str) -> Result<(), DemoError> {
        self.svc
            .refund(&self.ctx, None, no.into(), Some(reason.into()))
            .await
            .map_err(step(format!("refund {no}")))?;
        Ok(())
    }

    /// What the background jobs would have done by now: expire overdue
    /// coupons, close lapsed checkouts and timed-out presale orders.
    async fn jobs(&self) -> Result<(), DemoError> {
        for _ in 0..MAX_EXPIRY_BATCHES {
            let done = self
                .svc
                .expire_due_batch(ACTOR, JOB_BATCH)
                .await
                .map_err(step("expire overdue coupons"))?;
            if done.count == 0 {
                break;
            }
        }
        self.svc
            .close_lapsed_checkouts(ACTOR, JOB_BATCH)
            .await
            .map_err(step("close lapsed checkouts"))?;
        self.svc
            .close_timed_out_presales(ACTOR, self.grace_seconds, JOB_BATCH)
            .await
            .map_err(step("close timed-out presale orders"))?;
        Ok(())
    }

    /// The shop's last ten days. Returns the orders the anomalies are
    /// planted on.
    async fn story(&mut self) -> Result<ToPlant, DemoError> {
        let d = Duration::days;
        let h = Duration::hours;
        let m = Duration::minutes;
        let far = self.iso(d(20));

        // Day -10: the shop sets up its coupons and three presales.
        let t300 = self
            .template(TemplateInput {
                name: Some("满300减50".into()),
                kind: Some("fixed".into()),
                value_cents: Some(5000),
                min_order_cents: Some(30000),
                valid_until: Some(far.clone()),
                total_stock: Some(5000),
                per_user_limit: Some(2),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let t199 = self
            .template(TemplateInput {
                name: Some("满199减20".into()),
                kind: Some("fixed".into()),
                value_cents: Some(2000),
                min_order_cents: Some(19900),
                valid_until: Some(far.clone()),
                total_stock: Some(5000),
                per_user_limit: Some(2),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let t90 = self
            .template(TemplateInput {
                name: Some("9折券最高减30".into()),
                kind: Some("percent".into()),
                percent_off: Some(10),
                max_discount_cents: Some(3000),
                valid_until: Some(far.clone()),
                total_stock: Some(2000),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let beauty = self
            .template(TemplateInput {
                name: Some("美妆品类券".into()),
                kind: Some("fixed".into()),
                value_cents: Some(3000),
                min_order_cents: Some(20000),
                categories: Some(vec!["beauty".into()]),
                valid_until: Some(far.clone()),
                total_stock: Some(1000),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let newbie = self
            .template(TemplateInput {
                name: Some("新人无门槛5元".into()),
                kind: Some("fixed".into()),
                value_cents: Some(500),
                min_order_cents: Some(0),
                valid_seconds: Some(3 * 24 * 3600),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let flash = self
            .template(TemplateInput {
                name: Some("限量秒杀券 满100减30".into()),
                kind: Some("fixed".into()),
                value_cents: Some(3000),
                min_order_cents: Some(10000),
                valid_until: Some(far.clone()),
                total_stock: Some(8),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let h72 = self
            .template(TemplateInput {
                name: Some("72小时限时券 满150减15".into()),
                kind: Some("fixed".into()),
                value_cents: Some(1500),
                min_order_cents: Some(15000),
                valid_seconds: Some(72 * 3600),
                per_user_limit: Some(3),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(2);
        // Claimed over the last hours of the story, so coupons are due over
        // the next days and the pending-expirations dashboard shows them.
        let h60 = self
            .template(TemplateInput {
                name: Some("60小时闪购券 满100减10".into()),
                kind: Some("fixed".into()),
                value_cents: Some(1000),
                min_order_cents: Some(10000),
                valid_seconds: Some(60 * 3600),
                per_user_limit: Some(1),
                total_stock: Some(5000),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let over = self
            .campaign("618预售 · 已结束", d(-6), d(-3), "strict")
            .await?;
        self.tick(2);
        let open = self
            .campaign("双11预售 · 尾款进行中", d(-1), d(2), "swap_or_compensate")
            .await?;
        self.tick(2);
        let future = self
            .campaign("双12预售 · 尾款未开始", d(3), d(6), "lock")
            .await?;

        // Day -10, an hour later: the customers claim.
        self.at(d(10) - h(1));
        let mut c300: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut c199: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut c90: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut cbeauty: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut cnew: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut cflash: BTreeMap<u32, Cpn> = BTreeMap::new();
        let mut c72: BTreeMap<u32, Cpn> = BTreeMap::new();
        for n in 1..=USERS {
            cnew.insert(n, self.claim(n, &newbie).await?);
            // u10034 never claims 满300减50: its presale ends compensated.
            if n != 34 {
                c300.insert(n, self.claim(n, &t300).await?);
            }
            if n <= 20 || n == 36 {
                c199.insert(n, self.claim(n, &t199).await?);
            }
            if n <= 12 {
                c90.insert(n, self.claim(n, &t90).await?);
            }
            if (13..=24).contains(&n) {
                cbeauty.insert(n, self.claim(n, &beauty).await?);
            }
            if n == 31 || n == 32 {
                c72.insert(n, self.claim(n, &h72).await?);
            }
            self.tick(1);
        }
        // The flash sale: eight coupons, gone in minutes; the ninth is refused.
        for n in 21..=28 {
            cflash.insert(n, self.claim(n, &flash).await?);
        }
        self.claim_sold_out(29, &flash).await?;

        let need = |map: &BTreeMap<u32, Cpn>, n: u32| -> Result<Cpn, DemoError> {
            map.get(&n).cloned().ok_or_else(|| DemoError::Step {
                step: format!("find the coupon of {}", user(n)),
                source: ServiceError::IllegalTransition("the story lost a coupon".into()),
            })
        };

        // Day -9: normal orders.
        self.at(d(9));
        for n in 1..=8u32 {
            let c = need(&c300, n)?;
            let cat = CATEGORIES[(n as usize) % CATEGORIES.len()];
            let no = self
                .normal(n, Some(&c), 32900 + i64::from(n) * 1100, cat)
                .await?;
            self.tick(2);
            self.pay(&no).await?;
            self.tick(7);
        }
        for n in [9u32, 10] {
            let c = need(&c90, n)?;
            let no = self.normal(n, Some(&c), 45900, "appliances").await?;
            self.tick(3);
            self.pay(&no).await?;
            self.tick(5);
        }
        for n in [13u32, 14] {
            let c = need(&cbeauty, n)?;
            let no = self.normal(n, Some(&c), 25900, "beauty").await?;
            self.tick(2);
            self.pay(&no).await?;
            self.tick(6);
        }
        for n in 21..=24u32 {
            let c = need(&cnew, n)?;
            let no = self.normal(n, Some(&c), 3990, "snacks").await?;
            self.tick(1);
            self.pay(&no).await?;
            self.tick(4);
        }
        let mut refund_later = Vec::new();
        for n in [11u32, 12] {
            let c = need(&c199, n)?;
            let no = self.normal(n, Some(&c), 21900, "apparel").await?;
            self.tick(2);
            self.pay(&no).await?;
            refund_later.push(no);
            self.tick(5);
        }
        for n in [15u32, 16] {
            let c = need(&c199, n)?;
            let no = self.normal(n, Some(&c), 23900, "apparel").await?;
            self.tick(4);
            self.cancel(&no, "不想要了").await?;
            self.tick(3);
        }
        // Two customers walk away from checkout: the lapse job closes them.
        for n in [17u32, 18] {
            let c = need(&c199, n)?;
            self.normal(n, Some(&c), 20900, "books").await?;
            self.tick(2);
        }
        for n in [19u32, 20] {
            let no = self.normal(n, None, 8900, "books").await?;
            self.tick(1);
            self.pay(&no).await?;
            self.tick(3);
        }

        // Day -9: the 618 presale (strict) takes deposits.
        let mut p_over_applied = String::new();
        let mut p_over_refund_final = String::new();
        let mut p_over_strict = String::new();
        for n in [26u32, 28, 29, 31, 32] {
            let c = if n == 31 {
                need(&c72, n)?
            } else {
                need(&c300, n)?
            };
            let no = self.presale(n, Some(&c), &over, 39900, 10000).await?;
            self.tick(2);
            self.deposit(&no).await?;
            self.tick(5);
            match n {
                26 => p_over_applied = no,
                28 => p_over_refund_final = no,
                29 => {} // never pays the rest: closed by the presale timeout
                31 => p_over_strict = no, // its 72-hour coupon expires first
                _ => refund_later.push(no), // 32: deposit refunded on day -7
            }
        }
        let no = self
            .presale(30, Some(&need(&c300, 30)?), &over, 32900, 5000)
            .await?;
        self.tick(3);
        self.jobs().await?;

        // Day -8: refunds, a cancelled presale, the flash-sale coupons used.
        self.at(d(8));
        self.cancel(&no, "定金未付，取消预订").await?;
        self.tick(10);
        let nos = std::mem::take(&mut refund_later);
        let (normal_refunds, presale_refunds): (Vec<String>, Vec<String>) =
            nos.into_iter().partition(|n| n.contains("-N-"));
        for no in &normal_refunds {
            self.refund(no, "尺码不合适，七天无理由退货").await?;
            self.tick(20);
        }
        for n in 21..=23u32 {
            let c = need(&cflash, n)?;
            let no = self.normal(n, Some(&c), 12900, "snacks").await?;
            self.tick(2);
            self.pay(&no).await?;
            self.tick(9);
        }
        self.jobs().await?;

        // Day -7: a presale deposit refunded; the newcomer coupons lapse.
        self.at(d(7) - h(2));
        for no in &presale_refunds {
            self.refund(no, "预售定金退款：客户改变主意").await?;
            self.tick(15);
        }
        self.at(d(6) + h(20));
        self.jobs().await?;

        // Day -6: 72-hour coupons for the 双11 presale (swap_or_compensate).
        self.at(d(6));
        for n in [33u32, 34] {
            c72.insert(n, self.claim(n, &h72).await?);
            self.tick(3);
        }
        let mut p_swap = String::new();
        let mut p_comp = String::new();
        for n in [33u32, 34] {
            let c = need(&c72, n)?;
            let no = self.presale(n, Some(&c), &open, 39900, 10000).await?;
            self.tick(2);
            self.deposit(&no).await?;
            self.tick(6);
            if n == 33 {
                p_swap = no;
            } else {
                p_comp = no;
            }
        }

        // Day -5: the 618 window is open: final payments.
        self.at(d(5));
        self.final_payment(&p_over_applied, "applied").await?;
        self.tick(30);
        self.final_payment(&p_over_refund_final, "applied").await?;
        self.tick(45);
        self.final_payment(&p_over_strict, "no_discount_expired")
            .await?;
        self.tick(30);
        let mut p_open = Vec::new();
        for n in [35u32, 36, 38] {
            let c = if n == 36 {
                need(&c199, n)?
            } else {
                need(&c300, n)?
            };
            let no = self.presale(n, Some(&c), &open, 32900, 5000).await?;
            self.tick(2);
            self.deposit(&no).await?;
            self.tick(8);
            p_open.push(no);
        }
        self.jobs().await?;

        // Day -4: one 618 order refunded after its final payment.
        self.at(d(4));
        self.refund(&p_over_refund_final, "商品质量问题，整单退款")
            .await?;
        self.jobs().await?;

        // Day -2: the 618 window has ended; unpaid presales time out.
        // A 72-hour coupon on the 双12 presale (lock): it ends before the
        // final-payment window opens, and the lock policy still honours it.
        self.at(d(2));
        self.jobs().await?;
        self.tick(30);
        c72.insert(39, self.claim(39, &h72).await?);
        self.tick(5);
        let c = need(&c72, 39)?;
        let no = self.presale(39, Some(&c), &future, 39900, 10000).await?;
        self.tick(3);
        self.deposit(&no).await?;

        // Day -1: the 双11 window opens.
        self.at(d(1) - h(2));
        let c = need(&c300, 40)?;
        let no = self.presale(40, Some(&c), &future, 59900, 20000).await?;
        self.tick(2);
        self.deposit(&no).await?;
        self.at(d(1) - h(4));
        if let Some(no) = p_open.get(2) {
            self.cancel(no, "客户申请取消预售").await?;
        }
        self.tick(60);
        self.final_payment(&p_swap, "swapped").await?;
        self.tick(40);
        self.final_payment(&p_comp, "compensated").await?;
        self.jobs().await?;

        // Day 0.
        self.at(h(6));
        if let Some(no) = p_open.first() {
            self.final_payment(no, "applied").await?;
        }
        // A paid order, re-pointed at another coupon later (anomaly).
        self.at(h(5));
        for n in 1..=6 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c199, 4)?;
        let mismatch_order = self.normal(4, Some(&c), 26900, "apparel").await?;
        self.tick(3);
        self.pay(&mismatch_order).await?;
        let other = need(&c90, 4)?;
        // A deposit whose coupon is freed later (anomaly).
        self.at(h(3));
        for n in 7..=12 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c199, 3)?;
        let free_order = self.presale(3, Some(&c), &future, 39900, 10000).await?;
        self.tick(2);
        self.deposit(&free_order).await?;
        self.tick(10);
        let c = need(&c199, 1)?;
        self.presale(1, Some(&c), &future, 29900, 5000).await?;
        self.at(h(2));
        for n in 13..=18 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c300, 37)?;
        self.presale(37, Some(&c), &open, 39900, 10000).await?;
        self.at(h(1));
        for n in 19..=24 {
            self.claim(n, &h60).await?;
        }
        self.normal(7, None, 6900, "books").await?;
        // The main support case: a 双12 deposit, its order closed later
        // while the coupon stays locked (anomaly).
        self.at(m(40));
        for n in 25..=30 {
            self.claim(n, &h60).await?;
        }
        let c = need(&c199, 2)?;
        let closed_order = self.presale(2, Some(&c), &future, 39900, 10000).await?;
        self.tick(2);
        self.deposit(&closed_order).await?;
        self.at(m(4));
        let c = need(&c199, 6)?;
        self.normal(6, Some(&c), 25900, "apparel").await?;
        self.at(m(2));
        let c = need(&c199, 5)?;
        let stale_order = self.normal(5, Some(&c), 20900, "books").await?;
        // Support voided a coupon of an account caught reselling coupons.
        for n in (25..=33).rev() {
            let Some(c) = c300.get(&n) else { continue };
            let view = self
                .svc
                .get_coupon(&c.id)
                .await
                .map_err(step(format!("read {}", c.id)))?;
            if view.status == "available" {
                self.svc
                    .invalidate_coupon(
                        &self.ctx,
                        &Authority::Api,
                        None,
                        c.id.clone(),
                        Some("账号倒卖优惠券，作废 · the account resold coupons".into()),
                    )
                    .await
                    .map_err(step(format!("invalidate {}", c.id)))?;
                break;
            }
        }
        self.at(Duration::zero());
        self.jobs().await?;

        Ok(ToPlant {
            closed_with_locked_coupon: closed_order,
            active_with_free_coupon: (free_order, need(&c199, 3)?.id),
            mismatch: (mismatch_order, other.id),
            stale_checkout: stale_order,
        })
    }
}

/// Plants the anomalies with raw SQL, in one transaction, after the story.
/// These edits deliberately bypass the service: they are what a bug or a
/// hand edit of the database leaves behind, so no event row records them,
/// and they are what `GET /reconciliation` and the console exist to find.
async fn plant_anomalies(db: &Db, p: &ToPlant, now: DateTime<Utc>) -> Result<(), DemoError> {
    let now_ms = to_ms(now);
    let closed = p.closed_with_locked_coupon.clone();
    let (free_order, free_coupon) = p.active_with_free_coupon.clone();
    let (mismatch_order, other_coupon) = p.mismatch.clone();
    let stale = p.stale_checkout.clone();
    db.write::<(), ServiceError, _>(move |c| {
        let closed = closed.clone();
        let free_order = free_order.clone();
        let free_coupon = free_coupon.clone();
        let mismatch_order = mismatch_order.clone();
        let other_coupon = other_coupon.clone();
        let stale = stale.clone();
        Box::pin(async move {
            // locked_coupon_order_closed: the shop's order system closed the
            // deposit-paid order straight in the database (as an old admin
            // script did), so its coupon was never released and stays
            // `locked` to a closed order.
            let n = sqlx::query(
                "UPDATE orders SET status = 'closed', closed_at = $2, updated_at = $2 \
                 WHERE order_no = $1 AND status = 'deposit_paid'",
            )
            .bind(&closed)
            .bind(now_ms - 20 * 60_000)
            .execute(&mut *c)
            .await?
            .rows_affected();
            one_row(n, "close the presale order")?;
            // order_active_coupon_not_locked: someone "gave the coupon back"
            // to the customer by hand; the order is still deposit_paid and
            // counts on a coupon that is `available` again.
            let n = sqlx::query(
                "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL, \
                 updated_at = $3 WHERE id = $1 AND order_no = $2 AND status = 'locked'",
            )
            .bind(&free_coupon)
            .bind(&free_order)
            .bind(now_ms - 90 * 60_000)
            .execute(&mut *c)
            .await?
            .rows_affected();
            one_row(n, "free the coupon")?;
            // coupon_order_mismatch: a bad data fix re-pointed a paid order
            // at another coupon of the same customer; the coupon it used
            // still names the order, the order names a different coupon.
            let n = sqlx::query("UPDATE orders SET coupon_id = $2 WHERE order_no = $1")
                .bind(&mismatch_order)
                .bind(&other_coupon)
                .execute(&mut *c)
                .await?
                .rows_affected();
            one_row(n, "re-point the order")?;
            // stale_checkout_lock: an app server with a fast clock wrote a
            // checkout lock that had already lapsed; the order is still
            // pending_payment and its coupon still `locked`, waiting for the
            // lapse job (which, in `serve`, closes it at its first sweep).
            let n = sqlx::query(
                "UPDATE orders SET checkout_lock_expires_at = $2 \
                 WHERE order_no = $1 AND status = 'pending_payment'",
            )
            .bind(&stale)
            .bind(now_ms - 10 * 60_000)
            .execute(&mut *c)
            .await?
            .rows_affected();
            one_row(n, "backdate the checkout lock")?;
            Ok(())
        })
    })
    .await
    .map_err(|e| match e {
        ServiceError::Db(e) => DemoError::Db(e),
        other => step("plant anomalies")(other),
    })
}

/// A planting edit must change exactly one row, or the story and the
/// planting have drifted apart.
fn one_row(n: u64, what: &str) -> Result<(), ServiceError> {
    if n == 1 {
        Ok(())
    } else {
        Err(ServiceError::IllegalTransition(format!(
            "planting: {what} changed {n} rows instead of 1"
        )))
    }
}

async fn demo_order_count(db: &Db) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE order_no LIKE 'DEMO-%'")
        .fetch_one(db.pool())
        .await
}

/// `('u10001', ..., 'u10040')`: our own literals, nothing user-supplied.
fn demo_users_sql() -> String {
    let list: Vec<String> = (1..=USERS).map(|n| format!("'{}'", user(n))).collect();
    format!("({})", list.join(", "))
}

/// Reads back what the database holds: counts, and the anomalies among the
/// demo orders (each kind one bounded query on the live rows, so a case a
/// support engineer has fixed is no longer listed).
pub async fn report(
    db: &Db,
    now: DateTime<Utc>,
    already_present: bool,
) -> Result<DemoReport, DemoError> {
    let pool = db.pool();
    let users = demo_users_sql();
    let now_ms = to_ms(now);
    let templates: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(DISTINCT template_id) FROM coupons WHERE user_id IN {users}"
    ))
    .fetch_one(pool)
    .await?;
    let by_status: Vec<(String, i64)> = sqlx::query_as(&format!(
        "SELECT CASE WHEN status = 'available' AND ends_at <= $1 THEN 'expired' ELSE status END AS s, \
         COUNT(*) FROM coupons WHERE user_id IN {users} GROUP BY s"
    ))
    .bind(now_ms)
    .fetch_all(pool)
    .await?;
    let mut coupons_by_status: BTreeMap<String, i64> = BTreeMap::new();
    for (s, n) in by_status {
        *coupons_by_status.entry(s).or_default() += n;
    }
    let orders: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT kind, status, COUNT(*) FROM orders WHERE order_no LIKE 'DEMO-%' GROUP BY kind, status",
    )
    .fetch_all(pool)
    .await?;
    let orders_by_status: BTreeMap<String, i64> = orders
        .into_iter()
        .map(|(k, s, n)| (format!("{k}/{s}"), n))
        .collect();
    let limit = MAX_LISTED_ANOMALIES;
    let queries: [(&str, String); 4] = [
        (
            "locked_coupon_order_closed",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM coupons c \
                 JOIN orders o ON o.order_no = c.order_no \
                 WHERE c.status = 'locked' AND o.status IN ('closed', 'refunded') \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
        (
            "order_active_coupon_not_locked",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM orders o \
                 JOIN coupons c ON c.id = o.coupon_id \
                 WHERE o.status IN ('pending_payment', 'deposit_paid') \
                 AND (c.status <> 'locked' OR c.order_no IS NULL OR c.order_no <> o.order_no) \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
        (
            "coupon_order_mismatch",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM coupons c \
                 JOIN orders o ON o.order_no = c.order_no \
                 WHERE c.status IN ('locked', 'used') \
                 AND (o.coupon_id IS NULL OR o.coupon_id <> c.id) \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
        (
            "stale_checkout_lock",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM orders o \
                 JOIN coupons c ON c.id = o.coupon_id \
                 WHERE o.kind = 'normal' AND o.status = 'pending_payment' \
                 AND o.checkout_lock_expires_at <= $1 \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
    ];
    let mut anomalies = Vec::new();
    for (kind, sql) in &queries {
        let q = sqlx::query_as::<_, (String, String, String, String)>(sql);
        let q = if sql.contains("$1") {
            q.bind(now_ms)
        } else {
            q
        };
        for (order_no, coupon_id, code, user_id) in q.fetch_all(pool).await? {
            anomalies.push(Anomaly {
                kind: (*kind).to_string(),
                order_no,
                coupon_id,
                code,
                user_id,
            });
        }
    }
    Ok(DemoReport {
        templates,
        coupons: coupons_by_status.values().sum(),
        orders: orders_by_status.values().sum(),
        anomalies,
        already_present,
        coupons_by_status,
        orders_by_status,
        now: rfc3339(now),
    })
}
