// recon-run: reconciles one vendor and one WIB day (docs/money.md, "Reconciliation"), as the
// daily schedule (the job, every vendor not removed) and `ops recon:run` (one vendor) ask.
//
// A run: records itself RUNNING (one at a time per vendor and day), reads Kasir's records of the
// day at the vendor, reads the vendor's report of the day (gateway reportDay: its list or
// statement, else record by record), finds Kasir's records for the lines the day's did not
// match, compares both sides (db/recon.ts compareDay), makes the two allowed repairs after the
// vendor's per-record read confirms them, and writes its differences and its summary in one
// transaction. A vendor that cannot be read fails the run (nothing about the day changes); the
// job is retried by pg-boss, and a rerun by hand replaces the day's open differences.
import type { Job, PgBoss } from 'pg-boss';
import { randomUUID } from 'node:crypto';
import type { Gateway, SentRecord, VendorLine } from '../gateways/gateway.ts';
import { gatewayFor } from '../gateways/registry.ts';
import { logger } from '../db/logger.ts';
import { poolReader, type Pool } from '../db/pool.ts';
import type { Payload } from '../db/queue.ts';
import { compareDay, KIND_LABELS, previousWibDay, reconWindow, repairPayment, repairPayout, wibDay, type Found, type RepairResult, type RunRef } from '../db/recon.ts';
import {
  completeRun,
  countOpenDifferences,
  failRun,
  failStaleRun,
  findVendorCosts,
  insertRun,
  kasirByReference,
  kasirDay,
  kasirSent,
  listRuns,
  recordDifferences,
  type KasirRow,
  type RunRow,
} from '../db/recon.sql.ts';
import type { Sealer } from '../db/secrets.ts';
import { listVendors } from '../db/operator-lists.ts';
import { getVendor } from '../db/vendors.ts';
import type { WorkerContext } from './context.ts';

/** A RUNNING run older than this is taken to be dead (its process stopped) and may be replaced. */
const STALE_RUN_SECONDS = 3600;

export interface ReconDeps {
  pool: Pool;
  boss: PgBoss;
  sealer: Sealer;
  vendorTimeoutMs: number;
}

/** A run that cannot start: no such vendor, one it cannot read, a day not begun, a run in progress. */
export class ReconRefused extends Error {}

const depsOf = (ctx: WorkerContext): ReconDeps => ({ pool: ctx.pool, boss: ctx.boss, sealer: ctx.sealer, vendorTimeoutMs: ctx.config.VENDOR_TIMEOUT_MS });

async function startRun(pool: Pool, vendorCode: string, day: string, trigger: 'schedule' | 'operator'): Promise<RunRow> {
  const input = { id: randomUUID(), vendorCode, day, trigger };
  const run = (await insertRun(pool, input)) ?? ((await failStaleRun(pool, vendorCode, day, STALE_RUN_SECONDS)) ? await insertRun(pool, input) : null);
  if (!run) throw new ReconRefused(`a reconciliation of ${vendorCode} for ${day} is already running`);
  return run;
}

/** What a vendor without a list is asked about: what Kasir sent it around the day. */
async function sentRecords(pool: Pool, vendorCode: string, from: Date, to: Date): Promise<SentRecord[]> {
  const rows = await kasirSent(pool, vendorCode, from, to);
  return rows.map((r) => ({
    kind: r.subject,
    reference: r.reference,
    vendorId: r.vendor_id,
    ...(r.subject === 'REFUND' ? { orderReference: r.order_reference ?? undefined, orderVendorId: r.order_vendor_id } : {}),
  }));
}

/** The references and vendor ids of lines no record of the day answers, to find Kasir's records by. */
function lookupOf(dayRecords: readonly KasirRow[], lines: readonly VendorLine[]) {
  const known = new Set(dayRecords.flatMap((r) => [`${r.subject}:${r.reference}`, ...(r.vendor_id ? [`${r.subject}#${r.vendor_id}`] : [])]));
  const want = { orderRefs: new Set<string>(), payoutRefs: new Set<string>(), payoutVendorIds: new Set<string>(), refundRefs: new Set<string>(), refundVendorIds: new Set<string>(), refundOrderRefs: new Set<string>() };
  for (const l of lines) {
    if ((l.reference && known.has(`${l.kind}:${l.reference}`)) || (l.vendorId && known.has(`${l.kind}#${l.vendorId}`))) continue;
    if (l.kind === 'PAYMENT' && l.reference) want.orderRefs.add(l.reference);
    if (l.kind === 'PAYOUT') {
      if (l.reference) want.payoutRefs.add(l.reference);
      if (l.vendorId) want.payoutVendorIds.add(l.vendorId);
    }
    if (l.kind === 'REFUND') {
      if (l.reference) want.refundRefs.add(l.reference);
      if (l.vendorId) want.refundVendorIds.add(l.vendorId);
      if (l.orderReference) want.refundOrderRefs.add(l.orderReference);
    }
  }
  return Object.fromEntries(Object.entries(want).map(([k, v]) => [k, [...v]])) as { [K in keyof typeof want]: string[] };
}

