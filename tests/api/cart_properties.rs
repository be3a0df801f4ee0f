//! Random carts and random refunds against the service on the store under
//! test: the split of a discount adds up exactly and gives no line more
//! than its amount, the picker's discount is exactly what the order
//! snapshots, and any sequence of partial refunds ends with every line's
//! payable amount refunded to the cent and the coupon returned exactly
//! once, with the last unit it discounted.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::common::TestService;
use couponkeeper::domain::cart::{CartInput, CartSpec, OrderInput, OrderSpec};
use couponkeeper::domain::ids::{OrderNo, UserId};
use couponkeeper::domain::line::LineInput;
use couponkeeper::domain::refund::{RefundInput, RefundLineInput, RefundSpec};
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::service::{Executed, ServiceError};

/// A coupon's terms: fixed `value` or `percent` (with a cap), a minimum
/// spend, and whether it covers only category `a`.
#[derive(Debug, Clone)]
struct Terms {
    percent: Option<(i64, Option<i64>)>,
    value: i64,
    min_order: i64,
    only_a: bool,
    clawback: bool,
}

fn terms() -> impl Strategy<Value = Terms> {
    (
        proptest::option::of((1i64..=100, proptest::option::of(1i64..=30_000))),
        1i64..=60_000,
        prop_oneof![Just(0i64), 1i64..=200_000],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(percent, value, min_order, only_a, clawback)| Terms {
            percent,
            value,
            min_order,
            only_a,
            clawback,
        })
}

