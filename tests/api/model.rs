//! Model-based test of the HTTP API: random sequences of
//! claims, orders (normal and presale, with no coupon, one, or several: a
//! platform coupon on shop coupons, sometimes a combination API.md refuses;
//! often as a cart of lines across two shops), payments, cancels, refunds
//! whole and by line, staff releases, invalidations, compensation coupons
//! and campaign policy changes, clock moves from a second to a day, reads
//! and idempotent replays, sent to the real router on a fresh database of
//! the store the harness picks, and applied to a small in-memory model of
//! API.md's rules (`tests/api/model/rules.rs`). Two templates have money
//! budgets small enough to run out. Every answer is compared with the
//! model: the HTTP status, the refusal code, and the key fields of the
//! coupon, order or refund (status as read, lock status, discount,
//! snapshot, compensation, amount due, the checkout lock, each of the
//! order's coupons with its discount, lock, compensation and what it
//! replaced, each line's refunded units and money and payable amount, a
//! quote's part for each coupon, a refund's money and what it did to each
//! coupon). Each run ends by moving the clock into the
//! payment windows and paying what can be paid, so deposits meet final
//! payments under every policy, and by refunding one unit of each line of
//! every other paid order. Then the global invariants are read
//! back through the API: stock and per-user limits, each budget's use, no
//! coupon held by two orders, every coupon and order as the model has it;
//! and after the last
//! case, reconciliation finds no anomaly at all.
//!
//! Replay: a failure prints the seed, the shrunk sequence as a trace of
//! calls, and the command that reruns it (`MODEL_SEED`). `MODEL_CASES`
//! (default 128) and `MODEL_STEPS` (default 40) run longer; `MODEL_TRACE=1`
//! prints the trace of every case, passing or not.

mod rules;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{RngSeed, TestCaseError, TestError, TestRunner};
use serde_json::{Value, json};

use crate::common::{Resp, TestApp, epoch, spawn_app};
use rules::{
    Campaign, CouponStatus, IDEMPOTENCY_RETENTION_SECONDS, Kind, LineSpec, Model, NewOrder,
    OrderStatus, Policy, RefundOutcome, Rule, Template, USERS, Validity,
};

const USER_IDS: [&str; USERS] = ["u0", "u1", "u2"];
/// Clock moves with their weights: a second, a minute either side of
/// nothing, the checkout lock's 900 s and a second short of it, half an
/// hour, an hour, four hours, a day. Template validities and campaign
/// windows are multiples of 30 minutes from the start, so boundaries are
/// also hit exactly. Short moves weigh more, so that most runs live inside
/// the payment windows long enough to pay.
const JUMPS_S: [(u32, i64); 9] = [
    (2, 1),
    (2, 59),
    (2, 60),
    (2, 899),
    (4, 900),
    (6, 1800),
    (6, 3600),
    (2, 4 * 3600),
    (1, 86_400),
];
/// Above the 300-yuan minimum spend of the fixed templates, and below it.
const BIG_TOTAL_CENTS: i64 = 39_900;
const SMALL_TOTAL_CENTS: i64 = 20_000;
const DEPOSIT_CENTS: i64 = 10_000;
/// A deposit leaving only this much to pay, so the presale cap on the
/// discount (total - deposit) bites.
const TIGHT_REST_CENTS: i64 = 2_000;

/// Carts a normal order may send as `lines` (API.md, Carts): phones and
/// shoes, awkward prices and quantities, so the split has remainders and
/// T1 (phones only) meets or misses its threshold on the phone lines.
const CARTS: [&[LineSpec]; 3] = [
    &[
        ("a", Some(SHOP_A), "phones", 3, 13_333),
        ("b", Some(SHOP_B), "shoes", 1, 5_000),
    ],
    &[
        ("a", Some(SHOP_A), "shoes", 2, 10_000),
        ("b", Some(SHOP_B), "phones", 1, 15_001),
        ("c", None, "shoes", 3, 999),
    ],
    &[
        ("a", Some(SHOP_A), "phones", 1, 20_000),
        ("b", Some(SHOP_A), "phones", 2, 7_777),
    ],
];
/// The two shops of the carts' lines (the single form's line has none).
const SHOP_A: &str = "shop-a";
const SHOP_B: &str = "shop-b";

/// The templates: (name, model). Created at the start. Platform
/// coupons: T0 lives 30 minutes (so most end before a final payment) and
/// has a budget of two full discounts, T1 four hours (phones only), T2 is
/// a 20 % coupon capped at 70 yuan in an absolute window that opens in 30
/// minutes (claimable before) and closes after two days, T5 is 20 yuan
/// off that must be alone. Shop coupons: T3 (shop A) 30 off 100 for 30
/// minutes with a budget of one discount and two thirds of another, T4
/// (shop B) 10 % capped at 25 yuan for four hours.
fn templates() -> Vec<(&'static str, Template)> {
    let t = |rule, min_order_cents, categories, validity, total_stock, per_user_limit| Template {
        rule,
        min_order_cents,
        categories,
        shop: None,
        stackable: true,
        budget_cents: None,
        validity,
        total_stock,
        per_user_limit,
        claimed: 0,
        claimed_by: [0; USERS],
    };
    let templates = vec![
        (
            "T0 fixed 50 over 300, 30 min",
            t(
                Rule::Fixed { value_cents: 5000 },
                30_000,
                &[],
                Validity::Relative { seconds: 1800 },
                4,
                2,
            ),
        ),
        (
            "T1 fixed 60 over 300, phones, 4 h",
            t(
                Rule::Fixed { value_cents: 6000 },
                30_000,
                &["phones"],
                Validity::Relative { seconds: 4 * 3600 },
                4,
                2,
            ),
        ),
        (
            "T2 20 percent capped 70, window",
            t(
                Rule::Percent {
                    percent_off: 20,
                    max_discount_cents: Some(7000),
                },
                0,
                &[],
                Validity::Absolute {
                    from_s: 1800,
                    until_s: 2 * 86_400,
                },
                4,
                2,
            ),
        ),
        (
            "T3 shop A fixed 30 over 100, 30 min, budget",
            t(
                Rule::Fixed { value_cents: 3000 },
                10_000,
                &[],
                Validity::Relative { seconds: 1800 },
                6,
                3,
            ),
        ),
        (
            "T4 shop B 10 percent capped 25, 4 h",
            t(
                Rule::Percent {
                    percent_off: 10,
                    max_discount_cents: Some(2500),
                },
                0,
                &[],
                Validity::Relative { seconds: 4 * 3600 },
                6,
                2,
            ),
        ),
        (
            "T5 fixed 20, alone, 4 h",
            t(
                Rule::Fixed { value_cents: 2000 },
                0,
                &[],
                Validity::Relative { seconds: 4 * 3600 },
                4,
                2,
            ),
        ),
    ];
    templates
        .into_iter()
        .enumerate()
        .map(|(i, (name, mut t))| {
            match i {
                0 => t.budget_cents = Some(10_000),
                3 => {
                    t.shop = Some(SHOP_A);
                    t.budget_cents = Some(5_000);
                }
                4 => t.shop = Some(SHOP_B),
                5 => t.stackable = false,
                _ => {}
            }
            (name, t)
        })
        .collect()
}

/// The campaigns, one per policy. Their final-payment windows open after
/// an hour (lock and strict) or 45 minutes (swap_or_compensate), when the
/// T0 coupons of the first half hour have ended, and stay open a day, so that deposits are
/// paid before and final payments inside, with coupons that ended between.
fn campaigns() -> Vec<Campaign> {
    vec![
        Campaign {
            policy: Policy::Lock,
            starts_s: 3600,
            ends_s: 3600 + 86_400,
        },
        Campaign {
            policy: Policy::Strict,
            starts_s: 3600,
            ends_s: 3600 + 86_400,
        },
        Campaign {
            policy: Policy::SwapOrCompensate,
            starts_s: 2700,
            ends_s: 2700 + 86_400,
        },
    ]
}

