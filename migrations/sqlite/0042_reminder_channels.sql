-- Reminder channels by step (same changes as
-- migrations/postgres/0042_reminder_channels.sql; expand-only, so the
-- previous release's statements still run against it):
--
-- * A reminder may go by `popup`: a pop-up the shop shows at the
--   customer's next visit (COUPONKEEPER_REMINDER_CHANNELS).
-- * A pop-up is pending until the customer has seen it or its coupons
--   have all ended: one row per pop-up reminder in `reminder_popups`,
--   `seen_at` set once (a conditional update on `seen_at IS NULL`).
--   `ends_by` is the latest end of its coupons, so a pending read skips
--   pop-ups that are over without reading their coupons; the coupons
--   themselves are the reminder's marks, read by `slot_id`.
--
-- SQLite cannot change a CHECK in place: `reminder_slots` is rebuilt with
-- its rows and the indexes 0008 and 0010 left on it. A migration that
-- adds a column to it before this one must add it here too.
CREATE TABLE reminder_slots_0042 (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL,
    offset_seconds    BIGINT NOT NULL,
    opened_at         BIGINT NOT NULL,
    send_at           BIGINT NOT NULL,
    sent_at           BIGINT NOT NULL,
    channel           TEXT NOT NULL CHECK (channel IN ('sms', 'push', 'in_app', 'popup')),
    coupon_count      BIGINT NOT NULL,
    total_value_cents BIGINT NOT NULL
);
INSERT INTO reminder_slots_0042 (id, user_id, offset_seconds, opened_at, send_at, sent_at, channel,
        coupon_count, total_value_cents)
    SELECT id, user_id, offset_seconds, opened_at, send_at, sent_at, channel,
        coupon_count, total_value_cents FROM reminder_slots;
DROP TABLE reminder_slots;
ALTER TABLE reminder_slots_0042 RENAME TO reminder_slots;
CREATE INDEX reminder_slots_user_sent_idx ON reminder_slots (user_id, sent_at);
CREATE INDEX reminder_slots_sent_idx ON reminder_slots (sent_at);

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
