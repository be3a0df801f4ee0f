//! Claiming coupons (领券) and reading them.
//!
//! A claim is one transaction: per-user quota (an atomic upsert on the
//! `(template, user)` counter), one unit of stock from one shard (a
//! conditional increment), the coupon row and its event. Stock and limits
//! therefore hold under any concurrency; sharding keeps one hot template
//! from serializing every claim on PostgreSQL.

use rand::Rng;

use super::jobs::Deadline;
use super::views::{CouponView, EventView};
use super::{Ctx, Executed, IdempotencyRequest, Refusal, Service, ServiceError};
use crate::domain::coupon::{CouponSource, CouponStatus};
use crate::domain::ids::{UserId, new_coupon_code, new_id};
use crate::domain::template::Validity;
use crate::domain::time::{from_ms, to_ms};
use crate::store::archive;
use crate::store::coupons::{self, CouponRow};
use crate::store::events::{self, NewEvent};
use crate::store::templates;

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
        template_id: String,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let op = self.op(ctx);
        let result = self
            .write(idem, move |c| {
                let user_id = user_id.clone();
                let template_id = template_id.clone();
                let op = op.clone();
                Box::pin(async move {
                    let now = op.now;
                    let t = templates::get(c, &template_id)
                        .await?
                        .ok_or_else(|| ServiceError::not_found("template", &template_id))?;
                    let row = claim_in_tx(
                        c,
                        &op,
                        &t,
                        &user_id,
                        NewCoupon {
                            id: new_id("cpn", to_ms(now)),
                            source: CouponSource::Claim,
                            action: "claim",
                        },
                    )
                    .await?;
                    Ok(CouponView::from_row(row, now))
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
    pub async fn get_coupon(&self, id: &str) -> Result<CouponView, ServiceError> {
        let id = id.to_string();
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
                        coupons::list_for_user(c, user_id.as_str(), status, to_ms(now), limit)
                            .await?;
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
                        rows.extend(archive::list_for_user(c, user_id.as_str(), st, left).await?);
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

/// What a coupon made by [`claim_in_tx`] is: its id (chosen by the
/// caller, so a code row can name it in the same transaction), how it came
/// to its holder and the action of its creation event.
pub(crate) struct NewCoupon {
    pub id: String,
    pub source: CouponSource,
    pub action: &'static str,
}

/// The claim path, inside the caller's transaction: the template must be
/// open for claims and inside its validity; the per-user quota (an
/// atomic upsert) and one unit of stock (one shard's conditional
/// increment) are taken; the coupon row and its event are written. Every
/// refusal is an error, so the caller's transaction rolls back whatever it
/// did before. Claims (`POST /users/{user_id}/coupons`) and code
/// redemptions (`POST /users/{user_id}/redemptions`) both go through here:
/// one stock, one quota.
pub(crate) async fn claim_in_tx(
    c: &mut sqlx::AnyConnection,
    op: &super::Op,
    t: &templates::TemplateRow,
    user_id: &UserId,
    new: NewCoupon,
) -> Result<CouponRow, ServiceError> {
    let now = op.now;
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
    let (starts_at, ends_at) = match (open, window) {
        (true, Some(w)) => w,
        _ => {
            return Err(ServiceError::refused(
                Refusal::TemplateInactive,
                "this template is not active: its coupons can no longer be claimed",
            ));
        }
    };
    if let Some(limit) = t.per_user_limit
        && !templates::take_user_quota(c, &t.id, user_id.as_str(), limit).await?
    {
        return Err(ServiceError::refused(
            Refusal::ClaimLimitReached,
            format!("user already holds {limit} coupon(s) of this template"),
        ));
    }
    if !take_stock(c, &t.id).await? {
        return Err(ServiceError::refused(
            Refusal::OutOfStock,
            "this template has no stock left",
        ));
    }
    let mut row = CouponRow {
        id: new.id,
        code: new_coupon_code(),
        user_id: user_id.as_str().to_string(),
        template_id: Some(t.id.clone()),
        source: new.source,
        kind: t.kind,
        value_cents: t.value_cents,
        percent_off: t.percent_off,
        max_discount_cents: t.max_discount_cents,
        min_order_cents: t.min_order_cents,
        categories: t.categories.clone(),
        status: CouponStatus::Available,
        starts_at: to_ms(starts_at),
        ends_at: to_ms(ends_at),
        order_no: None,
        locked_at: None,
        used_at: None,
        created_at: now_ms,
        updated_at: now_ms,
    };
    insert_coupon(c, &mut row, new.action, &op.ctx, None).await?;
    Ok(row)
}

/// Takes one unit of stock: tries each shard once, starting at a random
/// one so concurrent claims spread over different rows. Bounded by the
/// shard count (at most 16 statements).
async fn take_stock(c: &mut sqlx::AnyConnection, template_id: &str) -> Result<bool, ServiceError> {
    let n = templates::shard_count(c, template_id).await?.max(1);
    let start = rand::rng().random_range(0..n);
    for i in 0..n {
        if templates::take_from_shard(c, template_id, (start + i) % n).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Inserts a new coupon and its creation event; draws a new code if the
/// unique code index refuses it (bounded).
pub(crate) async fn insert_coupon(
    c: &mut sqlx::AnyConnection,
    row: &mut CouponRow,
    action: &str,
    ctx: &Ctx,
    reason: Option<&str>,
) -> Result<(), ServiceError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        // A failed INSERT inside a PostgreSQL transaction aborts it, so a
        // collision is checked for first instead of caught afterwards.
        if !coupons::code_taken(c, &row.code).await? {
            break;
        }
        if attempt >= CODE_ATTEMPTS {
            return Err(ServiceError::IllegalTransition(
                "could not draw a unique coupon code".into(),
            ));
        }
        row.code = new_coupon_code();
    }
    coupons::insert(c, row).await?;
    events::insert(
        c,
        &NewEvent {
            subject: "coupon",
            coupon_id: Some(&row.id),
            order_no: None,
            from_status: None,
            to_status: row.status.as_str(),
            action,
            actor: &ctx.actor,
            reason,
            request_id: ctx.request_id.as_deref(),
            address: ctx.address.as_deref(),
            at_ms: row.created_at,
        },
    )
    .await?;
    Ok(())
}
