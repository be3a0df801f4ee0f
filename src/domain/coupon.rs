//! The coupon state machine and the rules that read a coupon at a moment.
//!
//! ```text
//! available --lock--> locked --use--> used
//!     |                 |               |
//!     |                 +--release----> available   (while valid)
//!     |                 +--release----> expired     (after ends_at)
//!     +--expire-------> expired         used --refund--> available | expired
//!     +--invalidate---> invalidated
//! ```
//! Every write to a coupon's status goes through [`check_transition`]; the
//! store's conditional update (`WHERE status = <from>`) then decides races.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Stored (and effective) status of a coupon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CouponStatus {
    Available,
    Locked,
    Used,
    Expired,
    Invalidated,
}

impl CouponStatus {
    pub const ALL: [CouponStatus; 5] = [
        CouponStatus::Available,
        CouponStatus::Locked,
        CouponStatus::Used,
        CouponStatus::Expired,
        CouponStatus::Invalidated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CouponStatus::Available => "available",
            CouponStatus::Locked => "locked",
            CouponStatus::Used => "used",
            CouponStatus::Expired => "expired",
            CouponStatus::Invalidated => "invalidated",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        CouponStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// The catalog key of the status's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            CouponStatus::Available => "coupon-status-available",
            CouponStatus::Locked => "coupon-status-locked",
            CouponStatus::Used => "coupon-status-used",
            CouponStatus::Expired => "coupon-status-expired",
            CouponStatus::Invalidated => "coupon-status-invalidated",
        }
    }

    /// Whether staff may release the coupon: only a lock can be released.
    pub fn can_release(self) -> bool {
        self == CouponStatus::Locked
    }

    /// Whether staff may invalidate the coupon: only one still available.
    pub fn can_invalidate(self) -> bool {
        check_transition(self, CouponStatus::Invalidated).is_ok()
    }

    /// No transition leaves these except a refund of a `used` coupon.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            CouponStatus::Used | CouponStatus::Expired | CouponStatus::Invalidated
        )
    }
}

