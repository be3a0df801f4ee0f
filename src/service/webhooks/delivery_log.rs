//! The console's view of deliveries: the list, one delivery with its
//! attempts and the body it sends, and a redelivery on request.

use serde::Serialize;

use super::{envelope, message_id};
use crate::domain::FieldError;
use crate::domain::delivery::REDELIVERY_REQUESTED;
use crate::domain::ids::{SubscriberId, UserId};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::service::{Service, ServiceError};
use crate::store::deliveries::{
    self, AttemptRecord, DEFAULT_SUBSCRIBER, DeliveryFilter, DeliveryRow,
};

/// A delivery with its attempts, for the console.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryView {
    pub id: i64,
    /// The webhook id (`msg_<outbox id>`).
    pub message_id: String,
    pub subscriber_id: SubscriberId,
    pub subscriber_url: Option<String>,
    pub event_type: String,
    pub user_id: Option<UserId>,
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

impl Service {
    /// Deliveries for the console matching `filter` (checked at the edge:
    /// [`DeliveryFilter::parse`]), newest first.
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
                Ok(envelope(row.outbox_id, &t, u.as_ref(), &p, at))
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
