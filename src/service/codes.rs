//! Redeem codes (兑换码): code batches, their generation and void by the
//! code job, and redemptions.
//!
//! - [`Service::create_code_batch`] checks the request
//!   ([`BatchSpec::parse`]: count, prefix, length and the code space) and
//!   stores the batch `running`; nothing is generated in the request.
//! - [`Service::code_work_step`] (the code job, and tests driving it): one
//!   transaction that takes the oldest running batch (`FOR UPDATE SKIP
//!   LOCKED` on PostgreSQL), draws up to one chunk of codes, inserts those
//!   not taken (`ON CONFLICT DO NOTHING` on the code's primary key), draws
//!   again for the ones taken (at most [`DRAW_ROUNDS`] times) and advances
//!   `generated_count` in the same transaction: a restart resumes at the
//!   last committed chunk. Then the voids: the unredeemed codes of voided
//!   batches, one chunk a transaction.
//! - [`Service::redeem_code`]: the conditional UPDATE of the code row and
//!   the claim path of [`super::claims::claim_coupon`] (the template's stock
//!   and per-user limit) in one transaction.
//! - [`Service::reserve_redemption`] before it and
//!   [`Service::settle_redemption`] after it: the failure limits per user
//!   and per client address, atomic like the sign-in limit. The attempt is
//!   recorded as pending (a failure until settled) in one transaction
//!   serialized per user and per address on every instance, before the
//!   code is looked up; so of any burst of guesses at most the limit ever
//!   reach a code.

use std::collections::HashSet;

use serde::Serialize;
use utoipa::ToSchema;

use super::audit::StaffAuditView;
use super::claims::{NewCoupon, claim_before_stock};
use super::jobs::Deadline;
use super::support::Authority;
use super::views::CouponView;
use sqlx::AnyConnection;

use super::stock::StockTake;
use super::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::coupon::CouponSource;
use crate::domain::ids::{CodeBatchId, CouponId, TemplateId, UserId};
use crate::domain::permissions::Permission;
use crate::domain::redeem_code::{BatchSpec, BatchStatus, FailureLimit, RedeemLimits, normalize};
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::store::audit::{NewStaffAudit, insert_staff_audit};
use crate::store::codes::{self, BatchRow};
use crate::store::redeem_attempts::{self, Key as AttemptKey};
use crate::store::templates;

/// Codes one generation step draws (one insert statement, one
/// transaction).
pub const CHUNK_ROWS: i64 = 500;
/// Draws of one step for codes that were taken already (by this batch or
/// another); a step that inserts nothing after these gives the batch up.
pub const DRAW_ROUNDS: usize = 4;
/// Codes voided per transaction.
pub const VOID_ROWS: i64 = 1000;
/// Codes the CSV reads per query (keyset pages).
const CSV_PAGE_ROWS: i64 = 5000;
/// Most batches a template page lists.
pub const MAX_BATCH_LIST: i64 = 50;

/// Actions of the staff log for code batches (target: the batch id).
pub mod actions {
    pub const CREATE: &str = "code_batch_create";
    pub const VOID: &str = "code_batch_void";
    pub const ALL: [&str; 2] = [CREATE, VOID];

    /// The catalog key of a code-batch action's words, if it is one.
    pub fn label_key(word: &str) -> Option<String> {
        ALL.contains(&word).then(|| format!("staff-action-{word}"))
    }
}

/// A code batch as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CodeBatchView {
    #[schema(value_type = String)]
    pub id: CodeBatchId,
    #[schema(value_type = String)]
    pub template_id: TemplateId,
    /// The template's name, for pages.
    pub template_name: String,
    /// Codes asked for.
    pub count: i64,
    /// Codes generated so far.
    pub generated: i64,
    /// `running`, `done` or `failed`.
    #[schema(value_type = String)]
    pub status: BatchStatus,
    pub prefix: String,
    /// Random characters after the prefix.
    pub length: i64,
    /// Codes redeemed (on `GET /code-batches/{id}`; null in lists).
    pub redeemed: Option<i64>,
    /// Why generation failed.
    pub error: Option<String>,
    pub created_at: String,
    pub created_by: String,
    pub finished_at: Option<String>,
    pub voided_at: Option<String>,
    pub void_reason: Option<String>,
    /// Codes voided so far (the void runs in bounded batches).
    pub voided: i64,
    /// Whether every unredeemed code of a voided batch is voided.
    pub void_finished: bool,
}

