//! The reconciliation page: the latest run's findings by kind with links
//! to the coupon and order pages, "run now", a repair per finding and
//! "repair all of this kind" (operators, each behind a confirmation with a
//! reason), and the history of runs.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use leptos::prelude::*;
use serde::Deserialize;

use super::auth::{Staff, WebError};
use super::components::{ConfirmForm, Time};
use super::context::{csrf_token, lang, viewer_may};
use super::i18n::Lang;
use super::layout::time_string;
use super::paths;
use super::posted::{OrPage, Posted};
use crate::domain::permissions::Permission;
use crate::domain::reconcile::{AnomalyKind, Fix};
use crate::http::AppState;
use crate::service::ServiceError;
use crate::service::reconcile::{FindingView, RunView};

/// Findings shown on the page (the rest are counted).
const SHOWN: i64 = crate::service::reconcile::FINDINGS_SHOWN;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/console/reconciliation", get(page))
        .route("/console/reconciliation/run", post(run_now))
        .route(
            "/console/reconciliation/findings/{id}/repair",
            get(repair_page).post(repair),
        )
        .route(
            "/console/reconciliation/runs/{run_id}/kinds/{kind}/repair",
            get(repair_all_page).post(repair_all),
        )
}

/// A kind's name for people.
pub fn kind_label(l: Lang, kind: &str) -> &'static str {
    match kind {
        "locked_coupon_order_closed" => l.t("coupon-locked-order-closed-or-refunded"),
        "locked_coupon_order_paid" => l.t("coupon-still-locked-order-paid"),
        "order_active_coupon_not_locked" => l.t("order-live-coupon-not-locked"),
        "coupon_order_mismatch" => l.t("coupon-and-order-name-different-partners"),
        "stale_checkout_lock" => l.t("lapsed-checkout-lock-not-released"),
        "used_coupon_order_unpaid" => l.t("used-coupon-on-an-unpaid-order"),
        "template_stock_mismatch" => l.t("template-stock-differs-from-coupons-issued"),
        "template_counts_mismatch" => l.t("template-counters-differ-from-coupons"),
        "split_mismatch" => l.t("split-differs-from-discount"),
        "refund_over_payable" => l.t("refund-over-payable"),
        "coupon_not_returned_after_refunds" => l.t("coupon-not-returned-after-refunds"),
        "coupons_out_of_step" => l.t("coupons-out-of-step"),
        "budget_mismatch" => l.t("budget-differs-from-orders"),
        _ => l.t("term-unknown"),
    }
}

fn fix_label(l: Lang, fix: &str) -> &'static str {
    match fix {
        "release_coupon" => l.t("release-the-lock-2"),
        "repair_link" => l.t("repair-the-coupon-link-2"),
        "cancel_order" => l.t("close-the-lapsed-order-releases-the"),
        "mark_coupon_used" => l.t("mark-the-coupon-used-on-the"),
        "return_coupon" => l.t("return-the-coupon"),
        _ => l.t("needs-a-person"),
    }
}

async fn page(State(s): State<AppState>, staff: Staff) -> Result<Response, WebError> {
    let l = staff.lang;
    let runs = s.service.reconcile_runs(20).await.or_page(l)?;
    let latest = runs.first().cloned();
    let findings = match &latest {
        Some(r) => s
            .service
            .reconcile_findings(r.id, None, SHOWN)
            .await
            .or_page(l)?,
        None => Vec::new(),
    };
    Ok(staff.page(l.t("reconciliation"), move || {
        view! { <ReconcileBody latest=latest findings=findings runs=runs/> }
    }))
}

