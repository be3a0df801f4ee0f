-- The webhook backlog that /metrics reads on every scrape: pending and
-- dead deliveries per subscriber, with the oldest pending one's age. The
-- partial index holds only those two statuses (delivered rows, nearly all
-- of the table, are never in it and cost it nothing), so the reading is
-- one walk over the backlog's own index entries, grouped as they lie.
CREATE INDEX deliveries_backlog_idx ON deliveries (status, subscriber_id, created_at)
    WHERE status IN ('pending', 'dead');