impl CodeBatchView {
    fn from_row(b: BatchRow, template_name: String, redeemed: Option<i64>) -> Self {
        CodeBatchView {
            id: b.id,
            template_id: b.template_id,
            template_name,
            count: b.code_count,
            generated: b.generated_count,
            status: b.status,
            prefix: b.prefix,
            length: b.code_length,
            redeemed,
            error: b.error,
            created_at: rfc3339(from_ms(b.created_at)),
            created_by: b.created_by,
            finished_at: b.finished_at.map(|t| rfc3339(from_ms(t))),
            voided_at: b.voided_at.map(|t| rfc3339(from_ms(t))),
            void_reason: b.void_reason,
            voided: b.voided_count,
            void_finished: b.void_finished_at.is_some(),
        }
    }
}

/// What one step of the code job did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeStep {
    /// Codes generated.
    pub generated: u64,
    /// Codes voided.
    pub voided: u64,
    /// Whether a batch was worked on (a chunk, a void, or giving up).
    pub worked: bool,
}

impl CodeStep {
    pub fn idle(&self) -> bool {
        !self.worked
    }
}

fn check_may_manage(authority: &Authority) -> Result<(), ServiceError> {
    if authority.may(Permission::ManageTemplates) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(
            "managing code batches needs the operator role".into(),
        ))
    }
}

async fn template_name(
    c: &mut sqlx::AnyConnection,
    id: &TemplateId,
) -> Result<String, ServiceError> {
    Ok(templates::get(c, id)
        .await?
        .map(|t| t.name)
        .unwrap_or_default())
}

