//! How an operation fails: a business refusal ([`Refusal`], 409 with its
//! code) or another [`ServiceError`] (bad input, not found, forbidden,
//! conflict, the database). A leaf: every operation module returns these,
//! and `Service` itself (in `super`) is built from those modules.

use crate::domain::FieldError;
use crate::domain::coupon::IllegalTransition;
use crate::domain::final_payment::CouponLockMismatch;
use crate::domain::order::IllegalOrderTransition;
use crate::store::DbErrorSource;
use crate::store::coupons::ChangeError;
use crate::store::orders::OrderChangeError;

/// A business refusal: the request was understood but the rules say no.
/// Answers 409 with `code()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    OutOfStock,
    ClaimLimitReached,
    TemplateInactive,
    CouponNotOwned,
    CouponNotAvailable,
    CouponExpired,
    CouponNotStarted,
    ThresholdNotMet,
    CouponNotApplicable,
    OrderExists,
    OutsidePaymentWindow,
    CouponLockMismatch,
    OrderActive,
    /// The order is not in a status that allows this action.
    InvalidOrderStatus,
    /// A normal-order action on a presale order or the reverse.
    OrderKindMismatch,
    /// A normal order's checkout lock has lapsed; the order will be closed.
    CheckoutLockExpired,
    /// A capped staff member would exceed a compensation cap.
    CompensationLimitExceeded,
    /// The order named in a request belongs to another user.
    OrderNotOwned,
    /// A repair whose facts do not (or no longer) call for it.
    RepairNotApplicable,
    /// A template edit that would change what issued coupons mean, or
    /// lower the stock.
    EditNotAllowed,
    /// A campaign change after its final-payment window opened.
    CampaignWindowOpen,
    /// A redeem code that was redeemed before.
    CodeAlreadyRedeemed,
    /// A code batch's codes asked for while it is still being generated
    /// (or after its generation failed).
    CodeBatchNotReady,
    /// A refund id the order already used, with other lines or reason.
    RefundExists,
    /// More units than are left to refund on a line.
    RefundExceedsOrder,
    /// Coupons that may not go on one order together.
    CouponsNotCombinable,
    /// The discount would pass its template's budget.
    BudgetExhausted,
    /// A coupon named as one of an order's coupons that the order does
    /// not hold (nor held before a replacement).
    CouponNotOnOrder,
}

impl Refusal {
    /// Every refusal, for the catalog test.
    pub const ALL: [Refusal; 28] = [
        Refusal::OutOfStock,
        Refusal::ClaimLimitReached,
        Refusal::TemplateInactive,
        Refusal::CouponNotOwned,
        Refusal::CouponNotAvailable,
        Refusal::CouponExpired,
        Refusal::CouponNotStarted,
        Refusal::ThresholdNotMet,
        Refusal::CouponNotApplicable,
        Refusal::OrderExists,
        Refusal::OutsidePaymentWindow,
        Refusal::CouponLockMismatch,
        Refusal::OrderActive,
        Refusal::InvalidOrderStatus,
        Refusal::OrderKindMismatch,
        Refusal::CheckoutLockExpired,
        Refusal::CompensationLimitExceeded,
        Refusal::OrderNotOwned,
        Refusal::RepairNotApplicable,
        Refusal::EditNotAllowed,
        Refusal::CampaignWindowOpen,
        Refusal::CodeAlreadyRedeemed,
        Refusal::CodeBatchNotReady,
        Refusal::RefundExists,
        Refusal::RefundExceedsOrder,
        Refusal::CouponsNotCombinable,
        Refusal::BudgetExhausted,
        Refusal::CouponNotOnOrder,
    ];

