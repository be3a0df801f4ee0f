//! Template budgets (预算, migration 0037): the money a template's coupons
//! may give, kept in [`BUDGET_SHARDS`] rows of what is left
//! (`template_budget_shards`) so that concurrent orders on one hot template
//! take from different rows, and one reservation row per coupon locked or
//! used on an order (`budget_reservations`), so that a release gives back
//! exactly what was taken.
//!
//! Taken when a coupon is locked (or used) for an order, given back when
//! it is released, returned, expired off the order or invalidated: both by
//! [`super::coupons::transition`], inside the transaction of the change,
//! so every path that moves a coupon keeps the budget right. Never over
//! budget: a shard's `left_cents` only falls by a conditional UPDATE that
//! keeps it at zero or more (and a CHECK says so).

use rand::Rng;
use sqlx::AnyConnection;

use super::{Backend, backend_of};
use crate::domain::ids::{CouponId, OrderNo, TemplateId};

/// Rows a budget is kept in.
pub const BUDGET_SHARDS: i64 = 8;

/// Writes a new budget's shards: `budget_cents` split evenly, the first
/// shards taking the cents left over.
pub async fn insert_shards(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    budget_cents: i64,
) -> Result<(), sqlx::Error> {
    let (each, extra) = (budget_cents / BUDGET_SHARDS, budget_cents % BUDGET_SHARDS);
    for shard in 0..BUDGET_SHARDS {
        sqlx::query(
            "INSERT INTO template_budget_shards (template_id, shard, left_cents) VALUES ($1, $2, $3)",
        )
        .bind(template_id)
        .bind(shard)
        .bind(each + i64::from(shard < extra))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Replaces a budget whose template has no reservation yet (an edit
/// before any claim).
pub async fn replace_shards(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    budget_cents: Option<i64>,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM template_budget_shards WHERE template_id = $1")
        .bind(template_id)
        .execute(&mut *conn)
        .await?;
    match budget_cents {
        Some(b) => insert_shards(conn, template_id, b).await,
        None => Ok(()),
    }
}

/// Reserves what coupon `coupon_id` (of `template_id`) gives order
/// `order_no` (as the order records it: `counters::discount_of`) from the
/// template's budget. `Ok(true)` also when the template has no budget;
/// `Ok(false)`: what is left is not enough (the caller refuses, and its
/// transaction gives back any part taken).
pub async fn reserve(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
    template_id: &TemplateId,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("budgets.reserve");
    let sql = format!(
        "SELECT budget_cents, CAST({} AS BIGINT) FROM templates WHERE id = $1",
        super::counters::discount_of("$2", "$3")
    );
    let row: Option<(Option<i64>, i64)> = sqlx::query_as(&sql)
        .bind(template_id)
        .bind(order_no)
        .bind(coupon_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some((Some(_), amount)) = row else {
        return Ok(true);
    };
    let amount = amount.max(0);
    if amount > 0 && !take(conn, template_id, amount).await? {
        return Ok(false);
    }
    sqlx::query(
        "INSERT INTO budget_reservations (order_no, coupon_id, template_id, cents, at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(order_no)
    .bind(coupon_id)
    .bind(template_id)
    .bind(amount)
    .bind(now_ms)
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

/// Takes `amount` from a template's shards: first whole from one shard (on
/// PostgreSQL one nobody holds, without waiting, starting at a random one;
/// then waiting, shard by shard), else in parts across the shards in a
/// fixed order (so two takes never hold shards in opposite orders). At
/// most `3 × BUDGET_SHARDS + 1` statements.
async fn take(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    amount: i64,
) -> Result<bool, sqlx::Error> {
    let start = rand::rng().random_range(0..BUDGET_SHARDS);
    if backend_of(conn) == Backend::Postgres {
        let free: Option<i64> = sqlx::query_scalar(
            "UPDATE template_budget_shards SET left_cents = left_cents - $2
             WHERE template_id = $1 AND shard = (SELECT shard FROM template_budget_shards
                 WHERE template_id = $1 AND left_cents >= $2
                 ORDER BY shard < $3, shard LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING shard",
        )
        .bind(template_id)
        .bind(amount)
        .bind(start)
        .fetch_optional(&mut *conn)
        .await?;
        if free.is_some() {
            return Ok(true);
        }
    }
    for i in 0..BUDGET_SHARDS {
        let done = sqlx::query(
            "UPDATE template_budget_shards SET left_cents = left_cents - $3
             WHERE template_id = $1 AND shard = $2 AND left_cents >= $3",
        )
        .bind(template_id)
        .bind((start + i) % BUDGET_SHARDS)
        .bind(amount)
        .execute(&mut *conn)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(true);
        }
    }
    // In parts: what each shard has, in shard order.
    let mut need = amount;
    for shard in 0..BUDGET_SHARDS {
        if need == 0 {
            break;
        }
        let lock = if backend_of(conn) == Backend::Postgres {
            " FOR UPDATE"
        } else {
            ""
        };
        let left: Option<i64> = sqlx::query_scalar(&format!(
            "SELECT left_cents FROM template_budget_shards WHERE template_id = $1 AND shard = $2{lock}"
        ))
        .bind(template_id)
        .bind(shard)
        .fetch_optional(&mut *conn)
        .await?;
        let part = left.unwrap_or(0).min(need);
        if part <= 0 {
            continue;
        }
        let done = sqlx::query(
            "UPDATE template_budget_shards SET left_cents = left_cents - $3
             WHERE template_id = $1 AND shard = $2 AND left_cents >= $3",
        )
        .bind(template_id)
        .bind(shard)
        .bind(part)
        .execute(&mut *conn)
        .await?;
        if done.rows_affected() == 1 {
            need -= part;
        }
    }
    Ok(need == 0)
}

/// Changes a template's budget from `old` to `new` cents (both set): the
/// template row by a conditional update on `old`, and its shards by the
/// difference (more: added to one shard; less: taken as an order takes,
/// never below zero). False when the budget changed meanwhile or the
/// shards have less left than the cut (what the coupons hold or gave
/// would pass the new budget); the caller's transaction then rolls back.
pub async fn change_budget(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    old: i64,
    new: i64,
) -> Result<bool, sqlx::Error> {
    let done =
        sqlx::query("UPDATE templates SET budget_cents = $3 WHERE id = $1 AND budget_cents = $2")
            .bind(template_id)
            .bind(old)
            .bind(new)
            .execute(&mut *conn)
            .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    if new > old {
        add_to_a_shard(conn, template_id, new - old).await?;
        return Ok(true);
    }
    if new < old {
        return take(conn, template_id, old - new).await;
    }
    Ok(true)
}

/// Gives back what coupon `coupon_id` reserved for order `order_no`, if
/// anything: the reservation row goes, its cents return to a shard.
pub async fn give_back(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
    coupon_id: &CouponId,
) -> Result<(), sqlx::Error> {
    let _timed = super::timing::call("budgets.give_back");
    let gone: Option<(TemplateId, i64)> = sqlx::query_as(
        "DELETE FROM budget_reservations WHERE order_no = $1 AND coupon_id = $2
         RETURNING template_id, cents",
    )
    .bind(order_no)
    .bind(coupon_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((template_id, cents)) = gone else {
        return Ok(());
    };
    if cents > 0 {
        add_to_a_shard(conn, &template_id, cents).await?;
    }
    Ok(())
}

/// Adds `cents` to one of a template's shards, picked at random so that
/// concurrent give-backs spread over the rows.
async fn add_to_a_shard(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    cents: i64,
) -> Result<(), sqlx::Error> {
    let shard = rand::rng().random_range(0..BUDGET_SHARDS);
    sqlx::query(
        "UPDATE template_budget_shards SET left_cents = left_cents + $3
         WHERE template_id = $1 AND shard = $2",
    )
    .bind(template_id)
    .bind(shard)
    .bind(cents)
    .execute(conn)
    .await?;
    Ok(())
}

/// A template's budget use: what is reserved (the budget less what its
/// shards have left) and, for reconciliation, what its reservation rows
/// add up to. `None`: the template has no budget.
pub async fn used_of(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
) -> Result<Option<(i64, i64)>, sqlx::Error> {
    let row: Option<(Option<i64>, i64, i64)> = sqlx::query_as(
        "SELECT t.budget_cents,
                CAST(COALESCE((SELECT SUM(s.left_cents) FROM template_budget_shards AS s
                               WHERE s.template_id = t.id), 0) AS BIGINT),
                CAST(COALESCE((SELECT SUM(r.cents) FROM budget_reservations AS r
                               WHERE r.template_id = t.id), 0) AS BIGINT)
         FROM templates AS t WHERE t.id = $1",
    )
    .bind(template_id)
    .fetch_optional(conn)
    .await?;
    Ok(match row {
        Some((Some(budget), left, reserved)) => Some((budget - left, reserved)),
        _ => None,
    })
}

/// What the budgets of `template_ids` have left, for those with a budget.
pub async fn left_of_templates(
    conn: &mut AnyConnection,
    template_ids: &[TemplateId],
) -> Result<Vec<(TemplateId, i64)>, sqlx::Error> {
    if template_ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks: Vec<String> = (1..=template_ids.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "SELECT template_id, CAST(SUM(left_cents) AS BIGINT) FROM template_budget_shards
         WHERE template_id IN ({}) GROUP BY template_id",
        marks.join(", ")
    );
    let mut q = sqlx::query_as(&sql);
    for id in template_ids {
        q = q.bind(id);
    }
    q.fetch_all(conn).await
}

/// Templates whose budget use reached `percent` % (most used first, at
/// most `limit`): `(id, name, budget, used)`.
pub async fn past_share(
    conn: &mut AnyConnection,
    percent: i64,
    limit: i64,
) -> Result<Vec<(TemplateId, String, i64, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT t.id, t.name, t.budget_cents, CAST(t.budget_cents - SUM(s.left_cents) AS BIGINT) AS used
         FROM templates AS t JOIN template_budget_shards AS s ON s.template_id = t.id
         WHERE t.budget_cents IS NOT NULL
         GROUP BY t.id, t.name, t.budget_cents
         HAVING (t.budget_cents - SUM(s.left_cents)) * 100 >= t.budget_cents * $1
         ORDER BY CAST(t.budget_cents - SUM(s.left_cents) AS BIGINT) * 1.0 / t.budget_cents DESC, t.id
         LIMIT $2",
    )
    .bind(percent)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Templates with a budget, at most `limit` (reconciliation's scan).
pub async fn templates_with_budget(
    conn: &mut AnyConnection,
    limit: i64,
) -> Result<Vec<TemplateId>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT id FROM templates WHERE budget_cents IS NOT NULL ORDER BY id LIMIT $1",
    )
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// What the coupons of `template_id` locked or used on orders (live and
/// archived) take off those orders, as the orders record it; `None` when
/// they are more than `limit` in a table (too many to add up here).
pub async fn live_discounts(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    limit: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let mut sum = 0i64;
    for table in ["coupons", "coupons_archive"] {
        let sql = format!(
            "SELECT CAST(COUNT(*) AS BIGINT), CAST(COALESCE(SUM({discount}), 0) AS BIGINT)
             FROM (SELECT id, order_no FROM {table}
                   WHERE template_id = $1 AND status IN ('locked', 'used') AND order_no IS NOT NULL
                   LIMIT $2) AS x",
            discount = super::counters::discount_of("x.order_no", "x.id")
        );
        let (n, cents): (i64, i64) = sqlx::query_as(&sql)
            .bind(template_id)
            .bind(limit + 1)
            .fetch_one(&mut *conn)
            .await?;
        if n > limit {
            return Ok(None);
        }
        sum += cents;
    }
    Ok(Some(sum))
}