/// The page: the latest run (or that none has run) with "run now", its
/// findings by kind, and the history of runs.
#[component]
fn ReconcileBody(
    latest: Option<RunView>,
    findings: Vec<FindingView>,
    runs: Vec<RunView>,
) -> impl IntoView {
    let l = lang();
    let summary = match latest {
        None => {
            view! { <p data-testid="no-run">{l.t("no-reconciliation-has-run-yet")}</p> }.into_any()
        }
        Some(r) => view! { <RunSummary run=r findings=findings.clone()/> }.into_any(),
    };
    let groups = AnomalyKind::ALL
        .into_iter()
        .filter_map(|k| {
            let rows: Vec<FindingView> = findings.iter().filter(|f| f.kind == k).cloned().collect();
            (!rows.is_empty()).then(|| view! { <FindingGroup kind=k rows=rows/> })
        })
        .collect_view();
    view! {
        <section aria-labelledby="latest">
            <h2 id="latest">{l.t("latest-run")}</h2>
            {summary}
            <form method="post" action="/console/reconciliation/run" class="inline">
                <input type="hidden" name="csrf" value=csrf_token()/>
                <button type="submit" class="primary" data-testid="run-now">{l.t("run-now")}</button>
            </form>
        </section>
        {groups}
        <section aria-labelledby="history">
            <h2 id="history">{l.t("history")}</h2>
            <RunHistory runs=runs/>
        </section>
    }
}

/// The latest run in a sentence (when, who, found, repaired), a note when
/// a scan reached its bound, and each kind's count and open count with
/// "repair all" (operators, when some are open and repairable).
#[component]
fn RunSummary(run: RunView, findings: Vec<FindingView>) -> impl IntoView {
    let (l, r) = (lang(), run);
    let operator = viewer_may(Permission::RepairAnomalies);
    let rows = AnomalyKind::ALL
        .into_iter()
        .map(|k| {
            let n = r.found_by_kind.get(k.as_str()).copied().unwrap_or(0);
            let still_open = findings.iter().filter(|f| f.kind == k && f.is_open()).count();
            let open = findings
                .iter()
                .filter(|f| f.kind == k && f.is_open() && f.fix != Fix::None)
                .count();
            let repair_all = (operator && open > 0).then(|| {
                let href = paths::run_kind_repair(r.id, k);
                view! { <a class="button" href=href data-testid="repair-all">{l.t("repair-all")}</a> }
            });
            let kind = k.as_str();
            view! {
                <tr data-kind=kind>
                    <td>{kind_label(l, kind)}</td>
                    <td class="money" data-testid="count">{n}</td>
                    <td class="money" data-testid="open-count">{still_open}</td>
                    <td>{repair_all}</td>
                </tr>
            }
        })
        .collect_view();
    let when = time_string(&r.finished_at);
    let truncated = r.truncated.then(|| {
        view! { <p class="flash flash-error">{l.t("a-scan-reached-its-bound-the")}</p> }
    });
    let head = crate::tr!(
        l,
        "by-found-repaired",
        when = when,
        actor = super::layout::actor_text(l, &r.actor),
        found = &r.found,
        repaired = &r.repaired
    );
    view! {
        <p data-testid="latest-run">{head}</p>
        {truncated}
        <div class="table-wrap"><table data-testid="counts">
            <thead><tr>
                <th scope="col">{l.t("kind-3")}</th>
                <th scope="col">{l.t("count")}</th>
                <th scope="col">{l.t("reconcile-still-open")}</th>
                <th scope="col">{l.t("action-2")}</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table></div>
    }
}

