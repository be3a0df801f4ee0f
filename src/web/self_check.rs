//! The customers' self-check page, `GET /self-check?t=<token>` (and
//! `&check=1` for the one-click check's results, a read-only GET), with
//! the customer's in-app messages. Two forms (the token in a hidden
//! field): `POST /self-check/check` runs the check (then shows the page
//! with `&check=1`) and `POST /self-check/messages/read` marks the
//! messages read. After the check, each order has a "contact support"
//! form (`POST /self-check/support`: the token, the order number and an
//! optional note) that records a support request with the check's
//! findings (`service::support_requests`); within the hour after one, the
//! order shows when it was sent instead.
//!
//! Only those deliberate acts of the customer record a visit
//! (`user_activity`, the reminders' sms tier and the wake-up rules count
//! it as activity): a GET or HEAD of the page records nothing, so a link
//! previewer, a mail scanner or a crawler that opens the link does not
//! make the customer look active.
//!
//! The signed token is the only key: there is no route taking a user id,
//! no session and no staff data. A missing, altered, foreign-secret or
//! expired token gets one bilingual 403 page that shows nothing. A good
//! token shows only the user it names: their coupons and orders in plain
//! words and, on request, the health check in customer words (codes and
//! order numbers only; no coupon or template ids, actors or action codes).
//!
//! Every answer carries `Cache-Control: no-store`, `Referrer-Policy:
//! no-referrer` (the token is in the URL), `X-Robots-Tag: noindex` and a
//! CSP without scripts; the page has no JavaScript.

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{same_origin_without_origin, same_site_request};
use super::components::{CouponBadge, OrderBadge, ResultBadge};
use super::console::reading_rank;
use super::context::{lang, render_in};
use super::escape_html;
use super::i18n::Lang;
use super::layout::coupon_terms_text;
use super::self_check_popups::PendingPopups;
use crate::domain::coupon::CouponStatus;
use crate::domain::health::CheckResult;
use crate::domain::ids::{CampaignId, CouponId, OrderNo};
use crate::domain::money::Cents;
use crate::domain::order::{OrderKind, OrderStatus};
use crate::domain::self_check::Verified;
use crate::domain::support_request::{CustomerNote, MAX_NOTE_CHARS, REQUEST_GAP_SECONDS};
use crate::domain::time::parse_rfc3339;
use crate::http::AppState;
use crate::i18n::Arg;
use crate::service::ServiceError;
use crate::service::self_check::{
    CustomerCheck, CustomerFinding, CustomerMessage, NextStep, OrderStanding, customer_check,
    order_standing,
};
use crate::service::support::UserOverview;
use crate::service::views::{CampaignView, CouponView, OrderView, QuoteView};

/// The page and its one form.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/self-check", get(page))
        .route("/self-check/check", post(run_check))
        .route("/self-check/messages/read", post(mark_read))
        .route("/self-check/support", post(request_support))
}

/// The query of the page: `t` (the token) and `check`.
#[derive(Debug, Default)]
struct SelfCheckQuery {
    token: Option<String>,
    check: bool,
}

fn parse_query(raw: Option<&str>) -> SelfCheckQuery {
    let mut q = SelfCheckQuery::default();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "t" if q.token.is_none() => q.token = Some(v.into_owned()),
            "check" => q.check = !v.is_empty() && v != "0",
            _ => {}
        }
    }
    q
}

