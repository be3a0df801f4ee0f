//! Starting the process: logging, database, migrations, the database
//! clock, the HTTP server, and the drain on SIGTERM / Ctrl-C.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::clock::{DatabaseClock, SharedClock, TimeSource};
use crate::config::Config;
use crate::http::state::Draining;
use crate::http::{AppState, router};
use crate::jobs::Jobs;
use crate::metrics::Metrics;
use crate::service::{Service, Settings};
use crate::store::{Db, PoolSettings};

/// Anything that stops the process from starting.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the database: {0}")]
    Db(#[from] sqlx::Error),
    #[error("cannot apply migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    #[error("COUPONKEEPER_BOOTSTRAP_ADMIN: {0}")]
    Bootstrap(String),
    #[error("COUPONKEEPER_WEBHOOK_CA_FILE: {0}")]
    Webhooks(#[from] crate::service::webhooks::WebhookClientError),
}

/// Opens the database of `config` and applies migrations.
pub async fn open_db(config: &Config) -> Result<Db, StartError> {
    let db = Db::connect_with(
        &config.database_url,
        PoolSettings {
            max_connections: config.db_max_connections,
            tx_retries: config.tx_retries,
            acquire_timeout_ms: config.db_acquire_timeout_ms,
            tx_timeout_ms: config.db_tx_timeout_ms,
        },
    )
    .await?;
    db.migrate().await?;
    Ok(db)
}

fn service_settings(config: &Config) -> Settings {
    Settings {
        checkout_lock_seconds: config.checkout_lock_seconds,
        expiring_soon_hours: config.expiring_soon_hours,
        support_compensation_max_cents: config.support_compensation_max_cents,
        support_compensation_daily_cents: config.support_compensation_daily_cents,
        reminders: config.reminders.clone(),
    }
}

/// Builds the service on `db` with the given clock; an error if the
/// webhook client cannot be built (the process's commands start with this).
pub fn try_build_service(
    config: &Config,
    db: Db,
    clock: SharedClock,
) -> Result<Service, StartError> {
    Ok(Service::try_with_webhooks(
        timed(config, db),
        clock,
        service_settings(config),
        config.webhooks.clone(),
    )?)
}

/// Builds the service on `db` with the given clock, for callers with no
/// start error to report (tests, the bench): a webhook client that cannot
/// be built is logged and makes every delivery attempt fail (see
/// [`Service::with_webhooks`]). `Config::from_env` already refuses such
/// settings.
pub fn build_service(config: &Config, db: Db, clock: SharedClock) -> Service {
    Service::with_webhooks(
        timed(config, db),
        clock,
        service_settings(config),
        config.webhooks.clone(),
    )
}

/// `db` recording its timed store calls (`/metrics`) with the threshold of
/// `COUPONKEEPER_SLOW_QUERY_MS`, unless it already records them somewhere.
fn timed(config: &Config, db: Db) -> Db {
    if db.query_timings().is_some() {
        return db;
    }
    db.with_query_timings(Arc::new(crate::metrics::QueryTimings::new(
        config.slow_query_ms,
    )))
}

/// Builds the application state (used by `serve` and by the tests).
pub fn app_state(config: &Config, service: Service) -> AppState {
    app_state_with_metrics(config, service, Arc::new(Metrics::default()))
}

/// The application state sharing `metrics` with the background jobs.
pub fn app_state_with_metrics(
    config: &Config,
    service: Service,
    metrics: Arc<Metrics>,
) -> AppState {
    AppState::new(service, metrics, &config.api_tokens)
        .with_limits(&config.http_limits)
        .with_console(config.console.clone())
        .with_self_check(config.self_check.clone())
        .with_metrics_token(config.metrics_token.as_deref())
        .with_body_read_timeout(Duration::from_secs(
            config.connection_timeouts.body_read_seconds,
        ))
}

/// Runs the server until SIGTERM or Ctrl-C, then drains (see [`drain`])
/// and returns.
///
/// Decisions read a [`DatabaseClock`]: the database's time, read at start
/// and every `COUPONKEEPER_CLOCK_SYNC_SECONDS`, so every instance on one
/// database decides expiry on the same time.
pub async fn serve(config: Config) -> Result<(), StartError> {
    let db = open_db(&config).await?;
    // From here a SIGTERM drains instead of killing the process (its
    // default action) half-way through the start.
    let mut signal = ShutdownSignal::install();
    if config.api_tokens.is_empty() {
        tracing::warn!("COUPONKEEPER_API_TOKEN is not set: every /api/v1 call will answer 401");
    }
    let short = config.short_api_tokens();
    if short > 0 {
        // Refused at start beyond loopback (Config::from_env); on
        // 127.0.0.1 only the local machine can guess them.
        tracing::warn!(
            short,
            "COUPONKEEPER_API_TOKEN holds tokens shorter than {} characters; allowed only because the service listens on loopback",
            crate::config::MIN_API_TOKEN_CHARS
        );
    }
    match db.autovacuum_off().await {
        Ok(true) => tracing::warn!(
            "PostgreSQL runs with autovacuum = off: dead rows and first-run query plans will slow payments and claims after bulk jobs; turn it on (see docs/src/operations/postgresql.md)"
        ),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "cannot read PostgreSQL's autovacuum setting"),
    }
    let clock = Arc::new(DatabaseClock::new());
    let time_source: Arc<dyn TimeSource> = Arc::new(db.clone());
    // The first reading before anything decides; a failure is logged and
    // the clock reads the system clock until a reading succeeds.
    clock.resync_logged(time_source.as_ref()).await;
    let service = try_build_service(&config, db.clone(), clock.clone())?;
    if let Err(e) = service.ensure_compensation_rules().await {
        tracing::warn!(error = %e, "compensation rules version 1 not written yet; the first use writes it");
    }
    if let Some(spec) = &config.bootstrap_admin {
        match service.bootstrap_admin(spec).await {
            Ok(true) => tracing::info!("bootstrap admin created from COUPONKEEPER_BOOTSTRAP_ADMIN"),
            Ok(false) => {
                tracing::info!("staff accounts exist; COUPONKEEPER_BOOTSTRAP_ADMIN ignored")
            }
            Err(e) => return Err(StartError::Bootstrap(e.to_string())),
        }
    }
    // One stop signal for the HTTP server and the clock's re-anchoring;
    // the jobs have their own (`Jobs::stop`), sent at the same moment.
    let (stop, stopped) = watch::channel(false);
    let clock_task = tokio::spawn(clock.clone().keep_anchored(
        time_source,
        Duration::from_secs(config.clock_sync_seconds.max(1)),
        stopped.clone(),
    ));
    let metrics = Arc::new(Metrics::default());
    let jobs = if config.jobs.enabled {
        tracing::info!("background jobs on");
        Some(Jobs::start(
            service.clone(),
            config.jobs.clone(),
            metrics.clone(),
        ))
    } else {
        tracing::info!("background jobs off (COUPONKEEPER_JOBS=off)");
        None
    };
    let draining = Draining::default();
    let app =
        router(app_state_with_metrics(&config, service, metrics).with_draining(draining.clone()));
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    tracing::info!(addr = %config.addr, store = db.backend().name(), "couponkeeper listening");
    let mut http = tokio::spawn(crate::http::serve::serve(
        listener,
        app,
        config.connection_timeouts,
        stopped,
    ));
    // The accept loop ends only after the stop signal: ending before it
    // is a failure, drained like a signal and then reported.
    let ended_early = tokio::select! {
        () = signal.recv() => None,
        ended = &mut http => Some(ended),
    };
    let deadline = Duration::from_secs(config.drain_seconds.max(1));
    tracing::info!(
        drain_seconds = deadline.as_secs(),
        "draining: /readyz answers 503, jobs finish their current step, requests in flight finish"
    );
    draining.start();
    let _ = stop.send(true);
    let started = Instant::now();
    let drained = drain(ended_early.is_none().then_some(http), jobs, clock_task, &db);
    // Past the deadline, or at a second signal (an operator's second
    // Ctrl-C), the process exits anyway: the runtime ends with it, what
    // still runs is dropped, its open transactions roll back and its
    // clients see the connection close.
    tokio::select! {
        finished = tokio::time::timeout(deadline, drained) => match finished {
            Ok(()) => tracing::info!(
                drain_ms = started.elapsed().as_millis(),
                "couponkeeper stopped"
            ),
            Err(_) => tracing::warn!(
                drain_seconds = deadline.as_secs(),
                "the drain did not finish within COUPONKEEPER_DRAIN_SECONDS; exiting with requests or job steps still running"
            ),
        },
        () = signal.recv() => tracing::warn!(
            drain_ms = started.elapsed().as_millis(),
            "a second shutdown signal during the drain; exiting with requests or job steps still running"
        ),
    }
    match ended_early {
        None => Ok(()),
        Some(Ok(Ok(()))) => Err(StartError::Io(std::io::Error::other(
            "the HTTP server stopped without a shutdown signal",
        ))),
        Some(Ok(Err(e))) => Err(StartError::Io(e)),
        Some(Err(e)) => Err(StartError::Io(std::io::Error::other(format!(
            "the HTTP server task failed: {e}"
        )))),
    }
}

