//! Presale campaigns (预售场次): create, read, list newest first, and the
//! operators' changes before the final-payment window opens (the policy
//! and the compensation mode), with a preview of what a policy change would
//! do to the campaign's orders.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::support::Authority;
use super::views::CampaignView;
use sqlx::AnyConnection;

use super::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::campaign::{CampaignPhase, CompensationMode, PaymentWindow, Policy};
use crate::domain::final_payment::{HeldCoupon, PolicyPreview, PresaleOrder};
use crate::domain::ids::{CampaignId, OrderNo};
use crate::domain::order::OrderMoney;
use crate::domain::permissions::Permission;
use crate::domain::time::{from_ms, parse_rfc3339, rfc3339, to_ms};
use crate::store::audit::{AuditQuery, NewStaffAudit, insert_staff_audit, staff_page};
use crate::store::campaigns::{self, CampaignRow};

/// Actions of the staff log (`staff_audit.action`) for campaigns; the
/// target is the campaign id.
pub mod actions {
    /// A campaign created (detail: `<policy> <compensation_mode>`).
    pub const CREATE: &str = "campaign_create";
    /// Its policy changed (detail: `<from> -> <to>: <reason>`).
    pub const POLICY: &str = "campaign_policy_change";
    /// Its compensation mode changed (detail: `<from> -> <to>: <reason>`).
    pub const COMPENSATION_MODE: &str = "campaign_compensation_mode_change";
}

/// The API's campaign fields before checking.
#[derive(Debug, Clone, Default)]
pub struct CampaignInput {
    pub name: Option<String>,
    pub final_payment_starts_at: Option<String>,
    pub final_payment_ends_at: Option<String>,
    pub policy: Option<String>,
    /// `deduction` (absent or null) or `coupon`.
    pub compensation_mode: Option<String>,
}

/// A checked campaign.
#[derive(Debug, Clone)]
struct CampaignSpec {
    name: String,
    window: PaymentWindow,
    policy: Policy,
    compensation_mode: CompensationMode,
}

/// Longest campaign name.
pub const MAX_NAME_CHARS: usize = 200;

/// What the console's campaign list is narrowed to (all `None`: every
/// campaign).
#[derive(Debug, Clone, Default)]
pub struct CampaignSearch {
    /// A part of the name.
    pub q: Option<String>,
    pub policy: Option<Policy>,
    pub phase: Option<CampaignPhase>,
}

fn parse_policy(raw: &str) -> Result<Policy, FieldError> {
    Policy::parse(raw.trim()).ok_or_else(|| {
        FieldError::new(
            "policy",
            "must be \"lock\", \"strict\" or \"swap_or_compensate\"",
        )
    })
}

fn parse_mode(raw: &str) -> Result<CompensationMode, FieldError> {
    CompensationMode::parse(raw.trim())
        .ok_or_else(|| FieldError::new("compensation_mode", "must be \"deduction\" or \"coupon\""))
}

fn parse(input: CampaignInput) -> Result<CampaignSpec, FieldError> {
    let name = input.name.unwrap_or_default().trim().to_string();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(FieldError::new("name", "must be 1-200 characters"));
    }
    let starts = input
        .final_payment_starts_at
        .as_deref()
        .ok_or_else(|| FieldError::new("final_payment_starts_at", "is required"))
        .and_then(|s| {
            parse_rfc3339(s).map_err(|m| FieldError::new("final_payment_starts_at", m))
        })?;
    let ends = input
        .final_payment_ends_at
        .as_deref()
        .ok_or_else(|| FieldError::new("final_payment_ends_at", "is required"))
        .and_then(|s| parse_rfc3339(s).map_err(|m| FieldError::new("final_payment_ends_at", m)))?;
    let window = PaymentWindow::new(starts, ends)?;
    // API.md: a campaign created without `policy` (absent or null) is a
    // `lock` campaign; a value that is not one of the three is refused.
    let policy = match input.policy.as_deref() {
        None => Policy::Lock,
        Some(p) => parse_policy(p)?,
    };
    let compensation_mode = match input.compensation_mode.as_deref() {
        None => CompensationMode::Deduction,
        Some(m) => parse_mode(m)?,
    };
    Ok(CampaignSpec {
        name,
        window,
        policy,
        compensation_mode,
    })
}

fn forbidden() -> ServiceError {
    ServiceError::Forbidden(
        "creating or changing a presale campaign needs the operator role".into(),
    )
}

