//! Staff management for admins: `/console/staff` lists the accounts and
//! offers, per account, a role change, a password reset and disable /
//! enable, plus a form to add an account. Support and operator staff get a
//! 403 page on every route here.
//!
//! Each action is a POST with the session's CSRF token, calls one service
//! function (one transaction) and redirects back with a flash message. A
//! refused form comes back instead (422): the page with the values typed
//! (never passwords) and the message beside the field at fault, or beside
//! the account's buttons. Only an action on an account that does not exist
//! (no row to show it on) is refused with a flash. The rules (nobody
//! demotes or disables themself, the last enabled admin stays one) live in
//! [`crate::service::staff`].

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError, parse_form};
use super::context::{csrf_token, lang, viewer};
use super::i18n::Lang;
use super::layout::{FieldErrors, field_error, role_label};
use super::password::{check_new_password as password_text, reauth_text};
use super::paths;
use super::posted::OrPage;
use crate::domain::FieldError;
use crate::domain::permissions::Permission;
use crate::domain::staff::{Role, StaffName};
use crate::domain::time::from_ms;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::staff::{SignInError, StaffChange, StaffRule, StaffView};

/// The page everything here redirects back to.
const STAFF_PAGE: &str = "/console/staff";

/// Routes of the staff pages, all for admins only.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(STAFF_PAGE, get(staff_page).post(add_account))
        .route("/console/staff/{name}/role", post(change_role))
        .route("/console/staff/{name}/password", post(reset_password))
        .route("/console/staff/{name}/disable", post(disable))
        .route("/console/staff/{name}/enable", post(enable))
}

/// The 403 page for anyone but an admin.
fn admins_only(staff: &Staff) -> Result<(), WebError> {
    if staff.may(Permission::ManageStaff) {
        Ok(())
    } else {
        Err(WebError::forbidden(
            staff.lang.t("only-an-admin-can-manage-staff"),
        ))
    }
}

/// Admin, form parsed, CSRF checked: what every action needs first.
fn admin_form<T: serde::de::DeserializeOwned + HasCsrf>(
    staff: &Staff,
    body: &Bytes,
) -> Result<T, WebError> {
    admins_only(staff)?;
    let form: T = parse_form(body)?;
    staff.check_csrf(form.csrf())?;
    Ok(form)
}

trait HasCsrf {
    fn csrf(&self) -> Option<&str>;
}

/// A role's name in both languages, for flash messages.
fn role_text(l: Lang, role: Role) -> &'static str {
    role_label(l, role.as_str())
}

fn name_text(l: Lang) -> String {
    l.t("a-name-has-1-to-64").to_string()
}

fn role_from_form(l: Lang, raw: &str) -> Result<Role, String> {
    Role::parse(raw).map_err(|_| l.t("unknown-role-choose-support-operator-or").to_string())
}

/// A bad-input message in the page's language.
fn field_text(l: Lang, f: &FieldError) -> String {
    match (f.field, f.message.as_str()) {
        ("name", "is taken") => l.t("that-name-is-already-taken").to_string(),
        ("name", _) => name_text(l),
        ("role", _) => l.t("unknown-role-2").to_string(),
        (field, message) => format!("{field}: {message}"),
    }
}

/// A service error as the flash of a refused action, or as an error page
/// (someone who is no longer an admin, database trouble).
fn refusal(staff: &Staff, e: ServiceError) -> Response {
    let l = staff.lang;
    let text = match &e {
        ServiceError::Invalid(f) => field_text(l, f),
        ServiceError::NotFound { id, .. } => crate::tr!(l, "there-is-no-account-named", id = id),
        ServiceError::Forbidden(m) => match rule_text(l, m) {
            Some(t) => t,
            None => return WebError::from_service(l, e).into_response(),
        },
        _ => return WebError::from_service(l, e).into_response(),
    };
    staff.refused(STAFF_PAGE, text)
}

