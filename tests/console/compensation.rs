//! The console's compensation pages: the rules editor
//! (`/console/compensation/rules`), the ledger for finance
//! (`/console/compensation` and its CSV), the preset picker of the
//! compensation form and the health check's suggested preset.

use crate::common::console::{
    Browser, attr, confirm, field_error, flash_text, input_value, signed_in, tag_with,
    textarea_text,
};
use crate::common::fixtures::{count, deposit_paid_under, plant, user as user_id};
use crate::common::{TOKEN, TestApp, presale_order, spawn_app};
use couponkeeper::domain::compensation::{CompensationInput, CompensationRequest};
use couponkeeper::domain::staff::{Role, StaffName};
use couponkeeper::service::Ctx;
use couponkeeper::service::support::Authority;
use serde_json::{Value, json};

async fn put_rules(app: &TestApp, body: Value) -> Value {
    let r = app
        .client
        .put(format!("{}/api/v1/compensation-rules", app.base))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .expect("request reaches the server");
    assert_eq!(r.status().as_u16(), 200);
    r.json().await.expect("rules")
}

fn preset_id(rules: &Value, i: usize) -> String {
    rules["presets"][i]["id"].as_str().expect("id").to_string()
}

async fn csrf_of(b: &mut Browser<'_>, path: &str) -> String {
    b.get(path).await.csrf().expect("token")
}

/// The `data-cents` of the element marked `testid`.
fn cents_of(html: &str, testid: &str) -> Option<i64> {
    attr(
        tag_with(html, &format!("data-testid=\"{testid}\""))?,
        "data-cents",
    )?
    .parse()
    .ok()
}

