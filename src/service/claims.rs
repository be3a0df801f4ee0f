//! Claiming coupons (领券) and reading them.
//!
//! A claim is one transaction: per-user quota (an atomic upsert on the
//! `(template, user)` counter), one unit of stock from one shard (a
//! conditional increment), the coupon row and its event. Stock and limits
//! therefore hold under any concurrency; sharding keeps one hot template
//! from serializing every claim on PostgreSQL.

use super::jobs::Deadline;
use super::stock::{StockTake, take_stock};
use super::views::{CouponView, EventView};
use super::{Ctx, Executed, IdempotencyRequest, Refusal, Service, ServiceError};
use crate::domain::coupon::{CouponSource, CouponStatus};
use crate::domain::ids::{CouponId, TemplateId, UserId, new_coupon_code};
use crate::domain::template::{Validity, spread_window};
use crate::domain::time::{from_ms, to_ms};
use crate::store::archive;
use crate::store::coupons::{self, CouponRow};
use crate::store::events;
use crate::store::templates::{self, TemplateRow};
use chrono::{DateTime, Utc};

/// Most coupons one list call returns.
pub const MAX_LIST_LIMIT: i64 = 1000;
/// Coupon-code collisions retried before giving up (59-bit codes: a retry
/// is already a one-in-many-billions event).
const CODE_ATTEMPTS: usize = 3;

impl Service {
    /// Claims one coupon of `template_id` for `user_id`.
    pub async fn claim(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        user_id: UserId,
        template_id: TemplateId,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let op = self.op(ctx);
        let result = self
            .write_taking_stock(idem, move |c| {
                let user_id = user_id.clone();
                let template_id = template_id.clone();
                let op = op.clone();
                Box::pin(async move {
                    let new = NewCoupon {
                        id: CouponId::generate(to_ms(op.now)),
                        source: CouponSource::Claim,
                        action: "claim",
                    };
                    let (row, stock) =
                        claim_before_stock(c, &op, &user_id, &template_id, new).await?;
                    Ok((CouponView::from_row(row, op.now), Some(stock)))
                })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result
            && let Ok(ends_at) = crate::domain::time::parse_rfc3339(&v.ends_at)
        {
            self.schedule(ends_at, Deadline::CouponEnd(v.id.clone()));
        }
        result
    }

    /// The lazy path: a read that finds an `available` coupon past its end
    /// reports it `expired` (the view does) and hands it to the expiry
    /// worker, without writing in the read transaction.
    pub(crate) fn note_overdue(&self, row: &CouponRow, now: chrono::DateTime<chrono::Utc>) {
        if row.status == CouponStatus::Available && row.ends_at <= to_ms(now) {
            self.schedule(from_ms(row.ends_at), Deadline::CouponEnd(row.id.clone()));
        }
    }

    /// A coupon with its timeline.
    pub async fn get_coupon(&self, id: &CouponId) -> Result<CouponView, ServiceError> {
        let id = id.clone();
        let now = self.now();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                let (row, evs) = match coupons::get(c, &id).await? {
                    Some(row) => (row, events::for_coupon(c, &id).await?),
                    None => match archive::get(c, &id).await? {
                        Some(row) => (row, archive::events_for_coupon(c, &id).await?),
                        None => return Err(ServiceError::not_found("coupon", &id)),
                    },
                };
                Ok((row, evs))
            })
        })
        .await
        .map(|(row, evs)| {
            self.note_overdue(&row, now);
            let code = row.code.clone();
            let mut view = CouponView::from_row(row, now);
            view.events = Some(
                evs.into_iter()
                    .map(|e| EventView {
                        coupon_code: Some(code.clone()),
                        ..EventView::from(e)
                    })
                    .collect(),
            );
            view
        })
    }

    /// A user's coupons, newest first, filtered by effective status.
    pub async fn list_user_coupons(
        &self,
        user_id: UserId,
        status: Option<CouponStatus>,
        limit: i64,
    ) -> Result<Vec<CouponView>, ServiceError> {
        let now = self.now();
        let limit = limit.clamp(1, MAX_LIST_LIMIT);
        let rows = self
            .read(move |c| {
                let user_id = user_id.clone();
                Box::pin(async move {
                    let mut rows =
                        coupons::list_for_user(c, &user_id, status, to_ms(now), limit).await?;
                    // Archived coupons are all terminal: they belong to an
                    // unfiltered list and to lists of their own status.
                    let archived_status = match status {
                        None => Some(None),
                        Some(st) if st.is_terminal() => Some(Some(st.as_str())),
                        Some(_) => None,
                    };
                    let left = limit - rows.len() as i64;
                    if let Some(st) = archived_status
                        && left > 0
                    {
                        rows.extend(archive::list_for_user(c, &user_id, st, left).await?);
                    }
                    Ok(rows)
                })
            })
            .await?;
        for r in &rows {
            self.note_overdue(r, now);
        }
        Ok(rows
            .into_iter()
            .map(|r| CouponView::from_row(r, now))
            .collect())
    }
}

