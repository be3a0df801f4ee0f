//! How the domain's id newtypes appear in a page, as their text, and how
//! an order number in a page's address becomes one. A page shows an id
//! only where no name exists for it (an order number, a user id); the
//! impls let `view!` take the typed value instead of a copy made into a
//! `String` at every use, in text and in attributes (`value=`).

use leptos::prelude::{IntoAttributeValue, IntoRender};

use crate::domain::ids::{
    CampaignId, CodeBatchId, CouponId, JobId, OrderNo, ReminderSlotId, SubscriberId, TemplateId,
    UserId, WakeupRuleId,
};

macro_rules! renders_as_text {
    ($($ty:ty),*) => {$(
        impl IntoRender for $ty {
            type Output = String;

            fn into_render(self) -> String {
                self.into_string()
            }
        }

        impl IntoAttributeValue for $ty {
            type Output = String;

            fn into_attribute_value(self) -> String {
                self.into_string()
            }
        }
    )*};
}

renders_as_text!(
    CampaignId,
    CodeBatchId,
    CouponId,
    JobId,
    OrderNo,
    ReminderSlotId,
    SubscriberId,
    TemplateId,
    UserId,
    WakeupRuleId
);

/// The order number in a page's address or query. The service looked a
/// raw number up and answered "no such order" for one no order can have;
/// a number that is not a valid order number gets that same answer.
pub(crate) fn order_no_of(
    raw: &str,
) -> Result<crate::domain::ids::OrderNo, crate::service::ServiceError> {
    crate::domain::ids::OrderNo::parse(raw)
        .map_err(|_| crate::service::ServiceError::not_found("order", raw))
}