/// Most campaigns one page lists.
pub const MAX_CAMPAIGN_PAGE: i64 = 200;

/// A campaign's orders by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct CampaignOrderCounts {
    pub pending_deposit: i64,
    pub deposit_paid: i64,
    pub final_paid: i64,
    pub closed: i64,
    pub refunded: i64,
}

impl CampaignOrderCounts {
    fn from_rows<'a>(rows: impl Iterator<Item = (&'a str, i64)>) -> Self {
        let mut c = CampaignOrderCounts::default();
        for (status, n) in rows {
            match status {
                "pending_deposit" => c.pending_deposit += n,
                "deposit_paid" => c.deposit_paid += n,
                "final_paid" => c.final_paid += n,
                "closed" => c.closed += n,
                "refunded" => c.refunded += n,
                _ => {}
            }
        }
        c
    }
}

/// One campaign of a list page: the campaign and its orders by status.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CampaignListItem {
    #[serde(flatten)]
    pub campaign: CampaignView,
    pub orders: CampaignOrderCounts,
}

/// A page of `GET /presale-campaigns`, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CampaignPage {
    pub campaigns: Vec<CampaignListItem>,
    /// The cursor of the next page; null on the last.
    pub next: Option<String>,
}

/// One change of a campaign from the staff log, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignChange {
    pub at: String,
    pub actor: String,
    /// `created`, `policy` or `compensation_mode`.
    pub what: &'static str,
    /// The stored word before (none for `created`).
    pub from: Option<String>,
    /// The stored word after (for `created`: the policy).
    pub to: String,
    /// For `created`: the compensation mode.
    pub also: Option<String>,
    pub reason: Option<String>,
}

/// Reads one staff-log row of a campaign back into a change; `None` for
/// a row that is not one of [`actions`].
fn change_of(r: &crate::store::audit::StaffAuditRow) -> Option<CampaignChange> {
    change_from_log(
        &r.action,
        r.detail.as_deref(),
        rfc3339(from_ms(r.at)),
        r.actor.clone(),
    )
}

/// A staff-log row of a campaign (its action, detail, time and actor) read
/// back into a change, for the campaign's history and the audit log;
/// `None` for an action that is not one of [`actions`].
pub fn change_from_log(
    action: &str,
    detail: Option<&str>,
    at: String,
    actor: String,
) -> Option<CampaignChange> {
    let detail = detail.unwrap_or("");
    let base = CampaignChange {
        at,
        actor,
        what: "created",
        from: None,
        to: String::new(),
        also: None,
        reason: None,
    };
    match action {
        actions::CREATE => {
            let (policy, mode) = detail.split_once(' ').unwrap_or((detail, ""));
            Some(CampaignChange {
                to: policy.to_string(),
                also: (!mode.is_empty()).then(|| mode.to_string()),
                ..base
            })
        }
        actions::POLICY | actions::COMPENSATION_MODE => {
            let (words, reason) = detail.split_once(": ").unwrap_or((detail, ""));
            let (from, to) = words.split_once(" -> ")?;
            Some(CampaignChange {
                what: if action == actions::POLICY {
                    "policy"
                } else {
                    "compensation_mode"
                },
                from: Some(from.to_string()),
                to: to.to_string(),
                reason: Some(reason.to_string()),
                ..base
            })
        }
        _ => None,
    }
}

/// A campaign as its console page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignDetail {
    pub campaign: CampaignView,
    pub orders: CampaignOrderCounts,
    /// Coupons locked to deposit-paid orders that will be past their own
    /// end when the final-payment window opens.
    pub coupons_past_end_at_opening: i64,
    /// Whether the window has opened (changes are refused from then on).
    pub window_opened: bool,
    /// Changes from the staff log, oldest first (at most 200).
    pub history: Vec<CampaignChange>,
}

/// Orders one preview batch reads.
pub const PREVIEW_BATCH: i64 = 500;
/// Most orders one preview judges; past it the figures say "at least".
pub const PREVIEW_CAP: u64 = 100_000;

/// What a policy change would do ([`Service::preview_policy_change`]).
#[derive(Debug, Clone, Serialize)]
pub struct PolicyChangePreview {
    pub campaign: CampaignView,
    pub proposed: Policy,
    /// Judged at this instant: the window's opening.
    pub judged_at: String,
    #[serde(flatten)]
    pub figures: PolicyPreview,
    /// More `deposit_paid` orders exist than were judged ([`PREVIEW_CAP`]):
    /// the figures are lower bounds.
    pub capped: bool,
}

