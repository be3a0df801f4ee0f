//! The recording of "a release's queries" (`store::capture`, run by
//! `.ci/capture-sql`): it keeps the statements the service sends, and
//! nothing the migrator, the connection set-up or a test sends on its own.
//! Its own test binary, because it installs the process's global `tracing`
//! subscriber before anything else in the process can.

use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

use couponkeeper::store::capture::SqlCapture;

#[tokio::test]
async fn the_capture_keeps_the_service_statements_and_leaves_out_migrations_and_test_sql() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let capture = SqlCapture::new(dir.path()).expect("the capture directory");
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(capture))
        .expect("the first subscriber of this process");

    // Migrates (not the service's SQL), then the service writes a template.
    let app = crate::common::spawn_app().await;
    let template = app.template(json!({})).await;
    let id = template["id"].as_str().expect("a template id");
    // A test's own SQL on the service's pool: not the service's.
    let (probe,): (i64,) = sqlx::query_as(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM templates WHERE name = 'capture-probe'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("the probe runs");
    assert_eq!(probe, 0);
    assert!(app.get(&format!("/api/v1/templates/{id}")).await.status == 200);

    let store = app.db.db.backend().name();
    let path = dir
        .path()
        .join(format!("{store}.{}.sql", std::process::id()));
    let text = std::fs::read_to_string(&path).expect("the capture wrote its file");
    let lines: Vec<&str> = text.lines().collect();

    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("INSERT INTO templates (") && l.ends_with(';')),
        "the service's INSERT of the template, one line ending in ';':\n{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("SELECT ") && l.contains(" FROM templates WHERE id = $1")),
        "the service's read of the template:\n{text}"
    );
    for left_out in [
        "capture-probe",
        "_sqlx_migrations",
        "CREATE TABLE",
        "PRAGMA",
        "BEGIN",
        "COMMIT",
    ] {
        assert!(
            !text.contains(left_out),
            "{left_out:?} is not the service's SQL:\n{text}"
        );
    }
    let distinct: std::collections::BTreeSet<&&str> = lines.iter().collect();
    assert_eq!(distinct.len(), lines.len(), "each statement once:\n{text}");
    assert!(
        lines.iter().all(|l| !l.contains('\n') && !l.contains("  ")),
        "one normalized statement a line:\n{text}"
    );
}
