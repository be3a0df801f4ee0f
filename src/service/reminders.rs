//! The reminder planner: pre-expiry reminders aggregated per user and slot,
//! the presale "final payment is open" reminder and the strict-policy
//! warning that a locked coupon ends before the final-payment window.
//!
//! Every reminder is one transaction that writes its marks, its outbox row
//! (for the webhook dispatcher), its in-app copy (`user_messages`) and,
//! for a pop-up, its pending row (`reminder_popups`) together. The marks'
//! primary keys make each reminder happen at most once: a crash before
//! commit leaves nothing, and a second instance doing the same work fails
//! on the marks and rolls back (counted as `raced`).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use sqlx::AnyConnection;

pub(crate) use super::reminder_messages::{AtRisk, warn_at_deposit};
pub use super::reminder_messages::{
    COUPONS_EXPIRING, EXPIRES_BEFORE_FINAL_PAYMENT, FINAL_PAYMENT_OPEN,
};
use super::reminder_messages::{in_app, write_strict_warning};
use super::{Service, ServiceError};
use crate::domain::discount::DiscountRule;
use crate::domain::ids::{CampaignId, CouponId, OrderNo, ReminderSlotId, UserId};
use crate::domain::money::Cents;
use crate::domain::reminder::{
    self, Channel, DueCoupon, ReminderSettings, active_within_30d, aggregate, coupon_value,
    delay_for_quiet_hours, expiring_message, quiet_end_after, rate_limited, tier_needs_activity,
    tiered,
};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::i18n::Lang;
use crate::store::outbox::{self, NewMessage};
use crate::store::reminder_popups as popups;
use crate::store::reminders::{self as store, NewSlot};
use crate::store::{campaigns, is_unique_violation, orders};

/// Kinds in `order_reminder_marks`.
const MARK_OPEN: &str = "final_payment_open";
const MARK_STRICT_BEFORE_END: &str = "strict_warning_before_end";

/// Most opener pages one offset reads per run; the next run goes on.
const MAX_PAGES: usize = 1000;

/// Most campaigns with an open final-payment window one run looks at.
const MAX_OPEN_CAMPAIGNS: i64 = 1000;

/// What one planner run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReminderReport {
    /// `reminder.coupons_expiring` messages written.
    pub slots: usize,
    /// Coupons those messages cover.
    pub coupons: usize,
    /// Users whose reminder another instance wrote first.
    pub raced: usize,
    /// `reminder.final_payment_open` messages written.
    pub final_payment_open: usize,
    /// Second strict-policy warnings written.
    pub strict_warnings: usize,
}

impl ReminderReport {
    /// Messages written.
    pub fn messages(&self) -> usize {
        self.slots + self.final_payment_open + self.strict_warnings
    }
}

#[derive(Debug, Default, Clone, Copy, Serialize)]
struct UserOutcome {
    slots: usize,
    coupons: usize,
}

