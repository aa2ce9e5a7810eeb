-- Settlement payouts (db/settlements.ts).
--
-- ref_code is STL-<yyyymmdd>-<n>: n comes from one sequence, so two builds running at once
-- (several scheduler processes, an operator's rerun) never race for a number.
create sequence settlement_ref_seq;

-- The vendor reference of a payout is the ref_code, then <ref_code>-<attempt> for an
-- operator's retry after FAILED: a vendor that dedupes on the reference would otherwise answer
-- the retry with the failed transfer. Callbacks are matched on the current attempt only.
alter table settlements add column payout_attempt integer not null default 1
  constraint settlements_payout_attempt_check check (payout_attempt >= 1);

-- The build reads a merchant's refunds counted by an earlier settlement that failed since.
create index refunds_reversal_due_idx on refunds (merchant_id)
  where status = 'FAILED' and settlement_id is not null and reversal_settlement_id is null;
