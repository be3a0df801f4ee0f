//! What pages share that is not a component: the flash message carried
//! across a redirect, a refused form's field errors, the bare error page
//! (shown before any language or session is known), the words for
//! statuses, roles, actions and actors that pages and flash messages both
//! use, times as text, and CSV downloads. The pieces pages are built from
//! are in [`super::components`].

use leptos::prelude::*;

use super::i18n::Lang;
use super::{document_in, escape_html};
use crate::domain::campaign::Policy;
use crate::domain::coupon::CouponStatus;
use crate::domain::discount::{DiscountRule, offer_msg};
use crate::domain::event::{Actor, EventAction, system_reason_key};
use crate::domain::ids::{CouponId, OrderNo};
use crate::domain::money::Cents;
use crate::domain::order::{CouponLockStatus, OrderStatus};
use crate::i18n::Msg;
use crate::service::views::CouponView;

/// Whether a flash message reports success or a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlashKind {
    Ok,
    Error,
}

/// A one-shot message carried across a redirect in a cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub kind: FlashKind,
    pub text: String,
}

impl Flash {
    pub fn new(kind: FlashKind, text: String) -> Self {
        Flash { kind, text }
    }

    /// Cookie-safe form: `ok:` or `error:` then the percent-encoded text,
    /// at most 500 characters of it.
    pub fn encode(&self) -> String {
        let tag = match self.kind {
            FlashKind::Ok => "ok",
            FlashKind::Error => "error",
        };
        let text: String = self.text.chars().take(500).collect();
        format!(
            "{tag}:{}",
            form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>()
        )
    }

    pub fn decode(raw: &str) -> Option<Flash> {
        let (tag, text) = raw.split_once(':')?;
        let kind = match tag {
            "ok" => FlashKind::Ok,
            "error" => FlashKind::Error,
            _ => return None,
        };
        let text: String = form_urlencoded::parse(format!("x={text}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())?;
        (!text.is_empty()).then_some(Flash { kind, text })
    }
}

/// The messages at the fields of a refused form, in the page's language:
/// the form comes back with what was typed and each message beside its
/// field (not as a flash at the top of the page).
#[derive(Debug, Clone, Default)]
pub struct FieldErrors(Vec<(&'static str, String)>);

impl FieldErrors {
    /// Sets the message of `field` (a later one replaces an earlier one).
    pub fn add(&mut self, field: &'static str, text: String) {
        self.0.retain(|(f, _)| *f != field);
        self.0.push((field, text));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, t)| t.as_str())
    }

    /// What the input `input_id` of `field` needs: `aria-invalid` and
    /// `aria-describedby` pointing at its message, when it has one.
    pub fn input_attrs(&self, field: &str, input_id: &str) -> FieldState {
        let message = self.get(field).map(str::to_string);
        let error_id = format!("{input_id}-error");
        FieldState {
            invalid: message.as_ref().map(|_| "true"),
            described_by: message.as_ref().map(|_| error_id.clone()),
            error_id,
            field: field.to_string(),
            message,
        }
    }
}

/// One field of a form as rendered: see [`FieldErrors::input_attrs`].
#[derive(Debug, Clone)]
pub struct FieldState {
    pub invalid: Option<&'static str>,
    pub described_by: Option<String>,
    error_id: String,
    field: String,
    message: Option<String>,
}

/// The message beside a field, if it has one.
pub fn field_error(f: &FieldState) -> impl IntoView + use<> {
    let (id, field) = (f.error_id.clone(), f.field.clone());
    f.message.clone().map(|m| {
        view! { <p class="field-error" id=id role="alert" data-field-error=field>{m}</p> }
    })
}

/// A page for an error status, in both languages (it may be shown before
/// the language is known).
/// The catalog key of an error status's title.
pub fn error_title_key(status: u16) -> &'static str {
    match status {
        400 => "error-page-400",
        403 => "error-page-403",
        404 => "error-page-404",
        409 => "error-page-409",
        422 => "error-page-422",
        503 => "error-page-503",
        _ => "error-page-other",
    }
}

pub fn error_page(status: u16, message: &str) -> String {
    let key = error_title_key(status);
    let (zh, en) = (Lang::Zh.t(key), Lang::En.t(key));
    let home = format!(
        "{} · {}",
        Lang::Zh.t("console-home"),
        Lang::En.t("console-home")
    );
    let body = format!(
        "<main id=\"main\" class=\"content narrow\"><section><h1>{status} {zh} · {en}</h1>\
         <p data-testid=\"error-message\">{}</p><p><a href=\"/console\">{home}</a></p>\
         </section></main>",
        escape_html(message)
    );
    document_in("zh-CN", &format!("{status} · couponkeeper"), &body)
}

/// A role's name.
pub fn role_label(l: Lang, role: &str) -> &'static str {
    match role {
        "support" => l.t("role-support"),
        "operator" => l.t("role-operator"),
        "admin" => l.t("role-admin"),
        _ => l.t("term-unknown"),
    }
}

