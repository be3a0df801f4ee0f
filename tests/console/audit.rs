//! The audit log on a fresh database: staff actions with actor, action,
//! reason, before/after, target and address; job actions; staff-account
//! changes and sign-ins; every filter; keyset pages without gaps or
//! duplicates; CSV; who may read it.

use crate::common::console::{Browser, Page, confirm, signed_in};
use crate::common::fixtures::deposit_paid;
use crate::common::spawn_app;
use couponkeeper::domain::staff::Role;
use couponkeeper::store::audit::{AuditCursor, AuditQuery, AuditSource, explain_page};
use serde_json::json;

/// The rows of an audit page as the cells carrying `data-testid`s.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    id: i64,
    actor: String,
    action: String,
    html: String,
}

fn cell(html: &str, id: &str) -> String {
    let marker = format!("data-testid=\"{id}\"");
    html.find(&marker)
        .map(|start| {
            let rest = &html[start..];
            let open = rest.find('>').unwrap_or(0) + 1;
            let close = rest[open..].find('<').unwrap_or(0) + open;
            rest[open..close].to_string()
        })
        .unwrap_or_default()
}

/// The value of the first `name="…"` attribute in `html`.
fn attr(html: &str, name: &str) -> String {
    let marker = format!("{name}=\"");
    html.split_once(&marker)
        .and_then(|(_, rest)| rest.split('"').next())
        .unwrap_or_default()
        .to_string()
}

fn rows(page: &Page) -> Vec<Row> {
    page.text
        .split("data-testid=\"audit-row\" data-id=\"")
        .skip(1)
        .map(|part| {
            let id = part
                .split('"')
                .next()
                .and_then(|s| s.parse().ok())
                .expect("row id");
            let html = part.split("</tr>").next().unwrap_or_default().to_string();
            Row {
                id,
                // The stored words; the cells show them in words.
                actor: attr(&html, "data-actor"),
                action: attr(&html, "data-action"),
                html,
            }
        })
        .collect()
}

/// Every row of a filtered log, following the next-page links.
async fn all_pages(b: &mut Browser<'_>, first: &str) -> (Vec<Row>, usize) {
    let mut out = Vec::new();
    let mut path = first.to_string();
    let mut pages = 0;
    loop {
        let page = b.get(&path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.text);
        pages += 1;
        out.extend(rows(&page));
        let Some(href) = page
            .text
            .split("rel=\"next\"")
            .next()
            .and_then(|before| before.rsplit("href=\"").next())
            .filter(|_| page.contains("rel=\"next\""))
            .and_then(|s| s.split('"').next())
        else {
            break;
        };
        path = href.replace("&amp;", "&");
        assert!(pages < 100, "pages end");
    }
    (out, pages)
}

