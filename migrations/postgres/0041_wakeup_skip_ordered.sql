-- A wake-up rule skips a customer who placed an order after the activity
-- that qualified them (they were not drifting away: they bought). Such a
-- decision is recorded like the others, as outcome 'ordered', so the
-- rule page can count it and the coupon is never decided twice.
ALTER TABLE wakeup_marks DROP CONSTRAINT wakeup_marks_outcome_check;
ALTER TABLE wakeup_marks ADD CONSTRAINT wakeup_marks_outcome_check
    CHECK (outcome IN ('sent', 'control', 'inactive', 'ordered'));
