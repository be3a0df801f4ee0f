//! The console's template pages (`/console/templates`, `/new`, `/{id}`) on
//! both stores: the list's filters and pages, the create form (preview,
//! refusals beside their fields with the input kept), pause / resume, end
//! claiming early and the safe edit, each seen from the claim API; the
//! change history; who may do what; names and words instead of ids; and
//! the plan of every list statement.

use crate::common::console::{
    Browser, field_error, flash_text, input_value, signed_in, unreadable_words, visible_text,
};
use crate::common::fixtures::plant;
use crate::common::{Store, TestApp, spawn_app, store};
use couponkeeper::domain::discount::DiscountKind;
use couponkeeper::domain::staff::Role;
use couponkeeper::domain::template::ClaimStanding;
use couponkeeper::store::templates::{TemplatePageQuery, explain_page};
use serde_json::{Value, json};

/// The names of the template rows on a list page, in order.
fn row_names(html: &str) -> Vec<String> {
    html.split("data-testid=\"template-name\">")
        .skip(1)
        .filter_map(|rest| rest.split('<').next())
        .map(str::to_string)
        .collect()
}

fn id_of(t: &Value) -> String {
    t["id"].as_str().unwrap_or_default().to_string()
}

/// A template with `overrides` through the API; its id.
async fn template(app: &TestApp, overrides: Value) -> String {
    id_of(&app.template(overrides).await)
}

/// The create form's fields for a 满300减50 for phones, 7 days after
/// claiming, stock 100, with `overrides` replacing fields of the same name.
fn create_fields<'a>(overrides: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        ("name", "满300减50 手机"),
        ("kind", "fixed"),
        ("value", "50"),
        ("min_order", "300"),
        ("categories", "手机"),
        ("valid_days", "7"),
        ("total_stock", "100"),
        ("per_user_limit", "2"),
        ("intent", "create"),
    ];
    for (k, v) in overrides {
        f.retain(|(name, _)| name != k);
        f.push((k, v));
    }
    f
}

async fn claim_status(app: &TestApp, user: &str, id: &str) -> (u16, String) {
    let r = app
        .post(
            &format!("/api/v1/users/{user}/coupons"),
            json!({"template_id": id}),
        )
        .await;
    (r.status, r.code().to_string())
}