#[tokio::test]
async fn staff_actions_appear_with_actor_reason_change_target_and_address() {
    let app = spawn_app().await;
    let cid = deposit_paid(&app, "P1", "u1").await;
    let mut op = signed_in(&app, Role::Operator).await;
    let r = confirm(
        &mut op,
        &format!("/console/coupons/{cid}/release"),
        &[
            ("reason", "客户要求取消 · customer asked"),
            ("force", "true"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let r = confirm(
        &mut op,
        "/console/users/u1/compensation",
        &[
            ("amount", "20"),
            ("valid_days", "30"),
            ("order_no", "P1"),
            ("reason", "apology for the delay"),
        ],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);

    let page = op
        .get(&format!("/console/audit?target={cid}&action=force_release"))
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let found = rows(&page);
    assert_eq!(found.len(), 1, "{found:?}");
    let row = &found[0];
    assert_eq!(row.actor, "staff:operator-1");
    assert_eq!(row.action, "force_release");
    assert_eq!(cell(&row.html, "audit-change"), "锁定中 → 待使用");
    assert_eq!(cell(&row.html, "audit-actor"), "客服后台：operator-1");
    assert_eq!(cell(&row.html, "audit-action"), "强制释放");
    assert_eq!(
        cell(&row.html, "audit-reason"),
        "客户要求取消 · customer asked"
    );
    assert!(row.html.contains(&format!("/console/coupons/{cid}")));
    // In-process tests serve without connect info, so the console records
    // what `Staff::address` gives there: `unknown` (under `serve`, the IP).
    assert_eq!(cell(&row.html, "audit-address"), "unknown");

    // The order's side of the forced release, found by order number.
    let page = op.get("/console/audit?target=P1").await;
    let actions: Vec<String> = rows(&page).into_iter().map(|r| r.action).collect();
    assert!(
        actions.contains(&"force_release_coupon".to_string()),
        "{actions:?}"
    );
    // API actions carry the API actor and no address in-process.
    assert!(actions.contains(&"create".to_string()), "{actions:?}");

    let page = op
        .get("/console/audit?actor=staff:operator-1&action=compensation")
        .await;
    let found = rows(&page);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        cell(&found[0].html, "audit-reason"),
        "apology for the delay"
    );
    assert_eq!(cell(&found[0].html, "audit-change"), "∅ → 待使用");
    assert_eq!(cell(&found[0].html, "audit-address"), "unknown");
    let stored: Option<String> =
        sqlx::query_scalar("SELECT address FROM events WHERE action = 'compensation'")
            .fetch_one(app.db.db.pool())
            .await
            .expect("stored");
    assert_eq!(stored.as_deref(), Some("unknown"));
}

#[tokio::test]
async fn job_actions_appear_under_their_job_actor_and_each_filter_narrows() {
    let app = spawn_app().await;
    let short = app.template(json!({"valid_seconds": 60})).await;
    let short = short["id"].as_str().unwrap_or_default().to_string();
    let c1 = app.claim("u1", &short).await["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    app.claim("u2", &short).await;
    app.advance(2 * 86_400); // two days later: 2026-11-13
    let done = app
        .service
        .expire_due_batch("job:expiry-sweep", 500)
        .await
        .expect("sweep");
    assert_eq!(done.count, 2);
    let mut b = signed_in(&app, Role::Admin).await;

    let (all, _) = all_pages(&mut b, "/console/audit").await;
    assert_eq!(all.len(), 4, "{all:?}"); // 2 claims, 2 expiries
    let (sweep, _) = all_pages(&mut b, "/console/audit?actor=job:expiry-sweep").await;
    assert_eq!(sweep.len(), 2);
    assert!(
        sweep
            .iter()
            .all(|r| r.action == "expire" && r.actor == "job:expiry-sweep")
    );
    assert!(
        sweep
            .iter()
            .all(|r| cell(&r.html, "audit-change") == "待使用 → 已过期"
                && cell(&r.html, "audit-actor") == "到期兜底扫描")
    );
    let (claims, _) = all_pages(&mut b, "/console/audit?action=claim").await;
    assert_eq!(claims.len(), 2);
    assert!(claims.iter().all(|r| r.actor.starts_with("api:")));
    let (one, _) = all_pages(&mut b, &format!("/console/audit?target={c1}")).await;
    assert_eq!(one.len(), 2);
    assert!(one.iter().all(|r| r.html.contains(&c1)));
    // Dates are business days (Asia/Shanghai), both ends inclusive.
    let (first_day, _) = all_pages(&mut b, "/console/audit?to=2026-11-11").await;
    assert_eq!(first_day.len(), 2);
    assert!(first_day.iter().all(|r| r.action == "claim"));
    let (later, _) = all_pages(&mut b, "/console/audit?from=2026-11-12").await;
    assert_eq!(later.len(), 2);
    assert!(later.iter().all(|r| r.action == "expire"));
    let (none, _) = all_pages(
        &mut b,
        "/console/audit?from=2026-11-12&to=2026-11-12&log=events",
    )
    .await;
    assert!(none.is_empty());
    // Filters combine.
    let (both, _) = all_pages(
        &mut b,
        &format!("/console/audit?target={c1}&actor=job:expiry-sweep"),
    )
    .await;
    assert_eq!(both.len(), 1);
    // A bad date is a 400, not an empty page.
    assert_eq!(b.get("/console/audit?from=yesterday").await.status, 400);
    assert_eq!(b.get("/console/audit?after=junk").await.status, 400);
}

#[tokio::test]
async fn pages_of_fifty_have_no_gaps_or_duplicates_and_the_csv_has_every_row() {
    let app = spawn_app().await;
    let t = app.template(json!({"total_stock": 500})).await;
    let t = t["id"].as_str().unwrap_or_default().to_string();
    // 130 claims, most at the same millisecond (the clock stands still):
    // the cursor's id breaks the ties.
    for i in 0..130 {
        if i % 40 == 0 {
            app.advance(1);
        }
        app.claim(&format!("u{i}"), &t).await;
    }
    let mut b = signed_in(&app, Role::Operator).await;
    let (all, pages) = all_pages(&mut b, "/console/audit?action=claim").await;
    assert_eq!(pages, 3);
    assert_eq!(all.len(), 130);
    let ids: Vec<i64> = all.iter().map(|r| r.id).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(ids, sorted, "newest first, each once");
    let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM events WHERE action = 'claim'")
        .fetch_one(app.db.db.pool())
        .await
        .expect("count");
    assert_eq!(stored, 130);

    let csv = b.get("/console/audit.csv?action=claim").await;
    assert_eq!(csv.status, 200);
    let lines: Vec<&str> = csv.text.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "id,at,actor,action,subject,coupon_id,order_no,from_status,to_status,reason,request_id,address,\
         at_local,actor_text,action_text,target_text,change_text,reason_text"
    );
    assert_eq!(lines.len(), 131);
    assert!(lines[1..].iter().all(|l| l.contains(",claim,coupon,")));
    // Beside the stored codes, the words and the local time people read.
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.contains("(UTC+8)") && l.contains(",领取,")),
        "{}",
        lines[1]
    );
    let csv_ids: Vec<i64> = lines[1..]
        .iter()
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect();
    assert_eq!(csv_ids, ids);
    assert!(
        csv.set_cookies.is_empty() || csv.text.starts_with("id,"),
        "a plain CSV"
    );
}

