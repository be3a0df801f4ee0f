//! Customers' requests for support (联系客服) and support's work queue.
//!
//! - [`Service::request_support`]: the customer pressed "contact support"
//!   on their self-check page for one of their orders. The one-click check
//!   is run again for that order (the findings the request carries are the
//!   server's, never the form's), and in one transaction, under the
//!   order's lock: at most one request per order per hour
//!   ([`REQUEST_GAP_SECONDS`]); the request row; an event row on the
//!   order; and the `support.requested` webhook message (data: the order,
//!   the note, the findings in both languages), so the shop's ticket
//!   system opens a ticket with the diagnosis attached.
//! - [`Service::support_queue`]: the console's queue, open requests oldest
//!   first, with how many are open; [`Service::order_support_requests`]:
//!   one order's, beside its health check.
//! - [`Service::mark_support_request_handled`]: a staff member closes one,
//!   with one conditional update and an event row on the order.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::self_check::{CustomerCheck, CustomerFinding, NextStep, customer_check};
use super::support::UserHealthReport;
use super::{Ctx, Service, ServiceError};
use crate::domain::event::EventAction;
use crate::domain::health::CheckResult;
use crate::domain::ids::{OrderNo, UserId, new_id};
use crate::domain::self_check::Verified;
use crate::domain::support_request::{
    CustomerNote, FindingScope, REQUEST_GAP_SECONDS, RecordedFinding, RequestStatus, may_request,
    next_request_at, overall,
};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::i18n::{Lang, Msg};
use crate::store::events::{self, NewEvent};
use crate::store::outbox::{self, NewMessage};
use crate::store::support_requests::{self as store, RequestRow};
use crate::store::{advisory_lock, orders};

/// Webhook event type of a request (data: [`webhook_data`]).
pub const SUPPORT_REQUESTED: &str = "support.requested";
/// The actor of a request in the order's event rows.
pub const CUSTOMER_ACTOR: &str = "customer:self-check";
/// Most requests one page of the queue lists.
pub const QUEUE_PAGE: i64 = 100;
/// Most requests the order page lists.
pub const ORDER_REQUESTS: i64 = 20;
/// Most orders the self-check page looks up recent requests for.
const PAGE_ORDERS: i64 = 100;

/// What pressing "contact support" did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum RequestOutcome {
    /// Recorded and sent.
    Sent { id: String, at: DateTime<Utc> },
    /// One was sent for this order within the hour: nothing written.
    AlreadySent {
        at: DateTime<Utc>,
        next_at: DateTime<Utc>,
    },
}

/// A request as pages show it.
#[derive(Debug, Clone, Serialize)]
pub struct SupportRequestView {
    pub id: String,
    pub user_id: UserId,
    pub order_no: OrderNo,
    pub note: Option<String>,
    pub overall: CheckResult,
    pub findings: Vec<RecordedFinding>,
    pub status: RequestStatus,
    pub created_at: DateTime<Utc>,
    pub handled_at: Option<DateTime<Utc>>,
    pub handled_by: Option<String>,
}

impl SupportRequestView {
    fn of(r: RequestRow) -> Self {
        let findings: Vec<RecordedFinding> = serde_json::from_str(&r.findings).unwrap_or_default();
        SupportRequestView {
            overall: overall(&findings),
            findings,
            status: RequestStatus::parse(&r.status).unwrap_or(RequestStatus::Open),
            created_at: from_ms(r.created_at),
            handled_at: r.handled_at.map(from_ms),
            id: r.id,
            user_id: r.user_id,
            order_no: r.order_no,
            note: r.note,
            handled_by: r.handled_by,
        }
    }
}

/// A recorded finding's message, ready to render.
pub fn finding_message(f: &RecordedFinding) -> Msg {
    Msg::from_stored(&f.message_key, &f.message_args)
}

fn recorded(scope: FindingScope, f: &CustomerFinding) -> RecordedFinding {
    RecordedFinding {
        scope,
        result: f.result,
        message_key: f.message.key.clone(),
        message_args: f.message.args_json(),
        coupon: f.coupon.clone(),
        contact_support: f.next == NextStep::ContactSupport,
    }
}

/// The findings a request about `order_no` carries: the order's own, then
/// the customer's coupons held by an order that no longer uses them.
fn findings_of(check: &CustomerCheck, order_no: &OrderNo) -> Vec<RecordedFinding> {
    check
        .orders
        .iter()
        .filter(|o| &o.order_no == order_no)
        .flat_map(|o| o.findings.iter().map(|f| recorded(FindingScope::Order, f)))
        .chain(
            check
                .coupons
                .iter()
                .map(|f| recorded(FindingScope::Coupon, f)),
        )
        .collect()
}

