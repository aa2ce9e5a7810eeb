// Ledger rows the benches write in bulk, set-based, where the API would post them one by one:
// a merchant's accounts, and the profits report's day totals (profit_daily_totals, migration
// 063), which the ledger module would have kept as it posted each payment. A posting's
// transfer_kind and the history's counts (ledger_posting_counts) need nothing here: the
// history loader writes the kind, an insert trigger fills it where a loader leaves it out
// (migration 100), and a statement trigger keeps the counts (migration 102).
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
 * The day totals rebuilt from the records (the migration's own definition,
 * profit_totals_from_records): the payments posted here in bulk have no share in them yet, and
 * the refunds and payouts inserted in their final state were added by their tables' triggers.
 */
export async function backfillPaymentTotals(client: pg.Client): Promise<void> {
  await client.query('delete from profit_daily_totals');
  await client.query('insert into profit_daily_totals select * from profit_totals_from_records(null)');
}
