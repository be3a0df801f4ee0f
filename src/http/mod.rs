//! The HTTP layer both front ends share: the state every handler gets
//! ([`AppState`]), the one router that mounts the JSON API ([`crate::api`])
//! and the pages ([`crate::web`]) side by side, the middleware around them
//! (request ids, trace context ([`trace`]), tracing, metrics, panics, rate limits and the client
//! address, security headers) and the operator endpoints (`/healthz`,
//! `/readyz`, `/metrics`), and the accept loop with its connection
//! timeouts ([`serve`]).
//!
//! `api` and `web` import this module and never each other; this module
//! imports their route tables (and the console settings the state carries),
//! never their handlers' internals.

pub mod limits;
pub mod middleware;
pub mod ops;
pub mod router;
pub mod security_headers;
pub mod serve;
pub mod state;
pub mod trace;

pub use router::router;
pub use state::AppState;
