//! The campaign list's search and filters (name part, policy, phase),
//! kept in the form and in its pager, and the coupon list's template
//! filter by name, on both stores.

use crate::common::console::{attr, signed_in, tag_with, visible_text};
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::json;

/// The campaign names of a list page, in order.
fn campaign_names(html: &str) -> Vec<String> {
    html.split("data-testid=\"campaign-link\">")
        .skip(1)
        .filter_map(|rest| rest.split('<').next())
        .map(str::to_string)
        .collect()
}

/// A campaign whose final-payment window opens after `opens_in` seconds
/// and lasts `lasts`.
async fn campaign(app: &TestApp, name: &str, policy: &str, opens_in: i64, lasts: i64) {
    let r = app
        .post(
            "/api/v1/presale-campaigns",
            json!({
                "name": name,
                "final_payment_starts_at": app.at(opens_in),
                "final_payment_ends_at": app.at(opens_in + lasts),
                "policy": policy,
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// The `<option>` tag that is selected inside the `<select>` marked by
/// `marker`.
fn selected_option<'h>(html: &'h str, marker: &str) -> Option<&'h str> {
    let start = html.find(marker)?;
    let select = &html[start..start + html[start..].find("</select>")?];
    select
        .split("<option")
        .skip(1)
        .find(|o| o.split('>').next().is_some_and(|t| t.contains("selected")))
}

#[tokio::test]
async fn the_campaign_list_searches_by_name_and_filters_by_policy_and_phase_keeping_the_choices() {
    let app = spawn_app().await;
    campaign(&app, "双11手机预售", "lock", 100, 1000).await;
    app.advance(1);
    campaign(&app, "双12家电预售", "strict", 10_000, 1000).await;
    app.advance(1);
    campaign(&app, "国庆手机预售", "swap_or_compensate", 50, 100).await;
    // Now the first is taking final payments, the second has not opened,
    // the third has closed.
    app.advance(200);
    let mut b = signed_in(&app, Role::Support).await;
    let all = b.get("/console/campaigns").await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(
        campaign_names(&all.text),
        vec!["国庆手机预售", "双12家电预售", "双11手机预售"]
    );
    assert!(all.contains("data-testid=\"campaign-filters\""));
    for (query, expected) in [
        ("q=%E6%89%8B%E6%9C%BA", vec!["国庆手机预售", "双11手机预售"]),
        ("policy=strict", vec!["双12家电预售"]),
        ("phase=before_final_payment", vec!["双12家电预售"]),
        ("phase=final_payment_open", vec!["双11手机预售"]),
        ("phase=ended", vec!["国庆手机预售"]),
        ("q=%E6%89%8B%E6%9C%BA&phase=ended", vec!["国庆手机预售"]),
        ("q=%E6%89%8B%E6%9C%BA&policy=strict", vec![]),
        ("q=%25", vec![]),
    ] {
        let page = b.get(&format!("/console/campaigns?{query}")).await;
        assert_eq!(page.status, 200, "{query}: {}", page.text);
        assert_eq!(campaign_names(&page.text), expected, "{query}");
        if expected.is_empty() {
            assert!(
                visible_text(&page.text).contains("没有符合条件的预售场次"),
                "{query}"
            );
        }
    }
    // The choices stay in the form after it is sent.
    let page = b
        .get("/console/campaigns?q=%E6%89%8B%E6%9C%BA&policy=lock&phase=final_payment_open")
        .await;
    assert_eq!(campaign_names(&page.text), vec!["双11手机预售"]);
    let search = tag_with(&page.text, "data-testid=\"campaign-search\"").unwrap_or_default();
    assert_eq!(attr(search, "value").as_deref(), Some("手机"));
    let policy =
        selected_option(&page.text, "data-testid=\"campaign-policy-filter\"").unwrap_or_default();
    assert!(policy.contains("value=\"lock\""), "{policy}");
    let phase =
        selected_option(&page.text, "data-testid=\"campaign-phase-filter\"").unwrap_or_default();
    assert!(phase.contains("value=\"final_payment_open\""), "{phase}");
    assert!(visible_text(&page.text).contains("尾款进行中"));
    // A filter that names nothing known: a clear 400.
    for bad in ["policy=loose", "phase=soon"] {
        let page = b.get(&format!("/console/campaigns?{bad}")).await;
        assert_eq!(page.status, 400, "{bad}");
    }

    // Pages of 50, the filters kept in the pager.
    for i in 0..50 {
        campaign(&app, &format!("批量手机预售 {i}"), "strict", 10_000, 1000).await;
    }
    let first = b
        .get("/console/campaigns?q=%E6%89%8B%E6%9C%BA&policy=strict")
        .await;
    assert_eq!(campaign_names(&first.text).len(), 50);
    let next = tag_with(&first.text, "data-testid=\"next-page\"")
        .and_then(|t| attr(t, "href"))
        .expect("a next link");
    assert!(
        next.contains("policy=strict") && next.contains("q=%E6%89%8B%E6%9C%BA"),
        "{next}"
    );
    let second = b.get(&next).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert!(
        campaign_names(&second.text).is_empty(),
        "exactly 50: {:?}",
        campaign_names(&second.text)
    );
    assert!(second.contains("data-testid=\"first-page\""));
    let unfiltered = b.get("/console/campaigns").await;
    let next = tag_with(&unfiltered.text, "data-testid=\"next-page\"")
        .and_then(|t| attr(t, "href"))
        .expect("a next link");
    assert_eq!(
        campaign_names(&b.get(&next).await.text),
        vec!["国庆手机预售", "双12家电预售", "双11手机预售"]
    );

    // The API's list is as it was.
    let r = app.get("/api/v1/presale-campaigns?limit=2").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["campaigns"].as_array().map(Vec::len), Some(2));
    assert!(r.body["next"].is_string());
}

#[tokio::test]
async fn the_coupon_list_filters_by_template_name_never_showing_ids() {
    let app = spawn_app().await;
    let phones = app.template(json!({"name": "手机券"})).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let homes = app.template(json!({"name": "家电券"})).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let phone_code = app.claim("u1", &phones).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let home_code = app.claim("u1", &homes).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut b = signed_in(&app, Role::Support).await;

    let all = b.get("/console/coupons").await;
    assert_eq!(all.status, 200, "{}", all.text);
    let text = visible_text(&all.text);
    assert!(text.contains("手机券") && text.contains("家电券"), "{text}");
    assert!(!text.contains("tpl_"), "names, not ids: {text}");
    assert!(all.contains(&phone_code) && all.contains(&home_code));
    assert!(
        !all.contains("type=\"text\" name=\"template_id\""),
        "no typed template id"
    );

    // Choosing a name narrows the list and stays chosen.
    let page = b
        .get(&format!("/console/coupons?template_id={phones}"))
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains(&phone_code), "{}", page.text);
    assert!(!page.contains(&home_code), "{}", page.text);
    let chosen =
        selected_option(&page.text, "data-testid=\"coupon-template-filter\"").unwrap_or_default();
    assert!(chosen.contains("手机券"), "{chosen}");
    // The CSV link keeps the choice.
    let csv = tag_with(&page.text, "data-testid=\"csv\"")
        .and_then(|t| attr(t, "href"))
        .unwrap_or_default();
    assert!(csv.contains(&phones), "{csv}");

    // Two templates of one name are told apart by when they were created.
    app.advance(60);
    app.template(json!({"name": "手机券"})).await;
    let page = b.get("/console/coupons").await;
    let options = visible_text(
        &page.text[page
            .text
            .find("data-testid=\"coupon-template-filter\"")
            .unwrap_or(0)..],
    );
    assert!(options.contains("手机券 · 2026-11-11 08:01"), "{options}");

    // A template that does not exist: said in words, nothing listed.
    let page = b.get("/console/coupons?template_id=tpl_nope").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let chosen =
        selected_option(&page.text, "data-testid=\"coupon-template-filter\"").unwrap_or_default();
    assert!(chosen.contains("不存在的券模板"), "{chosen}");
    assert!(!page.contains(&phone_code) && !page.contains(&home_code));
}
