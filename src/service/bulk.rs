//! Bulk issue (定向发券) and bulk void (批量作废) as resumable jobs.
//!
//! Starting a job stores its input: a bulk issue's file of user ids, a bulk
//! void's file of coupon ids (or, for a void of every available coupon of
//! the template, nothing: the job walks the template's coupons). The lines
//! go in bounded transactions ([`LOAD_BATCH_LINES`]); a request that dies
//! half-way leaves the job `loading`, and the same file sent again (the
//! same job: SHA-256 of template and file, a unique index) finishes it.
//!
//! The runner ([`Service::run_bulk_batch`], called by `serve`'s jobs) takes
//! the oldest running job's row (`FOR UPDATE SKIP LOCKED` on PostgreSQL)
//! and works through its next lines in ONE transaction: each coupon through
//! the claim's own steps ([`claim_window`], [`take_claim`],
//! [`insert_coupon`]) or the invalidation's ([`coupons::transition`]
//! `available -> invalidated` with its event), each line's outcome written
//! in the same transaction, and the job's cursor moved by a conditional
//! update. A killed runner loses at most its uncommitted batch; nothing is
//! issued twice.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::AnyConnection;
use utoipa::ToSchema;

use super::claims::{claim_window, insert_coupon, take_claim, template_coupon};
use super::jobs::Deadline;
use super::support::{Authority, csv_field};
use super::{Ctx, Executed, IdempotencyRequest, Op, Refusal, Service, ServiceError};
use crate::domain::bulk::{InputLine, JobKind, JobStatus, LineReason, input_key, parse_lines};
use crate::domain::coupon::{CouponStatus, effective_status};
use crate::domain::ids::{CouponId, JobId, TemplateId, UserId};
use crate::domain::permissions::Permission;
use crate::domain::reason::parse_reason;
use crate::domain::time::{from_ms, to_ms};
use crate::store::bulk::{self, Advance, JobRow, NewLine};
use crate::store::coupons::{self, CouponChange};
use crate::store::outbox::{self, NewMessage};
use crate::store::templates;
use crate::store::views::{ts, ts_opt};

/// Lines stored per transaction while a job loads.
pub const LOAD_BATCH_LINES: usize = 5_000;
/// Lines one batch of the runner handles on SQLite (one writer: a batch
/// holds every other write back while it runs).
pub const SQLITE_BULK_BATCH: i64 = 100;
/// Lines one batch handles on PostgreSQL.
pub const POSTGRES_BULK_BATCH: i64 = 500;
/// Most jobs listed on a template's page.
pub const MAX_TEMPLATE_JOBS: i64 = 20;
/// Lines read per page while a results file streams.
pub const RESULT_PAGE_LINES: i64 = 5_000;
/// The results file's first line.
pub const RESULTS_HEADER: &str = "line,value,outcome,reason,coupon_id\n";
/// The webhook type of a coupon given by a bulk issue with `notify`.
pub const ISSUED_TYPE: &str = "coupon.issued";

/// A job as the API and the console show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct JobView {
    #[schema(value_type = String)]
    pub id: JobId,
    /// `bulk_issue` or `bulk_void`.
    pub kind: String,
    #[schema(value_type = String)]
    pub template_id: TemplateId,
    /// `loading` (its lines are still being stored), `running`, `done` or
    /// `failed`.
    pub status: String,
    /// Input lines (a void of all: the coupons it looks at).
    pub total: i64,
    /// Lines handled: `succeeded + skipped + failed`.
    pub done: i64,
    /// Coupons issued (bulk issue) or voided (bulk void).
    pub succeeded: i64,
    pub skipped: i64,
    pub failed: i64,
    /// Skipped and failed lines by reason (`out_of_stock`,
    /// `claim_limit_reached`, `template_inactive`, `invalid_user_id`,
    /// `not_found`, `other_template`, `locked`, `used`, `expired`,
    /// `invalidated`, `changed`).
    pub reasons: BTreeMap<String, i64>,
    /// Bulk issue: whether each user gets a `coupon.issued` message.
    pub notify: bool,
    /// Bulk void: the reason written on every voided coupon.
    pub reason: Option<String>,
    /// Who started it (`api:<token>`, `staff:<name>`): the actor of its
    /// coupons' events.
    pub actor: String,
    pub created_at: String,
    pub finished_at: Option<String>,
}

