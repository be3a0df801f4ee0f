//! Redeem codes (兑换码) through the API on both stores: code batches
//! (the code space rule, generation by the code job driven step by step,
//! uniqueness under concurrent generation, resuming after an interrupted
//! job, the CSV, the void) and redemptions (exactly once under 32
//! concurrent attempts, normalization, voided codes, the template's stock
//! and limit, idempotency, 429 after repeated failures).

use std::collections::HashSet;

use crate::common::{TestApp, spawn_app};
use couponkeeper::config::Config;
use couponkeeper::domain::ids::TemplateId;
use couponkeeper::server::build_service;
use serde_json::{Value, json};

/// A batch for `template_id`; asserts 202 and returns it.
async fn batch(app: &TestApp, template_id: &str, body: Value) -> Value {
    let r = app
        .post(
            &format!("/api/v1/templates/{template_id}/code-batches"),
            body,
        )
        .await;
    assert_eq!(r.status, 202, "create batch: {}", r.text);
    r.body
}

/// Runs the code job until it has nothing left to do.
async fn run_jobs(app: &TestApp) {
    app.service
        .run_code_work(couponkeeper::service::codes::CHUNK_ROWS, 10_000)
        .await
        .expect("the code job runs");
}

/// The codes of a finished batch, from its CSV.
async fn codes_of(app: &TestApp, batch_id: &str) -> Vec<String> {
    let r = app
        .get(&format!("/api/v1/code-batches/{batch_id}/codes.csv"))
        .await;
    assert_eq!(r.status, 200, "csv: {}", r.text);
    assert!(
        r.headers["content-type"]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/csv"),
        "{:?}",
        r.headers
    );
    r.text
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .map(str::to_string)
        .collect()
}

/// A template (with `overrides`) and a finished batch of `count` codes.
async fn template_with_codes(app: &TestApp, overrides: Value, count: i64) -> (String, Vec<String>) {
    let t = app.template(overrides).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let b = batch(
        app,
        &tid,
        json!({"count": count, "prefix": "cny", "length": 8}),
    )
    .await;
    run_jobs(app).await;
    let codes = codes_of(app, b["id"].as_str().unwrap_or_default()).await;
    assert_eq!(codes.len() as i64, count);
    (tid, codes)
}

async fn redeem(app: &TestApp, user: &str, code: &str) -> crate::common::Resp {
    app.post(
        &format!("/api/v1/users/{user}/redemptions"),
        json!({"code": code}),
    )
    .await
}

