-- GET /v1/balance-history?type= (issue 35): the movement's type is its transfer's kind, which was
-- only on ledger_transfers, so a filtered page and its total joined every posting of the wallet
-- to its transfer (1.9 s at 830,000 postings). The kind is now on each posting too, where an
-- index on (account_id, transfer_kind, seq desc) reaches it (migration 102).
--
-- Expand in four migrations, each its own transaction, so that no step holds a lock the serving
-- code waits on for longer than an index build (docs/deploy.md, "Migrations on a running fleet"):
--   100 (this one) adds the column, nullable, which is instant, and fills it on every insert;
--   101 fills the postings already there, under row locks only (nobody else updates a posting),
--       then requires the kind of every new posting (a NOT VALID check: no scan);
--   102 builds the index and the per-day counts behind meta.total (writes wait for the build);
--   103 validates the check over the old postings without blocking reads or writes.
-- Measured at 1,000,000 postings in docs/performance.md ("Balance history by type").
alter table ledger_postings add column transfer_kind text;

-- The ledger module (db/ledger.sql.ts insertTransfer) writes the kind itself. A writer that does
-- not (a process of the previous release during a rolling deploy, a bench's bulk load) gets it
-- from the transfer here, so no posting is ever left without it.
create function ledger_posting_transfer_kind() returns trigger language plpgsql as $$
begin
  if new.transfer_kind is null then
    select kind into new.transfer_kind from ledger_transfers where id = new.transfer_id;
  end if;
  return new;
end $$;
-- WHEN: the ledger module writes the kind itself, so its inserts never call the function.
create trigger ledger_postings_transfer_kind before insert on ledger_postings
  for each row when (new.transfer_kind is null) execute function ledger_posting_transfer_kind();

-- Postings stay history: the one edit allowed is filling a missing kind, nothing else changed
-- (migration 101's backfill). The audit proves every stored kind equals its transfer's.
create function ledger_postings_append_only() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and old.transfer_kind is null and new.transfer_kind is not null
     and to_jsonb(new) - 'transfer_kind' = to_jsonb(old) - 'transfer_kind' then
    return new;
  end if;
  raise exception 'ledger history is append-only (% on %)', tg_op, tg_table_name;
end $$;
drop trigger ledger_postings_append_only on ledger_postings;
create trigger ledger_postings_append_only before update or delete on ledger_postings
  for each row execute function ledger_postings_append_only();
