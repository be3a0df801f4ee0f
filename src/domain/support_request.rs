//! A customer's request for support from the self-check page (联系客服):
//! the customer's note (parsed once, bounded), the findings as recorded
//! with the request, the hourly limit per order, and the request's two
//! states. Pure rules; the writing is `service::support_requests`.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::health::CheckResult;

/// The longest note a customer may write, in characters.
pub const MAX_NOTE_CHARS: usize = 500;

/// At most one request per order within this many seconds.
pub const REQUEST_GAP_SECONDS: i64 = 3600;

/// Why a note was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteError {
    /// Longer than [`MAX_NOTE_CHARS`].
    TooLong,
    /// A control character other than a line break or a tab.
    ControlCharacter,
}

impl NoteError {
    /// The catalog key of the message shown at the field.
    pub fn message_key(self) -> &'static str {
        match self {
            NoteError::TooLong => "sc-support-note-too-long",
            NoteError::ControlCharacter => "sc-support-note-control",
        }
    }
}

/// The customer's own words about the problem: trimmed, line breaks as
/// `\n`, at most [`MAX_NOTE_CHARS`], no other control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomerNote(String);

impl CustomerNote {
    /// The note of a form field; `Ok(None)` when blank.
    pub fn parse(raw: &str) -> Result<Option<CustomerNote>, NoteError> {
        let text = raw.replace("\r\n", "\n").replace('\r', "\n");
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        if text.chars().count() > MAX_NOTE_CHARS {
            return Err(NoteError::TooLong);
        }
        if text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(NoteError::ControlCharacter);
        }
        Ok(Some(CustomerNote(text.to_string())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    /// Waiting in support's queue.
    Open,
    /// A staff member marked it handled.
    Handled,
}

impl RequestStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Open => "open",
            RequestStatus::Handled => "handled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [RequestStatus::Open, RequestStatus::Handled]
            .into_iter()
            .find(|r| r.as_str() == s)
    }

    /// The catalog key of its name.
    pub fn label_key(self) -> &'static str {
        match self {
            RequestStatus::Open => "support-request-open",
            RequestStatus::Handled => "support-request-handled",
        }
    }
}

/// What a finding was about: the order, or one of the customer's coupons
/// held by an order that no longer uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingScope {
    Order,
    Coupon,
}

/// One finding as the customer read it when they asked, kept with the
/// request: the result, the message as a catalog key and its arguments
/// (so each reader gets their language), the coupon's code, and whether
/// the page told the customer to contact support about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedFinding {
    pub scope: FindingScope,
    pub result: CheckResult,
    pub message_key: String,
    /// [`crate::i18n::Msg::args_json`].
    pub message_args: String,
    pub coupon: Option<String>,
    pub contact_support: bool,
}

/// The worst result of `findings`; `ok` when there are none.
pub fn overall(findings: &[RecordedFinding]) -> CheckResult {
    findings
        .iter()
        .map(|f| f.result)
        .max()
        .unwrap_or(CheckResult::Ok)
}

/// When the next request for an order may be sent after one sent at
/// `last` (`None`: none sent).
pub fn next_request_at(last: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    last.map(|t| t + Duration::seconds(REQUEST_GAP_SECONDS))
}

/// Whether a request for an order whose latest request was at `last` may
/// be sent at `now`: none yet, or the last one at least
/// [`REQUEST_GAP_SECONDS`] ago.
pub fn may_request(last: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    next_request_at(last).is_none_or(|next| now >= next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::parse_rfc3339;

    #[test]
    fn a_blank_note_is_none_and_a_note_is_kept_trimmed_with_its_line_breaks() {
        assert_eq!(CustomerNote::parse("  \r\n\t "), Ok(None));
        let n = CustomerNote::parse("  定金付了，\r\n券不见了  ")
            .ok()
            .flatten()
            .map(|n| n.as_str().to_string());
        assert_eq!(n.as_deref(), Some("定金付了，\n券不见了"));
    }

    #[test]
    fn a_note_over_the_limit_or_with_control_characters_is_refused() {
        let long = "券".repeat(MAX_NOTE_CHARS + 1);
        assert_eq!(CustomerNote::parse(&long), Err(NoteError::TooLong));
        assert!(CustomerNote::parse(&"券".repeat(MAX_NOTE_CHARS)).is_ok());
        assert_eq!(
            CustomerNote::parse("a\u{7}b"),
            Err(NoteError::ControlCharacter)
        );
        assert_eq!(
            CustomerNote::parse("a\u{0}b"),
            Err(NoteError::ControlCharacter)
        );
    }

    #[test]
    fn one_request_per_order_per_hour() {
        let at = |s: &str| parse_rfc3339(s).ok();
        let sent = at("2026-12-06T08:00:00Z");
        assert!(may_request(
            None,
            at("2026-12-06T08:00:00Z").unwrap_or_default()
        ));
        assert!(!may_request(
            sent,
            at("2026-12-06T08:59:59Z").unwrap_or_default()
        ));
        assert!(may_request(
            sent,
            at("2026-12-06T09:00:00Z").unwrap_or_default()
        ));
        assert_eq!(next_request_at(sent), at("2026-12-06T09:00:00Z"));
    }

    #[test]
    fn the_overall_result_is_the_worst_finding() {
        let f = |result| RecordedFinding {
            scope: FindingScope::Order,
            result,
            message_key: "k".into(),
            message_args: "{}".into(),
            coupon: None,
            contact_support: false,
        };
        assert_eq!(overall(&[]), CheckResult::Ok);
        assert_eq!(
            overall(&[f(CheckResult::Warning), f(CheckResult::Ok)]),
            CheckResult::Warning
        );
        assert_eq!(
            overall(&[f(CheckResult::Problem), f(CheckResult::Warning)]),
            CheckResult::Problem
        );
    }
}
