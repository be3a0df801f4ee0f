//! The accept loop: HTTP/1.1 connections served by hyper with the
//! connection timeouts `axum::serve` cannot set (OWASP ASVS V12.1 / V13,
//! slow clients), and the graceful stop of the drain.
//!
//! - **Header-read timeout** (`COUPONKEEPER_HEADER_READ_TIMEOUT_SECONDS`,
//!   default 15): a connection must deliver a request's whole head within
//!   this time of the server starting to wait for it, or it is closed.
//!   hyper starts the timer whenever it waits for a request head, so this
//!   also closes idle keep-alive connections and slowloris clients that
//!   trickle one header byte at a time. `axum::serve` gives hyper no timer,
//!   so there the timeout never fires; hence this loop.
//! - **Body-read timeout** (`COUPONKEEPER_BODY_READ_TIMEOUT_SECONDS`,
//!   default 30): a request body (a JSON body, a form, a 64 MiB upload)
//!   must arrive within this time of the head; a half-sent body is then
//!   answered 408 and the connection closed. `tower_http`'s
//!   `RequestBodyTimeoutLayer`, applied by [`super::router`].
//!
//! Graceful stop: when `stop` turns true the loop stops accepting, every
//! open connection is told to finish the request it is serving and close
//! (idle ones close at once), and [`serve`] returns once all are closed.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::{Service, ServiceExt};

/// Default of `COUPONKEEPER_HEADER_READ_TIMEOUT_SECONDS`.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECONDS: u64 = 15;
/// Default of `COUPONKEEPER_BODY_READ_TIMEOUT_SECONDS`.
pub const DEFAULT_BODY_READ_TIMEOUT_SECONDS: u64 = 30;
/// Largest value either timeout may be set to.
pub const MAX_READ_TIMEOUT_SECONDS: u64 = 3600;

/// How long a client may take to send what it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionTimeouts {
    /// A request head, from when the server starts waiting for it (also
    /// the longest a keep-alive connection may sit idle).
    pub header_read_seconds: u64,
    /// A request body, from its head.
    pub body_read_seconds: u64,
}

impl Default for ConnectionTimeouts {
    fn default() -> Self {
        ConnectionTimeouts {
            header_read_seconds: DEFAULT_HEADER_READ_TIMEOUT_SECONDS,
            body_read_seconds: DEFAULT_BODY_READ_TIMEOUT_SECONDS,
        }
    }
}

/// Pause after an accept error that is not the client's (out of file
/// descriptors, say), so the loop does not spin; the same as `axum::serve`.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_secs(1);

/// Serves `app` on `listener` until `stop` turns true, then closes every
/// connection gracefully and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    timeouts: ConnectionTimeouts,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut make_service = app.into_make_service_with_connect_info::<SocketAddr>();
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(timeouts.header_read_seconds.max(1)));
    // The guard `wait_for` returns is dropped inside, so the loop's
    // future stays `Send`.
    let stopping = async move {
        let _ = stop.wait_for(|stop| *stop).await;
    };
    tokio::pin!(stopping);
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; pausing before the next accept");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = &mut stopping => break,
        };
        let tower_service = match make_service.call(remote).await {
            Ok(s) => s,
            Err(never) => match never {},
        };
        let tower_service = tower_service.map_request(|req: Request<Incoming>| req.map(Body::new));
        let connection = builder.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(tower_service),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                // A client that went away or was too slow: not the
                // server's failure, and not worth more than a debug line.
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// Accept errors that concern one connection only (the client gave up
/// before it was accepted): try the next one at once.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
