//! Process configuration, read once from the environment at start.
//!
//! Every variable is listed in docs/src/operations/configuration.md. A value
//! that does not parse stops the process with a message naming the variable,
//! instead of silently falling back to a default.
//!
//! This module only builds settings: each settings struct lives with the
//! layer that reads it ([`JobSettings`] in `jobs`, [`SelfCheckSettings`] in
//! `service::self_check`, [`ConsoleSettings`] in `web::settings`,
//! [`HttpLimits`] in `http::limits`, the webhook and reminder settings in
//! `service::webhooks` and `domain::reminder`).

use std::net::SocketAddr;

use crate::domain::reminder::{self, ReminderSettings};
use crate::http::limits::{HttpLimits, parse_rate_setting};
use crate::http::serve::{ConnectionTimeouts, MAX_READ_TIMEOUT_SECONDS};
use crate::jobs::JobSettings;
use crate::service::self_check::{
    DEFAULT_SELF_CHECK_TTL_SECONDS, MAX_SELF_CHECK_TTL_SECONDS, SelfCheckSettings,
};
use crate::web::settings::ConsoleSettings;

/// Everything the process reads from its environment. Each field names
/// its variables; their defaults are [`Config::default`] and the book's
/// configuration table (`docs/src/operations/configuration.md`), which the
/// tests at the end of this file hold to each other.
#[derive(Debug, Clone)]
pub struct Config {
    /// `DATABASE_URL`: `sqlite://...` or `postgres://...`.
    pub database_url: String,
    /// `COUPONKEEPER_ADDR`: the address to listen on.
    pub addr: SocketAddr,
    /// `COUPONKEEPER_API_TOKEN`: comma-separated bearer tokens. Empty: every
    /// API call is refused with 401.
    pub api_tokens: Vec<String>,
    /// `COUPONKEEPER_CHECKOUT_LOCK_SECONDS`: how long a normal
    /// order's checkout lock holds its coupon.
    pub checkout_lock_seconds: i64,
    /// `COUPONKEEPER_EXPIRING_SOON_HOURS`: how close to its end a usable
    /// coupon counts in the checkout picker's `expiring_soon` (1–720 h).
    pub expiring_soon_hours: i64,
    /// `COUPONKEEPER_DB_MAX_CONNECTIONS`: the connection pool's size.
    pub db_max_connections: u32,
    /// `COUPONKEEPER_TX_RETRIES`: how often a transaction that hit
    /// a serialization failure or deadlock is retried before giving up.
    pub tx_retries: u32,
    /// `COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS`: how long a request
    /// waits for a database connection before it is answered 503
    /// `unavailable` (during an outage callers fail fast instead of queueing).
    pub db_acquire_timeout_ms: u64,
    /// `COUPONKEEPER_DB_TX_TIMEOUT_MS` (100 to 600000): how
    /// long one database transaction may take before it is abandoned and
    /// its request answered 503 `unavailable`; what ends a request stuck on
    /// a database that went silent without closing the connection.
    pub db_tx_timeout_ms: u64,
    /// `COUPONKEEPER_SLOW_QUERY_MS` (0 to 60000): a timed store call that
    /// takes at least this long counts in `couponkeeper_db_slow_queries_total`
    /// and is logged; 0 counts every call.
    pub slow_query_ms: u64,
    /// `COUPONKEEPER_LOG_FORMAT`: `text` or `json`.
    pub log_json: bool,
    /// `COUPONKEEPER_CLOCK_SYNC_SECONDS` (1 to 3600): how often
    /// `serve` reads the database's clock again; between readings its
    /// clock runs on this machine's monotonic time from the last one
    /// ([`crate::clock::DatabaseClock`]).
    pub clock_sync_seconds: u64,
    /// `COUPONKEEPER_DRAIN_SECONDS` (1 to 3600): how long the
    /// drain after SIGTERM or Ctrl-C may take (requests in flight, the
    /// jobs' current batches, closing the pool) before the process exits
    /// anyway with a warning. Keep it below the orchestrator's grace
    /// period (Kubernetes: `terminationGracePeriodSeconds`, 30 by
    /// default), which ends in SIGKILL.
    pub drain_seconds: u64,
    /// Background jobs (see [`JobSettings`]).
    pub jobs: JobSettings,
    /// Console cookies and sessions: `COUPONKEEPER_SECURE_COOKIES` (`on`
    /// behind TLS), `COUPONKEEPER_SESSION_IDLE_SECONDS`,
    /// `COUPONKEEPER_SESSION_ABSOLUTE_SECONDS`.
    pub console: ConsoleSettings,
    /// `COUPONKEEPER_BOOTSTRAP_ADMIN=name:password`: the first admin,
    /// created at start when there is no staff account at all.
    pub bootstrap_admin: Option<String>,
    /// `COUPONKEEPER_SUPPORT_COMPENSATION_MAX_CENTS`: most
    /// cents one compensation coupon issued by a `support` staff member may
    /// be worth.
    pub support_compensation_max_cents: i64,
    /// `COUPONKEEPER_SUPPORT_COMPENSATION_DAILY_CENTS`: most
    /// cents of compensation one `support` staff member may issue per UTC day.
    pub support_compensation_daily_cents: i64,
    /// The customers' self-check page and its signed links (see
    /// [`SelfCheckSettings`]).
    pub self_check: SelfCheckSettings,
    /// Pre-expiry and presale reminders: `COUPONKEEPER_REMINDER_OFFSETS`,
    /// `COUPONKEEPER_QUIET_HOURS` (empty: none), `COUPONKEEPER_BUSINESS_TZ`,
    /// `COUPONKEEPER_SMS_MIN_CENTS`, `COUPONKEEPER_REMINDER_WINDOW_SECONDS`,
    /// `COUPONKEEPER_REMINDER_SMS_PER_DAY`,
    /// `COUPONKEEPER_REMINDER_PUSH_PER_DAY` and
    /// `COUPONKEEPER_REMINDER_CHANNELS`.
    pub reminders: ReminderSettings,
    /// Webhook delivery: `COUPONKEEPER_WEBHOOK_URL`,
    /// `COUPONKEEPER_WEBHOOK_SECRET` (required with the URL),
    /// `COUPONKEEPER_WEBHOOK_TIMEOUT_SECONDS` (1 to 300),
    /// `COUPONKEEPER_WEBHOOK_MAX_ATTEMPTS` (1 to 50),
    /// `COUPONKEEPER_WEBHOOK_CA_FILE` (PEM roots trusted besides the
    /// bundled ones), `COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS` (networks console
    /// subscribers may be in besides public addresses).
    pub webhooks: crate::service::webhooks::WebhookSettings,
    /// Request rate limits and trusted proxies: `COUPONKEEPER_RATE_LOGIN`,
    /// `COUPONKEEPER_RATE_SELF_CHECK`, `COUPONKEEPER_RATE_API`,
    /// `COUPONKEEPER_TRUSTED_PROXIES`, and for failed code redemptions
    /// `COUPONKEEPER_RATE_REDEEM_FAILURES_USER` and
    /// `COUPONKEEPER_RATE_REDEEM_FAILURES_ADDRESS`.
    pub http_limits: HttpLimits,
    /// Slow clients: `COUPONKEEPER_HEADER_READ_TIMEOUT_SECONDS` (1 to 3600;
    /// also the longest a keep-alive connection may sit idle) and
    /// `COUPONKEEPER_BODY_READ_TIMEOUT_SECONDS` (1 to 3600); see
    /// [`crate::http::serve`].
    pub connection_timeouts: ConnectionTimeouts,
    /// `COUPONKEEPER_METRICS_TOKEN`: when set, `/metrics` answers only
    /// requests bearing it (`Authorization: Bearer <token>`), for
    /// deployments that expose the port; unset, `/metrics` is open, as a
    /// Prometheus scrape on a private network expects.
    pub metrics_token: Option<String>,
}