/// A coupon status's name: Chinese names as the business uses them.
pub fn coupon_status_label(l: Lang, status: CouponStatus) -> &'static str {
    l.t(status.label_key())
}

/// An order status's name.
pub fn order_status_label(l: Lang, status: OrderStatus) -> &'static str {
    l.t(status.label_key())
}

/// A lock status of an order's coupon.
pub fn lock_status_label(l: Lang, s: CouponLockStatus) -> &'static str {
    match s {
        CouponLockStatus::None => l.t("lock-status-none"),
        CouponLockStatus::Locked => l.t("lock-status-locked"),
        CouponLockStatus::Used => l.t("lock-status-used"),
        CouponLockStatus::Released => l.t("lock-status-released"),
    }
}

/// A time for people: `<time datetime="2026-11-11T00:00:00Z">2026-11-11
/// 08:00:00 (UTC+8)</time>`, in the business time zone with its offset
/// and the exact UTC instant in the attribute. Text that is not a time is
/// shown as it is.
pub fn time_text(rfc3339: &str) -> impl IntoView + use<> {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => leptos::either::Either::Left(time_at(t.to_utc())),
        Err(_) => leptos::either::Either::Right(rfc3339.to_string()),
    }
}

/// [`time_text`] of an instant.
pub fn time_at(t: chrono::DateTime<chrono::Utc>) -> impl IntoView + use<> {
    let datetime = t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let shown = crate::i18n::zone::local_text(t);
    view! { <time datetime=datetime>{shown}</time> }
}

/// [`time_text`] as plain text, for titles, attributes and sentences.
pub fn time_string(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => crate::i18n::zone::local_text(t.to_utc()),
        Err(_) => rfc3339.to_string(),
    }
}

/// An optional time, or a dash.
pub fn opt_time(t: &Option<String>) -> impl IntoView + use<> {
    match t.as_deref() {
        Some(t) => leptos::either::Either::Left(time_text(t)),
        None => leptos::either::Either::Right("—"),
    }
}

/// Percent-encoding of a path segment or query value lives with the
/// addresses (`web::paths::enc`); pages import it from here too.
pub use super::paths::enc;

/// What a coupon takes off, the way customers say it: `满 ¥300.00 减
/// ¥50.00` / `¥50.00 off orders from ¥300.00`, and for a percentage
/// `满 ¥300.00 可用，9折，最高减 ¥30.00` / `orders from ¥300.00: 10% off, at
/// most ¥30.00` ([`offer_msg`], the one describer of a discount).
pub fn coupon_terms_text(l: Lang, c: &CouponView) -> String {
    let rule = DiscountRule::from_stored(
        c.kind,
        c.value_cents.map(Cents::get),
        c.percent_off,
        c.max_discount_cents.map(Cents::get),
    );
    l.msg(&offer_msg(&rule, c.min_order_cents))
}

