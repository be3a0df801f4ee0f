-- In-app messages store a catalog key and its arguments instead of the
-- finished texts (sqlite). Identical to migrations/postgres/0015_user_message_keys.sql
-- but for the JSON function.
--
-- A row written from now on is rendered in the reader's language when read
-- (src/i18n/*/reminder_texts.ftl), so a third language is a catalog folder,
-- not another body column. The rows written before kept only their two
-- texts: they become the key legacy-text with the texts as its arguments
-- ({"zh": ..., "en": ...}), which shows each language's text as it was.
--
-- The defaults are there because SQLite adds a NOT NULL column only with
-- one; the service always writes both columns.
ALTER TABLE user_messages ADD COLUMN message_key TEXT NOT NULL DEFAULT '';
ALTER TABLE user_messages ADD COLUMN message_args TEXT NOT NULL DEFAULT '{}';

UPDATE user_messages
SET message_key = 'legacy-text',
    message_args = json_object('zh', body, 'en', body_en);

ALTER TABLE user_messages DROP COLUMN body;
ALTER TABLE user_messages DROP COLUMN body_en;