#[tokio::test]
async fn the_template_list_narrows_by_standing_kind_and_name_and_keeps_them_in_its_pages() {
    let app = spawn_app().await;
    let phones = template(&app, json!({"name": "满300减50 手机"})).await;
    app.advance(1);
    template(
        &app,
        json!({"name": "九折券", "kind": "percent", "value_cents": null, "percent_off": 10, "max_discount_cents": 3000}),
    )
    .await;
    app.advance(1);
    let paused = template(&app, json!({"name": "paused one"})).await;
    let r = app
        .post(
            &format!("/api/v1/templates/{paused}/pause"),
            json!({"reason": "stock check"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    app.advance(1);
    template(
        &app,
        json!({"name": "later one", "valid_seconds": null, "valid_from": app.at(3600), "valid_until": app.at(7200)}),
    )
    .await;
    app.advance(1);
    template(
        &app,
        json!({"name": "ended one", "claim_ends_at": app.at(10)}),
    )
    .await;
    app.advance(20);

    let mut b = signed_in(&app, Role::Support).await;
    let all = b.get("/console/templates").await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(
        row_names(&all.text),
        vec![
            "ended one",
            "later one",
            "paused one",
            "九折券",
            "满300减50 手机"
        ],
        "newest first"
    );
    for (query, expected) in [
        ("standing=active", vec!["九折券", "满300减50 手机"]),
        ("standing=paused", vec!["paused one"]),
        ("standing=not_started", vec!["later one"]),
        ("standing=ended", vec!["ended one"]),
        ("kind=percent", vec!["九折券"]),
        ("kind=fixed&standing=active", vec!["满300减50 手机"]),
        ("q=%E6%89%8B%E6%9C%BA", vec!["满300减50 手机"]),
        (
            "q=one&kind=fixed",
            vec!["ended one", "later one", "paused one"],
        ),
    ] {
        let page = b.get(&format!("/console/templates?{query}")).await;
        assert_eq!(page.status, 200, "{query}: {}", page.text);
        assert_eq!(row_names(&page.text), expected, "{query}");
    }
    // Each row: its rule in words, stock claimed / total / left, coupons by
    // status, standing.
    app.claim("u1", &phones).await;
    let page = b.get("/console/templates?q=%E6%89%8B%E6%9C%BA").await;
    assert!(
        page.contains("满 ¥300.00 减 ¥50.00，全部品类，领取后10天有效"),
        "{}",
        page.text
    );
    assert!(page.contains("1 / 100 / 99"), "{}", page.text);
    assert!(page.contains("待使用 1"), "{}", page.text);
    assert!(page.contains("data-standing=\"active\""), "{}", page.text);
    let page = b.get("/console/templates?kind=percent").await;
    assert!(page.contains("9折，最高减 ¥30.00"), "{}", page.text);
    for bad in ["standing=open", "kind=free"] {
        let page = b.get(&format!("/console/templates?{bad}")).await;
        assert_eq!(page.status, 400, "{bad}");
    }
    // The API takes the kind too.
    let r = app.get("/api/v1/templates?kind=percent").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["templates"].as_array().map(Vec::len), Some(1));
    let r = app.get("/api/v1/templates?kind=free").await;
    assert_eq!((r.status, r.field()), (400, "kind"));

    // Keyset pages of 50, the filters kept in the next link.
    for i in 0..50 {
        template(&app, json!({"name": format!("bulk {i}")})).await;
    }
    let first = b.get("/console/templates?kind=fixed&q=bulk").await;
    assert_eq!(row_names(&first.text).len(), 50);
    let next = crate::common::console::tag_with(&first.text, "data-testid=\"next-page\"")
        .and_then(|t| crate::common::console::attr(t, "href"))
        .expect("a next link");
    assert!(
        next.contains("kind=fixed") && next.contains("q=bulk"),
        "{next}"
    );
    let second = b.get(&next).await;
    assert_eq!(second.status, 200);
    assert!(
        row_names(&second.text).is_empty(),
        "exactly 50 bulk templates"
    );
    let first = b.get("/console/templates?kind=fixed").await;
    let next = crate::common::console::tag_with(&first.text, "data-testid=\"next-page\"")
        .and_then(|t| crate::common::console::attr(t, "href"))
        .expect("a next link");
    let second = b.get(&next).await;
    assert_eq!(
        row_names(&second.text),
        vec!["ended one", "later one", "paused one", "满300减50 手机"]
    );
}

#[tokio::test]
async fn a_refused_create_comes_back_with_the_input_and_the_reason_beside_the_field() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    // Money with three decimals is refused by the form's own parser.
    let r = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("value", "12.345")]),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        field_error(&r.text, "value").is_some_and(|m| m.contains("49.90")),
        "{}",
        r.text
    );
    assert_eq!(input_value(&r.text, "value").as_deref(), Some("12.345"));
    assert_eq!(
        input_value(&r.text, "name").as_deref(),
        Some("满300减50 手机")
    );
    // The service's checks land beside their fields too: no end for the
    // validity, a per-user limit of 0.
    let r = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("valid_days", "")]),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(field_error(&r.text, "valid_until").is_some(), "{}", r.text);
    assert_eq!(input_value(&r.text, "min_order").as_deref(), Some("300"));
    let r = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("per_user_limit", "0")]),
        )
        .await;
    assert_eq!(r.status, 422);
    assert!(
        field_error(&r.text, "per_user_limit").is_some(),
        "{}",
        r.text
    );
    // The preview still reads the rule after a refused submit.
    assert!(
        r.contains("满 ¥300.00 减 ¥50.00，手机类，领取后7天有效"),
        "{}",
        r.text
    );
    let r = app.get("/api/v1/templates").await;
    assert_eq!(
        r.body["templates"].as_array().map(Vec::len),
        Some(0),
        "nothing saved"
    );
}