    /// The catalog key of the refusal's message, in a customer's words.
    pub fn message_key(self) -> &'static str {
        match self {
            Refusal::OutOfStock => "refusal-out_of_stock",
            Refusal::ClaimLimitReached => "refusal-claim_limit_reached",
            Refusal::TemplateInactive => "refusal-template_inactive",
            Refusal::CouponNotOwned => "refusal-coupon_not_owned",
            Refusal::CouponNotAvailable => "refusal-coupon_not_available",
            Refusal::CouponExpired => "refusal-coupon_expired",
            Refusal::CouponNotStarted => "refusal-coupon_not_started",
            Refusal::ThresholdNotMet => "refusal-threshold_not_met",
            Refusal::CouponNotApplicable => "refusal-coupon_not_applicable",
            Refusal::OrderExists => "refusal-order_exists",
            Refusal::OutsidePaymentWindow => "refusal-outside_payment_window",
            Refusal::CouponLockMismatch => "refusal-coupon_lock_mismatch",
            Refusal::OrderActive => "refusal-order_active",
            Refusal::InvalidOrderStatus => "refusal-invalid_order_status",
            Refusal::OrderKindMismatch => "refusal-order_kind_mismatch",
            Refusal::CheckoutLockExpired => "refusal-checkout_lock_expired",
            Refusal::CompensationLimitExceeded => "refusal-compensation_limit_exceeded",
            Refusal::OrderNotOwned => "refusal-order_not_owned",
            Refusal::RepairNotApplicable => "refusal-repair_not_applicable",
            Refusal::EditNotAllowed => "refusal-edit_not_allowed",
            Refusal::CampaignWindowOpen => "refusal-campaign_window_open",
            Refusal::CodeAlreadyRedeemed => "refusal-code_already_redeemed",
            Refusal::CodeBatchNotReady => "refusal-code_batch_not_ready",
            Refusal::RefundExists => "refusal-refund_exists",
            Refusal::RefundExceedsOrder => "refusal-refund_exceeds_order",
            Refusal::CouponsNotCombinable => "refusal-coupons_not_combinable",
            Refusal::BudgetExhausted => "refusal-budget_exhausted",
            Refusal::CouponNotOnOrder => "refusal-coupon_not_on_order",
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Refusal::OutOfStock => "out_of_stock",
            Refusal::ClaimLimitReached => "claim_limit_reached",
            Refusal::TemplateInactive => "template_inactive",
            Refusal::CouponNotOwned => "coupon_not_owned",
            Refusal::CouponNotAvailable => "coupon_not_available",
            Refusal::CouponExpired => "coupon_expired",
            Refusal::CouponNotStarted => "coupon_not_started",
            Refusal::ThresholdNotMet => "threshold_not_met",
            Refusal::CouponNotApplicable => "coupon_not_applicable",
            Refusal::OrderExists => "order_exists",
            Refusal::OutsidePaymentWindow => "outside_payment_window",
            Refusal::CouponLockMismatch => "coupon_lock_mismatch",
            Refusal::OrderActive => "order_active",
            Refusal::InvalidOrderStatus => "invalid_order_status",
            Refusal::OrderKindMismatch => "order_kind_mismatch",
            Refusal::CheckoutLockExpired => "checkout_lock_expired",
            Refusal::CompensationLimitExceeded => "compensation_limit_exceeded",
            Refusal::OrderNotOwned => "order_not_owned",
            Refusal::RepairNotApplicable => "repair_not_applicable",
            Refusal::EditNotAllowed => "edit_not_allowed",
            Refusal::CampaignWindowOpen => "campaign_window_open",
            Refusal::CodeAlreadyRedeemed => "code_already_redeemed",
            Refusal::CodeBatchNotReady => "code_batch_not_ready",
            Refusal::RefundExists => "refund_exists",
            Refusal::RefundExceedsOrder => "refund_exceeds_order",
            Refusal::CouponsNotCombinable => "coupons_not_combinable",
            Refusal::BudgetExhausted => "budget_exhausted",
            Refusal::CouponNotOnOrder => "coupon_not_on_order",
        }
    }
}

/// A refusal's case, machine-readable, where a caller must act
/// differently on the cases of one code: so far only the coupon of a
/// `coupon_lock_mismatch`, not locked at all or locked to another order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalCause {
    NotLocked,
    LockedToAnotherOrder,
}

impl RefusalCause {
    /// The error body's `detail`.
    pub fn code(self) -> &'static str {
        match self {
            RefusalCause::NotLocked => "not_locked",
            RefusalCause::LockedToAnotherOrder => "locked_to_another_order",
        }
    }

    /// The catalog key of what the customer should do about it, said
    /// after the refusal's sentence.
    pub fn message_key(self) -> &'static str {
        match self {
            RefusalCause::NotLocked => "refusal-detail-not-locked",
            RefusalCause::LockedToAnotherOrder => "refusal-detail-locked-to-another-order",
        }
    }
}

impl From<CouponLockMismatch> for RefusalCause {
    fn from(m: CouponLockMismatch) -> Self {
        match m {
            CouponLockMismatch::NotLocked => RefusalCause::NotLocked,
            CouponLockMismatch::LockedToAnotherOrder => RefusalCause::LockedToAnotherOrder,
        }
    }
}

