//! Editing every term of a template before its first claim, the locked
//! terms after it, and duplicating a template into a prefilled create
//! form, on both stores, through the console's pages and seen from the
//! API and the staff log.

use crate::common::console::{
    Browser, field_error, flash_text, input_value, signed_in, tag_with, visible_text,
};
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::{Value, json};

async fn template(app: &TestApp, overrides: Value) -> String {
    app.template(overrides).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A full edit of the template page's form: 20% off up to ¥30 from ¥100,
/// appliances, 3 days after claiming, stock 10, one per customer, with
/// `overrides` replacing fields of the same name.
fn full_edit<'a>(overrides: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        ("full", "1"),
        ("name", "八折家电"),
        ("kind", "percent"),
        ("percent_off", "20"),
        ("max_discount", "30"),
        ("min_order", "100"),
        ("categories", "家电"),
        ("valid_days", "3"),
        ("total_stock", "10"),
        ("per_user_limit", "1"),
    ];
    for (k, v) in overrides {
        f.retain(|(name, _)| name != k);
        f.push((k, v));
    }
    f
}

/// The staff log's rows as people read them.
async fn staff_log(b: &mut Browser<'_>) -> String {
    let log = b.get("/console/audit?log=staff").await;
    assert_eq!(log.status, 200, "{}", log.text);
    let rows = log
        .text
        .find("data-testid=\"audit-row\"")
        .map_or("", |i| &log.text[i..]);
    visible_text(rows)
}

#[tokio::test]
async fn before_any_claim_every_term_changes_and_the_history_says_it_in_words() {
    let app = spawn_app().await;
    let id = template(&app, json!({"per_user_limit": 2})).await;
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Operator).await;

    // The form shows the terms as they stand, unlocked.
    let page = b.get(&path).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("name=\"full\""), "a full edit: {}", page.text);
    assert!(!page.contains("data-testid=\"terms-locked\""));
    let fieldset = tag_with(&page.text, "data-testid=\"edit-terms\"").unwrap_or_default();
    assert!(!fieldset.contains("disabled"), "{fieldset}");
    assert_eq!(input_value(&page.text, "edit-value").as_deref(), Some("50"));
    assert_eq!(
        input_value(&page.text, "edit-min-order").as_deref(),
        Some("300")
    );
    assert_eq!(
        input_value(&page.text, "edit-valid-days").as_deref(),
        Some("10")
    );

    // A term that does not parse: refused beside its field, as typed,
    // nothing changed.
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &full_edit(&[("percent_off", "2x")]),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(field_error(&r.text, "percent_off").is_some(), "{}", r.text);
    assert_eq!(
        input_value(&r.text, "edit-percent-off").as_deref(),
        Some("2x")
    );
    assert_eq!(
        input_value(&r.text, "edit-name").as_deref(),
        Some("八折家电")
    );
    // The rules of creating hold: a percentage over 100 is refused too.
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &full_edit(&[("percent_off", "120")]),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(field_error(&r.text, "percent_off").is_some(), "{}", r.text);
    let t = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(
        (t.body["kind"].as_str(), t.body["name"].as_str()),
        (Some("fixed"), Some("满300减50"))
    );

    // Support may not send one.
    let mut support = signed_in(&app, Role::Support).await;
    let csrf = support.csrf().await;
    let mut fields = vec![("csrf", csrf.as_str())];
    fields.extend(full_edit(&[]));
    let r = support.post_form(&format!("{path}/edit"), &fields).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let t = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(t.body["kind"], "fixed");

    // Saved: every term changed, the stock may even shrink.
    let r = b
        .post_on(&path, &format!("{path}/edit"), &full_edit(&[]))
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some(path.as_str()),
        "lands on its page"
    );
    let t = app.get(&format!("/api/v1/templates/{id}")).await.body;
    assert_eq!(t["name"], "八折家电");
    assert_eq!(t["kind"], "percent");
    assert_eq!(t["percent_off"], 20);
    assert_eq!(t["max_discount_cents"], 3000);
    assert!(t["value_cents"].is_null(), "{t}");
    assert_eq!(t["min_order_cents"], 10000);
    assert_eq!(t["categories"], json!(["家电"]));
    assert_eq!(t["valid_seconds"], 3 * 86_400);
    assert_eq!(t["total_stock"], 10);
    assert_eq!(t["per_user_limit"], 1);
    // A claim gets the new terms, and only one per customer.
    let coupon = app.claim("u1", &id).await;
    assert_eq!(coupon["kind"], "percent", "{coupon}");
    assert_eq!(coupon["percent_off"], 20, "{coupon}");
    let again = app
        .post(
            "/api/v1/users/u1/coupons",
            json!({"template_id": id.clone()}),
        )
        .await;
    assert_eq!(
        (again.status, again.code()),
        (409, "claim_limit_reached"),
        "{}",
        again.text
    );

    // The page's history and the staff log say before → after in words.
    let page = b.get(&path).await;
    assert!(
        flash_text(&page.text).is_some_and(|f| f.contains("八折家电")),
        "{}",
        page.text
    );
    let history = visible_text(
        &page.text[page
            .text
            .find("data-testid=\"template-history\"")
            .unwrap_or(0)..],
    );
    for words in [
        "满300减50 → 八折家电",
        "100 → 10",
        "每人限领：2 → 1",
        "满 ¥300.00 减 ¥50.00，全部品类，领取后10天有效 → 满 ¥100.00 可用，8折，最高减 ¥30.00，家电类，领取后3天有效",
    ] {
        assert!(history.contains(words), "{words}: {history}");
    }
    let log = staff_log(&mut b).await;
    assert!(log.contains("8折，最高减 ¥30.00"), "{log}");
    for raw in ["{", "tpl_", "percent_off", "null"] {
        assert!(!log.contains(raw), "{raw}: {log}");
    }
    b.accept_language = Some("en".into());
    let page = b.get(&path).await;
    assert!(
        page.contains("Limit per customer: 2 → 1"),
        "the history in the reader's language: {}",
        visible_text(&page.text)
    );
}