/// One user's due slots at one offset, in one transaction.
async fn remind_user_tx(
    c: &mut AnyConnection,
    s: &ReminderSettings,
    user_id: &UserId,
    offset: i64,
    lo_ms: i64,
    now: DateTime<Utc>,
) -> Result<UserOutcome, ServiceError> {
    let now_ms = to_ms(now);
    let hi_ms = now_ms + offset * 1000 + s.window_seconds * 1000;
    let rows = store::user_candidates(c, user_id, offset, lo_ms, hi_ms).await?;
    let due: Vec<DueCoupon> = rows
        .into_iter()
        .map(|r| DueCoupon {
            value: coupon_value(&DiscountRule::from_stored(
                r.kind,
                r.value_cents.map(Cents::get),
                r.percent_off,
                r.max_discount_cents.map(Cents::get),
            )),
            id: r.id,
            ends_at: from_ms(r.ends_at),
        })
        .collect();
    let mut out = UserOutcome::default();
    let mut activity: Option<bool> = None;
    for slot in aggregate(&due, offset, s.window_seconds, s.quiet_hours, s.tz) {
        if slot.send_at > now {
            break;
        }
        let total = slot.total_value();
        // The step's channel, then the tier (activity is read only when a
        // push step reaches it), then the caps.
        let step = s.step_channel(offset);
        let active = if tier_needs_activity(step, total, s.sms_min_cents) {
            match activity {
                Some(a) => a,
                None => {
                    let last = store::last_activity(c, user_id).await?.map(from_ms);
                    *activity.insert(active_within_30d(last, now))
                }
            }
        } else {
            true
        };
        let wanted = tiered(step, total, s.sms_min_cents, active);
        let ch = if matches!(wanted, Channel::Sms | Channel::Push) {
            let since = now_ms - 24 * 3600 * 1000;
            let sent_sms = store::sent_since(c, user_id, Channel::Sms.as_str(), since).await?;
            let sent_push = store::sent_since(c, user_id, Channel::Push.as_str(), since).await?;
            rate_limited(wanted, sent_sms, sent_push, s.limits)
        } else {
            // An in-app or pop-up step has no cap to count against.
            wanted
        };
        let slot_id = ReminderSlotId::generate(now_ms);
        let ids: Vec<CouponId> = slot.coupons.iter().map(|c| c.id.clone()).collect();
        store::insert_marks(c, &ids, offset, &slot_id).await?;
        store::insert_slot(
            c,
            &NewSlot {
                id: &slot_id,
                user_id,
                offset_seconds: offset,
                opened_at: to_ms(slot.opened_at),
                send_at: to_ms(slot.send_at),
                sent_at: now_ms,
                channel: ch.as_str(),
                coupon_count: ids.len() as i64,
                total_value_cents: total,
            },
        )
        .await?;
        let earliest = slot.earliest_ends_at();
        if ch == Channel::Popup {
            // Pending until seen or until its last coupon has ended.
            let ends_by = slot
                .coupons
                .iter()
                .map(|c| c.ends_at)
                .max()
                .unwrap_or(earliest);
            popups::insert(c, &slot_id, user_id, now_ms, to_ms(ends_by)).await?;
        }
        let text = expiring_message(ids.len(), total, earliest, now, s.tz);
        let payload = json!({
            "channel": ch.as_str(),
            "coupon_ids": ids,
            "total_value_cents": total.get(),
            "earliest_ends_at": rfc3339(earliest),
            "message": Lang::Zh.msg(&text),
            "message_en": Lang::En.msg(&text),
            "offset_seconds": offset,
            "slot_id": slot_id,
        });
        outbox::insert_many(
            c,
            &[NewMessage {
                event_type: COUPONS_EXPIRING,
                user_id: Some(user_id.clone()),
                subject_id: Some(slot_id.to_string()),
                payload: payload.to_string(),
                created_at: now_ms,
            }],
        )
        .await?;
        in_app(c, user_id, COUPONS_EXPIRING, &slot_id, &text, now_ms).await?;
        out.slots += 1;
        out.coupons += ids.len();
    }
    Ok(out)
}

/// How far behind the last complete pass the next one starts reading: a
/// claim whose transaction committed late is still seen.
const CURSOR_OVERLAP_MS: i64 = 60_000;

/// What a planner remembers between runs (in memory only: a restart reads
/// the whole catch-up band once). Per offset, the `ends_at` up to which a
/// complete pass outside quiet hours sent every due slot, so the next run
/// reads only what came due since instead of the whole band again.
///
/// It also remembers the campaigns whose every deposit-paid order has been
/// told that the final payment opened, by a pass that began at least
/// [`CURSOR_OVERLAP_MS`] after the window opened (so a deposit whose
/// transaction committed late was already visible): later runs skip them
/// instead of walking all their orders again once a second.
#[derive(Debug, Default, Clone)]
pub struct ReminderCursor {
    done_through: HashMap<i64, i64>,
    told_open: HashSet<CampaignId>,
}

