// The one payout state machine: money leaving Kasir to a bank account or e-wallet through a
// vendor. Disbursements and settlement payouts run it; what differs between them is data, in
// a PayoutKind (which rows, queues, reference, destination, and the data-module functions
// that move the row, post the ledger and write the webhook), never a second copy of the chain.
//
// execute: the row is claimed for the next routed vendor — moved in flight with that vendor
// recorded as called (vendor_call_pending), committed — before the call. Accepted: its id is
// noted and the callback (or the reconcile poll) brings the final status. Surely refused: the
// next routed vendor; none left: the kind's no-vendor outcome. Unknown (timeout, 5xx): never
// re-sent blindly: reconcile asks that same vendor by our reference.
// reconcile: SUCCESS/FAILED complete it; PROCESSING throws NotYet so pg-boss retries with backoff;
// NOT_FOUND after an unknown send means the vendor proved it never took it: sent again to that
// vendor, under the same reference (gateways/gateway.ts, the rule on unclear answers); NOT_FOUND
// after the vendor accepted it means the vendor lost it: unresolved, for an operator. A retried job reloads and locks the row and checks its
// state first, so duplicates are harmless.
// stale sweep: chains nobody worked on for an hour (jobs exhausted while a vendor was down,
// or lost) are restarted: claimable rows executed again, in-flight ones reconciled.
// unresolved: a vendor whose answer no read can settle (gateways/gateway.ts, the rule) stops the
// chain; the row stays in flight with unresolved_at, never claimed, reconciled or swept again,
// until an operator settles it (ops payouts:settle) or the vendor's callback does.
import { publicBaseUrl } from '../db/config.ts';
import { completeDisbursement, moveDisbursement } from '../db/disbursements.ts';
import * as disbursements from '../db/disbursements.sql.ts';
import type { DisburseInput } from '../gateways/gateway.ts';
import { logger } from '../db/logger.ts';
import type { PayoutCompletion } from '../db/payout-outcome.ts';
import { payoutStatements, recordPayoutReference, type PayoutKindName } from '../db/payouts.ts';
import type { Db } from '../db/pool.ts';
import { sendJob } from '../db/queue.ts';
import type { Speaker } from '../db/vendor-binding.ts';
import { completeSettlement, moveSettlement, payoutReference } from '../db/settlements.ts';
import * as settlements from '../db/settlements.sql.ts';
import { chooseVendors, currentScores, routingPolicy } from '../db/routing.ts';
import { getVendor, holdUsableVendor, routeOf, type RouteMethod, type VendorRecord } from '../db/vendors.ts';
import type { WorkerContext } from './context.ts';
import { NotYet } from './work.ts';
import { gatewayOf } from './gateway.ts';

/** The columns the state machine reads, whatever the table. */
interface PayoutRow {
  id: string;
  ref_code: string;
  merchant_id: string;
  status: string;
  vendor_code: string | null;
  vendor_call_pending: boolean;
  vendor_disbursement_id: string | null;
  vendors_tried: string[];
  unresolved_at: Date | null;
}

interface PayoutKind<R extends PayoutRow> {
  /** For logs and results. */
  noun: string;
  /** Recorded with each reference sent, for callbacks (db/payouts.ts). */
  kind: PayoutKindName;
  executeQueue: 'disbursement-execute' | 'settlement-payout';
  reconcileQueue: 'disbursement-reconcile' | 'settlement-reconcile';
  job(id: string): { disbursement_id: string } | { settlement_id: string };
  /** The state a claimed row is in while the vendor has it. */
  inFlight: string;
  find(db: Db, id: string): Promise<R | null>;
  lock(tx: Db, id: string): Promise<R | null>;
  noteVendorAnswer(db: Db, id: string, answer: { vendorDisbursementId: string | null; vendorCallPending: boolean }): Promise<unknown>;
  markUnresolved(db: Db, id: string, reason: string): Promise<unknown>;
  claimStale(db: Db, olderThanSeconds: number, limit: number): Promise<readonly { id: string; status: string }[]>;
  method(row: R): RouteMethod;
  /** What the vendor is asked to pay, under which of our references. */
  order(row: R): Omit<DisburseInput, 'callbackUrl'>;
  /** The bank or e-wallet code paid to: adaptive routing judges vendors per destination when it can. */
  destination(row: R): string | null;
  claim(tx: Db, ctx: WorkerContext, row: R, vendorCode: string): Promise<R>;
  /** No routed vendor is left (or none is routed). */
  noVendor(tx: Db, ctx: WorkerContext, row: R, reason: 'NO_VENDOR' | 'VENDOR_ERROR' | 'ACCOUNT_NAME_MISMATCH'): Promise<unknown>;
  complete(tx: Db, ctx: WorkerContext, row: R, outcome: PayoutCompletion, speaker: Speaker): Promise<unknown>;
}

