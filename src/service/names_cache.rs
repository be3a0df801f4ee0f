//! This instance's cache of the category names ([`NamesCache`], held by
//! `Service`, read and cleared by `super::categories`). A leaf.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::i18n::names::CategoryNames;

/// How long an instance reuses the names it read.
pub const CACHE_TTL: Duration = Duration::from_secs(10);

/// The cached names and when they were read.
#[derive(Default)]
pub struct NamesCache(std::sync::Mutex<Option<(Instant, Arc<CategoryNames>)>>);

impl NamesCache {
    pub(super) fn fresh(&self) -> Option<Arc<CategoryNames>> {
        let guard = self.0.lock().ok()?;
        guard
            .as_ref()
            .filter(|(at, _)| at.elapsed() < CACHE_TTL)
            .map(|(_, names)| names.clone())
    }

    pub(super) fn put(&self, names: Arc<CategoryNames>) {
        if let Ok(mut guard) = self.0.lock() {
            *guard = Some((Instant::now(), names));
        }
    }

    pub(super) fn clear(&self) {
        if let Ok(mut guard) = self.0.lock() {
            *guard = None;
        }
    }
}
