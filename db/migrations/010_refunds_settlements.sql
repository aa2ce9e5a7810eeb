-- Refunds of paid orders, and settlements paying MANUAL merchants out to their bank account.
--
-- Money (db/ledger.ts): an accepted refund moves its amount from the merchant's WALLET (or, for
-- MANUAL merchants, SETTLEMENT_ACCRUAL) into REFUNDS_IN_FLIGHT; the vendor's success sends it
-- out through VENDOR_CLEARING, a failure brings it back. A settlement moves net_payout +
-- disbursement_fee from SETTLEMENT_ACCRUAL into SETTLEMENTS_IN_FLIGHT when it is built; PAID
-- sends net_payout out through VENDOR_CLEARING and books the fee; CANCELLED brings it back and
-- frees its orders and refunds for the next settlement.

alter table ledger_accounts drop constraint ledger_accounts_kind_check;
alter table ledger_accounts add constraint ledger_accounts_kind_check check (kind in
  ('WALLET', 'SETTLEMENT_ACCRUAL', 'DISBURSEMENTS_IN_FLIGHT', 'VENDOR_CLEARING', 'FEE_REVENUE', 'ADJUSTMENTS',
   'REFUNDS_IN_FLIGHT', 'SETTLEMENTS_IN_FLIGHT'));

alter table ledger_transfers drop constraint ledger_transfers_kind_check;
alter table ledger_transfers add constraint ledger_transfers_kind_check check (kind in
  ('ORDER_PAYMENT', 'DISBURSEMENT', 'DISBURSEMENT_COMPLETED', 'DISBURSEMENT_REVERSAL', 'ADJUSTMENT',
   'REFUND', 'REFUND_COMPLETED', 'REFUND_REVERSAL', 'SETTLEMENT_PAYOUT', 'SETTLEMENT_COMPLETED', 'SETTLEMENT_REVERSAL'));

-- Where a MANUAL merchant's settlements are paid (ops merchant:set-settlement-account).
alter table merchants
  add column settlement_bank_id uuid references banks (id),
  add column settlement_account_number text,
  add column settlement_account_name text,
  add constraint merchants_settlement_account_check check (
    (settlement_bank_id is null and settlement_account_number is null and settlement_account_name is null)
    or (settlement_bank_id is not null and settlement_account_number is not null and settlement_account_name is not null));

create table settlements (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  ref_code text not null,
  -- The WIB calendar day the settlement closes; period_end is its end (00:00 WIB the next day
  -- with the default cut-off), period_start the previous cut-off.
  settlement_date date not null,
  period_start timestamptz not null,
  period_end timestamptz not null,
  gross_amount bigint not null,
  mdr_total bigint not null,
  refund_total bigint not null,
  disbursement_fee bigint not null,
  platform_fee bigint not null default 0,
  aggregator_fee bigint not null default 0,
  net_payout bigint not null,
  order_count integer not null,
  bank_id uuid not null references banks (id),
  account_number text not null,
  account_name text not null,
  status text not null default 'PENDING'
    constraint settlements_status_check check (status in ('PENDING', 'PROCESSING', 'PAID', 'FAILED', 'CANCELLED')),
  vendor_code text references vendors (code),
  vendor_disbursement_id text,
  vendor_call_pending boolean not null default false,
  vendors_tried text[] not null default '{}',
  failure_reason text,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint settlements_ref_code_key unique (ref_code),
  constraint settlements_formula_check check (net_payout = gross_amount - mdr_total - refund_total - disbursement_fee),
  constraint settlements_net_payout_check check (net_payout > 0)
);
-- One live settlement per merchant and day: a rerun creates nothing twice; a cancelled one
-- steps aside so the day can be rebuilt.
create unique index settlements_merchant_date_key on settlements (merchant_id, settlement_date) where status <> 'CANCELLED';
create index settlements_merchant_created_idx on settlements (merchant_id, created_at desc, id desc);
create index settlements_in_flight_idx on settlements (updated_at) where status in ('PENDING', 'PROCESSING');

alter table orders add column settlement_id uuid references settlements (id);
-- The settlement build reads a MANUAL merchant's paid, unsettled orders.
create index orders_unsettled_idx on orders (merchant_id, paid_at) where status in ('PAID', 'REFUNDED') and not is_settled;

create table refunds (
  id uuid primary key,
  merchant_id uuid not null references merchants (id),
  order_id uuid not null references orders (id),
  ref_code text not null,
  amount bigint not null constraint refunds_amount_check check (amount > 0),
  reason text constraint refunds_reason_length check (char_length(reason) <= 500),
  status text not null default 'PENDING'
    constraint refunds_status_check check (status in ('PENDING', 'SUCCEEDED', 'FAILED')),
  vendor_code text references vendors (code),
  vendor_refund_id text,
  failure_reason text,
  -- MANUAL merchants: the settlement whose refund_total counts this refund, and, for a refund
  -- that failed after being counted, the settlement that gave it back.
  settlement_id uuid references settlements (id),
  reversal_settlement_id uuid references settlements (id),
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint refunds_ref_code_key unique (ref_code)
);
create index refunds_order_idx on refunds (order_id, created_at);
create index refunds_unsettled_idx on refunds (merchant_id) where settlement_id is null;
create index refunds_pending_idx on refunds (updated_at) where status = 'PENDING';

alter table webhook_deliveries add column settlement_id uuid references settlements (id);
