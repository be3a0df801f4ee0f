-- Issue 18, items 6 and 5 (identical in migrations/sqlite and
-- migrations/postgres; expand-only: a defaulted column and new tables).

-- Expiry spreading: a template's claimed coupons end up to this many
-- seconds before its nominal end (a fixed offset per coupon, drawn from
-- its id); 0, the default, spreads nothing.
ALTER TABLE templates ADD COLUMN expiry_spread_seconds BIGINT NOT NULL DEFAULT 0;

-- The shop's reports of customer activity (POST /users/{id}/activity):
-- the latest instant per user and kind, so at most three rows a user.
-- Self-check visits are written here too, as kind 'visit'.
CREATE TABLE user_activity_kinds (
    user_id TEXT NOT NULL,
    kind    TEXT NOT NULL CHECK (kind IN ('browse', 'cart', 'visit')),
    last_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, kind)
);

-- Wake-up rules (唤醒): at lead_seconds before coupons end, users holding
-- such coupons who were active within active_within_seconds get a
-- reminder and optionally a coupon of bonus_template_id; control_percent
-- of them (chosen by a hash of rule and user) get nothing, as a control
-- group. template_ids: a JSON array, empty = every template.
CREATE TABLE wakeup_rules (
    id                    TEXT PRIMARY KEY,
    name                  TEXT NOT NULL,
    lead_seconds          BIGINT NOT NULL,
    active_within_seconds BIGINT NOT NULL,
    template_ids          TEXT NOT NULL DEFAULT '[]',
    bonus_template_id     TEXT,
    control_percent       BIGINT NOT NULL DEFAULT 10 CHECK (control_percent >= 0 AND control_percent <= 50),
    status                TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
    created_at            BIGINT NOT NULL,
    created_by            TEXT NOT NULL,
    -- The planner's cursor across runs and instances: every coupon ending
    -- up to this instant was decided by a complete pass (only grows).
    scanned_through       BIGINT
);
CREATE INDEX wakeup_rules_created_idx ON wakeup_rules (created_at, id);

-- One row per expiring coupon a wake-up rule decided about: never twice
-- for the same coupon (the primary key; a second instance's insert fails
-- and its transaction rolls back). outcome: 'sent' (reminder, maybe a
-- bonus coupon), 'control' (held back on purpose), 'inactive' (the user
-- was not active in the window; nothing sent).
CREATE TABLE wakeup_marks (
    coupon_id       TEXT PRIMARY KEY,
    rule_id         TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('sent', 'control', 'inactive')),
    channel         TEXT,
    bonus_coupon_id TEXT,
    ends_at         BIGINT NOT NULL,
    created_at      BIGINT NOT NULL
);
-- The rule page's figures: one rule's marks by outcome.
CREATE INDEX wakeup_marks_rule_idx ON wakeup_marks (rule_id, outcome);
