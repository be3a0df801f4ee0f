//! Refunds by line (部分退款): `POST /orders/{no}/refunds` with the shop's
//! `refund_id` (the same id and body answer the same refund), the list of
//! an order's refunds, and the record of the whole-order refund of a paid
//! order, which refunds every unit left. The money and the coupons'
//! outcomes are [`plan_refund`]'s; each refund is one transaction that
//! takes the order row first (so two refunds of one order run one after
//! the other and the second sees what the first refunded), then writes
//! the lines with conditional updates, then the coupons.

use sqlx::AnyConnection;

use super::cart::{OrderCart, ensure_stored, load_cart};
use super::coupons::coupons_of;
use super::steps::{move_order, release_bound_coupon, release_coupon_of, require_status};
use crate::domain::FieldError;
use crate::domain::event::system_reasons;
use crate::domain::ids::{CouponId, OrderNo, RefundId, TemplateId, new_id};
use crate::domain::line::line_field;
use crate::domain::order::{CouponLockStatus, OrderStatus, OrderStep};
use crate::domain::refund::{
    CouponBook, CouponRefundOutcome, LineBook, RefundPlan, RefundSpec, plan_refund,
};
use crate::domain::report::Counts;
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::service::views::{RefundCouponView, RefundLineView, RefundView, coupon_terms};
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::counters::{self, Subject};
use crate::store::coupons;
use crate::store::events::{self, NewEvent};
use crate::store::ledger;
use crate::store::outbox::{self, NewMessage};
use crate::store::refunds::{self, NewRefund, RefundCouponRow, RefundLineRow, RefundRow};
use crate::store::{order_coupons, order_lines, orders};

impl Service {
    /// Whether the order already has a refund of this id (the API answers
    /// 200 for it again, 201 for a new one).
    pub async fn refund_exists(
        &self,
        order_no: &OrderNo,
        refund_id: &RefundId,
    ) -> Result<bool, ServiceError> {
        let (order_no, refund_id) = (order_no.clone(), refund_id.clone());
        self.read(move |c| {
            let (order_no, refund_id) = (order_no.clone(), refund_id.clone());
            Box::pin(async move { Ok(refunds::get(c, &order_no, &refund_id).await?.is_some()) })
        })
        .await
    }

    /// Refunds units of lines of a `paid` or `final_paid` order. The same
    /// `refund_id` with the same lines and reason answers the refund made
    /// first; with others, 409 `refund_exists`.
    pub async fn refund_lines(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        order_no: OrderNo,
        spec: RefundSpec,
    ) -> Result<Executed<RefundView>, ServiceError> {
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let order_no = order_no.clone();
            let spec = spec.clone();
            let op = op.clone();
            Box::pin(async move { refund_lines_tx(c, &op, &order_no, &spec).await })
        })
        .await
    }

    /// An order's refunds, oldest first.
    pub async fn refunds_of(&self, order_no: &OrderNo) -> Result<Vec<RefundView>, ServiceError> {
        let order_no = order_no.clone();
        self.read(move |c| {
            let order_no = order_no.clone();
            Box::pin(async move {
                let o = orders::get(c, &order_no)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
                let cart = load_cart(c, &o).await?;
                refund_views(c, &order_no, &cart, None).await
            })
        })
        .await
    }
}

/// The transaction of [`Service::refund_lines`].
async fn refund_lines_tx(
    c: &mut AnyConnection,
    op: &Op,
    order_no: &OrderNo,
    spec: &RefundSpec,
) -> Result<RefundView, ServiceError> {
    let o = orders::get_for_update(c, order_no)
        .await?
        .ok_or_else(|| ServiceError::not_found("order", order_no.as_str()))?;
    let mut cart = load_cart(c, &o).await?;
    if let Some(existing) = refunds::get(c, order_no, &spec.refund_id).await? {
        let view = refund_views(c, order_no, &cart, Some(&existing.refund_id))
            .await?
            .pop()
            .ok_or_else(|| ServiceError::not_found("refund", existing.refund_id.as_str()))?;
        let asked: Vec<_> = view
            .lines
            .iter()
            .map(|l| (l.line_id.clone(), l.quantity))
            .collect();
        if existing.whole == 0 && spec.same_request(&asked, &existing.reason) {
            return Ok(view);
        }
        return Err(ServiceError::refused(
            Refusal::RefundExists,
            format!(
                "order {order_no} already has refund {} with other lines or another reason",
                spec.refund_id
            ),
        ));
    }
    let from = require_status(&o, &[OrderStatus::Paid, OrderStatus::FinalPaid])?;
    let mut request = Vec::with_capacity(spec.lines.len());
    for (n, (line_id, quantity)) in spec.lines.iter().enumerate() {
        let index = cart
            .lines
            .iter()
            .position(|l| l.line_id == *line_id)
            .ok_or_else(|| {
                FieldError::new(
                    line_field(n, "line_id"),
                    format!("is not a line of order {order_no}"),
                )
            })?;
        request.push((index, *quantity));
    }
    ensure_stored(c, &o, &mut cart).await?;
    let refund = apply_refund(
        c,
        op,
        &o,
        from,
        &mut cart,
        Refunding {
            refund_id: spec.refund_id.clone(),
            whole: false,
            reason: &spec.reason,
            request: &request,
        },
    )
    .await?;
    outbox::insert_many_traced(
        c,
        &[NewMessage {
            event_type: "order.partially_refunded",
            user_id: Some(o.user_id.clone()),
            subject_id: Some(o.order_no.to_string()),
            payload: serde_json::to_string(&refund).unwrap_or_else(|_| "{}".into()),
            created_at: to_ms(op.now),
        }],
        op.ctx.trace.as_ref(),
    )
    .await?;
    Ok(refund)
}

