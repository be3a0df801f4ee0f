//! Bulk issue (定向发券) and bulk void (批量作废) through the API, on both
//! stores: the same file answers the same job, stock and per-user limits
//! hold, a job killed half-way resumes without issuing twice, two runners
//! never collide, bulk void leaves locked and used coupons alone, and
//! every change has its event.

use std::sync::Arc;

use crate::common::fixtures::count;
use crate::common::{Resp, TOKEN, TestApp, normal_order, spawn_app};
use couponkeeper::clock::SharedClock;
use couponkeeper::config::Config;
use couponkeeper::jobs::{JobSettings, Jobs};
use couponkeeper::metrics::Metrics;
use couponkeeper::server::build_service;
use serde_json::{Value, json};

async fn post_csv(app: &TestApp, path: &str, body: &str) -> Resp {
    post_csv_with(app, path, body, &[]).await
}

async fn post_csv_with(app: &TestApp, path: &str, body: &str, headers: &[(&str, &str)]) -> Resp {
    let mut req = app
        .client
        .post(format!("{}{path}", app.base))
        .bearer_auth(TOKEN)
        .header("content-type", "text/csv")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("request reaches the server");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap_or_default();
    Resp {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        headers,
        text,
    }
}

fn users(n: usize) -> String {
    let mut s = String::from("user_id\n");
    for i in 0..n {
        s.push_str(&format!("user-{i:06}\n"));
    }
    s
}

async fn job(app: &TestApp, id: &str) -> Value {
    let r = app.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

/// Coupons of the template, and the most any one line or user got.
async fn issued(app: &TestApp, template: &str) -> i64 {
    count(
        app,
        &format!("SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = '{template}'"),
    )
    .await
}

#[tokio::test]
async fn a_bulk_issue_gives_each_listed_user_a_coupon_and_the_same_file_answers_the_same_job() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let file = "user_id\nu1\n\"u2\"\nbad id\r\nu3\n";
    let path = format!("/api/v1/templates/{tid}/bulk-issues");
    let r = post_csv(&app, &path, file).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["kind"], "bulk_issue");
    assert_eq!(r.body["status"], "running");
    assert_eq!(r.body["total"], 4);
    assert_eq!(r.body["failed"], 1, "an invalid user id fails at once");
    let id = r.id();
    let again = post_csv(&app, &path, file).await;
    assert_eq!((again.status, again.id()), (202, id.clone()));
    app.service.run_bulk_until_idle(100).await.expect("runs");
    let j = job(&app, &id).await;
    assert_eq!(
        (
            &j["status"],
            &j["done"],
            &j["succeeded"],
            &j["skipped"],
            &j["failed"]
        ),
        (&json!("done"), &json!(4), &json!(3), &json!(0), &json!(1)),
        "{j}"
    );
    assert_eq!(j["reasons"]["invalid_user_id"], 1);
    assert_eq!(issued(&app, tid).await, 3);
    // The same file after the job finished: still the same job, nothing new.
    let third = post_csv(&app, &path, file).await;
    assert_eq!((third.status, third.id()), (202, id.clone()));
    app.service.run_bulk_until_idle(100).await.expect("runs");
    assert_eq!(issued(&app, tid).await, 3);
    // Another template, the same file: another job.
    let t2 = app.template(json!({"name": "other"})).await;
    let other = post_csv(
        &app,
        &format!(
            "/api/v1/templates/{}/bulk-issues",
            t2["id"].as_str().unwrap_or("")
        ),
        file,
    )
    .await;
    assert_eq!(other.status, 202);
    assert_ne!(other.id(), id);
    // Each coupon came through the claim path: its event names the job's
    // starter and the job.
    let events = count(
        &app,
        &format!(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM events e JOIN coupons c ON c.id = e.coupon_id
             WHERE c.template_id = '{tid}' AND e.action = 'claim' AND e.to_status = 'available'
               AND e.request_id = '{id}' AND e.actor LIKE 'api:%'"
        ),
    )
    .await;
    assert_eq!(events, 3);
    let u2 = app.get("/api/v1/users/u2/coupons").await;
    assert_eq!(u2.body["coupons"].as_array().map(Vec::len), Some(1));
    // The results: one line per input with its outcome.
    let csv = app.get(&format!("/api/v1/jobs/{id}/results.csv")).await;
    assert_eq!(csv.status, 200);
    assert!(
        csv.headers["content-type"]
            .to_str()
            .unwrap_or("")
            .starts_with("text/csv")
    );
    let lines: Vec<&str> = csv.text.lines().collect();
    assert_eq!(lines[0], "line,value,outcome,reason,coupon_id");
    assert_eq!(lines.len(), 5, "{}", csv.text);
    assert!(lines[1].starts_with("1,u1,issued,,cpn_"), "{}", lines[1]);
    assert_eq!(lines[3], "3,bad id,failed,invalid_user_id,");
}