/// A change to a campaign: a new policy and/or compensation mode, and why.
#[derive(Debug, Clone, Default)]
pub struct CampaignPatch {
    pub policy: Option<String>,
    pub compensation_mode: Option<String>,
    pub reason: Option<String>,
}

fn refused_window_open() -> ServiceError {
    ServiceError::refused(
        Refusal::CampaignWindowOpen,
        "the final-payment window has opened; the policy and compensation mode can no longer change",
    )
}

impl Service {
    pub async fn create_campaign(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        input: CampaignInput,
    ) -> Result<Executed<CampaignView>, ServiceError> {
        let spec = parse(input)?;
        let op = self.op(ctx);
        let ends = spec.window.ends;
        let result = self
            .write(idem, move |c| {
                let spec = spec.clone();
                let op = op.clone();
                Box::pin(async move { create_campaign_tx(c, &op, &spec).await })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result {
            self.schedule(ends, super::jobs::Deadline::PresaleWindowEnd(v.id.clone()));
        }
        result
    }

    /// [`Service::create_campaign`] on `authority`: operators and admins
    /// (and the API); support staff are refused.
    pub async fn create_campaign_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        input: CampaignInput,
    ) -> Result<Executed<CampaignView>, ServiceError> {
        if !authority.may(Permission::RunCampaigns) {
            return Err(forbidden());
        }
        self.create_campaign(ctx, idem, input).await
    }

    pub async fn get_campaign(&self, id: &CampaignId) -> Result<CampaignView, ServiceError> {
        let id = id.clone();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                campaigns::get(c, &id)
                    .await?
                    .map(CampaignView::from)
                    .ok_or_else(|| ServiceError::not_found("presale campaign", &id))
            })
        })
        .await
    }

    /// The campaigns still taking orders (final-payment window not yet
    /// closed), the soonest to close first, at most `limit`.
    pub async fn open_campaigns(&self, limit: i64) -> Result<Vec<CampaignView>, ServiceError> {
        let now_ms = to_ms(self.now());
        let limit = limit.clamp(1, 500);
        self.read(move |c| {
            Box::pin(async move {
                Ok(campaigns::open_at(c, now_ms, limit)
                    .await?
                    .into_iter()
                    .map(CampaignView::from)
                    .collect())
            })
        })
        .await
    }

    /// A page of campaigns, newest first (`created_at`, then id), each with
    /// its orders by status; `after` is the previous page's `next`.
    pub async fn list_campaigns(
        &self,
        after: Option<String>,
        limit: i64,
    ) -> Result<CampaignPage, ServiceError> {
        self.search_campaigns(CampaignSearch::default(), after, limit)
            .await
    }

    /// [`Service::list_campaigns`] narrowed to the campaigns whose name
    /// contains `search.q`, of one policy and in one phase now (the
    /// console's list).
    pub async fn search_campaigns(
        &self,
        search: CampaignSearch,
        after: Option<String>,
        limit: i64,
    ) -> Result<CampaignPage, ServiceError> {
        if !(1..=MAX_CAMPAIGN_PAGE).contains(&limit) {
            return Err(ServiceError::Invalid(FieldError::new(
                "limit",
                format!("must be between 1 and {MAX_CAMPAIGN_PAGE}"),
            )));
        }
        let before = match after.as_deref() {
            None | Some("") => None,
            Some(raw) => Some(decode_cursor(raw).ok_or_else(|| {
                ServiceError::Invalid(FieldError::new("cursor", "is not a cursor this list gave"))
            })?),
        };
        let pattern = match search.q.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) if text.chars().count() > MAX_NAME_CHARS => {
                return Err(ServiceError::Invalid(FieldError::new(
                    "q",
                    format!("must be at most {MAX_NAME_CHARS} characters"),
                )));
            }
            Some(text) => Some(super::templates::like_pattern(text)),
        };
        let (policy, phase) = (search.policy, search.phase);
        let now_ms = to_ms(self.now());
        self.read(move |c| {
            let before = before.clone();
            let pattern = pattern.clone();
            Box::pin(async move {
                search_campaigns_tx(c, &before, &pattern, policy, phase, now_ms, limit).await
            })
        })
        .await
    }

    /// A campaign with its figures and its history of changes.
    pub async fn campaign_detail(&self, id: &CampaignId) -> Result<CampaignDetail, ServiceError> {
        let id = id.clone();
        let now = self.now();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                let row = load(c, &id).await?;
                let counts = campaigns::order_counts(c, &[&id]).await?;
                let orders = CampaignOrderCounts::from_rows(
                    counts.iter().map(|(_, st, n)| (st.as_str(), *n)),
                );
                let past_end =
                    campaigns::locked_coupons_ending_by(c, &id, row.final_payment_starts_at)
                        .await?;
                let q = AuditQuery {
                    target: Some(id.to_string()),
                    ..AuditQuery::default()
                };
                let mut log = staff_page(c, &q, None, 200).await?;
                log.reverse();
                let history = log.iter().filter_map(change_of).collect();
                Ok(CampaignDetail {
                    window_opened: to_ms(now) >= row.final_payment_starts_at,
                    campaign: CampaignView::from(row),
                    orders,
                    coupons_past_end_at_opening: past_end,
                    history,
                })
            })
        })
        .await
    }

    /// What changing the campaign's policy to `proposed` would do: over its
    /// `deposit_paid` orders (read in batches of [`PREVIEW_BATCH`], at most
    /// [`PREVIEW_CAP`]), how many orders' final-payment outcome changes and
    /// the extra compensation, each judged with the final payment's own
    /// decision at the window's opening ([`PolicyPreview`]). Read-only.
    pub async fn preview_policy_change(
        &self,
        id: &CampaignId,
        proposed: &str,
    ) -> Result<PolicyChangePreview, ServiceError> {
        let proposed = parse_policy(proposed)?;
        let id = id.clone();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move { preview_policy_change_tx(c, &id, proposed).await })
        })
        .await
    }

    /// Changes a campaign's policy and/or compensation mode, with a reason,
    /// only before its final-payment window opens (by the service clock):
    /// one transaction, one conditional update (the old values and the
    /// window in its `WHERE`), and a staff-log row per changed field with
    /// before -> after and the reason. Setting what is already set changes
    /// nothing and answers the campaign. Operators and admins (and the
    /// API); support staff are refused.
    pub async fn change_campaign(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        id: CampaignId,
        patch: CampaignPatch,
    ) -> Result<Executed<CampaignView>, ServiceError> {
        if !authority.may(Permission::RunCampaigns) {
            return Err(forbidden());
        }
        let policy = patch.policy.as_deref().map(parse_policy).transpose()?;
        let mode = patch
            .compensation_mode
            .as_deref()
            .map(parse_mode)
            .transpose()?;
        if policy.is_none() && mode.is_none() {
            return Err(FieldError::new("policy", "give a policy or a compensation_mode").into());
        }
        let reason = crate::domain::reason::parse_reason(patch.reason)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let id = id.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move { change_campaign_tx(c, &op, &id, &reason, policy, mode).await })
        })
        .await
    }
}

