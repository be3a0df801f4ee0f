//! Webhook delivery (API.md, Webhooks (outbound)).
//!
//! State changes only *insert* outbox rows, in their own transaction
//! (`store::coupons::transition`, expiry, compensation). Everything else
//! happens here, in the dispatcher job, never inside a payment or expiry
//! transaction:
//!
//! 1. fan-out ([`Service::fan_out`]): one bounded transaction turns the
//!    oldest undispatched outbox messages into one `pending` delivery per
//!    subscriber that wants the type (the environment's default subscriber
//!    and the enabled console subscribers);
//! 2. claim ([`Service::claim_deliveries`]): one short transaction takes due
//!    deliveries and sets a lease (`next_attempt_at` = now + timeout +
//!    margin), so another dispatcher does not send them meanwhile;
//! 3. send ([`Service::send_delivery`]): the POST, outside any transaction
//!    and without holding a connection, with the configured timeout;
//! 4. record ([`Service::finish_delivery`]): one short transaction writes
//!    the attempt and moves the delivery to `delivered`, to its next
//!    attempt (exponential backoff with jitter) or to `dead`.
//!
//! A crash between 3 and 4 leaves the lease to run out; the delivery is
//! then sent again with the same `id` (at least once). Order per user: a
//! delivery is not due while an earlier message (lower outbox id) of the
//! same user to the same subscriber is still `pending`; a dead one no
//! longer holds the others back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration as StdDuration, Instant};

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use super::egress::{self, Blocked, GuardedResolver, Lookup, ResolveError, SystemLookup};
use super::staff::actions;
use super::{Ctx, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::delivery::{MESSAGE_MISSING, REDELIVERY_REQUESTED, SUBSCRIBER_GONE};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::store::audit::{NewStaffAudit, insert_staff_audit};
use crate::store::deliveries::{
    self, AttemptRecord, ClaimScope, DEFAULT_SUBSCRIBER, DeliveryFilter, DeliveryRow, NewDelivery,
    Next, SubscriberRow,
};

/// Every type a subscriber may ask for (API.md).
pub const EVENT_TYPES: [&str; 8] = [
    "coupon.expired",
    "coupon.locked",
    "coupon.released",
    "coupon.used",
    "compensation.issued",
    "reminder.coupons_expiring",
    "reminder.final_payment_open",
    "reminder.coupon_expires_before_final_payment",
];

/// The signature header.
pub const SIGNATURE_HEADER: &str = "Couponkeeper-Signature";

/// Delivery settings (configuration table).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// `COUPONKEEPER_WEBHOOK_URL`: the default subscriber, every type.
    pub default_url: Option<String>,
    /// `COUPONKEEPER_WEBHOOK_SECRET`: its signing secret.
    pub default_secret: Option<String>,
    /// `COUPONKEEPER_WEBHOOK_TIMEOUT_SECONDS`, default 10.
    pub timeout_seconds: i64,
    /// `COUPONKEEPER_WEBHOOK_MAX_ATTEMPTS`, default 8: attempts before a
    /// delivery is dead-lettered.
    pub max_attempts: i64,
    /// `COUPONKEEPER_WEBHOOK_CONCURRENCY`, default 16: most sends in flight
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

/// First retry delay.
pub const BACKOFF_BASE_MS: i64 = 2_000;
/// Longest retry delay.
pub const BACKOFF_CAP_MS: i64 = 3_600_000;

/// The delay before the next attempt after `failed` failed attempts
/// (1-based): 2 s × 2^(failed-1), at most 1 h, times `jitter` (0.8..=1.2).
pub fn backoff_ms(failed: i64, jitter: f64) -> i64 {
    let exp = u32::try_from((failed - 1).clamp(0, 30)).unwrap_or(30);
    let base = BACKOFF_BASE_MS
        .saturating_mul(1i64 << exp)
        .min(BACKOFF_CAP_MS);
    (base as f64 * jitter.clamp(0.8, 1.2)).round() as i64
}

/// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body.as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// The webhook id of an outbox message: the same for every subscriber and
/// every attempt.
pub fn message_id(outbox_id: i64) -> String {
    format!("msg_{outbox_id}")
}

/// The delivered body: `{"id","type","occurred_at","user_id","data"}`,
/// with `data` exactly as stored, so every attempt sends the same bytes.
pub fn envelope(
    outbox_id: i64,
    event_type: &str,
    user_id: Option<&str>,
    payload: &str,
    created_at: i64,
) -> String {
    let data = match serde_json::from_str::<serde_json::Value>(payload) {
        Ok(_) => payload.to_string(),
        Err(_) => "null".to_string(),
    };
    let s = |v: &str| serde_json::Value::String(v.to_string()).to_string();
    format!(
        "{{\"id\":{},\"type\":{},\"occurred_at\":{},\"user_id\":{},\"data\":{data}}}",
        s(&message_id(outbox_id)),
        s(event_type),
        s(&rfc3339(from_ms(created_at))),
        user_id.map(s).unwrap_or_else(|| "null".into()),
    )
}

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

/// A subscriber as pages show it: the secret only by its last 4 characters.
#[derive(Debug, Clone, Serialize)]
pub struct SubscriberView {
    pub id: String,
    pub url: String,
    pub secret_hint: String,
    /// `*` or the list.
    pub event_types: Vec<String>,
    pub enabled: bool,
    pub created_by: String,
    pub created_at: String,
    /// The environment's subscriber (not editable in the console).
    pub from_environment: bool,
}

fn secret_hint(secret: &str) -> String {
    let tail: String = secret
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("…{tail}")
}

fn parse_types(raw: &str) -> Vec<String> {
    if raw == "*" {
        vec!["*".into()]
    } else {
        serde_json::from_str(raw).unwrap_or_default()
    }
}

fn wants(types: &str, event_type: &str) -> bool {
    types == "*" || parse_types(types).iter().any(|t| t == event_type)
}

impl From<SubscriberRow> for SubscriberView {
    fn from(s: SubscriberRow) -> Self {
        SubscriberView {
            secret_hint: secret_hint(&s.secret),
            event_types: parse_types(&s.event_types),
            enabled: s.enabled == 1,
            created_at: rfc3339(from_ms(s.created_at)),
            id: s.id,
            url: s.url,
            created_by: s.created_by,
            from_environment: false,
        }
    }
}

/// A delivery with its attempts, for the console.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryView {
    pub id: i64,
    /// The webhook id (`msg_<outbox id>`).
    pub message_id: String,
    pub subscriber_id: String,
    pub subscriber_url: Option<String>,
    pub event_type: String,
    pub user_id: Option<String>,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: String,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub delivered_at: Option<String>,
    pub created_at: String,
    pub history: Vec<AttemptView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AttemptView {
    pub at: String,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
    pub actor: String,
}

/// A delivery taken by a dispatcher, with everything needed to send it.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub delivery: DeliveryRow,
    pub lease_until: i64,
    pub url: String,
    pub secret: String,
    pub body: String,
    /// The environment's subscriber: sent without the address rule.
    pub trusted: bool,
}

