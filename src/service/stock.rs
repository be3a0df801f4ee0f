//! A template's stock: one unit taken from one of its shards, as the last
//! statement before a claim's `COMMIT` ([`StockTake`], taken by
//! `Service::write_taking_stock`) or in order by a bulk batch. A leaf, so
//! the write path in `super` can take a unit without importing the claims.

use rand::Rng;

use super::{Refusal, ServiceError};
use crate::domain::ids::TemplateId;
use crate::store::templates;

/// One unit of a template's stock a change still has to take, named by
/// `claims::claim_before_stock` and taken by [`StockTake::take`] as the last
/// statement before the caller's `COMMIT` (see
/// [`Service::write_taking_stock`]).
#[derive(Debug, Clone)]
pub(crate) struct StockTake {
    pub(crate) template_id: TemplateId,
    /// The shard count read with the template.
    pub(crate) shards: i64,
    /// The template's terms fingerprint read with it: a change of terms
    /// committed in between refuses the claim.
    pub(crate) terms: String,
}

impl StockTake {
    /// Takes the unit; out of stock is a refusal, so the caller's
    /// transaction rolls back everything it did before.
    pub(crate) async fn take(&self, c: &mut sqlx::AnyConnection) -> Result<(), ServiceError> {
        if take_stock(c, &self.template_id, self.shards, &self.terms, None).await? {
            Ok(())
        } else {
            Err(ServiceError::refused(
                Refusal::OutOfStock,
                "this template has no stock left",
            ))
        }
    }
}

/// Takes one unit of stock. With `start` (a bulk batch taking many units
/// in one transaction) it tries each shard once in order from `start`.
/// Without it (one claim) it first takes from a shard nobody holds,
/// starting at a random one so concurrent claims spread over different
/// rows, without waiting ([`templates::take_from_free_shard`]; a claim
/// that waited would wait for the holder's whole COMMIT); only when every
/// shard with stock is held does it queue, shard by shard, like a batch.
/// A claim holds no shard while it queues, so it cannot deadlock with a
/// batch. Bounded by the shard count read with the template (at most 17
/// statements).
pub(crate) async fn take_stock(
    c: &mut sqlx::AnyConnection,
    template_id: &TemplateId,
    shards: i64,
    terms: &str,
    start: Option<i64>,
) -> Result<bool, ServiceError> {
    let n = shards.max(1);
    let terms_now = |now: String| {
        if now == terms {
            Ok(true)
        } else {
            Err(ServiceError::refused(
                Refusal::TemplateInactive,
                "the template's terms changed while this claim ran; claim again",
            ))
        }
    };
    let start = match start {
        Some(start) => start,
        None => {
            let start = rand::rng().random_range(0..n);
            if let Some(now) = templates::take_from_free_shard(c, template_id, start).await? {
                return terms_now(now);
            }
            start
        }
    };
    for i in 0..n {
        if let Some(now) = templates::take_from_shard(c, template_id, (start + i) % n).await? {
            return terms_now(now);
        }
    }
    Ok(false)
}
