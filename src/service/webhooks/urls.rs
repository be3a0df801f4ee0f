//! Which receiver URLs are taken: `https://` or `http://` without
//! credentials ([`parse_receiver_url`]), and for a console subscriber a
//! host that neither is nor resolves to a forbidden address
//! ([`Service::check_receiver`]).

use std::time::Duration as StdDuration;

use crate::service::Service;
use crate::service::egress::{self, Blocked, ResolveError};

/// Why a receiver URL is not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlProblem {
    /// Not `https://` or `http://`.
    Scheme,
    /// Not a URL (the text as given).
    Malformed(String),
    /// `user:pass@host`: credentials would be shown to every staff member
    /// with the URL, and a name before `@` hides the real host.
    Userinfo,
}

impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlProblem::Scheme => f.write_str("expected a URL starting with https:// or http://"),
            UrlProblem::Malformed(raw) => write!(f, "not a valid https:// or http:// URL: {raw:?}"),
            UrlProblem::Userinfo => {
                f.write_str("a URL with a user name or password (user:pass@host) is not accepted")
            }
        }
    }
}

/// Accepts `https://host[:port][/path]` and `http://host[:port][/path]`
/// (plain http is kept for a relay on the same host or network), without
/// `user:pass@`: the trimmed text and the URL as reqwest reads it (IPv4 in
/// any spelling turned into dotted decimal).
pub fn parse_receiver_url(raw: &str) -> Result<(String, reqwest::Url), UrlProblem> {
    let url = raw.trim();
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Err(UrlProblem::Scheme);
    };
    let host = rest.split('/').next().unwrap_or("");
    let malformed = || UrlProblem::Malformed(raw.to_string());
    if host.is_empty()
        || url.len() > 2000
        || url.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(malformed());
    }
    let parsed = url.parse::<reqwest::Url>().map_err(|_| malformed())?;
    let authority = rest.split(['/', '\\', '?', '#']).next().unwrap_or("");
    if authority.contains('@') || !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(UrlProblem::Userinfo);
    }
    Ok((url.to_string(), parsed))
}

/// [`parse_receiver_url`]'s text, or why not as a message.
pub fn check_url(raw: &str) -> Result<String, String> {
    parse_receiver_url(raw)
        .map(|(url, _)| url)
        .map_err(|p| p.to_string())
}

/// Why a console subscriber's URL is refused when it is added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReceiverRefusal {
    Url(UrlProblem),
    /// The host is, or resolves to, an address deliveries may not go to.
    Blocked(Blocked),
}

impl std::fmt::Display for ReceiverRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReceiverRefusal::Url(p) => p.fmt(f),
            ReceiverRefusal::Blocked(b) => b.fmt(f),
        }
    }
}

/// Longest wait for a subscriber's host to resolve when it is added.
const ADD_LOOKUP_CAP_SECONDS: i64 = 10;

impl Service {
    /// Whether `raw` may be a console subscriber: an `https://` or
    /// `http://` URL without credentials whose host is not, and does not
    /// resolve to, an address the rule forbids (unless in
    /// `COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS`). Returns the trimmed URL. A
    /// name that does not resolve now is taken: there is nothing to judge
    /// yet, and every delivery checks its addresses when it connects.
    pub async fn check_receiver(&self, raw: &str) -> Result<String, ReceiverRefusal> {
        let (url, parsed) = parse_receiver_url(raw).map_err(ReceiverRefusal::Url)?;
        let Some(host) = parsed.host_str() else {
            return Err(ReceiverRefusal::Url(UrlProblem::Malformed(raw.to_string())));
        };
        let w = self.webhooks();
        let wait = StdDuration::from_secs(
            u64::try_from(w.timeout_seconds.clamp(1, ADD_LOOKUP_CAP_SECONDS)).unwrap_or(10),
        );
        let lookup = egress::resolve_allowed(host, &w.allow_networks, self.inner.lookup.as_ref());
        match tokio::time::timeout(wait, lookup).await {
            Ok(Err(ResolveError::Blocked(b))) => Err(ReceiverRefusal::Blocked(b)),
            Ok(Ok(_)) | Ok(Err(ResolveError::Dns { .. })) | Err(_) => Ok(url),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn https_and_http_receiver_urls_are_accepted_and_trimmed() {
        assert_eq!(
            check_url(" https://hooks.example.com/ck?x=1 ").as_deref(),
            Ok("https://hooks.example.com/ck?x=1")
        );
        assert_eq!(
            check_url("https://localhost:8443/hook").as_deref(),
            Ok("https://localhost:8443/hook")
        );
        assert_eq!(
            check_url("http://127.0.0.1:8080/hook").as_deref(),
            Ok("http://127.0.0.1:8080/hook")
        );
    }

    #[test]
    fn other_schemes_and_malformed_urls_are_refused_with_a_reason() {
        for raw in ["ftp://example.com/h", "example.com/h", "", "HTTPS://x"] {
            let e = check_url(raw).expect_err(raw);
            assert!(e.contains("https:// or http://"), "{raw:?}: {e}");
        }
        for raw in [
            "https://",
            "https:///path",
            "https://exa mple.com/",
            "http://[::1/",
        ] {
            let e = check_url(raw).expect_err(raw);
            assert!(
                e.starts_with("not a valid https:// or http:// URL"),
                "{raw:?}: {e}"
            );
        }
    }

    #[test]
    fn credentials_in_a_receiver_url_are_refused() {
        for raw in [
            "http://user:pass@hooks.example.com/",
            "https://token@hooks.example.com/h",
            "http://@hooks.example.com/",
            "http://hooks.example.com@127.0.0.1/",
            "http://user:pass@127.0.0.1:8080/",
        ] {
            assert_eq!(
                parse_receiver_url(raw).err(),
                Some(UrlProblem::Userinfo),
                "{raw}"
            );
            assert!(check_url(raw).is_err(), "{raw}");
        }
        // An @ in the path or query names no user.
        assert!(parse_receiver_url("https://hooks.example.com/a@b?c=d@e").is_ok());
    }

    /// What the address rule sees: the URL parser's reading of the host,
    /// where every IPv4 spelling is the dotted address it means.
    #[test]
    fn the_url_parser_turns_every_ipv4_spelling_into_the_address() {
        for (raw, host) in [
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://0x7f000001/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://127.0.0.1./", "127.0.0.1"),
            ("http://%31%32%37.0.0.1/", "127.0.0.1"),
            ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
            ("http://[::ffff:127.0.0.1]/", "[::ffff:7f00:1]"),
            ("http://[0:0:0:0:0:0:0:1]/", "[::1]"),
            ("http://LOCALHOST/", "localhost"),
        ] {
            let (_, url) = parse_receiver_url(raw).expect(raw);
            assert_eq!(url.host_str(), Some(host), "{raw}");
        }
    }
}
