-- Team users of a merchant and the API keys an operator issues them (db/users.ts).
--
-- Removing a user is a soft delete (removed_at): the row stays as the record of who held
-- which keys and when, and its keys are revoked in the same transaction. An email is unique
-- per merchant, case-insensitively, among users not removed, so a person removed and added
-- again becomes a new user with a new id. Roles are checked on every request (api/http/roles.ts),
-- so a role change takes effect on the user's next request.

create table merchant_users (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  full_name text not null
    constraint merchant_users_full_name_length check (char_length(full_name) between 1 and 200),
  email text not null
    constraint merchant_users_email_length check (char_length(email) between 3 and 254),
  -- 62 followed by digits only.
  phone_number text
    constraint merchant_users_phone_number_check check (phone_number ~ '^62[0-9]{8,12}$'),
  role text not null
    constraint merchant_users_role_check check (role in ('owner', 'finance', 'ops', 'viewer')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  removed_at timestamptz,
  -- The target of api_keys' composite key: a key's user belongs to the key's merchant.
  constraint merchant_users_merchant_id_id_key unique (merchant_id, id)
);
create unique index merchant_users_merchant_email_key on merchant_users (merchant_id, lower(email)) where removed_at is null;
-- GET /v1/my/users lists a merchant's current users, oldest first.
create index merchant_users_merchant_idx on merchant_users (merchant_id, created_at) where removed_at is null;

create table api_keys (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null,
  user_id uuid not null,
  -- SHA-256 of the 64-hex key; the key itself is shown once by `user:issue-key`.
  key_hash bytea not null
    constraint api_keys_key_hash_length check (octet_length(key_hash) = 32),
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  constraint api_keys_key_hash_key unique (key_hash),
  constraint api_keys_user_fkey foreign key (merchant_id, user_id) references merchant_users (merchant_id, id)
);
create index api_keys_user_idx on api_keys (user_id);
