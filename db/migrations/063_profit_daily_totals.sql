-- GET /v1/reports/profits at any size (issue 35): the report summed a merchant's paid orders,
-- their MDR postings, refunds and payouts over the period on every call (14 s for a month, a
-- timeout for a year, at a million orders). It now sums these totals, kept per merchant and WIB
-- day in the transaction that changes them, so a year is at most 366 × 16 rows.
--
-- What each column counts is what the report has always counted (db/reports.sql.ts):
-- - order_count, gross_amount, mdr_total: orders whose ORDER_PAYMENT the ledger posted, on the
--   WIB day of their paid_at, with the FEE_REVENUE leg of that transfer; added by the ledger
--   module when it posts the payment (db/ledger.ts, postOrderPayment), once per transfer.
-- - refund_total: refunds SUCCEEDED, on the WIB day of completed_at;
-- - disbursement_*: disbursements SUCCESS, on the WIB day of completed_at (a payout the vendor
--   reverses later leaves SUCCESS, and its day's totals with it).
-- Refunds and payouts are kept by row triggers on their status, so every writer (workers,
-- callbacks, reconciliation, operator commands) moves the totals alike; so is a paid order's
-- later change of paid_at.
--
-- A merchant's day is spread over 16 stripes by the record's id, as order_counts is, so
-- concurrent payments of one merchant rarely wait on one row until their commit.
create table profit_daily_totals (
  merchant_id uuid not null references merchants (id),
  wib_date date not null,
  stripe smallint not null,
  order_count integer not null default 0,
  gross_amount bigint not null default 0,
  mdr_total bigint not null default 0,
  refund_total bigint not null default 0,
  disbursement_count integer not null default 0,
  disbursement_total bigint not null default 0,
  disbursement_fee_total bigint not null default 0,
  constraint profit_daily_totals_pkey primary key (merchant_id, wib_date, stripe)
);

create function profit_totals_add(
  merchant uuid, at timestamptz, record uuid,
  orders integer, gross bigint, mdr bigint, refunded bigint, payouts integer, paid_out bigint, fees bigint
) returns void language sql as $$
  insert into profit_daily_totals as t (merchant_id, wib_date, stripe, order_count, gross_amount, mdr_total,
                                        refund_total, disbursement_count, disbursement_total, disbursement_fee_total)
  values (merchant, (at at time zone 'Asia/Jakarta')::date, order_counts_stripe(record), orders, gross, mdr,
          refunded, payouts, paid_out, fees)
  on conflict (merchant_id, wib_date, stripe) do update set
    order_count = t.order_count + excluded.order_count,
    gross_amount = t.gross_amount + excluded.gross_amount,
    mdr_total = t.mdr_total + excluded.mdr_total,
    refund_total = t.refund_total + excluded.refund_total,
    disbursement_count = t.disbursement_count + excluded.disbursement_count,
    disbursement_total = t.disbursement_total + excluded.disbursement_total,
    disbursement_fee_total = t.disbursement_fee_total + excluded.disbursement_fee_total
$$;

create function profit_totals_refund() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and old.status = 'SUCCEEDED' and old.completed_at is not null then
    perform profit_totals_add(old.merchant_id, old.completed_at, old.id, 0, 0, 0, -old.amount, 0, 0, 0);
  end if;
  if new.status = 'SUCCEEDED' and new.completed_at is not null then
    perform profit_totals_add(new.merchant_id, new.completed_at, new.id, 0, 0, 0, new.amount, 0, 0, 0);
  end if;
  return null;
end $$;

create function profit_totals_disbursement() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and old.status = 'SUCCESS' and old.completed_at is not null then
    perform profit_totals_add(old.merchant_id, old.completed_at, old.id, 0, 0, 0, 0, -1, -old.request_amount, -old.fee);
  end if;
  if new.status = 'SUCCESS' and new.completed_at is not null then
    perform profit_totals_add(new.merchant_id, new.completed_at, new.id, 0, 0, 0, 0, 1, new.request_amount, new.fee);
  end if;
  return null;
end $$;

create trigger refunds_profit_insert after insert on refunds
  for each row when (new.status = 'SUCCEEDED') execute function profit_totals_refund();
create trigger refunds_profit_update after update on refunds
  for each row when (old.status is distinct from new.status or old.completed_at is distinct from new.completed_at or old.amount is distinct from new.amount)
  execute function profit_totals_refund();
create trigger disbursements_profit_insert after insert on disbursements
  for each row when (new.status = 'SUCCESS') execute function profit_totals_disbursement();
create trigger disbursements_profit_update after update on disbursements
  for each row when (old.status is distinct from new.status or old.completed_at is distinct from new.completed_at
                     or old.request_amount is distinct from new.request_amount or old.fee is distinct from new.fee)
  execute function profit_totals_disbursement();

-- A paid order whose paid_at is corrected later (an operator's fix, a vendor's late word on
-- the time) moves to its new day, with the MDR its payment posted.
create function profit_totals_order_moved() returns trigger language plpgsql as $$
declare
  fee bigint;
begin
  select coalesce(p.amount, 0) into fee
  from ledger_transfers t
  left join ledger_accounts a on a.merchant_id = new.merchant_id and a.kind = 'FEE_REVENUE'
  left join ledger_postings p on p.transfer_id = t.id and p.account_id = a.id
  where t.kind = 'ORDER_PAYMENT' and t.reference_id = new.id;
  if found then
    perform profit_totals_add(old.merchant_id, old.paid_at, old.id, -1, -old.amount, -fee, 0, 0, 0, 0);
    perform profit_totals_add(new.merchant_id, new.paid_at, new.id, 1, new.amount, fee, 0, 0, 0, 0);
  end if;
  return null;
end $$;

create trigger orders_profit_paid_at after update of paid_at on orders
  for each row when (old.paid_at is distinct from new.paid_at and old.paid_at is not null and new.paid_at is not null
                     and old.status in ('PAID', 'REFUNDED') and new.status in ('PAID', 'REFUNDED'))
  execute function profit_totals_order_moved();

-- What is already there, counted as the report counted it.
insert into profit_daily_totals (merchant_id, wib_date, stripe, order_count, gross_amount, mdr_total)
select o.merchant_id, (o.paid_at at time zone 'Asia/Jakarta')::date, order_counts_stripe(o.id),
       count(*), sum(o.amount), coalesce(sum(fee.amount), 0)
from orders o
join ledger_transfers t on t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id
left join ledger_accounts a on a.merchant_id = o.merchant_id and a.kind = 'FEE_REVENUE'
left join ledger_postings fee on fee.transfer_id = t.id and fee.account_id = a.id
where o.status in ('PAID', 'REFUNDED') and o.paid_at is not null
group by 1, 2, 3;

insert into profit_daily_totals as p (merchant_id, wib_date, stripe, refund_total)
select r.merchant_id, (r.completed_at at time zone 'Asia/Jakarta')::date, order_counts_stripe(r.id), sum(r.amount)
from refunds r
where r.status = 'SUCCEEDED' and r.completed_at is not null
group by 1, 2, 3
on conflict (merchant_id, wib_date, stripe) do update set refund_total = p.refund_total + excluded.refund_total;

insert into profit_daily_totals as p (merchant_id, wib_date, stripe, disbursement_count, disbursement_total, disbursement_fee_total)
select d.merchant_id, (d.completed_at at time zone 'Asia/Jakarta')::date, order_counts_stripe(d.id), count(*), sum(d.request_amount), sum(d.fee)
from disbursements d
where d.status = 'SUCCESS' and d.completed_at is not null
group by 1, 2, 3
on conflict (merchant_id, wib_date, stripe) do update set
  disbursement_count = p.disbursement_count + excluded.disbursement_count,
  disbursement_total = p.disbursement_total + excluded.disbursement_total,
  disbursement_fee_total = p.disbursement_fee_total + excluded.disbursement_fee_total;