/// What a coupon made by [`claim_coupon`] is: its id (chosen by the
/// caller, so a code row can name it in the same transaction), how it came
/// to its holder and the action of its creation event.
pub(crate) struct NewCoupon {
    pub id: CouponId,
    pub source: CouponSource,
    pub action: &'static str,
}

/// One claim inside the caller's transaction, as the claim API makes it.
/// The wake-up planner runs it for a wake-up coupon inside the wake-up's
/// own transaction, so stock and limits hold the same way.
pub(crate) async fn claim_in_tx(
    c: &mut sqlx::AnyConnection,
    op: &super::Op,
    user_id: &UserId,
    template_id: &TemplateId,
) -> Result<CouponView, ServiceError> {
    let new = NewCoupon {
        id: CouponId::generate(to_ms(op.now)),
        source: CouponSource::Claim,
        action: "claim",
    };
    let row = claim_coupon(c, op, user_id, template_id, new).await?;
    Ok(CouponView::from_row(row, op.now))
}

/// The claim path, inside the caller's transaction: the template must be
/// open for claims and inside its validity; the per-user quota is taken
/// (an atomic upsert of the user's own row), the coupon row and its event
/// are written, and one unit of stock is taken last (one shard's
/// conditional increment, the row many claims share, locked only until
/// the COMMIT that follows). Every refusal is an error, so the caller's
/// transaction rolls back whatever it did before.
/// Claims, code redemptions and wake-up coupons all go through here: one
/// stock, one quota.
pub(crate) async fn claim_coupon(
    c: &mut sqlx::AnyConnection,
    op: &super::Op,
    user_id: &UserId,
    template_id: &TemplateId,
    new: NewCoupon,
) -> Result<CouponRow, ServiceError> {
    let (row, stock) = claim_before_stock(c, op, user_id, template_id, new).await?;
    stock.take(c).await?;
    Ok(row)
}

/// [`claim_coupon`] up to its unit of stock: the template's window and
/// state checked, the per-user quota taken, the coupon and its event
/// written; the unit of stock is returned to be taken last.
pub(crate) async fn claim_before_stock(
    c: &mut sqlx::AnyConnection,
    op: &super::Op,
    user_id: &UserId,
    template_id: &TemplateId,
    new: NewCoupon,
) -> Result<(CouponRow, StockTake), ServiceError> {
    let now = op.now;
    let (t, shards, terms) = templates::get_for_claim(c, template_id)
        .await?
        .ok_or_else(|| ServiceError::not_found("template", template_id))?;
    let window = claim_window(&t, now).ok_or_else(|| {
        ServiceError::refused(
            Refusal::TemplateInactive,
            "this template is not active: its coupons can no longer be claimed",
        )
    })?;
    if let Some(limit) = t.per_user_limit
        && !templates::take_user_quota(c, &t.id, user_id, limit).await?
    {
        return Err(ServiceError::refused(
            Refusal::ClaimLimitReached,
            format!("user already holds {limit} coupon(s) of this template"),
        ));
    }
    let mut row = coupon_of(&t, user_id, window, now, new.id, new.source);
    insert_coupon(c, &mut row, new.action, op, None).await?;
    // The unit of stock last: a stock shard is the one row every claim of
    // a popular template may need, so it is locked by the last statement
    // before the caller's COMMIT, not held across the coupon's writes. Out
    // of stock is a refusal, so the coupon above rolls back with it.
    let stock = StockTake {
        template_id: t.id.clone(),
        shards,
        terms,
    };
    Ok((row, stock))
}

/// The validity window a coupon of `t` claimed at `now` gets before any
/// expiry spread, or `None` when the template takes no claims now (paused,
/// claiming ended early, or its validity over). The claim and the bulk
/// issue both decide here.
pub(crate) fn claim_window(
    t: &TemplateRow,
    now: DateTime<Utc>,
) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let now_ms = to_ms(now);
    let validity = match t.valid_seconds {
        Some(seconds) => Validity::Relative {
            seconds,
            not_before: t.valid_from.map(from_ms),
            until: t.valid_until.map(from_ms),
        },
        None => Validity::Absolute {
            from: from_ms(t.valid_from.unwrap_or(t.created_at)),
            until: from_ms(t.valid_until.unwrap_or(t.created_at)),
        },
    };
    let window = validity.window_for_claim(now);
    // Paused, or claiming ended early: refused like an inactive template;
    // the validity window decides next.
    let open = t.status.accepts_claims() && t.claim_ends_at.is_none_or(|e| now_ms < e);
    window.filter(|_| open)
}

