//! Reminder pop-ups for the customer's next visit: what the checkout
//! picker (`reminder_popups`) and the self-check page show of the
//! reminders that went by `popup`, and marking them seen
//! (`POST /users/{user_id}/reminder-popups/seen`, the self-check page's
//! "mark all as read").
//!
//! A pop-up is pending from when its reminder is written until the
//! customer has seen it or none of its coupons is still `available` and
//! not ended. What it says is worked out when it is shown, from the
//! coupons still usable then, with the words of the reminder itself
//! ([`expiring_message`]): a coupon used since is no longer counted.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use super::{Executed, IdempotencyRequest, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::discount::DiscountRule;
use crate::domain::ids::{ReminderSlotId, UserId};
use crate::domain::money::Cents;
use crate::domain::reminder::{BusinessTz, coupon_value, expiring_message};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::i18n::{Lang, Msg};
use crate::store::reminder_popups as store;
use crate::store::reminders::USER_CANDIDATES;

/// Most pending pop-ups shown at once (the picker's `reminder_popups`,
/// the self-check page), newest first.
pub const MAX_SHOWN_POPUPS: usize = 3;
/// Most unseen pop-ups read to find those still pending: the pop-ups
/// whose coupons were all used meanwhile are passed over.
const SCAN_POPUPS: i64 = 20;
/// Most ids one "seen" call names.
pub const MAX_SEEN_IDS: usize = 50;
/// Longest id a "seen" call may name.
pub const MAX_SEEN_ID_CHARS: usize = 64;

/// A pending pop-up as the shop's cart or the self-check page shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReminderPopupView {
    /// The reminder's id (its `reminder.coupons_expiring` webhook's
    /// `slot_id`), for `POST /users/{user_id}/reminder-popups/seen`.
    #[schema(value_type = String)]
    pub id: ReminderSlotId,
    /// In the customer's words, in the request's language ("You have 2
    /// coupons expiring today, worth 80.00 yuan in total.").
    pub message: String,
    /// Its coupons still usable now.
    pub count: u32,
    /// What they are worth (as the reminder counts it: a fixed amount, or
    /// a percent coupon's cap).
    #[schema(value_type = i64)]
    pub total_value_cents: Cents,
    /// The first of their ends (RFC 3339, UTC).
    pub earliest_ends_at: String,
    /// The message itself, for a page to render in its reader's language.
    #[serde(skip)]
    #[schema(ignore)]
    pub msg: Msg,
}

/// This user's pending pop-ups at `now`, newest first, at most
/// [`MAX_SHOWN_POPUPS`], in the caller's read. Bounded: [`SCAN_POPUPS`]
/// unseen rows, each with at most one reminder's coupons.
pub(crate) async fn pending_in(
    c: &mut AnyConnection,
    user_id: &UserId,
    now: DateTime<Utc>,
    tz: BusinessTz,
) -> Result<Vec<ReminderPopupView>, sqlx::Error> {
    let now_ms = to_ms(now);
    let rows = store::pending(c, user_id, now_ms, SCAN_POPUPS).await?;
    let slots: Vec<ReminderSlotId> = rows.iter().map(|r| r.slot_id.clone()).collect();
    // Every scanned pop-up's live coupons in one read, then by pop-up.
    let limit = SCAN_POPUPS.saturating_mul(USER_CANDIDATES);
    let mut live: HashMap<ReminderSlotId, Vec<store::LiveCouponRow>> = HashMap::new();
    for coupon in store::live_coupons(c, &slots, user_id, now_ms, limit).await? {
        live.entry(coupon.slot_id.clone()).or_default().push(coupon);
    }
    let mut out = Vec::new();
    for row in rows {
        if out.len() >= MAX_SHOWN_POPUPS {
            break;
        }
        let Some(coupons) = live.remove(&row.slot_id) else {
            continue;
        };
        let Some(first) = coupons.first() else {
            continue;
        };
        let earliest = from_ms(first.ends_at);
        let total = coupons.iter().fold(Cents::ZERO, |sum, r| {
            sum.saturating_add(coupon_value(&DiscountRule::from_stored(
                r.kind,
                r.value_cents.map(Cents::get),
                r.percent_off,
                r.max_discount_cents.map(Cents::get),
            )))
        });
        let msg = expiring_message(coupons.len(), total, earliest, now, tz);
        out.push(ReminderPopupView {
            id: row.slot_id,
            message: String::new(),
            count: u32::try_from(coupons.len()).unwrap_or(u32::MAX),
            total_value_cents: total,
            earliest_ends_at: rfc3339(earliest),
            msg,
        });
    }
    Ok(out)
}

