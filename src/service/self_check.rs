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
//! Before any check, [`order_standing`] decides what an order's card says:
//! whether the order can still be paid (only then is an amount to pay or a
//! coupon to come off shown), what happened to a closed or refunded order,
//! its deposit and its coupon, and a presale order's final-payment window.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::support::{CheckView, UserHealthReport};
use super::views::{CampaignView, CouponView, OrderView};
use super::{Service, ServiceError};
use crate::domain::coupon::CouponStatus;
use crate::domain::health::CheckResult;
use crate::domain::ids::{CampaignId, OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::order::{CouponLockStatus, OrderKind, OrderStatus};
use crate::domain::self_check::{self, TokenError, Verified};
use crate::domain::time::{parse_rfc3339, rfc3339, to_ms};
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
    /// `COUPONKEEPER_SELF_CHECK_TTL_SECONDS` (60 s to 30
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
    /// The code of the coupon it is about, when the order holds several.
    pub coupon: Option<String>,
    pub next: NextStep,
}

/// One order's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CustomerOrderCheck {
    pub order_no: OrderNo,
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
        coupon: c.coupon.clone(),
        next: match c.result {
            CheckResult::Ok => NextStep::Nothing,
            // Something support can give (compensation): the customer
            // should ask for it, not just take note.
            CheckResult::Warning
                if c.action.as_ref().is_some_and(|a| {
                    matches!(
                        a.action,
                        crate::domain::health::SuggestedAction::IssueCompensation { .. }
                    )
                }) =>
            {
                NextStep::ContactSupport
            }
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
        .map(|c| (c.id.to_string(), c.code.clone()))
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

/// What an order's card on the self-check page says before any check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderStanding {
    /// Whether the order can still be paid: only then does its card show
    /// an amount to pay.
    pub payable: bool,
    /// Whether the coupon discount counts on this order: it can still be
    /// paid, or it was paid and not refunded. A lapsed, closed or refunded
    /// order shows no coupon "to come off".
    pub discount_counts: bool,
    /// A presale order's final-payment window (start, end) while it awaits
    /// its deposit or final payment.
    pub window: Option<(DateTime<Utc>, DateTime<Utc>)>,
    /// What happened to the order, its deposit and its coupon, in reading
    /// order, addressed to the customer.
    pub notes: Vec<Msg>,
}

fn instant(t: Option<&str>) -> Option<DateTime<Utc>> {
    t.and_then(|t| parse_rfc3339(t).ok())
}

/// What became of the coupon of an order that ended (closed or refunded),
/// read from the coupon's current state. `back`: the order released it.
fn ended_coupon_note(o: &OrderView, coupon: Option<&CouponView>) -> Option<Msg> {
    o.coupon_id.as_ref()?;
    let back = o.coupon_lock_status == CouponLockStatus::Released;
    let Some(c) = coupon else {
        return back.then(|| Msg::new("sc-coupon-released-unnamed"));
    };
    let code = c.code.as_str();
    let back_word = if back { "yes" } else { "no" };
    let ends = instant(Some(&c.ends_at)).map(Arg::Time).unwrap_or_default();
    match (c.status, c.order_no.as_deref()) {
        (CouponStatus::Locked | CouponStatus::Used, Some(no)) if no == o.order_no => {
            Some(crate::msg!("sc-coupon-still-held", code = code))
        }
        (CouponStatus::Locked | CouponStatus::Used, Some(no)) => Some(crate::msg!(
            "sc-coupon-back-gone-to",
            code = code,
            back = back_word,
            no = no
        )),
        // Held by no order: nothing more to say than that it left this one.
        (CouponStatus::Locked | CouponStatus::Used, None) => {
            back.then(|| Msg::new("sc-coupon-released-unnamed"))
        }
        (CouponStatus::Invalidated, _) => Some(crate::msg!(
            "sc-coupon-back-withdrawn",
            code = code,
            back = back_word
        )),
        (CouponStatus::Expired, _) => Some(crate::msg!(
            "sc-coupon-back-expired",
            code = code,
            back = back_word,
            ends = ends
        )),
        (CouponStatus::Available, _) => Some(crate::msg!(
            "sc-coupon-back-available",
            code = code,
            back = back_word,
            ends = ends
        )),
    }
}

