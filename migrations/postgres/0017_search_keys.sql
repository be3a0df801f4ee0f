-- Forgiving search (issue 15 item 9): a coupon code or order number is
-- found by a prefix typed in any case, with or without spaces and dashes.
-- Each searchable table gets a search key, the text upper-cased (ASCII
-- letters only) with spaces and dashes dropped, and a plain b-tree index on
-- it; the console reads a prefix as the range [prefix, successor) of that
-- index (store::search::prefix_range).
--
-- The keys are generated columns, so no INSERT has to fill them and they
-- cannot go stale; adding them computes the keys of existing rows. Same
-- columns as migrations/sqlite/0017_…, which adds them VIRTUAL (SQLite
-- cannot add a STORED one to an existing table).
--
-- COLLATE "C": the range is byte order, whatever the database's default
-- collation (a linguistic one such as en_US ignores punctuation, so a range
-- would not be a prefix there). translate() folds ASCII letters only and
-- drops the space and the dash, like SQLite's upper(replace(…)) and
-- domain::ids::search_key; upper() would follow the database's locale.
ALTER TABLE coupons ADD COLUMN code_key TEXT COLLATE "C"
    GENERATED ALWAYS AS (translate(code, 'abcdefghijklmnopqrstuvwxyz -', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')) STORED;
CREATE INDEX coupons_code_key_idx ON coupons (code_key);

ALTER TABLE coupons_archive ADD COLUMN code_key TEXT COLLATE "C"
    GENERATED ALWAYS AS (translate(code, 'abcdefghijklmnopqrstuvwxyz -', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')) STORED;
CREATE INDEX coupons_archive_code_key_idx ON coupons_archive (code_key);

ALTER TABLE orders ADD COLUMN order_no_key TEXT COLLATE "C"
    GENERATED ALWAYS AS (translate(order_no, 'abcdefghijklmnopqrstuvwxyz -', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')) STORED;
CREATE INDEX orders_order_no_key_idx ON orders (order_no_key);