impl ReminderCursor {
    /// Whether this planner has stopped reading `campaign_id`'s orders for
    /// the final-payment-open reminder (all told, see the type's docs).
    pub fn remembers_told_open(&self, campaign_id: &CampaignId) -> bool {
        self.told_open.contains(campaign_id)
    }
}

impl Service {
    /// One planner run without memory of earlier runs (reads each offset's
    /// whole catch-up band); see [`Service::plan_due_reminders_with`].
    pub async fn plan_due_reminders(&self, batch: i64) -> Result<ReminderReport, ServiceError> {
        self.plan_due_reminders_with(&mut ReminderCursor::default(), batch)
            .await
    }

    /// One run of the reminder planner at the service's now: for each
    /// offset, the users with a coupon that reached it (and is not yet
    /// reminded for it), each user's due slots in one transaction; then the
    /// presale reminders. Bounded: at most `batch` coupons per page and
    /// [`MAX_PAGES`] pages per offset; call again until it reports nothing.
    pub async fn plan_due_reminders_with(
        &self,
        cursor: &mut ReminderCursor,
        batch: i64,
    ) -> Result<ReminderReport, ServiceError> {
        let now = self.now();
        let s = self.settings().reminders.clone();
        let mut report = ReminderReport::default();
        let now_ms = to_ms(now);
        let quiet_end = quiet_end_after(now, s.quiet_hours, s.tz);
        for &offset in &s.offsets {
            let o_ms = offset * 1000;
            // A coupon whose next smaller offset has come is that one's
            // business; one whose slot is older than the catch-up is stale.
            let lo_ms = (now_ms - s.catch_up_seconds() * 1000 + o_ms)
                .max(now_ms + s.next_smaller(offset) * 1000);
            let scan_lo_ms = match cursor.done_through.get(&offset) {
                Some(done) => lo_ms.max(done - CURSOR_OVERLAP_MS),
                None => lo_ms,
            };
            let mut hi_ms = now_ms + o_ms;
            // Inside quiet hours only coupons ending by their end may go.
            if let Some(end) = quiet_end {
                hi_ms = hi_ms.min(to_ms(end));
            }
            if hi_ms <= scan_lo_ms {
                continue;
            }
            let mut seen: HashSet<UserId> = HashSet::new();
            // The start of the band: before every coupon id.
            let mut after = (i64::MIN, CouponId::from_wire(String::new()));
            let mut complete = false;
            for _ in 0..MAX_PAGES {
                let (a_ends, a_id) = after.clone();
                let (page, last) = self
                    .read(move |c| {
                        let a_id = a_id.clone();
                        Box::pin(async move {
                            let rows = store::due_openers(
                                c, offset, scan_lo_ms, hi_ms, a_ends, &a_id, batch,
                            )
                            .await?;
                            let last = rows.last().map(|r| (r.ends_at, r.id.clone()));
                            let ids: Vec<CouponId> = rows.iter().map(|r| r.id.clone()).collect();
                            let done = store::marked(c, offset, &ids).await?;
                            let due: Vec<_> = rows
                                .into_iter()
                                .filter(|r| !done.contains(r.id.as_str()))
                                .collect();
                            Ok((due, last))
                        })
                    })
                    .await?;
                let Some(last) = last else {
                    complete = true;
                    break;
                };
                for row in page {
                    if !seen.insert(row.user_id.clone()) {
                        continue;
                    }
                    match self.remind_user(&row.user_id, offset, lo_ms).await {
                        Ok(o) => {
                            report.slots += o.slots;
                            report.coupons += o.coupons;
                        }
                        Err(ServiceError::Db(e)) if is_unique_violation(&e) => report.raced += 1,
                        Err(e) => return Err(e),
                    }
                }
                after = last;
            }
            // Outside quiet hours every slot found was due and is now sent
            // (or was sent by another instance): the next run starts here.
            if complete && quiet_end.is_none() {
                cursor.done_through.insert(offset, hi_ms);
            }
        }
        report.final_payment_open = self.remind_final_payment_open(cursor, batch).await?;
        report.strict_warnings = self.warn_strict_before_end(batch).await?;
        Ok(report)
    }

