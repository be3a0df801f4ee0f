//! What a console list may be filtered by: plain values that the page
//! parses from its query string, the service passes on and the store turns
//! into its WHERE clause. Here so that pages name no store type.

/// Filters of an audit page (the events and the staff log); `None`
/// means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Exact actor (`staff:alice`, `job:expiry-sweep`, `api:...`).
    pub actor: Option<String>,
    /// Exact action (`staff_release`, `expire`, `role_change`, ...).
    pub action: Option<String>,
    /// A coupon id or an order number (events); a staff name (staff log).
    pub target: Option<String>,
    /// `at >= this` (ms).
    pub from_ms: Option<i64>,
    /// `at < this` (ms).
    pub until_ms: Option<i64>,
}

/// Filters of the webhook deliveries page; every one optional.
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    pub status: Option<String>,
    pub event_type: Option<String>,
    pub user_id: Option<String>,
}