/// Judges one preview row (see [`PolicyPreview::add`]); an order of
/// several coupons (`further`: its other coupons) coupon by coupon, each
/// on its own snapshot ([`PolicyPreview::add_each`]).
fn judge(
    figures: &mut PolicyPreview,
    current: Policy,
    proposed: Policy,
    o: &campaigns::PreviewRow,
    further: &[campaigns::PreviewFurther],
    opens: DateTime<Utc>,
) {
    let order = PresaleOrder {
        order_no: &o.order_no,
        // No candidates are judged, so no line is read.
        lines: &[],
        money: OrderMoney {
            total: o.total_cents,
            deposit: o.deposit_cents,
            discount: o.coupon_discount_cents,
            compensation: o.compensation_cents,
        },
        snapshot_discount: o.discount_snapshot_cents,
    };
    let held = |status, ends, kind, order_no: &Option<OrderNo>| match (status, ends, kind) {
        (Some(status), Some(ends), Some(kind)) => Some(HeldCoupon {
            stored_status: status,
            locked_to: order_no.clone(),
            ends_at: from_ms(ends),
            kind,
        }),
        _ => None,
    };
    let first = held(
        o.coupon_status,
        o.coupon_ends_at,
        o.coupon_kind,
        &o.coupon_order_no,
    );
    if further.is_empty() {
        figures.add(current, proposed, &order, first.as_ref(), opens);
        return;
    }
    let snapshots = further.iter().fold(o.discount_snapshot_cents, |s, f| {
        s.saturating_sub(f.snapshot_cents)
    });
    let mut coupons = Vec::with_capacity(further.len() + 1);
    coupons.extend(first.map(|h| (h, snapshots)));
    for f in further {
        // A coupon that exists nowhere: the health check's, not the
        // preview's (as for a single coupon).
        if let Some(h) = held(
            f.coupon_status,
            f.coupon_ends_at,
            f.coupon_kind,
            &f.coupon_order_no,
        ) {
            coupons.push((h, f.snapshot_cents));
        }
    }
    figures.add_each(current, proposed, &order, &coupons, opens);
}

