//! The message catalog: every word a person reads, in Chinese and English.
//!
//! Texts live in Fluent files, one folder per language
//! (`src/i18n/zh/*.ftl`, `src/i18n/en/*.ftl`), compiled into the binary with
//! `include_str!`. Code names a message by its key and never holds the
//! words itself:
//!
//! - [`Lang::t`] for a message without arguments (`l.t("search")`), a
//!   `&'static str` rendered once at start-up;
//! - [`tr!`](crate::tr) / [`Lang::tr`] for a message with arguments
//!   (`tr!(l, "coupons-on-page", count = 3)`);
//! - [`Msg`] for a message decided in one place and rendered in another:
//!   the domain's health-check verdicts, reconciliation findings and
//!   reminder texts are a key and its arguments, stored as such and
//!   rendered in the reader's language when read, so a third language
//!   is a third folder of files, not a migration.
//!
//! Domain terms (coupon and order statuses, kinds, policies, actions,
//! refusals) are keyed by the domain's enums in `terms.ftl`; one word per
//! thing is a test (`tests/catalog.rs`), as is every key having both
//! languages with the same arguments, and no Chinese outside this folder.
//!
//! A key missing from the catalog renders as the key itself (and is a test
//! failure), never as a panic.

use std::collections::HashMap;
use std::sync::OnceLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use serde::Serialize;

mod lang;
pub mod names;
pub mod zone;

pub use lang::Lang;

impl Lang {
    /// The text of a message without arguments.
    pub fn t(self, key: &str) -> &'static str {
        let c = catalog();
        match c.plain[self.index()].get(key) {
            Some(text) => text.as_str(),
            None => c.key_echo(key),
        }
    }

    /// The text of a message with arguments (see also [`tr!`](crate::tr)).
    pub fn tr(self, key: &str, args: &[(&str, Arg)]) -> String {
        catalog().format(self, key, args)
    }

    /// Renders a message decided elsewhere.
    pub fn msg(self, m: &Msg) -> String {
        let args: Vec<(&str, Arg)> = m
            .args
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        catalog().format(self, &m.key, &args)
    }

    /// `zh` or `en`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::En => "en",
        }
    }

    /// The `lang` attribute of a page.
    pub fn html_lang(self) -> &'static str {
        match self {
            Lang::Zh => "zh-CN",
            Lang::En => "en",
        }
    }

    /// `zh` or `en` back into a language.
    pub fn parse(raw: &str) -> Option<Lang> {
        match raw {
            "zh" => Some(Lang::Zh),
            "en" => Some(Lang::En),
            _ => None,
        }
    }

    /// The other language, for the switch.
    pub fn other(self) -> Lang {
        match self {
            Lang::Zh => Lang::En,
            Lang::En => Lang::Zh,
        }
    }

    /// The switch's label, in the language it switches to.
    pub fn switch_label(self) -> &'static str {
        self.other().t("language-name")
    }

    /// Money for people: `¥50.00`.
    pub fn money(self, cents: i64) -> String {
        crate::domain::money::Cents::from_stored(cents).shown()
    }

    /// The language of an `Accept-Language` value: `zh*` is Chinese,
    /// anything else English (the API's rule; pages use
    /// [`from_accept_language`], which prefers Chinese).
    pub fn for_api(accept_language: Option<&str>) -> Lang {
        match accept_language {
            Some(raw) if from_accept_language_or(raw, Lang::En) == Lang::Zh => Lang::Zh,
            _ => Lang::En,
        }
    }
}

/// The highest-weighted of Chinese and English in an `Accept-Language`
/// value; Chinese when neither is named (the console's default).
pub fn from_accept_language(raw: &str) -> Lang {
    from_accept_language_or(raw, Lang::Zh)
}

