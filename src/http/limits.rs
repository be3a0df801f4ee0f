//! Who the client is, and how often it may ask: the client address behind
//! trusted proxies, and per-client request rate limits (token buckets,
//! GCRA, from the `governor` crate) on the sign-in form, the self-check
//! page and, when configured, the JSON API.
//!
//! - **Client address**: the TCP peer's, unless the peer is in
//!   `COUPONKEEPER_TRUSTED_PROXIES`; then the right-most address of
//!   `X-Forwarded-For` that is not itself a trusted proxy (the left part of
//!   that header is whatever the client chose to send). Every later use of
//!   "the client's address" (audit rows, sign-in limits, these buckets)
//!   reads the one [`ClientIp`] the middleware
//!   ([`super::middleware::limit`]) puts in the request.
//! - **Buckets**: `POST /login` per address (`COUPONKEEPER_RATE_LOGIN`,
//!   default `30/min`: an office behind one address signs in together), `/self-check` per address
//!   (`COUPONKEEPER_RATE_SELF_CHECK`, default `60/min`), `/api/v1` per API
//!   token (`COUPONKEEPER_RATE_API`, off by default: the shop's own back
//!   ends call from a few addresses, so an address limit would throttle
//!   the whole shop). Over the limit: 429 with `Retry-After` (seconds);
//!   the API's body is the JSON error `rate_limited`.
//! - **Failed code redemptions** (`POST /api/v1/users/{user_id}/redemptions`
//!   answered `code_not_found` or `code_already_redeemed`): per user
//!   (`COUPONKEEPER_RATE_REDEEM_FAILURES_USER`, default `5/min`) and per
//!   client address (`COUPONKEEPER_RATE_REDEEM_FAILURES_ADDRESS`, default
//!   `300/min`: the shop's back end calls from few addresses). Not a
//!   bucket of this process: a sliding window of failed or pending
//!   attempts in the database, reserved before the code is looked up
//!   ([`crate::service::Service::reserve_redemption`]), so it is atomic
//!   under a parallel burst and shared by every instance. This module only
//!   reads the settings ([`Limiters::redeem_limits`]).
//! - The buckets live in this process: with N instances behind a load
//!   balancer a client gets up to N times the rate. The sign-in and the
//!   redemption failure limits ([`crate::service::staff`],
//!   [`crate::service::codes`]) are in the database and hold across
//!   instances.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::{HeaderMap, Method, header};
use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use ipnet::IpNet;
use sha2::{Digest, Sha256};

use crate::domain::redeem_code::{FailureLimit, RedeemLimits};

/// A rate: `count` requests per `period`, all of which may come at once
/// (the bucket holds `count` tokens and refills one every
/// `period / count`). Written `N/s`, `N/min` or `N/h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: NonZeroU32,
    pub period: Duration,
}

impl Rate {
    /// The bucket's quota.
    fn quota(self) -> Option<Quota> {
        let per_token = self.period / self.count.get();
        Quota::with_period(per_token).map(|q| q.allow_burst(self.count))
    }
}

impl Rate {
    /// The rate read as a failure limit: at most `count` failures in any
    /// `period`.
    pub fn failure_limit(self) -> FailureLimit {
        FailureLimit {
            failures: self.count.get(),
            window_seconds: self.period.as_secs().max(1),
        }
    }
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        let expected =
            || format!("expected N/s, N/min or N/h (N from 1 to 1000000) or off, got {raw:?}");
        let (n, unit) = raw.trim().split_once('/').ok_or_else(expected)?;
        let count: u32 = n.trim().parse().map_err(|_| expected())?;
        let count = NonZeroU32::new(count)
            .filter(|c| c.get() <= 1_000_000)
            .ok_or_else(expected)?;
        let period = match unit.trim() {
            "s" | "sec" => Duration::from_secs(1),
            "min" | "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            _ => return Err(expected()),
        };
        Ok(Rate { count, period })
    }
}

