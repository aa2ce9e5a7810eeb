-- The day's disbursed total per merchant and WIB day, kept as the rows change, so a create
-- checks the daily limit by reading one row instead of summing every disbursement of the day
-- (which grew with the day: ~15/s after 100,000 disbursements). Raised in the create's (or the
-- import's) transaction, lowered once when a disbursement ends FAILED or REJECTED; the ledger
-- audit proves it equals the rows (check `daily_total`).
create table disbursement_daily_totals (
  merchant_id uuid not null references merchants (id),
  wib_date date not null,
  total bigint not null,
  constraint disbursement_daily_totals_pkey primary key (merchant_id, wib_date)
);

insert into disbursement_daily_totals (merchant_id, wib_date, total)
select merchant_id, wib_date, sum(request_amount)
from disbursements
where status not in ('FAILED', 'REJECTED')
group by merchant_id, wib_date;
