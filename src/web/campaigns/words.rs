//! What several campaign pages share: their addresses, who may change a
//! campaign, the words for its window, policy and mode, and the change form.

use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;

use crate::domain::campaign::{CompensationMode, Policy};
use crate::domain::permissions::Permission;
use crate::domain::time::parse_rfc3339;
use crate::service::views::CampaignView;
use crate::service::{Refusal, ServiceError};
use crate::web::auth::{Staff, WebError};
use crate::web::i18n::Lang;

pub(super) const LIST: &str = "/console/campaigns";
pub(super) const NEW: &str = "/console/campaigns/new";
/// Campaigns per list page.
pub(super) const PAGE_SIZE: i64 = 50;

pub(super) fn may_change(staff: &Staff) -> bool {
    staff.may(Permission::RunCampaigns)
}

pub(super) fn operator_only(staff: &Staff) -> Option<Response> {
    (!may_change(staff))
        .then(|| WebError::forbidden(staff.lang.t("campaign-needs-operator")).into_response())
}

/// `3 天 4 小时` / `3 days 4 hours`: a span for "opens in" and "closes in",
/// to the minute, at most two units.
fn span_text(l: Lang, span: Duration) -> String {
    let minutes = span.num_minutes().max(1);
    let (days, hours, mins) = (minutes / 1440, (minutes % 1440) / 60, minutes % 60);
    if days > 0 {
        crate::tr!(l, "campaign-span-days", days = days, hours = hours)
    } else if hours > 0 {
        crate::tr!(l, "campaign-span-hours", hours = hours, minutes = mins)
    } else {
        crate::tr!(l, "campaign-span-minutes", minutes = mins)
    }
}

/// Where the window stands at `now`, in words.
pub(super) fn standing_text(l: Lang, now: DateTime<Utc>, c: &CampaignView) -> String {
    let (Ok(starts), Ok(ends)) = (
        parse_rfc3339(&c.final_payment_starts_at),
        parse_rfc3339(&c.final_payment_ends_at),
    ) else {
        return String::new();
    };
    if now < starts {
        crate::tr!(l, "campaign-opens-in", span = span_text(l, starts - now))
    } else if now < ends {
        crate::tr!(l, "campaign-closes-in", span = span_text(l, ends - now))
    } else {
        crate::tr!(l, "campaign-closed-ago", span = span_text(l, now - ends))
    }
}

pub(super) fn mode_label(l: Lang, m: CompensationMode) -> &'static str {
    match m {
        CompensationMode::Deduction => l.t("campaign-mode-deduction"),
        CompensationMode::Coupon => l.t("campaign-mode-coupon"),
    }
}

pub(super) fn policy_staff_text(l: Lang, p: Policy) -> &'static str {
    match p {
        Policy::Lock => l.t("campaign-policy-staff-lock"),
        Policy::Strict => l.t("campaign-policy-staff-strict"),
        Policy::SwapOrCompensate => l.t("campaign-policy-staff-swap"),
    }
}

/// The change form as posted.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ChangeForm {
    #[serde(default)]
    pub(super) policy: String,
    #[serde(default)]
    pub(super) compensation_mode: String,
    #[serde(default)]
    pub(super) reason: String,
    pub(super) form_id: Option<String>,
}

/// Where a refusal of a change shows: the field and the message.
pub(super) fn change_refusal(
    l: Lang,
    e: &ServiceError,
    choice_field: &'static str,
) -> Option<(&'static str, String)> {
    match e {
        ServiceError::Invalid(f) => match f.field {
            "reason" => Some(("reason", l.t("please-give-a-reason").to_string())),
            "policy" => Some(("policy", l.t("campaign-error-policy").to_string())),
            "compensation_mode" => {
                Some(("compensation_mode", l.t("campaign-error-mode").to_string()))
            }
            _ => None,
        },
        ServiceError::Refused {
            refusal: Refusal::CampaignWindowOpen,
            ..
        } => Some((
            choice_field,
            l.t(Refusal::CampaignWindowOpen.message_key()).to_string(),
        )),
        ServiceError::IdempotencyKeyReused | ServiceError::IdempotencyInProgress => {
            Some(("reason", l.t("action-error-form-reused").to_string()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_at_most_two_units() {
        assert_eq!(
            span_text(Lang::En, Duration::hours(50) + Duration::minutes(5)),
            "2 days 2 hours"
        );
        assert_eq!(
            span_text(Lang::En, Duration::minutes(61)),
            "1 hour 1 minute"
        );
        assert_eq!(span_text(Lang::Zh, Duration::seconds(20)), "1 分钟");
    }
}
