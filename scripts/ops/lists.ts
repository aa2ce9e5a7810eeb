// The lists support scripts call in loops: banks, e-wallets, vendors, routes, what waits for an
// operator, jobs. They read through one plain node-postgres session (ctx.reader(),
// db/plain-reader.ts) and check their few flags here, so a call loads neither slonik nor zod:
// about 250 ms of CPU less per call than the commands that write (docs/performance.md, "Ops CLI").
// Keep this module's imports to types and db/operator-lists.ts; the ops tests check that a list
// loads no slonik and no zod.
import {
  listBanks,
  listEwallets,
  listJobs,
  listRoutes,
  listUnresolved,
  listVendors,
  queueExists,
} from '../../db/operator-lists.ts';
import { command, OpsError, type InputIssue, type InputSchema } from './command.ts';

/** A list without flags of its own (--json is the CLI's). */
const noFlags: InputSchema<Record<string, never>> = { safeParse: () => ({ success: true, data: {} }) };

const enabledText = (enabled: boolean) => (enabled ? 'enabled ' : 'disabled');

export const banksList = command({
  name: 'banks:list',
  summary: 'List banks (short code, Bank Indonesia code, enabled), disabled ones included',
  usage: 'banks:list [--json]',
  flags: {},
  input: noFlags,
  async run(ctx) {
    const banks = await listBanks(await ctx.reader());
    const text = banks.map((b) => `${b.short_code.padEnd(20)} ${b.bi_code}  ${enabledText(b.is_enabled)}  ${b.name}`).join('\n');
    return { json: { banks }, text: text || 'no banks' };
  },
});

export const ewalletsList = command({
  name: 'ewallets:list',
  summary: 'List e-wallets (short code, enabled), disabled ones included',
  usage: 'ewallets:list [--json]',
  flags: {},
  input: noFlags,
  async run(ctx) {
    const ewallets = await listEwallets(await ctx.reader());
    const text = ewallets.map((e) => `${e.short_code.padEnd(12)} ${enabledText(e.is_enabled)}  ${e.name}`).join('\n');
    return { json: { ewallets }, text: text || 'no e-wallets' };
  },
});

export const vendorList = command({
  name: 'vendor:list',
  summary: 'List vendors',
  usage: 'vendor:list [--json]',
  flags: {},
  input: noFlags,
  async run(ctx) {
    const vendors = await listVendors(await ctx.reader());
    const text = vendors
      .map((v) => `${v.code.padEnd(12)} ${v.kind.padEnd(10)} ${v.removed ? 'removed ' : v.enabled ? 'enabled ' : 'disabled'} ${v.base_url}${v.sandbox ? '  SANDBOX' : ''}`)
      .join('\n');
    return { json: { vendors }, text: text || 'no vendors' };
  },
});

export const routeList = command({
  name: 'route:list',
  summary: 'List routes (platform defaults first)',
  usage: 'route:list [--json]',
  flags: {},
  input: noFlags,
  async run(ctx) {
    const routes = await listRoutes(await ctx.reader());
    const text = routes
      .map((r) => `${(r.merchant_id ?? 'default').padEnd(36)} ${r.method.padEnd(8)} ${r.vendor_code.padEnd(12)} priority=${r.priority} ${r.mode}${r.enabled ? '' : ' (vendor disabled)'}`)
      .join('\n');
    return { json: { routes }, text: text || 'no routes' };
  },
});

export const unresolvedList = command({
  name: 'unresolved:list',
  summary: 'Refunds and payouts waiting for an operator: a vendor answer no read can settle (oldest first)',
  usage: 'unresolved:list [--json]',
  flags: {},
  input: noFlags,
  async run(ctx) {
    const rows = await listUnresolved(await ctx.reader());
    const json = rows.map((r) => ({ ...r, unresolved_at: r.unresolved_at.toISOString() }));
    const lines = rows.map((r) => `  ${r.kind} ${r.ref_code} ${r.amount} at ${r.vendor_code ?? '-'}${r.vendor_id ? ` (${r.vendor_id})` : ''} since ${r.unresolved_at.toISOString()}: ${r.reason ?? ''}`);
    const next = rows.length ? ['settle refunds with refunds:settle or refunds:resend, payouts with payouts:settle'] : [];
    return { json, text: [`${rows.length} waiting for an operator`, ...lines, ...next].join('\n') };
  },
});

const JOB_STATES = ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'] as const;

interface JobsListInput {
  queue?: string;
  state?: (typeof JOB_STATES)[number];
  limit: number;
}

/** jobs:list's three flags; the queue is checked against pg-boss's own list when the command runs. */
const jobsListInput: InputSchema<JobsListInput> = {
  safeParse(values) {
    const { queue, state, limit } = values as { queue?: string; state?: string; limit?: string };
    const issues: InputIssue[] = [];
    if (queue !== undefined && !queue) issues.push({ path: ['queue'], code: 'too_small', message: 'give a queue name' });
    if (state !== undefined && !(JOB_STATES as readonly string[]).includes(state)) {
      issues.push({ path: ['state'], code: 'invalid_value', message: `expected one of ${JOB_STATES.join('|')}` });
    }
    const n = limit === undefined ? 50 : /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
    if (!(n >= 1 && n <= 1000)) issues.push({ path: ['limit'], code: 'invalid_value', message: 'expected a whole number from 1 to 1000' });
    if (issues.length) return { success: false, error: { issues } };
    return { success: true, data: { queue, state: state as JobsListInput['state'], limit: n } };
  },
};

export const jobsList = command({
  name: 'jobs:list',
  summary: 'List jobs, newest first (optionally one queue, one state)',
  usage: `jobs:list [--queue NAME] [--state ${JOB_STATES.join('|')}] [--limit N (1-1000, 50)] [--json]`,
  flags: { queue: { type: 'string' }, state: { type: 'string' }, limit: { type: 'string' } },
  input: jobsListInput,
  async run(ctx, input) {
    const db = await ctx.reader();
    if (input.queue && !(await queueExists(db, input.queue))) throw new OpsError(`no queue ${input.queue} (jobs:list without --queue lists every queue's jobs)`);
    const jobs = (await listJobs(db, input)).map((job) => ({
      ...job,
      created_on: job.created_on.toISOString(),
      completed_on: job.completed_on?.toISOString() ?? null,
    }));
    const row = (id: string, queue: string, state: string, retries: string, created: string, data: string) =>
      `${id.padEnd(36)}  ${queue.padEnd(22)} ${state.padEnd(9)} ${retries.padStart(7)}  ${created.padEnd(24)} ${data}`;
    const text = jobs.length
      ? [row('ID', 'QUEUE', 'STATE', 'RETRIES', 'CREATED', 'DATA'), ...jobs.map((j) => row(j.id, j.queue, j.state, String(j.retry_count), j.created_on, JSON.stringify(j.data)))].join('\n')
      : 'no jobs';
    return { json: { jobs }, text };
  },
});
