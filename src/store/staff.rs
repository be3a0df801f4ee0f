//! The `staff`, `staff_sessions` and `login_attempts` tables: console
//! accounts, signed-in browsers and the sign-in history rate limiting reads;
//! and `server_secrets`, the keys every instance shares.

use sqlx::AnyConnection;

/// One staff account as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StaffRow {
    pub name: String,
    pub role: String,
    pub password_hash: String,
    pub disabled: i64,
    pub created_at: i64,
}

pub async fn count(conn: &mut AnyConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM staff")
        .fetch_one(conn)
        .await
}

pub async fn get(conn: &mut AnyConnection, name: &str) -> Result<Option<StaffRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT name, role, password_hash, disabled, created_at FROM staff WHERE name = $1",
    )
    .bind(name)
    .fetch_optional(conn)
    .await
}

/// Every account, by name (a console has tens of staff, not thousands; the
/// limit keeps a runaway table from filling a page).
pub async fn list(conn: &mut AnyConnection) -> Result<Vec<StaffRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT name, role, password_hash, disabled, created_at FROM staff ORDER BY name LIMIT 1000",
    )
    .fetch_all(conn)
    .await
}

/// Inserts an account; a taken name is a unique violation the caller maps.
pub async fn insert(
    conn: &mut AnyConnection,
    name: &str,
    role: &str,
    password_hash: &str,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO staff (name, role, password_hash, disabled, created_at, updated_at)
         VALUES ($1, $2, $3, 0, $4, $4)",
    )
    .bind(name)
    .bind(role)
    .bind(password_hash)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// Replaces an account's password and role. Returns whether it existed.
pub async fn update(
    conn: &mut AnyConnection,
    name: &str,
    role: &str,
    password_hash: &str,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query(
        "UPDATE staff SET role = $2, password_hash = $3, disabled = 0, updated_at = $4 WHERE name = $1",
    )
    .bind(name)
    .bind(role)
    .bind(password_hash)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Takes a write lock on every enabled admin's row (a no-op update) and
/// returns their names. A transaction that changes an admin calls this
/// first, so on PostgreSQL (read committed) two admins demoting each other
/// at once are serialised instead of both seeing "another admin remains";
/// SQLite's `BEGIN IMMEDIATE` serialises writers already.
pub async fn lock_enabled_admins(conn: &mut AnyConnection) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query("UPDATE staff SET updated_at = updated_at WHERE role = 'admin' AND disabled = 0")
        .execute(&mut *conn)
        .await?;
    sqlx::query_scalar("SELECT name FROM staff WHERE role = 'admin' AND disabled = 0 ORDER BY name")
        .fetch_all(conn)
        .await
}

/// The condition that keeps at least one enabled admin: the row being
/// changed is not an enabled admin, or another enabled admin exists.
const KEEPS_AN_ADMIN: &str = "(role <> 'admin' OR disabled <> 0 OR EXISTS (
    SELECT 1 FROM staff other WHERE other.role = 'admin' AND other.disabled = 0 AND other.name <> $1))";

