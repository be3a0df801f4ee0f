//! Category names: operators name the shop's category codes in both
//! languages; every page reads them through a per-instance cache of 10
//! seconds ([`Service::category_names`]), so another instance's change
//! shows within 10 seconds and this instance's at once.

use std::sync::Arc;

use serde::Serialize;

pub use super::names_cache::CACHE_TTL;
use super::support::Authority;
use sqlx::AnyConnection;

use super::{Ctx, Op, Refusal, Service, ServiceError};
use crate::domain::category::{CategoryName, MAX_NAMED};
use crate::domain::permissions::Permission;
use crate::domain::time::to_ms;
use crate::i18n::names::CategoryNames;
use crate::store::audit::{NewStaffAudit, insert_staff_audit};
use crate::store::categories as store;

/// The staff-log action of naming or renaming a category (target: the
/// code; detail: [`NameChange`] as JSON).
pub const ACTION: &str = "category_name";

/// A name change as the staff log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct NameChange {
    pub before: Option<(String, String)>,
    pub zh: String,
    pub en: String,
}

impl Service {
    /// Every category's names (at most 500), from this instance's cache
    /// when it is under 10 seconds old.
    pub async fn category_names(&self) -> Result<Arc<CategoryNames>, ServiceError> {
        if let Some(names) = self.inner.category_names.fresh() {
            return Ok(names);
        }
        let list = self
            .read(|c| Box::pin(async move { Ok(store::all(c).await?) }))
            .await?;
        let names = Arc::new(CategoryNames::new(list));
        self.inner.category_names.put(names.clone());
        Ok(names)
    }

    /// Names `code` (or renames it) in both languages: one conditional
    /// write (an insert that must not meet a row, or an update that must
    /// find the names the operator saw, `was`), and a staff-log row.
    pub async fn name_category_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        name: CategoryName,
        was: Option<(String, String)>,
    ) -> Result<(), ServiceError> {
        if !authority.may(Permission::NameCategories) {
            return Err(ServiceError::Forbidden(
                "naming categories needs the operator role".into(),
            ));
        }
        let op = self.op(ctx);
        self.write(None, move |c| {
            let name = name.clone();
            let was = was.clone();
            let op = op.clone();
            Box::pin(async move { name_category_tx(c, &op, &name, was.as_ref()).await })
        })
        .await?;
        self.inner.category_names.clear();
        Ok(())
    }
}

/// The transaction of [`Service::name_category_as`].
async fn name_category_tx(
    c: &mut AnyConnection,
    op: &Op,
    name: &CategoryName,
    was: Option<&(String, String)>,
) -> Result<(), ServiceError> {
    let now_ms = to_ms(op.now);
    let current = store::get(c, name.code()).await?;
    let changed = match (&current, &was) {
        (None, None) => {
            if store::count(c).await? >= MAX_NAMED as i64 {
                return Err(ServiceError::refused(
                    Refusal::EditNotAllowed,
                    format!("at most {MAX_NAMED} categories can be named"),
                ));
            }
            store::insert(c, name, &op.ctx.actor, now_ms).await?
        }
        (Some(_), Some(w)) => store::rename(c, name, w, &op.ctx.actor, now_ms).await?,
        _ => false,
    };
    if !changed {
        return Err(ServiceError::refused(
            Refusal::EditNotAllowed,
            "the category's names changed meanwhile; read them again",
        ));
    }
    let detail = serde_json::to_string(&NameChange {
        before: current,
        zh: name.zh().to_string(),
        en: name.en().to_string(),
    })
    .unwrap_or_default();
    insert_staff_audit(
        c,
        &NewStaffAudit {
            actor: &op.ctx.actor,
            action: ACTION,
            target: name.code(),
            detail: Some(&detail),
            address: op.ctx.address.as_deref(),
            at_ms: now_ms,
        },
    )
    .await?;
    Ok(())
}
