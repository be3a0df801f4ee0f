-- Keys the service makes for itself and every instance on the database
-- shares (issue 12): the first instance that needs one inserts a random
-- value, the others read it. Today: the key that signs the sign-in form's
-- CSRF token.
CREATE TABLE server_secrets (
    name       TEXT PRIMARY KEY,
    secret     TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
