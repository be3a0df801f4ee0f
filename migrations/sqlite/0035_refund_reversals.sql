-- Refunds by line, completed (same changes as
-- migrations/postgres/0035_refund_reversals.sql; expand-only, so the
-- previous release's statements still run against it):
--
-- * The compensation ledger may hold a reversal: when an order whose final
--   payment was compensated is refunded in full, each compensation entry
--   of that final payment gets a negative entry of kind
--   `refund_reversal`, naming the entry it reverses in `reverses_id`. A
--   unique index on `reverses_id` makes a second reversal of one entry
--   impossible, whatever two transactions do. Only a reversal may be
--   negative, and a reversal must be.
-- * What each refund gave back of each coupon's discount
--   (`order_refund_coupons.discount_cents`): the coupon's share of the
--   refunded units, by the same floor formula as the refund's money. Rows
--   written before this migration are of orders of one coupon, whose
--   share of a line is the line's whole discount: the refund lines'
--   discounts are that coupon's.
-- * The report counters count that discount by day
--   (`refunded_discount_cents`). Refunds made before this migration are
--   not in them: their business days are not known to SQL.
--
-- SQLite cannot change a CHECK in place: the ledger table is rebuilt with
-- its rows (ids kept) and every index 0001-0029 left on it. A migration
-- that adds a ledger column before this one must add it here too.
CREATE TABLE compensation_ledger_0035 (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      TEXT NOT NULL,
    order_no     TEXT,
    coupon_id    TEXT,
    kind         TEXT NOT NULL CHECK (kind IN ('final_payment_deduction', 'coupon', 'final_payment_coupon',
                                               'refund_reversal')),
    amount_cents BIGINT NOT NULL,
    reason       TEXT NOT NULL,
    actor        TEXT NOT NULL,
    request_id   TEXT,
    at           BIGINT NOT NULL,
    preset_id    TEXT,
    rules_version BIGINT,
    campaign_id  TEXT,
    reverses_id  BIGINT,
    CHECK ((kind = 'refund_reversal') = (amount_cents < 0)),
    CHECK ((kind = 'refund_reversal') = (reverses_id IS NOT NULL))
);
INSERT INTO compensation_ledger_0035 (id, user_id, order_no, coupon_id, kind, amount_cents, reason, actor, request_id, at,
        preset_id, rules_version, campaign_id)
    SELECT id, user_id, order_no, coupon_id, kind, amount_cents, reason, actor, request_id, at,
        preset_id, rules_version, campaign_id FROM compensation_ledger;
DROP TABLE compensation_ledger;
ALTER TABLE compensation_ledger_0035 RENAME TO compensation_ledger;
CREATE INDEX compensation_ledger_user_idx ON compensation_ledger (user_id, at);
CREATE INDEX compensation_ledger_at_idx ON compensation_ledger (at, id);
CREATE INDEX compensation_ledger_actor_at_idx ON compensation_ledger (actor, at, id);
CREATE INDEX compensation_ledger_order_idx ON compensation_ledger (order_no, at, id);
CREATE INDEX compensation_ledger_preset_at_idx ON compensation_ledger (preset_id, at, id);
CREATE INDEX compensation_ledger_campaign_at_idx ON compensation_ledger (campaign_id, at, id);
CREATE INDEX compensation_ledger_coupon_idx ON compensation_ledger (coupon_id);
CREATE UNIQUE INDEX compensation_ledger_reverses_idx ON compensation_ledger (reverses_id);

ALTER TABLE order_refund_coupons ADD COLUMN discount_cents BIGINT NOT NULL DEFAULT 0 CHECK (discount_cents >= 0);
UPDATE order_refund_coupons SET discount_cents = (
    SELECT COALESCE(SUM(l.discount_cents), 0) FROM order_refund_lines l
    WHERE l.order_no = order_refund_coupons.order_no AND l.refund_id = order_refund_coupons.refund_id);

ALTER TABLE template_counts ADD COLUMN refunded_discount_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE campaign_counts ADD COLUMN refunded_discount_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE template_count_deltas ADD COLUMN refunded_discount_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE campaign_count_deltas ADD COLUMN refunded_discount_cents BIGINT NOT NULL DEFAULT 0;

-- Reconciliation pages through the refunds by (at, order_no): the index on
-- `at` alone left a sort of each page; the same name, one column wider.
DROP INDEX order_refunds_at_idx;
CREATE INDEX order_refunds_at_idx ON order_refunds (at, order_no);