impl std::fmt::Display for CouponStatus {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a coupon came to its holder, as stored in `coupons.source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CouponSource {
    /// Claimed by the customer from a template.
    Claim,
    /// Given by support or the final payment, outside any template's stock.
    Compensation,
    /// Redeemed with a code (兑换码) of one of the template's code batches.
    Code,
}

impl CouponSource {
    pub const ALL: [CouponSource; 3] = [
        CouponSource::Claim,
        CouponSource::Compensation,
        CouponSource::Code,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CouponSource::Claim => "claim",
            CouponSource::Compensation => "compensation",
            CouponSource::Code => "code",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        CouponSource::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The catalog key of the source's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            CouponSource::Claim => "coupon-source-claim",
            CouponSource::Compensation => "coupon-source-compensation",
            CouponSource::Code => "coupon-source-code",
        }
    }
}

impl std::fmt::Display for CouponSource {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status change that the state machine does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalTransition {
    pub from: CouponStatus,
    pub to: CouponStatus,
}

impl std::fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "coupon cannot go from {} to {}",
            self.from.as_str(),
            self.to.as_str()
        )
    }
}

/// The one function that knows which coupon transitions exist.
pub fn check_transition(from: CouponStatus, to: CouponStatus) -> Result<(), IllegalTransition> {
    use CouponStatus::*;
    let allowed = matches!(
        (from, to),
        (Available, Locked)
            | (Locked, Used)
            | (Available, Expired)
            | (Locked, Expired)
            | (Available, Invalidated)
            | (Locked, Available)
            | (Used, Available)
            | (Used, Expired)
    );
    if allowed {
        Ok(())
    } else {
        Err(IllegalTransition { from, to })
    }
}

/// The status a reader must see: an `available` coupon past its end reads
/// `expired` whether or not a job has written that yet. Pure; no write.
pub fn effective_status(
    stored: CouponStatus,
    ends_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> CouponStatus {
    if stored == CouponStatus::Available && now >= ends_at {
        CouponStatus::Expired
    } else {
        stored
    }
}

/// Where a coupon goes when its lock ends without payment (cancel, refund,
/// timeout, staff release) or when a paid order is refunded: back to
/// `available` while it is still valid, otherwise `expired`.
pub fn release_target(ends_at: DateTime<Utc>, now: DateTime<Utc>) -> CouponStatus {
    if now < ends_at {
        CouponStatus::Available
    } else {
        CouponStatus::Expired
    }
}

/// Why a coupon cannot be put on an order right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    NotOwned,
    NotAvailable,
    Expired,
    NotStarted,
}

/// The time-and-owner half of validation (the money half is in
/// [`crate::domain::discount`]): owner, effective status, validity window.
pub fn check_usable(
    owner_matches: bool,
    stored: CouponStatus,
    starts_at: DateTime<Utc>,
    ends_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), Unusable> {
    if !owner_matches {
        return Err(Unusable::NotOwned);
    }
    match effective_status(stored, ends_at, now) {
        CouponStatus::Available => {}
        CouponStatus::Expired => return Err(Unusable::Expired),
        _ => return Err(Unusable::NotAvailable),
    }
    if now < starts_at {
        return Err(Unusable::NotStarted);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn only_the_listed_transitions_are_allowed() {
        use CouponStatus::*;
        let mut allowed = Vec::new();
        for from in CouponStatus::ALL {
            for to in CouponStatus::ALL {
                if check_transition(from, to).is_ok() {
                    allowed.push((from, to));
                }
            }
        }
        assert_eq!(
            allowed,
            vec![
                (Available, Locked),
                (Available, Expired),
                (Available, Invalidated),
                (Locked, Available),
                (Locked, Used),
                (Locked, Expired),
                (Used, Available),
                (Used, Expired),
            ]
        );
    }

    #[test]
    fn only_a_locked_coupon_can_be_released() {
        let releasable: Vec<CouponStatus> = CouponStatus::ALL
            .into_iter()
            .filter(|s| s.can_release())
            .collect();
        assert_eq!(releasable, vec![CouponStatus::Locked]);
    }

    #[test]
    fn only_an_available_coupon_can_be_invalidated() {
        let invalidatable: Vec<CouponStatus> = CouponStatus::ALL
            .into_iter()
            .filter(|s| s.can_invalidate())
            .collect();
        assert_eq!(invalidatable, vec![CouponStatus::Available]);
    }

    #[test]
    fn an_available_coupon_past_its_end_reads_expired() {
        let now = Utc::now();
        let end = now - Duration::seconds(1);
        assert_eq!(
            effective_status(CouponStatus::Available, end, now),
            CouponStatus::Expired
        );
        assert_eq!(
            effective_status(CouponStatus::Locked, end, now),
            CouponStatus::Locked
        );
        assert_eq!(
            effective_status(CouponStatus::Available, now, now),
            CouponStatus::Expired,
            "ends_at is exclusive"
        );
    }

    #[test]
    fn release_returns_a_valid_coupon_and_expires_a_dead_one() {
        let now = Utc::now();
        assert_eq!(
            release_target(now + Duration::seconds(1), now),
            CouponStatus::Available
        );
        assert_eq!(release_target(now, now), CouponStatus::Expired);
    }

    #[test]
    fn usability_checks_owner_then_status_then_start() {
        let now = Utc::now();
        let later = now + Duration::hours(1);
        assert_eq!(
            check_usable(false, CouponStatus::Available, now, later, now),
            Err(Unusable::NotOwned)
        );
        assert_eq!(
            check_usable(true, CouponStatus::Locked, now, later, now),
            Err(Unusable::NotAvailable)
        );
        assert_eq!(
            check_usable(true, CouponStatus::Available, now, now, now),
            Err(Unusable::Expired)
        );
        assert_eq!(
            check_usable(
                true,
                CouponStatus::Available,
                later,
                later + Duration::hours(1),
                now
            ),
            Err(Unusable::NotStarted)
        );
        assert_eq!(
            check_usable(true, CouponStatus::Available, now, later, now),
            Ok(())
        );
    }
}
