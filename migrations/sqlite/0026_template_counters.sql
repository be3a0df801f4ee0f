-- Report counters (sqlite). Identical columns in both stores.
--
-- Written in the same transaction as the change they count (see
-- src/store/counters.rs), never by scanning coupons on a read.
--
-- day: the business day (COUPONKEEPER_BUSINESS_TZ) as days since
-- 1970-01-01 of the local date; -1 is the all-days row, which receives
-- every delta its day row does (so it equals the sum of the day rows).
-- shard: 0..15, chosen at random per change, so concurrent claims of one
-- hot template do not queue behind one counter row (the stock is sharded
-- the same way); readers sum over the shards.
--
-- Flow columns (what happened that day): claimed (coupons created),
-- used (a lock became a use), returned (a use given back by a refund),
-- expired, invalidated, discount_cents (discounts of the orders that used
-- a coupon, less those refunded), compensation_cents (compensation handed
-- out for a coupon at the final payment / for a campaign's orders).
-- status_* columns: the net change of the stored status counts that day;
-- on the all-days row, the stored status counts themselves.
CREATE TABLE template_counts (
    template_id          TEXT NOT NULL,
    day                  BIGINT NOT NULL,
    shard                BIGINT NOT NULL,
    claimed              BIGINT NOT NULL DEFAULT 0,
    used                 BIGINT NOT NULL DEFAULT 0,
    returned             BIGINT NOT NULL DEFAULT 0,
    expired              BIGINT NOT NULL DEFAULT 0,
    invalidated          BIGINT NOT NULL DEFAULT 0,
    discount_cents       BIGINT NOT NULL DEFAULT 0,
    compensation_cents   BIGINT NOT NULL DEFAULT 0,
    status_available     BIGINT NOT NULL DEFAULT 0,
    status_locked        BIGINT NOT NULL DEFAULT 0,
    status_used          BIGINT NOT NULL DEFAULT 0,
    status_expired       BIGINT NOT NULL DEFAULT 0,
    status_invalidated   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (template_id, day, shard)
);

-- The same per presale campaign, for the coupons bound to its orders:
-- claimed = coupons locked to one of its orders (deposit payment, swap),
-- status_locked = those still locked (their final payment is ahead).
CREATE TABLE campaign_counts (
    campaign_id          TEXT NOT NULL,
    day                  BIGINT NOT NULL,
    shard                BIGINT NOT NULL,
    claimed              BIGINT NOT NULL DEFAULT 0,
    used                 BIGINT NOT NULL DEFAULT 0,
    returned             BIGINT NOT NULL DEFAULT 0,
    expired              BIGINT NOT NULL DEFAULT 0,
    invalidated          BIGINT NOT NULL DEFAULT 0,
    discount_cents       BIGINT NOT NULL DEFAULT 0,
    compensation_cents   BIGINT NOT NULL DEFAULT 0,
    status_available     BIGINT NOT NULL DEFAULT 0,
    status_locked        BIGINT NOT NULL DEFAULT 0,
    status_used          BIGINT NOT NULL DEFAULT 0,
    status_expired       BIGINT NOT NULL DEFAULT 0,
    status_invalidated   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (campaign_id, day, shard)
);

-- Coupons issued before this migration: their stored status counts go to
-- the all-days row of shard 0 (their days cannot be told in SQL: the
-- business zone is a setting), so the template list's counts hold from
-- the first start on.
INSERT INTO template_counts (template_id, day, shard, claimed, used, expired, invalidated,
    status_available, status_locked, status_used, status_expired, status_invalidated)
SELECT template_id, -1, 0, COUNT(*),
    SUM(CASE WHEN status = 'used' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'expired' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'invalidated' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'available' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'locked' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'used' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'expired' THEN 1 ELSE 0 END),
    SUM(CASE WHEN status = 'invalidated' THEN 1 ELSE 0 END)
FROM (SELECT template_id, status FROM coupons
      UNION ALL SELECT template_id, status FROM coupons_archive) AS issued
WHERE template_id IS NOT NULL
GROUP BY template_id;
