//! The support console's SQL: lookups by id, code, order number and user,
//! prefix ranges of the code and order-number search keys, keyset pages of coupons, the bounded reads of the health check, the
//! compensation cap sum, and the one order-row write of a staff release.
//!
//! Every statement is an equality or range lookup on an index (see
//! `migrations/*/0003_support.sql`) with a `LIMIT`, so the console stays fast
//! on tens of millions of coupons; none scans a table.

use sqlx::AnyConnection;

use super::coupons::{COLUMNS, CouponRow};
use super::dynamic::{self, Sql};
use super::events::{self, NewEvent};
use super::orders::{COLUMNS as ORDER_COLUMNS, OrderRow};
use crate::domain::coupon::CouponStatus;
use crate::domain::ids::{CouponId, OrderNo, TemplateId, UserId};

/// The id of the coupon with this code (codes are stored upper case), live
/// table first, then the archive.
pub async fn coupon_id_by_code(
    conn: &mut AnyConnection,
    code: &str,
) -> Result<Option<CouponId>, sqlx::Error> {
    let live: Option<CouponId> = sqlx::query_scalar("SELECT id FROM coupons WHERE code = $1")
        .bind(code)
        .fetch_optional(&mut *conn)
        .await?;
    if live.is_some() {
        return Ok(live);
    }
    sqlx::query_scalar("SELECT id FROM coupons_archive WHERE code = $1 LIMIT 1")
        .bind(code)
        .fetch_optional(conn)
        .await
}

pub use super::dynamic::prefix_range;

/// Live coupons whose search key (`code_key`, see
/// `migrations/*/0017_search_keys.sql`) starts with `$1`, in key order:
/// `$1` and `$2` are the bounds of [`prefix_range`], `$3` the limit. One
/// range of `coupons_code_key_idx`.
pub const COUPON_CODE_PREFIX_SQL: &str = "SELECT id, created_at FROM coupons \
     WHERE code_key >= $1 AND code_key < $2 ORDER BY code_key LIMIT $3";

/// [`COUPON_CODE_PREFIX_SQL`] on the archive (`coupons_archive_code_key_idx`).
pub const ARCHIVED_COUPON_CODE_PREFIX_SQL: &str = "SELECT id, created_at FROM coupons_archive \
     WHERE code_key >= $1 AND code_key < $2 ORDER BY code_key LIMIT $3";

/// Orders whose search key (`order_no_key`) starts with `$1`, in key order,
/// like [`COUPON_CODE_PREFIX_SQL`] (`orders_order_no_key_idx`).
pub const ORDER_NO_PREFIX_SQL: &str = "SELECT order_no, created_at FROM orders \
     WHERE order_no_key >= $1 AND order_no_key < $2 ORDER BY order_no_key LIMIT $3";