/// One generated step. Coupons and orders are picked by index among those
/// that exist when the step runs, so every sequence means something.
#[derive(Debug, Clone)]
enum Step {
    Claim {
        user: usize,
        template: usize,
    },
    /// `coupons`: none, one or several (see [`World::order_party`]);
    /// `owner`: placed by the first coupon's owner (else by `user`);
    /// `fresh`: the coupons are picked among those usable now (available,
    /// started) and, after the first, of the same customer and (unless
    /// `clash`) a combination API.md allows, when there are any;
    /// `reuse`: an existing order number (expects `order_exists`).
    /// `cart`: one of [`CARTS`] sent as `lines` instead of the single
    /// form.
    NormalOrder {
        user: usize,
        coupons: Vec<Index>,
        owner: bool,
        fresh: bool,
        clash: bool,
        big: bool,
        shoes: bool,
        reuse: Option<Index>,
        cart: Option<usize>,
    },
    PresaleOrder {
        user: usize,
        coupons: Vec<Index>,
        owner: bool,
        fresh: bool,
        clash: bool,
        campaign: usize,
        big: bool,
        tight: bool,
        shoes: bool,
        reuse: Option<Index>,
        cart: Option<usize>,
    },
    /// `action` on any order, whatever its kind and status.
    Act {
        action: Action,
        order: Index,
    },
    /// The natural next action of an order that has one and can take it
    /// now (not a final payment outside the window, not the payment of a
    /// lapsed checkout: [`Step::Act`] tries those).
    Progress(Index),
    /// A refund of `quantity` units of one line of any order (preferably a
    /// paid one).
    RefundLines {
        order: Index,
        line: Index,
        quantity: i64,
    },
    /// Staff release, preferably of a locked coupon.
    Release {
        coupon: Index,
        force: bool,
    },
    Invalidate(Index),
    /// A compensation coupon of `value_cents` valid `valid_s`, naming an
    /// order or none; `owner`: to the named order's customer (else to
    /// `user`, who may not own it).
    Compensate {
        user: usize,
        value_cents: i64,
        valid_s: i64,
        order: Option<Index>,
        owner: bool,
    },
    /// A campaign's policy changed (allowed until its window opens).
    ChangePolicy {
        campaign: usize,
        policy: Policy,
    },
    /// Moves the clock by this many seconds (one of [`JUMPS_S`]).
    Advance(i64),
    ReadCoupon(Index),
    ReadOrder(Index),
    Quote(Index),
    /// The last POST again with its key: the same body (`other` false,
    /// replayed) or another request (`other` true, 422).
    Replay {
        other: bool,
    },
}

/// An action on an existing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Pay,
    Deposit,
    Final,
    Cancel,
    Refund,
}

/// Every [`Action`], for the generator.
const ACTIONS: [Action; 5] = [
    Action::Pay,
    Action::Deposit,
    Action::Final,
    Action::Cancel,
    Action::Refund,
];

impl Action {
    /// What naturally happens next to an order that is `status`.
    fn next_for(status: OrderStatus) -> Option<Action> {
        match status {
            OrderStatus::PendingPayment => Some(Action::Pay),
            OrderStatus::PendingDeposit => Some(Action::Deposit),
            OrderStatus::DepositPaid => Some(Action::Final),
            OrderStatus::Paid | OrderStatus::FinalPaid => Some(Action::Refund),
            OrderStatus::Closed | OrderStatus::Refunded => None,
        }
    }
}

/// One random step, weighted towards claims, orders and moving orders on.
fn step() -> impl Strategy<Value = Step> {
    let user = 0..USERS;
    // No coupon, one (most), two or three.
    let coupons = prop_oneof![
        1 => Just(0usize),
        10 => Just(1),
        6 => Just(2),
        3 => Just(3),
    ]
    .prop_flat_map(|n| proptest::collection::vec(any::<Index>(), n));
    let reuse = proptest::option::weighted(0.08, any::<Index>());
    let owner = proptest::bool::weighted(0.85);
    let shoes = proptest::bool::weighted(0.15);
    let fresh = (
        proptest::bool::weighted(0.75),
        proptest::bool::weighted(0.15),
    );
    prop_oneof![
        // T0 and T3, the short-lived coupons that make the presale
        // policies matter, are claimed most.
        9 => (user.clone(), prop_oneof![3 => Just(0usize), 2 => Just(1), 1 => Just(2), 3 => Just(3), 2 => Just(4), 1 => Just(5)])
            .prop_map(|(user, template)| Step::Claim { user, template }),
        3 => (user.clone(), coupons.clone(), (owner, fresh), proptest::bool::weighted(0.8), shoes, reuse.clone(), proptest::option::weighted(0.7, 0..CARTS.len()))
            .prop_map(|(user, coupons, (owner, (fresh, clash)), big, shoes, reuse, cart)| Step::NormalOrder { user, coupons, owner, fresh, clash, big, shoes, reuse, cart }),
        4 => (user, coupons, (owner, fresh), 0..3usize, (proptest::bool::weighted(0.85), proptest::bool::weighted(0.25)), shoes, reuse, proptest::option::weighted(0.5, 0..CARTS.len()))
            .prop_map(|(user, coupons, (owner, (fresh, clash)), campaign, (big, tight), shoes, reuse, cart)| Step::PresaleOrder { user, coupons, owner, fresh, clash, campaign, big, tight, shoes, reuse, cart }),
        2 => (proptest::sample::select(&ACTIONS[..]), any::<Index>())
            .prop_map(|(action, order)| Step::Act { action, order }),
        7 => any::<Index>().prop_map(Step::Progress),
        3 => (any::<Index>(), any::<Index>(), 1i64..=3)
            .prop_map(|(order, line, quantity)| Step::RefundLines { order, line, quantity }),
        1 => (any::<Index>(), any::<bool>()).prop_map(|(coupon, force)| Step::Release { coupon, force }),
        1 => any::<Index>().prop_map(Step::Invalidate),
        1 => (0..3usize, proptest::sample::select(&[Policy::Lock, Policy::Strict, Policy::SwapOrCompensate][..]))
            .prop_map(|(campaign, policy)| Step::ChangePolicy { campaign, policy }),
        // 10, 50 (as much as T0: an equal replacement) or 80 yuan, for half
        // an hour or a day.
        2 => (0..USERS, prop_oneof![Just(1000i64), Just(5000), Just(8000)], prop_oneof![Just(1800i64), Just(86_400)], proptest::option::weighted(0.6, any::<Index>()), proptest::bool::weighted(0.8))
            .prop_map(|(user, value_cents, valid_s, order, owner)| Step::Compensate { user, value_cents, valid_s, order, owner }),
        5 => proptest::sample::select(
                JUMPS_S.iter().flat_map(|&(w, s)| std::iter::repeat_n(s, w as usize)).collect::<Vec<_>>()
            ).prop_map(Step::Advance),
        1 => prop_oneof![
                any::<Index>().prop_map(Step::ReadCoupon),
                any::<Index>().prop_map(Step::ReadOrder),
            ],
        1 => any::<Index>().prop_map(Step::Quote),
        1 => proptest::bool::weighted(0.3).prop_map(|other| Step::Replay { other }),
    ]
}

/// A state-changing request, resolved against the world: indices are the
/// model's coupons and orders.
#[derive(Debug, Clone)]
enum Call {
    Claim {
        user: usize,
        template: usize,
    },
    CreateOrder(NewOrder),
    Act(Action, usize),
    /// `refund_id` is new to the order.
    RefundLines {
        order: usize,
        line: usize,
        quantity: i64,
        refund_id: String,
    },
    Release {
        coupon: usize,
        force: bool,
    },
    Invalidate(usize),
    Compensate {
        user: usize,
        value_cents: i64,
        valid_s: i64,
        order: Option<usize>,
    },
    ChangePolicy {
        campaign: usize,
        policy: Policy,
    },
}

