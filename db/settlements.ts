// The settlement aggregate: MANUAL merchants paid out to their bank account, one settlement per
// merchant and settlement day (V1 and legacy orders alike).
//
// Invariants and why they hold:
// - Nothing is settled twice: a build locks the merchant's ledger accounts first (the same lock
//   payments and refunds take before they touch the accrual), then its orders and refunds, and
//   marks exactly the rows it summed in that transaction; a partial unique index allows one live
//   settlement per (merchant, day), so a rerun or a concurrent run creates nothing twice.
// - The formula is exact: net_payout = gross − mdr − refunds − fee (a CHECK), where mdr is read
//   from the payment postings (amount − what the accrual was credited), so it is what was
//   booked even if mdr_bps changed since. The payout debits the accrual by net + fee, which the
//   accrual holds: after a build it holds exactly what the orders not yet settled are owed.
// - Money moves with every status: built → SETTLEMENT_ACCRUAL into SETTLEMENTS_IN_FLIGHT; PAID
//   → out through VENDOR_CLEARING, fee to FEE_REVENUE; CANCELLED → back to the accrual, orders
//   and refunds freed for a rebuild. FAILED moves nothing (an operator retries or cancels).
// - One send per attempt and vendor: the payout worker records the vendor it is about to call
//   (vendor_call_pending) in a committed row first; an unknown outcome is asked of that vendor,
//   never re-sent blindly. The vendor reference is the ref_code (plus -<n> for retry n), which
//   vendors dedupe on.
// - Every status change writes a webhook outbox row in its own transaction.
import type { PgBoss } from 'pg-boss';
import { lockMerchantAccounts, postTransfer } from './ledger.ts';
import { disbursementFee, settlementNet } from './money-rules.ts';
import { logger } from './logger.ts';
import { getMerchant, getMoneySettings, getSettlementAccount } from './merchants.ts';
import type { PayoutCompletion } from './payout-outcome.ts';
import type { Db, Pool } from './pool.ts';
import { inTransaction, sendJob } from './queue.ts';
import {
  allowLongStatements,
  changeStatus,
  findLiveSettlement,
  insertSettlement,
  lockRefundsToSettle,
  lockSettleableOrders,
  lockSettlement,
  lockSettlementAttempt,
  markOrdersSettled,
  markRefundsSettled,
  merchantsToSettle,
  releaseSettlement,
  type SettlementRow,
  type StatusChange,
} from './settlements.sql.ts';
import { boundToHolder, noteFinalWord, sourceOf, type Speaker } from './vendor-binding.ts';
import { enqueueWebhooks } from './webhooks.ts';
import { settlementWebhookBody } from './present/settlements.ts';

const WIB_OFFSET_MS = 7 * 3600_000;
const DAY_MS = 24 * 3600_000;

/**
 * The period a settlement day covers: the 24 hours ending at the cut-off (an hour of the WIB
 * day, 0 by default) that closes it. With cut-off 0, day D is D 00:00 WIB to D+1 00:00 WIB;
 * with cut-off 18, day D is D−1 18:00 to D 18:00 WIB.
 */
export function periodOf(settlementDate: string, cutoffHour: number): { periodStart: Date; periodEnd: Date } {
  const midnightWib = Date.parse(`${settlementDate}T00:00:00Z`) - WIB_OFFSET_MS;
  const periodEnd = midnightWib + (cutoffHour === 0 ? 24 : cutoffHour) * 3600_000;
  return { periodStart: new Date(periodEnd - DAY_MS), periodEnd: new Date(periodEnd) };
}

/**
 * Whether day D's period has closed by `now`. A run of a day still open (today, or any later
 * day) would settle part of it and leave the rest for no later run to pick up under that date,
 * so the operator command and the job refuse it.
 */
export function dayHasEnded(settlementDate: string, cutoffHour: number, now = new Date()): boolean {
  return periodOf(settlementDate, cutoffHour).periodEnd.getTime() <= now.getTime();
}

