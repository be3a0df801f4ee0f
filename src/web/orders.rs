//! `/console/orders` and `/console/orders.csv`: the order list for support.
//! Filters by status, kind, campaign, coupon lock status, creation days
//! (business time zone) and order-number prefix; keyset pages of 50,
//! newest first; the same filters export as CSV. Every staff role may read
//! it. The rules (what a filter means, the pages, the CSV) live in
//! [`crate::service::orders`]; this module only parses the query and
//! renders.

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::components::{OrderBadge, Pager, Time};
use super::context::lang;
use super::i18n::Lang;
use super::layout::{FieldErrors, enc, field_error, lock_status_label, order_status_label};
use super::paths;
use super::posted::OrPage;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus};
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::orders::{
    DEFAULT_ORDER_PAGE, MAX_ORDER_EXPORT_ROWS, OrderFilter, OrderListParams, OrderPage,
};
use crate::service::views::OrderView;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/orders", get(order_list))
        .route("/console/orders.csv", get(order_csv))
}

/// The catalog message for a refused filter field.
fn filter_message(l: Lang, field: &str) -> String {
    let key = match field {
        "status" => "order-list-bad-status",
        "kind" => "order-list-bad-kind",
        "campaign_id" => "order-list-bad-campaign",
        "coupon_lock_status" => "order-list-bad-lock",
        "created_from" | "created_to" => "order-list-bad-day",
        "order_no_prefix" => "order-list-bad-prefix",
        _ => "order-list-bad-cursor",
    };
    l.t(key).to_string()
}

/// The filters part of the query string (without the cursor), for the
/// next page, the first page and the CSV link.
fn filter_query(p: &OrderListParams) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in [
        ("status", &p.status),
        ("kind", &p.kind),
        ("campaign_id", &p.campaign_id),
        ("coupon_lock_status", &p.coupon_lock_status),
        ("created_from", &p.created_from),
        ("created_to", &p.created_to),
        ("order_no_prefix", &p.order_no_prefix),
    ] {
        if let Some(v) = v.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            q.append_pair(k, v);
        }
    }
    q.finish()
}

/// `field`'s message as a [`FieldErrors`], from a refused filter.
fn errors_of(l: Lang, e: &ServiceError) -> Option<FieldErrors> {
    match e {
        ServiceError::Invalid(f) => {
            let mut errors = FieldErrors::default();
            let field: &'static str = match f.field {
                "created_to" => "created_to",
                "created_from" => "created_from",
                "status" => "status",
                "kind" => "kind",
                "campaign_id" => "campaign_id",
                "coupon_lock_status" => "coupon_lock_status",
                "order_no_prefix" => "order_no_prefix",
                _ => "cursor",
            };
            errors.add(field, filter_message(l, field));
            Some(errors)
        }
        _ => None,
    }
}

async fn order_list(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<OrderListParams>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let choices = s.service.campaign_choices().await.or_page(l)?;
    let listed = match s.service.order_filter(&q) {
        Ok(filter) => {
            s.service
                .list_orders(filter, q.cursor.clone(), DEFAULT_ORDER_PAGE)
                .await
        }
        Err(e) => Err(e),
    };
    let (page, errors) = match listed {
        Ok(page) => (page, FieldErrors::default()),
        Err(e) => match errors_of(l, &e) {
            Some(errors) => (
                OrderPage {
                    orders: Vec::new(),
                    next: None,
                },
                errors,
            ),
            None => return Err(WebError::from_service(l, e)),
        },
    };
    let names = s.service.order_page_names(&page).await.or_page(l)?;
    let refused = !errors.is_empty();
    let mut r = staff.page(l.t("order-list-title"), move || {
        view! { <OrderListBody query=q choices=choices errors=errors page=page names=names/> }
    });
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(r)
}

