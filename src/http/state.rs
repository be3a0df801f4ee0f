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
}

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
        }
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