/// What the model says a call answers.
enum Expect {
    Refused(&'static str),
    Coupon(usize),
    Order(usize),
    Campaign(usize),
    Refund(RefundOutcome),
}

/// The last POST, for [`Step::Replay`].
#[derive(Clone)]
struct LastPost {
    call: Call,
    key: String,
    at_s: i64,
    status: u16,
    body: Value,
}

/// Seconds after the epoch of an RFC 3339 field; `None` for null or junk.
fn secs(v: &Value) -> Option<i64> {
    let t = DateTime::parse_from_rfc3339(v.as_str()?).ok()?;
    Some((t.with_timezone(&Utc) - epoch()).num_seconds())
}

/// Compares one field; the error names the object, field and both sides.
fn same(what: &str, field: &str, service: &Value, model: &Value) -> Result<(), String> {
    if service == model {
        Ok(())
    } else {
        Err(format!(
            "{what}.{field}: service says {service}, model says {model}"
        ))
    }
}

/// One case's world. Cases share one app and database (a fresh database
/// per case costs PostgreSQL half a second); each case has its own
/// templates, campaigns, users, order numbers and keys (prefix `k<case>-`),
/// and its own time origin, so no case can see another's rows.
struct World<'a> {
    app: &'a TestApp,
    /// `k<case>-`: the case's users, orders and keys start with it.
    prefix: String,
    /// The shared clock's seconds after the epoch when the case began.
    origin_s: i64,
    users: [String; USERS],
    model: Model,
    template_ids: Vec<String>,
    campaign_ids: Vec<String>,
    next_order: u32,
    /// Refund ids handed out (unique in the case, so in every order).
    next_refund: u32,
    next_key: u32,
    last_post: Option<LastPost>,
    trace: Vec<String>,
}

impl<'a> World<'a> {
    /// Creates the case's templates and campaigns through the API.
    async fn start(app: &'a TestApp, case: u32) -> Result<World<'a>, String> {
        let prefix = format!("k{case}-");
        let origin_s = (app.now() - epoch()).num_seconds();
        let users = USER_IDS.map(|u| format!("{prefix}{u}"));
        let mut model = Model::default();
        let mut template_ids = Vec::new();
        for (name, t) in templates() {
            let mut body = json!({
                "name": format!("{prefix}{name}"),
                "min_order_cents": t.min_order_cents,
                "total_stock": t.total_stock,
                "per_user_limit": t.per_user_limit,
                "categories": t.categories,
                "shop_id": t.shop,
                "stackable": t.stackable,
                "budget_cents": t.budget_cents,
            });
            let fields = match t.rule {
                Rule::Fixed { value_cents } => json!({"kind": "fixed", "value_cents": value_cents}),
                Rule::Percent {
                    percent_off,
                    max_discount_cents,
                } => json!({"kind": "percent", "percent_off": percent_off,
                            "max_discount_cents": max_discount_cents}),
            };
            let window = match t.validity {
                Validity::Relative { seconds } => json!({"valid_seconds": seconds}),
                Validity::Absolute { from_s, until_s } => {
                    json!({"valid_from": app.at(from_s), "valid_until": app.at(until_s)})
                }
            };
            body = crate::common::merge(crate::common::merge(body, fields), window);
            let r = app.post("/api/v1/templates", body).await;
            if r.status != 201 {
                return Err(format!("create template {name}: {}", r.text));
            }
            template_ids.push(r.id());
            model.templates.push(t);
        }
        let mut campaign_ids = Vec::new();
        for c in campaigns() {
            let r = app
                .post(
                    "/api/v1/presale-campaigns",
                    json!({
                        "name": format!("{prefix}{} campaign", c.policy.as_str()),
                        "final_payment_starts_at": app.at(c.starts_s),
                        "final_payment_ends_at": app.at(c.ends_s),
                        "policy": c.policy.as_str(),
                    }),
                )
                .await;
            if r.status != 201 {
                return Err(format!("create campaign: {}", r.text));
            }
            campaign_ids.push(r.id());
            model.campaigns.push(c);
        }
        Ok(World {
            app,
            prefix,
            origin_s,
            users,
            model,
            template_ids,
            campaign_ids,
            next_order: 0,
            next_refund: 0,
            next_key: 0,
            last_post: None,
            trace: Vec::new(),
        })
    }

    /// The service's id of the model's coupon `ci`.
    fn coupon_id(&self, ci: usize) -> String {
        self.model.coupons[ci].id.clone()
    }

    /// Where, what and which success status a call sends.
    fn request(&self, call: &Call) -> (String, Value, u16) {
        match call {
            Call::Claim { user, template } => (
                format!("/api/v1/users/{}/coupons", self.users[*user]),
                json!({"template_id": self.template_ids[*template]}),
                201,
            ),
            Call::CreateOrder(n) => {
                let mut body = json!({
                    "order_no": n.order_no,
                    "user_id": self.users[n.user],
                    "kind": n.kind.as_str(),
                });
                match n.lines {
                    Some(lines) => {
                        body["lines"] = lines
                            .iter()
                            .map(|(id, shop, category, q, p)| {
                                json!({"line_id": id, "sku": null, "category": category,
                                    "shop_id": shop, "quantity": q, "unit_price_cents": p})
                            })
                            .collect();
                    }
                    None => {
                        body["category"] = json!(n.category);
                        body["total_cents"] = json!(n.total_cents);
                    }
                }
                match n.coupons.as_slice() {
                    [] => {}
                    [ci] => body["coupon_id"] = json!(self.coupon_id(*ci)),
                    several => {
                        body["coupon_ids"] = several
                            .iter()
                            .map(|&ci| json!(self.coupon_id(ci)))
                            .collect();
                    }
                }
                if let Some(k) = n.campaign {
                    body["campaign_id"] = json!(self.campaign_ids[k]);
                    body["deposit_cents"] = json!(n.deposit_cents);
                }
                ("/api/v1/orders".to_string(), body, 201)
            }
            Call::Act(action, oi) => {
                let no = &self.model.orders[*oi].order_no;
                let (verb, body) = match action {
                    Action::Pay => ("pay", json!({})),
                    Action::Deposit => ("deposit-payment", json!({})),
                    Action::Final => ("final-payment", json!({})),
                    Action::Cancel => (
                        "cancel",
                        json!({"reason": "the customer changed their mind"}),
                    ),
                    Action::Refund => ("refund", json!({"reason": "the goods came back"})),
                };
                (format!("/api/v1/orders/{no}/{verb}"), body, 200)
            }
            Call::RefundLines {
                order,
                line,
                quantity,
                refund_id,
            } => {
                let o = &self.model.orders[*order];
                (
                    format!("/api/v1/orders/{}/refunds", o.order_no),
                    json!({"refund_id": refund_id, "reason": "one item came back",
                        "lines": [{"line_id": o.lines[*line].line_id, "quantity": quantity}]}),
                    201,
                )
            }
            Call::Release { coupon, force } => (
                format!("/api/v1/coupons/{}/release", self.coupon_id(*coupon)),
                json!({"reason": "support releases a stuck lock", "force": force}),
                200,
            ),
            Call::Invalidate(ci) => (
                format!("/api/v1/coupons/{}/invalidate", self.coupon_id(*ci)),
                json!({"reason": "issued by mistake"}),
                200,
            ),
            Call::Compensate {
                user,
                value_cents,
                valid_s,
                order,
            } => (
                format!("/api/v1/users/{}/compensation-coupons", self.users[*user]),
                json!({
                    "value_cents": value_cents,
                    "valid_seconds": valid_s,
                    "reason": "late delivery",
                    "order_no": order.map(|oi| self.model.orders[oi].order_no.clone()),
                }),
                201,
            ),
            Call::ChangePolicy { campaign, policy } => (
                format!("/api/v1/presale-campaigns/{}", self.campaign_ids[*campaign]),
                json!({"policy": policy.as_str(), "reason": "the operator changed the plan"}),
                200,
            ),
        }
    }

    /// Applies a call to the model; what the service must answer.
    fn apply(&mut self, call: &Call) -> Expect {
        let m = &mut self.model;
        let done = |r: Result<usize, &'static str>, coupon: bool| match r {
            Ok(i) if coupon => Expect::Coupon(i),
            Ok(i) => Expect::Order(i),
            Err(code) => Expect::Refused(code),
        };
        match call {
            Call::Claim { user, template } => done(m.claim(*user, *template), true),
            Call::CreateOrder(n) => done(m.create_order(n), false),
            Call::Act(action, oi) => {
                let r = match action {
                    Action::Pay => m.pay(*oi),
                    Action::Deposit => m.pay_deposit(*oi),
                    Action::Final => m.pay_final(*oi),
                    Action::Cancel => m.end(*oi, false),
                    Action::Refund => m.end(*oi, true),
                };
                done(r.map(|()| *oi), false)
            }
            Call::RefundLines {
                order,
                line,
                quantity,
                ..
            } => match m.refund_lines(*order, *line, *quantity) {
                Ok(r) => Expect::Refund(r),
                Err(code) => Expect::Refused(code),
            },
            Call::Release { coupon, force } => {
                done(m.release(*coupon, *force).map(|()| *coupon), true)
            }
            Call::Invalidate(ci) => done(m.invalidate(*ci).map(|()| *ci), true),
            Call::Compensate {
                user,
                value_cents,
                valid_s,
                order,
            } => done(m.compensate(*user, *value_cents, *valid_s, *order), true),
            Call::ChangePolicy { campaign, policy } => match m.change_policy(*campaign, *policy) {
                Ok(k) => Expect::Campaign(k),
                Err(code) => Expect::Refused(code),
            },
        }
    }

