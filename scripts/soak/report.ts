// The soak's report: the phases' times, what the load did and was answered, what the chaos
// did, how the drain went, and each audit check with its misses.
import type { Check } from './audit.ts';
import type { Client } from './client.ts';
import type { DrainResult } from './drain.ts';
import type { CrashRecord } from './postgres.ts';
import type { Kill, OwnExit } from './supervisor.ts';
import type { Tally } from './tally.ts';

const EXAMPLES = 10;

export interface ReportInput {
  seconds: number;
  phases: Record<string, number>;
  tally: Tally;
  client: Client;
  kills: Kill[];
  ownExits: OwnExit[];
  crashes: CrashRecord[];
  drain: DrainResult;
  drainDeadlineMs: number;
  checks: Check[];
  dir: string;
}

export function formatReport(r: ReportInput): string {
  const out: string[] = [];
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  out.push('', `== crash soak: ${r.seconds} s of chaos ==`);
  const total = Object.values(r.phases).reduce((a, b) => a + b, 0);
  out.push(`phases: ${Object.entries(r.phases).map(([name, ms]) => `${name} ${s(ms)}`).join(', ')} (total ${s(total)})`);

  const orders = [...r.tally.orders.values()];
  const payouts = [...r.tally.payouts.values()];
  const refunds = [...r.tally.refunds.values()];
  const acked = (xs: { ackId: string | null }[]) => xs.filter((x) => x.ackId).length;
  const ambiguous = [...orders, ...payouts, ...refunds].filter((x) => x.ambiguous > 0);
  out.push(
    '',
    'load:',
    `  orders       ${orders.length} asked, ${acked(orders)} acknowledged, ${orders.filter((o) => o.sends > 1).length} sent more than once, ${orders.filter((o) => o.payAckAt).length} paid`,
    `  refunds      ${refunds.length} asked, ${acked(refunds)} acknowledged`,
    `  payouts      ${payouts.length} asked, ${acked(payouts) + payouts.filter((p) => p.existsByKey && !p.ackId).length} acknowledged, ${payouts.filter((p) => p.expectFailure).length} to accounts the gateway fails`,
    `  CSV import   ${r.tally.imports ? `${r.tally.imports.ackIds.size} of ${r.tally.imports.rows} rows made, sent ${r.tally.imports.sends} times` : 'not sent (window too short)'}`,
    `  ambiguous    ${ambiguous.length} requests got an open answer (no answer, 5xx, pending confirmation) and were retried with their key; ${ambiguous.filter((x) => x.ackId || (x as { existsByKey?: boolean }).existsByKey).length} of them were acknowledged in the end`,
    `  still open   ${r.tally.open().length} requests never got a definite answer`,
  );
  if (r.tally.unexpected.length) out.push(`  unexpected answers: ${r.tally.unexpected.slice(0, EXAMPLES).join('; ')}${more(r.tally.unexpected)}`);
  out.push('', 'answers (route, status or error: count):');
  for (const [key, n] of [...r.client.counts].sort(([a], [b]) => a.localeCompare(b))) out.push(`  ${key}: ${n}`);

  const byName = new Map<string, Kill[]>();
  for (const k of r.kills) byName.set(k.name, [...(byName.get(k.name) ?? []), k]);
  out.push('', 'chaos:');
  out.push(`  SIGKILLs: ${r.kills.length} (${[...byName].map(([name, ks]) => `${name} ${ks.length}`).join(', ')})`);
  const restarts = r.kills.filter((k) => k.readyAt).map((k) => k.readyAt! - k.at);
  if (restarts.length) out.push(`  restart to ready: median ${s(median(restarts))}, max ${s(Math.max(...restarts))}`);
  for (const [i, c] of r.crashes.entries()) out.push(`  postgres crash ${i + 1}: back after ${c.readyAt - c.killedAt} ms (${c.attempts} start attempts)`);
  out.push(`  exits nobody asked for: ${r.ownExits.length}${r.ownExits.length ? ` (${r.ownExits.filter((e) => !e.wasReady).length} while starting)` : ''}`);
  for (const e of r.ownExits.slice(0, EXAMPLES)) out.push(`    ${e.name} (${e.how}): ${e.said}`.slice(0, 300));

  out.push('', `drain (deadline ${s(r.drainDeadlineMs)}): ${r.drain.settledAfterMs === null ? `NOT settled; still in flight: ${inFlight(r.drain.backlog)}` : `settled after ${s(r.drain.settledAfterMs)}`}`);
  if (r.drain.recoveredByFetchStatus.length) out.push(`  made PAID by fetch-status (callback lost with a killed simulator): ${r.drain.recoveredByFetchStatus.length}`);

  out.push('', 'audit:');
  for (const c of r.checks) {
    out.push(`  ${c.misses.length ? 'MISS' : 'ok  '} ${c.name}${c.note ? ` — ${c.note}` : ''}`);
    for (const m of c.misses.slice(0, EXAMPLES)) out.push(`       ${m}`);
    if (c.misses.length > EXAMPLES) out.push(`       … and ${c.misses.length - EXAMPLES} more`);
  }
  const missed = r.checks.filter((c) => c.misses.length);
  out.push('', missed.length ? `FAILED: ${missed.length} of ${r.checks.length} checks missed (logs: ${r.dir}/logs)` : `PASSED: all ${r.checks.length} checks`);
  return `${out.join('\n')}\n`;
}

