// One function per statement on the settlement aggregate: settlements, and the settlement
// bookkeeping columns it owns on other tables (orders.is_settled / settlement_id, refunds.
// settlement_id / reversal_settlement_id). Only db/settlements.ts calls the writers.
import type { FragmentSqlToken } from 'slonik';
import { z } from 'zod';
import { sql, type Db } from './pool.ts';
import { countRow, idRow } from './row-shapes.ts';

export const settlementStatus = z.enum(['PENDING', 'PROCESSING', 'PAID', 'FAILED', 'CANCELLED']);
export type SettlementStatus = z.infer<typeof settlementStatus>;

export const settlementRow = z.object({
  id: z.string(),
  merchant_id: z.string(),
  ref_code: z.string(),
  settlement_date: z.string(),
  period_start: z.date(),
  period_end: z.date(),
  gross_amount: z.number(),
  mdr_total: z.number(),
  refund_total: z.number(),
  disbursement_fee: z.number(),
  platform_fee: z.number(),
  aggregator_fee: z.number(),
  net_payout: z.number(),
  order_count: z.number(),
  bank_id: z.string(),
  bank_short_code: z.string(),
  account_number: z.string(),
  account_name: z.string(),
  status: settlementStatus,
  vendor_code: z.string().nullable(),
  vendor_disbursement_id: z.string().nullable(),
  vendor_call_pending: z.boolean(),
  vendors_tried: z.array(z.string()),
  payout_attempt: z.number(),
  failure_reason: z.string().nullable(),
  /** Set when no read at the vendor can settle the payout: an operator must (gateways/gateway.ts, the rule). */
  unresolved_at: z.date().nullable(),
  completed_at: z.date().nullable(),
  created_at: z.date(),
  updated_at: z.date(),
});
export type SettlementRow = z.infer<typeof settlementRow>;

const columns = sql.fragment`
  s.id, s.merchant_id, s.ref_code, s.settlement_date, s.period_start, s.period_end, s.gross_amount, s.mdr_total,
  s.refund_total, s.disbursement_fee, s.platform_fee, s.aggregator_fee, s.net_payout, s.order_count, s.bank_id,
  (select b.short_code from banks b where b.id = s.bank_id) as bank_short_code, s.account_number, s.account_name,
  s.status, s.vendor_code, s.vendor_disbursement_id, s.vendor_call_pending, s.vendors_tried, s.payout_attempt,
  s.failure_reason, s.unresolved_at, s.completed_at, s.created_at, s.updated_at`;

/**
 * A build or cancel writes one row per order of the merchant's day (~25-40 µs each, measured in
 * docs/performance.md): a merchant with a million orders a day would pass the pool's 30 s
 * statement timeout, which guards request paths, not this batch work.
 */
export function allowLongStatements(tx: Db) {
  return tx.query(sql.unsafe`set local statement_timeout = '15min'`);
}

/** The merchant's settlement of a day that is not CANCELLED (at most one: a partial unique index). */
export function findLiveSettlement(db: Db, merchantId: string, settlementDate: string) {
  return db.maybeOne(sql.type(settlementRow)`
    select ${columns} from settlements s
    where s.merchant_id = ${merchantId} and s.settlement_date = ${settlementDate} and s.status <> 'CANCELLED'`);
}

const orderTotals = z.object({ order_count: z.number(), gross_amount: z.number(), mdr_total: z.number() });

// The orders a build settles: the merchant's paid (or refunded) unsettled orders paid before the
// period's end whose payment the ledger credited to SETTLEMENT_ACCRUAL. Joining the posting makes
// the MDR exactly what was posted (amount − the accrual credit), whatever mdr_bps is now, and
// leaves out an order the ledger never credited to the accrual (the audit reports those).
const settleableOrders = (m: { merchantId: string; periodEnd: Date; accrualAccountId: number }) => sql.fragment`
  from orders o
  join ledger_transfers t on t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id
  join ledger_postings p on p.transfer_id = t.id and p.account_id = ${m.accrualAccountId}
  where o.merchant_id = ${m.merchantId} and o.manual_settlement and o.status in ('PAID', 'REFUNDED') and not o.is_settled
    and o.paid_at < ${sql.timestamp(m.periodEnd)}`;

