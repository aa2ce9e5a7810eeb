-- Reports (GET /v1/reports/profits) and CSV exports (POST /v1/reports/export, db/exports.ts).
--
-- An export is one row here, built by the csv worker group (workers/export-build.ts), which
-- streams the rows through a cursor into export_chunks, about 1 MiB each, so a build and a
-- download each hold one chunk in memory whatever the file's size, and any API process can
-- serve any file. A build is one transaction holding the export row's lock: the chunks and
-- COMPLETED commit together, a crashed build leaves nothing behind, and a second attempt (a
-- retried job) waits for the first and then finds it done. `attempt` is raised, committed,
-- when a build starts, so the export shows PROCESSING meanwhile and a build whose attempt was
-- overtaken stands down. Exports older than EXPORT_RETENTION_HOURS are deleted, chunks first,
-- by the csv group's sweep.

create table exports (
  id uuid primary key,
  merchant_id uuid not null references merchants (id),
  type text not null
    constraint exports_type_check check (type in ('orders', 'settlements', 'disbursements', 'balance_history')),
  status text not null default 'QUEUED'
    constraint exports_status_check check (status in ('QUEUED', 'PROCESSING', 'COMPLETED', 'FAILED')),
  -- WIB calendar days, inclusive; null is open-ended on that side.
  date_from date,
  date_to date,
  attempt integer not null default 0,
  -- Data rows (the header not counted) and bytes of the file; null until COMPLETED.
  row_count integer,
  byte_count bigint,
  error text,
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint exports_dates_check check (date_from <= date_to)
);
create index exports_merchant_created_idx on exports (merchant_id, created_at desc, id desc);
-- The retention sweep deletes the oldest first.
create index exports_created_idx on exports (created_at);

create table export_chunks (
  export_id uuid not null references exports (id) on delete cascade,
  seq integer not null,
  data bytea not null,
  constraint export_chunks_pkey primary key (export_id, seq)
);
-- Stored uncompressed: pglz (this server's only TOAST compression) made a file 2.6x smaller
-- but three times as slow to write, and the build waits for each write; retention bounds the
-- space instead.
alter table export_chunks alter column data set storage external;

-- What the profits report and the exports select by, per merchant.
-- Orders paid in a period (the report's order totals).
create index orders_merchant_paid_idx on orders (merchant_id, paid_at) where status in ('PAID', 'REFUNDED');
-- Refunds and disbursements finished in a period.
create index refunds_merchant_completed_idx on refunds (merchant_id, completed_at) where status = 'SUCCEEDED';
create index disbursements_merchant_completed_idx on disbursements (merchant_id, completed_at) where status = 'SUCCESS';
-- Settlements by their business day (the export's date range).
create index settlements_merchant_date_idx on settlements (merchant_id, settlement_date);
-- A wallet's movements in a period (the balance_history export).
create index ledger_postings_account_created_idx on ledger_postings (account_id, created_at);
