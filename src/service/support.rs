//! Support operations, shared by the JSON API and the staff console: the
//! one-click health check (一键检测) of an order or a user, the repair
//! actions (release a stuck lock, invalidate a coupon, issue a compensation
//! coupon) and the console's search, coupon lists, CSV export and user page.
//!
//! Every action is one transaction through [`Service::write`]: it re-reads
//! the rows, changes them with conditional updates, and writes event rows
//! with the caller's actor and the required reason. Every read is a bounded
//! set of index lookups (see `store::search`).

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use super::jobs::Deadline;
use super::orders::{kind_of, order_view, parse_reason, status_of};
use super::views::{CouponView, OrderView, stored_status};
use super::{Ctx, Executed, IdempotencyRequest, Refusal, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::campaign::{PaymentWindow, Policy};
use crate::domain::coupon::{CouponStatus, effective_status, release_target};
use crate::domain::health::{
    self, CampaignFacts, Check, CheckResult, CouponFacts, HealthFacts, OrderFacts, PartnerOrder,
    StockFacts, SuggestedAction,
};
use crate::domain::ids::{OrderNo, UserId, new_coupon_code, new_id};
use crate::domain::money::{Cents, MAX_CENTS};
use crate::domain::order::{CouponLockStatus, OrderMoney};
use crate::domain::staff::{Role, StaffName};
use crate::domain::time::{from_ms, to_ms};
use crate::store::archive;
use crate::store::campaigns;
use crate::store::coupons::{self, CouponChange, CouponRow};
use crate::store::ledger::{self, NewEntry};
use crate::store::orders::{self, OrderRow};
use crate::store::outbox::{self, NewMessage};
use crate::store::search::{self, CouponPageQuery, OrderLockRelease};
use crate::store::templates;

/// Orders a user health check looks at (the most recent).
pub const USER_HEALTH_ORDERS: i64 = 50;
/// Locked coupons of a user a user health check looks at.
const USER_HEALTH_LOCKS: i64 = 100;
/// Coupons on the console's user page (newest first, live then archived).
pub const OVERVIEW_COUPONS: i64 = 500;
/// Orders on the console's user page (newest first).
pub const OVERVIEW_ORDERS: i64 = 200;
/// Largest page of [`Service::list_coupons`].
pub const MAX_PAGE: i64 = 200;
/// Largest CSV export.
pub const MAX_EXPORT_ROWS: usize = 100_000;
/// Rows per batch of a CSV export.
const EXPORT_BATCH: i64 = 1000;
/// Shortest and longest validity of a compensation coupon.
pub const MIN_COMPENSATION_SECONDS: i64 = 60;
/// See [`MIN_COMPENSATION_SECONDS`].
pub const MAX_COMPENSATION_SECONDS: i64 = 365 * 24 * 3600;
/// Longest search query.
const MAX_QUERY_LEN: usize = 128;

/// On whose authority an action runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authority {
    /// A trusted shop backend calling the JSON API: may force a release and
    /// is not capped.
    Api,
    /// A signed-in staff member of the console, with their role.
    Staff { name: StaffName, role: Role },
}

impl Authority {
    fn may_force_release(&self) -> bool {
        match self {
            Authority::Api => true,
            Authority::Staff { role, .. } => role.may_force_release(),
        }
    }

    /// Invalidating voids a customer's coupon for good: operators and up.
    fn may_invalidate(&self) -> bool {
        match self {
            Authority::Api => true,
            Authority::Staff { role, .. } => role.includes(Role::Operator),
        }
    }

    fn compensation_capped(&self) -> bool {
        match self {
            Authority::Api => false,
            Authority::Staff { role, .. } => role.compensation_capped(),
        }
    }
}

/// A suggested action with its parameters, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ActionView {
    /// `release_coupon`, `issue_compensation`, `cancel_order`, `repair_link`
    /// or `mark_coupon_used`.
    pub code: String,
    /// `release_coupon`, `repair_link`, `mark_coupon_used`: the coupon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coupon_id: Option<String>,
    /// `issue_compensation`: the customer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// `issue_compensation`, `cancel_order`, `repair_link`,
    /// `mark_coupon_used`: the order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_no: Option<String>,
    /// The suggested compensation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount_cents: Option<i64>,
}

impl From<&SuggestedAction> for ActionView {
    fn from(a: &SuggestedAction) -> Self {
        let mut v = ActionView {
            code: a.code().to_string(),
            coupon_id: None,
            user_id: None,
            order_no: None,
            amount_cents: None,
        };
        match a {
            SuggestedAction::ReleaseCoupon { coupon_id } => v.coupon_id = Some(coupon_id.clone()),
            SuggestedAction::IssueCompensation {
                user_id,
                order_no,
                amount_cents,
            } => {
                v.user_id = Some(user_id.clone());
                v.order_no = Some(order_no.clone());
                v.amount_cents = Some(*amount_cents);
            }
            SuggestedAction::CancelOrder { order_no } => v.order_no = Some(order_no.clone()),
            SuggestedAction::RepairLink {
                order_no,
                coupon_id,
            }
            | SuggestedAction::MarkCouponUsed {
                order_no,
                coupon_id,
            } => {
                v.order_no = Some(order_no.clone());
                v.coupon_id = Some(coupon_id.clone());
            }
        }
        v
    }
}

