//! The coupon service: one function per business operation, each one
//! database transaction. The JSON API, the console and the background jobs
//! all call this module; none of them touches the store directly for a
//! state change.
//!
//! Each write runs through [`Service::write`], which
//! - takes the SQLite write lock up front / retries PostgreSQL conflicts
//!   ([`crate::store::Db::write`]),
//! - claims the caller's `Idempotency-Key`, runs the operation and stores
//!   its response in that same transaction ([`idempotency`]),
//! - rolls everything back on any refusal, so a refused request writes
//!   nothing.

pub mod audit;
pub mod bulk;
pub mod campaigns;
pub mod categories;
pub mod checkout;
pub mod claims;
pub mod codes;
pub mod compensation;
pub mod dashboard;
pub mod deadlines;
pub mod egress;
mod error;
pub mod idempotency;
pub mod jobs;
mod names_cache;
pub mod orders;
pub mod passwords;
pub mod queue;
pub mod reconcile;
pub mod reminder_messages;
pub mod reminder_popups;
pub mod reminders;
pub mod repairs;
pub mod reports;
pub mod self_check;
pub mod staff;
mod stock;
pub mod support;
pub mod support_requests;
pub mod templates;
pub mod views;
pub mod wakeup;
pub mod webhooks;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures_util::future::BoxFuture;
use serde::Serialize;
use sqlx::AnyConnection;

use crate::clock::SharedClock;
use crate::store::Db;

pub use error::{Refusal, RefusalCause, ServiceError};
pub use idempotency::{Executed, IdempotencyRequest};

/// Settings the business rules depend on.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long a normal order's checkout lock holds its coupon.
    pub checkout_lock_seconds: i64,
    /// How close to its end a usable coupon counts as expiring soon in the
    /// checkout picker, in hours.
    pub expiring_soon_hours: i64,
    /// Most cents one compensation coupon issued by a `support` staff member
    /// may be worth.
    pub support_compensation_max_cents: i64,
    /// Most cents of compensation coupons one `support` staff member may
    /// issue per UTC day.
    pub support_compensation_daily_cents: i64,
    /// The reminder plan, quiet hours, tiers and caps.
    pub reminders: crate::domain::reminder::ReminderSettings,
}

impl Settings {
    /// The defaults of the configuration table, with this checkout lock.
    pub fn with_checkout_lock(checkout_lock_seconds: i64) -> Self {
        Settings {
            checkout_lock_seconds,
            expiring_soon_hours: 48,
            support_compensation_max_cents: 5_000,
            support_compensation_daily_cents: 20_000,
            reminders: crate::domain::reminder::ReminderSettings::default(),
        }
    }
}

/// Who is acting and under which request, for the event rows.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// `api:<token id>`, `staff:<name>`, `job:<name>`.
    pub actor: String,
    pub request_id: Option<String>,
    /// The client address of the request (console: the staff member's TCP
    /// peer; API: the caller's), written into the event rows for the audit
    /// log. `None` for jobs and in-process callers.
    pub address: Option<String>,
    /// The W3C trace of the request (the caller's `traceparent`, or one
    /// couponkeeper began): written into the event rows, and passed on to
    /// the webhooks the change causes. `None` for jobs and the console.
    pub trace: Option<crate::domain::trace::TraceContext>,
}

impl Ctx {
    pub fn new(actor: impl Into<String>, request_id: Option<String>) -> Self {
        Self {
            actor: actor.into(),
            request_id,
            address: None,
            trace: None,
        }
    }

    /// The same context under this trace.
    pub fn with_trace(mut self, trace: Option<crate::domain::trace::TraceContext>) -> Self {
        self.trace = trace;
        self
    }

    /// The trace id for the event rows.
    pub fn trace_id(&self) -> Option<&str> {
        self.trace.as_ref().map(|t| t.trace_id.as_str())
    }

    /// The same context with the client's address.
    pub fn with_address(mut self, address: Option<String>) -> Self {
        self.address = address.map(|a| a.chars().take(64).collect());
        self
    }
}

