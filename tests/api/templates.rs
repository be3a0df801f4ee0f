//! Operator routes for templates: `GET /templates` (newest first, by
//! standing and name, keyset pages, counts by effective status) and
//! pause / resume (a paused template refuses claims; its coupons are
//! unaffected), on both stores.

use crate::common::fixtures::count;
use crate::common::{normal_order, spawn_app};
use serde_json::{Value, json};

fn names(page: &Value) -> Vec<String> {
    page["templates"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn templates_list_newest_first_in_keyset_pages_and_filter_by_name() {
    let app = spawn_app().await;
    for name in ["满300减50", "满199减20 phones", "100% off_test"] {
        app.template(json!({"name": name})).await;
        app.advance(1);
    }
    let r = app.get("/api/v1/templates").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        names(&r.body),
        vec!["100% off_test", "满199减20 phones", "满300减50"]
    );
    assert!(r.body["next"].is_null());
    let first = app.get("/api/v1/templates?limit=2").await;
    assert_eq!(names(&first.body).len(), 2);
    let next = first.body["next"]
        .as_str()
        .expect("a next cursor")
        .to_string();
    let second = app
        .get(&format!("/api/v1/templates?limit=2&cursor={next}"))
        .await;
    assert_eq!(names(&second.body), vec!["满300减50"]);
    // A name part, with LIKE's own characters taken literally.
    let r = app.get("/api/v1/templates?q=%E6%BB%A1").await; // 满
    assert_eq!(names(&r.body).len(), 2);
    let r = app.get("/api/v1/templates?q=%25%20off_").await; // "% off_"
    assert_eq!(names(&r.body), vec!["100% off_test"]);
    let r = app.get("/api/v1/templates?q=_").await;
    assert_eq!(names(&r.body), vec!["100% off_test"]);
    for bad in ["status=open", "limit=0", "limit=201", "cursor=nonsense"] {
        let r = app.get(&format!("/api/v1/templates?{bad}")).await;
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_request"),
            "{bad}: {}",
            r.text
        );
    }
}

