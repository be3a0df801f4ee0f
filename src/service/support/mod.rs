//! Support operations, shared by the JSON API and the staff console: the
//! one-click health check (一键检测) of an order or a user, the repair
//! actions (release a stuck lock, invalidate a coupon, issue a compensation
//! coupon) and the console's search, coupon lists, CSV export and user page.
//!
//! Every action is one transaction through [`Service::write`]: it re-reads
//! the rows, changes them with conditional updates, and writes event rows
//! with the caller's actor and the required reason. Every read is a bounded
//! set of index lookups (see `store::search`).
//!
//! One file per concern:
//! - [`health`]: the health checks of an order and of a user;
//! - [`actions`]: the repair actions and who may take them ([`Authority`]);
//! - [`search`]: the console's search box;
//! - [`lists`]: the console's coupon list and user page;
//! - [`csv`]: the CSV export of the coupon list.

mod actions;
mod csv;
mod health;
mod lists;
mod search;

pub use actions::{
    Authority, CANCEL_NEEDS_OPERATOR, CompensationEntry, MAX_COMPENSATION_SECONDS,
    MIN_COMPENSATION_SECONDS,
};
pub(crate) use actions::{CompensationTerms, insert_compensation_coupon};
pub use csv::{MAX_EXPORT_ROWS, csv_field};
pub use health::{ActionView, CheckView, HealthReport, USER_HEALTH_ORDERS, UserHealthReport};
pub(crate) use health::{coupon_facts, coupon_units, further_of, order_facts, order_facts_read};
pub use lists::{CouponPage, MAX_PAGE, OVERVIEW_COUPONS, OVERVIEW_ORDERS, UserOverview};
pub use search::{MoreMatches, SearchHit, SearchList, SearchOutcome};