/** The settlement day whose period most recently closed at or before `at`. */
export function settlementDateAt(at: Date, cutoffHour: number): string {
  const wib = at.getTime() + WIB_OFFSET_MS;
  const lastCutoff = Math.floor((wib - cutoffHour * 3600_000) / DAY_MS) * DAY_MS + cutoffHour * 3600_000;
  // The cut-off closes the day it falls on, midnight (cut-off 0) the day before.
  return new Date(lastCutoff - 1).toISOString().slice(0, 10);
}

/** What the vendor knows a payout attempt by: the ref_code, then <ref_code>-<n> for retry n. */
export function payoutReference(s: Pick<SettlementRow, 'ref_code' | 'payout_attempt'>): string {
  return s.payout_attempt === 1 ? s.ref_code : `${s.ref_code}-${s.payout_attempt}`;
}

export function parsePayoutReference(reference: string): { refCode: string; attempt: number } | null {
  const match = /^(STL-\d{8}-\d+)(?:-(\d{1,6}))?$/.exec(reference);
  if (!match) return null;
  return { refCode: match[1], attempt: match[2] === undefined ? 1 : Number(match[2]) };
}

export type BuildResult =
  | { merchant_id: string; status: 'created' | 'exists'; settlement: SettlementRow }
  | { merchant_id: string; status: 'skipped'; reason: string; detail?: Record<string, number> }
  | { merchant_id: string; status: 'failed'; reason: string };

/**
 * Builds one merchant's settlement of a day, in one transaction: accounts locked first (refund
 * creation locks the accounts, then the order: the reverse would deadlock), then the orders and
 * refunds summed and locked, the settlement inserted, its orders and refunds marked, the
 * accrual moved into SETTLEMENTS_IN_FLIGHT, the payout queued and the webhook written.
 * Nothing is built when the merchant has no settlement account, nothing to settle, or a
 * net_payout that would not be positive (the orders wait for a later day).
 */
export async function buildSettlement(
  pool: Pool,
  boss: PgBoss,
  input: { merchantId: string; settlementDate: string; cutoffHour: number },
): Promise<BuildResult> {
  const merchantId = input.merchantId;
  const merchant = await getMerchant(pool, merchantId);
  if (merchant.settlement_type !== 'MANUAL') return { merchant_id: merchantId, status: 'skipped', reason: 'not_manual' };
  if (merchant.status !== 'ACTIVE') return { merchant_id: merchantId, status: 'skipped', reason: 'merchant_inactive' };
  const account = await getSettlementAccount(pool, merchantId);
  if (!account) {
    logger.warn({ merchant: merchantId, date: input.settlementDate }, 'settlement skipped: the merchant has no settlement bank account');
    return { merchant_id: merchantId, status: 'skipped', reason: 'no_settlement_account' };
  }
  const fee = disbursementFee(await getMoneySettings(pool, merchantId), 'BANK');
  const { periodStart, periodEnd } = periodOf(input.settlementDate, input.cutoffHour);

  return pool.transaction(async (tx): Promise<BuildResult> => {
    const accounts = await lockMerchantAccounts(tx, merchantId, ['SETTLEMENT_ACCRUAL', 'SETTLEMENTS_IN_FLIGHT', 'FEE_REVENUE']);
    await allowLongStatements(tx);
    const existing = await findLiveSettlement(tx, merchantId, input.settlementDate);
    if (existing) return { merchant_id: merchantId, status: 'exists', settlement: existing };

    const scope = { merchantId, periodEnd, accrualAccountId: accounts.get('SETTLEMENT_ACCRUAL')!.id };
    const orders = await lockSettleableOrders(tx, scope);
    const refunds = await lockRefundsToSettle(tx, merchantId);
    if (orders.order_count === 0 && refunds.given_back_count === 0) return { merchant_id: merchantId, status: 'skipped', reason: 'nothing_to_settle' };
    const refundTotal = refunds.deducted - refunds.given_back;
    const net = settlementNet({ gross: orders.gross_amount, mdr: orders.mdr_total, refunds: refundTotal, fee });
    const figures = { order_count: orders.order_count, gross_amount: orders.gross_amount, mdr_total: orders.mdr_total, refund_total: refundTotal, disbursement_fee: fee, net_payout: net };
    if (net <= 0) {
      logger.info({ merchant: merchantId, date: input.settlementDate, ...figures }, 'settlement deferred: net payout would not be positive');
      return { merchant_id: merchantId, status: 'skipped', reason: 'net_payout_not_positive', detail: figures };
    }

    const settlement = await insertSettlement(tx, {
      merchantId,
      settlementDate: input.settlementDate,
      periodStart,
      periodEnd,
      grossAmount: orders.gross_amount,
      mdrTotal: orders.mdr_total,
      refundTotal,
      disbursementFee: fee,
      netPayout: net,
      orderCount: orders.order_count,
      bankId: account.bank_id,
      accountNumber: account.account_number,
      accountName: account.account_name,
    });
    // Under the accounts lock no other build of this merchant runs, so the day is free.
    if (!settlement) throw new Error(`settlement of ${merchantId} for ${input.settlementDate} appeared under the accounts lock`);

    // The rows summed above are locked by this transaction, so the same predicates mark them.
    const marked = await markOrdersSettled(tx, { ...scope, settlementId: settlement.id });
    const markedRefunds = await markRefundsSettled(tx, merchantId, settlement.id);
    if (marked.order_count !== orders.order_count || marked.gross_amount !== orders.gross_amount
      || markedRefunds.deducted !== refunds.deducted || markedRefunds.given_back !== refunds.given_back) {
      throw new Error(`settlement ${settlement.ref_code}: the rows marked differ from the rows summed`);
    }
    await postTransfer(
      tx,
      {
        merchantId,
        kind: 'SETTLEMENT_PAYOUT',
        reference: { type: 'SETTLEMENT', id: settlement.id, refCode: settlement.ref_code },
        description: `Settlement ${settlement.ref_code} (net ${net}, fee ${fee})`,
        legs: { SETTLEMENT_ACCRUAL: -(net + fee), SETTLEMENTS_IN_FLIGHT: net + fee },
      },
      accounts,
    );
    await sendJob(boss, 'settlement-payout', { settlement_id: settlement.id }, { db: inTransaction(tx) });
    await notify(tx, boss, settlement);
    return { merchant_id: merchantId, status: 'created', settlement };
  });
}