/// The words of a staff rule that refused an action, if it was one.
fn rule_text(l: Lang, message: &str) -> Option<String> {
    match StaffRule::from_message(message) {
        Some(StaffRule::OwnAccount) => Some(l.t("you-cannot-disable-or-demote-your").to_string()),
        Some(StaffRule::LastAdmin) => Some(l.t("this-is-the-last-enabled-admin").to_string()),
        _ => None,
    }
}

/// A refused role change or disable/enable of the account `name`: the
/// staff page again (422) with the message beside its role select
/// (`role`) or its buttons (`form`) and the role as chosen; an unknown
/// account or anything but a refusal goes to [`refusal`].
async fn row_refusal(
    s: &AppState,
    staff: &Staff,
    name: &str,
    field: &'static str,
    role: Option<Role>,
    e: ServiceError,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let text = match &e {
        ServiceError::Invalid(f) => field_text(l, f),
        ServiceError::Forbidden(m) => match rule_text(l, m) {
            Some(t) => t,
            None => return Ok(refusal(staff, e)),
        },
        _ => return Ok(refusal(staff, e)),
    };
    row_refused(s, staff, name, field, role, text).await
}

/// The staff page with `text` beside `field` of account `name`'s row; its
/// own row has no role select, so the message goes beside its buttons.
async fn row_refused(
    s: &AppState,
    staff: &Staff,
    name: &str,
    field: &'static str,
    role: Option<Role>,
    text: String,
) -> Result<Response, WebError> {
    let field = if name == staff.session.name.as_str() {
        "form"
    } else {
        field
    };
    let mut errors = FieldErrors::default();
    errors.add(field, text);
    render_staff_page(
        s,
        staff,
        Refused {
            row: Some(RowRefused {
                name: name.to_string(),
                role,
                errors,
            }),
            ..Refused::default()
        },
    )
    .await
}

fn time_of(ms: i64) -> String {
    crate::i18n::zone::local_minutes(from_ms(ms))
}

/// What a refused form brings back to the page: the values typed (never
/// passwords) and a message at each field at fault.
#[derive(Debug, Clone, Default)]
struct Refused {
    /// The add-account form.
    add: AddValues,
    /// The account whose password-reset form was refused, and why.
    reset: Option<(String, FieldErrors)>,
    /// The account whose role change or disable/enable was refused.
    row: Option<RowRefused>,
}

/// A refused role change or disable/enable: the account, the role chosen
/// (when it was one), and the message at `role` or `form`.
#[derive(Debug, Clone)]
struct RowRefused {
    name: String,
    role: Option<Role>,
    errors: FieldErrors,
}

/// The add-account form's values and errors.
#[derive(Debug, Clone, Default)]
struct AddValues {
    name: String,
    role: Option<Role>,
    errors: FieldErrors,
}

async fn staff_page(State(s): State<AppState>, staff: Staff) -> Result<Response, WebError> {
    render_staff_page(&s, &staff, Refused::default()).await
}

/// The staff page; with a refused form, its values and messages in place
/// and status 422 (the form was understood and refused).
async fn render_staff_page(
    s: &AppState,
    staff: &Staff,
    refused: Refused,
) -> Result<Response, WebError> {
    if let Err(e) = admins_only(staff) {
        return Ok(e.into_response());
    }
    let l = staff.lang;
    let accounts = s.service.list_staff().await.or_page(l)?;
    let count = accounts.len();
    let has_errors =
        !refused.add.errors.is_empty() || refused.reset.is_some() || refused.row.is_some();
    let mut r = staff.page(l.t("staff"), move || {
        let rows = accounts
            .into_iter()
            .map(|a| {
                let errors = refused
                    .reset
                    .as_ref()
                    .filter(|(name, _)| *name == a.name)
                    .map(|(_, e)| e.clone());
                let row = refused.row.clone().filter(|r| r.name == a.name);
                view! { <AccountRow account=a reset_errors=errors row=row/> }
            })
            .collect_view();
        view! {
            <section aria-labelledby="staff-accounts">
                <h2 id="staff-accounts">
                    {l.t("staff-accounts")}" "
                    <span class="note">"("{count}")"</span>
                </h2>
                <p class="note">{l.t("changing-a-role-resetting-a-password")}</p>
                <div class="table-wrap">
                    <table data-testid="staff-table">
                        <caption class="visually-hidden">{l.t("staff-accounts")}</caption>
                        <thead><tr>
                            <th scope="col">{l.t("name")}</th>
                            <th scope="col">{l.t("role")}</th>
                            <th scope="col">{l.t("state")}</th>
                            <th scope="col">{l.t("created-2")}</th>
                            <th scope="col">{l.t("actions")}</th>
                        </tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            </section>
            <AddAccountForm values=refused.add/>
        }
    });
    if has_errors {
        *r.status_mut() = axum::http::StatusCode::UNPROCESSABLE_ENTITY;
    }
    Ok(r)
}

