//! An order's lines and each coupon's share of them, as the stages of an
//! order read and write them: loaded with the order ([`load_cart`]), an
//! order an older release stored without lines read as the one line its
//! single category and total mean ([`OrderCart::derived`]), written before
//! anything changes them ([`ensure_stored`]), and a coupon's split
//! replaced or dropped when its discount changes ([`set_split`],
//! [`drop_split`]). The split itself is always
//! [`crate::domain::allocation::allocate`].

use std::collections::HashMap;

use sqlx::AnyConnection;

use crate::domain::allocation::{Split, allocate};
use crate::domain::discount::CouponTerms;
use crate::domain::facts::CouponUnits;
use crate::domain::ids::{CouponId, LineId};
use crate::domain::line::Line;
use crate::domain::money::Cents;
use crate::domain::order::OrderStatus;
use crate::domain::refund::holding_lines;
use crate::service::ServiceError;
use crate::store::order_lines::{self, LineRow, ShareRow};
use crate::store::orders::OrderRow;

/// An order's lines and shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OrderCart {
    pub lines: Vec<LineRow>,
    pub shares: Vec<ShareRow>,
    /// False: derived from the order row, not yet stored.
    pub stored: bool,
}

impl OrderCart {
    /// The lines of an order stored before lines existed: line `1`, one
    /// unit at the total, refunded when the paid order was; its coupon's
    /// discount (or the compensation that replaced it) is the line's share.
    pub fn derived(o: &OrderRow) -> OrderCart {
        let refunded = o.status == OrderStatus::Refunded && o.paid_at.is_some();
        let taken = o.coupon_discount_cents.saturating_add(o.compensation_cents);
        let paid = o.total_cents.saturating_sub(taken);
        OrderCart {
            lines: vec![LineRow {
                line_no: 0,
                line_id: LineId::from_stored("1".to_string()),
                sku: None,
                category: o.category.clone(),
                shop_id: None,
                quantity: 1,
                unit_price_cents: o.total_cents,
                refunded_quantity: i64::from(refunded),
                refunded_cents: if refunded { paid } else { Cents::ZERO },
            }],
            shares: match &o.coupon_id {
                Some(id) if !taken.is_zero() => vec![ShareRow {
                    coupon_id: id.clone(),
                    line_no: 0,
                    cents: taken.min(o.total_cents),
                }],
                _ => Vec::new(),
            },
            stored: false,
        }
    }

    /// The cart of a new order whose `lines` were just stored, nothing
    /// refunded, no share yet.
    pub fn stored_new(lines: &[Line]) -> OrderCart {
        OrderCart {
            lines: lines
                .iter()
                .enumerate()
                .map(|(i, l)| LineRow {
                    line_no: i64::try_from(i).unwrap_or(i64::MAX),
                    line_id: l.line_id.clone(),
                    sku: l.sku.clone(),
                    category: l.category.clone(),
                    shop_id: l.shop_id.clone(),
                    quantity: l.quantity,
                    unit_price_cents: l.unit_price,
                    refunded_quantity: 0,
                    refunded_cents: Cents::ZERO,
                })
                .collect(),
            shares: Vec::new(),
            stored: true,
        }
    }

    /// The lines as the rules read them.
    pub fn lines(&self) -> Vec<Line> {
        self.lines.iter().map(LineRow::line).collect()
    }

    /// The index of the line numbered `line_no`.
    fn index_of(&self, line_no: i64) -> Option<usize> {
        self.lines.iter().position(|l| l.line_no == line_no)
    }

    /// `coupon_id`'s share of each line it covers, as `(line index,
    /// share)`.
    pub fn split_of(&self, coupon_id: &CouponId) -> Vec<(usize, Cents)> {
        self.shares
            .iter()
            .filter(|s| s.coupon_id == *coupon_id)
            .filter_map(|s| self.index_of(s.line_no).map(|i| (i, s.cents)))
            .collect()
    }

    /// The units of the lines that hold `coupon_id` on the order
    /// ([`holding_lines`]), kept and refunded.
    pub fn coupon_units(&self, coupon_id: &CouponId) -> CouponUnits {
        let split = self.split_of(coupon_id);
        let (mut kept, mut refunded) = (0, 0);
        for line in holding_lines(&split).filter_map(|i| self.lines.get(i)) {
            kept += (line.quantity - line.refunded_quantity).max(0);
            refunded += line.refunded_quantity;
        }
        CouponUnits { kept, refunded }
    }

    /// Every coupon's share of line `i`, in coupon order.
    pub fn shares_of_line(&self, i: usize) -> Vec<&ShareRow> {
        let Some(line) = self.lines.get(i) else {
            return Vec::new();
        };
        self.shares
            .iter()
            .filter(|s| s.line_no == line.line_no)
            .collect()
    }

    /// Every coupon's share of line `i`, summed.
    pub fn line_discount(&self, i: usize) -> Cents {
        self.shares_of_line(i)
            .iter()
            .fold(Cents::ZERO, |sum, s| sum.saturating_add(s.cents))
    }