    /// A call in the trace's words (coupons as `c<index>`).
    fn describe(&self, call: &Call) -> String {
        let coupons = |cs: &[usize]| {
            if cs.is_empty() {
                "-".to_string()
            } else {
                cs.iter()
                    .map(|i| format!("c{i}"))
                    .collect::<Vec<_>>()
                    .join("+")
            }
        };
        match call {
            Call::Claim { user, template } => format!("claim {} T{template}", USER_IDS[*user]),
            Call::CreateOrder(n) => format!(
                "{} order {} by {} {} total {} deposit {} coupons {}{}",
                n.kind.as_str(),
                n.order_no,
                USER_IDS[n.user],
                n.category,
                n.total_cents,
                n.deposit_cents,
                coupons(&n.coupons),
                n.campaign
                    .map(|k| format!(" on {}", self.model.campaigns[k].policy.as_str()))
                    .unwrap_or_default()
            ),
            Call::Act(action, oi) => {
                format!("{action:?} {}", self.model.orders[*oi].order_no)
            }
            Call::RefundLines {
                order,
                line,
                quantity,
                refund_id,
            } => {
                let o = &self.model.orders[*order];
                format!(
                    "refund {refund_id} of {quantity} x line {} of {}",
                    o.lines[*line].line_id, o.order_no
                )
            }
            Call::Release { coupon: ci, force } => format!("release c{ci} force {force}"),
            Call::Invalidate(ci) => format!("invalidate c{ci}"),
            Call::Compensate {
                user,
                value_cents,
                valid_s,
                order,
            } => format!(
                "compensate {} {value_cents} for {valid_s}s order {}",
                USER_IDS[*user],
                order.map_or("-".to_string(), |oi| self.model.orders[oi].order_no.clone())
            ),
            Call::ChangePolicy { campaign, policy } => {
                format!("campaign {campaign} policy to {}", policy.as_str())
            }
        }
    }