const disbursementKind: PayoutKind<disbursements.DisbursementRow> = {
  noun: 'disbursement',
  kind: 'DISBURSEMENT',
  executeQueue: 'disbursement-execute',
  reconcileQueue: 'disbursement-reconcile',
  job: (id) => ({ disbursement_id: id }),
  inFlight: 'ON_PROCESS',
  find: disbursements.findDisbursement,
  lock: (tx, id) => disbursements.lockDisbursement(tx, { id }),
  ...payoutStatements('disbursements', ['PENDING', 'ON_PROCESS']),
  method: (d) => d.channel,
  order: (d) => ({
    reference: d.ref_code,
    channel: d.channel,
    bankCode: d.bank_short_code,
    ewalletCode: d.ewallet_provider,
    accountNumber: d.channel === 'BANK' ? d.account_number! : d.ewallet_phone!,
    accountName: d.account_name,
    amount: d.request_amount,
    acceptNameMismatch: d.accept_name_mismatch,
  }),
  destination: (d) => (d.channel === 'BANK' ? d.bank_short_code : d.ewallet_provider),
  claim: (tx, ctx, d, vendorCode) =>
    moveDisbursement(tx, ctx.boss, d, { status: 'ON_PROCESS', vendorCode, vendorCallPending: true, triedVendor: vendorCode }, {
      source: 'disbursement-worker',
      detail: { vendor: vendorCode },
    }),
  // FAILED returns the debit to the wallet.
  noVendor: (tx, ctx, d, reason) => completeDisbursement(tx, ctx.boss, { id: d.id }, { status: 'FAILED', vendorDisbursementId: null, reason }, { kasir: 'disbursement-worker' }),
  complete: (tx, ctx, d, outcome, speaker) => completeDisbursement(tx, ctx.boss, { id: d.id }, outcome, speaker),
};

const settlementKind: PayoutKind<settlements.SettlementRow> = {
  noun: 'settlement payout',
  kind: 'SETTLEMENT',
  executeQueue: 'settlement-payout',
  reconcileQueue: 'settlement-reconcile',
  job: (id) => ({ settlement_id: id }),
  inFlight: 'PROCESSING',
  find: settlements.findSettlement,
  lock: (tx, id) => settlements.lockSettlement(tx, { id }),
  ...payoutStatements('settlements', ['PENDING', 'PROCESSING']),
  method: () => 'BANK',
  // A retried settlement is a new attempt under a new reference (ref_code and attempt), so an
  // answer about an earlier attempt completes nothing.
  order: (s) => ({
    reference: payoutReference(s),
    channel: 'BANK',
    bankCode: s.bank_short_code,
    ewalletCode: null,
    accountNumber: s.account_number,
    accountName: s.account_name,
    amount: s.net_payout,
  }),
  destination: (s) => s.bank_short_code,
  claim: (tx, ctx, s, vendorCode) => moveSettlement(tx, ctx.boss, s, { status: 'PROCESSING', vendorCode, vendorCallPending: true, triedVendor: vendorCode }),
  // FAILED keeps the money in SETTLEMENTS_IN_FLIGHT for an operator (settlements:retry or cancel).
  noVendor: (tx, ctx, s, reason) => moveSettlement(tx, ctx.boss, s, { status: 'FAILED', vendorCallPending: false, failureReason: reason }),
  complete: (tx, ctx, s, outcome, speaker) => completeSettlement(tx, ctx.boss, { reference: payoutReference(s) }, outcome, speaker),
};

/** A row a vendor may be claimed for: new, or in flight after a definite refusal freed it. */
function claimable<R extends PayoutRow>(kind: PayoutKind<R>, row: R): boolean {
  if (row.unresolved_at) return false;
  return row.status === 'PENDING' || (row.status === kind.inFlight && !row.vendor_call_pending && !row.vendor_disbursement_id);
}

/** Stops the chain of a payout no read at its vendor can settle: it waits for an operator. */
async function park<R extends PayoutRow>(ctx: WorkerContext, kind: PayoutKind<R>, row: R, vendor: VendorRecord, reason: string) {
  await kind.markUnresolved(ctx.pool, row.id, reason);
  logger.error({ reference: kind.order(row).reference, vendor: vendor.code, reason }, `${kind.noun} unresolved: waiting for an operator (ops unresolved:list)`);
  return { unresolved: reason };
}

