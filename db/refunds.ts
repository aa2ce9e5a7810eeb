// Refunds of paid orders (V1 and legacy orders alike: one order namespace).
//
// Invariants and why they hold:
// - Refunds never exceed the order: the order row is locked, and what is already refunded or
//   being refunded (every refund not FAILED) is summed under that lock before a new one is
//   accepted; so concurrent refunds queue and the last ones see AMOUNT_EXCEEDS_ORDER.
// - The money is held when the refund is accepted: WALLET merchants' wallets (MANUAL merchants'
//   settlement accrual) move the amount into REFUNDS_IN_FLIGHT in the accepting transaction, or
//   the refund is refused with INSUFFICIENT_BALANCE. Success sends it out through
//   VENDOR_CLEARING; failure brings it back, exactly once (transfers are unique per refund).
// - Lock order: the merchant's accounts, then the refund, then the order. Settlement builds
//   lock accounts before orders too, so the two never deadlock.
// - The MDR is not returned on a refund (docs/decisions.md).
// - An order's refunded_amount is the sum of its refunds not FAILED: a PENDING refund's money
//   has already left the wallet (or accrual), so it is refunded for the merchant and not
//   refundable again. Every refund event records the order's refunded and refundable amounts
//   after it, read in the transaction that made the change.
import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import { ApiError } from './errors.ts';
import { InsufficientFunds, lockMerchantAccounts, postTransfer, type AccountKind } from './ledger.ts';
import { getMoneySettings } from './merchants.ts';
import type { Db, Pool } from './pool.ts';
import { inTransaction, sendJob } from './queue.ts';
import { newRefCode } from './ref-codes.ts';
import { findMerchantOrder, findOrderById, insertOrderEvent, lockOrder, setRefundStatus, type OrderRow } from './orders.sql.ts';
import { findRefund, finishRefund, insertRefund, lockRefund, refundedAmount, succeededAmount, type RefundRow } from './refunds.sql.ts';
import { boundToHolder, noteFinalWord, sourceOf, type Speaker } from './vendor-binding.ts';
import { enqueueWebhooks } from './webhooks.ts';
import { refundableAmount } from './money-rules.ts';
import { presentRefund, refundWebhookBody, type RefundEvent } from './present/refunds.ts';
import { toJson } from './present/json-text.ts';
import { idempotent, type Answer } from './idempotency.ts';

function heldIn(settlementType: 'WALLET' | 'MANUAL'): AccountKind {
  return settlementType === 'WALLET' ? 'WALLET' : 'SETTLEMENT_ACCRUAL';
}

/**
 * Accepts a refund of a PAID order: checks, holds the money, records the refund (PENDING) and
 * an order event, marks the order REFUNDED when this refund completes its amount, and queues
 * the vendor call. `amount` undefined means the whole remaining refundable amount. With an
 * Idempotency-Key, the key is claimed and the answer stored in the same transaction, so a
 * repeat gets that answer and never a second refund (db/idempotency.ts).
 */
export function createRefund(
  pool: Pool,
  boss: PgBoss,
  merchant: { id: string; settlement_type: 'WALLET' | 'MANUAL' },
  refCode: string,
  input: { amount: number | undefined; reason: string | null },
  idempotency: { key: string; rawBody: Buffer } | null = null,
): Promise<Answer> {
  const request = idempotency && { merchantId: merchant.id, key: idempotency.key, operation: `refund:${refCode}`, rawBody: idempotency.rawBody };
  return idempotent(pool, request, async (tx) => {
    const { refund, order } = await acceptRefund(tx, boss, merchant, refCode, input);
    return { status: 201, body: toJson({ success: true, data: presentRefund(refund, order) }) };
  });
}

