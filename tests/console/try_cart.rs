//! "Try a cart" on the console's user page: the checkout picker's answer
//! in words, fields that keep what was typed, and the presale cautions.

use crate::common::console::signed_in;
use crate::common::spawn_app;
use couponkeeper::domain::staff::Role;
use serde_json::json;

/// The part of the page from the try-a-cart section on.
fn section(text: &str) -> &str {
    text.find("data-testid=\"try-cart\"")
        .map(|i| &text[i..])
        .unwrap_or("")
}

#[tokio::test]
async fn support_sees_which_coupons_fit_a_cart_and_why_the_others_do_not() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await; // 满300减50
    let fits = app.claim("u1", t["id"].as_str().unwrap_or_default()).await;
    let shoes = app
        .template(json!({"name": "鞋类券", "categories": ["shoes"], "min_order_cents": 0}))
        .await;
    let other = app
        .claim("u1", shoes["id"].as_str().unwrap_or_default())
        .await;
    let mut b = signed_in(&app, Role::Support).await;

    let page = b
        .get("/console/users/u1?cart=1&kind=normal&total=280&category=phones")
        .await;
    assert_eq!(page.status, 200);
    let s = section(&page.text);
    assert!(s.contains("data-reason=\"threshold_not_met\""), "{s}");
    assert!(s.contains("还差 20.00 元可用"), "{s}");
    assert!(s.contains("data-reason=\"coupon_not_applicable\""), "{s}");
    assert!(s.contains("仅限shoes使用"), "{s}");
    assert!(s.contains("没有可以直接推荐的券"), "{s}");
    for c in [&fits, &other] {
        assert!(
            s.contains(c["code"].as_str().unwrap_or("?")),
            "the code is shown"
        );
    }
    // What was typed stays in the form.
    assert!(s.contains("value=\"280\""), "{s}");
    assert!(s.contains("value=\"phones\""), "{s}");

    let page = b
        .get("/console/users/u1?cart=1&kind=normal&total=300&category=phones")
        .await;
    let s = section(&page.text);
    let best = format!("最优：{}", fits["code"].as_str().unwrap_or("?"));
    assert!(s.contains(&best), "{s}");
    assert!(s.contains("data-best=\"true\""), "{s}");
}

#[tokio::test]
async fn a_mistyped_total_or_a_presale_without_campaign_comes_back_with_the_message_at_the_field() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b
        .get("/console/users/u1?cart=1&kind=normal&total=12abc&category=phones")
        .await;
    assert_eq!(page.status, 200);
    let s = section(&page.text);
    assert!(s.contains("data-field-error=\"total\""), "{s}");
    assert!(s.contains("value=\"12abc\""), "{s}");
    assert!(
        !s.contains("try-cart-answer"),
        "no answer for a refused form"
    );

    let page = b
        .get(
            "/console/users/u1?cart=1&kind=presale&total=399&category=phones&campaign=&deposit=500",
        )
        .await;
    let s = section(&page.text);
    assert!(s.contains("data-field-error=\"campaign\""), "{s}");
    assert!(s.contains("data-field-error=\"deposit\""), "{s}");
}

#[tokio::test]
async fn a_presale_cart_names_the_campaign_and_warns_about_a_coupon_dying_before_the_final_payment()
{
    let app = spawn_app().await;
    let t = app
        .template(json!({"valid_seconds": 1800, "min_order_cents": 0}))
        .await;
    let c = app.claim("u1", t["id"].as_str().unwrap_or_default()).await;
    let cmp = app.campaign("strict", 3600, 3600).await;
    let cmp_id = cmp["id"].as_str().unwrap_or_default();
    let mut b = signed_in(&app, Role::Support).await;
    let page = b
        .get(&format!(
            "/console/users/u1?cart=1&kind=presale&total=399&category=phones&campaign={cmp_id}&deposit=100"
        ))
        .await;
    let s = section(&page.text);
    // The campaign is offered by its name, and stays chosen.
    assert!(s.contains("双11预售"), "{s}");
    assert!(s.contains(&format!("value=\"{cmp_id}\" selected")), "{s}");
    assert!(s.contains("这张券会在付尾款开始"), "{s}");
    assert!(s.contains(c["code"].as_str().unwrap_or("?")));
    assert!(
        s.contains("没有可以直接推荐的券"),
        "a warned coupon is never the best: {s}"
    );
}
