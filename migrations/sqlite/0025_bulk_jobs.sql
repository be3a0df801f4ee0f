-- Bulk issue (定向发券) and bulk void (批量作废): one row per job, one row
-- per input line with its outcome. Expand-only: two new tables and their
-- indexes. Identical in migrations/postgres/0025_bulk_jobs.sql.
--
-- A job is resumable: its lines are stored before it runs, `cursor_line`
-- is the last line handled, and every batch writes each line's outcome in
-- the same transaction as the coupon it issued or voided.
CREATE TABLE bulk_jobs (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('bulk_issue', 'bulk_void')),
    template_id   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('loading', 'running', 'done', 'failed')),
    -- SHA-256 (hex) of the template id and the uploaded file; NULL for a
    -- void of every available coupon (no file).
    input_sha256  TEXT,
    notify        BIGINT NOT NULL DEFAULT 0,
    reason        TEXT,
    actor         TEXT NOT NULL,
    request_id    TEXT,
    total         BIGINT NOT NULL DEFAULT 0,
    loaded        BIGINT NOT NULL DEFAULT 0,
    cursor_line   BIGINT NOT NULL DEFAULT 0,
    -- A void of every available coupon walks the template's coupons:
    -- `<phase>:<ends_at>:<id>` of the last one seen.
    walk_cursor   TEXT,
    succeeded     BIGINT NOT NULL DEFAULT 0,
    skipped       BIGINT NOT NULL DEFAULT 0,
    failed        BIGINT NOT NULL DEFAULT 0,
    -- JSON object: skip and failure reasons -> count.
    reasons       TEXT NOT NULL DEFAULT '{}',
    error         TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    finished_at   BIGINT
);
-- The same file again for the same template is the same job.
CREATE UNIQUE INDEX bulk_jobs_input_idx ON bulk_jobs (template_id, kind, input_sha256);
-- The runner takes the oldest running job.
CREATE INDEX bulk_jobs_status_idx ON bulk_jobs (status, created_at, id);
-- A template's jobs, newest first.
CREATE INDEX bulk_jobs_template_idx ON bulk_jobs (template_id, created_at);

CREATE TABLE bulk_job_lines (
    job_id     TEXT NOT NULL,
    line_no    BIGINT NOT NULL,
    value      TEXT NOT NULL,
    -- NULL while pending; then issued, invalidated, skipped or failed.
    outcome    TEXT CHECK (outcome IS NULL OR outcome IN ('issued', 'invalidated', 'skipped', 'failed')),
    reason     TEXT,
    coupon_id  TEXT,
    PRIMARY KEY (job_id, line_no)
);
