//! The repair actions of support staff and the shop backend: release a
//! stuck coupon lock, cancel an order, invalidate a coupon, issue a
//! compensation coupon; and who may take them ([`Authority`]).
//!
//! Every action is one transaction through [`Service::write`]: it re-reads
//! the rows, changes them with conditional updates, and writes event rows
//! with the caller's actor and the required reason.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use sqlx::AnyConnection;

use crate::domain::FieldError;
use crate::domain::compensation::{
    CapHit, CompensationAllowance, CompensationAmount, CompensationRequest,
};
use crate::domain::coupon::{CouponSource, CouponStatus, effective_status, release_target};
use crate::domain::discount::DiscountKind;
use crate::domain::ids::{CouponId, OrderNo, UserId, new_coupon_code};
use crate::domain::money::{Cents, CentsDelta};
use crate::domain::order::CouponLockStatus;
use crate::domain::permissions::{self, Permission};
use crate::domain::reason::parse_reason;
use crate::domain::staff::{Role, StaffName};
use crate::domain::time::{from_ms, to_ms};
use crate::service::jobs::Deadline;
use crate::service::orders::{kind_of, status_of};
use crate::service::views::{CouponView, OrderView};
use crate::service::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::store::archive;
use crate::store::coupons::{self, CouponChange, CouponRow};
use crate::store::ledger::{self, NewEntry};
use crate::store::orders::{self, OrderRow};
use crate::store::outbox::{self, NewMessage};
use crate::store::search::{self, OrderLockRelease};

/// Shortest and longest validity of a compensation coupon.
pub const MIN_COMPENSATION_SECONDS: i64 = crate::domain::compensation::MIN_VALID_SECONDS;
/// See [`MIN_COMPENSATION_SECONDS`].
pub const MAX_COMPENSATION_SECONDS: i64 = crate::domain::compensation::MAX_VALID_SECONDS;

/// On whose authority an action runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authority {
    /// A trusted shop backend calling the JSON API: may force a release and
    /// is not capped.
    Api,
    /// A signed-in staff member of the console, with their role.
    Staff { name: StaffName, role: Role },
}

/// Why support staff may not cancel an order whose checkout lock has not
/// lapsed (`domain::permissions::may_cancel_order`); pages that refuse the
/// same way before reaching the service say the same.
pub const CANCEL_NEEDS_OPERATOR: &str =
    "cancelling an order needs the operator role, unless its checkout lock lapsed";

impl Authority {
    /// Whether this authority holds `permission`: the shop's API token is
    /// trusted with everything; staff by their role
    /// ([`crate::domain::permissions`]).
    pub fn may(&self, permission: Permission) -> bool {
        match self {
            Authority::Api => true,
            Authority::Staff { role, .. } => permissions::may(*role, permission),
        }
    }

    /// Support staff hand out compensation within the configured caps;
    /// operators, admins and the API are not capped.
    fn compensation_capped(&self) -> bool {
        !self.may(Permission::UncappedCompensation)
    }
}

/// One compensation ledger entry of an order.
#[derive(Debug, Clone, Serialize)]
pub struct CompensationEntry {
    pub at: String,
    /// `final_payment_deduction`, `coupon`, `final_payment_coupon` or
    /// `refund_reversal` (negative).
    pub kind: String,
    pub amount_cents: CentsDelta,
    /// The compensation coupon, for kind `coupon`.
    pub coupon_id: Option<CouponId>,
    /// Its code, for pages.
    pub coupon_code: Option<String>,
    /// Which of the order's coupons it makes up for, when named.
    pub for_coupon_id: Option<CouponId>,
    /// Its code, for pages.
    pub for_coupon_code: Option<String>,
    pub reason: String,
    pub actor: String,
}

impl CompensationEntry {
    /// A compensation coupon given for the order (not a deduction from its
    /// final payment).
    pub fn is_coupon(&self) -> bool {
        self.kind == "coupon" || self.kind == "final_payment_coupon"
    }
}

fn checkout_lapsed(o: &OrderRow, now: DateTime<Utc>) -> bool {
    crate::domain::order::checkout_lapsed(
        kind_of(o),
        status_of(o),
        o.checkout_lock_expires_at.map(from_ms),
        now,
    )
}

