//! Console staff: accounts (argon2id password hashes), sign-in with rate
//! limiting, and database-backed sessions with idle and absolute expiry.
//!
//! A session cookie holds 32 random bytes; the database keeps only their
//! SHA-256, so reading the sessions table does not let anyone sign in.
//! Every sign-in makes a new session id, so an id planted before sign-in
//! (session fixation) is worthless.

#[cfg(test)]
use argon2::password_hash::PasswordHash;
use chrono::Duration;
use rand::RngCore;
use sha2::{Digest, Sha256};

use super::{Service, ServiceError};
use crate::domain::FieldError;
use crate::domain::permissions::{self, Permission};
use crate::domain::staff::{Password, Role, StaffName};
use crate::domain::time::to_ms;
use crate::log_safe::LogSafe;
use crate::store::audit::{NewStaffAudit, insert_staff_audit};
use crate::store::{is_unique_violation, staff};

/// Actions of the staff log (`staff_audit.action`).
pub mod actions {
    pub const CREATE: &str = "staff_create";
    pub const REPLACE: &str = "staff_replace";
    pub const ROLE_CHANGE: &str = "role_change";
    pub const PASSWORD_RESET: &str = "password_reset";
    pub const DISABLE: &str = "disable";
    pub const ENABLE: &str = "enable";
    pub const SIGN_IN: &str = "sign_in";
    pub const SIGN_IN_FAILED: &str = "sign_in_failed";
    pub const SIGN_OUT: &str = "sign_out";
    /// A staff member changed their own password.
    pub const PASSWORD_CHANGE: &str = "password_change";
    /// A signed-in staff member typed a wrong own password (before a
    /// password change or reset).
    pub const REAUTH_FAILED: &str = "reauth_failed";
    /// A webhook subscriber added in the console (target: its id).
    pub const WEBHOOK_ADD: &str = "webhook_add";
    /// A webhook subscriber disabled.
    pub const WEBHOOK_DISABLE: &str = "webhook_disable";
    /// A disabled webhook subscriber enabled again.
    pub const WEBHOOK_ENABLE: &str = "webhook_enable";
    /// A new compensation rules version (target: `compensation-rules`).
    pub const COMPENSATION_RULES_CHANGE: &str = "compensation_rules_change";

    /// Every action above, and the campaigns' (`service::campaigns::actions`);
    /// each has the catalog key `staff-action-<word>`.
    pub const ALL: [&str; 18] = [
        CREATE,
        REPLACE,
        ROLE_CHANGE,
        PASSWORD_RESET,
        DISABLE,
        ENABLE,
        SIGN_IN,
        SIGN_IN_FAILED,
        SIGN_OUT,
        PASSWORD_CHANGE,
        REAUTH_FAILED,
        WEBHOOK_ADD,
        WEBHOOK_DISABLE,
        WEBHOOK_ENABLE,
        COMPENSATION_RULES_CHANGE,
        crate::service::campaigns::actions::CREATE,
        crate::service::campaigns::actions::POLICY,
        crate::service::campaigns::actions::COMPENSATION_MODE,
    ];

    /// The catalog key of a staff-log action's words, if it is one.
    pub fn label_key(word: &str) -> Option<String> {
        ALL.contains(&word).then(|| format!("staff-action-{word}"))
    }
}

/// Writes one row of the staff log in the caller's transaction.
async fn audit(
    c: &mut sqlx::AnyConnection,
    actor: &str,
    action: &str,
    target: &str,
    detail: Option<&str>,
    address: Option<&str>,
    at_ms: i64,
) -> Result<(), ServiceError> {
    insert_staff_audit(
        c,
        &NewStaffAudit {
            actor,
            action,
            target,
            detail,
            address,
            at_ms,
        },
    )
    .await?;
    Ok(())
}

/// The `server_secrets` row of the sign-in form key.
const LOGIN_FORM_KEY: &str = "login_form_key";

/// How far back failed sign-ins count against an account or an address.
pub const LOGIN_WINDOW_SECONDS: i64 = 15 * 60;
/// Failed sign-ins for one account from one address within the window
/// before that address is refused for that account. Per pair, so one
/// address guessing cannot lock the account out for everyone else.
pub const MAX_FAILURES_PER_PAIR: i64 = 5;
/// Failed sign-ins from one address, for any accounts, within the window
/// before it is refused (higher: an office may share one address).
pub const MAX_FAILURES_PER_ADDRESS: i64 = 30;
/// Failed sign-ins for one account from all addresses within the window
/// before the account is refused everywhere: the brake on guessing spread
/// over many addresses. It takes at least 20 addresses
/// (`MAX_FAILURES_PER_ACCOUNT / MAX_FAILURES_PER_PAIR`) to reach.
pub const MAX_FAILURES_PER_ACCOUNT: i64 = 100;
/// A session's last-seen time is written at most this often (and at most
/// every quarter of the idle timeout, when that is shorter), so reading
/// pages does not turn into one write per request.
const TOUCH_EVERY_SECONDS: i64 = 60;

