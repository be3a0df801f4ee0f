//! Operator routes for presale campaigns: `GET /presale-campaigns` (newest
//! first, keyset pages, an index range scan on both stores), `POST` without
//! a policy (a `lock` campaign), `PATCH /presale-campaigns/{id}` (policy or
//! compensation mode, only before the final-payment window opens, audited;
//! operators, admins and the API token; support refused), and the
//! per-campaign compensation mode of `swap_or_compensate` at the final
//! payment (a coupon of the same value instead of a deduction).

use crate::common::fixtures::{count, user_with_coupon};
use crate::common::{Store, TestApp, presale_order, spawn_app, store};
use couponkeeper::domain::ids::CampaignId;
use couponkeeper::domain::staff::{Role, StaffName};
use couponkeeper::service::ServiceError;
use couponkeeper::service::campaigns::CampaignPatch;
use couponkeeper::service::support::Authority;
use serde_json::{Value, json};

fn names(page: &Value) -> Vec<String> {
    page["campaigns"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Creates a campaign from `body`; asserts 201.
async fn create(app: &TestApp, body: Value) -> Value {
    let r = app.post("/api/v1/presale-campaigns", body).await;
    assert_eq!(r.status, 201, "create campaign: {}", r.text);
    r.body
}

fn window(app: &TestApp, opens_in: i64) -> Value {
    json!({
        "name": "双11预售",
        "final_payment_starts_at": app.at(opens_in),
        "final_payment_ends_at": app.at(opens_in + 3600),
    })
}

fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    base
}

fn staff(name: &str, role: Role) -> (couponkeeper::service::Ctx, Authority) {
    let name = StaffName::parse(name).expect("staff name");
    (
        couponkeeper::service::Ctx::new(name.actor(), None),
        Authority::Staff { name, role },
    )
}

#[tokio::test]
async fn campaigns_list_newest_first_in_keyset_pages_with_their_orders_by_status() {
    let app = spawn_app().await;
    for name in ["春季预售", "618 presale", "双11预售"] {
        create(&app, with(window(&app, 3600), json!({"name": name}))).await;
        app.advance(1);
    }
    let r = app.get("/api/v1/presale-campaigns").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(names(&r.body), vec!["双11预售", "618 presale", "春季预售"]);
    assert!(r.body["next"].is_null());
    assert_eq!(
        r.body["campaigns"][0]["orders"],
        json!({"pending_deposit": 0, "deposit_paid": 0, "final_paid": 0, "closed": 0, "refunded": 0})
    );
    let first = app.get("/api/v1/presale-campaigns?limit=2").await;
    assert_eq!(names(&first.body), vec!["双11预售", "618 presale"]);
    let next = first.body["next"].as_str().expect("a cursor").to_string();
    let second = app
        .get(&format!("/api/v1/presale-campaigns?limit=2&cursor={next}"))
        .await;
    assert_eq!(names(&second.body), vec!["春季预售"]);
    assert!(second.body["next"].is_null());
    for bad in ["limit=0", "limit=201", "cursor=nonsense", "limit=x"] {
        let r = app.get(&format!("/api/v1/presale-campaigns?{bad}")).await;
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_request"),
            "{bad}: {}",
            r.text
        );
    }
    // A deposit-paid order counts on its campaign's line.
    let cid = user_with_coupon(&app, "u1", 10 * 86_400).await;
    let camp = create(&app, window(&app, 3600)).await;
    let r = app
        .order(presale_order(
            "P1",
            "u1",
            Some(&cid),
            camp["id"].as_str().unwrap_or(""),
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.get("/api/v1/presale-campaigns?limit=1").await;
    assert_eq!(r.body["campaigns"][0]["orders"]["deposit_paid"], 1);
}

#[tokio::test]
async fn a_campaign_created_without_a_policy_is_a_lock_campaign_compensating_by_deduction() {
    let app = spawn_app().await;
    let c = create(&app, window(&app, 3600)).await;
    assert_eq!(c["policy"], "lock");
    assert_eq!(c["compensation_mode"], "deduction");
    let c = create(&app, with(window(&app, 3600), json!({"policy": null}))).await;
    assert_eq!(c["policy"], "lock");
    let c = create(
        &app,
        with(
            window(&app, 3600),
            json!({"policy": "swap_or_compensate", "compensation_mode": "coupon"}),
        ),
    )
    .await;
    assert_eq!(
        (c["policy"].clone(), c["compensation_mode"].clone()),
        (json!("swap_or_compensate"), json!("coupon"))
    );
    let got = app
        .get(&format!(
            "/api/v1/presale-campaigns/{}",
            c["id"].as_str().unwrap_or("")
        ))
        .await;
    assert_eq!(got.body["compensation_mode"], "coupon");
    for (extra, field) in [
        (json!({"policy": "never"}), "policy"),
        (json!({"compensation_mode": "cash"}), "compensation_mode"),
        (json!({"name": ""}), "name"),
    ] {
        let r = app
            .post(
                "/api/v1/presale-campaigns",
                with(window(&app, 3600), extra.clone()),
            )
            .await;
        assert_eq!((r.status, r.field()), (400, field), "{extra}: {}", r.text);
    }
}

#[tokio::test]
async fn a_policy_change_before_the_window_opens_is_applied_and_audited_with_before_after_and_reason()
 {
    let app = spawn_app().await;
    let c = create(&app, window(&app, 3600)).await;
    let path = format!(
        "/api/v1/presale-campaigns/{}",
        c["id"].as_str().unwrap_or("")
    );
    let r = app
        .patch(&path, json!({"policy": "strict", "reason": "预售规则调整"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["policy"], "strict");
    assert_eq!(app.get(&path).await.body["policy"], "strict");
    let r = app
        .patch(
            &path,
            json!({"compensation_mode": "coupon", "reason": "补偿改发券"}),
        )
        .await;
    assert_eq!(
        (
            r.status,
            r.body["compensation_mode"].clone(),
            r.body["policy"].clone()
        ),
        (200, json!("coupon"), json!("strict"))
    );
    let detail: String = sqlx::query_scalar(
        "SELECT detail FROM staff_audit WHERE action = 'campaign_policy_change'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("one policy change in the staff log");
    assert_eq!(detail, "lock -> strict: 预售规则调整");
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM staff_audit WHERE action = 'campaign_compensation_mode_change' AND detail = 'deduction -> coupon: 补偿改发券'"
        )
        .await,
        1
    );
    // The same policy again changes nothing and writes nothing.
    let r = app
        .patch(&path, json!({"policy": "strict", "reason": "again"}))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM staff_audit WHERE action = 'campaign_policy_change'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_change_once_the_window_opened_is_refused_with_campaign_window_open() {
    let app = spawn_app().await;
    let c = create(&app, window(&app, 60)).await;
    let path = format!(
        "/api/v1/presale-campaigns/{}",
        c["id"].as_str().unwrap_or("")
    );
    app.advance(60);
    for body in [
        json!({"policy": "strict", "reason": "太晚了"}),
        json!({"compensation_mode": "coupon", "reason": "太晚了"}),
    ] {
        let r = app.patch(&path, body.clone()).await;
        assert_eq!(
            (r.status, r.code()),
            (409, "campaign_window_open"),
            "{body}: {}",
            r.text
        );
        assert!(!r.body["error"]["message"].as_str().unwrap_or("").is_empty());
    }
    assert_eq!(app.get(&path).await.body["policy"], "lock");
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM staff_audit WHERE action LIKE 'campaign_%_change'"
        )
        .await,
        0
    );
    // The Chinese message, for a Chinese reader.
    let r = app
        .client
        .patch(format!("{}{path}", app.base))
        .bearer_auth(crate::common::TOKEN)
        .header("accept-language", "zh-CN")
        .json(&json!({"policy": "strict", "reason": "太晚了"}))
        .send()
        .await
        .expect("reaches the server");
    let body: Value = r.json().await.unwrap_or(Value::Null);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("尾款"),
        "{body}"
    );
}

#[tokio::test]
async fn bad_change_input_is_400_with_the_field_and_an_unknown_campaign_404() {
    let app = spawn_app().await;
    let c = create(&app, window(&app, 3600)).await;
    let path = format!(
        "/api/v1/presale-campaigns/{}",
        c["id"].as_str().unwrap_or("")
    );
    for (body, field) in [
        (json!({"policy": "never", "reason": "x"}), "policy"),
        (json!({"policy": "strict"}), "reason"),
        (json!({"policy": "strict", "reason": "   "}), "reason"),
        (
            json!({"compensation_mode": "cash", "reason": "x"}),
            "compensation_mode",
        ),
        (json!({"reason": "nothing to change"}), "policy"),
        (json!({"policy": 7, "reason": "x"}), "policy"),
    ] {
        let r = app.patch(&path, body.clone()).await;
        assert_eq!(
            (r.status, r.code(), r.field()),
            (400, "invalid_request", field),
            "{body}: {}",
            r.text
        );
    }
    let r = app
        .patch(
            "/api/v1/presale-campaigns/cmp_nope",
            json!({"policy": "strict", "reason": "x"}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text);
    let r = app
        .client
        .patch(format!("{}{path}", app.base))
        .json(&json!({"policy": "strict", "reason": "x"}))
        .send()
        .await
        .expect("reaches the server");
    assert_eq!(r.status().as_u16(), 401, "no token");
}

#[tokio::test]
async fn support_staff_are_refused_and_operators_admins_and_the_token_may_change_a_campaign() {
    let app = spawn_app().await;
    let c = create(&app, window(&app, 3600)).await;
    let id = CampaignId::from_wire(c["id"].as_str().unwrap_or(""));
    let patch = |policy: &str| CampaignPatch {
        policy: Some(policy.into()),
        compensation_mode: None,
        reason: Some("role check".into()),
    };
    let (sctx, support) = staff("amy", Role::Support);
    let r = app
        .service
        .change_campaign(&sctx, &support, None, id.clone(), patch("strict"))
        .await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
    let r = app
        .service
        .create_campaign_as(
            &sctx,
            &support,
            None,
            couponkeeper::service::campaigns::CampaignInput {
                name: Some("x".into()),
                final_payment_starts_at: Some(app.at(60)),
                final_payment_ends_at: Some(app.at(120)),
                ..Default::default()
            },
        )
        .await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
    for (name, role, policy) in [
        ("olga", Role::Operator, "strict"),
        ("adam", Role::Admin, "swap_or_compensate"),
    ] {
        let (ctx, who) = staff(name, role);
        let r = app
            .service
            .change_campaign(&ctx, &who, None, id.clone(), patch(policy))
            .await
            .expect("allowed");
        assert_eq!(r.fresh().map(|v| v.policy.as_str()), Some(policy));
    }
    let r = app
        .patch(
            &format!("/api/v1/presale-campaigns/{id}"),
            json!({"policy": "lock", "reason": "token"}),
        )
        .await;
    assert_eq!((r.status, r.body["policy"].clone()), (200, json!("lock")));
    let actors: Vec<String> = sqlx::query_scalar(
        "SELECT actor FROM staff_audit WHERE action = 'campaign_policy_change' ORDER BY id",
    )
    .fetch_all(app.db.db.pool())
    .await
    .expect("actors");
    assert_eq!(actors.len(), 3);
    assert_eq!(&actors[..2], ["staff:olga", "staff:adam"]);
    assert!(actors[2].starts_with("api:"), "{actors:?}");
}

/// `u1`'s 满300减50 coupon (valid 30 s) on presale order P1 of a
/// `swap_or_compensate` campaign with `mode`, opening in 60 s; deposit
/// paid. Returns the coupon id.
async fn expiring_order(app: &TestApp, mode: &str) -> String {
    let cid = user_with_coupon(app, "u1", 30).await;
    let camp = create(
        app,
        with(
            window(app, 60),
            json!({"policy": "swap_or_compensate", "compensation_mode": mode}),
        ),
    )
    .await;
    let r = app
        .order(presale_order(
            "P1",
            "u1",
            Some(&cid),
            camp["id"].as_str().unwrap_or(""),
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(61);
    cid
}

#[tokio::test]
async fn under_the_coupon_mode_a_compensated_final_payment_issues_a_coupon_and_deducts_nothing() {
    let app = spawn_app().await;
    let expired = expiring_order(&app, "coupon").await;
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.status, 200, "{}", q.text);
    assert_eq!(q.body["coupon_outcome"], "compensated");
    assert_eq!(q.body["compensation_cents"], 5000);
    assert_eq!(q.body["discount_cents"], 0);
    assert_eq!(q.body["amount_due_cents"], 29_900, "no deduction");
    assert!(
        q.body["message"]
            .as_str()
            .unwrap_or("")
            .contains("新优惠券"),
        "{}",
        q.body["message"]
    );
    assert!(
        q.body["message_en"]
            .as_str()
            .unwrap_or("")
            .contains("coupon"),
        "{}",
        q.body["message_en"]
    );
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["status"], "final_paid");
    assert_eq!(r.body["compensation_cents"], 0, "nothing taken off");
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM compensation_ledger WHERE kind = 'final_payment_deduction'"
        )
        .await,
        0
    );
    let (kind, amount, coupon_id, order_no): (String, i64, Option<String>, Option<String>) =
        sqlx::query_as("SELECT kind, amount_cents, coupon_id, order_no FROM compensation_ledger")
            .fetch_one(app.db.db.pool())
            .await
            .expect("one ledger row");
    assert_eq!((kind.as_str(), amount), ("final_payment_coupon", 5000));
    assert_eq!(order_no.as_deref(), Some("P1"));
    let given = coupon_id.expect("the coupon given");
    assert_ne!(given, expired);
    let c = app.coupon(&given).await;
    assert_eq!(
        (
            c["user_id"].clone(),
            c["status"].clone(),
            c["value_cents"].clone(),
            c["min_order_cents"].clone(),
            c["source"].clone()
        ),
        (
            json!("u1"),
            json!("available"),
            json!(5000),
            json!(0),
            json!("compensation")
        )
    );
    assert_eq!(
        count(
            &app,
            &format!(
                "SELECT COUNT(*) FROM outbox WHERE event_type = 'compensation.issued' AND subject_id = '{given}'"
            )
        )
        .await,
        1
    );
    assert_eq!(app.coupon(&expired).await["status"], "expired");
}

