//! Creating and reading coupon templates.

use super::audit::StaffAuditView;
use super::support::Authority;
use super::views::{StatusCounts, TemplateView};
use sqlx::AnyConnection;

use super::{Ctx, Executed, IdempotencyRequest, Op, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::discount::DiscountKind;
use crate::domain::ids::TemplateId;
use crate::domain::money::Cents;
use crate::domain::permissions::Permission;
use crate::domain::template::{
    ClaimStanding, EditRefusal, TemplateChanges, TemplateEdit, TemplateInput, TemplateSpec,
    TemplateStatus, TermsRecord, check_edit, claiming_detail, stock_shards,
};
use crate::domain::time::{from_ms, to_ms};
use crate::store::audit::{AuditQuery, NewStaffAudit, insert_staff_audit};
use crate::store::templates::{self, TemplatePageQuery, TemplateRow};

/// Actions of the staff log for templates (`staff_audit.action`; the
/// target is the template's id). Each has the catalog key
/// `staff-action-<word>`.
pub mod actions {
    pub const CREATE: &str = "template_create";
    pub const EDIT: &str = "template_edit";
    pub const PAUSE: &str = "template_pause";
    pub const RESUME: &str = "template_resume";
    pub const ALL: [&str; 4] = [CREATE, EDIT, PAUSE, RESUME];

    /// The catalog key of a template action's words, if it is one.
    pub fn label_key(word: &str) -> Option<String> {
        ALL.contains(&word).then(|| format!("staff-action-{word}"))
    }
}

fn check_may_manage(authority: &Authority) -> Result<(), ServiceError> {
    if authority.may(Permission::ManageTemplates) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(
            "managing templates needs the operator role".into(),
        ))
    }
}

/// Most rows of a template's change history one page shows.
pub const MAX_HISTORY: i64 = 200;

impl Service {
    /// Checks and stores a template with its stock shards.
    pub async fn create_template(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        input: TemplateInput,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        let spec = TemplateSpec::parse(input, self.now())?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let spec = spec.clone();
            let op = op.clone();
            Box::pin(async move { create_template_tx(c, &op, &spec).await })
        })
        .await
    }

    pub async fn get_template(&self, id: &TemplateId) -> Result<TemplateView, ServiceError> {
        let id = id.clone();
        let now = self.now();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move { load_view(c, &id, now).await })
        })
        .await
    }

    /// [`Service::create_template`] on a staff member's (or the API's)
    /// authority: operators and admins only.
    pub async fn create_template_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        input: TemplateInput,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        check_may_manage(authority)?;
        self.create_template(ctx, idem, input).await
    }

    /// The staff log of template `id`: created, edited, paused, resumed,
    /// newest first, at most [`MAX_HISTORY`] rows (`staff_audit_target_at_idx`).
    pub async fn template_history(
        &self,
        id: &TemplateId,
    ) -> Result<Vec<StaffAuditView>, ServiceError> {
        let page = self
            .audit_staff(
                AuditQuery {
                    target: Some(id.to_string()),
                    ..AuditQuery::default()
                },
                None,
                MAX_HISTORY,
            )
            .await?;
        Ok(page
            .rows
            .into_iter()
            .filter(|r| actions::ALL.contains(&r.action.as_str()))
            .collect())
    }

    /// A page of templates, newest first, optionally of one standing, of
    /// one kind and whose name contains `q`; `after` is the previous page's
    /// `next`.
    pub async fn list_templates(
        &self,
        standing: Option<ClaimStanding>,
        kind: Option<DiscountKind>,
        q: Option<String>,
        after: Option<String>,
        limit: i64,
    ) -> Result<TemplatePage, ServiceError> {
        if !(1..=MAX_TEMPLATE_PAGE).contains(&limit) {
            return Err(ServiceError::Invalid(FieldError::new(
                "limit",
                format!("must be between 1 and {MAX_TEMPLATE_PAGE}"),
            )));
        }
        let before = match after.as_deref() {
            None | Some("") => None,
            Some(raw) => Some(decode_cursor(raw).ok_or_else(|| {
                ServiceError::Invalid(FieldError::new("cursor", "is not a cursor this list gave"))
            })?),
        };
        let pattern = match q.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) if text.chars().count() > 200 => {
                return Err(ServiceError::Invalid(FieldError::new(
                    "q",
                    "must be at most 200 characters",
                )));
            }
            Some(text) => Some(like_pattern(text)),
        };
        let now = self.now();
        self.read(move |c| {
            let before = before.clone();
            let pattern = pattern.clone();
            Box::pin(async move {
                list_templates_tx(c, &before, &pattern, standing, kind, now, limit).await
            })
        })
        .await
    }

    /// Pauses (`pause`) or resumes claiming of a template, with one
    /// conditional update, audited with who, from where and why.
    /// Idempotent in effect: pausing a paused template changes nothing and
    /// answers the template as it is.
    pub async fn set_template_claiming(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        id: TemplateId,
        pause: bool,
        reason: Option<String>,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        let reason = crate::domain::reason::parse_reason(reason)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let id = id.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move { set_template_claiming_tx(c, &op, &id, &reason, pause).await })
        })
        .await
    }

    /// [`Service::set_template_claiming`] on a staff member's (or the
    /// API's) authority: operators and admins only.
    pub async fn set_template_claiming_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        id: TemplateId,
        pause: bool,
        reason: Option<String>,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        check_may_manage(authority)?;
        self.set_template_claiming(ctx, idem, id, pause, reason)
            .await
    }

    /// [`Service::edit_template`] on a staff member's (or the API's)
    /// authority: operators and admins only.
    pub async fn edit_template_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        id: TemplateId,
        patch: TemplatePatch,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        check_may_manage(authority)?;
        self.edit_template(ctx, idem, id, patch).await
    }
}

