//! Coupon templates (券模板): what each claimed coupon will offer, how long it
//! lives, and how many may be handed out.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::FieldError;
use super::discount::{
    CouponTerms, DiscountKind, DiscountRule, LineScope, PartialRefundRule, offer_msg,
    parse_categories, parse_skus,
};
use super::ids::{ShopId, Sku};
use super::money::Cents;
use super::time::parse_rfc3339;
use crate::i18n::{Arg, Msg};

/// Longest relative validity: ten years. Keeps `claim + valid_seconds` far
/// from chrono's range limits.
pub const MAX_VALID_SECONDS: i64 = 10 * 366 * 24 * 3600;
/// Largest stock one template may have.
pub const MAX_TOTAL_STOCK: i64 = 1_000_000_000;
/// Largest per-user limit.
pub const MAX_PER_USER_LIMIT: i64 = 10_000;
/// Longest template name in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Widest expiry spread: seven days. Enough to turn a midnight cliff of a
/// big campaign into a week of small batches; a wider spread would make
/// the promised end meaningless.
pub const MAX_EXPIRY_SPREAD_SECONDS: i64 = 7 * 86_400;

/// Whether a template hands out coupons, as stored in `templates.status`.
/// Its claim period (`Validity`) is a separate question: an active
/// template outside its period still refuses claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateStatus {
    Active,
    /// Paused by an operator: claims are refused, issued coupons are
    /// unaffected. Stored as `disabled`, the word migration 0001 allows.
    Paused,
}

impl TemplateStatus {
    pub const ALL: [TemplateStatus; 2] = [TemplateStatus::Active, TemplateStatus::Paused];

    pub fn as_str(self) -> &'static str {
        match self {
            TemplateStatus::Active => "active",
            TemplateStatus::Paused => "disabled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        TemplateStatus::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Whether claims are accepted at all (the claim period decides next).
    pub fn accepts_claims(self) -> bool {
        self == TemplateStatus::Active
    }
}

impl std::fmt::Display for TemplateStatus {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a template stands for claiming, as `GET /templates` reports and
/// filters it: derived from its stored status, its claim period and its
/// validity at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStanding {
    /// Claims are accepted.
    Active,
    /// Paused by an operator.
    Paused,
    /// Its coupons' validity has not begun.
    NotStarted,
    /// Claiming ended early, or its coupons' hard end has passed.
    Ended,
}

impl ClaimStanding {
    pub const ALL: [ClaimStanding; 4] = [
        ClaimStanding::Active,
        ClaimStanding::Paused,
        ClaimStanding::NotStarted,
        ClaimStanding::Ended,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStanding::Active => "active",
            ClaimStanding::Paused => "paused",
            ClaimStanding::NotStarted => "not_started",
            ClaimStanding::Ended => "ended",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ClaimStanding::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// The standing of a template at `now`. Paused wins; then an end of
/// claiming (early, or the coupons' hard end) that has passed; then a
/// validity that begins later.
pub fn claim_standing(
    status: TemplateStatus,
    valid_from: Option<DateTime<Utc>>,
    valid_until: Option<DateTime<Utc>>,
    claim_ends_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> ClaimStanding {
    if status == TemplateStatus::Paused {
        return ClaimStanding::Paused;
    }
    if claim_ends_at.is_some_and(|e| e <= now) || valid_until.is_some_and(|u| u <= now) {
        return ClaimStanding::Ended;
    }
    if valid_from.is_some_and(|f| f > now) {
        return ClaimStanding::NotStarted;
    }
    ClaimStanding::Active
}

/// A safe edit of a template that has issued coupons: nothing that would
/// change what an issued coupon means.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateEdit {
    pub name: Option<String>,
    /// The new total; only ever larger, and never below what was claimed.
    pub total_stock: Option<i64>,
    /// Claiming ends at this instant (no later than the coupons' hard end).
    pub claim_ends_at: Option<DateTime<Utc>>,
    /// A new budget, in cents: only for a template that has one, and never
    /// below what its coupons hold or gave.
    pub budget_cents: Option<i64>,
}

/// Why an edit is refused (409 `edit_not_allowed`; the API's `message`
/// is [`EditRefusal::message`], the console shows the catalog's words of
/// [`EditRefusal::label_key`] beside [`EditRefusal::field`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditRefusal {
    /// Unlimited stock stays unlimited; a limited one only grows.
    StockMayOnlyGrow,
    /// The end of claiming must be in the future.
    ClaimEndPassed,
    /// More coupons were already claimed than the new stock.
    BelowClaimed,
    /// A field that would change what issued coupons mean.
    UnsafeField,
    /// The template changed between reading and writing it.
    ChangedMeanwhile,
    /// A change of terms (value, threshold, validity, categories, limits)
    /// after coupons were claimed: issued coupons keep their terms.
    AlreadyClaimed,
    /// A budget for a template without one, after its first claim: the
    /// discounts already held were never reserved.
    NoBudget,
    /// A budget below what its coupons hold or gave.
    BudgetBelowUsed,
}

impl EditRefusal {
    pub const ALL: [EditRefusal; 8] = [
        EditRefusal::StockMayOnlyGrow,
        EditRefusal::ClaimEndPassed,
        EditRefusal::BelowClaimed,
        EditRefusal::UnsafeField,
        EditRefusal::ChangedMeanwhile,
        EditRefusal::AlreadyClaimed,
        EditRefusal::NoBudget,
        EditRefusal::BudgetBelowUsed,
    ];

    /// The start of the API's English `message` (details may follow).
    pub fn message(self) -> &'static str {
        match self {
            EditRefusal::StockMayOnlyGrow => {
                "stock may only grow (unlimited stock stays unlimited)"
            }
            EditRefusal::ClaimEndPassed => "the end of claiming must be in the future",
            EditRefusal::BelowClaimed => "stock cannot go below what was already claimed",
            EditRefusal::UnsafeField => {
                "this field cannot change once coupons may exist: it would change what issued coupons mean"
            }
            EditRefusal::ChangedMeanwhile => "the template changed meanwhile; read it again",
            EditRefusal::AlreadyClaimed => {
                "coupons of this template were already claimed: issued coupons keep their terms"
            }
            EditRefusal::NoBudget => {
                "this template has no budget: one can only be set before its first claim"
            }
            EditRefusal::BudgetBelowUsed => {
                "the budget cannot go below what its coupons hold or gave"
            }
        }
    }

