//! Webhook delivery to https:// receivers: a real TLS receiver started by
//! the test, with a CA and a leaf certificate for `localhost` made at test
//! time. Trusted through `COUPONKEEPER_WEBHOOK_CA_FILE`, deliveries arrive
//! signed and are marked delivered; not trusted, every attempt fails with
//! the certificate named, is retried and is never marked delivered. A CA
//! file that cannot be used is a start error, never a silent fallback.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::common::{TestApp, normal_order};
use couponkeeper::config::{Config, ConfigError};
use couponkeeper::service::webhooks::WebhookSettings;

const SECRET: &str = "whsec_tls_test_0123456789abcdef";
const CA_VAR: &str = "COUPONKEEPER_WEBHOOK_CA_FILE";

/// A test CA and a leaf certificate for `localhost` that it signed.
struct Pki {
    ca_pem: String,
    leaf: CertificateDer<'static>,
    leaf_key: Vec<u8>,
}

impl Pki {
    fn new() -> Pki {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, KeyUsagePurpose,
        };
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "couponkeeper test CA");
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);

        let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).expect("leaf params");
        leaf.distinguished_name
            .push(DnType::CommonName, "localhost");
        leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let leaf_key = KeyPair::generate().expect("leaf key");
        let leaf_cert = leaf
            .signed_by(&leaf_key, &issuer)
            .expect("leaf certificate");
        Pki {
            ca_pem: ca_cert.pem(),
            leaf: leaf_cert.der().clone(),
            leaf_key: leaf_key.serialize_der(),
        }
    }
}

/// One request as the receiver read it.
#[derive(Debug, Clone)]
struct Request {
    line: String,
    headers: HashMap<String, String>,
    body: String,
}

/// An HTTPS receiver on 127.0.0.1 serving the leaf certificate: a minimal
/// HTTP/1.1 responder (one request per connection, always 200).
struct TlsReceiver {
    url: String,
    got: Arc<Mutex<Vec<Request>>>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsReceiver {
    async fn start(pki: &Pki) -> TlsReceiver {
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![pki.leaf.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(pki.leaf_key.clone())),
            )
            .expect("server certificate");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let port = listener.local_addr().expect("addr").port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let sink = sink.clone();
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the
                    // handshake: nothing to record.
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        let _ = answer_one(tls, sink).await;
                    }
                });
            }
        });
        TlsReceiver {
            url: format!("https://localhost:{port}/hook"),
            got,
            task,
        }
    }
}

impl Drop for TlsReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request (head and `content-length` body), records it and
/// answers 200.
async fn answer_one(
    mut s: impl AsyncRead + AsyncWrite + Unpin,
    sink: Arc<Mutex<Vec<Request>>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let start = head_end + 4;
    while buf.len() < start + len {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[start..(start + len).min(buf.len())]).into_owned();
    sink.lock().await.push(Request {
        line,
        headers,
        body,
    });
    s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .await?;
    s.shutdown().await
}

/// The `Couponkeeper-Signature` header verifies for `body` (as in
/// tests/system/delivery.rs).
fn verify(headers: &HashMap<String, String>, body: &str) -> bool {
    let Some(sig) = headers.get("couponkeeper-signature") else {
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

/// The configuration read from these variables, as at start.
fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|k| map.get(k).cloned())
}

/// Webhook settings for `url`, trusting the roots in `ca_file` if given.
fn settings(url: &str, ca_file: Option<&Path>, max_attempts: &str) -> WebhookSettings {
    let ca = ca_file.map(|p| p.display().to_string());
    let mut vars = vec![
        ("COUPONKEEPER_WEBHOOK_URL", url),
        ("COUPONKEEPER_WEBHOOK_SECRET", SECRET),
        ("COUPONKEEPER_WEBHOOK_TIMEOUT_SECONDS", "5"),
        ("COUPONKEEPER_WEBHOOK_MAX_ATTEMPTS", max_attempts),
    ];
    if let Some(ca) = &ca {
        vars.push((CA_VAR, ca));
    }
    config(&vars).expect("configuration").webhooks
}

