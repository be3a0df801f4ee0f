//! Creating and reading coupon templates.

use super::views::TemplateView;
use super::{Ctx, Executed, IdempotencyRequest, Service, ServiceError};
use crate::domain::ids::new_id;
use crate::domain::template::{TemplateInput, TemplateSpec, TemplateStatus, stock_shards};
use crate::domain::time::to_ms;
use crate::store::templates::{self, TemplateRow};

impl Service {
    /// Checks and stores a template with its stock shards.
    pub async fn create_template(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        input: TemplateInput,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        let spec = TemplateSpec::parse(input, self.now())?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let spec = spec.clone();
            let op = op.clone();
            Box::pin(async move {
                let now_ms = to_ms(op.now);
                let rule = spec.terms.rule;
                let row = TemplateRow {
                    id: new_id("tpl", now_ms),
                    name: spec.name.clone(),
                    kind: rule.discount_kind(),
                    value_cents: rule.value_cents().map(|v| v.get()),
                    percent_off: rule.percent_off().map(i64::from),
                    max_discount_cents: rule.max_discount_cents().map(|v| v.get()),
                    min_order_cents: spec.terms.min_order.get(),
                    categories: serde_json::to_string(&spec.terms.categories)
                        .unwrap_or_else(|_| "[]".into()),
                    valid_from: spec.validity.valid_from().map(to_ms),
                    valid_until: spec.validity.hard_end().map(to_ms),
                    valid_seconds: spec.validity.valid_seconds(),
                    total_stock: spec.total_stock,
                    per_user_limit: spec.per_user_limit,
                    status: TemplateStatus::Active,
                    created_at: now_ms,
                };
                templates::insert(c, &row, &stock_shards(spec.total_stock)).await?;
                Ok(TemplateView::from_row(row, 0))
            })
        })
        .await
    }

    pub async fn get_template(&self, id: &str) -> Result<TemplateView, ServiceError> {
        let id = id.to_string();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                let row = templates::get(c, &id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("template", &id))?;
                let claimed = templates::claimed(c, &id).await?;
                Ok(TemplateView::from_row(row, claimed))
            })
        })
        .await
    }
}
