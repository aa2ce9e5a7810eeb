// settlement-payout and settlement-reconcile (disbursement group): pay a settlement out to the
// merchant's bank account through the vendor layer, and find out what became of it. The same
// shape as workers/disbursement-execute.ts.
//
// payout: PENDING → PROCESSING with the chosen vendor recorded as called (committed) before the
// call. Accepted → its id is noted and the callback (or the reconcile poll) brings PAID or
// FAILED. Surely refused → the next routed BANK vendor; none left → FAILED (the money stays in
// SETTLEMENTS_IN_FLIGHT for an operator). Unknown (timeout, 5xx) → never re-sent blindly:
// reconcile asks the same vendor by the payout reference.
// reconcile: SUCCESS/FAILED complete it; PROCESSING throws so pg-boss retries with backoff;
// NOT_FOUND after an unknown send means the vendor never took it: sent again to that vendor.
import { publicBaseUrl } from '../db/config.ts';
import { logger } from '../db/logger.ts';
import { sendJob } from '../db/queue.ts';
import { completeSettlement, moveSettlement, payoutReference } from '../db/settlements.ts';
import { claimStale, findSettlement, lockSettlement, noteVendorAnswer, type SettlementRow } from '../db/settlements.sql.ts';
import { getVendor, routeVendors, type VendorRecord } from '../db/vendors.ts';
import { gatewayOf, type WorkerContext } from './context.ts';

async function scheduleReconcile(ctx: WorkerContext, id: string, delaySeconds = ctx.config.DISBURSEMENT_RECONCILE_DELAY_SECONDS) {
  await sendJob(ctx.boss, 'settlement-reconcile', { settlement_id: id }, { startAfter: delaySeconds });
}

/** Claims the next vendor for a PENDING settlement: PROCESSING, call pending, committed. */
async function claimVendor(ctx: WorkerContext, id: string): Promise<{ s: SettlementRow; vendor: VendorRecord } | { done: string }> {
  return ctx.pool.transaction(async (tx) => {
    const s = await lockSettlement(tx, { id });
    if (!s) return { done: 'missing' };
    if (s.status !== 'PENDING' && !(s.status === 'PROCESSING' && !s.vendor_call_pending && !s.vendor_disbursement_id)) {
      return { done: s.status };
    }
    const routed = await routeVendors(tx, ctx.sealer, s.merchant_id, 'BANK');
    const vendor = routed.find((v) => !s.vendors_tried.includes(v.code));
    if (!vendor) {
      const reason = routed.length === 0 ? 'NO_VENDOR' : 'VENDOR_ERROR';
      await moveSettlement(tx, ctx.boss, s, { status: 'FAILED', vendorCallPending: false, failureReason: reason });
      return { done: `failed: ${reason}` };
    }
    const moved = await moveSettlement(
      tx,
      ctx.boss,
      s,
      { status: 'PROCESSING', vendorCode: vendor.code, vendorCallPending: true, triedVendor: vendor.code }
    );
    return { s: moved, vendor };
  });
}

/** Sends to the vendor already recorded on the row. */
async function send(ctx: WorkerContext, s: SettlementRow, vendor: VendorRecord) {
  const answer = await gatewayOf(ctx, vendor).disburse({
    reference: payoutReference(s),
    channel: 'BANK',
    bankCode: s.bank_short_code,
    ewalletCode: null,
    accountNumber: s.account_number,
    accountName: s.account_name,
    amount: s.net_payout,
    callbackUrl: `${publicBaseUrl(ctx.config)}/callbacks/${vendor.code}`,
  });
  if (answer.kind === 'ok') {
    await noteVendorAnswer(ctx.pool, s.id, { vendorDisbursementId: answer.value.vendorDisbursementId, vendorCallPending: false });
    await scheduleReconcile(ctx, s.id);
    return { sent: vendor.code };
  }
  if (answer.kind === 'unknown') {
    await scheduleReconcile(ctx, s.id, ctx.config.ORDER_RECONCILE_DELAY_SECONDS);
    return { unknown: answer.reason };
  }
  // Surely not taken: free the claim so the next routed vendor is tried.
  await noteVendorAnswer(ctx.pool, s.id, { vendorDisbursementId: null, vendorCallPending: false });
  logger.info({ settlement: s.ref_code, vendor: vendor.code, reason: answer.reason }, 'vendor refused settlement payout');
  return null;
}

