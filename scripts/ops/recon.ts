// Reconciliation with the vendors (docs/money.md, "Reconciliation"; the runbook is in
// docs/deploy.md): run a vendor's day, show runs and differences, resolve a difference with a
// note, set what Kasir assumes each vendor charges, and export a run's differences as CSV
// through the export machinery (a csv worker builds it).
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { configSchema } from '../../db/config.ts';
import { findExport, insertReconExport, readExportChunk } from '../../db/exports.sql.ts';
import { inTransaction, sendJob } from '../../db/queue.ts';
import { KIND_LABELS, wibDay } from '../../db/recon.ts';
import {
  findDifference,
  findRun,
  findVendorCosts,
  listDifferences,
  listRuns,
  resolveDifference,
  setVendorCosts,
  type DifferenceRow,
  type RunRow,
} from '../../db/recon.sql.ts';
import { reconcileDay, ReconRefused } from '../../workers/recon-run.ts';
import { command, OpsError } from './command.ts';

const vendor = z.string('--vendor is required (a vendor code)').trim().regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, '--vendor must be a vendor code');
const date = z.iso.date('--date must be a date YYYY-MM-DD');
const uuid = (flag: string) => z.uuid(`${flag} must be a UUID`);

const shownRun = (r: RunRow) => ({ ...r, started_at: r.started_at.toISOString(), finished_at: r.finished_at?.toISOString() ?? null });
const shownDifference = (d: DifferenceRow) => ({ ...d, kind_label: KIND_LABELS[d.kind], created_at: d.created_at.toISOString(), resolved_at: d.resolved_at?.toISOString() ?? null });

const money = (n: number | null | undefined) => (n === null || n === undefined ? '-' : n.toLocaleString('en'));

function runText(r: RunRow): string {
  const head = `run ${r.id} ${r.vendor_code} ${r.day} ${r.status} (${r.trigger}, ${r.source ?? 'no source'})`;
  if (r.status !== 'COMPLETED') return `${head}${r.error ? `: ${r.error}` : ''}`;
  const matched = Object.entries(r.matched ?? {}).map(([s, m]) => `${s.toLowerCase()} ${m.count} (${money(m.amount)})`).join(', ');
  const fees = Object.entries(r.fees ?? {}).map(([s, f]) => `${s.toLowerCase()} vendor ${money(f.vendor_fee)}${f.assumed_fee === undefined ? '' : ` vs assumed ${money(f.assumed_fee)} (difference ${money(f.difference)} over ${f.lines_differing} of ${f.lines} lines)`}`);
  return [
    head,
    `  ${r.vendor_lines} vendor lines, ${r.kasir_records} Kasir records; matched: ${matched}`,
    ...(fees.length ? [`  fees: ${fees.join('; ')}`] : []),
    `  differences: ${r.new_differences} new, ${r.open_differences} open, ${r.repaired} repaired`,
  ].join('\n');
}

function differenceText(d: DifferenceRow): string {
  const tail = d.status === 'OPEN' ? (d.repair ? ` [${d.repair}]` : '') : d.status === 'REPAIRED' ? ` [REPAIRED: ${d.repair}]` : ` [RESOLVED: ${d.resolution_note}]`;
  return `${d.id} ${d.vendor_code} ${d.day} ${d.status} ${KIND_LABELS[d.kind]} (${d.subject}) ${d.reference ?? d.vendor_reference ?? ''}: ${d.detail}${tail}`;
}

function vendorTimeoutMs(): number {
  const parsed = configSchema.shape.VENDOR_TIMEOUT_MS.safeParse(process.env.VENDOR_TIMEOUT_MS);
  if (!parsed.success) throw new OpsError('VENDOR_TIMEOUT_MS must be milliseconds');
  return parsed.data;
}

