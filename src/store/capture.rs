//! Opt-in recording of every SQL statement the service sends, per store:
//! "a release's queries" for the expand/contract check of migrations
//! (tests/system/migration_compat.rs, `migrations/compat/`).
//!
//! Why at this point: all of the service's SQL runs inside [`super::Db::write`]
//! or [`super::Db::read`], which run the caller's work inside a trace-level
//! span named [`TX_SPAN`] carrying the store's name. sqlx reports each
//! statement it runs as a `tracing` event (target `sqlx::query`) with the
//! statement text, inside the caller's span (on SQLite too: its worker
//! thread enters the span of the caller that sent the command). So a
//! [`SqlCapture`] layer that keeps the `sqlx::query` events inside that span
//! sees exactly the service's statements, and not the migrator's, the
//! connection set-up's (`PRAGMA`s), `BEGIN`/`COMMIT`, or the SQL a test
//! sends on its own to check rows. Nothing changes in the store's code, and
//! without a subscriber the span costs a disabled-callsite check.
//!
//! Off unless `COUPONKEEPER_CAPTURE_SQL=<dir>` is set: the test harness then
//! installs the layer (see `tests/common/mod.rs`), and each process appends
//! the distinct statements it saw, one [`normalize`]d statement a line, to
//! `<dir>/<store>.<pid>.sql`. `.ci/capture-sql` runs tests that way and
//! merges the files into `migrations/compat/<store>.sql`.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The variable that turns capture on; its value is the directory to write.
pub const CAPTURE_ENV: &str = "COUPONKEEPER_CAPTURE_SQL";

/// The name of the span [`super::Db::write`] and [`super::Db::read`] run the
/// caller's work in; its `store` field names the backend.
pub const TX_SPAN: &str = "store_tx";

/// The `tracing` target of sqlx's statement events.
const QUERY_TARGET: &str = "sqlx::query";

/// The store a [`TX_SPAN`] span belongs to, kept in the span's extensions.
struct SpanStore(&'static str);

/// A `tracing` layer that appends each distinct service statement to a file
/// per store and process (see the module documentation).
pub struct SqlCapture {
    dir: PathBuf,
    /// (store, normalized statement) pairs already written by this process.
    seen: Mutex<HashSet<(&'static str, String)>>,
}

impl SqlCapture {
    /// A capture writing into `dir`, created when missing.
    pub fn new(dir: &Path) -> std::io::Result<SqlCapture> {
        std::fs::create_dir_all(dir)?;
        Ok(SqlCapture {
            dir: dir.to_path_buf(),
            seen: Mutex::new(HashSet::new()),
        })
    }

    /// The capture [`CAPTURE_ENV`] asks for, if it is set and not empty.
    pub fn from_env() -> std::io::Result<Option<SqlCapture>> {
        match std::env::var_os(CAPTURE_ENV) {
            Some(dir) if !dir.is_empty() => SqlCapture::new(Path::new(&dir)).map(Some),
            _ => Ok(None),
        }
    }

    /// Installs [`SqlCapture::from_env`] as the process's global `tracing`
    /// subscriber, if capture is asked for. True when it was installed;
    /// false when capture is off or another subscriber was installed first.
    /// For test processes, which install no subscriber of their own.
    pub fn install_from_env() -> std::io::Result<bool> {
        use tracing_subscriber::layer::SubscriberExt;
        match SqlCapture::from_env()? {
            Some(capture) => {
                let subscriber = tracing_subscriber::registry().with(capture);
                Ok(tracing::subscriber::set_global_default(subscriber).is_ok())
            }
            None => Ok(false),
        }
    }

    /// Writes `sql` to the store's file unless this process already did.
    fn record(&self, store: &'static str, sql: &str) {
        let line = normalize(sql);
        if line.is_empty() || is_not_a_release_query(&line) {
            return;
        }
        // A poisoned set only means another thread panicked mid-insert; the
        // set itself is still usable.
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if !seen.insert((store, line.clone())) {
            return;
        }
        let path = self.dir.join(format!("{store}.{}.sql", std::process::id()));
        // One write per line on an append-only file: lines of the threads of
        // this process never interleave. A failure loses one line of a
        // capture run; it is reported on stderr because the capture has no
        // other caller to hand it to, and is never retried.
        let written = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{line};\n").as_bytes()));
        if let Err(e) = written {
            eprintln!("sql capture: cannot append to {}: {e}", path.display());
        }
    }
}

/// Statements the service runs that say nothing about the schema a release
/// needs: query plans the index checks ask for.
fn is_not_a_release_query(line: &str) -> bool {
    let head = line
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase();
    head == "EXPLAIN"
}

impl<S> Layer<S> for SqlCapture
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    /// Only sqlx's statement events and the store's transaction spans: as
    /// the only layer of a test process's subscriber, everything else stays
    /// disabled at its callsite.
    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        metadata.target() == QUERY_TARGET || (metadata.is_span() && metadata.name() == TX_SPAN)
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != TX_SPAN {
            return;
        }
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let store = match fields.store.as_deref() {
            Some("postgres") => "postgres",
            Some("sqlite") => "sqlite",
            _ => return,
        };
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanStore(store));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() != QUERY_TARGET {
            return;
        }
        let Some(scope) = ctx.event_scope(event) else {
            return;
        };
        let store = scope
            .into_iter()
            .find_map(|span| span.extensions().get::<SpanStore>().map(|s| s.0));
        let Some(store) = store else {
            return;
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        // sqlx leaves `db.statement` empty when the summary (the first four
        // words) already is the whole statement.
        let sql = match fields.statement.as_deref().map(str::trim) {
            Some(statement) if !statement.is_empty() => statement.to_string(),
            _ => fields.summary.unwrap_or_default(),
        };
        self.record(store, &sql);
    }
}