/// Sets an account's role unless it already has it or the change would
/// demote the last enabled admin. Returns whether a row changed.
pub async fn set_role(
    conn: &mut AnyConnection,
    name: &str,
    role: &str,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let sql = format!(
        "UPDATE staff SET role = $2, updated_at = $3
         WHERE name = $1 AND role <> $2 AND ($2 = 'admin' OR {KEEPS_AN_ADMIN})"
    );
    let r = sqlx::query(&sql)
        .bind(name)
        .bind(role)
        .bind(now_ms)
        .execute(conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// Disables or enables an account unless it is already so or disabling
/// would leave no enabled admin. Returns whether a row changed.
pub async fn set_disabled(
    conn: &mut AnyConnection,
    name: &str,
    disabled: bool,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let sql = format!(
        "UPDATE staff SET disabled = $2, updated_at = $3
         WHERE name = $1 AND disabled <> $2 AND ($2 = 0 OR {KEEPS_AN_ADMIN})"
    );
    let r = sqlx::query(&sql)
        .bind(name)
        .bind(i64::from(disabled))
        .bind(now_ms)
        .execute(conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// Replaces an account's password hash. Returns whether the account exists.
pub async fn set_password(
    conn: &mut AnyConnection,
    name: &str,
    password_hash: &str,
    now_ms: i64,
) -> Result<bool, sqlx::Error> {
    let r = sqlx::query("UPDATE staff SET password_hash = $2, updated_at = $3 WHERE name = $1")
        .bind(name)
        .bind(password_hash)
        .bind(now_ms)
        .execute(conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// `login_attempts.succeeded` of an attempt whose password is still being
/// checked. It counts as a failure until [`settle_attempt`] says otherwise,
/// so a burst of parallel guesses cannot all pass the limit check before
/// any of them is recorded, and a process killed mid-check leaves a failure.
pub const ATTEMPT_PENDING: i64 = 2;

/// Serializes sign-in checks on one account and on one address for the rest
/// of the transaction, so counting the recent failures and recording a new
/// attempt happen as one step. PostgreSQL: two transaction-scoped advisory
/// locks, always the account's first (every transaction takes them in the
/// same order, so they cannot deadlock), shared by every instance on the
/// database. SQLite: the write transaction already holds the database lock.
pub async fn lock_sign_in(
    conn: &mut AnyConnection,
    name: &str,
    address: &str,
) -> Result<(), sqlx::Error> {
    super::advisory_lock(&mut *conn, &format!("sign-in:account:{name}")).await?;
    super::advisory_lock(conn, &format!("sign-in:address:{address}")).await
}

/// Records a sign-in attempt as pending (a failure until settled) and
/// returns its id.
pub async fn reserve_attempt(
    conn: &mut AnyConnection,
    name: &str,
    address: &str,
    now_ms: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO login_attempts (staff_name, address, succeeded, at) VALUES ($1, $2, $3, $4)
         RETURNING id",
    )
    .bind(name)
    .bind(address)
    .bind(ATTEMPT_PENDING)
    .bind(now_ms)
    .fetch_one(conn)
    .await
}

/// Marks a pending attempt as succeeded or failed; false when it is no
/// longer pending (purged, or settled already).
pub async fn settle_attempt(
    conn: &mut AnyConnection,
    id: i64,
    succeeded: bool,
) -> Result<bool, sqlx::Error> {
    let r =
        sqlx::query("UPDATE login_attempts SET succeeded = $2 WHERE id = $1 AND succeeded = $3")
            .bind(id)
            .bind(i64::from(succeeded))
            .bind(ATTEMPT_PENDING)
            .execute(conn)
            .await?;
    Ok(r.rows_affected() == 1)
}

/// Deletes a pending attempt whose password was never checked (every
/// password slot was busy): it was no attempt. False when it is no longer
/// pending.
pub async fn withdraw_attempt(conn: &mut AnyConnection, id: i64) -> Result<bool, sqlx::Error> {
    let r = sqlx::query("DELETE FROM login_attempts WHERE id = $1 AND succeeded = $2")
        .bind(id)
        .bind(ATTEMPT_PENDING)
        .execute(conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// Attempts since `since_ms` that did not succeed (failed or still
/// pending).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecentFailures {
    /// For this account from this address.
    pub pair: i64,
    /// From this address, for any account.
    pub address: i64,
    /// For this account, from any address.
    pub account: i64,
}

/// Failed or pending attempts since `since_ms` for an account and address
/// pair, for the address and for the account, each read through an index
/// (`login_attempts_pair_idx`, `login_attempts_address_idx`,
/// `login_attempts_name_idx`). Each count is bounded by its limit plus the
/// attempts in flight, because refused attempts are not recorded.
pub async fn recent_failures(
    conn: &mut AnyConnection,
    name: &str,
    address: &str,
    since_ms: i64,
) -> Result<RecentFailures, sqlx::Error> {
    let pair: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM login_attempts
         WHERE staff_name = $1 AND address = $2 AND at > $3 AND succeeded <> 1",
    )
    .bind(name)
    .bind(address)
    .bind(since_ms)
    .fetch_one(&mut *conn)
    .await?;
    let by_address: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM login_attempts WHERE address = $1 AND at > $2 AND succeeded <> 1",
    )
    .bind(address)
    .bind(since_ms)
    .fetch_one(&mut *conn)
    .await?;
    let by_account: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM login_attempts WHERE staff_name = $1 AND at > $2 AND succeeded <> 1",
    )
    .bind(name)
    .bind(since_ms)
    .fetch_one(&mut *conn)
    .await?;
    Ok(RecentFailures {
        pair,
        address: by_address,
        account: by_account,
    })
}

/// A stored session joined with its account.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRow {
    pub id_hash: String,
    pub staff_name: String,
    pub role: String,
    pub disabled: i64,
    pub csrf_token: String,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub expires_at: i64,
}

pub struct NewSession<'a> {
    pub id_hash: &'a str,
    pub staff_name: &'a str,
    pub csrf_token: &'a str,
    pub address: &'a str,
    pub now_ms: i64,
    pub expires_at_ms: i64,
}

pub async fn insert_session(
    conn: &mut AnyConnection,
    s: &NewSession<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO staff_sessions (id_hash, staff_name, csrf_token, address, created_at, last_seen_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $5, $6)",
    )
    .bind(s.id_hash)
    .bind(s.staff_name)
    .bind(s.csrf_token)
    .bind(s.address)
    .bind(s.now_ms)
    .bind(s.expires_at_ms)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn get_session(
    conn: &mut AnyConnection,
    id_hash: &str,
) -> Result<Option<SessionRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT s.id_hash, s.staff_name, st.role, st.disabled, s.csrf_token, s.created_at, s.last_seen_at, s.expires_at
         FROM staff_sessions s JOIN staff st ON st.name = s.staff_name
         WHERE s.id_hash = $1",
    )
    .bind(id_hash)
    .fetch_optional(conn)
    .await
}

