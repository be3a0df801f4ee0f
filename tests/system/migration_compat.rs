//! Zero-downtime upgrades: during a rolling deploy the
//! previous release keeps running against the schema the new release has
//! migrated, so every migration must be additive (expand) while the
//! previous release still runs, and removals (contract) wait one release.
//!
//! `migrations/compat/<store>.sql` holds the previous release's queries:
//! every statement its service sent, recorded by `.ci/capture-sql`, and
//! the last migration version it shipped with. [`check_previous_release`]
//! compares the newest schema with that release:
//!
//! - every recorded statement must still prepare on the newest schema
//!   (parsed, every name and type resolved; never executed), which catches
//!   a dropped or renamed table or column, a changed type an expression no
//!   longer accepts, and on SQLite a unique index an `ON CONFLICT` relied
//!   on (PostgreSQL only looks for that one when it plans);
//! - every column the newest schema has as NOT NULL, on a table the
//!   previous release had, must have a default (or be generated) unless it
//!   was already NOT NULL then: the previous release's INSERTs do not name
//!   it, and such an INSERT still prepares but fails when it runs.
//!
//! The last tests apply a contracting change to a scratch database and
//! assert that the same check reports it, so the check is known to fail.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::{Connection, Executor};

use crate::common::{Store, TestDb, store};

/// The previous release as `.ci/capture-sql` recorded it for this store.
struct Recorded {
    /// The version of the last migration that release shipped with.
    last_migration: i64,
    /// Its statements, one per line of the file, without the final `;`.
    statements: Vec<String>,
}

impl Recorded {
    /// Reads `migrations/compat/<store>.sql` of the store under test.
    fn of_this_store() -> Recorded {
        let name = match store() {
            Store::Sqlite => "sqlite",
            Store::Postgres => "postgres",
        };
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations/compat")
            .join(format!("{name}.sql"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{} is readable ({e}); run .ci/capture-sql", path.display())
        });
        Recorded::parse(&text)
            .unwrap_or_else(|why| panic!("{} is malformed: {why}", path.display()))
    }

    /// Comment lines start with `--`; `-- last_migration: N` is required;
    /// every other non-empty line is one statement ending in `;`.
    fn parse(text: &str) -> Result<Recorded, String> {
        let mut last_migration = None;
        let mut statements = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if let Some(comment) = line.strip_prefix("--") {
                if let Some(v) = comment.trim().strip_prefix("last_migration:") {
                    let v = v
                        .trim()
                        .parse::<i64>()
                        .map_err(|e| format!("{line}: {e}"))?;
                    last_migration = Some(v);
                }
                continue;
            }
            let statement = line
                .strip_suffix(';')
                .ok_or_else(|| format!("a statement without its final ';': {line}"))?;
            statements.push(statement.to_string());
        }
        Ok(Recorded {
            last_migration: last_migration.ok_or("no `-- last_migration: N` line")?,
            statements,
        })
    }
}

/// The version of the newest migration of the store under test.
fn newest_migration() -> i64 {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(match store() {
            Store::Sqlite => "sqlite",
            Store::Postgres => "postgres",
        });
    std::fs::read_dir(&dir)
        .expect("the migrations folder is readable")
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().to_string_lossy().into_owned();
            name.split('_').next()?.parse::<i64>().ok()
        })
        .max()
        .expect("at least one migration")
}

/// What in the newest schema breaks the previous release.
#[derive(Debug, Default)]
struct Breaks {
    /// Recorded statements that no longer prepare, each with the database's
    /// reason.
    statements: Vec<(String, String)>,
    /// `table.column`: NOT NULL without a default on a table the previous
    /// release had, where that release's column was nullable or absent.
    not_null_without_default: Vec<String>,
}

impl Breaks {
    fn is_empty(&self) -> bool {
        self.statements.is_empty() && self.not_null_without_default.is_empty()
    }

