//! The `coupons` table. Every status change goes through [`transition`]: a
//! conditional update whose affected-row count decides, plus its event row.

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use super::counters;
use super::events::{self, NewEvent};
use super::outbox::{self, NewMessage};
use super::views::{CouponView, parse_stored_categories, parse_stored_line_terms, ts, ts_opt};
use super::{Backend, backend_of};
use crate::domain::coupon::{
    CouponSource, CouponStatus, IllegalTransition, check_transition, effective_status,
};
use crate::domain::discount::DiscountKind;
use crate::domain::ids::{CouponId, OrderNo, TemplateId, UserId};
use crate::domain::money::Cents;
use crate::domain::time::from_ms;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CouponRow {
    pub id: CouponId,
    pub code: String,
    pub user_id: UserId,
    pub template_id: Option<TemplateId>,
    pub source: CouponSource,
    pub kind: DiscountKind,
    pub value_cents: Option<Cents>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<Cents>,
    pub min_order_cents: Cents,
    pub categories: String,
    /// JSON: SKUs, shop and partial-refund rule (`views::line_terms_json`).
    pub line_terms: String,
    pub status: CouponStatus,
    pub starts_at: i64,
    pub ends_at: i64,
    pub order_no: Option<OrderNo>,
    pub locked_at: Option<i64>,
    pub used_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub(crate) const COLUMNS: &str = "id, code, user_id, template_id, source, kind, value_cents, percent_off, max_discount_cents, \
     min_order_cents, categories, status, starts_at, ends_at, order_no, locked_at, used_at, created_at, updated_at, line_terms";

/// Inserts a coupon row as given (the archive's restore; new coupons go
/// through [`insert_new`]).
pub async fn insert(conn: &mut AnyConnection, c: &CouponRow) -> Result<(), sqlx::Error> {
    sqlx::query(&format!(
        "INSERT INTO coupons ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"
    ))
    .bind(&c.id)
    .bind(&c.code)
    .bind(&c.user_id)
    .bind(&c.template_id)
    .bind(c.source.as_str())
    .bind(c.kind.as_str())
    .bind(c.value_cents)
    .bind(c.percent_off)
    .bind(c.max_discount_cents)
    .bind(c.min_order_cents)
    .bind(&c.categories)
    .bind(c.status.as_str())
    .bind(c.starts_at)
    .bind(c.ends_at)
    .bind(&c.order_no)
    .bind(c.locked_at)
    .bind(c.used_at)
    .bind(c.created_at)
    .bind(c.updated_at)
    .bind(&c.line_terms)
    .execute(conn)
    .await?;
    Ok(())
}

/// Who creates a coupon and why: the creation event of [`insert_new`].
#[derive(Debug, Clone, Copy)]
pub struct Creation<'a> {
    /// `claim`, `compensation`, ...
    pub action: &'a str,
    pub actor: &'a str,
    pub reason: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// The client address of the request (audit log).
    pub address: Option<&'a str>,
    /// The W3C trace id of the request, for the event row.
    pub trace_id: Option<&'a str>,
    /// The business day of the creation (`domain::report::day_number`):
    /// the report counters' day.
    pub day: i64,
}