async function acceptRefund(
  tx: Db,
  boss: PgBoss,
  merchant: { id: string; settlement_type: 'WALLET' | 'MANUAL' },
  refCode: string,
  input: { amount: number | undefined; reason: string | null },
): Promise<{ refund: RefundRow; order: OrderRow }> {
  const source = heldIn(merchant.settlement_type);
  const accounts = await lockMerchantAccounts(tx, merchant.id, [source, 'REFUNDS_IN_FLIGHT']);
  const visible = await findMerchantOrder(tx, merchant.id, refCode);
  if (!visible) throw new ApiError('ORDER_NOT_FOUND');
  const order = (await lockOrder(tx, visible.id))!;
  if (order.status !== 'PAID') throw new ApiError('INVALID_STATUS', `Order is ${order.status}; only PAID orders can be refunded`);
  const remaining = order.amount - (await refundedAmount(tx, order.id));
  const amount = input.amount ?? remaining;
  if (amount > remaining) throw new ApiError('AMOUNT_EXCEEDS_ORDER', `At most ${remaining} can be refunded`);

  const refund = await insertRefund(tx, {
    id: randomUUID(),
    merchantId: merchant.id,
    orderId: order.id,
    refCode: newRefCode('RFD'),
    amount,
    reason: input.reason,
    vendorCode: order.vendor_code,
  });
  try {
    await postTransfer(
      tx,
      {
        merchantId: merchant.id,
        kind: 'REFUND',
        reference: { type: 'REFUND', id: refund.id, refCode: refund.ref_code },
        description: `Refund ${refund.ref_code} of ${order.ref_code}`,
        legs: { [source]: -amount, REFUNDS_IN_FLIGHT: amount },
      },
      accounts,
    );
  } catch (err) {
    if (err instanceof InsufficientFunds) {
      throw new ApiError('INSUFFICIENT_BALANCE', `The balance cannot cover this refund: ${err.balance} available, ${amount} needed`);
    }
    throw err;
  }
  const full = amount === remaining;
  const after = full ? await setRefundStatus(tx, order.id, 'REFUNDED') : order;
  await insertOrderEvent(tx, {
    orderId: order.id,
    status: after.status,
    event: 'refund.requested',
    source: 'api',
    detail: {
      refund: refund.ref_code,
      amount,
      remaining: remaining - amount,
      refunded_amount: order.amount - remaining + amount,
      refundable_amount: remaining - amount,
    },
  });
  await sendJob(boss, 'refund-execute', { refund_id: refund.id }, { db: inTransaction(tx) });
  return { refund, order: after };
}

export type RefundOutcome = { status: 'SUCCEEDED'; vendorRefundId: string | null } | { status: 'FAILED'; vendorRefundId: string | null; reason: string };

/**
 * The final word on a refund: the vendor's, or Kasir's own (nothing to refund through). SUCCEEDED:
 * the money leaves through the vendor. FAILED: it returns to the wallet (or accrual) and a fully
 * refunded order is PAID again. The merchant hears either way. A refund already final changes
 * nothing; a word saying the opposite of its final state is recorded as a contradiction. A
 * vendor's word on a refund another vendor holds changes nothing and is recorded
 * (db/vendor-binding.ts).
 */
