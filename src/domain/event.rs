//! What an event row says, read for people: its `action` word as a domain
//! type, and who its `actor` is.
//!
//! Event rows store plain words (`action`, `actor`) so the audit log stays
//! readable in SQL and stable across versions; timelines and the audit
//! page read them through here and name each in the catalog, so a support
//! agent reads "付款时间已过，订单自动关闭" rather than
//! `checkout_lock_lapsed`, and "到期任务" rather than `job:expiry-wheel`.

/// Every `events.action` word the service writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventAction {
    // Coupons
    Claim,
    Compensation,
    CheckoutLock,
    Lock,
    Use,
    CancelRelease,
    RefundRelease,
    ReleaseExpired,
    SwapLock,
    Expire,
    ZombieRelease,
    ForceRelease,
    StaffRelease,
    Invalidate,
    Relock,
    MarkUsed,
    Unarchive,
    /// A coupon created by redeeming a code.
    Redeem,
    // Orders
    Create,
    Pay,
    DepositPayment,
    FinalPayment,
    Cancel,
    Refund,
    /// Units of some lines refunded; the order keeps its status until its
    /// last unit.
    PartialRefund,
    CheckoutLockLapsed,
    PresaleTimeout,
    RelockCoupon,
    RelinkCoupon,
    MarkCouponUsed,
    /// Support returned a coupon its order's refunds by line should have
    /// returned.
    ReturnCoupon,
    ReleaseCoupon,
    ForceReleaseCoupon,
    /// The customer asked for support from the self-check page.
    SupportRequested,
    /// Support marked the customer's request handled.
    SupportRequestHandled,
}

impl EventAction {
    pub const ALL: [EventAction; 35] = [
        EventAction::Claim,
        EventAction::Compensation,
        EventAction::CheckoutLock,
        EventAction::Lock,
        EventAction::Use,
        EventAction::CancelRelease,
        EventAction::RefundRelease,
        EventAction::ReleaseExpired,
        EventAction::SwapLock,
        EventAction::Expire,
        EventAction::ZombieRelease,
        EventAction::ForceRelease,
        EventAction::StaffRelease,
        EventAction::Invalidate,
        EventAction::Relock,
        EventAction::MarkUsed,
        EventAction::Unarchive,
        EventAction::Create,
        EventAction::Pay,
        EventAction::DepositPayment,
        EventAction::FinalPayment,
        EventAction::Cancel,
        EventAction::Refund,
        EventAction::PartialRefund,
        EventAction::CheckoutLockLapsed,
        EventAction::PresaleTimeout,
        EventAction::RelockCoupon,
        EventAction::RelinkCoupon,
        EventAction::MarkCouponUsed,
        EventAction::ReturnCoupon,
        EventAction::ReleaseCoupon,
        EventAction::ForceReleaseCoupon,
        EventAction::Redeem,
        EventAction::SupportRequested,
        EventAction::SupportRequestHandled,
    ];

    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            EventAction::Claim => "claim",
            EventAction::Compensation => "compensation",
            EventAction::CheckoutLock => "checkout_lock",
            EventAction::Lock => "lock",
            EventAction::Use => "use",
            EventAction::CancelRelease => "cancel_release",
            EventAction::RefundRelease => "refund_release",
            EventAction::ReleaseExpired => "release_expired",
            EventAction::SwapLock => "swap_lock",
            EventAction::Expire => "expire",
            EventAction::ZombieRelease => "zombie_release",
            EventAction::ForceRelease => "force_release",
            EventAction::StaffRelease => "staff_release",
            EventAction::Invalidate => "invalidate",
            EventAction::Relock => "relock",
            EventAction::MarkUsed => "mark_used",
            EventAction::Unarchive => "unarchive",
            EventAction::Create => "create",
            EventAction::Pay => "pay",
            EventAction::DepositPayment => "deposit_payment",
            EventAction::FinalPayment => "final_payment",
            EventAction::Cancel => "cancel",
            EventAction::Refund => "refund",
            EventAction::PartialRefund => "partial_refund",
            EventAction::CheckoutLockLapsed => "checkout_lock_lapsed",
            EventAction::PresaleTimeout => "presale_timeout",
            EventAction::RelockCoupon => "relock_coupon",
            EventAction::RelinkCoupon => "relink_coupon",
            EventAction::MarkCouponUsed => "mark_coupon_used",
            EventAction::ReturnCoupon => "return_coupon",
            EventAction::ReleaseCoupon => "release_coupon",
            EventAction::ForceReleaseCoupon => "force_release_coupon",
            EventAction::Redeem => "redeem",
            EventAction::SupportRequested => "support_requested",
            EventAction::SupportRequestHandled => "support_request_handled",
        }
    }

    /// The stored word back; `None` for a word this version does not write.
    pub fn parse(s: &str) -> Option<Self> {
        EventAction::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// The catalog key of the action's words for people.
    pub fn label_key(self) -> &'static str {
        match self {
            EventAction::Claim => "event-action-claim",
            EventAction::Compensation => "event-action-compensation",
            EventAction::CheckoutLock => "event-action-checkout_lock",
            EventAction::Lock => "event-action-lock",
            EventAction::Use => "event-action-use",
            EventAction::CancelRelease => "event-action-cancel_release",
            EventAction::RefundRelease => "event-action-refund_release",
            EventAction::ReleaseExpired => "event-action-release_expired",
            EventAction::SwapLock => "event-action-swap_lock",
            EventAction::Expire => "event-action-expire",
            EventAction::ZombieRelease => "event-action-zombie_release",
            EventAction::ForceRelease => "event-action-force_release",
            EventAction::StaffRelease => "event-action-staff_release",
            EventAction::Invalidate => "event-action-invalidate",
            EventAction::Relock => "event-action-relock",
            EventAction::MarkUsed => "event-action-mark_used",
            EventAction::Unarchive => "event-action-unarchive",
            EventAction::Create => "event-action-create",
            EventAction::Pay => "event-action-pay",
            EventAction::DepositPayment => "event-action-deposit_payment",
            EventAction::FinalPayment => "event-action-final_payment",
            EventAction::Cancel => "event-action-cancel",
            EventAction::Refund => "event-action-refund",
            EventAction::PartialRefund => "event-action-partial_refund",
            EventAction::CheckoutLockLapsed => "event-action-checkout_lock_lapsed",
            EventAction::PresaleTimeout => "event-action-presale_timeout",
            EventAction::RelockCoupon => "event-action-relock_coupon",
            EventAction::RelinkCoupon => "event-action-relink_coupon",
            EventAction::MarkCouponUsed => "event-action-mark_coupon_used",
            EventAction::ReturnCoupon => "event-action-return_coupon",
            EventAction::ReleaseCoupon => "event-action-release_coupon",
            EventAction::ForceReleaseCoupon => "event-action-force_release_coupon",
            EventAction::Redeem => "event-action-redeem",
            EventAction::SupportRequested => "event-action-support_requested",
            EventAction::SupportRequestHandled => "event-action-support_request_handled",
        }
    }
}

