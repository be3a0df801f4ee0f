-- An order may hold several coupons (叠加). A compensation issued for an
-- order may name which of them it makes up for: the coupon the order
-- row names, the one it replaced at the final payment, or one of the
-- order's further coupons (`order_coupons`, either column). Null: the
-- compensation names no coupon (every entry written before this, and
-- any entry of a kind other than support's `coupon`).
ALTER TABLE compensation_ledger ADD COLUMN for_coupon_id TEXT;