/** Locks the orders a build would settle and sums them. */
export function lockSettleableOrders(db: Db, m: { merchantId: string; periodEnd: Date; accrualAccountId: number }) {
  return db.one(sql.type(orderTotals)`
    with c as (
      select o.amount, p.amount as owed ${settleableOrders(m)}
      for update of o
    )
    select count(*)::int as order_count, coalesce(sum(amount), 0)::bigint as gross_amount,
           coalesce(sum(amount - owed), 0)::bigint as mdr_total
    from c`);
}

const markOrdersSettledRow = z.object({ order_count: z.number(), gross_amount: z.number() });

/** Marks the same orders settled by the settlement; returns how many (and their gross, to cross-check). */
export function markOrdersSettled(db: Db, m: { merchantId: string; periodEnd: Date; accrualAccountId: number; settlementId: string }) {
  return db.one(sql.type(markOrdersSettledRow)`
    with marked as (
      update orders o set is_settled = true, settlement_id = ${m.settlementId}, updated_at = now()
      from ledger_transfers t, ledger_postings p
      where t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id and p.transfer_id = t.id and p.account_id = ${m.accrualAccountId}
        and o.merchant_id = ${m.merchantId} and o.manual_settlement and o.status in ('PAID', 'REFUNDED') and not o.is_settled
        and o.paid_at < ${sql.timestamp(m.periodEnd)}
      returning o.amount
    )
    select count(*)::int as order_count, coalesce(sum(amount), 0)::bigint as gross_amount from marked`);
}

// Refunds a build deducts: not counted by any settlement yet and not failed, or failed after
// their failure was given back by a settlement while the one that had counted them was then
// cancelled (that give-back must be deducted again).
const refundsToDeduct = (merchantId: string) => sql.fragment`
  merchant_id = ${merchantId} and settlement_id is null and (status <> 'FAILED' or reversal_settlement_id is not null)`;
// Refunds a build gives back: counted by an earlier settlement, failed since.
const refundsToGiveBack = (merchantId: string | FragmentSqlToken) => sql.fragment`
  merchant_id = ${merchantId} and status = 'FAILED' and settlement_id is not null and reversal_settlement_id is null`;

const refundTotals = z.object({ deducted: z.number(), deducted_count: z.number(), given_back: z.number(), given_back_count: z.number() });

/** Locks and sums the refunds a build deducts and gives back. */
export function lockRefundsToSettle(db: Db, merchantId: string) {
  return db.one(sql.type(refundTotals)`
    with deduct as (
      select amount from refunds where ${refundsToDeduct(merchantId)} for update
    ), give_back as (
      select amount from refunds where ${refundsToGiveBack(merchantId)} for update
    )
    select (select coalesce(sum(amount), 0)::bigint from deduct) as deducted, (select count(*)::int from deduct) as deducted_count,
           (select coalesce(sum(amount), 0)::bigint from give_back) as given_back, (select count(*)::int from give_back) as given_back_count`);
}

/** Points the same refunds at the settlement. */
export function markRefundsSettled(db: Db, merchantId: string, settlementId: string) {
  return db.one(sql.type(refundTotals)`
    with deduct as (
      update refunds set settlement_id = ${settlementId} where ${refundsToDeduct(merchantId)} returning amount
    ), give_back as (
      update refunds set reversal_settlement_id = ${settlementId} where ${refundsToGiveBack(merchantId)} returning amount
    )
    select (select coalesce(sum(amount), 0)::bigint from deduct) as deducted, (select count(*)::int from deduct) as deducted_count,
           (select coalesce(sum(amount), 0)::bigint from give_back) as given_back, (select count(*)::int from give_back) as given_back_count`);
}

