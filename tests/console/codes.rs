//! Redeem codes (兑换码) in the console on both stores: an operator asks
//! for a batch on the template's page, follows its progress on the batch
//! page (which refreshes itself while the job runs), downloads the CSV
//! and voids the batch with a reason and a confirmation; a refused form
//! comes back with its input and the message at the field; support reads
//! but may not generate, download or void; pages show names, not ids, in
//! both languages.

use crate::common::console::{
    field_error, flash_text, input_value, signed_in, textarea_text, unreadable_words, visible_text,
};
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::ids::TemplateId;
use couponkeeper::domain::staff::Role;
use serde_json::json;

async fn template(app: &TestApp) -> TemplateId {
    let t = app
        .template(json!({"name": "春节兑换券", "total_stock": null}))
        .await;
    TemplateId::from_wire(t["id"].as_str().unwrap_or_default())
}

async fn run_jobs(app: &TestApp) {
    app.service
        .run_code_work(500, 1000)
        .await
        .expect("the code job runs");
}

#[tokio::test]
async fn an_operator_generates_a_batch_follows_its_progress_and_downloads_the_codes() {
    let app = spawn_app().await;
    let tid = template(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let tpath = format!("/console/templates/{tid}");
    let page = b.get(&tpath).await;
    assert!(
        page.contains("data-testid=\"code-batch-form\""),
        "{}",
        page.text
    );
    assert!(page.contains("data-testid=\"no-code-batches\""));

    let action = format!("{tpath}/code-batches");
    let r = b
        .post_on(
            &tpath,
            &action,
            &[("count", "600"), ("prefix", "cny"), ("length", "8")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let batch_path = r.location.clone().expect("lands on the batch page");
    assert!(
        batch_path.starts_with("/console/code-batches/"),
        "{batch_path}"
    );

    let running = b.get(&batch_path).await;
    assert_eq!(running.status, 200, "{}", running.text);
    assert!(flash_text(&running.text).is_some());
    assert!(
        running.contains(&format!(
            "<meta http-equiv=\"refresh\" content=\"3; url={batch_path}\">"
        )),
        "refreshes itself while running, at its address without a fragment: {}",
        running.text
    );
    assert!(running.contains("data-testid=\"refresh\""));
    assert!(
        !running.contains("data-testid=\"codes-csv\""),
        "no download yet"
    );
    assert!(running.contains("0 / 600") || running.contains("0 of 600"));

    app.service.code_work_step(500).await.expect("one chunk");
    let halfway = b.get(&batch_path).await;
    assert!(halfway.contains("已生成 500 / 600 个"), "{}", halfway.text);

    run_jobs(&app).await;
    let done = b.get(&batch_path).await;
    assert!(!done.contains("http-equiv=\"refresh\""), "done: no refresh");
    assert!(done.contains("data-testid=\"codes-csv\""));
    assert!(done.contains("春节兑换券"), "the template's name");
    let text = visible_text(&done.text);
    assert!(
        unreadable_words(&text).is_empty(),
        "{:?}",
        unreadable_words(&text)
    );
    assert!(!text.contains("cbt_") && !text.contains("tpl_"), "{text}");

    let csv = b.get(&format!("{batch_path}/codes.csv")).await;
    assert_eq!(csv.status, 200);
    assert_eq!(csv.text.lines().count(), 601, "a header and 600 codes");
    assert!(
        csv.text
            .lines()
            .nth(1)
            .unwrap_or_default()
            .starts_with("CNY")
    );

    // The template's page lists the batch with its progress, by time.
    let listed = b.get(&tpath).await;
    assert!(listed.contains("data-testid=\"code-batch-row\""));
    assert!(listed.contains("已生成 600 / 600 个"), "{}", listed.text);

    // English too.
    b.accept_language = Some("en".into());
    let en = b.get(&batch_path).await;
    assert!(en.contains("600 of 600 generated"), "{}", en.text);
    assert!(en.contains("Download the codes (CSV)"));
}

#[tokio::test]
async fn a_refused_generate_form_keeps_its_input_with_the_message_at_the_field() {
    let app = spawn_app().await;
    let tid = template(&app).await;
    let mut b = signed_in(&app, Role::Operator).await;
    let tpath = format!("/console/templates/{tid}");
    let action = format!("{tpath}/code-batches");
    // 31^5 codes of length 5 hold 28,629 batches' worth: 100,000 is refused.
    let r = b
        .post_on(
            &tpath,
            &action,
            &[("count", "100000"), ("prefix", "cny"), ("length", "5")],
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    let message = field_error(&r.text, "count").expect("message at count");
    assert!(message.contains("28629"), "{message}");
    assert_eq!(
        input_value(&r.text, "code-count").as_deref(),
        Some("100000")
    );
    assert_eq!(input_value(&r.text, "code-prefix").as_deref(), Some("cny"));
    assert_eq!(input_value(&r.text, "code-length").as_deref(), Some("5"));

    let r = b
        .post_on(
            &tpath,
            &action,
            &[("count", "ten"), ("prefix", "O0"), ("length", "8")],
        )
        .await;
    assert_eq!(r.status, 422);
    assert!(field_error(&r.text, "count").is_some());
    assert_eq!(input_value(&r.text, "code-count").as_deref(), Some("ten"));
    let r = b
        .post_on(
            &tpath,
            &action,
            &[("count", "10"), ("prefix", "O0"), ("length", "8")],
        )
        .await;
    assert_eq!(r.status, 422);
    assert!(field_error(&r.text, "prefix").is_some(), "{}", r.text);
    assert!(
        app.service
            .list_code_batches(&tid)
            .await
            .expect("list")
            .is_empty()
    );
}

#[tokio::test]
async fn support_reads_batches_but_cannot_generate_download_or_void_them() {
    let app = spawn_app().await;
    let tid = template(&app).await;
    let mut op = signed_in(&app, Role::Operator).await;
    let tpath = format!("/console/templates/{tid}");
    let r = op
        .post_on(
            &tpath,
            &format!("{tpath}/code-batches"),
            &[("count", "20"), ("length", "8")],
        )
        .await;
    let batch_path = r.location.clone().expect("created");
    run_jobs(&app).await;

    let mut support = signed_in(&app, Role::Support).await;
    let page = support.get(&tpath).await;
    assert_eq!(page.status, 200);
    assert!(
        page.contains("data-testid=\"code-batch-row\""),
        "support reads the list"
    );
    assert!(!page.contains("code-batch-form"));
    let csrf = page.csrf().expect("token");
    let r = support
        .post_form(
            &format!("{tpath}/code-batches"),
            &[("csrf", &csrf), ("count", "5"), ("length", "8")],
        )
        .await;
    assert_eq!(r.status, 403);
    let batch = support.get(&batch_path).await;
    assert_eq!(batch.status, 200);
    assert!(!batch.contains("void-form") && !batch.contains("codes-csv"));
    assert_eq!(
        support.get(&format!("{batch_path}/codes.csv")).await.status,
        403
    );
    let r = support
        .post_form(
            &format!("{batch_path}/void"),
            &[("csrf", &csrf), ("reason", "no"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(r.status, 403);

    // The operator's void: refused without the confirmation (the reason
    // kept), then done with it.
    let void = format!("{batch_path}/void");
    let r = op
        .post_on(&batch_path, &void, &[("reason", "printed twice")])
        .await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(field_error(&r.text, "confirm").is_some());
    assert_eq!(
        textarea_text(&r.text, "void-reason").as_deref(),
        Some("printed twice")
    );
    let r = op.post_on(&batch_path, &void, &[("confirm", "yes")]).await;
    assert_eq!(r.status, 422);
    assert!(field_error(&r.text, "reason").is_some());
    let r = op
        .post_on(
            &batch_path,
            &void,
            &[("reason", "printed twice"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(r.location.as_deref(), Some(batch_path.as_str()));
    let after = op.get(&batch_path).await;
    assert!(!after.contains("void-form"));
    assert!(after.contains("data-action=\"code_batch_void\""));
    assert!(after.contains("printed twice"));
    assert!(after.contains("20 个"), "{}", after.text);
}