/// Shortest API token accepted when the service listens beyond loopback
/// (ASVS 2.6: tokens with at least 128 bits of randomness; 32 characters
/// of hex is 128 bits).
pub const MIN_API_TOKEN_CHARS: usize = 32;

/// A variable that is set but does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{var}: {message}")]
pub struct ConfigError {
    pub var: &'static str,
    pub message: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database_url: "sqlite://couponkeeper.db".into(),
            addr: SocketAddr::from(([127, 0, 0, 1], 3000)),
            api_tokens: Vec::new(),
            checkout_lock_seconds: 900,
            expiring_soon_hours: 48,
            db_max_connections: 10,
            tx_retries: 5,
            db_acquire_timeout_ms: 2_000,
            db_tx_timeout_ms: 10_000,
            slow_query_ms: 200,
            log_json: false,
            clock_sync_seconds: 30,
            drain_seconds: 20,
            jobs: JobSettings::default(),
            console: ConsoleSettings::default(),
            bootstrap_admin: None,
            support_compensation_max_cents: 5_000,
            support_compensation_daily_cents: 20_000,
            self_check: SelfCheckSettings::default(),
            reminders: ReminderSettings::default(),
            webhooks: crate::service::webhooks::WebhookSettings::default(),
            http_limits: HttpLimits::default(),
            connection_timeouts: ConnectionTimeouts::default(),
            metrics_token: None,
        }
    }
}

