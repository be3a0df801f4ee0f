//! The wake-up before expiry (过期前唤醒).
//!
//! - Activity: the shop reports what a customer did
//!   (`POST /users/{id}/activity`); the latest instant per user and kind is
//!   kept. Self-check visits count too (kind `visit`).
//! - Rules: operators define them in the console (role-checked here,
//!   audited in the staff log): at `lead_seconds` before coupons end, users
//!   holding `available` coupons of the rule's templates (or any) who were
//!   active within `active_within_seconds` get a wake-up: the reminder with
//!   the saving in words through the outbox and the in-app copy (channel
//!   tiered as reminders are), and optionally a wake-up coupon of the
//!   rule's bonus template, claimed through the ordinary claim
//!   ([`super::claims::claim_in_tx`]: its stock and per-user limit hold).
//!   A deterministic `control_percent` share of users gets nothing and is
//!   recorded as control; inactive users are recorded and get nothing, and
//!   so are users who placed an order at or after the activity that made
//!   them active (outcome `ordered`: they are buying, not drifting away;
//!   the rule page counts them).
//! - Never twice for the same expiring coupon: one `wakeup_marks` row per
//!   coupon (its primary key), written in the same transaction as the
//!   message and the wake-up coupon. A second instance doing the same
//!   user fails on the marks and rolls back (counted as `raced`).
//! - The planner is bounded: per active rule (at most [`MAX_RULES`]), pages
//!   of `batch` coupons in `(ends_at, id)` order with a keyset cursor, at
//!   most [`MAX_PAGES`] pages a run; one transaction per user.

use serde::Serialize;
use serde_json::json;
use sqlx::AnyConnection;

use super::jobs::Deadline;
use super::reminder_messages::in_app;
use super::support::Authority;
use super::{Ctx, Executed, IdempotencyRequest, Op, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::discount::DiscountRule;
use crate::domain::ids::{CouponId, TemplateId, UserId, WakeupRuleId, new_id};
use crate::domain::money::Cents;
use crate::domain::permissions::Permission;
use crate::domain::reminder::{Channel, channel, coupon_value, days_until, rate_limited};
use crate::domain::time::{from_ms, parse_rfc3339, rfc3339, to_ms};
use crate::domain::wakeup::{
    WakeupOutcome, WakeupRuleSpec, active_within, decide, in_control, ordered_since,
    parse_activity, wakeup_message,
};
use crate::i18n::Lang;
use crate::store::audit::{NewStaffAudit, insert_staff_audit};
use crate::store::outbox::{self, NewMessage};
use crate::store::wakeup::{self as store, NewMarks, RuleRow};
use crate::store::{is_unique_violation, reminders as reminder_store, templates};

/// Outbox event type of a wake-up (data as `reminder.coupons_expiring`,
/// plus `rule_id` and `bonus_coupon_id`).
pub const WAKEUP: &str = "reminder.wakeup";
/// The planner's actor in event rows (the wake-up coupon's claim).
pub const ACTOR: &str = "job:wakeup";
/// Most active rules one run looks at.
pub const MAX_RULES: i64 = 100;
/// Most pages of candidates one rule reads per run; the next run goes on.
pub const MAX_PAGES: usize = 100;
/// How far before the last complete pass's end the next pass starts
/// reading: longer than any transaction may run, so a claim that
/// committed late is still seen.
const SCAN_OVERLAP_MS: i64 = 60_000;
/// Most rules the console lists.
pub const MAX_LISTED_RULES: i64 = 200;

/// Actions of the staff log for wake-up rules (`staff_audit.action`, the
/// target is the rule's id); each has the catalog key
/// `staff-action-<word>`.
pub mod actions {
    pub const CREATE: &str = "wakeup_rule_create";
    pub const PAUSE: &str = "wakeup_rule_pause";
    pub const RESUME: &str = "wakeup_rule_resume";
    pub const ALL: [&str; 3] = [CREATE, PAUSE, RESUME];

    pub fn label_key(word: &str) -> Option<String> {
        ALL.contains(&word).then(|| format!("staff-action-{word}"))
    }
}

fn check_may_manage(authority: &Authority) -> Result<(), ServiceError> {
    if authority.may(Permission::ManageWakeups) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(
            "wake-up rules need the operator role".into(),
        ))
    }
}