export interface RunReport {
  settlement_date: string;
  period_start: Date;
  period_end: Date;
  created: number;
  existing: number;
  skipped: number;
  failed: number;
  results: BuildResult[];
}

/**
 * Builds a day's settlements for every ACTIVE MANUAL merchant with something to settle (or for
 * one merchant), one transaction each, so a run cut off anywhere loses nothing: a rerun builds
 * the merchants that were not reached and finds the others' settlements. A merchant that fails
 * is logged and the run goes on.
 */
export async function runSettlements(
  pool: Pool,
  boss: PgBoss,
  input: { settlementDate: string; cutoffHour: number; merchantId?: string },
): Promise<RunReport> {
  const { periodStart, periodEnd } = periodOf(input.settlementDate, input.cutoffHour);
  const merchants = input.merchantId ? [input.merchantId] : await merchantsToSettle(pool, periodEnd, null);
  const results: BuildResult[] = [];
  for (const merchantId of merchants) {
    try {
      results.push(await buildSettlement(pool, boss, { merchantId, settlementDate: input.settlementDate, cutoffHour: input.cutoffHour }));
    } catch (err) {
      if (input.merchantId) throw err;
      logger.error({ err, merchant: merchantId, date: input.settlementDate }, 'settlement build failed');
      results.push({ merchant_id: merchantId, status: 'failed', reason: (err as Error).message });
    }
  }
  const count = (status: BuildResult['status']) => results.filter((r) => r.status === status).length;
  return {
    settlement_date: input.settlementDate,
    period_start: periodStart,
    period_end: periodEnd,
    created: count('created'),
    existing: count('exists'),
    skipped: count('skipped'),
    failed: count('failed'),
    results,
  };
}

