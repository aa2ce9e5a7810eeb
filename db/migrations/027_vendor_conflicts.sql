-- A vendor's word Kasir recorded but did not apply, for an operator (ops vendor:conflicts):
--   NOT_ITS_RECORD  a verified callback about an order, payout or refund that another vendor
--                   holds (or none does): one vendor's credential never moves another's money;
--   CONTRADICTION   a vendor's final word against Kasir's final state (SUCCESS after FAILED, or
--                   the reverse): money may have moved where Kasir thinks it did not.
-- Written in the transaction that declined the word (db/vendor-binding.ts); never updated.
create table vendor_conflicts (
  id bigint generated always as identity primary key,
  kind text not null
    constraint vendor_conflicts_kind_check check (kind in ('NOT_ITS_RECORD', 'CONTRADICTION')),
  -- The vendor whose word it is; no foreign key, so the record outlives any change to vendors.
  vendor_code text not null,
  record_type text not null
    constraint vendor_conflicts_record_type_check check (record_type in ('ORDER', 'DISBURSEMENT', 'SETTLEMENT', 'REFUND')),
  record_id uuid not null,
  -- The reference the vendor named (an order's or refund's ref_code, a payout reference).
  reference text not null,
  -- The vendor holding the record when the word came (null: none).
  record_vendor text,
  kasir_status text not null,
  vendor_status text not null,
  -- How the word came: callback:<code>, reconcile:<code>, ...; and the vendor's event id if any.
  source text not null,
  event_id text,
  detail jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index vendor_conflicts_created_idx on vendor_conflicts (created_at);