/// A background job, as its actor word names it (`job:<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Job {
    ExpiryWheel,
    ExpirySweep,
    CheckoutLapse,
    PresaleTimeout,
    ZombieReaper,
    Reconcile,
    Archive,
    WebhookDispatcher,
}

impl Job {
    pub const ALL: [Job; 8] = [
        Job::ExpiryWheel,
        Job::ExpirySweep,
        Job::CheckoutLapse,
        Job::PresaleTimeout,
        Job::ZombieReaper,
        Job::Reconcile,
        Job::Archive,
        Job::WebhookDispatcher,
    ];

    /// The name after `job:`.
    pub fn name(self) -> &'static str {
        match self {
            Job::ExpiryWheel => "expiry-wheel",
            Job::ExpirySweep => "expiry-sweep",
            Job::CheckoutLapse => "checkout-lapse",
            Job::PresaleTimeout => "presale-timeout",
            Job::ZombieReaper => "zombie-reaper",
            Job::Reconcile => "reconcile",
            Job::Archive => "archive",
            Job::WebhookDispatcher => "webhook-dispatcher",
        }
    }

    /// The catalog key of the job's name for people.
    pub fn label_key(self) -> &'static str {
        match self {
            Job::ExpiryWheel => "actor-job-expiry-wheel",
            Job::ExpirySweep => "actor-job-expiry-sweep",
            Job::CheckoutLapse => "actor-job-checkout-lapse",
            Job::PresaleTimeout => "actor-job-presale-timeout",
            Job::ZombieReaper => "actor-job-zombie-reaper",
            Job::Reconcile => "actor-job-reconcile",
            Job::Archive => "actor-job-archive",
            Job::WebhookDispatcher => "actor-job-webhook-dispatcher",
        }
    }
}

