//! Compensation rules (versioned, in the database) and the compensation
//! ledger for finance, over HTTP and through the service, on both stores.

use crate::common::fixtures::{count, deposit_paid_under, plant, user};
use crate::common::{Store, TOKEN, TestApp, presale_order, spawn_app, store};
use couponkeeper::domain::compensation::{CompensationInput, CompensationRequest};
use couponkeeper::domain::filters::{LedgerExportQuery, LedgerFilterInput, LedgerPageQuery};
use couponkeeper::domain::staff::{Role, StaffName};
use couponkeeper::service::support::Authority;
use couponkeeper::service::{Ctx, ServiceError};
use couponkeeper::store::ledger::{LedgerCursor, LedgerQuery, explain_page_and_totals};
use serde_json::{Value, json};

fn staff(name: &str, role: Role) -> (Ctx, Authority) {
    let name = StaffName::parse(name).expect("staff name");
    (
        Ctx::new(name.actor(), None),
        Authority::Staff { name, role },
    )
}

async fn put_rules(app: &TestApp, body: Value) -> crate::common::Resp {
    let r = app
        .client
        .put(format!("{}/api/v1/compensation-rules", app.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("request reaches the server");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let text = r.text().await.unwrap_or_default();
    crate::common::Resp {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        headers,
        text,
    }
}

fn preset(reason: &str, value_cents: i64) -> Value {
    json!({"reason": reason, "value_cents": value_cents, "valid_seconds": 7 * 86400})
}

/// Caps 50.00 / 200.00 and two presets; asserts 200 and returns the rules.
async fn two_presets(app: &TestApp) -> Value {
    let r = put_rules(
        app,
        json!({
            "support_max_cents": 5000,
            "support_daily_cents": 20000,
            "presets": [
                preset("presale coupon expired", 1000),
                {"reason": "phones delay", "value_cents": 2000, "valid_seconds": 3 * 86400,
                 "min_order_cents": 20000, "categories": ["phones"]},
            ],
            "reason": "first presets",
        }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

fn preset_id(rules: &Value, i: usize) -> String {
    rules["presets"][i]["id"]
        .as_str()
        .expect("preset id")
        .to_string()
}

async fn issue(app: &TestApp, user: &str, body: Value) -> crate::common::Resp {
    app.post(&format!("/api/v1/users/{user}/compensation-coupons"), body)
        .await
}

fn refused_over_cap(r: &Result<impl std::fmt::Debug, ServiceError>) -> bool {
    matches!(r, Err(ServiceError::Refused { refusal, .. }) if refusal.code() == "compensation_limit_exceeded")
}

fn capped_input(value: i64) -> CompensationRequest {
    CompensationRequest::parse(CompensationInput {
        value_cents: Some(value),
        valid_seconds: Some(3600),
        reason: Some("goodwill".into()),
        order_no: None,
        preset_id: None,
        for_coupon_id: None,
    })
    .expect("a well-formed compensation")
}

#[tokio::test]
async fn version_one_comes_from_the_settings_and_is_written_once_by_concurrent_starts() {
    let app = TestApp::builder()
        .with_config(|c| {
            c.support_compensation_max_cents = 3000;
            c.support_compensation_daily_cents = 9000;
        })
        .start()
        .await;
    let r = app.get("/api/v1/compensation-rules").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body,
        json!({"version": 1, "support_max_cents": 3000, "support_daily_cents": 9000, "presets": []})
    );
    let (a, b, c) = tokio::join!(
        app.service.ensure_compensation_rules(),
        app.service.ensure_compensation_rules(),
        app.service.ensure_compensation_rules(),
    );
    a.and(b).and(c).expect("version 1 written");
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_rule_versions").await,
        1
    );
    let r = app.get("/api/v1/compensation-rules").await;
    assert_eq!(r.body["version"], 1);
    assert_eq!(r.body["support_daily_cents"], 9000);
}

#[tokio::test]
async fn a_put_writes_the_next_version_keeps_preset_ids_and_the_old_versions_and_is_audited() {
    let app = spawn_app().await;
    let v2 = two_presets(&app).await;
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["presets"].as_array().map(Vec::len), Some(2));
    assert_eq!(v2["presets"][1]["categories"], json!(["phones"]));
    assert_eq!(v2["presets"][1]["min_order_cents"], 20000);
    let (kept, dropped) = (preset_id(&v2, 0), preset_id(&v2, 1));
    assert_ne!(kept, dropped);
    let r = app.get("/api/v1/compensation-rules").await;
    assert_eq!(r.body, v2, "GET shows the version in force");

    let r = put_rules(
        &app,
        json!({
            "support_max_cents": 4000,
            "support_daily_cents": 10000,
            "presets": [
                {"id": kept, "reason": "presale coupon expired", "value_cents": 1500, "valid_seconds": 86400},
                preset("lock anomaly", 800),
            ],
        }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["version"], 3);
    assert_eq!(preset_id(&r.body, 0), kept, "a kept preset keeps its id");
    assert_eq!(r.body["presets"][0]["value_cents"], 1500);
    assert_ne!(preset_id(&r.body, 1), dropped);

    // Old versions stay readable.
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_rule_versions").await,
        3
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM compensation_presets WHERE version = 2"
        )
        .await,
        2
    );
    let (_, op) = staff("olga", Role::Operator);
    let history = app
        .service
        .compensation_rule_history(&op)
        .await
        .expect("history");
    assert_eq!(
        history.iter().map(|v| v.rules.version).collect::<Vec<_>>(),
        vec![3, 2, 1]
    );
    assert_eq!(
        history[2].rules.support_max_cents, 5000,
        "version 1 from the settings"
    );
    assert_eq!(history[0].changes.len(), 5, "{:?}", history[0].changes);

    // Each change is in the staff log, before -> after.
    let details: Vec<String> = sqlx::query_scalar(
        "SELECT detail FROM staff_audit WHERE action = 'compensation_rules_change' AND target = 'compensation-rules' ORDER BY id",
    )
    .fetch_all(app.db.db.pool())
    .await
    .expect("audit rows");
    assert_eq!(details.len(), 2, "{details:?}");
    use couponkeeper::domain::compensation::{RuleChange, RulesChangeLog};
    let first = RulesChangeLog::parse(&details[0]).expect("a rules change");
    assert_eq!((first.from_version, first.to_version), (1, 2));
    assert_eq!(first.reason, "first presets");
    let second = RulesChangeLog::parse(&details[1]).expect("a rules change");
    assert!(
        second.changes.contains(&RuleChange::SupportMax {
            from: 5000,
            to: 4000
        }),
        "{second:?}"
    );
    assert!(
        second
            .changes
            .iter()
            .any(|c| matches!(c, RuleChange::PresetRemoved { .. })),
        "{second:?}"
    );
    assert!(
        second.changes.iter().any(|c| matches!(c,
            RuleChange::PresetChanged { before, after }
                if before.value_cents == 1000 && after.value_cents == 1500)),
        "{second:?}"
    );
}

#[tokio::test]
async fn a_bad_rules_version_is_400_with_the_field_at_fault_and_changes_nothing() {
    let app = spawn_app().await;
    let base = |presets: Value| json!({"support_max_cents": 5000, "support_daily_cents": 20000, "presets": presets});
    for (body, field) in [
        (
            base(json!([preset("a", 100), preset("b", 100), preset("c", 0)])),
            "presets[2].value_cents",
        ),
        (base(json!([preset("", 100)])), "presets[0].reason"),
        (
            base(json!([preset("a", 100), preset("a", 200)])),
            "presets[1].reason",
        ),
        (
            base(json!([{"reason": "a", "value_cents": 100, "valid_seconds": 10}])),
            "presets[0].valid_seconds",
        ),
        (
            base(
                json!([{"id": "cps_unknown", "reason": "a", "value_cents": 100, "valid_seconds": 3600}]),
            ),
            "presets[0].id",
        ),
        (
            base(
                json!([{"reason": "a", "value_cents": 100, "valid_seconds": 3600, "min_order_cents": -1}]),
            ),
            "presets[0].min_order_cents",
        ),
        (
            base(
                json!([{"reason": "a", "value_cents": 100, "valid_seconds": 3600, "categories": [""]}]),
            ),
            "presets[0].categories",
        ),
        (
            json!({"support_max_cents": -1, "support_daily_cents": 1, "presets": []}),
            "support_max_cents",
        ),
        (
            json!({"support_max_cents": 1, "presets": []}),
            "support_daily_cents",
        ),
        (
            json!({"support_max_cents": 1, "support_daily_cents": 1, "presets": "x"}),
            "presets",
        ),
    ] {
        let r = put_rules(&app, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text);
        assert_eq!((r.code(), r.field()), ("invalid_request", field), "{body}");
    }
    assert_eq!(
        app.get("/api/v1/compensation-rules").await.body["version"],
        1
    );
}

#[tokio::test]
async fn a_preset_worth_more_than_supports_per_coupon_cap_is_refused_with_400() {
    let app = spawn_app().await;
    let r = put_rules(
        &app,
        json!({"support_max_cents": 3000, "support_daily_cents": 20000,
               "presets": [preset("ok", 3000), preset("too much", 3001)]}),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(
        (r.code(), r.field()),
        ("invalid_request", "presets[1].value_cents")
    );
    assert!(r.body["error"]["message"].is_string());
    assert_eq!(
        app.get("/api/v1/compensation-rules").await.body["version"],
        1
    );
}

#[tokio::test]
async fn support_may_neither_change_the_rules_nor_read_the_ledger_and_operators_admins_and_tokens_may()
 {
    let app = spawn_app().await;
    let (sctx, support) = staff("sam", Role::Support);
    let input = couponkeeper::domain::compensation::RulesInput {
        support_max_cents: Some(100),
        support_daily_cents: Some(100),
        presets: Some(vec![]),
    };
    let r = app
        .service
        .put_compensation_rules(&sctx, &support, None, input.clone(), Some("x".into()))
        .await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
    let tz = app.service.settings().reminders.tz;
    let page = LedgerPageQuery::parse(50, LedgerFilterInput::default(), tz).expect("a page query");
    let r = app.service.compensation_ledger(&support, &page, None).await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
    let export =
        LedgerExportQuery::parse(10, LedgerFilterInput::default(), tz).expect("an export query");
    let r = app
        .service
        .export_compensation_csv(&support, &export, (&[], &|_| Vec::new()))
        .await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
    let r = app.service.compensation_rule_history(&support).await;
    assert!(matches!(r, Err(ServiceError::Forbidden(_))), "{r:?}");
    // Support still reads the rules in force (their form shows them).
    assert_eq!(
        app.service
            .compensation_rules()
            .await
            .expect("rules")
            .version,
        1
    );

    for (i, role) in [Role::Operator, Role::Admin].into_iter().enumerate() {
        let (ctx, who) = staff(&format!("boss{i}"), role);
        app.service
            .put_compensation_rules(&ctx, &who, None, input.clone(), Some("ok".into()))
            .await
            .expect("operators and admins change the rules");
        app.service
            .compensation_ledger(&who, &page, None)
            .await
            .expect("and read the ledger");
    }
    // Staff need a reason; the API token may leave it out.
    let (octx, op) = staff("olga", Role::Operator);
    let r = app
        .service
        .put_compensation_rules(&octx, &op, None, input, None)
        .await;
    assert!(
        matches!(&r, Err(ServiceError::Invalid(f)) if f.field == "reason"),
        "{r:?}"
    );
    assert_eq!(
        app.get("/api/v1/compensation-ledger").await.status,
        200,
        "the API token reads the ledger"
    );
    for path in ["/api/v1/compensation-ledger", "/api/v1/compensation-rules"] {
        assert_eq!(app.get_as(path, None).await.status, 401, "{path}");
        assert_eq!(app.get_as(path, Some("wrong")).await.status, 401, "{path}");
    }
}

#[tokio::test]
async fn a_compensation_with_a_preset_takes_its_terms_and_records_the_preset_and_rules_version() {
    let app = spawn_app().await;
    let rules = two_presets(&app).await;
    let phones = preset_id(&rules, 1);
    let camp = app.campaign("lock", 3600, 3600).await;
    let camp_id = camp["id"].as_str().expect("id").to_string();
    let r = app.order(presale_order("P1", "u1", None, &camp_id)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = issue(
        &app,
        "u1",
        json!({"preset_id": phones, "order_no": "P1", "value_cents": 99999, "valid_seconds": 60}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        r.body["value_cents"], 2000,
        "the preset's value, not the typed one"
    );
    assert_eq!(r.body["min_order_cents"], 20000);
    assert_eq!(r.body["categories"], json!(["phones"]));
    assert_eq!(r.body["ends_at"], json!("2026-11-14T00:00:00.000Z"));
    let ledger = app.get("/api/v1/compensation-ledger").await;
    assert_eq!(ledger.status, 200, "{}", ledger.text);
    let e = &ledger.body["entries"][0];
    assert_eq!(e["preset_id"], json!(phones));
    assert_eq!(e["rules_version"], 2);
    assert_eq!(e["value_cents"], 2000);
    assert_eq!(
        e["reason"], "phones delay",
        "the preset's reason by default"
    );
    assert_eq!(e["kind"], "coupon");
    assert_eq!(e["order_no"], "P1");
    assert_eq!(e["campaign_id"], json!(camp_id));
    assert_eq!(e["coupon_id"], r.body["id"]);
    assert_eq!(
        e["actor"].as_str().map(|a| a.starts_with("api:")),
        Some(true)
    );

    // A preset not in the version in force is the field's fault.
    let r = issue(&app, "u1", json!({"preset_id": "cps_nope", "reason": "x"})).await;
    assert_eq!((r.status, r.field()), (400, "preset_id"), "{}", r.text);
    // Without a preset the typed amount still works and records the version.
    let r = issue(
        &app,
        "u1",
        json!({"value_cents": 300, "valid_seconds": 3600, "reason": "free"}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let ledger = app.get("/api/v1/compensation-ledger").await;
    assert_eq!(ledger.body["entries"][0]["preset_id"], Value::Null);
    assert_eq!(ledger.body["entries"][0]["rules_version"], 2);
}

#[tokio::test]
async fn support_is_capped_by_the_rules_in_force_after_an_operator_lowers_them() {
    let app = spawn_app().await;
    let (ctx, amy) = staff("amy", Role::Support);
    app.service
        .issue_compensation(&ctx, &amy, None, user("u1"), capped_input(3000))
        .await
        .expect("within the settings' caps (50.00 / 200.00)");
    let r = put_rules(
        &app,
        json!({"support_max_cents": 2500, "support_daily_cents": 4000,
               "presets": [preset("small", 500), preset("cap", 2500)], "reason": "tighter"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let cap_preset = preset_id(&r.body, 1);
    let allowance = app
        .service
        .compensation_allowance(&ctx, &amy)
        .await
        .expect("read")
        .expect("support is capped");
    assert_eq!(
        (
            allowance.per_coupon_cents,
            allowance.daily_cents,
            allowance.given_today_cents
        ),
        (2500, 4000, 3000)
    );
    let r = app
        .service
        .issue_compensation(&ctx, &amy, None, user("u1"), capped_input(2600))
        .await;
    assert!(refused_over_cap(&r), "over the new per-coupon cap: {r:?}");
    let r = app
        .service
        .issue_compensation(&ctx, &amy, None, user("u1"), capped_input(2000))
        .await;
    assert!(refused_over_cap(&r), "over the new daily cap: {r:?}");
    let with_preset = CompensationRequest::parse(CompensationInput {
        preset_id: Some(cap_preset),
        reason: None,
        ..CompensationInput::default()
    })
    .expect("a well-formed compensation");
    let r = app
        .service
        .issue_compensation(&ctx, &amy, None, user("u1"), with_preset)
        .await;
    assert!(
        refused_over_cap(&r),
        "a preset counts against the day too: {r:?}"
    );
    app.service
        .issue_compensation(&ctx, &amy, None, user("u1"), capped_input(1000))
        .await
        .expect("what is left of the new daily cap");
    let versions: Vec<Option<i64>> =
        sqlx::query_scalar("SELECT rules_version FROM compensation_ledger ORDER BY id")
            .fetch_all(app.db.db.pool())
            .await
            .expect("rows");
    assert_eq!(versions, vec![Some(1), Some(2)]);
    // Operators stay uncapped.
    let (octx, op) = staff("olga", Role::Operator);
    app.service
        .issue_compensation(&octx, &op, None, user("u1"), capped_input(9000))
        .await
        .expect("operators are not capped");
}

#[tokio::test]
async fn a_final_payment_deduction_records_the_rules_version_in_force_and_the_campaign() {
    let app = spawn_app().await;
    two_presets(&app).await;
    deposit_paid_under(&app, "P1", "u1", "swap_or_compensate", 10).await;
    app.advance(60);
    let r = app.post("/api/v1/orders/P1/final-payment", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["compensation_cents"], 5000);
    let campaign = app.order_view("P1").await["campaign_id"].clone();
    let ledger = app.get("/api/v1/compensation-ledger?order_no=P1").await;
    assert_eq!(ledger.status, 200, "{}", ledger.text);
    let e = &ledger.body["entries"][0];
    assert_eq!(e["kind"], "final_payment_deduction");
    assert_eq!(e["rules_version"], 2);
    assert_eq!(e["preset_id"], Value::Null);
    assert_eq!(e["value_cents"], 5000);
    assert_eq!(e["campaign_id"], campaign);
    assert_eq!(
        ledger.body["totals"],
        json!({"count": 1, "value_cents": 5000})
    );
}

#[tokio::test]
async fn the_ledger_filters_by_day_order_staff_preset_and_campaign_and_totals_the_whole_range() {
    let app = spawn_app().await;
    let rules = two_presets(&app).await;
    let small = preset_id(&rules, 0);
    let camp = app.campaign("lock", 30 * 86400, 3600).await;
    let camp_id = camp["id"].as_str().expect("id").to_string();
    for (no, user) in [("P1", "u1"), ("P2", "u2")] {
        let r = app.order(presale_order(no, user, None, &camp_id)).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let (actx, amy) = staff("amy", Role::Support);
    let (bctx, bob) = staff("bob", Role::Operator);
    let give = |value: i64, order: Option<&str>, preset: Option<&str>| {
        CompensationRequest::parse(CompensationInput {
            value_cents: Some(value),
            valid_seconds: Some(86400),
            reason: Some("sorry".into()),
            order_no: order.map(String::from),
            preset_id: preset.map(String::from),
            for_coupon_id: None,
        })
        .expect("a well-formed compensation")
    };
    // Day 1 (2026-11-11 in Shanghai): amy 100 on P1, bob 200.
    app.service
        .issue_compensation(&actx, &amy, None, user("u1"), give(100, Some("P1"), None))
        .await
        .expect("issued");
    app.service
        .issue_compensation(&bctx, &bob, None, user("u3"), give(200, None, None))
        .await
        .expect("issued");
    // Day 2: amy the small preset (10.00) on P2, bob 400 on P1.
    app.advance(86400);
    app.service
        .issue_compensation(
            &actx,
            &amy,
            None,
            user("u2"),
            give(0, Some("P2"), Some(&small)),
        )
        .await
        .expect("issued");
    app.service
        .issue_compensation(&bctx, &bob, None, user("u1"), give(400, Some("P1"), None))
        .await
        .expect("issued");
    // Day 3: amy 800.
    app.advance(86400);
    app.service
        .issue_compensation(&actx, &amy, None, user("u4"), give(800, None, None))
        .await
        .expect("issued");

    let totals = |r: &crate::common::Resp| {
        (
            r.body["totals"]["count"].as_i64().unwrap_or(-1),
            r.body["totals"]["value_cents"].as_i64().unwrap_or(-1),
        )
    };
    let r = app.get("/api/v1/compensation-ledger").await;
    assert_eq!(totals(&r), (5, 100 + 200 + 1000 + 400 + 800));
    let values: Vec<i64> = r.body["entries"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["value_cents"].as_i64()).collect())
        .unwrap_or_default();
    assert_eq!(values, vec![800, 400, 1000, 200, 100], "newest first");
    for (query, expected) in [
        ("from=2026-11-12&to=2026-11-12", (2, 1400)),
        ("from=2026-11-12", (3, 2200)),
        ("to=2026-11-11", (2, 300)),
        ("order_no=P1", (2, 500)),
        ("staff=amy", (3, 1900)),
        ("staff=staff:bob", (2, 600)),
        (&format!("preset_id={small}"), (1, 1000)),
        (&format!("campaign_id={camp_id}"), (3, 1500)),
        (&format!("campaign_id={camp_id}&staff=amy"), (2, 1100)),
        (
            "from=2026-11-11T16:00:00Z&to=2026-11-12T16:00:00Z",
            (2, 1400),
        ),
        ("from=2026-11-12T00:00:00%2B08:00&to=2026-11-13", (3, 2200)),
        ("order_no=NOPE", (0, 0)),
    ] {
        let r = app
            .get(&format!("/api/v1/compensation-ledger?{query}"))
            .await;
        assert_eq!(r.status, 200, "{query}: {}", r.text);
        assert_eq!(totals(&r), expected, "{query}");
        assert_eq!(
            r.body["entries"].as_array().map(Vec::len),
            Some(expected.0 as usize),
            "{query}"
        );
    }

    // Keyset pages: the totals are the whole range's on every page.
    let mut seen = Vec::new();
    let mut next: Option<String> = None;
    for _ in 0..5 {
        let path = match &next {
            Some(c) => format!("/api/v1/compensation-ledger?staff=amy&limit=2&cursor={c}"),
            None => "/api/v1/compensation-ledger?staff=amy&limit=2".to_string(),
        };
        let r = app.get(&path).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(totals(&r), (3, 1900));
        for e in r.body["entries"].as_array().cloned().unwrap_or_default() {
            seen.push(e["value_cents"].as_i64().unwrap_or(0));
        }
        next = r.body["next"].as_str().map(String::from);
        if next.is_none() {
            break;
        }
    }
    assert_eq!(seen, vec![800, 1000, 100]);

    for (query, field) in [
        ("from=yesterday", "from"),
        ("to=2026-13-01", "to"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=x", "limit"),
        ("cursor=abc", "cursor"),
    ] {
        let r = app
            .get(&format!("/api/v1/compensation-ledger?{query}"))
            .await;
        assert_eq!((r.status, r.field()), (400, field), "{query}: {}", r.text);
    }
}

#[tokio::test]
async fn the_openapi_document_lists_the_compensation_routes() {
    let app = spawn_app().await;
    let r = app.get_as("/api/v1/openapi.json", None).await;
    assert_eq!(r.status, 200);
    for (path, method, id) in [
        (
            "/api/v1/compensation-rules",
            "get",
            "get_compensation_rules",
        ),
        (
            "/api/v1/compensation-rules",
            "put",
            "put_compensation_rules",
        ),
        ("/api/v1/compensation-ledger", "get", "compensation_ledger"),
    ] {
        assert_eq!(
            r.body["paths"][path][method]["operationId"], id,
            "{path} {method}"
        );
    }
}

/// Fills the ledger with `n` rows spread evenly over 300 days before
/// `now_ms`, over 500 actors, 20,000 orders, 300 presets and 200
/// campaigns.
async fn fill_ledger(app: &TestApp, n: i64, now_ms: i64) {
    let (with, source) = crate::common::series(n);
    let step = 300 * 86_400_000 / n;
    plant(
        app,
        &format!(
            "{with} INSERT INTO compensation_ledger (user_id, order_no, coupon_id, kind, amount_cents, reason, actor,
                 request_id, at, preset_id, rules_version, campaign_id)
             SELECT 'u-' || CAST(g % 5000 AS TEXT), 'O-' || CAST(g % 20000 AS TEXT), NULL, 'coupon', 100,
                 'bulk', 'staff:s' || CAST(g % 500 AS TEXT), NULL, {now_ms} - CAST(g AS BIGINT) * {step},
                 CASE WHEN g % 3 = 0 THEN 'cps_' || CAST(g % 300 AS TEXT) ELSE NULL END, 1,
                 CASE WHEN g % 2 = 0 THEN 'cmp_' || CAST(g % 200 AS TEXT) ELSE NULL END
             FROM {source}"
        ),
    )
    .await;
    plant(app, "ANALYZE").await;
}

#[tokio::test]
async fn every_ledger_filter_pages_and_totals_by_an_index_range_scan_on_both_stores() {
    let app = spawn_app().await;
    let now_ms = app.now().timestamp_millis();
    let n = match store() {
        Store::Postgres => 200_000,
        Store::Sqlite => 20_000,
    };
    fill_ledger(&app, n, now_ms).await;
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    let day = 86_400_000;
    let mut checked = 0;
    let some = |s: &str| Some(s.to_string());
    for (name, base) in [
        ("none", LedgerQuery::default()),
        (
            "order",
            LedgerQuery {
                order_no: some("O-7"),
                ..LedgerQuery::default()
            },
        ),
        (
            "staff",
            LedgerQuery {
                actor: some("staff:s7"),
                ..LedgerQuery::default()
            },
        ),
        (
            "preset",
            LedgerQuery {
                preset_id: some("cps_3"),
                ..LedgerQuery::default()
            },
        ),
        (
            "campaign",
            LedgerQuery {
                campaign_id: some("cmp_4"),
                ..LedgerQuery::default()
            },
        ),
    ] {
        for (from, until) in [
            (None, None),
            (Some(now_ms - 3 * day), None),
            (Some(now_ms - 3 * day), Some(now_ms - day)),
        ] {
            for cursor in [
                None,
                Some(LedgerCursor {
                    at: now_ms - 2 * day,
                    id: 5,
                }),
            ] {
                let q = LedgerQuery {
                    from_ms: from,
                    until_ms: until,
                    ..base.clone()
                };
                let (page, totals) = explain_page_and_totals(&mut conn, &q, cursor)
                    .await
                    .expect("explain");
                let (page, totals) = (page.join("\n"), totals.join("\n"));
                let what = format!("{name} {q:?} {cursor:?}");
                println!("{what}\npage:\n{page}\ntotals:\n{totals}\n");
                let unfiltered = name == "none" && from.is_none();
                // The totals of no filter at all are the whole table's.
                let plans = if unfiltered {
                    vec![&page]
                } else {
                    vec![&page, &totals]
                };
                for plan in plans {
                    assert!(
                        !plan.contains("Seq Scan on compensation_ledger"),
                        "{what}: no sequential scan:\n{plan}"
                    );
                    assert!(
                        !plan.lines().any(|l| l.trim() == "SCAN compensation_ledger"),
                        "{what}: no full table scan:\n{plan}"
                    );
                }
                // SQLite: read in index order, never sorted. PostgreSQL may
                // sort the few rows a bitmap index scan found when it
                // estimates that cheaper; never a sequential scan (above).
                assert!(
                    !page.contains("TEMP B-TREE"),
                    "{what}: the page is read in index order, not sorted:\n{page}"
                );
                assert!(
                    page.contains("Index") || page.contains("USING INDEX"),
                    "{what}: the page uses an index:\n{page}"
                );
                if !unfiltered {
                    assert!(
                        totals.contains("Index")
                            || totals.contains("USING INDEX")
                            || totals.contains("USING COVERING INDEX"),
                        "{what}: the totals use an index:\n{totals}"
                    );
                    assert!(
                        !totals.contains("SCAN compensation_ledger USING"),
                        "{what}: the totals read one index range, not a whole index:\n{totals}"
                    );
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 5 * 3 * 2);
}