impl JobView {
    fn from_row(j: &JobRow) -> Self {
        let reasons: BTreeMap<String, i64> = serde_json::from_str(&j.reasons).unwrap_or_default();
        JobView {
            id: j.id.clone(),
            kind: j.kind.clone(),
            template_id: j.template_id.clone(),
            status: j.status.clone(),
            total: j.total,
            done: j.succeeded + j.skipped + j.failed,
            succeeded: j.succeeded,
            skipped: j.skipped,
            failed: j.failed,
            reasons,
            notify: j.notify != 0,
            reason: j.reason.clone(),
            actor: j.actor.clone(),
            created_at: ts(j.created_at),
            finished_at: ts_opt(j.finished_at),
        }
    }

    pub fn kind(&self) -> Option<JobKind> {
        JobKind::parse(&self.kind)
    }

    pub fn status(&self) -> JobStatus {
        JobStatus::parse(&self.status).unwrap_or(JobStatus::Failed)
    }
}

/// One line of a job's results.
#[derive(Debug, Clone)]
pub struct ResultLine {
    pub line_no: i64,
    pub value: String,
    /// `pending`, `issued`, `invalidated`, `skipped` or `failed`.
    pub outcome: String,
    pub reason: Option<String>,
    pub coupon_id: Option<CouponId>,
}

/// What a bulk void works on.
#[derive(Debug, Clone)]
pub enum VoidInput {
    /// Every coupon of the template (available ones are voided).
    All,
    /// A file of coupon ids.
    File(Vec<u8>),
}

/// What one batch of the runner did.
#[derive(Debug, Clone)]
pub struct BatchReport {
    pub job_id: JobId,
    pub lines: usize,
    pub finished: bool,
}

fn check_may_start(authority: &Authority) -> Result<(), ServiceError> {
    if authority.may(Permission::ManageTemplates) {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(
            "bulk issue and bulk void need the operator role".into(),
        ))
    }
}

/// Adds `n` to `reason` in a job's JSON reason counts.
fn add_reasons(stored: &str, add: &BTreeMap<&'static str, i64>) -> String {
    let mut map: BTreeMap<String, i64> = serde_json::from_str(stored).unwrap_or_default();
    for (k, n) in add {
        *map.entry((*k).to_string()).or_insert(0) += n;
    }
    serde_json::to_string(&map).unwrap_or_else(|_| "{}".into())
}

/// Counts of one batch.
#[derive(Default)]
struct Tally {
    succeeded: i64,
    skipped: i64,
    failed: i64,
    reasons: BTreeMap<&'static str, i64>,
}

impl Tally {
    fn add(&mut self, reason: Option<LineReason>) -> (&'static str, Option<&'static str>) {
        match reason {
            None => {
                self.succeeded += 1;
                ("", None)
            }
            Some(r) => {
                *self.reasons.entry(r.as_str()).or_insert(0) += 1;
                if r.is_failure() {
                    self.failed += 1;
                    ("failed", Some(r.as_str()))
                } else {
                    self.skipped += 1;
                    ("skipped", Some(r.as_str()))
                }
            }
        }
    }
}

/// The statuses a void of all walks, in order.
const WALK_PHASES: [CouponStatus; 3] = [
    CouponStatus::Available,
    CouponStatus::Locked,
    CouponStatus::Used,
];

/// `<phase>:<ends_at>:<id>` back into its parts; an empty cursor is the
/// start of phase 0.
fn parse_walk(cursor: &str) -> (usize, Option<(i64, CouponId)>) {
    let mut parts = cursor.splitn(3, ':');
    let phase = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let ends = parts.next().and_then(|p| p.parse().ok());
    let id = parts.next().map(CouponId::from_wire);
    (phase, ends.zip(id))
}

impl Service {
    /// Lines per runner batch on this store.
    pub fn bulk_batch_rows(&self) -> i64 {
        match self.db().backend() {
            crate::store::Backend::Sqlite => SQLITE_BULK_BATCH,
            crate::store::Backend::Postgres => POSTGRES_BULK_BATCH,
        }
    }

