-- A wake-up rule skips a customer who placed an order after the activity
-- that qualified them (they were not drifting away: they bought). Such a
-- decision is recorded like the others, as outcome 'ordered', so the
-- rule page can count it and the coupon is never decided twice.
--
-- SQLite cannot alter a CHECK constraint: the table is rebuilt with the
-- same columns and index, and every row is copied.
CREATE TABLE wakeup_marks_next (
    coupon_id       TEXT PRIMARY KEY,
    rule_id         TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('sent', 'control', 'inactive', 'ordered')),
    channel         TEXT,
    bonus_coupon_id TEXT,
    ends_at         BIGINT NOT NULL,
    created_at      BIGINT NOT NULL
);
INSERT INTO wakeup_marks_next (coupon_id, rule_id, user_id, outcome, channel, bonus_coupon_id, ends_at, created_at)
    SELECT coupon_id, rule_id, user_id, outcome, channel, bonus_coupon_id, ends_at, created_at FROM wakeup_marks;
DROP TABLE wakeup_marks;
ALTER TABLE wakeup_marks_next RENAME TO wakeup_marks;
-- The rule page's figures: one rule's marks by outcome.
CREATE INDEX wakeup_marks_rule_idx ON wakeup_marks (rule_id, outcome);
