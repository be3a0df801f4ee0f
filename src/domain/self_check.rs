//! The customer's self-check link: a signed, expiring token that names one
//! user. It is the only key to the self-check page, so these rules decide
//! who sees what there.
//!
//! `v1.<base64url(user_id)>.<expires unix seconds>.<hex hmac>` where the
//! HMAC is SHA-256 keyed with `COUPONKEEPER_SELF_CHECK_SECRET` over
//! `"v1|" + user_id + "|" + expires`. The expiry is digits only, so the
//! last `|` of the signed text always separates it from the user id, even
//! when a user id contains `|`. The signature is compared in constant time
//! (`hmac`'s `verify_slice`), before the expiry is looked at.
//!
//! Pure: the clock is passed in.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, TimeZone, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::ids::UserId;

type HmacSha256 = Hmac<Sha256>;

/// The only version issued and accepted.
pub const VERSION: &str = "v1";
/// Shortest secret accepted, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;
/// Longest token looked at; anything longer is refused unread.
pub const MAX_TOKEN_LEN: usize = 512;

/// The signing secret. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// At least [`MIN_SECRET_BYTES`] bytes.
    pub fn parse(raw: &str) -> Result<Secret, String> {
        if raw.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "must be at least {MIN_SECRET_BYTES} bytes (it is {})",
                raw.len()
            ));
        }
        Ok(Secret(raw.as_bytes().to_vec()))
    }

    fn mac(&self, user_id: &str, expires: &str) -> HmacSha256 {
        // new_from_slice accepts keys of any length for HMAC.
        let mut mac = HmacSha256::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(VERSION.as_bytes());
        mac.update(b"|");
        mac.update(user_id.as_bytes());
        mac.update(b"|");
        mac.update(expires.as_bytes());
        mac
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Why a token was refused. The page shows one message for all of them;
/// the kind goes to the log and the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenError {
    /// Not four parts, bad base64, not a user id, not digits, not hex.
    Malformed,
    /// A version other than `v1`.
    UnknownVersion,
    /// The signature does not match the rest.
    BadSignature,
    /// Genuine, but its time has passed.
    Expired,
}

impl TokenError {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenError::Malformed => "malformed",
            TokenError::UnknownVersion => "unknown_version",
            TokenError::BadSignature => "bad_signature",
            TokenError::Expired => "expired",
        }
    }
}

/// A token that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub user_id: UserId,
    pub expires_at: DateTime<Utc>,
}

/// The token for `user_id` valid until `expires_at` (whole seconds).
pub fn sign(secret: &Secret, user_id: &UserId, expires_at: DateTime<Utc>) -> String {
    let expires = expires_at.timestamp().max(0).to_string();
    let sig = secret
        .mac(user_id.as_str(), &expires)
        .finalize()
        .into_bytes();
    format!(
        "{VERSION}.{}.{expires}.{}",
        URL_SAFE_NO_PAD.encode(user_id.as_str()),
        hex::encode(sig)
    )
}

