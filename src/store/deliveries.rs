//! Webhook delivery: subscribers, the fan-out of outbox messages into one
//! delivery per subscriber, the dispatcher's claim of due deliveries, and
//! what each attempt did. The HTTP sends happen outside every transaction
//! (see [`crate::service::webhooks`]); this module is only SQL.

pub use crate::domain::filters::DeliveryFilter;
use sqlx::AnyConnection;

use super::{Backend, backend_of, param_list};
use crate::domain::filters::{DeliveryStatus, UserFilter};
use crate::domain::ids::{SubscriberId, UserId};

/// The subscriber id of the environment's default webhook.
pub const DEFAULT_SUBSCRIBER: &str = "default";

/// Most rows of one multi-row INSERT (8 parameters each).
const ROWS_PER_STATEMENT: usize = 500;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SubscriberRow {
    pub id: SubscriberId,
    pub url: String,
    pub secret: String,
    pub event_types: String,
    pub enabled: i64,
    pub created_by: String,
    pub created_at: i64,
    pub disabled_at: Option<i64>,
}

const SUBSCRIBER_COLUMNS: &str =
    "id, url, secret, event_types, enabled, created_by, created_at, disabled_at";

pub async fn insert_subscriber(
    conn: &mut AnyConnection,
    s: &SubscriberRow,
) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "INSERT INTO webhook_subscribers ({SUBSCRIBER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    ))
    .bind(&s.id)
    .bind(&s.url)
    .bind(&s.secret)
    .bind(&s.event_types)
    .bind(s.enabled)
    .bind(&s.created_by)
    .bind(s.created_at)
    .bind(s.disabled_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Every subscriber, newest first (operators add a handful).
pub async fn subscribers(conn: &mut AnyConnection) -> Result<Vec<SubscriberRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {SUBSCRIBER_COLUMNS} FROM webhook_subscribers ORDER BY created_at DESC, id LIMIT 1000"
    ))
    .fetch_all(conn)
    .await
}

/// Disables a subscriber; `false` when it was not enabled.
pub async fn disable_subscriber(
    conn: &mut AnyConnection,
    id: &SubscriberId,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE webhook_subscribers SET enabled = 0, disabled_at = $2 WHERE id = $1 AND enabled = 1",
    )
    .bind(id)
    .bind(now_ms)
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

/// Enables a disabled subscriber; `false` when it is not disabled.
pub async fn enable_subscriber(
    conn: &mut AnyConnection,
    id: &SubscriberId,
) -> Result<bool, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE webhook_subscribers SET enabled = 1, disabled_at = NULL WHERE id = $1 AND enabled = 0",
    )
    .bind(id)
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

/// An outbox message not yet fanned out.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UndispatchedRow {
    pub id: i64,
    pub event_type: String,
    pub user_id: Option<UserId>,
}

