//! The console's pages and actions on a fresh database: what each page
//! shows, what each action changes, and who may do what (every route with
//! no session, with each role, with a forged or missing CSRF token).

use crate::common::console::{
    Browser, PASSWORD, Page, attr, confirm, field_error, flash_text, hidden_value, input_value,
    signed_in, tag_with, textarea_text,
};
use crate::common::fixtures::{count, coupon_for, deposit_paid, deposit_paid_under, plant};
use crate::common::{TestApp, normal_order, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::json;

/// The anomaly of the end-to-end scenario: the order closed (a bug or a
/// manual edit) while its coupon stays locked to it.
async fn closed_with_locked_coupon(app: &TestApp, no: &str, user: &str) -> String {
    let cid = deposit_paid(app, no, user).await;
    sqlx::query("UPDATE orders SET status = 'closed' WHERE order_no = $1")
        .bind(no)
        .execute(app.db.db.pool())
        .await
        .expect("plant");
    cid
}

/// The (id, code) of the newest compensation coupon.
async fn compensation_coupon(app: &TestApp) -> (String, String) {
    sqlx::query_as(
        "SELECT id, code FROM coupons WHERE source = 'compensation' ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("a compensation coupon")
}

async fn status_of(app: &TestApp, coupon_id: &str) -> String {
    app.coupon(coupon_id).await["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Every POST of the console with a representative body.
fn posts(cid: &str) -> Vec<(String, Vec<(&'static str, &'static str)>)> {
    vec![
        (
            format!("/console/coupons/{cid}/release"),
            vec![("reason", "r"), ("force", "true")],
        ),
        (
            format!("/console/coupons/{cid}/invalidate"),
            vec![("reason", "r")],
        ),
        (
            "/console/users/u1/compensation".to_string(),
            vec![("amount", "5"), ("valid_days", "30"), ("reason", "r")],
        ),
        (
            "/console/orders/P1/cancel".to_string(),
            vec![("reason", "r")],
        ),
        (
            "/console/orders/P1/mark-coupon-used".to_string(),
            vec![("reason", "r")],
        ),
    ]
}

#[tokio::test]
async fn every_console_route_without_a_session_goes_to_sign_in_and_changes_nothing() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1").await;
    let mut b = Browser::new(&app);
    for path in [
        "/console".to_string(),
        "/console/search?q=P1".to_string(),
        "/console/coupons".to_string(),
        "/console/coupons.csv".to_string(),
        format!("/console/coupons/{cid}"),
        "/console/orders/P1".to_string(),
        "/console/orders/P1?check=1".to_string(),
        "/console/users/u1".to_string(),
        format!("/console/coupons/{cid}/release"),
        format!("/console/coupons/{cid}/invalidate"),
        "/console/users/u1/compensation".to_string(),
        "/console/orders/P1/cancel".to_string(),
        format!("/console/orders/P1/mark-coupon-used?coupon_id={cid}"),
    ] {
        let r = b.get(&path).await;
        assert_eq!(r.status, 303, "GET {path}");
        assert!(
            r.location.as_deref().unwrap_or("").starts_with("/login"),
            "GET {path}"
        );
    }
    for (path, fields) in posts(&cid) {
        let r = b.post_form(&path, &fields).await;
        assert_eq!(r.status, 303, "POST {path}");
        assert!(r.location.as_deref().unwrap_or("").starts_with("/login"));
    }
    assert_eq!(status_of(&app, &cid).await, "locked");
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );
    assert_eq!(app.order_view("P1").await["status"], "deposit_paid");
}

#[tokio::test]
async fn every_console_post_with_a_forged_missing_or_cross_site_token_is_refused_and_changes_nothing()
 {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1").await;
    let mut b = signed_in(&app, Role::Admin).await;
    let csrf = b.csrf().await;
    for (path, fields) in posts(&cid) {
        let mut forged = fields.clone();
        forged.push(("csrf", "0123456789abcdef"));
        assert_eq!(
            b.post_form(&path, &forged).await.status,
            403,
            "forged {path}"
        );
        assert_eq!(
            b.post_form(&path, &fields).await.status,
            403,
            "missing {path}"
        );
        let mut right = fields.clone();
        right.push(("csrf", &csrf));
        let cross = b.post_form_with(&path, &right, "cross-site").await;
        assert_eq!(cross.status, 403, "cross-site {path}");
    }
    assert_eq!(status_of(&app, &cid).await, "locked");
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );
    assert_eq!(app.order_view("P1").await["status"], "deposit_paid");
}

#[tokio::test]
async fn support_releases_a_lock_left_on_a_closed_order_and_the_timeline_names_them() {
    let app = spawn_app().await;
    let cid = closed_with_locked_coupon(&app, "P1", "u1").await;
    let mut b = signed_in(&app, Role::Support).await;

    let order = b.get("/console/orders/P1?check=1").await;
    assert!(order.contains("data-result=\"problem\""), "{}", order.text);
    assert!(order.contains(&format!(
        "href=\"/console/coupons/{cid}/release?back=%2Fconsole%2Forders%2FP1%3Fcheck%3D1%23health\""
    )));

    let r = confirm(
        &mut b,
        &format!("/console/coupons/{cid}/release"),
        &[("reason", "客户来电：订单已关闭，券仍被锁")],
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(
        r.location.as_deref(),
        Some(format!("/console/coupons/{cid}").as_str())
    );
    assert_eq!(status_of(&app, &cid).await, "available");
    let page = b.get(&format!("/console/coupons/{cid}")).await;
    let flash = flash_text(&page.text).unwrap_or_default();
    assert!(flash.contains("已释放券"), "{flash}");
    assert!(page.contains("客服后台：support-1"));
    assert!(page.contains("客户来电：订单已关闭，券仍被锁"));
    // The order's own record follows: its lock is released.
    let order = b.get("/console/orders/P1").await;
    assert!(
        order.contains("data-testid=\"lock-status\">已释放"),
        "{}",
        order.text
    );
    assert_eq!(app.order_view("P1").await["coupon_lock_status"], "released");
    // A compensation for the order shows in the order's ledger section.
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("amount", "20"),
            ("valid_days", "30"),
            ("order_no", "P1"),
            ("reason", "sorry for the trouble"),
        ],
    )
    .await;
    assert_eq!(r.status, 303);
    let order = b.get("/console/orders/P1").await;
    assert!(order.contains("data-testid=\"ledger\""), "{}", order.text);
    assert!(order.contains("sorry for the trouble") && order.contains("¥20.00"));
    // The flash is shown once.
    assert!(
        !b.get(&format!("/console/coupons/{cid}"))
            .await
            .contains("data-testid=\"flash\"")
    );
}

