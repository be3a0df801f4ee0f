//! Webhook delivery (API.md, Webhooks (outbound)).
//!
//! State changes only *insert* outbox rows, in their own transaction
//! (`store::coupons::transition`, expiry, compensation). Everything else
//! happens here, in the dispatcher job, never inside a payment or expiry
//! transaction:
//!
//! 1. fan-out ([`Service::fan_out`]): one bounded transaction turns the
//!    oldest undispatched outbox messages into one `pending` delivery per
//!    subscriber that wants the type (the environment's default subscriber
//!    and the enabled console subscribers);
//! 2. claim ([`Service::claim_deliveries`]): one short transaction takes due
//!    deliveries and sets a lease (`next_attempt_at` = now + timeout +
//!    margin), so another dispatcher does not send them meanwhile;
//! 3. send ([`Service::send_delivery`]): the POST, outside any transaction
//!    and without holding a connection, with the configured timeout;
//! 4. record ([`Service::finish_delivery`]): one short transaction writes
//!    the attempt and moves the delivery to `delivered`, to its next
//!    attempt (exponential backoff with jitter) or to `dead`.
//!
//! A crash between 3 and 4 leaves the lease to run out; the delivery is
//! then sent again with the same `id` (at least once). Order per user: a
//! delivery is not due while an earlier message (lower outbox id) of the
//! same user to the same subscriber is still `pending`; a dead one no
//! longer holds the others back.
//!
//! One file per concern:
//! - [`settings`]: the delivery settings of the configuration table;
//! - [`urls`]: which receiver URLs are taken, and why not;
//! - [`signing`]: the delivered body and its signature;
//! - [`attempt`]: what a claim hands to a send and what the send did
//!   (between steps 2, 3 and 4);
//! - [`client`]: the HTTP clients and one send (step 3);
//! - [`queue`]: fan-out, claim and record, each one transaction (steps 1,
//!   2 and 4), with the retry backoff;
//! - [`dispatcher`]: the loop that runs those steps with sends in flight;
//! - [`subscribers`]: the console's subscribers;
//! - [`delivery_log`]: the console's deliveries, their attempts and
//!   redelivery;
//! - [`backlog`]: the queue's size and age for `/metrics`.

mod attempt;
mod backlog;
mod client;
mod delivery_log;
mod dispatcher;
mod queue;
mod send;
mod settings;
mod signing;
mod subscribers;
mod urls;

pub use attempt::{ClaimedDelivery, SendOutcome};
pub use client::{
    WebhookClientError, WebhookClients, error_chain, http_clients, http_clients_with, read_ca_file,
};
pub use delivery_log::{AttemptView, DeliveryView};
pub use dispatcher::{
    DispatchReport, Dispatcher, FAN_OUT_BATCH, MAX_IN_FLIGHT, MAX_IN_FLIGHT_TOTAL, ORPHANS_EVERY,
    TurnReport,
};
pub use queue::{ACTOR_DISPATCHER, BACKOFF_BASE_MS, BACKOFF_CAP_MS, backoff_ms};
pub use settings::WebhookSettings;
pub use signing::{SIGNATURE_HEADER, envelope, message_id, signature};
pub use subscribers::{EVENT_TYPES, SubscriberView};
pub use urls::{ReceiverRefusal, UrlProblem, check_url, parse_receiver_url};
