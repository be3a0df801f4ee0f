//! Random sequences of business operations, run against the service
//! directly on a small universe (3 users, 2 templates, 3 campaigns, a
//! manual clock that jumps hours so coupons expire and payment windows open
//! and close mid-run). After every step the database is checked for the
//! invariants that must hold whatever happened: refusals are fine, a broken
//! invariant, a database error or an illegal transition is not.

use std::collections::HashMap;

use chrono::Duration;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::TestCaseError;
use sqlx::AnyPool;

use crate::common::fixtures::order;
use crate::common::{TestService, epoch};
use couponkeeper::domain::cart::{OrderInput, OrderSpec};
use couponkeeper::domain::ids::{CampaignId, CouponId, OrderNo, TemplateId, UserId};
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::service::campaigns::CampaignInput;
use couponkeeper::service::{Ctx, Executed, ServiceError};

const USERS: [&str; 3] = ["u0", "u1", "u2"];
/// Both templates: stock 4, at most 2 per user.
const TOTAL_STOCK: i64 = 4;
const PER_USER_LIMIT: i64 = 2;
/// (value_cents, valid_seconds) of the two templates: coupons live 1 and 4
/// hours, so expiry happens during a run, often between deposit and final
/// payment; the second is worth more, so it can replace the first in a swap.
const TEMPLATES: [(i64, i64); 2] = [(5000, 3600), (6000, 4 * 3600)];
/// (policy, final-payment window opens after, lasts), in seconds from the
/// start: the windows open a few hours in, when early short-lived coupons
/// have expired while later or longer-lived ones are still alive, and close
/// before the longest runs end.
const CAMPAIGNS: [(&str, i64, i64); 3] = [
    ("lock", 2 * 3600, 6 * 3600),
    ("strict", 2 * 3600, 6 * 3600),
    ("swap_or_compensate", 3 * 3600, 6 * 3600),
];
/// Above the templates' 300-yuan minimum spend, and below it.
const BIG_TOTAL: i64 = 39900;
const SMALL_TOTAL: i64 = 20000;
const DEPOSIT: i64 = 10000;
/// Clock jumps: a minute, exactly the 900 s checkout lock, and up to four
/// hours; all divide the validities and window edges, so those boundaries
/// are also hit exactly.
const JUMPS: [i64; 6] = [60, 900, 1800, 3600, 2 * 3600, 4 * 3600];

/// One step. Coupons and orders are picked by index among those that exist
/// when the step runs, so every generated sequence is meaningful.
#[derive(Debug, Clone)]
enum Step {
    Claim {
        user: usize,
        template: usize,
    },
    /// `owner`: the order is placed by the coupon's owner (else by `user`).
    NormalOrder {
        user: usize,
        coupon: Option<Index>,
        owner: bool,
        big: bool,
    },
    PresaleOrder {
        user: usize,
        coupon: Option<Index>,
        owner: bool,
        campaign: usize,
    },
    /// `action` on any order, whatever its kind and status.
    Act {
        action: Action,
        order: Index,
    },
    /// The natural next action of an order that has one: pay, pay the
    /// deposit, pay the final payment, or refund once paid.
    Progress(Index),
    /// Moves the manual clock by `JUMPS[i]` seconds.
    Advance(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Pay,
    PayDeposit,
    PayFinal,
    Cancel,
    Refund,
}

impl Action {
    const ALL: [Action; 5] = [
        Action::Pay,
        Action::PayDeposit,
        Action::PayFinal,
        Action::Cancel,
        Action::Refund,
    ];

