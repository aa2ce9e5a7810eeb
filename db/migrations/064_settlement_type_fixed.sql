-- A merchant's settlement type is fixed for its life, and the database says so. Each order
-- carries it (orders.manual_settlement, migration 037, copied when the order is created) so the
-- unsettled-orders index holds only what a settlement will take; and the ledger credited each
-- paid order to the WALLET or to SETTLEMENT_ACCRUAL by it. A change would leave paid orders
-- credited one way and settled (or not) the other: a WALLET order settled again would pay the
-- merchant twice, a MANUAL one never settled would leave its accrual stranded. Nothing in Kasir
-- changes it; this refuses a hand-written UPDATE too. A merchant that must change how it is
-- paid gets a new merchant account (docs/decisions.md, Settlements).
create function merchants_settlement_type_fixed() returns trigger language plpgsql as $$
begin
  raise exception 'a merchant''s settlement_type is fixed (% stays %): open a new merchant account to change it',
    old.id, old.settlement_type using errcode = 'check_violation';
end $$;

create trigger merchants_settlement_type_fixed before update of settlement_type on merchants
  for each row when (old.settlement_type is distinct from new.settlement_type)
  execute function merchants_settlement_type_fixed();