export const reconRun = command({
  name: 'recon:run',
  summary: "Reconcile a vendor's WIB day: its report against Kasir's records; a rerun replaces the day's open differences",
  usage: 'recon:run --vendor CODE --date YYYY-MM-DD [--json]',
  flags: { vendor: { type: 'string' }, date: { type: 'string' } },
  input: z.object({ vendor, date }),
  async run(ctx, input) {
    try {
      const run = await reconcileDay({ pool: await ctx.pool(), boss: await ctx.boss(), sealer: await ctx.sealer(), vendorTimeoutMs: vendorTimeoutMs() }, input.vendor, input.date, 'operator');
      const open = run.status === 'COMPLETED' ? await listDifferences(await ctx.pool(), { vendorCode: input.vendor, day: input.date, status: 'OPEN' }, 1000) : [];
      const note = input.date === wibDay(new Date()) ? '\n  (the day has not ended: a rerun after it ends completes it)' : '';
      return {
        json: { run: shownRun(run), open: open.map(shownDifference) },
        text: [runText(run) + note, ...open.map((d) => `  ${differenceText(d)}`)].join('\n'),
        exitCode: run.status === 'COMPLETED' ? 0 : 1,
      };
    } catch (err) {
      if (err instanceof ReconRefused) throw new OpsError(err.message);
      throw err;
    }
  },
});

export const reconShow = command({
  name: 'recon:show',
  summary: 'Show reconciliation runs and their differences: of a day, of a vendor, or every open difference',
  usage: 'recon:show [--vendor CODE] [--date YYYY-MM-DD] [--run ID] [--open] [--json]',
  flags: { vendor: { type: 'string' }, date: { type: 'string' }, run: { type: 'string' }, open: { type: 'boolean' } },
  input: z.object({ vendor: vendor.optional(), date: date.optional(), run: uuid('--run').optional(), open: z.boolean().optional() }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    let filter = { vendorCode: input.vendor ?? null, day: input.date ?? null };
    let runs: RunRow[];
    if (input.run) {
      const run = await findRun(pool, input.run);
      if (!run) throw new OpsError(`no reconciliation run ${input.run}`);
      runs = [run];
      filter = { vendorCode: run.vendor_code, day: run.day };
    } else {
      // Without a day or vendor: every open difference, and the latest runs.
      runs = [...(await listRuns(pool, filter, filter.day || filter.vendorCode ? 50 : 10))];
    }
    const status = input.open || (!input.run && !filter.day && !filter.vendorCode) ? 'OPEN' : null;
    const differences = await listDifferences(pool, { ...filter, status }, 1000);
    return {
      json: { runs: runs.map(shownRun), differences: differences.map(shownDifference) },
      text: [
        ...(runs.length ? runs.map(runText) : ['no runs']),
        differences.length ? `${differences.length} ${status === 'OPEN' ? 'open ' : ''}difference(s):` : `no ${status === 'OPEN' ? 'open ' : ''}differences`,
        ...differences.map((d) => `  ${differenceText(d)}`),
      ].join('\n'),
    };
  },
});

export const reconResolve = command({
  name: 'recon:resolve',
  summary: 'Mark an open difference resolved by a person, with a note saying what was done',
  usage: 'recon:resolve --id ID --note TEXT [--json]',
  flags: { id: { type: 'string' }, note: { type: 'string' } },
  input: z.object({ id: uuid('--id'), note: z.string('--note is required: what was done').trim().min(3, '--note is required: what was done').max(2000) }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const resolved = await resolveDifference(pool, input.id, input.note);
    if (!resolved) {
      const found = await findDifference(pool, input.id);
      throw new OpsError(found ? `difference ${input.id} is ${found.status}: only an OPEN one can be resolved` : `no difference ${input.id}`);
    }
    return { json: shownDifference(resolved), text: `difference ${resolved.id} RESOLVED: ${resolved.resolution_note}` };
  },
});

const cost = (flag: string) =>
  z
    .string()
    .regex(/^(\d{1,12}|none)$/, `${flag} must be whole Rupiah (or none)`)
    .transform((v) => (v === 'none' ? null : Number(v)))
    .optional();

