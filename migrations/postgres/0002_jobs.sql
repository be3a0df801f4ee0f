-- Expiry engine and background jobs (PostgreSQL). Identical to
-- migrations/sqlite/0002_jobs.sql but for auto-increment keys.

-- Messages for the outside world, written in the same transaction as the
-- change that causes them; delivered later by a dispatcher.
CREATE TABLE outbox (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_type    TEXT NOT NULL,
    user_id       TEXT,
    subject_id    TEXT,
    payload       TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    dispatched_at BIGINT
);
CREATE INDEX outbox_pending_idx ON outbox (dispatched_at, id);

-- Zombie-lock reaper: locked coupons by lock age.
CREATE INDEX coupons_status_locked_at_idx ON coupons (status, locked_at);
-- Archiving: terminal coupons by last change.
CREATE INDEX coupons_status_updated_at_idx ON coupons (status, updated_at);
-- Presale timeout: a campaign's deposit-paid orders.
CREATE INDEX orders_campaign_status_idx ON orders (campaign_id, status);
-- Presale timeout: campaigns by window end.
CREATE INDEX presale_campaigns_ends_idx ON presale_campaigns (final_payment_ends_at);

-- Old terminal coupons and their events, moved out of the hot tables.
CREATE TABLE coupons_archive (
    id                 TEXT PRIMARY KEY,
    code               TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    template_id        TEXT,
    source             TEXT NOT NULL,
    kind               TEXT NOT NULL,
    value_cents        BIGINT,
    percent_off        BIGINT,
    max_discount_cents BIGINT,
    min_order_cents    BIGINT NOT NULL,
    categories         TEXT NOT NULL,
    status             TEXT NOT NULL,
    starts_at          BIGINT NOT NULL,
    ends_at            BIGINT NOT NULL,
    order_no           TEXT,
    locked_at          BIGINT,
    used_at            BIGINT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    archived_at        BIGINT NOT NULL
);
CREATE INDEX coupons_archive_user_idx ON coupons_archive (user_id, status);
CREATE INDEX coupons_archive_code_idx ON coupons_archive (code);
CREATE INDEX coupons_archive_order_no_idx ON coupons_archive (order_no);

CREATE TABLE events_archive (
    id          BIGINT PRIMARY KEY,
    subject     TEXT NOT NULL,
    coupon_id   TEXT,
    order_no    TEXT,
    from_status TEXT,
    to_status   TEXT NOT NULL,
    action      TEXT NOT NULL,
    actor       TEXT NOT NULL,
    reason      TEXT,
    request_id  TEXT,
    at          BIGINT NOT NULL
);
CREATE INDEX events_archive_coupon_idx ON events_archive (coupon_id, id);

-- One row per background job run: what ran, when, how long, what it did.
CREATE TABLE job_runs (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job         TEXT NOT NULL,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT NOT NULL,
    rows        BIGINT NOT NULL,
    error       TEXT
);
CREATE INDEX job_runs_job_idx ON job_runs (job, id);
