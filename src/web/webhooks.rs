//! Webhook subscribers: every staff member can see who receives webhooks
//! (secrets only by their last 4 characters); operators add subscribers
//! (an explicit form with CSRF) and disable them (confirmation page, CSRF).
//! The environment's default subscriber (`COUPONKEEPER_WEBHOOK_URL`) is
//! listed but cannot be changed here. A URL that is refused (not http(s),
//! credentials in it, a host on this host's or a private network: see
//! [`crate::service::Service::check_receiver`]) shows the form
//! again with the reason beside the field, and nothing is written.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::*;

use super::auth::{Staff, WebError};
use super::i18n::Lang;
use super::layout::time_text;
use crate::domain::staff::Role;
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

    fn verb(self, l: Lang) -> &'static str {
        match self {
            Switch::Disable => l.t("停用", "Disable"),
            Switch::Enable => l.t("重新启用", "Enable"),
        }
    }

    /// The subscriber is already in the state this switch leads to.
    fn already(self, enabled: bool) -> bool {
        (self == Switch::Disable) != enabled
    }
}

fn operator(staff: &Staff) -> bool {
    staff.session.role.includes(Role::Operator)
}

fn operator_only(staff: &Staff) -> Option<Response> {
    (!operator(staff)).then(|| {
        WebError::forbidden(staff.lang.t(
            "管理 Webhook 接收方需要运营权限。",
            "Managing webhook subscribers needs the operator role.",
        ))
        .into_response()
    })
}

fn types_text(l: Lang, types: &[String]) -> String {
    if types.is_empty() || types.iter().any(|t| t == "*") {
        l.t("全部类型", "all types").to_string()
    } else {
        types.join(", ")
    }
}

fn enabled_badge(l: Lang, enabled: bool) -> impl IntoView + use<> {
    if enabled {
        view! { <span class="badge badge-ok" data-enabled="true">{l.t("启用", "enabled")}</span> }
    } else {
        view! { <span class="badge badge-problem" data-enabled="false">{l.t("已停用", "disabled")}</span> }
    }
}

