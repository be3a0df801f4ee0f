//! The reminder planner (`src/service/reminders.rs`) on a manual clock:
//! each offset once per coupon (seconds too), aggregation per user and
//! slot, only `available` coupons, quiet hours, channel tiers and caps,
//! self-check visits as activity, exactly-once across runs and instances, and the presale reminders
//! (final payment open; the strict-policy warning at deposit and before
//! the coupon ends, never first at final payment), and a reminder's way
//! through the webhook dispatcher to a receiver. Both stores.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::AnyPool;

use crate::common::fixtures::{ctx, order, secs};
use crate::common::{Store, TestDb, epoch, store};
use couponkeeper::clock::{ManualClock, SharedClock};
use couponkeeper::config::Config;
use couponkeeper::domain::cart::{OrderInput, OrderSpec};
use couponkeeper::domain::ids::{CampaignId, CouponId, TemplateId, UserId};
use couponkeeper::domain::order::OrderStatus;
use couponkeeper::domain::reminder;
use couponkeeper::domain::self_check::Verified;
use couponkeeper::domain::template::TemplateInput;
use couponkeeper::server::build_service;
use couponkeeper::service::campaigns::CampaignInput;
use couponkeeper::service::reminders::{
    COUPONS_EXPIRING, EXPIRES_BEFORE_FINAL_PAYMENT, FINAL_PAYMENT_OPEN, ReminderCursor,
    ReminderReport,
};
use couponkeeper::service::{Executed, Service, ServiceError};
use couponkeeper::store::Db;
use couponkeeper::store::reminders::STRICT_RISKS_SQL;

const MIN: i64 = 60;
const HOUR: i64 = 3600;
const DAY: i64 = 24 * HOUR;
const TOTAL: i64 = 39900;
const DEPOSIT: i64 = 10000;

fn fresh<T>(r: Result<Executed<T>, ServiceError>, what: &str) -> T {
    match r {
        Ok(Executed::Fresh(v)) => v,
        Ok(Executed::Replayed { .. }) => panic!("{what}: replayed without a key"),
        Err(e) => panic!("{what} failed: {e:?}"),
    }
}

/// A service on a fresh database with this reminder plan and quiet hours
/// (business time zone Asia/Shanghai, sms from 50.00 yuan, window 1 h).
struct Rig {
    svc: Service,
    /// The planner's memory between runs, as the job keeps it.
    cursor: tokio::sync::Mutex<ReminderCursor>,
    clock: Arc<ManualClock>,
    db: TestDb,
}

impl Rig {
    async fn start(offsets: &str, quiet: &str) -> Rig {
        Self::start_with_webhook(offsets, quiet, None).await
    }

    /// The same, delivering webhooks to `url` (signed with a test secret).
    async fn start_with_webhook(offsets: &str, quiet: &str, url: Option<String>) -> Rig {
        Self::start_full(offsets, quiet, reminder::DEFAULT_BUSINESS_TZ, url).await
    }

    /// The same in another business time zone (`COUPONKEEPER_BUSINESS_TZ`).
    async fn start_in_zone(offsets: &str, quiet: &str, tz: &str) -> Rig {
        Self::start_full(offsets, quiet, tz, None).await
    }

    async fn start_full(offsets: &str, quiet: &str, tz: &str, url: Option<String>) -> Rig {
        let db = TestDb::fresh().await;
        let clock = Arc::new(ManualClock::new(epoch()));
        let mut config = Config::default();
        config.reminders.offsets = reminder::parse_offsets(offsets).expect("valid offsets");
        config.reminders.quiet_hours = reminder::parse_quiet_hours(quiet).expect("valid quiet");
        config.reminders.tz = reminder::parse_business_tz(tz).expect("valid zone");
        if url.is_some() {
            config.webhooks.default_url = url;
            config.webhooks.default_secret = Some("whsec_reminder_test_0123456789".into());
        }
        let shared: SharedClock = clock.clone();
        let svc = build_service(&config, db.db.clone(), shared);
        Rig {
            svc,
            cursor: Default::default(),
            clock,
            db,
        }
    }

    fn config(&self) -> Config {
        Config {
            reminders: self.svc.settings().reminders.clone(),
            ..Config::default()
        }
    }

    fn set(&self, t: DateTime<Utc>) {
        self.clock.set(t);
    }

    /// One planner run as the job makes it (remembering earlier runs).
    async fn plan(&self) -> ReminderReport {
        let mut cursor = self.cursor.lock().await;
        self.svc
            .plan_due_reminders_with(&mut cursor, 500)
            .await
            .expect("planner runs")
    }