impl Service {
    /// Stores a batch request (`running`); the code job generates it.
    pub async fn create_code_batch(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        template_id: TemplateId,
        count: Option<i64>,
        prefix: Option<String>,
        length: Option<i64>,
    ) -> Result<Executed<CodeBatchView>, ServiceError> {
        let spec = BatchSpec::parse(count, prefix.as_deref(), length)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let spec = spec.clone();
            let op = op.clone();
            let template_id = template_id.clone();
            Box::pin(async move { create_code_batch_tx(c, &op, &spec, &template_id).await })
        })
        .await
    }

    /// [`Service::create_code_batch`] on a staff member's authority:
    /// operators and admins only.
    #[allow(clippy::too_many_arguments)]
    pub async fn create_code_batch_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        template_id: TemplateId,
        count: Option<i64>,
        prefix: Option<String>,
        length: Option<i64>,
    ) -> Result<Executed<CodeBatchView>, ServiceError> {
        check_may_manage(authority)?;
        self.create_code_batch(ctx, idem, template_id, count, prefix, length)
            .await
    }

    /// A batch with its progress and how many of its codes were redeemed.
    pub async fn get_code_batch(&self, id: &CodeBatchId) -> Result<CodeBatchView, ServiceError> {
        let id = id.clone();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                let b = codes::get_batch(c, &id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("code batch", &id))?;
                let redeemed = codes::redeemed_count(c, &id).await?;
                let name = template_name(c, &b.template_id).await?;
                Ok(CodeBatchView::from_row(b, name, Some(redeemed)))
            })
        })
        .await
    }

    /// A template's batches, newest first (at most [`MAX_BATCH_LIST`]).
    pub async fn list_code_batches(
        &self,
        template_id: &TemplateId,
    ) -> Result<Vec<CodeBatchView>, ServiceError> {
        let template_id = template_id.clone();
        self.read(move |c| {
            let template_id = template_id.clone();
            Box::pin(async move {
                let name = template_name(c, &template_id).await?;
                let rows = codes::list_for_template(c, &template_id, MAX_BATCH_LIST).await?;
                Ok(rows
                    .into_iter()
                    .map(|b| CodeBatchView::from_row(b, name.clone(), None))
                    .collect())
            })
        })
        .await
    }

    /// The staff log of a batch (created, voided), newest first.
    pub async fn code_batch_history(
        &self,
        id: &CodeBatchId,
    ) -> Result<Vec<StaffAuditView>, ServiceError> {
        let page = self
            .audit_staff(
                crate::store::audit::AuditQuery {
                    target: Some(id.to_string()),
                    ..crate::store::audit::AuditQuery::default()
                },
                None,
                super::templates::MAX_HISTORY,
            )
            .await?;
        Ok(page
            .rows
            .into_iter()
            .filter(|r| actions::ALL.contains(&r.action.as_str()))
            .collect())
    }

    /// The codes of a finished batch as CSV (`code,status,redeemed_at,
    /// user_id,coupon_id`), in code order; refused with
    /// `code_batch_not_ready` while it runs or after it failed. Read in
    /// keyset pages of one snapshot; bounded by the batch's size.
    pub async fn code_batch_csv(
        &self,
        id: &CodeBatchId,
    ) -> Result<(CodeBatchView, String), ServiceError> {
        let id = id.clone();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move { code_batch_csv_tx(c, &id).await })
        })
        .await
    }

    /// Voids a batch: from this transaction on none of its codes redeems
    /// (a running batch also stops generating); the first chunk of its
    /// unredeemed codes is voided here, the rest by the code job in
    /// bounded chunks. Voiding a voided batch changes nothing.
    pub async fn void_code_batch(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        id: CodeBatchId,
        reason: Option<String>,
    ) -> Result<Executed<CodeBatchView>, ServiceError> {
        let reason = crate::domain::reason::parse_reason(reason)?;
        let op = self.op(ctx);
        self.write(idem, move |c| {
            let id = id.clone();
            let reason = reason.clone();
            let op = op.clone();
            Box::pin(async move { void_code_batch_tx(c, &op, &id, &reason).await })
        })
        .await
    }

    /// [`Service::void_code_batch`] on a staff member's authority:
    /// operators and admins only.
    pub async fn void_code_batch_as(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        id: CodeBatchId,
        reason: Option<String>,
    ) -> Result<Executed<CodeBatchView>, ServiceError> {
        check_may_manage(authority)?;
        self.void_code_batch(ctx, None, id, reason).await
    }

    /// One step of the code job: one chunk of the oldest running batch, or
    /// else one chunk of a void in progress. Idle when neither exists.
    pub async fn code_work_step(&self, chunk_rows: i64) -> Result<CodeStep, ServiceError> {
        let chunk_rows = chunk_rows.clamp(1, codes::MAX_INSERT_ROWS as i64);
        let now = self.now();
        let generated = self
            .inner_write(move |c| {
                Box::pin(async move { generate_chunk(c, chunk_rows, to_ms(now)).await })
            })
            .await?;
        if let Some(generated) = generated {
            return Ok(CodeStep {
                generated,
                voided: 0,
                worked: true,
            });
        }
        let voided = self
            .inner_write(move |c| Box::pin(async move { void_chunk(c, to_ms(now)).await }))
            .await?;
        Ok(CodeStep {
            generated: 0,
            voided: voided.unwrap_or(0),
            worked: voided.is_some(),
        })
    }

    /// Runs [`Service::code_work_step`] until there is nothing to do or
    /// `max_steps` steps ran; returns the codes generated and voided.
    pub async fn run_code_work(
        &self,
        chunk_rows: i64,
        max_steps: usize,
    ) -> Result<CodeStep, ServiceError> {
        let mut total = CodeStep::default();
        for _ in 0..max_steps {
            let step = self.code_work_step(chunk_rows).await?;
            if step.idle() {
                break;
            }
            total.generated += step.generated;
            total.voided += step.voided;
            total.worked = true;
        }
        Ok(total)
    }

    /// Reserves a redemption attempt of `user_id` from `address` under
    /// `limits`: `Ok(Ok(attempt id))` to go on with [`Service::redeem_code`]
    /// and then [`Service::settle_redemption`], or `Ok(Err(seconds to
    /// wait))` when the user or the address already has as many failed or
    /// pending attempts in the window as its limit allows (so with a limit
    /// of 5, the 6th attempt is refused). One transaction, serialized per
    /// user and per address ([`redeem_attempts::lock`]).
    pub async fn reserve_redemption(
        &self,
        user_id: &UserId,
        address: &str,
        limits: RedeemLimits,
    ) -> Result<Result<i64, u64>, ServiceError> {
        let now_ms = to_ms(self.now());
        let user = user_id.clone();
        let address: String = address.chars().take(64).collect();
        self.inner_write(move |c| {
            let (user, address) = (user.clone(), address.clone());
            Box::pin(async move { reserve_redemption_tx(c, &user, &address, limits, now_ms).await })
        })
        .await
    }

    /// Settles a reserved attempt: `failed` for a wrong guess (no such
    /// code, or redeemed already), which keeps counting against the
    /// limits; otherwise it stops counting. A failure to write is logged
    /// and leaves the attempt pending, which counts as a failure: the
    /// limits err on the side of refusing.
    pub async fn settle_redemption(&self, attempt_id: i64, failed: bool) {
        let outcome = if failed {
            redeem_attempts::OUTCOME_FAILED
        } else {
            redeem_attempts::OUTCOME_NOT_FAILED
        };
        let settled = self
            .inner_write(move |c| {
                Box::pin(async move { Ok(redeem_attempts::settle(c, attempt_id, outcome).await?) })
            })
            .await;
        if let Err(e) = settled {
            tracing::warn!(error = %e, attempt_id, "a redemption attempt stays pending (counted as a failure)");
        }
    }

    /// Deletes up to `batch` redemption attempts older than a day (the
    /// longest window a limit may have is an hour).
    pub async fn purge_redeem_attempts(&self, batch: i64) -> Result<u64, ServiceError> {
        let before_ms = to_ms(self.now() - chrono::Duration::days(1));
        self.inner_write(move |c| {
            Box::pin(async move { Ok(redeem_attempts::purge(c, before_ms, batch).await?) })
        })
        .await
    }

    /// Redeems `typed` for `user_id`: 404 `code_not_found` (also a voided
    /// code or one of a voided batch), 409 `code_already_redeemed`, and the
    /// claim's refusals (`template_inactive`, `claim_limit_reached`,
    /// `out_of_stock`). The code row's conditional UPDATE and the coupon
    /// are one transaction: a refusal after the UPDATE rolls it back, and
    /// of concurrent attempts on one code exactly one wins. `attempt_id`,
    /// from [`Service::reserve_redemption`], is settled as not failed in
    /// the same transaction when the code redeems.
    pub async fn redeem_code(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        user_id: UserId,
        typed: String,
        attempt_id: Option<i64>,
    ) -> Result<Executed<CouponView>, ServiceError> {
        let code = match typed.trim() {
            "" => return Err(FieldError::new("code", "is required").into()),
            t => normalize(t).ok_or_else(|| {
                ServiceError::Invalid(FieldError::new(
                    "code",
                    "must be 1-64 characters with at least one letter or digit",
                ))
            })?,
        };
        let op = self.op(ctx);
        let result = self
            .write_taking_stock(idem, move |c| {
                let code = code.clone();
                let user_id = user_id.clone();
                let op = op.clone();
                Box::pin(async move { redeem_code_tx(c, &op, &code, &user_id, attempt_id).await })
            })
            .await;
        if let Ok(Executed::Fresh(v)) = &result
            && let Ok(ends_at) = crate::domain::time::parse_rfc3339(&v.ends_at)
        {
            self.schedule(ends_at, Deadline::CouponEnd(v.id.clone()));
        }
        result
    }

    /// A write transaction without an idempotency key, for the job.
    async fn inner_write<T, F>(&self, op: F) -> Result<T, ServiceError>
    where
        T: Serialize + Send + Sync + 'static,
        F: for<'c> Fn(
                &'c mut sqlx::AnyConnection,
            ) -> futures_util::future::BoxFuture<'c, Result<T, ServiceError>>
            + Clone
            + Send
            + Sync
            + 'static,
    {
        match self.write(None, op).await? {
            Executed::Fresh(v) => Ok(v),
            // Without a key nothing is replayed.
            Executed::Replayed { .. } => Err(ServiceError::IllegalTransition(
                "a write without an idempotency key was replayed".into(),
            )),
        }
    }
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One chunk of the oldest running batch; the codes generated, `None`
/// when no batch is running.
async fn generate_chunk(
    c: &mut sqlx::AnyConnection,
    chunk_rows: i64,
    now_ms: i64,
) -> Result<Option<u64>, ServiceError> {
    let Some(b) = codes::pick_running(c).await? else {
        return Ok(None);
    };
    let spec = BatchSpec {
        count: b.code_count,
        prefix: b.prefix.clone(),
        length: b.code_length,
    };
    let want = (b.code_count - b.generated_count).clamp(0, chunk_rows);
    let mut inserted: i64 = 0;
    for _ in 0..DRAW_ROUNDS {
        let missing = want - inserted;
        if missing <= 0 {
            break;
        }
        let drawn: Vec<String> = {
            let mut rng = rand::rng();
            let mut set = HashSet::with_capacity(missing as usize);
            // Distinct within the chunk; bounded by a few extra draws.
            for _ in 0..(missing * 2 + 8) {
                if set.len() as i64 >= missing {
                    break;
                }
                set.insert(spec.draw(&mut rng));
            }
            set.into_iter().collect()
        };
        inserted += codes::insert_codes(c, &b.id, &b.template_id, &drawn, now_ms).await? as i64;
    }
    if inserted == 0 && want > 0 {
        codes::fail(
            c,
            &b.id,
            "could not draw unused codes: the code space of this prefix and length is nearly full",
            now_ms,
        )
        .await?;
        return Ok(Some(0));
    }
    let done = b.generated_count + inserted >= b.code_count;
    codes::advance(c, &b.id, inserted, done, now_ms).await?;
    Ok(Some(inserted.max(0) as u64))
}