/// Inserts a new coupon with its creation event, unless its code is taken:
/// `Ok(false)` then, and nothing was written (the caller draws another
/// code). `ON CONFLICT (code) DO NOTHING` makes the check part of the
/// INSERT: a conflict does not abort a PostgreSQL transaction, and there
/// is no separate lookup first. On PostgreSQL the event is written by the
/// same statement (a data-modifying CTE on the INSERT's RETURNING): one
/// round trip where a claim used to spend three.
pub async fn insert_new(
    conn: &mut AnyConnection,
    c: &CouponRow,
    e: &Creation<'_>,
) -> Result<bool, sqlx::Error> {
    let _timed = super::timing::call("coupons.insert_new");
    let backend = backend_of(conn);
    let insert = format!(
        "INSERT INTO coupons ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
         ON CONFLICT (code) DO NOTHING RETURNING id"
    );
    // The template's report counters (migration 0026): a part of the
    // same statement on PostgreSQL, one more statement on SQLite.
    let counted = match (&c.template_id, backend) {
        (Some(_), Backend::Postgres) => counters::creation_part(c.status),
        _ => String::new(),
    };
    let sql = match backend {
        Backend::Postgres => format!(
            "WITH made AS ({insert}),
             logged AS (INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id)
                 SELECT 'coupon', made.id, NULL, NULL, $12, $21, $22, $23, $24, $18, $25, $26 FROM made){counted}
             SELECT id FROM made"
        ),
        Backend::Sqlite => insert,
    };
    let q = sqlx::query_scalar::<_, String>(&sql)
        .bind(&c.id)
        .bind(&c.code)
        .bind(&c.user_id)
        .bind(&c.template_id)
        .bind(c.source.as_str())
        .bind(c.kind.as_str())
        .bind(c.value_cents)
        .bind(c.percent_off)
        .bind(c.max_discount_cents)
        .bind(c.min_order_cents)
        .bind(&c.categories)
        .bind(c.status.as_str())
        .bind(c.starts_at)
        .bind(c.ends_at)
        .bind(&c.order_no)
        .bind(c.locked_at)
        .bind(c.used_at)
        .bind(c.created_at)
        .bind(c.updated_at)
        .bind(&c.line_terms);
    let q = match backend {
        Backend::Postgres => q
            .bind(e.action)
            .bind(e.actor)
            .bind(e.reason)
            .bind(e.request_id)
            .bind(e.address)
            .bind(e.trace_id),
        Backend::Sqlite => q,
    };
    let q = if counted.is_empty() {
        q
    } else {
        q.bind(counters::random_shard()).bind(e.day)
    };
    if q.fetch_optional(&mut *conn).await?.is_none() {
        return Ok(false);
    }
    if backend == Backend::Sqlite {
        events::insert(
            conn,
            &NewEvent {
                subject: "coupon",
                coupon_id: Some(&c.id),
                order_no: None,
                from_status: None,
                to_status: c.status.as_str(),
                action: e.action,
                actor: e.actor,
                reason: e.reason,
                request_id: e.request_id,
                trace_id: e.trace_id,
                address: e.address,
                at_ms: c.created_at,
            },
        )
        .await?;
        if let Some(t) = &c.template_id {
            let (delta, _) = crate::domain::report::template_delta(None, c.status);
            counters::add(conn, counters::Subject::Template, t, e.day, &delta).await?;
        }
    }
    Ok(true)
}

pub async fn get(
    conn: &mut AnyConnection,
    id: &CouponId,
) -> Result<Option<CouponRow>, sqlx::Error> {
    let _timed = super::timing::call("coupons.get");
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM coupons WHERE id = $1"))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// A user's coupons, newest first, optionally filtered by *effective*
/// status (an `available` coupon past `ends_at` counts as `expired`).
/// Served by `coupons_user_status_ends_idx` (`(user_id, status, ends_at, id)`).
pub async fn list_for_user(
    conn: &mut AnyConnection,
    user_id: &UserId,
    status: Option<CouponStatus>,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    let _timed = super::timing::call("coupons.list_for_user");
    let (filter, uses_now) = match status {
        None => ("", false),
        Some(CouponStatus::Available) => ("AND status = 'available' AND ends_at > $3", true),
        Some(CouponStatus::Expired) => (
            "AND (status = 'expired' OR (status = 'available' AND ends_at <= $3))",
            true,
        ),
        Some(CouponStatus::Locked) => ("AND status = 'locked'", false),
        Some(CouponStatus::Used) => ("AND status = 'used'", false),
        Some(CouponStatus::Invalidated) => ("AND status = 'invalidated'", false),
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM coupons WHERE user_id = $1 {filter} ORDER BY created_at DESC, id DESC LIMIT $2"
    );
    let q = sqlx::query_as(&sql).bind(user_id).bind(limit);
    let q = if uses_now { q.bind(now_ms) } else { q };
    q.fetch_all(conn).await
}

/// A user's coupons stored `available` (including any just past their end,
/// which a reader must see as expired and hand to the expiry worker),
/// earliest end first, at most `limit`: the checkout picker's one read.
/// Served by `coupons_user_status_ends_idx` (`(user_id, status, ends_at, id)`). no template is read.
pub async fn available_for_user(
    conn: &mut AnyConnection,
    user_id: &UserId,
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    let _timed = super::timing::call("coupons.available_for_user");
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM coupons WHERE user_id = $1 AND status = 'available'
         ORDER BY ends_at, id LIMIT $2"
    ))
    .bind(user_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Coupons of a user of one `kind` (`fixed` or `percent`) that are usable
/// right now (stored `available`, started, not ended), earliest end first:
/// the candidates for a presale swap, which must be of the expired coupon's
/// kind (so coupons of the other kind never take up the `limit`).
pub async fn usable_for_user(
    conn: &mut AnyConnection,
    user_id: &UserId,
    kind: DiscountKind,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    let _timed = super::timing::call("coupons.usable_for_user");
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM coupons
         WHERE user_id = $1 AND status = 'available' AND starts_at <= $2 AND ends_at > $2 AND kind = $4
         ORDER BY ends_at, id LIMIT $3"
    ))
    .bind(user_id)
    .bind(now_ms)
    .bind(limit)
    .bind(kind.as_str())
    .fetch_all(conn)
    .await
}

