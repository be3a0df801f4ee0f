-- coupons_user_status_idx (user_id, status) is a prefix of
-- coupons_user_status_ends_idx (user_id, status, ends_at, id) from 0003,
-- which serves every query the shorter one did. A coupon's status change
-- is never a HOT update (status is indexed), so every index of `coupons`
-- is written on every claim, lock, payment, release and expiry: one fewer
-- is one fewer B-tree insert per change. Contract step only: no query
-- names it, and the previous release's queries run unchanged (the
-- planner picks the longer index). Same in both stores.
DROP INDEX coupons_user_status_idx;