/// One chunk of a void in progress; the codes voided, `None` when no
/// void is in progress.
async fn void_chunk(c: &mut sqlx::AnyConnection, now_ms: i64) -> Result<Option<u64>, ServiceError> {
    let Some(b) = codes::pick_voiding(c).await? else {
        return Ok(None);
    };
    let n = codes::void_codes(c, &b.id, now_ms, VOID_ROWS).await?;
    codes::advance_void(c, &b.id, n as i64, (n as i64) < VOID_ROWS, now_ms).await?;
    Ok(Some(n))
}

/// Reads a finished batch and all its codes, page by page, as CSV.
async fn code_batch_csv_tx(
    c: &mut AnyConnection,
    id: &CodeBatchId,
) -> Result<(CodeBatchView, String), ServiceError> {
    let b = codes::get_batch(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("code batch", id))?;
    if b.status != BatchStatus::Done {
        return Err(ServiceError::refused(
            Refusal::CodeBatchNotReady,
            "this batch's codes are not ready: it is still being generated or its generation failed",
        ));
    }
    let mut csv = String::from("code,status,redeemed_at,user_id,coupon_id\n");
    let mut after = String::new();
    let pages = b.generated_count / CSV_PAGE_ROWS + 2;
    for _ in 0..pages {
        let rows = codes::codes_page(c, id, &after, CSV_PAGE_ROWS).await?;
        let Some(last) = rows.last() else {
            break;
        };
        after = last.code.clone();
        for r in &rows {
            let status = if r.redeemed_at.is_some() {
                "redeemed"
            } else if r.voided_at.is_some() || b.voided_at.is_some() {
                "voided"
            } else {
                "available"
            };
            let at = r
                .redeemed_at
                .map(|t| rfc3339(from_ms(t)))
                .unwrap_or_default();
            csv.push_str(&format!(
                "{},{status},{at},{},{}\n",
                r.code,
                csv_field(r.user_id.as_deref().unwrap_or_default()),
                r.coupon_id.as_deref().unwrap_or_default()
            ));
        }
        if (rows.len() as i64) < CSV_PAGE_ROWS {
            break;
        }
    }
    let name = template_name(c, &b.template_id).await?;
    Ok((CodeBatchView::from_row(b, name, None), csv))
}