/// Headers every self-check answer carries.
fn private(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        "x-robots-tag",
        HeaderValue::from_static("noindex, nofollow"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    r
}

/// The customer a token names, if any: the one gate of the page and of
/// its form (`None` gets [`refusal`]).
fn verify(s: &AppState, token: Option<&str>) -> Option<Verified> {
    let token = token.filter(|t| !t.is_empty())?;
    if s.self_check.secret.is_none() {
        tracing::warn!("self-check page opened but COUPONKEEPER_SELF_CHECK_SECRET is not set");
        return None;
    }
    s.service
        .verify_self_check_token(&s.self_check, token)
        .map_err(|e| tracing::info!(reason = e.as_str(), "self-check link refused"))
        .ok()
}

/// The `/self-check` address of a token (`&check=1` when `checked`).
fn page_href(token: &str, checked: bool) -> String {
    let t: String = form_urlencoded::byte_serialize(token.as_bytes()).collect();
    if checked {
        format!("/self-check?t={t}&check=1")
    } else {
        format!("/self-check?t={t}")
    }
}

async fn page(State(s): State<AppState>, headers: HeaderMap, RawQuery(raw): RawQuery) -> Response {
    let lang = Lang::from_headers(&headers);
    let q = parse_query(raw.as_deref());
    let Some(verified) = verify(&s, q.token.as_deref()) else {
        return refusal(lang);
    };
    let token = q.token.as_deref().unwrap_or_default();
    let html = match page_html(&s, lang, &verified, token, q.check, None).await {
        Ok(html) => html,
        Err(r) => return r,
    };
    private(Html(html).into_response())
}

/// The page's HTML for the verified customer (`checked`: with the
/// check's results; `refused`: a support form that came back with its
/// input and the message at the field), or the answer to send instead.
async fn page_html(
    s: &AppState,
    lang: Lang,
    verified: &Verified,
    token: &str,
    checked: bool,
    refused: Option<RefusedSupport>,
) -> Result<String, Response> {
    let q = SelfCheckQuery {
        token: None,
        check: checked,
    };
    let user = &verified.user_id;
    let overview = match s.service.user_overview(user).await {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "self-check: cannot read the customer's data");
            return Err(unavailable(lang));
        }
    };
    let check = if q.check {
        match s.service.user_health_check(user).await {
            Ok(r) => Some(customer_check(&r, &overview.coupons)),
            Err(e) => {
                tracing::error!(error = %e, "self-check: cannot run the check");
                return Err(unavailable(lang));
            }
        }
    } else {
        None
    };
    let campaigns = match s.service.self_check_campaigns(&overview.orders).await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "self-check: cannot read the presale campaigns");
            return Err(unavailable(lang));
        }
    };
    let messages = match s.service.self_check_messages(verified).await {
        Ok(m) => m,
        Err(e) => {
            tracing::error!(error = %e, "self-check: cannot read the customer's messages");
            return Err(unavailable(lang));
        }
    };
    let popups = match s.service.pending_reminder_popups(user).await {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(error = %e, "self-check: cannot read the customer's pop-ups");
            return Err(unavailable(lang));
        }
    };
    // What each deposit-paid order's final payment would be now.
    let mut quotes = Quotes::new();
    for o in overview
        .orders
        .iter()
        .filter(|o| o.status == OrderStatus::DepositPaid)
    {
        match s.service.final_payment_quote(&o.order_no).await {
            Ok(q) => {
                quotes.insert(o.order_no.clone(), q);
            }
            Err(e) => {
                tracing::error!(error = %e, "self-check: cannot quote a final payment");
                return Err(unavailable(lang));
            }
        }
    }
    let compensation_ids: Vec<CouponId> = overview
        .coupons
        .iter()
        .filter(|c| c.source == crate::domain::coupon::CouponSource::Compensation)
        .map(|c| c.id.clone())
        .collect();
    let origins = match s.service.compensation_origins(compensation_ids).await {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "self-check: cannot read what compensation was for");
            return Err(unavailable(lang));
        }
    };
    // When each order last had a support request within the hour: only
    // the check's results show the forms.
    let requests = if q.check {
        match s.service.recent_support_requests(verified).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "self-check: cannot read the support requests");
                return Err(unavailable(lang));
            }
        }
    } else {
        HashMap::new()
    };
    let view = PageData {
        lang,
        token: token.to_string(),
        checked: q.check,
        expires_at: verified.expires_at,
        support_hint: s.self_check.support_hint.clone(),
        overview,
        campaigns,
        now: s.service.now(),
        check,
        messages,
        popups,
        quotes,
        origins,
        support: SupportForms { requests, refused },
    };
    Ok(render(view))
}

/// The page's forms ("check my orders", "mark all as read"): the token is
/// their only credential.
#[derive(Debug, Deserialize)]
struct MarkReadForm {
    t: Option<String>,
}

/// The customer's deliberate act: recorded as a visit (best effort: a
/// visit not recorded must not keep the customer from their page).
async fn record_visit(s: &AppState, verified: &Verified) {
    if let Err(e) = s.service.record_self_check_visit(verified).await {
        tracing::warn!(error = %e, "self-check: cannot record the visit");
    }
}

/// The token of a same-site form post to one of the page's forms, once
/// verified; `None` gets the page's 403.
fn posted_token(s: &AppState, headers: &HeaderMap, body: &Bytes) -> Option<(String, Verified)> {
    if !same_site_request(headers) && !same_origin_without_origin(headers) {
        tracing::info!("self-check: cross-site post refused");
        return None;
    }
    let token = serde_urlencoded::from_bytes::<MarkReadForm>(body)
        .ok()
        .and_then(|f| f.t);
    let verified = verify(s, token.as_deref())?;
    Some((token.unwrap_or_default(), verified))
}

/// `POST /self-check/check`: the customer pressed "check my orders". The
/// press is a visit; the answer goes to the page with the check's results.
async fn run_check(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some((token, verified)) = posted_token(&s, &headers, &body) else {
        return refusal(Lang::from_headers(&headers));
    };
    record_visit(&s, &verified).await;
    let href = page_href(&token, true);
    private(
        (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("{href}#check"))],
        )
            .into_response(),
    )
}

/// `POST /self-check/messages/read`: a same-site form post (under
/// `Referrer-Policy: no-referrer` the browser sends `Origin: null`, so
/// `Sec-Fetch-Site: same-origin` is accepted as for the language switch)
/// with a token verified exactly as the page does; marks that customer's
/// unread messages read and goes back to the page. Anything else gets the
/// page's 403 and changes nothing.
async fn mark_read(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let lang = Lang::from_headers(&headers);
    let Some((token, verified)) = posted_token(&s, &headers, &body) else {
        return refusal(lang);
    };
    record_visit(&s, &verified).await;
    if let Err(e) = s.service.mark_self_check_messages_read(&verified).await {
        tracing::error!(error = %e, "self-check: cannot mark the messages read");
        return unavailable(lang);
    }
    let href = page_href(&token, false);
    private(
        (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, format!("{href}#messages"))],
        )
            .into_response(),
    )
}

/// The "contact support" form: the token, the order and the note.
#[derive(Debug, Deserialize)]
struct SupportForm {
    order_no: Option<String>,
    note: Option<String>,
}

/// A support form that came back refused: its order, the note as typed
/// and the catalog key of the message at the field.
#[derive(Debug, Clone)]
struct RefusedSupport {
    order_no: OrderNo,
    note: String,
    message_key: &'static str,
}

/// What the check's support forms need: when each order last had a
/// request within the hour, and the refused form, if any.
#[derive(Debug, Clone, Default)]
struct SupportForms {
    requests: HashMap<OrderNo, DateTime<Utc>>,
    refused: Option<RefusedSupport>,
}

