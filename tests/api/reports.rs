//! Reports (报表): `GET /templates/{id}/report`, `GET
//! /presale-campaigns/{id}/report` and the counters behind them
//! (`template_counts`, `campaign_counts`, migration 0026), on the store
//! the harness picks.
//!
//! The property test runs random mixes of claims, normal and presale
//! orders, payments, final payments, cancels, refunds, invalidations,
//! compensation and clock moves followed by the expiry jobs, and after
//! each case requires the counters of its templates and campaign to equal
//! a full recount from the coupons' events (and the archive), the orders'
//! discounts and the compensation ledger, day by day and in total, and
//! the stored status counts to equal a `GROUP BY status` of the coupons.
//! `REPORTS_SEED`, `REPORTS_CASES` (default 12), `REPORTS_STEPS` (default
//! 30) rerun or lengthen it.

use std::collections::BTreeMap;

use couponkeeper::domain::coupon::CouponStatus;
use couponkeeper::domain::report::{ALL_DAYS, Counts, campaign_delta, day_number, template_delta};
use couponkeeper::domain::time::from_ms;
use couponkeeper::store::counters::{self, Subject};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{RngSeed, TestCaseError, TestRunner};
use serde_json::{Value, json};
use sqlx::Row;

use crate::common::{TestApp, normal_order, presale_order, spawn_app};

fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

// ---------------------------------------------------------------- recount

/// Every counter row of `key`, shards summed: day -> counts.
async fn stored(app: &TestApp, s: Subject, key: &str) -> BTreeMap<i64, Counts> {
    let mut conn = app.db.db.pool().acquire().await.expect("connection");
    let mut out: BTreeMap<i64, Counts> = counters::days(&mut conn, s, key, 0, i64::from(i32::MAX))
        .await
        .expect("days")
        .into_iter()
        .filter(|(_, c)| *c != Counts::default())
        .collect();
    let all = counters::all_days(&mut conn, s, key)
        .await
        .expect("all days");
    if all != Counts::default() {
        out.insert(ALL_DAYS, all);
    }
    out
}

fn status(raw: &str) -> CouponStatus {
    CouponStatus::parse(raw).unwrap_or_else(|| panic!("a stored status: {raw}"))
}

