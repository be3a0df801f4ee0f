//! The support console's pages and actions. Each handler takes a
//! [`Staff`] (so it cannot run without a session), calls one service
//! function and renders; each action is a POST with a CSRF token that
//! answers with a redirect and a flash message.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use leptos::prelude::*;

use axum::extract::Query;
use axum::response::{IntoResponse, Redirect};
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::components::{
    CouponBadge, CouponTable, HealthReport, IdsDetails, MoneyRow, OptTime, OrderBadge, Pager,
    ResultBadge, Time, Timeline,
};
use super::context::{lang, viewer_may};
use super::i18n::Lang;
use super::layout::{
    actor_text, coupon_status_label, coupon_terms_text, enc, lock_status_label, opt_time,
    order_status_label, policy_label, reason_text, time_text,
};
use super::order_cart::{CouponCodes, CouponLines, OrderCoupons, OrderLines, OrderRefunds};
use super::paths;
use super::paths::with_back;
use super::support_requests::OrderSupportRequests;
use super::try_cart::TryCart;
use crate::domain::coupon::CouponStatus;
use crate::domain::filters::{CouponExportQuery, CouponFilterInput, CouponListQuery};
use crate::domain::health::CheckResult;
use crate::domain::ids::{CouponId, OrderNo, TemplateId, UserId};
use crate::domain::order::{OrderKind, OrderStatus};
use crate::domain::permissions::Permission;
use crate::http::AppState;
use crate::service::support::{CompensationEntry, SearchOutcome};
use crate::service::views::{CampaignView, CouponView, EventView, OrderView};

/// The console's routes, all under `/console`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/search", get(search))
        .route("/console/coupons", get(coupon_list))
        .route("/console/coupons.csv", get(coupon_csv))
        .route("/console/coupons/{id}", get(coupon_page))
        .route("/console/orders/{order_no}", get(order_page))
        .route("/console/users/{user_id}", get(user_page))
}

fn categories_text(l: Lang, cats: &[String]) -> String {
    if cats.is_empty() {
        l.t("every-category").to_string()
    } else {
        crate::i18n::names::categories(l, cats, ", ")
    }
}

