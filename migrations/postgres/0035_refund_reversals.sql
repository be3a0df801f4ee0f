-- Refunds by line, completed (same changes as
-- migrations/sqlite/0035_refund_reversals.sql; expand-only, so the
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
ALTER TABLE compensation_ledger ADD COLUMN reverses_id BIGINT;
ALTER TABLE compensation_ledger DROP CONSTRAINT compensation_ledger_kind_check;
ALTER TABLE compensation_ledger ADD CONSTRAINT compensation_ledger_kind_check
    CHECK (kind IN ('final_payment_deduction', 'coupon', 'final_payment_coupon', 'refund_reversal'));
ALTER TABLE compensation_ledger DROP CONSTRAINT compensation_ledger_amount_cents_check;
ALTER TABLE compensation_ledger ADD CONSTRAINT compensation_ledger_sign_check
    CHECK ((kind = 'refund_reversal') = (amount_cents < 0));
ALTER TABLE compensation_ledger ADD CONSTRAINT compensation_ledger_reverses_check
    CHECK ((kind = 'refund_reversal') = (reverses_id IS NOT NULL));
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