/// What one send did.
#[derive(Debug, Clone)]
pub struct SendOutcome {
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

impl SendOutcome {
    pub fn ok(&self) -> bool {
        self.status_code.is_some_and(|c| (200..300).contains(&c))
    }
}

/// What one dispatcher step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchReport {
    pub fanned_out: usize,
    pub sent: usize,
    pub delivered: usize,
    pub retried: usize,
    pub dead: usize,
}

impl DispatchReport {
    /// Counts recorded sends by where they went.
    fn tally(&mut self, nexts: &[Next]) {
        for next in nexts {
            self.sent += 1;
            match next {
                Next::Delivered => self.delivered += 1,
                Next::RetryAt(_) => self.retried += 1,
                Next::Dead => self.dead += 1,
            }
        }
    }

    /// Adds another report's counts.
    pub fn add(&mut self, other: DispatchReport) {
        self.fanned_out += other.fanned_out;
        self.sent += other.sent;
        self.delivered += other.delivered;
        self.retried += other.retried;
        self.dead += other.dead;
    }
}

/// What a send task returns: the delivery and what its send did.
type SendResult = (ClaimedDelivery, SendOutcome);

/// One attempt to record ([`Service::finish_deliveries`]).
#[derive(Debug, Clone)]
struct FinishRow {
    id: i64,
    lease: i64,
    next: Next,
    code: Option<i64>,
    error: Option<String>,
    duration_ms: i64,
}