#[tokio::test]
async fn after_the_first_claim_the_terms_are_locked_and_a_change_is_refused_at_them() {
    let app = spawn_app().await;
    let id = template(&app, json!({})).await;
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Admin).await;
    // The page was read before the claim: its form still offers a full
    // edit.
    let before = b.get(&path).await;
    let csrf = before.csrf().expect("a token");
    app.claim("u1", &id).await;
    let mut fields = vec![("csrf", csrf.as_str())];
    fields.extend(full_edit(&[("value", "40"), ("kind", "fixed")]));
    let r = b.post_form(&format!("{path}/edit"), &fields).await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        field_error(&r.text, "terms").as_deref(),
        Some("已有券领取，已发出的券保留原条款，故不能修改条款。")
    );
    assert_eq!(
        input_value(&r.text, "edit-value").as_deref(),
        Some("40"),
        "the input is kept"
    );
    let t = app.get(&format!("/api/v1/templates/{id}")).await.body;
    assert_eq!(
        (
            t["name"].as_str(),
            t["value_cents"].as_i64(),
            t["total_stock"].as_i64()
        ),
        (Some("满300减50"), Some(5000), Some(100)),
        "nothing changed"
    );
    let page = b.get(&path).await;
    assert!(
        !page.contains("data-action=\"template_edit\""),
        "no edit in the history"
    );

    // Now the page shows the terms locked, with why; the safe edit stays.
    let page = b.get(&path).await;
    assert!(
        page.contains("data-testid=\"terms-locked\""),
        "{}",
        page.text
    );
    assert!(visible_text(&page.text).contains("已有券领取，已发出的券保留原条款"));
    let fieldset = tag_with(&page.text, "data-testid=\"edit-terms\"").unwrap_or_default();
    assert!(fieldset.contains("disabled"), "{fieldset}");
    assert!(!page.contains("name=\"full\""));
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &[("name", "满300减50 加量"), ("total_stock", "200")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let t = app.get(&format!("/api/v1/templates/{id}")).await.body;
    assert_eq!(
        (t["name"].as_str(), t["total_stock"].as_i64()),
        (Some("满300减50 加量"), Some(200))
    );
    // The API's safe edit is as it was: terms refused, safe fields taken.
    let r = app
        .patch(
            &format!("/api/v1/templates/{id}"),
            json!({"value_cents": 100}),
        )
        .await;
    assert_eq!(
        (r.status, r.code()),
        (409, "edit_not_allowed"),
        "{}",
        r.text
    );
}

