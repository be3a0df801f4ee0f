//! Pending reminder pop-ups (`reminder_popups`): one row per reminder that
//! went by `popup`, pending until the customer has seen it (`seen_at`) or
//! its coupons have all ended. Its coupons are its reminder's marks
//! (`reminder_marks.slot_id`). SQL only; the rules are in
//! `domain::reminder`, the reading in `service::reminder_popups`.

use sqlx::AnyConnection;

use crate::domain::discount::DiscountKind;
use crate::domain::ids::{CouponId, ReminderSlotId, UserId};
use crate::domain::money::Cents;

/// Writes a pop-up, pending, in the reminder's transaction. `ends_by_ms`:
/// the latest end of its coupons.
pub async fn insert(
    conn: &mut AnyConnection,
    slot_id: &ReminderSlotId,
    user_id: &UserId,
    created_at_ms: i64,
    ends_by_ms: i64,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("reminder_popups.insert");
    sqlx::query(
        "INSERT INTO reminder_popups (slot_id, user_id, created_at, ends_by, seen_at)
         VALUES ($1, $2, $3, $4, NULL)",
    )
    .bind(slot_id)
    .bind(user_id)
    .bind(created_at_ms)
    .bind(ends_by_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// A pop-up not yet seen whose latest coupon has not ended.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PendingRow {
    pub slot_id: ReminderSlotId,
    pub created_at: i64,
}

/// This user's unseen pop-ups whose coupons do not all end by `now_ms`,
/// newest first, at most `limit`. Served by `reminder_popups_pending_idx`.
pub async fn pending(
    conn: &mut AnyConnection,
    user_id: &UserId,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<PendingRow>, sqlx::Error> {
    let _timed = super::timing::call("reminder_popups.pending");
    sqlx::query_as(
        "SELECT slot_id, created_at FROM reminder_popups
         WHERE user_id = $1 AND seen_at IS NULL AND ends_by > $2
         ORDER BY created_at DESC, slot_id DESC LIMIT $3",
    )
    .bind(user_id)
    .bind(now_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// One coupon of a pop-up that is still usable, with its pop-up and what
/// the message needs of it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LiveCouponRow {
    pub slot_id: ReminderSlotId,
    pub id: CouponId,
    pub ends_at: i64,
    pub kind: DiscountKind,
    pub value_cents: Option<Cents>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<Cents>,
}

/// The coupons of the pop-ups `slots` still `available` and not ended at
/// `now_ms`, in one statement: by pop-up, earliest end first, at most
/// `limit` in all (the caller asks for its pop-ups' count times one
/// reminder's bound). Served by `reminder_marks_slot_idx` and the
/// coupons' primary key.
pub async fn live_coupons(
    conn: &mut AnyConnection,
    slots: &[ReminderSlotId],
    user_id: &UserId,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<LiveCouponRow>, sqlx::Error> {
    let _timed = super::timing::call("reminder_popups.live_coupons");
    if slots.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT m.slot_id, c.id, c.ends_at, c.kind, c.value_cents, c.percent_off, c.max_discount_cents
         FROM reminder_marks m JOIN coupons c ON c.id = m.coupon_id
         WHERE m.slot_id IN ({}) AND c.user_id = $1 AND c.status = 'available' AND c.ends_at > $2
         ORDER BY m.slot_id, c.ends_at, c.id LIMIT $3",
        super::param_list(4, slots.len())
    );
    let mut q = sqlx::query_as::<_, LiveCouponRow>(&sql)
        .bind(user_id)
        .bind(now_ms)
        .bind(limit);
    for slot in slots {
        q = q.bind(slot);
    }
    q.fetch_all(conn).await
}

/// Marks this user's unseen pop-ups seen at `now_ms` (only those of `ids`
/// when given); a pop-up already seen keeps its time. The number marked.
pub async fn mark_seen(
    conn: &mut AnyConnection,
    user_id: &UserId,
    ids: Option<&[ReminderSlotId]>,
    now_ms: i64,
) -> Result<u64, sqlx::Error> {
    let _timed = super::timing::call("reminder_popups.mark_seen");
    let Some(ids) = ids else {
        let done = sqlx::query(
            "UPDATE reminder_popups SET seen_at = $2 WHERE user_id = $1 AND seen_at IS NULL",
        )
        .bind(user_id)
        .bind(now_ms)
        .execute(conn)
        .await?;
        return Ok(done.rows_affected());
    };
    let mut marked = 0;
    for chunk in ids.chunks(100) {
        let list = (0..chunk.len())
            .map(|i| format!("${}", i + 3))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "UPDATE reminder_popups SET seen_at = $2
             WHERE user_id = $1 AND seen_at IS NULL AND slot_id IN ({list})"
        );
        let mut q = sqlx::query(&sql).bind(user_id).bind(now_ms);
        for id in chunk {
            q = q.bind(id);
        }
        marked += q.execute(&mut *conn).await?.rows_affected();
    }
    Ok(marked)
}
