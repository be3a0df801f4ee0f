-- `bench http` baseline of the hot-template claim: the naive claim
-- transaction, one stock row that every claim locks (SELECT ... FOR
-- UPDATE), the stock decided by the client, then the counter UPDATE and
-- the coupon INSERT. Run by pgbench on PostgreSQL (-M prepared; variables
-- tid, run, now, nclients and k=0 given with -D) and through sqlx on
-- SQLite (src/bin/bench/http/load.rs: FOR UPDATE dropped there, `i`
-- numbered by the runner). The stock row is shard 0 of template :tid,
-- collapsed to one shard by the bench; its coupons go into the real
-- `coupons` table, so the check after the run is the same as the API's:
-- claimed == coupons <= stock.
\set i :client_id + 1 + :nclients * :k
\set k :k + 1
BEGIN;
SELECT capacity - claimed AS stock_left FROM template_stock_shards
    WHERE template_id = :tid AND shard = 0 FOR UPDATE \gset
\if :stock_left > 0
UPDATE template_stock_shards SET claimed = claimed + 1
    WHERE template_id = :tid AND shard = 0;
INSERT INTO coupons (id, code, user_id, template_id, source, kind, value_cents,
        min_order_cents, categories, status, starts_at, ends_at, created_at, updated_at)
    VALUES ('naive-' || :run || '-' || CAST(:i AS TEXT), 'N-' || :run || '-' || CAST(:i AS TEXT),
        'naive-' || :run || '-' || CAST(:i AS TEXT), :tid, 'claim', 'fixed', 500,
        0, '[]', 'available', :now, CAST(:now AS BIGINT) + 604800000, :now, :now);
\endif
COMMIT;
