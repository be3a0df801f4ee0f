//! The reason a person gives for changing a customer's coupon or order (a
//! refund, a release, a cancel, an invalidation, a compensation): written
//! to the events and the ledger, so it is required.

use super::FieldError;

/// Longest reason for an action, in characters as sent.
pub const MAX_REASON_CHARS: usize = 500;

/// Checks the reason for an action: required (not blank), at most
/// [`MAX_REASON_CHARS`] characters as sent (the OpenAPI document's
/// `maxLength` counts them so: spaces around a reason count too), kept
/// trimmed.
pub fn parse_reason(raw: Option<String>) -> Result<String, FieldError> {
    let raw = raw.unwrap_or_default();
    let r = raw.trim().to_string();
    if r.is_empty() || raw.chars().count() > MAX_REASON_CHARS {
        return Err(FieldError::new(
            "reason",
            format!("is required, 1-{MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_kept_trimmed() {
        assert_eq!(
            parse_reason(Some("  goodwill \n".into())),
            Ok("goodwill".to_string())
        );
    }

    #[test]
    fn a_missing_or_blank_reason_is_refused() {
        for raw in [None, Some(String::new()), Some(" \t ".into())] {
            let e = parse_reason(raw).map_err(|e| (e.field, e.message));
            assert_eq!(
                e,
                Err(("reason", "is required, 1-500 characters".to_string()))
            );
        }
    }

    #[test]
    fn a_reason_longer_than_the_limit_as_sent_is_refused_even_when_padded() {
        let most = "r".repeat(MAX_REASON_CHARS);
        assert!(parse_reason(Some(most.clone())).is_ok());
        assert!(parse_reason(Some(format!("{most}x"))).is_err());
        assert!(parse_reason(Some(format!(" {most}"))).is_err());
    }
}