fn rows_view(l: Lang, subs: Vec<SubscriberView>, may_disable: bool) -> impl IntoView + use<> {
    let body =
        subs.into_iter()
            .map(|s| {
                let created = if s.from_environment {
                    l.t(
                        "来自 COUPONKEEPER_WEBHOOK_URL",
                        "from COUPONKEEPER_WEBHOOK_URL",
                    )
                    .to_string()
                } else {
                    format!("{} · {}", time_text(&s.created_at), s.created_by)
                };
                let action = (may_disable && !s.from_environment).then(|| {
                let switch = if s.enabled { Switch::Disable } else { Switch::Enable };
                let href = format!("/console/webhooks/{}/{}", s.id, switch.path());
                view! { <a class="button" href=href data-testid=switch.path()>{switch.verb(l)}</a> }
            });
                view! {
                    <tr data-subscriber=s.id.clone()>
                        <td class="mono">{s.url.clone()}</td>
                        <td class="mono">{types_text(l, &s.event_types)}</td>
                        <td>{enabled_badge(l, s.enabled)}</td>
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
                <th scope="col">{l.t("地址", "URL")}</th>
                <th scope="col">{l.t("事件类型", "Event types")}</th>
                <th scope="col">{l.t("状态", "State")}</th>
                <th scope="col">{l.t("密钥", "Secret")}</th>
                <th scope="col">{l.t("创建", "Created")}</th>
                <th scope="col">{l.t("操作", "Actions")}</th>
            </tr></thead>
            <tbody>{body}</tbody>
        </table></div>
    }
}

/// A refused URL: the form shown again with the reason beside the field,
/// what was typed (never the secrets) and the ticked types.
struct UrlRefused {
    url: String,
    types: Vec<String>,
    message: String,
}

/// The reason beside the URL field.
fn refusal_text(l: Lang, r: &ReceiverRefusal) -> String {
    match r {
        ReceiverRefusal::Url(UrlProblem::Scheme) => l
            .t(
                "地址须以 https:// 或 http:// 开头。",
                "Expected a URL starting with https:// or http://.",
            )
            .to_string(),
        ReceiverRefusal::Url(UrlProblem::Malformed(raw)) => l.pick(
            format!("不是有效的 https:// 或 http:// 地址：{raw:?}"),
            format!("Not a valid https:// or http:// URL: {raw:?}"),
        ),
        ReceiverRefusal::Url(UrlProblem::Userinfo) => l
            .t(
                "地址中不能包含用户名或密码（user:pass@host）：地址会显示给所有员工。请改用签名密钥验证请求。",
                "A URL with a user name or password (user:pass@host) is not accepted: every staff member sees the URL. Receivers verify requests by the signing secret.",
            )
            .to_string(),
        ReceiverRefusal::Blocked(b) => {
            let host = b.host.trim_start_matches('[').trim_end_matches(']');
            let named = host.parse::<std::net::IpAddr>().ok() != Some(b.addr);
            let allow = l.t(
                "只有部署配置 COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS 中列出的网络例外。",
                "Only networks listed in the deployment's COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS are let through.",
            );
            if named {
                l.pick(
                    format!("不能投递到 {host}：它解析为 {}，属于{}。{allow}", b.addr, b.kind.zh()),
                    format!("Deliveries cannot go to {host}: it resolves to {}, {}. {allow}", b.addr, b.kind.en()),
                )
            } else {
                l.pick(
                    format!("不能投递到 {}：这是{}。{allow}", b.addr, b.kind.zh()),
                    format!("Deliveries cannot go to {}: {}. {allow}", b.addr, b.kind.en()),
                )
            }
        }
    }
}

fn add_form(l: Lang, csrf: String, refused: Option<UrlRefused>) -> impl IntoView + use<> {
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
                <label><input type="checkbox" id=id name="types" value=t checked=checked/>" "<span class="mono">{t}</span></label>
            }
        })
        .collect_view();
    let typed = refused.as_ref().map(|r| r.url.clone()).unwrap_or_default();
    let invalid = refused.as_ref().map(|_| "true");
    let described = refused.as_ref().map(|_| "url-error");
    let error = refused.map(|r| {
        view! { <p class="field-error" id="url-error" role="alert" data-testid="url-error">{r.message}</p> }
    });
    view! {
        <section aria-labelledby="add-heading">
            <h2 id="add-heading">{l.t("添加接收方", "Add a subscriber")}</h2>
            <form method="post" action=LIST class="stack" data-testid="add-form">
                <input type="hidden" name="csrf" value=csrf/>
                <label for="url">{l.t("地址（https:// 或 http://）", "URL (https:// or http://)")}</label>
                <input id="url" name="url" required maxlength="2000" placeholder="https://hooks.example.com/couponkeeper" value=typed aria-invalid=invalid aria-describedby=described/>
                {error}
                <fieldset>
                    <legend>{l.t("事件类型", "Event types")}</legend>
                    <label for="type-all"><input type="checkbox" id="type-all" name="types" value="*" checked=all_ticked/>" "{l.t("全部类型（包括以后新增的）", "All types (including ones added later)")}</label>
                    {boxes}
                </fieldset>
                <label for="secret">{l.t("签名密钥（16–200 个字符）", "Signing secret (16–200 characters)")}</label>
                <input id="secret" name="secret" type="password" required minlength="16" maxlength="200" autocomplete="new-password"/>
                <label for="secret_again">{l.t("再次输入密钥", "Secret again")}</label>
                <input id="secret_again" name="secret_again" type="password" required minlength="16" maxlength="200" autocomplete="new-password"/>
                <p class="note">{l.t(
                    "密钥保存后只显示最后 4 个字符。https:// 接收方的证书须由公共 CA 或 COUPONKEEPER_WEBHOOK_CA_FILE 中的 CA 签发。接收方须是公网地址：本机、内网、链路本地（含云元数据）等地址会被拒绝，除非在 COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS 中列出。",
                    "Once saved, only the secret's last 4 characters are shown. An https:// receiver's certificate must come from a public CA or from one in COUPONKEEPER_WEBHOOK_CA_FILE. Receivers must be public: this host, private and link-local networks (the cloud metadata address among them) are refused unless listed in COUPONKEEPER_WEBHOOK_ALLOW_NETWORKS.",
                )}</p>
                <p class="actions">
                    <button type="submit" class="primary" data-testid="add">{l.t("添加接收方", "Add subscriber")}</button>
                </p>
            </form>
        </section>
    }
}