#[tokio::test]
async fn a_paused_template_refuses_claims_keeps_its_coupons_and_resumes() {
    let app = spawn_app().await;
    let t = app.template(json!({"min_order_cents": 0})).await;
    let id = t["id"].as_str().unwrap_or_default().to_string();
    assert_eq!(t["status"], "active");
    assert!(t["paused_at"].is_null());
    let held = app.claim("u1", &id).await;

    let r = app
        .post(&format!("/api/v1/templates/{id}/pause"), json!({}))
        .await;
    assert_eq!(
        (r.status, r.field()),
        (400, "reason"),
        "a reason is required"
    );
    let r = app
        .post(
            &format!("/api/v1/templates/{id}/pause"),
            json!({"reason": "库存核对"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "paused");
    assert!(r.body["paused_at"].is_string());
    let claim = app
        .post("/api/v1/users/u2/coupons", json!({"template_id": id}))
        .await;
    assert_eq!((claim.status, claim.code()), (409, "template_inactive"));
    // The coupon already held is still usable.
    let order = app
        .order(normal_order("N1", "u1", held["id"].as_str(), 10_000))
        .await;
    assert_eq!(order.status, 201, "{}", order.text);
    // Pausing again changes nothing.
    let again = app
        .post(
            &format!("/api/v1/templates/{id}/pause"),
            json!({"reason": "again"}),
        )
        .await;
    assert_eq!(
        (again.status, again.body["status"].clone()),
        (200, json!("paused"))
    );
    let paused = app.get("/api/v1/templates?status=paused").await;
    assert_eq!(names(&paused.body).len(), 1);
    assert_eq!(
        names(&app.get("/api/v1/templates?status=active").await.body).len(),
        0
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM staff_audit WHERE action = 'template_pause'"
        )
        .await,
        1,
        "one pause recorded, with its reason"
    );

    let r = app
        .post(
            &format!("/api/v1/templates/{id}/resume"),
            json!({"reason": "核对完毕"}),
        )
        .await;
    assert_eq!((r.status, r.body["status"].clone()), (200, json!("active")));
    assert!(r.body["paused_at"].is_null());
    let claim = app
        .post("/api/v1/users/u2/coupons", json!({"template_id": id}))
        .await;
    assert_eq!(claim.status, 201, "{}", claim.text);
    let r = app
        .post("/api/v1/templates/tpl_nope/pause", json!({"reason": "x"}))
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn a_template_reads_not_started_or_ended_by_its_validity_and_counts_its_coupons_by_effective_status()
 {
    let app = spawn_app().await;
    let later = app
        .template(json!({"name": "later", "valid_seconds": null,
                         "valid_from": app.at(3600), "valid_until": app.at(7200)}))
        .await;
    assert_eq!(later["status"], "not_started");
    let short = app
        .template(json!({"name": "short", "valid_seconds": null, "valid_until": app.at(120), "min_order_cents": 0}))
        .await;
    let sid = short["id"].as_str().unwrap_or_default().to_string();
    let a = app.claim("u1", &sid).await;
    app.claim("u2", &sid).await;
    let r = app
        .order(normal_order("N1", "u1", a["id"].as_str(), 10_000))
        .await;
    assert_eq!(r.status, 201);
    let t = app.get(&format!("/api/v1/templates/{sid}")).await;
    assert_eq!(
        t.body["counts"],
        json!({"available": 1, "locked": 1, "used": 0, "expired": 0, "invalidated": 0})
    );
    app.advance(121);
    let t = app.get(&format!("/api/v1/templates/{sid}")).await;
    assert_eq!(t.body["status"], "ended");
    // The unlocked coupon is past its end: it counts as expired although
    // no job has written that yet; the locked one stays locked.
    assert_eq!(t.body["counts"]["available"], 0);
    assert_eq!(t.body["counts"]["expired"], 1);
    assert_eq!(t.body["counts"]["locked"], 1);
    assert_eq!(
        names(&app.get("/api/v1/templates?status=ended").await.body),
        vec!["short"]
    );
    assert_eq!(
        names(&app.get("/api/v1/templates?status=not_started").await.body),
        vec!["later"]
    );
}

#[tokio::test]
async fn safe_edits_rename_raise_stock_and_end_claiming_and_anything_else_is_refused_with_the_reason()
 {
    let app = spawn_app().await;
    let t = app
        .template(json!({"total_stock": 2, "min_order_cents": 0}))
        .await;
    let id = t["id"].as_str().unwrap_or_default().to_string();
    app.claim("u1", &id).await;
    app.claim("u2", &id).await;
    let sold_out = app
        .post("/api/v1/users/u3/coupons", json!({"template_id": id}))
        .await;
    assert_eq!(sold_out.code(), "out_of_stock");
    let path = format!("/api/v1/templates/{id}");

    // More stock: claims go on, and the shards' capacity sums to it.
    let r = app
        .patch(&path, json!({"name": "满300减50 加量", "total_stock": 5}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (r.body["name"].clone(), r.body["total_stock"].clone()),
        (json!("满300减50 加量"), json!(5))
    );
    for user in ["u3", "u4", "u5"] {
        let c = app
            .post(
                &format!("/api/v1/users/{user}/coupons"),
                json!({"template_id": id}),
            )
            .await;
        assert_eq!(c.status, 201, "{user}: {}", c.text);
    }
    let c = app
        .post("/api/v1/users/u6/coupons", json!({"template_id": id}))
        .await;
    assert_eq!(c.code(), "out_of_stock", "exactly 5 in all");
    assert_eq!(
        count(&app, &format!("SELECT CAST(SUM(capacity) AS BIGINT) FROM template_stock_shards WHERE template_id = '{id}'")).await,
        5
    );

    // Less stock, or meaning-changing fields: 409 with the reason.
    for body in [
        json!({"total_stock": 4}),
        json!({"value_cents": 100}),
        json!({"categories": ["shoes"]}),
        json!({"min_order_cents": 0}),
        json!({"claim_ends_at": app.at(-1)}),
    ] {
        let r = app.patch(&path, body.clone()).await;
        assert_eq!(
            (r.status, r.code()),
            (409, "edit_not_allowed"),
            "{body}: {}",
            r.text
        );
        assert!(!r.body["error"]["message"].as_str().unwrap_or("").is_empty());
    }
    let r = app.patch(&path, json!({"name": ""})).await;
    assert_eq!((r.status, r.field()), (400, "name"));

    // Ending claiming early: claims are refused from then on.
    let r = app.patch(&path, json!({"claim_ends_at": app.at(60)})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "active");
    app.advance(61);
    let t = app.get(&path).await;
    assert_eq!(t.body["status"], "ended");
    let c = app
        .post("/api/v1/users/u7/coupons", json!({"template_id": id}))
        .await;
    assert_eq!(c.code(), "template_inactive");
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM staff_audit WHERE action = 'template_edit'"
        )
        .await,
        2,
        "each applied edit is in the staff log"
    );
}