export async function completeRefund(
  db: Db,
  boss: PgBoss,
  refundId: string,
  outcome: RefundOutcome,
  speaker: Speaker,
): Promise<'completed' | 'already_final' | 'contradicted' | 'not_its_record' | 'unknown'> {
  return db.transaction(async (tx) => {
    // Read unlocked to learn the merchant, then lock in the one order: accounts, refund, order.
    // A final refund never changes again, and its vendor never changes: the unlocked row decides.
    const unlocked = await findRefund(tx, refundId);
    if (!unlocked) return 'unknown';
    const held = { type: 'REFUND' as const, vendor_code: unlocked.vendor_code };
    const word = {
      recordId: unlocked.id,
      reference: unlocked.ref_code,
      kasirStatus: unlocked.status,
      vendorStatus: outcome.status,
      detail: { vendor_refund_id: outcome.vendorRefundId, ...(outcome.status === 'FAILED' ? { reason: outcome.reason } : {}) },
    };
    if (!(await boundToHolder(tx, speaker, held, word))) return 'not_its_record';
    const alreadyFinal = async (settled: string) =>
      (await noteFinalWord(tx, speaker, held, { ...word, kasirStatus: settled }, settled !== outcome.status)) ? ('contradicted' as const) : ('already_final' as const);
    if (unlocked.status !== 'PENDING') return alreadyFinal(unlocked.status);
    const merchant = await getMoneySettings(tx, unlocked.merchant_id);
    await lockMerchantAccounts(tx, unlocked.merchant_id, [heldIn(merchant.settlement_type), 'REFUNDS_IN_FLIGHT', 'VENDOR_CLEARING']);
    const peek = (await lockRefund(tx, refundId))!;
    if (peek.status !== 'PENDING') return alreadyFinal(peek.status);
    const source = sourceOf(speaker);
    const order = (await lockOrder(tx, peek.order_id))!;
    const reference = { type: 'REFUND' as const, id: peek.id, refCode: peek.ref_code };
    let event: RefundEvent;
    let current = order;
    if (outcome.status === 'SUCCEEDED') {
      await postTransfer(tx, {
        merchantId: peek.merchant_id,
        kind: 'REFUND_COMPLETED',
        reference,
        description: `Refund ${peek.ref_code} of ${order.ref_code} paid out`,
        legs: { REFUNDS_IN_FLIGHT: -peek.amount, VENDOR_CLEARING: peek.amount },
      });
      const refund = await finishRefund(tx, peek.id, { status: 'SUCCEEDED', vendorRefundId: outcome.vendorRefundId, failureReason: null });
      event = (await succeededAmount(tx, order.id)) === order.amount ? 'order.refunded' : 'order.partially_refunded';
      current = await orderAfter(tx, order.id);
      await insertOrderEvent(tx, {
        orderId: order.id,
        status: current.status,
        event: 'refund.succeeded',
        source,
        detail: { refund: peek.ref_code, amount: peek.amount, ...amountsOf(current) },
      });
      await notify(tx, boss, current, event, refund);
    } else {
      await postTransfer(tx, {
        merchantId: peek.merchant_id,
        kind: 'REFUND_REVERSAL',
        reference,
        description: `Refund ${peek.ref_code} of ${order.ref_code} failed: ${outcome.reason}`,
        legs: { REFUNDS_IN_FLIGHT: -peek.amount, [heldIn(merchant.settlement_type)]: peek.amount },
      });
      const refund = await finishRefund(tx, peek.id, { status: 'FAILED', vendorRefundId: outcome.vendorRefundId, failureReason: outcome.reason });
      if (current.status === 'REFUNDED') await setRefundStatus(tx, order.id, 'PAID');
      current = await orderAfter(tx, order.id);
      await insertOrderEvent(tx, {
        orderId: order.id,
        status: current.status,
        event: 'refund.failed',
        source,
        detail: { refund: peek.ref_code, amount: peek.amount, reason: outcome.reason, ...amountsOf(current) },
      });
      await notify(tx, boss, current, 'order.refund_failed', refund);
    }
    return 'completed';
  });
}

/** The locked order re-read after a refund's change, so its refunded_amount counts the new status. */
async function orderAfter(tx: Db, orderId: string): Promise<OrderRow> {
  return (await findOrderById(tx, orderId))!;
}

/** The order's totals an event records (docs/decisions.md, Refunds). */
function amountsOf(order: OrderRow) {
  return { refunded_amount: order.refunded_amount, refundable_amount: refundableAmount(order) };
}

async function notify(tx: Db, boss: PgBoss, order: OrderRow, event: RefundEvent, refund: RefundRow) {
  await enqueueWebhooks(tx, boss, [
    { merchantId: order.merchant_id, orderId: order.id, event, url: order.notify_url, body: refundWebhookBody(order, event, refund) },
  ]);
}
