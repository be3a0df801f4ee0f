//! The order page's cart: its lines with each coupon's share, what is
//! payable and what was refunded ([`OrderLines`]), and its refunds by line
//! with their money, clawback and what each did to the coupon
//! ([`OrderRefunds`]). Coupons are named by code, never by id.

use std::collections::HashMap;

use leptos::prelude::*;

use super::components::Time;
use super::context::lang;
use super::i18n::Lang;
use super::layout::{actor_text, lock_status_label, reason_text};
use super::paths;
use crate::domain::ids::CouponId;
use crate::domain::money::Cents;
use crate::domain::refund::CouponRefundOutcome;
use crate::service::views::{OrderCouponView, OrderLineView, RefundView};

/// Coupon ids to the codes a page shows.
pub type CouponCodes = HashMap<String, String>;

fn code_of(l: Lang, codes: &CouponCodes, id: &str) -> String {
    codes
        .get(id)
        .cloned()
        .unwrap_or_else(|| l.t("coupon").to_string())
}

/// The order's lines: SKU, category, shop, quantity, unit price, each
/// coupon's share, payable, and (with `refunds`, the default) refunded
/// units and money.
#[component]
pub fn OrderLines(
    lines: Vec<OrderLineView>,
    codes: CouponCodes,
    #[prop(default = true)] refunds: bool,
) -> impl IntoView {
    let l = lang();
    let rows = lines
        .into_iter()
        .map(|line| {
            let shares = line
                .discounts
                .iter()
                .map(|d| {
                    let href = paths::coupon(&d.coupon_id);
                    let code = code_of(l, &codes, d.coupon_id.as_str());
                    view! {
                        <div class="nowrap"><a href=href class="mono">{code}</a>" "<span class="money">{d.cents.shown()}</span></div>
                    }
                })
                .collect_view();
            let refunded = (refunds && line.refunded_quantity > 0).then(|| {
                view! {
                    <span data-testid="line-refunded">
                        {crate::tr!(l, "line-units-refunded", n = line.refunded_quantity)}" · "
                        <span class="money">{line.refunded_cents.shown()}</span>
                    </span>
                }
            });
            let category = crate::i18n::names::category(l, &line.category);
            view! {
                <tr data-testid="order-line">
                    <td class="mono">{line.line_id.to_string()}</td>
                    <td class="mono">{line.sku.map(|s| s.to_string()).unwrap_or_else(|| "—".into())}</td>
                    <td>{category}</td>
                    <td class="mono">{line.shop_id.map(|s| s.to_string()).unwrap_or_else(|| "—".into())}</td>
                    <td class="num">{line.quantity}</td>
                    <td class="money">{line.unit_price_cents.shown()}</td>
                    <td>{shares}</td>
                    <td class="money" data-testid="line-payable">{line.payable_cents.shown()}</td>
                    {refunds.then(|| view! { <td>{refunded}</td> })}
                </tr>
            }
        })
        .collect_view();
    view! {
        <section aria-labelledby="order-lines">
            <h2 id="order-lines">{l.t("order-lines")}</h2>
            <div class="table-wrap"><table data-testid="order-lines">
                <thead><tr>
                    <th scope="col">{l.t("line")}</th>
                    <th scope="col">"SKU"</th>
                    <th scope="col">{l.t("category")}</th>
                    <th scope="col">{l.t("shop")}</th>
                    <th scope="col">{l.t("quantity")}</th>
                    <th scope="col">{l.t("unit-price")}</th>
                    <th scope="col">{l.t("coupon-share")}</th>
                    <th scope="col">{l.t("payable")}</th>
                    {refunds.then(|| view! { <th scope="col">{l.t("line-refunds")}</th> })}
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        </section>
    }
}

