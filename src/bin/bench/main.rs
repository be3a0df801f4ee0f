//! Benchmarks of couponkeeper's two hot paths and of the support console's
//! reads, each on SQLite and on
//! PostgreSQL in the same run, each scenario on a fresh database and checked
//! afterwards (a failed check exits non-zero). The machine running them is
//! noisy: read the ratios to the baselines measured in the same run, never
//! the absolute figures.
//!
//! ```text
//! cargo run --release --bin bench -- claims [--claims N] [--concurrency C]
//!     [--store sqlite|postgres|both] [--warmup W] [--rounds R]
//! cargo run --release --bin bench -- expiry [--coupons N] [--background B]
//!     [--store sqlite|postgres|both] [--designs batched,per-row,unbounded]
//!     [--idle-seconds S] [--probe-pause-ms P] [--per-row-max-seconds M]
//! cargo run --release --bin bench -- console [--store sqlite|postgres|both]
//!     [--coupons N] [--runs R] [--max-op-seconds S] [--batch B] [--seed X]
//! cargo run --release --bin bench -- reminders [--store sqlite|postgres|both]
//!     [--coupons N] [--users M] [--spread-minutes S] [--receiver-delay-ms D]
//!     [--concurrency C] [--no-delivery]
//! cargo run --release --bin bench -- http [--store sqlite|postgres|both]
//!     [--seconds S] [--connections 1,64] [--short] [--server PATH]
//! cargo run --release --bin bench -- bulk [--store sqlite|postgres|both]
//!     [--count N] [--idle-seconds S] [--probe-pause-ms P] [--server PATH]
//! ```
//!
//! `bench http` runs the real `couponkeeper serve` and drives it with
//! `wrk` (scripts in `bench/`), each row beside a bare-SQL baseline; see
//! [`http`].
//!
//! `bench reminders` is described where its code starts (planning,
//! expiry, then delivery to a fast and a slow webhook receiver) and in the
//! docs/src/operator/reminders.md (Benchmark).
//!
//! PostgreSQL: a fresh database `ck_bench_<pid>_<n>` per scenario on the
//! server of `COUPONKEEPER_BENCH_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`), dropped afterwards.
//! SQLite: a file in a temporary directory, removed afterwards.
//!
//! `bench bulk` runs `serve` too and times the operators' bulk jobs
//! beside a claim-and-pay probe; see [`bulk`].
//!
//! One module per benchmark: [`claims`], [`expiry`], [`console`] and
//! [`reminders`], each starting with what it measures and how. They share
//! [`scratch`] (a fresh database per scenario), [`data`] (templates through
//! the service, generated coupons, settling the table) and [`stats`]
//! (percentiles, milliseconds, the load average).

mod bulk;
mod claims;
mod console;
mod data;
mod expiry;
mod http;
mod reminders;
mod scratch;
mod stats;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::EnvFilter;

use crate::bulk::{BulkArgs, bulk};
use crate::claims::{ClaimsArgs, claims};
use crate::console::{ConsoleArgs, console};
use crate::expiry::{ExpiryArgs, expiry};
use crate::http::{HttpArgs, http};
use crate::reminders::{RemindersArgs, reminders};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = BoxError> = std::result::Result<T, E>;

#[derive(Parser)]
#[command(name = "bench", about = "couponkeeper benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Claims per second of one hot template vs. baselines, per store.
    Claims(ClaimsArgs),
    /// Draining N coupons due in the same second: batched vs. naive designs.
    Expiry(ExpiryArgs),
    /// Latency of the support console's reads on N coupons, per store.
    Console(ConsoleArgs),
    /// Pre-expiry reminders for N coupons of M users crossing one offset:
    /// messages produced vs. user-slot pairs, and the drain time.
    Reminders(RemindersArgs),
    /// The service over HTTP (`serve` driven by wrk) beside bare-SQL
    /// baselines measured in the same run, per store.
    Http(HttpArgs),
    /// The operators' bulk jobs (codes, bulk issue, bulk void) in `serve`,
    /// each beside a claim-and-pay probe's latency meanwhile and idle.
    Bulk(BulkArgs),
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StoreArg {
    Sqlite,
    Postgres,
    Both,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Store {
    Sqlite,
    Postgres,
}

impl Store {
    fn name(self) -> &'static str {
        match self {
            Store::Sqlite => "sqlite",
            Store::Postgres => "postgres",
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // sqlx warns about every statement slower than a second: the expiry
    // benchmark's inserts and drains are meant to be slow.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("warn,sqlx::query=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Claims(args) => runtime.block_on(claims(args)),
        Command::Expiry(args) => runtime.block_on(expiry(args)),
        Command::Console(args) => runtime.block_on(console(args)),
        Command::Reminders(args) => runtime.block_on(reminders(args)),
        Command::Http(args) => runtime.block_on(http(args)),
        Command::Bulk(args) => runtime.block_on(bulk(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn stores_of(arg: StoreArg) -> &'static [Store] {
    match arg {
        StoreArg::Sqlite => &[Store::Sqlite],
        StoreArg::Postgres => &[Store::Postgres],
        StoreArg::Both => &[Store::Sqlite, Store::Postgres],
    }
}
