-- A customer's request for support from the self-check page ("联系客服"):
-- the order it is about, the customer's own words (optional), and the
-- one-click check's findings as the customer saw them when they asked
-- (JSON: [{scope, result, message_key, message_args, coupon, next}]), so
-- support and the shop's ticket system read the diagnosis the customer
-- read. At most one per order per hour (decided in the writing
-- transaction under the order's lock). Support marks it handled.
CREATE TABLE support_requests (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    order_no    TEXT NOT NULL,
    note        TEXT,
    overall     TEXT NOT NULL CHECK (overall IN ('ok', 'warning', 'problem')),
    findings    TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'handled')),
    created_at  BIGINT NOT NULL,
    handled_at  BIGINT,
    handled_by  TEXT
);
-- The hourly limit and the order page: one order's requests, newest last.
CREATE INDEX support_requests_order_idx ON support_requests (order_no, created_at);
-- The self-check page: the customer's requests of the last hour.
CREATE INDEX support_requests_user_idx ON support_requests (user_id, created_at);
-- The console's work queue: open requests, oldest first.
CREATE INDEX support_requests_status_idx ON support_requests (status, created_at, id);
