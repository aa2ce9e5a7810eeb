// disbursement-execute and disbursement-reconcile: send a disbursement to a vendor, and find
// out what became of it.
//
// execute: PENDING → ON_PROCESS with the chosen vendor recorded as called (committed) before
// the call. The vendor accepted → its id is noted and the callback (or the reconcile poll)
// brings the final status. The vendor surely refused → the next routed vendor is tried; none
// left → FAILED, and the debit goes back. Unknown (timeout, 5xx) → never re-sent blindly:
// reconcile asks the same vendor.
// reconcile: asks the vendor of an ON_PROCESS disbursement. SUCCESS/FAILED complete it;
// PROCESSING throws so pg-boss retries with backoff; NOT_FOUND after an unknown send means the
// vendor never took it, so it is sent again to that same vendor (vendors dedupe on ref_code).
// A retried job reloads and locks the row and checks its state first, so duplicates are harmless.
import { publicBaseUrl } from '../db/config.ts';
import { completeDisbursement, moveDisbursement } from '../db/disbursements.ts';
import { claimStale, findDisbursement, lockDisbursement, noteVendorAnswer, type DisbursementRow } from '../db/disbursements.sql.ts';
import { logger } from '../db/logger.ts';
import { sendJob } from '../db/queue.ts';
import { getVendor, routeVendors, type VendorRecord } from '../db/vendors.ts';
import { gatewayOf, type WorkerContext } from './context.ts';

async function scheduleReconcile(ctx: WorkerContext, id: string, delaySeconds = ctx.config.DISBURSEMENT_RECONCILE_DELAY_SECONDS) {
  await sendJob(ctx.boss, 'disbursement-reconcile', { disbursement_id: id }, { startAfter: delaySeconds });
}

/** Claims the next vendor for a PENDING disbursement: ON_PROCESS, call pending, committed. */
async function claimVendor(ctx: WorkerContext, id: string): Promise<{ d: DisbursementRow; vendor: VendorRecord } | { done: string }> {
  return ctx.pool.transaction(async (tx) => {
    const d = await lockDisbursement(tx, { id });
    if (!d) return { done: 'missing' };
    if (d.status !== 'PENDING' && !(d.status === 'ON_PROCESS' && !d.vendor_call_pending && !d.vendor_disbursement_id)) {
      return { done: d.status };
    }
    const routed = await routeVendors(tx, ctx.sealer, d.merchant_id, d.channel);
    const vendor = routed.find((v) => !d.vendors_tried.includes(v.code));
    if (!vendor) {
      const reason = routed.length === 0 ? 'NO_VENDOR' : 'VENDOR_ERROR';
      await completeDisbursement(tx, ctx.boss, { id }, { status: 'FAILED', vendorDisbursementId: null, reason }, 'disbursement-worker');
      return { done: `failed: ${reason}` };
    }
    const moved = await moveDisbursement(
      tx,
      ctx.boss,
      d,
      { status: 'ON_PROCESS', vendorCode: vendor.code, vendorCallPending: true, triedVendor: vendor.code },
      { source: 'disbursement-worker', detail: { vendor: vendor.code } }
    );
    return { d: moved, vendor };
  });
}

/** Sends to the vendor already recorded on the row. */
async function send(ctx: WorkerContext, d: DisbursementRow, vendor: VendorRecord) {
  const answer = await gatewayOf(ctx, vendor).disburse({
    reference: d.ref_code,
    channel: d.channel,
    bankCode: d.bank_short_code,
    ewalletCode: d.ewallet_provider,
    accountNumber: d.channel === 'BANK' ? d.account_number! : d.ewallet_phone!,
    accountName: d.account_name,
    amount: d.request_amount,
    callbackUrl: `${publicBaseUrl(ctx.config)}/callbacks/${vendor.code}`,
  });
  if (answer.kind === 'ok') {
    await noteVendorAnswer(ctx.pool, d.id, { vendorDisbursementId: answer.value.vendorDisbursementId, vendorCallPending: false });
    await scheduleReconcile(ctx, d.id);
    return { sent: vendor.code };
  }
  if (answer.kind === 'unknown') {
    await scheduleReconcile(ctx, d.id, ctx.config.ORDER_RECONCILE_DELAY_SECONDS);
    return { unknown: answer.reason };
  }
  // Surely not taken: free the claim so the next routed vendor is tried.
  await noteVendorAnswer(ctx.pool, d.id, { vendorDisbursementId: null, vendorCallPending: false });
  logger.info({ disbursement: d.ref_code, vendor: vendor.code, reason: answer.reason }, 'vendor refused disbursement');
  return null;
}

