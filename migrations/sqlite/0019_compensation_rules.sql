-- Compensation rules kept in the database, versioned (sqlite). Identical
-- in both stores.
--
-- A version is written whole and never changed: support's caps and the
-- list of presets in force from created_at until the next version. Version
-- 1 is inserted from COUPONKEEPER_SUPPORT_COMPENSATION_* on first use
-- (INSERT ... ON CONFLICT (version) DO NOTHING, so several instances
-- starting at once insert it once).
CREATE TABLE compensation_rule_versions (
    version             BIGINT PRIMARY KEY,
    support_max_cents   BIGINT NOT NULL CHECK (support_max_cents >= 0),
    support_daily_cents BIGINT NOT NULL CHECK (support_daily_cents >= 0),
    created_at          BIGINT NOT NULL,
    -- staff:<name>, api:<token id>, or settings for version 1.
    actor               TEXT NOT NULL,
    reason              TEXT NOT NULL
);

-- The presets of each version, in the order staff see them. A preset kept
-- from one version to the next keeps its id.
CREATE TABLE compensation_presets (
    version         BIGINT NOT NULL REFERENCES compensation_rule_versions (version),
    id              TEXT NOT NULL,
    position        BIGINT NOT NULL,
    reason          TEXT NOT NULL,
    value_cents     BIGINT NOT NULL CHECK (value_cents > 0),
    valid_seconds   BIGINT NOT NULL CHECK (valid_seconds > 0),
    min_order_cents BIGINT NOT NULL CHECK (min_order_cents >= 0),
    -- JSON array of category names; [] means every category.
    categories      TEXT NOT NULL,
    PRIMARY KEY (version, id)
);

-- Which preset and which rules version allowed each compensation, and the
-- campaign of its order (copied at insert so the finance ledger filters
-- on it with an index instead of joining every row to orders). Rows from
-- before this migration have no rules version; their campaign is filled
-- in from their order below.
ALTER TABLE compensation_ledger ADD COLUMN preset_id TEXT;
ALTER TABLE compensation_ledger ADD COLUMN rules_version BIGINT;
ALTER TABLE compensation_ledger ADD COLUMN campaign_id TEXT;
UPDATE compensation_ledger SET campaign_id =
    (SELECT o.campaign_id FROM orders o WHERE o.order_no = compensation_ledger.order_no)
WHERE order_no IS NOT NULL;

-- The finance ledger: keyset pages newest first in (at, id) order, one
-- index per filter, each ending in (at, id), so a page and the totals of
-- a filtered range are one index range scan.
CREATE INDEX compensation_ledger_at_idx ON compensation_ledger (at, id);
DROP INDEX compensation_ledger_actor_at_idx;
CREATE INDEX compensation_ledger_actor_at_idx ON compensation_ledger (actor, at, id);
DROP INDEX compensation_ledger_order_idx;
CREATE INDEX compensation_ledger_order_idx ON compensation_ledger (order_no, at, id);
CREATE INDEX compensation_ledger_preset_at_idx ON compensation_ledger (preset_id, at, id);
CREATE INDEX compensation_ledger_campaign_at_idx ON compensation_ledger (campaign_id, at, id);