/// One refund to apply.
pub(super) struct Refunding<'a> {
    pub refund_id: RefundId,
    /// The whole-order refund of the units left.
    pub whole: bool,
    pub reason: &'a str,
    /// `(line index, units)`.
    pub request: &'a [(usize, i64)],
}

/// The whole-order refund of a paid order: every unit left, recorded as a
/// refund (`whole`). Returns the refund's plan; the caller moves the order
/// to `refunded` and returns its coupon.
pub(super) async fn refund_remainder(
    c: &mut AnyConnection,
    op: &Op,
    o: &orders::OrderRow,
    reason: &str,
) -> Result<RefundPlan, ServiceError> {
    let mut cart = load_cart(c, o).await?;
    ensure_stored(c, o, &mut cart).await?;
    let request: Vec<(usize, i64)> = cart
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.quantity > l.refunded_quantity)
        .map(|(i, l)| (i, l.quantity - l.refunded_quantity))
        .collect();
    let refund_id = RefundId::from_stored(new_id("rfd", to_ms(op.now)));
    let (plan, refunded) = plan_of(c, o, &cart, &request).await?;
    write_refund(
        c,
        op,
        o,
        &cart,
        &Refunding {
            refund_id,
            whole: true,
            reason,
            request: &request,
        },
        &plan,
        &refunded,
    )
    .await?;
    Ok(plan)
}

/// A coupon a refund plans for: its id and its template (whose report
/// counters count the discount of the refunded units).
#[derive(Debug, Clone)]
struct RefundedCoupon {
    id: CouponId,
    template_id: Option<TemplateId>,
    /// 0: the order row's coupon; from 1: a further one.
    position: i64,
}

/// The order is refunded in full: each compensation its final payment gave
/// (a deduction or a compensation coupon) gets its reversal in the ledger,
/// a negative entry, at most once (`ledger::insert_reversal`).
pub(super) async fn reverse_compensation(
    c: &mut AnyConnection,
    op: &Op,
    o: &orders::OrderRow,
) -> Result<(), ServiceError> {
    for entry in ledger::reversible_of_order(c, &o.order_no).await? {
        ledger::insert_reversal(
            c,
            &entry,
            system_reasons::REFUND_REVERSAL,
            &op.ctx.actor,
            op.ctx.request_id.as_deref(),
            to_ms(op.now),
            op.day(),
        )
        .await?;
    }
    Ok(())
}

/// The order's coupons as a refund reads them: only a coupon spent on the
/// order (lock `used`) can be kept or returned, each by its own lines.
async fn coupon_books(
    c: &mut AnyConnection,
    o: &orders::OrderRow,
    cart: &OrderCart,
) -> Result<Vec<(RefundedCoupon, CouponBook)>, ServiceError> {
    let mut out = Vec::new();
    for held in coupons_of(c, o).await? {
        if held.lock_status != CouponLockStatus::Used {
            continue;
        }
        let id = &held.coupon_id;
        // Archived since its use: the terms a refund needs are the ones it
        // was used with, which the archive keeps.
        let row = match coupons::get(c, id).await? {
            Some(row) => row,
            None => match crate::store::archive::get(c, id).await? {
                Some(row) => row,
                None => continue,
            },
        };
        let coupon = RefundedCoupon {
            id: id.clone(),
            template_id: row.template_id.clone(),
            position: held.position,
        };
        out.push((coupon, book_of(c, o, cart, &row).await?));
    }
    Ok(out)
}