#[tokio::test]
async fn staff_account_changes_and_sign_ins_are_in_the_staff_log() {
    let app = spawn_app().await;
    let mut admin = signed_in(&app, Role::Admin).await;
    crate::common::console::add_staff(&app, "bob", Role::Support).await;
    let csrf = admin.csrf().await;
    let r = admin
        .post_form(
            "/console/staff/bob/role",
            &[("csrf", &csrf), ("role", "operator")],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.text);
    // A refused sign-in and a sign-out.
    let mut stranger = Browser::new(&app);
    let r = stranger.sign_in_as("bob", "not the password at all").await;
    assert_eq!(r.status, 303);

    let page = admin
        .get("/console/audit?log=staff&action=role_change")
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let found = rows(&page);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].actor, "staff:admin-1");
    assert_eq!(cell(&found[0].html, "audit-target"), "bob");
    assert_eq!(cell(&found[0].html, "audit-detail"), "客服 → 运营");
    assert_eq!(cell(&found[0].html, "audit-address"), "unknown");

    let page = admin.get("/console/audit?log=staff&target=bob").await;
    let actions: Vec<String> = rows(&page).into_iter().map(|r| r.action).collect();
    assert_eq!(
        actions,
        vec!["sign_in_failed", "role_change", "staff_create"],
        "newest first"
    );
    let page = admin.get("/console/audit?log=staff&actor=anonymous").await;
    assert_eq!(rows(&page).len(), 1);
    let page = admin.get("/console/audit?log=staff&action=sign_in").await;
    assert_eq!(rows(&page).len(), 1, "the admin's own sign-in");

    let csrf = admin.csrf().await;
    let r = admin.post_form("/logout", &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303);
    let mut other = signed_in(&app, Role::Operator).await;
    let page = other.get("/console/audit?log=staff&action=sign_out").await;
    let found = rows(&page);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].actor, "staff:admin-1");
    let csv = other.get("/console/audit.csv?log=staff").await;
    assert_eq!(csv.status, 200);
    assert!(
        csv.text
            .starts_with("id,at,actor,action,target,detail,address,at_local,actor_text,action_text,target_text,detail_text\r\n")
    );
    assert!(
        csv.text
            .contains(",role_change,bob,support -> operator,unknown,")
            && csv.text.contains(",bob,客服 → 运营\r\n"),
        "{}",
        csv.text
    );
}

