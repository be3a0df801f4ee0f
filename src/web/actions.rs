//! The console's actions: release a lock, invalidate a coupon, issue a
//! compensation coupon, cancel an order, repair an order's coupon link, mark
//! a coupon left locked on a paid order used. Each is a confirmation page (GET,
//! which changes nothing) and a POST that
//! - checks the session's CSRF token and that the post came from our pages,
//! - requires a reason,
//! - runs ONE service operation on the staff member's authority (the same
//!   function the JSON API calls, so the rules cannot differ),
//! - carries the confirmation page's one-time form id as its idempotency
//!   key, so a double click or a resubmitted form acts once.
//!
//! One landing rule: every link to an action carries `back`, the page its
//! button is on (a health check's fix buttons: that page with
//! `?check=1#health`, so the check runs again); the confirmation form keeps
//! it in a hidden field, and success redirects there with a flash message
//! saying what changed (post/redirect/get). A `back` that is not a console
//! page of this site ([`safe_back`]) falls back to the page of the thing
//! acted on.
//!
//! A refused form (bad input, or a refusal of the service) does not
//! redirect: the same confirmation page comes back with status 422, every
//! value as typed, and the message beside the field at fault, or above the
//! form when it is about no single field. Forbidden actions, an unknown id
//! in the address and database trouble are error pages.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::auth::{Staff, WebError};
use super::components::{ConfirmForm, CouponBadge, OrderBadge, Time};
use super::context::{lang, viewer, viewer_may};
use super::i18n::Lang;
use super::layout::{FieldErrors, coupon_status_label, coupon_terms_text, field_error};
use super::paths;
use super::posted::{OrPage, Posted};
use crate::domain::compensation::{
    CapHit, CompensationAllowance, CompensationInput, CompensationRequest, Rules,
};
use crate::domain::coupon::CouponStatus;
use crate::domain::ids::{CouponId, OrderNo, UserId};
use crate::domain::money::Cents;
use crate::domain::permissions::{self, Permission};
use crate::domain::reason::parse_reason;
use crate::http::AppState;
use crate::service::idempotency::IdempotencyRequest;
use crate::service::views::{CouponView, OrderView};
use crate::service::{Executed, Refusal, ServiceError};

/// Routes of the action pages.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/console/coupons/{id}/release",
            get(release_page).post(release),
        )
        .route(
            "/console/coupons/{id}/invalidate",
            get(invalidate_page).post(invalidate),
        )
        .route(
            "/console/users/{user_id}/compensation",
            get(compensation_page).post(compensate),
        )
        .route(
            "/console/orders/{order_no}/cancel",
            get(cancel_page).post(cancel),
        )
        .route(
            "/console/orders/{order_no}/repair",
            get(repair_page).post(repair),
        )
        .route(
            "/console/orders/{order_no}/mark-coupon-used",
            get(mark_used_page).post(mark_used),
        )
        .route(
            "/console/orders/{order_no}/return-coupon",
            get(return_page).post(return_coupon),
        )
}

/// The longest `back` address an action keeps.
pub const MAX_BACK_CHARS: usize = 512;

/// `raw` when it is a console page of this site to land on after an
/// action: a path starting with `/console` (then `/`, `?`, `#` or
/// nothing), at most [`MAX_BACK_CHARS`], with no scheme or host (`//`), no
/// backslash, no whitespace or control characters, and no `.`/`..` path
/// segment, plain or percent-encoded. Anything else is `None`.
pub fn safe_back(raw: Option<&str>) -> Option<String> {
    let b = raw?;
    let rest = b.strip_prefix("/console")?;
    let path = b.split(['?', '#']).next().unwrap_or(b);
    let lower = path.to_ascii_lowercase();
    let ok = b.len() <= MAX_BACK_CHARS
        && (rest.is_empty() || rest.starts_with(['/', '?', '#']))
        && !b.contains("//")
        && !b.contains('\\')
        && !b.chars().any(|c| c.is_control() || c.is_whitespace())
        && !path.split('/').any(|seg| seg == "." || seg == "..")
        && !["%2e", "%2f", "%5c", "%00"]
            .iter()
            .any(|bad| lower.contains(bad));
    ok.then(|| b.to_string())
}

/// Where a successful action lands: `back` when safe, else `fallback`
/// (the page of the thing acted on).
fn landing(back: Option<&str>, fallback: String) -> String {
    safe_back(back).unwrap_or(fallback)
}

/// A fresh one-time id for a confirmation form.
pub(crate) fn form_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The idempotency key of a console form: scoped to the staff member, keyed
/// by the form's one-time id, fingerprinted by path and body.
pub(crate) fn idem(
    staff: &Staff,
    form_id: Option<&str>,
    path: &str,
    body: &Bytes,
) -> Option<IdempotencyRequest> {
    let id = form_id.filter(|f| !f.is_empty() && f.len() <= 64)?;
    Some(IdempotencyRequest::new(
        format!("console:{}", staff.session.name),
        id.to_string(),
        "POST",
        path,
        body,
        200,
    ))
}

/// A confirmation form as its page shows it: the values as typed (empty,
/// or prefilled, on a fresh page), the messages at its fields, and where
/// it returns to.
#[derive(Debug, Clone, Default)]
struct FormState {
    reason: String,
    force: bool,
    amount: String,
    valid_days: String,
    order_no: String,
    /// The compensation preset picked (empty: a free amount).
    preset: String,
    /// The coupon of the order a compensation makes up for (its id;
    /// empty: none named).
    for_coupon: String,
    errors: FieldErrors,
    /// A checked `back` ([`safe_back`]), kept in a hidden field.
    back: Option<String>,
}

impl FormState {
    /// An empty form returning to `back` (when safe).
    fn fresh(back: Option<&str>) -> Self {
        FormState {
            back: safe_back(back),
            ..FormState::default()
        }
    }

    /// A posted form: its reason, force box and `back`.
    fn posted(form: &ActionForm) -> Self {
        FormState {
            reason: form.reason.clone().unwrap_or_default(),
            force: matches!(form.force.as_deref(), Some("true" | "on" | "1")),
            back: safe_back(form.back.as_deref()),
            ..FormState::default()
        }
    }