#[tokio::test]
async fn a_release_without_a_reason_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    let cid = closed_with_locked_coupon(&app, "P1", "u1").await;
    let mut b = signed_in(&app, Role::Support).await;
    let r = confirm(
        &mut b,
        &format!("/console/coupons/{cid}/release"),
        &[("reason", "  ")],
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "reason").unwrap_or_default();
    assert!(message.contains("请填写原因"), "{}", r.text);
    let textarea = tag_with(&r.text, "<textarea id=\"reason\"").unwrap_or_default();
    assert_eq!(attr(textarea, "aria-invalid").as_deref(), Some("true"));
    assert_eq!(
        attr(textarea, "aria-describedby").as_deref(),
        Some("reason-error")
    );
    assert!(
        r.contains("data-testid=\"confirm\""),
        "the form is there again"
    );
    assert_eq!(status_of(&app, &cid).await, "locked");
}

#[tokio::test]
async fn support_cannot_force_a_release_on_a_live_order_but_an_operator_can() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1").await;
    let mut support = signed_in(&app, Role::Support).await;
    let page = support
        .get(&format!("/console/coupons/{cid}/release"))
        .await;
    assert!(!page.contains("name=\"force\""), "no force box for support");
    let r = confirm(
        &mut support,
        &format!("/console/coupons/{cid}/release"),
        &[("reason", "try")],
    )
    .await;
    // Support has no force box: the refusal is about the form as a whole.
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "form").unwrap_or_default();
    assert!(message.contains("订单仍在进行中"), "{}", r.text);
    assert_eq!(textarea_text(&r.text, "reason").as_deref(), Some("try"));
    let forced = confirm(
        &mut support,
        &format!("/console/coupons/{cid}/release"),
        &[("reason", "force it"), ("force", "true")],
    )
    .await;
    assert_eq!(forced.status, 403);
    assert_eq!(status_of(&app, &cid).await, "locked");

    let mut op = signed_in(&app, Role::Operator).await;
    assert!(
        op.get(&format!("/console/coupons/{cid}/release"))
            .await
            .contains("name=\"force\"")
    );
    // An operator who forgot the box: the message is beside it.
    let r = confirm(
        &mut op,
        &format!("/console/coupons/{cid}/release"),
        &[("reason", "customer asked")],
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "force").unwrap_or_default();
    assert!(message.contains("订单仍在进行中"), "{}", r.text);
    assert_eq!(
        textarea_text(&r.text, "reason").as_deref(),
        Some("customer asked")
    );
    assert_eq!(status_of(&app, &cid).await, "locked");
    let r = confirm(
        &mut op,
        &format!("/console/coupons/{cid}/release"),
        &[
            ("reason", "customer asked to drop the coupon"),
            ("force", "true"),
        ],
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(status_of(&app, &cid).await, "available");
    assert_eq!(app.order_view("P1").await["coupon_lock_status"], "released");
}

#[tokio::test]
async fn only_operators_invalidate_and_only_available_coupons() {
    let app = spawn_app().await;
    let cid = coupon_for(&app, "u1").await;
    let mut support = signed_in(&app, Role::Support).await;
    // The coupon page offers support only the buttons it may use.
    let page = support.get(&format!("/console/coupons/{cid}")).await;
    assert!(!page.contains(&format!("/console/coupons/{cid}/invalidate")));
    assert!(
        support
            .get(&format!("/console/coupons/{cid}/invalidate"))
            .await
            .contains("运营权限")
    );
    let r = confirm(
        &mut support,
        &format!("/console/coupons/{cid}/invalidate"),
        &[("reason", "x")],
    )
    .await;
    assert_eq!(r.status, 403);
    assert_eq!(status_of(&app, &cid).await, "available");

    let mut op = signed_in(&app, Role::Operator).await;
    let page = op.get(&format!("/console/coupons/{cid}")).await;
    assert!(
        page.contains(&format!("/console/coupons/{cid}/invalidate")),
        "operators get the button"
    );
    let r = confirm(
        &mut op,
        &format!("/console/coupons/{cid}/invalidate"),
        &[("reason", "fraud")],
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(status_of(&app, &cid).await, "invalidated");
    let page = op.get(&format!("/console/coupons/{cid}")).await;
    assert!(
        page.contains("已作废") && page.contains("客服后台：operator-1") && page.contains("fraud")
    );
    // A second invalidation has nothing to act on.
    let again = op.get(&format!("/console/coupons/{cid}/invalidate")).await;
    assert!(!again.contains("data-testid=\"confirm\""));
}

#[tokio::test]
async fn support_compensation_is_recorded_and_capped_per_coupon_and_per_day() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("amount", "20.50"),
            ("valid_days", "30"),
            ("reason", "apology"),
        ],
    )
    .await;
    assert_eq!(r.status, 303);
    // Started from no page: it lands on the user's page, naming the coupon.
    assert_eq!(r.location.as_deref(), Some("/console/users/u1"));
    let (id, code) = compensation_coupon(&app).await;
    let user = b.get("/console/users/u1").await;
    let flash = flash_text(&user.text).unwrap_or_default();
    assert!(
        flash.contains("已发放 ¥20.50 补偿券") && flash.contains(&code),
        "{flash}"
    );
    let page = b.get(&format!("/console/coupons/{id}")).await;
    assert!(
        page.contains("待使用") && page.contains("¥20.50") && page.contains("客服后台：support-1")
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger WHERE amount_cents = 2050 AND actor = 'staff:support-1' AND reason = 'apology'").await,
        1
    );

    // Over the per-coupon cap (default ¥50).
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("amount", "50.01"),
            ("valid_days", "30"),
            ("reason", "too much"),
        ],
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "amount").unwrap_or_default();
    assert!(message.contains("超出单张补偿上限 ¥50.00"), "{}", r.text);
    // Up to the daily cap (default ¥200): 20.50 + 3 × 50 = 170.50, then 50 more is over.
    for _ in 0..3 {
        let r = confirm(
            &mut b,
            "/console/users/u1/compensation",
            &[("amount", "50"), ("valid_days", "30"), ("reason", "ok")],
        )
        .await;
        assert_eq!(r.location.as_deref(), Some("/console/users/u1"));
    }
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("amount", "50"),
            ("valid_days", "30"),
            ("reason", "over the day"),
        ],
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "amount").unwrap_or_default();
    assert!(
        message.contains("超出今天的补偿额度") && message.contains("¥29.50"),
        "{}",
        r.text
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        4
    );

    // Operators are not capped.
    let mut op = signed_in(&app, Role::Operator).await;
    let r = confirm(
        &mut op,
        "/console/users/u1/compensation",
        &[
            ("amount", "500"),
            ("valid_days", "30"),
            ("reason", "big apology"),
        ],
    )
    .await;
    assert_eq!(r.location.as_deref(), Some("/console/users/u1"));
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        5
    );
}

