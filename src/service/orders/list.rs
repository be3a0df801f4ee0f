//! The order list for support (`GET /orders`, `/console/orders` and its
//! CSV): orders by status, kind, campaign, coupon lock status, creation
//! time and order-number prefix, newest first, in keyset pages. Each page
//! is one index range read (see `store::orders::page` and
//! `migrations/*/0021_order_list.sql`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::FieldError;
use crate::domain::ids::CampaignId;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus};
use crate::domain::time::{RangeEdge, parse_range_bound, to_ms};
use crate::service::orders::{load_carts, order_view_of};
use crate::service::support::csv_field;
use crate::service::views::OrderView;
use crate::service::{Service, ServiceError};
use crate::store::orders::{self, OrderPageQuery};

/// Largest page of [`Service::list_orders`].
pub const MAX_ORDER_PAGE: i64 = 200;
/// The page size when none is asked for (the console's page).
pub const DEFAULT_ORDER_PAGE: i64 = 50;
/// Largest CSV export of the order list.
pub const MAX_ORDER_EXPORT_ROWS: usize = 100_000;
/// Rows per read of a CSV export.
const EXPORT_BATCH: i64 = MAX_ORDER_PAGE;

/// The filters as a caller types them (query string of `GET /orders` and of
/// the console's list); [`OrderFilter::parse`] turns them into values.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OrderListParams {
    /// `created`, `deposit_paid`, `paid`, `final_paid`, `closed`,
    /// `refunded`, ...
    pub status: Option<String>,
    /// `normal` or `presale`.
    pub kind: Option<String>,
    /// Orders of this presale campaign.
    pub campaign_id: Option<String>,
    /// `none`, `locked`, `used` or `released`.
    pub coupon_lock_status: Option<String>,
    /// Created at or after: an RFC 3339 instant, or a business day
    /// `YYYY-MM-DD` (its first instant in `COUPONKEEPER_BUSINESS_TZ`).
    pub created_from: Option<String>,
    /// Created before: an RFC 3339 instant, or a business day `YYYY-MM-DD`
    /// (that whole day included).
    pub created_to: Option<String>,
    /// Order numbers that start with this text (exact, case included).
    pub order_no_prefix: Option<String>,
    /// 1-200, default 50.
    pub limit: Option<i64>,
    /// The previous page's `next`.
    pub cursor: Option<String>,
}

/// Parsed filters of the order list; `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrderFilter {
    pub status: Option<OrderStatus>,
    pub kind: Option<OrderKind>,
    pub campaign_id: Option<CampaignId>,
    pub coupon_lock_status: Option<CouponLockStatus>,
    pub created_from: Option<DateTime<Utc>>,
    pub created_to: Option<DateTime<Utc>>,
    pub order_no_prefix: Option<String>,
}

/// Longest order-number prefix (an order number is at most 128).
const MAX_PREFIX_CHARS: usize = 128;

