//! Starting the process: logging, database, migrations, the HTTP server and
//! graceful shutdown on SIGTERM / Ctrl-C.

use std::sync::Arc;

use crate::clock::{SharedClock, SystemClock};
use crate::config::Config;
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
        db,
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
    Service::with_webhooks(db, clock, service_settings(config), config.webhooks.clone())
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
}

/// Runs the server until SIGTERM or Ctrl-C, then finishes in-flight
/// requests and closes the pool.
pub async fn serve(config: Config) -> Result<(), StartError> {
    let db = open_db(&config).await?;
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
    let service = try_build_service(&config, db.clone(), Arc::new(SystemClock))?;
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
    let app = router(app_state_with_metrics(&config, service, metrics));
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    tracing::info!(addr = %config.addr, store = db.backend().name(), "couponkeeper listening");
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown_signal())
    .await?;
    if let Some(jobs) = jobs {
        jobs.stop().await;
    }
    db.pool().close().await;
    tracing::info!("couponkeeper stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}
