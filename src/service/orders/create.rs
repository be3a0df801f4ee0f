//! Creating an order: the API's fields checked, the coupon validated, and
//! for a normal order the coupon checkout-locked in the same transaction
//! (a presale order's coupon is locked at the deposit).

use chrono::Duration;
use sqlx::AnyConnection;

use super::steps::{load_campaign, load_coupon, move_coupon, validate_coupon, window_of};
use super::view::order_view;
use crate::domain::FieldError;
use crate::domain::coupon::CouponStatus;
use crate::domain::ids::{CampaignId, CouponId, OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus};
use crate::domain::picker::OrderTerms;
use crate::domain::time::to_ms;
use crate::service::views::OrderView;
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::events::{self, NewEvent};
use crate::store::is_unique_violation;
use crate::store::orders::{self, OrderRow};

/// Longest category name on an order.
use crate::domain::category::MAX_CATEGORY_LEN;

/// The API's order fields before checking (as typed: the ids among them
/// are checked by [`Service::create_order`] in a fixed order, so the field
/// a bad request is told about does not depend on the caller).
#[derive(Debug, Clone, Default)]
pub struct OrderInput {
    pub order_no: Option<String>,
    pub user_id: Option<String>,
    pub kind: Option<String>,
    pub category: Option<String>,
    pub total_cents: Option<i64>,
    pub coupon_id: Option<String>,
    pub campaign_id: Option<String>,
    pub deposit_cents: Option<i64>,
}

/// The fields of an order that decide a coupon's discount (the checkout
/// picker takes just these), before checking.
#[derive(Debug, Clone, Default)]
pub struct CartInput {
    pub kind: Option<String>,
    pub category: Option<String>,
    pub total_cents: Option<i64>,
    pub campaign_id: Option<String>,
    pub deposit_cents: Option<i64>,
}

/// A checked cart: an order's kind, category and money, and its campaign.
#[derive(Debug, Clone)]
pub struct CartSpec {
    pub kind: OrderKind,
    pub category: String,
    pub total: Cents,
    pub campaign_id: Option<CampaignId>,
    /// Zero for a normal order.
    pub deposit: Cents,
}

impl CartSpec {
    /// What decides a coupon's discount on this cart.
    pub fn terms(&self) -> OrderTerms<'_> {
        OrderTerms {
            kind: self.kind,
            category: &self.category,
            total: self.total,
            deposit: self.deposit,
        }
    }
}

/// A checked new order.
#[derive(Debug, Clone)]
struct OrderSpec {
    order_no: OrderNo,
    user_id: UserId,
    cart: CartSpec,
    coupon_id: Option<CouponId>,
}

/// Checks a cart's fields, naming the field at fault; the same checks for
/// `POST /orders` and the picker.
pub fn parse_cart(i: CartInput) -> Result<CartSpec, FieldError> {
    let kind = match i.kind.as_deref() {
        None => return Err(FieldError::new("kind", "is required")),
        Some(k) => OrderKind::parse(k)
            .ok_or_else(|| FieldError::new("kind", "must be \"normal\" or \"presale\""))?,
    };
    let category = i.category.unwrap_or_default().trim().to_string();
    if category.chars().count() > MAX_CATEGORY_LEN {
        return Err(FieldError::new(
            "category",
            format!("must be at most {MAX_CATEGORY_LEN} characters"),
        ));
    }
    let total = Cents::new(
        i.total_cents
            .ok_or_else(|| FieldError::new("total_cents", "is required"))?,
    )
    .map_err(|e| FieldError::new("total_cents", e.to_string()))?;
    if total.is_zero() {
        return Err(FieldError::new("total_cents", "must be greater than 0"));
    }
    let (campaign_id, deposit) = match kind {
        OrderKind::Normal => {
            if i.campaign_id.is_some() {
                return Err(FieldError::new(
                    "campaign_id",
                    "only presale orders have a campaign",
                ));
            }
            if i.deposit_cents.is_some_and(|d| d != 0) {
                return Err(FieldError::new(
                    "deposit_cents",
                    "only presale orders have a deposit",
                ));
            }
            (None, Cents::ZERO)
        }
        OrderKind::Presale => {
            let campaign = i
                .campaign_id
                .filter(|c| !c.is_empty())
                .ok_or_else(|| FieldError::new("campaign_id", "is required for presale orders"))?;
            let d = i.deposit_cents.ok_or_else(|| {
                FieldError::new("deposit_cents", "is required for presale orders")
            })?;
            let deposit =
                Cents::new(d).map_err(|e| FieldError::new("deposit_cents", e.to_string()))?;
            if deposit.is_zero() || deposit > total {
                return Err(FieldError::new(
                    "deposit_cents",
                    "must be greater than 0 and at most total_cents",
                ));
            }
            (Some(CampaignId::from_wire(campaign)), deposit)
        }
    };
    Ok(CartSpec {
        kind,
        category,
        total,
        campaign_id,
        deposit,
    })
}

fn parse_order(i: OrderInput) -> Result<OrderSpec, FieldError> {
    let order_no = OrderNo::parse(i.order_no.as_deref().unwrap_or(""))?;
    let user_id = UserId::parse(i.user_id.as_deref().unwrap_or(""))?;
    let cart = parse_cart(CartInput {
        kind: i.kind,
        category: i.category,
        total_cents: i.total_cents,
        campaign_id: i.campaign_id,
        deposit_cents: i.deposit_cents,
    })?;
    let coupon_id = match i.coupon_id {
        Some(id) if id.is_empty() || id.chars().count() > 64 => {
            return Err(FieldError::new("coupon_id", "must be 1-64 characters"));
        }
        other => other.map(CouponId::from_wire),
    };
    Ok(OrderSpec {
        order_no,
        user_id,
        cart,
        coupon_id,
    })
}

impl Service {
    /// Creates an order. Normal: validates and checkout-locks the coupon.
    /// Presale: validates the coupon only; it is locked at deposit payment.
    pub async fn create_order(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        input: OrderInput,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let spec = parse_order(input)?;
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
    let coupon = match spec.coupon_id.as_ref() {
        Some(id) => Some(load_coupon(c, id).await?),
        None => None,
    };
    let discount = match &coupon {
        Some(cp) => validate_coupon(cp, &spec.user_id, &spec.cart.terms(), op.now)?,
        None => Cents::ZERO,
    };
    let locks_now = spec.cart.kind == OrderKind::Normal && coupon.is_some();
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
        coupon_id: spec.coupon_id.clone(),
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
            address: op.ctx.address.as_deref(),
            at_ms: now_ms,
        },
    )
    .await?;
    if locks_now
        && let Some(cp) = &coupon
        && !move_coupon(
            c,
            op,
            &cp.id,
            (CouponStatus::Available, CouponStatus::Locked),
            &row.order_no,
            "checkout_lock",
            None,
        )
        .await?
    {
        return Err(ServiceError::refused(
            Refusal::CouponNotAvailable,
            "this coupon was just locked or changed by another request",
        ));
    }
    order_view(c, row, op.now, false).await
}
