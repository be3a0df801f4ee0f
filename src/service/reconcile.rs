//! Reconciliation: find every coupon–order anomaly with bounded,
//! index-driven scans, record runs and their findings, and repair a
//! finding (or all findings of a kind) through the ordinary service
//! operations, each of which re-checks its facts in its own transaction.
//!
//! The scans (each keyset-paged in batches of [`BATCH`], each stopping at
//! [`MAX_ROWS_PER_SCAN`] rows; partners fetched by primary key):
//! 1. locked coupons (`coupons_status_locked_at_idx`) and their orders
//!    (this is where a lock left on a closed, refunded, missing or paid
//!    order is found: every locked coupon is read, whatever its age);
//! 2. coupons used in the last [`USED_WINDOW_DAYS`] days
//!    (`coupons_status_updated_at_idx`) and their orders;
//! 3. live orders (`deposit_paid`, `pending_payment`; `orders_status_no_idx`)
//!    and the coupons they name;
//! 4. orders refunded by line in the last [`USED_WINDOW_DAYS`] days
//!    (`order_refunds_at_idx`), with their lines, split and coupon: the
//!    cart checks (split, refunds, coupon returned); the orders of scans 1
//!    and 2 get the same checks;
//! 5. templates' stock counters against the coupons they issued (at most
//!    [`MAX_TEMPLATES`] templates, each count bounded by its counter), and
//!    their report counters against a recount of their coupons (templates
//!    of at most [`MAX_RECOUNT_COUPONS`] coupons, [`MAX_RECOUNT_TOTAL`]
//!    coupons per run).
//!
//! The rules that classify each pair are in [`crate::domain::reconcile`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use super::support::{Authority, coupon_facts, further_of, order_facts, order_facts_read};
use super::{Ctx, Refusal, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::ids::{CouponId, OrderNo, TemplateId, UserId};
use crate::domain::order::OrderStatus;
use crate::domain::permissions::Permission;
use crate::domain::reconcile::{
    AnomalyKind, CartFacts, Finding, Fix, FurtherRecord, check_bound_coupon, check_budget,
    check_coupon_returned, check_further, check_live_order, check_refunds, check_split,
    check_template_counts, check_template_stock,
};
use crate::domain::report::Counts;
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::store::coupons::CouponRow;
use crate::store::orders::OrderRow;
use crate::store::{counters, reconcile as store, search, templates};

/// Rows per scan batch.
pub const BATCH: i64 = 500;
/// Most rows one scan reads per run; a larger backlog is reported as
/// truncated and the next run reads it again from the start.
pub const MAX_ROWS_PER_SCAN: usize = 100_000;
/// How far back used coupons are checked against their orders.
pub const USED_WINDOW_DAYS: i64 = 7;
/// Most templates whose stock counter is checked per run.
pub const MAX_TEMPLATES: i64 = 1_000;
/// Findings of a run the reconciliation page shows and the home page's
/// work queue counts (the rest of a run's findings are only counted).
pub const FINDINGS_SHOWN: i64 = 500;

/// Most coupons (live and archived, each) a template may have for its
/// report counters to be recounted in a run; bigger templates are
/// counted as `templates_not_recounted` (a recount reads every row).
pub const MAX_RECOUNT_COUPONS: i64 = 100_000;
/// Most coupons recounted per run over all templates.
pub const MAX_RECOUNT_TOTAL: i64 = 1_000_000;
/// Most findings recorded per run.
pub const MAX_FINDINGS: usize = 10_000;
/// Most findings one "repair all of this kind" works through.
pub const MAX_REPAIR_ALL: i64 = 1_000;

/// One anomaly, as `GET /reconciliation` shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AnomalyView {
    /// `locked_coupon_order_closed`, `locked_coupon_order_paid`,
    /// `order_active_coupon_not_locked`, `coupon_order_mismatch`,
    /// `stale_checkout_lock`, `used_coupon_order_unpaid`,
    /// `template_stock_mismatch`, `template_counts_mismatch`,
    /// `split_mismatch`, `refund_over_payable` or
    /// `coupon_not_returned_after_refunds`.
    pub kind: String,
    #[schema(value_type = Option<String>)]
    pub coupon_id: Option<CouponId>,
    #[schema(value_type = Option<String>)]
    pub order_no: Option<OrderNo>,
    #[schema(value_type = Option<String>)]
    pub user_id: Option<UserId>,
    /// What is wrong (English).
    pub detail: String,
    /// The same in Simplified Chinese.
    pub detail_zh: String,
    /// `release_coupon`, `repair_link`, `cancel_order`, `mark_coupon_used`,
    /// `return_coupon`, or null when a person has to decide.
    pub suggested_action: Option<String>,
}

impl From<&Finding> for AnomalyView {
    fn from(f: &Finding) -> Self {
        AnomalyView {
            kind: f.kind.as_str().to_string(),
            coupon_id: f.coupon_id.clone(),
            order_no: f.order_no.clone(),
            user_id: f.user_id.clone(),
            detail: crate::i18n::Lang::En.msg(&f.message),
            detail_zh: crate::i18n::Lang::Zh.msg(&f.message),
            suggested_action: (f.fix != Fix::None).then(|| f.fix.as_str().to_string()),
        }
    }
}