    /// Starts a bulk issue of template `template_id` to the user ids of
    /// `file` (or answers the job this file already started). Invalid user
    /// ids become lines that fail with `invalid_user_id`.
    pub async fn start_bulk_issue(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        template_id: TemplateId,
        file: &[u8],
        notify: bool,
    ) -> Result<Executed<JobView>, ServiceError> {
        check_may_start(authority)?;
        let lines = parse_lines(JobKind::BulkIssue, file)?;
        let key = input_key(JobKind::BulkIssue, &template_id, file);
        self.start_job(
            ctx,
            idem,
            JobKind::BulkIssue,
            template_id,
            Some(key),
            lines,
            notify,
            None,
        )
        .await
    }

    /// Starts a bulk void of template `template_id`: of every coupon it
    /// issued (`VoidInput::All`, a new job each time) or of the coupon ids
    /// of a file (the same file again answers the same job). Only
    /// `available` coupons become `invalidated`; the others are skipped.
    pub async fn start_bulk_void(
        &self,
        ctx: &Ctx,
        authority: &Authority,
        idem: Option<&IdempotencyRequest>,
        template_id: TemplateId,
        input: VoidInput,
        reason: Option<String>,
    ) -> Result<Executed<JobView>, ServiceError> {
        check_may_start(authority)?;
        let reason = parse_reason(reason)?;
        match input {
            VoidInput::File(file) => {
                let lines = parse_lines(JobKind::BulkVoid, &file)?;
                let key = input_key(JobKind::BulkVoid, &template_id, &file);
                self.start_job(
                    ctx,
                    idem,
                    JobKind::BulkVoid,
                    template_id,
                    Some(key),
                    lines,
                    false,
                    Some(reason),
                )
                .await
            }
            VoidInput::All => {
                let op = self.op(ctx);
                self.write(idem, move |c| {
                    let op = op.clone();
                    let template_id = template_id.clone();
                    let reason = reason.clone();
                    Box::pin(async move {
                        let now_ms = to_ms(op.now);
                        templates::get(c, &template_id)
                            .await?
                            .ok_or_else(|| ServiceError::not_found("template", &template_id))?;
                        let total = bulk::count_voidable(c, &template_id, now_ms).await?;
                        let mut job =
                            new_job(&op.ctx, JobKind::BulkVoid, &template_id, None, now_ms);
                        job.status = JobStatus::Running.as_str().into();
                        job.total = total;
                        job.loaded = total;
                        job.walk_cursor = Some(String::new());
                        job.reason = Some(reason);
                        bulk::insert(c, &job).await?;
                        Ok(JobView::from_row(&job))
                    })
                })
                .await
            }
        }
    }

    /// Finds or creates the job of this input, stores its lines in bounded
    /// transactions (resuming where a previous load stopped) and starts it.
    #[allow(clippy::too_many_arguments)]
    async fn start_job(
        &self,
        ctx: &Ctx,
        idem: Option<&IdempotencyRequest>,
        kind: JobKind,
        template_id: TemplateId,
        key: Option<String>,
        lines: Vec<InputLine>,
        notify: bool,
        reason: Option<String>,
    ) -> Result<Executed<JobView>, ServiceError> {
        let op = self.op(ctx);
        let total = i64::try_from(lines.len()).unwrap_or(i64::MAX);
        let request = StartJobRequest {
            op,
            kind,
            template_id,
            key,
            total,
            notify,
            reason,
        };
        let first = self
            .write(idem, move |c| {
                let request = request.clone();
                Box::pin(async move { start_job_tx(c, request).await })
            })
            .await?;
        let view = match first {
            Executed::Fresh(v) => v,
            replayed => return Ok(replayed),
        };
        if view.status() == JobStatus::Loading {
            self.load_lines(&view.id, &lines).await?;
        }
        Ok(Executed::Fresh(self.get_job(&view.id).await?))
    }

