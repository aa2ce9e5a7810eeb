// Routing bench: a vendor's brownout under priority and adaptive routing, both in one run
// (issue 39). Two simulator processes, A and B. Each is registered twice, once per mode (codes
// pri-a/pri-b and ada-a/ada-b on the same two processes), so the two merchants share the vendors'
// behaviour but not their counts: adaptive routing judges ada-a by ada-a's calls only.
//   - merchant "priority": its own QRIS routes to pri-a (priority 10) then pri-b (20), priority mode;
//   - merchant "adaptive": the same to ada-a and ada-b, adaptive mode.
// Each sends --rate orders/s through one API and one vendor worker (open loop: a request leaves
// every 1/rate s whatever the earlier ones do), priority first, then adaptive. Phases: --before s healthy; --brownout s in which A
// answers half its creates with a 5xx (a quarter) or a hold past VENDOR_TIMEOUT_MS (a quarter),
// set through the simulator's fault rules; --after s recovered.
//
// Reported per mode and phase: orders, created on the first attempt (201 from the first vendor
// tried), left to reconciliation (409 ORDER_PENDING_CONFIRMATION), create p50/p99; A's share of
// orders (by the first vendor tried) per 5 s; when A's share fell to ≤ 10 % after the brownout
// began and came back to ≥ 90 % after it ended; and orders sent to two vendors (must be 0).
// Targets (adaptive): A ≤ 10 % within 30 s of the brownout; ≥ 95 % first attempt during it;
// A back within 60 s of recovery; nothing sent twice.
//
//   npm run bench -- routing [--rate 20] [--before 20] [--brownout 60] [--after 60] [--ephemeral] [--json]
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { defaultBrand } from '../../db/brands.ts';
import { createMerchant } from '../../db/merchants.ts';
import { sql } from '../../db/pool.ts';
import { setRoute, setRouteMode, upsertVendor, type RouteMode } from '../../db/vendors.ts';
import { freePort } from '../lib/cluster.ts';
import { databaseOptions, durableFrom } from './database.ts';
import { startProcess } from './processes.ts';
import { closeSession, openSession, positive, startChild, type Session } from './session.ts';

const MODES: RouteMode[] = ['priority', 'adaptive'];
const PREFIX: Record<RouteMode, string> = { priority: 'pri', adaptive: 'ada' };
const SLICE_SECONDS = 5;

