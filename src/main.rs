//! The `couponkeeper` command: `serve` (default), `migrate` and `demo-data`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use couponkeeper::config::Config;
use couponkeeper::{demo, server};

#[derive(Parser)]
#[command(
    name = "couponkeeper",
    version,
    about = "Coupon lifecycle service and admin console"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default).
    Serve {
        /// Before serving, load the demo data when the database has none.
        #[arg(long)]
        demo_data: bool,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Fill the database with demo data: templates, 40 users, coupons and
    /// orders in every state with real timelines, and planted anomalies.
    /// Writes nothing when demo data is already there.
    DemoData {
        /// Print one JSON object instead of the human summary.
        #[arg(long)]
        json: bool,
    },
}

fn init_logging(json: bool, to_stderr: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let fmt = tracing_subscriber::fmt().with_env_filter(filter);
    match (json, to_stderr) {
        (true, true) => fmt.json().with_writer(std::io::stderr).init(),
        (true, false) => fmt.json().init(),
        (false, true) => fmt.with_writer(std::io::stderr).init(),
        (false, false) => fmt.init(),
    }
}

/// Loads the demo data (or finds it there) and reports it.
async fn demo_data(config: &Config, json: bool) -> Result<(), String> {
    let db = server::open_db(config).await.map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    let result = demo::load(&db, config, chrono::Utc::now()).await;
    db.pool().close().await;
    let report = result.map_err(|e| e.to_string())?;
    if json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.summary());
        if !report.already_present {
            println!(
                "took {:.1} s on {}",
                started.elapsed().as_secs_f64(),
                db.backend().name()
            );
        }
    }
    Ok(())
}

/// `serve --demo-data`: loads the demo before serving when there is none.
async fn load_demo_before_serving(config: &Config) -> Result<(), String> {
    let db = server::open_db(config).await.map_err(|e| e.to_string())?;
    let result = demo::load(&db, config, chrono::Utc::now()).await;
    db.pool().close().await;
    let report = result.map_err(|e| e.to_string())?;
    tracing::info!(
        already_present = report.already_present,
        templates = report.templates,
        coupons = report.coupons,
        orders = report.orders,
        anomalies = report.anomalies.len(),
        "demo data ready"
    );
    if config.jobs.enabled && !report.anomalies.is_empty() {
        tracing::warn!(
            "background jobs are on: the first sweep closes the planted stale checkout, and the \
             zombie reaper releases planted locks once they are older than \
             COUPONKEEPER_ZOMBIE_LOCK_SECONDS; set COUPONKEEPER_JOBS=off to keep every planted anomaly"
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("couponkeeper: bad configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let command = cli.command.unwrap_or(Command::Serve { demo_data: false });
    // demo-data's stdout is its report (one JSON object with --json): logs
    // go to stderr there.
    init_logging(config.log_json, matches!(command, Command::DemoData { .. }));
    let result = match command {
        Command::Serve { demo_data } => {
            if demo_data && let Err(e) = load_demo_before_serving(&config).await {
                eprintln!("couponkeeper: cannot load demo data: {e}");
                return ExitCode::FAILURE;
            }
            server::serve(config).await
        }
        Command::Migrate => server::open_db(&config).await.map(|_| {
            tracing::info!("migrations applied");
        }),
        Command::DemoData { json } => {
            return match demo_data(&config, json).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("couponkeeper demo-data: {e}");
                    ExitCode::FAILURE
                }
            };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "couponkeeper failed");
            ExitCode::FAILURE
        }
    }
}
