//! An order line (购物车明细): one SKU of one category, from one shop,
//! in some quantity at a unit price. What the API sends
//! ([`LineInput`], every field optional so a missing one is a 400 naming
//! it) and once checked ([`Line`]). The order's lines as a whole (how many,
//! unique ids, the total) are checked in `cart`.

use std::sync::OnceLock;

use super::FieldError;
use super::category::MAX_CATEGORY_LEN;
use super::ids::{LineId, ShopId, Sku};
use super::money::{Cents, MAX_CENTS};

/// Most lines one order may hold.
pub const MAX_LINES: usize = 500;
/// Most units of one line.
pub const MAX_QUANTITY: i64 = 9_999;

/// One line as the API sends it, before checking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineInput {
    pub line_id: Option<String>,
    pub sku: Option<String>,
    pub category: Option<String>,
    pub shop_id: Option<String>,
    pub quantity: Option<i64>,
    pub unit_price_cents: Option<i64>,
}

/// A checked line: its id is 1-64 characters, its quantity 1-9,999, its
/// unit price at most [`MAX_CENTS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub line_id: LineId,
    pub sku: Option<Sku>,
    pub category: String,
    pub shop_id: Option<ShopId>,
    pub quantity: i64,
    pub unit_price: Cents,
}

impl Line {
    /// The single-category form of an order (`category` + `total_cents`)
    /// as the one line the contract says it means: line `1`, no SKU, no
    /// shop, one unit at the total.
    pub fn whole_order(category: String, total: Cents) -> Line {
        Line {
            line_id: LineId::from_stored("1".to_string()),
            sku: None,
            category,
            shop_id: None,
            quantity: 1,
            unit_price: total,
        }
    }

    /// `quantity × unit_price`. A checked cart keeps every line's amount
    /// within [`MAX_CENTS`]; a stored row out of range reads clamped.
    pub fn amount(&self) -> Cents {
        Cents::from_stored(self.quantity.saturating_mul(self.unit_price.get()))
    }

    /// Checks line `i` (0-based) of a request, naming the field at fault as
    /// `lines[i].<name>`.
    pub fn parse(i: usize, input: LineInput) -> Result<Line, FieldError> {
        let f = |name: &str| line_field(i, name);
        let line_id = LineId::parse(input.line_id.as_deref().unwrap_or(""))
            .map_err(|e| FieldError::new(f("line_id"), e.message))?;
        let sku = match input.sku {
            None => None,
            Some(s) => Some(Sku::parse(&s).map_err(|e| FieldError::new(f("sku"), e.message))?),
        };
        let category = input.category.unwrap_or_default().trim().to_string();
        // As in the single-category form, no category is allowed: only
        // coupons for every category cover such a line.
        if category.chars().count() > MAX_CATEGORY_LEN {
            return Err(FieldError::new(
                f("category"),
                format!("must be at most {MAX_CATEGORY_LEN} characters"),
            ));
        }
        let shop_id = match input.shop_id {
            None => None,
            Some(s) => {
                Some(ShopId::parse(&s).map_err(|e| FieldError::new(f("shop_id"), e.message))?)
            }
        };
        let quantity = match input.quantity {
            Some(q) if (1..=MAX_QUANTITY).contains(&q) => q,
            Some(_) => {
                return Err(FieldError::new(
                    f("quantity"),
                    format!("must be between 1 and {MAX_QUANTITY}"),
                ));
            }
            None => return Err(FieldError::new(f("quantity"), "is required")),
        };
        let unit_price = Cents::new(
            input
                .unit_price_cents
                .ok_or_else(|| FieldError::new(f("unit_price_cents"), "is required"))?,
        )
        .map_err(|e| FieldError::new(f("unit_price_cents"), e.to_string()))?;
        if quantity.saturating_mul(unit_price.get()) > MAX_CENTS {
            return Err(FieldError::new(
                f("unit_price_cents"),
                format!("quantity × unit_price_cents must be at most {MAX_CENTS} cents"),
            ));
        }
        Ok(Line {
            line_id,
            sku,
            category,
            shop_id,
            quantity,
            unit_price,
        })
    }
}

/// The names of a line's fields, in the order [`line_field`] knows them.
const LINE_FIELDS: [&str; 6] = [
    "line_id",
    "sku",
    "category",
    "shop_id",
    "quantity",
    "unit_price_cents",
];

/// The `lines[i].<name>` field name of a refusal, made once for the
/// bounded number of lines an order may hold (a field name is
/// `&'static str`); `lines` for anything else.
pub fn line_field(i: usize, name: &str) -> &'static str {
    static FIELDS: OnceLock<Vec<[&'static str; 6]>> = OnceLock::new();
    let fields = FIELDS.get_or_init(|| {
        (0..MAX_LINES)
            .map(|i| LINE_FIELDS.map(|n| &*Box::leak(format!("lines[{i}].{n}").into_boxed_str())))
            .collect()
    });
    match (fields.get(i), LINE_FIELDS.iter().position(|n| *n == name)) {
        (Some(row), Some(j)) => row[j],
        _ => "lines",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> LineInput {
        LineInput {
            line_id: Some("a".into()),
            sku: Some("SKU-1".into()),
            category: Some("beauty".into()),
            shop_id: Some("shop-a".into()),
            quantity: Some(3),
            unit_price_cents: Some(1999),
        }
    }

    #[test]
    fn a_line_s_amount_is_its_quantity_times_its_unit_price() {
        let line = Line::parse(0, input()).unwrap();
        assert_eq!(line.amount(), Cents::from_stored(5997));
    }

    #[test]
    fn a_bad_line_names_its_index_and_field() {
        let e = Line::parse(
            4,
            LineInput {
                quantity: Some(0),
                ..input()
            },
        )
        .unwrap_err();
        assert_eq!(e.field, "lines[4].quantity");
        let e = Line::parse(
            0,
            LineInput {
                line_id: Some("x".repeat(65)),
                ..input()
            },
        )
        .unwrap_err();
        assert_eq!(e.field, "lines[0].line_id");
        let e = Line::parse(
            1,
            LineInput {
                unit_price_cents: Some(-1),
                ..input()
            },
        )
        .unwrap_err();
        assert_eq!(e.field, "lines[1].unit_price_cents");
        let e = Line::parse(
            2,
            LineInput {
                category: Some("c".repeat(MAX_CATEGORY_LEN + 1)),
                ..input()
            },
        )
        .unwrap_err();
        assert_eq!(e.field, "lines[2].category");
        let e = Line::parse(
            3,
            LineInput {
                sku: Some("has space".into()),
                ..input()
            },
        )
        .unwrap_err();
        assert_eq!(e.field, "lines[3].sku");
    }

    #[test]
    fn a_line_whose_amount_passes_the_money_limit_is_refused() {
        let e = Line::parse(
            0,
            LineInput {
                quantity: Some(MAX_QUANTITY),
                unit_price_cents: Some(MAX_CENTS / 1000),
                ..input()
            },
        )
        .unwrap_err();
        assert_eq!(e.field, "lines[0].unit_price_cents");
    }

    #[test]
    fn a_field_past_the_line_limit_is_named_lines() {
        assert_eq!(line_field(MAX_LINES, "quantity"), "lines");
        assert_eq!(line_field(0, "nonsense"), "lines");
        assert_eq!(line_field(499, "sku"), "lines[499].sku");
    }
}