/// A `PATCH /templates/{id}` body before checking: the safe fields, and
/// the names of any other fields it tried to change.
#[derive(Debug, Clone, Default)]
pub struct TemplatePatch {
    pub name: Option<String>,
    pub total_stock: Option<i64>,
    pub claim_ends_at: Option<String>,
    /// End claiming now (the console's "end now": the moment of the
    /// transaction, so it cannot be refused as already past).
    pub end_claiming_now: bool,
    /// A new budget of a template that has one (more, or less down to
    /// what is used).
    pub budget_cents: Option<i64>,
    /// Fields that would change issued coupons (refused with the reason).
    pub unsafe_fields: Vec<String>,
}

/// A refused edit as the API answers it: 409 `edit_not_allowed` whose
/// message starts with the refusal's own words.
fn edit_refused(why: EditRefusal, detail: Option<String>) -> ServiceError {
    let message = match detail {
        Some(d) => format!("{} ({d})", why.message()),
        None => why.message().to_string(),
    };
    ServiceError::refused(super::Refusal::EditNotAllowed, message)
}

impl Service {
    /// Applies a safe edit to a template: a new name, more stock (never
    /// less, never below what was claimed), an earlier end of claiming.
    /// Anything that would change issued coupons is refused with 409
    /// `edit_not_allowed`. Audited in the staff log with before -> after.
    pub async fn edit_template(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        id: TemplateId,
        patch: TemplatePatch,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        if let Some(field) = patch.unsafe_fields.first() {
            return Err(edit_refused(
                EditRefusal::UnsafeField,
                Some(format!("field {field}")),
            ));
        }
        let name = match patch.name.as_deref().map(str::trim) {
            None => None,
            Some(n)
                if n.is_empty() || n.chars().count() > crate::domain::template::MAX_NAME_CHARS =>
            {
                return Err(ServiceError::Invalid(FieldError::new(
                    "name",
                    format!(
                        "must be 1-{} characters",
                        crate::domain::template::MAX_NAME_CHARS
                    ),
                )));
            }
            Some(n) => Some(n.to_string()),
        };
        if let Some(s) = patch.total_stock
            && !(1..=crate::domain::template::MAX_TOTAL_STOCK).contains(&s)
        {
            return Err(ServiceError::Invalid(FieldError::new(
                "total_stock",
                format!(
                    "must be between 1 and {}",
                    crate::domain::template::MAX_TOTAL_STOCK
                ),
            )));
        }
        let claim_ends_at = match patch.claim_ends_at.as_deref() {
            None => None,
            Some(raw) => Some(
                crate::domain::time::parse_rfc3339(raw)
                    .map_err(|m| ServiceError::Invalid(FieldError::new("claim_ends_at", m)))?,
            ),
        };
        if let Some(b) = patch.budget_cents
            && !(1..=crate::domain::money::MAX_CENTS).contains(&b)
        {
            return Err(ServiceError::Invalid(FieldError::new(
                "budget_cents",
                "must be greater than 0",
            )));
        }
        let edit = TemplateEdit {
            name,
            total_stock: patch.total_stock,
            claim_ends_at,
            budget_cents: patch.budget_cents,
        };
        let end_now = patch.end_claiming_now;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let id = id.clone();
            let edit = edit.clone();
            let op = op.clone();
            Box::pin(async move { edit_template_tx(c, &op, &id, &edit, end_now).await })
        })
        .await
    }
}

