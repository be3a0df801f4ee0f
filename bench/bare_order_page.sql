-- `bench http` baseline of the console's order page with its health check:
-- the three primary-key / index reads such a page cannot do without (the
-- order, its coupon, the order's events), for a random one of the :rows
-- pre-made orders view-1 ... view-N, in one read transaction.
\set r random(1, :rows)
BEGIN;
SELECT * FROM orders WHERE order_no = 'view-' || CAST(:r AS TEXT);
SELECT * FROM coupons
    WHERE id = (SELECT coupon_id FROM orders WHERE order_no = 'view-' || CAST(:r AS TEXT));
SELECT * FROM events WHERE order_no = 'view-' || CAST(:r AS TEXT) ORDER BY id;
COMMIT;