/// Checks the user's and the address's failure limits and, within them, reserves an attempt.
async fn reserve_redemption_tx(
    c: &mut AnyConnection,
    user: &UserId,
    address: &str,
    limits: RedeemLimits,
    now_ms: i64,
) -> Result<Result<i64, u64>, ServiceError> {
    redeem_attempts::lock(c, user, address).await?;
    let mut wait_ms = 0i64;
    let checks = [
        (limits.per_user, AttemptKey::User(user)),
        (limits.per_address, AttemptKey::Address(address)),
    ];
    for (limit, key) in checks {
        let Some(FailureLimit {
            failures,
            window_seconds,
        }) = limit
        else {
            continue;
        };
        let window_ms = i64::try_from(window_seconds)
            .unwrap_or(i64::MAX / 2_000)
            .saturating_mul(1000);
        let since_ms = now_ms.saturating_sub(window_ms);
        if let Some(at) =
            redeem_attempts::limit_reached_at(c, key, since_ms, i64::from(failures)).await?
        {
            wait_ms = wait_ms.max(at.saturating_add(window_ms) - now_ms);
        }
    }
    if wait_ms > 0 {
        // Whole seconds, rounded up, at least 1.
        let seconds = (wait_ms + 999) / 1000;
        return Ok(Err(u64::try_from(seconds).unwrap_or(1).max(1)));
    }
    Ok(Ok(redeem_attempts::reserve(c, user, address, now_ms).await?))
}

