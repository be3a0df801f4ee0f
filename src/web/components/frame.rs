//! The frame every console page shares (skip link, header with the search
//! box, the account links and the language switch, the navigation, the
//! flash message, the page's title) and the sign-in page, and the two
//! functions that render them as complete HTML documents.

use leptos::prelude::*;

use crate::domain::permissions::Permission;
use crate::i18n::Lang;
use crate::service::staff::StaffSession;
use crate::web::context::{csrf_token, lang, render_in, viewer, viewer_may};
use crate::web::document_in;
use crate::web::layout::{Flash, FlashKind, role_label};

/// A console page: `here` is its path and query (the language switch comes
/// back to it), `flash` the message carried across the last redirect.
#[component]
pub fn ConsoleFrame(
    #[prop(into)] here: String,
    flash: Option<Flash>,
    #[prop(into)] title: String,
    children: Children,
) -> impl IntoView {
    let l = lang();
    let (name, role) = viewer()
        .map(|v| (v.name.to_string(), role_label(l, v.role.as_str())))
        .unwrap_or_default();
    // On the search results the box keeps what was typed.
    let typed = here
        .strip_prefix("/console/search?")
        .and_then(|q| {
            form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "q")
                .map(|(_, v)| v.into_owned())
        })
        .unwrap_or_default();
    let nav =
        |permission: Permission, href: &'static str, testid: &'static str, key: &'static str| {
            viewer_may(permission).then(|| view! { <a href=href data-testid=testid>{l.t(key)}</a> })
        };
    view! {
        <a class="skip" href="#main">{l.t("skip-to-content")}</a>
        <header class="console-header">
            <div class="brand">
                <a href="/console">"couponkeeper"</a>
                <span class="brand-sub">{l.t("support-console")}</span>
            </div>
            <form class="search" method="get" action="/console/search" role="search">
                <label for="search-q" class="visually-hidden">
                    {l.t("search-coupon-code-coupon-id-order")}
                </label>
                <input id="search-q" name="q" type="search" autocomplete="off" value=typed
                    placeholder=l.t("code-coupon-id-order-no-user")/>
                <button type="submit">{l.t("search")}</button>
            </form>
            <nav class="who" aria-label=l.t("account")>
                <span class="staff-name" data-testid="staff-name">{name}" · "{role}</span>
                <a href="/console/password" data-testid="nav-password">{l.t("change-password")}</a>
                <LanguageSwitch next=here/>
                <form method="post" action="/logout" class="inline">
                    <input type="hidden" name="csrf" value=csrf_token()/>
                    <button type="submit" class="link">{l.t("sign-out")}</button>
                </form>
            </nav>
        </header>
        <nav class="console-nav" aria-label=l.t("main")>
            <a href="/console">{l.t("home")}</a>
            <a href="/console/coupons">{l.t("coupons")}</a>
            <a href="/console/orders" data-testid="nav-orders">{l.t("order-list-title")}</a>
            <a href="/console/templates" data-testid="nav-templates">{l.t("templates-nav")}</a>
            <a href="/console/reconciliation">{l.t("reconciliation")}</a>
            <a href=crate::web::paths::SUPPORT_REQUESTS data-testid="nav-support-requests">{l.t("nav-support-requests")}</a>
            <a href="/console/campaigns" data-testid="nav-campaigns">{l.t("nav-campaigns")}</a>
            <a href="/console/categories" data-testid="nav-categories">{l.t("category-nav")}</a>
            {viewer_may(Permission::ManageStaff).then(|| view! { <a href="/console/staff">{l.t("staff")}</a> })}
            <a href="/console/expirations" data-testid="nav-expirations">{l.t("expirations")}</a>
            <a href="/console/deliveries" data-testid="nav-deliveries">{l.t("deliveries")}</a>
            {nav(Permission::ManageWebhooks, "/console/webhooks", "nav-webhooks", "webhooks")}
            {nav(Permission::ReadReminderPlan, "/console/reminders", "nav-reminders", "reminders")}
            {if viewer_may(Permission::ReadAuditLog) {
                view! { <a href="/console/audit" data-testid="nav-audit">{l.t("audit-log")}</a> }.into_any()
            } else {
                view! { <a href="/console/audit" data-testid="nav-audit">{l.t("nav-my-actions")}</a> }.into_any()
            }}
            {nav(Permission::ManageCompensation, "/console/compensation", "nav-compensation", "comp-nav")}
            {nav(Permission::ManageWakeups, "/console/wakeup", "nav-wakeup", "wakeup-nav")}
        </nav>
        {flash.map(|f| view! { <FlashMessage flash=f/> })}
        <main id="main" class="content wide">
            <h1 class="page-title">{title}</h1>
            {children()}
        </main>
    }
}

