-- The double-entry ledger (db/ledger.ts is the only writer) and each merchant's money settings.
--
-- Every account belongs to one merchant, platform-side accounts included (the fee revenue
-- earned from merchant M, the money the vendors hold for M): two merchants' transfers never
-- touch the same row, so no platform-wide hot row serialises payments. Platform totals are
-- sums over merchants.
--
-- Sign convention: a posting's amount is signed; the postings of one transfer sum to zero.
-- Liability accounts (WALLET, SETTLEMENT_ACCRUAL, DISBURSEMENTS_IN_FLIGHT) and FEE_REVENUE grow
-- with positive postings; VENDOR_CLEARING (money vendors hold for us) goes negative as payers
-- pay and back towards zero as money leaves through vendors. ADJUSTMENTS is the counterpart of
-- operator corrections.

alter table merchants
  add column mdr_bps integer not null default 70
    constraint merchants_mdr_bps_check check (mdr_bps between 0 and 10000),
  add column fee_bank bigint not null default 2500
    constraint merchants_fee_bank_check check (fee_bank >= 0),
  add column fee_ewallet bigint not null default 1000
    constraint merchants_fee_ewallet_check check (fee_ewallet >= 0),
  add column disbursement_limit bigint not null default 100000000
    constraint merchants_disbursement_limit_check check (disbursement_limit > 0),
  add column daily_disbursement_limit bigint not null default 500000000
    constraint merchants_daily_disbursement_limit_check check (daily_disbursement_limit > 0),
  -- Disbursements above this amount wait for an operator (IN_REVIEW); null: never.
  add column review_threshold bigint
    constraint merchants_review_threshold_check check (review_threshold > 0);

create table ledger_accounts (
  id bigint generated always as identity primary key,
  merchant_id uuid not null references merchants (id),
  kind text not null
    constraint ledger_accounts_kind_check check (kind in
      ('WALLET', 'SETTLEMENT_ACCRUAL', 'DISBURSEMENTS_IN_FLIGHT', 'VENDOR_CLEARING', 'FEE_REVENUE', 'ADJUSTMENTS')),
  balance bigint not null default 0,
  -- Number of postings applied: the audit checks it, and it orders a wallet's movements.
  version bigint not null default 0,
  allow_negative boolean not null,
  created_at timestamptz not null default now(),
  constraint ledger_accounts_merchant_kind_key unique (merchant_id, kind),
  constraint ledger_accounts_balance_check check (allow_negative or balance >= 0)
);

create table ledger_transfers (
  id uuid primary key default gen_random_uuid(),
  merchant_id uuid not null references merchants (id),
  kind text not null
    constraint ledger_transfers_kind_check check (kind in
      ('ORDER_PAYMENT', 'DISBURSEMENT', 'DISBURSEMENT_COMPLETED', 'DISBURSEMENT_REVERSAL', 'ADJUSTMENT',
       'REFUND', 'REFUND_REVERSAL', 'SETTLEMENT_PAYOUT', 'SETTLEMENT_REVERSAL')),
  reference_type text not null
    constraint ledger_transfers_reference_type_check check (reference_type in
      ('ORDER', 'DISBURSEMENT', 'ADJUSTMENT', 'REFUND', 'SETTLEMENT')),
  reference_id uuid not null,
  ref_code text,
  description text,
  created_at timestamptz not null default now(),
  -- One transfer of a kind per reference: a retried or duplicated caller posts nothing twice.
  constraint ledger_transfers_kind_reference_key unique (kind, reference_id)
);
create index ledger_transfers_reference_idx on ledger_transfers (reference_id);

create table ledger_postings (
  id uuid primary key default gen_random_uuid(),
  seq bigint generated always as identity,
  transfer_id uuid not null references ledger_transfers (id),
  account_id bigint not null references ledger_accounts (id),
  amount bigint not null constraint ledger_postings_amount_check check (amount <> 0),
  balance_before bigint not null,
  balance_after bigint not null,
  created_at timestamptz not null default now(),
  constraint ledger_postings_arithmetic check (balance_after = balance_before + amount),
  constraint ledger_postings_seq_key unique (seq)
);
create index ledger_postings_account_idx on ledger_postings (account_id, seq desc);
create index ledger_postings_transfer_idx on ledger_postings (transfer_id);

-- Postings and transfers are history: corrections are new (reversal) transfers, never edits.
create function ledger_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'ledger history is append-only (% on %)', tg_op, tg_table_name;
end $$;
create trigger ledger_postings_append_only before update or delete on ledger_postings
  for each row execute function ledger_append_only();
create trigger ledger_transfers_append_only before update or delete on ledger_transfers
  for each row execute function ledger_append_only();

-- Orders paid before the ledger existed are posted now, exactly as db/ledger.ts posts a payment:
-- the vendor holds the amount, the merchant is owed amount − MDR (wallet or settlement
-- accrual), the platform earned the MDR (70 bps rounded half up unless set otherwise).
insert into ledger_accounts (merchant_id, kind, allow_negative)
select m.id, k.kind, k.kind in ('VENDOR_CLEARING', 'ADJUSTMENTS')
from merchants m
cross join unnest(array['WALLET', 'SETTLEMENT_ACCRUAL', 'DISBURSEMENTS_IN_FLIGHT', 'VENDOR_CLEARING', 'FEE_REVENUE', 'ADJUSTMENTS'])
  with ordinality as k(kind, rank)
where exists (select 1 from orders o where o.merchant_id = m.id and o.status in ('PAID', 'REFUNDED'))
order by m.id, k.rank;

create temporary table paid_backfill on commit drop as
select gen_random_uuid() as transfer_id, o.id as order_id, o.merchant_id, o.ref_code, o.amount,
       (o.amount * m.mdr_bps + 5000) / 10000 as mdr,
       case m.settlement_type when 'WALLET' then 'WALLET' else 'SETTLEMENT_ACCRUAL' end as credit_kind,
       coalesce(o.paid_at, o.updated_at) as at
from orders o join merchants m on m.id = o.merchant_id
where o.status in ('PAID', 'REFUNDED');

insert into ledger_transfers (id, merchant_id, kind, reference_type, reference_id, ref_code, description, created_at)
select transfer_id, merchant_id, 'ORDER_PAYMENT', 'ORDER', order_id, ref_code, 'QRIS payment (posted when the ledger was introduced)', at
from paid_backfill;

with legs as (
  select b.transfer_id, b.merchant_id, b.at, b.order_id, 'VENDOR_CLEARING' as kind, -b.amount as amount from paid_backfill b
  union all
  select b.transfer_id, b.merchant_id, b.at, b.order_id, b.credit_kind, b.amount - b.mdr from paid_backfill b where b.amount - b.mdr <> 0
  union all
  select b.transfer_id, b.merchant_id, b.at, b.order_id, 'FEE_REVENUE', b.mdr from paid_backfill b where b.mdr <> 0
), running as (
  select l.transfer_id, a.id as account_id, l.amount, l.at,
         coalesce(sum(l.amount) over (partition by a.id order by l.at, l.order_id
                                      rows between unbounded preceding and 1 preceding), 0) as before
  from legs l join ledger_accounts a on a.merchant_id = l.merchant_id and a.kind = l.kind
)
insert into ledger_postings (transfer_id, account_id, amount, balance_before, balance_after, created_at)
select transfer_id, account_id, amount, before, before + amount, at
from running
order by at, account_id;

update ledger_accounts a
set balance = s.balance, version = s.n
from (select account_id, sum(amount)::bigint as balance, count(*) as n from ledger_postings group by account_id) s
where a.id = s.account_id;
