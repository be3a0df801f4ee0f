-- Report counters off the lock path. Until now every counted change
-- UPSERTed two rows (the day's and the all-days row) of one of 16 shards
-- of `template_counts` inside its own transaction, so every payment of one
-- hot template queued behind the rows its neighbours held until commit.
-- Now a change only INSERTs one delta row here (no row another
-- transaction holds, no conflict to wait on); the counter-fold job adds
-- the deltas into `template_counts` / `campaign_counts` (the day row and
-- the all-days row) and deletes them, in bounded batches. Readers add the
-- deltas not folded yet in the same statement, so a report is exact at
-- every moment, however far the fold is behind (store::counters).
--
-- `id` orders the deltas for the fold (taken `FOR UPDATE SKIP LOCKED`, so
-- two instances fold different rows); `shard` is the random shard of the
-- change, kept so the statements that write a delta stay as they were.
CREATE TABLE template_count_deltas (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    template_id          TEXT NOT NULL,
    day                  BIGINT NOT NULL,
    shard                BIGINT NOT NULL DEFAULT 0,
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
    status_invalidated   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX template_count_deltas_key_idx ON template_count_deltas (template_id, day);

CREATE TABLE campaign_count_deltas (
    id                   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    campaign_id          TEXT NOT NULL,
    day                  BIGINT NOT NULL,
    shard                BIGINT NOT NULL DEFAULT 0,
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
    status_invalidated   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX campaign_count_deltas_key_idx ON campaign_count_deltas (campaign_id, day);
