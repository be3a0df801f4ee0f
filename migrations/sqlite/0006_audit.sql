-- Audit log (sqlite). Identical to the other store's 0006_audit.sql but for
-- auto-increment keys.

-- The client address of the request that caused an event (console: the
-- staff member's TCP peer; API: the caller's; jobs: none). Nullable: rows
-- written before this migration and job rows have none.
ALTER TABLE events ADD COLUMN address TEXT;
ALTER TABLE events_archive ADD COLUMN address TEXT;

-- Audit filters on events, newest first: every list is one range scan of
-- one of these, read backwards in (at, id) order, with the date range as
-- bounds on at and the page cursor as a bound on (at, id).
CREATE INDEX events_at_idx ON events (at, id);
CREATE INDEX events_actor_at_idx ON events (actor, at, id);
CREATE INDEX events_action_at_idx ON events (action, at, id);
-- (a target filter uses the existing events_coupon_idx / events_order_idx:
-- one coupon's or order's events are a handful)

-- What happens to staff accounts and sessions: created, role changed,
-- password reset, disabled, enabled, signed in, sign-in refused, signed
-- out. Written in the same transaction as the change itself.
CREATE TABLE staff_audit (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      BIGINT NOT NULL,
    -- staff:<name> of the admin (or the person signing in / out), cli,
    -- bootstrap, or anonymous for a refused sign-in.
    actor   TEXT NOT NULL,
    action  TEXT NOT NULL,
    -- The staff account acted on.
    target  TEXT NOT NULL,
    -- e.g. "support -> operator".
    detail  TEXT,
    address TEXT
);
CREATE INDEX staff_audit_at_idx ON staff_audit (at, id);
CREATE INDEX staff_audit_actor_at_idx ON staff_audit (actor, at, id);
CREATE INDEX staff_audit_action_at_idx ON staff_audit (action, at, id);
CREATE INDEX staff_audit_target_at_idx ON staff_audit (target, at, id);