    /// What naturally happens next to an order in `status`.
    fn next_for(status: &str) -> Option<Action> {
        match status {
            "pending_payment" => Some(Action::Pay),
            "pending_deposit" => Some(Action::PayDeposit),
            "deposit_paid" => Some(Action::PayFinal),
            "paid" | "final_paid" => Some(Action::Refund),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Action::Pay => "pay",
            Action::PayDeposit => "pay_deposit",
            Action::PayFinal => "pay_final",
            Action::Cancel => "cancel",
            Action::Refund => "refund",
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    let user = 0..USERS.len();
    let coupon = proptest::option::weighted(0.85, any::<Index>());
    prop_oneof![
        4 => (user.clone(), 0..TEMPLATES.len())
            .prop_map(|(user, template)| Step::Claim { user, template }),
        2 => (user.clone(), coupon.clone(), proptest::bool::weighted(0.8), proptest::bool::weighted(0.85))
            .prop_map(|(user, coupon, owner, big)| Step::NormalOrder { user, coupon, owner, big }),
        3 => (user, coupon, proptest::bool::weighted(0.8), 0..CAMPAIGNS.len())
            .prop_map(|(user, coupon, owner, campaign)| Step::PresaleOrder { user, coupon, owner, campaign }),
        3 => (proptest::sample::select(&Action::ALL[..]), any::<Index>())
            .prop_map(|(action, order)| Step::Act { action, order }),
        7 => any::<Index>().prop_map(Step::Progress),
        4 => (0..JUMPS.len()).prop_map(Step::Advance),
    ]
}

/// What a step's result means for the test: a value, a business refusal
/// (fine), or anything else (a failure).
fn judge<T>(r: Result<Executed<T>, ServiceError>) -> Result<Result<T, String>, String> {
    match r {
        Ok(Executed::Fresh(v)) => Ok(Ok(v)),
        Ok(Executed::Replayed { status, .. }) => {
            Err(format!("unexpected idempotent replay ({status})"))
        }
        Err(ServiceError::Refused { refusal, .. }) => Ok(Err(refusal.code().to_string())),
        Err(e) => Err(format!("not a business refusal: {e:?}")),
    }
}

fn describe<T>(r: &Result<T, String>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(code) => format!("refused {code}"),
    }
}

/// The world a run has built so far, with short names for the trace.
struct World {
    ts: TestService,
    ctx: Ctx,
    templates: Vec<TemplateId>,
    campaigns: Vec<CampaignId>,
    /// (id, owner index)
    coupons: Vec<(CouponId, usize)>,
    /// (order_no, status as last returned by the service)
    orders: Vec<(OrderNo, String)>,
    next_order: u32,
    elapsed_s: i64,
    trace: Vec<String>,
}

impl World {
    async fn start() -> Result<World, String> {
        let ts = TestService::start().await;
        let ctx = ts.ctx();
        let mut templates = Vec::new();
        for (i, (value, seconds)) in TEMPLATES.iter().enumerate() {
            let input = TemplateInput {
                name: Some(format!("T{i}")),
                kind: Some("fixed".into()),
                value_cents: Some(*value),
                min_order_cents: Some(30000),
                valid_seconds: Some(*seconds),
                total_stock: Some(TOTAL_STOCK),
                per_user_limit: Some(PER_USER_LIMIT),
                categories: Some(Vec::new()),
                ..TemplateInput::default()
            };
            let t = judge(ts.service.create_template(&ctx, None, input).await)?
                .map_err(|c| format!("create template refused: {c}"))?;
            templates.push(t.id);
        }
        let mut campaigns = Vec::new();
        for (policy, opens, lasts) in CAMPAIGNS {
            let starts = epoch() + Duration::seconds(opens);
            let input = CampaignInput {
                name: Some(format!("{policy} campaign")),
                final_payment_starts_at: Some(starts.to_rfc3339()),
                final_payment_ends_at: Some((starts + Duration::seconds(lasts)).to_rfc3339()),
                policy: Some(policy.into()),
                compensation_mode: None,
            };
            let c = judge(ts.service.create_campaign(&ctx, None, input).await)?
                .map_err(|c| format!("create campaign refused: {c}"))?;
            campaigns.push(c.id);
        }
        Ok(World {
            ts,
            ctx,
            templates,
            campaigns,
            coupons: Vec::new(),
            orders: Vec::new(),
            next_order: 0,
            elapsed_s: 0,
            trace: Vec::new(),
        })
    }

    fn coupon_name(&self, i: usize) -> String {
        format!("c{i}")
    }

    /// The order picked by `ix` among all orders, or among those that still
    /// have a next step (`moving`); `None` when there is none.
    fn order(&self, ix: &Index, moving: bool) -> Option<usize> {
        let picks: Vec<usize> = (0..self.orders.len())
            .filter(|&i| !moving || Action::next_for(&self.orders[i].1).is_some())
            .collect();
        (!picks.is_empty()).then(|| picks[ix.index(picks.len())])
    }

    /// The coupon picked for a new order and who places it.
    fn order_coupon(
        &self,
        user: usize,
        coupon: &Option<Index>,
        owner: bool,
    ) -> (usize, Option<usize>) {
        match coupon {
            Some(ix) if !self.coupons.is_empty() => {
                let i = ix.index(self.coupons.len());
                let who = if owner { self.coupons[i].1 } else { user };
                (who, Some(i))
            }
            _ => (user, None),
        }
    }

