//! Driving load and reading back what it did: `wrk` against the server,
//! `pgbench` for PostgreSQL's bare-SQL baselines, and the same pgbench
//! scripts run through sqlx for SQLite's (pgbench speaks only PostgreSQL).
//! Every run is bounded in time (`seconds`) and aims at 127.0.0.1 only.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use sqlx::{AnyConnection, Column, Row};

use couponkeeper::store::Db;

use crate::Result;
use crate::stats::{ms, percentile};

/// What one timed run did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Measure {
    /// Requests answered (HTTP) or transactions run (SQL).
    pub(crate) requests: u64,
    pub(crate) seconds: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    /// HTTP answers outside 2xx plus socket errors; failed transactions.
    pub(crate) failed: u64,
}

impl Measure {
    pub(crate) fn rate(&self) -> f64 {
        self.requests as f64 / self.seconds.max(f64::MIN_POSITIVE)
    }
}

/// Most wrk threads / pgbench threads: one per core of the 2-core machine.
const MAX_LOAD_THREADS: usize = 2;

pub(crate) fn load_threads(connections: usize) -> usize {
    connections.clamp(1, MAX_LOAD_THREADS)
}

/// Runs `wrk` with a script of `bench/` for `seconds` at `connections`
/// connections (`load_threads` threads) against `base_url` (loopback), with
/// `env` for the script; parses the script's `CKRESULT` line.
pub(crate) async fn wrk(
    script: &Path,
    base_url: &str,
    connections: usize,
    seconds: u64,
    env: Vec<(String, String)>,
) -> Result<Measure> {
    if !base_url.starts_with("http://127.0.0.1:") {
        return Err(format!("wrk targets 127.0.0.1 only, not {base_url}").into());
    }
    let threads = load_threads(connections);
    let mut cmd = Command::new("wrk");
    cmd.arg("-t")
        .arg(threads.to_string())
        .arg("-c")
        .arg(connections.to_string())
        .arg("-d")
        .arg(format!("{seconds}s"))
        .args(["--timeout", "10s", "-s"])
        .arg(script)
        .arg(base_url)
        .env("CK_THREADS", threads.to_string());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await?
        .map_err(|e| format!("cannot run wrk ({e}); install it with `apt-get install -y wrk`"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "wrk failed ({}): {}{}",
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("CKRESULT "))
        .ok_or_else(|| format!("wrk printed no CKRESULT line:\n{stdout}"))?;
    let fields: HashMap<&str, u64> = line
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| v.parse().ok().map(|v| (k, v)))
        .collect();
    let get = |k: &str| {
        fields
            .get(k)
            .copied()
            .ok_or_else(|| format!("CKRESULT without {k}: {line}"))
    };
    Ok(Measure {
        requests: get("requests")?,
        seconds: get("duration_us")? as f64 / 1e6,
        p50_ms: get("p50_us")? as f64 / 1000.0,
        p99_ms: get("p99_us")? as f64 / 1000.0,
        failed: get("non2xx")? + get("socket_errors")?,
    })
}

