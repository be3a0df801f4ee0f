-- Money-path index review of `orders` and `coupons` (each index
-- and the queries that need it: docs/indexes.md): the same indexes as
-- migrations/postgres/0033_money_path_indexes.sql. On SQLite an UPDATE
-- rewrites the entry of every index holding a column it SETs (an order
-- transition SETs status, coupon_id, coupon_lock_status,
-- checkout_lock_expires_at and paid_at; a coupon transition status,
-- order_no, locked_at, used_at and updated_at), and a partial index only
-- when the old or the new row is in it. SQLite has no ALTER INDEX ...
-- RENAME: each partial replacement is dropped and created under the same
-- name (one process, one write transaction).
--
-- SQLite uses a partial index only when the query's WHERE implies the
-- index's WHERE: `status = 'x'` must be written with the same literal (a
-- bound parameter matches only through a re-prepare on its value), and
-- `col IS NOT NULL` is implied by any comparison on col, bound or not.
-- Every query of the partial indexes below qualifies (docs/indexes.md).

-- (campaign_id, status) is a prefix of orders_campaign_status_no_idx (0020), which serves every campaign+status read equally.
DROP INDEX orders_campaign_status_idx;
-- No query has filtered or sorted orders on paid_at since 0005 added it (reconcile reads live orders by (status, order_no)).
DROP INDEX orders_status_paid_idx;
-- No query filters orders by user and status; user-only reads (user page, last activity, user exists) use orders_user_created_idx.
DROP INDEX orders_user_status_idx;

-- Checkout-lapse timer and work queue: status = 'pending_payment' is a literal in all three queries, and a lock-time comparison implies IS NOT NULL.
DROP INDEX orders_status_checkout_idx;
CREATE INDEX orders_status_checkout_idx ON orders (status, checkout_lock_expires_at)
    WHERE status = 'pending_payment' AND checkout_lock_expires_at IS NOT NULL;
-- Presale reads (timeout, reminders, preview, counts, at-risk) all say campaign_id = / IN / join-equal: normal orders leave the index.
DROP INDEX orders_campaign_status_no_idx;
CREATE INDEX orders_campaign_status_no_idx ON orders (campaign_id, status, order_no) WHERE campaign_id IS NOT NULL;
-- Console order list by campaign (campaign_id = ?): normal orders leave the index.
DROP INDEX orders_campaign_created_idx;
CREATE INDEX orders_campaign_created_idx ON orders (campaign_id, created_at, order_no) WHERE campaign_id IS NOT NULL;
-- Reaper and reconciliation: status = 'locked' is a literal in all three queries; only the few locked coupons stay.
DROP INDEX coupons_status_locked_at_idx;
CREATE INDEX coupons_status_locked_at_idx ON coupons (status, locked_at, id) WHERE status = 'locked';
-- Every read is order_no = ? (implies IS NOT NULL): available, expired and released coupons leave the index.
DROP INDEX coupons_order_no_idx;
CREATE INDEX coupons_order_no_idx ON coupons (order_no) WHERE order_no IS NOT NULL;
