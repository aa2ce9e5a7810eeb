-- QRIS payment orders (V1 and legacy share this table and the merchant order namespace),
-- their status timeline, V1 idempotency keys, and the webhook outbox.
--
-- Status: CREATING (attempt sent to a vendor, not yet confirmed; internal, never listed),
-- PENDING, PAID, EXPIRED, REFUNDED, and FAILED (no vendor produced a QR: internal, never
-- listed, and it frees the merchant_order_id for a retry).

create table orders (
  id uuid primary key,
  merchant_id uuid not null references merchants (id),
  ref_code text not null,
  merchant_order_id text not null
    constraint orders_merchant_order_id_length check (char_length(merchant_order_id) between 1 and 255),
  api text not null
    constraint orders_api_check check (api in ('V1', 'LEGACY')),
  amount bigint not null
    constraint orders_amount_check check (amount between 1 and 9999999999999),
  payment_method text not null default 'QRIS',
  status text not null
    constraint orders_status_check check (status in ('CREATING', 'PENDING', 'PAID', 'EXPIRED', 'REFUNDED', 'FAILED')),
  customer_name text,
  customer_email text,
  customer_phone text,
  notify_url text,
  return_url text,
  metadata jsonb,
  expires_at timestamptz,
  qris_string text,
  qr_token text not null,
  vendor_code text references vendors (code),
  vendor_order_id text,
  vendor_rrn text,
  -- The vendor a create call was sent to and whose answer is not known yet: the next attempt
  -- must ask it (query) before anything else is tried.
  pending_vendor text references vendors (code),
  vendors_tried text[] not null default '{}',
  failure_code text,
  paid_at timestamptz,
  is_late_payment boolean not null default false,
  is_settled boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint orders_ref_code_key unique (ref_code),
  constraint orders_qr_token_key unique (qr_token)
);
-- One live order per merchant_order_id; failed attempts step aside so the id can be retried.
create unique index orders_merchant_order_id_key on orders (merchant_id, merchant_order_id) where status <> 'FAILED';
create index orders_merchant_created_idx on orders (merchant_id, created_at desc, id desc);
create index orders_expiry_idx on orders (expires_at) where status = 'PENDING';
create index orders_creating_idx on orders (updated_at) where status = 'CREATING';

create table order_events (
  id bigint generated always as identity primary key,
  order_id uuid not null references orders (id),
  status text not null,
  event text not null,
  source text not null,
  detail jsonb,
  created_at timestamptz not null default now()
);
create index order_events_order_idx on order_events (order_id, id);

-- V1 Idempotency-Key records (Stripe semantics). response_* stay null until the order has a
-- final answer (201 created or 200 existing); a key whose attempt failed is re-executed.
create table idempotency_keys (
  merchant_id uuid not null references merchants (id),
  key text not null
    constraint idempotency_keys_key_length check (char_length(key) between 1 and 255),
  request_hash bytea not null,
  -- Deferred: the key is claimed first in the create transaction, before the order row exists.
  order_id uuid not null references orders (id) deferrable initially deferred,
  response_status integer,
  response_body text,
  created_at timestamptz not null default now(),
  constraint idempotency_keys_pkey primary key (merchant_id, key)
);
create index idempotency_keys_order_idx on idempotency_keys (order_id);
create index idempotency_keys_created_idx on idempotency_keys (created_at);

-- Webhook outbox: a delivery row is written in the transaction that changes the state it
-- reports; the body is stored as the exact bytes that are signed and sent on every attempt.
create table webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  order_id uuid references orders (id),
  event text not null,
  url text not null,
  body text not null,
  status text not null default 'PENDING'
    constraint webhook_deliveries_status_check check (status in ('PENDING', 'DELIVERED', 'FAILED')),
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_deliveries_order_idx on webhook_deliveries (order_id, created_at);

create table webhook_attempts (
  id bigint generated always as identity primary key,
  delivery_id uuid not null references webhook_deliveries (id),
  attempt integer not null,
  status_code integer,
  latency_ms integer not null,
  error text,
  created_at timestamptz not null default now()
);
create index webhook_attempts_delivery_idx on webhook_attempts (delivery_id, attempt);
