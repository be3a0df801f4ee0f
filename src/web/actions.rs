//! The console's actions: release a lock, invalidate a coupon, issue a
//! compensation coupon, cancel an order, repair an order's coupon link, mark
//! a coupon left locked on a paid order used. Each is a confirmation page (GET,
//! which changes nothing) and a POST that
//! - checks the session's CSRF token and that the post came from our pages,
//! - requires a reason,
//! - runs ONE service operation on the staff member's authority (the same
//!   function the JSON API calls, so the rules cannot differ),
//! - carries the confirmation page's one-time form id as its idempotency
//!   key, so a double click or a resubmitted form acts once,
//! - answers with a redirect and a flash message (post/redirect/get).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use super::layout::{coupon_badge, coupon_terms_text, enc, order_badge, time_text};
use crate::domain::staff::Role;
use crate::http::AppState;
use crate::service::idempotency::IdempotencyRequest;
use crate::service::support::CompensationInput;
use crate::service::{Executed, ServiceError};

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
}

/// A fresh one-time id for a confirmation form.
fn form_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The idempotency key of a console form: scoped to the staff member, keyed
/// by the form's one-time id, fingerprinted by path and body.
fn idem(
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

/// The hidden fields every action form carries.
fn hidden_fields(staff: &Staff) -> impl IntoView + use<> {
    let csrf = staff.session.csrf_token.clone();
    let fid = form_id();
    view! {
        <input type="hidden" name="csrf" value=csrf/>
        <input type="hidden" name="form_id" value=fid/>
    }
}

/// The required reason field.
fn reason_field(l: Lang) -> impl IntoView + use<> {
    view! {
        <label for="reason">{l.t("reason-required-recorded-in-the-timeline")}</label>
        <textarea id="reason" name="reason" required=true maxlength="500"></textarea>
    }
}

/// A refusal or bad input as a message for the flash.
fn refusal_text(l: Lang, e: &ServiceError) -> String {
    match e {
        ServiceError::Invalid(f) if f.field == "reason" => l.t("please-give-a-reason").to_string(),
        ServiceError::Refused { refusal, .. } => l.t(refusal.message_key()).to_string(),
        other => other.to_string(),
    }
}

/// Ends an action: a successful or replayed write redirects to `to` with
/// `ok`; a refusal or bad input goes back to the form with the reason;
/// a forbidden action, an unknown id or database trouble is an error page.
fn finish<T>(
    staff: &Staff,
    result: Result<Executed<T>, ServiceError>,
    to: impl FnOnce(Option<&T>) -> String,
    ok: String,
    back: &str,
) -> Response {
    match result {
        Ok(Executed::Fresh(v)) => staff.done(&to(Some(&v)), ok),
        Ok(Executed::Replayed { .. }) => staff.done(&to(None), ok),
        Err(
            e @ (ServiceError::Db(_) | ServiceError::NotFound { .. } | ServiceError::Forbidden(_)),
        ) => WebError::from_service(staff.lang, e).into_response(),
        Err(e) => staff.refused(back, refusal_text(staff.lang, &e)),
    }
}

#[derive(Deserialize)]
struct ActionForm {
    form_id: Option<String>,
    reason: Option<String>,
    force: Option<String>,
}

async fn release_page(State(s): State<AppState>, staff: Staff, Path(id): Path<String>) -> Response {
    let l = staff.lang;
    let c = match s.service.get_coupon(&id).await {
        Ok(c) => c,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let order = match &c.order_no {
        Some(no) => s.service.get_order(no).await.ok(),
        None => None,
    };
    // Live: the order still holds the coupon (a lapsed checkout does not).
    let now = s.service.now();
    let live = order.as_ref().is_some_and(|o| o.holds_coupon(now));
    let may_force = staff.session.role.may_force_release();
    let action = format!("/console/coupons/{}/release", enc(&c.id));
    let back = format!("/console/coupons/{}", enc(&c.id));
    let order_line = order.map(|o| {
        let href = format!("/console/orders/{}", enc(&o.order_no));
        view! {
            <dt>{l.t("bound-order")}</dt>
            <dd><a href=href>{o.order_no.clone()}</a>" "{order_badge(l, o.status)}</dd>
        }
    });
    let warning = live.then(|| {
        view! {
            <p class="flash flash-error" role="note">{l.t("careful-this-order-is-still-live")}</p>
        }
    });
    let force = (live && may_force).then(|| {
        view! {
            <label class="check"><input type="checkbox" name="force" value="true"/>" "
                {l.t("force-the-release-although-the-order")}
            </label>
        }
    });
    let support_note = (live && !may_force).then(|| {
        view! { <p class="note">{l.t("only-an-operator-can-force-the")}</p> }
    });
    let title = l.t("release-the-lock");
    let can_release = c.can_release();
    staff.page(
        title,
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{l.t("release-this-coupon")}</h2>
                <dl class="facts">
                    <dt>{l.t("code")}</dt><dd class="mono">{c.code.clone()}</dd>
                    <dt>{l.t("status")}</dt><dd>{coupon_badge(l, c.status)}</dd>
                    <dt>{l.t("ends")}</dt><dd>{time_text(&c.ends_at)}</dd>
                    {order_line}
                </dl>
                <p>{l.t("after-the-release-the-coupon-is")}</p>
                {warning}
                {if can_release {
                    view! {
                        <form method="post" action=action class="stack">
                            {hidden_fields(&staff)}
                            {reason_field(l)}
                            {force}
                            {support_note}
                            <p class="actions">
                                <button type="submit" class="primary" data-testid="confirm">{l.t("release")}</button>
                                <a class="button" href=back>{l.t("cancel")}</a>
                            </p>
                        </form>
                    }.into_any()
                } else {
                    view! { <p>{l.t("this-coupon-is-not-locked-there")}</p> }.into_any()
                }}
            </section>
        },
    )
}

async fn release(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let form: ActionForm = match staff.posted(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let path = format!("/console/coupons/{}/release", enc(&id));
    let force = matches!(form.force.as_deref(), Some("true" | "on" | "1"));
    let result = s
        .service
        .release_coupon(
            &staff.ctx(),
            &staff.authority(),
            idem(&staff, form.form_id.as_deref(), &path, &body).as_ref(),
            id.clone(),
            form.reason,
            force,
        )
        .await;
    let l = staff.lang;
    let ok = l.t("the-lock-is-released").to_string();
    let to = format!("/console/coupons/{}", enc(&id));
    finish(&staff, result, |_| to, ok, &path)
}

async fn invalidate_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<String>,
) -> Response {
    let l = staff.lang;
    let c = match s.service.get_coupon(&id).await {
        Ok(c) => c,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let action = format!("/console/coupons/{}/invalidate", enc(&c.id));
    let back = format!("/console/coupons/{}", enc(&c.id));
    let allowed = staff.session.role.includes(Role::Operator);
    let terms = coupon_terms_text(l, &c);
    let form = match (c.can_invalidate(), allowed) {
        (true, true) => view! {
            <form method="post" action=action class="stack">
                {hidden_fields(&staff)}
                {reason_field(l)}
                <p class="actions">
                    <button type="submit" class="danger primary" data-testid="confirm">{l.t("invalidate")}</button>
                    <a class="button" href=back>{l.t("cancel")}</a>
                </p>
            </form>
        }
        .into_any(),
        (true, false) => view! { <p class="note">{l.t("invalidating-a-coupon-needs-the-operator")}</p> }.into_any(),
        (false, _) => view! { <p>{l.t("only-an-available-coupon-can-be")}</p> }.into_any(),
    };
    staff.page(
        l.t("invalidate-a-coupon"),
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{l.t("invalidate-this-coupon-this-cannot-be")}</h2>
                <dl class="facts">
                    <dt>{l.t("code")}</dt><dd class="mono">{c.code.clone()}</dd>
                    <dt>{l.t("user")}</dt><dd>{c.user_id.clone()}</dd>
                    <dt>{l.t("discount")}</dt><dd>{terms}</dd>
                    <dt>{l.t("status")}</dt><dd>{coupon_badge(l, c.status)}</dd>
                </dl>
                {form}
            </section>
        },
    )
}

async fn invalidate(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let form: ActionForm = match staff.posted(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let path = format!("/console/coupons/{}/invalidate", enc(&id));
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
    let ok = staff.lang.t("the-coupon-is-invalidated").to_string();
    let to = format!("/console/coupons/{}", enc(&id));
    finish(&staff, result, |_| to, ok, &path)
}

#[derive(Deserialize)]
struct CompensationQuery {
    order_no: Option<String>,
    amount_cents: Option<i64>,
}

async fn compensation_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(user_id): Path<String>,
    Query(q): Query<CompensationQuery>,
) -> Response {
    let l = staff.lang;
    let settings = s.service.settings().clone();
    let cap = staff.session.role.compensation_capped().then(|| {
        let text = crate::tr!(
            l,
            "support-limits-at-most-per-coupon",
            support_compensation_max_cents = l.money(settings.support_compensation_max_cents),
            support_compensation_daily_cents = l.money(settings.support_compensation_daily_cents)
        );
        view! { <p class="note" data-testid="cap">{text}</p> }
    });
    let amount = q
        .amount_cents
        .filter(|c| *c > 0)
        .map(|c| crate::domain::money::Cents::from_stored(c).yuan())
        .unwrap_or_default();
    let order_no = q.order_no.unwrap_or_default();
    let action = format!("/console/users/{}/compensation", enc(&user_id));
    let back = format!("/console/users/{}", enc(&user_id));
    staff.page(
        l.t("issue-a-compensation-coupon"),
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{crate::tr!(l, "compensation-coupon-for-user", user_id = user_id)}</h2>
                <p>{l.t("a-compensation-coupon-takes-a-fixed")}</p>
                {cap}
                <form method="post" action=action class="stack">
                    {hidden_fields(&staff)}
                    <label for="amount">{l.t("amount-yuan")}</label>
                    <input id="amount" name="amount" type="text" inputmode="decimal" required=true value=amount placeholder="50.00"/>
                    <label for="valid_days">{l.t("valid-for-days")}</label>
                    <input id="valid_days" name="valid_days" type="number" min="1" max="365" value="30" required=true/>
                    <label for="order_no">{l.t("order-number-optional")}</label>
                    <input id="order_no" name="order_no" type="text" value=order_no/>
                    {reason_field(l)}
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="confirm">{l.t("issue")}</button>
                        <a class="button" href=back>{l.t("cancel")}</a>
                    </p>
                </form>
            </section>
        },
    )
}

