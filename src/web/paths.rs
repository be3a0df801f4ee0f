//! Every console address that names something (a coupon, an order, a
//! user, a template, a campaign, a code batch, a bulk job, a wake-up rule,
//! a webhook subscriber, a delivery, a reconciliation finding, a staff
//! account, a category), written once: a page links through these
//! functions, a handler redirects through them, and a confirmation form
//! posts to them, so an address and its encoding cannot drift apart
//! between the link and the action.
//!
//! Each function takes the typed id and percent-encodes a path segment or
//! query value with [`enc`] where the pages always did (user ids and order
//! numbers may hold `/`, `?`, `#` or `%`; server ids are encoded too).
//! Numeric ids (deliveries, findings, runs) need no encoding, and
//! webhook subscribers' actions never had it.
//!
//! Addresses without an id (`/console/orders`, a list with its own filter
//! or page query) stay literals at their call sites; a call site that adds
//! a query, a fragment or a `back` ([`with_back`]) adds it
//! around a function's result. The routers' patterns
//! (`/console/coupons/{id}`) stay in the routers.

use crate::domain::ids::{
    CampaignId, CodeBatchId, CouponId, JobId, OrderNo, SubscriberId, TemplateId, UserId,
    WakeupRuleId,
};

/// Percent-encodes a path segment or query value (`form_urlencoded`, so a
/// space is `+`, as every console address has always written it).
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// `href` (an action's confirmation page) with `back` in its query.
pub fn with_back(href: &str, back: &str) -> String {
    let sep = if href.contains('?') { '&' } else { '?' };
    format!("{href}{sep}back={}", enc(back))
}
use crate::domain::reconcile::AnomalyKind;

// Coupons.

/// A coupon's page.
pub(crate) fn coupon(id: &CouponId) -> String {
    format!("/console/coupons/{}", enc(id))
}

/// Releasing a coupon's lock: its confirmation page and its post.
pub(crate) fn coupon_release(id: &CouponId) -> String {
    format!("{}/release", coupon(id))
}

/// Invalidating a coupon: its confirmation page and its post.
pub(crate) fn coupon_invalidate(id: &CouponId) -> String {
    format!("{}/invalidate", coupon(id))
}

/// The coupon list filtered to one template's coupons.
pub(crate) fn coupons_of_template(id: &TemplateId) -> String {
    format!("/console/coupons?template_id={}", enc(id))
}

// Orders.

/// An order's page.
pub(crate) fn order(no: &OrderNo) -> String {
    unparsed::order(no)
}

/// An order's page with its health check run, scrolled to the result.
pub(crate) fn order_health(no: &OrderNo) -> String {
    format!("{}?check=1#health", order(no))
}

/// Cancelling an order: its confirmation page and its post.
pub(crate) fn order_cancel(no: &OrderNo) -> String {
    format!("{}/cancel", order(no))
}

/// Repairing an order's coupon link: where its confirmation form posts.
pub(crate) fn order_repair(no: &OrderNo) -> String {
    format!("{}/repair", order(no))
}

/// The confirmation page of repairing an order's link to `coupon`.
pub(crate) fn order_repair_for(no: &OrderNo, coupon: &CouponId) -> String {
    format!("{}?coupon_id={}", order_repair(no), enc(coupon))
}

/// Returning a coupon its order's refunds should have returned: where its
/// confirmation form posts.
pub(crate) fn order_return_coupon(no: &OrderNo) -> String {
    format!("{}/return-coupon", order(no))
}

/// The confirmation page of returning `coupon` after the order's refunds.
pub(crate) fn order_return_coupon_for(no: &OrderNo, coupon: &CouponId) -> String {
    format!("{}?coupon_id={}", order_return_coupon(no), enc(coupon))
}

/// Marking the coupon of a paid order used: where its confirmation form
/// posts.
pub(crate) fn order_mark_coupon_used(no: &OrderNo) -> String {
    format!("{}/mark-coupon-used", order(no))
}

/// The confirmation page of marking `coupon` used for a paid order.
pub(crate) fn order_mark_coupon_used_for(no: &OrderNo, coupon: &CouponId) -> String {
    format!("{}?coupon_id={}", order_mark_coupon_used(no), enc(coupon))
}

// Users.

/// A user's page.
pub(crate) fn user(id: &UserId) -> String {
    unparsed::user(id)
}

/// Issuing a user a compensation coupon: the form and its post.
pub(crate) fn user_compensation(id: &UserId) -> String {
    unparsed::user_compensation(id)
}

/// The compensation form for a user, about one of their orders.
pub(crate) fn user_compensation_for_order(id: &UserId, no: &OrderNo) -> String {
    format!("{}?order_no={}", user_compensation(id), enc(no))
}

