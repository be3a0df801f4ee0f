//! Templates, claiming and reading coupons over HTTP.

mod common;

use common::{merge, spawn_app, template_body};
use serde_json::json;

#[tokio::test]
async fn a_template_is_created_with_zero_claimed_and_can_be_read_back() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": 10, "per_user_limit": 2})).await;
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
    let r = app.post("/api/v1/users/u3/coupons", json!({"template_id": id})).await;
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
        (json!({"valid_seconds": null, "valid_until": "2026-12-01T00:00:00Z"}), "valid_from"),
        (json!({"valid_seconds": null, "valid_from": "2026-12-01T00:00:00Z", "valid_until": "yesterday"}), "valid_until"),
        (json!({"kind": "percent", "value_cents": null, "percent_off": 101}), "percent_off"),
        (json!({"categories": "shoes"}), "categories"),
    ] {
        let r = app.post("/api/v1/templates", merge(template_body(), overrides.clone())).await;
        assert_eq!(r.status, 400, "{overrides}: {}", r.text);
        assert_eq!(r.code(), "invalid_request");
        assert_eq!(r.field(), field, "{overrides}: {}", r.text);
    }
}
