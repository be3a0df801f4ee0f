//! The `category_names` table (`migrations/*/0031_category_names.sql`):
//! read whole, written one row at a time.

use sqlx::AnyConnection;

use crate::domain::category::{CategoryName, MAX_NAMED};

/// Every named category, by code (at most [`MAX_NAMED`]).
pub async fn all(conn: &mut AnyConnection) -> Result<Vec<CategoryName>, sqlx::Error> {
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("SELECT code, name_zh, name_en FROM category_names ORDER BY code LIMIT $1")
            .bind(MAX_NAMED as i64)
            .fetch_all(conn)
            .await?;
    Ok(rows
        .into_iter()
        .map(|(code, zh, en)| CategoryName::from_stored(code, zh, en))
        .collect())
}

/// How many categories are named.
pub async fn count(conn: &mut AnyConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM category_names")
        .fetch_one(conn)
        .await
}

/// The names of one code, if it has them.
pub async fn get(
    conn: &mut AnyConnection,
    code: &str,
) -> Result<Option<(String, String)>, sqlx::Error> {
    sqlx::query_as("SELECT name_zh, name_en FROM category_names WHERE code = $1")
        .bind(code)
        .fetch_optional(conn)
        .await
}

/// Names a new code; false when it already has names.
pub async fn insert(
    conn: &mut AnyConnection,
    n: &CategoryName,
    by: &str,
    at_ms: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO category_names (code, name_zh, name_en, updated_by, updated_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (code) DO NOTHING",
    )
    .bind(n.code())
    .bind(n.zh())
    .bind(n.en())
    .bind(by)
    .bind(at_ms)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Renames a code whose names are still `(zh, en)`; false when they are
/// not (changed meanwhile, or removed).
pub async fn rename(
    conn: &mut AnyConnection,
    n: &CategoryName,
    was: &(String, String),
    by: &str,
    at_ms: i64,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE category_names SET name_zh = $2, name_en = $3, updated_by = $4, updated_at = $5
         WHERE code = $1 AND name_zh = $6 AND name_en = $7",
    )
    .bind(n.code())
    .bind(n.zh())
    .bind(n.en())
    .bind(by)
    .bind(at_ms)
    .bind(&was.0)
    .bind(&was.1)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