/// One account: its facts and the forms that change it; `reset_errors`
/// when its password-reset form was just refused (the form is open then),
/// `row` when its role change or disable/enable was. The signed-in admin's
/// own account offers no role change and no disable.
#[component]
fn AccountRow(
    account: StaffView,
    reset_errors: Option<FieldErrors>,
    row: Option<RowRefused>,
) -> impl IntoView {
    let (l, a, csrf) = (lang(), account, csrf_token());
    let is_me = viewer().is_some_and(|v| v.name.as_str() == a.name);
    let row_errors = row.as_ref().map(|r| r.errors.clone()).unwrap_or_default();
    // The role as chosen in a refused change, else the account's.
    let role = row
        .as_ref()
        .and_then(|r| r.role)
        .map(|r| r.as_str().to_string())
        .unwrap_or_else(|| a.role.clone());
    let state = if a.disabled {
        view! { <span class="badge badge-problem" data-state="disabled">{l.t("disabled")}</span> }
    } else {
        view! { <span class="badge badge-ok" data-state="enabled">{l.t("enabled")}</span> }
    };
    let role_form = (!is_me).then(|| {
        let id = format!("role-{}", a.name);
        let field = row_errors.input_attrs("role", &id);
        let options = Role::ALL
            .into_iter()
            .map(|r| {
                let selected = r.as_str() == role;
                view! { <option value=r.as_str() selected=selected>{role_text(l, r)}</option> }
            })
            .collect_view();
        view! {
            <form method="post" action=paths::staff_role(&a.name) class="inline">
                <input type="hidden" name="csrf" value=csrf.clone()/>
                <label for=id.clone()>{l.t("role")}</label>" "
                <select id=id name="role" aria-invalid=field.invalid aria-describedby=field.described_by.clone()>{options}</select>" "
                <button type="submit">{l.t("change-role")}</button>
                {field_error(&field)}
            </form>
        }
    });
    let row_error = field_error(&row_errors.input_attrs("form", &format!("row-{}", a.name)));
    let toggle = (!is_me).then(|| {
        if a.disabled {
            view! {
                <form method="post" action=paths::staff_enable(&a.name) class="inline">
                    <input type="hidden" name="csrf" value=csrf.clone()/>
                    <button type="submit">{l.t("enable")}</button>
                </form>
            }
            .into_any()
        } else {
            view! {
                <form method="post" action=paths::staff_disable(&a.name) class="inline">
                    <input type="hidden" name="csrf" value=csrf.clone()/>
                    <button type="submit" class="danger">{l.t("disable")}</button>
                </form>
            }
            .into_any()
        }
    });
    let me_note = is_me.then(|| view! { " "<span class="note">{l.t("you")}</span> });
    let open = reset_errors.is_some();
    let errors = reset_errors.unwrap_or_default();
    let pw_id = format!("pw-{}", a.name);
    let pw2_id = format!("pw2-{}", a.name);
    let own_id = format!("own-{}", a.name);
    let created = time_of(a.created_at_ms);
    let name = a.name.clone();
    let row_key = a.name.clone();
    let pw_field = errors.input_attrs("password", &pw_id);
    let pw2_field = errors.input_attrs("password_again", &pw2_id);
    let own_field = errors.input_attrs("own_password", &own_id);
    view! {
        <tr data-staff=row_key>
            <td class="mono">{name}{me_note}</td>
            <td data-testid="staff-role">{role_label(l, &a.role)}</td>
            <td>{state}</td>
            <td class="nowrap">{created}</td>
            <td>
                <div class="actions">
                    {role_form}
                    {toggle}
                </div>
                {row_error}
                <details open=open>
                    <summary>{l.t("reset-password")}</summary>
                    <form method="post" action=paths::staff_password(&a.name) class="stack">
                        <input type="hidden" name="csrf" value=csrf.clone()/>
                        <label for=pw_id.clone()>{l.t("new-password-at-least-12-characters-2")}</label>
                        <input id=pw_id name="password" type="password" autocomplete="new-password" required=true minlength="12"
                            aria-invalid=pw_field.invalid aria-describedby=pw_field.described_by.clone()/>
                        {field_error(&pw_field)}
                        <label for=pw2_id.clone()>{l.t("new-password-again")}</label>
                        <input id=pw2_id name="password_again" type="password" autocomplete="new-password" required=true minlength="12"
                            aria-invalid=pw2_field.invalid aria-describedby=pw2_field.described_by.clone()/>
                        {field_error(&pw2_field)}
                        <label for=own_id.clone()>{l.t("your-own-password-to-confirm-it")}</label>
                        <input id=own_id name="own_password" type="password" autocomplete="current-password" required=true
                            aria-invalid=own_field.invalid aria-describedby=own_field.described_by.clone()/>
                        {field_error(&own_field)}
                        <button type="submit">{l.t("reset-password")}</button>
                    </form>
                </details>
            </td>
        </tr>
    }
}

