-- Search by part: an order number or a user id is found by any part of
-- four characters or more (`0017` finds DEMO-P-0017), not only by its
-- start. pg_trgm's GIN indexes answer `LIKE '%part%'` (and ILIKE) from the
-- text's three-character pieces (store::search::ORDER_NO_PART_SQL).
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: the
-- database's owner may create it.
--
-- The indexed text lives in its own insert-only table, filled by a trigger
-- when an order is inserted (an order's number, user and creation time
-- never change, and orders are not deleted): the orders row, updated at
-- every payment, carries no GIN index. Same columns as SQLite's FTS5 table
-- (migrations/sqlite/0030_…).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE order_parts (
    order_no     TEXT PRIMARY KEY,
    order_no_key TEXT COLLATE "C" NOT NULL,
    user_id      TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX order_parts_order_no_key_trgm ON order_parts USING gin (order_no_key gin_trgm_ops);
CREATE INDEX order_parts_user_id_trgm ON order_parts USING gin (user_id gin_trgm_ops);

CREATE FUNCTION orders_parts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO order_parts (order_no, order_no_key, user_id, created_at)
    VALUES (NEW.order_no, NEW.order_no_key, NEW.user_id, NEW.created_at)
    ON CONFLICT (order_no) DO NOTHING;
    RETURN NULL;
END;
$$;

CREATE TRIGGER orders_parts_insert AFTER INSERT ON orders
    FOR EACH ROW EXECUTE FUNCTION orders_parts_insert();

INSERT INTO order_parts (order_no, order_no_key, user_id, created_at)
SELECT order_no, order_no_key, user_id, created_at FROM orders;