/// Coupons bound to an order (locked to it or used by it).
pub async fn bound_to_order(
    conn: &mut AnyConnection,
    order_no: &OrderNo,
) -> Result<Vec<CouponRow>, sqlx::Error> {
    let _timed = super::timing::call("coupons.bound_to_order");
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM coupons WHERE order_no = $1 ORDER BY id LIMIT 100"
    ))
    .bind(order_no)
    .fetch_all(conn)
    .await
}

/// A status change to attempt, with what the event row will say.
#[derive(Debug, Clone)]
pub struct CouponChange<'a> {
    pub coupon_id: &'a CouponId,
    pub from: CouponStatus,
    pub to: CouponStatus,
    /// Locking: the order to bind. Use, release, refund: the order the
    /// coupon must currently be bound to (part of the WHERE clause).
    pub order_no: Option<&'a OrderNo>,
    pub action: &'a str,
    pub actor: &'a str,
    pub reason: Option<&'a str>,
    pub request_id: Option<&'a str>,
    /// The client address of the request (audit log).
    pub address: Option<&'a str>,
    /// The W3C trace of the request: its id goes into the event row, and
    /// the whole of it onto the webhook the change causes.
    pub trace: Option<&'a crate::domain::trace::TraceContext>,
    pub now_ms: i64,
    /// The business day of `now_ms` (`domain::report::day_number`): the
    /// report counters' day.
    pub day: i64,
}

/// Why a change did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    #[error("{0}")]
    Illegal(IllegalTransition),
    /// Locking the coupon for its order would pass its template's budget.
    #[error("the template's budget does not cover this discount")]
    BudgetExhausted,
}

/// Applies a change with one conditional UPDATE and, when exactly one row
/// changed, writes its event. `Ok(false)`: the coupon was not in the
/// expected state (someone else changed it first, or time moved past a
/// boundary); nothing was written.
///
/// The WHERE clause re-checks everything the caller decided on: the status,
/// the bound order, and the validity window (`ends_at` against now), so a
/// concurrent expiry or payment can never be overwritten. On PostgreSQL
/// the UPDATE and its event are one statement (see the body).
pub async fn transition(
    conn: &mut AnyConnection,
    c: &CouponChange<'_>,
) -> Result<bool, ChangeError> {
    use CouponStatus::*;
    // Timed by what the change does: a fixed handful of names.
    let _timed = super::timing::call(match (c.from, c.to) {
        (Available, Locked) => "coupons.lock",
        (Locked, Used) => "coupons.use",
        (_, Available) => "coupons.release",
        (_, Expired) => "coupons.expire",
        (_, Invalidated) => "coupons.invalidate",
        _ => "coupons.transition",
    });
    check_transition(c.from, c.to).map_err(ChangeError::Illegal)?;
    const UNBIND: &str = "order_no = NULL, locked_at = NULL, used_at = NULL, updated_at = $4";
    let (set, guard): (&str, &str) = match (c.from, c.to) {
        (Available, Locked) => (
            "order_no = $5, locked_at = $4, updated_at = $4",
            "AND starts_at <= $4 AND ends_at > $4",
        ),
        (Locked, Used) => ("used_at = $4, updated_at = $4", "AND order_no = $5"),
        (Locked, Available) | (Used, Available) => (UNBIND, "AND ends_at > $4"),
        (Locked, Expired) | (Used, Expired) => (UNBIND, "AND ends_at <= $4"),
        (Available, Expired) => ("updated_at = $4", "AND ends_at <= $4"),
        _ => ("updated_at = $4", ""),
    };
    let binds_order = set.contains("$5") || guard.contains("$5");
    let order_guard = match (binds_order, c.order_no.is_some(), c.from) {
        // Releases and refunds must name the order they undo.
        (false, true, Locked | Used) => "AND order_no = $5",
        _ => "",
    };
    let update = format!(
        "UPDATE coupons SET status = $3, {set} WHERE id = $1 AND status = $2 {guard} {order_guard} RETURNING {COLUMNS}"
    );
    let backend = backend_of(conn);
    let changed = match backend {
        // One statement: the event is inserted from the UPDATE's RETURNING
        // (so it exists exactly when the coupon moved), one round trip
        // instead of two. `$5` (the order) is always bound here: the event
        // names it even when the UPDATE does not.
        Backend::Postgres => {
            let sql = format!(
                "WITH moved AS ({update}),
                 logged AS (INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address, trace_id)
                     SELECT 'coupon', moved.id, $5, $2, $3, $6, $7, $8, $9, $4, $10, $13 FROM moved){counted}
                 SELECT {COLUMNS} FROM moved",
                counted = counters::transition_parts(c.from, c.to)
            );
            sqlx::query_as::<_, CouponRow>(&sql)
                .bind(c.coupon_id)
                .bind(c.from.as_str())
                .bind(c.to.as_str())
                .bind(c.now_ms)
                .bind(c.order_no)
                .bind(c.action)
                .bind(c.actor)
                .bind(c.reason)
                .bind(c.request_id)
                .bind(c.address)
                .bind(counters::random_shard())
                .bind(c.day)
                .bind(c.trace.map(|t| t.trace_id.as_str()))
                .fetch_optional(&mut *conn)
                .await?
        }
        Backend::Sqlite => {
            let q = sqlx::query_as::<_, CouponRow>(&update)
                .bind(c.coupon_id)
                .bind(c.from.as_str())
                .bind(c.to.as_str())
                .bind(c.now_ms);
            let q = if binds_order || !order_guard.is_empty() {
                q.bind(c.order_no)
            } else {
                q
            };
            let changed = q.fetch_optional(&mut *conn).await?;
            if changed.is_some() {
                events::insert(
                    conn,
                    &NewEvent {
                        subject: "coupon",
                        coupon_id: Some(c.coupon_id),
                        order_no: c.order_no,
                        from_status: Some(c.from.as_str()),
                        to_status: c.to.as_str(),
                        action: c.action,
                        actor: c.actor,
                        reason: c.reason,
                        request_id: c.request_id,
                        trace_id: c.trace.map(|t| t.trace_id.as_str()),
                        address: c.address,
                        at_ms: c.now_ms,
                    },
                )
                .await?;
            }
            if let Some(row) = &changed {
                counters::count_transition(
                    conn,
                    row.template_id.as_ref(),
                    c.coupon_id,
                    c.order_no,
                    c.from,
                    c.to,
                    c.day,
                )
                .await?;
            }
            changed
        }
    };
    let Some(row) = changed else {
        return Ok(false);
    };
    // The template's budget: reserved as the coupon is bound to an order,
    // given back as it leaves it.
    if let (Some(order_no), Some(template_id)) = (c.order_no, row.template_id.as_ref()) {
        let exhausted = match (c.from, c.to) {
            (Available, Locked | Used) => {
                !super::budgets::reserve(conn, order_no, c.coupon_id, template_id, c.now_ms).await?
            }
            (Locked | Used, Available | Expired | Invalidated) => {
                super::budgets::give_back(conn, order_no, c.coupon_id).await?;
                false
            }
            _ => false,
        };
        if exhausted {
            return Err(ChangeError::BudgetExhausted);
        }
    }
    if let Some(event_type) = outbox_type(c.from, c.to) {
        outbox::insert_many_traced(conn, &[coupon_message(event_type, row, c.now_ms)], c.trace)
            .await?;
    }
    Ok(true)
}