/// The form that adds an account; after a refused add, with the values
/// typed (never passwords) and each message beside its field.
#[component]
fn AddAccountForm(values: AddValues) -> impl IntoView {
    let l = lang();
    let chosen = values.role.unwrap_or(Role::Support);
    let options = Role::ALL
        .into_iter()
        .map(|r| {
            let selected = r == chosen;
            view! { <option value=r.as_str() selected=selected>{role_text(l, r)}</option> }
        })
        .collect_view();
    let name_field = values.errors.input_attrs("name", "new-name");
    let role_field = values.errors.input_attrs("role", "new-role");
    let pw_field = values.errors.input_attrs("password", "new-password");
    let pw2_field = values
        .errors
        .input_attrs("password_again", "new-password-again");
    let name = values.name;
    view! {
        <section aria-labelledby="staff-add">
            <h2 id="staff-add">{l.t("add-an-account")}</h2>
            <form method="post" action=STAFF_PAGE class="stack narrow" data-testid="staff-add-form">
                <input type="hidden" name="csrf" value=csrf_token()/>
                <label for="new-name">{l.t("name-lower-case-letters-digits")}</label>
                <input id="new-name" name="name" type="text" autocomplete="off" required=true maxlength="64" value=name
                    aria-invalid=name_field.invalid aria-describedby=name_field.described_by.clone()/>
                {field_error(&name_field)}
                <label for="new-role">{l.t("role")}</label>
                <select id="new-role" name="role" aria-invalid=role_field.invalid aria-describedby=role_field.described_by.clone()>{options}</select>
                {field_error(&role_field)}
                <label for="new-password">{l.t("password-at-least-12-characters-not")}</label>
                <input id="new-password" name="password" type="password" autocomplete="new-password" required=true minlength="12"
                    aria-invalid=pw_field.invalid aria-describedby=pw_field.described_by.clone()/>
                {field_error(&pw_field)}
                <label for="new-password-again">{l.t("password-again")}</label>
                <input id="new-password-again" name="password_again" type="password" autocomplete="new-password" required=true minlength="12"
                    aria-invalid=pw2_field.invalid aria-describedby=pw2_field.described_by.clone()/>
                {field_error(&pw2_field)}
                <button type="submit" class="primary">{l.t("add-account")}</button>
            </form>
        </section>
    }
}