#[tokio::test]
async fn the_preview_reads_the_rule_and_a_created_template_lands_on_its_page() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get("/console/templates/new").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let preview = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("intent", "preview")]),
        )
        .await;
    assert_eq!(preview.status, 200, "{}", preview.text);
    assert!(
        preview.contains("满 ¥300.00 减 ¥50.00，手机类，领取后7天有效"),
        "{}",
        preview.text
    );
    b.accept_language = Some("en".into());
    let preview = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("intent", "preview"), ("categories", "phones")]),
        )
        .await;
    assert!(
        preview.contains("¥50.00 off orders from ¥300.00, phones, valid 7 days after claiming"),
        "{}",
        preview.text
    );
    assert_eq!(
        app.get("/api/v1/templates").await.body["templates"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "a preview saves nothing"
    );
    b.accept_language = None;
    let done = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("max_discount", "30")]),
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    let to = done.location.clone().expect("a redirect");
    let id = to
        .strip_prefix("/console/templates/")
        .expect("lands on the template's page")
        .to_string();
    let page = b.get(&to).await;
    assert_eq!(page.status, 200);
    assert!(
        flash_text(&page.text).is_some_and(|f| f.contains("满300减50 手机")),
        "{}",
        page.text
    );
    assert!(page.contains("满 ¥300.00 减 ¥50.00，手机类，领取后7天有效"));
    let t = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(t.body["value_cents"], 5000);
    assert_eq!(t.body["min_order_cents"], 30000);
    assert_eq!(t.body["valid_seconds"], 7 * 86_400);
    assert_eq!(t.body["total_stock"], 100);
    assert_eq!(t.body["per_user_limit"], 2);
    assert_eq!(t.body["categories"], json!(["手机"]));
    assert!(
        t.body["max_discount_cents"].is_null(),
        "a fixed rule sends no cap"
    );
    // Its coupons are one link away.
    assert!(page.contains(&format!("/console/coupons?template_id={id}")));
}

#[tokio::test]
async fn pausing_refuses_claims_until_resumed_and_the_history_says_who_and_why() {
    let app = spawn_app().await;
    let id = template(&app, json!({"min_order_cents": 0})).await;
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Operator).await;
    // A reason is required: the page comes back with the message at it.
    let r = b
        .post_on(&path, &format!("{path}/pause"), &[("reason", " ")])
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(field_error(&r.text, "reason").is_some(), "{}", r.text);
    assert_eq!(claim_status(&app, "u1", &id).await.0, 201, "not paused");

    let r = b
        .post_on(&path, &format!("{path}/pause"), &[("reason", "库存核对")])
        .await;
    assert_eq!(
        (r.status, r.location.as_deref()),
        (303, Some(path.as_str()))
    );
    let page = b.get(&path).await;
    assert!(flash_text(&page.text).is_some(), "{}", page.text);
    assert!(page.contains("data-standing=\"paused\""));
    assert!(
        page.contains("data-testid=\"resume\""),
        "the page offers resume"
    );
    assert_eq!(
        claim_status(&app, "u2", &id).await,
        (409, "template_inactive".to_string())
    );
    let r = b
        .post_on(&path, &format!("{path}/resume"), &[("reason", "核对完毕")])
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(claim_status(&app, "u2", &id).await.0, 201);

    let page = b.get(&path).await;
    let history = &page.text[page
        .text
        .find("data-testid=\"template-history\"")
        .expect("history")..];
    let actions: Vec<&str> = history
        .split("data-action=\"")
        .skip(1)
        .filter_map(|r| r.split('"').next())
        .collect();
    assert_eq!(
        actions,
        vec!["template_resume", "template_pause", "template_create"],
        "newest first"
    );
    assert!(history.contains("核对完毕") && history.contains("库存核对"));
    assert!(history.contains("operator-1"), "who: {history}");
    assert!(history.contains("已暂停 → 领取中"), "{history}");
    // The staff log says it the same way, with the template's name.
    let log = b.get("/console/audit?log=staff").await;
    let rows = log
        .text
        .find("data-testid=\"audit-row\"")
        .map_or("", |i| &log.text[i..]);
    assert!(rows.contains("已暂停 → 领取中"), "{rows}");
    assert!(!rows.contains("tpl_"), "the template by name: {rows}");
}

