//! The `compensation_ledger` table: every cent handed out to make up for a
//! coupon, with who, why and for which order.

use sqlx::AnyConnection;

use super::dynamic::{self, Sql};
use crate::domain::ids::{CampaignId, CouponId, OrderNo, UserId};
use crate::domain::money::{Cents, CentsDelta};

#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    pub user_id: &'a UserId,
    pub order_no: Option<&'a OrderNo>,
    pub coupon_id: Option<&'a CouponId>,
    /// `final_payment_deduction` (taken off a final payment), `coupon`
    /// (a compensation coupon was issued) or `final_payment_coupon` (a
    /// `coupon`-mode campaign's final payment issued one). Reversals
    /// (`refund_reversal`) are written by [`insert_reversal`] only.
    pub kind: &'static str,
    pub amount_cents: Cents,
    pub reason: &'a str,
    pub actor: &'a str,
    pub request_id: Option<&'a str>,
    pub at_ms: i64,
    /// The compensation preset used, if any.
    pub preset_id: Option<&'a str>,
    /// The compensation rules version in force (read in the same
    /// transaction).
    pub rules_version: i64,
    /// The campaign of the order, copied so the ledger filters on it by
    /// index.
    pub campaign_id: Option<&'a CampaignId>,
    /// Which of the order's coupons a compensation makes up for, when the
    /// order holds several and support named one (migration 0039).
    pub for_coupon_id: Option<&'a CouponId>,
    /// The business day of `at_ms` (`domain::report::day_number`): the
    /// report counters' day.
    pub day: i64,
}

pub async fn insert(conn: &mut AnyConnection, e: &NewEntry<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO compensation_ledger (user_id, order_no, coupon_id, kind, amount_cents, reason, actor, request_id, at,
             preset_id, rules_version, campaign_id, for_coupon_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(e.user_id)
    .bind(e.order_no)
    .bind(e.coupon_id)
    .bind(e.kind)
    .bind(e.amount_cents)
    .bind(e.reason)
    .bind(e.actor)
    .bind(e.request_id)
    .bind(e.at_ms)
    .bind(e.preset_id)
    .bind(e.rules_version)
    .bind(e.campaign_id)
    .bind(e.for_coupon_id)
    .execute(&mut *conn)
    .await?;
    // The report counters' compensation_cents (migration 0026): the
    // campaign's, and the template of the order's coupon.
    super::counters::count_compensation(
        conn,
        e.order_no,
        e.campaign_id,
        e.amount_cents.get(),
        e.day,
    )
    .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EntryRow {
    pub id: i64,
    pub user_id: UserId,
    pub order_no: Option<OrderNo>,
    pub coupon_id: Option<CouponId>,
    pub kind: String,
    /// Negative for a reversal (`refund_reversal`), else at least zero.
    pub amount_cents: CentsDelta,
    pub reason: String,
    pub actor: String,
    pub at: i64,
    pub preset_id: Option<String>,
    pub rules_version: Option<i64>,
    pub campaign_id: Option<CampaignId>,
    /// Which of the order's coupons the entry makes up for; `None` when it
    /// names none.
    pub for_coupon_id: Option<CouponId>,
}

/// The kinds a full refund of the order reverses: what its final payment
/// gave (a deduction or a compensation coupon). Support's compensation
/// coupons (`coupon`) make up for the customer's trouble, not for the
/// order's money, and stay.
pub const REVERSED_ON_REFUND: [&str; 2] = ["final_payment_deduction", "final_payment_coupon"];

/// The entries of an order a full refund reverses and that have no
/// reversal yet, oldest first.
pub async fn reversible_of_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<EntryRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM compensation_ledger AS l
         WHERE order_no = $1 AND kind IN ('{}', '{}')
           AND NOT EXISTS (SELECT 1 FROM compensation_ledger AS r WHERE r.reverses_id = l.id)
         ORDER BY id LIMIT 100",
        REVERSED_ON_REFUND[0], REVERSED_ON_REFUND[1]
    ))
    .bind(order_no)
    .fetch_all(conn)
    .await
}