#[derive(Deserialize)]
struct AddForm {
    csrf: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_again: String,
}

impl HasCsrf for AddForm {
    fn csrf(&self) -> Option<&str> {
        self.csrf.as_deref()
    }
}

async fn add_account(
    State(s): State<AppState>,
    staff: Staff,
    body: Bytes,
) -> Result<Response, WebError> {
    let form: AddForm = match admin_form(&staff, &body) {
        Ok(f) => f,
        Err(e) => return Ok(e.into_response()),
    };
    let l = staff.lang;
    let mut values = AddValues {
        name: form.name.trim().chars().take(64).collect(),
        role: Role::parse(&form.role).ok(),
        errors: FieldErrors::default(),
    };
    let name = StaffName::parse(&form.name);
    let role = role_from_form(l, &form.role);
    if name.is_err() {
        values.errors.add("name", name_text(l));
    }
    if let Err(t) = &role {
        values.errors.add("role", t.clone());
    }
    let (Ok(name), Ok(role)) = (name, role) else {
        return render_staff_page(
            &s,
            &staff,
            Refused {
                add: values,
                ..Refused::default()
            },
        )
        .await;
    };
    let password = match password_text(l, &name, &form.password, &form.password_again) {
        Ok(p) => p,
        Err((field, text)) => {
            values.errors.add(field, text);
            return render_staff_page(
                &s,
                &staff,
                Refused {
                    add: values,
                    ..Refused::default()
                },
            )
            .await;
        }
    };
    Ok(
        match s
            .service
            .create_staff(&staff.session, &name, role, &password, Some(&staff.address))
            .await
        {
            Ok(()) => staff.done(
                STAFF_PAGE,
                crate::tr!(
                    l,
                    "added-account",
                    name = name.to_string(),
                    role = role_text(l, role)
                ),
            ),
            Err(ServiceError::Invalid(f)) => {
                let field = match f.field {
                    "role" => "role",
                    "password" => "password",
                    _ => "name",
                };
                values.errors.add(field, field_text(l, &f));
                render_staff_page(
                    &s,
                    &staff,
                    Refused {
                        add: values,
                        ..Refused::default()
                    },
                )
                .await?
            }
            Err(e) => refusal(&staff, e),
        },
    )
}

#[derive(Deserialize)]
struct RoleForm {
    csrf: Option<String>,
    #[serde(default)]
    role: String,
}

impl HasCsrf for RoleForm {
    fn csrf(&self) -> Option<&str> {
        self.csrf.as_deref()
    }
}

async fn change_role(
    State(s): State<AppState>,
    staff: Staff,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    let form: RoleForm = match admin_form(&staff, &body) {
        Ok(f) => f,
        Err(e) => return Ok(e.into_response()),
    };
    let l = staff.lang;
    let role = match role_from_form(l, &form.role) {
        Ok(r) => r,
        Err(t) => return unknown_account_or(&s, &staff, &name, "role", None, t).await,
    };
    Ok(
        match s
            .service
            .set_staff_role(&staff.session, &name, role, Some(&staff.address))
            .await
        {
            Ok(StaffChange::Changed) => staff.done(
                STAFF_PAGE,
                crate::tr!(
                    l,
                    "is-now-their-sessions-were-ended",
                    name = name.to_string(),
                    role = role_text(l, role)
                ),
            ),
            Ok(StaffChange::AlreadySo) => staff.done(
                STAFF_PAGE,
                crate::tr!(
                    l,
                    "is-already-nothing-changed",
                    name = name.to_string(),
                    role = role_text(l, role)
                ),
            ),
            Err(e) => row_refusal(&s, &staff, &name, "role", Some(role), e).await?,
        },
    )
}