interface Sent {
  mode: RouteMode;
  merchantOrderId: string;
  /** Seconds since the brownout began (negative before it). */
  at: number;
  ms: number;
  status: number;
}

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      rate: { type: 'string', default: '20' },
      before: { type: 'string', default: '20' },
      brownout: { type: 'string', default: '60' },
      after: { type: 'string', default: '60' },
      ...databaseOptions,
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const rate = positive('rate', values.rate);
  const before = positive('before', values.before);
  const brownout = positive('brownout', values.brownout);
  const after = positive('after', values.after);
  const session = await openSession({ durable: durableFrom(values), stats: false });
  const { pool, sealer } = session;
  try {
    const sims = { a: await startSimulator(session, 'A'), b: await startSimulator(session, 'B') };
    const brandId = (await defaultBrand(pool)).id;
    const merchants = {} as Record<RouteMode, { id: string; key: string }>;
    for (const mode of MODES) {
      for (const [letter, sim] of Object.entries(sims)) {
        await upsertVendor(pool, sealer, { code: `${PREFIX[mode]}-${letter}`, kind: 'simulator', baseUrl: sim.url, credentials: { secret: sim.secret } });
      }
      const m = await createMerchant(pool, sealer, { name: `Bench ${mode}`, settlementType: 'MANUAL', brandId, webhookSecret: null, notifyUrl: null });
      await setRoute(pool, { merchantId: m.merchant_id, method: 'QRIS', vendorCode: `${PREFIX[mode]}-a`, priority: 10 });
      await setRoute(pool, { merchantId: m.merchant_id, method: 'QRIS', vendorCode: `${PREFIX[mode]}-b`, priority: 20 });
      await setRouteMode(pool, { merchantId: m.merchant_id, method: 'QRIS', mode });
      merchants[mode] = { id: m.merchant_id, key: m.api_key };
    }
    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    await startChild(session, 'api', 'api/server.ts', [], { ...session.common, HOST: '127.0.0.1', PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl });
    await startChild(session, 'vendor worker', 'workers/run.ts', ['vendor'], session.common);
    const settings = { VENDOR_TIMEOUT_MS: process.env.VENDOR_TIMEOUT_MS ?? '8000 (default)', ROUTING_WINDOW_SECONDS: process.env.ROUTING_WINDOW_SECONDS ?? 'default', ROUTING_EXPLORE_PERCENT: process.env.ROUTING_EXPLORE_PERCENT ?? 'default' };

    // ---- the load, one mode after the other on the same processes: a mode's timeouts hold the
    // vendor worker's batches (see docs/performance.md, "Routing"), so run side by side the
    // priority merchant's would slow the adaptive merchant's orders at B too.
    const runId = randomBytes(3).toString('hex');
    const sent: Sent[] = [];
    let seq = 0;
    for (const mode of MODES) {
      const inFlight = new Set<Promise<void>>();
      const t0 = Date.now() + before * 1000; // the brownout's start
      const end = t0 + (brownout + after) * 1000;
      let faulted = false;
      let recovered = false;
      for (let next = Date.now(); next < end; next += 1000 / rate) {
        const wait = next - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        if (!faulted && Date.now() >= t0) {
          faulted = true;
          await setFaults(sims.a.url, [
            { op: 'createQris', mode: 'error', status: 503, rate: 0.25 },
            { op: 'createQris', mode: 'timeout', rate: 1 / 3 },
          ]);
        }
        if (!recovered && Date.now() >= t0 + brownout * 1000) {
          recovered = true;
          await fetch(`${sims.a.url}/admin/faults`, { method: 'DELETE' });
        }
        const merchantOrderId = `RT-${runId}-${++seq}`;
        const started = Date.now();
        const record = (status: number) => {
          sent.push({ mode, merchantOrderId, at: (started - t0) / 1000, ms: Date.now() - started, status });
        };
        const p: Promise<void> = fetch(`${apiUrl}/v1/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': merchants[mode].key },
          body: JSON.stringify({ merchant_order_id: merchantOrderId, amount: 10_000 + (seq % 1000), payment_method: 'QRIS' }),
        }).then(
          async (res) => {
            await res.arrayBuffer();
            record(res.status);
          },
          () => record(0),
        );
        inFlight.add(p);
        void p.finally(() => inFlight.delete(p));
      }
      await Promise.all(inFlight);
      // Reconciliation settles what the brownout left before the next mode starts (bounded).
      const until = Date.now() + 60_000;
      while (Date.now() < until && (await pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from orders where status = 'CREATING'`)) > 0) {
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }

    // ---- what became of each order
    const rows = await pool.any(sql.type(z.object({ merchant_order_id: z.string(), first: z.string().nullable(), tried: z.number(), vendor_code: z.string().nullable() }))`
      select merchant_order_id, vendors_tried[1] as first, coalesce(array_length(vendors_tried, 1), 0)::int as tried, vendor_code
      from orders where merchant_order_id like ${`RT-${runId}-%`}`);
    const byId = new Map(rows.map((r) => [r.merchant_order_id, r]));
    const phaseOf = (at: number) => (at < 0 ? 'before' : at < brownout ? 'brownout' : 'after');
    const report = MODES.map((mode) => {
      const mine = sent.filter((s) => s.mode === mode);
      const isA = (s: Sent) => byId.get(s.merchantOrderId)?.first === `${PREFIX[mode]}-a`;
      const phases = Object.fromEntries(
        ['before', 'brownout', 'after'].map((phase) => {
          const list = mine.filter((s) => phaseOf(s.at) === phase);
          const ms = list.map((s) => s.ms).sort((x, y) => x - y);
          const first = list.filter((s) => s.status === 201 && byId.get(s.merchantOrderId)?.tried === 1).length;
          return [phase, {
            orders: list.length,
            first_attempt: first,
            first_attempt_pct: pct(first, list.length),
            left_to_reconciliation: list.filter((s) => s.status === 409).length,
            other_answers: list.filter((s) => s.status !== 201 && s.status !== 409).length,
            p50_ms: quantile(ms, 0.5),
            p99_ms: quantile(ms, 0.99),
            a_share_pct: pct(list.filter(isA).length, list.length),
          }];
        }),
      );
      const slices: Array<{ from_s: number; orders: number; a_share_pct: number }> = [];
      for (let from = -before; from < brownout + after; from += SLICE_SECONDS) {
        const list = mine.filter((s) => s.at >= from && s.at < from + SLICE_SECONDS);
        slices.push({ from_s: from, orders: list.length, a_share_pct: pct(list.filter(isA).length, list.length) });
      }
      // The first slice from which A stays demoted (≤ 10 %) for the rest of the brownout, and from which it stays back (≥ 90 %).
      const during = slices.filter((s) => s.from_s >= 0 && s.from_s + SLICE_SECONDS <= brownout);
      const demotedFrom = during.find((s, i) => during.slice(i).every((x) => x.a_share_pct <= 10));
      const afterSlices = slices.filter((s) => s.from_s >= brownout);
      const backFrom = afterSlices.find((s, i) => afterSlices.slice(i).every((x) => x.a_share_pct >= 90));
      return {
        mode,
        phases,
        a_at_most_10pct_after_s: demotedFrom ? demotedFrom.from_s + SLICE_SECONDS : null,
        a_back_after_recovery_s: backFrom ? backFrom.from_s - brownout + SLICE_SECONDS : null,
        sent_to_two_vendors: mine.filter((s) => (byId.get(s.merchantOrderId)?.tried ?? 0) > 1).length,
        slices,
      };
    });

    const result = { rate_per_mode: rate, before_s: before, brownout_s: brownout, after_s: after, settings, load_before: session.loadBefore, modes: report };
    if (values.json) {
      process.stdout.write(`${JSON.stringify(result)}\n`);
      return;
    }
    const lines = [
      `routing bench: ${rate} orders/s per mode; A healthy ${before} s, browned out ${brownout} s (25 % 5xx, 25 % held past the timeout), recovered ${after} s`,
      `settings: ${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(' ')}; load average before ${session.loadBefore}`,
    ];
    for (const r of report) {
      lines.push('', `${r.mode}:`);
      for (const [phase, p] of Object.entries(r.phases)) {
        lines.push(`  ${phase.padEnd(9)} orders ${String(p.orders).padStart(5)}  first attempt ${String(p.first_attempt_pct).padStart(5)} %  to reconciliation ${String(p.left_to_reconciliation).padStart(4)}  p50 ${p.p50_ms} ms  p99 ${p.p99_ms} ms  A share ${p.a_share_pct} %`);
      }
      lines.push(`  A ≤ 10 % from ${r.a_at_most_10pct_after_s ?? 'never'} s into the brownout; back ≥ 90 % ${r.a_back_after_recovery_s ?? 'never'} s after recovery; sent to two vendors: ${r.sent_to_two_vendors}`);
      lines.push(`  A share per ${SLICE_SECONDS} s: ${r.slices.map((s) => `${s.from_s}:${s.a_share_pct}`).join(' ')}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await closeSession(session);
  }
}

async function startSimulator(session: Session, name: string) {
  const secret = randomBytes(18).toString('base64url');
  const sim = await startProcess(
    `simulator ${name}`,
    'gateways/simulator/server.ts',
    [],
    { LOG_LEVEL: 'warn', SIMULATOR_HOST: '127.0.0.1', SIMULATOR_PORT: String(await freePort()), SIMULATOR_CODE: `sim-${name.toLowerCase()}`, SIMULATOR_SECRET: secret },
    /^simulator listening on (http:\/\/\S+)$/,
  );
  session.processes.push(sim);
  return { url: (sim.ready as RegExpExecArray)[1], secret };
}

async function setFaults(url: string, rules: object[]): Promise<void> {
  const res = await fetch(`${url}/admin/faults`, { method: 'POST', body: JSON.stringify(rules) });
  if (res.status !== 201) throw new Error(`faults at ${url}: ${res.status} ${await res.text()}`);
}

const pct = (n: number, of: number) => (of === 0 ? 0 : Math.round((1000 * n) / of) / 10);
const quantile = (sorted: number[], q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : 0);
