-- GET /v1/webhook-deliveries counted the merchant's deliveries on every page for meta.total: at
-- a year of data, with the 90 days retention keeps (~250,000 deliveries for the history bench's
-- big merchant), 72-146 ms p95 for page 1 (docs/performance.md). The counts are kept here per
-- merchant, status, event and stripe (16, by delivery id, as order_counts does), in the
-- transaction that inserts, re-statuses or deletes a delivery, so the total stays exact and
-- costs a sum of at most a few hundred rows.
--
-- Statement-level triggers with transition tables: the webhook worker records a batch of
-- attempts in one update, the retention pass deletes in batches, the loaders insert many rows;
-- each statement adds its rows' counts once, grouped, applied in key order, so two batches lock
-- the counters they share in the same order and wait rather than deadlock.
create table webhook_delivery_counts (
  merchant_id uuid not null,
  status text not null,
  event text not null,
  stripe smallint not null,
  n bigint not null,
  constraint webhook_delivery_counts_pkey primary key (merchant_id, status, event, stripe)
);

-- An insert adds its rows' counts, a delete takes them away (one function for both).
create function webhook_delivery_counts_add() returns trigger language plpgsql as $$
begin
  insert into webhook_delivery_counts as c (merchant_id, status, event, stripe, n)
  select merchant_id, status, event, order_counts_stripe(id), case when tg_op = 'DELETE' then -count(*) else count(*) end
  from changed
  group by 1, 2, 3, 4
  order by 1, 2, 3, 4
  on conflict (merchant_id, status, event, stripe) do update set n = c.n + excluded.n;
  return null;
end $$;

-- An update moves a delivery's count when its status changed (sent, failed, reopened by a
-- resend): -1 under the old status, +1 under the new, netted per counter.
create function webhook_delivery_counts_move() returns trigger language plpgsql as $$
begin
  insert into webhook_delivery_counts as c (merchant_id, status, event, stripe, n)
  select merchant_id, status, event, stripe, sum(delta)
  from (
    select o.merchant_id, o.status, o.event, order_counts_stripe(o.id) as stripe, -1 as delta
    from old_rows o join new_rows n on n.id = o.id where n.status is distinct from o.status
    union all
    select n.merchant_id, n.status, n.event, order_counts_stripe(n.id), 1
    from old_rows o join new_rows n on n.id = o.id where n.status is distinct from o.status
  ) moved
  group by 1, 2, 3, 4
  having sum(delta) <> 0
  order by 1, 2, 3, 4
  on conflict (merchant_id, status, event, stripe) do update set n = c.n + excluded.n;
  return null;
end $$;

create trigger webhook_deliveries_count_insert after insert on webhook_deliveries
  referencing new table as changed for each statement execute function webhook_delivery_counts_add();
create trigger webhook_deliveries_count_delete after delete on webhook_deliveries
  referencing old table as changed for each statement execute function webhook_delivery_counts_add();
create trigger webhook_deliveries_count_update after update on webhook_deliveries
  referencing old table as old_rows new table as new_rows for each statement execute function webhook_delivery_counts_move();

insert into webhook_delivery_counts (merchant_id, status, event, stripe, n)
select merchant_id, status, event, order_counts_stripe(id), count(*)
from webhook_deliveries
group by 1, 2, 3, 4;