/// A pending webhook: user u1 claims a coupon and locks it in an order.
async fn one_webhook(app: &TestApp) {
    let t = app.template(serde_json::json!({})).await;
    let coupon = app
        .claim("u1", t["id"].as_str().expect("template id"))
        .await["id"]
        .as_str()
        .expect("coupon id")
        .to_string();
    let r = app
        .order(normal_order("N1", "u1", Some(&coupon), 39900))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
}

/// (id, status, attempts, next_attempt_at) of the only delivery.
async fn only_delivery(app: &TestApp) -> (i64, String, i64, i64) {
    let rows: Vec<(i64, String, i64, i64)> =
        sqlx::query_as("SELECT id, status, attempts, next_attempt_at FROM deliveries ORDER BY id")
            .fetch_all(app.db.db.pool())
            .await
            .expect("read deliveries");
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0].clone()
}

#[tokio::test]
async fn a_delivery_to_an_https_receiver_signed_by_the_configured_ca_arrives_signed_and_is_marked_delivered()
 {
    let pki = Pki::new();
    let receiver = TlsReceiver::start(&pki).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let ca_file = dir.path().join("private-ca.pem");
    std::fs::write(&ca_file, &pki.ca_pem).expect("write CA file");
    let w = settings(&receiver.url, Some(&ca_file), "8");
    assert_eq!(w.extra_roots.len(), 1, "the CA file's one certificate");
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await;
    one_webhook(&app).await;

    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!((report.fanned_out, report.delivered), (1, 1), "{report:?}");
    let got = receiver.got.lock().await.clone();
    assert_eq!(got.len(), 1, "{got:?}");
    let req = &got[0];
    assert_eq!(req.line, "POST /hook HTTP/1.1");
    assert!(
        verify(&req.headers, &req.body),
        "signature verifies: {req:?}"
    );
    assert!(!verify(&req.headers, &req.body.replace("u1", "u9")));
    let body: Value = serde_json::from_str(&req.body).expect("JSON body");
    assert_eq!(body["type"], "coupon.locked");
    assert_eq!(body["user_id"], "u1");

    let (id, status, attempts, _) = only_delivery(&app).await;
    assert_eq!((status.as_str(), attempts), ("delivered", 1));
    let view = app.service.delivery(id).await.expect("delivery view");
    assert_eq!(view.history.len(), 1);
    assert_eq!(view.history[0].status_code, Some(200));
    assert_eq!(view.history[0].error, None);
}

#[tokio::test]
async fn an_https_receiver_with_an_untrusted_certificate_fails_naming_the_certificate_is_retried_and_never_delivered()
 {
    let pki = Pki::new();
    let receiver = TlsReceiver::start(&pki).await;
    // No CA file: the test CA is in no trusted root store.
    let w = settings(&receiver.url, None, "3");
    assert!(w.extra_roots.is_empty());
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await;
    one_webhook(&app).await;

    for attempt in 1..=3 {
        let report = app.service.dispatch_once(100).await.expect("dispatch");
        assert_eq!((report.sent, report.delivered), (1, 0), "{report:?}");
        let (id, status, attempts, next) = only_delivery(&app).await;
        assert_eq!(attempts, attempt);
        assert_eq!(
            status,
            if attempt < 3 { "pending" } else { "dead" },
            "attempt {attempt}"
        );
        let view = app.service.delivery(id).await.expect("delivery view");
        let last = view.history.last().expect("an attempt");
        assert_eq!(last.status_code, None);
        let error = last.error.clone().unwrap_or_default();
        assert!(
            error.to_lowercase().contains("certificate"),
            "the error names the certificate: {error:?}"
        );
        assert_eq!(view.last_error.as_deref(), Some(error.as_str()));
        // Not due again before its backoff.
        assert_eq!(app.service.dispatch_once(100).await.expect("early").sent, 0);
        app.clock.set(couponkeeper::domain::time::from_ms(next));
    }
    assert!(
        receiver.got.lock().await.is_empty(),
        "no request crossed the refused handshake"
    );
    let (_, status, attempts, _) = only_delivery(&app).await;
    assert_eq!((status.as_str(), attempts), ("dead", 3), "never delivered");
}

