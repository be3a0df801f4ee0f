-- The order's status and coupon lock status may hold only the words the
-- domain names (domain::order::OrderStatus, CouponLockStatus). Rows are
-- parsed strictly where they are read (store::codec), so a stray word
-- written past the service would make every read of that order fail; the
-- database now refuses it at the write instead.
--
-- PostgreSQL adds CHECK constraints (migrations/postgres/0016_…). SQLite
-- cannot add a CHECK to an existing table without rebuilding it with all
-- its indexes; triggers give the same refusal on INSERT and UPDATE with
-- no rebuild. The word lists are the same in both files.
CREATE TRIGGER orders_status_check_insert BEFORE INSERT ON orders
WHEN NEW.status NOT IN ('pending_payment', 'paid', 'pending_deposit', 'deposit_paid', 'final_paid', 'closed', 'refunded')
  OR NEW.coupon_lock_status NOT IN ('none', 'locked', 'used', 'released')
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: orders status or coupon_lock_status');
END;

CREATE TRIGGER orders_status_check_update BEFORE UPDATE OF status, coupon_lock_status ON orders
WHEN NEW.status NOT IN ('pending_payment', 'paid', 'pending_deposit', 'deposit_paid', 'final_paid', 'closed', 'refunded')
  OR NEW.coupon_lock_status NOT IN ('none', 'locked', 'used', 'released')
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: orders status or coupon_lock_status');
END;
