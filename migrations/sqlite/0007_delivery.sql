-- Webhook delivery (sqlite). Identical to the other store's 0007_delivery.sql but for
-- auto-increment keys.

-- Webhook subscribers that operators add in the console. The default
-- subscriber (COUPONKEEPER_WEBHOOK_URL / _SECRET) is not stored here: its
-- deliveries name subscriber_id 'default' and read URL and secret from the
-- environment when sent. The secret is kept as given (it signs every
-- delivery, so it cannot be hashed); pages show only its last 4 characters.
CREATE TABLE webhook_subscribers (
    id          TEXT PRIMARY KEY,
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    -- '*' (every type) or a JSON list of event types.
    event_types TEXT NOT NULL,
    -- 1 enabled, 0 disabled.
    enabled     BIGINT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    disabled_at BIGINT
);

-- One outbox message to one subscriber. The webhook id is msg_<outbox_id>
-- for every subscriber and every attempt.
CREATE TABLE deliveries (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    outbox_id        BIGINT NOT NULL,
    subscriber_id    TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    user_id          TEXT,
    -- pending, delivered or dead.
    status           TEXT NOT NULL,
    attempts         BIGINT NOT NULL,
    -- pending: when it is due next; while a dispatcher sends it, the end of
    -- that dispatcher's lease.
    next_attempt_at  BIGINT NOT NULL,
    last_status_code BIGINT,
    last_error       TEXT,
    delivered_at     BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    -- Fan-out run twice (a crash after insert, two instances) adds nothing.
    UNIQUE (outbox_id, subscriber_id)
);
-- The dispatcher's due query.
CREATE INDEX deliveries_due_idx ON deliveries (status, next_attempt_at, id);
-- Order per user: an earlier pending delivery of the same user to the same
-- subscriber holds the later ones back.
CREATE INDEX deliveries_user_idx ON deliveries (subscriber_id, user_id, status, outbox_id);
-- The console's filters.
CREATE INDEX deliveries_type_idx ON deliveries (event_type, id);
CREATE INDEX deliveries_user_id_idx ON deliveries (user_id, id);

-- Each attempt of a delivery, kept when an operator redelivers.
CREATE TABLE delivery_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id BIGINT NOT NULL,
    at          BIGINT NOT NULL,
    status_code BIGINT,
    error       TEXT,
    duration_ms BIGINT NOT NULL,
    actor       TEXT NOT NULL
);
CREATE INDEX delivery_attempts_delivery_idx ON delivery_attempts (delivery_id, id);
