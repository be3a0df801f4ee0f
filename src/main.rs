//! The `couponkeeper` command: `serve` (default) and `migrate`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use couponkeeper::config::Config;
use couponkeeper::server;

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
    Serve,
    /// Apply database migrations and exit.
    Migrate,
}

fn init_logging(json: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    if json {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .json()
            .init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).init();
    }
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
    init_logging(config.log_json);
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => server::serve(config).await,
        Command::Migrate => server::open_db(&config).await.map(|_| {
            tracing::info!("migrations applied");
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "couponkeeper failed");
            ExitCode::FAILURE
        }
    }
}