/// How long sessions live.
#[derive(Debug, Clone, Copy)]
pub struct SessionPolicy {
    /// Signed out after this long without a request.
    pub idle_seconds: i64,
    /// Signed out this long after sign-in, however active.
    pub absolute_seconds: i64,
}

impl Default for SessionPolicy {
    fn default() -> Self {
        SessionPolicy {
            idle_seconds: 30 * 60,
            absolute_seconds: 12 * 3600,
        }
    }
}

/// A signed-in staff member, as every console page sees them.
#[derive(Debug, Clone)]
pub struct StaffSession {
    pub name: StaffName,
    pub role: Role,
    /// The token every form of this session must carry.
    pub csrf_token: String,
}

impl StaffSession {
    /// `staff:<name>`, the actor of every event this person causes.
    pub fn actor(&self) -> String {
        self.name.actor()
    }
}

/// A password check that passed the limits: its pending attempt, and the
/// account when the password matched an enabled one.
struct Verified {
    attempt_id: i64,
    account: Option<staff::StaffRow>,
}

/// A fresh session: the cookie value and the form token.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub token: String,
    pub session: StaffSession,
}

/// Why a sign-in did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Unknown name, wrong password or disabled account: deliberately one
    /// answer, so the form does not reveal which names exist.
    #[error("wrong name or password")]
    BadCredentials,
    #[error("too many failed sign-ins; try again later")]
    RateLimited,
    /// Every password-checking slot stayed busy (see
    /// [`super::passwords`]): nothing was checked or counted.
    #[error("the server is busy checking passwords; try again in a moment")]
    Busy,
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// Whether `add_staff` made a new account or replaced an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaffAdded {
    Created,
    Updated,
}

/// A staff account for listing.
#[derive(Debug, Clone)]
pub struct StaffView {
    pub name: String,
    pub role: String,
    pub disabled: bool,
    pub created_at_ms: i64,
}

/// A rule that refuses an admin's change to a staff account (403
/// `forbidden`). The console may never lose its last enabled admin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaffRule {
    /// Only an enabled admin manages staff.
    NotAdmin,
    /// An admin may not disable or demote their own account.
    OwnAccount,
    /// The change would leave no enabled admin.
    LastAdmin,
}

impl StaffRule {
    pub fn message(self) -> &'static str {
        match self {
            StaffRule::NotAdmin => "only an enabled admin may manage staff accounts",
            StaffRule::OwnAccount => "an admin may not disable or demote their own account",
            StaffRule::LastAdmin => "this is the last enabled admin; it must stay an enabled admin",
        }
    }

    /// The rule behind a `Forbidden` message, if it was one of these.
    pub fn from_message(m: &str) -> Option<StaffRule> {
        [
            StaffRule::NotAdmin,
            StaffRule::OwnAccount,
            StaffRule::LastAdmin,
        ]
        .into_iter()
        .find(|r| r.message() == m)
    }
}

impl From<StaffRule> for ServiceError {
    fn from(r: StaffRule) -> Self {
        ServiceError::Forbidden(r.message().to_string())
    }
}

/// What an admin's change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum StaffChange {
    /// The account changed and its sessions were ended.
    Changed,
    /// The account was already so; nothing was written.
    AlreadySo,
}

/// Refuses a session that is not an admin's before any work is done.
fn ensure_admin(actor: &StaffSession) -> Result<(), ServiceError> {
    if permissions::may(actor.role, Permission::ManageStaff) {
        Ok(())
    } else {
        Err(StaffRule::NotAdmin.into())
    }
}

/// Inside the transaction: locks the enabled admins' rows and checks the
/// actor is still one of them (their role may have changed since their
/// session was read).
async fn lock_admins_for(c: &mut sqlx::AnyConnection, actor: &str) -> Result<(), ServiceError> {
    let admins = staff::lock_enabled_admins(c).await?;
    if admins.iter().any(|a| a == actor) {
        Ok(())
    } else {
        Err(StaffRule::NotAdmin.into())
    }
}