async fn load(c: &mut sqlx::AnyConnection, id: &CampaignId) -> Result<CampaignRow, ServiceError> {
    campaigns::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("presale campaign", id))
}

/// `created_at.id` back to a cursor.
fn decode_cursor(raw: &str) -> Option<(i64, CampaignId)> {
    let (at, id) = raw.split_once('.')?;
    let at: i64 = at.parse().ok()?;
    (!id.is_empty() && id.len() <= 64).then(|| (at, CampaignId::from_wire(id)))
}

/// Reads one page of the matching campaigns, each with its orders by status.
async fn search_campaigns_tx(
    c: &mut AnyConnection,
    before: &Option<(i64, CampaignId)>,
    pattern: &Option<String>,
    policy: Option<Policy>,
    phase: Option<CampaignPhase>,
    now_ms: i64,
    limit: i64,
) -> Result<CampaignPage, ServiceError> {
    let filter = campaigns::CampaignFilter {
        name_like: pattern.as_deref(),
        policy,
        phase,
        now_ms,
    };
    let rows = campaigns::search_page(
        c,
        before.as_ref().map(|(at, id)| (*at, id.as_str())),
        limit,
        &filter,
    )
    .await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| format!("{}.{}", r.created_at, r.id)))
        .flatten();
    let ids: Vec<&CampaignId> = rows.iter().map(|r| &r.id).collect();
    let counts = campaigns::order_counts(c, &ids).await?;
    let campaigns = rows
        .into_iter()
        .map(|row| {
            let orders = CampaignOrderCounts::from_rows(
                counts
                    .iter()
                    .filter(|(id, ..)| *id == row.id)
                    .map(|(_, st, n)| (st.as_str(), *n)),
            );
            CampaignListItem {
                campaign: CampaignView::from(row),
                orders,
            }
        })
        .collect();
    Ok(CampaignPage { campaigns, next })
}

/// Judges the campaign's `deposit_paid` orders, batch by batch, under the proposed policy.
async fn preview_policy_change_tx(
    c: &mut AnyConnection,
    id: &CampaignId,
    proposed: Policy,
) -> Result<PolicyChangePreview, ServiceError> {
    let row = load(c, id).await?;
    let opens: DateTime<Utc> = from_ms(row.final_payment_starts_at);
    let mut figures = PolicyPreview::default();
    let mut after: Option<OrderNo> = None;
    let mut capped = false;
    loop {
        let batch =
            campaigns::deposit_paid_batch(c, id, after.as_deref().unwrap_or(""), PREVIEW_BATCH)
                .await?;
        let full = batch.len() as i64 == PREVIEW_BATCH;
        let nos: Vec<OrderNo> = batch.iter().map(|o| o.order_no.clone()).collect();
        let mut further: HashMap<OrderNo, Vec<campaigns::PreviewFurther>> = HashMap::new();
        for f in campaigns::preview_further(c, &nos).await? {
            further.entry(f.order_no.clone()).or_default().push(f);
        }
        for o in &batch {
            if figures.orders_read >= PREVIEW_CAP {
                capped = true;
                break;
            }
            let of_order = further.get(&o.order_no).map(Vec::as_slice).unwrap_or(&[]);
            judge(&mut figures, row.policy, proposed, o, of_order, opens);
        }
        match batch.last() {
            Some(last) if full && !capped => after = Some(last.order_no.clone()),
            _ => break,
        }
    }
    Ok(PolicyChangePreview {
        judged_at: rfc3339(opens),
        campaign: CampaignView::from(row),
        proposed,
        figures,
        capped,
    })
}