export async function handleSettlementPayout(ctx: WorkerContext, payload: { settlement_id: string }): Promise<Record<string, unknown>> {
  const current = await findSettlement(ctx.pool, payload.settlement_id);
  if (!current) return { skipped: 'missing' };
  // A previous run died after claiming a vendor: ask it, never send blindly.
  if (current.status === 'PROCESSING' && current.vendor_call_pending) return handleSettlementReconcile(ctx, payload);
  for (;;) {
    const claimed = await claimVendor(ctx, payload.settlement_id);
    if ('done' in claimed) return { status: claimed.done };
    const sent = await send(ctx, claimed.s, claimed.vendor);
    if (sent) return sent;
  }
}

export async function handleSettlementReconcile(ctx: WorkerContext, payload: { settlement_id: string }): Promise<Record<string, unknown>> {
  const s = await findSettlement(ctx.pool, payload.settlement_id);
  if (!s || s.status !== 'PROCESSING' || !s.vendor_code) return { skipped: s?.status ?? 'missing' };
  const vendor = await getVendor(ctx.pool, ctx.sealer, s.vendor_code);
  if (!vendor) throw new Error(`vendor ${s.vendor_code} of ${s.ref_code} is not configured`);
  const answer = await gatewayOf(ctx, vendor).queryDisbursement(payoutReference(s));
  if (answer.kind !== 'ok') throw new Error(`query at ${vendor.code} failed: ${answer.reason}`);
  const status = answer.value;
  if (status.status === 'NOT_FOUND') {
    if (!s.vendor_call_pending && s.vendor_disbursement_id) throw new Error(`${vendor.code} lost ${payoutReference(s)} after accepting it`);
    return (await send(ctx, s, vendor)) ?? handleSettlementPayout(ctx, payload);
  }
  if (status.status === 'PROCESSING') {
    // Also marks the row as heard of: the stale sweep leaves live chains alone.
    await noteVendorAnswer(ctx.pool, s.id, { vendorDisbursementId: status.vendorDisbursementId, vendorCallPending: false });
    throw new Error(`${payoutReference(s)} still processing at ${vendor.code}`);
  }
  const outcome =
    status.status === 'SUCCESS'
      ? { status: 'SUCCESS' as const, vendorDisbursementId: status.vendorDisbursementId }
      : { status: 'FAILED' as const, vendorDisbursementId: status.vendorDisbursementId, reason: status.failureReason ?? 'FAILED' };
  // By reference (ref_code and attempt): an answer about an earlier attempt completes nothing.
  const result = await ctx.pool.transaction((tx) =>
    completeSettlement(tx, ctx.boss, { reference: payoutReference(s) }, outcome, `reconcile:${vendor.code}`),
  );
  return { result, status: status.status };
}

/** Longer than any healthy chain stays silent (the reconcile backoff tops out at 30 min). */
const STALE_SECONDS = 3600;

/**
 * Restarts the job chain of settlements nobody has worked on for an hour (jobs exhausted while
 * a vendor was down, or lost): PENDING ones are paid out again, PROCESSING ones reconciled.
 * Run from the scheduler's sweep.
 */
export async function requeueStaleSettlements(ctx: WorkerContext): Promise<number> {
  const stale = await claimStale(ctx.pool, STALE_SECONDS, 100);
  for (const s of stale) {
    await sendJob(ctx.boss, s.status === 'PENDING' ? 'settlement-payout' : 'settlement-reconcile', { settlement_id: s.id });
  }
  return stale.length;
}
