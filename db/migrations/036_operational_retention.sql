-- What is only operational is retired on a schedule (db/retention.ts, docs/deploy.md
-- "Retention"): webhook attempts by dropping a month's partition, ended webhook deliveries
-- (their signed bodies are most of their size) and vendor callback payloads in short batches.
-- Financial records (orders, the ledger, disbursements, refunds, settlements) are never touched.

-- Webhook attempts: an append-only log, one row per POST, partitioned by the month it was made
-- in, so retiring a month is dropping its table: no row-by-row DELETE, no dead tuples, no WAL
-- per row. The primary key includes the partition key, as Postgres requires of a partitioned
-- table. No foreign key to webhook_deliveries: a delivery and its attempts are retired by
-- different means (a batch DELETE and a partition drop), in whichever order they come due, and
-- nothing reads an attempt except through its delivery.
alter table webhook_attempts rename to webhook_attempts_unpartitioned;
alter index webhook_attempts_delivery_idx rename to webhook_attempts_unpartitioned_delivery_idx;
alter table webhook_attempts_unpartitioned rename constraint webhook_attempts_pkey to webhook_attempts_unpartitioned_pkey;

create table webhook_attempts (
  id bigint generated always as identity,
  delivery_id uuid not null,
  attempt integer not null,
  status_code integer,
  latency_ms integer not null,
  error text,
  created_at timestamptz not null default now(),
  constraint webhook_attempts_pkey primary key (id, created_at)
) partition by range (created_at);
create index webhook_attempts_delivery_idx on webhook_attempts (delivery_id, attempt);
-- Rows of a month whose partition does not exist yet land here rather than fail; the retention
-- pass moves them into their month's partition when it creates it (webhook_attempts_month).
create table webhook_attempts_default partition of webhook_attempts default;

-- Creates the partition of the month holding `day` if it is missing (moving any of its rows out
-- of the default partition first, as ATTACH requires); returns its name. Partitions are named
-- webhook_attempts_yYYYYmMM, which the retention pass reads back to find a month's bounds.
create function webhook_attempts_month(day timestamptz) returns text language plpgsql as $$
declare
  lo timestamptz := date_trunc('month', day at time zone 'UTC') at time zone 'UTC';
  hi timestamptz := (date_trunc('month', day at time zone 'UTC') + interval '1 month') at time zone 'UTC';
  part text := 'webhook_attempts_' || to_char(day at time zone 'UTC', '"y"YYYY"m"MM');
begin
  if to_regclass(part) is not null then
    return part;
  end if;
  execute format('create table %I (like webhook_attempts including defaults including constraints)', part);
  execute format('with moved as (delete from webhook_attempts_default where created_at >= %L and created_at < %L returning *)
                  insert into %I select * from moved', lo, hi, part);
  execute format('alter table webhook_attempts attach partition %I for values from (%L) to (%L)', part, lo, hi);
  return part;
end $$;

-- The months already holding attempts, and the next three, get their partitions now.
select webhook_attempts_month(m)
from generate_series(
  date_trunc('month', coalesce((select min(created_at) from webhook_attempts_unpartitioned), now()) at time zone 'UTC') at time zone 'UTC',
  now() + interval '3 months', interval '1 month') as m;

insert into webhook_attempts (id, delivery_id, attempt, status_code, latency_ms, error, created_at)
overriding system value
select id, delivery_id, attempt, status_code, latency_ms, error, created_at from webhook_attempts_unpartitioned;
select setval(pg_get_serial_sequence('webhook_attempts', 'id'), coalesce((select max(id) from webhook_attempts_unpartitioned), 0) + 1, false);
drop table webhook_attempts_unpartitioned;

-- Ended deliveries are found by age: deliveries are written in time order, so a BRIN index
-- on created_at costs a few pages and narrows the retention pass to the months it retires.
create index webhook_deliveries_created_brin on webhook_deliveries using brin (created_at);

-- A vendor callback's payload is kept for inspection for a while; its key (vendor_code,
-- event_id) much longer, since it is what recognises a repeated callback.
alter table vendor_callbacks alter column payload drop not null;
create index vendor_callbacks_received_brin on vendor_callbacks using brin (received_at);