/// Serializes fan-out for the rest of the transaction. PostgreSQL: a
/// transaction-scoped advisory lock, so two instances never fan out out of
/// id order (one taking messages 101-200 while the other still holds 1-100
/// would let a user's later message be sent first). SQLite: the write
/// transaction already holds the database lock.
pub async fn lock_fan_out(conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
    if backend_of(conn) == Backend::Postgres {
        sqlx::query("SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtext($1))) AS locked")
            .bind("couponkeeper:outbox-fan-out")
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// The statement of [`undispatched`] (`$1` limit), public so a test can
/// EXPLAIN exactly it: the partial index `outbox_undispatched_idx`, in id
/// order, stopping at the limit.
pub const UNDISPATCHED_SQL: &str =
    "SELECT id, event_type, user_id FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT $1";

/// The oldest messages not yet fanned out. Call it inside a transaction.
pub async fn undispatched(
    conn: &mut AnyConnection,
    limit: i64,
) -> Result<Vec<UndispatchedRow>, sqlx::Error> {
    let _timed = super::timing::call("deliveries.undispatched");
    let pg = backend_of(conn) == Backend::Postgres;
    if pg {
        prefer_index_order(conn, true).await?;
    }
    let rows = sqlx::query_as(UNDISPATCHED_SQL)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await;
    if pg && rows.is_ok() {
        prefer_index_order(conn, false).await?;
    }
    rows
}

/// PostgreSQL only, for the rest of the transaction: reads in index order
/// (no bitmap scan, no sort) when `on`; back to the defaults when not.
///
/// After a burst into the outbox the statistics still describe a small
/// table, and [`UNDISPATCHED_SQL`] was planned as a bitmap scan of every
/// undispatched row plus a sort, which also revisits, on every fan-out,
/// the index entries of rows dispatched since (a bitmap scan never marks
/// them dead; an index scan does). Read in index order it stops at the
/// limit.
pub async fn prefer_index_order(conn: &mut AnyConnection, on: bool) -> Result<(), sqlx::Error> {
    let value = if on { "off" } else { "on" };
    for setting in ["enable_bitmapscan", "enable_sort"] {
        sqlx::query(&format!("SET LOCAL {setting} = {value}"))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// One delivery to create.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub outbox_id: i64,
    pub subscriber_id: SubscriberId,
    pub event_type: String,
    pub user_id: Option<UserId>,
}

/// Creates deliveries due now; a pair that exists already is left alone.
pub async fn insert_deliveries(
    conn: &mut AnyConnection,
    rows: &[NewDelivery],
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("deliveries.insert_deliveries");
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut sql = String::from(
            "INSERT INTO deliveries (outbox_id, subscriber_id, event_type, user_id, status, attempts, \
             next_attempt_at, created_at, updated_at) VALUES ",
        );
        for i in 0..chunk.len() {
            let b = i * 4 + 1;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, ${}, ${}, ${}, 'pending', 0, $0, $0, $0)",
                b + 1,
                b + 2,
                b + 3,
                b + 4
            ));
        }
        let sql = sql.replace("$0", "$1") + " ON CONFLICT (outbox_id, subscriber_id) DO NOTHING";
        let mut q = sqlx::query(&sql).bind(now_ms);
        for d in chunk {
            q = q
                .bind(d.outbox_id)
                .bind(d.subscriber_id.as_str())
                .bind(d.event_type.as_str())
                .bind(d.user_id.as_deref());
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// Marks messages as fanned out.
pub async fn mark_dispatched(
    conn: &mut AnyConnection,
    ids: &[i64],
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("deliveries.mark_dispatched");
    for chunk in ids.chunks(ROWS_PER_STATEMENT) {
        let params: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "UPDATE outbox SET dispatched_at = $1 WHERE id IN ({}) AND dispatched_at IS NULL",
            params.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(now_ms);
        for id in chunk {
            q = q.bind(*id);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: i64,
    pub outbox_id: i64,
    pub subscriber_id: SubscriberId,
    pub event_type: String,
    pub user_id: Option<UserId>,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub delivered_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

const DELIVERY_COLUMNS: &str = "id, outbox_id, subscriber_id, event_type, user_id, status, attempts, \
     next_attempt_at, last_status_code, last_error, delivered_at, created_at, updated_at";

/// [`DELIVERY_COLUMNS`], each prefixed with `table.`.
fn qualified_columns(table: &str) -> String {
    DELIVERY_COLUMNS
        .split(',')
        .map(|c| format!("{table}.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which deliveries a claim may take.
#[derive(Debug, Clone, Copy)]
pub enum ClaimScope<'a> {
    /// Any subscriber's.
    Any,
    /// One subscriber's (the dispatcher fills each subscriber's free send
    /// slots separately, so a slow one cannot take the others' slots).
    Subscriber(&'a SubscriberId),
    /// Those of every subscriber not in the list: disabled or removed ones,
    /// taken to be dead-lettered.
    NotIn(&'a [SubscriberId]),
}

/// The statement of [`claim_due`]: `$1` now, `$2` lease end, `$3` batch,
/// then the scope's parameters.
///
/// Due: `pending`, `next_attempt_at <= now`, and no earlier message (lower
/// outbox id) of the same user to the same subscriber still `pending`, so
/// a user's messages reach each subscriber in order (a leased one stays
/// `pending` and holds the later ones back). Claiming sets
/// `next_attempt_at` to the lease end in the claiming transaction, so no
/// other dispatcher finds the delivery due until the lease runs out (a
/// dispatcher that died mid-send: the delivery is sent again, same id).
/// "Earliest" is a correlated `MIN` over `deliveries_user_idx`, probed once
/// per candidate whatever the statistics say: written as `NOT EXISTS`,
/// PostgreSQL with stale statistics (a burst into an empty table) planned an
/// anti join rescanning every pending row per candidate, 6 s per claim at
/// 12,000 pending. `Subscriber` scope reads `deliveries_sub_due_idx`.
/// PostgreSQL takes the candidates with `FOR UPDATE SKIP LOCKED` inside
/// `= ANY(ARRAY(...))` (see `store::expiry`), and the outer WHERE re-checks
/// them.
pub fn claim_due_sql(backend: Backend, scope: ClaimScope<'_>) -> String {
    let filter = match scope {
        ClaimScope::Any => String::new(),
        ClaimScope::Subscriber(_) => " AND d.subscriber_id = $4".to_string(),
        ClaimScope::NotIn([]) => String::new(),
        ClaimScope::NotIn(ids) => {
            format!(" AND d.subscriber_id NOT IN ({})", param_list(4, ids.len()))
        }
    };
    let candidates = format!(
        "SELECT d.id FROM deliveries d
         WHERE d.status = 'pending' AND d.next_attempt_at <= $1{filter}
           AND (d.user_id IS NULL
                OR d.outbox_id = (SELECT MIN(e.outbox_id) FROM deliveries e
                                  WHERE e.subscriber_id = d.subscriber_id
                                    AND e.user_id = d.user_id AND e.status = 'pending'))
         ORDER BY d.next_attempt_at, d.id LIMIT $3"
    );
    match backend {
        // The picked rows are joined by primary key: with `id = ANY(ARRAY(…))`
        // and stale statistics the outer re-check was planned as a bitmap
        // scan of every due delivery.
        Backend::Postgres => format!(
            "WITH picked AS ({candidates} FOR UPDATE OF d SKIP LOCKED)
             UPDATE deliveries SET next_attempt_at = $2, updated_at = $1
             FROM picked
             WHERE deliveries.id = picked.id
               AND deliveries.status = 'pending' AND deliveries.next_attempt_at <= $1
             RETURNING {}",
            qualified_columns("deliveries")
        ),
        // The unary `+` keeps SQLite from reading the re-check through
        // `deliveries_due_idx` (every due delivery) instead of the rowids.
        Backend::Sqlite => format!(
            "UPDATE deliveries SET next_attempt_at = $2, updated_at = $1
             WHERE id IN ({candidates}) AND +status = 'pending' AND +next_attempt_at <= $1
             RETURNING {DELIVERY_COLUMNS}"
        ),
    }
}

/// Takes up to `batch` due deliveries in `scope` under a lease until
/// `lease_until`, oldest first.
pub async fn claim_due(
    conn: &mut AnyConnection,
    scope: ClaimScope<'_>,
    now_ms: i64,
    lease_until: i64,
    batch: i64,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    let _timed = super::timing::call("deliveries.claim_due");
    let sql = claim_due_sql(backend_of(conn), scope);
    let mut q = sqlx::query_as::<_, DeliveryRow>(&sql)
        .bind(now_ms)
        .bind(lease_until)
        .bind(batch);
    match scope {
        ClaimScope::Any => {}
        ClaimScope::Subscriber(id) => q = q.bind(id),
        ClaimScope::NotIn(ids) => {
            for id in ids {
                q = q.bind(id);
            }
        }
    }
    let mut rows = q.fetch_all(conn).await?;
    rows.sort_by_key(|r| r.id);
    Ok(rows)
}

/// The outbox message of a delivery: (event_type, user_id, payload,
/// created_at).
pub async fn message(
    conn: &mut AnyConnection,
    outbox_id: i64,
) -> Result<Option<(String, Option<UserId>, String, i64)>, sqlx::Error> {
    sqlx::query_as("SELECT event_type, user_id, payload, created_at FROM outbox WHERE id = $1")
        .bind(outbox_id)
        .fetch_optional(conn)
        .await
}

/// An outbox message as a delivery sends it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MessageRow {
    pub id: i64,
    pub event_type: String,
    pub user_id: Option<UserId>,
    pub payload: String,
    pub created_at: i64,
    /// The trace of the request that caused it (migration 0044).
    pub trace_id: Option<String>,
    pub trace_flags: Option<i64>,
}

/// The outbox messages of several deliveries. One statement per
/// [`ROWS_PER_STATEMENT`] ids.
pub async fn messages(
    conn: &mut AnyConnection,
    outbox_ids: &[i64],
) -> Result<Vec<MessageRow>, sqlx::Error> {
    let _timed = super::timing::call("deliveries.messages");
    let mut out = Vec::with_capacity(outbox_ids.len());
    for chunk in outbox_ids.chunks(ROWS_PER_STATEMENT) {
        let sql = format!(
            "SELECT id, event_type, user_id, payload, created_at, trace_id, trace_flags FROM outbox WHERE id IN ({})",
            param_list(1, chunk.len())
        );
        let mut q = sqlx::query_as(&sql);
        for id in chunk {
            q = q.bind(*id);
        }
        out.extend(q.fetch_all(&mut *conn).await?);
    }
    Ok(out)
}

/// What one attempt ended with.
#[derive(Debug, Clone)]
pub struct AttemptRecord<'a> {
    pub delivery_id: i64,
    pub at_ms: i64,
    pub status_code: Option<i64>,
    pub error: Option<&'a str>,
    pub duration_ms: i64,
    pub actor: &'a str,
}

/// Several attempts, one statement per [`ROWS_PER_STATEMENT`] rows.
pub async fn insert_attempts(
    conn: &mut AnyConnection,
    attempts: &[AttemptRecord<'_>],
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("deliveries.insert_attempts");
    for chunk in attempts.chunks(ROWS_PER_STATEMENT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|i| format!("({})", param_list(i * 6 + 1, 6)))
            .collect();
        let sql = format!(
            "INSERT INTO delivery_attempts (delivery_id, at, status_code, error, duration_ms, actor)
             VALUES {}",
            values.join(", ")
        );
        let mut q = sqlx::query(&sql);
        for a in chunk {
            q = q
                .bind(a.delivery_id)
                .bind(a.at_ms)
                .bind(a.status_code)
                .bind(a.error)
                .bind(a.duration_ms)
                .bind(a.actor);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

pub async fn insert_attempt(
    conn: &mut AnyConnection,
    a: &AttemptRecord<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO delivery_attempts (delivery_id, at, status_code, error, duration_ms, actor)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(a.delivery_id)
    .bind(a.at_ms)
    .bind(a.status_code)
    .bind(a.error)
    .bind(a.duration_ms)
    .bind(a.actor)
    .execute(conn)
    .await?;
    Ok(())
}

/// Where a delivery goes after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Delivered,
    RetryAt(i64),
    Dead,
}

/// Applies an attempt's outcome if the delivery is still under this
/// dispatcher's lease (`lease_until` unchanged); `false` otherwise (the
/// lease ran out and another dispatcher took it).
pub async fn finish_attempt(
    conn: &mut AnyConnection,
    delivery_id: i64,
    lease_until: i64,
    next: Next,
    status_code: Option<i64>,
    error: Option<&str>,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("deliveries.finish_attempt");
    let (status, next_at, delivered_at) = match next {
        Next::Delivered => ("delivered", now_ms, Some(now_ms)),
        Next::RetryAt(at) => ("pending", at, None),
        Next::Dead => ("dead", now_ms, None),
    };
    Ok(sqlx::query(
        "UPDATE deliveries SET status = $3, attempts = attempts + 1, next_attempt_at = $4,
                last_status_code = $5, last_error = $6, delivered_at = $7, updated_at = $8
         WHERE id = $1 AND status = 'pending' AND next_attempt_at = $2",
    )
    .bind(delivery_id)
    .bind(lease_until)
    .bind(status)
    .bind(next_at)
    .bind(status_code)
    .bind(error)
    .bind(delivered_at)
    .bind(now_ms)
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

/// Dead-letters a delivery without sending (its subscriber is gone).
pub async fn kill(
    conn: &mut AnyConnection,
    delivery_id: i64,
    error: &str,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("deliveries.kill");
    sqlx::query(
        "UPDATE deliveries SET status = 'dead', last_error = $2, updated_at = $3, next_attempt_at = $3
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(delivery_id)
    .bind(error)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// Puts a dead or delivered delivery back to `pending`, due now, with a
/// fresh attempt budget; its attempts stay in `delivery_attempts`.
pub async fn redeliver(
    conn: &mut AnyConnection,
    delivery_id: i64,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    Ok(sqlx::query(
        "UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = $2,
                delivered_at = NULL, updated_at = $2
         WHERE id = $1 AND status IN ('dead', 'delivered')",
    )
    .bind(delivery_id)
    .bind(now_ms)
    .execute(conn)
    .await?
    .rows_affected()
        == 1)
}

pub async fn get(conn: &mut AnyConnection, id: i64) -> Result<Option<DeliveryRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Deliveries, newest first, filtered, at most `limit`.
pub async fn list(
    conn: &mut AnyConnection,
    f: &DeliveryFilter,
    limit: i64,
) -> Result<Vec<DeliveryRow>, sqlx::Error> {
    let mut sql = format!("SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE 1 = 1");
    let user_id = match &f.user {
        UserFilter::Any => None,
        UserFilter::Only(user) => Some(user.as_str()),
        // Every stored user id is a checked one: no delivery matches.
        UserFilter::Nobody => {
            sql.push_str(" AND 1 = 0");
            None
        }
    };
    let mut n = 1;
    let mut binds: Vec<&str> = Vec::new();
    for (col, v) in [
        ("status", f.status.map(DeliveryStatus::as_str)),
        ("event_type", f.event_type),
        ("user_id", user_id),
    ] {
        if let Some(v) = v {
            sql.push_str(&format!(" AND {col} = ${n}"));
            n += 1;
            binds.push(v);
        }
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ${n}"));
    let mut q = sqlx::query_as(&sql);
    for b in binds {
        q = q.bind(b);
    }
    q.bind(limit).fetch_all(conn).await
}

/// Most (subscriber, status) groups one backlog reading returns: two per
/// subscriber, and operators add a handful.
const BACKLOG_GROUPS: i64 = 2_000;

/// The statement of [`backlog`], public so a test can EXPLAIN it: the
/// partial index `deliveries_backlog_idx` (migration 0043) holds exactly
/// the pending and dead deliveries, so the reading walks their index
/// entries and no delivered row.
pub const BACKLOG_SQL: &str =
    "SELECT subscriber_id, status, CAST(COUNT(*) AS BIGINT) AS n, MIN(created_at) AS oldest
     FROM deliveries WHERE status IN ('pending', 'dead')
     GROUP BY status, subscriber_id ORDER BY status, subscriber_id LIMIT $1";

/// One subscriber's deliveries in one status: how many, and when the
/// oldest of them was made.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BacklogRow {
    pub subscriber_id: String,
    pub status: String,
    pub n: i64,
    pub oldest: Option<i64>,
}

/// The webhook backlog per subscriber: pending and dead deliveries, in
/// one statement (`/metrics`).
pub async fn backlog(conn: &mut AnyConnection) -> Result<Vec<BacklogRow>, sqlx::Error> {
    let _timed = super::timing::call("deliveries.backlog");
    sqlx::query_as(BACKLOG_SQL)
        .bind(BACKLOG_GROUPS)
        .fetch_all(conn)
        .await
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptRow {
    pub id: i64,
    pub delivery_id: i64,
    pub at: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub actor: String,
}

/// The attempts of some deliveries, oldest first.
pub async fn attempts_of(
    conn: &mut AnyConnection,
    delivery_ids: &[i64],
) -> Result<Vec<AttemptRow>, sqlx::Error> {
    let mut out = Vec::new();
    for chunk in delivery_ids.chunks(ROWS_PER_STATEMENT) {
        let params: Vec<String> = (0..chunk.len()).map(|i| format!("${}", i + 1)).collect();
        let sql = format!(
            "SELECT id, delivery_id, at, status_code, error, duration_ms, actor FROM delivery_attempts
             WHERE delivery_id IN ({}) ORDER BY id LIMIT 10000",
            params.join(", ")
        );
        let mut q = sqlx::query_as(&sql);
        for id in chunk {
            q = q.bind(*id);
        }
        out.extend(q.fetch_all(&mut *conn).await?);
    }
    Ok(out)
}
