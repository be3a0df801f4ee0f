//! Report pages (报表) in the console: `/console/templates/{id}/report`,
//! `/console/campaigns/{id}/report` and their CSV, on the store the
//! harness picks.

use couponkeeper::domain::staff::Role;
use serde_json::json;

use crate::common::console::{field_error, signed_in, unreadable_words, visible_text};
use crate::common::{TestApp, normal_order, presale_order, spawn_app};

/// A template with three claims, one used on an order; a lock campaign
/// with one deposit paid. Returns (template id, campaign id).
async fn some_activity(app: &TestApp) -> (String, String) {
    let t = app.template(json!({"name": "双11满300减50"})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let c1 = app.claim("u1", &tid).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    app.claim("u2", &tid).await;
    let c3 = app.claim("u3", &tid).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let r = app.order(normal_order("N1", "u1", Some(&c1), 39_900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let k = app.campaign("lock", 3600, 86_400).await;
    let kid = k["id"].as_str().unwrap_or_default().to_string();
    let r = app.order(presale_order("P1", "u3", Some(&c3), &kid)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    (tid, kid)
}

#[tokio::test]
async fn an_operator_reads_a_template_report_as_two_charts_and_a_table_in_both_languages() {
    let app = spawn_app().await;
    let (tid, _) = some_activity(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let path = format!("/console/templates/{tid}/report");
    let page = b.get(&path).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let html = &page.text;
    assert!(html.contains("data-testid=\"report-line-chart\""));
    assert!(html.contains("data-testid=\"report-bar-chart\""));
    assert_eq!(html.matches("<svg viewBox=").count(), 2, "two charts");
    assert!(
        html.contains("width=\"100%\""),
        "the charts scale with the page"
    );
    // 30 days: a claimed and a used point, and a bar, each with its title.
    assert_eq!(html.matches("data-testid=\"point-claimed\"").count(), 30);
    assert_eq!(html.matches("data-testid=\"bar\"").count(), 30);
    assert!(html.matches("<title>").count() >= 90);
    assert_eq!(html.matches("data-testid=\"report-row\"").count(), 30);
    assert!(html.contains("data-testid=\"axis-label\""));
    assert!(html.contains("¥50.00"), "the discount of the paid order");
    let text = visible_text(html);
    assert!(text.contains("双11满300减50"), "the name, not the id");
    assert!(text.contains("每日领取与使用"), "{text}");
    assert!(
        unreadable_words(&text).is_empty(),
        "{:?}",
        unreadable_words(&text)
    );
    b.accept_language = Some("en".into());
    let page = b.get(&path).await;
    let text = visible_text(&page.text);
    assert!(text.contains("Claimed and used per day"), "{text}");
    assert!(text.contains("Redemption rate"));
    assert!(
        unreadable_words(&text).is_empty(),
        "{:?}",
        unreadable_words(&text)
    );
    // The CSV: a header and a line per day.
    let csv = b.get(&format!("{path}.csv")).await;
    assert_eq!(csv.status, 200);
    assert!(
        csv.header("content-type")
            .is_some_and(|c| c.starts_with("text/csv")),
        "{:?}",
        csv.headers
    );
    assert_eq!(csv.text.lines().count(), 31, "{}", csv.text);
    assert!(
        csv.text
            .lines()
            .any(|l| l.ends_with(",3,1,0,0,0,50.00,0.00,0.00,5000,0,0")),
        "{}",
        csv.text
    );
}

#[tokio::test]
async fn a_campaign_report_page_shows_its_locked_coupons() {
    let app = spawn_app().await;
    let (_, kid) = some_activity(&app).await;
    let mut b = signed_in(&app, Role::Admin).await;
    let page = b.get(&format!("/console/campaigns/{kid}/report")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let text = visible_text(&page.text);
    assert!(text.contains("锁定到订单"), "{text}");
    assert!(
        page.text.contains("data-testid=\"total-available\">1<"),
        "{}",
        page.text
    );
    assert!(
        unreadable_words(&text).is_empty(),
        "{:?}",
        unreadable_words(&text)
    );
}

#[tokio::test]
async fn a_refused_range_comes_back_with_its_input_and_the_message_at_the_field() {
    let app = spawn_app().await;
    let (tid, _) = some_activity(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b
        .get(&format!(
            "/console/templates/{tid}/report?from=2026-12-05&to=2026-12-01"
        ))
        .await;
    assert_eq!(page.status, 400, "{}", page.text);
    assert!(field_error(&page.text, "from").is_some(), "{}", page.text);
    assert!(
        page.text.contains("value=\"2026-12-05\""),
        "the input is kept"
    );
    let page = b
        .get(&format!(
            "/console/templates/{tid}/report?from=2024-01-01&to=2026-12-01"
        ))
        .await;
    assert_eq!(page.status, 400);
    assert!(field_error(&page.text, "to").is_some(), "{}", page.text);
    let page = b.get("/console/templates/tpl_nope/report").await;
    assert_eq!(page.status, 404);
}

#[tokio::test]
async fn support_gets_403_on_every_report_page() {
    let app = spawn_app().await;
    let (tid, kid) = some_activity(&app).await;
    let mut b = signed_in(&app, Role::Support).await;
    for path in [
        format!("/console/templates/{tid}/report"),
        format!("/console/templates/{tid}/report.csv"),
        format!("/console/campaigns/{kid}/report"),
        format!("/console/campaigns/{kid}/report.csv"),
    ] {
        let page = b.get(&path).await;
        assert_eq!(page.status, 403, "{path}: {}", page.text);
    }
}

#[tokio::test]
async fn the_template_and_campaign_pages_link_to_their_reports() {
    let app = spawn_app().await;
    let (tid, kid) = some_activity(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get(&format!("/console/templates/{tid}")).await;
    assert!(
        page.text
            .contains(&format!("/console/templates/{tid}/report")),
        "{}",
        page.text
    );
    let page = b.get(&format!("/console/campaigns/{kid}")).await;
    assert!(
        page.text
            .contains(&format!("/console/campaigns/{kid}/report")),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn the_report_csv_opens_in_excel_with_yuan_beside_cents_for_every_day() {
    let app = spawn_app().await;
    let (tid, _) = some_activity(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let csv = b.get(&format!("/console/templates/{tid}/report.csv")).await;
    assert_eq!(csv.status, 200, "{}", csv.text);
    assert!(csv.bom, "Excel reads the Chinese header as UTF-8");
    let lines: Vec<&str> = csv.text.lines().collect();
    assert_eq!(
        lines[0],
        "日期,领取,已使用,退款退回,已过期,已作废,优惠金额（元）,补偿金额（元）,退款商品的优惠（元）,优惠金额（分）,补偿金额（分）,退款商品的优惠（分）"
    );
    let mut discount_cents = 0;
    for line in &lines[1..] {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 12, "{line}");
        let cents: i64 = f[9].parse().expect("cents");
        assert_eq!(
            f[6],
            format!("{}.{:02}", cents / 100, cents % 100),
            "{line}"
        );
        discount_cents += cents;
    }
    assert_eq!(discount_cents, 5000, "the one paid order's 50 yuan off");
}