    fn pool(&self) -> &AnyPool {
        self.db.db.pool()
    }

    /// Outbox rows of one type: (user_id, data), oldest first.
    async fn outbox(&self, event_type: &str) -> Vec<(String, Value)> {
        let rows: Vec<(Option<String>, String)> =
            sqlx::query_as("SELECT user_id, payload FROM outbox WHERE event_type = $1 ORDER BY id")
                .bind(event_type)
                .fetch_all(self.pool())
                .await
                .expect("read outbox");
        rows.into_iter()
            .map(|(u, p)| {
                (
                    u.unwrap_or_default(),
                    serde_json::from_str(&p).expect("payload is JSON"),
                )
            })
            .collect()
    }

    async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(self.pool())
            .await
            .expect("count")
    }

    async fn template(&self, value_cents: i64, valid_seconds: i64) -> TemplateId {
        let input = TemplateInput {
            name: Some(format!("{value_cents} off, {valid_seconds}s")),
            kind: Some("fixed".into()),
            value_cents: Some(value_cents),
            min_order_cents: Some(30000),
            valid_seconds: Some(valid_seconds),
            categories: Some(Vec::new()),
            ..TemplateInput::default()
        };
        fresh(
            self.svc.create_template(&ctx(), None, input).await,
            "template",
        )
        .id
    }

    /// A template whose coupons all end at `until`.
    async fn template_until(&self, value_cents: i64, until: DateTime<Utc>) -> TemplateId {
        let input = TemplateInput {
            name: Some(format!("{value_cents} off until {until}")),
            kind: Some("fixed".into()),
            value_cents: Some(value_cents),
            min_order_cents: Some(30000),
            valid_from: Some((epoch() - secs(DAY)).to_rfc3339()),
            valid_until: Some(until.to_rfc3339()),
            categories: Some(Vec::new()),
            ..TemplateInput::default()
        };
        fresh(
            self.svc.create_template(&ctx(), None, input).await,
            "template",
        )
        .id
    }

    async fn claim(&self, user: &str, template_id: &TemplateId) -> CouponId {
        let uid = UserId::parse(user).expect("valid user id");
        fresh(
            self.svc.claim(&ctx(), None, uid, template_id.clone()).await,
            "claim",
        )
        .id
    }

    async fn campaign(&self, starts: DateTime<Utc>, policy: &str) -> CampaignId {
        let input = CampaignInput {
            name: Some(format!("{policy} campaign")),
            final_payment_starts_at: Some(starts.to_rfc3339()),
            final_payment_ends_at: Some((starts + secs(2 * DAY)).to_rfc3339()),
            policy: Some(policy.into()),
            compensation_mode: None,
        };
        fresh(
            self.svc.create_campaign(&ctx(), None, input).await,
            "campaign",
        )
        .id
    }

    async fn presale(&self, order_no: &str, user: &str, coupon: &CouponId, campaign: &CampaignId) {
        let input = OrderInput {
            order_no: Some(order_no.into()),
            user_id: Some(user.into()),
            kind: Some("presale".into()),
            category: Some("phones".into()),
            total_cents: Some(TOTAL),
            lines: None,
            coupon_id: Some(coupon.to_string()),
            coupon_ids: None,
            campaign_id: Some(campaign.to_string()),
            deposit_cents: Some(DEPOSIT),
        };
        fresh(
            self.svc
                .create_order(
                    &ctx(),
                    None,
                    OrderSpec::parse(input).expect("a well-formed order"),
                )
                .await,
            "presale order",
        );
    }

    async fn pay_deposit(&self, order_no: &str) {
        let o = fresh(
            self.svc.pay_deposit(&ctx(), None, order(order_no)).await,
            "pay deposit",
        );
        assert_eq!(o.status, OrderStatus::DepositPaid);
    }
}

fn ids(data: &Value) -> Vec<String> {
    let mut v: Vec<String> = data["coupon_ids"]
        .as_array()
        .expect("coupon_ids")
        .iter()
        .map(|x| x.as_str().unwrap_or_default().to_string())
        .collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<CouponId>) -> Vec<CouponId> {
    v.sort();
    v
}

