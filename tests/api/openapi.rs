//! The OpenAPI document's invariants: every route the router serves is in
//! it with its methods, the operator endpoints need no token, every API
//! operation lists the statuses every route may answer, every link names
//! real operations and parameters, and every status a probe of each
//! operation gets is one the document lists for it. `.ci/fuzz`
//! (schemathesis) goes further; this runs with `cargo test`.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{TOKEN, spawn_app};
use couponkeeper::api::openapi::{IDEMPOTENCY_HEADER, OPEN_PATHS, document};
use serde_json::{Value, json};

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// `(path, method)` of every route in the router's source: the
/// `.route("...", get(..).post(..))` calls of `src/api/mod.rs` (under
/// `/api/v1`) and `src/http/router.rs`.
fn routes_in_source() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (file, prefix) in [("src/api/mod.rs", "/api/v1"), ("src/http/router.rs", "")] {
        let text = std::fs::read_to_string(file).expect("router source");
        for call in text.split(".route(").skip(1) {
            let Some(path) = call.split('"').nth(1) else {
                continue;
            };
            // The handlers of this route: up to the closing parenthesis of
            // `.route(`.
            let mut depth = 1;
            let mut end = call.len();
            for (i, ch) in call.char_indices() {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let handlers = &call[..end];
            for method in METHODS {
                let called = handlers.match_indices(&format!("{method}(")).any(|(i, _)| {
                    i == 0 || !handlers[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                });
                if called {
                    out.insert((format!("{prefix}{path}"), method.to_string()));
                }
            }
        }
    }
    out
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if METHODS.contains(&method.as_str()) {
                out.push((path.clone(), method.clone(), op));
            }
        }
    }
    out
}

#[test]
fn every_route_the_router_serves_is_documented_with_its_methods_and_nothing_else() {
    let doc = document();
    let source = routes_in_source();
    assert!(
        source.len() >= 39,
        "the source scan found only {} routes",
        source.len()
    );
    let documented: BTreeSet<(String, String)> = operations(doc)
        .into_iter()
        .map(|(p, m, _)| (p, m))
        .collect();
    let missing: Vec<_> = source.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&source).collect();
    assert!(
        missing.is_empty(),
        "routes not in the document: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "documented routes the router lacks: {extra:?}"
    );
}

#[test]
fn the_operator_endpoints_and_the_document_need_no_token_and_every_api_operation_does() {
    let doc = document();
    assert_eq!(doc["security"], json!([{"bearer": []}]));
    for (path, method, op) in operations(doc) {
        if OPEN_PATHS.contains(&path.as_str()) {
            assert_eq!(op["security"], json!([]), "{method} {path} must be open");
            assert!(op["responses"].get("401").is_none(), "{method} {path}");
        } else {
            assert!(
                op.get("security").is_none(),
                "{method} {path} must keep the document's bearer security"
            );
        }
    }
}

#[test]
fn every_api_operation_lists_the_statuses_every_route_may_answer() {
    let doc = document();
    for (path, method, op) in operations(doc) {
        if OPEN_PATHS.contains(&path.as_str()) {
            continue;
        }
        let responses = op["responses"].as_object().expect("responses");
        let write = method != "get";
        let mut expected = vec!["401", "429", "503"];
        if path.contains('{') || write {
            expected.push("400");
        }
        // Objects named by the path may not exist; a user id names no
        // object (an unknown user has no coupons).
        if path.contains("{id}") || path.contains("{order_no}") {
            expected.push("404");
        }
        if write {
            expected.extend(["409", "413", "422"]);
        }
        for status in expected {
            assert!(
                responses.contains_key(status),
                "{method} {path} does not list {status}"
            );
        }
        for (status, r) in responses {
            let code: u16 = status.parse().expect("numeric status");
            if code >= 400 {
                assert_eq!(
                    r.pointer("/content/application~1json/schema/$ref"),
                    Some(&json!("#/components/schemas/ErrorBody")),
                    "{method} {path} {status} must be the error shape"
                );
            }
        }
        assert!(
            responses["429"].pointer("/headers/Retry-After").is_some(),
            "{method} {path}: 429 without Retry-After"
        );
        let takes_key = op["parameters"].as_array().is_some_and(|ps| {
            ps.iter()
                .any(|p| p["name"] == IDEMPOTENCY_HEADER && p["in"] == "header")
        });
        assert_eq!(
            takes_key, write,
            "{method} {path}: Idempotency-Key on writes only"
        );
    }
}