/// One check of a health report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct CheckView {
    /// `order_status`, `coupon_status`, `lock_link`, `coupon_validity`,
    /// `checkout_lock`, `template_stock` (orders) or `stray_lock` (users).
    pub name: String,
    /// `ok`, `warning` or `problem`.
    pub result: String,
    /// For the customer, in English.
    pub message: String,
    /// The same in Simplified Chinese.
    pub message_zh: String,
    /// `release_coupon`, `issue_compensation`, `cancel_order`, `repair_link`,
    /// `mark_coupon_used` or null.
    pub suggested_action: Option<String>,
    /// The suggested action with its parameters.
    pub action: Option<ActionView>,
}

impl From<Check> for CheckView {
    fn from(c: Check) -> Self {
        CheckView {
            name: c.name.to_string(),
            result: c.result.as_str().to_string(),
            message: c.message_en,
            message_zh: c.message_zh,
            suggested_action: c.suggested_action.as_ref().map(|a| a.code().to_string()),
            action: c.suggested_action.as_ref().map(ActionView::from),
        }
    }
}

/// `GET /orders/{order_no}/health-check`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthReport {
    /// The order checked.
    pub order_no: String,
    /// Its customer.
    pub user_id: String,
    /// The worst result of the checks: `ok`, `warning` or `problem`.
    pub overall: String,
    /// Every check, always all six, in a fixed order.
    pub checks: Vec<CheckView>,
}

/// A user's health: their most recent orders' reports, plus their locked
/// coupons whose orders are not live.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserHealthReport {
    /// The user checked.
    pub user_id: String,
    /// The worst result over every order and lock.
    pub overall: String,
    /// At most [`USER_HEALTH_ORDERS`], newest first.
    pub orders: Vec<HealthReport>,
    /// `stray_lock` problems: coupons locked to an order that is missing,
    /// over, or uses another coupon.
    pub locks: Vec<CheckView>,
}

/// A compensation coupon to issue.
#[derive(Debug, Clone, Default)]
pub struct CompensationInput {
    /// The coupon's fixed discount: 1 cent up to `MAX_CENTS`.
    pub value_cents: Option<i64>,
    /// How long the coupon lasts from now: 60 s to 365 days.
    pub valid_seconds: Option<i64>,
    /// Required, 1-500 characters; written to the ledger and the event.
    pub reason: Option<String>,
    /// The order this makes up for; must exist and belong to the user.
    pub order_no: Option<String>,
}

/// One thing a search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct SearchHit {
    /// `coupon`, `order` or `user`.
    pub kind: String,
    /// The coupon id, order number or user id.
    pub key: String,
    /// What to show in a list.
    pub label: String,
}

/// What a console search found: exactly one hit opens its page, several
/// are listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", content = "value", rename_all = "snake_case")]
pub enum SearchOutcome {
    /// Exactly one coupon (its id): open the coupon page.
    Coupon(String),
    /// Exactly one order (its number): open the order page.
    Order(String),
    /// Exactly one user (their id): open the user page.
    User(String),
    /// Several hits: list them.
    Many(Vec<SearchHit>),
    /// Nothing matched.
    Nothing,
}

/// One compensation ledger entry of an order.
#[derive(Debug, Clone, Serialize)]
pub struct CompensationEntry {
    pub at: String,
    /// `final_payment_deduction` or `coupon`.
    pub kind: String,
    pub amount_cents: i64,
    /// The compensation coupon, for kind `coupon`.
    pub coupon_id: Option<String>,
    pub reason: String,
    pub actor: String,
}

/// Filters of the console's coupon list. `status` is the effective status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CouponFilter {
    /// Effective status (`available` excludes coupons past `ends_at`,
    /// `expired` includes them).
    pub status: Option<CouponStatus>,
    /// Only this template's coupons.
    pub template_id: Option<String>,
    /// Only this user's coupons.
    pub user_id: Option<String>,
    /// Only coupons whose `ends_at` is before this.
    pub expiring_before: Option<DateTime<Utc>>,
}

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
    pub user_id: String,
    /// At most [`OVERVIEW_COUPONS`], newest first (archived ones last).
    pub coupons: Vec<CouponView>,
    /// At most [`OVERVIEW_ORDERS`], newest first.
    pub orders: Vec<OrderView>,
}

fn checkout_lapsed(o: &OrderRow, now: DateTime<Utc>) -> bool {
    crate::domain::order::checkout_lapsed(
        kind_of(o),
        status_of(o),
        o.checkout_lock_expires_at.map(from_ms),
        now,
    )
}

pub(crate) fn coupon_facts(r: &CouponRow) -> CouponFacts {
    CouponFacts {
        id: r.id.clone(),
        user_id: r.user_id.clone(),
        stored_status: stored_status(&r.status),
        order_no: r.order_no.clone(),
        ends_at: from_ms(r.ends_at),
        template_id: r.template_id.clone(),
        kind: super::views::coupon_terms(r).rule.discount_kind(),
    }
}

fn partner(o: &OrderRow) -> PartnerOrder {
    PartnerOrder {
        order_no: o.order_no.clone(),
        status: status_of(o),
        coupon_id: o.coupon_id.clone(),
        coupon_lock_status: CouponLockStatus::parse(&o.coupon_lock_status)
            .unwrap_or(CouponLockStatus::None),
    }
}

