//! [`AppState`]: what every handler, page and middleware of the HTTP layer
//! may use (the service, the metrics, the console and self-check settings,
//! the API tokens' hashes, the rate limiters), and [`ApiCaller`], the
//! caller a bearer token stands for.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::limits;
use crate::metrics::Metrics;
use crate::service::Service;
use crate::service::idempotency::token_scope;
use crate::service::self_check::SelfCheckSettings;
use crate::web::settings::ConsoleSettings;

/// Everything a handler may use.
#[derive(Clone)]
pub struct AppState {
    pub service: Service,
    pub metrics: Arc<Metrics>,
    /// Console cookie and session settings.
    pub console: Arc<ConsoleSettings>,
    /// The customers' self-check links: secret, public base URL, lifetime.
    pub self_check: Arc<SelfCheckSettings>,
    /// SHA-256 of each configured API token; tokens themselves are not kept
    /// around longer than start-up.
    token_hashes: Arc<Vec<[u8; 32]>>,
    /// Request rate limits and the trusted proxies ([`limits`]).
    pub limiters: Arc<limits::Limiters>,
    /// Set when the process begins its drain: `/readyz` answers 503 from
    /// then on.
    pub draining: Draining,
    /// SHA-256 of `COUPONKEEPER_METRICS_TOKEN`, when set: `/metrics` then
    /// answers only requests bearing it.
    metrics_token_hash: Option<[u8; 32]>,
    /// Console file uploads being read ([`AppState::upload_slot`]).
    uploads: Arc<tokio::sync::Semaphore>,
    /// `COUPONKEEPER_BODY_READ_TIMEOUT_SECONDS`: how long a request body
    /// may take to arrive ([`super::serve`]).
    pub body_read_timeout: std::time::Duration,
}

/// Most console file uploads (bulk issue, bulk void) read at once by this
/// process; each may be up to 64 MiB.
pub const MAX_CONCURRENT_UPLOADS: usize = 2;
/// Longest an upload waits for a slot before it is answered 503.
pub const UPLOAD_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// The `Retry-After` of that 503, in seconds.
pub const UPLOAD_RETRY_AFTER_SECONDS: u64 = 10;

/// Whether the process is draining (after SIGTERM): shared between
/// `serve`, which starts the drain, and `/readyz`, which reports it so a
/// load balancer stops sending this instance new requests.
#[derive(Debug, Clone, Default)]
pub struct Draining(Arc<std::sync::atomic::AtomicBool>);

impl Draining {
    /// Marks the drain as begun; there is no way back.
    pub fn start(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl AppState {
    pub fn new(service: Service, metrics: Arc<Metrics>, tokens: &[String]) -> Self {
        let token_hashes = tokens
            .iter()
            .map(|t| Sha256::digest(t.as_bytes()).into())
            .collect();
        AppState {
            service,
            metrics,
            console: Arc::new(ConsoleSettings::default()),
            self_check: Arc::new(SelfCheckSettings::default()),
            token_hashes: Arc::new(token_hashes),
            limiters: Arc::new(limits::Limiters::default()),
            draining: Draining::default(),
            metrics_token_hash: None,
            uploads: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_UPLOADS)),
            body_read_timeout: std::time::Duration::from_secs(
                super::serve::DEFAULT_BODY_READ_TIMEOUT_SECONDS,
            ),
        }
    }

    /// A slot to read one console upload in, held until dropped; `None`
    /// when every slot stayed busy for [`UPLOAD_WAIT`].
    pub async fn upload_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        tokio::time::timeout(UPLOAD_WAIT, self.uploads.clone().acquire_owned())
            .await
            .ok()?
            .ok()
    }

    /// The same state with `/metrics` behind this token (`None`: open).
    pub fn with_metrics_token(mut self, token: Option<&str>) -> Self {
        self.metrics_token_hash = token.map(|t| Sha256::digest(t.as_bytes()).into());
        self
    }

    /// The same state with this request-body read timeout.
    pub fn with_body_read_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Whether a `/metrics` request may read the metrics: always when no
    /// token is configured, else only with `Authorization: Bearer <token>`
    /// (compared as hashes, in constant time).
    pub fn metrics_allowed(&self, authorization: Option<&str>) -> bool {
        let Some(expected) = &self.metrics_token_hash else {
            return true;
        };
        let Some(token) = authorization.and_then(|v| v.strip_prefix("Bearer ")) else {
            return false;
        };
        let h: [u8; 32] = Sha256::digest(token.trim().as_bytes()).into();
        expected
            .iter()
            .zip(h.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// The same state reporting this drain flag.
    pub fn with_draining(mut self, draining: Draining) -> Self {
        self.draining = draining;
        self
    }

    /// The same state with these rate limits and trusted proxies.
    pub fn with_limits(mut self, limits: &limits::HttpLimits) -> Self {
        self.limiters = Arc::new(limits::Limiters::new(limits));
        self
    }

    /// The same state with these console settings.
    pub fn with_console(mut self, console: ConsoleSettings) -> Self {
        self.console = Arc::new(console);
        self
    }

    /// The same state with these self-check link settings.
    pub fn with_self_check(mut self, settings: SelfCheckSettings) -> Self {
        self.self_check = Arc::new(settings);
        self
    }

    /// The caller a bearer token stands for. Compares hashes in constant
    /// time, so response timing says nothing about how close a guess was.
    pub fn authenticate(&self, token: &str) -> Option<ApiCaller> {
        let h: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = false;
        for known in self.token_hashes.iter() {
            let diff = known
                .iter()
                .zip(h.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            found |= diff == 0;
        }
        found.then(|| {
            let scope = token_scope(token);
            ApiCaller {
                actor: format!("api:{}", &scope[..12]),
                scope,
            }
        })
    }
}

/// An authenticated API caller.
#[derive(Debug, Clone)]
pub struct ApiCaller {
    /// Hash of the token: idempotency scope.
    pub scope: String,
    /// `api:<first 12 hex digits of the token hash>` for event rows.
    pub actor: String,
}
