//! Reports (报表): a template's or a presale campaign's coupons per
//! business day, summed from the report counters (`store::counters`,
//! written by the changes themselves), never by scanning coupons. See
//! docs/src/operator/reports.md.

use serde::Serialize;
use utoipa::ToSchema;

use super::support::Authority;
use super::{Service, ServiceError};
use crate::domain::ids::{CampaignId, TemplateId};
use crate::domain::permissions::Permission;
use crate::domain::report::{
    self, Counts, date_number, number_date, redemption_rate, report_range,
};
use crate::domain::time::to_ms;
use crate::store::counters::{self, Subject};
use crate::store::{campaigns, templates};

/// One business day of a report.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReportDay {
    /// The business date (`COUPONKEEPER_BUSINESS_TZ`), `YYYY-MM-DD`.
    pub day: String,
    /// Coupons claimed (template) / coupons locked to the campaign's orders.
    pub claimed: i64,
    /// Coupons used (a payment).
    pub used: i64,
    /// Uses given back by a refund that day.
    pub returned: i64,
    /// Coupons whose expiry was written that day.
    pub expired: i64,
    /// Coupons invalidated by staff.
    pub invalidated: i64,
    /// Discounts of the orders that used a coupon, less those refunded.
    pub discount_cents: i64,
    /// Compensation handed out (compensation ledger) for these coupons /
    /// this campaign's orders; a reversal when such an order is refunded
    /// in full counts against it.
    pub compensation_cents: i64,
    /// The discount of the units refunded that day, whether the coupon
    /// stayed on its order (a partial refund) or went back.
    pub refunded_discount_cents: i64,
}

/// The sums of a report's days, and the coupons as they stand now.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReportTotals {
    pub claimed: i64,
    pub used: i64,
    pub returned: i64,
    pub expired: i64,
    pub invalidated: i64,
    pub discount_cents: i64,
    pub compensation_cents: i64,
    pub refunded_discount_cents: i64,
    /// Now, whatever the range: a template's coupons whose effective
    /// status is `available` (one past its end is not); a campaign's
    /// coupons locked to its orders whose final payment is ahead.
    pub available: i64,
    /// Now: coupons locked to an order.
    pub locked: i64,
    /// `(used - returned) / claimed` over the range, 0 when nothing was
    /// claimed; four decimals.
    pub redemption_rate: f64,
}

/// `GET /templates/{id}/report`, `GET /presale-campaigns/{id}/report`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Report {
    /// `template` or `campaign`.
    pub subject: &'static str,
    /// A template id or a campaign id, as `subject` says.
    pub id: String,
    pub name: String,
    /// First and last business date covered.
    pub from: String,
    pub to: String,
    /// Every day of the range, oldest first (days without a change are 0).
    pub days: Vec<ReportDay>,
    pub totals: ReportTotals,
    /// A template's budget and what its coupons on orders hold of it now;
    /// absent without one (and for a campaign).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<ReportBudget>,
}

/// A template's budget on its report.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct ReportBudget {
    pub budget_cents: i64,
    pub budget_used_cents: i64,
}

fn day_view(day: i64, c: &Counts) -> ReportDay {
    ReportDay {
        day: number_date(day).format("%Y-%m-%d").to_string(),
        claimed: c.claimed,
        used: c.used,
        returned: c.returned,
        expired: c.expired,
        invalidated: c.invalidated,
        discount_cents: c.discount_cents,
        compensation_cents: c.compensation_cents,
        refunded_discount_cents: c.refunded_discount_cents,
    }
}

/// Every day from `from_day` through `to_day`, zeros where no row is.
fn fill_days(from_day: i64, to_day: i64, rows: &[(i64, Counts)]) -> (Vec<ReportDay>, Counts) {
    let mut sum = Counts::default();
    let mut days =
        Vec::with_capacity((to_day - from_day + 1).clamp(0, report::MAX_REPORT_DAYS) as usize);
    let mut it = rows.iter().peekable();
    for day in from_day..=to_day {
        let mut c = Counts::default();
        while let Some((d, row)) = it.peek() {
            if *d < day {
                it.next();
            } else {
                if *d == day {
                    c = *row;
                }
                break;
            }
        }
        sum.add(&c);
        days.push(day_view(day, &c));
    }
    (days, sum)
}

/// The most deltas one fold transaction takes ([`Service::fold_counters`]).
pub const FOLD_BATCH: i64 = counters::FOLD_BATCH;

impl Service {
    /// Folds at most `batch` (1 to [`FOLD_BATCH`]) of the oldest counter deltas of
    /// each subject into the report counters, one transaction per subject
    /// ([`counters::fold`]); returns how many were folded. Reports are
    /// exact before and after: readers add the deltas still waiting.
    pub async fn fold_counters(&self, batch: i64) -> Result<u64, ServiceError> {
        let mut folded = 0u64;
        for s in Subject::ALL {
            let done = self
                .write(None, move |c| {
                    Box::pin(async move { Ok(counters::fold(c, s, batch).await? as u64) })
                })
                .await?;
            folded += match done {
                super::Executed::Fresh(n) => n,
                super::Executed::Replayed { .. } => 0,
            };
        }
        Ok(folded)
    }

