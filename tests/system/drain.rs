//! SIGTERM: the real `couponkeeper serve` on a fresh
//! database of the store under test drains instead of dying. Under the
//! crash test's journaled mixed load (`served`), with two requests held
//! open half-written across the signal: `/readyz` answers 503 at once,
//! every request in flight gets its whole answer, the process exits with
//! status 0 well within `COUPONKEEPER_DRAIN_SECONDS` and logs no timed-out
//! drain; after a restart every promise of the crash test holds
//! (`crate::served::check_promises`), including the claim answered during the
//! drain. And a request that never finishes cannot hold the process:
//! it exits 0 at the deadline with a warning, or at once on a second
//! signal.
//!
//! `COUPONKEEPER_DRAIN_SEED` replays the load's random choices.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::TestDb;
use crate::served::{
    Api, CouponExpect, Entry, Fixture, Sample, Server, TOKEN, check_promises, env_u64,
    join_clients, spawn_clients,
};

/// A request sent over its own connection in two parts: the first now,
/// the rest when [`Held::finish`] is called. Until then the server holds
/// it in flight (its head or its body is not complete).
struct Held {
    stream: TcpStream,
}

impl Held {
    async fn open(addr: SocketAddr, first: &[u8]) -> Held {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(first).await.expect("write the first part");
        stream.flush().await.expect("flush");
        Held { stream }
    }

    /// Sends the rest and reads the whole answer (the request says
    /// `Connection: close`, so the answer ends with the connection):
    /// status and body.
    async fn finish(mut self, rest: &[u8]) -> (u16, Value) {
        self.stream
            .write_all(rest)
            .await
            .expect("write the rest of the request");
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(15), self.stream.read_to_end(&mut raw))
            .await
            .expect("the answer within 15 s")
            .expect("read the answer");
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no complete HTTP answer: {text:?}"));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {head:?}"));
        let body = serde_json::from_str(body).unwrap_or(Value::String(body.to_string()));
        (status, body)
    }
}

/// A load request that started this long before the signal has reached
/// the server; one closer to it may have been written on a keep-alive
/// connection the drain was closing as idle (the race of HTTP/1.1
/// keep-alive: the client retries it, see docs/src/operations/drain.md).
const IN_FLIGHT_MARGIN: Duration = Duration::from_millis(250);

const DRAIN_SECONDS: u64 = 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_answers_every_request_in_flight_exits_0_and_loses_nothing() {
    let seed = env_u64("COUPONKEEPER_DRAIN_SEED", rand::random::<u32>().into());
    println!(
        "drain test: seed {seed} (COUPONKEEPER_DRAIN_SEED={seed} replays it), store {:?}",
        crate::common::store()
    );
    let run = format!("d{seed:x}");
    let db = TestDb::fresh().await;
    let logs = tempfile::tempdir().expect("log dir");
    let drain = DRAIN_SECONDS.to_string();
    // As in the crash test: a 503 while the database is up would be a
    // fault, so give the pool room on a stalled CI machine.
    let mut server = Server::new(
        &db.url,
        &[
            ("COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS", "15000"),
            ("COUPONKEEPER_DRAIN_SECONDS", drain.as_str()),
        ],
        logs.path(),
    );
    server.start().await;
    let api = Api::new(&server.base);
    let fx = Fixture::make(&api, &run).await;
    let stop = Arc::new(AtomicBool::new(false));
    let handles = spawn_clients(8, &run, seed, &server.base, &fx, &stop);
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    // Two requests in flight across the signal: a claim whose body is
    // half sent, and a readiness probe whose head is.
    let user = format!("{run}-held");
    let key = format!("{run}-held-claim");
    let path = format!("/api/v1/users/{user}/coupons");
    let claim_body = json!({"template_id": fx.open_template});
    let text = claim_body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Idempotency-Key: {key}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        text.len()
    );
    let (first, rest) = text.as_bytes().split_at(text.len() / 2);
    let claim = Held::open(server.addr, &[head.as_bytes(), first].concat()).await;
    let ready = Held::open(
        server.addr,
        format!("GET /readyz HTTP/1.1\r\nHost: {}\r\n", server.addr).as_bytes(),
    )
    .await;
    // Both parts have reached the server.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let signalled = Instant::now();
    server.terminate();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        server.exited().is_none(),
        "the server exited with two requests in flight:\n{}",
        server.log_tail(20)
    );
    let (status, body) = ready.finish(b"Connection: close\r\n\r\n").await;
    assert_eq!(status, 503, "/readyz while draining: {body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    let (status, answer) = claim.finish(rest).await;
    assert_eq!(status, 201, "the claim in flight at the signal: {answer}");

    let exit = server
        .wait_exit(Duration::from_secs(DRAIN_SECONDS + 5))
        .await
        .unwrap_or_else(|| {
            panic!(
                "the server did not exit within the drain bound:\n{}",
                server.log_tail(20)
            )
        });
    let drained = signalled.elapsed();
    assert!(
        exit.success(),
        "exit after SIGTERM: {exit}\n{}",
        server.log_tail(20)
    );
    let log = server.log_text();
    assert!(
        !log.contains("did not finish within"),
        "the drain ran into its deadline:\n{}",
        server.log_tail(20)
    );
    // The pool closes after the jobs have stopped: no job met a closed pool.
    assert!(
        !log.contains("closed pool"),
        "something used the pool after it closed:\n{}",
        server.log_tail(20)
    );

    // The load's writes that met the stopped server finish on a new one.
    server.start().await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    stop.store(true, Ordering::Relaxed);
    let mut out = join_clients(handles).await;

    let cut: Vec<&Sample> = out
        .samples
        .iter()
        .filter(|s| s.status.is_none() && s.started + IN_FLIGHT_MARGIN <= signalled)
        .collect();
    assert!(
        cut.is_empty(),
        "requests sent before the signal got no answer: {cut:#?}"
    );
    let answered_across = out
        .samples
        .iter()
        .filter(|s| s.started < signalled && s.started + s.elapsed > signalled)
        .filter(|s| s.status.is_some())
        .count();
    let refused_after = out
        .samples
        .iter()
        .filter(|s| s.started >= signalled && s.status.is_none())
        .count();
    let near_signal = out
        .samples
        .iter()
        .filter(|s| s.status.is_none() && s.started < signalled)
        .count();
    println!(
        "drain test: exit {exit} {:.2} s after SIGTERM (bound {DRAIN_SECONDS} s); {} load \
         requests answered across the signal, {near_signal} unanswered within {:?} before it, \
         {refused_after} refused after it; {} requests, {:?} by status; {} journaled changes",
        drained.as_secs_f64(),
        answered_across,
        IN_FLIGHT_MARGIN,
        out.stats.requests,
        out.stats.by_status,
        out.journal.len(),
    );
    assert!(
        drained < Duration::from_secs(DRAIN_SECONDS),
        "the drain took {drained:?}"
    );

    // The claim answered during the drain is a promise like the others.
    let id = answer["id"].as_str().expect("coupon id").to_string();
    out.coupons.insert(
        id,
        CouponExpect {
            user,
            template: fx.open_template.clone(),
            status: "available".into(),
            order_no: None,
        },
    );
    out.journal.push(Entry {
        key,
        path,
        body: claim_body,
        status,
        answer,
    });
    check_promises(db.db.pool(), &api, &out).await;
    server.assert_no_panic_logged();
}

