//! No page shows a link its reader cannot open: on the demo data, signed
//! in as each role, a crawler follows every console link of every page it
//! reaches (bounded) and finds no 403, 404, 405 or 5xx.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::common::console::{Browser, signed_in};
use crate::common::{epoch, spawn_app};
use couponkeeper::config::Config;
use couponkeeper::domain::staff::Role;

/// Most pages one role's crawl opens.
const MAX_PAGES: usize = 400;
/// Most addresses of one shape (the path with its ids folded) opened: one
/// coupon page stands for every coupon page.
const MAX_PER_SHAPE: usize = 3;

/// The console links of `html`: `href="/console..."` (and the front page),
/// entities decoded, fragments dropped.
fn links(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = html;
    // Bounded by the page's length: each match consumes some of it.
    while let Some(i) = rest.find("href=\"") {
        rest = &rest[i + 6..];
        let Some(end) = rest.find('"') else { break };
        let href = rest[..end].replace("&amp;", "&");
        rest = &rest[end..];
        let href = href.split('#').next().unwrap_or_default().to_string();
        if href.starts_with("/console") {
            out.push(href);
        }
    }
    out
}

/// The shape of an address: each path segment that looks like an id or a
/// number becomes `*`, and the query keeps only its names.
fn shape(href: &str) -> String {
    let (path, query) = href.split_once('?').unwrap_or((href, ""));
    let segs: Vec<String> = path
        .split('/')
        .map(|s| {
            let idish = s.contains('_') && s.chars().any(|c| c.is_ascii_digit())
                || s.chars().filter(|c| c.is_ascii_digit()).count() >= 3
                || s.contains('%')
                || s.contains('-') && s.chars().any(|c| c.is_ascii_digit());
            if idish {
                "*".to_string()
            } else {
                s.to_string()
            }
        })
        .collect();
    let names: BTreeSet<&str> = query
        .split('&')
        .filter_map(|kv| kv.split('=').next())
        .filter(|k| !k.is_empty())
        .collect();
    format!(
        "{}?{}",
        segs.join("/"),
        names.into_iter().collect::<Vec<_>>().join("&")
    )
}

/// Crawls from `/console` as `b`; the addresses that answered badly, with
/// their status and the page that linked them.
async fn crawl(b: &mut Browser<'_>) -> (usize, Vec<String>) {
    let mut queue: VecDeque<(String, String)> = VecDeque::from([("/console".into(), "-".into())]);
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut per_shape: BTreeMap<String, usize> = BTreeMap::new();
    let mut bad = Vec::new();
    let mut opened = 0;
    while let Some((href, from)) = queue.pop_front() {
        if opened >= MAX_PAGES {
            break;
        }
        if !seen.insert(href.clone()) {
            continue;
        }
        let n = per_shape.entry(shape(&href)).or_insert(0);
        if *n >= MAX_PER_SHAPE {
            continue;
        }
        *n += 1;
        opened += 1;
        let page = b.get(&href).await;
        let ok = matches!(page.status, 200 | 303);
        if !ok {
            bad.push(format!("{} {href} (linked from {from})", page.status));
            continue;
        }
        if page.status == 303 {
            // A page that sends the reader on (a sign-out would be a POST).
            if let Some(to) = page.location.clone().filter(|l| l.starts_with("/console")) {
                queue.push_back((to, href.clone()));
            }
            continue;
        }
        if page
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
        {
            for link in links(&page.text) {
                if !seen.contains(&link) {
                    queue.push_back((link, href.clone()));
                }
            }
        }
    }
    (opened, bad)
}

#[tokio::test]
async fn every_console_link_opens_for_every_role_on_the_demo_data() {
    let app = spawn_app().await;
    couponkeeper::demo::load(&app.db.db, &Config::default(), epoch())
        .await
        .unwrap_or_else(|e| panic!("demo load failed: {e}"));
    let mut report = Vec::new();
    for role in [Role::Support, Role::Operator, Role::Admin] {
        let mut b = signed_in(&app, role).await;
        let (opened, bad) = crawl(&mut b).await;
        println!("{role:?}: {opened} pages opened, {} bad", bad.len());
        assert!(opened > 20, "{role:?} reached only {opened} pages");
        report.extend(bad.into_iter().map(|b| format!("{role:?}: {b}")));
    }
    assert!(
        report.is_empty(),
        "links that do not open:\n{}",
        report.join("\n")
    );
}

#[tokio::test]
async fn an_address_only_a_form_posts_to_sends_a_browser_to_its_page() {
    let app = spawn_app().await;
    let t = app.template(serde_json::json!({})).await;
    let tid = t["id"].as_str().unwrap_or_default();
    let mut b = signed_in(&app, Role::Admin).await;
    for (path, to) in [
        (
            format!("/console/templates/{tid}/pause"),
            format!("/console/templates/{tid}"),
        ),
        (
            format!("/console/templates/{tid}/resume"),
            format!("/console/templates/{tid}"),
        ),
        (
            format!("/console/templates/{tid}/edit"),
            format!("/console/templates/{tid}"),
        ),
        (
            format!("/console/templates/{tid}/code-batches"),
            format!("/console/templates/{tid}"),
        ),
        (
            "/console/staff/admin-1/role".to_string(),
            "/console/staff".to_string(),
        ),
        (
            "/console/reconciliation/run".to_string(),
            "/console/reconciliation".to_string(),
        ),
    ] {
        let r = b.get(&path).await;
        assert_eq!(
            (r.status, r.location.as_deref()),
            (303, Some(to.as_str())),
            "{path}: {}",
            r.text
        );
        assert_eq!(b.get(&to).await.status, 200, "{to}");
    }
    // The API keeps its JSON 405.
    let r = app.get("/api/v1/orders/N1/final-payment").await;
    assert_eq!(r.status, 405, "{}", r.text);
    // The template page's forms come back to their section.
    let page = b.get(&format!("/console/templates/{tid}")).await;
    assert!(page.contains("/edit#template-manage\""), "{}", page.text);
    assert!(page.contains("/pause#template-manage\""), "{}", page.text);
}
