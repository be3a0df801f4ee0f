-- Support console (postgres). Identical to the other store's 0003_support.sql:
-- only indexes, so the console's lookups and lists stay index range scans
-- on tens of millions of coupons.

-- Coupon lists by template (and effective status), in (ends_at, id) order:
-- one range scan per stored status, read in keyset order without sorting.
CREATE INDEX coupons_template_status_ends_idx ON coupons (template_id, status, ends_at, id);
-- The same for one user's coupons.
CREATE INDEX coupons_user_status_ends_idx ON coupons (user_id, status, ends_at, id);
-- A user's orders, newest first (user page, user health check).
CREATE INDEX orders_user_created_idx ON orders (user_id, created_at);
-- A staff member's compensation issued today (the daily cap).
CREATE INDEX compensation_ledger_actor_at_idx ON compensation_ledger (actor, at);
-- Archived coupons of a template (the template stock check).
CREATE INDEX coupons_archive_template_idx ON coupons_archive (template_id);
