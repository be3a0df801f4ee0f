//! Bulk issue (定向发券) and bulk void (批量作废): the words of a job and
//! of each input line's outcome, and the reading of an uploaded file. No
//! I/O: the service stores what [`parse_lines`] returns and the jobs work
//! through it.

use sha2::{Digest, Sha256};

use super::FieldError;
use super::ids::UserId;

/// Most input lines one file may carry.
pub const MAX_LINES: usize = 1_000_000;
/// Largest file a bulk request takes (the API's body and the console's
/// upload): a million ids of up to 64 bytes.
pub const MAX_FILE_BYTES: usize = 64 * 1024 * 1024;
/// Longest stored text of one input line, in characters (a line longer
/// than any id is kept cut, with its outcome `failed`).
pub const MAX_STORED_LINE_CHARS: usize = 200;

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    BulkIssue,
    BulkVoid,
}

impl JobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::BulkIssue => "bulk_issue",
            JobKind::BulkVoid => "bulk_void",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [JobKind::BulkIssue, JobKind::BulkVoid]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    /// The optional header word of its file.
    pub fn header(self) -> &'static str {
        match self {
            JobKind::BulkIssue => "user_id",
            JobKind::BulkVoid => "coupon_id",
        }
    }

    /// The catalog key of its name.
    pub fn label_key(self) -> &'static str {
        match self {
            JobKind::BulkIssue => "bulk-kind-bulk_issue",
            JobKind::BulkVoid => "bulk-kind-bulk_void",
        }
    }
}

/// Where a job stands. `loading`: its lines are still being stored (a
/// request that died half-way; sending the same file again finishes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    Loading,
    Running,
    Done,
    Failed,
}

impl JobStatus {
    pub const ALL: [JobStatus; 4] = [
        JobStatus::Loading,
        JobStatus::Running,
        JobStatus::Done,
        JobStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Loading => "loading",
            JobStatus::Running => "running",
            JobStatus::Done => "done",
            JobStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        JobStatus::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether the job may still change (a page refreshes itself).
    pub fn is_active(self) -> bool {
        matches!(self, JobStatus::Loading | JobStatus::Running)
    }

    pub fn label_key(self) -> &'static str {
        match self {
            JobStatus::Loading => "bulk-status-loading",
            JobStatus::Running => "bulk-status-running",
            JobStatus::Done => "bulk-status-done",
            JobStatus::Failed => "bulk-status-failed",
        }
    }
}

/// Why a line was skipped or failed (`bulk_job_lines.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LineReason {
    /// Issue: the template's stock ran out.
    OutOfStock,
    /// Issue: the user already holds the template's per-user limit.
    ClaimLimitReached,
    /// Issue: the template is paused, ended or its claiming closed.
    TemplateInactive,
    /// Issue: not a valid user id (failed).
    InvalidUserId,
    /// Void: no such coupon (failed).
    NotFound,
    /// Void: a coupon of another template (failed).
    OtherTemplate,
    /// Void: the coupon is locked to an order.
    Locked,
    /// Void: the coupon was used.
    Used,
    /// Void: the coupon had already expired.
    Expired,
    /// Void: the coupon was already void.
    Invalidated,
    /// Void: the coupon changed while the job looked at it.
    Changed,
}

impl LineReason {
    pub const ALL: [LineReason; 11] = [
        LineReason::OutOfStock,
        LineReason::ClaimLimitReached,
        LineReason::TemplateInactive,
        LineReason::InvalidUserId,
        LineReason::NotFound,
        LineReason::OtherTemplate,
        LineReason::Locked,
        LineReason::Used,
        LineReason::Expired,
        LineReason::Invalidated,
        LineReason::Changed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LineReason::OutOfStock => "out_of_stock",
            LineReason::ClaimLimitReached => "claim_limit_reached",
            LineReason::TemplateInactive => "template_inactive",
            LineReason::InvalidUserId => "invalid_user_id",
            LineReason::NotFound => "not_found",
            LineReason::OtherTemplate => "other_template",
            LineReason::Locked => "locked",
            LineReason::Used => "used",
            LineReason::Expired => "expired",
            LineReason::Invalidated => "invalidated",
            LineReason::Changed => "changed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        LineReason::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// Failed (the input itself is wrong) rather than skipped (the rules
    /// said no to a good input).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            LineReason::InvalidUserId | LineReason::NotFound | LineReason::OtherTemplate
        )
    }

    pub fn label_key(self) -> String {
        format!("bulk-reason-{}", self.as_str())
    }
}