fn nonempty(raw: &Option<String>) -> Option<&str> {
    raw.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl OrderFilter {
    /// Reads the typed filters; each bad one is a [`FieldError`] naming
    /// its field. Days are business days of `tz`.
    pub fn parse(
        p: &OrderListParams,
        tz: crate::domain::reminder::BusinessTz,
    ) -> Result<Self, FieldError> {
        let status = match nonempty(&p.status) {
            None => None,
            Some(raw) => Some(OrderStatus::parse(raw).ok_or_else(|| {
                let all: Vec<&str> = OrderStatus::ALL.iter().map(|s| s.as_str()).collect();
                FieldError::new("status", format!("must be one of {}", all.join(", ")))
            })?),
        };
        let kind = match nonempty(&p.kind) {
            None => None,
            Some(raw) => Some(
                OrderKind::parse(raw)
                    .ok_or_else(|| FieldError::new("kind", "must be normal or presale"))?,
            ),
        };
        let coupon_lock_status = match nonempty(&p.coupon_lock_status) {
            None => None,
            Some(raw) => Some(CouponLockStatus::parse(raw).ok_or_else(|| {
                FieldError::new(
                    "coupon_lock_status",
                    "must be one of none, locked, used, released",
                )
            })?),
        };
        let campaign_id = match nonempty(&p.campaign_id) {
            None => None,
            Some(raw) if raw.chars().count() > 128 || raw.chars().any(char::is_control) => {
                return Err(FieldError::new(
                    "campaign_id",
                    "must be at most 128 characters",
                ));
            }
            Some(raw) => Some(CampaignId::from_wire(raw)),
        };
        let bound = |field: &'static str, raw: &Option<String>, edge: RangeEdge| {
            nonempty(raw)
                .map(|r| parse_range_bound(r, tz, edge).map_err(|m| FieldError::new(field, m)))
                .transpose()
        };
        let created_from = bound("created_from", &p.created_from, RangeEdge::From)?;
        let created_to = bound("created_to", &p.created_to, RangeEdge::To)?;
        if let (Some(f), Some(t)) = (created_from, created_to)
            && f >= t
        {
            return Err(FieldError::new("created_to", "must be after created_from"));
        }
        let order_no_prefix = match p.order_no_prefix.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw)
                if raw.chars().count() > MAX_PREFIX_CHARS || raw.chars().any(char::is_control) =>
            {
                return Err(FieldError::new(
                    "order_no_prefix",
                    format!("must be at most {MAX_PREFIX_CHARS} characters"),
                ));
            }
            Some(raw) => Some(raw.to_string()),
        };
        Ok(OrderFilter {
            status,
            kind,
            campaign_id,
            coupon_lock_status,
            created_from,
            created_to,
            order_no_prefix,
        })
    }

    /// The store's query for one page of these filters.
    pub fn query<'a>(&'a self, before: Option<(i64, &'a str)>, limit: i64) -> OrderPageQuery<'a> {
        OrderPageQuery {
            status: self.status,
            kind: self.kind,
            campaign_id: self.campaign_id.as_ref(),
            coupon_lock_status: self.coupon_lock_status,
            created_from: self.created_from.map(to_ms),
            created_to: self.created_to.map(to_ms),
            order_no_prefix: self.order_no_prefix.as_deref(),
            before,
            limit,
        }
    }
}

/// One page of `GET /orders`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OrderPage {
    /// Newest first.
    pub orders: Vec<OrderView>,
    /// The cursor of the next page; null on the last.
    pub next: Option<String>,
}

/// `created_at.order_no` of the last row, the next page's cursor.
fn encode_cursor(created_at_ms: i64, order_no: &str) -> String {
    format!("{created_at_ms}.{order_no}")
}

fn decode_cursor(raw: &str) -> Result<(i64, String), FieldError> {
    let bad = || FieldError::new("cursor", "is not a cursor this list gave");
    let (at, no) = raw.trim().split_once('.').ok_or_else(bad)?;
    let at: i64 = at.parse().map_err(|_| bad())?;
    if no.is_empty() || no.len() > 128 {
        return Err(bad());
    }
    Ok((at, no.to_string()))
}

impl Service {
    /// The typed filters read with the business time zone.
    pub fn order_filter(&self, p: &OrderListParams) -> Result<OrderFilter, ServiceError> {
        Ok(OrderFilter::parse(p, self.settings().reminders.tz)?)
    }

