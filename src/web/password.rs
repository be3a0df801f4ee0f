//! `/console/password`: every staff member changes their own password,
//! after re-entering the current one; and the texts of the password rules
//! that every password form shows beside its field.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use super::layout::{FieldErrors, field_error};
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
        PasswordProblem::TooShort => l.pick(
            format!("密码至少需要 {MIN_PASSWORD_CHARS} 个字符。"),
            format!("The password needs at least {MIN_PASSWORD_CHARS} characters."),
        ),
        PasswordProblem::TooLong => l.pick(
            format!("密码最多 {MAX_PASSWORD_CHARS} 个字符。"),
            format!("The password may have at most {MAX_PASSWORD_CHARS} characters."),
        ),
        PasswordProblem::ContainsName => l
            .t(
                "密码不能包含用户名。",
                "The password must not contain the account name.",
            )
            .to_string(),
        PasswordProblem::Common => l
            .t(
                "这是常见密码（或与常见密码太像），很容易被猜中。",
                "This is a common password (or too close to one) and easy to guess.",
            )
            .to_string(),
        PasswordProblem::Word => l
            .t(
                "单个单词或人名很容易被猜中；请用几个不相关的词组成一句话。",
                "A single word or name is easy to guess; use a few unrelated words.",
            )
            .to_string(),
        PasswordProblem::Repeats => l
            .t(
                "重复的字符或片段（如 aaaa、abcabc）很容易被猜中。",
                "Repeated characters or chunks (like aaaa or abcabc) are easy to guess.",
            )
            .to_string(),
        PasswordProblem::Pattern => l
            .t(
                "连续的字符或键盘上的一排键（如 abcd、6543、qwerty）很容易被猜中。",
                "Sequences and rows of keys (like abcd, 6543 or qwerty) are easy to guess.",
            )
            .to_string(),
        PasswordProblem::Date => l
            .t(
                "日期和年份很容易被猜中。",
                "Dates and years are easy to guess.",
            )
            .to_string(),
        PasswordProblem::Guessable => l
            .t(
                "这个密码太容易被猜中；请用更长、更少见的组合。",
                "This password is too easy to guess; use a longer, less common one.",
            )
            .to_string(),
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
            l.t(
                "两次输入的密码不一致，未做任何更改。",
                "The two passwords differ; nothing was changed.",
            )
            .to_string(),
        ));
    }
    Ok(password)
}

/// Why re-entering one's own password did not pass.
pub fn reauth_text(l: Lang, e: &SignInError) -> String {
    match e {
        SignInError::RateLimited => l
            .t(
                "密码错误次数过多，请 15 分钟后再试。",
                "Too many wrong passwords; try again in 15 minutes.",
            )
            .to_string(),
        _ => l
            .t(
                "你自己的密码不正确，未做任何更改。",
                "Your own password is not correct; nothing was changed.",
            )
            .to_string(),
    }
}

async fn page(staff: Staff) -> Response {
    render(&staff, &FieldErrors::default())
}

fn render(staff: &Staff, errors: &FieldErrors) -> Response {
    let l = staff.lang;
    let csrf = staff.session.csrf_token.clone();
    let current = errors.input_attrs("current_password", "current-password");
    let new = errors.input_attrs("password", "new-password");
    let again = errors.input_attrs("password_again", "new-password-again");
    let mut r = staff.page(
        l.t("修改密码", "Change password"),
        view! {
            <section aria-labelledby="password-heading" class="narrow">
                <h2 id="password-heading" class="visually-hidden">{l.t("修改我的密码", "Change my password")}</h2>
                <p class="note">{l.t(
                    "修改后，你在其他设备上的登录会全部结束，当前登录保留。",
                    "After the change your sessions on other devices end; this one stays.",
                )}</p>
                <form method="post" action=PASSWORD_PAGE class="stack" data-testid="password-form">
                    <input type="hidden" name="csrf" value=csrf/>
                    <label for="current-password">{l.t("当前密码", "Current password")}</label>
                    <input id="current-password" name="current_password" type="password" autocomplete="current-password" required=true
                        aria-invalid=current.invalid aria-describedby=current.described_by.clone()/>
                    {field_error(&current)}
                    <label for="new-password">{l.t("新密码（至少 12 个字符，不含用户名，不能是常见密码）", "New password (at least 12 characters, not your name, not a common password)")}</label>
                    <input id="new-password" name="password" type="password" autocomplete="new-password" required=true minlength="12"
                        aria-invalid=new.invalid aria-describedby=new.described_by.clone()/>
                    {field_error(&new)}
                    <label for="new-password-again">{l.t("再次输入新密码", "New password again")}</label>
                    <input id="new-password-again" name="password_again" type="password" autocomplete="new-password" required=true minlength="12"
                        aria-invalid=again.invalid aria-describedby=again.described_by.clone()/>
                    {field_error(&again)}
                    <button type="submit" class="primary">{l.t("修改密码", "Change password")}</button>
                </form>
            </section>
        },
    );
    if !errors.is_empty() {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
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

async fn change(State(s): State<AppState>, staff: Staff, body: Bytes) -> Response {
    let form: ChangeForm = match staff.posted(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let l = staff.lang;
    let mut errors = FieldErrors::default();
    let new = check_new_password(l, &staff.session.name, &form.password, &form.password_again)
        .map_err(|(field, text)| errors.add(field, text))
        .ok();
    if form.current_password.is_empty() {
        errors.add(
            "current_password",
            l.t("请输入当前密码。", "Enter your current password.")
                .to_string(),
        );
    }
    let Some(new) = new.filter(|_| errors.is_empty()) else {
        return render(&staff, &errors);
    };
    match s
        .service
        .change_own_password(&staff.session, &form.current_password, &new, &staff.address)
        .await
    {
        Ok(()) => staff.done(
            PASSWORD_PAGE,
            l.t(
                "密码已修改，你在其他设备上的登录已结束。",
                "Your password was changed; your other sessions were ended.",
            )
            .to_string(),
        ),
        Err(SignInError::Service(e)) => WebError::from_service(l, e).into_response(),
        Err(e) => {
            errors.add("current_password", reauth_text(l, &e));
            render(&staff, &errors)
        }
    }
}
