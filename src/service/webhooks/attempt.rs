//! What passes between the steps of one delivery attempt: the delivery a
//! claim hands to the send, and what the send did, which the record
//! writes. The client, the queue and the dispatcher all name them.

use crate::store::deliveries::DeliveryRow;

/// A delivery taken by a dispatcher, with everything needed to send it.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub delivery: DeliveryRow,
    pub lease_until: i64,
    pub url: String,
    pub secret: String,
    pub body: String,
    /// The environment's subscriber: sent without the address rule.
    pub trusted: bool,
    /// The trace of the request that caused the message, if any: each
    /// attempt sends `traceparent` in it, with a fresh span id of its own.
    pub trace: Option<crate::domain::trace::TraceContext>,
}

/// What one send did.
#[derive(Debug, Clone)]
pub struct SendOutcome {
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

impl SendOutcome {
    pub fn ok(&self) -> bool {
        self.status_code.is_some_and(|c| (200..300).contains(&c))
    }
}
