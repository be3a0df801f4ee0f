//! The audit log: who did what, to what, from where.
//!
//! Two logs, each one table:
//! - **events**: every state change of a coupon or an order, with actor
//!   (`staff:<name>`, `api:<token id>`, `job:<name>`), action, reason,
//!   before and after status, target (coupon id / order number), request
//!   id and client address. Written by the operations themselves, in their
//!   transaction, so it cannot miss one.
//! - **staff**: staff accounts and sessions (created, role changed,
//!   password reset, disabled, enabled, signed in, sign-in refused, signed
//!   out), from `staff_audit`.
//!
//! Pages are keyset pages newest first in `(at, id)` order; the cursor is
//! `<at ms>.<id>`. Each page reads one index range (see
//! [`crate::store::audit`]).

use serde::Serialize;

use super::support::csv_field;
use super::{Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::time::{from_ms, rfc3339};
use crate::store::audit::{self, AuditCursor, AuditQuery, EventAuditRow, StaffAuditRow};

/// Largest page.
pub const MAX_PAGE: i64 = 200;
/// Most rows one CSV export holds.
pub const MAX_EXPORT_ROWS: usize = 100_000;
/// Rows per statement while exporting.
const EXPORT_BATCH: i64 = 1000;

/// Which log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditLog {
    /// Coupon and order events.
    Events,
    /// Staff accounts and sign-ins.
    Staff,
}

impl AuditLog {
    pub fn parse(raw: &str) -> Option<AuditLog> {
        match raw {
            "" | "events" => Some(AuditLog::Events),
            "staff" => Some(AuditLog::Staff),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AuditLog::Events => "events",
            AuditLog::Staff => "staff",
        }
    }
}

/// One coupon or order event.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AuditEventView {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub action: String,
    /// `coupon` or `order`.
    pub subject: String,
    pub coupon_id: Option<CouponId>,
    pub order_no: Option<OrderNo>,
    pub from_status: Option<String>,
    pub to_status: String,
    pub reason: Option<String>,
    pub request_id: Option<String>,
    pub address: Option<String>,
    /// The coupon's code, for the page (not in the CSV, which keeps ids).
    #[serde(skip)]
    pub coupon_code: Option<String>,
}

impl From<EventAuditRow> for AuditEventView {
    fn from(r: EventAuditRow) -> Self {
        AuditEventView {
            id: r.id,
            at: rfc3339(from_ms(r.at)),
            actor: r.actor,
            action: r.action,
            subject: r.subject,
            coupon_id: r.coupon_id,
            order_no: r.order_no,
            from_status: r.from_status,
            to_status: r.to_status,
            reason: r.reason,
            request_id: r.request_id,
            address: r.address,
            coupon_code: None,
        }
    }
}

/// One staff-log row.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StaffAuditView {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub action: String,
    pub target: String,
    /// The target's name when it is a coupon, template or campaign (its
    /// code or name), for pages that must not show `tpl_…` / `cmp_…`.
    pub target_name: Option<String>,
    pub detail: Option<String>,
    pub address: Option<String>,
    /// The names of the templates, campaigns and rules the detail names
    /// by id (a code batch's template, a wake-up rule's templates), for
    /// pages; the CSV and the API keep the ids.
    #[serde(skip)]
    pub detail_names: std::collections::BTreeMap<String, String>,
}

/// The server ids (`tpl_…`, `cbt_…`, …) a staff-log detail mentions, in
/// order of appearance: the words of letters, digits and `_` that
/// [`crate::domain::ids::is_named_id`] recognises. At most 32.
pub fn ids_in_detail(detail: &str) -> Vec<&str> {
    detail
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| crate::domain::ids::is_named_id(w))
        .take(32)
        .collect()
}

impl From<StaffAuditRow> for StaffAuditView {
    fn from(r: StaffAuditRow) -> Self {
        StaffAuditView {
            id: r.id,
            at: rfc3339(from_ms(r.at)),
            actor: r.actor,
            action: r.action,
            target: r.target,
            target_name: None,
            detail: r.detail,
            address: r.address,
            detail_names: Default::default(),
        }
    }
}

/// One page and the cursor of the next, if there may be one.
#[derive(Debug, Clone, Serialize)]
pub struct AuditPage<T> {
    pub rows: Vec<T>,
    pub next: Option<String>,
}

fn encode_cursor(at: i64, id: i64) -> String {
    format!("{at}.{id}")
}

fn decode_cursor(raw: Option<&str>) -> Result<Option<AuditCursor>, ServiceError> {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    let bad = || ServiceError::from(FieldError::new("after", "is not a page cursor"));
    let (at, id) = raw.split_once('.').ok_or_else(bad)?;
    Ok(Some(AuditCursor {
        at: at.parse().map_err(|_| bad())?,
        id: id.parse().map_err(|_| bad())?,
    }))
}

fn check_limit(limit: i64) -> Result<(), ServiceError> {
    if (1..=MAX_PAGE).contains(&limit) {
        Ok(())
    } else {
        Err(FieldError::new("limit", format!("must be 1 to {MAX_PAGE}")).into())
    }
}

