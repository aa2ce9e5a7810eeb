-- Orders at a year of data: an index of unsettled orders that holds only the orders a
-- settlement will take, and room on each page for an updated row version.
--
-- Only MANUAL merchants' orders are settled (db/settlements.sql.ts); a WALLET merchant's paid
-- orders sat in orders_unsettled_idx forever. A partial index cannot look at merchants, so the
-- order carries its merchant's settlement type, copied when it is created (it never changes
-- for a merchant).
alter table orders add column manual_settlement boolean not null default false;
update orders o set manual_settlement = true
from merchants m where m.id = o.merchant_id and m.settlement_type = 'MANUAL';

drop index orders_unsettled_idx;
create index orders_unsettled_idx on orders (merchant_id, paid_at)
  where manual_settlement and status in ('PAID', 'REFUNDED') and not is_settled;

-- An update can be HOT (no index entries written) only if its new row version fits on the
-- same page. Order updates change status, which partial indexes read, and updated_at, which
-- orders_creating_idx holds, so today they are never HOT (docs/deploy.md, Storage); the free
-- tenth of each page still keeps an order's versions together for the updates that could be.
alter table orders set (fillfactor = 90);