/// The webhook deliveries filtered to one user's.
pub(crate) fn deliveries_of_user(id: &UserId) -> String {
    format!("/console/deliveries?user={}", enc(id))
}

// Support requests.

/// Support's work queue of customers' requests (open ones).
pub(crate) const SUPPORT_REQUESTS: &str = "/console/support-requests";

/// Marking a support request handled: its post.
pub(crate) fn support_request_handled(id: &str) -> String {
    format!("{SUPPORT_REQUESTS}/{}/handled", enc(id))
}

/// The addresses of a user or an order for the text a page's own address
/// or form carried, before (or without) it was checked as a `UserId` or
/// an `OrderNo`: the user page and the compensation form render for that
/// text and link back to themselves with it, exactly as typed (the
/// service checks the id when it is used). The typed functions above are
/// these same addresses.
pub(crate) mod unparsed {
    use super::enc;

    /// A user's page.
    pub(crate) fn user(raw: &str) -> String {
        format!("/console/users/{}", enc(raw))
    }

    /// A user's page with the health check of all their orders run,
    /// scrolled to the result.
    pub(crate) fn user_health(raw: &str) -> String {
        format!("{}?check=1#health", user(raw))
    }

    /// The "try a cart" form on a user's page, scrolled to it.
    pub(crate) fn user_try_cart(raw: &str) -> String {
        format!("{}#try-cart", user(raw))
    }

    /// Issuing a user a compensation coupon: the form and its post.
    pub(crate) fn user_compensation(raw: &str) -> String {
        format!("{}/compensation", user(raw))
    }

    /// An order's page.
    pub(crate) fn order(raw: &str) -> String {
        format!("/console/orders/{}", enc(raw))
    }
}

// Templates, their code batches and bulk jobs.

/// A template's page.
pub(crate) fn template(id: &TemplateId) -> String {
    format!("/console/templates/{}", enc(id))
}

/// A template's report.
pub(crate) fn template_report(id: &TemplateId) -> String {
    format!("{}/report", template(id))
}

/// The new-template form filled in from a template (a copy).
pub(crate) fn template_copy(id: &TemplateId) -> String {
    format!("/console/templates/new?from={}", enc(id))
}

/// Pausing a template's claiming.
pub(crate) fn template_pause(id: &TemplateId) -> String {
    format!("{}/pause", template(id))
}

/// Resuming a template's claiming.
pub(crate) fn template_resume(id: &TemplateId) -> String {
    format!("{}/resume", template(id))
}

/// Editing a template.
pub(crate) fn template_edit(id: &TemplateId) -> String {
    format!("{}/edit", template(id))
}

/// Generating a batch of redeem codes of a template.
pub(crate) fn template_code_batches(id: &TemplateId) -> String {
    format!("{}/code-batches", template(id))
}

/// Issuing a template's coupons to many users: the form and its post.
pub(crate) fn template_bulk_issue(id: &TemplateId) -> String {
    format!("{}/bulk-issue", template(id))
}

/// Voiding a template's coupons of many users: the form and its post.
pub(crate) fn template_bulk_void(id: &TemplateId) -> String {
    format!("{}/bulk-void", template(id))
}

/// A batch of redeem codes.
pub(crate) fn code_batch(id: &CodeBatchId) -> String {
    format!("/console/code-batches/{}", enc(id))
}

/// A code batch's codes as CSV.
pub(crate) fn code_batch_codes_csv(id: &CodeBatchId) -> String {
    format!("{}/codes.csv", code_batch(id))
}

/// Voiding a code batch.
pub(crate) fn code_batch_void(id: &CodeBatchId) -> String {
    format!("{}/void", code_batch(id))
}

/// A bulk issue or void job.
pub(crate) fn job(id: &JobId) -> String {
    format!("/console/jobs/{}", enc(id))
}

/// A bulk job's results as CSV.
pub(crate) fn job_results_csv(id: &JobId) -> String {
    format!("{}/results.csv", job(id))
}

// Campaigns.

/// A campaign's page.
pub(crate) fn campaign(id: &CampaignId) -> String {
    format!("/console/campaigns/{}", enc(id))
}

/// A campaign's report.
pub(crate) fn campaign_report(id: &CampaignId) -> String {
    format!("{}/report", campaign(id))
}

/// Changing a campaign's policy: the preview's form and its post.
pub(crate) fn campaign_policy(id: &CampaignId) -> String {
    format!("{}/policy", campaign(id))
}

/// Changing a campaign's compensation mode: the form and its post.
pub(crate) fn campaign_compensation_mode(id: &CampaignId) -> String {
    format!("{}/compensation-mode", campaign(id))
}

// Wake-up rules.

/// A wake-up rule's page.
pub(crate) fn wakeup_rule(id: &WakeupRuleId) -> String {
    format!("/console/wakeup/{}", enc(id))
}