    /// Stores a loading job's lines from where it stopped, each chunk one
    /// transaction, and starts the job when all are in. Bounded by the
    /// file: at most `MAX_LINES / LOAD_BATCH_LINES` chunks, plus a few
    /// re-reads when another request loads the same job at once.
    async fn load_lines(&self, job_id: &JobId, lines: &[InputLine]) -> Result<(), ServiceError> {
        let chunks = lines.len() / LOAD_BATCH_LINES + 2;
        for _ in 0..chunks.saturating_mul(2) {
            let job = self.job_row(job_id).await?;
            if job.status != JobStatus::Loading.as_str() {
                return Ok(());
            }
            let from = usize::try_from(job.loaded).unwrap_or(0).min(lines.len());
            let to = (from + LOAD_BATCH_LINES).min(lines.len());
            let chunk: Vec<InputLine> = lines[from..to].to_vec();
            let id = job_id.clone();
            let now_ms = to_ms(self.now());
            self.write(None, move |c| {
                let chunk = chunk.clone();
                let id = id.clone();
                let job = job.clone();
                Box::pin(async move { load_lines_tx(c, &id, &job, &chunk, from, to, now_ms).await })
            })
            .await?;
        }
        Ok(())
    }

    async fn job_row(&self, id: &JobId) -> Result<JobRow, ServiceError> {
        let id = id.clone();
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                bulk::get(c, &id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("job", &id))
            })
        })
        .await
    }

    /// A job (`GET /jobs/{id}`).
    pub async fn get_job(&self, id: &JobId) -> Result<JobView, ServiceError> {
        Ok(JobView::from_row(&self.job_row(id).await?))
    }

    /// A template's jobs, newest first (its console page).
    pub async fn template_jobs(
        &self,
        template_id: &TemplateId,
    ) -> Result<Vec<JobView>, ServiceError> {
        let template_id = template_id.clone();
        self.read(move |c| {
            let template_id = template_id.clone();
            Box::pin(async move {
                Ok(bulk::for_template(c, &template_id, MAX_TEMPLATE_JOBS)
                    .await?
                    .iter()
                    .map(JobView::from_row)
                    .collect())
            })
        })
        .await
    }

    /// A page of a job's lines with their outcomes, after line `after_line`.
    pub async fn job_results(
        &self,
        id: &JobId,
        after_line: i64,
        limit: i64,
    ) -> Result<Vec<ResultLine>, ServiceError> {
        let id = id.clone();
        let limit = limit.clamp(1, 10_000);
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                Ok(bulk::lines_page(c, &id, after_line, limit)
                    .await?
                    .into_iter()
                    .map(|l| ResultLine {
                        line_no: l.line_no,
                        value: l.value,
                        outcome: l.outcome.unwrap_or_else(|| "pending".into()),
                        reason: l.reason,
                        coupon_id: l.coupon_id,
                    })
                    .collect())
            })
        })
        .await
    }

    /// The results file of a job, streamed page by page
    /// ([`RESULT_PAGE_LINES`] lines a read): `line,value,outcome,reason,coupon_id`.
    pub fn job_results_csv(
        &self,
        job: &JobView,
    ) -> impl futures_util::Stream<Item = Result<String, std::io::Error>> + Send + 'static {
        let pages = usize::try_from(job.total.max(0) / RESULT_PAGE_LINES + 2).unwrap_or(2);
        let state = (self.clone(), job.id.clone(), 0i64, 0usize);
        futures_util::stream::unfold(state, move |(service, id, after, n)| async move {
            if n > pages {
                return None;
            }
            let lines = match service.job_results(&id, after, RESULT_PAGE_LINES).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::warn!(error = %e, "a job's results file was cut short");
                    return None;
                }
            };
            if lines.is_empty() && n > 0 {
                return None;
            }
            let mut out = String::new();
            if n == 0 {
                out.push_str(RESULTS_HEADER);
            }
            let last = lines.last().map_or(after, |l| l.line_no);
            for l in &lines {
                out.push_str(&format!(
                    "{},{},{},{},{}\n",
                    l.line_no,
                    csv_field(&l.value),
                    l.outcome,
                    l.reason.as_deref().unwrap_or(""),
                    l.coupon_id.as_deref().unwrap_or("")
                ));
            }
            let next = if lines.is_empty() { pages + 1 } else { n + 1 };
            Some((Ok(out), (service, id, last, next)))
        })
    }

    /// One batch of the oldest running job, in one transaction: at most
    /// `batch` lines. `None` when no job is running (or, on PostgreSQL,
    /// every running job's row is held by another instance's batch).
    pub async fn run_bulk_batch(&self, batch: i64) -> Result<Option<BatchReport>, ServiceError> {
        let now = self.now();
        // The settings and the business day of the report counters, as
        // every change has; each job's own actor is set per batch.
        let base = self.op(&Ctx::new("bulk", None));
        let day = base.day();
        let batch = batch.clamp(1, 10_000);
        let done = self
            .write(None, move |c| {
                let base = base.clone();
                Box::pin(async move {
                    let Some(job) = bulk::next_running(c).await? else {
                        return Ok(None);
                    };
                    let outcome = match JobKind::parse(&job.kind) {
                        Some(JobKind::BulkIssue) => {
                            let op = Op {
                                ctx: job_ctx(&job),
                                ..base.clone()
                            };
                            issue_batch(c, &job, &op, batch).await?
                        }
                        Some(JobKind::BulkVoid) if job.walk_cursor.is_some() => {
                            void_walk_batch(c, &job, now, day, batch).await?
                        }
                        Some(JobKind::BulkVoid) => {
                            void_lines_batch(c, &job, now, day, batch).await?
                        }
                        None => BatchOutcome::default(),
                    };
                    Ok(Some((job.id.clone(), outcome)))
                })
            })
            .await?
            .fresh()
            .flatten();
        Ok(done.map(|(job_id, o)| {
            for (id, ends_at) in &o.issued {
                self.schedule(from_ms(*ends_at), Deadline::CouponEnd(id.clone()));
            }
            BatchReport {
                job_id,
                lines: o.lines,
                finished: o.finished,
            }
        }))
    }

    /// Runs batches until no job is left running or `max_batches` ran;
    /// returns the batches run (tests, the bench, the console's demo).
    pub async fn run_bulk_until_idle(&self, max_batches: usize) -> Result<usize, ServiceError> {
        let batch = self.bulk_batch_rows();
        for n in 0..max_batches {
            if self.run_bulk_batch(batch).await?.is_none() {
                return Ok(n);
            }
        }
        Ok(max_batches)
    }
}