    /// Sends a call with a fresh key (or `key`), applies it to the model
    /// and compares.
    async fn call(&mut self, call: Call, key: Option<String>) -> Result<(), String> {
        let (path, body, ok_status) = self.request(&call);
        let key = key.unwrap_or_else(|| {
            self.next_key += 1;
            format!("{}key-{}", self.prefix, self.next_key)
        });
        let what = self.describe(&call);
        // A policy change is a PATCH, sent without a key and never replayed.
        let patch = matches!(call, Call::ChangePolicy { .. });
        let r = if patch {
            self.app.patch(&path, body).await
        } else {
            self.app.post_idem(&path, &key, body).await
        };
        let verb = match &call {
            Call::Claim { .. } => "claim".to_string(),
            Call::CreateOrder(n) => format!("create {} x{}", n.kind.as_str(), n.coupons.len()),
            Call::Act(Action::Final, oi) => match self.model.plan(*oi) {
                Ok(plan) if self.model.orders[*oi].status == OrderStatus::DepositPaid => {
                    format!("final ({})", plan.outcome)
                }
                _ => "final".to_string(),
            },
            Call::Act(action, _) => format!("{action:?}").to_lowercase(),
            Call::RefundLines { .. } => "refund lines".to_string(),
            Call::Release { force, .. } => format!("release force={force}"),
            Call::Invalidate(_) => "invalidate".to_string(),
            Call::Compensate { .. } => "compensate".to_string(),
            Call::ChangePolicy { .. } => "change policy".to_string(),
        };
        let expect = self.apply(&call);
        let outcome = match &expect {
            Expect::Refused(code) => format!("refused {code}"),
            Expect::Coupon(ci) => format!("ok {} c{ci}", self.model.coupon_status(*ci).as_str()),
            Expect::Order(oi) => {
                let o = &self.model.orders[*oi];
                format!("ok {} lock {}", o.status.as_str(), o.lock.as_str())
            }
            Expect::Campaign(k) => format!("ok {}", self.model.campaigns[*k].policy.as_str()),
            Expect::Refund(r) => {
                let coupons = if r.coupons.is_empty() {
                    "no-coupon".to_string()
                } else {
                    let outcomes: Vec<&str> = r.coupons.iter().map(|(_, o)| *o).collect();
                    outcomes.join("+")
                };
                format!("ok {coupons} {}", r.refund_cents)
            }
        };
        tally(format!(
            "{verb}: {}",
            outcome.split(' ').take(2).collect::<Vec<_>>().join(" ")
        ));
        self.trace
            .push(format!("[t+{}s] {what}: {outcome}", self.model.now_s));
        if r.headers.get("idempotent-replayed").is_some() {
            return Err(format!("{what}: a fresh key was answered as a replay"));
        }
        match expect {
            Expect::Refused(code) => {
                if r.status != 409 || r.code() != code {
                    return Err(format!(
                        "{what}: model refuses {code}, service answers {} {}",
                        r.status, r.text
                    ));
                }
            }
            Expect::Coupon(ci) => {
                if r.status != ok_status {
                    return Err(format!(
                        "{what}: model answers {ok_status}, service {} {}",
                        r.status, r.text
                    ));
                }
                if self.model.coupons[ci].id.is_empty() {
                    self.model.coupons[ci].id = r.id();
                }
                self.check_coupon(ci, &r.body)
                    .map_err(|e| format!("{what}: {e}"))?;
            }
            Expect::Order(oi) => {
                if r.status != ok_status {
                    return Err(format!(
                        "{what}: model answers {ok_status}, service {} {}",
                        r.status, r.text
                    ));
                }
                self.check_order(oi, &r.body)
                    .map_err(|e| format!("{what}: {e}"))?;
            }
            Expect::Refund(want) => {
                // Each coupon's outcome, by coupon (the list has no order).
                let mut outcomes: Vec<(String, String)> = r.body["coupons"]
                    .as_array()
                    .map(|cs| {
                        cs.iter()
                            .map(|c| {
                                let field = |f: &str| c[f].as_str().unwrap_or_default().to_string();
                                (field("coupon_id"), field("outcome"))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                outcomes.sort();
                let mut wanted: Vec<(String, String)> = want
                    .coupons
                    .iter()
                    .map(|(ci, o)| (self.coupon_id(*ci), (*o).to_string()))
                    .collect();
                wanted.sort();
                let got = (r.status, r.body["refund_cents"].as_i64(), outcomes);
                let expected = (ok_status, Some(want.refund_cents), wanted);
                if got != expected {
                    return Err(format!(
                        "{what}: model {expected:?}, service {got:?} {}",
                        r.text
                    ));
                }
            }
            Expect::Campaign(k) => {
                let c = &self.model.campaigns[k];
                let got = (r.status, &r.body["id"], &r.body["policy"]);
                let want = (
                    ok_status,
                    &json!(self.campaign_ids[k]),
                    &json!(c.policy.as_str()),
                );
                if got != want {
                    return Err(format!("{what}: model {want:?}, service {got:?}"));
                }
            }
        }
        if patch {
            return Ok(());
        }
        self.last_post = Some(LastPost {
            call,
            key,
            at_s: self.model.now_s,
            status: r.status,
            body: r.body,
        });
        Ok(())
    }

    /// The coupon as the model has it, field by field.
    fn check_coupon(&self, ci: usize, body: &Value) -> Result<(), String> {
        let c = &self.model.coupons[ci];
        let what = format!("coupon c{ci}");
        let fields = [
            ("id", json!(c.id)),
            ("user_id", json!(self.users[c.user])),
            (
                "template_id",
                json!(c.template.map(|t| self.template_ids[t].clone())),
            ),
            ("status", json!(self.model.coupon_status(ci).as_str())),
            ("order_no", json!(c.order_no)),
        ];
        for (field, want) in &fields {
            same(&what, field, &body[*field], want)?;
        }
        same(
            &what,
            "starts_at (s)",
            &json!(secs(&body["starts_at"]).map(|t| t - self.origin_s)),
            &json!(c.starts_s),
        )?;
        same(
            &what,
            "ends_at (s)",
            &json!(secs(&body["ends_at"]).map(|t| t - self.origin_s)),
            &json!(c.ends_s),
        )
    }

    /// The order as the model has it, field by field.
    fn check_order(&self, oi: usize, body: &Value) -> Result<(), String> {
        let o = &self.model.orders[oi];
        let what = format!("order {}", o.order_no);
        let fields = [
            ("order_no", json!(o.order_no)),
            ("user_id", json!(self.users[o.user])),
            ("kind", json!(o.kind.as_str())),
            ("category", json!(o.category)),
            ("status", json!(o.status.as_str())),
            ("total_cents", json!(o.total_cents)),
            ("deposit_cents", json!(o.deposit_cents)),
            (
                "campaign_id",
                json!(o.campaign.map(|k| self.campaign_ids[k].clone())),
            ),
            (
                "coupon_id",
                json!(o.coupons.first().map(|h| self.coupon_id(h.coupon))),
            ),
            (
                "replaced_coupon_id",
                json!(
                    o.coupons
                        .first()
                        .and_then(|h| h.replaced)
                        .map(|ci| self.coupon_id(ci))
                ),
            ),
            ("coupon_discount_cents", json!(o.discount_cents())),
            ("discount_snapshot_cents", json!(o.snapshot_cents())),
            ("coupon_lock_status", json!(o.lock.as_str())),
            ("compensation_cents", json!(o.compensation_cents())),
            ("amount_due_cents", json!(self.model.amount_due(oi))),
            ("final_payment_cents", json!(o.final_payment_cents)),
            ("refunded_cents", json!(o.refunded_cents)),
        ];
        for (field, want) in &fields {
            same(&what, field, &body[*field], want)?;
        }
        // Each coupon: its discount, lock, compensation and what it
        // replaced, in the order's order.
        let listed = body["coupons"].as_array().map_or(0, Vec::len);
        same(
            &what,
            "coupons (count)",
            &json!(listed),
            &json!(o.coupons.len()),
        )?;
        for (k, h) in o.coupons.iter().enumerate() {
            let got = &body["coupons"][k];
            let coupon = format!("{what} coupon {k}");
            let fields = [
                ("coupon_id", json!(self.coupon_id(h.coupon))),
                ("discount_cents", json!(h.discount_cents)),
                ("lock_status", json!(o.lock_of(k).as_str())),
                ("compensation_cents", json!(h.compensation_cents)),
                (
                    "replaced_coupon_id",
                    json!(h.replaced.map(|ci| self.coupon_id(ci))),
                ),
            ];
            for (field, want) in &fields {
                same(&coupon, field, &got[*field], want)?;
            }
        }
        // Each line: what was refunded, and once paid, what it costs after
        // its share of the discount.
        let paid = matches!(
            o.status,
            OrderStatus::Paid | OrderStatus::FinalPaid | OrderStatus::Refunded
        );
        let shares = self.model.shares(oi);
        for (i, l) in o.lines.iter().enumerate() {
            let got = &body["lines"][i];
            let line = format!("{what} line {}", l.line_id);
            same(&line, "line_id", &got["line_id"], &json!(l.line_id))?;
            same(
                &line,
                "refunded_quantity",
                &got["refunded_quantity"],
                &json!(l.refunded_quantity),
            )?;
            same(
                &line,
                "refunded_cents",
                &got["refunded_cents"],
                &json!(l.refunded_cents),
            )?;
            if paid {
                same(
                    &line,
                    "payable_cents",
                    &got["payable_cents"],
                    &json!(l.amount() - shares[i]),
                )?;
            }
        }
        same(
            &what,
            "checkout_lock_expires_at (s)",
            &json!(secs(&body["checkout_lock_expires_at"]).map(|t| t - self.origin_s)),
            &json!(o.checkout_lock_expires_s),
        )
    }

    /// The coupon picked by `ix`, among those `prefer` keeps when there are
    /// any, else among all; `None` before the first claim.
    fn pick_coupon(&self, ix: &Index, prefer: impl Fn(usize) -> bool) -> Option<usize> {
        let all: Vec<usize> = (0..self.model.coupons.len()).collect();
        let preferred: Vec<usize> = all.iter().copied().filter(|&i| prefer(i)).collect();
        let from = if preferred.is_empty() { all } else { preferred };
        (!from.is_empty()).then(|| from[ix.index(from.len())])
    }

    /// The order picked by `ix`, among all or (`moving`) among those
    /// [`Step::Progress`] can move now.
    fn pick_order(&self, ix: &Index, moving: bool) -> Option<usize> {
        let m = &self.model;
        let can_move = |i: usize| {
            let o = &m.orders[i];
            match Action::next_for(o.status) {
                None => false,
                Some(Action::Final) => {
                    let c = &m.campaigns[o.campaign.unwrap_or_default()];
                    c.starts_s <= m.now_s && m.now_s < c.ends_s
                }
                Some(Action::Pay) => o.checkout_lock_expires_s.is_none_or(|t| m.now_s < t),
                Some(_) => true,
            }
        };
        let picks: Vec<usize> = (0..m.orders.len())
            .filter(|&i| !moving || can_move(i))
            .collect();
        (!picks.is_empty()).then(|| picks[ix.index(picks.len())])
    }

    /// The customer and coupons of a new order: one coupon per index,
    /// never the same twice. `fresh` prefers coupons usable now and,
    /// after the first, the first's owner's coupons that make a
    /// combination API.md allows (stackable, one platform coupon, one per
    /// shop); without `fresh`, any other coupon, so clashes, other
    /// owners' coupons and spent ones are asked for too.
    fn order_party(
        &self,
        user: usize,
        coupons: &[Index],
        owner: bool,
        (fresh, clash): (bool, bool),
    ) -> (usize, Vec<usize>) {
        let m = &self.model;
        let now = m.now_s;
        let usable = |i: usize| {
            m.coupon_status(i) == CouponStatus::Available && m.coupons[i].starts_s <= now
        };
        let mut picked: Vec<usize> = Vec::new();
        for ix in coupons {
            let fits = |i: usize| {
                if picked.contains(&i) {
                    return false;
                }
                if !fresh {
                    return true;
                }
                let c = &m.coupons[i];
                usable(i)
                    && picked.iter().all(|&p| {
                        let q = &m.coupons[p];
                        q.user == c.user
                            && (clash || (q.stackable && c.stackable && q.shop != c.shop))
                    })
            };
            let left = |i: usize| !picked.contains(&i);
            let choice = {
                let all: Vec<usize> = (0..m.coupons.len()).filter(|&i| left(i)).collect();
                let preferred: Vec<usize> = all.iter().copied().filter(|&i| fits(i)).collect();
                // A fresh combination that cannot grow stays as it is.
                let grows_anyhow = !fresh || picked.is_empty();
                let from = if preferred.is_empty() && grows_anyhow {
                    all
                } else {
                    preferred
                };
                (!from.is_empty()).then(|| from[ix.index(from.len())])
            };
            if let Some(ci) = choice {
                picked.push(ci);
            }
        }
        match picked.first() {
            Some(&ci) if owner => (m.coupons[ci].user, picked),
            _ => (user, picked),
        }
    }

    /// The cart of a new order: the one asked for; or, for a fresh
    /// combination with a shop coupon asked in the single form (whose one
    /// line has no shop), the cart with lines of both shops.
    fn cart_for(
        &self,
        cart: Option<usize>,
        coupons: &[usize],
        fresh: bool,
    ) -> Option<&'static [LineSpec]> {
        let shop_coupon = coupons
            .iter()
            .any(|&ci| self.model.coupons[ci].shop.is_some());
        match cart {
            Some(k) => Some(CARTS[k]),
            None if fresh && shop_coupon => Some(CARTS[1]),
            None => None,
        }
    }

    /// A new order number, or an existing one when `reuse` picks one.
    fn order_no(&mut self, reuse: &Option<Index>) -> String {
        if let Some(ix) = reuse
            && let Some(oi) = self.pick_order(ix, false)
        {
            return self.model.orders[oi].order_no.clone();
        }
        self.next_order += 1;
        format!("{}M{}", self.prefix, self.next_order)
    }

    /// Runs one generated step; `Err` when the service and model disagree.
    async fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Claim { user, template } => {
                self.call(
                    Call::Claim {
                        user: *user,
                        template: *template,
                    },
                    None,
                )
                .await
            }
            Step::NormalOrder {
                user,
                coupons,
                owner,
                fresh,
                clash,
                big,
                shoes,
                reuse,
                cart,
            } => {
                let (who, cs) = self.order_party(*user, coupons, *owner, (*fresh, *clash));
                let order_no = self.order_no(reuse);
                let lines = self.cart_for(*cart, &cs, *fresh);
                let n = NewOrder {
                    order_no,
                    user: who,
                    kind: Kind::Normal,
                    category: match lines {
                        Some(ls) => ls[0].2,
                        None if *shoes => "shoes",
                        None => "phones",
                    },
                    total_cents: match lines {
                        Some(ls) => ls.iter().map(|(_, _, _, q, p)| q * p).sum(),
                        None if *big => BIG_TOTAL_CENTS,
                        None => SMALL_TOTAL_CENTS,
                    },
                    deposit_cents: 0,
                    campaign: None,
                    coupons: cs,
                    lines,
                };
                self.call(Call::CreateOrder(n), None).await
            }
            Step::PresaleOrder {
                user,
                coupons,
                owner,
                fresh,
                clash,
                campaign,
                big,
                tight,
                shoes,
                reuse,
                cart,
            } => {
                let (who, cs) = self.order_party(*user, coupons, *owner, (*fresh, *clash));
                let order_no = self.order_no(reuse);
                let lines = self.cart_for(*cart, &cs, *fresh);
                let total_cents = match lines {
                    Some(ls) => ls.iter().map(|(_, _, _, q, p)| q * p).sum(),
                    None if *big => BIG_TOTAL_CENTS,
                    None => SMALL_TOTAL_CENTS,
                };
                let n = NewOrder {
                    order_no,
                    user: who,
                    kind: Kind::Presale,
                    category: match lines {
                        Some(ls) => ls[0].2,
                        None if *shoes => "shoes",
                        None => "phones",
                    },
                    total_cents,
                    deposit_cents: if *tight {
                        total_cents - TIGHT_REST_CENTS
                    } else {
                        DEPOSIT_CENTS
                    },
                    campaign: Some(*campaign),
                    coupons: cs,
                    lines,
                };
                self.call(Call::CreateOrder(n), None).await
            }
            Step::RefundLines {
                order,
                line,
                quantity,
            } => {
                let paid = |o: &rules::Order| {
                    matches!(o.status, OrderStatus::Paid | OrderStatus::FinalPaid)
                };
                let m = &self.model;
                let any: Vec<usize> = (0..m.orders.len()).collect();
                let preferred: Vec<usize> = any
                    .iter()
                    .copied()
                    .filter(|&i| paid(&m.orders[i]))
                    .collect();
                let from = if preferred.is_empty() { any } else { preferred };
                if from.is_empty() {
                    return self.skip(step);
                }
                let oi = from[order.index(from.len())];
                let line = line.index(m.orders[oi].lines.len());
                self.next_refund += 1;
                let refund_id = format!("r{}", self.next_refund);
                self.call(
                    Call::RefundLines {
                        order: oi,
                        line,
                        quantity: *quantity,
                        refund_id,
                    },
                    None,
                )
                .await
            }
            Step::Act { action, order } => match self.pick_order(order, false) {
                Some(oi) => self.call(Call::Act(*action, oi), None).await,
                None => self.skip(step),
            },
            Step::Progress(ix) => match self.pick_order(ix, true) {
                Some(oi) => {
                    let action =
                        Action::next_for(self.model.orders[oi].status).unwrap_or(Action::Refund);
                    self.call(Call::Act(action, oi), None).await
                }
                None => self.skip(step),
            },
            Step::Release { coupon, force } => {
                let locked = |i: usize| self.model.coupons[i].stored == CouponStatus::Locked;
                match self.pick_coupon(coupon, locked) {
                    Some(ci) => {
                        self.call(
                            Call::Release {
                                coupon: ci,
                                force: *force,
                            },
                            None,
                        )
                        .await
                    }
                    None => self.skip(step),
                }
            }
            Step::Invalidate(ix) => match self.pick_coupon(ix, |_| true) {
                Some(ci) => self.call(Call::Invalidate(ci), None).await,
                None => self.skip(step),
            },
            Step::Compensate {
                user,
                value_cents,
                valid_s,
                order,
                owner,
            } => {
                let order = order.as_ref().and_then(|ix| self.pick_order(ix, false));
                let user = match order {
                    Some(oi) if *owner => self.model.orders[oi].user,
                    _ => *user,
                };
                self.call(
                    Call::Compensate {
                        user,
                        value_cents: *value_cents,
                        valid_s: *valid_s,
                        order,
                    },
                    None,
                )
                .await
            }
            Step::ChangePolicy { campaign, policy } => {
                self.call(
                    Call::ChangePolicy {
                        campaign: *campaign,
                        policy: *policy,
                    },
                    None,
                )
                .await
            }
            Step::Advance(s) => {
                let s = *s;
                self.app.advance(s);
                self.model.advance(s);
                self.trace
                    .push(format!("advance {s}s (now t+{}s)", self.model.now_s));
                Ok(())
            }
            Step::ReadCoupon(ix) => match self.pick_coupon(ix, |_| true) {
                Some(ci) => self.read_coupon(ci).await,
                None => self.skip(step),
            },
            Step::ReadOrder(ix) => match self.pick_order(ix, false) {
                Some(oi) => self.read_order(oi).await,
                None => self.skip(step),
            },
            Step::Quote(ix) => match self.pick_order(ix, false) {
                Some(oi) => self.quote(oi).await,
                None => self.skip(step),
            },
            Step::Replay { other } => self.replay(*other).await,
        }
    }

    /// A step with nothing to act on yet (no coupon, no order).
    fn skip(&mut self, step: &Step) -> Result<(), String> {
        self.trace.push(format!("{step:?}: nothing to act on"));
        Ok(())
    }

    /// `GET /coupons/{id}` against the model.
    async fn read_coupon(&mut self, ci: usize) -> Result<(), String> {
        let r = self
            .app
            .get(&format!("/api/v1/coupons/{}", self.coupon_id(ci)))
            .await;
        self.trace.push(format!(
            "read c{ci}: model {}",
            self.model.coupon_status(ci).as_str()
        ));
        if r.status != 200 {
            return Err(format!("read c{ci}: {} {}", r.status, r.text));
        }
        self.check_coupon(ci, &r.body)
            .map_err(|e| format!("read c{ci}: {e}"))
    }

    /// `GET /orders/{no}` against the model.
    async fn read_order(&mut self, oi: usize) -> Result<(), String> {
        let no = self.model.orders[oi].order_no.clone();
        let r = self.app.get(&format!("/api/v1/orders/{no}")).await;
        self.trace.push(format!(
            "read {no}: model {} due {}",
            self.model.orders[oi].status.as_str(),
            self.model.amount_due(oi)
        ));
        if r.status != 200 {
            return Err(format!("read {no}: {} {}", r.status, r.text));
        }
        self.check_order(oi, &r.body)
            .map_err(|e| format!("read {no}: {e}"))
    }

    /// `GET /orders/{no}/final-payment-quote` against the model.
    async fn quote(&mut self, oi: usize) -> Result<(), String> {
        let no = self.model.orders[oi].order_no.clone();
        let r = self
            .app
            .get(&format!("/api/v1/orders/{no}/final-payment-quote"))
            .await;
        let what = format!("quote {no}");
        match self.model.quote(oi) {
            Err(code) => {
                self.trace.push(format!("{what}: model refuses {code}"));
                if r.status != 409 || r.code() != code {
                    return Err(format!(
                        "{what}: model refuses {code}, service {} {}",
                        r.status, r.text
                    ));
                }
            }
            Ok(plan) => {
                self.trace.push(format!(
                    "{what}: model {} due {}",
                    plan.outcome, plan.amount_due_cents
                ));
                if r.status != 200 {
                    return Err(format!("{what}: {} {}", r.status, r.text));
                }
                let fields = [
                    ("coupon_outcome", json!(plan.outcome)),
                    ("amount_due_cents", json!(plan.amount_due_cents)),
                    ("discount_cents", json!(plan.discount_cents)),
                    ("compensation_cents", json!(plan.compensation_cents)),
                    (
                        "replacement_coupon_id",
                        json!(plan.replacement.map(|ci| self.coupon_id(ci))),
                    ),
                ];
                for (field, want) in &fields {
                    same(&what, field, &r.body[*field], want)?;
                }
                // Each coupon's part, in the order's order.
                let o = &self.model.orders[oi];
                for (k, (h, part)) in o.coupons.iter().zip(&plan.parts).enumerate() {
                    let got = &r.body["coupons"][k];
                    let coupon = format!("{what} coupon {k}");
                    let fields = [
                        ("coupon_id", json!(self.coupon_id(h.coupon))),
                        ("outcome", json!(part.outcome)),
                        ("discount_cents", json!(part.discount_cents)),
                        ("compensation_cents", json!(part.compensation_cents)),
                        (
                            "replacement_coupon_id",
                            json!(part.replacement.map(|ci| self.coupon_id(ci))),
                        ),
                    ];
                    for (field, want) in &fields {
                        same(&coupon, field, &got[*field], want)?;
                    }
                }
                same(
                    &what,
                    "coupons (count)",
                    &json!(r.body["coupons"].as_array().map_or(0, Vec::len)),
                    &json!(plan.parts.len()),
                )?;
            }
        }
        Ok(())
    }

    /// The last POST's key again. With the same request: within 24 h the
    /// first answer comes back, marked replayed, and nothing changes. With
    /// another request (`other`: a claim that differs from the last call):
    /// 422 `idempotency_key_reused`, nothing changes. After 24 h the key
    /// is forgotten and either request runs afresh.
    async fn replay(&mut self, other: bool) -> Result<(), String> {
        let Some(last) = self.last_post.clone() else {
            return self.skip(&Step::Replay { other });
        };
        let call = if other {
            let t = match last.call {
                Call::Claim {
                    user: 0,
                    template: 0,
                } => 1,
                _ => 0,
            };
            Call::Claim {
                user: 0,
                template: t,
            }
        } else {
            last.call.clone()
        };
        let what = self.describe(&call);
        if self.model.now_s - last.at_s >= IDEMPOTENCY_RETENTION_SECONDS {
            self.trace
                .push(format!("key of a day ago, runs afresh: {what}"));
            return self.call(call, Some(last.key)).await;
        }
        let (path, body, _) = self.request(&call);
        let r: Resp = self.app.post_idem(&path, &last.key, body).await;
        if other {
            self.trace.push(format!("last key reused for {what}: 422"));
            if r.status != 422 || r.code() != "idempotency_key_reused" {
                return Err(format!(
                    "{what} with the last call's key: {} {}",
                    r.status, r.text
                ));
            }
            return Ok(());
        }
        self.trace
            .push(format!("replay {what}: first answer {}", last.status));
        let replayed = r
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok());
        if r.status != last.status || r.body != last.body || replayed != Some("true") {
            return Err(format!(
                "replay of {what}: first {} {}, now {} {} (Idempotent-Replayed {replayed:?})",
                last.status, last.body, r.status, r.text
            ));
        }
        Ok(())
    }

