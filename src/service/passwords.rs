//! Password hashing and checking (argon2id) with bounded memory and CPU.
//!
//! One argon2 check with the crate's defaults (OWASP's: 19 MiB, 2 passes)
//! fills 19 MiB. Run on as many blocking threads as requests arrive, a
//! burst of sign-ins (each under every per-address limit) would take
//! hundreds of MiB at once, and the allocator would keep much of it. So:
//!
//! - At most [`MAX_CONCURRENT_CHECKS`] hashes or checks run at once (a
//!   semaphore, [`PasswordSlots::acquire`]). One that cannot start within
//!   [`MAX_WAIT`] is refused as [`Busy`]; the sign-in page answers it 503
//!   with `Retry-After`, and the attempt is not counted as a failure.
//! - Each running check fills one of the pool's memory buffers, allocated
//!   once (on first use) and reused by every later check
//!   ([`Argon2::hash_password_into_with_memory`]), so the memory argon2
//!   holds is at most `MAX_CONCURRENT_CHECKS × 19 MiB`, never returned to
//!   the allocator to be kept in per-thread arenas.
//! - A stored hash whose parameters ask for more than
//!   [`MAX_MEMORY_BLOCKS`] KiB verifies as false: no row can make a check
//!   allocate without bound.

use std::sync::Mutex;
use std::time::Duration;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use tokio::sync::Semaphore;

/// Most password hashes or checks running at once in this process.
pub const MAX_CONCURRENT_CHECKS: usize = 2;
/// Longest a check waits for its turn before it is refused as [`Busy`].
pub const MAX_WAIT: Duration = Duration::from_secs(3);
/// Largest argon2 memory a stored hash may ask for, in 1 KiB blocks (64 MiB;
/// ours ask for 19 MiB).
pub const MAX_MEMORY_BLOCKS: usize = 64 * 1024;
/// The `Retry-After` a [`Busy`] refusal suggests, in seconds.
pub const BUSY_RETRY_AFTER_SECONDS: u64 = 2;

/// Every slot was taken for [`MAX_WAIT`]: the check did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// The process's password hashing slots and their reusable memory.
pub struct PasswordSlots {
    permits: Semaphore,
    /// Memory buffers not in use; at most [`MAX_CONCURRENT_CHECKS`] exist.
    buffers: Mutex<Vec<Vec<Block>>>,
}

impl Default for PasswordSlots {
    fn default() -> Self {
        PasswordSlots {
            permits: Semaphore::new(MAX_CONCURRENT_CHECKS),
            buffers: Mutex::new(Vec::with_capacity(MAX_CONCURRENT_CHECKS)),
        }
    }
}

impl PasswordSlots {
    /// Waits up to [`MAX_WAIT`] for a free slot.
    pub async fn acquire(&self) -> Result<Slot<'_>, Busy> {
        let permit = tokio::time::timeout(MAX_WAIT, self.permits.acquire())
            .await
            .map_err(|_| Busy)?
            .map_err(|_| Busy)?;
        Ok(Slot {
            _permit: permit,
            slots: self,
        })
    }

    fn take_buffer(&self) -> Vec<Block> {
        self.buffers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    fn give_back(&self, buffer: Vec<Block>) {
        let mut buffers = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        if buffers.len() < MAX_CONCURRENT_CHECKS {
            buffers.push(buffer);
        }
    }
}

/// One slot, held until dropped: the right to run one hash or check.
pub struct Slot<'a> {
    _permit: tokio::sync::SemaphorePermit<'a>,
    slots: &'a PasswordSlots,
}

impl Slot<'_> {
    /// Checks `password` against the PHC string `stored`. A malformed
    /// stored hash, or one asking for too much memory, verifies as false.
    pub async fn verify(self, password: String, stored: String) -> bool {
        let mut buffer = self.slots.take_buffer();
        let joined = tokio::task::spawn_blocking(move || {
            let ok = verify_with(&mut buffer, password.as_bytes(), &stored);
            (ok, buffer)
        })
        .await;
        match joined {
            Ok((ok, buffer)) => {
                self.slots.give_back(buffer);
                ok
            }
            // The blocking task panicked: its buffer is gone (a new one is
            // made next time); the password does not verify.
            Err(_) => false,
        }
    }

    /// Hashes a new password (argon2id, the crate's defaults).
    pub async fn hash(self, password: String) -> Result<String, String> {
        let hashed = tokio::task::spawn_blocking(move || {
            let salt = SaltString::generate(&mut OsRng);
            Argon2::default()
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| e.to_string())
        })
        .await;
        hashed.unwrap_or_else(|e| Err(format!("could not hash: {e}")))
    }
}

