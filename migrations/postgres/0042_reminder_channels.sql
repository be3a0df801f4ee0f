-- Reminder channels by step (same changes as
-- migrations/sqlite/0042_reminder_channels.sql, which rebuilds
-- `reminder_slots` because SQLite cannot change a CHECK in place;
-- expand-only, so the previous release's statements still run):
--
-- * A reminder may go by `popup`: a pop-up the shop shows at the
--   customer's next visit (COUPONKEEPER_REMINDER_CHANNELS).
-- * A pop-up is pending until the customer has seen it or its coupons
--   have all ended: one row per pop-up reminder in `reminder_popups`,
--   `seen_at` set once (a conditional update on `seen_at IS NULL`).
--   `ends_by` is the latest end of its coupons, so a pending read skips
--   pop-ups that are over without reading their coupons; the coupons
--   themselves are the reminder's marks, read by `slot_id`.
ALTER TABLE reminder_slots DROP CONSTRAINT reminder_slots_channel_check;
ALTER TABLE reminder_slots ADD CONSTRAINT reminder_slots_channel_check
    CHECK (channel IN ('sms', 'push', 'in_app', 'popup'));

CREATE TABLE reminder_popups (
    slot_id    TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    ends_by    BIGINT NOT NULL,
    seen_at    BIGINT
);
-- A customer's pending pop-ups (the picker and the self-check page).
CREATE INDEX reminder_popups_pending_idx ON reminder_popups (user_id, ends_by)
    WHERE seen_at IS NULL;
-- A pop-up's coupons: its reminder's marks.
CREATE INDEX reminder_marks_slot_idx ON reminder_marks (slot_id);
