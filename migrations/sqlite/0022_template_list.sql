-- The template list (GET /templates, /console/templates) filtered by kind
-- or by claiming status (paused is status 'disabled'; the other standings
-- are status 'active' plus times), newest first: each filter is one range
-- of its index read backwards in (created_at, id) order, so a page stops
-- after its LIMIT however few templates match. Without a filter the list
-- reads templates_created_idx (0018). "Not started" is a range of
-- valid_from (the few templates set up ahead), sorted after. Same in both
-- stores.
CREATE INDEX templates_kind_created_idx ON templates (kind, created_at, id);
CREATE INDEX templates_status_created_idx ON templates (status, created_at, id);
CREATE INDEX templates_valid_from_idx ON templates (valid_from);
