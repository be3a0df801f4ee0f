//! The pending-expirations dashboard's figures. The hourly counts, the
//! overdue count and the oldest overdue coupon come from
//! [`Service::pending_expirations`], the very call behind
//! `GET /api/v1/expirations/pending`, so page and API cannot disagree. The
//! rest is read from the database, never from one process's memory, so
//! every instance behind a load balancer shows the same page:
//! the expiry lag from the `expire` events of the last hour, the jobs'
//! last runs from `job_runs`, and the templates with most coupons due.

use chrono::Duration;
use serde::Serialize;

use super::jobs::PendingExpirations;
use super::{Service, ServiceError};
use crate::domain::ids::TemplateId;
use crate::domain::time::{from_ms, rfc3339, to_ms};
use crate::store::expiry;

/// The window the dashboard charts: 72 hours.
pub const DASHBOARD_WINDOW_SECONDS: i64 = 72 * 3600;
/// The window of the top-templates table: 24 hours.
pub const TOP_TEMPLATES_WINDOW_SECONDS: i64 = 24 * 3600;
/// Rows of the top-templates table.
pub const TOP_TEMPLATES: i64 = 10;
/// How far back the lag sample looks.
pub const LAG_WINDOW_SECONDS: i64 = 3600;
/// Most expiries the lag sample reads.
pub const LAG_SAMPLE: i64 = 1000;
/// The periodic jobs that record their runs in `job_runs` (the timing wheel
/// runs continuously and records none; its work shows in the lag).
pub const RECORDED_JOBS: [&str; 4] = ["sweep", "zombie-reaper", "archive", "idempotency-purge"];

/// A template with coupons due soon.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TemplateDue {
    pub template_id: TemplateId,
    pub name: String,
    pub count: i64,
}

/// The last recorded run of a job.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct JobRunView {
    pub job: String,
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: i64,
    pub rows: i64,
    pub error: Option<String>,
}

/// The lag between coupons' `ends_at` and their stored expiry, over the
/// expiries of the last hour (all instances).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct LagSample {
    /// Expiries in the sample (at most [`LAG_SAMPLE`]).
    pub count: usize,
    pub p50_ms: Option<i64>,
    pub p95_ms: Option<i64>,
    pub max_ms: Option<i64>,
    /// Expiries per actor (`job:expiry-wheel`, `job:expiry-sweep`), most first.
    pub by_actor: Vec<(String, usize)>,
    /// When the newest expiry in the sample happened.
    pub latest_at: Option<String>,
}

impl LagSample {
    /// Percentiles of `(actor, event at, ends_at)` rows.
    pub fn from_rows(rows: &[(String, i64, i64)]) -> LagSample {
        if rows.is_empty() {
            return LagSample::default();
        }
        let mut lags: Vec<i64> = rows
            .iter()
            .map(|(_, at, ends)| (at - ends).max(0))
            .collect();
        lags.sort_unstable();
        let pick = |q: f64| {
            let i = ((lags.len() as f64 - 1.0) * q).round() as usize;
            lags[i.min(lags.len() - 1)]
        };
        let mut by_actor: Vec<(String, usize)> = Vec::new();
        for (actor, _, _) in rows {
            match by_actor.iter_mut().find(|(a, _)| a == actor) {
                Some((_, n)) => *n += 1,
                None => by_actor.push((actor.clone(), 1)),
            }
        }
        by_actor.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        LagSample {
            count: rows.len(),
            p50_ms: Some(pick(0.5)),
            p95_ms: Some(pick(0.95)),
            max_ms: lags.last().copied(),
            by_actor,
            latest_at: rows.iter().map(|r| r.1).max().map(|t| rfc3339(from_ms(t))),
        }
    }
}

/// Everything the dashboard shows.
#[derive(Debug, Clone, Serialize)]
pub struct ExpiryDashboard {
    /// When the figures were read.
    pub now: String,
    /// Exactly what `GET /api/v1/expirations/pending?within_seconds=259200`
    /// answers at this moment.
    pub pending: PendingExpirations,
    /// How long the oldest overdue coupon has been overdue.
    pub oldest_overdue_age_seconds: Option<i64>,
    pub top_templates: Vec<TemplateDue>,
    /// The last run of each job in [`RECORDED_JOBS`] that has run.
    pub jobs: Vec<JobRunView>,
    pub lag: LagSample,
}

impl Service {
    /// The dashboard's figures.
    pub async fn expiry_dashboard(&self) -> Result<ExpiryDashboard, ServiceError> {
        let pending = self.pending_expirations(DASHBOARD_WINDOW_SECONDS).await?;
        let now = self.now();
        let now_ms = to_ms(now);
        let day_ms = to_ms(now + Duration::seconds(TOP_TEMPLATES_WINDOW_SECONDS));
        let lag_since_ms = to_ms(now - Duration::seconds(LAG_WINDOW_SECONDS));
        let (top, runs, lag_rows) = self
            .read(move |c| {
                Box::pin(async move {
                    let top = expiry::due_by_template(c, now_ms, day_ms, TOP_TEMPLATES).await?;
                    let mut runs = Vec::new();
                    for job in RECORDED_JOBS {
                        if let Some(r) = expiry::latest_job_run(c, job).await? {
                            runs.push(r);
                        }
                    }
                    let lag = expiry::recent_expiries(c, lag_since_ms, LAG_SAMPLE).await?;
                    Ok((top, runs, lag))
                })
            })
            .await?;
        let oldest_overdue_age_seconds = pending
            .oldest_overdue_ends_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| (now - t.with_timezone(&chrono::Utc)).num_seconds().max(0));
        Ok(ExpiryDashboard {
            now: rfc3339(now),
            pending,
            oldest_overdue_age_seconds,
            top_templates: top
                .into_iter()
                .map(|(template_id, name, count)| TemplateDue {
                    template_id: TemplateId::from_wire(template_id),
                    name,
                    count,
                })
                .collect(),
            jobs: runs
                .into_iter()
                .map(|r| JobRunView {
                    job: r.job,
                    started_at: rfc3339(from_ms(r.started_at)),
                    finished_at: rfc3339(from_ms(r.finished_at)),
                    duration_ms: (r.finished_at - r.started_at).max(0),
                    rows: r.rows,
                    error: r.error,
                })
                .collect(),
            lag: LagSample::from_rows(&lag_rows),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_percentiles_and_actors() {
        let rows: Vec<(String, i64, i64)> = (0..100)
            .map(|i| {
                let actor = if i < 90 {
                    "job:expiry-wheel"
                } else {
                    "job:expiry-sweep"
                };
                (actor.to_string(), 1_000 + i * 10, 1_000)
            })
            .collect();
        let s = LagSample::from_rows(&rows);
        assert_eq!(s.count, 100);
        assert_eq!(s.p50_ms, Some(500));
        assert_eq!(s.p95_ms, Some(940));
        assert_eq!(s.max_ms, Some(990));
        assert_eq!(
            s.by_actor,
            vec![
                ("job:expiry-wheel".to_string(), 90),
                ("job:expiry-sweep".to_string(), 10)
            ]
        );
        assert_eq!(LagSample::from_rows(&[]), LagSample::default());
    }
}
