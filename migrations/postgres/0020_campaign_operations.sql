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
-- SQLite cannot change a CHECK in place; its file rebuilds the ledger
-- table instead. The schema stays column-for-column identical.
ALTER TABLE presale_campaigns ADD COLUMN compensation_mode TEXT NOT NULL DEFAULT 'deduction'
    CHECK (compensation_mode IN ('deduction', 'coupon'));
CREATE INDEX presale_campaigns_created_idx ON presale_campaigns (created_at, id);

ALTER TABLE compensation_ledger DROP CONSTRAINT compensation_ledger_kind_check;
ALTER TABLE compensation_ledger ADD CONSTRAINT compensation_ledger_kind_check
    CHECK (kind IN ('final_payment_deduction', 'coupon', 'final_payment_coupon'));

-- The policy-change preview reads a campaign's deposit-paid orders in
-- order-number batches: one range of this index per batch, no sort.
CREATE INDEX orders_campaign_status_no_idx ON orders (campaign_id, status, order_no);