/**
 * Confirms an allowed repair with the vendor's own per-record read and makes it; a difference
 * the read does not confirm stays OPEN with the reason in `repair`. 'already_final': the record
 * became final as the vendor reports it while the run compared (its callback came), so the
 * difference is gone.
 */
async function repair(deps: ReconDeps, gateway: Gateway, run: RunRef, d: Found): Promise<RepairResult['outcome']> {
  const r = d.repairable!;
  const refuse = (why: string) => {
    d.repair = `not repaired: ${why}`;
    return 'refused' as const;
  };
  const settle = (done: RepairResult) => {
    if (done.outcome === 'refused') return refuse(done.note);
    d.repair = done.note;
    return done.outcome;
  };
  if (r.type === 'payment') {
    const read = await gateway.queryQris(r.refCode, r.vendorOrderId);
    if (read.kind !== 'ok') return refuse(`${run.vendorCode}'s read of ${r.refCode} failed (${read.reason})`);
    const q = read.value;
    if (q.status !== 'PAID' || !q.paidAt) return refuse(`${run.vendorCode}'s read says ${r.refCode} is ${q.status}`);
    // The read of the record decides the amount, not the list: a repair credits only what the
    // vendor's own record of the QR shows paid, and only when that is Kasir's amount.
    if (q.amount === null || q.amount !== d.kasirAmount) return refuse(`${run.vendorCode}'s read of ${r.refCode} shows ${q.amount ?? 'no amount'} paid, Kasir's amount is ${d.kasirAmount}`);
    return settle(await repairPayment(deps.pool, deps.boss, run, d, { refCode: r.refCode, amount: q.amount, paidAt: q.paidAt, rrn: q.rrn, vendorOrderId: q.vendorOrderId }));
  }
  const read = await gateway.queryDisbursement(r.reference, r.vendorId);
  if (read.kind !== 'ok') return refuse(`${run.vendorCode}'s read of ${r.reference} failed (${read.reason})`);
  const q = read.value;
  if (q.status !== 'SUCCESS' && q.status !== 'FAILED') return refuse(`${run.vendorCode}'s read says ${r.reference} is ${q.status}`);
  return settle(await repairPayout(deps.pool, deps.boss, run, d, { reference: r.reference, status: q.status, vendorDisbursementId: q.vendorDisbursementId, failureReason: q.failureReason }));
}

