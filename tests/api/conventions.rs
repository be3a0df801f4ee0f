//! The API's conventions: auth, the error model, body limits, idempotency,
//! and the service routes.

use crate::common::{Store, TOKEN, normal_order, spawn_app, store};
use serde_json::json;
use sqlx::{Connection, Executor};

#[tokio::test]
async fn every_api_route_needs_a_valid_bearer_token() {
    let app = spawn_app().await;
    for token in [None, Some("wrong"), Some("")] {
        let r = app.get_as("/api/v1/templates/x", token).await;
        assert_eq!((r.status, r.code()), (401, "unauthorized"), "{token:?}");
    }
    let r = app
        .post_raw(
            "/api/v1/templates",
            "{}",
            &[("authorization", "Basic dGVzdA==")],
        )
        .await;
    assert_eq!((r.status, r.code()), (401, "unauthorized"));
    let r = app
        .get_as("/api/v1/templates/x", Some("second-token"))
        .await;
    assert_eq!(r.status, 404, "the second configured token is valid");
}

#[tokio::test]
async fn health_readiness_metrics_and_openapi_answer_without_a_token() {
    let app = spawn_app().await;
    assert_eq!(app.get_as("/healthz", None).await.status, 200);
    let r = app.get_as("/readyz", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "ready");
    app.get("/api/v1/templates/nope").await;
    let m = app.get_as("/metrics", None).await;
    assert_eq!(m.status, 200);
    assert!(m.text.contains("couponkeeper_http_requests_total{method=\"GET\",route=\"/api/v1/templates/{id}\",status=\"404\"} 1"), "{}", m.text);
    for family in [
        "couponkeeper_expiry_lag_seconds_count",
        "couponkeeper_expiry_batch_rows_count",
        "couponkeeper_coupons_due_next_hour 0",
        "couponkeeper_coupons_overdue 0",
        "couponkeeper_oldest_overdue_age_seconds 0",
    ] {
        assert!(m.text.contains(family), "metrics lack {family}");
    }
    let doc = app.get_as("/api/v1/openapi.json", None).await;
    assert_eq!(doc.status, 200);
    for path in [
        "/api/v1/templates",
        "/api/v1/templates/{id}",
        "/api/v1/users/{user_id}/coupons",
        "/api/v1/coupons/{id}",
        "/api/v1/presale-campaigns",
        "/api/v1/presale-campaigns/{id}",
        "/api/v1/orders",
        "/api/v1/orders/{order_no}",
        "/api/v1/orders/{order_no}/pay",
        "/api/v1/orders/{order_no}/deposit-payment",
        "/api/v1/orders/{order_no}/final-payment-quote",
        "/api/v1/orders/{order_no}/final-payment",
        "/api/v1/orders/{order_no}/cancel",
        "/api/v1/orders/{order_no}/refund",
        "/api/v1/expirations/pending",
    ] {
        assert!(doc.body["paths"][path].is_object(), "openapi lacks {path}");
    }
}

#[tokio::test]
async fn malformed_bodies_get_a_json_400_and_oversized_ones_a_413() {
    let app = spawn_app().await;
    let auth = format!("Bearer {TOKEN}");
    let h = [("authorization", auth.as_str())];
    for body in ["{", "[1,2]", "\"text\"", "{\"name\": 1}", "null"] {
        let r = app.post_raw("/api/v1/templates", body, &h).await;
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_request"),
            "{body}: {}",
            r.text
        );
    }
    let r = app.post_raw("/api/v1/templates", "{\"name\": 1}", &h).await;
    assert_eq!(r.field(), "name");
    let huge = format!("{{\"name\": \"{}\"}}", "x".repeat(100_000));
    let r = app.post_raw("/api/v1/templates", huge, &h).await;
    assert_eq!((r.status, r.code()), (413, "invalid_request"));
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_in_the_error_model() {
    let app = spawn_app().await;
    let r = app.get("/api/v1/nothing-here").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app.patch("/api/v1/orders", serde_json::json!({})).await;
    assert_eq!((r.status, r.code()), (405, "invalid_request"));
}