    /// How many counter deltas wait for the fold, over both subjects.
    pub async fn counter_deltas_pending(&self) -> Result<i64, ServiceError> {
        self.read(|c| {
            Box::pin(async move {
                let mut n = 0;
                for s in Subject::ALL {
                    n += counters::pending(c, s).await?;
                }
                Ok(n)
            })
        })
        .await
    }

    fn check_reports(authority: &Authority) -> Result<(), ServiceError> {
        if authority.may(Permission::ReadReports) {
            Ok(())
        } else {
            Err(ServiceError::Forbidden(
                "reports need the operator role".into(),
            ))
        }
    }

    /// A template's report over `[from, to]` (business dates; default the
    /// last 30 days; at most 366).
    pub async fn template_report(
        &self,
        authority: &Authority,
        id: TemplateId,
        from: Option<String>,
        to: Option<String>,
    ) -> Result<Report, ServiceError> {
        Self::check_reports(authority)?;
        let now = self.now();
        let tz = self.settings().reminders.tz;
        let today = tz.local(now).date();
        let (from, to) = report_range(from.as_deref(), to.as_deref(), today)?;
        let (from_day, to_day) = (date_number(from), date_number(to));
        let now_ms = to_ms(now);
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                let t = templates::get(c, &id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("template", &id))?;
                let rows = counters::days(c, Subject::Template, &id, from_day, to_day).await?;
                let all = counters::all_days(c, Subject::Template, &id).await?;
                let overdue = counters::overdue(c, &id, now_ms).await?;
                let (days, sum) = fill_days(from_day, to_day, &rows);
                let budget = t.budget_cents.map(|b| ReportBudget {
                    budget_cents: b.get(),
                    budget_used_cents: b.get() - t.budget_left_cents.unwrap_or(0),
                });
                Ok(Report {
                    budget,
                    subject: "template",
                    id: t.id.into_string(),
                    name: t.name,
                    from: from.format("%Y-%m-%d").to_string(),
                    to: to.format("%Y-%m-%d").to_string(),
                    days,
                    totals: totals(
                        &sum,
                        (all.status_available - overdue).max(0),
                        all.status_locked,
                    ),
                })
            })
        })
        .await
    }

    /// A presale campaign's report: the coupons bound to its orders.
    pub async fn campaign_report(
        &self,
        authority: &Authority,
        id: CampaignId,
        from: Option<String>,
        to: Option<String>,
    ) -> Result<Report, ServiceError> {
        Self::check_reports(authority)?;
        let now = self.now();
        let tz = self.settings().reminders.tz;
        let today = tz.local(now).date();
        let (from, to) = report_range(from.as_deref(), to.as_deref(), today)?;
        let (from_day, to_day) = (date_number(from), date_number(to));
        self.read(move |c| {
            let id = id.clone();
            Box::pin(async move {
                let k = campaigns::get(c, &id)
                    .await?
                    .ok_or_else(|| ServiceError::not_found("presale campaign", &id))?;
                let rows = counters::days(c, Subject::Campaign, &id, from_day, to_day).await?;
                let all = counters::all_days(c, Subject::Campaign, &id).await?;
                let (days, sum) = fill_days(from_day, to_day, &rows);
                Ok(Report {
                    budget: None,
                    subject: "campaign",
                    id: k.id.into_string(),
                    name: k.name,
                    from: from.format("%Y-%m-%d").to_string(),
                    to: to.format("%Y-%m-%d").to_string(),
                    days,
                    totals: totals(&sum, all.status_locked, all.status_locked),
                })
            })
        })
        .await
    }
}

fn totals(sum: &Counts, available: i64, locked: i64) -> ReportTotals {
    ReportTotals {
        claimed: sum.claimed,
        used: sum.used,
        returned: sum.returned,
        expired: sum.expired,
        invalidated: sum.invalidated,
        discount_cents: sum.discount_cents,
        compensation_cents: sum.compensation_cents,
        refunded_discount_cents: sum.refunded_discount_cents,
        available,
        locked,
        redemption_rate: redemption_rate(sum.claimed, sum.used, sum.returned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_day_of_the_range_is_there_and_the_rows_land_on_theirs() {
        let row = |claimed| Counts {
            claimed,
            ..Counts::default()
        };
        let (days, sum) = fill_days(10, 14, &[(9, row(100)), (11, row(2)), (14, row(3))]);
        assert_eq!(days.len(), 5);
        assert_eq!(
            days.iter().map(|d| d.claimed).collect::<Vec<_>>(),
            vec![0, 2, 0, 0, 3]
        );
        assert_eq!(sum.claimed, 5);
    }
}
