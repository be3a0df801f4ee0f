//! The shop's catalogue, set up on the first day of the story: the coupon
//! templates (fixed, percent, category, newcomer, a flash sale, short-lived
//! ones) and three presale campaigns, one per final-payment policy.

use chrono::Duration;

use super::DemoError;
use super::seed::{Seed, fresh, step};
use crate::domain::ids::{CampaignId, TemplateId};
use crate::domain::template::TemplateInput;
use crate::service::campaigns::CampaignInput;

/// The ids of the templates and campaigns the story uses.
pub(super) struct Catalogue {
    pub(super) t300: TemplateId,
    pub(super) t199: TemplateId,
    pub(super) t90: TemplateId,
    pub(super) beauty: TemplateId,
    pub(super) newbie: TemplateId,
    pub(super) flash: TemplateId,
    pub(super) h72: TemplateId,
    pub(super) h60: TemplateId,
    pub(super) over: CampaignId,
    pub(super) open: CampaignId,
    pub(super) future: CampaignId,
}

impl Seed {
    async fn template(&self, input: TemplateInput) -> Result<TemplateId, DemoError> {
        let name = input.name.clone().unwrap_or_default();
        let what = format!("create template {name}");
        let t = self
            .svc
            .create_template(&self.ctx, None, input)
            .await
            .map_err(step(&what))?;
        Ok(fresh(t, &what)?.id)
    }

    async fn campaign(
        &self,
        name: &str,
        opens: Duration,
        closes: Duration,
        policy: &str,
    ) -> Result<CampaignId, DemoError> {
        let what = format!("create campaign {name}");
        let c = self
            .svc
            .create_campaign(
                &self.ctx,
                None,
                CampaignInput {
                    name: Some(name.into()),
                    final_payment_starts_at: Some(self.iso(opens)),
                    final_payment_ends_at: Some(self.iso(closes)),
                    policy: Some(policy.into()),
                    compensation_mode: None,
                },
            )
            .await
            .map_err(step(&what))?;
        Ok(fresh(c, &what)?.id)
    }

    /// The templates and campaigns, a few minutes apart.
    pub(super) async fn catalogue(&self) -> Result<Catalogue, DemoError> {
        let d = Duration::days;
        let far = self.iso(d(20));

        // Day -10: the shop sets up its coupons and three presales.
        let t300 = self
            .template(TemplateInput {
                name: Some("满300减50".into()),
                kind: Some("fixed".into()),
                value_cents: Some(5000),
                min_order_cents: Some(30000),
                valid_until: Some(far.clone()),
                total_stock: Some(5000),
                per_user_limit: Some(2),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let t199 = self
            .template(TemplateInput {
                name: Some("满199减20".into()),
                kind: Some("fixed".into()),
                value_cents: Some(2000),
                min_order_cents: Some(19900),
                valid_until: Some(far.clone()),
                total_stock: Some(5000),
                per_user_limit: Some(2),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let t90 = self
            .template(TemplateInput {
                name: Some("9折券最高减30".into()),
                kind: Some("percent".into()),
                percent_off: Some(10),
                max_discount_cents: Some(3000),
                valid_until: Some(far.clone()),
                total_stock: Some(2000),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let beauty = self
            .template(TemplateInput {
                name: Some("美妆品类券".into()),
                kind: Some("fixed".into()),
                value_cents: Some(3000),
                min_order_cents: Some(20000),
                categories: Some(vec!["beauty".into()]),
                valid_until: Some(far.clone()),
                total_stock: Some(1000),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let newbie = self
            .template(TemplateInput {
                name: Some("新人无门槛5元".into()),
                kind: Some("fixed".into()),
                value_cents: Some(500),
                min_order_cents: Some(0),
                valid_seconds: Some(3 * 24 * 3600),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let flash = self
            .template(TemplateInput {
                name: Some("限量秒杀券 满100减30".into()),
                kind: Some("fixed".into()),
                value_cents: Some(3000),
                min_order_cents: Some(10000),
                valid_until: Some(far.clone()),
                total_stock: Some(8),
                per_user_limit: Some(1),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let h72 = self
            .template(TemplateInput {
                name: Some("72小时限时券 满150减15".into()),
                kind: Some("fixed".into()),
                value_cents: Some(1500),
                min_order_cents: Some(15000),
                valid_seconds: Some(72 * 3600),
                per_user_limit: Some(3),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(2);
        // Claimed over the last hours of the story, so coupons are due over
        // the next days and the pending-expirations dashboard shows them.
        let h60 = self
            .template(TemplateInput {
                name: Some("60小时闪购券 满100减10".into()),
                kind: Some("fixed".into()),
                value_cents: Some(1000),
                min_order_cents: Some(10000),
                valid_seconds: Some(60 * 3600),
                per_user_limit: Some(1),
                total_stock: Some(5000),
                ..TemplateInput::default()
            })
            .await?;
        self.tick(3);
        let over = self
            .campaign("618预售 · 已结束", d(-6), d(-3), "strict")
            .await?;
        self.tick(2);
        let open = self
            .campaign("双11预售 · 尾款进行中", d(-1), d(2), "swap_or_compensate")
            .await?;
        self.tick(2);
        let future = self
            .campaign("双12预售 · 尾款未开始", d(3), d(6), "lock")
            .await?;
        Ok(Catalogue {
            t300,
            t199,
            t90,
            beauty,
            newbie,
            flash,
            h72,
            h60,
            over,
            open,
            future,
        })
    }
}
