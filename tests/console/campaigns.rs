//! The console's presale campaign pages: the list and a campaign's page
//! with its figures, the create form (refused fields come back beside
//! their field, input kept), the policy change (a preview that counts the
//! orders whose outcome changes and the extra compensation, then a
//! confirmation with a reason that lands on the campaign with a flash;
//! refused once the window opened), the compensation mode, and support's
//! read-only view. No raw ids or stored words on any of them.

use crate::common::console::{
    Browser, PASSWORD, field_error, flash_text, hidden_value, input_value, signed_in,
    unreadable_words, visible_text,
};
use crate::common::fixtures::{count, user_with_coupon};
use crate::common::{TestApp, presale_order, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::{Value, json};

/// A campaign of `policy` whose window opens in a day, with one
/// deposit-paid order whose 满300减50 coupon ends an hour from now (before
/// the window opens). Returns the campaign.
async fn campaign_with_expiring_order(app: &TestApp, policy: &str) -> Value {
    let cid = user_with_coupon(app, "u1", 3600).await;
    let r = app
        .post(
            "/api/v1/presale-campaigns",
            json!({
                "name": "双11手机预售",
                "final_payment_starts_at": app.at(86_400),
                "final_payment_ends_at": app.at(2 * 86_400),
                "policy": policy,
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap_or("").to_string();
    let o = app.order(presale_order("P1", "u1", Some(&cid), &id)).await;
    assert_eq!(o.status, 201, "{}", o.text);
    let d = app
        .post("/api/v1/orders/P1/deposit-payment", json!({}))
        .await;
    assert_eq!(d.status, 200, "{}", d.text);
    r.body
}

fn readable(page: &str, what: &str) {
    let text = visible_text(page);
    let mut bad = unreadable_words(&text);
    for word in [
        "swap_or_compensate",
        "no_discount_expired",
        "deduction",
        "campaign_policy_change",
        "final_payment_starts_at",
    ] {
        if text.contains(word) {
            bad.push(word.to_string());
        }
    }
    assert!(bad.is_empty(), "{what} shows {bad:?}");
}

fn attr_after(html: &str, marker: &str) -> String {
    let Some(at) = html.find(marker) else {
        return String::new();
    };
    let rest = &html[at..];
    let Some(open) = rest.find('>') else {
        return String::new();
    };
    let rest = &rest[open + 1..];
    rest[..rest.find('<').unwrap_or(rest.len())].to_string()
}

#[tokio::test]
async fn the_list_and_a_campaigns_page_show_its_window_orders_and_coupons_past_their_end() {
    let app = spawn_app().await;
    let c = campaign_with_expiring_order(&app, "strict").await;
    let id = c["id"].as_str().unwrap_or("").to_string();
    let mut b = signed_in(&app, Role::Support).await;
    b.accept_language = Some("en".into());

    let home = b.get("/console").await;
    assert!(home.contains("href=\"/console/campaigns\""), "nav link");
    let list = b.get("/console/campaigns").await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert!(list.contains("双11手机预售"));
    assert!(
        list.contains("opens in 23 hours 59 minutes") || list.contains("opens in 1 day"),
        "{}",
        attr_after(&list.text, "data-testid=\"campaign-standing\"")
    );
    assert!(list.contains("deposit paid 1"), "counts");
    assert!(list.contains("strict (an expired coupon gives no discount)"));
    readable(&list.text, "the list");

    let page = b.get(&format!("/console/campaigns/{id}")).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(
        attr_after(&page.text, "data-testid=\"count-deposit-paid\""),
        "1"
    );
    assert_eq!(
        attr_after(&page.text, "data-testid=\"count-final-paid\""),
        "0"
    );
    assert!(
        attr_after(&page.text, "data-testid=\"past-end\"").contains("1 locked coupon will be"),
        "{}",
        page.text
    );
    assert!(page.contains("(UTC+8)"), "times in the business zone");
    // The customer's own words for this policy, from the catalog.
    assert!(
        page.contains("under this sale's rules"),
        "the health check's words"
    );
    assert!(
        page.contains("consider another coupon"),
        "the picker's warning"
    );
    assert!(page.contains("History of changes"));
    assert!(page.contains("Created"));
    readable(&page.text, "the campaign page");

    b.accept_language = Some("zh-CN".into());
    let page = b.get(&format!("/console/campaigns/{id}")).await;
    assert!(page.contains("按本场规则"), "Chinese customer words");
    readable(&page.text, "the campaign page in Chinese");
    let missing = b.get("/console/campaigns/cmp_nope").await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn support_reads_campaigns_but_sees_no_forms_and_is_refused_every_change() {
    let app = spawn_app().await;
    let c = campaign_with_expiring_order(&app, "lock").await;
    let id = c["id"].as_str().unwrap_or("").to_string();
    let mut b = signed_in(&app, Role::Support).await;
    let list = b.get("/console/campaigns").await;
    assert!(!list.contains("data-testid=\"new-campaign\""));
    let page = b.get(&format!("/console/campaigns/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(!page.contains("<form method=\"get\" action=\"/console/campaigns/"));
    assert!(!page.contains("data-testid=\"policy-choose\""));
    assert!(!page.contains("data-testid=\"mode-link\""));
    let csrf = b.csrf().await;
    for path in [
        "/console/campaigns/new".to_string(),
        format!("/console/campaigns/{id}/policy?policy=strict"),
        format!("/console/campaigns/{id}/compensation-mode"),
    ] {
        assert_eq!(b.get(&path).await.status, 403, "{path}");
    }
    for (path, fields) in [
        (
            format!("/console/campaigns/{id}/policy"),
            vec![("policy", "strict"), ("reason", "x")],
        ),
        (
            format!("/console/campaigns/{id}/compensation-mode"),
            vec![("compensation_mode", "coupon"), ("reason", "x")],
        ),
        (
            "/console/campaigns/new".to_string(),
            vec![
                ("name", "x"),
                ("starts", "2026-12-01T20:00"),
                ("ends", "2026-12-02T20:00"),
            ],
        ),
    ] {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend(fields);
        let r = b.post_form(&path, &all).await;
        assert_eq!(r.status, 403, "{path}: {}", r.text);
    }
    assert_eq!(
        app.get(&format!("/api/v1/presale-campaigns/{id}"))
            .await
            .body["policy"],
        "lock"
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM presale_campaigns").await,
        1
    );
}

#[tokio::test]
async fn a_refused_create_form_comes_back_with_the_message_beside_its_field_and_the_input_kept() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Operator).await;
    b.accept_language = Some("en".into());
    let form = b.get("/console/campaigns/new").await;
    assert_eq!(form.status, 200, "{}", form.text);
    readable(&form.text, "the create form");
    let csrf = form.csrf().expect("token");
    let fid = hidden_value(&form.text, "form_id").unwrap_or_default();
    let r = b
        .post_form(
            "/console/campaigns/new",
            &[
                ("csrf", &csrf),
                ("form_id", &fid),
                ("name", "双11预售"),
                ("starts", "2026-11-20T20:00"),
                ("ends", "2026-11-20T10:00"),
                ("policy", "strict"),
                ("compensation_mode", "deduction"),
            ],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(
        field_error(&r.text, "final_payment_ends_at").as_deref(),
        Some("The final payment must close after it opens.")
    );
    assert_eq!(input_value(&r.text, "name").as_deref(), Some("双11预售"));
    assert_eq!(
        input_value(&r.text, "starts").as_deref(),
        Some("2026-11-20T20:00")
    );
    assert!(
        r.contains("<option value=\"strict\" selected"),
        "the choice kept"
    );
    readable(&r.text, "the refused form");
    let r = b
        .post_form(
            "/console/campaigns/new",
            &[
                ("csrf", &csrf),
                ("name", "x"),
                ("starts", "tomorrow"),
                ("ends", ""),
            ],
        )
        .await;
    assert_eq!(r.status, 422);
    assert!(field_error(&r.text, "final_payment_starts_at").is_some());
    assert!(field_error(&r.text, "final_payment_ends_at").is_some());
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM presale_campaigns").await,
        0
    );

    // Times typed in the business zone (UTC+8): 20:00 there is 12:00 UTC.
    let form = b.get("/console/campaigns/new").await;
    let fid = hidden_value(&form.text, "form_id").unwrap_or_default();
    let r = b
        .post_form(
            "/console/campaigns/new",
            &[
                ("csrf", &csrf),
                ("form_id", &fid),
                ("name", "双11预售"),
                ("starts", "2026-11-20T20:00"),
                ("ends", "2026-11-21T20:00"),
                ("policy", "swap_or_compensate"),
                ("compensation_mode", "coupon"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let to = r.location.clone().unwrap_or_default();
    assert!(to.starts_with("/console/campaigns/cmp_"), "{to}");
    let page = b.visit(&to).await;
    assert!(
        flash_text(&page.text)
            .unwrap_or_default()
            .contains("双11预售")
    );
    let id = to.trim_start_matches("/console/campaigns/");
    let c = app.get(&format!("/api/v1/presale-campaigns/{id}")).await;
    assert_eq!(
        c.body["final_payment_starts_at"],
        "2026-11-20T12:00:00.000Z"
    );
    assert_eq!(
        (
            c.body["policy"].clone(),
            c.body["compensation_mode"].clone()
        ),
        (json!("swap_or_compensate"), json!("coupon"))
    );
    assert!(page.contains("a new coupon of the same value"));
}

#[tokio::test]
async fn the_policy_preview_counts_the_orders_whose_outcome_changes_and_the_extra_compensation() {
    let app = spawn_app().await;
    let c = campaign_with_expiring_order(&app, "lock").await;
    let id = c["id"].as_str().unwrap_or("").to_string();
    // A second order whose coupon outlives the opening: no change.
    let keep = user_with_coupon(&app, "u2", 10 * 86_400).await;
    let o = app.order(presale_order("P2", "u2", Some(&keep), &id)).await;
    assert_eq!(o.status, 201, "{}", o.text);
    assert_eq!(
        app.post("/api/v1/orders/P2/deposit-payment", json!({}))
            .await
            .status,
        200
    );
    let mut b = signed_in(&app, Role::Operator).await;
    b.accept_language = Some("en".into());
    let page = b.get(&format!("/console/campaigns/{id}")).await;
    assert!(page.contains("data-testid=\"policy-choose\""));
    let p = b
        .get(&format!(
            "/console/campaigns/{id}/policy?policy=swap_or_compensate"
        ))
        .await;
    assert_eq!(p.status, 200, "{}", p.text);
    assert_eq!(attr_after(&p.text, "data-testid=\"orders-read\""), "2");
    assert_eq!(attr_after(&p.text, "data-testid=\"changed-orders\""), "1");
    assert_eq!(attr_after(&p.text, "data-testid=\"extra-cost\""), "¥50.00");
    assert!(p.contains("coupon takes its amount off"));
    assert!(p.contains("compensated"));
    readable(&p.text, "the preview");
    let strict = b
        .get(&format!("/console/campaigns/{id}/policy?policy=strict"))
        .await;
    assert_eq!(
        attr_after(&strict.text, "data-testid=\"changed-orders\""),
        "1"
    );
    assert_eq!(
        attr_after(&strict.text, "data-testid=\"extra-cost\""),
        "¥0.00"
    );
    assert!(strict.contains("coupon ended, nothing off"));
    let bad = b
        .get(&format!("/console/campaigns/{id}/policy?policy=whatever"))
        .await;
    assert_eq!(bad.status, 400);
    // Nothing changed by looking.
    assert_eq!(
        app.get(&format!("/api/v1/presale-campaigns/{id}"))
            .await
            .body["policy"],
        "lock"
    );
}

#[tokio::test]
async fn confirming_a_policy_change_lands_on_the_campaign_with_a_flash_and_is_refused_once_the_window_opened()
 {
    let app = spawn_app().await;
    let c = campaign_with_expiring_order(&app, "lock").await;
    let id = c["id"].as_str().unwrap_or("").to_string();
    let mut b = signed_in(&app, Role::Operator).await;
    b.accept_language = Some("en".into());
    let path = format!("/console/campaigns/{id}/policy");
    let p = b.get(&format!("{path}?policy=swap_or_compensate")).await;
    let csrf = p.csrf().expect("token");
    let fid = hidden_value(&p.text, "form_id").unwrap_or_default();
    // No reason: the preview again, the message beside the reason.
    let r = b
        .post_form(
            &path,
            &[
                ("csrf", &csrf),
                ("form_id", &fid),
                ("policy", "swap_or_compensate"),
                ("reason", ""),
            ],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(field_error(&r.text, "reason").is_some());
    assert_eq!(attr_after(&r.text, "data-testid=\"changed-orders\""), "1");

    let fid = hidden_value(&r.text, "form_id").unwrap_or_default();
    let r = b
        .post_form(
            &path,
            &[
                ("csrf", &csrf),
                ("form_id", &fid),
                ("policy", "swap_or_compensate"),
                ("reason", "平台承担过期券"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some(format!("/console/campaigns/{id}").as_str())
    );
    let page = b.visit(&format!("/console/campaigns/{id}")).await;
    assert_eq!(
        flash_text(&page.text).as_deref(),
        Some("The policy is now: swap or compensate.")
    );
    assert_eq!(
        attr_after(&page.text, "data-testid=\"campaign-policy\""),
        "swap or compensate"
    );
    assert!(page.contains("平台承担过期券"), "the reason in the history");
    assert!(page.contains("lock (the deposit lock holds) → swap or compensate"));
    readable(&page.text, "the campaign page after the change");
    // The staff log names the campaign and says the change in words too.
    let log = b.visit("/console/audit?log=staff").await;
    assert!(
        log.contains("lock (the deposit lock holds) → swap or compensate"),
        "{}",
        log.text
    );
    assert!(log.contains("双11手机预售"), "the campaign by its name");
    // The filter form's hint spells out the stored actor format; the rows
    // must not.
    let rows = log
        .text
        .find("data-testid=\"audit-row\"")
        .map_or("", |i| &log.text[i..]);
    readable(rows, "the staff log's rows after a campaign change");

    // The compensation mode, the same way.
    let m = b
        .get(&format!("/console/campaigns/{id}/compensation-mode"))
        .await;
    assert_eq!(m.status, 200, "{}", m.text);
    let fid = hidden_value(&m.text, "form_id").unwrap_or_default();
    let r = b
        .post_form(
            &format!("/console/campaigns/{id}/compensation-mode"),
            &[
                ("csrf", &csrf),
                ("form_id", &fid),
                ("compensation_mode", "coupon"),
                ("reason", "改为发券"),
            ],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        app.get(&format!("/api/v1/presale-campaigns/{id}"))
            .await
            .body["compensation_mode"],
        "coupon"
    );

    // Once the window opened (a day later: a new sign-in, the old session
    // has lapsed): refused, the message at the field.
    app.advance(86_400);
    let mut b = Browser::new(&app);
    b.accept_language = Some("en".into());
    assert_eq!(b.sign_in_as("operator-1", PASSWORD).await.status, 303);
    let csrf = b.csrf().await;
    let r = b
        .post_form(
            &path,
            &[
                ("csrf", &csrf),
                ("policy", "strict"),
                ("reason", "too late"),
            ],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        field_error(&r.text, "policy")
            .unwrap_or_default()
            .contains("can no longer change"),
        "{}",
        r.text
    );
    let page = b.get(&format!("/console/campaigns/{id}")).await;
    assert!(page.contains("data-testid=\"window-opened\""));
    assert!(!page.contains("data-testid=\"policy-choose\""));
    assert_eq!(
        app.get(&format!("/api/v1/presale-campaigns/{id}"))
            .await
            .body["policy"],
        "swap_or_compensate"
    );
}
