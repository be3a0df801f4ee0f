//! What an operator and a shop's tracing see: the webhook backlog and the
//! timed store calls in `/metrics`, and W3C trace context from a request
//! to its event rows and the webhooks it causes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use tokio::sync::Mutex;

use crate::common::fixtures::coupon_for;
use crate::common::{TOKEN, TestApp, normal_order};
use couponkeeper::domain::trace::{is_span_id, is_trace_id};
use couponkeeper::service::webhooks::WebhookSettings;

/// A webhook receiver on a local port that keeps each request's headers
/// and answers the status it is set to.
#[derive(Clone)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<HeaderMap>>>,
    status: Arc<AtomicU16>,
}

impl Receiver {
    async fn start(status: StatusCode) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let got: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
        let answer = Arc::new(AtomicU16::new(status.as_u16()));
        let (kept, answers) = (got.clone(), answer.clone());
        let app = Router::new().route(
            "/hook",
            post(move |headers: HeaderMap, _body: Bytes| {
                let (kept, answers) = (kept.clone(), answers.clone());
                async move {
                    kept.lock().await.push(headers);
                    StatusCode::from_u16(answers.load(Ordering::SeqCst))
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
                }
            }),
        );
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url,
            got,
            status: answer,
        }
    }

    fn answer(&self, status: StatusCode) {
        self.status.store(status.as_u16(), Ordering::SeqCst);
    }

    /// The `traceparent` of each request received, in order.
    async fn traceparents(&self) -> Vec<Option<String>> {
        self.got
            .lock()
            .await
            .iter()
            .map(|h| {
                h.get("traceparent")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            })
            .collect()
    }
}

/// An app whose default webhook subscriber is `receiver`, giving up after
/// `max_attempts`.
async fn app_sending_to(receiver: &Receiver, max_attempts: i64) -> TestApp {
    let w = WebhookSettings {
        default_url: Some(receiver.url.clone()),
        default_secret: Some("whsec_test_0123456789abcdef".to_string()),
        timeout_seconds: 5,
        max_attempts,
        ..WebhookSettings::default()
    };
    TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await
}

/// The value of the sample `series` (name and labels, exactly) in a
/// `/metrics` text, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

async fn scrape(app: &TestApp) -> String {
    let m = app.get_as("/metrics", None).await;
    assert_eq!(m.status, 200, "{}", m.text);
    m.text
}

#[tokio::test]
async fn metrics_show_the_webhook_backlog_waiting_then_pending_with_its_age_then_dead() {
    let receiver = Receiver::start(StatusCode::INTERNAL_SERVER_ERROR).await;
    let app = app_sending_to(&receiver, 1).await;
    let a = coupon_for(&app, "u1").await;
    let r = app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);

    // The order's coupon.locked is in the outbox, not yet fanned out.
    app.advance(30);
    let text = scrape(&app).await;
    assert_eq!(
        sample(&text, "couponkeeper_webhook_undispatched"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "couponkeeper_webhook_oldest_undispatched_age_seconds"
        ),
        Some(30.0)
    );
    let pending = "couponkeeper_webhook_deliveries_pending{subscriber=\"default\"}";
    let dead = "couponkeeper_webhook_deliveries_dead{subscriber=\"default\"}";
    let age = "couponkeeper_webhook_oldest_pending_age_seconds{subscriber=\"default\"}";
    assert_eq!(sample(&text, pending), Some(0.0), "{text}");

    // Fanned out: one delivery pending for the default subscriber, whose
    // age grows with the clock.
    assert_eq!(app.service.fan_out(100).await.expect("fan out"), 1);
    app.advance(90);
    let text = scrape(&app).await;
    assert_eq!(
        sample(&text, "couponkeeper_webhook_undispatched"),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            "couponkeeper_webhook_oldest_undispatched_age_seconds"
        ),
        Some(0.0)
    );
    assert_eq!(sample(&text, pending), Some(1.0), "{text}");
    assert_eq!(sample(&text, dead), Some(0.0));
    assert_eq!(sample(&text, age), Some(90.0));

    // The receiver refuses and one attempt is all there is: dead.
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.sent, 1, "{report:?}");
    assert_eq!(receiver.got.lock().await.len(), 1);
    let text = scrape(&app).await;
    assert_eq!(sample(&text, pending), Some(0.0), "{text}");
    assert_eq!(sample(&text, dead), Some(1.0));
    assert_eq!(sample(&text, age), Some(0.0));
}