/// The columns a reader's page adds to each row of an audit CSV, in the
/// reader's words (the stored codes stay in their own columns): the extra
/// header names, and the fields of an event row or a staff-log row (as
/// many as `header` names, for the log exported).
pub struct CsvWords<'a> {
    pub header: &'a [&'a str],
    pub event: &'a (dyn Fn(&AuditEventView) -> Vec<String> + Sync),
    pub staff: &'a (dyn Fn(&StaffAuditView) -> Vec<String> + Sync),
}

const EVENTS_CSV_HEADER: &str =
    "id,at,actor,action,subject,coupon_id,order_no,from_status,to_status,reason,request_id,address";
const STAFF_CSV_HEADER: &str = "id,at,actor,action,target,detail,address";

fn event_csv_row(v: &AuditEventView) -> String {
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    let id_text = |s: Option<&str>| s.unwrap_or_default().to_string();
    [
        v.id.to_string(),
        v.at.clone(),
        v.actor.clone(),
        v.action.clone(),
        v.subject.clone(),
        id_text(v.coupon_id.as_deref()),
        id_text(v.order_no.as_deref()),
        text(&v.from_status),
        v.to_status.clone(),
        text(&v.reason),
        text(&v.request_id),
        text(&v.address),
    ]
    .iter()
    .map(|f| csv_field(f))
    .collect::<Vec<_>>()
    .join(",")
}

fn staff_csv_row(v: &StaffAuditView) -> String {
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    [
        v.id.to_string(),
        v.at.clone(),
        v.actor.clone(),
        v.action.clone(),
        v.target.clone(),
        text(&v.detail),
        text(&v.address),
    ]
    .iter()
    .map(|f| csv_field(f))
    .collect::<Vec<_>>()
    .join(",")
}

impl Service {
    /// A page of coupon and order events, newest first.
    /// What a person typed in the events log's target filter, read as the
    /// page shows things: a coupon code (with or without dashes, any case)
    /// becomes that coupon's id, an order number the order's own
    /// spelling, a unique prefix of either its one match; anything else is
    /// used as typed.
    pub async fn audit_event_target(&self, typed: &str) -> Result<String, ServiceError> {
        let typed = typed.trim().to_string();
        if typed.is_empty() {
            return Ok(typed);
        }
        self.read(move |c| {
            let typed = typed.clone();
            Box::pin(async move {
                use crate::store::search;
                if let Some(id) = search::coupon_id_by_code(c, &typed.to_uppercase()).await? {
                    return Ok(id.into_string());
                }
                if search::coupon_exists(c, &CouponId::from_wire(typed.as_str())).await? {
                    return Ok(typed);
                }
                // A target no order number can spell names no order.
                if let Ok(order_no) = OrderNo::parse(&typed)
                    && search::order_exists(c, &order_no).await?
                {
                    return Ok(typed);
                }
                let key = crate::domain::ids::search_key(&typed);
                if key.chars().count() < 4 {
                    return Ok(typed);
                }
                let coupons = search::coupons_by_code_prefix(c, &key, 2).await?;
                let orders = search::orders_by_no_prefix(c, &key, 2).await?;
                match (coupons.as_slice(), orders.as_slice()) {
                    ([(id, _)], []) => Ok(id.clone()),
                    ([], [(order_no, _)]) => Ok(order_no.clone()),
                    _ => Ok(typed),
                }
            })
        })
        .await
    }

    pub async fn audit_events(
        &self,
        q: AuditQuery,
        after: Option<&str>,
        limit: i64,
    ) -> Result<AuditPage<AuditEventView>, ServiceError> {
        check_limit(limit)?;
        let before = decode_cursor(after)?;
        self.audit_events_batch(q, before, limit).await
    }

