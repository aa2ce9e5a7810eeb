-- Order metadata is "stored and returned as-is" (spec 2.2): jsonb reorders keys, json keeps
-- the exact text it is given (the merchant's member text, whitespace between tokens dropped).
-- Query it as metadata::jsonb where needed. Existing rows keep the text jsonb had made of them.
alter table orders alter column metadata type json using metadata::json;