impl Service {
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
        coupon_id: CouponId,
        reason: Option<String>,
        force: bool,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let reason = parse_reason(reason)?;
        if force && !authority.may(Permission::ForceRelease) {
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
                Box::pin(async move { release_coupon_tx(c, &op, &coupon_id, &reason, force).await })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result
            && v.status == CouponStatus::Available
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
        order_no: &OrderNo,
    ) -> Result<Vec<CompensationEntry>, ServiceError> {
        let order_no = order_no.clone();
        let (rows, codes) = self
            .read(move |c| {
                let no = order_no.clone();
                Box::pin(async move {
                    let rows = crate::store::ledger::for_order(c, &no).await?;
                    let ids: Vec<&CouponId> = rows
                        .iter()
                        .flat_map(|r| [r.coupon_id.as_ref(), r.for_coupon_id.as_ref()])
                        .flatten()
                        .collect();
                    let codes = crate::store::names::coupon_codes(c, &ids).await?;
                    Ok((rows, codes))
                })
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| CompensationEntry {
                at: crate::domain::time::rfc3339(from_ms(r.at)),
                coupon_code: r
                    .coupon_id
                    .as_ref()
                    .and_then(|id| codes.get(id.as_str()).cloned()),
                for_coupon_code: r
                    .for_coupon_id
                    .as_ref()
                    .and_then(|id| codes.get(id.as_str()).cloned()),
                for_coupon_id: r.for_coupon_id,
                kind: r.kind,
                amount_cents: r.amount_cents,
                coupon_id: r.coupon_id,
                reason: r.reason,
                actor: r.actor,
            })
            .collect())
    }

