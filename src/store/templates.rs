//! Templates, their stock shards and per-user claim counters.

use sqlx::AnyConnection;

use crate::domain::discount::DiscountKind;
use crate::domain::template::TemplateStatus;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TemplateRow {
    pub id: String,
    pub name: String,
    pub kind: DiscountKind,
    pub value_cents: Option<i64>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<i64>,
    pub min_order_cents: i64,
    /// JSON array of strings.
    pub categories: String,
    pub valid_from: Option<i64>,
    pub valid_until: Option<i64>,
    pub valid_seconds: Option<i64>,
    pub total_stock: Option<i64>,
    pub per_user_limit: Option<i64>,
    pub status: TemplateStatus,
    pub created_at: i64,
}

const COLUMNS: &str = "id, name, kind, value_cents, percent_off, max_discount_cents, min_order_cents, categories, \
     valid_from, valid_until, valid_seconds, total_stock, per_user_limit, status, created_at";

/// Inserts the template and its stock shards (`capacities[i]` is shard i's
/// capacity, `None` for unlimited).
pub async fn insert(
    conn: &mut AnyConnection,
    t: &TemplateRow,
    capacities: &[Option<i64>],
) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "INSERT INTO templates ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    ))
    .bind(&t.id)
    .bind(&t.name)
    .bind(t.kind.as_str())
    .bind(t.value_cents)
    .bind(t.percent_off)
    .bind(t.max_discount_cents)
    .bind(t.min_order_cents)
    .bind(&t.categories)
    .bind(t.valid_from)
    .bind(t.valid_until)
    .bind(t.valid_seconds)
    .bind(t.total_stock)
    .bind(t.per_user_limit)
    .bind(t.status.as_str())
    .bind(t.created_at)
    .execute(&mut *conn)
    .await?;
    for (i, cap) in capacities.iter().enumerate() {
        sqlx::query(
            "INSERT INTO template_stock_shards (template_id, shard, capacity, claimed) VALUES ($1, $2, $3, 0)",
        )
        .bind(&t.id)
        .bind(i as i64)
        .bind(*cap)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

pub async fn get(conn: &mut AnyConnection, id: &str) -> Result<Option<TemplateRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM templates WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Coupons claimed from a template so far: the sum over its shards.
pub async fn claimed(conn: &mut AnyConnection, id: &str) -> Result<i64, sqlx::Error> {
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(claimed), 0) AS BIGINT) FROM template_stock_shards WHERE template_id = $1",
    )
    .bind(id)
    .fetch_one(conn)
    .await?;
    Ok(n)
}

/// Number of stock shards of a template.
pub async fn shard_count(conn: &mut AnyConnection, id: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM template_stock_shards WHERE template_id = $1",
    )
    .bind(id)
    .fetch_one(conn)
    .await
}

/// Counts one more claim of `user_id` against `limit`. Returns false (and
/// changes nothing) when the user already holds `limit` claims. The upsert
/// is atomic on both stores, so two concurrent first claims cannot both
/// insert.
pub async fn take_user_quota(
    conn: &mut AnyConnection,
    template_id: &str,
    user_id: &str,
    limit: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "INSERT INTO template_user_claims (template_id, user_id, claimed) VALUES ($1, $2, 1)
         ON CONFLICT (template_id, user_id) DO UPDATE SET claimed = template_user_claims.claimed + 1
         WHERE template_user_claims.claimed < $3",
    )
    .bind(template_id)
    .bind(user_id)
    .bind(limit)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Takes one unit of stock from one shard: a conditional increment that
/// fails when the shard is full. Returns whether it took one.
pub async fn take_from_shard(
    conn: &mut AnyConnection,
    template_id: &str,
    shard: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE template_stock_shards SET claimed = claimed + 1
         WHERE template_id = $1 AND shard = $2 AND (capacity IS NULL OR claimed < capacity)",
    )
    .bind(template_id)
    .bind(shard)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}
