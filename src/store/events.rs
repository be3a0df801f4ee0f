//! The `events` table: one row per state change of a coupon or an order.

use crate::domain::ids::{CouponId, OrderNo};
use sqlx::AnyConnection;

/// A state change to record. Written in the same transaction as the change.
#[derive(Debug, Clone)]
pub struct NewEvent<'a> {
    /// `"coupon"` or `"order"`.
    pub subject: &'static str,
    pub coupon_id: Option<&'a CouponId>,
    pub order_no: Option<&'a OrderNo>,
    pub from_status: Option<&'a str>,
    pub to_status: &'a str,
    pub action: &'a str,
    pub actor: &'a str,
    pub reason: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// The W3C trace id of the request (32 hex digits), when it had one.
    pub trace_id: Option<&'a str>,
    /// The client address of the request, for the audit log.
    pub address: Option<&'a str>,
    pub at_ms: i64,
}

pub async fn insert(conn: &mut AnyConnection, e: &NewEvent<'_>) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("events.insert");
    sqlx::query(
        "INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(e.subject)
    .bind(e.coupon_id)
    .bind(e.order_no)
    .bind(e.from_status)
    .bind(e.to_status)
    .bind(e.action)
    .bind(e.actor)
    .bind(e.reason)
    .bind(e.request_id)
    .bind(e.at_ms)
    .bind(e.address)
    .bind(e.trace_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A stored event.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub id: i64,
    pub subject: String,
    pub coupon_id: Option<CouponId>,
    pub order_no: Option<OrderNo>,
    pub from_status: Option<String>,
    pub to_status: String,
    pub action: String,
    pub actor: String,
    pub reason: Option<String>,
    pub request_id: Option<String>,
    pub at: i64,
}

const COLUMNS: &str = "id, subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at";

/// Most events returned for one coupon or order; a coupon's life has a
/// handful, so this only guards against a runaway writer.
pub const MAX_EVENTS: i64 = 1000;

/// A coupon's own transitions, oldest first.
pub async fn for_coupon(
    conn: &mut AnyConnection,
    coupon_id: &CouponId,
) -> Result<Vec<EventRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM events WHERE coupon_id = $1 AND subject = 'coupon' ORDER BY id LIMIT $2"
    ))
    .bind(coupon_id)
    .bind(MAX_EVENTS)
    .fetch_all(conn)
    .await
}

/// Everything that happened to an order and to coupons on its account,
/// oldest first.
pub async fn for_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<EventRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM events WHERE order_no = $1 ORDER BY id LIMIT $2"
    ))
    .bind(order_no)
    .bind(MAX_EVENTS)
    .fetch_all(conn)
    .await
}

/// The latest event of a coupon (its own transitions), else of an order
/// (`events_coupon_idx`, `events_order_idx`): who last changed it.
pub async fn latest(
    conn: &mut AnyConnection,
    coupon_id: Option<&CouponId>,
    order_no: Option<&OrderNo>,
) -> Result<Option<EventRow>, sqlx::Error> {
    match (coupon_id, order_no) {
        (Some(id), _) => {
            sqlx::query_as(&format!(
                "SELECT {COLUMNS} FROM events WHERE coupon_id = $1 ORDER BY id DESC LIMIT 1"
            ))
            .bind(id)
            .fetch_optional(conn)
            .await
        }
        (None, Some(no)) => {
            sqlx::query_as(&format!(
                "SELECT {COLUMNS} FROM events WHERE order_no = $1 ORDER BY id DESC LIMIT 1"
            ))
            .bind(no)
            .fetch_optional(conn)
            .await
        }
        (None, None) => Ok(None),
    }
}