/// The transaction of [`Service::change_campaign`].
async fn change_campaign_tx(
    c: &mut AnyConnection,
    op: &Op,
    id: &CampaignId,
    reason: &str,
    policy: Option<Policy>,
    mode: Option<CompensationMode>,
) -> Result<CampaignView, ServiceError> {
    let row = load(c, id).await?;
    let now_ms = to_ms(op.now);
    if now_ms >= row.final_payment_starts_at {
        return Err(refused_window_open());
    }
    let from = (row.policy, row.compensation_mode);
    let to = (
        policy.unwrap_or(row.policy),
        mode.unwrap_or(row.compensation_mode),
    );
    if from == to {
        return Ok(CampaignView::from(row));
    }
    if !campaigns::update_rules(c, id, from, to, now_ms).await? {
        // Read in this same transaction a moment ago: only a
        // concurrent change can get here.
        return Err(ServiceError::refused(
            Refusal::CampaignWindowOpen,
            "the campaign changed meanwhile; read it again",
        ));
    }
    let changes = [
        (actions::POLICY, from.0.as_str(), to.0.as_str()),
        (actions::COMPENSATION_MODE, from.1.as_str(), to.1.as_str()),
    ];
    for (action, before, after) in changes {
        if before == after {
            continue;
        }
        insert_staff_audit(
            c,
            &NewStaffAudit {
                actor: &op.ctx.actor,
                action,
                target: id,
                detail: Some(&format!("{before} -> {after}: {reason}")),
                address: op.ctx.address.as_deref(),
                at_ms: now_ms,
            },
        )
        .await?;
    }
    let row = load(c, id).await?;
    Ok(CampaignView::from(row))
}

/// The transaction of [`Service::create_campaign`].
async fn create_campaign_tx(
    c: &mut AnyConnection,
    op: &Op,
    spec: &CampaignSpec,
) -> Result<CampaignView, ServiceError> {
    let now_ms = to_ms(op.now);
    let row = CampaignRow {
        id: CampaignId::generate(now_ms),
        name: spec.name.clone(),
        final_payment_starts_at: to_ms(spec.window.starts),
        final_payment_ends_at: to_ms(spec.window.ends),
        policy: spec.policy,
        created_at: now_ms,
        compensation_mode: spec.compensation_mode,
    };
    campaigns::insert(c, &row).await?;
    let detail = format!("{} {}", row.policy.as_str(), row.compensation_mode.as_str());
    insert_staff_audit(
        c,
        &NewStaffAudit {
            actor: &op.ctx.actor,
            action: actions::CREATE,
            target: &row.id,
            detail: Some(&detail),
            address: op.ctx.address.as_deref(),
            at_ms: now_ms,
        },
    )
    .await?;
    Ok(CampaignView::from(row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::staff::Role;

    fn row(action: &str, detail: &str) -> crate::store::audit::StaffAuditRow {
        crate::store::audit::StaffAuditRow {
            id: 1,
            at: 0,
            actor: "staff:olga".into(),
            action: action.into(),
            target: "cmp_1".into(),
            detail: Some(detail.into()),
            address: None,
        }
    }

    #[test]
    fn a_staff_log_row_reads_back_as_the_change_it_recorded() {
        let c = change_of(&row(
            actions::POLICY,
            "lock -> strict: rules changed: see the notice",
        ))
        .expect("a change");
        assert_eq!(
            (
                c.what,
                c.from.as_deref(),
                c.to.as_str(),
                c.reason.as_deref()
            ),
            (
                "policy",
                Some("lock"),
                "strict",
                Some("rules changed: see the notice")
            )
        );
        let c = change_of(&row(actions::CREATE, "lock deduction")).expect("created");
        assert_eq!(
            (c.what, c.to.as_str(), c.also.as_deref()),
            ("created", "lock", Some("deduction"))
        );
        assert!(change_of(&row("template_pause", "x")).is_none());
    }

    #[test]
    fn support_staff_may_not_run_campaigns() {
        let name = crate::domain::staff::StaffName::parse("amy").expect("name");
        for (role, may) in [
            (Role::Support, false),
            (Role::Operator, true),
            (Role::Admin, true),
        ] {
            let a = Authority::Staff {
                name: name.clone(),
                role,
            };
            assert_eq!(a.may(Permission::RunCampaigns), may, "{role:?}");
        }
        assert!(Authority::Api.may(Permission::RunCampaigns));
    }
}
