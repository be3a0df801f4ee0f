//! Races over HTTP against the real router: many requests in flight at once
//! on one template, one user's quota, one coupon. Whatever the store, the
//! rules hold exactly and every loser gets a clean 409 (never 500/503).

use std::sync::Arc;

use serde_json::json;
use tokio::sync::Barrier;

use crate::common::{Resp, TestApp, normal_order, presale_order, spawn_app};

/// Runs `n` requests at once: each task waits at a barrier until all are
/// spawned, then sends its request. Returns the answers in task order.
async fn race<F, Fut>(app: &Arc<TestApp>, n: usize, request: F) -> Vec<Resp>
where
    F: Fn(Arc<TestApp>, usize) -> Fut,
    Fut: std::future::Future<Output = Resp> + Send + 'static,
{
    let barrier = Arc::new(Barrier::new(n));
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let fut = request(app.clone(), i);
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            fut.await
        }));
    }
    let mut answers = Vec::with_capacity(n);
    for t in tasks {
        answers.push(t.await.expect("request task does not panic"));
    }
    answers
}

/// Every answer is either `ok` or a 409 with `code`; returns how many were `ok`.
fn count_ok_else_conflict(answers: &[Resp], ok: u16, code: &str) -> usize {
    let mut n_ok = 0;
    for r in answers {
        if r.status == ok {
            n_ok += 1;
        } else {
            assert_eq!(
                (r.status, r.code()),
                (409, code),
                "a loser must get a clean 409 {code}: {}",
                r.text
            );
        }
    }
    n_ok
}

