//! Reminder tables (`reminder_slots`, `reminder_marks`,
//! `order_reminder_marks`, `user_messages`, `user_activity`) and the candidate queries of the
//! reminder planner. SQL only; the rules are in `domain::reminder`.

use sqlx::AnyConnection;

use crate::domain::discount::DiscountKind;
use crate::domain::ids::{CampaignId, CouponId, OrderNo, ReminderSlotId, UserId};
use crate::domain::money::Cents;

/// A coupon that reached an offset and is not yet reminded for it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OpenerRow {
    pub id: CouponId,
    pub user_id: UserId,
    pub ends_at: i64,
}

/// One of a user's candidates, with what the reminder needs of it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CandidateRow {
    pub id: CouponId,
    pub ends_at: i64,
    pub kind: DiscountKind,
    pub value_cents: Option<Cents>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<Cents>,
}

/// Most of one user's candidates read per offset: far above any real
/// wallet; beyond it the next run goes on.
pub const USER_CANDIDATES: i64 = 1000;

/// `available` coupons with `ends_at` in `(lo_ms, hi_ms]` that existed when
/// they reached the offset, in `(ends_at, id)` order after the keyset
/// cursor. Served by `(status, ends_at)`. Marked coupons are filtered
/// afterwards by [`marked`]: primary-key probes whose plan cannot turn into
/// a scan of the marks, whatever the statistics say (an anti-join here
/// chose a sequential scan of `reminder_marks` per row on a freshly filled,
/// not yet analysed table).
#[allow(clippy::too_many_arguments)]
pub async fn due_openers(
    conn: &mut AnyConnection,
    offset_seconds: i64,
    lo_ms: i64,
    hi_ms: i64,
    after_ends_at: i64,
    after_id: &CouponId,
    limit: i64,
) -> Result<Vec<OpenerRow>, sqlx::Error> {
    let _timed = super::timing::call("reminders.due_openers");
    sqlx::query_as(
        "SELECT c.id, c.user_id, c.ends_at FROM coupons c
         WHERE c.status = 'available' AND c.ends_at > $1 AND c.ends_at <= $2
           AND (c.ends_at > $3 OR (c.ends_at = $3 AND c.id > $4))
           AND c.created_at <= c.ends_at - $5
         ORDER BY c.ends_at, c.id LIMIT $6",
    )
    .bind(lo_ms)
    .bind(hi_ms)
    .bind(after_ends_at)
    .bind(after_id)
    .bind(offset_seconds * 1000)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Which of `ids` are already marked for the offset.
pub async fn marked(
    conn: &mut AnyConnection,
    offset_seconds: i64,
    ids: &[CouponId],
) -> Result<std::collections::HashSet<CouponId>, sqlx::Error> {
    let _timed = super::timing::call("reminders.marked");
    let mut out = std::collections::HashSet::new();
    for chunk in ids.chunks(500) {
        let list = (0..chunk.len())
            .map(|i| format!("${}", i + 2))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT coupon_id FROM reminder_marks WHERE offset_seconds = $1 AND coupon_id IN ({list})"
        );
        let mut q = sqlx::query_scalar::<_, CouponId>(&sql).bind(offset_seconds);
        for id in chunk {
            q = q.bind(id);
        }
        out.extend(q.fetch_all(&mut *conn).await?);
    }
    Ok(out)
}

/// One user's unmarked `available` coupons for an offset with `ends_at` in
/// `(lo_ms, hi_ms]`, earliest end first. Served by `(user_id, status,
/// ends_at, id)`; marks filtered by [`marked`].
pub async fn user_candidates(
    conn: &mut AnyConnection,
    user_id: &UserId,
    offset_seconds: i64,
    lo_ms: i64,
    hi_ms: i64,
) -> Result<Vec<CandidateRow>, sqlx::Error> {
    let _timed = super::timing::call("reminders.user_candidates");
    let rows: Vec<CandidateRow> = sqlx::query_as(
        "SELECT c.id, c.ends_at, c.kind, c.value_cents, c.percent_off, c.max_discount_cents
         FROM coupons c
         WHERE c.user_id = $1 AND c.status = 'available' AND c.ends_at > $2 AND c.ends_at <= $3
           AND c.created_at <= c.ends_at - $4
         ORDER BY c.ends_at, c.id LIMIT $5",
    )
    .bind(user_id)
    .bind(lo_ms)
    .bind(hi_ms)
    .bind(offset_seconds * 1000)
    .bind(USER_CANDIDATES)
    .fetch_all(&mut *conn)
    .await?;
    let ids: Vec<CouponId> = rows.iter().map(|r| r.id.clone()).collect();
    let done = marked(conn, offset_seconds, &ids).await?;
    Ok(rows
        .into_iter()
        .filter(|r| !done.contains(r.id.as_str()))
        .collect())
}

