//! The objects the service returns, in the API's shape (API.md, Objects).
//! The JSON API serializes them as they are, the console renders them, and
//! idempotent replays store exactly these bytes.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::coupon::{CouponStatus, effective_status};
use crate::domain::discount::{CouponTerms, DiscountRule};
use crate::domain::money::Cents;
use crate::domain::time::{from_ms, rfc3339};
use crate::store::campaigns::CampaignRow;
use crate::store::coupons::CouponRow;
use crate::store::events::EventRow;
use crate::store::templates::TemplateRow;

fn ts(ms: i64) -> String {
    rfc3339(from_ms(ms))
}

fn ts_opt(ms: Option<i64>) -> Option<String> {
    ms.map(ts)
}

/// Parses a stored JSON category list; a damaged value reads as "no
/// categories match" rather than "every category", so it can only deny.
pub fn parse_stored_categories(raw: &str) -> Vec<String> {
    serde_json::from_str(raw).unwrap_or_else(|_| vec![String::from("\u{0}invalid")])
}

/// A coupon template.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateView {
    pub id: String,
    pub name: String,
    /// `fixed` or `percent`.
    pub kind: String,
    pub value_cents: Option<i64>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<i64>,
    pub min_order_cents: i64,
    pub categories: Vec<String>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub valid_seconds: Option<i64>,
    /// `null`: unlimited.
    pub total_stock: Option<i64>,
    /// `null`: unlimited.
    pub per_user_limit: Option<i64>,
    /// Coupons claimed so far.
    pub claimed: i64,
    /// `active` or `disabled`.
    pub status: String,
    pub created_at: String,
}

impl TemplateView {
    pub fn from_row(t: TemplateRow, claimed: i64) -> Self {
        TemplateView {
            categories: parse_stored_categories(&t.categories),
            id: t.id,
            name: t.name,
            kind: t.kind,
            value_cents: t.value_cents,
            percent_off: t.percent_off,
            max_discount_cents: t.max_discount_cents,
            min_order_cents: t.min_order_cents,
            valid_from: ts_opt(t.valid_from),
            valid_until: ts_opt(t.valid_until),
            valid_seconds: t.valid_seconds,
            total_stock: t.total_stock,
            per_user_limit: t.per_user_limit,
            claimed,
            status: t.status,
            created_at: ts(t.created_at),
        }
    }
}

/// One state transition of a coupon or order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EventView {
    pub at: String,
    pub from: Option<String>,
    pub to: String,
    pub action: String,
    pub actor: String,
    pub order_no: Option<String>,
    pub reason: Option<String>,
    /// `coupon` or `order`: whose status changed.
    pub subject: String,
    pub coupon_id: Option<String>,
    pub request_id: Option<String>,
}

impl From<EventRow> for EventView {
    fn from(e: EventRow) -> Self {
        EventView {
            at: ts(e.at),
            from: e.from_status,
            to: e.to_status,
            action: e.action,
            actor: e.actor,
            order_no: e.order_no,
            reason: e.reason,
            subject: e.subject,
            coupon_id: e.coupon_id,
            request_id: e.request_id,
        }
    }
}

/// A coupon, with its *effective* status at read time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CouponView {
    pub id: String,
    pub code: String,
    pub user_id: String,
    pub template_id: Option<String>,
    /// `fixed` or `percent`.
    pub kind: String,
    pub value_cents: Option<i64>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<i64>,
    pub min_order_cents: i64,
    pub categories: Vec<String>,
    /// `available`, `locked`, `used`, `expired` or `invalidated`.
    pub status: String,
    pub starts_at: String,
    pub ends_at: String,
    pub order_no: Option<String>,
    pub locked_at: Option<String>,
    pub used_at: Option<String>,
    pub created_at: String,
    /// `claim` or `compensation`.
    pub source: String,
    /// Present on `GET /coupons/{id}`: transitions, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventView>>,
}

impl CouponView {
    pub fn from_row(c: CouponRow, now: DateTime<Utc>) -> Self {
        let status = effective_status(stored_status(&c.status), from_ms(c.ends_at), now);
        CouponView {
            categories: parse_stored_categories(&c.categories),
            id: c.id,
            code: c.code,
            user_id: c.user_id,
            template_id: c.template_id,
            kind: c.kind,
            value_cents: c.value_cents,
            percent_off: c.percent_off,
            max_discount_cents: c.max_discount_cents,
            min_order_cents: c.min_order_cents,
            status: status.as_str().to_string(),
            starts_at: ts(c.starts_at),
            ends_at: ts(c.ends_at),
            order_no: c.order_no,
            locked_at: ts_opt(c.locked_at),
            used_at: ts_opt(c.used_at),
            created_at: ts(c.created_at),
            source: c.source,
            events: None,
        }
    }
}

