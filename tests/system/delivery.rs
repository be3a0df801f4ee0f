//! The transactional outbox and webhook delivery: outbox rows written with
//! each coupon change, delivery to a real HTTP receiver started by the
//! test (signature, body, retries with backoff, dead letter, redelivery,
//! at least once after a crash, order per user, two dispatchers), that
//! a hanging receiver never holds up expiry or payment, that console
//! subscribers on this host are not sent to unless allowed, and what each
//! role sees of an attempt.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration as StdDuration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::sync::Mutex;

use crate::common::{TestApp, normal_order};
use couponkeeper::domain::delivery::{AttemptClass, classify};
use couponkeeper::domain::network::parse_networks;
use couponkeeper::domain::time::to_ms;
use couponkeeper::service::Ctx;
use couponkeeper::service::webhooks::{Dispatcher, WebhookSettings, backoff_ms};
use couponkeeper::store::Db;

const SECRET: &str = "whsec_test_0123456789abcdef";

/// Answer of the receiver.
const OK: u8 = 0;
const FAIL: u8 = 1;
const HANG: u8 = 2;
/// Answers 200 after [`SLOW_MS`].
const SLOW: u8 = 3;
const SLOW_MS: u64 = 300;

#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<(HeaderMap, String)>>>,
    mode: Arc<AtomicU8>,
    url: String,
    /// Requests being answered now, and the most at once.
    open: Arc<AtomicUsize>,
    most_open: Arc<AtomicUsize>,
}