/// Everything a service operation can answer besides success.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{0}")]
    Invalid(FieldError),
    #[error("{what} {id:?} not found")]
    NotFound { what: &'static str, id: String },
    #[error("{message}")]
    Refused {
        refusal: Refusal,
        message: String,
        /// What the refusal is about, in the catalog's words (which coupon,
        /// which clash), said after the refusal's sentence.
        detail: Option<crate::i18n::Msg>,
        /// Which case of the refusal this is, for a program to act on
        /// (the error body's `detail`).
        cause: Option<RefusalCause>,
    },
    /// The caller's role does not allow this action (403 `forbidden`).
    #[error("{0}")]
    Forbidden(String),
    #[error("this Idempotency-Key was used with a different request")]
    IdempotencyKeyReused,
    #[error("a request with this Idempotency-Key is still running")]
    IdempotencyInProgress,
    /// A transition the state machine forbids was attempted: a bug, not a
    /// user error; reported as a refusal so nothing half-done is kept.
    #[error("{0}")]
    IllegalTransition(String),
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
}

impl ServiceError {
    /// Whether the database itself cannot serve now (see
    /// [`crate::store::is_unavailable`]), as opposed to a refusal of this
    /// one operation: jobs stop and retry later on the former.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, ServiceError::Db(db) if crate::store::is_unavailable(db))
    }

    pub fn refused(refusal: Refusal, message: impl Into<String>) -> Self {
        ServiceError::Refused {
            refusal,
            message: message.into(),
            detail: None,
            cause: None,
        }
    }

    /// A `coupon_lock_mismatch` that says how the coupon stands and tells
    /// the customer to contact support: only support can put an order's
    /// coupon right, so trying again would not help.
    pub fn lock_mismatch(mismatch: CouponLockMismatch, message: impl Into<String>) -> Self {
        let cause = RefusalCause::from(mismatch);
        ServiceError::Refused {
            refusal: Refusal::CouponLockMismatch,
            message: message.into(),
            detail: Some(crate::i18n::Msg::new(cause.message_key())),
            cause: Some(cause),
        }
    }

    /// [`ServiceError::refused`] with what it is about.
    pub fn refused_about(
        refusal: Refusal,
        message: impl Into<String>,
        detail: crate::i18n::Msg,
    ) -> Self {
        ServiceError::Refused {
            refusal,
            message: message.into(),
            detail: Some(detail),
            cause: None,
        }
    }

    /// A refusal said of `detail` (which coupon of several, …); any
    /// other error unchanged.
    pub fn about(self, detail: crate::i18n::Msg) -> Self {
        match self {
            ServiceError::Refused {
                refusal,
                message,
                cause,
                ..
            } => ServiceError::Refused {
                refusal,
                message,
                detail: Some(detail),
                cause,
            },
            other => other,
        }
    }

    /// `id` is what was looked up: text or a typed id (`&CouponId`, …).
    pub fn not_found(what: &'static str, id: impl AsRef<str>) -> Self {
        ServiceError::NotFound {
            what,
            id: id.as_ref().to_string(),
        }
    }
}

impl From<FieldError> for ServiceError {
    fn from(e: FieldError) -> Self {
        ServiceError::Invalid(e)
    }
}

impl From<IllegalTransition> for ServiceError {
    fn from(e: IllegalTransition) -> Self {
        ServiceError::IllegalTransition(e.to_string())
    }
}

impl From<ChangeError> for ServiceError {
    fn from(e: ChangeError) -> Self {
        match e {
            ChangeError::Db(e) => ServiceError::Db(e),
            ChangeError::Illegal(t) => t.into(),
            ChangeError::BudgetExhausted => ServiceError::refused(
                Refusal::BudgetExhausted,
                "this coupon's template has not enough budget left for its discount",
            ),
        }
    }
}

impl From<OrderChangeError> for ServiceError {
    fn from(e: OrderChangeError) -> Self {
        match e {
            OrderChangeError::Db(e) => ServiceError::Db(e),
            OrderChangeError::Illegal(t) => ServiceError::IllegalTransition(t.to_string()),
        }
    }
}

impl From<IllegalOrderTransition> for ServiceError {
    fn from(e: IllegalOrderTransition) -> Self {
        ServiceError::IllegalTransition(e.to_string())
    }
}

impl DbErrorSource for ServiceError {
    fn db_error(&self) -> Option<&sqlx::Error> {
        match self {
            ServiceError::Db(e) => Some(e),
            _ => None,
        }
    }
}
