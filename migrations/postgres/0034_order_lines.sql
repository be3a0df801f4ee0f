-- Carts (the HTTP contract's "Carts: order lines, discount allocation,
-- partial refunds"): an order's lines, each coupon's share of each line
-- (优惠分摊), and partial refunds by line. Same tables as
-- migrations/sqlite/0034_order_lines.sql.

-- What a coupon may discount besides its categories, and what a partial
-- refund does to it: JSON `{"skus": [...], "exclude_skus": [...],
-- "shop_id": "..." | null, "partial_refund_rule": "proportional" |
-- "clawback"}`, each key optional (absent: no SKU rule, a platform
-- coupon, proportional). Copied from the template onto each coupon at
-- claim time, as its categories are.
ALTER TABLE templates ADD COLUMN line_terms TEXT NOT NULL DEFAULT '{}';
ALTER TABLE coupons ADD COLUMN line_terms TEXT NOT NULL DEFAULT '{}';
ALTER TABLE coupons_archive ADD COLUMN line_terms TEXT NOT NULL DEFAULT '{}';

-- What the customer got back, summed over the order's refunds, and how
-- many refunds there were: each refund moves `refund_count` on by a
-- conditional update on its old value, so two refunds of one order never
-- both commit on what they read.
ALTER TABLE orders ADD COLUMN refunded_cents BIGINT NOT NULL DEFAULT 0;
ALTER TABLE orders ADD COLUMN refund_count BIGINT NOT NULL DEFAULT 0;

-- The lines of an order, in the order the shop sent them (`line_no`,
-- from 0). `refunded_quantity` and `refunded_cents` grow with each refund
-- by a conditional update on their old values.
CREATE TABLE order_lines (
    order_no          TEXT NOT NULL REFERENCES orders (order_no),
    line_no          BIGINT NOT NULL,
    line_id           TEXT NOT NULL,
    sku               TEXT,
    category          TEXT NOT NULL,
    shop_id           TEXT,
    quantity          BIGINT NOT NULL CHECK (quantity BETWEEN 1 AND 9999),
    unit_price_cents  BIGINT NOT NULL CHECK (unit_price_cents >= 0),
    refunded_quantity BIGINT NOT NULL DEFAULT 0,
    refunded_cents    BIGINT NOT NULL DEFAULT 0 CHECK (refunded_cents >= 0),
    PRIMARY KEY (order_no, line_no),
    UNIQUE (order_no, line_id),
    CHECK (refunded_quantity BETWEEN 0 AND quantity)
);

-- One row per coupon and line it covers: the coupon's share of the line
-- in cents (zero allowed: a covered line the split gave nothing).
CREATE TABLE order_line_discounts (
    order_no  TEXT NOT NULL,
    coupon_id TEXT NOT NULL,
    line_no  BIGINT NOT NULL,
    cents     BIGINT NOT NULL CHECK (cents >= 0),
    PRIMARY KEY (order_no, coupon_id, line_no),
    FOREIGN KEY (order_no, line_no) REFERENCES order_lines (order_no, line_no)
);

-- Refunds by line, keyed by the shop's refund_id within the order. A
-- whole-order refund (POST /orders/{no}/refund) of a paid order is one
-- too (`whole` = 1), of the units left.
CREATE TABLE order_refunds (
    order_no       TEXT NOT NULL REFERENCES orders (order_no),
    refund_id      TEXT NOT NULL,
    whole          BIGINT NOT NULL DEFAULT 0 CHECK (whole IN (0, 1)),
    reason         TEXT NOT NULL,
    refund_cents   BIGINT NOT NULL CHECK (refund_cents >= 0),
    clawback_cents BIGINT NOT NULL CHECK (clawback_cents >= 0),
    actor          TEXT NOT NULL,
    at             BIGINT NOT NULL,
    PRIMARY KEY (order_no, refund_id)
);
-- Reports and reconciliation read refunds by time.
CREATE INDEX order_refunds_at_idx ON order_refunds (at);

CREATE TABLE order_refund_lines (
    order_no       TEXT NOT NULL,
    refund_id      TEXT NOT NULL,
    line_no       BIGINT NOT NULL,
    quantity       BIGINT NOT NULL CHECK (quantity >= 1),
    refund_cents   BIGINT NOT NULL CHECK (refund_cents >= 0),
    discount_cents BIGINT NOT NULL CHECK (discount_cents >= 0),
    PRIMARY KEY (order_no, refund_id, line_no),
    FOREIGN KEY (order_no, refund_id) REFERENCES order_refunds (order_no, refund_id)
);

-- What each refund did to each coupon spent on the order.
CREATE TABLE order_refund_coupons (
    order_no       TEXT NOT NULL,
    refund_id      TEXT NOT NULL,
    coupon_id      TEXT NOT NULL,
    outcome        TEXT NOT NULL CHECK (outcome IN ('kept', 'returned')),
    clawback_cents BIGINT NOT NULL DEFAULT 0 CHECK (clawback_cents >= 0),
    PRIMARY KEY (order_no, refund_id, coupon_id),
    FOREIGN KEY (order_no, refund_id) REFERENCES order_refunds (order_no, refund_id)
);

-- Every order made before lines existed is the one line its single
-- category and total mean (line "1", one unit at the total). A refunded
-- order that had been paid refunded that unit: what it paid.
INSERT INTO order_lines (order_no, line_no, line_id, sku, category, shop_id, quantity,
                         unit_price_cents, refunded_quantity, refunded_cents)
SELECT order_no, 0, '1', NULL, category, NULL, 1, total_cents,
       CASE WHEN status = 'refunded' AND paid_at IS NOT NULL THEN 1 ELSE 0 END,
       CASE WHEN status = 'refunded' AND paid_at IS NOT NULL
            THEN GREATEST(total_cents - coupon_discount_cents - compensation_cents, 0) ELSE 0 END
FROM orders;
UPDATE orders SET refunded_cents = GREATEST(total_cents - coupon_discount_cents - compensation_cents, 0)
WHERE status = 'refunded' AND paid_at IS NOT NULL;
-- Its coupon's discount (or the compensation that replaced it) is that
-- line's share.
INSERT INTO order_line_discounts (order_no, coupon_id, line_no, cents)
SELECT order_no, coupon_id, 0, LEAST(coupon_discount_cents + compensation_cents, total_cents)
FROM orders
WHERE coupon_id IS NOT NULL AND coupon_discount_cents + compensation_cents > 0;