#[tokio::test]
async fn a_bulk_issue_respects_stock_and_the_per_user_limit() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"total_stock": 3, "per_user_limit": 1}))
        .await;
    let tid = t["id"].as_str().unwrap_or_default();
    let r = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues"),
        "u1\nu1\nu2\nu3\nu4\nu5\n",
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.text);
    app.service.run_bulk_until_idle(100).await.expect("runs");
    let j = job(&app, &r.id()).await;
    assert_eq!(
        (&j["succeeded"], &j["skipped"]),
        (&json!(3), &json!(3)),
        "{j}"
    );
    assert_eq!(j["reasons"]["claim_limit_reached"], 1);
    assert_eq!(j["reasons"]["out_of_stock"], 2);
    assert_eq!(issued(&app, tid).await, 3);
    let t = app.get(&format!("/api/v1/templates/{tid}")).await;
    assert_eq!(t.body["claimed"], 3);
    // A quota taken before the stock ran out was given back: u4 holds
    // nothing and its counter says so.
    let held = count(
        &app,
        &format!(
            "SELECT CAST(COALESCE(SUM(claimed), 0) AS BIGINT) FROM template_user_claims
             WHERE template_id = '{tid}' AND user_id IN ('u4', 'u5')"
        ),
    )
    .await;
    assert_eq!(held, 0);
    // A paused template issues nothing: every line is skipped.
    let t2 = app.template(json!({"name": "paused"})).await;
    let t2id = t2["id"].as_str().unwrap_or_default();
    let p = app
        .post(
            &format!("/api/v1/templates/{t2id}/pause"),
            json!({"reason": "stop"}),
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.text);
    let r = post_csv(
        &app,
        &format!("/api/v1/templates/{t2id}/bulk-issues"),
        "u1\nu2\n",
    )
    .await;
    app.service.run_bulk_until_idle(100).await.expect("runs");
    let j = job(&app, &r.id()).await;
    assert_eq!(j["reasons"]["template_inactive"], 2, "{j}");
    assert_eq!(issued(&app, t2id).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_killed_mid_way_resumes_after_a_restart_without_issuing_twice() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": 5000})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let r = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues"),
        &users(1000),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let id = r.id();
    for _ in 0..3 {
        app.service.run_bulk_batch(50).await.expect("a batch");
    }
    assert_eq!(job(&app, &id).await["done"], 150);
    // Batches cut off at every point of their transaction: each either
    // commits whole or leaves nothing.
    for yields in 0..40u32 {
        let batch = app.service.run_bulk_batch(50);
        tokio::select! {
            _ = batch => {}
            _ = async {
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
            } => {}
        }
    }
    let midway = job(&app, &id).await;
    assert_eq!(
        midway["succeeded"].as_i64(),
        Some(issued(&app, &tid).await),
        "{midway}"
    );
    // A new process on the same database finishes the job.
    let clock: SharedClock = app.clock.clone();
    let restarted = build_service(&Config::default(), app.db.db.clone(), clock);
    restarted.run_bulk_until_idle(1000).await.expect("runs");
    let j = job(&app, &id).await;
    assert_eq!(
        (&j["status"], &j["total"], &j["done"], &j["succeeded"]),
        (&json!("done"), &json!(1000), &json!(1000), &json!(1000)),
        "{j}"
    );
    assert_eq!(issued(&app, &tid).await, 1000);
    let users_served = count(
        &app,
        &format!(
            "SELECT CAST(COUNT(DISTINCT user_id) AS BIGINT) FROM coupons WHERE template_id = '{tid}'"
        ),
    )
    .await;
    assert_eq!(users_served, 1000, "nobody got two coupons");
    let linked = count(
        &app,
        &format!(
            "SELECT CAST(COUNT(DISTINCT coupon_id) AS BIGINT) FROM bulk_job_lines
             WHERE job_id = '{id}' AND outcome = 'issued'"
        ),
    )
    .await;
    assert_eq!(linked, 1000);
    assert_eq!(
        app.get(&format!("/api/v1/templates/{tid}")).await.body["claimed"],
        1000
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_runner_stopped_mid_way_and_started_again_finishes_with_exact_totals() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let r = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues"),
        &users(3000),
    )
    .await;
    let id = r.id();
    let start = || {
        Jobs::start(
            app.service.clone(),
            JobSettings::default(),
            Arc::new(Metrics::default()),
        )
    };
    let jobs = start();
    for _ in 0..300 {
        if job(&app, &id).await["done"].as_i64().unwrap_or(0) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    jobs.stop().await;
    let stopped = job(&app, &id).await;
    assert!(stopped["done"].as_i64().unwrap_or(0) > 0, "{stopped}");
    let jobs = start();
    for _ in 0..600 {
        if job(&app, &id).await["status"] == "done" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    jobs.stop().await;
    let j = job(&app, &id).await;
    assert_eq!(
        (&j["status"], &j["succeeded"]),
        (&json!("done"), &json!(3000)),
        "{j}"
    );
    assert_eq!(issued(&app, &tid).await, 3000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runners_on_one_database_issue_every_line_once() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let a = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues"),
        &users(600),
    )
    .await;
    let b = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues"),
        &users(700).replace("user-", "other-"),
    )
    .await;
    let clock: SharedClock = app.clock.clone();
    let second = build_service(&Config::default(), app.db.db.clone(), clock);
    tokio::join!(
        async {
            let mut n = 0;
            while app
                .service
                .run_bulk_batch(40)
                .await
                .expect("batch")
                .is_some()
                && n < 1000
            {
                n += 1;
            }
        },
        async {
            let mut n = 0;
            while second.run_bulk_batch(40).await.expect("batch").is_some() && n < 1000 {
                n += 1;
            }
        }
    );
    assert_eq!(job(&app, &a.id()).await["succeeded"], 600);
    assert_eq!(job(&app, &b.id()).await["succeeded"], 700);
    assert_eq!(issued(&app, &tid).await, 1300);
}