#[tokio::test]
async fn each_offset_fires_once_per_coupon_including_an_offset_of_seconds() {
    let rig = Rig::start("1d,30m,45s", "").await;
    let tpl = rig.template(1000, 2 * DAY).await;
    let cpn = rig.claim("u1", &tpl).await;
    let ends = epoch() + secs(2 * DAY);

    assert_eq!(rig.plan().await.slots, 0, "nothing is due at the claim");
    for (offset, label) in [(DAY, "1d"), (30 * MIN, "30m"), (45, "45s")] {
        rig.set(ends - secs(offset) - secs(1));
        assert_eq!(rig.plan().await.slots, 0, "{label}: not a second early");
        rig.set(ends - secs(offset));
        let r = rig.plan().await;
        assert_eq!((r.slots, r.coupons), (1, 1), "{label}: due at its time");
        rig.set(ends - secs(offset) + secs(1));
        assert_eq!(rig.plan().await.slots, 0, "{label}: once only");
    }
    let sent = rig.outbox(COUPONS_EXPIRING).await;
    let offsets: Vec<i64> = sent
        .iter()
        .map(|(_, d)| d["offset_seconds"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(offsets, [DAY, 30 * MIN, 45]);
    for (user, data) in &sent {
        assert_eq!(user, "u1");
        assert_eq!(ids(data), std::slice::from_ref(&cpn));
        assert_eq!(data["channel"], "push", "10.00 yuan is below the sms tier");
        assert_eq!(data["total_value_cents"], 1000);
    }
    assert_eq!(
        rig.count("SELECT CAST(COUNT(*) AS BIGINT) FROM user_messages WHERE user_id = 'u1'")
            .await,
        3,
        "every reminder has its in-app copy"
    );
}

#[tokio::test]
async fn coupons_of_one_user_ending_within_the_window_make_one_message_with_their_total() {
    let rig = Rig::start("1d", "").await;
    // 12:00 in Shanghai two days after the epoch.
    let e = epoch() + secs(2 * DAY + 4 * HOUR);
    let mut mine = Vec::new();
    for (value, later) in [(5000, 0), (4000, 20 * MIN), (3000, 50 * MIN)] {
        let tpl = rig.template_until(value, e + secs(later)).await;
        mine.push(rig.claim("u1", &tpl).await);
    }
    let late_tpl = rig.template_until(2000, e + secs(2 * HOUR)).await;
    let late = rig.claim("u1", &late_tpl).await;
    let other_tpl = rig.template_until(1000, e).await;
    let others = rig.claim("u2", &other_tpl).await;

    rig.set(e - secs(DAY));
    let r = rig.plan().await;
    assert_eq!((r.slots, r.coupons), (2, 4), "{r:?}");
    let sent = rig.outbox(COUPONS_EXPIRING).await;
    let u1: Vec<&Value> = sent
        .iter()
        .filter(|(u, _)| u == "u1")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(u1.len(), 1, "one message for the three, not three");
    assert_eq!(ids(u1[0]), sorted(mine.clone()));
    assert_eq!(u1[0]["total_value_cents"], 12_000);
    assert_eq!(
        u1[0]["message"],
        "你有 3 张优惠券将于明天过期，共可省 120.00 元"
    );
    assert_eq!(
        u1[0]["earliest_ends_at"],
        couponkeeper::domain::time::rfc3339(e)
    );
    let u2: Vec<&Value> = sent
        .iter()
        .filter(|(u, _)| u == "u2")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(ids(u2[0]), [others]);

    // The coupon two hours later opens its own slot at its own time.
    rig.set(e + secs(2 * HOUR) - secs(DAY));
    let r = rig.plan().await;
    assert_eq!((r.slots, r.coupons), (1, 1));
    let sent = rig.outbox(COUPONS_EXPIRING).await;
    assert_eq!(ids(&sent[2].1), [late]);
    assert_eq!(
        rig.count("SELECT CAST(COUNT(*) AS BIGINT) FROM reminder_marks")
            .await,
        5
    );
}

#[tokio::test]
async fn a_coupon_used_or_expired_before_its_slot_is_not_reminded() {
    let rig = Rig::start("1d", "").await;
    let tpl = rig.template(5000, 2 * DAY).await;
    let used = rig.claim("u1", &tpl).await;
    let expired = rig.claim("u2", &tpl).await;
    let input = OrderInput {
        order_no: Some("N1".into()),
        user_id: Some("u1".into()),
        kind: Some("normal".into()),
        category: Some("phones".into()),
        total_cents: Some(TOTAL),
        lines: None,
        coupon_id: Some(used.to_string()),
        ..OrderInput::default()
    };
    fresh(
        rig.svc
            .create_order(
                &ctx(),
                None,
                OrderSpec::parse(input).expect("a well-formed order"),
            )
            .await,
        "order",
    );
    fresh(rig.svc.pay(&ctx(), None, order("N1")).await, "pay");

    // The planner was down through the whole day before the end: when it
    // comes back the coupon has ended (stored status still `available`).
    rig.set(epoch() + secs(2 * DAY) + secs(1));
    let r = rig.plan().await;
    assert_eq!(r.slots, 0, "{r:?}");
    rig.svc
        .expire_due_batch("job:test", 500)
        .await
        .expect("expire");
    assert_eq!(rig.plan().await.slots, 0);
    assert!(rig.outbox(COUPONS_EXPIRING).await.is_empty());
    let _ = expired;
}

#[tokio::test]
async fn quiet_hours_delay_a_reminder_to_their_end_unless_the_coupon_would_expire_first() {
    // Quiet 22:00-08:00 in Asia/Shanghai (UTC+8); the epoch is 08:00 there.
    let rig = Rig::start("1d,30m", "22:00-08:00").await;
    // Ends at 23:00 local the next day (15:00 UTC): its 1d slot is 23:00
    // local tonight, inside quiet hours.
    let ends = epoch() + secs(DAY + 15 * HOUR);
    let tpl = rig.template_until(1000, ends).await;
    rig.claim("u1", &tpl).await;

    rig.set(ends - secs(DAY));
    assert_eq!(rig.plan().await.slots, 0, "23:00 local: held back");
    rig.set(epoch() + secs(DAY) - secs(1));
    assert_eq!(rig.plan().await.slots, 0, "07:59:59 local: still quiet");
    rig.set(epoch() + secs(DAY));
    assert_eq!(rig.plan().await.slots, 1, "08:00 local: sent");

    // The 30m slot is 22:30 local, quiet too, but the coupon ends at 23:00,
    // before the quiet hours end: it goes at its time.
    rig.set(ends - secs(30 * MIN));
    assert_eq!(rig.plan().await.slots, 1, "22:30 local: sent at once");
    let sent = rig.outbox(COUPONS_EXPIRING).await;
    assert_eq!(sent.len(), 2);
    assert!(
        sent[1].1["message"]
            .as_str()
            .unwrap_or_default()
            .contains("今天"),
        "{:?}",
        sent[1].1
    );
}

/// The instant of an RFC 3339 literal.
fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .expect("valid literal")
}

#[tokio::test]
async fn in_new_york_a_reminder_held_by_quiet_hours_on_a_dst_night_goes_at_eight_local_time() {
    let rig = Rig::start_in_zone("1d", "22:00-08:00", "America/New_York").await;
    // Spring forward, 2027-03-14 02:00 EST -> 03:00 EDT. Ends 23:00 EDT on
    // the 14th: its 1d slot is 22:00 EST on the 13th (03:00 UTC), quiet.
    let spring = rig.template_until(1000, at("2027-03-15T03:00:00Z")).await;
    rig.claim("u1", &spring).await;
    // Fall back, 2027-11-07 02:00 EDT -> 01:00 EST. Ends 23:00 EST on the
    // 7th: its 1d slot is 00:00 EDT on the 7th (04:00 UTC), quiet.
    let fall = rig.template_until(1000, at("2027-11-08T04:00:00Z")).await;
    rig.claim("u2", &fall).await;

    rig.set(at("2027-03-14T03:00:00Z"));
    assert_eq!(rig.plan().await.slots, 0, "22:00 EST: held back");
    rig.set(at("2027-03-14T07:00:00Z"));
    assert_eq!(
        rig.plan().await.slots,
        0,
        "03:00 EDT, right after the jump: quiet"
    );
    rig.set(at("2027-03-14T11:59:59Z"));
    assert_eq!(rig.plan().await.slots, 0, "07:59:59 EDT: still quiet");
    // 08:00 EDT is 12:00 UTC, an hour before a fixed -05:00 would say.
    rig.set(at("2027-03-14T12:00:00Z"));
    assert_eq!(rig.plan().await.slots, 1, "08:00 EDT: sent");
    let sent = rig.outbox(COUPONS_EXPIRING).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, "u1");
    assert!(
        sent[0].1["message"]
            .as_str()
            .unwrap_or_default()
            .contains("今天"),
        "ends 23:00 local the same day: {:?}",
        sent[0].1
    );

    rig.set(at("2027-11-07T04:00:00Z"));
    assert_eq!(rig.plan().await.slots, 0, "00:00 EDT: held back");
    rig.set(at("2027-11-07T06:30:00Z"));
    assert_eq!(
        rig.plan().await.slots,
        0,
        "01:30 EST, the repeated hour: quiet"
    );
    // 08:00 EST is 13:00 UTC, an hour after a fixed -04:00 would say.
    rig.set(at("2027-11-07T12:00:00Z"));
    assert_eq!(rig.plan().await.slots, 0, "07:00 EST: still quiet");
    rig.set(at("2027-11-07T12:59:59Z"));
    assert_eq!(rig.plan().await.slots, 0, "07:59:59 EST: still quiet");
    rig.set(at("2027-11-07T13:00:00Z"));
    assert_eq!(rig.plan().await.slots, 1, "08:00 EST: sent");
    let sent = rig.outbox(COUPONS_EXPIRING).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].0, "u2");
    rig.set(at("2027-11-07T14:00:00Z"));
    assert_eq!(rig.plan().await.slots, 0, "once only");
}