#[tokio::test]
async fn support_staff_read_only_their_own_entries_whatever_actor_they_ask_for() {
    let app = spawn_app().await;
    let mut other = signed_in(&app, Role::Operator).await;
    // Someone else's action and sign-in are in the log.
    let cid = crate::common::fixtures::coupon_for(&app, "u-audit").await;
    let r = confirm(
        &mut other,
        &format!("/console/coupons/{cid}/invalidate"),
        &[("reason", "operator's own reason")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let mut support = signed_in(&app, Role::Support).await;
    for path in [
        "/console/audit",
        "/console/audit?log=staff",
        "/console/audit?actor=staff:operator-1",
        "/console/audit?log=staff&actor=staff:operator-1",
        "/console/audit.csv",
        "/console/audit.csv?log=staff&actor=staff:operator-1",
    ] {
        let r = support.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert!(
            !r.contains(r#"data-actor="staff:operator-1""#),
            "{path}: {}",
            r.text
        );
        assert!(!r.contains(",staff:operator-1,"), "{path}: {}", r.text);
        assert!(
            !r.contains("operator&#x27;s own reason") && !r.contains("operator's own reason"),
            "{path}"
        );
    }
    let page = support.get("/console/audit?log=staff").await;
    assert!(page.contains("audit-own-only"), "{}", page.text);
    assert!(
        page.contains("support-1"),
        "their own sign-in: {}",
        page.text
    );
    let mut admin = signed_in(&app, Role::Admin).await;
    for b in [&mut other, &mut admin] {
        assert_eq!(b.get("/console/audit").await.status, 200);
        assert_eq!(b.get("/console/audit.csv").await.status, 200);
    }
    let all = other.get("/console/audit?log=staff").await;
    assert!(
        all.contains("support-1") && all.contains("operator-1"),
        "{}",
        all.text
    );
}

/// How many rows the plan test loads: enough that a full scan would lose.
fn big_rows() -> i64 {
    match crate::common::store() {
        crate::common::Store::Postgres => 200_000,
        crate::common::Store::Sqlite => 20_000,
    }
}

#[tokio::test]
async fn every_audit_filter_reads_an_index_range_on_a_big_table() {
    let ts = crate::common::TestService::start().await;
    let pool = ts.db.db.pool();
    let n = big_rows();
    let (with, source) = crate::common::series(n);
    let base = 1_790_000_000_000_i64;
    sqlx::query(&format!(
        "{with}
         INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address)
         SELECT 'coupon', 'c' || CAST(g % 40000 AS TEXT), CASE WHEN g % 3 = 0 THEN 'O' || CAST(g % 20000 AS TEXT) END,
             'available', 'expired',
             CASE WHEN g % 10 = 0 THEN 'staff_release' WHEN g % 10 = 1 THEN 'claim' ELSE 'expire' END,
             CASE WHEN g % 10 = 0 THEN 'staff:s' || CAST(g % 30 AS TEXT) WHEN g % 10 = 1 THEN 'api:abc' ELSE 'job:expiry-sweep' END,
             NULL, NULL, {base} + g * 1000, NULL
         FROM {source}"
    ))
    .execute(pool)
    .await
    .expect("fill events");
    let analyze = match crate::common::store() {
        crate::common::Store::Postgres => "ANALYZE events",
        crate::common::Store::Sqlite => "ANALYZE",
    };
    sqlx::query(analyze).execute(pool).await.expect("analyze");

    let mut conn = pool.acquire().await.expect("conn");
    let day = 86_400_000;
    let cursor = Some(AuditCursor {
        at: base + n * 500,
        id: n / 2,
    });
    let text = |s: &str| Some(s.to_string());
    let mut checked = 0;
    for actor in [None, text("staff:s3")] {
        for action in [None, text("staff_release")] {
            for target in [None, text("c123")] {
                for (from_ms, until_ms) in [
                    (None, None),
                    (Some(base + 10 * day), None),
                    (Some(base), Some(base + day)),
                ] {
                    for before in [None, cursor] {
                        let q = AuditQuery {
                            actor: actor.clone(),
                            action: action.clone(),
                            target: target.clone(),
                            from_ms,
                            until_ms,
                        };
                        let sources: &[AuditSource] = if target.is_some() {
                            &[AuditSource::EventsByCoupon, AuditSource::EventsByOrder]
                        } else {
                            &[AuditSource::EventsByCoupon]
                        };
                        for source in sources {
                            let plan = explain_page(&mut conn, *source, &q, before, 51)
                                .await
                                .expect("explain")
                                .join("\n");
                            for full in ["Seq Scan on events", "SCAN events\n", "SCAN TABLE events"]
                            {
                                assert!(
                                    !format!("{plan}\n").contains(full),
                                    "{q:?} {before:?} {source:?} scans all events:\n{plan}"
                                );
                            }
                            assert!(
                                plan.contains("events_")
                                    || plan.contains("USING INTEGER PRIMARY KEY")
                                    || plan.contains("events_pkey"),
                                "{q:?} {source:?} uses an index:\n{plan}"
                            );
                            println!("{q:?} {before:?} {source:?}\n{plan}\n");
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    println!(
        "{checked} audit plans checked on {n} events ({:?})",
        crate::common::store()
    );
}

#[tokio::test]
async fn filters_take_what_the_page_shows_and_an_empty_result_says_what_was_searched() {
    let app = spawn_app().await;
    let mut op = signed_in(&app, Role::Operator).await;
    let cid = crate::common::fixtures::coupon_for(&app, "u-find").await;
    let code = app.coupon(&cid).await["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let r = confirm(
        &mut op,
        &format!("/console/coupons/{cid}/invalidate"),
        &[("reason", "found by words")],
    )
    .await;
    assert_eq!(r.status, 303, "{}", r.text);
    let typed_code = code.replace('-', "").to_lowercase();
    let label = couponkeeper::i18n::Lang::Zh.t("event-action-invalidate");
    let q = form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("actor", "operator-1"),
            ("action", label),
            ("target", typed_code.as_str()),
        ])
        .finish();
    let page = op.get(&format!("/console/audit?{q}")).await;
    assert_eq!(page.status, 200);
    assert!(page.contains("found by words"), "{}", page.text);
    assert!(!page.contains("audit-empty"), "{}", page.text);
    // The pickers show the person and the action in words.
    assert!(
        page.contains(r#"value="invalidate" selected"#),
        "{}",
        page.text
    );
    assert!(
        page.contains(r#"value="staff:operator-1" selected"#),
        "{}",
        page.text
    );
    // Nothing found: the page says what it looked for.
    let page = op
        .get("/console/audit?target=NOPE-NOPE&action=expire")
        .await;
    assert!(page.contains("audit-empty"), "{}", page.text);
    let searched = page
        .text
        .split("data-testid=\"audit-searched\">")
        .nth(1)
        .unwrap_or_default();
    assert!(searched.contains("NOPE-NOPE"), "{searched}");
}

#[tokio::test]
async fn the_staff_log_says_each_change_in_words_with_names_instead_of_ids_in_both_languages() {
    use couponkeeper::domain::compensation::RulesInput;
    use couponkeeper::domain::ids::TemplateId;
    use couponkeeper::domain::staff::StaffName;
    use couponkeeper::domain::wakeup::{WakeupRuleInput, WakeupRuleSpec};
    use couponkeeper::service::Ctx;
    use couponkeeper::service::support::Authority;
    let app = spawn_app().await;
    let template = TemplateId::from_wire(
        app.template(json!({"name": "Autumn 20 off"})).await["id"]
            .as_str()
            .expect("id"),
    );
    let name = StaffName::parse("olga").expect("a staff name");
    let ctx = Ctx::new(name.actor(), None);
    let olga = Authority::Staff {
        name,
        role: Role::Operator,
    };
    app.service
        .create_code_batch(
            &ctx,
            None,
            template.clone(),
            Some(20),
            Some("AUT".into()),
            Some(8),
        )
        .await
        .expect("a code batch");
    app.service
        .create_wakeup_rule_as(
            &ctx,
            &olga,
            WakeupRuleSpec::parse(WakeupRuleInput {
                name: Some("Last call".into()),
                lead_seconds: Some(3 * 86_400),
                active_within_seconds: Some(30 * 86_400),
                template_ids: vec![template.to_string()],
                bonus_template_id: None,
                control_percent: Some(10),
            })
            .expect("a well-formed rule"),
        )
        .await
        .expect("a wake-up rule");
    app.service
        .put_compensation_rules(
            &ctx,
            &olga,
            None,
            RulesInput {
                support_max_cents: Some(3000),
                support_daily_cents: Some(50_000),
                presets: Some(vec![]),
            },
            Some("tighter caps".into()),
        )
        .await
        .expect("new rules");

    let mut admin = signed_in(&app, Role::Admin).await;
    let page = admin.get("/console/audit?log=staff&actor=staff:olga").await;
    assert_eq!(page.status, 200, "{}", page.text);
    let found = rows(&page);
    let detail = |action: &str| {
        let row = found
            .iter()
            .find(|r| r.action == action)
            .unwrap_or_else(|| panic!("a {action} row in {found:?}"));
        (
            cell(&row.html, "audit-target"),
            cell(&row.html, "audit-detail"),
        )
    };
    let (target, words) = detail("code_batch_create");
    assert_eq!(target, "「Autumn 20 off」的兑换码批次");
    assert_eq!(
        words,
        "模板「Autumn 20 off」，20 个兑换码，AUT，随机部分 8 位"
    );
    let (target, words) = detail("wakeup_rule_create");
    assert_eq!(target, "Last call");
    assert_eq!(
        words,
        "到期3 天前唤醒 30 天内活跃的顾客，适用 Autumn 20 off，唤醒券 不送，对照组 10%"
    );
    let (target, words) = detail("compensation_rules_change");
    assert_eq!(target, "补偿规则");
    assert!(
        words.starts_with("版本 1 → 2；") && words.ends_with("(tighter caps)"),
        "{words}"
    );
    for id_or_code in [
        "tpl_",
        "cbt_",
        "wkr_",
        "support_max_cents",
        "template_id",
        "{",
    ] {
        assert!(
            !found
                .iter()
                .any(|r| cell(&r.html, "audit-detail").contains(id_or_code)
                    || cell(&r.html, "audit-target").contains(id_or_code)),
            "{id_or_code} shown: {found:?}"
        );
    }

    admin.accept_language = Some("en".into());
    let page = admin.get("/console/audit?log=staff&actor=staff:olga").await;
    let found = rows(&page);
    let batch = found
        .iter()
        .find(|r| r.action == "code_batch_create")
        .expect("the batch row");
    assert_eq!(
        cell(&batch.html, "audit-detail"),
        "template “Autumn 20 off”, 20 codes, AUT, 8 random characters"
    );
    assert!(page.contains("Compensation rules"), "{}", page.text);
}
