//! The webhook queue as `/metrics` shows it: outbox messages not yet
//! fanned out, and per subscriber the pending and dead deliveries with the
//! age of the oldest pending one. Read in one short read transaction per
//! scrape, from the partial indexes that hold exactly those rows.

use crate::domain::time::to_ms;
use crate::metrics::{SubscriberBacklog, WebhookBacklog};
use crate::service::{Service, ServiceError};
use crate::store::deliveries::{self, DEFAULT_SUBSCRIBER};
use crate::store::outbox;

/// Seconds from `then_ms` to `now_ms`, never negative.
fn age_seconds(now_ms: i64, then_ms: Option<i64>) -> f64 {
    then_ms.map_or(0.0, |t| (now_ms - t).max(0) as f64 / 1000.0)
}

impl Service {
    /// The webhook backlog now. The environment's default subscriber is
    /// always listed (zeros when it has nothing waiting), so its series
    /// does not vanish when its queue empties; a console subscriber is
    /// listed while it has pending or dead deliveries.
    pub async fn webhook_backlog(&self) -> Result<WebhookBacklog, ServiceError> {
        let now_ms = to_ms(self.now());
        let has_default = self.webhooks().default_url.is_some();
        let (rows, (undispatched, oldest_undispatched)) = self
            .read(move |c| {
                Box::pin(async move {
                    let rows = deliveries::backlog(c).await?;
                    let outbox = outbox::undispatched_summary(c).await?;
                    Ok((rows, outbox))
                })
            })
            .await?;
        let mut subscribers: Vec<SubscriberBacklog> = Vec::new();
        if has_default {
            subscribers.push(SubscriberBacklog {
                subscriber: DEFAULT_SUBSCRIBER.to_string(),
                pending: 0,
                dead: 0,
                oldest_pending_age_seconds: 0.0,
            });
        }
        for r in rows {
            let i = match subscribers
                .iter()
                .position(|s| s.subscriber == r.subscriber_id)
            {
                Some(i) => i,
                None => {
                    subscribers.push(SubscriberBacklog {
                        subscriber: r.subscriber_id.clone(),
                        pending: 0,
                        dead: 0,
                        oldest_pending_age_seconds: 0.0,
                    });
                    subscribers.len() - 1
                }
            };
            let s = &mut subscribers[i];
            match r.status.as_str() {
                "pending" => {
                    s.pending = r.n;
                    s.oldest_pending_age_seconds = age_seconds(now_ms, r.oldest);
                }
                _ => s.dead = r.n,
            }
        }
        subscribers.sort_by(|a, b| a.subscriber.cmp(&b.subscriber));
        Ok(WebhookBacklog {
            undispatched,
            oldest_undispatched_age_seconds: age_seconds(now_ms, oldest_undispatched),
            subscribers,
        })
    }
}