export async function handleDisbursementExecute(ctx: WorkerContext, payload: { disbursement_id: string }): Promise<Record<string, unknown>> {
  const current = await findDisbursement(ctx.pool, payload.disbursement_id);
  if (!current) return { skipped: 'missing' };
  // A previous run died after claiming a vendor: ask it, never send blindly.
  if (current.status === 'ON_PROCESS' && current.vendor_call_pending) return handleDisbursementReconcile(ctx, payload);
  for (;;) {
    const claimed = await claimVendor(ctx, payload.disbursement_id);
    if ('done' in claimed) return { status: claimed.done };
    const sent = await send(ctx, claimed.d, claimed.vendor);
    if (sent) return sent;
  }
}

export async function handleDisbursementReconcile(ctx: WorkerContext, payload: { disbursement_id: string }): Promise<Record<string, unknown>> {
  const d = await findDisbursement(ctx.pool, payload.disbursement_id);
  if (!d || d.status !== 'ON_PROCESS' || !d.vendor_code) return { skipped: d?.status ?? 'missing' };
  const vendor = await getVendor(ctx.pool, ctx.sealer, d.vendor_code);
  if (!vendor) throw new Error(`vendor ${d.vendor_code} of ${d.ref_code} is not configured`);
  const answer = await gatewayOf(ctx, vendor).queryDisbursement(d.ref_code);
  if (answer.kind !== 'ok') throw new Error(`query at ${vendor.code} failed: ${answer.reason}`);
  const status = answer.value;
  if (status.status === 'NOT_FOUND') {
    if (!d.vendor_call_pending && d.vendor_disbursement_id) throw new Error(`${vendor.code} lost ${d.ref_code} after accepting it`);
    return (await send(ctx, d, vendor)) ?? handleDisbursementExecute(ctx, payload);
  }
  if (status.status === 'PROCESSING') {
    // Also marks the row as heard of: the stale sweep leaves live chains alone.
    await noteVendorAnswer(ctx.pool, d.id, { vendorDisbursementId: status.vendorDisbursementId, vendorCallPending: false });
    throw new Error(`${d.ref_code} still processing at ${vendor.code}`);
  }
  const outcome =
    status.status === 'SUCCESS'
      ? { status: 'SUCCESS' as const, vendorDisbursementId: status.vendorDisbursementId }
      : { status: 'FAILED' as const, vendorDisbursementId: status.vendorDisbursementId, reason: status.failureReason ?? 'FAILED' };
  const result = await ctx.pool.transaction((tx) =>
    completeDisbursement(tx, ctx.boss, { id: d.id }, outcome, `reconcile:${vendor.code}`),
  );
  return { result, status: status.status };
}

/** Longer than any healthy chain stays silent (the reconcile backoff tops out at 30 min). */
const STALE_SECONDS = 3600;

/**
 * Restarts the job chain of disbursements nobody has worked on for an hour (their jobs
 * exhausted retries while a vendor was down, or were lost): PENDING ones are executed again,
 * ON_PROCESS ones reconciled. Run from the scheduler's sweep.
 */
export async function requeueStaleDisbursements(ctx: WorkerContext): Promise<number> {
  const stale = await claimStale(ctx.pool, STALE_SECONDS, 100);
  for (const d of stale) {
    await sendJob(ctx.boss, d.status === 'PENDING' ? 'disbursement-execute' : 'disbursement-reconcile', { disbursement_id: d.id });
  }
  return stale.length;
}