    /// Line `i`'s amount less its discount: what the customer pays for it.
    pub fn payable(&self, i: usize) -> Cents {
        self.lines
            .get(i)
            .map(|l| l.line().amount().saturating_sub(self.line_discount(i)))
            .unwrap_or(Cents::ZERO)
    }
}

/// The order's lines and shares, derived from the order row when none are
/// stored.
pub(crate) async fn load_cart(
    c: &mut AnyConnection,
    o: &OrderRow,
) -> Result<OrderCart, ServiceError> {
    let lines = order_lines::of_order(c, &o.order_no).await?;
    if lines.is_empty() {
        return Ok(OrderCart::derived(o));
    }
    let shares = order_lines::shares_of(c, &o.order_no).await?;
    Ok(OrderCart {
        lines,
        shares,
        stored: true,
    })
}

/// The carts of several orders (a page of a list) in two statements,
/// each in the order of `orders`.
pub(crate) async fn load_carts(
    c: &mut AnyConnection,
    orders: &[OrderRow],
) -> Result<Vec<OrderCart>, ServiceError> {
    let nos: Vec<_> = orders.iter().map(|o| o.order_no.clone()).collect();
    let mut lines: HashMap<_, Vec<LineRow>> = HashMap::new();
    for (no, line) in order_lines::of_orders(c, &nos).await? {
        lines.entry(no).or_default().push(line);
    }
    let mut shares: HashMap<_, Vec<ShareRow>> = HashMap::new();
    for (no, share) in order_lines::shares_of_orders(c, &nos).await? {
        shares.entry(no).or_default().push(share);
    }
    Ok(orders
        .iter()
        .map(|o| match lines.remove(&o.order_no) {
            Some(l) => OrderCart {
                lines: l,
                shares: shares.remove(&o.order_no).unwrap_or_default(),
                stored: true,
            },
            None => OrderCart::derived(o),
        })
        .collect())
}

/// Writes a derived cart's rows, so that a change can update them.
pub(crate) async fn ensure_stored(
    c: &mut AnyConnection,
    o: &OrderRow,
    cart: &mut OrderCart,
) -> Result<(), ServiceError> {
    if cart.stored {
        return Ok(());
    }
    let refunded: Vec<(i64, Cents)> = cart
        .lines
        .iter()
        .map(|l| (l.refunded_quantity, l.refunded_cents))
        .collect();
    order_lines::insert(c, &o.order_no, &cart.lines(), &refunded).await?;
    let by_coupon: Vec<CouponId> = {
        let mut ids: Vec<CouponId> = cart.shares.iter().map(|s| s.coupon_id.clone()).collect();
        ids.sort();
        ids.dedup();
        ids
    };
    for id in by_coupon {
        let split: Vec<Option<Cents>> = cart
            .lines
            .iter()
            .map(|l| {
                cart.shares
                    .iter()
                    .find(|s| s.coupon_id == id && s.line_no == l.line_no)
                    .map(|s| s.cents)
            })
            .collect();
        order_lines::replace_shares(c, &o.order_no, &id, &split).await?;
    }
    cart.stored = true;
    Ok(())
}

/// Splits `discount` of the coupon `coupon_id` (of `terms`) over the
/// order's lines and stores it in place of its previous split.
pub(crate) async fn set_split(
    c: &mut AnyConnection,
    o: &OrderRow,
    cart: &mut OrderCart,
    coupon_id: &CouponId,
    terms: &CouponTerms,
    discount: Cents,
) -> Result<(), ServiceError> {
    let split = allocate(terms, &cart.lines(), discount);
    put_split(c, o, cart, coupon_id, &split).await
}

/// Stores `split` as the coupon `coupon_id`'s split, in place of its
/// previous one.
pub(crate) async fn put_split(
    c: &mut AnyConnection,
    o: &OrderRow,
    cart: &mut OrderCart,
    coupon_id: &CouponId,
    split: &Split,
) -> Result<(), ServiceError> {
    ensure_stored(c, o, cart).await?;
    order_lines::replace_shares(c, &o.order_no, coupon_id, split).await?;
    cart.shares.retain(|s| s.coupon_id != *coupon_id);
    for (line, share) in cart.lines.iter().zip(split) {
        if let Some(cents) = share {
            cart.shares.push(ShareRow {
                coupon_id: coupon_id.clone(),
                line_no: line.line_no,
                cents: *cents,
            });
        }
    }
    Ok(())
}

/// Removes `coupon_id`'s split from the order: its discount is gone.
pub(crate) async fn drop_split(
    c: &mut AnyConnection,
    o: &OrderRow,
    cart: &mut OrderCart,
    coupon_id: &CouponId,
) -> Result<(), ServiceError> {
    ensure_stored(c, o, cart).await?;
    order_lines::delete_shares(c, &o.order_no, coupon_id).await?;
    cart.shares.retain(|s| s.coupon_id != *coupon_id);
    Ok(())
}