async fn list(State(s): State<AppState>, staff: Staff) -> Response {
    render(&s, &staff, None).await
}

/// The page; with `refused`, the add form again with the URL's problem
/// beside the field (422: nothing was written).
async fn render(s: &AppState, staff: &Staff, refused: Option<UrlRefused>) -> Response {
    let l = staff.lang;
    let subs = match s.service.webhook_subscribers().await {
        Ok(r) => r,
        Err(e) => return WebError::from_service(l, e).into_response(),
    };
    let has_default = subs.iter().any(|s| s.from_environment);
    let may = operator(staff);
    let default_note = if has_default {
        l.t(
            "默认接收方来自环境变量 COUPONKEEPER_WEBHOOK_URL（接收全部类型），只能在部署配置中修改。",
            "The default subscriber comes from COUPONKEEPER_WEBHOOK_URL (every type); change it in the deployment's configuration.",
        )
    } else {
        l.t(
            "未配置 COUPONKEEPER_WEBHOOK_URL，没有默认接收方。",
            "COUPONKEEPER_WEBHOOK_URL is not set: there is no default subscriber.",
        )
    };
    let table = if subs.is_empty() {
        view! { <p class="note" data-testid="no-subscribers">{l.t("还没有接收方。", "No subscribers yet.")}</p> }.into_any()
    } else {
        rows_view(l, subs, may).into_any()
    };
    let status = if refused.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let form = if may {
        add_form(l, staff.session.csrf_token.clone(), refused).into_any()
    } else {
        view! { <p class="note">{l.t("添加或停用接收方需要运营权限。", "Adding or disabling subscribers needs the operator role.")}</p> }.into_any()
    };
    let page = staff.page(
        l.t("Webhook 接收方", "Webhooks"),
        view! {
            <section aria-labelledby="subscribers-heading">
                <h2 id="subscribers-heading">{l.t("Webhook 接收方", "Webhook subscribers")}</h2>
                <p class="note" data-testid="default-note">{default_note}</p>
                {table}
                <p class="note">{l.t(
                    "投递情况见“消息投递”页面。停用后不再产生新的投递；尚未送达的投递到期时转为死信。",
                    "See Deliveries for what was sent. A disabled subscriber gets no new deliveries; its pending ones become dead letters when due.",
                )}</p>
            </section>
            {form}
        },
    );
    (status, page).into_response()
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

async fn add(State(s): State<AppState>, staff: Staff, body: Bytes) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    let form = parse_add(&body);
    if let Err(e) = staff.check_csrf(form.csrf.as_deref()) {
        return e.into_response();
    }
    let l = staff.lang;
    if form.types.is_empty() {
        return staff.refused(
            LIST,
            l.t(
                "请至少选择一个事件类型（或“全部类型”）。",
                "Choose at least one event type (or all types).",
            )
            .to_string(),
        );
    }
    if form.secret != form.secret_again {
        return staff.refused(
            LIST,
            l.t("两次输入的密钥不一致。", "The two secrets do not match.")
                .to_string(),
        );
    }
    let refused = |message: String| UrlRefused {
        url: form.url.trim().to_string(),
        types: form.types.clone(),
        message,
    };
    // The URL first, with the reason in the page's language; the service
    // checks it again when adding.
    if let Err(r) = s.service.check_receiver(&form.url).await {
        return render(&s, &staff, Some(refused(refusal_text(l, &r)))).await;
    }
    match s
        .service
        .add_webhook_subscriber(&form.url, &form.secret, &form.types, &staff.ctx())
        .await
    {
        Ok(v) => staff.done(
            LIST,
            l.pick(
                format!("已添加接收方 {}。", v.url),
                format!("Subscriber {} added.", v.url),
            ),
        ),
        // The host resolved elsewhere between the two checks.
        Err(ServiceError::Invalid(f)) if f.field == "url" => {
            render(&s, &staff, Some(refused(f.message))).await
        }
        Err(ServiceError::Invalid(f)) => {
            let field = match f.field {
                "secret" => l.t("密钥", "Secret"),
                _ => l.t("事件类型", "Event types"),
            };
            staff.refused(LIST, format!("{field}: {}", f.message))
        }
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}

/// The console subscriber `id` (not the environment's).
async fn find(s: &AppState, l: Lang, id: &str) -> Result<SubscriberView, Response> {
    let subs = s
        .service
        .webhook_subscribers()
        .await
        .map_err(|e| WebError::from_service(l, e).into_response())?;
    subs.into_iter()
        .find(|v| v.id == id && !v.from_environment)
        .ok_or_else(|| {
            WebError::not_found(l, &format!("{} {id}", l.t("接收方", "subscriber"))).into_response()
        })
}

async fn confirm_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<String>,
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
    let csrf = staff.session.csrf_token.clone();
    let action = format!("/console/webhooks/{}/{}", sub.id, switch.path());
    let types = types_text(l, &sub.event_types);
    let (title, heading, text) = match switch {
        Switch::Disable => (
            l.t("确认停用接收方", "Confirm disabling"),
            l.t("停用接收方", "Disable subscriber"),
            l.pick(
                format!("{} 将不再收到新的投递（{types}）；尚未送达的投递到期时转为死信。之后可在此重新启用。", sub.url),
                format!("{} gets no new deliveries ({types}); its pending ones become dead letters when due. It can be enabled again here.", sub.url),
            ),
        ),
        Switch::Enable => (
            l.t("确认重新启用接收方", "Confirm enabling"),
            l.t("重新启用接收方", "Enable subscriber"),
            l.pick(
                format!("{} 将收到此后产生的消息（{types}）；停用期间产生的消息不会补发（死信可在投递页重新投递）。", sub.url),
                format!("{} gets the messages written from now on ({types}); those written while it was disabled are not sent to it (dead letters can be redelivered on the Deliveries page).", sub.url),
            ),
        ),
    };
    staff.page(
        title,
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{heading}" "<span class="mono">{sub.url.clone()}</span></h2>
                <p>{text}</p>
                <form method="post" action=action class="stack">
                    <input type="hidden" name="csrf" value=csrf/>
                    <p class="actions">
                        <button type="submit" class="primary" data-testid="confirm">{switch.verb(l)}</button>
                        <a class="button" href=LIST>{l.t("取消", "Cancel")}</a>
                    </p>
                </form>
            </section>
        },
    )
}