/// Most sends in flight in [`Service::dispatch_once`].
pub const MAX_IN_FLIGHT: usize = 8;
/// Deliveries of disabled or removed subscribers dead-lettered per claim.
const ORPHAN_BATCH: i64 = 100;
/// How often a dispatcher looks for deliveries of disabled or removed
/// subscribers.
pub const ORPHANS_EVERY: StdDuration = StdDuration::from_secs(30);
/// Most outbox messages one fan-out transaction turns into deliveries.
pub const FAN_OUT_BATCH: i64 = 500;
/// Longest pause between two fan-outs while sends are in flight: how late a
/// new message can be picked up by a busy dispatcher.
const FAN_OUT_EVERY: StdDuration = StdDuration::from_millis(200);

/// What [`Service::claim_under_lease`] may take.
#[derive(Debug, Clone)]
enum Slots {
    /// Up to this many, of any subscriber.
    Total(i64),
    /// The free slots of each live subscriber, given the sends in flight;
    /// and whether to take deliveries of subscribers gone or disabled.
    PerSubscriber(HashMap<String, usize>, bool),
}

/// The dispatcher `serve` runs: sends stay in flight while new ones are
/// claimed, up to [`WebhookSettings::concurrency`] per subscriber, so a
/// receiver answering in 2 s neither holds up the other subscribers nor
/// makes the dispatcher wait for a whole batch.
///
/// Each [`Dispatcher::turn`] fans out new messages (at most every
/// [`FAN_OUT_EVERY`] while busy, at once while fan-out finds full batches),
/// claims due deliveries for the free slots and then waits for the first
/// send to finish (at most `max_wait`), collecting every finished one.
/// Nothing is held in memory that the database does not also hold: a
/// dispatcher that stops mid-send leaves leases that run out.
pub struct Dispatcher {
    service: Service,
    running: tokio::task::JoinSet<SendResult>,
    in_flight: HashMap<String, usize>,
    last_fan_out: Option<Instant>,
    fan_out_full: bool,
    last_orphans: Option<Instant>,
}

impl Dispatcher {
    pub fn new(service: Service) -> Dispatcher {
        Dispatcher {
            service,
            running: tokio::task::JoinSet::new(),
            in_flight: HashMap::new(),
            last_fan_out: None,
            fan_out_full: false,
            last_orphans: None,
        }
    }

    /// Sends in flight.
    pub fn in_flight(&self) -> usize {
        self.running.len()
    }

    /// One turn (see the type's doc). The report counts the messages fanned
    /// out, the deliveries claimed and the sends that finished.
    pub async fn turn(&mut self, max_wait: StdDuration) -> Result<TurnReport, ServiceError> {
        let mut report = TurnReport::default();
        let fan_out_due = self.running.is_empty()
            || self.fan_out_full
            || self
                .last_fan_out
                .is_none_or(|at| at.elapsed() >= FAN_OUT_EVERY);
        if fan_out_due {
            let n = self.service.fan_out(FAN_OUT_BATCH).await?;
            self.last_fan_out = Some(Instant::now());
            self.fan_out_full = n as i64 >= FAN_OUT_BATCH;
            report.sends.fanned_out = n;
        }
        if self.running.len() < MAX_IN_FLIGHT_TOTAL {
            let orphans = self
                .last_orphans
                .is_none_or(|at| at.elapsed() >= ORPHANS_EVERY);
            let claimed = self
                .service
                .claim_for_slots(&self.in_flight, orphans)
                .await?;
            if orphans {
                self.last_orphans = Some(Instant::now());
            }
            report.claimed = claimed.len();
            for d in claimed {
                *self
                    .in_flight
                    .entry(d.delivery.subscriber_id.clone())
                    .or_default() += 1;
                let service = self.service.clone();
                self.running.spawn(async move {
                    let outcome = service.send_delivery(&d).await;
                    (d, outcome)
                });
            }
        }
        if !self.running.is_empty()
            && let Ok(Some(done)) = tokio::time::timeout(max_wait, self.running.join_next()).await
        {
            let mut finished = Vec::new();
            self.collect(&mut finished, done);
            while let Some(done) = self.running.try_join_next() {
                self.collect(&mut finished, done);
            }
            self.record(&mut report.sends, finished).await;
        }
        Ok(report)
    }

