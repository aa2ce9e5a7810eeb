-- Brands, merchants and their credentials.
-- API keys are stored as SHA-256 digests only; webhook and legacy client secrets must be
-- usable for HMAC / SHA-512, so they are stored encrypted (AES-256-GCM, see db/secrets.ts).

create table brands (
  id uuid primary key default gen_random_uuid(),
  domain text not null,
  name text not null,
  logo_url text,
  support_email text,
  is_default boolean not null default false,
  created_at timestamptz not null default now(),
  constraint brands_domain_key unique (domain)
);
-- At most one default brand: the one unknown hosts resolve to.
create unique index brands_one_default on brands (is_default) where is_default;

insert into brands (domain, name, support_email, is_default)
values ('localhost', 'Kasir', 'support@kasir.local', true);

create table merchants (
  id uuid primary key default gen_random_uuid(),
  brand_id uuid not null references brands (id),
  name text not null,
  status text not null default 'ACTIVE'
    constraint merchants_status_check check (status in ('ACTIVE', 'SUSPENDED', 'DISABLED')),
  settlement_type text not null
    constraint merchants_settlement_type_check check (settlement_type in ('WALLET', 'MANUAL')),
  api_key_hash bytea not null,
  webhook_secret_enc bytea,
  notify_url text,
  legacy_client_id text not null,
  legacy_client_secret_enc bytea not null,
  legacy_public_key text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint merchants_api_key_hash_key unique (api_key_hash),
  constraint merchants_legacy_client_id_key unique (legacy_client_id)
);
create index merchants_brand_id_idx on merchants (brand_id);