function more(xs: unknown[]): string {
  return xs.length > EXAMPLES ? ` … and ${xs.length - EXAMPLES} more` : '';
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function inFlight(backlog: Record<string, number>): string {
  return Object.entries(backlog).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ');
}

/**
 * The failover drill's figures, per kill: Patroni's promotion, the first write through Kasir's
 * URL, and what order creates saw: the outage from the first refusal to the first 201 after it,
 * and the answers meanwhile by kind (a 503 here may hide a created order: the load retries with
 * its Idempotency-Key, and the audit holds Kasir to every 201).
 */
export function formatFailovers(crashes: Array<CrashRecord & { killed?: string; promoted?: string; promotedAt?: number; rejoinedAt?: number | null }>, client: Client): string {
  const out = ['', 'failovers:'];
  const creates = client.timeline.filter((e) => e.label === 'POST /v1/orders');
  for (const [i, c] of crashes.entries()) {
    const refusal = creates.find((e) => e.at >= c.killedAt && (e.status === null || e.status >= 500));
    const back = refusal ? creates.find((e) => e.at > refusal.at && e.status === 201) : undefined;
    const during = creates.filter((e) => e.at >= c.killedAt && (!back || e.at <= back.at));
    const kinds = new Map<string, number>();
    for (const e of during) kinds.set(String(e.status ?? 'no answer'), (kinds.get(String(e.status ?? 'no answer')) ?? 0) + 1);
    out.push(
      `  kill ${i + 1}: ${c.killed ?? 'primary'} killed; ${c.promoted ?? '?'} promoted after ${c.promotedAt ? c.promotedAt - c.killedAt : '?'} ms; ` +
        `first write after ${c.readyAt - c.killedAt} ms; ${c.killed ?? 'the old primary'} back as a standby after ${c.rejoinedAt ? `${c.rejoinedAt - c.killedAt} ms` : 'never'}`,
      `    order creates: ${refusal ? `first refusal at +${refusal.at - c.killedAt} ms, first 201 after it at +${back ? back.at - c.killedAt : '?'} ms (outage ${back ? back.at - refusal.at : '?'} ms)` : 'no refusal at all'}; ` +
        `answers from the kill to that 201: ${[...kinds].map(([k, n]) => `${k} ×${n}`).join(', ') || 'none'}`,
    );
  }
  return `${out.join('\n')}\n`;
}