    fn new_order_no(&mut self) -> OrderNo {
        self.next_order += 1;
        order(&format!("O{}", self.next_order))
    }

    /// Runs one step; `Err` only for results that are not business refusals.
    async fn run(&mut self, step: &Step) -> Result<(), String> {
        let svc = self.ts.service.clone();
        let ctx = self.ctx.clone();
        let line = match step {
            Step::Claim { user, template } => {
                let uid = UserId::parse(USERS[*user]).map_err(|e| format!("{e:?}"))?;
                let r = judge(
                    svc.claim(&ctx, None, uid, self.templates[*template].clone())
                        .await,
                )?;
                let what = match &r {
                    Ok(c) => {
                        self.coupons.push((c.id.clone(), *user));
                        format!("ok -> {}", self.coupon_name(self.coupons.len() - 1))
                    }
                    Err(_) => describe(&r),
                };
                format!("claim {} T{template}: {what}", USERS[*user])
            }
            Step::NormalOrder {
                user,
                coupon,
                owner,
                big,
            } => {
                let (who, ci) = self.order_coupon(*user, coupon, *owner);
                let no = self.new_order_no();
                let total = if *big { BIG_TOTAL } else { SMALL_TOTAL };
                let input = OrderInput {
                    order_no: Some(no.to_string()),
                    user_id: Some(USERS[who].into()),
                    kind: Some("normal".into()),
                    category: Some("phones".into()),
                    total_cents: Some(total),
                    lines: None,
                    coupon_id: ci.map(|i| self.coupons[i].0.to_string()),
                    coupon_ids: None,
                    ..OrderInput::default()
                };
                let r = judge(
                    svc.create_order(
                        &ctx,
                        None,
                        OrderSpec::parse(input).expect("a well-formed order"),
                    )
                    .await,
                )?;
                if let Ok(o) = &r {
                    self.orders.push((no.clone(), o.status.to_string()));
                }
                let cname = ci.map_or("-".to_string(), |i| self.coupon_name(i));
                format!(
                    "normal order {no} by {} total {total} coupon {cname}: {}",
                    USERS[who],
                    describe(&r)
                )
            }
            Step::PresaleOrder {
                user,
                coupon,
                owner,
                campaign,
            } => {
                let (who, ci) = self.order_coupon(*user, coupon, *owner);
                let no = self.new_order_no();
                let input = OrderInput {
                    order_no: Some(no.to_string()),
                    user_id: Some(USERS[who].into()),
                    kind: Some("presale".into()),
                    category: Some("phones".into()),
                    total_cents: Some(BIG_TOTAL),
                    lines: None,
                    coupon_id: ci.map(|i| self.coupons[i].0.to_string()),
                    coupon_ids: None,
                    campaign_id: Some(self.campaigns[*campaign].to_string()),
                    deposit_cents: Some(DEPOSIT),
                };
                let r = judge(
                    svc.create_order(
                        &ctx,
                        None,
                        OrderSpec::parse(input).expect("a well-formed order"),
                    )
                    .await,
                )?;
                if let Ok(o) = &r {
                    self.orders.push((no.clone(), o.status.to_string()));
                }
                let cname = ci.map_or("-".to_string(), |i| self.coupon_name(i));
                format!(
                    "presale order {no} by {} on {} coupon {cname}: {}",
                    USERS[who],
                    CAMPAIGNS[*campaign].0,
                    describe(&r)
                )
            }
            Step::Act { order: ix, .. } | Step::Progress(ix) => {
                let moving = matches!(step, Step::Progress(_));
                let Some(oi) = self.order(ix, moving) else {
                    self.trace
                        .push(format!("{step:?}: no order to act on, skipped"));
                    return Ok(());
                };
                let no = self.orders[oi].0.clone();
                let action = match step {
                    Step::Act { action, .. } => *action,
                    _ => Action::next_for(&self.orders[oi].1).unwrap_or(Action::Refund),
                };
                let r = match action {
                    Action::Pay => svc.pay(&ctx, None, no.clone()).await,
                    Action::PayDeposit => svc.pay_deposit(&ctx, None, no.clone()).await,
                    Action::PayFinal => svc.pay_final(&ctx, None, no.clone()).await,
                    Action::Cancel => svc.cancel(&ctx, None, no.clone(), None).await,
                    Action::Refund => {
                        let reason = Some("customer changed mind".to_string());
                        svc.refund(&ctx, None, no.clone(), reason).await
                    }
                };
                let r = judge(r)?;
                let detail = match &r {
                    Ok(o) => {
                        self.orders[oi].1 = o.status.to_string();
                        let mut d = format!("ok -> {} lock {}", o.status, o.coupon_lock_status);
                        if o.replaced_coupon_id.is_some() {
                            d.push_str(" (swapped)");
                        }
                        if o.compensation_cents.get() > 0 {
                            d.push_str(&format!(" (compensated {})", o.compensation_cents.get()));
                        }
                        d
                    }
                    Err(_) => describe(&r),
                };
                format!("{} {no}: {detail}", action.name())
            }
            Step::Advance(j) => {
                let s = JUMPS[*j];
                self.ts.clock.advance(Duration::seconds(s));
                self.elapsed_s += s;
                format!("advance {s}s (now start+{}s)", self.elapsed_s)
            }
        };
        self.trace.push(line);
        Ok(())
    }
}

async fn rows<T>(pool: &AnyPool, sql: &str) -> Result<Vec<T>, String>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
{
    sqlx::query_as::<_, T>(sql)
        .fetch_all(pool)
        .await
        .map_err(|e| format!("invariant query failed: {e}\n{sql}"))
}

/// Fails with `what` and the offending rows when `sql` returns any.
async fn none_of(pool: &AnyPool, what: &str, sql: &str) -> Result<(), String> {
    let bad: Vec<(String, Option<String>)> = rows(pool, sql).await?;
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {bad:?}"))
    }
}

/// The fields of an event row that link it to the one before.
#[derive(sqlx::FromRow)]
struct EventLink {
    id: i64,
    subject: String,
    coupon_id: Option<String>,
    order_no: Option<String>,
    from_status: Option<String>,
    to_status: String,
}

const LIVE: &str = "('pending_payment', 'pending_deposit', 'deposit_paid')";

/// Every invariant, read straight from the tables.
async fn check(pool: &AnyPool) -> Result<(), String> {
    // No coupon is used (or locked) by two orders.
    none_of(
        pool,
        "a coupon is used by two orders",
        "SELECT coupon_id, CAST(COUNT(*) AS TEXT) FROM orders
         WHERE coupon_lock_status = 'used' AND coupon_id IS NOT NULL
         GROUP BY coupon_id HAVING COUNT(*) > 1",
    )
    .await?;
    none_of(
        pool,
        "a coupon is locked by two orders",
        "SELECT coupon_id, CAST(COUNT(*) AS TEXT) FROM orders
         WHERE coupon_lock_status = 'locked' AND coupon_id IS NOT NULL
         GROUP BY coupon_id HAVING COUNT(*) > 1",
    )
    .await?;
    // A used coupon belongs to a paid order that names it, and back.
    none_of(
        pool,
        "a used coupon has no paid order naming it",
        "SELECT c.id, c.order_no FROM coupons c WHERE c.status = 'used' AND NOT EXISTS (
             SELECT 1 FROM orders o WHERE o.order_no = c.order_no AND o.coupon_id = c.id
             AND o.coupon_lock_status = 'used' AND o.status IN ('paid', 'final_paid'))",
    )
    .await?;
    none_of(
        pool,
        "an order says its coupon is used but the coupon is not used by it",
        "SELECT o.order_no, o.coupon_id FROM orders o WHERE o.coupon_lock_status = 'used' AND NOT EXISTS (
             SELECT 1 FROM coupons c WHERE c.id = o.coupon_id AND c.status = 'used' AND c.order_no = o.order_no)",
    )
    .await?;
    // A locked coupon belongs to one live order that names it, and back.
    none_of(
        pool,
        "a locked coupon has no live order naming it",
        &format!(
            "SELECT c.id, c.order_no FROM coupons c WHERE c.status = 'locked' AND NOT EXISTS (
                 SELECT 1 FROM orders o WHERE o.order_no = c.order_no AND o.coupon_id = c.id
                 AND o.coupon_lock_status = 'locked' AND o.status IN {LIVE})"
        ),
    )
    .await?;
    none_of(
        pool,
        "an order says its coupon is locked but the coupon is not locked to it",
        "SELECT o.order_no, o.coupon_id FROM orders o WHERE o.coupon_lock_status = 'locked' AND NOT EXISTS (
             SELECT 1 FROM coupons c WHERE c.id = o.coupon_id AND c.status = 'locked' AND c.order_no = o.order_no)",
    )
    .await?;
    none_of(
        pool,
        "a coupon that is neither locked nor used is still bound to an order",
        "SELECT id, order_no FROM coupons WHERE order_no IS NOT NULL AND status NOT IN ('locked', 'used')",
    )
    .await?;

    // Stock: never more than total, and exactly one unit per coupon.
    let stock: Vec<(String, Option<i64>, i64, i64)> = rows(
        pool,
        "SELECT t.id, t.total_stock,
             (SELECT CAST(COALESCE(SUM(s.claimed), 0) AS BIGINT) FROM template_stock_shards s WHERE s.template_id = t.id),
             (SELECT CAST(COUNT(*) AS BIGINT) FROM coupons c WHERE c.template_id = t.id)
         FROM templates t",
    )
    .await?;
    for (id, total, claimed, coupons) in &stock {
        if total.is_some_and(|t| *claimed > t) || claimed != coupons {
            return Err(format!(
                "template {id}: total_stock {total:?}, shards claimed {claimed}, coupons {coupons}"
            ));
        }
    }
    // Per-user limit, and the quota counter matches the coupons.
    let quota: Vec<(String, String, i64, i64)> = rows(
        pool,
        "SELECT q.template_id, q.user_id, q.claimed,
             (SELECT CAST(COUNT(*) AS BIGINT) FROM coupons c WHERE c.template_id = q.template_id AND c.user_id = q.user_id)
         FROM template_user_claims q",
    )
    .await?;
    for (tid, user, counted, coupons) in &quota {
        if *counted > PER_USER_LIMIT || counted != coupons {
            return Err(format!(
                "template {tid} user {user}: quota counter {counted}, coupons {coupons}, limit {PER_USER_LIMIT}"
            ));
        }
    }

    // Every state change has its event: the latest event of each coupon and
    // order names its stored status...
    let latest: Vec<(String, String, String, Option<String>)> = rows(
        pool,
        "SELECT 'coupon', c.id, c.status, (SELECT e.to_status FROM events e
             WHERE e.subject = 'coupon' AND e.coupon_id = c.id ORDER BY e.id DESC LIMIT 1) FROM coupons c
         UNION ALL
         SELECT 'order', o.order_no, o.status, (SELECT e.to_status FROM events e
             WHERE e.subject = 'order' AND e.order_no = o.order_no ORDER BY e.id DESC LIMIT 1) FROM orders o",
    )
    .await?;
    for (subject, key, status, last) in &latest {
        if last.as_deref() != Some(status.as_str()) {
            return Err(format!(
                "{subject} {key} is {status} but its latest event says {last:?}"
            ));
        }
    }
    // ...and each subject's events form one unbroken chain from its creation.
    let events: Vec<EventLink> = rows(
        pool,
        "SELECT id, subject, coupon_id, order_no, from_status, to_status FROM events ORDER BY id",
    )
    .await?;
    let mut last_to: HashMap<(String, String), String> = HashMap::new();
    for e in events {
        let key = if e.subject == "coupon" {
            e.coupon_id
        } else {
            e.order_no
        };
        let key = (e.subject, key.unwrap_or_default());
        let prev = last_to.insert(key.clone(), e.to_status);
        if prev != e.from_status {
            return Err(format!(
                "event {} of {key:?} starts from {:?} but the previous event ended in {prev:?}",
                e.id, e.from_status
            ));
        }
    }
    Ok(())
}