#[test]
fn every_parameter_has_a_place_and_query_parameters_are_never_required() {
    for (path, method, op) in operations(document()) {
        for p in op["parameters"].as_array().into_iter().flatten() {
            let place = p["in"].as_str().unwrap_or("");
            let name = p["name"].as_str().unwrap_or("");
            match place {
                "path" => {
                    assert!(
                        path.contains(&format!("{{{name}}}")),
                        "{method} {path}: {name}"
                    );
                    assert_eq!(p["required"], true);
                    assert!(p["schema"]["maxLength"].is_u64(), "{method} {path}: {name}");
                }
                "query" => assert_eq!(p["required"], false, "{method} {path}: {name}"),
                "header" => {}
                other => panic!("{method} {path}: {name} in {other:?}"),
            }
        }
    }
}

#[test]
fn every_required_body_field_is_a_property_and_every_link_names_a_real_operation() {
    let doc = document();
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        for field in schema["required"].as_array().into_iter().flatten() {
            let field = field.as_str().expect("field name");
            assert!(
                schema["properties"].get(field).is_some(),
                "{name} requires {field}, which it does not have"
            );
        }
    }
    let ops: BTreeMap<String, &Value> = operations(doc)
        .into_iter()
        .filter_map(|(_, _, op)| Some((op["operationId"].as_str()?.to_string(), op)))
        .collect();
    let mut count = 0;
    for (source, op) in &ops {
        for (status, r) in op["responses"].as_object().expect("responses") {
            for (name, link) in r["links"].as_object().into_iter().flatten() {
                count += 1;
                let target = link["operationId"].as_str().unwrap_or("");
                let Some(target_op) = ops.get(target) else {
                    panic!("{source} {status} {name} links to {target:?}, which does not exist");
                };
                for parameter in link["parameters"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                {
                    let known = target_op["parameters"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|p| p["name"] == parameter.as_str());
                    assert!(
                        known,
                        "{source} {status} {name}: {target} has no {parameter}"
                    );
                }
            }
        }
    }
    assert!(count >= 30, "only {count} links");
    for chain in ["claim_coupon", "create_order", "pay_order", "pay_deposit"] {
        assert!(
            ops[chain]["responses"]
                .as_object()
                .is_some_and(|rs| rs.values().any(|r| r.get("links").is_some())),
            "{chain} leads nowhere"
        );
    }
}