async fn coupon_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CouponId>,
) -> Response {
    let l = staff.lang;
    let mut c = match s.service.get_coupon(&id).await {
        Ok(c) => c,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let events = c.events.take().unwrap_or_default();
    let title = crate::tr!(l, "coupon-7", code = &c.code);
    let terms = coupon_terms_text(l, &c);
    let cats = categories_text(l, &c.categories);
    let user_href = paths::user(&c.user_id);
    // The lines of its order it discounted, with its share of each.
    let discounted = match &c.order_no {
        Some(no) => match s.service.get_order(no).await {
            Ok(o) => o
                .lines
                .into_iter()
                .filter(|line| line.discounts.iter().any(|d| d.coupon_id == c.id))
                .collect(),
            Err(_) => Vec::new(),
        },
        None => Vec::new(),
    };
    let order = match c.order_no.clone() {
        Some(no) => {
            let href = paths::order(&no);
            view! { <a href=href data-testid="coupon-order">{no}</a> }.into_any()
        }
        None => view! { "—" }.into_any(),
    };
    let template = match &c.template_id {
        Some(id) => {
            let name = s
                .service
                .get_template(id)
                .await
                .map(|t| t.name)
                .unwrap_or_else(|_| l.t("term-unknown").to_string());
            let href = paths::coupons_of_template(id);
            view! { <a href=href data-testid="coupon-template">{name}</a> }.into_any()
        }
        None => view! { {l.t("compensation-coupon-no-template")} }.into_any(),
    };
    let mut ids = vec![("coupon-id", c.id.to_string())];
    if let Some(t) = &c.template_id {
        ids.push(("id-template", t.to_string()));
    }
    let source = l.t(c.source.label_key());
    // A compensation coupon names the order and the reason it was given for.
    let origin = if c.source == crate::domain::coupon::CouponSource::Compensation {
        match s.service.compensation_origins(vec![c.id.clone()]).await {
            Ok(mut found) => found.remove(&c.id),
            Err(e) => return to_response(WebError::from_service(l, e)),
        }
    } else {
        None
    };
    let origin = origin.map(|o| {
        let what = match &o.order_no {
            Some(no) => {
                let href = paths::order(no);
                let text = crate::tr!(l, "compensation-of-order", order_no = no.as_str());
                view! { <a href=href>{text}</a> }.into_any()
            }
            None => view! { {l.t("compensation-for-no-order")} }.into_any(),
        };
        let reason = reason_text(l, &o.reason);
        view! {
            <dt>{l.t("compensation-given-for")}</dt>
            <dd data-testid="coupon-compensation-origin">{what}" · "{reason}</dd>
        }
    });
    staff.page(
        &title,
        move || view! {
            <section aria-labelledby="coupon-facts">
                <h2 id="coupon-facts">
                    {l.t("coupon-2")}" "
                    <span data-testid="coupon-status"><CouponBadge status=c.status/></span>
                </h2>
                <dl class="facts">
                    <dt>{l.t("code")}</dt><dd class="mono" data-testid="coupon-code">{c.code.clone()}</dd>
                    <dt>{l.t("user")}</dt><dd><a href=user_href>{c.user_id.clone()}</a></dd>
                    <dt>{l.t("discount")}</dt><dd>{terms}</dd>
                    <dt>{l.t("categories")}</dt><dd>{cats}</dd>
                    <dt>{l.t("starts")}</dt><dd>{time_text(&c.starts_at)}</dd>
                    <dt>{l.t("ends")}</dt><dd>{time_text(&c.ends_at)}</dd>
                    <dt>{l.t("bound-order")}</dt><dd>{order}</dd>
                    <CouponLines lines=discounted coupon_id=c.id.clone()/>
                    <dt>{l.t("locked-at")}</dt><dd>{opt_time(&c.locked_at)}</dd>
                    <dt>{l.t("used-at")}</dt><dd>{opt_time(&c.used_at)}</dd>
                    <dt>{l.t("issued-at")}</dt><dd>{time_text(&c.created_at)}</dd>
                    <dt>{l.t("source")}</dt><dd>{source}</dd>
                    {origin}
                    <dt>{l.t("template")}</dt><dd>{template}</dd>
                </dl>
                <IdsDetails ids=ids/>
                <CouponActions coupon=c.clone()/>
            </section>
            <section aria-labelledby="coupon-timeline">
                <h2 id="coupon-timeline">{l.t("timeline")}</h2>
                <Timeline events=events/>
            </section>
        },
    )
}

/// The action buttons a coupon offers in its state; each comes back to
/// the coupon page.
/// Only the buttons the signed-in staff member may use: invalidating
/// needs an operator.
#[component]
fn CouponActions(coupon: CouponView) -> impl IntoView {
    let (l, c) = (lang(), coupon);
    let here = paths::coupon(&c.id);
    let release = c.can_release().then(|| {
        let href = with_back(&paths::coupon_release(&c.id), &here);
        view! { <a class="button" href=href data-testid="release-link">{l.t("release-lock")}</a> }
    });
    let invalidate = (c.can_invalidate() && viewer_may(Permission::InvalidateCoupon)).then(|| {
        let href = with_back(&paths::coupon_invalidate(&c.id), &here);
        view! { <a class="button danger" href=href>{l.t("invalidate-2")}</a> }
    });
    let compensate = {
        let href = match &c.order_no {
            Some(no) => paths::user_compensation_for_order(&c.user_id, no),
            None => paths::user_compensation(&c.user_id),
        };
        let href = with_back(&href, &here);
        view! { <a class="button" href=href>{l.t("issue-compensation")}</a> }
    };
    view! { <p class="actions">{release}{invalidate}{compensate}</p> }
}

/// Coupon statuses in the order support reads a customer's coupons: what
/// is held first, then what can be used, then what is over.
pub(super) const COUPON_READING_ORDER: [CouponStatus; 5] = [
    CouponStatus::Locked,
    CouponStatus::Available,
    CouponStatus::Used,
    CouponStatus::Expired,
    CouponStatus::Invalidated,
];

/// A coupon's place in [`COUPON_READING_ORDER`].
pub(super) fn reading_rank(status: CouponStatus) -> usize {
    COUPON_READING_ORDER
        .iter()
        .position(|s| *s == status)
        .unwrap_or(COUPON_READING_ORDER.len())
}

#[derive(Deserialize)]
struct CheckQuery {
    check: Option<String>,
}

async fn order_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    Query(q): Query<CheckQuery>,
) -> Response {
    let l = staff.lang;
    let order_no = match super::ids::order_no_of(&order_no) {
        Ok(no) => no,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
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
    let title = crate::tr!(l, "order-6", order_no = &o.order_no);
    let report = if q.check.is_some() {
        match s.service.order_health_check(&o.order_no).await {
            Ok(r) => Some(r),
            Err(e) => return to_response(WebError::from_service(l, e)),
        }
    } else {
        None
    };
    // Actions started here come back here, to the re-run check if it ran.
    let back = if report.is_some() {
        paths::order_health(&o.order_no)
    } else {
        paths::order(&o.order_no)
    };
    let ledger = match s.service.order_compensations(&o.order_no).await {
        Ok(v) => v,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let refunds = match s.service.refunds_of(&o.order_no).await {
        Ok(v) => v,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    // The codes of every coupon the lines and refunds name: the order's
    // own and, after a swap, the one it replaced.
    let mut codes = CouponCodes::new();
    let further = o.coupons.iter().skip(1).map(|c| &c.coupon_id);
    for id in o
        .coupon_id
        .iter()
        .chain(o.replaced_coupon_id.iter())
        .chain(further)
    {
        if let Ok(c) = s.service.get_coupon(id).await {
            codes.insert(id.to_string(), c.code);
        }
    }
    let requests = match s.service.order_support_requests(&o.order_no).await {
        Ok(v) => v,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let lines = o.lines.clone();
    let held = o.coupons.clone();
    staff.page(&title, move || {
        view! {
            <OrderHealth order=o.clone() report=report back=back.clone()/>
            <OrderSupportRequests requests=requests back=back/>
            <OrderBody order=o campaign=campaign coupon=coupon events=events ledger=ledger.clone()/>
            <OrderCoupons coupons=held codes=codes.clone()/>
            <OrderLines lines=lines codes=codes.clone()/>
            <OrderRefunds refunds=refunds codes=codes/>
            <CompensationSection entries=ledger/>
        }
    })
}

/// The order's health check: the report when it ran (actions come back
/// to `back`), else the button that runs it; and the way to compensate.
#[component]
fn OrderHealth(
    order: OrderView,
    report: Option<crate::service::support::HealthReport>,
    back: String,
) -> impl IntoView {
    let l = lang();
    let href = paths::order_health(&order.order_no);
    let comp_href = with_back(
        &paths::user_compensation_for_order(&order.user_id, &order.order_no),
        &back,
    );
    view! {
        <section aria-labelledby="health" id="health-section">
            <h2 id="health">{l.t("one-click-health-check")}</h2>
            {match report {
                Some(r) => view! { <HealthReport overall=r.overall checks=r.checks back=back/> }.into_any(),
                None => view! {
                    <p><a class="button primary" href=href data-testid="run-health-check">{l.t("run-the-health-check")}</a></p>
                }.into_any(),
            }}
            <p class="actions"><a class="button" href=comp_href data-testid="compensation-link">{l.t("issue-compensation")}</a></p>
        </section>
    }
}

/// The order's compensation ledger entries, when there are any.
#[component]
fn CompensationSection(entries: Vec<CompensationEntry>) -> impl IntoView {
    let l = lang();
    if entries.is_empty() {
        return None;
    }
    let rows = entries
        .into_iter()
        .map(|e| {
            let kind = if e.is_coupon() {
                l.t("compensation-coupon")
            } else if e.kind == "refund_reversal" {
                l.t("comp-kind-refund-reversal")
            } else {
                l.t("taken-off-the-final-payment")
            };
            let coupon = e.coupon_id.map(|id| {
                let href = paths::coupon(&id);
                let code = e.coupon_code.unwrap_or_else(|| l.t("coupon").to_string());
                view! { <a href=href class="mono">{code}</a> }
            });
            // Which of the order's coupons it makes up for, by code.
            let for_coupon = match (e.for_coupon_id, e.for_coupon_code) {
                (Some(id), Some(code)) => {
                    let href = paths::coupon(&id);
                    view! { <a href=href class="mono" data-testid="ledger-for-coupon">{code}</a> }
                        .into_any()
                }
                _ => view! { "—" }.into_any(),
            };
            view! {
                <tr>
                    <td class="nowrap"><Time at=e.at/></td>
                    <td>{kind}</td>
                    <td class="money">{e.amount_cents.shown()}</td>
                    <td>{coupon}</td>
                    <td>{for_coupon}</td>
                    <td>{actor_text(l, &e.actor)}</td>
                    <td>{reason_text(l, &e.reason)}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <section aria-labelledby="order-ledger">
            <h2 id="order-ledger">{l.t("compensation-ledger")}</h2>
            <div class="table-wrap"><table data-testid="ledger">
                <thead><tr>
                    <th scope="col">{l.t("when")}</th>
                    <th scope="col">{l.t("kind")}</th>
                    <th scope="col">{l.t("amount")}</th>
                    <th scope="col">{l.t("coupon-3")}</th>
                    <th scope="col">{l.t("comp-for-coupon")}</th>
                    <th scope="col">{l.t("actor")}</th>
                    <th scope="col">{l.t("reason")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table></div>
        </section>
    })
}

/// The order's facts, its money and its timeline.
#[component]
fn OrderBody(
    order: OrderView,
    campaign: Option<CampaignView>,
    coupon: Option<CouponView>,
    events: Vec<EventView>,
    ledger: Vec<CompensationEntry>,
) -> impl IntoView {
    let (l, o) = (lang(), order);
    // Support's compensation coupons for this order, each on its own line,
    // so the money box agrees with the ledger below it.
    let given = ledger
        .iter()
        .filter(|e| e.is_coupon())
        .map(|e| {
            let label = crate::tr!(
                l,
                "money-compensation-coupon",
                code = e.coupon_code.clone().unwrap_or_default()
            );
            view! { <dt>{label}</dt><dd class="money" data-testid="money-compensation-coupon">{e.amount_cents.shown()}</dd> }
        })
        .collect_view();
    let kind = match o.kind {
        OrderKind::Presale => l.t("presale-order"),
        OrderKind::Normal => l.t("normal-order"),
    };
    let user_href = paths::user(&o.user_id);
    let presale = o.kind == OrderKind::Presale;
    let money = view! {
        <dl class="facts money-facts" data-testid="money">
            <MoneyRow label=l.t("total") cents=o.total_cents/>
            {presale.then(|| view! { <MoneyRow label=l.t("deposit") cents=o.deposit_cents/> })}
            <MoneyRow label=l.t("coupon-discount") cents=o.coupon_discount_cents/>
            {(o.discount_snapshot_cents != o.coupon_discount_cents).then(|| view! { <MoneyRow label=l.t("discount-promised-at-deposit") cents=o.discount_snapshot_cents/> })}
            {(presale || !o.compensation_cents.is_zero()).then(|| view! { <MoneyRow label=l.t("money-final-payment-compensation") cents=o.compensation_cents/> })}
            {given}
            {o.final_payment_cents.map(|c| view! { <MoneyRow label=l.t("final-payment-charged") cents=c/> })}
            <dt><strong>{l.t("amount-due")}</strong></dt>
            <dd class="money"><strong data-testid="amount-due">{o.amount_due_cents.shown()}</strong></dd>
        </dl>
    };
    let campaign_view = campaign.map(|c| {
        let policy = policy_label(l, c.policy);
        view! {
            <dt>{l.t("campaign")}</dt><dd>{c.name}</dd>
            <dt>{l.t("policy")}</dt><dd data-testid="policy">{policy}</dd>
            <dt>{l.t("final-payment-window")}</dt>
            <dd><Time at=c.final_payment_starts_at/>" — "<Time at=c.final_payment_ends_at/></dd>
        }
    });
    let coupon_view = match (&o.coupon_id, coupon) {
        (Some(_), Some(c)) => {
            let href = paths::coupon(&c.id);
            let bound = match &c.order_no {
                Some(no) if *no == o.order_no => l.t("bound-to-this-order").to_string(),
                Some(no) => crate::tr!(l, "bound-to-another-order", no = no),
                None => l.t("not-bound-to-any-order").to_string(),
            };
            view! {
                <dt>{l.t("coupon-4")}</dt>
                <dd><a href=href data-testid="order-coupon">{c.code.clone()}</a>" "<CouponBadge status=c.status/>" · "{bound}</dd>
            }
            .into_any()
        }
        (Some(_), None) => view! {
            <dt>{l.t("coupon-4")}</dt><dd>"— "{l.t("missing")}</dd>
        }
        .into_any(),
        (None, _) => view! { <dt>{l.t("coupon-4")}</dt><dd>"—"</dd> }.into_any(),
    };
    let lock = lock_status_label(l, o.coupon_lock_status);
    let mut id_rows = Vec::new();
    if let Some(id) = &o.coupon_id {
        id_rows.push(("coupon-id", id.to_string()));
    }
    if let Some(id) = &o.campaign_id {
        id_rows.push(("id-campaign", id.to_string()));
    }
    let ids = (!id_rows.is_empty()).then(|| view! { <IdsDetails ids=id_rows/> });
    view! {
        <section aria-labelledby="order-facts">
            <h2 id="order-facts">{kind}" "<span data-testid="order-status"><OrderBadge status=o.status/></span></h2>
            <dl class="facts">
                <dt>{l.t("order-number")}</dt><dd class="mono">{o.order_no.clone()}</dd>
                <dt>{l.t("user")}</dt><dd><a href=user_href>{o.user_id.clone()}</a></dd>
                <dt>{l.t("category")}</dt><dd>{crate::i18n::names::category(l, &o.category)}</dd>
                {campaign_view}
                {coupon_view}
                <dt>{l.t("coupon-lock")}</dt><dd data-testid="lock-status">{lock}</dd>
                <dt>{l.t("created")}</dt><dd><Time at=o.created_at.clone()/></dd>
                {presale.then(|| view! { <dt>{l.t("deposit-paid")}</dt><dd><OptTime at=o.deposit_paid_at.clone()/></dd> })}
                <dt>{l.t("paid")}</dt><dd><OptTime at=o.paid_at.clone()/></dd>
                <dt>{l.t("closed")}</dt><dd><OptTime at=o.closed_at.clone()/></dd>
                <dt>{l.t("refunded")}</dt><dd><OptTime at=o.refunded_at.clone()/></dd>
                {o.checkout_lock_expires_at.clone().map(|t| view! { <dt>{l.t("checkout-lock-lapses")}</dt><dd><Time at=t/></dd> })}
            </dl>
            {ids}
        </section>
        <section aria-labelledby="order-money">
            <h2 id="order-money">{l.t("money")}</h2>
            {money}
        </section>
        <section aria-labelledby="order-timeline">
            <h2 id="order-timeline">{l.t("timeline")}</h2>
            <Timeline events=events show_subject=true/>
        </section>
    }
}

fn to_response(e: WebError) -> Response {
    e.into_response()
}

#[derive(Deserialize)]
struct SearchQuery {
    q: Option<String>,
}

/// One box for everything: a single match opens its page, several are
/// listed (prefix matches newest first, with a note when more matched than
/// are listed), none says so.
async fn search(State(s): State<AppState>, staff: Staff, Query(q): Query<SearchQuery>) -> Response {
    let l = staff.lang;
    let query = q.q.unwrap_or_default().trim().to_string();
    if query.is_empty() {
        return Redirect::to("/console").into_response();
    }
    let outcome = match s.service.search(&query).await {
        Ok(o) => o,
        Err(crate::service::ServiceError::Invalid(_)) => SearchOutcome::Nothing,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let list = match outcome {
        SearchOutcome::Coupon(id) => {
            return Redirect::to(&paths::coupon(&id)).into_response();
        }
        SearchOutcome::Order(no) => {
            return Redirect::to(&paths::order(&no)).into_response();
        }
        SearchOutcome::User(u) => {
            return Redirect::to(&paths::user(&u)).into_response();
        }
        SearchOutcome::Many(list) => list,
        SearchOutcome::Nothing => crate::service::support::SearchList::default(),
    };
    let title = crate::tr!(l, "search-2", query = &query);
    let body = if list.hits.is_empty() {
        view! {
            <section>
                <p data-testid="no-results">{crate::tr!(l, "no-coupon-order-or-user-matches", query = &query)}</p>
            </section>
        }
        .into_any()
    } else {
        let shown = list.hits.len();
        let more = list.more.map(|m| {
            use crate::service::support::MoreMatches;
            let text = match m {
                MoreMatches::Total(matched) => {
                    crate::tr!(
                        l,
                        "search-newest-of-matches",
                        shown = shown,
                        matched = matched
                    )
                }
                MoreMatches::Over(read) => {
                    crate::tr!(l, "search-more-than-matches", shown = shown, read = read)
                }
            };
            view! { <p data-testid="more-hits">{text}</p> }
        });
        let items = list
            .hits
            .into_iter()
            .map(|h| {
                let (href, kind) = match h.kind.as_str() {
                    // The key is a coupon id, order number or user id
                    // read back from the database.
                    "coupon" => (
                        paths::coupon(&CouponId::from_wire(h.key.clone())),
                        l.t("coupon"),
                    ),
                    "order" => (
                        paths::order(&OrderNo::from_stored(h.key.clone())),
                        l.t("order"),
                    ),
                    _ => (
                        paths::user(&UserId::from_stored(h.key.clone())),
                        l.t("user"),
                    ),
                };
                let label = match h.status_key {
                    Some(status) => format!("{} · {} · {}", h.title, l.t(status), h.user_id),
                    None => h.title.clone(),
                };
                view! { <li>{kind}": "<a href=href>{label}</a></li> }
            })
            .collect_view();
        view! { <section>{more}<ul class="links" data-testid="hits">{items}</ul></section> }
            .into_any()
    };
    staff.page(&title, move || body)
}

#[derive(Deserialize, Default)]
struct ListQuery {
    status: Option<String>,
    template_id: Option<String>,
    user_id: Option<String>,
    expiring_before: Option<String>,
    after: Option<String>,
}

impl ListQuery {
    /// The filter as sent (the status and the date read here, the
    /// template and user left for [`CouponListQuery::parse`] and
    /// [`CouponExportQuery::parse`]), or a message saying which field is
    /// wrong.
    fn filter(&self, l: Lang) -> Result<CouponFilterInput, String> {
        let nonempty = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(String::from)
        };
        let status = match nonempty(&self.status).as_deref() {
            None => None,
            Some(raw) => {
                Some(CouponStatus::parse(raw).ok_or_else(|| l.t("unknown-status").to_string())?)
            }
        };
        let expiring_before = match nonempty(&self.expiring_before) {
            None => None,
            Some(raw) => Some(
                parse_console_time(&raw)
                    .ok_or_else(|| l.t("the-expiry-date-is-not-a").to_string())?,
            ),
        };
        Ok(CouponFilterInput {
            status,
            template_id: nonempty(&self.template_id),
            user_id: nonempty(&self.user_id),
            expiring_before,
        })
    }

    /// The filter part of the query string, for the next page and CSV links.
    fn filter_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (k, v) in [
            ("status", &self.status),
            ("template_id", &self.template_id),
            ("user_id", &self.user_id),
            ("expiring_before", &self.expiring_before),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.trim().is_empty()) {
                q.append_pair(k, v);
            }
        }
        q.finish()
    }
}

/// A time from the console's filter: RFC 3339 (its own offset), or the
/// `datetime-local` input's `2026-11-11T08:00` or a bare date, both read
/// in the business time zone.
pub(super) fn parse_console_time(raw: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use chrono::{NaiveDate, NaiveDateTime, Utc};
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(raw) {
        return Some(t.with_timezone(&Utc));
    }
    for f in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(raw, f) {
            return crate::i18n::zone::from_local(t);
        }
    }
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .ok()
        .and_then(crate::i18n::zone::start_of_day)
}

const PAGE_SIZE: i64 = 50;

async fn coupon_list(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<ListQuery>,
) -> Response {
    let l = staff.lang;
    let filter = match q.filter(l) {
        Ok(f) => f,
        Err(m) => return to_response(WebError::bad_request(m)),
    };
    let page = match CouponListQuery::parse(PAGE_SIZE, filter) {
        Ok(query) => {
            s.service
                .list_coupons(query, q.after.clone().filter(|a| !a.is_empty()))
                .await
        }
        Err(e) => Err(e.into()),
    };
    let page = match page {
        Ok(p) => p,
        Err(crate::service::ServiceError::Invalid(f)) => {
            return to_response(WebError::bad_request(format!("{}: {}", f.field, f.message)));
        }
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let fq = q.filter_query();
    let csv_href = format!("/console/coupons.csv?{fq}");
    let next = page
        .next
        .clone()
        .map(|n| format!("/console/coupons?{fq}&after={}", enc(&n)));
    let first = q
        .after
        .as_deref()
        .is_some_and(|a| !a.is_empty())
        .then(|| format!("/console/coupons?{fq}"));
    let status_options = CouponStatus::ALL
        .into_iter()
        .map(|st| {
            let selected = q.status.as_deref() == Some(st.as_str());
            view! { <option value=st.as_str() selected=selected>{coupon_status_label(l, st)}</option> }
        })
        .collect_view();
    let count = page.coupons.len();
    let template_options = match template_choices(&s, l, q.template_id.as_deref()).await {
        Ok(options) => options,
        Err(e) => return to_response(e),
    };
    let (user, before) = (
        q.user_id.clone().unwrap_or_default(),
        q.expiring_before.clone().unwrap_or_default(),
    );
    staff.page(
        l.t("coupons"),
        move || view! {
            <section aria-labelledby="filters">
                <h2 id="filters" class="visually-hidden">{l.t("filters")}</h2>
                <form method="get" action="/console/coupons" class="filters">
                    <label>{l.t("status")}
                        <select name="status">
                            <option value="">{l.t("any")}</option>
                            {status_options}
                        </select>
                    </label>
                    <label>{l.t("template")}
                        <select name="template_id" data-testid="coupon-template-filter">
                            <option value="">{l.t("any")}</option>
                            {template_options}
                        </select>
                    </label>
                    <label>{l.t("user-id")}<input type="text" name="user_id" value=user/></label>
                    <label>{l.t("filter-expiring-before")}<input type="datetime-local" name="expiring_before" value=before/></label>
                    <button type="submit" class="primary">{l.t("filter")}</button>
                    <a class="button" href=csv_href data-testid="csv">{l.t("export-csv")}</a>
                </form>
            </section>
            <section aria-labelledby="results">
                <h2 id="results">{crate::tr!(l, "on-this-page-by-expiry", count = count)}</h2>
                <CouponTable coupons=page.coupons/>
                <Pager first=first next=next/>
            </section>
        },
    )
}

/// Most templates the coupon list's template filter offers by name (the
/// newest; the chosen one is always among them).
const TEMPLATE_CHOICES: i64 = 200;

/// The coupon list's template filter: the newest templates by name (a
/// name two templates share is told apart by when each was created), the
/// chosen one selected even when older, and a chosen one that does not
/// exist said in words.
async fn template_choices(
    s: &AppState,
    l: Lang,
    chosen: Option<&str>,
) -> Result<Vec<AnyView>, WebError> {
    let chosen = chosen
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(TemplateId::from_wire);
    let mut templates = s
        .service
        .list_templates(None, None, None, None, TEMPLATE_CHOICES)
        .await
        .map_err(|e| WebError::from_service(l, e))?
        .templates;
    let mut gone = None;
    if let Some(id) = &chosen
        && !templates.iter().any(|t| t.id == *id)
    {
        match s.service.get_template(id).await {
            Ok(t) => templates.push(t),
            Err(crate::service::ServiceError::NotFound { .. }) => gone = Some(id.clone()),
            Err(e) => return Err(WebError::from_service(l, e)),
        }
    }
    let mut names: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for t in &templates {
        *names.entry(t.name.clone()).or_default() += 1;
    }
    let mut out: Vec<AnyView> = templates
        .into_iter()
        .map(|t| {
            let label = if names.get(&t.name).copied().unwrap_or(0) > 1 {
                let created = crate::domain::time::parse_rfc3339(&t.created_at)
                    .map_or_else(|_| t.created_at.clone(), crate::i18n::zone::local_minutes);
                format!("{} · {created}", t.name)
            } else {
                t.name.clone()
            };
            let selected = chosen.as_ref() == Some(&t.id);
            view! { <option value=t.id selected=selected>{label}</option> }.into_any()
        })
        .collect();
    if let Some(id) = gone {
        out.push(
            view! { <option value=id selected=true>{l.t("coupon-filter-template-gone")}</option> }
                .into_any(),
        );
    }
    Ok(out)
}

/// Largest CSV export from the console.
const CSV_MAX_ROWS: usize = 100_000;

async fn coupon_csv(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<ListQuery>,
) -> Response {
    let l = staff.lang;
    let filter = match q.filter(l) {
        Ok(f) => f,
        Err(m) => return to_response(WebError::bad_request(m)),
    };
    let csv = match CouponExportQuery::parse(CSV_MAX_ROWS, filter) {
        Ok(query) => s.service.export_coupons_csv(query, l).await,
        Err(e) => Err(e.into()),
    };
    match csv {
        Ok(csv) => super::layout::csv_download("coupons.csv", csv),
        Err(e) => to_response(WebError::from_service(l, e)),
    }
}

async fn user_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(user_id): Path<String>,
    Query(q): Query<CheckQuery>,
    Query(cart): Query<super::try_cart::CartQuery>,
) -> Response {
    let l = staff.lang;
    let try_cart = match super::try_cart::section(&s, l, &user_id, &cart).await {
        Ok(v) => v,
        Err(e) => return to_response(e),
    };
    // The service checked the user id (trimmed) and refused a malformed
    // one as invalid.
    let user = match UserId::parse(user_id.trim()) {
        Ok(u) => u,
        Err(e) => return to_response(WebError::from_service(l, e.into())),
    };
    let overview = match s.service.user_overview(&user).await {
        Ok(o) => o,
        Err(e) => return to_response(WebError::from_service(l, e)),
    };
    let report = if q.check.is_some() {
        match s.service.user_health_check(&user).await {
            Ok(r) => Some(r),
            Err(e) => return to_response(WebError::from_service(l, e)),
        }
    } else {
        None
    };
    // The page's links keep the user id as its address gave it.
    let check_href = paths::unparsed::user_health(&user_id);
    // Actions started here come back here, to the re-run check if it ran.
    let back = if report.is_some() {
        check_href.clone()
    } else {
        paths::unparsed::user(&user_id)
    };
    let comp_href = with_back(&paths::unparsed::user_compensation(&user_id), &back);
    let title = crate::tr!(l, "user-2", user_id = user_id);
    let (n_coupons, n_orders) = (overview.coupons.len(), overview.orders.len());
    staff.page(&title, move || {
        view! {
            <section aria-labelledby="health">
                <h2 id="health">{l.t("one-click-health-check")}</h2>
                <UserHealth report=report check_href=check_href back=back/>
                <p class="actions"><a class="button" href=comp_href data-testid="compensation-link">{l.t("issue-compensation")}</a></p>
            </section>
            <TryCart data=try_cart/>
            <section aria-labelledby="user-coupons">
                <h2 id="user-coupons">{crate::tr!(l, "coupons-4", n_coupons = n_coupons)}</h2>
                <CouponsByStatus coupons=overview.coupons/>
            </section>
            <section aria-labelledby="user-orders">
                <h2 id="user-orders">{crate::tr!(l, "orders", n_orders = n_orders)}</h2>
                <OrdersByStatus orders=overview.orders/>
            </section>
        }
    })
}

/// A user's health check: the report when it ran (its lock checks, then
/// each order that is not in order; actions come back to `back`), else
/// the button that runs it.
#[component]
fn UserHealth(
    report: Option<crate::service::support::UserHealthReport>,
    check_href: String,
    back: String,
) -> impl IntoView {
    let l = lang();
    let Some(r) = report else {
        return view! {
            <p><a class="button primary" href=check_href data-testid="run-health-check">{l.t("check-all")}</a></p>
        }
        .into_any();
    };
    let orders = r
        .orders
        .into_iter()
        .filter(|o| o.overall != CheckResult::Ok)
        .map(|o| {
            let href = paths::order(&o.order_no);
            let title = crate::tr!(l, "order-7", order_no = &o.order_no);
            view! {
                <h3 class="group-heading"><a href=href>{title}</a></h3>
                <HealthReport overall=o.overall checks=o.checks back=back.clone()/>
            }
        })
        .collect_view();
    let overall = r.overall;
    let summary = (overall == CheckResult::Ok).then(|| {
        view! { <p class="note">{l.t("all-of-this-users-orders-and")}</p> }
    });
    let locks = (!r.locks.is_empty())
        .then(|| view! { <HealthReport overall=overall checks=r.locks back=back.clone()/> });
    view! {
        <p class="overall" data-testid="overall" data-result=overall.as_str()><ResultBadge result=overall/></p>
        {summary}{locks}{orders}
    }
    .into_any()
}

/// A user's coupons grouped by status, in the order support reads them.
#[component]
fn CouponsByStatus(mut coupons: Vec<CouponView>) -> impl IntoView {
    let l = lang();
    coupons.sort_by_key(|c| reading_rank(c.status));
    COUPON_READING_ORDER
        .into_iter()
        .filter_map(|st| {
            let group: Vec<CouponView> =
                coupons.iter().filter(|c| c.status == st).cloned().collect();
            (!group.is_empty()).then(|| {
                let heading = format!("{} ({})", coupon_status_label(l, st), group.len());
                view! { <h3 class="group-heading">{heading}</h3><CouponTable coupons=group/> }
            })
        })
        .collect_view()
}

/// A user's orders grouped by status, from the ones still open to the
/// ones over.
#[component]
fn OrdersByStatus(orders: Vec<OrderView>) -> impl IntoView {
    let l = lang();
    [
        OrderStatus::PendingPayment,
        OrderStatus::PendingDeposit,
        OrderStatus::DepositPaid,
        OrderStatus::Paid,
        OrderStatus::FinalPaid,
        OrderStatus::Closed,
        OrderStatus::Refunded,
    ]
    .into_iter()
    .filter_map(|st| {
        let group: Vec<&OrderView> = orders.iter().filter(|o| o.status == st).collect();
        (!group.is_empty()).then(|| {
            let heading = format!("{} ({})", order_status_label(l, st), group.len());
            let rows = group
                .into_iter()
                .map(|o| {
                    let href = paths::order(&o.order_no);
                    let kind = if o.kind == OrderKind::Presale {
                        l.t("presale")
                    } else {
                        l.t("normal")
                    };
                    view! {
                        <tr>
                            <td class="mono"><a href=href>{o.order_no.clone()}</a></td>
                            <td>{kind}</td>
                            <td class="money">{o.total_cents.shown()}</td>
                            <td class="money">{o.coupon_discount_cents.shown()}</td>
                            <td class="money">{o.amount_due_cents.shown()}</td>
                            <td class="nowrap"><Time at=o.created_at.clone()/></td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <h3 class="group-heading">{heading}</h3>
                <div class="table-wrap"><table>
                    <thead><tr>
                        <th scope="col">{l.t("order-2")}</th>
                        <th scope="col">{l.t("kind-2")}</th>
                        <th scope="col">{l.t("total-2")}</th>
                        <th scope="col">{l.t("discount-2")}</th>
                        <th scope="col">{l.t("due")}</th>
                        <th scope="col">{l.t("created")}</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table></div>
            }
        })
    })
    .collect_view()
}