    /// The refusal an API message starts with, if it is one of these.
    pub fn from_message(message: &str) -> Option<EditRefusal> {
        EditRefusal::ALL
            .into_iter()
            .find(|r| message.starts_with(r.message()))
    }

    /// The form field the refusal is about (`form`: the form as a whole).
    pub fn field(self) -> &'static str {
        match self {
            EditRefusal::StockMayOnlyGrow | EditRefusal::BelowClaimed => "total_stock",
            EditRefusal::ClaimEndPassed => "claim_ends_at",
            EditRefusal::UnsafeField | EditRefusal::ChangedMeanwhile => "form",
            EditRefusal::AlreadyClaimed => "terms",
            EditRefusal::NoBudget | EditRefusal::BudgetBelowUsed => "budget",
        }
    }

    /// The catalog key of the refusal's words for staff.
    pub fn label_key(self) -> &'static str {
        match self {
            EditRefusal::StockMayOnlyGrow => "template-edit-refusal-stock-may-only-grow",
            EditRefusal::ClaimEndPassed => "template-edit-refusal-claim-end-passed",
            EditRefusal::BelowClaimed => "template-edit-refusal-below-claimed",
            EditRefusal::UnsafeField => "template-edit-refusal-unsafe-field",
            EditRefusal::ChangedMeanwhile => "template-edit-refusal-changed-meanwhile",
            EditRefusal::AlreadyClaimed => "template-edit-refusal-already-claimed",
            EditRefusal::NoBudget => "template-edit-refusal-no-budget",
            EditRefusal::BudgetBelowUsed => "template-edit-refusal-budget-below-used",
        }
    }
}

/// A safe edit as the staff log records it (`staff_audit.detail` of a
/// `template_edit`, and of a `template_create` with only the new values):
/// each changed field's `[before, after]`, as JSON, so the template's page
/// can show before → after in words. Times are RFC 3339 UTC; a `null`
/// stock is unlimited, a `null` claim end none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TemplateChanges {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<(Option<String>, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_stock: Option<(Option<i64>, Option<i64>)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_ends_at: Option<(Option<String>, Option<String>)>,
    /// What a coupon offers and how long it lives (a full edit before the
    /// first claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<(TermsRecord, TermsRecord)>,
    /// `null`: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_user_limit: Option<(Option<i64>, Option<i64>)>,
    /// In cents; `null`: no budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_cents: Option<(Option<i64>, Option<i64>)>,
}

/// A template's terms as the staff log keeps them, so its page can say
/// them in words in the reader's language: the stored columns, times as
/// RFC 3339 UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TermsRecord {
    pub kind: DiscountKind,
    pub value_cents: Option<i64>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<i64>,
    pub min_order_cents: i64,
    pub categories: Vec<String>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub valid_seconds: Option<i64>,
    #[serde(default)]
    pub expiry_spread_seconds: i64,
    #[serde(default)]
    pub skus: Vec<String>,
    #[serde(default)]
    pub exclude_skus: Vec<String>,
    #[serde(default)]
    pub shop_id: Option<String>,
    #[serde(default)]
    pub partial_refund_rule: Option<String>,
    /// Left out when true, as records written before the term existed
    /// read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stackable: Option<bool>,
}

impl TermsRecord {
    /// The terms of a checked template.
    pub fn of_spec(spec: &TemplateSpec) -> Self {
        let rule = spec.terms.rule;
        TermsRecord {
            kind: rule.discount_kind(),
            value_cents: rule.value_cents().map(Cents::get),
            percent_off: rule.percent_off().map(i64::from),
            max_discount_cents: rule.max_discount_cents().map(Cents::get),
            min_order_cents: spec.terms.min_order.get(),
            categories: spec.terms.categories.clone(),
            valid_from: spec.validity.valid_from().map(super::time::rfc3339),
            valid_until: spec.validity.hard_end().map(super::time::rfc3339),
            valid_seconds: spec.validity.valid_seconds(),
            expiry_spread_seconds: spec.expiry_spread_seconds,
            skus: spec
                .terms
                .scope
                .skus
                .iter()
                .map(|s| s.to_string())
                .collect(),
            exclude_skus: spec
                .terms
                .scope
                .exclude_skus
                .iter()
                .map(|s| s.to_string())
                .collect(),
            shop_id: spec.terms.scope.shop_id.as_ref().map(|s| s.to_string()),
            // Left out when proportional, as records written before the
            // rule existed read.
            partial_refund_rule: (spec.terms.refund_rule != PartialRefundRule::default())
                .then(|| spec.terms.refund_rule.as_str().to_string()),
            stackable: (!spec.terms.stackable).then_some(false),
        }
    }

    /// The terms in words ([`rule_words`], then the expiry spread).
    pub fn words(&self) -> Vec<Msg> {
        let terms = CouponTerms {
            rule: DiscountRule::from_stored(
                self.kind,
                self.value_cents,
                self.percent_off,
                self.max_discount_cents,
            ),
            min_order: Cents::from_stored(self.min_order_cents),
            categories: self.categories.clone(),
            scope: LineScope {
                skus: self.skus.iter().cloned().map(Sku::from_stored).collect(),
                exclude_skus: self
                    .exclude_skus
                    .iter()
                    .cloned()
                    .map(Sku::from_stored)
                    .collect(),
                shop_id: self.shop_id.clone().map(ShopId::from_stored),
            },
            refund_rule: self
                .partial_refund_rule
                .as_deref()
                .and_then(PartialRefundRule::parse)
                .unwrap_or_default(),
            stackable: self.stackable.unwrap_or(true),
        };
        let at = |t: &Option<String>| t.as_deref().and_then(|t| parse_rfc3339(t).ok());
        let from = at(&self.valid_from);
        let validity = Validity::from_stored(
            from,
            at(&self.valid_until),
            self.valid_seconds,
            from.unwrap_or_default(),
        );
        let mut out = rule_words(&terms, &validity);
        out.extend(spread_words(self.expiry_spread_seconds));
        out
    }
}