    /// Frees the slot of a finished send and keeps its outcome to record.
    fn collect(
        &mut self,
        finished: &mut Vec<SendResult>,
        done: Result<SendResult, tokio::task::JoinError>,
    ) {
        match done {
            Ok(result) => {
                let sub = &result.0.delivery.subscriber_id;
                if let Some(n) = self.in_flight.get_mut(sub) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.in_flight.remove(sub);
                    }
                }
                finished.push(result);
            }
            // A panicked send: its slot stays taken until the dispatcher is
            // replaced, and its lease runs out (sent again, same id).
            Err(e) => tracing::warn!(error = %e, "webhook send task failed"),
        }
    }

    /// Records the finished sends of a turn in one transaction: one commit
    /// for many attempts. If it fails, their leases run out and they are
    /// sent again with the same ids (at least once).
    async fn record(&self, report: &mut DispatchReport, finished: Vec<SendResult>) {
        if finished.is_empty() {
            return;
        }
        match self.service.finish_deliveries(finished).await {
            Ok(nexts) => report.tally(&nexts),
            Err(e) => tracing::warn!(error = %e, "cannot record webhook attempts"),
        }
    }

    /// Waits up to `grace` for the sends in flight (at shutdown) and records
    /// them, then drops the rest: their leases run out and they are sent
    /// again, same id.
    pub async fn drain(&mut self, grace: StdDuration) -> DispatchReport {
        let mut report = DispatchReport::default();
        let mut finished = Vec::new();
        let deadline = tokio::time::Instant::now() + grace;
        while !self.running.is_empty() {
            match tokio::time::timeout_at(deadline, self.running.join_next()).await {
                Ok(Some(done)) => self.collect(&mut finished, done),
                Ok(None) | Err(_) => break,
            }
        }
        self.running.abort_all();
        self.record(&mut report, finished).await;
        report
    }
}

/// What one [`Dispatcher::turn`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnReport {
    /// Deliveries claimed (sends started).
    pub claimed: usize,
    /// Messages fanned out and sends finished.
    pub sends: DispatchReport,
}

impl TurnReport {
    /// Nothing was fanned out, claimed or finished.
    pub fn idle(&self) -> bool {
        self.claimed == 0 && self.sends == DispatchReport::default()
    }
}

/// Most sends in flight in one [`Dispatcher`], whatever the subscribers.
pub const MAX_IN_FLIGHT_TOTAL: usize = 512;
/// Actor of the dispatcher in `delivery_attempts`.
pub const ACTOR_DISPATCHER: &str = "job:webhook-dispatcher";

impl Service {
    pub fn webhooks(&self) -> &WebhookSettings {
        &self.inner.webhooks
    }

    /// Enabled subscribers with their secrets, the environment's first.
    async fn live_subscribers(
        c: &mut sqlx::AnyConnection,
        w: &WebhookSettings,
    ) -> Result<Vec<SubscriberRow>, sqlx::Error> {
        let mut subs = Vec::new();
        if let (Some(url), Some(secret)) = (&w.default_url, &w.default_secret) {
            subs.push(SubscriberRow {
                id: DEFAULT_SUBSCRIBER.into(),
                url: url.clone(),
                secret: secret.clone(),
                event_types: "*".into(),
                enabled: 1,
                created_by: "environment".into(),
                created_at: 0,
                disabled_at: None,
            });
        }
        subs.extend(
            deliveries::subscribers(c)
                .await?
                .into_iter()
                .filter(|s| s.enabled == 1),
        );
        Ok(subs)
    }

    /// Turns up to `batch` undispatched outbox messages into deliveries,
    /// in one transaction. Returns the messages handled.
    pub async fn fan_out(&self, batch: i64) -> Result<usize, ServiceError> {
        let w = self.webhooks().clone();
        let now_ms = to_ms(self.now());
        let batch = batch.clamp(1, 1000);
        self.inner
            .db
            .write(move |c| {
                let w = w.clone();
                Box::pin(async move {
                    deliveries::lock_fan_out(c).await?;
                    let msgs = deliveries::undispatched(c, batch).await?;
                    if msgs.is_empty() {
                        return Ok::<usize, ServiceError>(0);
                    }
                    let subs = Self::live_subscribers(c, &w).await?;
                    let rows: Vec<NewDelivery> = msgs
                        .iter()
                        .flat_map(|m| {
                            subs.iter()
                                .filter(|s| wants(&s.event_types, &m.event_type))
                                .map(|s| NewDelivery {
                                    outbox_id: m.id,
                                    subscriber_id: s.id.clone(),
                                    event_type: m.event_type.clone(),
                                    user_id: m.user_id.clone(),
                                })
                        })
                        .collect();
                    deliveries::insert_deliveries(c, &rows, now_ms).await?;
                    let ids: Vec<i64> = msgs.iter().map(|m| m.id).collect();
                    deliveries::mark_dispatched(c, &ids, now_ms).await?;
                    Ok(msgs.len())
                })
            })
            .await
    }