    /// Where the page's cancel link leads: `back`, else `page`.
    fn cancel_href(&self, page: &str) -> String {
        self.back.clone().unwrap_or_else(|| page.to_string())
    }
}

/// A confirmation page; 422 when it shows a refused form. `body` builds
/// the page's body from the form, inside the page (where components find
/// their context).
fn form_page<V: IntoView + 'static>(
    staff: &Staff,
    f: FormState,
    title: &str,
    body: impl FnOnce(FormState) -> V + Send + 'static,
) -> Response {
    let refused = !f.errors.is_empty();
    let mut r = staff.page(title, move || body(f));
    if refused {
        *r.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    r
}

/// The hidden fields an action form carries after its form token: the
/// one-time form id, and `back` when there is one.
#[component]
fn FormIdFields(back: Option<String>) -> impl IntoView {
    let back = back.map(|b| view! { <input type="hidden" name="back" value=b/> });
    view! {
        <input type="hidden" name="form_id" value=form_id()/>
        {back}
    }
}

/// The required reason field, with what was typed and its message.
#[component]
fn ReasonField(form: FormState) -> impl IntoView {
    let l = lang();
    let st = form.errors.input_attrs("reason", "reason");
    // Leptos writes a textarea's children as they are (no escaping), so
    // what was typed is escaped here: `</textarea>` must stay text.
    let typed = super::escape_html(&form.reason);
    view! {
        <label for="reason">{l.t("reason-required-recorded-in-the-timeline")}</label>
        <textarea id="reason" name="reason" required=true maxlength="500"
            aria-invalid=st.invalid aria-describedby=st.described_by.clone()>{typed}</textarea>
        {field_error(&st)}
    }
}

/// The message about the form as a whole (no single field at fault).
fn form_error(f: &FormState) -> impl IntoView + use<> {
    field_error(&f.errors.input_attrs("form", "form"))
}

/// Where a service error shows on a refused action form: the field at
/// fault and the message in the page's language. `None`: no refusal of
/// the form (forbidden, an unknown id in the address, a bug, database
/// trouble), answered with an error page.
fn refusal_at(l: Lang, e: &ServiceError) -> Option<(&'static str, String)> {
    match e {
        ServiceError::Invalid(f) => match f.field {
            "reason" => Some(("reason", l.t("please-give-a-reason").to_string())),
            "value_cents" => Some(("amount", l.t("enter-the-amount-like-50-or").to_string())),
            "valid_seconds" => Some(("valid_days", l.t("valid-days-must-be-1-to").to_string())),
            "order_no" => Some(("order_no", l.t("action-error-order-no").to_string())),
            "preset_id" => Some(("preset", l.t("comp-preset-not-in-force").to_string())),
            "for_coupon_id" => Some((
                "for_coupon_id",
                l.t("comp-for-coupon-needs-order").to_string(),
            )),
            _ => None,
        },
        ServiceError::Refused { refusal, .. } => {
            let field = match refusal {
                Refusal::OrderNotOwned => "order_no",
                Refusal::CompensationLimitExceeded => "amount",
                Refusal::CouponNotOnOrder => "for_coupon_id",
                _ => "form",
            };
            Some((field, l.t(refusal.message_key()).to_string()))
        }
        ServiceError::IdempotencyKeyReused | ServiceError::IdempotencyInProgress => {
            Some(("form", l.t("action-error-form-reused").to_string()))
        }
        _ => None,
    }
}

/// A string field of the view an action answered with: the fresh value,
/// or the answer stored for a replayed form.
fn answered<T: Serialize>(done: &Executed<T>, key: &str) -> Option<String> {
    let v = match done {
        Executed::Fresh(v) => serde_json::to_value(v).ok()?,
        Executed::Replayed { body, .. } => serde_json::from_str(body).ok()?,
    };
    v.get(key)?.as_str().map(String::from)
}

#[derive(Deserialize)]
struct BackQuery {
    back: Option<String>,
}

#[derive(Deserialize)]
struct ActionForm {
    form_id: Option<String>,
    reason: Option<String>,
    force: Option<String>,
    back: Option<String>,
}

async fn release_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CouponId>,
    Query(q): Query<BackQuery>,
) -> Result<Response, WebError> {
    render_release(&s, &staff, &id, FormState::fresh(q.back.as_deref())).await
}

/// The release page, with the form as typed when it was refused.
async fn render_release(
    s: &AppState,
    staff: &Staff,
    id: &CouponId,
    f: FormState,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let c = s.service.get_coupon(id).await.or_page(l)?;
    let order = match &c.order_no {
        Some(no) => s.service.get_order(no).await.ok(),
        None => None,
    };
    // Live: the order still holds the coupon (a lapsed checkout does not).
    let now = s.service.now();
    let live = order.as_ref().is_some_and(|o| o.holds_coupon(now));
    Ok(form_page(staff, f, l.t("release-the-lock"), move |f| {
        view! { <ReleaseConfirm coupon=c order=order live=live form=f/> }
    }))
}