/// 1-50 lines of categories `a`/`b`, awkward quantities and prices (primes,
/// ones, zeros).
fn cart() -> impl Strategy<Value = Vec<(bool, i64, i64)>> {
    proptest::collection::vec(
        (
            any::<bool>(),
            prop_oneof![Just(1i64), Just(3), Just(7), 1i64..=20],
            prop_oneof![
                Just(0i64),
                Just(1),
                Just(9_973),
                Just(33_333),
                0i64..=100_000
            ],
        ),
        1..=50,
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

fn lines_input(lines: &[(bool, i64, i64)]) -> Vec<LineInput> {
    lines
        .iter()
        .enumerate()
        .map(|(i, (a, q, p))| LineInput {
            line_id: Some(format!("L{i}")),
            sku: Some(format!("S{}", i % 7)),
            category: Some(if *a { "a" } else { "b" }.into()),
            shop_id: None,
            quantity: Some(*q),
            unit_price_cents: Some(*p),
        })
        .collect()
}

async fn run_case(
    t: Terms,
    lines: Vec<(bool, i64, i64)>,
    refunds: Vec<Vec<(usize, i64)>>,
) -> Result<(), String> {
    let total: i64 = lines.iter().map(|(_, q, p)| q * p).sum();
    if total == 0 {
        return Ok(());
    }
    let ts = TestService::start().await;
    let svc = ts.service.clone();
    let ctx = ts.ctx();
    let user = UserId::parse("u1").map_err(|e| e.message)?;
    let (kind, value, percent, cap) = match t.percent {
        Some((p, cap)) => ("percent", None, Some(p), cap),
        None => ("fixed", Some(t.value), None, None),
    };
    let template = fresh(
        svc.create_template(
            &ctx,
            None,
            TemplateInput {
                name: Some("prop".into()),
                kind: Some(kind.into()),
                value_cents: value,
                percent_off: percent,
                max_discount_cents: cap,
                min_order_cents: Some(t.min_order),
                valid_seconds: Some(86_400),
                categories: t.only_a.then(|| vec!["a".to_string()]),
                partial_refund_rule: Some(
                    if t.clawback {
                        "clawback"
                    } else {
                        "proportional"
                    }
                    .into(),
                ),
                ..TemplateInput::default()
            },
        )
        .await,
    )?;
    let coupon = fresh(svc.claim(&ctx, None, user.clone(), template.id).await)?;
    let cart = CartSpec::parse(CartInput {
        kind: Some("normal".into()),
        lines: Some(lines_input(&lines)),
        ..CartInput::default()
    })
    .map_err(|e| format!("{}: {}", e.field, e.message))?;
    let picked = svc
        .coupon_options(user.clone(), cart)
        .await
        .map_err(|e| format!("{e:?}"))?;
    let order = svc
        .create_order(
            &ctx,
            None,
            OrderSpec::parse(OrderInput {
                order_no: Some("N1".into()),
                user_id: Some("u1".into()),
                kind: Some("normal".into()),
                lines: Some(lines_input(&lines)),
                coupon_id: Some(coupon.id.to_string()),
                coupon_ids: None,
                ..OrderInput::default()
            })
            .map_err(|e| format!("{}: {}", e.field, e.message))?,
        )
        .await;
    let order = match (picked.usable.first(), fresh(order)) {
        (Some(u), Ok(o)) => {
            if o.coupon_discount_cents != u.discount_cents {
                return Err(format!(
                    "the picker said {} but the order snapshots {}",
                    u.discount_cents.get(),
                    o.coupon_discount_cents.get()
                ));
            }
            o
        }
        (None, Err(code)) => {
            let said = picked
                .unusable
                .first()
                .map(|u| u.reason.clone())
                .unwrap_or_default();
            if said != code {
                return Err(format!("the picker said {said} but the order said {code}"));
            }
            return Ok(());
        }
        (u, o) => {
            return Err(format!(
                "picker and order disagree: {:?} / {:?}",
                u.map(|u| u.discount_cents),
                o.map(|o| o.coupon_discount_cents)
            ));
        }
    };
    let split: i64 = order
        .lines
        .iter()
        .flat_map(|l| l.discounts.iter().map(|d| d.cents.get()))
        .sum();
    if split != order.coupon_discount_cents.get() {
        return Err(format!(
            "the split adds up to {split}, the discount is {}",
            order.coupon_discount_cents.get()
        ));
    }
    for l in &order.lines {
        let share: i64 = l.discounts.iter().map(|d| d.cents.get()).sum();
        if share > l.amount_cents.get() {
            return Err(format!(
                "line {} gets {share} of {}",
                l.line_id,
                l.amount_cents.get()
            ));
        }
    }
    let no = OrderNo::parse("N1").map_err(|e| e.message)?;
    fresh(svc.pay(&ctx, None, no.clone()).await)?;
    let mut left: Vec<i64> = lines.iter().map(|(_, q, _)| *q).collect();
    // Random refunds, then one of everything left.
    let mut plan: Vec<Vec<(usize, i64)>> = refunds;
    plan.push(left.iter().enumerate().map(|(i, q)| (i, *q)).collect());
    let mut returned = 0;
    for (n, refund) in plan.into_iter().enumerate() {
        let mut asked: Vec<(usize, i64)> = Vec::new();
        for (i, q) in refund {
            let i = i % lines.len();
            let q = q.min(
                left[i]
                    - asked
                        .iter()
                        .filter(|(j, _)| *j == i)
                        .map(|(_, q)| q)
                        .sum::<i64>(),
            );
            if q > 0 && !asked.iter().any(|(j, _)| *j == i) {
                asked.push((i, q));
            }
        }
        if asked.is_empty() {
            continue;
        }
        let spec = RefundSpec::parse(RefundInput {
            refund_id: Some(format!("r{n}")),
            lines: Some(
                asked
                    .iter()
                    .map(|(i, q)| RefundLineInput {
                        line_id: Some(format!("L{i}")),
                        quantity: Some(*q),
                    })
                    .collect(),
            ),
            reason: Some("prop".into()),
        })
        .map_err(|e| format!("{}: {}", e.field, e.message))?;
        let r = fresh(svc.refund_lines(&ctx, None, no.clone(), spec).await)?;
        for (i, q) in &asked {
            left[*i] -= q;
        }
        if r.coupons.iter().any(|c| c.outcome.as_str() == "returned") {
            returned += 1;
            let discounted_left: i64 = order
                .lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.discounts.iter().any(|d| !d.cents.is_zero()))
                .map(|(i, _)| left[i])
                .sum();
            if discounted_left != 0 && split != 0 {
                return Err(format!(
                    "the coupon came back with {discounted_left} discounted units kept"
                ));
            }
        }
    }
    let end = svc.get_order(&no).await.map_err(|e| format!("{e:?}"))?;
    if end.status.as_str() != "refunded" {
        return Err(format!(
            "every unit refunded, yet the order is {}",
            end.status
        ));
    }
    for l in &end.lines {
        if l.refunded_cents != l.payable_cents {
            return Err(format!(
                "line {} refunded {} of {} payable",
                l.line_id,
                l.refunded_cents.get(),
                l.payable_cents.get()
            ));
        }
    }
    let payable: i64 = end.lines.iter().map(|l| l.payable_cents.get()).sum();
    let all = svc.refunds_of(&no).await.map_err(|e| format!("{e:?}"))?;
    let clawed: i64 = all.iter().map(|r| r.clawback_cents.get()).sum();
    // The coupon's share of the refunded units, summed over the refunds,
    // is its whole discount (what the report counts by day).
    let back: i64 = all
        .iter()
        .flat_map(|r| r.coupons.iter())
        .map(|c| c.discount_cents.get())
        .sum();
    if back != split {
        return Err(format!(
            "the refunds gave back {back} of the coupon's discount, not its {split}"
        ));
    }
    // What reconciliation reads of the order agrees with itself.
    let report = svc.reconcile().await.map_err(|e| format!("{e:?}"))?;
    if let Some(a) = report.anomalies.first() {
        return Err(format!("reconciliation found {}: {}", a.kind, a.detail));
    }
    if end.refunded_cents.get() + clawed != payable {
        return Err(format!(
            "refunded {} + clawed back {clawed} != payable {payable}",
            end.refunded_cents.get()
        ));
    }
    if returned != 1 {
        return Err(format!("the coupon came back {returned} times"));
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
    fn any_cart_splits_exactly_and_any_refunds_give_back_exactly_what_was_paid(
        t in terms(),
        lines in cart(),
        refunds in proptest::collection::vec(
            proptest::collection::vec((0usize..50, 1i64..=20), 1..=4), 0..=6),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime for this case");
        rt.block_on(run_case(t, lines, refunds)).map_err(TestCaseError::fail)?;
    }
}
