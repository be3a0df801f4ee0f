//! Presale campaigns (预售场次): the final-payment policy, the compensation
//! mode, the final-payment window and the phase a campaign is in. The
//! decision the policy drives at the final payment is in
//! [`super::final_payment`].

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::FieldError;

/// What happens at final payment to a coupon locked at deposit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// 定金锁定: the lock survives the coupon's own expiry.
    Lock,
    /// 严格过期: an expired coupon gives no discount.
    Strict,
    /// 换券或补偿: an expired coupon is swapped for the user's best equivalent
    /// coupon of the same kind, else compensated in cash terms.
    SwapOrCompensate,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Lock => "lock",
            Policy::Strict => "strict",
            Policy::SwapOrCompensate => "swap_or_compensate",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "lock" => Some(Policy::Lock),
            "strict" => Some(Policy::Strict),
            "swap_or_compensate" => Some(Policy::SwapOrCompensate),
            _ => None,
        }
    }
}

impl std::fmt::Display for Policy {
    /// The stored word, as messages and logs write it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a `swap_or_compensate` campaign makes up for an expired coupon
/// when no replacement is found at the final payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CompensationMode {
    /// Taken off the final payment (the order's `compensation_cents`).
    #[default]
    Deduction,
    /// A new compensation coupon of the same value, issued to the customer
    /// in the final payment's transaction; the final payment is not reduced.
    Coupon,
}

impl CompensationMode {
    pub const ALL: [CompensationMode; 2] = [CompensationMode::Deduction, CompensationMode::Coupon];

    pub fn as_str(self) -> &'static str {
        match self {
            CompensationMode::Deduction => "deduction",
            CompensationMode::Coupon => "coupon",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "deduction" => Some(CompensationMode::Deduction),
            "coupon" => Some(CompensationMode::Coupon),
            _ => None,
        }
    }
}

impl Policy {
    pub const ALL: [Policy; 3] = [Policy::Lock, Policy::Strict, Policy::SwapOrCompensate];
}

/// Where a campaign stands at a moment, by its final-payment window: the
/// console's list filters by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CampaignPhase {
    /// Before the window: deposits are taken, no final payment yet.
    BeforeFinalPayment,
    /// Inside the window: final payments are taken.
    FinalPaymentOpen,
    /// After the window.
    Ended,
}

impl CampaignPhase {
    pub const ALL: [CampaignPhase; 3] = [
        CampaignPhase::BeforeFinalPayment,
        CampaignPhase::FinalPaymentOpen,
        CampaignPhase::Ended,
    ];

    /// The word of a list address (`?phase=`).
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignPhase::BeforeFinalPayment => "before_final_payment",
            CampaignPhase::FinalPaymentOpen => "final_payment_open",
            CampaignPhase::Ended => "ended",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        CampaignPhase::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// The catalog key of the phase's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            CampaignPhase::BeforeFinalPayment => "campaign-phase-before-final-payment",
            CampaignPhase::FinalPaymentOpen => "campaign-phase-final-payment-open",
            CampaignPhase::Ended => "campaign-phase-ended",
        }
    }

    /// The phase of `window` at `now`.
    pub fn at(window: &PaymentWindow, now: DateTime<Utc>) -> Self {
        if now < window.starts {
            CampaignPhase::BeforeFinalPayment
        } else if now < window.ends {
            CampaignPhase::FinalPaymentOpen
        } else {
            CampaignPhase::Ended
        }
    }
}

/// The final-payment window `[starts, ends)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaymentWindow {
    pub starts: DateTime<Utc>,
    pub ends: DateTime<Utc>,
}

impl PaymentWindow {
    pub fn new(starts: DateTime<Utc>, ends: DateTime<Utc>) -> Result<Self, FieldError> {
        if ends <= starts {
            return Err(FieldError::new(
                "final_payment_ends_at",
                "must be after final_payment_starts_at",
            ));
        }
        Ok(Self { starts, ends })
    }

    pub fn contains(&self, t: DateTime<Utc>) -> bool {
        self.starts <= t && t < self.ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaigns_phase_follows_its_final_payment_window() {
        let at = |s: &str| crate::domain::time::parse_rfc3339(s).unwrap_or_default();
        let w = PaymentWindow {
            starts: at("2026-11-11T00:00:00Z"),
            ends: at("2026-11-12T00:00:00Z"),
        };
        for (now, phase) in [
            ("2026-11-10T23:59:59Z", CampaignPhase::BeforeFinalPayment),
            ("2026-11-11T00:00:00Z", CampaignPhase::FinalPaymentOpen),
            ("2026-11-11T23:59:59Z", CampaignPhase::FinalPaymentOpen),
            ("2026-11-12T00:00:00Z", CampaignPhase::Ended),
        ] {
            assert_eq!(CampaignPhase::at(&w, at(now)), phase, "{now}");
            assert_eq!(CampaignPhase::parse(phase.as_str()), Some(phase));
            assert!(crate::i18n::has(phase.label_key()));
        }
        assert_eq!(CampaignPhase::parse("soon"), None);
    }
}
