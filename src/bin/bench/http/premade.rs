//! The rows the order rows and their baselines work through, made before
//! the server starts: per set one template created through the service,
//! its coupons written by one generated `INSERT ... SELECT` (as `bench
//! console` fills its tables) and their orders by one `INSERT ... SELECT`
//! from those coupons. Rows are numbered `<prefix>0`, `<prefix>1`, …: row 0
//! is the probe the bench sends once through the API before the timed run
//! (a set the API refuses fails the bench there, not as a table of 409s),
//! rows from 1 on are the load's. Coupon numbers of different sets lie
//! [`SET_SPAN`] apart, so ids and codes never collide.

use sqlx::Executor;

use couponkeeper::domain::ids::TemplateId;
use couponkeeper::service::{Ctx, Service};
use couponkeeper::store::Db;

use crate::data::{create_template, generated_insert, insert_generated};
use crate::{Result, Store};

/// Coupon numbers reserved per set (ids and codes derive from them).
const SET_SPAN: usize = 10_000_000;
/// The presale campaign of the deposit and final-payment sets: policy
/// `lock`, its final-payment window open from an hour before the run to two
/// days after.
pub(crate) const CAMPAIGN_ID: &str = "cmp_bench_http";
const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// What the rows of a set are when the load starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A normal order `pending_payment`, its coupon locked to it by a
    /// checkout lock that lasts another hour.
    PendingPayment,
    /// A presale order `pending_deposit` naming an `available` coupon.
    PendingDeposit,
    /// A presale order `deposit_paid`, its coupon locked to it with a
    /// 5.00 discount snapshotted, inside the final-payment window.
    DepositPaid,
    /// A normal order `paid` with its coupon used: three lines ([`PAID_LINES`])
    /// and the coupon's 5.00 split over them as `POST /orders` splits it.
    Paid,
}

/// The lines of a [`Shape::Paid`] order, `(line_id, quantity,
/// unit_price_cents, share of the 5.00 discount)`: 110.00 in all; the
/// shares are the largest-remainder split of 500 over 8,000 / 1,500 /
/// 1,500 (363.6, 68.2, 68.2: the first line takes the cent left).
pub(crate) const PAID_LINES: [(&str, i64, i64, i64); 3] =
    [("a", 2, 4000, 364), ("b", 1, 1500, 68), ("c", 3, 500, 68)];

/// One set of pre-made orders.
#[derive(Clone, Debug)]
pub(crate) struct Set {
    /// Order numbers are `<prefix><n>`, users `u<prefix><n>`.
    pub(crate) prefix: &'static str,
    pub(crate) shape: Shape,
    /// Rows for the load (`1..=rows`), besides the probe row 0.
    pub(crate) rows: usize,
    pub(crate) template_id: TemplateId,
}

/// What set to make: its place among the sets (its coupon numbers), its
/// order numbers, its shape and its size.
pub(crate) struct SetSpec {
    pub(crate) index: usize,
    pub(crate) prefix: &'static str,
    pub(crate) shape: Shape,
    pub(crate) rows: usize,
}

