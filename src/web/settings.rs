//! [`ConsoleSettings`]: the console's cookie and session settings, read by
//! the sign-in and page handlers (and by the security headers, for HSTS).
//! A module of its own so that the HTTP state can carry them without
//! importing any page.

/// Console settings that are not business rules.
#[derive(Debug, Clone, Default)]
pub struct ConsoleSettings {
    /// `COUPONKEEPER_SECURE_COOKIES=on` when served behind TLS: cookies get
    /// `Secure` and the session cookie the `__Host-` prefix.
    pub secure_cookies: bool,
    /// Session idle and absolute lifetimes.
    pub session: crate::service::staff::SessionPolicy,
}
