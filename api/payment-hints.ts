// A payment callback as a hint (docs/callbacks.md, Trust). Where a vendor's callbacks are
// authenticated by a secret the account holder can read too (Xendit's static callback token, a
// shared HMAC secret: gateway.paymentCallbacksAreHints), an authentic callback proves only that
// someone holding that secret sent it: a merchant whose own account sits on a route can name any
// order's ref code, amount and a made-up QR id. So what is credited is what the vendor's own
// record shows, read with Kasir's credentials, of the QR Kasir stored for the order at creation:
// - the callback names another QR than the order's own: not applied, recorded UNCONFIRMED (the
//   order's stored vendor reference is never rewritten by a callback);
// - the read fails: answered 503, so a genuine vendor sends it again;
// - the read shows the QR unpaid: not applied, recorded UNCONFIRMED (a genuine one that came
//   before the vendor's record shows it is repaired by reconciliation);
// - the read shows it paid: the read's amount, time and RRN are applied, and applyPayment
//   credits only an amount equal to the order's.
// Only a word the vendor may speak (it holds the order, db/vendor-binding.ts) about an order not
// paid yet is read: anything else moves no money whatever it says, and is applied as before.
// The read happens before the callback's transaction, so no row is locked while a vendor answers.
//
// A payout reversal (Xendit's payout.reversed, which moves money back to the merchant's wallet)
// is a hint the same way (confirmReversalHint): Kasir reads the payout at the vendor by its own
// reference and returns the money only when that read shows this payout REVERSED.
import { findDisbursement } from '../db/disbursements.sql.ts';
import { findPayoutReference } from '../db/payouts.ts';
import type { Db, Pool } from '../db/pool.ts';
import { findOrderByRef, findOrderRefByVendorOrderId, type OrderRow } from '../db/orders.sql.ts';
import { recordConflict, vendorHolds } from '../db/vendor-binding.ts';
import type { CallbackEvent, Gateway } from '../gateways/gateway.ts';

type Paid = Extract<CallbackEvent, { type: 'qris.paid' }>;

export type HintVerdict =
  /** Apply this event: the read's facts, or the callback as it came when nothing is to be read. */
  | { kind: 'apply'; event: Paid }
  /** The vendor cannot be read now: answer 503. */
  | { kind: 'retry_later'; reason: string }
  /** Not confirmed: record it (recordUnconfirmed) and move nothing. */
  | { kind: 'unconfirmed'; order: OrderRow; why: 'OTHER_QR' | 'NOT_PAID'; detail: Record<string, unknown> };

export async function confirmPaymentHint(pool: Pool, gateway: Gateway, vendorCode: string, hint: Paid): Promise<HintVerdict> {
  const reference = hint.reference || (await findOrderRefByVendorOrderId(pool, vendorCode, hint.vendorOrderId));
  const order = reference ? await findOrderByRef(pool, reference) : null;
  const asCame = { kind: 'apply', event: hint } as const;
  if (!order || !vendorHolds(vendorCode, { type: 'ORDER', ...order }) || order.status === 'PAID' || order.status === 'REFUNDED') return asCame;
  const named = { callback_qr: hint.vendorOrderId, order_qr: order.vendor_order_id, callback_amount: hint.amount };
  if (order.vendor_order_id !== null && hint.vendorOrderId !== order.vendor_order_id) return { kind: 'unconfirmed', order, why: 'OTHER_QR', detail: named };

  const read = await gateway.queryQris(order.ref_code, order.vendor_order_id);
  if (read.kind !== 'ok') return { kind: 'retry_later', reason: `read of ${order.ref_code}'s QR: ${read.reason}` };
  const q = read.value;
  if (q.status !== 'PAID' || !q.paidAt || q.amount === null) {
    // An attempt whose create answer has not been stored yet: its QR id comes with that answer.
    if (order.status === 'CREATING') return { kind: 'retry_later', reason: `${order.ref_code} is still being created; its QR reads ${q.status}` };
    return { kind: 'unconfirmed', order, why: 'NOT_PAID', detail: { ...named, read_status: q.status, read_amount: q.amount } };
  }
  // A paid attempt with no stored QR yet (read by Kasir's reference): the read names the QR paid.
  if (order.vendor_order_id === null && q.vendorOrderId !== null && q.vendorOrderId !== hint.vendorOrderId) {
    return { kind: 'unconfirmed', order, why: 'OTHER_QR', detail: { ...named, read_qr: q.vendorOrderId } };
  }
  return {
    kind: 'apply',
    event: { ...hint, reference: order.ref_code, vendorOrderId: order.vendor_order_id ?? q.vendorOrderId ?? hint.vendorOrderId, amount: q.amount, paidAt: q.paidAt, rrn: q.rrn },
  };
}