/// A rule as the console shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WakeupRuleView {
    pub id: WakeupRuleId,
    pub name: String,
    pub lead_seconds: i64,
    pub active_within_seconds: i64,
    /// `(id, name)` of the rule's templates; empty: every template.
    pub templates: Vec<(TemplateId, String)>,
    /// `(id, name)` of the wake-up coupon's template.
    pub bonus_template: Option<(TemplateId, String)>,
    pub control_percent: i64,
    pub active: bool,
    pub created_at: String,
    pub created_by: String,
}

/// One outcome's figures of a rule.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct OutcomeFigures {
    /// Expiring coupons decided with this outcome.
    pub coupons: i64,
    /// Of which used after the decision and before their end.
    pub used: i64,
    pub users: i64,
    /// Wake-up coupons issued.
    pub bonus_coupons: i64,
}

impl OutcomeFigures {
    /// Used per 1000 coupons (an integer, so the page needs no floats).
    pub fn used_per_mille(&self) -> Option<i64> {
        (self.coupons > 0).then(|| self.used * 1000 / self.coupons)
    }
}

/// A rule with its results: woken against control.
#[derive(Debug, Clone, Serialize)]
pub struct WakeupRuleReport {
    pub rule: WakeupRuleView,
    pub sent: OutcomeFigures,
    pub control: OutcomeFigures,
    pub inactive: OutcomeFigures,
    /// Skipped: ordered since the activity that qualified them.
    pub ordered: OutcomeFigures,
}

/// What one planner run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WakeupReport {
    /// Users woken (message written).
    pub sent: usize,
    /// Users held back as control.
    pub control: usize,
    /// Users skipped as inactive.
    pub inactive: usize,
    /// Users skipped because they ordered since their activity.
    pub ordered: usize,
    /// Wake-up coupons issued.
    pub bonus_coupons: usize,
    /// Wakes whose wake-up coupon was refused (stock, limit, template
    /// inactive): the reminder went out without it.
    pub bonus_refused: usize,
    /// Users another instance decided first.
    pub raced: usize,
}

impl WakeupReport {
    /// Users decided.
    pub fn decided(&self) -> usize {
        self.sent + self.control + self.inactive + self.ordered
    }
}

/// What one user's transaction decided.
#[derive(Debug, Default, Clone, Serialize)]
struct UserDecision {
    outcome: Option<WakeupOutcome>,
    bonus: Option<(CouponId, String)>,
}

async fn rule_view(c: &mut AnyConnection, r: RuleRow) -> Result<WakeupRuleView, ServiceError> {
    let mut named = Vec::new();
    for id in r.templates().into_iter().map(TemplateId::from_wire) {
        let name = templates::get(c, &id)
            .await?
            .map_or_else(|| id.to_string(), |t| t.name);
        named.push((id, name));
    }
    let bonus = match &r.bonus_template_id {
        Some(id) => Some((
            id.clone(),
            templates::get(c, id)
                .await?
                .map_or_else(|| id.to_string(), |t| t.name),
        )),
        None => None,
    };
    Ok(WakeupRuleView {
        active: r.status == "active",
        templates: named,
        bonus_template: bonus,
        created_at: rfc3339(from_ms(r.created_at)),
        id: r.id,
        name: r.name,
        lead_seconds: r.lead_seconds,
        active_within_seconds: r.active_within_seconds,
        control_percent: r.control_percent,
        created_by: r.created_by,
    })
}

impl Service {
    /// Records the shop's report of a customer's activity (`kind`, `at`):
    /// the latest instant per user and kind. Bad input: 400 with the field,
    /// nothing written. Under an `Idempotency-Key` like every write.
    pub async fn record_activity(
        &self,
        idem: Option<&IdempotencyRequest>,
        user_id: &UserId,
        kind: Option<&str>,
        at: Option<&str>,
    ) -> Result<Executed<()>, ServiceError> {
        let user = user_id.clone();
        let (kind, at) = parse_activity(kind, at, self.now())?;
        let at_ms = to_ms(at);
        self.write(idem, move |c| {
            let user = user.clone();
            Box::pin(
                async move { Ok(store::record_activity(c, &user, kind.as_str(), at_ms).await?) },
            )
        })
        .await
    }

