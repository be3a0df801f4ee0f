-- A compensation coupon's ledger entry by the coupon (identical in
-- migrations/sqlite and migrations/postgres; expand-only: a new index).
-- The console's coupon page and the customers' self-check page name the
-- order and reason a compensation coupon was given for.
CREATE INDEX compensation_ledger_coupon_idx ON compensation_ledger (coupon_id);