/// The shared handle every caller holds.
#[derive(Clone)]
pub struct Service {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    clock: SharedClock,
    settings: Settings,
    inflight: idempotency::Inflight,
    scheduler: std::sync::OnceLock<jobs::Scheduler>,
    webhooks: webhooks::WebhookSettings,
    /// The webhook clients (timeout and extra roots from `webhooks`), or
    /// why they could not be built: then every send fails with that reason.
    http: Result<webhooks::WebhookClients, webhooks::WebhookClientError>,
    /// How a subscriber's host is resolved when it is added (the guarded
    /// client resolves with the same).
    lookup: Arc<dyn egress::Lookup>,
    /// Passwords verified against a stored hash since start (see
    /// [`Service::password_verifications`]).
    password_verifications: std::sync::atomic::AtomicU64,
    /// Password hashing slots and their reusable memory ([`passwords`]).
    passwords: passwords::PasswordSlots,
    /// The key that signs sign-in form tokens, read (or made) once.
    login_form_key: tokio::sync::OnceCell<[u8; 32]>,
    /// Category names, cached for [`names_cache::CACHE_TTL`].
    category_names: names_cache::NamesCache,
}

/// What an operation closure gets besides the connection.
#[derive(Debug, Clone)]
pub struct Op {
    pub now: DateTime<Utc>,
    pub ctx: Ctx,
    pub settings: Settings,
}

impl Op {
    /// The business day of `now` (the report counters' day).
    pub fn day(&self) -> i64 {
        crate::domain::report::day_number(self.settings.reminders.tz, self.now)
    }
}

impl Service {
    /// Connects the expiry worker: from now on new deadlines (claims,
    /// checkout locks, campaigns, overdue coupons seen by reads) are handed
    /// to it. Only the first call takes effect.
    pub fn attach_scheduler(&self, scheduler: jobs::Scheduler) {
        let _ = self.inner.scheduler.set(scheduler);
    }

    /// Hands a deadline to the worker, if one is attached. Never blocks.
    pub(crate) fn schedule(&self, due: DateTime<Utc>, deadline: jobs::Deadline) {
        if let Some(s) = self.inner.scheduler.get() {
            s.try_send(crate::domain::time::to_ms(due), deadline);
        }
    }

    /// The webhook delivery settings.
    pub fn webhooks(&self) -> &webhooks::WebhookSettings {
        &self.inner.webhooks
    }

    pub fn new(db: Db, clock: SharedClock, settings: Settings) -> Self {
        Self::with_webhooks(db, clock, settings, webhooks::WebhookSettings::default())
    }

    /// A service that delivers webhooks with these settings; an error if
    /// the webhook client cannot be built with them (the process's start
    /// uses this, see [`crate::server::try_build_service`]).
    pub fn try_with_webhooks(
        db: Db,
        clock: SharedClock,
        settings: Settings,
        webhooks: webhooks::WebhookSettings,
    ) -> Result<Self, webhooks::WebhookClientError> {
        let http = webhooks::http_clients(&webhooks)?;
        Ok(Self::assemble(db, clock, settings, webhooks, Ok(http)))
    }

    /// A service that delivers webhooks with these settings. If the webhook
    /// client cannot be built with them (settings that `Config` refuses at
    /// start), this says so in the log and every delivery attempt fails
    /// with the reason; there is no fallback client without the configured
    /// roots.
    pub fn with_webhooks(
        db: Db,
        clock: SharedClock,
        settings: Settings,
        webhooks: webhooks::WebhookSettings,
    ) -> Self {
        let http = webhooks::http_clients(&webhooks);
        if let Err(e) = &http {
            tracing::error!(error = %e, "every webhook delivery attempt will fail");
        }
        Self::assemble(db, clock, settings, webhooks, http)
    }

    fn assemble(
        db: Db,
        clock: SharedClock,
        settings: Settings,
        webhooks: webhooks::WebhookSettings,
        http: Result<webhooks::WebhookClients, webhooks::WebhookClientError>,
    ) -> Self {
        Service {
            inner: Arc::new(Inner {
                db,
                clock,
                settings,
                inflight: idempotency::Inflight::default(),
                scheduler: std::sync::OnceLock::new(),
                http,
                webhooks,
                lookup: Arc::new(egress::SystemLookup),
                password_verifications: std::sync::atomic::AtomicU64::new(0),
                passwords: passwords::PasswordSlots::default(),
                login_form_key: tokio::sync::OnceCell::new(),
                category_names: names_cache::NamesCache::default(),
            }),
        }
    }

    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Whether the store lets one writer in at a time (SQLite): batch jobs
    /// then size their batches to hold it briefly and rest between them.
    pub fn has_one_writer(&self) -> bool {
        self.inner.db.backend() == crate::store::Backend::Sqlite
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.inner.clock.now()
    }

