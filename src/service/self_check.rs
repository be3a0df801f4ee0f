//! The customers' self-check: issuing the signed link the shop hands to its
//! logged-in customer, reading the token back, and turning the staff health
//! check into what a customer may see.
//!
//! The customer view keeps each finding's result and customer message but
//! drops everything internal: suggested actions and their parameters, the
//! `template_stock` check (the shop's stock counter is not the customer's
//! business), and coupon ids, which are replaced by the coupon's code (or
//! by "another coupon" when it is not one of this customer's).
//!
//! Not recorded: a customer's visit. Issue 6 ("last self-check" in the
//! activity view) would add a row here when the page is opened.

use std::collections::HashMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::support::{CheckView, UserHealthReport};
use super::views::CouponView;
use super::{Service, ServiceError};
use crate::domain::health::CheckResult;
use crate::domain::ids::UserId;
use crate::domain::self_check::{self, TokenError, Verified};
use crate::domain::time::{rfc3339, to_ms};
use crate::i18n::{Arg, Msg};
use crate::store::reminders as store;

/// Settings of the customers' self-check links.
#[derive(Debug, Clone)]
pub struct SelfCheckSettings {
    /// `COUPONKEEPER_SELF_CHECK_SECRET` (at least 32 bytes). Unset: no link
    /// is issued (the API answers 503) and the page refuses every token.
    /// Never a random per-process secret: links must work on every
    /// instance and across restarts.
    pub secret: Option<crate::domain::self_check::Secret>,
    /// `COUPONKEEPER_PUBLIC_URL`: the base of the links handed out, without
    /// a trailing slash; default `http://<COUPONKEEPER_ADDR>`.
    pub public_url: String,
    /// `COUPONKEEPER_SELF_CHECK_TTL_SECONDS`, default 86400 (60 s to 30
    /// days): how long a link works.
    pub ttl_seconds: i64,
    /// `COUPONKEEPER_SELF_CHECK_SUPPORT_HINT`: how customers reach the
    /// shop's support (at most 200 characters), shown beside every problem.
    pub support_hint: Option<String>,
}

/// Default lifetime of a self-check link.
pub const DEFAULT_SELF_CHECK_TTL_SECONDS: i64 = 86_400;
/// Longest lifetime of a self-check link.
pub const MAX_SELF_CHECK_TTL_SECONDS: i64 = 30 * 24 * 3600;

impl Default for SelfCheckSettings {
    fn default() -> Self {
        SelfCheckSettings {
            secret: None,
            public_url: "http://127.0.0.1:3000".into(),
            ttl_seconds: DEFAULT_SELF_CHECK_TTL_SECONDS,
            support_hint: None,
        }
    }
}

/// `POST /users/{user_id}/self-check-link`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SelfCheckLink {
    /// The page for the customer: `<public url>/self-check?t=<token>`.
    pub url: String,
    /// When the link stops working (RFC 3339, UTC).
    pub expires_at: String,
}

/// Why no link can be issued.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// `COUPONKEEPER_SELF_CHECK_SECRET` is not set.
    #[error(
        "self-check links are not configured on this server (COUPONKEEPER_SELF_CHECK_SECRET is not set)"
    )]
    NotConfigured,
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// What the customer does next about a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NextStep {
    /// `ok`: nothing to do.
    Nothing,
    /// `warning`: read the message (it says what to watch out for).
    TakeNote,
    /// `problem`: support fixes it; show them the page.
    ContactSupport,
}

/// One finding as the customer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CustomerFinding {
    /// `ok`, `warning` or `problem`.
    pub result: CheckResult,
    /// What was found, addressed to the customer, with coupon codes
    /// instead of ids; rendered in the page's language.
    pub message: Msg,
    pub next: NextStep,
}

/// One order's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CustomerOrderCheck {
    pub order_no: String,
    /// The worst of its findings.
    pub overall: CheckResult,
    /// Every finding except the internal ones, in the staff check's order.
    pub findings: Vec<CustomerFinding>,
}

