//! The `presale_campaigns` table, and the reads of a campaign's orders the
//! console shows (counts by status, the policy-change preview's batches).

use sqlx::AnyConnection;

use super::dynamic::{self, Sql};
use crate::domain::campaign::{CampaignPhase, CompensationMode, Policy};
use crate::domain::coupon::CouponStatus;
use crate::domain::discount::DiscountKind;
use crate::domain::ids::{CampaignId, OrderNo};
use crate::domain::money::Cents;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CampaignRow {
    pub id: CampaignId,
    pub name: String,
    pub final_payment_starts_at: i64,
    pub final_payment_ends_at: i64,
    pub policy: Policy,
    pub created_at: i64,
    pub compensation_mode: CompensationMode,
}

const COLUMNS: &str = "id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at, compensation_mode";

pub async fn insert(conn: &mut AnyConnection, c: &CampaignRow) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO presale_campaigns (id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at, compensation_mode)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&c.id)
    .bind(&c.name)
    .bind(c.final_payment_starts_at)
    .bind(c.final_payment_ends_at)
    .bind(c.policy.as_str())
    .bind(c.created_at)
    .bind(c.compensation_mode.as_str())
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get(
    conn: &mut AnyConnection,
    id: &CampaignId,
) -> Result<Option<CampaignRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM presale_campaigns WHERE id = $1"
    ))
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
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM presale_campaigns WHERE final_payment_ends_at > $1
         ORDER BY final_payment_ends_at, id LIMIT $2"
    ))
    .bind(now_ms)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// What a page of campaigns is narrowed to (all `None`: every campaign).
#[derive(Debug, Clone, Copy, Default)]
pub struct CampaignFilter<'a> {
    /// A LIKE pattern with `\` as its escape character.
    pub name_like: Option<&'a str>,
    pub policy: Option<Policy>,
    /// The phase at `now_ms` ([`CampaignPhase::at`] in SQL).
    pub phase: Option<CampaignPhase>,
    pub now_ms: i64,
}

/// The statement of one page of campaigns, newest first: rows strictly
/// before `(created_at, id)` of `before`; one backwards range scan of
/// `presale_campaigns_created_idx`, the filters checked on its rows.
fn page_sql(before: Option<(i64, &str)>, limit: i64, f: &CampaignFilter<'_>) -> Sql {
    let mut sql = Sql::new(format!(
        "SELECT {COLUMNS} FROM presale_campaigns WHERE 1 = 1"
    ));
    if let Some(pattern) = f.name_like {
        sql.push_bind(" AND name LIKE ? ESCAPE '\\'", pattern);
    }
    if let Some(policy) = f.policy {
        sql.push_bind(" AND policy = ?", policy.as_str());
    }
    match f.phase {
        None => {}
        Some(CampaignPhase::BeforeFinalPayment) => {
            sql.push_bind(" AND final_payment_starts_at > ?", f.now_ms);
        }
        Some(CampaignPhase::FinalPaymentOpen) => {
            sql.push_bind(" AND final_payment_starts_at <= ?", f.now_ms)
                .push_bind(" AND final_payment_ends_at > ?", f.now_ms);
        }
        Some(CampaignPhase::Ended) => {
            sql.push_bind(" AND final_payment_ends_at <= ?", f.now_ms);
        }
    }
    if let Some((at, id)) = before {
        // `created_at <= ?` bounds the index range; the OR only filters
        // the rows of that one instant.
        sql.push_bind(" AND created_at <= ?", at)
            .push_bind(" AND (created_at < ?", at)
            .push_bind(" OR id < ?)", id);
    }
    sql.push_bind(
        " ORDER BY created_at DESC, id DESC LIMIT ?",
        limit.clamp(1, 1000),
    );
    sql
}

/// One page of campaigns, newest first.
pub async fn page(
    conn: &mut AnyConnection,
    before: Option<(i64, &str)>,
    limit: i64,
) -> Result<Vec<CampaignRow>, sqlx::Error> {
    search_page(conn, before, limit, &CampaignFilter::default()).await
}

/// One page of the campaigns `filter` lets through, newest first.
pub async fn search_page(
    conn: &mut AnyConnection,
    before: Option<(i64, &str)>,
    limit: i64,
    filter: &CampaignFilter<'_>,
) -> Result<Vec<CampaignRow>, sqlx::Error> {
    dynamic::fetch_all(conn, &page_sql(before, limit, filter)).await
}

/// The plan of exactly the statement [`page`] runs, for the index tests.
pub async fn explain_page(
    conn: &mut AnyConnection,
    before: Option<(i64, &str)>,
    limit: i64,
) -> Result<Vec<String>, sqlx::Error> {
    explain_search_page(conn, before, limit, &CampaignFilter::default()).await
}

/// The plan of exactly the statement [`search_page`] runs.
pub async fn explain_search_page(
    conn: &mut AnyConnection,
    before: Option<(i64, &str)>,
    limit: i64,
    filter: &CampaignFilter<'_>,
) -> Result<Vec<String>, sqlx::Error> {
    dynamic::explain(conn, &page_sql(before, limit, filter)).await
}