    /// The report a failing test prints: each break and why.
    fn describe(&self) -> String {
        let mut out = String::new();
        if !self.statements.is_empty() {
            out.push_str(&format!(
                "{} statement(s) of the previous release no longer prepare on the newest schema:\n",
                self.statements.len()
            ));
            for (sql, why) in &self.statements {
                out.push_str(&format!("  {sql}\n    -> {why}\n"));
            }
        }
        if !self.not_null_without_default.is_empty() {
            out.push_str(
                "NOT NULL column(s) without a default that the previous release's INSERTs do not fill:\n",
            );
            for column in &self.not_null_without_default {
                out.push_str(&format!("  {column}\n"));
            }
        }
        out.push_str(
            "Expand now, contract one release later (docs/src/operations/upgrades.md, \"The rules\").",
        );
        out
    }
}

/// One column as the compatibility check needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Column {
    not_null: bool,
    /// A default, an identity or a generated value: an INSERT that does not
    /// name the column still fills it.
    filled_without_insert: bool,
}

/// A connection of the store's own driver, not `Any`: prepare there is the
/// database's own (SQLite compiles the statement, PostgreSQL parses it
/// and resolves its names and types), with no conversion of result types
/// on top.
enum Native {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl Native {
    /// A connection of its own to the test database `db`.
    async fn open(db: &TestDb) -> Native {
        match store() {
            Store::Sqlite => Native::Sqlite(
                sqlx::SqliteConnection::connect(&db.url)
                    .await
                    .expect("open the SQLite test database"),
            ),
            Store::Postgres => Native::Postgres(
                sqlx::PgConnection::connect(&db.url)
                    .await
                    .expect("open the PostgreSQL test database"),
            ),
        }
    }

    /// Prepares without executing; the database's error when it refuses.
    async fn prepare(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Native::Sqlite(c) => c.prepare(sql).await.map(drop).map_err(|e| reason(&e).1),
            Native::Postgres(c) => prepare_on_postgres(c, sql).await,
        }
    }

