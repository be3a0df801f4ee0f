//! `GET /api/v1/openapi.json`: the OpenAPI document, generated from the
//! handlers' annotations and the view types, so it cannot drift from code.

use axum::response::{IntoResponse, Response};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    activity, bulk, campaigns, codes, compensation, coupons, expirations, orders, reminder_popups,
    reports, self_check, support, templates,
};
use crate::error::{ErrorBody, ErrorDetail};
use crate::service::views::{
    CampaignView, CouponView, EventView, OrderView, QuoteView, TemplateView,
};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "couponkeeper", description = "Coupon lifecycle service: the contract of API.md"),
    paths(
        templates::create, templates::get, templates::list, templates::pause, templates::resume, templates::patch,
        coupons::claim, coupons::list, coupons::get, coupons::options, reminder_popups::seen,
        campaigns::create, campaigns::get, campaigns::list, campaigns::patch,
        orders::create, orders::list, orders::get, orders::pay, orders::deposit_payment,
        orders::final_payment_quote, orders::final_payment, orders::cancel, orders::refund,
        orders::refund_lines, orders::list_refunds,
        expirations::pending,
        support::health_check, support::release, support::invalidate, support::compensation, support::repair_link, support::mark_coupon_used, support::return_coupon, support::reconciliation,
        self_check::issue_link,
        compensation::get_rules, compensation::put_rules, compensation::ledger,
        activity::record,
        crate::http::ops::healthz, crate::http::ops::readyz, crate::http::ops::metrics,
        bulk::start_issue, bulk::start_void, bulk::get, bulk::results,
        reports::template, reports::campaign,
        codes::create_batch, codes::get_batch, codes::codes_csv, codes::void_batch, codes::redeem,
    ),
    components(schemas(
        TemplateView, CouponView, crate::service::jobs::PendingExpirations, crate::service::jobs::HourBucket, EventView, CampaignView, OrderView, QuoteView, ErrorBody, ErrorDetail,
        templates::CreateTemplateBody, templates::ClaimingBody, templates::PatchTemplateBody, crate::service::templates::TemplatePage, crate::service::views::StatusCounts, coupons::ClaimBody, coupons::CouponList, coupons::CartBody,
        crate::service::checkout::CouponOptions, crate::service::checkout::UsableCoupon, crate::service::checkout::UnusableCoupon, crate::service::checkout::OptionWarning, crate::service::checkout::ExpiringSoonView,
        crate::service::reminder_popups::ReminderPopupView, reminder_popups::PopupsSeenBody,
        campaigns::CreateCampaignBody, campaigns::PatchCampaignBody, crate::service::campaigns::CampaignPage, crate::service::campaigns::CampaignListItem, crate::service::campaigns::CampaignOrderCounts, orders::CreateOrderBody, orders::ReasonBody, orders::CancelBody, orders::EmptyBody, crate::service::orders::OrderPage,
        orders::LineBody, orders::RefundBody, orders::RefundLineBody, crate::service::views::OrderLineView, crate::service::views::LineDiscountView, crate::service::views::OrderCouponView, crate::service::views::QuoteCouponView,
        crate::service::views::RefundView, crate::service::views::RefundLineView, crate::service::views::RefundCouponView, crate::service::views::RefundList,
        crate::service::support::HealthReport, crate::service::reconcile::ReconcileReport, crate::service::reconcile::AnomalyView, crate::service::support::CheckView, crate::service::support::ActionView,
        support::ReleaseBody, support::InvalidateBody, support::CompensationBody, support::RepairLinkBody, support::MarkUsedBody,
        self_check::SelfCheckLinkBody, crate::service::self_check::SelfCheckLink,
        compensation::RulesBody, compensation::PresetBody, crate::service::compensation::RulesView, crate::service::compensation::PresetView,
        crate::service::compensation::LedgerPage, crate::service::compensation::LedgerEntryView, crate::service::compensation::LedgerTotals,
        activity::ActivityBody,
        crate::service::bulk::JobView, bulk::BulkVoidBody,
        crate::service::reports::Report, crate::service::reports::ReportDay, crate::service::reports::ReportTotals,
        codes::CodeBatchBody, codes::VoidBatchBody, codes::RedemptionBody, crate::service::codes::CodeBatchView,
    )),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
)]
pub struct ApiDoc;

/// The served document: the generated one, completed by [`complete`].
/// Built once; it never changes while the process runs.
pub fn document() -> &'static serde_json::Value {
    static DOC: std::sync::LazyLock<serde_json::Value> = std::sync::LazyLock::new(|| {
        // Serializing utoipa's own types into a `Value` cannot fail (no
        // map with non-string keys, no foreign serializer).
        let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
        input_rules(&mut doc);
        parameter_rules(&mut doc);
        complete(&mut doc);
        doc
    });
    &DOC
}

pub async fn serve() -> Response {
    axum::Json(document()).into_response()
}

/// The operator endpoints outside `/api/v1` and the document itself: no
/// bearer token (API.md, Service).
pub const OPEN_PATHS: [&str; 4] = ["/healthz", "/readyz", "/metrics", "/api/v1/openapi.json"];

/// The header of every write's idempotency key (docs/src/integration/idempotency.md).
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";

const WRITE_METHODS: [&str; 3] = ["post", "put", "patch"];

