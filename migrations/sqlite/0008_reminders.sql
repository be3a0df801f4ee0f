-- Pre-expiry and presale reminders (sqlite). Identical to
-- migrations/postgres/0008_reminders.sql but for auto-increment keys.

-- One reminder sent to one user: the coupons of one offset that came due
-- together (aggregation), the channel chosen, and what they are worth.
CREATE TABLE reminder_slots (
    id                TEXT PRIMARY KEY,
    user_id           TEXT NOT NULL,
    offset_seconds    BIGINT NOT NULL,
    opened_at         BIGINT NOT NULL,
    send_at           BIGINT NOT NULL,
    sent_at           BIGINT NOT NULL,
    channel           TEXT NOT NULL CHECK (channel IN ('sms', 'push', 'in_app')),
    coupon_count      BIGINT NOT NULL,
    total_value_cents BIGINT NOT NULL
);
-- Per-user rate limits: this user's reminders of the last 24 hours.
CREATE INDEX reminder_slots_user_sent_idx ON reminder_slots (user_id, sent_at);

-- Each coupon is reminded at most once per offset: the primary key is the
-- guarantee, across a crash (marks and outbox row commit together) and
-- across instances (the second insert fails and its transaction rolls back).
CREATE TABLE reminder_marks (
    coupon_id      TEXT NOT NULL,
    offset_seconds BIGINT NOT NULL,
    slot_id        TEXT NOT NULL,
    PRIMARY KEY (coupon_id, offset_seconds)
);

-- Presale reminders, each once per order and kind
-- (final_payment_open, strict_warning_deposit, strict_warning_before_end).
CREATE TABLE order_reminder_marks (
    order_no   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (order_no, kind)
);

-- The in-app copy of every reminder, for the customer's message list.
CREATE TABLE user_messages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    subject_id TEXT,
    body       TEXT NOT NULL,
    body_en    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    read_at    BIGINT
);
CREATE INDEX user_messages_user_idx ON user_messages (user_id, id);
