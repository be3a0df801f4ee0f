-- Redeem codes (兑换码, issue 18 item 1). An operator asks for a batch of
-- codes for a template (code_batches); the code job generates them in
-- bounded chunks (redeem_codes), each chunk one transaction that also
-- advances generated_count, so a restart resumes where the last committed
-- chunk ended. A customer's redemption is a conditional UPDATE of the
-- code row in the same transaction as the coupon it creates. Voiding a
-- batch marks it at once; the job voids its unredeemed codes in bounded
-- chunks. New tables only (expand).
--
-- Coupons from codes have source 'code': the CHECK of coupons.source is
-- widened (expand: the previous release writes only 'claim' and
-- 'compensation', both still allowed). On PostgreSQL the constraint is
-- replaced NOT VALID (no scan of coupons under the lock; the wider check
-- holds for every existing row by construction) and validated after,
-- which takes only a SHARE UPDATE EXCLUSIVE lock.
ALTER TABLE coupons DROP CONSTRAINT IF EXISTS coupons_source_check;
ALTER TABLE coupons ADD CONSTRAINT coupons_source_check
    CHECK (source IN ('claim', 'compensation', 'code')) NOT VALID;
ALTER TABLE coupons VALIDATE CONSTRAINT coupons_source_check;

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