/// What [`start_job_tx`] needs: the job to find or create.
#[derive(Clone)]
struct StartJobRequest {
    op: Op,
    kind: JobKind,
    template_id: TemplateId,
    key: Option<String>,
    total: i64,
    notify: bool,
    reason: Option<String>,
}

/// Finds the job of this input, or creates it `loading` with its count and options.
async fn start_job_tx(
    c: &mut AnyConnection,
    request: StartJobRequest,
) -> Result<JobView, ServiceError> {
    let StartJobRequest {
        op,
        kind,
        template_id,
        key,
        total,
        notify,
        reason,
    } = request;
    let now_ms = to_ms(op.now);
    templates::get(c, &template_id)
        .await?
        .ok_or_else(|| ServiceError::not_found("template", &template_id))?;
    if let Some(k) = &key
        && let Some(existing) = bulk::find_by_input(c, &template_id, kind.as_str(), k).await?
    {
        return Ok(JobView::from_row(&existing));
    }
    let mut job = new_job(&op.ctx, kind, &template_id, key.clone(), now_ms);
    job.total = total;
    job.notify = i64::from(notify);
    job.reason = reason;
    if !bulk::insert(c, &job).await? {
        // The same file, started at the same moment by
        // another request: answer that job.
        if let Some(k) = &key
            && let Some(existing) = bulk::find_by_input(c, &template_id, kind.as_str(), k).await?
        {
            return Ok(JobView::from_row(&existing));
        }
    }
    Ok(JobView::from_row(&job))
}

