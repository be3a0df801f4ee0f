-- Operators run presale campaigns from the console (issue 16):
--
-- * compensation_mode: how a `swap_or_compensate` campaign makes up for an
--   expired coupon when no replacement is found at the final payment:
--   `deduction` (taken off the final payment, as before) or `coupon` (a new
--   compensation coupon of the same value, issued in the final payment's
--   transaction). Existing campaigns keep `deduction`.
-- * presale_campaigns_created_idx: GET /presale-campaigns and
--   /console/campaigns list campaigns newest first in keyset pages
--   (created_at DESC, id DESC), one backwards range scan of this index.
-- * the ledger's kind may be `final_payment_coupon`: the compensation coupon
--   a `coupon`-mode campaign gives at the final payment.
--
-- SQLite cannot change a CHECK in place: the ledger table is rebuilt with
-- the wider CHECK, its rows (ids kept) and its indexes. The columns
-- are those of every earlier migration; a migration that adds a ledger
-- column before this one must add it here too.
ALTER TABLE presale_campaigns ADD COLUMN compensation_mode TEXT NOT NULL DEFAULT 'deduction'
    CHECK (compensation_mode IN ('deduction', 'coupon'));
CREATE INDEX presale_campaigns_created_idx ON presale_campaigns (created_at, id);

CREATE TABLE compensation_ledger_0020 (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      TEXT NOT NULL,
    order_no     TEXT,
    coupon_id    TEXT,
    kind         TEXT NOT NULL CHECK (kind IN ('final_payment_deduction', 'coupon', 'final_payment_coupon')),
    amount_cents BIGINT NOT NULL CHECK (amount_cents >= 0),
    reason       TEXT NOT NULL,
    actor        TEXT NOT NULL,
    request_id   TEXT,
    at           BIGINT NOT NULL,
    preset_id    TEXT,
    rules_version BIGINT,
    campaign_id  TEXT
);
INSERT INTO compensation_ledger_0020 (id, user_id, order_no, coupon_id, kind, amount_cents, reason, actor, request_id, at,
        preset_id, rules_version, campaign_id)
    SELECT id, user_id, order_no, coupon_id, kind, amount_cents, reason, actor, request_id, at,
        preset_id, rules_version, campaign_id FROM compensation_ledger;
DROP TABLE compensation_ledger;
ALTER TABLE compensation_ledger_0020 RENAME TO compensation_ledger;
-- The indexes of 0001, 0003 and 0019, as 0019 left them.
CREATE INDEX compensation_ledger_user_idx ON compensation_ledger (user_id, at);
CREATE INDEX compensation_ledger_at_idx ON compensation_ledger (at, id);
CREATE INDEX compensation_ledger_actor_at_idx ON compensation_ledger (actor, at, id);
CREATE INDEX compensation_ledger_order_idx ON compensation_ledger (order_no, at, id);
CREATE INDEX compensation_ledger_preset_at_idx ON compensation_ledger (preset_id, at, id);
CREATE INDEX compensation_ledger_campaign_at_idx ON compensation_ledger (campaign_id, at, id);

-- The policy-change preview reads a campaign's deposit-paid orders in
-- order-number batches: one range of this index per batch, no sort.
CREATE INDEX orders_campaign_status_no_idx ON orders (campaign_id, status, order_no);