    /// The end of every run: the clock moves to where every payment
    /// window is open (if it is not past that yet), and each order takes
    /// its next payments (a lapsed checkout is cancelled instead), each
    /// call compared like any other. Random runs often end between a
    /// deposit and its final payment; this is where coupons that ended
    /// meanwhile meet the campaign policies.
    async fn wind_down(&mut self) -> Result<(), String> {
        let open_s = self
            .model
            .campaigns
            .iter()
            .map(|c| c.starts_s)
            .max()
            .unwrap_or(0);
        if self.model.now_s < open_s {
            let s = open_s - self.model.now_s;
            self.app.advance(s);
            self.model.advance(s);
            self.trace.push(format!(
                "wind down: advance {s}s (now t+{}s)",
                self.model.now_s
            ));
        }
        // Fresh coupons of the short-lived templates and T1 (where stock
        // and limits allow), so that coupons that ended before the final
        // payment find stand-ins under `swap_or_compensate`, or pass over
        // one their budget cannot take.
        for user in 0..USERS {
            for template in [0, 3, 1] {
                self.call(Call::Claim { user, template }, None).await?;
            }
        }
        for oi in 0..self.model.orders.len() {
            // At most deposit then final payment.
            for _ in 0..2 {
                let o = &self.model.orders[oi];
                let lapsed = o
                    .checkout_lock_expires_s
                    .is_some_and(|t| t <= self.model.now_s);
                let action = match o.status {
                    OrderStatus::PendingPayment if lapsed => Action::Cancel,
                    OrderStatus::PendingPayment => Action::Pay,
                    OrderStatus::PendingDeposit => Action::Deposit,
                    OrderStatus::DepositPaid => Action::Final,
                    _ => break,
                };
                let before = o.status;
                self.call(Call::Act(action, oi), None).await?;
                if self.model.orders[oi].status == before {
                    break;
                }
            }
        }
        // Then one unit of every line of every other paid order comes
        // back, one refund each: coupons kept, and returned with the last
        // unit they discounted.
        for oi in (0..self.model.orders.len()).step_by(2) {
            let o = &self.model.orders[oi];
            if !matches!(o.status, OrderStatus::Paid | OrderStatus::FinalPaid) {
                continue;
            }
            for line in 0..o.lines.len() {
                self.next_refund += 1;
                let refund_id = format!("w{}", self.next_refund);
                self.call(
                    Call::RefundLines {
                        order: oi,
                        line,
                        quantity: 1,
                        refund_id,
                    },
                    None,
                )
                .await?;
            }
        }
        Ok(())
    }