fn from_accept_language_or(raw: &str, default: Lang) -> Lang {
    let mut best: Option<(f32, Lang)> = None;
    for part in raw.split(',').take(32) {
        let mut pieces = part.split(';');
        let tag = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = pieces
            .find_map(|p| p.trim().strip_prefix("q="))
            .and_then(|q| q.parse::<f32>().ok())
            .unwrap_or(1.0);
        let lang = if tag == "zh" || tag.starts_with("zh-") {
            Lang::Zh
        } else if tag == "en" || tag.starts_with("en-") {
            Lang::En
        } else {
            continue;
        };
        if q > 0.0 && best.is_none_or(|(bq, _)| q > bq) {
            best = Some((q, lang));
        }
    }
    best.map(|(_, l)| l).unwrap_or(default)
}

/// One argument of a message: text, a number (numbers choose plural
/// forms), another catalog key (a term such as an order status, rendered in
/// the reader's language) or an instant (rendered in the business time
/// zone with its offset).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Arg {
    Int(i64),
    Text(String),
    Key(String),
    Time(chrono::DateTime<chrono::Utc>),
    /// Category codes, shown by their names ([`names`]), joined by `/`.
    Categories(Vec<String>),
}

impl Default for Arg {
    fn default() -> Self {
        Arg::Text(String::new())
    }
}

impl From<&Arg> for Arg {
    fn from(v: &Arg) -> Self {
        v.clone()
    }
}
impl From<&&String> for Arg {
    fn from(v: &&String) -> Self {
        Arg::Text((*v).clone())
    }
}
impl From<&&str> for Arg {
    fn from(v: &&str) -> Self {
        Arg::Text((*v).to_string())
    }
}

/// An id in a message reads as its text (an order number, a user id).
macro_rules! id_arg {
    ($($ty:ty),*) => {$(
        impl From<&$ty> for Arg {
            fn from(v: &$ty) -> Self {
                Arg::Text(v.as_str().to_string())
            }
        }

        impl From<&&$ty> for Arg {
            fn from(v: &&$ty) -> Self {
                Arg::Text(v.as_str().to_string())
            }
        }
    )*};
}