/// Runs `pgbench` with a custom script of `bench/` on `database_url` for
/// `seconds` at `connections` clients, prepared statements, with the
/// variables `defines` (`-D`); latencies from its per-transaction log,
/// written into `log_dir`.
pub(crate) async fn pgbench(
    script: &Path,
    database_url: &str,
    connections: usize,
    seconds: u64,
    defines: &[(&str, String)],
    log_dir: &Path,
) -> Result<Measure> {
    if !database_url.contains("@127.0.0.1") && !database_url.contains("@localhost") {
        return Err(format!("pgbench runs against a local server only, not {database_url}").into());
    }
    let prefix = log_dir.join(format!(
        "pgbench-{}",
        script
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("script")
    ));
    clear_logs(&prefix)?;
    let mut cmd = Command::new("pgbench");
    cmd.args(["-n", "-M", "prepared", "--log"])
        .arg(format!("--log-prefix={}", prefix.display()))
        .arg("-c")
        .arg(connections.to_string())
        .arg("-j")
        .arg(load_threads(connections).to_string())
        .arg("-T")
        .arg(seconds.to_string())
        .arg("-f")
        .arg(script);
    for (k, v) in defines {
        cmd.arg("-D").arg(format!("{k}={v}"));
    }
    cmd.arg(database_url);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await?
        .map_err(|e| format!("cannot run pgbench ({e}); it comes with postgresql-client"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("pgbench failed ({}): {stdout}{stderr}", out.status).into());
    }
    let number = |label: &str| -> Option<f64> {
        stdout.lines().find_map(|l| {
            l.trim()
                .strip_prefix(label)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.split('/').next())
                .and_then(|n| n.parse().ok())
        })
    };
    let processed = number("number of transactions actually processed:")
        .ok_or_else(|| format!("pgbench printed no transaction count:\n{stdout}"))?;
    let failed = number("number of failed transactions:").unwrap_or(0.0);
    let tps = number("tps =").ok_or_else(|| format!("pgbench printed no tps:\n{stdout}"))?;
    let mut latencies = read_pgbench_logs(&prefix)?;
    clear_logs(&prefix)?;
    latencies.sort_unstable();
    Ok(Measure {
        requests: processed as u64,
        // pgbench's tps excludes connecting; the seconds follow from it.
        seconds: processed / tps.max(f64::MIN_POSITIVE),
        p50_ms: ms(percentile(&latencies, 0.50)),
        p99_ms: ms(percentile(&latencies, 0.99)),
        failed: failed as u64,
    })
}

/// The files pgbench wrote under `prefix` (one per thread:
/// `prefix.<pid>` and `prefix.<pid>.<n>`).
fn pgbench_logs(prefix: &Path) -> Result<Vec<PathBuf>> {
    let dir = prefix.parent().ok_or("log prefix without a directory")?;
    let stem = prefix
        .file_name()
        .and_then(|s| s.to_str())
        .ok_or("log prefix without a name")?;
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("");
        if name.starts_with(&format!("{stem}.")) {
            out.push(path);
        }
    }
    Ok(out)
}

fn clear_logs(prefix: &Path) -> Result<()> {
    for p in pgbench_logs(prefix)? {
        std::fs::remove_file(&p)?;
    }
    Ok(())
}

/// Latencies of pgbench's log lines (`client tx latency_us script epoch
/// us`); a failed transaction's latency field is a word, not a number.
fn read_pgbench_logs(prefix: &Path) -> Result<Vec<Duration>> {
    let mut out = Vec::new();
    for p in pgbench_logs(prefix)? {
        let text = std::fs::read_to_string(&p)?;
        out.extend(text.lines().filter_map(|l| {
            l.split_whitespace()
                .nth(2)
                .and_then(|f| f.parse::<u64>().ok())
                .map(Duration::from_micros)
        }));
    }
    Ok(out)
}

/// A pgbench script as sqlx runs it on SQLite: its statements with
/// `:name` turned into `$n`, `FOR UPDATE` dropped (a SQLite write
/// transaction holds the database lock), `BEGIN`/`COMMIT` left to the
/// transaction the runner opens, and the `\gset` / `\if :var > 0` /
/// `\endif` subset pgbench scripts here use. `\set` lines are pgbench's
/// way to number rows; [`run_script`] gives the same variables (`i`, a row
/// no client repeats; `r`, a random row; `client_id`) itself.
#[derive(Debug, Clone)]
pub(crate) struct Script {
    steps: Vec<Step>,
    writes: bool,
}

#[derive(Debug, Clone)]
enum Step {
    Sql {
        text: String,
        params: Vec<String>,
        gset: bool,
        select: bool,
    },
    /// Runs the steps up to the matching `EndIf` only when the variable is
    /// above zero.
    IfPositive(String),
    EndIf,
}

/// A variable's value.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Int(i64),
    Text(String),
}