#[derive(Deserialize)]
struct CompensationForm {
    form_id: Option<String>,
    amount: Option<String>,
    valid_days: Option<String>,
    order_no: Option<String>,
    reason: Option<String>,
}

/// `50`, `50.5`, `50.05`, `¥50.00` → cents; anything else is refused.
pub fn parse_yuan(raw: &str) -> Option<i64> {
    let t = raw.trim().trim_start_matches('¥').trim();
    let (whole, frac) = match t.split_once('.') {
        Some((w, f)) => (w, f),
        None => (t, ""),
    };
    if whole.is_empty()
        || whole.len() > 10
        || frac.len() > 2
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let yuan: i64 = whole.parse().ok()?;
    let cents: i64 = match frac.len() {
        0 => 0,
        1 => frac.parse::<i64>().ok()? * 10,
        _ => frac.parse().ok()?,
    };
    yuan.checked_mul(100)?.checked_add(cents)
}

async fn compensate(
    State(s): State<AppState>,
    staff: Staff,
    Path(user_id): Path<String>,
    body: Bytes,
) -> Response {
    let form: CompensationForm = match staff.posted(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let l = staff.lang;
    let path = format!("/console/users/{}/compensation", enc(&user_id));
    let Some(value_cents) = form.amount.as_deref().and_then(parse_yuan) else {
        return staff.refused(&path, l.t("enter-the-amount-like-50-or").to_string());
    };
    let Some(valid_days) = form
        .valid_days
        .as_deref()
        .and_then(|d| d.trim().parse::<i64>().ok())
        .filter(|d| (1..=365).contains(d))
    else {
        return staff.refused(&path, l.t("valid-days-must-be-1-to").to_string());
    };
    let order_no = form
        .order_no
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty());
    let result = s
        .service
        .issue_compensation(
            &staff.ctx(),
            &staff.authority(),
            idem(&staff, form.form_id.as_deref(), &path, &body).as_ref(),
            user_id.clone(),
            CompensationInput {
                value_cents: Some(value_cents),
                valid_seconds: Some(valid_days * 24 * 3600),
                reason: form.reason,
                order_no,
            },
        )
        .await;
    let ok = crate::tr!(
        l,
        "a-compensation-coupon-was-issued",
        value_cents = l.money(value_cents)
    );
    let user_page = format!("/console/users/{}", enc(&user_id));
    finish(
        &staff,
        result,
        |c| match c {
            Some(c) => format!("/console/coupons/{}", enc(&c.id)),
            None => user_page,
        },
        ok,
        &path,
    )
}

