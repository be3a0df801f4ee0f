//! The database going away under load, with the real
//! `couponkeeper serve` and the crash test's journaled mixed load
//! (`served`).
//!
//! PostgreSQL: a TCP proxy in the test sits between `serve` and the
//! server and is cut for `COUPONKEEPER_OUTAGE_SECONDS` (default 10) in two
//! ways: every connection reset and new ones refused (what a fast shutdown
//! looks like), and a black hole (connections accepted, nothing forwarded
//! either way: no error ever arrives, the case that hangs a client without
//! deadlines). Meanwhile every request must be answered 503 `unavailable`
//! within a bound derived from the configured timeouts, `/readyz` must say
//! not ready, and afterwards ready again, a coupon that ended during the
//! outage must be expired by the running jobs, and every promise of the
//! crash test must hold.
//!
//! SQLite: the served process's file size limit is dropped to zero while
//! it runs (`prlimit --pid`), so every write to its database and WAL fails
//! as on a full disk (EFBIG; SIGXFSZ is ignored); writes answer 503, and
//! once the limit is lifted the same process writes again.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::common::{Store, TestDb};
use crate::served::{
    Api, Fixture, Outcome, Sample, Server, check_promises, env_u64, free_port, join_clients,
    spawn_clients,
};

/// How the proxy treats traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Forwards both ways.
    Open,
    /// Resets every connection and refuses new ones (no listener).
    Refuse,
    /// Accepts connections and holds every byte until it opens again.
    BlackHole,
}

/// Waits while the proxy is a black hole; false once it refuses.
async fn wait_open(mode: &mut watch::Receiver<Cut>) -> bool {
    loop {
        match *mode.borrow_and_update() {
            Cut::Open => return true,
            Cut::Refuse => return false,
            Cut::BlackHole => {}
        }
        if mode.changed().await.is_err() {
            return false;
        }
    }
}

async fn until_refused(mut mode: watch::Receiver<Cut>) {
    loop {
        if *mode.borrow_and_update() == Cut::Refuse {
            return;
        }
        if mode.changed().await.is_err() {
            return;
        }
    }
}

/// Copies `from` to `to`, holding each chunk while the proxy is a black
/// hole. Returns when either side ends or the proxy refuses.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut mode: watch::Receiver<Cut>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        if !wait_open(&mut mode).await || to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

async fn relay(client: TcpStream, upstream: SocketAddr, mut mode: watch::Receiver<Cut>) {
    // Closing with a zero linger sends RST: connections end as on a server
    // that went away, not with a polite FIN.
    let _ = client.set_zero_linger();
    // A connection accepted during a black hole reaches nothing yet.
    if !wait_open(&mut mode).await {
        return;
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = server.set_zero_linger();
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let both = async {
        tokio::join!(pump(cr, sw, mode.clone()), pump(sr, cw, mode.clone()));
    };
    tokio::select! {
        _ = both => {}
        _ = until_refused(mode.clone()) => {}
    }
}

/// The proxy on `port` in front of `upstream`; ends when `mode`'s sender
/// is dropped.
async fn proxy(port: u16, upstream: SocketAddr, mut mode: watch::Receiver<Cut>) {
    loop {
        // The port was ours a moment ago; bounded retries while the kernel
        // releases it.
        let mut listener = None;
        for _ in 0..100 {
            match TcpListener::bind(("127.0.0.1", port)).await {
                Ok(l) => {
                    listener = Some(l);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
        let listener = listener.expect("the proxy binds its port again");
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    if let Ok((sock, _)) = accepted {
                        tokio::spawn(relay(sock, upstream, mode.clone()));
                    }
                }
                changed = mode.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if *mode.borrow_and_update() == Cut::Refuse {
                        break;
                    }
                }
            }
        }
        drop(listener);
        while *mode.borrow_and_update() == Cut::Refuse {
            if mode.changed().await.is_err() {
                return;
            }
        }
    }
}

/// Seconds since `origin`, for messages.
fn at(origin: Instant, t: Instant) -> f64 {
    t.saturating_duration_since(origin).as_secs_f64()
}

