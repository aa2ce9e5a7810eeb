// refund-execute: sends an accepted refund to the vendor that took the order's payment.
// SUCCEEDED or a definite refusal completes it (db/refunds.ts completeRefund moves the money);
// PENDING at the vendor or an unknown outcome throws, so pg-boss retries with backoff, and the
// retry re-sends with the same refund reference, which the vendor dedupes: the vendor
// interface has no refund query, so this idempotent re-send is the reconciliation. It never
// goes to another vendor: only the one holding the payment can refund it.
import { completeRefund } from '../db/refunds.ts';
import { claimStaleRefunds, findRefund, noteRefundPending } from '../db/refunds.sql.ts';
import { findOrderById } from '../db/orders.sql.ts';
import { sendJob } from '../db/queue.ts';
import { getVendor } from '../db/vendors.ts';
import type { WorkerContext } from './context.ts';
import { gatewayOf } from './gateway.ts';

export async function handleRefundExecute(ctx: WorkerContext, payload: { refund_id: string }) {
  const refund = await findRefund(ctx.pool, payload.refund_id);
  if (!refund || refund.status !== 'PENDING') return { skipped: refund?.status ?? 'missing' };
  const order = await findOrderById(ctx.pool, refund.order_id);
  const fail = (reason: string) =>
    completeRefund(ctx.pool, ctx.boss, refund.id, { status: 'FAILED', vendorRefundId: null, reason }, { kasir: 'vendor-worker' });
  if (!order?.vendor_code || !order.vendor_order_id) return { result: await fail('NO_VENDOR_PAYMENT') };
  const vendor = await getVendor(ctx.pool, ctx.sealer, order.vendor_code);
  if (!vendor) throw new Error(`vendor ${order.vendor_code} of ${order.ref_code} is not configured`);
  const answer = await gatewayOf(ctx, vendor).refund({
    reference: order.ref_code,
    vendorOrderId: order.vendor_order_id,
    refundReference: refund.ref_code,
    amount: refund.amount,
  });
  if (answer.kind === 'unknown') throw new Error(`refund ${refund.ref_code} at ${vendor.code}: ${answer.reason}`);
  if (answer.kind === 'failed') return { result: await fail(answer.reason) };
  const { status, vendorRefundId } = answer.value;
  if (status === 'PENDING') {
    await noteRefundPending(ctx.pool, refund.id, vendorRefundId);
    throw new Error(`refund ${refund.ref_code} still pending at ${vendor.code}`);
  }
  const outcome = status === 'SUCCEEDED' ? { status, vendorRefundId } : { status, vendorRefundId, reason: 'REFUSED_BY_VENDOR' };
  return { result: await completeRefund(ctx.pool, ctx.boss, refund.id, outcome, { vendor: vendor.code, via: 'vendor' }) };
}

/** Longer than the retry backoff ever waits between attempts. */
const STALE_SECONDS = 3600;

/** Restarts refunds whose job chain went quiet for an hour (retries exhausted, job lost). */
export async function requeueStaleRefunds(ctx: WorkerContext): Promise<number> {
  const stale = await claimStaleRefunds(ctx.pool, STALE_SECONDS, 100);
  for (const id of stale) await sendJob(ctx.boss, 'refund-execute', { refund_id: id });
  return stale.length;
}
