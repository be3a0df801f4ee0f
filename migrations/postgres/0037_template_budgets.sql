-- Budgets (the HTTP contract's "Budgets"): the money a template's coupons
-- may give (`budget_cents`, null: no budget), kept as what is left in 8
-- shard rows so concurrent orders on one hot template take from different
-- rows, and one reservation per coupon locked or used on an order, given
-- back when it is released or returned (src/store/budgets.rs).
ALTER TABLE templates ADD COLUMN budget_cents BIGINT CHECK (budget_cents IS NULL OR budget_cents > 0);

CREATE TABLE template_budget_shards (
    template_id TEXT NOT NULL REFERENCES templates (id),
    shard       BIGINT NOT NULL,
    left_cents  BIGINT NOT NULL CHECK (left_cents >= 0),
    PRIMARY KEY (template_id, shard)
);

CREATE TABLE budget_reservations (
    order_no    TEXT NOT NULL,
    coupon_id   TEXT NOT NULL,
    template_id TEXT NOT NULL,
    cents       BIGINT NOT NULL CHECK (cents >= 0),
    at          BIGINT NOT NULL,
    PRIMARY KEY (order_no, coupon_id)
);

-- A template's reservations (its use, and reconciliation).
CREATE INDEX budget_reservations_template_idx ON budget_reservations (template_id);