/// Messages that make one sentence together (a template's rule in words:
/// offer, categories, validity), joined the language's way.
pub fn words_text(l: Lang, words: &[Msg]) -> String {
    words
        .iter()
        .map(|m| l.msg(m))
        .collect::<Vec<_>>()
        .join(l.t("rule-separator"))
}

/// An event's action in words; a word this version does not write is
/// shown as stored.
pub fn action_text(l: Lang, action: &str) -> String {
    match EventAction::parse(action) {
        Some(a) => l.t(a.label_key()).to_string(),
        None => action.to_string(),
    }
}

/// Who did it, in words: a console user by name, the shop's API, a job by
/// what it does, the demo loader.
pub fn actor_text(l: Lang, actor: &str) -> String {
    match Actor::parse(actor) {
        Actor::Staff(name) => crate::tr!(l, "actor-staff", name = name),
        Actor::Api(token) => crate::tr!(l, "actor-api", token = token),
        Actor::Job(job) => l.t(job.label_key()).to_string(),
        Actor::Demo => l.t("actor-demo").to_string(),
        Actor::Cli => l.t("actor-cli").to_string(),
        Actor::Customer => l.t("actor-customer").to_string(),
        Actor::Other(raw) => raw.to_string(),
    }
}

/// A stored status word of an event's subject (`coupon` or `order`) in
/// words; an unknown word as stored.
pub fn status_word_text(l: Lang, subject: &str, word: &str) -> String {
    let key = match subject {
        "coupon" => CouponStatus::parse(word).map(CouponStatus::label_key),
        _ => OrderStatus::parse(word).map(OrderStatus::label_key),
    };
    key.map_or_else(|| word.to_string(), |k| l.t(k).to_string())
}

/// `before → after` of an event in words (`∅` when it had no before).
pub fn change_text(l: Lang, subject: &str, from: Option<&str>, to: &str) -> String {
    let from = from.map_or_else(|| "∅".to_string(), |f| status_word_text(l, subject, f));
    format!("{from} → {}", status_word_text(l, subject, to))
}

/// An event's reason: what a person typed, as typed; the English texts
/// jobs wrote before in the page's language.
pub fn reason_text(l: Lang, reason: &str) -> String {
    match system_reason_key(reason) {
        Some(key) => l.t(key).to_string(),
        None => reason.to_string(),
    }
}

/// A campaign policy's name.
pub fn policy_label(l: Lang, policy: Policy) -> &'static str {
    match policy {
        Policy::Lock => l.t("lock-the-deposit-lock-holds"),
        Policy::Strict => l.t("strict-an-expired-coupon-gives-no"),
        Policy::SwapOrCompensate => l.t("swap-or-compensate"),
    }
}

/// What an event row is about, for a link: a coupon (named by its code)
/// or an order. `None` when it names neither.
pub enum EventTarget {
    Coupon { href: String, code: String },
    Order { href: String, order_no: OrderNo },
}

impl EventTarget {
    pub fn of(
        l: Lang,
        subject: &str,
        coupon_id: Option<&CouponId>,
        coupon_code: Option<&str>,
        order_no: Option<&OrderNo>,
    ) -> Option<EventTarget> {
        match (subject, coupon_id, order_no) {
            ("coupon", Some(id), _) => Some(EventTarget::Coupon {
                href: super::paths::coupon(id),
                code: coupon_code.map_or_else(|| l.t("coupon").to_string(), str::to_string),
            }),
            (_, _, Some(no)) => Some(EventTarget::Order {
                href: super::paths::order(no),
                order_no: no.clone(),
            }),
            _ => None,
        }
    }
}

