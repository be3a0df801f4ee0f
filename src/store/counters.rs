//! The report counters (`template_counts`, `campaign_counts`, migration
//! 0026) and their deltas (`template_count_deltas`, `campaign_count_deltas`,
//! migration 0032).
//!
//! A change writes one delta row in its own transaction: a plain INSERT,
//! which waits for no other transaction (before, it UPSERTed two shared
//! counter rows, and every payment of one hot template queued behind
//! them); on PostgreSQL as a part of the change's own statement where the
//! store already writes it as one (see [`transition_parts`]). The
//! counter-fold job ([`fold`]) adds the deltas into the day and all-days
//! rows in bounded batches and deletes them. Every reader adds the deltas
//! not folded yet in the same statement (one snapshot), so what it returns
//! is exact whatever the fold's lag.
//!
//! What a change adds is `domain::report::{template_delta, campaign_delta}`;
//! a discount is read by the statement itself ([`discount_of`]): what the
//! coupon gave its order, as the order recorded it.

use sqlx::{AnyConnection, Row};

use crate::domain::coupon::CouponStatus;
use crate::domain::ids::{CampaignId, CouponId, OrderNo, TemplateId};
use crate::domain::report::{
    ALL_DAYS, COUNTER_COLUMNS, COUNTER_SHARDS, Counts, campaign_delta, template_delta,
};

/// Which counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Template,
    Campaign,
}

impl Subject {
    fn table(self) -> &'static str {
        match self {
            Subject::Template => "template_counts",
            Subject::Campaign => "campaign_counts",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Subject::Template => "template_id",
            Subject::Campaign => "campaign_id",
        }
    }

    fn delta_table(self) -> &'static str {
        match self {
            Subject::Template => "template_count_deltas",
            Subject::Campaign => "campaign_count_deltas",
        }
    }

    /// Both subjects, in the order the fold takes them.
    pub const ALL: [Subject; 2] = [Subject::Template, Subject::Campaign];
}

/// A shard for one change.
pub fn random_shard() -> i64 {
    use rand::Rng;
    rand::rng().random_range(0..COUNTER_SHARDS)
}

/// The discount coupon `coupon` gave order `order` (0 without one): a
/// further coupon's own (`order_coupons`), else the order row's sum less
/// its further coupons' discounts.
pub(super) fn discount_of(order: &str, coupon: &str) -> String {
    // Aliases no caller's query uses, so `order` and `coupon` may name
    // the caller's columns.
    format!(
        "COALESCE((SELECT dof_own.discount_cents FROM order_coupons AS dof_own \
           WHERE dof_own.order_no = {order} AND dof_own.coupon_id = {coupon}), \
         (SELECT dof_ord.coupon_discount_cents - CAST(COALESCE((SELECT SUM(dof_all.discount_cents) \
           FROM order_coupons AS dof_all WHERE dof_all.order_no = dof_ord.order_no), 0) AS BIGINT) \
           FROM orders AS dof_ord WHERE dof_ord.order_no = {order}), 0)"
    )
}