/// What releasing the coupon's lock does, the coupon (and its order), a
/// warning when the order is live, the force box (for those who may) and
/// the form; only a sentence when the coupon is not locked.
#[component]
fn ReleaseConfirm(
    coupon: CouponView,
    order: Option<OrderView>,
    live: bool,
    form: FormState,
) -> impl IntoView {
    let (l, c, f) = (lang(), coupon, form);
    let may_force = viewer_may(Permission::ForceRelease);
    let action = paths::coupon_release(&c.id);
    let back = f.cancel_href(&paths::coupon(&c.id));
    let order_line = order.map(|o| {
        let href = paths::order(&o.order_no);
        view! {
            <dt>{l.t("bound-order")}</dt>
            <dd><a href=href>{o.order_no.clone()}</a>" "<OrderBadge status=o.status/></dd>
        }
    });
    let warning = live.then(|| {
        view! {
            <p class="flash flash-error" role="note">{l.t("careful-this-order-is-still-live")}</p>
        }
    });
    let force = (live && may_force).then(|| {
        let st = f.errors.input_attrs("force", "force");
        view! {
            <label class="check"><input type="checkbox" id="force" name="force" value="true" checked=f.force
                aria-invalid=st.invalid aria-describedby=st.described_by.clone()/>" "
                {l.t("force-the-release-although-the-order")}
            </label>
            {field_error(&st)}
        }
    });
    let support_note = (live && !may_force).then(|| {
        view! { <p class="note">{l.t("only-an-operator-can-force-the")}</p> }
    });
    let error = form_error(&f);
    let form = if c.can_release() {
        view! {
            <ConfirmForm action=action button=l.t("release") cancel=back>
                <FormIdFields back=f.back.clone()/>
                <ReasonField form=f/>
                {force}
                {support_note}
            </ConfirmForm>
        }
        .into_any()
    } else {
        view! { <p>{l.t("this-coupon-is-not-locked-there")}</p> }.into_any()
    };
    view! {
        <section class="confirm" aria-labelledby="confirm-heading">
            <h2 id="confirm-heading">{l.t("release-this-coupon")}</h2>
            <dl class="facts">
                <dt>{l.t("code")}</dt><dd class="mono">{c.code.clone()}</dd>
                <dt>{l.t("status")}</dt><dd><CouponBadge status=c.status/></dd>
                <dt>{l.t("ends")}</dt><dd><Time at=c.ends_at.clone()/></dd>
                {order_line}
            </dl>
            <p>{l.t("after-the-release-the-coupon-is")}</p>
            {warning}
            {error}
            {form}
        </section>
    }
}

async fn release(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CouponId>,
    Posted { form, body }: Posted<ActionForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let mut f = FormState::posted(&form);
    let coupon = s.service.get_coupon(&id).await.or_page(l)?;
    let path = paths::coupon_release(&id);
    let result = s
        .service
        .release_coupon(
            &staff.ctx(),
            &staff.authority(),
            idem(&staff, form.form_id.as_deref(), &path, &body).as_ref(),
            id.clone(),
            form.reason,
            f.force,
        )
        .await;
    Ok(match result {
        Ok(done) => {
            let status = answered(&done, "status")
                .and_then(|st| CouponStatus::parse(&st))
                .map(|st| coupon_status_label(l, st))
                .unwrap_or_default();
            let text = crate::tr!(
                l,
                "action-done-released",
                code = &coupon.code,
                status = status
            );
            let to = landing(f.back.as_deref(), paths::coupon(&id));
            staff.done(&to, text)
        }
        Err(e) => match refusal_at(l, &e) {
            Some((field, text)) => {
                // Refused because the order is live: beside the force box
                // for those who have it, above the form for the others.
                let field = match (&e, staff.may(Permission::ForceRelease)) {
                    (
                        ServiceError::Refused {
                            refusal: Refusal::OrderActive,
                            ..
                        },
                        true,
                    ) => "force",
                    _ => field,
                };
                f.errors.add(field, text);
                render_release(&s, &staff, &id, f).await?
            }
            None => WebError::from_service(l, e).into_response(),
        },
    })
}

async fn invalidate_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CouponId>,
    Query(q): Query<BackQuery>,
) -> Result<Response, WebError> {
    render_invalidate(&s, &staff, &id, FormState::fresh(q.back.as_deref())).await
}

/// The invalidate page, with the form as typed when it was refused.
async fn render_invalidate(
    s: &AppState,
    staff: &Staff,
    id: &CouponId,
    f: FormState,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let c = s.service.get_coupon(id).await.or_page(l)?;
    Ok(form_page(staff, f, l.t("invalidate-a-coupon"), move |f| {
        view! { <InvalidateConfirm coupon=c form=f/> }
    }))
}

/// The coupon to invalidate and the form (for those who may, while the
/// coupon is available); else why not.
#[component]
fn InvalidateConfirm(coupon: CouponView, form: FormState) -> impl IntoView {
    let (l, c, f) = (lang(), coupon, form);
    let action = paths::coupon_invalidate(&c.id);
    let back = f.cancel_href(&paths::coupon(&c.id));
    let allowed = viewer_may(Permission::InvalidateCoupon);
    let terms = coupon_terms_text(l, &c);
    let error = form_error(&f);
    let form = match (c.can_invalidate(), allowed) {
        (true, true) => view! {
            <ConfirmForm action=action button=l.t("invalidate") cancel=back danger=true>
                <FormIdFields back=f.back.clone()/>
                <ReasonField form=f/>
            </ConfirmForm>
        }
        .into_any(),
        (true, false) => {
            view! { <p class="note">{l.t("invalidating-a-coupon-needs-the-operator")}</p> }
                .into_any()
        }
        (false, _) => view! { <p>{l.t("only-an-available-coupon-can-be")}</p> }.into_any(),
    };
    view! {
        <section class="confirm" aria-labelledby="confirm-heading">
            <h2 id="confirm-heading">{l.t("invalidate-this-coupon-this-cannot-be")}</h2>
            <dl class="facts">
                <dt>{l.t("code")}</dt><dd class="mono">{c.code.clone()}</dd>
                <dt>{l.t("user")}</dt><dd>{c.user_id.clone()}</dd>
                <dt>{l.t("discount")}</dt><dd>{terms}</dd>
                <dt>{l.t("status")}</dt><dd><CouponBadge status=c.status/></dd>
            </dl>
            {error}
            {form}
        </section>
    }
}

async fn invalidate(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<CouponId>,
    Posted { form, body }: Posted<ActionForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let mut f = FormState::posted(&form);
    let coupon = s.service.get_coupon(&id).await.or_page(l)?;
    let path = paths::coupon_invalidate(&id);
    let result = s
        .service
        .invalidate_coupon(
            &staff.ctx(),
            &staff.authority(),
            idem(&staff, form.form_id.as_deref(), &path, &body).as_ref(),
            id.clone(),
            form.reason,
        )
        .await;
    Ok(match result {
        Ok(_) => {
            let text = crate::tr!(l, "action-done-invalidated", code = &coupon.code);
            let to = landing(f.back.as_deref(), paths::coupon(&id));
            staff.done(&to, text)
        }
        Err(e) => match refusal_at(l, &e) {
            Some((field, text)) => {
                f.errors.add(field, text);
                render_invalidate(&s, &staff, &id, f).await?
            }
            None => WebError::from_service(l, e).into_response(),
        },
    })
}

