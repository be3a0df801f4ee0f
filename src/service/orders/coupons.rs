//! An order's coupons (叠加): the one the order row names (the platform
//! coupon, else the first shop coupon) and its further coupons
//! (`order_coupons`). The coupons asked for are checked and applied by
//! one rule ([`crate::domain::stacking::apply_on_order`]) and then move
//! together: every one locked, used, released or returned in the
//! transaction that moves the order, so an order never holds some of its
//! coupons and not others.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::steps::{load_coupon, move_coupon, on_order, release_coupon_of, unfit};
use crate::domain::coupon::CouponStatus;
use crate::domain::discount::CouponTerms;
use crate::domain::final_payment::CouponLockMismatch;
use crate::domain::ids::{CouponId, OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::order::CouponLockStatus;
use crate::domain::picker::{OrderTerms, Unfit};
use crate::domain::stacking::{Applied, AppliedCoupon, Clash, Refused, apply_on_order};
use crate::i18n::Msg;
use crate::service::views::coupon_terms;
use crate::service::{Op, Refusal, ServiceError};
use crate::store::coupons::CouponRow;
use crate::store::order_coupons::{self, FurtherCouponRow};
use crate::store::orders::OrderRow;

/// One coupon of an order, as the order keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OrderCoupon {
    /// 0: the coupon the order row names; from 1: a further coupon.
    pub position: i64,
    pub coupon_id: CouponId,
    pub discount: Cents,
    /// Its discount as snapshotted at a presale order's deposit.
    pub snapshot: Cents,
    pub lock_status: CouponLockStatus,
    /// Deducted from a presale order's final payment in its place.
    pub compensation: Cents,
    /// The expired coupon it replaced at a presale order's final payment.
    pub replaced_coupon_id: Option<CouponId>,
}

/// Every coupon of an order, the order row's first. The order row keeps
/// the discounts' sum, so its own coupon's discount is what the further
/// coupons leave of it.
pub(crate) async fn coupons_of(
    c: &mut AnyConnection,
    o: &OrderRow,
) -> Result<Vec<OrderCoupon>, ServiceError> {
    let Some(first) = o.coupon_id.clone() else {
        return Ok(Vec::new());
    };
    let further = order_coupons::of_order(c, &o.order_no).await?;
    Ok(listed(o, first, further))
}

/// [`coupons_of`] from rows already read.
pub(crate) fn listed(
    o: &OrderRow,
    first: CouponId,
    further: Vec<FurtherCouponRow>,
) -> Vec<OrderCoupon> {
    let (discounts, snapshots, compensations) =
        further
            .iter()
            .fold((Cents::ZERO, Cents::ZERO, Cents::ZERO), |(d, s, k), r| {
                (
                    d.saturating_add(r.discount_cents),
                    s.saturating_add(r.snapshot_cents),
                    k.saturating_add(r.compensation_cents),
                )
            });
    let mut out = Vec::with_capacity(further.len() + 1);
    out.push(OrderCoupon {
        position: 0,
        coupon_id: first,
        discount: o.coupon_discount_cents.saturating_sub(discounts),
        snapshot: o.discount_snapshot_cents.saturating_sub(snapshots),
        lock_status: o.coupon_lock_status,
        compensation: o.compensation_cents.saturating_sub(compensations),
        replaced_coupon_id: o.replaced_coupon_id.clone(),
    });
    out.extend(further.into_iter().map(|r| OrderCoupon {
        position: r.position,
        coupon_id: r.coupon_id,
        discount: r.discount_cents,
        snapshot: r.snapshot_cents,
        lock_status: r.lock_status,
        compensation: r.compensation_cents,
        replaced_coupon_id: r.replaced_coupon_id,
    }));
    out
}

/// The coupons asked for, checked and applied, in the order the order
/// keeps them: the platform coupon first (else the first shop coupon),
/// then the others as listed.
pub(super) struct Chosen {
    pub rows: Vec<CouponRow>,
    pub applied: Vec<AppliedCoupon>,
    pub total: Cents,
}

