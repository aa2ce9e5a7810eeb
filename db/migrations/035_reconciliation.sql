-- Daily reconciliation with each vendor (docs/money.md, Reconciliation): what a vendor reports
-- for one WIB day against Kasir's orders, payouts and refunds at that vendor.

-- One run per vendor and day each time it is asked for (the schedule, or ops recon:run); a
-- rerun is a new run. At most one run of a vendor and day is RUNNING at a time.
create table recon_runs (
  id uuid primary key,
  vendor_code text not null references vendors (code),
  day date not null,
  status text not null default 'RUNNING'
    constraint recon_runs_status_check check (status in ('RUNNING', 'COMPLETED', 'FAILED')),
  trigger text not null
    constraint recon_runs_trigger_check check (trigger in ('schedule', 'operator')),
  -- How the vendor was read: its list or statement, or record by record (the connector says).
  source text,
  vendor_lines integer,
  kasir_records integer,
  -- What matched, per subject: {"PAYMENT": {"count": n, "amount": rupiah}, ...}.
  matched jsonb,
  -- The vendor's fees against the cost Kasir assumed, per subject (only lines that carry a fee).
  fees jsonb,
  -- Matched lines whose time differs from Kasir's by more than the tolerance, per subject.
  time_skews jsonb,
  new_differences integer,
  open_differences integer,
  repaired integer,
  error text,
  started_at timestamptz not null default now(),
  finished_at timestamptz
);
create unique index recon_runs_running_key on recon_runs (vendor_code, day) where status = 'RUNNING';
create index recon_runs_day_idx on recon_runs (day desc, vendor_code, started_at desc);

-- One line per difference, in a finance team's words (kind). A difference is identified within
-- its vendor and day by a fingerprint of what differs, so a rerun that finds it again keeps the
-- row (and a person's resolution of it), and one it no longer finds is removed while OPEN.
create table recon_differences (
  id uuid primary key default gen_random_uuid(),
  run_id uuid not null references recon_runs (id),
  last_run_id uuid not null references recon_runs (id),
  vendor_code text not null references vendors (code),
  day date not null,
  kind text not null
    constraint recon_differences_kind_check check (kind in (
      'PAID_AT_VENDOR_ONLY', 'PAID_IN_KASIR_ONLY', 'AMOUNT_DIFFERS', 'STATUS_DIFFERS', 'PAID_TWICE', 'NO_KASIR_RECORD')),
  subject text not null
    constraint recon_differences_subject_check check (subject in ('PAYMENT', 'PAYOUT', 'REFUND')),
  fingerprint text not null,
  reference text,
  vendor_reference text,
  merchant_id uuid,
  kasir_amount bigint,
  vendor_amount bigint,
  kasir_status text,
  vendor_status text,
  detail text not null,
  status text not null default 'OPEN'
    constraint recon_differences_status_check check (status in ('OPEN', 'REPAIRED', 'RESOLVED')),
  -- Why an allowed repair was not made, or what the repair did.
  repair text,
  repaired_run_id uuid references recon_runs (id),
  resolution_note text,
  resolved_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint recon_differences_resolved_check check ((status = 'RESOLVED') = (resolution_note is not null)),
  constraint recon_differences_repaired_check check ((status = 'REPAIRED') = (repaired_run_id is not null))
);
create unique index recon_differences_key on recon_differences (vendor_code, day, fingerprint);
create index recon_differences_open_idx on recon_differences (vendor_code, kind) where status = 'OPEN';
create index recon_differences_run_idx on recon_differences (last_run_id);

-- What Kasir assumes each vendor charges it, for the fee comparison: a payment costs
-- amount × bps / 10000 (rounded half up), a payout and a refund a flat amount. Null: no
-- assumption, so a vendor's fee is shown but not compared.
alter table vendors
  add column cost_payment_bps integer constraint vendors_cost_payment_bps_check check (cost_payment_bps between 0 and 10000),
  add column cost_payout bigint constraint vendors_cost_payout_check check (cost_payout >= 0),
  add column cost_refund bigint constraint vendors_cost_refund_check check (cost_refund >= 0);

-- A day's records at a vendor, read by the run: payments by when they were paid, payouts by
-- when Kasir recorded the reference it sent (payout_references), refunds by when they were made.
create index orders_vendor_paid_idx on orders (vendor_code, paid_at) where status in ('PAID', 'REFUNDED');
create index payout_references_created_idx on payout_references (created_at);
create index refunds_vendor_created_idx on refunds (vendor_code, created_at);
-- Vendor lines that carry only the vendor's id (Iris statements, Xendit refunds) are matched by it
-- (settlements are one a merchant a day: no index needed).
create index disbursements_vendor_id_idx on disbursements (vendor_disbursement_id) where vendor_disbursement_id is not null;
create index refunds_vendor_id_idx on refunds (vendor_refund_id) where vendor_refund_id is not null;

-- A run's differences as a CSV, through the export machinery: an operator's export belongs to
-- no merchant (nothing is announced, no merchant can list it) and names its run.
alter table exports alter column merchant_id drop not null;
alter table exports add column recon_run_id uuid references recon_runs (id);
alter table exports drop constraint exports_type_check;
alter table exports add constraint exports_type_check check (type in ('orders', 'settlements', 'disbursements', 'balance_history', 'recon_differences'));
alter table exports add constraint exports_owner_check check (
  (type = 'recon_differences' and recon_run_id is not null and merchant_id is null)
  or (type <> 'recon_differences' and recon_run_id is null and merchant_id is not null));
