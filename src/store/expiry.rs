//! SQL of the expiry engine: batched conditional expiry, the due-soon
//! queries that refill the timing wheel, and the pending-expiration figures.
//! Every query here is served by the `(status, ends_at)` index and bounded
//! by a LIMIT.

use sqlx::AnyConnection;

use super::coupons::{COLUMNS, CouponRow};
use super::{Backend, backend_of};
use crate::domain::ids::{CampaignId, CouponId, OrderNo, TemplateId};

/// Most coupons one expiry statement touches.
pub const MAX_BATCH: i64 = 500;

/// Expires up to `batch` coupons that are `available` and past `ends_at`,
/// oldest first, and returns them as they now stand. On PostgreSQL the
/// candidate rows are taken with `FOR UPDATE SKIP LOCKED`, so two workers
/// never wait on each other and never take the same row; the outer WHERE
/// re-checks the status, so a coupon locked meanwhile is left alone.
pub async fn expire_due(
    conn: &mut AnyConnection,
    now_ms: i64,
    batch: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    let _timed = super::timing::call("expiry.expire_due");
    let sql = expire_due_sql(backend_of(conn));
    sqlx::query_as(&sql)
        .bind(now_ms)
        .bind(batch.clamp(1, MAX_BATCH))
        .fetch_all(conn)
        .await
}

/// The statement of [`expire_due`] (`$1` now in ms, `$2` batch size); public
/// so a test can `EXPLAIN` exactly what runs.
pub fn expire_due_sql(backend: Backend) -> String {
    const CANDIDATES: &str = "SELECT id FROM coupons WHERE status = 'available' AND ends_at <= $1 ORDER BY ends_at LIMIT $2";
    // PostgreSQL: `= ANY(ARRAY(...))` makes the candidate query an InitPlan
    // that runs exactly once. With `IN (...)` the planner may choose a
    // semi-join that rescans the LIMITed, SKIP LOCKED subquery per row,
    // which updates far more than one batch (measured: 1203 rows in one
    // "500-row" statement).
    let target = match backend {
        Backend::Postgres => format!("id = ANY(ARRAY({CANDIDATES} FOR UPDATE SKIP LOCKED))"),
        Backend::Sqlite => format!("id IN ({CANDIDATES})"),
    };
    let recheck = recheck(backend);
    format!(
        "UPDATE coupons SET status = 'expired', updated_at = $1
         WHERE {target}
           AND {recheck}
         RETURNING {COLUMNS}"
    )
}

/// The outer re-check of a batched expiry (`$1` now in ms). On SQLite the
/// unary `+` keeps these terms off the `(status, ends_at)` index: without
/// it the planner answers `id IN (...) AND status = 'available' AND
/// ends_at <= $1` by walking every due coupon in that index and testing
/// each against the id list, so one 500-row batch costs as much as all due
/// rows (1.6 s per batch with 1,000,000 due, against 27 ms when each id is
/// looked up by primary key).
fn recheck(backend: Backend) -> &'static str {
    match backend {
        Backend::Postgres => "status = 'available' AND ends_at <= $1",
        Backend::Sqlite => "+status = 'available' AND +ends_at <= $1",
    }
}

/// The statement of [`due_by`] (`$1` until in ms, `$2` limit): the timing
/// wheel's refill.
pub const DUE_BY_SQL: &str = "SELECT id, ends_at FROM coupons WHERE status = 'available' AND ends_at <= $1 ORDER BY ends_at LIMIT $2";

/// Expires the given coupons if they are still `available` and past
/// `ends_at` (the timing wheel's slot); returns those that changed. At most
/// [`MAX_BATCH`] ids per call. The ids travel as one JSON array parameter
/// (see [`json_ids`]).
pub async fn expire_ids(
    conn: &mut AnyConnection,
    ids: &[CouponId],
    now_ms: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    let _timed = super::timing::call("expiry.expire_ids");
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = &ids[..ids.len().min(MAX_BATCH as usize)];
    let sql = expire_ids_sql(backend_of(conn));
    sqlx::query_as(&sql)
        .bind(now_ms)
        .bind(json_ids(ids.iter().map(CouponId::as_str)))
        .fetch_all(conn)
        .await
}

/// The statement of [`expire_ids`] (`$1` now in ms, `$2` the ids as a JSON
/// array); public so a test can `EXPLAIN` exactly what runs.
pub fn expire_ids_sql(backend: Backend) -> String {
    format!(
        "UPDATE coupons SET status = 'expired', updated_at = $1
         WHERE {} AND {}
         RETURNING {COLUMNS}",
        id_in_json(backend, "$2"),
        recheck(backend)
    )
}

