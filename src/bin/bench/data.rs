//! Filling a scratch database: templates created through the service, and
//! coupons written by set-based generated inserts (one statement for many
//! rows), then settled like a table written long ago.

use sqlx::Executor;

use couponkeeper::domain::ids::TemplateId;
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::service::{Ctx, Service};
use couponkeeper::store::Db;

use crate::{Result, Store};

/// Creates an active fixed-amount template with `stock` coupons, one per
/// user; returns its id.
pub(crate) async fn create_template(
    service: &Service,
    ctx: &Ctx,
    name: &str,
    stock: usize,
) -> Result<TemplateId> {
    let input = TemplateInput {
        name: Some(format!("bench {name}")),
        kind: Some("fixed".into()),
        value_cents: Some(500),
        min_order_cents: Some(0),
        valid_seconds: Some(7 * 24 * 3600),
        total_stock: Some(i64::try_from(stock)?),
        per_user_limit: Some(1),
        ..Default::default()
    };
    let view = service
        .create_template(ctx, None, input)
        .await?
        .fresh()
        .ok_or("create_template without an idempotency key answered a replay")?;
    Ok(view.id)
}

/// The columns of `coupons`, in the order the generated inserts give them.
const COUPON_COLUMNS: &str = "id, code, user_id, template_id, source, kind, value_cents, percent_off, \
     max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no, \
     locked_at, used_at, created_at, updated_at";

/// `INSERT INTO coupons ... SELECT` of one generated row per `i` from `$1`
/// to `$2`, with `$3` the template id: `inner` is a SELECT list over `i`
/// giving `user_id, status, starts_at, ends_at, order_no, locked_at, used_at,
/// created_at, updated_at`. Rows come from `generate_series` on PostgreSQL and from a
/// recursive CTE on SQLite. Ids carry the creation time like the service's
/// (so they are roughly insertion-ordered); codes are unique and scattered
/// (`i * 2654435761 mod 4294967311` is one-to-one below that prime; see
/// [`generated_code`]).
pub(crate) fn generated_insert(store: Store, inner: &str) -> String {
    let (id, code, rows) = match store {
        Store::Postgres => (
            "'cpn_' || lpad(to_hex(created_at), 12, '0') || lpad(to_hex(i), 16, '0')",
            "'B' || lpad(CAST(i * 2654435761 % 4294967311 AS TEXT), 10, '0')",
            "generate_series(CAST($1 AS BIGINT), CAST($2 AS BIGINT)) AS s(i)",
        ),
        Store::Sqlite => (
            "printf('cpn_%012x%016x', created_at, i)",
            "printf('B%010d', i * 2654435761 % 4294967311)",
            "s",
        ),
    };
    let insert = format!(
        "INSERT INTO coupons ({COUPON_COLUMNS})
         SELECT {id}, {code}, user_id, $3, 'claim', 'fixed',
                500, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), 0, '[]', status, starts_at,
                ends_at, order_no, locked_at, used_at, created_at, updated_at
         FROM (SELECT i, {inner} FROM {rows}) AS g"
    );
    match store {
        Store::Postgres => insert,
        Store::Sqlite => format!(
            "WITH RECURSIVE s(i) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT i + 1 FROM s WHERE i < $2)
             {insert}"
        ),
    }
}

/// The code [`generated_insert`] gives coupon number `i`.
pub(crate) fn generated_code(i: u64) -> String {
    format!("B{:010}", i.wrapping_mul(2_654_435_761) % 4_294_967_311)
}

/// Inserts `count` generated coupons numbered from `first`, with one
/// statement.
pub(crate) async fn insert_generated(
    db: &Db,
    store: Store,
    sql: &str,
    first: usize,
    count: usize,
    template_id: &TemplateId,
    time_ms: i64,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let from = i64::try_from(first)?;
    let to = from + i64::try_from(count)? - 1;
    let done = sqlx::query(sql)
        .bind(from)
        .bind(to)
        .bind(template_id)
        .bind(time_ms)
        .execute(db.pool())
        .await
        .map_err(|e| format!("inserting coupons on {}: {e}", store.name()))?;
    if done.rows_affected() != u64::try_from(count)? {
        return Err(format!(
            "inserted {} coupons, expected {count}",
            done.rows_affected()
        )
        .into());
    }
    Ok(())
}

/// Leaves the freshly written table as one written long ago would be:
/// PostgreSQL vacuumed, analysed and checkpointed, SQLite's WAL folded
/// into the database file.
pub(crate) async fn settle(db: &Db, store: Store) -> Result<()> {
    let mut conn = db.pool().acquire().await?;
    match store {
        Store::Postgres => {
            conn.execute("VACUUM (ANALYZE) coupons").await?;
            conn.execute("CHECKPOINT").await?;
        }
        Store::Sqlite => {
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").await?;
        }
    }
    Ok(())
}