/// The message carried across the last redirect: a success or a refusal.
#[component]
fn FlashMessage(flash: Flash) -> impl IntoView {
    let (class, role) = match flash.kind {
        FlashKind::Ok => ("flash flash-ok", "status"),
        FlashKind::Error => ("flash flash-error", "alert"),
    };
    view! { <div class=class role=role data-testid="flash">{flash.text}</div> }
}

/// The switch to the other language, which comes back to `next`.
#[component]
fn LanguageSwitch(#[prop(into)] next: String) -> impl IntoView {
    let other = lang().other();
    view! {
        <form method="post" action="/lang" class="inline">
            <input type="hidden" name="lang" value=other.code()/>
            <input type="hidden" name="next" value=next/>
            <button type="submit" class="link" lang=other.html_lang()>{lang().switch_label()}</button>
        </form>
    }
}

/// The sign-in page: `csrf` is the sign-in form's own token (nobody is
/// signed in yet), `next` where a successful sign-in leads.
#[component]
pub fn SignInPage(
    flash: Option<Flash>,
    #[prop(into)] csrf: String,
    #[prop(into)] next: String,
) -> impl IntoView {
    let l = lang();
    let login_next = format!(
        "/login?next={}",
        form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
    );
    view! {
        <header class="site-header">
            <p class="brand-line">"couponkeeper"</p>
            <p class="tagline">{l.t("support-console")}</p>
        </header>
        {flash.map(|f| view! { <FlashMessage flash=f/> })}
        <main id="main" class="content narrow">
            <section aria-labelledby="login-heading">
                <h1 id="login-heading">{l.t("staff-sign-in")}</h1>
                <form method="post" action="/login" class="stack">
                    <input type="hidden" name="csrf" value=csrf/>
                    <input type="hidden" name="next" value=next/>
                    <label for="login-name">{l.t("name")}</label>
                    <input id="login-name" name="name" type="text" autocomplete="username" required=true autofocus=true/>
                    <label for="login-password">{l.t("password")}</label>
                    <input id="login-password" name="password" type="password" autocomplete="current-password" required=true/>
                    <button type="submit" class="primary">{l.t("sign-in")}</button>
                </form>
            </section>
            <LanguageSwitch next=login_next/>
        </main>
    }
}

/// A console page for `session`, as a complete HTML document: the
/// [`ConsoleFrame`] around what `body` builds. `body` runs inside
/// [`render_in`], so its components read the language and the signed-in
/// staff member from context.
pub fn render<V: IntoView + 'static>(
    session: &StaffSession,
    l: Lang,
    here: &str,
    flash: Option<&Flash>,
    title: &str,
    body: impl FnOnce() -> V + Send + 'static,
) -> String {
    let (here, flash, heading) = (here.to_string(), flash.cloned(), title.to_string());
    let html = render_in(l, Some(session.clone()), move || {
        view! { <ConsoleFrame here=here flash=flash title=heading>{body()}</ConsoleFrame> }
    });
    document_in(l.html_lang(), &format!("{title} · couponkeeper"), &html)
}

/// The sign-in page, as a complete HTML document.
pub fn login_page(l: Lang, flash: Option<&Flash>, csrf: &str, next: &str) -> String {
    let (flash, csrf, next) = (flash.cloned(), csrf.to_string(), next.to_string());
    let html = render_in(
        l,
        None,
        move || view! { <SignInPage flash=flash csrf=csrf next=next/> },
    );
    document_in(
        l.html_lang(),
        &format!("{} · couponkeeper", l.t("sign-in")),
        &html,
    )
}
