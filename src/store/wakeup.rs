//! Wake-up tables (`user_activity_kinds`, `wakeup_rules`, `wakeup_marks`,
//! migration 0027) and the wake-up planner's candidate queries. SQL only;
//! the rules are in `domain::wakeup`.

use std::collections::HashSet;

use sqlx::AnyConnection;

use crate::domain::discount::DiscountKind;
use crate::domain::ids::{CouponId, TemplateId, UserId, WakeupRuleId};
use crate::domain::money::Cents;

/// Records the shop's report of an activity: the row of `(user, kind)`
/// keeps the latest instant (an older report changes nothing). One row per
/// user and kind, so the table holds at most three rows a user.
pub async fn record_activity(
    conn: &mut AnyConnection,
    user_id: &UserId,
    kind: &str,
    at_ms: i64,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("wakeup.record_activity");
    sqlx::query(
        "INSERT INTO user_activity_kinds (user_id, kind, last_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id, kind) DO UPDATE SET last_at = excluded.last_at
         WHERE user_activity_kinds.last_at < excluded.last_at",
    )
    .bind(user_id)
    .bind(kind)
    .bind(at_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// The user's latest reported activity of any kind, in ms: at most three
/// rows of the primary key.
pub async fn last_activity(
    conn: &mut AnyConnection,
    user_id: &UserId,
) -> Result<Option<i64>, sqlx::Error> {
    let _timed = super::timing::call("wakeup.last_activity");
    sqlx::query_scalar("SELECT MAX(last_at) FROM user_activity_kinds WHERE user_id = $1")
        .bind(user_id)
        .fetch_one(conn)
        .await
}

/// When the user last placed an order (any status since), in ms: one
/// probe of `orders (user_id, created_at)`.
pub async fn last_order(
    conn: &mut AnyConnection,
    user_id: &UserId,
) -> Result<Option<i64>, sqlx::Error> {
    let _timed = super::timing::call("wakeup.last_order");
    sqlx::query_scalar("SELECT MAX(created_at) FROM orders WHERE user_id = $1")
        .bind(user_id)
        .fetch_one(conn)
        .await
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RuleRow {
    pub id: WakeupRuleId,
    pub name: String,
    pub lead_seconds: i64,
    pub active_within_seconds: i64,
    /// JSON array of template ids; empty: every template.
    pub template_ids: String,
    pub bonus_template_id: Option<TemplateId>,
    pub control_percent: i64,
    /// `active` or `paused`.
    pub status: String,
    pub created_at: i64,
    pub created_by: String,
    /// Every coupon ending up to this instant (ms) was decided by a
    /// complete pass of the planner.
    pub scanned_through: Option<i64>,
}

impl RuleRow {
    pub fn templates(&self) -> Vec<TemplateId> {
        serde_json::from_str(&self.template_ids).unwrap_or_default()
    }
}

const RULE_COLUMNS: &str = "id, name, lead_seconds, active_within_seconds, template_ids, bonus_template_id, control_percent, status, created_at, created_by, scanned_through";

pub async fn insert_rule(conn: &mut AnyConnection, r: &RuleRow) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "INSERT INTO wakeup_rules ({RULE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
    ))
    .bind(&r.id)
    .bind(&r.name)
    .bind(r.lead_seconds)
    .bind(r.active_within_seconds)
    .bind(&r.template_ids)
    .bind(&r.bonus_template_id)
    .bind(r.control_percent)
    .bind(&r.status)
    .bind(r.created_at)
    .bind(&r.created_by)
    .bind(r.scanned_through)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get_rule(
    conn: &mut AnyConnection,
    id: &WakeupRuleId,
) -> Result<Option<RuleRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {RULE_COLUMNS} FROM wakeup_rules WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// The newest `limit` rules, optionally only the active ones.
pub async fn list_rules(
    conn: &mut AnyConnection,
    only_active: bool,
    limit: i64,
) -> Result<Vec<RuleRow>, sqlx::Error> {
    let filter = if only_active {
        "WHERE status = 'active'"
    } else {
        ""
    };
    sqlx::query_as(&format!(
        "SELECT {RULE_COLUMNS} FROM wakeup_rules {filter} ORDER BY created_at DESC, id DESC LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Pauses or resumes a rule with one conditional update; false when it
/// already had that status.
pub async fn set_rule_status(
    conn: &mut AnyConnection,
    id: &WakeupRuleId,
    from: &str,
    to: &str,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query("UPDATE wakeup_rules SET status = $3 WHERE id = $1 AND status = $2")
        .bind(id)
        .bind(from)
        .bind(to)
        .execute(conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// Moves a rule's cursor forward to `through_ms` (never back: two
/// instances may finish passes in any order).
pub async fn advance_scan(
    conn: &mut AnyConnection,
    id: &WakeupRuleId,
    through_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE wakeup_rules SET scanned_through = $2
         WHERE id = $1 AND (scanned_through IS NULL OR scanned_through < $2)",
    )
    .bind(id)
    .bind(through_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// An `available` coupon inside a rule's reach.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DueRow {
    pub id: CouponId,
    pub user_id: UserId,
    pub ends_at: i64,
    pub kind: DiscountKind,
    pub value_cents: Option<Cents>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<Cents>,
}

/// `template_id IN ($k, ...)` for a rule's templates starting at
/// bind parameter number `first`, or nothing for every template.
fn template_filter(templates: &[TemplateId], first: usize) -> String {
    if templates.is_empty() {
        return String::new();
    }
    let list = (0..templates.len())
        .map(|i| format!("${}", first + i))
        .collect::<Vec<_>>()
        .join(", ");
    format!(" AND c.template_id IN ({list})")
}

/// `available` coupons ending in `(lo_ms, hi_ms]` that existed `lead_ms`
/// before their end (a coupon claimed later was not forgotten), of the
/// rule's templates, in `(ends_at, id)` order after the keyset cursor,
/// at most `limit`. Served by `coupons (status, ends_at)`. Marked coupons
/// are filtered afterwards by [`marked`] (primary-key probes).
#[allow(clippy::too_many_arguments)]
pub async fn due_coupons(
    conn: &mut AnyConnection,
    lo_ms: i64,
    hi_ms: i64,
    lead_ms: i64,
    templates: &[TemplateId],
    after: (i64, &str),
    limit: i64,
) -> Result<Vec<DueRow>, sqlx::Error> {
    let _timed = super::timing::call("wakeup.due_coupons");
    let sql = format!(
        "SELECT c.id, c.user_id, c.ends_at, c.kind, c.value_cents, c.percent_off, c.max_discount_cents
         FROM coupons c
         WHERE c.status = 'available' AND c.ends_at > $1 AND c.ends_at <= $2
           AND (c.ends_at > $3 OR (c.ends_at = $3 AND c.id > $4))
           AND c.created_at <= c.ends_at - $5{}
         ORDER BY c.ends_at, c.id LIMIT $6",
        template_filter(templates, 7)
    );
    let mut q = sqlx::query_as::<_, DueRow>(&sql)
        .bind(lo_ms)
        .bind(hi_ms)
        .bind(after.0)
        .bind(after.1)
        .bind(lead_ms)
        .bind(limit);
    for t in templates {
        q = q.bind(t);
    }
    q.fetch_all(conn).await
}

/// Most of one user's coupons one wake-up covers.
pub const USER_COUPONS: i64 = 200;

/// One user's coupons in a rule's reach (as [`due_coupons`]), unmarked,
/// earliest end first. Served by `coupons (user_id, status, ...)`.
pub async fn user_due(
    conn: &mut AnyConnection,
    user_id: &UserId,
    lo_ms: i64,
    hi_ms: i64,
    lead_ms: i64,
    templates: &[TemplateId],
) -> Result<Vec<DueRow>, sqlx::Error> {
    let _timed = super::timing::call("wakeup.user_due");
    let sql = format!(
        "SELECT c.id, c.user_id, c.ends_at, c.kind, c.value_cents, c.percent_off, c.max_discount_cents
         FROM coupons c
         WHERE c.user_id = $1 AND c.status = 'available' AND c.ends_at > $2 AND c.ends_at <= $3
           AND c.created_at <= c.ends_at - $4{}
         ORDER BY c.ends_at, c.id LIMIT $5",
        template_filter(templates, 6)
    );
    let mut q = sqlx::query_as::<_, DueRow>(&sql)
        .bind(user_id)
        .bind(lo_ms)
        .bind(hi_ms)
        .bind(lead_ms)
        .bind(USER_COUPONS);
    for t in templates {
        q = q.bind(t);
    }
    let rows = q.fetch_all(&mut *conn).await?;
    let ids: Vec<CouponId> = rows.iter().map(|r| r.id.clone()).collect();
    let done = marked(conn, &ids).await?;
    Ok(rows
        .into_iter()
        .filter(|r| !done.contains(r.id.as_str()))
        .collect())
}

/// Which of `ids` a wake-up rule already decided about.
pub async fn marked(
    conn: &mut AnyConnection,
    ids: &[CouponId],
) -> Result<HashSet<CouponId>, sqlx::Error> {
    let _timed = super::timing::call("wakeup.marked");
    let mut out = HashSet::new();
    for chunk in ids.chunks(500) {
        let list = (1..=chunk.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("SELECT coupon_id FROM wakeup_marks WHERE coupon_id IN ({list})");
        let mut q = sqlx::query_scalar::<_, CouponId>(&sql);
        for id in chunk {
            q = q.bind(id);
        }
        out.extend(q.fetch_all(&mut *conn).await?);
    }
    Ok(out)
}

/// One decision about one user's expiring coupons.
#[derive(Debug, Clone)]
pub struct NewMarks<'a> {
    pub rule_id: &'a WakeupRuleId,
    pub user_id: &'a UserId,
    pub outcome: &'a str,
    pub channel: Option<&'a str>,
    pub bonus_coupon_id: Option<&'a CouponId>,
    pub created_at: i64,
}

/// Marks `coupons` (id, ends_at) as decided. A coupon already marked (by
/// another instance meanwhile) fails the statement with a unique
/// violation, which rolls the caller's transaction back.
pub async fn insert_marks(
    conn: &mut AnyConnection,
    m: &NewMarks<'_>,
    coupons: &[(String, i64)],
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("wakeup.insert_marks");
    for chunk in coupons.chunks(100) {
        let mut sql = String::from(
            "INSERT INTO wakeup_marks (rule_id, user_id, outcome, channel, bonus_coupon_id, created_at, coupon_id, ends_at) VALUES ",
        );
        for i in 0..chunk.len() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "($1, $2, $3, $4, $5, $6, ${}, ${})",
                7 + 2 * i,
                8 + 2 * i
            ));
        }
        let mut q = sqlx::query(&sql)
            .bind(m.rule_id)
            .bind(m.user_id)
            .bind(m.outcome)
            .bind(m.channel)
            .bind(m.bonus_coupon_id)
            .bind(m.created_at);
        for (id, ends_at) in chunk {
            q = q.bind(id).bind(*ends_at);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// A rule's figures per outcome: `(outcome, expiring coupons, of which
/// used between the decision and their end, users, wake-up coupons)`.
/// One grouped read of the rule's marks (`wakeup_marks_rule_idx`), each
/// joined to its coupon by primary key; archived coupons (long after
/// their end) no longer count.
pub async fn rule_figures(
    conn: &mut AnyConnection,
    rule_id: &WakeupRuleId,
) -> Result<Vec<(String, i64, i64, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT m.outcome, CAST(COUNT(*) AS BIGINT),
                CAST(COALESCE(SUM(CASE WHEN c.status = 'used' AND c.used_at >= m.created_at
                                        AND c.used_at <= m.ends_at THEN 1 ELSE 0 END), 0) AS BIGINT),
                CAST(COUNT(DISTINCT m.user_id) AS BIGINT),
                CAST(COUNT(DISTINCT m.bonus_coupon_id) AS BIGINT)
         FROM wakeup_marks m LEFT JOIN coupons c ON c.id = m.coupon_id
         WHERE m.rule_id = $1
         GROUP BY m.outcome",
    )
    .bind(rule_id)
    .fetch_all(conn)
    .await
}
