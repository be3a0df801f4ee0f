//! `/console/orders`: support's order list with filters, keyset pages,
//! field messages for bad filters, names instead of ids, and the CSV.

use crate::common::console::{field_error, input_value, signed_in, unreadable_words, visible_text};
use crate::common::fixtures::user_with_coupon;
use crate::common::{normal_order, presale_order, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::json;

#[tokio::test]
async fn support_filters_orders_and_reads_names_not_ids() {
    let app = spawn_app().await;
    let cmp = app.campaign("strict", 3600, 3600).await;
    let cmp_id = cmp["id"].as_str().expect("campaign id").to_string();
    let cid = user_with_coupon(&app, "u4", 30 * 86_400).await;
    let code = app.coupon(&cid).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        app.order(presale_order("P-200", "u4", Some(&cid), &cmp_id))
            .await
            .status,
        201
    );
    assert_eq!(
        app.post("/api/v1/orders/P-200/deposit-payment", json!({}))
            .await
            .status,
        200
    );
    app.advance(1);
    assert_eq!(
        app.order(normal_order("N-101", "u2", None, 10_000))
            .await
            .status,
        201
    );
    let mut b = signed_in(&app, Role::Support).await;

    let page = b.get("/console/orders").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let text = visible_text(&page.text);
    let (p, n) = (
        text.find("P-200").expect("the presale order"),
        text.find("N-101").expect("the normal order"),
    );
    assert!(n < p, "newest first");
    assert!(text.contains("双11预售"), "the campaign by name: {text}");
    assert!(text.contains(&code), "the coupon by code");
    assert!(text.contains("已付定金"), "the status in words");
    assert!(
        unreadable_words(&text).is_empty(),
        "{:?}",
        unreadable_words(&text)
    );

    let page = b
        .get(&format!(
            "/console/orders?campaign_id={cmp_id}&status=deposit_paid"
        ))
        .await;
    let text = visible_text(&page.text);
    assert!(text.contains("P-200") && !text.contains("N-101"), "{text}");
    assert!(
        page.text.contains("selected"),
        "the chosen filters stay chosen"
    );

    let page = b
        .get("/console/orders?order_no_prefix=N-1&kind=normal")
        .await;
    let text = visible_text(&page.text);
    assert!(text.contains("N-101") && !text.contains("P-200"), "{text}");
    assert_eq!(
        input_value(&page.text, "f-prefix").as_deref(),
        Some("N-1"),
        "the typed prefix stays in its box"
    );

    let page = b.get("/console/orders?order_no_prefix=ZZZ").await;
    assert!(page.text.contains("data-testid=\"no-orders\""));
}

#[tokio::test]
async fn a_bad_filter_comes_back_with_its_message_at_the_field() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b
        .get("/console/orders?created_from=2026-12-05&created_to=2026-12-01&order_no_prefix=P")
        .await;
    assert_eq!(page.status, 422);
    let message = field_error(&page.text, "created_to").expect("a message at the field");
    assert!(message.contains("2026-12-01"), "{message}");
    assert_eq!(
        input_value(&page.text, "f-from").as_deref(),
        Some("2026-12-05")
    );
    assert_eq!(input_value(&page.text, "f-prefix").as_deref(), Some("P"));
    let page = b.get("/console/orders?cursor=nonsense").await;
    assert_eq!(page.status, 422);
    assert!(field_error(&page.text, "cursor").is_some());
}

#[tokio::test]
async fn the_order_list_pages_by_fifty_and_exports_the_same_rows_as_csv() {
    let app = spawn_app().await;
    for i in 0..53 {
        let no = format!("B-{i:03}");
        assert_eq!(
            app.order(normal_order(&no, "u1", None, 1000)).await.status,
            201
        );
        app.advance(1);
    }
    assert_eq!(
        app.order(normal_order("=HYPERLINK(1)", "u1", None, 1000))
            .await
            .status,
        201
    );
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/orders?order_no_prefix=B-").await;
    assert_eq!(page.text.matches("data-testid=\"order-link\"").count(), 50);
    let next = crate::common::console::tag_with(&page.text, "data-testid=\"next-page\"")
        .and_then(|t| crate::common::console::attr(t, "href"))
        .expect("a next page")
        .replace("&amp;", "&");
    assert!(
        next.contains("order_no_prefix=B-"),
        "the filter is kept: {next}"
    );
    let second = b.get(&next).await;
    let text = visible_text(&second.text);
    assert_eq!(second.text.matches("data-testid=\"order-link\"").count(), 3);
    assert!(text.contains("B-000") && !text.contains("B-052"), "{text}");

    let csv = b.get("/console/orders.csv").await;
    assert_eq!(csv.status, 200);
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    let lines: Vec<&str> = csv.text.lines().collect();
    assert!(
        lines[0].starts_with("order_no,user_id,kind,"),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), 1 + 54);
    assert!(
        lines[1].starts_with("'=HYPERLINK(1)"),
        "a formula is neutralised: {}",
        lines[1]
    );
    assert!(lines[2].starts_with("B-052,u1,normal,"), "{}", lines[2]);
    assert!(
        lines[2].contains("(UTC+8)") || lines[2].contains("(UTC"),
        "local time with its offset: {}",
        lines[2]
    );
    let filtered = b.get("/console/orders.csv?order_no_prefix=B-05").await;
    assert_eq!(filtered.text.lines().count(), 1 + 3);
}

#[tokio::test]
async fn the_order_list_needs_a_staff_session() {
    let app = spawn_app().await;
    let mut anonymous = crate::common::console::Browser::new(&app);
    for path in ["/console/orders", "/console/orders.csv"] {
        let r = anonymous.get(path).await;
        assert_eq!(r.status, 303, "{path}");
    }
    for role in [Role::Support, Role::Operator, Role::Admin] {
        let mut b = signed_in(&app, role).await;
        assert_eq!(b.get("/console/orders").await.status, 200, "{role:?}");
        assert_eq!(b.get("/console/orders.csv").await.status, 200, "{role:?}");
    }
}