/// A reversal of `entry`: the same user, order, coupon, campaign and
/// coupon made up for, the negated amount, kind `refund_reversal`.
/// Conditional: written only when the entry has no reversal yet (and the
/// unique index on `reverses_id` stops a second one from a concurrent
/// transaction); returns whether it was written. The report counters' compensation goes down by as much.
pub async fn insert_reversal(
    conn: &mut AnyConnection,
    entry: &EntryRow,
    reason: &str,
    actor: &str,
    request_id: Option<&str>,
    at_ms: i64,
    day: i64,
) -> Result<bool, sqlx::Error> {
    let written = sqlx::query(
        "INSERT INTO compensation_ledger (user_id, order_no, coupon_id, kind, amount_cents, reason, actor, request_id, at,
             preset_id, rules_version, campaign_id, for_coupon_id, reverses_id)
         SELECT user_id, order_no, coupon_id, 'refund_reversal', -amount_cents, $2, $3, $4, $5,
             preset_id, rules_version, campaign_id, for_coupon_id, id
         FROM compensation_ledger AS l
         WHERE id = $1 AND amount_cents > 0
           AND NOT EXISTS (SELECT 1 FROM compensation_ledger AS r WHERE r.reverses_id = l.id)",
    )
    .bind(entry.id)
    .bind(reason)
    .bind(actor)
    .bind(request_id)
    .bind(at_ms)
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    if written {
        super::counters::count_compensation(
            conn,
            entry.order_no.as_ref(),
            entry.campaign_id.as_ref(),
            -entry.amount_cents.get(),
            day,
        )
        .await?;
    }
    Ok(written)
}

const ENTRY_COLUMNS: &str = "id, user_id, order_no, coupon_id, kind, amount_cents, reason, actor, at, preset_id, rules_version, campaign_id, for_coupon_id";

/// Ledger entries of one order, oldest first (an order has at most a few).
pub async fn for_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<EntryRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {ENTRY_COLUMNS} FROM compensation_ledger WHERE order_no = $1 ORDER BY id LIMIT 100"
    ))
    .bind(order_no)
    .fetch_all(conn)
    .await
}

/// Most coupons [`for_coupons`] looks up at once.
pub const MAX_COUPONS_LOOKED_UP: usize = 500;

/// The ledger entries that gave these coupons (compensation coupons), by
/// `compensation_ledger_coupon_idx`; at most [`MAX_COUPONS_LOOKED_UP`]
/// ids are read (the rest are ignored).
pub async fn for_coupons(
    conn: &mut AnyConnection,
    coupon_ids: &[CouponId],
) -> Result<Vec<EntryRow>, sqlx::Error> {
    let ids = &coupon_ids[..coupon_ids.len().min(MAX_COUPONS_LOOKED_UP)];
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {ENTRY_COLUMNS} FROM compensation_ledger WHERE coupon_id IN ({}) ORDER BY id",
        super::param_list(1, ids.len())
    );
    let mut q = sqlx::query_as(&sql);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(conn).await
}

/// Filters of the finance ledger; `None` means any. Each equality filter
/// has its own index ending in `(at, id)` (`migrations/*/0019`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerQuery {
    /// `at >= this` (ms).
    pub from_ms: Option<i64>,
    /// `at < this` (ms).
    pub until_ms: Option<i64>,
    pub order_no: Option<String>,
    /// Exact actor (`staff:alice`, `api:…`, `job:…`).
    pub actor: Option<String>,
    pub preset_id: Option<String>,
    pub campaign_id: Option<String>,
}

/// Keyset cursor: rows strictly before this `(at, id)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerCursor {
    pub at: i64,
    pub id: i64,
}

fn filtered(head: &str, q: &LedgerQuery) -> Sql {
    let mut sql = Sql::new(format!("{head} FROM compensation_ledger WHERE 1 = 1"));
    if let Some(v) = &q.order_no {
        sql.push_bind(" AND order_no = ?", v.as_str());
    }
    if let Some(v) = &q.preset_id {
        sql.push_bind(" AND preset_id = ?", v.as_str());
    }
    if let Some(v) = &q.campaign_id {
        sql.push_bind(" AND campaign_id = ?", v.as_str());
    }
    if let Some(v) = &q.actor {
        sql.push_bind(" AND actor = ?", v.as_str());
    }
    if let Some(f) = q.from_ms {
        sql.push_bind(" AND at >= ?", f);
    }
    if let Some(u) = q.until_ms {
        sql.push_bind(" AND at < ?", u);
    }
    sql
}

/// The statement of one page, newest first.
pub fn page_sql(q: &LedgerQuery, before: Option<LedgerCursor>, limit: i64) -> Sql {
    let mut sql = filtered(&format!("SELECT {ENTRY_COLUMNS}"), q);
    if let Some(c) = before {
        // `at <= ?` bounds the index range; the OR only filters the rows
        // of that one `at` value.
        sql.push_bind(" AND at <= ?", c.at)
            .push_bind(" AND (at < ?", c.at)
            .push_bind(" OR id < ?)", c.id);
    }
    sql.push_bind(" ORDER BY at DESC, id DESC LIMIT ?", limit.clamp(1, 10_000));
    sql
}

