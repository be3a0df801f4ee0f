//! Redeem codes: `code_batches` (one request for codes, its progress and
//! its void) and `redeem_codes` (one row per code, keyed by the normalized
//! code, so the primary key keeps codes unique across every batch).

use sqlx::AnyConnection;

use super::{Backend, backend_of};
use crate::domain::ids::{CodeBatchId, CouponId, TemplateId, UserId};
use crate::domain::redeem_code::BatchStatus;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BatchRow {
    pub id: CodeBatchId,
    pub template_id: TemplateId,
    pub code_count: i64,
    pub prefix: String,
    pub code_length: i64,
    pub generated_count: i64,
    pub status: BatchStatus,
    pub error: Option<String>,
    pub created_by: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
    pub voided_at: Option<i64>,
    pub void_reason: Option<String>,
    pub voided_by: Option<String>,
    pub voided_count: i64,
    pub void_finished_at: Option<i64>,
}

const BATCH_COLUMNS: &str = "id, template_id, code_count, prefix, code_length, generated_count, status, error, \
     created_by, created_at, updated_at, finished_at, voided_at, void_reason, voided_by, voided_count, void_finished_at";

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CodeRow {
    pub code: String,
    pub batch_id: CodeBatchId,
    pub template_id: TemplateId,
    pub created_at: i64,
    pub redeemed_at: Option<i64>,
    pub user_id: Option<UserId>,
    pub coupon_id: Option<CouponId>,
    pub voided_at: Option<i64>,
}

const CODE_COLUMNS: &str =
    "code, batch_id, template_id, created_at, redeemed_at, user_id, coupon_id, voided_at";

/// Most codes one insert statement carries (4 parameters each).
pub const MAX_INSERT_ROWS: usize = 500;

pub async fn insert_batch(conn: &mut AnyConnection, b: &BatchRow) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "INSERT INTO code_batches ({BATCH_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
    ))
    .bind(&b.id)
    .bind(&b.template_id)
    .bind(b.code_count)
    .bind(&b.prefix)
    .bind(b.code_length)
    .bind(b.generated_count)
    .bind(b.status.as_str())
    .bind(&b.error)
    .bind(&b.created_by)
    .bind(b.created_at)
    .bind(b.updated_at)
    .bind(b.finished_at)
    .bind(b.voided_at)
    .bind(&b.void_reason)
    .bind(&b.voided_by)
    .bind(b.voided_count)
    .bind(b.void_finished_at)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get_batch(
    conn: &mut AnyConnection,
    id: &CodeBatchId,
) -> Result<Option<BatchRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {BATCH_COLUMNS} FROM code_batches WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A template's batches, newest first (`code_batches_template_idx`).
pub async fn list_for_template(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    limit: i64,
) -> Result<Vec<BatchRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {BATCH_COLUMNS} FROM code_batches WHERE template_id = $1
         ORDER BY created_at DESC, id DESC LIMIT $2"
    ))
    .bind(template_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The oldest batch still generating, locked for this transaction. On
/// PostgreSQL `FOR UPDATE SKIP LOCKED`: two instances' jobs never work on
/// one batch at once, each takes another (or none); SQLite runs one write
/// transaction at a time.
pub async fn pick_running(conn: &mut AnyConnection) -> Result<Option<BatchRow>, sqlx::Error> {
    let lock = match backend_of(conn) {
        Backend::Postgres => "FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    sqlx::query_as(&format!(
        "SELECT {BATCH_COLUMNS} FROM code_batches WHERE status = 'running' AND voided_at IS NULL
         ORDER BY status, created_at, id LIMIT 1 {lock}"
    ))
    .fetch_optional(conn)
    .await
}

/// The oldest voided batch whose codes are not all voided yet, locked as
/// [`pick_running`] locks.
pub async fn pick_voiding(conn: &mut AnyConnection) -> Result<Option<BatchRow>, sqlx::Error> {
    let lock = match backend_of(conn) {
        Backend::Postgres => "FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    sqlx::query_as(&format!(
        "SELECT {BATCH_COLUMNS} FROM code_batches WHERE void_finished_at IS NULL AND voided_at IS NOT NULL
         ORDER BY void_finished_at, voided_at LIMIT 1 {lock}"
    ))
    .fetch_optional(conn)
    .await
}

/// Inserts the codes that are not taken yet (`ON CONFLICT DO NOTHING` on
/// the primary key, so a code drawn by a concurrent batch is skipped, not
/// an error that would abort the transaction); returns how many were
/// inserted. At most [`MAX_INSERT_ROWS`] codes.
pub async fn insert_codes(
    conn: &mut AnyConnection,
    batch_id: &CodeBatchId,
    template_id: &TemplateId,
    codes: &[String],
    now_ms: i64,
) -> Result<u64, sqlx::Error> {
    if codes.is_empty() {
        return Ok(0);
    }
    let codes = &codes[..codes.len().min(MAX_INSERT_ROWS)];
    let values: Vec<String> = (0..codes.len())
        .map(|i| format!("(${}, $1, $2, $3)", i + 4))
        .collect();
    let sql = format!(
        "INSERT INTO redeem_codes (code, batch_id, template_id, created_at) VALUES {}
         ON CONFLICT (code) DO NOTHING",
        values.join(", ")
    );
    let mut q = sqlx::query(&sql)
        .bind(batch_id)
        .bind(template_id)
        .bind(now_ms);
    for c in codes {
        q = q.bind(c);
    }
    Ok(q.execute(conn).await?.rows_affected())
}