    async fn remind_user(
        &self,
        user_id: &UserId,
        offset: i64,
        lo_ms: i64,
    ) -> Result<UserOutcome, ServiceError> {
        let s = self.settings().reminders.clone();
        let user_id = user_id.clone();
        let now = self.now();
        Ok(self
            .write(None, move |c| {
                let s = s.clone();
                let user_id = user_id.clone();
                Box::pin(async move { remind_user_tx(c, &s, &user_id, offset, lo_ms, now).await })
            })
            .await?
            .fresh()
            .unwrap_or_default())
    }

    /// `reminder.final_payment_open` for each `deposit_paid` order of a
    /// campaign whose window has opened (after quiet hours, unless the
    /// window closes first), once per order, with the amount due and the
    /// saving as the final payment would compute them now.
    ///
    /// A campaign all of whose orders were told is remembered in `cursor`
    /// and not read again (see [`ReminderCursor`]).
    async fn remind_final_payment_open(
        &self,
        cursor: &mut ReminderCursor,
        batch: i64,
    ) -> Result<usize, ServiceError> {
        let now = self.now();
        let s = self.settings().reminders.clone();
        let campaigns: Vec<(CampaignId, i64, i64)> = self
            .read(move |c| {
                Box::pin(async move {
                    Ok(store::open_campaigns(c, to_ms(now), MAX_OPEN_CAMPAIGNS).await?)
                })
            })
            .await?
            .into_iter()
            .map(|(id, starts_ms, ends_ms)| (CampaignId::from_wire(id), starts_ms, ends_ms))
            .collect();
        // Forget campaigns whose window closed: the memory stays as small
        // as the list of open windows.
        cursor
            .told_open
            .retain(|id| campaigns.iter().any(|(open, _, _)| open == id));
        let mut sent = 0;
        for (campaign_id, starts_ms, ends_ms) in campaigns {
            if cursor.told_open.contains(&campaign_id) {
                continue;
            }
            let send_at =
                delay_for_quiet_hours(from_ms(starts_ms), from_ms(ends_ms), s.quiet_hours, s.tz);
            if send_at > now {
                continue;
            }
            let cid = campaign_id.clone();
            let orders = self
                .read(move |c| {
                    let cid = cid.clone();
                    Box::pin(async move {
                        Ok(store::orders_to_tell_open(c, &cid, starts_ms, batch).await?)
                    })
                })
                .await?;
            // Fewer than a batch: this pass saw every order still to tell.
            let whole = i64::try_from(orders.len()).unwrap_or(i64::MAX) < batch;
            for order_no in orders {
                let written = self
                    .write(None, move |c| {
                        let order_no = order_no.clone();
                        Box::pin(async move { final_payment_open_tx(c, &order_no, now).await })
                    })
                    .await?
                    .fresh()
                    .unwrap_or(false);
                sent += usize::from(written);
            }
            if whole && to_ms(now) >= starts_ms.saturating_add(CURSOR_OVERLAP_MS) {
                cursor.told_open.insert(campaign_id);
            }
        }
        Ok(sent)
    }