/// `GET /reconciliation`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReconcileReport {
    pub anomalies: Vec<AnomalyView>,
    /// Anomalies per kind (every kind present, zero or more).
    pub counts: BTreeMap<String, i64>,
    /// Rows each scan read.
    pub scanned: BTreeMap<String, i64>,
    /// Whether a scan stopped at its bound: run again after repairs.
    pub truncated: bool,
    pub checked_at: String,
}

/// A recorded run.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub id: i64,
    pub actor: String,
    pub started_at: String,
    pub finished_at: String,
    pub found: i64,
    pub found_by_kind: BTreeMap<String, i64>,
    pub repaired: i64,
    pub truncated: bool,
}

impl From<store::RunRow> for RunView {
    fn from(r: store::RunRow) -> Self {
        RunView {
            id: r.id,
            actor: r.actor,
            started_at: rfc3339(from_ms(r.started_at)),
            finished_at: rfc3339(from_ms(r.finished_at)),
            found: r.found,
            found_by_kind: serde_json::from_str(&r.found_by_kind).unwrap_or_default(),
            repaired: r.repaired,
            truncated: r.truncated != 0,
        }
    }
}

/// A recorded finding.
#[derive(Debug, Clone, Serialize)]
pub struct FindingView {
    pub id: i64,
    pub run_id: i64,
    pub kind: AnomalyKind,
    pub coupon_id: Option<CouponId>,
    pub order_no: Option<OrderNo>,
    pub user_id: Option<UserId>,
    pub template_id: Option<TemplateId>,
    /// What is wrong, for the reader to render in their language.
    pub message: crate::i18n::Msg,
    /// The repair the rules chose (`none`: a person decides).
    pub fix: Fix,
    pub repaired_at: Option<String>,
    pub repaired_by: Option<String>,
    /// Why the last repair attempt was refused.
    pub repair_note: Option<String>,
    /// The coupon's code, for pages (filled when read for a page).
    pub coupon_code: Option<String>,
    /// An open finding whose anomaly no longer holds (fixed from the
    /// health check, by a job or by hand since the run): who changed the
    /// coupon or order last, and how. `None`: still open, or repaired here.
    pub resolved: Option<Resolution>,
}

/// How an open finding came to be resolved without a new run: the last
/// change to its coupon (or order).
#[derive(Debug, Clone, Serialize)]
pub struct Resolution {
    pub actor: String,
    pub action: String,
    pub at: String,
}

impl FindingView {
    /// Neither repaired here nor resolved since: still needs a person.
    pub fn is_open(&self) -> bool {
        self.repaired_at.is_none() && self.resolved.is_none()
    }
}

impl From<store::FindingRow> for FindingView {
    fn from(f: store::FindingRow) -> Self {
        FindingView {
            id: f.id,
            run_id: f.run_id,
            kind: f.kind,
            coupon_id: f.coupon_id,
            order_no: f.order_no,
            user_id: f.user_id,
            template_id: f.template_id,
            message: crate::i18n::Msg::from_stored(&f.message_key, &f.message_args),
            fix: f.fix,
            repaired_at: f.repaired_at.map(|t| rfc3339(from_ms(t))),
            repaired_by: f.repaired_by,
            repair_note: f.repair_note,
            coupon_code: None,
            resolved: None,
        }
    }
}