/// Records `inserted` more codes of a running batch; `done` ends it.
pub async fn advance(
    conn: &mut AnyConnection,
    id: &CodeBatchId,
    inserted: i64,
    done: bool,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE code_batches SET generated_count = generated_count + $2, updated_at = $3,
             status = CASE WHEN $4 = 1 THEN 'done' ELSE status END,
             finished_at = CASE WHEN $4 = 1 THEN $3 ELSE finished_at END
         WHERE id = $1 AND status = 'running'",
    )
    .bind(id)
    .bind(inserted)
    .bind(now_ms)
    .bind(i64::from(done))
    .execute(conn)
    .await?;
    Ok(())
}

/// Gives a running batch up, with why.
pub async fn fail(
    conn: &mut AnyConnection,
    id: &CodeBatchId,
    error: &str,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE code_batches SET status = 'failed', error = $2, updated_at = $3, finished_at = $3
         WHERE id = $1 AND status = 'running'",
    )
    .bind(id)
    .bind(error)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a batch voided (once): its codes no longer redeem from this
/// commit on, and a running batch stops generating. Returns false when it
/// was voided already.
pub async fn mark_voided(
    conn: &mut AnyConnection,
    id: &CodeBatchId,
    reason: &str,
    by: &str,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE code_batches SET voided_at = $2, void_reason = $3, voided_by = $4, updated_at = $2,
             status = CASE WHEN status = 'running' THEN 'done' ELSE status END,
             finished_at = COALESCE(finished_at, $2)
         WHERE id = $1 AND voided_at IS NULL",
    )
    .bind(id)
    .bind(now_ms)
    .bind(reason)
    .bind(by)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Voids up to `limit` unredeemed codes of a batch, in code order
/// (`redeem_codes_batch_idx`); the outer WHERE re-checks each row, so a
/// code redeemed meanwhile stays redeemed. Returns how many were voided.
pub async fn void_codes(
    conn: &mut AnyConnection,
    batch_id: &CodeBatchId,
    now_ms: i64,
    limit: i64,
) -> Result<u64, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE redeem_codes SET voided_at = $2
         WHERE code IN (SELECT code FROM redeem_codes
                        WHERE batch_id = $1 AND redeemed_at IS NULL AND voided_at IS NULL
                        ORDER BY batch_id, code LIMIT $3)
           AND redeemed_at IS NULL AND voided_at IS NULL",
    )
    .bind(batch_id)
    .bind(now_ms)
    .bind(limit)
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}

/// Adds `n` voided codes to a batch's count; `finished` ends its void.
pub async fn advance_void(
    conn: &mut AnyConnection,
    id: &CodeBatchId,
    n: i64,
    finished: bool,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE code_batches SET voided_count = voided_count + $2, updated_at = $3,
             void_finished_at = CASE WHEN $4 = 1 THEN $3 ELSE void_finished_at END
         WHERE id = $1",
    )
    .bind(id)
    .bind(n)
    .bind(now_ms)
    .bind(i64::from(finished))
    .execute(conn)
    .await?;
    Ok(())
}

/// The code row of a normalized code.
pub async fn get_code(
    conn: &mut AnyConnection,
    code: &str,
) -> Result<Option<CodeRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {CODE_COLUMNS} FROM redeem_codes WHERE code = $1"
    ))
    .bind(code)
    .fetch_optional(conn)
    .await
}

/// Redeems a code for `user_id`: the conditional UPDATE whose row count
/// decides. Only a code neither redeemed nor voided, of a batch not
/// voided, changes; of concurrent attempts exactly one gets the row.
pub async fn redeem(
    conn: &mut AnyConnection,
    code: &str,
    user_id: &UserId,
    coupon_id: &CouponId,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE redeem_codes SET redeemed_at = $2, user_id = $3, coupon_id = $4
         WHERE code = $1 AND redeemed_at IS NULL AND voided_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM code_batches b
                           WHERE b.id = redeem_codes.batch_id AND b.voided_at IS NOT NULL)",
    )
    .bind(code)
    .bind(now_ms)
    .bind(user_id)
    .bind(coupon_id)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Up to `limit` codes of a batch after `after`, in code order (a keyset
/// page of `redeem_codes_batch_idx`).
pub async fn codes_page(
    conn: &mut AnyConnection,
    batch_id: &CodeBatchId,
    after: &str,
    limit: i64,
) -> Result<Vec<CodeRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {CODE_COLUMNS} FROM redeem_codes WHERE batch_id = $1 AND code > $2
         ORDER BY batch_id, code LIMIT $3"
    ))
    .bind(batch_id)
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// How many codes of a batch were redeemed.
pub async fn redeemed_count(
    conn: &mut AnyConnection,
    batch_id: &CodeBatchId,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM redeem_codes WHERE batch_id = $1 AND redeemed_at IS NOT NULL",
    )
    .bind(batch_id)
    .fetch_one(conn)
    .await
}

/// How many codes a batch has (the test's and the bench's check).
pub async fn code_count(
    conn: &mut AnyConnection,
    batch_id: &CodeBatchId,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM redeem_codes WHERE batch_id = $1")
        .bind(batch_id)
        .fetch_one(conn)
        .await
}