/// The fields of sqlx's statement event and of the store's span.
#[derive(Default)]
struct Fields {
    summary: Option<String>,
    statement: Option<String>,
    store: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "summary" => &mut self.summary,
            "db.statement" => &mut self.statement,
            "store" => &mut self.store,
            _ => return,
        };
        *slot = Some(value.to_string());
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
}

/// One statement on one line: comments removed, each run of whitespace
/// outside quotes one space, a trailing `;` dropped. Quoted text is kept
/// as it is, except that a line break inside it becomes a space, so the
/// line stays one line; such a statement still prepares the same way.
pub fn normalize(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut pending_space = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                if pending_space && !out.is_empty() {
                    out.push(' ');
                }
                pending_space = false;
                out.push(c);
                // Inside quotes up to the closing one; a doubled quote is an
                // escaped quote and stays inside.
                while let Some(q) = chars.next() {
                    if q == c {
                        out.push(q);
                        if chars.peek() == Some(&c) {
                            chars.next();
                            out.push(c);
                            continue;
                        }
                        break;
                    }
                    out.push(if q == '\n' || q == '\r' { ' ' } else { q });
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        break;
                    }
                }
                pending_space = true;
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = '\0';
                for skipped in chars.by_ref() {
                    if last == '*' && skipped == '/' {
                        break;
                    }
                    last = skipped;
                }
                pending_space = true;
            }
            c if c.is_whitespace() => pending_space = true,
            c => {
                if pending_space && !out.is_empty() {
                    out.push(' ');
                }
                pending_space = false;
                out.push(c);
            }
        }
    }
    let trimmed = out.trim_end_matches([';', ' ']);
    trimmed.to_string()
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn a_statement_becomes_one_line_without_comments() {
        let sql = "SELECT a,\n       b -- the second\n  FROM t /* note */ WHERE c = 'x\n  y' AND d = 'it''s';\n";
        assert_eq!(
            normalize(sql),
            "SELECT a, b FROM t WHERE c = 'x   y' AND d = 'it''s'"
        );
    }

    #[test]
    fn dashes_inside_quotes_are_not_a_comment() {
        assert_eq!(
            normalize("SELECT '--not' ,  \"a--b\"  FROM t"),
            "SELECT '--not' , \"a--b\" FROM t"
        );
    }
}