fn already_text(l: Lang, switch: Switch) -> String {
    match switch {
        Switch::Disable => l.t("该接收方已停用。", "That subscriber is already disabled."),
        Switch::Enable => l.t("该接收方已启用。", "That subscriber is already enabled."),
    }
    .to_string()
}

async fn switch(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<String>,
    body: Bytes,
    switch: Switch,
) -> Response {
    if let Some(r) = operator_only(&staff) {
        return r;
    }
    if let Err(e) = staff.posted::<std::collections::HashMap<String, String>>(&body) {
        return e.into_response();
    }
    let l = staff.lang;
    let ctx = staff.ctx();
    let result = match switch {
        Switch::Disable => s.service.disable_webhook_subscriber(&id, &ctx).await,
        Switch::Enable => s.service.enable_webhook_subscriber(&id, &ctx).await,
    };
    match result {
        Ok(()) => staff.done(
            LIST,
            match switch {
                Switch::Disable => l.t("接收方已停用。", "Subscriber disabled."),
                Switch::Enable => l.t("接收方已重新启用。", "Subscriber enabled."),
            }
            .to_string(),
        ),
        Err(ServiceError::NotFound { .. }) => staff.refused(
            LIST,
            match switch {
                Switch::Disable => l.t(
                    "没有这个启用中的接收方（可能已停用）。",
                    "No enabled subscriber with that id (already disabled?).",
                ),
                Switch::Enable => l.t(
                    "没有这个已停用的接收方（可能已启用）。",
                    "No disabled subscriber with that id (already enabled?).",
                ),
            }
            .to_string(),
        ),
        Err(e) => WebError::from_service(l, e).into_response(),
    }
}