#[tokio::test]
async fn a_double_submitted_compensation_form_issues_one_coupon() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/users/u1/compensation").await;
    let csrf = page.csrf().expect("token");
    let fid = hidden_value(&page.text, "form_id").expect("form id");
    let fields = [
        ("csrf", csrf.as_str()),
        ("form_id", fid.as_str()),
        ("amount", "10"),
        ("valid_days", "7"),
        ("reason", "double click"),
    ];
    let first = b.post_form("/console/users/u1/compensation", &fields).await;
    let second = b.post_form("/console/users/u1/compensation", &fields).await;
    assert_eq!((first.status, second.status), (303, 303));
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM coupons WHERE source = 'compensation'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn bad_compensation_input_is_refused_with_a_message() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    for (amount, days, field, says) in [
        ("abc", "30", "amount", "金额格式不对"),
        ("-5", "30", "amount", "金额格式不对"),
        ("0", "30", "amount", "金额格式不对"),
        ("5", "0", "valid_days", "有效天数须为 1 到 365"),
        ("5", "999", "valid_days", "有效天数须为 1 到 365"),
        ("5", "a week", "valid_days", "有效天数须为 1 到 365"),
    ] {
        let r = confirm(
            &mut b,
            "/console/users/u1/compensation",
            &[("amount", amount), ("valid_days", days), ("reason", "x")],
        )
        .await;
        assert_eq!(r.status, 422, "{amount} {days}: {}", r.text);
        let message = field_error(&r.text, field).unwrap_or_default();
        assert!(message.contains(says), "{amount} {days}: {}", r.text);
        assert_eq!(input_value(&r.text, "amount").as_deref(), Some(amount));
        assert_eq!(input_value(&r.text, "valid_days").as_deref(), Some(days));
        assert_eq!(textarea_text(&r.text, "reason").as_deref(), Some("x"));
        assert!(!r.contains("data-testid=\"flash\""), "not a flash");
    }
    // Several fields wrong at once: a message at each.
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[("amount", "lots"), ("valid_days", "0"), ("reason", " ")],
    )
    .await;
    assert_eq!(r.status, 422);
    for field in ["amount", "valid_days", "reason"] {
        assert!(field_error(&r.text, field).is_some(), "{field}: {}", r.text);
    }
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );
}

#[tokio::test]
async fn only_operators_cancel_an_order_from_the_console_and_its_coupon_is_released() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1").await;
    let mut support = signed_in(&app, Role::Support).await;
    let r = confirm(
        &mut support,
        "/console/orders/P1/cancel",
        &[("reason", "x")],
    )
    .await;
    assert_eq!(r.status, 403);
    let mut op = signed_in(&app, Role::Operator).await;
    let r = confirm(
        &mut op,
        "/console/orders/P1/cancel",
        &[("reason", "customer asked")],
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(app.order_view("P1").await["status"], "closed");
    assert_eq!(status_of(&app, &cid).await, "available");
}

#[tokio::test]
async fn the_search_box_opens_the_page_of_a_code_an_order_or_a_user() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1").await;
    let code = app.coupon(&cid).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut b = signed_in(&app, Role::Support).await;
    let cases = [
        (code.clone(), format!("/console/coupons/{cid}")),
        (code.to_lowercase(), format!("/console/coupons/{cid}")),
        (format!("  {cid} "), format!("/console/coupons/{cid}")),
        ("P1".to_string(), "/console/orders/P1".to_string()),
        ("u1".to_string(), "/console/users/u1".to_string()),
    ];
    for (q, to) in cases {
        let enc: String = form_urlencoded::byte_serialize(q.as_bytes()).collect();
        let r = b.get(&format!("/console/search?q={enc}")).await;
        assert_eq!(r.status, 303, "{q}");
        assert_eq!(r.location.as_deref(), Some(to.as_str()), "{q}");
    }
    let none = b.get("/console/search?q=NOPE-NOPE-NOPE").await;
    assert_eq!(none.status, 200);
    assert!(none.contains("data-testid=\"no-results\""));
    // The box keeps what was typed.
    assert_eq!(
        crate::common::console::input_value(&none.text, "search-q").as_deref(),
        Some("NOPE-NOPE-NOPE"),
        "{}",
        none.text
    );
    let weird = b.get("/console/search?q=%3Cscript%3E").await;
    assert_eq!(weird.status, 200);
    assert!(!weird.contains("<script>"), "query text is escaped");
}

