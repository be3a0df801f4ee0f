//! Prometheus metrics, kept in process and rendered as text at `/metrics`.
//!
//! Hand-rolled rather than a metrics crate: a handful of counters and
//! histogram families with bounded label sets (route templates, job names,
//! store call names and webhook subscribers, never raw paths, SQL or ids,
//! so cardinality cannot grow with traffic).

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
/// Store call durations, seconds.
const QUERY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
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

/// The webhook backlog of one subscriber, read at scrape time.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscriberBacklog {
    /// The subscriber id (`default` or a console subscriber's id): a
    /// handful, added by operators.
    pub subscriber: String,
    /// Deliveries not yet delivered and still to be tried.
    pub pending: i64,
    /// Deliveries given up on (dead letters) and not redelivered.
    pub dead: i64,
    /// How long the oldest pending delivery has waited since it was made.
    pub oldest_pending_age_seconds: f64,
}

/// The webhook queue as a scrape reads it: outbox messages not yet fanned
/// out to subscribers, then each subscriber's deliveries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebhookBacklog {
    pub undispatched: i64,
    pub oldest_undispatched_age_seconds: f64,
    pub subscribers: Vec<SubscriberBacklog>,
}

/// Durations of named store calls and a count of the slow ones: what the
/// store's [`crate::store::timing`] hands in. Names are the `&'static str`
/// of the store's code (`coupons.lock`, `deliveries.claim_due`), so the
/// label set is fixed by the program, never by the data.
#[derive(Debug)]
pub struct QueryTimings {
    slow_ms: u64,
    inner: Mutex<BTreeMap<&'static str, (Histogram, u64)>>,
}