    /// The second strict-policy warning, at [`reminder::second_warning_at`]
    /// (after quiet hours unless the coupon ends first), once per order.
    async fn warn_strict_before_end(&self, batch: i64) -> Result<usize, ServiceError> {
        let now = self.now();
        let s = self.settings().reminders.clone();
        // No warning is due before its coupon's end minus the largest
        // offset, so coupons ending later need not be read yet.
        let largest_offset_ms = s
            .offsets
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .saturating_mul(1000);
        let ends_by_ms = to_ms(now).saturating_add(largest_offset_ms);
        let risks = self
            .read(move |c| {
                Box::pin(
                    async move { Ok(store::strict_risks(c, to_ms(now), ends_by_ms, batch).await?) },
                )
            })
            .await?;
        let mut sent = 0;
        for r in risks {
            let ends_at = from_ms(r.ends_at);
            let paid = from_ms(r.deposit_paid_at.unwrap_or(r.ends_at));
            let Some(at) = reminder::second_warning_at(paid, ends_at, &s.offsets, s.window_seconds)
            else {
                continue;
            };
            if delay_for_quiet_hours(at, ends_at, s.quiet_hours, s.tz) > now {
                continue;
            }
            let s = s.clone();
            let written = self
                .write(None, move |c| {
                    let s = s.clone();
                    let r = r.clone();
                    Box::pin(async move {
                        let risk = AtRisk {
                            order_no: &r.order_no,
                            user_id: &r.user_id,
                            coupon_id: &r.coupon_id,
                            ends_at: from_ms(r.ends_at),
                            window_starts: from_ms(r.final_payment_starts_at),
                        };
                        Ok(write_strict_warning(c, &s, MARK_STRICT_BEFORE_END, &risk, now).await?)
                    })
                })
                .await?
                .fresh()
                .unwrap_or(false);
            sent += usize::from(written);
        }
        Ok(sent)
    }
}

/// One order's "final payment is open" reminder, re-checking the order in
/// the transaction.
async fn final_payment_open_tx(
    c: &mut AnyConnection,
    order_no: &OrderNo,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let Some(o) = orders::get(c, order_no).await? else {
        return Ok(false);
    };
    if o.status != crate::domain::order::OrderStatus::DepositPaid {
        return Ok(false);
    }
    let Some(campaign_id) = &o.campaign_id else {
        return Ok(false);
    };
    let Some(campaign) = campaigns::get(c, campaign_id).await? else {
        return Ok(false);
    };
    let Ok(crate::domain::final_payment::StackedPlan { whole: plan, .. }) =
        super::orders::plan_for(c, &o, &campaign, now).await
    else {
        // A broken coupon link: the quote refuses too; support's health
        // check finds it. No reminder with a wrong amount.
        return Ok(false);
    };
    let now_ms = to_ms(now);
    if !store::mark_order(c, order_no, MARK_OPEN, now_ms).await? {
        return Ok(false);
    }
    let text = reminder::final_payment_open_message(plan.amount_due, plan.discount);
    let payload = json!({
        "order_no": order_no,
        "amount_due_cents": plan.amount_due.get(),
        "discount_cents": plan.discount.get(),
        "message": Lang::Zh.msg(&text),
        "message_en": Lang::En.msg(&text),
        "final_payment_ends_at": rfc3339(from_ms(campaign.final_payment_ends_at)),
    });
    outbox::insert_many(
        c,
        &[NewMessage {
            event_type: FINAL_PAYMENT_OPEN,
            user_id: Some(o.user_id.clone()),
            subject_id: Some(order_no.to_string()),
            payload: payload.to_string(),
            created_at: now_ms,
        }],
    )
    .await?;
    in_app(c, &o.user_id, FINAL_PAYMENT_OPEN, order_no, &text, now_ms).await?;
    Ok(true)
}

/// What the console's reminder page shows of the last 24 hours.
#[derive(Debug, Clone, Default)]
pub struct ReminderActivity {
    /// Since when the counts run.
    pub since: DateTime<Utc>,
    /// Counts by channel and offset since `since`.
    pub counts: Vec<store::SlotCount>,
    /// The most recent reminders, newest first.
    pub recent: Vec<store::SlotRow>,
}

impl Service {
    /// The last 24 hours' reminders by channel and offset, and the `limit`
    /// most recent ones (read-only; both served by `reminder_slots_sent_idx`).
    pub async fn reminder_activity(&self, limit: i64) -> Result<ReminderActivity, ServiceError> {
        let since = self.now() - chrono::Duration::hours(24);
        let since_ms = to_ms(since);
        let limit = limit.clamp(1, 200);
        self.read(move |c| {
            Box::pin(async move {
                let counts = store::slot_counts_since(c, since_ms).await?;
                let recent = store::recent_slots(c, limit).await?;
                Ok(ReminderActivity {
                    since,
                    counts,
                    recent,
                })
            })
        })
        .await
    }
}