/// A coupon's terms, split and earlier clawback, as a refund reads them.
async fn book_of(
    c: &mut AnyConnection,
    o: &orders::OrderRow,
    cart: &OrderCart,
    row: &coupons::CouponRow,
) -> Result<CouponBook, ServiceError> {
    let id = &row.id;
    let terms = coupon_terms(row);
    let clawed_back = refunds::coupons_of(c, &o.order_no, None)
        .await?
        .iter()
        .any(|r| r.coupon_id == *id && !r.clawback_cents.is_zero());
    Ok(CouponBook {
        refund_rule: terms.refund_rule,
        min_order: terms.min_order,
        shares: cart.split_of(id),
        clawed_back,
    })
}

/// The plan of refunding `request` on the order as it stands, with the
/// coupons its `coupons` outcomes are for (in the same order).
async fn plan_of(
    c: &mut AnyConnection,
    o: &orders::OrderRow,
    cart: &OrderCart,
    request: &[(usize, i64)],
) -> Result<(RefundPlan, Vec<RefundedCoupon>), ServiceError> {
    let books: Vec<LineBook> = cart
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| LineBook {
            quantity: l.quantity,
            refunded_quantity: l.refunded_quantity,
            unit_price: l.unit_price_cents,
            payable: cart.payable(i),
            discount: cart.line_discount(i),
        })
        .collect();
    let (refunded, coupons): (Vec<RefundedCoupon>, Vec<CouponBook>) =
        coupon_books(c, o, cart).await?.into_iter().unzip();
    let plan = plan_refund(&books, &coupons, request).map_err(|e| {
        let line = cart
            .lines
            .get(e.index)
            .map(|l| l.line_id.to_string())
            .unwrap_or_default();
        ServiceError::refused(
            Refusal::RefundExceedsOrder,
            format!("line {line} has {} units left to refund", e.left),
        )
    })?;
    Ok((plan, refunded))
}

/// Decides and applies one refund by line: the order row, the lines, the
/// refund's rows, the event, then the coupons it returns; the order
/// becomes `refunded` with its last unit.
async fn apply_refund(
    c: &mut AnyConnection,
    op: &Op,
    o: &orders::OrderRow,
    from: OrderStatus,
    cart: &mut OrderCart,
    r: Refunding<'_>,
) -> Result<RefundView, ServiceError> {
    let (plan, refunded) = plan_of(c, o, cart, r.request).await?;
    let returned: Vec<&RefundedCoupon> = plan
        .coupons
        .iter()
        .zip(&refunded)
        .filter(|(p, _)| p.outcome == CouponRefundOutcome::Returned)
        .map(|(_, coupon)| coupon)
        .collect();
    let lock_status = if returned.iter().any(|r| r.position == 0) {
        CouponLockStatus::Released
    } else {
        o.coupon_lock_status
    };
    if !orders::add_refund(
        c,
        &o.order_no,
        from,
        o.refund_count,
        plan.refund,
        lock_status,
        to_ms(op.now),
    )
    .await?
    {
        return Err(ServiceError::refused(
            Refusal::InvalidOrderStatus,
            format!("order {} changed meanwhile; read it again", o.order_no),
        ));
    }
    write_refund(c, op, o, cart, &r, &plan, &refunded).await?;
    if plan.order_fully_refunded {
        let mut next = o.clone();
        next.refunded_at = Some(to_ms(op.now));
        next.refunded_cents = o.refunded_cents.saturating_add(plan.refund);
        next.refund_count = o.refund_count + 1;
        next.coupon_lock_status = lock_status;
        move_order(c, op, from, OrderStep::Refund, &next, Some(r.reason)).await?;
        reverse_compensation(c, op, o).await?;
    } else {
        events::insert(
            c,
            &NewEvent {
                subject: "order",
                coupon_id: o.coupon_id.as_ref(),
                order_no: Some(&o.order_no),
                from_status: Some(from.as_str()),
                to_status: from.as_str(),
                action: crate::domain::event::EventAction::PartialRefund.as_str(),
                actor: &op.ctx.actor,
                reason: Some(r.reason),
                request_id: op.ctx.request_id.as_deref(),
                trace_id: op.ctx.trace_id(),
                address: op.ctx.address.as_deref(),
                at_ms: to_ms(op.now),
            },
        )
        .await?;
    }
    for coupon in returned {
        if coupon.position == 0 {
            release_bound_coupon(c, op, o, "refund_release", Some(r.reason)).await?;
            continue;
        }
        release_coupon_of(c, op, o, &coupon.id, "refund_release", Some(r.reason)).await?;
        if !order_coupons::move_lock(
            c,
            &o.order_no,
            &coupon.id,
            (CouponLockStatus::Used, CouponLockStatus::Released),
        )
        .await?
        {
            return Err(ServiceError::refused(
                Refusal::CouponLockMismatch,
                "the order's coupons changed meanwhile; try again",
            ));
        }
    }
    let refreshed = load_cart(c, o).await?;
    *cart = refreshed;
    let mut views = refund_views(c, &o.order_no, cart, Some(&r.refund_id)).await?;
    views
        .pop()
        .ok_or_else(|| ServiceError::not_found("refund", r.refund_id.as_str()))
}