/// What the annotations cannot say once per handler but every route of
/// `/api/v1` shares, added to the generated document:
///
/// - the statuses any API route may answer besides its own: 401 (no or a
///   wrong token), 429 (`COUPONKEEPER_RATE_API`), 503 (database
///   unreachable, or a handler that failed: nothing changed); 400 where the
///   route takes a path segment, a query or a body; and on writes 413 (body
///   over 64 KiB), 422 `idempotency_key_reused` and 409
///   `idempotency_in_progress`, with the `Idempotency-Key` header;
/// - no security on `/healthz`, `/readyz`, `/metrics` and this document;
/// - the document's own path;
/// - OpenAPI links from each created object to the operations on it
///   ([`links`]), so a stateful client can chain claim -> order -> pay.
pub fn complete(doc: &mut serde_json::Value) {
    use serde_json::{Value, json};

    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    paths.insert(
        "/api/v1/openapi.json".to_string(),
        json!({"get": {
            "tags": ["service"],
            "operationId": "openapi_document",
            "summary": "This OpenAPI document.",
            "responses": {"200": {"description": "the OpenAPI 3.1 document",
                "content": {"application/json": {"schema": {"type": "object"}}}}}
        }}),
    );
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        let open = OPEN_PATHS.contains(&path.as_str());
        let has_path_params = path.contains('{');
        for (method, op) in item.iter_mut() {
            let Some(op) = op.as_object_mut() else {
                continue;
            };
            if open {
                op.insert("security".to_string(), json!([]));
                continue;
            }
            let write = WRITE_METHODS.contains(&method.as_str());
            let takes_query = op
                .get("parameters")
                .and_then(Value::as_array)
                .is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
            if write {
                let params = op
                    .entry("parameters")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Some(params) = params.as_array_mut() {
                    params.push(idempotency_parameter());
                }
            }
            let responses = op
                .entry("responses")
                .or_insert_with(|| Value::Object(Default::default()));
            let Some(responses) = responses.as_object_mut() else {
                continue;
            };
            let mut add = |status: &str, text: &str| {
                let entry = responses
                    .entry(status.to_string())
                    .or_insert_with(|| error_response(""));
                let description = entry["description"].as_str().unwrap_or("");
                let merged = if description.is_empty() {
                    text.to_string()
                } else if description.contains(text) {
                    description.to_string()
                } else {
                    format!("{description}; {text}")
                };
                entry["description"] = Value::String(merged);
            };
            add("401", "unauthorized: no or a wrong bearer token");
            add(
                "503",
                "unavailable: the database cannot be reached (nothing changed)",
            );
            if has_path_params || takes_query || write {
                add(
                    "400",
                    "invalid_request (with `field` when one field is at fault)",
                );
            }
            if write {
                add("413", "invalid_request: the body is over 64 KiB");
                add(
                    "422",
                    "idempotency_key_reused: the key came with another request",
                );
                add(
                    "409",
                    "idempotency_in_progress: the key's first request is still running",
                );
            }
            add(
                "429",
                "rate_limited (`COUPONKEEPER_RATE_API`); see `Retry-After`",
            );
            if let Some(r) = responses.get_mut("429") {
                r["headers"] = json!({"Retry-After": {
                    "description": "seconds until a request is admitted again",
                    "schema": {"type": "string", "pattern": "^[0-9]+$"}
                }});
            }
        }
    }
    links(paths);
    optional_bodies(doc);
    no_nul(doc);
}

/// States the refusal of NUL ([`NO_NUL_PATTERN`]) on every string of the
/// request bodies and parameters that no other pattern, word list or
/// format already keeps NUL-free, and on the fields a body may carry
/// beyond its own (ignored, but checked like the rest).
fn no_nul(doc: &mut serde_json::Value) {
    use serde_json::{Value, json};

    fn visit(schema: &mut Value) {
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        let is_string = match obj.get("type") {
            Some(Value::String(t)) => t == "string",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
            _ => false,
        };
        if is_string
            && !obj.contains_key("pattern")
            && !obj.contains_key("enum")
            && !obj.contains_key("format")
        {
            obj.insert("pattern".into(), json!(NO_NUL_PATTERN));
        }
        for key in ["properties"] {
            if let Some(props) = obj.get_mut(key).and_then(Value::as_object_mut) {
                props.values_mut().for_each(visit);
            }
        }
        // An object inside a body (an order line): its other keys and
        // values are held to the same rule as the body's own.
        if obj.get("type") == Some(&json!("object")) && obj.contains_key("properties") {
            obj.entry("propertyNames")
                .or_insert_with(|| json!({"pattern": NO_NUL_PATTERN}));
            obj.entry("additionalProperties")
                .or_insert_with(|| json!({"$ref": "#/components/schemas/JsonWithoutNul"}));
        }
        if let Some(items) = obj.get_mut("items") {
            visit(items);
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(list) = obj.get_mut(key).and_then(Value::as_array_mut) {
                list.iter_mut().for_each(visit);
            }
        }
    }

    let any_json = "#/components/schemas/JsonWithoutNul";
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        for (name, schema) in schemas.iter_mut() {
            if !name.ends_with("Body") {
                continue;
            }
            visit(schema);
            if let Some(obj) = schema.as_object_mut() {
                obj.insert("propertyNames".into(), json!({"pattern": NO_NUL_PATTERN}));
                obj.insert("additionalProperties".into(), json!({"$ref": any_json}));
            }
        }
        schemas.insert(
            "JsonWithoutNul".into(),
            json!({
                "description": "Any JSON value without the NUL character in a string or key.",
                "anyOf": [
                    {"type": ["number", "boolean", "null"]},
                    {"type": "string", "pattern": NO_NUL_PATTERN},
                    {"type": "array", "items": {"$ref": any_json}},
                    {"type": "object", "propertyNames": {"pattern": NO_NUL_PATTERN},
                        "additionalProperties": {"$ref": any_json}}
                ]
            }),
        );
    }
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for op in paths
            .values_mut()
            .filter_map(Value::as_object_mut)
            .flat_map(|item| item.values_mut())
        {
            if let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) {
                for p in params.iter_mut() {
                    if let Some(schema) = p.get_mut("schema") {
                        visit(schema);
                    }
                }
            }
        }
    }
}

