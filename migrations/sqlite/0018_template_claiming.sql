-- Operators pause and resume a template's claiming (status 'disabled' is
-- the paused state) and may end claiming early. paused_at says since when;
-- claim_ends_at, when set, ends claiming before the coupons' own validity
-- does. Issued coupons are unaffected by either. Same in both stores.
ALTER TABLE templates ADD COLUMN paused_at BIGINT;
ALTER TABLE templates ADD COLUMN claim_ends_at BIGINT;
CREATE INDEX templates_created_idx ON templates (created_at, id);