    /// One page of orders matching `filter`, newest first, after the
    /// previous page's cursor. `limit` 1-200. Each order as `GET
    /// /orders/{order_no}` shows it, without its timeline.
    pub async fn list_orders(
        &self,
        filter: OrderFilter,
        cursor: Option<String>,
        limit: i64,
    ) -> Result<OrderPage, ServiceError> {
        if !(1..=MAX_ORDER_PAGE).contains(&limit) {
            return Err(FieldError::new("limit", format!("must be 1 to {MAX_ORDER_PAGE}")).into());
        }
        let before = match cursor.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(decode_cursor(raw)?),
        };
        let now = self.now();
        self.read(move |c| {
            let filter = filter.clone();
            let before = before.clone();
            Box::pin(async move {
                let mut rows = orders::page(
                    c,
                    &filter.query(
                        before.as_ref().map(|(at, no)| (*at, no.as_str())),
                        limit + 1,
                    ),
                )
                .await?;
                let more = rows.len() as i64 > limit;
                rows.truncate(usize::try_from(limit).unwrap_or(0));
                let next = more
                    .then(|| {
                        rows.last()
                            .map(|r| encode_cursor(r.created_at, &r.order_no))
                    })
                    .flatten();
                let carts = load_carts(c, &rows).await?;
                let mut out = Vec::with_capacity(rows.len());
                for (row, cart) in rows.into_iter().zip(carts) {
                    out.push(order_view_of(c, row, cart, now, false).await?);
                }
                Ok(OrderPage { orders: out, next })
            })
        })
        .await
    }

    /// The orders matching `filter` as CSV (RFC 4180, formulas
    /// neutralised, header first), newest first, at most `max_rows` (1 to
    /// 100,000), read in keyset pages. Times are UTC (RFC 3339) and, for
    /// people, in the business time zone with its offset; money in cents.
    pub async fn export_orders_csv(
        &self,
        filter: OrderFilter,
        max_rows: usize,
        lang: crate::i18n::Lang,
    ) -> Result<String, ServiceError> {
        if !(1..=MAX_ORDER_EXPORT_ROWS).contains(&max_rows) {
            return Err(FieldError::new(
                "max_rows",
                format!("must be 1 to {MAX_ORDER_EXPORT_ROWS}"),
            )
            .into());
        }
        let tz = self.settings().reminders.tz;
        let mut out = String::from(ORDER_CSV_HEADER);
        out.push_str("\r\n");
        let mut written = 0usize;
        let mut cursor = None;
        // Bounded: at most max_rows / 1 pages, each at least one row.
        while written < max_rows {
            let want = i64::try_from(max_rows - written)
                .unwrap_or(EXPORT_BATCH)
                .min(EXPORT_BATCH);
            let page = self.list_orders(filter.clone(), cursor, want).await?;
            for o in &page.orders {
                out.push_str(&order_csv_row(o, tz, lang));
                out.push_str("\r\n");
            }
            written += page.orders.len();
            match page.next {
                Some(n) => cursor = Some(n),
                None => break,
            }
        }
        Ok(out)
    }
}

/// The stored values first (codes, cents, UTC), then for a person the
/// local time, the status in words and the money in yuan.
const ORDER_CSV_HEADER: &str = "order_no,user_id,kind,category,status,total_cents,deposit_cents,campaign_id,coupon_id,coupon_discount_cents,coupon_lock_status,compensation_cents,amount_due_cents,final_payment_cents,created_at,created_at_local,status_text,total_yuan,coupon_discount_yuan,amount_due_yuan,refunded_cents,refunded_yuan";

fn order_csv_row(
    o: &OrderView,
    tz: crate::domain::reminder::BusinessTz,
    lang: crate::i18n::Lang,
) -> String {
    let local = crate::domain::time::parse_rfc3339(&o.created_at)
        .map(|t| crate::i18n::zone::local_text_in(tz, t, true))
        .unwrap_or_default();
    let id = |s: Option<&str>| s.map(str::to_string).unwrap_or_default();
    [
        o.order_no.to_string(),
        o.user_id.to_string(),
        o.kind.as_str().to_string(),
        o.category.clone(),
        o.status.as_str().to_string(),
        o.total_cents.get().to_string(),
        o.deposit_cents.get().to_string(),
        id(o.campaign_id.as_deref()),
        id(o.coupon_id.as_deref()),
        o.coupon_discount_cents.get().to_string(),
        o.coupon_lock_status.as_str().to_string(),
        o.compensation_cents.get().to_string(),
        o.amount_due_cents.get().to_string(),
        o.final_payment_cents
            .map(|n| n.get().to_string())
            .unwrap_or_default(),
        o.created_at.clone(),
        local,
        lang.t(o.status.label_key()).to_string(),
        o.total_cents.yuan(),
        o.coupon_discount_cents.yuan(),
        o.amount_due_cents.yuan(),
        o.refunded_cents.get().to_string(),
        o.refunded_cents.yuan(),
    ]
    .iter()
    .map(|f| csv_field(f))
    .collect::<Vec<_>>()
    .join(",")
}