/// The `data` of a `support.requested` message: what a ticket needs, each
/// finding's message in both languages.
fn webhook_data(r: &RequestRow, findings: &[RecordedFinding]) -> serde_json::Value {
    let findings: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let m = finding_message(f);
            json!({
                "scope": f.scope,
                "result": f.result,
                "coupon_code": f.coupon,
                "contact_support": f.contact_support,
                "message": Lang::Zh.msg(&m),
                "message_en": Lang::En.msg(&m),
            })
        })
        .collect();
    json!({
        "request_id": r.id,
        "order_no": r.order_no,
        "note": r.note,
        "overall": r.overall,
        "findings": findings,
        "requested_at": rfc3339(from_ms(r.created_at)),
    })
}

impl Service {
    /// The verified customer asks support about their order `order_no`,
    /// with an optional note. Another customer's order, or none, is "not
    /// found" (nothing says whether it exists).
    pub async fn request_support(
        &self,
        verified: &Verified,
        order_no: &OrderNo,
        note: Option<CustomerNote>,
    ) -> Result<RequestOutcome, ServiceError> {
        let user = verified.user_id.clone();
        let order = self.get_order(order_no).await?;
        if order.user_id != user {
            return Err(ServiceError::not_found("order", order_no.as_str()));
        }
        // The check as the customer's page shows it: the user's check (its
        // stray locks), with this order's report even when it is older
        // than the orders the user's check covers.
        let user_report = self.user_health_check(&user).await?;
        let order_report = match user_report.orders.iter().find(|r| &r.order_no == order_no) {
            Some(r) => r.clone(),
            None => self.order_health_check(order_no).await?,
        };
        let overview = self.user_overview(&user).await?;
        let check = customer_check(
            &UserHealthReport {
                orders: vec![order_report],
                ..user_report
            },
            &overview.coupons,
        );
        let findings = findings_of(&check, order_no);
        let now = self.now();
        let row = RequestRow {
            id: new_id("spr", to_ms(now)),
            user_id: user,
            order_no: order_no.clone(),
            note: note.map(|n| n.as_str().to_string()),
            overall: overall(&findings).as_str().to_string(),
            findings: serde_json::to_string(&findings).unwrap_or_else(|_| "[]".into()),
            status: RequestStatus::Open.as_str().to_string(),
            created_at: to_ms(now),
            handled_at: None,
            handled_by: None,
        };
        let data = webhook_data(&row, &findings).to_string();
        let outcome = self
            .write(None, move |c| {
                let row = row.clone();
                let data = data.clone();
                Box::pin(async move {
                    advisory_lock(c, &format!("support-request:{}", row.order_no)).await?;
                    let last = store::latest_for_order(c, &row.order_no)
                        .await?
                        .map(from_ms);
                    let now = from_ms(row.created_at);
                    if !may_request(last, now) {
                        let at = last.unwrap_or(now);
                        return Ok(RequestOutcome::AlreadySent {
                            at,
                            next_at: next_request_at(Some(at)).unwrap_or(now),
                        });
                    }
                    let status = orders::get(c, &row.order_no)
                        .await?
                        .ok_or_else(|| ServiceError::not_found("order", row.order_no.as_str()))?
                        .status;
                    store::insert(c, &row).await?;
                    events::insert(
                        c,
                        &NewEvent {
                            subject: "order",
                            coupon_id: None,
                            order_no: Some(&row.order_no),
                            from_status: Some(status.as_str()),
                            to_status: status.as_str(),
                            action: EventAction::SupportRequested.as_str(),
                            actor: CUSTOMER_ACTOR,
                            reason: row.note.as_deref(),
                            request_id: None,
                            address: None,
                            trace_id: None,
                            at_ms: row.created_at,
                        },
                    )
                    .await?;
                    outbox::insert_many(
                        c,
                        &[NewMessage {
                            event_type: SUPPORT_REQUESTED,
                            user_id: Some(row.user_id.clone()),
                            subject_id: Some(row.id.clone()),
                            payload: data,
                            created_at: row.created_at,
                        }],
                    )
                    .await?;
                    Ok(RequestOutcome::Sent {
                        id: row.id,
                        at: now,
                    })
                })
            })
            .await?;
        outcome.fresh().ok_or_else(|| {
            ServiceError::IllegalTransition("a support request is never replayed".into())
        })
    }

    /// When the verified customer last asked about each of their orders
    /// within the last [`REQUEST_GAP_SECONDS`]: the page shows "sent"
    /// there instead of the button.
    pub async fn recent_support_requests(
        &self,
        verified: &Verified,
    ) -> Result<HashMap<OrderNo, DateTime<Utc>>, ServiceError> {
        let user = verified.user_id.clone();
        let since_ms = to_ms(self.now()) - REQUEST_GAP_SECONDS * 1000;
        let rows = self
            .read(move |c| {
                let user = user.clone();
                Box::pin(async move {
                    Ok(store::latest_of_user_since(c, &user, since_ms, PAGE_ORDERS).await?)
                })
            })
            .await?;
        Ok(rows.into_iter().map(|(no, at)| (no, from_ms(at))).collect())
    }

