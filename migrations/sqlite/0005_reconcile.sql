-- Reconciliation (sqlite): runs and what each found. Identical to the other
-- store's 0005_reconcile.sql but for auto-increment keys.

CREATE TABLE reconcile_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    -- `job:reconcile`, or `staff:<name>` for a run started from the console.
    actor       TEXT NOT NULL,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT NOT NULL,
    found       BIGINT NOT NULL,
    -- JSON object: anomalies found per kind.
    found_by_kind TEXT NOT NULL,
    -- Whether a scan stopped at its bound before the end of its rows.
    truncated   BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX reconcile_runs_started_idx ON reconcile_runs (started_at);

CREATE TABLE reconcile_findings (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      BIGINT NOT NULL REFERENCES reconcile_runs (id),
    kind        TEXT NOT NULL,
    coupon_id   TEXT,
    order_no    TEXT,
    user_id     TEXT,
    -- For template_stock_mismatch: the template, its counter and the
    -- coupons it had issued when the run counted.
    template_id TEXT,
    stock_claimed BIGINT,
    stock_issued  BIGINT,
    detail      TEXT NOT NULL,
    detail_zh   TEXT NOT NULL,
    -- The repair the rules chose: release_coupon, repair_link,
    -- cancel_order, or none (report only).
    fix         TEXT NOT NULL,
    repaired_at BIGINT,
    repaired_by TEXT,
    -- Why a repair attempt was refused (the anomaly had changed), if one was.
    repair_note TEXT
);
CREATE INDEX reconcile_findings_run_idx ON reconcile_findings (run_id, kind, id);

-- Scans: live orders by status, recently paid orders by payment time.
CREATE INDEX orders_status_no_idx ON orders (status, order_no);
CREATE INDEX orders_status_paid_idx ON orders (status, paid_at);

-- Keyset scans page by (time, id): the id in the index keeps each page an
-- index range read in order, with no sort. Replaces the two-column indexes
-- of 0002 (the reaper and archiving use the same prefix).
DROP INDEX coupons_status_locked_at_idx;
CREATE INDEX coupons_status_locked_at_idx ON coupons (status, locked_at, id);
DROP INDEX coupons_status_updated_at_idx;
CREATE INDEX coupons_status_updated_at_idx ON coupons (status, updated_at, id);