/// The counters recomputed from the coupon events (hot and archived), the
/// orders' discounts and the compensation ledger.
async fn recount(app: &TestApp, s: Subject, key: &str) -> BTreeMap<i64, Counts> {
    let pool = app.db.db.pool();
    let tz = app.service.settings().reminders.tz;
    let day = |at: i64| day_number(tz, from_ms(at));
    let orders: BTreeMap<String, (i64, Option<String>, Option<String>)> = sqlx::query(
        "SELECT order_no, coupon_discount_cents, campaign_id, COALESCE(replaced_coupon_id, coupon_id) FROM orders",
    )
    .fetch_all(pool)
    .await
    .expect("orders")
    .iter()
    .map(|r| {
        (
            r.get::<String, _>(0),
            (
                r.get::<Option<i64>, _>(1).unwrap_or(0),
                r.get::<Option<String>, _>(2),
                r.get::<Option<String>, _>(3),
            ),
        )
    })
    .collect();
    let templates: BTreeMap<String, Option<String>> = sqlx::query(
        "SELECT id, template_id FROM coupons UNION ALL SELECT id, template_id FROM coupons_archive",
    )
    .fetch_all(pool)
    .await
    .expect("coupons")
    .iter()
    .map(|r| (r.get::<String, _>(0), r.get::<Option<String>, _>(1)))
    .collect();
    let events = sqlx::query(
        "SELECT id, coupon_id, order_no, from_status, to_status, at FROM events WHERE subject = 'coupon'
         UNION ALL SELECT id, coupon_id, order_no, from_status, to_status, at FROM events_archive WHERE subject = 'coupon'
         ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .expect("events");
    let mut out: BTreeMap<i64, Counts> = BTreeMap::new();
    let mut add = |d: i64, c: &Counts| {
        out.entry(d).or_default().add(c);
        out.entry(ALL_DAYS).or_default().add(c);
    };
    for e in &events {
        let coupon: String = e.get(1);
        let order_no: Option<String> = e.get(2);
        let from: Option<String> = e.get(3);
        let to: String = e.get(4);
        let at: i64 = e.get(5);
        let discount = order_no
            .as_ref()
            .and_then(|o| orders.get(o))
            .map_or(0, |o| o.0);
        let delta = match s {
            Subject::Template => {
                if templates.get(&coupon).cloned().flatten().as_deref() != Some(key) {
                    continue;
                }
                Some(template_delta(from.as_deref().map(status), status(&to)))
            }
            Subject::Campaign => {
                let Some(from) = from.as_deref() else {
                    continue;
                };
                let campaign = order_no
                    .as_ref()
                    .and_then(|o| orders.get(o))
                    .and_then(|o| o.1.clone());
                if campaign.as_deref() != Some(key) {
                    continue;
                }
                campaign_delta(status(from), status(&to))
            }
        };
        if let Some((mut d, sign)) = delta {
            d.discount_cents = sign * discount;
            add(day(at), &d);
        }
    }
    let ledger =
        sqlx::query("SELECT order_no, campaign_id, amount_cents, at FROM compensation_ledger")
            .fetch_all(pool)
            .await
            .expect("ledger");
    for l in &ledger {
        let order_no: Option<String> = l.get(0);
        let campaign: Option<String> = l.get(1);
        let amount: i64 = l.get(2);
        let at: i64 = l.get(3);
        let ours = match s {
            Subject::Campaign => campaign.as_deref() == Some(key),
            Subject::Template => {
                order_no
                    .as_ref()
                    .and_then(|o| orders.get(o))
                    .and_then(|o| o.2.clone())
                    .and_then(|c| templates.get(&c).cloned().flatten())
                    .as_deref()
                    == Some(key)
            }
        };
        if ours {
            add(
                day(at),
                &Counts {
                    compensation_cents: amount,
                    ..Counts::default()
                },
            );
        }
    }
    // The discount of refunded units, per coupon and refund.
    let refunded = sqlx::query(
        "SELECT rc.coupon_id, o.campaign_id, rc.discount_cents, r.at FROM order_refund_coupons AS rc
         JOIN order_refunds AS r ON r.order_no = rc.order_no AND r.refund_id = rc.refund_id
         JOIN orders AS o ON o.order_no = rc.order_no",
    )
    .fetch_all(pool)
    .await
    .expect("refunds");
    for r in &refunded {
        let coupon: String = r.get(0);
        let campaign: Option<String> = r.get(1);
        let cents: i64 = r.get(2);
        let at: i64 = r.get(3);
        let ours = match s {
            Subject::Campaign => campaign.as_deref() == Some(key),
            Subject::Template => templates.get(&coupon).cloned().flatten().as_deref() == Some(key),
        };
        if ours && cents != 0 {
            add(
                day(at),
                &Counts {
                    refunded_discount_cents: cents,
                    ..Counts::default()
                },
            );
        }
    }
    out.retain(|_, c| *c != Counts::default());
    out
}

/// The stored status counts of a template, straight from the coupons.
async fn status_counts(app: &TestApp, template_id: &str) -> [i64; 5] {
    let rows = sqlx::query(
        "SELECT status, CAST(COUNT(*) AS BIGINT) FROM (SELECT status FROM coupons WHERE template_id = $1
           UNION ALL SELECT status FROM coupons_archive WHERE template_id = $1) AS c GROUP BY status",
    )
    .bind(template_id)
    .fetch_all(app.db.db.pool())
    .await
    .expect("status counts");
    let mut out = [0; 5];
    for r in &rows {
        let i = match status(&r.get::<String, _>(0)) {
            CouponStatus::Available => 0,
            CouponStatus::Locked => 1,
            CouponStatus::Used => 2,
            CouponStatus::Expired => 3,
            CouponStatus::Invalidated => 4,
        };
        out[i] = r.get(1);
    }
    out
}

