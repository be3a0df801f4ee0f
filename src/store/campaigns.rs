//! The `presale_campaigns` table.

use sqlx::AnyConnection;

use crate::domain::campaign::Policy;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CampaignRow {
    pub id: String,
    pub name: String,
    pub final_payment_starts_at: i64,
    pub final_payment_ends_at: i64,
    pub policy: Policy,
    pub created_at: i64,
}

pub async fn insert(conn: &mut AnyConnection, c: &CampaignRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO presale_campaigns (id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&c.id)
    .bind(&c.name)
    .bind(c.final_payment_starts_at)
    .bind(c.final_payment_ends_at)
    .bind(c.policy.as_str())
    .bind(c.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get(conn: &mut AnyConnection, id: &str) -> Result<Option<CampaignRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at
         FROM presale_campaigns WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// The campaigns whose final-payment window has not closed at `now_ms`,
/// the soonest to close first, at most `limit` (the console's cart form
/// offers them; an order on a closed one is refused anyway).
pub async fn open_at(
    conn: &mut AnyConnection,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<CampaignRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at
         FROM presale_campaigns WHERE final_payment_ends_at > $1
         ORDER BY final_payment_ends_at, id LIMIT $2",
    )
    .bind(now_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}