/** Reconciles `vendorCode` for WIB day `day`; resolves with the finished run (COMPLETED or FAILED). */
export async function reconcileDay(deps: ReconDeps, vendorCode: string, day: string, trigger: 'schedule' | 'operator'): Promise<RunRow> {
  if (day > wibDay(new Date())) throw new ReconRefused(`${day} has not begun in WIB`);
  const vendor = await getVendor(deps.pool, deps.sealer, vendorCode);
  if (!vendor) throw new ReconRefused(`no vendor ${vendorCode}`);
  const gateway = gatewayFor(vendor, { timeoutMs: deps.vendorTimeoutMs });
  if (!gateway.reportDay) throw new ReconRefused(`vendor ${vendorCode} (kind ${vendor.kind}) cannot report a day`);
  const started = await startRun(deps.pool, vendorCode, day, trigger);
  const run: RunRef = { id: started.id, vendorCode, day };
  const log = logger.child({ recon_run: run.id, vendor: vendorCode, day });
  const t0 = performance.now();
  try {
    const window = reconWindow(day);
    const dayRecords = await kasirDay(deps.pool, vendorCode, window.dayStart, window.dayEnd);
    const report = await gateway.reportDay({ date: day, from: window.from, to: window.to, sent: () => sentRecords(deps.pool, vendorCode, window.from, window.to) });
    const lines: VendorLine[] = [];
    for await (const line of report.lines) lines.push(line);
    const tRead = performance.now();
    const otherRecords = await kasirByReference(deps.pool, lookupOf(dayRecords, lines));
    const costs = await findVendorCosts(deps.pool, vendorCode);
    const comparison = compareDay({ vendorCode, day, dayRecords, otherRecords, lines, costs });

    const repaired: Found[] = [];
    const gone = new Set<Found>();
    for (const d of comparison.differences) {
      if (!d.repairable) continue;
      const outcome = await repair(deps, gateway, run, d);
      if (outcome === 'repaired') repaired.push(d);
      if (outcome === 'already_final') gone.add(d);
    }
    const found = comparison.differences.filter((d) => !gone.has(d));
    const finished = await deps.pool.transaction(async (tx) => {
      const fresh = await recordDifferences(tx, run, found);
      const open = await countOpenDifferences(tx, vendorCode, day);
      const done = await completeRun(tx, run.id, {
        source: report.source,
        vendorLines: lines.length,
        kasirRecords: comparison.kasirRecords,
        matched: comparison.matched,
        fees: comparison.fees,
        timeSkews: comparison.timeSkews,
        newDifferences: fresh.length + repaired.length,
        openDifferences: open,
        repaired: repaired.length,
      });
      return { done, fresh };
    });
    // Logged once committed: each new difference at warn, so an alert on the log sees it.
    for (const d of finished.fresh) {
      log.warn({ difference: d.id, kind: d.kind, subject: d.subject, reference: d.reference, vendor_reference: d.vendor_reference, kasir_amount: d.kasir_amount, vendor_amount: d.vendor_amount, detail: d.detail }, `reconciliation: ${KIND_LABELS[d.kind]}`);
    }
    for (const d of repaired) {
      log.warn({ kind: d.kind, subject: d.subject, reference: d.reference, repair: d.repair }, `reconciliation: ${KIND_LABELS[d.kind]}, repaired`);
    }
    for (const d of gone) log.info({ kind: d.kind, subject: d.subject, reference: d.reference, note: d.repair }, 'reconciliation: settled by its vendor while the run compared');
    log.info(
      { lines: lines.length, kasir_records: comparison.kasirRecords, new_differences: finished.done.new_differences, open: finished.done.open_differences, repaired: repaired.length, read_ms: Math.round(tRead - t0), ms: Math.round(performance.now() - t0) },
      'reconciliation finished',
    );
    return finished.done;
  } catch (err) {
    log.error({ err }, 'reconciliation failed');
    return failRun(deps.pool, run.id, (err as Error).message ?? String(err));
  }
}

/** When the schedule sent the job (fetched jobs carry no metadata); now, if it is gone. */
async function createdOn(ctx: WorkerContext, job: Job<unknown>): Promise<Date> {
  const [found] = await ctx.boss.findJobs('recon-run', { id: job.id });
  return found?.createdOn ?? new Date();
}

export async function handleReconRun(ctx: WorkerContext, payload: Payload<'recon-run'>, job: Job<unknown>) {
  const sent = await createdOn(ctx, job);
  // The schedule reconciles the day before the one it runs on (its job's creation decides, so a
  // retry hours later still reconciles the same day).
  const day = payload.day ?? previousWibDay(sent);
  // Every vendor not removed, disabled ones too: a disabled vendor still holds records (payments
  // its payers may yet make, payouts in flight) and its callbacks still apply to them.
  const codes = payload.vendor_code ? [payload.vendor_code] : (await listVendors(poolReader(ctx.pool))).filter((v) => !v.removed).map((v) => v.code);
  const results: Record<string, string> = {};
  let failed = 0;
  for (const code of codes) {
    // A retry skips vendors this job already reconciled.
    const [latest] = await listRuns(ctx.pool, { vendorCode: code, day }, 1);
    if (latest?.status === 'COMPLETED' && latest.started_at >= sent) {
      results[code] = 'done before';
      continue;
    }
    try {
      const run = await reconcileDay(depsOf(ctx), code, day, payload.vendor_code ? 'operator' : 'schedule');
      results[code] = run.status === 'COMPLETED' ? `${run.open_differences} open` : `failed: ${run.error}`;
      if (run.status !== 'COMPLETED') failed++;
    } catch (err) {
      results[code] = `refused: ${(err as Error).message}`;
      if (!(err instanceof ReconRefused)) failed++;
    }
  }
  logger.info({ day, results }, 'reconciliation job finished');
  if (failed) throw new Error(`reconciliation of ${day}: ${failed} vendor(s) failed`);
  return { day, results };
}