#[derive(Deserialize)]
struct CompensationQuery {
    order_no: Option<String>,
    amount_cents: Option<i64>,
    /// The preset a health check suggests.
    preset_id: Option<String>,
    /// The coupon of the order whose discount a health check found lost.
    for_coupon_id: Option<String>,
    back: Option<String>,
}

/// Default validity of a compensation coupon, in days.
const DEFAULT_VALID_DAYS: &str = "30";

async fn compensation_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(user_id): Path<String>,
    Query(q): Query<CompensationQuery>,
) -> Result<Response, WebError> {
    // A suggested amount comes within what this staff member may give:
    // support's per-coupon cap and what is left of today's allowance.
    let cap = match allowance(&s, &staff).await {
        Ok(a) => a.map(|a| a.per_coupon_cents.min(a.left_today_cents())),
        Err(r) => return Ok(r),
    };
    let amount = q
        .amount_cents
        .map(|c| cap.map_or(c, |cap| c.min(cap)))
        .filter(|c| *c > 0)
        .map(|c| Cents::from_stored(c).yuan())
        .unwrap_or_default();
    let f = FormState {
        amount,
        valid_days: DEFAULT_VALID_DAYS.to_string(),
        order_no: q.order_no.unwrap_or_default(),
        preset: q.preset_id.unwrap_or_default(),
        for_coupon: q.for_coupon_id.unwrap_or_default(),
        ..FormState::fresh(q.back.as_deref())
    };
    render_compensation(&s, &staff, &user_id, f).await
}

/// What the signed-in staff member may still give today, when capped.
async fn allowance(s: &AppState, staff: &Staff) -> Result<Option<CompensationAllowance>, Response> {
    s.service
        .compensation_allowance(&staff.ctx(), &staff.authority())
        .await
        .map_err(|e| WebError::from_service(staff.lang, e).into_response())
}

/// The compensation page: the caps and what is left of today's allowance
/// (support only), and the form, as typed when it was refused.
async fn render_compensation(
    s: &AppState,
    staff: &Staff,
    user_id: &str,
    f: FormState,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let allowance = match allowance(s, staff).await {
        Ok(a) => a,
        Err(r) => return Ok(r),
    };
    let rules = s.service.compensation_rules().await.or_page(l)?;
    // The coupons of the order the form names, to choose the one made up
    // for (none while no order, or no such order, is named).
    let choices = match OrderNo::parse(f.order_no.trim()) {
        Ok(no) => s
            .service
            .compensation_coupon_choices(&no)
            .await
            .or_page(l)?,
        Err(_) => Vec::new(),
    };
    let (title, user_id) = (l.t("issue-a-compensation-coupon"), user_id.to_string());
    Ok(form_page(staff, f, title, move |f| {
        view! { <CompensationConfirm user_id=user_id allowance=allowance rules=rules choices=choices form=f/> }
    }))
}

/// The compensation form for `user_id` (as the page's address gave it:
/// the form renders for any text, the service checks it when the form is
/// sent): the caps and what is left of today's `allowance` (support
/// only), the presets of the `rules` in force, amount, validity, order,
/// which of the order's coupons (`choices`, by code) it makes up for,
/// and reason.
#[component]
fn CompensationConfirm(
    #[prop(into)] user_id: String,
    allowance: Option<CompensationAllowance>,
    rules: Rules,
    choices: Vec<(CouponId, String)>,
    form: FormState,
) -> impl IntoView {
    let (l, f) = (lang(), form);
    let cap = allowance.map(|a| {
        let text = crate::tr!(
            l,
            "support-limits-at-most-per-coupon",
            support_compensation_max_cents = l.money(a.per_coupon_cents),
            support_compensation_daily_cents = l.money(a.daily_cents)
        );
        let left = crate::tr!(
            l,
            "compensation-left-today",
            left = l.money(a.left_today_cents()),
            given = l.money(a.given_today_cents),
            next = l.money(a.next_coupon_cents())
        );
        let left_cents = a.left_today_cents().to_string();
        view! {
            <p class="note" data-testid="cap">{text}</p>
            <p class="note" data-testid="allowance" data-left-cents=left_cents>{left}</p>
        }
    });
    let action = paths::unparsed::user_compensation(&user_id);
    let back = f.cancel_href(&paths::unparsed::user(&user_id));
    let heading = crate::tr!(
        l,
        "compensation-coupon-for-user",
        user_id = user_id.as_str()
    );
    let amount = f.errors.input_attrs("amount", "amount");
    let days = f.errors.input_attrs("valid_days", "valid_days");
    let order_no = f.errors.input_attrs("order_no", "order_no");
    let preset_state = f.errors.input_attrs("preset", "preset");
    let presets = (!rules.presets.is_empty()).then(|| {
        let free_checked = f.preset.is_empty() || rules.preset(&f.preset).is_none();
        let options = rules
            .presets
            .iter()
            .map(|p| {
                let id = format!("preset-{}", p.id);
                let for_id = id.clone();
                let checked = f.preset == p.id;
                let terms = super::presets::preset_terms(l, p);
                let cents = p.value_cents.to_string();
                view! {
                    <label class="choice" for=for_id>
                        <input type="radio" id=id name="preset" value=p.id.clone() checked=checked
                            data-testid="preset-option" data-cents=cents/>
                        " "<strong>{p.reason.clone()}</strong>" · "{terms}
                    </label>
                }
            })
            .collect_view();
        view! {
            <fieldset data-testid="presets" aria-invalid=preset_state.invalid aria-describedby=preset_state.described_by.clone()>
                <legend>{l.t("comp-pick-preset")}</legend>
                {options}
                <label class="choice" for="preset-free">
                    <input type="radio" id="preset-free" name="preset" value="" checked=free_checked data-testid="preset-free"/>
                    " "{l.t("comp-free-amount-within-cap")}
                </label>
                {field_error(&preset_state)}
            </fieldset>
        }
    });
    let order_link = (!f.order_no.trim().is_empty() && f.errors.get("order_no").is_none()).then(|| {
        let no = f.order_no.trim().to_string();
        let href = paths::unparsed::order(&no);
        view! { <p class="note">{l.t("compensation-for-order")}" "<a href=href data-testid="comp-order">{no}</a></p> }
    });
    let for_coupon = for_coupon_field(l, &f, choices);
    let error = form_error(&f);
    view! {
        <section class="confirm" aria-labelledby="confirm-heading">
            <h2 id="confirm-heading">{heading}</h2>
            <p>{l.t("a-compensation-coupon-takes-a-fixed")}</p>
            {cap}
            {order_link}
            {error}
            <ConfirmForm action=action button=l.t("issue") cancel=back>
                <FormIdFields back=f.back.clone()/>
                {presets}
                <label for="amount">{l.t("amount-yuan")}</label>
                <input id="amount" name="amount" type="text" inputmode="decimal" required=true value=f.amount.clone() placeholder="50.00"
                    aria-invalid=amount.invalid aria-describedby=amount.described_by.clone()/>
                {field_error(&amount)}
                <label for="valid_days">{l.t("valid-for-days")}</label>
                <input id="valid_days" name="valid_days" type="text" inputmode="numeric" value=f.valid_days.clone() required=true
                    aria-invalid=days.invalid aria-describedby=days.described_by.clone()/>
                {field_error(&days)}
                <label for="order_no">{l.t("order-number-optional")}</label>
                <input id="order_no" name="order_no" type="text" value=f.order_no.clone()
                    aria-invalid=order_no.invalid aria-describedby=order_no.described_by.clone()/>
                {field_error(&order_no)}
                {for_coupon}
                <ReasonField form=f/>
            </ConfirmForm>
        </section>
    }
}

