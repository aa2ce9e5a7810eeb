// The merchant's financial summary (GET /v1/reports/profits), summed from the totals kept per
// merchant and WIB day (profit_daily_totals), and counted again from the records (the check).
//
// What each total counts (docs/decisions.md, Reports and exports):
// - order_count, gross_amount: orders PAID (or since REFUNDED) whose paid_at falls in the days,
//   V1 and legacy alike, and whose payment the ledger posted (ORDER_PAYMENT transfer).
// - mdr_total: the FEE_REVENUE legs of those orders' ORDER_PAYMENT transfers: the MDR as it was
//   charged, whatever mdr_bps says today.
// - refund_total: refunds SUCCEEDED (money back with the payer) whose completed_at falls in the
//   days; each equals its REFUND_COMPLETED transfer.
// - disbursement_*: disbursements SUCCESS whose completed_at falls in the days: request amounts
//   (what payees received) and fees, as their DISBURSEMENT_COMPLETED transfers booked them.
// - net_amount = gross_amount − mdr_total − refund_total.
import { z } from 'zod';
import { sql, type Db } from './pool.ts';

export const profitTotals = z.object({
  order_count: z.number(),
  gross_amount: z.number(),
  mdr_total: z.number(),
  refund_total: z.number(),
  net_amount: z.number(),
  disbursement_count: z.number(),
  disbursement_total: z.number(),
  disbursement_fee_total: z.number(),
});
export type ProfitTotals = z.infer<typeof profitTotals>;

/**
 * Totals over the WIB calendar days dateFrom..dateTo (inclusive, YYYY-MM-DD), from the totals
 * kept per merchant and day (profit_daily_totals, migration 063): at most 366 × 16 rows for a
 * year, whatever the merchant's volume.
 */
export function sumProfits(db: Db, merchantId: string, dateFrom: string, dateTo: string) {
  return db.one(sql.type(profitTotals)`
    select coalesce(sum(order_count), 0)::int as order_count, coalesce(sum(gross_amount), 0)::bigint as gross_amount,
           coalesce(sum(mdr_total), 0)::bigint as mdr_total, coalesce(sum(refund_total), 0)::bigint as refund_total,
           coalesce(sum(gross_amount - mdr_total - refund_total), 0)::bigint as net_amount,
           coalesce(sum(disbursement_count), 0)::int as disbursement_count,
           coalesce(sum(disbursement_total), 0)::bigint as disbursement_total,
           coalesce(sum(disbursement_fee_total), 0)::bigint as disbursement_fee_total
    from profit_daily_totals
    where merchant_id = ${merchantId} and wib_date between ${dateFrom}::date and ${dateTo}::date`);
}

/**
 * The same totals counted from the records themselves: what the kept totals must equal (the
 * ledger audit's check of them, and the tests). Reads every record of the period.
 */
export function recountProfits(db: Db, merchantId: string, dateFrom: string, dateTo: string) {
  return db.one(sql.type(profitTotals)`
    with bounds as (
      select (${dateFrom}::date)::timestamp at time zone 'Asia/Jakarta' as since,
             (${dateTo}::date + 1)::timestamp at time zone 'Asia/Jakarta' as until
    ), paid as (
      select count(*)::int as order_count, coalesce(sum(o.amount), 0)::bigint as gross_amount,
             coalesce(sum(fee.amount), 0)::bigint as mdr_total
      from bounds, orders o
      join ledger_transfers t on t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id
      left join ledger_postings fee on fee.transfer_id = t.id
        and fee.account_id = (select a.id from ledger_accounts a where a.merchant_id = ${merchantId} and a.kind = 'FEE_REVENUE')
      where o.merchant_id = ${merchantId} and o.status in ('PAID', 'REFUNDED')
        and o.paid_at >= bounds.since and o.paid_at < bounds.until
    ), refunded as (
      select coalesce(sum(r.amount), 0)::bigint as refund_total
      from bounds, refunds r
      where r.merchant_id = ${merchantId} and r.status = 'SUCCEEDED'
        and r.completed_at >= bounds.since and r.completed_at < bounds.until
    ), disbursed as (
      select count(*)::int as disbursement_count, coalesce(sum(d.request_amount), 0)::bigint as disbursement_total,
             coalesce(sum(d.fee), 0)::bigint as disbursement_fee_total
      from bounds, disbursements d
      where d.merchant_id = ${merchantId} and d.status = 'SUCCESS'
        and d.completed_at >= bounds.since and d.completed_at < bounds.until
    )
    select paid.order_count, paid.gross_amount, paid.mdr_total, refunded.refund_total,
           (paid.gross_amount - paid.mdr_total - refunded.refund_total)::bigint as net_amount,
           disbursed.disbursement_count, disbursed.disbursement_total, disbursed.disbursement_fee_total
    from paid, refunded, disbursed`);
}