#[tokio::test]
async fn a_batch_whose_code_space_is_under_a_thousand_per_code_is_refused_at_count() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let path = format!("/api/v1/templates/{tid}/code-batches");
    // 31^4 = 923,521 codes of length 4: room for 923.
    let r = app.post(&path, json!({"count": 924, "length": 4})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!((r.code(), r.field()), ("invalid_request", "count"));
    let r = app
        .post(&path, json!({"count": 100_000, "length": 5}))
        .await;
    assert_eq!(r.field(), "count", "{}", r.text);
    for (body, field) in [
        (json!({"count": 0, "length": 8}), "count"),
        (json!({"count": 100_001, "length": 8}), "count"),
        (json!({"length": 8}), "count"),
        (json!({"count": 10, "length": 3}), "length"),
        (json!({"count": 10, "length": 17}), "length"),
        (json!({"count": 10}), "length"),
        (
            json!({"count": 10, "length": 8, "prefix": "VIP0"}),
            "prefix",
        ),
        (
            json!({"count": 10, "length": 8, "prefix": "ABCDEFGHJ"}),
            "prefix",
        ),
        (json!({"count": 10, "length": 8, "prefix": "A-B"}), "prefix"),
    ] {
        let r = app.post(&path, body.clone()).await;
        assert_eq!((r.status, r.field()), (400, field), "{body}: {}", r.text);
    }
    // Nothing was stored by the refusals.
    assert!(
        app.service
            .list_code_batches(&TemplateId::from_wire(tid))
            .await
            .expect("list")
            .is_empty()
    );

    let b = batch(&app, tid, json!({"count": 923, "length": 4, "prefix": "k"})).await;
    assert_eq!(b["status"], "running");
    assert_eq!(
        (b["count"].as_i64(), b["generated"].as_i64()),
        (Some(923), Some(0))
    );
    assert_eq!(b["template_id"], tid);
    let r = app
        .post(
            "/api/v1/templates/tpl_missing/code-batches",
            json!({"count": 1, "length": 8}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
}

#[tokio::test]
async fn a_batch_is_generated_by_the_job_and_its_csv_waits_until_done() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let b = batch(
        &app,
        tid,
        json!({"count": 1200, "prefix": "SPRNG", "length": 8}),
    )
    .await;
    let id = b["id"].as_str().unwrap_or_default();
    let r = app
        .get(&format!("/api/v1/code-batches/{id}/codes.csv"))
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "code_batch_not_ready"),
        "{}",
        r.text
    );

    let step = app.service.code_work_step(500).await.expect("one step");
    assert_eq!(step.generated, 500);
    let now = app.get(&format!("/api/v1/code-batches/{id}")).await;
    assert_eq!(
        (now.body["status"].as_str(), now.body["generated"].as_i64()),
        (Some("running"), Some(500))
    );

    run_jobs(&app).await;
    let done = app.get(&format!("/api/v1/code-batches/{id}")).await;
    assert_eq!(done.body["status"], "done", "{}", done.text);
    assert_eq!(done.body["generated"], 1200);
    assert_eq!(done.body["redeemed"], 0);
    let codes = codes_of(&app, id).await;
    assert_eq!(codes.len(), 1200);
    assert_eq!(codes.iter().collect::<HashSet<_>>().len(), 1200);
    for c in &codes {
        assert_eq!(c.len(), 13, "{c}");
        assert!(c.starts_with("SPRNG"), "{c}");
        assert!(
            c.chars()
                .all(couponkeeper::domain::redeem_code::in_alphabet),
            "{c}: no look-alikes"
        );
    }
}

#[tokio::test]
async fn codes_stay_unique_when_two_batches_are_generated_concurrently() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    // Two batches of the same short prefix and length (31^4 codes), so
    // their draws can meet; each step of each worker is one chunk.
    let a = batch(&app, tid, json!({"count": 900, "prefix": "Q", "length": 4})).await;
    let b = batch(&app, tid, json!({"count": 900, "prefix": "Q", "length": 4})).await;
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let service = app.service.clone();
            tokio::spawn(async move { service.run_code_work(100, 1000).await })
        })
        .collect();
    for w in workers {
        w.await.expect("worker joins").expect("worker runs");
    }
    let mut all = HashSet::new();
    for id in [a["id"].as_str(), b["id"].as_str()] {
        let id = id.unwrap_or_default();
        let v = app.get(&format!("/api/v1/code-batches/{id}")).await;
        assert_eq!(
            (v.body["status"].as_str(), v.body["generated"].as_i64()),
            (Some("done"), Some(900)),
            "{}",
            v.text
        );
        let codes = codes_of(&app, id).await;
        assert_eq!(codes.len(), 900);
        all.extend(codes);
    }
    assert_eq!(all.len(), 1800, "no code belongs to both batches");
}

