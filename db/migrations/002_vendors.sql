-- Upstream gateways ("vendors") and how payment methods / disbursement channels route to them.
-- A route with merchant_id null is the platform default; a merchant with any route of its own
-- for a method uses only its own routes for that method. Lower priority is tried first.

create table vendors (
  code text primary key
    constraint vendors_code_check check (code ~ '^[a-z0-9][a-z0-9_-]{0,31}$'),
  kind text not null,
  base_url text not null,
  credentials_enc bytea not null,
  enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table vendor_routes (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid references merchants (id),
  method text not null
    constraint vendor_routes_method_check check (method in ('QRIS', 'BANK', 'EWALLET')),
  vendor_code text not null references vendors (code),
  priority integer not null default 100,
  created_at timestamptz not null default now(),
  constraint vendor_routes_key unique nulls not distinct (merchant_id, method, vendor_code)
);
create index vendor_routes_lookup on vendor_routes (method, merchant_id, priority);

-- Every verified callback, keyed by the vendor's event id: a repeated callback is
-- recognised here and changes nothing twice.
create table vendor_callbacks (
  vendor_code text not null references vendors (code),
  event_id text not null,
  type text not null,
  reference text not null,
  payload jsonb not null,
  received_at timestamptz not null default now(),
  constraint vendor_callbacks_pkey primary key (vendor_code, event_id)
);
