//! The frame every console page shares (header, search box, language
//! switch, sign-out, flash message), the sign-in and error pages, and the
//! small pieces pages repeat: status badges, money, times.

use leptos::prelude::*;

use super::auth::Staff;
use super::i18n::Lang;
use super::{document_in, escape_html};

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

/// Renders a console page for a signed-in staff member.
pub fn render(staff: &Staff, title: &str, body: impl IntoView + 'static) -> String {
    let l = staff.lang;
    let name = staff.session.name.to_string();
    let role = role_label(l, staff.session.role.as_str());
    let csrf = staff.session.csrf_token.clone();
    let here = staff.here.clone();
    let flash = staff.flash.clone();
    let title_owned = title.to_string();
    let html = Owner::new().with(move || {
        view! {
            <a class="skip" href="#main">{l.t("跳到正文", "Skip to content")}</a>
            <header class="console-header">
                <div class="brand">
                    <a href="/console">"couponkeeper"</a>
                    <span class="brand-sub">{l.t("客服控制台", "Support console")}</span>
                </div>
                <form class="search" method="get" action="/console/search" role="search">
                    <label for="search-q" class="visually-hidden">
                        {l.t("搜索券码、券 ID、订单号或用户 ID", "Search coupon code, coupon id, order number or user id")}
                    </label>
                    <input id="search-q" name="q" type="search" autocomplete="off"
                        placeholder=l.t("券码 / 券ID / 订单号 / 用户ID  （按 / 聚焦）", "code / coupon id / order no / user id  (press /)")/>
                    <button type="submit">{l.t("搜索", "Search")}</button>
                </form>
                <nav class="who" aria-label=l.t("账户", "Account")>
                    <span class="staff-name" data-testid="staff-name">{name}" · "{role}</span>
                    <a href="/console/password" data-testid="nav-password">{l.t("修改密码", "Change password")}</a>
                    <form method="post" action="/lang" class="inline">
                        <input type="hidden" name="lang" value=l.other().code()/>
                        <input type="hidden" name="next" value=here/>
                        <button type="submit" class="link" lang=l.other().html_lang()>{l.switch_label()}</button>
                    </form>
                    <form method="post" action="/logout" class="inline">
                        <input type="hidden" name="csrf" value=csrf/>
                        <button type="submit" class="link">{l.t("退出", "Sign out")}</button>
                    </form>
                </nav>
            </header>
            <nav class="console-nav" aria-label=l.t("主导航", "Main")>
                <a href="/console">{l.t("首页", "Home")}</a>
                <a href="/console/coupons">{l.t("券列表", "Coupons")}</a>
                <a href="/console/reconciliation">{l.t("对账", "Reconciliation")}</a>
                {(staff.session.role == crate::domain::staff::Role::Admin).then(|| view! { <a href="/console/staff">{l.t("员工管理", "Staff")}</a> })}
                <a href="/console/expirations" data-testid="nav-expirations">{l.t("到期看板", "Expirations")}</a>
                <a href="/console/deliveries" data-testid="nav-deliveries">{l.t("消息投递", "Deliveries")}</a>
                {staff.session.role.includes(crate::domain::staff::Role::Operator).then(|| view! { <a href="/console/webhooks" data-testid="nav-webhooks">{l.t("Webhook", "Webhooks")}</a> })}
                {staff.session.role.includes(crate::domain::staff::Role::Operator).then(|| view! { <a href="/console/reminders" data-testid="nav-reminders">{l.t("提醒计划", "Reminders")}</a> })}
                {staff.session.role.may_read_audit_log().then(|| view! { <a href="/console/audit" data-testid="nav-audit">{l.t("审计日志", "Audit log")}</a> })}
            </nav>
            {flash.map(|f| flash_view(&f))}
            <main id="main" class="content wide">
                <h1 class="page-title">{title_owned}</h1>
                {body}
            </main>
        }
        .to_html()
    });
    document_in(l.html_lang(), &format!("{title} · couponkeeper"), &html)
}

fn flash_view(f: &Flash) -> impl IntoView + use<> {
    let (class, role) = match f.kind {
        FlashKind::Ok => ("flash flash-ok", "status"),
        FlashKind::Error => ("flash flash-error", "alert"),
    };
    let text = f.text.clone();
    view! { <div class=class role=role data-testid="flash">{text}</div> }
}

/// The sign-in page.
pub fn login_page(l: Lang, flash: Option<&Flash>, csrf: &str, next: &str) -> String {
    let flash = flash.cloned();
    let csrf = csrf.to_string();
    let next = next.to_string();
    let login_next = format!(
        "/login?next={}",
        form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
    );
    let html = Owner::new().with(move || {
        view! {
            <header class="site-header">
                <p class="brand-line">"couponkeeper"</p>
                <p class="tagline">{l.t("客服控制台", "Support console")}</p>
            </header>
            {flash.map(|f| flash_view(&f))}
            <main id="main" class="content narrow">
                <section aria-labelledby="login-heading">
                    <h1 id="login-heading">{l.t("员工登录", "Staff sign-in")}</h1>
                    <form method="post" action="/login" class="stack">
                        <input type="hidden" name="csrf" value=csrf/>
                        <input type="hidden" name="next" value=next/>
                        <label for="login-name">{l.t("用户名", "Name")}</label>
                        <input id="login-name" name="name" type="text" autocomplete="username" required=true autofocus=true/>
                        <label for="login-password">{l.t("密码", "Password")}</label>
                        <input id="login-password" name="password" type="password" autocomplete="current-password" required=true/>
                        <button type="submit" class="primary">{l.t("登录", "Sign in")}</button>
                    </form>
                </section>
                <form method="post" action="/lang" class="inline">
                    <input type="hidden" name="lang" value=l.other().code()/>
                    <input type="hidden" name="next" value=login_next/>
                    <button type="submit" class="link" lang=l.other().html_lang()>{l.switch_label()}</button>
                </form>
            </main>
        }
        .to_html()
    });
    document_in(
        l.html_lang(),
        &format!("{} · couponkeeper", l.t("登录", "Sign in")),
        &html,
    )
}

