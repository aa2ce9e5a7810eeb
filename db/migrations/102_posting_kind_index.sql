-- The history filter's index and totals (see migration 100). Every posting has its kind now
-- (101, and the insert trigger since 100). The index build, and the counts' trigger and backfill
-- after it, keep inserts into ledger_postings waiting until this migration commits; reads go on.

-- GET /v1/balance-history?type=: the page's postings, newest first, of one account and kind.
create index ledger_postings_account_kind_idx on ledger_postings (account_id, transfer_kind, seq desc);

-- meta.total of a filtered history without counting postings: per account, transfer kind and
-- WIB day (the days date_from and date_to name), so a type, a period or both sum a few rows (a
-- year: 365 per kind). Kept once per inserting statement from its transition table, as
-- order_counts is (migration 062); a posting is never updated or deleted. The rows of an account
-- change only in a transaction holding the account's lock (db/ledger.ts), so keeping them adds no
-- wait. The audit counts them against the postings.
create table ledger_posting_counts (
  account_id bigint not null references ledger_accounts (id),
  transfer_kind text not null,
  wib_date date not null,
  n bigint not null,
  primary key (account_id, transfer_kind, wib_date)
);

create function ledger_posting_counts_add() returns trigger language plpgsql as $$
begin
  insert into ledger_posting_counts (account_id, transfer_kind, wib_date, n)
  select account_id, transfer_kind, (created_at at time zone 'Asia/Jakarta')::date, count(*)
  from added
  group by 1, 2, 3
  on conflict (account_id, transfer_kind, wib_date) do update set n = ledger_posting_counts.n + excluded.n;
  return null;
end $$;
create trigger ledger_postings_count after insert on ledger_postings
  referencing new table as added for each statement execute function ledger_posting_counts_add();

insert into ledger_posting_counts (account_id, transfer_kind, wib_date, n)
select account_id, transfer_kind, (created_at at time zone 'Asia/Jakarta')::date, count(*)
from ledger_postings
group by 1, 2, 3;