#[tokio::test]
async fn operators_edit_caps_and_presets_a_refused_form_keeps_its_input_and_versions_are_listed() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let home = b.get("/console").await;
    assert!(home.contains("data-testid=\"nav-compensation\""));
    let page = b.get("/console/compensation/rules").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(
        input_value(&page.text, "support_max").as_deref(),
        Some("50.00")
    );
    assert_eq!(
        input_value(&page.text, "support_daily").as_deref(),
        Some("200.00")
    );
    assert!(page.contains("data-version=\"1\""), "version 1 is listed");

    let csrf = page.csrf().expect("token");
    let form = |big: &'static str| {
        vec![
            ("csrf", csrf.clone()),
            ("support_max", "30".to_string()),
            ("support_daily", "100".to_string()),
            ("p0_id", String::new()),
            ("p0_reason", "物流延误".to_string()),
            ("p0_value", "10".to_string()),
            ("p0_validity", "7".to_string()),
            ("p0_min_order", String::new()),
            ("p0_categories", "phones, books".to_string()),
            ("p1_id", String::new()),
            ("p1_reason", "锁券异常补偿".to_string()),
            ("p1_value", big.to_string()),
            ("p1_validity", "12h".to_string()),
            ("reason", "presets for the sale".to_string()),
        ]
    };
    let fields = form("40");
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = b.post_form("/console/compensation/rules", &pairs).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "presets[1].value_cents").unwrap_or_default();
    assert!(message.contains("客服单张补偿上限"), "{}", r.text);
    assert_eq!(input_value(&r.text, "p1-value").as_deref(), Some("40"));
    assert_eq!(
        input_value(&r.text, "p0-reason").as_deref(),
        Some("物流延误")
    );
    assert_eq!(input_value(&r.text, "support_max").as_deref(), Some("30"));
    assert_eq!(
        textarea_text(&r.text, "reason").as_deref(),
        Some("presets for the sale")
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM compensation_rule_versions WHERE version > 1"
        )
        .await,
        0,
        "a refused form changes nothing"
    );

    let fields = form("20");
    let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = b.post_form("/console/compensation/rules", &pairs).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let page = b.get("/console/compensation/rules").await;
    assert!(
        flash_text(&page.text)
            .unwrap_or_default()
            .contains("第 2 版"),
        "{}",
        page.text
    );
    assert_eq!(
        input_value(&page.text, "support_max").as_deref(),
        Some("30.00")
    );
    assert_eq!(
        input_value(&page.text, "p1-validity").as_deref(),
        Some("12h")
    );
    assert!(page.contains("新增预设：物流延误"), "{}", page.text);
    assert!(page.contains("单张上限：¥50.00 → ¥30.00"), "{}", page.text);
    let rules = app.service.compensation_rules().await.expect("rules");
    assert_eq!(rules.version, 2);
    assert_eq!(rules.presets[0].categories, vec!["phones", "books"]);
    assert_eq!(rules.presets[1].valid_seconds, 12 * 3600);

    // Remove the first preset, change the second: it keeps its id.
    let (first, second) = (rules.presets[0].id.clone(), rules.presets[1].id.clone());
    let csrf = csrf_of(&mut b, "/console/compensation/rules").await;
    let r = b
        .post_form(
            "/console/compensation/rules",
            &[
                ("csrf", &csrf),
                ("support_max", "30"),
                ("support_daily", "100"),
                ("p0_id", &first),
                ("p0_reason", "物流延误"),
                ("p0_value", "10"),
                ("p0_validity", "7"),
                ("p0_remove", "on"),
                ("p1_id", &second),
                ("p1_reason", "锁券异常补偿"),
                ("p1_value", "25"),
                ("p1_validity", "3"),
                ("reason", "fewer presets"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let rules = app.service.compensation_rules().await.expect("rules");
    assert_eq!(rules.version, 3);
    assert_eq!(rules.presets.len(), 1);
    assert_eq!(rules.presets[0].id, second);
    assert_eq!(rules.presets[0].value_cents, 2500);
    let page = b.get("/console/compensation/rules").await;
    assert!(page.contains("删除预设：物流延误"), "{}", page.text);
    assert!(page.contains("data-version=\"3\""));
    assert!(page.contains("fewer presets"));
    let audit = b.get("/console/audit?log=staff").await;
    assert!(
        audit.contains("修改补偿规则"),
        "the staff log names the change"
    );

    // Support gets 403 on every compensation page of operators.
    let mut s = signed_in(&app, Role::Support).await;
    let home = s.get("/console").await;
    assert!(!home.contains("data-testid=\"nav-compensation\""));
    for path in [
        "/console/compensation",
        "/console/compensation.csv",
        "/console/compensation/rules",
    ] {
        assert_eq!(s.get(path).await.status, 403, "{path}");
    }
    let csrf = s.csrf().await;
    let r = s
        .post_form(
            "/console/compensation/rules",
            &[
                ("csrf", &csrf),
                ("support_max", "1000"),
                ("support_daily", "1000"),
                ("reason", "me"),
            ],
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(
        app.service
            .compensation_rules()
            .await
            .expect("rules")
            .version,
        3
    );
    // No session: the sign-in page.
    let mut anon = Browser::new(&app);
    let r = anon.get("/console/compensation").await;
    assert_eq!(r.status, 303);
}

/// Rules with two presets; a campaign with orders P1 (u1) and P2 (u2);
/// amy (support) and bob (operator) compensating over three days.
async fn ledger_story(app: &TestApp) -> (String, String) {
    let rules = put_rules(
        app,
        json!({"support_max_cents": 5000, "support_daily_cents": 20000, "presets": [
            {"reason": "预售券过期补偿", "value_cents": 1000, "valid_seconds": 86400},
            {"reason": "物流延误", "value_cents": 500, "valid_seconds": 86400},
        ]}),
    )
    .await;
    let expired = preset_id(&rules, 0);
    let camp = app.campaign("lock", 30 * 86400, 3600).await;
    let camp_id = camp["id"].as_str().expect("id").to_string();
    for (no, user) in [("P1", "u1"), ("P2", "u2")] {
        let r = app.order(presale_order(no, user, None, &camp_id)).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let who = |n: &str, role| {
        let name = StaffName::parse(n).expect("name");
        (
            Ctx::new(name.actor(), None),
            Authority::Staff { name, role },
        )
    };
    let (actx, amy) = who("amy", Role::Support);
    let (bctx, bob) = who("bob", Role::Operator);
    let give = |value: i64, order: Option<&str>, preset: Option<&str>, reason: &str| {
        CompensationRequest::parse(CompensationInput {
            value_cents: Some(value),
            valid_seconds: Some(86400),
            reason: Some(reason.to_string()),
            order_no: order.map(String::from),
            preset_id: preset.map(String::from),
            for_coupon_id: None,
        })
        .expect("a well-formed compensation")
    };
    let steps: [(&Ctx, &Authority, &str, CompensationRequest); 2] = [
        (&actx, &amy, "u1", give(100, Some("P1"), None, "sorry")),
        (&bctx, &bob, "u3", give(200, None, None, "goodwill")),
    ];
    for (ctx, who, user, input) in steps {
        app.service
            .issue_compensation(ctx, who, None, user_id(user), input)
            .await
            .expect("issued");
    }
    app.advance(86400);
    app.service
        .issue_compensation(
            &actx,
            &amy,
            None,
            user_id("u2"),
            give(0, Some("P2"), Some(&expired), "=cmd|' /C calc'!A0"),
        )
        .await
        .expect("issued");
    app.service
        .issue_compensation(
            &bctx,
            &bob,
            None,
            user_id("u1"),
            give(400, Some("P1"), None, "late"),
        )
        .await
        .expect("issued");
    app.advance(86400);
    app.service
        .issue_compensation(
            &actx,
            &amy,
            None,
            user_id("u4"),
            give(800, None, None, "again"),
        )
        .await
        .expect("issued");
    (expired, camp_id)
}

#[tokio::test]
async fn the_ledger_page_filters_by_day_staff_preset_campaign_and_order_with_totals_per_reason_and_staff()
 {
    let app = spawn_app().await;
    let (expired, camp_id) = ledger_story(&app).await;
    let mut b = signed_in(&app, Role::Admin).await;
    let page = b.get("/console/compensation").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(cents_of(&page.text, "comp-total"), Some(2500));
    assert_eq!(page.text.matches("data-testid=\"comp-row\"").count(), 5);
    // Totals per reason (the preset, free amounts) and per staff member.
    let by_reason = &page.text[page
        .text
        .find("data-testid=\"comp-by-reason\"")
        .unwrap_or(0)..];
    assert!(
        by_reason.contains("预售券过期补偿") && by_reason.contains("自定金额"),
        "{}",
        page.text
    );
    let by_staff = &page.text[page.text.find("data-testid=\"comp-by-staff\"").unwrap_or(0)..];
    assert!(by_staff.contains("客服后台：amy") && by_staff.contains("客服后台：bob"));
    // Rows name the preset, the rules version, the campaign and the order.
    assert!(page.contains("第 2 版") && page.contains("双11预售"));
    for (query, cents, rows) in [
        ("from=2026-11-12&to=2026-11-12", 1400, 2),
        ("staff=amy", 1900, 3),
        (&format!("preset={expired}") as &str, 1000, 1),
        (&format!("campaign={camp_id}"), 1500, 3),
        ("order_no=P1", 500, 2),
        ("from=2026-11-13", 800, 1),
    ] {
        let page = b.get(&format!("/console/compensation?{query}")).await;
        assert_eq!(page.status, 200, "{query}: {}", page.text);
        assert_eq!(cents_of(&page.text, "comp-total"), Some(cents), "{query}");
        assert_eq!(
            page.text.matches("data-testid=\"comp-row\"").count(),
            rows,
            "{query}"
        );
    }
    let page = b.get("/console/compensation?from=yesterday").await;
    assert_eq!(page.status, 400);

    // Keyset pages of 50, the totals always over the whole range.
    for _ in 0..56 {
        plant(
            &app,
            "INSERT INTO compensation_ledger (user_id, kind, amount_cents, reason, actor, at, rules_version)
             VALUES ('u9', 'coupon', 1, 'bulk', 'staff:carl', 1700000000000, 2)",
        )
        .await;
    }
    let first = b.get("/console/compensation?staff=carl").await;
    assert_eq!(first.text.matches("data-testid=\"comp-row\"").count(), 50);
    assert_eq!(cents_of(&first.text, "comp-total"), Some(56));
    let next = attr(
        tag_with(&first.text, "data-testid=\"next-page\"").expect("a next page"),
        "href",
    )
    .expect("href");
    let second = b.get(&next).await;
    assert_eq!(second.text.matches("data-testid=\"comp-row\"").count(), 6);
    assert_eq!(cents_of(&second.text, "comp-total"), Some(56));
    assert!(tag_with(&second.text, "data-testid=\"next-page\"").is_none());
}

#[tokio::test]
async fn the_csv_has_a_header_the_preset_and_rules_version_both_times_yuan_and_no_formulas() {
    let app = spawn_app().await;
    let (expired, _) = ledger_story(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let csv = b
        .get(&format!("/console/compensation.csv?preset={expired}"))
        .await;
    assert_eq!(csv.status, 200, "{}", csv.text);
    assert!(
        csv.header("content-type")
            .is_some_and(|t| t.starts_with("text/csv")),
    );
    let lines: Vec<&str> = csv.text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "{}", csv.text);
    assert_eq!(
        lines[0],
        "id,at_local,at_utc,kind,user_id,order_no,campaign,coupon_code,coupon_id,value_yuan,value_cents,reason,preset_id,preset,rules_version,actor,for_coupon_code,for_coupon_id,kind_text,actor_text"
    );
    let row = lines[1];
    assert!(
        row.contains(",2026-11-12 08:00:00 UTC+8,2026-11-12T00:00:00.000Z,coupon,u2,P2,"),
        "{row}"
    );
    assert!(row.contains(",10.00,1000,"), "{row}");
    assert!(
        row.contains(&format!(",{expired},预售券过期补偿,2,staff:amy,")),
        "{row}"
    );
    // The kind and the person in words, after the stored codes.
    assert!(row.ends_with(",补偿券,客服后台：amy"), "{row}");
    assert!(
        row.contains(",'=cmd|' /C calc'!A0,"),
        "the formula is neutralised: {row}"
    );
    let all = b.get("/console/compensation.csv").await;
    assert_eq!(
        all.text.split("\r\n").filter(|l| !l.is_empty()).count(),
        6,
        "header and every row: {}",
        all.text
    );
}

#[tokio::test]
async fn the_compensation_form_offers_the_presets_and_refuses_support_above_the_cap_at_the_field() {
    let app = spawn_app().await;
    let rules = put_rules(
        &app,
        json!({"support_max_cents": 2000, "support_daily_cents": 2500, "presets": [
            {"reason": "物流延误", "value_cents": 1000, "valid_seconds": 86400},
            {"reason": "锁券异常补偿", "value_cents": 2000, "valid_seconds": 7 * 86400,
             "min_order_cents": 10000, "categories": ["phones"]},
        ]}),
    )
    .await;
    let (small, big) = (preset_id(&rules, 0), preset_id(&rules, 1));
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/users/u1/compensation").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(
        page.text.matches("data-testid=\"preset-option\"").count(),
        2
    );
    assert!(page.contains("物流延误") && page.contains("锁券异常补偿"));
    assert!(
        page.contains("满 ¥100.00 可用"),
        "the preset's terms: {}",
        page.text
    );
    let cap = tag_with(&page.text, "data-testid=\"cap\"")
        .map(|_| ())
        .is_some();
    assert!(
        cap && page.contains("单张最多 ¥20.00") && page.contains("每人每天最多 ¥25.00"),
        "support sees the caps in force"
    );

    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("preset", &big),
            ("amount", ""),
            ("valid_days", ""),
            ("reason", "lock broke"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let (value, min_order, categories): (i64, i64, String) = sqlx::query_as(
        "SELECT value_cents, min_order_cents, categories FROM coupons WHERE source = 'compensation'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("the coupon");
    assert_eq!(
        (value, min_order, categories.as_str()),
        (2000, 10000, "[\"phones\"]")
    );
    assert_eq!(
        count(
            &app,
            &format!("SELECT COUNT(*) FROM compensation_ledger WHERE preset_id = '{big}' AND rules_version = 2 AND actor = 'staff:support-1'")
        )
        .await,
        1
    );

    // 20.00 given; the small preset (10.00) is over the day's 25.00.
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("preset", &small),
            ("amount", ""),
            ("valid_days", "30"),
            ("reason", "again"),
        ],
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "preset").unwrap_or_default();
    assert!(
        message.contains("超出今天的补偿额度") && message.contains("¥5.00"),
        "{}",
        r.text
    );
    // A free amount over the per-coupon cap, at the amount field, as typed.
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("preset", ""),
            ("amount", "20.01"),
            ("valid_days", "30"),
            ("reason", "more"),
        ],
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "amount").unwrap_or_default();
    assert!(message.contains("超出单张补偿上限 ¥20.00"), "{}", r.text);
    assert_eq!(input_value(&r.text, "amount").as_deref(), Some("20.01"));
    // The work queue's allowance line uses the daily cap in force too.
    let home = b.get("/console").await;
    assert!(
        home.contains("每日上限 ¥25.00，还可发 ¥5.00"),
        "{}",
        home.text
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        1
    );
}

#[tokio::test]
async fn the_health_checks_compensation_button_suggests_and_prefills_the_fitting_preset() {
    let app = spawn_app().await;
    let rules = put_rules(
        &app,
        json!({"support_max_cents": 8000, "support_daily_cents": 20000, "presets": [
            {"reason": "too small", "value_cents": 3000, "valid_seconds": 86400},
            {"reason": "books only", "value_cents": 5000, "valid_seconds": 86400, "categories": ["books"]},
            {"reason": "big", "value_cents": 8000, "valid_seconds": 86400},
            {"reason": "fits", "value_cents": 5000, "valid_seconds": 86400},
        ]}),
    )
    .await;
    let fits = preset_id(&rules, 3);
    // A strict campaign whose coupon ends before the window: the promised
    // 50.00 is lost, and compensation is suggested.
    deposit_paid_under(&app, "P1", "u1", "strict", 10).await;
    let report = app.get("/api/v1/orders/P1/health-check").await;
    let action = report.body["checks"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == "coupon_validity"))
        .map(|c| c["action"].clone())
        .unwrap_or(Value::Null);
    assert_eq!(action["code"], "issue_compensation", "{}", report.text);
    assert_eq!(action["amount_cents"], 5000);
    assert_eq!(action["preset_id"], json!(fits), "{}", report.text);

    let mut b = signed_in(&app, Role::Support).await;
    let order = b.get("/console/orders/P1?check=1").await;
    let href = order
        .text
        .match_indices("href=\"/console/users/u1/compensation?")
        .map(|(i, _)| {
            let rest = &order.text[i + 6..];
            rest[..rest.find('"').unwrap_or(0)].replace("&amp;", "&")
        })
        .find(|h| h.contains("preset_id="))
        .unwrap_or_else(|| panic!("a fix button with the preset: {}", order.text));
    assert!(href.contains(&format!("preset_id={fits}")), "{href}");
    let form = b.get(&href).await;
    let radio = tag_with(&form.text, &format!("id=\"preset-{fits}\"")).expect("the preset's radio");
    assert!(radio.contains("checked"), "prefilled: {radio}");
}

