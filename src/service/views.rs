//! The objects the service returns, in the API's shape (API.md, Objects).
//! The JSON API serializes them as they are, the console renders them, and
//! idempotent replays store exactly these bytes.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::campaign::{CompensationMode, Policy};
use crate::domain::coupon::CouponStatus;
use crate::domain::discount::{CouponTerms, DiscountKind, DiscountRule, PartialRefundRule};
use crate::domain::ids::{
    CampaignId, CouponId, LineId, OrderNo, RefundId, ShopId, Sku, TemplateId, UserId,
};
use crate::domain::money::Cents;
use crate::domain::order::CouponLockStatus;
use crate::domain::order::{self, OrderKind, OrderStatus};
use crate::domain::refund::CouponRefundOutcome;
use crate::domain::template::{ClaimStanding, claim_standing};
use crate::store::campaigns::CampaignRow;
use crate::store::coupons::CouponRow;
use crate::store::templates::TemplateRow;
pub use crate::store::views::{CouponView, EventView, parse_stored_categories};
use crate::store::views::{ts, ts_opt};

/// A coupon template.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TemplateView {
    #[schema(value_type = String)]
    pub id: TemplateId,
    pub name: String,
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
    /// A shop coupon's shop; null: platform coupons.
    #[schema(value_type = Option<String>)]
    pub shop_id: Option<ShopId>,
    /// `proportional` or `clawback`: what a partial refund does to the
    /// discount.
    #[schema(value_type = String)]
    pub partial_refund_rule: PartialRefundRule,
    /// False: its coupons must be an order's only coupon.
    pub stackable: bool,
    /// The discount its coupons may give together; null: no budget.
    #[schema(value_type = Option<i64>)]
    pub budget_cents: Option<Cents>,
    /// What its coupons locked or used on orders hold of the budget; null
    /// without a budget.
    pub budget_used_cents: Option<i64>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub valid_seconds: Option<i64>,
    /// `null`: unlimited.
    pub total_stock: Option<i64>,
    /// `null`: unlimited.
    pub per_user_limit: Option<i64>,
    /// Coupons claimed so far.
    pub claimed: i64,
    /// `active`, `paused`, `not_started` or `ended`, at the time of the
    /// answer.
    #[schema(value_type = String)]
    pub status: ClaimStanding,
    /// Since when claiming is paused; null when it is not.
    pub paused_at: Option<String>,
    /// When claiming ends early, if it does.
    pub claim_ends_at: Option<String>,
    /// Its coupons by effective status.
    pub counts: StatusCounts,
    pub created_at: String,
    /// Each claimed coupon ends up to this many seconds before the
    /// template's nominal end, by a fixed amount drawn from its id (never
    /// later than promised); 0: no spreading.
    pub expiry_spread_seconds: i64,
}

/// A template's coupons by effective status (an `available` coupon past
/// its end counts as `expired`). Live coupons only: archived ones are all
/// terminal and old.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct StatusCounts {
    pub available: i64,
    pub locked: i64,
    pub used: i64,
    pub expired: i64,
    pub invalidated: i64,
}

impl StatusCounts {
    /// From `(stored status, count, of which past their end)` rows.
    pub fn from_rows(rows: &[(String, i64, i64)]) -> Self {
        let mut c = StatusCounts::default();
        for (status, n, past) in rows {
            match CouponStatus::parse(status) {
                Some(CouponStatus::Available) => {
                    c.available += n - past;
                    c.expired += past;
                }
                Some(CouponStatus::Locked) => c.locked += n,
                Some(CouponStatus::Used) => c.used += n,
                Some(CouponStatus::Expired) => c.expired += n,
                Some(CouponStatus::Invalidated) => c.invalidated += n,
                None => {}
            }
        }
        c
    }
}

impl TemplateView {
    pub fn from_row(
        t: TemplateRow,
        claimed: i64,
        counts: StatusCounts,
        now: DateTime<Utc>,
    ) -> Self {
        let status = claim_standing(
            t.status,
            t.valid_from.map(crate::domain::time::from_ms),
            t.valid_until.map(crate::domain::time::from_ms),
            t.claim_ends_at.map(crate::domain::time::from_ms),
            now,
        );
        let terms = crate::store::views::parse_stored_line_terms(&t.line_terms);
        TemplateView {
            skus: terms.scope.skus,
            exclude_skus: terms.scope.exclude_skus,
            shop_id: terms.scope.shop_id,
            partial_refund_rule: terms.refund_rule,
            stackable: terms.stackable,
            budget_used_cents: t
                .budget_cents
                .map(|b| b.get() - t.budget_left_cents.unwrap_or(0)),
            budget_cents: t.budget_cents,
            status,
            paused_at: ts_opt(t.paused_at),
            claim_ends_at: ts_opt(t.claim_ends_at),
            counts,
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
            created_at: ts(t.created_at),
            expiry_spread_seconds: t.expiry_spread_seconds,
        }
    }
}