    /// Takes up to `batch` due deliveries of any subscriber under a lease,
    /// with their bodies and targets. A delivery whose subscriber is gone
    /// or disabled is dead-lettered here instead.
    pub async fn claim_deliveries(&self, batch: i64) -> Result<Vec<ClaimedDelivery>, ServiceError> {
        self.claim_under_lease(Slots::Total(batch.clamp(1, 1000)))
            .await
    }

    /// Takes due deliveries for the free send slots: per live subscriber
    /// `concurrency - in_flight[subscriber]`; with `orphans`, also a batch
    /// of those whose subscriber is gone or disabled, which are
    /// dead-lettered (that look walks every due delivery, so the
    /// dispatcher asks for it only every [`ORPHANS_EVERY`]).
    pub async fn claim_for_slots(
        &self,
        in_flight: &HashMap<String, usize>,
        orphans: bool,
    ) -> Result<Vec<ClaimedDelivery>, ServiceError> {
        self.claim_under_lease(Slots::PerSubscriber(in_flight.clone(), orphans))
            .await
    }

    async fn claim_under_lease(&self, slots: Slots) -> Result<Vec<ClaimedDelivery>, ServiceError> {
        let w = self.webhooks().clone();
        let now_ms = to_ms(self.now());
        let lease_until = now_ms + w.lease_ms();
        self.inner
            .db
            .write(move |c| {
                let w = w.clone();
                let slots = slots.clone();
                Box::pin(async move {
                    let subs = Self::live_subscribers(c, &w).await?;
                    let rows = match &slots {
                        Slots::Total(batch) => {
                            deliveries::claim_due(c, ClaimScope::Any, now_ms, lease_until, *batch)
                                .await?
                        }
                        Slots::PerSubscriber(in_flight, orphans) => {
                            let mut rows = Vec::new();
                            for sub in &subs {
                                let busy = in_flight.get(&sub.id).copied().unwrap_or(0);
                                let free = w.concurrency.saturating_sub(busy);
                                if free == 0 {
                                    continue;
                                }
                                let free = i64::try_from(free).unwrap_or(1000).min(1000);
                                rows.extend(
                                    deliveries::claim_due(
                                        c,
                                        ClaimScope::Subscriber(&sub.id),
                                        now_ms,
                                        lease_until,
                                        free,
                                    )
                                    .await?,
                                );
                            }
                            if *orphans {
                                let live: Vec<String> = subs.iter().map(|s| s.id.clone()).collect();
                                rows.extend(
                                    deliveries::claim_due(
                                        c,
                                        ClaimScope::NotIn(&live),
                                        now_ms,
                                        lease_until,
                                        ORPHAN_BATCH,
                                    )
                                    .await?,
                                );
                            }
                            rows
                        }
                    };
                    let mut out = Vec::with_capacity(rows.len());
                    let outbox_ids: Vec<i64> = rows.iter().map(|d| d.outbox_id).collect();
                    let messages: HashMap<i64, _> = deliveries::messages(c, &outbox_ids)
                        .await?
                        .into_iter()
                        .map(|(id, t, u, p, at)| (id, (t, u, p, at)))
                        .collect();
                    for d in rows {
                        let Some(sub) = subs.iter().find(|s| s.id == d.subscriber_id) else {
                            deliveries::kill(c, d.id, SUBSCRIBER_GONE, now_ms).await?;
                            continue;
                        };
                        let Some((event_type, user_id, payload, created_at)) =
                            messages.get(&d.outbox_id)
                        else {
                            deliveries::kill(c, d.id, MESSAGE_MISSING, now_ms).await?;
                            continue;
                        };
                        let body = envelope(
                            d.outbox_id,
                            event_type,
                            user_id.as_deref(),
                            payload,
                            *created_at,
                        );
                        out.push(ClaimedDelivery {
                            trusted: w.default_url.is_some() && sub.id == DEFAULT_SUBSCRIBER,
                            url: sub.url.clone(),
                            secret: sub.secret.clone(),
                            body,
                            lease_until,
                            delivery: d,
                        });
                    }
                    Ok::<_, ServiceError>(out)
                })
            })
            .await
    }

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
        let result = http
            .post(&d.url)
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

