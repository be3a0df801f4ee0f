//! The checkout picker, `POST /users/{user_id}/coupon-options`: which of a
//! customer's coupons fit a cart, for how much, why the others do not, the
//! best one, the presale warnings; and the property that it agrees with
//! `POST /orders` and the deposit payment on every coupon.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};

use crate::common::{TestApp, merge, spawn_app, template_body};

/// Claims one coupon of a template made from the defaults (满300减50, 10
/// days) with `overrides`; its id.
async fn coupon(app: &TestApp, user: &str, overrides: Value) -> String {
    let t = app.template(overrides).await;
    let c = app
        .claim(user, t["id"].as_str().expect("template id"))
        .await;
    c["id"].as_str().expect("coupon id").to_string()
}

async fn options(app: &TestApp, user: &str, cart: Value) -> crate::common::Resp {
    app.post(&format!("/api/v1/users/{user}/coupon-options"), cart)
        .await
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|e| e["coupon"]["id"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn normal_cart(total_cents: i64, category: &str) -> Value {
    json!({"kind": "normal", "category": category, "total_cents": total_cents})
}

#[tokio::test]
async fn usable_coupons_come_largest_discount_first_then_soonest_end_and_the_best_is_the_first() {
    let app = spawn_app().await;
    let small = coupon(
        &app,
        "u1",
        json!({"value_cents": 1000, "min_order_cents": 0}),
    )
    .await;
    let big_late = coupon(
        &app,
        "u1",
        json!({"value_cents": 5000, "valid_seconds": 20 * 86_400}),
    )
    .await;
    let big_soon = coupon(
        &app,
        "u1",
        json!({"value_cents": 5000, "valid_seconds": 86_400}),
    )
    .await;
    // 20 % off, capped at 60 yuan: 80 yuan of 400 becomes 60.
    let pct = coupon(
        &app,
        "u1",
        json!({"kind": "percent", "value_cents": null, "percent_off": 20, "max_discount_cents": 6000}),
    )
    .await;
    let r = options(&app, "u1", normal_cart(40_000, "phones")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        ids(&r.body["usable"]),
        vec![pct.clone(), big_soon.clone(), big_late, small]
    );
    let discounts: Vec<i64> = r.body["usable"]
        .as_array()
        .expect("usable")
        .iter()
        .map(|u| u["discount_cents"].as_i64().unwrap_or(-1))
        .collect();
    assert_eq!(discounts, vec![6000, 5000, 5000, 1000]);
    assert_eq!(r.body["best"], json!(pct));
    assert_eq!(r.body["unusable"], json!([]));
    assert!(r.body["usable"][0]["warning"].is_null());
    assert_eq!(
        r.body["usable"][0]["coupon"]["code"].as_str().map(str::len),
        Some(14)
    );
}

#[tokio::test]
async fn a_cart_below_the_threshold_learns_how_much_it_lacks_in_its_language() {
    let app = spawn_app().await;
    let id = coupon(&app, "u1", json!({})).await; // 满300减50
    let r = options(&app, "u1", normal_cart(28_000, "phones")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["best"], Value::Null);
    assert_eq!(r.body["usable"], json!([]));
    let u = &r.body["unusable"][0];
    assert_eq!(u["coupon"]["id"], json!(id));
    assert_eq!(u["reason"], "threshold_not_met");
    assert_eq!(u["shortfall_cents"], 2000);
    assert_eq!(
        u["message"],
        "Add ¥20.00 more to use this coupon (minimum spend ¥300.00)."
    );
    let zh = app
        .post_raw(
            "/api/v1/users/u1/coupon-options",
            normal_cart(28_000, "phones").to_string(),
            &[
                ("authorization", &format!("Bearer {}", crate::common::TOKEN)),
                ("accept-language", "zh-CN,zh;q=0.9"),
            ],
        )
        .await;
    assert_eq!(
        zh.body["unusable"][0]["message"],
        "还差 20.00 元可用（满 300.00 元可用）。"
    );
    // Exactly at the threshold it fits.
    let r = options(&app, "u1", normal_cart(30_000, "phones")).await;
    assert_eq!(ids(&r.body["usable"]), vec![id]);
}

#[tokio::test]
async fn a_coupon_for_another_category_or_not_yet_started_says_so_and_shortfall_is_null() {
    let app = spawn_app().await;
    let shoes = coupon(
        &app,
        "u1",
        json!({"categories": ["shoes"], "min_order_cents": 0}),
    )
    .await;
    let later = coupon(
        &app,
        "u1",
        json!({"valid_seconds": null, "valid_from": app.at(3600), "valid_until": app.at(7200), "min_order_cents": 0}),
    )
    .await;
    let r = options(&app, "u1", normal_cart(10_000, "phones")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let by_id = |id: &str| {
        r.body["unusable"]
            .as_array()
            .and_then(|a| a.iter().find(|u| u["coupon"]["id"] == id).cloned())
            .unwrap_or(Value::Null)
    };
    assert_eq!(by_id(&shoes)["reason"], "coupon_not_applicable");
    assert_eq!(by_id(&shoes)["message"], "Only for shoes.");
    assert_eq!(by_id(&shoes)["shortfall_cents"], Value::Null);
    assert_eq!(by_id(&later)["reason"], "coupon_not_started");
    let msg = by_id(&later)["message"].as_str().unwrap_or("").to_string();
    // The start in the business time zone with its offset.
    assert!(
        msg.starts_with("Usable from ") && msg.contains("(UTC"),
        "{msg}"
    );
}

#[tokio::test]
async fn spent_locked_and_expired_coupons_are_left_out_and_nothing_is_written() {
    let app = spawn_app().await;
    let locked = coupon(&app, "u1", json!({})).await;
    let r = app
        .order(crate::common::normal_order(
            "N1",
            "u1",
            Some(&locked),
            40_000,
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let short = coupon(&app, "u1", json!({"valid_seconds": 60})).await;
    let live = coupon(&app, "u1", json!({})).await;
    app.advance(61); // `short` is past its end, still stored available
    let events_before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events")
        .fetch_one(app.db.db.pool())
        .await
        .unwrap_or(-1);
    let r = options(&app, "u1", normal_cart(40_000, "phones")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(ids(&r.body["usable"]), vec![live]);
    assert_eq!(r.body["unusable"], json!([]));
    assert!(!r.text.contains(&short) && !r.text.contains(&locked));
    let events_after: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events")
        .fetch_one(app.db.db.pool())
        .await
        .unwrap_or(-2);
    assert_eq!(events_before, events_after, "the picker is read-only");
    // Another user's coupons never show.
    let r = options(&app, "u2", normal_cart(40_000, "phones")).await;
    assert_eq!(
        r.body,
        json!({"best": null, "usable": [], "unusable": [],
            "expiring_soon": {"count": 0, "earliest_ends_at": null, "total_value_cents": 0},
            "reminder_popups": []})
    );
}

/// A presale cart on a `policy` campaign whose window opens in an hour; u1
/// holds a 50-yuan coupon ending in 30 minutes and a 10-yuan one ending in
/// 10 days.
async fn presale_picker(app: &TestApp, policy: &str) -> (String, String, Value) {
    let dying = coupon(
        app,
        "u1",
        json!({"valid_seconds": 1800, "min_order_cents": 0}),
    )
    .await;
    let lasting = coupon(
        app,
        "u1",
        json!({"value_cents": 1000, "min_order_cents": 0}),
    )
    .await;
    let cmp = app.campaign(policy, 3600, 3600).await;
    let r = options(
        app,
        "u1",
        json!({"kind": "presale", "category": "phones", "total_cents": 39_900,
               "deposit_cents": 10_000, "campaign_id": cmp["id"]}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    (dying, lasting, r.body)
}

#[tokio::test]
async fn under_strict_a_coupon_dying_before_the_final_payment_is_usable_with_a_warning_and_never_best()
 {
    let app = spawn_app().await;
    let (dying, lasting, body) = presale_picker(&app, "strict").await;
    assert_eq!(ids(&body["usable"]), vec![dying, lasting.clone()]);
    assert_eq!(
        body["usable"][0]["warning"]["code"],
        "expires_before_final_payment"
    );
    let message = body["usable"][0]["warning"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(message.contains("(UTC"), "{message}");
    assert!(body["usable"][1]["warning"].is_null());
    assert_eq!(body["best"], json!(lasting));
}

#[tokio::test]
async fn under_swap_or_compensate_the_warning_says_it_may_be_replaced_and_under_lock_there_is_none()
{
    let app = spawn_app().await;
    let (_, lasting, body) = presale_picker(&app, "swap_or_compensate").await;
    assert_eq!(
        body["usable"][0]["warning"]["code"],
        "may_be_replaced_at_final_payment"
    );
    assert_eq!(body["best"], json!(lasting));
    let app = spawn_app().await;
    let (dying, _, body) = presale_picker(&app, "lock").await;
    assert!(body["usable"][0]["warning"].is_null());
    assert!(body["usable"][1]["warning"].is_null());
    assert_eq!(body["best"], json!(dying));
}

#[tokio::test]
async fn a_presale_discount_is_capped_by_what_the_deposit_leaves() {
    let app = spawn_app().await;
    let id = coupon(
        &app,
        "u1",
        json!({"value_cents": 8000, "min_order_cents": 0}),
    )
    .await;
    let cmp = app.campaign("lock", 3600, 3600).await;
    let r = options(
        &app,
        "u1",
        json!({"kind": "presale", "category": "phones", "total_cents": 10_000,
               "deposit_cents": 5_000, "campaign_id": cmp["id"]}),
    )
    .await;
    assert_eq!(r.body["usable"][0]["coupon"]["id"], json!(id));
    assert_eq!(r.body["usable"][0]["discount_cents"], 5000);
}

#[tokio::test]
async fn bad_fields_are_400_with_the_field_and_an_unknown_campaign_is_404() {
    let app = spawn_app().await;
    let cases = [
        (json!({"category": "x", "total_cents": 100}), "kind"),
        (json!({"kind": "layaway", "total_cents": 100}), "kind"),
        // Neither `total_cents` nor `lines`: the contract names `lines`
        // (API.md, Carts: "both forms, or neither").
        (json!({"kind": "normal"}), "lines"),
        (json!({"kind": "normal", "total_cents": -1}), "total_cents"),
        (json!({"kind": "normal", "total_cents": 0}), "total_cents"),
        (
            json!({"kind": "normal", "total_cents": 100, "campaign_id": "cmp_x"}),
            "campaign_id",
        ),
        (
            json!({"kind": "presale", "total_cents": 100, "deposit_cents": 10}),
            "campaign_id",
        ),
        (
            json!({"kind": "presale", "total_cents": 100, "campaign_id": "c", "deposit_cents": 101}),
            "deposit_cents",
        ),
        (
            json!({"kind": "normal", "total_cents": 100, "category": "x".repeat(65)}),
            "category",
        ),
    ];
    for (body, field) in cases {
        let r = options(&app, "u1", body.clone()).await;
        assert_eq!(
            (r.status, r.code(), r.field()),
            (400, "invalid_request", field),
            "{body}"
        );
    }
    let r = options(&app, "u 1", normal_cart(100, "x")).await;
    assert_eq!((r.status, r.field()), (400, "user_id"));
    let r = app
        .post_raw(
            "/api/v1/users/u1/coupon-options",
            "{not json",
            &[("authorization", &format!("Bearer {}", crate::common::TOKEN))],
        )
        .await;
    assert_eq!(r.status, 400);
    let r = options(
        &app,
        "u1",
        json!({"kind": "presale", "total_cents": 100, "deposit_cents": 10, "campaign_id": "cmp_nope"}),
    )
    .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
}

#[tokio::test]
async fn a_campaign_whose_final_payment_has_closed_is_refused_like_an_order() {
    let app = spawn_app().await;
    coupon(&app, "u1", json!({})).await;
    let cmp = app.campaign("lock", 60, 60).await;
    app.advance(121);
    let cart = json!({"kind": "presale", "category": "phones", "total_cents": 39_900,
                      "deposit_cents": 10_000, "campaign_id": cmp["id"]});
    let r = options(&app, "u1", cart).await;
    assert_eq!((r.status, r.code()), (409, "outside_payment_window"));
}

// ---------------------------------------------------------------------
// The property: the picker and the order agree on every coupon.

/// How long a generated coupon lives, relative to the picker's moment.
#[derive(Debug, Clone, Copy)]
enum Life {
    /// Ten days: alive through any presale window here.
    Long,
    /// Ends in 30 minutes: before the campaign's window opens (in 1 h).
    Short,
    /// Starts in an hour.
    NotStarted,
    /// Ended a second before the picker asks (still stored `available`).
    JustEnded,
}

#[derive(Debug, Clone)]
struct CouponCase {
    percent: bool,
    value_cents: i64,
    percent_off: i64,
    cap_cents: Option<i64>,
    /// 0: no minimum; 1: exactly the total; 2: one cent above; 3: one cent
    /// below; 4: `min_random`.
    min_rule: u8,
    min_random: i64,
    /// 0: every category; 1: phones; 2: shoes; 3: phones and shoes.
    categories: u8,
    life: Life,
}

#[derive(Debug, Clone)]
struct Case {
    coupons: Vec<CouponCase>,
    category: &'static str,
    total_cents: i64,
    /// (policy, deposit in per mille of the total).
    presale: Option<(&'static str, i64)>,
}

fn coupon_case() -> impl Strategy<Value = CouponCase> {
    (
        any::<bool>(),
        1i64..50_000,
        1i64..=100,
        proptest::option::of(1i64..20_000),
        0u8..5,
        0i64..300_000,
        0u8..4,
        prop_oneof![
            4 => Just(Life::Long),
            2 => Just(Life::Short),
            1 => Just(Life::NotStarted),
            1 => Just(Life::JustEnded),
        ],
    )
        .prop_map(
            |(
                percent,
                value_cents,
                percent_off,
                cap_cents,
                min_rule,
                min_random,
                categories,
                life,
            )| {
                CouponCase {
                    percent,
                    value_cents,
                    percent_off,
                    cap_cents,
                    min_rule,
                    min_random,
                    categories,
                    life,
                }
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(coupon_case(), 1..=6),
        prop_oneof![Just("phones"), Just("shoes"), Just("books")],
        1i64..200_000,
        proptest::option::of((
            prop_oneof![Just("lock"), Just("strict"), Just("swap_or_compensate")],
            1i64..=1000,
        )),
    )
        .prop_map(|(coupons, category, total_cents, presale)| Case {
            coupons,
            category,
            total_cents,
            presale,
        })
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), TestCaseError> {
    if ok {
        Ok(())
    } else {
        Err(TestCaseError::fail(what()))
    }
}

async fn picker_agrees_with_orders(case: Case) -> Result<(), TestCaseError> {
    let app = spawn_app().await;
    let user = "shopper";
    let total = case.total_cents;
    let mut alive = BTreeSet::new();
    let mut short = BTreeSet::new();
    let mut ending = Vec::new();
    for (i, c) in case.coupons.iter().enumerate() {
        let min_order = match c.min_rule {
            0 => 0,
            1 => total,
            2 => total + 1,
            3 => (total - 1).max(0),
            _ => c.min_random,
        };
        let categories = match c.categories {
            0 => json!([]),
            1 => json!(["phones"]),
            2 => json!(["shoes"]),
            _ => json!(["phones", "shoes"]),
        };
        let mut t = merge(
            template_body(),
            json!({"name": format!("t{i}"), "min_order_cents": min_order, "categories": categories}),
        );
        if c.percent {
            t = merge(
                t,
                json!({"kind": "percent", "value_cents": null, "percent_off": c.percent_off,
                       "max_discount_cents": c.cap_cents}),
            );
        } else {
            t = merge(t, json!({"value_cents": c.value_cents}));
        }
        t = match c.life {
            Life::Long => t,
            Life::Short => merge(t, json!({"valid_seconds": 1800})),
            Life::NotStarted => merge(
                t,
                json!({"valid_seconds": null, "valid_from": app.at(3600), "valid_until": app.at(20 * 86_400)}),
            ),
            Life::JustEnded => merge(t, json!({"valid_seconds": 1})),
        };
        let made = app.post("/api/v1/templates", t).await;
        check(made.status == 201, || format!("template: {}", made.text))?;
        let claimed = app.claim(user, &made.id()).await;
        let id = claimed["id"].as_str().unwrap_or_default().to_string();
        match c.life {
            Life::JustEnded => ending.push(id),
            Life::Short => {
                short.insert(id.clone());
                alive.insert(id);
            }
            Life::Long | Life::NotStarted => {
                alive.insert(id);
            }
        }
    }
    let campaign = match case.presale {
        Some((policy, _)) => Some(app.campaign(policy, 3600, 3600).await["id"].clone()),
        None => None,
    };
    // Every coupon is claimed; let the one-second coupons end.
    app.advance(2);
    let deposit = case
        .presale
        .map(|(_, per_mille)| (total * per_mille / 1000).max(1))
        .unwrap_or(0);
    let cart = match &campaign {
        Some(cmp) => json!({"kind": "presale", "category": case.category, "total_cents": total,
                            "deposit_cents": deposit, "campaign_id": cmp}),
        None => json!({"kind": "normal", "category": case.category, "total_cents": total}),
    };
    let r = options(&app, user, cart.clone()).await;
    check(r.status == 200, || format!("picker: {}", r.text))?;
    let usable = r.body["usable"].as_array().cloned().unwrap_or_default();
    let unusable = r.body["unusable"].as_array().cloned().unwrap_or_default();

    // Exactly the coupons whose effective status is available, once each.
    let mut seen: Vec<String> = ids(&r.body["usable"]);
    seen.extend(ids(&r.body["unusable"]));
    let seen_set: BTreeSet<String> = seen.iter().cloned().collect();
    check(seen.len() == seen_set.len() && seen_set == alive, || {
        format!("covered {seen:?}, alive {alive:?}, ended {ending:?}")
    })?;

    // Sorted, and the best is the first without a warning.
    for pair in usable.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let (da, db) = (a["discount_cents"].as_i64(), b["discount_cents"].as_i64());
        let ordered = da > db
            || (da == db && a["coupon"]["ends_at"].as_str() <= b["coupon"]["ends_at"].as_str());
        check(ordered, || format!("out of order: {a} before {b}"))?;
    }
    let best = usable
        .iter()
        .find(|u| u["warning"].is_null())
        .map(|u| u["coupon"]["id"].clone())
        .unwrap_or(Value::Null);
    check(r.body["best"] == best, || format!("best: {}", r.text))?;

    // Every usable coupon is accepted with that discount; a presale order
    // snapshots it at the deposit payment.
    for (n, u) in usable.iter().enumerate() {
        let id = u["coupon"]["id"].as_str().unwrap_or_default();
        let order_no = format!("OK-{n}");
        let body = merge(
            cart.clone(),
            json!({"order_no": order_no, "user_id": user, "coupon_id": id}),
        );
        let o = app.order(body).await;
        check(o.status == 201, || {
            format!("{id} usable but refused: {}", o.text)
        })?;
        check(
            o.body["coupon_discount_cents"] == u["discount_cents"],
            || {
                format!(
                    "picker {} vs order {}",
                    u["discount_cents"], o.body["coupon_discount_cents"]
                )
            },
        )?;
        if campaign.is_some() {
            let d = app
                .post(
                    &format!("/api/v1/orders/{order_no}/deposit-payment"),
                    json!({}),
                )
                .await;
            check(d.status == 200, || format!("deposit refused: {}", d.text))?;
            check(
                d.body["discount_snapshot_cents"] == u["discount_cents"],
                || {
                    format!(
                        "picker {} vs snapshot {}",
                        u["discount_cents"], d.body["discount_snapshot_cents"]
                    )
                },
            )?;
        }
        // A warning exactly for the coupons ending before the window
        // opens (in an hour), and never under `lock`.
        let warned = case.presale.is_some_and(|(p, _)| p != "lock") && short.contains(id);
        check(u["warning"].is_null() != warned, || {
            format!("warning {} for {id}", u["warning"])
        })?;
    }
    // Every unusable coupon is refused with that code.
    for (n, u) in unusable.iter().enumerate() {
        let id = u["coupon"]["id"].as_str().unwrap_or_default();
        let body = merge(
            cart.clone(),
            json!({"order_no": format!("NO-{n}"), "user_id": user, "coupon_id": id}),
        );
        let o = app.order(body).await;
        check(o.status == 409 && o.code() == u["reason"], || {
            format!(
                "picker says {} for {id}, the order: {} {}",
                u["reason"], o.status, o.text
            )
        })?;
        check(
            (u["reason"] == "threshold_not_met") == u["shortfall_cents"].is_i64(),
            || format!("shortfall: {u}"),
        )?;
    }
    Ok(())
}

/// 24 cases by default (each a fresh database); `PROPTEST_CASES=N` runs more.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_usable_coupon_is_accepted_with_its_discount_and_every_unusable_one_is_refused_with_its_reason(
        case in case()
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for this case");
        rt.block_on(picker_agrees_with_orders(case))?;
    }
}

#[tokio::test]
async fn expiring_soon_counts_the_usable_coupons_ending_within_48_hours_and_moves_with_the_clock() {
    let app = spawn_app().await;
    let cart = normal_cart(50_000, "x");
    let none = options(&app, "u9", cart.clone()).await;
    assert_eq!(none.status, 200, "{}", none.text);
    assert_eq!(
        none.body["expiring_soon"],
        json!({"count": 0, "earliest_ends_at": null, "total_value_cents": 0})
    );
    let hour = 3600;
    let in_47h = coupon(
        &app,
        "u1",
        json!({"value_cents": 1000, "min_order_cents": 0, "valid_seconds": 47 * hour}),
    )
    .await;
    let in_49h = coupon(
        &app,
        "u1",
        json!({"value_cents": 2000, "min_order_cents": 0, "valid_seconds": 49 * hour}),
    )
    .await;
    let unusable_in_1h = coupon(
        &app,
        "u1",
        json!({"value_cents": 3000, "min_order_cents": 1_000_000, "valid_seconds": hour}),
    )
    .await;
    let ends = |c: &Value| c["ends_at"].as_str().unwrap_or_default().to_string();
    let ends_47 = ends(&app.coupon(&in_47h).await);
    let ends_49 = ends(&app.coupon(&in_49h).await);

    let r = options(&app, "u1", cart.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(ids(&r.body["unusable"]).contains(&unusable_in_1h));
    assert_eq!(
        r.body["expiring_soon"],
        json!({"count": 1, "earliest_ends_at": ends_47, "total_value_cents": 1000})
    );

    app.advance(2 * hour);
    let r = options(&app, "u1", cart.clone()).await;
    assert_eq!(
        r.body["expiring_soon"],
        json!({"count": 2, "earliest_ends_at": ends_47, "total_value_cents": 3000})
    );

    app.advance(46 * hour);
    let r = options(&app, "u1", cart).await;
    assert_eq!(
        r.body["expiring_soon"],
        json!({"count": 1, "earliest_ends_at": ends_49, "total_value_cents": 2000})
    );
}