/// Makes one set: the template, `rows + 1` coupons and their orders.
pub(crate) async fn make_set(
    db: &Db,
    service: &Service,
    store: Store,
    spec: SetSpec,
    now_ms: i64,
) -> Result<Set> {
    let SetSpec {
        index,
        prefix,
        shape,
        rows,
    } = spec;
    if rows >= SET_SPAN {
        return Err(format!("at most {} rows per set", SET_SPAN - 1).into());
    }
    let ctx = Ctx::new("bench", None);
    let template_id = create_template(service, &ctx, &format!("http {prefix}"), rows + 1).await?;
    let base = index * SET_SPAN;
    let n = format!("CAST(i - {base} AS TEXT)");
    let (status, order_no, locked_at, used_at) = match shape {
        Shape::PendingDeposit => (
            "'available'",
            "CAST(NULL AS TEXT)".to_string(),
            "CAST(NULL AS BIGINT)",
            "CAST(NULL AS BIGINT)",
        ),
        Shape::PendingPayment | Shape::DepositPaid => (
            "'locked'",
            format!("'{prefix}' || {n}"),
            "$4 - 60000",
            "CAST(NULL AS BIGINT)",
        ),
        Shape::Paid => (
            "'used'",
            format!("'{prefix}' || {n}"),
            "$4 - 60000",
            "$4 - 60000",
        ),
    };
    let inner = format!(
        "'u{prefix}' || {n} AS user_id, {status} AS status, $4 - {HOUR_MS} AS starts_at,
         $4 + {week} AS ends_at, {order_no} AS order_no, {locked_at} AS locked_at,
         {used_at} AS used_at, $4 - {HOUR_MS} AS created_at, $4 - 60000 AS updated_at",
        week = 7 * DAY_MS
    );
    insert_generated(
        db,
        store,
        &generated_insert(store, &inner),
        base,
        rows + 1,
        &template_id,
        now_ms,
    )
    .await?;
    let orders = match shape {
        Shape::PendingPayment => format!(
            "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents,
                 deposit_cents, coupon_id, coupon_discount_cents, discount_snapshot_cents,
                 coupon_lock_status, checkout_lock_expires_at, created_at, updated_at)
             SELECT order_no, user_id, 'normal', 'bench', 'pending_payment', 10000, 0, id, 500, 500,
                 'locked', $2 + {HOUR_MS}, $2 - 60000, $2 - 60000
             FROM coupons WHERE template_id = $1"
        ),
        Shape::PendingDeposit => format!(
            "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents,
                 deposit_cents, campaign_id, coupon_id, coupon_lock_status, created_at, updated_at)
             SELECT substr(user_id, 2), user_id, 'presale', 'bench', 'pending_deposit', 100000,
                 10000, '{CAMPAIGN_ID}', id, 'none', $2 - 60000, $2 - 60000
             FROM coupons WHERE template_id = $1"
        ),
        Shape::DepositPaid => format!(
            "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents,
                 deposit_cents, campaign_id, coupon_id, coupon_discount_cents,
                 discount_snapshot_cents, coupon_lock_status, created_at, deposit_paid_at,
                 updated_at)
             SELECT order_no, user_id, 'presale', 'bench', 'deposit_paid', 100000, 10000,
                 '{CAMPAIGN_ID}', id, 500, 500, 'locked', $2 - 120000, $2 - 60000, $2 - 60000
             FROM coupons WHERE template_id = $1"
        ),
        Shape::Paid => format!(
            "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents,
                 deposit_cents, coupon_id, coupon_discount_cents, discount_snapshot_cents,
                 coupon_lock_status, created_at, paid_at, updated_at)
             SELECT order_no, user_id, 'normal', 'bench', 'paid', {total}, 0, id, 500, 500,
                 'used', $2 - 120000, $2 - 60000, $2 - 60000
             FROM coupons WHERE template_id = $1",
            total = PAID_LINES.iter().map(|(_, q, p, _)| q * p).sum::<i64>()
        ),
    };
    let done = sqlx::query(&orders)
        .bind(&template_id)
        .bind(now_ms)
        .execute(db.pool())
        .await
        .map_err(|e| format!("inserting the {prefix} orders on {}: {e}", store.name()))?;
    if done.rows_affected() != u64::try_from(rows + 1)? {
        return Err(format!(
            "inserted {} {prefix} orders, expected {}",
            done.rows_affected(),
            rows + 1
        )
        .into());
    }
    if shape == Shape::Paid {
        for (line_no, (line_id, quantity, price, share)) in PAID_LINES.iter().enumerate() {
            for sql in [
                format!(
                    "INSERT INTO order_lines (order_no, line_no, line_id, sku, category, shop_id,
                         quantity, unit_price_cents)
                     SELECT order_no, {line_no}, '{line_id}', NULL, 'bench', NULL, {quantity}, {price}
                     FROM coupons WHERE template_id = $1"
                ),
                format!(
                    "INSERT INTO order_line_discounts (order_no, coupon_id, line_no, cents)
                     SELECT order_no, id, {line_no}, {share} FROM coupons WHERE template_id = $1"
                ),
            ] {
                sqlx::query(&sql)
                    .bind(&template_id)
                    .execute(db.pool())
                    .await
                    .map_err(|e| format!("the {prefix} lines on {}: {e}", store.name()))?;
            }
        }
    }
    Ok(Set {
        prefix,
        shape,
        rows,
        template_id,
    })
}

/// Templates a spread set's coupons are dealt over.
pub(crate) const SPREAD_TEMPLATES: usize = 64;

