-- Forgiving search (issue 15 item 9): a coupon code or order number is
-- found by a prefix typed in any case, with or without spaces and dashes.
-- Each searchable table gets a search key, the text upper-cased (ASCII
-- letters only) with spaces and dashes dropped, and a plain b-tree index on
-- it; the console reads a prefix as the range [prefix, successor) of that
-- index (store::search::prefix_range), which is byte order on both stores.
--
-- The keys are generated columns, so no INSERT has to fill them (the
-- service's, the archive job's, the bench's and the demo's stay as they
-- are) and they cannot go stale. SQLite can only add a VIRTUAL generated
-- column to an existing table; its index stores the computed key, so
-- existing rows are keyed when the index is built. PostgreSQL
-- (migrations/postgres/0017_…) adds the same columns STORED. SQLite's
-- upper() folds ASCII letters only, like PostgreSQL's translate() there and
-- domain::ids::search_key in Rust.
ALTER TABLE coupons ADD COLUMN code_key TEXT
    GENERATED ALWAYS AS (upper(replace(replace(code, ' ', ''), '-', ''))) VIRTUAL;
CREATE INDEX coupons_code_key_idx ON coupons (code_key);

ALTER TABLE coupons_archive ADD COLUMN code_key TEXT
    GENERATED ALWAYS AS (upper(replace(replace(code, ' ', ''), '-', ''))) VIRTUAL;
CREATE INDEX coupons_archive_code_key_idx ON coupons_archive (code_key);

ALTER TABLE orders ADD COLUMN order_no_key TEXT
    GENERATED ALWAYS AS (upper(replace(replace(order_no, ' ', ''), '-', ''))) VIRTUAL;
CREATE INDEX orders_order_no_key_idx ON orders (order_no_key);
