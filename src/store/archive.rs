//! Moving old terminal coupons and their events to the archive tables, in
//! bounded batches, reading them back, and bringing one back to the hot
//! tables when its order returns it (a refund after the archive ran).

use sqlx::AnyConnection;

use super::coupons::{self, COLUMNS, CouponRow};
use super::events::EventRow;
use super::{Backend, backend_of};
use crate::domain::ids::{CouponId, OrderNo, UserId};

/// Moves up to `batch` coupons that are `expired`, `invalidated` or `used`
/// and unchanged since before `before_ms`, with their coupon events, to the
/// archive tables. Returns how many coupons moved. One transaction (the
/// caller's); the candidate query is bounded and uses the
/// `(status, updated_at)` index.
pub async fn archive_batch(
    conn: &mut AnyConnection,
    before_ms: i64,
    batch: i64,
    now_ms: i64,
) -> Result<usize, sqlx::Error> {
    // PostgreSQL: the candidates are locked, and a row another transaction
    // is changing (a refund returning the coupon) is skipped. Otherwise the
    // copy below would take the version from before that change and the
    // DELETE, waiting for it, would then remove the returned coupon. SQLite
    // runs one write transaction at a time.
    let lock = match backend_of(conn) {
        Backend::Postgres => "FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    let ids: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT id FROM coupons WHERE status IN ('expired', 'invalidated', 'used') AND updated_at < $1
         ORDER BY updated_at LIMIT $2 {lock}"
    ))
    .bind(before_ms)
    .bind(batch)
    .fetch_all(&mut *conn)
    .await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let list = |first: usize| -> String {
        (0..ids.len())
            .map(|i| format!("${}", i + first))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let copy_sql = format!(
        "INSERT INTO coupons_archive ({COLUMNS}, archived_at) SELECT {COLUMNS}, $1 FROM coupons WHERE id IN ({})",
        list(2)
    );
    let mut copy = sqlx::query(&copy_sql).bind(now_ms);
    for id in &ids {
        copy = copy.bind(id.as_str());
    }
    copy.execute(&mut *conn).await?;
    let rest = [
        format!(
            "INSERT INTO events_archive (id, subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id)
             SELECT id, subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id
             FROM events WHERE subject = 'coupon' AND coupon_id IN ({})",
            list(1)
        ),
        format!("DELETE FROM events WHERE subject = 'coupon' AND coupon_id IN ({})", list(1)),
        format!("DELETE FROM coupons WHERE id IN ({})", list(1)),
    ];
    for sql in &rest {
        let mut q = sqlx::query(sql);
        for id in &ids {
            q = q.bind(id.as_str());
        }
        q.execute(&mut *conn).await?;
    }
    Ok(ids.len())
}

/// An archived coupon.
pub async fn get(
    conn: &mut AnyConnection,
    id: &CouponId,
) -> Result<Option<CouponRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM coupons_archive WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A coupon by id, live or archived: the live table first, then the
/// archive (a terminal coupon moves there after the archive delay).
pub async fn get_live_or_archived(
    conn: &mut AnyConnection,
    id: &CouponId,
) -> Result<Option<CouponRow>, sqlx::Error> {
    if let Some(r) = super::coupons::get(conn, id).await? {
        return Ok(Some(r));
    }
    get(conn, id).await
}

/// An archived coupon's events, oldest first.
pub async fn events_for_coupon(
    conn: &mut AnyConnection,
    id: &CouponId,
) -> Result<Vec<EventRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at
         FROM events_archive WHERE coupon_id = $1 ORDER BY id LIMIT 1000",
    )
    .bind(id)
    .fetch_all(conn)
    .await
}

/// A user's archived coupons, newest first.
pub async fn list_for_user(
    conn: &mut AnyConnection,
    user_id: &UserId,
    status: Option<&str>,
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    match status {
        Some(s) => {
            sqlx::query_as(&format!(
                "SELECT {COLUMNS} FROM coupons_archive WHERE user_id = $1 AND status = $3
                 ORDER BY created_at DESC, id DESC LIMIT $2"
            ))
            .bind(user_id)
            .bind(limit)
            .bind(s)
            .fetch_all(conn)
            .await
        }
        None => {
            sqlx::query_as(&format!(
                "SELECT {COLUMNS} FROM coupons_archive WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
            ))
            .bind(user_id)
            .bind(limit)
            .fetch_all(conn)
            .await
        }
    }
}

/// Moves an archived coupon that is `used` by order `order_no` back to the
/// `coupons` table, with its coupon events (their ids kept, so the coupon's
/// and the order's timelines stay in order), in the caller's transaction.
/// The archive row is taken with one conditional DELETE: `Ok(None)` when no
/// archived coupon `id` is used by that order (never archived, not bound to
/// it, or already brought back by someone else); nothing was written then.
pub async fn restore_used(
    conn: &mut AnyConnection,
    id: &CouponId,
    order_no: &OrderNo,
) -> Result<Option<CouponRow>, sqlx::Error> {
    let taken: Option<CouponRow> = sqlx::query_as(&format!(
        "DELETE FROM coupons_archive WHERE id = $1 AND order_no = $2 AND status = 'used' RETURNING {COLUMNS}"
    ))
    .bind(id)
    .bind(order_no)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = taken else {
        return Ok(None);
    };
    coupons::insert(conn, &row).await?;
    // PostgreSQL's identity column takes an explicit id only when told to;
    // the archived ids came from that same identity, so none is taken.
    let overriding = match backend_of(conn) {
        Backend::Postgres => "OVERRIDING SYSTEM VALUE",
        Backend::Sqlite => "",
    };
    sqlx::query(&format!(
        "INSERT INTO events (id, subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id)
         {overriding}
         SELECT id, subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id
         FROM events_archive WHERE coupon_id = $1"
    ))
    .bind(id)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM events_archive WHERE coupon_id = $1")
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(Some(row))
}