#[tokio::test]
async fn every_timed_store_call_is_in_the_duration_histogram_by_name() {
    let app = TestApp::builder().start().await;
    coupon_for(&app, "u1").await;
    let text = scrape(&app).await;
    assert_eq!(
        sample(
            &text,
            "couponkeeper_db_query_duration_seconds_count{query=\"coupons.insert_new\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        text.contains("couponkeeper_db_query_duration_seconds_bucket{query=\"templates.get_for_claim\",le=\"+Inf\"} 1\n"),
        "{text}"
    );
    // Names only (`table.what`): no SQL text and no ids in any label.
    let names: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("query=\"").nth(1)?.split('"').next())
        .collect();
    assert!(names.len() > 3, "{text}");
    for name in names {
        let (table, what) = name.split_once('.').unwrap_or_default();
        let word =
            |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        assert!(word(table) && word(what), "query label {name:?}");
    }
}

#[tokio::test]
async fn the_reminder_planners_store_calls_are_timed_by_name_too() {
    let app = TestApp::builder().start().await;
    coupon_for(&app, "u1").await;
    // The template's coupons live ten days: seven days on, the coupon is
    // three days from its end, the first reminder step.
    app.advance(7 * 86_400 + 60);
    let report = app
        .service
        .plan_due_reminders(50)
        .await
        .expect("the planner runs");
    assert_eq!(report.messages(), 1, "{report:?}");
    let text = scrape(&app).await;
    for query in [
        "reminders.user_candidates",
        "reminders.insert_slot",
        "reminders.insert_user_message",
    ] {
        let calls = sample(
            &text,
            &format!("couponkeeper_db_query_duration_seconds_count{{query=\"{query}\"}}"),
        );
        assert!(calls.is_some_and(|n| n >= 1.0), "{query}: {text}");
    }
}