#[tokio::test]
async fn hostile_path_and_query_input_never_produces_a_server_error() {
    let app = spawn_app().await;
    for path in [
        "/api/v1/coupons/%FF%FE",
        "/api/v1/users/%00/coupons",
        "/api/v1/users/%E4%BD%A0%E5%A5%BD/coupons?status=%FF",
        "/api/v1/orders/'%3B%20DROP%20TABLE%20orders%3B--",
        "/api/v1/users/u1/coupons?limit=99999999999999999999",
    ] {
        let r = app.get(path).await;
        assert!(r.status < 500, "{path}: {} {}", r.status, r.text);
        assert!(
            r.body["error"]["code"].is_string() || r.status == 200,
            "{path}: {}",
            r.text
        );
    }
    let long = format!("/api/v1/coupons/{}", "a".repeat(300));
    assert_eq!(app.get(&long).await.status, 400);
}

#[tokio::test]
async fn the_same_key_and_body_replays_the_first_response() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let body = json!({"template_id": t["id"]});
    let first = app
        .post_idem("/api/v1/users/u1/coupons", "claim-1", body.clone())
        .await;
    assert_eq!(first.status, 201);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let again = app
        .post_idem("/api/v1/users/u1/coupons", "claim-1", body.clone())
        .await;
    assert_eq!(again.status, 201);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.body, first.body);
    let list = app.get("/api/v1/users/u1/coupons").await;
    assert_eq!(
        list.body["coupons"].as_array().map(Vec::len),
        Some(1),
        "claimed once"
    );
}

#[tokio::test]
async fn the_same_key_with_another_body_is_refused_with_422() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let first = app
        .post_idem(
            "/api/v1/users/u1/coupons",
            "k",
            json!({"template_id": t["id"]}),
        )
        .await;
    assert_eq!(first.status, 201);
    let r = app
        .post_idem(
            "/api/v1/users/u2/coupons",
            "k",
            json!({"template_id": t["id"]}),
        )
        .await;
    assert_eq!((r.status, r.code()), (422, "idempotency_key_reused"));
    let r = app
        .post_idem("/api/v1/templates", "k", crate::common::template_body())
        .await;
    assert_eq!((r.status, r.code()), (422, "idempotency_key_reused"));
}

#[tokio::test]
async fn keys_are_scoped_per_token_and_kept_for_24_hours() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let body = json!({"template_id": t["id"]});
    let a = app
        .post_idem_as("/api/v1/users/u1/coupons", "k", body.clone(), TOKEN)
        .await;
    let b = app
        .post_idem_as(
            "/api/v1/users/u1/coupons",
            "k",
            body.clone(),
            "second-token",
        )
        .await;
    assert_eq!((a.status, b.status), (201, 201));
    assert_ne!(
        a.body["id"], b.body["id"],
        "another token's key is another key"
    );
    app.advance(24 * 3600 - 1);
    let r = app
        .post_idem("/api/v1/users/u1/coupons", "k", body.clone())
        .await;
    assert_eq!(
        r.body["id"], a.body["id"],
        "still replayed just before 24 h"
    );
    app.advance(1);
    let r = app.post_idem("/api/v1/users/u1/coupons", "k", body).await;
    assert_eq!(r.status, 201);
    assert!(r.headers.get("idempotent-replayed").is_none());
    assert_ne!(
        r.body["id"], a.body["id"],
        "after 24 h the key starts afresh"
    );
}

#[tokio::test]
async fn a_refusal_is_replayed_too() {
    let app = spawn_app().await;
    let r = app
        .post_idem(
            "/api/v1/orders",
            "o",
            normal_order("N1", "u1", Some("cpn_missing"), 100),
        )
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let again = app
        .post_idem(
            "/api/v1/orders",
            "o",
            normal_order("N1", "u1", Some("cpn_missing"), 100),
        )
        .await;
    assert_eq!(again.status, 404);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    assert_eq!(again.body, r.body);
}