impl Service {
    /// Changes every term of a template while none of its coupons has
    /// been claimed: the same fields and rules as creating one
    /// ([`TemplateSpec::parse`]), stored with one conditional update that
    /// refuses (409 `edit_not_allowed`, [`EditRefusal::AlreadyClaimed`])
    /// once any stock was claimed, in the same transaction as new stock
    /// shards and the staff-log row (before → after of each changed
    /// field). A console feature: `PATCH /templates/{id}` keeps to the safe
    /// fields.
    pub async fn edit_template_terms(
        &self,
        ctx: &Ctx,
        id: TemplateId,
        input: TemplateInput,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        let spec = TemplateSpec::parse(input, self.now())?;
        let op = self.op(ctx);
        self.write(None, move |c| {
            let id = id.clone();
            let spec = spec.clone();
            let op = op.clone();
            Box::pin(async move { edit_template_terms_tx(c, &op, &id, &spec).await })
        })
        .await
    }

    /// [`Service::edit_template_terms`] on a staff member's authority:
    /// operators and admins only.
    pub async fn edit_template_terms_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        id: TemplateId,
        input: TemplateInput,
    ) -> Result<Executed<TemplateView>, ServiceError> {
        check_may_manage(authority)?;
        self.edit_template_terms(ctx, id, input).await
    }
}

/// A stored template's terms as the staff log keeps them.
fn stored_terms(t: &TemplateRow) -> TermsRecord {
    let t_ms = |x: Option<i64>| x.map(|ms| crate::domain::time::rfc3339(from_ms(ms)));
    let line = crate::store::views::parse_stored_line_terms(&t.line_terms);
    let (scope, refund_rule) = (line.scope, line.refund_rule);
    TermsRecord {
        kind: t.kind,
        value_cents: t.value_cents.map(Cents::get),
        percent_off: t.percent_off,
        max_discount_cents: t.max_discount_cents.map(Cents::get),
        min_order_cents: t.min_order_cents.get(),
        categories: serde_json::from_str(&t.categories).unwrap_or_default(),
        valid_from: t_ms(t.valid_from),
        valid_until: t_ms(t.valid_until),
        valid_seconds: t.valid_seconds,
        expiry_spread_seconds: t.expiry_spread_seconds,
        skus: scope.skus.iter().map(|s| s.to_string()).collect(),
        exclude_skus: scope.exclude_skus.iter().map(|s| s.to_string()).collect(),
        shop_id: scope.shop_id.map(|s| s.to_string()),
        // Left out when proportional, as records written before the rule
        // existed read.
        partial_refund_rule: (refund_rule != Default::default())
            .then(|| refund_rule.as_str().to_string()),
        stackable: (!line.stackable).then_some(false),
    }
}