/// Parses a rate setting: `off` (or `0`) turns the limit off.
pub fn parse_rate_setting(raw: &str) -> Result<Option<Rate>, String> {
    match raw.trim() {
        "off" | "0" | "none" => Ok(None),
        other => other.parse().map(Some),
    }
}

/// The limits and the proxies to believe, from the environment.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// `COUPONKEEPER_RATE_LOGIN`: sign-in form posts per client address.
    pub login: Option<Rate>,
    /// `COUPONKEEPER_RATE_SELF_CHECK`: self-check requests per address.
    pub self_check: Option<Rate>,
    /// `COUPONKEEPER_RATE_API`: API requests per bearer token.
    pub api: Option<Rate>,
    /// `COUPONKEEPER_RATE_REDEEM_FAILURES_USER`: failed code redemptions
    /// per user.
    pub redeem_failures_user: Option<Rate>,
    /// `COUPONKEEPER_RATE_REDEEM_FAILURES_ADDRESS`: failed code
    /// redemptions per client address.
    pub redeem_failures_address: Option<Rate>,
    /// `COUPONKEEPER_TRUSTED_PROXIES`: peers whose `X-Forwarded-For` is
    /// believed.
    pub trusted_proxies: Vec<IpNet>,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            login: Some(Rate {
                count: NonZeroU32::new(30).unwrap_or(NonZeroU32::MIN),
                period: Duration::from_secs(60),
            }),
            self_check: Some(Rate {
                count: NonZeroU32::new(60).unwrap_or(NonZeroU32::MIN),
                period: Duration::from_secs(60),
            }),
            api: None,
            redeem_failures_user: Some(Rate {
                count: NonZeroU32::new(5).unwrap_or(NonZeroU32::MIN),
                period: Duration::from_secs(60),
            }),
            redeem_failures_address: Some(Rate {
                count: NonZeroU32::new(300).unwrap_or(NonZeroU32::MIN),
                period: Duration::from_secs(60),
            }),
            trusted_proxies: Vec::new(),
        }
    }
}

/// The address of the client that sent a request: see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub Option<IpAddr>);

impl ClientIp {
    /// As stored in audit rows: the address, or `unknown` (in-process
    /// callers without a socket).
    pub fn text(self) -> String {
        self.0
            .map(|ip| ip.to_string())
            .unwrap_or_else(|| "unknown".to_string())
    }
}

/// An address, with IPv4-mapped IPv6 (`::ffff:1.2.3.4`, what a dual-stack
/// socket reports) read as the IPv4 address it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

fn trusted(ip: IpAddr, proxies: &[IpNet]) -> bool {
    proxies.iter().any(|n| n.contains(&ip))
}

/// The client's address from the TCP peer and `X-Forwarded-For`.
pub fn client_ip(peer: Option<IpAddr>, headers: &HeaderMap, proxies: &[IpNet]) -> Option<IpAddr> {
    let peer = peer.map(canonical)?;
    if !trusted(peer, proxies) {
        return Some(peer);
    }
    // Hops as each proxy appended them, nearest last. Every header line
    // counts (a proxy may add its own line); at most 64 hops are read.
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for hop in hops.iter().rev().take(64) {
        match hop.parse::<IpAddr>().map(canonical) {
            Ok(ip) => {
                client = ip;
                if !trusted(ip, proxies) {
                    break;
                }
            }
            // A hop we cannot read: what lies left of it is not to be
            // believed; the last address we could trust stands.
            Err(_) => break,
        }
    }
    Some(client)
}

type Keyed = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock>;

/// One bucket family: a limiter keyed by client.
struct Bucket {
    limiter: Keyed,
    /// The `couponkeeper_events_total` event a refusal counts as.
    metric: &'static str,
    /// Checks since the last prune.
    checks: AtomicU64,
}

/// Prune idle keys every this many checks of a bucket: a full bucket is
/// indistinguishable from a missing one, so `retain_recent` drops it and
/// the map holds only clients seen within one period.
const PRUNE_EVERY_CHECKS: u64 = 4096;