/// The findings of one kind: coupon, order, what is wrong, the suggested
/// fix and its state (resolved, repaired, refused, or the repair button
/// for operators).
#[component]
fn FindingGroup(kind: AnomalyKind, rows: Vec<FindingView>) -> impl IntoView {
    let l = lang();
    let operator = viewer_may(Permission::RepairAnomalies);
    let id = format!("kind-{}", kind.as_str());
    let title = kind_label(l, kind.as_str());
    let body = rows
        .into_iter()
        .map(|f| {
            let coupon = f.coupon_id.clone().map(|c| {
                let href = paths::coupon(&c);
                let code = f.coupon_code.clone().unwrap_or_else(|| l.t("coupon").to_string());
                view! { <a href=href class="mono">{code}</a> }
            });
            let order = f.order_no.clone().map(|o| {
                let href = paths::order(&o);
                view! { <a href=href>{o}</a> }
            });
            let detail = l.msg(&f.message);
            let state = match (&f.repaired_at, &f.repair_note, &f.resolved) {
                (None, _, Some(r)) => {
                    let who = if r.actor.is_empty() {
                        "—".to_string()
                    } else {
                        format!(
                            "{} · {}",
                            super::layout::actor_text(l, &r.actor),
                            super::layout::action_text(l, &r.action)
                        )
                    };
                    let at = (!r.at.is_empty()).then(|| view! { <Time at=r.at.clone()/>" · " });
                    view! {
                        <span class="badge badge-ok" data-testid="resolved">{l.t("reconcile-resolved")}</span>" "
                        {at}{who}
                    }
                    .into_any()
                }
                (Some(at), _, _) => view! {
                    <span class="badge badge-ok">{l.t("repaired")}</span>" "
                    <Time at=at.clone()/>" · "{f.repaired_by.as_deref().map(|a| super::layout::actor_text(l, a)).unwrap_or_default()}
                }
                .into_any(),
                (None, Some(note), None) => view! {
                    <span class="badge badge-warning">{l.t("repair-refused")}</span>" "{note.clone()}
                }
                .into_any(),
                (None, None, None) if operator && f.fix != Fix::None => {
                    let href = paths::finding_repair(f.id);
                    view! { <a class="button primary" href=href data-testid="repair">{l.t("repair-2")}</a> }.into_any()
                }
                (None, None, None) => view! { <span class="note">{l.t("open")}</span> }.into_any(),
            };
            let fix = fix_label(l, f.fix.as_str());
            view! {
                <tr data-finding=f.id>
                    <td>{coupon}</td>
                    <td>{order}</td>
                    <td>{detail}</td>
                    <td>{fix}</td>
                    <td>{state}</td>
                </tr>
            }
        })
        .collect_view();
    let section_id = id.clone();
    let labelled_by = id.clone();
    view! {
        <section aria-labelledby=labelled_by data-testid=section_id>
            <h2 id=id>{title}</h2>
            <div class="table-wrap"><table>
                <thead><tr>
                    <th scope="col">{l.t("coupon")}</th>
                    <th scope="col">{l.t("order")}</th>
                    <th scope="col">{l.t("what-is-wrong")}</th>
                    <th scope="col">{l.t("suggested-fix")}</th>
                    <th scope="col">{l.t("state")}</th>
                </tr></thead>
                <tbody>{body}</tbody>
            </table></div>
        </section>
    }
}

