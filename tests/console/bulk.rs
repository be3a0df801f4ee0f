//! Bulk issue and bulk void in the console, on both stores: an operator
//! pastes a list and follows the job page (refreshing itself while it
//! runs) to its results; a refused list comes back as typed with the
//! message at the field; bulk void previews, asks for a reason and a
//! confirmation; support sees no form and gets 403.

use crate::common::console::{field_error, hidden_value, signed_in, textarea_text};
use crate::common::{normal_order, spawn_app};
use couponkeeper::domain::ids::TemplateId;
use couponkeeper::domain::staff::Role;
use serde_json::json;

#[tokio::test]
async fn an_operator_bulk_issues_from_the_template_page_and_follows_the_job() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"name": "双11定向券", "total_stock": 2}))
        .await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let mut b = signed_in(&app, Role::Operator).await;
    let page = b.get(&format!("/console/templates/{tid}")).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("data-testid=\"bulk-issue-link\""));
    assert!(page.contains("data-testid=\"bulk-void-link\""));
    let path = format!("/console/templates/{tid}/bulk-issue");
    let form = b.get(&path).await;
    assert_eq!(form.status, 200);
    let csrf = form.csrf().expect("token");
    // Refused: no line at all; the input comes back with the message.
    let refused = b
        .post_form(&path, &[("csrf", &csrf), ("user_ids", "user_id")])
        .await;
    assert_eq!(refused.status, 422, "{}", refused.text);
    assert_eq!(
        textarea_text(&refused.text, "user-ids").as_deref(),
        Some("user_id")
    );
    assert!(field_error(&refused.text, "user_ids").is_some());
    let started = b
        .post_form(
            &path,
            &[
                ("csrf", &csrf),
                ("user_ids", "u1\nu2\nu3\nbad id"),
                ("notify", "1"),
            ],
        )
        .await;
    assert_eq!(started.status, 303, "{}", started.text);
    let job_path = started.location.clone().unwrap_or_default();
    assert!(job_path.starts_with("/console/jobs/"), "{job_path}");
    let running = b.get(&job_path).await;
    assert_eq!(running.status, 200);
    assert!(
        running.contains("http-equiv=\"refresh\""),
        "a running job reloads itself"
    );
    assert!(running.contains("双11定向券"), "the template by its name");
    app.service.run_bulk_until_idle(10).await.expect("runs");
    let done = b.get(&job_path).await;
    assert!(!done.contains("http-equiv=\"refresh\""));
    assert!(
        done.contains("data-testid=\"bulk-succeeded\">2<"),
        "{}",
        done.text
    );
    assert!(done.contains("data-reason=\"out_of_stock\""));
    assert!(done.contains("data-reason=\"invalid_user_id\""));
    let csv = b.get(&format!("{job_path}/results.csv")).await;
    assert_eq!(csv.status, 200);
    assert_eq!(csv.text.lines().count(), 5, "{}", csv.text);
    // The template page lists the job.
    let page = b.get(&format!("/console/templates/{tid}")).await;
    assert!(page.contains("data-testid=\"bulk-job-row\""));
}