async function scheduleReconcile<R extends PayoutRow>(ctx: WorkerContext, kind: PayoutKind<R>, id: string, delaySeconds: number) {
  await sendJob(ctx.boss, kind.reconcileQueue, kind.job(id) as never, { startAfter: delaySeconds });
}

/** Claims the next routed vendor for a claimable row: in flight, call pending, committed. */
async function claimVendor<R extends PayoutRow>(ctx: WorkerContext, kind: PayoutKind<R>, id: string): Promise<{ row: R; vendor: VendorRecord } | { done: string }> {
  // An adaptive route puts vendors doing badly now last (db/routing.ts). The scores come from
  // memory, read outside the transaction: a refresh is a statement of its own on the pool.
  const policy = routingPolicy(ctx.config);
  const scores = await currentScores(ctx.pool, policy);
  return ctx.pool.transaction(async (tx) => {
    const row = await kind.lock(tx, id);
    if (!row) return { done: 'missing' };
    if (!claimable(kind, row)) return { done: row.status };
    const route = await routeOf(tx, ctx.sealer, row.merchant_id, kind.method(row));
    const routed = route.mode === 'adaptive' ? chooseVendors(route, kind.method(row), kind.destination(row), scores, policy).vendors : route.vendors;
    let vendor: VendorRecord | undefined;
    for (const candidate of routed) {
      if (row.vendors_tried.includes(candidate.code)) continue;
      // Disabled or removed since the routes were read: handed nothing, the next one is tried.
      if (await holdUsableVendor(tx, candidate.code)) {
        vendor = candidate;
        break;
      }
    }
    if (!vendor) {
      const reason = routed.length === 0 ? 'NO_VENDOR' : 'VENDOR_ERROR';
      await kind.noVendor(tx, ctx, row, reason);
      return { done: `failed: ${reason}` };
    }
    const claimed = await kind.claim(tx, ctx, row, vendor.code);
    await recordPayoutReference(tx, kind.order(claimed).reference, kind.kind, claimed.id, vendor.code);
    return { row: claimed, vendor };
  });
}

/** Sends to the vendor already recorded on the row; null when it surely refused. */
async function send<R extends PayoutRow>(ctx: WorkerContext, kind: PayoutKind<R>, row: R, vendor: VendorRecord) {
  const order = kind.order(row);
  const answer = await gatewayOf(ctx, vendor).disburse({ ...order, callbackUrl: `${publicBaseUrl(ctx.config)}/callbacks/${vendor.code}` });
  if (answer.kind === 'ok') {
    await kind.noteVendorAnswer(ctx.pool, row.id, { vendorDisbursementId: answer.value.vendorDisbursementId, vendorCallPending: false });
    await scheduleReconcile(ctx, kind, row.id, ctx.config.DISBURSEMENT_RECONCILE_DELAY_SECONDS);
    return { sent: vendor.code };
  }
  if (answer.kind === 'unknown') {
    if (answer.unresolvable) return park(ctx, kind, row, vendor, answer.reason);
    await scheduleReconcile(ctx, kind, row.id, ctx.config.ORDER_RECONCILE_DELAY_SECONDS);
    return { unknown: answer.reason };
  }
  if (answer.payoutRefusal) {
    // The payout itself is refused (another holder's account): no other vendor may pay it.
    logger.info({ reference: order.reference, vendor: vendor.code, reason: answer.reason }, `${kind.noun} refused: ${answer.payoutRefusal}`);
    const result = await ctx.pool.transaction(async (tx) => {
      const locked = await kind.lock(tx, row.id);
      return locked && locked.status === kind.inFlight ? kind.noVendor(tx, ctx, locked, answer.payoutRefusal!) : 'already moved';
    });
    return { refused: answer.payoutRefusal, result };
  }
  // Surely not taken: free the claim so the next routed vendor is tried.
  await kind.noteVendorAnswer(ctx.pool, row.id, { vendorDisbursementId: null, vendorCallPending: false });
  logger.info({ reference: order.reference, vendor: vendor.code, reason: answer.reason }, `vendor refused ${kind.noun}`);
  return null;
}