/// Stores lines `from..to` of a loading job and starts the job after its last line.
async fn load_lines_tx(
    c: &mut AnyConnection,
    id: &JobId,
    job: &JobRow,
    chunk: &[InputLine],
    from: usize,
    to: usize,
    now_ms: i64,
) -> Result<(), ServiceError> {
    let mut tally = Tally::default();
    let mut outcomes = Vec::with_capacity(chunk.len());
    for l in chunk {
        outcomes.push(match l.problem {
            Some(r) => tally.add(Some(r)),
            None => ("", None),
        });
    }
    let rows: Vec<NewLine> = chunk
        .iter()
        .zip(&outcomes)
        .enumerate()
        .map(|(i, (l, (outcome, reason)))| NewLine {
            line_no: i64::try_from(from + i + 1).unwrap_or(i64::MAX),
            value: &l.value,
            outcome: (!outcome.is_empty()).then_some(*outcome),
            reason: *reason,
            coupon_id: None,
        })
        .collect();
    bulk::insert_lines(c, id, &rows).await?;
    let reasons = add_reasons(&job.reasons, &tally.reasons);
    let to_i = i64::try_from(to).unwrap_or(i64::MAX);
    if bulk::mark_loaded(c, id, job.loaded, to_i, tally.failed, &reasons, now_ms).await?
        && to == chunk_end_total(job)
    {
        bulk::finish_loading(c, id, now_ms).await?;
    }
    Ok(())
}

/// A new job row: `loading`, nothing counted yet.
fn new_job(
    ctx: &Ctx,
    kind: JobKind,
    template_id: &TemplateId,
    key: Option<String>,
    now_ms: i64,
) -> JobRow {
    JobRow {
        id: JobId::generate(now_ms),
        kind: kind.as_str().into(),
        template_id: template_id.clone(),
        status: JobStatus::Loading.as_str().into(),
        input_sha256: key,
        notify: 0,
        reason: None,
        actor: ctx.actor.clone(),
        request_id: ctx.request_id.clone(),
        total: 0,
        loaded: 0,
        cursor_line: 0,
        walk_cursor: None,
        succeeded: 0,
        skipped: 0,
        failed: 0,
        reasons: "{}".into(),
        error: None,
        created_at: now_ms,
        updated_at: now_ms,
        finished_at: None,
    }
}

fn chunk_end_total(job: &JobRow) -> usize {
    usize::try_from(job.total).unwrap_or(0)
}

/// What a batch did, for the caller after the commit.
#[derive(Default, Serialize)]
struct BatchOutcome {
    lines: usize,
    finished: bool,
    /// Coupons issued: id and `ends_at`, for the expiry wheel.
    issued: Vec<(CouponId, i64)>,
}

/// The context every change of a job writes: its starter as actor, the job
/// id as the request id.
fn job_ctx(job: &JobRow) -> Ctx {
    Ctx::new(job.actor.clone(), Some(job.id.to_string()))
}

/// Moves the job on after a batch; a job changed meanwhile (impossible
/// while its row is held) rolls the batch back.
#[allow(clippy::too_many_arguments)]
async fn finish_batch(
    c: &mut AnyConnection,
    job: &JobRow,
    tally: &Tally,
    cursor_line: i64,
    walk_cursor: Option<&str>,
    total: i64,
    finished: bool,
    now_ms: i64,
) -> Result<(), ServiceError> {
    let reasons = add_reasons(&job.reasons, &tally.reasons);
    let status = if finished {
        JobStatus::Done
    } else {
        JobStatus::Running
    };
    let moved = bulk::advance(
        c,
        job,
        &Advance {
            cursor_line,
            walk_cursor,
            succeeded_add: tally.succeeded,
            skipped_add: tally.skipped,
            failed_add: tally.failed,
            reasons: &reasons,
            total,
            status: status.as_str(),
            finished_at: finished.then_some(now_ms),
            now_ms,
        },
    )
    .await?;
    if !moved {
        return Err(ServiceError::IllegalTransition(
            "the bulk job changed meanwhile".into(),
        ));
    }
    Ok(())
}

