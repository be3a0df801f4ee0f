//! What a webhook attempt's outcome may be shown as to staff who do not
//! configure subscribers (the `support` role): a failure class, never the
//! raw error. A connection error names addresses and ports ("tcp connect
//! error … 10.0.0.5:8443: Connection refused"), so its text would turn the
//! deliveries page into a report on what listens inside the network.

/// The marker attempt written when staff ask for a redelivery.
pub const REDELIVERY_REQUESTED: &str = "redelivery requested";
/// Why a delivery of a disabled or removed subscriber is dead.
pub const SUBSCRIBER_GONE: &str = "subscriber disabled or removed";
/// Why a delivery whose outbox row is missing is dead.
pub const MESSAGE_MISSING: &str = "outbox message missing";
/// How a send refused by the address rule is recorded (operators see the
/// rest: host, address, reason).
pub const BLOCKED_PREFIX: &str = "blocked: ";

/// An attempt's outcome as a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptClass {
    /// The receiver answered with this HTTP status (2xx: delivered).
    Status(u16),
    /// No answer within the timeout.
    Timeout,
    /// The connection was refused, or the address is not allowed.
    Refused,
    /// The TLS handshake failed (certificate, protocol).
    Tls,
    /// The host name did not resolve.
    Dns,
    /// Staff asked for a redelivery (not a send).
    Redelivery,
    /// The subscriber was disabled or removed.
    SubscriberGone,
    /// Anything else.
    Other,
    /// No outcome recorded.
    None,
}

/// The class of an attempt (or a delivery's last outcome) from what is
/// stored: its HTTP status, else its error text.
pub fn classify(status_code: Option<i64>, error: Option<&str>) -> AttemptClass {
    if let Some(code) = status_code {
        return match u16::try_from(code) {
            Ok(c) if (100..600).contains(&c) => AttemptClass::Status(c),
            _ => AttemptClass::Other,
        };
    }
    let Some(error) = error else {
        return AttemptClass::None;
    };
    if error == REDELIVERY_REQUESTED {
        return AttemptClass::Redelivery;
    }
    if error == SUBSCRIBER_GONE {
        return AttemptClass::SubscriberGone;
    }
    if error.starts_with(BLOCKED_PREFIX) {
        return AttemptClass::Refused;
    }
    let e = without_urls(&error.to_ascii_lowercase());
    let any = |words: &[&str]| words.iter().any(|w| e.contains(w));
    if any(&["timed out", "timeout", "deadline has elapsed"]) {
        AttemptClass::Timeout
    } else if any(&["connection refused", "os error 111", "os error 10061"]) {
        AttemptClass::Refused
    } else if any(&[
        "dns error",
        "failed to lookup address",
        "cannot resolve",
        "name or service not known",
        "no address associated",
        "nodename nor servname",
    ]) {
        AttemptClass::Dns
    } else if any(&["certificate", "tls", "handshake", "unknownissuer", "ssl"]) {
        AttemptClass::Tls
    } else {
        AttemptClass::Other
    }
}

/// The text without reqwest's `for url (…)`: a URL's path may hold any
/// word ("/timeout").
fn without_urls(e: &str) -> String {
    let mut out = e.to_string();
    while let Some(start) = out.find("for url (") {
        let end = out[start..].find(')').map_or(out.len(), |i| start + i + 1);
        out.replace_range(start..end, "");
    }
    out
}

impl AttemptClass {
    /// Stable name, for data attributes: `http_status 5xx`-like classes
    /// become `http_5xx`.
    pub fn code(self) -> &'static str {
        match self {
            AttemptClass::Status(c) => match c / 100 {
                1 => "http_1xx",
                2 => "http_2xx",
                3 => "http_3xx",
                4 => "http_4xx",
                _ => "http_5xx",
            },
            AttemptClass::Timeout => "timeout",
            AttemptClass::Refused => "refused",
            AttemptClass::Tls => "tls",
            AttemptClass::Dns => "dns",
            AttemptClass::Redelivery => "redelivery",
            AttemptClass::SubscriberGone => "subscriber_gone",
            AttemptClass::Other => "other",
            AttemptClass::None => "none",
        }
    }

    /// The catalog key of the text shown (`Status` is shown as its HTTP
    /// code, see [`AttemptClass::status_code`]).
    pub fn message_key(self) -> &'static str {
        match self {
            AttemptClass::Status(_) => "attempt-class-status",
            AttemptClass::Timeout => "attempt-class-timeout",
            AttemptClass::Refused => "attempt-class-refused",
            AttemptClass::Tls => "attempt-class-tls",
            AttemptClass::Dns => "attempt-class-dns",
            AttemptClass::Redelivery => "attempt-class-redelivery",
            AttemptClass::SubscriberGone => "attempt-class-subscriber_gone",
            AttemptClass::Other => "attempt-class-other",
            AttemptClass::None => "attempt-class-none",
        }
    }

    /// The HTTP status of a `Status` class.
    pub fn status_code(self) -> Option<u16> {
        match self {
            AttemptClass::Status(c) => Some(c),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_its_own_class_whatever_the_error_says() {
        assert_eq!(classify(Some(200), None), AttemptClass::Status(200));
        assert_eq!(
            classify(Some(503), Some("HTTP 503")),
            AttemptClass::Status(503)
        );
        assert_eq!(classify(Some(404), None).code(), "http_4xx");
        assert_eq!(classify(Some(503), None).code(), "http_5xx");
        assert_eq!(classify(Some(302), None).code(), "http_3xx");
        assert_eq!(classify(Some(0), Some("HTTP 0")), AttemptClass::Other);
        assert_eq!(classify(Some(70000), None), AttemptClass::Other);
        assert_eq!(classify(None, None), AttemptClass::None);
    }

    #[test]
    fn errors_as_the_sender_records_them_fall_into_their_class() {
        use AttemptClass::*;
        for (error, want) in [
            ("timed out after 10 s", Timeout),
            (
                "cannot connect: error sending request for url (http://10.0.0.5:8443/h): client error (Connect): tcp connect error: Connection refused (os error 111)",
                Refused,
            ),
            (
                "blocked: 127.0.0.1 is a loopback address (this host), not in COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS",
                Refused,
            ),
            (
                "cannot connect: error sending request for url (https://hooks.invalid/): client error (Connect): dns error: failed to lookup address information: Name or service not known",
                Dns,
            ),
            (
                "cannot connect: error sending request for url (https://127.0.0.1:4443/): client error (Connect): invalid peer certificate: UnknownIssuer",
                Tls,
            ),
            (
                "cannot connect: error sending request: received fatal alert: HandshakeFailure",
                Tls,
            ),
            (
                "error sending request for url (http://10.0.0.5/): connection closed before message completed",
                Other,
            ),
            ("redelivery requested", Redelivery),
            ("subscriber disabled or removed", SubscriberGone),
            ("outbox message missing", Other),
            (
                "error sending request for url (http://tls.example/timeout/refused): connection reset by peer",
                Other,
            ),
        ] {
            assert_eq!(classify(Option::None, Some(error)), want, "{error}");
        }
    }

    #[test]
    fn no_class_text_carries_an_address_or_a_port() {
        use AttemptClass::*;
        for class in [
            Status(503),
            Timeout,
            Refused,
            Tls,
            Dns,
            Redelivery,
            SubscriberGone,
            Other,
            None,
        ] {
            for l in crate::i18n::Lang::ALL {
                let text = l.t(class.message_key());
                assert!(crate::i18n::has(class.message_key()), "{text}");
                assert!(!text.contains('.') && !text.contains(':'), "{text}");
            }
        }
    }
}