#[tokio::test]
async fn an_operator_uploads_a_csv_file_of_users_and_a_file_beside_a_list_is_refused() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"name": "会员日定向券", "total_stock": 500}))
        .await;
    let tid = TemplateId::from_wire(t["id"].as_str().unwrap_or_default());
    let mut b = signed_in(&app, Role::Operator).await;
    let path = format!("/console/templates/{tid}/bulk-issue");
    let form = b.get(&path).await;
    assert!(
        form.contains("enctype=\"multipart/form-data\""),
        "the form sends files"
    );
    let csrf = form.csrf().expect("token");
    let mut file = String::from("user_id\r\n");
    for i in 0..200 {
        file.push_str(&format!("member-{i:03}\r\n"));
    }
    // A file and a pasted list at once: refused at the file, the list kept.
    let both = b
        .post_multipart(
            &path,
            &[("csrf", &csrf), ("user_ids", "u1")],
            &[("file", "users.csv", file.as_bytes())],
        )
        .await;
    assert_eq!(both.status, 422, "{}", both.text);
    assert!(field_error(&both.text, "file").is_some(), "{}", both.text);
    assert_eq!(textarea_text(&both.text, "user-ids").as_deref(), Some("u1"));
    // A file with no user id: refused at the file.
    let empty = b
        .post_multipart(
            &path,
            &[("csrf", &csrf), ("user_ids", "")],
            &[("file", "users.csv", b"user_id\n")],
        )
        .await;
    assert_eq!(empty.status, 422, "{}", empty.text);
    assert!(field_error(&empty.text, "file").is_some(), "{}", empty.text);
    // Without the session's token: refused, nothing started.
    let forged = b
        .post_multipart(
            &path,
            &[("user_ids", "")],
            &[("file", "users.csv", file.as_bytes())],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.text);
    assert!(
        app.service
            .template_jobs(&tid)
            .await
            .expect("jobs")
            .is_empty()
    );
    // The file: a job of 200 lines that issues 200 coupons.
    let started = b
        .post_multipart(
            &path,
            &[("csrf", &csrf), ("user_ids", ""), ("notify", "1")],
            &[("file", "users.csv", file.as_bytes())],
        )
        .await;
    assert_eq!(started.status, 303, "{}", started.text);
    let job_path = started.location.clone().unwrap_or_default();
    app.service.run_bulk_until_idle(10).await.expect("runs");
    let done = b.get(&job_path).await;
    assert!(
        done.contains("data-testid=\"bulk-total\">200<"),
        "{}",
        done.text
    );
    assert!(
        done.contains("data-testid=\"bulk-succeeded\">200<"),
        "{}",
        done.text
    );
    // The same file again answers with the same job.
    let again = b
        .post_multipart(
            &path,
            &[("csrf", &csrf), ("user_ids", "")],
            &[("file", "users.csv", file.as_bytes())],
        )
        .await;
    assert_eq!(again.status, 303, "{}", again.text);
    assert_eq!(
        app.service.template_jobs(&tid).await.expect("jobs").len(),
        1
    );
}

#[tokio::test]
async fn bulk_void_in_the_console_previews_asks_for_a_reason_and_a_confirmation() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": null})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    for u in ["u1", "u2", "u3"] {
        app.claim(u, &tid).await;
    }
    let mut b = signed_in(&app, Role::Operator).await;
    let path = format!("/console/templates/{tid}/bulk-void");
    let page = b.get(&path).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("data-testid=\"bulk-void-preview\""));
    let csrf = page.csrf().expect("token");
    let refused = b
        .post_form(&path, &[("csrf", &csrf), ("reason", " ")])
        .await;
    assert_eq!(refused.status, 422);
    assert!(field_error(&refused.text, "reason").is_some());
    let ask = b
        .post_form(&path, &[("csrf", &csrf), ("reason", "活动下线")])
        .await;
    assert_eq!(ask.status, 200);
    assert!(ask.contains("data-testid=\"bulk-void-question\""));
    assert_eq!(
        crate::common::fixtures::count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM bulk_jobs")
            .await,
        0,
        "nothing starts before the confirmation"
    );
    let started = b
        .post_form(
            &path,
            &[("csrf", &csrf), ("reason", "活动下线"), ("confirm", "1")],
        )
        .await;
    assert_eq!(started.status, 303, "{}", started.text);
    app.service.run_bulk_until_idle(10).await.expect("runs");
    let voided = crate::common::fixtures::count(
        &app,
        &format!(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM coupons WHERE template_id = '{tid}' AND status = 'invalidated'"
        ),
    )
    .await;
    assert_eq!(voided, 3);
    let actors = crate::common::fixtures::count(
        &app,
        "SELECT CAST(COUNT(*) AS BIGINT) FROM events WHERE action = 'invalidate' AND actor = 'staff:operator-1' AND reason = '活动下线'",
    )
    .await;
    assert_eq!(actors, 3);
}

