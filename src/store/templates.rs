//! Templates, their stock shards and per-user claim counters.

use sqlx::AnyConnection;

use super::dynamic::{self, Sql};
use crate::domain::discount::DiscountKind;
use crate::domain::ids::{TemplateId, UserId};
use crate::domain::money::Cents;
use crate::domain::template::{ClaimStanding, TemplateStatus};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TemplateRow {
    pub id: TemplateId,
    pub name: String,
    pub kind: DiscountKind,
    pub value_cents: Option<Cents>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<Cents>,
    pub min_order_cents: Cents,
    /// JSON array of strings.
    pub categories: String,
    pub valid_from: Option<i64>,
    pub valid_until: Option<i64>,
    pub valid_seconds: Option<i64>,
    pub total_stock: Option<i64>,
    pub per_user_limit: Option<i64>,
    pub status: TemplateStatus,
    pub created_at: i64,
    /// Since when claiming is paused (status `disabled`).
    pub paused_at: Option<i64>,
    /// Claiming ends at this instant, before the coupons' own end.
    pub claim_ends_at: Option<i64>,
    /// Claimed coupons end up to this many seconds early (migration 0027);
    /// 0: no spreading.
    pub expiry_spread_seconds: i64,
    /// JSON: SKUs, shop and partial-refund rule (migration 0034;
    /// `views::line_terms_json`).
    pub line_terms: String,
    /// The money its coupons may give (migration 0037); `None`: no budget.
    pub budget_cents: Option<Cents>,
    /// What the budget's shards have left: read by [`get`] and the list
    /// page ([`BUDGET_LEFT`]), `None` elsewhere and without a budget.
    #[sqlx(default)]
    pub budget_left_cents: Option<i64>,
}

const COLUMNS: &str = "id, name, kind, value_cents, percent_off, max_discount_cents, min_order_cents, categories, \
     valid_from, valid_until, valid_seconds, total_stock, per_user_limit, status, created_at, paused_at, claim_ends_at, expiry_spread_seconds, line_terms, budget_cents";

/// The select-list item of what a template's budget shards have left.
const BUDGET_LEFT: &str = "(SELECT CAST(SUM(bs.left_cents) AS BIGINT) FROM template_budget_shards AS bs \
     WHERE bs.template_id = templates.id) AS budget_left_cents";

/// Inserts the template and its stock shards (`capacities[i]` is shard i's
/// capacity, `None` for unlimited).
pub async fn insert(
    conn: &mut AnyConnection,
    t: &TemplateRow,
    capacities: &[Option<i64>],
) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "INSERT INTO templates ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"
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
    .bind(t.paused_at)
    .bind(t.claim_ends_at)
    .bind(t.expiry_spread_seconds)
    .bind(&t.line_terms)
    .bind(t.budget_cents)
    .execute(&mut *conn)
    .await?;
    if let Some(b) = t.budget_cents {
        super::budgets::insert_shards(conn, &t.id, b.get()).await?;
    }
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