/// Moves a session's idle clock forward.
pub async fn touch_session(
    conn: &mut AnyConnection,
    id_hash: &str,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE staff_sessions SET last_seen_at = $2 WHERE id_hash = $1")
        .bind(id_hash)
        .bind(now_ms)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn delete_session(conn: &mut AnyConnection, id_hash: &str) -> Result<bool, sqlx::Error> {
    let r = sqlx::query("DELETE FROM staff_sessions WHERE id_hash = $1")
        .bind(id_hash)
        .execute(conn)
        .await?;
    Ok(r.rows_affected() == 1)
}

/// Deletes every session of `name` except the one whose form token is
/// `keep_csrf` (each session has its own random token): after a password
/// change, the session that made it stays signed in.
pub async fn delete_other_sessions_of(
    conn: &mut AnyConnection,
    name: &str,
    keep_csrf: &str,
) -> Result<u64, sqlx::Error> {
    let r = sqlx::query("DELETE FROM staff_sessions WHERE staff_name = $1 AND csrf_token <> $2")
        .bind(name)
        .bind(keep_csrf)
        .execute(conn)
        .await?;
    Ok(r.rows_affected())
}

/// Ends every session of an account (password reset, role change).
pub async fn delete_sessions_of(conn: &mut AnyConnection, name: &str) -> Result<u64, sqlx::Error> {
    let r = sqlx::query("DELETE FROM staff_sessions WHERE staff_name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(r.rows_affected())
}

/// Deletes up to `batch` sessions past their absolute end (by
/// `staff_sessions_expires_idx`), and up to `batch` sign-in attempts older
/// than `attempts_before_ms`.
pub async fn purge(
    conn: &mut AnyConnection,
    now_ms: i64,
    attempts_before_ms: i64,
    batch: i64,
) -> Result<u64, sqlx::Error> {
    let sessions = sqlx::query(
        "DELETE FROM staff_sessions WHERE id_hash IN (
             SELECT id_hash FROM staff_sessions WHERE expires_at <= $1 LIMIT $2)",
    )
    .bind(now_ms)
    .bind(batch)
    .execute(&mut *conn)
    .await?;
    let attempts = sqlx::query(
        "DELETE FROM login_attempts WHERE id IN (
             SELECT id FROM login_attempts WHERE at <= $1 LIMIT $2)",
    )
    .bind(attempts_before_ms)
    .bind(batch)
    .execute(&mut *conn)
    .await?;
    Ok(sessions.rows_affected() + attempts.rows_affected())
}

/// The shared secret `name`: `candidate` when this call is the first to
/// ask (the row is inserted), else the one already stored. Safe under
/// concurrency on both stores (`ON CONFLICT DO NOTHING`, then a read).
pub async fn get_or_create_secret(
    conn: &mut AnyConnection,
    name: &str,
    candidate: &str,
    now_ms: i64,
) -> Result<String, sqlx::Error> {
    sqlx::query(
        "INSERT INTO server_secrets (name, secret, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(candidate)
    .bind(now_ms)
    .execute(&mut *conn)
    .await?;
    sqlx::query_scalar("SELECT secret FROM server_secrets WHERE name = $1")
        .bind(name)
        .fetch_one(conn)
        .await
}