/// The choice of the order's coupon a compensation makes up for: "none
/// named", then each of the order's coupons by code (`choices`), the one
/// picked (or suggested) selected. Shown when the order has coupons, or
/// when the choice was refused (then with its message).
fn for_coupon_field(
    l: Lang,
    f: &FormState,
    choices: Vec<(CouponId, String)>,
) -> Option<impl IntoView + use<>> {
    let st = f.errors.input_attrs("for_coupon_id", "for_coupon_id");
    if choices.is_empty() && f.errors.get("for_coupon_id").is_none() {
        return None;
    }
    let picked = f.for_coupon.trim().to_string();
    let options = choices
        .into_iter()
        .map(|(id, code)| {
            let selected = id.as_str() == picked;
            view! { <option value=id.into_string() selected=selected>{code}</option> }
        })
        .collect_view();
    Some(view! {
        <label for="for_coupon_id">{l.t("comp-for-coupon")}</label>
        <select id="for_coupon_id" name="for_coupon_id" data-testid="for-coupon"
            aria-invalid=st.invalid aria-describedby=st.described_by.clone()>
            <option value="" selected=picked.is_empty()>{l.t("comp-for-coupon-none")}</option>
            {options}
        </select>
        {field_error(&st)}
    })
}

#[derive(Deserialize)]
struct CompensationForm {
    form_id: Option<String>,
    preset: Option<String>,
    amount: Option<String>,
    valid_days: Option<String>,
    order_no: Option<String>,
    for_coupon_id: Option<String>,
    reason: Option<String>,
    back: Option<String>,
}

/// The message of a compensation over support's caps: over the per-coupon
/// cap, or over what is left of today's allowance.
fn over_cap_text(l: Lang, a: Option<CompensationAllowance>, value_cents: i64) -> String {
    match a.map(|a| a.check(value_cents)) {
        Some(Err(CapHit::PerCoupon { max_cents })) => {
            crate::tr!(l, "compensation-over-per-coupon", max = l.money(max_cents))
        }
        Some(Err(CapHit::Daily { left_cents, .. })) => {
            crate::tr!(l, "compensation-over-today", left = l.money(left_cents))
        }
        // Not capped, or room again by the time the page asked: the
        // refusal's own words.
        None | Some(Ok(())) => l
            .t(Refusal::CompensationLimitExceeded.message_key())
            .to_string(),
    }
}