/// The order list: the filters as typed (each refused one with its
/// message), the CSV link, the orders found (`names`: the campaign names
/// and coupon codes by id) and the pager.
#[component]
fn OrderListBody(
    query: OrderListParams,
    choices: Vec<(String, String)>,
    errors: FieldErrors,
    page: OrderPage,
    names: HashMap<String, String>,
) -> impl IntoView {
    let (l, q) = (lang(), query);
    let fq = filter_query(&q);
    let csv_href = format!("/console/orders.csv?{fq}");
    let sep = if fq.is_empty() { "" } else { "&" };
    let next = page
        .next
        .clone()
        .map(|n| format!("/console/orders?{fq}{sep}cursor={}", enc(&n)));
    let first = q
        .cursor
        .as_deref()
        .is_some_and(|c| !c.is_empty())
        .then(|| format!("/console/orders?{fq}"));
    let typed = |v: &Option<String>| v.clone().unwrap_or_default();
    let status_now = typed(&q.status);
    let status_options = OrderStatus::ALL
        .into_iter()
        .map(|st| {
            let selected = status_now == st.as_str();
            view! { <option value=st.as_str() selected=selected>{order_status_label(l, st)}</option> }
        })
        .collect_view();
    let kind_now = typed(&q.kind);
    let kind_options = [OrderKind::Normal, OrderKind::Presale]
        .into_iter()
        .map(|k| {
            let selected = kind_now == k.as_str();
            view! { <option value=k.as_str() selected=selected>{kind_label(l, k)}</option> }
        })
        .collect_view();
    let lock_now = typed(&q.coupon_lock_status);
    let lock_options = CouponLockStatus::ALL
        .into_iter()
        .map(|s| {
            let selected = lock_now == s.as_str();
            view! { <option value=s.as_str() selected=selected>{lock_status_label(l, s)}</option> }
        })
        .collect_view();
    let campaign_now = typed(&q.campaign_id);
    let campaign_options = choices
        .iter()
        .map(|(id, name)| {
            let selected = campaign_now == *id;
            view! { <option value=id.clone() selected=selected>{name.clone()}</option> }
        })
        .collect_view();
    let f_status = errors.input_attrs("status", "f-status");
    let f_kind = errors.input_attrs("kind", "f-kind");
    let f_campaign = errors.input_attrs("campaign_id", "f-campaign");
    let f_lock = errors.input_attrs("coupon_lock_status", "f-lock");
    let f_from = errors.input_attrs("created_from", "f-from");
    let f_to = errors.input_attrs("created_to", "f-to");
    let f_prefix = errors.input_attrs("order_no_prefix", "f-prefix");
    let f_cursor = errors.input_attrs("cursor", "f-cursor");
    let count = page.orders.len();
    view! {
        <section aria-labelledby="filters">
            <h2 id="filters" class="visually-hidden">{l.t("filters")}</h2>
            <form method="get" action="/console/orders" class="filters" data-testid="order-filters">
                <label for="f-prefix">{l.t("order-list-prefix")}</label>
                <input id="f-prefix" type="text" name="order_no_prefix" value=typed(&q.order_no_prefix)
                    aria-invalid=f_prefix.invalid aria-describedby=f_prefix.described_by.clone()/>
                {field_error(&f_prefix)}
                <label for="f-status">{l.t("order-status")}</label>
                <select id="f-status" name="status" aria-invalid=f_status.invalid aria-describedby=f_status.described_by.clone()>
                    <option value="">{l.t("any")}</option>
                    {status_options}
                </select>
                {field_error(&f_status)}
                <label for="f-kind">{l.t("kind")}</label>
                <select id="f-kind" name="kind" aria-invalid=f_kind.invalid aria-describedby=f_kind.described_by.clone()>
                    <option value="">{l.t("any")}</option>
                    {kind_options}
                </select>
                {field_error(&f_kind)}
                <label for="f-campaign">{l.t("campaign")}</label>
                <select id="f-campaign" name="campaign_id" aria-invalid=f_campaign.invalid aria-describedby=f_campaign.described_by.clone()>
                    <option value="">{l.t("any")}</option>
                    {campaign_options}
                </select>
                {field_error(&f_campaign)}
                <label for="f-lock">{l.t("coupon-lock")}</label>
                <select id="f-lock" name="coupon_lock_status" aria-invalid=f_lock.invalid aria-describedby=f_lock.described_by.clone()>
                    <option value="">{l.t("any")}</option>
                    {lock_options}
                </select>
                {field_error(&f_lock)}
                <label for="f-from">{l.t("order-list-created-from")}</label>
                <input id="f-from" type="date" name="created_from" value=typed(&q.created_from)
                    aria-invalid=f_from.invalid aria-describedby=f_from.described_by.clone()/>
                {field_error(&f_from)}
                <label for="f-to">{l.t("order-list-created-to")}</label>
                <input id="f-to" type="date" name="created_to" value=typed(&q.created_to)
                    aria-invalid=f_to.invalid aria-describedby=f_to.described_by.clone()/>
                {field_error(&f_to)}
                {field_error(&f_cursor)}
                <button type="submit" class="primary">{l.t("filter")}</button>
                <a class="button" href=csv_href data-testid="csv">{l.t("export-csv")}</a>
            </form>
        </section>
        <section aria-labelledby="results">
            <h2 id="results">{crate::tr!(l, "order-list-count", count = count)}</h2>
            <OrderTable orders=page.orders names=names/>
            <Pager first=first next=next/>
        </section>
    }
}

