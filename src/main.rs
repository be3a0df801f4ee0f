//! The `couponkeeper` command: `serve` (default), `migrate` and
//! `staff add`.

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
    /// Manage console staff accounts.
    Staff {
        #[command(subcommand)]
        command: StaffCommand,
    },
}

#[derive(Subcommand)]
enum StaffCommand {
    /// Create a staff account (or reset one with --replace). The password
    /// is read from a prompt, or from the variable named by --password-env.
    Add {
        /// Sign-in name: letters, digits, '.', '_' and '-'.
        name: String,
        /// support, operator or admin.
        #[arg(long)]
        role: String,
        /// Read the password from this environment variable instead of a
        /// prompt (for scripts).
        #[arg(long, value_name = "VAR")]
        password_env: Option<String>,
        /// Reset the password and role of an existing account and end its
        /// sessions.
        #[arg(long)]
        replace: bool,
    },
    /// List staff accounts.
    List,
}

/// Runs `staff add`: checks everything before touching the database.
async fn staff_add(
    config: &Config,
    name: &str,
    role: &str,
    password_env: Option<&str>,
    replace: bool,
) -> Result<String, String> {
    use couponkeeper::domain::staff::{Password, Role, StaffName};
    let name = StaffName::parse(name).map_err(|e| e.to_string())?;
    let role = Role::parse(role).map_err(|e| e.to_string())?;
    let raw = match password_env {
        Some(var) => std::env::var(var).map_err(|_| format!("{var} is not set"))?,
        None => {
            let first = rpassword::prompt_password(format!("password for {name}: "))
                .map_err(|e| format!("cannot read the password: {e}"))?;
            let again = rpassword::prompt_password("again: ")
                .map_err(|e| format!("cannot read the password: {e}"))?;
            if first != again {
                return Err("the two passwords differ".into());
            }
            first
        }
    };
    let password = Password::parse(&raw).map_err(|e| e.to_string())?;
    let db = server::open_db(config).await.map_err(|e| e.to_string())?;
    let service = server::build_service(
        config,
        db,
        std::sync::Arc::new(couponkeeper::clock::SystemClock),
    );
    let added = service
        .add_staff(&name, role, &password, replace)
        .await
        .map_err(|e| e.to_string())?;
    Ok(match added {
        couponkeeper::service::staff::StaffAdded::Created => {
            format!("created {} account {name}", role.as_str())
        }
        couponkeeper::service::staff::StaffAdded::Updated => {
            format!("reset {name}: now {}, its sessions ended", role.as_str())
        }
    })
}

async fn staff_list(config: &Config) -> Result<String, String> {
    let db = server::open_db(config).await.map_err(|e| e.to_string())?;
    let service = server::build_service(
        config,
        db,
        std::sync::Arc::new(couponkeeper::clock::SystemClock),
    );
    let staff = service.list_staff().await.map_err(|e| e.to_string())?;
    let mut out = String::from("name\trole\tdisabled\n");
    for s in staff {
        out.push_str(&format!("{}\t{}\t{}\n", s.name, s.role, s.disabled));
    }
    Ok(out)
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
        Command::Staff { command } => {
            let outcome = match command {
                StaffCommand::Add {
                    name,
                    role,
                    password_env,
                    replace,
                } => staff_add(&config, &name, &role, password_env.as_deref(), replace).await,
                StaffCommand::List => staff_list(&config).await,
            };
            return match outcome {
                Ok(msg) => {
                    println!("{}", msg.trim_end());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("couponkeeper staff: {e}");
                    ExitCode::from(2)
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
