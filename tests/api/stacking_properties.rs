//! Random carts over three shops and random sets of platform and shop
//! coupons against the service on the store under test: the picker's
//! `best_combination` is the best of every allowed combination of the
//! usable coupons (found here by trying every subset), and `POST /orders`
//! with its `coupon_ids` snapshots exactly its discount and split.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::common::TestService;
use couponkeeper::domain::cart::{CartInput, CartSpec, OrderInput, OrderSpec};
use couponkeeper::domain::discount::{CouponTerms, DiscountRule, LineScope};
use couponkeeper::domain::ids::UserId;
use couponkeeper::domain::line::{Line, LineInput};
use couponkeeper::domain::money::Cents;
use couponkeeper::domain::stacking::{Offer, apply, check_combinable};
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::domain::time::parse_rfc3339;
use couponkeeper::service::views::CouponView;
use couponkeeper::service::{Executed, ServiceError};

const SHOPS: [&str; 3] = ["A", "B", "C"];

/// A coupon: its shop (`None`: platform), fixed `value` or `percent`, a
/// minimum spend, whether it covers only category `a`, whether it stacks,
/// and how many days it lives (the tie-break on ends).
#[derive(Debug, Clone)]
struct Terms {
    shop: Option<usize>,
    percent: Option<i64>,
    value: i64,
    min_order: i64,
    only_a: bool,
    stackable: bool,
    days: i64,
}

fn terms() -> impl Strategy<Value = Terms> {
    (
        proptest::option::of(0usize..3),
        proptest::option::of(1i64..=30),
        prop_oneof![Just(1_000i64), Just(2_000), 1i64..=20_000],
        prop_oneof![Just(0i64), Just(10_000), 1i64..=60_000],
        proptest::bool::weighted(0.2),
        proptest::bool::weighted(0.9),
        1i64..=3,
    )
        .prop_map(
            |(shop, percent, value, min_order, only_a, stackable, days)| Terms {
                shop,
                percent,
                value,
                min_order,
                only_a,
                stackable,
                days,
            },
        )
}

/// 1-8 lines: shop, category `a`/`b`, quantity, unit price.
fn cart() -> impl Strategy<Value = Vec<(usize, bool, i64, i64)>> {
    proptest::collection::vec(
        (
            0usize..3,
            any::<bool>(),
            1i64..=3,
            prop_oneof![Just(0i64), Just(9_999), 1i64..=30_000],
        ),
        1..=8,
    )
}

fn fresh<T>(r: Result<Executed<T>, ServiceError>) -> Result<T, String> {
    match r {
        Ok(Executed::Fresh(v)) => Ok(v),
        Ok(Executed::Replayed { status, .. }) => Err(format!("unexpected replay {status}")),
        Err(ServiceError::Refused { refusal, .. }) => Err(refusal.code().to_string()),
        Err(e) => Err(format!("{e:?}")),
    }
}

fn lines_input(lines: &[(usize, bool, i64, i64)]) -> Vec<LineInput> {
    lines
        .iter()
        .enumerate()
        .map(|(i, (shop, a, q, p))| LineInput {
            line_id: Some(format!("L{i}")),
            sku: None,
            category: Some(if *a { "a" } else { "b" }.into()),
            shop_id: Some(SHOPS[*shop].into()),
            quantity: Some(*q),
            unit_price_cents: Some(*p),
        })
        .collect()
}

/// A coupon's terms as its API object gives them.
fn terms_of(c: &CouponView) -> CouponTerms {
    CouponTerms {
        rule: DiscountRule::from_stored(
            c.kind,
            c.value_cents.map(Cents::get),
            c.percent_off,
            c.max_discount_cents.map(Cents::get),
        ),
        min_order: c.min_order_cents,
        categories: c.categories.clone(),
        scope: LineScope {
            skus: c.skus.clone(),
            exclude_skus: c.exclude_skus.clone(),
            shop_id: c.shop_id.clone(),
        },
        refund_rule: c.partial_refund_rule,
        stackable: c.stackable,
    }
}

/// A combination's total discount and its coupons' ends, sorted.
type Rank = (Cents, Vec<DateTime<Utc>>);

/// How a combination ranks (larger is better): total, then fewer
/// coupons, then the sorted ends, smaller first.
fn better(a: &Rank, b: &Rank) -> bool {
    if a.0 != b.0 {
        return a.0 > b.0;
    }
    if a.1.len() != b.1.len() {
        return a.1.len() < b.1.len();
    }
    a.1 < b.1
}