/// One batch of a bulk issue: each pending line through the claim's steps.
async fn issue_batch(
    c: &mut AnyConnection,
    job: &JobRow,
    op: &Op,
    batch: i64,
) -> Result<BatchOutcome, ServiceError> {
    let now = op.now;
    let now_ms = to_ms(now);
    let lines = bulk::pending_lines(c, &job.id, job.cursor_line, batch).await?;
    let template = templates::get_for_claim(c, &job.template_id).await?;
    let window = template.as_ref().and_then(|(t, _, _)| claim_window(t, now));
    let mut tally = Tally::default();
    let mut out = BatchOutcome::default();
    let mut messages = Vec::new();
    let mut out_of_stock = false;
    for (line_no, user_id) in &lines {
        // An issue line is pending only when its user id passed
        // `UserId::parse` as the file was loaded (`parse_lines`); the
        // others were stored failed (`invalid_user_id`).
        let user_id = &UserId::from_stored(user_id.clone());
        let refusal = match (&template, window) {
            (Some((t, shards, terms)), Some(window)) if !out_of_stock => {
                match take_claim(c, t, (*shards, terms), user_id).await? {
                    Some(Refusal::ClaimLimitReached) => Some(LineReason::ClaimLimitReached),
                    Some(_) => {
                        out_of_stock = true;
                        Some(LineReason::OutOfStock)
                    }
                    None => {
                        let mut row = template_coupon(t, user_id, window, now);
                        insert_coupon(c, &mut row, "claim", op, None).await?;
                        bulk::record_line(c, &job.id, *line_no, "issued", None, Some(&row.id))
                            .await?;
                        out.issued.push((row.id.clone(), row.ends_at));
                        if job.notify != 0 {
                            messages.push(issued_message(row, now_ms));
                        }
                        tally.add(None);
                        continue;
                    }
                }
            }
            (Some(_), Some(_)) => Some(LineReason::OutOfStock),
            _ => Some(LineReason::TemplateInactive),
        };
        let (outcome, reason) = tally.add(refusal);
        bulk::record_line(c, &job.id, *line_no, outcome, reason, None).await?;
    }
    outbox::insert_many(c, &messages).await?;
    out.lines = lines.len();
    out.finished = (lines.len() as i64) < batch;
    let cursor = lines.last().map_or(job.cursor_line, |(n, _)| *n);
    finish_batch(
        c,
        job,
        &tally,
        cursor,
        None,
        job.total,
        out.finished,
        now_ms,
    )
    .await?;
    Ok(out)
}

/// A `coupon.issued` outbox message: the coupon as the API shows it.
fn issued_message(row: crate::store::coupons::CouponRow, now_ms: i64) -> NewMessage {
    coupons::coupon_message(ISSUED_TYPE, row, now_ms)
}

/// Voids one coupon of the job's template if it is `available`, through
/// the ordinary invalidation (its event, the job's actor and reason);
/// `Some(reason)` when it is skipped or fails.
async fn void_one(
    c: &mut AnyConnection,
    job: &JobRow,
    coupon_id: &CouponId,
    now: DateTime<Utc>,
    day: i64,
) -> Result<Option<LineReason>, ServiceError> {
    let Some(coupon) = coupons::get(c, coupon_id).await? else {
        return Ok(Some(LineReason::NotFound));
    };
    if coupon.template_id.as_ref() != Some(&job.template_id) {
        return Ok(Some(LineReason::OtherTemplate));
    }
    match effective_status(coupon.status, from_ms(coupon.ends_at), now) {
        CouponStatus::Available => {}
        CouponStatus::Locked => return Ok(Some(LineReason::Locked)),
        CouponStatus::Used => return Ok(Some(LineReason::Used)),
        CouponStatus::Expired => return Ok(Some(LineReason::Expired)),
        CouponStatus::Invalidated => return Ok(Some(LineReason::Invalidated)),
    }
    let changed = coupons::transition(
        c,
        &CouponChange {
            coupon_id,
            from: CouponStatus::Available,
            to: CouponStatus::Invalidated,
            order_no: None,
            action: "invalidate",
            actor: &job.actor,
            reason: job.reason.as_deref(),
            request_id: Some(job.id.as_str()),
            trace: None,
            address: None,
            now_ms: to_ms(now),
            day,
        },
    )
    .await?;
    Ok((!changed).then_some(LineReason::Changed))
}

