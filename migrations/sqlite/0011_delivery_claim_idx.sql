-- The dispatcher claims due deliveries per subscriber (each subscriber has
-- its own send slots): this index makes that claim a range scan over
-- exactly one subscriber's due deliveries, oldest first, so a subscriber
-- with a large backlog does not slow the claims of the others.
CREATE INDEX deliveries_sub_due_idx ON deliveries (subscriber_id, status, next_attempt_at, id);
