-- GET /v1/orders at any size (issue 35).
--
-- The list's page is chosen on a partial index holding only listed orders (not CREATING or
-- FAILED attempts) with their status included, so OFFSET walks index entries (no heap rows, no
-- per-row refunded_amount) and a status filter or a date range is answered from the index
-- alone; only the page's 20 rows are read from the table.
create index orders_merchant_listed_idx on orders (merchant_id, created_at desc, id desc) include (status)
  where status not in ('CREATING', 'FAILED');

-- meta.total stays exact without counting a million index entries on every page: listed orders
-- counted per merchant and status, kept by a trigger in the transaction that changes an order
-- (every writer alike: V1, legacy, workers, operator commands). A merchant's count is spread
-- over 16 stripes chosen by the order id, so concurrent payments of one merchant rarely wait
-- on the same counter row until their commit; a total sums at most 16 rows per status.
create table order_counts (
  merchant_id uuid not null references merchants (id),
  status text not null,
  stripe smallint not null,
  n bigint not null,
  constraint order_counts_pkey primary key (merchant_id, status, stripe)
);

create function order_counts_stripe(id uuid) returns smallint language sql immutable as
  $$ select (get_byte(uuid_send(id), 15) % 16)::smallint $$;

create function order_counts_apply() returns trigger language plpgsql as $$
begin
  if tg_op in ('UPDATE', 'DELETE') and old.status not in ('CREATING', 'FAILED') then
    update order_counts set n = n - 1
    where merchant_id = old.merchant_id and status = old.status and stripe = order_counts_stripe(old.id);
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.status not in ('CREATING', 'FAILED') then
    insert into order_counts (merchant_id, status, stripe, n)
    values (new.merchant_id, new.status, order_counts_stripe(new.id), 1)
    on conflict (merchant_id, status, stripe) do update set n = order_counts.n + 1;
  end if;
  return null;
end $$;

-- Only a status change (or a new or removed row) moves a count; other updates skip the trigger.
create trigger orders_count_insert after insert or delete on orders
  for each row execute function order_counts_apply();
create trigger orders_count_status after update of status on orders
  for each row when (old.status is distinct from new.status) execute function order_counts_apply();

insert into order_counts (merchant_id, status, stripe, n)
select merchant_id, status, order_counts_stripe(id), count(*)
from orders
where status not in ('CREATING', 'FAILED')
group by 1, 2, 3;