async fn run_case(coupons: Vec<Terms>, lines: Vec<(usize, bool, i64, i64)>) -> Result<(), String> {
    let total: i64 = lines.iter().map(|(_, _, q, p)| q * p).sum();
    if total == 0 {
        return Ok(());
    }
    let ts = TestService::start().await;
    let svc = ts.service.clone();
    let ctx = ts.ctx();
    let user = UserId::parse("u1").map_err(|e| e.message)?;
    for (i, t) in coupons.iter().enumerate() {
        let (kind, value, percent) = match t.percent {
            Some(p) => ("percent", None, Some(p)),
            None => ("fixed", Some(t.value), None),
        };
        let template = fresh(
            svc.create_template(
                &ctx,
                None,
                TemplateInput {
                    name: Some(format!("prop {i}")),
                    kind: Some(kind.into()),
                    value_cents: value,
                    percent_off: percent,
                    min_order_cents: Some(t.min_order),
                    valid_seconds: Some(t.days * 86_400),
                    categories: t.only_a.then(|| vec!["a".to_string()]),
                    shop_id: t.shop.map(|s| SHOPS[s].to_string()),
                    stackable: Some(t.stackable),
                    ..TemplateInput::default()
                },
            )
            .await,
        )?;
        fresh(svc.claim(&ctx, None, user.clone(), template.id).await)?;
    }
    let cart = CartSpec::parse(CartInput {
        kind: Some("normal".into()),
        lines: Some(lines_input(&lines)),
        ..CartInput::default()
    })
    .map_err(|e| format!("{}: {}", e.field, e.message))?;
    let parsed: Vec<Line> = cart.lines.clone();
    let picked = svc
        .coupon_options(user.clone(), cart)
        .await
        .map_err(|e| format!("{e:?}"))?;

    // Every subset of the usable coupons, by brute force.
    let usable: Vec<_> = picked.usable.iter().map(|u| &u.coupon).collect();
    let all_terms: Vec<CouponTerms> = usable.iter().map(|c| terms_of(c)).collect();
    let ends: Vec<DateTime<Utc>> = usable
        .iter()
        .map(|c| parse_rfc3339(&c.ends_at).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut best: Option<(Rank, u32)> = None;
    let n = usable.len().min(10);
    for mask in 1u32..(1 << n) {
        let chosen: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let offers: Vec<Offer<'_>> = chosen
            .iter()
            .map(|&i| Offer {
                terms: &all_terms[i],
                stackable: all_terms[i].stackable,
                ends_at: ends[i],
            })
            .collect();
        if check_combinable(&offers).is_err() {
            continue;
        }
        let Ok(applied) = apply(&parsed, &offers, Cents::from_stored(total)) else {
            continue;
        };
        let mut e: Vec<DateTime<Utc>> = chosen.iter().map(|&i| ends[i]).collect();
        e.sort();
        let rank = (applied.total, e);
        if best.as_ref().is_none_or(|(b, _)| better(&rank, b)) {
            best = Some((rank, mask));
        }
    }
    let said = picked.best_combination.as_ref().and_then(|b| b.as_ref());
    let (want, mask) = match (&best, said) {
        (None, None) => return Ok(()),
        (Some((rank, mask)), Some(s)) => {
            if s.discount_cents != rank.0 {
                return Err(format!(
                    "the picker's best gives {} but the best of every combination gives {}",
                    s.discount_cents.get(),
                    rank.0.get()
                ));
            }
            (rank, *mask)
        }
        (b, s) => {
            return Err(format!(
                "the picker and the brute force disagree: {:?} / {:?}",
                b.as_ref().map(|(r, _)| r.0),
                s.map(|s| s.discount_cents)
            ));
        }
    };
    let said = said.ok_or("no combination")?;
    let mut got_ends: Vec<DateTime<Utc>> = said
        .coupon_ids
        .iter()
        .filter_map(|id| usable.iter().position(|c| c.id == *id))
        .map(|i| ends[i])
        .collect();
    got_ends.sort();
    if got_ends != want.1 {
        return Err(format!(
            "the picker chose {} coupons ending {got_ends:?}; the tie-break wants {:?} (mask {mask:b})",
            said.coupon_ids.len(),
            want.1
        ));
    }

    // The order snapshots exactly that.
    let order = fresh(
        svc.create_order(
            &ctx,
            None,
            OrderSpec::parse(OrderInput {
                order_no: Some("N1".into()),
                user_id: Some("u1".into()),
                kind: Some("normal".into()),
                lines: Some(lines_input(&lines)),
                coupon_ids: Some(said.coupon_ids.iter().map(|c| c.to_string()).collect()),
                ..OrderInput::default()
            })
            .map_err(|e| format!("{}: {}", e.field, e.message))?,
        )
        .await,
    )?;
    if order.coupon_discount_cents != said.discount_cents {
        return Err(format!(
            "the picker said {} but the order snapshots {}",
            said.discount_cents.get(),
            order.coupon_discount_cents.get()
        ));
    }
    let shares = |ds: &[couponkeeper::service::views::LineDiscountView]| -> HashMap<String, i64> {
        ds.iter()
            .map(|d| (d.coupon_id.to_string(), d.cents.get()))
            .collect()
    };
    for (l, want) in order.lines.iter().zip(&said.lines) {
        if shares(&l.discounts) != shares(&want.discounts) || l.payable_cents != want.payable_cents
        {
            return Err(format!(
                "line {}: the order split {:?} (payable {}), the picker {:?} (payable {})",
                l.line_id,
                shares(&l.discounts),
                l.payable_cents.get(),
                shares(&want.discounts),
                want.payable_cents.get()
            ));
        }
    }
    let first = said.coupon_ids.first().map(|c| c.to_string());
    if order.coupon_id.as_ref().map(|c| c.to_string()) != first {
        return Err("the order names another first coupon".into());
    }
    Ok(())
}

/// 12 cases by default (each one a fresh database); `PROPTEST_CASES=N`
/// runs more.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_best_combination_is_the_best_of_every_allowed_one_and_the_order_snapshots_it(
        coupons in proptest::collection::vec(terms(), 1..=7),
        lines in cart(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for this case");
        rt.block_on(run_case(coupons, lines)).map_err(TestCaseError::fail)?;
    }
}