/// The customer's whole check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CustomerCheck {
    /// The worst result over every finding shown.
    pub overall: CheckResult,
    /// Newest first, like the staff check.
    pub orders: Vec<CustomerOrderCheck>,
    /// Coupons held by an order that no longer uses them.
    pub coupons: Vec<CustomerFinding>,
}

/// Checks that are about the shop's own bookkeeping, not the customer's
/// coupons and orders.
const INTERNAL_CHECKS: &[&str] = &["template_stock"];

/// The worst of `results`; `ok` when there are none.
fn worst(results: impl Iterator<Item = CheckResult>) -> CheckResult {
    results.max().unwrap_or(CheckResult::Ok)
}

/// Whether `b[i..]` starts a server id (`cpn_` + hex, any short lower-case
/// prefix) standing on its own; its length if so.
fn server_id_at(b: &[u8], i: usize) -> Option<usize> {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    if i > 0 && word(b[i - 1]) {
        return None;
    }
    let mut j = i;
    while j < b.len() && b[j].is_ascii_lowercase() && j - i <= 5 {
        j += 1;
    }
    if !(2..=5).contains(&(j - i)) || b.get(j) != Some(&b'_') {
        return None;
    }
    j += 1;
    let digits = j;
    while j < b.len() && matches!(b[j], b'0'..=b'9' | b'a'..=b'f') {
        j += 1;
    }
    if j - digits < 16 || (j < b.len() && word(b[j])) {
        return None;
    }
    Some(j - i)
}