/// `POST /self-check/support`: the customer asks support about one of
/// their orders. A same-site post with the page's token (as the other
/// forms); the press is a visit. Recorded (or already sent within the
/// hour: nothing written), the answer goes back to the check, which then
/// says when it was sent. A bad note comes back (422) with the page, the
/// note as typed and the message at the field; another customer's order
/// or none is a 404 that says nothing of it.
async fn request_support(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let lang = Lang::from_headers(&headers);
    let Some((token, verified)) = posted_token(&s, &headers, &body) else {
        return refusal(lang);
    };
    record_visit(&s, &verified).await;
    let form = serde_urlencoded::from_bytes::<SupportForm>(&body).unwrap_or(SupportForm {
        order_no: None,
        note: None,
    });
    let Ok(order_no) = OrderNo::parse(form.order_no.as_deref().unwrap_or_default()) else {
        return no_such_order(lang, &token);
    };
    let raw_note = form.note.unwrap_or_default();
    let note = match CustomerNote::parse(&raw_note) {
        Ok(n) => n,
        Err(e) => {
            let refused = RefusedSupport {
                order_no,
                note: raw_note,
                message_key: e.message_key(),
            };
            return match page_html(&s, lang, &verified, &token, true, Some(refused)).await {
                Ok(html) => private((StatusCode::UNPROCESSABLE_ENTITY, Html(html)).into_response()),
                Err(r) => r,
            };
        }
    };
    match s.service.request_support(&verified, &order_no, note).await {
        Ok(_) => {
            let href = page_href(&token, true);
            private(
                (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, format!("{href}#check"))],
                )
                    .into_response(),
            )
        }
        Err(ServiceError::NotFound { .. }) => no_such_order(lang, &token),
        Err(e) => {
            tracing::error!(error = %e, "self-check: cannot record the support request");
            unavailable(lang)
        }
    }
}

/// 404 for a support request about an order that is not the customer's
/// (or none): it says nothing of the order, and links back to the page.
fn no_such_order(l: Lang, token: &str) -> Response {
    let back = escape_html(&page_href(token, true));
    let body = format!(
        "<main class=\"sc-main\" id=\"main\"><section class=\"sc-card\" data-testid=\"sc-no-such-order\"><h1>{}</h1><p>{}</p><p><a class=\"button sc-button\" href=\"{back}\">{}</a></p></section></main>",
        l.t("sc-support-no-such-order"),
        l.t("sc-support-no-such-order-why"),
        l.t("sc-support-back-to-check")
    );
    private((StatusCode::NOT_FOUND, Html(document(l, "404", &body))).into_response())
}

/// The HTML shell of the self-check pages: no script, not indexed.
fn document(l: Lang, title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"{}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex, nofollow\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{}</title><link rel=\"icon\" href=\"/favicon.svg\" type=\"image/svg+xml\">\
         <link rel=\"stylesheet\" href=\"/style/main.css\"></head>\
         <body class=\"sc\">{body}</body></html>",
        l.html_lang(),
        escape_html(title)
    )
}

/// The one answer to a missing, altered, foreign or expired link: 403,
/// both languages, nothing of anyone's data.
pub fn refusal(l: Lang) -> Response {
    let first = (
        l.t("self-check-link-invalid"),
        l.t("self-check-link-invalid-why"),
    );
    let second = (
        l.other().t("self-check-link-invalid"),
        l.other().t("self-check-link-invalid-why"),
    );
    let other = l.other().html_lang();
    let body = format!(
        "<main class=\"sc-main\" id=\"main\"><section class=\"sc-card sc-refusal\" data-testid=\"sc-refused\">\
         <h1>{}</h1><p>{}</p><h2 lang=\"{other}\">{}</h2><p lang=\"{other}\">{}</p></section></main>",
        first.0, first.1, second.0, second.1
    );
    let title = format!("{} · {}", first.0, second.0);
    private((StatusCode::FORBIDDEN, Html(document(l, &title, &body))).into_response())
}

fn unavailable(l: Lang) -> Response {
    let body = format!(
        "<main class=\"sc-main\" id=\"main\"><section class=\"sc-card\"><h1>{}</h1><p>{}</p></section></main>",
        l.t("temporarily-unavailable"),
        l.t("we-cannot-read-your-data-right")
    );
    private(
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Html(document(l, "503", &body)),
        )
            .into_response(),
    )
}

struct PageData {
    lang: Lang,
    token: String,
    checked: bool,
    expires_at: chrono::DateTime<chrono::Utc>,
    support_hint: Option<String>,
    overview: UserOverview,
    /// The presale campaigns of the orders, by id.
    campaigns: HashMap<CampaignId, CampaignView>,
    now: DateTime<Utc>,
    check: Option<CustomerCheck>,
    messages: Vec<CustomerMessage>,
    /// Pending reminder pop-ups, shown first.
    popups: Vec<crate::service::reminder_popups::ReminderPopupView>,
    quotes: Quotes,
    origins: Origins,
    support: SupportForms,
}

/// `2026-12-01 08:00 (UTC+8)`: a time for the customer, to the minute, in
/// the business time zone.
fn when(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| crate::i18n::zone::local_minutes(t.to_utc()))
        .unwrap_or_else(|_| rfc3339.to_string())
}

/// A time for the customer, to the minute in the business time zone, as a
/// `<time datetime="…Z">` element (machines and screen readers get the
/// instant; the customer reads local time with its offset).
fn time_el(t: DateTime<Utc>) -> impl IntoView + use<> {
    let datetime = t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    view! { <time datetime=datetime>{crate::i18n::zone::local_minutes(t)}</time> }
}

