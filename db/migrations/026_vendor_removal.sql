-- ops vendor:remove. A removed vendor's row stays, because the orders, payouts and refunds it
-- held keep naming it, but its credentials are erased and its routes deleted: nothing calls it
-- again and its callbacks are refused like those of a code that never existed. vendor:add with
-- the same code brings it back with new credentials.
alter table vendors add column removed_at timestamptz;
