//! Fixtures several test files share: a user with a coupon, a presale
//! order with its deposit paid, raw SQL to plant an anomaly or count rows,
//! and the small service-test helpers (a context, seconds).

use chrono::Duration;
use couponkeeper::domain::ids::{OrderNo, TemplateId, UserId};
use couponkeeper::service::Ctx;
use serde_json::json;

use super::{TestApp, presale_order};

/// A user with one 满300减50 coupon valid `valid_seconds`; its id.
pub async fn user_with_coupon(app: &TestApp, user: &str, valid_seconds: i64) -> String {
    let t = app.template(json!({"valid_seconds": valid_seconds})).await;
    let c = app.claim(user, t["id"].as_str().expect("id")).await;
    c["id"].as_str().expect("id").to_string()
}

/// A user with one 满300减50 coupon; its id.
pub async fn coupon_for(app: &TestApp, user: &str) -> String {
    let t = app.template(json!({})).await;
    let c = app.claim(user, t["id"].as_str().unwrap_or_default()).await;
    c["id"].as_str().unwrap_or_default().to_string()
}

/// A user with one 满300减50 coupon; the coupon (id, code).
pub async fn coupon_with_code(app: &TestApp, user: &str) -> (String, String) {
    let t = app.template(json!({})).await;
    let c = app.claim(user, t["id"].as_str().unwrap_or_default()).await;
    (
        c["id"].as_str().unwrap_or_default().to_string(),
        c["code"].as_str().unwrap_or_default().to_string(),
    )
}

/// A deposit-paid presale order `no` of `user` holding a locked coupon
/// (a `lock` campaign whose window opens in an hour for an hour); the
/// coupon id.
pub async fn deposit_paid(app: &TestApp, no: &str, user: &str) -> String {
    deposit_paid_with_code(app, no, user).await.0
}

/// [`deposit_paid`], returning the coupon (id, code).
pub async fn deposit_paid_with_code(app: &TestApp, no: &str, user: &str) -> (String, String) {
    let (cid, code) = coupon_with_code(app, user).await;
    let camp = app.campaign("lock", 3600, 3600).await;
    let r = app
        .order(presale_order(
            no,
            user,
            Some(&cid),
            camp["id"].as_str().unwrap_or_default(),
        ))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post(&format!("/api/v1/orders/{no}/deposit-payment"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    (cid, code)
}

/// `user`'s coupon (valid `coupon_seconds`) on presale order `order_no` of
/// a `policy` campaign whose window opens in 60 s for an hour, deposit
/// paid. Returns the coupon id.
pub async fn deposit_paid_under(
    app: &TestApp,
    order_no: &str,
    user: &str,
    policy: &str,
    coupon_seconds: i64,
) -> String {
    let cid = user_with_coupon(app, user, coupon_seconds).await;
    let cmp = app.campaign(policy, 60, 3600).await;
    let cmp = cmp["id"].as_str().expect("campaign id");
    let r = app
        .order(presale_order(order_no, user, Some(&cid), cmp))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .post(
            &format!("/api/v1/orders/{order_no}/deposit-payment"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    cid
}

/// Runs a statement as a bug in a transition would. A statement that
/// writes `coupons` moves the report counters' stored status counts and
/// discount with it (every transition's own statement does), so what is
/// planted is the coupon–order anomaly alone, not also a
/// `template_counts_mismatch`; a statement on the counters themselves
/// plants that one.
pub async fn plant(app: &TestApp, sql: &str) {
    sqlx::query(sql)
        .execute(app.db.db.pool())
        .await
        .expect("plant an anomaly");
    if sql.to_ascii_uppercase().contains("UPDATE COUPONS") {
        resync_counters(app).await;
    }
}

/// Sets every template's all-days counters of stored statuses and
/// discount to a recount of its coupons (the first shard carries them),
/// after folding the deltas waiting.
async fn resync_counters(app: &TestApp) {
    // The changes so far are deltas until the counter-fold job runs: fold
    // them, so the all-days rows below hold everything.
    while app.service.fold_counters(5000).await.expect("the fold") > 0 {}
    let pool = app.db.db.pool();
    let ids: Vec<TemplateId> =
        sqlx::query_scalar("SELECT DISTINCT template_id FROM template_counts")
            .fetch_all(pool)
            .await
            .expect("templates with counters");
    let mut conn = pool.acquire().await.expect("connection");
    for id in ids {
        let c = couponkeeper::store::counters::recount_template(&mut conn, &id, 1_000_000)
            .await
            .expect("recount")
            .expect("a test template is small");
        sqlx::query(
            "UPDATE template_counts SET status_available = 0, status_locked = 0, status_used = 0, \
             status_expired = 0, status_invalidated = 0, discount_cents = 0 \
             WHERE template_id = $1 AND day = -1",
        )
        .bind(&id)
        .execute(&mut *conn)
        .await
        .expect("clear");
        sqlx::query(
            "UPDATE template_counts SET status_available = $2, status_locked = $3, status_used = $4, \
             status_expired = $5, status_invalidated = $6, discount_cents = $7 \
             WHERE template_id = $1 AND day = -1 AND shard = \
             (SELECT MIN(shard) FROM template_counts WHERE template_id = $1 AND day = -1)",
        )
        .bind(&id)
        .bind(c.status_available)
        .bind(c.status_locked)
        .bind(c.status_used)
        .bind(c.status_expired)
        .bind(c.status_invalidated)
        .bind(c.discount_cents)
        .execute(&mut *conn)
        .await
        .expect("resync");
    }
}

/// The number a `SELECT COUNT(*) ...` query answers.
pub async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(app.db.db.pool())
        .await
        .expect("count")
}

/// The context of a service call made by a test.
pub fn ctx() -> Ctx {
    Ctx::new("test", None)
}

pub fn secs(n: i64) -> Duration {
    Duration::seconds(n)
}

/// A test's user id, checked as the API would check it.
pub fn user(raw: &str) -> UserId {
    UserId::parse(raw).expect("a test's key")
}

/// A test's order number, checked as the API would check it.
pub fn order(raw: &str) -> OrderNo {
    OrderNo::parse(raw).expect("a test's key")
}