/// An order's coupons when it holds several (叠加): each by code, with
/// what it takes off and its lock state; nothing for one coupon or none
/// (the order's facts say those).
#[component]
pub fn OrderCoupons(coupons: Vec<OrderCouponView>, codes: CouponCodes) -> impl IntoView {
    let l = lang();
    if coupons.len() < 2 {
        return None;
    }
    let rows = coupons
        .into_iter()
        .map(|c| {
            let href = paths::coupon(&c.coupon_id);
            let code = code_of(l, &codes, c.coupon_id.as_str());
            view! {
                <tr data-testid="order-coupon">
                    <td><a href=href class="mono">{code}</a></td>
                    <td class="money" data-testid="order-coupon-discount">{c.discount_cents.shown()}</td>
                    <td data-testid="order-coupon-lock">{lock_status_label(l, c.lock_status)}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <section aria-labelledby="order-coupons">
            <h2 id="order-coupons">{l.t("order-coupons")}</h2>
            <div class="table-wrap"><table data-testid="order-coupons">
                <thead><tr>
                    <th scope="col">{l.t("coupon")}</th>
                    <th scope="col">{l.t("coupon-discount")}</th>
                    <th scope="col">{l.t("coupon-lock")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        </section>
    })
}

/// On a coupon's page: the lines of its order it discounted, each with
/// its share ("a · LIP × 2: ¥28.57"); nothing for a coupon on no line.
#[component]
pub fn CouponLines(lines: Vec<OrderLineView>, coupon_id: CouponId) -> impl IntoView {
    let l = lang();
    if lines.is_empty() {
        return None;
    }
    let items = lines
        .into_iter()
        .map(|line| {
            let share = line
                .discounts
                .iter()
                .filter(|d| d.coupon_id == coupon_id)
                .fold(Cents::ZERO, |sum, d| sum.saturating_add(d.cents));
            let what = crate::tr!(
                l,
                "coupon-line-share",
                line = line.line_id.to_string(),
                sku = line
                    .sku
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "—".into()),
                n = line.quantity,
                share = share.shown()
            );
            view! { <li data-testid="coupon-line">{what}</li> }
        })
        .collect_view();
    Some(view! {
        <dt>{l.t("coupon-lines")}</dt>
        <dd><ul class="plain">{items}</ul></dd>
    })
}

/// The order's refunds by line, oldest first; nothing when there is none.
#[component]
pub fn OrderRefunds(refunds: Vec<RefundView>, codes: CouponCodes) -> impl IntoView {
    let l = lang();
    if refunds.is_empty() {
        return None;
    }
    let rows = refunds
        .into_iter()
        .map(|r| {
            let lines = r
                .lines
                .iter()
                .map(|x| {
                    crate::tr!(
                        l,
                        "refund-line",
                        line = x.line_id.to_string(),
                        n = x.quantity,
                        amount = x.refund_cents.shown()
                    )
                })
                .collect::<Vec<_>>()
                .join(l.t("rule-separator"));
            let coupons = r
                .coupons
                .iter()
                .map(|c| {
                    let code = code_of(l, &codes, c.coupon_id.as_str());
                    let outcome = match c.outcome {
                        CouponRefundOutcome::Kept => l.t("refund-coupon-kept"),
                        CouponRefundOutcome::Returned => l.t("refund-coupon-returned"),
                    };
                    view! { <div>{code}" · "{outcome}</div> }
                })
                .collect_view();
            let id = if r.whole {
                l.t("whole-order-refund").to_string()
            } else {
                r.refund_id.to_string()
            };
            view! {
                <tr data-testid="refund">
                    <td class="nowrap"><Time at=r.at/></td>
                    <td class="mono">{id}</td>
                    <td>{lines}</td>
                    <td class="money" data-testid="refund-amount">{r.refund_cents.shown()}</td>
                    <td class="money">{(!r.clawback_cents.is_zero()).then(|| r.clawback_cents.shown())}</td>
                    <td>{coupons}</td>
                    <td>{actor_text(l, &r.actor)}" · "{reason_text(l, &r.reason)}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <section aria-labelledby="order-refunds">
            <h2 id="order-refunds">{l.t("refunds-by-line")}</h2>
            <div class="table-wrap"><table data-testid="refunds">
                <thead><tr>
                    <th scope="col">{l.t("when")}</th>
                    <th scope="col">{l.t("refund")}</th>
                    <th scope="col">{l.t("order-lines")}</th>
                    <th scope="col">{l.t("amount")}</th>
                    <th scope="col">{l.t("clawback")}</th>
                    <th scope="col">{l.t("coupon-4")}</th>
                    <th scope="col">{l.t("actor-and-reason")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        </section>
    })
}
