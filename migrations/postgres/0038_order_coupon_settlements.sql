-- A presale order of several coupons settles each at the final payment
-- by the campaign's policy. Under `swap_or_compensate` an expired further
-- coupon is replaced by another of the user's coupons, which takes its
-- row (`coupon_id`), as the order row's own coupon does
-- (`orders.replaced_coupon_id`): the coupon it replaced is kept here. Or
-- it is compensated: what was deducted from the final payment for it
-- (the order row keeps the sum in `compensation_cents`, as it keeps the
-- discounts' sum).
ALTER TABLE order_coupons ADD COLUMN replaced_coupon_id TEXT;
ALTER TABLE order_coupons ADD COLUMN compensation_cents BIGINT NOT NULL DEFAULT 0
    CHECK (compensation_cents >= 0);