/// [`time_el`] of a stored RFC 3339 time; the text as it is when it does
/// not parse.
fn time_of(rfc3339: &str) -> AnyView {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => time_el(t.to_utc()).into_any(),
        Err(_) => rfc3339.to_string().into_any(),
    }
}

/// A catalog sentence with times in it, each a [`time_el`]: the sentence
/// is rendered with a private-use marker per time (U+E000, U+E001, …) and
/// split there, so the words stay the catalog's and the times become
/// elements.
fn sentence_with_times(text: &str, times: &[DateTime<Utc>]) -> AnyView {
    let mut parts: Vec<AnyView> = Vec::new();
    let mut rest = text;
    // Bounded: one split per time.
    for (i, t) in times.iter().enumerate() {
        let marker = char::from_u32(0xE000 + i as u32).unwrap_or('\u{E000}');
        match rest.split_once(marker) {
            Some((before, after)) => {
                parts.push(before.to_string().into_any());
                parts.push(time_el(*t).into_any());
                rest = after;
            }
            None => break,
        }
    }
    parts.push(rest.to_string().into_any());
    parts.into_any()
}

/// The marker [`sentence_with_times`] replaces with its `i`-th time.
fn time_marker(i: u32) -> Arg {
    Arg::Text(char::from_u32(0xE000 + i).unwrap_or('\u{E000}').to_string())
}

/// Whether each order can still be paid, by order number.
type Payable = HashMap<OrderNo, bool>;

/// What one coupon's state means for the customer, in a sentence (its
/// terms, threshold, categories and end are in [`coupon_facts`]).
fn coupon_sentence(
    l: Lang,
    c: &CouponView,
    orders: &[OrderView],
    payable: &Payable,
    now: DateTime<Utc>,
) -> String {
    // Only this customer's own orders are named.
    let order = c
        .order_no
        .as_ref()
        .and_then(|no| orders.iter().find(|o| o.order_no == *no));
    match c.status {
        CouponStatus::Available => match parse_rfc3339(&c.starts_at) {
            Ok(starts) if starts > now => {
                crate::tr!(l, "sc-coupon-not-started", starts = Arg::Time(starts))
            }
            _ => l.t("sc-coupon-ready").to_string(),
        },
        CouponStatus::Locked => match order {
            Some(o) if o.coupons.iter().any(|x| x.coupon_id == c.id) => {
                let no = &o.order_no;
                // This coupon's own discount (the order's sum is every
                // coupon's).
                let d = o
                    .coupons
                    .iter()
                    .find(|x| x.coupon_id == c.id)
                    .map_or(o.coupon_discount_cents, |x| x.discount_cents)
                    .yuan();
                let can_pay = payable.get(no).copied().unwrap_or(false);
                match o.status {
                    _ if o.is_live() && !can_pay => {
                        crate::tr!(l, "sc-coupon-held-not-payable", no = no)
                    }
                    OrderStatus::DepositPaid | OrderStatus::PendingDeposit => {
                        crate::tr!(l, "this-coupon-is-locked-for-order", no = no, d = d)
                    }
                    OrderStatus::PendingPayment => {
                        crate::tr!(l, "this-coupon-is-reserved-for-order", no = no, d = d)
                    }
                    _ => crate::tr!(l, "this-coupon-is-still-held-by", no = no),
                }
            }
            Some(o) => crate::tr!(l, "this-coupon-is-held-by-order", order_no = &o.order_no),
            None => l.t("this-coupon-is-held-run-the-check").to_string(),
        },
        CouponStatus::Used => {
            let at = c.used_at.as_deref().map(when).unwrap_or_default();
            match order {
                Some(o) => crate::tr!(
                    l,
                    "sc-coupon-used-on-order",
                    order_no = &o.order_no,
                    at = at
                ),
                None => crate::tr!(l, "sc-coupon-used", at = at),
            }
        }
        CouponStatus::Expired => l.t("sc-coupon-expired").to_string(),
        CouponStatus::Invalidated => l.t("sc-coupon-withdrawn").to_string(),
    }
}

/// What a coupon is worth and where it applies, whatever its state: its
/// terms as customers say them, threshold, categories and end.
#[component]
fn CouponFacts(coupon: CouponView) -> impl IntoView {
    let (l, c) = (lang(), &coupon);
    let terms = coupon_terms_text(l, c);
    let threshold = if !c.min_order_cents.is_zero() {
        crate::tr!(l, "sc-threshold-from", t = c.min_order_cents.shown())
    } else {
        l.t("sc-no-threshold").to_string()
    };
    let categories = if c.categories.is_empty() {
        l.t("sc-all-categories").to_string()
    } else {
        crate::i18n::names::categories(l, &c.categories, l.t("sc-category-separator"))
    };
    let ends = time_of(&c.ends_at);
    view! {
        <dl class="sc-facts" data-testid="sc-coupon-facts">
            <dt>{l.t("sc-coupon-offer")}</dt><dd data-testid="sc-coupon-terms">{terms}</dd>
            <dt>{l.t("sc-coupon-threshold")}</dt><dd data-testid="sc-coupon-threshold">{threshold}</dd>
            <dt>{l.t("sc-coupon-categories")}</dt><dd data-testid="sc-coupon-categories">{categories}</dd>
            <dt>{l.t("sc-coupon-ends")}</dt><dd data-testid="sc-coupon-ends">{ends}</dd>
        </dl>
    }
}

