-- A cancelled settlement lets go of its orders and refunds (releaseSettlement, db/settlements.sql.ts)
-- by the settlement's id, and nothing indexed that id: each cancel read every order and every
-- refund of every merchant, inside the cancel's transaction, at a year of data millions of rows
-- for the few thousand of one merchant's day. These indexes hold only rows a settlement has taken,
-- so an order pays an entry once, when it is settled (that update already writes every index
-- whose predicate a settled order meets). On a large table, create them beforehand without
-- blocking writes, under the same names, and this migration does nothing:
--   create index concurrently orders_settlement_idx on orders (settlement_id) where settlement_id is not null;
--   create index concurrently refunds_settlement_idx on refunds (settlement_id) where settlement_id is not null;
--   create index concurrently refunds_reversal_settlement_idx on refunds (reversal_settlement_id) where reversal_settlement_id is not null;
create index if not exists orders_settlement_idx on orders (settlement_id) where settlement_id is not null;
create index if not exists refunds_settlement_idx on refunds (settlement_id) where settlement_id is not null;
create index if not exists refunds_reversal_settlement_idx on refunds (reversal_settlement_id) where reversal_settlement_id is not null;