/// Why a conditional update changed nothing: no such account, already so,
/// or the last-admin guard.
async fn explain_unchanged(
    c: &mut sqlx::AnyConnection,
    name: &str,
    already: impl Fn(&staff::StaffRow) -> bool,
) -> Result<StaffChange, ServiceError> {
    match staff::get(c, name).await? {
        None => Err(ServiceError::not_found("staff", name)),
        Some(row) if already(&row) => Ok(StaffChange::AlreadySo),
        Some(_) => Err(StaffRule::LastAdmin.into()),
    }
}

fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// A hash of nothing anyone knows, verified when the name does not exist so
/// a wrong name takes as long as a wrong password.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3sVwzX2vLk6Y2qkGq0b6pDkq0T3qYp2oW0bqJmYkQ0Y";

impl Service {
    /// Hashes a new password in one of the password slots
    /// ([`super::passwords`]); all slots busy is answered at the field.
    async fn hash_password(&self, password: String) -> Result<String, ServiceError> {
        let slot = self.inner.passwords.acquire().await.map_err(|_| {
            FieldError::new(
                "password",
                "the server is busy checking passwords; try again in a moment",
            )
        })?;
        slot.hash(password)
            .await
            .map_err(|e| ServiceError::Invalid(FieldError::new("password", e)))
    }

    /// Creates a staff account, or with `replace` sets a new password and
    /// role on an existing one (and ends its sessions).
    pub async fn add_staff(
        &self,
        name: &StaffName,
        role: Role,
        password: &Password,
        replace: bool,
    ) -> Result<StaffAdded, ServiceError> {
        self.add_staff_by("cli", name, role, password, replace)
            .await
    }

    /// [`Service::add_staff`] recorded in the staff log under `actor`.
    async fn add_staff_by(
        &self,
        actor: &'static str,
        name: &StaffName,
        role: Role,
        password: &Password,
        replace: bool,
    ) -> Result<StaffAdded, ServiceError> {
        let hash = self.hash_password(password.expose().to_string()).await?;
        let now_ms = to_ms(self.now());
        let name = name.as_str().to_string();
        self.write(None, move |c| {
            let name = name.clone();
            let hash = hash.clone();
            Box::pin(
                async move { add_staff_tx(c, actor, &name, role, &hash, replace, now_ms).await },
            )
        })
        .await
        .map(|e| match e.fresh() {
            Some(true) => StaffAdded::Updated,
            _ => StaffAdded::Created,
        })
    }

    /// Creates the first admin from `name:password` when there is no staff
    /// at all. Returns whether it created one.
    pub async fn bootstrap_admin(&self, spec: &str) -> Result<bool, ServiceError> {
        let (name, password) = spec.split_once(':').ok_or_else(|| {
            FieldError::new("COUPONKEEPER_BOOTSTRAP_ADMIN", "expected name:password")
        })?;
        let name = StaffName::parse(name)?;
        let password = Password::parse(password, &name).map_err(FieldError::from)?;
        let existing = self
            .read(|c| Box::pin(async move { Ok(staff::count(c).await?) }))
            .await?;
        if existing > 0 {
            return Ok(false);
        }
        match self
            .add_staff_by("bootstrap", &name, Role::Admin, &password, false)
            .await
        {
            Ok(_) => Ok(true),
            // Another instance bootstrapped the same name first.
            Err(ServiceError::Invalid(e)) if e.field == "name" => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Every staff account.
    pub async fn list_staff(&self) -> Result<Vec<StaffView>, ServiceError> {
        let rows = self
            .read(|c| Box::pin(async move { Ok(staff::list(c).await?) }))
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| StaffView {
                name: r.name,
                role: r.role,
                disabled: r.disabled != 0,
                created_at_ms: r.created_at,
            })
            .collect())
    }