async fn run_sequence(steps: Vec<Step>) -> Result<(), String> {
    let mut world = World::start().await?;
    check(world.ts.db.db.pool())
        .await
        .map_err(|e| format!("before any step: {e}"))?;
    for (i, step) in steps.iter().enumerate() {
        let outcome = match world.run(step).await {
            Ok(()) => check(world.ts.db.db.pool()).await,
            Err(e) => Err(format!("{step:?}: {e}")),
        };
        if let Err(e) = outcome {
            return Err(format!(
                "after step {i}: {e}\ntrace:\n  {}",
                world.trace.join("\n  ")
            ));
        }
    }
    Ok(())
}

/// 16 cases by default (each one a fresh database); `PROPTEST_CASES=N`
/// runs more.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 256,
        // Failures are reported with their shrunk trace; no regression
        // files are written next to the tests.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_sequence_of_operations_keeps_coupons_orders_stock_and_events_consistent(
        steps in proptest::collection::vec(step(), 1..=40)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for this case");
        rt.block_on(run_sequence(steps)).map_err(TestCaseError::fail)?;
    }
}

/// A consistent world to break: u0 holds c0 (locked to the unpaid normal
/// order O1), c1 (used by the paid order O2) and c2 (available); O3 is a
/// paid order without coupon.
async fn sample_world() -> (World, [CouponId; 3]) {
    let w = World::start().await.expect("the world starts");
    let svc = w.ts.service.clone();
    let mut ids = Vec::new();
    for template in [0, 0, 1] {
        let uid = UserId::parse("u0").expect("valid user id");
        let c = judge(
            svc.claim(&w.ctx, None, uid, w.templates[template].clone())
                .await,
        )
        .expect("claim runs")
        .expect("claim succeeds");
        ids.push(c.id);
    }
    for (no, coupon, pay) in [
        ("O1", Some(&ids[0]), false),
        ("O2", Some(&ids[1]), true),
        ("O3", None, true),
    ] {
        let input = OrderInput {
            order_no: Some(no.into()),
            user_id: Some("u0".into()),
            kind: Some("normal".into()),
            category: Some("phones".into()),
            total_cents: Some(BIG_TOTAL),
            lines: None,
            coupon_id: coupon.map(|c| c.to_string()),
            coupon_ids: None,
            ..OrderInput::default()
        };
        judge(
            svc.create_order(
                &w.ctx,
                None,
                OrderSpec::parse(input).expect("a well-formed order"),
            )
            .await,
        )
        .expect("create order runs")
        .expect("order is created");
        if pay {
            judge(svc.pay(&w.ctx, None, order(no)).await)
                .expect("pay runs")
                .expect("order is paid");
        }
    }
    let [c0, c1, c2]: [CouponId; 3] = ids.try_into().expect("three coupons");
    (w, [c0, c1, c2])
}