/// The discount terms stored on a coupon row.
pub fn coupon_terms(c: &CouponRow) -> CouponTerms {
    let line = crate::store::views::parse_stored_line_terms(&c.line_terms);
    CouponTerms {
        rule: DiscountRule::from_stored(
            c.kind,
            c.value_cents.map(Cents::get),
            c.percent_off,
            c.max_discount_cents.map(Cents::get),
        ),
        min_order: c.min_order_cents,
        categories: parse_stored_categories(&c.categories),
        scope: line.scope,
        refund_rule: line.refund_rule,
        stackable: line.stackable,
    }
}

/// A presale campaign.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CampaignView {
    #[schema(value_type = String)]
    pub id: CampaignId,
    pub name: String,
    pub final_payment_starts_at: String,
    pub final_payment_ends_at: String,
    /// `lock`, `strict` or `swap_or_compensate`.
    #[schema(value_type = String)]
    pub policy: Policy,
    pub created_at: String,
    /// `deduction` (taken off the final payment) or `coupon` (a new
    /// compensation coupon of the same value): how `swap_or_compensate`
    /// compensates when no replacement is found.
    #[schema(value_type = String)]
    pub compensation_mode: CompensationMode,
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
            compensation_mode: c.compensation_mode,
        }
    }
}

/// An order's coupon side.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrderView {
    #[schema(value_type = String)]
    pub order_no: OrderNo,
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// `normal` or `presale`.
    #[schema(value_type = String)]
    pub kind: OrderKind,
    pub category: String,
    #[schema(value_type = String)]
    pub status: OrderStatus,
    #[schema(value_type = i64)]
    pub total_cents: Cents,
    #[schema(value_type = i64)]
    pub deposit_cents: Cents,
    #[schema(value_type = Option<String>)]
    pub campaign_id: Option<CampaignId>,
    #[schema(value_type = Option<String>)]
    pub coupon_id: Option<CouponId>,
    /// The discount this order gets (snapshotted at deposit for presale).
    #[schema(value_type = i64)]
    pub coupon_discount_cents: Cents,
    /// `none`, `locked`, `used` or `released`.
    #[schema(value_type = String)]
    pub coupon_lock_status: CouponLockStatus,
    #[schema(value_type = i64)]
    pub compensation_cents: Cents,
    /// What the customer must pay at the order's next payment.
    #[schema(value_type = i64)]
    pub amount_due_cents: Cents,
    pub created_at: String,
    pub deposit_paid_at: Option<String>,
    pub paid_at: Option<String>,
    pub closed_at: Option<String>,
    pub refunded_at: Option<String>,
    /// The discount promised at deposit payment, kept even if the final
    /// payment could not honour it.
    #[schema(value_type = i64)]
    pub discount_snapshot_cents: Cents,
    /// The coupon a `swap_or_compensate` final payment replaced.
    #[schema(value_type = Option<String>)]
    pub replaced_coupon_id: Option<CouponId>,
    /// What was charged at the final payment.
    #[schema(value_type = Option<i64>)]
    pub final_payment_cents: Option<Cents>,
    /// When a normal order's checkout lock lapses.
    pub checkout_lock_expires_at: Option<String>,
    /// The order's lines with each coupon's share (the single-category
    /// form is one line, `1`).
    pub lines: Vec<OrderLineView>,
    /// What the customer got back, summed over the order's refunds.
    #[schema(value_type = i64)]
    pub refunded_cents: Cents,
    /// The coupons on the order (at most one), each with its discount and
    /// lock status.
    pub coupons: Vec<OrderCouponView>,
    /// Present on `GET /orders/{order_no}`: transitions, oldest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventView>>,
}

/// A refund by line (`POST /orders/{order_no}/refunds`), or the
/// whole-order refund of the units left (`whole`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RefundView {
    #[schema(value_type = String)]
    pub refund_id: RefundId,
    #[schema(value_type = String)]
    pub order_no: OrderNo,
    pub at: String,
    pub lines: Vec<RefundLineView>,
    /// What the customer gets back: the lines' refunds less the clawback.
    #[schema(value_type = i64)]
    pub refund_cents: Cents,
    #[schema(value_type = i64)]
    pub clawback_cents: Cents,
    pub coupons: Vec<RefundCouponView>,
    pub reason: String,
    /// The whole-order refund (`POST /orders/{order_no}/refund`).
    pub whole: bool,
    /// Who refunded (the API caller or the staff member).
    pub actor: String,
}

/// One refunded line of a refund.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RefundLineView {
    #[schema(value_type = String)]
    pub line_id: LineId,
    pub quantity: i64,
    /// Of the line's payable amount.
    #[schema(value_type = i64)]
    pub refund_cents: Cents,
    /// Of the line's discount (information for the shop).
    #[schema(value_type = i64)]
    pub discount_cents: Cents,
}