pub async fn get(
    conn: &mut AnyConnection,
    id: &TemplateId,
) -> Result<Option<TemplateRow>, sqlx::Error> {
    let _timed = super::timing::call("templates.get");
    sqlx::query_as(&format!(
        "SELECT {COLUMNS}, {BUDGET_LEFT} FROM templates WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A template with the number of its stock shards, in one statement: what
/// a claim reads before taking stock.
pub async fn get_for_claim(
    conn: &mut AnyConnection,
    id: &TemplateId,
) -> Result<Option<(TemplateRow, i64, String)>, sqlx::Error> {
    let _timed = super::timing::call("templates.get_for_claim");
    #[derive(sqlx::FromRow)]
    struct WithShards {
        #[sqlx(flatten)]
        template: TemplateRow,
        shard_count: i64,
        terms: String,
    }
    let terms = terms_fingerprint(conn);
    let row: Option<WithShards> = sqlx::query_as(&format!(
        "SELECT {COLUMNS}, (SELECT CAST(COUNT(*) AS BIGINT) FROM template_stock_shards s
                            WHERE s.template_id = templates.id) AS shard_count,
                {terms} AS terms
         FROM templates WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.template, r.shard_count, r.terms)))
}

/// An expression over a `templates` row (named `templates`) that changes
/// whenever a term a claimed coupon copies changes (kind, amounts,
/// threshold, categories, validity, per-user limit, expiry spread), but
/// not with its name, stock or claim end. PostgreSQL only: there a claim
/// that read a template just before a full edit committed could take
/// stock after it (each statement sees the newest commits), so the claim
/// compares this value read with the template and read again with its
/// unit of stock ([`take_from_shard`]). SQLite runs one write transaction
/// at a time, so a claim never straddles an edit: an empty text.
fn terms_fingerprint(conn: &AnyConnection) -> &'static str {
    match super::backend_of(conn) {
        super::Backend::Postgres => {
            "md5(row(templates.kind, templates.value_cents, templates.percent_off, \
             templates.max_discount_cents, templates.min_order_cents, templates.categories, \
             templates.valid_from, templates.valid_until, templates.valid_seconds, \
             templates.per_user_limit, templates.expiry_spread_seconds, templates.line_terms)::text)"
        }
        super::Backend::Sqlite => "''",
    }
}

/// Coupons claimed from a template so far: the sum over its shards.
pub async fn claimed(conn: &mut AnyConnection, id: &TemplateId) -> Result<i64, sqlx::Error> {
    let n: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(claimed), 0) AS BIGINT) FROM template_stock_shards WHERE template_id = $1",
    )
    .bind(id)
    .fetch_one(conn)
    .await?;
    Ok(n)
}

