//! Prometheus metrics, kept in process and rendered as text at `/metrics`.
//!
//! Hand-rolled rather than a metrics crate: a handful of counters and
//! histogram families with bounded label sets (route templates and job
//! names, never raw paths or ids, so cardinality cannot grow with traffic).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Request latency buckets, seconds.
const REQUEST_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];
/// Expiry lag buckets (stored `expired` minus `ends_at`), seconds.
const LAG_BUCKETS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0,
];
/// Rows per expiry batch.
const BATCH_BUCKETS: &[f64] = &[1.0, 10.0, 50.0, 100.0, 250.0, 500.0];
/// Job run durations, seconds.
const JOB_BUCKETS: &[f64] = &[0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0];
/// Most distinct series per family; a guard, not a limit hit in practice.
const MAX_SERIES: usize = 2000;

#[derive(Debug, Clone)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    count: u64,
    sum: f64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len()],
            count: 0,
            sum: 0.0,
        }
    }

    fn observe(&mut self, v: f64) {
        for (i, le) in self.bounds.iter().enumerate() {
            if v <= *le {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += v;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, le) in self.bounds.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {}",
                self.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

#[derive(Default)]
struct Inner {
    requests: BTreeMap<(String, String, u16), u64>,
    durations: BTreeMap<String, Histogram>,
    events: BTreeMap<&'static str, u64>,
    expiry_lag: Option<Histogram>,
    batch_rows: Option<Histogram>,
    job_durations: BTreeMap<&'static str, Histogram>,
    job_failures: BTreeMap<&'static str, u64>,
    wheel_skips: BTreeMap<&'static str, u64>,
    job_rows: BTreeMap<&'static str, u64>,
}

/// The process's metrics.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// Figures read from the database at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExpiryGauges {
    pub due_next_hour: i64,
    pub overdue: i64,
    pub oldest_overdue_age_seconds: f64,
    /// This instance's clock minus the database's.
    pub clock_skew_seconds: f64,
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one finished HTTP request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let mut m = self.lock();
        let key = (method.to_string(), route.to_string(), status);
        if m.requests.len() < MAX_SERIES || m.requests.contains_key(&key) {
            *m.requests.entry(key).or_insert(0) += 1;
        }
        if m.durations.len() < MAX_SERIES || m.durations.contains_key(route) {
            m.durations
                .entry(route.to_string())
                .or_insert_with(|| Histogram::new(REQUEST_BUCKETS))
                .observe(seconds);
        }
    }

    /// Counts a named business event (claims, refusals, ...).
    pub fn incr(&self, name: &'static str) {
        *self.lock().events.entry(name).or_insert(0) += 1;
    }

    /// Counts one deadline the expiry wheel gave up for a tick after a
    /// retry (a conflict on that item, not a database failure).
    pub fn count_wheel_skip(&self, deadline: &'static str) {
        *self.lock().wheel_skips.entry(deadline).or_insert(0) += 1;
    }

    /// Records one expiry batch: its size and each coupon's lag.
    pub fn observe_expiry(&self, lags_ms: &[i64]) {
        let mut m = self.lock();
        m.batch_rows
            .get_or_insert_with(|| Histogram::new(BATCH_BUCKETS))
            .observe(lags_ms.len() as f64);
        let lag = m
            .expiry_lag
            .get_or_insert_with(|| Histogram::new(LAG_BUCKETS));
        for l in lags_ms {
            lag.observe(*l as f64 / 1000.0);
        }
    }

    /// Records one run of a background job.
    pub fn observe_job(&self, job: &'static str, seconds: f64, rows: u64, failed: bool) {
        let mut m = self.lock();
        m.job_durations
            .entry(job)
            .or_insert_with(|| Histogram::new(JOB_BUCKETS))
            .observe(seconds);
        *m.job_rows.entry(job).or_insert(0) += rows;
        let failures = m.job_failures.entry(job).or_insert(0);
        if failed {
            *failures += 1;
        }
    }

    /// Prometheus text exposition format.
    pub fn render(&self, gauges: Option<ExpiryGauges>) -> String {
        let m = self.lock();
        let mut out = String::new();
        out.push_str(
            "# HELP couponkeeper_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE couponkeeper_http_requests_total counter\n");
        for ((me, r, s), n) in &m.requests {
            let _ = writeln!(
                out,
                "couponkeeper_http_requests_total{{method=\"{me}\",route=\"{}\",status=\"{s}\"}} {n}",
                escape(r)
            );
        }
        out.push_str(
            "# HELP couponkeeper_http_request_duration_seconds HTTP request latency by route.\n",
        );
        out.push_str("# TYPE couponkeeper_http_request_duration_seconds histogram\n");
        for (r, h) in &m.durations {
            h.render(
                &mut out,
                "couponkeeper_http_request_duration_seconds",
                &format!("route=\"{}\"", escape(r)),
            );
        }
        out.push_str(
            "# HELP couponkeeper_events_total Business events (claims, refusals by code).\n",
        );
        out.push_str("# TYPE couponkeeper_events_total counter\n");
        for (name, n) in &m.events {
            let _ = writeln!(out, "couponkeeper_events_total{{event=\"{name}\"}} {n}");
        }
        out.push_str("# HELP couponkeeper_wheel_skipped_total Deadlines the expiry wheel skipped for a tick after a retry, by kind.\n");
        out.push_str("# TYPE couponkeeper_wheel_skipped_total counter\n");
        for (deadline, n) in &m.wheel_skips {
            let _ = writeln!(
                out,
                "couponkeeper_wheel_skipped_total{{deadline=\"{deadline}\"}} {n}"
            );
        }
        out.push_str("# HELP couponkeeper_expiry_lag_seconds Time from a coupon's ends_at to its stored expiry.\n");
        out.push_str("# TYPE couponkeeper_expiry_lag_seconds histogram\n");
        m.expiry_lag
            .clone()
            .unwrap_or_else(|| Histogram::new(LAG_BUCKETS))
            .render(&mut out, "couponkeeper_expiry_lag_seconds", "");
        out.push_str(
            "# HELP couponkeeper_expiry_batch_rows Coupons expired per batch statement.\n",
        );
        out.push_str("# TYPE couponkeeper_expiry_batch_rows histogram\n");
        m.batch_rows
            .clone()
            .unwrap_or_else(|| Histogram::new(BATCH_BUCKETS))
            .render(&mut out, "couponkeeper_expiry_batch_rows", "");
        out.push_str(
            "# HELP couponkeeper_job_run_duration_seconds Background job run durations.\n",
        );
        out.push_str("# TYPE couponkeeper_job_run_duration_seconds histogram\n");
        for (job, h) in &m.job_durations {
            h.render(
                &mut out,
                "couponkeeper_job_run_duration_seconds",
                &format!("job=\"{job}\""),
            );
        }
        out.push_str("# HELP couponkeeper_job_failures_total Background job runs that failed.\n");
        out.push_str("# TYPE couponkeeper_job_failures_total counter\n");
        for (job, n) in &m.job_failures {
            let _ = writeln!(out, "couponkeeper_job_failures_total{{job=\"{job}\"}} {n}");
        }
        out.push_str("# HELP couponkeeper_job_rows_total Rows changed by background jobs.\n");
        out.push_str("# TYPE couponkeeper_job_rows_total counter\n");
        for (job, n) in &m.job_rows {
            let _ = writeln!(out, "couponkeeper_job_rows_total{{job=\"{job}\"}} {n}");
        }
        if let Some(g) = gauges {
            out.push_str("# HELP couponkeeper_coupons_due_next_hour Available coupons whose ends_at is within the next hour.\n");
            out.push_str("# TYPE couponkeeper_coupons_due_next_hour gauge\n");
            let _ = writeln!(
                out,
                "couponkeeper_coupons_due_next_hour {}",
                g.due_next_hour
            );
            out.push_str("# HELP couponkeeper_coupons_overdue Coupons past ends_at still stored available.\n");
            out.push_str("# TYPE couponkeeper_coupons_overdue gauge\n");
            let _ = writeln!(out, "couponkeeper_coupons_overdue {}", g.overdue);
            out.push_str("# HELP couponkeeper_oldest_overdue_age_seconds Age of the oldest overdue coupon.\n");
            out.push_str("# TYPE couponkeeper_oldest_overdue_age_seconds gauge\n");
            let _ = writeln!(
                out,
                "couponkeeper_oldest_overdue_age_seconds {}",
                g.oldest_overdue_age_seconds
            );
            out.push_str("# HELP couponkeeper_clock_skew_seconds This instance's clock minus the database server's (positive: ahead); expiry is decided on each instance's clock.\n");
            out.push_str("# TYPE couponkeeper_clock_skew_seconds gauge\n");
            let _ = writeln!(
                out,
                "couponkeeper_clock_skew_seconds {}",
                g.clock_skew_seconds
            );
        }
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_render_as_counters_and_histograms() {
        let m = Metrics::default();
        m.observe_request("POST", "/api/v1/templates", 201, 0.003);
        m.observe_request("POST", "/api/v1/templates", 201, 0.2);
        let text = m.render(None);
        assert!(text.contains(
            "couponkeeper_http_requests_total{method=\"POST\",route=\"/api/v1/templates\",status=\"201\"} 2"
        ));
        assert!(text.contains(
            "couponkeeper_http_request_duration_seconds_bucket{route=\"/api/v1/templates\",le=\"0.005\"} 1"
        ));
        assert!(text.contains(
            "couponkeeper_http_request_duration_seconds_count{route=\"/api/v1/templates\"} 2"
        ));
    }

    #[test]
    fn expiry_lag_jobs_and_gauges_render() {
        let m = Metrics::default();
        m.observe_expiry(&[300, 1500, 2500]);
        m.observe_job("sweep", 0.2, 3, false);
        m.observe_job("sweep", 0.1, 0, true);
        let text = m.render(Some(ExpiryGauges {
            due_next_hour: 4,
            overdue: 2,
            oldest_overdue_age_seconds: 7.5,
            clock_skew_seconds: -0.25,
        }));
        assert!(
            text.contains("couponkeeper_expiry_lag_seconds_bucket{le=\"0.5\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("couponkeeper_expiry_lag_seconds_bucket{le=\"2\"} 2"),
            "{text}"
        );
        assert!(text.contains("couponkeeper_expiry_batch_rows_count 1"));
        assert!(text.contains("couponkeeper_job_failures_total{job=\"sweep\"} 1"));
        assert!(text.contains("couponkeeper_job_rows_total{job=\"sweep\"} 3"));
        assert!(text.contains("couponkeeper_coupons_overdue 2"));
        assert!(text.contains("couponkeeper_oldest_overdue_age_seconds 7.5"));
        assert!(text.contains("couponkeeper_clock_skew_seconds -0.25"));
    }
}