#[tokio::test]
async fn the_search_box_lists_what_a_code_or_order_number_prefix_starts_newest_first() {
    let app = spawn_app().await;
    // Three coupons a minute apart whose codes share prefixes, then two
    // orders whose numbers do.
    let mut ids = Vec::new();
    for (user, code) in [
        ("u1", "K7QM-3XPA-9RTD"),
        ("u2", "K7QM-3XPA-4444"),
        ("u3", "K7QM-3XPB-2222"),
    ] {
        let cid = coupon_for(&app, user).await;
        plant(
            &app,
            &format!("UPDATE coupons SET code = '{code}' WHERE id = '{cid}'"),
        )
        .await;
        ids.push(cid);
        app.advance(60);
    }
    for no in ["Shop-2026-0001", "shop-2026-0002"] {
        let r = app.order(normal_order(no, "u4", None, 1000)).await;
        assert_eq!(r.status, 201, "{}", r.text);
        app.advance(60);
    }
    let mut b = signed_in(&app, Role::Support).await;
    let search = |q: &str| {
        let enc: String = form_urlencoded::byte_serialize(q.as_bytes()).collect();
        format!("/console/search?q={enc}")
    };

    // One match opens it, typed in any case, with spaces or dashes.
    for (q, to) in [
        ("k7qm 3xpb", format!("/console/coupons/{}", ids[2])),
        ("k7qm-3xpa-4", format!("/console/coupons/{}", ids[1])),
        ("shop20260002", "/console/orders/shop-2026-0002".to_string()),
    ] {
        let r = b.get(&search(q)).await;
        assert_eq!(r.status, 303, "{q}");
        assert_eq!(r.location.as_deref(), Some(to.as_str()), "{q}");
    }

    // Several are listed newest first: code, status in words, user.
    let page = b.get(&search("k7qm-3xpa")).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("data-testid=\"hits\""), "{}", page.text);
    let newer = page.text.find("K7QM-3XPA-4444").expect("the newer code");
    let older = page.text.find("K7QM-3XPA-9RTD").expect("the older code");
    assert!(newer < older, "newest first");
    assert!(!page.contains("K7QM-3XPB"));
    assert!(page.contains("待使用 · u2"), "{}", page.text);
    assert!(page.contains(&format!("href=\"/console/coupons/{}\"", ids[1])));
    assert!(!page.contains("data-testid=\"more-hits\""));
    let bad =
        crate::common::console::unreadable_words(&crate::common::console::visible_text(&page.text));
    assert!(bad.is_empty(), "{bad:#?}");

    b.accept_language = Some("en".into());
    let page = b.get(&search("SHOP 2026")).await;
    assert_eq!(page.status, 200);
    let newer = page.text.find("shop-2026-0002").expect("the newer order");
    let older = page.text.find("Shop-2026-0001").expect("the older order");
    assert!(newer < older, "newest first");
    assert!(page.contains("pending payment · u4"), "{}", page.text);

    // Three characters are not a prefix.
    let page = b.get(&search("k7q")).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("data-testid=\"no-results\""));

    // More than 50: the 50 newest, and a note saying how many there were.
    for i in 1..=51 {
        plant(
            &app,
            &format!(
                "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, created_at, updated_at)
                 VALUES ('BULK-{i:04}', 'u5', 'normal', 'phones', 'paid', 1000, {i}, {i})"
            ),
        )
        .await;
    }
    let page = b.get(&search("bulk 00")).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("BULK-0051") && page.contains("BULK-0002"));
    assert!(!page.contains("BULK-0001"), "the oldest is past the 50");
    assert!(
        page.contains("51 coupons, orders or users match this; the 50 newest are listed."),
        "{}",
        page.text
    );
    b.accept_language = Some("zh".into());
    let page = b.get(&search("bulk 00")).await;
    assert!(
        page.contains("与此相符的券、订单或用户共 51 个，下面列出最新的 50 个。"),
        "{}",
        page.text
    );
}

