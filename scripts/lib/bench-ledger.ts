// Ledger rows the benches write in bulk, set-based, where the API would post them one by one:
// a merchant's accounts, and the profits report's day totals (profit_daily_totals, migration
// 063) for payments posted in bulk, which the ledger module would have added as it posted them.
import type pg from 'pg';

/** The merchant's ledger accounts, as merchant creation opens them. */
export async function openLedgerAccounts(client: pg.Client, merchantId: string): Promise<void> {
  await client.query(
    `insert into ledger_accounts (merchant_id, kind, allow_negative)
     select $1, k, k in ('VENDOR_CLEARING', 'ADJUSTMENTS')
     from unnest(array['WALLET', 'SETTLEMENT_ACCRUAL', 'DISBURSEMENTS_IN_FLIGHT', 'VENDOR_CLEARING', 'FEE_REVENUE',
                       'ADJUSTMENTS', 'REFUNDS_IN_FLIGHT', 'SETTLEMENTS_IN_FLIGHT']) k
     on conflict do nothing`,
    [merchantId],
  );
}

/**
 * The payments' share of the day totals, counted from the orders and their ORDER_PAYMENT
 * transfers as the report counts them (replacing what the order columns held). Refunds and
 * payouts inserted in their final state were added by their tables' triggers as they went in.
 */
export async function backfillPaymentTotals(client: pg.Client): Promise<void> {
  await client.query(
    `insert into profit_daily_totals as p (merchant_id, wib_date, stripe, order_count, gross_amount, mdr_total)
     select o.merchant_id, (o.paid_at at time zone 'Asia/Jakarta')::date, order_counts_stripe(o.id),
            count(*), sum(o.amount), coalesce(sum(fee.amount), 0)
     from orders o
     join ledger_transfers t on t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id
     left join ledger_accounts a on a.merchant_id = o.merchant_id and a.kind = 'FEE_REVENUE'
     left join ledger_postings fee on fee.transfer_id = t.id and fee.account_id = a.id
     where o.status in ('PAID', 'REFUNDED') and o.paid_at is not null
     group by 1, 2, 3
     on conflict (merchant_id, wib_date, stripe) do update set
       order_count = excluded.order_count, gross_amount = excluded.gross_amount, mdr_total = excluded.mdr_total`,
  );
}