/// Most templates one page lists.
pub const MAX_TEMPLATE_PAGE: i64 = 200;

/// A page of `GET /templates`.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct TemplatePage {
    pub templates: Vec<TemplateView>,
    /// The cursor of the next page; null on the last.
    pub next: Option<String>,
}

/// The template `id` as the API shows it now, or 404.
async fn load_view(
    c: &mut sqlx::AnyConnection,
    id: &TemplateId,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<TemplateView, ServiceError> {
    let row = load_row(c, id).await?;
    template_view(c, row, now).await
}

async fn load_row(
    c: &mut sqlx::AnyConnection,
    id: &TemplateId,
) -> Result<TemplateRow, ServiceError> {
    templates::get(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("template", id))
}

async fn template_view(
    c: &mut sqlx::AnyConnection,
    row: TemplateRow,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<TemplateView, ServiceError> {
    let claimed = templates::claimed(c, &row.id).await?;
    let counts = StatusCounts::from_rows(&templates::status_counts(c, &row.id, to_ms(now)).await?);
    Ok(TemplateView::from_row(row, claimed, counts, now))
}

/// `created_at.id` back to a cursor.
fn decode_cursor(raw: &str) -> Option<(i64, TemplateId)> {
    let (at, id) = raw.split_once('.')?;
    let at: i64 = at.parse().ok()?;
    (!id.is_empty() && id.chars().count() <= 64).then(|| (at, TemplateId::from_wire(id)))
}

/// `text` as a LIKE pattern matching names that contain it (`\` escapes).
pub(crate) fn like_pattern(text: &str) -> String {
    let mut out = String::from("%");
    for ch in text.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('%');
    out
}

/// Reads one page of the matching templates, each with its claimed count and coupons by status.
async fn list_templates_tx(
    c: &mut AnyConnection,
    before: &Option<(i64, TemplateId)>,
    pattern: &Option<String>,
    standing: Option<ClaimStanding>,
    kind: Option<DiscountKind>,
    now: chrono::DateTime<chrono::Utc>,
    limit: i64,
) -> Result<TemplatePage, ServiceError> {
    let rows = templates::page(
        c,
        &TemplatePageQuery {
            before: before.as_ref().map(|(at, id)| (*at, id.as_str())),
            standing,
            kind,
            name_like: pattern.as_deref(),
            now_ms: to_ms(now),
            limit,
        },
    )
    .await?;
    let next = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| format!("{}.{}", r.created_at, r.id)))
        .flatten();
    let ids: Vec<&TemplateId> = rows.iter().map(|r| &r.id).collect();
    let (claimed, counts) = templates::page_figures(c, &ids, to_ms(now)).await?;
    let out = rows
        .into_iter()
        .map(|row| {
            let n = claimed
                .iter()
                .find(|(id, _)| *id == row.id)
                .map_or(0, |(_, n)| *n);
            let mine: Vec<(String, i64, i64)> = counts
                .iter()
                .filter(|(id, ..)| *id == row.id)
                .map(|(_, st, k, past)| (st.clone(), *k, *past))
                .collect();
            TemplateView::from_row(row, n, StatusCounts::from_rows(&mine), now)
        })
        .collect();
    Ok(TemplatePage {
        templates: out,
        next,
    })
}

