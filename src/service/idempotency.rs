//! `Idempotency-Key` semantics (API.md, Conventions):
//! same key + same request from the same token within 24 h replays the
//! first response; same key + other request is refused (422); same key
//! while the first is still running is refused (409).
//!
//! "Still running" is detected twice: in process (a set of keys in flight)
//! and, on PostgreSQL, across instances with a transaction-scoped advisory
//! lock. The record itself is written in the operation's own transaction.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;

use super::ServiceError;
use crate::domain::time::to_ms;
use crate::store::idempotency as store;

/// How long a key's first response is kept and replayed.
pub const RETENTION_HOURS: i64 = 24;
/// Longest key accepted (API.md: 1-255 characters).
pub const MAX_KEY_LEN: usize = 255;

/// A request that carries an `Idempotency-Key`.
#[derive(Debug, Clone)]
pub struct IdempotencyRequest {
    /// Hash of the API token: keys are per token.
    pub scope: String,
    pub key: String,
    /// Hash of method, path and body: "the same request".
    pub fingerprint: String,
    /// Status to store with a successful response (200 or 201).
    pub success_status: u16,
}

impl IdempotencyRequest {
    /// `key` must already be checked for length (see [`check_key`]).
    pub fn new(
        scope: String,
        key: String,
        method: &str,
        path: &str,
        body: &[u8],
        success_status: u16,
    ) -> Self {
        let mut h = Sha256::new();
        h.update(method.as_bytes());
        h.update(b" ");
        h.update(path.as_bytes());
        h.update(b"\n");
        h.update(body);
        IdempotencyRequest {
            scope,
            key,
            fingerprint: hex::encode(h.finalize()),
            success_status,
        }
    }

    /// The PostgreSQL advisory-lock key of this (scope, key) pair.
    pub fn lock_key(&self) -> i64 {
        let mut h = Sha256::new();
        h.update(self.scope.as_bytes());
        h.update(b"\0");
        h.update(self.key.as_bytes());
        let d = h.finalize();
        let mut b = [0u8; 8];
        b.copy_from_slice(&d[..8]);
        i64::from_be_bytes(b)
    }
}

/// Checks a raw header value: 1-255 characters.
pub fn check_key(raw: &str) -> Result<String, String> {
    let n = raw.chars().count();
    if n == 0 || n > MAX_KEY_LEN {
        return Err(format!("must be 1-{MAX_KEY_LEN} characters"));
    }
    Ok(raw.to_string())
}

/// The result of a write: done now, or a stored first response replayed.
#[derive(Debug)]
pub enum Executed<T> {
    Fresh(T),
    Replayed { status: u16, body: String },
}

impl<T> Executed<T> {
    /// The fresh value, if this was not a replay.
    pub fn fresh(self) -> Option<T> {
        match self {
            Executed::Fresh(v) => Some(v),
            Executed::Replayed { .. } => None,
        }
    }
}

/// Keys currently being executed by this process.
#[derive(Default, Clone)]
pub struct Inflight {
    keys: Arc<Mutex<HashSet<(String, String)>>>,
}

/// Removes its key from the in-flight set when dropped.
pub struct InflightGuard {
    keys: Arc<Mutex<HashSet<(String, String)>>>,
    entry: (String, String),
}

impl Inflight {
    pub fn enter(&self, r: &IdempotencyRequest) -> Result<InflightGuard, ServiceError> {
        let entry = (r.scope.clone(), r.key.clone());
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if !keys.insert(entry.clone()) {
            return Err(ServiceError::IdempotencyInProgress);
        }
        Ok(InflightGuard {
            keys: self.keys.clone(),
            entry,
        })
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.remove(&self.entry);
    }
}

/// Claims the key inside the caller's transaction. `Some(replay)`: the
/// first response, to be returned as is. `None`: go ahead.
pub async fn claim<T>(
    c: &mut AnyConnection,
    r: &IdempotencyRequest,
    now: DateTime<Utc>,
) -> Result<Option<Executed<T>>, ServiceError> {
    let (locked, stored) = store::lock_and_find(c, r.lock_key(), &r.scope, &r.key).await?;
    if !locked {
        return Err(ServiceError::IdempotencyInProgress);
    }
    match stored {
        Some(stored) if is_kept(&stored, now) => replay_of(r, stored).map(Some),
        Some(_) => {
            store::delete(c, &r.scope, &r.key).await?;
            Ok(None)
        }
        None => Ok(None),
    }
}

