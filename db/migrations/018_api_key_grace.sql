-- API-key rotation with a grace period (ops merchant:rotate-key --grace-minutes N): the key
-- being replaced keeps working until previous_api_key_expires_at, then authentication ignores
-- it. Both columns are set together or not at all; the digest is unique like api_key_hash so
-- a lookup by digest names one merchant.
alter table merchants
  add column previous_api_key_hash bytea,
  add column previous_api_key_expires_at timestamptz,
  add constraint merchants_previous_api_key_check
    check ((previous_api_key_hash is null) = (previous_api_key_expires_at is null));
create unique index merchants_previous_api_key_hash_key on merchants (previous_api_key_hash)
  where previous_api_key_hash is not null;
