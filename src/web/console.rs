//! The support console's pages and actions. Each handler takes a
//! [`Staff`] (so it cannot run without a session), calls one service
//! function and renders; each action is a POST with a CSRF token that
//! answers with a redirect and a flash message.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use super::layout::{coupon_badge, enc, lock_status_label, opt_time, order_badge, time_text};
use crate::api::AppState;
use crate::service::views::{CampaignView, CouponView, EventView, OrderView};

/// The console's routes, all under `/console`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console", get(home))
        .route("/console/coupons/{id}", get(coupon_page))
        .route("/console/orders/{order_no}", get(order_page))
}

async fn home(staff: Staff) -> Response {
    let l = staff.lang;
    staff.page(
        l.t("客服控制台", "Support console"),
        view! {
            <section aria-labelledby="start-heading">
                <h2 id="start-heading">{l.t("从这里开始", "Start here")}</h2>
                <p>{l.t(
                    "在上方搜索框输入券码、券 ID、订单号或用户 ID，回车即可打开对应页面。按 / 键可随时聚焦搜索框。",
                    "Type a coupon code, coupon id, order number or user id into the search box above and press Enter. Press / anywhere to focus it.",
                )}</p>
                <ul class="links">
                    <li><a href="/console/coupons">{l.t("按条件筛选券（可导出 CSV）", "Filter coupons (with CSV export)")}</a></li>
                </ul>
            </section>
        },
    )
}

/// Money with its label, in a definition list.
fn money_row(l: Lang, label: &'static str, cents: i64) -> impl IntoView + use<> {
    view! { <dt>{label}</dt><dd class="money">{l.money(cents)}</dd> }
}

/// What a coupon takes off: `满300减50`, `9折 最高减30` / `50 off 300`.
pub fn coupon_terms_text(l: Lang, c: &CouponView) -> String {
    let threshold = (c.min_order_cents > 0).then(|| Lang::Zh.money(c.min_order_cents));
    match c.kind.as_str() {
        "percent" => {
            let pct = c.percent_off.unwrap_or(0);
            let cap = c
                .max_discount_cents
                .map(|m| {
                    l.pick(
                        format!("，最高减 {}", l.money(m)),
                        format!(", at most {}", l.money(m)),
                    )
                })
                .unwrap_or_default();
            let min = threshold
                .map(|t| l.pick(format!("满 {t} 可用，"), format!("orders from {t}: ")))
                .unwrap_or_default();
            l.pick(
                format!("{min}{pct}% 折扣{cap}"),
                format!("{min}{pct}% off{cap}"),
            )
        }
        _ => {
            let v = l.money(c.value_cents.unwrap_or(0));
            match threshold {
                Some(t) => l.pick(format!("满 {t} 减 {v}"), format!("{v} off orders from {t}")),
                None => l.pick(format!("无门槛减 {v}"), format!("{v} off, no minimum")),
            }
        }
    }
}

fn categories_text(l: Lang, cats: &[String]) -> String {
    if cats.is_empty() {
        l.t("全部品类", "every category").to_string()
    } else {
        cats.join(", ")
    }
}