    /// An admin creates a staff account.
    pub async fn create_staff(
        &self,
        actor: &StaffSession,
        name: &StaffName,
        role: Role,
        password: &Password,
        address: Option<&str>,
    ) -> Result<(), ServiceError> {
        ensure_admin(actor)?;
        let hash = self.hash_password(password.expose().to_string()).await?;
        let now_ms = to_ms(self.now());
        let (actor_name, target) = (actor.name.as_str().to_string(), name.as_str().to_string());
        let (by, address) = (actor.actor(), address.map(str::to_string));
        self.write(None, move |c| {
            let (actor_name, target, hash) = (actor_name.clone(), target.clone(), hash.clone());
            let (by, address) = (by.clone(), address.clone());
            Box::pin(async move {
                lock_admins_for(c, &actor_name).await?;
                match staff::insert(c, &target, role.as_str(), &hash, now_ms).await {
                    Ok(()) => {
                        let detail = format!("role {}", role.as_str());
                        audit(
                            c,
                            &by,
                            actions::CREATE,
                            &target,
                            Some(&detail),
                            address.as_deref(),
                            now_ms,
                        )
                        .await
                    }
                    Err(e) if is_unique_violation(&e) => {
                        Err(ServiceError::Invalid(FieldError::new("name", "is taken")))
                    }
                    Err(e) => Err(e.into()),
                }
            })
        })
        .await?;
        tracing::info!(actor = %actor.name, target = %name, role = role.as_str(), "staff account created");
        Ok(())
    }

    /// An admin changes an account's role; a change ends that account's
    /// sessions. Nobody demotes themself, and the last enabled admin stays
    /// one.
    pub async fn set_staff_role(
        &self,
        actor: &StaffSession,
        name: &str,
        role: Role,
        address: Option<&str>,
    ) -> Result<StaffChange, ServiceError> {
        ensure_admin(actor)?;
        let target = StaffName::parse(name)?;
        if target == actor.name && role != Role::Admin {
            return Err(StaffRule::OwnAccount.into());
        }
        let now_ms = to_ms(self.now());
        let (actor_name, t) = (actor.name.as_str().to_string(), target.as_str().to_string());
        let (by, address) = (actor.actor(), address.map(str::to_string));
        let change = self
            .write(None, move |c| {
                let (actor_name, t) = (actor_name.clone(), t.clone());
                let (by, address) = (by.clone(), address.clone());
                Box::pin(async move {
                    lock_admins_for(c, &actor_name).await?;
                    let before = staff::get(c, &t).await?.map(|r| r.role);
                    if staff::set_role(c, &t, role.as_str(), now_ms).await? {
                        staff::delete_sessions_of(c, &t).await?;
                        let detail =
                            format!("{} -> {}", before.as_deref().unwrap_or("?"), role.as_str());
                        audit(
                            c,
                            &by,
                            actions::ROLE_CHANGE,
                            &t,
                            Some(&detail),
                            address.as_deref(),
                            now_ms,
                        )
                        .await?;
                        return Ok(StaffChange::Changed);
                    }
                    explain_unchanged(c, &t, |r| r.role == role.as_str()).await
                })
            })
            .await?
            .fresh()
            .unwrap_or(StaffChange::AlreadySo);
        tracing::info!(actor = %actor.name, target = %target, role = role.as_str(), change = ?change, "staff role set");
        Ok(change)
    }

    /// An admin disables or enables an account; disabling ends its
    /// sessions. Nobody disables themself, and the last enabled admin
    /// stays enabled.
    pub async fn set_staff_disabled(
        &self,
        actor: &StaffSession,
        name: &str,
        disabled: bool,
        address: Option<&str>,
    ) -> Result<StaffChange, ServiceError> {
        ensure_admin(actor)?;
        let target = StaffName::parse(name)?;
        if target == actor.name && disabled {
            return Err(StaffRule::OwnAccount.into());
        }
        let now_ms = to_ms(self.now());
        let (actor_name, t) = (actor.name.as_str().to_string(), target.as_str().to_string());
        let (by, address) = (actor.actor(), address.map(str::to_string));
        let change = self
            .write(None, move |c| {
                let (actor_name, t) = (actor_name.clone(), t.clone());
                let (by, address) = (by.clone(), address.clone());
                Box::pin(async move {
                    lock_admins_for(c, &actor_name).await?;
                    if staff::set_disabled(c, &t, disabled, now_ms).await? {
                        staff::delete_sessions_of(c, &t).await?;
                        let action = if disabled {
                            actions::DISABLE
                        } else {
                            actions::ENABLE
                        };
                        audit(c, &by, action, &t, None, address.as_deref(), now_ms).await?;
                        return Ok(StaffChange::Changed);
                    }
                    explain_unchanged(c, &t, |r| (r.disabled != 0) == disabled).await
                })
            })
            .await?
            .fresh()
            .unwrap_or(StaffChange::AlreadySo);
        tracing::info!(actor = %actor.name, target = %target, disabled, change = ?change, "staff account disabled flag set");
        Ok(change)
    }