/// The customer's coupons in the order support reads them, each with its
/// facts, what a compensation coupon was for, and what its state means
/// (`orders`: the customer's orders, the ones a coupon may name).
#[component]
fn CouponList(
    coupons: Vec<CouponView>,
    orders: Vec<OrderView>,
    payable: Payable,
    origins: Origins,
    now: DateTime<Utc>,
) -> impl IntoView {
    let l = lang();
    if coupons.is_empty() {
        return view! { <p class="sc-empty">{l.t("you-have-no-coupons")}</p> }.into_any();
    }
    let mut sorted = coupons;
    sorted.sort_by_key(|c| reading_rank(c.status));
    let items = sorted
        .into_iter()
        .map(|c| {
            let sentence = coupon_sentence(l, &c, &orders, &payable, now);
            // A compensation coupon says what it makes up for: the order,
            // and the reason when the system wrote it (a person's words
            // are for staff).
            let origin = origins.get(&c.id).map(|o| {
                let what = match &o.order_no {
                    Some(no) => crate::tr!(l, "compensation-of-order", order_no = no.as_str()),
                    None => l.t("compensation-for-no-order").to_string(),
                };
                let text = match crate::domain::event::system_reason_key(&o.reason) {
                    Some(key) => crate::tr!(
                        l,
                        "compensation-origin-with-reason",
                        what = what.as_str(),
                        reason = l.t(key)
                    ),
                    None => what,
                };
                view! { <p class="sc-sentence" data-testid="sc-compensation-origin">{text}</p> }
            });
            let code = c.code.clone();
            let data_code = c.code.clone();
            let status = c.status;
            let facts = view! { <CouponFacts coupon=c/> };
            view! {
                <li class="sc-item" data-testid="sc-coupon" data-code=data_code>
                    <p class="sc-item-head"><span class="mono sc-code">{code}</span><CouponBadge status=status/></p>
                    {facts}
                    {origin}
                    <p class="sc-sentence">{sentence}</p>
                </li>
            }
        })
        .collect_view();
    view! { <ul class="sc-list">{items}</ul> }.into_any()
}

/// The final-payment quotes of the deposit-paid orders, by order number:
/// what their next payment will really be.
type Quotes = HashMap<OrderNo, QuoteView>;

/// What each compensation coupon was given for, by coupon id.
type Origins = HashMap<CouponId, crate::service::compensation::CompensationOrigin>;