/// A JSON array of ids: a whole batch in ONE statement parameter. SQLite
/// looks a parameter up by name at bind time at a cost that grows with the
/// number of parameters, so 500 `$n` parameters cost time quadratic in the
/// batch (19 % of an expiry batch, by profile); one parameter does not,
/// and the statement text no longer depends on the batch's length.
fn json_ids<'a>(ids: impl Iterator<Item = &'a str>) -> String {
    serde_json::Value::Array(ids.map(serde_json::Value::from).collect()).to_string()
}

/// `id` is one of the JSON array `param`, written so that each id is a
/// primary-key lookup: on PostgreSQL an `= ANY(ARRAY(...))` InitPlan that
/// runs once (a semi-join could hash the whole table).
fn id_in_json(backend: Backend, param: &str) -> String {
    match backend {
        Backend::Postgres => {
            format!("id = ANY(ARRAY(SELECT json_array_elements_text(CAST({param} AS json))))")
        }
        Backend::Sqlite => format!("id IN (SELECT value FROM json_each({param}))"),
    }
}

/// Writes one `expire` event per coupon, one INSERT per 1,000, the ids in
/// one JSON parameter (see [`json_ids`]), in the order given.
pub async fn record_events(
    conn: &mut AnyConnection,
    coupon_ids: &[&CouponId],
    actor: &str,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("expiry.record_events");
    let (ids, order) = match backend_of(conn) {
        Backend::Postgres => (
            "json_array_elements_text(CAST($3 AS json)) WITH ORDINALITY AS e(value, n)",
            "e.n",
        ),
        Backend::Sqlite => ("json_each($3)", "key"),
    };
    let sql = format!(
        "INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at)
         SELECT 'coupon', value, NULL, 'available', 'expired', 'expire', $1, NULL, NULL, $2
         FROM {ids} ORDER BY {order}"
    );
    for chunk in coupon_ids.chunks(1_000) {
        sqlx::query(&sql)
            .bind(actor)
            .bind(now_ms)
            .bind(json_ids(chunk.iter().map(|id| id.as_str())))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Coupons that will be due by `until_ms` (and those already due), earliest
/// first, at most `limit`: what the timing wheel loads.
pub async fn due_by(
    conn: &mut AnyConnection,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<(CouponId, i64)>, sqlx::Error> {
    let _timed = super::timing::call("expiry.due_by");
    sqlx::query_as(DUE_BY_SQL)
        .bind(until_ms)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// Normal orders whose checkout lock lapses by `until_ms`, earliest first.
/// `status = 'pending_payment'` stays a literal: the partial index
/// `orders_status_checkout_idx` holds only those rows, and a bound status
/// would not prove the index's predicate (docs/src/development/indexes.md).
pub async fn checkout_lapses_by(
    conn: &mut AnyConnection,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<(OrderNo, i64)>, sqlx::Error> {
    let _timed = super::timing::call("expiry.checkout_lapses_by");
    sqlx::query_as(
        "SELECT order_no, checkout_lock_expires_at FROM orders
         WHERE status = 'pending_payment' AND checkout_lock_expires_at <= $1
         ORDER BY checkout_lock_expires_at LIMIT $2",
    )
    .bind(until_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Campaigns whose final-payment window ends by `until_ms` and that still
/// have `deposit_paid` orders, with the window end.
pub async fn campaigns_ending_by(
    conn: &mut AnyConnection,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<(CampaignId, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT c.id, c.final_payment_ends_at FROM presale_campaigns c
         WHERE c.final_payment_ends_at <= $1
           AND EXISTS (SELECT 1 FROM orders o WHERE o.campaign_id = c.id AND o.status = 'deposit_paid')
         ORDER BY c.final_payment_ends_at LIMIT $2",
    )
    .bind(until_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Deposit-paid orders of a campaign, at most `limit`.
pub async fn deposit_paid_orders(
    conn: &mut AnyConnection,
    campaign_id: &CampaignId,
    limit: i64,
) -> Result<Vec<OrderNo>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT order_no FROM orders WHERE campaign_id = $1 AND status = 'deposit_paid' ORDER BY order_no LIMIT $2",
    )
    .bind(campaign_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Coupons locked since before `before_ms` that no live order holds, oldest
/// lock first: the zombie reaper's candidates. `status = 'locked'` stays a
/// literal for the partial index `coupons_status_locked_at_idx`
/// (docs/src/development/indexes.md).
pub async fn locked_before(
    conn: &mut AnyConnection,
    before_ms: i64,
    limit: i64,
) -> Result<Vec<CouponId>, sqlx::Error> {
    let _timed = super::timing::call("expiry.locked_before");
    // Locks whose order is live and names the coupon back are legitimate
    // (a presale deposit holds its lock for days); skipping them here keeps
    // hundreds of them from filling every batch and hiding the zombies
    // behind. The release re-checks inside its transaction anyway.
    sqlx::query_scalar(
        "SELECT c.id FROM coupons c
         WHERE c.status = 'locked' AND c.locked_at < $1
           AND NOT EXISTS (SELECT 1 FROM orders o
                           WHERE o.order_no = c.order_no
                             AND (o.coupon_id = c.id
                                  OR EXISTS (SELECT 1 FROM order_coupons oc
                                             WHERE oc.order_no = o.order_no AND oc.coupon_id = c.id))
                             AND o.status NOT IN ('closed', 'refunded'))
         ORDER BY c.locked_at LIMIT $2",
    )
    .bind(before_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Counts of `available` coupons due per hour in `(now, until]`: (hour
/// start in ms, count), earliest first.
pub async fn due_per_hour(
    conn: &mut AnyConnection,
    now_ms: i64,
    until_ms: i64,
) -> Result<Vec<(i64, i64)>, sqlx::Error> {
    let _timed = super::timing::call("expiry.due_per_hour");
    sqlx::query_as(
        "SELECT CAST((ends_at / 3600000) * 3600000 AS BIGINT) AS hour, CAST(COUNT(*) AS BIGINT) AS n
         FROM coupons WHERE status = 'available' AND ends_at > $1 AND ends_at <= $2
         GROUP BY (ends_at / 3600000) ORDER BY 1",
    )
    .bind(now_ms)
    .bind(until_ms)
    .fetch_all(conn)
    .await
}

/// Overdue coupons (stored `available`, past `ends_at`): how many, and the
/// earliest `ends_at` among them.
pub async fn overdue(
    conn: &mut AnyConnection,
    now_ms: i64,
) -> Result<(i64, Option<i64>), sqlx::Error> {
    let _timed = super::timing::call("expiry.overdue");
    sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT), MIN(ends_at) FROM coupons WHERE status = 'available' AND ends_at <= $1",
    )
    .bind(now_ms)
    .fetch_one(conn)
    .await
}

/// The templates with the most coupons due in `(now_ms, until_ms]` (stored
/// `available`): (template id, name, count), most first, at most `limit`.
/// The count reads the `(status, ends_at)` index range; names are looked
/// up for the `limit` winners only.
pub async fn due_by_template(
    conn: &mut AnyConnection,
    now_ms: i64,
    until_ms: i64,
    limit: i64,
) -> Result<Vec<(TemplateId, String, i64)>, sqlx::Error> {
    sqlx::query_as(TOP_TEMPLATES_SQL)
        .bind(now_ms)
        .bind(until_ms)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// The statement of [`due_by_template`] (`$1` now, `$2` until, `$3` limit).
pub const TOP_TEMPLATES_SQL: &str = "SELECT d.template_id, t.name, d.n FROM (
         SELECT template_id, CAST(COUNT(*) AS BIGINT) AS n FROM coupons
         WHERE status = 'available' AND ends_at > $1 AND ends_at <= $2 AND template_id IS NOT NULL
         GROUP BY template_id ORDER BY COUNT(*) DESC, template_id LIMIT $3) d
     JOIN templates t ON t.id = d.template_id
     ORDER BY d.n DESC, d.template_id";

/// Expiries recorded since `since_ms` by any instance, newest first, at
/// most `limit`: (actor, event time, the coupon's `ends_at`). Read from the
/// `expire` events (`events (action, at, id)` index) joined to their
/// coupons, so the lag it shows is the database's, not one process's.
pub async fn recent_expiries(
    conn: &mut AnyConnection,
    since_ms: i64,
    limit: i64,
) -> Result<Vec<(String, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT e.actor, e.at, c.ends_at FROM events e JOIN coupons c ON c.id = e.coupon_id
         WHERE e.action = 'expire' AND e.at >= $1
         ORDER BY e.at DESC, e.id DESC LIMIT $2",
    )
    .bind(since_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// A recorded run of a periodic job.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRunRow {
    pub id: i64,
    pub job: String,
    pub started_at: i64,
    pub finished_at: i64,
    pub rows: i64,
    pub error: Option<String>,
}

/// A run of a periodic job to record.
#[derive(Debug, Clone)]
pub struct NewJobRun<'a> {
    pub job: &'a str,
    pub started_at: i64,
    pub finished_at: i64,
    pub rows: i64,
    pub error: Option<&'a str>,
}

/// Records one run of a periodic job (the dashboard's history).
pub async fn insert_job_run(
    conn: &mut AnyConnection,
    run: &NewJobRun<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO job_runs (job, started_at, finished_at, rows, error) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(run.job)
    .bind(run.started_at)
    .bind(run.finished_at)
    .bind(run.rows)
    .bind(run.error)
    .execute(conn)
    .await?;
    Ok(())
}

/// The latest recorded run of `job` (`job_runs (job, id)` index).
pub async fn latest_job_run(
    conn: &mut AnyConnection,
    job: &str,
) -> Result<Option<JobRunRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, job, started_at, finished_at, rows, error FROM job_runs WHERE job = $1 ORDER BY id DESC LIMIT 1",
    )
    .bind(job)
    .fetch_optional(conn)
    .await
}
