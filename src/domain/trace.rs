//! W3C Trace Context (`traceparent`, <https://www.w3.org/TR/trace-context/>):
//! reading the header a caller sends and writing the one couponkeeper
//! sends on, so a shop can follow one customer's action across its
//! services, couponkeeper's logs and event rows, and the webhooks it
//! causes.
//!
//! Hand-written rather than a tracing crate's propagator: the header is
//! four fixed-width lowercase hex fields, the parser below is some forty
//! lines with its tests beside it, and the propagators of the
//! OpenTelemetry crates come with an SDK (context, span processors,
//! exporters) that couponkeeper does not otherwise use.

/// The part of a trace context couponkeeper keeps and passes on: the
/// trace it belongs to and its flags (the caller's parent id is not kept:
/// what couponkeeper sends on names a span of its own as the parent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// 32 lowercase hex digits, not all zero.
    pub trace_id: String,
    /// The trace flags; only `sampled` (bit 0) is defined, and only it is
    /// passed on.
    pub flags: u8,
}

/// A valid `traceparent` header: the caller's trace and the caller's span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    pub context: TraceContext,
    /// 16 lowercase hex digits, not all zero: the caller's span.
    pub parent_id: String,
}

/// The header's name, in both directions (HTTP names are case-blind).
pub const TRACEPARENT: &str = "traceparent";

/// The `sampled` trace flag.
pub const SAMPLED: u8 = 0x01;

/// Whether `s` is `len` lowercase hex digits, not all zero.
fn nonzero_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && s.bytes().any(|b| b != b'0')
}

/// Reads a `traceparent` value; `None` when it is not valid, and then the
/// caller's trace is ignored (never an error to the caller).
///
/// Version `00` must be exactly `00-<32 hex>-<16 hex>-<2 hex>`. A higher
/// version (`01` to `fe`) is read as the spec asks: its first four fields
/// as version 00's, anything after them only when it follows a `-`.
/// Version `ff`, upper-case hex, an all-zero trace or parent id, or a
/// field of another width is invalid.
pub fn parse_traceparent(value: &str) -> Option<TraceParent> {
    let value = value.trim_matches(|c| c == ' ' || c == '\t');
    let version = value.get(0..2)?;
    if !version
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        || version == "ff"
    {
        return None;
    }
    let rest = match (version, value.len()) {
        ("00", 55) => value,
        ("00", _) => return None,
        (_, 55) => value,
        (_, n) if n > 55 && value.as_bytes()[55] == b'-' => value.get(0..55)?,
        _ => return None,
    };
    let mut fields = rest.split('-');
    let (_, trace_id, parent_id, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    if fields.next().is_some()
        || !nonzero_hex(trace_id, 32)
        || !nonzero_hex(parent_id, 16)
        || flags.len() != 2
        || !flags
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(TraceParent {
        context: TraceContext {
            trace_id: trace_id.to_string(),
            flags,
        },
        parent_id: parent_id.to_string(),
    })
}

/// Whether `s` is a trace id: 32 lowercase hex digits, not all zero.
pub fn is_trace_id(s: &str) -> bool {
    nonzero_hex(s, 32)
}

/// Whether `s` is a span id: 16 lowercase hex digits, not all zero.
pub fn is_span_id(s: &str) -> bool {
    nonzero_hex(s, 16)
}

/// The `traceparent` value couponkeeper sends on: version 00, the trace,
/// `span_id` (a span of couponkeeper's own) as the parent, and only the
/// `sampled` flag of `flags`.
pub fn traceparent(trace: &TraceContext, span_id: &str) -> String {
    format!(
        "00-{}-{span_id}-{:02x}",
        trace.trace_id,
        trace.flags & SAMPLED
    )
}

/// A new trace id from 16 random bytes (all zero, once in 2^128, is made
/// 1), as 32 lowercase hex digits.
pub fn trace_id_from(bytes: [u8; 16]) -> String {
    let n = u128::from_be_bytes(bytes).max(1);
    format!("{n:032x}")
}

/// A new span id from 8 random bytes, as 16 lowercase hex digits (never
/// all zero).
pub fn span_id_from(bytes: [u8; 8]) -> String {
    let n = u64::from_be_bytes(bytes).max(1);
    format!("{n:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT: &str = "00f067aa0ba902b7";

    #[test]
    fn a_valid_version_00_header_gives_its_trace_parent_and_flags() {
        let p = parse_traceparent(&format!("00-{TRACE}-{PARENT}-01")).expect("valid");
        assert_eq!(p.context.trace_id, TRACE);
        assert_eq!(p.parent_id, PARENT);
        assert_eq!(p.context.flags, 1);
        let p = parse_traceparent(&format!(" 00-{TRACE}-{PARENT}-00\t")).expect("OWS trimmed");
        assert_eq!(p.context.flags, 0);
    }

    #[test]
    fn invalid_headers_are_refused() {
        let bad = [
            String::new(),
            "00".to_string(),
            format!("00-{TRACE}-{PARENT}"),
            format!("00-{TRACE}-{PARENT}-01-"),
            format!("00-{TRACE}-{PARENT}-01-extra"),
            format!("00-{}-{PARENT}-01", "0".repeat(32)),
            format!("00-{TRACE}-{}-01", "0".repeat(16)),
            format!("00-{}-{PARENT}-01", TRACE.to_uppercase()),
            format!("00-{TRACE}-{}-01", PARENT.to_uppercase()),
            format!("00-{TRACE}-{PARENT}-0A"),
            format!("00-{TRACE}-{PARENT}-1"),
            format!("00-{TRACE}0-{PARENT}-01"),
            format!("00-{}-{PARENT}-01", &TRACE[1..]),
            format!("00-{TRACE}-{}-01", &PARENT[1..]),
            format!("00-{}g-{PARENT}-01", &TRACE[1..]),
            format!("ff-{TRACE}-{PARENT}-01"),
            format!("0g-{TRACE}-{PARENT}-01"),
            format!("0A-{TRACE}-{PARENT}-01"),
            format!("00_{TRACE}_{PARENT}_01"),
            format!("00-{TRACE}-{PARENT}-01中"),
            "中".repeat(20),
        ];
        for v in bad {
            assert_eq!(parse_traceparent(&v), None, "{v:?}");
        }
    }

    #[test]
    fn a_higher_version_is_read_by_its_version_00_fields() {
        let p = parse_traceparent(&format!("cc-{TRACE}-{PARENT}-01-what-the-future-holds"))
            .expect("future version");
        assert_eq!(p.context.trace_id, TRACE);
        assert!(parse_traceparent(&format!("cc-{TRACE}-{PARENT}-01")).is_some());
        assert!(parse_traceparent(&format!("cc-{TRACE}-{PARENT}-01x")).is_none());
    }

    #[test]
    fn what_couponkeeper_sends_is_valid_and_passes_only_the_sampled_flag() {
        let ctx = TraceContext {
            trace_id: TRACE.to_string(),
            flags: 0xff,
        };
        let sent = traceparent(&ctx, PARENT);
        assert_eq!(sent, format!("00-{TRACE}-{PARENT}-01"));
        assert!(parse_traceparent(&sent).is_some());
        assert_eq!(trace_id_from([0; 16]), format!("{}1", "0".repeat(31)));
        assert!(is_trace_id(&trace_id_from([7; 16])));
        assert!(is_span_id(&span_id_from([0; 8])));
        assert!(is_span_id(&span_id_from([0xab; 8])));
    }
}