async fn compensate(
    State(s): State<AppState>,
    staff: Staff,
    Path(user_id): Path<String>,
    Posted { form, body }: Posted<CompensationForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let mut f = FormState {
        amount: form.amount.clone().unwrap_or_default(),
        valid_days: form.valid_days.clone().unwrap_or_default(),
        order_no: form.order_no.clone().unwrap_or_default(),
        preset: form.preset.clone().unwrap_or_default().trim().to_string(),
        for_coupon: form.for_coupon_id.clone().unwrap_or_default(),
        reason: form.reason.clone().unwrap_or_default(),
        back: safe_back(form.back.as_deref()),
        ..FormState::default()
    };
    // A preset gives the amount and validity; else they are typed.
    let preset = match f.preset.as_str() {
        "" => None,
        id => match s.service.compensation_rules().await {
            Ok(rules) => match rules.preset(id) {
                Some(p) => Some(p.clone()),
                None => {
                    f.errors
                        .add("preset", l.t("comp-preset-not-in-force").to_string());
                    return render_compensation(&s, &staff, &user_id, f).await;
                }
            },
            Err(e) => return Err(WebError::from_service(l, e)),
        },
    };
    // Every field that cannot be right, at once; the service checks again.
    let value_cents = match &preset {
        Some(p) => Some(p.value_cents),
        None => Cents::parse_yuan(&f.amount).filter(|c| *c > 0),
    };
    if value_cents.is_none() {
        f.errors
            .add("amount", l.t("enter-the-amount-like-50-or").to_string());
    }
    let valid_days = match &preset {
        Some(_) => Some(1),
        None => f
            .valid_days
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|d| (1..=365).contains(d)),
    };
    if valid_days.is_none() {
        f.errors
            .add("valid_days", l.t("valid-days-must-be-1-to").to_string());
    }
    if f.reason.trim().is_empty() {
        f.errors
            .add("reason", l.t("please-give-a-reason").to_string());
    }
    let (Some(value_cents), Some(valid_days)) = (value_cents, valid_days) else {
        return render_compensation(&s, &staff, &user_id, f).await;
    };
    if !f.errors.is_empty() {
        return render_compensation(&s, &staff, &user_id, f).await;
    }
    let order_no = Some(f.order_no.trim().to_string()).filter(|o| !o.is_empty());
    let path = paths::unparsed::user_compensation(&user_id);
    // The service checked the user id (trimmed) before anything else and
    // refused a malformed one as invalid.
    let user = UserId::parse(user_id.trim())
        .map_err(ServiceError::from)
        .or_page(l)?;
    let input = CompensationInput {
        value_cents: Some(value_cents),
        valid_seconds: Some(valid_days * 24 * 3600),
        reason: form.reason,
        order_no: order_no.clone(),
        preset_id: preset.as_ref().map(|p| p.id.clone()),
        for_coupon_id: Some(f.for_coupon.clone()),
    };
    let result = match CompensationRequest::parse(input) {
        Ok(request) => {
            s.service
                .issue_compensation(
                    &staff.ctx(),
                    &staff.authority(),
                    idem(&staff, form.form_id.as_deref(), &path, &body).as_ref(),
                    user,
                    request,
                )
                .await
        }
        Err(e) => Err(e.into()),
    };
    Ok(match result {
        Ok(done) => {
            let text = crate::tr!(
                l,
                "a-compensation-coupon-was-issued",
                value_cents = l.money(value_cents),
                code = answered(&done, "code").unwrap_or_default()
            );
            let to = landing(f.back.as_deref(), paths::unparsed::user(&user_id));
            staff.done(&to, text)
        }
        // A mistyped order number is the form's fault, not a missing page.
        Err(ServiceError::NotFound { what: "order", id }) => {
            f.errors.add(
                "order_no",
                crate::tr!(l, "action-error-no-such-order", order_no = id),
            );
            render_compensation(&s, &staff, &user_id, f).await?
        }
        Err(ServiceError::Refused {
            refusal: Refusal::CompensationLimitExceeded,
            ..
        }) => {
            let a = match allowance(&s, &staff).await {
                Ok(a) => a,
                Err(r) => return Ok(r),
            };
            let field = if preset.is_some() { "preset" } else { "amount" };
            f.errors.add(field, over_cap_text(l, a, value_cents));
            render_compensation(&s, &staff, &user_id, f).await?
        }
        Err(e) => match refusal_at(l, &e) {
            Some((field, text)) => {
                f.errors.add(field, text);
                render_compensation(&s, &staff, &user_id, f).await?
            }
            None => WebError::from_service(l, e).into_response(),
        },
    })
}

async fn cancel_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    Query(q): Query<BackQuery>,
) -> Result<Response, WebError> {
    let order_no = super::ids::order_no_of(&order_no).or_page(staff.lang)?;
    render_cancel(&s, &staff, &order_no, FormState::fresh(q.back.as_deref())).await
}

/// The cancel page, with the form as typed when it was refused.
async fn render_cancel(
    s: &AppState,
    staff: &Staff,
    order_no: &OrderNo,
    f: FormState,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let o = s.service.get_order(order_no).await.or_page(l)?;
    let lapsed = o.checkout_lapsed(s.service.now());
    Ok(form_page(staff, f, l.t("cancel-an-order"), move |f| {
        view! { <CancelConfirm order=o lapsed=lapsed form=f/> }
    }))
}

/// The order to cancel and the form (while the order is live, for those
/// who may cancel it: support only a lapsed checkout); else why not.
#[component]
fn CancelConfirm(order: OrderView, lapsed: bool, form: FormState) -> impl IntoView {
    let (l, o, f) = (lang(), order, form);
    let action = paths::order_cancel(&o.order_no);
    let back = f.cancel_href(&paths::order(&o.order_no));
    let cancellable = o.is_live();
    let allowed = viewer().is_some_and(|v| permissions::may_cancel_order(v.role, lapsed));
    let error = form_error(&f);
    let form = match (cancellable, allowed) {
        (true, true) => view! {
            <ConfirmForm action=action button=l.t("cancel-the-order") cancel=back cancel_label=l.t("back") danger=true>
                <FormIdFields back=f.back.clone()/>
                <ReasonField form=f/>
            </ConfirmForm>
        }
        .into_any(),
        (true, false) => view! { <p class="note">{l.t("cancelling-an-order-needs-the-operator")}</p> }.into_any(),
        (false, _) => view! { <p>{l.t("the-order-is-over-it-cannot")}</p> }.into_any(),
    };
    view! {
        <section class="confirm" aria-labelledby="confirm-heading">
            <h2 id="confirm-heading">{crate::tr!(l, "cancel-order", order_no = &o.order_no)}</h2>
            <p><OrderBadge status=o.status/>" "{l.t("its-locked-coupon-is-released-in")}</p>
            {error}
            {form}
        </section>
    }
}

async fn cancel(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    Posted { form, body }: Posted<ActionForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let mut f = FormState::posted(&form);
    let order_no = match super::ids::order_no_of(&order_no) {
        Ok(no) => no,
        Err(e) => {
            // What the service answered for a number no order can have: a
            // missing reason (the form came back, then its order was not
            // found), support's cancel of an order whose checkout did not
            // lapse, else no such order.
            let e = if parse_reason(form.reason.clone()).is_ok()
                && !permissions::may_cancel_order(staff.session.role, false)
            {
                ServiceError::Forbidden(crate::service::support::CANCEL_NEEDS_OPERATOR.into())
            } else {
                e
            };
            return Err(WebError::from_service(l, e));
        }
    };
    let path = paths::order_cancel(&order_no);
    let result = s
        .service
        .cancel_order_as(
            &staff.ctx(),
            &staff.authority(),
            idem(&staff, form.form_id.as_deref(), &path, &body).as_ref(),
            order_no.clone(),
            form.reason,
        )
        .await;
    Ok(match result {
        Ok(_) => {
            let text = crate::tr!(l, "action-done-cancelled", order_no = &order_no);
            let to = landing(f.back.as_deref(), paths::order(&order_no));
            staff.done(&to, text)
        }
        Err(e) => match refusal_at(l, &e) {
            Some((field, text)) => {
                f.errors.add(field, text);
                render_cancel(&s, &staff, &order_no, f).await?
            }
            None => WebError::from_service(l, e).into_response(),
        },
    })
}