/// Checks a token against `secret` at `now`: format, version, signature,
/// then expiry (a token is good strictly before its expiry second).
pub fn verify(secret: &Secret, token: &str, now: DateTime<Utc>) -> Result<Verified, TokenError> {
    if token.is_empty() || token.len() > MAX_TOKEN_LEN {
        return Err(TokenError::Malformed);
    }
    let parts: Vec<&str> = token.split('.').collect();
    let [version, user_b64, expires, sig_hex] = parts[..] else {
        return Err(TokenError::Malformed);
    };
    if version != VERSION {
        return Err(if version.starts_with('v') && parts.len() == 4 {
            TokenError::UnknownVersion
        } else {
            TokenError::Malformed
        });
    }
    let user_bytes = URL_SAFE_NO_PAD
        .decode(user_b64)
        .map_err(|_| TokenError::Malformed)?;
    let user_raw = String::from_utf8(user_bytes).map_err(|_| TokenError::Malformed)?;
    let user_id = UserId::parse(&user_raw).map_err(|_| TokenError::Malformed)?;
    // Digits only, no sign, no leading zero: one spelling per instant.
    if expires.is_empty()
        || expires.len() > 12
        || !expires.bytes().all(|b| b.is_ascii_digit())
        || (expires.len() > 1 && expires.starts_with('0'))
    {
        return Err(TokenError::Malformed);
    }
    let expires_secs: i64 = expires.parse().map_err(|_| TokenError::Malformed)?;
    if sig_hex.len() != 64
        || !sig_hex
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(TokenError::Malformed);
    }
    let sig = hex::decode(sig_hex).map_err(|_| TokenError::Malformed)?;
    secret
        .mac(user_id.as_str(), expires)
        .verify_slice(&sig)
        .map_err(|_| TokenError::BadSignature)?;
    let expires_at = Utc
        .timestamp_opt(expires_secs, 0)
        .single()
        .ok_or(TokenError::Malformed)?;
    if now >= expires_at {
        return Err(TokenError::Expired);
    }
    Ok(Verified {
        user_id,
        expires_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn secret() -> Secret {
        Secret::parse("0123456789abcdef0123456789abcdef").expect("32 bytes")
    }

    fn now() -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000, 0).single().expect("valid")
    }

    fn user(raw: &str) -> UserId {
        UserId::parse(raw).expect("user id")
    }

    fn token_for(raw: &str) -> String {
        sign(&secret(), &user(raw), now() + Duration::hours(1))
    }

    /// The token with part `i` replaced.
    fn with_part(token: &str, i: usize, value: &str) -> String {
        let mut parts: Vec<String> = token.split('.').map(String::from).collect();
        parts[i] = value.to_string();
        parts.join(".")
    }

    #[test]
    fn a_fresh_token_names_its_user_and_expiry() {
        let t = token_for("u-1001");
        assert!(t.starts_with("v1.dS0xMDAx."));
        let v = verify(&secret(), &t, now()).expect("valid");
        assert_eq!(v.user_id.as_str(), "u-1001");
        assert_eq!(v.expires_at, now() + Duration::hours(1));
    }

    #[test]
    fn user_ids_with_dots_bars_and_non_ascii_round_trip() {
        for raw in ["a.b", "a|b|123", "用户_7", "x".repeat(128).as_str()] {
            let v = verify(&secret(), &token_for(raw), now()).expect("valid");
            assert_eq!(v.user_id.as_str(), raw);
        }
    }

    #[test]
    fn an_expired_token_is_refused_from_its_expiry_second_on() {
        let t = token_for("u-1");
        let at = now() + Duration::hours(1);
        assert!(verify(&secret(), &t, at - Duration::seconds(1)).is_ok());
        assert_eq!(verify(&secret(), &t, at), Err(TokenError::Expired));
        assert_eq!(
            verify(&secret(), &t, at + Duration::days(9)),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn a_tampered_signature_is_refused() {
        let t = token_for("u-1");
        let sig = t.rsplit('.').next().expect("sig").to_string();
        let flipped = match sig.strip_prefix('0') {
            Some(rest) => format!("1{rest}"),
            None => format!("0{}", &sig[1..]),
        };
        assert_eq!(
            verify(&secret(), &with_part(&t, 3, &flipped), now()),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn another_user_or_a_later_expiry_breaks_the_signature() {
        let t = token_for("u-1");
        let other = with_part(&t, 1, &URL_SAFE_NO_PAD.encode("u-2"));
        assert_eq!(
            verify(&secret(), &other, now()),
            Err(TokenError::BadSignature)
        );
        let later = (now() + Duration::days(365)).timestamp().to_string();
        assert_eq!(
            verify(&secret(), &with_part(&t, 2, &later), now()),
            Err(TokenError::BadSignature)
        );
    }

    #[test]
    fn another_secret_does_not_verify() {
        let t = token_for("u-1");
        let other = Secret::parse("another secret of at least 32 bytes!").expect("ok");
        assert_eq!(verify(&other, &t, now()), Err(TokenError::BadSignature));
    }

    #[test]
    fn unknown_versions_are_refused() {
        let t = token_for("u-1");
        assert_eq!(
            verify(&secret(), &with_part(&t, 0, "v2"), now()),
            Err(TokenError::UnknownVersion)
        );
        assert_eq!(
            verify(&secret(), &with_part(&t, 0, "V1"), now()),
            Err(TokenError::Malformed)
        );
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let t = token_for("u-1");
        let malformed = [
            String::new(),
            "garbage".to_string(),
            "v1...".to_string(),
            format!("{t}.extra"),
            t.replacen('.', "", 1),
            with_part(&t, 1, "!!!"),
            with_part(&t, 1, ""),
            with_part(&t, 1, &URL_SAFE_NO_PAD.encode("has space")),
            with_part(&t, 1, &URL_SAFE_NO_PAD.encode([0xff, 0xfe])),
            with_part(&t, 2, "-5"),
            with_part(&t, 2, "+1800003600"),
            with_part(&t, 2, "01800003600"),
            with_part(&t, 2, "soon"),
            with_part(&t, 2, "99999999999999999999"),
            with_part(&t, 3, "abc"),
            with_part(&t, 3, &"G".repeat(64)),
            with_part(&t, 3, &t.rsplit('.').next().expect("sig").to_uppercase()),
            "x".repeat(MAX_TOKEN_LEN + 1),
        ];
        for bad in malformed {
            assert_eq!(
                verify(&secret(), &bad, now()),
                Err(TokenError::Malformed),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn short_secrets_are_refused_and_never_printed() {
        assert!(Secret::parse("short").is_err());
        assert!(Secret::parse(&"s".repeat(31)).is_err());
        assert_eq!(format!("{:?}", secret()), "Secret(..)");
    }
}