impl Script {
    pub(crate) fn load(path: &Path) -> Result<Script> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Script::parse(&text).map_err(|e| format!("{}: {e}", path.display()).into())
    }

    fn parse(text: &str) -> Result<Script> {
        let mut steps = Vec::new();
        let mut buf = String::new();
        for raw in text.lines() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with("--") {
                continue;
            }
            if buf.is_empty() {
                if line.starts_with("\\set") {
                    continue;
                }
                if let Some(rest) = line.strip_prefix("\\if") {
                    let var = rest
                        .trim()
                        .strip_prefix(':')
                        .and_then(|r| r.strip_suffix("> 0"))
                        .map(str::trim)
                        .ok_or_else(|| format!("only `\\if :var > 0` is supported: {line}"))?;
                    steps.push(Step::IfPositive(var.to_string()));
                    continue;
                }
                if line == "\\endif" {
                    steps.push(Step::EndIf);
                    continue;
                }
                let upper = line.to_ascii_uppercase();
                if upper == "BEGIN;" || upper == "COMMIT;" {
                    continue;
                }
            }
            if !buf.is_empty() {
                buf.push(' ');
            }
            buf.push_str(line);
            let gset = line.ends_with("\\gset");
            if gset || line.ends_with(';') {
                let stmt = buf
                    .trim_end_matches("\\gset")
                    .trim()
                    .trim_end_matches(';')
                    .replace(" FOR UPDATE", "");
                let (text, params) = numbered_params(&stmt);
                let select = stmt.to_ascii_uppercase().starts_with("SELECT");
                steps.push(Step::Sql {
                    text,
                    params,
                    gset,
                    select,
                });
                buf.clear();
            }
        }
        if !buf.trim().is_empty() {
            return Err(format!("statement without `;`: {buf}").into());
        }
        let writes = steps
            .iter()
            .any(|s| matches!(s, Step::Sql { select: false, .. }));
        Ok(Script { steps, writes })
    }

    /// Runs the steps once on `c` with `vars`.
    async fn run(
        &self,
        c: &mut AnyConnection,
        vars: &mut HashMap<String, Value>,
    ) -> Result<(), sqlx::Error> {
        let mut skipping = false;
        for step in &self.steps {
            match step {
                Step::IfPositive(var) => {
                    skipping = !matches!(vars.get(var), Some(Value::Int(n)) if *n > 0);
                }
                Step::EndIf => skipping = false,
                Step::Sql { .. } if skipping => {}
                Step::Sql {
                    text,
                    params,
                    gset,
                    select,
                } => {
                    let mut q = sqlx::query(text);
                    for p in params {
                        q = match vars.get(p) {
                            Some(Value::Int(n)) => q.bind(*n),
                            Some(Value::Text(t)) => q.bind(t.clone()),
                            None => {
                                return Err(sqlx::Error::Protocol(format!(
                                    "script variable :{p} is not set"
                                )));
                            }
                        };
                    }
                    if *gset {
                        let row = q.fetch_one(&mut *c).await?;
                        for col in row.columns() {
                            let v: i64 = row.try_get(col.ordinal())?;
                            vars.insert(col.name().to_string(), Value::Int(v));
                        }
                    } else if *select {
                        q.fetch_all(&mut *c).await?;
                    } else {
                        q.execute(&mut *c).await?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// `:name` (not `::type`) replaced by `$1, $2, …`, one number per name.
fn numbered_params(sql: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(sql.len());
    let mut names: Vec<String> = Vec::new();
    let chars: Vec<char> = sql.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev_colon = i > 0 && chars[i - 1] == ':';
        let next_ident = chars
            .get(i + 1)
            .is_some_and(|n| n.is_ascii_lowercase() || *n == '_');
        if c == ':' && !prev_colon && next_ident {
            let mut j = i + 1;
            while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let name: String = chars[i + 1..j].iter().collect();
            let n = match names.iter().position(|x| *x == name) {
                Some(p) => p + 1,
                None => {
                    names.push(name);
                    names.len()
                }
            };
            out.push_str(&format!("${n}"));
            i = j;
        } else {
            out.push(c);
            i += 1;
        }
    }
    (out, names)
}

/// Runs `script` through sqlx on `db` for `seconds` at `connections`
/// concurrent tasks, each run one transaction (a write transaction through
/// [`Db::write`] when the script writes, else a read one), with the
/// variables `fixed` plus `i` (1, 2, … over all tasks: a row no run
/// repeats), `r` (random in `1..=random_rows`) and `client_id`.
pub(crate) async fn run_script(
    db: &Db,
    script: &Script,
    connections: usize,
    seconds: u64,
    fixed: &[(&str, Value)],
    random_rows: i64,
) -> Result<Measure> {
    let script = Arc::new(script.clone());
    let fixed: Arc<HashMap<String, Value>> = Arc::new(
        fixed
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    );
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let mut tasks = Vec::with_capacity(connections);
    for client in 0..connections {
        let (db, script, fixed, next) = (db.clone(), script.clone(), fixed.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut failed = 0u64;
            let mut first_error = None;
            // Bounded by the deadline.
            while Instant::now() < deadline {
                let mut vars = (*fixed).clone();
                let i = next.fetch_add(1, Ordering::Relaxed) + 1;
                vars.insert("i".into(), Value::Int(i64::try_from(i).unwrap_or(i64::MAX)));
                vars.insert(
                    "r".into(),
                    Value::Int(rand::rng().random_range(1..=random_rows.max(1))),
                );
                vars.insert(
                    "client_id".into(),
                    Value::Int(i64::try_from(client).unwrap_or(0)),
                );
                let t0 = Instant::now();
                let s = script.clone();
                let result: Result<(), sqlx::Error> = if script.writes {
                    db.write(move |c| {
                        let s = s.clone();
                        let mut vars = vars.clone();
                        Box::pin(async move { s.run(c, &mut vars).await })
                    })
                    .await
                } else {
                    db.read(move |c| {
                        let s = s.clone();
                        let mut vars = vars.clone();
                        Box::pin(async move { s.run(c, &mut vars).await })
                    })
                    .await
                };
                match result {
                    Ok(()) => latencies.push(t0.elapsed()),
                    Err(e) => {
                        failed += 1;
                        first_error.get_or_insert(e.to_string());
                    }
                }
            }
            (latencies, failed, first_error)
        }));
    }
    let mut latencies = Vec::new();
    let mut failed = 0;
    let mut first_error = None;
    for t in tasks {
        let (l, f, e) = t.await?;
        latencies.extend(l);
        failed += f;
        if let Some(e) = e {
            first_error.get_or_insert(e);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    if let Some(e) = first_error {
        eprintln!("    {failed} transaction(s) failed, first: {e}");
    }
    latencies.sort_unstable();
    Ok(Measure {
        requests: latencies.len() as u64,
        seconds,
        p50_ms: ms(percentile(&latencies, 0.50)),
        p99_ms: ms(percentile(&latencies, 0.99)),
        failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pgbench_script_becomes_numbered_statements_without_for_update() {
        let s = Script::parse(
            "-- c\n\\set i :client_id + 1\nBEGIN;\nSELECT a - b AS stock_left FROM t\n  WHERE id = :tid FOR UPDATE \\gset\n\\if :stock_left > 0\nUPDATE t SET b = b + 1 WHERE id = :tid AND x = CAST(:i AS TEXT);\n\\endif\nCOMMIT;\n",
        )
        .expect("parses");
        assert!(s.writes);
        assert_eq!(s.steps.len(), 4);
        match &s.steps[0] {
            Step::Sql {
                text, params, gset, ..
            } => {
                assert_eq!(text, "SELECT a - b AS stock_left FROM t WHERE id = $1");
                assert_eq!(params, &["tid".to_string()]);
                assert!(gset);
            }
            other => panic!("unexpected {other:?}"),
        }
        match &s.steps[2] {
            Step::Sql { text, params, .. } => {
                assert_eq!(
                    text,
                    "UPDATE t SET b = b + 1 WHERE id = $1 AND x = CAST($2 AS TEXT)"
                );
                assert_eq!(params, &["tid".to_string(), "i".to_string()]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_double_colon_cast_is_not_a_variable() {
        let (text, params) = numbered_params("SELECT x::text, :a, :a, :b_2");
        assert_eq!(text, "SELECT x::text, $1, $1, $2");
        assert_eq!(params, vec!["a".to_string(), "b_2".to_string()]);
    }
}