#[derive(Deserialize)]
struct RepairQuery {
    coupon_id: Option<CouponId>,
    back: Option<String>,
}

/// The repairs of an order's coupon link that are confirmed on a page of
/// their own: one page shape, one POST path, one service call each.
#[derive(Debug, Clone, Copy)]
enum LinkRepair {
    /// Relock the order's freed coupon, or relink the order to the coupon
    /// bound to it ([`crate::service::Service::repair_coupon_link`]).
    Link,
    /// Mark a coupon still `locked` to its paid order `used` for it
    /// ([`crate::service::Service::mark_coupon_used`]). Support may do it:
    /// it only makes the coupon agree with an order the customer has paid.
    MarkUsed,
    /// Return a coupon still `used` after every unit it discounted was
    /// refunded ([`crate::service::Service::return_coupon`]): what the
    /// refund rule should have done.
    Return,
}

impl LinkRepair {
    /// Where its confirmation form posts.
    fn action(self, no: &OrderNo) -> String {
        match self {
            LinkRepair::Link => paths::order_repair(no),
            LinkRepair::MarkUsed => paths::order_mark_coupon_used(no),
            LinkRepair::Return => paths::order_return_coupon(no),
        }
    }

    /// Its confirmation page for `coupon`.
    fn page(self, no: &OrderNo, coupon: &CouponId) -> String {
        match self {
            LinkRepair::Link => paths::order_repair_for(no, coupon),
            LinkRepair::MarkUsed => paths::order_mark_coupon_used_for(no, coupon),
            LinkRepair::Return => paths::order_return_coupon_for(no, coupon),
        }
    }
}

async fn repair_page(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    q: Query<RepairQuery>,
) -> Result<Response, WebError> {
    link_repair_page(s, staff, order_no, q, LinkRepair::Link).await
}

async fn mark_used_page(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    q: Query<RepairQuery>,
) -> Result<Response, WebError> {
    link_repair_page(s, staff, order_no, q, LinkRepair::MarkUsed).await
}

async fn return_page(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    q: Query<RepairQuery>,
) -> Result<Response, WebError> {
    link_repair_page(s, staff, order_no, q, LinkRepair::Return).await
}

/// The confirmation page of a [`LinkRepair`].
async fn link_repair_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    Query(q): Query<RepairQuery>,
    kind: LinkRepair,
) -> Result<Response, WebError> {
    let order_no = super::ids::order_no_of(&order_no).or_page(staff.lang)?;
    let f = FormState::fresh(q.back.as_deref());
    render_link_repair(&s, &staff, &order_no, q.coupon_id, kind, f).await
}

/// What a [`LinkRepair`] will do, the order and the coupon, the reason
/// field; as typed when it was refused.
async fn render_link_repair(
    s: &AppState,
    staff: &Staff,
    order_no: &OrderNo,
    coupon_id: Option<CouponId>,
    kind: LinkRepair,
    f: FormState,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let o = s.service.get_order(order_no).await.or_page(l)?;
    let Some(coupon_id) = coupon_id.filter(|c| !c.is_empty()) else {
        return Err(WebError::bad_request(
            l.t("which-coupon-coupon-id-is-missing").to_string(),
        ));
    };
    let c = s.service.get_coupon(&coupon_id).await.or_page(l)?;
    let title = match kind {
        LinkRepair::Link => l.t("repair-the-coupon-link"),
        LinkRepair::MarkUsed => l.t("mark-the-coupon-used"),
        LinkRepair::Return => l.t("return-the-coupon"),
    };
    Ok(form_page(staff, f, title, move |f| {
        view! { <LinkRepairConfirm order=o coupon=c kind=kind form=f/> }
    }))
}

/// What a [`LinkRepair`] of the order and the coupon will do, both with
/// their status (and the discount it settles, when marking used), and
/// the form.
#[component]
fn LinkRepairConfirm(
    order: OrderView,
    coupon: CouponView,
    kind: LinkRepair,
    form: FormState,
) -> impl IntoView {
    let (l, o, c, f) = (lang(), order, coupon, form);
    let (heading, what, note, button) = match kind {
        LinkRepair::Link => {
            let what = if o.coupon_id.as_ref() == Some(&c.id) {
                crate::tr!(
                    l,
                    "lock-coupon-to-order-again-the",
                    code = &c.code,
                    order_no = &o.order_no
                )
            } else {
                crate::tr!(
                    l,
                    "point-order-at-coupon-which-is",
                    order_no = &o.order_no,
                    code = &c.code
                )
            };
            (
                l.t("repair-this-link"),
                what,
                l.t("the-order-and-the-coupon-are"),
                l.t("repair"),
            )
        }
        LinkRepair::MarkUsed => (
            l.t("mark-this-coupon-used"),
            crate::tr!(
                l,
                "order-is-paid-with-coupon-but",
                order_no = &o.order_no,
                code = &c.code
            ),
            l.t("the-coupon-still-locked-to-this"),
            l.t("mark-used"),
        ),
        LinkRepair::Return => (
            l.t("return-this-coupon"),
            crate::tr!(
                l,
                "every-item-coupon-discounted-was-refunded",
                order_no = &o.order_no,
                code = &c.code
            ),
            l.t("return-coupon-note"),
            l.t("return-coupon-button"),
        ),
    };
    // Marking used settles the discount the order already took: show it.
    let discount = matches!(kind, LinkRepair::MarkUsed).then(|| {
        let d = o.coupon_discount_cents.shown();
        view! { <dt>{l.t("discount-on-the-order")}</dt><dd>{d}</dd> }
    });
    let action = kind.action(&o.order_no);
    let back = f.cancel_href(&paths::order(&o.order_no));
    let cid = c.id.clone();
    let error = form_error(&f);
    view! {
        <section class="confirm" aria-labelledby="confirm-heading">
            <h2 id="confirm-heading">{heading}</h2>
            <p>{what}</p>
            <dl class="facts">
                <dt>{l.t("order")}</dt><dd>{o.order_no.clone()}" "<OrderBadge status=o.status/></dd>
                {discount}
                <dt>{l.t("coupon")}</dt><dd class="mono">{c.code.clone()}" "<CouponBadge status=c.status/></dd>
            </dl>
            <p class="note">{note}</p>
            {error}
            <ConfirmForm action=action button=button cancel=back>
                <FormIdFields back=f.back.clone()/>
                <input type="hidden" name="coupon_id" value=cid/>
                <ReasonField form=f/>
            </ConfirmForm>
        </section>
    }
}

