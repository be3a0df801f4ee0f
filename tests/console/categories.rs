//! Category names: operators name the shop's category codes in both
//! languages, every page shows the names, support reads them, and a
//! refused form changes nothing.

use crate::common::console::{field_error, signed_in};
use crate::common::spawn_app;
use couponkeeper::domain::staff::Role;
use serde_json::json;

#[tokio::test]
async fn an_operator_names_a_code_and_the_coupon_order_and_log_pages_show_the_name() {
    let app = spawn_app().await;
    let t = app.template(json!({"categories": ["phones"]})).await;
    let coupon = app.claim("u1", t["id"].as_str().expect("id")).await;
    let cid = coupon["id"].as_str().expect("coupon id").to_string();
    let r = app
        .order(crate::common::normal_order("N1", "u1", None, 10_000))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);

    let mut op = signed_in(&app, Role::Operator).await;
    let page = op.get(&format!("/console/coupons/{cid}")).await;
    assert!(page.contains("phones"), "the code until it is named");

    let csrf = op.csrf().await;
    let r = op
        .post_form(
            "/console/categories",
            &[
                ("csrf", &csrf),
                ("code", "phones"),
                ("name_zh", "手机"),
                ("name_en", "Phones"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some("/console/categories#category-list")
    );

    let page = op.get(&format!("/console/coupons/{cid}")).await;
    assert!(
        page.contains("<dd>手机</dd>") && !page.contains(">phones<"),
        "{}",
        page.text
    );
    let page = op.get("/console/orders/N1").await;
    assert!(
        page.contains("<dd>手机</dd>") && !page.contains(">phones<"),
        "{}",
        page.text
    );
    let page = op
        .get(&format!(
            "/console/templates/{}",
            t["id"].as_str().unwrap_or_default()
        ))
        .await;
    assert!(page.contains("手机"), "{}", page.text);
    op.accept_language = Some("en".into());
    let page = op.get(&format!("/console/coupons/{cid}")).await;
    assert!(page.contains("Phones"), "{}", page.text);
    op.accept_language = None;
    let log = op
        .get("/console/audit?log=staff&action=category_name")
        .await;
    assert!(
        log.contains("命名品类") && log.contains("手机 / Phones"),
        "{}",
        log.text
    );

    // Renamed from its row: the form opens filled in, the code fixed.
    let form = op.get("/console/categories?edit=phones").await;
    assert!(form.contains("修改品类名称"), "{}", form.text);
    let csrf = op.csrf().await;
    let r = op
        .post_form(
            "/console/categories",
            &[
                ("csrf", &csrf),
                ("code", "phones"),
                ("name_zh", "手机通讯"),
                ("name_en", "Mobile phones"),
                ("was_zh", "手机"),
                ("was_en", "Phones"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let page = op.get(&format!("/console/coupons/{cid}")).await;
    assert!(page.contains("手机通讯"), "{}", page.text);
}

#[tokio::test]
async fn a_refused_name_comes_back_as_typed_with_the_message_at_the_field_and_changes_nothing() {
    let app = spawn_app().await;
    let mut op = signed_in(&app, Role::Operator).await;
    let csrf = op.csrf().await;
    let r = op
        .post_form(
            "/console/categories",
            &[
                ("csrf", &csrf),
                ("code", "snacks"),
                ("name_zh", " "),
                ("name_en", "Snacks"),
            ],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(field_error(&r.text, "name_zh").is_some(), "{}", r.text);
    assert!(r.text.contains("value=\"Snacks\""), "the input kept");
    let named: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM category_names")
        .fetch_one(app.db.db.pool())
        .await
        .expect("count");
    assert_eq!(named, 0);

    // Named twice from the new-name form: the second is refused, and a
    // rename that saw old names is refused too.
    for (zh, expect) in [("零食", 303), ("小吃", 422)] {
        let csrf = op.csrf().await;
        let r = op
            .post_form(
                "/console/categories",
                &[
                    ("csrf", &csrf),
                    ("code", "snacks"),
                    ("name_zh", zh),
                    ("name_en", "Snacks"),
                ],
            )
            .await;
        assert_eq!(r.status, expect, "{zh}: {}", r.text);
    }
    let csrf = op.csrf().await;
    let r = op
        .post_form(
            "/console/categories",
            &[
                ("csrf", &csrf),
                ("code", "snacks"),
                ("name_zh", "小吃"),
                ("name_en", "Snacks"),
                ("was_zh", "不是这个"),
                ("was_en", "Snacks"),
            ],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(r.text.contains("刚被别人改过"), "{}", r.text);
    let zh: String = sqlx::query_scalar("SELECT name_zh FROM category_names WHERE code = 'snacks'")
        .fetch_one(app.db.db.pool())
        .await
        .expect("row");
    assert_eq!(zh, "零食");
}

#[tokio::test]
async fn support_reads_the_names_but_cannot_change_them() {
    let app = spawn_app().await;
    let mut support = signed_in(&app, Role::Support).await;
    let page = support.get("/console/categories").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(!page.contains("data-testid=\"category-form\""));
    let csrf = support.csrf().await;
    let r = support
        .post_form(
            "/console/categories",
            &[
                ("csrf", &csrf),
                ("code", "phones"),
                ("name_zh", "手机"),
                ("name_en", "Phones"),
            ],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text);
}