    /// Runs a change the test makes on purpose; it must succeed.
    async fn execute(&mut self, sql: &str) {
        let done = match self {
            Native::Sqlite(c) => c.execute(sql).await.map(drop),
            Native::Postgres(c) => c.execute(sql).await.map(drop),
        };
        done.unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Every column of every table but sqlx's own, by (table, column).
    async fn columns(&mut self) -> BTreeMap<(String, String), Column> {
        let mut out = BTreeMap::new();
        match self {
            Native::Sqlite(c) => {
                // hidden: 2 and 3 are generated columns (virtual, stored).
                let rows: Vec<(String, String, i64, Option<String>, i64)> = sqlx::query_as(
                    "SELECT m.name, p.name, p.\"notnull\", p.dflt_value, p.hidden
                     FROM sqlite_master m JOIN pragma_table_xinfo(m.name) p
                     WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%'
                       AND m.name <> '_sqlx_migrations'",
                )
                .fetch_all(&mut *c)
                .await
                .expect("read SQLite's columns");
                for (table, column, not_null, default, hidden) in rows {
                    let filled = default.is_some() || hidden == 2 || hidden == 3;
                    out.insert(
                        (table, column),
                        Column {
                            not_null: not_null != 0,
                            filled_without_insert: filled,
                        },
                    );
                }
            }
            Native::Postgres(c) => {
                let rows: Vec<(String, String, String, Option<String>, String, String)> =
                    sqlx::query_as(
                        "SELECT c.table_name::text, c.column_name::text, c.is_nullable::text,
                                c.column_default::text, c.is_generated::text, c.is_identity::text
                         FROM information_schema.columns c
                         JOIN information_schema.tables t
                           ON t.table_schema = c.table_schema AND t.table_name = c.table_name
                         WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
                           AND c.table_name <> '_sqlx_migrations'",
                    )
                    .fetch_all(&mut *c)
                    .await
                    .expect("read PostgreSQL's columns");
                for (table, column, nullable, default, generated, identity) in rows {
                    let filled = default.is_some() || generated == "ALWAYS" || identity == "YES";
                    out.insert(
                        (table, column),
                        Column {
                            not_null: nullable == "NO",
                            filled_without_insert: filled,
                        },
                    );
                }
            }
        }
        out
    }

    /// Closes the connection; a failure to say goodbye changes nothing.
    async fn close(self) {
        let _ = match self {
            Native::Sqlite(c) => c.close().await,
            Native::Postgres(c) => c.close().await,
        };
    }
}

/// The database's error code and message of a failed statement.
fn reason(e: &sqlx::Error) -> (Option<String>, String) {
    match e {
        sqlx::Error::Database(db) => (db.code().map(|c| c.into_owned()), db.message().to_string()),
        other => (None, other.to_string()),
    }
}

/// The types the service binds through sqlx's `Any` driver (it binds
/// integers, text, booleans, floats and bytes): the candidates for a
/// parameter PostgreSQL cannot type from the statement alone.
const PG_PARAMETER_TYPES: [u32; 5] = [
    20,  // int8
    25,  // text
    16,  // bool
    701, // float8
    17,  // bytea
];

/// At most this many parameters of one statement are typed by guessing.
const PG_GUESSED_PARAMETERS_MAX: usize = 32;

/// The `$n` of PostgreSQL's "could not determine data type of parameter
/// $n" (SQLSTATE 42P18 indeterminate_datatype, or 42P08
/// ambiguous_parameter when the parameter is met in `$n IS NULL`).
fn indeterminate_parameter(code: &Option<String>, message: &str) -> Option<usize> {
    if !matches!(code.as_deref(), Some("42P18") | Some("42P08")) {
        return None;
    }
    message.rsplit('$').next()?.trim().parse().ok()
}

/// Prepares `sql` on PostgreSQL (Parse and Describe, never Execute).
///
/// The service's Parse names every parameter's type (sqlx sends the type
/// of each bound value); this Parse has no values, so PostgreSQL must infer
/// them, and cannot for a parameter first met in `$5 IS NULL`. Such a
/// parameter is declared as each type the service can bind, in turn, until
/// the statement prepares: the statement is compatible when some binding
/// the previous release could send still prepares. Table and column names
/// are resolved either way. Any other error is the statement's.
async fn prepare_on_postgres(conn: &mut sqlx::PgConnection, sql: &str) -> Result<(), String> {
    use sqlx::postgres::PgTypeInfo;
    use sqlx::postgres::types::Oid;

    let mut declared: Vec<u32> = Vec::new();
    let attempt = |declared: &[u32]| -> Vec<PgTypeInfo> {
        declared
            .iter()
            .map(|&oid| PgTypeInfo::with_oid(Oid(oid)))
            .collect()
    };
    let first = match conn.prepare_with(sql, &attempt(&declared)).await {
        Ok(_) => return Ok(()),
        Err(e) => reason(&e),
    };
    let mut last = first.clone();
    for _ in 0..PG_GUESSED_PARAMETERS_MAX {
        let Some(n) = indeterminate_parameter(&last.0, &last.1).filter(|&n| n >= 1) else {
            return Err(first.1);
        };
        if declared.len() < n {
            declared.resize(n, 0);
        }
        let mut next = None;
        for oid in PG_PARAMETER_TYPES {
            declared[n - 1] = oid;
            match conn.prepare_with(sql, &attempt(&declared)).await {
                Ok(_) => return Ok(()),
                Err(e) => {
                    let (code, message) = reason(&e);
                    // Another parameter is the next one to type: keep this
                    // guess and go on with that one.
                    if indeterminate_parameter(&code, &message).is_some_and(|m| m != n) {
                        next = Some((code, message));
                        break;
                    }
                }
            }
        }
        match next {
            Some(e) => last = e,
            None => return Err(first.1),
        }
    }
    Err(first.1)
}

/// The compatibility check: what in `newest`'s schema breaks the release
/// whose schema is `previous` and whose statements are `statements`.
async fn check_previous_release(
    previous: &TestDb,
    newest: &TestDb,
    statements: &[String],
) -> Breaks {
    let mut breaks = Breaks::default();
    let mut conn = Native::open(newest).await;
    for sql in statements {
        if let Err(why) = conn.prepare(sql).await {
            breaks.statements.push((sql.clone(), why));
        }
    }
    let now = conn.columns().await;
    conn.close().await;

    let mut then_conn = Native::open(previous).await;
    let then = then_conn.columns().await;
    then_conn.close().await;
    let tables_then: BTreeSet<&str> = then.keys().map(|(t, _)| t.as_str()).collect();

    for ((table, column), col) in &now {
        if !tables_then.contains(table.as_str()) || !col.not_null || col.filled_without_insert {
            continue;
        }
        let was_not_null = then
            .get(&(table.clone(), column.clone()))
            .is_some_and(|c| c.not_null);
        if !was_not_null {
            breaks
                .not_null_without_default
                .push(format!("{table}.{column}"));
        }
    }
    breaks
}

#[tokio::test]
async fn the_previous_release_queries_still_run_on_the_newest_schema() {
    let recorded = Recorded::of_this_store();
    assert!(
        recorded.statements.len() >= 100,
        "only {} recorded statements: the capture missed the service (run .ci/capture-sql)",
        recorded.statements.len()
    );
    assert!(
        recorded.last_migration <= newest_migration(),
        "the recorded release ends at migration {}, past the newest one here ({})",
        recorded.last_migration,
        newest_migration()
    );
    let previous = TestDb::fresh_through(1, recorded.last_migration).await;
    let newest = TestDb::fresh_with(1).await;
    let breaks = check_previous_release(&previous, &newest, &recorded.statements).await;
    assert!(breaks.is_empty(), "{}", breaks.describe());
}

/// The contracting change the first break test makes: a rename done in one
/// step instead of three releases.
const RENAMED_COLUMN: &str = "claim_ends_at";

#[tokio::test]
async fn a_column_renamed_in_one_step_is_reported_with_every_statement_that_used_it() {
    let recorded = Recorded::of_this_store();
    let users: BTreeSet<&String> = recorded
        .statements
        .iter()
        .filter(|s| s.contains(RENAMED_COLUMN))
        .collect();
    assert!(
        !users.is_empty(),
        "the recorded release has no statement using templates.{RENAMED_COLUMN}; pick a column it uses"
    );
    let previous = TestDb::fresh_through(1, recorded.last_migration).await;
    let broken = TestDb::fresh_with(1).await;
    let mut conn = Native::open(&broken).await;
    conn.execute(&format!(
        "ALTER TABLE templates RENAME COLUMN {RENAMED_COLUMN} TO claim_closes_at"
    ))
    .await;
    conn.close().await;

    let breaks = check_previous_release(&previous, &broken, &recorded.statements).await;

    let failed: BTreeSet<&String> = breaks.statements.iter().map(|(s, _)| s).collect();
    assert_eq!(
        failed,
        users,
        "exactly the statements using the old name fail:\n{}",
        breaks.describe()
    );
    for (sql, why) in &breaks.statements {
        assert!(
            why.contains(RENAMED_COLUMN),
            "the reason names the missing column: {sql} -> {why}"
        );
    }
    assert!(breaks.not_null_without_default.is_empty(), "{breaks:?}");
}

/// Adds `channel TEXT <constraint>` to `templates` on `db`. PostgreSQL adds
/// it in place (the table is empty). SQLite refuses to add a NOT NULL
/// column without a default, so a release that wants one rebuilds the
/// table, as migration 0020 rebuilt the ledger; this does the same.
async fn add_template_column(db: &TestDb, constraint: &str) {
    let mut conn = Native::open(db).await;
    match &mut conn {
        Native::Postgres(_) => {
            conn.execute(&format!(
                "ALTER TABLE templates ADD COLUMN channel TEXT {constraint}"
            ))
            .await;
        }
        Native::Sqlite(c) => {
            let (create,): (String,) = sqlx::query_as(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'templates'",
            )
            .fetch_one(&mut *c)
            .await
            .expect("the templates table's definition");
            let end = create.rfind(')').expect("a CREATE TABLE ends in ')'");
            let rebuilt = format!(
                "{}, channel TEXT {constraint}{}",
                &create[..end],
                &create[end..]
            );
            conn.execute("DROP TABLE templates").await;
            conn.execute(&rebuilt).await;
        }
    }
    conn.close().await;
}

#[tokio::test]
async fn a_not_null_column_without_a_default_is_reported_though_every_statement_still_prepares() {
    let recorded = Recorded::of_this_store();
    let previous = TestDb::fresh_through(1, recorded.last_migration).await;
    let broken = TestDb::fresh_with(1).await;
    add_template_column(&broken, "NOT NULL").await;

    let breaks = check_previous_release(&previous, &broken, &recorded.statements).await;

    assert_eq!(
        breaks.not_null_without_default,
        vec!["templates.channel".to_string()],
        "{}",
        breaks.describe()
    );
    // The previous release's INSERT INTO templates does not name the new
    // column: it prepares, and would fail only when it runs.
    assert!(
        breaks.statements.is_empty(),
        "prepare alone cannot see this break: {}",
        breaks.describe()
    );
}

#[tokio::test]
async fn a_not_null_column_with_a_default_is_an_expand_step_and_passes() {
    let recorded = Recorded::of_this_store();
    let previous = TestDb::fresh_through(1, recorded.last_migration).await;
    let expanded = TestDb::fresh_with(1).await;
    add_template_column(&expanded, "NOT NULL DEFAULT 'web'").await;

    let breaks = check_previous_release(&previous, &expanded, &recorded.statements).await;

    assert!(breaks.is_empty(), "{}", breaks.describe());
}

/// The last migration of the release before 0014 (commit e090031).
const BEFORE_0014: i64 = 13;

/// The statements of `src/store/reconcile.rs` at commit e090031, the
/// release before migration 0014, that use `reconcile_findings`' text
/// columns: copied from git history, normalized as the capture does.
const FINDINGS_BEFORE_0014: [&str; 4] = [
    "INSERT INTO reconcile_findings (run_id, kind, coupon_id, order_no, user_id, template_id,
         stock_claimed, stock_issued, detail, detail_zh, fix)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    "SELECT id, run_id, kind, coupon_id, order_no, user_id, template_id, stock_claimed, stock_issued, detail, detail_zh, fix, repaired_at, repaired_by, repair_note FROM reconcile_findings WHERE run_id = $1 AND kind = $2 ORDER BY id LIMIT $3",
    "SELECT id, run_id, kind, coupon_id, order_no, user_id, template_id, stock_claimed, stock_issued, detail, detail_zh, fix, repaired_at, repaired_by, repair_note FROM reconcile_findings WHERE run_id = $1 ORDER BY kind, id LIMIT $2",
    "SELECT id, run_id, kind, coupon_id, order_no, user_id, template_id, stock_claimed, stock_issued, detail, detail_zh, fix, repaired_at, repaired_by, repair_note FROM reconcile_findings WHERE id = $1",
];

