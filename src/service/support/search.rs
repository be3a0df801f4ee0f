//! The console's search box: one query matched against coupon ids,
//! coupon codes (any case, dashes optional), order numbers and user ids,
//! in the live and archive tables; when nothing matches exactly, a query
//! of 4 or more characters lists the coupon codes that start with it and
//! the order numbers and user ids that hold it anywhere (any case, spaces
//! and dashes ignored in codes and order numbers), newest first.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use crate::domain::FieldError;
use crate::domain::coupon::effective_status;
use crate::domain::ids::{CouponId, OrderNo, UserId, search_key};
use crate::domain::time::from_ms;
use crate::service::{Service, ServiceError};
use crate::store::archive;
use crate::store::coupons::CouponRow;
use crate::store::orders;
use crate::store::search;

/// Longest search query.
const MAX_QUERY_LEN: usize = 128;

/// Shortest search key (see [`search_key`]) read as a prefix; shorter
/// queries match exactly or not at all, so a letter or two cannot list the
/// world.
const MIN_PREFIX_CHARS: usize = 4;

/// Most prefix matches listed.
const MAX_LISTED: usize = 50;

/// Most prefix matches read from each table (in key order, by its index)
/// to sort newest first: the bound on a prefix search's work. Past it the
/// list says "more than this many" and holds the newest of those read.
const PREFIX_SCAN: usize = 1000;

/// One thing a search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SearchHit {
    /// `coupon`, `order` or `user`.
    pub kind: String,
    /// The coupon id, order number or user id.
    pub key: String,
    /// What to show in a list: the coupon code, order number or user id.
    pub title: String,
    /// The catalog key of the hit's status (coupon or order), if it has one.
    pub status_key: Option<&'static str>,
    /// The user the hit belongs to.
    #[schema(value_type = String)]
    pub user_id: UserId,
}

/// Several hits, to list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SearchList {
    /// Exact matches in the order coupon, order, user; prefix matches
    /// newest first, at most 50.
    pub hits: Vec<SearchHit>,
    /// Set when more matched than are listed.
    pub more: Option<MoreMatches>,
}

/// How many prefix matches there were, when more than are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "count", rename_all = "snake_case")]
pub enum MoreMatches {
    /// This many matched; the newest are listed.
    Total(usize),
    /// More than this many (1000) matched in one table, which is where the
    /// search stopped reading it (in code or order-number order); the
    /// listed ones are the newest of those read.
    Over(usize),
}

/// What a console search found: exactly one hit opens its page, several
/// are listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", content = "value", rename_all = "snake_case")]
pub enum SearchOutcome {
    /// Exactly one coupon (its id): open the coupon page.
    Coupon(CouponId),
    /// Exactly one order (its number): open the order page.
    Order(OrderNo),
    /// Exactly one user (their id): open the user page.
    User(UserId),
    /// Several hits: list them.
    Many(SearchList),
    /// Nothing matched.
    Nothing,
}

/// What a hit opens: the coupon, order or user it is, typed.
#[derive(Debug, Clone)]
enum Target {
    Coupon(CouponId),
    Order(OrderNo),
    User(UserId),
}

/// What a partial match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FoundKind {
    Coupon,
    Order,
    User,
}

/// A partial match before it is looked up: what it is, its key (coupon
/// id, order number or user id) and when it was created (a user: their
/// newest order).
#[derive(Debug, Clone)]
struct Found {
    created_at: i64,
    kind: FoundKind,
    key: String,
}

/// The prefix matches read from each table (each in key order, at most
/// [`PREFIX_SCAN`] + 1 rows), newest first and at most [`MAX_LISTED`], with
/// how many more there were.
fn newest(tables: Vec<Vec<Found>>) -> (Vec<Found>, Option<MoreMatches>) {
    let mut over = false;
    let mut seen = HashSet::new();
    let mut all: Vec<Found> = Vec::new();
    for mut rows in tables {
        if rows.len() > PREFIX_SCAN {
            over = true;
            rows.truncate(PREFIX_SCAN);
        }
        for f in rows {
            // A coupon met in the live table and the archive (being moved
            // between them) is one match.
            if seen.insert((f.kind, f.key.clone())) {
                all.push(f);
            }
        }
    }
    let matched = all.len();
    all.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then_with(|| b.key.cmp(&a.key))
    });
    all.truncate(MAX_LISTED);
    let more = if over {
        Some(MoreMatches::Over(PREFIX_SCAN))
    } else if matched > all.len() {
        Some(MoreMatches::Total(matched))
    } else {
        None
    };
    (all, more)
}