/// Writes a decided refund: each line's refunded units and money
/// (conditional on what the plan read), and the refund's rows.
async fn write_refund(
    c: &mut AnyConnection,
    op: &Op,
    o: &orders::OrderRow,
    cart: &OrderCart,
    r: &Refunding<'_>,
    plan: &RefundPlan,
    coupons: &[RefundedCoupon],
) -> Result<(), ServiceError> {
    for l in &plan.lines {
        let Some(line) = cart.lines.get(l.index) else {
            continue;
        };
        if !order_lines::add_refund(
            c,
            &o.order_no,
            line.line_no,
            line.refunded_quantity,
            l.quantity,
            l.refund,
        )
        .await?
        {
            return Err(ServiceError::refused(
                Refusal::RefundExceedsOrder,
                format!(
                    "line {} was refunded meanwhile; read the order again",
                    line.line_id
                ),
            ));
        }
    }
    refunds::insert(
        c,
        &NewRefund {
            order_no: &o.order_no,
            refund: RefundRow {
                refund_id: r.refund_id.clone(),
                whole: i64::from(r.whole),
                reason: r.reason.to_string(),
                refund_cents: plan.refund,
                clawback_cents: plan.clawback,
                actor: op.ctx.actor.clone(),
                at: to_ms(op.now),
            },
            lines: plan
                .lines
                .iter()
                .filter_map(|l| {
                    cart.lines.get(l.index).map(|line| RefundLineRow {
                        refund_id: r.refund_id.clone(),
                        line_no: line.line_no,
                        quantity: l.quantity,
                        refund_cents: l.refund,
                        discount_cents: l.discount,
                    })
                })
                .collect(),
            coupons: coupons
                .iter()
                .zip(&plan.coupons)
                .map(|(coupon, p)| RefundCouponRow {
                    refund_id: r.refund_id.clone(),
                    coupon_id: coupon.id.clone(),
                    outcome: p.outcome,
                    clawback_cents: p.clawback,
                    discount_cents: p.discount,
                })
                .collect(),
        },
    )
    .await?;
    // The report counters: each coupon's share of the refunded units, on
    // its template and on the order's campaign, on the refund's day.
    for (coupon, p) in coupons.iter().zip(&plan.coupons) {
        if p.discount.is_zero() {
            continue;
        }
        let delta = Counts {
            refunded_discount_cents: p.discount.get(),
            ..Counts::default()
        };
        if let Some(t) = &coupon.template_id {
            counters::add(c, Subject::Template, t.as_str(), op.day(), &delta).await?;
        }
        if let Some(campaign) = &o.campaign_id {
            counters::add(c, Subject::Campaign, campaign.as_str(), op.day(), &delta).await?;
        }
    }
    Ok(())
}

/// An order's refunds as the API shows them (one, or all oldest first).
pub(crate) async fn refund_views(
    c: &mut AnyConnection,
    order_no: &OrderNo,
    cart: &OrderCart,
    only: Option<&RefundId>,
) -> Result<Vec<RefundView>, ServiceError> {
    let rows = match only {
        Some(id) => refunds::get(c, order_no, id).await?.into_iter().collect(),
        None => refunds::of_order(c, order_no).await?,
    };
    let lines = refunds::lines_of(c, order_no, only).await?;
    let coupons = refunds::coupons_of(c, order_no, only).await?;
    let line_id = |line_no: i64| {
        cart.lines
            .iter()
            .find(|l| l.line_no == line_no)
            .map(|l| l.line_id.clone())
    };
    Ok(rows
        .into_iter()
        .map(|r| RefundView {
            order_no: order_no.clone(),
            at: rfc3339(from_ms(r.at)),
            lines: lines
                .iter()
                .filter(|l| l.refund_id == r.refund_id)
                .filter_map(|l| {
                    Some(RefundLineView {
                        line_id: line_id(l.line_no)?,
                        quantity: l.quantity,
                        refund_cents: l.refund_cents,
                        discount_cents: l.discount_cents,
                    })
                })
                .collect(),
            refund_cents: r.refund_cents,
            clawback_cents: r.clawback_cents,
            coupons: coupons
                .iter()
                .filter(|c| c.refund_id == r.refund_id)
                .map(|c| RefundCouponView {
                    coupon_id: c.coupon_id.clone(),
                    outcome: c.outcome,
                    clawback_cents: c.clawback_cents,
                    discount_cents: c.discount_cents,
                })
                .collect(),
            reason: r.reason,
            whole: r.whole != 0,
            actor: r.actor,
            refund_id: r.refund_id,
        })
        .collect())
}
