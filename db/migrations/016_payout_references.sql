-- Every reference Kasir has sent to a vendor for a payout, and which payout it is: recorded when
-- the payout is claimed for a vendor (workers/payout-execute.ts), so a vendor callback finds its
-- payout by this recorded kind, never by the shape of the reference (db/payouts.ts).
create table payout_references (
  reference text primary key,
  kind text not null constraint payout_references_kind_check check (kind in ('DISBURSEMENT', 'SETTLEMENT')),
  payout_id uuid not null,
  created_at timestamptz not null default now()
);

-- Payouts already handed to a vendor before this migration.
insert into payout_references (reference, kind, payout_id)
select ref_code, 'DISBURSEMENT', id from disbursements where vendor_code is not null
on conflict do nothing;

insert into payout_references (reference, kind, payout_id)
select case when payout_attempt = 1 then ref_code else ref_code || '-' || payout_attempt end, 'SETTLEMENT', id
from settlements where vendor_code is not null
on conflict do nothing;
