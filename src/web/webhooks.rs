//! Webhook subscribers: every staff member can see who receives webhooks
//! (secrets only by their last 4 characters); operators add subscribers
//! (an explicit form with CSRF) and disable them (confirmation page, CSRF).
//! The environment's default subscriber (`COUPONKEEPER_WEBHOOK_URL`) is
//! listed but cannot be changed here. A refused add (a URL that is not
//! http(s), has credentials in it or points at this host's or a private
//! network: see [`crate::service::Service::check_receiver`]; no event
//! type, an unknown one, a secret of the wrong length or not typed the
//! same twice) shows the form again (422) with what was typed (never the
//! secrets) and each reason beside its field, and nothing is written.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::components::ConfirmForm;
use super::context::{csrf_token, lang, viewer_may};
use super::i18n::Lang;
use super::layout::{FieldErrors, field_error, time_string};
use super::paths;
use super::posted::OrPage;
use crate::domain::ids::SubscriberId;
use crate::domain::permissions::Permission;
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::webhooks::{EVENT_TYPES, ReceiverRefusal, SubscriberView, UrlProblem};

const LIST: &str = "/console/webhooks";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(LIST, get(list).post(add))
        .route(
            "/console/webhooks/{id}/disable",
            get(|s, staff, id| confirm_page(s, staff, id, Switch::Disable))
                .post(|s, staff, id, body| switch(s, staff, id, body, Switch::Disable)),
        )
        .route(
            "/console/webhooks/{id}/enable",
            get(|s, staff, id| confirm_page(s, staff, id, Switch::Enable))
                .post(|s, staff, id, body| switch(s, staff, id, body, Switch::Enable)),
        )
}

/// Disabling or enabling a console subscriber: the same confirmation page
/// and post, with their own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Switch {
    Disable,
    Enable,
}

impl Switch {
    fn path(self) -> &'static str {
        match self {
            Switch::Disable => "disable",
            Switch::Enable => "enable",
        }
    }

    /// Its confirmation page and post for subscriber `id`.
    fn action(self, id: &SubscriberId) -> String {
        match self {
            Switch::Disable => paths::subscriber_disable(id),
            Switch::Enable => paths::subscriber_enable(id),
        }
    }

    fn verb(self, l: Lang) -> &'static str {
        match self {
            Switch::Disable => l.t("disable-2"),
            Switch::Enable => l.t("enable-2"),
        }
    }

    /// The subscriber is already in the state this switch leads to.
    fn already(self, enabled: bool) -> bool {
        (self == Switch::Disable) != enabled
    }
}

fn operator(staff: &Staff) -> bool {
    staff.may(Permission::ManageWebhooks)
}

fn operator_only(staff: &Staff) -> Option<Response> {
    (!operator(staff)).then(|| {
        WebError::forbidden(
            staff
                .lang
                .t("managing-webhook-subscribers-needs-the-operator"),
        )
        .into_response()
    })
}

/// The subscribed event types in words.
pub(super) fn types_text(l: Lang, types: &[String]) -> String {
    if types.is_empty() || types.iter().any(|t| t == "*") {
        l.t("all-types").to_string()
    } else {
        types
            .iter()
            .map(|t| event_type_label(l, t))
            .collect::<Vec<_>>()
            .join(l.t("template-change-separator"))
    }
}

/// An event type's name (`coupon.expired` -> 券已过期); an unknown one as
/// stored. The codes are for the receiving program, listed with their
/// names in the documentation.
pub(super) fn event_type_label(l: Lang, event_type: &str) -> String {
    if crate::service::webhooks::EVENT_TYPES.contains(&event_type) {
        l.t(&format!(
            "webhook-type-{}",
            event_type.replace(['.', '_'], "-")
        ))
        .to_string()
    } else {
        event_type.to_string()
    }
}

/// Whether a subscriber is enabled, as a badge.
#[component]
fn EnabledBadge(enabled: bool) -> impl IntoView {
    let l = lang();
    if enabled {
        view! { <span class="badge badge-ok" data-enabled="true">{l.t("enabled")}</span> }
    } else {
        view! { <span class="badge badge-problem" data-enabled="false">{l.t("disabled")}</span> }
    }
}