/// The drain after the stop signal, in order: the HTTP server (no new
/// connections; requests in flight finish, then their keep-alive
/// connections close; idle ones close at once) and the jobs (each ends
/// after its current batch or transaction and starts no new one) at the
/// same time; then the clock's re-anchoring; then the pool, once every
/// connection is back. The caller bounds it with `COUPONKEEPER_DRAIN_SECONDS`.
async fn drain(
    http: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    jobs: Option<Jobs>,
    clock_task: tokio::task::JoinHandle<()>,
    db: &Db,
) {
    let http = async {
        if let Some(http) = http {
            match http.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "the HTTP server ended with an error"),
                Err(e) => tracing::warn!(error = %e, "the HTTP server task failed"),
            }
        }
    };
    let jobs = async {
        if let Some(jobs) = jobs {
            jobs.stop().await;
        }
    };
    tokio::join!(http, jobs);
    let _ = clock_task.await;
    db.pool().close().await;
}

/// SIGTERM (what orchestrators send) or SIGINT (Ctrl-C), listened for from
/// [`ShutdownSignal::install`] on, so one that arrives early is not lost.
struct ShutdownSignal {
    #[cfg(unix)]
    streams: Vec<tokio::signal::unix::Signal>,
}

impl ShutdownSignal {
    fn install() -> ShutdownSignal {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut streams = Vec::new();
            for (kind, name) in [
                (SignalKind::terminate(), "SIGTERM"),
                (SignalKind::interrupt(), "SIGINT"),
            ] {
                match signal(kind) {
                    Ok(s) => streams.push(s),
                    Err(e) => {
                        tracing::warn!(error = %e, signal = name, "cannot listen for a shutdown signal")
                    }
                }
            }
            ShutdownSignal { streams }
        }
        #[cfg(not(unix))]
        {
            ShutdownSignal {}
        }
    }

    /// Waits for the first signal (forever when none can be listened for).
    async fn recv(&mut self) {
        #[cfg(unix)]
        {
            if self.streams.is_empty() {
                std::future::pending::<()>().await;
            }
            let waits = self.streams.iter_mut().map(|s| Box::pin(s.recv()));
            let _ = futures_util::future::select_all(waits).await;
        }
        #[cfg(not(unix))]
        {
            if let Err(e) = tokio::signal::ctrl_c().await {
                tracing::warn!(error = %e, "cannot listen for Ctrl-C");
                std::future::pending::<()>().await;
            }
        }
        tracing::info!("shutdown signal received");
    }
}