#[tokio::test]
async fn lowering_the_stock_is_refused_at_the_field_and_raising_it_is_saved() {
    let app = spawn_app().await;
    let id = template(&app, json!({"min_order_cents": 0})).await;
    app.claim("u1", &id).await;
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Admin).await;
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &[("name", "满300减50"), ("total_stock", "50")],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        field_error(&r.text, "total_stock").as_deref(),
        Some("库存只能增加（不限库存不能改为有限）。")
    );
    assert_eq!(
        input_value(&r.text, "edit-total-stock").as_deref(),
        Some("50")
    );
    assert_eq!(
        app.get(&format!("/api/v1/templates/{id}")).await.body["total_stock"],
        100
    );
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &[("name", "满300减50 加量"), ("total_stock", "200")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let page = b.get(&path).await;
    assert!(page.contains("1 / 200 / 199"), "{}", page.text);
    assert!(page.contains("满300减50 加量"));
    assert!(
        page.contains("100 → 200"),
        "the history shows before → after"
    );
}

#[tokio::test]
async fn ending_claiming_early_refuses_later_claims() {
    let app = spawn_app().await;
    let id = template(&app, json!({"min_order_cents": 0})).await;
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Operator).await;
    // A time already past is refused beside the time field.
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &[("claim_ends_at", "2020-01-01T08:00")],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        field_error(&r.text, "claim_ends_at").is_some(),
        "{}",
        r.text
    );
    // A typed time in the business zone (UTC+8): 2026-11-11 09:00 there is
    // 01:00 UTC, an hour after the test clock's now.
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &[("claim_ends_at", "2026-11-11T09:00")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let t = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(t.body["claim_ends_at"], "2026-11-11T01:00:00.000Z");
    assert_eq!(claim_status(&app, "u1", &id).await.0, 201);
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &[("claim_ends_at", ""), ("now", "1")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        claim_status(&app, "u2", &id).await,
        (409, "template_inactive".to_string())
    );
    let page = b.get("/console/templates?standing=ended").await;
    assert_eq!(row_names(&page.text), vec!["满300减50"]);
}

#[tokio::test]
async fn support_reads_templates_but_neither_sees_nor_may_use_the_forms() {
    let app = spawn_app().await;
    let id = template(&app, json!({})).await;
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Support).await;
    let list = b.get("/console/templates").await;
    assert_eq!(list.status, 200);
    assert!(list.contains("data-testid=\"nav-templates\""));
    assert!(!list.contains("data-testid=\"new-template\""));
    let page = b.get(&path).await;
    assert_eq!(page.status, 200);
    for form in ["claiming-form", "end-claiming-form", "edit-form"] {
        assert!(!page.contains(&format!("data-testid=\"{form}\"")), "{form}");
    }
    assert_eq!(b.get("/console/templates/new").await.status, 403);
    let csrf = b.csrf().await;
    for (action, fields) in [
        (format!("{path}/pause"), vec![("reason", "x")]),
        (format!("{path}/resume"), vec![("reason", "x")]),
        (format!("{path}/edit"), vec![("total_stock", "500")]),
        (
            format!("{path}/edit"),
            vec![("claim_ends_at", ""), ("now", "1")],
        ),
        ("/console/templates/new".to_string(), create_fields(&[])),
    ] {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend(fields);
        let r = b.post_form(&action, &all).await;
        assert_eq!(r.status, 403, "{action}: {}", r.text);
    }
    let t = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(
        (t.body["status"].as_str(), t.body["total_stock"].as_i64()),
        (Some("active"), Some(100))
    );
    // Operators and admins see the forms.
    for role in [Role::Operator, Role::Admin] {
        let mut b = signed_in(&app, role).await;
        let page = b.get(&path).await;
        assert!(page.contains("data-testid=\"claiming-form\""), "{role:?}");
        assert!(
            b.get("/console/templates")
                .await
                .contains("data-testid=\"new-template\"")
        );
    }
    // Without a session: the sign-in page.
    let r = Browser::new(&app).get("/console/templates").await;
    assert_eq!(r.status, 303);
}