/// Marks coupons as reminded at an offset. A coupon already marked (another
/// instance, or a run that committed just before) fails the statement with
/// a unique violation, which rolls the caller's transaction back.
pub async fn insert_marks(
    conn: &mut AnyConnection,
    coupon_ids: &[CouponId],
    offset_seconds: i64,
    slot_id: &ReminderSlotId,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("reminders.insert_marks");
    for chunk in coupon_ids.chunks(300) {
        let mut sql =
            String::from("INSERT INTO reminder_marks (coupon_id, offset_seconds, slot_id) VALUES ");
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("(${}, $1, $2)", i + 3));
        }
        let mut q = sqlx::query(&sql).bind(offset_seconds).bind(slot_id);
        for id in chunk {
            q = q.bind(id);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// A reminder sent.
#[derive(Debug, Clone)]
pub struct NewSlot<'a> {
    pub id: &'a ReminderSlotId,
    pub user_id: &'a UserId,
    pub offset_seconds: i64,
    pub opened_at: i64,
    pub send_at: i64,
    pub sent_at: i64,
    pub channel: &'a str,
    pub coupon_count: i64,
    pub total_value_cents: Cents,
}

pub async fn insert_slot(conn: &mut AnyConnection, s: &NewSlot<'_>) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("reminders.insert_slot");
    sqlx::query(
        "INSERT INTO reminder_slots (id, user_id, offset_seconds, opened_at, send_at, sent_at, channel, coupon_count, total_value_cents)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(s.id)
    .bind(s.user_id)
    .bind(s.offset_seconds)
    .bind(s.opened_at)
    .bind(s.send_at)
    .bind(s.sent_at)
    .bind(s.channel)
    .bind(s.coupon_count)
    .bind(s.total_value_cents)
    .execute(conn)
    .await?;
    Ok(())
}

/// This user's reminders on `channel` sent since `since_ms` (rate limits).
pub async fn sent_since(
    conn: &mut AnyConnection,
    user_id: &UserId,
    channel: &str,
    since_ms: i64,
) -> Result<i64, sqlx::Error> {
    let _timed = super::timing::call("reminders.sent_since");
    sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM reminder_slots
         WHERE user_id = $1 AND sent_at > $2 AND channel = $3",
    )
    .bind(user_id)
    .bind(since_ms)
    .bind(channel)
    .fetch_one(conn)
    .await
}

/// The user's latest claim, order or self-check visit, in ms (the sms
/// tier's activity test). Three index lookups: `coupons (user_id, ...)`,
/// `orders (user_id, ...)` and the primary key of `user_activity`.
pub async fn last_activity(
    conn: &mut AnyConnection,
    user_id: &UserId,
) -> Result<Option<i64>, sqlx::Error> {
    let _timed = super::timing::call("reminders.last_activity");
    let claim: Option<i64> = sqlx::query_scalar(
        "SELECT MAX(created_at) FROM coupons WHERE user_id = $1 AND source = 'claim'",
    )
    .bind(user_id)
    .fetch_one(&mut *conn)
    .await?;
    let order: Option<i64> =
        sqlx::query_scalar("SELECT MAX(created_at) FROM orders WHERE user_id = $1")
            .bind(user_id)
            .fetch_one(&mut *conn)
            .await?;
    let visit = last_self_check(conn, user_id).await?;
    Ok(claim.max(order).max(visit))
}

/// When a valid self-check link last opened this user's page, in ms.
pub async fn last_self_check(
    conn: &mut AnyConnection,
    user_id: &UserId,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar("SELECT last_self_check_at FROM user_activity WHERE user_id = $1")
        .bind(user_id)
        .fetch_optional(conn)
        .await
}

