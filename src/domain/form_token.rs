//! The sign-in form's CSRF token. The form has no session yet, so it uses
//! a double-submit cookie; a bare random cookie, though, could be planted
//! by anyone who can set a cookie for this host (a sibling subdomain, a
//! plain-http response), who would then sign a victim into the attacker's
//! account. So the token is signed with a key only the server knows and
//! carries its own expiry: `<expires unix seconds>.<nonce hex>.<hmac hex>`,
//! HMAC-SHA256 over `login-form|<expires>|<nonce>`. A forged or expired
//! token is refused however the cookie got there.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// How long a sign-in form stays valid.
pub const LOGIN_FORM_SECONDS: i64 = 3600;

fn mac(key: &[u8; 32], expires: &str, nonce: &str) -> HmacSha256 {
    // HMAC takes keys of any length; a 32-byte key cannot be refused.
    let mut m = <HmacSha256 as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    m.update(b"login-form|");
    m.update(expires.as_bytes());
    m.update(b"|");
    m.update(nonce.as_bytes());
    m
}

/// A fresh token with `nonce` (16 random bytes as hex, from the caller so
/// this stays pure), valid until `now + LOGIN_FORM_SECONDS`.
pub fn sign(key: &[u8; 32], nonce: &str, now: DateTime<Utc>) -> String {
    let expires = (now.timestamp() + LOGIN_FORM_SECONDS).to_string();
    let tag = hex::encode(mac(key, &expires, nonce).finalize().into_bytes());
    format!("{expires}.{nonce}.{tag}")
}

/// Whether `token` was signed with `key` and is still valid at `now`; the
/// tag is compared in constant time before the expiry is looked at.
pub fn verify(key: &[u8; 32], token: &str, now: DateTime<Utc>) -> bool {
    expires_at(key, token).is_some_and(|expires| now.timestamp() < expires)
}

/// The expiry (unix seconds) of a token signed with `key`, or `None`.
pub fn expires_at(key: &[u8; 32], token: &str) -> Option<i64> {
    let mut parts = token.split('.');
    let (Some(expires), Some(nonce), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let tag = hex::decode(tag).ok()?;
    mac(key, expires, nonce).verify_slice(&tag).ok()?;
    expires.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 32] = [7; 32];
    const NONCE: &str = "00112233445566778899aabbccddeeff";

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 0).unwrap_or_default()
    }

    #[test]
    fn a_token_verifies_until_it_expires() {
        let t = sign(&KEY, NONCE, at(1_000));
        assert!(verify(&KEY, &t, at(1_000)));
        assert!(verify(&KEY, &t, at(1_000 + LOGIN_FORM_SECONDS - 1)));
        assert!(!verify(&KEY, &t, at(1_000 + LOGIN_FORM_SECONDS)));
    }

    #[test]
    fn a_token_the_attacker_made_or_changed_is_refused() {
        let t = sign(&KEY, NONCE, at(1_000));
        assert!(!verify(&[8; 32], &t, at(1_000)), "another key");
        let later = t.replacen("4600", "9999", 1);
        assert!(!verify(&KEY, &later, at(1_000)), "a longer expiry");
        assert!(!verify(&KEY, NONCE, at(1_000)), "a bare random value");
        assert!(!verify(&KEY, "", at(1_000)));
        assert!(!verify(&KEY, &format!("{t}.x"), at(1_000)));
        assert!(!verify(&KEY, "4600.zz.00", at(1_000)));
    }
}