    /// An admin sets a new password on an account, which ends its sessions
    /// (the admin's own too, when it is their account). The admin first
    /// re-enters their own password ([`Service::reauthenticate`]): a
    /// session left open on a desk must not be enough to take over every
    /// other account.
    pub async fn reset_staff_password(
        &self,
        actor: &StaffSession,
        name: &str,
        password: &Password,
        own_password: &str,
        address: Option<&str>,
    ) -> Result<(), SignInError> {
        ensure_admin(actor)?;
        let target = StaffName::parse(name).map_err(ServiceError::from)?;
        self.reauthenticate(actor, own_password, address.unwrap_or("unknown"))
            .await?;
        let hash = self.hash_password(password.expose().to_string()).await?;
        let now_ms = to_ms(self.now());
        let (actor_name, t) = (actor.name.as_str().to_string(), target.as_str().to_string());
        let (by, address) = (actor.actor(), address.map(str::to_string));
        self.write(None, move |c| {
            let (actor_name, t, hash) = (actor_name.clone(), t.clone(), hash.clone());
            let (by, address) = (by.clone(), address.clone());
            Box::pin(async move {
                lock_admins_for(c, &actor_name).await?;
                if !staff::set_password(c, &t, &hash, now_ms).await? {
                    return Err(ServiceError::not_found("staff", t));
                }
                staff::delete_sessions_of(c, &t).await?;
                audit(
                    c,
                    &by,
                    actions::PASSWORD_RESET,
                    &t,
                    None,
                    address.as_deref(),
                    now_ms,
                )
                .await?;
                Ok(())
            })
        })
        .await?;
        tracing::info!(actor = %actor.name, target = %target, "staff password reset");
        Ok(())
    }

    /// The rate-limited part of every password check: sign-in, and an
    /// admin or staff member re-entering their own password.
    ///
    /// The limit is atomic: one write transaction, serialized per account
    /// and per address ([`staff::lock_sign_in`]), counts the recent
    /// failures, refuses at a limit and records the attempt as pending
    /// before the password is verified. So however many guesses arrive at
    /// once, at most [`MAX_FAILURES_PER_PAIR`] of them for one account
    /// from one address are ever verified in a window; a pending attempt
    /// counts as a failure until the caller settles it. Too many recent
    /// failures refuse even a correct password until the window passes.
    async fn limited_verify(
        &self,
        key: &str,
        name: Option<&StaffName>,
        password: &str,
        address: &str,
    ) -> Result<Verified, SignInError> {
        let now = self.now();
        let now_ms = to_ms(now);
        let since_ms = to_ms(now - Duration::seconds(LOGIN_WINDOW_SECONDS));
        let (key2, address2) = (key.to_string(), address.to_string());
        let attempt_id = self
            .write(None, move |c| {
                let (key, address) = (key2.clone(), address2.clone());
                Box::pin(async move {
                    staff::lock_sign_in(c, &key, &address).await?;
                    let failures = staff::recent_failures(c, &key, &address, since_ms).await?;
                    if failures.pair >= MAX_FAILURES_PER_PAIR
                        || failures.address >= MAX_FAILURES_PER_ADDRESS
                        || failures.account >= MAX_FAILURES_PER_ACCOUNT
                    {
                        return Ok(None);
                    }
                    Ok(Some(
                        staff::reserve_attempt(c, &key, &address, now_ms).await?,
                    ))
                })
            })
            .await?
            .fresh()
            .flatten();
        let Some(attempt_id) = attempt_id else {
            tracing::info!(
                name = %LogSafe(key),
                address = %LogSafe(address),
                "staff password check refused: too many failures"
            );
            return Err(SignInError::RateLimited);
        };
        // Then a slot to check in ([`super::passwords`]). A check that
        // cannot run is no attempt: its reservation is withdrawn, so a
        // busy server counts no failure against anyone.
        let slot = match self.inner.passwords.acquire().await {
            Ok(slot) => slot,
            Err(_) => {
                tracing::warn!(
                    name = %LogSafe(key),
                    address = %LogSafe(address),
                    "staff password check refused: every password slot busy"
                );
                let withdrawn = self
                    .write(None, move |c| {
                        Box::pin(async move { Ok(staff::withdraw_attempt(c, attempt_id).await?) })
                    })
                    .await;
                if let Err(e) = withdrawn {
                    tracing::warn!(error = %e, "a sign-in attempt that never ran stays counted");
                }
                return Err(SignInError::Busy);
            }
        };
        let row = match name {
            Some(n) => {
                let n = n.as_str().to_string();
                self.read(move |c| {
                    let n = n.clone();
                    Box::pin(async move { Ok(staff::get(c, &n).await?) })
                })
                .await?
            }
            None => None,
        };
        let stored = row
            .as_ref()
            .filter(|r| r.disabled == 0)
            .map(|r| r.password_hash.clone())
            .unwrap_or_else(|| DUMMY_HASH.to_string());
        self.inner
            .password_verifications
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let password_ok = slot.verify(password.to_string(), stored).await;
        Ok(Verified {
            attempt_id,
            account: row.filter(|r| r.disabled == 0 && password_ok),
        })
    }