async fn check_counters(app: &TestApp, templates: &[String], campaign: &str) -> Result<(), String> {
    for t in templates {
        let (have, want) = (
            stored(app, Subject::Template, t).await,
            recount(app, Subject::Template, t).await,
        );
        if have != want {
            return Err(format!(
                "template {t}: counters {have:#?}\n  recount {want:#?}"
            ));
        }
        let all = have.get(&ALL_DAYS).copied().unwrap_or_default();
        let statuses = [
            all.status_available,
            all.status_locked,
            all.status_used,
            all.status_expired,
            all.status_invalidated,
        ];
        let counted = status_counts(app, t).await;
        if statuses != counted {
            return Err(format!(
                "template {t}: stored status counters {statuses:?}, coupons {counted:?}"
            ));
        }
    }
    let (have, want) = (
        stored(app, Subject::Campaign, campaign).await,
        recount(app, Subject::Campaign, campaign).await,
    );
    if have != want {
        return Err(format!(
            "campaign {campaign}: counters {have:#?}\n  recount {want:#?}"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- the property

#[derive(Debug, Clone)]
enum Step {
    Claim(usize, usize),
    Normal(usize),
    Presale(usize),
    Pay(Index),
    Final(Index),
    Cancel(Index),
    Refund(Index),
    Invalidate(Index),
    Compensate(usize, Option<Index>),
    Advance(i64),
    /// The counter-fold job runs: the deltas move into the counters.
    Fold,
}

fn step() -> impl Strategy<Value = Step> {
    let user = 0..3usize;
    prop_oneof![
        4 => (user.clone(), 0..2usize).prop_map(|(u, t)| Step::Claim(u, t)),
        2 => user.clone().prop_map(Step::Normal),
        2 => user.clone().prop_map(Step::Presale),
        2 => any::<Index>().prop_map(Step::Pay),
        2 => any::<Index>().prop_map(Step::Final),
        1 => any::<Index>().prop_map(Step::Cancel),
        1 => any::<Index>().prop_map(Step::Refund),
        1 => any::<Index>().prop_map(Step::Invalidate),
        1 => (user, proptest::option::of(any::<Index>())).prop_map(|(u, o)| Step::Compensate(u, o)),
        2 => prop::sample::select(vec![60i64, 900, 1800, 3600, 4 * 3600, 86_400]).prop_map(Step::Advance),
        2 => Just(Step::Fold),
    ]
}

const USERS: [&str; 3] = ["ru0", "ru1", "ru2"];

struct Case {
    n: u32,
    templates: Vec<String>,
    campaign: String,
    coupons: Vec<String>,
    normal: Vec<String>,
    presale: Vec<String>,
    next_order: usize,
}

impl Case {
    fn order_no(&mut self, prefix: &str) -> String {
        self.next_order += 1;
        format!("r{}-{prefix}{}", self.n, self.next_order)
    }

    fn any_order(&self, i: &Index) -> Option<String> {
        let all: Vec<&String> = self.normal.iter().chain(self.presale.iter()).collect();
        (!all.is_empty()).then(|| all[i.index(all.len())].clone())
    }
}

/// The user's first stored-available coupon of this case's templates.
async fn available_coupon(app: &TestApp, case: &Case, user: &str) -> Option<String> {
    let r = app
        .get(&format!("/api/v1/users/{user}/coupons?status=available"))
        .await;
    r.body["coupons"].as_array().and_then(|cs| {
        cs.iter()
            .find(|c| {
                c["template_id"]
                    .as_str()
                    .is_some_and(|t| case.templates.iter().any(|x| x == t))
            })
            .and_then(|c| c["id"].as_str().map(str::to_string))
    })
}

async fn expire_all(app: &TestApp) {
    for _ in 0..20 {
        let done = app
            .service
            .expire_due_batch("job:test", 500)
            .await
            .expect("expiry batch");
        if done.count == 0 {
            break;
        }
    }
}

async fn run_case(app: &TestApp, n: u32, policy: &str, steps: Vec<Step>) -> Result<(), String> {
    let short = app
        .template(json!({"name": format!("报表短券{n}"), "valid_seconds": 3600, "total_stock": 50}))
        .await;
    let long = app
        .template(json!({"name": format!("报表长券{n}"), "total_stock": 50}))
        .await;
    let campaign = app.campaign(policy, 2 * 3600, 86_400).await;
    let mut case = Case {
        n,
        templates: vec![
            short["id"].as_str().unwrap_or_default().to_string(),
            long["id"].as_str().unwrap_or_default().to_string(),
        ],
        campaign: campaign["id"].as_str().unwrap_or_default().to_string(),
        coupons: Vec::new(),
        normal: Vec::new(),
        presale: Vec::new(),
        next_order: 0,
    };
    for s in steps {
        match s {
            Step::Claim(u, t) => {
                let r = app
                    .post(
                        &format!("/api/v1/users/{}/coupons", USERS[u]),
                        json!({"template_id": case.templates[t]}),
                    )
                    .await;
                if r.status == 201 {
                    case.coupons.push(r.id());
                }
            }
            Step::Normal(u) => {
                let coupon = available_coupon(app, &case, USERS[u]).await;
                let no = case.order_no("n");
                let r = app
                    .order(normal_order(&no, USERS[u], coupon.as_deref(), 39_900))
                    .await;
                if r.status == 201 {
                    case.normal.push(no);
                }
            }
            Step::Presale(u) => {
                let coupon = available_coupon(app, &case, USERS[u]).await;
                let no = case.order_no("p");
                let r = app
                    .order(presale_order(
                        &no,
                        USERS[u],
                        coupon.as_deref(),
                        &case.campaign,
                    ))
                    .await;
                if r.status == 201 {
                    app.post(&format!("/api/v1/orders/{no}/deposit-payment"), json!({}))
                        .await;
                    case.presale.push(no);
                }
            }
            Step::Pay(i) => {
                if !case.normal.is_empty() {
                    let no = case.normal[i.index(case.normal.len())].clone();
                    app.post(&format!("/api/v1/orders/{no}/pay"), json!({}))
                        .await;
                }
            }
            Step::Final(i) => {
                if !case.presale.is_empty() {
                    let no = case.presale[i.index(case.presale.len())].clone();
                    app.post(&format!("/api/v1/orders/{no}/final-payment"), json!({}))
                        .await;
                }
            }
            Step::Cancel(i) => {
                if let Some(no) = case.any_order(&i) {
                    app.post(&format!("/api/v1/orders/{no}/cancel"), json!({}))
                        .await;
                }
            }
            Step::Refund(i) => {
                if let Some(no) = case.any_order(&i) {
                    app.post(
                        &format!("/api/v1/orders/{no}/refund"),
                        json!({"reason": "报表测试退款"}),
                    )
                    .await;
                }
            }
            Step::Invalidate(i) => {
                if !case.coupons.is_empty() {
                    let id = case.coupons[i.index(case.coupons.len())].clone();
                    app.post(
                        &format!("/api/v1/coupons/{id}/invalidate"),
                        json!({"reason": "报表测试作废"}),
                    )
                    .await;
                }
            }
            Step::Compensate(u, order) => {
                let order_no = order.and_then(|i| case.any_order(&i));
                // Compensation for an order goes to the order's customer.
                let user = match &order_no {
                    Some(no) => app.order_view(no).await["user_id"]
                        .as_str()
                        .unwrap_or(USERS[u])
                        .to_string(),
                    None => USERS[u].to_string(),
                };
                app.post(
                    &format!("/api/v1/users/{user}/compensation-coupons"),
                    json!({"value_cents": 1000, "valid_seconds": 86_400, "reason": "报表测试补偿", "order_no": order_no}),
                )
                .await;
            }
            Step::Advance(secs) => {
                app.advance(secs);
                expire_all(app).await;
            }
            Step::Fold => {
                app.service.fold_counters(5000).await.expect("the fold");
            }
        }
    }
    // Into the final-payment window: pay what can be paid, so presale
    // coupons meet their policies; then past every end, with the jobs.
    app.advance(2 * 3600 + 60);
    expire_all(app).await;
    for no in case.presale.clone() {
        app.post(&format!("/api/v1/orders/{no}/final-payment"), json!({}))
            .await;
    }
    check_counters(app, &case.templates, &case.campaign).await
}

#[test]
fn the_counters_equal_a_recount_after_any_mix_of_claims_orders_payments_refunds_expiries_invalidations_and_compensation()
 {
    let seed: u64 = env_number("REPORTS_SEED").unwrap_or_else(rand::random);
    let cases: u32 = env_number("REPORTS_CASES").unwrap_or(12);
    let max_steps: usize = env_number("REPORTS_STEPS").unwrap_or(30);
    eprintln!(
        "reports property: seed {seed} (REPORTS_SEED), {cases} cases of up to {max_steps} steps"
    );
    let config = ProptestConfig {
        cases,
        max_shrink_iters: 32,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let app = rt.block_on(spawn_app());
    let case = std::sync::atomic::AtomicU32::new(0);
    let policies = ["lock", "strict", "swap_or_compensate"];
    let result = runner.run(
        &proptest::collection::vec(step(), 1..=max_steps.max(1)),
        |steps| {
            let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let policy = policies[n as usize % policies.len()];
            rt.block_on(run_case(&app, n, policy, steps))
                .map_err(TestCaseError::fail)
        },
    );
    if let Err(e) = result {
        panic!("seed {seed}: {e}");
    }
}

// ---------------------------------------------------------------- the API

fn day_of<'a>(r: &'a Value, day: &str) -> &'a Value {
    r["days"]
        .as_array()
        .and_then(|ds| ds.iter().find(|d| d["day"] == day))
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn a_template_report_counts_each_change_on_its_business_day_with_the_discount_and_what_is_left()
 {
    let app = spawn_app().await;
    let t = app.template(json!({"valid_seconds": 2 * 86_400})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let c1 = app.claim("u1", &tid).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let c2 = app.claim("u2", &tid).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let _c3 = app.claim("u3", &tid).await;
    let r = app.order(normal_order("R1", "u1", Some(&c1), 39_900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/R1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let today = app
        .service
        .settings()
        .reminders
        .tz
        .local(app.now())
        .date()
        .format("%Y-%m-%d")
        .to_string();
    // The next business day: c2 is invalidated; two days on, c3 expires.
    app.advance(86_400);
    let r = app
        .post(
            &format!("/api/v1/coupons/{c2}/invalidate"),
            json!({"reason": "发错了"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(2 * 86_400);
    // Before the drain: the one left reads expired, so none is available.
    let r = app.get(&format!("/api/v1/templates/{tid}/report")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["totals"]["available"], 0, "{}", r.text);
    expire_all(&app).await;
    let r = app.get(&format!("/api/v1/templates/{tid}/report")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let days = r.body["days"].as_array().cloned().unwrap_or_default();
    assert_eq!(days.len(), 30, "the default range is the last 30 days");
    let first = day_of(&r.body, &today);
    assert_eq!(first["claimed"], 3, "{first}");
    assert_eq!(first["used"], 1);
    assert_eq!(first["discount_cents"], 5000);
    let totals = &r.body["totals"];
    assert_eq!(totals["claimed"], 3);
    assert_eq!(totals["used"], 1);
    assert_eq!(totals["invalidated"], 1);
    assert_eq!(totals["expired"], 1);
    assert_eq!(totals["available"], 0);
    assert_eq!(totals["discount_cents"], 5000);
    assert_eq!(totals["redemption_rate"], 0.3333);
    assert_eq!(r.body["name"], "满300减50");
    // A refund gives the use back, on the day of the refund.
    let r = app
        .post("/api/v1/orders/R1/refund", json!({"reason": "不想要了"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .get(&format!(
            "/api/v1/templates/{tid}/report?from={today}&to={today}"
        ))
        .await;
    assert_eq!(r.body["days"].as_array().map(Vec::len), Some(1));
    let r = app.get(&format!("/api/v1/templates/{tid}/report")).await;
    assert_eq!(r.body["totals"]["returned"], 1, "{}", r.text);
    assert_eq!(r.body["totals"]["discount_cents"], 0);
    assert_eq!(r.body["totals"]["redemption_rate"], 0.0);
}

#[tokio::test]
async fn a_campaign_report_counts_the_coupons_locked_to_its_orders_and_their_final_payments() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let k = app.campaign("lock", 3600, 86_400).await;
    let kid = k["id"].as_str().unwrap_or_default().to_string();
    let c1 = app.claim("u1", &tid).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let r = app.order(presale_order("P1", "u1", Some(&c1), &kid)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .get(&format!("/api/v1/presale-campaigns/{kid}/report"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["totals"]["claimed"], 1);
    assert_eq!(
        r.body["totals"]["available"], 1,
        "awaiting its final payment"
    );
    app.advance(3600 + 60);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .get(&format!("/api/v1/presale-campaigns/{kid}/report"))
        .await;
    assert_eq!(r.body["totals"]["used"], 1, "{}", r.text);
    assert_eq!(r.body["totals"]["available"], 0);
    assert_eq!(r.body["totals"]["discount_cents"], 5000);
    assert_eq!(r.body["totals"]["redemption_rate"], 1.0);
}

#[tokio::test]
async fn a_bad_range_is_refused_with_its_field_an_unknown_subject_is_404_and_a_token_is_needed() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let k = app.campaign("lock", 3600, 86_400).await;
    let kid = k["id"].as_str().unwrap_or_default().to_string();
    for base in [
        format!("/api/v1/templates/{tid}/report"),
        format!("/api/v1/presale-campaigns/{kid}/report"),
    ] {
        for (query, field) in [
            ("?from=yesterday", "from"),
            ("?to=2026-13-01", "to"),
            ("?from=2026-12-02&to=2026-12-01", "from"),
            ("?from=2025-01-01&to=2026-12-01", "to"),
            ("?from=%00", "from"),
        ] {
            let r = app.get(&format!("{base}{query}")).await;
            assert_eq!(r.status, 400, "{base}{query}: {}", r.text);
            assert_eq!(r.code(), "invalid_request");
            assert_eq!(r.field(), field, "{base}{query}");
        }
        let r = app
            .get(&format!("{base}?from=2026-01-01&to=2026-12-31"))
            .await;
        assert_eq!(r.status, 200, "a year: {}", r.text);
        assert_eq!(r.body["days"].as_array().map(Vec::len), Some(365));
        let r = app.get_as(&base, None).await;
        assert_eq!(r.status, 401);
    }
    let r = app.get("/api/v1/templates/tpl_nope/report").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app.get("/api/v1/presale-campaigns/cmp_nope/report").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
}
