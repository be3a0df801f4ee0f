//! Pure business rules: value types that cannot hold bad data, the coupon and
//! order state machines, discount arithmetic and the final-payment decision.
//!
//! Nothing in here performs I/O or reads the clock: every function that needs
//! "now" takes it as an argument, so each rule is testable on its own.

pub mod allocation;
pub mod bulk;
pub mod business_tz;
pub mod campaign;
pub mod cart;
pub mod category;
pub mod compensation;
pub mod coupon;
pub mod delivery;
pub mod discount;
pub mod event;
pub mod facts;
pub mod filters;
pub mod final_payment;
pub mod form_token;
pub mod health;
pub mod ids;
pub mod line;
pub mod money;
pub mod network;
pub mod order;
pub mod permissions;
pub mod picker;
pub mod reason;
pub mod reconcile;
pub mod redeem_code;
pub mod refund;
pub mod reminder;
pub mod repair;
pub mod report;
pub mod self_check;
pub mod stacking;
pub mod staff;
pub mod support_request;
pub mod template;
pub mod text;
pub mod time;
pub mod trace;
pub mod wakeup;

/// A request field that failed validation: which one and why.
///
/// Carried up to the API, where it becomes `400 invalid_request` with
/// `"field"` set, so a caller always learns which field to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}