id_arg!(
    crate::domain::ids::OrderNo,
    crate::domain::ids::UserId,
    crate::domain::ids::CouponId,
    crate::domain::ids::TemplateId,
    crate::domain::ids::CampaignId
);

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}
impl From<i32> for Arg {
    fn from(v: i32) -> Self {
        Arg::Int(i64::from(v))
    }
}
impl From<u32> for Arg {
    fn from(v: u32) -> Self {
        Arg::Int(i64::from(v))
    }
}
impl From<usize> for Arg {
    fn from(v: usize) -> Self {
        Arg::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<u64> for Arg {
    fn from(v: u64) -> Self {
        Arg::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<&i64> for Arg {
    fn from(v: &i64) -> Self {
        Arg::Int(*v)
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(v)
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Self {
        Arg::Text(v.clone())
    }
}
impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(v.to_string())
    }
}

/// A message decided in one place and rendered in another: a catalog key
/// and its arguments. Stored as the key plus the arguments as a JSON
/// object ([`Msg::args_json`], [`Msg::from_stored`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Msg {
    pub key: String,
    pub args: Vec<(String, Arg)>,
}

impl Msg {
    /// A message without arguments.
    pub fn new(key: &str) -> Msg {
        Msg {
            key: key.to_string(),
            args: Vec::new(),
        }
    }

    /// Adds an argument.
    /// Adds an argument (arguments are kept sorted by name, so a message
    /// equals itself read back from storage).
    pub fn arg(mut self, name: &str, value: impl Into<Arg>) -> Msg {
        self.args.retain(|(k, _)| k != name);
        self.args.push((name.to_string(), value.into()));
        self.args.sort_by(|a, b| a.0.cmp(&b.0));
        self
    }

    /// The arguments as a JSON object, for storage.
    pub fn args_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> = self
            .args
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Arg::Int(n) => serde_json::Value::from(*n),
                    Arg::Text(t) => serde_json::Value::from(t.clone()),
                    Arg::Key(k) => serde_json::json!({ "key": k }),
                    Arg::Time(t) => serde_json::json!({
                        "time": t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                    }),
                    Arg::Categories(c) => serde_json::json!({ "categories": c }),
                };
                (k.clone(), v)
            })
            .collect();
        serde_json::Value::Object(map).to_string()
    }

    /// A stored key and JSON arguments back into a message; arguments that
    /// do not parse are dropped (Fluent then writes the argument's name in
    /// for them rather than failing the page).
    pub fn from_stored(key: &str, args_json: &str) -> Msg {
        let args = match serde_json::from_str::<serde_json::Value>(args_json) {
            Ok(serde_json::Value::Object(map)) => map
                .into_iter()
                .filter_map(|(k, v)| match v {
                    serde_json::Value::Number(n) => n.as_i64().map(|n| (k, Arg::Int(n))),
                    serde_json::Value::String(s) => Some((k, Arg::Text(s))),
                    serde_json::Value::Object(o) => {
                        if let Some(key) = o.get("key").and_then(|v| v.as_str()) {
                            Some((k, Arg::Key(key.to_string())))
                        } else if let Some(list) = o.get("categories").and_then(|v| v.as_array()) {
                            Some((
                                k,
                                Arg::Categories(
                                    list.iter()
                                        .filter_map(|c| c.as_str().map(str::to_string))
                                        .collect(),
                                ),
                            ))
                        } else {
                            o.get("time")
                                .and_then(|v| v.as_str())
                                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                                .map(|t| (k, Arg::Time(t.to_utc())))
                        }
                    }
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let mut m = Msg {
            key: key.to_string(),
            args,
        };
        m.args.sort_by(|a, b| a.0.cmp(&b.0));
        m
    }

    /// The same message with every argument passed through `f` (the
    /// self-check page shows coupon codes where staff read coupon ids).
    pub fn map_args(mut self, f: impl Fn(&Arg) -> Arg) -> Msg {
        for (_, v) in &mut self.args {
            *v = f(v);
        }
        self
    }

    /// The same message with one argument set (replaced when present).
    pub fn with(self, name: &str, value: impl Into<Arg>) -> Msg {
        self.arg(name, value)
    }

    /// The message in both languages, Chinese first (for the places that
    /// still carry both, such as webhook payloads built for a shop).
    pub fn both(&self) -> (String, String) {
        (Lang::Zh.msg(self), Lang::En.msg(self))
    }
}

/// `tr!(l, "key", name = value, ...)`: a message with arguments in
/// language `l`.
#[macro_export]
macro_rules! tr {
    ($lang:expr, $key:expr $(, $name:ident = $value:expr)* $(,)?) => {
        $lang.tr($key, &[$((stringify!($name), $crate::i18n::Arg::from($value))),*])
    };
}

/// `msg!("key", name = value, ...)`: a [`Msg`] to render later.
#[macro_export]
macro_rules! msg {
    ($key:expr $(, $name:ident = $value:expr)* $(,)?) => {
        $crate::i18n::Msg::new($key)$(.arg(stringify!($name), $value))*
    };
}

macro_rules! catalog_files {
    ($($name:literal),* $(,)?) => {
        [$((
            $name,
            include_str!(concat!("zh/", $name, ".ftl")),
            include_str!(concat!("en/", $name, ".ftl")),
        )),*]
    };
}
/// The catalog's files, per language, in load order.
pub const FILES: [(&str, &str, &str); FILE_COUNT] = catalog_files![
    "terms",
    "common",
    "console",
    "actions",
    "dashboard",
    "reconcile",
    "webhooks",
    "deliveries",
    "reminders",
    "audit",
    "staff",
    "self_check",
    "auth",
    "health",
    "messages",
    "errors",
    "reconcile_findings",
    "reminder_texts",
    "checkout",
    "events",
    "orders",
    "templates",
    "compensation",
    "campaigns",
    "wakeup",
    "bulk",
    "reports",
    "codes",
    "support_requests"
];

const FILE_COUNT: usize = 29;

struct Catalog {
    bundles: [FluentBundle<FluentResource>; 2],
    /// Every message rendered without arguments, for [`Lang::t`].
    plain: [HashMap<String, String>; 2],
    /// Keys that were asked for but are missing, echoed back as text.
    missing: std::sync::Mutex<HashMap<String, &'static str>>,
}

impl Catalog {
    fn format(&self, lang: Lang, key: &str, args: &[(&str, Arg)]) -> String {
        let bundle = &self.bundles[lang.index()];
        let Some(pattern) = bundle.get_message(key).and_then(|m| m.value()) else {
            return key.to_string();
        };
        let mut fargs = FluentArgs::with_capacity(args.len());
        for (name, value) in args {
            match value {
                Arg::Int(n) => fargs.set(*name, FluentValue::from(*n)),
                Arg::Text(t) => fargs.set(*name, FluentValue::from(t.clone())),
                Arg::Key(k) => fargs.set(*name, FluentValue::from(lang.t(k))),
                Arg::Time(t) => fargs.set(*name, FluentValue::from(zone::local_minutes(*t))),
                Arg::Categories(c) => {
                    fargs.set(*name, FluentValue::from(names::categories(lang, c, "/")))
                }
            }
        }
        let mut errors = Vec::new();
        bundle
            .format_pattern(pattern, Some(&fargs), &mut errors)
            .into_owned()
    }

    /// A missing key as a `'static` text: the key itself, leaked once per
    /// distinct key (bounded by the keys written in the code).
    fn key_echo(&self, key: &str) -> &'static str {
        let mut missing = match self.missing.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(text) = missing.get(key) {
            return text;
        }
        let text: &'static str = Box::leak(key.to_string().into_boxed_str());
        missing.insert(key.to_string(), text);
        text
    }
}

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(build)
}

