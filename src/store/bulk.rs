//! `bulk_jobs` and `bulk_job_lines`: bulk issue and bulk void jobs, their
//! stored input lines and each line's outcome (migration 0025).

use sqlx::AnyConnection;

use super::{Backend, backend_of};
use crate::domain::ids::{CouponId, JobId, TemplateId};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: JobId,
    pub kind: String,
    pub template_id: TemplateId,
    pub status: String,
    pub input_sha256: Option<String>,
    pub notify: i64,
    pub reason: Option<String>,
    pub actor: String,
    pub request_id: Option<String>,
    pub total: i64,
    pub loaded: i64,
    pub cursor_line: i64,
    pub walk_cursor: Option<String>,
    pub succeeded: i64,
    pub skipped: i64,
    pub failed: i64,
    pub reasons: String,
    pub error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, kind, template_id, status, input_sha256, notify, reason, actor, request_id, \
     total, loaded, cursor_line, walk_cursor, succeeded, skipped, failed, reasons, error, created_at, updated_at, finished_at";

/// Inserts a job unless one with the same template, kind and input key
/// exists (the unique index); returns whether it inserted.
pub async fn insert(conn: &mut AnyConnection, j: &JobRow) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(&format!(
        "INSERT INTO bulk_jobs ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
         ON CONFLICT (template_id, kind, input_sha256) DO NOTHING"
    ))
    .bind(&j.id)
    .bind(&j.kind)
    .bind(&j.template_id)
    .bind(&j.status)
    .bind(&j.input_sha256)
    .bind(j.notify)
    .bind(&j.reason)
    .bind(&j.actor)
    .bind(&j.request_id)
    .bind(j.total)
    .bind(j.loaded)
    .bind(j.cursor_line)
    .bind(&j.walk_cursor)
    .bind(j.succeeded)
    .bind(j.skipped)
    .bind(j.failed)
    .bind(&j.reasons)
    .bind(&j.error)
    .bind(j.created_at)
    .bind(j.updated_at)
    .bind(j.finished_at)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

pub async fn get(conn: &mut AnyConnection, id: &JobId) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM bulk_jobs WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// The job of this template, kind and input key (`bulk_jobs_input_idx`).
pub async fn find_by_input(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    kind: &str,
    input_sha256: &str,
) -> Result<Option<JobRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM bulk_jobs WHERE template_id = $1 AND kind = $2 AND input_sha256 = $3"
    ))
    .bind(template_id)
    .bind(kind)
    .bind(input_sha256)
    .fetch_optional(conn)
    .await
}

/// A template's jobs, newest first, at most `limit` (`bulk_jobs_template_idx`).
pub async fn for_template(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    limit: i64,
) -> Result<Vec<JobRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM bulk_jobs WHERE template_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2"
    ))
    .bind(template_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The oldest running job, locked for this transaction. On PostgreSQL
/// `FOR UPDATE SKIP LOCKED`: an instance working on a job's batch holds its
/// row, and another instance takes the next job (or none) instead of
/// waiting; on SQLite the write transaction already excludes everyone.
pub async fn next_running(conn: &mut AnyConnection) -> Result<Option<JobRow>, sqlx::Error> {
    let lock = match backend_of(conn) {
        Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM bulk_jobs WHERE status = 'running' ORDER BY created_at, id LIMIT 1{lock}"
    ))
    .fetch_optional(conn)
    .await
}

/// One line to store.
#[derive(Debug, Clone)]
pub struct NewLine<'a> {
    pub line_no: i64,
    pub value: &'a str,
    pub outcome: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub coupon_id: Option<&'a CouponId>,
}

/// Most lines in one INSERT (one JSON parameter, like the outbox's).
const LINES_PER_STATEMENT: usize = 1_000;