/// Writes each pop-up's `message` in `lang`.
pub fn in_language(popups: &mut [ReminderPopupView], lang: Lang) {
    for p in popups {
        p.message = lang.msg(&p.msg);
    }
}

/// The ids a "seen" call names, checked: at most [`MAX_SEEN_IDS`], each
/// 1 to [`MAX_SEEN_ID_CHARS`] characters. An id that names no pending
/// pop-up of the user is no error: there is nothing left to mark.
pub fn parse_seen_ids(ids: Option<Vec<String>>) -> Result<Option<Vec<ReminderSlotId>>, FieldError> {
    let Some(ids) = ids else {
        return Ok(None);
    };
    if ids.len() > MAX_SEEN_IDS {
        return Err(FieldError::new(
            "ids",
            format!("at most {MAX_SEEN_IDS} ids, got {}", ids.len()),
        ));
    }
    ids.into_iter()
        .map(|id| {
            let n = id.chars().count();
            if n == 0 || n > MAX_SEEN_ID_CHARS {
                Err(FieldError::new(
                    "ids",
                    format!("each id is 1 to {MAX_SEEN_ID_CHARS} characters"),
                ))
            } else {
                Ok(ReminderSlotId::from_wire(id))
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

impl Service {
    /// `user_id`'s pending pop-ups now ([`pending_in`]); read-only. The
    /// messages are left for the caller to write in its reader's language.
    pub async fn pending_reminder_popups(
        &self,
        user_id: &UserId,
    ) -> Result<Vec<ReminderPopupView>, ServiceError> {
        let now = self.now();
        let tz = self.settings().reminders.tz;
        let user = user_id.clone();
        self.read(move |c| {
            let user = user.clone();
            Box::pin(async move { Ok(pending_in(c, &user, now, tz).await?) })
        })
        .await
    }

    /// Marks `user_id`'s pending pop-ups seen (only those of `ids` when
    /// given) in one conditional update; the number marked. Seen twice is
    /// seen once: the second call marks nothing.
    pub async fn mark_reminder_popups_seen(
        &self,
        idem: Option<&IdempotencyRequest>,
        user_id: &UserId,
        ids: Option<Vec<ReminderSlotId>>,
    ) -> Result<Executed<u64>, ServiceError> {
        let now_ms = to_ms(self.now());
        let user = user_id.clone();
        self.write(idem, move |c| {
            let user = user.clone();
            let ids = ids.clone();
            Box::pin(async move { Ok(store::mark_seen(c, &user, ids.as_deref(), now_ms).await?) })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_ids_are_optional_bounded_and_each_of_a_sane_length() {
        assert_eq!(parse_seen_ids(None), Ok(None));
        assert_eq!(
            parse_seen_ids(Some(vec!["rms_1".into()])),
            Ok(Some(vec![ReminderSlotId::from_wire("rms_1")]))
        );
        assert_eq!(parse_seen_ids(Some(vec![])), Ok(Some(vec![])));
        let many = vec!["rms_1".to_string(); MAX_SEEN_IDS + 1];
        assert_eq!(parse_seen_ids(Some(many)).unwrap_err().field, "ids");
        assert_eq!(
            parse_seen_ids(Some(vec![String::new()])).unwrap_err().field,
            "ids"
        );
        assert_eq!(
            parse_seen_ids(Some(vec!["x".repeat(MAX_SEEN_ID_CHARS + 1)]))
                .unwrap_err()
                .field,
            "ids"
        );
    }
}
