-- Several coupons on one order (the HTTP contract's "Several coupons on
-- one order"): the order row keeps its first coupon (`orders.coupon_id`:
-- the platform coupon, else the first shop coupon) and the sum of the
-- discounts (`coupon_discount_cents`); each further coupon is a row
-- here, numbered from 1 in the order it is listed, with its own
-- discount, its discount as snapshotted at the deposit of a presale
-- order, and its own lock state (a partial refund returns each coupon by
-- its own lines, so they can part). Every row changes by a conditional
-- update on its `lock_status` in the transaction that moves the coupon.
-- Whether a coupon may share an order (`stackable`) is part of its terms,
-- in `line_terms` (absent: true).
CREATE TABLE order_coupons (
    order_no       TEXT NOT NULL REFERENCES orders (order_no),
    position       BIGINT NOT NULL CHECK (position >= 1),
    coupon_id      TEXT NOT NULL,
    discount_cents BIGINT NOT NULL CHECK (discount_cents >= 0),
    snapshot_cents BIGINT NOT NULL DEFAULT 0 CHECK (snapshot_cents >= 0),
    lock_status    TEXT NOT NULL
        CHECK (lock_status IN ('none', 'locked', 'used', 'released')),
    PRIMARY KEY (order_no, position),
    UNIQUE (order_no, coupon_id)
);

-- The orders a coupon is a further coupon of (support's search by coupon).
CREATE INDEX order_coupons_coupon_idx ON order_coupons (coupon_id);
