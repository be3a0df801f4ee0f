//! The `compensation_rule_versions` and `compensation_presets` tables:
//! every version of the compensation rules, written whole, never changed.

use crate::domain::money::Cents;
use sqlx::AnyConnection;

use super::views::parse_stored_categories;
use crate::domain::compensation::{Preset, Rules};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRow {
    pub version: i64,
    pub support_max_cents: Cents,
    pub support_daily_cents: Cents,
    pub created_at: i64,
    pub actor: String,
    pub reason: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
struct PresetRow {
    version: i64,
    id: String,
    reason: String,
    value_cents: i64,
    valid_seconds: i64,
    min_order_cents: i64,
    categories: String,
}

impl From<PresetRow> for Preset {
    fn from(r: PresetRow) -> Self {
        Preset {
            id: r.id,
            reason: r.reason,
            value_cents: r.value_cents,
            valid_seconds: r.valid_seconds,
            min_order_cents: r.min_order_cents,
            categories: parse_stored_categories(&r.categories),
        }
    }
}

const VERSION_COLUMNS: &str =
    "version, support_max_cents, support_daily_cents, created_at, actor, reason";
const PRESET_COLUMNS: &str =
    "version, id, reason, value_cents, valid_seconds, min_order_cents, categories";

/// Inserts a version row unless that version exists. `Ok(false)`: it did
/// (another instance or transaction wrote it first).
pub async fn insert_version_if_absent(
    conn: &mut AnyConnection,
    v: &VersionRow,
) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "INSERT INTO compensation_rule_versions (version, support_max_cents, support_daily_cents, created_at, actor, reason)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (version) DO NOTHING",
    )
    .bind(v.version)
    .bind(v.support_max_cents)
    .bind(v.support_daily_cents)
    .bind(v.created_at)
    .bind(&v.actor)
    .bind(&v.reason)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Writes the presets of a version (its version row must exist).
pub async fn insert_presets(
    conn: &mut AnyConnection,
    version: i64,
    presets: &[Preset],
) -> Result<(), sqlx::Error> {
    for (i, p) in presets.iter().enumerate() {
        let categories = serde_json::to_string(&p.categories).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO compensation_presets (version, id, position, reason, value_cents, valid_seconds, min_order_cents, categories)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(version)
        .bind(&p.id)
        .bind(i as i64)
        .bind(&p.reason)
        .bind(p.value_cents)
        .bind(p.valid_seconds)
        .bind(p.min_order_cents)
        .bind(categories)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The newest version row, if any.
pub async fn latest_version(conn: &mut AnyConnection) -> Result<Option<VersionRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM compensation_rule_versions ORDER BY version DESC LIMIT 1"
    ))
    .fetch_optional(conn)
    .await
}

/// The version in force's number, if any (the primary key's last entry).
pub async fn latest_version_number(conn: &mut AnyConnection) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT version FROM compensation_rule_versions ORDER BY version DESC LIMIT 1",
    )
    .fetch_optional(conn)
    .await
}

/// The newest `limit` version rows, newest first.
pub async fn versions(
    conn: &mut AnyConnection,
    limit: i64,
) -> Result<Vec<VersionRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM compensation_rule_versions ORDER BY version DESC LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The presets of the versions `from..=to`, by version, each in order.
pub async fn presets_of_versions(
    conn: &mut AnyConnection,
    from: i64,
    to: i64,
) -> Result<Vec<(i64, Preset)>, sqlx::Error> {
    let rows: Vec<PresetRow> = sqlx::query_as(&format!(
        "SELECT {PRESET_COLUMNS} FROM compensation_presets WHERE version >= $1 AND version <= $2
         ORDER BY version, position LIMIT 10000"
    ))
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.version, Preset::from(r)))
        .collect())
}

/// One version with its presets.
pub async fn rules_of(conn: &mut AnyConnection, v: &VersionRow) -> Result<Rules, sqlx::Error> {
    let presets = presets_of_versions(conn, v.version, v.version)
        .await?
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    Ok(Rules {
        version: v.version,
        support_max_cents: v.support_max_cents.get(),
        support_daily_cents: v.support_daily_cents.get(),
        presets,
    })
}

/// The reason of each preset id, from the newest version holding it.
pub async fn preset_reasons(
    conn: &mut AnyConnection,
    ids: &[&str],
) -> Result<std::collections::HashMap<String, String>, sqlx::Error> {
    let mut out = std::collections::HashMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT id, reason FROM compensation_presets WHERE id IN ({}) ORDER BY version",
        super::param_list(1, ids.len())
    );
    let mut q = sqlx::query_as::<_, (String, String)>(&sql);
    for id in ids {
        q = q.bind(*id);
    }
    for (id, reason) in q.fetch_all(conn).await? {
        out.insert(id, reason);
    }
    Ok(out)
}

/// Every preset id and its newest reason (the ledger's preset filter).
pub async fn all_presets(conn: &mut AnyConnection) -> Result<Vec<(String, String)>, sqlx::Error> {
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT id, reason, version FROM compensation_presets ORDER BY version DESC, position LIMIT 5000",
    )
    .fetch_all(conn)
    .await?;
    let mut out: Vec<(String, String)> = Vec::new();
    for (id, reason, _) in rows {
        if !out.iter().any(|(i, _)| *i == id) {
            out.push((id, reason));
        }
    }
    Ok(out)
}

/// Version 1 from the settings' caps: no presets.
pub fn first_version(max_cents: i64, daily_cents: i64) -> Rules {
    Rules {
        version: 1,
        support_max_cents: max_cents,
        support_daily_cents: daily_cents,
        presets: Vec::new(),
    }
}

/// The actor recorded on version 1 (from the settings).
pub const SETTINGS_ACTOR: &str = "settings";

/// Inserts version 1 with the settings' caps unless a version exists, in
/// the caller's write transaction (insert-if-absent on the version key:
/// concurrent first uses on several instances insert it once).
pub async fn ensure_first(
    conn: &mut AnyConnection,
    first: (i64, i64),
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    if latest_version_number(conn).await?.is_none() {
        insert_version_if_absent(
            conn,
            &VersionRow {
                version: 1,
                support_max_cents: Cents::from_stored(first.0),
                support_daily_cents: Cents::from_stored(first.1),
                created_at: now_ms,
                actor: SETTINGS_ACTOR.into(),
                reason: "COUPONKEEPER_SUPPORT_COMPENSATION_MAX_CENTS / _DAILY_CENTS".into(),
            },
        )
        .await?;
    }
    Ok(())
}

/// The rules in force, in the caller's write transaction (version 1 from
/// `first`, the settings' caps, is written first if there is none yet).
pub async fn rules_in_force(
    conn: &mut AnyConnection,
    first: (i64, i64),
    now_ms: i64,
) -> Result<Rules, sqlx::Error> {
    ensure_first(conn, first, now_ms).await?;
    match latest_version(conn).await? {
        Some(v) => rules_of(conn, &v).await,
        None => Ok(first_version(first.0, first.1)),
    }
}

/// The number of the rules version in force, in the caller's write
/// transaction (for ledger rows that use no preset).
pub async fn version_in_force(
    conn: &mut AnyConnection,
    first: (i64, i64),
    now_ms: i64,
) -> Result<i64, sqlx::Error> {
    ensure_first(conn, first, now_ms).await?;
    Ok(latest_version_number(conn).await?.unwrap_or(1))
}
