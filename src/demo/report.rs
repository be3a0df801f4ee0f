//! What the database holds, read back after a load (or found there):
//! counts of templates, coupons and orders by status, and the anomalies
//! still present among the demo orders; as a summary or as JSON.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::seed::user;
use super::{DemoError, USERS};
use crate::domain::ids::{CouponId, OrderNo, UserId};
use crate::domain::time::{rfc3339, to_ms};
use crate::store::Db;

/// Most anomalies of one kind the report lists.
const MAX_LISTED_ANOMALIES: i64 = 50;

/// One planted anomaly, as the summary and `--json` report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anomaly {
    /// One of the reconciliation kinds of API.md.
    pub kind: String,
    pub order_no: OrderNo,
    pub coupon_id: CouponId,
    pub code: String,
    pub user_id: UserId,
}

/// What the database holds after a load (or what was already there).
#[derive(Debug, Clone, Serialize)]
pub struct DemoReport {
    /// Templates the demo users hold coupons of.
    pub templates: i64,
    /// Coupons of the demo users.
    pub coupons: i64,
    /// `DEMO-` orders.
    pub orders: i64,
    /// Anomalies among the demo orders, found by querying the rows.
    pub anomalies: Vec<Anomaly>,
    /// True when nothing was written because demo data was already there.
    pub already_present: bool,
    /// Coupons of the demo users by effective status.
    pub coupons_by_status: BTreeMap<String, i64>,
    /// `DEMO-` orders by `kind/status`.
    pub orders_by_status: BTreeMap<String, i64>,
    /// The instant the demo's timeline ends at.
    pub now: String,
}

impl DemoReport {
    /// The short human summary the command prints.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        if self.already_present {
            out.push_str("demo data already present; nothing written.\n");
        } else {
            out.push_str("demo data loaded.\n");
        }
        out.push_str(&format!(
            "{} templates, {} coupons, {} orders (users u10001-u{}; orders DEMO-N-*, DEMO-P-*)\n",
            self.templates,
            self.coupons,
            self.orders,
            10000 + USERS
        ));
        let join = |m: &BTreeMap<String, i64>, prefix: &str| -> String {
            m.iter()
                .filter_map(|(k, v)| k.strip_prefix(prefix).map(|s| format!("{s} {v}")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "coupons:        {}\n",
            join(&self.coupons_by_status, "")
        ));
        out.push_str(&format!(
            "normal orders:  {}\n",
            join(&self.orders_by_status, "normal/")
        ));
        out.push_str(&format!(
            "presale orders: {}\n",
            join(&self.orders_by_status, "presale/")
        ));
        if self.anomalies.is_empty() {
            out.push_str("anomalies: none left\n");
        } else {
            out.push_str("planted anomalies (raw SQL edits, no event records them):\n");
            for a in &self.anomalies {
                out.push_str(&format!(
                    "  {:<32} {:<12} {}  {}  {}\n",
                    a.kind, a.order_no, a.coupon_id, a.code, a.user_id
                ));
            }
        }
        out
    }

    /// The `--json` object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

pub(super) async fn demo_order_count(db: &Db) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE order_no LIKE 'DEMO-%'")
        .fetch_one(db.pool())
        .await
}

/// `('u10001', ..., 'u10040')`: our own literals, nothing user-supplied.
fn demo_users_sql() -> String {
    let list: Vec<String> = (1..=USERS).map(|n| format!("'{}'", user(n))).collect();
    format!("({})", list.join(", "))
}