/// The subscribers, each with its disable or enable button when the
/// signed-in staff member may use it (never on the environment's).
#[component]
fn SubscriberTable(subs: Vec<SubscriberView>) -> impl IntoView {
    let l = lang();
    let may_disable = viewer_may(Permission::ManageWebhooks);
    let body = subs
        .into_iter()
        .map(|s| {
            let created = if s.from_environment {
                l.t("from-couponkeeper-webhook-url").to_string()
            } else {
                format!(
                    "{} · {}",
                    time_string(&s.created_at),
                    super::layout::actor_text(l, &s.created_by)
                )
            };
            let action = (may_disable && !s.from_environment).then(|| {
                let switch = if s.enabled {
                    Switch::Disable
                } else {
                    Switch::Enable
                };
                let (href, testid, verb) = (switch.action(&s.id), switch.path(), switch.verb(l));
                view! { <a class="button" href=href data-testid=testid>{verb}</a> }
            });
            view! {
                <tr data-subscriber=s.id.clone()>
                    <td class="mono">{s.url.clone()}</td>
                    <td>{types_text(l, &s.event_types)}</td>
                    <td><EnabledBadge enabled=s.enabled/></td>
                    <td class="mono" data-testid="secret-hint">{s.secret_hint.clone()}</td>
                    <td class="nowrap">{created}</td>
                    <td>{action}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap"><table data-testid="subscribers">
            <thead><tr>
                <th scope="col">{l.t("url")}</th>
                <th scope="col">{l.t("event-types")}</th>
                <th scope="col">{l.t("state")}</th>
                <th scope="col">{l.t("secret")}</th>
                <th scope="col">{l.t("created-3")}</th>
                <th scope="col">{l.t("actions")}</th>
            </tr></thead>
            <tbody>{body}</tbody>
        </table></div>
    }
}

/// A refused add: the form shown again with each reason beside its
/// field, what was typed (never the secrets) and the ticked types.
struct AddRefused {
    url: String,
    types: Vec<String>,
    errors: FieldErrors,
}

/// The reason beside the URL field.
fn refusal_text(l: Lang, r: &ReceiverRefusal) -> String {
    match r {
        ReceiverRefusal::Url(UrlProblem::Scheme) => {
            l.t("expected-a-url-starting-with-https").to_string()
        }
        ReceiverRefusal::Url(UrlProblem::Malformed(raw)) => {
            crate::tr!(l, "not-a-valid-https-or-http", raw = format!("{:?}", raw))
        }
        ReceiverRefusal::Url(UrlProblem::Userinfo) => l.t("a-url-with-a-user-name").to_string(),
        ReceiverRefusal::Blocked(b) => {
            let host = b.host.trim_start_matches('[').trim_end_matches(']');
            let named = host.parse::<std::net::IpAddr>().ok() != Some(b.addr);
            let allow = l.t("only-networks-listed-in-the-deployments");
            let kind = l.t(b.kind.message_key());
            let addr = b.addr.to_string();
            if named {
                crate::tr!(
                    l,
                    "deliveries-cannot-go-to-host-resolving",
                    host = host,
                    addr = addr,
                    kind = kind,
                    allow = allow
                )
            } else {
                crate::tr!(
                    l,
                    "deliveries-cannot-go-to-address",
                    addr = addr,
                    kind = kind,
                    allow = allow
                )
            }
        }
    }
}

/// The form that adds a subscriber; after a refused add, with what was
/// typed, the ticked types and each reason beside its field.
#[component]
fn AddSubscriberForm(refused: Option<AddRefused>) -> impl IntoView {
    let l = lang();
    let ticked = |t: &str| {
        refused
            .as_ref()
            .is_some_and(|r| r.types.iter().any(|x| x == t))
    };
    let all_ticked = ticked("*");
    let boxes = EVENT_TYPES
        .into_iter()
        .map(|t| {
            let id = format!("type-{}", t.replace('.', "-"));
            let checked = ticked(t);
            view! {
                <label><input type="checkbox" id=id name="types" value=t checked=checked/>" "{event_type_label(l, t)}</label>
            }
        })
        .collect_view();
    let typed = refused.as_ref().map(|r| r.url.clone()).unwrap_or_default();
    let errors = refused.map(|r| r.errors).unwrap_or_default();
    let url = errors.input_attrs("url", "url");
    let (invalid, described) = (url.invalid, url.described_by.clone());
    let error = errors.get("url").map(|m| {
        let m = m.to_string();
        view! { <p class="field-error" id="url-error" role="alert" data-testid="url-error" data-field-error="url">{m}</p> }
    });
    let types = errors.input_attrs("types", "types");
    let secret = errors.input_attrs("secret", "secret");
    let again = errors.input_attrs("secret_again", "secret_again");
    view! {
        <section aria-labelledby="add-heading">
            <h2 id="add-heading">{l.t("add-a-subscriber")}</h2>
            <form method="post" action=LIST class="stack" data-testid="add-form">
                <input type="hidden" name="csrf" value=csrf_token()/>
                <label for="url">{l.t("url-https-or-http")}</label>
                <input id="url" name="url" required maxlength="2000" placeholder="https://hooks.example.com/couponkeeper" value=typed aria-invalid=invalid aria-describedby=described/>
                {error}
                <fieldset aria-invalid=types.invalid aria-describedby=types.described_by.clone()>
                    <legend>{l.t("event-types")}</legend>
                    <label for="type-all"><input type="checkbox" id="type-all" name="types" value="*" checked=all_ticked/>" "{l.t("all-types-including-ones-added-later")}</label>
                    {boxes}
                    {field_error(&types)}
                </fieldset>
                <label for="secret">{l.t("signing-secret-16-200-characters")}</label>
                <input id="secret" name="secret" type="password" required minlength="16" maxlength="200" autocomplete="new-password"
                    aria-invalid=secret.invalid aria-describedby=secret.described_by.clone()/>
                {field_error(&secret)}
                <label for="secret_again">{l.t("secret-again")}</label>
                <input id="secret_again" name="secret_again" type="password" required minlength="16" maxlength="200" autocomplete="new-password"
                    aria-invalid=again.invalid aria-describedby=again.described_by.clone()/>
                {field_error(&again)}
                <p class="note">{l.t("once-saved-only-the-secrets-last")}</p>
                <p class="actions">
                    <button type="submit" class="primary" data-testid="add">{l.t("add-subscriber")}</button>
                </p>
            </form>
        </section>
    }
}

async fn list(State(s): State<AppState>, staff: Staff) -> Result<Response, WebError> {
    render(&s, &staff, None).await
}

/// The page; with `refused`, the add form again with each problem beside
/// its field (422: nothing was written).
async fn render(
    s: &AppState,
    staff: &Staff,
    refused: Option<AddRefused>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let subs = s.service.webhook_subscribers().await.or_page(l)?;
    let has_default = subs.iter().any(|s| s.from_environment);
    let default_note = if has_default {
        l.t("the-default-subscriber-comes-from-couponkeeper")
    } else {
        l.t("couponkeeper-webhook-url-is-not-set")
    };
    let status = if refused.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let page = staff.page(l.t("webhooks-2"), move || {
        let table = if subs.is_empty() {
            view! { <p class="note" data-testid="no-subscribers">{l.t("no-subscribers-yet")}</p> }
                .into_any()
        } else {
            view! { <SubscriberTable subs=subs/> }.into_any()
        };
        let form = if viewer_may(Permission::ManageWebhooks) {
            view! { <AddSubscriberForm refused=refused/> }.into_any()
        } else {
            view! { <p class="note">{l.t("adding-or-disabling-subscribers-needs-the")}</p> }
                .into_any()
        };
        view! {
            <section aria-labelledby="subscribers-heading">
                <h2 id="subscribers-heading">{l.t("webhook-subscribers")}</h2>
                <p class="note" data-testid="default-note">{default_note}</p>
                {table}
                <p class="note">{l.t("see-deliveries-for-what-was-sent")}</p>
            </section>
            {form}
        }
    });
    Ok((status, page).into_response())
}

/// The add form as posted: `types` repeats, so it is read pair by pair.
#[derive(Default)]
struct AddForm {
    csrf: Option<String>,
    url: String,
    secret: String,
    secret_again: String,
    types: Vec<String>,
}

fn parse_add(body: &Bytes) -> AddForm {
    let mut f = AddForm::default();
    for (k, v) in form_urlencoded::parse(body) {
        match k.as_ref() {
            "csrf" => f.csrf = Some(v.into_owned()),
            "url" => f.url = v.into_owned(),
            "secret" => f.secret = v.into_owned(),
            "secret_again" => f.secret_again = v.into_owned(),
            "types" => f.types.push(v.into_owned()),
            _ => {}
        }
    }
    f
}

async fn add(State(s): State<AppState>, staff: Staff, body: Bytes) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    let form = parse_add(&body);
    if let Err(e) = staff.check_csrf(form.csrf.as_deref()) {
        return Ok(e.into_response());
    }
    let l = staff.lang;
    let refused = |errors: FieldErrors| AddRefused {
        url: form.url.trim().to_string(),
        types: form.types.clone(),
        errors,
    };
    // Every field in the page's language, at once; the service checks
    // again when adding.
    let mut errors = FieldErrors::default();
    if let Err(r) = s.service.check_receiver(&form.url).await {
        errors.add("url", refusal_text(l, &r));
    }
    if form.types.is_empty() {
        errors.add("types", l.t("choose-at-least-one-event-type").to_string());
    } else if let Some(bad) = form
        .types
        .iter()
        .find(|t| t.as_str() != "*" && !EVENT_TYPES.contains(&t.trim()))
    {
        errors.add(
            "types",
            crate::tr!(l, "webhook-unknown-event-type", event_type = bad.as_str()),
        );
    }
    let secret = form.secret.trim();
    if secret.chars().count() < 16 || secret.len() > 200 {
        errors.add("secret", l.t("webhook-secret-length").to_string());
    } else if form.secret != form.secret_again {
        errors.add(
            "secret_again",
            l.t("the-two-secrets-do-not-match").to_string(),
        );
    }
    if !errors.is_empty() {
        return render(&s, &staff, Some(refused(errors))).await;
    }
    Ok(
        match s
            .service
            .add_webhook_subscriber(&form.url, &form.secret, &form.types, &staff.ctx())
            .await
        {
            Ok(v) => staff.done(LIST, crate::tr!(l, "subscriber-added", url = &v.url)),
            // The host resolved elsewhere between the two checks, or a rule
            // the page does not know of: beside the field, as the service says.
            Err(ServiceError::Invalid(f)) => {
                match f.field {
                    "secret" => errors.add("secret", l.t("webhook-secret-length").to_string()),
                    "url" => errors.add("url", f.message),
                    _ => errors.add("types", f.message),
                }
                render(&s, &staff, Some(refused(errors))).await?
            }
            Err(e) => WebError::from_service(l, e).into_response(),
        },
    )
}

/// The console subscriber `id` (not the environment's).
async fn find(s: &AppState, l: Lang, id: &SubscriberId) -> Result<SubscriberView, Response> {
    let subs = s
        .service
        .webhook_subscribers()
        .await
        .map_err(|e| WebError::from_service(l, e).into_response())?;
    subs.into_iter()
        .find(|v| v.id == *id && !v.from_environment)
        .ok_or_else(|| {
            WebError::not_found(l, &format!("{} {id}", l.t("subscriber-2"))).into_response()
        })
}

async fn confirm_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<SubscriberId>,
    switch: Switch,
) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    let l = staff.lang;
    let sub = match find(&s, l, &id).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    if switch.already(sub.enabled) {
        return staff.refused(LIST, already_text(l, switch));
    }
    let action = switch.action(&sub.id);
    let types = types_text(l, &sub.event_types);
    let (title, heading, text) = match switch {
        Switch::Disable => (
            l.t("confirm-disabling"),
            l.t("disable-subscriber"),
            crate::tr!(
                l,
                "gets-no-new-deliveries-its-pending",
                url = &sub.url,
                types = types
            ),
        ),
        Switch::Enable => (
            l.t("confirm-enabling"),
            l.t("enable-subscriber"),
            crate::tr!(
                l,
                "gets-the-messages-written-from-now",
                url = &sub.url,
                types = types
            ),
        ),
    };
    staff.page(
        title,
        move || view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{heading}" "<span class="mono">{sub.url.clone()}</span></h2>
                <p>{text}</p>
                <ConfirmForm action=action button=switch.verb(l) cancel=LIST/>
            </section>
        },
    )
}