impl QueryTimings {
    /// Counts a call as slow when it took longer than `slow_ms`
    /// (`COUPONKEEPER_SLOW_QUERY_MS`; 0 counts every call).
    pub fn new(slow_ms: u64) -> Self {
        QueryTimings {
            slow_ms,
            inner: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn slow_ms(&self) -> u64 {
        self.slow_ms
    }

    /// Records one call of `name`; true when it counted as slow.
    pub fn observe(&self, name: &'static str, elapsed: std::time::Duration) -> bool {
        let slow = elapsed.as_millis() >= u128::from(self.slow_ms);
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() >= MAX_SERIES && !m.contains_key(name) {
            return slow;
        }
        let (h, slow_calls) = m
            .entry(name)
            .or_insert_with(|| (Histogram::new(QUERY_BUCKETS), 0));
        h.observe(elapsed.as_secs_f64());
        if slow {
            *slow_calls += 1;
        }
        slow
    }

    fn render(&self, out: &mut String) {
        let m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP couponkeeper_db_query_duration_seconds Duration of named store calls (one to a few statements each), by query name.\n");
        out.push_str("# TYPE couponkeeper_db_query_duration_seconds histogram\n");
        for (name, (h, _)) in m.iter() {
            h.render(
                out,
                "couponkeeper_db_query_duration_seconds",
                &format!("query=\"{name}\""),
            );
        }
        let _ = writeln!(
            out,
            "# HELP couponkeeper_db_slow_queries_total Named store calls that took at least COUPONKEEPER_SLOW_QUERY_MS ({} ms), by query name.",
            self.slow_ms
        );
        out.push_str("# TYPE couponkeeper_db_slow_queries_total counter\n");
        for (name, (_, n)) in m.iter() {
            let _ = writeln!(
                out,
                "couponkeeper_db_slow_queries_total{{query=\"{name}\"}} {n}"
            );
        }
    }
}

/// What one scrape reads besides the process's own counters; each part is
/// left out when it could not be read (a database outage must not fail
/// the scrape).
#[derive(Debug, Clone, Copy, Default)]
pub struct Scrape<'a> {
    pub expiry: Option<ExpiryGauges>,
    pub webhooks: Option<&'a WebhookBacklog>,
    pub queries: Option<&'a QueryTimings>,
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

    /// Prometheus text exposition format: the process's own families and
    /// the expiry gauges.
    pub fn render(&self, gauges: Option<ExpiryGauges>) -> String {
        self.render_scrape(Scrape {
            expiry: gauges,
            ..Scrape::default()
        })
    }

    /// Prometheus text exposition format: everything a scrape read.
    pub fn render_scrape(&self, scrape: Scrape<'_>) -> String {
        let gauges = scrape.expiry;
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
        if let Some(b) = scrape.webhooks {
            render_backlog(&mut out, b);
        }
        if let Some(q) = scrape.queries {
            q.render(&mut out);
        }
        out
    }
}

/// Reads one figure of a subscriber's backlog, as its sample's value.
type BacklogValue = fn(&SubscriberBacklog) -> String;

fn render_backlog(out: &mut String, b: &WebhookBacklog) {
    out.push_str("# HELP couponkeeper_webhook_undispatched Outbox messages not yet fanned out into deliveries.\n");
    out.push_str("# TYPE couponkeeper_webhook_undispatched gauge\n");
    let _ = writeln!(out, "couponkeeper_webhook_undispatched {}", b.undispatched);
    out.push_str("# HELP couponkeeper_webhook_oldest_undispatched_age_seconds Age of the oldest outbox message not yet fanned out (0: none).\n");
    out.push_str("# TYPE couponkeeper_webhook_oldest_undispatched_age_seconds gauge\n");
    let _ = writeln!(
        out,
        "couponkeeper_webhook_oldest_undispatched_age_seconds {}",
        b.oldest_undispatched_age_seconds
    );
    let families: [(&str, &str, BacklogValue); 3] = [
        (
            "couponkeeper_webhook_deliveries_pending",
            "Webhook deliveries still to be delivered (due, leased or waiting for a retry), by subscriber.",
            |s| s.pending.to_string(),
        ),
        (
            "couponkeeper_webhook_deliveries_dead",
            "Webhook deliveries given up on (dead letters) and not redelivered, by subscriber.",
            |s| s.dead.to_string(),
        ),
        (
            "couponkeeper_webhook_oldest_pending_age_seconds",
            "Age of the oldest pending webhook delivery, by subscriber (0: none pending).",
            |s| s.oldest_pending_age_seconds.to_string(),
        ),
    ];
    for (name, help, value) in families {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for s in &b.subscribers {
            let _ = writeln!(
                out,
                "{name}{{subscriber=\"{}\"}} {}",
                escape(&s.subscriber),
                value(s)
            );
        }
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

    #[test]
    fn the_webhook_backlog_renders_per_subscriber() {
        let m = Metrics::default();
        let backlog = WebhookBacklog {
            undispatched: 3,
            oldest_undispatched_age_seconds: 1.5,
            subscribers: vec![SubscriberBacklog {
                subscriber: "default".into(),
                pending: 7,
                dead: 2,
                oldest_pending_age_seconds: 90.0,
            }],
        };
        let text = m.render_scrape(Scrape {
            webhooks: Some(&backlog),
            ..Scrape::default()
        });
        assert!(
            text.contains("couponkeeper_webhook_undispatched 3\n"),
            "{text}"
        );
        assert!(text.contains("couponkeeper_webhook_oldest_undispatched_age_seconds 1.5\n"));
        assert!(
            text.contains("couponkeeper_webhook_deliveries_pending{subscriber=\"default\"} 7\n")
        );
        assert!(text.contains("couponkeeper_webhook_deliveries_dead{subscriber=\"default\"} 2\n"));
        assert!(text.contains(
            "couponkeeper_webhook_oldest_pending_age_seconds{subscriber=\"default\"} 90\n"
        ));
    }

    #[test]
    fn store_calls_at_or_over_the_threshold_count_as_slow() {
        let q = QueryTimings::new(200);
        assert!(!q.observe("coupons.lock", std::time::Duration::from_millis(199)));
        assert!(q.observe("coupons.lock", std::time::Duration::from_millis(200)));
        assert!(!q.observe("orders.get", std::time::Duration::from_micros(300)));
        let text = Metrics::default().render_scrape(Scrape {
            queries: Some(&q),
            ..Scrape::default()
        });
        assert!(
            text.contains(
                "couponkeeper_db_query_duration_seconds_count{query=\"coupons.lock\"} 2\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "couponkeeper_db_query_duration_seconds_bucket{query=\"orders.get\",le=\"0.0005\"} 1\n"
        ));
        assert!(text.contains("couponkeeper_db_slow_queries_total{query=\"coupons.lock\"} 1\n"));
        assert!(text.contains("couponkeeper_db_slow_queries_total{query=\"orders.get\"} 0\n"));
    }
}