#[tokio::test]
async fn the_checker_reports_each_kind_of_broken_invariant() {
    let corruptions = [
        (
            "UPDATE orders SET coupon_id = '{c1}', coupon_lock_status = 'used' WHERE order_no = 'O3'",
            "a coupon is used by two orders",
        ),
        (
            "UPDATE orders SET coupon_id = '{c0}', coupon_lock_status = 'locked' WHERE order_no = 'O3'",
            "a coupon is locked by two orders",
        ),
        (
            "UPDATE coupons SET status = 'used' WHERE id = '{c2}'",
            "a used coupon has no paid order naming it",
        ),
        (
            "UPDATE orders SET coupon_id = '{c2}', coupon_lock_status = 'used' WHERE order_no = 'O3'",
            "an order says its coupon is used but the coupon is not used by it",
        ),
        (
            "UPDATE orders SET status = 'closed' WHERE order_no = 'O1'",
            "a locked coupon has no live order naming it",
        ),
        (
            "UPDATE orders SET coupon_id = '{c2}', coupon_lock_status = 'locked' WHERE order_no = 'O3'",
            "an order says its coupon is locked but the coupon is not locked to it",
        ),
        (
            "UPDATE coupons SET order_no = 'O1' WHERE id = '{c2}'",
            "a coupon that is neither locked nor used is still bound to an order",
        ),
        (
            "UPDATE template_stock_shards SET claimed = 0 WHERE template_id = '{t0}'",
            "shards claimed 0, coupons 2",
        ),
        (
            "UPDATE template_user_claims SET claimed = 1 WHERE template_id = '{t0}'",
            "quota counter 1, coupons 2",
        ),
        (
            "UPDATE coupons SET status = 'expired' WHERE id = '{c2}'",
            "is expired but its latest event says Some(\"available\")",
        ),
        (
            "UPDATE orders SET status = 'refunded' WHERE order_no = 'O3'",
            "order O3 is refunded but its latest event says Some(\"paid\")",
        ),
        (
            "DELETE FROM events WHERE subject = 'coupon' AND coupon_id = '{c1}' AND from_status IS NULL",
            "starts from Some(\"available\") but the previous event ended in None",
        ),
    ];
    for (sql, expected) in corruptions {
        let (w, [c0, c1, c2]) = sample_world().await;
        let pool = w.ts.db.db.pool();
        check(pool).await.expect("the sample world is consistent");
        let sql = sql
            .replace("{c0}", &c0)
            .replace("{c1}", &c1)
            .replace("{c2}", &c2)
            .replace("{t0}", &w.templates[0]);
        let changed = sqlx::query(&sql)
            .execute(pool)
            .await
            .expect("the corruption applies")
            .rows_affected();
        assert!(changed > 0, "{sql} changed nothing");
        let found = check(pool)
            .await
            .expect_err(&format!("the checker misses: {sql}"));
        assert!(
            found.contains(expected),
            "{sql}\nexpected {expected:?}\ngot {found}"
        );
    }
}
