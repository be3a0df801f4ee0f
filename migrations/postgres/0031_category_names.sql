-- What people call a category. Orders and templates carry the shop's
-- category codes (`phones`, `snacks`), which pages must not show; an
-- operator names each code in both languages (手机 / Phones) on the
-- console's categories page, and every page shows the name, or the code
-- when it has none yet. A small table read whole (at most 500 rows) and
-- cached per instance for 10 seconds (service::categories).
CREATE TABLE category_names (
    code        TEXT PRIMARY KEY,
    name_zh     TEXT NOT NULL,
    name_en     TEXT NOT NULL,
    updated_by  TEXT NOT NULL,
    updated_at  BIGINT NOT NULL
);