/// Reads back what the database holds: counts, and the anomalies among the
/// demo orders (each kind one bounded query on the live rows, so a case a
/// support engineer has fixed is no longer listed).
pub async fn report(
    db: &Db,
    now: DateTime<Utc>,
    already_present: bool,
) -> Result<DemoReport, DemoError> {
    let pool = db.pool();
    let users = demo_users_sql();
    let now_ms = to_ms(now);
    let templates: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(DISTINCT template_id) FROM coupons WHERE user_id IN {users}"
    ))
    .fetch_one(pool)
    .await?;
    let by_status: Vec<(String, i64)> = sqlx::query_as(&format!(
        "SELECT CASE WHEN status = 'available' AND ends_at <= $1 THEN 'expired' ELSE status END AS s, \
         COUNT(*) FROM coupons WHERE user_id IN {users} GROUP BY s"
    ))
    .bind(now_ms)
    .fetch_all(pool)
    .await?;
    let mut coupons_by_status: BTreeMap<String, i64> = BTreeMap::new();
    for (s, n) in by_status {
        *coupons_by_status.entry(s).or_default() += n;
    }
    let orders: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT kind, status, COUNT(*) FROM orders WHERE order_no LIKE 'DEMO-%' GROUP BY kind, status",
    )
    .fetch_all(pool)
    .await?;
    let orders_by_status: BTreeMap<String, i64> = orders
        .into_iter()
        .map(|(k, s, n)| (format!("{k}/{s}"), n))
        .collect();
    let limit = MAX_LISTED_ANOMALIES;
    let queries: [(&str, String); 5] = [
        (
            "locked_coupon_order_closed",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM coupons c \
                 JOIN orders o ON o.order_no = c.order_no \
                 WHERE c.status = 'locked' AND o.status IN ('closed', 'refunded') \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
        (
            "order_active_coupon_not_locked",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM orders o \
                 JOIN coupons c ON c.id = o.coupon_id \
                 WHERE o.status IN ('pending_payment', 'deposit_paid') \
                 AND (c.status <> 'locked' OR c.order_no IS NULL OR c.order_no <> o.order_no) \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
        (
            "coupon_order_mismatch",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM coupons c \
                 JOIN orders o ON o.order_no = c.order_no \
                 WHERE c.status IN ('locked', 'used') \
                 AND (o.coupon_id IS NULL OR o.coupon_id <> c.id) \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
        (
            "coupon_not_returned_after_refunds",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM orders o \
                 JOIN coupons c ON c.id = o.coupon_id \
                 WHERE o.status IN ('paid', 'final_paid') AND c.status = 'used' \
                 AND c.order_no = o.order_no AND o.order_no LIKE 'DEMO-%' \
                 AND EXISTS (SELECT 1 FROM order_line_discounts d WHERE d.order_no = o.order_no \
                   AND d.coupon_id = c.id AND d.cents > 0) \
                 AND NOT EXISTS (SELECT 1 FROM order_line_discounts d JOIN order_lines l \
                   ON l.order_no = d.order_no AND l.line_no = d.line_no \
                   WHERE d.order_no = o.order_no AND d.coupon_id = c.id AND d.cents > 0 \
                   AND l.refunded_quantity < l.quantity) \
                 ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
        (
            "stale_checkout_lock",
            format!(
                "SELECT o.order_no, c.id, c.code, o.user_id FROM orders o \
                 JOIN coupons c ON c.id = o.coupon_id \
                 WHERE o.kind = 'normal' AND o.status = 'pending_payment' \
                 AND o.checkout_lock_expires_at <= $1 \
                 AND o.order_no LIKE 'DEMO-%' ORDER BY o.order_no LIMIT {limit}"
            ),
        ),
    ];
    let mut anomalies = Vec::new();
    for (kind, sql) in &queries {
        let q = sqlx::query_as::<_, (OrderNo, CouponId, String, UserId)>(sql);
        let q = if sql.contains("$1") {
            q.bind(now_ms)
        } else {
            q
        };
        for (order_no, coupon_id, code, user_id) in q.fetch_all(pool).await? {
            anomalies.push(Anomaly {
                kind: (*kind).to_string(),
                order_no,
                coupon_id,
                code,
                user_id,
            });
        }
    }
    Ok(DemoReport {
        templates,
        coupons: coupons_by_status.values().sum(),
        orders: orders_by_status.values().sum(),
        anomalies,
        already_present,
        coupons_by_status,
        orders_by_status,
        now: rfc3339(now),
    })
}