impl Config {
    /// Reads the real environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads variables through `get`, so tests need not touch the process
    /// environment.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let d = Config::default();
        let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let addr: SocketAddr = parse_var(&nonempty, "COUPONKEEPER_ADDR", d.addr)?;
        Ok(Config {
            database_url: nonempty("DATABASE_URL").unwrap_or(d.database_url),
            addr,
            api_tokens: api_tokens(&nonempty, addr)?,
            checkout_lock_seconds: positive(
                parse_var(
                    &nonempty,
                    "COUPONKEEPER_CHECKOUT_LOCK_SECONDS",
                    d.checkout_lock_seconds,
                )?,
                "COUPONKEEPER_CHECKOUT_LOCK_SECONDS",
            )?,
            expiring_soon_hours: expiring_soon_hours(parse_var(
                &nonempty,
                "COUPONKEEPER_EXPIRING_SOON_HOURS",
                d.expiring_soon_hours,
            )?)?,
            db_max_connections: parse_var(
                &nonempty,
                "COUPONKEEPER_DB_MAX_CONNECTIONS",
                d.db_max_connections,
            )?
            .max(1),
            tx_retries: parse_var(&nonempty, "COUPONKEEPER_TX_RETRIES", d.tx_retries)?.min(50),
            db_acquire_timeout_ms: acquire_timeout_ms(parse_var(
                &nonempty,
                "COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS",
                d.db_acquire_timeout_ms,
            )?)?,
            db_tx_timeout_ms: tx_timeout_ms(parse_var(
                &nonempty,
                "COUPONKEEPER_DB_TX_TIMEOUT_MS",
                d.db_tx_timeout_ms,
            )?)?,
            slow_query_ms: slow_query_ms(parse_var(
                &nonempty,
                "COUPONKEEPER_SLOW_QUERY_MS",
                d.slow_query_ms,
            )?)?,
            log_json: match nonempty("COUPONKEEPER_LOG_FORMAT").as_deref() {
                None | Some("text") => false,
                Some("json") => true,
                Some(other) => {
                    return Err(ConfigError {
                        var: "COUPONKEEPER_LOG_FORMAT",
                        message: format!("expected text or json, got {other:?}"),
                    });
                }
            },
            clock_sync_seconds: seconds_between(
                &nonempty,
                "COUPONKEEPER_CLOCK_SYNC_SECONDS",
                d.clock_sync_seconds,
                3600,
            )?,
            drain_seconds: seconds_between(
                &nonempty,
                "COUPONKEEPER_DRAIN_SECONDS",
                d.drain_seconds,
                3600,
            )?,
            jobs: {
                let j = JobSettings::default();
                let secs = |var: &'static str, default: i64| -> Result<i64, ConfigError> {
                    positive(parse_var(&nonempty, var, default)?, var)
                };
                JobSettings {
                    enabled: match nonempty("COUPONKEEPER_JOBS").as_deref() {
                        None | Some("on") | Some("true") | Some("1") => true,
                        Some("off") | Some("false") | Some("0") => false,
                        Some(other) => {
                            return Err(ConfigError {
                                var: "COUPONKEEPER_JOBS",
                                message: format!("expected on or off, got {other:?}"),
                            });
                        }
                    },
                    horizon_seconds: secs(
                        "COUPONKEEPER_EXPIRY_HORIZON_SECONDS",
                        j.horizon_seconds,
                    )?,
                    sweep_seconds: secs("COUPONKEEPER_SWEEP_SECONDS", j.sweep_seconds)?,
                    presale_grace_seconds: parse_var(
                        &nonempty,
                        "COUPONKEEPER_PRESALE_GRACE_SECONDS",
                        j.presale_grace_seconds,
                    )?
                    .max(0),
                    zombie_lock_seconds: secs(
                        "COUPONKEEPER_ZOMBIE_LOCK_SECONDS",
                        j.zombie_lock_seconds,
                    )?,
                    reaper_seconds: secs("COUPONKEEPER_REAPER_SECONDS", j.reaper_seconds)?,
                    archive_after_days: parse_var(
                        &nonempty,
                        "COUPONKEEPER_ARCHIVE_AFTER_DAYS",
                        j.archive_after_days,
                    )?
                    .clamp(1, 3650),
                    archive_seconds: secs("COUPONKEEPER_ARCHIVE_SECONDS", j.archive_seconds)?,
                    reconcile_seconds: secs("COUPONKEEPER_RECONCILE_SECONDS", j.reconcile_seconds)?,
                }
            },
            console: {
                let c = ConsoleSettings::default();
                ConsoleSettings {
                    secure_cookies: match nonempty("COUPONKEEPER_SECURE_COOKIES").as_deref() {
                        None | Some("off") | Some("false") | Some("0") => false,
                        Some("on") | Some("true") | Some("1") => true,
                        Some(other) => {
                            return Err(ConfigError {
                                var: "COUPONKEEPER_SECURE_COOKIES",
                                message: format!("expected on or off, got {other:?}"),
                            });
                        }
                    },
                    session: crate::service::staff::SessionPolicy {
                        idle_seconds: positive(
                            parse_var(
                                &nonempty,
                                "COUPONKEEPER_SESSION_IDLE_SECONDS",
                                c.session.idle_seconds,
                            )?,
                            "COUPONKEEPER_SESSION_IDLE_SECONDS",
                        )?,
                        absolute_seconds: positive(
                            parse_var(
                                &nonempty,
                                "COUPONKEEPER_SESSION_ABSOLUTE_SECONDS",
                                c.session.absolute_seconds,
                            )?,
                            "COUPONKEEPER_SESSION_ABSOLUTE_SECONDS",
                        )?,
                    },
                }
            },
            bootstrap_admin: nonempty("COUPONKEEPER_BOOTSTRAP_ADMIN"),
            support_compensation_max_cents: cents_var(
                &nonempty,
                "COUPONKEEPER_SUPPORT_COMPENSATION_MAX_CENTS",
                d.support_compensation_max_cents,
            )?,
            support_compensation_daily_cents: cents_var(
                &nonempty,
                "COUPONKEEPER_SUPPORT_COMPENSATION_DAILY_CENTS",
                d.support_compensation_daily_cents,
            )?,
            self_check: self_check_settings(&get, addr)?,
            reminders: reminder_settings(&get)?,
            webhooks: webhook_settings(&get)?,
            http_limits: http_limits(&get)?,
            connection_timeouts: ConnectionTimeouts {
                header_read_seconds: seconds_between(
                    &nonempty,
                    "COUPONKEEPER_HEADER_READ_TIMEOUT_SECONDS",
                    d.connection_timeouts.header_read_seconds,
                    MAX_READ_TIMEOUT_SECONDS,
                )?,
                body_read_seconds: seconds_between(
                    &nonempty,
                    "COUPONKEEPER_BODY_READ_TIMEOUT_SECONDS",
                    d.connection_timeouts.body_read_seconds,
                    MAX_READ_TIMEOUT_SECONDS,
                )?,
            },
            metrics_token: metrics_token(&nonempty, addr)?,
        })
    }

    /// API tokens shorter than [`MIN_API_TOKEN_CHARS`], which only a
    /// loopback-only service accepts (`serve` warns about them).
    pub fn short_api_tokens(&self) -> usize {
        self.api_tokens
            .iter()
            .filter(|t| t.chars().count() < MIN_API_TOKEN_CHARS)
            .count()
    }
}

/// `COUPONKEEPER_API_TOKEN`: comma-separated. A token shorter than
/// [`MIN_API_TOKEN_CHARS`] stops the start when the service listens on
/// anything but loopback: a guessable token on a reachable port is an open
/// API. On 127.0.0.1 / ::1 it is allowed (the README's first command uses
/// `dev-token`) and `serve` logs a warning.
fn api_tokens(
    nonempty: &impl Fn(&str) -> Option<String>,
    addr: SocketAddr,
) -> Result<Vec<String>, ConfigError> {
    let tokens: Vec<String> = nonempty("COUPONKEEPER_API_TOKEN")
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let short = tokens
        .iter()
        .filter(|t| t.chars().count() < MIN_API_TOKEN_CHARS)
        .count();
    if short > 0 && !addr.ip().is_loopback() {
        return Err(ConfigError {
            var: "COUPONKEEPER_API_TOKEN",
            message: format!(
                "{short} token(s) shorter than {MIN_API_TOKEN_CHARS} characters while listening on {addr}; \
                 use random tokens of at least {MIN_API_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32`), \
                 or listen on 127.0.0.1 only"
            ),
        });
    }
    Ok(tokens)
}

/// `COUPONKEEPER_METRICS_TOKEN`: like an API token, at least
/// [`MIN_API_TOKEN_CHARS`] characters beyond loopback.
fn metrics_token(
    nonempty: &impl Fn(&str) -> Option<String>,
    addr: SocketAddr,
) -> Result<Option<String>, ConfigError> {
    let Some(token) = nonempty("COUPONKEEPER_METRICS_TOKEN").map(|t| t.trim().to_string()) else {
        return Ok(None);
    };
    if token.chars().count() < MIN_API_TOKEN_CHARS && !addr.ip().is_loopback() {
        return Err(ConfigError {
            var: "COUPONKEEPER_METRICS_TOKEN",
            message: format!(
                "shorter than {MIN_API_TOKEN_CHARS} characters while listening on {addr}; \
                 use a random token of at least {MIN_API_TOKEN_CHARS} characters"
            ),
        });
    }
    Ok(Some(token))
}