/// Deals the coupons of `set` (a [`Shape::PendingPayment`] set) over
/// [`SPREAD_TEMPLATES`] templates, its own and 63 more created through the
/// service, row `n` to template `n % 64`: the same orders and coupons as
/// a hot set, but no two neighbouring payments count on one template.
/// (The templates' claimed counters are not moved: pay never reads them.)
pub(crate) async fn spread_set(db: &Db, service: &Service, set: &Set) -> Result<()> {
    let ctx = Ctx::new("bench", None);
    let mut templates = vec![set.template_id.clone()];
    for k in 1..SPREAD_TEMPLATES {
        templates.push(create_template(service, &ctx, &format!("http spread {k}"), 1).await?);
    }
    let start = set.prefix.len() + 1;
    // One statement: each coupon's row number, from its order's number,
    // picks its template.
    let arms = (1..SPREAD_TEMPLATES)
        .map(|k| format!("WHEN {k} THEN ${k}"))
        .collect::<Vec<_>>()
        .join(" ");
    let like = SPREAD_TEMPLATES;
    let sql = format!(
        "UPDATE coupons SET template_id = CASE
             (SELECT CAST(substr(o.order_no, {start}) AS BIGINT) % {SPREAD_TEMPLATES}
              FROM orders o WHERE o.coupon_id = coupons.id)
             {arms} ELSE template_id END
         WHERE id IN (SELECT coupon_id FROM orders WHERE order_no LIKE ${like})"
    );
    let mut q = sqlx::query(&sql);
    for template_id in templates.iter().skip(1) {
        q = q.bind(template_id);
    }
    q.bind(format!("{}%", set.prefix))
        .execute(db.pool())
        .await
        .map_err(|e| format!("spreading {}: {e}", set.prefix))?;
    Ok(())
}

/// How far the load got through `set` by its order numbers (for a spread
/// set, whose coupons are on many templates): paid orders and used
/// coupons among them.
pub(crate) async fn progress_by_prefix(db: &Db, set: &Set) -> Result<(i64, i64)> {
    let (orders, coupons): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT),
                CAST(COALESCE(SUM(CASE WHEN c.status = 'used' THEN 1 ELSE 0 END), 0) AS BIGINT)
         FROM orders o JOIN coupons c ON c.id = o.coupon_id
         WHERE o.order_no LIKE $1 AND o.status = 'paid'",
    )
    .bind(format!("{}%", set.prefix))
    .fetch_one(db.pool())
    .await?;
    Ok((orders, coupons))
}

/// The presale campaign of [`Shape::PendingDeposit`] and
/// [`Shape::DepositPaid`] sets.
pub(crate) async fn make_campaign(db: &Db, now_ms: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO presale_campaigns (id, name, final_payment_starts_at, final_payment_ends_at,
             policy, created_at)
         VALUES ($1, 'bench http', $2, $3, 'lock', $4)",
    )
    .bind(CAMPAIGN_ID)
    .bind(now_ms - HOUR_MS)
    .bind(now_ms + 2 * DAY_MS)
    .bind(now_ms - 2 * HOUR_MS)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Statistics for the planner after the bulk inserts (PostgreSQL), the WAL
/// folded in (SQLite).
pub(crate) async fn settle_all(db: &Db, store: Store) -> Result<()> {
    let mut conn = db.pool().acquire().await?;
    match store {
        Store::Postgres => {
            conn.execute("VACUUM (ANALYZE) coupons").await?;
            conn.execute("VACUUM (ANALYZE) orders").await?;
            conn.execute("CHECKPOINT").await?;
        }
        Store::Sqlite => {
            conn.execute("ANALYZE").await?;
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").await?;
        }
    }
    Ok(())
}

/// How far the load got through a set: orders in their next status, and
/// coupons of the set in theirs (each order carries one coupon, so the two
/// must agree).
pub(crate) async fn progress(db: &Db, set: &Set) -> Result<(i64, i64)> {
    let (order_status, coupon_status) = match set.shape {
        Shape::PendingPayment => ("paid", "used"),
        Shape::PendingDeposit => ("deposit_paid", "locked"),
        Shape::DepositPaid => ("final_paid", "used"),
        // A refund of the whole order; a refund of one unit leaves both.
        Shape::Paid => ("refunded", "available"),
    };
    // One statement, so both counts come from one snapshot.
    let (orders, coupons): (i64, i64) = sqlx::query_as(
        "SELECT
             (SELECT CAST(COUNT(*) AS BIGINT) FROM orders o JOIN coupons c ON c.id = o.coupon_id
              WHERE c.template_id = $1 AND o.status = $2),
             (SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1 AND status = $3)",
    )
    .bind(&set.template_id)
    .bind(order_status)
    .bind(coupon_status)
    .fetch_one(db.pool())
    .await?;
    Ok((orders, coupons))
}