/** Records an unconfirmed payment callback for an operator (ops vendor:conflicts --kind UNCONFIRMED). */
export function recordUnconfirmed(tx: Db, vendorCode: string, eventId: string, verdict: Extract<HintVerdict, { kind: 'unconfirmed' }>): Promise<void> {
  const { order } = verdict;
  return recordConflict(tx, {
    kind: 'UNCONFIRMED',
    vendorCode,
    recordType: 'ORDER',
    recordId: order.id,
    reference: order.ref_code,
    recordVendor: order.vendor_code ?? order.pending_vendor,
    kasirStatus: order.status,
    vendorStatus: 'PAID',
    source: `callback:${vendorCode}`,
    eventId,
    detail: { why: verdict.why, ...verdict.detail },
  });
}

type Reversed = Extract<CallbackEvent, { type: 'disbursement.reversed' }>;

export type ReversalVerdict =
  | { kind: 'apply'; event: Reversed }
  | { kind: 'retry_later'; reason: string }
  | { kind: 'unconfirmed'; conflict: Omit<Parameters<typeof recordConflict>[1], 'vendorCode' | 'source' | 'eventId'> };

/**
 * A reversal callback → what the vendor's read of that payout confirms. Applied as it came (and
 * so moving nothing) for a reference Kasir never sent, a payout another vendor holds or one
 * already failed; otherwise applied only with the read's reason when the read shows the payout
 * Kasir stored reversed. A failed read is answered 503; any other read is recorded UNCONFIRMED.
 */
export async function confirmReversalHint(pool: Pool, gateway: Gateway, vendorCode: string, hint: Reversed): Promise<ReversalVerdict> {
  const asCame = { kind: 'apply', event: hint } as const;
  const payout = await findPayoutReference(pool, hint.reference);
  if (!payout) return asCame;
  const d = payout.kind === 'DISBURSEMENT' ? await findDisbursement(pool, payout.payout_id) : null;
  if (d && (!vendorHolds(vendorCode, { type: 'DISBURSEMENT', vendor_code: d.vendor_code }) || d.status === 'FAILED' || d.status === 'REJECTED')) return asCame;
  const stored = d?.vendor_disbursement_id ?? null;
  const read = await gateway.queryDisbursement(hint.reference, stored);
  if (read.kind !== 'ok') return { kind: 'retry_later', reason: `read of payout ${hint.reference}: ${read.reason}` };
  const r = read.value;
  const samePayout = r.vendorDisbursementId === hint.vendorDisbursementId && (stored === null || stored === r.vendorDisbursementId);
  if (r.status === 'FAILED' && r.reversed && samePayout) return { kind: 'apply', event: { ...hint, failureReason: r.failureReason ?? hint.failureReason } };
  return {
    kind: 'unconfirmed',
    conflict: {
      kind: 'UNCONFIRMED',
      recordType: payout.kind,
      recordId: payout.payout_id,
      reference: d?.ref_code ?? hint.reference,
      recordVendor: d?.vendor_code ?? null,
      kasirStatus: d?.status ?? 'SETTLEMENT',
      vendorStatus: 'REVERSED',
      detail: { why: samePayout ? 'NOT_REVERSED' : 'OTHER_PAYOUT', callback_payout: hint.vendorDisbursementId, stored_payout: stored, read_payout: r.vendorDisbursementId, read_status: r.status },
    },
  };
}