    /// Checks a name and password and opens a new session; the limits of
    /// [`Service::limited_verify`] apply.
    pub async fn sign_in(
        &self,
        raw_name: &str,
        password: &str,
        address: &str,
        policy: SessionPolicy,
    ) -> Result<SignedIn, SignInError> {
        let now = self.now();
        let now_ms = to_ms(now);
        let name = StaffName::parse(raw_name).ok();
        let key = name
            .as_ref()
            .map(|n| n.as_str().to_string())
            .unwrap_or_else(|| raw_name.chars().take(64).collect());
        let address = address.chars().take(64).collect::<String>();
        let verified = self
            .limited_verify(&key, name.as_ref(), password, &address)
            .await?;
        let attempt_id = verified.attempt_id;
        let role = verified
            .account
            .as_ref()
            .and_then(|r| Role::parse(&r.role).ok());
        let token = random_hex(32);
        let csrf_token = random_hex(32);
        let id_hash = sha256_hex(&token);
        let expires_at_ms = to_ms(now + Duration::seconds(policy.absolute_seconds));
        let succeeded = role.is_some();
        let record = SignInRecord {
            key: key.clone(),
            address: address.clone(),
            csrf: csrf_token.clone(),
            id_hash,
            attempt_id,
            succeeded,
            now_ms,
            expires_at_ms,
        };
        let signed_in = self
            .write(None, move |c| {
                let record = record.clone();
                Box::pin(async move { sign_in_tx(c, record).await })
            })
            .await?
            .fresh()
            .unwrap_or(false);
        match (name, role) {
            (Some(name), Some(role)) if signed_in => {
                tracing::info!(staff = %name, address = %LogSafe(&address), "staff signed in");
                Ok(SignedIn {
                    token,
                    session: StaffSession {
                        name,
                        role,
                        csrf_token,
                    },
                })
            }
            _ => {
                tracing::info!(
                    name = %LogSafe(&key),
                    address = %LogSafe(&address),
                    "staff sign-in refused"
                );
                Err(SignInError::BadCredentials)
            }
        }
    }

    /// A signed-in staff member proves it is still them by typing their
    /// own password (before changing it, or before an admin resets
    /// someone else's): the same limits as sign-in, the same attempts
    /// table, and a refused check goes to the staff log.
    pub async fn reauthenticate(
        &self,
        who: &StaffSession,
        password: &str,
        address: &str,
    ) -> Result<(), SignInError> {
        let key = who.name.as_str().to_string();
        let address = address.chars().take(64).collect::<String>();
        let verified = self
            .limited_verify(&key, Some(&who.name), password, &address)
            .await?;
        let attempt_id = verified.attempt_id;
        let ok = verified.account.is_some();
        let now_ms = to_ms(self.now());
        let (actor, address2) = (who.actor(), address.clone());
        let settled = self
            .write(None, move |c| {
                let (actor, key, address) = (actor.clone(), key.clone(), address2.clone());
                Box::pin(async move {
                    let settled = staff::settle_attempt(c, attempt_id, ok).await?;
                    if !(ok && settled) {
                        audit(
                            c,
                            &actor,
                            actions::REAUTH_FAILED,
                            &key,
                            None,
                            Some(&address),
                            now_ms,
                        )
                        .await?;
                    }
                    Ok(ok && settled)
                })
            })
            .await?
            .fresh()
            .unwrap_or(false);
        if settled {
            Ok(())
        } else {
            tracing::info!(staff = %who.name, address = %LogSafe(&address), "staff password re-entry refused");
            Err(SignInError::BadCredentials)
        }
    }

