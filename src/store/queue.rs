//! The support console's work queue: the counts and short lists the home
//! page reads on every visit. Each is one indexed query, bounded by its
//! index range (see the console benchmark, docs/src/development/bench-console.md,
//! for their p99 at 1,000,000 coupons).

use crate::domain::ids::{OrderNo, UserId};
use crate::domain::money::Cents;
use sqlx::AnyConnection;

/// The `AND`-clause shared by the at-risk count and list: deposit-paid
/// orders of a campaign whose final payment has not closed (and whose
/// policy is not `lock`, under which the lock outlives the coupon), with a
/// coupon locked to them that ends no later than the window opens.
const AT_RISK: &str = "FROM presale_campaigns p
     JOIN orders o ON o.campaign_id = p.id AND o.status = 'deposit_paid'
     JOIN coupons c ON c.id = o.coupon_id
     WHERE p.final_payment_ends_at > $1 AND p.policy <> 'lock'
       AND o.coupon_lock_status = 'locked' AND c.status = 'locked'
       AND c.ends_at <= p.final_payment_starts_at";

/// How many orders are at risk (see [`AT_RISK`]): through the campaigns
/// still taking final payments (`presale_campaigns_ends_idx`), their
/// deposit-paid orders (`orders_campaign_status_no_idx`) and each order's
/// coupon by primary key.
pub async fn at_risk_count(conn: &mut AnyConnection, now_ms: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(&format!("SELECT CAST(COUNT(*) AS BIGINT) {AT_RISK}"))
        .bind(now_ms)
        .fetch_one(conn)
        .await
}

/// One at-risk order, for the queue's list page.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AtRiskRow {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub campaign_name: String,
    pub policy: crate::domain::campaign::Policy,
    pub code: String,
    pub coupon_ends_at: i64,
    pub window_starts_at: i64,
}

/// The at-risk orders whose window opens first, at most `limit`.
pub async fn at_risk_list(
    conn: &mut AnyConnection,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<AtRiskRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT o.order_no, o.user_id, p.name AS campaign_name, p.policy, c.code,
                c.ends_at AS coupon_ends_at, p.final_payment_starts_at AS window_starts_at
         {AT_RISK} ORDER BY p.final_payment_starts_at, o.order_no LIMIT $2"
    ))
    .bind(now_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Normal orders awaiting payment whose checkout lock lapses in
/// `(from_ms, to_ms]` (`orders_status_checkout_idx`, partial: the status
/// stays a literal, see docs/src/development/indexes.md).
pub async fn lapsing_count(
    conn: &mut AnyConnection,
    from_ms: i64,
    to_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM orders
         WHERE status = 'pending_payment' AND checkout_lock_expires_at > $1
           AND checkout_lock_expires_at <= $2",
    )
    .bind(from_ms)
    .bind(to_ms)
    .fetch_one(conn)
    .await
}

/// One order whose checkout lock lapses soon.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct LapsingRow {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub total_cents: Cents,
    pub checkout_lock_expires_at: i64,
}

/// The orders of [`lapsing_count`], the soonest first, at most `limit`.
pub async fn lapsing_list(
    conn: &mut AnyConnection,
    from_ms: i64,
    to_ms: i64,
    limit: i64,
) -> Result<Vec<LapsingRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT order_no, user_id, total_cents, checkout_lock_expires_at FROM orders
         WHERE status = 'pending_payment' AND checkout_lock_expires_at > $1
           AND checkout_lock_expires_at <= $2
         ORDER BY checkout_lock_expires_at, order_no LIMIT $3",
    )
    .bind(from_ms)
    .bind(to_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Coupons stored `available` that end in `(from_ms, to_ms]`
/// (`coupons_status_ends_at_idx`).
pub async fn ending_count(
    conn: &mut AnyConnection,
    from_ms: i64,
    to_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons
         WHERE status = 'available' AND ends_at > $1 AND ends_at <= $2",
    )
    .bind(from_ms)
    .bind(to_ms)
    .fetch_one(conn)
    .await
}