/// Pausing a wake-up rule.
pub(crate) fn wakeup_rule_pause(id: &WakeupRuleId) -> String {
    format!("{}/pause", wakeup_rule(id))
}

/// Resuming a wake-up rule.
pub(crate) fn wakeup_rule_resume(id: &WakeupRuleId) -> String {
    format!("{}/resume", wakeup_rule(id))
}

// Webhooks.

/// Disabling a webhook subscriber: the confirmation page and its post
/// (the id as is, as these links always were).
pub(crate) fn subscriber_disable(id: &SubscriberId) -> String {
    format!("/console/webhooks/{id}/disable")
}

/// Enabling a webhook subscriber: the confirmation page and its post (the
/// id as is, as these links always were).
pub(crate) fn subscriber_enable(id: &SubscriberId) -> String {
    format!("/console/webhooks/{id}/enable")
}

/// A webhook delivery's page.
pub(crate) fn delivery(id: i64) -> String {
    format!("/console/deliveries/{id}")
}

/// Delivering a webhook message again: the confirmation page and its post.
pub(crate) fn delivery_redeliver(id: i64) -> String {
    format!("{}/redeliver", delivery(id))
}

// Reconciliation.

/// Repairing one reconciliation finding: the confirmation page and its
/// post.
pub(crate) fn finding_repair(id: i64) -> String {
    format!("/console/reconciliation/findings/{id}/repair")
}

/// Repairing every open finding of one kind of a run: the confirmation
/// page and its post.
pub(crate) fn run_kind_repair(run_id: i64, kind: AnomalyKind) -> String {
    format!(
        "/console/reconciliation/runs/{run_id}/kinds/{}/repair",
        kind.as_str()
    )
}

// Staff accounts, categories, the audit log (by name: no id type).

/// Changing a staff account's role.
pub(crate) fn staff_role(name: &str) -> String {
    format!("{}/role", staff_account(name))
}

/// Enabling a staff account.
pub(crate) fn staff_enable(name: &str) -> String {
    format!("{}/enable", staff_account(name))
}

/// Disabling a staff account.
pub(crate) fn staff_disable(name: &str) -> String {
    format!("{}/disable", staff_account(name))
}

/// Setting a staff account's password.
pub(crate) fn staff_password(name: &str) -> String {
    format!("{}/password", staff_account(name))
}

/// The prefix of a staff account's actions (no page of its own).
fn staff_account(name: &str) -> String {
    format!("/console/staff/{}", enc(name))
}

/// The category page with one category's names in the form, scrolled to
/// it.
pub(crate) fn category_rename(code: &str) -> String {
    format!("/console/categories?edit={}#category-form", enc(code))
}

/// The audit log filtered to what one staff member did.
pub(crate) fn audit_of_actor(name: &str) -> String {
    format!("/console/audit?actor={}", enc(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_number_is_percent_encoded_in_every_address_of_the_order() {
        let no = OrderNo::from("PO#12/3?x&y z");
        assert_eq!(order(&no), "/console/orders/PO%2312%2F3%3Fx%26y+z");
        assert_eq!(
            order_health(&no),
            "/console/orders/PO%2312%2F3%3Fx%26y+z?check=1#health"
        );
        assert_eq!(
            order_repair_for(&no, &CouponId::from("cpn_1")),
            "/console/orders/PO%2312%2F3%3Fx%26y+z/repair?coupon_id=cpn_1"
        );
        assert_eq!(
            user_compensation_for_order(&UserId::from("u/1"), &no),
            "/console/users/u%2F1/compensation?order_no=PO%2312%2F3%3Fx%26y+z"
        );
    }

    #[test]
    fn a_coupons_actions_hang_under_its_page() {
        let id = CouponId::from("cpn_1");
        assert_eq!(coupon(&id), "/console/coupons/cpn_1");
        assert_eq!(coupon_release(&id), "/console/coupons/cpn_1/release");
        assert_eq!(coupon_invalidate(&id), "/console/coupons/cpn_1/invalidate");
        assert_eq!(
            coupons_of_template(&TemplateId::from("tpl 1")),
            "/console/coupons?template_id=tpl+1"
        );
    }

    #[test]
    fn a_typed_address_is_the_same_as_the_one_for_unparsed_text() {
        let user_id = UserId::from("u%1");
        assert_eq!(user(&user_id), unparsed::user("u%1"));
        assert_eq!(user(&user_id), "/console/users/u%251");
        assert_eq!(
            unparsed::user_health("u%1"),
            "/console/users/u%251?check=1#health"
        );
        assert_eq!(
            user_compensation(&user_id),
            unparsed::user_compensation("u%1")
        );
    }
}
