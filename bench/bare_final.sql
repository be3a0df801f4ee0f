-- `bench http` baseline of POST /orders/{order_no}/final-payment: its two
-- conditional UPDATEs bare, in one transaction: the presale order
-- deposit_paid -> final_paid, its locked coupon -> used (bfin-1, bfin-2,
-- ...; no client repeats a row).
\set i :client_id + 1 + :nclients * :k
\set k :k + 1
BEGIN;
UPDATE orders SET status = 'final_paid', coupon_lock_status = 'used',
        final_payment_cents = 89500, paid_at = :now, updated_at = :now
    WHERE order_no = 'bfin-' || CAST(:i AS TEXT) AND status = 'deposit_paid';
UPDATE coupons SET status = 'used', used_at = :now, updated_at = :now
    WHERE id = (SELECT coupon_id FROM orders WHERE order_no = 'bfin-' || CAST(:i AS TEXT))
      AND status = 'locked';
COMMIT;
