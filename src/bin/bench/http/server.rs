//! The server under test: the real `couponkeeper` binary, release build,
//! started as `couponkeeper serve` in its own process on a fresh database
//! and a free loopback port, stopped with SIGTERM (its graceful drain).
//!
//! A separate process rather than the library's server entry in this
//! process: the callers of the service meet the binary, with its own
//! runtime, configuration from the environment, logging and background
//! jobs; and the load generator, the baselines and the data set-up in this
//! process then share no runtime, pool or allocator with the server. The
//! binary is the one next to this executable (`target/<profile>/`), or
//! `--server PATH`; build it with the bench (`cargo build --release --bin
//! couponkeeper` before `cargo run --release --bin bench -- http`). A
//! server binary older than the bench is reported, as it may predate a
//! library change. (The bench does not run cargo itself: a nested cargo
//! under `cargo run` may wait on the build directory's lock.)

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Result;

/// How long the server may take to answer `/healthz` after its start
/// (migrations on a fresh database included).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long SIGTERM may take to drain and stop the server before it is
/// killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// The `couponkeeper` binary to run: `explicit`, else the one next to this
/// executable.
pub(crate) fn server_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            return Err(format!("--server {}: no such file", p.display()).into());
        }
        return Ok(p.to_path_buf());
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or("the bench executable has no parent directory")?;
    let bin = dir.join("couponkeeper");
    if !bin.is_file() {
        return Err(format!(
            "{} is missing: build it with `cargo build --release --bin couponkeeper` \
             or pass --server PATH",
            bin.display()
        )
        .into());
    }
    // Both binaries link the same library: a server binary older than
    // this bench may predate a change to it.
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(server), Some(me)) = (modified(&bin), modified(&exe))
        && server < me
    {
        eprintln!(
            "bench http: WARNING: {} is older than this bench; if the library changed since, \
             build it first: cargo build --release --bin couponkeeper",
            bin.display()
        );
    }
    if !dir.ends_with("release") {
        eprintln!(
            "bench http: WARNING: {} is not a release build; the figures mean little",
            bin.display()
        );
    }
    Ok(bin)
}

/// A running `couponkeeper serve`.
pub(crate) struct Server {
    child: Child,
    pub(crate) base_url: String,
    log: PathBuf,
}

/// A free port on 127.0.0.1 (bound and released; the server binds it
/// right after, so a race with another process is possible but unlikely,
/// and shows as a failed start).
fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

impl Server {
    /// Starts `bin serve` on `database_url` with one API token, logging to
    /// `log`, and waits until `/healthz` answers 200.
    pub(crate) async fn start(
        bin: &Path,
        database_url: &str,
        token: &str,
        log: PathBuf,
    ) -> Result<Server> {
        let port = free_port()?;
        let addr = format!("127.0.0.1:{port}");
        let out = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let err = out.try_clone()?;
        let child = Command::new(bin)
            .arg("serve")
            .env("DATABASE_URL", database_url)
            .env("COUPONKEEPER_ADDR", &addr)
            .env("COUPONKEEPER_API_TOKEN", token)
            .env_remove("COUPONKEEPER_BOOTSTRAP_ADMIN")
            // Plain log lines, so WARN and ERROR can be found in them.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let mut server = Server {
            child,
            base_url: format!("http://{addr}"),
            log,
        };
        let client = reqwest::Client::new();
        let started = Instant::now();
        // Bounded by START_TIMEOUT.
        loop {
            if let Some(status) = server.child.try_wait()? {
                return Err(format!(
                    "the server exited at start ({status}); its log:\n{}",
                    server.log_tail()
                )
                .into());
            }
            let ok = client
                .get(format!("{}/healthz", server.base_url))
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return Ok(server);
            }
            if started.elapsed() > START_TIMEOUT {
                server.stop();
                return Err(format!(
                    "the server did not answer /healthz within {}s; its log:\n{}",
                    START_TIMEOUT.as_secs(),
                    server.log_tail()
                )
                .into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server's process id (for attaching a profiler).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines of the server's log.
    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Lines of the log at WARN or ERROR level (the server should have
    /// none under this load).
    pub(crate) fn log_problems(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
            .map(str::to_string)
            .collect()
    }

    /// SIGTERM, then waits for the drain; kills the process if it has not
    /// stopped within [`STOP_TIMEOUT`].
    pub(crate) fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let started = Instant::now();
        while started.elapsed() < STOP_TIMEOUT {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "bench http: the server did not stop within {STOP_TIMEOUT:?} of SIGTERM; killing it"
        );
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