/// A coupon of a template made from the default 满300减50 with
/// `overrides`, claimed by `user`: its id and code.
async fn claimed(app: &TestApp, user: &str, overrides: Value) -> (String, String) {
    let t = app.template(overrides).await;
    let c = app
        .claim(user, t["id"].as_str().expect("template id"))
        .await;
    (
        c["id"].as_str().expect("coupon id").to_string(),
        c["code"].as_str().expect("coupon code").to_string(),
    )
}

#[tokio::test]
async fn the_form_names_the_coupon_made_up_for_by_code_lands_back_and_the_ledgers_show_its_code() {
    let app = spawn_app().await;
    // A platform coupon and shop coupons A and B on one paid order.
    let (platform, _) = claimed(
        &app,
        "u1",
        json!({"value_cents": 3000, "min_order_cents": 30000}),
    )
    .await;
    let (shop_a, _) = claimed(
        &app,
        "u1",
        json!({"value_cents": 2000, "min_order_cents": 15000, "shop_id": "A"}),
    )
    .await;
    let (shop_b, code_b) = claimed(
        &app,
        "u1",
        json!({"value_cents": 1000, "min_order_cents": 10000, "shop_id": "B"}),
    )
    .await;
    let line = |id: &str, shop: &str, q: i64, p: i64| {
        json!({"line_id": id, "sku": null, "category": "beauty", "shop_id": shop,
            "quantity": q, "unit_price_cents": p})
    };
    let r = app
        .order(json!({"order_no": "N1", "user_id": "u1", "kind": "normal",
            "lines": [line("a", "A", 2, 10000), line("b", "B", 1, 15000)],
            "coupon_ids": [platform, shop_a, shop_b]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let mut b = signed_in(&app, Role::Support).await;
    let back = "%2Fconsole%2Forders%2FN1";
    let form =
        format!("/console/users/u1/compensation?order_no=N1&for_coupon_id={shop_b}&back={back}");
    let page = b.get(&form).await;
    assert_eq!(page.status, 200, "{}", page.text);
    // The order's three coupons by code, shop B's preselected; no raw id
    // is shown to read.
    let select = page
        .text
        .split_once("id=\"for_coupon_id\"")
        .and_then(|(_, rest)| rest.split_once("</select>"))
        .map(|(options, _)| options.to_string())
        .unwrap_or_else(|| panic!("the coupon choice: {}", page.text));
    assert_eq!(
        select.matches("<option").count(),
        4,
        "none, then three: {select}"
    );
    let chosen = tag_with(&page.text, &format!("value=\"{shop_b}\"")).expect("shop B's option");
    assert!(chosen.contains("selected"), "preselected: {chosen}");
    let shown = crate::common::console::visible_text(&select);
    assert!(shown.contains(&code_b), "{shown}");
    assert!(!shown.contains("cpn_"), "codes, never ids: {shown}");

    // A coupon that is not the order's comes back at the field, as typed.
    let (stranger, _) = claimed(&app, "u1", json!({"value_cents": 500})).await;
    let fields = |coupon: &str| {
        vec![
            ("preset".to_string(), String::new()),
            ("amount".to_string(), "10".to_string()),
            ("valid_days".to_string(), "30".to_string()),
            ("order_no".to_string(), "N1".to_string()),
            ("for_coupon_id".to_string(), coupon.to_string()),
            ("reason".to_string(), "店铺B的券没抵扣".to_string()),
        ]
    };
    let typed = fields(&stranger);
    let typed: Vec<(&str, &str)> = typed
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = confirm(&mut b, &form, &typed).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "for_coupon_id").unwrap_or_default();
    assert!(message.contains("不是这个订单上的券"), "{}", r.text);
    assert_eq!(input_value(&r.text, "amount").as_deref(), Some("10"));
    assert_eq!(
        textarea_text(&r.text, "reason").as_deref(),
        Some("店铺B的券没抵扣")
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );

    // Shop B's: issued, and back on the order page it started from.
    let picked = fields(&shop_b);
    let picked: Vec<(&str, &str)> = picked
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let r = confirm(&mut b, &form, &picked).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.location.as_deref(), Some("/console/orders/N1"));
    let order = b.visit("/console/orders/N1").await;
    let named = tag_with(&order.text, "data-testid=\"ledger-for-coupon\"")
        .map(|_| order.text.contains(&format!(">{code_b}</a>")))
        .unwrap_or(false);
    assert!(
        named,
        "the order's ledger names shop B's code: {}",
        order.text
    );

    // The finance ledger names it too.
    let mut ops = signed_in(&app, Role::Operator).await;
    let ledger = ops.get("/console/compensation?order_no=N1").await;
    assert_eq!(ledger.status, 200, "{}", ledger.text);
    let cell = tag_with(&ledger.text, "data-testid=\"comp-for-coupon\"")
        .unwrap_or_else(|| panic!("the coupon made up for: {}", ledger.text));
    assert!(
        attr(cell, "href").is_some_and(|h| h.ends_with(&shop_b)),
        "{cell}"
    );
    assert!(
        ledger.contains(&format!(">{code_b}</a>")),
        "{}",
        ledger.text
    );
    // And its CSV: the code and the id after the staff member.
    let csv = ops.get("/console/compensation.csv?order_no=N1").await;
    assert_eq!(csv.status, 200, "{}", csv.text);
    let row = csv
        .text
        .split("\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert!(
        row.contains(&format!(",{code_b},{shop_b},")),
        "the coupon made up for, by code and id: {row}"
    );
}
