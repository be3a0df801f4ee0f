-- Redeem codes (兑换码, issue 18 item 1): see migrations/postgres/0024.
--
-- Coupons from codes have source 'code'. SQLite cannot change a CHECK in
-- place: the coupons table is rebuilt with the wider CHECK (expand: the
-- previous release writes only 'claim' and 'compensation'), its rows and
-- its indexes, as 0020 rebuilt the ledger. The columns are those of every
-- earlier migration (0001, and 0017's generated code_key); a migration
-- that adds a coupons column before this one must add it here too. The
-- copy takes one pass over coupons at upgrade (SQLite is one process: the
-- upgrade is a restart).
CREATE TABLE coupons_0024 (
    id                 TEXT PRIMARY KEY,
    code               TEXT NOT NULL,
    user_id            TEXT NOT NULL,
    template_id        TEXT REFERENCES templates (id),
    source             TEXT NOT NULL CHECK (source IN ('claim', 'compensation', 'code')),
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
    updated_at         BIGINT NOT NULL,
    code_key           TEXT GENERATED ALWAYS AS (upper(replace(replace(code, ' ', ''), '-', ''))) VIRTUAL
);
INSERT INTO coupons_0024 (id, code, user_id, template_id, source, kind, value_cents, percent_off,
        max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no,
        locked_at, used_at, created_at, updated_at)
    SELECT id, code, user_id, template_id, source, kind, value_cents, percent_off,
        max_discount_cents, min_order_cents, categories, status, starts_at, ends_at, order_no,
        locked_at, used_at, created_at, updated_at FROM coupons;
DROP TABLE coupons;
ALTER TABLE coupons_0024 RENAME TO coupons;
-- The indexes of 0001, 0003, 0005 and 0017, as 0023 left them (0023 dropped
-- coupons_user_status_idx, a prefix of coupons_user_status_ends_idx).
CREATE UNIQUE INDEX coupons_code_key ON coupons (code);
CREATE INDEX coupons_status_ends_at_idx ON coupons (status, ends_at);
CREATE INDEX coupons_order_no_idx ON coupons (order_no);
CREATE INDEX coupons_template_status_ends_idx ON coupons (template_id, status, ends_at, id);
CREATE INDEX coupons_user_status_ends_idx ON coupons (user_id, status, ends_at, id);
CREATE INDEX coupons_status_locked_at_idx ON coupons (status, locked_at, id);
CREATE INDEX coupons_status_updated_at_idx ON coupons (status, updated_at, id);
CREATE INDEX coupons_code_key_idx ON coupons (code_key);

CREATE TABLE code_batches (
    id               TEXT PRIMARY KEY,
    template_id      TEXT NOT NULL REFERENCES templates (id),
    code_count       BIGINT NOT NULL CHECK (code_count BETWEEN 1 AND 100000),
    prefix           TEXT NOT NULL DEFAULT '',
    code_length      BIGINT NOT NULL,
    generated_count  BIGINT NOT NULL DEFAULT 0,
    status           TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    error            TEXT,
    created_by       TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    finished_at      BIGINT,
    voided_at        BIGINT,
    void_reason      TEXT,
    voided_by        TEXT,
    voided_count     BIGINT NOT NULL DEFAULT 0,
    void_finished_at BIGINT
);
-- A template's batches, newest first (the console's list).
CREATE INDEX code_batches_template_idx ON code_batches (template_id, created_at, id);
-- The job's work: running batches and voids in progress, oldest first.
CREATE INDEX code_batches_status_idx ON code_batches (status, created_at, id);
CREATE INDEX code_batches_void_idx ON code_batches (void_finished_at, voided_at);

-- One row per code. `code` is the normalized code (upper case, no spaces
-- or dashes): the primary key is the unique index that keeps codes unique
-- across every batch, also under concurrent generation.
CREATE TABLE redeem_codes (
    code        TEXT PRIMARY KEY,
    batch_id    TEXT NOT NULL REFERENCES code_batches (id),
    template_id TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    redeemed_at BIGINT,
    user_id     TEXT,
    coupon_id   TEXT,
    voided_at   BIGINT
);
-- A batch's codes in code order: the CSV's keyset pages and the void's
-- bounded batches.
CREATE INDEX redeem_codes_batch_idx ON redeem_codes (batch_id, code);