/// The events table: when, from → to, action, actor, reason.
pub fn timeline(l: Lang, events: Vec<EventView>, show_subject: bool) -> impl IntoView + use<> {
    if events.is_empty() {
        return view! { <p class="note">{l.t("暂无记录。", "No events yet.")}</p> }.into_any();
    }
    let rows = events
        .into_iter()
        .map(|e| {
            let subject = if show_subject {
                Some(match (e.subject.as_str(), &e.coupon_id, &e.order_no) {
                    ("coupon", Some(id), _) => {
                        let href = format!("/console/coupons/{}", enc(id));
                        let label = l.pick(format!("券 {id}"), format!("coupon {id}"));
                        view! { <td><a href=href>{label}</a></td> }.into_any()
                    }
                    (_, _, Some(no)) => {
                        let href = format!("/console/orders/{}", enc(no));
                        let label = l.pick(format!("订单 {no}"), format!("order {no}"));
                        view! { <td><a href=href>{label}</a></td> }.into_any()
                    }
                    _ => view! { <td>"—"</td> }.into_any(),
                })
            } else {
                None
            };
            let change = format!("{} → {}", e.from.as_deref().unwrap_or("∅"), e.to);
            let at = time_text(&e.at);
            let reason = e.reason.unwrap_or_default();
            view! {
                <tr>
                    <td class="nowrap">{at}</td>
                    {subject}
                    <td class="nowrap">{change}</td>
                    <td>{e.action}</td>
                    <td>{e.actor}</td>
                    <td>{reason}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="timeline" data-testid="timeline">
                <thead><tr>
                    <th scope="col">{l.t("时间", "When")}</th>
                    {show_subject.then(|| view! { <th scope="col">{l.t("对象", "Subject")}</th> })}
                    <th scope="col">{l.t("状态变化", "Change")}</th>
                    <th scope="col">{l.t("动作", "Action")}</th>
                    <th scope="col">{l.t("操作人", "Actor")}</th>
                    <th scope="col">{l.t("原因", "Reason")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

async fn coupon_page(State(s): State<AppState>, staff: Staff, Path(id): Path<String>) -> Response {
    let l = staff.lang;
    let mut c = match s.service.get_coupon(&id).await {
        Ok(c) => c,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let events = c.events.take().unwrap_or_default();
    let title = l.pick(format!("券 {}", c.code), format!("Coupon {}", c.code));
    let terms = coupon_terms_text(l, &c);
    let cats = categories_text(l, &c.categories);
    let user_href = format!("/console/users/{}", enc(&c.user_id));
    let order = match c.order_no.clone() {
        Some(no) => {
            let href = format!("/console/orders/{}", enc(&no));
            view! { <a href=href data-testid="coupon-order">{no}</a> }.into_any()
        }
        None => view! { "—" }.into_any(),
    };
    let template = c.template_id.clone().unwrap_or_else(|| {
        l.t("（补偿券，无模板）", "(compensation coupon, no template)")
            .to_string()
    });
    let source = match c.source.as_str() {
        "compensation" => l.t("补偿发放", "compensation"),
        _ => l.t("用户领取", "claimed"),
    };
    let actions = coupon_actions(l, &c);
    staff.page(
        &title,
        view! {
            <section aria-labelledby="coupon-facts">
                <h2 id="coupon-facts">
                    {l.t("券信息", "Coupon")}" "
                    <span data-testid="coupon-status">{coupon_badge(l, &c.status)}</span>
                </h2>
                <dl class="facts">
                    <dt>{l.t("券码", "Code")}</dt><dd class="mono" data-testid="coupon-code">{c.code.clone()}</dd>
                    <dt>{l.t("券 ID", "Coupon id")}</dt><dd class="mono">{c.id.clone()}</dd>
                    <dt>{l.t("用户", "User")}</dt><dd><a href=user_href>{c.user_id.clone()}</a></dd>
                    <dt>{l.t("优惠", "Discount")}</dt><dd>{terms}</dd>
                    <dt>{l.t("适用品类", "Categories")}</dt><dd>{cats}</dd>
                    <dt>{l.t("生效时间", "Starts")}</dt><dd>{time_text(&c.starts_at)}</dd>
                    <dt>{l.t("到期时间", "Ends")}</dt><dd>{time_text(&c.ends_at)}</dd>
                    <dt>{l.t("绑定订单", "Bound order")}</dt><dd>{order}</dd>
                    <dt>{l.t("锁定时间", "Locked at")}</dt><dd>{opt_time(&c.locked_at)}</dd>
                    <dt>{l.t("核销时间", "Used at")}</dt><dd>{opt_time(&c.used_at)}</dd>
                    <dt>{l.t("发放时间", "Issued at")}</dt><dd>{time_text(&c.created_at)}</dd>
                    <dt>{l.t("来源", "Source")}</dt><dd>{source}</dd>
                    <dt>{l.t("券模板", "Template")}</dt><dd class="mono">{template}</dd>
                </dl>
                {actions}
            </section>
            <section aria-labelledby="coupon-timeline">
                <h2 id="coupon-timeline">{l.t("时间线", "Timeline")}</h2>
                {timeline(l, events, false)}
            </section>
        },
    )
}

/// The action buttons a coupon offers in its state.
fn coupon_actions(l: Lang, c: &CouponView) -> impl IntoView + use<> {
    let id = enc(&c.id);
    let release = (c.status == "locked").then(|| {
        let href = format!("/console/coupons/{id}/release");
        view! { <a class="button" href=href data-testid="release-link">{l.t("释放锁定", "Release lock")}</a> }
    });
    let invalidate = (c.status == "available").then(|| {
        let href = format!("/console/coupons/{id}/invalidate");
        view! { <a class="button danger" href=href>{l.t("作废此券", "Invalidate")}</a> }
    });
    let compensate = {
        let mut href = format!("/console/users/{}/compensation", enc(&c.user_id));
        if let Some(no) = &c.order_no {
            href.push_str(&format!("?order_no={}", enc(no)));
        }
        view! { <a class="button" href=href>{l.t("发补偿券", "Issue compensation")}</a> }
    };
    view! { <p class="actions">{release}{invalidate}{compensate}</p> }
}

fn policy_label(l: Lang, policy: &str) -> &'static str {
    match policy {
        "lock" => l.t("定金锁券（尾款直接抵扣）", "lock (the deposit lock holds)"),
        "strict" => l.t(
            "严格（过期不抵扣）",
            "strict (an expired coupon gives no discount)",
        ),
        "swap_or_compensate" => l.t("换券或补偿", "swap or compensate"),
        _ => l.t("未知", "unknown"),
    }
}

async fn order_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
) -> Response {
    let l = staff.lang;
    let mut o = match s.service.get_order(&order_no).await {
        Ok(o) => o,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let campaign = match &o.campaign_id {
        Some(id) => s.service.get_campaign(id).await.ok(),
        None => None,
    };
    let coupon = match &o.coupon_id {
        Some(id) => s.service.get_coupon(id).await.ok(),
        None => None,
    };
    let events = o.events.take().unwrap_or_default();
    let title = l.pick(
        format!("订单 {}", o.order_no),
        format!("Order {}", o.order_no),
    );
    let body = order_body(l, &o, campaign, coupon, events);
    staff.page(&title, body)
}

fn order_body(
    l: Lang,
    o: &OrderView,
    campaign: Option<CampaignView>,
    coupon: Option<CouponView>,
    events: Vec<EventView>,
) -> impl IntoView + use<> {
    let kind = match o.kind.as_str() {
        "presale" => l.t("预售订单", "presale order"),
        _ => l.t("普通订单", "normal order"),
    };
    let user_href = format!("/console/users/{}", enc(&o.user_id));
    let presale = o.kind == "presale";
    let money = view! {
        <dl class="facts money-facts" data-testid="money">
            {money_row(l, l.t("订单总额", "Total"), o.total_cents)}
            {presale.then(|| money_row(l, l.t("定金", "Deposit"), o.deposit_cents))}
            {money_row(l, l.t("券抵扣", "Coupon discount"), o.coupon_discount_cents)}
            {(o.discount_snapshot_cents != o.coupon_discount_cents).then(|| money_row(l, l.t("定金时的抵扣快照", "Discount promised at deposit"), o.discount_snapshot_cents))}
            {money_row(l, l.t("补偿", "Compensation"), o.compensation_cents)}
            {o.final_payment_cents.map(|c| money_row(l, l.t("尾款实付", "Final payment charged"), c))}
            <dt><strong>{l.t("应付金额", "Amount due")}</strong></dt>
            <dd class="money"><strong data-testid="amount-due">{l.money(o.amount_due_cents)}</strong></dd>
        </dl>
    };
    let campaign_view = campaign.map(|c| {
        let policy = policy_label(l, &c.policy);
        view! {
            <dt>{l.t("预售场次", "Campaign")}</dt><dd>{c.name}" "<span class="mono">"("{c.id}")"</span></dd>
            <dt>{l.t("尾款策略", "Policy")}</dt><dd data-testid="policy">{policy}</dd>
            <dt>{l.t("尾款时间", "Final-payment window")}</dt>
            <dd>{time_text(&c.final_payment_starts_at)}" — "{time_text(&c.final_payment_ends_at)}</dd>
        }
    });
    let coupon_view = match (&o.coupon_id, coupon) {
        (Some(_), Some(c)) => {
            let href = format!("/console/coupons/{}", enc(&c.id));
            let bound = match &c.order_no {
                Some(no) if *no == o.order_no => l.t("券已绑定本订单", "bound to this order").to_string(),
                Some(no) => l.pick(format!("券绑定在另一订单 {no}"), format!("bound to another order, {no}")),
                None => l.t("券未绑定任何订单", "not bound to any order").to_string(),
            };
            view! {
                <dt>{l.t("优惠券", "Coupon")}</dt>
                <dd><a href=href data-testid="order-coupon">{c.code.clone()}</a>" "{coupon_badge(l, &c.status)}" · "{bound}</dd>
            }
            .into_any()
        }
        (Some(id), None) => view! {
            <dt>{l.t("优惠券", "Coupon")}</dt><dd class="mono">{id.clone()}" "{l.t("（找不到）", "(missing)")}</dd>
        }
        .into_any(),
        (None, _) => view! { <dt>{l.t("优惠券", "Coupon")}</dt><dd>"—"</dd> }.into_any(),
    };
    let lock = lock_status_label(l, &o.coupon_lock_status);
    view! {
        <section aria-labelledby="order-facts">
            <h2 id="order-facts">{kind}" "<span data-testid="order-status">{order_badge(l, &o.status)}</span></h2>
            <dl class="facts">
                <dt>{l.t("订单号", "Order number")}</dt><dd class="mono">{o.order_no.clone()}</dd>
                <dt>{l.t("用户", "User")}</dt><dd><a href=user_href>{o.user_id.clone()}</a></dd>
                <dt>{l.t("品类", "Category")}</dt><dd>{o.category.clone()}</dd>
                {campaign_view}
                {coupon_view}
                <dt>{l.t("券锁定状态", "Coupon lock")}</dt><dd data-testid="lock-status">{lock}</dd>
                <dt>{l.t("下单时间", "Created")}</dt><dd>{time_text(&o.created_at)}</dd>
                {presale.then(|| view! { <dt>{l.t("定金支付", "Deposit paid")}</dt><dd>{opt_time(&o.deposit_paid_at)}</dd> })}
                <dt>{l.t("支付时间", "Paid")}</dt><dd>{opt_time(&o.paid_at)}</dd>
                <dt>{l.t("关闭时间", "Closed")}</dt><dd>{opt_time(&o.closed_at)}</dd>
                <dt>{l.t("退款时间", "Refunded")}</dt><dd>{opt_time(&o.refunded_at)}</dd>
                {o.checkout_lock_expires_at.clone().map(|t| view! { <dt>{l.t("结算锁到期", "Checkout lock lapses")}</dt><dd>{time_text(&t)}</dd> })}
            </dl>
        </section>
        <section aria-labelledby="order-money">
            <h2 id="order-money">{l.t("金额明细", "Money")}</h2>
            {money}
        </section>
        <section aria-labelledby="order-timeline">
            <h2 id="order-timeline">{l.t("时间线", "Timeline")}</h2>
            {timeline(l, events, true)}
        </section>
    }
}

fn to_response(e: WebError) -> Response {
    use axum::response::IntoResponse;
    e.into_response()
}