/// What a partly refunded order's card says: what came back, any
/// discount taken back (the lines' refunds less what the customer got),
/// and why the coupon stayed or that it came back.
fn partial_refund_notes(o: &OrderView, coupon: Option<&CouponView>) -> Vec<Msg> {
    let lines_back = o
        .lines
        .iter()
        .fold(Cents::ZERO, |sum, l| sum.saturating_add(l.refunded_cents));
    if lines_back.is_zero() && o.refunded_cents.is_zero() {
        return Vec::new();
    }
    let units: i64 = o.lines.iter().map(|l| l.refunded_quantity).sum();
    let mut notes = vec![crate::msg!(
        "sc-partial-refund",
        n = units,
        amount = o.refunded_cents.shown()
    )];
    let clawback = lines_back.saturating_sub(o.refunded_cents);
    if !clawback.is_zero() {
        notes.push(crate::msg!(
            "sc-partial-refund-clawback",
            amount = clawback.shown()
        ));
    }
    match (o.coupon_lock_status, coupon) {
        (CouponLockStatus::Used, Some(c)) => {
            notes.push(crate::msg!("sc-coupon-kept-for-rest", code = &c.code));
        }
        _ => notes.extend(ended_coupon_note(o, coupon)),
    }
    notes
}

/// What an order's card says before any check, from the order, the
/// customer's `coupons` (the order's coupon is found among them by id),
/// the order's presale `campaign` and `now`. Reads only the order's own
/// fields: a refund is named only when the order records one.
pub fn order_standing(
    o: &OrderView,
    coupons: &[CouponView],
    campaign: Option<&CampaignView>,
    now: DateTime<Utc>,
) -> OrderStanding {
    let coupon = o
        .coupon_id
        .as_deref()
        .and_then(|id| coupons.iter().find(|c| c.id == id));
    let window = campaign
        .filter(|_| o.kind == OrderKind::Presale)
        .and_then(|c| {
            Some((
                instant(Some(&c.final_payment_starts_at))?,
                instant(Some(&c.final_payment_ends_at))?,
            ))
        });
    // The order's money as the page writes it (`¥100.00`).
    let deposit = o.deposit_cents.shown();
    // A coupon still locked to an order that can no longer be paid comes
    // back when the order is closed.
    let held_coupon_note = || {
        coupon
            .filter(|c| {
                c.status == CouponStatus::Locked && c.order_no.as_deref() == Some(&o.order_no)
            })
            .map(|c| crate::msg!("sc-coupon-back-when-closed", code = &c.code))
    };
    let mut notes = Vec::new();
    let payable = match o.status {
        OrderStatus::PendingPayment if o.checkout_lapsed(now) => {
            let at = instant(o.checkout_lock_expires_at.as_deref())
                .map(Arg::Time)
                .unwrap_or_default();
            notes.push(crate::msg!("sc-order-lapsed", at = at));
            notes.extend(held_coupon_note());
            false
        }
        OrderStatus::PendingDeposit | OrderStatus::DepositPaid => match window {
            Some((_, ends)) if now >= ends => {
                notes.push(crate::msg!("sc-presale-window-over", at = Arg::Time(ends)));
                if o.status == OrderStatus::DepositPaid {
                    notes.push(crate::msg!("sc-deposit-rules", deposit = &deposit));
                    notes.extend(held_coupon_note());
                }
                false
            }
            _ => true,
        },
        OrderStatus::PendingPayment => true,
        OrderStatus::Paid | OrderStatus::FinalPaid => {
            notes.extend(partial_refund_notes(o, coupon));
            false
        }
        OrderStatus::Closed => {
            match (o.kind, o.deposit_paid_at.is_some()) {
                (OrderKind::Normal, _) => notes.push(Msg::new("sc-normal-closed")),
                (OrderKind::Presale, false) => {
                    notes.push(Msg::new("sc-presale-closed-before-deposit"))
                }
                (OrderKind::Presale, true) => {
                    notes.push(Msg::new("sc-presale-closed-before-final"));
                    notes.push(crate::msg!("sc-deposit-rules", deposit = &deposit));
                }
            }
            notes.extend(ended_coupon_note(o, coupon));
            false
        }
        OrderStatus::Refunded => {
            let deposit_only = o.kind == OrderKind::Presale
                && o.deposit_paid_at.is_some()
                && o.final_payment_cents.is_none();
            notes.push(if deposit_only {
                crate::msg!("sc-presale-deposit-refunded", deposit = &deposit)
            } else {
                Msg::new("sc-order-refunded")
            });
            notes.extend(ended_coupon_note(o, coupon));
            false
        }
    };
    OrderStanding {
        payable,
        discount_counts: payable || matches!(o.status, OrderStatus::Paid | OrderStatus::FinalPaid),
        window: window.filter(|_| {
            matches!(
                o.status,
                OrderStatus::PendingDeposit | OrderStatus::DepositPaid
            )
        }),
        notes,
    }
}