#[tokio::test]
async fn under_the_deduction_mode_a_compensated_final_payment_deducts_as_before() {
    let app = spawn_app().await;
    expiring_order(&app, "deduction").await;
    let q = app.get("/api/v1/orders/P1/final-payment-quote").await;
    assert_eq!(q.body["coupon_outcome"], "compensated");
    assert_eq!(q.body["compensation_cents"], 5000);
    assert_eq!(q.body["amount_due_cents"], 24_900);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["compensation_cents"], 5000);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM compensation_ledger WHERE kind = 'final_payment_deduction' AND amount_cents = 5000"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM coupons WHERE source = 'compensation'"
        )
        .await,
        0,
        "no coupon given"
    );
}

#[tokio::test]
async fn the_campaign_list_reads_its_index_backwards_on_both_stores() {
    let app = spawn_app().await;
    let n = match store() {
        Store::Postgres => 20_000,
        Store::Sqlite => 5_000,
    };
    let source = match store() {
        Store::Postgres => format!("generate_series(1, {n}) AS s(g)"),
        Store::Sqlite => "seq".to_string(),
    };
    let with_seq = match store() {
        Store::Postgres => String::new(),
        Store::Sqlite => format!(
            "WITH RECURSIVE seq(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM seq WHERE g < {n})"
        ),
    };
    crate::common::fixtures::plant(
        &app,
        &format!(
            "{with_seq} INSERT INTO presale_campaigns (id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at)
             SELECT 'cmp-' || CAST(g AS TEXT), 'bulk', 1000, 2000, 'lock', g * 1000 FROM {source}"
        ),
    )
    .await;
    crate::common::fixtures::plant(&app, "ANALYZE").await;
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    for before in [None, Some((2_500_000_i64, "cmp-2500"))] {
        let plan = couponkeeper::store::campaigns::explain_page(&mut conn, before, 51)
            .await
            .expect("explain")
            .join("\n");
        println!("{before:?}:\n{plan}\n");
        assert!(
            plan.contains("presale_campaigns_created_idx"),
            "{before:?} uses the index:\n{plan}"
        );
        for bad in ["Seq Scan", "TEMP B-TREE", "Sort"] {
            assert!(!plan.contains(bad), "{before:?}: no {bad}:\n{plan}");
        }
    }
    let page = app.service.list_campaigns(None, 3).await.expect("a page");
    let ids: Vec<&str> = page
        .campaigns
        .iter()
        .map(|c| c.campaign.id.as_str())
        .collect();
    let expected: Vec<String> = (0..3).map(|k| format!("cmp-{}", n - k)).collect();
    assert_eq!(ids, expected, "newest first");
}