/// Takes the per-user quota and one unit of stock (from the template's
/// `shards`, read with it, whose terms were then `terms`, see
/// [`templates::get_for_claim`]) for one coupon of `t` for `user_id`, in
/// the caller's transaction. When the terms changed in between (a full
/// edit of a template nobody had claimed yet committed meanwhile), the
/// claim is refused as `template_inactive` and rolls back: a coupon never
/// carries terms its template no longer has. `Some(refusal)` (`claim_limit_reached` or
/// `out_of_stock`) when the rules say no; then nothing stays taken (a
/// quota taken before the stock ran out is given back), so a bulk issue
/// can go on with the next line in the same transaction.
pub(crate) async fn take_claim(
    c: &mut sqlx::AnyConnection,
    t: &TemplateRow,
    (shards, terms): (i64, &str),
    user_id: &UserId,
) -> Result<Option<Refusal>, ServiceError> {
    if let Some(limit) = t.per_user_limit
        && !templates::take_user_quota(c, &t.id, user_id, limit).await?
    {
        return Ok(Some(Refusal::ClaimLimitReached));
    }
    // From shard 0 up, not from a random shard: a bulk batch takes many
    // units in one transaction, and two batches that each took shards in
    // their own random order could each wait for the other's (a deadlock
    // on PostgreSQL); in one order they only queue.
    if !take_stock(c, &t.id, shards, terms, Some(0)).await? {
        if t.per_user_limit.is_some() {
            templates::give_back_user_quota(c, &t.id, user_id).await?;
        }
        return Ok(Some(Refusal::OutOfStock));
    }
    Ok(None)
}

/// The row of a new claimed `available` coupon of `t` for `user_id` in
/// `window` (from [`claim_window`]), with a new id.
pub(crate) fn template_coupon(
    t: &TemplateRow,
    user_id: &UserId,
    window: (DateTime<Utc>, DateTime<Utc>),
    now: DateTime<Utc>,
) -> CouponRow {
    let id = CouponId::generate(to_ms(now));
    coupon_of(t, user_id, window, now, id, CouponSource::Claim)
}

/// The row of a new `available` coupon of `t`: a spreading template's
/// coupon ends earlier by an offset drawn from its id (never later than
/// promised, see [`spread_window`]).
fn coupon_of(
    t: &TemplateRow,
    user_id: &UserId,
    window: (DateTime<Utc>, DateTime<Utc>),
    now: DateTime<Utc>,
    id: CouponId,
    source: CouponSource,
) -> CouponRow {
    let now_ms = to_ms(now);
    let (starts_at, ends_at) = spread_window(window, now, t.expiry_spread_seconds, &id);
    CouponRow {
        id,
        code: new_coupon_code(),
        user_id: user_id.clone(),
        template_id: Some(t.id.clone()),
        source,
        kind: t.kind,
        value_cents: t.value_cents,
        percent_off: t.percent_off,
        max_discount_cents: t.max_discount_cents,
        min_order_cents: t.min_order_cents,
        categories: t.categories.clone(),
        line_terms: t.line_terms.clone(),
        status: CouponStatus::Available,
        starts_at: to_ms(starts_at),
        ends_at: to_ms(ends_at),
        order_no: None,
        locked_at: None,
        used_at: None,
        created_at: now_ms,
        updated_at: now_ms,
    }
}

/// Inserts a new coupon and its creation event; draws a new code if the
/// unique code index refuses it (bounded by [`CODE_ATTEMPTS`]).
pub(crate) async fn insert_coupon(
    c: &mut sqlx::AnyConnection,
    row: &mut CouponRow,
    action: &str,
    op: &crate::service::Op,
    reason: Option<&str>,
) -> Result<(), ServiceError> {
    let ctx = &op.ctx;
    let creation = coupons::Creation {
        action,
        actor: &ctx.actor,
        reason,
        request_id: ctx.request_id.as_deref(),
        trace_id: ctx.trace_id(),
        address: ctx.address.as_deref(),
        day: op.day(),
    };
    for _ in 0..CODE_ATTEMPTS {
        if coupons::insert_new(c, row, &creation).await? {
            return Ok(());
        }
        row.code = new_coupon_code();
    }
    Err(ServiceError::IllegalTransition(
        "could not draw a unique coupon code".into(),
    ))
}