    /// The invariants, read back through the API after a run.
    async fn final_check(&mut self) -> Result<(), String> {
        for (t, id) in self.template_ids.iter().enumerate() {
            let r = self.app.get(&format!("/api/v1/templates/{id}")).await;
            let m = &self.model.templates[t];
            let what = format!("template T{t}");
            same(&what, "claimed", &r.body["claimed"], &json!(m.claimed))?;
            same(
                &what,
                "budget_cents",
                &r.body["budget_cents"],
                &json!(m.budget_cents),
            )?;
            if m.budget_cents.is_some() {
                same(
                    &what,
                    "budget_used_cents",
                    &r.body["budget_used_cents"],
                    &json!(self.model.budget_used(t)),
                )?;
            }
            if r.body["claimed"].as_i64().unwrap_or(i64::MAX) > m.total_stock {
                return Err(format!("{what}: claimed above stock: {}", r.text));
            }
            for status in [
                CouponStatus::Available,
                CouponStatus::Locked,
                CouponStatus::Used,
                CouponStatus::Expired,
                CouponStatus::Invalidated,
            ] {
                let n = (0..self.model.coupons.len())
                    .filter(|&i| {
                        self.model.coupons[i].template == Some(t)
                            && self.model.coupon_status(i) == status
                    })
                    .count();
                same(
                    &what,
                    &format!("counts.{}", status.as_str()),
                    &r.body["counts"][status.as_str()],
                    &json!(n),
                )?;
            }
        }
        for (u, user) in self.users.iter().enumerate() {
            let r = self.app.get(&format!("/api/v1/users/{user}/coupons")).await;
            let listed = r.body["coupons"].as_array().cloned().unwrap_or_default();
            let mut ids: Vec<String> = listed
                .iter()
                .map(|c| c["id"].as_str().unwrap_or_default().to_string())
                .collect();
            ids.sort();
            let mut want: Vec<String> = (0..self.model.coupons.len())
                .filter(|&i| self.model.coupons[i].user == u)
                .map(|i| self.coupon_id(i))
                .collect();
            want.sort();
            if ids != want {
                return Err(format!("{user}'s coupons: service {ids:?}, model {want:?}"));
            }
            for (t, id) in self.template_ids.iter().enumerate() {
                let held = listed.iter().filter(|c| c["template_id"] == *id).count();
                if held as i64 > self.model.templates[t].per_user_limit {
                    return Err(format!(
                        "{user} holds {held} coupons of T{t}, over the limit"
                    ));
                }
            }
        }
        for ci in 0..self.model.coupons.len() {
            self.read_coupon(ci).await?;
        }
        let mut holders: Vec<(String, String)> = Vec::new();
        for oi in 0..self.model.orders.len() {
            let no = self.model.orders[oi].order_no.clone();
            let r = self.app.get(&format!("/api/v1/orders/{no}")).await;
            self.check_order(oi, &r.body)
                .map_err(|e| format!("final read {no}: {e}"))?;
            let held = r.body["coupons"].as_array().cloned().unwrap_or_default();
            for h in &held {
                let lock = h["lock_status"].as_str().unwrap_or_default();
                let (Some(cid), "locked" | "used") = (h["coupon_id"].as_str(), lock) else {
                    continue;
                };
                if let Some((other, _)) = holders.iter().find(|(_, c)| c == cid) {
                    return Err(format!("coupon {cid} is held by {other} and by {no}"));
                }
                let c = self.app.get(&format!("/api/v1/coupons/{cid}")).await;
                if c.body["status"] != lock || c.body["order_no"] != json!(no) {
                    return Err(format!(
                        "{no} says its coupon is {lock}, the coupon: {}",
                        c.text
                    ));
                }
                holders.push((no.clone(), cid.to_string()));
            }
        }
        Ok(())
    }
}