/// A path with every `{param}` filled with `value`.
fn fill(path: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        out.push_str(value);
        rest = rest[start..].split_once('}').map(|(_, r)| r).unwrap_or("");
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn every_status_a_probe_of_each_operation_gets_is_one_the_document_lists() {
    let app = spawn_app().await;
    let doc = document();
    let mut probes = 0;
    for (path, method, op) in operations(doc) {
        let documented = op["responses"].as_object().expect("responses");
        // Without a token, with an empty body, with a malformed body, with
        // an unknown id, with a blank segment, with a bad key.
        let cases: Vec<(Option<&str>, &str, Option<&str>, String)> = vec![
            (None, "{}", None, fill(&path, "unknown")),
            (Some(TOKEN), "{}", None, fill(&path, "unknown")),
            (Some(TOKEN), "[1,", None, fill(&path, "unknown")),
            (Some(TOKEN), "{\"reason\": 5}", None, fill(&path, "u%20x")),
            (Some(TOKEN), "{}", Some(""), fill(&path, &"x".repeat(300))),
        ];
        for (token, body, key, url) in cases {
            let method_ =
                reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let mut req = app
                .client
                .request(method_, format!("{}{url}", app.base))
                .header("content-type", "application/json");
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            if method != "get" {
                req = req.body(body.to_string());
            }
            if let Some(k) = key {
                req = req.header(IDEMPOTENCY_HEADER, k);
            }
            let r = req.send().await.expect("request");
            let status = r.status().as_u16().to_string();
            probes += 1;
            assert!(
                documented.contains_key(&status),
                "{method} {url} answered {status}, which the document does not list for {path}: {}",
                r.text().await.unwrap_or_default()
            );
        }
    }
    assert!(probes >= 5 * 39, "only {probes} probes");
}

#[tokio::test]
async fn a_nul_character_anywhere_in_a_request_is_refused_with_400_and_changes_nothing() {
    let app = spawn_app().await;
    let template = app.template(json!({})).await;
    let id = template["id"].as_str().expect("template id").to_string();
    for (path, body) in [
        (
            format!("/api/v1/templates/{id}/pause"),
            json!({"reason": "stock\u{0}check"}),
        ),
        (
            "/api/v1/users/u1/coupons".to_string(),
            json!({"template_id": id, "note": ["a\u{0}"]}),
        ),
        (
            "/api/v1/presale-campaigns".to_string(),
            json!({"name\u{0}": 1}),
        ),
    ] {
        let r = app.post(&path, body).await;
        assert_eq!(
            (r.status, r.code()),
            (400, "invalid_request"),
            "{path}: {}",
            r.text
        );
    }
    let r = app.get("/api/v1/coupons/cpn%00x").await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = app.get("/api/v1/orders?order_no_prefix=a%00").await;
    assert_eq!(
        (r.status, r.field()),
        (400, "order_no_prefix"),
        "{}",
        r.text
    );
    let after = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(
        after.body["status"], "active",
        "the pause must not have happened"
    );
    let coupons = app.get("/api/v1/users/u1/coupons").await;
    assert_eq!(coupons.body["coupons"], json!([]));
}

#[tokio::test]
async fn a_body_that_is_not_an_object_is_refused_and_a_whole_float_counts_as_an_integer() {
    let app = spawn_app().await;
    let template = app.template(json!({})).await;
    let id = template["id"].as_str().expect("template id").to_string();
    let auth = format!("Bearer {TOKEN}");
    let auth = [("authorization", auth.as_str())];
    let r = app
        .post_raw("/api/v1/users/u1/coupons", format!("[\"{id}\"]"), &auth)
        .await;
    assert_eq!((r.status, r.code()), (400, "invalid_request"), "{}", r.text);
    let r = app
        .post_raw("/api/v1/users/u1/self-check-link", "[]", &auth)
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = app
        .patch(
            &format!("/api/v1/templates/{id}"),
            json!({"total_stock": 5000.0}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app
        .patch(
            &format!("/api/v1/templates/{id}"),
            json!({"total_stock": 6000.5}),
        )
        .await;
    assert_eq!((r.status, r.field()), (400, "total_stock"), "{}", r.text);
}

#[tokio::test]
async fn an_empty_body_reads_as_no_fields_but_a_body_of_only_spaces_is_not_json() {
    let app = spawn_app().await;
    let template = app.template(json!({})).await;
    let id = template["id"].as_str().expect("template id").to_string();
    let auth = format!("Bearer {TOKEN}");
    let auth = [("authorization", auth.as_str())];
    let pause = format!("/api/v1/templates/{id}/pause");
    // No bytes at all: no fields, so the missing reason is named.
    let r = app.post_raw(&pause, "", &auth).await;
    assert_eq!((r.status, r.field()), (400, "reason"), "{}", r.text);
    // Only spaces: not JSON at all, refused before any field is read.
    for blank in [" ", "\n", " \t "] {
        let r = app.post_raw(&pause, blank, &auth).await;
        assert_eq!(
            (r.status, r.code(), r.field()),
            (400, "invalid_request", ""),
            "{blank:?}: {}",
            r.text
        );
        assert!(r.text.contains("not a valid JSON"), "{blank:?}: {}", r.text);
    }
    let r = app.get(&format!("/api/v1/templates/{id}")).await;
    assert_eq!(r.body["status"], "active", "{}", r.text);
}
