-- The order's status and coupon lock status may hold only the words the
-- domain names (domain::order::OrderStatus, CouponLockStatus). Rows are
-- parsed strictly where they are read (store::codec), so a stray word
-- written past the service would make every read of that order fail; the
-- database now refuses it at the write instead. Same rule as
-- migrations/sqlite/0016_order_status_checks.sql, which uses triggers
-- because SQLite cannot add a CHECK to an existing table without a rebuild.
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN (
    'pending_payment', 'paid', 'pending_deposit', 'deposit_paid', 'final_paid', 'closed', 'refunded'
));
ALTER TABLE orders ADD CONSTRAINT orders_coupon_lock_status_check CHECK (coupon_lock_status IN (
    'none', 'locked', 'used', 'released'
));
