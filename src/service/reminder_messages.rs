//! Writing one reminder: its outbox row (for the webhook dispatcher) and
//! its in-app copy, including the strict-policy warning that a locked
//! coupon ends before the final-payment window. The planner
//! ([`super::reminders`]) writes them on its runs and the deposit payment
//! ([`super::orders`]) writes the warning in its own transaction; this
//! module imports neither, so they need not import each other for it.

use chrono::{DateTime, Utc};
use serde_json::json;
use sqlx::AnyConnection;

use crate::domain::ids::{CouponId, OrderNo, UserId};
use crate::domain::reminder::{self, ReminderSettings};
use crate::domain::time::{rfc3339, to_ms};
use crate::i18n::{Lang, Msg};
use crate::store::outbox::{self, NewMessage};
use crate::store::reminders::{self as store, NewUserMessage};

/// Outbox event types (API.md, Webhooks).
pub const COUPONS_EXPIRING: &str = "reminder.coupons_expiring";
pub const FINAL_PAYMENT_OPEN: &str = "reminder.final_payment_open";
pub const EXPIRES_BEFORE_FINAL_PAYMENT: &str = "reminder.coupon_expires_before_final_payment";

/// Kind in `order_reminder_marks` of the warning at deposit.
const MARK_STRICT_DEPOSIT: &str = "strict_warning_deposit";

/// Writes one in-app message: its key and arguments, rendered in the
/// customer's language when read.
pub(super) async fn in_app(
    c: &mut AnyConnection,
    user_id: &UserId,
    kind: &str,
    subject_id: &str,
    text: &Msg,
    now_ms: i64,
) -> Result<(), sqlx::Error> {
    store::insert_user_message(
        c,
        &NewUserMessage {
            user_id,
            kind,
            subject_id: Some(subject_id),
            message_key: &text.key,
            message_args: &text.args_json(),
            created_at: now_ms,
        },
    )
    .await
}

/// A presale order whose locked coupon ends before its final-payment
/// window opens (strict policy: no discount then).
#[derive(Debug, Clone)]
pub(crate) struct AtRisk<'a> {
    pub order_no: &'a OrderNo,
    pub user_id: &'a UserId,
    pub coupon_id: &'a CouponId,
    pub ends_at: DateTime<Utc>,
    pub window_starts: DateTime<Utc>,
}

/// The strict-policy warning, in the caller's transaction, once per order
/// and `mark` kind: an outbox row and its in-app copy. Returns whether it
/// was written.
pub(super) async fn write_strict_warning(
    c: &mut AnyConnection,
    settings: &ReminderSettings,
    mark: &str,
    r: &AtRisk<'_>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let now_ms = to_ms(now);
    if !store::mark_order(c, r.order_no, mark, now_ms).await? {
        return Ok(false);
    }
    let text = reminder::expires_before_final_payment_message(
        r.order_no,
        r.ends_at,
        r.window_starts,
        settings.tz,
    );
    let payload = json!({
        "order_no": r.order_no,
        "coupon_id": r.coupon_id,
        "ends_at": rfc3339(r.ends_at),
        "message": Lang::Zh.msg(&text),
        "message_en": Lang::En.msg(&text),
        "final_payment_starts_at": rfc3339(r.window_starts),
    });
    outbox::insert_many(
        c,
        &[NewMessage {
            event_type: EXPIRES_BEFORE_FINAL_PAYMENT,
            user_id: Some(r.user_id.clone()),
            subject_id: Some(r.order_no.to_string()),
            payload: payload.to_string(),
            created_at: now_ms,
        }],
    )
    .await?;
    in_app(
        c,
        r.user_id,
        EXPIRES_BEFORE_FINAL_PAYMENT,
        r.order_no,
        &text,
        now_ms,
    )
    .await?;
    Ok(true)
}

/// Called by the deposit payment inside its transaction: under the strict
/// policy, a coupon that ends before the final-payment window opens is
/// worth a warning now, while the customer can still act on it.
pub(crate) async fn warn_at_deposit(
    c: &mut AnyConnection,
    settings: &ReminderSettings,
    r: &AtRisk<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if reminder::ends_before_window(r.ends_at, r.window_starts) {
        write_strict_warning(c, settings, MARK_STRICT_DEPOSIT, r, now).await?;
    }
    Ok(())
}