async fn live_or_archived_coupon(
    c: &mut AnyConnection,
    id: &str,
) -> Result<Option<CouponRow>, ServiceError> {
    if let Some(r) = coupons::get(c, id).await? {
        return Ok(Some(r));
    }
    Ok(archive::get(c, id).await?)
}

/// The order as the pure health and repair rules see it.
pub(crate) fn order_facts(o: &OrderRow) -> OrderFacts {
    OrderFacts {
        order_no: o.order_no.clone(),
        user_id: o.user_id.clone(),
        kind: kind_of(o),
        status: status_of(o),
        coupon_id: o.coupon_id.clone(),
        coupon_lock_status: CouponLockStatus::parse(&o.coupon_lock_status)
            .unwrap_or(CouponLockStatus::None),
        money: OrderMoney {
            total: Cents::from_stored(o.total_cents),
            deposit: Cents::from_stored(o.deposit_cents),
            discount: Cents::from_stored(o.coupon_discount_cents),
            compensation: Cents::from_stored(o.compensation_cents),
        },
        discount_snapshot: Cents::from_stored(o.discount_snapshot_cents),
        checkout_lock_expires_at: o.checkout_lock_expires_at.map(from_ms),
    }
}

/// Gathers the facts about one order and runs the checks, inside the
/// caller's read transaction.
///
/// `stock_seen` caches the template stock facts per template for the rest
/// of the caller's read (a user's orders often share a template, and
/// counting a big template's coupons is the most expensive read here).
async fn order_report(
    c: &mut AnyConnection,
    o: &OrderRow,
    now: DateTime<Utc>,
    stock_seen: &mut HashMap<String, StockFacts>,
) -> Result<HealthReport, ServiceError> {
    let facts = order_facts(o);
    let coupon = match o.coupon_id.as_deref() {
        Some(id) => live_or_archived_coupon(c, id).await?,
        None => None,
    };
    let coupon_order = match coupon.as_ref().and_then(|r| r.order_no.as_deref()) {
        Some(other) if other != o.order_no => orders::get(c, other).await?.map(|p| partner(&p)),
        _ => None,
    };
    let strays: Vec<CouponFacts> = search::bound_to_order(c, &o.order_no)
        .await?
        .iter()
        .filter(|r| o.coupon_id.as_deref() != Some(r.id.as_str()))
        .map(coupon_facts)
        .collect();
    let campaign = match o.campaign_id.as_deref() {
        Some(id) => campaigns::get(c, id).await?.map(|r| CampaignFacts {
            window: PaymentWindow {
                starts: from_ms(r.final_payment_starts_at),
                ends: from_ms(r.final_payment_ends_at),
            },
            policy: Policy::parse(&r.policy).unwrap_or(Policy::Strict),
        }),
        None => None,
    };
    let stock = match coupon.as_ref().and_then(|r| r.template_id.clone()) {
        Some(template_id) => match stock_seen.get(&template_id) {
            Some(seen) => Some(seen.clone()),
            None => {
                let claimed = templates::claimed(c, &template_id).await?;
                let (checked_at, mismatch) = match crate::store::reconcile::latest_run(c).await? {
                    Some((run_id, finished_at)) => {
                        let found =
                            crate::store::reconcile::template_mismatch(c, run_id, &template_id)
                                .await?;
                        (
                            Some(from_ms(finished_at)),
                            found.map(|f| {
                                (f.stock_claimed.unwrap_or(0), f.stock_issued.unwrap_or(0))
                            }),
                        )
                    }
                    None => (None, None),
                };
                let facts = StockFacts {
                    template_id: template_id.clone(),
                    claimed,
                    checked_at,
                    mismatch,
                };
                stock_seen.insert(template_id, facts.clone());
                Some(facts)
            }
        },
        None => None,
    };
    let coupon_facts = coupon.as_ref().map(coupon_facts);
    let checks = health::check_order(&HealthFacts {
        order: &facts,
        coupon: coupon_facts.as_ref(),
        coupon_order: coupon_order.as_ref(),
        strays: &strays,
        campaign: campaign.as_ref(),
        stock: stock.as_ref(),
        now,
    });
    Ok(HealthReport {
        order_no: o.order_no.clone(),
        user_id: o.user_id.clone(),
        overall: health::overall(&checks).as_str().to_string(),
        checks: checks.into_iter().map(CheckView::from).collect(),
    })
}

fn worse(a: &str, b: &str) -> String {
    let rank = |s: &str| match s {
        "problem" => CheckResult::Problem,
        "warning" => CheckResult::Warning,
        _ => CheckResult::Ok,
    };
    rank(a).max(rank(b)).as_str().to_string()
}