#[tokio::test]
async fn a_bulk_issue_with_notify_writes_one_coupon_issued_message_per_coupon() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": 2})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let r = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues?notify=true"),
        "u1\nu2\nu3\n",
    )
    .await;
    assert_eq!(
        (r.status, &r.body["notify"]),
        (202, &json!(true)),
        "{}",
        r.text
    );
    app.service.run_bulk_until_idle(10).await.expect("runs");
    let messages = count(
        &app,
        "SELECT CAST(COUNT(*) AS BIGINT) FROM outbox WHERE event_type = 'coupon.issued'",
    )
    .await;
    assert_eq!(messages, 2);
    // Without notify: none.
    let r = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues"),
        "u9\n",
    )
    .await;
    assert_eq!(r.body["notify"], false);
}

#[tokio::test]
async fn bulk_void_voids_available_coupons_and_skips_locked_and_used_ones() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let mut ids = Vec::new();
    for u in ["u1", "u2", "u3", "u4", "u5"] {
        ids.push(
            app.claim(u, &tid).await["id"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        );
    }
    // u4's coupon locked to an order, u5's used by a paid one.
    let o = app
        .post(
            "/api/v1/orders",
            normal_order("O-4", "u4", Some(&ids[3]), 40000),
        )
        .await;
    assert_eq!(o.status, 201, "{}", o.text);
    let o = app
        .post(
            "/api/v1/orders",
            normal_order("O-5", "u5", Some(&ids[4]), 40000),
        )
        .await;
    assert_eq!(o.status, 201, "{}", o.text);
    let p = app.post("/api/v1/orders/O-5/pay", json!({})).await;
    assert_eq!(p.status, 200, "{}", p.text);
    let path = format!("/api/v1/templates/{tid}/bulk-void");
    let refused = app.post(&path, json!({})).await;
    assert_eq!((refused.status, refused.field()), (400, "reason"));
    let r = app.post(&path, json!({"reason": "活动取消"})).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        (&r.body["kind"], &r.body["total"]),
        (&json!("bulk_void"), &json!(5))
    );
    app.service.run_bulk_until_idle(10).await.expect("runs");
    let j = job(&app, &r.id()).await;
    assert_eq!(
        (&j["status"], &j["succeeded"], &j["skipped"], &j["done"]),
        (&json!("done"), &json!(3), &json!(2), &json!(5)),
        "{j}"
    );
    assert_eq!(
        (&j["reasons"]["locked"], &j["reasons"]["used"]),
        (&json!(1), &json!(1))
    );
    let status = |i: usize| {
        let id = ids[i].clone();
        let app = &app;
        async move { app.get(&format!("/api/v1/coupons/{id}")).await.body }
    };
    for i in 0..3 {
        let c = status(i).await;
        assert_eq!(c["status"], "invalidated");
        let last = c["events"]
            .as_array()
            .and_then(|e| e.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            (&last["action"], &last["reason"]),
            (&json!("invalidate"), &json!("活动取消"))
        );
    }
    assert_eq!(status(3).await["status"], "locked");
    assert_eq!(status(4).await["status"], "used");
    let csv = app
        .get(&format!("/api/v1/jobs/{}/results.csv", r.id()))
        .await;
    assert_eq!(csv.text.lines().count(), 6, "{}", csv.text);
    assert!(csv.text.contains(",skipped,locked,"));

    // A file of coupon ids: unknown and foreign ids fail, void ones skip.
    let other = app.template(json!({"name": "other"})).await;
    let foreign = app.claim("u9", other["id"].as_str().unwrap_or("")).await;
    let fresh = app.claim("u6", &tid).await;
    let file = format!(
        "coupon_id\n{}\n{}\ncpn_nope\n{}\n",
        fresh["id"].as_str().unwrap_or(""),
        ids[0],
        foreign["id"].as_str().unwrap_or("")
    );
    let no_reason = post_csv(&app, &path, &file).await;
    assert_eq!((no_reason.status, no_reason.field()), (400, "reason"));
    let r = post_csv(&app, &format!("{path}?reason=again"), &file).await;
    assert_eq!((r.status, &r.body["total"]), (202, &json!(4)), "{}", r.text);
    let same = post_csv(&app, &format!("{path}?reason=again"), &file).await;
    assert_eq!(same.id(), r.id());
    app.service.run_bulk_until_idle(10).await.expect("runs");
    let j = job(&app, &r.id()).await;
    assert_eq!(
        (&j["succeeded"], &j["skipped"], &j["failed"]),
        (&json!(1), &json!(1), &json!(2)),
        "{j}"
    );
    assert_eq!(j["reasons"]["invalidated"], 1);
    assert_eq!(j["reasons"]["not_found"], 1);
    assert_eq!(j["reasons"]["other_template"], 1);
    assert_eq!(
        app.get(&format!(
            "/api/v1/coupons/{}",
            foreign["id"].as_str().unwrap_or("")
        ))
        .await
        .body["status"],
        "available"
    );
}

