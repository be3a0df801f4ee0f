//! What an order's cart is made of, as the API sends it ([`CartInput`],
//! [`OrderInput`]: every field optional, so a missing one is a 400 that
//! names it) and once checked ([`CartSpec`], [`OrderSpec`]). The edge
//! parses; the service takes only the checked forms.

use crate::domain::FieldError;
use crate::domain::category::MAX_CATEGORY_LEN;
use crate::domain::ids::{CampaignId, CouponId, OrderNo, UserId};
use crate::domain::line::{Line, LineInput, MAX_LINES, line_field};
use crate::domain::money::{Cents, MAX_CENTS};
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
    /// In place of `category` and `total_cents`.
    pub lines: Option<Vec<LineInput>>,
    pub coupon_id: Option<String>,
    /// In place of `coupon_id`: several coupons.
    pub coupon_ids: Option<Vec<String>>,
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
    /// In place of `category` and `total_cents`.
    pub lines: Option<Vec<LineInput>>,
    pub campaign_id: Option<String>,
    pub deposit_cents: Option<i64>,
}

/// A checked cart: an order's kind, lines and money, and its campaign.
#[derive(Debug, Clone)]
pub struct CartSpec {
    pub kind: OrderKind,
    /// 1-500 lines with distinct ids; the single-category form is one
    /// line ([`Line::whole_order`]).
    pub lines: Vec<Line>,
    /// The order's `category`: the first line's.
    pub category: String,
    /// Σ of the lines' amounts, greater than 0 and at most [`MAX_CENTS`].
    pub total: Cents,
    pub campaign_id: Option<CampaignId>,
    /// Zero for a normal order.
    pub deposit: Cents,
    /// Whether the request sent `lines` (not the single-category form).
    pub has_lines: bool,
}

impl CartSpec {
    /// What decides a coupon's discount on this cart.
    pub fn terms(&self) -> OrderTerms<'_> {
        OrderTerms {
            kind: self.kind,
            lines: &self.lines,
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
        let has_lines = i.lines.is_some();
        let lines = match (i.lines, i.category.is_some() || i.total_cents.is_some()) {
            (Some(_), true) => {
                return Err(FieldError::new(
                    "lines",
                    "give either lines or category and total_cents, not both",
                ));
            }
            (Some(lines), false) => parse_lines(lines)?,
            (None, _) => vec![single_line(i.category, i.total_cents)?],
        };
        let total = lines
            .iter()
            .fold(Cents::ZERO, |sum, l| sum.saturating_add(l.amount()));
        let category = lines
            .first()
            .map(|l| l.category.clone())
            .unwrap_or_default();
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
            lines,
            category,
            total,
            campaign_id,
            deposit,
            has_lines,
        })
    }
}

/// The single-category form (`category` + `total_cents`) as its one line.
/// Without `total_cents` the request has neither form: the field named is
/// `lines`, as the contract says.
fn single_line(category: Option<String>, total_cents: Option<i64>) -> Result<Line, FieldError> {
    let category = category.unwrap_or_default().trim().to_string();
    if category.chars().count() > MAX_CATEGORY_LEN {
        return Err(FieldError::new(
            "category",
            format!("must be at most {MAX_CATEGORY_LEN} characters"),
        ));
    }
    let total =
        Cents::new(total_cents.ok_or_else(|| {
            FieldError::new("lines", "is required (or category and total_cents)")
        })?)
        .map_err(|e| FieldError::new("total_cents", e.to_string()))?;
    if total.is_zero() {
        return Err(FieldError::new("total_cents", "must be greater than 0"));
    }
    Ok(Line::whole_order(category, total))
}

/// Checks an order's lines: 1-500, each line, distinct ids, and a total
/// above zero and within [`MAX_CENTS`].
fn parse_lines(raw: Vec<LineInput>) -> Result<Vec<Line>, FieldError> {
    if raw.is_empty() || raw.len() > MAX_LINES {
        return Err(FieldError::new(
            "lines",
            format!("must hold 1-{MAX_LINES} lines"),
        ));
    }
    let mut lines: Vec<Line> = Vec::with_capacity(raw.len());
    let mut seen = std::collections::HashSet::with_capacity(raw.len());
    let mut total: i64 = 0;
    for (i, input) in raw.into_iter().enumerate() {
        let line = Line::parse(i, input)?;
        if !seen.insert(line.line_id.clone()) {
            return Err(FieldError::new(
                line_field(i, "line_id"),
                format!("names a line twice: {}", line.line_id),
            ));
        }
        total = total.saturating_add(line.amount().get());
        if total > MAX_CENTS {
            return Err(FieldError::new(
                "lines",
                format!("the lines' total must be at most {MAX_CENTS} cents"),
            ));
        }
        lines.push(line);
    }
    if total == 0 {
        return Err(FieldError::new(
            "lines",
            "the lines' total must be greater than 0",
        ));
    }
    Ok(lines)
}

/// A checked new order.
#[derive(Debug, Clone)]
pub struct OrderSpec {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub cart: CartSpec,
    /// The coupons asked for, in the order given, each once (empty: none).
    pub coupon_ids: Vec<CouponId>,
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
            lines: i.lines,
            campaign_id: i.campaign_id,
            deposit_cents: i.deposit_cents,
        })?;
        let coupon_ids = parse_coupon_ids(i.coupon_id, i.coupon_ids)?;
        Ok(OrderSpec {
            order_no,
            user_id,
            cart,
            coupon_ids,
        })
    }
}

/// Most coupons one order may name: one platform coupon and one shop
/// coupon for each of many shops.
pub const MAX_ORDER_COUPONS: usize = 50;

/// `coupon_id` or `coupon_ids` (not both): the coupons asked for, each
/// 1-64 characters, each once, at most [`MAX_ORDER_COUPONS`].
fn parse_coupon_ids(
    one: Option<String>,
    several: Option<Vec<String>>,
) -> Result<Vec<CouponId>, FieldError> {
    let raw = match (one, several) {
        (Some(_), Some(_)) => {
            return Err(FieldError::new(
                "coupon_ids",
                "send coupon_id or coupon_ids, not both",
            ));
        }
        (Some(id), None) => {
            if id.is_empty() || id.chars().count() > 64 {
                return Err(FieldError::new("coupon_id", "must be 1-64 characters"));
            }
            return Ok(vec![CouponId::from_wire(id)]);
        }
        (None, Some(ids)) => ids,
        (None, None) => return Ok(Vec::new()),
    };
    if raw.len() > MAX_ORDER_COUPONS {
        return Err(FieldError::new(
            "coupon_ids",
            format!("at most {MAX_ORDER_COUPONS} coupons"),
        ));
    }
    let mut ids: Vec<CouponId> = Vec::with_capacity(raw.len());
    for id in raw {
        if id.is_empty() || id.chars().count() > 64 {
            return Err(FieldError::new(
                "coupon_ids",
                "each coupon id must be 1-64 characters",
            ));
        }
        let id = CouponId::from_wire(id);
        if ids.contains(&id) {
            return Err(FieldError::new(
                "coupon_ids",
                format!("lists coupon {id} twice"),
            ));
        }
        ids.push(id);
    }
    Ok(ids)
}
