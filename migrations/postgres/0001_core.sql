-- couponkeeper core schema (PostgreSQL). Timestamps are BIGINT milliseconds
-- since the Unix epoch, UTC. Kept column-for-column identical to
-- migrations/sqlite/0001_core.sql so one query text serves both stores.

CREATE TABLE templates (
    id                 TEXT PRIMARY KEY,
    name               TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('fixed', 'percent')),
    value_cents        BIGINT,
    percent_off        BIGINT,
    max_discount_cents BIGINT,
    min_order_cents    BIGINT NOT NULL DEFAULT 0,
    categories         TEXT NOT NULL DEFAULT '[]',
    valid_from         BIGINT,
    valid_until        BIGINT,
    valid_seconds      BIGINT,
    total_stock        BIGINT,
    per_user_limit     BIGINT,
    status             TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at         BIGINT NOT NULL
);

-- Stock split over shards so concurrent claims lock different rows.
CREATE TABLE template_stock_shards (
    template_id TEXT NOT NULL REFERENCES templates (id),
    shard       BIGINT NOT NULL,
    capacity    BIGINT,
    claimed     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (template_id, shard),
    CHECK (capacity IS NULL OR claimed <= capacity)
);

-- Claims per user and template, for per_user_limit.
CREATE TABLE template_user_claims (
    template_id TEXT NOT NULL REFERENCES templates (id),
    user_id     TEXT NOT NULL,
    claimed     BIGINT NOT NULL,
    PRIMARY KEY (template_id, user_id)
);

CREATE TABLE coupons (
    id                 TEXT PRIMARY KEY,
    code               TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    template_id        TEXT REFERENCES templates (id),
    source             TEXT NOT NULL CHECK (source IN ('claim', 'compensation')),
    kind               TEXT NOT NULL CHECK (kind IN ('fixed', 'percent')),
    value_cents        BIGINT,
    percent_off        BIGINT,
    max_discount_cents BIGINT,
    min_order_cents    BIGINT NOT NULL DEFAULT 0,
    categories         TEXT NOT NULL DEFAULT '[]',
    status             TEXT NOT NULL CHECK (status IN ('available', 'locked', 'used', 'expired', 'invalidated')),
    starts_at          BIGINT NOT NULL,
    ends_at            BIGINT NOT NULL,
    order_no           TEXT,
    locked_at          BIGINT,
    used_at            BIGINT,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL
);
CREATE UNIQUE INDEX coupons_code_key ON coupons (code);
CREATE INDEX coupons_user_status_idx ON coupons (user_id, status);
CREATE INDEX coupons_status_ends_at_idx ON coupons (status, ends_at);
CREATE INDEX coupons_order_no_idx ON coupons (order_no);

CREATE TABLE presale_campaigns (
    id                      TEXT PRIMARY KEY,
    name                    TEXT NOT NULL,
    final_payment_starts_at BIGINT NOT NULL,
    final_payment_ends_at   BIGINT NOT NULL,
    policy                  TEXT NOT NULL CHECK (policy IN ('lock', 'strict', 'swap_or_compensate')),
    created_at              BIGINT NOT NULL
);

CREATE TABLE orders (
    order_no                 TEXT PRIMARY KEY,
    user_id                  TEXT NOT NULL,
    kind                     TEXT NOT NULL CHECK (kind IN ('normal', 'presale')),
    category                 TEXT NOT NULL,
    status                   TEXT NOT NULL,
    total_cents              BIGINT NOT NULL,
    deposit_cents            BIGINT NOT NULL DEFAULT 0,
    campaign_id              TEXT REFERENCES presale_campaigns (id),
    coupon_id                TEXT,
    replaced_coupon_id       TEXT,
    coupon_discount_cents    BIGINT NOT NULL DEFAULT 0,
    discount_snapshot_cents  BIGINT NOT NULL DEFAULT 0,
    coupon_lock_status       TEXT NOT NULL DEFAULT 'none',
    compensation_cents       BIGINT NOT NULL DEFAULT 0,
    final_payment_cents      BIGINT,
    checkout_lock_expires_at BIGINT,
    created_at               BIGINT NOT NULL,
    deposit_paid_at          BIGINT,
    paid_at                  BIGINT,
    closed_at                BIGINT,
    refunded_at              BIGINT,
    updated_at               BIGINT NOT NULL
);
CREATE INDEX orders_coupon_id_idx ON orders (coupon_id);
CREATE INDEX orders_user_status_idx ON orders (user_id, status);
CREATE INDEX orders_status_checkout_idx ON orders (status, checkout_lock_expires_at);

-- Every state change of a coupon or an order: who, when, why.
CREATE TABLE events (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject     TEXT NOT NULL CHECK (subject IN ('coupon', 'order')),
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
CREATE INDEX events_coupon_idx ON events (coupon_id, id);
CREATE INDEX events_order_idx ON events (order_no, id);

-- Money handed out to make up for a coupon the platform could not honour.
CREATE TABLE compensation_ledger (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      TEXT NOT NULL,
    order_no     TEXT,
    coupon_id    TEXT,
    kind         TEXT NOT NULL CHECK (kind IN ('final_payment_deduction', 'coupon')),
    amount_cents BIGINT NOT NULL CHECK (amount_cents >= 0),
    reason       TEXT NOT NULL,
    actor        TEXT NOT NULL,
    request_id   TEXT,
    at           BIGINT NOT NULL
);
CREATE INDEX compensation_ledger_order_idx ON compensation_ledger (order_no);
CREATE INDEX compensation_ledger_user_idx ON compensation_ledger (user_id, at);

-- Idempotency-Key records: scope is a hash of the API token.
CREATE TABLE idempotency_keys (
    scope       TEXT NOT NULL,
    idem_key    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    status_code BIGINT NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