impl Bucket {
    fn new(rate: Rate, metric: &'static str) -> Option<Bucket> {
        rate.quota().map(|q| Bucket {
            limiter: RateLimiter::keyed(q),
            metric,
            checks: AtomicU64::new(0),
        })
    }

    /// `Err(seconds to wait)` when `key` is over its rate.
    fn check(&self, key: String) -> Result<(), u64> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY_CHECKS
            == PRUNE_EVERY_CHECKS - 1
        {
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        self.limiter.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.limiter.clock().now());
            // Whole seconds, rounded up, at least 1 (`Retry-After: 0`
            // would invite an immediate retry).
            (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
        })
    }
}

/// The live limiters of this process.
pub struct Limiters {
    login: Option<Bucket>,
    self_check: Option<Bucket>,
    api: Option<Bucket>,
    redeem: RedeemLimits,
    trusted_proxies: Vec<IpNet>,
}

impl Limiters {
    pub fn new(limits: &HttpLimits) -> Self {
        Limiters {
            login: limits
                .login
                .and_then(|r| Bucket::new(r, "rate_limited_login")),
            self_check: limits
                .self_check
                .and_then(|r| Bucket::new(r, "rate_limited_self_check")),
            api: limits.api.and_then(|r| Bucket::new(r, "rate_limited_api")),
            redeem: RedeemLimits {
                per_user: limits.redeem_failures_user.map(Rate::failure_limit),
                per_address: limits.redeem_failures_address.map(Rate::failure_limit),
            },
            trusted_proxies: limits.trusted_proxies.clone(),
        }
    }
}

/// A request its bucket refuses: how long to wait, the metric event it
/// counts as, and whether it is an API request (JSON answer) or a page's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub wait_seconds: u64,
    pub metric: &'static str,
    pub api: bool,
}

impl Limiters {
    /// The proxies whose `X-Forwarded-For` is believed.
    pub fn trusted_proxies(&self) -> &[IpNet] {
        &self.trusted_proxies
    }

    /// Takes one token from the request's bucket, if it has one; `Err`
    /// when the bucket is empty.
    pub fn admit(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        ip: ClientIp,
    ) -> Result<(), Refused> {
        match bucket_for(self, method, path, headers, ip) {
            Some((bucket, key, api)) => bucket.check(key).map_err(|wait_seconds| Refused {
                wait_seconds,
                metric: bucket.metric,
                api,
            }),
            None => Ok(()),
        }
    }
}

impl Limiters {
    /// The failure limits of code redemption, enforced in the database by
    /// [`crate::service::Service::reserve_redemption`].
    pub fn redeem_limits(&self) -> RedeemLimits {
        self.redeem
    }
}

impl Default for Limiters {
    fn default() -> Self {
        Limiters::new(&HttpLimits::default())
    }
}