#[derive(Deserialize)]
struct RepairForm {
    form_id: Option<String>,
    coupon_id: Option<String>,
    reason: Option<String>,
    back: Option<String>,
}

async fn repair(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    link_repair(s, staff, order_no, body, LinkRepair::Link).await
}

async fn mark_used(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    link_repair(s, staff, order_no, body, LinkRepair::MarkUsed).await
}

async fn return_coupon(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    link_repair(s, staff, order_no, body, LinkRepair::Return).await
}

/// The confirmed POST of a [`LinkRepair`]; without a `back`, lands on the
/// order's health check (run again).
async fn link_repair(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    body: Bytes,
    kind: LinkRepair,
) -> Result<Response, WebError> {
    let form: RepairForm = staff.posted(&body)?;
    let l = staff.lang;
    let mut f = FormState {
        reason: form.reason.clone().unwrap_or_default(),
        back: safe_back(form.back.as_deref()),
        ..FormState::default()
    };
    let coupon_id = CouponId::from_wire(form.coupon_id.unwrap_or_default());
    let code = s.service.get_coupon(&coupon_id).await.or_page(l)?.code;
    // The service answered "no such order" for a number no order can
    // have, also after refusing a missing reason (the form came back, then
    // its order was not found).
    let order_no = super::ids::order_no_of(&order_no).or_page(l)?;
    let path = kind.page(&order_no, &coupon_id);
    let idem = idem(&staff, form.form_id.as_deref(), &path, &body);
    let (ctx, order) = (staff.ctx(), order_no.clone());
    let result = match kind {
        LinkRepair::Link => {
            s.service
                .repair_coupon_link(&ctx, idem.as_ref(), order, coupon_id.clone(), form.reason)
                .await
        }
        LinkRepair::MarkUsed => {
            s.service
                .mark_coupon_used(&ctx, idem.as_ref(), order, coupon_id.clone(), form.reason)
                .await
        }
        LinkRepair::Return => {
            s.service
                .return_coupon(&ctx, idem.as_ref(), order, coupon_id.clone(), form.reason)
                .await
        }
    };
    Ok(match result {
        Ok(_) => {
            let key = match kind {
                LinkRepair::Link => "action-done-link-repaired",
                LinkRepair::MarkUsed => "action-done-marked-used",
                LinkRepair::Return => "action-done-coupon-returned",
            };
            let text = crate::tr!(l, key, code = &code, order_no = &order_no);
            let to = landing(f.back.as_deref(), paths::order_health(&order_no));
            staff.done(&to, text)
        }
        Err(e) => match refusal_at(l, &e) {
            Some((field, text)) => {
                f.errors.add(field, text);
                render_link_repair(&s, &staff, &order_no, Some(coupon_id), kind, f).await?
            }
            None => WebError::from_service(l, e).into_response(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yuan_amounts_parse_to_exact_cents() {
        assert_eq!(Cents::parse_yuan("50"), Some(5000));
        assert_eq!(Cents::parse_yuan("50.5"), Some(5050));
        assert_eq!(Cents::parse_yuan("50.05"), Some(5005));
        assert_eq!(Cents::parse_yuan(" ¥12.30 "), Some(1230));
        assert_eq!(Cents::parse_yuan("0.01"), Some(1));
        for bad in ["", "-5", "5.001", "1e3", "abc", ".5", "99999999999", "5,00"] {
            assert_eq!(Cents::parse_yuan(bad), None, "{bad}");
        }
    }

    #[test]
    fn back_may_only_point_at_a_console_page_of_this_site() {
        for good in [
            "/console",
            "/console/orders/P1",
            "/console/orders/P1?check=1#health",
            "/console/users/u%201?check=1#health",
            "/console/coupons?status=locked&after=cpn_1",
        ] {
            assert_eq!(safe_back(Some(good)).as_deref(), Some(good), "{good}");
        }
        let long = format!("/console/orders/{}", "x".repeat(MAX_BACK_CHARS));
        for bad in [
            "",
            "https://evil.example/console",
            "//evil.example/console",
            "/console//evil.example",
            "/api/v1/orders/P1",
            "/consoles",
            "/console\\..\\api",
            "/console/../api/v1/orders",
            "/console/%2e%2e/api/v1/orders",
            "/console/%2E%2E/api",
            "/console/x%2fy",
            "/console/orders/P1\r\nSet-Cookie: x=1",
            "/console/orders/P 1",
            "console/orders/P1",
            long.as_str(),
        ] {
            assert_eq!(safe_back(Some(bad)), None, "{bad:?}");
        }
        assert_eq!(safe_back(None), None);
    }

    #[test]
    fn an_action_link_carries_back_encoded_in_its_query() {
        assert_eq!(
            paths::with_back(
                "/console/coupons/c1/release",
                "/console/orders/P1?check=1#health"
            ),
            "/console/coupons/c1/release?back=%2Fconsole%2Forders%2FP1%3Fcheck%3D1%23health"
        );
        assert_eq!(
            paths::with_back(
                "/console/orders/P1/repair?coupon_id=c1",
                "/console/orders/P1"
            ),
            "/console/orders/P1/repair?coupon_id=c1&back=%2Fconsole%2Forders%2FP1"
        );
    }
}
