-- order_counts (060, 062) moved a status change's count by one trigger call per changed row. A
-- statement that changes many orders pays that call per row, each an update of a counter row
-- the same transaction has already updated: the expiry line's batch of 500 overdue orders took
-- 65-100 ms with the row trigger against 30-45 ms without it, and the line, not the webhook
-- worker, is what a flash sale's order.expired burst waits on (docs/performance.md, "The burst as
-- a flash sale makes it"). The batched confirmation of create attempts is such a statement too.
--
-- Status changes now move their counts once per statement, from its transition tables, netted
-- per counter and applied in key order, as webhook_delivery_counts (104) does. A trigger with
-- transition tables cannot name its columns, so it runs for every update of orders; on one that
-- changes no status the join finds no row and nothing is written (measured: no difference a
-- single-row update could show beside its own cost).
drop trigger orders_count_status on orders;

-- Its join of the transition tables is hashed whatever the calling transaction has turned off
-- (see 107: the webhook worker's transactions turn hash joins off).
create function order_counts_move() returns trigger language plpgsql set enable_hashjoin = on as $$
begin
  insert into order_counts as c (merchant_id, status, stripe, n)
  select merchant_id, status, stripe, sum(delta)
  from (
    select o.merchant_id, o.status, order_counts_stripe(o.id) as stripe, -1 as delta
    from old_rows o join new_rows n on n.id = o.id
    where n.status is distinct from o.status and o.status not in ('CREATING', 'FAILED')
    union all
    select n.merchant_id, n.status, order_counts_stripe(n.id), 1
    from old_rows o join new_rows n on n.id = o.id
    where n.status is distinct from o.status and n.status not in ('CREATING', 'FAILED')
  ) moved
  group by 1, 2, 3
  having sum(delta) <> 0
  order by 1, 2, 3
  on conflict (merchant_id, status, stripe) do update set n = c.n + excluded.n;
  return null;
end $$;

create trigger orders_count_status after update on orders
  referencing old table as old_rows new table as new_rows for each statement execute function order_counts_move();

-- Its last user was the row trigger above.
drop function order_counts_apply();