/// Migration 0014 dropped `detail` and `detail_zh` in the release that
/// replaced them, a contract step in an expanding release: the check
/// refuses it with every statement of the release before that used them.
#[tokio::test]
async fn the_check_refuses_migration_0014_which_dropped_columns_the_release_before_still_used() {
    let statements: Vec<String> = FINDINGS_BEFORE_0014
        .iter()
        .map(|s| couponkeeper::store::capture::normalize(s))
        .collect();
    let previous = TestDb::fresh_through(1, BEFORE_0014).await;
    let with_0014 = TestDb::fresh_through(1, BEFORE_0014 + 1).await;

    let breaks = check_previous_release(&previous, &with_0014, &statements).await;

    let failed: Vec<&String> = breaks.statements.iter().map(|(s, _)| s).collect();
    assert_eq!(
        failed,
        statements.iter().collect::<Vec<_>>(),
        "{}",
        breaks.describe()
    );
    for (sql, why) in &breaks.statements {
        assert!(why.contains("detail"), "{sql} -> {why}");
    }
    // Its new NOT NULL columns came with defaults.
    assert!(
        breaks.not_null_without_default.is_empty(),
        "{}",
        breaks.describe()
    );
}

#[test]
fn a_recorded_file_without_its_migration_version_is_refused() {
    assert!(Recorded::parse("SELECT 1;\n").is_err());
    assert!(Recorded::parse("-- last_migration: 3\nSELECT 1\n").is_err());
    let ok = Recorded::parse("-- note\n-- last_migration: 3\nSELECT 1;\n\nSELECT 2;\n")
        .expect("a well-formed file");
    assert_eq!(ok.last_migration, 3);
    assert_eq!(ok.statements, vec!["SELECT 1", "SELECT 2"]);
}