fn build() -> Catalog {
    let zh = bundle(Lang::Zh);
    let en = bundle(Lang::En);
    let plain = [plain_texts(&zh, Lang::Zh), plain_texts(&en, Lang::En)];
    Catalog {
        bundles: [zh, en],
        plain,
        missing: std::sync::Mutex::new(HashMap::new()),
    }
}

fn bundle(lang: Lang) -> FluentBundle<FluentResource> {
    let id: unic_langid::LanguageIdentifier = match lang {
        Lang::Zh => "zh-CN",
        Lang::En => "en",
    }
    .parse()
    .unwrap_or_default();
    let mut bundle = FluentBundle::new_concurrent(vec![id]);
    // No Unicode isolation marks around arguments: the texts are
    // left-to-right and the marks would show in HTML attributes and CSV.
    bundle.set_use_isolating(false);
    for (name, zh, en) in FILES {
        let source = match lang {
            Lang::Zh => zh,
            Lang::En => en,
        };
        let resource = match FluentResource::try_new(source.to_string()) {
            Ok(r) => r,
            Err((partial, errors)) => {
                tracing::error!(
                    file = name,
                    lang = lang.code(),
                    ?errors,
                    "catalog file does not parse"
                );
                partial
            }
        };
        if let Err(errors) = bundle.add_resource(resource) {
            tracing::error!(
                file = name,
                lang = lang.code(),
                ?errors,
                "catalog key defined twice"
            );
        }
    }
    bundle
}

/// The keys of one language's files, in file order.
pub fn keys(lang: Lang) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for (name, zh, en) in FILES {
        let source = match lang {
            Lang::Zh => zh,
            Lang::En => en,
        };
        let resource = match FluentResource::try_new(source.to_string()) {
            Ok(r) => r,
            Err((partial, _)) => partial,
        };
        for entry in resource.entries() {
            if let fluent_syntax::ast::Entry::Message(m) = entry {
                out.push((m.id.name.to_string(), name));
            }
        }
    }
    out
}

fn plain_texts(bundle: &FluentBundle<FluentResource>, lang: Lang) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (key, _) in keys(lang) {
        if let Some(pattern) = bundle.get_message(&key).and_then(|m| m.value()) {
            let mut errors = Vec::new();
            let text = bundle
                .format_pattern(pattern, None, &mut errors)
                .into_owned();
            out.insert(key, text);
        }
    }
    out
}

/// Whether `key` is in the catalog (in both languages: see the tests).
pub fn has(key: &str) -> bool {
    catalog().bundles.iter().all(|b| b.has_message(key))
}