/// One case: the world, the steps, the wind-down, the invariants.
async fn run_case(app: &TestApp, case: u32, steps: Vec<Step>) -> Result<(), String> {
    let mut w = World::start(app, case).await?;
    // Every customer starts with a coupon of T0, T3 and T4, so orders of
    // several coupons can be asked for from the first step.
    for user in 0..USERS {
        for template in [0, 3, 4] {
            if let Err(e) = w.call(Call::Claim { user, template }, None).await {
                return Err(format!("first claims: {e}"));
            }
        }
    }
    for (i, step) in steps.iter().enumerate() {
        if let Err(e) = w.step(step).await {
            return Err(format!("step {i}: {e}\ntrace:\n  {}", w.trace.join("\n  ")));
        }
    }
    if let Err(e) = w.wind_down().await {
        return Err(format!(
            "winding down: {e}\ntrace:\n  {}",
            w.trace.join("\n  ")
        ));
    }
    if std::env::var_os("MODEL_TRACE").is_some() {
        eprintln!("case passed:\n  {}", w.trace.join("\n  "));
    }
    w.final_check().await.map_err(|e| {
        format!(
            "after the last step: {e}\ntrace:\n  {}",
            w.trace.join("\n  ")
        )
    })
}

/// How often each kind of call got each answer, over all cases of a run:
/// printed at the end so a run shows what it exercised.
static TALLY: std::sync::Mutex<BTreeMap<String, u64>> = std::sync::Mutex::new(BTreeMap::new());

/// Counts one answer in [`TALLY`].
fn tally(what: String) {
    let mut t = TALLY.lock().unwrap_or_else(|p| p.into_inner());
    *t.entry(what).or_default() += 1;
}

/// A number from the environment, if set and well-formed.
fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The run: `MODEL_CASES` cases (default 128) of 1 to `MODEL_STEPS` steps
/// (default 40) from `MODEL_SEED` (default random, always printed).
#[test]
fn every_answer_of_the_api_agrees_with_the_model_of_api_md_on_random_sequences() {
    let seed: u64 = env_number("MODEL_SEED").unwrap_or_else(rand::random);
    let cases: u32 = env_number("MODEL_CASES").unwrap_or(128);
    let max_steps: usize = env_number("MODEL_STEPS").unwrap_or(40);
    let store = format!("{:?}", crate::common::store()).to_lowercase();
    let rerun = format!(
        "MODEL_SEED={seed} MODEL_CASES={cases} MODEL_STEPS={max_steps} COUPONKEEPER_TEST_STORE={store} cargo test --test api model::"
    );
    eprintln!(
        "model test on {store}: seed {seed}, {cases} cases of up to {max_steps} steps; rerun: {rerun}"
    );
    let config = ProptestConfig {
        cases,
        max_shrink_iters: 256,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime for the run");
    let app = rt.block_on(spawn_app());
    let case = std::sync::atomic::AtomicU32::new(0);
    let result = runner.run(
        &proptest::collection::vec(step(), 1..=max_steps.max(1)),
        |steps| {
            let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            rt.block_on(run_case(&app, n, steps))
                .map_err(TestCaseError::fail)
        },
    );
    // Every case ends with its orders paid, closed, or live and holding
    // what they should (the wind-down cancels lapsed checkouts), so
    // reconciliation finds nothing in the whole shared database. Checked
    // once per run: the scan reads every row, per case it would cost more
    // than the cases. Anomalies name their orders, `k<case>-...`.
    let reconciled = rt.block_on(app.get("/api/v1/reconciliation"));
    let tallied = TALLY.lock().unwrap_or_else(|p| p.into_inner()).clone();
    eprintln!("calls by answer over the run:");
    for (what, n) in &tallied {
        eprintln!("  {n:6}  {what}");
    }
    match result {
        Ok(()) => assert!(
            reconciled.status == 200 && reconciled.body["anomalies"] == json!([]),
            "after every case passed, reconciliation finds anomalies: {}\nrerun: {rerun}",
            reconciled.text
        ),
        Err(TestError::Fail(reason, steps)) => panic!(
            "the service disagrees with the model of API.md.\n{reason}\n\nshrunk to {} steps: {steps:?}\n\nrerun: {rerun}",
            steps.len()
        ),
        Err(TestError::Abort(reason)) => panic!("the model test aborted: {reason}\nrerun: {rerun}"),
    }
}