fn is_kept(stored: &store::StoredResponse, now: DateTime<Utc>) -> bool {
    stored.created_at > to_ms(now - Duration::hours(RETENTION_HOURS))
}

/// The stored first response as the answer to `r`: a replay, or 422 when
/// the key came with another request.
fn replay_of<T>(
    r: &IdempotencyRequest,
    stored: store::StoredResponse,
) -> Result<Executed<T>, ServiceError> {
    if stored.fingerprint != r.fingerprint {
        return Err(ServiceError::IdempotencyKeyReused);
    }
    Ok(Executed::Replayed {
        status: u16::try_from(stored.status_code).unwrap_or(200),
        body: stored.body,
    })
}

/// After a keyed write was refused and rolled back: the key's record if
/// one is kept now. A first request on another instance may have finished
/// between this one's lookup and its lock (see
/// [`store::lock_and_find`]); its answer, not this refusal, is the one to
/// give.
pub async fn recorded_meanwhile<T>(
    c: &mut AnyConnection,
    r: &IdempotencyRequest,
    now: DateTime<Utc>,
) -> Result<Option<Executed<T>>, ServiceError> {
    match store::find(c, &r.scope, &r.key).await? {
        Some(stored) if is_kept(&stored, now) => replay_of(r, stored).map(Some),
        _ => Ok(None),
    }
}

/// Stores the successful response in the operation's transaction.
pub async fn store_success<T: Serialize>(
    c: &mut AnyConnection,
    r: &IdempotencyRequest,
    value: &T,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let body = serde_json::to_string(value)
        .map_err(|e| ServiceError::IllegalTransition(format!("response not serializable: {e}")))?;
    if !store::insert(
        c,
        &r.scope,
        &r.key,
        &r.fingerprint,
        r.success_status,
        &body,
        to_ms(now),
    )
    .await?
    {
        // Another instance stored this key's answer after this request
        // looked: roll back; `Service::write` then replays that answer.
        return Err(ServiceError::IdempotencyInProgress);
    }
    Ok(())
}

/// Stores a refusal's response, unless a record appeared meanwhile.
pub async fn store_refusal(
    c: &mut AnyConnection,
    r: &IdempotencyRequest,
    status: u16,
    body: &str,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    match claim::<()>(c, r, now).await {
        Ok(None) => {
            // false: a record appeared meanwhile, which is kept instead.
            store::insert(
                c,
                &r.scope,
                &r.key,
                &r.fingerprint,
                status,
                body,
                to_ms(now),
            )
            .await?;
            Ok(())
        }
        Ok(Some(_))
        | Err(ServiceError::IdempotencyKeyReused)
        | Err(ServiceError::IdempotencyInProgress) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Hash of an API token: the idempotency scope and the actor id, so the
/// token itself is never stored.
pub fn token_scope(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_request_same_fingerprint_other_body_other_fingerprint() {
        let a = IdempotencyRequest::new("s".into(), "k".into(), "POST", "/x", b"{}", 201);
        let b = IdempotencyRequest::new("s".into(), "k".into(), "POST", "/x", b"{}", 201);
        let c = IdempotencyRequest::new("s".into(), "k".into(), "POST", "/x", b"{\"a\":1}", 201);
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(a.fingerprint, c.fingerprint);
    }

    #[test]
    fn keys_must_be_1_to_255_characters() {
        assert!(check_key("").is_err());
        assert!(check_key(&"k".repeat(256)).is_err());
        assert!(check_key(&"k".repeat(255)).is_ok());
    }

    #[test]
    fn a_key_in_flight_refuses_a_second_entry_until_released() {
        let inflight = Inflight::default();
        let r = IdempotencyRequest::new("s".into(), "k".into(), "POST", "/x", b"{}", 201);
        let g = inflight.enter(&r).expect("first");
        assert!(matches!(
            inflight.enter(&r),
            Err(ServiceError::IdempotencyInProgress)
        ));
        drop(g);
        assert!(inflight.enter(&r).is_ok());
    }
}