/// The stored status of a row; an unknown value (never written by us)
/// reads as `invalidated`, the status that allows nothing.
pub fn stored_status(raw: &str) -> CouponStatus {
    CouponStatus::parse(raw).unwrap_or(CouponStatus::Invalidated)
}

/// The discount terms stored on a coupon row.
pub fn coupon_terms(c: &CouponRow) -> CouponTerms {
    CouponTerms {
        rule: DiscountRule::from_stored(
            &c.kind,
            c.value_cents,
            c.percent_off,
            c.max_discount_cents,
        ),
        min_order: Cents::from_stored(c.min_order_cents),
        categories: parse_stored_categories(&c.categories),
    }
}

/// A presale campaign.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CampaignView {
    pub id: String,
    pub name: String,
    pub final_payment_starts_at: String,
    pub final_payment_ends_at: String,
    /// `lock`, `strict` or `swap_or_compensate`.
    pub policy: String,
    pub created_at: String,
}

impl From<CampaignRow> for CampaignView {
    fn from(c: CampaignRow) -> Self {
        CampaignView {
            id: c.id,
            name: c.name,
            final_payment_starts_at: ts(c.final_payment_starts_at),
            final_payment_ends_at: ts(c.final_payment_ends_at),
            policy: c.policy,
            created_at: ts(c.created_at),
        }
    }
}

/// An order's coupon side.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrderView {
    pub order_no: String,
    pub user_id: String,
    /// `normal` or `presale`.
    pub kind: String,
    pub category: String,
    pub status: String,
    pub total_cents: i64,
    pub deposit_cents: i64,
    pub campaign_id: Option<String>,
    pub coupon_id: Option<String>,
    /// The discount this order gets (snapshotted at deposit for presale).
    pub coupon_discount_cents: i64,
    /// `none`, `locked`, `used` or `released`.
    pub coupon_lock_status: String,
    pub compensation_cents: i64,
    /// What the customer must pay at the order's next payment.
    pub amount_due_cents: i64,
    pub created_at: String,
    pub deposit_paid_at: Option<String>,
    pub paid_at: Option<String>,
    pub closed_at: Option<String>,
    pub refunded_at: Option<String>,
    /// The discount promised at deposit payment, kept even if the final
    /// payment could not honour it.
    pub discount_snapshot_cents: i64,
    /// The coupon a `swap_or_compensate` final payment replaced.
    pub replaced_coupon_id: Option<String>,
    /// What was charged at the final payment.
    pub final_payment_cents: Option<i64>,
    /// When a normal order's checkout lock lapses.
    pub checkout_lock_expires_at: Option<String>,
    /// Present on `GET /orders/{order_no}`: transitions, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventView>>,
}

impl OrderView {
    /// Whether this is a normal order whose checkout lock lapsed before it
    /// was paid ([`crate::domain::order::checkout_lapsed`]).
    pub fn checkout_lapsed(&self, now: DateTime<Utc>) -> bool {
        use crate::domain::order::{OrderKind, OrderStatus};
        let (Some(kind), Some(status)) = (
            OrderKind::parse(&self.kind),
            OrderStatus::parse(&self.status),
        ) else {
            return false;
        };
        let ends = self
            .checkout_lock_expires_at
            .as_deref()
            .and_then(|t| crate::domain::time::parse_rfc3339(t).ok());
        crate::domain::order::checkout_lapsed(kind, status, ends, now)
    }
}

/// The read-only final-payment quote.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuoteView {
    pub order_no: String,
    pub amount_due_cents: i64,
    pub discount_cents: i64,
    pub compensation_cents: i64,
    /// `applied`, `no_discount_expired`, `swapped`, `compensated`, `none`.
    pub coupon_outcome: String,
    pub replacement_coupon_id: Option<String>,
    /// For the customer (Chinese).
    pub message: String,
    /// The same in English.
    pub message_en: String,
    /// The campaign's policy.
    pub policy: String,
    /// Whether the final-payment window is open now.
    pub window_open: bool,
}
