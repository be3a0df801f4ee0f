//! The wake-up before expiry (过期前唤醒): customer activity the shop
//! reports, the operators' wake-up rules, who in a rule's reach is woken,
//! held back as control or skipped as inactive, and the wake-up's words.
//! Pure rules; the planner is `service::wakeup`.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::FieldError;
use super::ids::TemplateId;
use super::money::Cents;
use super::template::stable_hash;
use super::time::parse_rfc3339;
use crate::i18n::Msg;

/// What the shop saw a customer do (`POST /users/{id}/activity`); a
/// self-check visit counts as `visit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    Browse,
    Cart,
    Visit,
}

impl ActivityKind {
    pub const ALL: [ActivityKind; 3] = [
        ActivityKind::Browse,
        ActivityKind::Cart,
        ActivityKind::Visit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActivityKind::Browse => "browse",
            ActivityKind::Cart => "cart",
            ActivityKind::Visit => "visit",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ActivityKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// How far ahead of the service's clock a reported activity may lie (the
/// shop's clock may run a little ahead); further is refused.
pub const MAX_ACTIVITY_AHEAD_SECONDS: i64 = 300;

/// Checks a reported activity: a known kind and an RFC 3339 instant not
/// more than [`MAX_ACTIVITY_AHEAD_SECONDS`] ahead of `now`.
pub fn parse_activity(
    kind: Option<&str>,
    at: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(ActivityKind, DateTime<Utc>), FieldError> {
    let kind = kind
        .and_then(ActivityKind::parse)
        .ok_or_else(|| FieldError::new("kind", "must be one of browse, cart, visit"))?;
    let raw = at.ok_or_else(|| FieldError::new("at", "is required"))?;
    let at = parse_rfc3339(raw).map_err(|m| FieldError::new("at", m))?;
    if at > now + Duration::seconds(MAX_ACTIVITY_AHEAD_SECONDS) {
        return Err(FieldError::new(
            "at",
            format!("must not be more than {MAX_ACTIVITY_AHEAD_SECONDS} seconds in the future"),
        ));
    }
    Ok((kind, at))
}

/// Whether a user whose latest activity was `last` counts as active for a
/// rule whose window is `within_seconds` before `now`.
pub fn active_within(last: Option<DateTime<Utc>>, now: DateTime<Utc>, within_seconds: i64) -> bool {
    last.is_some_and(|t| t > now - Duration::seconds(within_seconds))
}

/// Whether `user_id` is in `rule_id`'s control group: a deterministic share
/// of `control_percent` % of users (a hash of rule and user), so a user is
/// in or out for the whole life of a rule, and two instances agree.
pub fn in_control(rule_id: &str, user_id: &str, control_percent: i64) -> bool {
    let bucket = stable_hash(&format!("{rule_id}\u{1f}{user_id}")) % 100;
    i64::try_from(bucket).unwrap_or(0) < control_percent
}

/// What a wake-up rule decided for one user's expiring coupons (stored in
/// `wakeup_marks.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WakeupOutcome {
    /// The reminder went out (with a wake-up coupon when there was one).
    Sent,
    /// Held back on purpose: the control group.
    Control,
    /// Not active within the rule's window: nothing sent.
    Inactive,
    /// Active, but placed an order at or after that activity: they are
    /// buying, not drifting away, so nothing is sent.
    Ordered,
}

impl WakeupOutcome {
    pub const ALL: [WakeupOutcome; 4] = [
        WakeupOutcome::Sent,
        WakeupOutcome::Control,
        WakeupOutcome::Inactive,
        WakeupOutcome::Ordered,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WakeupOutcome::Sent => "sent",
            WakeupOutcome::Control => "control",
            WakeupOutcome::Inactive => "inactive",
            WakeupOutcome::Ordered => "ordered",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        WakeupOutcome::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// The catalog key of its name.
    pub fn label_key(self) -> &'static str {
        match self {
            WakeupOutcome::Sent => "wakeup-outcome-sent",
            WakeupOutcome::Control => "wakeup-outcome-control",
            WakeupOutcome::Inactive => "wakeup-outcome-inactive",
            WakeupOutcome::Ordered => "wakeup-outcome-ordered",
        }
    }
}

/// Whether the customer placed an order at or after the activity that
/// made them active (`last_activity`): the latest order's creation
/// (`last_order`), whatever became of the order since. No activity, or no
/// order: false.
pub fn ordered_since(
    last_activity: Option<DateTime<Utc>>,
    last_order: Option<DateTime<Utc>>,
) -> bool {
    matches!((last_activity, last_order), (Some(a), Some(o)) if o >= a)
}

/// The decision for one user: inactive first (nothing to learn from a
/// user who would not see it), then a user who ordered since that
/// activity (the wake-up would nag a buyer), then the control group.
pub fn decide(active: bool, ordered_since_activity: bool, control: bool) -> WakeupOutcome {
    if !active {
        WakeupOutcome::Inactive
    } else if ordered_since_activity {
        WakeupOutcome::Ordered
    } else if control {
        WakeupOutcome::Control
    } else {
        WakeupOutcome::Sent
    }
}

/// Bounds of a rule.
pub const MIN_LEAD_SECONDS: i64 = 60;
pub const MAX_LEAD_SECONDS: i64 = 30 * 86_400;
pub const MIN_ACTIVE_WITHIN_SECONDS: i64 = 3600;
pub const MAX_ACTIVE_WITHIN_SECONDS: i64 = 90 * 86_400;
pub const MAX_CONTROL_PERCENT: i64 = 50;
/// Most templates one rule may name.
pub const MAX_RULE_TEMPLATES: usize = 50;
pub const MAX_RULE_NAME_CHARS: usize = 200;

/// A rule as typed (the console form, in whole hours / days / percent);
/// the edge checks it with [`WakeupRuleSpec::parse`].
#[derive(Debug, Clone, Default)]
pub struct WakeupRuleInput {
    pub name: Option<String>,
    pub lead_seconds: Option<i64>,
    pub active_within_seconds: Option<i64>,
    /// Empty: every template.
    pub template_ids: Vec<String>,
    pub bonus_template_id: Option<String>,
    pub control_percent: Option<i64>,
}

/// A checked rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeupRuleSpec {
    pub name: String,
    pub lead_seconds: i64,
    pub active_within_seconds: i64,
    pub template_ids: Vec<TemplateId>,
    pub bonus_template_id: Option<TemplateId>,
    pub control_percent: i64,
}

impl WakeupRuleSpec {
    /// Checks a rule's fields in a fixed order (name, lead, activity
    /// window, control share, templates), naming the first at fault; ids
    /// are trimmed and repeated ones dropped. Whether the templates exist
    /// is the service's to check, when the rule is created.
    pub fn parse(input: WakeupRuleInput) -> Result<Self, FieldError> {
        let name = input.name.unwrap_or_default().trim().to_string();
        if name.is_empty() || name.chars().count() > MAX_RULE_NAME_CHARS {
            return Err(FieldError::new(
                "name",
                format!("must be 1-{MAX_RULE_NAME_CHARS} characters"),
            ));
        }
        let lead_seconds = input
            .lead_seconds
            .filter(|s| (MIN_LEAD_SECONDS..=MAX_LEAD_SECONDS).contains(s))
            .ok_or_else(|| {
                FieldError::new(
                    "lead_seconds",
                    format!("must be between {MIN_LEAD_SECONDS} and {MAX_LEAD_SECONDS}"),
                )
            })?;
        let active_within_seconds = input
            .active_within_seconds
            .filter(|s| (MIN_ACTIVE_WITHIN_SECONDS..=MAX_ACTIVE_WITHIN_SECONDS).contains(s))
            .ok_or_else(|| {
                FieldError::new(
                    "active_within_seconds",
                    format!(
                        "must be between {MIN_ACTIVE_WITHIN_SECONDS} and {MAX_ACTIVE_WITHIN_SECONDS}"
                    ),
                )
            })?;
        let control_percent = input.control_percent.unwrap_or(10);
        if !(0..=MAX_CONTROL_PERCENT).contains(&control_percent) {
            return Err(FieldError::new(
                "control_percent",
                format!("must be between 0 and {MAX_CONTROL_PERCENT}"),
            ));
        }
        let mut template_ids: Vec<TemplateId> = Vec::new();
        for id in input.template_ids {
            let id = TemplateId::from_wire(id.trim());
            if id.is_empty() || id.chars().count() > 64 {
                return Err(FieldError::new("template_ids", "names no template"));
            }
            if !template_ids.contains(&id) {
                template_ids.push(id);
            }
        }
        if template_ids.len() > MAX_RULE_TEMPLATES {
            return Err(FieldError::new(
                "template_ids",
                format!("at most {MAX_RULE_TEMPLATES} templates"),
            ));
        }
        let bonus_template_id = input
            .bonus_template_id
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .map(TemplateId::from_wire);
        Ok(WakeupRuleSpec {
            name,
            lead_seconds,
            active_within_seconds,
            template_ids,
            bonus_template_id,
            control_percent,
        })
    }
}

/// The wake-up's words (catalog keys `wakeup-message*`): the saving of the
/// expiring coupons as the pre-expiry reminder says it ("你有 2 张优惠券将于
/// 明天过期，共可省 70.00 元"), and the wake-up coupon when there is one
/// ("另送你一张 ¥10.00 的券，满 ¥50.00 可用"). Days are counted in the
/// business zone from the earliest end, as reminders count them.
pub fn wakeup_message(
    count: usize,
    total_value: Cents,
    days: i64,
    bonus: Option<(Cents, Cents)>,
) -> Msg {
    let worth = if total_value.is_zero() {
        "none".to_string()
    } else {
        total_value.yuan()
    };
    match bonus {
        None => crate::msg!("wakeup-message", count = count, days = days, worth = worth),
        Some((value, min_order)) => crate::msg!(
            "wakeup-message-bonus",
            count = count,
            days = days,
            worth = worth,
            bonus = value.shown(),
            min = if min_order.is_zero() {
                "none".to_string()
            } else {
                min_order.shown()
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        parse_rfc3339(s).expect("valid")
    }

    #[test]
    fn activity_needs_a_known_kind_and_a_time_not_far_ahead() {
        let now = t("2026-11-11T00:00:00Z");
        assert_eq!(
            parse_activity(Some("cart"), Some("2026-11-11T08:00:00+08:00"), now),
            Ok((ActivityKind::Cart, now))
        );
        assert_eq!(
            parse_activity(Some("buy"), Some("2026-11-11T00:00:00Z"), now)
                .unwrap_err()
                .field,
            "kind"
        );
        assert_eq!(
            parse_activity(None, Some("2026-11-11T00:00:00Z"), now)
                .unwrap_err()
                .field,
            "kind"
        );
        assert_eq!(
            parse_activity(Some("browse"), None, now).unwrap_err().field,
            "at"
        );
        assert_eq!(
            parse_activity(Some("browse"), Some("yesterday"), now)
                .unwrap_err()
                .field,
            "at"
        );
        assert!(parse_activity(Some("visit"), Some("2026-11-11T00:04:59Z"), now).is_ok());
        assert_eq!(
            parse_activity(Some("visit"), Some("2026-11-11T00:05:01Z"), now)
                .unwrap_err()
                .field,
            "at"
        );
    }

    #[test]
    fn an_order_at_or_after_the_activity_counts_and_one_before_it_does_not() {
        let at = |s: &str| parse_rfc3339(s).ok();
        let act = at("2026-11-10T08:00:00Z");
        assert!(
            ordered_since(act, at("2026-11-10T08:00:00Z")),
            "the same instant"
        );
        assert!(ordered_since(act, at("2026-11-10T09:30:00Z")));
        assert!(
            !ordered_since(act, at("2026-11-10T07:59:59Z")),
            "ordered, then browsed again"
        );
        assert!(!ordered_since(act, None), "never ordered");
        assert!(
            !ordered_since(None, at("2026-11-10T09:30:00Z")),
            "no activity"
        );
    }

    #[test]
    fn the_control_group_is_a_stable_share_of_users() {
        let n = (0..10_000)
            .filter(|i| in_control("wkr_1", &format!("u{i}"), 10))
            .count();
        assert!((800..=1200).contains(&n), "{n}");
        assert!((0..1000).all(|i| !in_control("wkr_1", &format!("u{i}"), 0)));
        assert_eq!(
            in_control("wkr_1", "u42", 10),
            in_control("wkr_1", "u42", 10)
        );
        assert_eq!(decide(false, true, true), WakeupOutcome::Inactive);
        assert_eq!(decide(false, false, false), WakeupOutcome::Inactive);
        assert_eq!(decide(true, true, true), WakeupOutcome::Ordered);
        assert_eq!(decide(true, true, false), WakeupOutcome::Ordered);
        assert_eq!(decide(true, false, true), WakeupOutcome::Control);
        assert_eq!(decide(true, false, false), WakeupOutcome::Sent);
        let now = t("2026-11-11T00:00:00Z");
        assert!(active_within(Some(now - Duration::hours(23)), now, 86_400));
        assert!(!active_within(Some(now - Duration::hours(25)), now, 86_400));
        assert!(!active_within(None, now, 86_400));
    }

    #[test]
    fn a_rule_is_checked_field_by_field() {
        let ok = WakeupRuleInput {
            name: Some("过期前一天唤醒".into()),
            lead_seconds: Some(86_400),
            active_within_seconds: Some(7 * 86_400),
            template_ids: vec!["tpl_a".into(), "tpl_a".into()],
            bonus_template_id: Some(" ".into()),
            control_percent: None,
        };
        let spec = WakeupRuleSpec::parse(ok.clone()).expect("valid");
        assert_eq!(spec.template_ids, vec!["tpl_a".to_string()]);
        assert_eq!(spec.bonus_template_id, None);
        assert_eq!(spec.control_percent, 10);
        for (input, field) in [
            (
                WakeupRuleInput {
                    name: None,
                    ..ok.clone()
                },
                "name",
            ),
            (
                WakeupRuleInput {
                    lead_seconds: Some(1),
                    ..ok.clone()
                },
                "lead_seconds",
            ),
            (
                WakeupRuleInput {
                    active_within_seconds: None,
                    ..ok.clone()
                },
                "active_within_seconds",
            ),
            (
                WakeupRuleInput {
                    control_percent: Some(51),
                    ..ok.clone()
                },
                "control_percent",
            ),
        ] {
            assert_eq!(WakeupRuleSpec::parse(input).unwrap_err().field, field);
        }
    }

    #[test]
    fn a_rules_template_ids_are_trimmed_and_a_blank_or_long_one_names_no_template() {
        let rule = |template_ids: Vec<String>, bonus: Option<&str>| WakeupRuleInput {
            name: Some("wake".into()),
            lead_seconds: Some(86_400),
            active_within_seconds: Some(7 * 86_400),
            template_ids,
            bonus_template_id: bonus.map(String::from),
            control_percent: Some(0),
        };
        let spec =
            WakeupRuleSpec::parse(rule(vec![" tpl_a ".into()], Some(" tpl_b "))).expect("valid");
        assert_eq!(spec.template_ids, vec![TemplateId::from("tpl_a")]);
        assert_eq!(spec.bonus_template_id, Some(TemplateId::from("tpl_b")));
        for ids in [vec!["  ".to_string()], vec!["t".repeat(65)]] {
            let e = WakeupRuleSpec::parse(rule(ids, None)).map_err(|e| (e.field, e.message));
            assert_eq!(e, Err(("template_ids", "names no template".to_string())));
        }
        let many = (0..=MAX_RULE_TEMPLATES)
            .map(|i| format!("tpl_{i}"))
            .collect();
        let e = WakeupRuleSpec::parse(rule(many, None)).map_err(|e| e.field);
        assert_eq!(e, Err("template_ids"));
    }

    #[test]
    fn the_wakeup_reads_the_saving_in_words_in_both_languages() {
        use crate::i18n::Lang;
        let m = wakeup_message(2, Cents::new(7000).expect("cents"), 1, None);
        assert_eq!(
            Lang::Zh.msg(&m),
            "你有 2 张优惠券将于明天过期，共可省 70.00 元，别错过"
        );
        assert_eq!(
            Lang::En.msg(&m),
            "You have 2 coupons expiring tomorrow, worth 70.00 yuan in total. Don't miss them."
        );
        let b = wakeup_message(
            1,
            Cents::new(5000).expect("cents"),
            0,
            Some((
                Cents::new(1000).expect("cents"),
                Cents::new(5000).expect("cents"),
            )),
        );
        assert_eq!(
            Lang::Zh.msg(&b),
            "你有 1 张优惠券将于今天过期，共可省 50.00 元；另送你一张 ¥10.00 的券，满 ¥50.00 可用"
        );
        assert!(
            Lang::En
                .msg(&b)
                .contains("an extra ¥10.00 coupon for orders from ¥50.00")
        );
    }
}