    /// The coupons a compensation for `order_no` may name as the one it
    /// makes up for, with their codes, in the order's order (the
    /// compensation form's choice, which offers them by code); empty for
    /// an unknown order.
    pub async fn compensation_coupon_choices(
        &self,
        order_no: &OrderNo,
    ) -> Result<Vec<(CouponId, String)>, ServiceError> {
        let order_no = order_no.clone();
        self.read(move |c| {
            let no = order_no.clone();
            Box::pin(async move {
                let Some(o) = orders::get(c, &no).await? else {
                    return Ok(Vec::new());
                };
                let ids = coupons_made_up_for(c, &o).await?;
                let refs: Vec<&CouponId> = ids.iter().collect();
                let codes = crate::store::names::coupon_codes(c, &refs).await?;
                // A coupon found nowhere has no code to offer it by.
                Ok(ids
                    .iter()
                    .filter_map(|id| Some((id.clone(), codes.get(id.as_str())?.clone())))
                    .collect())
            })
        })
        .await
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
        order_no: OrderNo,
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
            if !permissions::may_cancel_order(*role, lapsed) {
                return Err(ServiceError::Forbidden(CANCEL_NEEDS_OPERATOR.into()));
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
        coupon_id: CouponId,
        reason: Option<String>,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let reason = parse_reason(reason)?;
        if !authority.may(Permission::InvalidateCoupon) {
            return Err(ServiceError::Forbidden(
                "only an operator may invalidate a coupon".into(),
            ));
        }
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let op = op.clone();
            let coupon_id = coupon_id.clone();
            let reason = reason.clone();
            Box::pin(async move { invalidate_coupon_tx(c, &op, &coupon_id, &reason).await })
        })
        .await
    }

    /// What `authority` may still give as compensation on this business
    /// day (`COUPONKEEPER_BUSINESS_TZ`), counted from the ledger rows of
    /// `ctx`'s actor exactly as [`Service::issue_compensation`] counts them
    /// (one indexed sum); `None` when `authority` is not capped. A read: the
    /// answer may be stale by the time a coupon is issued, which re-checks.
    pub async fn compensation_allowance(
        &self,
        ctx: &Ctx,
        authority: &Authority,
    ) -> Result<Option<CompensationAllowance>, ServiceError> {
        if !authority.compensation_capped() {
            return Ok(None);
        }
        let settings = self.settings().clone();
        let (start, end) = settings.reminders.tz.day_bounds(self.now());
        let actor = ctx.actor.clone();
        let given = self
            .read(move |c| {
                let actor = actor.clone();
                Box::pin(async move {
                    Ok(ledger::compensation_issued_by(c, &actor, to_ms(start), to_ms(end)).await?)
                })
            })
            .await?;
        // The caps of the rules version in force (not the settings, which
        // are only version 1's values).
        let rules = self.compensation_rules().await?;
        Ok(Some(CompensationAllowance {
            per_coupon_cents: rules.support_max_cents,
            daily_cents: rules.support_daily_cents,
            given_today_cents: given,
        }))
    }

    /// Issues a fixed-amount compensation coupon to `user_id`, outside any
    /// stock (`source = compensation`, no template), recorded in the
    /// compensation ledger with its order, amount, reason and actor (the
    /// request's fields checked at the edge: [`CompensationRequest::parse`]).
    /// Staff with the `support` role are capped per coupon and per business
    /// day (the day's sum is read from the ledger inside the same
    /// transaction; [`Service::compensation_allowance`] reads the same sum
    /// for pages).
    pub async fn issue_compensation(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        user_id: UserId,
        request: CompensationRequest,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let issue = CompensationIssue {
            user: user_id,
            request,
            capped: authority.compensation_capped(),
        };
        let op = self.op(ctx);
        let result = self
            .write(idem, move |c| {
                let op = op.clone();
                let issue = issue.clone();
                Box::pin(async move { issue_compensation_tx(c, &op, &issue).await })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result
            && let Ok(ends_at) = crate::domain::time::parse_rfc3339(&v.ends_at)
        {
            self.schedule(ends_at, Deadline::CouponEnd(v.id.clone()));
        }
        result
    }
}

/// The refusal of a compensation over one of support's caps.
fn cap_refusal(hit: CapHit) -> ServiceError {
    let message = match hit {
        CapHit::PerCoupon { max_cents } => format!(
            "support staff may issue at most {} yuan per compensation coupon",
            Cents::from_stored(max_cents).yuan()
        ),
        CapHit::Daily {
            daily_cents,
            given_today_cents,
            ..
        } => format!(
            "support staff may issue at most {} yuan of compensation per day; {} yuan issued today",
            Cents::from_stored(daily_cents).yuan(),
            Cents::from_stored(given_today_cents).yuan()
        ),
    };
    ServiceError::refused(Refusal::CompensationLimitExceeded, message)
}

/// A checked compensation request with its transaction's other inputs: to
/// whom, and whether the caller is capped.
#[derive(Debug, Clone)]
struct CompensationIssue {
    user: UserId,
    request: CompensationRequest,
    capped: bool,
}

/// What a compensation coupon takes off and when it may be used.
pub(crate) struct CompensationTerms {
    pub value_cents: Cents,
    /// How long from now it is valid.
    pub valid: Duration,
    pub min_order_cents: Cents,
    /// Stored JSON list of categories; `"[]"` is every category.
    pub categories: String,
}

/// Issues a fixed-amount compensation coupon to `user_id` in the caller's
/// transaction: outside any stock (`source = compensation`, no template,
/// with the given minimum order and categories (`"[]"`: every
/// category)), valid `valid` from now, with its
/// creation event and a `compensation.issued` outbox message. The caller
/// writes its ledger row (support's coupons and a final payment's
/// compensation coupon are entries of different kinds).
pub(crate) async fn insert_compensation_coupon(
    c: &mut AnyConnection,
    op: &crate::service::Op,
    user_id: &UserId,
    terms: CompensationTerms,
    reason: &str,
) -> Result<CouponView, ServiceError> {
    let CompensationTerms {
        value_cents,
        valid,
        min_order_cents,
        categories,
    } = terms;
    let now_ms = to_ms(op.now);
    let mut row = CouponRow {
        id: CouponId::generate(now_ms),
        code: new_coupon_code(),
        user_id: user_id.clone(),
        template_id: None,
        source: CouponSource::Compensation,
        kind: DiscountKind::Fixed,
        value_cents: Some(value_cents),
        percent_off: None,
        max_discount_cents: None,
        min_order_cents,
        categories,
        // A compensation coupon is a platform coupon on any SKU.
        line_terms: "{}".to_string(),
        status: CouponStatus::Available,
        starts_at: now_ms,
        ends_at: to_ms(op.now + valid),
        order_no: None,
        locked_at: None,
        used_at: None,
        created_at: now_ms,
        updated_at: now_ms,
    };
    crate::service::claims::insert_coupon(c, &mut row, "compensation", op, Some(reason)).await?;
    let view = CouponView::from_row(row, op.now);
    outbox::insert_many_traced(
        c,
        &[NewMessage {
            event_type: "compensation.issued",
            user_id: Some(view.user_id.clone()),
            subject_id: Some(view.id.to_string()),
            payload: serde_json::to_string(&view).unwrap_or_else(|_| "{}".into()),
            created_at: now_ms,
        }],
        op.ctx.trace.as_ref(),
    )
    .await?;
    Ok(view)
}

/// A coupon from the live table, for an action. An archived coupon is
/// terminal: `coupon_not_available`; an unknown one: 404.
async fn load_live_coupon(c: &mut AnyConnection, id: &CouponId) -> Result<CouponRow, ServiceError> {
    if let Some(r) = coupons::get(c, id).await? {
        return Ok(r);
    }
    if let Some(r) = archive::get(c, id).await? {
        return Err(ServiceError::refused(
            Refusal::CouponNotAvailable,
            format!("coupon {id} is {} (archived)", r.status),
        ));
    }
    Err(ServiceError::not_found("coupon", id.as_str()))
}

async fn reload_coupon(
    c: &mut AnyConnection,
    id: &CouponId,
    now: DateTime<Utc>,
) -> Result<CouponView, ServiceError> {
    let row = coupons::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("coupon", id.as_str()))?;
    Ok(CouponView::from_row(row, now))
}