fn http_limits(get: &impl Fn(&str) -> Option<String>) -> Result<HttpLimits, ConfigError> {
    // The same CIDR rule as COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS.
    use crate::domain::network::parse_networks;
    let d = HttpLimits::default();
    let rate = |var: &'static str, default| match get(var).filter(|v| !v.trim().is_empty()) {
        None => Ok(default),
        Some(raw) => parse_rate_setting(&raw).map_err(|message| ConfigError { var, message }),
    };
    Ok(HttpLimits {
        login: rate("COUPONKEEPER_RATE_LOGIN", d.login)?,
        self_check: rate("COUPONKEEPER_RATE_SELF_CHECK", d.self_check)?,
        api: rate("COUPONKEEPER_RATE_API", d.api)?,
        redeem_failures_user: rate(
            "COUPONKEEPER_RATE_REDEEM_FAILURES_USER",
            d.redeem_failures_user,
        )?,
        redeem_failures_address: rate(
            "COUPONKEEPER_RATE_REDEEM_FAILURES_ADDRESS",
            d.redeem_failures_address,
        )?,
        trusted_proxies: match get("COUPONKEEPER_TRUSTED_PROXIES") {
            None => Vec::new(),
            Some(raw) => parse_networks(&raw).map_err(|message| ConfigError {
                var: "COUPONKEEPER_TRUSTED_PROXIES",
                message,
            })?,
        },
    })
}

fn webhook_settings(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<crate::service::webhooks::WebhookSettings, ConfigError> {
    use crate::service::webhooks::{WebhookSettings, check_url, http_clients, read_ca_file};
    let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    let d = WebhookSettings::default();
    let default_url = match nonempty("COUPONKEEPER_WEBHOOK_URL") {
        None => None,
        Some(raw) => Some(check_url(&raw).map_err(|message| ConfigError {
            var: "COUPONKEEPER_WEBHOOK_URL",
            message,
        })?),
    };
    let default_secret = nonempty("COUPONKEEPER_WEBHOOK_SECRET");
    if default_url.is_some() && default_secret.is_none() {
        return Err(ConfigError {
            var: "COUPONKEEPER_WEBHOOK_SECRET",
            message: "required when COUPONKEEPER_WEBHOOK_URL is set".into(),
        });
    }
    let ranged = |var: &'static str, default: i64, max: i64| -> Result<i64, ConfigError> {
        let v = parse_var(&nonempty, var, default)?;
        if (1..=max).contains(&v) {
            Ok(v)
        } else {
            Err(ConfigError {
                var,
                message: format!("must be between 1 and {max}"),
            })
        }
    };
    let ca_var = "COUPONKEEPER_WEBHOOK_CA_FILE";
    let allow_var = "COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS";
    let ca_file = nonempty(ca_var).map(|v| std::path::PathBuf::from(v.trim()));
    let extra_roots = match &ca_file {
        None => Vec::new(),
        Some(path) => read_ca_file(path).map_err(|message| ConfigError {
            var: ca_var,
            message,
        })?,
    };
    let settings = WebhookSettings {
        default_url,
        default_secret,
        timeout_seconds: ranged(
            "COUPONKEEPER_WEBHOOK_TIMEOUT_SECONDS",
            d.timeout_seconds,
            300,
        )?,
        max_attempts: ranged("COUPONKEEPER_WEBHOOK_MAX_ATTEMPTS", d.max_attempts, 50)?,
        concurrency: usize::try_from(ranged(
            "COUPONKEEPER_WEBHOOK_CONCURRENCY",
            i64::try_from(d.concurrency).unwrap_or(16),
            256,
        )?)
        .unwrap_or(d.concurrency),
        ca_file,
        extra_roots,
        allow_networks: match nonempty(allow_var) {
            None => Vec::new(),
            Some(raw) => {
                crate::domain::network::parse_networks(&raw).map_err(|message| ConfigError {
                    var: allow_var,
                    message,
                })?
            }
        },
    };
    // PEM that decodes but is no usable certificate shows only when rustls
    // takes it as a root: build the client once here so that is a start
    // error too.
    if settings.ca_file.is_some() {
        http_clients(&settings).map_err(|e| ConfigError {
            var: ca_var,
            message: e.0,
        })?;
    }
    Ok(settings)
}

fn self_check_settings(
    get: &impl Fn(&str) -> Option<String>,
    addr: SocketAddr,
) -> Result<SelfCheckSettings, ConfigError> {
    let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    let secret = match get("COUPONKEEPER_SELF_CHECK_SECRET").filter(|v| !v.is_empty()) {
        None => None,
        Some(raw) => Some(
            crate::domain::self_check::Secret::parse(&raw).map_err(|message| ConfigError {
                var: "COUPONKEEPER_SELF_CHECK_SECRET",
                message,
            })?,
        ),
    };
    let public_url = match nonempty("COUPONKEEPER_PUBLIC_URL") {
        None => format!("http://{addr}"),
        Some(raw) => {
            let url = raw.trim().trim_end_matches('/').to_string();
            let host = url
                .strip_prefix("https://")
                .or_else(|| url.strip_prefix("http://"));
            let ok = host.is_some_and(|h| {
                !h.is_empty()
                    && !h.starts_with('/')
                    && !h.contains(['?', '#', '\\'])
                    && !h.chars().any(|c| c.is_whitespace() || c.is_control())
            });
            if !ok {
                return Err(ConfigError {
                    var: "COUPONKEEPER_PUBLIC_URL",
                    message: format!(
                        "expected http(s)://host[:port][/path] without query, got {raw:?}"
                    ),
                });
            }
            url
        }
    };
    let var = "COUPONKEEPER_SELF_CHECK_TTL_SECONDS";
    let ttl_seconds = parse_var(&nonempty, var, DEFAULT_SELF_CHECK_TTL_SECONDS)?;
    if !(60..=MAX_SELF_CHECK_TTL_SECONDS).contains(&ttl_seconds) {
        return Err(ConfigError {
            var,
            message: format!("must be between 60 and {MAX_SELF_CHECK_TTL_SECONDS} seconds"),
        });
    }
    let support_hint =
        nonempty("COUPONKEEPER_SELF_CHECK_SUPPORT_HINT").map(|v| v.trim().to_string());
    if support_hint
        .as_ref()
        .is_some_and(|h| h.chars().count() > 200 || h.chars().any(char::is_control))
    {
        return Err(ConfigError {
            var: "COUPONKEEPER_SELF_CHECK_SUPPORT_HINT",
            message: "must be at most 200 characters on one line".into(),
        });
    }
    Ok(SelfCheckSettings {
        secret,
        public_url,
        ttl_seconds,
        support_hint,
    })
}