/// The coupon code a query may be: upper case, with the dashes put back
/// when they were left out (`k7qm3xpa9rtd` -> `K7QM-3XPA-9RTD`).
fn as_code(q: &str) -> String {
    let up = q.to_ascii_uppercase();
    if up.len() == 12 && up.chars().all(|c| c.is_ascii_alphanumeric()) {
        format!("{}-{}-{}", &up[0..4], &up[4..8], &up[8..12])
    } else {
        up
    }
}

impl Service {
    /// The console's search box: a coupon id, a coupon code (any case,
    /// dashes optional), an order number or a user id, in the live and
    /// archive tables. When none of those matches exactly and the query's
    /// [`search_key`] has at least 4 characters, the coupon codes (live and
    /// archived) whose keys start with it, the order numbers whose keys
    /// hold it anywhere and the users (who placed an order) whose ids hold
    /// the query in any case, newest first, at most 50. One hit names its
    /// page; several are listed.
    pub async fn search(&self, query: &str) -> Result<SearchOutcome, ServiceError> {
        let q = query.trim().to_string();
        if q.is_empty() || q.len() > MAX_QUERY_LEN || q.chars().any(char::is_control) {
            return Err(
                FieldError::new("q", format!("must be 1 to {MAX_QUERY_LEN} characters")).into(),
            );
        }
        let key = search_key(&q);
        let now = self.now();
        let (hits, more) = self
            .read(move |c| {
                let q = q.clone();
                let key = key.clone();
                Box::pin(async move { search_tx(c, q, key, now).await })
            })
            .await?;
        if more.is_some() || hits.len() > 1 {
            return Ok(SearchOutcome::Many(SearchList {
                hits: hits.into_iter().map(|(_, h)| h).collect(),
                more,
            }));
        }
        Ok(match hits.into_iter().next() {
            None => SearchOutcome::Nothing,
            Some((Target::Coupon(id), _)) => SearchOutcome::Coupon(id),
            Some((Target::Order(no), _)) => SearchOutcome::Order(no),
            Some((Target::User(user), _)) => SearchOutcome::User(user),
        })
    }
}

/// Looks the query up as a coupon id or code, an order number and a user id, then by partial match.
async fn search_tx(
    c: &mut AnyConnection,
    q: String,
    key: String,
    now: DateTime<Utc>,
) -> Result<(Vec<(Target, SearchHit)>, Option<MoreMatches>), ServiceError> {
    let mut hits: Vec<(Target, SearchHit)> = Vec::new();
    let mut coupon_ids: Vec<CouponId> = Vec::new();
    let as_id = CouponId::from_wire(q.clone());
    if search::coupon_exists(c, &as_id).await? {
        coupon_ids.push(as_id);
    }
    if let Some(id) = search::coupon_id_by_code(c, &as_code(&q)).await?
        && !coupon_ids.contains(&id)
    {
        coupon_ids.push(id);
    }
    for id in coupon_ids {
        if let Some(r) = archive::get_live_or_archived(c, &id).await? {
            hits.push(coupon_hit(r, now));
        }
    }
    // Every stored order number and user id is a checked
    // key: a query that is not one matches neither.
    if let Ok(no) = OrderNo::parse(&q)
        && let Some(o) = orders::get(c, &no).await?
    {
        hits.push(order_hit(o));
    }
    if let Ok(user) = UserId::parse(&q)
        && search::user_exists(c, &user).await?
    {
        hits.push(user_hit(user));
    }
    if !hits.is_empty() || key.chars().count() < MIN_PREFIX_CHARS {
        return Ok((hits, None));
    }
    // Nothing matched exactly: the coupon codes that start
    // with the query, the order numbers and user ids that
    // hold it, newest first.
    partial_hits(c, &key, &q, now).await
}