#[tokio::test]
async fn a_bad_idempotency_key_is_a_bad_request() {
    let app = spawn_app().await;
    let long = "k".repeat(256);
    let r = app
        .post_idem("/api/v1/templates", &long, crate::common::template_body())
        .await;
    assert_eq!((r.status, r.field()), (400, "Idempotency-Key"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_key_while_the_first_request_is_running_answers_409() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let body = json!({"template_id": t["id"]});
    let path = "/api/v1/users/u1/coupons";
    // Hold the database so the first request cannot finish.
    let mut blocker = sqlx::AnyConnection::connect(&app.db.url)
        .await
        .expect("connect");
    match store() {
        Store::Sqlite => {
            blocker
                .execute("BEGIN IMMEDIATE")
                .await
                .expect("take the write lock");
        }
        Store::Postgres => {
            let req = couponkeeper::service::IdempotencyRequest::new(
                couponkeeper::service::idempotency::token_scope(TOKEN),
                "slow".into(),
                "POST",
                path,
                b"",
                201,
            );
            blocker.execute("BEGIN").await.expect("begin");
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(req.lock_key())
                .execute(&mut blocker)
                .await
                .expect("take the key's advisory lock");
        }
    }
    let base = app.base.clone();
    let client = app.client.clone();
    let send = move || {
        let (base, client, body) = (base.clone(), client.clone(), body.clone());
        tokio::spawn(async move {
            let r = client
                .post(format!("{base}{path}"))
                .bearer_auth(TOKEN)
                .header("Idempotency-Key", "slow")
                .json(&body)
                .send()
                .await
                .expect("send");
            let status = r.status().as_u16();
            let v: serde_json::Value = r.json().await.unwrap_or_default();
            (status, v)
        })
    };
    // Two requests with the same key while the database is held: the one
    // that enters first cannot finish, so the other must be refused as in
    // progress, at once. That refusal is the first answer to arrive.
    let mut a = send();
    let mut b = send();
    let (first, rest) = tokio::select! {
        r = &mut a => (r, b),
        r = &mut b => (r, a),
    };
    let (status, v) = first.expect("join");
    blocker.execute("ROLLBACK").await.expect("release");
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (409, Some("idempotency_in_progress")),
        "{v}"
    );
    let (status, v) = rest.await.expect("join");
    assert!(
        status == 201 || (status == 409 && v["error"]["code"] == "idempotency_in_progress"),
        "{status} {v}"
    );
    let after = send().await.expect("join");
    assert_eq!(after.0, 201, "{}", after.1);
}

/// PostgreSQL: waits (at most 5 s) until some backend of this database
/// is waiting for a lock: the request under test has reached its blocked
/// statement.
async fn until_a_backend_waits_for_a_lock(probe: &mut sqlx::AnyConnection) {
    for _ in 0..100 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&mut *probe)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the request never blocked");
}

/// Stores `body` as the first answer to `key` for a POST of `json` to
/// `path`, as another instance finishing the same request would.
async fn record_first_answer(
    conn: &mut sqlx::AnyConnection,
    path: &str,
    key: &str,
    json: &serde_json::Value,
    status: u16,
    body: &str,
    now_ms: i64,
) {
    let bytes = serde_json::to_vec(json).expect("json");
    // The fingerprint covers the path as the nested API router sees it.
    let routed = path.strip_prefix("/api/v1").unwrap_or(path);
    let req = couponkeeper::service::IdempotencyRequest::new(
        couponkeeper::service::idempotency::token_scope(TOKEN),
        key.into(),
        "POST",
        routed,
        &bytes,
        status,
    );
    let stored = couponkeeper::store::idempotency::insert(
        conn,
        &req.scope,
        &req.key,
        &req.fingerprint,
        status,
        body,
        now_ms,
    )
    .await
    .expect("insert the record");
    assert!(stored);
}