#[tokio::test]
async fn bad_bulk_requests_are_refused_and_change_nothing() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let path = format!("/api/v1/templates/{tid}/bulk-issues");
    for bad in ["", "user_id\n\n", "u1\0\n"] {
        let r = post_csv(&app, &path, bad).await;
        assert_eq!((r.status, r.field()), (400, "body"), "{bad:?}: {}", r.text);
    }
    let r = post_csv(&app, "/api/v1/templates/tpl_nope/bulk-issues", "u1\n").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app
        .post(
            "/api/v1/templates/tpl_nope/bulk-void",
            json!({"reason": "x"}),
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(app.get("/api/v1/jobs/job_nope").await.status, 404);
    assert_eq!(
        app.get("/api/v1/jobs/job_nope/results.csv").await.status,
        404
    );
    let r = app
        .client
        .post(format!("{}{path}", app.base))
        .header("content-type", "text/csv")
        .body("u1\n")
        .send()
        .await
        .expect("sent");
    assert_eq!(r.status().as_u16(), 401);
    assert_eq!(
        count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM bulk_jobs").await,
        0
    );
    // An Idempotency-Key replays the first answer.
    let first = post_csv_with(&app, &path, "u1\n", &[("Idempotency-Key", "k1")]).await;
    let replay = post_csv_with(&app, &path, "u1\n", &[("Idempotency-Key", "k1")]).await;
    assert_eq!((first.status, replay.status), (202, 202));
    assert_eq!(replay.id(), first.id());
    let reused = post_csv_with(&app, &path, "u2\n", &[("Idempotency-Key", "k1")]).await;
    assert_eq!(reused.status, 422);
}

