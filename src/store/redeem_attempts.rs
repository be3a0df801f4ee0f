//! The `redeem_attempts` table: one row per code redemption attempt, for
//! the failure limits per user and per client address
//! ([`crate::service::Service::reserve_redemption`]). An attempt is
//! inserted as pending before its code is looked up and settled after;
//! pending and failed attempts count against the limits.

use crate::domain::ids::UserId;
use sqlx::AnyConnection;

/// `redeem_attempts.outcome`: a wrong guess (no such code, or redeemed
/// already).
pub const OUTCOME_FAILED: i64 = 0;
/// `redeem_attempts.outcome`: not a wrong guess (the code redeemed, or a
/// refusal about the template, stock or limits).
pub const OUTCOME_NOT_FAILED: i64 = 1;
/// `redeem_attempts.outcome`: still being tried. Counts as a failure until
/// settled, so a burst cannot pass the check before any attempt is
/// counted, and a process killed mid-attempt leaves a failure.
pub const OUTCOME_PENDING: i64 = 2;

/// Serializes redemption attempts of one user and from one address for the
/// rest of the transaction, so counting recent failures and recording a
/// new attempt are one step. PostgreSQL: two transaction-scoped advisory
/// locks, always the user's first (every transaction takes them in the
/// same order, so they cannot deadlock), shared by every instance on the
/// database. SQLite: the write transaction already holds the database
/// lock.
pub async fn lock(
    conn: &mut AnyConnection,
    user_id: &UserId,
    address: &str,
) -> Result<(), sqlx::Error> {
    super::advisory_lock(&mut *conn, &format!("redeem:user:{user_id}")).await?;
    super::advisory_lock(conn, &format!("redeem:address:{address}")).await
}

/// Which attempts a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    User(&'a str),
    Address(&'a str),
}

/// When the `limit`-th most recent counted attempt (failed or pending)
/// since `since_ms` was made, if there are that many: the limit is reached
/// until that attempt leaves the window. One index range
/// (`redeem_attempts_user_idx` or `redeem_attempts_address_idx`), newest
/// first, reading at most `limit` counted rows.
pub async fn limit_reached_at(
    conn: &mut AnyConnection,
    key: Key<'_>,
    since_ms: i64,
    limit: i64,
) -> Result<Option<i64>, sqlx::Error> {
    let (column, value) = match key {
        Key::User(u) => ("user_id", u),
        Key::Address(a) => ("address", a),
    };
    sqlx::query_scalar(&format!(
        "SELECT at FROM redeem_attempts
         WHERE {column} = $1 AND at > $2 AND outcome <> $3
         ORDER BY at DESC LIMIT 1 OFFSET $4"
    ))
    .bind(value)
    .bind(since_ms)
    .bind(OUTCOME_NOT_FAILED)
    .bind((limit - 1).max(0))
    .fetch_optional(conn)
    .await
}

/// Records an attempt as pending and returns its id.
pub async fn reserve(
    conn: &mut AnyConnection,
    user_id: &UserId,
    address: &str,
    now_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO redeem_attempts (user_id, address, outcome, at) VALUES ($1, $2, $3, $4)
         RETURNING id",
    )
    .bind(user_id)
    .bind(address)
    .bind(OUTCOME_PENDING)
    .bind(now_ms)
    .fetch_one(conn)
    .await
}

/// Settles a pending attempt ([`OUTCOME_FAILED`] or
/// [`OUTCOME_NOT_FAILED`]); false when it is no longer pending.
pub async fn settle(conn: &mut AnyConnection, id: i64, outcome: i64) -> Result<bool, sqlx::Error> {
    let r = sqlx::query("UPDATE redeem_attempts SET outcome = $2 WHERE id = $1 AND outcome = $3")
        .bind(id)
        .bind(outcome)
        .bind(OUTCOME_PENDING)
        .execute(conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// Deletes up to `batch` attempts older than `before_ms` (by
/// `redeem_attempts_at_idx`).
pub async fn purge(
    conn: &mut AnyConnection,
    before_ms: i64,
    batch: i64,
) -> Result<u64, sqlx::Error> {
    let r = sqlx::query(
        "DELETE FROM redeem_attempts WHERE id IN (
             SELECT id FROM redeem_attempts WHERE at <= $1 LIMIT $2)",
    )
    .bind(before_ms)
    .bind(batch)
    .execute(conn)
    .await?;
    Ok(r.rows_affected())
}
