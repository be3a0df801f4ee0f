//! The background jobs' settings, read from the environment by
//! `config` (each field names its variable; the defaults are below and in
//! the book's configuration table, which a test holds to them), and the
//! fixed terms every job shares: the actors its event rows name and the
//! batch size. A leaf: the job loops (`super`) and the deadline worker
//! both read it.

/// Settings of the background jobs.
#[derive(Debug, Clone)]
pub struct JobSettings {
    /// `COUPONKEEPER_JOBS`: `on` or `off`.
    pub enabled: bool,
    /// `COUPONKEEPER_EXPIRY_HORIZON_SECONDS`: how far ahead the
    /// timing wheel holds deadlines.
    pub horizon_seconds: i64,
    /// `COUPONKEEPER_SWEEP_SECONDS` (plus up to 20 % jitter).
    pub sweep_seconds: i64,
    /// `COUPONKEEPER_PRESALE_GRACE_SECONDS`: how long after the
    /// final-payment window a deposit-paid order is closed.
    pub presale_grace_seconds: i64,
    /// `COUPONKEEPER_ZOMBIE_LOCK_SECONDS`: how old a lock must
    /// be before the reaper looks at it.
    pub zombie_lock_seconds: i64,
    /// `COUPONKEEPER_REAPER_SECONDS`: how often the reaper runs.
    pub reaper_seconds: i64,
    /// `COUPONKEEPER_ARCHIVE_AFTER_DAYS`: how long a terminal coupon stays
    /// unchanged before it moves to the archive tables.
    pub archive_after_days: i64,
    /// `COUPONKEEPER_ARCHIVE_SECONDS`: how often archiving runs.
    pub archive_seconds: i64,
    /// `COUPONKEEPER_RECONCILE_SECONDS`: how often
    /// reconciliation runs and records what it found.
    pub reconcile_seconds: i64,
}

impl Default for JobSettings {
    fn default() -> Self {
        JobSettings {
            enabled: true,
            horizon_seconds: 600,
            sweep_seconds: 300,
            presale_grace_seconds: 3600,
            zombie_lock_seconds: 7200,
            reaper_seconds: 3600,
            archive_after_days: 30,
            archive_seconds: 3600,
            reconcile_seconds: 900,
        }
    }
}

/// Actor names the jobs write into event rows.
pub const ACTOR_WHEEL: &str = "job:expiry-wheel";
pub const ACTOR_SWEEP: &str = "job:expiry-sweep";
pub const ACTOR_LAPSE: &str = "job:checkout-lapse";
pub const ACTOR_PRESALE: &str = "job:presale-timeout";
pub const ACTOR_REAPER: &str = "job:zombie-reaper";
/// Actor of reconciliation runs started by the job.
pub const ACTOR_RECONCILE: &str = "job:reconcile";
pub const ACTOR_ARCHIVE: &str = "job:archive";

/// Rows per batch statement.
pub const BATCH: i64 = 500;
