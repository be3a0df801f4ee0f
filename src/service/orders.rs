//! Orders: create (normal orders checkout-lock their coupon), pay, presale
//! deposit and final payment by campaign policy, cancel and refund. Each
//! operation is one transaction that changes the order row first and the
//! coupon rows second (a fixed lock order, so two operations can never
//! deadlock on each other), each change a conditional update.

use chrono::{DateTime, Duration, Utc};
use sqlx::AnyConnection;

use super::views::{CouponView, EventView, OrderView, QuoteView, coupon_terms, stored_status};
use super::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::campaign::{
    Candidate, CouponOutcome, FinalPaymentPlan, HeldCoupon, PaymentWindow, Policy, PresaleOrder,
    plan_final_payment,
};
use crate::domain::coupon::{CouponStatus, Unusable, check_usable, release_target};
use crate::domain::discount::NotApplicable;
use crate::domain::ids::{OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::order::{
    CouponLockStatus, OrderKind, OrderMoney, OrderStatus, amount_due, presale_discount_cap,
};
use crate::domain::time::{from_ms, to_ms};
use crate::store::archive;
use crate::store::campaigns::{self, CampaignRow};
use crate::store::coupons::{self, CouponChange, CouponRow};
use crate::store::events::{self, NewEvent};
use crate::store::is_unique_violation;
use crate::store::ledger::{self, NewEntry};
use crate::store::orders::{self, OrderChange, OrderRow};

/// How many of a user's coupons a swap looks at (earliest ending first).
const SWAP_CANDIDATES: i64 = 200;
/// Longest refund or release reason.
pub const MAX_REASON_CHARS: usize = 500;
/// Longest category name on an order.
const MAX_CATEGORY_LEN: usize = 64;

/// The API's order fields before checking.
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

/// A checked new order.
#[derive(Debug, Clone)]
struct OrderSpec {
    order_no: OrderNo,
    user_id: UserId,
    kind: OrderKind,
    category: String,
    total: Cents,
    coupon_id: Option<String>,
    campaign_id: Option<String>,
    deposit: Cents,
}

fn parse_order(i: OrderInput) -> Result<OrderSpec, FieldError> {
    let order_no = OrderNo::parse(i.order_no.as_deref().unwrap_or(""))?;
    let user_id = UserId::parse(i.user_id.as_deref().unwrap_or(""))?;
    let kind = match i.kind.as_deref() {
        None => return Err(FieldError::new("kind", "is required")),
        Some(k) => OrderKind::parse(k)
            .ok_or_else(|| FieldError::new("kind", "must be \"normal\" or \"presale\""))?,
    };
    let category = i.category.unwrap_or_default().trim().to_string();
    if category.len() > MAX_CATEGORY_LEN {
        return Err(FieldError::new(
            "category",
            format!("must be at most {MAX_CATEGORY_LEN} bytes"),
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
    let coupon_id = match i.coupon_id {
        Some(id) if id.is_empty() || id.len() > 64 => {
            return Err(FieldError::new("coupon_id", "must be 1-64 characters"));
        }
        other => other,
    };
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
            (Some(campaign), deposit)
        }
    };
    Ok(OrderSpec {
        order_no,
        user_id,
        kind,
        category,
        total,
        coupon_id,
        campaign_id,
        deposit,
    })
}

/// Checks a refund or release reason: required, bounded.
pub fn parse_reason(raw: Option<String>) -> Result<String, FieldError> {
    let r = raw.unwrap_or_default().trim().to_string();
    if r.is_empty() || r.chars().count() > MAX_REASON_CHARS {
        return Err(FieldError::new(
            "reason",
            format!("is required, 1-{MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(r)
}

fn unusable(u: Unusable) -> ServiceError {
    match u {
        Unusable::NotOwned => ServiceError::refused(
            Refusal::CouponNotOwned,
            "this coupon belongs to another user",
        ),
        Unusable::NotAvailable => ServiceError::refused(
            Refusal::CouponNotAvailable,
            "this coupon is not available: it is locked, used or invalidated",
        ),
        Unusable::Expired => {
            ServiceError::refused(Refusal::CouponExpired, "this coupon has expired")
        }
        Unusable::NotStarted => ServiceError::refused(
            Refusal::CouponNotStarted,
            "this coupon cannot be used before its validity starts",
        ),
    }
}

fn not_applicable(n: NotApplicable) -> ServiceError {
    match n {
        NotApplicable::ThresholdNotMet => ServiceError::refused(
            Refusal::ThresholdNotMet,
            "the order total is below this coupon's minimum spend",
        ),
        NotApplicable::CategoryNotCovered => ServiceError::refused(
            Refusal::CouponNotApplicable,
            "this coupon does not apply to the order's category",
        ),
    }
}

/// Full validation of a coupon for an order; returns its discount.
fn validate_coupon(
    coupon: &CouponRow,
    user_id: &str,
    total: Cents,
    category: &str,
    now: DateTime<Utc>,
) -> Result<Cents, ServiceError> {
    check_usable(
        coupon.user_id == user_id,
        stored_status(&coupon.status),
        from_ms(coupon.starts_at),
        from_ms(coupon.ends_at),
        now,
    )
    .map_err(unusable)?;
    let terms = coupon_terms(coupon);
    terms
        .check_applies(total, category)
        .map_err(not_applicable)?;
    Ok(terms.rule.discount(total))
}

pub(crate) fn kind_of(o: &OrderRow) -> OrderKind {
    OrderKind::parse(&o.kind).unwrap_or(OrderKind::Normal)
}

pub(crate) fn status_of(o: &OrderRow) -> OrderStatus {
    OrderStatus::parse(&o.status).unwrap_or(OrderStatus::Closed)
}

fn money_of(o: &OrderRow) -> OrderMoney {
    OrderMoney {
        total: Cents::from_stored(o.total_cents),
        deposit: Cents::from_stored(o.deposit_cents),
        discount: Cents::from_stored(o.coupon_discount_cents),
        compensation: Cents::from_stored(o.compensation_cents),
    }
}

fn window_of(c: &CampaignRow) -> PaymentWindow {
    PaymentWindow {
        starts: from_ms(c.final_payment_starts_at),
        ends: from_ms(c.final_payment_ends_at),
    }
}

fn policy_of(c: &CampaignRow) -> Policy {
    Policy::parse(&c.policy).unwrap_or(Policy::Strict)
}

async fn load_order(c: &mut AnyConnection, order_no: &str) -> Result<OrderRow, ServiceError> {
    orders::get(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no))
}

async fn load_campaign(c: &mut AnyConnection, id: &str) -> Result<CampaignRow, ServiceError> {
    campaigns::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("presale campaign", id))
}

async fn load_coupon(c: &mut AnyConnection, id: &str) -> Result<CouponRow, ServiceError> {
    coupons::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("coupon", id))
}

fn require_kind(o: &OrderRow, kind: OrderKind) -> Result<(), ServiceError> {
    if kind_of(o) != kind {
        return Err(ServiceError::refused(
            Refusal::OrderKindMismatch,
            format!(
                "order {} is a {} order; this action is for {} orders",
                o.order_no,
                o.kind,
                kind.as_str()
            ),
        ));
    }
    Ok(())
}

fn require_status(o: &OrderRow, allowed: &[OrderStatus]) -> Result<OrderStatus, ServiceError> {
    let s = status_of(o);
    if !allowed.contains(&s) {
        return Err(ServiceError::refused(
            Refusal::InvalidOrderStatus,
            format!(
                "order {} is {}; this action is not possible now",
                o.order_no, o.status
            ),
        ));
    }
    Ok(s)
}

/// Applies an order transition; a lost race (the order changed meanwhile)
/// becomes a refusal.
async fn move_order(
    c: &mut AnyConnection,
    op: &Op,
    from: OrderStatus,
    to: OrderStatus,
    next: &OrderRow,
    action: &str,
    reason: Option<&str>,
) -> Result<(), ServiceError> {
    let changed = orders::transition(
        c,
        &OrderChange {
            kind: kind_of(next),
            from,
            to,
            next,
            action,
            actor: &op.ctx.actor,
            reason,
            request_id: op.ctx.request_id.as_deref(),
            address: op.ctx.address.as_deref(),
            now_ms: to_ms(op.now),
        },
    )
    .await?;
    if !changed {
        return Err(ServiceError::refused(
            Refusal::InvalidOrderStatus,
            format!("order {} changed meanwhile; read it again", next.order_no),
        ));
    }
    Ok(())
}

/// Applies a coupon transition; `Ok(false)` when the coupon was no longer
/// in the expected state.
pub(crate) async fn move_coupon(
    c: &mut AnyConnection,
    op: &Op,
    coupon_id: &str,
    (from, to): (CouponStatus, CouponStatus),
    order_no: &str,
    action: &str,
    reason: Option<&str>,
) -> Result<bool, ServiceError> {
    Ok(coupons::transition(
        c,
        &CouponChange {
            coupon_id,
            from,
            to,
            order_no: Some(order_no),
            action,
            actor: &op.ctx.actor,
            reason,
            request_id: op.ctx.request_id.as_deref(),
            address: op.ctx.address.as_deref(),
            now_ms: to_ms(op.now),
        },
    )
    .await?)
}

/// Whether the order's coupon is bound to it, in the live table or (a used
/// coupon archived since) in the archive.
async fn coupon_bound_to(c: &mut AnyConnection, order: &OrderRow) -> Result<bool, ServiceError> {
    let Some(id) = order.coupon_id.as_deref() else {
        return Ok(false);
    };
    let row = match coupons::get(c, id).await? {
        Some(r) => Some(r),
        None => archive::get(c, id).await?,
    };
    Ok(row.is_some_and(|cp| cp.order_no.as_deref() == Some(order.order_no.as_str())))
}

/// The order's coupon from the live table; a coupon the order used that
/// the archive job has moved away since (30 days after the use) is brought
/// back first, with its events and an event saying so, so that returning
/// it works as for any other coupon. In the caller's transaction.
async fn live_coupon_of(
    c: &mut AnyConnection,
    op: &Op,
    order: &OrderRow,
    coupon_id: &str,
    action: &str,
) -> Result<Option<CouponRow>, ServiceError> {
    if let Some(row) = coupons::get(c, coupon_id).await? {
        return Ok(Some(row));
    }
    let Some(row) = archive::restore_used(c, coupon_id, &order.order_no).await? else {
        return Ok(None);
    };
    let why = format!("archived coupon brought back to the live table for {action}");
    events::insert(
        c,
        &NewEvent {
            subject: "coupon",
            coupon_id: Some(coupon_id),
            order_no: Some(&order.order_no),
            from_status: Some(&row.status),
            to_status: &row.status,
            action: "unarchive",
            actor: &op.ctx.actor,
            reason: Some(&why),
            request_id: op.ctx.request_id.as_deref(),
            address: op.ctx.address.as_deref(),
            at_ms: to_ms(op.now),
        },
    )
    .await?;
    Ok(Some(row))
}

/// Releases (locked) or returns (used) the order's coupon, if it is still
/// bound to this order: `available` while valid, else `expired`. A used
/// coupon already archived is brought back first. Returns whether a coupon
/// was released.
async fn release_bound_coupon(
    c: &mut AnyConnection,
    op: &Op,
    order: &OrderRow,
    action: &str,
    reason: Option<&str>,
) -> Result<bool, ServiceError> {
    let Some(coupon_id) = order.coupon_id.as_deref() else {
        return Ok(false);
    };
    let Some(coupon) = live_coupon_of(c, op, order, coupon_id, action).await? else {
        return Ok(false);
    };
    let from = stored_status(&coupon.status);
    let bound_here = coupon.order_no.as_deref() == Some(order.order_no.as_str());
    if !bound_here || !matches!(from, CouponStatus::Locked | CouponStatus::Used) {
        return Ok(false);
    }
    let to = release_target(from_ms(coupon.ends_at), op.now);
    if !move_coupon(
        c,
        op,
        coupon_id,
        (from, to),
        &order.order_no,
        action,
        reason,
    )
    .await?
    {
        return Err(ServiceError::refused(
            Refusal::CouponLockMismatch,
            "the coupon changed meanwhile; try again",
        ));
    }
    Ok(true)
}

/// The final-payment decision for a `deposit_paid` order, read inside the
/// caller's transaction. The quote, the final payment and the order view
/// all use this, so they never disagree.
pub(crate) async fn plan_for(
    c: &mut AnyConnection,
    order: &OrderRow,
    campaign: &CampaignRow,
    now: DateTime<Utc>,
) -> Result<FinalPaymentPlan, ServiceError> {
    let policy = policy_of(campaign);
    let held = match order.coupon_id.as_deref() {
        None => None,
        Some(id) => {
            let row = load_coupon(c, id).await?;
            Some(HeldCoupon {
                stored_status: stored_status(&row.status),
                locked_to: row.order_no.clone(),
                ends_at: from_ms(row.ends_at),
                kind: coupon_terms(&row).rule.discount_kind(),
            })
        }
    };
    let candidates = if policy == Policy::SwapOrCompensate
        && let Some(h) = &held
    {
        // Only coupons of the held coupon's kind can replace it
        // (`choose_replacement` checks that again).
        coupons::usable_for_user(
            c,
            &order.user_id,
            h.kind.as_str(),
            to_ms(now),
            SWAP_CANDIDATES,
        )
        .await?
        .into_iter()
        .map(|r| Candidate {
            terms: coupon_terms(&r),
            stored_status: stored_status(&r.status),
            starts_at: from_ms(r.starts_at),
            ends_at: from_ms(r.ends_at),
            id: r.id,
        })
        .collect()
    } else {
        Vec::new()
    };
    let presale = PresaleOrder {
        order_no: &order.order_no,
        category: &order.category,
        money: money_of(order),
        snapshot_discount: Cents::from_stored(order.discount_snapshot_cents),
    };
    plan_final_payment(policy, &presale, held.as_ref(), &candidates, now).map_err(|_| {
        ServiceError::refused(
            Refusal::CouponLockMismatch,
            "the order's coupon is not locked to this order; contact support",
        )
    })
}

/// Builds the API view of an order, with the amount due computed as the
/// final payment would compute it right now.
pub(crate) async fn order_view(
    c: &mut AnyConnection,
    o: OrderRow,
    now: DateTime<Utc>,
    with_events: bool,
) -> Result<OrderView, ServiceError> {
    let kind = kind_of(&o);
    let status = status_of(&o);
    let mut due = amount_due(kind, status, money_of(&o));
    if kind == OrderKind::Presale
        && status == OrderStatus::DepositPaid
        && let Some(campaign_id) = o.campaign_id.as_deref()
        && let Some(campaign) = campaigns::get(c, campaign_id).await?
        && let Ok(plan) = plan_for(c, &o, &campaign, now).await
    {
        due = plan.amount_due;
    }
    let events = if with_events {
        Some(
            events::for_order(c, &o.order_no)
                .await?
                .into_iter()
                .map(EventView::from)
                .collect(),
        )
    } else {
        None
    };
    let ts = |ms: i64| crate::domain::time::rfc3339(from_ms(ms));
    Ok(OrderView {
        amount_due_cents: due.get(),
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
async fn reload(
    c: &mut AnyConnection,
    order_no: &str,
    now: DateTime<Utc>,
) -> Result<OrderView, ServiceError> {
    let o = load_order(c, order_no).await?;
    order_view(c, o, now, false).await
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
                super::jobs::Deadline::CheckoutLapse(v.order_no.clone()),
            );
        }
        result
    }

    /// Pays a normal order: coupon `used`, order `paid`.
    pub async fn pay(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: String,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let op = op.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                require_kind(&o, OrderKind::Normal)?;
                require_status(&o, &[OrderStatus::PendingPayment])?;
                let now_ms = to_ms(op.now);
                let mut next = o.clone();
                next.paid_at = Some(now_ms);
                if o.coupon_id.is_some() {
                    if o.checkout_lock_expires_at.is_some_and(|t| t <= now_ms) {
                        return Err(ServiceError::refused(
                            Refusal::CheckoutLockExpired,
                            "the checkout lock on this order's coupon has lapsed; the order will be closed",
                        ));
                    }
                    next.coupon_lock_status = CouponLockStatus::Used.as_str().into();
                }
                next.checkout_lock_expires_at = None;
                move_order(c, &op, OrderStatus::PendingPayment, OrderStatus::Paid, &next, "pay", None).await?;
                if let Some(coupon_id) = o.coupon_id.as_deref()
                    && !move_coupon(c, &op, coupon_id, (CouponStatus::Locked, CouponStatus::Used), &o.order_no, "use", None)
                        .await?
                {
                    return Err(ServiceError::refused(
                        Refusal::CouponLockMismatch,
                        "the coupon is no longer locked to this order",
                    ));
                }
                reload(c, &order_no, op.now).await
            })
        })
        .await
    }

    /// Pays a presale deposit: in one transaction the coupon is validated
    /// again and locked to the order, the discount is snapshotted, and the
    /// order becomes `deposit_paid`.
    pub async fn pay_deposit(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: String,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let op = op.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                require_kind(&o, OrderKind::Presale)?;
                require_status(&o, &[OrderStatus::PendingDeposit])?;
                let campaign = load_campaign(c, o.campaign_id.as_deref().unwrap_or("")).await?;
                if op.now >= window_of(&campaign).ends {
                    return Err(ServiceError::refused(
                        Refusal::OutsidePaymentWindow,
                        "this presale campaign's final-payment window has ended",
                    ));
                }
                let coupon = match o.coupon_id.as_deref() {
                    Some(id) => Some(load_coupon(c, id).await?),
                    None => None,
                };
                let money = money_of(&o);
                let discount = match &coupon {
                    Some(cp) => validate_coupon(cp, &o.user_id, money.total, &o.category, op.now)?
                        .min(presale_discount_cap(money.total, money.deposit)),
                    None => Cents::ZERO,
                };
                let mut next = o.clone();
                next.deposit_paid_at = Some(to_ms(op.now));
                next.coupon_discount_cents = discount.get();
                next.discount_snapshot_cents = discount.get();
                if coupon.is_some() {
                    next.coupon_lock_status = CouponLockStatus::Locked.as_str().into();
                }
                move_order(
                    c,
                    &op,
                    OrderStatus::PendingDeposit,
                    OrderStatus::DepositPaid,
                    &next,
                    "deposit_payment",
                    None,
                )
                .await?;
                if let Some(cp) = &coupon
                    && !move_coupon(
                        c,
                        &op,
                        &cp.id,
                        (CouponStatus::Available, CouponStatus::Locked),
                        &o.order_no,
                        "lock",
                        None,
                    )
                    .await?
                {
                    return Err(ServiceError::refused(
                        Refusal::CouponNotAvailable,
                        "this coupon was just locked or changed by another request",
                    ));
                }
                if let Some(cp) = &coupon
                    && policy_of(&campaign) == Policy::Strict
                {
                    let risk = super::reminders::AtRisk {
                        order_no: &o.order_no,
                        user_id: &o.user_id,
                        coupon_id: &cp.id,
                        ends_at: from_ms(cp.ends_at),
                        window_starts: window_of(&campaign).starts,
                    };
                    super::reminders::warn_at_deposit(c, &op.settings.reminders, &risk, op.now)
                        .await?;
                }
                reload(c, &order_no, op.now).await
            })
        })
        .await
    }

    /// What the final payment would do right now. Read-only.
    pub async fn final_payment_quote(&self, order_no: &str) -> Result<QuoteView, ServiceError> {
        let order_no = order_no.to_string();
        let now = self.now();
        self.read(move |c| {
            let order_no = order_no.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                require_kind(&o, OrderKind::Presale)?;
                require_status(&o, &[OrderStatus::DepositPaid])?;
                let campaign = load_campaign(c, o.campaign_id.as_deref().unwrap_or("")).await?;
                let plan = plan_for(c, &o, &campaign, now).await?;
                Ok(QuoteView {
                    order_no: o.order_no,
                    amount_due_cents: plan.amount_due.get(),
                    discount_cents: plan.discount.get(),
                    compensation_cents: plan.compensation.get(),
                    coupon_outcome: plan.outcome.as_str().into(),
                    replacement_coupon_id: plan.replacement_coupon_id,
                    message: plan.message,
                    message_en: plan.message_en,
                    policy: campaign.policy.clone(),
                    window_open: window_of(&campaign).contains(now),
                })
            })
        })
        .await
    }

    /// Pays the final payment (尾款) inside the campaign's window, applying
    /// the quote's outcome in one transaction.
    pub async fn pay_final(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: String,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let op = op.clone();
            Box::pin(async move { pay_final_tx(c, &op, &order_no).await })
        })
        .await
    }

    /// Cancels an unpaid order (`closed`); a coupon locked to it is released
    /// in the same transaction.
    pub async fn cancel(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: String,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let reason = match reason {
            Some(r) => Some(parse_reason(Some(r))?),
            None => None,
        };
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                let from = require_status(
                    &o,
                    &[
                        OrderStatus::PendingPayment,
                        OrderStatus::PendingDeposit,
                        OrderStatus::DepositPaid,
                    ],
                )?;
                end_order(
                    c,
                    &op,
                    &o,
                    from,
                    OrderStatus::Closed,
                    "cancel",
                    reason.as_deref(),
                )
                .await?;
                reload(c, &order_no, op.now).await
            })
        })
        .await
    }

    /// Refunds a paid order (or a presale deposit): order `refunded`, its
    /// coupon released (locked) or returned (used) in the same transaction.
    pub async fn refund(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: String,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let reason = parse_reason(reason)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move {
                let o = load_order(c, &order_no).await?;
                let from = require_status(
                    &o,
                    &[
                        OrderStatus::Paid,
                        OrderStatus::DepositPaid,
                        OrderStatus::FinalPaid,
                    ],
                )?;
                end_order(
                    c,
                    &op,
                    &o,
                    from,
                    OrderStatus::Refunded,
                    "refund",
                    Some(&reason),
                )
                .await?;
                reload(c, &order_no, op.now).await
            })
        })
        .await
    }

    /// An order with its timeline.
    pub async fn get_order(&self, order_no: &str) -> Result<OrderView, ServiceError> {
        let order_no = order_no.to_string();
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
    pub async fn order_coupons(&self, order_no: &str) -> Result<Vec<CouponView>, ServiceError> {
        let order_no = order_no.to_string();
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

async fn create_order_tx(
    c: &mut AnyConnection,
    op: &Op,
    spec: &OrderSpec,
) -> Result<OrderView, ServiceError> {
    let now_ms = to_ms(op.now);
    if orders::get(c, spec.order_no.as_str()).await?.is_some() {
        return Err(ServiceError::refused(
            Refusal::OrderExists,
            format!("order {} already exists", spec.order_no),
        ));
    }
    if let Some(campaign_id) = spec.campaign_id.as_deref() {
        let campaign = load_campaign(c, campaign_id).await?;
        if op.now >= window_of(&campaign).ends {
            return Err(ServiceError::refused(
                Refusal::OutsidePaymentWindow,
                "this presale campaign's final-payment window has ended",
            ));
        }
    }
    let coupon = match spec.coupon_id.as_deref() {
        Some(id) => Some(load_coupon(c, id).await?),
        None => None,
    };
    let discount = match &coupon {
        Some(cp) => {
            let d = validate_coupon(
                cp,
                spec.user_id.as_str(),
                spec.total,
                &spec.category,
                op.now,
            )?;
            match spec.kind {
                OrderKind::Presale => d.min(presale_discount_cap(spec.total, spec.deposit)),
                OrderKind::Normal => d,
            }
        }
        None => Cents::ZERO,
    };
    let locks_now = spec.kind == OrderKind::Normal && coupon.is_some();
    let status = OrderStatus::initial(spec.kind);
    let row = OrderRow {
        order_no: spec.order_no.as_str().to_string(),
        user_id: spec.user_id.as_str().to_string(),
        kind: spec.kind.as_str().into(),
        category: spec.category.clone(),
        status: status.as_str().into(),
        total_cents: spec.total.get(),
        deposit_cents: spec.deposit.get(),
        campaign_id: spec.campaign_id.clone(),
        coupon_id: spec.coupon_id.clone(),
        replaced_coupon_id: None,
        coupon_discount_cents: discount.get(),
        discount_snapshot_cents: if locks_now { discount.get() } else { 0 },
        coupon_lock_status: if locks_now {
            CouponLockStatus::Locked
        } else {
            CouponLockStatus::None
        }
        .as_str()
        .into(),
        compensation_cents: 0,
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
            coupon_id: row.coupon_id.as_deref(),
            order_no: Some(&row.order_no),
            from_status: None,
            to_status: &row.status,
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

async fn pay_final_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &str,
) -> Result<OrderView, ServiceError> {
    let o = load_order(c, order_no).await?;
    require_kind(&o, OrderKind::Presale)?;
    require_status(&o, &[OrderStatus::DepositPaid])?;
    let campaign = load_campaign(c, o.campaign_id.as_deref().unwrap_or("")).await?;
    if !window_of(&campaign).contains(op.now) {
        return Err(ServiceError::refused(
            Refusal::OutsidePaymentWindow,
            "the final payment is only possible inside the campaign's final-payment window",
        ));
    }
    let plan = plan_for(c, &o, &campaign, op.now).await?;
    let mut next = o.clone();
    next.paid_at = Some(to_ms(op.now));
    next.final_payment_cents = Some(plan.amount_due.get());
    next.coupon_discount_cents = plan.discount.get();
    next.compensation_cents = plan.compensation.get();
    next.coupon_lock_status = match plan.outcome {
        CouponOutcome::Applied | CouponOutcome::Swapped => CouponLockStatus::Used,
        CouponOutcome::NoDiscountExpired | CouponOutcome::Compensated => CouponLockStatus::Released,
        CouponOutcome::None => CouponLockStatus::None,
    }
    .as_str()
    .into();
    if let Some(replacement) = &plan.replacement_coupon_id {
        next.replaced_coupon_id = o.coupon_id.clone();
        next.coupon_id = Some(replacement.clone());
    }
    move_order(
        c,
        op,
        OrderStatus::DepositPaid,
        OrderStatus::FinalPaid,
        &next,
        "final_payment",
        None,
    )
    .await?;
    let lost = || {
        ServiceError::refused(
            Refusal::CouponLockMismatch,
            "the coupon changed meanwhile; read the quote again",
        )
    };
    let own = o.coupon_id.as_deref().unwrap_or("");
    match plan.outcome {
        CouponOutcome::None => {}
        CouponOutcome::Applied => {
            if !move_coupon(
                c,
                op,
                own,
                (CouponStatus::Locked, CouponStatus::Used),
                order_no,
                "use",
                None,
            )
            .await?
            {
                return Err(lost());
            }
        }
        CouponOutcome::NoDiscountExpired | CouponOutcome::Compensated | CouponOutcome::Swapped => {
            let why = match plan.outcome {
                CouponOutcome::NoDiscountExpired => {
                    "expired before the final payment (strict policy)"
                }
                _ => "expired before the final payment (swap_or_compensate policy)",
            };
            if !move_coupon(
                c,
                op,
                own,
                (CouponStatus::Locked, CouponStatus::Expired),
                order_no,
                "release_expired",
                Some(why),
            )
            .await?
            {
                return Err(lost());
            }
            if plan.outcome == CouponOutcome::Compensated {
                ledger::insert(
                    c,
                    &NewEntry {
                        user_id: &o.user_id,
                        order_no: Some(order_no),
                        coupon_id: Some(own),
                        kind: "final_payment_deduction",
                        amount_cents: plan.compensation.get(),
                        reason: "presale coupon expired before the final payment and no equivalent coupon was available",
                        actor: &op.ctx.actor,
                        request_id: op.ctx.request_id.as_deref(),
                        at_ms: to_ms(op.now),
                    },
                )
                .await?;
            }
            if let Some(replacement) = plan.replacement_coupon_id.as_deref() {
                let swap_reason = format!("replaces expired coupon {own}");
                let locked = move_coupon(
                    c,
                    op,
                    replacement,
                    (CouponStatus::Available, CouponStatus::Locked),
                    order_no,
                    "swap_lock",
                    Some(&swap_reason),
                )
                .await?;
                if !locked
                    || !move_coupon(
                        c,
                        op,
                        replacement,
                        (CouponStatus::Locked, CouponStatus::Used),
                        order_no,
                        "use",
                        None,
                    )
                    .await?
                {
                    return Err(lost());
                }
            }
        }
    }
    reload(c, order_no, op.now).await
}

/// Closes or refunds an order and releases or returns its coupon.
pub(crate) async fn end_order(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    from: OrderStatus,
    to: OrderStatus,
    action: &str,
    reason: Option<&str>,
) -> Result<(), ServiceError> {
    let now_ms = to_ms(op.now);
    let mut next = o.clone();
    match to {
        OrderStatus::Refunded => next.refunded_at = Some(now_ms),
        _ => next.closed_at = Some(now_ms),
    }
    next.checkout_lock_expires_at = None;
    if coupon_bound_to(c, o).await? {
        next.coupon_lock_status = CouponLockStatus::Released.as_str().into();
    }
    move_order(c, op, from, to, &next, action, reason).await?;
    let coupon_action = match to {
        OrderStatus::Refunded => "refund_release",
        _ => "cancel_release",
    };
    release_bound_coupon(c, op, o, coupon_action, reason).await?;
    Ok(())
}
