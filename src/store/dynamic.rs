//! Statements assembled at run time from optional filters: the list pages
//! (coupons, orders, templates, the audit log, the compensation ledger)
//! each add `AND ...` clauses for the filters a caller gave, then a keyset
//! condition and a bounded `LIMIT`. One builder numbers the parameters,
//! one runner binds the values, and [`explain`] shows the plan of exactly
//! the statement a page runs, so the index tests check what production
//! executes.

use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::{Backend, backend_of};

/// One bound value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    Text(String),
    Int(i64),
}

impl From<&str> for Bind {
    fn from(s: &str) -> Self {
        Bind::Text(s.to_string())
    }
}

impl From<String> for Bind {
    fn from(s: String) -> Self {
        Bind::Text(s)
    }
}

/// An id binds as its text.
macro_rules! id_bind {
    ($($ty:ty),*) => {$(
        impl From<&$ty> for Bind {
            fn from(id: &$ty) -> Self {
                Bind::Text(id.as_str().to_string())
            }
        }
    )*};
}

id_bind!(
    crate::domain::ids::OrderNo,
    crate::domain::ids::UserId,
    crate::domain::ids::CouponId,
    crate::domain::ids::TemplateId,
    crate::domain::ids::CampaignId
);

impl From<i64> for Bind {
    fn from(i: i64) -> Self {
        Bind::Int(i)
    }
}

/// A statement and its values, parameters numbered `$1, $2, ...` in the
/// order values were pushed (both stores accept `$n` through sqlx's Any
/// driver).
#[derive(Debug, Clone, Default)]
pub struct Sql {
    text: String,
    binds: Vec<Bind>,
}

impl Sql {
    /// Starts a statement with text that binds nothing.
    pub fn new(head: impl Into<String>) -> Self {
        Sql {
            text: head.into(),
            binds: Vec::new(),
        }
    }

    /// Appends text that binds nothing.
    pub fn push(&mut self, clause: &str) -> &mut Self {
        self.text.push_str(clause);
        self
    }

    /// Appends `clause`, every `?` in it standing for the one value `b`
    /// (so `(at < ? OR (at = ? AND id < ?))` needs three pushes, but
    /// `lower(name) >= ? AND lower(name) < ? || 'z'` style repeats of
    /// one value need one).
    pub fn push_bind(&mut self, clause: &str, b: impl Into<Bind>) -> &mut Self {
        self.binds.push(b.into());
        let parameter = format!("${}", self.binds.len());
        self.text.push_str(&clause.replace('?', &parameter));
        self
    }

    /// The statement text, for tests and logs (values are not in it).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The values in parameter order.
    pub fn binds(&self) -> &[Bind] {
        &self.binds
    }
}

/// The range of a b-tree index on a search key that holds exactly the keys
/// starting with `prefix`: `[prefix, successor)`, where the successor is
/// the prefix with its last character raised by one (trailing `char::MAX`
/// dropped first). Code point order is UTF-8 byte order, the order of
/// SQLite's `BINARY` and of the `COLLATE "C"` key columns on PostgreSQL, so
/// the same two bounds serve both stores. `None` for an empty prefix or one
/// of `char::MAX` only (no upper bound; the console never asks for those).
pub fn prefix_range(prefix: &str) -> Option<(String, String)> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some((prefix.to_string(), chars.into_iter().collect()));
        }
    }
    None
}

macro_rules! bind_each {
    ($query:expr, $binds:expr) => {{
        let mut query = $query;
        for b in $binds {
            query = match b {
                Bind::Text(s) => query.bind(s.clone()),
                Bind::Int(i) => query.bind(*i),
            };
        }
        query
    }};
}

/// Runs `sql` and maps every row.
pub async fn fetch_all<O>(conn: &mut AnyConnection, sql: &Sql) -> Result<Vec<O>, sqlx::Error>
where
    O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
{
    bind_each!(sqlx::query_as::<_, O>(&sql.text), &sql.binds)
        .fetch_all(conn)
        .await
}

/// Runs `sql`, which selects one row of one or more `i64` columns (a
/// count, sums), and returns that row.
pub async fn fetch_one<O>(conn: &mut AnyConnection, sql: &Sql) -> Result<O, sqlx::Error>
where
    O: for<'r> sqlx::FromRow<'r, AnyRow> + Send + Unpin,
{
    bind_each!(sqlx::query_as::<_, O>(&sql.text), &sql.binds)
        .fetch_one(conn)
        .await
}

/// The plan the database chooses for exactly `sql` with its values:
/// `EXPLAIN` on PostgreSQL, `EXPLAIN QUERY PLAN` on SQLite (the detail
/// column), one line per row. For the index tests and for diagnosing a slow
/// page.
pub async fn explain(conn: &mut AnyConnection, sql: &Sql) -> Result<Vec<String>, sqlx::Error> {
    match backend_of(conn) {
        Backend::Postgres => {
            let text = format!("EXPLAIN {}", sql.text);
            bind_each!(sqlx::query_scalar::<_, String>(&text), &sql.binds)
                .fetch_all(conn)
                .await
        }
        Backend::Sqlite => {
            let text = format!("EXPLAIN QUERY PLAN {}", sql.text);
            Ok(bind_each!(
                sqlx::query_as::<_, (i64, i64, i64, String)>(&text),
                &sql.binds
            )
            .fetch_all(conn)
            .await?
            .into_iter()
            .map(|r| r.3)
            .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_numbered_in_push_order_and_repeat_within_one_clause() {
        let mut sql = Sql::new("SELECT 1 FROM t WHERE 1 = 1");
        sql.push_bind(" AND a = ?", "x")
            .push_bind(" AND (b > ? OR b = ?)", 5)
            .push(" ORDER BY b")
            .push_bind(" LIMIT ?", 10);
        assert_eq!(
            sql.text(),
            "SELECT 1 FROM t WHERE 1 = 1 AND a = $1 AND (b > $2 OR b = $2) ORDER BY b LIMIT $3"
        );
        assert_eq!(
            sql.binds(),
            &[Bind::Text("x".into()), Bind::Int(5), Bind::Int(10)]
        );
    }
}