/// Loads, checks and applies the coupons `ids` for `user_id`'s order of
/// `order` (see [`apply_on_order`]); a coupon that does not fit is
/// refused as alone, named when there are several.
pub(super) async fn choose(
    c: &mut AnyConnection,
    user_id: &UserId,
    order: &OrderTerms<'_>,
    ids: &[CouponId],
    now: DateTime<Utc>,
) -> Result<Chosen, ServiceError> {
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        rows.push(load_coupon(c, id).await?);
    }
    // The platform coupon first: the order row names it.
    if let Some(p) = rows
        .iter()
        .position(|r| coupon_terms(r).scope.shop_id.is_none())
    {
        let platform = rows.remove(p);
        rows.insert(0, platform);
    }
    let terms: Vec<CouponTerms> = rows.iter().map(coupon_terms).collect();
    let on: Vec<_> = rows
        .iter()
        .zip(&terms)
        .map(|(r, t)| on_order(r, user_id, t))
        .collect();
    let Applied { coupons, total } = apply_on_order(order, &on, now).map_err(|refused| {
        let name = |i: usize| rows.get(i).map(|r| r.id.to_string()).unwrap_or_default();
        match refused {
            Refused::Unfit { coupon, why } if rows.len() > 1 => unfit(why).about(match why {
                Unfit::ThresholdNotMet { shortfall } => Msg::new("refusal-detail-coupon-short")
                    .arg("coupon", name(coupon))
                    .arg("short", shortfall.shown()),
                _ => Msg::new("refusal-detail-coupon").arg("coupon", name(coupon)),
            }),
            Refused::Unfit { why, .. } => unfit(why),
            Refused::Clash(clash) => {
                let detail = match clash {
                    Clash::NotStackable { coupon } => {
                        Msg::new("refusal-detail-not-stackable").arg("coupon", name(coupon))
                    }
                    Clash::SameShop {
                        shop,
                        first,
                        second,
                    } => Msg::new("refusal-detail-same-shop")
                        .arg("first", name(first))
                        .arg("second", name(second))
                        .arg("shop", shop.to_string()),
                    Clash::TwoPlatform { first, second } => Msg::new("refusal-detail-two-platform")
                        .arg("first", name(first))
                        .arg("second", name(second)),
                };
                ServiceError::refused_about(
                    Refusal::CouponsNotCombinable,
                    "these coupons may not go on one order together",
                    detail,
                )
            }
        }
    })?;
    Ok(Chosen {
        rows,
        applied: coupons,
        total,
    })
}

impl Chosen {
    /// The further coupons' rows (all but the first), with their
    /// discounts, snapshots and lock state.
    pub fn further(&self, snapshot: bool, lock_status: CouponLockStatus) -> Vec<FurtherCouponRow> {
        self.rows
            .iter()
            .zip(&self.applied)
            .enumerate()
            .skip(1)
            .map(|(i, (r, a))| FurtherCouponRow {
                position: i64::try_from(i).unwrap_or(i64::MAX),
                coupon_id: r.id.clone(),
                discount_cents: a.discount,
                snapshot_cents: if snapshot { a.discount } else { Cents::ZERO },
                lock_status,
                replaced_coupon_id: None,
                compensation_cents: Cents::ZERO,
            })
            .collect()
    }
}

/// Moves every coupon of `coupons` from `from` to `to` for the order,
/// and each further coupon's lock state from `locks.0` to `locks.1`; the
/// first coupon that is no longer in `from` refuses the whole change
/// (the caller's transaction rolls back, so nothing moved).
pub(super) async fn move_all(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    coupons: &[OrderCoupon],
    (from, to): (CouponStatus, CouponStatus),
    locks: (CouponLockStatus, CouponLockStatus),
    action: &str,
) -> Result<(), ServiceError> {
    for cp in coupons {
        let moved =
            move_coupon(c, op, &cp.coupon_id, (from, to), &o.order_no, action, None).await?;
        let kept = cp.position == 0
            || order_coupons::move_lock(c, &o.order_no, &cp.coupon_id, locks).await?;
        if !moved || !kept {
            let message = format!(
                "coupon {} was just locked or changed by another request",
                cp.coupon_id
            );
            return Err(if from == CouponStatus::Available {
                ServiceError::refused(Refusal::CouponNotAvailable, message)
            } else {
                lock_mismatch(c, &o.order_no, &cp.coupon_id, message).await?
            });
        }
    }
    Ok(())
}

/// The refusal of a coupon of order `order_no` that is no longer locked
/// to it, saying (from the coupon as stored now) whether it is not locked
/// at all or locked to another order.
pub(crate) async fn lock_mismatch(
    c: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    message: impl Into<String>,
) -> Result<ServiceError, ServiceError> {
    let row = load_coupon(c, coupon_id).await?;
    let mismatch = CouponLockMismatch::of(row.status, row.order_no.as_ref(), order_no)
        // Locked here yet refused: the order's own record of the coupon
        // moved, so to this order it is not locked.
        .unwrap_or(CouponLockMismatch::NotLocked);
    Ok(ServiceError::lock_mismatch(mismatch, message))
}

/// Releases (locked) or returns (used) each further coupon still held
/// for the order, and marks it released on the order; the order row's
/// coupon is the caller's ([`super::steps::release_bound_coupon`]).
pub(crate) async fn release_further(
    c: &mut AnyConnection,
    op: &Op,
    o: &OrderRow,
    action: &str,
    reason: Option<&str>,
) -> Result<(), ServiceError> {
    for cp in order_coupons::of_order(c, &o.order_no).await? {
        if !matches!(
            cp.lock_status,
            CouponLockStatus::Locked | CouponLockStatus::Used
        ) {
            continue;
        }
        release_coupon_of(c, op, o, &cp.coupon_id, action, reason).await?;
        if !order_coupons::move_lock(
            c,
            &o.order_no,
            &cp.coupon_id,
            (cp.lock_status, CouponLockStatus::Released),
        )
        .await?
        {
            return Err(ServiceError::refused(
                Refusal::CouponLockMismatch,
                "the order's coupons changed meanwhile; try again",
            ));
        }
    }
    Ok(())
}
