//! The `orders` table: the coupon side of the shop's orders.

use sqlx::AnyConnection;

use super::dynamic::{self, Sql};
use super::events::{self, NewEvent};
use super::{Backend, backend_of};
use crate::domain::ids::{CampaignId, CouponId, OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::order::{
    CouponLockStatus, IllegalOrderTransition, OrderKind, OrderStatus, OrderStep,
};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct OrderRow {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub kind: OrderKind,
    pub category: String,
    pub status: OrderStatus,
    pub total_cents: Cents,
    pub deposit_cents: Cents,
    pub campaign_id: Option<CampaignId>,
    pub coupon_id: Option<CouponId>,
    pub replaced_coupon_id: Option<CouponId>,
    pub coupon_discount_cents: Cents,
    pub discount_snapshot_cents: Cents,
    pub coupon_lock_status: CouponLockStatus,
    pub compensation_cents: Cents,
    pub final_payment_cents: Option<Cents>,
    pub checkout_lock_expires_at: Option<i64>,
    pub created_at: i64,
    pub deposit_paid_at: Option<i64>,
    pub paid_at: Option<i64>,
    pub closed_at: Option<i64>,
    pub refunded_at: Option<i64>,
    pub updated_at: i64,
    /// What the customer got back, summed over the order's refunds.
    pub refunded_cents: Cents,
    /// How many refunds the order had (the guard of the next one).
    pub refund_count: i64,
}

pub(crate) const COLUMNS: &str = "order_no, user_id, kind, category, status, total_cents, deposit_cents, campaign_id, coupon_id, \
     replaced_coupon_id, coupon_discount_cents, discount_snapshot_cents, coupon_lock_status, compensation_cents, \
     final_payment_cents, checkout_lock_expires_at, created_at, deposit_paid_at, paid_at, closed_at, refunded_at, updated_at, \
     refunded_cents, refund_count";

pub async fn insert(conn: &mut AnyConnection, o: &OrderRow) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("orders.insert");
    sqlx::query(&format!(
        "INSERT INTO orders ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)"
    ))
    .bind(&o.order_no)
    .bind(&o.user_id)
    .bind(o.kind.as_str())
    .bind(&o.category)
    .bind(o.status.as_str())
    .bind(o.total_cents)
    .bind(o.deposit_cents)
    .bind(&o.campaign_id)
    .bind(&o.coupon_id)
    .bind(&o.replaced_coupon_id)
    .bind(o.coupon_discount_cents)
    .bind(o.discount_snapshot_cents)
    .bind(o.coupon_lock_status.as_str())
    .bind(o.compensation_cents)
    .bind(o.final_payment_cents)
    .bind(o.checkout_lock_expires_at)
    .bind(o.created_at)
    .bind(o.deposit_paid_at)
    .bind(o.paid_at)
    .bind(o.closed_at)
    .bind(o.refunded_at)
    .bind(o.updated_at)
    .bind(o.refunded_cents)
    .bind(o.refund_count)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Option<OrderRow>, sqlx::Error> {
    let _timed = super::timing::call("orders.get");
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM orders WHERE order_no = $1"))
        .bind(order_no)
        .fetch_optional(conn)
        .await
}

/// An order read to be changed by a refund: on PostgreSQL its row is
/// locked (`FOR UPDATE`) until the transaction ends, so two refunds of one
/// order take turns and the second reads what the first wrote; SQLite's
/// write transactions take turns already.
pub async fn get_for_update(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Option<OrderRow>, sqlx::Error> {
    let _timed = super::timing::call("orders.get_for_update");
    let lock = match backend_of(conn) {
        Backend::Postgres => " FOR UPDATE",
        Backend::Sqlite => "",
    };
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM orders WHERE order_no = $1{lock}"
    ))
    .bind(order_no)
    .fetch_optional(conn)
    .await
}

