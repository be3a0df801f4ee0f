//! Creating an order: the coupon validated, and
//! for a normal order the coupon checkout-locked in the same transaction
//! (a presale order's coupon is locked at the deposit).

use chrono::Duration;
use sqlx::AnyConnection;

use super::cart::{OrderCart, put_split};
use super::coupons::{choose, coupons_of, move_all};
use super::steps::{load_campaign, window_of};
use super::view::order_view_of;
use crate::domain::cart::OrderSpec;
use crate::domain::coupon::CouponStatus;
use crate::domain::money::Cents;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus};
use crate::domain::time::to_ms;
use crate::service::views::OrderView;
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::events::{self, NewEvent};
use crate::store::is_unique_violation;
use crate::store::order_coupons;
use crate::store::order_lines;
use crate::store::orders::{self, OrderRow};

impl Service {
    /// Creates an order (its fields checked at the edge:
    /// [`OrderSpec::parse`]). Normal: validates and checkout-locks the
    /// coupon. Presale: validates the coupon only; it is locked at deposit
    /// payment.
    pub async fn create_order(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        spec: OrderSpec,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let op = self.op(ctx);
        let result = self
            .write(idem, move |c| {
                let spec = spec.clone();
                let op = op.clone();
                Box::pin(async move { create_order_tx(c, &op, &spec).await })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result
            && let Some(t) = v.checkout_lock_expires_at.as_deref()
            && let Ok(lapse) = crate::domain::time::parse_rfc3339(t)
        {
            self.schedule(
                lapse,
                crate::service::jobs::Deadline::CheckoutLapse(v.order_no.clone()),
            );
        }
        result
    }
}

async fn create_order_tx(
    c: &mut AnyConnection,
    op: &Op,
    spec: &OrderSpec,
) -> Result<OrderView, ServiceError> {
    let now_ms = to_ms(op.now);
    if orders::get(c, &spec.order_no).await?.is_some() {
        return Err(ServiceError::refused(
            Refusal::OrderExists,
            format!("order {} already exists", spec.order_no),
        ));
    }
    if let Some(campaign_id) = spec.cart.campaign_id.as_ref() {
        let campaign = load_campaign(c, campaign_id).await?;
        if op.now >= window_of(&campaign).ends {
            return Err(ServiceError::refused(
                Refusal::OutsidePaymentWindow,
                "this presale campaign's final-payment window has ended",
            ));
        }
    }
    let chosen = if spec.coupon_ids.is_empty() {
        None
    } else {
        Some(
            choose(
                c,
                &spec.user_id,
                &spec.cart.terms(),
                &spec.coupon_ids,
                op.now,
            )
            .await?,
        )
    };
    let discount = chosen.as_ref().map_or(Cents::ZERO, |ch| ch.total);
    let locks_now = spec.cart.kind == OrderKind::Normal && chosen.is_some();
    let status = OrderStatus::initial(spec.cart.kind);
    let row = OrderRow {
        order_no: spec.order_no.clone(),
        user_id: spec.user_id.clone(),
        kind: spec.cart.kind,
        category: spec.cart.category.clone(),
        status,
        total_cents: spec.cart.total,
        deposit_cents: spec.cart.deposit,
        campaign_id: spec.cart.campaign_id.clone(),
        coupon_id: chosen
            .as_ref()
            .and_then(|ch| ch.rows.first())
            .map(|r| r.id.clone()),
        replaced_coupon_id: None,
        coupon_discount_cents: discount,
        discount_snapshot_cents: if locks_now { discount } else { Cents::ZERO },
        coupon_lock_status: if locks_now {
            CouponLockStatus::Locked
        } else {
            CouponLockStatus::None
        },
        compensation_cents: Cents::ZERO,
        final_payment_cents: None,
        checkout_lock_expires_at: locks_now
            .then(|| to_ms(op.now + Duration::seconds(op.settings.checkout_lock_seconds))),
        created_at: now_ms,
        deposit_paid_at: None,
        paid_at: None,
        closed_at: None,
        refunded_at: None,
        updated_at: now_ms,
        refunded_cents: Cents::ZERO,
        refund_count: 0,
    };
    orders::insert(c, &row).await.map_err(|e| {
        if is_unique_violation(&e) {
            ServiceError::refused(
                Refusal::OrderExists,
                format!("order {} already exists", spec.order_no),
            )
        } else {
            ServiceError::Db(e)
        }
    })?;
    events::insert(
        c,
        &NewEvent {
            subject: "order",
            coupon_id: row.coupon_id.as_ref(),
            order_no: Some(&row.order_no),
            from_status: None,
            to_status: row.status.as_str(),
            action: "create",
            actor: &op.ctx.actor,
            reason: None,
            request_id: op.ctx.request_id.as_deref(),
            trace_id: op.ctx.trace_id(),
            address: op.ctx.address.as_deref(),
            at_ms: now_ms,
        },
    )
    .await?;
    order_lines::insert(c, &row.order_no, &spec.cart.lines, &[]).await?;
    let mut cart = OrderCart::stored_new(&spec.cart.lines);
    let Some(chosen) = chosen else {
        return order_view_of(c, row, cart, op.now, false).await;
    };
    let lock = if locks_now {
        CouponLockStatus::Locked
    } else {
        CouponLockStatus::None
    };
    order_coupons::insert(c, &row.order_no, &chosen.further(locks_now, lock)).await?;
    for (cp, applied) in chosen.rows.iter().zip(&chosen.applied) {
        put_split(c, &row, &mut cart, &cp.id, &applied.split).await?;
    }
    if locks_now {
        let held = coupons_of(c, &row).await?;
        move_all(
            c,
            op,
            &row,
            &held,
            (CouponStatus::Available, CouponStatus::Locked),
            (CouponLockStatus::Locked, CouponLockStatus::Locked),
            "checkout_lock",
        )
        .await?;
    }
    order_view_of(c, row, cart, op.now, false).await
}