/// The transaction of [`Service::issue_compensation`]: the order's owner
/// checked, the caps of the rules in force, the coupon and its ledger row.
async fn issue_compensation_tx(
    c: &mut AnyConnection,
    op: &Op,
    issue: &CompensationIssue,
) -> Result<CouponView, ServiceError> {
    let (user, amount, reason, order_no, for_coupon_id) = (
        &issue.user,
        &issue.request.amount,
        &issue.request.reason,
        &issue.request.order_no,
        &issue.request.for_coupon_id,
    );
    let (capped, settings) = (issue.capped, &op.settings);
    let preset_id = match amount {
        CompensationAmount::Preset(id) => Some(id.as_str()),
        CompensationAmount::Typed { .. } => None,
    };
    let now_ms = to_ms(op.now);
    let mut campaign_id = None;
    if let Some(no) = &order_no {
        let o = orders::get(c, no)
            .await?
            .ok_or_else(|| ServiceError::not_found("order", no.as_str()))?;
        if o.user_id != *user {
            return Err(ServiceError::refused(
                Refusal::OrderNotOwned,
                format!("order {no} belongs to another user"),
            ));
        }
        // The coupon made up for is one of the order's, now or before a
        // replacement at its final payment.
        if let Some(coupon) = for_coupon_id
            && !order_has_coupon(c, &o, coupon).await?
        {
            return Err(ServiceError::refused(
                Refusal::CouponNotOnOrder,
                format!("coupon {coupon} is not one of order {no}'s coupons"),
            ));
        }
        campaign_id = o.campaign_id;
    }
    // The caps and presets of the rules version in force,
    // read in this transaction; the ledger row names it.
    let first = (
        settings.support_compensation_max_cents,
        settings.support_compensation_daily_cents,
    );
    let rules = crate::store::compensation_rules::rules_in_force(c, first, now_ms).await?;
    let (value, seconds, min_order_cents, categories, reason) = match amount {
        CompensationAmount::Preset(id) => {
            let p = rules.preset(id).ok_or_else(|| {
                ServiceError::from(FieldError::new(
                    "preset_id",
                    format!(
                        "is not a preset of the compensation rules in force (version {})",
                        rules.version
                    ),
                ))
            })?;
            (
                Cents::from_stored(p.value_cents),
                p.valid_seconds,
                Cents::from_stored(p.min_order_cents),
                serde_json::to_string(&p.categories).unwrap_or_else(|_| "[]".into()),
                reason.clone().unwrap_or_else(|| p.reason.clone()),
            )
        }
        CompensationAmount::Typed {
            value,
            valid_seconds,
        } => (
            *value,
            *valid_seconds,
            Cents::ZERO,
            "[]".to_string(),
            reason.clone().unwrap_or_default(),
        ),
    };
    if capped {
        ledger::lock_actor_for_caps(c, &op.ctx.actor).await?;
        // "Today" is the business day (COUPONKEEPER_BUSINESS_TZ).
        let (start, end) = settings.reminders.tz.day_bounds(op.now);
        let allowance = CompensationAllowance {
            per_coupon_cents: rules.support_max_cents,
            daily_cents: rules.support_daily_cents,
            given_today_cents: ledger::compensation_issued_by(
                c,
                &op.ctx.actor,
                to_ms(start),
                to_ms(end),
            )
            .await?,
        };
        allowance.check(value.get()).map_err(cap_refusal)?;
    }
    let view = insert_compensation_coupon(
        c,
        op,
        user,
        CompensationTerms {
            value_cents: value,
            valid: Duration::seconds(seconds),
            min_order_cents,
            categories,
        },
        &reason,
    )
    .await?;
    ledger::insert(
        c,
        &NewEntry {
            user_id: user,
            order_no: order_no.as_ref(),
            coupon_id: Some(&view.id),
            kind: "coupon",
            amount_cents: value,
            reason: &reason,
            actor: &op.ctx.actor,
            request_id: op.ctx.request_id.as_deref(),
            at_ms: now_ms,
            preset_id,
            rules_version: rules.version,
            campaign_id: campaign_id.as_ref(),
            for_coupon_id: for_coupon_id.as_ref(),
            day: op.day(),
        },
    )
    .await?;
    Ok(view)
}

