-- `bench http` row "pay's writes, bare SQL": everything POST /pay
-- writes, as hand-written statements in one transaction, without HTTP,
-- JSON, the idempotency lookup or any read: the order UPDATE and its
-- event, the coupon UPDATE and its event, the report counters' delta row
-- (migration 0032: an INSERT, no shared row), the `coupon.used` outbox row
-- and the idempotency record with a response of the real size. Its rate
-- against bare_pay.sql (one UPDATE) is the most pay can reach while it
-- keeps every promise (an event per change, the webhook, the replayable
-- answer). Rows bwp-1, bwp-2, ...; no client repeats a row. The JSON
-- bodies are fillers of the real size, written with no `:name` in them
-- (pgbench would read a variable).
\set i :client_id + 1 + :nclients * :k
\set k :k + 1
BEGIN;
UPDATE orders SET status = 'paid', coupon_lock_status = 'used', paid_at = :now,
        checkout_lock_expires_at = NULL, updated_at = :now
    WHERE order_no = 'bwp-' || CAST(:i AS TEXT) AND status = 'pending_payment';
INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address)
    SELECT 'order', coupon_id, order_no, 'pending_payment', 'paid', 'pay', 'api-bench', NULL, 'req-bench', :now, '127.0.0.1'
    FROM orders WHERE order_no = 'bwp-' || CAST(:i AS TEXT);
UPDATE coupons SET status = 'used', used_at = :now, updated_at = :now
    WHERE id = (SELECT coupon_id FROM orders WHERE order_no = 'bwp-' || CAST(:i AS TEXT))
      AND status = 'locked';
INSERT INTO events (subject, coupon_id, order_no, from_status, to_status, action, actor, reason, request_id, at, address)
    SELECT 'coupon', coupon_id, order_no, 'locked', 'used', 'use', 'api-bench', NULL, 'req-bench', :now, '127.0.0.1'
    FROM orders WHERE order_no = 'bwp-' || CAST(:i AS TEXT);
INSERT INTO template_count_deltas (template_id, day, shard, used, discount_cents, status_locked, status_used)
    SELECT c.template_id, 20424, 0, 1, o.coupon_discount_cents, -1, 1
    FROM orders o JOIN coupons c ON c.id = o.coupon_id
    WHERE o.order_no = 'bwp-' || CAST(:i AS TEXT);
INSERT INTO outbox (event_type, user_id, subject_id, payload, created_at, dispatched_at)
    VALUES ('coupon.used', 'ubwp', 'bwp-' || CAST(:i AS TEXT), '{"id": "cpn_bench_%06d","code": "CKBENCHCODE0001","user_id": "ubench","template_id": "tpl_bench_hot","kind": "fixed","value_cents": 5000,"percent_off": null,"max_discount_cents": null,"min_order_cents": 30000,"categories": [],"status": "used","starts_at": "2026-12-01T000000.000Z","ends_at": "2026-12-31T000000.000Z","order_no": "bwp-0","locked_at": "2026-12-02T000000.000Z","used_at": "2026-12-02T000001.000Z","created_at": "2026-12-01T000000.000Z","source": "claim"}', :now, NULL);
INSERT INTO idempotency_keys (scope, idem_key, fingerprint, status_code, body, created_at)
    VALUES ('bench', 'bwp-' || CAST(:i AS TEXT), 'f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff000102030405060708090a0b0c0d0e0f', 200, '{"order_no": "bwp-0","user_id": "ubwp-0","kind": "normal","category": "general","status": "paid","total_cents": 100000,"deposit_cents": 0,"campaign_id": null,"coupon_id": "cpn_bench_000001","coupon_discount_cents": 5000,"coupon_lock_status": "used","compensation_cents": 0,"created_at": "2026-12-02T000000.000Z","deposit_paid_at": null,"paid_at": "2026-12-02T000001.000Z","closed_at": null,"refunded_at": null,"discount_snapshot_cents": 0,"replaced_coupon_id": null,"final_payment_cents": null,"checkout_lock_expires_at": null,"amount_due_cents": 0}', :now);
COMMIT;
