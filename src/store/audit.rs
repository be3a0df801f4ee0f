//! The audit log's SQL: pages of the `events` table (every state change of
//! a coupon or an order, by staff, API callers and jobs) and of the
//! `staff_audit` table (staff accounts and sign-ins), newest first, with
//! filters by actor, action, target and date.
//!
//! Every page is one statement: equality on at most one indexed column
//! (actor, action, or the target), bounds on `at` for the dates and the
//! cursor, `ORDER BY at DESC, id DESC LIMIT n`. The indexes of
//! `migrations/*/0006_audit.sql` end in `(at, id)`, so each page is one
//! index range scan read backwards, whatever the table's size. A target on
//! `events` is two statements (coupon id, order number), each on its own
//! index, merged here.

pub use crate::domain::filters::AuditQuery;
use sqlx::AnyConnection;

use super::dynamic::{self, Sql};
use crate::domain::ids::{CouponId, OrderNo};

/// Keyset cursor: rows strictly before this `(at, id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditCursor {
    pub at: i64,
    pub id: i64,
}

/// A row of `events` as the audit log shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventAuditRow {
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
    pub address: Option<String>,
}

const EVENT_COLUMNS: &str = "id, subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address";

/// A row of `staff_audit`.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StaffAuditRow {
    pub id: i64,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub target: String,
    pub detail: Option<String>,
    pub address: Option<String>,
}

const STAFF_COLUMNS: &str = "id, at, actor, action, target, detail, address";

/// A staff-account change or sign-in to record, in the transaction of the
/// change itself.
#[derive(Debug, Clone)]
pub struct NewStaffAudit<'a> {
    pub actor: &'a str,
    pub action: &'a str,
    pub target: &'a str,
    pub detail: Option<&'a str>,
    pub address: Option<&'a str>,
    pub at_ms: i64,
}

pub async fn insert_staff_audit(
    conn: &mut AnyConnection,
    e: &NewStaffAudit<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO staff_audit (at, actor, action, target, detail, address) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(e.at_ms)
    .bind(e.actor)
    .bind(e.action)
    .bind(e.target)
    .bind(e.detail)
    .bind(e.address)
    .execute(conn)
    .await?;
    Ok(())
}

/// Which table a page reads, and the column a target filter names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditSource {
    /// `events`, target matched on `coupon_id`.
    EventsByCoupon,
    /// `events`, target matched on `order_no`.
    EventsByOrder,
    /// `staff_audit`, target matched on `target`.
    Staff,
}

impl AuditSource {
    fn table_and_columns(self) -> (&'static str, &'static str, &'static str) {
        match self {
            AuditSource::EventsByCoupon => ("events", EVENT_COLUMNS, "coupon_id"),
            AuditSource::EventsByOrder => ("events", EVENT_COLUMNS, "order_no"),
            AuditSource::Staff => ("staff_audit", STAFF_COLUMNS, "target"),
        }
    }
}

/// The statement of one page and its values.
fn page_sql(source: AuditSource, q: &AuditQuery, before: Option<AuditCursor>, limit: i64) -> Sql {
    let (table, columns, target_column) = source.table_and_columns();
    let mut sql = Sql::new(format!("SELECT {columns} FROM {table} WHERE 1 = 1"));
    if let Some(t) = &q.target {
        sql.push_bind(&format!(" AND {target_column} = ?"), t.as_str());
    }
    if let Some(a) = &q.actor {
        sql.push_bind(" AND actor = ?", a.as_str());
    }
    if let Some(a) = &q.action {
        sql.push_bind(" AND action = ?", a.as_str());
    }
    if let Some(f) = q.from_ms {
        sql.push_bind(" AND at >= ?", f);
    }
    if let Some(u) = q.until_ms {
        sql.push_bind(" AND at < ?", u);
    }
    if let Some(c) = before {
        // `at <= ?` bounds the index range; the OR only filters the rows
        // of that one `at` value.
        sql.push_bind(" AND at <= ?", c.at)
            .push_bind(" AND (at < ?", c.at)
            .push_bind(" OR id < ?)", c.id);
    }
    sql.push_bind(" ORDER BY at DESC, id DESC LIMIT ?", limit.clamp(1, 10_000));
    sql
}

/// One page of events, newest first: at most `limit` rows before
/// `before`. A target is looked up as a coupon id and as an order number
/// (two index range scans), merged without duplicates.
pub async fn events_page(
    conn: &mut AnyConnection,
    q: &AuditQuery,
    before: Option<AuditCursor>,
    limit: i64,
) -> Result<Vec<EventAuditRow>, sqlx::Error> {
    let sources: &[AuditSource] = if q.target.is_some() {
        &[AuditSource::EventsByCoupon, AuditSource::EventsByOrder]
    } else {
        &[AuditSource::EventsByCoupon]
    };
    let mut rows: Vec<EventAuditRow> = Vec::new();
    for source in sources {
        let sql = page_sql(*source, q, before, limit);
        rows.extend(dynamic::fetch_all::<EventAuditRow>(&mut *conn, &sql).await?);
    }
    rows.sort_by_key(|r| std::cmp::Reverse((r.at, r.id)));
    rows.dedup_by_key(|r| r.id);
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok(rows)
}

/// One page of the staff log, newest first.
pub async fn staff_page(
    conn: &mut AnyConnection,
    q: &AuditQuery,
    before: Option<AuditCursor>,
    limit: i64,
) -> Result<Vec<StaffAuditRow>, sqlx::Error> {
    dynamic::fetch_all(conn, &page_sql(AuditSource::Staff, q, before, limit)).await
}

/// The plan the database chooses for exactly the statement a page runs
/// (`EXPLAIN` on PostgreSQL, `EXPLAIN QUERY PLAN` on SQLite), for the index
/// tests. With a target on events, `source` picks which of the two
/// statements.
pub async fn explain_page(
    conn: &mut AnyConnection,
    source: AuditSource,
    q: &AuditQuery,
    before: Option<AuditCursor>,
    limit: i64,
) -> Result<Vec<String>, sqlx::Error> {
    dynamic::explain(conn, &page_sql(source, q, before, limit)).await
}
