-- `bench http` baseline of POST /orders/{order_no}/deposit-payment: its
-- two conditional UPDATEs bare, in one transaction: the presale order
-- pending_deposit -> deposit_paid with the discount, its coupon available
-- -> locked to it (bdep-1, bdep-2, ...; no client repeats a row).
\set i :client_id + 1 + :nclients * :k
\set k :k + 1
BEGIN;
UPDATE orders SET status = 'deposit_paid', coupon_lock_status = 'locked',
        coupon_discount_cents = 500, discount_snapshot_cents = 500,
        deposit_paid_at = :now, updated_at = :now
    WHERE order_no = 'bdep-' || CAST(:i AS TEXT) AND status = 'pending_deposit';
UPDATE coupons SET status = 'locked', order_no = 'bdep-' || CAST(:i AS TEXT),
        locked_at = :now, updated_at = :now
    WHERE id = (SELECT coupon_id FROM orders WHERE order_no = 'bdep-' || CAST(:i AS TEXT))
      AND status = 'available';
COMMIT;
