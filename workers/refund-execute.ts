// refund-execute: sends an accepted refund to the vendor that took the order's payment, and
// follows it to its final word. It never goes to another vendor: only the one holding the
// payment can refund it.
//
// The rule on unclear answers (gateways/gateway.ts) is kept here:
// - Before the first call, the refund is marked sent (sent_at), committed. From then on every
//   attempt reads the vendor first (queryRefund, with the vendor's id from an earlier answer)
//   and sends again only when that read proves the vendor never took it (NOT_FOUND).
// - SUCCEEDED or FAILED, from the send or the read, completes it (db/refunds.ts completeRefund
//   moves the money); a definite refusal of the send is FAILED. PENDING, an unknown outcome or a
//   read that did not work throws, so pg-boss retries with backoff.
// - A vendor with no read that can settle it (unresolvable) stops the chain: the refund waits,
//   PENDING with unresolved_at, for an operator (ops refunds:settle / refunds:resend); its
//   vendor's callback still completes it if it comes.
import { logger } from '../db/logger.ts';
import { completeRefund } from '../db/refunds.ts';
import { claimStaleRefunds, findRefund, markRefundSent, markRefundUnresolved, noteRefundPending, type RefundRow } from '../db/refunds.sql.ts';
import { findOrderById } from '../db/orders.sql.ts';
import { sendJob } from '../db/queue.ts';
import { getVendor, type VendorRecord } from '../db/vendors.ts';
import type { Speaker } from '../db/vendor-binding.ts';
import type { Outcome, RefundInput } from '../gateways/gateway.ts';
import type { WorkerContext } from './context.ts';
import { gatewayOf } from './gateway.ts';

export async function handleRefundExecute(ctx: WorkerContext, payload: { refund_id: string }) {
  const refund = await findRefund(ctx.pool, payload.refund_id);
  if (!refund || refund.status !== 'PENDING') return { skipped: refund?.status ?? 'missing' };
  if (refund.unresolved_at) return { skipped: 'unresolved: waiting for an operator' };
  const order = await findOrderById(ctx.pool, refund.order_id);
  const complete = (outcome: Parameters<typeof completeRefund>[3], speaker: Speaker) => completeRefund(ctx.pool, ctx.boss, refund.id, outcome, speaker);
  if (!order?.vendor_code || !order.vendor_order_id) return { result: await complete({ status: 'FAILED', vendorRefundId: null, reason: 'NO_VENDOR_PAYMENT' }, { kasir: 'vendor-worker' }) };
  const vendor = await getVendor(ctx.pool, ctx.sealer, order.vendor_code);
  if (!vendor) throw new Error(`vendor ${order.vendor_code} of ${order.ref_code} is not configured`);
  const gateway = gatewayOf(ctx, vendor);
  const input: RefundInput = { reference: order.ref_code, vendorOrderId: order.vendor_order_id, refundReference: refund.ref_code, amount: refund.amount };

  if (refund.sent_at) {
    // Sent before: what the vendor holds decides; only a proven absence lets it go out again.
    const read = await gateway.queryRefund({ ...input, vendorRefundId: refund.vendor_refund_id, firstSentAt: refund.sent_at });
    if (read.kind !== 'ok') return unsettled(ctx, refund, vendor, read, 'read');
    const { status, vendorRefundId, failureReason } = read.value;
    if (status === 'SUCCEEDED') return { result: await complete({ status, vendorRefundId }, { vendor: vendor.code, via: 'reconcile' }) };
    if (status === 'FAILED') return { result: await complete({ status, vendorRefundId, reason: failureReason ?? 'REFUSED_BY_VENDOR' }, { vendor: vendor.code, via: 'reconcile' }) };
    if (status === 'PENDING') {
      await noteRefundPending(ctx.pool, refund.id, vendorRefundId);
      throw new Error(`refund ${refund.ref_code} still pending at ${vendor.code}`);
    }
    logger.info({ refund: refund.ref_code, vendor: vendor.code }, 'the vendor proves it never took this refund: sending it again');
  }
  if (!(await markRefundSent(ctx.pool, refund.id, vendor.code))) throw new Error(`vendor ${vendor.code} of ${order.ref_code} was removed: the refund is not sent`);

  const answer = await gateway.refund({ ...input, resent: refund.sent_at !== null });
  if (answer.kind === 'failed') return { result: await complete({ status: 'FAILED', vendorRefundId: null, reason: answer.reason }, { kasir: 'vendor-worker' }) };
  if (answer.kind === 'unknown') return unsettled(ctx, refund, vendor, answer, 'send');
  const { status, vendorRefundId } = answer.value;
  if (status === 'PENDING') {
    await noteRefundPending(ctx.pool, refund.id, vendorRefundId);
    throw new Error(`refund ${refund.ref_code} still pending at ${vendor.code}`);
  }
  const outcome = status === 'SUCCEEDED' ? { status, vendorRefundId } : { status, vendorRefundId, reason: 'REFUSED_BY_VENDOR' };
  return { result: await complete(outcome, { vendor: vendor.code, via: 'vendor' }) };
}

/** An answer that settles nothing: retried later, or parked for an operator when no read can settle it. */
async function unsettled(ctx: WorkerContext, refund: RefundRow, vendor: VendorRecord, answer: Exclude<Outcome<unknown>, { kind: 'ok' }>, what: 'read' | 'send') {
  if (answer.kind === 'unknown' && answer.unresolvable) {
    await markRefundUnresolved(ctx.pool, refund.id, answer.reason);
    logger.error({ refund: refund.ref_code, vendor: vendor.code, reason: answer.reason }, 'refund unresolved: waiting for an operator (ops unresolved:list)');
    return { unresolved: answer.reason };
  }
  throw new Error(`refund ${refund.ref_code} at ${vendor.code}, ${what}: ${answer.reason}`);
}

/** Longer than the retry backoff ever waits between attempts. */
const STALE_SECONDS = 3600;

/** Restarts refunds whose job chain went quiet for an hour (retries exhausted, job lost); never unresolved ones. */
export async function requeueStaleRefunds(ctx: WorkerContext): Promise<number> {
  const stale = await claimStaleRefunds(ctx.pool, STALE_SECONDS, 100);
  for (const id of stale) await sendJob(ctx.boss, 'refund-execute', { refund_id: id });
  return stale.length;
}