    /// This instance's own clock, for the skew gauge only
    /// ([`crate::clock::Clock::wall_now`]); decisions read [`Service::now`].
    pub fn wall_now(&self) -> DateTime<Utc> {
        self.inner.clock.wall_now()
    }

    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    fn op(&self, ctx: &Ctx) -> Op {
        Op {
            now: self.now(),
            ctx: ctx.clone(),
            settings: self.inner.settings.clone(),
        }
    }

    /// Runs a state-changing operation in one transaction, with the
    /// idempotency claim and stored response inside that same transaction.
    pub(crate) async fn write<T, F>(
        &self,
        idem: Option<&IdempotencyRequest>,
        op: F,
    ) -> Result<Executed<T>, ServiceError>
    where
        T: Serialize + Send + Sync + 'static,
        F: for<'c> Fn(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, ServiceError>>
            + Clone
            + Send
            + Sync
            + 'static,
    {
        self.write_taking_stock(idem, move |c| {
            let op = op.clone();
            Box::pin(async move { Ok((op(c).await?, None)) })
        })
        .await
    }

    /// [`Service::write`] for a change that needs a unit of a template's
    /// stock: `op` makes the change and names the unit
    /// ([`stock::StockTake`]), which is taken after everything else, the
    /// idempotency record included, so the stock shard many claims share
    /// is locked by the last statement before `COMMIT` and held only for
    /// the commit itself. Out of stock refuses and rolls the whole change
    /// back.
    pub(crate) async fn write_taking_stock<T, F>(
        &self,
        idem: Option<&IdempotencyRequest>,
        op: F,
    ) -> Result<Executed<T>, ServiceError>
    where
        T: Serialize + Send + Sync + 'static,
        F: for<'c> Fn(
                &'c mut AnyConnection,
            )
                -> BoxFuture<'c, Result<(T, Option<stock::StockTake>), ServiceError>>
            + Clone
            + Send
            + Sync
            + 'static,
    {
        let _running = match idem {
            Some(i) => Some(self.inner.inflight.enter(i)?),
            None => None,
        };
        let keyed = idem.cloned();
        let idem = idem.cloned();
        let now = self.now();
        let result = self
            .inner
            .db
            .write(move |c| {
                let op = op.clone();
                let idem = idem.clone();
                Box::pin(async move {
                    if let Some(i) = &idem
                        && let Some(replay) = idempotency::claim(c, i, now).await?
                    {
                        return Ok(replay);
                    }
                    let (value, stock) = op(&mut *c).await?;
                    if let Some(i) = &idem {
                        idempotency::store_success(c, i, &value, now).await?;
                    }
                    if let Some(stock) = stock {
                        stock.take(c).await?;
                    }
                    Ok(Executed::Fresh(value))
                })
            })
            .await;
        match (result, keyed) {
            // Refused and rolled back: if the key's first request (on
            // another instance) finished meanwhile, its answer is the one
            // to give (see `idempotency::recorded_meanwhile`).
            (
                Err(
                    e @ (ServiceError::Refused { .. }
                    | ServiceError::NotFound { .. }
                    | ServiceError::IdempotencyInProgress),
                ),
                Some(i),
            ) => {
                let recorded = self
                    .read(move |c| {
                        let i = i.clone();
                        Box::pin(async move { idempotency::recorded_meanwhile(c, &i, now).await })
                    })
                    .await?;
                match recorded {
                    Some(replay) => Ok(replay),
                    None => Err(e),
                }
            }
            (result, _) => result,
        }
    }

    /// Runs a read-only operation on one consistent snapshot.
    pub(crate) async fn read<T, F>(&self, op: F) -> Result<T, ServiceError>
    where
        T: Send,
        F: for<'c> Fn(&'c mut AnyConnection) -> BoxFuture<'c, Result<T, ServiceError>>
            + Send
            + Sync,
    {
        self.inner.db.read(op).await
    }

    /// Records a refused request's response under its key, so a retry with
    /// the same key replays the refusal instead of trying again. Best
    /// effort: a failure here only means the retry is evaluated afresh.
    pub async fn remember_refusal(&self, idem: &IdempotencyRequest, status: u16, body: String) {
        let idem = idem.clone();
        let now = self.now();
        let result: Result<(), ServiceError> = self
            .inner
            .db
            .write(move |c| {
                let idem = idem.clone();
                let body = body.clone();
                Box::pin(
                    async move { idempotency::store_refusal(c, &idem, status, &body, now).await },
                )
            })
            .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not store refused response for idempotency key");
        }
    }
}
