//! `kill -9` under load: the real `couponkeeper serve`
//! on a fresh database of the store under test, a journaled mixed load
//! from many clients over HTTP (claims, normal and presale orders,
//! deposits, final payments, cancels, refunds, forced support releases,
//! every write with an Idempotency-Key), SIGKILL at random moments and a
//! restart each time while the load goes on; then every promise is checked
//! against the database and the journals (`crate::served::check_promises`).
//!
//! Short by default for CI; longer with `COUPONKEEPER_CRASH_KILLS` (5),
//! `COUPONKEEPER_CRASH_SECONDS` (12: the load time over which the kills
//! are spread, one at a random moment in each equal slot),
//! `COUPONKEEPER_CRASH_CLIENTS` (8); `COUPONKEEPER_CRASH_SEED` replays a
//! run's random choices (kill moments and each client's flows; the
//! interleaving of the clients is up to the scheduler).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::TestDb;
use crate::served::{Api, Fixture, Server, check_promises, env_u64, join_clients, spawn_clients};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_change_survives_kill_9_at_random_moments_under_a_mixed_load() {
    let seed = env_u64("COUPONKEEPER_CRASH_SEED", rand::random::<u32>().into());
    let kills = env_u64("COUPONKEEPER_CRASH_KILLS", 5).max(1);
    let load_ms = env_u64("COUPONKEEPER_CRASH_SECONDS", 12).max(1) * 1000;
    let clients =
        u32::try_from(env_u64("COUPONKEEPER_CRASH_CLIENTS", 8).clamp(1, 256)).unwrap_or(8);
    println!(
        "crash test: seed {seed} (COUPONKEEPER_CRASH_SEED={seed} replays it), {kills} kills over \
         {load_ms} ms, {clients} clients, store {:?}",
        crate::common::store()
    );
    let mut rng = StdRng::seed_from_u64(seed);
    let run = format!("k{seed:x}");

    let db = TestDb::fresh().await;
    let logs = tempfile::tempdir().expect("log dir");
    // While the database is up, a 503 is a fault; give the pool room so a
    // CI machine stalled by parallel builds cannot fake one (the outage
    // tests hold the 2 s default to account).
    let mut server = Server::new(
        &db.url,
        &[("COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS", "15000")],
        logs.path(),
    );
    server.start().await;
    let api = Api::new(&server.base);
    let fx = Fixture::make(&api, &run).await;

    let stop = Arc::new(AtomicBool::new(false));
    let handles = spawn_clients(clients, &run, seed, &server.base, &fx, &stop);

    // Kill moments: one per slot of `load_ms / kills`, at a uniform random
    // moment within the slot, and at least 200 ms after the last restart
    // so that some requests get in.
    let slot_ms = (load_ms / kills).max(400);
    let started = Instant::now();
    let mut restarts_ms = Vec::new();
    for k in 0..kills {
        let target = Duration::from_millis(k * slot_ms + rng.random_range(0..slot_ms));
        let earliest = Instant::now() + Duration::from_millis(200);
        tokio::time::sleep_until((started + target).max(earliest).into()).await;
        if let Some(exit) = server.exited() {
            panic!(
                "the server died on its own ({exit}):\n{}",
                server.log_tail(40)
            );
        }
        server.kill9();
        let t = Instant::now();
        server.start().await;
        restarts_ms.push(t.elapsed().as_millis());
    }
    // Load after the last restart, then the clients finish what they hold.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stop.store(true, Ordering::Relaxed);
    let out = join_clients(handles).await;
    println!(
        "crash test: {} kills in {:.1} s (restart to ready: {:?} ms); {} requests, {:?} by \
         status, {} without an answer; {} journaled changes, {} coupons, {} orders",
        kills,
        started.elapsed().as_secs_f64(),
        restarts_ms,
        out.stats.requests,
        out.stats.by_status,
        out.stats.no_answer,
        out.journal.len(),
        out.coupons.len(),
        out.orders.len()
    );
    assert!(
        out.stats.no_answer > 0 || kills == 0,
        "no request was cut by a kill: the kills missed the load"
    );
    assert_eq!(
        out.stats.by_status.get(&503).copied().unwrap_or(0),
        0,
        "503 while the database was up"
    );
    for kind in [
        "/pay",
        "/deposit-payment",
        "/final-payment",
        "/refund",
        "/cancel",
        "/release",
    ] {
        assert!(
            out.journal.iter().any(|e| e.path.ends_with(kind)),
            "the load never got a {kind} through; the test would prove nothing about it"
        );
    }

    check_promises(db.db.pool(), &api, &out).await;
    server.assert_no_panic_logged();
}
