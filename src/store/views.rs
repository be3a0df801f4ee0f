//! The API's coupon object ([`CouponView`], with its [`EventView`]s). It
//! lives in the store because the store writes it too: every coupon
//! change's outbox row carries it as the webhook payload
//! ([`super::coupons::coupon_message`], beside `CouponView::from_row`,
//! next to the row it is built from). The service re-exports it from
//! `service::views` beside the other objects it returns.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::money::Cents;

use super::events::EventRow;
use crate::domain::coupon::{CouponSource, CouponStatus};
use crate::domain::discount::{DiscountKind, LineScope, PartialRefundRule};
use crate::domain::ids::{CouponId, OrderNo, ShopId, Sku, TemplateId, UserId};
use crate::domain::time::{from_ms, rfc3339};

/// Stored milliseconds as the API writes a time (RFC 3339, UTC).
pub fn ts(ms: i64) -> String {
    rfc3339(from_ms(ms))
}

/// [`ts`] of an optional time.
pub fn ts_opt(ms: Option<i64>) -> Option<String> {
    ms.map(ts)
}

/// Parses a stored JSON category list; a damaged value reads as "no
/// categories match" rather than "every category", so it can only deny.
pub fn parse_stored_categories(raw: &str) -> Vec<String> {
    serde_json::from_str(raw).unwrap_or_else(|_| vec![String::from("\u{0}invalid")])
}

/// The `line_terms` column's JSON: a coupon's (or template's) SKU lists,
/// shop and partial-refund rule; a key left out is its default.
#[derive(Debug, Default, serde::Deserialize, Serialize)]
struct StoredLineTerms {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    skus: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    exclude_skus: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shop_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partial_refund_rule: Option<String>,
    /// Written only when false (absent: the coupon may share an order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stackable: Option<bool>,
}

/// A stored `line_terms` value, read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineTerms {
    pub scope: LineScope,
    pub refund_rule: PartialRefundRule,
    /// False: the coupon must be its order's only coupon.
    pub stackable: bool,
}

/// The `line_terms` JSON of a scope, a partial-refund rule and whether
/// the coupon stacks; `{}` for a stackable platform coupon without SKU
/// rules, refunded proportionally.
pub fn line_terms_json(scope: &LineScope, rule: PartialRefundRule, stackable: bool) -> String {
    let stored = StoredLineTerms {
        skus: scope.skus.iter().map(|s| s.to_string()).collect(),
        exclude_skus: scope.exclude_skus.iter().map(|s| s.to_string()).collect(),
        shop_id: scope.shop_id.as_ref().map(|s| s.to_string()),
        partial_refund_rule: (rule != PartialRefundRule::default())
            .then(|| rule.as_str().to_string()),
        stackable: (!stackable).then_some(false),
    };
    serde_json::to_string(&stored).unwrap_or_else(|_| "{}".to_string())
}

/// Parses a stored `line_terms` value. Like [`parse_stored_categories`] a
/// damaged value can only deny: it reads as a scope no line passes (a SKU
/// list naming a SKU nobody sends), refunded proportionally, alone.
pub fn parse_stored_line_terms(raw: &str) -> LineTerms {
    match serde_json::from_str::<StoredLineTerms>(raw) {
        Ok(t) => LineTerms {
            scope: LineScope {
                skus: t.skus.into_iter().map(Sku::from_stored).collect(),
                exclude_skus: t.exclude_skus.into_iter().map(Sku::from_stored).collect(),
                shop_id: t.shop_id.map(ShopId::from_stored),
            },
            refund_rule: t
                .partial_refund_rule
                .as_deref()
                .and_then(PartialRefundRule::parse)
                .unwrap_or_default(),
            stackable: t.stackable.unwrap_or(true),
        },
        Err(_) => LineTerms {
            scope: LineScope {
                skus: vec![Sku::from_stored("\u{0}invalid".to_string())],
                ..LineScope::default()
            },
            refund_rule: PartialRefundRule::default(),
            stackable: false,
        },
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
    #[schema(value_type = Option<String>)]
    pub order_no: Option<OrderNo>,
    pub reason: Option<String>,
    /// `coupon` or `order`: whose status changed.
    pub subject: String,
    #[schema(value_type = Option<String>)]
    pub coupon_id: Option<CouponId>,
    pub request_id: Option<String>,
    /// The coupon's code, for pages (filled by the service where it names
    /// coupons to people; not part of the API).
    #[serde(skip)]
    #[schema(ignore)]
    pub coupon_code: Option<String>,
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
            coupon_code: None,
        }
    }
}

/// A coupon, with its *effective* status at read time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CouponView {
    #[schema(value_type = String)]
    pub id: CouponId,
    pub code: String,
    #[schema(value_type = String)]
    pub user_id: UserId,
    #[schema(value_type = Option<String>)]
    pub template_id: Option<TemplateId>,
    /// `fixed` or `percent`.
    #[schema(value_type = String)]
    pub kind: DiscountKind,
    #[schema(value_type = Option<i64>)]
    pub value_cents: Option<Cents>,
    pub percent_off: Option<i64>,
    #[schema(value_type = Option<i64>)]
    pub max_discount_cents: Option<Cents>,
    #[schema(value_type = i64)]
    pub min_order_cents: Cents,
    pub categories: Vec<String>,
    /// Only lines of these SKUs (empty: any).
    #[schema(value_type = Vec<String>)]
    pub skus: Vec<Sku>,
    /// Never lines of these SKUs.
    #[schema(value_type = Vec<String>)]
    pub exclude_skus: Vec<Sku>,
    /// A shop coupon's shop; null for a platform coupon.
    #[schema(value_type = Option<String>)]
    pub shop_id: Option<ShopId>,
    /// `proportional` or `clawback`.
    #[schema(value_type = String)]
    pub partial_refund_rule: PartialRefundRule,
    /// False: the coupon must be its order's only coupon.
    pub stackable: bool,
    /// `available`, `locked`, `used`, `expired` or `invalidated`.
    #[schema(value_type = String)]
    pub status: CouponStatus,
    pub starts_at: String,
    pub ends_at: String,
    #[schema(value_type = Option<String>)]
    pub order_no: Option<OrderNo>,
    pub locked_at: Option<String>,
    pub used_at: Option<String>,
    pub created_at: String,
    /// `claim`, `compensation` or `code` (redeemed with a code).
    #[schema(value_type = String)]
    pub source: CouponSource,
    /// Present on `GET /coupons/{id}`: transitions, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventView>>,
}

impl CouponView {
    /// Whether staff may release this coupon ([`CouponStatus::can_release`]).
    pub fn can_release(&self) -> bool {
        self.status.can_release()
    }

    /// Whether staff may invalidate this coupon
    /// ([`CouponStatus::can_invalidate`]).
    pub fn can_invalidate(&self) -> bool {
        self.status.can_invalidate()
    }
}