export const reconSetCost = command({
  name: 'recon:set-cost',
  summary: 'Set what Kasir assumes a vendor charges (compared with the fees the vendor reports); none removes an assumption',
  usage: 'recon:set-cost --vendor CODE [--payment-bps N|none] [--payout N|none] [--refund N|none] [--json]',
  flags: { vendor: { type: 'string' }, 'payment-bps': { type: 'string' }, payout: { type: 'string' }, refund: { type: 'string' } },
  input: z.object({
    vendor,
    'payment-bps': cost('--payment-bps').refine((v) => v === undefined || v === null || v <= 10_000, '--payment-bps must be at most 10000'),
    payout: cost('--payout'),
    refund: cost('--refund'),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const changed = await setVendorCosts(pool, input.vendor, { cost_payment_bps: input['payment-bps'], cost_payout: input.payout, cost_refund: input.refund });
    if (!changed) throw new OpsError(`no vendor ${input.vendor}`);
    const costs = (await findVendorCosts(pool, input.vendor))!;
    const show = (v: number | null, unit: string) => (v === null ? 'none' : `${v.toLocaleString('en')}${unit}`);
    return {
      json: { vendor: input.vendor, ...costs },
      text: `${input.vendor} assumed costs: payment ${show(costs.cost_payment_bps, ' bps')}, payout ${show(costs.cost_payout, '')}, refund ${show(costs.cost_refund, '')}`,
    };
  },
});

export const reconExport = command({
  name: 'recon:export',
  summary: "A run's differences (its vendor and day as they stand) as CSV, built by a csv worker; written to --out or stdout",
  usage: 'recon:export --run ID [--out FILE] [--wait SECONDS] [--json]',
  flags: { run: { type: 'string' }, out: { type: 'string' }, wait: { type: 'string' } },
  input: z.object({
    run: uuid('--run'),
    out: z.string().min(1).optional(),
    wait: z.string().regex(/^\d{1,4}$/, '--wait must be seconds').transform(Number).default(60),
  }),
  async run(ctx, input) {
    const pool = await ctx.pool();
    const run = await findRun(pool, input.run);
    if (!run) throw new OpsError(`no reconciliation run ${input.run}`);
    const id = randomUUID();
    await pool.transaction(async (tx) => {
      await insertReconExport(tx, { id, runId: run.id });
      await sendJob(await ctx.boss(), 'export-build', { export_id: id }, { db: inTransaction(tx) });
    });
    // The csv worker group builds it; poll until it is done or the wait is over.
    const deadline = Date.now() + input.wait * 1000;
    let e = await findExport(pool, id);
    while (e && (e.status === 'QUEUED' || e.status === 'PROCESSING') && Date.now() < deadline) {
      await sleep(200);
      e = await findExport(pool, id);
    }
    if (!e || e.status === 'FAILED') throw new OpsError(`export ${id} failed: ${e?.error ?? 'gone'}`);
    if (e.status !== 'COMPLETED') throw new OpsError(`export ${id} is still ${e.status} after ${input.wait} s: is a csv worker running?`);
    const chunks: Buffer[] = [];
    for (let seq = 0; ; seq++) {
      const chunk = await readExportChunk(pool, id, seq);
      if (!chunk) break;
      chunks.push(chunk);
    }
    const csv = Buffer.concat(chunks);
    if (input.out) await writeFile(input.out, csv);
    const summary = { export_id: id, run: run.id, vendor: run.vendor_code, day: run.day, rows: e.row_count, bytes: csv.length, out: input.out ?? null };
    if (!input.out) return { json: { ...summary, csv: csv.toString('utf8') }, text: csv.toString('utf8').replace(/\n$/, '') };
    return { json: summary, text: `${e.row_count} difference(s) of ${run.vendor_code} ${run.day} written to ${input.out}` };
  },
});