/// One line of an uploaded file: its text (cut, control characters
/// replaced) and, for a bulk issue, the problem that fails it already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputLine {
    pub value: String,
    pub problem: Option<LineReason>,
}

/// Reads an uploaded file: one value a line (`\n` or `\r\n`), blanks
/// around it and one pair of double quotes dropped, empty lines ignored,
/// the first line dropped when it is the kind's header (`user_id` /
/// `coupon_id`, any case). A bulk issue checks every user id with
/// [`UserId::parse`]; a bad one becomes a line that fails with
/// `invalid_user_id`, never a refusal of the file. Refused as a whole
/// (`field` `body`): not UTF-8, a NUL character, no line at all, more
/// than [`MAX_LINES`] lines.
pub fn parse_lines(kind: JobKind, bytes: &[u8]) -> Result<Vec<InputLine>, FieldError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| FieldError::new("body", "the file must be UTF-8 text"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.contains('\0') {
        return Err(FieldError::new(
            "body",
            "the file must not contain the NUL character",
        ));
    }
    let mut out = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let v = raw.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .unwrap_or(v)
            .trim();
        if v.is_empty() {
            continue;
        }
        if out.is_empty() && i == 0 && v.eq_ignore_ascii_case(kind.header()) {
            continue;
        }
        if out.len() >= MAX_LINES {
            return Err(FieldError::new(
                "body",
                format!("the file may have at most {MAX_LINES} lines"),
            ));
        }
        let problem = match kind {
            JobKind::BulkIssue if UserId::parse(v).is_err() => Some(LineReason::InvalidUserId),
            _ => None,
        };
        out.push(InputLine {
            value: stored_text(v),
            problem,
        });
    }
    if out.is_empty() {
        return Err(FieldError::new("body", "the file has no line to work on"));
    }
    Ok(out)
}

/// A line as stored and shown back: at most [`MAX_STORED_LINE_CHARS`],
/// control characters as U+FFFD.
fn stored_text(v: &str) -> String {
    v.chars()
        .take(MAX_STORED_LINE_CHARS)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// The key that makes the same file for the same template the same job:
/// SHA-256 (hex) over the kind, the template id and the file's bytes.
pub fn input_key(kind: JobKind, template_id: &str, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_str().as_bytes());
    h.update([0]);
    h.update(template_id.as_bytes());
    h.update([0]);
    h.update(bytes);
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_one_value_a_line_with_an_optional_header() {
        let lines =
            parse_lines(JobKind::BulkIssue, b"user_id\r\nu1\n\n \"u2\" \nbad id\n").unwrap();
        let values: Vec<&str> = lines.iter().map(|l| l.value.as_str()).collect();
        assert_eq!(values, vec!["u1", "u2", "bad id"]);
        assert_eq!(lines[2].problem, Some(LineReason::InvalidUserId));
        assert_eq!(lines[0].problem, None);
        // The header only counts on the first line.
        let lines = parse_lines(JobKind::BulkIssue, b"u1\nuser_id\n").unwrap();
        assert_eq!(lines.len(), 2);
    }

    #[test]
    fn a_file_without_lines_or_with_nul_or_not_utf8_is_refused() {
        for bad in [&b""[..], b"user_id\n\n", b"u1\0\n", b"\xff\xfe"] {
            assert_eq!(
                parse_lines(JobKind::BulkIssue, bad).map_err(|e| e.field),
                Err("body")
            );
        }
    }

    #[test]
    fn the_same_file_for_another_template_is_another_key() {
        let a = input_key(JobKind::BulkIssue, "tpl_1", b"u1\n");
        assert_eq!(a, input_key(JobKind::BulkIssue, "tpl_1", b"u1\n"));
        assert_ne!(a, input_key(JobKind::BulkIssue, "tpl_2", b"u1\n"));
        assert_ne!(a, input_key(JobKind::BulkVoid, "tpl_1", b"u1\n"));
    }

    #[test]
    fn reasons_round_trip() {
        for r in LineReason::ALL {
            assert_eq!(LineReason::parse(r.as_str()), Some(r));
        }
    }
}