#[tokio::test]
async fn the_coupon_list_filters_pages_and_exports_csv() {
    let app = spawn_app().await;
    let t = app.template(json!({"per_user_limit": 100})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    for _ in 0..60 {
        app.claim("u1", &tid).await;
    }
    coupon_for(&app, "u2").await;
    let mut b = signed_in(&app, Role::Support).await;
    let first = b
        .get(&format!(
            "/console/coupons?template_id={tid}&status=available"
        ))
        .await;
    assert_eq!(first.status, 200);
    assert_eq!(first.text.matches("/console/coupons/cpn_").count(), 50);
    assert!(!first.contains("u2"));
    let next = first
        .text
        .split("data-testid=\"next-page\"")
        .next()
        .and_then(|s| s.rsplit("href=\"").next())
        .map(|s| s.split('"').next().unwrap_or("").replace("&amp;", "&"))
        .expect("a next link");
    let second = b.get(&next).await;
    assert_eq!(second.text.matches("/console/coupons/cpn_").count(), 10);
    assert!(!second.contains("data-testid=\"next-page\""));

    let csv = b.get("/console/coupons.csv?user_id=u1").await;
    assert_eq!(csv.status, 200);
    assert_eq!(csv.text.lines().count(), 61, "header and 60 rows");
    let bad = b.get("/console/coupons?status=nonsense").await;
    assert_eq!(bad.status, 400);
    let bad_date = b.get("/console/coupons?expiring_before=tomorrow").await;
    assert_eq!(bad_date.status, 400);
    let ok_date = b
        .get("/console/coupons?expiring_before=2030-01-01T00%3A00")
        .await;
    assert_eq!(ok_date.status, 200);
}

#[tokio::test]
async fn the_user_page_groups_coupons_and_orders_and_checks_them_all() {
    let app = spawn_app().await;
    closed_with_locked_coupon(&app, "P1", "u1").await;
    let spare = coupon_for(&app, "u1").await;
    let r = app.order(normal_order("N1", "u1", None, 10000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/users/u1").await;
    assert_eq!(page.status, 200);
    assert!(
        page.contains("锁定中 (1)") && page.contains("待使用 (1)"),
        "{}",
        page.text
    );
    assert!(page.contains("已关闭 (1)") && page.contains("待付款 (1)"));
    assert!(page.contains(&spare));
    let checked = b.get("/console/users/u1?check=1").await;
    assert!(
        checked.contains("data-result=\"problem\""),
        "{}",
        checked.text
    );
    assert!(checked.contains("/console/orders/P1"));
}

#[tokio::test]
async fn pages_render_in_english_for_english_browsers() {
    let app = spawn_app().await;
    let cid = closed_with_locked_coupon(&app, "P1", "u1").await;
    let mut b = signed_in(&app, Role::Support).await;
    b.accept_language = Some("en".into());
    let coupon = b.get(&format!("/console/coupons/{cid}")).await;
    assert!(coupon.contains("Timeline") && coupon.contains("locked"));
    assert!(
        !coupon.text.contains('\u{9501}'),
        "an English page shows no Chinese status word: {}",
        coupon.text
    );
    let order = b.get("/console/orders/P1?check=1").await;
    assert!(order.contains("One-click health check") && order.contains("Amount due"));
    assert!(order.contains("Release the lock"));
    let comp = b.get("/console/users/u1/compensation").await;
    assert!(comp.contains("Support limits: at most ¥50.00 per coupon and ¥200.00 per day."));
}

#[tokio::test]
async fn unknown_ids_answer_a_404_page_not_a_crash() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    for path in [
        "/console/coupons/cpn_missing",
        "/console/orders/NOPE",
        "/console/coupons/cpn_missing/release",
        "/console/orders/NOPE/cancel",
    ] {
        let r = b.get(path).await;
        assert_eq!(r.status, 404, "{path}");
        assert!(r.contains("404"));
    }
    let user = b.get("/console/users/nobody").await;
    assert_eq!(user.status, 200, "an unknown user has an empty page");
}

#[tokio::test]
async fn support_repairs_a_freed_coupon_and_a_re_pointed_order_from_the_health_check() {
    let app = spawn_app().await;
    // order_active_coupon_not_locked: the coupon of a deposit-paid order freed.
    let cid = deposit_paid(&app, "P1", "u1").await;
    sqlx::query(
        "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL WHERE id = $1",
    )
    .bind(&cid)
    .execute(app.db.db.pool())
    .await
    .expect("plant");
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/orders/P1?check=1").await;
    let href = format!("/console/orders/P1/repair?coupon_id={cid}");
    assert!(
        page.contains(&href.replace('&', "&amp;")) || page.contains(&href),
        "{}",
        page.text
    );
    let r = confirm(
        &mut b,
        &href,
        &[("coupon_id", &cid), ("reason", "coupon freed by a bug")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(status_of(&app, &cid).await, "locked");
    let after = b.visit(r.location.as_deref().unwrap_or("/")).await;
    assert!(
        after.contains("data-result=\"ok\"") && !after.contains("data-result=\"problem\""),
        "{}",
        after.text
    );
    assert!(after.contains("重新锁定") && after.contains("客服后台：support-1"));

    // coupon_order_mismatch: a paid order re-pointed at another coupon.
    let used = coupon_for(&app, "u2").await;
    let other = coupon_for(&app, "u2").await;
    let r = app
        .order(normal_order("N1", "u2", Some(&used), 39900))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        app.post("/api/v1/orders/N1/pay", json!({})).await.status,
        200
    );
    sqlx::query("UPDATE orders SET coupon_id = $1 WHERE order_no = 'N1'")
        .bind(&other)
        .execute(app.db.db.pool())
        .await
        .expect("plant");
    let href = format!("/console/orders/N1/repair?coupon_id={used}");
    let r = confirm(
        &mut b,
        &href,
        &[("coupon_id", &used), ("reason", "re-pointed by a script")],
    )
    .await;
    assert_eq!(r.status, 303);
    assert_eq!(app.order_view("N1").await["coupon_id"], used.as_str());
    let health = b.get("/console/orders/N1?check=1").await;
    assert!(
        !health.contains("data-result=\"problem\""),
        "{}",
        health.text
    );
}

#[tokio::test]
async fn support_may_close_a_lapsed_checkout_but_not_a_live_order() {
    let app = spawn_app().await;
    let cid = coupon_for(&app, "u1").await;
    let r = app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut b = signed_in(&app, Role::Support).await;
    // Within the checkout lock: an operator's decision.
    let r = confirm(&mut b, "/console/orders/N1/cancel", &[("reason", "x")]).await;
    assert_eq!(r.status, 403);
    app.advance(901);
    let page = b.get("/console/orders/N1?check=1").await;
    let fix = tag_with(&page.text, "data-fix=\"cancel_order\"").unwrap_or_default();
    let href = attr(fix, "href").unwrap_or_default();
    assert_eq!(
        href, "/console/orders/N1/cancel?back=%2Fconsole%2Forders%2FN1%3Fcheck%3D1%23health",
        "{}",
        page.text
    );
    let r = confirm(
        &mut b,
        &href,
        &[("reason", "checkout lapsed, customer left")],
    )
    .await;
    assert_eq!(r.status, 303);
    // Back on the health check it started from, which runs again.
    assert_eq!(
        r.location.as_deref(),
        Some("/console/orders/N1?check=1#health")
    );
    assert_eq!(app.order_view("N1").await["status"], "closed");
    assert_eq!(status_of(&app, &cid).await, "available");
    let after = b.get("/console/orders/N1?check=1").await;
    assert!(!after.contains("data-result=\"problem\""), "{}", after.text);
}

#[tokio::test]
async fn support_marks_a_coupon_left_locked_on_a_paid_order_used_from_the_health_check() {
    let app = spawn_app().await;
    let cid = coupon_for(&app, "u1").await;
    let r = app.order(normal_order("N1", "u1", Some(&cid), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(
        app.post("/api/v1/orders/N1/pay", json!({})).await.status,
        200
    );
    // The stale lock: the order is paid with the coupon, the coupon update
    // was lost.
    sqlx::query("UPDATE coupons SET status = 'locked', used_at = NULL WHERE id = $1")
        .bind(&cid)
        .execute(app.db.db.pool())
        .await
        .expect("plant");
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/orders/N1?check=1").await;
    assert!(page.contains("data-result=\"problem\""), "{}", page.text);
    let fix = tag_with(&page.text, "data-fix=\"mark_coupon_used\"").unwrap_or_default();
    let href = attr(fix, "href").unwrap_or_default();
    assert_eq!(
        href,
        format!(
            "/console/orders/N1/mark-coupon-used?coupon_id={cid}&back=%2Fconsole%2Forders%2FN1%3Fcheck%3D1%23health"
        ),
        "{}",
        page.text
    );
    assert!(
        !page.contains(&format!("href=\"/console/coupons/{cid}/release\"")),
        "releasing would let the coupon be used twice"
    );
    // Refused without a reason, nothing written; the form keeps `back`.
    let r = confirm(&mut b, &href, &[("coupon_id", &cid), ("reason", " ")]).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "reason").unwrap_or_default();
    assert!(message.contains("请填写原因"), "{}", r.text);
    assert_eq!(
        hidden_value(&r.text, "back").as_deref(),
        Some("/console/orders/N1?check=1#health")
    );
    assert_eq!(status_of(&app, &cid).await, "locked");

    let r = confirm(
        &mut b,
        &href,
        &[
            ("coupon_id", &cid),
            ("reason", "客户来电：订单已付款，券仍显示锁定"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some("/console/orders/N1?check=1#health")
    );
    assert_eq!(status_of(&app, &cid).await, "used");
    assert_eq!(app.order_view("N1").await["coupon_lock_status"], "used");
    let code = app.coupon(&cid).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let after = b.visit(r.location.as_deref().unwrap_or("/")).await;
    let flash = flash_text(&after.text).unwrap_or_default();
    assert!(
        flash.contains(&format!("已将券 {code} 标记为在订单 N1 使用")),
        "flash: {flash}"
    );
    assert!(
        after.contains("data-result=\"ok\"") && !after.contains("data-result=\"problem\""),
        "{}",
        after.text
    );
    assert!(after.contains("标记为已使用") && after.contains("客服后台：support-1"));
    assert!(after.contains("客户来电：订单已付款，券仍显示锁定"));

    // Again, now that the facts changed: refused, nothing written.
    let events_before = app.coupon(&cid).await["events"].clone();
    let r = confirm(&mut b, &href, &[("coupon_id", &cid), ("reason", "again")]).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "form").unwrap_or_default();
    assert!(
        message.contains("当前情况不需要或不允许这项修复"),
        "{}",
        r.text
    );
    assert_eq!(textarea_text(&r.text, "reason").as_deref(), Some("again"));
    assert_eq!(app.coupon(&cid).await["events"], events_before);
}

/// The code of a coupon, as the API shows it.
async fn code_of(app: &TestApp, coupon_id: &str) -> String {
    app.coupon(coupon_id).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The `href` of the element `marker` names on `page`.
fn href_of(page: &Page, marker: &str) -> String {
    let tag = tag_with(&page.text, marker)
        .unwrap_or_else(|| panic!("{marker} on the page: {}", page.text));
    attr(tag, "href").unwrap_or_default()
}

#[tokio::test]
async fn a_release_from_the_order_pages_health_check_lands_back_on_the_re_run_check_with_a_flash() {
    let app = spawn_app().await;
    let cid = closed_with_locked_coupon(&app, "P1", "u1").await;
    let code = code_of(&app, &cid).await;
    let mut b = signed_in(&app, Role::Support).await;
    let order = b.get("/console/orders/P1?check=1").await;
    let href = href_of(&order, "data-fix=\"release_coupon\"");
    // The confirmation page keeps where it started, and its cancel link
    // goes back there.
    let page = b.get(&href).await;
    assert_eq!(
        hidden_value(&page.text, "back").as_deref(),
        Some("/console/orders/P1?check=1#health")
    );
    assert!(
        page.contains("href=\"/console/orders/P1?check=1#health\" class=\"button\""),
        "{}",
        page.text
    );
    let r = confirm(&mut b, &href, &[("reason", "订单已关闭，券仍被锁")]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some("/console/orders/P1?check=1#health")
    );
    assert_eq!(status_of(&app, &cid).await, "available");
    let after = b.get("/console/orders/P1?check=1").await;
    let flash = flash_text(&after.text).unwrap_or_default();
    assert!(
        flash.contains(&format!("已释放券 {code} 的锁定，现为「待使用」")),
        "{flash}"
    );
    assert!(
        !flash.contains("cpn_"),
        "coupons are named by code: {flash}"
    );
    assert!(
        after.contains("data-testid=\"checks\"") && !after.contains("data-result=\"problem\""),
        "the check ran again and is clean: {}",
        after.text
    );
    // The coupon page's own release button comes back to the coupon page.
    let cid2 = closed_with_locked_coupon(&app, "P2", "u1").await;
    let coupon = b.get(&format!("/console/coupons/{cid2}")).await;
    let href = href_of(&coupon, "data-testid=\"release-link\"");
    assert_eq!(
        href,
        format!("/console/coupons/{cid2}/release?back=%2Fconsole%2Fcoupons%2F{cid2}")
    );
    let r = confirm(&mut b, &href, &[("reason", "same anomaly")]).await;
    assert_eq!(
        r.location.as_deref(),
        Some(format!("/console/coupons/{cid2}").as_str())
    );
}

#[tokio::test]
async fn a_hostile_back_falls_back_to_the_page_of_the_thing_acted_on() {
    let app = spawn_app().await;
    let mut op = signed_in(&app, Role::Operator).await;
    let long = format!("/console/{}", "a".repeat(600));
    for hostile in [
        "https://evil.example",
        "https://evil.example/console",
        "//evil",
        "/api/v1/orders/P1",
        "/console/../api/v1/orders/P1",
        "/console\\evil",
        "/console/orders/P1\r\nSet-Cookie: x=1",
        long.as_str(),
    ] {
        let enc: String = form_urlencoded::byte_serialize(hostile.as_bytes()).collect();
        let page = op
            .get(&format!("/console/users/u1/compensation?back={enc}"))
            .await;
        assert_eq!(page.status, 200, "{hostile:?}");
        assert_eq!(hidden_value(&page.text, "back"), None, "{hostile:?}");
        assert!(
            page.contains("href=\"/console/users/u1\" class=\"button\""),
            "{hostile:?}: the cancel link goes to the user's page"
        );
        // Posted anyway (a forged form), it is not followed.
        let csrf = page.csrf().expect("token");
        let form_id = hidden_value(&page.text, "form_id").unwrap_or_default();
        let r = op
            .post_form(
                "/console/users/u1/compensation",
                &[
                    ("csrf", &csrf),
                    ("form_id", &form_id),
                    ("back", hostile),
                    ("amount", "1"),
                    ("valid_days", "30"),
                    ("reason", "hostile back"),
                ],
            )
            .await;
        assert_eq!(r.status, 303, "{hostile:?}: {}", r.text);
        assert_eq!(
            r.location.as_deref(),
            Some("/console/users/u1"),
            "{hostile:?}"
        );
    }
    // A release with a hostile back lands on the coupon's page.
    let cid = closed_with_locked_coupon(&app, "P1", "u1").await;
    let path = format!("/console/coupons/{cid}/release");
    let r = confirm(
        &mut op,
        &path,
        &[("back", "https://evil.example/"), ("reason", "stuck lock")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some(format!("/console/coupons/{cid}").as_str())
    );
}

#[tokio::test]
async fn a_refused_compensation_over_the_cap_comes_back_with_everything_typed_and_the_message_at_the_amount()
 {
    let app = spawn_app().await;
    deposit_paid(&app, "P1", "u1").await;
    let mut b = signed_in(&app, Role::Support).await;
    let path = "/console/users/u1/compensation?order_no=P1&back=%2Fconsole%2Forders%2FP1";
    let fields = [
        ("amount", "80"),
        ("valid_days", "7"),
        ("order_no", "P1"),
        ("reason", "送达延迟 <补偿> </textarea><b>x</b>"),
    ];
    let r = confirm(&mut b, path, &fields).await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "amount").unwrap_or_default();
    assert!(message.contains("超出单张补偿上限 ¥50.00"), "{}", r.text);
    let amount = tag_with(&r.text, "id=\"amount\"").unwrap_or_default();
    assert_eq!(attr(amount, "value").as_deref(), Some("80"));
    assert_eq!(attr(amount, "aria-invalid").as_deref(), Some("true"));
    assert_eq!(
        attr(amount, "aria-describedby").as_deref(),
        Some("amount-error")
    );
    assert_eq!(input_value(&r.text, "valid_days").as_deref(), Some("7"));
    assert_eq!(input_value(&r.text, "order_no").as_deref(), Some("P1"));
    assert_eq!(
        textarea_text(&r.text, "reason").as_deref(),
        Some("送达延迟 &lt;补偿&gt; &lt;/textarea&gt;&lt;b&gt;x&lt;/b&gt;"),
        "the reason is kept, escaped"
    );
    assert_eq!(
        hidden_value(&r.text, "back").as_deref(),
        Some("/console/orders/P1")
    );
    assert!(!r.contains("data-testid=\"flash\""), "not a flash");
    assert_eq!(field_error(&r.text, "order_no"), None, "only the amount");
    // In the page's language.
    b.accept_language = Some("en".into());
    let r = confirm(&mut b, path, &fields).await;
    assert_eq!(r.status, 422);
    let message = field_error(&r.text, "amount").unwrap_or_default();
    assert!(
        message.contains("Over the limit of ¥50.00 per coupon"),
        "{}",
        r.text
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );
}

#[tokio::test]
async fn a_mistyped_or_foreign_order_number_on_the_compensation_form_is_a_field_error_not_a_404() {
    let app = spawn_app().await;
    deposit_paid(&app, "P1", "u1").await;
    deposit_paid(&app, "P2", "u2").await;
    let mut b = signed_in(&app, Role::Support).await;
    for (order_no, says) in [
        ("P9", "找不到订单 P9"),
        ("P2", "这个订单不属于这个用户"),
        ("P 1", "订单号不能有空格"),
    ] {
        let r = confirm(
            &mut b,
            "/console/users/u1/compensation",
            &[
                ("amount", "20"),
                ("valid_days", "30"),
                ("order_no", order_no),
                ("reason", "late delivery"),
            ],
        )
        .await;
        assert_eq!(r.status, 422, "{order_no}: {}", r.text);
        assert!(!r.contains("data-testid=\"error-page\""), "{order_no}");
        let message = field_error(&r.text, "order_no").unwrap_or_default();
        assert!(message.contains(says), "{order_no}: {}", r.text);
        let input = tag_with(&r.text, "id=\"order_no\"").unwrap_or_default();
        assert_eq!(attr(input, "value").as_deref(), Some(order_no));
        assert_eq!(attr(input, "aria-invalid").as_deref(), Some("true"));
        assert_eq!(input_value(&r.text, "amount").as_deref(), Some("20"));
        assert_eq!(
            textarea_text(&r.text, "reason").as_deref(),
            Some("late delivery")
        );
    }
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM compensation_ledger").await,
        0
    );
}

/// The allowance line of a compensation page: (left in cents, its text).
fn allowance(page: &Page) -> Option<(String, String)> {
    let tag = tag_with(&page.text, "data-testid=\"allowance\"")?;
    let left = attr(tag, "data-left-cents")?;
    let start = page.text.find(tag)? + tag.len();
    let end = page.text[start..].find("</p>")? + start;
    Some((left, page.text[start..end].to_string()))
}

#[tokio::test]
async fn the_compensation_form_shows_what_support_may_still_give_today_and_it_shrinks_after_a_coupon()
 {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/users/u1/compensation").await;
    let (left, text) = allowance(&page).expect("support sees its allowance");
    assert_eq!(left, "20000");
    assert!(
        text.contains("今天还可发放 ¥200.00") && text.contains("下一张最多 ¥50.00"),
        "{text}"
    );
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation",
        &[
            ("amount", "45.50"),
            ("valid_days", "30"),
            ("reason", "apology"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let page = b.get("/console/users/u2/compensation").await;
    let (left, text) = allowance(&page).expect("allowance");
    assert_eq!(left, "15450");
    assert!(
        text.contains("今天还可发放 ¥154.50（今天已发放 ¥45.50）"),
        "{text}"
    );
    // Four more of ¥38.50 leave ¥0.50: the next coupon may be worth that.
    for _ in 0..4 {
        let r = confirm(
            &mut b,
            "/console/users/u1/compensation",
            &[("amount", "38.50"), ("valid_days", "30"), ("reason", "ok")],
        )
        .await;
        assert_eq!(r.status, 303, "{}", r.text);
    }
    let page = b.get("/console/users/u1/compensation").await;
    let (left, text) = allowance(&page).expect("allowance");
    assert_eq!(left, "50");
    assert!(text.contains("下一张最多 ¥0.50"), "{text}");
    // A new business day starts afresh (signed in again: a day is longer
    // than a session).
    app.advance(24 * 3600);
    let r = b.sign_in_as("support-1", PASSWORD).await;
    assert_eq!(r.status, 303);
    let page = b.get("/console/users/u1/compensation").await;
    assert_eq!(allowance(&page).map(|a| a.0).as_deref(), Some("20000"));
    // Operators are not capped and see no cap.
    let mut op = signed_in(&app, Role::Operator).await;
    let page = op.get("/console/users/u1/compensation").await;
    assert_eq!(page.status, 200);
    assert!(allowance(&page).is_none() && !page.contains("data-testid=\"cap\""));
}

#[tokio::test]
async fn compensation_starts_from_the_order_and_user_pages_prefilled_and_lands_back_there() {
    let app = spawn_app().await;
    deposit_paid(&app, "P1", "u1").await;
    let mut b = signed_in(&app, Role::Support).await;
    let order = b.get("/console/orders/P1").await;
    let href = href_of(&order, "data-testid=\"compensation-link\"");
    assert_eq!(
        href,
        "/console/users/u1/compensation?order_no=P1&back=%2Fconsole%2Forders%2FP1"
    );
    let form = b.get(&href).await;
    assert_eq!(input_value(&form.text, "order_no").as_deref(), Some("P1"));
    assert!(allowance(&form).is_some(), "{}", form.text);
    let r = confirm(
        &mut b,
        &href,
        &[
            ("amount", "20"),
            ("valid_days", "30"),
            ("order_no", "P1"),
            ("reason", "sorry for the wait"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.location.as_deref(), Some("/console/orders/P1"));
    let (_, code) = compensation_coupon(&app).await;
    let order = b.get("/console/orders/P1").await;
    let flash = flash_text(&order.text).unwrap_or_default();
    assert!(
        flash.contains(&format!("已发放 ¥20.00 补偿券 {code}")),
        "{flash}"
    );
    assert!(order.contains("data-testid=\"ledger\"") && order.contains("sorry for the wait"));

    // From the user page with the check run: back to the re-run check.
    let user = b.get("/console/users/u1?check=1").await;
    let href = href_of(&user, "data-testid=\"compensation-link\"");
    assert_eq!(
        href,
        "/console/users/u1/compensation?back=%2Fconsole%2Fusers%2Fu1%3Fcheck%3D1%23health"
    );
    let r = confirm(
        &mut b,
        &href,
        &[("amount", "5"), ("valid_days", "7"), ("reason", "goodwill")],
    )
    .await;
    assert_eq!(
        r.location.as_deref(),
        Some("/console/users/u1?check=1#health")
    );
}

#[tokio::test]
async fn the_health_checks_suggested_compensation_opens_prefilled_with_user_order_and_amount() {
    let app = spawn_app().await;
    // A live order whose freed coupon has ended: compensation is suggested.
    let cid = deposit_paid_under(&app, "P1", "u1", "lock", 3600).await;
    plant(
        &app,
        &format!(
            "UPDATE coupons SET status = 'available', order_no = NULL, locked_at = NULL WHERE id = '{cid}'"
        ),
    )
    .await;
    app.advance(3601);
    let mut b = signed_in(&app, Role::Support).await;
    let order = b.get("/console/orders/P1?check=1").await;
    let href = href_of(&order, "data-fix=\"issue_compensation\"");
    // With the coupon whose discount is lost, to choose it on the form.
    assert_eq!(
        href,
        format!(
            "/console/users/u1/compensation?order_no=P1&amount_cents=5000&for_coupon_id={cid}&back=%2Fconsole%2Forders%2FP1%3Fcheck%3D1%23health"
        )
    );
    let form = b.get(&href).await;
    assert!(form.contains("u1"));
    assert_eq!(input_value(&form.text, "amount").as_deref(), Some("50.00"));
    assert_eq!(input_value(&form.text, "order_no").as_deref(), Some("P1"));
    let r = confirm(
        &mut b,
        &href,
        &[
            ("amount", "50.00"),
            ("valid_days", "30"),
            ("order_no", "P1"),
            ("reason", "coupon ended while freed"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(
        r.location.as_deref(),
        Some("/console/orders/P1?check=1#health")
    );
}

#[tokio::test]
async fn the_money_box_lists_each_compensation_coupon_of_the_order_like_its_ledger() {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let r = app.order(normal_order("N-MONEY", "u1", None, 10_000)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = confirm(
        &mut b,
        "/console/users/u1/compensation?order_no=N-MONEY",
        &[
            ("amount", "20"),
            ("valid_days", "30"),
            ("order_no", "N-MONEY"),
            ("reason", "late"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let code: String = sqlx::query_scalar(
        "SELECT c.code FROM compensation_ledger l JOIN coupons c ON c.id = l.coupon_id WHERE l.order_no = 'N-MONEY'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("the ledger names the coupon");
    let page = b.get("/console/orders/N-MONEY").await;
    let money = page
        .text
        .split_once("data-testid=\"money\"")
        .map(|(_, rest)| rest.split("</dl>").next().unwrap_or(""))
        .unwrap_or("");
    assert!(
        money.contains(&format!("补偿券 {code}（客服发放）")),
        "{money}"
    );
    assert!(money.contains("¥20.00"), "{money}");
    // A normal order has no final-payment compensation line to show ¥0.00.
    assert!(!money.contains("尾款补偿"), "{money}");
}

#[tokio::test]
async fn a_missing_order_inside_the_console_is_a_404_page_in_the_pages_language_with_its_navigation()
 {
    let app = spawn_app().await;
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get("/console/orders/DEMO-X-1234").await;
    assert_eq!(page.status, 404);
    assert!(page.contains("找不到订单 DEMO-X-1234"), "{}", page.text);
    assert!(!page.contains("Not found"), "one language, not a mix");
    assert!(
        page.contains("data-testid=\"staff-name\""),
        "the header stays"
    );
    assert!(
        page.contains("action=\"/console/search\""),
        "the search stays"
    );
    let page = b.get("/console/no/such/page").await;
    assert_eq!(page.status, 404);
    assert!(
        page.header("content-type")
            .unwrap_or("")
            .starts_with("text/html")
    );
    assert!(page.contains("data-testid=\"staff-name\""));
}

/// The console's CSV exports open right in Excel: a UTF-8 byte order mark
/// first, and beside the stored codes, cents and UTC times, the status in
/// the reader's words, money in yuan and times in the business time zone.
#[tokio::test]
async fn csv_exports_carry_a_byte_order_mark_words_yuan_and_local_times() {
    let app = spawn_app().await;
    let cid = crate::common::fixtures::coupon_for(&app, "u-csv").await;
    let r = app
        .order(crate::common::normal_order(
            "N-CSV",
            "u-csv",
            Some(&cid),
            40_000,
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut b = signed_in(&app, Role::Support).await;
    let coupons = b.get("/console/coupons.csv").await;
    assert!(coupons.bom, "coupons.csv starts with a byte order mark");
    let mut lines = coupons.text.lines();
    let header = lines.next().unwrap_or_default();
    assert!(
        header.ends_with(",status_text,value_yuan,min_order_yuan,ends_at_local"),
        "{header}"
    );
    let row = lines.next().unwrap_or_default();
    assert!(row.contains(",锁定中,50.00,300.00,"), "{row}");
    assert!(row.ends_with("(UTC+8)"), "{row}");
    let orders = b.get("/console/orders.csv").await;
    assert!(orders.bom);
    let row = orders.text.lines().nth(1).unwrap_or_default();
    assert!(row.contains(",400.00,50.00,350.00"), "{row}");
    for path in ["/console/audit.csv", "/console/compensation.csv"] {
        let page = b.get(path).await;
        if page.status == 200 {
            assert!(page.bom, "{path}");
        }
    }
}