fn reminder_settings(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<ReminderSettings, ConfigError> {
    let d = ReminderSettings::default();
    let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    let err = |var: &'static str| move |message: String| ConfigError { var, message };
    let offsets = match nonempty("COUPONKEEPER_REMINDER_OFFSETS") {
        None => d.offsets,
        Some(raw) => reminder::parse_offsets(&raw).map_err(err("COUPONKEEPER_REMINDER_OFFSETS"))?,
    };
    // Set but empty means "no quiet hours"; unset means the default.
    let quiet_hours = match get("COUPONKEEPER_QUIET_HOURS") {
        None => d.quiet_hours,
        Some(raw) => reminder::parse_quiet_hours(&raw).map_err(err("COUPONKEEPER_QUIET_HOURS"))?,
    };
    let tz = match nonempty("COUPONKEEPER_BUSINESS_TZ") {
        None => d.tz,
        Some(raw) => reminder::parse_business_tz(&raw).map_err(err("COUPONKEEPER_BUSINESS_TZ"))?,
    };
    let window_var = "COUPONKEEPER_REMINDER_WINDOW_SECONDS";
    let window_seconds = parse_var(&nonempty, window_var, d.window_seconds)?;
    if !(0..=86_400).contains(&window_seconds) {
        return Err(ConfigError {
            var: window_var,
            message: "must be between 0 and 86400 seconds".into(),
        });
    }
    let cap = |var: &'static str, default: i64| -> Result<i64, ConfigError> {
        let v = parse_var(&nonempty, var, default)?;
        if (0..=1000).contains(&v) {
            Ok(v)
        } else {
            Err(ConfigError {
                var,
                message: "must be between 0 and 1000 per day".into(),
            })
        }
    };
    // Each step named must be one of the offsets just read.
    let channels = match nonempty("COUPONKEEPER_REMINDER_CHANNELS") {
        None => d.channels,
        Some(raw) => reminder::parse_channels(&raw, &offsets)
            .map_err(err("COUPONKEEPER_REMINDER_CHANNELS"))?,
    };
    Ok(ReminderSettings {
        channels,
        offsets,
        quiet_hours,
        tz,
        sms_min_cents: cents_var(&nonempty, "COUPONKEEPER_SMS_MIN_CENTS", d.sms_min_cents)?,
        window_seconds,
        limits: reminder::RateLimits {
            sms_per_day: cap("COUPONKEEPER_REMINDER_SMS_PER_DAY", d.limits.sms_per_day)?,
            push_per_day: cap("COUPONKEEPER_REMINDER_PUSH_PER_DAY", d.limits.push_per_day)?,
        },
    })
}

fn parse_var<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    default: T,
) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    match get(var) {
        None => Ok(default),
        Some(raw) => raw.trim().parse().map_err(|e: T::Err| ConfigError {
            var,
            message: format!("cannot parse {raw:?}: {e}"),
        }),
    }
}

/// An amount of money in cents: 0 (nothing allowed) up to the largest
/// amount the service accepts.
fn cents_var(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    default: i64,
) -> Result<i64, ConfigError> {
    let v = parse_var(get, var, default)?;
    if (0..=crate::domain::money::MAX_CENTS).contains(&v) {
        Ok(v)
    } else {
        Err(ConfigError {
            var,
            message: format!(
                "must be between 0 and {} cents",
                crate::domain::money::MAX_CENTS
            ),
        })
    }
}

/// A connection wait from 1 ms to 60 s: longer would only hold requests
/// hostage to an outage.
fn acquire_timeout_ms(v: u64) -> Result<u64, ConfigError> {
    if (1..=60_000).contains(&v) {
        Ok(v)
    } else {
        Err(ConfigError {
            var: "COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS",
            message: "must be between 1 and 60000 milliseconds".into(),
        })
    }
}

/// A transaction deadline from 100 ms to 10 minutes: shorter would abandon
/// ordinary work on a busy database, longer is no deadline at all.
fn tx_timeout_ms(v: u64) -> Result<u64, ConfigError> {
    if (100..=600_000).contains(&v) {
        Ok(v)
    } else {
        Err(ConfigError {
            var: "COUPONKEEPER_DB_TX_TIMEOUT_MS",
            message: "must be between 100 and 600000 milliseconds".into(),
        })
    }
}

/// Whole seconds from 1 to `max`.
fn seconds_between(
    get: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    default: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    let v = parse_var(get, var, default)?;
    if (1..=max).contains(&v) {
        Ok(v)
    } else {
        Err(ConfigError {
            var,
            message: format!("must be between 1 and {max} seconds"),
        })
    }
}

/// The slow-query threshold, 0 to 1 minute: past the transaction
/// time-out's default a "slow" call would already have failed.
fn slow_query_ms(v: u64) -> Result<u64, ConfigError> {
    if v <= 60_000 {
        Ok(v)
    } else {
        Err(ConfigError {
            var: "COUPONKEEPER_SLOW_QUERY_MS",
            message: "must be between 0 and 60000 milliseconds".into(),
        })
    }
}

/// The checkout picker's "expiring soon" window, 1 hour to 30 days: a
/// banner about coupons ending months away would say nothing.
fn expiring_soon_hours(v: i64) -> Result<i64, ConfigError> {
    if (1..=720).contains(&v) {
        Ok(v)
    } else {
        Err(ConfigError {
            var: "COUPONKEEPER_EXPIRING_SOON_HOURS",
            message: "must be between 1 and 720 hours".into(),
        })
    }
}

