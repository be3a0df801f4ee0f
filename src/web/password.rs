//! `/console/password`: every staff member changes their own password,
//! after re-entering the current one; and the texts of the password rules
//! that every password form shows beside its field.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::context::{csrf_token, lang};
use super::i18n::Lang;
use super::layout::{FieldErrors, field_error};
use super::posted::Posted;
use crate::domain::staff::{
    MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS, Password, PasswordProblem, StaffName,
};
use crate::http::AppState;
use crate::service::staff::SignInError;

/// The page of the form, and where it lands after a change.
pub const PASSWORD_PAGE: &str = "/console/password";

/// The own-password page.
pub fn routes() -> Router<AppState> {
    Router::new().route(PASSWORD_PAGE, get(page).post(change))
}

/// Why a new password was refused, in the staff member's language.
pub fn password_problem_text(l: Lang, p: PasswordProblem) -> String {
    match p {
        PasswordProblem::TooShort => crate::tr!(
            l,
            "the-password-needs-at-least-min",
            MIN_PASSWORD_CHARS = MIN_PASSWORD_CHARS
        ),
        PasswordProblem::TooLong => crate::tr!(
            l,
            "the-password-may-have-at-most",
            MAX_PASSWORD_CHARS = MAX_PASSWORD_CHARS
        ),
        PasswordProblem::ContainsName => l.t("the-password-must-not-contain-the").to_string(),
        PasswordProblem::Common => l.t("this-is-a-common-password-or").to_string(),
        PasswordProblem::Word => l.t("a-single-word-or-name-is").to_string(),
        PasswordProblem::Repeats => l.t("repeated-characters-or-chunks-like-aaaa").to_string(),
        PasswordProblem::Pattern => l.t("sequences-and-rows-of-keys-like").to_string(),
        PasswordProblem::Date => l.t("dates-and-years-are-easy-to").to_string(),
        PasswordProblem::SeasonAndYear => l.t("a-season-or-month-with-a-year").to_string(),
        PasswordProblem::Guessable => l.t("this-password-is-too-easy-to").to_string(),
    }
}

/// Checks a new password and its repetition for the account `name` (every
/// form that sets a password); the refusal names the field at fault and
/// says why in the staff member's language.
pub fn check_new_password(
    l: Lang,
    name: &StaffName,
    raw: &str,
    again: &str,
) -> Result<Password, (&'static str, String)> {
    let password =
        Password::parse(raw, name).map_err(|p| ("password", password_problem_text(l, p)))?;
    if raw != again {
        return Err((
            "password_again",
            l.t("the-two-passwords-differ-nothing-was").to_string(),
        ));
    }
    Ok(password)
}

/// Why re-entering one's own password did not pass.
pub fn reauth_text(l: Lang, e: &SignInError) -> String {
    match e {
        SignInError::RateLimited => l.t("too-many-wrong-passwords-try-again").to_string(),
        SignInError::Busy => crate::tr!(
            l,
            "password-checks-busy-retry-after",
            seconds = crate::service::passwords::BUSY_RETRY_AFTER_SECONDS
        ),
        _ => l.t("your-own-password-is-not-correct").to_string(),
    }
}

async fn page(staff: Staff) -> Response {
    render(&staff, &FieldErrors::default())
}

fn render(staff: &Staff, errors: &FieldErrors) -> Response {
    let refused = errors.clone();
    let mut r = staff.page(staff.lang.t("change-password"), move || {
        view! { <PasswordForm errors=refused/> }
    });
    if !errors.is_empty() {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

/// The own-password form: the current password, the new one twice; after
/// a refused change, each reason beside its field.
#[component]
fn PasswordForm(errors: FieldErrors) -> impl IntoView {
    let l = lang();
    let current = errors.input_attrs("current_password", "current-password");
    let new = errors.input_attrs("password", "new-password");
    let again = errors.input_attrs("password_again", "new-password-again");
    view! {
        <section aria-labelledby="password-heading" class="narrow">
            <h2 id="password-heading" class="visually-hidden">{l.t("change-my-password")}</h2>
            <p class="note">{l.t("after-the-change-your-sessions-on")}</p>
            <form method="post" action=PASSWORD_PAGE class="stack" data-testid="password-form">
                <input type="hidden" name="csrf" value=csrf_token()/>
                <label for="current-password">{l.t("current-password")}</label>
                <input id="current-password" name="current_password" type="password" autocomplete="current-password" required=true
                    aria-invalid=current.invalid aria-describedby=current.described_by.clone()/>
                {field_error(&current)}
                <label for="new-password">{l.t("new-password-at-least-12-characters")}</label>
                <input id="new-password" name="password" type="password" autocomplete="new-password" required=true minlength="12"
                    aria-invalid=new.invalid aria-describedby=new.described_by.clone()/>
                {field_error(&new)}
                <label for="new-password-again">{l.t("new-password-again")}</label>
                <input id="new-password-again" name="password_again" type="password" autocomplete="new-password" required=true minlength="12"
                    aria-invalid=again.invalid aria-describedby=again.described_by.clone()/>
                {field_error(&again)}
                <button type="submit" class="primary">{l.t("change-password")}</button>
            </form>
        </section>
    }
}

#[derive(Deserialize)]
struct ChangeForm {
    #[serde(default)]
    current_password: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_again: String,
}

async fn change(
    State(s): State<AppState>,
    staff: Staff,
    Posted { form, .. }: Posted<ChangeForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let mut errors = FieldErrors::default();
    let new = check_new_password(l, &staff.session.name, &form.password, &form.password_again)
        .map_err(|(field, text)| errors.add(field, text))
        .ok();
    if form.current_password.is_empty() {
        errors.add(
            "current_password",
            l.t("enter-your-current-password").to_string(),
        );
    }
    let Some(new) = new.filter(|_| errors.is_empty()) else {
        return Ok(render(&staff, &errors));
    };
    Ok(
        match s
            .service
            .change_own_password(&staff.session, &form.current_password, &new, &staff.address)
            .await
        {
            Ok(()) => staff.done(
                PASSWORD_PAGE,
                l.t("your-password-was-changed-your-other").to_string(),
            ),
            Err(SignInError::Service(e)) => WebError::from_service(l, e).into_response(),
            Err(e) => {
                errors.add("current_password", reauth_text(l, &e));
                render(&staff, &errors)
            }
        },
    )
}
