// order-reconcile: asks the vendor what became of an order, and applies what it learns.
// - CREATING with a pending vendor (create outcome unknown): the vendor has our QR → PENDING
//   (and PAID if already paid); the vendor never accepted it → the attempt FAILS, freeing the
//   merchant_order_id for the merchant's retry; still no answer → throw, pg-boss retries with
//   backoff.
// - PENDING / EXPIRED (fetch-status, or a missed callback): a payment the vendor reports is
//   applied exactly as a callback would be.
// Every run ends with a notification, so an API request waiting on fetch-status wakes.
import { announceUnresolved, applyPayment, failOrder } from '../db/orders.ts';
import { findOrderById, type OrderRow } from '../db/orders.sql.ts';
import { getVendor } from '../db/vendors.ts';
import type { WorkerContext } from './context.ts';
import { gatewayOf } from './gateway.ts';
import { resolveWithVendor } from './order-create.ts';

async function reconcileCreating(ctx: WorkerContext, order: OrderRow) {
  if (!order.pending_vendor) return { skipped: 'no vendor call outstanding' };
  const resolved = await resolveWithVendor(ctx, order, order.pending_vendor);
  if (resolved === 'unknown') throw new Error(`vendor ${order.pending_vendor} still cannot say what became of ${order.ref_code}`);
  if (resolved === 'absent') {
    await failOrder(ctx.pool, order.id, 'VENDOR_ERROR', { reason: `vendor ${order.pending_vendor} has no record of the create` });
    return { failed: 'absent at vendor' };
  }
  const confirmed = await findOrderById(ctx.pool, order.id);
  return confirmed ? reconcilePayment(ctx, confirmed) : { confirmed: true };
}

async function reconcilePayment(ctx: WorkerContext, order: OrderRow) {
  if (order.status !== 'PENDING' && order.status !== 'EXPIRED') return { status: order.status };
  if (!order.vendor_code) return { status: order.status };
  const vendor = await getVendor(ctx.pool, ctx.sealer, order.vendor_code);
  if (!vendor) return { status: order.status };
  const answer = await gatewayOf(ctx, vendor).queryQris(order.ref_code, order.vendor_order_id);
  if (answer.kind !== 'ok') throw new Error(`query at ${vendor.code} failed: ${answer.reason}`);
  const status = answer.value;
  if (status.status !== 'PAID' || !status.paidAt || status.amount === null) return { status: order.status, vendor_status: status.status };
  // The read's amount, not the order's: applyPayment credits it only when the two are equal.
  const result = await ctx.pool.transaction((tx) =>
    applyPayment(
      tx,
      ctx.boss,
      { refCode: order.ref_code, amount: status.amount!, paidAt: status.paidAt!, rrn: status.rrn, vendorOrderId: status.vendorOrderId },
      { vendor: vendor.code, via: 'reconcile' },
    ),
  );
  return { payment: result };
}

export async function handleOrderReconcile(ctx: WorkerContext, payload: { order_id: string }) {
  try {
    const order = await findOrderById(ctx.pool, payload.order_id);
    if (!order) return { skipped: 'missing' };
    return order.status === 'CREATING' ? await reconcileCreating(ctx, order) : await reconcilePayment(ctx, order);
  } finally {
    await announceUnresolved(ctx.pool, payload.order_id);
  }
}