/// The transaction of [`Service::redeem_code`].
async fn redeem_code_tx(
    c: &mut AnyConnection,
    op: &Op,
    code: &str,
    user_id: &UserId,
    attempt_id: Option<i64>,
) -> Result<(CouponView, Option<StockTake>), ServiceError> {
    let now = op.now;
    let now_ms = to_ms(now);
    let not_found = || ServiceError::not_found("code", "");
    let row = codes::get_code(c, code).await?.ok_or_else(not_found)?;
    let coupon_id = CouponId::generate(now_ms);
    if !codes::redeem(c, code, user_id, &coupon_id, now_ms).await? {
        // Someone else redeemed it first, or it is voided:
        // read again what stands now.
        let now_row = codes::get_code(c, code).await?.ok_or_else(not_found)?;
        if now_row.redeemed_at.is_some() {
            return Err(ServiceError::refused(
                Refusal::CodeAlreadyRedeemed,
                "this code has been redeemed already",
            ));
        }
        return Err(not_found());
    }
    let (coupon, stock) = claim_before_stock(
        c,
        op,
        user_id,
        &row.template_id,
        NewCoupon {
            id: coupon_id,
            source: CouponSource::Code,
            action: "redeem",
        },
    )
    .await?;
    // The attempt stops counting with the coupon it gave,
    // in the same transaction.
    if let Some(id) = attempt_id {
        redeem_attempts::settle(c, id, redeem_attempts::OUTCOME_NOT_FAILED).await?;
    }
    Ok((CouponView::from_row(coupon, now), Some(stock)))
}

/// The transaction of [`Service::void_code_batch`].
async fn void_code_batch_tx(
    c: &mut AnyConnection,
    op: &Op,
    id: &CodeBatchId,
    reason: &str,
) -> Result<CodeBatchView, ServiceError> {
    let now_ms = to_ms(op.now);
    if codes::get_batch(c, id).await?.is_none() {
        return Err(ServiceError::not_found("code batch", id));
    }
    if codes::mark_voided(c, id, reason, &op.ctx.actor, now_ms).await? {
        let n = codes::void_codes(c, id, now_ms, VOID_ROWS).await?;
        codes::advance_void(c, id, n as i64, (n as i64) < VOID_ROWS, now_ms).await?;
        insert_staff_audit(
            c,
            &NewStaffAudit {
                actor: &op.ctx.actor,
                action: actions::VOID,
                target: id,
                detail: Some(reason),
                address: op.ctx.address.as_deref(),
                at_ms: now_ms,
            },
        )
        .await?;
    }
    let b = codes::get_batch(c, id)
        .await?
        .ok_or_else(|| ServiceError::not_found("code batch", id))?;
    let redeemed = codes::redeemed_count(c, id).await?;
    let name = template_name(c, &b.template_id).await?;
    Ok(CodeBatchView::from_row(b, name, Some(redeemed)))
}

/// The transaction of [`Service::create_code_batch`].
async fn create_code_batch_tx(
    c: &mut AnyConnection,
    op: &Op,
    spec: &BatchSpec,
    template_id: &TemplateId,
) -> Result<CodeBatchView, ServiceError> {
    let t = templates::get(c, template_id)
        .await?
        .ok_or_else(|| ServiceError::not_found("template", template_id))?;
    let now_ms = to_ms(op.now);
    let row = BatchRow {
        id: CodeBatchId::generate(now_ms),
        template_id: t.id.clone(),
        code_count: spec.count,
        prefix: spec.prefix.clone(),
        code_length: spec.length,
        generated_count: 0,
        status: BatchStatus::Running,
        error: None,
        created_by: op.ctx.actor.clone(),
        created_at: now_ms,
        updated_at: now_ms,
        finished_at: None,
        voided_at: None,
        void_reason: None,
        voided_by: None,
        voided_count: 0,
        void_finished_at: None,
    };
    codes::insert_batch(c, &row).await?;
    let detail = serde_json::json!({
        "template_id": t.id,
        "count": spec.count,
        "prefix": spec.prefix,
        "length": spec.length,
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
    Ok(CodeBatchView::from_row(row, t.name, Some(0)))
}
