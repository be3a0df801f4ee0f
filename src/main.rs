//! The `couponkeeper` command: `serve` (default), `migrate`, `demo-data`
//! and `staff add` / `staff list`.

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
    /// Manage console staff accounts.
    Staff {
        #[command(subcommand)]
        command: StaffCommand,
    },
    /// Fill the database with demo data: templates, 40 users, coupons and
    /// orders in every state with real timelines, and planted anomalies.
    /// Writes nothing when demo data is already there.
    DemoData {
        /// Print one JSON object instead of the human summary.
        #[arg(long)]
        json: bool,
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
    let password =
        Password::parse(&raw, &name).map_err(|p| format!("the password {}", p.message()))?;
    let db = server::open_db(config).await.map_err(|e| e.to_string())?;
    let service = server::try_build_service(
        config,
        db,
        std::sync::Arc::new(couponkeeper::clock::SystemClock),
    )
    .map_err(|e| e.to_string())?;
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
    let service = server::try_build_service(
        config,
        db,
        std::sync::Arc::new(couponkeeper::clock::SystemClock),
    )
    .map_err(|e| e.to_string())?;
    let staff = service.list_staff().await.map_err(|e| e.to_string())?;
    let mut out = String::from("name\trole\tdisabled\n");
    for s in staff {
        out.push_str(&format!("{}\t{}\t{}\n", s.name, s.role, s.disabled));
    }
    Ok(out)
}

fn init_logging(json: bool, to_stderr: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    // A log line that cannot be written (stdout redirected to a file on a
    // full disk) is dropped. By default tracing-subscriber reports such a
    // failure with `eprintln!`, which panics when stderr fails too: every
    // request or job that logged then died with its connection or task
    // (tests/system/outage.rs, the full-disk test).
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .log_internal_errors(false);
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
