//! Reconciliation: keyset pages of the rows the scans read (each through
//! an index, each bounded), batch lookups of their partners, and the
//! `reconcile_runs` / `reconcile_findings` tables.

use sqlx::AnyConnection;

use super::coupons::{COLUMNS as COUPON_COLUMNS, CouponRow};
use super::orders::{COLUMNS as ORDER_COLUMNS, OrderRow};
use super::param_list;
use crate::domain::ids::{CouponId, OrderNo, TemplateId, UserId};

/// The locked-coupons page statement (`$1` locked_at, `$2` id, `$3`
/// limit), public so a test can EXPLAIN exactly it. `status = 'locked'`
/// stays a literal for the partial `coupons_status_locked_at_idx`
/// (docs/src/development/indexes.md).
pub fn locked_page_sql() -> String {
    format!(
        "SELECT {COUPON_COLUMNS} FROM coupons
         WHERE status = 'locked' AND locked_at >= $1 AND (locked_at > $1 OR id > $2)
         ORDER BY locked_at, id LIMIT $3"
    )
}

/// Locked coupons past `after` in `(locked_at, id)` order, oldest lock
/// first (`coupons_status_locked_at_idx`, which holds `id` too). The
/// `locked_at >= $1` bound is where the index range starts; the rest skips
/// the rows of the previous page.
pub async fn locked_page(
    conn: &mut AnyConnection,
    after: (i64, &str),
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    sqlx::query_as(&locked_page_sql())
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// Locked coupons with no lock time at all (a damaged row), at most `limit`.
pub async fn locked_without_time(
    conn: &mut AnyConnection,
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COUPON_COLUMNS} FROM coupons WHERE status = 'locked' AND locked_at IS NULL ORDER BY id LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The used-coupons page statement (`$1` updated_at, `$2` id, `$3` limit).
pub fn used_since_page_sql() -> String {
    format!(
        "SELECT {COUPON_COLUMNS} FROM coupons
         WHERE status = 'used' AND updated_at >= $1 AND (updated_at > $1 OR id > $2)
         ORDER BY updated_at, id LIMIT $3"
    )
}

/// Used coupons changed at or after `after.0`, past `after` in
/// `(updated_at, id)` order (`coupons_status_updated_at_idx`, which holds
/// `id` too). Start with `(since_ms, "")`.
pub async fn used_since_page(
    conn: &mut AnyConnection,
    after: (i64, &str),
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    sqlx::query_as(&used_since_page_sql())
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// The refunds-by-time page statement (`$1` at, `$2` order_no, `$3`
/// limit): one range of `order_refunds_at_idx`.
pub fn refunded_orders_page_sql() -> &'static str {
    "SELECT at, order_no FROM order_refunds WHERE at >= $1 AND (at > $1 OR order_no > $2)
     ORDER BY at, order_no LIMIT $3"
}

/// The orders of refunds made after `(at, order_no)`, oldest first, with
/// the refund's time (an order refunded twice appears twice).
pub async fn refunded_orders_page(
    conn: &mut AnyConnection,
    after: (i64, &str),
    limit: i64,
) -> Result<Vec<(i64, OrderNo)>, sqlx::Error> {
    sqlx::query_as(refunded_orders_page_sql())
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// The live-orders page statement (`$1` status, `$2` order_no, `$3` limit).
pub fn orders_in_status_page_sql() -> String {
    format!(
        "SELECT {ORDER_COLUMNS} FROM orders WHERE status = $1 AND order_no > $2 ORDER BY order_no LIMIT $3"
    )
}

/// Orders in `status` after `order_no` (`orders_status_no_idx`).
pub async fn orders_in_status_page(
    conn: &mut AnyConnection,
    status: &str,
    after: &str,
    limit: i64,
) -> Result<Vec<OrderRow>, sqlx::Error> {
    sqlx::query_as(&orders_in_status_page_sql())
        .bind(status)
        .bind(after)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// The orders with these numbers (primary-key lookups).
pub async fn orders_by_no(
    conn: &mut AnyConnection,
    nos: &[OrderNo],
) -> Result<Vec<OrderRow>, sqlx::Error> {
    if nos.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {ORDER_COLUMNS} FROM orders WHERE order_no IN ({})",
        param_list(1, nos.len())
    );
    let mut q = sqlx::query_as(&sql);
    for n in nos {
        q = q.bind(n);
    }
    q.fetch_all(conn).await
}

/// The live coupons with these ids (primary-key lookups).
pub async fn coupons_by_id(
    conn: &mut AnyConnection,
    ids: &[CouponId],
) -> Result<Vec<CouponRow>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {COUPON_COLUMNS} FROM coupons WHERE id IN ({})",
        param_list(1, ids.len())
    );
    let mut q = sqlx::query_as(&sql);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(conn).await
}

/// Template ids, at most `limit`.
pub async fn template_ids(
    conn: &mut AnyConnection,
    limit: i64,
) -> Result<Vec<TemplateId>, sqlx::Error> {
    sqlx::query_scalar("SELECT id FROM templates ORDER BY id LIMIT $1")
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// A finished run to record.
pub struct NewRun<'a> {
    pub actor: &'a str,
    pub started_at_ms: i64,
    pub finished_at_ms: i64,
    pub found: i64,
    pub found_by_kind: &'a str,
    pub truncated: bool,
}

/// Inserts a run; returns its id.
pub async fn insert_run(conn: &mut AnyConnection, r: &NewRun<'_>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO reconcile_runs (actor, started_at, finished_at, found, found_by_kind, truncated)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(r.actor)
    .bind(r.started_at_ms)
    .bind(r.finished_at_ms)
    .bind(r.found)
    .bind(r.found_by_kind)
    .bind(i64::from(r.truncated))
    .fetch_one(conn)
    .await
}