/// What a refund did to a coupon.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RefundCouponView {
    #[schema(value_type = String)]
    pub coupon_id: CouponId,
    /// `kept` (still used for units the customer keeps) or `returned`.
    #[schema(value_type = String)]
    pub outcome: CouponRefundOutcome,
    /// Deducted from this refund for this coupon (`clawback` rule).
    #[schema(value_type = i64)]
    pub clawback_cents: Cents,
    /// This coupon's share of the refunded units: summed over every refund
    /// of the order, exactly its discount on the lines refunded.
    #[schema(value_type = i64)]
    pub discount_cents: Cents,
}

/// An order's refunds, oldest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RefundList {
    pub refunds: Vec<RefundView>,
}

/// One line of an order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrderLineView {
    #[schema(value_type = String)]
    pub line_id: LineId,
    #[schema(value_type = Option<String>)]
    pub sku: Option<Sku>,
    pub category: String,
    #[schema(value_type = Option<String>)]
    pub shop_id: Option<ShopId>,
    pub quantity: i64,
    #[schema(value_type = i64)]
    pub unit_price_cents: Cents,
    /// `quantity × unit_price_cents`.
    #[schema(value_type = i64)]
    pub amount_cents: Cents,
    /// Each coupon's share of the line (优惠分摊).
    pub discounts: Vec<LineDiscountView>,
    /// The amount less the discounts.
    #[schema(value_type = i64)]
    pub payable_cents: Cents,
    pub refunded_quantity: i64,
    #[schema(value_type = i64)]
    pub refunded_cents: Cents,
}

/// One coupon's share of a line.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LineDiscountView {
    #[schema(value_type = String)]
    pub coupon_id: CouponId,
    #[schema(value_type = i64)]
    pub cents: Cents,
}

/// A coupon on an order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrderCouponView {
    #[schema(value_type = String)]
    pub coupon_id: CouponId,
    /// Its discount on the order.
    #[schema(value_type = i64)]
    pub discount_cents: Cents,
    /// `none`, `locked`, `used` or `released`.
    #[schema(value_type = String)]
    pub lock_status: CouponLockStatus,
    /// The compensation that replaced its discount at a presale order's
    /// final payment (its share stays on the lines); 0 otherwise.
    #[schema(value_type = i64)]
    pub compensation_cents: Cents,
    /// The expired coupon it replaced at a presale order's final payment
    /// (`swap_or_compensate`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub replaced_coupon_id: Option<CouponId>,
}

impl OrderView {
    fn checkout_lock_ends(&self) -> Option<DateTime<Utc>> {
        self.checkout_lock_expires_at
            .as_deref()
            .and_then(|t| crate::domain::time::parse_rfc3339(t).ok())
    }

    /// Whether this is a normal order whose checkout lock lapsed before it
    /// was paid ([`crate::domain::order::checkout_lapsed`]).
    pub fn checkout_lapsed(&self, now: DateTime<Utc>) -> bool {
        order::checkout_lapsed(self.kind, self.status, self.checkout_lock_ends(), now)
    }

    /// Whether the order still awaits a payment ([`OrderStatus::is_live`]).
    pub fn is_live(&self) -> bool {
        self.status.is_live()
    }

    /// Whether the order still holds its coupon
    /// ([`crate::domain::order::holds_coupon`]).
    pub fn holds_coupon(&self, now: DateTime<Utc>) -> bool {
        order::holds_coupon(self.kind, self.status, self.checkout_lock_ends(), now)
    }
}

/// The read-only final-payment quote.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuoteView {
    #[schema(value_type = String)]
    pub order_no: OrderNo,
    #[schema(value_type = i64)]
    pub amount_due_cents: Cents,
    #[schema(value_type = i64)]
    pub discount_cents: Cents,
    #[schema(value_type = i64)]
    pub compensation_cents: Cents,
    /// `applied`, `no_discount_expired`, `swapped`, `compensated`, `none`.
    pub coupon_outcome: String,
    #[schema(value_type = Option<String>)]
    pub replacement_coupon_id: Option<CouponId>,
    /// For the customer (Chinese).
    pub message: String,
    /// The same in English.
    pub message_en: String,
    /// The campaign's policy.
    #[schema(value_type = String)]
    pub policy: Policy,
    /// Whether the final-payment window is open now.
    pub window_open: bool,
    /// Each coupon of the order and what the final payment does with it
    /// (one for an order of one coupon, none without); the fields above
    /// are their sums, and the outcome and replacement of the first.
    pub coupons: Vec<QuoteCouponView>,
}

/// What the final payment does with one coupon of a presale order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QuoteCouponView {
    #[schema(value_type = String)]
    pub coupon_id: CouponId,
    /// `applied`, `no_discount_expired`, `swapped` or `compensated`.
    pub outcome: String,
    #[schema(value_type = i64)]
    pub discount_cents: Cents,
    #[schema(value_type = i64)]
    pub compensation_cents: Cents,
    #[schema(value_type = Option<String>)]
    pub replacement_coupon_id: Option<CouponId>,
}