    /// Creates a wake-up rule (operators and admins), audited; its fields
    /// checked at the edge ([`WakeupRuleSpec::parse`]), its templates here.
    pub async fn create_wakeup_rule_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        spec: WakeupRuleSpec,
    ) -> Result<WakeupRuleView, ServiceError> {
        check_may_manage(authority)?;
        let op = self.op(ctx);
        let done = self
            .write(None, move |c| {
                let spec = spec.clone();
                let op = op.clone();
                Box::pin(async move { create_wakeup_rule_tx(c, &op, &spec).await })
            })
            .await?;
        done.fresh()
            .ok_or_else(|| ServiceError::IllegalTransition("the rule was not created".into()))
    }

    /// Pauses (`active = false`) or resumes a rule (operators and admins),
    /// with one conditional update, audited with the reason.
    pub async fn set_wakeup_rule_active_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        id: WakeupRuleId,
        active: bool,
        reason: Option<String>,
    ) -> Result<(), ServiceError> {
        check_may_manage(authority)?;
        let reason = crate::domain::reason::parse_reason(reason)?;
        let op = self.op(ctx);
        self.write(None, move |c| {
            let id = id.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move { set_wakeup_rule_active_tx(c, &op, &id, &reason, active).await })
        })
        .await?;
        Ok(())
    }

    /// Every rule (newest first, at most [`MAX_LISTED_RULES`]) with its
    /// results (operators and admins).
    pub async fn wakeup_rules_as(
        &self,
        authority: &Authority,
    ) -> Result<Vec<WakeupRuleReport>, ServiceError> {
        check_may_manage(authority)?;
        self.read(move |c| {
            Box::pin(async move {
                let rows = store::list_rules(c, false, MAX_LISTED_RULES).await?;
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    out.push(rule_report(c, r).await?);
                }
                Ok(out)
            })
        })
        .await
    }

    /// One rule with its results (operators and admins), or 404.
    pub async fn wakeup_rule_as(
        &self,
        authority: &Authority,
        id: &WakeupRuleId,
    ) -> Result<WakeupRuleReport, ServiceError> {
        check_may_manage(authority)?;
        let id = id.clone();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                let r = store::get_rule(c, &id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("wake-up rule", &id))?;
                rule_report(c, r).await
            })
        })
        .await
    }

    /// One run of the wake-up planner at the service's now (see the module
    /// docs). Bounded; call again until it reports nothing.
    pub async fn plan_wakeups(&self, batch: i64) -> Result<WakeupReport, ServiceError> {
        let now = self.now();
        let now_ms = to_ms(now);
        let batch = batch.clamp(1, 1000);
        let rules = self
            .read(move |c| {
                Box::pin(async move { Ok(store::list_rules(c, true, MAX_RULES).await?) })
            })
            .await?;
        let mut report = WakeupReport::default();
        for rule in rules {
            let lead_ms = rule.lead_seconds.saturating_mul(1000);
            let hi_ms = now_ms.saturating_add(lead_ms);
            let templates = rule.templates();
            // Coupons ending before the last complete pass's end (less an
            // overlap for claims that committed late) were all decided: a
            // run reads only what came into reach since. A coupon claimed
            // later ends at least the lead after its claim, beyond it.
            let lo_ms = rule.scanned_through.map_or(now_ms, |done| {
                now_ms.max(done.saturating_sub(SCAN_OVERLAP_MS))
            });
            // The start of the band: before every coupon id.
            let mut after = (i64::MIN, CouponId::from_wire(String::new()));
            let mut seen: std::collections::HashSet<UserId> = std::collections::HashSet::new();
            let mut complete = false;
            for _ in 0..MAX_PAGES {
                let (a_ends, a_id) = after.clone();
                let templates = templates.clone();
                let (page, last) = self
                    .read(move |c| {
                        let a_id = a_id.clone();
                        let templates = templates.clone();
                        Box::pin(async move {
                            let rows = store::due_coupons(
                                c,
                                lo_ms,
                                hi_ms,
                                lead_ms,
                                &templates,
                                (a_ends, a_id.as_str()),
                                batch,
                            )
                            .await?;
                            let last = rows.last().map(|r| (r.ends_at, r.id.clone()));
                            let ids: Vec<CouponId> = rows.iter().map(|r| r.id.clone()).collect();
                            let done = store::marked(c, &ids).await?;
                            let users: Vec<UserId> = rows
                                .into_iter()
                                .filter(|r| !done.contains(r.id.as_str()))
                                .map(|r| r.user_id)
                                .collect();
                            Ok((users, last))
                        })
                    })
                    .await?;
                let Some(last) = last else {
                    complete = true;
                    break;
                };
                for user in page {
                    if !seen.insert(user.clone()) {
                        continue;
                    }
                    self.wake_user(&rule, &user, &mut report).await?;
                }
                after = last;
            }
            if complete {
                let id = rule.id.clone();
                self.write(None, move |c| {
                    let id = id.clone();
                    Box::pin(async move { Ok(store::advance_scan(c, &id, hi_ms).await?) })
                })
                .await?;
            }
        }
        Ok(report)
    }

    /// One user under one rule: first with the wake-up coupon; if its claim
    /// is refused (stock, limit, template not active), the whole
    /// transaction rolls back and the wake-up goes out without it.
    async fn wake_user(
        &self,
        rule: &RuleRow,
        user_id: &UserId,
        report: &mut WakeupReport,
    ) -> Result<(), ServiceError> {
        let with_bonus = rule.bonus_template_id.is_some();
        let mut result = self.wake_user_once(rule, user_id, with_bonus).await;
        if with_bonus && matches!(result, Err(ServiceError::Refused { .. })) {
            report.bonus_refused += 1;
            result = self.wake_user_once(rule, user_id, false).await;
        }
        match result {
            Ok(d) => {
                match d.outcome {
                    Some(WakeupOutcome::Sent) => report.sent += 1,
                    Some(WakeupOutcome::Control) => report.control += 1,
                    Some(WakeupOutcome::Inactive) => report.inactive += 1,
                    Some(WakeupOutcome::Ordered) => report.ordered += 1,
                    None => {}
                }
                if let Some((id, ends_at)) = d.bonus {
                    report.bonus_coupons += 1;
                    if let Ok(at) = parse_rfc3339(&ends_at) {
                        self.schedule(at, Deadline::CouponEnd(id));
                    }
                }
                Ok(())
            }
            Err(ServiceError::Db(e)) if is_unique_violation(&e) => {
                report.raced += 1;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    async fn wake_user_once(
        &self,
        rule: &RuleRow,
        user_id: &UserId,
        with_bonus: bool,
    ) -> Result<UserDecision, ServiceError> {
        let op = self.op(&Ctx::new(ACTOR, None));
        let rule = rule.clone();
        let user_id = user_id.clone();
        Ok(self
            .write(None, move |c| {
                let op = op.clone();
                let rule = rule.clone();
                let user_id = user_id.clone();
                Box::pin(async move { wake_user_tx(c, &op, &rule, &user_id, with_bonus).await })
            })
            .await?
            .fresh()
            .unwrap_or_default())
    }
}

async fn rule_report(c: &mut AnyConnection, r: RuleRow) -> Result<WakeupRuleReport, ServiceError> {
    let figures = store::rule_figures(c, &r.id).await?;
    let pick = |o: WakeupOutcome| {
        figures
            .iter()
            .find(|f| f.0 == o.as_str())
            .map(|f| OutcomeFigures {
                coupons: f.1,
                used: f.2,
                users: f.3,
                bonus_coupons: f.4,
            })
            .unwrap_or_default()
    };
    let (sent, control, inactive, ordered) = (
        pick(WakeupOutcome::Sent),
        pick(WakeupOutcome::Control),
        pick(WakeupOutcome::Inactive),
        pick(WakeupOutcome::Ordered),
    );
    Ok(WakeupRuleReport {
        rule: rule_view(c, r).await?,
        sent,
        control,
        inactive,
        ordered,
    })
}

/// One user's decision under one rule, in one transaction: re-reads the
/// user's unmarked coupons in reach, decides (inactive, ordered, control, sent),
/// writes the marks, and for a wake-up the message (outbox and in-app)
/// and optionally the wake-up coupon.
async fn wake_user_tx(
    c: &mut AnyConnection,
    op: &Op,
    rule: &RuleRow,
    user_id: &UserId,
    with_bonus: bool,
) -> Result<UserDecision, ServiceError> {
    let now = op.now;
    let now_ms = to_ms(now);
    let lead_ms = rule.lead_seconds.saturating_mul(1000);
    let due = store::user_due(
        c,
        user_id,
        now_ms,
        now_ms.saturating_add(lead_ms),
        lead_ms,
        &rule.templates(),
    )
    .await?;
    if due.is_empty() {
        return Ok(UserDecision::default());
    }
    let last = store::last_activity(c, user_id).await?.map(from_ms);
    let active = active_within(last, now, rule.active_within_seconds);
    // Read only for an active user: an inactive one is skipped anyway.
    let ordered = active && ordered_since(last, store::last_order(c, user_id).await?.map(from_ms));
    let outcome = decide(
        active,
        ordered,
        in_control(&rule.id, user_id, rule.control_percent),
    );
    // `store::insert_marks` takes the ids as text.
    let coupons: Vec<(String, i64)> = due.iter().map(|d| (d.id.to_string(), d.ends_at)).collect();
    let mut marks = NewMarks {
        rule_id: &rule.id,
        user_id,
        outcome: outcome.as_str(),
        channel: None,
        bonus_coupon_id: None,
        created_at: now_ms,
    };
    if outcome != WakeupOutcome::Sent {
        store::insert_marks(c, &marks, &coupons).await?;
        return Ok(UserDecision {
            outcome: Some(outcome),
            bonus: None,
        });
    }
    let total = due.iter().fold(Cents::ZERO, |sum, d| {
        sum.saturating_add(coupon_value(&DiscountRule::from_stored(
            d.kind,
            d.value_cents.map(Cents::get),
            d.percent_off,
            d.max_discount_cents.map(Cents::get),
        )))
    });
    let earliest = due.iter().map(|d| d.ends_at).min().unwrap_or(now_ms);
    let s = &op.settings.reminders;
    // Tiered as reminders are: worth the sms threshold goes sms (the user
    // is active: the rule only wakes active users), within the caps.
    let since = now_ms - 24 * 3600 * 1000;
    let sent_sms = reminder_store::sent_since(c, user_id, Channel::Sms.as_str(), since).await?;
    let sent_push = reminder_store::sent_since(c, user_id, Channel::Push.as_str(), since).await?;
    let ch = rate_limited(
        channel(total, s.sms_min_cents, true),
        sent_sms,
        sent_push,
        s.limits,
    );
    let mut bonus = None;
    if with_bonus && let Some(tpl) = &rule.bonus_template_id {
        let coupon = super::claims::claim_in_tx(c, op, user_id, tpl).await?;
        bonus = Some(coupon);
    }
    let bonus_words = bonus.as_ref().map(|b| {
        (
            coupon_value(&DiscountRule::from_stored(
                b.kind,
                b.value_cents.map(Cents::get),
                b.percent_off,
                b.max_discount_cents.map(Cents::get),
            )),
            b.min_order_cents,
        )
    });
    let days = days_until(from_ms(earliest), now, s.tz);
    let text = wakeup_message(due.len(), total, days, bonus_words);
    let wake_id = new_id("wku", now_ms);
    let ids: Vec<&CouponId> = due.iter().map(|d| &d.id).collect();
    let bonus_id = bonus.as_ref().map(|b| b.id.clone());
    marks.channel = Some(ch.as_str());
    marks.bonus_coupon_id = bonus_id.as_ref();
    store::insert_marks(c, &marks, &coupons).await?;
    let payload = json!({
        "channel": ch.as_str(),
        "coupon_ids": ids,
        "total_value_cents": total.get(),
        "earliest_ends_at": rfc3339(from_ms(earliest)),
        "message": Lang::Zh.msg(&text),
        "message_en": Lang::En.msg(&text),
        "rule_id": rule.id,
        "bonus_coupon_id": bonus_id,
        "wakeup_id": wake_id,
    });
    outbox::insert_many(
        c,
        &[NewMessage {
            event_type: WAKEUP,
            user_id: Some(user_id.clone()),
            subject_id: Some(wake_id.clone()),
            payload: payload.to_string(),
            created_at: now_ms,
        }],
    )
    .await?;
    in_app(c, user_id, WAKEUP, &wake_id, &text, now_ms).await?;
    Ok(UserDecision {
        outcome: Some(WakeupOutcome::Sent),
        bonus: bonus.map(|b| (b.id, b.ends_at)),
    })
}

/// A share per mille as a percentage with one decimal ("12.5%"), or "—".
pub fn per_mille_text(v: Option<i64>) -> String {
    v.map_or_else(|| "—".to_string(), |pm| format!("{}.{}%", pm / 10, pm % 10))
}

/// The transaction of [`Service::create_wakeup_rule_as`].
async fn create_wakeup_rule_tx(
    c: &mut AnyConnection,
    op: &Op,
    spec: &WakeupRuleSpec,
) -> Result<WakeupRuleView, ServiceError> {
    for id in &spec.template_ids {
        if templates::get(c, id).await?.is_none() {
            return Err(ServiceError::Invalid(FieldError::new(
                "template_ids",
                "names no template",
            )));
        }
    }
    if let Some(id) = &spec.bonus_template_id
        && templates::get(c, id).await?.is_none()
    {
        return Err(ServiceError::Invalid(FieldError::new(
            "bonus_template_id",
            "names no template",
        )));
    }
    let now_ms = to_ms(op.now);
    let row = RuleRow {
        id: WakeupRuleId::generate(now_ms),
        name: spec.name.clone(),
        lead_seconds: spec.lead_seconds,
        active_within_seconds: spec.active_within_seconds,
        template_ids: serde_json::to_string(&spec.template_ids).unwrap_or_else(|_| "[]".into()),
        bonus_template_id: spec.bonus_template_id.clone(),
        control_percent: spec.control_percent,
        status: "active".into(),
        created_at: now_ms,
        created_by: op.ctx.actor.clone(),
        scanned_through: None,
    };
    store::insert_rule(c, &row).await?;
    let detail = json!({
        "name": row.name,
        "lead_seconds": row.lead_seconds,
        "active_within_seconds": row.active_within_seconds,
        "template_ids": spec.template_ids,
        "bonus_template_id": row.bonus_template_id,
        "control_percent": row.control_percent,
    })
    .to_string();
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
    rule_view(c, row).await
}

/// The transaction of [`Service::set_wakeup_rule_active_as`].
async fn set_wakeup_rule_active_tx(
    c: &mut AnyConnection,
    op: &Op,
    id: &WakeupRuleId,
    reason: &str,
    active: bool,
) -> Result<(), ServiceError> {
    if store::get_rule(c, id).await?.is_none() {
        return Err(ServiceError::not_found("wake-up rule", id));
    }
    let (from, to, action) = if active {
        ("paused", "active", actions::RESUME)
    } else {
        ("active", "paused", actions::PAUSE)
    };
    if store::set_rule_status(c, id, from, to).await? {
        insert_staff_audit(
            c,
            &NewStaffAudit {
                actor: &op.ctx.actor,
                action,
                target: id,
                detail: Some(&format!("{from} -> {to}: {reason}")),
                address: op.ctx.address.as_deref(),
                at_ms: to_ms(op.now),
            },
        )
        .await?;
    }
    Ok(())
}
