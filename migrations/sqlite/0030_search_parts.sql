-- Search by part: an order number or a user id is found by any part of
-- four characters or more (`0017` finds DEMO-P-0017), not only by its
-- start. SQLite's FTS5 with the trigram tokenizer indexes every three
-- characters of a text, and a quoted phrase of three or more characters
-- matches wherever it occurs (store::search::ORDER_NO_PART_SQL). The table
-- holds the order's number, search key, user and creation time; a trigger
-- fills it when an order is inserted (an order's number, user and creation
-- time never change, and orders are not deleted), so no INSERT of the
-- service, the demo or the bench has to. PostgreSQL
-- (migrations/postgres/0030_…) keeps the same columns in a plain table
-- with pg_trgm indexes.
CREATE VIRTUAL TABLE order_parts USING fts5(
    order_no UNINDEXED,
    order_no_key,
    user_id,
    created_at UNINDEXED,
    tokenize = 'trigram'
);

CREATE TRIGGER orders_parts_insert AFTER INSERT ON orders BEGIN
    INSERT INTO order_parts (order_no, order_no_key, user_id, created_at)
    VALUES (new.order_no, new.order_no_key, new.user_id, new.created_at);
END;

INSERT INTO order_parts (order_no, order_no_key, user_id, created_at)
SELECT order_no, order_no_key, user_id, created_at FROM orders;