async fn count(app: &TestApp, sql: &str, bind: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .bind(bind.to_string())
        .fetch_one(app.db.db.pool())
        .await
        .expect("count query runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_concurrent_claims_on_stock_ten_give_exactly_ten_coupons() {
    let app = Arc::new(spawn_app().await);
    let t = app.template(json!({"total_stock": 10})).await;
    let tid = t["id"].as_str().expect("template id").to_string();

    let answers = race(&app, 64, |app, i| {
        let tid = tid.clone();
        async move {
            app.post(
                &format!("/api/v1/users/user-{i}/coupons"),
                json!({"template_id": tid}),
            )
            .await
        }
    })
    .await;

    let won = count_ok_else_conflict(&answers, 201, "out_of_stock");
    assert_eq!(won, 10, "exactly the stock is handed out");
    assert_eq!(answers.len() - won, 54);
    let mut winners: Vec<&str> = answers
        .iter()
        .filter(|r| r.status == 201)
        .map(|r| r.body["user_id"].as_str().expect("coupon names its user"))
        .collect();
    winners.sort_unstable();
    winners.dedup();
    assert_eq!(winners.len(), 10, "ten different users got one coupon each");

    let view = app.get(&format!("/api/v1/templates/{tid}")).await;
    assert_eq!(view.status, 200, "{}", view.text);
    assert_eq!(view.body["claimed"], 10);
    let stored = count(
        &app,
        "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1",
        &tid,
    )
    .await;
    assert_eq!(stored, 10, "the database holds exactly ten coupons");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_claims_by_one_user_with_limit_three_give_exactly_three() {
    let app = Arc::new(spawn_app().await);
    let t = app
        .template(json!({"total_stock": 1000, "per_user_limit": 3}))
        .await;
    let tid = t["id"].as_str().expect("template id").to_string();

    let answers = race(&app, 20, |app, _| {
        let tid = tid.clone();
        async move {
            app.post("/api/v1/users/greedy/coupons", json!({"template_id": tid}))
                .await
        }
    })
    .await;

    assert_eq!(
        count_ok_else_conflict(&answers, 201, "claim_limit_reached"),
        3
    );
    let view = app.get(&format!("/api/v1/templates/{tid}")).await;
    assert_eq!(
        view.body["claimed"], 3,
        "refused claims take no stock: {}",
        view.text
    );
    let stored = count(
        &app,
        "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE user_id = $1",
        "greedy",
    )
    .await;
    assert_eq!(stored, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_deposit_payments_racing_for_one_coupon_lock_it_exactly_once() {
    let app = Arc::new(spawn_app().await);
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().expect("template id");
    let coupon = app.claim("buyer", tid).await;
    let cid = coupon["id"].as_str().expect("coupon id").to_string();
    let campaign = app.campaign("lock", 3600, 3600).await;
    let campaign_id = campaign["id"].as_str().expect("campaign id");

    let order_nos: Vec<String> = (0..32).map(|i| format!("PRE-{i:02}")).collect();
    for no in &order_nos {
        let r = app
            .order(presale_order(no, "buyer", Some(&cid), campaign_id))
            .await;
        assert_eq!(r.status, 201, "a presale order does not lock: {}", r.text);
    }
    assert_eq!(app.coupon(&cid).await["status"], "available");

    let answers = race(&app, order_nos.len(), |app, i| {
        let no = format!("PRE-{i:02}");
        async move {
            app.post(&format!("/api/v1/orders/{no}/deposit-payment"), json!({}))
                .await
        }
    })
    .await;

    assert_eq!(
        count_ok_else_conflict(&answers, 200, "coupon_not_available"),
        1
    );
    let (winner_idx, winner) = answers
        .iter()
        .enumerate()
        .find(|(_, r)| r.status == 200)
        .expect("one winner");
    let winner_no = &order_nos[winner_idx];
    assert_eq!(winner.body["order_no"], winner_no.as_str());
    assert_eq!(winner.body["status"], "deposit_paid");
    assert_eq!(winner.body["coupon_lock_status"], "locked");

    let c = app.coupon(&cid).await;
    assert_eq!(c["status"], "locked");
    assert_eq!(c["order_no"], winner_no.as_str());
    let events = c["events"].as_array().expect("coupon events");
    let actions: Vec<&str> = events
        .iter()
        .map(|e| e["action"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        actions,
        ["claim", "lock"],
        "one lock event, no trace of the losers"
    );

    for (i, no) in order_nos.iter().enumerate() {
        if i == winner_idx {
            continue;
        }
        let o = app.order_view(no).await;
        assert_eq!(o["status"], "pending_deposit", "{no}");
        assert_eq!(o["coupon_lock_status"], "none", "{no}");
        assert!(o["deposit_paid_at"].is_null(), "{no}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_normal_orders_racing_to_checkout_lock_one_coupon_create_exactly_one_order() {
    let app = Arc::new(spawn_app().await);
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().expect("template id");
    let coupon = app.claim("buyer", tid).await;
    let cid = coupon["id"].as_str().expect("coupon id").to_string();

    let answers = race(&app, 16, |app, i| {
        let body = normal_order(&format!("NORM-{i:02}"), "buyer", Some(&cid), 39900);
        async move { app.order(body).await }
    })
    .await;

    assert_eq!(
        count_ok_else_conflict(&answers, 201, "coupon_not_available"),
        1
    );
    let winner = answers
        .iter()
        .find(|r| r.status == 201)
        .expect("one winner");
    let winner_no = winner.body["order_no"]
        .as_str()
        .expect("order_no")
        .to_string();
    assert_eq!(winner.body["coupon_lock_status"], "locked");

    let c = app.coupon(&cid).await;
    assert_eq!(c["status"], "locked");
    assert_eq!(c["order_no"], winner_no.as_str());
    let stored = count(
        &app,
        "SELECT CAST(COUNT(*) AS BIGINT) FROM orders WHERE coupon_id = $1",
        &cid,
    )
    .await;
    assert_eq!(stored, 1, "refused orders leave no row behind");
    for i in 0..16 {
        let no = format!("NORM-{i:02}");
        if no != winner_no {
            let r = app.get(&format!("/api/v1/orders/{no}")).await;
            assert_eq!(
                r.status, 404,
                "{no} was refused and must not exist: {}",
                r.text
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_payments_at_once_on_one_template_leave_a_report_equal_to_a_recount() {
    use couponkeeper::domain::ids::TemplateId;
    use couponkeeper::store::counters::{Subject, all_days, recount_template};
    let app = Arc::new(spawn_app().await);
    let t = app.template(json!({"total_stock": null})).await;
    let tid = TemplateId::from_wire(t["id"].as_str().expect("template id"));
    for i in 0..64 {
        let user = format!("hot-{i:02}");
        let c = app.claim(&user, &tid).await;
        let cid = c["id"].as_str().expect("coupon id").to_string();
        let r = app
            .order(normal_order(
                &format!("HOT-{i:02}"),
                &user,
                Some(&cid),
                39_900,
            ))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let answers = race(&app, 64, |app, i| async move {
        app.post(&format!("/api/v1/orders/HOT-{i:02}/pay"), json!({}))
            .await
    })
    .await;
    assert!(
        answers.iter().all(|r| r.status == 200),
        "{:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );

    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    let recount = recount_template(&mut conn, &tid, 1000)
        .await
        .expect("recount")
        .expect("small enough");
    assert_eq!((recount.claimed, recount.status_used), (64, 64));
    assert_eq!(recount.discount_cents, 64 * 5000);
    // Before the fold the report is the counters plus the waiting deltas …
    let before = all_days(&mut conn, Subject::Template, &tid)
        .await
        .expect("read");
    let waiting = couponkeeper::store::counters::pending(&mut conn, Subject::Template)
        .await
        .expect("pending");
    assert!(
        waiting >= 64,
        "the payments wrote deltas, not counter rows: {waiting}"
    );
    drop(conn);
    let folded = app.service.fold_counters(5000).await.expect("the fold");
    assert!(folded >= 128, "64 claims and 64 uses: {folded}");
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    let after = all_days(&mut conn, Subject::Template, &tid)
        .await
        .expect("read");
    // … and after it the same, from the counter rows alone.
    for counted in [&before, &after] {
        assert_eq!(
            (
                counted.claimed,
                counted.used,
                counted.status_used,
                counted.status_available,
                counted.discount_cents
            ),
            (64, 64, 64, 0, 64 * 5000),
            "{counted:?}"
        );
    }
    assert_eq!(
        couponkeeper::store::counters::pending(&mut conn, Subject::Template)
            .await
            .expect("pending"),
        0
    );
}

/// A refused write must release its locks when it returns, not when its
/// connection is next used: sqlx only queues a dropped transaction's
/// rollback, so a lock could outlive the refusal and block (or, for the
/// idempotency advisory lock, wrongly refuse) the next request.
#[tokio::test]
async fn a_failed_write_releases_its_locks_before_returning() {
    use couponkeeper::store::Backend;
    use sqlx::Connection;
    let t = crate::common::TestDb::fresh().await;
    let db = t.db.clone();
    // Held throughout, so the write below runs on another connection.
    let mut other = db.pool().acquire().await.expect("a second connection");
    let failed: Result<(), sqlx::Error> = db
        .write(|c| {
            Box::pin(async move {
                match couponkeeper::store::backend_of(c) {
                    Backend::Postgres => {
                        sqlx::query("SELECT pg_advisory_xact_lock(4242)")
                            .execute(&mut *c)
                            .await?;
                    }
                    Backend::Sqlite => {
                        sqlx::query("DELETE FROM templates WHERE id = 'none'")
                            .execute(&mut *c)
                            .await?;
                    }
                }
                Err(sqlx::Error::RowNotFound)
            })
        })
        .await;
    assert!(failed.is_err());
    match db.backend() {
        Backend::Postgres => {
            let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock(4242)")
                .fetch_one(&mut *other)
                .await
                .expect("query");
            assert!(got, "the refused transaction still holds its lock");
            sqlx::query("SELECT pg_advisory_unlock(4242)")
                .execute(&mut *other)
                .await
                .expect("unlock");
        }
        Backend::Sqlite => {
            sqlx::query("PRAGMA busy_timeout = 0")
                .execute(&mut *other)
                .await
                .expect("pragma");
            let mut tx = other
                .begin_with("BEGIN IMMEDIATE")
                .await
                .expect("the write lock is free at once");
            sqlx::query("DELETE FROM templates WHERE id = 'none'")
                .execute(&mut *tx)
                .await
                .expect("write");
            tx.rollback().await.expect("rollback");
        }
    }
}

/// A claim takes its unit of stock from a shard no other transaction
/// holds instead of queueing behind the holder's COMMIT. PostgreSQL only:
/// on SQLite one writer holds the whole database, so there is no shard to
/// skip.
#[tokio::test]
async fn claims_take_stock_from_a_free_shard_while_another_transaction_holds_the_others() {
    use couponkeeper::store::Backend;
    let app = spawn_app().await;
    if app.db.db.backend() != Backend::Postgres {
        return;
    }
    let t = app.template(json!({"total_stock": 1000})).await;
    let tid = t["id"].as_str().expect("template id").to_string();
    let last: i64 = sqlx::query_scalar(
        "SELECT CAST(MAX(shard) AS BIGINT) FROM template_stock_shards WHERE template_id = $1",
    )
    .bind(&tid)
    .fetch_one(app.db.db.pool())
    .await
    .expect("the shards");
    assert!(last > 0, "the template has more than one shard");
    let mut holder = app.db.db.pool().begin().await.expect("a transaction");
    sqlx::query(
        "SELECT shard FROM template_stock_shards WHERE template_id = $1 AND shard <> $2 FOR UPDATE",
    )
    .bind(&tid)
    .bind(last)
    .fetch_all(&mut *holder)
    .await
    .expect("every shard but the last held");
    // Four claims, each starting at a random shard: one that waited for a
    // held shard would wait until the holder ends (below, after them).
    for i in 0..4 {
        let path = format!("/api/v1/users/free-shard-{i}/coupons");
        let claim = app.post(&path, json!({"template_id": tid}));
        let r = tokio::time::timeout(std::time::Duration::from_secs(30), claim)
            .await
            .expect("the claim did not wait for the held shards");
        assert_eq!(r.status, 201, "{}", r.text);
    }
    holder.rollback().await.expect("rollback");
    let taken: i64 = sqlx::query_scalar(
        "SELECT CAST(claimed AS BIGINT) FROM template_stock_shards WHERE template_id = $1 AND shard = $2",
    )
    .bind(&tid)
    .bind(last)
    .fetch_one(app.db.db.pool())
    .await
    .expect("the free shard");
    assert_eq!(taken, 4, "all four came from the one free shard");
}

/// A read cancelled at any moment, even while its `BEGIN` is in flight
/// (a client that hung up), gives its connection back with no transaction
/// left on it: the next write on that same connection runs in a
/// transaction of its own, not inside the read's `READ ONLY` one (where
/// PostgreSQL refused the write's `FOR UPDATE`).
#[tokio::test]
async fn a_read_cancelled_at_any_moment_leaves_its_connection_clean_for_the_next_write() {
    // One connection, so every write reuses the one the read gave back.
    let t = crate::common::TestDb::fresh_with(1).await;
    let db = t.db.clone();
    let mut cancelled = 0;
    // Bounded: 300 attempts; the k-th read is given k % 60 scheduler
    // yields to finish and dropped wherever it is if it has not.
    for attempt in 0..300u64 {
        let read = db.read(|c| {
            Box::pin(async move {
                sqlx::query_scalar::<_, i64>("SELECT CAST(COUNT(*) AS BIGINT) FROM templates")
                    .fetch_one(&mut *c)
                    .await
            })
        });
        let yields = attempt % 60;
        let done = tokio::select! {
            biased;
            _ = read => true,
            _ = async {
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
            } => false,
        };
        if !done {
            cancelled += 1;
        }
        let wrote: Result<(), sqlx::Error> = db
            .write(|c| {
                Box::pin(async move {
                    sqlx::query("UPDATE templates SET name = name WHERE id = 'none'")
                        .execute(&mut *c)
                        .await?;
                    Ok(())
                })
            })
            .await;
        assert!(
            wrote.is_ok(),
            "attempt {attempt}: the write after a cancelled read failed: {wrote:?}"
        );
    }
    assert!(cancelled > 0, "some reads were cancelled mid-way");
}
