-- Reconciliation findings store a catalog key and its arguments (JSON)
-- instead of English and Chinese prose, rendered in the reader's language
-- when read, so a third language needs no migration. Findings written
-- before keep their text through the catalog's legacy-finding key, which
-- shows the stored text of the reader's language.
ALTER TABLE reconcile_findings ADD COLUMN message_key TEXT NOT NULL DEFAULT 'legacy-finding';
ALTER TABLE reconcile_findings ADD COLUMN message_args TEXT NOT NULL DEFAULT '{}';
UPDATE reconcile_findings SET message_args = json_build_object('zh', detail_zh, 'en', detail)::text;
ALTER TABLE reconcile_findings DROP COLUMN detail;
ALTER TABLE reconcile_findings DROP COLUMN detail_zh;