/// `text` with every coupon id of `codes` replaced by its code and any
/// other server id by `unknown`.
pub fn scrub_ids(text: &str, codes: &HashMap<String, String>, unknown: &str) -> String {
    let mut text = text.to_string();
    for (id, code) in codes {
        if text.contains(id.as_str()) {
            text = text.replace(id.as_str(), code);
        }
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if let Some(len) = server_id_at(b, i) {
            out.push_str(unknown);
            i += len;
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// A staff message's text argument as the customer may read it: a coupon
/// id of theirs becomes its code, any other server id "another coupon".
fn for_customer(arg: &Arg, codes: &HashMap<String, String>) -> Arg {
    match arg {
        Arg::Text(t) => match codes.get(t.as_str()) {
            Some(code) => Arg::Text(code.clone()),
            None if server_id_at(t.as_bytes(), 0) == Some(t.len()) => {
                Arg::Key("self-check-another-coupon".into())
            }
            None => Arg::Text(scrub_ids(t, codes, "…")),
        },
        other => other.clone(),
    }
}

fn finding(c: &CheckView, codes: &HashMap<String, String>) -> CustomerFinding {
    CustomerFinding {
        result: c.result,
        message: c
            .msg
            .clone()
            .map_args(|a| for_customer(a, codes))
            .with("audience", "customer"),
        next: match c.result {
            CheckResult::Ok => NextStep::Nothing,
            CheckResult::Warning => NextStep::TakeNote,
            CheckResult::Problem => NextStep::ContactSupport,
        },
    }
}

/// The staff health check of a user as the customer may see it.
/// `coupons` are the customer's own (their ids become codes).
pub fn customer_check(report: &UserHealthReport, coupons: &[CouponView]) -> CustomerCheck {
    let codes: HashMap<String, String> = coupons
        .iter()
        .map(|c| (c.id.clone(), c.code.clone()))
        .collect();
    let orders: Vec<CustomerOrderCheck> = report
        .orders
        .iter()
        .map(|o| {
            let findings: Vec<CustomerFinding> = o
                .checks
                .iter()
                .filter(|c| !INTERNAL_CHECKS.contains(&c.name.as_str()))
                .map(|c| finding(c, &codes))
                .collect();
            CustomerOrderCheck {
                order_no: o.order_no.clone(),
                overall: worst(findings.iter().map(|f| f.result)),
                findings,
            }
        })
        .collect();
    let coupons: Vec<CustomerFinding> = report.locks.iter().map(|c| finding(c, &codes)).collect();
    let overall = worst(
        orders
            .iter()
            .map(|o| o.overall)
            .chain(coupons.iter().map(|f| f.result)),
    );
    CustomerCheck {
        overall,
        orders,
        coupons,
    }
}

impl Service {
    /// A signed self-check link for `user_id`, valid for the configured
    /// time from now. Changes nothing.
    pub fn self_check_link(
        &self,
        settings: &SelfCheckSettings,
        user_id: &str,
    ) -> Result<SelfCheckLink, LinkError> {
        let user = UserId::parse(user_id.trim()).map_err(ServiceError::from)?;
        let secret = settings.secret.as_ref().ok_or(LinkError::NotConfigured)?;
        let expires_at = self.now() + chrono::Duration::seconds(settings.ttl_seconds);
        // Whole seconds: the token cannot carry more.
        let expires_at =
            chrono::DateTime::from_timestamp(expires_at.timestamp(), 0).unwrap_or(expires_at);
        let token = self_check::sign(secret, &user, expires_at);
        Ok(SelfCheckLink {
            url: format!("{}/self-check?t={token}", settings.public_url),
            expires_at: rfc3339(expires_at),
        })
    }

    /// The customer a self-check token names, if it is genuine and
    /// current. Without a configured secret every token is refused.
    pub fn verify_self_check_token(
        &self,
        settings: &SelfCheckSettings,
        token: &str,
    ) -> Result<Verified, TokenError> {
        let secret = settings.secret.as_ref().ok_or(TokenError::BadSignature)?;
        self_check::verify(secret, token, self.now())
    }
}

/// Most in-app messages the self-check page lists.
pub const PAGE_MESSAGES: i64 = 50;
/// A self-check visit is recorded at most once per this many ms per user.
pub const VISIT_GAP_MS: i64 = 60_000;

/// One in-app message on the self-check page: its text is a catalog
/// message, rendered in the page's language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomerMessage {
    pub kind: String,
    pub text: Msg,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub unread: bool,
}

impl Service {
    /// The verified customer's latest [`PAGE_MESSAGES`] in-app messages,
    /// newest first. The user comes only from the verified token.
    pub async fn self_check_messages(
        &self,
        verified: &Verified,
    ) -> Result<Vec<CustomerMessage>, ServiceError> {
        let user = verified.user_id.as_str().to_string();
        let rows = self
            .read(move |c| {
                let user = user.clone();
                Box::pin(async move { Ok(store::user_messages(c, &user, PAGE_MESSAGES).await?) })
            })
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| CustomerMessage {
                text: Msg::from_stored(&r.message_key, &r.message_args),
                kind: r.kind,
                created_at: crate::domain::time::from_ms(r.created_at),
                unread: r.read_at.is_none(),
            })
            .collect())
    }

    /// Marks all of the verified customer's unread messages read; the
    /// number marked.
    pub async fn mark_self_check_messages_read(
        &self,
        verified: &Verified,
    ) -> Result<u64, ServiceError> {
        let user = verified.user_id.as_str().to_string();
        let now_ms = to_ms(self.now());
        Ok(self
            .write(None, move |c| {
                let user = user.clone();
                Box::pin(async move { Ok(store::mark_user_messages_read(c, &user, now_ms).await?) })
            })
            .await?
            .fresh()
            .unwrap_or_default())
    }

    /// Records that the verified customer opened the self-check page (the
    /// sms tier counts it as activity), at most once per [`VISIT_GAP_MS`]:
    /// a primary-key read first, so repeated views do not write.
    pub async fn record_self_check_visit(&self, verified: &Verified) -> Result<(), ServiceError> {
        let user = verified.user_id.as_str().to_string();
        let now_ms = to_ms(self.now());
        let u = user.clone();
        let last = self
            .read(move |c| {
                let u = u.clone();
                Box::pin(async move { Ok(store::last_self_check(c, &u).await?) })
            })
            .await?;
        if last.is_some_and(|t| t > now_ms - VISIT_GAP_MS) {
            return Ok(());
        }
        self.write(None, move |c| {
            let user = user.clone();
            Box::pin(
                async move { Ok(store::record_self_check(c, &user, now_ms, VISIT_GAP_MS).await?) },
            )
        })
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, result: &str, msg: Msg) -> CheckView {
        let result = match result {
            "ok" => CheckResult::Ok,
            "warning" => CheckResult::Warning,
            _ => CheckResult::Problem,
        };
        CheckView {
            name: name.into(),
            result,
            message: crate::i18n::Lang::En.msg(&msg),
            message_zh: crate::i18n::Lang::Zh.msg(&msg),
            msg,
            suggested_action: Some("release_coupon".into()),
            action: None,
        }
    }

    #[test]
    fn ids_become_codes_and_unknown_ids_are_hidden() {
        let codes = HashMap::from([(
            "cpn_0190aabbccdd0011223344556677".to_string(),
            "K7QM-3XPA-9RTD".to_string(),
        )]);
        assert_eq!(
            scrub_ids(
                "优惠券 cpn_0190aabbccdd0011223344556677 被订单 P1 锁定；cpn_0190aabbccdd8899aabbccddeeff，tpl_0190aabbccdd0011223344556677.",
                &codes,
                "（另一张券）"
            ),
            "优惠券 K7QM-3XPA-9RTD 被订单 P1 锁定；（另一张券），（另一张券）."
        );
        // Words that only look a little like ids stay.
        assert_eq!(
            scrub_ids("order_no P_123 abc_12 x", &codes, "?"),
            "order_no P_123 abc_12 x"
        );
    }

    #[test]
    fn the_customer_check_drops_internal_checks_and_actions() {
        let report = UserHealthReport {
            user_id: "u1".into(),
            overall: CheckResult::Warning,
            orders: vec![super::super::support::HealthReport {
                order_no: "P1".into(),
                user_id: "u1".into(),
                overall: CheckResult::Warning,
                checks: vec![
                    check(
                        "order_status",
                        "ok",
                        crate::msg!(
                            "health-order-is",
                            no = "P1",
                            status = Arg::Key("order-status-paid".into())
                        ),
                    ),
                    check(
                        "template_stock",
                        "warning",
                        crate::msg!(
                            "health-template-claimed-reconciliation-has-not",
                            t = "tpl_0190aabbccdd0011223344556677",
                            claimed = 3
                        ),
                    ),
                ],
            }],
            locks: vec![check(
                "stray_lock",
                "problem",
                crate::msg!(
                    "health-coupon-is-locked-to-order-2",
                    coupon = "cpn_0190aabbccdd0011223344556677",
                    named = "P9",
                    why = Arg::Key("health-why-order-missing".into())
                ),
            )],
        };
        let c = customer_check(&report, &[]);
        assert_eq!(c.overall, CheckResult::Problem);
        assert_eq!(c.orders[0].overall, CheckResult::Ok);
        assert_eq!(c.orders[0].findings.len(), 1);
        assert_eq!(c.coupons[0].next, NextStep::ContactSupport);
        assert_eq!(
            crate::i18n::Lang::En.msg(&c.coupons[0].message),
            "Coupon (another coupon) is locked to order P9, but its order does not exist; you cannot use it."
        );
        assert_eq!(
            crate::i18n::Lang::Zh.msg(&c.coupons[0].message),
            "优惠券 （另一张券） 被订单 P9 锁定，但对应订单不存在，您无法使用这张券。"
        );
        let json = serde_json::to_string(&c).unwrap_or_default();
        assert!(!json.contains("tpl_") && !json.contains("cpn_") && !json.contains("release"));
    }
}
