//! What an order's cart is made of, as the API sends it ([`CartInput`],
//! [`OrderInput`]: every field optional, so a missing one is a 400 that
//! names it) and once checked ([`CartSpec`], [`OrderSpec`]). The edge
//! parses; the service takes only the checked forms.

use crate::domain::FieldError;
use crate::domain::category::MAX_CATEGORY_LEN;
use crate::domain::ids::{CampaignId, CouponId, OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::order::OrderKind;
use crate::domain::picker::OrderTerms;

/// The API's order fields before checking (as typed: [`OrderSpec::parse`]
/// checks them in a fixed order, so the field a bad request is told about
/// does not depend on the caller).
#[derive(Debug, Clone, Default)]
pub struct OrderInput {
    pub order_no: Option<String>,
    pub user_id: Option<String>,
    pub kind: Option<String>,
    pub category: Option<String>,
    pub total_cents: Option<i64>,
    pub coupon_id: Option<String>,
    pub campaign_id: Option<String>,
    pub deposit_cents: Option<i64>,
}

/// The fields of an order that decide a coupon's discount (the checkout
/// picker takes just these), before checking.
#[derive(Debug, Clone, Default)]
pub struct CartInput {
    pub kind: Option<String>,
    pub category: Option<String>,
    pub total_cents: Option<i64>,
    pub campaign_id: Option<String>,
    pub deposit_cents: Option<i64>,
}

/// A checked cart: an order's kind, category and money, and its campaign.
#[derive(Debug, Clone)]
pub struct CartSpec {
    pub kind: OrderKind,
    pub category: String,
    pub total: Cents,
    pub campaign_id: Option<CampaignId>,
    /// Zero for a normal order.
    pub deposit: Cents,
}

impl CartSpec {
    /// What decides a coupon's discount on this cart.
    pub fn terms(&self) -> OrderTerms<'_> {
        OrderTerms {
            kind: self.kind,
            category: &self.category,
            total: self.total,
            deposit: self.deposit,
        }
    }

    /// Checks a cart's fields, naming the field at fault; the same checks
    /// for `POST /orders` and the picker.
    pub fn parse(i: CartInput) -> Result<CartSpec, FieldError> {
        let kind = match i.kind.as_deref() {
            None => return Err(FieldError::new("kind", "is required")),
            Some(k) => OrderKind::parse(k)
                .ok_or_else(|| FieldError::new("kind", "must be \"normal\" or \"presale\""))?,
        };
        let category = i.category.unwrap_or_default().trim().to_string();
        if category.chars().count() > MAX_CATEGORY_LEN {
            return Err(FieldError::new(
                "category",
                format!("must be at most {MAX_CATEGORY_LEN} characters"),
            ));
        }
        let total = Cents::new(
            i.total_cents
                .ok_or_else(|| FieldError::new("total_cents", "is required"))?,
        )
        .map_err(|e| FieldError::new("total_cents", e.to_string()))?;
        if total.is_zero() {
            return Err(FieldError::new("total_cents", "must be greater than 0"));
        }
        let (campaign_id, deposit) = match kind {
            OrderKind::Normal => {
                if i.campaign_id.is_some() {
                    return Err(FieldError::new(
                        "campaign_id",
                        "only presale orders have a campaign",
                    ));
                }
                if i.deposit_cents.is_some_and(|d| d != 0) {
                    return Err(FieldError::new(
                        "deposit_cents",
                        "only presale orders have a deposit",
                    ));
                }
                (None, Cents::ZERO)
            }
            OrderKind::Presale => {
                let campaign = i.campaign_id.filter(|c| !c.is_empty()).ok_or_else(|| {
                    FieldError::new("campaign_id", "is required for presale orders")
                })?;
                let d = i.deposit_cents.ok_or_else(|| {
                    FieldError::new("deposit_cents", "is required for presale orders")
                })?;
                let deposit =
                    Cents::new(d).map_err(|e| FieldError::new("deposit_cents", e.to_string()))?;
                if deposit.is_zero() || deposit > total {
                    return Err(FieldError::new(
                        "deposit_cents",
                        "must be greater than 0 and at most total_cents",
                    ));
                }
                (Some(CampaignId::from_wire(campaign)), deposit)
            }
        };
        Ok(CartSpec {
            kind,
            category,
            total,
            campaign_id,
            deposit,
        })
    }
}

/// A checked new order.
#[derive(Debug, Clone)]
pub struct OrderSpec {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub cart: CartSpec,
    pub coupon_id: Option<CouponId>,
}

impl OrderSpec {
    /// Checks a new order's fields in a fixed order (order number, user,
    /// the cart, the coupon), naming the first at fault.
    pub fn parse(i: OrderInput) -> Result<OrderSpec, FieldError> {
        let order_no = OrderNo::parse(i.order_no.as_deref().unwrap_or(""))?;
        let user_id = UserId::parse(i.user_id.as_deref().unwrap_or(""))?;
        let cart = CartSpec::parse(CartInput {
            kind: i.kind,
            category: i.category,
            total_cents: i.total_cents,
            campaign_id: i.campaign_id,
            deposit_cents: i.deposit_cents,
        })?;
        let coupon_id = match i.coupon_id {
            Some(id) if id.is_empty() || id.chars().count() > 64 => {
                return Err(FieldError::new("coupon_id", "must be 1-64 characters"));
            }
            other => other.map(CouponId::from_wire),
        };
        Ok(OrderSpec {
            order_no,
            user_id,
            cart,
            coupon_id,
        })
    }
}
