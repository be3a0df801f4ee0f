//! The support console's home page as a work queue: what needs a person
//! now, each line a count from one indexed query and a link to the page
//! that lists it (`web::console::home`).

use chrono::{DateTime, NaiveDate, Utc};
use sqlx::AnyConnection;

use super::audit::AuditEventView;
use super::{Service, ServiceError, Settings};
use crate::domain::campaign::Policy;
use crate::domain::filters::AuditQuery;
use crate::domain::ids::{OrderNo, TemplateId, UserId};
use crate::domain::money::Cents;
use crate::domain::reconcile::AnomalyKind;
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::store::queue;

/// How far ahead "checkout locks lapsing soon" looks.
pub const LAPSING_WINDOW_SECONDS: i64 = 3600;
/// Rows of "my last actions".
pub const MY_LAST_ACTIONS: i64 = 5;
/// Most rows a queue list page shows.
pub const QUEUE_LIST_LIMIT: i64 = 200;

/// The home page's figures for one staff member.
#[derive(Debug, Clone)]
pub struct WorkQueue {
    /// The latest reconciliation run (id, when it finished), if any.
    pub run: Option<(i64, DateTime<Utc>)>,
    /// Its findings still open now (neither repaired nor resolved since),
    /// per kind (kinds with none left out), as the reconciliation page
    /// counts them ([`Service::open_findings_now`]).
    pub open_findings: Vec<(AnomalyKind, i64)>,
    /// Deposit-paid orders whose locked coupon ends before their
    /// final-payment window opens (not under `lock`).
    pub at_risk_orders: i64,
    /// Checkout locks lapsing in the next [`LAPSING_WINDOW_SECONDS`].
    pub lapsing_locks: i64,
    /// Coupons ending between now and the end of the business day.
    pub expiring_today: i64,
    /// Customers' support requests waiting (`support_requests`, open).
    pub support_requests: i64,
    /// The business day and the instant it ends.
    pub business_day: NaiveDate,
    pub day_ends_at: DateTime<Utc>,
    /// Compensation coupons this staff member gave today, in cents, and
    /// the daily cap; `None` for roles without a cap.
    pub compensation_today: Option<(i64, i64)>,
    /// This staff member's latest coupon and order events.
    pub my_actions: Vec<AuditEventView>,
    /// This instance's clock minus the database's, in milliseconds, when
    /// it is off by more than [`CLOCK_SKEW_WARN_MS`].
    pub clock_skew_ms: Option<i64>,
    /// Templates whose budget use reached [`BUDGET_WARN_PERCENT`]:
    /// `(id, name, budget cents, used cents)`, most used first.
    pub budgets_running_out: Vec<(TemplateId, String, i64, i64)>,
}

/// A budget used this far is shown on the home page.
pub const BUDGET_WARN_PERCENT: i64 = 80;

/// A clock difference past this is shown to staff. Expiry, lapses and
/// windows follow the database's clock under `serve`
/// ([`crate::clock::DatabaseClock`]), but a machine clock that far off
/// still misdates this instance's logs and is a sign its time
/// synchronisation is broken.
pub const CLOCK_SKEW_WARN_MS: i64 = 1_000;

/// One order of the at-risk list.
#[derive(Debug, Clone)]
pub struct AtRiskOrder {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub campaign_name: String,
    pub policy: Policy,
    pub code: String,
    pub coupon_ends_at: String,
    pub window_starts_at: String,
}

/// One order of the lapsing-locks list.
#[derive(Debug, Clone)]
pub struct LapsingOrder {
    pub order_no: OrderNo,
    pub user_id: UserId,
    pub total_cents: Cents,
    pub lapses_at: String,
}

impl Service {
    /// The work queue of `actor` (`staff:<name>`) at this moment; `capped`:
    /// whether the role has a daily compensation cap.
    pub async fn work_queue(&self, actor: &str, capped: bool) -> Result<WorkQueue, ServiceError> {
        let now = self.now();
        let settings = self.settings().clone();
        let actor = actor.to_string();
        let mine = AuditQuery {
            actor: Some(actor.clone()),
            ..Default::default()
        };
        let (day_start, day_end) = settings.reminders.tz.day_bounds(now);
        let mut q = self
            .read(move |c| {
                let actor = actor.clone();
                let settings = settings.clone();
                Box::pin(async move {
                    work_queue_tx(c, &actor, &settings, now, capped, day_start, day_end).await
                })
            })
            .await?;
        if let Some((run_id, _)) = q.run {
            q.open_findings = self.open_findings_now(run_id).await?;
        }
        q.my_actions = self.audit_events(mine, None, MY_LAST_ACTIONS).await?.rows;
        q.clock_skew_ms =
            Some(self.clock_skew_ms().await?).filter(|skew| skew.abs() > CLOCK_SKEW_WARN_MS);
        Ok(q)
    }