    /// A staff member changes their own password after re-entering the
    /// current one. Every other session of the account ends (a thief who
    /// knew the old password is signed out); this one stays.
    pub async fn change_own_password(
        &self,
        who: &StaffSession,
        current: &str,
        new: &Password,
        address: &str,
    ) -> Result<(), SignInError> {
        self.reauthenticate(who, current, address).await?;
        let hash = self.hash_password(new.expose().to_string()).await?;
        let now_ms = to_ms(self.now());
        let (name, by, keep) = (
            who.name.as_str().to_string(),
            who.actor(),
            who.csrf_token.clone(),
        );
        let address = address.chars().take(64).collect::<String>();
        self.write(None, move |c| {
            let (name, by, keep, hash, address) = (
                name.clone(),
                by.clone(),
                keep.clone(),
                hash.clone(),
                address.clone(),
            );
            Box::pin(async move {
                if !staff::set_password(c, &name, &hash, now_ms).await? {
                    return Err(ServiceError::not_found("staff", name));
                }
                staff::delete_other_sessions_of(c, &name, &keep).await?;
                audit(
                    c,
                    &by,
                    actions::PASSWORD_CHANGE,
                    &name,
                    None,
                    Some(&address),
                    now_ms,
                )
                .await?;
                Ok(())
            })
        })
        .await?;
        tracing::info!(staff = %who.name, "staff changed their own password");
        Ok(())
    }

    /// The key that signs the sign-in form's CSRF token: 32 random bytes
    /// made by the first instance that needs it and shared through the
    /// database (`server_secrets`), so a form served by one instance is
    /// accepted by another. Read once per process.
    pub async fn login_form_key(&self) -> Result<[u8; 32], ServiceError> {
        let key = self
            .inner
            .login_form_key
            .get_or_try_init(|| async {
                let candidate = random_hex(32);
                let now_ms = to_ms(self.now());
                let stored = self
                    .write(None, move |c| {
                        let candidate = candidate.clone();
                        Box::pin(async move {
                            Ok(
                                staff::get_or_create_secret(c, LOGIN_FORM_KEY, &candidate, now_ms)
                                    .await?,
                            )
                        })
                    })
                    .await?
                    .fresh()
                    .unwrap_or_default();
                let mut key = [0u8; 32];
                match hex::decode(stored.as_bytes()) {
                    Ok(bytes) if bytes.len() == 32 => {
                        key.copy_from_slice(&bytes);
                        Ok(key)
                    }
                    _ => Err(ServiceError::Db(sqlx::Error::Protocol(format!(
                        "server_secrets.{LOGIN_FORM_KEY} is not 32 bytes of hex"
                    )))),
                }
            })
            .await?;
        Ok(*key)
    }

