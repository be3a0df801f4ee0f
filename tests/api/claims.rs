//! Templates, claiming and reading coupons over HTTP.

use crate::common::{merge, spawn_app, template_body};
use serde_json::json;

#[tokio::test]
async fn a_template_is_created_with_zero_claimed_and_can_be_read_back() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"total_stock": 10, "per_user_limit": 2}))
        .await;
    assert_eq!(t["claimed"], 0);
    assert_eq!(t["total_stock"], 10);
    let id = t["id"].as_str().expect("id");
    let r = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["name"], "满300减50");
    assert_eq!(r.body["per_user_limit"], 2);
}

#[tokio::test]
async fn claiming_counts_against_stock_and_the_template_shows_it() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": 2})).await;
    let id = t["id"].as_str().expect("id");
    let c1 = app.claim("u1", id).await;
    assert_eq!(c1["status"], "available");
    assert_eq!(c1["user_id"], "u1");
    assert_eq!(c1["value_cents"], 5000);
    app.claim("u2", id).await;
    let r = app
        .post("/api/v1/users/u3/coupons", json!({"template_id": id}))
        .await;
    assert_eq!((r.status, r.code()), (409, "out_of_stock"));
    let t = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(t.body["claimed"], 2);
}

#[tokio::test]
async fn an_invalid_template_is_refused_naming_the_field_and_nothing_is_stored() {
    let app = spawn_app().await;
    for (overrides, field) in [
        (json!({"kind": "bogus"}), "kind"),
        (json!({"value_cents": -1}), "value_cents"),
        (json!({"value_cents": 12.5}), "value_cents"),
        (json!({"name": ""}), "name"),
        (json!({"total_stock": 0}), "total_stock"),
        (json!({"valid_seconds": null}), "valid_until"),
        (
            json!({"valid_seconds": null, "valid_until": "2026-11-10T00:00:00Z"}),
            "valid_until",
        ),
        (
            json!({"valid_seconds": null, "valid_from": "2026-12-01T00:00:00Z", "valid_until": "yesterday"}),
            "valid_until",
        ),
        (
            json!({"kind": "percent", "value_cents": null, "percent_off": 101}),
            "percent_off",
        ),
        (json!({"categories": "shoes"}), "categories"),
    ] {
        let r = app
            .post(
                "/api/v1/templates",
                merge(template_body(), overrides.clone()),
            )
            .await;
        assert_eq!(r.status, 400, "{overrides}: {}", r.text);
        assert_eq!(r.code(), "invalid_request");
        assert_eq!(r.field(), field, "{overrides}: {}", r.text);
    }
    let stored: i64 = sqlx::query_scalar("SELECT CAST(COUNT(*) AS BIGINT) FROM templates")
        .fetch_one(app.db.db.pool())
        .await
        .expect("count");
    assert_eq!(stored, 0, "a refused request writes nothing");
}

#[tokio::test]
async fn an_absolute_window_without_valid_from_starts_when_the_template_is_created() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"valid_seconds": null, "valid_until": app.at(3600)}))
        .await;
    assert_eq!(t["valid_from"], "2026-11-11T00:00:00.000Z");
    let c = app.claim("u1", t["id"].as_str().expect("id")).await;
    assert_eq!(
        (c["starts_at"].as_str(), c["ends_at"].as_str()),
        (
            Some("2026-11-11T00:00:00.000Z"),
            Some("2026-11-11T01:00:00.000Z")
        )
    );
}

#[tokio::test]
async fn a_user_cannot_claim_more_than_the_per_user_limit() {
    let app = spawn_app().await;
    let t = app.template(json!({"per_user_limit": 2})).await;
    let id = t["id"].as_str().expect("id");
    app.claim("u1", id).await;
    app.claim("u1", id).await;
    let r = app
        .post("/api/v1/users/u1/coupons", json!({"template_id": id}))
        .await;
    assert_eq!((r.status, r.code()), (409, "claim_limit_reached"));
    app.claim("u2", id).await;
}

#[tokio::test]
async fn a_template_whose_window_has_ended_is_inactive() {
    let app = spawn_app().await;
    let t = app
        .template(
            json!({"valid_seconds": null, "valid_from": app.at(-100), "valid_until": app.at(60)}),
        )
        .await;
    let id = t["id"].as_str().expect("id");
    app.claim("u1", id).await;
    app.advance(60);
    let r = app
        .post("/api/v1/users/u1/coupons", json!({"template_id": id}))
        .await;
    assert_eq!((r.status, r.code()), (409, "template_inactive"));
}