impl Receiver {
    async fn start() -> Receiver {
        let mut r = Receiver::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        r.url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let app = Router::new()
            .route("/hook", post(receive))
            .with_state(r.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        r
    }

    fn answer(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }

    async fn bodies(&self) -> Vec<Value> {
        self.got
            .lock()
            .await
            .iter()
            .map(|(_, b)| serde_json::from_str(b).expect("JSON body"))
            .collect()
    }

    async fn ids(&self) -> Vec<String> {
        self.bodies()
            .await
            .iter()
            .map(|b| b["id"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    r.got
        .lock()
        .await
        .push((headers, String::from_utf8_lossy(&body).into_owned()));
    let open = r.open.fetch_add(1, Ordering::SeqCst) + 1;
    r.most_open.fetch_max(open, Ordering::SeqCst);
    let answer = answer(r.mode.load(Ordering::SeqCst)).await;
    r.open.fetch_sub(1, Ordering::SeqCst);
    answer
}

async fn answer(mode: u8) -> StatusCode {
    match mode {
        FAIL => StatusCode::INTERNAL_SERVER_ERROR,
        HANG => {
            tokio::time::sleep(StdDuration::from_secs(60)).await;
            StatusCode::OK
        }
        SLOW => {
            tokio::time::sleep(StdDuration::from_millis(SLOW_MS)).await;
            StatusCode::OK
        }
        _ => StatusCode::OK,
    }
}

fn settings(url: &str, max_attempts: i64, timeout_seconds: i64) -> WebhookSettings {
    WebhookSettings {
        default_url: Some(url.to_string()),
        default_secret: Some(SECRET.to_string()),
        timeout_seconds,
        max_attempts,
        ..WebhookSettings::default()
    }
}

/// `COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS=127.0.0.0/8`: console subscribers
/// may be the tests' receivers on this host.
fn loopback() -> Vec<ipnet::IpNet> {
    parse_networks("127.0.0.0/8").expect("networks")
}

async fn app_with(receiver: &Receiver, max_attempts: i64, timeout_seconds: i64) -> TestApp {
    let w = settings(&receiver.url, max_attempts, timeout_seconds);
    TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await
}

/// A user with one claimed coupon (valid 10 days); returns its id.
async fn coupon_for(app: &TestApp, user: &str) -> String {
    let t = app.template(json!({})).await;
    app.claim(user, t["id"].as_str().expect("template id"))
        .await["id"]
        .as_str()
        .expect("coupon id")
        .to_string()
}

/// Outbox rows: (id, event_type, user_id, subject_id, payload).
async fn outbox(db: &Db) -> Vec<(i64, String, Option<String>, Option<String>, String)> {
    sqlx::query_as("SELECT id, event_type, user_id, subject_id, payload FROM outbox ORDER BY id")
        .fetch_all(db.pool())
        .await
        .expect("read outbox")
}

/// (status, attempts, next_attempt_at) of every delivery, by id.
async fn deliveries(db: &Db) -> Vec<(i64, String, i64, i64)> {
    sqlx::query_as("SELECT id, status, attempts, next_attempt_at FROM deliveries ORDER BY id")
        .fetch_all(db.pool())
        .await
        .expect("read deliveries")
}

fn verify(headers: &HeaderMap, body: &str) -> bool {
    let Some(sig) = headers
        .get("couponkeeper-signature")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let mut t = None;
    let mut v1 = None;
    for part in sig.split(',') {
        match part.split_once('=') {
            Some(("t", x)) => t = Some(x.to_string()),
            Some(("v1", x)) => v1 = Some(x.to_string()),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).expect("key");
    mac.update(format!("{t}.{body}").as_bytes());
    let Ok(want) = hex::decode(v1) else {
        return false;
    };
    mac.verify_slice(&want).is_ok()
}

#[tokio::test]
async fn every_coupon_change_writes_one_outbox_row_of_its_type_and_a_refused_change_none() {
    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let a = coupon_for(&app, "u1").await;
    assert!(outbox(&app.db.db).await.is_empty(), "a claim is no webhook");

    let r = app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .post("/api/v1/orders/N1/refund", json!({"reason": "returned"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let b = coupon_for(&app, "u2").await;
    let r = app.order(normal_order("N2", "u2", Some(&b), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app.post("/api/v1/orders/N2/cancel", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let rows = outbox(&app.db.db).await;
    let seen: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|(_, t, u, s, p)| {
            let status = serde_json::from_str::<Value>(p).expect("payload JSON")["status"]
                .as_str()
                .map(|s| Box::leak(s.to_string().into_boxed_str()) as &str)
                .unwrap_or("");
            (
                t.as_str(),
                u.as_deref().unwrap_or(""),
                s.as_deref().unwrap_or(""),
                status,
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("coupon.locked", "u1", a.as_str(), "locked"),
            ("coupon.used", "u1", a.as_str(), "used"),
            ("coupon.released", "u1", a.as_str(), "available"),
            ("coupon.locked", "u2", b.as_str(), "locked"),
            ("coupon.released", "u2", b.as_str(), "available"),
        ]
    );
    // The payload is the coupon as the API shows it at that moment.
    let now = app.coupon(&a).await;
    let last_of_a: Value = serde_json::from_str(&rows[2].4).expect("payload");
    for k in [
        "id", "code", "user_id", "status", "ends_at", "source", "kind",
    ] {
        assert_eq!(last_of_a[k], now[k], "field {k}");
    }

    // Refused changes write nothing: paying a refunded order, locking a
    // coupon that another order holds.
    let r = app.post("/api/v1/orders/N1/pay", json!({})).await;
    assert_eq!(r.status, 409, "{}", r.text);
    let r = app.order(normal_order("N3", "u2", Some(&b), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let before = outbox(&app.db.db).await.len();
    let r = app.order(normal_order("N4", "u2", Some(&b), 39900)).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert_eq!(outbox(&app.db.db).await.len(), before);
}

#[tokio::test]
async fn the_receiver_gets_the_api_body_with_a_valid_signature() {
    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let a = coupon_for(&app, "u1").await;
    let r = app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);

    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!((report.fanned_out, report.delivered), (1, 1), "{report:?}");
    let got = receiver.got.lock().await.clone();
    assert_eq!(got.len(), 1);
    let (headers, raw) = &got[0];
    assert!(verify(headers, raw), "signature verifies: {headers:?}");
    assert!(
        !verify(headers, &raw.replace("u1", "u9")),
        "a changed body does not"
    );
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    let body: Value = serde_json::from_str(raw).expect("JSON");
    let keys: Vec<&String> = body.as_object().expect("object").keys().collect();
    assert_eq!(
        keys.len(),
        5,
        "exactly id, type, occurred_at, user_id, data: {body}"
    );
    let msg_id = outbox(&app.db.db).await[0].0;
    assert_eq!(body["id"], format!("msg_{msg_id}"));
    assert_eq!(body["type"], "coupon.locked");
    assert_eq!(body["occurred_at"], "2026-11-11T00:00:00.000Z");
    assert_eq!(body["user_id"], "u1");
    assert_eq!(body["data"]["id"], a.as_str());
    assert_eq!(body["data"]["status"], "locked");
    assert_eq!(body["data"]["order_no"], "N1");
    assert_eq!(deliveries(&app.db.db).await[0].1, "delivered");

    // Nothing more to send.
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.sent, 0);
}

#[tokio::test]
async fn failures_are_retried_with_growing_delays_then_dead_lettered_and_redelivery_works() {
    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 4, 5).await;
    receiver.answer(FAIL);
    let a = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;

    let mut delays = Vec::new();
    for attempt in 1..=4 {
        let sent_at = to_ms(app.now());
        let report = app.service.dispatch_once(100).await.expect("dispatch");
        assert_eq!(report.sent, 1, "attempt {attempt}: {report:?}");
        let (_, status, attempts, next) = deliveries(&app.db.db).await[0].clone();
        assert_eq!(attempts, attempt);
        if attempt < 4 {
            assert_eq!(status, "pending");
            delays.push(next - sent_at);
            // Not due a moment before its time.
            app.clock.set(couponkeeper::domain::time::from_ms(next - 1));
            assert_eq!(app.service.dispatch_once(100).await.expect("early").sent, 0);
            app.clock.set(couponkeeper::domain::time::from_ms(next));
        } else {
            assert_eq!(status, "dead", "dead after the last attempt");
        }
    }
    for (i, d) in delays.iter().enumerate() {
        let base = backoff_ms(i as i64 + 1, 1.0);
        assert_eq!(base, 2000 << i, "base delay doubles from 2 s");
        assert!(
            (base * 8 / 10..=base * 12 / 10).contains(d),
            "delay {i} = {d} ms is {base} ms ± 20 %"
        );
    }
    let ids = receiver.ids().await;
    assert_eq!(ids.len(), 4);
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "every retry has the same id"
    );

    // Dead: nothing more is sent.
    app.advance(24 * 3600);
    assert_eq!(
        app.service.dispatch_once(100).await.expect("dispatch").sent,
        0
    );

    // Redeliver: pending again, sent once, delivered; history kept.
    let id = deliveries(&app.db.db).await[0].0;
    receiver.answer(OK);
    app.service
        .redeliver(id, "staff:op")
        .await
        .expect("redeliver");
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.delivered, 1, "{report:?}");
    let view = app.service.delivery(id).await.expect("view");
    assert_eq!(view.status, "delivered");
    assert_eq!(view.history.len(), 6, "4 failures, the request, 1 success");
    assert_eq!(view.history[4].actor, "staff:op");
    assert_eq!(view.history[5].status_code, Some(200));
    assert_eq!(receiver.ids().await[4], ids[0], "same id after redelivery");
    // A delivered one can be redelivered; a pending one cannot.
    app.service.redeliver(id, "staff:op").await.expect("again");
    assert!(app.service.redeliver(id, "staff:op").await.is_err());
}

#[tokio::test]
async fn a_crash_between_send_and_mark_sends_the_message_again_with_the_same_id() {
    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let a = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;

    app.service.fan_out(100).await.expect("fan out");
    let claimed = app.service.claim_deliveries(100).await.expect("claim");
    assert_eq!(claimed.len(), 1);
    let outcome = app.service.send_delivery(&claimed[0]).await;
    assert!(outcome.ok(), "{outcome:?}");
    // ... and the process dies before recording it.
    drop(claimed);

    // While the lease holds, nobody sends it again.
    assert_eq!(
        app.service.dispatch_once(100).await.expect("dispatch").sent,
        0
    );
    // After it, another dispatcher does.
    app.advance(app.service.webhooks().lease_ms() / 1000 + 1);
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.delivered, 1, "{report:?}");
    let ids = receiver.ids().await;
    assert_eq!(ids.len(), 2, "delivered at least once: twice here");
    assert_eq!(
        ids[0], ids[1],
        "with the same id, so the receiver drops the repeat"
    );
    assert_eq!(deliveries(&app.db.db).await[0].1, "delivered");
}

#[tokio::test]
async fn a_users_messages_reach_a_subscriber_in_order() {
    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let a = coupon_for(&app, "u1").await;
    let b = coupon_for(&app, "u2").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    app.post("/api/v1/orders/N1/cancel", json!({})).await;
    app.order(normal_order("N2", "u2", Some(&b), 39900)).await;

    // The first message of u1 fails: u1's second waits, u2's goes.
    receiver.answer(FAIL);
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.sent, 2, "u1's first and u2's: {report:?}");
    let first = receiver.bodies().await;
    let mut firsts: Vec<(String, String)> = first
        .iter()
        .map(|b| (b["user_id"].to_string(), b["type"].to_string()))
        .collect();
    firsts.sort();
    assert_eq!(
        firsts,
        vec![
            ("\"u1\"".to_string(), "\"coupon.locked\"".to_string()),
            ("\"u2\"".to_string(), "\"coupon.locked\"".to_string()),
        ]
    );
    receiver.answer(OK);
    app.advance(60);
    // u2's retry and u1's first go now; u1's second only after that.
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.delivered, 2, "{report:?}");
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.delivered, 1, "{report:?}");
    let u1: Vec<String> = receiver
        .bodies()
        .await
        .iter()
        .filter(|b| b["user_id"] == "u1")
        .map(|b| b["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        u1,
        vec!["coupon.locked", "coupon.locked", "coupon.released"]
    );
}

#[tokio::test]
async fn two_dispatchers_on_one_database_send_each_message_once() {
    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let messages = messages_of_users(&app, 12).await;
    assert_eq!(messages, 24);

    // A second instance: its own pool on the same database.
    let db2 = Db::connect(&app.db.url, 5, 8).await.expect("second pool");
    let clock: couponkeeper::clock::SharedClock = app.clock.clone();
    let config = couponkeeper::config::Config {
        webhooks: WebhookSettings {
            concurrency: 2,
            ..settings(&receiver.url, 8, 5)
        },
        ..Default::default()
    };
    let second = couponkeeper::server::build_service(&config, db2, clock);
    // The dispatcher `serve` runs, twice, with slots for two sends each.
    let run = |s: couponkeeper::service::Service| {
        let receiver = receiver.clone();
        async move {
            let mut d = Dispatcher::new(s);
            turn_until(&mut d, 400, || {
                receiver.got.try_lock().map(|g| g.len()).unwrap_or(0) >= messages
            })
            .await;
            d.drain(StdDuration::from_secs(5)).await;
        }
    };
    tokio::join!(run(app.service.clone()), run(second));
    let mut ids = receiver.ids().await;
    ids.sort();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique.len(), messages, "every message delivered");
    assert_eq!(ids.len(), messages, "none twice: {ids:?}");
}

#[tokio::test]
async fn a_hanging_receiver_never_holds_up_expiry_or_payment() {
    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 30).await;
    receiver.answer(HANG);
    let short = app.template(json!({"valid_seconds": 60})).await;
    let soon = app.claim("u1", short["id"].as_str().expect("id")).await;
    app.advance(120);
    let a = coupon_for(&app, "u2").await;
    let r = app.order(normal_order("N1", "u2", Some(&a), 39900)).await;
    assert_eq!(r.status, 201, "{}", r.text);

    let service = app.service.clone();
    let stuck = tokio::spawn(async move { service.dispatch_once(100).await });
    // Wait until the receiver holds the request.
    for _ in 0..200 {
        if !receiver.got.lock().await.is_empty() {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    assert_eq!(
        receiver.got.lock().await.len(),
        1,
        "the dispatcher is stuck"
    );

    let quick = StdDuration::from_secs(3);
    let batch = tokio::time::timeout(quick, app.service.expire_due_batch("job:test", 100))
        .await
        .expect("expiry is not held up")
        .expect("expiry");
    assert_eq!(batch.count, 1);
    let r = tokio::time::timeout(quick, app.post("/api/v1/orders/N1/pay", json!({})))
        .await
        .expect("payment is not held up");
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        app.coupon(soon["id"].as_str().expect("id")).await["status"],
        "expired"
    );
    assert!(!stuck.is_finished(), "the dispatcher is still waiting");
    stuck.abort();
}

#[tokio::test]
async fn the_deliveries_page_lists_and_operators_redeliver_with_csrf() {
    use crate::common::console::{Browser, signed_in};
    use couponkeeper::domain::staff::Role;

    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 1, 5).await;
    receiver.answer(FAIL);
    let a = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    app.service.dispatch_once(100).await.expect("dispatch");
    let id = deliveries(&app.db.db).await[0].0;
    assert_eq!(deliveries(&app.db.db).await[0].1, "dead");

    // No session: to the sign-in page.
    let mut anon = Browser::new(&app);
    let r = anon.get("/console/deliveries").await;
    assert_eq!(r.status, 303);
    assert!(
        r.location.as_deref().unwrap_or("").starts_with("/login"),
        "{:?}",
        r.location
    );

    // Support reads the list and the detail, but may not redeliver.
    let mut support = signed_in(&app, Role::Support).await;
    let page = support.get("/console/deliveries?status=dead").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.contains("coupon.locked") && page.contains("data-testid=\"deliveries\""));
    assert!(page.contains("nav-deliveries"));
    let page = support.get("/console/deliveries?status=delivered").await;
    assert!(page.contains("no-deliveries"));
    let page = support.get(&format!("/console/deliveries/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("HTTP 500") && !page.contains("data-testid=\"redeliver\""));
    let csrf = support.csrf().await;
    let path = format!("/console/deliveries/{id}/redeliver");
    let r = support.post_form(&path, &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 403);

    // Operators: the confirmation page, then the POST with the token.
    let mut op = signed_in(&app, Role::Operator).await;
    let page = op.get(&format!("/console/deliveries/{id}")).await;
    assert!(page.contains("data-testid=\"redeliver\""));
    let confirm = op.get(&path).await;
    assert_eq!(confirm.status, 200);
    let csrf = confirm.csrf().expect("token on the form");
    let r = op.post_form(&path, &[("csrf", "wrong")]).await;
    assert_eq!(r.status, 403);
    assert_eq!(deliveries(&app.db.db).await[0].1, "dead");
    let r = op.post_form(&path, &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(deliveries(&app.db.db).await[0].1, "pending");
    receiver.answer(OK);
    assert_eq!(
        app.service
            .dispatch_once(100)
            .await
            .expect("dispatch")
            .delivered,
        1
    );
    let page = op.get(&format!("/console/deliveries/{id}")).await;
    assert!(page.contains("staff:operator-1") && page.contains("HTTP 200"));
}

#[tokio::test]
async fn console_subscribers_get_only_their_types_and_their_secret_is_never_shown() {
    let receiver = Receiver::start().await;
    let second = Receiver::start().await;
    let w = WebhookSettings {
        allow_networks: loopback(),
        ..settings(&receiver.url, 8, 5)
    };
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await;
    let secret = "second-secret-0123456789-WXYZ";
    let s = &app.service;
    assert!(
        s.add_webhook_subscriber("ftp://example.com/h", secret, &[], &op())
            .await
            .is_err(),
        "only https:// and http:// receivers"
    );
    assert!(
        s.add_webhook_subscriber(&second.url, "short", &[], &op())
            .await
            .is_err()
    );
    let sub = s
        .add_webhook_subscriber(&second.url, secret, &["coupon.used".into()], &op())
        .await
        .expect("added");
    assert_eq!(sub.secret_hint, "…WXYZ");
    let listed = s.webhook_subscribers().await.expect("list");
    assert_eq!(listed.len(), 2, "the environment's and the new one");
    assert!(
        format!("{listed:?}").find(secret).is_none(),
        "no secret in views"
    );

    let a = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    app.post("/api/v1/orders/N1/pay", json!({})).await;
    // Two steps: u1's coupon.used waits for its coupon.locked (order).
    s.dispatch_once(100).await.expect("dispatch");
    s.dispatch_once(100).await.expect("dispatch");
    assert_eq!(receiver.ids().await.len(), 2, "default: every type");
    let got = second.got.lock().await.clone();
    assert_eq!(got.len(), 1, "second: coupon.used only");
    assert!(got[0].1.contains("\"type\":\"coupon.used\""));
    assert!(
        !verify(&got[0].0, &got[0].1),
        "signed with its own secret, not the default"
    );

    // Disabled: no new deliveries to it.
    s.disable_webhook_subscriber(&sub.id, &op())
        .await
        .expect("disable");
    assert!(s.disable_webhook_subscriber(&sub.id, &op()).await.is_err());
    app.post("/api/v1/orders/N1/refund", json!({"reason": "r"}))
        .await;
    s.dispatch_once(100).await.expect("dispatch");
    s.dispatch_once(100).await.expect("dispatch");
    assert_eq!(second.got.lock().await.len(), 1);
    assert_eq!(receiver.ids().await.len(), 3);
}

/// Runs dispatcher turns until `done` holds or `turns` have run.
async fn turn_until(
    d: &mut Dispatcher,
    turns: usize,
    mut done: impl FnMut() -> bool,
) -> couponkeeper::service::webhooks::DispatchReport {
    let mut total = couponkeeper::service::webhooks::DispatchReport::default();
    for _ in 0..turns {
        if done() {
            break;
        }
        let t = d.turn(StdDuration::from_millis(100)).await.expect("turn");
        total.add(t.sends);
    }
    total
}

/// `n` users, each with a locked then released coupon: 2n messages.
async fn messages_of_users(app: &TestApp, n: usize) -> usize {
    for i in 0..n {
        let user = format!("u{i}");
        let c = coupon_for(app, &user).await;
        let no = format!("N{i}");
        app.order(normal_order(&no, &user, Some(&c), 39900)).await;
        app.post(&format!("/api/v1/orders/{no}/cancel"), json!({}))
            .await;
    }
    outbox(&app.db.db).await.len()
}

#[tokio::test]
async fn the_dispatcher_keeps_at_most_the_configured_sends_in_flight_to_a_slow_receiver() {
    let receiver = Receiver::start().await;
    receiver.answer(SLOW);
    let w = WebhookSettings {
        concurrency: 3,
        ..settings(&receiver.url, 8, 5)
    };
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await;
    let messages = messages_of_users(&app, 12).await;
    assert_eq!(messages, 24);

    let mut d = Dispatcher::new(app.service.clone());
    turn_until(&mut d, 2000, || {
        receiver.got.try_lock().map(|g| g.len()).unwrap_or(0) >= messages
    })
    .await;
    d.drain(StdDuration::from_secs(5)).await;
    let mut ids = receiver.ids().await;
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), messages, "every message delivered");
    assert_eq!(receiver.ids().await.len(), messages, "none twice");
    assert_eq!(
        receiver.most_open.load(Ordering::SeqCst),
        3,
        "three sends at a time, never more"
    );
    let statuses = deliveries(&app.db.db).await;
    assert!(statuses.iter().all(|d| d.1 == "delivered"), "{statuses:?}");
}

#[tokio::test]
async fn a_hanging_subscriber_holds_up_only_its_own_deliveries() {
    let hanging = Receiver::start().await;
    hanging.answer(HANG);
    let healthy = Receiver::start().await;
    let w = WebhookSettings {
        concurrency: 2,
        allow_networks: loopback(),
        ..settings(&hanging.url, 8, 30)
    };
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await;
    app.service
        .add_webhook_subscriber(&healthy.url, "healthy-secret-0123456789", &[], &op())
        .await
        .expect("second subscriber");
    let messages = messages_of_users(&app, 6).await;
    assert_eq!(messages, 12);

    let mut d = Dispatcher::new(app.service.clone());
    turn_until(&mut d, 500, || {
        healthy.got.try_lock().map(|g| g.len()).unwrap_or(0) >= messages
    })
    .await;
    assert_eq!(
        healthy.ids().await.len(),
        messages,
        "the healthy subscriber got everything while the other hangs"
    );
    assert_eq!(
        hanging.got.lock().await.len(),
        2,
        "the hanging one holds its own two slots and no more"
    );
    assert_eq!(d.in_flight(), 2);
    // Stopping leaves the two hanging sends to their leases.
    let stopped = d.drain(StdDuration::from_millis(50)).await;
    assert_eq!(stopped.sent, 0);
    let pending = deliveries(&app.db.db)
        .await
        .into_iter()
        .filter(|d| d.1 == "pending")
        .count();
    assert_eq!(pending, messages, "the hanging subscriber's, all pending");
}

/// An operator's context, as the console passes it.
fn op() -> Ctx {
    Ctx::new("staff:op", None).with_address(Some("10.0.0.9".into()))
}

#[tokio::test]
async fn the_per_subscriber_claim_reads_its_own_index_and_probes_each_users_earliest_message() {
    use couponkeeper::domain::ids::SubscriberId;
    use couponkeeper::store::Backend;
    use couponkeeper::store::deliveries::{ClaimScope, claim_due_sql};

    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let pool = app.db.db.pool();
    // A burst: 4,000 pending deliveries of two subscribers, two per user,
    // into a table whose statistics were never gathered (the case in which
    // PostgreSQL once planned an anti join rescanning every pending row).
    for chunk in 0..20 {
        let values: Vec<String> = (0..200)
            .map(|i| {
                let n = chunk * 200 + i;
                let sub = if n % 2 == 0 { "s1" } else { "s2" };
                format!(
                    "({n}, '{sub}', 'coupon.expired', 'u{}', 'pending', 0, {n}, {n}, {n})",
                    n / 4
                )
            })
            .collect();
        sqlx::query(&format!(
            "INSERT INTO deliveries (outbox_id, subscriber_id, event_type, user_id, status, \
             attempts, next_attempt_at, created_at, updated_at) VALUES {}",
            values.join(", ")
        ))
        .execute(pool)
        .await
        .expect("insert deliveries");
    }
    let backend = app.db.db.backend();
    let sql = claim_due_sql(backend, ClaimScope::Subscriber(&SubscriberId::from("s1")));
    let explain = crate::common::explain_sql(backend, &sql);
    let mut conn = pool.acquire().await.expect("connection");
    let rows = sqlx::query(&explain)
        .bind(1_000_000_i64)
        .bind(2_000_000_i64)
        .bind(16_i64)
        .bind("s1")
        .fetch_all(&mut *conn)
        .await
        .expect("explain");
    let plan = crate::common::plan_text(&rows, backend);
    println!("{plan}");
    assert!(plan.contains("deliveries_sub_due_idx"), "{plan}");
    assert!(plan.contains("deliveries_user_idx"), "{plan}");
    for bad in [
        "Anti Join",
        "Seq Scan",
        "Sort",
        "SCAN d",
        "SCAN e",
        "TEMP B-TREE",
    ] {
        assert!(!plan.contains(bad), "no {bad}:\n{plan}");
    }
    // The picked rows are updated by primary key, not by re-reading every
    // due delivery.
    match backend {
        Backend::Postgres => {
            assert!(plan.contains("deliveries_pkey"), "{plan}");
            assert!(!plan.contains("Bitmap"), "{plan}");
        }
        Backend::Sqlite => {
            assert!(!plan.contains("deliveries_due_idx"), "{plan}");
            assert!(plan.contains("INTEGER PRIMARY KEY"), "{plan}");
        }
    }

    // And it takes the right ones: each s1 user's earliest, oldest first.
    let claimed = couponkeeper::store::deliveries::claim_due(
        &mut conn,
        ClaimScope::Subscriber(&SubscriberId::from("s1")),
        1_000_000,
        2_000_000,
        16,
    )
    .await
    .expect("claim");
    let got: Vec<(i64, SubscriberId)> = claimed
        .iter()
        .map(|d| (d.outbox_id, d.subscriber_id.clone()))
        .collect();
    let want: Vec<(i64, SubscriberId)> =
        (0..16).map(|k| (4 * k, SubscriberId::from("s1"))).collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn fan_out_reads_the_oldest_undispatched_messages_from_their_partial_index() {
    use couponkeeper::store::Backend;
    use couponkeeper::store::deliveries::UNDISPATCHED_SQL;

    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let pool = app.db.db.pool();
    // A burst of 3,000 messages, 2,900 of them fanned out since, statistics
    // never gathered.
    for chunk in 0..15 {
        let values: Vec<String> = (0..200)
            .map(|i| {
                let n = chunk * 200 + i;
                format!("('coupon.expired', 'u{n}', 'c{n}', '{{}}', {n}, NULL)")
            })
            .collect();
        sqlx::query(&format!(
            "INSERT INTO outbox (event_type, user_id, subject_id, payload, created_at, \
             dispatched_at) VALUES {}",
            values.join(", ")
        ))
        .execute(pool)
        .await
        .expect("insert outbox");
    }
    sqlx::query(
        "UPDATE outbox SET dispatched_at = 1 WHERE id IN \
         (SELECT id FROM outbox ORDER BY id LIMIT 2900)",
    )
    .execute(pool)
    .await
    .expect("dispatch most");
    let backend = app.db.db.backend();
    let explain = crate::common::explain_sql(backend, UNDISPATCHED_SQL);
    // In a transaction with the settings `undispatched` uses.
    let mut tx = pool.begin().await.expect("transaction");
    if backend == Backend::Postgres {
        couponkeeper::store::deliveries::prefer_index_order(&mut tx, true)
            .await
            .expect("settings");
    }
    let rows = sqlx::query(&explain)
        .bind(500_i64)
        .fetch_all(&mut *tx)
        .await
        .expect("explain");
    let plan = crate::common::plan_text(&rows, backend);
    tx.rollback().await.expect("rollback");
    println!("{plan}");
    assert!(plan.contains("outbox_undispatched_idx"), "{plan}");
    for bad in ["Sort", "Bitmap", "Seq Scan", "TEMP B-TREE"] {
        assert!(!plan.contains(bad), "no {bad}:\n{plan}");
    }
    assert!(
        !plan.lines().any(|l| l.trim() == "SCAN outbox"),
        "no full scan:\n{plan}"
    );
    let ids: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY id")
            .fetch_all(pool)
            .await
            .expect("undispatched ids");
    let mut tx = pool.begin().await.expect("transaction");
    let got: Vec<i64> = couponkeeper::store::deliveries::undispatched(&mut tx, 500)
        .await
        .expect("undispatched")
        .iter()
        .map(|m| m.id)
        .collect();
    tx.rollback().await.expect("rollback");
    assert_eq!(got.len(), 100);
    assert_eq!(got, ids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_running_jobs_deliver_a_coupon_change_and_record_the_dispatcher_run() {
    use couponkeeper::jobs::JobSettings;
    use couponkeeper::jobs::Jobs;
    use couponkeeper::metrics::Metrics;

    let receiver = Receiver::start().await;
    let app = app_with(&receiver, 8, 5).await;
    let jobs = Jobs::start(
        app.service.clone(),
        JobSettings::default(),
        Arc::new(Metrics::default()),
    );
    let c = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&c), 39900)).await;
    // The dispatcher looks every second when idle; give it at most 10 s.
    for _ in 0..100 {
        if deliveries(&app.db.db)
            .await
            .first()
            .is_some_and(|d| d.1 == "delivered")
        {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(100)).await;
    }
    jobs.stop().await;
    let bodies = receiver.bodies().await;
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert_eq!(bodies[0]["type"], "coupon.locked");
    let (headers, body) = receiver.got.lock().await[0].clone();
    assert!(verify(&headers, &body));
    assert_eq!(deliveries(&app.db.db).await[0].1, "delivered");
    let runs: i64 = sqlx::query_scalar(
        "SELECT CAST(COUNT(*) AS BIGINT) FROM job_runs WHERE job = 'webhook-dispatch'",
    )
    .fetch_one(app.db.db.pool())
    .await
    .expect("job runs");
    assert!(runs >= 1, "the dispatcher's work is recorded");
}

/// A subscriber row written straight into the table, past the console's
/// check (an old row, a restore, a hand-made insert).
async fn insert_subscriber_row(app: &TestApp, id: &str, url: &str) {
    sqlx::query(
        "INSERT INTO webhook_subscribers (id, url, secret, event_types, enabled, created_by, created_at) \
         VALUES ($1, $2, $3, '*', 1, 'sql', 0)",
    )
    .bind(id)
    .bind(url)
    .bind(SECRET)
    .execute(app.db.db.pool())
    .await
    .expect("insert subscriber row");
}

/// (subscriber, status, attempts, last_error) of the console subscribers'
/// deliveries.
async fn console_deliveries(app: &TestApp) -> Vec<(String, String, i64, Option<String>)> {
    sqlx::query_as(
        "SELECT subscriber_id, status, attempts, last_error FROM deliveries \
         WHERE subscriber_id <> 'default' ORDER BY subscriber_id",
    )
    .fetch_all(app.db.db.pool())
    .await
    .expect("read deliveries")
}

#[tokio::test]
async fn a_subscriber_row_on_this_host_is_never_sent_to_and_its_attempts_say_blocked() {
    // The environment's subscriber on this host is trusted; the rows point
    // at another receiver listening here.
    let trusted = Receiver::start().await;
    let internal = Receiver::start().await;
    let app = app_with(&trusted, 8, 5).await;
    let port = internal
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/hook")
        .to_string();
    for (id, url) in [
        ("whk_literal", internal.url.clone()),
        ("whk_decimal", format!("http://2130706433:{port}/hook")),
        ("whk_hex", format!("http://0x7f.1:{port}/hook")),
        ("whk_localhost", format!("http://localhost:{port}/hook")),
        (
            "whk_mapped",
            format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        ),
    ] {
        insert_subscriber_row(&app, id, &url).await;
    }
    let a = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(trusted.ids().await.len(), 1, "the environment's subscriber");

    let check = |rows: Vec<(String, String, i64, Option<String>)>, attempts: i64| {
        assert_eq!(rows.len(), 5, "{rows:?}");
        for (sub, status, n, error) in rows {
            let error = error.unwrap_or_default();
            assert_eq!(
                (status.as_str(), n),
                ("pending", attempts),
                "{sub}: {error}"
            );
            assert!(
                error.starts_with("blocked: ") && error.contains("loopback"),
                "{sub}: {error}"
            );
            assert_eq!(classify(None, Some(&error)), AttemptClass::Refused, "{sub}");
        }
    };
    check(console_deliveries(&app).await, 1);
    // Retried like any failure, and refused again.
    app.advance(3600);
    app.service.dispatch_once(100).await.expect("dispatch");
    check(console_deliveries(&app).await, 2);
    assert!(
        internal.got.lock().await.is_empty(),
        "no request reached the receiver behind the rows"
    );
    let attempts: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM delivery_attempts WHERE error LIKE 'blocked: %'")
            .fetch_one(app.db.db.pool())
            .await
            .expect("count");
    assert_eq!(attempts, 10, "every attempt recorded as blocked");
}

#[tokio::test]
async fn with_the_allow_list_a_subscriber_on_this_host_is_delivered_to() {
    let receiver = Receiver::start().await;
    let w = WebhookSettings {
        allow_networks: loopback(),
        ..WebhookSettings::default()
    };
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await;
    insert_subscriber_row(&app, "whk_row", &receiver.url).await;
    let a = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(report.delivered, 1, "{report:?}");
    let got = receiver.got.lock().await.clone();
    assert_eq!(got.len(), 1);
    assert!(verify(&got[0].0, &got[0].1), "signed with the row's secret");
    // And one added through the service (the console's path).
    app.service
        .add_webhook_subscriber(&receiver.url, "console-secret-0123456789", &[], &op())
        .await
        .expect("allowed on this host");
    app.post("/api/v1/orders/N1/cancel", json!({})).await;
    app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!(receiver.got.lock().await.len(), 3, "both subscribers");
    let rows = console_deliveries(&app).await;
    assert!(rows.iter().all(|r| r.1 == "delivered"), "{rows:?}");
}

#[tokio::test]
async fn support_sees_only_the_failure_class_of_an_attempt_and_operators_the_error() {
    use crate::common::console::signed_in;
    use couponkeeper::domain::staff::Role;

    // A port on this host nobody listens on: a real "connection refused".
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{closed}/hook");
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = settings(&url, 8, 5))
        .start()
        .await;
    let a = coupon_for(&app, "u1").await;
    app.order(normal_order("N1", "u1", Some(&a), 39900)).await;
    app.service.dispatch_once(100).await.expect("dispatch");
    let id = deliveries(&app.db.db).await[0].0;
    let view = app.service.delivery(id).await.expect("delivery");
    let refused = view.last_error.clone().unwrap_or_default();
    assert_eq!(
        classify(None, Some(&refused)),
        AttemptClass::Refused,
        "{refused}"
    );
    // More attempts, as the sender records them, naming inside addresses.
    let recorded: [(Option<i64>, &str); 5] = [
        (None, "timed out after 5 s"),
        (
            None,
            "cannot connect: error sending request for url (https://10.9.8.7:8443/hook): client error (Connect): invalid peer certificate: UnknownIssuer",
        ),
        (
            None,
            "cannot connect: error sending request for url (http://internal-db.corp:5432/): client error (Connect): dns error: failed to lookup address information: Name or service not known",
        ),
        (Some(503), "HTTP 503"),
        (
            None,
            "blocked: \"rebind.test\" resolves to 10.9.8.7, a private network address, not in COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS",
        ),
    ];
    for (code, error) in recorded {
        sqlx::query(
            "INSERT INTO delivery_attempts (delivery_id, at, status_code, error, duration_ms, actor) \
             VALUES ($1, $2, $3, $4, 3, 'job:webhook-dispatcher')",
        )
        .bind(id)
        .bind(to_ms(app.now()))
        .bind(code)
        .bind(error)
        .execute(app.db.db.pool())
        .await
        .expect("insert attempt");
    }