    /// How many passwords this process has verified against a stored hash
    /// (sign-ins, password changes): what the sign-in limit bounds.
    pub fn password_verifications(&self) -> u64 {
        self.inner
            .password_verifications
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The session a cookie token stands for, if it is still live: not past
    /// its absolute end, not idle too long, its account enabled.
    pub async fn session(
        &self,
        token: &str,
        policy: SessionPolicy,
    ) -> Result<Option<StaffSession>, ServiceError> {
        if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let now_ms = to_ms(self.now());
        let id_hash = sha256_hex(token);
        let hash2 = id_hash.clone();
        let Some(row) = self
            .read(move |c| {
                let h = hash2.clone();
                Box::pin(async move { Ok(staff::get_session(c, &h).await?) })
            })
            .await?
        else {
            return Ok(None);
        };
        let idle_end_ms = row.last_seen_at + policy.idle_seconds * 1000;
        let (Ok(name), Ok(role)) = (StaffName::parse(&row.staff_name), Role::parse(&row.role))
        else {
            return Ok(None);
        };
        if row.disabled != 0 || now_ms >= row.expires_at || now_ms >= idle_end_ms {
            return Ok(None);
        }
        // Often enough for the idle timeout: a session in use must never
        // look idle for lack of a write (with a 60 s timeout, every 15 s).
        let touch_every_ms = TOUCH_EVERY_SECONDS.min(policy.idle_seconds / 4).max(1) * 1000;
        if now_ms - row.last_seen_at >= touch_every_ms {
            self.write(None, move |c| {
                let h = id_hash.clone();
                Box::pin(async move { Ok(staff::touch_session(c, &h, now_ms).await?) })
            })
            .await?;
        }
        Ok(Some(StaffSession {
            name,
            role,
            csrf_token: row.csrf_token,
        }))
    }

    /// Ends the session a cookie token stands for (sign-out), recorded in
    /// the staff log with the client's address.
    pub async fn sign_out(&self, token: &str, address: Option<&str>) -> Result<(), ServiceError> {
        let id_hash = sha256_hex(token);
        let now_ms = to_ms(self.now());
        let address = address.map(str::to_string);
        self.write(None, move |c| {
            let h = id_hash.clone();
            let address = address.clone();
            Box::pin(async move {
                let who = staff::get_session(c, &h).await?.map(|s| s.staff_name);
                if staff::delete_session(c, &h).await?
                    && let Some(name) = who
                {
                    let actor = format!("staff:{name}");
                    audit(
                        c,
                        &actor,
                        actions::SIGN_OUT,
                        &name,
                        None,
                        address.as_deref(),
                        now_ms,
                    )
                    .await?;
                }
                Ok(())
            })
        })
        .await?;
        Ok(())
    }

    /// Deletes up to `batch` sessions past their absolute end and up to
    /// `batch` day-old sign-in attempts. A session that died of idleness
    /// is already refused by [`Service::session`]; its row goes once its
    /// absolute end passes too, so this needs no session settings.
    pub async fn purge_sessions(&self, batch: i64) -> Result<u64, ServiceError> {
        let now = self.now();
        let now_ms = to_ms(now);
        let attempts_before_ms = to_ms(now - Duration::days(1));
        Ok(self
            .write(None, move |c| {
                Box::pin(
                    async move { Ok(staff::purge(c, now_ms, attempts_before_ms, batch).await?) },
                )
            })
            .await?
            .fresh()
            .unwrap_or(0))
    }
}

/// What [`sign_in_tx`] records: the attempt's outcome and, when it succeeded, the new session.
#[derive(Clone)]
struct SignInRecord {
    key: String,
    address: String,
    csrf: String,
    id_hash: String,
    attempt_id: i64,
    succeeded: bool,
    now_ms: i64,
    expires_at_ms: i64,
}

/// Settles the sign-in attempt, logs it and, when it succeeded, opens the session.
async fn sign_in_tx(
    c: &mut sqlx::AnyConnection,
    record: SignInRecord,
) -> Result<bool, ServiceError> {
    let SignInRecord {
        key,
        address,
        csrf,
        id_hash,
        attempt_id,
        succeeded,
        now_ms,
        expires_at_ms,
    } = record;
    // Purged meanwhile (a day-old pending row): this attempt
    // has no standing any more.
    let settled = staff::settle_attempt(c, attempt_id, succeeded).await?;
    let succeeded = succeeded && settled;
    // A refused sign-in has no proven identity: its actor is
    // `anonymous` and the name tried is its target.
    let (actor, action) = if succeeded {
        (format!("staff:{key}"), actions::SIGN_IN)
    } else {
        ("anonymous".to_string(), actions::SIGN_IN_FAILED)
    };
    audit(c, &actor, action, &key, None, Some(&address), now_ms).await?;
    if succeeded {
        staff::insert_session(
            c,
            &staff::NewSession {
                id_hash: &id_hash,
                staff_name: &key,
                csrf_token: &csrf,
                address: &address,
                now_ms,
                expires_at_ms,
            },
        )
        .await?;
    }
    Ok(succeeded)
}

/// The transaction of [`Service::add_staff_by`]: replace an account's password
/// and role (ending its sessions), or create it; `true` when it replaced one.
async fn add_staff_tx(
    c: &mut sqlx::AnyConnection,
    actor: &str,
    name: &str,
    role: Role,
    hash: &str,
    replace: bool,
    now_ms: i64,
) -> Result<bool, ServiceError> {
    if replace && staff::update(c, name, role.as_str(), hash, now_ms).await? {
        staff::delete_sessions_of(c, name).await?;
        let detail = format!("role {}, new password", role.as_str());
        audit(
            c,
            actor,
            actions::REPLACE,
            name,
            Some(&detail),
            None,
            now_ms,
        )
        .await?;
        return Ok(true);
    }
    match staff::insert(c, name, role.as_str(), hash, now_ms).await {
        Ok(()) => {
            let detail = format!("role {}", role.as_str());
            audit(c, actor, actions::CREATE, name, Some(&detail), None, now_ms).await?;
            Ok(false)
        }
        Err(e) if is_unique_violation(&e) => Err(ServiceError::Invalid(FieldError::new(
            "name",
            "is taken; use --replace to reset it",
        ))),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dummy_hash_parses_so_unknown_names_cost_a_real_verification() {
        assert!(PasswordHash::new(DUMMY_HASH).is_ok());
    }
}