async function notify(tx: Db, boss: PgBoss, s: SettlementRow) {
  const event = `settlement.${s.status.toLowerCase()}`;
  // No per-settlement URL: the merchant's default notify URL (null skips the delivery).
  await enqueueWebhooks(tx, boss, [{ merchantId: s.merchant_id, orderId: null, settlementId: s.id, event, url: null, body: settlementWebhookBody(s, event) }]);
}

/** A status change of a locked row, with its webhook. */
export async function moveSettlement(tx: Db, boss: PgBoss, s: SettlementRow, change: StatusChange): Promise<SettlementRow> {
  const moved = await changeStatus(tx, s.id, change);
  if (moved.status !== s.status) await notify(tx, boss, moved);
  return moved;
}

/**
 * The final word on the current payout attempt: a vendor's (callback, or reconciliation by
 * id) or an operator's. SUCCESS: PAID, net_payout leaves through the vendor and the fee is
 * revenue. FAILED: the money stays in SETTLEMENTS_IN_FLIGHT for an operator's retry or cancel.
 * A report on a settlement that is not PROCESSING, or on an earlier attempt, changes nothing;
 * one that says the opposite of its final state (SUCCESS on a FAILED or CANCELLED payout,
 * FAILED on a PAID one, SUCCESS on an attempt Kasir gave up and retried: earlierAttempt) is
 * recorded as a contradiction. A vendor's word on a payout another vendor holds changes
 * nothing and is recorded (db/vendor-binding.ts).
 */
export async function completeSettlement(
  tx: Db,
  boss: PgBoss,
  where: { id: string } | { reference: string },
  outcome: PayoutCompletion,
  speaker: Speaker,
): Promise<'completed' | 'already_final' | 'contradicted' | 'not_its_record' | 'unknown'> {
  const key = 'id' in where ? where : parsePayoutReference(where.reference);
  if (!key) return 'unknown';
  const s = await lockSettlement(tx, key);
  if (!s) return 'reference' in where && 'attempt' in key ? earlierAttempt(tx, where.reference, key, outcome, speaker) : 'unknown';
  const held = { type: 'SETTLEMENT' as const, vendor_code: s.vendor_code };
  const word = {
    recordId: s.id,
    reference: 'reference' in where ? where.reference : payoutReference(s),
    kasirStatus: s.status,
    vendorStatus: outcome.status,
    detail: { vendor_disbursement_id: outcome.vendorDisbursementId, ...(outcome.status === 'FAILED' ? { reason: outcome.reason } : {}) },
  };
  if (!(await boundToHolder(tx, speaker, held, word))) return 'not_its_record';
  if (s.status !== 'PROCESSING') {
    const opposite = outcome.status === 'SUCCESS' ? s.status === 'FAILED' || s.status === 'CANCELLED' : s.status === 'PAID';
    return (await noteFinalWord(tx, speaker, held, word, opposite)) ? 'contradicted' : 'already_final';
  }
  const source = sourceOf(speaker);
  const vendorId = outcome.vendorDisbursementId ?? s.vendor_disbursement_id;
  if (outcome.status === 'SUCCESS') {
    await postTransfer(tx, {
      merchantId: s.merchant_id,
      kind: 'SETTLEMENT_COMPLETED',
      reference: { type: 'SETTLEMENT', id: s.id, refCode: s.ref_code },
      description: `Settlement ${s.ref_code} paid to ${s.bank_short_code} ${s.account_number}`,
      legs: { SETTLEMENTS_IN_FLIGHT: -(s.net_payout + s.disbursement_fee), VENDOR_CLEARING: s.net_payout, FEE_REVENUE: s.disbursement_fee },
    });
    await moveSettlement(tx, boss, s, { status: 'PAID', vendorDisbursementId: vendorId, vendorCallPending: false, failureReason: null });
  } else {
    await moveSettlement(tx, boss, s, { status: 'FAILED', vendorDisbursementId: vendorId, vendorCallPending: false, failureReason: outcome.reason });
  }
  logger.info({ settlement: s.ref_code, status: outcome.status, source }, 'settlement payout completed');
  return 'completed';
}

