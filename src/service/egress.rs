//! Where deliveries to console subscribers may connect
//! (docs/src/integration/webhooks.md, Which receivers are allowed (SSRF)):
//! the address rule of
//! [`crate::domain::network`] applied to what a host name resolves to.
//!
//! Checked twice. When an operator adds a subscriber, its host is resolved
//! and refused if any address is forbidden ([`resolve_allowed`]). That
//! alone would not hold: the name may resolve elsewhere by the time a
//! delivery is sent (DNS rebinding), and a row may reach the table some
//! other way. So the client of console subscribers resolves through
//! [`GuardedResolver`], which applies the same check to the addresses it
//! hands to the connector, every connection; an address written in the
//! URL itself never goes through a resolver and is checked before the send
//! by [`check_url_host`]. The environment's subscriber is trusted and sent
//! with a client without either.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use ipnet::IpNet;

use crate::domain::delivery::BLOCKED_PREFIX;
use crate::domain::network::{self, Forbidden, LOCALHOST_ADDRS};

/// Resolves a host name to its addresses: the system resolver, or a fake
/// in tests.
pub trait Lookup: Send + Sync + 'static {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system resolver (`getaddrinfo`, through tokio), as reqwest's own.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// A delivery target refused by the address rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The host as written in the URL (a name or an address).
    pub host: String,
    /// The forbidden address it is or resolves to.
    pub addr: IpAddr,
    pub kind: Forbidden,
}

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        if host.parse::<IpAddr>().ok() == Some(self.addr) {
            write!(f, "{BLOCKED_PREFIX}{} is {}", self.addr, self.kind)?;
        } else {
            write!(
                f,
                "{BLOCKED_PREFIX}{host:?} resolves to {}, {}",
                self.addr, self.kind
            )?;
        }
        f.write_str(", not in COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS")
    }
}

impl std::error::Error for Blocked {}

/// Why a host cannot be connected to.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ResolveError {
    #[error("{0}")]
    Blocked(Blocked),
    #[error("cannot resolve {host:?}: {message}")]
    Dns { host: String, message: String },
}

/// The addresses of `host` (a name, or an address in or without
/// brackets), when every one of them may be reached; `localhost` names are
/// loopback without a lookup.
pub async fn resolve_allowed(
    host: &str,
    allow: &[IpNet],
    lookup: &dyn Lookup,
) -> Result<Vec<IpAddr>, ResolveError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = if let Ok(ip) = bare.parse::<IpAddr>() {
        vec![ip]
    } else if network::is_localhost_name(host) {
        LOCALHOST_ADDRS.to_vec()
    } else {
        lookup
            .lookup(host.to_string())
            .await
            .map_err(|e| ResolveError::Dns {
                host: host.to_string(),
                message: e.to_string(),
            })?
    };
    if addrs.is_empty() {
        return Err(ResolveError::Dns {
            host: host.to_string(),
            message: "no address".into(),
        });
    }
    match network::first_forbidden(&addrs, allow) {
        Some((addr, kind)) => Err(ResolveError::Blocked(Blocked {
            host: host.to_string(),
            addr,
            kind,
        })),
        None => Ok(addrs),
    }
}

/// The URL's host when it needs no resolver: an address (hyper connects to
/// an address in the URL without asking the resolver) or a `localhost`
/// name. Other names are left to the resolver.
pub fn check_url_host(url: &reqwest::Url, allow: &[IpNet]) -> Result<(), Blocked> {
    // The URL parser has already turned every IPv4 spelling (`2130706433`,
    // `0x7f.1`, `0177.0.0.1`, `127.1`) into dotted decimal, and keeps IPv6
    // in brackets.
    let Some(host) = url.host_str() else {
        return Ok(());
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = if let Ok(ip) = bare.parse::<IpAddr>() {
        vec![ip]
    } else if network::is_localhost_name(host) {
        LOCALHOST_ADDRS.to_vec()
    } else {
        return Ok(());
    };
    match network::first_forbidden(&addrs, allow) {
        Some((addr, kind)) => Err(Blocked {
            host: host.to_string(),
            addr,
            kind,
        }),
        None => Ok(()),
    }
}

/// The refusal by the address rule somewhere in an error's causes (a send
/// the resolver refused).
pub fn blocked_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Blocked> {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(b) = err.downcast_ref::<Blocked>() {
            return Some(b);
        }
        if let Some(ResolveError::Blocked(b)) = err.downcast_ref::<ResolveError>() {
            return Some(b);
        }
        next = err.source();
    }
    None
}

/// The resolver of the console subscribers' client: resolves with
/// `lookup` and refuses a host with a forbidden address, on every
/// connection.
pub struct GuardedResolver {
    allow: Arc<[IpNet]>,
    lookup: Arc<dyn Lookup>,
}