/// The stored row of a checked template: its terms, stock, limits and
/// claiming window from `spec`; its id, status and times from the caller
/// (a new template's, or the edited one's kept as they were).
fn template_row(
    spec: &TemplateSpec,
    id: TemplateId,
    status: TemplateStatus,
    created_at: i64,
    paused_at: Option<i64>,
) -> TemplateRow {
    let rule = spec.terms.rule;
    TemplateRow {
        id,
        name: spec.name.clone(),
        kind: rule.discount_kind(),
        value_cents: rule.value_cents(),
        percent_off: rule.percent_off().map(i64::from),
        max_discount_cents: rule.max_discount_cents(),
        min_order_cents: spec.terms.min_order,
        categories: serde_json::to_string(&spec.terms.categories).unwrap_or_else(|_| "[]".into()),
        valid_from: spec.validity.valid_from().map(to_ms),
        valid_until: spec.validity.hard_end().map(to_ms),
        valid_seconds: spec.validity.valid_seconds(),
        total_stock: spec.total_stock,
        per_user_limit: spec.per_user_limit,
        status,
        created_at,
        paused_at,
        claim_ends_at: spec.claim_ends_at.map(to_ms),
        expiry_spread_seconds: spec.expiry_spread_seconds,
        line_terms: crate::store::views::line_terms_json(
            &spec.terms.scope,
            spec.terms.refund_rule,
            spec.terms.stackable,
        ),
        budget_cents: spec.budget,
        budget_left_cents: spec.budget.map(Cents::get),
    }
}

/// The transaction of [`Service::edit_template_terms`]: every term replaced
/// while nothing has been claimed.
async fn edit_template_terms_tx(
    c: &mut AnyConnection,
    op: &Op,
    id: &TemplateId,
    spec: &TemplateSpec,
) -> Result<TemplateView, ServiceError> {
    let old = load_row(c, id).await?;
    let row = template_row(
        spec,
        old.id.clone(),
        old.status,
        old.created_at,
        old.paused_at,
    );
    let shards = templates::shard_count(c, id).await?;
    if !templates::update_terms_unclaimed(c, &row).await? {
        return Err(edit_refused(EditRefusal::AlreadyClaimed, None));
    }
    if row.total_stock != old.total_stock
        && !templates::replace_unclaimed_shards(c, id, shards, &stock_shards(row.total_stock))
            .await?
    {
        return Err(edit_refused(EditRefusal::AlreadyClaimed, None));
    }
    let mut changes = TemplateChanges::between(
        (&old.name, old.total_stock, old.claim_ends_at.map(from_ms)),
        (&row.name, row.total_stock, row.claim_ends_at.map(from_ms)),
    );
    let before = stored_terms(&old);
    let after = TermsRecord::of_spec(spec);
    if before != after {
        changes.terms = Some((before, after));
    }
    if old.per_user_limit != row.per_user_limit {
        changes.per_user_limit = Some((old.per_user_limit, row.per_user_limit));
    }
    if !changes.is_empty() {
        insert_staff_audit(
            c,
            &NewStaffAudit {
                actor: &op.ctx.actor,
                action: actions::EDIT,
                target: id,
                detail: Some(&changes.to_detail()),
                address: op.ctx.address.as_deref(),
                at_ms: to_ms(op.now),
            },
        )
        .await?;
    }
    load_view(c, id, op.now).await
}

