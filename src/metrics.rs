//! Prometheus metrics, kept in process and rendered as text at `/metrics`.
//!
//! Hand-rolled rather than a metrics crate: a handful of counters and one
//! histogram family, with bounded label sets (route templates, not raw
//! paths, so label cardinality cannot grow with traffic).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Upper bounds of the request-duration histogram, in seconds.
const BUCKETS_SECONDS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];
/// Most distinct (method, route, status) series kept; unknown routes all
/// share the route label "unmatched", so this is a guard, not a limit hit
/// in practice.
const MAX_SERIES: usize = 2000;

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS_SECONDS.len()],
    count: u64,
    sum_seconds: f64,
}

/// The process's metrics.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    durations: Mutex<BTreeMap<String, Histogram>>,
    events: Mutex<BTreeMap<&'static str, u64>>,
}

impl Metrics {
    /// Records one finished HTTP request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        {
            let mut r = self.requests.lock().unwrap_or_else(|p| p.into_inner());
            let key = (method.to_string(), route.to_string(), status);
            if r.len() < MAX_SERIES || r.contains_key(&key) {
                *r.entry(key).or_insert(0) += 1;
            }
        }
        let mut d = self.durations.lock().unwrap_or_else(|p| p.into_inner());
        if d.len() >= MAX_SERIES && !d.contains_key(route) {
            return;
        }
        let h = d.entry(route.to_string()).or_default();
        for (i, le) in BUCKETS_SECONDS.iter().enumerate() {
            if seconds <= *le {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum_seconds += seconds;
    }

    /// Counts a named business event (claims, refusals, ...).
    pub fn incr(&self, name: &'static str) {
        let mut e = self.events.lock().unwrap_or_else(|p| p.into_inner());
        *e.entry(name).or_insert(0) += 1;
    }

    /// Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "# HELP couponkeeper_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE couponkeeper_http_requests_total counter\n");
        for ((m, r, s), n) in self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "couponkeeper_http_requests_total{{method=\"{m}\",route=\"{}\",status=\"{s}\"}} {n}",
                escape(r)
            );
        }
        out.push_str(
            "# HELP couponkeeper_http_request_duration_seconds HTTP request latency by route.\n",
        );
        out.push_str("# TYPE couponkeeper_http_request_duration_seconds histogram\n");
        for (r, h) in self
            .durations
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let r = escape(r);
            for (i, le) in BUCKETS_SECONDS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "couponkeeper_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"{le}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "couponkeeper_http_request_duration_seconds_bucket{{route=\"{r}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "couponkeeper_http_request_duration_seconds_sum{{route=\"{r}\"}} {}",
                h.sum_seconds
            );
            let _ = writeln!(
                out,
                "couponkeeper_http_request_duration_seconds_count{{route=\"{r}\"}} {}",
                h.count
            );
        }
        out.push_str(
            "# HELP couponkeeper_events_total Business events (claims, refusals by code).\n",
        );
        out.push_str("# TYPE couponkeeper_events_total counter\n");
        for (name, n) in self.events.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(out, "couponkeeper_events_total{{event=\"{name}\"}} {n}");
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
        let text = m.render();
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
}