/// One finding to record.
pub struct NewFinding<'a> {
    pub run_id: i64,
    pub kind: &'a str,
    pub coupon_id: Option<&'a CouponId>,
    pub order_no: Option<&'a OrderNo>,
    pub user_id: Option<&'a UserId>,
    pub template_id: Option<&'a TemplateId>,
    pub stock: Option<(i64, i64)>,
    /// The finding's catalog key and its arguments as JSON.
    pub message_key: &'a str,
    pub message_args: &'a str,
    pub fix: &'a str,
}

pub async fn insert_finding(
    conn: &mut AnyConnection,
    f: &NewFinding<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO reconcile_findings (run_id, kind, coupon_id, order_no, user_id, template_id,
             stock_claimed, stock_issued, message_key, message_args, fix)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(f.run_id)
    .bind(f.kind)
    .bind(f.coupon_id)
    .bind(f.order_no)
    .bind(f.user_id)
    .bind(f.template_id)
    .bind(f.stock.map(|s| s.0))
    .bind(f.stock.map(|s| s.1))
    .bind(f.message_key)
    .bind(f.message_args)
    .bind(f.fix)
    .execute(conn)
    .await?;
    Ok(())
}

/// A recorded run, with how many of its findings were repaired.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunRow {
    pub id: i64,
    pub actor: String,
    pub started_at: i64,
    pub finished_at: i64,
    pub found: i64,
    pub found_by_kind: String,
    pub truncated: i64,
    pub repaired: i64,
}

/// The most recent runs, newest first.
pub async fn runs(conn: &mut AnyConnection, limit: i64) -> Result<Vec<RunRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT r.id, r.actor, r.started_at, r.finished_at, r.found, r.found_by_kind, r.truncated,
                CAST((SELECT COUNT(*) FROM reconcile_findings f
                      WHERE f.run_id = r.id AND f.repaired_at IS NOT NULL) AS BIGINT) AS repaired
         FROM reconcile_runs r ORDER BY r.id DESC LIMIT $1",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// A recorded finding.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FindingRow {
    pub id: i64,
    pub run_id: i64,
    pub kind: crate::domain::reconcile::AnomalyKind,
    pub coupon_id: Option<CouponId>,
    pub order_no: Option<OrderNo>,
    pub user_id: Option<UserId>,
    pub template_id: Option<TemplateId>,
    pub stock_claimed: Option<i64>,
    pub stock_issued: Option<i64>,
    pub message_key: String,
    pub message_args: String,
    pub fix: crate::domain::reconcile::Fix,
    pub repaired_at: Option<i64>,
    pub repaired_by: Option<String>,
    pub repair_note: Option<String>,
}

const FINDING_COLUMNS: &str = "id, run_id, kind, coupon_id, order_no, user_id, template_id, stock_claimed, stock_issued, message_key, message_args, fix, repaired_at, repaired_by, repair_note";

/// A run's findings of one kind (or all), by id, at most `limit`.
pub async fn findings(
    conn: &mut AnyConnection,
    run_id: i64,
    kind: Option<&str>,
    limit: i64,
) -> Result<Vec<FindingRow>, sqlx::Error> {
    match kind {
        Some(k) => {
            sqlx::query_as(&format!(
                "SELECT {FINDING_COLUMNS} FROM reconcile_findings WHERE run_id = $1 AND kind = $2 ORDER BY id LIMIT $3"
            ))
            .bind(run_id)
            .bind(k)
            .bind(limit)
            .fetch_all(conn)
            .await
        }
        None => {
            sqlx::query_as(&format!(
                "SELECT {FINDING_COLUMNS} FROM reconcile_findings WHERE run_id = $1 ORDER BY kind, id LIMIT $2"
            ))
            .bind(run_id)
            .bind(limit)
            .fetch_all(conn)
            .await
        }
    }
}

pub async fn finding(conn: &mut AnyConnection, id: i64) -> Result<Option<FindingRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {FINDING_COLUMNS} FROM reconcile_findings WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Marks a finding repaired (once). Returns whether it changed.
pub async fn mark_repaired(
    conn: &mut AnyConnection,
    id: i64,
    by: &str,
    at_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE reconcile_findings SET repaired_at = $2, repaired_by = $3, repair_note = NULL
         WHERE id = $1 AND repaired_at IS NULL",
    )
    .bind(id)
    .bind(at_ms)
    .bind(by)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Notes why a repair of a finding was refused.
pub async fn note_refusal(
    conn: &mut AnyConnection,
    id: i64,
    note: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE reconcile_findings SET repair_note = $2 WHERE id = $1 AND repaired_at IS NULL",
    )
    .bind(id)
    .bind(note)
    .execute(conn)
    .await?;
    Ok(())
}

/// The latest run: its id and when it finished.
pub async fn latest_run(conn: &mut AnyConnection) -> Result<Option<(i64, i64)>, sqlx::Error> {
    sqlx::query_as("SELECT id, finished_at FROM reconcile_runs ORDER BY id DESC LIMIT 1")
        .fetch_optional(conn)
        .await
}

/// Run `run_id`'s stock-mismatch finding for `template_id`, if it found one
/// (`reconcile_findings_run_idx`, then the few mismatches of that run).
pub async fn template_mismatch(
    conn: &mut AnyConnection,
    run_id: i64,
    template_id: &TemplateId,
) -> Result<Option<FindingRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {FINDING_COLUMNS} FROM reconcile_findings
         WHERE run_id = $1 AND kind = 'template_stock_mismatch' AND template_id = $2
         ORDER BY id LIMIT 1"
    ))
    .bind(run_id)
    .bind(template_id)
    .fetch_optional(conn)
    .await
}