/// The runs, newest first: when, by whom, found and repaired.
#[component]
fn RunHistory(runs: Vec<RunView>) -> impl IntoView {
    let l = lang();
    if runs.is_empty() {
        return view! { <p class="note">{l.t("none-yet")}</p> }.into_any();
    }
    let rows = runs
        .into_iter()
        .map(|r| {
            view! {
                <tr>
                    <td class="nowrap"><Time at=r.finished_at/></td>
                    <td>{super::layout::actor_text(l, &r.actor)}</td>
                    <td class="money">{r.found}</td>
                    <td class="money">{r.repaired}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap"><table data-testid="history">
            <thead><tr>
                <th scope="col">{l.t("when")}</th>
                <th scope="col">{l.t("by")}</th>
                <th scope="col">{l.t("found")}</th>
                <th scope="col">{l.t("repaired-2")}</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table></div>
    }
    .into_any()
}

async fn run_now(
    State(s): State<AppState>,
    staff: Staff,
    _: Posted<std::collections::HashMap<String, String>>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    Ok(match s.service.run_reconciliation(&staff.actor()).await {
        Ok(r) => staff.done(
            "/console/reconciliation",
            crate::tr!(l, "reconciliation-done-found", found = &r.found),
        ),
        Err(e) => WebError::from_service(l, e).into_response(),
    })
}

fn operator_only(staff: &Staff) -> Option<Response> {
    (!staff.may(Permission::RepairAnomalies)).then(|| {
        WebError::forbidden(staff.lang.t("repairs-from-the-reconciliation-page-need"))
            .into_response()
    })
}

async fn repair_page(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<i64>,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    let l = staff.lang;
    let f = s.service.reconcile_finding(id).await.or_page(l)?;
    let detail = l.msg(&f.message);
    Ok(staff.page(l.t("repair-an-anomaly"), move || {
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{kind_label(l, f.kind.as_str())}</h2>
                <p>{detail}</p>
                <p><strong>{l.t("repair-3")}</strong>{fix_label(l, f.fix.as_str())}</p>
                <p class="note">{l.t("the-repair-checks-the-facts-again")}</p>
                <ConfirmForm action=paths::finding_repair(id) button=l.t("repair")
                    cancel="/console/reconciliation"
                    reason_label=l.t("reason-required-recorded-in-the-timeline")/>
            </section>
        }
    }))
}

#[derive(Deserialize)]
struct ReasonForm {
    reason: Option<String>,
}

fn refusal_text(l: Lang, e: &ServiceError) -> String {
    match e {
        ServiceError::Invalid(f) if f.field == "reason" => l.t("please-give-a-reason").to_string(),
        other => crate::tr!(l, "not-repaired", other = other.to_string()),
    }
}

async fn repair(
    State(s): State<AppState>,
    staff: Staff,
    Path(id): Path<i64>,
    Posted { form, .. }: Posted<ReasonForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    Ok(
        match s
            .service
            .repair_finding(&staff.ctx(), &staff.authority(), id, form.reason)
            .await
        {
            Ok(()) => staff.done("/console/reconciliation", l.t("repaired-3").to_string()),
            Err(
                e @ (ServiceError::Db(_)
                | ServiceError::Forbidden(_)
                | ServiceError::NotFound { .. }),
            ) => WebError::from_service(l, e).into_response(),
            Err(e @ ServiceError::Invalid(_)) => {
                staff.refused(&paths::finding_repair(id), refusal_text(l, &e))
            }
            Err(e) => staff.refused("/console/reconciliation", refusal_text(l, &e)),
        },
    )
}

async fn repair_all_page(
    State(s): State<AppState>,
    staff: Staff,
    Path((run_id, kind)): Path<(i64, String)>,
) -> Result<Response, WebError> {
    if let Some(r) = operator_only(&staff) {
        return Ok(r);
    }
    let l = staff.lang;
    let Some(k) = AnomalyKind::parse(&kind) else {
        return Err(WebError::not_found(l, &kind));
    };
    let open = s
        .service
        .reconcile_findings(run_id, Some(k), 1000)
        .await
        .or_page(l)?
        .into_iter()
        .filter(|f| f.repaired_at.is_none() && f.fix != Fix::None)
        .count();
    let what = crate::tr!(l, "repairs-the-open-findings-of-this", open = open);
    Ok(staff.page(l.t("repair-all-of-a-kind"), move || {
        view! {
            <section class="confirm" aria-labelledby="confirm-heading">
                <h2 id="confirm-heading">{kind_label(l, k.as_str())}</h2>
                <p>{what}</p>
                <ConfirmForm action=paths::run_kind_repair(run_id, k) button=l.t("repair-all-2")
                    cancel="/console/reconciliation"
                    reason_label=l.t("reason-required-recorded-in-the-timeline")/>
            </section>
        }
    }))
}

async fn repair_all(
    State(s): State<AppState>,
    staff: Staff,
    Path((run_id, kind)): Path<(i64, String)>,
    Posted { form, .. }: Posted<ReasonForm>,
) -> Result<Response, WebError> {
    let l = staff.lang;
    let Some(k) = AnomalyKind::parse(&kind) else {
        return Err(WebError::not_found(l, &kind));
    };
    Ok(
        match s
            .service
            .repair_all_of_kind(&staff.ctx(), &staff.authority(), run_id, k, form.reason)
            .await
        {
            Ok(o) => staff.done(
                "/console/reconciliation",
                crate::tr!(
                    l,
                    "repaired-refused-changed-meanwhile-or-needing",
                    repaired = &o.repaired,
                    refused = &o.refused
                ),
            ),
            Err(
                e @ (ServiceError::Db(_)
                | ServiceError::Forbidden(_)
                | ServiceError::NotFound { .. }),
            ) => WebError::from_service(l, e).into_response(),
            Err(e) => staff.refused(&paths::run_kind_repair(run_id, k), refusal_text(l, &e)),
        },
    )
}
