-- Money-path index review of `orders` and `coupons` (each index
-- and the queries that need it: docs/indexes.md). A payment's status change is never a HOT update here
-- (status is indexed), so every index of the row gets a new entry on every
-- change. Three orders indexes that no query needs go; five indexes become
-- partial, keeping exactly the rows their queries can ask for (a literal
-- status written in every query's text, or a key that `col = $n` proves
-- non-NULL), so other rows are neither stored nor written. Columns and
-- names stay as they were (tests and comments name these indexes, and the
-- plans keep their shape). Primary keys and coupons_code_key (UNIQUE, the
-- ON CONFLICT (code) arbiter of store::coupons::insert_new) are untouched.
--
-- Lock order: every replacement is built first (CREATE INDEX holds a SHARE
-- lock: writes wait, reads go on), and the DROPs and RENAMEs, which take
-- ACCESS EXCLUSIVE, come last, so those are held only until the commit.
-- On a big database, build the five `_0033` indexes by hand first with
-- CREATE INDEX CONCURRENTLY (same definitions as below; payments go on
-- meanwhile): the CREATEs here are IF NOT EXISTS, so the migration then
-- only drops and renames.
-- Same indexes as migrations/sqlite/0033_money_path_indexes.sql.

-- Checkout-lapse timer and work queue: status = 'pending_payment' is a literal in all three queries, and a lock-time comparison implies IS NOT NULL.
CREATE INDEX IF NOT EXISTS orders_status_checkout_idx_0033 ON orders (status, checkout_lock_expires_at)
    WHERE status = 'pending_payment' AND checkout_lock_expires_at IS NOT NULL;
-- Presale reads (timeout, reminders, preview, counts, at-risk) all say campaign_id = / IN / join-equal: normal orders leave the index.
CREATE INDEX IF NOT EXISTS orders_campaign_status_no_idx_0033 ON orders (campaign_id, status, order_no) WHERE campaign_id IS NOT NULL;
-- Console order list by campaign (campaign_id = $n): normal orders leave the index.
CREATE INDEX IF NOT EXISTS orders_campaign_created_idx_0033 ON orders (campaign_id, created_at, order_no) WHERE campaign_id IS NOT NULL;
-- Reaper and reconciliation: status = 'locked' is a literal in all three queries; only the few locked coupons stay.
CREATE INDEX IF NOT EXISTS coupons_status_locked_at_idx_0033 ON coupons (status, locked_at, id) WHERE status = 'locked';
-- Every read is order_no = $1 (implies IS NOT NULL): available, expired and released coupons leave the index.
CREATE INDEX IF NOT EXISTS coupons_order_no_idx_0033 ON coupons (order_no) WHERE order_no IS NOT NULL;

-- (campaign_id, status) is a prefix of orders_campaign_status_no_idx (0020), which serves every campaign+status read equally.
DROP INDEX orders_campaign_status_idx;
-- No query has filtered or sorted orders on paid_at since 0005 added it (reconcile reads live orders by (status, order_no)).
DROP INDEX orders_status_paid_idx;
-- No query filters orders by user and status; user-only reads (user page, last activity, user exists) use orders_user_created_idx.
DROP INDEX orders_user_status_idx;

-- The full versions, replaced by the partial ones built above under their names.
DROP INDEX orders_status_checkout_idx;
ALTER INDEX orders_status_checkout_idx_0033 RENAME TO orders_status_checkout_idx;
DROP INDEX orders_campaign_status_no_idx;
ALTER INDEX orders_campaign_status_no_idx_0033 RENAME TO orders_campaign_status_no_idx;
DROP INDEX orders_campaign_created_idx;
ALTER INDEX orders_campaign_created_idx_0033 RENAME TO orders_campaign_created_idx;
DROP INDEX coupons_status_locked_at_idx;
ALTER INDEX coupons_status_locked_at_idx_0033 RENAME TO coupons_status_locked_at_idx;
DROP INDEX coupons_order_no_idx;
ALTER INDEX coupons_order_no_idx_0033 RENAME TO coupons_order_no_idx;