// The key's lock and lookup are one PostgreSQL statement whose snapshot
// predates the lock, so a first request on another instance can commit
// unseen in between. These two tests put that other instance's commit in
// exactly that window and require the replay, not a second change.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_key_another_instance_answered_meanwhile_replays_that_answer() {
    if store() == Store::Sqlite {
        // One process owns the file: no other instance can interleave.
        return;
    }
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().expect("id").to_string();
    let body = json!({"template_id": tid});
    let path = "/api/v1/users/u-race/coupons";
    let mut other = sqlx::AnyConnection::connect(&app.db.url)
        .await
        .expect("connect");
    let mut probe = sqlx::AnyConnection::connect(&app.db.url)
        .await
        .expect("connect");
    // The other instance holds the stock rows, so our claim stops after
    // its lookup, at the stock UPDATE.
    other.execute("BEGIN").await.expect("begin");
    sqlx::query("SELECT shard FROM template_stock_shards WHERE template_id = $1 FOR UPDATE")
        .bind(&tid)
        .fetch_all(&mut other)
        .await
        .expect("lock the shards");
    let request = {
        let (base, client, body) = (app.base.clone(), app.client.clone(), body.clone());
        tokio::spawn(async move {
            let r = client
                .post(format!("{base}{path}"))
                .bearer_auth(TOKEN)
                .header("Idempotency-Key", "raced")
                .json(&body)
                .send()
                .await
                .expect("send");
            let replayed = r.headers().get("idempotent-replayed").is_some();
            (
                r.status().as_u16(),
                replayed,
                r.text().await.unwrap_or_default(),
            )
        })
    };
    until_a_backend_waits_for_a_lock(&mut probe).await;
    let first = r#"{"first":"answer"}"#;
    record_first_answer(
        &mut other,
        path,
        "raced",
        &body,
        201,
        first,
        app.now().timestamp_millis(),
    )
    .await;
    other.execute("COMMIT").await.expect("commit");
    let (status, replayed, text) = request.await.expect("join");
    assert_eq!((status, replayed, text.as_str()), (201, true, first));
    let coupons: i64 =
        sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = $1")
            .bind(&tid)
            .fetch_one(&mut probe)
            .await
            .expect("count");
    assert_eq!(
        coupons, 0,
        "our claim was rolled back, not kept beside the replay"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pay_refused_because_another_instance_paid_with_the_same_key_replays_its_answer() {
    if store() == Store::Sqlite {
        return;
    }
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let coupon = app.claim("u-pay", t["id"].as_str().expect("id")).await;
    let r = app
        .order(normal_order(
            "o-race",
            "u-pay",
            coupon["id"].as_str(),
            100_000,
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let path = "/api/v1/orders/o-race/pay";
    let body = json!({});
    let mut other = sqlx::AnyConnection::connect(&app.db.url)
        .await
        .expect("connect");
    let mut probe = sqlx::AnyConnection::connect(&app.db.url)
        .await
        .expect("connect");
    // The other instance is paying the order (row locked, not committed).
    other.execute("BEGIN").await.expect("begin");
    sqlx::query("UPDATE orders SET status = 'paid' WHERE order_no = 'o-race'")
        .execute(&mut other)
        .await
        .expect("pay elsewhere");
    let request = {
        let (base, client, body) = (app.base.clone(), app.client.clone(), body.clone());
        tokio::spawn(async move {
            let r = client
                .post(format!("{base}{path}"))
                .bearer_auth(TOKEN)
                .header("Idempotency-Key", "raced-pay")
                .json(&body)
                .send()
                .await
                .expect("send");
            let replayed = r.headers().get("idempotent-replayed").is_some();
            (
                r.status().as_u16(),
                replayed,
                r.text().await.unwrap_or_default(),
            )
        })
    };
    until_a_backend_waits_for_a_lock(&mut probe).await;
    let first = r#"{"paid":"elsewhere"}"#;
    record_first_answer(
        &mut other,
        path,
        "raced-pay",
        &body,
        200,
        first,
        app.now().timestamp_millis(),
    )
    .await;
    other.execute("COMMIT").await.expect("commit");
    let (status, replayed, text) = request.await.expect("join");
    assert_eq!((status, replayed, text.as_str()), (200, true, first));
}

#[tokio::test]
async fn a_database_outage_answers_503_unavailable_not_500() {
    let app = spawn_app().await;
    app.service.db().pool().close().await;
    let r = app.get_as("/readyz", None).await;
    assert_eq!((r.status, r.code()), (503, "unavailable"));
    let r = app.get("/api/v1/templates/anything").await;
    assert_eq!((r.status, r.code()), (503, "unavailable"));
    let r = app
        .post("/api/v1/templates", crate::common::template_body())
        .await;
    assert_eq!((r.status, r.code()), (503, "unavailable"));
}

#[tokio::test]
async fn every_response_carries_a_request_id_that_lands_in_the_event_rows() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let r = app
        .client
        .post(format!("{}/api/v1/users/u1/coupons", app.base))
        .bearer_auth(TOKEN)
        .header("x-request-id", "req-abc-123")
        .json(&json!({"template_id": t["id"]}))
        .send()
        .await
        .expect("send");
    assert_eq!(
        r.headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok()),
        Some("req-abc-123")
    );
    let c: serde_json::Value = r.json().await.expect("json");
    let coupon = app.coupon(c["id"].as_str().expect("id")).await;
    assert_eq!(coupon["events"][0]["request_id"], "req-abc-123");
    let plain = app.get_as("/healthz", None).await;
    assert!(plain.headers.get("x-request-id").is_some());
}