impl TemplateChanges {
    /// The changes between two states of the safe fields; unchanged fields
    /// are left out.
    pub fn between(
        before: (&str, Option<i64>, Option<DateTime<Utc>>),
        after: (&str, Option<i64>, Option<DateTime<Utc>>),
    ) -> Self {
        let t = |x: Option<DateTime<Utc>>| x.map(super::time::rfc3339);
        TemplateChanges {
            name: (before.0 != after.0).then(|| (Some(before.0.to_string()), after.0.to_string())),
            total_stock: (before.1 != after.1).then_some((before.1, after.1)),
            claim_ends_at: (before.2 != after.2).then(|| (t(before.2), t(after.2))),
            terms: None,
            per_user_limit: None,
            budget_cents: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.total_stock.is_none()
            && self.claim_ends_at.is_none()
            && self.terms.is_none()
            && self.per_user_limit.is_none()
            && self.budget_cents.is_none()
    }

    /// The stored detail.
    pub fn to_detail(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_string())
    }

    /// A stored detail back; `None` when it is not one (rows written
    /// before this format).
    pub fn from_detail(detail: &str) -> Option<Self> {
        serde_json::from_str(detail).ok()
    }
}

/// The staff-log detail of a pause or resume: `active -> disabled: why`.
pub fn claiming_detail(from: TemplateStatus, to: TemplateStatus, reason: &str) -> String {
    format!("{} -> {}: {reason}", from.as_str(), to.as_str())
}

/// [`claiming_detail`] read back: from, to and the reason.
pub fn parse_claiming_detail(detail: &str) -> Option<(TemplateStatus, TemplateStatus, String)> {
    let (change, reason) = detail.split_once(": ")?;
    let (from, to) = change.split_once(" -> ")?;
    Some((
        TemplateStatus::parse(from)?,
        TemplateStatus::parse(to)?,
        reason.to_string(),
    ))
}

/// Checks `edit` against the template's current stock (`None`: unlimited)
/// and `now`.
pub fn check_edit(
    edit: &TemplateEdit,
    total_stock: Option<i64>,
    now: DateTime<Utc>,
) -> Result<(), EditRefusal> {
    if let Some(new) = edit.total_stock {
        match total_stock {
            Some(old) if new >= old => {}
            _ => return Err(EditRefusal::StockMayOnlyGrow),
        }
    }
    if edit.claim_ends_at.is_some_and(|e| e <= now) {
        return Err(EditRefusal::ClaimEndPassed);
    }
    Ok(())
}

/// A template's rule in words, as messages to render in the reader's
/// language and join: what it takes off ([`offer_msg`]), where it applies,
/// how long a claimed coupon lives ("满 ¥300.00 减 ¥50.00，手机类，领取后7天有效"
/// / "¥50.00 off orders from ¥300.00, phones, valid 7 days after claiming").
pub fn rule_words(terms: &CouponTerms, validity: &Validity) -> Vec<Msg> {
    let mut out = vec![offer_msg(&terms.rule, terms.min_order)];
    out.extend(scope_words(&terms.categories, &terms.scope));
    out.extend(validity_words(validity));
    out.extend(refund_rule_words(terms.refund_rule));
    out.extend(stacking_words(terms.stackable));
    out
}

/// Whether a coupon shares an order, in words: said only of a coupon
/// that must go alone ("不可与其他券叠加" / "cannot be combined with other
/// coupons"); stacking is the default.
pub fn stacking_words(stackable: bool) -> Option<Msg> {
    (!stackable).then(|| Msg::new("rule-not-stackable"))
}

/// Where a coupon applies, in words: the shop (for a shop coupon), the
/// categories, the SKUs it is limited to and the SKUs it excludes
/// ("仅限店铺 A", "美妆类", "不含 SKU X" / "shop A only", "beauty",
/// "except SKU X").
pub fn scope_words(categories: &[String], scope: &LineScope) -> Vec<Msg> {
    let mut out = Vec::with_capacity(4);
    if let Some(shop) = &scope.shop_id {
        out.push(Msg::new("rule-shop").arg("shop", shop.to_string()));
    }
    out.push(categories_msg(categories));
    if !scope.skus.is_empty() {
        out.push(Msg::new("rule-skus").arg("list", sku_list(&scope.skus)));
    }
    if !scope.exclude_skus.is_empty() {
        out.push(Msg::new("rule-exclude-skus").arg("list", sku_list(&scope.exclude_skus)));
    }
    out
}