#[tokio::test]
async fn tiers_send_valuable_reminders_by_sms_others_by_push_and_no_sms_to_inactive_users() {
    let rig = Rig::start("1d", "").await;
    let rich = rig.template(5000, 2 * DAY).await;
    let poor = rig.template(4999, 2 * DAY).await;
    rig.claim("rich", &rich).await;
    rig.claim("poor", &poor).await;
    rig.set(epoch() + secs(DAY));
    rig.plan().await;

    // Claimed 39 days before its reminder, nothing since: inactive.
    let idle = rig.template(8000, 40 * DAY).await;
    rig.set(epoch());
    rig.claim("idle", &idle).await;
    rig.set(epoch() + secs(39 * DAY));
    rig.plan().await;

    let sent = rig.outbox(COUPONS_EXPIRING).await;
    let channel_of = |user: &str| {
        sent.iter()
            .find(|(u, _)| u == user)
            .map(|(_, d)| d["channel"].as_str().unwrap_or_default().to_string())
            .unwrap_or_else(|| panic!("no reminder for {user}: {sent:?}"))
    };
    assert_eq!(channel_of("rich"), "sms");
    assert_eq!(channel_of("poor"), "push");
    assert_eq!(channel_of("idle"), "push");
}

#[tokio::test]
async fn a_recent_self_check_visit_keeps_a_user_without_claims_or_orders_active_for_sms() {
    let rig = Rig::start("1d", "").await;
    // Both claimed 40 days before their reminder and neither claimed nor
    // ordered since; one opened the self-check page 2 days before it.
    let t = rig.template(8000, 41 * DAY).await;
    rig.claim("visitor", &t).await;
    rig.claim("idle", &t).await;
    rig.set(epoch() + secs(38 * DAY));
    let verified = Verified {
        user_id: UserId::parse("visitor").expect("user id"),
        expires_at: epoch() + secs(39 * DAY),
    };
    rig.svc
        .record_self_check_visit(&verified)
        .await
        .expect("visit recorded");
    rig.set(epoch() + secs(40 * DAY));
    rig.plan().await;

    let sent = rig.outbox(COUPONS_EXPIRING).await;
    let channel_of = |user: &str| {
        sent.iter()
            .find(|(u, _)| u == user)
            .map(|(_, d)| d["channel"].as_str().unwrap_or_default().to_string())
            .unwrap_or_else(|| panic!("no reminder for {user}: {sent:?}"))
    };
    assert_eq!(channel_of("visitor"), "sms", "the visit counts as activity");
    assert_eq!(channel_of("idle"), "push", "31+ days without activity");
}