/// The coupons a compensation for the order may name as the one it makes
/// up for, in the order's order: the one the order row names, then each
/// further coupon (`order_coupons`), each followed by the expired coupon
/// it replaced at a presale order's final payment, if any.
async fn coupons_made_up_for(
    c: &mut AnyConnection,
    o: &OrderRow,
) -> Result<Vec<CouponId>, ServiceError> {
    let mut out: Vec<CouponId> = o
        .coupon_id
        .iter()
        .chain(o.replaced_coupon_id.iter())
        .cloned()
        .collect();
    if o.coupon_id.is_some() {
        for r in crate::store::order_coupons::of_order(c, &o.order_no).await? {
            out.push(r.coupon_id);
            out.extend(r.replaced_coupon_id);
        }
    }
    Ok(out)
}

/// Whether `coupon` is one of the order's coupons
/// ([`coupons_made_up_for`]).
async fn order_has_coupon(
    c: &mut AnyConnection,
    o: &OrderRow,
    coupon: &CouponId,
) -> Result<bool, ServiceError> {
    Ok(coupons_made_up_for(c, o).await?.contains(coupon))
}

/// The transaction of [`Service::invalidate_coupon`].
async fn invalidate_coupon_tx(
    c: &mut AnyConnection,
    op: &Op,
    coupon_id: &CouponId,
    reason: &str,
) -> Result<CouponView, ServiceError> {
    let coupon = load_live_coupon(c, coupon_id).await?;
    let status = effective_status(coupon.status, from_ms(coupon.ends_at), op.now);
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
            coupon_id,
            from: CouponStatus::Available,
            to: CouponStatus::Invalidated,
            order_no: None,
            action: "invalidate",
            actor: &op.ctx.actor,
            reason: Some(reason),
            request_id: op.ctx.request_id.as_deref(),
            trace: op.ctx.trace.as_ref(),
            address: op.ctx.address.as_deref(),
            now_ms: to_ms(op.now),
            day: op.day(),
        },
    )
    .await?;
    if !changed {
        return Err(ServiceError::refused(
            Refusal::CouponNotAvailable,
            "the coupon changed meanwhile; read it again",
        ));
    }
    reload_coupon(c, coupon_id, op.now).await
}

/// A live order of several coupons keeps each of them: they are
/// released together when the order is cancelled or refunded.
fn held_with_others(o: &OrderRow) -> ServiceError {
    ServiceError::refused(
        Refusal::OrderActive,
        format!(
            "order {} is {} and holds this coupon with its others; cancel or refund the order to release them together",
            o.order_no,
            o.status.as_str()
        ),
    )
}

