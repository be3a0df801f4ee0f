//! The demo's storyteller: the service on a manual clock moved forward
//! step by step, and one small helper per service operation the story
//! uses, each failure named by its step.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::clock::{Clock, ManualClock};
use crate::domain::cart::{OrderInput, OrderSpec};
use crate::domain::ids::{CampaignId, CouponId, OrderNo, TemplateId, UserId};
use crate::domain::line::LineInput;
use crate::domain::refund::{RefundInput, RefundLineInput, RefundSpec};
use crate::domain::time::rfc3339;
use crate::server::StartError;
use crate::service::{Ctx, Executed, Refusal, Service, ServiceError};

/// The actor of every event the demo writes.
pub const ACTOR: &str = "demo:seed";
/// Prefix of every demo order number (`DEMO-N-0001`, `DEMO-P-0001`).
pub const ORDER_PREFIX: &str = "DEMO-";
/// Number of demo users: `u10001` ... `u10040`.
pub const USERS: u32 = 40;
/// Orders a full load creates (a smaller count means a half-done load).
pub const ORDER_COUNT: i64 = 49;

/// Why the demo could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("demo step \"{step}\" failed: {source}")]
    Step {
        step: String,
        #[source]
        source: ServiceError,
    },
    #[error(
        "the database holds {found} of the {ORDER_COUNT} demo orders: an earlier load stopped half-way; load the demo into an empty database"
    )]
    Partial { found: i64 },
    #[error(transparent)]
    Start(#[from] StartError),
}

/// Upper bound on expiry batches per job pass (500 coupons each).
const MAX_EXPIRY_BATCHES: usize = 100;
/// Rows per job batch.
const JOB_BATCH: i64 = 500;

/// A coupon as the story keeps it.
#[derive(Debug, Clone)]
pub(super) struct Cpn {
    pub(super) id: CouponId,
}

pub(super) struct Seed {
    pub(super) svc: Service,
    pub(super) clock: Arc<ManualClock>,
    pub(super) end: DateTime<Utc>,
    pub(super) ctx: Ctx,
    pub(super) normal_seq: u32,
    pub(super) presale_seq: u32,
    pub(super) grace_seconds: i64,
}

pub(super) fn user(n: u32) -> String {
    format!("u{}", 10000 + n)
}

pub(super) fn step(what: impl Into<String>) -> impl FnOnce(ServiceError) -> DemoError {
    let step = what.into();
    move |source| DemoError::Step { step, source }
}

pub(super) fn fresh<T>(e: Executed<T>, what: &str) -> Result<T, DemoError> {
    e.fresh().ok_or_else(|| DemoError::Step {
        step: what.to_string(),
        source: ServiceError::IllegalTransition("unexpected idempotent replay".into()),
    })
}

impl Seed {
    /// Moves the clock to `before` before the end of the timeline (never
    /// backwards, never past the end).
    pub(super) fn at(&self, before: Duration) {
        let t = (self.end - before).min(self.end);
        if t > self.clock.now() {
            self.clock.set(t);
        }
    }

    /// Moves the clock forward a little (never past the end).
    pub(super) fn tick(&self, minutes: i64) {
        let t = (self.clock.now() + Duration::minutes(minutes)).min(self.end);
        self.clock.set(t);
    }

    pub(super) fn iso(&self, from_end: Duration) -> String {
        rfc3339(self.end + from_end)
    }

    pub(super) async fn claim(&self, n: u32, template_id: &TemplateId) -> Result<Cpn, DemoError> {
        let u = user(n);
        let what = format!("{u} claims {template_id}");
        let uid = UserId::parse(&u).map_err(|e| step(&what)(e.into()))?;
        let c = self
            .svc
            .claim(&self.ctx, None, uid, template_id.clone())
            .await
            .map_err(step(&what))?;
        let c = fresh(c, &what)?;
        Ok(Cpn { id: c.id })
    }

    /// A claim the template's stock must refuse (the sold-out template).
    pub(super) async fn claim_sold_out(
        &self,
        n: u32,
        template_id: &TemplateId,
    ) -> Result<(), DemoError> {
        let u = user(n);
        let what = format!("{u} claims sold-out {template_id}");
        let uid = UserId::parse(&u).map_err(|e| step(&what)(e.into()))?;
        match self
            .svc
            .claim(&self.ctx, None, uid, template_id.clone())
            .await
        {
            Err(ServiceError::Refused {
                refusal: Refusal::OutOfStock,
                ..
            }) => Ok(()),
            Err(e) => Err(step(what)(e)),
            Ok(_) => Err(step(what)(ServiceError::IllegalTransition(
                "the sold-out template handed out one more coupon".into(),
            ))),
        }
    }

    async fn order(&self, input: OrderInput) -> Result<OrderNo, DemoError> {
        let no = input.order_no.clone().unwrap_or_default();
        let what = format!("create order {no}");
        let spec = OrderSpec::parse(input).map_err(|e| step(&what)(e.into()))?;
        let o = self
            .svc
            .create_order(&self.ctx, None, spec)
            .await
            .map_err(step(&what))?;
        Ok(fresh(o, &what)?.order_no)
    }

    pub(super) async fn normal(
        &mut self,
        n: u32,
        coupon: Option<&Cpn>,
        total: i64,
        category: &str,
    ) -> Result<OrderNo, DemoError> {
        self.normal_seq += 1;
        let no = format!("{ORDER_PREFIX}N-{:04}", self.normal_seq);
        self.order(OrderInput {
            order_no: Some(no),
            user_id: Some(user(n)),
            kind: Some("normal".into()),
            category: Some(category.into()),
            total_cents: Some(total),
            lines: None,
            coupon_id: coupon.map(|c| c.id.to_string()),
            coupon_ids: None,
            campaign_id: None,
            deposit_cents: None,
        })
        .await
    }