async fn cancel_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
) -> Response {
    let l = staff.lang;
    let o = match s.service.get_order(&order_no).await {
        Ok(o) => o,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let action = format!("/console/orders/{}/cancel", enc(&o.order_no));
    let back = format!("/console/orders/{}", enc(&o.order_no));
    let cancellable = o.is_live();
    let lapsed = o.checkout_lapsed(s.service.now());
    let allowed = staff.session.role.may_cancel_order(lapsed);
    let form = match (cancellable, allowed) {
        (true, true) => view! {
            <form method="post" action=action class="stack">
                {hidden_fields(&staff)}
                {reason_field(l)}
                <p class="actions">
                    <button type="submit" class="danger primary" data-testid="confirm">{l.t("cancel-the-order")}</button>
                    <a class="button" href=back>{l.t("back")}</a>
                </p>
            </form>
        }
        .into_any(),
        (true, false) => view! { <p class="note">{l.t("cancelling-an-order-needs-the-operator")}</p> }.into_any(),
        (false, _) => view! { <p>{l.t("the-order-is-over-it-cannot")}</p> }.into_any(),
    };
    staff.page(
        l.t("cancel-an-order"),
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{crate::tr!(l, "cancel-order", order_no = &o.order_no)}</h2>
                <p>{order_badge(l, o.status)}" "{l.t("its-locked-coupon-is-released-in")}</p>
                {form}
            </section>
        },
    )
}

