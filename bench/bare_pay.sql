-- `bench http` baseline of POST /orders/{order_no}/pay: a bare conditional
-- primary-key UPDATE of one pre-made pending order (bpay-1, bpay-2, ...;
-- no client repeats a row), one statement, autocommit. pgbench on
-- PostgreSQL (-D now, nclients, k=0), sqlx on SQLite.
\set i :client_id + 1 + :nclients * :k
\set k :k + 1
UPDATE orders SET status = 'paid', coupon_lock_status = 'used', paid_at = :now,
        checkout_lock_expires_at = NULL, updated_at = :now
    WHERE order_no = 'bpay-' || CAST(:i AS TEXT) AND status = 'pending_payment';