/// A CSV export as a download named `filename` (UTF-8, RFC 4180 body
/// built by the service).
/// A CSV file to download, starting with a UTF-8 byte order mark: without
/// it Excel reads the file as the machine's legacy code page and Chinese
/// text turns to noise (every console export holds names and words).
pub fn csv_download(filename: &str, csv: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    let csv = format!("\u{feff}{csv}");
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/csv; charset=utf-8".to_string(),
            ),
            (
                axum::http::header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{filename}\""),
            ),
        ],
        csv,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::discount::DiscountKind;

    #[test]
    fn flash_messages_survive_the_cookie_round_trip() {
        let f = Flash::new(FlashKind::Ok, "已释放 · released; 50% = ¥5".into());
        assert_eq!(Flash::decode(&f.encode()), Some(f));
        assert_eq!(Flash::decode("bogus"), None);
        assert_eq!(Flash::decode("ok:"), None);
        let long = Flash::new(FlashKind::Error, "x".repeat(900));
        assert_eq!(
            Flash::decode(&long.encode()).map(|f| f.text.len()),
            Some(500)
        );
    }

    fn coupon(
        kind: DiscountKind,
        percent_off: Option<i64>,
        cap: Option<i64>,
        min: i64,
    ) -> CouponView {
        CouponView {
            id: "cpn_1".into(),
            code: "K7QM-3XPA-9RTD".into(),
            user_id: crate::domain::ids::UserId::parse("u1").expect("user id"),
            template_id: None,
            kind,
            value_cents: (kind == DiscountKind::Fixed).then_some(Cents::from_stored(5000)),
            percent_off,
            max_discount_cents: cap.map(Cents::from_stored),
            min_order_cents: Cents::from_stored(min),
            categories: vec![],
            skus: vec![],
            exclude_skus: vec![],
            shop_id: None,
            partial_refund_rule: Default::default(),
            stackable: true,
            status: CouponStatus::Available,
            starts_at: "2026-11-11T00:00:00.000Z".into(),
            ends_at: "2026-11-21T00:00:00.000Z".into(),
            order_no: None,
            locked_at: None,
            used_at: None,
            created_at: "2026-11-11T00:00:00.000Z".into(),
            source: crate::domain::coupon::CouponSource::Claim,
            events: None,
        }
    }

    #[test]
    fn percent_coupons_read_as_zhe_in_chinese_and_percent_off_in_english() {
        let p = DiscountKind::Percent;
        let capped = coupon(p, Some(10), Some(3000), 30000);
        assert_eq!(
            coupon_terms_text(Lang::Zh, &capped),
            "满 ¥300.00 可用，9折，最高减 ¥30.00"
        );
        assert_eq!(
            coupon_terms_text(Lang::En, &capped),
            "orders from ¥300.00: 10% off, at most ¥30.00"
        );
        let plain = coupon(p, Some(15), None, 0);
        assert_eq!(coupon_terms_text(Lang::Zh, &plain), "8.5折");
        assert_eq!(coupon_terms_text(Lang::En, &plain), "15% off");
        let free = coupon(p, Some(100), Some(3000), 0);
        assert_eq!(coupon_terms_text(Lang::Zh, &free), "免单，最高减 ¥30.00");
        assert_eq!(
            coupon_terms_text(Lang::En, &free),
            "100% off, at most ¥30.00"
        );
        let fixed = coupon(DiscountKind::Fixed, None, None, 30000);
        assert_eq!(coupon_terms_text(Lang::Zh, &fixed), "满 ¥300.00 减 ¥50.00");
        assert_eq!(
            coupon_terms_text(Lang::En, &fixed),
            "¥50.00 off orders from ¥300.00"
        );
    }

    #[test]
    fn times_read_in_the_business_zone_with_the_utc_instant_in_the_markup() {
        assert_eq!(
            time_string("2026-11-11T08:00:00.000Z"),
            "2026-11-11 16:00:00 (UTC+8)"
        );
        assert_eq!(time_string("junk"), "junk");
        let html = time_text("2026-11-11T08:00:00.000Z").to_html();
        assert_eq!(
            html,
            "<time datetime=\"2026-11-11T08:00:00Z\">2026-11-11 16:00:00 (UTC+8)</time>"
        );
    }
}
