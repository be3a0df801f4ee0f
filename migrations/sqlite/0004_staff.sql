-- Console staff, their sessions and sign-in attempts (sqlite). Identical to
-- the other store's 0004_staff.sql but for auto-increment keys.

CREATE TABLE staff (
    name          TEXT PRIMARY KEY,
    role          TEXT NOT NULL CHECK (role IN ('support', 'operator', 'admin')),
    -- argon2id PHC string; the password itself is never stored.
    password_hash TEXT NOT NULL,
    disabled      BIGINT NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);

-- A signed-in browser. The cookie holds a random token; only its SHA-256
-- is stored, so a database dump does not hand out live sessions.
CREATE TABLE staff_sessions (
    id_hash      TEXT PRIMARY KEY,
    staff_name   TEXT NOT NULL REFERENCES staff (name),
    csrf_token   TEXT NOT NULL,
    address      TEXT,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    -- Absolute end; the idle end is last_seen_at plus the idle timeout.
    expires_at   BIGINT NOT NULL
);
CREATE INDEX staff_sessions_staff_idx ON staff_sessions (staff_name);
CREATE INDEX staff_sessions_expires_idx ON staff_sessions (expires_at);

-- Every sign-in attempt, for rate limiting per account and per address.
CREATE TABLE login_attempts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    staff_name TEXT NOT NULL,
    address    TEXT NOT NULL,
    succeeded  BIGINT NOT NULL,
    at         BIGINT NOT NULL
);
CREATE INDEX login_attempts_name_idx ON login_attempts (staff_name, at);
CREATE INDEX login_attempts_address_idx ON login_attempts (address, at);
-- The daily purge of old attempts.
CREATE INDEX login_attempts_at_idx ON login_attempts (at);