#[tokio::test]
async fn a_slow_query_threshold_of_0_ms_counts_every_timed_store_call_as_slow() {
    let app = TestApp::builder()
        .with_config(|c| c.slow_query_ms = 0)
        .start()
        .await;
    let a = coupon_for(&app, "u1").await;
    let r = app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let text = scrape(&app).await;
    for query in ["coupons.insert_new", "coupons.lock", "orders.insert"] {
        let slow = sample(
            &text,
            &format!("couponkeeper_db_slow_queries_total{{query=\"{query}\"}}"),
        );
        let calls = sample(
            &text,
            &format!("couponkeeper_db_query_duration_seconds_count{{query=\"{query}\"}}"),
        );
        assert!(slow.is_some_and(|n| n >= 1.0), "{query}: {text}");
        assert_eq!(slow, calls, "{query}: every call is slow at 0 ms");
    }
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// The four fields of a `traceparent` value.
fn fields(value: &str) -> (String, String, String, String) {
    let f: Vec<&str> = value.split('-').collect();
    assert_eq!(f.len(), 4, "{value}");
    (f[0].into(), f[1].into(), f[2].into(), f[3].into())
}

/// Places order `no` for `user`'s coupon with these extra headers; the
/// answer's `traceparent`.
async fn order_with(
    app: &TestApp,
    no: &str,
    user: &str,
    coupon: &str,
    headers: &[(&str, &str)],
) -> String {
    let auth = format!("Bearer {TOKEN}");
    let mut all = vec![("authorization", auth.as_str())];
    all.extend_from_slice(headers);
    let body = normal_order(no, user, Some(coupon), 39900).to_string();
    let r = app.post_raw("/api/v1/orders", body, &all).await;
    assert_eq!(r.status, 201, "{headers:?}: {}", r.text);
    r.headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .expect("every answer carries traceparent")
        .to_string()
}

/// The trace ids of the events of order `no` (the order's own and its
/// coupon's), oldest first.
async fn event_traces(app: &TestApp, no: &str) -> Vec<Option<String>> {
    sqlx::query_scalar("SELECT trace_id FROM events WHERE order_no = $1 ORDER BY id")
        .bind(no)
        .fetch_all(app.db.db.pool())
        .await
        .expect("read events")
}

#[tokio::test]
async fn a_callers_traceparent_reaches_the_event_rows_and_every_attempt_of_the_webhook_it_causes() {
    let receiver = Receiver::start(StatusCode::INTERNAL_SERVER_ERROR).await;
    let app = app_sending_to(&receiver, 5).await;
    let a = coupon_for(&app, "u1").await;
    let sent = format!("00-{TRACE}-{PARENT}-01");
    let answered = order_with(&app, "N1", "u1", &a, &[("traceparent", sent.as_str())]).await;

    // The answer names the caller's trace and a span of couponkeeper's.
    let (version, trace, span, flags) = fields(&answered);
    assert_eq!(
        (version.as_str(), trace.as_str(), flags.as_str()),
        ("00", TRACE, "01")
    );
    assert!(is_span_id(&span) && span != PARENT, "{answered}");

    // The order's event and its coupon's lock event keep the trace.
    let traces = event_traces(&app, "N1").await;
    assert_eq!(traces.len(), 2, "{traces:?}");
    assert!(
        traces.iter().all(|t| t.as_deref() == Some(TRACE)),
        "{traces:?}"
    );

    // The coupon.locked webhook carries it; the first attempt fails, and
    // the retry, claimed afresh from the database, carries it again, each
    // attempt a span of its own.
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.sent, 1, "{report:?}");
    receiver.answer(StatusCode::OK);
    app.advance(3600);
    let report = app.service.dispatch_once(100).await.expect("retry");
    assert_eq!(report.delivered, 1, "{report:?}");
    let got = receiver.traceparents().await;
    assert_eq!(got.len(), 2, "{got:?}");
    let mut spans = Vec::new();
    for header in got {
        let header = header.expect("the webhook carries traceparent");
        let (version, trace, span, flags) = fields(&header);
        assert_eq!(
            (version.as_str(), trace.as_str(), flags.as_str()),
            ("00", TRACE, "01"),
            "{header}"
        );
        assert!(is_span_id(&span) && span != PARENT, "{header}");
        spans.push(span);
    }
    assert_ne!(spans[0], spans[1], "each attempt is a span of its own");
}

#[tokio::test]
async fn an_invalid_traceparent_is_ignored_and_the_request_gets_a_trace_of_its_own() {
    let receiver = Receiver::start(StatusCode::OK).await;
    let app = app_sending_to(&receiver, 5).await;
    let zero_trace = format!("00-{}-{PARENT}-01", "0".repeat(32));
    let upper = format!("00-{}-{PARENT}-01", TRACE.to_uppercase());
    let version_ff = format!("ff-{TRACE}-{PARENT}-01");
    let valid = format!("00-{TRACE}-{PARENT}-01");
    let cases: Vec<Vec<(&str, &str)>> = vec![
        vec![("traceparent", zero_trace.as_str())],
        vec![("traceparent", upper.as_str())],
        vec![("traceparent", version_ff.as_str())],
        vec![("traceparent", "not a trace at all")],
        // Twice, even valid: which one would be meant?
        vec![
            ("traceparent", valid.as_str()),
            ("traceparent", valid.as_str()),
        ],
        vec![],
    ];
    for (i, headers) in cases.iter().enumerate() {
        let user = format!("u{i}");
        let no = format!("N{i}");
        let a = coupon_for(&app, &user).await;
        let answered = order_with(&app, &no, &user, &a, headers).await;
        let (version, trace, span, flags) = fields(&answered);
        assert_eq!(version, "00", "{headers:?}");
        assert!(
            is_trace_id(&trace) && trace != TRACE,
            "{headers:?}: {answered}"
        );
        assert!(is_span_id(&span), "{answered}");
        assert_eq!(flags, "00", "a trace of couponkeeper's own is not sampled");
        let traces = event_traces(&app, &no).await;
        assert_eq!(traces.len(), 2);
        assert!(
            traces.iter().all(|t| t.as_deref() == Some(trace.as_str())),
            "{headers:?}: {traces:?}"
        );

        let before = receiver.got.lock().await.len();
        let report = app.service.dispatch_once(100).await.expect("dispatch");
        assert_eq!(report.delivered, 1, "{report:?}");
        let got = receiver.traceparents().await;
        assert_eq!(got.len(), before + 1);
        let header = got[before]
            .clone()
            .expect("the webhook carries traceparent");
        let (_, sent_trace, _, sent_flags) = fields(&header);
        assert_eq!(
            (sent_trace.as_str(), sent_flags.as_str()),
            (trace.as_str(), "00"),
            "{header}"
        );
    }
}