fn positive(v: i64, var: &'static str) -> Result<i64, ConfigError> {
    if (1..=366 * 24 * 3600).contains(&v) {
        Ok(v)
    } else {
        Err(ConfigError {
            var,
            message: format!("must be between 1 and {} seconds", 366 * 24 * 3600),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_need_no_environment() {
        let c = cfg(&[]).expect("defaults");
        assert_eq!(c.database_url, "sqlite://couponkeeper.db");
        assert_eq!(c.addr.to_string(), "127.0.0.1:3000");
        assert_eq!(c.checkout_lock_seconds, 900);
        assert!(c.api_tokens.is_empty());
    }

    #[test]
    fn the_database_acquire_timeout_defaults_to_two_seconds_and_refuses_zero() {
        assert_eq!(cfg(&[]).expect("defaults").db_acquire_timeout_ms, 2_000);
        let c = cfg(&[("COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS", "250")]).expect("ok");
        assert_eq!(c.db_acquire_timeout_ms, 250);
        for bad in ["0", "60001", "soon"] {
            let e = cfg(&[("COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS", bad)]).expect_err(bad);
            assert_eq!(e.var, "COUPONKEEPER_DB_ACQUIRE_TIMEOUT_MS");
        }
    }

    #[test]
    fn the_transaction_deadline_defaults_to_ten_seconds_and_refuses_out_of_range_values() {
        assert_eq!(cfg(&[]).expect("defaults").db_tx_timeout_ms, 10_000);
        let c = cfg(&[("COUPONKEEPER_DB_TX_TIMEOUT_MS", "1500")]).expect("ok");
        assert_eq!(c.db_tx_timeout_ms, 1_500);
        for bad in ["0", "99", "600001", "later"] {
            let e = cfg(&[("COUPONKEEPER_DB_TX_TIMEOUT_MS", bad)]).expect_err(bad);
            assert_eq!(e.var, "COUPONKEEPER_DB_TX_TIMEOUT_MS");
        }
    }

    #[test]
    fn the_clock_sync_and_the_drain_default_to_30_and_20_seconds_and_refuse_out_of_range_values() {
        let d = cfg(&[]).expect("defaults");
        assert_eq!((d.clock_sync_seconds, d.drain_seconds), (30, 20));
        let c = cfg(&[
            ("COUPONKEEPER_CLOCK_SYNC_SECONDS", "5"),
            ("COUPONKEEPER_DRAIN_SECONDS", "3600"),
        ])
        .expect("ok");
        assert_eq!((c.clock_sync_seconds, c.drain_seconds), (5, 3600));
        for var in [
            "COUPONKEEPER_CLOCK_SYNC_SECONDS",
            "COUPONKEEPER_DRAIN_SECONDS",
        ] {
            for bad in ["0", "3601", "-1", "soon"] {
                let e = cfg(&[(var, bad)]).expect_err(bad);
                assert_eq!(e.var, var);
            }
        }
    }

    #[test]
    fn tokens_are_a_comma_separated_list() {
        let c = cfg(&[("COUPONKEEPER_API_TOKEN", "a, b,,c")]).expect("ok");
        assert_eq!(c.api_tokens, vec!["a", "b", "c"]);
        assert_eq!(c.short_api_tokens(), 3);
    }

    #[test]
    fn short_api_tokens_stop_the_start_only_beyond_loopback() {
        let long = "0123456789abcdef0123456789abcdef";
        for addr in ["127.0.0.1:3000", "[::1]:3000"] {
            assert!(
                cfg(&[
                    ("COUPONKEEPER_ADDR", addr),
                    ("COUPONKEEPER_API_TOKEN", "dev-token")
                ])
                .is_ok()
            );
        }
        let e = cfg(&[
            ("COUPONKEEPER_ADDR", "0.0.0.0:3000"),
            ("COUPONKEEPER_API_TOKEN", &format!("{long},dev-token")),
        ])
        .expect_err("short token on all interfaces");
        assert_eq!(e.var, "COUPONKEEPER_API_TOKEN");
        assert!(
            e.message.contains("1 token(s) shorter than 32"),
            "{}",
            e.message
        );
        let ok = cfg(&[
            ("COUPONKEEPER_ADDR", "0.0.0.0:3000"),
            ("COUPONKEEPER_API_TOKEN", long),
        ])
        .expect("long token");
        assert_eq!(ok.short_api_tokens(), 0);
    }

    #[test]
    fn rate_limits_default_on_for_pages_off_for_the_api_and_name_a_bad_value() {
        let c = cfg(&[]).expect("defaults");
        assert_eq!(c.http_limits.login.map(|r| r.count.get()), Some(30));
        assert_eq!(c.http_limits.self_check.map(|r| r.count.get()), Some(60));
        assert!(c.http_limits.api.is_none());
        assert!(c.http_limits.trusted_proxies.is_empty());
        let c = cfg(&[
            ("COUPONKEEPER_RATE_LOGIN", "off"),
            ("COUPONKEEPER_RATE_API", "600/s"),
            ("COUPONKEEPER_TRUSTED_PROXIES", "10.0.0.0/8,::1"),
        ])
        .expect("set");
        assert!(c.http_limits.login.is_none());
        assert_eq!(c.http_limits.api.map(|r| r.count.get()), Some(600));
        assert_eq!(c.http_limits.trusted_proxies.len(), 2);
        for (var, bad) in [
            ("COUPONKEEPER_RATE_SELF_CHECK", "fast"),
            ("COUPONKEEPER_TRUSTED_PROXIES", "10.0.0.0/40"),
        ] {
            assert_eq!(cfg(&[(var, bad)]).map(|_| ()).map_err(|e| e.var), Err(var));
        }
    }

    #[test]
    fn jobs_can_be_turned_off_and_tuned() {
        let c = cfg(&[
            ("COUPONKEEPER_JOBS", "off"),
            ("COUPONKEEPER_SWEEP_SECONDS", "30"),
        ])
        .expect("ok");
        assert!(!c.jobs.enabled);
        assert_eq!(c.jobs.sweep_seconds, 30);
        assert!(cfg(&[]).expect("defaults").jobs.enabled);
        let e = cfg(&[("COUPONKEEPER_JOBS", "maybe")]).unwrap_err();
        assert_eq!(e.var, "COUPONKEEPER_JOBS");
    }

    #[test]
    fn support_compensation_caps_default_and_parse_as_cents() {
        let c = cfg(&[]).expect("defaults");
        assert_eq!(
            (
                c.support_compensation_max_cents,
                c.support_compensation_daily_cents
            ),
            (5000, 20000)
        );
        let c = cfg(&[
            ("COUPONKEEPER_SUPPORT_COMPENSATION_MAX_CENTS", "100"),
            ("COUPONKEEPER_SUPPORT_COMPENSATION_DAILY_CENTS", "0"),
        ])
        .expect("ok");
        assert_eq!(
            (
                c.support_compensation_max_cents,
                c.support_compensation_daily_cents
            ),
            (100, 0)
        );
        for bad in ["-1", "ten", "1.5"] {
            let e = cfg(&[("COUPONKEEPER_SUPPORT_COMPENSATION_MAX_CENTS", bad)]).unwrap_err();
            assert_eq!(e.var, "COUPONKEEPER_SUPPORT_COMPENSATION_MAX_CENTS");
        }
        let e = cfg(&[("COUPONKEEPER_SUPPORT_COMPENSATION_DAILY_CENTS", "-5")]).unwrap_err();
        assert_eq!(e.var, "COUPONKEEPER_SUPPORT_COMPENSATION_DAILY_CENTS");
    }

    #[test]
    fn self_check_links_default_to_off_and_to_this_address() {
        let c = cfg(&[("COUPONKEEPER_ADDR", "0.0.0.0:8080")]).expect("ok");
        assert!(c.self_check.secret.is_none());
        assert_eq!(c.self_check.public_url, "http://0.0.0.0:8080");
        assert_eq!(c.self_check.ttl_seconds, 86_400);
        let c = cfg(&[
            ("COUPONKEEPER_SELF_CHECK_SECRET", &"k".repeat(32)),
            ("COUPONKEEPER_PUBLIC_URL", "https://shop.example/ck/"),
            ("COUPONKEEPER_SELF_CHECK_TTL_SECONDS", "600"),
        ])
        .expect("ok");
        assert!(c.self_check.secret.is_some());
        assert_eq!(c.self_check.public_url, "https://shop.example/ck");
        assert_eq!(c.self_check.ttl_seconds, 600);
        for (var, bad) in [
            ("COUPONKEEPER_SELF_CHECK_SECRET", "too short"),
            ("COUPONKEEPER_PUBLIC_URL", "shop.example"),
            ("COUPONKEEPER_PUBLIC_URL", "https://"),
            ("COUPONKEEPER_PUBLIC_URL", "https://a.example/?x=1"),
            ("COUPONKEEPER_SELF_CHECK_TTL_SECONDS", "59"),
            ("COUPONKEEPER_SELF_CHECK_TTL_SECONDS", "2592001"),
        ] {
            let e = cfg(&[(var, bad)]).unwrap_err();
            assert_eq!(e.var, var, "{bad}");
        }
    }

    #[test]
    fn reminder_settings_default_parse_and_name_the_bad_variable() {
        let d = cfg(&[]).unwrap().reminders;
        assert_eq!(d, ReminderSettings::default());
        let c = cfg(&[
            ("COUPONKEEPER_REMINDER_OFFSETS", "1d,45s"),
            ("COUPONKEEPER_QUIET_HOURS", ""),
            ("COUPONKEEPER_BUSINESS_TZ", "+09:00"),
            ("COUPONKEEPER_SMS_MIN_CENTS", "10000"),
            ("COUPONKEEPER_REMINDER_WINDOW_SECONDS", "600"),
        ])
        .unwrap()
        .reminders;
        assert_eq!(c.offsets, vec![86_400, 45]);
        assert_eq!(c.quiet_hours, None);
        assert_eq!(c.tz.to_string(), "UTC+09:00");
        let ny = cfg(&[("COUPONKEEPER_BUSINESS_TZ", "America/New_York")])
            .unwrap()
            .reminders;
        assert_eq!(ny.tz.to_string(), "America/New_York");
        assert_eq!((c.sms_min_cents, c.window_seconds), (10_000, 600));
        for (var, bad) in [
            ("COUPONKEEPER_REMINDER_OFFSETS", "3d,0s"),
            ("COUPONKEEPER_QUIET_HOURS", "late"),
            ("COUPONKEEPER_BUSINESS_TZ", "Europe/Atlantis"),
            ("COUPONKEEPER_SMS_MIN_CENTS", "-1"),
            ("COUPONKEEPER_REMINDER_WINDOW_SECONDS", "90000"),
            ("COUPONKEEPER_REMINDER_SMS_PER_DAY", "x"),
            ("COUPONKEEPER_REMINDER_CHANNELS", "3d=fax"),
        ] {
            let e = cfg(&[(var, bad)]).unwrap_err();
            assert_eq!(e.var, var, "{e}");
        }
    }

    #[test]
    fn reminder_channels_by_step_are_checked_against_the_configured_offsets() {
        use crate::domain::reminder::Channel;
        assert!(cfg(&[]).unwrap().reminders.channels.is_empty());
        assert!(
            cfg(&[("COUPONKEEPER_REMINDER_CHANNELS", " ")])
                .unwrap()
                .reminders
                .channels
                .is_empty()
        );
        let c = cfg(&[(
            "COUPONKEEPER_REMINDER_CHANNELS",
            reminder::RECOMMENDED_CHANNELS,
        )])
        .unwrap()
        .reminders;
        assert_eq!(c.step_channel(86_400), Channel::Push);
        assert_eq!(c.step_channel(1800), Channel::Popup);
        // A step of another plan is refused, naming the variable.
        let c = cfg(&[
            ("COUPONKEEPER_REMINDER_OFFSETS", "2h,10m"),
            ("COUPONKEEPER_REMINDER_CHANNELS", "10m=popup"),
        ])
        .unwrap()
        .reminders;
        assert_eq!(c.step_channel(600), Channel::Popup);
        for bad in ["3d=in_app", "2h=push,2h=sms", "2h:push", "garbage"] {
            let e = cfg(&[
                ("COUPONKEEPER_REMINDER_OFFSETS", "2h,10m"),
                ("COUPONKEEPER_REMINDER_CHANNELS", bad),
            ])
            .unwrap_err();
            assert_eq!(e.var, "COUPONKEEPER_REMINDER_CHANNELS", "{bad}: {e}");
        }
    }

    #[test]
    fn webhook_allow_networks_parse_and_a_bad_entry_names_the_variable() {
        assert!(
            cfg(&[])
                .expect("defaults")
                .webhooks
                .allow_networks
                .is_empty()
        );
        let c = cfg(&[(
            "COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS",
            "10.0.0.0/8, fd00::/8,127.0.0.1",
        )])
        .expect("ok");
        let shown: Vec<String> = c
            .webhooks
            .allow_networks
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["10.0.0.0/8", "fd00::/8", "127.0.0.1/32"]);
        for bad in [
            "10.0.0.0/33",
            "intranet",
            "10.1.2.3/8",
            "10.0.0.0/8 fd00::/8",
        ] {
            let e = cfg(&[("COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS", bad)]).unwrap_err();
            assert_eq!(e.var, "COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS", "{bad}");
            assert!(
                e.to_string().contains(bad.split(' ').next().unwrap_or(bad)),
                "{e}"
            );
        }
    }

    #[test]
    fn the_environments_webhook_url_may_be_loopback_but_carries_no_credentials() {
        let c = cfg(&[
            ("COUPONKEEPER_WEBHOOK_URL", "http://127.0.0.1:8080/hook"),
            ("COUPONKEEPER_WEBHOOK_SECRET", "relay-secret-0123456789"),
        ])
        .expect("a relay on this host");
        assert_eq!(
            c.webhooks.default_url.as_deref(),
            Some("http://127.0.0.1:8080/hook")
        );
        let e = cfg(&[
            (
                "COUPONKEEPER_WEBHOOK_URL",
                "http://user:pass@127.0.0.1:8080/hook",
            ),
            ("COUPONKEEPER_WEBHOOK_SECRET", "relay-secret-0123456789"),
        ])
        .unwrap_err();
        assert_eq!(e.var, "COUPONKEEPER_WEBHOOK_URL");
    }

    #[test]
    fn the_slow_query_threshold_is_0_to_60000_ms_and_a_bad_one_stops_the_start() {
        assert_eq!(cfg(&[]).map(|c| c.slow_query_ms).ok(), Some(200));
        for (ok, ms) in [("0", 0), ("60000", 60_000)] {
            assert_eq!(
                cfg(&[("COUPONKEEPER_SLOW_QUERY_MS", ok)])
                    .map(|c| c.slow_query_ms)
                    .ok(),
                Some(ms)
            );
        }
        for bad in ["60001", "-1", "fast", "1.5"] {
            let e = cfg(&[("COUPONKEEPER_SLOW_QUERY_MS", bad)]).unwrap_err();
            assert_eq!(e.var, "COUPONKEEPER_SLOW_QUERY_MS", "{bad}");
        }
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        for bad in ["0", "721", "two days"] {
            let e = cfg(&[("COUPONKEEPER_EXPIRING_SOON_HOURS", bad)]).unwrap_err();
            assert_eq!(e.var, "COUPONKEEPER_EXPIRING_SOON_HOURS", "{bad}");
        }
        assert_eq!(
            cfg(&[("COUPONKEEPER_EXPIRING_SOON_HOURS", "720")])
                .map(|c| c.expiring_soon_hours)
                .ok(),
            Some(720)
        );
        let e = cfg(&[("COUPONKEEPER_CHECKOUT_LOCK_SECONDS", "soon")]).unwrap_err();
        assert_eq!(e.var, "COUPONKEEPER_CHECKOUT_LOCK_SECONDS");
        let e = cfg(&[("COUPONKEEPER_CHECKOUT_LOCK_SECONDS", "0")]).unwrap_err();
        assert_eq!(e.var, "COUPONKEEPER_CHECKOUT_LOCK_SECONDS");
    }

    /// The rows of the book's configuration table: (variable, default
    /// column), in the table's order.
    fn book_table() -> Vec<(String, String)> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/docs/src/operations/configuration.md"
        );
        let text = std::fs::read_to_string(path).expect("the book's configuration page");
        text.lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                // "| `VAR` | default | meaning |" splits into 5 cells.
                let var = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
                Some((var.to_string(), cells.get(2)?.to_string()))
            })
            .collect()
    }

    /// Every variable `from_lookup` asks for, with the values in `set`
    /// and nothing else set.
    fn variables_read(set: &[(&str, &str)]) -> std::collections::BTreeSet<String> {
        let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let map: HashMap<&str, &str> = set.iter().copied().collect();
        let _ = Config::from_lookup(|k| {
            asked.borrow_mut().insert(k.to_string());
            map.get(k).map(|v| v.to_string())
        });
        asked.into_inner()
    }

    #[test]
    fn the_books_configuration_table_names_every_variable_the_service_reads_and_no_other() {
        let table: std::collections::BTreeSet<String> =
            book_table().into_iter().map(|(var, _)| var).collect();
        // Read only when the variable before them is set: the webhook
        // secret with a webhook URL.
        let mut read = variables_read(&[]);
        read.extend(variables_read(&[(
            "COUPONKEEPER_WEBHOOK_URL",
            "https://hooks.example.com/coupons",
        )]));
        // The log filter is read by tracing-subscriber in `main`, not here.
        read.insert("RUST_LOG".to_string());
        let undocumented: Vec<_> = read.difference(&table).collect();
        let not_read: Vec<_> = table.difference(&read).collect();
        assert!(
            undocumented.is_empty() && not_read.is_empty(),
            "read but not in docs/src/operations/configuration.md: {undocumented:?}; \
             in the table but never read: {not_read:?}"
        );
    }

    #[test]
    fn every_default_in_the_books_configuration_table_is_the_one_the_service_uses() {
        let unset = format!("{:?}", cfg(&[]).expect("defaults"));
        let mut checked_count = 0_usize;
        for (var, default) in book_table() {
            // "`900` (1–60000)": the value is the first code span; a
            // default that is not a literal ("(none)", one computed from
            // another variable) has no code span or a `<name>` in it.
            let Some(value) = default
                .strip_prefix('`')
                .and_then(|rest| rest.split('`').next())
            else {
                assert!(
                    default.starts_with("(none)"),
                    "{var}: the default column is neither a `value` nor (none): {default}"
                );
                continue;
            };
            if var == "RUST_LOG" {
                // tracing-subscriber's filter, set up in `main`.
                assert!(
                    include_str!("main.rs").contains(&format!("\"{value}\"")),
                    "RUST_LOG: the book's default `{value}` is not the one in src/main.rs"
                );
                continue;
            }
            if value.contains('<') {
                continue;
            }
            let set = cfg(&[(var.as_str(), value)])
                .unwrap_or_else(|e| panic!("{var}={value} from the book does not parse: {e}"));
            assert_eq!(
                format!("{set:?}"),
                unset,
                "{var}: the book says the default is `{value}`, but setting it changes the configuration"
            );
            checked_count += 1;
        }
        assert!(checked_count >= 40, "only {checked_count} defaults checked");
    }
}