/// Every JSON body handler reads an empty body as `{}`
/// ([`super::extract::JsonBody`]): a body whose schema requires no field
/// may be left out.
fn optional_bodies(doc: &mut serde_json::Value) {
    use serde_json::Value;
    let schemas = doc
        .pointer("/components/schemas")
        .cloned()
        .unwrap_or(Value::Null);
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        let Some(body) = op.get_mut("requestBody").and_then(Value::as_object_mut) else {
            continue;
        };
        let name = body
            .get("content")
            .and_then(|c| c.pointer("/application~1json/schema/$ref"))
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            .unwrap_or("");
        let requires_nothing = schemas[name]["required"]
            .as_array()
            .is_none_or(|r| r.is_empty())
            && schemas[name].get("anyOf").is_none()
            && schemas[name].get("oneOf").is_none();
        if requires_nothing {
            body.insert("required".to_string(), Value::Bool(false));
        }
    }
}

fn idempotency_parameter() -> serde_json::Value {
    serde_json::json!({
        "name": IDEMPOTENCY_HEADER,
        "in": "header",
        "required": false,
        "description": "1-255 visible ASCII characters; the same key and request within 24 h replays the first answer with `Idempotent-Replayed: true`",
        "schema": {"type": "string", "minLength": 1, "maxLength": crate::service::idempotency::MAX_KEY_LEN, "pattern": "^[!-~]([\t -~]*[!-~])?$"}
    })
}

fn error_response(description: &str) -> serde_json::Value {
    serde_json::json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    })
}

/// One link: source operation, status, link name, target operation,
/// parameters, request body.
type Link<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    serde_json::Value,
    Option<serde_json::Value>,
);

/// The links between operations: `(source operation, status, link name,
/// target operation, parameters, request body)`. Expressions follow
/// OpenAPI's runtime expressions.
fn links(paths: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::{Value, json};
    let id = || json!({"id": "$response.body#/id"});
    let order = || json!({"order_no": "$response.body#/order_no"});
    let same_order = || json!({"order_no": "$request.path.order_no"});
    let table: Vec<Link> = vec![
        (
            "create_template",
            "201",
            "GetTemplate",
            "get_template",
            id(),
            None,
        ),
        (
            "create_template",
            "201",
            "EditTemplate",
            "edit_template",
            id(),
            None,
        ),
        (
            "create_template",
            "201",
            "PauseTemplate",
            "pause_template",
            id(),
            None,
        ),
        (
            "create_template",
            "201",
            "ResumeTemplate",
            "resume_template",
            id(),
            None,
        ),
        (
            "create_template",
            "201",
            "ClaimCoupon",
            "claim_coupon",
            json!({}),
            Some(json!({"template_id": "$response.body#/id"})),
        ),
        ("claim_coupon", "201", "GetCoupon", "get_coupon", id(), None),
        (
            "claim_coupon",
            "201",
            "ListUserCoupons",
            "list_user_coupons",
            json!({"user_id": "$response.body#/user_id"}),
            None,
        ),
        (
            "claim_coupon",
            "201",
            "CouponOptions",
            "coupon_options",
            json!({"user_id": "$response.body#/user_id"}),
            None,
        ),
        (
            "claim_coupon",
            "201",
            "OrderWithCoupon",
            "create_order",
            json!({}),
            Some(json!({"user_id": "$response.body#/user_id", "coupon_id": "$response.body#/id"})),
        ),
        (
            "claim_coupon",
            "201",
            "ReleaseCoupon",
            "release_coupon",
            id(),
            None,
        ),
        (
            "claim_coupon",
            "201",
            "InvalidateCoupon",
            "invalidate_coupon",
            id(),
            None,
        ),
        (
            "issue_compensation_coupon",
            "201",
            "GetCoupon",
            "get_coupon",
            id(),
            None,
        ),
        (
            "issue_compensation_coupon",
            "201",
            "OrderWithCoupon",
            "create_order",
            json!({}),
            Some(json!({"user_id": "$response.body#/user_id", "coupon_id": "$response.body#/id"})),
        ),
        (
            "create_campaign",
            "201",
            "GetCampaign",
            "get_campaign",
            id(),
            None,
        ),
        (
            "create_campaign",
            "201",
            "ChangeCampaign",
            "change_campaign",
            id(),
            None,
        ),
        (
            "create_campaign",
            "201",
            "PresaleOrder",
            "create_order",
            json!({}),
            Some(json!({"kind": "presale", "campaign_id": "$response.body#/id"})),
        ),
        (
            "create_campaign",
            "201",
            "PresaleOptions",
            "coupon_options",
            json!({}),
            Some(json!({"kind": "presale", "campaign_id": "$response.body#/id"})),
        ),
        (
            "create_order",
            "201",
            "GetOrder",
            "get_order",
            order(),
            None,
        ),
        (
            "create_order",
            "201",
            "PayOrder",
            "pay_order",
            order(),
            None,
        ),
        (
            "create_order",
            "201",
            "PayDeposit",
            "pay_deposit",
            order(),
            None,
        ),
        (
            "create_order",
            "201",
            "CancelOrder",
            "cancel_order",
            order(),
            None,
        ),
        (
            "create_order",
            "201",
            "HealthCheck",
            "order_health_check",
            order(),
            None,
        ),
        (
            "create_order",
            "201",
            "FinalPaymentQuote",
            "final_payment_quote",
            order(),
            None,
        ),
        (
            "create_order",
            "201",
            "Compensate",
            "issue_compensation_coupon",
            json!({"user_id": "$response.body#/user_id"}),
            Some(json!({"order_no": "$response.body#/order_no"})),
        ),
        (
            "pay_order",
            "200",
            "RefundOrder",
            "refund_order",
            same_order(),
            None,
        ),
        (
            "pay_order",
            "200",
            "GetOrder",
            "get_order",
            same_order(),
            None,
        ),
        (
            "pay_order",
            "200",
            "MarkCouponUsed",
            "mark_coupon_used",
            same_order(),
            Some(json!({"coupon_id": "$response.body#/coupon_id"})),
        ),
        (
            "pay_deposit",
            "200",
            "FinalPaymentQuote",
            "final_payment_quote",
            same_order(),
            None,
        ),
        (
            "pay_deposit",
            "200",
            "PayFinal",
            "pay_final",
            same_order(),
            None,
        ),
        (
            "pay_deposit",
            "200",
            "CancelOrder",
            "cancel_order",
            same_order(),
            None,
        ),
        (
            "pay_deposit",
            "200",
            "RefundOrder",
            "refund_order",
            same_order(),
            None,
        ),
        (
            "pay_final",
            "200",
            "RefundOrder",
            "refund_order",
            same_order(),
            None,
        ),
        (
            "cancel_order",
            "200",
            "RepairCouponLink",
            "repair_coupon_link",
            same_order(),
            Some(json!({"coupon_id": "$response.body#/coupon_id"})),
        ),
        (
            "cancel_order",
            "200",
            "GetOrder",
            "get_order",
            same_order(),
            None,
        ),
    ];
    for (source, status, name, target, parameters, body) in table {
        let Some(response) = paths
            .values_mut()
            .filter_map(Value::as_object_mut)
            .flat_map(|item| item.values_mut())
            .find(|op| op["operationId"] == source)
            .and_then(|op| op.get_mut("responses"))
            .and_then(|r| r.get_mut(status))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let mut link = json!({"operationId": target, "parameters": parameters});
        if let Some(body) = body {
            link["requestBody"] = body;
        }
        let links = response
            .entry("links")
            .or_insert_with(|| Value::Object(Default::default()));
        links[name] = link;
    }
}