/// The (id or order number, `created_at`) of at most `limit` rows whose
/// search key starts with `prefix` (a [`crate::domain::ids::search_key`]),
/// by one of the prefix statements above.
async fn by_key_prefix(
    conn: &mut AnyConnection,
    sql: &str,
    prefix: &str,
    limit: i64,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let Some((low, high)) = prefix_range(prefix) else {
        return Ok(Vec::new());
    };
    sqlx::query_as(sql)
        .bind(low)
        .bind(high)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// Live coupons whose code's search key starts with `prefix`: (id,
/// `created_at`), at most `limit`, in key order.
pub async fn coupons_by_code_prefix(
    conn: &mut AnyConnection,
    prefix: &str,
    limit: i64,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    by_key_prefix(conn, COUPON_CODE_PREFIX_SQL, prefix, limit).await
}

/// [`coupons_by_code_prefix`] on the archive.
pub async fn archived_coupons_by_code_prefix(
    conn: &mut AnyConnection,
    prefix: &str,
    limit: i64,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    by_key_prefix(conn, ARCHIVED_COUPON_CODE_PREFIX_SQL, prefix, limit).await
}

/// Orders whose number's search key starts with `prefix`: (order number,
/// `created_at`), at most `limit`, in key order.
pub async fn orders_by_no_prefix(
    conn: &mut AnyConnection,
    prefix: &str,
    limit: i64,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    by_key_prefix(conn, ORDER_NO_PREFIX_SQL, prefix, limit).await
}

/// Orders whose search key holds `$1` anywhere (SQLite: an FTS5 phrase,
/// see [`fts_phrase`]), in no particular order, at most `$2`: (order
/// number, `created_at`). One lookup in `order_parts`'s trigram index
/// (`migrations/*/0030_search_parts.sql`).
pub const ORDER_NO_PART_SQL_SQLITE: &str = "SELECT order_no, created_at FROM order_parts \
     WHERE order_no_key MATCH $1 LIMIT $2";

/// [`ORDER_NO_PART_SQL_SQLITE`] on PostgreSQL: `$1` is a `LIKE` pattern
/// (see [`like_pattern`]), answered by `order_parts_order_no_key_trgm`.
pub const ORDER_NO_PART_SQL_POSTGRES: &str = "SELECT order_no, created_at FROM order_parts \
     WHERE order_no_key LIKE $1 LIMIT $2";

/// Users whose id holds `$1` anywhere, in any case, with their newest
/// order's time: at most `$2` users, from at most [`USER_PART_ROWS`] of
/// their orders.
pub const USER_PART_SQL_SQLITE: &str = "SELECT user_id, MAX(created_at) FROM \
     (SELECT user_id, created_at FROM order_parts WHERE user_id MATCH $1 LIMIT 5000) \
     GROUP BY user_id LIMIT $2";

/// [`USER_PART_SQL_SQLITE`] on PostgreSQL (`ILIKE`, answered by
/// `order_parts_user_id_trgm`).
pub const USER_PART_SQL_POSTGRES: &str = "SELECT user_id, MAX(created_at) FROM \
     (SELECT user_id, created_at FROM order_parts WHERE user_id ILIKE $1 LIMIT 5000) s \
     GROUP BY user_id LIMIT $2";

/// Most order rows a user search reads (the `LIMIT 5000` above).
pub const USER_PART_ROWS: i64 = 5000;

/// `part` as an FTS5 phrase: in double quotes, a quote doubled. With the
/// trigram tokenizer a phrase of three or more characters matches
/// wherever it occurs in the column, in any case.
pub fn fts_phrase(part: &str) -> String {
    format!("\"{}\"", part.replace('"', "\"\""))
}

/// `part` as a `LIKE` pattern matching it anywhere: `%`, `_` and the
/// escape character `\` stand for themselves.
pub fn like_pattern(part: &str) -> String {
    let mut out = String::with_capacity(part.len() + 2);
    out.push('%');
    for ch in part.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('%');
    out
}

/// The statement and bound text of a part search on this connection's
/// store.
fn part_query(
    conn: &AnyConnection,
    sqlite: &'static str,
    postgres: &'static str,
    part: &str,
) -> (&'static str, String) {
    match super::backend_of(conn) {
        super::Backend::Sqlite => (sqlite, fts_phrase(part)),
        super::Backend::Postgres => (postgres, like_pattern(part)),
    }
}

/// Orders whose number's search key holds `part` (a
/// [`crate::domain::ids::search_key`] of 3 or more characters): (order
/// number, `created_at`), at most `limit`, in no particular order.
pub async fn orders_by_no_part(
    conn: &mut AnyConnection,
    part: &str,
    limit: i64,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let (sql, pattern) = part_query(
        conn,
        ORDER_NO_PART_SQL_SQLITE,
        ORDER_NO_PART_SQL_POSTGRES,
        part,
    );
    sqlx::query_as(sql)
        .bind(pattern)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// Users who placed an order and whose id holds `part` (3 or more
/// characters) in any case: (user id, their newest order's `created_at`),
/// at most `limit`.
pub async fn users_by_part(
    conn: &mut AnyConnection,
    part: &str,
    limit: i64,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    let (sql, pattern) = part_query(conn, USER_PART_SQL_SQLITE, USER_PART_SQL_POSTGRES, part);
    sqlx::query_as(sql)
        .bind(pattern)
        .bind(limit)
        .fetch_all(conn)
        .await
}

/// Whether a coupon with this id exists, live or archived.
pub async fn coupon_exists(conn: &mut AnyConnection, id: &CouponId) -> Result<bool, sqlx::Error> {
    for sql in [
        "SELECT id FROM coupons WHERE id = $1",
        "SELECT id FROM coupons_archive WHERE id = $1",
    ] {
        let hit: Option<String> = sqlx::query_scalar(sql)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
        if hit.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether an order with this number exists.
pub async fn order_exists(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<bool, sqlx::Error> {
    let hit: Option<String> = sqlx::query_scalar("SELECT order_no FROM orders WHERE order_no = $1")
        .bind(order_no)
        .fetch_optional(conn)
        .await?;
    Ok(hit.is_some())
}

/// Whether the shop's user is known here: they hold a coupon (live or
/// archived) or placed an order. Three indexed probes, each `LIMIT 1`.
pub async fn user_exists(conn: &mut AnyConnection, user_id: &UserId) -> Result<bool, sqlx::Error> {
    for sql in [
        "SELECT user_id FROM coupons WHERE user_id = $1 LIMIT 1",
        "SELECT user_id FROM orders WHERE user_id = $1 LIMIT 1",
        "SELECT user_id FROM coupons_archive WHERE user_id = $1 LIMIT 1",
    ] {
        let hit: Option<String> = sqlx::query_scalar(sql)
            .bind(user_id)
            .fetch_optional(&mut *conn)
            .await?;
        if hit.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// One keyset page of coupons in one *stored* status, ordered by
/// `(ends_at, id)`. The service merges the pages of several stored statuses
/// into one page of an effective status.
#[derive(Debug, Clone)]
pub struct CouponPageQuery<'a> {
    pub status: CouponStatus,
    pub template_id: Option<&'a TemplateId>,
    pub user_id: Option<&'a UserId>,
    /// `ends_at > this`.
    pub ends_after: Option<i64>,
    /// `ends_at < this`.
    pub ends_before: Option<i64>,
    /// Keyset cursor: rows after this `(ends_at, id)`.
    pub after: Option<(i64, &'a str)>,
    pub limit: i64,
}

fn page_sql(q: &CouponPageQuery<'_>) -> Sql {
    let mut sql = Sql::new(format!("SELECT {COLUMNS} FROM coupons"));
    sql.push_bind(" WHERE status = ?", q.status.as_str());
    if let Some(t) = q.template_id {
        sql.push_bind(" AND template_id = ?", t);
    }
    if let Some(u) = q.user_id {
        sql.push_bind(" AND user_id = ?", u);
    }
    if let Some(a) = q.ends_after {
        sql.push_bind(" AND ends_at > ?", a);
    }
    if let Some(b) = q.ends_before {
        sql.push_bind(" AND ends_at < ?", b);
    }
    if let Some((ends, id)) = q.after {
        // `ends_at >= ?` bounds the index range; the OR only filters the
        // rows of that one `ends_at` value.
        sql.push_bind(" AND ends_at >= ?", ends)
            .push_bind(" AND (ends_at > ?", ends)
            .push_bind(" OR id > ?)", id);
    }
    sql.push_bind(" ORDER BY ends_at, id LIMIT ?", q.limit);
    sql
}

/// Runs one page query.
pub async fn coupon_page(
    conn: &mut AnyConnection,
    q: &CouponPageQuery<'_>,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    dynamic::fetch_all(conn, &page_sql(q)).await
}

/// The plan the database chooses for exactly the statement [`coupon_page`]
/// runs, with the same bound values (see [`dynamic::explain`]). For the
/// index tests and for diagnosing a slow console.
pub async fn explain_coupon_page(
    conn: &mut AnyConnection,
    q: &CouponPageQuery<'_>,
) -> Result<Vec<String>, sqlx::Error> {
    dynamic::explain(conn, &page_sql(q)).await
}

/// A user's orders, newest first (`(user_id, created_at)` index).
pub async fn orders_for_user(
    conn: &mut AnyConnection,
    user_id: &UserId,
    limit: i64,
) -> Result<Vec<OrderRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {ORDER_COLUMNS}
         FROM orders WHERE user_id = $1 ORDER BY created_at DESC, order_no DESC LIMIT $2"
    ))
    .bind(user_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// A user's coupons stored `locked`, at most `limit`.
pub async fn locked_for_user(
    conn: &mut AnyConnection,
    user_id: &UserId,
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM coupons WHERE user_id = $1 AND status = 'locked' ORDER BY ends_at, id LIMIT $2"
    ))
    .bind(user_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Coupons stored `locked` or `used` that name `order_no` (normally at
/// most one), by `coupons_order_no_idx`.
pub async fn bound_to_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM coupons WHERE order_no = $1 AND status IN ('locked', 'used') ORDER BY id LIMIT 20"
    ))
    .bind(order_no)
    .fetch_all(conn)
    .await
}

/// Coupons a template issued, live and archived (its claims; compensation
/// coupons have no template). Counts at most `cap` per table, so a damaged
/// counter cannot make this read unbounded.
pub async fn coupons_of_template(
    conn: &mut AnyConnection,
    template_id: &TemplateId,
    cap: i64,
) -> Result<i64, sqlx::Error> {
    let mut total = 0;
    for table in ["coupons", "coupons_archive"] {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM (SELECT 1 AS one FROM {table} WHERE template_id = $1 LIMIT $2) t"
        ))
        .bind(template_id)
        .bind(cap)
        .fetch_one(&mut *conn)
        .await?;
        total += n;
    }
    Ok(total)
}

/// How a staff release changes the order that held the coupon.
#[derive(Debug, Clone)]
pub struct OrderLockRelease<'a> {
    pub order_no: &'a OrderNo,
    /// The status the order must still be in (part of the WHERE clause).
    pub status: &'a str,
    /// The coupon the order must still name (part of the WHERE clause).
    pub coupon_id: &'a CouponId,
    /// True: the order lets go of the coupon, its discount and its checkout
    /// lock entirely (a forced release on a live order, which then proceeds
    /// without them, like an order placed without a coupon).
    /// False: only its `coupon_lock_status` becomes `released`.
    pub detach: bool,
    pub action: &'a str,
    pub actor: &'a str,
    pub reason: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// The client address of the request (audit log).
    pub address: Option<&'a str>,
    /// The W3C trace id of the request, for the event row.
    pub trace_id: Option<&'a str>,
    pub now_ms: i64,
}

/// Marks an order's coupon lock `released` with one conditional UPDATE and
/// writes the order's event row. `Ok(false)`: the order changed meanwhile.
pub async fn release_order_lock(
    conn: &mut AnyConnection,
    r: &OrderLockRelease<'_>,
) -> Result<bool, sqlx::Error> {
    let set = if r.detach {
        "coupon_lock_status = 'released', coupon_id = NULL, coupon_discount_cents = 0, \
         checkout_lock_expires_at = NULL, updated_at = $4"
    } else {
        "coupon_lock_status = 'released', updated_at = $4"
    };
    let changed = sqlx::query(&format!(
        "UPDATE orders SET {set} WHERE order_no = $1 AND status = $2 AND coupon_id = $3"
    ))
    .bind(r.order_no)
    .bind(r.status)
    .bind(r.coupon_id)
    .bind(r.now_ms)
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    if changed {
        events::insert(
            conn,
            &NewEvent {
                subject: "order",
                coupon_id: Some(r.coupon_id),
                order_no: Some(r.order_no),
                from_status: Some(r.status),
                to_status: r.status,
                action: r.action,
                actor: r.actor,
                reason: r.reason,
                request_id: r.request_id,
                trace_id: r.trace_id,
                address: r.address,
                at_ms: r.now_ms,
            },
        )
        .await?;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sql_numbers_its_parameters_in_order() {
        let q = CouponPageQuery {
            status: CouponStatus::Available,
            template_id: Some(&TemplateId::from("t")),
            user_id: None,
            ends_after: Some(5),
            ends_before: None,
            after: Some((7, "c")),
            limit: 10,
        };
        let sql = page_sql(&q);
        let (sql, binds) = (sql.text(), sql.binds());
        assert!(
            sql.ends_with(
                "WHERE status = $1 AND template_id = $2 AND ends_at > $3 AND ends_at >= $4 AND (ends_at > $5 OR id > $6) ORDER BY ends_at, id LIMIT $7"
            ),
            "{sql}"
        );
        assert_eq!(binds.len(), 7);
    }

    #[test]
    fn a_prefix_range_holds_exactly_the_keys_that_start_with_the_prefix() {
        assert_eq!(
            prefix_range("K7QM"),
            Some(("K7QM".to_string(), "K7QN".to_string()))
        );
        assert_eq!(prefix_range(""), None);
        assert_eq!(prefix_range("\u{10FFFF}"), None);
        // A trailing char::MAX is dropped and the one before it raised.
        assert_eq!(
            prefix_range("AB\u{10FFFF}").map(|r| r.1),
            Some("AC".to_string())
        );
        // The surrogate gap is stepped over.
        assert_eq!(
            prefix_range("A\u{D7FF}").map(|r| r.1),
            Some("A\u{E000}".to_string())
        );
        let (low, high) = prefix_range("ORD9").expect("a range");
        for inside in ["ORD9", "ORD90", "ORD9\u{10FFFF}\u{10FFFF}", "ORD9ZZZ"] {
            assert!(low.as_str() <= inside && inside < high.as_str(), "{inside}");
        }
        for outside in ["ORD8", "ORD", "ORDA", "ORD:", "ORE"] {
            assert!(
                !(low.as_str() <= outside && outside < high.as_str()),
                "{outside}"
            );
        }
    }
}