#[tokio::test]
async fn bulk_void_of_an_uploaded_list_previews_its_count_and_voids_only_its_available_coupons() {
    let app = spawn_app().await;
    let t = app
        .template(json!({"name": "名单作废券", "total_stock": 10}))
        .await;
    let tid = TemplateId::from_wire(t["id"].as_str().unwrap_or_default());
    let mut ids = Vec::new();
    for u in 0..4 {
        let c = app.claim(&format!("u{u}"), &tid).await;
        ids.push(c["id"].as_str().unwrap_or_default().to_string());
    }
    // The first listed coupon is locked to an order.
    let r = app
        .order(normal_order("N1", "u0", Some(&ids[0]), 39900))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let mut b = signed_in(&app, Role::Operator).await;
    let path = format!("/console/templates/{tid}/bulk-void");
    let form = b.get(&path).await;
    assert!(form.contains("enctype=\"multipart/form-data\""));
    let csrf = form.csrf().expect("token");
    // A file without an id: refused at the file, the reason kept.
    let bad = b
        .post_multipart(
            &path,
            &[("csrf", &csrf), ("reason", "名单有误")],
            &[("file", "ids.csv", b"coupon_id\n")],
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.text);
    assert!(field_error(&bad.text, "file").is_some(), "{}", bad.text);
    assert_eq!(
        textarea_text(&bad.text, "void-reason").as_deref(),
        Some("名单有误")
    );
    // Three listed (one locked), the fourth not: the confirmation counts 3.
    let file = format!("coupon_id\r\n{}\r\n{}\r\n{}\r\n", ids[0], ids[1], ids[2]);
    let ask = b
        .post_multipart(
            &path,
            &[("csrf", &csrf), ("reason", "名单有误")],
            &[("file", "ids.csv", file.as_bytes())],
        )
        .await;
    assert_eq!(ask.status, 200, "{}", ask.text);
    assert!(ask.contains("data-testid=\"bulk-void-confirm-form\""));
    assert!(ask.contains("文件列出 3 张券"), "{}", ask.text);
    assert!(
        app.service
            .template_jobs(&tid)
            .await
            .expect("jobs")
            .is_empty(),
        "nothing starts before the confirmation"
    );
    let list = hidden_value(&ask.text, "list").expect("the list is carried");
    let started = b
        .post_form(
            &path,
            &[
                ("csrf", &csrf),
                ("reason", "名单有误"),
                ("list", &list),
                ("confirm", "1"),
            ],
        )
        .await;
    assert_eq!(started.status, 303, "{}", started.text);
    let job_path = started.location.clone().unwrap_or_default();
    app.service.run_bulk_until_idle(10).await.expect("runs");
    let done = b.get(&job_path).await;
    assert!(
        done.contains("data-testid=\"bulk-total\">3<"),
        "{}",
        done.text
    );
    assert!(
        done.contains("data-testid=\"bulk-succeeded\">2<"),
        "{}",
        done.text
    );
    assert!(done.contains("data-reason=\"locked\""), "{}", done.text);
    let status = |c: serde_json::Value| c["status"].as_str().unwrap_or_default().to_string();
    let mut seen = Vec::new();
    for id in &ids {
        seen.push(status(app.get(&format!("/api/v1/coupons/{id}")).await.body));
    }
    assert_eq!(seen, ["locked", "invalidated", "invalidated", "available"]);
}

#[tokio::test]
async fn support_sees_no_bulk_form_and_cannot_start_a_bulk_job() {
    let app = spawn_app().await;
    let t = app.template(json!({})).await;
    let tid = t["id"].as_str().unwrap_or_default().to_string();
    let mut b = signed_in(&app, Role::Support).await;
    let page = b.get(&format!("/console/templates/{tid}")).await;
    assert_eq!(page.status, 200);
    assert!(!page.contains("bulk-issue-link"));
    let csrf = b.csrf().await;
    for kind in ["bulk-issue", "bulk-void"] {
        let path = format!("/console/templates/{tid}/{kind}");
        assert_eq!(b.get(&path).await.status, 403, "{path}");
        let r = b
            .post_form(
                &path,
                &[
                    ("csrf", &csrf),
                    ("user_ids", "u1"),
                    ("reason", "x"),
                    ("confirm", "1"),
                ],
            )
            .await;
        assert_eq!(r.status, 403, "{path}: {}", r.text);
    }
    assert_eq!(
        crate::common::fixtures::count(&app, "SELECT CAST(COUNT(*) AS BIGINT) FROM bulk_jobs")
            .await,
        0
    );
}