/// Verifies `password` against `stored`, filling `buffer` (grown to the
/// hash's memory once, then reused) instead of allocating.
fn verify_with(buffer: &mut Vec<Block>, password: &[u8], stored: &str) -> bool {
    let Ok(hash) = PasswordHash::new(stored) else {
        return false;
    };
    let Ok(algorithm) = Algorithm::try_from(hash.algorithm) else {
        return false;
    };
    let version = match hash.version.map(Version::try_from).transpose() {
        Ok(v) => v.unwrap_or_default(),
        Err(_) => return false,
    };
    let Ok(params) = Params::try_from(&hash) else {
        return false;
    };
    let (Some(expected), Some(salt)) = (hash.hash, hash.salt) else {
        return false;
    };
    let mut salt_bytes = [0u8; 64];
    let Ok(salt) = salt.decode_b64(&mut salt_bytes) else {
        return false;
    };
    let blocks = params.block_count();
    if blocks > MAX_MEMORY_BLOCKS {
        return false;
    }
    if buffer.len() < blocks {
        buffer.resize(blocks, Block::new());
    }
    let mut out = vec![0u8; expected.len()];
    let argon2 = Argon2::new(algorithm, version, params);
    if argon2
        .hash_password_into_with_memory(password, salt, &mut out, &mut buffer[..blocks])
        .is_err()
    {
        return false;
    }
    // Constant time: how many leading bytes matched says nothing.
    out.len() == expected.len()
        && out
            .iter()
            .zip(expected.as_bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash_of(password: &str) -> String {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_reused_buffer_verifies_like_the_crate_and_refuses_a_wrong_password() {
        let stored = hash_of("correct horse battery staple");
        let mut buffer = Vec::new();
        assert!(verify_with(
            &mut buffer,
            b"correct horse battery staple",
            &stored
        ));
        let len = buffer.len();
        assert_eq!(len, Params::DEFAULT.block_count());
        assert!(!verify_with(
            &mut buffer,
            b"correct horse battery stapler",
            &stored
        ));
        assert!(verify_with(
            &mut buffer,
            b"correct horse battery staple",
            &stored
        ));
        assert_eq!(buffer.len(), len, "the buffer is reused, not grown");
    }

    #[test]
    fn a_malformed_or_greedy_stored_hash_verifies_as_false() {
        let mut buffer = Vec::new();
        assert!(!verify_with(&mut buffer, b"x", "not a hash"));
        let greedy = "$argon2id$v=19$m=4194304,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$3sVwzX2vLk6Y2qkGq0b6pDkq0T3qYp2oW0bqJmYkQ0Y";
        assert!(!verify_with(&mut buffer, b"x", greedy));
        assert!(buffer.is_empty(), "nothing was allocated for it");
    }

    #[tokio::test]
    async fn checks_beyond_the_slots_wait_and_all_finish_when_they_fit_the_wait() {
        let slots = std::sync::Arc::new(PasswordSlots::default());
        let stored = hash_of("a long enough password");
        let mut tasks = Vec::new();
        for _ in 0..4 {
            let (slots, stored) = (slots.clone(), stored.clone());
            tasks.push(tokio::spawn(async move {
                match slots.acquire().await {
                    Ok(slot) => Ok(slot.verify("a long enough password".into(), stored).await),
                    Err(busy) => Err(busy),
                }
            }));
        }
        for t in tasks {
            assert_eq!(t.await.ok(), Some(Ok(true)));
        }
        let pooled = slots.buffers.lock().map(|b| b.len()).unwrap_or(0);
        assert!(
            (1..=MAX_CONCURRENT_CHECKS).contains(&pooled),
            "{pooled} buffers"
        );
    }
}