/// The money lines of an order's card: what will come off and what is due
/// while it can be paid (a deposit-paid order's from its final-payment
/// quote, never a discount that no longer holds), and what was paid at
/// each stage once it is paid.
struct CardMoney {
    discount_cents: Cents,
    /// Compensation deducted from the payment (not a compensation coupon).
    deduction_cents: Cents,
    due_cents: Option<Cents>,
    paid: Vec<(&'static str, Cents)>,
}

fn card_money(o: &OrderView, st: &OrderStanding, quote: Option<&QuoteView>) -> CardMoney {
    let paid_deposit = o.deposit_paid_at.is_some() && !o.deposit_cents.is_zero();
    match (o.status, quote) {
        (OrderStatus::DepositPaid, Some(q)) => {
            // A `coupon`-mode compensation is a coupon, not a deduction:
            // then the amount due is the rest without it.
            let deducted = o.total_cents.get()
                - o.deposit_cents.get()
                - q.discount_cents.get()
                - q.compensation_cents.get()
                == q.amount_due_cents.get();
            CardMoney {
                discount_cents: q.discount_cents,
                deduction_cents: if deducted {
                    q.compensation_cents
                } else {
                    Cents::ZERO
                },
                due_cents: st.payable.then_some(q.amount_due_cents),
                paid: vec![("sc-paid-deposit", o.deposit_cents)],
            }
        }
        (OrderStatus::FinalPaid, _) => CardMoney {
            discount_cents: o.coupon_discount_cents,
            deduction_cents: o.compensation_cents,
            due_cents: None,
            paid: [
                paid_deposit.then_some(("sc-paid-deposit", o.deposit_cents)),
                o.final_payment_cents.map(|c| ("sc-paid-final", c)),
            ]
            .into_iter()
            .flatten()
            .collect(),
        },
        (OrderStatus::Paid, _) => CardMoney {
            discount_cents: o.coupon_discount_cents,
            deduction_cents: o.compensation_cents,
            due_cents: None,
            paid: vec![(
                "sc-paid-amount",
                o.total_cents
                    .saturating_sub(o.coupon_discount_cents)
                    .saturating_sub(o.compensation_cents),
            )],
        },
        _ => CardMoney {
            discount_cents: if st.discount_counts {
                o.coupon_discount_cents
            } else {
                Cents::ZERO
            },
            deduction_cents: if st.discount_counts {
                o.compensation_cents
            } else {
                Cents::ZERO
            },
            due_cents: (st.payable && !o.amount_due_cents.is_zero()).then_some(o.amount_due_cents),
            // A refunded order's payments were returned: none is shown.
            paid: if paid_deposit && o.status != OrderStatus::Refunded {
                vec![("sc-paid-deposit", o.deposit_cents)]
            } else {
                Vec::new()
            },
        },
    }
}

/// The customer's orders, each with its money lines (what comes off,
/// what is due while it can be paid, what was paid), its final-payment
/// window and its notes (`standings`: each order's, in the same order).
#[component]
fn OrderList(
    orders: Vec<OrderView>,
    standings: Vec<OrderStanding>,
    quotes: Quotes,
    codes: HashMap<String, String>,
) -> impl IntoView {
    let l = lang();
    if orders.is_empty() {
        return view! { <p class="sc-empty">{l.t("you-have-no-orders")}</p> }.into_any();
    }
    let items = orders
        .iter()
        .zip(standings)
        .map(|(o, st)| {
            let kind = if o.kind == OrderKind::Presale {
                l.t("presale-order")
            } else {
                l.t("order-3")
            };
            let due_label = match o.status {
                OrderStatus::PendingDeposit => l.t("deposit-to-pay"),
                OrderStatus::DepositPaid => l.t("final-payment-to-pay"),
                _ => l.t("to-pay"),
            };
            // A coupon "to come off" and an amount "to pay" only while the
            // order can be paid, as its next payment will really be; the
            // discount and what was paid at each stage on a paid order.
            let m = card_money(o, &st, quotes.get(&o.order_no));
            let discount = (!m.discount_cents.is_zero()).then(|| {
                view! { <dt>{l.t("coupon-discount-2")}</dt><dd class="money" data-testid="sc-discount">{m.discount_cents.shown_as_deduction()}</dd> }
            });
            // Several coupons (叠加): each by code with what it gives.
            let each = (o.coupons.len() > 1 && !m.discount_cents.is_zero()).then(|| {
                let items = o
                    .coupons
                    .iter()
                    .map(|c| {
                        let code = codes
                            .get(c.coupon_id.as_str())
                            .cloned()
                            .unwrap_or_else(|| l.t("coupon").to_string());
                        view! { <li data-testid="sc-order-coupon"><span class="mono">{code}</span>" "<span class="money">{c.discount_cents.shown_as_deduction()}</span></li> }
                    })
                    .collect_view();
                view! { <dt>{l.t("order-coupons")}</dt><dd><ul class="plain">{items}</ul></dd> }
            });
            let compensation = (!m.deduction_cents.is_zero()).then(|| {
                view! { <dt>{l.t("compensation-2")}</dt><dd class="money">{m.deduction_cents.shown_as_deduction()}</dd> }
            });
            let deposit = (o.kind == OrderKind::Presale && o.deposit_paid_at.is_none()).then(|| {
                view! { <dt>{l.t("deposit")}</dt><dd class="money">{o.deposit_cents.shown()}</dd> }
            });
            let paid = m
                .paid
                .iter()
                .map(|(key, cents)| {
                    view! { <dt>{l.t(key)}</dt><dd class="money" data-testid="sc-paid">{cents.shown()}</dd> }
                })
                .collect_view();
            let due = m.due_cents.filter(|c| !c.is_zero()).map(|cents| {
                view! { <dt>{due_label}</dt><dd class="money sc-due" data-testid="sc-due">{cents.shown()}</dd> }
            });
            let closed = (o.status == OrderStatus::Closed)
                .then(|| o.closed_at.as_deref().map(time_of))
                .flatten()
                .map(|at| view! { <dt>{l.t("sc-closed-on")}</dt><dd>{at}</dd> });
            let refunded = (o.status == OrderStatus::Refunded)
                .then(|| o.refunded_at.as_deref().map(time_of))
                .flatten()
                .map(|at| view! { <dt>{l.t("sc-refunded-on")}</dt><dd>{at}</dd> });
            let window = st.window.map(|(starts, ends)| {
                let text = crate::tr!(
                    l,
                    "sc-final-payment-window",
                    starts = time_marker(0),
                    ends = time_marker(1)
                );
                let sentence = sentence_with_times(&text, &[starts, ends]);
                view! { <p class="sc-sentence sc-window" data-testid="sc-window">{sentence}</p> }
            });
            let notes = st
                .notes
                .iter()
                .map(|m| {
                    let text = l.msg(m);
                    view! { <p class="sc-sentence sc-order-note" data-testid="sc-order-note">{text}</p> }
                })
                .collect_view();
            let payable = if st.payable { "yes" } else { "no" };
            let no = o.order_no.clone();
            let data_no = o.order_no.clone();
            view! {
                <li class="sc-item" data-testid="sc-order" data-order-no=data_no data-payable=payable>
                    <p class="sc-item-head"><span class="sc-kind">{kind}</span>" "<span class="mono">{no}</span><OrderBadge status=o.status/></p>
                    <dl class="sc-money">
                        <dt>{l.t("order-total")}</dt><dd class="money">{o.total_cents.shown()}</dd>
                        {deposit}{discount}{each}{compensation}{paid}{closed}{refunded}{due}
                    </dl>
                    {window}
                    {notes}
                </li>
            }
        })
        .collect_view();
    view! { <ul class="sc-list">{items}</ul> }.into_any()
}

fn next_step_text(l: Lang, next: NextStep, hint: &Option<String>) -> String {
    match next {
        NextStep::Nothing => l.t("nothing-to-do").to_string(),
        NextStep::TakeNote => l.t("please-note-the-above-contact-support").to_string(),
        NextStep::ContactSupport => {
            let base = l.t("this-is-not-something-you-did");
            match hint {
                Some(h) => format!("{base} {h}"),
                None => base.to_string(),
            }
        }
    }
}

/// One finding in customer words, with what to do next (`hint`: how to
/// reach support, when set).
#[component]
fn Finding(finding: CustomerFinding, hint: Option<String>) -> impl IntoView {
    let (l, f) = (lang(), finding);
    let message = crate::domain::health::about_coupon(l, f.coupon.as_deref(), &f.message);
    let next = next_step_text(l, f.next, &hint);
    let class = format!("sc-finding result-{}", f.result.as_str());
    let result = f.result;
    view! {
        <li class=class data-testid="sc-finding" data-result=result.as_str()>
            <p><ResultBadge result=result/>" "<span class="sc-message">{message}</span></p>
            <p class="sc-next"><strong>{l.t("what-to-do")}</strong>{next}</p>
        </li>
    }
}

/// The one-click check's results: the overall result, the coupons held
/// by an order that no longer uses them, then each order's findings.
#[component]
fn CheckResults(
    check: CustomerCheck,
    hint: Option<String>,
    token: String,
    support: SupportForms,
) -> impl IntoView {
    let (l, c) = (lang(), check);
    let summary = match c.overall {
        CheckResult::Ok => l.t("check-done-your-coupons-and-orders"),
        CheckResult::Warning => l.t("check-done-there-is-something-to"),
        CheckResult::Problem => l.t("check-done-we-found-a-problem"),
    };
    let coupon_findings = (!c.coupons.is_empty()).then(|| {
        let items = c
            .coupons
            .iter()
            .map(|f| view! { <Finding finding=f.clone() hint=hint.clone()/> })
            .collect_view();
        view! {
            <h3 class="sc-group">{l.t("coupons-3")}</h3>
            <ul class="sc-findings">{items}</ul>
        }
    });
    let orders = c
        .orders
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let title = crate::tr!(l, "order-8", order_no = &o.order_no);
            let ask = view! {
                <SupportBox index=i order_no=o.order_no.clone() token=token.clone()
                    sent=support.requests.get(&o.order_no).copied()
                    refused=support.refused.clone().filter(|r| r.order_no == o.order_no)/>
            };
            let body = if o.overall == CheckResult::Ok {
                view! {
                    <p class="sc-ok-line"><ResultBadge result=CheckResult::Ok/>" "{l.t("no-problem-found-nothing-to-do")}</p>
                }
                .into_any()
            } else {
                let items = o
                    .findings
                    .iter()
                    .filter(|f| f.result != CheckResult::Ok)
                    .map(|f| view! { <Finding finding=f.clone() hint=hint.clone()/> })
                    .collect_view();
                view! { <ul class="sc-findings">{items}</ul> }.into_any()
            };
            let overall = o.overall.as_str();
            view! {
                <div class="sc-order-check" data-testid="sc-order-check" data-result=overall>
                    <h3 class="sc-group">{title}</h3>
                    {body}
                    {ask}
                </div>
            }
        })
        .collect_view();
    let overall = c.overall;
    view! {
        <p class="sc-overall" data-testid="sc-overall" data-result=overall.as_str()>
            <ResultBadge result=overall/>" "{summary}
        </p>
        {coupon_findings}
        {orders}
    }
}

