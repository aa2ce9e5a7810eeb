-- Disbursements: payouts from a WALLET merchant's wallet to a bank account or an e-wallet,
-- created through V1 or the legacy API (one key space per merchant: V1 idempotency_key and
-- legacy orderId are the same column), their status timeline, and webhook rows that point at
-- them.
--
-- Status: PENDING → ON_PROCESS → SUCCESS | FAILED; PENDING → IN_REVIEW → PENDING | REJECTED.
-- The debit of total_debit is posted in the transaction that inserts the row; FAILED and
-- REJECTED post its reversal exactly once (ledger transfers are unique per kind and reference).

create table disbursements (
  id uuid primary key,
  merchant_id uuid not null references merchants (id),
  ref_code text not null,
  idempotency_key text not null
    constraint disbursements_idempotency_key_length check (char_length(idempotency_key) between 1 and 255),
  api text not null
    constraint disbursements_api_check check (api in ('V1', 'LEGACY')),
  source text not null default 'API',
  channel text not null
    constraint disbursements_channel_check check (channel in ('BANK', 'EWALLET')),
  bank_id uuid references banks (id),
  -- The bank as it was when the disbursement was made (legacy responses show its name and code).
  bank_short_code text,
  bank_name text,
  account_number text,
  account_name text,
  ewallet_provider text,
  ewallet_phone text,
  beneficiary_id uuid,
  request_amount bigint not null
    constraint disbursements_request_amount_check check (request_amount > 0),
  fee bigint not null
    constraint disbursements_fee_check check (fee >= 0),
  total_debit bigint not null,
  notify_url text,
  status text not null
    constraint disbursements_status_check check (status in ('PENDING', 'IN_REVIEW', 'ON_PROCESS', 'SUCCESS', 'FAILED', 'REJECTED')),
  -- The WIB calendar day the daily limit counts it against.
  wib_date date not null,
  vendor_code text references vendors (code),
  vendor_disbursement_id text,
  -- A send to vendor_code whose answer is not known: the next step asks that vendor first.
  vendor_call_pending boolean not null default false,
  vendors_tried text[] not null default '{}',
  failure_reason text,
  requested_at timestamptz not null default now(),
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint disbursements_ref_code_key unique (ref_code),
  constraint disbursements_merchant_idempotency_key unique (merchant_id, idempotency_key),
  constraint disbursements_total_debit_check check (total_debit = request_amount + fee),
  constraint disbursements_destination_check check (
    (channel = 'BANK' and bank_id is not null and account_number is not null and account_name is not null and ewallet_provider is null)
    or (channel = 'EWALLET' and ewallet_provider is not null and ewallet_phone is not null and bank_id is null))
);
create index disbursements_merchant_created_idx on disbursements (merchant_id, created_at desc, id desc);
-- The daily limit sums the day's live disbursements of one merchant.
create index disbursements_daily_idx on disbursements (merchant_id, wib_date) where status not in ('FAILED', 'REJECTED');
-- Transfers sent and not finished: the reconcile sweep looks here.
create index disbursements_in_flight_idx on disbursements (updated_at) where status = 'ON_PROCESS';

create table disbursement_events (
  id bigint generated always as identity primary key,
  disbursement_id uuid not null references disbursements (id),
  status text not null,
  event text not null,
  source text not null,
  detail jsonb,
  created_at timestamptz not null default now()
);
create index disbursement_events_disbursement_idx on disbursement_events (disbursement_id, id);

alter table webhook_deliveries add column disbursement_id uuid references disbursements (id);
create index webhook_deliveries_disbursement_idx on webhook_deliveries (disbursement_id, created_at) where disbursement_id is not null;