#[tokio::test]
async fn a_request_that_never_completes_holds_the_drain_only_until_its_deadline() {
    let db = TestDb::fresh().await;
    let logs = tempfile::tempdir().expect("log dir");
    let mut server = Server::new(&db.url, &[("COUPONKEEPER_DRAIN_SECONDS", "2")], logs.path());
    server.start().await;
    // A head that never ends: the server must wait for it, but not forever.
    let held = Held::open(
        server.addr,
        format!("GET /readyz HTTP/1.1\r\nHost: {}\r\n", server.addr).as_bytes(),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = Instant::now();
    server.terminate();
    let exit = server
        .wait_exit(Duration::from_secs(12))
        .await
        .unwrap_or_else(|| panic!("still running 12 s after SIGTERM:\n{}", server.log_tail(20)));
    let took = signalled.elapsed();
    assert!(
        exit.success(),
        "exit at the deadline: {exit}\n{}",
        server.log_tail(20)
    );
    assert!(
        took >= Duration::from_millis(1_900),
        "exited after {took:?}, before the deadline, with a request in flight"
    );
    assert!(
        server.log_text().contains("did not finish within"),
        "no warning about the deadline:\n{}",
        server.log_tail(20)
    );
    drop(held);
    server.assert_no_panic_logged();
}

#[tokio::test]
async fn a_second_sigterm_ends_the_drain_at_once() {
    let db = TestDb::fresh().await;
    let logs = tempfile::tempdir().expect("log dir");
    let mut server = Server::new(
        &db.url,
        &[("COUPONKEEPER_DRAIN_SECONDS", "60")],
        logs.path(),
    );
    server.start().await;
    let held = Held::open(
        server.addr,
        format!("GET /readyz HTTP/1.1\r\nHost: {}\r\n", server.addr).as_bytes(),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.terminate();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        server.exited().is_none(),
        "the server exited with a request in flight:\n{}",
        server.log_tail(20)
    );
    let second = Instant::now();
    server.terminate();
    let exit = server
        .wait_exit(Duration::from_secs(10))
        .await
        .unwrap_or_else(|| {
            panic!(
                "still running after a second SIGTERM:\n{}",
                server.log_tail(20)
            )
        });
    assert!(exit.success(), "exit on the second signal: {exit}");
    assert!(
        second.elapsed() < Duration::from_secs(5),
        "a second SIGTERM took {:?}",
        second.elapsed()
    );
    assert!(
        server.log_text().contains("a second shutdown signal"),
        "no warning about the second signal:\n{}",
        server.log_tail(20)
    );
    drop(held);
    server.assert_no_panic_logged();
}