    /// Records an attempt and moves the delivery on. Returns where it went.
    pub async fn finish_delivery(
        &self,
        d: &ClaimedDelivery,
        outcome: &SendOutcome,
    ) -> Result<Next, ServiceError> {
        let nexts = self
            .finish_deliveries(vec![(d.clone(), outcome.clone())])
            .await?;
        Ok(nexts.first().copied().unwrap_or(Next::Dead))
    }

    /// Records the attempts of several sends in one transaction and moves
    /// each delivery on (delivered, next attempt with backoff, or dead).
    /// Each move is conditional on the delivery's lease, so an attempt
    /// recorded after another dispatcher took the delivery over changes
    /// nothing but the attempt log. Returns where each went, in order.
    pub async fn finish_deliveries(
        &self,
        done: Vec<(ClaimedDelivery, SendOutcome)>,
    ) -> Result<Vec<Next>, ServiceError> {
        let now_ms = to_ms(self.now());
        let max_attempts = self.webhooks().max_attempts;
        let rows: Vec<FinishRow> =
            done.iter()
                .map(|(d, outcome)| {
                    let failed = d.delivery.attempts + 1;
                    let next = if outcome.ok() {
                        Next::Delivered
                    } else if failed >= max_attempts {
                        Next::Dead
                    } else {
                        let jitter = rand::Rng::random_range(&mut rand::rng(), 0.8..=1.2);
                        Next::RetryAt(now_ms + backoff_ms(failed, jitter))
                    };
                    let code = outcome.status_code.map(i64::from);
                    FinishRow {
                        id: d.delivery.id,
                        lease: d.lease_until,
                        next,
                        code,
                        error: outcome.error.clone().or_else(|| {
                            (!outcome.ok()).then(|| format!("HTTP {}", code.unwrap_or(0)))
                        }),
                        duration_ms: outcome.duration_ms,
                    }
                })
                .collect();
        let nexts = rows.iter().map(|r| r.next).collect();
        self.inner
            .db
            .write(move |c| {
                let rows = rows.clone();
                Box::pin(async move {
                    let attempts: Vec<AttemptRecord<'_>> = rows
                        .iter()
                        .map(|r| AttemptRecord {
                            delivery_id: r.id,
                            at_ms: now_ms,
                            status_code: r.code,
                            error: r.error.as_deref(),
                            duration_ms: r.duration_ms,
                            actor: ACTOR_DISPATCHER,
                        })
                        .collect();
                    deliveries::insert_attempts(c, &attempts).await?;
                    for r in &rows {
                        deliveries::finish_attempt(
                            c,
                            r.id,
                            r.lease,
                            r.next,
                            r.code,
                            r.error.as_deref(),
                            now_ms,
                        )
                        .await?;
                    }
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        Ok(nexts)
    }

    /// One dispatcher step: fan out up to `batch` messages, then send up to
    /// `batch` due deliveries of any subscriber, [`MAX_IN_FLIGHT`] at a
    /// time, and wait for all of them. Tests and tools use it; `serve` runs
    /// a [`Dispatcher`], which keeps sends flowing per subscriber.
    pub async fn dispatch_once(&self, batch: i64) -> Result<DispatchReport, ServiceError> {
        let mut report = DispatchReport {
            fanned_out: self.fan_out(batch).await?,
            ..DispatchReport::default()
        };
        let claimed = self.claim_deliveries(batch).await?;
        let mut pending = claimed.into_iter();
        let mut running = tokio::task::JoinSet::new();
        loop {
            while running.len() < MAX_IN_FLIGHT {
                let Some(d) = pending.next() else { break };
                let service = self.clone();
                running.spawn(async move {
                    let outcome = service.send_delivery(&d).await;
                    service.finish_delivery(&d, &outcome).await
                });
            }
            let Some(done) = running.join_next().await else {
                break;
            };
            match done {
                Ok(Ok(next)) => report.tally(&[next]),
                // The lease runs out and the delivery is sent again.
                Ok(Err(e)) => tracing::warn!(error = %e, "cannot record a webhook attempt"),
                Err(e) => tracing::warn!(error = %e, "webhook send task failed"),
            }
        }
        Ok(report)
    }

    /// Deliveries for the console, newest first.
    pub async fn deliveries(
        &self,
        filter: DeliveryFilter,
        limit: i64,
    ) -> Result<Vec<DeliveryView>, ServiceError> {
        let default_url = self.webhooks().default_url.clone();
        self.read(move |c| {
            let filter = filter.clone();
            let default_url = default_url.clone();
            Box::pin(async move {
                let rows = deliveries::list(c, &filter, limit.clamp(1, 1000)).await?;
                views(c, rows, default_url).await
            })
        })
        .await
    }

    /// One delivery with its attempts.
    pub async fn delivery(&self, id: i64) -> Result<DeliveryView, ServiceError> {
        let default_url = self.webhooks().default_url.clone();
        self.read(move |c| {
            let default_url = default_url.clone();
            Box::pin(async move {
                let row = deliveries::get(c, id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("delivery", id.to_string()))?;
                Ok(views(c, vec![row], default_url).await?.remove(0))
            })
        })
        .await
    }

    /// The body a delivery sends (for the console's detail page).
    pub async fn delivery_body(&self, id: i64) -> Result<String, ServiceError> {
        self.read(move |c| {
            Box::pin(async move {
                let row = deliveries::get(c, id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("delivery", id.to_string()))?;
                let (t, u, p, at) =
                    deliveries::message(c, row.outbox_id)
                        .await?
                        .ok_or_else(|| {
                            ServiceError::not_found("outbox message", row.outbox_id.to_string())
                        })?;
                Ok(envelope(row.outbox_id, &t, u.as_deref(), &p, at))
            })
        })
        .await
    }

    /// Puts a dead or delivered delivery back to `pending`, due now; the
    /// request is kept in its attempt history.
    pub async fn redeliver(&self, id: i64, actor: &str) -> Result<(), ServiceError> {
        let now_ms = to_ms(self.now());
        let actor = actor.to_string();
        self.inner
            .db
            .write(move |c| {
                let actor = actor.clone();
                Box::pin(async move {
                    if !deliveries::redeliver(c, id, now_ms).await? {
                        return Err(match deliveries::get(c, id).await? {
                            None => ServiceError::not_found("delivery", id.to_string()),
                            Some(_) => {
                                FieldError::new("id", format!("delivery {id} is still pending"))
                                    .into()
                            }
                        });
                    }
                    deliveries::insert_attempt(
                        c,
                        &AttemptRecord {
                            delivery_id: id,
                            at_ms: now_ms,
                            status_code: None,
                            error: Some(REDELIVERY_REQUESTED),
                            duration_ms: 0,
                            actor: &actor,
                        },
                    )
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    /// Every subscriber: the environment's (if set) and the console's.
    pub async fn webhook_subscribers(&self) -> Result<Vec<SubscriberView>, ServiceError> {
        let w = self.webhooks().clone();
        let mut out = Vec::new();
        if let (Some(url), Some(secret)) = (&w.default_url, &w.default_secret) {
            out.push(SubscriberView {
                id: DEFAULT_SUBSCRIBER.into(),
                url: url.clone(),
                secret_hint: secret_hint(secret),
                event_types: vec!["*".into()],
                enabled: true,
                created_by: "environment".into(),
                created_at: String::new(),
                from_environment: true,
            });
        }
        let rows = self
            .read(|c| Box::pin(async move { Ok(deliveries::subscribers(c).await?) }))
            .await?;
        out.extend(rows.into_iter().map(SubscriberView::from));
        Ok(out)
    }

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

    /// Adds a subscriber ([`Service::check_receiver`] says which URLs).
    /// `event_types` empty or `["*"]`: every type.
    pub async fn add_webhook_subscriber(
        &self,
        url: &str,
        secret: &str,
        event_types: &[String],
        ctx: &Ctx,
    ) -> Result<SubscriberView, ServiceError> {
        let url = self
            .check_receiver(url)
            .await
            .map_err(|r| FieldError::new("url", r.to_string()))?;
        let secret = secret.trim().to_string();
        if secret.chars().count() < 16 || secret.len() > 200 {
            return Err(FieldError::new("secret", "must be 16 to 200 characters").into());
        }
        let mut types: Vec<String> = event_types
            .iter()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        types.sort();
        types.dedup();
        if let Some(bad) = types
            .iter()
            .find(|t| *t != "*" && !EVENT_TYPES.contains(&t.as_str()))
        {
            return Err(FieldError::new("event_types", format!("unknown type {bad:?}")).into());
        }
        let stored = if types.is_empty() || types.iter().any(|t| t == "*") {
            "*".to_string()
        } else {
            serde_json::to_string(&types).unwrap_or_else(|_| "*".into())
        };
        let row = SubscriberRow {
            id: format!("whk_{}", hex::encode(rand::random::<[u8; 8]>())),
            url,
            secret,
            event_types: stored,
            enabled: 1,
            created_by: ctx.actor.clone(),
            created_at: to_ms(self.now()),
            disabled_at: None,
        };
        let insert = row.clone();
        let address = ctx.address.clone();
        self.inner
            .db
            .write(move |c| {
                let insert = insert.clone();
                let address = address.clone();
                Box::pin(async move {
                    deliveries::insert_subscriber(c, &insert).await?;
                    let detail = format!("{} types={}", insert.url, insert.event_types);
                    insert_staff_audit(
                        c,
                        &NewStaffAudit {
                            actor: &insert.created_by,
                            action: actions::WEBHOOK_ADD,
                            target: &insert.id,
                            detail: Some(&detail),
                            address: address.as_deref(),
                            at_ms: insert.created_at,
                        },
                    )
                    .await?;
                    Ok::<_, ServiceError>(())
                })
            })
            .await?;
        Ok(row.into())
    }

    /// Disables a console subscriber: no new deliveries; its pending ones
    /// are dead-lettered when due (redeliver them after enabling it again).
    pub async fn disable_webhook_subscriber(
        &self,
        id: &str,
        ctx: &Ctx,
    ) -> Result<(), ServiceError> {
        self.switch_subscriber(id, ctx, false).await
    }

    /// Enables a disabled console subscriber again: it gets the messages
    /// written from now on (those fanned out meanwhile went without it).
    pub async fn enable_webhook_subscriber(&self, id: &str, ctx: &Ctx) -> Result<(), ServiceError> {
        self.switch_subscriber(id, ctx, true).await
    }

    async fn switch_subscriber(&self, id: &str, ctx: &Ctx, on: bool) -> Result<(), ServiceError> {
        let now_ms = to_ms(self.now());
        let id = id.to_string();
        let ctx = ctx.clone();
        self.inner
            .db
            .write(move |c| {
                let id = id.clone();
                let ctx = ctx.clone();
                Box::pin(async move {
                    let (switched, action, missing) = if on {
                        (
                            deliveries::enable_subscriber(c, &id).await?,
                            actions::WEBHOOK_ENABLE,
                            "disabled webhook subscriber",
                        )
                    } else {
                        (
                            deliveries::disable_subscriber(c, &id, now_ms).await?,
                            actions::WEBHOOK_DISABLE,
                            "enabled webhook subscriber",
                        )
                    };
                    if !switched {
                        return Err(ServiceError::not_found(missing, id));
                    }
                    insert_staff_audit(
                        c,
                        &NewStaffAudit {
                            actor: &ctx.actor,
                            action,
                            target: &id,
                            detail: None,
                            address: ctx.address.as_deref(),
                            at_ms: now_ms,
                        },
                    )
                    .await?;
                    Ok(())
                })
            })
            .await
    }
}

async fn views(
    c: &mut sqlx::AnyConnection,
    rows: Vec<DeliveryRow>,
    default_url: Option<String>,
) -> Result<Vec<DeliveryView>, ServiceError> {
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let attempts = deliveries::attempts_of(c, &ids).await?;
    let subs = deliveries::subscribers(c).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let url = if r.subscriber_id == DEFAULT_SUBSCRIBER {
                default_url.clone()
            } else {
                subs.iter()
                    .find(|s| s.id == r.subscriber_id)
                    .map(|s| s.url.clone())
            };
            DeliveryView {
                history: attempts
                    .iter()
                    .filter(|a| a.delivery_id == r.id)
                    .map(|a| AttemptView {
                        at: rfc3339(from_ms(a.at)),
                        status_code: a.status_code,
                        error: a.error.clone(),
                        duration_ms: a.duration_ms,
                        actor: a.actor.clone(),
                    })
                    .collect(),
                id: r.id,
                message_id: message_id(r.outbox_id),
                subscriber_id: r.subscriber_id,
                subscriber_url: url,
                event_type: r.event_type,
                user_id: r.user_id,
                status: r.status,
                attempts: r.attempts,
                next_attempt_at: rfc3339(from_ms(r.next_attempt_at)),
                last_status_code: r.last_status_code,
                last_error: r.last_error,
                delivered_at: r.delivered_at.map(|t| rfc3339(from_ms(t))),
                created_at: rfc3339(from_ms(r.created_at)),
            }
        })
        .collect())
}

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
