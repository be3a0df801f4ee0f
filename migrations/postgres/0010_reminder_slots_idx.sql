-- The console's reminder page reads the last 24 hours of reminders across
-- all users (counts by channel and offset) and the most recent ones: both
-- by sent_at alone, which the (user_id, sent_at) index cannot serve.
CREATE INDEX reminder_slots_sent_idx ON reminder_slots (sent_at);