#[tokio::test]
async fn generation_resumes_where_an_interrupted_job_stopped() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let b = batch(&app, tid, json!({"count": 1234, "length": 8})).await;
    let id = b["id"].as_str().unwrap_or_default().to_string();
    // Two chunks commit, then the process "stops": a job cancelled in the
    // middle of its third chunk rolls that chunk back.
    for _ in 0..2 {
        app.service.code_work_step(500).await.expect("a chunk");
    }
    let service = app.service.clone();
    let cut = tokio::time::timeout(std::time::Duration::from_micros(1), async move {
        service.code_work_step(500).await
    })
    .await;
    drop(cut);
    let so_far = app.get(&format!("/api/v1/code-batches/{id}")).await;
    let generated = so_far.body["generated"].as_i64().unwrap_or_default();
    assert!(generated == 1000 || generated == 1234, "{}", so_far.text);

    // A new process on the same database goes on from what is stored.
    let clock: couponkeeper::clock::SharedClock = app.clock.clone();
    let restarted = build_service(&Config::default(), app.db.db.clone(), clock);
    // The cut transaction's connection is rolled back by the pool in the
    // background; until then PostgreSQL's SKIP LOCKED passes over the
    // batch it locked, so the job (which runs every few seconds in a real
    // process) is run until the batch is no longer running, at most 50
    // times.
    for _ in 0..50 {
        restarted
            .run_code_work(500, 100)
            .await
            .expect("the restarted job runs");
        let now = app.get(&format!("/api/v1/code-batches/{id}")).await;
        if now.body["status"] != "running" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let done = app.get(&format!("/api/v1/code-batches/{id}")).await;
    assert_eq!(
        (
            done.body["status"].as_str(),
            done.body["generated"].as_i64()
        ),
        (Some("done"), Some(1234)),
        "{}",
        done.text
    );
    let codes = codes_of(&app, &id).await;
    assert_eq!(codes.len(), 1234, "the CSV lists exactly the stored count");
    assert_eq!(codes.iter().collect::<HashSet<_>>().len(), 1234);
}