#[tokio::test]
async fn template_pages_show_names_and_words_never_ids_or_stored_words() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let done = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("claim_ends_at", "2026-12-01T08:00")]),
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    let path = done.location.expect("its page");
    b.post_on(&path, &format!("{path}/pause"), &[("reason", "check")])
        .await;
    b.post_on(&path, &format!("{path}/resume"), &[("reason", "ok")])
        .await;
    b.post_on(
        &path,
        &format!("{path}/edit"),
        &[("name", "renamed"), ("total_stock", "150")],
    )
    .await;
    b.post_on(&path, &format!("{path}/edit"), &[("now", "1")])
        .await;
    for lang in [None, Some("en")] {
        b.accept_language = lang.map(String::from);
        for page_path in [
            "/console/templates".to_string(),
            "/console/templates?standing=ended".to_string(),
            path.clone(),
            "/console/templates/new".to_string(),
        ] {
            let page = b.get(&page_path).await;
            assert_eq!(page.status, 200, "{page_path}");
            let text = visible_text(&page.text);
            let mut bad = unreadable_words(&text);
            for raw in [
                "not_started",
                "template_",
                "total_stock",
                "claim_ends_at",
                "disabled",
                "->",
                "null",
                "{",
            ] {
                if text.contains(raw) {
                    bad.push(format!("{raw} on {page_path}"));
                }
            }
            assert!(bad.is_empty(), "{page_path} {lang:?}: {bad:#?}\n{text}");
        }
    }
}