/// The statement of the totals of the whole filtered range: one aggregate
/// over the same index range as the pages.
pub fn totals_sql(q: &LedgerQuery) -> Sql {
    filtered(
        "SELECT CAST(COUNT(*) AS BIGINT) AS count, CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) AS value_cents",
        q,
    )
}

/// Totals of one group of the filtered range.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GroupTotal {
    /// The group: `<kind>` or `<kind>:<preset id>` (by reason), or the
    /// actor (by staff).
    pub group_key: String,
    pub count: i64,
    /// Net of reversals where they fall in the group: by reason, a
    /// reversal is a group of its own (kind `refund_reversal`) with a
    /// negative sum; by staff, it counts under whoever refunded.
    pub value_cents: CentsDelta,
}

/// How a breakdown groups the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// The kind, and the preset for rows issued with one.
    Reason,
    /// The actor.
    Staff,
}

/// The statement of a breakdown of the filtered range, largest first, at
/// most 100 groups.
pub fn groups_sql(q: &LedgerQuery, by: GroupBy) -> Sql {
    let key = match by {
        GroupBy::Reason => {
            "CASE WHEN preset_id IS NULL THEN kind ELSE kind || ':' || preset_id END"
        }
        GroupBy::Staff => "actor",
    };
    let mut sql = filtered(
        &format!(
            "SELECT {key} AS group_key, CAST(COUNT(*) AS BIGINT) AS count, CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) AS value_cents"
        ),
        q,
    );
    sql.push(&format!(
        " GROUP BY {key} ORDER BY value_cents DESC, group_key LIMIT 100"
    ));
    sql
}

pub async fn page(
    conn: &mut AnyConnection,
    q: &LedgerQuery,
    before: Option<LedgerCursor>,
    limit: i64,
) -> Result<Vec<EntryRow>, sqlx::Error> {
    dynamic::fetch_all(conn, &page_sql(q, before, limit)).await
}

pub async fn totals(conn: &mut AnyConnection, q: &LedgerQuery) -> Result<(i64, i64), sqlx::Error> {
    dynamic::fetch_one::<(i64, i64)>(conn, &totals_sql(q)).await
}

pub async fn groups(
    conn: &mut AnyConnection,
    q: &LedgerQuery,
    by: GroupBy,
) -> Result<Vec<GroupTotal>, sqlx::Error> {
    dynamic::fetch_all(conn, &groups_sql(q, by)).await
}

/// The plans of a page and of the totals with these filters (index tests).
pub async fn explain_page_and_totals(
    conn: &mut AnyConnection,
    q: &LedgerQuery,
    before: Option<LedgerCursor>,
) -> Result<(Vec<String>, Vec<String>), sqlx::Error> {
    let page = dynamic::explain(conn, &page_sql(q, before, 51)).await?;
    let totals = dynamic::explain(conn, &totals_sql(q)).await?;
    Ok((page, totals))
}

/// The 200 campaigns whose final payment ends last, by name (the ledger
/// page's campaign filter; `presale_campaigns_ends_idx`).
pub async fn campaign_choices(
    conn: &mut AnyConnection,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, name FROM presale_campaigns ORDER BY final_payment_ends_at DESC LIMIT 200",
    )
    .fetch_all(conn)
    .await
}

/// Compensation-coupon cents issued by `actor` in `[from_ms, to_ms)`
/// (`(actor, at)` index).
pub async fn compensation_issued_by(
    conn: &mut AnyConnection,
    actor: &str,
    from_ms: i64,
    to_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM compensation_ledger
         WHERE actor = $1 AND at >= $2 AND at < $3 AND kind = 'coupon'",
    )
    .bind(actor)
    .bind(from_ms)
    .bind(to_ms)
    .fetch_one(conn)
    .await
}

/// Serializes the compensation issued by one actor for the rest of the
/// transaction, so two concurrent issues cannot both pass the daily cap.
/// PostgreSQL: a transaction-scoped advisory lock on the actor. SQLite:
/// nothing to do, a write transaction already holds the database lock.
pub async fn lock_actor_for_caps(conn: &mut AnyConnection, actor: &str) -> Result<(), sqlx::Error> {
    super::advisory_lock(conn, &format!("compensation-cap:{actor}")).await
}