    let raw_texts = [
        "cannot connect",
        "os error",
        "tcp connect error",
        "10.9.8.7",
        "8443",
        "internal-db",
        "5432",
        "UnknownIssuer",
        "rebind.test",
        "blocked:",
        "failed to lookup",
    ];
    let mut support = signed_in(&app, Role::Support).await;
    for path in [
        format!("/console/deliveries/{id}"),
        "/console/deliveries".to_string(),
    ] {
        let page = support.get(&path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.text);
        for raw in raw_texts {
            assert!(!page.contains(raw), "{path}: support sees {raw:?}");
        }
        assert!(!page.contains(&refused), "{path}: the recorded error");
        for (class, text) in [
            ("refused", "连接被拒绝（或地址不允许）"),
            ("timeout", "超时"),
            ("tls", "TLS 握手失败"),
            ("dns", "域名解析失败"),
            ("http_5xx", "HTTP 503"),
        ] {
            assert!(
                page.contains(&format!("data-class=\"{class}\"")),
                "{path}: {class}"
            );
            assert!(page.contains(text), "{path}: {text}");
        }
    }
    let page = support.get(&format!("/console/deliveries/{id}")).await;
    let last = page
        .text
        .split("data-testid=\"last-result\"")
        .nth(1)
        .unwrap_or_default();
    assert!(last.contains("data-class=\"refused\""), "{last}");
    support.accept_language = Some("en".into());
    let page = support.get(&format!("/console/deliveries/{id}")).await;
    assert!(page.contains("refused (connection refused or address not allowed)"));
    assert!(page.contains("DNS lookup failed") && page.contains("TLS handshake failed"));

    // Operators configure subscribers: they see what was recorded.
    let mut op = signed_in(&app, Role::Operator).await;
    let page = op.get(&format!("/console/deliveries/{id}")).await;
    assert_eq!(page.status, 200);
    for raw in [
        "cannot connect",
        "10.9.8.7:8443",
        "internal-db.corp",
        "blocked: ",
        "HTTP 503",
    ] {
        assert!(page.contains(raw), "operators see {raw:?}");
    }
    assert!(page.contains(&format!("127.0.0.1:{closed}")));
}