/// Who an event's `actor` word names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor<'a> {
    /// `staff:<name>`: a console user.
    Staff(&'a str),
    /// `api:<token prefix>`: a shop back end with an API token.
    Api(&'a str),
    /// `job:<name>`: a background job.
    Job(Job),
    /// `demo:seed`: the demo data loader.
    Demo,
    /// `cli`: a `couponkeeper` command run on the server (staff accounts).
    Cli,
    /// `customer:self-check`: the customer, on their self-check page.
    Customer,
    /// Anything else (a benchmark, an older version): shown as stored.
    Other(&'a str),
}

impl<'a> Actor<'a> {
    pub fn parse(raw: &'a str) -> Actor<'a> {
        match raw.split_once(':') {
            Some(("staff", name)) if !name.is_empty() => Actor::Staff(name),
            Some(("api", token)) => Actor::Api(token),
            Some(("job", name)) => Job::ALL
                .into_iter()
                .find(|j| j.name() == name)
                .map_or(Actor::Other(raw), Actor::Job),
            Some(("demo", _)) => Actor::Demo,
            Some(("customer", _)) => Actor::Customer,
            None if raw == "cli" => Actor::Cli,
            _ => Actor::Other(raw),
        }
    }
}

/// Reasons the system itself writes (the final payment, not a person): the
/// stored text stays English and stable (the API and the audit CSV show
/// it as written); a page shows it in its reader's language through
/// [`system_reason_key`].
pub mod system_reasons {
    /// A coupon that ended before the final payment, under `strict`.
    pub const EXPIRED_BEFORE_FINAL_STRICT: &str =
        "expired before the final payment (strict policy)";
    /// The same under `swap_or_compensate`.
    pub const EXPIRED_BEFORE_FINAL_SWAP: &str =
        "expired before the final payment (swap_or_compensate policy)";
    /// The compensation the final payment deducted.
    pub const FINAL_PAYMENT_DEDUCTION: &str =
        "presale coupon expired before the final payment and no equivalent coupon was available";
    /// The compensation coupon the final payment gave.
    pub const FINAL_PAYMENT_COUPON: &str = "presale coupon expired before the final payment and no equivalent coupon was available; compensated with a coupon of the same value";
    /// The reversal of a final payment's compensation when its order is
    /// refunded in full.
    pub const REFUND_REVERSAL: &str =
        "the order was refunded in full: the compensation of its final payment is reversed";
    /// The start of a swapped-in coupon's reason (the expired coupon's id
    /// follows).
    pub const REPLACES_EXPIRED_PREFIX: &str = "replaces expired coupon ";
}

/// The catalog key of a reason the system wrote (see [`system_reasons`]),
/// and of those jobs wrote as English text before they left the reason to
/// the action's own words; `None` for a person's own words.
pub fn system_reason_key(reason: &str) -> Option<&'static str> {
    use system_reasons::*;
    match reason {
        "the checkout lock lapsed before payment" => Some("event-action-checkout_lock_lapsed"),
        "the final-payment window ended without payment" => Some("event-action-presale_timeout"),
        EXPIRED_BEFORE_FINAL_STRICT => Some("reason-expired-before-final-strict"),
        EXPIRED_BEFORE_FINAL_SWAP => Some("reason-expired-before-final-swap"),
        FINAL_PAYMENT_DEDUCTION => Some("reason-final-payment-deduction"),
        FINAL_PAYMENT_COUPON => Some("reason-final-payment-coupon"),
        REFUND_REVERSAL => Some("reason-refund-reversal"),
        r if r.starts_with(REPLACES_EXPIRED_PREFIX) => Some("reason-replaces-expired-coupon"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_the_system_writes_has_words_in_the_catalog() {
        use system_reasons::*;
        for (reason, key) in [
            (
                EXPIRED_BEFORE_FINAL_STRICT,
                "reason-expired-before-final-strict",
            ),
            (
                EXPIRED_BEFORE_FINAL_SWAP,
                "reason-expired-before-final-swap",
            ),
            (FINAL_PAYMENT_DEDUCTION, "reason-final-payment-deduction"),
            (FINAL_PAYMENT_COUPON, "reason-final-payment-coupon"),
            (REFUND_REVERSAL, "reason-refund-reversal"),
            (
                "replaces expired coupon cpn_0123",
                "reason-replaces-expired-coupon",
            ),
        ] {
            assert_eq!(system_reason_key(reason), Some(key), "{reason}");
            assert_ne!(crate::i18n::Lang::Zh.t(key), key, "{key} is in the catalog");
        }
        assert_eq!(system_reason_key("customer asked"), None);
    }

    #[test]
    fn every_action_word_reads_back_as_itself() {
        for a in EventAction::ALL {
            assert_eq!(EventAction::parse(a.as_str()), Some(a));
        }
        assert_eq!(EventAction::parse("shipped"), None);
    }

    #[test]
    fn actors_are_told_apart_by_their_prefix() {
        assert_eq!(Actor::parse("staff:xiaoli"), Actor::Staff("xiaoli"));
        assert_eq!(Actor::parse("api:0123abcd4567"), Actor::Api("0123abcd4567"));
        assert_eq!(
            Actor::parse("job:expiry-wheel"),
            Actor::Job(Job::ExpiryWheel)
        );
        assert_eq!(Actor::parse("job:unknown"), Actor::Other("job:unknown"));
        assert_eq!(Actor::parse("demo:seed"), Actor::Demo);
        assert_eq!(Actor::parse("cli"), Actor::Cli);
        assert_eq!(Actor::parse("bench"), Actor::Other("bench"));
        assert_eq!(Actor::parse("staff:"), Actor::Other("staff:"));
    }
}