/// Under one order's findings: "contact support" with an optional note
/// (`index`: the order's place in the check, for the field's id), or,
/// within the hour after a request (`sent`), when it was sent and when
/// another may be. `refused`: this order's form came back with its note
/// and the message at the field.
#[component]
fn SupportBox(
    index: usize,
    order_no: OrderNo,
    token: String,
    sent: Option<DateTime<Utc>>,
    refused: Option<RefusedSupport>,
) -> impl IntoView {
    let l = lang();
    if let Some(at) = sent {
        let next = at + chrono::Duration::seconds(REQUEST_GAP_SECONDS);
        let text = crate::tr!(
            l,
            "sc-support-sent",
            at = time_marker(0),
            next = time_marker(1)
        );
        return view! {
            <p class="sc-support-sent" role="status" data-testid="sc-support-sent">
                {sentence_with_times(&text, &[at, next])}
            </p>
        }
        .into_any();
    }
    let id = format!("sc-note-{index}");
    let error_id = format!("sc-note-{index}-error");
    let (note, error) = match refused {
        Some(r) => (r.note, Some(l.t(r.message_key))),
        None => (String::new(), None),
    };
    let invalid = error.is_some().then_some("true");
    let described = error.is_some().then(|| error_id.clone());
    let error = error.map(|m| {
        view! { <p class="field-error" id=error_id role="alert" data-field-error="note">{m}</p> }
    });
    view! {
        <form method="post" action="/self-check/support" class="sc-support" data-testid="sc-support-form">
            <input type="hidden" name="t" value=token/>
            <input type="hidden" name="order_no" value=order_no.as_str().to_string()/>
            <p class="sc-support-lead">{l.t("sc-support-lead")}</p>
            <label for=id.clone()>{l.t("sc-support-note-label")}</label>
            <textarea id=id name="note" rows="3" maxlength=MAX_NOTE_CHARS.to_string()
                aria-invalid=invalid aria-describedby=described data-testid="sc-support-note">{note}</textarea>
            {error}
            <button type="submit" class="button sc-button" data-testid="sc-contact-support">{l.t("sc-contact-support")}</button>
        </form>
    }
    .into_any()
}

/// The customer's in-app messages, newest first, and "mark all as read"
/// (the form carries the page's `token`) when some are unread.
#[component]
fn MessageList(token: String, messages: Vec<CustomerMessage>) -> impl IntoView {
    let l = lang();
    if messages.is_empty() {
        return view! { <p class="sc-empty">{l.t("you-have-no-messages")}</p> }.into_any();
    }
    let any_unread = messages.iter().any(|m| m.unread);
    let items = messages
        .into_iter()
        .map(|m| {
            let at = time_el(m.created_at);
            let body = l.msg(&m.text);
            let (class, state) = if m.unread {
                ("sc-item sc-msg sc-unread", "unread")
            } else {
                ("sc-item sc-msg", "read")
            };
            let badge = m.unread.then(|| {
                view! { <span class="badge sc-unread-badge" data-testid="sc-unread">{l.t("unread")}</span> }
            });
            view! {
                <li class=class data-testid="sc-message" data-state=state>
                    <p class="sc-item-head"><span class="sc-kind">{at}</span>{badge}</p>
                    <p class="sc-sentence">{body}</p>
                </li>
            }
        })
        .collect_view();
    let mark = any_unread.then(|| {
        view! {
            <form method="post" action="/self-check/messages/read" class="sc-mark-read">
                <input type="hidden" name="t" value=token/>
                <button type="submit" class="button sc-button" data-testid="sc-mark-read">{l.t("mark-all-as-read")}</button>
            </form>
        }
    });
    view! { <ul class="sc-list">{items}</ul>{mark} }.into_any()
}