/// Orders that name a coupon, newest first (normally at most one live).
pub async fn naming_coupon(
    conn: &mut AnyConnection,
    coupon_id: &CouponId,
) -> Result<Vec<OrderRow>, sqlx::Error> {
    let _timed = super::timing::call("orders.naming_coupon");
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM orders WHERE coupon_id = $1 ORDER BY created_at DESC LIMIT 100"
    ))
    .bind(coupon_id)
    .fetch_all(conn)
    .await
}

/// The new values an order transition writes besides its status. The
/// transition copies the whole row back, so the caller states the complete
/// new money and coupon fields; only the status is conditional.
#[derive(Debug, Clone)]
pub struct OrderChange<'a> {
    pub kind: OrderKind,
    pub from: OrderStatus,
    /// What happened; the domain decides the status it leads to.
    pub step: OrderStep,
    /// The row with its new field values (its status is the step's target).
    pub next: &'a OrderRow,
    pub actor: &'a str,
    pub reason: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// The client address of the request (audit log).
    pub address: Option<&'a str>,
    /// The W3C trace id of the request, for the event row.
    pub trace_id: Option<&'a str>,
    pub now_ms: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum OrderChangeError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("{0}")]
    Illegal(IllegalOrderTransition),
}

/// Moves an order from `from` by `step` (to [`OrderStep::target`]) with one
/// conditional UPDATE (`WHERE order_no = ? AND status = ?`) and writes the
/// event when it changed. `Ok(None)`: the order was no longer in `from`;
/// `Ok(Some(row))`: the row as now stored (`next` with the target status
/// and `updated_at`), so the caller can answer without reading it again.
///
/// On PostgreSQL the UPDATE and the event INSERT are one statement (a
/// data-modifying CTE: the event is inserted from the UPDATE's RETURNING,
/// so it exists exactly when the order moved): one round trip instead of
/// two, which `bench http` showed is what an order action pays for.
pub async fn transition(
    conn: &mut AnyConnection,
    c: &OrderChange<'_>,
) -> Result<Option<OrderRow>, OrderChangeError> {
    let _timed = super::timing::call("orders.transition");
    let to = c
        .step
        .target(c.kind, c.from)
        .map_err(OrderChangeError::Illegal)?;
    let n = c.next;
    let backend = backend_of(conn);
    let q = sqlx::query(transition_sql(backend))
        .bind(&n.order_no)
        .bind(c.from.as_str())
        .bind(to.as_str())
        .bind(&n.coupon_id)
        .bind(&n.replaced_coupon_id)
        .bind(n.coupon_discount_cents)
        .bind(n.discount_snapshot_cents)
        .bind(n.coupon_lock_status.as_str())
        .bind(n.compensation_cents)
        .bind(n.final_payment_cents)
        .bind(n.checkout_lock_expires_at)
        .bind(n.deposit_paid_at)
        .bind(n.paid_at)
        .bind(n.closed_at)
        .bind(n.refunded_at)
        .bind(c.now_ms)
        .bind(n.refunded_cents)
        .bind(n.refund_count);
    let q = match backend {
        Backend::Postgres => q
            .bind(c.step.as_str())
            .bind(c.actor)
            .bind(c.reason)
            .bind(c.request_id)
            .bind(c.address)
            .bind(c.trace_id),
        Backend::Sqlite => q,
    };
    let changed = q.execute(&mut *conn).await?.rows_affected() == 1;
    if !changed {
        return Ok(None);
    }
    if backend == Backend::Sqlite {
        events::insert(
            conn,
            &NewEvent {
                subject: "order",
                coupon_id: n.coupon_id.as_ref(),
                order_no: Some(&n.order_no),
                from_status: Some(c.from.as_str()),
                to_status: to.as_str(),
                action: c.step.as_str(),
                actor: c.actor,
                reason: c.reason,
                request_id: c.request_id,
                trace_id: c.trace_id,
                address: c.address,
                at_ms: c.now_ms,
            },
        )
        .await?;
    }
    let mut stored = n.clone();
    stored.status = to;
    stored.updated_at = c.now_ms;
    Ok(Some(stored))
}