/// The columns' values of a delta as SQL: literals, and the discount as
/// `sign * <the order's discount>` when `discount` is not 0.
fn values(d: &Counts, discount: i64, discount_sql: &str) -> String {
    COUNTER_COLUMNS
        .iter()
        .zip(d.as_array())
        .map(|(col, v)| {
            if *col == "discount_cents" && discount != 0 {
                format!("{discount} * {discount_sql}")
            } else {
                v.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `ON CONFLICT ... DO UPDATE` adding every column.
fn on_conflict(s: Subject) -> String {
    let table = s.table();
    let sets = COUNTER_COLUMNS
        .iter()
        .map(|c| format!("{c} = {table}.{c} + excluded.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!("ON CONFLICT ({}, day, shard) DO UPDATE SET {sets}", s.key())
}

fn insert_head(s: Subject) -> String {
    format!(
        "INSERT INTO {} ({}, day, shard, {})",
        s.table(),
        s.key(),
        COUNTER_COLUMNS.join(", ")
    )
}

/// An INSERT of one delta row from a SELECT: `key` the subject's id
/// expression, `day` / `shard` their parameters, `from` the rows it reads
/// (may be empty), `cond` a WHERE condition. No `ON CONFLICT`: a delta
/// never meets another transaction's row.
fn upsert_select(
    s: Subject,
    key: &str,
    day: &str,
    shard: &str,
    vals: &str,
    from: &str,
    cond: &str,
) -> String {
    let from = if from.is_empty() {
        String::new()
    } else {
        format!("FROM {from}")
    };
    format!(
        "INSERT INTO {} ({}, day, shard, {}) SELECT {key}, {day}, {shard}, {vals} {from} WHERE {cond}",
        s.delta_table(),
        s.key(),
        COUNTER_COLUMNS.join(", ")
    )
}

/// PostgreSQL: the data-modifying CTE parts a coupon transition adds to
/// its statement (after `moved AS (UPDATE ... RETURNING ...)`), with `$5`
/// the order, `$11` the shard and `$12` the day. Empty when the change
/// counts nowhere.
pub fn transition_parts(from: CouponStatus, to: CouponStatus) -> String {
    let (d, discount) = template_delta(Some(from), to);
    let mut parts = format!(
        ",\n counted AS ({})",
        upsert_select(
            Subject::Template,
            "moved.template_id",
            "$12",
            "$11",
            &values(&d, discount, &discount_of("$5", "moved.id")),
            "moved",
            "moved.template_id IS NOT NULL",
        )
    );
    if let Some((d, discount)) = campaign_delta(from, to) {
        parts.push_str(&format!(
            ",\n campaign_counted AS ({})",
            upsert_select(
                Subject::Campaign,
                "o.campaign_id",
                "$12",
                "$11",
                &values(&d, discount, &discount_of("$5", "moved.id")),
                "moved JOIN orders AS o ON o.order_no = $5",
                "o.campaign_id IS NOT NULL",
            )
        ));
    }
    parts
}

/// SQLite: the counters of a coupon transition that happened, as separate
/// statements (one for the template, one more when it is bound to an
/// order, which may belong to a campaign).
pub async fn count_transition(
    conn: &mut AnyConnection,
    template_id: Option<&TemplateId>,
    coupon_id: &CouponId,
    order_no: Option<&OrderNo>,
    from: CouponStatus,
    to: CouponStatus,
    day: i64,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("counters.count_transition");
    let shard = random_shard();
    if let Some(t) = template_id {
        let (d, discount) = template_delta(Some(from), to);
        let with_order = discount != 0 && order_no.is_some();
        let sql = upsert_select(
            Subject::Template,
            "$1",
            "$2",
            "$3",
            &values(
                &d,
                if with_order { discount } else { 0 },
                &discount_of("$4", "$5"),
            ),
            "",
            "true",
        );
        let q = sqlx::query(&sql).bind(t).bind(day).bind(shard);
        let q = if with_order {
            q.bind(order_no).bind(coupon_id)
        } else {
            q
        };
        q.execute(&mut *conn).await?;
    }
    if let (Some(order_no), Some((d, discount))) = (order_no, campaign_delta(from, to)) {
        let sql = upsert_select(
            Subject::Campaign,
            "o.campaign_id",
            "$2",
            "$3",
            &values(&d, discount, &discount_of("$1", "$4")),
            "orders AS o",
            "o.order_no = $1 AND o.campaign_id IS NOT NULL",
        );
        let q = sqlx::query(&sql).bind(order_no).bind(day).bind(shard);
        let q = if discount != 0 { q.bind(coupon_id) } else { q };
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// PostgreSQL: the CTE part a new coupon adds to its INSERT (after `made
/// AS (INSERT ... RETURNING id)`), with `$4` the template, `$27` the shard
/// and `$28` the day.
pub fn creation_part(status: CouponStatus) -> String {
    let (d, _) = template_delta(None, status);
    format!(
        ",\n counted AS ({})",
        upsert_select(
            Subject::Template,
            "$4",
            "$28",
            "$27",
            &values(&d, 0, ""),
            "made",
            "true",
        )
    )
}

/// Adds `delta` (no discount) to the counters of `key` on `day`.
pub async fn add(
    conn: &mut AnyConnection,
    s: Subject,
    key: &str,
    day: i64,
    delta: &Counts,
) -> Result<(), sqlx::Error> {
    let sql = upsert_select(s, "$1", "$2", "$3", &values(delta, 0, ""), "", "true");
    sqlx::query(&sql)
        .bind(key)
        .bind(day)
        .bind(random_shard())
        .execute(conn)
        .await?;
    Ok(())
}

/// Compensation handed out (a compensation ledger entry): to the
/// campaign's counters, and to the template of the order's coupon (the
/// coupon the compensation makes up for: the one a swap replaced, else
/// the order's), on `day`.
pub async fn count_compensation(
    conn: &mut AnyConnection,
    order_no: Option<&OrderNo>,
    campaign_id: Option<&CampaignId>,
    amount_cents: i64,
    day: i64,
) -> Result<(), sqlx::Error> {
    let vals = |param: &str| {
        COUNTER_COLUMNS
            .iter()
            .map(|c| {
                if *c == "compensation_cents" {
                    param.to_string()
                } else {
                    "0".to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let shard = random_shard();
    if let Some(order_no) = order_no {
        let sql = upsert_select(
            Subject::Template,
            "cp.template_id",
            "$2",
            "$3",
            &vals("$4"),
            "orders AS o JOIN coupons AS cp ON cp.id = COALESCE(o.replaced_coupon_id, o.coupon_id)",
            "o.order_no = $1 AND cp.template_id IS NOT NULL",
        );
        sqlx::query(&sql)
            .bind(order_no)
            .bind(day)
            .bind(shard)
            .bind(amount_cents)
            .execute(&mut *conn)
            .await?;
    }
    if let Some(campaign_id) = campaign_id {
        let sql = upsert_select(Subject::Campaign, "$1", "$2", "$3", &vals("$4"), "", "true");
        sqlx::query(&sql)
            .bind(campaign_id)
            .bind(day)
            .bind(shard)
            .bind(amount_cents)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Most templates one [`count_expired`] statement names: an expiry batch
/// is at most 500 coupons, so at most 500 templates.
pub const MAX_EXPIRED_TEMPLATES: usize = 500;

/// The counters of an expiry batch (`available` -> `expired`): one
/// statement for the whole batch, one pair of rows per template.
pub async fn count_expired<'a>(
    conn: &mut AnyConnection,
    template_ids: impl Iterator<Item = Option<&'a TemplateId>>,
    day: i64,
) -> Result<(), sqlx::Error> {
    let mut per: std::collections::BTreeMap<&str, i64> = std::collections::BTreeMap::new();
    for t in template_ids.flatten() {
        *per.entry(t.as_str()).or_default() += 1;
    }
    let per: Vec<(&str, i64)> = per.into_iter().collect();
    // One expiry's delta, each column scaled by the template's count `$n`.
    let (one, _) = template_delta(Some(CouponStatus::Available), CouponStatus::Expired);
    let scaled = |n: usize| {
        one.as_array()
            .iter()
            .map(|v| match v {
                0 => "0".to_string(),
                1 => format!("${n}"),
                v => format!("{v} * ${n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    for chunk in per.chunks(MAX_EXPIRED_TEMPLATES) {
        let tuples: Vec<String> = (0..chunk.len())
            .map(|i| {
                let (t, n) = (3 + 2 * i, 4 + 2 * i);
                format!("(${t}, $1, $2, {})", scaled(n))
            })
            .collect();
        let sql = format!(
            "INSERT INTO {} (template_id, day, shard, {}) VALUES {}",
            Subject::Template.delta_table(),
            COUNTER_COLUMNS.join(", "),
            tuples.join(", ")
        );
        let mut q = sqlx::query(&sql).bind(day).bind(random_shard());
        for (t, n) in chunk {
            q = q.bind(*t).bind(*n);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// Most deltas one [`fold`] transaction takes.
pub const FOLD_BATCH: i64 = 5000;

/// Most counter rows one statement of [`fold`] upserts.
const FOLD_ROWS_PER_STATEMENT: usize = 200;

/// Most ids one DELETE of [`fold`] names.
const FOLD_IDS_PER_DELETE: usize = 1000;

/// Folds at most `limit` (1 to [`FOLD_BATCH`]) of the oldest deltas of `s`
/// into its counters, in the caller's transaction: each delta is added to
/// its day row and to the all-days row (shard 0), then deleted. On
/// PostgreSQL the deltas are taken `FOR UPDATE SKIP LOCKED`, so two
/// instances fold different ones; the counter rows are upserted in key
/// order, so two folds never wait for each other in a cycle. Returns the
/// deltas folded.
pub async fn fold(conn: &mut AnyConnection, s: Subject, limit: i64) -> Result<usize, sqlx::Error> {
    let _timed = super::timing::call("counters.fold");
    let lock = match super::backend_of(conn) {
        super::Backend::Postgres => "FOR UPDATE SKIP LOCKED",
        super::Backend::Sqlite => "",
    };
    let sql = format!(
        "SELECT id, {}, day, {} FROM {} ORDER BY id LIMIT $1 {lock}",
        s.key(),
        COUNTER_COLUMNS.join(", "),
        s.delta_table()
    );
    let rows = sqlx::query(&sql)
        .bind(limit.clamp(1, FOLD_BATCH))
        .fetch_all(&mut *conn)
        .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let mut ids: Vec<i64> = Vec::with_capacity(rows.len());
    let mut sums: std::collections::BTreeMap<(String, i64), Counts> =
        std::collections::BTreeMap::new();
    for r in &rows {
        ids.push(r.try_get(0)?);
        let key: String = r.try_get(1)?;
        let day: i64 = r.try_get(2)?;
        let d = counts_of(r, 3)?;
        sums.entry((key.clone(), day)).or_default().add(&d);
        sums.entry((key, ALL_DAYS)).or_default().add(&d);
    }
    let sums: Vec<((String, i64), Counts)> = sums.into_iter().collect();
    for chunk in sums.chunks(FOLD_ROWS_PER_STATEMENT) {
        let tuples: Vec<String> = chunk
            .iter()
            .enumerate()
            .map(|(i, ((_, day), c))| {
                let vals = c
                    .as_array()
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                format!("(${}, {day}, 0, {vals})", i + 1)
            })
            .collect();
        let sql = format!(
            "{} VALUES {} {}",
            insert_head(s),
            tuples.join(", "),
            on_conflict(s)
        );
        let mut q = sqlx::query(&sql);
        for ((key, _), _) in chunk {
            q = q.bind(key);
        }
        q.execute(&mut *conn).await?;
    }
    for chunk in ids.chunks(FOLD_IDS_PER_DELETE) {
        let list = (1..=chunk.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("DELETE FROM {} WHERE id IN ({list})", s.delta_table());
        let mut q = sqlx::query(&sql);
        for id in chunk {
            q = q.bind(*id);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(ids.len())
}

/// How many deltas of `s` wait for the fold (for the metrics and tests).
pub async fn pending(conn: &mut AnyConnection, s: Subject) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {}", s.delta_table()))
        .fetch_one(conn)
        .await
}

fn sums() -> String {
    COUNTER_COLUMNS
        .iter()
        .map(|c| format!("CAST(COALESCE(SUM({c}), 0) AS BIGINT)"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn counts_of(row: &sqlx::any::AnyRow, first: usize) -> Result<Counts, sqlx::Error> {
    let mut a = [0i64; COUNTER_COLUMNS.len()];
    for (i, v) in a.iter_mut().enumerate() {
        *v = row.try_get(first + i)?;
    }
    Ok(Counts::from_array(a))
}

/// The counter rows and the unfolded deltas of `s` matching `cond` (the
/// same condition on both; `$n` parameters allowed), as one relation with
/// the key, the day and the counter columns: read in one statement, so a
/// fold committing meanwhile is seen either before or after, never half.
fn with_deltas(s: Subject, cond: &str) -> String {
    let cols = COUNTER_COLUMNS.join(", ");
    format!(
        "(SELECT {key}, day, {cols} FROM {table} WHERE {cond} \
          UNION ALL SELECT {key}, day, {cols} FROM {deltas} WHERE {cond}) AS counted",
        key = s.key(),
        table = s.table(),
        deltas = s.delta_table(),
    )
}

/// The day rows of `key` from `from_day` through `to_day` (shards and
/// unfolded deltas summed), in day order; days without a change have no
/// row.
pub async fn days(
    conn: &mut AnyConnection,
    s: Subject,
    key: &str,
    from_day: i64,
    to_day: i64,
) -> Result<Vec<(i64, Counts)>, sqlx::Error> {
    let rel = with_deltas(s, &format!("{} = $1 AND day >= $2 AND day <= $3", s.key()));
    let sql = format!(
        "SELECT day, {} FROM {rel} GROUP BY day ORDER BY day",
        sums()
    );
    let rows = sqlx::query(&sql)
        .bind(key)
        .bind(from_day.max(0))
        .bind(to_day)
        .fetch_all(conn)
        .await?;
    rows.iter()
        .map(|r| Ok((r.try_get::<i64, _>(0)?, counts_of(r, 1)?)))
        .collect()
}

/// The all-days counters of `key` (the all-days rows' shards and every
/// unfolded delta summed): all-time flows and the stored status counts.
pub async fn all_days(
    conn: &mut AnyConnection,
    s: Subject,
    key: &str,
) -> Result<Counts, sqlx::Error> {
    let cols = COUNTER_COLUMNS.join(", ");
    let sql = format!(
        "SELECT {} FROM (SELECT {cols} FROM {} WHERE {key} = $1 AND day = {ALL_DAYS} \
           UNION ALL SELECT {cols} FROM {} WHERE {key} = $1) AS counted",
        sums(),
        s.table(),
        s.delta_table(),
        key = s.key(),
    );
    let row = sqlx::query(&sql).bind(key).fetch_one(conn).await?;
    counts_of(&row, 0)
}

/// The all-days counters of several templates (at most 200 ids), as
/// [`all_days`] reads them.
pub async fn all_days_of_templates(
    conn: &mut AnyConnection,
    ids: &[&TemplateId],
) -> Result<Vec<(String, Counts)>, sqlx::Error> {
    let ids = &ids[..ids.len().min(200)];
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let list = (0..ids.len())
        .map(|i| format!("${}", i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    let cols = COUNTER_COLUMNS.join(", ");
    let sql = format!(
        "SELECT template_id, {} FROM (
             SELECT template_id, {cols} FROM template_counts WHERE template_id IN ({list}) AND day = {ALL_DAYS}
             UNION ALL SELECT template_id, {cols} FROM template_count_deltas WHERE template_id IN ({list})
         ) AS counted GROUP BY template_id",
        sums()
    );
    let mut q = sqlx::query(&sql);
    for id in ids {
        q = q.bind(*id);
    }
    let rows = q.fetch_all(conn).await?;
    rows.iter()
        .map(|r| Ok((r.try_get::<String, _>(0)?, counts_of(r, 1)?)))
        .collect()
}

/// Coupons of a template stored `available` but past their end (they read
/// `expired`; the expiry drain has not written them yet): one range of
/// `coupons_template_status_ends_idx`.
pub async fn overdue(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    now_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM coupons WHERE template_id = $1 AND status = 'available' AND ends_at <= $2",
    )
    .bind(template_id)
    .bind(now_ms)
    .fetch_one(conn)
    .await
}

/// A recount of one template from the coupons (and the archive): stored
/// status counts and all coupons ever issued, and what its used coupons
/// gave their orders (each coupon its own discount, [`discount_of`]). Reads at most `limit` coupons of each table;
/// `None` when the template has more (too big to recount here).
pub async fn recount_template(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    limit: i64,
) -> Result<Option<Counts>, sqlx::Error> {
    let mut c = Counts::default();
    for table in ["coupons", "coupons_archive"] {
        let sql = format!(
            "SELECT x.status, CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM(CASE WHEN x.status = 'used' THEN {discount} ELSE 0 END), 0) AS BIGINT)
             FROM (SELECT id, status, order_no FROM {table} WHERE template_id = $1 LIMIT $2) AS x
             GROUP BY x.status",
            discount = discount_of("x.order_no", "x.id")
        );
        let rows = sqlx::query(&sql)
            .bind(template_id)
            .bind(limit + 1)
            .fetch_all(&mut *conn)
            .await?;
        let mut seen = 0i64;
        for r in &rows {
            let status: String = r.try_get(0)?;
            let n: i64 = r.try_get(1)?;
            let discount: i64 = r.try_get(2)?;
            seen += n;
            c.claimed += n;
            c.discount_cents += discount;
            match status.as_str() {
                "available" => c.status_available += n,
                "locked" => c.status_locked += n,
                "used" => c.status_used += n,
                "expired" => c.status_expired += n,
                "invalidated" => c.status_invalidated += n,
                _ => {}
            }
        }
        if seen > limit {
            return Ok(None);
        }
    }
    Ok(Some(c))
}