/// Replaces every coupon, template or campaign id among the findings'
/// message arguments by its code or name (findings store ids, which people
/// must not have to read). The ids stay on the finding itself for links.
async fn name_ids(
    c: &mut sqlx::AnyConnection,
    views: &mut [FindingView],
) -> Result<(), ServiceError> {
    let mut ids: Vec<String> = views
        .iter()
        .flat_map(|v| v.message.args.iter())
        .filter_map(|(_, a)| match a {
            crate::i18n::Arg::Text(t) if is_server_id(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    ids.extend(
        views
            .iter()
            .filter_map(|v| v.coupon_id.as_ref().map(CouponId::to_string)),
    );
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let names = crate::store::names::people_names(c, &refs).await?;
    for v in views.iter_mut() {
        v.coupon_code = v
            .coupon_id
            .as_ref()
            .and_then(|id| names.get(id.as_str()).cloned());
        v.message = v.message.clone().map_args(|a| match a {
            crate::i18n::Arg::Text(t) => match names.get(t) {
                Some(name) => crate::i18n::Arg::Text(name.clone()),
                None => a.clone(),
            },
            other => other.clone(),
        });
    }
    Ok(())
}

/// Whether the anomaly of an open finding still holds on today's rows: the
/// same check as the run, on the coupon (or order) it names. `None`: it
/// still holds (or cannot be re-checked cheaply, like a template's stock);
/// otherwise who changed it last. Primary-key reads only.
async fn resolution(
    c: &mut sqlx::AnyConnection,
    f: &FindingView,
    now: DateTime<Utc>,
) -> Result<Option<Resolution>, ServiceError> {
    let holds = match f.kind {
        AnomalyKind::TemplateStockMismatch
        | AnomalyKind::TemplateCountsMismatch
        | AnomalyKind::CouponsOutOfStep
        | AnomalyKind::BudgetMismatch => true,
        AnomalyKind::SplitMismatch
        | AnomalyKind::RefundOverPayable
        | AnomalyKind::CouponNotReturnedAfterRefunds => {
            let Some(no) = f.order_no.as_ref() else {
                return Ok(None);
            };
            match crate::store::orders::get(c, no).await? {
                None => false,
                Some(o) => cart_findings_tx(c, std::slice::from_ref(&o))
                    .await?
                    .iter()
                    .any(|again| again.kind == f.kind),
            }
        }
        AnomalyKind::OrderActiveCouponNotLocked => {
            let Some(no) = f.order_no.as_ref() else {
                return Ok(None);
            };
            match crate::store::orders::get(c, no).await? {
                None => false,
                Some(o) => {
                    let coupon = match o.coupon_id.as_ref() {
                        Some(id) => crate::store::coupons::get(c, id).await?,
                        None => None,
                    };
                    check_live_order(
                        &order_facts(&o),
                        coupon.as_ref().map(coupon_facts).as_ref(),
                        now,
                    )
                    .is_some_and(|again| again.kind == f.kind)
                }
            }
        }
        _ => {
            let Some(id) = f.coupon_id.as_ref() else {
                return Ok(None);
            };
            match crate::store::coupons::get(c, id).await? {
                None => false,
                Some(coupon) => {
                    let order = match coupon.order_no.as_ref() {
                        Some(no) => crate::store::orders::get(c, no).await?,
                        None => None,
                    };
                    let named = match order.as_ref().and_then(|o| o.coupon_id.as_ref()) {
                        Some(other) if *other != coupon.id => {
                            crate::store::coupons::get(c, other).await?
                        }
                        _ => None,
                    };
                    let order_f = match order.as_ref() {
                        Some(o) => Some(order_facts_read(c, o).await?),
                        None => None,
                    };
                    check_bound_coupon(
                        &coupon_facts(&coupon),
                        order_f.as_ref(),
                        named.as_ref().map(coupon_facts).as_ref(),
                        now,
                    )
                    .is_some_and(|again| again.kind == f.kind)
                }
            }
        }
    };
    if holds {
        return Ok(None);
    }
    let last = crate::store::events::latest(c, f.coupon_id.as_ref(), f.order_no.as_ref()).await?;
    Ok(Some(match last {
        Some(e) => Resolution {
            actor: e.actor,
            action: e.action,
            at: rfc3339(from_ms(e.at)),
        },
        None => Resolution {
            actor: String::new(),
            action: String::new(),
            at: String::new(),
        },
    }))
}

/// Whether `t` is a whole server id (`cpn_`, `tpl_` or `cmp_` and more).
fn is_server_id(t: &str) -> bool {
    ["cpn_", "tpl_", "cmp_"]
        .iter()
        .any(|p| t.len() > p.len() && t.starts_with(p) && !t.contains(char::is_whitespace))
}

/// What "repair all of this kind" did.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct RepairAllOutcome {
    pub repaired: i64,
    /// Refused: the anomaly had changed, or needs a person.
    pub refused: i64,
}

/// Everything one scan pass found, before it is recorded.
struct Scan {
    findings: Vec<Finding>,
    scanned: BTreeMap<String, i64>,
    truncated: bool,
}

fn index_orders(rows: Vec<OrderRow>) -> HashMap<OrderNo, OrderRow> {
    rows.into_iter().map(|o| (o.order_no.clone(), o)).collect()
}

fn index_coupons(rows: Vec<CouponRow>) -> HashMap<CouponId, CouponRow> {
    rows.into_iter().map(|c| (c.id.clone(), c)).collect()
}

/// The cart checks of `orders` (those with stored lines): their lines and
/// splits in two statements, the coupons they name in one more.
async fn cart_findings_tx(
    c: &mut AnyConnection,
    orders: &[OrderRow],
) -> Result<Vec<Finding>, ServiceError> {
    let carts = crate::service::orders::load_carts(c, orders).await?;
    let ids: Vec<CouponId> = orders
        .iter()
        .filter_map(|o| o.coupon_id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let coupons = index_coupons(store::coupons_by_id(c, &ids).await?);
    let nos: Vec<OrderNo> = orders.iter().map(|o| o.order_no.clone()).collect();
    let mut further = further_of(c, &nos).await?;
    let mut findings = Vec::new();
    for (o, cart) in orders.iter().zip(&carts) {
        if !cart.stored {
            continue;
        }
        let mut split: BTreeMap<CouponId, crate::domain::money::Cents> = BTreeMap::new();
        for s in &cart.shares {
            let sum = split.entry(s.coupon_id.clone()).or_default();
            *sum = sum.saturating_add(s.cents);
        }
        let facts = CartFacts {
            split: split.into_iter().collect(),
            lines: cart
                .lines
                .iter()
                .enumerate()
                .map(|(i, l)| (l.line_id.to_string(), cart.payable(i), l.refunded_cents))
                .collect(),
        };
        let mut of = order_facts(o);
        of.further = further.remove(&o.order_no).unwrap_or_default();
        findings.extend(check_split(&of, &facts));
        findings.extend(check_refunds(&of, &facts));
        if let Some(coupon) = o.coupon_id.as_ref().and_then(|id| coupons.get(id)) {
            of.coupon_units = (o.refund_count > 0).then(|| cart.coupon_units(&coupon.id));
            findings.extend(check_coupon_returned(&of, &coupon_facts(coupon)));
        }
    }
    Ok(findings)
}

impl Service {
    /// Checks a batch of bound coupons against their orders (and the
    /// coupons those orders name), in one read.
    async fn check_coupon_batch(
        &self,
        batch: Vec<CouponRow>,
        now: DateTime<Utc>,
    ) -> Result<Vec<Finding>, ServiceError> {
        let nos: Vec<OrderNo> = batch
            .iter()
            .filter_map(|c| c.order_no.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let (orders, named, carts, further) = self
            .read(move |c| {
                let nos = nos.clone();
                Box::pin(async move {
                    let rows = store::orders_by_no(c, &nos).await?;
                    let carts = cart_findings_tx(c, &rows).await?;
                    let further = further_of(c, &nos).await?;
                    let orders = index_orders(rows);
                    let ids: Vec<CouponId> = orders
                        .values()
                        .filter_map(|o| o.coupon_id.clone())
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect();
                    let named = index_coupons(store::coupons_by_id(c, &ids).await?);
                    Ok((orders, named, carts, further))
                })
            })
            .await?;
        let mut findings = carts;
        findings.extend(batch.iter().filter_map(|coupon| {
            let order = coupon.order_no.as_deref().and_then(|n| orders.get(n));
            let order_f = order.map(|o| {
                let mut f = order_facts(o);
                f.further = further.get(&o.order_no).cloned().unwrap_or_default();
                f
            });
            let named_f = order
                .and_then(|o| o.coupon_id.as_deref())
                .filter(|id| *id != coupon.id)
                .and_then(|id| named.get(id))
                .map(coupon_facts);
            check_bound_coupon(
                &coupon_facts(coupon),
                order_f.as_ref(),
                named_f.as_ref(),
                now,
            )
        }));
        Ok(findings)
    }

    /// Scan 4: the orders refunded by line since `since_ms`, in pages of
    /// the refunds by time, each order checked once.
    /// Scan 6: every further coupon of an order (叠加), in pages of
    /// [`BATCH`] in `(order_no, position)` order, each against its coupon
    /// row and its order ([`check_further`]); at most
    /// [`MAX_ROWS_PER_SCAN`] rows.
    async fn scan_further_coupons(
        &self,
        findings: &mut Vec<Finding>,
    ) -> Result<(usize, bool), ServiceError> {
        let mut after: (OrderNo, i64) = (OrderNo::from_stored(String::new()), 0);
        let mut n = 0usize;
        loop {
            let cursor = after.clone();
            let found = self
                .read(move |c| {
                    let cursor = cursor.clone();
                    Box::pin(async move {
                        let page = crate::store::order_coupons::page_with_coupons(
                            c,
                            (&cursor.0, cursor.1),
                            BATCH,
                        )
                        .await?;
                        let nos: Vec<OrderNo> = page
                            .iter()
                            .map(|p| p.order_no.clone())
                            .collect::<BTreeSet<_>>()
                            .into_iter()
                            .collect();
                        let orders = index_orders(store::orders_by_no(c, &nos).await?);
                        let mut found = Vec::new();
                        for p in &page {
                            let Some(o) = orders.get(p.order_no.as_str()) else {
                                continue;
                            };
                            let record = FurtherRecord {
                                coupon_id: p.row.coupon_id.clone(),
                                record: p.row.lock_status,
                                coupon: p.coupon.as_ref().and_then(|(s, no)| {
                                    crate::domain::coupon::CouponStatus::parse(s)
                                        .map(|s| (s, no.clone()))
                                }),
                            };
                            found.extend(check_further(&order_facts(o), &record));
                        }
                        let last = page.last().map(|p| (p.order_no.clone(), p.row.position));
                        Ok((page.len(), last, found))
                    })
                })
                .await?;
            let (len, last, found) = found;
            findings.extend(found);
            n += len;
            if let Some(last) = last {
                after = last;
            }
            if (len as i64) < BATCH {
                return Ok((n, false));
            }
            if n >= MAX_ROWS_PER_SCAN {
                return Ok((n, true));
            }
        }
    }

    async fn scan_refunded_orders(
        &self,
        since_ms: i64,
        findings: &mut Vec<Finding>,
    ) -> Result<(usize, bool), ServiceError> {
        let batch = BATCH;
        let mut after: (i64, String) = (since_ms, String::new());
        let mut seen: BTreeSet<OrderNo> = BTreeSet::new();
        let mut n = 0usize;
        loop {
            let cursor = after.clone();
            let page = self
                .read(move |c| {
                    let cursor = cursor.clone();
                    Box::pin(async move {
                        Ok(store::refunded_orders_page(c, (cursor.0, &cursor.1), batch).await?)
                    })
                })
                .await?;
            let done = (page.len() as i64) < batch;
            if let Some((at, no)) = page.last() {
                after = (*at, no.to_string());
            }
            n += page.len();
            let nos: Vec<OrderNo> = page
                .into_iter()
                .map(|(_, no)| no)
                .filter(|no| seen.insert(no.clone()))
                .collect();
            if !nos.is_empty() {
                let found = self
                    .read(move |c| {
                        let nos = nos.clone();
                        Box::pin(async move {
                            let rows = store::orders_by_no(c, &nos).await?;
                            cart_findings_tx(c, &rows).await
                        })
                    })
                    .await?;
                findings.extend(found);
            }
            if done {
                return Ok((n, false));
            }
            if n >= MAX_ROWS_PER_SCAN {
                return Ok((n, true));
            }
        }
    }

    /// Runs every scan once. Read-only.
    async fn scan(&self) -> Result<Scan, ServiceError> {
        let now = self.now();
        let mut findings = Vec::new();
        let mut scanned = BTreeMap::new();
        let mut truncated = false;
        let batch = BATCH;

        // 1. Locked coupons, oldest lock first; then any without a time.
        let mut after: (i64, String) = (i64::MIN, String::new());
        let mut n = 0usize;
        loop {
            let cursor = after.clone();
            let page = self
                .read(move |c| {
                    let cursor = cursor.clone();
                    Box::pin(async move {
                        Ok(store::locked_page(c, (cursor.0, &cursor.1), batch).await?)
                    })
                })
                .await?;
            let done = (page.len() as i64) < batch;
            if let Some(last) = page.last() {
                after = (last.locked_at.unwrap_or(i64::MIN), last.id.to_string());
            }
            n += page.len();
            findings.extend(self.check_coupon_batch(page, now).await?);
            if done {
                break;
            }
            if n >= MAX_ROWS_PER_SCAN {
                truncated = true;
                break;
            }
        }
        let untimed = self
            .read(move |c| Box::pin(async move { Ok(store::locked_without_time(c, batch).await?) }))
            .await?;
        n += untimed.len();
        findings.extend(self.check_coupon_batch(untimed, now).await?);
        scanned.insert("locked_coupons".to_string(), n as i64);

        // 2. Coupons used recently.
        let since_ms = to_ms(now - Duration::days(USED_WINDOW_DAYS));
        let mut after: (i64, String) = (since_ms, String::new());
        let mut n = 0usize;
        loop {
            let cursor = after.clone();
            let page = self
                .read(move |c| {
                    let cursor = cursor.clone();
                    Box::pin(async move {
                        Ok(store::used_since_page(c, (cursor.0, &cursor.1), batch).await?)
                    })
                })
                .await?;
            let done = (page.len() as i64) < batch;
            if let Some(last) = page.last() {
                after = (last.updated_at, last.id.to_string());
            }
            n += page.len();
            findings.extend(self.check_coupon_batch(page, now).await?);
            if done {
                break;
            }
            if n >= MAX_ROWS_PER_SCAN {
                truncated = true;
                break;
            }
        }
        scanned.insert("used_coupons".to_string(), n as i64);

        // 3. Live orders and the coupons they name.
        let mut n = 0usize;
        for status in [OrderStatus::DepositPaid, OrderStatus::PendingPayment] {
            let status = status.as_str();
            let mut after = String::new();
            loop {
                let cursor = after.clone();
                let page = self
                    .read(move |c| {
                        let cursor = cursor.clone();
                        Box::pin(async move {
                            let orders =
                                store::orders_in_status_page(c, status, &cursor, batch).await?;
                            let ids: Vec<CouponId> =
                                orders.iter().filter_map(|o| o.coupon_id.clone()).collect();
                            let coupons = index_coupons(store::coupons_by_id(c, &ids).await?);
                            Ok((orders, coupons))
                        })
                    })
                    .await?;
                let (orders, coupons) = page;
                let done = (orders.len() as i64) < batch;
                if let Some(last) = orders.last() {
                    after = last.order_no.to_string();
                }
                n += orders.len();
                for o in &orders {
                    let coupon = o
                        .coupon_id
                        .as_deref()
                        .and_then(|id| coupons.get(id))
                        .map(coupon_facts);
                    if let Some(f) = check_live_order(&order_facts(o), coupon.as_ref(), now) {
                        findings.push(f);
                    }
                }
                if done {
                    break;
                }
                if n >= MAX_ROWS_PER_SCAN {
                    truncated = true;
                    break;
                }
            }
        }
        scanned.insert("live_orders".to_string(), n as i64);

        // 4. Orders refunded by line lately.
        let (n, cut) = self.scan_refunded_orders(since_ms, &mut findings).await?;
        truncated |= cut;
        scanned.insert("refunds".to_string(), n as i64);

        // 5. Template stock counters.
        let stock = self
            .read(move |c| Box::pin(async move { scan_template_stock_tx(c).await }))
            .await?;
        scanned.insert("templates".to_string(), stock.len() as i64);
        let not_recounted = stock.iter().filter(|t| t.3.is_none()).count();
        scanned.insert("templates_not_recounted".to_string(), not_recounted as i64);
        findings.extend(
            stock
                .iter()
                .filter_map(|(id, claimed, issued, _)| check_template_stock(id, *claimed, *issued)),
        );
        findings.extend(stock.iter().filter_map(|(id, _, _, counts)| {
            let (counted, recounted) = counts.as_ref()?;
            check_template_counts(id, counted, recounted)
        }));

        // 6. The further coupons of orders of several.
        let (n, cut) = self.scan_further_coupons(&mut findings).await?;
        truncated |= cut;
        scanned.insert("further_coupons".to_string(), n as i64);

        // 7. Budgets: their use, their reservations and the orders.
        let budgets = self
            .read(move |c| Box::pin(async move { scan_budgets_tx(c).await }))
            .await?;
        scanned.insert("budgets".to_string(), budgets.len() as i64);
        findings.extend(
            budgets
                .iter()
                .filter_map(|(id, used, reserved, live)| check_budget(id, *used, *reserved, *live)),
        );

        // The same pair can be seen from both sides: keep one of each.
        let mut seen = BTreeSet::new();
        findings.retain(|f| seen.insert((f.kind, f.coupon_id.clone(), f.order_no.clone())));
        findings.sort_by(|a, b| {
            (a.kind, &a.order_no, &a.coupon_id).cmp(&(b.kind, &b.order_no, &b.coupon_id))
        });
        Ok(Scan {
            findings,
            scanned,
            truncated,
        })
    }

    /// Finds every anomaly now, without recording anything
    /// (`GET /reconciliation`).
    pub async fn reconcile(&self) -> Result<ReconcileReport, ServiceError> {
        let now = self.now();
        let scan = self.scan().await?;
        Ok(ReconcileReport {
            counts: counts(&scan.findings),
            anomalies: scan.findings.iter().map(AnomalyView::from).collect(),
            scanned: scan.scanned,
            truncated: scan.truncated,
            checked_at: rfc3339(now),
        })
    }

    /// Finds every anomaly and records the run and its findings (at most
    /// [`MAX_FINDINGS`]), for the console and the history. `actor`:
    /// `job:reconcile` or `staff:<name>`.
    pub async fn run_reconciliation(&self, actor: &str) -> Result<RunView, ServiceError> {
        let started = self.now();
        let scan = self.scan().await?;
        let finished_ms = to_ms(self.now());
        let by_kind = counts(&scan.findings);
        let by_kind_json = serde_json::to_string(&by_kind).unwrap_or_else(|_| "{}".into());
        let found = scan.findings.len() as i64;
        let truncated = scan.truncated || scan.findings.len() > MAX_FINDINGS;
        let findings: Vec<Finding> = scan.findings.into_iter().take(MAX_FINDINGS).collect();
        let actor = actor.to_string();
        let actor_out = actor.clone();
        let record = RunRecord {
            actor,
            started,
            finished_ms,
            found,
            by_kind_json,
            truncated,
            findings,
        };
        let run_id = self
            .write(None, move |c| {
                let record = record.clone();
                Box::pin(async move { run_reconciliation_tx(c, record).await })
            })
            .await?
            .fresh()
            .unwrap_or_default();
        Ok(RunView {
            id: run_id,
            actor: actor_out,
            started_at: rfc3339(started),
            finished_at: rfc3339(from_ms(finished_ms)),
            found,
            found_by_kind: by_kind,
            repaired: 0,
            truncated,
        })
    }

    /// The latest run's findings still open now, per kind (kinds with
    /// none left out): not repaired from the reconciliation page and not
    /// resolved since by any other change (the health check's actions,
    /// jobs, the API), read exactly as the reconciliation page reads them
    /// (its first [`FINDINGS_SHOWN`]), so the home page's work queue and
    /// that page agree at every moment, without a new run.
    pub async fn open_findings_now(
        &self,
        run_id: i64,
    ) -> Result<Vec<(AnomalyKind, i64)>, ServiceError> {
        let findings = self
            .reconcile_findings(run_id, None, FINDINGS_SHOWN)
            .await?;
        Ok(AnomalyKind::ALL
            .into_iter()
            .map(|k| {
                let n = findings
                    .iter()
                    .filter(|f| f.kind == k && f.is_open())
                    .count();
                (k, i64::try_from(n).unwrap_or(i64::MAX))
            })
            .filter(|(_, n)| *n > 0)
            .collect())
    }

    /// The most recent runs, newest first (at most 100).
    pub async fn reconcile_runs(&self, limit: i64) -> Result<Vec<RunView>, ServiceError> {
        let limit = limit.clamp(1, 100);
        let rows = self
            .read(move |c| Box::pin(async move { Ok(store::runs(c, limit).await?) }))
            .await?;
        Ok(rows.into_iter().map(RunView::from).collect())
    }

    /// A run's findings, of one kind or all, at most `limit` (1-1000).
    pub async fn reconcile_findings(
        &self,
        run_id: i64,
        kind: Option<AnomalyKind>,
        limit: i64,
    ) -> Result<Vec<FindingView>, ServiceError> {
        let limit = limit.clamp(1, 1000);
        let now = self.now();
        self.read(move |c| {
            Box::pin(async move {
                let rows = store::findings(c, run_id, kind.map(AnomalyKind::as_str), limit).await?;
                let mut views: Vec<FindingView> = rows.into_iter().map(FindingView::from).collect();
                name_ids(c, &mut views).await?;
                for v in views.iter_mut().filter(|v| v.repaired_at.is_none()) {
                    v.resolved = resolution(c, v, now).await?;
                }
                Ok(views)
            })
        })
        .await
    }

    /// One finding.
    pub async fn reconcile_finding(&self, id: i64) -> Result<FindingView, ServiceError> {
        self.read(move |c| {
            Box::pin(async move {
                let Some(row) = store::finding(c, id).await? else {
                    return Ok(None);
                };
                let mut views = [FindingView::from(row)];
                name_ids(c, &mut views).await?;
                let [view] = views;
                Ok(Some(view))
            })
        })
        .await?
        .ok_or_else(|| ServiceError::not_found("finding", id.to_string()))
    }

    /// Repairs one finding with the fix the rules chose, through the
    /// ordinary operation (which re-checks everything in its own
    /// transaction: a changed anomaly is refused and nothing is written).
    /// Staff need the operator role. The finding is then marked repaired,
    /// or noted with the refusal.
    pub async fn repair_finding(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        finding_id: i64,
        reason: Option<String>,
    ) -> Result<(), ServiceError> {
        if !authority.may(Permission::RepairAnomalies) {
            return Err(ServiceError::Forbidden(
                "repairs from the reconciliation page need the operator role".into(),
            ));
        }
        let reason = crate::domain::reason::parse_reason(reason)?;
        let f = self.reconcile_finding(finding_id).await?;
        if f.repaired_at.is_some() {
            return Err(ServiceError::refused(
                Refusal::RepairNotApplicable,
                format!("finding {finding_id} is already repaired"),
            ));
        }
        let result = self.apply_fix(ctx, authority, &f, reason).await;
        let now_ms = to_ms(self.now());
        let by = ctx.actor.clone();
        let note = result.as_ref().err().map(|e| e.to_string());
        // Bookkeeping of the finding only; the repair itself is done (or
        // refused) already.
        self.write(None, move |c| {
            let (by, note) = (by.clone(), note.clone());
            Box::pin(async move {
                match &note {
                    None => {
                        store::mark_repaired(c, finding_id, &by, now_ms).await?;
                    }
                    Some(n) => store::note_refusal(c, finding_id, n).await?,
                }
                Ok(())
            })
        })
        .await?;
        result
    }

    async fn apply_fix(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        f: &FindingView,
        reason: String,
    ) -> Result<(), ServiceError> {
        let needs = |what: &'static str| {
            ServiceError::Invalid(FieldError::new("finding", format!("has no {what}")))
        };
        match f.fix {
            Fix::ReleaseCoupon => {
                let id = f.coupon_id.clone().ok_or_else(|| needs("coupon"))?;
                self.release_coupon(ctx, authority, None, id, Some(reason), false)
                    .await
                    .map(|_| ())
            }
            Fix::RepairLink => {
                let id = f.coupon_id.clone().ok_or_else(|| needs("coupon"))?;
                let no = f.order_no.clone().ok_or_else(|| needs("order"))?;
                self.repair_coupon_link(ctx, None, no, id, Some(reason))
                    .await
                    .map(|_| ())
            }
            Fix::CancelOrder => {
                let no = f.order_no.clone().ok_or_else(|| needs("order"))?;
                self.close_lapsed_order(ctx, no, reason).await
            }
            Fix::MarkCouponUsed => {
                let id = f.coupon_id.clone().ok_or_else(|| needs("coupon"))?;
                let no = f.order_no.clone().ok_or_else(|| needs("order"))?;
                self.mark_coupon_used(ctx, None, no, id, Some(reason))
                    .await
                    .map(|_| ())
            }
            Fix::ReturnCoupon => {
                let id = f.coupon_id.clone().ok_or_else(|| needs("coupon"))?;
                let no = f.order_no.clone().ok_or_else(|| needs("order"))?;
                self.return_coupon(ctx, None, no, id, Some(reason))
                    .await
                    .map(|_| ())
            }
            Fix::None => Err(ServiceError::refused(
                Refusal::RepairNotApplicable,
                "this anomaly has no automatic repair; a person has to look at it",
            )),
        }
    }

    /// Closes a normal order whose checkout lock lapsed (it can no longer
    /// be paid), releasing its coupon; refused when it is not (or no
    /// longer) such an order.
    pub async fn close_lapsed_order(
        &self,
        ctx: &Ctx,
        order_no: OrderNo,
        reason: String,
    ) -> Result<(), ServiceError> {
        let now = self.now();
        let no = order_no.clone();
        let lapsed = self
            .read(move |c| {
                let no = no.clone();
                Box::pin(async move {
                    Ok(crate::store::orders::get(c, &no).await?.is_some_and(|o| {
                        let f = order_facts(&o);
                        crate::domain::order::checkout_lapsed(
                            f.kind,
                            f.status,
                            f.checkout_lock_expires_at,
                            now,
                        )
                    }))
                })
            })
            .await?;
        if !lapsed {
            return Err(ServiceError::refused(
                Refusal::RepairNotApplicable,
                format!("order {order_no} is not an unpaid order past its checkout lock"),
            ));
        }
        // A lapsed checkout stays lapsed (time only moves on and a lapsed
        // order cannot be paid), so the cancel cannot undo a payment.
        self.cancel(ctx, None, order_no, Some(reason))
            .await
            .map(|_| ())
    }

    /// Repairs every unrepaired finding of `kind` in run `run_id` (at most
    /// [`MAX_REPAIR_ALL`]), each in its own transaction.
    pub async fn repair_all_of_kind(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        run_id: i64,
        kind: AnomalyKind,
        reason: Option<String>,
    ) -> Result<RepairAllOutcome, ServiceError> {
        if !authority.may(Permission::RepairAnomalies) {
            return Err(ServiceError::Forbidden(
                "repairs from the reconciliation page need the operator role".into(),
            ));
        }
        let reason = crate::domain::reason::parse_reason(reason)?;
        let list = self
            .reconcile_findings(run_id, Some(kind), MAX_REPAIR_ALL)
            .await?;
        let mut out = RepairAllOutcome::default();
        for f in list.iter().filter(|f| f.repaired_at.is_none()) {
            match self
                .repair_finding(ctx, authority, f.id, Some(reason.clone()))
                .await
            {
                Ok(()) => out.repaired += 1,
                Err(ServiceError::Db(e)) => return Err(ServiceError::Db(e)),
                Err(_) => out.refused += 1,
            }
        }
        Ok(out)
    }
}

/// Each template with a budget: its use, its reservations and, when its
/// coupons on orders are few enough to add up, what they take off.
async fn scan_budgets_tx(
    c: &mut AnyConnection,
) -> Result<Vec<(TemplateId, i64, i64, Option<i64>)>, ServiceError> {
    let ids = crate::store::budgets::templates_with_budget(c, MAX_TEMPLATES).await?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let Some((used, reserved)) = crate::store::budgets::used_of(c, &id).await? else {
            continue;
        };
        let live = crate::store::budgets::live_discounts(c, &id, MAX_RECOUNT_COUPONS).await?;
        out.push((id, used, reserved, live));
    }
    Ok(out)
}

/// Reads each template's claimed and issued counts and, budget allowing, recounts its counters.
async fn scan_template_stock_tx(
    c: &mut AnyConnection,
) -> Result<Vec<(TemplateId, i64, i64, Option<(Counts, Counts)>)>, ServiceError> {
    let ids = store::template_ids(c, MAX_TEMPLATES).await?;
    let mut out = Vec::with_capacity(ids.len());
    let mut recount_budget = MAX_RECOUNT_TOTAL;
    for id in ids {
        let claimed = templates::claimed(c, &id).await?;
        let issued = search::coupons_of_template(c, &id, claimed.saturating_add(1)).await?;
        // The report counters against a recount, while the
        // run's budget of rows lasts (one snapshot: the
        // counters move in the same transactions as the
        // coupons).
        let counts = if issued <= recount_budget.min(MAX_RECOUNT_COUPONS) {
            let recount = counters::recount_template(c, &id, MAX_RECOUNT_COUPONS).await?;
            recount_budget -= issued;
            match recount {
                Some(r) => Some((
                    counters::all_days(c, counters::Subject::Template, &id).await?,
                    r,
                )),
                None => None,
            }
        } else {
            None
        };
        out.push((id, claimed, issued, counts));
    }
    Ok(out)
}

/// What [`run_reconciliation_tx`] records: the run and its findings.
#[derive(Clone)]
struct RunRecord {
    actor: String,
    started: DateTime<Utc>,
    finished_ms: i64,
    found: i64,
    by_kind_json: String,
    truncated: bool,
    findings: Vec<Finding>,
}

/// Records a reconciliation run and its findings; returns the run's id.
async fn run_reconciliation_tx(
    c: &mut AnyConnection,
    record: RunRecord,
) -> Result<i64, ServiceError> {
    let RunRecord {
        actor,
        started,
        finished_ms,
        found,
        by_kind_json,
        truncated,
        findings,
    } = record;
    let run_id = store::insert_run(
        c,
        &store::NewRun {
            actor: &actor,
            started_at_ms: to_ms(started),
            finished_at_ms: finished_ms,
            found,
            found_by_kind: &by_kind_json,
            truncated,
        },
    )
    .await?;
    for f in &findings {
        store::insert_finding(
            c,
            &store::NewFinding {
                run_id,
                kind: f.kind.as_str(),
                coupon_id: f.coupon_id.as_ref(),
                order_no: f.order_no.as_ref(),
                user_id: f.user_id.as_ref(),
                template_id: f.template_id.as_ref(),
                stock: f.stock,
                message_key: &f.message.key,
                message_args: &f.message.args_json(),
                fix: f.fix.as_str(),
            },
        )
        .await?;
    }
    Ok(run_id)
}

/// Findings per kind, every kind present.
fn counts(findings: &[Finding]) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = AnomalyKind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), 0))
        .collect();
    for f in findings {
        *out.entry(f.kind.as_str().to_string()).or_default() += 1;
    }
    out
}