/// One batch of a bulk void of a file's coupon ids.
async fn void_lines_batch(
    c: &mut AnyConnection,
    job: &JobRow,
    now: DateTime<Utc>,
    day: i64,
    batch: i64,
) -> Result<BatchOutcome, ServiceError> {
    let lines = bulk::pending_lines(c, &job.id, job.cursor_line, batch).await?;
    let mut tally = Tally::default();
    for (line_no, coupon_id) in &lines {
        let coupon_id = CouponId::from_wire(coupon_id.as_str());
        let why = void_one(c, job, &coupon_id, now, day).await?;
        let (outcome, reason) = tally.add(why);
        let outcome = if why.is_none() {
            "invalidated"
        } else {
            outcome
        };
        let coupon = why.is_none().then_some(&coupon_id);
        bulk::record_line(c, &job.id, *line_no, outcome, reason, coupon).await?;
    }
    let finished = (lines.len() as i64) < batch;
    let cursor = lines.last().map_or(job.cursor_line, |(n, _)| *n);
    finish_batch(
        c,
        job,
        &tally,
        cursor,
        None,
        job.total,
        finished,
        to_ms(now),
    )
    .await?;
    Ok(BatchOutcome {
        lines: lines.len(),
        finished,
        issued: Vec::new(),
    })
}

/// One batch of a void of every coupon of the template: walks the
/// template's `available`, then `locked`, then `used` coupons created
/// before the job (`coupons_template_status_ends_idx`), voiding the
/// available ones and recording every coupon seen as a line.
async fn void_walk_batch(
    c: &mut AnyConnection,
    job: &JobRow,
    now: DateTime<Utc>,
    day: i64,
    batch: i64,
) -> Result<BatchOutcome, ServiceError> {
    let (mut phase, mut after) = parse_walk(job.walk_cursor.as_deref().unwrap_or(""));
    let mut seen: Vec<(CouponId, Option<LineReason>)> = Vec::new();
    let mut finished = false;
    // At most one query per phase, each bounded by what is left of the batch.
    while seen.len() < batch as usize {
        let Some(status) = WALK_PHASES.get(phase) else {
            finished = true;
            break;
        };
        let left = batch - seen.len() as i64;
        let rows = bulk::walk_coupons(
            c,
            &job.template_id,
            status.as_str(),
            job.created_at,
            after.as_ref().map(|(e, id)| (*e, id.as_str())),
            left,
        )
        .await?;
        let short = (rows.len() as i64) < left;
        for (id, ends_at) in rows {
            let id = CouponId::from_wire(id);
            let why = void_one(c, job, &id, now, day).await?;
            after = Some((ends_at, id.clone()));
            seen.push((id, why));
        }
        if short {
            phase += 1;
            after = None;
        }
    }
    if WALK_PHASES.get(phase).is_none() {
        finished = true;
    }
    let mut tally = Tally::default();
    let first = job.cursor_line + 1;
    let outcomes: Vec<(&'static str, Option<&'static str>)> = seen
        .iter()
        .map(|(_, why)| match tally.add(*why) {
            ("", None) => ("invalidated", None),
            other => other,
        })
        .collect();
    let rows: Vec<NewLine> = seen
        .iter()
        .zip(&outcomes)
        .enumerate()
        .map(|(i, ((id, why), (outcome, reason)))| NewLine {
            line_no: first + i as i64,
            value: id,
            outcome: Some(*outcome),
            reason: *reason,
            coupon_id: why.is_none().then_some(id),
        })
        .collect();
    bulk::insert_lines(c, &job.id, &rows).await?;
    let cursor_line = job.cursor_line + seen.len() as i64;
    let walk = match &after {
        Some((e, id)) => format!("{phase}:{e}:{id}"),
        None => format!("{phase}"),
    };
    // Coupons that moved between statuses while the walk went on may be
    // seen once or not at all: the finished job's total is what it saw.
    let total = if finished {
        cursor_line
    } else {
        job.total.max(cursor_line)
    };
    finish_batch(
        c,
        job,
        &tally,
        cursor_line,
        Some(&walk),
        total,
        finished,
        to_ms(now),
    )
    .await?;
    Ok(BatchOutcome {
        lines: seen.len(),
        finished,
        issued: Vec::new(),
    })
}