async fn cancel(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    body: Bytes,
) -> Response {
    let form: ActionForm = match staff.posted(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let l = staff.lang;
    let path = format!("/console/orders/{}/cancel", enc(&order_no));
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
    let ok = l.t("the-order-is-cancelled").to_string();
    let to = format!("/console/orders/{}", enc(&order_no));
    finish(&staff, result, |_| to, ok, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yuan_amounts_parse_to_exact_cents() {
        assert_eq!(parse_yuan("50"), Some(5000));
        assert_eq!(parse_yuan("50.5"), Some(5050));
        assert_eq!(parse_yuan("50.05"), Some(5005));
        assert_eq!(parse_yuan(" ¥12.30 "), Some(1230));
        assert_eq!(parse_yuan("0.01"), Some(1));
        for bad in ["", "-5", "5.001", "1e3", "abc", ".5", "99999999999", "5,00"] {
            assert_eq!(parse_yuan(bad), None, "{bad}");
        }
    }
}

#[derive(Deserialize)]
struct RepairQuery {
    coupon_id: Option<String>,
}

/// The two repairs of an order's coupon link that are confirmed on a page
/// of their own: one page shape, one POST path, one service call each.
#[derive(Debug, Clone, Copy)]
enum LinkRepair {
    /// Relock the order's freed coupon, or relink the order to the coupon
    /// bound to it ([`crate::service::Service::repair_coupon_link`]).
    Link,
    /// Mark a coupon still `locked` to its paid order `used` for it
    /// ([`crate::service::Service::mark_coupon_used`]). Support may do it:
    /// it only makes the coupon agree with an order the customer has paid.
    MarkUsed,
}

impl LinkRepair {
    /// The last path segment under `/console/orders/{order_no}/`.
    fn route(self) -> &'static str {
        match self {
            LinkRepair::Link => "repair",
            LinkRepair::MarkUsed => "mark-coupon-used",
        }
    }
}

async fn repair_page(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    q: Query<RepairQuery>,
) -> Response {
    link_repair_page(s, staff, order_no, q, LinkRepair::Link).await
}

async fn mark_used_page(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    q: Query<RepairQuery>,
) -> Response {
    link_repair_page(s, staff, order_no, q, LinkRepair::MarkUsed).await
}

/// The confirmation page of a [`LinkRepair`]: what it will do, the order
/// and the coupon, the reason field.
async fn link_repair_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    Query(q): Query<RepairQuery>,
    kind: LinkRepair,
) -> Response {
    let l = staff.lang;
    let o = match s.service.get_order(&order_no).await {
        Ok(o) => o,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let Some(coupon_id) = q.coupon_id.filter(|c| !c.is_empty()) else {
        return WebError::bad_request(l.t("which-coupon-coupon-id-is-missing").to_string())
            .into_response();
    };
    let c = match s.service.get_coupon(&coupon_id).await {
        Ok(c) => c,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let (title, heading, what, note, button) = match kind {
        LinkRepair::Link => {
            let what = if o.coupon_id.as_deref() == Some(c.id.as_str()) {
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
                l.t("repair-the-coupon-link"),
                l.t("repair-this-link"),
                what,
                l.t("the-order-and-the-coupon-are"),
                l.t("repair"),
            )
        }
        LinkRepair::MarkUsed => (
            l.t("mark-the-coupon-used"),
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
    };
    // Marking used settles the discount the order already took: show it.
    let discount = matches!(kind, LinkRepair::MarkUsed).then(|| {
        let d = l.money(o.coupon_discount_cents);
        view! { <dt>{l.t("discount-on-the-order")}</dt><dd>{d}</dd> }
    });
    let action = format!("/console/orders/{}/{}", enc(&o.order_no), kind.route());
    let back = format!("/console/orders/{}", enc(&o.order_no));
    let cid = c.id.clone();
    staff.page(
        title,
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{heading}</h2>
                <p>{what}</p>
                <dl class="facts">
                    <dt>{l.t("order")}</dt><dd>{o.order_no.clone()}" "{order_badge(l, o.status)}</dd>
                    {discount}
                    <dt>{l.t("coupon")}</dt><dd class="mono">{c.code.clone()}" "{coupon_badge(l, c.status)}</dd>
                </dl>
                <p class="note">{note}</p>
                <form method="post" action=action class="stack">
                    {hidden_fields(&staff)}
                    <input type="hidden" name="coupon_id" value=cid/>
                    {reason_field(l)}
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="confirm">{button}</button>
                        <a class="button" href=back>{l.t("cancel")}</a>
                    </p>
                </form>
            </section>
        },
    )
}

#[derive(Deserialize)]
struct RepairForm {
    form_id: Option<String>,
    coupon_id: Option<String>,
    reason: Option<String>,
}

async fn repair(s: State<AppState>, staff: Staff, order_no: Path<String>, body: Bytes) -> Response {
    link_repair(s, staff, order_no, body, LinkRepair::Link).await
}

async fn mark_used(
    s: State<AppState>,
    staff: Staff,
    order_no: Path<String>,
    body: Bytes,
) -> Response {
    link_repair(s, staff, order_no, body, LinkRepair::MarkUsed).await
}

/// The confirmed POST of a [`LinkRepair`]; lands back on the order's
/// health check.
async fn link_repair(
    State(s): State<AppState>,
    staff: Staff,
    Path(order_no): Path<String>,
    body: Bytes,
    kind: LinkRepair,
) -> Response {
    let form: RepairForm = match staff.posted(&body) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    let coupon_id = form.coupon_id.unwrap_or_default();
    let path = format!(
        "/console/orders/{}/{}?coupon_id={}",
        enc(&order_no),
        kind.route(),
        enc(&coupon_id)
    );
    let idem = idem(&staff, form.form_id.as_deref(), &path, &body);
    let (ctx, order) = (staff.ctx(), order_no.clone());
    let result = match kind {
        LinkRepair::Link => {
            s.service
                .repair_coupon_link(&ctx, idem.as_ref(), order, coupon_id, form.reason)
                .await
        }
        LinkRepair::MarkUsed => {
            s.service
                .mark_coupon_used(&ctx, idem.as_ref(), order, coupon_id, form.reason)
                .await
        }
    };
    let l = staff.lang;
    let ok = match kind {
        LinkRepair::Link => l.t("the-coupon-link-is-repaired"),
        LinkRepair::MarkUsed => l.t("the-coupon-is-marked-used-on"),
    }
    .to_string();
    let to = format!("/console/orders/{}?check=1#health", enc(&order_no));
    finish(&staff, result, |_| to, ok, &path)
}
