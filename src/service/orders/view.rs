//! An order as the API shows it: its fields, the amount due as the final
//! payment would compute it now, and on request its timeline; and the
//! coupons bound to it.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::cart::{OrderCart, load_cart};
use super::plan::plan_for;
use super::steps::{kind_of, load_order, money_of, status_of};
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::order::{OrderKind, OrderStatus, amount_due};
use crate::domain::time::from_ms;
use crate::service::views::{
    CouponView, EventView, LineDiscountView, OrderCouponView, OrderLineView, OrderView,
};
use crate::service::{Service, ServiceError};
use crate::store::campaigns;
use crate::store::coupons;
use crate::store::events;
use crate::store::orders::OrderRow;

/// Builds the API view of an order, with the amount due computed as the
/// final payment would compute it right now.
pub(crate) async fn order_view(
    c: &mut AnyConnection,
    o: OrderRow,
    now: DateTime<Utc>,
    with_events: bool,
) -> Result<OrderView, ServiceError> {
    let cart = load_cart(c, &o).await?;
    order_view_of(c, o, cart, now, with_events).await
}

/// The lines of the API's order object, from its cart.
pub(crate) fn line_views(cart: &OrderCart) -> Vec<OrderLineView> {
    cart.lines
        .iter()
        .enumerate()
        .map(|(i, l)| OrderLineView {
            line_id: l.line_id.clone(),
            sku: l.sku.clone(),
            category: l.category.clone(),
            shop_id: l.shop_id.clone(),
            quantity: l.quantity,
            unit_price_cents: l.unit_price_cents,
            amount_cents: l.line().amount(),
            discounts: {
                let mut d: Vec<LineDiscountView> = cart
                    .shares_of_line(i)
                    .into_iter()
                    .map(|s| LineDiscountView {
                        coupon_id: s.coupon_id.clone(),
                        cents: s.cents,
                    })
                    .collect();
                // By coupon id, as the store reads them back.
                d.sort_by(|a, b| a.coupon_id.cmp(&b.coupon_id));
                d
            },
            payable_cents: cart.payable(i),
            refunded_quantity: l.refunded_quantity,
            refunded_cents: l.refunded_cents,
        })
        .collect()
}

/// [`order_view`] with the order's cart already read.
pub(crate) async fn order_view_of(
    c: &mut AnyConnection,
    o: OrderRow,
    cart: OrderCart,
    now: DateTime<Utc>,
    with_events: bool,
) -> Result<OrderView, ServiceError> {
    let kind = kind_of(&o);
    let status = status_of(&o);
    let mut due = amount_due(kind, status, money_of(&o));
    if kind == OrderKind::Presale
        && status == OrderStatus::DepositPaid
        && let Some(campaign_id) = o.campaign_id.as_ref()
        && let Some(campaign) = campaigns::get(c, campaign_id).await?
        && let Ok(plan) = plan_for(c, &o, &campaign, now).await
    {
        due = plan.whole.amount_due;
    }
    let events = if with_events {
        let mut list: Vec<EventView> = events::for_order(c, &o.order_no)
            .await?
            .into_iter()
            .map(EventView::from)
            .collect();
        name_coupons(c, &mut list).await?;
        Some(list)
    } else {
        None
    };
    let ts = |ms: i64| crate::domain::time::rfc3339(from_ms(ms));
    let coupons = super::coupons::coupons_of(c, &o)
        .await?
        .into_iter()
        .map(|cp| OrderCouponView {
            compensation_cents: cp.compensation,
            coupon_id: cp.coupon_id,
            discount_cents: cp.discount,
            lock_status: cp.lock_status,
            replaced_coupon_id: cp.replaced_coupon_id,
        })
        .collect();
    Ok(OrderView {
        lines: line_views(&cart),
        refunded_cents: o.refunded_cents,
        coupons,
        amount_due_cents: due,
        order_no: o.order_no,
        user_id: o.user_id,
        kind: o.kind,
        category: o.category,
        status: o.status,
        total_cents: o.total_cents,
        deposit_cents: o.deposit_cents,
        campaign_id: o.campaign_id,
        coupon_id: o.coupon_id,
        coupon_discount_cents: o.coupon_discount_cents,
        coupon_lock_status: o.coupon_lock_status,
        compensation_cents: o.compensation_cents,
        created_at: ts(o.created_at),
        deposit_paid_at: o.deposit_paid_at.map(ts),
        paid_at: o.paid_at.map(ts),
        closed_at: o.closed_at.map(ts),
        refunded_at: o.refunded_at.map(ts),
        discount_snapshot_cents: o.discount_snapshot_cents,
        replaced_coupon_id: o.replaced_coupon_id,
        final_payment_cents: o.final_payment_cents,
        checkout_lock_expires_at: o.checkout_lock_expires_at.map(ts),
        events,
    })
}

/// Re-reads an order after a change and renders it.
pub(super) async fn reload(
    c: &mut AnyConnection,
    order_no: &OrderNo,
    now: DateTime<Utc>,
) -> Result<OrderView, ServiceError> {
    let o = load_order(c, order_no).await?;
    order_view(c, o, now, false).await
}

impl Service {
    /// An order with its timeline.
    pub async fn get_order(&self, order_no: &OrderNo) -> Result<OrderView, ServiceError> {
        let order_no = order_no.clone();
        let now = self.now();
        self.read(move |c| {
            let order_no = order_no.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                order_view(c, o, now, true).await
            })
        })
        .await
    }

    /// The coupons bound to an order right now (for the console).
    pub async fn order_coupons(&self, order_no: &OrderNo) -> Result<Vec<CouponView>, ServiceError> {
        let order_no = order_no.clone();
        let now = self.now();
        self.read(move |c| {
            let order_no = order_no.clone();
            Box::pin(async move {
                Ok(coupons::bound_to_order(c, &order_no)
                    .await?
                    .into_iter()
                    .map(|r| CouponView::from_row(r, now))
                    .collect())
            })
        })
        .await
    }
}

/// Fills each event's coupon code, so pages name coupons by code.
pub(crate) async fn name_coupons(
    c: &mut AnyConnection,
    events: &mut [EventView],
) -> Result<(), ServiceError> {
    let ids: Vec<&CouponId> = events.iter().filter_map(|e| e.coupon_id.as_ref()).collect();
    let codes = crate::store::names::coupon_codes(c, &ids).await?;
    for e in events.iter_mut() {
        e.coupon_code = e
            .coupon_id
            .as_ref()
            .and_then(|id| codes.get(id.as_str()).cloned());
    }
    Ok(())
}