/// The UPDATE of [`transition`] ($1 order_no, $2 from, $3 to, $4-$15 the
/// new field values, $16 now, $17-$18 the refund totals); on PostgreSQL
/// with its event INSERT in the same statement ($19 step, $20 actor, $21
/// reason, $22 request id, $23 address, $24 trace id), whose row count is then the
/// UPDATE's.
fn transition_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => {
            "WITH moved AS (
                 UPDATE orders SET status = $3, coupon_id = $4, replaced_coupon_id = $5, coupon_discount_cents = $6,
                     discount_snapshot_cents = $7, coupon_lock_status = $8, compensation_cents = $9,
                     final_payment_cents = $10, checkout_lock_expires_at = $11, deposit_paid_at = $12, paid_at = $13,
                     closed_at = $14, refunded_at = $15, updated_at = $16, refunded_cents = $17, refund_count = $18
                 WHERE order_no = $1 AND status = $2
                 RETURNING order_no, coupon_id)
             INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id)
             SELECT 'order', moved.coupon_id, moved.order_no, $2, $3, $19, $20, $21, $22, $16, $23, $24 FROM moved"
        }
        Backend::Sqlite => {
            "UPDATE orders SET status = $3, coupon_id = $4, replaced_coupon_id = $5, coupon_discount_cents = $6,
                 discount_snapshot_cents = $7, coupon_lock_status = $8, compensation_cents = $9,
                 final_payment_cents = $10, checkout_lock_expires_at = $11, deposit_paid_at = $12, paid_at = $13,
                 closed_at = $14, refunded_at = $15, updated_at = $16, refunded_cents = $17, refund_count = $18
             WHERE order_no = $1 AND status = $2"
        }
    }
}

/// Records one more refund of `cents` on an order still in `status` whose
/// refund count is still `count` (the conditional update two refunds of
/// one order race on). `Ok(false)`: the order changed meanwhile; nothing
/// was written.
pub async fn add_refund(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    status: OrderStatus,
    count: i64,
    cents: Cents,
    lock_status: CouponLockStatus,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("orders.add_refund");
    let r = sqlx::query(
        "UPDATE orders SET refunded_cents = refunded_cents + $4, refund_count = refund_count + 1,
             coupon_lock_status = $5, updated_at = $6
         WHERE order_no = $1 AND status = $2 AND refund_count = $3",
    )
    .bind(order_no)
    .bind(status.as_str())
    .bind(count)
    .bind(cents)
    .bind(lock_status.as_str())
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Points an order at `coupon_id` with lock status `lock_status`, with one
/// conditional UPDATE: only while the order is still in `status` and still
/// names `expected_coupon_id` (or none). Writes the order's event row.
/// `Ok(false)`: the order changed meanwhile; nothing was written.
pub async fn relink_coupon(conn: &mut AnyConnection, r: &Relink<'_>) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("orders.relink_coupon");
    let guard = match r.expected_coupon_id {
        Some(_) => "coupon_id = $6",
        None => "coupon_id IS NULL",
    };
    let sql = format!(
        "UPDATE orders SET coupon_id = $3, coupon_lock_status = $4, updated_at = $5
         WHERE order_no = $1 AND status = $2 AND {guard}"
    );
    let q = sqlx::query(&sql)
        .bind(r.order_no)
        .bind(r.status.as_str())
        .bind(r.coupon_id)
        .bind(r.lock_status.as_str())
        .bind(r.now_ms);
    let q = match r.expected_coupon_id {
        Some(expected) => q.bind(expected),
        None => q,
    };
    let changed = q.execute(&mut *conn).await?.rows_affected() == 1;
    if changed {
        events::insert(
            conn,
            &NewEvent {
                subject: "order",
                coupon_id: Some(r.coupon_id),
                order_no: Some(r.order_no),
                from_status: Some(r.status.as_str()),
                to_status: r.status.as_str(),
                action: r.action,
                actor: r.actor,
                reason: Some(r.reason),
                request_id: r.request_id,
                trace_id: r.trace_id,
                address: r.address,
                at_ms: r.now_ms,
            },
        )
        .await?;
    }
    Ok(changed)
}

/// What [`relink_coupon`] changes and why.
pub struct Relink<'a> {
    pub order_no: &'a OrderNo,
    /// The order's status, which must not have changed.
    pub status: OrderStatus,
    /// The coupon the order must still name (`None`: no coupon).
    pub expected_coupon_id: Option<&'a CouponId>,
    pub coupon_id: &'a CouponId,
    /// `locked` or `used`.
    pub lock_status: CouponLockStatus,
    pub action: &'a str,
    pub actor: &'a str,
    pub reason: &'a str,
    pub request_id: Option<&'a str>,
    /// The client address of the request (audit log).
    pub address: Option<&'a str>,
    /// The W3C trace id of the request, for the event row.
    pub trace_id: Option<&'a str>,
    pub now_ms: i64,
}