fn kind_label(l: Lang, k: OrderKind) -> &'static str {
    match k {
        OrderKind::Presale => l.t("presale-order"),
        OrderKind::Normal => l.t("normal-order"),
    }
}

/// A table of orders linking to their pages (cards on a phone); `names`
/// are the campaign names and coupon codes by id.
#[component]
fn OrderTable(orders: Vec<OrderView>, names: HashMap<String, String>) -> impl IntoView {
    let l = lang();
    if orders.is_empty() {
        return view! { <p class="note" data-testid="no-orders">{l.t("order-list-empty")}</p> }
            .into_any();
    }
    let name_of = |id: Option<&str>| {
        id.map(|i| {
            names
                .get(i)
                .cloned()
                .unwrap_or_else(|| l.t("term-unknown").to_string())
        })
    };
    let rows = orders
        .into_iter()
        .map(|o| {
            let href = paths::order(&o.order_no);
            let user_href = paths::user(&o.user_id);
            let campaign = name_of(o.campaign_id.as_deref());
            let coupon = name_of(o.coupon_id.as_deref()).map(|code| {
                o.coupon_id.clone().map(|id| {
                    let h = paths::coupon(&id);
                    view! { <a class="mono" href=h>{code}</a> }
                })
            });
            view! {
                <tr>
                    <td data-label=l.t("order-number") class="mono"><a href=href data-testid="order-link">{o.order_no.clone()}</a></td>
                    <td data-label=l.t("order-status")><OrderBadge status=o.status/></td>
                    <td data-label=l.t("kind")>{kind_label(l, o.kind)}</td>
                    <td data-label=l.t("campaign")>{campaign}</td>
                    <td data-label=l.t("user")><a href=user_href>{o.user_id.clone()}</a></td>
                    <td data-label=l.t("total") class="money">{o.total_cents.shown()}</td>
                    <td data-label=l.t("line-refunds") class="money" data-testid="order-refunded">{(!o.refunded_cents.is_zero()).then(|| o.refunded_cents.shown())}</td>
                    <td data-label=l.t("coupon")>{coupon}</td>
                    <td data-label=l.t("coupon-lock")>{lock_status_label(l, o.coupon_lock_status)}</td>
                    <td data-label=l.t("created") class="nowrap"><Time at=o.created_at.clone()/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table class="stack" data-testid="order-table">
                <thead><tr>
                    <th scope="col">{l.t("order-number")}</th>
                    <th scope="col">{l.t("order-status")}</th>
                    <th scope="col">{l.t("kind")}</th>
                    <th scope="col">{l.t("campaign")}</th>
                    <th scope="col">{l.t("user")}</th>
                    <th scope="col">{l.t("total")}</th>
                    <th scope="col">{l.t("line-refunds")}</th>
                    <th scope="col">{l.t("coupon")}</th>
                    <th scope="col">{l.t("coupon-lock")}</th>
                    <th scope="col">{l.t("created")}</th>
                </tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

async fn order_csv(
    State(s): State<AppState>,
    staff: Staff,
    Query(q): Query<OrderListParams>,
) -> Response {
    let l = staff.lang;
    let filter: OrderFilter = match s.service.order_filter(&q) {
        Ok(f) => f,
        Err(e) => {
            let field = match &e {
                ServiceError::Invalid(f) => f.field,
                _ => "cursor",
            };
            return WebError::bad_request(filter_message(l, field)).into_response();
        }
    };
    match s
        .service
        .export_orders_csv(filter, MAX_ORDER_EXPORT_ROWS, staff.lang)
        .await
    {
        Ok(csv) => super::layout::csv_download("orders.csv", csv),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}
