//! Presale campaigns (预售场次).

use super::views::CampaignView;
use super::{Ctx, Executed, IdempotencyRequest, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::campaign::{PaymentWindow, Policy};
use crate::domain::ids::new_id;
use crate::domain::time::{parse_rfc3339, to_ms};
use crate::store::campaigns::{self, CampaignRow};

/// The API's campaign fields before checking.
#[derive(Debug, Clone, Default)]
pub struct CampaignInput {
    pub name: Option<String>,
    pub final_payment_starts_at: Option<String>,
    pub final_payment_ends_at: Option<String>,
    pub policy: Option<String>,
}

/// A checked campaign.
#[derive(Debug, Clone)]
struct CampaignSpec {
    name: String,
    window: PaymentWindow,
    policy: Policy,
}

fn parse(input: CampaignInput) -> Result<CampaignSpec, FieldError> {
    let name = input.name.unwrap_or_default().trim().to_string();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(FieldError::new("name", "must be 1-200 characters"));
    }
    let starts = input
        .final_payment_starts_at
        .as_deref()
        .ok_or_else(|| FieldError::new("final_payment_starts_at", "is required"))
        .and_then(|s| {
            parse_rfc3339(s).map_err(|m| FieldError::new("final_payment_starts_at", m))
        })?;
    let ends = input
        .final_payment_ends_at
        .as_deref()
        .ok_or_else(|| FieldError::new("final_payment_ends_at", "is required"))
        .and_then(|s| parse_rfc3339(s).map_err(|m| FieldError::new("final_payment_ends_at", m)))?;
    let window = PaymentWindow::new(starts, ends)?;
    // API.md: a campaign created without `policy` (absent or null) is a
    // `lock` campaign; a value that is not one of the three is refused.
    let policy = match input.policy.as_deref() {
        None => Policy::Lock,
        Some(p) => Policy::parse(p).ok_or_else(|| {
            FieldError::new(
                "policy",
                "must be \"lock\", \"strict\" or \"swap_or_compensate\"",
            )
        })?,
    };
    Ok(CampaignSpec {
        name,
        window,
        policy,
    })
}

impl Service {
    pub async fn create_campaign(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        input: CampaignInput,
    ) -> Result<Executed<CampaignView>, ServiceError> {
        let spec = parse(input)?;
        let op = self.op(ctx);
        let ends = spec.window.ends;
        let result = self
            .write(idem, move |c| {
                let spec = spec.clone();
                let now_ms = to_ms(op.now);
                Box::pin(async move {
                    let row = CampaignRow {
                        id: new_id("cmp", now_ms),
                        name: spec.name,
                        final_payment_starts_at: to_ms(spec.window.starts),
                        final_payment_ends_at: to_ms(spec.window.ends),
                        policy: spec.policy,
                        created_at: now_ms,
                    };
                    campaigns::insert(c, &row).await?;
                    Ok(CampaignView::from(row))
                })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result {
            self.schedule(ends, super::jobs::Deadline::PresaleWindowEnd(v.id.clone()));
        }
        result
    }

    pub async fn get_campaign(&self, id: &str) -> Result<CampaignView, ServiceError> {
        let id = id.to_string();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                campaigns::get(c, &id)
                    .await?
                    .map(CampaignView::from)
                    .ok_or_else(|| ServiceError::not_found("presale campaign", &id))
            })
        })
        .await
    }

    /// The campaigns still taking orders (final-payment window not yet
    /// closed), the soonest to close first, at most `limit`.
    pub async fn open_campaigns(&self, limit: i64) -> Result<Vec<CampaignView>, ServiceError> {
        let now_ms = crate::domain::time::to_ms(self.now());
        let limit = limit.clamp(1, 500);
        self.read(move |c| {
            Box::pin(async move {
                Ok(campaigns::open_at(c, now_ms, limit)
                    .await?
                    .into_iter()
                    .map(CampaignView::from)
                    .collect())
            })
        })
        .await
    }
}