fn parse_user(raw: &str) -> Result<UserId, ServiceError> {
    Ok(UserId::parse(raw.trim())?)
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

fn optional_key(field: &'static str, raw: Option<String>) -> Result<Option<String>, FieldError> {
    match raw.map(|s| s.trim().to_string()) {
        None => Ok(None),
        Some(s) if s.is_empty() => Ok(None),
        Some(s) if s.len() > 128 || s.chars().any(char::is_control) => {
            Err(FieldError::new(field, "must be at most 128 characters"))
        }
        Some(s) => Ok(Some(s)),
    }
}

/// One CSV field, RFC 4180: quoted when it holds a comma, quote or line
/// break, quotes doubled. A text that a spreadsheet would run as a formula
/// (OWASP's CSV injection rule: `=`, `+`, `-`, `@`, tab or carriage return
/// as the first character that is not a space, since spreadsheets skip
/// leading spaces) is prefixed with `'`.
pub fn csv_field(raw: &str) -> String {
    let first = raw.trim_start().chars().next();
    let text = if raw.starts_with(['\t', '\r'])
        || matches!(
            first,
            Some('=' | '+' | '-' | '@' | '＝' | '＋' | '－' | '＠')
        ) {
        format!("'{raw}")
    } else {
        raw.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

const CSV_HEADER: &str = "id,code,user_id,template_id,source,kind,value_cents,percent_off,max_discount_cents,min_order_cents,categories,status,starts_at,ends_at,order_no,locked_at,used_at,created_at";

fn csv_row(v: &CouponView) -> String {
    let num = |n: Option<i64>| n.map(|n| n.to_string()).unwrap_or_default();
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    [
        v.id.clone(),
        v.code.clone(),
        v.user_id.clone(),
        text(&v.template_id),
        v.source.clone(),
        v.kind.clone(),
        num(v.value_cents),
        num(v.percent_off),
        num(v.max_discount_cents),
        v.min_order_cents.to_string(),
        v.categories.join("|"),
        v.status.clone(),
        v.starts_at.clone(),
        v.ends_at.clone(),
        text(&v.order_no),
        text(&v.locked_at),
        text(&v.used_at),
        v.created_at.clone(),
    ]
    .iter()
    .map(|f| csv_field(f))
    .collect::<Vec<_>>()
    .join(",")
}

impl Service {
    /// The one-click health check of an order. Read-only.
    pub async fn order_health_check(&self, order_no: &str) -> Result<HealthReport, ServiceError> {
        let order_no = order_no.trim().to_string();
        let now = self.now();
        self.read(move |c| {
            let order_no = order_no.clone();
            Box::pin(async move {
                let o = orders::get(c, &order_no)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("order", &order_no))?;
                order_report(c, &o, now, &mut HashMap::new()).await
            })
        })
        .await
    }

    /// The health check of a user: their [`USER_HEALTH_ORDERS`] most recent
    /// orders, and their locked coupons whose orders are not live.
    /// Read-only; an unknown user has an empty, healthy report.
    pub async fn user_health_check(&self, user_id: &str) -> Result<UserHealthReport, ServiceError> {
        let user = parse_user(user_id)?;
        let now = self.now();
        self.read(move |c| {
            let user = user.clone();
            Box::pin(async move {
                let mut overall = CheckResult::Ok.as_str().to_string();
                let mut reports = Vec::new();
                let mut stock_seen = HashMap::new();
                for o in search::orders_for_user(c, user.as_str(), USER_HEALTH_ORDERS).await? {
                    let r = order_report(c, &o, now, &mut stock_seen).await?;
                    overall = worse(&overall, &r.overall);
                    reports.push(r);
                }
                let mut locks = Vec::new();
                for r in search::locked_for_user(c, user.as_str(), USER_HEALTH_LOCKS).await? {
                    let order = match r.order_no.as_deref() {
                        Some(no) => orders::get(c, no).await?.map(|o| partner(&o)),
                        None => None,
                    };
                    if let Some(check) = health::stray_lock(&coupon_facts(&r), order.as_ref()) {
                        let v = CheckView::from(check);
                        overall = worse(&overall, &v.result);
                        locks.push(v);
                    }
                }
                Ok(UserHealthReport {
                    user_id: user.as_str().to_string(),
                    overall,
                    orders: reports,
                    locks,
                })
            })
        })
        .await
    }

    /// Releases a `locked` coupon (`available` while valid, else
    /// `expired`). Refused with `order_active` while its order is live and
    /// still holds it, unless `force`; forcing needs an operator (or the
    /// API) and detaches the coupon from the order in the same transaction,
    /// so the order goes on without the discount. A normal order whose
    /// checkout lock lapsed no longer counts as live.
    pub async fn release_coupon(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        coupon_id: String,
        reason: Option<String>,
        force: bool,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let reason = parse_reason(reason)?;
        if force && !authority.may_force_release() {
            return Err(ServiceError::Forbidden(
                "only an operator may force the release of a coupon whose order is live".into(),
            ));
        }
        let op = self.op(ctx);
        let result = self
            .write(idem, move |c| {
                let op = op.clone();
                let coupon_id = coupon_id.clone();
                let reason = reason.clone();
                Box::pin(async move {
                    let now_ms = to_ms(op.now);
                    let coupon = load_live_coupon(c, &coupon_id).await?;
                    let status = stored_status(&coupon.status);
                    if status != CouponStatus::Locked {
                        return Err(ServiceError::refused(
                            Refusal::CouponNotAvailable,
                            format!(
                                "coupon {coupon_id} is {}; only a locked coupon can be released",
                                effective_status(status, from_ms(coupon.ends_at), op.now).as_str()
                            ),
                        ));
                    }
                    let holder = match coupon.order_no.as_deref() {
                        Some(no) => orders::get(c, no)
                            .await?
                            .filter(|o| o.coupon_id.as_deref() == Some(coupon_id.as_str())),
                        None => None,
                    };
                    // The order whose lock record changes with the coupon: a
                    // live holder, or an order that is over but still shows
                    // the coupon as locked (the anomaly being repaired).
                    let recorded_holder = holder
                        .clone()
                        .filter(|o| status_of(o).is_live() || o.coupon_lock_status == "locked");
                    let live_holder = holder.filter(|o| status_of(o).is_live());
                    let active = live_holder
                        .as_ref()
                        .is_some_and(|o| !checkout_lapsed(o, op.now));
                    if active && !force {
                        let o = live_holder.as_ref().map(|o| (o.order_no.clone(), o.status.clone()));
                        let (no, st) = o.unwrap_or_default();
                        return Err(ServiceError::refused(
                            Refusal::OrderActive,
                            format!("order {no} is {st} and still holds this coupon; releasing it takes the customer's discount away (force)"),
                        ));
                    }
                    if let Some(o) = &recorded_holder
                        && !search::release_order_lock(
                            c,
                            &OrderLockRelease {
                                order_no: &o.order_no,
                                status: &o.status,
                                coupon_id: &coupon_id,
                                detach: active,
                                action: if active { "force_release_coupon" } else { "release_coupon" },
                                actor: &op.ctx.actor,
                                reason: Some(&reason),
                                request_id: op.ctx.request_id.as_deref(),
                                address: op.ctx.address.as_deref(),
                                now_ms,
                            },
                        )
                        .await?
                    {
                        return Err(ServiceError::refused(
                            Refusal::InvalidOrderStatus,
                            format!("order {} changed meanwhile; read it again", o.order_no),
                        ));
                    }
                    let to = release_target(from_ms(coupon.ends_at), op.now);
                    let changed = coupons::transition(
                        c,
                        &CouponChange {
                            coupon_id: &coupon_id,
                            from: CouponStatus::Locked,
                            to,
                            order_no: coupon.order_no.as_deref(),
                            action: if active { "force_release" } else { "staff_release" },
                            actor: &op.ctx.actor,
                            reason: Some(&reason),
                            request_id: op.ctx.request_id.as_deref(),
                            address: op.ctx.address.as_deref(),
                            now_ms,
                        },
                    )
                    .await?;
                    if !changed {
                        return Err(ServiceError::refused(
                            Refusal::CouponNotAvailable,
                            "the coupon changed meanwhile; read it again",
                        ));
                    }
                    reload_coupon(c, &coupon_id, op.now).await
                })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result
            && v.status == CouponStatus::Available.as_str()
            && let Ok(ends_at) = crate::domain::time::parse_rfc3339(&v.ends_at)
        {
            self.schedule(ends_at, Deadline::CouponEnd(v.id.clone()));
        }
        result
    }

    /// The compensation ledger entries of an order, oldest first: final
    /// payment deductions and compensation coupons issued for it.
    pub async fn order_compensations(
        &self,
        order_no: &str,
    ) -> Result<Vec<CompensationEntry>, ServiceError> {
        let order_no = order_no.to_string();
        let rows = self
            .read(move |c| {
                let no = order_no.clone();
                Box::pin(async move { Ok(crate::store::ledger::for_order(c, &no).await?) })
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| CompensationEntry {
                at: crate::domain::time::rfc3339(from_ms(r.at)),
                kind: r.kind,
                amount_cents: r.amount_cents,
                coupon_id: r.coupon_id,
                reason: r.reason,
                actor: r.actor,
            })
            .collect())
    }

    /// Cancels an order on `authority`: the API and operators may cancel
    /// any unpaid order; support staff only a normal order whose checkout
    /// lock lapsed (it can no longer be paid). The cancel itself is
    /// [`Service::cancel`]: order `closed`, its coupon released in the same
    /// transaction. `reason` is required.
    pub async fn cancel_order_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        order_no: String,
        reason: Option<String>,
    ) -> Result<Executed<OrderView>, ServiceError> {
        let reason = parse_reason(reason)?;
        if let Authority::Staff { role, .. } = authority {
            let now = self.now();
            let no = order_no.clone();
            // Safe to decide before the write: a lapsed checkout stays
            // lapsed (time only moves on, and a lapsed order cannot be paid).
            let lapsed = self
                .read(move |c| {
                    let no = no.clone();
                    Box::pin(async move {
                        Ok(orders::get(c, &no)
                            .await?
                            .is_some_and(|o| checkout_lapsed(&o, now)))
                    })
                })
                .await?;
            if !role.may_cancel_order(lapsed) {
                return Err(ServiceError::Forbidden(
                    "cancelling an order needs the operator role, unless its checkout lock lapsed"
                        .into(),
                ));
            }
        }
        self.cancel(ctx, idem, order_no, Some(reason)).await
    }

    /// Invalidates (voids) an `available` coupon. A coupon past its end is
    /// already `expired` and is refused like a locked or used one
    /// (`coupon_not_available`). Staff need the operator role.
    pub async fn invalidate_coupon(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        coupon_id: String,
        reason: Option<String>,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let reason = parse_reason(reason)?;
        if !authority.may_invalidate() {
            return Err(ServiceError::Forbidden(
                "only an operator may invalidate a coupon".into(),
            ));
        }
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let op = op.clone();
            let coupon_id = coupon_id.clone();
            let reason = reason.clone();
            Box::pin(async move {
                let coupon = load_live_coupon(c, &coupon_id).await?;
                let status = effective_status(
                    stored_status(&coupon.status),
                    from_ms(coupon.ends_at),
                    op.now,
                );
                if status != CouponStatus::Available {
                    return Err(ServiceError::refused(
                        Refusal::CouponNotAvailable,
                        format!(
                            "coupon {coupon_id} is {}; only an available coupon can be invalidated",
                            status.as_str()
                        ),
                    ));
                }
                let changed = coupons::transition(
                    c,
                    &CouponChange {
                        coupon_id: &coupon_id,
                        from: CouponStatus::Available,
                        to: CouponStatus::Invalidated,
                        order_no: None,
                        action: "invalidate",
                        actor: &op.ctx.actor,
                        reason: Some(&reason),
                        request_id: op.ctx.request_id.as_deref(),
                        address: op.ctx.address.as_deref(),
                        now_ms: to_ms(op.now),
                    },
                )
                .await?;
                if !changed {
                    return Err(ServiceError::refused(
                        Refusal::CouponNotAvailable,
                        "the coupon changed meanwhile; read it again",
                    ));
                }
                reload_coupon(c, &coupon_id, op.now).await
            })
        })
        .await
    }

    /// Issues a fixed-amount compensation coupon to `user_id`, outside any
    /// stock (`source = compensation`, no template), recorded in the
    /// compensation ledger with its order, amount, reason and actor. Staff
    /// with the `support` role are capped per coupon and per UTC day (the
    /// day's sum is read from the ledger inside the same transaction).
    pub async fn issue_compensation(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        user_id: String,
        input: CompensationInput,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let user = parse_user(&user_id)?;
        let value = match input.value_cents {
            Some(v) if (1..=MAX_CENTS).contains(&v) => v,
            _ => {
                return Err(FieldError::new(
                    "value_cents",
                    format!("is required, 1 to {MAX_CENTS}"),
                )
                .into());
            }
        };
        let seconds = match input.valid_seconds {
            Some(s) if (MIN_COMPENSATION_SECONDS..=MAX_COMPENSATION_SECONDS).contains(&s) => s,
            _ => {
                return Err(FieldError::new(
                    "valid_seconds",
                    format!(
                        "is required, {MIN_COMPENSATION_SECONDS} to {MAX_COMPENSATION_SECONDS} (365 days)"
                    ),
                )
                .into());
            }
        };
        let reason = parse_reason(input.reason)?;
        let order_no = match input.order_no.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(OrderNo::parse(raw)?),
        };
        let capped = authority.compensation_capped();
        let settings = self.settings().clone();
        if capped && value > settings.support_compensation_max_cents {
            return Err(ServiceError::refused(
                Refusal::CompensationLimitExceeded,
                format!(
                    "support staff may issue at most {} yuan per compensation coupon",
                    Cents::from_stored(settings.support_compensation_max_cents).yuan()
                ),
            ));
        }
        let op = self.op(ctx);
        let result = self
            .write(idem, move |c| {
                let op = op.clone();
                let user = user.clone();
                let reason = reason.clone();
                let order_no = order_no.clone();
                let settings = settings.clone();
                Box::pin(async move {
                    let now_ms = to_ms(op.now);
                    if let Some(no) = &order_no {
                        let o = orders::get(c, no.as_str())
                            .await?
                            .ok_or_else(|| ServiceError::not_found("order", no.as_str()))?;
                        if o.user_id != user.as_str() {
                            return Err(ServiceError::refused(
                                Refusal::OrderNotOwned,
                                format!("order {no} belongs to another user"),
                            ));
                        }
                    }
                    if capped {
                        search::lock_actor_for_caps(c, &op.ctx.actor).await?;
                        let day = op.now.date_naive();
                        let start = day
                            .and_hms_opt(0, 0, 0)
                            .map(|t| t.and_utc())
                            .unwrap_or(op.now);
                        let end = start + Duration::days(1);
                        let today =
                            search::compensation_issued_by(c, &op.ctx.actor, to_ms(start), to_ms(end))
                                .await?;
                        if today.saturating_add(value) > settings.support_compensation_daily_cents {
                            return Err(ServiceError::refused(
                                Refusal::CompensationLimitExceeded,
                                format!(
                                    "support staff may issue at most {} yuan of compensation per day; {} yuan issued today",
                                    Cents::from_stored(settings.support_compensation_daily_cents).yuan(),
                                    Cents::from_stored(today).yuan()
                                ),
                            ));
                        }
                    }
                    let mut row = CouponRow {
                        id: new_id("cpn", now_ms),
                        code: new_coupon_code(),
                        user_id: user.as_str().to_string(),
                        template_id: None,
                        source: "compensation".into(),
                        kind: "fixed".into(),
                        value_cents: Some(value),
                        percent_off: None,
                        max_discount_cents: None,
                        min_order_cents: 0,
                        categories: "[]".into(),
                        status: CouponStatus::Available.as_str().into(),
                        starts_at: now_ms,
                        ends_at: to_ms(op.now + Duration::seconds(seconds)),
                        order_no: None,
                        locked_at: None,
                        used_at: None,
                        created_at: now_ms,
                        updated_at: now_ms,
                    };
                    super::claims::insert_coupon(c, &mut row, "compensation", &op.ctx, Some(&reason))
                        .await?;
                    ledger::insert(
                        c,
                        &NewEntry {
                            user_id: user.as_str(),
                            order_no: order_no.as_ref().map(OrderNo::as_str),
                            coupon_id: Some(&row.id),
                            kind: "coupon",
                            amount_cents: value,
                            reason: &reason,
                            actor: &op.ctx.actor,
                            request_id: op.ctx.request_id.as_deref(),
                            at_ms: now_ms,
                        },
                    )
                    .await?;
                    let view = CouponView::from_row(row, op.now);
                    outbox::insert_many(
                        c,
                        &[NewMessage {
                            event_type: "compensation.issued",
                            user_id: Some(view.user_id.clone()),
                            subject_id: Some(view.id.clone()),
                            payload: serde_json::to_string(&view).unwrap_or_else(|_| "{}".into()),
                            created_at: now_ms,
                        }],
                    )
                    .await?;
                    Ok(view)
                })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result
            && let Ok(ends_at) = crate::domain::time::parse_rfc3339(&v.ends_at)
        {
            self.schedule(ends_at, Deadline::CouponEnd(v.id.clone()));
        }
        result
    }

    /// The console's search box: a coupon id, a coupon code (any case,
    /// dashes optional), an order number or a user id, in the live and
    /// archive tables. One hit names its page; several are listed.
    pub async fn search(&self, query: &str) -> Result<SearchOutcome, ServiceError> {
        let q = query.trim().to_string();
        if q.is_empty() || q.len() > MAX_QUERY_LEN || q.chars().any(char::is_control) {
            return Err(
                FieldError::new("q", format!("must be 1 to {MAX_QUERY_LEN} characters")).into(),
            );
        }
        let now = self.now();
        let hits = self
            .read(move |c| {
                let q = q.clone();
                Box::pin(async move {
                    let mut hits: Vec<SearchHit> = Vec::new();
                    let mut coupon_ids = Vec::new();
                    if search::coupon_exists(c, &q).await? {
                        coupon_ids.push(q.clone());
                    }
                    if let Some(id) = search::coupon_id_by_code(c, &as_code(&q)).await?
                        && !coupon_ids.contains(&id)
                    {
                        coupon_ids.push(id);
                    }
                    for id in coupon_ids {
                        if let Some(r) = live_or_archived_coupon(c, &id).await? {
                            let st =
                                effective_status(stored_status(&r.status), from_ms(r.ends_at), now);
                            hits.push(SearchHit {
                                kind: "coupon".into(),
                                label: format!("{} · {} · {}", r.code, st.label_zh(), r.user_id),
                                key: r.id,
                            });
                        }
                    }
                    if let Some(o) = orders::get(c, &q).await? {
                        hits.push(SearchHit {
                            kind: "order".into(),
                            label: format!("{} · {} · {}", o.order_no, o.status, o.user_id),
                            key: o.order_no,
                        });
                    }
                    if search::user_exists(c, &q).await? {
                        hits.push(SearchHit {
                            kind: "user".into(),
                            label: q.clone(),
                            key: q.clone(),
                        });
                    }
                    Ok(hits)
                })
            })
            .await?;
        Ok(match hits.len() {
            0 => SearchOutcome::Nothing,
            1 => {
                let h = hits.into_iter().next().map(|h| (h.kind, h.key));
                match h {
                    Some((kind, key)) if kind == "coupon" => SearchOutcome::Coupon(key),
                    Some((kind, key)) if kind == "order" => SearchOutcome::Order(key),
                    Some((_, key)) => SearchOutcome::User(key),
                    None => SearchOutcome::Nothing,
                }
            }
            _ => SearchOutcome::Many(hits),
        })
    }

    /// One page of coupons matching `filter` (effective status), ordered by
    /// `(ends_at, id)`, after the opaque cursor `after`. `limit` 1-200.
    /// Covers the live table (archived coupons are terminal and old; search
    /// and the user page find them).
    pub async fn list_coupons(
        &self,
        filter: CouponFilter,
        after: Option<String>,
        limit: i64,
    ) -> Result<CouponPage, ServiceError> {
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(FieldError::new("limit", format!("must be 1 to {MAX_PAGE}")).into());
        }
        let template_id = optional_key("template_id", filter.template_id)?;
        let user_id = optional_key("user_id", filter.user_id)?;
        let after = match after.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(raw) => Some(parse_cursor(raw)?),
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
                                    template_id: template_id.as_deref(),
                                    user_id: user_id.as_deref(),
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

    /// The coupons matching `filter` as CSV (RFC 4180, header row first),
    /// at most `max_rows` (1 to 100,000), read in keyset batches of 1000.
    pub async fn export_coupons_csv(
        &self,
        filter: CouponFilter,
        max_rows: usize,
    ) -> Result<String, ServiceError> {
        if !(1..=MAX_EXPORT_ROWS).contains(&max_rows) {
            return Err(
                FieldError::new("max_rows", format!("must be 1 to {MAX_EXPORT_ROWS}")).into(),
            );
        }
        let mut out = String::from(CSV_HEADER);
        out.push_str("\r\n");
        let mut written = 0usize;
        let mut after = None;
        while written < max_rows {
            let want = i64::try_from(max_rows - written)
                .unwrap_or(EXPORT_BATCH)
                .min(EXPORT_BATCH);
            let page = self.list_coupons_batch(filter.clone(), after, want).await?;
            for v in &page.coupons {
                out.push_str(&csv_row(v));
                out.push_str("\r\n");
            }
            written += page.coupons.len();
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        Ok(out)
    }

    /// [`Service::list_coupons`] without the console's page-size cap.
    async fn list_coupons_batch(
        &self,
        filter: CouponFilter,
        after: Option<String>,
        limit: i64,
    ) -> Result<CouponPage, ServiceError> {
        let mut page = CouponPage {
            coupons: Vec::new(),
            next: after,
        };
        let mut left = limit;
        while left > 0 {
            let part = self
                .list_coupons(filter.clone(), page.next.clone(), left.min(MAX_PAGE))
                .await?;
            left -= part.coupons.len() as i64;
            page.coupons.extend(part.coupons);
            page.next = part.next;
            if page.next.is_none() {
                break;
            }
        }
        Ok(page)
    }

    /// The console's user page: the user's coupons (newest first, live then
    /// archived, at most 500) and orders (newest first, at most 200).
    pub async fn user_overview(&self, user_id: &str) -> Result<UserOverview, ServiceError> {
        let user = parse_user(user_id)?;
        let now = self.now();
        self.read(move |c| {
            let user = user.clone();
            Box::pin(async move {
                let mut coupon_rows =
                    coupons::list_for_user(c, user.as_str(), None, to_ms(now), OVERVIEW_COUPONS)
                        .await?;
                let left = OVERVIEW_COUPONS - coupon_rows.len() as i64;
                if left > 0 {
                    coupon_rows.extend(archive::list_for_user(c, user.as_str(), None, left).await?);
                }
                let mut orders = Vec::new();
                for o in search::orders_for_user(c, user.as_str(), OVERVIEW_ORDERS).await? {
                    orders.push(order_view(c, o, now, false).await?);
                }
                Ok(UserOverview {
                    user_id: user.as_str().to_string(),
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

/// A coupon from the live table, for an action. An archived coupon is
/// terminal: `coupon_not_available`; an unknown one: 404.
async fn load_live_coupon(c: &mut AnyConnection, id: &str) -> Result<CouponRow, ServiceError> {
    if let Some(r) = coupons::get(c, id).await? {
        return Ok(r);
    }
    if let Some(r) = archive::get(c, id).await? {
        return Err(ServiceError::refused(
            Refusal::CouponNotAvailable,
            format!("coupon {id} is {} (archived)", r.status),
        ));
    }
    Err(ServiceError::not_found("coupon", id))
}

async fn reload_coupon(
    c: &mut AnyConnection,
    id: &str,
    now: DateTime<Utc>,
) -> Result<CouponView, ServiceError> {
    let row = coupons::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("coupon", id))?;
    Ok(CouponView::from_row(row, now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed_and_formulas_are_neutralised() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("=1+1"), "'=1+1");
        assert_eq!(csv_field(" =1+1"), "' =1+1");
        assert_eq!(csv_field("   @SUM(A1)"), "'   @SUM(A1)");
        assert_eq!(csv_field("\t=1"), "'\t=1");
        assert_eq!(csv_field(" -2"), "' -2");
        assert_eq!(csv_field("\u{3000}＝1+1"), "'\u{3000}＝1+1");
        assert_eq!(csv_field("a=1"), "a=1");
        assert_eq!(
            csv_field("2026-11-11T00:00:00.000Z"),
            "2026-11-11T00:00:00.000Z"
        );
    }

    #[test]
    fn codes_are_matched_in_any_case_with_or_without_dashes() {
        assert_eq!(as_code("k7qm-3xpa-9rtd"), "K7QM-3XPA-9RTD");
        assert_eq!(as_code("k7qm3xpa9rtd"), "K7QM-3XPA-9RTD");
        assert_eq!(as_code("P123"), "P123");
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_a_field_error() {
        let (e, id) = parse_cursor("1700000000000.cpn_abc").expect("cursor");
        assert_eq!((e, id.as_str()), (1_700_000_000_000, "cpn_abc"));
        for bad in ["", "x.y", "12", "12.", "abc"] {
            assert_eq!(parse_cursor(bad).map_err(|e| e.field), Err("after"));
        }
    }

    #[test]
    fn support_staff_cannot_force_or_invalidate_and_are_capped() {
        let name = StaffName::parse("amy").expect("name");
        let support = Authority::Staff {
            name: name.clone(),
            role: Role::Support,
        };
        let operator = Authority::Staff {
            name,
            role: Role::Operator,
        };
        assert!(!support.may_force_release() && !support.may_invalidate());
        assert!(support.compensation_capped());
        assert!(operator.may_force_release() && operator.may_invalidate());
        assert!(!operator.compensation_capped());
        assert!(Authority::Api.may_force_release() && !Authority::Api.compensation_capped());
    }

    #[test]
    fn the_worse_of_two_results_wins() {
        assert_eq!(worse("ok", "warning"), "warning");
        assert_eq!(worse("problem", "warning"), "problem");
        assert_eq!(worse("ok", "ok"), "ok");
    }
}