/// Which bucket a request draws from, and its key there.
fn bucket_for<'a>(
    limiters: &'a Limiters,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    ip: ClientIp,
) -> Option<(&'a Bucket, String, bool)> {
    if path == "/login" && method == Method::POST {
        return limiters.login.as_ref().map(|b| (b, ip.text(), false));
    }
    if path == "/self-check" || path.starts_with("/self-check/") {
        return limiters.self_check.as_ref().map(|b| (b, ip.text(), false));
    }
    if path.starts_with("/api/") {
        let bucket = limiters.api.as_ref()?;
        // Per token: its hash, never the token itself, as the key. A
        // request without one shares its address's bucket.
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(|t| {
                format!(
                    "token:{}",
                    hex::encode(&Sha256::digest(t.trim().as_bytes())[..16])
                )
            })
            .unwrap_or_else(|| format!("address:{}", ip.text()));
        return Some((bucket, key, true));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::network::parse_networks;
    use axum::http::HeaderValue;

    fn nets(raw: &str) -> Vec<IpNet> {
        parse_networks(raw).unwrap_or_default()
    }

    fn xff(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert("x-forwarded-for", v);
        }
        h
    }

    fn ip(s: &str) -> Option<IpAddr> {
        s.parse().ok()
    }

    #[test]
    fn rates_parse_in_three_units_and_off() {
        assert_eq!(
            "10/min"
                .parse::<Rate>()
                .map(|r| (r.count.get(), r.period.as_secs())),
            Ok((10, 60))
        );
        assert_eq!("5/s".parse::<Rate>().map(|r| r.period.as_secs()), Ok(1));
        assert_eq!(
            "100/h".parse::<Rate>().map(|r| r.period.as_secs()),
            Ok(3600)
        );
        assert_eq!(parse_rate_setting("off"), Ok(None));
        assert!("0/min".parse::<Rate>().is_err());
        assert!("ten/min".parse::<Rate>().is_err());
        assert!("10/day".parse::<Rate>().is_err());
        assert!("10".parse::<Rate>().is_err());
    }

    #[test]
    fn forwarded_for_is_believed_only_from_a_trusted_proxy() {
        let proxies = nets("10.0.0.0/8");
        // A direct client cannot claim another address.
        assert_eq!(
            client_ip(ip("203.0.113.9"), &xff("1.2.3.4"), &proxies),
            ip("203.0.113.9")
        );
        // Through the proxy: the address the proxy saw.
        assert_eq!(
            client_ip(ip("10.0.0.2"), &xff("198.51.100.7"), &proxies),
            ip("198.51.100.7")
        );
        // The client's own forged hops left of it are ignored.
        assert_eq!(
            client_ip(ip("10.0.0.2"), &xff("1.2.3.4, 198.51.100.7"), &proxies),
            ip("198.51.100.7")
        );
        // Two trusted proxies in a row are skipped.
        assert_eq!(
            client_ip(ip("10.0.0.2"), &xff("198.51.100.7, 10.0.0.3"), &proxies),
            ip("198.51.100.7")
        );
        // Garbage stops the walk at the last trusted hop.
        assert_eq!(
            client_ip(ip("10.0.0.2"), &xff("198.51.100.7, junk"), &proxies),
            ip("10.0.0.2")
        );
        // No header: the proxy itself.
        assert_eq!(
            client_ip(ip("10.0.0.2"), &HeaderMap::new(), &proxies),
            ip("10.0.0.2")
        );
        // A v4-mapped peer is its v4 address.
        assert_eq!(
            client_ip(ip("::ffff:10.0.0.2"), &xff("198.51.100.7"), &proxies),
            ip("198.51.100.7")
        );
        assert_eq!(client_ip(None, &xff("1.2.3.4"), &proxies), None);
    }

    #[test]
    fn trusted_proxy_lists_take_cidrs_and_addresses_and_name_a_bad_entry() {
        assert_eq!(nets("10.0.0.0/8, 192.0.2.1,::1").len(), 3);
        assert!(parse_networks("10.0.0.0/33").is_err());
        assert!(parse_networks("proxy.example").is_err());
        assert_eq!(parse_networks(""), Ok(vec![]));
    }

    #[test]
    fn redemption_failure_rates_become_windows_of_failures() {
        let limits = HttpLimits {
            redeem_failures_user: "3/min".parse().ok(),
            redeem_failures_address: None,
            ..HttpLimits::default()
        };
        let l = Limiters::new(&limits);
        assert_eq!(
            l.redeem_limits(),
            RedeemLimits {
                per_user: Some(FailureLimit {
                    failures: 3,
                    window_seconds: 60
                }),
                per_address: None,
            }
        );
    }

    #[test]
    fn a_bucket_refuses_past_its_burst_and_says_how_long_to_wait() {
        let rate: Rate = "3/min".parse().expect("rate");
        let b = Bucket::new(rate, "test").expect("quota");
        for _ in 0..3 {
            assert_eq!(b.check("a".into()), Ok(()));
        }
        let wait = b.check("a".into()).expect_err("fourth is refused");
        assert!((1..=20).contains(&wait), "{wait}");
        assert_eq!(b.check("b".into()), Ok(()), "another client has its own");
    }
}