#[tokio::test]
async fn any_template_is_duplicated_into_a_prefilled_create_form_that_saves_nothing_until_sent() {
    let app = spawn_app().await;
    let id = template(
        &app,
        json!({"name": "双11 手机券", "categories": ["手机"], "per_user_limit": 3, "max_discount_cents": null, "claim_ends_at": app.at(60)}),
    )
    .await;
    app.claim("u1", &id).await;
    app.advance(120);
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get(&path).await;
    let link = tag_with(&page.text, "data-testid=\"duplicate-template\"")
        .and_then(|t| crate::common::console::attr(t, "href"))
        .expect("a duplicate link for an ended, claimed template");
    assert_eq!(link, format!("/console/templates/new?from={id}"));
    let form = b.get(&link).await;
    assert_eq!(form.status, 200, "{}", form.text);
    for (field, value) in [
        ("name", "双11 手机券 副本"),
        ("value", "50"),
        ("min_order", "300"),
        ("categories", "手机"),
        ("valid_days", "10"),
        ("total_stock", "100"),
        ("per_user_limit", "3"),
        ("claim_ends_at", ""),
    ] {
        assert_eq!(
            input_value(&form.text, field).as_deref(),
            Some(value),
            "{field}"
        );
    }
    assert!(
        form.contains("满 ¥300.00 减 ¥50.00，手机类，领取后10天有效"),
        "the preview reads the copied rule"
    );
    assert_eq!(
        app.get("/api/v1/templates").await.body["templates"]
            .as_array()
            .map(Vec::len),
        Some(1),
        "opening the copy creates nothing"
    );
    b.accept_language = Some("en".into());
    let en = b.get(&link).await;
    assert_eq!(
        input_value(&en.text, "name").as_deref(),
        Some("双11 手机券 (copy)")
    );
    b.accept_language = None;
    // Sent as it came: a new template with the same terms.
    let r = b
        .post_on(
            &link,
            "/console/templates/new",
            &[
                ("name", "双11 手机券 副本"),
                ("kind", "fixed"),
                ("value", "50"),
                ("min_order", "300"),
                ("categories", "手机"),
                ("valid_days", "10"),
                ("total_stock", "100"),
                ("per_user_limit", "3"),
                ("intent", "create"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let list = app.get("/api/v1/templates").await.body;
    let copy = &list["templates"][0];
    assert_eq!(copy["name"], "双11 手机券 副本");
    assert_ne!(copy["id"], json!(id));
    for field in [
        "kind",
        "value_cents",
        "min_order_cents",
        "categories",
        "valid_seconds",
        "total_stock",
        "per_user_limit",
    ] {
        assert_eq!(copy[field], list["templates"][1][field], "{field}");
    }
    assert_eq!(copy["claimed"], 0);
    // An unknown template to copy: a clear page, not an empty form.
    let r = b.get("/console/templates/new?from=tpl_nope").await;
    assert_eq!(r.status, 404, "{}", r.text);
}

#[tokio::test]
async fn a_claim_that_read_the_terms_before_a_full_edit_sees_them_change_when_it_takes_stock() {
    use couponkeeper::domain::ids::TemplateId;
    use couponkeeper::domain::template::TemplateInput;
    use couponkeeper::store::templates::{get_for_claim, take_from_shard};
    let app = crate::common::spawn_app().await;
    let t = app.template(serde_json::json!({})).await;
    let id = TemplateId::from_wire(t["id"].as_str().expect("id"));
    let mut conn = app.db.db.pool().acquire().await.expect("a connection");
    // What a claim reads first …
    let (_, _, read) = get_for_claim(&mut conn, &id)
        .await
        .expect("read")
        .expect("the template");
    // … then a full edit commits (the template is still unclaimed) …
    app.service
        .edit_template_terms(
            &couponkeeper::service::Ctx::new("staff:olga", None),
            id.clone(),
            TemplateInput {
                name: Some("满300减80".into()),
                kind: Some("fixed".into()),
                value_cents: Some(8000),
                min_order_cents: Some(30000),
                valid_seconds: Some(10 * 24 * 3600),
                total_stock: Some(100),
                ..TemplateInput::default()
            },
        )
        .await
        .expect("the edit");
    // … and the claim takes its unit of stock: the terms it gets back
    // with it are not the ones it read, so it refuses itself.
    let taken = take_from_shard(&mut conn, &id, 0)
        .await
        .expect("stock")
        .expect("a unit");
    match app.db.db.backend() {
        couponkeeper::store::Backend::Postgres => assert_ne!(taken, read),
        // One write transaction at a time: a claim cannot straddle an edit.
        couponkeeper::store::Backend::Sqlite => assert_eq!(taken, read),
    }
    drop(conn);
    // A claim from scratch gets the new terms.
    let c = app.claim("u1", &id).await;
    assert_eq!(c["value_cents"], 8000, "{c}");
}

#[tokio::test]
async fn a_full_edit_keeps_the_shop_skus_refund_rule_stacking_and_budget_the_form_shows() {
    let app = spawn_app().await;
    let id = template(
        &app,
        json!({"shop_id": "A", "skus": ["LIP"], "partial_refund_rule": "clawback",
            "stackable": false, "budget_cents": 20_000}),
    )
    .await;
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get(&path).await;
    assert_eq!(
        input_value(&page.text, "edit-shop-id").as_deref(),
        Some("A")
    );
    assert_eq!(input_value(&page.text, "edit-skus").as_deref(), Some("LIP"));
    assert_eq!(
        input_value(&page.text, "edit-budget").as_deref(),
        Some("200")
    );
    assert!(
        tag_with(&page.text, "id=\"edit-alone\"").is_some_and(|t| t.contains("checked")),
        "the lone box is ticked"
    );
    // What the form shows, sent back with a new name: nothing else moves.
    let r = b
        .post_on(
            &path,
            &format!("{path}/edit"),
            &full_edit(&[
                ("shop_id", "A"),
                ("skus", "LIP"),
                ("partial_refund_rule", "clawback"),
                ("alone", "on"),
                ("budget", "200"),
            ]),
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let t = app.get(&format!("/api/v1/templates/{id}")).await.body;
    assert_eq!(t["name"], "八折家电");
    assert_eq!(t["shop_id"], "A");
    assert_eq!(t["skus"], json!(["LIP"]));
    assert_eq!(t["partial_refund_rule"], "clawback");
    assert_eq!(t["stackable"], false);
    assert_eq!(t["budget_cents"], 20_000);
    assert_eq!(t["budget_used_cents"], 0);
}

#[tokio::test]
async fn after_the_first_claim_an_operator_raises_a_budget_and_a_cut_below_its_use_comes_back_at_the_field()
 {
    let app = spawn_app().await;
    let id = template(&app, json!({"budget_cents": 10_000})).await;
    let c = app.claim("u1", &id).await;
    let r = app
        .order(json!({"order_no": "N1", "user_id": "u1", "kind": "normal",
            "category": "phones", "total_cents": 40_000, "coupon_id": c["id"]}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let path = format!("/console/templates/{id}");
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get(&path).await;
    assert_eq!(
        input_value(&page.text, "edit-budget-now").as_deref(),
        Some("100"),
        "{}",
        page.text
    );
    assert!(visible_text(&page.text).contains("已用 ¥50.00"));
    let r = b
        .post_on(&path, &format!("{path}/edit"), &[("budget_now", "40")])
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        field_error(&r.text, "budget_now").as_deref(),
        Some("预算不能少于这批券已占用或已优惠的金额。")
    );
    assert_eq!(
        input_value(&r.text, "edit-budget-now").as_deref(),
        Some("40")
    );
    let r = b
        .post_on(&path, &format!("{path}/edit"), &[("budget_now", "150")])
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let t = app.get(&format!("/api/v1/templates/{id}")).await.body;
    assert_eq!(t["budget_cents"], 15_000);
    let log = staff_log(&mut b).await;
    assert!(log.contains("¥100.00 → ¥150.00"), "{log}");
}