/// The parse errors of every catalog file, for the catalog test.
pub fn parse_errors() -> Vec<String> {
    let mut out = Vec::new();
    for (name, zh, en) in FILES {
        for (lang, source) in [("zh", zh), ("en", en)] {
            if let Err((_, errors)) = FluentResource::try_new(source.to_string()) {
                out.push(format!("{lang}/{name}.ftl: {errors:?}"));
            }
        }
    }
    out
}

/// The variables (`{ $name }`) a message uses, for the catalog test.
pub fn variables(lang: Lang, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (_, zh, en) in FILES {
        let source = match lang {
            Lang::Zh => zh,
            Lang::En => en,
        };
        let Ok(resource) = FluentResource::try_new(source.to_string()) else {
            continue;
        };
        for entry in resource.entries() {
            if let fluent_syntax::ast::Entry::Message(m) = entry
                && m.id.name == key
                && let Some(p) = &m.value
            {
                collect_vars(p, &mut out);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn collect_vars(p: &fluent_syntax::ast::Pattern<&str>, out: &mut Vec<String>) {
    use fluent_syntax::ast::{Expression, InlineExpression, PatternElement};
    for el in &p.elements {
        if let PatternElement::Placeable { expression } = el {
            let inline = match expression {
                Expression::Inline(i) => Some(i),
                Expression::Select { selector, variants } => {
                    for v in variants {
                        collect_vars(&v.value, out);
                    }
                    Some(selector)
                }
            };
            if let Some(InlineExpression::VariableReference { id }) = inline {
                out.push(id.name.to_string());
            }
        }
    }
}

/// The raw text of a message in one language, for the catalog test.
pub fn plain(lang: Lang, key: &str) -> Option<&'static str> {
    catalog().plain[lang.index()].get(key).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_language_picks_the_highest_weighted_known_language() {
        assert_eq!(from_accept_language("en-US,en;q=0.9"), Lang::En);
        assert_eq!(from_accept_language("zh-CN,zh;q=0.9,en;q=0.8"), Lang::Zh);
        assert_eq!(from_accept_language("fr, en;q=0.5, zh;q=0.7"), Lang::Zh);
        assert_eq!(from_accept_language("de"), Lang::Zh);
        assert_eq!(from_accept_language(""), Lang::Zh);
        assert_eq!(from_accept_language("en;q=abc"), Lang::En);
    }

    #[test]
    fn the_api_speaks_chinese_only_to_zh_and_english_otherwise() {
        assert_eq!(Lang::for_api(Some("zh-CN,zh;q=0.9")), Lang::Zh);
        assert_eq!(Lang::for_api(Some("zh-TW")), Lang::Zh);
        assert_eq!(Lang::for_api(Some("fr")), Lang::En);
        assert_eq!(Lang::for_api(Some("en, zh;q=0.5")), Lang::En);
        assert_eq!(Lang::for_api(None), Lang::En);
    }

    #[test]
    fn a_stored_message_renders_again_from_its_key_and_arguments() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-30T16:00:00Z")
            .map(|t| t.to_utc())
            .unwrap_or_default();
        let m = crate::msg!(
            "health-order-is",
            no = "P1",
            status = Arg::Key("order-status-paid".into())
        );
        let back = Msg::from_stored(&m.key, &m.args_json());
        assert_eq!(back, m);
        assert_eq!(Lang::Zh.msg(&back), "订单 P1 状态：已付款。");
        let timed = crate::msg!(
            "health-the-checkout-lock-of-order",
            no = "P1",
            at = Arg::Time(at)
        );
        assert_eq!(Msg::from_stored(&timed.key, &timed.args_json()), timed);
        let m = crate::msg!("messages-unread", n = 3);
        let back = Msg::from_stored(&m.key, &m.args_json());
        assert_eq!(back, m);
        assert!(Lang::En.msg(&back).contains('3'));
    }

    #[test]
    fn a_missing_key_renders_as_itself_rather_than_failing() {
        assert_eq!(Lang::Zh.t("no-such-key-anywhere"), "no-such-key-anywhere");
        assert_eq!(
            Lang::En.tr("no-such-key-anywhere", &[]),
            "no-such-key-anywhere"
        );
    }
}
