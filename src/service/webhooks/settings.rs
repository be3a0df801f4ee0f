//! The delivery settings (configuration table): the environment's
//! subscriber, timeout, attempts, concurrency, extra roots and the
//! networks console subscribers may be in.

use std::path::PathBuf;

/// Delivery settings (configuration table).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// `COUPONKEEPER_WEBHOOK_URL`: the default subscriber, every type.
    pub default_url: Option<String>,
    /// `COUPONKEEPER_WEBHOOK_SECRET`: its signing secret.
    pub default_secret: Option<String>,
    /// `COUPONKEEPER_WEBHOOK_TIMEOUT_SECONDS`: the timeout of one attempt.
    pub timeout_seconds: i64,
    /// `COUPONKEEPER_WEBHOOK_MAX_ATTEMPTS`: attempts before a
    /// delivery is dead-lettered.
    pub max_attempts: i64,
    /// `COUPONKEEPER_WEBHOOK_CONCURRENCY`: most sends in flight
    /// to one subscriber per dispatcher. Each subscriber has its own slots,
    /// so a slow or hanging receiver only holds up its own deliveries.
    pub concurrency: usize,
    /// `COUPONKEEPER_WEBHOOK_CA_FILE`: the PEM file `extra_roots` was read
    /// from, for messages.
    pub ca_file: Option<PathBuf>,
    /// Root certificates trusted for `https://` receivers besides the
    /// bundled webpki (Mozilla) roots: a private CA's.
    pub extra_roots: Vec<reqwest::Certificate>,
    /// `COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS`: networks console subscribers
    /// may be in although they are not public (loopback, private, ...;
    /// [`crate::domain::network`]). Empty: public addresses only. The
    /// environment's subscriber is not checked.
    pub allow_networks: Vec<ipnet::IpNet>,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            default_url: None,
            default_secret: None,
            timeout_seconds: 10,
            max_attempts: 8,
            concurrency: 16,
            ca_file: None,
            extra_roots: Vec::new(),
            allow_networks: Vec::new(),
        }
    }
}

impl WebhookSettings {
    /// How long a claim holds a delivery: the send's timeout plus a margin
    /// for recording the outcome.
    pub fn lease_ms(&self) -> i64 {
        (self.timeout_seconds + 30) * 1000
    }
}
