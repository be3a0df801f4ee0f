//! The console's webhook subscribers: listed with the secret only by its
//! last characters, added (URL, secret, event types), disabled and
//! enabled again, each change in the staff audit log.

use serde::Serialize;

use crate::domain::FieldError;
use crate::domain::ids::SubscriberId;
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::service::staff::actions;
use crate::service::{Ctx, Service, ServiceError};
use crate::store::audit::{NewStaffAudit, insert_staff_audit};
use crate::store::deliveries::{self, DEFAULT_SUBSCRIBER, SubscriberRow};

/// Every type a subscriber may ask for (API.md).
pub const EVENT_TYPES: [&str; 12] = [
    "coupon.expired",
    "coupon.locked",
    "coupon.released",
    "coupon.used",
    "compensation.issued",
    "reminder.coupons_expiring",
    "reminder.final_payment_open",
    "reminder.coupon_expires_before_final_payment",
    "reminder.wakeup",
    // A bulk issue with `notify` (service::bulk): the new coupon.
    "coupon.issued",
    // A refund by line (service::orders::refunds): the refund.
    "order.partially_refunded",
    // A customer asked for support from the self-check page
    // (service::support_requests): the request with its findings.
    "support.requested",
];

/// A subscriber as pages show it: the secret only by its last 4 characters.
#[derive(Debug, Clone, Serialize)]
pub struct SubscriberView {
    pub id: SubscriberId,
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

pub(super) fn wants(types: &str, event_type: &str) -> bool {
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

impl Service {
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
            id: SubscriberId::from_wire(format!(
                "{}_{}",
                SubscriberId::PREFIX,
                hex::encode(rand::random::<[u8; 8]>())
            )),
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
        id: &SubscriberId,
        ctx: &Ctx,
    ) -> Result<(), ServiceError> {
        self.switch_subscriber(id, ctx, false).await
    }

    /// Enables a disabled console subscriber again: it gets the messages
    /// written from now on (those fanned out meanwhile went without it).
    pub async fn enable_webhook_subscriber(
        &self,
        id: &SubscriberId,
        ctx: &Ctx,
    ) -> Result<(), ServiceError> {
        self.switch_subscriber(id, ctx, true).await
    }

    async fn switch_subscriber(
        &self,
        id: &SubscriberId,
        ctx: &Ctx,
        on: bool,
    ) -> Result<(), ServiceError> {
        let now_ms = to_ms(self.now());
        let id = id.clone();
        let ctx = ctx.clone();
        self.inner
            .db
            .write(move |c| {
                let id = id.clone();
                let ctx = ctx.clone();
                Box::pin(async move { switch_subscriber_tx(c, id, ctx, on, now_ms).await })
            })
            .await
    }
}

/// Enables or disables a console subscriber and logs it; not found unless in the other state.
async fn switch_subscriber_tx(
    c: &mut sqlx::AnyConnection,
    id: SubscriberId,
    ctx: Ctx,
    on: bool,
    now_ms: i64,
) -> Result<(), ServiceError> {
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
}