/// Number of stock shards of a template.
pub async fn shard_count(conn: &mut AnyConnection, id: &TemplateId) -> Result<i64, sqlx::Error> {
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
    template_id: &TemplateId,
    user_id: &UserId,
    limit: i64,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("templates.take_user_quota");
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

/// Gives back one claim of `user_id` taken by [`take_user_quota`] in the
/// same transaction (a bulk issue whose stock ran out after the quota was
/// taken goes on with its next line).
pub async fn give_back_user_quota(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    user_id: &UserId,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("templates.give_back_user_quota");
    sqlx::query(
        "UPDATE template_user_claims SET claimed = claimed - 1
         WHERE template_id = $1 AND user_id = $2 AND claimed > 0",
    )
    .bind(template_id)
    .bind(user_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes one unit of stock from one shard: a conditional increment that
/// fails when the shard is full. Returns whether it took one.
pub async fn take_from_shard(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    shard: i64,
) -> Result<Option<String>, sqlx::Error> {
    let _timed = super::timing::call("templates.take_from_shard");
    let terms = terms_fingerprint(conn);
    sqlx::query_scalar(&format!(
        "UPDATE template_stock_shards SET claimed = claimed + 1
         WHERE template_id = $1 AND shard = $2 AND (capacity IS NULL OR claimed < capacity)
         RETURNING (SELECT {terms} FROM templates WHERE templates.id = $1)"
    ))
    .bind(template_id)
    .bind(shard)
    .fetch_optional(conn)
    .await
}

/// PostgreSQL only: takes one unit of stock from the first shard at or
/// after `start` (then wrapping round) that has stock left and that no
/// other transaction holds, without waiting for any (`FOR UPDATE SKIP
/// LOCKED`); the increment stays conditional on the capacity. `None`
/// when every shard with stock left is held by another transaction (or
/// none has stock): the caller then waits its turn shard by shard with
/// [`take_from_shard`], which also tells "sold out" apart. On SQLite
/// (one writer, nothing is ever held by another) it is `None` at once.
pub async fn take_from_free_shard(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    start: i64,
) -> Result<Option<String>, sqlx::Error> {
    let _timed = super::timing::call("templates.take_from_free_shard");
    if super::backend_of(conn) != super::Backend::Postgres {
        return Ok(None);
    }
    let terms = terms_fingerprint(conn);
    sqlx::query_scalar(&format!(
        "UPDATE template_stock_shards SET claimed = claimed + 1
         WHERE template_id = $1 AND (capacity IS NULL OR claimed < capacity)
           AND shard = (SELECT shard FROM template_stock_shards
                        WHERE template_id = $1 AND (capacity IS NULL OR claimed < capacity)
                        ORDER BY shard < $2, shard
                        LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING (SELECT {terms} FROM templates WHERE templates.id = $1)"
    ))
    .bind(template_id)
    .bind(start)
    .fetch_optional(conn)
    .await
}

/// Pauses (`to` = paused) or resumes (`to` = active) claiming with one
/// conditional UPDATE on the status it must have now. `Ok(false)`: it
/// already was in `to` (or the template is gone).
pub async fn set_claiming(
    conn: &mut AnyConnection,
    id: &TemplateId,
    from: TemplateStatus,
    to: TemplateStatus,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let paused_at = (to == TemplateStatus::Paused).then_some(now_ms);
    let r = sqlx::query(
        "UPDATE templates SET status = $3, paused_at = $4 WHERE id = $1 AND status = $2",
    )
    .bind(id)
    .bind(from.as_str())
    .bind(to.as_str())
    .bind(paused_at)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Filters and position of one page of templates.
#[derive(Debug, Clone, Copy)]
pub struct TemplatePageQuery<'a> {
    /// Rows strictly before this `(created_at, id)`: the previous page's
    /// last row.
    pub before: Option<(i64, &'a str)>,
    pub standing: Option<ClaimStanding>,
    pub kind: Option<DiscountKind>,
    /// A LIKE pattern with `\` as its escape character.
    pub name_like: Option<&'a str>,
    /// The moment the standing is judged at.
    pub now_ms: i64,
    pub limit: i64,
}

/// The statement of one page: newest first, keyset on `(created_at, id)`;
/// a kind or a stored status narrows it to `templates_kind_created_idx` /
/// `templates_status_created_idx` (migration 0022), read backwards in the
/// page's order, else `templates_created_idx`. The standing is the rule of
/// [`crate::domain::template::claim_standing`] in SQL.
fn page_sql(q: &TemplatePageQuery<'_>) -> Sql {
    let mut sql = Sql::new(format!(
        "SELECT {COLUMNS}, {BUDGET_LEFT} FROM templates WHERE 1 = 1"
    ));
    if let Some(kind) = q.kind {
        sql.push_bind(" AND kind = ?", kind.as_str());
    }
    // Claiming ended: early, or the coupons' hard end passed.
    const ENDED: &str = "((claim_ends_at IS NOT NULL AND claim_ends_at <= ?) OR (valid_until IS NOT NULL AND valid_until <= ?))";
    match q.standing {
        None => {}
        Some(ClaimStanding::Paused) => {
            sql.push_bind(" AND status = ?", TemplateStatus::Paused.as_str());
        }
        Some(standing) => {
            sql.push_bind(" AND status = ?", TemplateStatus::Active.as_str());
            match standing {
                ClaimStanding::Ended => sql.push_bind(&format!(" AND {ENDED}"), q.now_ms),
                ClaimStanding::NotStarted => sql.push_bind(
                    &format!(" AND NOT {ENDED} AND valid_from IS NOT NULL AND valid_from > ?"),
                    q.now_ms,
                ),
                _ => sql.push_bind(
                    &format!(" AND NOT {ENDED} AND (valid_from IS NULL OR valid_from <= ?)"),
                    q.now_ms,
                ),
            };
        }
    }
    if let Some(pattern) = q.name_like {
        sql.push_bind(" AND name LIKE ? ESCAPE '\\'", pattern);
    }
    if let Some((at, id)) = q.before {
        // `created_at <= ?` bounds the index range; the OR only filters the
        // rows of that one `created_at` value.
        sql.push_bind(" AND created_at <= ?", at)
            .push_bind(" AND (created_at < ?", at)
            .push_bind(" OR id < ?)", id);
    }
    sql.push_bind(" ORDER BY created_at DESC, id DESC LIMIT ?", q.limit);
    sql
}

/// One page of templates (see [`page_sql`]).
pub async fn page(
    conn: &mut AnyConnection,
    q: &TemplatePageQuery<'_>,
) -> Result<Vec<TemplateRow>, sqlx::Error> {
    dynamic::fetch_all(conn, &page_sql(q)).await
}

/// The plan the database chooses for exactly the statement [`page`] runs,
/// for the index tests.
pub async fn explain_page(
    conn: &mut AnyConnection,
    q: &TemplatePageQuery<'_>,
) -> Result<Vec<String>, sqlx::Error> {
    dynamic::explain(conn, &page_sql(q)).await
}

/// A template's coupons per stored status, and how many `available` ones
/// are past their end at `now_ms` (they read `expired`): the stored
/// counts from the report counters' all-days row (migration 0026, kept by
/// the writes themselves; archived coupons stay counted), the past-end
/// ones from one range of the `(template_id, status, ends_at, id)` index.
pub async fn status_counts(
    conn: &mut AnyConnection,
    id: &TemplateId,
    now_ms: i64,
) -> Result<Vec<(String, i64, i64)>, sqlx::Error> {
    let all = super::counters::all_days(&mut *conn, super::counters::Subject::Template, id).await?;
    let overdue = super::counters::overdue(conn, id, now_ms).await?;
    Ok(status_rows(&all, overdue))
}

/// `(stored status, count, of which past their end)` rows of an all-days
/// counter row; at most the stored `available` ones are past their end.
fn status_rows(all: &crate::domain::report::Counts, overdue: i64) -> Vec<(String, i64, i64)> {
    vec![
        (
            "available".to_string(),
            all.status_available,
            overdue.clamp(0, all.status_available.max(0)),
        ),
        ("locked".to_string(), all.status_locked, 0),
        ("used".to_string(), all.status_used, 0),
        ("expired".to_string(), all.status_expired, 0),
        ("invalidated".to_string(), all.status_invalidated, 0),
    ]
}

/// Renames a template and sets its claim end (`None`: unchanged), only
/// while its total stock is still `expected_stock` (so a concurrent stock
/// change is not overwritten). `Ok(false)`: it changed meanwhile.
pub async fn update_safe_fields(
    conn: &mut AnyConnection,
    id: &TemplateId,
    expected_stock: Option<i64>,
    name: &str,
    total_stock: Option<i64>,
    claim_ends_at: Option<i64>,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE templates SET name = $2, total_stock = $3, claim_ends_at = $4
         WHERE id = $1 AND ((total_stock IS NULL AND $5 IS NULL) OR total_stock = $5)",
    )
    .bind(id)
    .bind(name)
    .bind(total_stock)
    .bind(claim_ends_at)
    .bind(expected_stock)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Raises the capacity of a template's limited shards by `delta` in all,
/// spread evenly (the first shards take the remainder), so new stock is
/// claimed as concurrently as the old. Bounded by the shard count (16).
pub async fn grow_stock(
    conn: &mut AnyConnection,
    id: &TemplateId,
    delta: i64,
) -> Result<(), sqlx::Error> {
    let shards: Vec<i64> = sqlx::query_scalar(
        "SELECT shard FROM template_stock_shards WHERE template_id = $1 AND capacity IS NOT NULL ORDER BY shard",
    )
    .bind(id)
    .fetch_all(&mut *conn)
    .await?;
    let n = i64::try_from(shards.len()).unwrap_or(i64::MAX).max(1);
    for (i, shard) in shards.iter().enumerate() {
        let i = i64::try_from(i).unwrap_or(i64::MAX);
        let add = delta / n + i64::from(i < delta % n);
        if add == 0 {
            continue;
        }
        sqlx::query(
            "UPDATE template_stock_shards SET capacity = capacity + $3 WHERE template_id = $1 AND shard = $2",
        )
        .bind(id)
        .bind(*shard)
        .bind(add)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// [`claimed`] and [`status_counts`] for a page of templates at once: three
/// grouped statements over `ids` (at most a page), not three per template.
/// Returns `(claimed per id, (id, stored status, count, past end) rows)`.
pub async fn page_figures(
    conn: &mut AnyConnection,
    ids: &[&TemplateId],
    now_ms: i64,
) -> Result<(Vec<(TemplateId, i64)>, Vec<(TemplateId, String, i64, i64)>), sqlx::Error> {
    if ids.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    // $1 is now; the ids follow.
    let list = (2..ids.len() + 2)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let claimed_sql = format!(
        "SELECT template_id, CAST(COALESCE(SUM(claimed), 0) AS BIGINT) FROM template_stock_shards
         WHERE $1 = $1 AND template_id IN ({list}) GROUP BY template_id"
    );
    // Past their end but stored `available`: one index range per template.
    let overdue_sql = format!(
        "SELECT template_id, CAST(COUNT(*) AS BIGINT) FROM coupons
         WHERE template_id IN ({list}) AND status = 'available' AND ends_at <= $1 GROUP BY template_id"
    );
    let mut q = sqlx::query_as::<_, (TemplateId, i64)>(&claimed_sql).bind(now_ms);
    for id in ids {
        q = q.bind(*id);
    }
    let claimed = q.fetch_all(&mut *conn).await?;
    let mut q = sqlx::query_as::<_, (String, i64)>(&overdue_sql).bind(now_ms);
    for id in ids {
        q = q.bind(*id);
    }
    let overdue: std::collections::HashMap<String, i64> =
        q.fetch_all(&mut *conn).await?.into_iter().collect();
    let stored = super::counters::all_days_of_templates(conn, ids).await?;
    let counts = stored
        .iter()
        .flat_map(|(id, all)| {
            status_rows(all, overdue.get(id.as_str()).copied().unwrap_or(0))
                .into_iter()
                .map(|(st, n, past)| (TemplateId::from_wire(id.clone()), st, n, past))
        })
        .collect();
    Ok((claimed, counts))
}

/// Replaces every term of a template (what its coupons will offer, how
/// long they live, its stock and limits, its name), only while none of
/// its stock has been claimed: one conditional UPDATE whose row count
/// decides. `Ok(false)`: a coupon was claimed meanwhile (or it is gone),
/// and nothing changed.
pub async fn update_terms_unclaimed(
    conn: &mut AnyConnection,
    t: &TemplateRow,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE templates SET name = $2, kind = $3, value_cents = $4, percent_off = $5,
             max_discount_cents = $6, min_order_cents = $7, categories = $8, valid_from = $9,
             valid_until = $10, valid_seconds = $11, total_stock = $12, per_user_limit = $13,
             claim_ends_at = $14, expiry_spread_seconds = $15, line_terms = $16,
             budget_cents = $17
         WHERE id = $1 AND NOT EXISTS (
             SELECT 1 FROM template_stock_shards s WHERE s.template_id = $1 AND s.claimed > 0)",
    )
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
    .bind(t.claim_ends_at)
    .bind(t.expiry_spread_seconds)
    .bind(&t.line_terms)
    .bind(t.budget_cents)
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Ok(false);
    }
    super::budgets::replace_shards(conn, &t.id, t.budget_cents.map(Cents::get)).await?;
    Ok(true)
}

/// Gives an unclaimed template new stock shards (`capacities` as for
/// [`insert`]): deletes its shards, only those with nothing claimed, and
/// inserts the new ones. `Ok(false)` when some shard had been claimed
/// from (fewer than `shards` rows deleted): the caller rolls back.
pub async fn replace_unclaimed_shards(
    conn: &mut AnyConnection,
    id: &TemplateId,
    shards: i64,
    capacities: &[Option<i64>],
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query("DELETE FROM template_stock_shards WHERE template_id = $1 AND claimed = 0")
        .bind(id)
        .execute(&mut *conn)
        .await?;
    if i64::try_from(r.rows_affected()).ok() != Some(shards) {
        return Ok(false);
    }
    for (i, cap) in capacities.iter().enumerate() {
        sqlx::query(
            "INSERT INTO template_stock_shards (template_id, shard, capacity, claimed) VALUES ($1, $2, $3, 0)",
        )
        .bind(id)
        .bind(i as i64)
        .bind(*cap)
        .execute(&mut *conn)
        .await?;
    }
    Ok(true)
}