/// A page for an error status, in both languages (it may be shown before
/// the language is known).
pub fn error_page(status: u16, message: &str) -> String {
    let (zh, en) = match status {
        400 => ("请求有误", "Bad request"),
        403 => ("没有权限", "Forbidden"),
        404 => ("找不到", "Not found"),
        409 => ("无法执行", "Refused"),
        503 => ("暂时不可用", "Unavailable"),
        _ => ("出错了", "Something went wrong"),
    };
    let body = format!(
        "<main id=\"main\" class=\"content narrow\"><section><h1>{status} {zh} · {en}</h1>\
         <p data-testid=\"error-message\">{}</p><p><a href=\"/console\">控制台首页 · Console home</a></p>\
         </section></main>",
        escape_html(message)
    );
    document_in("zh-CN", &format!("{status} · couponkeeper"), &body)
}

/// A role's name.
pub fn role_label(l: Lang, role: &str) -> &'static str {
    match role {
        "support" => l.t("客服", "support"),
        "operator" => l.t("运营", "operator"),
        "admin" => l.t("管理员", "admin"),
        _ => l.t("未知角色", "unknown role"),
    }
}

/// A coupon status's name: Chinese names as the business uses them.
pub fn coupon_status_label(l: Lang, status: &str) -> &'static str {
    match status {
        "available" => l.t("待使用", "available"),
        "locked" => l.t("锁定中", "locked"),
        "used" => l.t("已核销", "used"),
        "expired" => l.t("已过期", "expired"),
        "invalidated" => l.t("已失效", "invalidated"),
        _ => l.t("未知", "unknown"),
    }
}

/// A coupon status as a coloured badge; in English mode the Chinese name
/// stays beside it, since that is what customers say on the phone.
pub fn coupon_badge(l: Lang, status: &str) -> impl IntoView + use<> {
    let class = format!("badge status-{status}");
    let zh = coupon_status_label(Lang::Zh, status);
    let text = match l {
        Lang::Zh => zh.to_string(),
        Lang::En => format!("{} · {zh}", coupon_status_label(Lang::En, status)),
    };
    let status = status.to_string();
    view! { <span class=class data-status=status>{text}</span> }
}

/// An order status's name.
pub fn order_status_label(l: Lang, status: &str) -> &'static str {
    match status {
        "pending_payment" => l.t("待支付", "pending payment"),
        "paid" => l.t("已支付", "paid"),
        "pending_deposit" => l.t("待付定金", "pending deposit"),
        "deposit_paid" => l.t("定金已付", "deposit paid"),
        "final_paid" => l.t("尾款已付", "final payment paid"),
        "closed" => l.t("已关闭", "closed"),
        "refunded" => l.t("已退款", "refunded"),
        _ => l.t("未知", "unknown"),
    }
}

/// An order status as a badge.
pub fn order_badge(l: Lang, status: &str) -> impl IntoView + use<> {
    let class = format!("badge order-{status}");
    let text = order_status_label(l, status);
    let status = status.to_string();
    view! { <span class=class data-status=status>{text}</span> }
}

/// A health-check result (`ok`, `warning`, `problem`) as a badge.
pub fn result_badge(l: Lang, result: &str) -> impl IntoView + use<> {
    let (class, text) = match result {
        "ok" => ("badge badge-ok", l.t("正常", "ok")),
        "warning" => ("badge badge-warning", l.t("注意", "warning")),
        _ => ("badge badge-problem", l.t("异常", "problem")),
    };
    let result = result.to_string();
    view! { <span class=class data-result=result>{text}</span> }
}

/// A lock status of an order's coupon.
pub fn lock_status_label(l: Lang, s: &str) -> &'static str {
    match s {
        "none" => l.t("无", "none"),
        "locked" => l.t("已锁定", "locked"),
        "used" => l.t("已使用", "used"),
        "released" => l.t("已释放", "released"),
        _ => l.t("未知", "unknown"),
    }
}

/// An RFC 3339 UTC time shown as `2026-11-11 08:00:00 UTC`.
pub fn time_text(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%d %H:%M:%S UTC")
            .to_string(),
        Err(_) => rfc3339.to_string(),
    }
}

/// An optional time, or a dash.
pub fn opt_time(t: &Option<String>) -> String {
    t.as_deref()
        .map(time_text)
        .unwrap_or_else(|| "—".to_string())
}

/// Percent-encodes a path segment or query value.
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn times_render_in_utc() {
        assert_eq!(
            time_text("2026-11-11T08:00:00.000Z"),
            "2026-11-11 08:00:00 UTC"
        );
        assert_eq!(time_text("junk"), "junk");
    }
}