/// SKUs as a list a person reads (the codes, comma separated).
fn sku_list(skus: &[Sku]) -> String {
    skus.iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a partial refund does, in words: the rule's sentence
/// ("部分退款按比例退回" / "partial refunds return their share").
pub fn refund_rule_msg(rule: PartialRefundRule) -> Msg {
    Msg::new(match rule {
        PartialRefundRule::Proportional => "rule-partial-refund-proportional",
        PartialRefundRule::Clawback => "rule-partial-refund-clawback",
    })
}

/// [`refund_rule_msg`] where a template's words name it: only for
/// `clawback`, the rule a customer must be told; the default goes without
/// saying.
pub fn refund_rule_words(rule: PartialRefundRule) -> Option<Msg> {
    (rule == PartialRefundRule::Clawback).then(|| refund_rule_msg(rule))
}

/// The words of as much of a template form as parses: the preview of the
/// create form, shown also while other fields are still wrong. Nothing
/// until the discount itself parses (categories and validity alone are no
/// rule).
pub fn preview_words(input: &TemplateInput, now: DateTime<Utc>) -> Vec<Msg> {
    let Ok(rule) = DiscountRule::parse(
        input.kind.as_deref(),
        input.value_cents,
        input.percent_off,
        input.max_discount_cents,
    ) else {
        return Vec::new();
    };
    let min = input
        .min_order_cents
        .and_then(|m| Cents::new(m).ok())
        .unwrap_or_default();
    let mut out = vec![offer_msg(&rule, min)];
    // Each part of where it applies that parses is said, so one bad SKU
    // does not hide the shop or the categories.
    let categories = parse_categories(input.categories.clone()).unwrap_or_default();
    let scope = LineScope {
        skus: parse_skus("skus", input.skus.clone()).unwrap_or_default(),
        exclude_skus: parse_skus("exclude_skus", input.exclude_skus.clone()).unwrap_or_default(),
        shop_id: input.shop_id.as_deref().and_then(|s| ShopId::parse(s).ok()),
    };
    out.extend(scope_words(&categories, &scope));
    if let Ok(v) = Validity::parse(
        input.valid_from.as_deref(),
        input.valid_until.as_deref(),
        input.valid_seconds,
        now,
    ) {
        out.extend(validity_words(&v));
    }
    out.extend(input.expiry_spread_seconds.and_then(spread_words));
    // The form always sends its choice, so its preview says it, default
    // or not.
    if input.partial_refund_rule.is_some()
        && let Ok(rule) = parse_refund_rule(input.partial_refund_rule.as_deref())
    {
        out.push(refund_rule_msg(rule));
    }
    out.extend(stacking_words(input.stackable.unwrap_or(true)));
    out
}

/// The SKU lists and shop of a template form or request.
pub fn parse_scope(input: &TemplateInput) -> Result<LineScope, FieldError> {
    let skus = parse_skus("skus", input.skus.clone())?;
    let exclude_skus = parse_skus("exclude_skus", input.exclude_skus.clone())?;
    let shop_id = match input.shop_id.as_deref() {
        None => None,
        Some(s) => Some(ShopId::parse(s)?),
    };
    Ok(LineScope {
        skus,
        exclude_skus,
        shop_id,
    })
}

/// `partial_refund_rule`: `proportional` (the default) or `clawback`.
pub fn parse_refund_rule(raw: Option<&str>) -> Result<PartialRefundRule, FieldError> {
    match raw {
        None => Ok(PartialRefundRule::default()),
        Some(r) => PartialRefundRule::parse(r).ok_or_else(|| {
            FieldError::new(
                "partial_refund_rule",
                "must be \"proportional\" or \"clawback\"",
            )
        }),
    }
}

/// Where a coupon applies: every category, or the ones named.
pub fn categories_msg(categories: &[String]) -> Msg {
    if categories.is_empty() {
        Msg::new("every-category")
    } else {
        Msg::new("rule-categories").arg("list", crate::i18n::Arg::Categories(categories.to_vec()))
    }
}

/// How long a claimed coupon lives, in words: "领取后7天有效" / "valid 7
/// days after claiming" (in the largest whole unit), or the absolute
/// window; with the pre-release start and the hard end when it has them.
pub fn validity_words(v: &Validity) -> Vec<Msg> {
    match *v {
        Validity::Absolute { from, until } => vec![
            Msg::new("rule-valid-between")
                .arg("from", Arg::Time(from))
                .arg("until", Arg::Time(until)),
        ],
        Validity::Relative {
            seconds,
            not_before,
            until,
        } => {
            let (n, unit) = [(86_400, "day"), (3_600, "hour"), (60, "minute")]
                .into_iter()
                .find(|(size, _)| seconds % size == 0)
                .map_or((seconds, "second"), |(size, unit)| (seconds / size, unit));
            let mut out = vec![crate::msg!("rule-valid-after-claim", n = n, unit = unit)];
            if let Some(at) = not_before {
                out.push(Msg::new("rule-usable-from").arg("at", Arg::Time(at)));
            }
            if let Some(at) = until {
                out.push(Msg::new("rule-valid-no-later-than").arg("at", Arg::Time(at)));
            }
            out
        }
    }
}

/// When a claimed coupon can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// `[from, until)` for every coupon.
    Absolute {
        from: DateTime<Utc>,
        until: DateTime<Utc>,
    },
    /// `seconds` from the moment the coupon becomes usable (the claim, or
    /// `not_before` for a pre-release), cut at `until` when given.
    Relative {
        seconds: i64,
        not_before: Option<DateTime<Utc>>,
        until: Option<DateTime<Utc>>,
    },
}

impl Validity {
    /// A stored template's validity (`valid_seconds` set: relative).
    pub fn from_stored(
        valid_from: Option<DateTime<Utc>>,
        valid_until: Option<DateTime<Utc>>,
        valid_seconds: Option<i64>,
        created_at: DateTime<Utc>,
    ) -> Self {
        match valid_seconds {
            Some(seconds) => Validity::Relative {
                seconds,
                not_before: valid_from,
                until: valid_until,
            },
            None => Validity::Absolute {
                from: valid_from.unwrap_or(created_at),
                until: valid_until.unwrap_or(created_at),
            },
        }
    }

    /// `now` is the template's creation time: an absolute window without
    /// `valid_from` starts then.
    pub fn parse(
        valid_from: Option<&str>,
        valid_until: Option<&str>,
        valid_seconds: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<Self, FieldError> {
        let from = valid_from
            .map(|s| parse_rfc3339(s).map_err(|m| FieldError::new("valid_from", m)))
            .transpose()?;
        let until = valid_until
            .map(|s| parse_rfc3339(s).map_err(|m| FieldError::new("valid_until", m)))
            .transpose()?;
        if let (Some(f), Some(u)) = (from, until)
            && f >= u
        {
            return Err(FieldError::new("valid_until", "must be after valid_from"));
        }
        match valid_seconds {
            Some(s) => {
                if !(1..=MAX_VALID_SECONDS).contains(&s) {
                    return Err(FieldError::new(
                        "valid_seconds",
                        format!("must be between 1 and {MAX_VALID_SECONDS}"),
                    ));
                }
                Ok(Validity::Relative {
                    seconds: s,
                    not_before: from,
                    until,
                })
            }
            None => {
                let until = until.ok_or_else(|| {
                    FieldError::new("valid_until", "is required unless valid_seconds is given")
                })?;
                let from = from.unwrap_or(now);
                if from >= until {
                    return Err(FieldError::new(
                        "valid_until",
                        "must be after valid_from (or after now when valid_from is absent)",
                    ));
                }
                Ok(Validity::Absolute { from, until })
            }
        }
    }

    /// The `[starts_at, ends_at)` window of a coupon claimed at `claim_at`, or
    /// `None` when such a coupon would be dead on arrival.
    pub fn window_for_claim(
        &self,
        claim_at: DateTime<Utc>,
    ) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        let (starts, ends) = match *self {
            Validity::Absolute { from, until } => (from, until),
            Validity::Relative {
                seconds,
                not_before,
                until,
            } => {
                let starts = match not_before {
                    Some(nb) if nb > claim_at => nb,
                    _ => claim_at,
                };
                let natural = starts + Duration::seconds(seconds);
                let ends = match until {
                    Some(u) if u < natural => u,
                    _ => natural,
                };
                (starts, ends)
            }
        };
        (ends > starts && ends > claim_at).then_some((starts, ends))
    }