/// The figures of docs/src/development/bench-bulk.md: a bulk issue to
/// 100,000 users and a bulk void of those 100,000 coupons, each timed from
/// the request (the lines stored) to the job's end, run by the service's
/// runner batch after batch as `serve` runs it. Ignored by default:
/// `COUPONKEEPER_BULK_USERS=100000 cargo test --test api bulk:: -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_a_bulk_issue_and_a_bulk_void() {
    use couponkeeper::domain::ids::TemplateId;
    use couponkeeper::service::Ctx;
    use couponkeeper::service::bulk::VoidInput;
    use couponkeeper::service::support::Authority;
    let n: usize = std::env::var("COUPONKEEPER_BULK_USERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = TemplateId::from_wire(t["id"].as_str().unwrap_or_default());
    let file = users(n);
    let ctx = Ctx::new("api:bench", None);
    let started = std::time::Instant::now();
    let job = app
        .service
        .start_bulk_issue(
            &ctx,
            &Authority::Api,
            None,
            tid.clone(),
            file.as_bytes(),
            false,
        )
        .await
        .expect("started")
        .fresh()
        .expect("fresh");
    let loaded = started.elapsed();
    let batches = app
        .service
        .run_bulk_until_idle(100_000)
        .await
        .expect("runs");
    let issue = started.elapsed();
    assert_eq!(issued(&app, &tid).await, n as i64);
    assert_eq!(
        app.service.get_job(&job.id).await.expect("job").succeeded,
        n as i64
    );
    let started = std::time::Instant::now();
    let void = app
        .service
        .start_bulk_void(
            &ctx,
            &Authority::Api,
            None,
            tid.clone(),
            VoidInput::All,
            Some("bench".into()),
        )
        .await
        .expect("started")
        .fresh()
        .expect("fresh");
    let void_batches = app
        .service
        .run_bulk_until_idle(100_000)
        .await
        .expect("runs");
    let voided = started.elapsed();
    assert_eq!(
        app.service.get_job(&void.id).await.expect("job").succeeded,
        n as i64
    );
    println!(
        "store {:?}: bulk issue to {n} users: lines stored in {:.1} s, done in {:.1} s ({batches} batches, {:.0} coupons/s); bulk void of {n}: {:.1} s ({void_batches} batches, {:.0} coupons/s)",
        crate::common::store(),
        loaded.as_secs_f64(),
        issue.as_secs_f64(),
        n as f64 / issue.as_secs_f64(),
        voided.as_secs_f64(),
        n as f64 / voided.as_secs_f64(),
    );
}

#[tokio::test]
async fn the_audit_log_names_the_bulk_job_behind_its_changes_and_links_to_it() {
    use crate::common::console::signed_in;
    use couponkeeper::domain::staff::Role;
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let r = post_csv(
        &app,
        &format!("/api/v1/templates/{tid}/bulk-issues"),
        "user_id\nu1\nu2\n",
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.text);
    let id = r.id();
    app.service.run_bulk_until_idle(100).await.expect("runs");
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get("/console/audit").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let link = format!("<a href=\"/console/jobs/{id}\" data-testid=\"audit-job\">批量任务</a>");
    assert_eq!(page.text.matches(&link).count(), 2, "{}", page.text);
    assert!(
        !page.text.contains(&format!(">{id}<")),
        "the job's id is not shown as text"
    );
}
