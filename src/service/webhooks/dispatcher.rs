//! The dispatcher `serve` runs ([`Dispatcher`]), which keeps sends in
//! flight per subscriber while it claims new ones, and the one-shot
//! [`Service::dispatch_once`] of tests and tools.

use std::collections::HashMap;
use std::time::{Duration as StdDuration, Instant};

use super::{ClaimedDelivery, SendOutcome};
use crate::domain::ids::SubscriberId;
use crate::service::{Service, ServiceError};
use crate::store::deliveries::Next;

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

/// Most sends in flight in [`Service::dispatch_once`].
pub const MAX_IN_FLIGHT: usize = 8;
/// How often a dispatcher looks for deliveries of disabled or removed
/// subscribers.
pub const ORPHANS_EVERY: StdDuration = StdDuration::from_secs(30);
/// Most outbox messages one fan-out transaction turns into deliveries.
pub const FAN_OUT_BATCH: i64 = 500;
/// Longest pause between two fan-outs while sends are in flight: how late a
/// new message can be picked up by a busy dispatcher.
const FAN_OUT_EVERY: StdDuration = StdDuration::from_millis(200);

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
    in_flight: HashMap<SubscriberId, usize>,
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

impl Service {
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
}