    /// The hard end of the template, if it has one: no claim at or after it.
    pub fn hard_end(&self) -> Option<DateTime<Utc>> {
        match *self {
            Validity::Absolute { until, .. } => Some(until),
            Validity::Relative { until, .. } => until,
        }
    }

    pub fn valid_from(&self) -> Option<DateTime<Utc>> {
        match *self {
            Validity::Absolute { from, .. } => Some(from),
            Validity::Relative { not_before, .. } => not_before,
        }
    }

    pub fn valid_seconds(&self) -> Option<i64> {
        match *self {
            Validity::Relative { seconds, .. } => Some(seconds),
            Validity::Absolute { .. } => None,
        }
    }
}

/// A checked template ready to be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateSpec {
    pub name: String,
    pub terms: CouponTerms,
    pub validity: Validity,
    /// `None`: unlimited.
    pub total_stock: Option<i64>,
    /// `None`: unlimited.
    pub per_user_limit: Option<i64>,
    /// Claiming ends at this instant (before the coupons' own end).
    pub claim_ends_at: Option<DateTime<Utc>>,
    /// Each claimed coupon ends up to this many seconds before the
    /// template's nominal end ([`spread_window`]); 0: no spreading.
    pub expiry_spread_seconds: i64,
    /// The money its coupons may give together; `None`: no budget.
    pub budget: Option<Cents>,
}

/// The API's template fields before checking.
#[derive(Debug, Clone, Default)]
pub struct TemplateInput {
    pub name: Option<String>,
    pub kind: Option<String>,
    pub value_cents: Option<i64>,
    pub percent_off: Option<i64>,
    pub max_discount_cents: Option<i64>,
    pub min_order_cents: Option<i64>,
    pub valid_from: Option<String>,
    pub valid_until: Option<String>,
    pub valid_seconds: Option<i64>,
    pub total_stock: Option<i64>,
    pub per_user_limit: Option<i64>,
    pub categories: Option<Vec<String>>,
    /// RFC 3339; claiming ends then (in the future).
    pub claim_ends_at: Option<String>,
    /// 0 to [`MAX_EXPIRY_SPREAD_SECONDS`], shorter than the validity.
    pub expiry_spread_seconds: Option<i64>,
    /// Only these SKUs (empty or missing: any).
    pub skus: Option<Vec<String>>,
    /// Never these SKUs.
    pub exclude_skus: Option<Vec<String>>,
    /// A shop coupon's shop; missing: a platform coupon.
    pub shop_id: Option<String>,
    /// `proportional` (default) or `clawback`.
    pub partial_refund_rule: Option<String>,
    /// False: its coupons must be an order's only coupon (default true).
    pub stackable: Option<bool>,
    /// The money its coupons may give together; missing: no budget.
    pub budget_cents: Option<i64>,
}

impl TemplateSpec {
    /// Checks the API's fields; `now` is the creation time.
    pub fn parse(input: TemplateInput, now: DateTime<Utc>) -> Result<Self, FieldError> {
        let name = input.name.clone().unwrap_or_default().trim().to_string();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(FieldError::new(
                "name",
                format!("must be 1-{MAX_NAME_CHARS} characters"),
            ));
        }
        let rule = DiscountRule::parse(
            input.kind.as_deref(),
            input.value_cents,
            input.percent_off,
            input.max_discount_cents,
        )?;
        let min_order = Cents::new(input.min_order_cents.unwrap_or(0))
            .map_err(|e| FieldError::new("min_order_cents", e.to_string()))?;
        let categories = parse_categories(input.categories.clone())?;
        let scope = parse_scope(&input)?;
        let refund_rule = parse_refund_rule(input.partial_refund_rule.as_deref())?;
        let validity = Validity::parse(
            input.valid_from.as_deref(),
            input.valid_until.as_deref(),
            input.valid_seconds,
            now,
        )?;
        if let Some(s) = input.total_stock
            && !(1..=MAX_TOTAL_STOCK).contains(&s)
        {
            return Err(FieldError::new(
                "total_stock",
                format!("must be between 1 and {MAX_TOTAL_STOCK}, or null for unlimited"),
            ));
        }
        if let Some(l) = input.per_user_limit
            && !(1..=MAX_PER_USER_LIMIT).contains(&l)
        {
            return Err(FieldError::new(
                "per_user_limit",
                format!("must be between 1 and {MAX_PER_USER_LIMIT}, or null for unlimited"),
            ));
        }
        let claim_ends_at = match input.claim_ends_at.as_deref() {
            None => None,
            Some(raw) => {
                let at = parse_rfc3339(raw).map_err(|m| FieldError::new("claim_ends_at", m))?;
                if at <= now {
                    return Err(FieldError::new("claim_ends_at", "must be in the future"));
                }
                Some(at)
            }
        };
        let expiry_spread_seconds =
            check_expiry_spread(input.expiry_spread_seconds.unwrap_or(0), &validity)?;
        let budget = match input.budget_cents {
            None => None,
            Some(b) => match Cents::new(b) {
                Ok(b) if !b.is_zero() => Some(b),
                _ => {
                    return Err(FieldError::new(
                        "budget_cents",
                        "must be greater than 0, or null for no budget",
                    ));
                }
            },
        };
        Ok(TemplateSpec {
            expiry_spread_seconds,
            claim_ends_at,
            name,
            terms: CouponTerms {
                rule,
                min_order,
                categories,
                scope,
                refund_rule,
                stackable: input.stackable.unwrap_or(true),
            },
            validity,
            total_stock: input.total_stock,
            per_user_limit: input.per_user_limit,
            budget,
        })
    }
}