#[tokio::test]
async fn claiming_an_unknown_template_is_not_found_and_a_missing_id_is_a_bad_request() {
    let app = spawn_app().await;
    let r = app
        .post(
            "/api/v1/users/u1/coupons",
            json!({"template_id": "tpl_nope"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app.post("/api/v1/users/u1/coupons", json!({})).await;
    assert_eq!((r.status, r.field()), (400, "template_id"));
    let r = app.get("/api/v1/templates/tpl_nope").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
    let r = app.get("/api/v1/coupons/cpn_nope").await;
    assert_eq!((r.status, r.code()), (404, "not_found"));
}

#[tokio::test]
async fn a_coupon_past_its_end_reads_expired_before_any_job_runs_and_nothing_is_written() {
    let app = spawn_app().await;
    let t = app.template(json!({"valid_seconds": 10})).await;
    let c = app.claim("u1", t["id"].as_str().expect("id")).await;
    let id = c["id"].as_str().expect("id");
    assert_eq!(c["ends_at"], "2026-11-11T00:00:10.000Z");
    app.advance(9);
    assert_eq!(app.coupon(id).await["status"], "available");
    app.advance(1);
    let now = app.coupon(id).await;
    assert_eq!(now["status"], "expired", "ends_at is exclusive");
    let stored: String = sqlx::query_scalar("SELECT status FROM coupons WHERE id = $1")
        .bind(id)
        .fetch_one(app.db.db.pool())
        .await
        .expect("row");
    assert_eq!(stored, "available", "reads never write");
    let expired = app.get("/api/v1/users/u1/coupons?status=expired").await;
    assert_eq!(expired.body["coupons"].as_array().map(Vec::len), Some(1));
    let available = app.get("/api/v1/users/u1/coupons?status=available").await;
    assert_eq!(available.body["coupons"].as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn listing_a_users_coupons_filters_by_status_and_refuses_unknown_statuses() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let id = t["id"].as_str().expect("id");
    let c1 = app.claim("u1", id).await;
    app.claim("u1", id).await;
    app.claim("u2", id).await;
    let r = app.get("/api/v1/users/u1/coupons").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["coupons"].as_array().map(Vec::len), Some(2));
    let order = app
        .order(crate::common::normal_order(
            "N1",
            "u1",
            c1["id"].as_str(),
            30000,
        ))
        .await;
    assert_eq!(order.status, 201, "{}", order.text);
    let locked = app.get("/api/v1/users/u1/coupons?status=locked").await;
    assert_eq!(locked.body["coupons"][0]["id"], c1["id"]);
    let r = app.get("/api/v1/users/u1/coupons?status=bogus").await;
    assert_eq!((r.status, r.field()), (400, "status"));
    let r = app.get("/api/v1/users/u1/coupons?limit=0").await;
    assert_eq!((r.status, r.field()), (400, "limit"));
    let r = app.get("/api/v1/users/u1/coupons?limit=abc").await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn a_coupon_shows_its_timeline_oldest_first() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let c = app.claim("u1", t["id"].as_str().expect("id")).await;
    let id = c["id"].as_str().expect("id");
    let o = app
        .order(crate::common::normal_order("N1", "u1", Some(id), 30000))
        .await;
    assert_eq!(o.status, 201);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let c = app.coupon(id).await;
    let events = c["events"].as_array().expect("events");
    let steps: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap_or("-").to_string(),
                e["to"].as_str().unwrap_or("").to_string(),
                e["action"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("-".into(), "available".into(), "claim".into()),
            ("available".into(), "locked".into(), "checkout_lock".into()),
            ("locked".into(), "used".into(), "use".into()),
        ]
    );
    assert!(
        events[1]["actor"]
            .as_str()
            .unwrap_or("")
            .starts_with("api:")
    );
    assert_eq!(events[2]["order_no"], "N1");
    assert!(events[2]["at"].as_str().unwrap_or("").ends_with('Z'));
}

#[tokio::test]
async fn a_pre_release_coupon_can_be_claimed_but_not_used_before_it_starts() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"valid_seconds": 3600, "valid_from": app.at(600)}))
        .await;
    let c = app.claim("u1", t["id"].as_str().expect("id")).await;
    assert_eq!(c["status"], "available");
    let id = c["id"].as_str().expect("id");
    let r = app
        .order(crate::common::normal_order("N1", "u1", Some(id), 30000))
        .await;
    assert_eq!((r.status, r.code()), (409, "coupon_not_started"));
    app.advance(600);
    let r = app
        .order(crate::common::normal_order("N1", "u1", Some(id), 30000))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

#[tokio::test]
async fn a_percent_coupon_floors_and_caps_its_discount() {
    let app = spawn_app().await;
    let t = app
        .template(
            json!({"kind": "percent", "value_cents": null, "percent_off": 15,
            "max_discount_cents": 2000, "min_order_cents": 0}),
        )
        .await;
    let tid = t["id"].as_str().expect("id");
    let small = app.claim("u1", tid).await;
    let big = app.claim("u1", tid).await;
    let r = app
        .order(crate::common::normal_order(
            "N1",
            "u1",
            small["id"].as_str(),
            999,
        ))
        .await;
    assert_eq!(r.body["coupon_discount_cents"], 149, "{}", r.text);
    assert_eq!(r.body["amount_due_cents"], 850);
    let r = app
        .order(crate::common::normal_order(
            "N2",
            "u1",
            big["id"].as_str(),
            100000,
        ))
        .await;
    assert_eq!(r.body["coupon_discount_cents"], 2000);
    assert_eq!(r.body["amount_due_cents"], 98000);
}