#[tokio::test]
async fn the_sms_cap_per_user_and_day_steps_further_reminders_down_to_push() {
    let rig = Rig::start("3h,2h,1h", "").await;
    let tpl = rig.template(9000, 4 * HOUR).await;
    rig.claim("u1", &tpl).await;
    for h in [1, 2, 3] {
        rig.set(epoch() + secs(h * HOUR));
        assert_eq!(rig.plan().await.slots, 1);
    }
    let channels: Vec<String> = rig
        .outbox(COUPONS_EXPIRING)
        .await
        .iter()
        .map(|(_, d)| d["channel"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(channels, ["sms", "sms", "push"]);
}

#[tokio::test]
async fn running_the_planner_twice_and_from_two_instances_writes_each_reminder_once() {
    let rig = Rig::start("1d", "").await;
    let tpl = rig.template(1000, 2 * DAY).await;
    let users = 40;
    for u in 0..users {
        rig.claim(&format!("user{u}"), &tpl).await;
        rig.claim(&format!("user{u}"), &tpl).await;
    }
    let at = epoch() + secs(DAY) + secs(1);
    rig.set(at);
    // A second instance: on PostgreSQL its own pool; on SQLite its own pool
    // on the same file (BEGIN IMMEDIATE serialises the two).
    let db2 = Db::connect(&rig.db.url, 5, 8).await.expect("second pool");
    let clock2 = Arc::new(ManualClock::new(at));
    let shared: SharedClock = clock2.clone();
    let svc2 = build_service(&rig.config(), db2, shared);
    let (a, b) = tokio::join!(rig.svc.plan_due_reminders(7), svc2.plan_due_reminders(7));
    let (a, b) = (a.expect("first instance"), b.expect("second instance"));
    assert_eq!(a.slots + b.slots, users, "{a:?} {b:?}");
    assert_eq!(a.coupons + b.coupons, 2 * users);
    assert_eq!(rig.plan().await.slots, 0, "a third run finds nothing");
    assert_eq!(svc2.plan_due_reminders(500).await.expect("again").slots, 0);
    let sent = rig.outbox(COUPONS_EXPIRING).await;
    assert_eq!(sent.len(), users);
    let mut who: Vec<String> = sent.iter().map(|(u, _)| u.clone()).collect();
    who.sort();
    who.dedup();
    assert_eq!(who.len(), users, "one message per user");
    assert_eq!(
        rig.count("SELECT CAST(COUNT(*) AS BIGINT) FROM user_messages")
            .await,
        users as i64
    );
    if store() == Store::Postgres {
        // Whatever the interleaving, a lost race is a skip, never a repeat.
        assert!(a.raced + b.raced <= users, "{a:?} {b:?}");
    }
}

#[tokio::test]
async fn strict_policy_warns_at_deposit_and_again_before_the_coupon_ends_never_first_at_final_payment()
 {
    let rig = Rig::start("3d,1d,30m", "").await;
    let tpl = rig.template(5000, 3 * DAY).await;
    let doomed = rig.claim("u1", &tpl).await;
    let fine = rig.claim("u2", &tpl).await;
    let locked = rig.claim("u3", &tpl).await;
    let strict = rig.campaign(epoch() + secs(5 * DAY), "strict").await;
    let strict_soon = rig.campaign(epoch() + secs(2 * DAY), "strict").await;
    let lock = rig.campaign(epoch() + secs(5 * DAY), "lock").await;
    rig.presale("P1", "u1", &doomed, &strict).await;
    rig.presale("P2", "u2", &fine, &strict_soon).await;
    rig.presale("P3", "u3", &locked, &lock).await;
    for o in ["P1", "P2", "P3"] {
        rig.pay_deposit(o).await;
    }
    let warned = rig.outbox(EXPIRES_BEFORE_FINAL_PAYMENT).await;
    assert_eq!(
        warned.len(),
        1,
        "only the strict order whose coupon ends first: {warned:?}"
    );
    assert_eq!(warned[0].0, "u1");
    assert_eq!(warned[0].1["order_no"], "P1");
    assert_eq!(warned[0].1["coupon_id"], doomed.as_str());
    assert!(
        warned[0].1["message"]
            .as_str()
            .unwrap_or_default()
            .contains("P1")
    );

    // Again one offset before the coupon ends (1d: the 3d slot was at the
    // deposit itself), once.
    rig.set(epoch() + secs(2 * DAY) - secs(1));
    assert_eq!(rig.plan().await.strict_warnings, 0);
    rig.set(epoch() + secs(2 * DAY));
    assert_eq!(rig.plan().await.strict_warnings, 1);
    rig.set(epoch() + secs(2 * DAY + 30 * MIN));
    assert_eq!(rig.plan().await.strict_warnings, 0);
    assert_eq!(rig.outbox(EXPIRES_BEFORE_FINAL_PAYMENT).await.len(), 2);

    // The window opens: the final payment says what it is, and no warning
    // appears for the first time there.
    rig.set(epoch() + secs(5 * DAY));
    rig.plan().await;
    let o = fresh(rig.svc.pay_final(&ctx(), None, order("P1")).await, "final");
    assert_eq!(
        o.final_payment_cents.map(|c| c.get()),
        Some(TOTAL - DEPOSIT)
    );
    rig.plan().await;
    let warned = rig.outbox(EXPIRES_BEFORE_FINAL_PAYMENT).await;
    assert_eq!(warned.len(), 2);
    assert!(warned.iter().all(|(u, _)| u == "u1"));
}

#[tokio::test]
async fn final_payment_open_tells_each_deposit_paid_order_once_with_amount_and_saving() {
    let rig = Rig::start("3d,1d,30m", "22:00-08:00").await;
    let tpl = rig.template(5000, 10 * DAY).await;
    let c1 = rig.claim("u1", &tpl).await;
    let c2 = rig.claim("u2", &tpl).await;
    // 10:00 local the next day.
    let opens = epoch() + secs(DAY + 2 * HOUR);
    let campaign = rig.campaign(opens, "lock").await;
    rig.presale("P1", "u1", &c1, &campaign).await;
    rig.presale("P2", "u2", &c2, &campaign).await;
    rig.pay_deposit("P1").await;

    rig.set(opens - secs(1));
    assert_eq!(rig.plan().await.final_payment_open, 0);
    rig.set(opens);
    assert_eq!(rig.plan().await.final_payment_open, 1);
    rig.set(opens + secs(1));
    assert_eq!(rig.plan().await.final_payment_open, 0, "once");
    let sent = rig.outbox(FINAL_PAYMENT_OPEN).await;
    assert_eq!(sent.len(), 1, "P2 never paid its deposit");
    let (user, data) = &sent[0];
    assert_eq!(user, "u1");
    assert_eq!(data["order_no"], "P1");
    assert_eq!(data["amount_due_cents"], TOTAL - DEPOSIT - 5000);
    assert_eq!(data["discount_cents"], 5000);
    assert!(
        data["message"]
            .as_str()
            .unwrap_or_default()
            .contains("本次尾款 249.00 元，已为你抵扣 50.00 元"),
        "{data}"
    );
    let quote = rig
        .svc
        .final_payment_quote(&order("P1"))
        .await
        .expect("quote");
    assert_eq!(
        quote.amount_due_cents.get(),
        data["amount_due_cents"].as_i64().unwrap_or(-1)
    );
}

#[tokio::test]
async fn a_campaign_whose_orders_were_all_told_is_not_read_again_once_late_deposits_had_time_to_commit()
 {
    let rig = Rig::start("3d,1d,30m", "").await;
    let tpl = rig.template(5000, 10 * DAY).await;
    let c1 = rig.claim("u1", &tpl).await;
    let c2 = rig.claim("u2", &tpl).await;
    let opens = epoch() + secs(DAY);
    let campaign = rig.campaign(opens, "lock").await;
    rig.presale("P1", "u1", &c1, &campaign).await;
    rig.presale("P2", "u2", &c2, &campaign).await;
    rig.pay_deposit("P1").await;

    rig.set(opens);
    assert_eq!(rig.plan().await.final_payment_open, 1);
    assert!(
        !rig.cursor.lock().await.remembers_told_open(&campaign),
        "a deposit stamped before the window may still be committing"
    );
    // Such a deposit: paid a second before the window opened, committed
    // after the first pass read the campaign. The next pass still tells it.
    rig.set(opens - secs(1));
    rig.pay_deposit("P2").await;
    rig.set(opens + secs(30));
    assert_eq!(rig.plan().await.final_payment_open, 1, "the late deposit");
    assert!(!rig.cursor.lock().await.remembers_told_open(&campaign));

    // A minute after the window opened a pass that finds nothing left
    // remembers the campaign; later runs skip it.
    rig.set(opens + secs(MIN));
    assert_eq!(rig.plan().await.final_payment_open, 0);
    assert!(rig.cursor.lock().await.remembers_told_open(&campaign));
    assert_eq!(rig.outbox(FINAL_PAYMENT_OPEN).await.len(), 2, "each once");

    // Once the window has closed the planner forgets it.
    rig.set(opens + secs(3 * DAY));
    rig.plan().await;
    assert!(!rig.cursor.lock().await.remembers_told_open(&campaign));
}

#[tokio::test]
async fn the_strict_warning_query_reads_only_locked_coupons_ending_within_the_largest_offset() {
    let rig = Rig::start("3d,1d,30m", "").await;
    let now_ms = epoch().timestamp_millis();
    let starts_ms = now_ms + 30 * DAY * 1000;
    // 20,000 deposit-paid orders of one strict campaign whose coupons end
    // before its window but long after the largest offset: none is due.
    let pool = rig.pool();
    sqlx::query(
        "INSERT INTO presale_campaigns (id, name, final_payment_starts_at, final_payment_ends_at, policy, created_at)
         VALUES ('pc_bulk', 'bulk', $1, $2, 'strict', $3)",
    )
    .bind(starts_ms)
    .bind(starts_ms + DAY * 1000)
    .bind(now_ms)
    .execute(pool)
    .await
    .expect("campaign");
    let series = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)";
    sqlx::query(&format!(
        "INSERT INTO coupons (id, code, user_id, source, kind, value_cents, min_order_cents, categories,
                              status, starts_at, ends_at, order_no, locked_at, created_at, updated_at)
         {series}
         SELECT 'cpn_bulk_' || i, 'BULK-' || i, 'ub' || i, 'claim', 'fixed', 1000, 0, '[]',
                'locked', $1, $2 + i, 'PB' || i, $1, $1, $1
         FROM n"
    ))
    .bind(now_ms)
    .bind(now_ms + 20 * DAY * 1000)
    .execute(pool)
    .await
    .expect("coupons");
    sqlx::query(&format!(
        "INSERT INTO orders (order_no, user_id, kind, category, status, total_cents, deposit_cents,
                             campaign_id, coupon_id, coupon_lock_status, created_at, deposit_paid_at, updated_at)
         {series}
         SELECT 'PB' || i, 'ub' || i, 'presale', 'phones', 'deposit_paid', 39900, 10000,
                'pc_bulk', 'cpn_bulk_' || i, 'locked', $1, $1, $1
         FROM n"
    ))
    .bind(now_ms)
    .execute(pool)
    .await
    .expect("orders");
    sqlx::query("ANALYZE").execute(pool).await.expect("analyze");

    let backend = rig.db.db.backend();
    let explain = crate::common::explain_sql(backend, STRICT_RISKS_SQL);
    let rows = sqlx::query(&explain)
        .bind(now_ms)
        .bind(now_ms + 3 * DAY * 1000)
        .bind(500_i64)
        .fetch_all(pool)
        .await
        .expect("explain");
    let plan = crate::common::plan_text(&rows, backend);
    println!("{plan}");
    assert!(plan.contains("coupons_status_ends_at_idx"), "{plan}");
    for bad in [
        "Seq Scan on orders",
        "Seq Scan on coupons",
        "SCAN o",
        "SCAN c",
    ] {
        assert!(!plan.contains(bad), "no {bad}:\n{plan}");
    }
    // And the planner sends nothing for them.
    assert_eq!(rig.plan().await.strict_warnings, 0);
}