#[tokio::test]
async fn exactly_one_of_32_concurrent_redemptions_of_a_code_wins() {
    let app = spawn_app().await;
    let (_, codes) = template_with_codes(&app, json!({"total_stock": null}), 3).await;
    let code = codes[0].clone();
    let attempts: Vec<_> = (0..32)
        .map(|i| {
            let client = app.client.clone();
            let url = format!("{}/api/v1/users/racer{i}/redemptions", app.base);
            let code = code.clone();
            tokio::spawn(async move {
                let r = client
                    .post(url)
                    .bearer_auth(crate::common::TOKEN)
                    .json(&json!({"code": code}))
                    .send()
                    .await
                    .expect("request");
                let status = r.status().as_u16();
                let body: Value = r.json().await.unwrap_or(Value::Null);
                (status, body)
            })
        })
        .collect();
    let mut won = Vec::new();
    let mut lost = 0;
    for a in attempts {
        let (status, body) = a.await.expect("joins");
        match status {
            201 => won.push(body),
            409 => {
                assert_eq!(body["error"]["code"], "code_already_redeemed", "{body}");
                lost += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((won.len(), lost), (1, 31));
    let coupon = &won[0];
    assert_eq!(coupon["source"], "code");
    let user = coupon["user_id"].as_str().unwrap_or_default();
    let list = app.get(&format!("/api/v1/users/{user}/coupons")).await;
    assert_eq!(list.body["coupons"].as_array().map(Vec::len), Some(1));
    let full = app.coupon(coupon["id"].as_str().unwrap_or_default()).await;
    assert_eq!(full["events"][0]["action"], "redeem", "{full}");
}

#[tokio::test]
async fn codes_are_read_without_case_spaces_or_dashes() {
    let app = spawn_app().await;
    let (_, codes) = template_with_codes(&app, json!({"total_stock": null}), 3).await;
    let code = &codes[0];
    // "VIPAB3K…" typed as "vip-ab3k …" with a full-width space.
    let lower = code.to_lowercase();
    let typed = format!(" {}-{}\u{3000}{} ", &lower[..3], &lower[3..7], &lower[7..]);
    let r = redeem(&app, "u1", &typed).await;
    assert_eq!(r.status, 201, "{typed:?}: {}", r.text);
    assert!(r.body["template_id"].as_str().is_some());
    let again = redeem(&app, "u2", code).await;
    assert_eq!((again.status, again.code()), (409, "code_already_redeemed"));
    for bad in [
        json!({}),
        json!({"code": " - "}),
        json!({"code": "X".repeat(65)}),
    ] {
        let r = app.post("/api/v1/users/u3/redemptions", bad.clone()).await;
        assert_eq!((r.status, r.field()), (400, "code"), "{bad}: {}", r.text);
    }
}

#[tokio::test]
async fn a_voided_code_is_not_found_and_the_void_reaches_every_unredeemed_code() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let b = batch(&app, tid, json!({"count": 2500, "length": 8})).await;
    let id = b["id"].as_str().unwrap_or_default();
    run_jobs(&app).await;
    let codes = codes_of(&app, id).await;
    let kept = redeem(&app, "early", &codes[2499]).await;
    assert_eq!(kept.status, 201, "{}", kept.text);

    let r = app
        .post(&format!("/api/v1/code-batches/{id}/void"), json!({}))
        .await;
    assert_eq!((r.status, r.field()), (400, "reason"), "{}", r.text);
    let r = app
        .post(
            &format!("/api/v1/code-batches/{id}/void"),
            json!({"reason": "leaked on a forum"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body["voided_at"].is_string());
    assert_eq!(r.body["voided"], 1000, "the first chunk in the request");
    assert_eq!(r.body["void_finished"], false);
    // Already unusable, before the job voided the rest.
    let late = redeem(&app, "late", &codes[2000]).await;
    assert_eq!(
        (late.status, late.code()),
        (404, "code_not_found"),
        "{}",
        late.text
    );

    run_jobs(&app).await;
    let v = app.get(&format!("/api/v1/code-batches/{id}")).await;
    assert_eq!(
        (v.body["voided"].as_i64(), v.body["void_finished"].as_bool()),
        (Some(2499), Some(true)),
        "{}",
        v.text
    );
    assert_eq!(v.body["redeemed"], 1);
    let csv = app
        .get(&format!("/api/v1/code-batches/{id}/codes.csv"))
        .await;
    assert_eq!(csv.text.matches(",voided,").count(), 2499);
    assert_eq!(csv.text.matches(",redeemed,").count(), 1);
    // The coupon it gave stays.
    let coupon = app
        .coupon(kept.body["id"].as_str().unwrap_or_default())
        .await;
    assert_eq!(coupon["status"], "available");
    // Voiding again changes nothing.
    let again = app
        .post(
            &format!("/api/v1/code-batches/{id}/void"),
            json!({"reason": "twice"}),
        )
        .await;
    assert_eq!(
        (again.status, again.body["void_reason"].as_str()),
        (200, Some("leaked on a forum"))
    );
    let unknown = redeem(&app, "u9", "NOSUCHCODE").await;
    assert_eq!((unknown.status, unknown.code()), (404, "code_not_found"));
    let r = app
        .post(
            "/api/v1/code-batches/cbt_missing/void",
            json!({"reason": "x"}),
        )
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn the_templates_stock_limit_and_pause_apply_to_redemptions() {
    let app = spawn_app().await;
    let (tid, codes) =
        template_with_codes(&app, json!({"total_stock": 2, "per_user_limit": 1}), 5).await;
    assert_eq!(redeem(&app, "u1", &codes[0]).await.status, 201);
    let r = redeem(&app, "u1", &codes[1]).await;
    assert_eq!(
        (r.status, r.code()),
        (409, "claim_limit_reached"),
        "{}",
        r.text
    );
    // The refused redemption rolled back: the code still redeems.
    assert_eq!(redeem(&app, "u2", &codes[1]).await.status, 201);
    let r = redeem(&app, "u3", &codes[2]).await;
    assert_eq!((r.status, r.code()), (409, "out_of_stock"), "{}", r.text);
    // Claims and redemptions share the stock.
    let r = app
        .post("/api/v1/users/u4/coupons", json!({"template_id": tid}))
        .await;
    assert_eq!(r.code(), "out_of_stock");
    let t = app.get(&format!("/api/v1/templates/{tid}")).await;
    assert_eq!(t.body["claimed"], 2);

    let (tid2, codes2) = template_with_codes(&app, json!({"total_stock": null}), 2).await;
    let r = app
        .post(
            &format!("/api/v1/templates/{tid2}/pause"),
            json!({"reason": "campaign over"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = redeem(&app, "u5", &codes2[0]).await;
    assert_eq!(
        (r.status, r.code()),
        (409, "template_inactive"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn a_redemption_with_an_idempotency_key_is_replayed_not_repeated() {
    let app = spawn_app().await;
    let (_, codes) = template_with_codes(&app, json!({"total_stock": null}), 2).await;
    let path = "/api/v1/users/u1/redemptions";
    let first = app
        .post_idem(path, "redeem-1", json!({"code": codes[0]}))
        .await;
    assert_eq!(first.status, 201, "{}", first.text);
    let second = app
        .post_idem(path, "redeem-1", json!({"code": codes[0]}))
        .await;
    assert_eq!(second.status, 201, "{}", second.text);
    assert_eq!(second.headers["idempotent-replayed"], "true");
    assert_eq!(first.body["id"], second.body["id"]);
    let other = app
        .post_idem(path, "redeem-1", json!({"code": codes[1]}))
        .await;
    assert_eq!(other.status, 422);
    let missing = app
        .post_idem(path, "redeem-2", json!({"code": "NOPE2345"}))
        .await;
    let replay = app
        .post_idem(path, "redeem-2", json!({"code": "NOPE2345"}))
        .await;
    assert_eq!((missing.status, replay.status), (404, 404));
    assert_eq!(replay.code(), "code_not_found");
    let list = app.get("/api/v1/users/u1/coupons").await;
    assert_eq!(list.body["coupons"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn repeated_failed_redemptions_are_refused_with_429() {
    let app = TestApp::builder()
        .with_config(|c: &mut Config| {
            c.http_limits.redeem_failures_user = "3/min".parse().ok();
        })
        .start()
        .await;
    let (_, codes) = template_with_codes(&app, json!({"total_stock": null}), 2).await;
    for i in 0..3 {
        let r = redeem(&app, "guesser", &format!("WRONG{i}")).await;
        assert_eq!(
            (r.status, r.code()),
            (404, "code_not_found"),
            "{i}: {}",
            r.text
        );
    }
    // The limit is 3: the 4th attempt is refused before it is tried,
    // the real code too.
    let r = redeem(&app, "guesser", "WRONG3").await;
    assert_eq!((r.status, r.code()), (429, "rate_limited"), "{}", r.text);
    let r = redeem(&app, "guesser", &codes[0]).await;
    assert_eq!((r.status, r.code()), (429, "rate_limited"), "{}", r.text);
    assert!(r.headers.get("retry-after").is_some());
    // Another customer is not affected.
    assert_eq!(redeem(&app, "honest", &codes[0]).await.status, 201);
    let metrics = app.get("/metrics").await;
    assert!(
        metrics
            .text
            .contains("couponkeeper_events_total{event=\"redeem_failed\"} 3"),
        "{}",
        metrics.text
    );
    assert!(metrics.text.contains("event=\"rate_limited_redeem\"} 2"));
}

/// The figure in docs/src/development/bench-bulk.md: 100,000 codes generated by the code job's
/// service function, chunk by chunk, on this store. Ignored in the normal
/// run (it takes seconds); `cargo test --test api codes:: -- --ignored
/// --nocapture` prints it.
#[tokio::test]
#[ignore]
async fn generating_100000_codes_is_timed() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let b = batch(
        &app,
        tid,
        json!({"count": 100_000, "prefix": "BGX", "length": 10}),
    )
    .await;
    let id = b["id"].as_str().unwrap_or_default();
    let started = std::time::Instant::now();
    let step = app
        .service
        .run_code_work(couponkeeper::service::codes::CHUNK_ROWS, 1000)
        .await
        .expect("runs");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(step.generated, 100_000);
    let csv_started = std::time::Instant::now();
    let codes = codes_of(&app, id).await;
    println!(
        "store {:?}: 100,000 codes generated in {seconds:.2} s ({:.0} codes/s); CSV in {:.2} s",
        crate::common::store(),
        100_000.0 / seconds,
        csv_started.elapsed().as_secs_f64()
    );
    assert_eq!(codes.len(), 100_000);
}