    /// The queue: requests of `status` (open: oldest first; handled:
    /// newest first), at most [`QUEUE_PAGE`], and how many there are.
    pub async fn support_queue(
        &self,
        status: RequestStatus,
    ) -> Result<(Vec<SupportRequestView>, i64), ServiceError> {
        let (rows, n) = self
            .read(move |c| {
                Box::pin(async move {
                    let rows = store::list(c, status.as_str(), QUEUE_PAGE).await?;
                    let n = store::count(c, status.as_str()).await?;
                    Ok((rows, n))
                })
            })
            .await?;
        Ok((rows.into_iter().map(SupportRequestView::of).collect(), n))
    }

    /// How many requests wait in the queue.
    pub async fn open_support_requests(&self) -> Result<i64, ServiceError> {
        self.read(move |c| {
            Box::pin(async move { Ok(store::count(c, RequestStatus::Open.as_str()).await?) })
        })
        .await
    }

    /// One order's requests, newest first, at most [`ORDER_REQUESTS`].
    pub async fn order_support_requests(
        &self,
        order_no: &OrderNo,
    ) -> Result<Vec<SupportRequestView>, ServiceError> {
        let order_no = order_no.clone();
        let rows = self
            .read(move |c| {
                let order_no = order_no.clone();
                Box::pin(async move { Ok(store::for_order(c, &order_no, ORDER_REQUESTS).await?) })
            })
            .await?;
        Ok(rows.into_iter().map(SupportRequestView::of).collect())
    }

    /// A staff member (`ctx.actor`) marks an open request handled: one
    /// conditional update and an event row on the order. `Ok(None)` when
    /// it was not open any more (another staff member was first): nothing
    /// written. An unknown id is not found.
    pub async fn mark_support_request_handled(
        &self,
        ctx: &Ctx,
        id: &str,
    ) -> Result<Option<SupportRequestView>, ServiceError> {
        let (id, ctx) = (id.to_string(), ctx.clone());
        let now_ms = to_ms(self.now());
        let done = self
            .write(None, move |c| {
                let (id, ctx) = (id.clone(), ctx.clone());
                Box::pin(async move {
                    let row = store::get(c, &id)
                        .await?
                        .ok_or_else(|| ServiceError::not_found("support request", &id))?;
                    if !store::mark_handled(c, &id, &ctx.actor, now_ms).await? {
                        return Ok(None);
                    }
                    if let Some(order) = orders::get(c, &row.order_no).await? {
                        events::insert(
                            c,
                            &NewEvent {
                                subject: "order",
                                coupon_id: None,
                                order_no: Some(&row.order_no),
                                from_status: Some(order.status.as_str()),
                                to_status: order.status.as_str(),
                                action: EventAction::SupportRequestHandled.as_str(),
                                actor: &ctx.actor,
                                reason: None,
                                request_id: ctx.request_id.as_deref(),
                                address: ctx.address.as_deref(),
                                trace_id: ctx.trace_id(),
                                at_ms: now_ms,
                            },
                        )
                        .await?;
                    }
                    Ok(store::get(c, &id).await?)
                })
            })
            .await?;
        Ok(done.fresh().flatten().map(SupportRequestView::of))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::self_check::CustomerOrderCheck;

    fn finding(result: CheckResult, next: NextStep) -> CustomerFinding {
        CustomerFinding {
            result,
            message: crate::msg!("sc-coupon-ready"),
            coupon: Some("CODE1".into()),
            next,
        }
    }

    #[test]
    fn a_request_carries_its_orders_findings_and_the_stray_coupons_only() {
        let check = CustomerCheck {
            overall: CheckResult::Problem,
            orders: vec![
                CustomerOrderCheck {
                    order_no: OrderNo::from_stored("A".into()),
                    overall: CheckResult::Warning,
                    findings: vec![finding(CheckResult::Warning, NextStep::TakeNote)],
                },
                CustomerOrderCheck {
                    order_no: OrderNo::from_stored("B".into()),
                    overall: CheckResult::Problem,
                    findings: vec![finding(CheckResult::Problem, NextStep::ContactSupport)],
                },
            ],
            coupons: vec![finding(CheckResult::Problem, NextStep::ContactSupport)],
        };
        let f = findings_of(&check, &OrderNo::from_stored("A".into()));
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].scope, f[0].result, f[0].contact_support),
            (FindingScope::Order, CheckResult::Warning, false)
        );
        assert_eq!(
            (f[1].scope, f[1].result, f[1].contact_support),
            (FindingScope::Coupon, CheckResult::Problem, true)
        );
        assert_eq!(overall(&f), CheckResult::Problem);
        assert_eq!(finding_message(&f[0]).key, "sc-coupon-ready");
    }
}