async function execute<R extends PayoutRow>(ctx: WorkerContext, kind: PayoutKind<R>, id: string): Promise<Record<string, unknown>> {
  const current = await kind.find(ctx.pool, id);
  if (!current) return { skipped: 'missing' };
  if (current.unresolved_at) return { skipped: 'unresolved: waiting for an operator' };
  // A previous run died after claiming a vendor: ask it, never send blindly.
  if (current.status === kind.inFlight && current.vendor_call_pending) return reconcile(ctx, kind, id);
  for (;;) {
    const claimed = await claimVendor(ctx, kind, id);
    if ('done' in claimed) return { status: claimed.done };
    const sent = await send(ctx, kind, claimed.row, claimed.vendor);
    if (sent) return sent;
  }
}

async function reconcile<R extends PayoutRow>(ctx: WorkerContext, kind: PayoutKind<R>, id: string): Promise<Record<string, unknown>> {
  const row = await kind.find(ctx.pool, id);
  if (!row || row.status !== kind.inFlight || !row.vendor_code) return { skipped: row?.status ?? 'missing' };
  if (row.unresolved_at) return { skipped: 'unresolved: waiting for an operator' };
  const vendor = await getVendor(ctx.pool, ctx.sealer, row.vendor_code);
  if (!vendor) throw new Error(`vendor ${row.vendor_code} of ${row.ref_code} is not configured`);
  const { reference } = kind.order(row);
  const answer = await gatewayOf(ctx, vendor).queryDisbursement(reference, row.vendor_disbursement_id);
  if (answer.kind === 'unknown' && answer.unresolvable) return park(ctx, kind, row, vendor, answer.reason);
  if (answer.kind !== 'ok') throw new Error(`query at ${vendor.code} failed: ${answer.reason}`);
  const status = answer.value;
  if (status.status === 'NOT_FOUND') {
    // Lost: the vendor accepted it (its id is noted) and now has no such payout. Sending again
    // could pay twice, and no later read can say more than this one: it waits for an operator
    // from now on (ops unresolved:list), its money held; a callback that still comes completes it.
    if (!row.vendor_call_pending && row.vendor_disbursement_id) {
      return park(ctx, kind, row, vendor, `LOST: ${vendor.code} accepted it as ${row.vendor_disbursement_id}, then answered that it has no such payout`);
    }
    return (await send(ctx, kind, row, vendor)) ?? execute(ctx, kind, id);
  }
  if (status.status === 'PROCESSING') {
    // Also marks the row as heard of: the stale sweep leaves live chains alone.
    await kind.noteVendorAnswer(ctx.pool, row.id, { vendorDisbursementId: status.vendorDisbursementId, vendorCallPending: false });
    throw new NotYet(`${reference} still processing at ${vendor.code}`);
  }
  const outcome: PayoutCompletion =
    status.status === 'SUCCESS'
      ? { status: 'SUCCESS', vendorDisbursementId: status.vendorDisbursementId }
      : { status: 'FAILED', vendorDisbursementId: status.vendorDisbursementId, reason: status.failureReason ?? 'FAILED' };
  const result = await ctx.pool.transaction((tx) => kind.complete(tx, ctx, row, outcome, { vendor: vendor.code, via: 'reconcile' }));
  return { result, status: status.status };
}

/** Longer than any healthy chain stays silent (the reconcile backoff tops out at 30 min). */
const STALE_SECONDS = 3600;

async function requeueStale<R extends PayoutRow>(ctx: WorkerContext, kind: PayoutKind<R>): Promise<number> {
  const stale = await kind.claimStale(ctx.pool, STALE_SECONDS, 100);
  for (const row of stale) {
    await sendJob(ctx.boss, row.status === 'PENDING' ? kind.executeQueue : kind.reconcileQueue, kind.job(row.id) as never);
  }
  return stale.length;
}

export const handleDisbursementExecute = (ctx: WorkerContext, p: { disbursement_id: string }) => execute(ctx, disbursementKind, p.disbursement_id);
export const handleDisbursementReconcile = (ctx: WorkerContext, p: { disbursement_id: string }) => reconcile(ctx, disbursementKind, p.disbursement_id);
export const handleSettlementPayout = (ctx: WorkerContext, p: { settlement_id: string }) => execute(ctx, settlementKind, p.settlement_id);
export const handleSettlementReconcile = (ctx: WorkerContext, p: { settlement_id: string }) => reconcile(ctx, settlementKind, p.settlement_id);

/** Restarts the quiet chains of both kinds (from the scheduler's sweep). */
export const requeueStaleDisbursements = (ctx: WorkerContext) => requeueStale(ctx, disbursementKind);
export const requeueStaleSettlements = (ctx: WorkerContext) => requeueStale(ctx, settlementKind);