/// The coupons (live and archived) whose code's search key starts with
/// `key`, the orders whose number's search key holds `key`, and the users
/// (who placed an order) whose id holds `query` in any case: at most
/// [`MAX_LISTED`] hits, newest first, and how many more matched.
async fn partial_hits(
    c: &mut AnyConnection,
    key: &str,
    query: &str,
    now: DateTime<Utc>,
) -> Result<(Vec<(Target, SearchHit)>, Option<MoreMatches>), ServiceError> {
    let read = i64::try_from(PREFIX_SCAN + 1).unwrap_or(i64::MAX);
    let found = |kind: FoundKind, rows: Vec<(String, i64)>| -> Vec<Found> {
        rows.into_iter()
            .map(|(key, created_at)| Found {
                created_at,
                kind,
                key,
            })
            .collect()
    };
    let mut tables = vec![
        found(
            FoundKind::Coupon,
            search::coupons_by_code_prefix(c, key, read).await?,
        ),
        found(
            FoundKind::Coupon,
            search::archived_coupons_by_code_prefix(c, key, read).await?,
        ),
        found(
            FoundKind::Order,
            search::orders_by_no_part(c, key, read).await?,
        ),
    ];
    if query.chars().count() >= MIN_PREFIX_CHARS {
        tables.push(found(
            FoundKind::User,
            search::users_by_part(c, query, read).await?,
        ));
    }
    let (listed, more) = newest(tables);
    let mut hits = Vec::with_capacity(listed.len());
    // The keys were read from our own tables.
    for f in listed {
        match f.kind {
            FoundKind::Order => {
                if let Some(o) = orders::get(c, &OrderNo::from_stored(f.key)).await? {
                    hits.push(order_hit(o));
                }
            }
            FoundKind::Coupon => {
                if let Some(r) =
                    archive::get_live_or_archived(c, &CouponId::from_wire(f.key)).await?
                {
                    hits.push(coupon_hit(r, now));
                }
            }
            FoundKind::User => hits.push(user_hit(UserId::from_stored(f.key))),
        }
    }
    Ok((hits, more))
}

/// A coupon as a hit, with its effective status at `now`.
fn coupon_hit(r: CouponRow, now: DateTime<Utc>) -> (Target, SearchHit) {
    let st = effective_status(r.status, from_ms(r.ends_at), now);
    let hit = SearchHit {
        kind: "coupon".into(),
        title: r.code,
        status_key: Some(st.label_key()),
        user_id: r.user_id,
        key: r.id.to_string(),
    };
    (Target::Coupon(r.id), hit)
}

/// An order as a hit.
fn order_hit(o: orders::OrderRow) -> (Target, SearchHit) {
    let hit = SearchHit {
        kind: "order".into(),
        title: o.order_no.to_string(),
        status_key: Some(o.status.label_key()),
        user_id: o.user_id,
        key: o.order_no.to_string(),
    };
    (Target::Order(o.order_no), hit)
}

/// A user (who placed an order) as a hit.
fn user_hit(user: UserId) -> (Target, SearchHit) {
    let hit = SearchHit {
        kind: "user".into(),
        title: user.to_string(),
        status_key: None,
        user_id: user.clone(),
        key: user.to_string(),
    };
    (Target::User(user), hit)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn codes_are_matched_in_any_case_with_or_without_dashes() {
        assert_eq!(as_code("k7qm-3xpa-9rtd"), "K7QM-3XPA-9RTD");
        assert_eq!(as_code("k7qm3xpa9rtd"), "K7QM-3XPA-9RTD");
        assert_eq!(as_code("P123"), "P123");
    }

    fn f(created_at: i64, order: bool, key: &str) -> Found {
        Found {
            created_at,
            kind: if order {
                FoundKind::Order
            } else {
                FoundKind::Coupon
            },
            key: key.into(),
        }
    }

    fn keys(found: &[Found]) -> Vec<&str> {
        found.iter().map(|f| f.key.as_str()).collect()
    }

    #[test]
    fn prefix_matches_are_listed_newest_first_once_each_with_how_many_more() {
        // Newest first across tables; a coupon in both tables counts once;
        // an order and a coupon with the same key are two matches.
        let (listed, more) = newest(vec![
            vec![f(1, false, "c1"), f(3, false, "c3")],
            vec![f(3, false, "c3"), f(0, false, "c0")],
            vec![f(2, true, "c1")],
        ]);
        assert_eq!(keys(&listed), vec!["c3", "c1", "c1", "c0"]);
        assert_eq!(more, None);
        // 60 matches: the 50 newest, and the count.
        let rows: Vec<Found> = (0..60).map(|i| f(i, true, &format!("o{i:02}"))).collect();
        let (listed, more) = newest(vec![Vec::new(), Vec::new(), rows]);
        assert_eq!(listed.len(), MAX_LISTED);
        assert_eq!(listed.first().map(|f| f.key.as_str()), Some("o59"));
        assert_eq!(listed.last().map(|f| f.key.as_str()), Some("o10"));
        assert_eq!(more, Some(MoreMatches::Total(60)));
        // A table read past the scan bound: "more than", and the newest of
        // the rows within the bound (the newest row, read past it, is left
        // out).
        let rows: Vec<Found> = (0..=PREFIX_SCAN as i64)
            .map(|i| f(i, false, &format!("c{i:04}")))
            .collect();
        let (listed, more) = newest(vec![rows]);
        assert_eq!(listed.len(), MAX_LISTED);
        assert_eq!(listed.first().map(|f| f.key.as_str()), Some("c0999"));
        assert_eq!(more, Some(MoreMatches::Over(PREFIX_SCAN)));
    }
}