/// The page as HTML, its components reading the language from context.
fn render(p: PageData) -> String {
    let l = p.lang;
    let body = render_in(l, None, move || view! { <SelfCheckPage page=p/> });
    document(l, l.t("coupon-self-check"), &body)
}

/// The page: the header with the language switch, whom the link is for
/// and until when, the one-click check (its results once run), the
/// messages, the coupons and the orders.
#[component]
fn SelfCheckPage(page: PageData) -> impl IntoView {
    let (l, p) = (lang(), page);
    let here = page_href(&p.token, p.checked);
    let n_unread = p.messages.iter().filter(|m| m.unread).count();
    let expires = sentence_with_times(
        &crate::tr!(l, "this-link-is-for-you-only", expires = time_marker(0)),
        &[p.expires_at],
    );
    let n_coupons = p.overview.coupons.len();
    let n_orders = p.overview.orders.len();
    let standings: Vec<OrderStanding> = p
        .overview
        .orders
        .iter()
        .map(|o| {
            let campaign = o.campaign_id.as_ref().and_then(|id| p.campaigns.get(id));
            order_standing(o, &p.overview.coupons, campaign, p.now)
        })
        .collect();
    let payable: Payable = p
        .overview
        .orders
        .iter()
        .zip(&standings)
        .map(|(o, st)| (o.order_no.clone(), st.payable))
        .collect();
    let check = match p.check {
        Some(c) => view! {
            <CheckResults check=c hint=p.support_hint token=p.token.clone() support=p.support/>
        }
        .into_any(),
        None => view! {
            <p>{l.t("checks-that-your-orders-and-coupons")}</p>
            <form method="post" action="/self-check/check">
                <input type="hidden" name="t" value=p.token.clone()/>
                <button type="submit" class="button primary sc-button" data-testid="sc-run-check">{l.t("check-my-orders")}</button>
            </form>
        }
        .into_any(),
    };
    let coupon_orders = p.overview.orders.clone();
    // The customer's own coupons by code (an order names them by id).
    let codes: HashMap<String, String> = p
        .overview
        .coupons
        .iter()
        .map(|c| (c.id.to_string(), c.code.clone()))
        .collect();
    view! {
        <header class="sc-header">
            <p class="sc-brand">{l.t("coupon-self-check")}</p>
            <form method="post" action="/lang" class="inline">
                <input type="hidden" name="lang" value=l.other().code()/>
                <input type="hidden" name="next" value=here/>
                <button type="submit" class="link sc-lang" lang=l.other().html_lang()>{l.switch_label()}</button>
            </form>
        </header>
        <main class="sc-main" id="main">
            <p class="sc-note">{expires}</p>
            <PendingPopups token=p.token.clone() popups=p.popups/>
            <section class="sc-card" id="check" aria-labelledby="sc-check-heading">
                <h2 id="sc-check-heading">{l.t("one-click-check")}</h2>
                {check}
            </section>
            <section class="sc-card" id="messages" aria-labelledby="sc-messages-heading">
                <h2 id="sc-messages-heading">{if n_unread > 0 { crate::tr!(l, "messages-unread", n = n_unread) } else { l.t("messages").to_string() }}</h2>
                <MessageList token=p.token messages=p.messages/>
            </section>
            <section class="sc-card" aria-labelledby="sc-coupons-heading">
                <h2 id="sc-coupons-heading">{crate::tr!(l, "my-coupons", n_coupons = n_coupons)}</h2>
                <CouponList coupons=p.overview.coupons orders=coupon_orders payable=payable
                    origins=p.origins now=p.now/>
            </section>
            <section class="sc-card" aria-labelledby="sc-orders-heading">
                <h2 id="sc-orders-heading">{crate::tr!(l, "my-orders", n_orders = n_orders)}</h2>
                <OrderList orders=p.overview.orders standings=standings quotes=p.quotes codes=codes/>
            </section>
        </main>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_gives_the_token_and_the_check_flag() {
        let q = parse_query(Some("t=v1.abc.1.ff&check=1"));
        assert_eq!(q.token.as_deref(), Some("v1.abc.1.ff"));
        assert!(q.check);
        let q = parse_query(Some("check=0&t=a&t=b"));
        assert_eq!(q.token.as_deref(), Some("a"));
        assert!(!q.check);
        assert!(parse_query(None).token.is_none());
    }

    #[test]
    fn the_refusal_is_bilingual_private_and_shows_nothing() {
        let r = refusal(Lang::En);
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            r.headers().get(header::CACHE_CONTROL).map(|v| v.as_bytes()),
            Some(&b"no-store"[..])
        );
        assert_eq!(
            r.headers()
                .get(header::REFERRER_POLICY)
                .map(|v| v.as_bytes()),
            Some(&b"no-referrer"[..])
        );
    }
}