/// A caller's key (`user_id`, `order_no`): 1-128 characters without
/// whitespace, control or format characters ([`crate::domain::ids`]). The
/// classes spell out Rust's `char::is_whitespace` and `char::is_control`,
/// which regex `\s` does not match exactly, and the format characters
/// (Cf) of the Basic Multilingual Plane from the same table the check
/// reads; a pattern without the `u` flag cannot name the few beyond it
/// (`.ci/fuzz_hooks.py` knows that refusal).
fn key_class() -> String {
    let mut class =
        String::from(r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000");
    for (a, b) in crate::domain::text::bmp_format_ranges() {
        if a == b {
            class.push_str(&format!(r"\u{:04x}", u32::from(a)));
        } else {
            class.push_str(&format!(r"\u{:04x}-\u{:04x}", u32::from(a), u32::from(b)));
        }
    }
    class
}

/// The key pattern: see [`key_class`].
fn key_pattern() -> String {
    format!("^[^{}]+$", key_class())
}

/// Text that is not blank once trimmed (names, reasons): at least one
/// character outside Rust's whitespace, and no NUL (see [`NO_NUL_PATTERN`]).
const TEXT_PATTERN: &str =
    r"^[^\x00]*[^\x00\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\x00]*$";

/// No text the API takes may hold the NUL character: PostgreSQL cannot
/// store it, so every request carrying one is refused with 400 on both
/// stores ([`super::extract`]).
const NO_NUL_PATTERN: &str = r"^[^\x00]*$";

/// A key that may be padded with whitespace, or blank (then absent): what
/// a trimmed optional key field takes.
fn padded_key_pattern() -> String {
    const SPACE: &str = r"\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
    format!("^[{SPACE}]*([^{}]+[{SPACE}]*)?$", key_class())
}

/// RFC 3339 between 1970 and 9999 ([`crate::domain::time::parse_rfc3339`]).
const YEAR_PATTERN: &str = r"^(19[7-9][0-9]|[2-9][0-9]{3})-";

/// The input rules of the request bodies and parameters, as JSON Schema:
/// which fields are required, which may be null, ranges, lengths, words
/// and the rules between fields (`oneOf` / `anyOf`). The derive states
/// only the Rust types (every field an `Option`, so that a missing one is
/// a 400 naming it rather than a parse error); the checks themselves are
/// in `domain` and `service`, and `.ci/fuzz` (schemathesis) sends requests
/// on both sides of every rule here to keep the two in step.
fn input_rules(doc: &mut serde_json::Value) {
    use crate::domain::money::MAX_CENTS;
    use serde_json::{Value, json};

    let key =
        || json!({"type": "string", "minLength": 1, "maxLength": 128, "pattern": key_pattern()});
    let text = |max: usize| json!({"type": "string", "minLength": 1, "maxLength": max, "pattern": TEXT_PATTERN});
    let opt_text = |max: usize| json!({"type": ["string", "null"], "maxLength": max});
    let time = || json!({"type": "string", "format": "date-time", "pattern": YEAR_PATTERN});
    let opt_time =
        || json!({"type": ["string", "null"], "format": "date-time", "pattern": YEAR_PATTERN});
    let int = |min: i64, max: i64| json!({"type": "integer", "minimum": min, "maximum": max});
    let opt_int =
        |min: i64, max: i64| json!({"type": ["integer", "null"], "minimum": min, "maximum": max});
    let words = |ws: &[&str]| json!({"type": "string", "enum": ws});
    let opt_words = |ws: &[&str]| {
        let mut all: Vec<Value> = ws.iter().map(|w| json!(w)).collect();
        all.push(Value::Null);
        json!({"enum": all})
    };
    let categories = || {
        json!({"type": ["array", "null"], "maxItems": crate::domain::discount::MAX_CATEGORIES,
            "items": {"type": "string", "minLength": 1,
                "maxLength": crate::domain::category::MAX_CATEGORY_LEN, "pattern": TEXT_PATTERN}})
    };
    let reason = || text(crate::domain::reason::MAX_REASON_CHARS);
    let template_validity = json!([
        {"required": ["valid_seconds"], "properties": {"valid_seconds": {"type": "integer"}}},
        {"required": ["valid_until"], "properties": {"valid_until": {"type": "string"}}}
    ]);
    let discount_kinds = json!([
        {"properties": {"kind": {"const": "fixed"}, "value_cents": {"type": "integer"},
            "percent_off": {"type": "null"}, "max_discount_cents": {"type": "null"}},
         "required": ["value_cents"]},
        {"properties": {"kind": {"const": "percent"}, "percent_off": {"type": "integer"},
            "value_cents": {"type": "null"}},
         "required": ["percent_off"]}
    ]);
    let order_kinds = json!([
        {"properties": {"kind": {"const": "normal"}, "campaign_id": {"type": "null"},
            "deposit_cents": {"enum": [null, 0]}}},
        {"properties": {"kind": {"const": "presale"}, "campaign_id": {"type": "string", "minLength": 1},
            "deposit_cents": {"type": "integer", "minimum": 1}},
         "required": ["campaign_id", "deposit_cents"]}
    ]);
    let opt_key = |max: usize| json!({"type": ["string", "null"], "minLength": 1, "maxLength": max, "pattern": key_pattern()});
    let line_key = || {
        json!({"type": "string", "minLength": 1,
        "maxLength": crate::domain::ids::MAX_LINE_ID_LEN, "pattern": key_pattern()})
    };
    let line = json!({"type": "object",
        "properties": {
            "line_id": line_key(),
            "sku": opt_key(128),
            "category": {"type": ["string", "null"], "maxLength": crate::domain::category::MAX_CATEGORY_LEN},
            "shop_id": opt_key(128),
            "quantity": int(1, crate::domain::line::MAX_QUANTITY),
            "unit_price_cents": int(0, MAX_CENTS),
        },
        "required": ["line_id", "quantity", "unit_price_cents"]});
    // Either form of the cart, not both, not neither (API.md, Lines),
    // for each kind of order: one flat `oneOf` of the four combinations,
    // simpler for a generator than an `allOf` of two `oneOf`s.
    let by_total = json!({"required": ["total_cents"],
        "properties": {"total_cents": {"type": "integer"}, "lines": {"type": "null"}}});
    let by_lines = json!({"required": ["lines"], "properties": {"lines": {"type": "array"},
        "category": {"type": "null"}, "total_cents": {"type": "null"}}});
    let cart_forms: Value = Value::Array(
        order_kinds
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|kind| {
                [&by_total, &by_lines].map(|form| {
                    let mut both = kind.clone();
                    if let (Some(k), Some(f)) = (both.as_object_mut(), form.as_object()) {
                        let props = f.get("properties").cloned().unwrap_or_else(|| json!({}));
                        if let (Some(kp), Some(fp)) = (
                            k.entry("properties")
                                .or_insert_with(|| json!({}))
                                .as_object_mut(),
                            props.as_object(),
                        ) {
                            kp.extend(fp.clone());
                        }
                        let mut required: Vec<Value> = k
                            .get("required")
                            .and_then(Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        required.extend(
                            f.get("required")
                                .and_then(Value::as_array)
                                .cloned()
                                .unwrap_or_default(),
                        );
                        k.insert("required".into(), Value::Array(required));
                    }
                    both
                })
            })
            .collect(),
    );
    let cart = |extra: Value| {
        let mut props = json!({
            "kind": words(&["normal", "presale"]),
            "category": {"type": ["string", "null"], "maxLength": 64},
            "total_cents": opt_int(1, MAX_CENTS),
            "lines": {"type": ["array", "null"], "minItems": 1,
                "maxItems": crate::domain::line::MAX_LINES, "items": line.clone()},
            "campaign_id": {"type": ["string", "null"]},
            "deposit_cents": opt_int(0, MAX_CENTS),
        });
        if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        props
    };

    // A compensation is typed (amount, validity, reason) or a preset's;
    // and either names no coupon it makes up for (absent, null or blank)
    // or names one together with its order. One flat `anyOf` of the four
    // combinations, as the cart forms above.
    const BLANK_PATTERN: &str =
        r"^[\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$";
    let by_amount = json!({"required": ["value_cents", "valid_seconds", "reason"],
        "properties": {"value_cents": {"type": "integer"}, "valid_seconds": {"type": "integer"},
            "reason": {"type": "string", "minLength": 1, "pattern": TEXT_PATTERN},
            "preset_id": {"type": ["string", "null"], "pattern": BLANK_PATTERN}}});
    let by_preset = json!({"required": ["preset_id"],
        "properties": {"preset_id": {"type": "string", "pattern": TEXT_PATTERN}}});
    let for_no_coupon = json!({"required": [],
        "properties": {"for_coupon_id": {"type": ["string", "null"], "pattern": BLANK_PATTERN}}});
    let for_a_coupon = json!({"required": ["for_coupon_id", "order_no"],
        "properties": {"for_coupon_id": {"type": "string", "pattern": TEXT_PATTERN},
            "order_no": {"type": "string", "pattern": TEXT_PATTERN}}});
    let compensation_forms: Vec<Value> = [&by_amount, &by_preset]
        .into_iter()
        .flat_map(|amount| {
            [&for_no_coupon, &for_a_coupon].map(|coupon| {
                let mut both = amount.clone();
                for key in ["properties", "required"] {
                    match (both.get_mut(key), coupon.get(key)) {
                        (Some(Value::Object(a)), Some(Value::Object(b))) => a.extend(b.clone()),
                        (Some(Value::Array(a)), Some(Value::Array(b))) => a.extend(b.clone()),
                        _ => {}
                    }
                }
                both
            })
        })
        .collect();

    // (component, properties, required, extra keywords)
    let rules: Vec<(&str, Value, Vec<&str>, Value)> = vec![
        (
            "CreateTemplateBody",
            json!({
                "name": text(crate::domain::template::MAX_NAME_CHARS),
                "kind": words(&["fixed", "percent"]),
                "value_cents": opt_int(1, MAX_CENTS),
                "percent_off": opt_int(1, 100),
                "max_discount_cents": opt_int(1, MAX_CENTS),
                "min_order_cents": opt_int(0, MAX_CENTS),
                "valid_from": opt_time(),
                "valid_until": opt_time(),
                "valid_seconds": opt_int(1, crate::domain::template::MAX_VALID_SECONDS),
                "total_stock": opt_int(1, crate::domain::template::MAX_TOTAL_STOCK),
                "per_user_limit": opt_int(1, crate::domain::template::MAX_PER_USER_LIMIT),
                "categories": categories(),
                "claim_ends_at": opt_time(),
                "expiry_spread_seconds": opt_int(0, crate::domain::template::MAX_EXPIRY_SPREAD_SECONDS),
                "skus": {"type": ["array", "null"], "maxItems": crate::domain::discount::MAX_SKUS,
                    "items": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": key_pattern()}},
                "exclude_skus": {"type": ["array", "null"], "maxItems": crate::domain::discount::MAX_SKUS,
                    "items": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": key_pattern()}},
                "shop_id": opt_key(128),
                "partial_refund_rule": opt_words(&["proportional", "clawback"]),
                "stackable": {"type": ["boolean", "null"]},
                "budget_cents": opt_int(1, MAX_CENTS),
            }),
            vec!["name", "kind"],
            json!({"oneOf": discount_kinds, "anyOf": template_validity}),
        ),
        (
            "PatchTemplateBody",
            json!({
                "name": {"type": ["string", "null"], "minLength": 1,
                    "maxLength": crate::domain::template::MAX_NAME_CHARS, "pattern": TEXT_PATTERN},
                "total_stock": opt_int(1, crate::domain::template::MAX_TOTAL_STOCK),
                "claim_ends_at": opt_time(),
                "budget_cents": opt_int(1, MAX_CENTS),
            }),
            vec![],
            json!({}),
        ),
        (
            "PopupsSeenBody",
            json!({
                "ids": {"type": ["array", "null"],
                    "maxItems": crate::service::reminder_popups::MAX_SEEN_IDS,
                    "items": {"type": "string", "minLength": 1,
                        "maxLength": crate::service::reminder_popups::MAX_SEEN_ID_CHARS}},
            }),
            vec![],
            json!({}),
        ),
        (
            "ActivityBody",
            json!({
                "kind": words(&["browse", "cart", "visit"]),
                "at": time(),
            }),
            vec!["kind", "at"],
            json!({}),
        ),
        (
            "ClaimingBody",
            json!({"reason": reason()}),
            vec!["reason"],
            json!({}),
        ),
        (
            "ClaimBody",
            json!({"template_id": {"type": "string", "minLength": 1, "maxLength": 64}}),
            vec!["template_id"],
            json!({}),
        ),
        (
            "CartBody",
            cart(json!({})),
            vec!["kind"],
            json!({"oneOf": cart_forms.clone()}),
        ),
        (
            "CreateOrderBody",
            cart(json!({
                "order_no": key(), "user_id": key(),
                "coupon_id": {"type": ["string", "null"], "minLength": 1, "maxLength": 64},
                "coupon_ids": {"type": ["array", "null"],
                    "maxItems": crate::domain::cart::MAX_ORDER_COUPONS, "uniqueItems": true,
                    "items": {"type": "string", "minLength": 1, "maxLength": 64}},
            })),
            vec!["order_no", "user_id", "kind"],
            json!({"oneOf": cart_forms.clone()}),
        ),
        (
            "RefundBody",
            json!({
                "refund_id": line_key(),
                "lines": {"type": "array", "minItems": 1, "maxItems": crate::domain::line::MAX_LINES,
                    "items": {"type": "object",
                        "properties": {"line_id": line_key(),
                            "quantity": int(1, crate::domain::line::MAX_QUANTITY)},
                        "required": ["line_id", "quantity"]}},
                "reason": reason(),
            }),
            vec!["refund_id", "lines", "reason"],
            json!({}),
        ),
        (
            "CreateCampaignBody",
            json!({
                "name": text(crate::service::campaigns::MAX_NAME_CHARS),
                "final_payment_starts_at": time(),
                "final_payment_ends_at": time(),
                "policy": opt_words(&["lock", "strict", "swap_or_compensate"]),
                "compensation_mode": opt_words(&["deduction", "coupon"]),
            }),
            vec!["name", "final_payment_starts_at", "final_payment_ends_at"],
            json!({}),
        ),
        (
            "PatchCampaignBody",
            json!({
                "policy": opt_words(&["lock", "strict", "swap_or_compensate"]),
                "compensation_mode": opt_words(&["deduction", "coupon"]),
                "reason": reason(),
            }),
            vec!["reason"],
            json!({"anyOf": [
                {"required": ["policy"], "properties": {"policy": {"type": "string"}}},
                {"required": ["compensation_mode"], "properties": {"compensation_mode": {"type": "string"}}}
            ]}),
        ),
        (
            "ReasonBody",
            json!({"reason": reason()}),
            vec!["reason"],
            json!({}),
        ),
        (
            "CancelBody",
            json!({"reason": {"type": ["string", "null"], "minLength": 1,
            "maxLength": crate::domain::reason::MAX_REASON_CHARS, "pattern": TEXT_PATTERN}}),
            vec![],
            json!({}),
        ),
        (
            "ReleaseBody",
            json!({"reason": reason(), "force": {"type": ["boolean", "null"]}}),
            vec!["reason"],
            json!({}),
        ),
        (
            "InvalidateBody",
            json!({"reason": reason()}),
            vec!["reason"],
            json!({}),
        ),
        (
            "CompensationBody",
            json!({
                "value_cents": opt_int(1, MAX_CENTS),
                "valid_seconds": opt_int(crate::domain::compensation::MIN_VALID_SECONDS,
                    crate::domain::compensation::MAX_VALID_SECONDS),
                "reason": {"type": ["string", "null"], "maxLength": crate::domain::reason::MAX_REASON_CHARS},
                "order_no": {"type": ["string", "null"], "maxLength": 128, "pattern": padded_key_pattern()},
                "preset_id": {"type": ["string", "null"]},
                "for_coupon_id": {"type": ["string", "null"],
                    "maxLength": crate::domain::compensation::MAX_FOR_COUPON_CHARS},
            }),
            vec![],
            json!({"anyOf": compensation_forms}),
        ),
        (
            "RepairLinkBody",
            json!({"coupon_id": {"type": "string", "pattern": TEXT_PATTERN}, "reason": reason()}),
            vec!["coupon_id", "reason"],
            json!({}),
        ),
        (
            "MarkUsedBody",
            json!({"coupon_id": {"type": "string", "pattern": TEXT_PATTERN}, "reason": reason()}),
            vec!["coupon_id", "reason"],
            json!({}),
        ),
        (
            "RulesBody",
            json!({
                "support_max_cents": int(0, MAX_CENTS),
                "support_daily_cents": int(0, MAX_CENTS),
                "presets": {"type": ["array", "null"], "maxItems": crate::domain::compensation::MAX_PRESETS,
                    "items": {"$ref": "#/components/schemas/PresetBody"}},
                "reason": opt_text(crate::domain::reason::MAX_REASON_CHARS),
            }),
            vec!["support_max_cents", "support_daily_cents"],
            json!({}),
        ),
        (
            "PresetBody",
            json!({
                "id": {"type": ["string", "null"]},
                "reason": text(crate::domain::compensation::MAX_PRESET_REASON_CHARS),
                "value_cents": int(1, MAX_CENTS),
                "valid_seconds": int(crate::domain::compensation::MIN_VALID_SECONDS,
                    crate::domain::compensation::MAX_VALID_SECONDS),
                "min_order_cents": opt_int(0, MAX_CENTS),
                "categories": categories(),
            }),
            vec!["reason", "value_cents", "valid_seconds"],
            json!({}),
        ),
    ];
    let mut rules = rules;
    rules.extend(code_rules());
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (name, properties, required, extra) in rules {
        let Some(schema) = schemas.get_mut(name).and_then(Value::as_object_mut) else {
            continue;
        };
        if let (Some(have), Some(new)) = (
            schema.get_mut("properties").and_then(Value::as_object_mut),
            properties.as_object(),
        ) {
            for (field, rule) in new {
                let description = have.get(field).and_then(|f| f.get("description")).cloned();
                let mut rule = rule.clone();
                if let Some(d) = description {
                    rule["description"] = d;
                }
                have.insert(field.clone(), rule);
            }
        }
        schema.insert("required".into(), json!(required));
        if let Some(extra) = extra.as_object() {
            schema.extend(extra.clone());
        }
    }
}

/// The input rules of the redeem-code bodies ([`input_rules`]).
fn code_rules() -> Vec<(
    &'static str,
    serde_json::Value,
    Vec<&'static str>,
    serde_json::Value,
)> {
    use crate::domain::redeem_code::{
        BatchSpec, MAX_COUNT, MAX_LENGTH, MAX_PREFIX_CHARS, MAX_TYPED_CHARS, MIN_LENGTH,
    };
    // Something besides whitespace (Rust's, as in TEXT_PATTERN) and
    // dashes, and no NUL: what `domain::redeem_code::normalize` keeps.
    const CODE_PATTERN: &str = r"^[^\x00]*[^\x00\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\u2010-\u2015\u2212-][^\x00]*$";
    use serde_json::json;
    vec![
        (
            "CodeBatchBody",
            json!({
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_COUNT},
                "prefix": {"type": ["string", "null"], "maxLength": MAX_PREFIX_CHARS,
                    "pattern": "^[ \t]*[2-9A-HJKMNP-Za-hjkmnp-z]*[ \t]*$"},
                "length": {"type": "integer", "minimum": MIN_LENGTH, "maximum": MAX_LENGTH},
            }),
            vec!["count", "length"],
            // The code space of `length` characters holds at least 1,000
            // codes per code asked for.
            json!({"anyOf": (MIN_LENGTH..=MAX_LENGTH)
                .filter(|l| BatchSpec::max_count_for(*l) < MAX_COUNT)
                .map(|l| json!({"properties": {"length": {"const": l},
                    "count": {"maximum": BatchSpec::max_count_for(l)}}}))
                .chain(std::iter::once(json!({"properties": {"length": {"minimum":
                    (MIN_LENGTH..=MAX_LENGTH).find(|l| BatchSpec::max_count_for(*l) >= MAX_COUNT)
                        .unwrap_or(MAX_LENGTH)}}})))
                .collect::<Vec<_>>()}),
        ),
        (
            "VoidBatchBody",
            json!({"reason": {"type": "string", "minLength": 1,
                "maxLength": crate::domain::reason::MAX_REASON_CHARS, "pattern": TEXT_PATTERN}}),
            vec!["reason"],
            json!({}),
        ),
        (
            "RedemptionBody",
            json!({"code": {"type": "string", "minLength": 1, "maxLength": MAX_TYPED_CHARS,
                "pattern": CODE_PATTERN}}),
            vec!["code"],
            json!({}),
        ),
    ]
}

/// The rules of path and query parameters, by name (and, where two
/// routes differ, by operation).
fn parameter_rules(doc: &mut serde_json::Value) {
    use serde_json::{Value, json};

    let day_or_time = || {
        json!({"anyOf": [
            {"type": "string", "format": "date", "pattern": r"^(19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-"},
            {"type": "string", "format": "date-time", "pattern": YEAR_PATTERN},
            {"type": "string", "maxLength": 0}
        ]})
    };
    let words = |ws: &[&str]| {
        let mut all: Vec<&str> = ws.to_vec();
        all.push("");
        json!({"type": "string", "enum": all})
    };
    let order_statuses: Vec<&str> = crate::domain::order::OrderStatus::ALL
        .iter()
        .map(|s| s.as_str())
        .collect();
    let limit = |max: i64| json!({"type": "integer", "minimum": 1, "maximum": max});
    let no_control = |max: usize| json!({"type": "string", "maxLength": max, "pattern": r"^[^\x00-\x1f\x7f-\x9f]*$"});
    let rule = |op: &str, location: &str, name: &str| -> Option<Value> {
        Some(match (location, name, op) {
            ("path", "user_id" | "order_no", _) => {
                json!({"type": "string", "minLength": 1, "maxLength": 128, "pattern": key_pattern()})
            }
            ("path", _, _) => json!({"type": "string", "minLength": 1,
                "maxLength": super::extract::MAX_PATH_SEGMENT_CHARS}),
            ("query", "limit", "list_user_coupons") => {
                limit(crate::service::claims::MAX_LIST_LIMIT)
            }
            ("query", "limit", _) => limit(200),
            ("query", "within_seconds", _) => json!({"type": "integer", "minimum": 1,
                "maximum": crate::service::jobs::MAX_PENDING_WINDOW_SECONDS}),
            ("query", "status", "list_user_coupons") => {
                words(&["available", "locked", "used", "expired", "invalidated"])
            }
            ("query", "status", "list_templates") => {
                words(&["active", "paused", "not_started", "ended"])
            }
            ("query", "status", "list_orders") => words(&order_statuses),
            ("query", "kind", "list_templates") => words(&["fixed", "percent"]),
            ("query", "kind", "list_orders") => words(&["normal", "presale"]),
            ("query", "coupon_lock_status", _) => words(&["none", "locked", "used", "released"]),
            ("query", "from" | "to" | "created_from" | "created_to", _) => day_or_time(),
            ("query", "q", _) => json!({"type": "string", "maxLength": 200}),
            ("query", "order_no_prefix" | "campaign_id", "list_orders") => no_control(128),
            (
                "query",
                "order_no" | "staff" | "preset_id" | "campaign_id",
                "compensation_ledger",
            ) => {
                json!({"type": "string", "maxLength": 200})
            }
            ("query", "cursor", _) => json!({"type": "string"}),
            _ => return None,
        })
    };
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
    {
        let id = op["operationId"].as_str().unwrap_or("").to_string();
        let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) else {
            continue;
        };
        for p in params.iter_mut() {
            let (Some(location), Some(name)) = (p["in"].as_str(), p["name"].as_str()) else {
                continue;
            };
            let in_path = location == "path";
            if let Some(schema) = rule(&id, location, name) {
                p["schema"] = schema;
                // Query parameters are all optional; path segments never are.
                p["required"] = Value::Bool(in_path);
            }
        }
    }
}