/// Checks an expiry spread against the template's validity: 0 to
/// [`MAX_EXPIRY_SPREAD_SECONDS`], and shorter than the validity (the
/// relative duration, or the absolute window's length).
pub fn check_expiry_spread(spread_seconds: i64, validity: &Validity) -> Result<i64, FieldError> {
    const FIELD: &str = "expiry_spread_seconds";
    if !(0..=MAX_EXPIRY_SPREAD_SECONDS).contains(&spread_seconds) {
        return Err(FieldError::new(
            FIELD,
            format!("must be between 0 and {MAX_EXPIRY_SPREAD_SECONDS}"),
        ));
    }
    let validity_seconds = match *validity {
        Validity::Relative { seconds, .. } => seconds,
        Validity::Absolute { from, until } => (until - from).num_seconds(),
    };
    if spread_seconds > 0 && spread_seconds >= validity_seconds {
        return Err(FieldError::new(FIELD, "must be shorter than the validity"));
    }
    Ok(spread_seconds)
}

/// FNV-1a, 64 bits: a hash that is the same on every build and platform
/// (std's hasher promises neither), so a coupon's spread never changes.
pub(crate) fn stable_hash(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The deterministic offset of a coupon under a spread of
/// `spread_seconds`: whole seconds in `[0, spread_seconds)` from a hash of
/// `key` (the coupon's id). 0 without a spread.
pub fn spread_offset_seconds(spread_seconds: i64, key: &str) -> i64 {
    match u64::try_from(spread_seconds) {
        Ok(spread) if spread > 0 => i64::try_from(stable_hash(key) % spread).unwrap_or(0),
        _ => 0,
    }
}

/// Expiry spreading (到期打散): the window of a coupon claimed at
/// `claim_at` whose template spreads its ends over `spread_seconds`. The
/// end moves EARLIER by [`spread_offset_seconds`] of `key`, never later
/// than `window`'s end (the promise), and by at most half the coupon's
/// remaining life (from its start, or from the claim when that is later),
/// so it never ends at or before its start nor dead on arrival. The start
/// is unchanged. Coupons of one big claim wave thus end over `spread`
/// instead of in the same second, and the expiry jobs meet small batches
/// instead of a cliff.
pub fn spread_window(
    window: (DateTime<Utc>, DateTime<Utc>),
    claim_at: DateTime<Utc>,
    spread_seconds: i64,
    key: &str,
) -> (DateTime<Utc>, DateTime<Utc>) {
    let (starts, ends) = window;
    let floor = starts.max(claim_at);
    let room_ms = (ends - floor).num_milliseconds();
    if room_ms <= 0 {
        return window;
    }
    let offset_ms = spread_offset_seconds(spread_seconds, key).saturating_mul(1000);
    let cut_ms = offset_ms.min(room_ms / 2).max(0);
    (starts, ends - Duration::milliseconds(cut_ms))
}

/// The spread in words for the template's page: "到期时间打散：最多提前 2
/// 小时" / "ends spread: up to 2 hours early"; `None` without a spread.
pub fn spread_words(spread_seconds: i64) -> Option<Msg> {
    (spread_seconds > 0).then(|| {
        let (n, unit) = largest_unit(spread_seconds);
        crate::msg!("rule-expiry-spread", n = n, unit = unit)
    })
}

/// `seconds` in the largest whole unit: `(n, "day" | "hour" | "minute" |
/// "second")`.
fn largest_unit(seconds: i64) -> (i64, &'static str) {
    [(86_400, "day"), (3_600, "hour"), (60, "minute")]
        .into_iter()
        .find(|(size, _)| seconds % size == 0)
        .map_or((seconds, "second"), |(size, unit)| (seconds / size, unit))
}

/// How many stock shards a template gets. Claims spread over the shards, so
/// on PostgreSQL concurrent claims of one hot template lock different rows
/// instead of queueing on one (see docs/src/development/design.md,
/// "Claiming without overselling").
pub const MAX_STOCK_SHARDS: i64 = 16;

/// Splits `total_stock` over shards: `None` (unlimited) gives
/// [`MAX_STOCK_SHARDS`] uncapped shards; a limit gives at most that many
/// shards, whose capacities differ by at most one and add up to the stock.
pub fn stock_shards(total_stock: Option<i64>) -> Vec<Option<i64>> {
    match total_stock {
        None => vec![None; MAX_STOCK_SHARDS as usize],
        Some(stock) => {
            let n = stock.clamp(1, MAX_STOCK_SHARDS);
            let base = stock / n;
            let extra = stock % n;
            (0..n).map(|i| Some(base + i64::from(i < extra))).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        parse_rfc3339(s).expect("valid")
    }

    #[test]
    fn relative_validity_starts_at_claim_and_is_capped() {
        let v = Validity::parse(
            None,
            Some("2026-01-01T00:00:10Z"),
            Some(60),
            t("2025-12-31T00:00:00Z"),
        )
        .expect("ok");
        let (s, e) = v
            .window_for_claim(t("2026-01-01T00:00:00Z"))
            .expect("alive");
        assert_eq!(s, t("2026-01-01T00:00:00Z"));
        assert_eq!(e, t("2026-01-01T00:00:10Z"));
    }

    #[test]
    fn pre_release_coupons_start_at_valid_from() {
        let v = Validity::parse(
            Some("2026-02-01T00:00:00Z"),
            None,
            Some(3600),
            t("2026-01-01T00:00:00Z"),
        )
        .expect("ok");
        let (s, e) = v
            .window_for_claim(t("2026-01-01T00:00:00Z"))
            .expect("alive");
        assert_eq!(s, t("2026-02-01T00:00:00Z"));
        assert_eq!(e, t("2026-02-01T01:00:00Z"));
    }

    #[test]
    fn a_window_already_over_gives_no_coupon() {
        let v = Validity::parse(
            Some("2026-01-01T00:00:00Z"),
            Some("2026-01-02T00:00:00Z"),
            None,
            t("2025-12-01T00:00:00Z"),
        )
        .expect("ok");
        assert!(v.window_for_claim(t("2026-01-02T00:00:00Z")).is_none());
        assert!(v.window_for_claim(t("2026-01-01T12:00:00Z")).is_some());
    }

    #[test]
    fn validity_needs_an_end() {
        let e = Validity::parse(
            Some("2026-01-01T00:00:00Z"),
            None,
            None,
            t("2026-01-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "valid_until");
        let e = Validity::parse(None, None, Some(0), t("2026-01-01T00:00:00Z")).unwrap_err();
        assert_eq!(e.field, "valid_seconds");
        let e = Validity::parse(
            Some("2026-01-02T00:00:00Z"),
            Some("2026-01-01T00:00:00Z"),
            None,
            t("2025-12-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "valid_until");
    }

    #[test]
    fn an_absolute_window_without_a_start_begins_at_creation() {
        let now = t("2026-01-01T00:00:00Z");
        let v = Validity::parse(None, Some("2026-01-08T00:00:00Z"), None, now).expect("ok");
        assert_eq!(
            v.window_for_claim(t("2026-01-02T00:00:00Z")),
            Some((now, t("2026-01-08T00:00:00Z")))
        );
        let e = Validity::parse(None, Some("2025-12-31T00:00:00Z"), None, now).unwrap_err();
        assert_eq!(e.field, "valid_until");
    }

    #[test]
    fn a_spread_moves_ends_earlier_by_a_fixed_amount_per_coupon() {
        let claim = t("2026-01-01T00:00:00Z");
        let window = (claim, t("2026-01-08T00:00:00Z"));
        // No spread: the window as promised.
        assert_eq!(spread_window(window, claim, 0, "cpn_a"), window);
        let spread = 2 * 3600;
        let ends: Vec<_> = (0..200)
            .map(|i| spread_window(window, claim, spread, &format!("cpn_{i}")).1)
            .collect();
        for e in &ends {
            assert!(*e <= window.1 && *e > window.1 - Duration::seconds(spread));
        }
        // Deterministic: the same id gives the same end.
        assert_eq!(
            spread_window(window, claim, spread, "cpn_7").1,
            spread_window(window, claim, spread, "cpn_7").1
        );
        // And spread: 200 coupons fall into more than one of the two hours.
        let first_hour = ends
            .iter()
            .filter(|e| **e > window.1 - Duration::hours(1))
            .count();
        assert!((40..=160).contains(&first_hour), "{first_hour}");
        // A coupon with little life left loses at most half of it.
        let late = t("2026-01-07T23:59:00Z");
        let (_, e) = spread_window(window, late, spread, "cpn_x");
        assert!(e > late && e >= window.1 - Duration::seconds(30));
    }

    #[test]
    fn a_spread_must_be_shorter_than_the_validity_and_bounded() {
        let rel = Validity::Relative {
            seconds: 3600,
            not_before: None,
            until: None,
        };
        assert_eq!(check_expiry_spread(0, &rel), Ok(0));
        assert_eq!(check_expiry_spread(3599, &rel), Ok(3599));
        assert_eq!(
            check_expiry_spread(3600, &rel).unwrap_err().field,
            "expiry_spread_seconds"
        );
        assert!(check_expiry_spread(-1, &rel).is_err());
        let abs = Validity::Absolute {
            from: t("2026-01-01T00:00:00Z"),
            until: t("2026-03-01T00:00:00Z"),
        };
        assert!(check_expiry_spread(MAX_EXPIRY_SPREAD_SECONDS, &abs).is_ok());
        assert!(check_expiry_spread(MAX_EXPIRY_SPREAD_SECONDS + 1, &abs).is_err());
        use crate::i18n::Lang;
        let w = spread_words(7200).expect("words");
        assert_eq!(Lang::Zh.msg(&w), "到期时间打散：最多提前 2 小时");
        assert_eq!(Lang::En.msg(&w), "ends spread: up to 2 hours early");
        assert!(spread_words(0).is_none());
    }

    proptest::proptest! {
        /// Whatever the window, the claim moment, the spread and the id:
        /// the end is never later than without spreading, never at or
        /// before the start or the claim, the start is unchanged, and the
        /// same id gives the same window.
        #[test]
        fn a_spread_end_is_never_later_than_promised_nor_before_the_start(
            start_s in 0i64..2_000_000_000,
            length_s in 1i64..(400 * 86_400),
            claim_in_s in -86_400i64..(400 * 86_400),
            spread in 0i64..=MAX_EXPIRY_SPREAD_SECONDS,
            key in "[a-z0-9_]{1,40}",
        ) {
            let starts = crate::domain::time::from_ms(start_s * 1000);
            let ends = starts + Duration::seconds(length_s);
            let claim = starts + Duration::seconds(claim_in_s.min(length_s - 1));
            let (s, e) = spread_window((starts, ends), claim, spread, &key);
            proptest::prop_assert_eq!(s, starts);
            proptest::prop_assert!(e <= ends);
            proptest::prop_assert!(e > starts);
            proptest::prop_assert!(e > claim);
            proptest::prop_assert!(ends - e < Duration::seconds(spread.max(1)));
            proptest::prop_assert_eq!(spread_window((starts, ends), claim, spread, &key), (s, e));
        }
    }

    #[test]
    fn shards_split_stock_evenly_and_exactly() {
        assert_eq!(stock_shards(Some(10)).len(), 10);
        let s = stock_shards(Some(100));
        assert_eq!(s.len(), 16);
        assert_eq!(s.iter().map(|c| c.unwrap_or(0)).sum::<i64>(), 100);
        assert!(s.iter().all(|c| matches!(c, Some(6) | Some(7))));
        assert!(stock_shards(None).iter().all(Option::is_none));
    }

    #[test]
    fn template_parse_checks_limits() {
        let base = TemplateInput {
            name: Some("满300减50".into()),
            kind: Some("fixed".into()),
            value_cents: Some(5000),
            min_order_cents: Some(30000),
            valid_seconds: Some(10),
            ..Default::default()
        };
        assert!(TemplateSpec::parse(base.clone(), t("2026-01-01T00:00:00Z")).is_ok());
        let e = TemplateSpec::parse(
            TemplateInput {
                total_stock: Some(0),
                ..base.clone()
            },
            t("2026-01-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "total_stock");
        let e = TemplateSpec::parse(
            TemplateInput {
                name: Some("  ".into()),
                ..base
            },
            t("2026-01-01T00:00:00Z"),
        )
        .unwrap_err();
        assert_eq!(e.field, "name");
    }

    fn words(l: crate::i18n::Lang, msgs: &[Msg]) -> String {
        msgs.iter()
            .map(|m| l.msg(m))
            .collect::<Vec<_>>()
            .join(l.t("rule-separator"))
    }

    #[test]
    fn a_template_rule_reads_in_words_in_both_languages() {
        use crate::i18n::Lang;
        let now = t("2026-01-01T00:00:00Z");
        let spec = |input: TemplateInput| TemplateSpec::parse(input, now).expect("valid");
        let base = TemplateInput {
            name: Some("满300减50".into()),
            kind: Some("fixed".into()),
            value_cents: Some(5000),
            min_order_cents: Some(30000),
            valid_seconds: Some(7 * 86_400),
            categories: Some(vec!["手机".into()]),
            ..Default::default()
        };
        let s = spec(base.clone());
        assert_eq!(
            words(Lang::Zh, &rule_words(&s.terms, &s.validity)),
            "满 ¥300.00 减 ¥50.00，手机类，领取后7天有效"
        );
        let s = spec(TemplateInput {
            categories: Some(vec!["phones".into()]),
            ..base.clone()
        });
        assert_eq!(
            words(Lang::En, &rule_words(&s.terms, &s.validity)),
            "¥50.00 off orders from ¥300.00, phones, valid 7 days after claiming"
        );
        // A percentage with a cap, every category, a window; one day reads
        // in the singular, hours in hours.
        let s = spec(TemplateInput {
            kind: Some("percent".into()),
            value_cents: None,
            percent_off: Some(15),
            max_discount_cents: Some(3000),
            min_order_cents: None,
            categories: None,
            valid_seconds: None,
            valid_from: Some("2026-01-01T00:00:00Z".into()),
            valid_until: Some("2026-01-08T00:00:00Z".into()),
            ..base.clone()
        });
        let (zh, en) = (
            words(Lang::Zh, &rule_words(&s.terms, &s.validity)),
            words(Lang::En, &rule_words(&s.terms, &s.validity)),
        );
        assert!(zh.starts_with("8.5折，最高减 ¥30.00，全部品类，"), "{zh}");
        assert!(zh.contains("2026-01-01 08:00"), "business zone: {zh}");
        assert!(
            en.starts_with("15% off, at most ¥30.00, every category, valid from "),
            "{en}"
        );
        let one_day = Validity::Relative {
            seconds: 86_400,
            not_before: None,
            until: None,
        };
        assert_eq!(
            words(Lang::En, &validity_words(&one_day)),
            "valid 1 day after claiming"
        );
        let hours = Validity::Relative {
            seconds: 2 * 3600,
            not_before: None,
            until: None,
        };
        assert_eq!(words(Lang::Zh, &validity_words(&hours)), "领取后2小时有效");
        assert_eq!(
            words(Lang::En, &validity_words(&hours)),
            "valid 2 hours after claiming"
        );
    }

    #[test]
    fn the_preview_describes_the_parts_that_parse() {
        use crate::i18n::Lang;
        let now = t("2026-01-01T00:00:00Z");
        let input = TemplateInput {
            kind: Some("fixed".into()),
            value_cents: Some(5000),
            min_order_cents: Some(30000),
            valid_seconds: Some(0),
            ..Default::default()
        };
        assert_eq!(
            words(Lang::Zh, &preview_words(&input, now)),
            "满 ¥300.00 减 ¥50.00，全部品类"
        );
        assert!(preview_words(&TemplateInput::default(), now).is_empty());
    }

    #[test]
    fn edit_refusals_round_trip_through_their_message_and_changes_through_the_log() {
        for r in EditRefusal::ALL {
            let message = format!("{} (5 claimed)", r.message());
            assert_eq!(EditRefusal::from_message(&message), Some(r));
            assert!(crate::i18n::has(r.label_key()), "{}", r.label_key());
        }
        assert_eq!(EditRefusal::from_message("something else"), None);
        let c = TemplateChanges::between(
            ("a", Some(10), None),
            ("b", Some(20), Some(t("2026-01-02T00:00:00Z"))),
        );
        assert_eq!(TemplateChanges::from_detail(&c.to_detail()), Some(c));
        assert!(TemplateChanges::between(("a", None, None), ("a", None, None)).is_empty());
        // A full edit's terms round-trip and read as the rule does.
        let spec = |kind: &str, value: Option<i64>, pct: Option<i64>| {
            TemplateSpec::parse(
                TemplateInput {
                    name: Some("x".into()),
                    kind: Some(kind.into()),
                    value_cents: value,
                    percent_off: pct,
                    min_order_cents: Some(30_000),
                    valid_seconds: Some(7 * 86_400),
                    ..TemplateInput::default()
                },
                t("2026-01-01T00:00:00Z"),
            )
        };
        let (Ok(fixed), Ok(percent)) = (
            spec("fixed", Some(5000), None),
            spec("percent", None, Some(20)),
        ) else {
            panic!("both parse");
        };
        let mut c = TemplateChanges {
            terms: Some((TermsRecord::of_spec(&fixed), TermsRecord::of_spec(&percent))),
            per_user_limit: Some((None, Some(1))),
            ..TemplateChanges::default()
        };
        assert!(!c.is_empty());
        assert_eq!(
            TemplateChanges::from_detail(&c.to_detail()),
            Some(c.clone())
        );
        let words = |r: &TermsRecord| {
            r.words()
                .iter()
                .map(|m| crate::i18n::Lang::Zh.msg(m))
                .collect::<Vec<_>>()
                .join("，")
        };
        if let Some((before, _)) = &c.terms {
            assert_eq!(
                words(before),
                "满 ¥300.00 减 ¥50.00，全部品类，领取后7天有效"
            );
        }
        c.terms = None;
        c.per_user_limit = None;
        assert!(c.is_empty());
        let d = claiming_detail(TemplateStatus::Active, TemplateStatus::Paused, "why: this");
        assert_eq!(
            parse_claiming_detail(&d),
            Some((
                TemplateStatus::Active,
                TemplateStatus::Paused,
                "why: this".into()
            ))
        );
    }
}
