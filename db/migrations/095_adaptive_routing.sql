-- Adaptive routing (docs/architecture.md, "Routing modes"; db/routing.ts).
--
-- route_modes: how a route (a merchant's own, or the platform default when merchant_id is
-- null) orders its vendors. No row means 'priority', the mode every route had before.
create table route_modes (
  merchant_id uuid references merchants (id),
  method text not null
    constraint route_modes_method_check check (method in ('QRIS', 'BANK', 'EWALLET')),
  mode text not null
    constraint route_modes_mode_check check (mode in ('priority', 'adaptive')),
  updated_at timestamptz not null default now(),
  constraint route_modes_key unique nulls not distinct (merchant_id, method)
);

-- What vendor calls that start something (a QR, a payout) answered, counted per 5-second bucket,
-- vendor, method and destination (bank or e-wallet code of a payout; '' for QRIS). Each worker
-- process adds its counts about once a second (db/vendor-outcomes.ts). Statistics, not records:
-- no foreign key, so counting never locks a vendor row that vendor:remove locks.
-- latency_ms_buckets: calls by duration, one cell per bound of LATENCY_BOUNDS_MS and one over.
create table vendor_outcomes (
  bucket_start timestamptz not null,
  vendor_code text not null,
  method text not null,
  destination text not null default '',
  ok integer not null default 0,
  failed integer not null default 0,
  unknown integer not null default 0,
  latency_ms_buckets integer[] not null,
  constraint vendor_outcomes_pkey primary key (bucket_start, vendor_code, method, destination)
);

-- Whether a vendor is demoted for a method now, as last judged by any process: a change is
-- written by the one process whose update flips the row, which logs it and adds the event.
create table vendor_health (
  vendor_code text not null,
  method text not null,
  demoted boolean not null,
  changed_at timestamptz not null default now(),
  constraint vendor_health_pkey primary key (vendor_code, method)
);

-- Demotions and restorations, for operators (ops routes:explain); never a merchant webhook.
create table vendor_health_events (
  id bigint generated always as identity primary key,
  vendor_code text not null,
  method text not null,
  event text not null
    constraint vendor_health_events_event_check check (event in ('demoted', 'restored')),
  detail jsonb not null,
  created_at timestamptz not null default now()
);
create index vendor_health_events_recent on vendor_health_events (vendor_code, method, created_at desc);