async fn postgres_outage_under_load(cut: Cut) {
    if crate::common::store() != Store::Postgres {
        println!("outage {cut:?}: PostgreSQL only (COUPONKEEPER_TEST_STORE=postgres)");
        return;
    }
    let outage = Duration::from_secs(env_u64("COUPONKEEPER_OUTAGE_SECONDS", 10).max(1));
    let seed: u64 = rand::random::<u32>().into();
    let run = format!("o{seed:x}");
    let acquire_ms: u64 = 1_000;
    let tx_ms: u64 = 2_000;
    // The longest a request may take: it waits for a connection (acquire
    // timeout) or runs a transaction that is abandoned at its deadline; a
    // request runs at most two transactions in turn (its own and, for a
    // read after a write, the view); 1 s for the HTTP stack and scheduling
    // on a loaded 2-core machine. A hang shows as the client's 30 s.
    let bound = Duration::from_millis(acquire_ms + 2 * tx_ms + 1_000);
    println!("outage {cut:?}: {outage:?}, seed {seed}, request bound {bound:?}");

    let db = TestDb::fresh().await;
    let proxy_port = free_port();
    let via_proxy = db
        .url
        .replacen("@127.0.0.1:5432/", &format!("@127.0.0.1:{proxy_port}/"), 1);
    assert_ne!(
        via_proxy, db.url,
        "the test database URL names 127.0.0.1:5432"
    );
    let (mode_tx, mode_rx) = watch::channel(Cut::Open);
    let proxy_task = tokio::spawn(proxy(
        proxy_port,
        "127.0.0.1:5432".parse().expect("addr"),
        mode_rx,
    ));

    let logs = tempfile::tempdir().expect("log dir");
    let acquire = acquire_ms.to_string();
    let tx = tx_ms.to_string();
    let mut server = Server::new(
        &via_proxy,
        &[
            ("COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS", &acquire),
            ("COUPONKEEPER_DB_TX_TIMEOUT_MS", &tx),
        ],
        logs.path(),
    );
    server.start().await;
    let api = Api::new(&server.base);
    let fx = Fixture::make(&api, &run).await;

    // Coupons that end in the middle of the outage.
    let warm_up = Duration::from_secs(2);
    let ends_at =
        chrono::Utc::now() + chrono::Duration::from_std(warm_up + outage / 2).expect("duration");
    let ending = api
        .post(
            "/api/v1/templates",
            &format!("{run}-t-ending"),
            &json!({
                "name": "ending", "kind": "fixed", "value_cents": 1000, "min_order_cents": 0,
                "valid_until": ends_at.to_rfc3339(), "valid_seconds": 86_400,
                "total_stock": null, "categories": [],
            }),
        )
        .await
        .expect("template");
    assert_eq!(ending.status, 201, "{}", ending.body);
    let mut ending_ids = Vec::new();
    for i in 0..3 {
        let c = api
            .post(
                &format!("/api/v1/users/{run}-ending/coupons"),
                &format!("{run}-ending-{i}"),
                &json!({"template_id": ending.body["id"]}),
            )
            .await
            .expect("claim");
        assert_eq!(c.status, 201, "{}", c.body);
        ending_ids.push(c.body["id"].as_str().unwrap_or_default().to_string());
    }

    let stop = Arc::new(AtomicBool::new(false));
    let handles = spawn_clients(4, &run, seed, &server.base, &fx, &stop);
    let probe = {
        let stop = stop.clone();
        let base = server.base.clone();
        tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .timeout(crate::served::REQUEST_TIMEOUT)
                .build()
                .expect("client");
            let mut seen = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let status = http
                    .get(format!("{base}/readyz"))
                    .send()
                    .await
                    .ok()
                    .map(|r| r.status().as_u16());
                seen.push((t, t.elapsed(), status));
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            seen
        })
    };

    tokio::time::sleep(warm_up).await;
    let cut_at = Instant::now();
    mode_tx.send_replace(cut);
    tokio::time::sleep(outage).await;
    let restored_at = Instant::now();
    mode_tx.send_replace(Cut::Open);
    server.wait_ready(Duration::from_secs(30)).await;
    let ready_after = restored_at.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_clients(handles).await;
    let probes = probe.await.expect("probe task");
    assert!(
        server.exited().is_none(),
        "serve exited during the outage:\n{}",
        server.log_tail(40)
    );

    let origin = cut_at;
    let slowest = out
        .samples
        .iter()
        .max_by_key(|s| s.elapsed)
        .map(|s| (s.elapsed, s.what.clone(), at(origin, s.started)));
    // Every request ended within the bound, hang or not.
    let too_slow: Vec<&Sample> = out.samples.iter().filter(|s| s.elapsed > bound).collect();
    assert!(
        too_slow.is_empty(),
        "{} requests took longer than {bound:?}, e.g. {:?} (s from the cut: {:.1})",
        too_slow.len(),
        too_slow[0],
        at(origin, too_slow[0].started)
    );
    // Requests wholly inside the outage (after a grace for connections
    // already in use at the cut) answered 503 unavailable.
    let grace = Duration::from_millis(200);
    let inside: Vec<&Sample> = out
        .samples
        .iter()
        .filter(|s| s.started >= cut_at + grace && s.started + s.elapsed <= restored_at)
        .collect();
    assert!(
        inside.len() >= 10,
        "only {} requests during the outage",
        inside.len()
    );
    let wrong: Vec<String> = inside
        .iter()
        .filter(|s| s.status != Some(503) || s.code != "unavailable")
        .map(|s| {
            format!(
                "{} at +{:.2}s: {:?} {}",
                s.what,
                at(origin, s.started),
                s.status,
                s.code
            )
        })
        .take(10)
        .collect();
    assert!(
        wrong.is_empty(),
        "requests during the outage not answered 503 unavailable:\n{}",
        wrong.join("\n")
    );
    assert!(
        out.samples.iter().any(|s| s.started >= restored_at
            && s.what.starts_with("POST")
            && s.status.is_some_and(|c| (200..300).contains(&c))),
        "no write succeeded after the outage"
    );
    // /readyz: not ready during, ready after.
    let probes_inside: Vec<_> = probes
        .iter()
        .filter(|(t, e, _)| *t >= cut_at + grace && *t + *e <= restored_at)
        .collect();
    assert!(
        !probes_inside.is_empty(),
        "no /readyz probe during the outage"
    );
    for (t, e, status) in &probes_inside {
        assert_eq!(
            *status,
            Some(503),
            "/readyz at +{:.2}s (took {e:?}) during the outage",
            at(origin, *t)
        );
    }
    assert_eq!(
        probes.last().map(|p| p.2),
        Some(Some(200)),
        "/readyz after the outage"
    );

    // The jobs recover by themselves: the coupons that ended during the
    // outage are expired without a restart (bounded wait).
    let expired_by = Instant::now() + Duration::from_secs(30);
    loop {
        let statuses: Vec<(String,)> =
            sqlx::query_as("SELECT status FROM coupons WHERE user_id = $1 ORDER BY id")
                .bind(format!("{run}-ending"))
                .fetch_all(db.db.pool())
                .await
                .expect("ending coupons");
        if statuses.len() == ending_ids.len() && statuses.iter().all(|s| s.0 == "expired") {
            break;
        }
        assert!(
            Instant::now() < expired_by,
            "coupons that ended during the outage are still {statuses:?} 30 s after it:\n{}",
            server.log_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let expired_after = restored_at.elapsed();

    println!(
        "outage {cut:?}: {} requests ({} during the outage, all 503 unavailable), {:?} by status, \
         {} without an answer; slowest {:?}; ready {:.2} s after the database returned; coupons \
         that ended during it expired {:.1} s after; {} journaled changes",
        out.stats.requests,
        inside.len(),
        out.stats.by_status,
        out.stats.no_answer,
        slowest,
        ready_after.as_secs_f64(),
        expired_after.as_secs_f64(),
        out.journal.len()
    );
    check_promises(db.db.pool(), &api, &out).await;
    server.assert_no_panic_logged();
    drop(server);
    drop(mode_tx);
    let _ = proxy_task.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reset_and_refusing_connections_give_503_within_the_timeouts_and_everything_recovers()
 {
    postgres_outage_under_load(Cut::Refuse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_gone_silent_black_hole_gives_503_within_the_timeouts_never_a_hang() {
    postgres_outage_under_load(Cut::BlackHole).await;
}

/// Sets the served process's file size limit (`prlimit --pid`); `N:` sets
/// the soft limit only, so it can be raised again without privileges.
fn set_file_size_limit(pid: u32, limit: &str) {
    let status = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(format!("--fsize={limit}"))
        .status()
        .expect("run prlimit (util-linux)");
    assert!(status.success(), "prlimit --pid {pid} --fsize={limit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writes_on_a_full_disk_answer_503_and_resume_when_space_returns() {
    if crate::common::store() != Store::Sqlite {
        println!("full disk: SQLite only");
        return;
    }
    let seed: u64 = rand::random::<u32>().into();
    let run = format!("f{seed:x}");
    let db = TestDb::fresh().await;
    let logs = tempfile::tempdir().expect("log dir");
    let mut server = Server::new(&db.url, &[], logs.path()).ignoring_sigxfsz();
    server.start().await;
    let pid = server.pid().expect("running");
    let api = Api::new(&server.base);
    let fx = Fixture::make(&api, &run).await;

    let stop = Arc::new(AtomicBool::new(false));
    let handles = spawn_clients(4, &run, seed, &server.base, &fx, &stop);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let full_at = Instant::now();
    set_file_size_limit(pid, "0:");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let freed_at = Instant::now();
    set_file_size_limit(pid, "unlimited:");
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let out: Outcome = join_clients(handles).await;
    assert!(
        server.exited().is_none(),
        "serve exited on a full disk:\n{}",
        server.log_tail(40)
    );

    // Writes started while the disk was full (after a grace for a write
    // already past its last file write) answered 503 unavailable, or 409
    // for a business refusal: a refusal writes nothing (a claim over the
    // per-user limit is refused on what it reads), so it is a true answer
    // on a full disk too.
    let grace = Duration::from_millis(200);
    let writes: Vec<&Sample> = out
        .samples
        .iter()
        .filter(|s| s.what.starts_with("POST"))
        .filter(|s| s.started >= full_at + grace && s.started + s.elapsed <= freed_at)
        .collect();
    let unavailable = writes.iter().filter(|s| s.status == Some(503)).count();
    assert!(
        unavailable >= 10,
        "only {unavailable} writes answered 503 on the full disk"
    );
    let wrong: Vec<String> = writes
        .iter()
        .filter(|s| {
            let unavailable = s.status == Some(503) && s.code == "unavailable";
            let refused = s.status == Some(409) && !s.code.is_empty();
            !unavailable && !refused
        })
        .map(|s| {
            format!(
                "{}: {:?} {} after {:?}",
                s.what, s.status, s.code, s.elapsed
            )
        })
        .take(10)
        .collect();
    assert!(
        wrong.is_empty(),
        "writes on a full disk answered neither 503 unavailable nor a refusal:\n{}\nserver log:\n{}",
        wrong.join("\n"),
        server.log_tail(30)
    );
    let after = out
        .samples
        .iter()
        .filter(|s| s.what.starts_with("POST") && s.started >= freed_at)
        .filter(|s| s.status.is_some_and(|c| (200..300).contains(&c)))
        .count();
    assert!(after > 0, "no write succeeded once space returned");
    println!(
        "full disk: {} requests, {} writes while full ({unavailable} 503 unavailable, the rest \
         409 refusals), {:?} by status; \
         {after} writes succeeded after space returned, {} journaled changes",
        out.stats.requests,
        writes.len(),
        out.stats.by_status,
        out.journal.len()
    );
    check_promises(db.db.pool(), &api, &out).await;
    server.assert_no_panic_logged();
}

/// The deadline that ends a request stuck on a silent database, seen from
/// the pool: a transaction still running at `tx_timeout_ms` is abandoned
/// and fails as unavailable (503), its locks are let go (the next write on
/// SQLite gets the write lock at once), and reads are bounded the same way.
#[tokio::test]
async fn a_transaction_past_its_deadline_is_abandoned_as_unavailable_and_lets_go_of_its_locks() {
    use couponkeeper::store::{Db, PoolSettings, is_unavailable};
    let test_db = TestDb::fresh().await;
    let db = Db::connect_with(
        &test_db.url,
        PoolSettings {
            max_connections: 2,
            tx_timeout_ms: 300,
            ..PoolSettings::default()
        },
    )
    .await
    .expect("connect");
    let started = Instant::now();
    let stuck: Result<(), sqlx::Error> = db
        .write(|c| {
            Box::pin(async move {
                sqlx::query("UPDATE templates SET name = name WHERE id = 'none'")
                    .execute(&mut *c)
                    .await?;
                // A statement the database never answers, as far as the
                // caller can tell.
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(())
            })
        })
        .await;
    let took = started.elapsed();
    let err = stuck.expect_err("a transaction past its deadline fails");
    assert!(is_unavailable(&err), "reads as unavailable: {err}");
    assert!(
        took < Duration::from_secs(3),
        "abandoned at its deadline, took {took:?}"
    );

    let started = Instant::now();
    let next: Result<u64, sqlx::Error> = db
        .write(|c| {
            Box::pin(async move {
                Ok(
                    sqlx::query("UPDATE templates SET name = name WHERE id = 'none'")
                        .execute(&mut *c)
                        .await?
                        .rows_affected(),
                )
            })
        })
        .await;
    assert_eq!(next.expect("the next write goes through"), 0);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the abandoned transaction's locks were held for {:?}",
        started.elapsed()
    );

    let read: Result<(), sqlx::Error> = db
        .read(|_c| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(())
            })
        })
        .await;
    assert!(
        read.is_err_and(|e| is_unavailable(&e)),
        "a stuck read is bounded too"
    );
}

/// SQLite opened read-only (`?mode=ro`, e.g. a file on a volume mounted
/// read-only; `chmod` would not stop root): the process starts, reads
/// answer, every write answers 503 `unavailable`, nothing panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_opened_read_only_answers_reads_and_refuses_writes_with_503() {
    if crate::common::store() != Store::Sqlite {
        println!("read-only file: SQLite only");
        return;
    }
    let db = TestDb::fresh().await;
    let logs = tempfile::tempdir().expect("log dir");
    let mut server = Server::new(&format!("{}?mode=ro", db.url), &[], logs.path());
    server.start().await;
    let api = Api::new(&server.base);
    let writes = [
        (
            "/api/v1/templates",
            json!({"name": "ro", "kind": "fixed", "value_cents": 100, "min_order_cents": 0,
                   "valid_seconds": 3600, "categories": []}),
        ),
        (
            "/api/v1/presale-campaigns",
            json!({"name": "ro", "final_payment_starts_at": "2030-01-01T00:00:00Z",
                   "final_payment_ends_at": "2030-01-02T00:00:00Z"}),
        ),
        (
            "/api/v1/users/ro-user/compensation-coupons",
            json!({"value_cents": 500, "valid_seconds": 3600, "reason": "read-only test"}),
        ),
    ];
    for (i, (path, body)) in writes.iter().enumerate() {
        let a = api
            .post(path, &format!("ro-{i}"), body)
            .await
            .expect("answered");
        assert_eq!(
            (a.status, a.code()),
            (503, "unavailable"),
            "POST {path} on a read-only file: {}",
            a.body
        );
    }
    for path in ["/api/v1/users/ro-user/coupons", "/api/v1/reconciliation"] {
        let a = api.get(path).await.expect("answered");
        assert_eq!(a.status, 200, "GET {path} on a read-only file: {}", a.body);
    }
    assert!(
        server.exited().is_none(),
        "serve exited:\n{}",
        server.log_tail(20)
    );
    server.assert_no_panic_logged();
}