/// A refusal found before asking the service: beside the account's row,
/// or, when there is no such account, the flash saying so.
async fn unknown_account_or(
    s: &AppState,
    staff: &Staff,
    name: &str,
    field: &'static str,
    role: Option<Role>,
    text: String,
) -> Result<Response, WebError> {
    Ok(match s.service.list_staff().await {
        Ok(accounts) if accounts.iter().any(|a| a.name == name) => {
            row_refused(s, staff, name, field, role, text).await?
        }
        Ok(_) => refusal(staff, ServiceError::not_found("staff", name)),
        Err(e) => WebError::from_service(staff.lang, e).into_response(),
    })
}

#[derive(Deserialize)]
struct PasswordForm {
    csrf: Option<String>,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_again: String,
    /// The admin's own password.
    #[serde(default)]
    own_password: String,
}

impl HasCsrf for PasswordForm {
    fn csrf(&self) -> Option<&str> {
        self.csrf.as_deref()
    }
}

async fn reset_password(
    State(s): State<AppState>,
    staff: Staff,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    let form: PasswordForm = match admin_form(&staff, &body) {
        Ok(f) => f,
        Err(e) => return Ok(e.into_response()),
    };
    let l = staff.lang;
    let Ok(target) = StaffName::parse(&name) else {
        return Ok(refusal(&staff, ServiceError::not_found("staff", name)));
    };
    let refused = |field: &'static str, text: String| {
        let mut errors = FieldErrors::default();
        errors.add(field, text);
        Refused {
            reset: Some((target.as_str().to_string(), errors)),
            ..Refused::default()
        }
    };
    let password = match password_text(l, &target, &form.password, &form.password_again) {
        Ok(p) => p,
        Err((field, text)) => return render_staff_page(&s, &staff, refused(field, text)).await,
    };
    Ok(
        match s
            .service
            .reset_staff_password(
                &staff.session,
                &name,
                &password,
                &form.own_password,
                Some(&staff.address),
            )
            .await
        {
            Ok(()) => staff.done(
                STAFF_PAGE,
                crate::tr!(l, "the-password-of-was-reset-their", name = name),
            ),
            Err(SignInError::Service(ServiceError::Invalid(f))) => {
                render_staff_page(&s, &staff, refused("password", field_text(l, &f))).await?
            }
            Err(SignInError::Service(e)) => refusal(&staff, e),
            Err(e) => {
                render_staff_page(&s, &staff, refused("own_password", reauth_text(l, &e))).await?
            }
        },
    )
}

#[derive(Deserialize)]
struct CsrfOnly {
    csrf: Option<String>,
}

impl HasCsrf for CsrfOnly {
    fn csrf(&self) -> Option<&str> {
        self.csrf.as_deref()
    }
}

async fn disable(
    s: State<AppState>,
    staff: Staff,
    name: Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    set_disabled(s, staff, name, body, true).await
}

async fn enable(
    s: State<AppState>,
    staff: Staff,
    name: Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    set_disabled(s, staff, name, body, false).await
}

async fn set_disabled(
    State(s): State<AppState>,
    staff: Staff,
    Path(name): Path<String>,
    body: Bytes,
    disabled: bool,
) -> Result<Response, WebError> {
    if let Err(e) = admin_form::<CsrfOnly>(&staff, &body) {
        return Ok(e.into_response());
    }
    let l = staff.lang;
    Ok(
        match s
            .service
            .set_staff_disabled(&staff.session, &name, disabled, Some(&staff.address))
            .await
        {
            Ok(change) => {
                let text = match (disabled, change) {
                    (true, StaffChange::Changed) => {
                        crate::tr!(l, "disabled-their-sessions-were-ended", name = name)
                    }
                    (false, StaffChange::Changed) => {
                        crate::tr!(l, "enabled-2", name = name)
                    }
                    (true, StaffChange::AlreadySo) => {
                        crate::tr!(l, "was-already-disabled", name = name)
                    }
                    (false, StaffChange::AlreadySo) => {
                        crate::tr!(l, "was-already-enabled", name = name)
                    }
                };
                staff.done(STAFF_PAGE, text)
            }
            Err(e) => row_refusal(&s, &staff, &name, "form", None, e).await?,
        },
    )
}