#[tokio::test]
async fn a_missing_unreadable_or_invalid_ca_file_is_a_start_error_naming_the_variable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("no-such-ca.pem");
    let not_pem = dir.path().join("notes.txt");
    std::fs::write(&not_pem, "just some text\n").expect("write");
    let key_only = dir.path().join("key.pem");
    std::fs::write(
        &key_only,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    )
    .expect("write");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n",
    )
    .expect("write");
    let cases = [
        (missing.as_path(), "cannot read"),
        (dir.path(), "cannot read"),
        (not_pem.as_path(), "no PEM certificate"),
        (key_only.as_path(), "no PEM certificate"),
        (garbage.as_path(), "is not usable as a root"),
    ];
    for (path, expected) in cases {
        let shown = path.display().to_string();
        let e = config(&[(CA_VAR, &shown)]).expect_err("an unusable CA file stops the start");
        assert_eq!(e.var, CA_VAR, "{shown}: {e}");
        assert!(
            e.message.contains(expected) && e.message.contains(&shown),
            "{shown}: expected {expected:?} and the path in {:?}",
            e.message
        );
    }

    let good = dir.path().join("ca.pem");
    std::fs::write(&good, Pki::new().ca_pem).expect("write");
    let c = config(&[(CA_VAR, &good.display().to_string())]).expect("a good CA file");
    assert_eq!(c.webhooks.extra_roots.len(), 1);
    assert_eq!(c.webhooks.ca_file.as_deref(), Some(good.as_path()));
    assert!(
        config(&[])
            .expect("defaults")
            .webhooks
            .extra_roots
            .is_empty(),
        "no CA file: the bundled roots only"
    );
}

#[tokio::test]
async fn roots_the_client_cannot_use_stop_the_start_and_never_fall_back_to_a_default_client() {
    let dir = tempfile::tempdir().expect("temp dir");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n",
    )
    .expect("write");
    let pki = Pki::new();
    let receiver = TlsReceiver::start(&pki).await;
    // Settings made by hand, past the checks of Config::from_env.
    let w = WebhookSettings {
        default_url: Some(receiver.url.clone()),
        default_secret: Some(SECRET.into()),
        ca_file: Some(garbage.clone()),
        extra_roots: reqwest::Certificate::from_pem_bundle(&std::fs::read(&garbage).expect("read"))
            .expect("decodes as PEM"),
        ..WebhookSettings::default()
    };
    let start = w.clone();
    let app = TestApp::builder()
        .with_config(move |c| c.webhooks = w)
        .start()
        .await;
    let cfg = Config {
        webhooks: start,
        ..Config::default()
    };
    let err = couponkeeper::server::try_build_service(
        &cfg,
        app.db.db.clone(),
        Arc::new(couponkeeper::clock::SystemClock),
    )
    .err()
    .expect("the start fails");
    assert!(err.to_string().contains(CA_VAR), "{err}");
    assert!(err.to_string().contains("garbage.pem"), "{err}");

    // The infallible builder (tests, bench) sends nothing instead.
    one_webhook(&app).await;
    let report = app.service.dispatch_once(100).await.expect("dispatch");
    assert_eq!((report.sent, report.delivered), (1, 0), "{report:?}");
    let (id, status, _, _) = only_delivery(&app).await;
    assert_eq!(status, "pending");
    let view = app.service.delivery(id).await.expect("delivery view");
    let error = view.last_error.unwrap_or_default();
    assert!(
        error.contains("cannot build the webhook HTTP client"),
        "{error:?}"
    );
    assert!(receiver.got.lock().await.is_empty());
}