/// Stores lines; a line already stored (same job and number) is left as it
/// is, so a load that is resumed or runs twice stores each line once.
pub async fn insert_lines(
    conn: &mut AnyConnection,
    job_id: &JobId,
    lines: &[NewLine<'_>],
) -> Result<(), sqlx::Error> {
    let sql = match backend_of(conn) {
        Backend::Postgres => {
            "INSERT INTO bulk_job_lines (job_id, line_no, value, outcome, reason, coupon_id)
             SELECT $1, r.line_no, r.value, r.outcome, r.reason, r.coupon_id
             FROM json_to_recordset(CAST($2 AS json))
                  AS r(line_no BIGINT, value TEXT, outcome TEXT, reason TEXT, coupon_id TEXT)
             ON CONFLICT (job_id, line_no) DO NOTHING"
        }
        Backend::Sqlite => {
            "INSERT INTO bulk_job_lines (job_id, line_no, value, outcome, reason, coupon_id)
             SELECT $1, json_extract(value, '$.line_no'), json_extract(value, '$.value'),
                    json_extract(value, '$.outcome'), json_extract(value, '$.reason'),
                    json_extract(value, '$.coupon_id')
             FROM json_each($2) WHERE true
             ON CONFLICT (job_id, line_no) DO NOTHING"
        }
    };
    for chunk in lines.chunks(LINES_PER_STATEMENT) {
        let rows: Vec<serde_json::Value> = chunk
            .iter()
            .map(|l| {
                serde_json::json!({
                    "line_no": l.line_no,
                    "value": l.value,
                    "outcome": l.outcome,
                    "reason": l.reason,
                    "coupon_id": l.coupon_id,
                })
            })
            .collect();
        let doc = serde_json::Value::Array(rows).to_string();
        sqlx::query(sql)
            .bind(job_id)
            .bind(doc)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Counts a loaded chunk: `loaded` moves from `before` to `after` (only
/// if it still is `before`), with the lines that failed already.
pub async fn mark_loaded(
    conn: &mut AnyConnection,
    id: &JobId,
    before: i64,
    after: i64,
    failed_add: i64,
    reasons: &str,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE bulk_jobs SET loaded = $3, failed = failed + $4, reasons = $5, updated_at = $6
         WHERE id = $1 AND status = 'loading' AND loaded = $2",
    )
    .bind(id)
    .bind(before)
    .bind(after)
    .bind(failed_add)
    .bind(reasons)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// A fully loaded job starts running.
pub async fn finish_loading(
    conn: &mut AnyConnection,
    id: &JobId,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE bulk_jobs SET status = 'running', updated_at = $2
         WHERE id = $1 AND status = 'loading' AND loaded = total",
    )
    .bind(id)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// The next pending lines after `after_line`, in order.
pub async fn pending_lines(
    conn: &mut AnyConnection,
    job_id: &JobId,
    after_line: i64,
    limit: i64,
) -> Result<Vec<(i64, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT line_no, value FROM bulk_job_lines
         WHERE job_id = $1 AND line_no > $2 AND outcome IS NULL ORDER BY line_no LIMIT $3",
    )
    .bind(job_id)
    .bind(after_line)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Records a line's outcome, only while it is pending.
pub async fn record_line(
    conn: &mut AnyConnection,
    job_id: &JobId,
    line_no: i64,
    outcome: &str,
    reason: Option<&str>,
    coupon_id: Option<&CouponId>,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE bulk_job_lines SET outcome = $3, reason = $4, coupon_id = $5
         WHERE job_id = $1 AND line_no = $2 AND outcome IS NULL",
    )
    .bind(job_id)
    .bind(line_no)
    .bind(outcome)
    .bind(reason)
    .bind(coupon_id)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// What one batch changes on its job.
#[derive(Debug, Clone)]
pub struct Advance<'a> {
    pub cursor_line: i64,
    pub walk_cursor: Option<&'a str>,
    pub succeeded_add: i64,
    pub skipped_add: i64,
    pub failed_add: i64,
    pub reasons: &'a str,
    pub total: i64,
    pub status: &'a str,
    pub finished_at: Option<i64>,
    pub now_ms: i64,
}

/// Moves a running job on by one batch: a conditional update on the
/// cursor it was read with, so a batch applies at most once.
pub async fn advance(
    conn: &mut AnyConnection,
    old: &JobRow,
    a: &Advance<'_>,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE bulk_jobs SET cursor_line = $3, walk_cursor = $4, succeeded = succeeded + $5,
             skipped = skipped + $6, failed = failed + $7, reasons = $8, total = $9, status = $10,
             finished_at = $11, updated_at = $12
         WHERE id = $1 AND status = 'running' AND cursor_line = $2",
    )
    .bind(&old.id)
    .bind(old.cursor_line)
    .bind(a.cursor_line)
    .bind(a.walk_cursor)
    .bind(a.succeeded_add)
    .bind(a.skipped_add)
    .bind(a.failed_add)
    .bind(a.reasons)
    .bind(a.total)
    .bind(a.status)
    .bind(a.finished_at)
    .bind(a.now_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// The next coupons of a template in one stored status, in
/// `(ends_at, id)` order after `after` (`coupons_template_status_ends_idx`),
/// created no later than `created_by`.
pub async fn walk_coupons(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    status: &str,
    created_by_ms: i64,
    after: Option<(i64, &str)>,
    limit: i64,
) -> Result<Vec<(CouponId, i64)>, sqlx::Error> {
    let (ends_at, id) = after.unwrap_or((i64::MIN, ""));
    sqlx::query_as(
        "SELECT id, ends_at FROM coupons
         WHERE template_id = $1 AND status = $2 AND (ends_at > $3 OR (ends_at = $3 AND id > $4))
           AND created_at <= $5
         ORDER BY ends_at, id LIMIT $6",
    )
    .bind(template_id)
    .bind(status)
    .bind(ends_at)
    .bind(id)
    .bind(created_by_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Coupons of a template a void of all would look at: stored
/// `available`, `locked` or `used`, created no later than `created_by`.
pub async fn count_voidable(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    created_by_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons
         WHERE template_id = $1 AND status IN ('available', 'locked', 'used') AND created_at <= $2",
    )
    .bind(template_id)
    .bind(created_by_ms)
    .fetch_one(conn)
    .await
}

/// One line with its outcome, for the results file.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LineRow {
    pub line_no: i64,
    pub value: String,
    pub outcome: Option<String>,
    pub reason: Option<String>,
    pub coupon_id: Option<CouponId>,
}

/// A page of a job's lines after `after_line`, in order.
pub async fn lines_page(
    conn: &mut AnyConnection,
    job_id: &JobId,
    after_line: i64,
    limit: i64,
) -> Result<Vec<LineRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT line_no, value, outcome, reason, coupon_id FROM bulk_job_lines
         WHERE job_id = $1 AND line_no > $2 ORDER BY line_no LIMIT $3",
    )
    .bind(job_id)
    .bind(after_line)
    .bind(limit)
    .fetch_all(conn)
    .await
}
