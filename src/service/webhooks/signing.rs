//! What a receiver gets: the envelope (the same bytes on every attempt),
//! its webhook id and the `Couponkeeper-Signature` header, an HMAC-SHA256
//! of the timestamp and the body with the subscriber's secret.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::domain::ids::UserId;
use crate::domain::time::{from_ms, rfc3339};

/// The signature header.
pub const SIGNATURE_HEADER: &str = "Couponkeeper-Signature";

/// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`.
pub fn signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC accepts any key length");
    mac.update(format!("{t}.").as_bytes());
    mac.update(body.as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// The webhook id of an outbox message: the same for every subscriber and
/// every attempt.
pub fn message_id(outbox_id: i64) -> String {
    format!("msg_{outbox_id}")
}

/// The delivered body: `{"id","type","occurred_at","user_id","data"}`,
/// with `data` exactly as stored, so every attempt sends the same bytes.
pub fn envelope(
    outbox_id: i64,
    event_type: &str,
    user_id: Option<&UserId>,
    payload: &str,
    created_at: i64,
) -> String {
    let data = match serde_json::from_str::<serde_json::Value>(payload) {
        Ok(_) => payload.to_string(),
        Err(_) => "null".to_string(),
    };
    let s = |v: &str| serde_json::Value::String(v.to_string()).to_string();
    format!(
        "{{\"id\":{},\"type\":{},\"occurred_at\":{},\"user_id\":{},\"data\":{data}}}",
        s(&message_id(outbox_id)),
        s(event_type),
        s(&rfc3339(from_ms(created_at))),
        user_id.map(|u| s(u)).unwrap_or_else(|| "null".into()),
    )
}
