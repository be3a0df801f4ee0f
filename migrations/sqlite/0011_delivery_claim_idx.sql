-- The dispatcher claims due deliveries per subscriber (each subscriber has
-- its own send slots): this index makes that claim a range scan over
-- exactly one subscriber's due deliveries, oldest first, so a subscriber
-- with a large backlog does not slow the claims of the others.
CREATE INDEX deliveries_sub_due_idx ON deliveries (subscriber_id, status, next_attempt_at, id);

-- Fan-out reads the oldest undispatched outbox messages. Through
-- (dispatched_at, id) PostgreSQL planned a bitmap scan plus a sort of every
-- undispatched row, and visited every not-yet-vacuumed entry of the rows
-- dispatched since (9 ms per fan-out with nothing left, after a burst of
-- 43,000): a partial index in id order is read from its start and stops at
-- the batch size.
DROP INDEX outbox_pending_idx;
CREATE INDEX outbox_undispatched_idx ON outbox (id) WHERE dispatched_at IS NULL;