/// A receiver that records every webhook body it gets and answers 200.
async fn receiver() -> (String, Arc<tokio::sync::Mutex<Vec<String>>>) {
    use axum::body::Bytes;
    use axum::extract::State;
    type Got = Arc<tokio::sync::Mutex<Vec<String>>>;
    async fn hook(State(got): State<Got>, body: Bytes) -> axum::http::StatusCode {
        got.lock()
            .await
            .push(String::from_utf8_lossy(&body).into_owned());
        axum::http::StatusCode::OK
    }
    let got: Got = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind receiver");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(got.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, got)
}

#[tokio::test]
async fn a_reminder_reaches_the_webhook_receiver_as_one_delivery_for_the_user_and_slot() {
    let (url, got) = receiver().await;
    let rig = Rig::start_with_webhook("1d", "", Some(url)).await;
    let tpl = rig.template(3000, 2 * DAY).await;
    let a = rig.claim("u1", &tpl).await;
    let b = rig.claim("u1", &tpl).await;
    rig.set(epoch() + secs(DAY));
    assert_eq!(rig.plan().await.slots, 1);
    for _ in 0..5 {
        rig.svc.dispatch_once(100).await.expect("dispatch");
    }
    let bodies = got.lock().await.clone();
    let reminders: Vec<Value> = bodies
        .iter()
        .map(|b| serde_json::from_str::<Value>(b).expect("JSON body"))
        .filter(|v| v["type"] == COUPONS_EXPIRING)
        .collect();
    assert_eq!(reminders.len(), 1, "{bodies:?}");
    let r = &reminders[0];
    assert_eq!(r["user_id"], "u1");
    assert_eq!(ids(&r["data"]), sorted(vec![a, b]));
    assert_eq!(r["data"]["total_value_cents"], 6000);
    assert_eq!(r["data"]["channel"], "sms");
    assert_eq!(
        r["data"]["message"],
        "你有 2 张优惠券将于明天过期，共可省 60.00 元"
    );
}