impl CouponView {
    /// The coupon as the API shows it at `now` (effective status).
    pub fn from_row(c: CouponRow, now: DateTime<Utc>) -> Self {
        let status = effective_status(c.status, from_ms(c.ends_at), now);
        let line = parse_stored_line_terms(&c.line_terms);
        let (scope, rule) = (line.scope.clone(), line.refund_rule);
        CouponView {
            categories: parse_stored_categories(&c.categories),
            skus: scope.skus,
            exclude_skus: scope.exclude_skus,
            shop_id: scope.shop_id,
            partial_refund_rule: rule,
            stackable: line.stackable,
            id: c.id,
            code: c.code,
            user_id: c.user_id,
            template_id: c.template_id,
            kind: c.kind,
            value_cents: c.value_cents,
            percent_off: c.percent_off,
            max_discount_cents: c.max_discount_cents,
            min_order_cents: c.min_order_cents,
            status,
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

/// The webhook type of a coupon change (API.md, Webhooks), if outsiders
/// hear about it. Every end of a lock or a use that gives the coupon back
/// (cancel, refund, release, reaper, checkout lapse, presale timeout) is
/// `coupon.released`, whether it returns to `available` or, past its end,
/// to `expired`; a refund of a used coupon is `coupon.released` too.
/// Invalidation has no webhook type.
pub fn outbox_type(from: CouponStatus, to: CouponStatus) -> Option<&'static str> {
    use CouponStatus::*;
    match (from, to) {
        (Available, Locked) => Some("coupon.locked"),
        (Locked, Used) => Some("coupon.used"),
        (Locked | Used, Available | Expired) => Some("coupon.released"),
        (Available, Expired) => Some("coupon.expired"),
        _ => None,
    }
}

/// An outbox message about a coupon: `data` is the coupon as the API shows
/// it at `now_ms` (effective status).
pub fn coupon_message(event_type: &'static str, row: CouponRow, now_ms: i64) -> NewMessage {
    let view = CouponView::from_row(row, from_ms(now_ms));
    NewMessage {
        event_type,
        user_id: Some(view.user_id.clone()),
        subject_id: Some(view.id.to_string()),
        payload: serde_json::to_string(&view).unwrap_or_else(|_| "{}".into()),
        created_at: now_ms,
    }
}