/**
 * A vendor's final word on an attempt Kasir gave up on: the attempt FAILED and an operator's
 * retry sent the settlement again under a new reference. Nothing moves. SUCCESS means that
 * vendor paid an attempt Kasir retried, so the money may have gone out twice: recorded as a
 * contradiction (bound to the vendors that attempt went to) for an operator to take up with the
 * vendor. FAILED agrees with Kasir. 'unknown' for an attempt Kasir never sent.
 */
async function earlierAttempt(
  tx: Db,
  reference: string,
  key: { refCode: string; attempt: number },
  outcome: PayoutCompletion,
  speaker: Speaker,
): Promise<'already_final' | 'contradicted' | 'not_its_record' | 'unknown'> {
  const s = await lockSettlementAttempt(tx, key, reference);
  if (!s || s.attempt_vendors === null) return 'unknown';
  const held = { type: 'SETTLEMENT' as const, earlier_attempt_vendors: s.attempt_vendors };
  const word = {
    recordId: s.id,
    reference,
    kasirStatus: 'FAILED',
    vendorStatus: outcome.status,
    detail: {
      attempt: key.attempt,
      current_attempt: s.payout_attempt,
      current_reference: payoutReference(s),
      current_status: s.status,
      vendor_disbursement_id: outcome.vendorDisbursementId,
      ...(outcome.status === 'FAILED' ? { reason: outcome.reason } : {}),
    },
  };
  if (!(await boundToHolder(tx, speaker, held, word))) return 'not_its_record';
  return (await noteFinalWord(tx, speaker, held, word, outcome.status === 'SUCCESS')) ? 'contradicted' : 'already_final';
}

/** An operator's request the settlement's state does not allow. Nothing was written. */
export class SettlementRefused extends Error {}

/**
 * Operator: cancel a PENDING or FAILED settlement (never PROCESSING: the vendor may be paying
 * it). The money returns to the accrual and the orders and refunds are freed, so a rerun of
 * the day builds it again.
 */
export async function cancelSettlement(pool: Pool, boss: PgBoss, id: string, reason: string | null) {
  return pool.transaction(async (tx) => {
    const s = await lockSettlement(tx, { id });
    if (!s) throw new SettlementRefused(`no settlement ${id}`);
    if (s.status !== 'PENDING' && s.status !== 'FAILED') {
      throw new SettlementRefused(`settlement ${s.ref_code} is ${s.status}: only PENDING or FAILED settlements can be cancelled`);
    }
    await postTransfer(tx, {
      merchantId: s.merchant_id,
      kind: 'SETTLEMENT_REVERSAL',
      reference: { type: 'SETTLEMENT', id: s.id, refCode: s.ref_code },
      description: `Settlement ${s.ref_code} cancelled${reason ? `: ${reason}` : ''}`,
      legs: { SETTLEMENTS_IN_FLIGHT: -(s.net_payout + s.disbursement_fee), SETTLEMENT_ACCRUAL: s.net_payout + s.disbursement_fee },
    });
    await allowLongStatements(tx);
    const released = await releaseSettlement(tx, s.id);
    const settlement = await moveSettlement(tx, boss, s, { status: 'CANCELLED', vendorCallPending: false, failureReason: reason ?? 'cancelled by the platform' });
    return { settlement, released };
  });
}

/** Operator: send a FAILED settlement again, as a new attempt (a new vendor reference). */
export async function retrySettlement(pool: Pool, boss: PgBoss, id: string): Promise<SettlementRow> {
  return pool.transaction(async (tx) => {
    const s = await lockSettlement(tx, { id });
    if (!s) throw new SettlementRefused(`no settlement ${id}`);
    if (s.status !== 'FAILED') throw new SettlementRefused(`settlement ${s.ref_code} is ${s.status}: only FAILED settlements can be retried`);
    const moved = await moveSettlement(
      tx,
      boss,
      s,
      { status: 'PENDING', newAttempt: true, vendorCode: null, vendorDisbursementId: null, vendorCallPending: false, failureReason: null }
    );
    await sendJob(boss, 'settlement-payout', { settlement_id: s.id }, { db: inTransaction(tx) });
    return moved;
  });
}
