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

/// `rows` as the form's `lines` parameter.
fn lines_param(rows: &[&str]) -> String {
    rows.iter()
        .map(|r| r.replace(' ', "+"))
        .collect::<Vec<_>>()
        .join("%0A")
}

#[tokio::test]
async fn a_cart_of_lines_shows_the_best_combination_by_code_and_each_lines_shares() {
    let app = spawn_app().await;
    let platform = app
        .template(json!({"name": "平台满300减30", "value_cents": 3000, "min_order_cents": 30000}))
        .await;
    let shop = app
        .template(
            json!({"name": "A店满150减20", "value_cents": 2000, "min_order_cents": 15000,
            "shop_id": "A"}),
        )
        .await;
    let p = app
        .claim("u1", platform["id"].as_str().unwrap_or_default())
        .await;
    let a = app
        .claim("u1", shop["id"].as_str().unwrap_or_default())
        .await;
    let mut b = signed_in(&app, Role::Support).await;
    let rows = lines_param(&["A beauty 2 100", "- food 1 150.50"]);
    let page = b
        .get(&format!(
            "/console/users/u1?cart=1&kind=normal&lines={rows}"
        ))
        .await;
    assert_eq!(page.status, 200);
    let s = section(&page.text);
    let named = format!(
        "最佳叠加组合：{} + {}，共减 ¥50.00",
        p["code"].as_str().unwrap_or("?"),
        a["code"].as_str().unwrap_or("?")
    );
    assert!(s.contains(&named), "{s}");
    // Line 1: shop A's 20.00 and the platform's share of 30.00 over what
    // is left (180.00 and 150.50 → 16.34), payable 163.66.
    assert!(s.contains("¥163.66"), "{s}");
    let id_shown = format!(">{}<", p["id"].as_str().unwrap_or("?"));
    assert!(!s.contains(&id_shown), "no coupon id is shown");
    // What was typed stays in the form.
    assert!(s.contains("A beauty 2 100\n- food 1 150.50"), "{s}");
}

#[tokio::test]
async fn a_mistyped_line_or_lines_beside_a_total_come_back_with_the_message_at_the_lines() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let rows = lines_param(&["A beauty 2 100", "A beauty two 100"]);
    let page = b
        .get(&format!(
            "/console/users/u1?cart=1&kind=normal&lines={rows}"
        ))
        .await;
    assert_eq!(page.status, 200);
    let s = section(&page.text);
    assert!(s.contains("data-field-error=\"lines\""), "{s}");
    assert!(s.contains("第 2 行应为"), "{s}");
    assert!(s.contains("A beauty two 100"), "{s}");
    assert!(
        !s.contains("try-cart-answer"),
        "no answer for a refused form"
    );

    let rows = lines_param(&["A beauty 2 100"]);
    let page = b
        .get(&format!(
            "/console/users/u1?cart=1&kind=normal&total=200&category=beauty&lines={rows}"
        ))
        .await;
    let s = section(&page.text);
    assert!(s.contains("data-field-error=\"lines\""), "{s}");
    assert!(s.contains("订单金额和商品类目请留空"), "{s}");
}