/// The transaction of [`Service::release_coupon`]: a live holder refuses unless
/// `force`, which detaches the coupon from the order.
async fn release_coupon_tx(
    c: &mut AnyConnection,
    op: &Op,
    coupon_id: &CouponId,
    reason: &str,
    force: bool,
) -> Result<CouponView, ServiceError> {
    let now_ms = to_ms(op.now);
    let coupon = load_live_coupon(c, coupon_id).await?;
    let status = coupon.status;
    if status != CouponStatus::Locked {
        return Err(ServiceError::refused(
            Refusal::CouponNotAvailable,
            format!(
                "coupon {coupon_id} is {}; only a locked coupon can be released",
                effective_status(status, from_ms(coupon.ends_at), op.now).as_str()
            ),
        ));
    }
    let holder = match coupon.order_no.as_ref() {
        Some(no) => orders::get(c, no)
            .await?
            .filter(|o| o.coupon_id.as_ref() == Some(coupon_id)),
        None => None,
    };
    // A further coupon of an order with several (叠加): the order's
    // coupons move together, so a live order keeps it (cancel or refund
    // the order instead, even with force); an order that is over records
    // its release.
    if holder.is_none()
        && let Some(no) = coupon.order_no.as_ref()
        && crate::store::order_coupons::holds(c, no, coupon_id).await?
        && let Some(o) = orders::get(c, no).await?
    {
        if status_of(&o).is_live() && !checkout_lapsed(&o, op.now) {
            return Err(held_with_others(&o));
        }
        crate::store::order_coupons::move_lock(
            c,
            no,
            coupon_id,
            (CouponLockStatus::Locked, CouponLockStatus::Released),
        )
        .await?;
    }
    // The order whose lock record changes with the coupon: a
    // live holder, or an order that is over but still shows
    // the coupon as locked (the anomaly being repaired).
    let recorded_holder = holder
        .clone()
        .filter(|o| status_of(o).is_live() || o.coupon_lock_status == CouponLockStatus::Locked);
    let live_holder = holder.filter(|o| status_of(o).is_live());
    let active = live_holder
        .as_ref()
        .is_some_and(|o| !checkout_lapsed(o, op.now));
    // The coupon the order row names, on an order of several: a forced
    // release would take it off the order and leave the others locked to
    // an order that no longer lists them, so the order keeps all of them
    // while it is live, as for a further coupon.
    if active
        && let Some(o) = live_holder.as_ref()
        && !crate::store::order_coupons::of_order(c, &o.order_no)
            .await?
            .is_empty()
    {
        return Err(held_with_others(o));
    }
    if active && !force {
        let o = live_holder
            .as_ref()
            .map(|o| (o.order_no.to_string(), o.status.as_str()));
        let (no, st) = o.unwrap_or_default();
        return Err(ServiceError::refused(
            Refusal::OrderActive,
            format!(
                "order {no} is {st} and still holds this coupon; releasing it takes the customer's discount away (force)"
            ),
        ));
    }
    if let Some(o) = &recorded_holder
        && !search::release_order_lock(
            c,
            &OrderLockRelease {
                order_no: &o.order_no,
                status: o.status.as_str(),
                coupon_id,
                detach: active,
                action: if active {
                    "force_release_coupon"
                } else {
                    "release_coupon"
                },
                actor: &op.ctx.actor,
                reason: Some(reason),
                request_id: op.ctx.request_id.as_deref(),
                trace_id: op.ctx.trace_id(),
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
    // A detached coupon takes its discount, and so its split, off the
    // order.
    if active && let Some(o) = &recorded_holder {
        crate::store::order_lines::delete_shares(c, &o.order_no, coupon_id).await?;
    }
    let to = release_target(from_ms(coupon.ends_at), op.now);
    let changed = coupons::transition(
        c,
        &CouponChange {
            coupon_id,
            from: CouponStatus::Locked,
            to,
            order_no: coupon.order_no.as_ref(),
            action: if active {
                "force_release"
            } else {
                "staff_release"
            },
            actor: &op.ctx.actor,
            reason: Some(reason),
            request_id: op.ctx.request_id.as_deref(),
            trace: op.ctx.trace.as_ref(),
            address: op.ctx.address.as_deref(),
            now_ms,
            day: op.day(),
        },
    )
    .await?;
    if !changed {
        return Err(ServiceError::refused(
            Refusal::CouponNotAvailable,
            "the coupon changed meanwhile; read it again",
        ));
    }
    reload_coupon(c, coupon_id, op.now).await
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let (force, invalidate) = (Permission::ForceRelease, Permission::InvalidateCoupon);
        assert!(!support.may(force) && !support.may(invalidate));
        assert!(support.compensation_capped());
        assert!(operator.may(force) && operator.may(invalidate));
        assert!(!operator.compensation_capped());
        assert!(Authority::Api.may(force) && !Authority::Api.compensation_capped());
    }
}