/// Records a self-check visit at `now_ms` unless one was recorded less than
/// `min_gap_ms` before (an upsert both stores understand). True when it
/// wrote.
pub async fn record_self_check(
    conn: &mut AnyConnection,
    user_id: &UserId,
    now_ms: i64,
    min_gap_ms: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO user_activity (user_id, last_self_check_at) VALUES ($1, $2)
         ON CONFLICT (user_id) DO UPDATE SET last_self_check_at = excluded.last_self_check_at
         WHERE user_activity.last_self_check_at <= excluded.last_self_check_at - $3",
    )
    .bind(user_id)
    .bind(now_ms)
    .bind(min_gap_ms)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The in-app copy of a reminder: a catalog key and its arguments as a
/// JSON object (`Msg::args_json`), rendered in the reader's language when
/// read.
#[derive(Debug, Clone)]
pub struct NewUserMessage<'a> {
    pub user_id: &'a UserId,
    pub kind: &'a str,
    pub subject_id: Option<&'a str>,
    pub message_key: &'a str,
    pub message_args: &'a str,
    pub created_at: i64,
}

pub async fn insert_user_message(
    conn: &mut AnyConnection,
    m: &NewUserMessage<'_>,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("reminders.insert_user_message");
    sqlx::query(
        "INSERT INTO user_messages
             (user_id, kind, subject_id, message_key, message_args, created_at, read_at)
         VALUES ($1, $2, $3, $4, $5, $6, NULL)",
    )
    .bind(m.user_id)
    .bind(m.kind)
    .bind(m.subject_id)
    .bind(m.message_key)
    .bind(m.message_args)
    .bind(m.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// One in-app message as the customer's list shows it (key and JSON
/// arguments, as written by [`insert_user_message`]).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserMessageRow {
    pub id: i64,
    pub kind: String,
    pub message_key: String,
    pub message_args: String,
    pub created_at: i64,
    pub read_at: Option<i64>,
}

/// One user's latest `limit` in-app messages, newest first. Served by
/// `user_messages (user_id, id)`, read backwards.
pub async fn user_messages(
    conn: &mut AnyConnection,
    user_id: &UserId,
    limit: i64,
) -> Result<Vec<UserMessageRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, kind, message_key, message_args, created_at, read_at FROM user_messages
         WHERE user_id = $1 ORDER BY id DESC LIMIT $2",
    )
    .bind(user_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Marks this user's unread messages read at `now_ms`; already read ones
/// keep their time. The number marked.
pub async fn mark_user_messages_read(
    conn: &mut AnyConnection,
    user_id: &UserId,
    now_ms: i64,
) -> Result<u64, sqlx::Error> {
    let done =
        sqlx::query("UPDATE user_messages SET read_at = $2 WHERE user_id = $1 AND read_at IS NULL")
            .bind(user_id)
            .bind(now_ms)
            .execute(conn)
            .await?;
    Ok(done.rows_affected())
}

/// Marks a presale reminder of an order as sent; false when it already was.
pub async fn mark_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    kind: &str,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("reminders.mark_order");
    let done = sqlx::query(
        "INSERT INTO order_reminder_marks (order_no, kind, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (order_no, kind) DO NOTHING",
    )
    .bind(order_no)
    .bind(kind)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Campaigns whose final-payment window is open at `now_ms`.
pub async fn open_campaigns(
    conn: &mut AnyConnection,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<(CampaignId, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, final_payment_starts_at, final_payment_ends_at FROM presale_campaigns
         WHERE final_payment_ends_at > $1 AND final_payment_starts_at <= $1
         ORDER BY final_payment_ends_at, id LIMIT $2",
    )
    .bind(now_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// A campaign's `deposit_paid` orders, paid before its window opened, not
/// yet told that it opened.
pub async fn orders_to_tell_open(
    conn: &mut AnyConnection,
    campaign_id: &CampaignId,
    starts_ms: i64,
    limit: i64,
) -> Result<Vec<OrderNo>, sqlx::Error> {
    let _timed = super::timing::call("reminders.orders_to_tell_open");
    sqlx::query_scalar(
        "SELECT o.order_no FROM orders o
         WHERE o.campaign_id = $1 AND o.status = 'deposit_paid' AND o.deposit_paid_at < $2
           AND NOT EXISTS (SELECT 1 FROM order_reminder_marks m
                           WHERE m.order_no = o.order_no AND m.kind = 'final_payment_open')
         ORDER BY o.order_no LIMIT $3",
    )
    .bind(campaign_id)
    .bind(starts_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// A strict-policy order whose locked coupon ends before its window opens.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StrictRiskRow {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub deposit_paid_at: Option<i64>,
    pub coupon_id: CouponId,
    pub ends_at: i64,
    pub final_payment_starts_at: i64,
}

/// Strict-policy `deposit_paid` orders whose window has not opened and
/// whose coupon, still locked to them, ends before it opens but has not
/// ended yet and ends by `ends_by_ms`; without the second warning.
/// Earliest end first.
///
/// `ends_by_ms` is now plus the largest reminder offset: a warning is due
/// at its coupon's end minus an offset, so no coupon ending later can have
/// one due yet. The bound is what keeps this planner query small: without
/// it every run (once a second) walks every deposit-paid order of every
/// strict campaign still before its window, however far its coupon's end.
pub async fn strict_risks(
    conn: &mut AnyConnection,
    now_ms: i64,
    ends_by_ms: i64,
    limit: i64,
) -> Result<Vec<StrictRiskRow>, sqlx::Error> {
    let _timed = super::timing::call("reminders.strict_risks");
    sqlx::query_as(STRICT_RISKS_SQL)
        .bind(now_ms)
        .bind(ends_by_ms)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// The statement of [`strict_risks`] (`$1` now, `$2` ends by, `$3` limit),
/// public so a test can `EXPLAIN` it. Written coupons first with `CROSS
/// JOIN`, which SQLite takes as the join order (PostgreSQL still plans
/// freely): the `(status, ends_at)` range of locked coupons ending soon is
/// the small side; each finds its order and campaign by primary key.
pub const STRICT_RISKS_SQL: &str =
    "SELECT o.order_no, o.user_id, o.deposit_paid_at, c.id AS coupon_id, c.ends_at,
                p.final_payment_starts_at
         FROM coupons c
         CROSS JOIN orders o
         CROSS JOIN presale_campaigns p
         WHERE c.status = 'locked' AND c.ends_at > $1 AND c.ends_at <= $2
           AND o.order_no = c.order_no AND o.coupon_id = c.id
           AND p.id = o.campaign_id
           AND p.policy = 'strict' AND p.final_payment_starts_at > $1
           AND o.status = 'deposit_paid'
           AND c.ends_at <= p.final_payment_starts_at
           AND NOT EXISTS (SELECT 1 FROM order_reminder_marks m
                           WHERE m.order_no = o.order_no AND m.kind = 'strict_warning_before_end')
         ORDER BY c.ends_at, o.order_no LIMIT $3";

/// Reminders sent since `since_ms`, counted by channel and offset (the
/// console's reminder page). A range of `reminder_slots_sent_idx`; the
/// result is at most 3 channels times the offsets ever configured.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SlotCount {
    pub channel: String,
    pub offset_seconds: i64,
    pub n: i64,
}

pub async fn slot_counts_since(
    conn: &mut AnyConnection,
    since_ms: i64,
) -> Result<Vec<SlotCount>, sqlx::Error> {
    sqlx::query_as(
        "SELECT channel, offset_seconds, CAST(COUNT(*) AS BIGINT) AS n FROM reminder_slots
         WHERE sent_at > $1
         GROUP BY channel, offset_seconds
         ORDER BY offset_seconds DESC, channel",
    )
    .bind(since_ms)
    .fetch_all(conn)
    .await
}

/// One reminder as the console lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SlotRow {
    pub id: ReminderSlotId,
    pub user_id: UserId,
    pub offset_seconds: i64,
    pub send_at: i64,
    pub sent_at: i64,
    pub channel: String,
    pub coupon_count: i64,
    pub total_value_cents: Cents,
}

/// The `limit` most recently sent reminders, newest first (a backward
/// walk of `reminder_slots_sent_idx`).
pub async fn recent_slots(
    conn: &mut AnyConnection,
    limit: i64,
) -> Result<Vec<SlotRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, user_id, offset_seconds, send_at, sent_at, channel, coupon_count, total_value_cents
         FROM reminder_slots ORDER BY sent_at DESC, id DESC LIMIT $1",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}
