-- Code redemption attempts, for the failure limits per user and per client
-- address (identical in migrations/sqlite and migrations/postgres but for
-- the id column; expand-only: a new table).
--
-- An attempt is written as pending before its code is looked up, in one
-- step serialized per user and per address, and settled afterwards; a
-- pending or failed attempt counts against the limits, so a burst of
-- parallel guesses cannot all pass the check before any is counted. Rows
-- older than a day are purged by the daily job.
CREATE TABLE redeem_attempts (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id TEXT NOT NULL,
    address TEXT NOT NULL,
    -- 0 failed (no such code, or redeemed already), 1 not a failure (the
    -- code redeemed, or a refusal that is not a wrong guess), 2 pending.
    outcome BIGINT NOT NULL CHECK (outcome IN (0, 1, 2)),
    at      BIGINT NOT NULL
);
CREATE INDEX redeem_attempts_user_idx ON redeem_attempts (user_id, at);
CREATE INDEX redeem_attempts_address_idx ON redeem_attempts (address, at);
-- The daily purge.
CREATE INDEX redeem_attempts_at_idx ON redeem_attempts (at);
