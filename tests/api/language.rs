//! API error messages follow `Accept-Language` (`zh*` Chinese, else
//! English), come from the catalog, and leave `code` and `field` alone.

use crate::common::{TOKEN, spawn_app};
use serde_json::json;

#[tokio::test]
async fn a_refusal_speaks_chinese_to_a_chinese_caller_and_english_to_everyone_else() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": 1})).await;
    let id = t["id"].as_str().expect("id");
    app.claim("u1", id).await;
    let body = json!({"template_id": id}).to_string();
    let auth = format!("Bearer {TOKEN}");
    let zh = app
        .post_raw(
            "/api/v1/users/u2/coupons",
            body.clone(),
            &[
                ("authorization", &auth),
                ("accept-language", "zh-CN,zh;q=0.9"),
            ],
        )
        .await;
    assert_eq!((zh.status, zh.code()), (409, "out_of_stock"));
    assert_eq!(zh.body["error"]["message"], "这批券已经领完了。");
    for other in ["en-US", "fr", ""] {
        let en = app
            .post_raw(
                "/api/v1/users/u2/coupons",
                body.clone(),
                &[("authorization", &auth), ("accept-language", other)],
            )
            .await;
        assert_eq!((en.status, en.code()), (409, "out_of_stock"), "{other}");
        assert_eq!(
            en.body["error"]["message"], "These coupons have all been claimed.",
            "{other}"
        );
    }
}

#[tokio::test]
async fn bad_input_keeps_its_code_and_field_and_names_the_field_in_chinese() {
    let app = spawn_app().await;
    let auth = format!("Bearer {TOKEN}");
    let bad = json!({"name": "x", "kind": "fixed", "value_cents": -5}).to_string();
    let zh = app
        .post_raw(
            "/api/v1/templates",
            bad.clone(),
            &[("authorization", &auth), ("accept-language", "zh")],
        )
        .await;
    let en = app
        .post_raw(
            "/api/v1/templates",
            bad,
            &[("authorization", &auth), ("accept-language", "en")],
        )
        .await;
    assert_eq!(zh.status, 400);
    assert_eq!((zh.code(), zh.field()), (en.code(), en.field()));
    assert_eq!(zh.code(), "invalid_request");
    let (mz, me) = (
        zh.body["error"]["message"].as_str().unwrap_or_default(),
        en.body["error"]["message"].as_str().unwrap_or_default(),
    );
    assert!(mz.contains(zh.field()) && mz.contains("填写有误"), "{mz}");
    assert!(me.contains(en.field()) && !me.contains("填写有误"), "{me}");
}

#[tokio::test]
async fn a_missing_token_is_refused_in_the_callers_language() {
    let app = spawn_app().await;
    let zh = app
        .post_raw("/api/v1/templates", "{}", &[("accept-language", "zh-TW")])
        .await;
    assert_eq!((zh.status, zh.code()), (401, "unauthorized"));
    assert_eq!(zh.body["error"]["message"], "没有有效的访问凭证。");
}
