//! The pending-expirations dashboard on a fresh database and a manual
//! clock: the chart's 72 bars carry the API's exact counts, the overdue
//! figures, the top templates, the sweep and the lag; every role may see
//! it, nobody without a session.

use crate::common::console::{Browser, signed_in};
use crate::common::{TestApp, spawn_app};
use couponkeeper::domain::staff::Role;
use serde_json::json;

/// A template whose coupons live `valid_seconds` from their claim; its id.
async fn template(app: &TestApp, name: &str, valid_seconds: i64) -> String {
    let t = app
        .template(json!({"name": name, "valid_seconds": valid_seconds}))
        .await;
    t["id"].as_str().unwrap_or_default().to_string()
}

async fn claim_n(app: &TestApp, template_id: &str, n: usize) {
    for i in 0..n {
        app.claim(&format!("u{i}"), template_id).await;
    }
}

/// `(data-count, title)` of every bar of the chart.
fn bars(html: &str) -> Vec<(i64, String)> {
    html.split("<rect class=\"bar\"")
        .skip(1)
        .map(|part| {
            let count = part
                .split("data-count=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .and_then(|s| s.parse().ok())
                .expect("a bar has a count");
            let title = part
                .split("<title>")
                .nth(1)
                .and_then(|s| s.split("</title>").next())
                .expect("a bar has a title")
                .to_string();
            (count, title)
        })
        .collect()
}

/// The text inside the element carrying `data-testid="ID"`.
fn testid_text(html: &str, id: &str) -> String {
    let marker = format!("data-testid=\"{id}\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("{id} on the page"));
    let rest = &html[start..];
    let open_end = rest.find('>').expect("tag ends") + 1;
    let close = rest[open_end..].find('<').expect("text ends") + open_end;
    rest[open_end..close].to_string()
}

#[tokio::test]
async fn the_chart_and_figures_equal_the_api_and_show_overdue_sweep_lag_and_top_templates() {
    let app = spawn_app().await;
    // The clock is at 2026-11-11 00:00 UTC. Coupons claimed now end at:
    let a = template(&app, "满300减50", 90 * 60).await; // 01:30, hour 1
    let b = template(&app, "满199减20", 5 * 3600).await; // 05:00 sharp, hour 5
    let c = template(&app, "9折券", 30 * 3600 + 600).await; // 30:10, hour 30 (beyond 24 h)
    let d = template(&app, "新人5元", 60).await; // 00:01, overdue after the advance
    claim_n(&app, &a, 3).await;
    claim_n(&app, &b, 2).await;
    claim_n(&app, &c, 1).await;
    claim_n(&app, &d, 2).await;
    app.advance(10 * 60); // now 00:10; the two 60 s coupons are 9 min overdue

    let api = app
        .get("/api/v1/expirations/pending?within_seconds=259200")
        .await;
    assert_eq!(api.status, 200, "{}", api.text);

    let mut browser = signed_in(&app, Role::Support).await;
    browser.accept_language = Some("en".into());
    let page = browser.get("/console/expirations").await;
    assert_eq!(page.status, 200, "{}", page.text);

    // 72 bars, one per hour from 00:00 UTC, each titled with its hour and
    // count in the business zone (Asia/Shanghai by default).
    let bars = bars(&page.text);
    assert_eq!(bars.len(), 72);
    assert_eq!(bars[0].1, "2026-11-11 08:00 (UTC+8): 0");
    assert_eq!(bars[1], (3, "2026-11-11 09:00 (UTC+8): 3".to_string()));
    assert_eq!(bars[5], (2, "2026-11-11 13:00 (UTC+8): 2".to_string()));
    assert_eq!(bars[30], (1, "2026-11-12 14:00 (UTC+8): 1".to_string()));
    assert_eq!(bars[71].1, "2026-11-14 07:00 (UTC+8): 0");
    assert_eq!(bars.iter().map(|b| b.0).sum::<i64>(), 6);
    // The very numbers of the API, bucket by bucket.
    let api_buckets: Vec<(String, i64)> = api.body["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| {
            (
                b["starts_at"].as_str().unwrap_or_default().to_string(),
                b["count"].as_i64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(api_buckets.len(), 3);
    for (starts_at, count) in &api_buckets {
        let hour = chrono::DateTime::parse_from_rfc3339(starts_at)
            .expect("rfc3339")
            .with_timezone(&chrono_tz::Asia::Shanghai)
            .format("%Y-%m-%d %H:00 (UTC+8)")
            .to_string();
        assert!(
            bars.contains(&(*count, format!("{hour}: {count}"))),
            "bar for {hour}"
        );
    }
    assert_eq!(api.body["total"], 6);
    assert_eq!(testid_text(&page.text, "due-total"), "6");
    assert_eq!(api.body["overdue"], 2);
    assert_eq!(testid_text(&page.text, "overdue"), "2");
    assert_eq!(testid_text(&page.text, "oldest-overdue-age"), "9 min 0 s");
    // Accessible: a labelled image and the numbers as a table.
    assert!(page.contains("role=\"img\" aria-label=\"Bar chart of coupons due per hour"));
    assert!(page.contains("data-testid=\"due-table\""));
    assert!(page.contains("<th scope=\"row\">2026-11-11 09:00 (UTC+8)</th><td>3</td>"));
    // Axis labels every 6 hours: 12 of them.
    assert_eq!(page.text.matches("data-testid=\"axis-label\"").count(), 12);

    // Top templates in the next 24 h: 满300减50 (3), then 满199减20 (2); the
    // 30-hour one and the overdue one are not due within 24 h.
    let top: Vec<&str> = page
        .text
        .split("data-testid=\"top-template\" data-template-id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    assert_eq!(top, vec![a.as_str(), b.as_str()]);
    assert!(page.contains("满300减50"));
    assert!(page.contains("No backstop sweep has been recorded yet."));

    // A sweep runs: it expires the overdue coupons and records its run.
    let started = app.now();
    app.advance(2);
    let done = app
        .service
        .expire_due_batch("job:expiry-sweep", 500)
        .await
        .expect("sweep batch");
    assert_eq!(done.count, 2);
    app.service
        .record_job_run("sweep", started, done.count as u64, None)
        .await
        .expect("record run");
    app.service
        .record_job_run(
            "zombie-reaper",
            started,
            0,
            Some("database unavailable".into()),
        )
        .await
        .expect("record run");

    let page = browser.get("/console/expirations").await;
    assert_eq!(page.status, 200);
    assert_eq!(testid_text(&page.text, "overdue"), "0");
    assert_eq!(testid_text(&page.text, "oldest-overdue-age"), "—");
    assert_eq!(testid_text(&page.text, "last-sweep-rows"), "2");
    assert_eq!(testid_text(&page.text, "last-sweep-duration"), "2.0 s");
    assert!(
        page.contains("<time datetime=\"2026-11-11T00:10:02Z\">2026-11-11 08:10:02 (UTC+8)</time>"),
        "sweep time"
    );
    // The jobs table: both jobs, the reaper's error shown.
    assert!(page.contains("data-job=\"sweep\""));
    assert!(page.contains("data-job=\"zombie-reaper\""));
    assert!(page.contains("database unavailable"));
    // The lag: both coupons ended at 00:01 and expired at 00:10:02.
    assert_eq!(testid_text(&page.text, "lag-p50"), "542 s");
    assert_eq!(testid_text(&page.text, "lag-count"), "2");
    assert!(page.contains("job:expiry-sweep: 2"));
}

#[tokio::test]
async fn an_empty_database_shows_an_empty_chart_in_chinese() {
    let app = spawn_app().await;
    let mut browser = signed_in(&app, Role::Operator).await;
    let page = browser.get("/console/expirations").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let bars = bars(&page.text);
    assert_eq!(bars.len(), 72);
    assert!(bars.iter().all(|b| b.0 == 0));
    assert!(page.contains("没有券到期"));
    assert!(page.contains("还没有记录过兜底扫描。"));
    assert!(page.contains("最近一小时没有券过期。"));
    assert_eq!(testid_text(&page.text, "due-total"), "0");
}

#[tokio::test]
async fn the_window_s_last_partial_hour_is_counted_beside_the_chart() {
    let app = spawn_app().await;
    app.advance(30 * 60); // 00:30: the window ends at 72:30
    let t = template(&app, "长券", 72 * 3600 - 60).await; // ends 72:29
    claim_n(&app, &t, 1).await;
    let mut browser = signed_in(&app, Role::Admin).await;
    browser.accept_language = Some("en".into());
    let page = browser.get("/console/expirations").await;
    assert_eq!(bars(&page.text).iter().map(|b| b.0).sum::<i64>(), 0);
    assert_eq!(testid_text(&page.text, "due-total"), "1");
    assert!(page.contains("data-testid=\"beyond-chart\""));
    let api = app
        .get("/api/v1/expirations/pending?within_seconds=259200")
        .await;
    assert_eq!(api.body["total"], 1);
}

#[tokio::test]
async fn every_role_sees_the_dashboard_and_the_nav_link() {
    let app = spawn_app().await;
    for role in [Role::Support, Role::Operator, Role::Admin] {
        let mut b = signed_in(&app, role).await;
        let page = b.get("/console/expirations").await;
        assert_eq!(page.status, 200, "{role:?}");
        let home = b.get("/console").await;
        assert!(home.contains("href=\"/console/expirations\""), "{role:?}");
        // Every role reads the audit log: support their own entries.
        assert!(
            home.contains("href=\"/console/audit\""),
            "audit link for {role:?}"
        );
        assert_eq!(
            home.contains("我的操作"),
            role == Role::Support,
            "support's link is to their own actions"
        );
    }
}

#[tokio::test]
async fn the_new_routes_without_a_session_go_to_sign_in() {
    let app = spawn_app().await;
    let mut b = Browser::new(&app);
    for path in [
        "/console/expirations",
        "/console/audit",
        "/console/audit?log=staff",
        "/console/audit.csv",
        "/console/audit.csv?log=staff",
    ] {
        let r = b.get(path).await;
        assert_eq!(r.status, 303, "GET {path}");
        let to = r.location.unwrap_or_default();
        assert!(to.starts_with("/login?next="), "{path} -> {to}");
    }
}