/// The filters of the order list ([`page`]); `None` means any.
#[derive(Debug, Clone, Default)]
pub struct OrderPageQuery<'a> {
    pub status: Option<OrderStatus>,
    pub kind: Option<OrderKind>,
    pub campaign_id: Option<&'a CampaignId>,
    pub coupon_lock_status: Option<CouponLockStatus>,
    /// `created_at >= this` (ms).
    pub created_from: Option<i64>,
    /// `created_at < this` (ms).
    pub created_to: Option<i64>,
    /// Order numbers starting with exactly this text: the search-key range
    /// of it (`orders_order_no_key_idx`) narrows, `substr` decides.
    pub order_no_prefix: Option<&'a str>,
    /// Keyset cursor: rows before this `(created_at, order_no)`.
    pub before: Option<(i64, &'a str)>,
    pub limit: i64,
}

/// The statement of one page of the order list, newest first; see
/// `migrations/*/0021_order_list.sql` for the index each filter walks.
fn page_sql(q: &OrderPageQuery<'_>) -> Sql {
    let mut sql = Sql::new(format!("SELECT {COLUMNS} FROM orders WHERE 1 = 1"));
    if let Some(s) = q.status {
        sql.push_bind(" AND status = ?", s.as_str());
    }
    if let Some(k) = q.kind {
        sql.push_bind(" AND kind = ?", k.as_str());
    }
    if let Some(c) = q.campaign_id {
        sql.push_bind(" AND campaign_id = ?", c);
    }
    if let Some(l) = q.coupon_lock_status {
        sql.push_bind(" AND coupon_lock_status = ?", l.as_str());
    }
    if let Some(f) = q.created_from {
        sql.push_bind(" AND created_at >= ?", f);
    }
    if let Some(t) = q.created_to {
        sql.push_bind(" AND created_at < ?", t);
    }
    if let Some(p) = q.order_no_prefix {
        let key = crate::domain::ids::search_key(p);
        if let Some((low, high)) = dynamic::prefix_range(&key) {
            sql.push_bind(" AND order_no_key >= ?", low)
                .push_bind(" AND order_no_key < ?", high);
        }
        // The key folds case, spaces and dashes; the order number itself
        // must start with the prefix as typed.
        sql.push_bind(" AND substr(order_no, 1, length(?)) = ?", p);
    }
    if let Some((at, no)) = q.before {
        // `created_at <= ?` bounds the index range; the OR only filters
        // the rows of that one `created_at` value.
        sql.push_bind(" AND created_at <= ?", at)
            .push_bind(" AND (created_at < ?", at)
            .push_bind(" OR order_no < ?)", no);
    }
    sql.push_bind(
        " ORDER BY created_at DESC, order_no DESC LIMIT ?",
        q.limit.clamp(1, 10_000),
    );
    sql
}

/// One page of the order list, newest first.
pub async fn page(
    conn: &mut AnyConnection,
    q: &OrderPageQuery<'_>,
) -> Result<Vec<OrderRow>, sqlx::Error> {
    dynamic::fetch_all(conn, &page_sql(q)).await
}

/// The plan of exactly the statement [`page`] runs (index tests).
pub async fn explain_page(
    conn: &mut AnyConnection,
    q: &OrderPageQuery<'_>,
) -> Result<Vec<String>, sqlx::Error> {
    dynamic::explain(conn, &page_sql(q)).await
}