fn already_text(l: Lang, switch: Switch) -> String {
    match switch {
        Switch::Disable => l.t("that-subscriber-is-already-disabled"),
        Switch::Enable => l.t("that-subscriber-is-already-enabled"),
    }
    .to_string()
}

async fn switch(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<SubscriberId>,
    body: Bytes,
    switch: Switch,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    staff.posted::<std::collections::HashMap<String, String>>(&body)?;
    let l = staff.lang;
    let ctx = staff.ctx();
    let result = match switch {
        Switch::Disable => s.service.disable_webhook_subscriber(&id, &ctx).await,
        Switch::Enable => s.service.enable_webhook_subscriber(&id, &ctx).await,
    };
    Ok(match result {
        Ok(()) => staff.done(
            LIST,
            match switch {
                Switch::Disable => l.t("subscriber-disabled"),
                Switch::Enable => l.t("subscriber-enabled"),
            }
            .to_string(),
        ),
        Err(ServiceError::NotFound { .. }) => staff.refused(
            LIST,
            match switch {
                Switch::Disable => l.t("no-enabled-subscriber-with-that-id"),
                Switch::Enable => l.t("no-disabled-subscriber-with-that-id"),
            }
            .to_string(),
        ),
        Err(e) => WebError::from_service(l, e).into_response(),
    })
}