    async fn audit_events_batch(
        &self,
        q: AuditQuery,
        before: Option<AuditCursor>,
        limit: i64,
    ) -> Result<AuditPage<AuditEventView>, ServiceError> {
        let rows = self
            .read(move |c| {
                let q = q.clone();
                Box::pin(async move {
                    let rows = audit::events_page(c, &q, before, limit).await?;
                    let ids: Vec<&CouponId> =
                        rows.iter().filter_map(|r| r.coupon_id.as_ref()).collect();
                    let codes = crate::store::names::coupon_codes(c, &ids).await?;
                    Ok((rows, codes))
                })
            })
            .await?;
        let (rows, codes) = rows;
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|r| encode_cursor(r.at, r.id)))
            .flatten();
        Ok(AuditPage {
            rows: rows
                .into_iter()
                .map(|r| {
                    let code = r
                        .coupon_id
                        .as_ref()
                        .and_then(|id| codes.get(id.as_str()).cloned());
                    AuditEventView {
                        coupon_code: code,
                        ..AuditEventView::from(r)
                    }
                })
                .collect(),
            next,
        })
    }

    /// A page of the staff log, newest first.
    pub async fn audit_staff(
        &self,
        q: AuditQuery,
        after: Option<&str>,
        limit: i64,
    ) -> Result<AuditPage<StaffAuditView>, ServiceError> {
        check_limit(limit)?;
        let before = decode_cursor(after)?;
        self.audit_staff_batch(q, before, limit).await
    }

    async fn audit_staff_batch(
        &self,
        q: AuditQuery,
        before: Option<AuditCursor>,
        limit: i64,
    ) -> Result<AuditPage<StaffAuditView>, ServiceError> {
        let rows = self
            .read(move |c| {
                let q = q.clone();
                Box::pin(async move {
                    let rows = audit::staff_page(c, &q, before, limit).await?;
                    let ids: Vec<&str> = rows
                        .iter()
                        .flat_map(|r| {
                            std::iter::once(r.target.as_str())
                                .chain(r.detail.as_deref().map(ids_in_detail).unwrap_or_default())
                        })
                        .collect();
                    let names = crate::store::names::people_names(c, &ids).await?;
                    Ok((rows, names))
                })
            })
            .await?;
        let (rows, names) = rows;
        let next = (rows.len() as i64 == limit)
            .then(|| rows.last().map(|r| encode_cursor(r.at, r.id)))
            .flatten();
        Ok(AuditPage {
            rows: rows
                .into_iter()
                .map(|r| {
                    let name = names.get(&r.target).cloned();
                    let detail_names = r
                        .detail
                        .as_deref()
                        .map(ids_in_detail)
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|id| Some((id.to_string(), names.get(id)?.clone())))
                        .collect();
                    StaffAuditView {
                        target_name: name,
                        detail_names,
                        ..StaffAuditView::from(r)
                    }
                })
                .collect(),
            next,
        })
    }

    /// The filtered log as CSV (RFC 4180, header first, newest first), at
    /// most `max_rows` rows, read in keyset batches of 1000: the stored
    /// codes and ids, then the columns `words` adds in the reader's words.
    pub async fn export_audit_csv(
        &self,
        log: AuditLog,
        q: AuditQuery,
        max_rows: usize,
        words: &CsvWords<'_>,
    ) -> Result<String, ServiceError> {
        if !(1..=MAX_EXPORT_ROWS).contains(&max_rows) {
            return Err(
                FieldError::new("max_rows", format!("must be 1 to {MAX_EXPORT_ROWS}")).into(),
            );
        }
        let mut out = String::from(match log {
            AuditLog::Events => EVENTS_CSV_HEADER,
            AuditLog::Staff => STAFF_CSV_HEADER,
        });
        for h in words.header {
            out.push(',');
            out.push_str(h);
        }
        out.push_str("\r\n");
        let extra = |fields: Vec<String>| -> String {
            fields
                .iter()
                .map(|f| format!(",{}", csv_field(f)))
                .collect::<String>()
        };
        let mut written = 0usize;
        let mut before: Option<AuditCursor> = None;
        while written < max_rows {
            let want = i64::try_from(max_rows - written)
                .unwrap_or(EXPORT_BATCH)
                .min(EXPORT_BATCH);
            let next = match log {
                AuditLog::Events => {
                    let page = self.audit_events_batch(q.clone(), before, want).await?;
                    for v in &page.rows {
                        out.push_str(&event_csv_row(v));
                        out.push_str(&extra((words.event)(v)));
                        out.push_str("\r\n");
                    }
                    written += page.rows.len();
                    page.next
                }
                AuditLog::Staff => {
                    let page = self.audit_staff_batch(q.clone(), before, want).await?;
                    for v in &page.rows {
                        out.push_str(&staff_csv_row(v));
                        out.push_str(&extra((words.staff)(v)));
                        out.push_str("\r\n");
                    }
                    written += page.rows.len();
                    page.next
                }
            };
            match next {
                Some(n) => before = decode_cursor(Some(&n))?,
                None => break,
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_junk_is_refused() {
        let c = decode_cursor(Some(&encode_cursor(1_700_000_000_000, 42))).expect("parses");
        assert_eq!(
            c,
            Some(AuditCursor {
                at: 1_700_000_000_000,
                id: 42
            })
        );
        assert!(decode_cursor(Some("x.1")).is_err());
        assert!(decode_cursor(Some("12")).is_err());
        assert_eq!(decode_cursor(Some("")).expect("empty"), None);
    }

    #[test]
    fn the_ids_a_detail_names_are_found_between_its_punctuation() {
        assert_eq!(
            ids_in_detail(r#"{"template_id":"tpl_0a1b","bonus":"wkr_9","x":"tpl_"}"#),
            ["tpl_0a1b", "wkr_9"]
        );
        assert!(ids_in_detail("support -> operator").is_empty());
    }

    #[test]
    fn csv_rows_quote_what_needs_quoting() {
        let v = StaffAuditView {
            id: 1,
            at: "2026-11-11T00:00:00.000Z".into(),
            actor: "staff:admin-1".into(),
            action: "role_change".into(),
            target: "bob".into(),
            target_name: None,
            detail: Some("support -> operator, \"now\"".into()),
            address: None,
            detail_names: Default::default(),
        };
        assert_eq!(
            staff_csv_row(&v),
            "1,2026-11-11T00:00:00.000Z,staff:admin-1,role_change,bob,\"support -> operator, \"\"now\"\"\","
        );
    }
}