#[tokio::test]
async fn a_change_no_request_caused_has_no_trace_and_its_webhook_no_traceparent() {
    let receiver = Receiver::start(StatusCode::OK).await;
    let app = app_sending_to(&receiver, 5).await;
    let a = coupon_for(&app, "u1").await;
    order_with(&app, "N1", "u1", &a, &[]).await;
    app.service.dispatch_once(100).await.expect("dispatch");
    // The checkout lock lapses: the expiry job releases the coupon.
    app.advance(3600);
    let closed = app
        .service
        .close_lapsed_checkouts("job:test", 100)
        .await
        .expect("close lapsed checkouts");
    assert_eq!(closed.changed, 1, "{closed:?}");
    let traces = event_traces(&app, "N1").await;
    assert!(traces.len() > 2, "{traces:?}");
    assert!(traces[2..].iter().all(Option::is_none), "{traces:?}");
    app.service.dispatch_once(100).await.expect("dispatch");
    let got = receiver.traceparents().await;
    assert!(got.len() >= 2, "{got:?}");
    assert!(got[0].is_some());
    assert!(got[1..].iter().all(Option::is_none), "{got:?}");
}

#[tokio::test]
async fn the_backlog_reading_walks_only_its_partial_index_and_never_the_delivered_rows() {
    use couponkeeper::store::deliveries::BACKLOG_SQL;

    let app = TestApp::builder().start().await;
    let pool = app.db.db.pool();
    // 3,000 delivered deliveries and a backlog of 30 (20 pending, 10 dead)
    // over three subscribers.
    let (with, source) = crate::common::series(3030);
    sqlx::query(&format!(
        "{with} INSERT INTO deliveries (outbox_id, subscriber_id, event_type, user_id, status, \
         attempts, next_attempt_at, created_at, updated_at)
         SELECT g, CASE WHEN g % 3 = 0 THEN 'default' ELSE 'sub' || CAST(g % 3 AS TEXT) END,
                'coupon.locked', NULL,
                CASE WHEN g <= 3000 THEN 'delivered' WHEN g <= 3020 THEN 'pending' ELSE 'dead' END,
                1, g, g, g
         FROM {source}"
    ))
    .execute(pool)
    .await
    .expect("plant deliveries");
    if app.db.db.backend() == couponkeeper::store::Backend::Postgres {
        sqlx::query("ANALYZE deliveries")
            .execute(pool)
            .await
            .expect("analyze");
    }
    let backend = app.db.db.backend();
    let rows = sqlx::query(&crate::common::explain_sql(backend, BACKLOG_SQL))
        .bind(2000_i64)
        .fetch_all(pool)
        .await
        .expect("explain");
    let plan = crate::common::plan_text(&rows, backend);
    assert!(plan.contains("deliveries_backlog_idx"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");
    assert!(
        !plan.lines().any(|l| l.trim() == "SCAN deliveries"),
        "{plan}"
    );

    // And it reads them right.
    app.advance(10);
    let text = scrape(&app).await;
    assert_eq!(
        sample(
            &text,
            "couponkeeper_webhook_deliveries_pending{subscriber=\"sub1\"}"
        ),
        Some(7.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "couponkeeper_webhook_deliveries_dead{subscriber=\"default\"}"
        ),
        Some(4.0),
        "{text}"
    );
}