    /// A normal order of `lines` `(line_id, sku, category, quantity,
    /// unit_price_cents)`.
    pub(super) async fn normal_lines(
        &mut self,
        n: u32,
        coupon: Option<&Cpn>,
        lines: &[(&str, &str, &str, i64, i64)],
    ) -> Result<OrderNo, DemoError> {
        self.normal_seq += 1;
        let no = format!("{ORDER_PREFIX}N-{:04}", self.normal_seq);
        self.order(OrderInput {
            order_no: Some(no),
            user_id: Some(user(n)),
            kind: Some("normal".into()),
            category: None,
            total_cents: None,
            lines: Some(
                lines
                    .iter()
                    .map(|(id, sku, category, quantity, price)| LineInput {
                        line_id: Some((*id).into()),
                        sku: Some((*sku).into()),
                        category: Some((*category).into()),
                        shop_id: None,
                        quantity: Some(*quantity),
                        unit_price_cents: Some(*price),
                    })
                    .collect(),
            ),
            coupon_id: coupon.map(|c| c.id.to_string()),
            coupon_ids: None,
            campaign_id: None,
            deposit_cents: None,
        })
        .await
    }

    pub(super) async fn presale(
        &mut self,
        n: u32,
        coupon: Option<&Cpn>,
        campaign: &CampaignId,
        total: i64,
        deposit: i64,
    ) -> Result<OrderNo, DemoError> {
        self.presale_seq += 1;
        let no = format!("{ORDER_PREFIX}P-{:04}", self.presale_seq);
        self.order(OrderInput {
            order_no: Some(no),
            user_id: Some(user(n)),
            kind: Some("presale".into()),
            category: Some("phones".into()),
            total_cents: Some(total),
            lines: None,
            coupon_id: coupon.map(|c| c.id.to_string()),
            coupon_ids: None,
            campaign_id: Some(campaign.to_string()),
            deposit_cents: Some(deposit),
        })
        .await
    }

    pub(super) async fn pay(&self, no: &OrderNo) -> Result<(), DemoError> {
        self.svc
            .pay(&self.ctx, None, no.clone())
            .await
            .map_err(step(format!("pay {no}")))?;
        Ok(())
    }

    pub(super) async fn deposit(&self, no: &OrderNo) -> Result<(), DemoError> {
        self.svc
            .pay_deposit(&self.ctx, None, no.clone())
            .await
            .map_err(step(format!("pay deposit of {no}")))?;
        Ok(())
    }

    /// Pays the final payment and checks the outcome the story expects.
    pub(super) async fn final_payment(&self, no: &OrderNo, outcome: &str) -> Result<(), DemoError> {
        let what = format!("final payment of {no}");
        let quote = self
            .svc
            .final_payment_quote(no)
            .await
            .map_err(step(&what))?;
        if quote.coupon_outcome != outcome {
            return Err(step(what)(ServiceError::IllegalTransition(format!(
                "expected outcome {outcome}, the quote says {}",
                quote.coupon_outcome
            ))));
        }
        self.svc
            .pay_final(&self.ctx, None, no.clone())
            .await
            .map_err(step(&what))?;
        Ok(())
    }

    pub(super) async fn cancel(&self, no: &OrderNo, reason: &str) -> Result<(), DemoError> {
        self.svc
            .cancel(&self.ctx, None, no.clone(), Some(reason.into()))
            .await
            .map_err(step(format!("cancel {no}")))?;
        Ok(())
    }

    /// Refunds `units` of line `line_id` as refund `refund_id`.
    pub(super) async fn refund_line(
        &self,
        no: &OrderNo,
        refund_id: &str,
        line_id: &str,
        units: i64,
        reason: &str,
    ) -> Result<(), DemoError> {
        let what = format!("refund {refund_id} of {no}");
        let spec = RefundSpec::parse(RefundInput {
            refund_id: Some(refund_id.into()),
            lines: Some(vec![RefundLineInput {
                line_id: Some(line_id.into()),
                quantity: Some(units),
            }]),
            reason: Some(reason.into()),
        })
        .map_err(|e| step(&what)(e.into()))?;
        self.svc
            .refund_lines(&self.ctx, None, no.clone(), spec)
            .await
            .map_err(step(&what))?;
        Ok(())
    }

    pub(super) async fn refund(&self, no: &OrderNo, reason: &str) -> Result<(), DemoError> {
        self.svc
            .refund(&self.ctx, None, no.clone(), Some(reason.into()))
            .await
            .map_err(step(format!("refund {no}")))?;
        Ok(())
    }

    /// What the background jobs would have done by now: expire overdue
    /// coupons, close lapsed checkouts and timed-out presale orders.
    pub(super) async fn jobs(&self) -> Result<(), DemoError> {
        for _ in 0..MAX_EXPIRY_BATCHES {
            let done = self
                .svc
                .expire_due_batch(ACTOR, JOB_BATCH)
                .await
                .map_err(step("expire overdue coupons"))?;
            if done.count == 0 {
                break;
            }
        }
        self.svc
            .close_lapsed_checkouts(ACTOR, JOB_BATCH)
            .await
            .map_err(step("close lapsed checkouts"))?;
        self.svc
            .close_timed_out_presales(ACTOR, self.grace_seconds, JOB_BATCH)
            .await
            .map_err(step("close timed-out presale orders"))?;
        Ok(())
    }
}
