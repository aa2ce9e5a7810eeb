-- order_counts (060) kept by one trigger call per inserted row: a statement inserting many
-- orders (a CSV-made batch, an operator's backfill, the bench and test loaders) updated the same
-- counter rows once per row, each update a new version of the row in one transaction, so the
-- statement slowed with the square of its size (50,000 orders: 5.9 s against 0.7 s without).
-- Inserts and deletes now add their rows' counts once per statement, grouped, from the
-- statement's transition table; a single-row insert (the API's) costs about the same either way.
-- Status changes stay per row: an update statement changes one order, and a statement-level
-- trigger would build transition tables for every update of orders, status changed or not.
drop trigger orders_count_insert on orders;

create function order_counts_add() returns trigger language plpgsql as $$
begin
  insert into order_counts (merchant_id, status, stripe, n)
  select merchant_id, status, order_counts_stripe(id), count(*)
  from changed
  where status not in ('CREATING', 'FAILED')
  group by 1, 2, 3
  on conflict (merchant_id, status, stripe) do update set n = order_counts.n + excluded.n;
  return null;
end $$;

create function order_counts_remove() returns trigger language plpgsql as $$
begin
  update order_counts c set n = c.n - d.n
  from (select merchant_id, status, order_counts_stripe(id) as stripe, count(*) as n
        from changed
        where status not in ('CREATING', 'FAILED')
        group by 1, 2, 3) d
  where c.merchant_id = d.merchant_id and c.status = d.status and c.stripe = d.stripe;
  return null;
end $$;

create trigger orders_count_insert after insert on orders
  referencing new table as changed for each statement execute function order_counts_add();
create trigger orders_count_delete after delete on orders
  referencing old table as changed for each statement execute function order_counts_remove();