impl GuardedResolver {
    pub fn new(allow: &[IpNet], lookup: Arc<dyn Lookup>) -> GuardedResolver {
        GuardedResolver {
            allow: allow.into(),
            lookup,
        }
    }
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        let allow = self.allow.clone();
        let lookup = self.lookup.clone();
        Box::pin(async move {
            let addrs = resolve_allowed(&host, &allow, lookup.as_ref()).await?;
            // Port 0: reqwest puts in the URL's port or the scheme's.
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Answers each name from a script, one answer per lookup (the last
    /// one repeats): a name that is public when checked and loopback when
    /// connected to.
    pub(crate) struct Scripted(Mutex<HashMap<String, Vec<Vec<IpAddr>>>>);

    impl Scripted {
        pub(crate) fn new(script: &[(&str, &[&[&str]])]) -> Arc<Scripted> {
            let map = script
                .iter()
                .map(|(name, answers)| {
                    let answers = answers
                        .iter()
                        .map(|a| a.iter().map(|s| s.parse().expect(s)).collect())
                        .collect();
                    (name.to_string(), answers)
                })
                .collect();
            Arc::new(Scripted(Mutex::new(map)))
        }
    }

    impl Lookup for Scripted {
        fn lookup(&self, host: String) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
            let answer = self.0.lock().ok().and_then(|mut m| {
                let answers = m.get_mut(&host)?;
                if answers.len() > 1 {
                    Some(answers.remove(0))
                } else {
                    answers.first().cloned()
                }
            });
            Box::pin(async move {
                answer.ok_or_else(|| std::io::Error::other("Name or service not known"))
            })
        }
    }

    fn nets(s: &str) -> Vec<IpNet> {
        network::parse_networks(s).expect(s)
    }

    #[tokio::test]
    async fn a_name_is_refused_when_any_address_is_forbidden() {
        let lookup = Scripted::new(&[
            ("public.test", &[&["93.184.216.34"]]),
            ("mixed.test", &[&["93.184.216.34", "10.0.0.7"]]),
            ("meta.test", &[&["169.254.169.254"]]),
        ]);
        let got = resolve_allowed("public.test", &[], lookup.as_ref()).await;
        assert_eq!(
            got.expect("public"),
            vec!["93.184.216.34".parse::<IpAddr>().unwrap()]
        );
        for (host, addr, kind) in [
            ("mixed.test", "10.0.0.7", Forbidden::Private),
            ("meta.test", "169.254.169.254", Forbidden::LinkLocal),
            ("localhost", "127.0.0.1", Forbidden::Loopback),
            ("[::1]", "::1", Forbidden::Loopback),
            ("127.0.0.1", "127.0.0.1", Forbidden::Loopback),
        ] {
            match resolve_allowed(host, &[], lookup.as_ref()).await {
                Err(ResolveError::Blocked(b)) => {
                    assert_eq!((b.addr, b.kind), (addr.parse().unwrap(), kind), "{host}");
                    assert!(b.to_string().starts_with(BLOCKED_PREFIX), "{b}");
                }
                other => panic!("{host}: {other:?}"),
            }
        }
        // Allowed networks let them through.
        let allow = nets("10.0.0.0/8,169.254.169.254");
        assert!(
            resolve_allowed("mixed.test", &allow, lookup.as_ref())
                .await
                .is_ok()
        );
        assert!(
            resolve_allowed("meta.test", &allow, lookup.as_ref())
                .await
                .is_ok()
        );
        // A name that does not resolve is a DNS error, not a refusal.
        assert!(matches!(
            resolve_allowed("nowhere.test", &[], lookup.as_ref()).await,
            Err(ResolveError::Dns { .. })
        ));
    }

    #[test]
    fn addresses_in_the_url_are_checked_without_a_resolver() {
        for raw in [
            "http://127.0.0.1:9/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.5/",
            "http://0.0.0.0/",
            "http://localhost/",
            "http://LocalHost./",
        ] {
            let url = reqwest::Url::parse(raw).expect(raw);
            assert!(check_url_host(&url, &[]).is_err(), "{raw} ({url})");
        }
        for raw in [
            "https://hooks.example.com/",
            "http://93.184.216.34/",
            "http://[2606:4700::1]/",
        ] {
            let url = reqwest::Url::parse(raw).expect(raw);
            assert_eq!(check_url_host(&url, &[]), Ok(()), "{raw}");
        }
        let url = reqwest::Url::parse("http://127.0.0.1:9/").expect("url");
        assert_eq!(check_url_host(&url, &nets("127.0.0.0/8")), Ok(()));
    }

    /// DNS rebinding: the name is public when an operator adds it and
    /// loopback when the delivery connects. The guarded client refuses
    /// the connection; nothing reaches the listener on 127.0.0.1.
    #[tokio::test]
    async fn a_name_that_rebinds_to_loopback_is_refused_when_connecting() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let lookup = Scripted::new(&[("rebind.test", &[&["93.184.216.34"], &["127.0.0.1"]])]);
        // Add time: public.
        assert!(
            resolve_allowed("rebind.test", &[], lookup.as_ref())
                .await
                .is_ok()
        );
        // Send time: the guarded client asks again and gets 127.0.0.1.
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver::new(&[], lookup.clone())))
            .build()
            .expect("client");
        let e = client
            .post(format!("http://rebind.test:{port}/hook"))
            .timeout(std::time::Duration::from_secs(2))
            .body("{}")
            .send()
            .await
            .expect_err("refused");
        let blocked = blocked_in(&e).expect("the refusal is in the error's causes");
        assert_eq!(blocked.addr, "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(blocked.kind, Forbidden::Loopback);
        let accepted =
            tokio::time::timeout(std::time::Duration::from_millis(200), listener.accept()).await;
        assert!(accepted.is_err(), "no connection reached the listener");

        // With loopback allowed, the same client setup connects.
        let lookup = Scripted::new(&[("rebind.test", &[&["127.0.0.1"]])]);
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver::new(&nets("127.0.0.0/8"), lookup)))
            .build()
            .expect("client");
        let send = tokio::spawn(async move {
            client
                .post(format!("http://rebind.test:{port}/hook"))
                .timeout(std::time::Duration::from_secs(1))
                .send()
                .await
        });
        let accepted =
            tokio::time::timeout(std::time::Duration::from_secs(5), listener.accept()).await;
        assert!(matches!(accepted, Ok(Ok(_))), "allowed: it connects");
        send.abort();
    }
}