export interface NewSettlement {
  merchantId: string;
  settlementDate: string;
  periodStart: Date;
  periodEnd: Date;
  grossAmount: number;
  mdrTotal: number;
  refundTotal: number;
  disbursementFee: number;
  netPayout: number;
  orderCount: number;
  bankId: string;
  accountNumber: string;
  accountName: string;
}

/**
 * Inserts a PENDING settlement; ref_code STL-<yyyymmdd>-<n> from one sequence. Null when the
 * merchant already has a live settlement for the day (the partial unique index decides).
 */
export function insertSettlement(db: Db, s: NewSettlement) {
  return db.maybeOne(sql.type(settlementRow)`
    with s as (
      insert into settlements (merchant_id, ref_code, settlement_date, period_start, period_end, gross_amount, mdr_total,
                               refund_total, disbursement_fee, platform_fee, aggregator_fee, net_payout, order_count,
                               bank_id, account_number, account_name)
      values (${s.merchantId},
              'STL-' || to_char(${s.settlementDate}::date, 'YYYYMMDD') || '-' || lpad(nextval('settlement_ref_seq')::text, 6, '0'),
              ${s.settlementDate}, ${sql.timestamp(s.periodStart)}, ${sql.timestamp(s.periodEnd)}, ${s.grossAmount}, ${s.mdrTotal},
              ${s.refundTotal}, ${s.disbursementFee}, 0, 0, ${s.netPayout}, ${s.orderCount}, ${s.bankId}, ${s.accountNumber},
              ${s.accountName})
      on conflict (merchant_id, settlement_date) where status <> 'CANCELLED' do nothing
      returning *
    )
    select ${columns} from s`);
}

export function findSettlement(db: Db, id: string) {
  return db.maybeOne(sql.type(settlementRow)`select ${columns} from settlements s where s.id = ${id}`);
}

/** Row-locks the settlement: every status change reads it this way first. */
export function lockSettlement(db: Db, where: { id: string } | { refCode: string; attempt: number }) {
  const match = 'id' in where ? sql.fragment`s.id = ${where.id}` : sql.fragment`s.ref_code = ${where.refCode} and s.payout_attempt = ${where.attempt}`;
  return db.maybeOne(sql.type(settlementRow)`select ${columns} from settlements s where ${match} for update`);
}

const lockSettlementAttemptRow = settlementRow.extend({ attempt_vendors: z.array(z.string()).nullable() });

/**
 * A settlement by its ref_code whatever its current attempt, locked, with the vendors the given
 * attempt's reference was sent to (payout_references; empty when not known). For a vendor's
 * word on an attempt that is not the current one.
 */
export function lockSettlementAttempt(db: Db, where: { refCode: string; attempt: number }, reference: string) {
  return db.maybeOne(sql.type(lockSettlementAttemptRow)`
    select ${columns}, (select pr.vendors from payout_references pr where pr.reference = ${reference} and pr.kind = 'SETTLEMENT' and pr.payout_id = s.id) as attempt_vendors
    from settlements s where s.ref_code = ${where.refCode} and s.payout_attempt > ${where.attempt}
    for update of s`);
}

export function findMerchantSettlement(db: Db, merchantId: string, id: string) {
  return db.maybeOne(sql.type(settlementRow)`
    select ${columns} from settlements s where s.id = ${id} and s.merchant_id = ${merchantId}`);
}

export function listMerchantSettlements(db: Db, merchantId: string, page: number, limit: number) {
  return Promise.all([
    db.any(sql.type(settlementRow)`
      select ${columns} from settlements s where s.merchant_id = ${merchantId}
      order by s.created_at desc, s.id desc
      limit ${limit} offset ${(page - 1) * limit}`),
    db.oneFirst(sql.type(countRow)`select count(*)::int as n from settlements where merchant_id = ${merchantId}`),
  ]);
}