    /// This instance's own clock ([`crate::clock::Clock::wall_now`]: the
    /// machine's wall clock under `serve`, whose decisions follow the
    /// database's clock; the injected clock in tests) minus the database
    /// server's, in milliseconds, taking the middle of the round trip:
    /// positive when this instance is ahead.
    pub async fn clock_skew_ms(&self) -> Result<i64, ServiceError> {
        let before = to_ms(self.wall_now());
        let database = self.db().clock_ms().await?;
        let after = to_ms(self.wall_now());
        Ok(before + (after - before) / 2 - database)
    }

    /// The at-risk orders (see [`WorkQueue::at_risk_orders`]), the window
    /// opening first.
    pub async fn at_risk_orders(&self) -> Result<Vec<AtRiskOrder>, ServiceError> {
        let now_ms = to_ms(self.now());
        let rows = self
            .read(move |c| {
                Box::pin(async move { Ok(queue::at_risk_list(c, now_ms, QUEUE_LIST_LIMIT).await?) })
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| AtRiskOrder {
                order_no: r.order_no,
                user_id: r.user_id,
                campaign_name: r.campaign_name,
                policy: r.policy,
                code: r.code,
                coupon_ends_at: rfc3339(from_ms(r.coupon_ends_at)),
                window_starts_at: rfc3339(from_ms(r.window_starts_at)),
            })
            .collect())
    }

    /// The orders whose checkout lock lapses within the next hour, the
    /// soonest first.
    pub async fn lapsing_orders(&self) -> Result<Vec<LapsingOrder>, ServiceError> {
        let now_ms = to_ms(self.now());
        let until = now_ms + LAPSING_WINDOW_SECONDS * 1000;
        let rows = self
            .read(move |c| {
                Box::pin(async move {
                    Ok(queue::lapsing_list(c, now_ms, until, QUEUE_LIST_LIMIT).await?)
                })
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| LapsingOrder {
                order_no: r.order_no,
                user_id: r.user_id,
                total_cents: r.total_cents,
                lapses_at: rfc3339(from_ms(r.checkout_lock_expires_at)),
            })
            .collect())
    }
}

/// Reads the work queue's counts and, for a capped role, today's compensation and its cap.
async fn work_queue_tx(
    c: &mut AnyConnection,
    actor: &str,
    settings: &Settings,
    now: DateTime<Utc>,
    capped: bool,
    day_start: DateTime<Utc>,
    day_end: DateTime<Utc>,
) -> Result<WorkQueue, ServiceError> {
    let now_ms = to_ms(now);
    let run = crate::store::reconcile::latest_run(c).await?;
    // Counted after this read, as the reconciliation page
    // counts them (see below).
    let open_findings = Vec::new();
    let compensation_today = if capped {
        let given = crate::store::ledger::compensation_issued_by(
            c,
            actor,
            to_ms(day_start),
            to_ms(day_end),
        )
        .await?;
        // The daily cap of the compensation rules in force
        // (version 1 = the settings while none is written).
        let daily = match crate::store::compensation_rules::latest_version(c).await? {
            Some(v) => v.support_daily_cents.get(),
            None => settings.support_compensation_daily_cents,
        };
        Some((given, daily))
    } else {
        None
    };
    Ok(WorkQueue {
        run: run.map(|(id, at)| (id, from_ms(at))),
        open_findings,
        at_risk_orders: queue::at_risk_count(c, now_ms).await?,
        lapsing_locks: queue::lapsing_count(c, now_ms, now_ms + LAPSING_WINDOW_SECONDS * 1000)
            .await?,
        expiring_today: queue::ending_count(c, now_ms, to_ms(day_end)).await?,
        support_requests: crate::store::support_requests::count(c, "open").await?,
        business_day: crate::i18n::zone::business_day(now),
        day_ends_at: day_end,
        compensation_today,
        my_actions: Vec::new(),
        clock_skew_ms: None,
        budgets_running_out: crate::store::budgets::past_share(c, BUDGET_WARN_PERCENT, 20).await?,
    })
}
