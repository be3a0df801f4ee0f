//! Sending one claimed delivery: the signed POST through the guarded
//! client of [`super::client`], no transaction and no connection held, and
//! its outcome for the delivery log.

use std::time::Instant;

use super::attempt::{ClaimedDelivery, SendOutcome};
use super::client::error_chain;
use super::{SIGNATURE_HEADER, signature};
use crate::domain::trace::{TRACEPARENT, span_id_from, traceparent};
use crate::service::Service;
use crate::service::egress::{self, Blocked};

impl Service {
    /// POSTs a claimed delivery: no transaction, no connection held.
    pub async fn send_delivery(&self, d: &ClaimedDelivery) -> SendOutcome {
        let t = self.now().timestamp();
        let sig = signature(&d.secret, t, &d.body);
        let started = Instant::now();
        let clients = match &self.inner.http {
            Ok(clients) => clients,
            Err(e) => {
                return SendOutcome {
                    status_code: None,
                    error: Some(e.to_string()),
                    duration_ms: 0,
                };
            }
        };
        let http = if d.trusted {
            &clients.trusted
        } else {
            // An address in the URL never reaches the guarded resolver.
            let allow = &self.webhooks().allow_networks;
            let refused = reqwest::Url::parse(&d.url)
                .ok()
                .and_then(|url| egress::check_url_host(&url, allow).err());
            if let Some(blocked) = refused {
                return self.blocked(d, &blocked, 0);
            }
            &clients.guarded
        };
        let mut request = http.post(&d.url);
        if let Some(trace) = &d.trace {
            // This attempt is a span of couponkeeper's own in the
            // customer's trace.
            let span_id = span_id_from(rand::random());
            request = request.header(TRACEPARENT, traceparent(trace, &span_id));
        }
        let result = request
            .header("content-type", "application/json")
            .header(
                "user-agent",
                concat!("couponkeeper/", env!("CARGO_PKG_VERSION")),
            )
            .header(SIGNATURE_HEADER, sig)
            .body(d.body.clone())
            .send()
            .await;
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        match result {
            Ok(r) => SendOutcome {
                status_code: Some(r.status().as_u16()),
                error: None,
                duration_ms,
            },
            Err(e) => {
                if let Some(blocked) = egress::blocked_in(&e) {
                    return self.blocked(d, blocked, duration_ms);
                }
                SendOutcome {
                    status_code: None,
                    error: Some(if e.is_timeout() {
                        format!("timed out after {} s", self.webhooks().timeout_seconds)
                    } else if e.is_connect() {
                        // The causes say why: refused, DNS, or the TLS
                        // handshake (an untrusted or expired certificate, a
                        // wrong name).
                        format!("cannot connect: {}", error_chain(&e))
                    } else {
                        error_chain(&e)
                    }),
                    duration_ms,
                }
            }
        }
    }

    /// A send the address rule refused: a failed attempt saying so (and
    /// retried like any other: the allow-list or the name may change),
    /// logged here once.
    fn blocked(&self, d: &ClaimedDelivery, blocked: &Blocked, duration_ms: i64) -> SendOutcome {
        tracing::warn!(
            delivery = d.delivery.id,
            subscriber = ?d.delivery.subscriber_id,
            host = ?blocked.host,
            address = %blocked.addr,
            reason = blocked.kind.code(),
            "webhook delivery refused: the receiver's address is not allowed"
        );
        SendOutcome {
            status_code: None,
            error: Some(blocked.to_string()),
            duration_ms,
        }
    }
}