/** For operators: newest first, filtered by any of merchant, day and status. */
export function listSettlements(db: Db, f: { merchantId: string | null; date: string | null; status: SettlementStatus | null }, limit: number) {
  return db.any(sql.type(settlementRow)`
    select ${columns} from settlements s
    where (${f.merchantId}::uuid is null or s.merchant_id = ${f.merchantId}::uuid)
      and (${f.date}::date is null or s.settlement_date = ${f.date}::date)
      and (${f.status}::text is null or s.status = ${f.status}::text)
    order by s.created_at desc, s.id desc
    limit ${limit}`);
}

/**
 * The MANUAL merchants a run builds for (ACTIVE ones: a suspended merchant's payouts are held,
 * its orders wait for the first run after it is reactivated), with something to settle:
 * settleable orders, or a failed refund to give back. Ordered, so reruns walk them alike.
 */
export function merchantsToSettle(db: Db, periodEnd: Date, merchantId: string | null) {
  return db.anyFirst(sql.type(idRow)`
    select m.id from merchants m
    where m.settlement_type = 'MANUAL' and m.status = 'ACTIVE'
      and (${merchantId}::uuid is null or m.id = ${merchantId}::uuid)
      and (exists (select 1 from orders o
                   where o.merchant_id = m.id and o.manual_settlement and o.status in ('PAID', 'REFUNDED') and not o.is_settled
                     and o.paid_at < ${sql.timestamp(periodEnd)})
           or exists (select 1 from refunds r where ${refundsToGiveBack(sql.fragment`m.id`)}))
    order by m.id`);
}

export interface StatusChange {
  status: SettlementStatus;
  vendorCode?: string | null;
  vendorDisbursementId?: string | null;
  vendorCallPending?: boolean;
  failureReason?: string | null;
  /** The vendor about to be called joins vendors_tried. */
  triedVendor?: string;
  /** An operator's retry: a new vendor reference, every vendor may be tried again. */
  newAttempt?: boolean;
}

/** Moves a (locked) settlement to a status in one statement. */
export function changeStatus(db: Db, id: string, change: StatusChange) {
  const keep = (value: unknown, column: string) => (value === undefined ? sql.identifier([column]) : sql.fragment`${value as string | boolean | null}`);
  const final = change.status === 'PAID' || change.status === 'CANCELLED';
  const tried = change.newAttempt
    ? sql.fragment`'{}'::text[]`
    : change.triedVendor
      ? sql.fragment`array_append(vendors_tried, ${change.triedVendor})`
      : sql.identifier(['vendors_tried']);
  return db.one(sql.type(settlementRow)`
    with s as (
      update settlements
      set status = ${change.status},
          vendor_code = ${keep(change.vendorCode, 'vendor_code')},
          vendor_disbursement_id = ${keep(change.vendorDisbursementId, 'vendor_disbursement_id')},
          vendor_call_pending = ${keep(change.vendorCallPending, 'vendor_call_pending')},
          failure_reason = ${keep(change.failureReason, 'failure_reason')},
          vendors_tried = ${tried},
          payout_attempt = payout_attempt + ${change.newAttempt ? 1 : 0},
          completed_at = ${final ? sql.fragment`now()` : sql.identifier(['completed_at'])},
          updated_at = now()
      where id = ${id}
      returning *
    )
    select ${columns} from s`);
}

const releaseSettlementRow = z.object({ orders: z.number(), refunds: z.number(), give_backs: z.number() });

/** A cancelled settlement lets go of its orders and refunds, so the day can be built again. */
export function releaseSettlement(db: Db, id: string) {
  return db.one(sql.type(releaseSettlementRow)`
    with orders_freed as (
      update orders set is_settled = false, settlement_id = null, updated_at = now() where settlement_id = ${id} returning 1
    ), refunds_freed as (
      update refunds set settlement_id = null where settlement_id = ${id} returning 1
    ), give_backs_freed as (
      update refunds set reversal_settlement_id = null where reversal_settlement_id = ${id} returning 1
    )
    select (select count(*)::int from orders_freed) as orders, (select count(*)::int from refunds_freed) as refunds,
           (select count(*)::int from give_backs_freed) as give_backs`);
}