/// Most presale campaigns the self-check page reads for one customer.
const PAGE_CAMPAIGNS: usize = 50;

impl Service {
    /// A signed self-check link for `user_id`, valid for the configured
    /// time from now. Changes nothing.
    pub fn self_check_link(
        &self,
        settings: &SelfCheckSettings,
        user_id: &UserId,
    ) -> Result<SelfCheckLink, LinkError> {
        let user = user_id;
        let secret = settings.secret.as_ref().ok_or(LinkError::NotConfigured)?;
        let expires_at = self.now() + chrono::Duration::seconds(settings.ttl_seconds);
        // Whole seconds: the token cannot carry more.
        let expires_at =
            chrono::DateTime::from_timestamp(expires_at.timestamp(), 0).unwrap_or(expires_at);
        let token = self_check::sign(secret, user, expires_at);
        Ok(SelfCheckLink {
            url: format!("{}/self-check?t={token}", settings.public_url),
            expires_at: rfc3339(expires_at),
        })
    }

    /// The presale campaigns of `orders` (at most [`PAGE_CAMPAIGNS`]
    /// distinct ones), by id: the page shows their final-payment windows.
    /// A campaign that cannot be found is simply absent.
    pub async fn self_check_campaigns(
        &self,
        orders: &[OrderView],
    ) -> Result<HashMap<CampaignId, CampaignView>, ServiceError> {
        let mut ids: Vec<CampaignId> = orders
            .iter()
            .filter(|o| o.kind == OrderKind::Presale)
            .filter_map(|o| o.campaign_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids.truncate(PAGE_CAMPAIGNS);
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        self.read(move |c| {
            let ids = ids.clone();
            Box::pin(async move {
                let mut out = HashMap::new();
                for id in ids {
                    if let Some(row) = crate::store::campaigns::get(c, &id).await? {
                        out.insert(id, CampaignView::from(row));
                    }
                }
                Ok(out)
            })
        })
        .await
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
        let user = verified.user_id.clone();
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

    /// Marks all of the verified customer's unread messages read, and
    /// their pending reminder pop-ups seen, in one transaction; the number
    /// of messages marked.
    pub async fn mark_self_check_messages_read(
        &self,
        verified: &Verified,
    ) -> Result<u64, ServiceError> {
        let user = verified.user_id.clone();
        let now_ms = to_ms(self.now());
        Ok(self
            .write(None, move |c| {
                let user = user.clone();
                Box::pin(async move {
                    crate::store::reminder_popups::mark_seen(c, &user, None, now_ms).await?;
                    Ok(store::mark_user_messages_read(c, &user, now_ms).await?)
                })
            })
            .await?
            .fresh()
            .unwrap_or_default())
    }

    /// Records that the verified customer opened the self-check page (the
    /// sms tier counts it as activity), at most once per [`VISIT_GAP_MS`]:
    /// a primary-key read first, so repeated views do not write.
    pub async fn record_self_check_visit(&self, verified: &Verified) -> Result<(), ServiceError> {
        let user = verified.user_id.clone();
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
            Box::pin(async move {
                // A visit is activity for the wake-up rules too.
                crate::store::wakeup::record_activity(c, &user, "visit", now_ms).await?;
                Ok(store::record_self_check(c, &user, now_ms, VISIT_GAP_MS).await?)
            })
        })
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::money::Cents;

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
            coupon: None,
            suggested_action: Some("release_coupon".into()),
            action: None,
        }
    }

    fn at(s: &str) -> DateTime<Utc> {
        parse_rfc3339(s).unwrap_or_default()
    }

    fn order(no: &str, kind: OrderKind, status: OrderStatus) -> OrderView {
        OrderView {
            order_no: no.into(),
            user_id: "u1".into(),
            kind,
            category: "phones".into(),
            status,
            total_cents: Cents::from_stored(39900),
            deposit_cents: Cents::from_stored(if kind == OrderKind::Presale { 10000 } else { 0 }),
            campaign_id: (kind == OrderKind::Presale).then(|| "cmp_1".into()),
            coupon_id: Some("cpn_1".into()),
            coupon_discount_cents: Cents::from_stored(5000),
            coupon_lock_status: CouponLockStatus::Locked,
            compensation_cents: Cents::ZERO,
            amount_due_cents: Cents::ZERO,
            created_at: "2026-11-11T00:00:00.000Z".into(),
            deposit_paid_at: None,
            paid_at: None,
            closed_at: None,
            refunded_at: None,
            discount_snapshot_cents: Cents::from_stored(5000),
            replaced_coupon_id: None,
            final_payment_cents: None,
            checkout_lock_expires_at: None,
            lines: vec![],
            refunded_cents: Cents::ZERO,
            coupons: vec![],
            events: None,
        }
    }

    fn coupon(status: CouponStatus, order_no: Option<&str>) -> CouponView {
        CouponView {
            id: "cpn_1".into(),
            code: "K7QM-3XPA-9RTD".into(),
            user_id: "u1".into(),
            template_id: None,
            kind: crate::domain::discount::DiscountKind::Fixed,
            value_cents: Some(Cents::from_stored(5000)),
            percent_off: None,
            max_discount_cents: None,
            min_order_cents: Cents::from_stored(30000),
            categories: vec![],
            skus: vec![],
            exclude_skus: vec![],
            shop_id: None,
            partial_refund_rule: Default::default(),
            stackable: true,
            status,
            starts_at: "2026-11-11T00:00:00.000Z".into(),
            ends_at: "2026-11-21T00:00:00.000Z".into(),
            order_no: order_no.map(OrderNo::from),
            locked_at: None,
            used_at: None,
            created_at: "2026-11-11T00:00:00.000Z".into(),
            source: crate::domain::coupon::CouponSource::Claim,
            events: None,
        }
    }

    fn campaign() -> CampaignView {
        CampaignView {
            id: "cmp_1".into(),
            name: "双11预售".into(),
            final_payment_starts_at: "2026-11-12T01:00:00.000Z".into(),
            final_payment_ends_at: "2026-11-12T02:00:00.000Z".into(),
            policy: crate::domain::campaign::Policy::Lock,
            created_at: "2026-11-11T00:00:00.000Z".into(),
            compensation_mode: crate::domain::campaign::CompensationMode::Deduction,
        }
    }

    fn notes(st: &OrderStanding, l: crate::i18n::Lang) -> Vec<String> {
        st.notes.iter().map(|m| l.msg(m)).collect()
    }

    #[test]
    fn a_lapsed_checkout_cannot_be_paid_and_its_coupon_will_not_come_off() {
        use crate::i18n::Lang;
        let mut o = order("N1", OrderKind::Normal, OrderStatus::PendingPayment);
        o.checkout_lock_expires_at = Some("2026-11-11T00:15:00.000Z".into());
        o.amount_due_cents = Cents::from_stored(34900);
        let coupons = [coupon(CouponStatus::Locked, Some("N1"))];
        let before = order_standing(&o, &coupons, None, at("2026-11-11T00:14:59Z"));
        assert!(before.payable && before.discount_counts && before.notes.is_empty());
        let st = order_standing(&o, &coupons, None, at("2026-11-11T00:15:00Z"));
        assert!(!st.payable && !st.discount_counts && st.window.is_none());
        assert_eq!(
            notes(&st, Lang::Zh),
            [
                "付款时限已于 2026-11-11 08:15 (UTC+8) 结束，这笔订单已无法付款，会被自动关闭。",
                "优惠券 K7QM-3XPA-9RTD 不会再为这笔订单抵扣；订单关闭后会退回您的账户（届时已过期的除外）。",
            ]
        );
        assert_eq!(
            notes(&st, Lang::En)[0],
            "The time to pay ran out at 2026-11-11 08:15 (UTC+8): this order can no longer be paid and will be closed."
        );
    }

    #[test]
    fn a_presale_order_closed_after_its_deposit_names_the_deposit_rules_and_the_coupons_fate() {
        use crate::i18n::Lang;
        let mut o = order("P1", OrderKind::Presale, OrderStatus::Closed);
        o.deposit_paid_at = Some("2026-11-11T00:01:00.000Z".into());
        o.closed_at = Some("2026-11-12T03:00:00.000Z".into());
        o.coupon_lock_status = CouponLockStatus::Released;
        let now = at("2026-11-12T03:00:00Z");
        let back = [coupon(CouponStatus::Available, None)];
        let st = order_standing(&o, &back, Some(&campaign()), now);
        assert!(!st.payable && !st.discount_counts);
        assert!(st.window.is_none(), "a closed order has no window left");
        assert_eq!(
            notes(&st, Lang::Zh),
            [
                "这笔预售订单在付尾款前已关闭，不能再付款。",
                "您已付的定金 ¥100.00 按商城的定金规则处理；如有疑问请联系客服。",
                "优惠券 K7QM-3XPA-9RTD 已退回您的账户，2026-11-21 08:00 (UTC+8) 前可以继续使用。",
            ]
        );
        assert!(
            !notes(&st, Lang::En).join(" ").contains("was refunded"),
            "no refund is recorded, so none is named"
        );
        let expired = [coupon(CouponStatus::Expired, None)];
        let st = order_standing(&o, &expired, Some(&campaign()), now);
        assert_eq!(
            notes(&st, Lang::En)[2],
            "Coupon K7QM-3XPA-9RTD came back to your account, but it expired at 2026-11-21 08:00 (UTC+8) and can no longer be used."
        );
        let st = order_standing(&o, &[], Some(&campaign()), now);
        assert_eq!(
            notes(&st, Lang::En)[2],
            "This order's coupon was released from it."
        );
    }

    #[test]
    fn a_presale_order_closed_before_its_deposit_took_none_and_left_its_coupon_alone() {
        use crate::i18n::Lang;
        let mut o = order("P2", OrderKind::Presale, OrderStatus::Closed);
        o.coupon_lock_status = CouponLockStatus::None;
        let coupons = [coupon(CouponStatus::Available, None)];
        let st = order_standing(&o, &coupons, Some(&campaign()), at("2026-11-11T01:00:00Z"));
        assert_eq!(
            notes(&st, Lang::En),
            [
                "This presale order was closed before the deposit was paid: no deposit was taken, and it can no longer be paid.",
                "Coupon K7QM-3XPA-9RTD was not used by this order; you can use it until 2026-11-21 08:00 (UTC+8).",
            ]
        );
    }

    #[test]
    fn a_live_presale_order_shows_its_window_until_the_window_ends() {
        use crate::i18n::Lang;
        let mut o = order("P3", OrderKind::Presale, OrderStatus::DepositPaid);
        o.deposit_paid_at = Some("2026-11-11T00:01:00.000Z".into());
        let coupons = [coupon(CouponStatus::Locked, Some("P3"))];
        let window = Some((at("2026-11-12T01:00:00Z"), at("2026-11-12T02:00:00Z")));
        let st = order_standing(&o, &coupons, Some(&campaign()), at("2026-11-11T01:00:00Z"));
        assert!(st.payable && st.notes.is_empty());
        assert_eq!(st.window, window);
        let st = order_standing(&o, &coupons, Some(&campaign()), at("2026-11-12T02:00:00Z"));
        assert!(!st.payable && !st.discount_counts);
        assert_eq!(st.window, window);
        assert_eq!(
            notes(&st, Lang::Zh),
            [
                "尾款时段已于 2026-11-12 10:00 (UTC+8) 结束，这笔预售订单已无法付款。",
                "您已付的定金 ¥100.00 按商城的定金规则处理；如有疑问请联系客服。",
                "优惠券 K7QM-3XPA-9RTD 不会再为这笔订单抵扣；订单关闭后会退回您的账户（届时已过期的除外）。",
            ]
        );
    }

    #[test]
    fn a_refund_is_named_only_as_the_order_records_it() {
        use crate::i18n::Lang;
        let mut o = order("P4", OrderKind::Presale, OrderStatus::Refunded);
        o.deposit_paid_at = Some("2026-11-11T00:01:00.000Z".into());
        o.refunded_at = Some("2026-11-11T02:00:00.000Z".into());
        o.coupon_lock_status = CouponLockStatus::Released;
        let coupons = [coupon(CouponStatus::Locked, Some("N9"))];
        let st = order_standing(&o, &coupons, Some(&campaign()), at("2026-11-11T03:00:00Z"));
        assert_eq!(
            notes(&st, Lang::Zh),
            [
                "这笔预售订单在付尾款前已退款，您付的定金 ¥100.00 已退款。",
                "优惠券 K7QM-3XPA-9RTD 已退回您的账户，之后用在了订单 N9 上。",
            ]
        );
        let mut paid = order("N2", OrderKind::Normal, OrderStatus::Refunded);
        paid.coupon_id = None;
        let st = order_standing(&paid, &[], None, at("2026-11-11T03:00:00Z"));
        assert_eq!(
            notes(&st, Lang::En),
            ["This order was refunded; there is nothing to pay."]
        );
        let paid = order("N3", OrderKind::Normal, OrderStatus::Paid);
        let st = order_standing(&paid, &[], None, at("2026-11-11T03:00:00Z"));
        assert!(!st.payable && st.discount_counts && st.notes.is_empty());
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