#[tokio::test]
async fn every_template_list_filter_reads_an_index_in_the_pages_order() {
    let app = spawn_app().await;
    let now_ms = app.now().timestamp_millis();
    let n = match store() {
        Store::Postgres => 100_000,
        Store::Sqlite => 20_000,
    };
    let (with, source) = crate::common::series(n);
    // One in ten percent, one in fifty paused, one in twenty ended early,
    // one in forty not started.
    plant(
        &app,
        &format!(
            "{with} INSERT INTO templates (id, name, kind, value_cents, percent_off, min_order_cents, categories,
                 valid_from, valid_until, valid_seconds, status, created_at, claim_ends_at)
             SELECT 'tpl-' || CAST(g AS TEXT), 'bulk ' || CAST(g AS TEXT),
                 CASE WHEN g % 10 = 0 THEN 'percent' ELSE 'fixed' END,
                 CASE WHEN g % 10 = 0 THEN NULL ELSE 500 END,
                 CASE WHEN g % 10 = 0 THEN 10 ELSE NULL END, 0, '[]',
                 CASE WHEN g % 40 = 1 THEN {now_ms} + 86400000 ELSE NULL END,
                 NULL, 86400,
                 CASE WHEN g % 50 = 3 THEN 'disabled' ELSE 'active' END,
                 {now_ms} - 1000 * g,
                 CASE WHEN g % 20 = 7 THEN {now_ms} - 1000 ELSE NULL END
             FROM {source}"
        ),
    )
    .await;
    plant(&app, "ANALYZE").await;
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    let mut checked = 0;
    let standings = [None]
        .into_iter()
        .chain(ClaimStanding::ALL.into_iter().map(Some));
    // Every standing with every kind, and a part of the name; each with
    // and without a cursor. (A name part is a filter on the walk: a B-tree
    // cannot find a substring, so a rare part within a rare standing may
    // read every template, and PostgreSQL may then prefer one sequential
    // read; see docs/src/operator/templates.md.)
    let combos = standings
        .flat_map(|st| {
            [None, Some(DiscountKind::Fixed), Some(DiscountKind::Percent)]
                .into_iter()
                .map(move |k| (st, k, None))
        })
        .chain([(None, None, Some("%bulk 1%"))]);
    for (standing, kind, name_like) in combos {
        for before in [None, Some((now_ms - 5_000_000, "tpl-5000"))] {
            let q = TemplatePageQuery {
                before,
                standing,
                kind,
                name_like,
                now_ms,
                limit: 51,
            };
            let plan = explain_page(&mut conn, &q)
                .await
                .expect("explain")
                .join("\n");
            let what = format!("{q:?}");
            assert!(!plan.contains("Seq Scan on templates"), "{what}:\n{plan}");
            if standing == Some(ClaimStanding::NotStarted) {
                // The few templates set up ahead: a range of
                // valid_from, sorted after, or the page's order.
                assert!(
                    plan.contains("templates_valid_from_idx")
                        || !(plan.contains("TEMP B-TREE") || plan.contains("Sort")),
                    "{what}:\n{plan}"
                );
            } else {
                assert!(!plan.contains("TEMP B-TREE"), "{what}:\n{plan}");
            }
            if store() == Store::Sqlite {
                assert!(
                    plan.contains("USING INDEX") || plan.contains("USING COVERING INDEX"),
                    "{what} reads an index:\n{plan}"
                );
            } else {
                assert!(plan.contains("Index"), "{what} reads an index:\n{plan}");
            }
            // The rare kind alone, or paused alone, is one range
            // of its own index (a kind most templates have may
            // walk the newest-first index instead).
            if standing.is_none() && kind == Some(DiscountKind::Percent) && name_like.is_none() {
                assert!(
                    plan.contains("templates_kind_created_idx"),
                    "{what}:\n{plan}"
                );
            }
            if standing == Some(ClaimStanding::Paused) && kind.is_none() {
                assert!(
                    plan.contains("templates_status_created_idx"),
                    "{what}:\n{plan}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, (5 * 3 + 1) * 2);
}

#[tokio::test]
async fn an_operator_sets_a_budget_and_a_lone_coupon_on_the_form_and_sees_the_budget_used() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    let refused = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("budget", "零")]),
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert!(
        field_error(&refused.text, "budget").is_some(),
        "{}",
        refused.text
    );
    assert_eq!(input_value(&refused.text, "budget").as_deref(), Some("零"));
    let done = b
        .post_on(
            "/console/templates/new",
            "/console/templates/new",
            &create_fields(&[("budget", "100"), ("alone", "on")]),
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.text);
    let to = done.location.clone().expect("a redirect");
    let id = to
        .strip_prefix("/console/templates/")
        .expect("lands on the template's page")
        .to_string();
    let t = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(t.body["budget_cents"], 10_000);
    assert_eq!(t.body["stackable"], false);
    // Two orders of ¥50 use all of it.
    for (no, user) in [("N1", "u1"), ("N2", "u2")] {
        let c = app.claim(user, &id).await;
        let r = app
            .order(json!({"order_no": no, "user_id": user, "kind": "normal",
                "category": "手机", "total_cents": 40_000, "coupon_id": c["id"]}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let page = b.get(&to).await;
    assert!(
        page.contains("¥100.00，已用 ¥100.00（100%）"),
        "{}",
        page.text
    );
    assert!(page.contains("不可与其他券叠加"), "{}", page.text);
    let report = b.get(&format!("/console/templates/{id}/report")).await;
    assert_eq!(report.status, 200, "{}", report.text);
    assert!(report.contains("已用 ¥100.00（100%）"), "{}", report.text);
    let home = b.get("/console").await;
    assert!(
        home.contains("满300减50 手机 的预算已用 ¥100.00 / ¥100.00（100%）"),
        "{}",
        visible_text(&home.text)
    );
    // The edit form keeps the budget and the lone box while nothing is
    // claimed elsewhere; here coupons were claimed, so the terms are
    // locked and only shown.
    assert_eq!(
        input_value(&page.text, "edit-budget").as_deref(),
        Some("100")
    );
}
