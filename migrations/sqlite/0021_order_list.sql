-- The support order list (issue 16 item 5, GET /orders, /console/orders):
-- newest first in keyset pages of (created_at, order_no). Every filter that
-- can be selective gets an index that both filters and already holds the
-- page order, so a page reads at most its own rows plus the rows a second
-- filter discards, and never sorts:
-- - no filter, a date range, a kind (two values, not worth an index of its
--   own) or an order_no prefix combined with the above: orders_created_idx;
-- - a status: orders_status_created_idx;
-- - a campaign: orders_campaign_created_idx;
-- - a coupon lock status (a few 'locked' among many 'none'):
--   orders_lock_created_idx.
-- A prefix alone reads the order_no_key range (0017) and sorts only the
-- orders that share the prefix. Same text on both stores.
CREATE INDEX orders_created_idx ON orders (created_at, order_no);
CREATE INDEX orders_status_created_idx ON orders (status, created_at, order_no);
CREATE INDEX orders_campaign_created_idx ON orders (campaign_id, created_at, order_no);
CREATE INDEX orders_lock_created_idx ON orders (coupon_lock_status, created_at, order_no);
