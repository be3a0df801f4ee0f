//! The dispatcher's steps in the database, each one short transaction:
//! fan-out of outbox messages into deliveries, the claim of due
//! deliveries under a lease, and the record of attempts with the next
//! attempt (exponential backoff with jitter) or the dead letter.

use std::collections::HashMap;

use super::attempt::{ClaimedDelivery, SendOutcome};
use super::subscribers::wants;
use super::{WebhookSettings, envelope};
use crate::domain::delivery::{MESSAGE_MISSING, SUBSCRIBER_GONE};
use crate::domain::ids::SubscriberId;
use crate::domain::time::to_ms;
use crate::domain::trace::{TraceContext, is_trace_id};
use crate::service::{Service, ServiceError};
use crate::store::deliveries::{
    self, AttemptRecord, ClaimScope, DEFAULT_SUBSCRIBER, NewDelivery, Next, SubscriberRow,
};

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

/// Deliveries of disabled or removed subscribers dead-lettered per claim.
const ORPHAN_BATCH: i64 = 100;

/// What [`Service::claim_under_lease`] may take.
#[derive(Debug, Clone)]
enum Slots {
    /// Up to this many, of any subscriber.
    Total(i64),
    /// The free slots of each live subscriber, given the sends in flight;
    /// and whether to take deliveries of subscribers gone or disabled.
    PerSubscriber(HashMap<SubscriberId, usize>, bool),
}

/// Actor of the dispatcher in `delivery_attempts`.
pub const ACTOR_DISPATCHER: &str = "job:webhook-dispatcher";

impl Service {
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
        in_flight: &HashMap<SubscriberId, usize>,
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
                Box::pin(
                    async move { claim_under_lease_tx(c, w, slots, now_ms, lease_until).await },
                )
            })
            .await
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
                Box::pin(async move { finish_deliveries_tx(c, rows, now_ms).await })
            })
            .await?;
        Ok(nexts)
    }
}

/// Takes due deliveries for the slots under a lease, with their bodies; dead-letters the orphans.
async fn claim_under_lease_tx(
    c: &mut sqlx::AnyConnection,
    w: WebhookSettings,
    slots: Slots,
    now_ms: i64,
    lease_until: i64,
) -> Result<Vec<ClaimedDelivery>, ServiceError> {
    let subs = Service::live_subscribers(c, &w).await?;
    let rows = match &slots {
        Slots::Total(batch) => {
            deliveries::claim_due(c, ClaimScope::Any, now_ms, lease_until, *batch).await?
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
                let live: Vec<SubscriberId> = subs.iter().map(|s| s.id.clone()).collect();
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
        .map(|m| (m.id, m))
        .collect();
    for d in rows {
        let Some(sub) = subs.iter().find(|s| s.id == d.subscriber_id) else {
            deliveries::kill(c, d.id, SUBSCRIBER_GONE, now_ms).await?;
            continue;
        };
        let Some(m) = messages.get(&d.outbox_id) else {
            deliveries::kill(c, d.id, MESSAGE_MISSING, now_ms).await?;
            continue;
        };
        // The outbox's user ids were written from `UserId`s.
        let body = envelope(
            d.outbox_id,
            &m.event_type,
            m.user_id.as_ref(),
            &m.payload,
            m.created_at,
        );
        // Only a well-formed stored trace is sent on.
        let trace = m
            .trace_id
            .as_deref()
            .filter(|t| is_trace_id(t))
            .map(|t| TraceContext {
                trace_id: t.to_string(),
                flags: u8::try_from(m.trace_flags.unwrap_or(0) & 1).unwrap_or(0),
            });
        out.push(ClaimedDelivery {
            trusted: w.default_url.is_some() && sub.id == DEFAULT_SUBSCRIBER,
            url: sub.url.clone(),
            secret: sub.secret.clone(),
            body,
            lease_until,
            delivery: d,
            trace,
        });
    }
    Ok::<_, ServiceError>(out)
}

/// Records the attempts and moves each delivery on, conditional on its lease.
async fn finish_deliveries_tx(
    c: &mut sqlx::AnyConnection,
    rows: Vec<FinishRow>,
    now_ms: i64,
) -> Result<(), ServiceError> {
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
        deliveries::finish_attempt(c, r.id, r.lease, r.next, r.code, r.error.as_deref(), now_ms)
            .await?;
    }
    Ok::<_, ServiceError>(())
}
