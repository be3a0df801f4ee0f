//! The console's lists: one page of coupons by filter, in `(ends_at, id)`
//! keyset order with an opaque cursor, and a user's page (their coupons
//! and orders). Every read is a bounded set of index lookups (see
//! `store::search`).

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::FieldError;
use crate::domain::coupon::CouponStatus;
use crate::domain::filters::{CouponListQuery, MAX_COUPON_PAGE, UserFilter};
use crate::domain::ids::UserId;
use crate::domain::time::to_ms;
use crate::service::views::{CouponView, OrderView};
use crate::service::{Service, ServiceError};
use crate::store::archive;
use crate::store::coupons::{self, CouponRow};
use crate::store::search::{self, CouponPageQuery};

/// Coupons on the console's user page (newest first, live then archived).
pub const OVERVIEW_COUPONS: i64 = 500;
/// Orders on the console's user page (newest first).
pub const OVERVIEW_ORDERS: i64 = 200;
/// Largest page of [`Service::list_coupons`].
pub const MAX_PAGE: i64 = MAX_COUPON_PAGE;

/// One page of coupons in `(ends_at, id)` order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CouponPage {
    /// At most the requested limit, in `(ends_at, id)` order.
    pub coupons: Vec<CouponView>,
    /// Opaque cursor of the next page; `None` on the last page.
    pub next: Option<String>,
}

/// The console's user page.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserOverview {
    /// The user shown.
    #[schema(value_type = String)]
    pub user_id: UserId,
    /// At most [`OVERVIEW_COUPONS`], newest first (archived ones last).
    pub coupons: Vec<CouponView>,
    /// At most [`OVERVIEW_ORDERS`], newest first.
    pub orders: Vec<OrderView>,
}

/// The opaque keyset cursor of a coupon list: `<ends_at ms>.<id>`.
fn cursor_of(r: &CouponRow) -> String {
    format!("{}.{}", r.ends_at, r.id)
}

fn parse_cursor(raw: &str) -> Result<(i64, String), FieldError> {
    let bad = || FieldError::new("after", "is not a cursor returned by this list");
    let (ends, id) = raw.split_once('.').ok_or_else(bad)?;
    let ends: i64 = ends.parse().map_err(|_| bad())?;
    if id.is_empty() || id.len() > 128 {
        return Err(bad());
    }
    Ok((ends, id.to_string()))
}

impl Service {
    /// One page of `query.limit` coupons matching `query.filter` (effective
    /// status; the page size and filter checked at the edge:
    /// [`CouponListQuery::parse`]), ordered by `(ends_at, id)`, after the
    /// opaque cursor `after`. Covers the live table (archived coupons are
    /// terminal and old; search and the user page find them).
    pub async fn list_coupons(
        &self,
        query: CouponListQuery,
        after: Option<String>,
    ) -> Result<CouponPage, ServiceError> {
        let CouponListQuery { limit, filter } = query;
        let template_id = filter.template_id;
        let after = match after.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(parse_cursor(raw)?),
        };
        // A user filter that no customer's id can be matches no coupon (a
        // bad cursor is still named first).
        let user_id = match filter.user {
            UserFilter::Any => None,
            UserFilter::Only(user) => Some(user),
            UserFilter::Nobody => {
                return Ok(CouponPage {
                    coupons: Vec::new(),
                    next: None,
                });
            }
        };
        let now = self.now();
        let now_ms = to_ms(now);
        let before = filter.expiring_before.map(to_ms);
        // Stored statuses to read, each with its bounds on ends_at.
        let min = |a: Option<i64>, b: Option<i64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let branches: Vec<(CouponStatus, Option<i64>, Option<i64>)> = match filter.status {
            None => CouponStatus::ALL
                .iter()
                .map(|s| (*s, None, before))
                .collect(),
            Some(CouponStatus::Available) => vec![(CouponStatus::Available, Some(now_ms), before)],
            Some(CouponStatus::Expired) => vec![
                (CouponStatus::Expired, None, before),
                (
                    CouponStatus::Available,
                    None,
                    min(Some(now_ms.saturating_add(1)), before),
                ),
            ],
            Some(s) => vec![(s, None, before)],
        };
        let rows = self
            .read(move |c| {
                let branches = branches.clone();
                let template_id = template_id.clone();
                let user_id = user_id.clone();
                let after = after.clone();
                Box::pin(async move {
                    let mut rows: Vec<CouponRow> = Vec::new();
                    for (status, ends_after, ends_before) in branches {
                        rows.extend(
                            search::coupon_page(
                                c,
                                &CouponPageQuery {
                                    status,
                                    template_id: template_id.as_ref(),
                                    user_id: user_id.as_ref(),
                                    ends_after,
                                    ends_before,
                                    after: after.as_ref().map(|(e, id)| (*e, id.as_str())),
                                    limit: limit + 1,
                                },
                            )
                            .await?,
                        );
                    }
                    Ok(rows)
                })
            })
            .await?;
        let mut rows = rows;
        rows.sort_by(|a, b| (a.ends_at, &a.id).cmp(&(b.ends_at, &b.id)));
        let limit = usize::try_from(limit).unwrap_or(1);
        let next = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(cursor_of)
        } else {
            None
        };
        Ok(CouponPage {
            coupons: rows
                .into_iter()
                .map(|r| CouponView::from_row(r, now))
                .collect(),
            next,
        })
    }

    /// The console's user page: the user's coupons (newest first, live then
    /// archived, at most 500) and orders (newest first, at most 200).
    pub async fn user_overview(&self, user_id: &UserId) -> Result<UserOverview, ServiceError> {
        let user = user_id.clone();
        let now = self.now();
        self.read(move |c| {
            let user = user.clone();
            Box::pin(async move {
                let mut coupon_rows =
                    coupons::list_for_user(c, &user, None, to_ms(now), OVERVIEW_COUPONS).await?;
                let left = OVERVIEW_COUPONS - coupon_rows.len() as i64;
                if left > 0 {
                    coupon_rows.extend(archive::list_for_user(c, &user, None, left).await?);
                }
                let rows = search::orders_for_user(c, &user, OVERVIEW_ORDERS).await?;
                let carts = crate::service::orders::load_carts(c, &rows).await?;
                let mut orders = Vec::with_capacity(rows.len());
                for (o, cart) in rows.into_iter().zip(carts) {
                    orders
                        .push(crate::service::orders::order_view_of(c, o, cart, now, false).await?);
                }
                Ok(UserOverview {
                    user_id: user,
                    coupons: coupon_rows
                        .into_iter()
                        .map(|r| CouponView::from_row(r, now))
                        .collect(),
                    orders,
                })
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn cursors_round_trip_and_garbage_is_a_field_error() {
        let (e, id) = parse_cursor("1700000000000.cpn_abc").expect("cursor");
        assert_eq!((e, id.as_str()), (1_700_000_000_000, "cpn_abc"));
        for bad in ["", "x.y", "12", "12.", "abc"] {
            assert_eq!(parse_cursor(bad).map_err(|e| e.field), Err("after"));
        }
    }
}