impl Service {
    /// What the console shows instead of the ids on a page of orders: the
    /// campaigns' names and the coupons' codes, by id.
    pub async fn order_page_names(
        &self,
        page: &OrderPage,
    ) -> Result<std::collections::HashMap<String, String>, ServiceError> {
        let ids: Vec<String> = page
            .orders
            .iter()
            .flat_map(|o| {
                [
                    o.campaign_id.as_ref().map(CampaignId::to_string),
                    o.coupon_id.as_ref().map(|id| id.to_string()),
                ]
            })
            .flatten()
            .collect();
        self.read(move |c| {
            let ids = ids.clone();
            Box::pin(async move {
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                Ok(crate::store::names::people_names(c, &refs).await?)
            })
        })
        .await
    }

    /// The campaigns a filter offers, `(id, name)`, latest final payment
    /// first, at most [`crate::store::names::MAX_CAMPAIGN_CHOICES`].
    pub async fn campaign_choices(&self) -> Result<Vec<(String, String)>, ServiceError> {
        self.read(|c| Box::pin(async move { Ok(crate::store::names::campaign_choices(c).await?) }))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc() -> crate::domain::reminder::BusinessTz {
        crate::domain::reminder::parse_business_tz("+08:00").expect("zone")
    }

    #[test]
    fn each_bad_filter_names_its_field() {
        let cases: [(OrderListParams, &str); 6] = [
            (
                OrderListParams {
                    status: Some("lost".into()),
                    ..Default::default()
                },
                "status",
            ),
            (
                OrderListParams {
                    kind: Some("gift".into()),
                    ..Default::default()
                },
                "kind",
            ),
            (
                OrderListParams {
                    coupon_lock_status: Some("held".into()),
                    ..Default::default()
                },
                "coupon_lock_status",
            ),
            (
                OrderListParams {
                    created_from: Some("monday".into()),
                    ..Default::default()
                },
                "created_from",
            ),
            (
                OrderListParams {
                    created_from: Some("2026-12-02".into()),
                    created_to: Some("2026-12-01".into()),
                    ..Default::default()
                },
                "created_to",
            ),
            (
                OrderListParams {
                    order_no_prefix: Some("x".repeat(129)),
                    ..Default::default()
                },
                "order_no_prefix",
            ),
        ];
        for (params, field) in cases {
            let err = OrderFilter::parse(&params, utc()).expect_err(field);
            assert_eq!(err.field, field);
        }
    }

    #[test]
    fn a_one_day_range_covers_that_business_day() {
        let f = OrderFilter::parse(
            &OrderListParams {
                created_from: Some("2026-12-01".into()),
                created_to: Some("2026-12-01".into()),
                ..Default::default()
            },
            utc(),
        )
        .expect("filter");
        let span = f.created_to.zip(f.created_from).map(|(t, f)| t - f);
        assert_eq!(span, Some(chrono::Duration::days(1)));
    }

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        assert_eq!(
            decode_cursor(&encode_cursor(17, "P.1")).expect("cursor"),
            (17, "P.1".to_string())
        );
        assert!(decode_cursor("nope").is_err());
        assert!(decode_cursor("12.").is_err());
    }
}
