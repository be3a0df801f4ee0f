//! The HTTP side of a delivery: the two clients (the environment's
//! subscriber resolves freely, console subscribers through the guarded
//! resolver), the extra roots of `COUPONKEEPER_WEBHOOK_CA_FILE`, and one
//! send, outside any transaction.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use super::WebhookSettings;
use crate::service::egress::{GuardedResolver, Lookup, SystemLookup};

/// Reads `COUPONKEEPER_WEBHOOK_CA_FILE`: one or more PEM certificates
/// (`-----BEGIN CERTIFICATE-----`). Unreadable, not PEM, or holding no
/// certificate: an error saying which.
pub fn read_ca_file(path: &Path) -> Result<Vec<reqwest::Certificate>, String> {
    let shown = path.display();
    let pem = std::fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|e| format!("{shown} is not a PEM certificate file: {}", error_chain(&e)))?;
    if certs.is_empty() {
        return Err(format!(
            "{shown} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        ));
    }
    Ok(certs)
}

/// An error with its causes, `outer: cause: root cause`: reqwest's own
/// message leaves out the cause (refused, DNS, an untrusted certificate).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

/// The webhook clients could not be built with the configured settings
/// (in practice: a `COUPONKEEPER_WEBHOOK_CA_FILE` certificate rustls does
/// not take as a root).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot build the webhook HTTP client: {0}")]
pub struct WebhookClientError(pub String);

/// The two HTTP clients of webhook sends, alike but for how they resolve:
/// the configured timeout, no redirects (a 3xx is a failed attempt, not a
/// hop to somewhere else, possibly inside), TLS (rustls) trusting the
/// bundled webpki roots plus `extra_roots`.
#[derive(Debug, Clone)]
pub struct WebhookClients {
    /// For the environment's subscriber (`COUPONKEEPER_WEBHOOK_URL`, set by
    /// whoever deploys): the system resolver, any address, the proxy
    /// variables as reqwest reads them.
    pub trusted: reqwest::Client,
    /// For console subscribers: resolves through [`GuardedResolver`], which
    /// refuses forbidden addresses on every connection; no proxy, since a
    /// proxy would resolve the name itself, past the check.
    pub guarded: reqwest::Client,
}

/// [`WebhookClients`] with the system resolver. An error, never a default
/// client without the configured roots.
pub fn http_clients(w: &WebhookSettings) -> Result<WebhookClients, WebhookClientError> {
    http_clients_with(w, Arc::new(SystemLookup))
}

/// [`WebhookClients`] whose guarded client resolves with `lookup`.
pub fn http_clients_with(
    w: &WebhookSettings,
    lookup: Arc<dyn Lookup>,
) -> Result<WebhookClients, WebhookClientError> {
    let builder = || {
        let mut builder = reqwest::Client::builder()
            .timeout(StdDuration::from_secs(
                u64::try_from(w.timeout_seconds.max(1)).unwrap_or(10),
            ))
            .redirect(reqwest::redirect::Policy::none());
        for cert in &w.extra_roots {
            builder = builder.add_root_certificate(cert.clone());
        }
        builder
    };
    let failed = |e: reqwest::Error| {
        let chain = error_chain(&e);
        WebhookClientError(match &w.ca_file {
            Some(path) => format!(
                "a certificate in {} is not usable as a root: {chain}",
                path.display()
            ),
            None => chain,
        })
    };
    let trusted = builder().build().map_err(failed)?;
    let guarded = builder()
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver::new(&w.allow_networks, lookup)))
        .build()
        .map_err(failed)?;
    Ok(WebhookClients { trusted, guarded })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn an_error_chain_names_every_cause_once() {
        let root = std::io::Error::other("invalid peer certificate: UnknownIssuer");
        let outer = std::io::Error::new(std::io::ErrorKind::ConnectionAborted, root);
        // io::Error shows its inner error's text itself: not repeated.
        assert_eq!(
            error_chain(&outer),
            "invalid peer certificate: UnknownIssuer"
        );
        #[derive(Debug)]
        struct Wrap(std::io::Error);
        impl std::fmt::Display for Wrap {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error sending request")
            }
        }
        impl std::error::Error for Wrap {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(
            error_chain(&Wrap(outer)),
            "error sending request: invalid peer certificate: UnknownIssuer"
        );
    }
}