/// Changes a campaign's policy and compensation mode with one conditional
/// update: only while they are still `from` and the final-payment window
/// has not opened at `now_ms`. Whether a row changed.
pub async fn update_rules(
    conn: &mut AnyConnection,
    id: &CampaignId,
    from: (Policy, CompensationMode),
    to: (Policy, CompensationMode),
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE presale_campaigns SET policy = $1, compensation_mode = $2
         WHERE id = $3 AND policy = $4 AND compensation_mode = $5 AND final_payment_starts_at > $6",
    )
    .bind(to.0.as_str())
    .bind(to.1.as_str())
    .bind(id)
    .bind(from.0.as_str())
    .bind(from.1.as_str())
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// `(campaign_id, order status, count)` of the given campaigns' orders;
/// one range of `orders_campaign_status_no_idx` per campaign.
pub async fn order_counts(
    conn: &mut AnyConnection,
    ids: &[&CampaignId],
) -> Result<Vec<(CampaignId, String, i64)>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql =
        Sql::new("SELECT campaign_id, status, COUNT(*) FROM orders WHERE campaign_id IN (");
    for (i, id) in ids.iter().enumerate() {
        sql.push_bind(if i == 0 { "?" } else { ", ?" }, *id);
    }
    sql.push(") GROUP BY campaign_id, status");
    dynamic::fetch_all(conn, &sql).await
}

/// How many coupons locked to `deposit_paid` orders of the campaign end at
/// or before `at_ms` (under `strict` and `swap_or_compensate` they will not
/// give their discount as such when the window opens).
pub async fn locked_coupons_ending_by(
    conn: &mut AnyConnection,
    id: &CampaignId,
    at_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM orders o JOIN coupons c ON c.id = o.coupon_id
         WHERE o.campaign_id = $1 AND o.status = 'deposit_paid'
           AND c.status = 'locked' AND c.order_no = o.order_no AND c.ends_at <= $2",
    )
    .bind(id)
    .bind(at_ms)
    .fetch_one(conn)
    .await
}

/// A `deposit_paid` order of a campaign with its coupon, as the
/// policy-change preview judges it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PreviewRow {
    pub order_no: OrderNo,
    pub category: String,
    pub total_cents: Cents,
    pub deposit_cents: Cents,
    pub coupon_discount_cents: Cents,
    pub discount_snapshot_cents: Cents,
    pub compensation_cents: Cents,
    pub coupon_status: Option<CouponStatus>,
    pub coupon_order_no: Option<OrderNo>,
    pub coupon_ends_at: Option<i64>,
    pub coupon_kind: Option<DiscountKind>,
}

/// The next `limit` `deposit_paid` orders of a campaign after `after`
/// (order number order), each with its coupon; a range of
/// `orders_campaign_status_no_idx` and one key lookup per coupon.
pub async fn deposit_paid_batch(
    conn: &mut AnyConnection,
    id: &CampaignId,
    after: &str,
    limit: i64,
) -> Result<Vec<PreviewRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT o.order_no, o.category, o.total_cents, o.deposit_cents, o.coupon_discount_cents,
                o.discount_snapshot_cents, o.compensation_cents,
                c.status AS coupon_status, c.order_no AS coupon_order_no,
                c.ends_at AS coupon_ends_at, c.kind AS coupon_kind
         FROM orders o LEFT JOIN coupons c ON c.id = o.coupon_id
         WHERE o.campaign_id = $1 AND o.status = 'deposit_paid' AND o.order_no > $2
         ORDER BY o.order_no LIMIT $3",
    )
    .bind(id)
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// A further coupon of a `deposit_paid` order (several coupons), as the
/// policy-change preview judges it: its deposit snapshot and its coupon.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PreviewFurther {
    pub order_no: OrderNo,
    pub snapshot_cents: Cents,
    pub coupon_status: Option<CouponStatus>,
    pub coupon_order_no: Option<OrderNo>,
    pub coupon_ends_at: Option<i64>,
    pub coupon_kind: Option<DiscountKind>,
}

/// The further coupons of the orders `order_nos` (a preview batch), by
/// order and position; one index range of `order_coupons` per order and a
/// key lookup per coupon.
pub async fn preview_further(
    conn: &mut AnyConnection,
    order_nos: &[OrderNo],
) -> Result<Vec<PreviewFurther>, sqlx::Error> {
    let mut out = Vec::new();
    for chunk in order_nos.chunks(500) {
        let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT oc.order_no, oc.snapshot_cents,
                    c.status AS coupon_status, c.order_no AS coupon_order_no,
                    c.ends_at AS coupon_ends_at, c.kind AS coupon_kind
             FROM order_coupons oc LEFT JOIN coupons c ON c.id = oc.coupon_id
             WHERE oc.order_no IN ({})
             ORDER BY oc.order_no, oc.position",
            marks.join(", ")
        );
        let mut q = sqlx::query_as::<_, PreviewFurther>(&sql);
        for no in chunk {
            q = q.bind(no);
        }
        out.extend(q.fetch_all(&mut *conn).await?);
    }
    Ok(out)
}