/// The transaction of [`Service::edit_template`]: the fields safe to change
/// after claims began.
async fn edit_template_tx(
    c: &mut AnyConnection,
    op: &Op,
    id: &TemplateId,
    edit: &TemplateEdit,
    end_now: bool,
) -> Result<TemplateView, ServiceError> {
    let row = load_row(c, id).await?;
    check_edit(edit, row.total_stock, op.now).map_err(|why| edit_refused(why, None))?;
    let claimed = templates::claimed(c, id).await?;
    if let Some(total) = edit.total_stock
        && total < claimed
    {
        return Err(edit_refused(
            EditRefusal::BelowClaimed,
            Some(format!("{claimed} claimed")),
        ));
    }
    let name = edit.name.clone().unwrap_or_else(|| row.name.clone());
    let stock = edit.total_stock.or(row.total_stock);
    let now_ms = to_ms(op.now);
    let ends = match (end_now, row.claim_ends_at) {
        // Already ended earlier: ending now changes nothing.
        (true, Some(e)) if e <= now_ms => Some(e),
        (true, _) => Some(now_ms),
        (false, old) => edit.claim_ends_at.map(to_ms).or(old),
    };
    if !templates::update_safe_fields(c, id, row.total_stock, &name, stock, ends).await? {
        return Err(edit_refused(EditRefusal::ChangedMeanwhile, None));
    }
    if let (Some(old), Some(new)) = (row.total_stock, edit.total_stock)
        && new > old
    {
        templates::grow_stock(c, id, new - old).await?;
    }
    let budget = match (row.budget_cents.map(Cents::get), edit.budget_cents) {
        (_, None) => None,
        (None, Some(_)) => {
            return Err(edit_refused(EditRefusal::NoBudget, None)
                .about(crate::i18n::Msg::new(EditRefusal::NoBudget.label_key())));
        }
        (Some(old), Some(new)) if old == new => None,
        (Some(old), Some(new)) => {
            let used = crate::store::budgets::used_of(c, id)
                .await?
                .map_or(0, |(used, _)| used);
            if new < used {
                return Err(edit_refused(
                    EditRefusal::BudgetBelowUsed,
                    Some(format!("{used} cents used")),
                )
                .about(crate::i18n::Msg::new(
                    EditRefusal::BudgetBelowUsed.label_key(),
                )));
            }
            if !crate::store::budgets::change_budget(c, id, old, new).await? {
                return Err(edit_refused(EditRefusal::ChangedMeanwhile, None));
            }
            Some((Some(old), Some(new)))
        }
    };
    let mut changes = TemplateChanges::between(
        (&row.name, row.total_stock, row.claim_ends_at.map(from_ms)),
        (&name, stock, ends.map(from_ms)),
    );
    changes.budget_cents = budget;
    if !changes.is_empty() {
        insert_staff_audit(
            c,
            &NewStaffAudit {
                actor: &op.ctx.actor,
                action: actions::EDIT,
                target: id,
                detail: Some(&changes.to_detail()),
                address: op.ctx.address.as_deref(),
                at_ms: now_ms,
            },
        )
        .await?;
    }
    load_view(c, id, op.now).await
}

/// The transaction of [`Service::create_template`].
async fn create_template_tx(
    c: &mut AnyConnection,
    op: &Op,
    spec: &TemplateSpec,
) -> Result<TemplateView, ServiceError> {
    let now_ms = to_ms(op.now);
    let row = template_row(
        spec,
        TemplateId::generate(now_ms),
        TemplateStatus::Active,
        now_ms,
        None,
    );
    templates::insert(c, &row, &stock_shards(spec.total_stock)).await?;
    let detail = TemplateChanges {
        name: Some((None, row.name.clone())),
        total_stock: Some((None, row.total_stock)),
        claim_ends_at: spec
            .claim_ends_at
            .map(|at| (None, Some(crate::domain::time::rfc3339(at)))),
        ..TemplateChanges::default()
    }
    .to_detail();
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
    Ok(TemplateView::from_row(
        row,
        0,
        StatusCounts::default(),
        op.now,
    ))
}

/// The transaction of [`Service::set_template_claiming`].
async fn set_template_claiming_tx(
    c: &mut AnyConnection,
    op: &Op,
    id: &TemplateId,
    reason: &str,
    pause: bool,
) -> Result<TemplateView, ServiceError> {
    let row = load_row(c, id).await?;
    let (from, to, action) = if pause {
        (
            TemplateStatus::Active,
            TemplateStatus::Paused,
            actions::PAUSE,
        )
    } else {
        (
            TemplateStatus::Paused,
            TemplateStatus::Active,
            actions::RESUME,
        )
    };
    if row.status == from && templates::set_claiming(c, id, from, to, to_ms(op.now)).await? {
        insert_staff_audit(
            c,
            &NewStaffAudit {
                actor: &op.ctx.actor,
                action,
                target: id,
                detail: Some(&claiming_detail(from, to, reason)),
                address: op.ctx.address.as_deref(),
                at_ms: to_ms(op.now),
            },
        )
        .await?;
    }
    load_view(c, id, op.now).await
}
