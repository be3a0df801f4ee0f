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
