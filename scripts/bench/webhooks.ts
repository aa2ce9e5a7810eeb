// Webhooks bench: how fast a burst of events reaches merchants' receivers, against a ceiling
// measured in the same run, whether one merchant's broken endpoint holds the others back, and
// how fast the expiry line turns a large backlog of overdue orders EXPIRED.
//
//   npm run bench -- webhooks [--burst 20000] [--fairness 8000] [--fast 8] [--slow hang|fail]
//                             [--expiry 100000] [--concurrency 100] [--worker-pool 20]
//                             [--via-api N [--api-rate 125]]
//                             [--ephemeral] [--stats] [--explain MS] [--json]
//
// Processes: the webhook worker group (workers/run.ts webhook, as the Procfile runs it, idle
// and waiting before each burst), the scheduler group (workers/run.ts scheduler, started once a
// burst's orders are all overdue: "the expiry line starts"), the receivers
// (scripts/bench/webhook-receiver.ts, one port per destination) and the ceiling
// (scripts/bench/webhook-ceiling.ts). Orders are written straight into the table, PENDING and a
// minute overdue, so every event of a burst is an expiry: one order.expired webhook each.
//
// Runs, each on its own merchants (fresh rows), in this order:
// - warm-up: 500 orders, then ANALYZE of every table: the burst tables' statistics are those of
//   a database that has seen a little traffic, not current ones (autoanalyze runs at most once a
//   minute per database and not within a burst of seconds).
// - burst (--burst): one merchant, signed webhooks, one fast receiver. Reports the time until
//   all were EXPIRED, deliveries per second (deliveries ÷ first event → last arrival), the lag of
//   each webhook (arrival − its event_created_at), lost and duplicated deliveries, and CPU.
// - ceiling: the same bodies to the same receiver from one Node process, --concurrency in flight
//   (by default the worker's limit per destination, PER_DESTINATION: what Kasir may have in
//   flight to this receiver).
// - expiry (--expiry): that many overdue orders over 10 merchants on the fast receivers; all must
//   be EXPIRED within 30 s of the line starting. Their webhooks are delivered and reported too.
// - fairness (--fairness), last (its broken receiver's retries would run into later runs):
//   orders spread over --fast merchants, each with its own fast receiver; then the same again
//   with one more merchant whose receiver hangs past the timeout (or answers 500: --slow fail),
//   with as many orders as each fast merchant. Compares the fast merchants' lag p99 with and
//   without it (target: within 2×).
// - via API (--via-api N, first of all when given): the burst as a flash sale makes it. N orders
//   created through the API (api + vendor worker + simulator, as the Procfile runs them) at
//   --api-rate a second, each expiring a minute after its creation, with no ANALYZE and
//   autovacuum at its defaults; the expiry line is held back until the last is overdue, then
//   started, and every order.expired webhook waited for, as in the burst run.
// A size of 0 skips a run. Durable database unless --ephemeral (scripts/bench/database.ts).
// --stats counts statements per delivery (pg_stat_statements); --explain MS also logs the plan
// of every statement slower than MS ms (auto_explain, as executed) and prints the slowest.
import { createHmac, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { defaultBrand } from '../../db/brands.ts';
import { setRoute } from '../../db/vendors.ts';
import { freePort } from '../lib/cluster.ts';
import { createMerchant } from '../../db/merchants.ts';
import { PER_DESTINATION } from '../../workers/webhook-dispatch.ts';
import { startCpuSample } from './cpu.ts';
import { databaseOptions, durabilityNote, runFacts } from './database.ts';
import { startProcess, type BenchProcess } from './processes.ts';
import { closeSession, countsStatements, cpuProbes, MARK, openSession, positive, startChild, startSimulatorVendor, VENDOR, type Session } from './session.ts';

/** Issue 32's targets. */
const TARGET_RATE = 2_000;
const TARGET_P99_MS = 10_000;
const TARGET_EXPIRY_MS = 30_000;
const TARGET_FAIRNESS = 2;
const WARMUP_ORDERS = 500;
const EXPIRY_MERCHANTS = 10;

type Mode = 'ok' | 'hang' | 'fail';
interface PortTally {
  requests: number;
  ids: number;
  duplicates: number;
  lags: number[];
  first_ms: number | null;
  last_ms: number | null;
}

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      burst: { type: 'string', default: '20000' },
      fairness: { type: 'string', default: '8000' },
      fast: { type: 'string', default: '8' },
      slow: { type: 'string', default: 'hang' },
      expiry: { type: 'string', default: '100000' },
      concurrency: { type: 'string', default: String(PER_DESTINATION) },
      'worker-pool': { type: 'string', default: '20' },
      'timeout-ms': { type: 'string', default: '10000' },
      'via-api': { type: 'string', default: '0' },
      'api-rate': { type: 'string', default: '125' },
      ...databaseOptions,
      stats: { type: 'boolean', default: false },
      explain: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const size = (flag: string, v: string) => (v === '0' ? 0 : positive(flag, v));
  const burst = size('burst', values.burst);
  const fairness = size('fairness', values.fairness);
  const expiry = size('expiry', values.expiry);
  const fast = positive('fast', values.fast);
  const slow = values.slow as Mode;
  if (slow !== 'hang' && slow !== 'fail') throw Object.assign(new Error('--slow must be hang or fail'), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  const concurrency = positive('concurrency', values.concurrency);
  const timeoutMs = positive('timeout-ms', values['timeout-ms']);
  const viaApi = size('via-api', values['via-api']);
  const apiRate = positive('api-rate', values['api-rate']);

  const explainMs = values.explain === undefined ? undefined : positive('explain', values.explain);
  const session = await openSession({ ephemeral: values.ephemeral, durable: values.durable, stats: values.stats, explainMs });
  try {
    const receiver = await startProcess('receiver', 'scripts/bench/webhook-receiver.ts', [], {}, 'ipc');
    session.processes.push(receiver);
    const ask = askOver(receiver);
    const modes: Mode[] = ['ok', ...Array.from({ length: fast }, () => 'ok' as const), slow];
    const { ports } = (await ask({ cmd: 'listen', modes })) as { ports: number[] };
    const [burstPort, ...rest] = ports;
    const fastPorts = rest.slice(0, fast);
    const slowPort = rest[fast];
    const urlOf = (port: number) => `http://127.0.0.1:${port}/kasir/webhooks`;

    const workerEnv = {
      ...session.common,
      NOTIFY_URL_ALLOWLIST: '127.0.0.1',
      WEBHOOK_TIMEOUT_MS: String(timeoutMs),
      DB_POOL_SIZE: values['worker-pool'],
    };
    await startChild(session, 'webhook worker', 'workers/run.ts', ['webhook'], workerEnv);
    const b: Bench = { session, ask, workerEnv, stats: (values.stats || explainMs !== undefined) && (await countsStatements(session.client)), logFile: session.db.logFile ?? null };
    const report: Report = { bench: 'webhooks', ...runFacts(session.db, session.loadBefore), settings: { burst, fairness, fast, slow, expiry, concurrency, timeout_ms: timeoutMs, worker_db_pool: Number(values['worker-pool']), via_api: viaApi, api_rate: apiRate }, runs: {} };

    // First, on a database that has seen nothing else: statistics as a fresh install has them.
    if (viaApi) {
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      const [m] = await merchants(session, 1, () => urlOf(burstPort), 'via-api', secret);
      const made = await ordersThroughApi(b, m, viaApi, apiRate);
      report.runs.via_api = { ...(await expiryRun(b, `burst after ${made.created} orders made through the API over ${made.seconds} s`, [m], viaApi, [burstPort], undefined, false)), created_through_api: made };
      report.runs.via_api.target_met = report.runs.via_api.deliveries_per_s >= TARGET_RATE && report.runs.via_api.lag_ms.p99 <= TARGET_P99_MS && report.runs.via_api.lost === 0;
    }

    // Warm-up, then statistics as a database that has seen a little traffic has them.
    const warm = await merchants(session, 1, () => urlOf(burstPort), 'warm');
    await expiryRun(b, 'warm-up', warm, WARMUP_ORDERS, [burstPort]);
    await session.client.query(`${MARK} analyze`);

    if (burst) {
      const secret = `whsec_${randomBytes(24).toString('base64')}`;
      const [m] = await merchants(session, 1, () => urlOf(burstPort), 'burst', secret);
      report.runs.burst = await expiryRun(b, 'burst', [m], burst, [burstPort]);
      report.runs.ceiling = await ceilingRun(b, m.id, secret, concurrency, burstPort, report.runs.burst.deliveries_per_s);
    }
    if (expiry) {
      const ms = await merchants(session, EXPIRY_MERCHANTS, (i) => urlOf(fastPorts[i % fastPorts.length]), 'expiry');
      report.runs.expiry = await expiryRun(b, 'expiry burst', ms, expiry, fastPorts);
    }
    if (fairness) {
      const per = Math.ceil(fairness / fast);
      const fastOnes = await merchants(session, fast, (i) => urlOf(fastPorts[i]), 'fair-a');
      const alone = await expiryRun(b, 'fairness, fast merchants alone', fastOnes, per * fast, fastPorts);
      const fastAgain = await merchants(session, fast, (i) => urlOf(fastPorts[i]), 'fair-b');
      const [broken] = await merchants(session, 1, () => urlOf(slowPort), `fair-${slow}`);
      const beside = await expiryRun(b, `fairness, beside a merchant whose receiver ${slow === 'hang' ? 'hangs' : 'answers 500'}`, [...fastAgain, broken], per * (fast + 1), fastPorts, slowPort);
      const ratio = Number((beside.lag_ms.p99 / Math.max(1, alone.lag_ms.p99)).toFixed(2));
      report.runs.fairness = { alone, beside, p99_ratio: ratio, target_met: ratio <= TARGET_FAIRNESS && beside.lost === 0 };
    }
    if (report.runs.burst) {
      const r = report.runs.burst;
      report.runs.burst.target_met = r.deliveries_per_s >= TARGET_RATE && r.lag_ms.p99 <= TARGET_P99_MS && r.lost === 0;
    }
    if (report.runs.expiry) report.runs.expiry.target_met = report.runs.expiry.expired_ms <= TARGET_EXPIRY_MS;
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await closeSession(session);
  }
}

interface Bench {
  session: Session;
  ask: (m: object) => Promise<unknown>;
  workerEnv: Record<string, string>;
  stats: boolean;
  /** The cluster's log with auto_explain's plans (--explain), read from where the last run left it. */
  logFile: string | null;
}

/** Request/answer over a child's IPC channel (one request at a time). */
function askOver(p: BenchProcess) {
  return (m: object) =>
    new Promise<unknown>((resolve) => {
      p.child.once('message', resolve);
      p.child.send(m);
    });
}

interface BenchMerchant {
  id: string;
  port: number;
  apiKey: string;
  secret: string | null;
}

async function merchants(s: Session, n: number, url: (i: number) => string, label: string, secret: string | null = null): Promise<BenchMerchant[]> {
  const brandId = (await defaultBrand(s.pool)).id;
  const out: BenchMerchant[] = [];
  for (let i = 0; i < n; i++) {
    const m = await createMerchant(s.pool, s.sealer, { name: `Bench ${label} ${i}`, settlementType: 'MANUAL', brandId, webhookSecret: secret, notifyUrl: url(i) });
    out.push({ id: m.merchant_id, port: Number(new URL(url(i)).port), apiKey: m.api_key, secret });
  }
  return out;
}

/** `count` PENDING V1 orders a minute overdue, round-robin over the merchants, in one statement per 50,000. */
async function overdueOrders(s: Session, ms: BenchMerchant[], count: number) {
  const tag = randomBytes(4).toString('hex');
  for (let start = 0; start < count; start += 50_000) {
    await s.client.query(
      `${MARK} insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, customer_name, qr_token, expires_at, created_at, updated_at)
       select gen_random_uuid(), ($1::uuid[])[1 + n % cardinality($1::uuid[])], 'ORD-' || $2 || '-' || n, 'WB-' || $2 || '-' || n, 'V1',
              10000 + n, 'PENDING', 'Bench', md5($2 || n), now() - interval '1 minute', now() - interval '16 minutes', now() - interval '16 minutes'
       from generate_series($3::int, $4::int) n`,
      [ms.map((m) => m.id), tag, start + 1, Math.min(start + 50_000, count)],
    );
  }
  // The orders table as a live database's: analyzed (the expiry sweep reads it by its index).
  await s.client.query(`${MARK} analyze orders`);
}

/**
 * `count` orders through the API at `rate` a second (autocannon's overall rate), each expiring a
 * minute after it was made, then the wait until the last is overdue (the expiry line is not
 * running yet: the scheduler starts in expiryRun). The API, the vendor worker and the simulator
 * stop before the burst, as a sale's traffic ends; what they left in the tables stays.
 */
async function ordersThroughApi(b: Bench, m: BenchMerchant, count: number, rate: number) {
  const s = b.session;
  const sim = await startSimulatorVendor(s);
  await setRoute(s.pool, { merchantId: m.id, method: 'QRIS', vendorCode: VENDOR, priority: 10 });
  const apiPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const api = await startChild(s, 'api', 'api/server.ts', [], { ...s.common, HOST: '127.0.0.1', PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl, NOTIFY_URL_ALLOWLIST: '127.0.0.1' });
  const vendor = await startChild(s, 'vendor worker', 'workers/run.ts', ['vendor'], s.common);
  const started = Date.now();
  let n = 0;
  const tag = randomBytes(3).toString('hex');
  const result = await autocannon({
    url: apiUrl,
    connections: 10,
    overallRate: rate,
    amount: count,
    timeout: 30,
    requests: [{
      method: 'POST',
      path: '/v1/orders',
      setupRequest: (request) => {
        const id = `FS-${tag}-${++n}`;
        const body = JSON.stringify({ merchant_order_id: id, amount: 10_000 + (n % 90_000), payment_method: 'QRIS', expire_minutes: 1 });
        const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': m.apiKey, 'idempotency-key': id };
        if (m.secret) headers['x-signature'] = `sha256=${createHmac('sha256', m.secret).update(body).digest('hex')}`;
        return { ...request, headers, body };
      },
    }],
  });
  const seconds = Number(((Date.now() - started) / 1000).toFixed(1));
  for (const p of [api, vendor, sim]) {
    await p.stop();
    s.processes.splice(s.processes.indexOf(p), 1);
  }
  const { rows: [row] } = await s.client.query<{ created: number; pending: number; last_expiry: Date | null }>(
    `${MARK} select count(*)::int as created, count(*) filter (where status = 'PENDING')::int as pending, max(expires_at) as last_expiry from orders where merchant_id = $1`,
    [m.id],
  );
  if (row.last_expiry) await delay(Math.max(0, row.last_expiry.getTime() - Date.now() + 1_000));
  return { created: row.created, pending: row.pending, seconds, non_2xx: result.non2xx, errors: result.errors, rate_per_s: Math.round(row.created / seconds) };
}

const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN);

/**
 * One burst: `count` overdue orders of `ms`, the expiry line (scheduler) started, and every
 * webhook waited for on the fast ports (a slow port's are not waited for). Lags are the fast
 * ports' only.
 */
async function expiryRun(b: Bench, label: string, ms: BenchMerchant[], count: number, fastPorts: number[], slowPort?: number, insertOrders = true) {
  const s = b.session;
  await b.ask({ cmd: 'report', reset: true });
  if (insertOrders) await overdueOrders(s, ms, count);
  const expected = await s.client.query<{ notify_url: string; n: number }>(
    `${MARK} select m.notify_url, count(*)::int as n from orders o join merchants m on m.id = o.merchant_id
     where o.merchant_id = any($1) group by m.notify_url`,
    [ms.map((m) => m.id)],
  );
  const perUrl = new Map(expected.rows.map((r) => [Number(new URL(r.notify_url).port), r.n]));
  const waitFor = fastPorts.reduce((a, p) => a + (perUrl.get(p) ?? 0), 0);
  if (b.stats) await s.client.query(`${MARK} select pg_stat_statements_reset()`);
  const logFrom = b.logFile ? (await stat(b.logFile).catch(() => ({ size: 0 }))).size : 0;
  const worker = s.processes.find((p) => p.name === 'webhook worker')!;
  const workerLogBefore = worker.logLines();
  const started = Date.now();
  const scheduler = await startChild(s, 'scheduler', 'workers/run.ts', ['scheduler'], { ...b.workerEnv, DB_POOL_SIZE: '5' });
  const cpu = startCpuSample(await cpuProbes(s, { worker: 'webhook worker', scheduler: 'scheduler', receiver: 'receiver' }));
  const deadline = started + 600_000;
  let tallies: Record<string, PortTally> = {};
  for (;;) {
    tallies = ((await b.ask({ cmd: 'report' })) as { ports: Record<string, PortTally> }).ports;
    const arrived = fastPorts.reduce((a, p) => a + tallies[p].ids, 0);
    if (arrived >= waitFor || Date.now() > deadline) break;
    await delay(250);
  }
  const cpuUse = cpu.stop();
  const logged = { worker: worker.logLines() - workerLogBefore, scheduler: scheduler.logLines(), last: [...worker.lastLines(), ...scheduler.lastLines()].at(-1)?.slice(0, 300) ?? null };
  await scheduler.stop();
  s.processes.splice(s.processes.indexOf(scheduler), 1);
  const { rows: [ex] } = await s.client.query<{ expired: number; first: number; last: number }>(
    `${MARK} select count(*)::int as expired, extract(epoch from min(e.created_at)) * 1000 as first, extract(epoch from max(e.created_at)) * 1000 as last
     from order_events e join orders o on o.id = e.order_id where o.merchant_id = any($1) and e.event = 'order.expired'`,
    [ms.map((m) => m.id)],
  );
  const fastTallies = fastPorts.map((p) => tallies[p]);
  const lags = fastTallies.flatMap((t) => t.lags).sort((x, y) => x - y);
  const arrived = fastTallies.reduce((a, t) => a + t.ids, 0);
  const lastArrival = Math.max(...fastTallies.map((t) => t.last_ms ?? 0));
  const firstEvent = Number(ex.first);
  const statements = b.stats ? await statementsPerDelivery(b, arrived) : null;
  const plans = b.logFile ? await slowPlans(b.logFile, logFrom) : null;
  return {
    label,
    orders: count,
    merchants: ms.length,
    expired: ex.expired,
    /** From the scheduler's spawn to the last order.expired event (its transaction's start). */
    expired_ms: Math.round(Number(ex.last) - started),
    expired_per_s: Math.round(ex.expired / ((Number(ex.last) - firstEvent) / 1000 || 1)),
    delivered: arrived,
    lost: waitFor - arrived,
    duplicates: fastTallies.reduce((a, t) => a + t.duplicates, 0),
    /** Deliveries ÷ (first event → last arrival). */
    deliveries_per_s: Math.round(arrived / ((lastArrival - firstEvent) / 1000)),
    last_arrival_s: Number(((lastArrival - firstEvent) / 1000).toFixed(1)),
    lag_ms: { p50: pct(lags, 0.5), p90: pct(lags, 0.9), p99: pct(lags, 0.99), max: lags.at(-1) ?? NaN },
    slow_port: slowPort ? { requests: tallies[slowPort].requests, ids: tallies[slowPort].ids } : null,
    cpu: cpuUse,
    /** Lines the worker and the scheduler logged (LOG_LEVEL=warn: trouble only) during the run. */
    logged,
    statements,
    plans,
    target_met: undefined as boolean | undefined,
  };
}

async function ceilingRun(b: Bench, merchantId: string, secret: string, concurrency: number, port: number, kasirRate: number) {
  const s = b.session;
  const p = await startChild(s, 'ceiling', 'scripts/bench/webhook-ceiling.ts', [], { DATABASE_URL: s.db.url, MERCHANT_ID: merchantId, WEBHOOK_SECRET: secret, CONCURRENCY: String(concurrency) });
  await b.ask({ cmd: 'report', reset: true });
  const probes = await cpuProbes(s, { ceiling: 'ceiling', receiver: 'receiver' });
  const cpu = startCpuSample(probes);
  const r = (await askOver(p)({ cmd: 'run' })) as { sent: number; non2xx: number; errors: number; elapsed_ms: number };
  const cpuUse = cpu.stop();
  const tally = ((await b.ask({ cmd: 'report', reset: true })) as { ports: Record<string, PortTally> }).ports[port];
  await p.stop();
  s.processes.splice(s.processes.indexOf(p), 1);
  const rate = Math.round(r.sent / (r.elapsed_ms / 1000));
  return { ...r, concurrency, received: tally.ids, deliveries_per_s: rate, ratio: Number((kasirRate / rate).toFixed(3)), cpu: cpuUse };
}

/** pg_stat_statements since the burst began, per delivery: which statements the path runs and what they cost. */
async function statementsPerDelivery(b: Bench, deliveries: number) {
  const { rows } = await b.session.client.query<{ query: string; calls: string; mean: number; plans: string; rows: string }>(
    `${MARK} select query, calls, mean_exec_time as mean, plans, rows from pg_stat_statements
     where query not like '%/* bench */%' and calls > 0 order by total_exec_time desc limit 14`,
  );
  return rows.map((r) => ({
    per_delivery: Number((Number(r.calls) / deliveries).toFixed(3)),
    mean_ms: Number(Number(r.mean).toFixed(3)),
    rows_per_call: Number((Number(r.rows) / Number(r.calls)).toFixed(1)),
    query: r.query.replace(/\s+/g, ' ').slice(0, 140),
  }));
}

/**
 * auto_explain's entries since `from` in the cluster's log (--explain), one per statement text:
 * how often it was slower than the threshold, its slowest duration and that execution's plan.
 */
async function slowPlans(logFile: string, from: number) {
  const text = (await readFile(logFile)).subarray(from).toString('utf8');
  const byQuery = new Map<string, { count: number; max_ms: number; plan: string }>();
  // An entry starts at a line carrying a severity ("LOG:  ", two spaces, whatever the prefix);
  // a statement's own lines may start in column 0 (pg-boss's are written that way).
  for (const entry of text.split(/\n(?=[^\n]*\b(?:LOG|ERROR|WARNING|FATAL|PANIC|DETAIL|HINT|STATEMENT|CONTEXT|NOTICE|INFO|DEBUG\d?): {2})/)) {
    const head = /duration: ([\d.]+) ms\s+plan:\n\s*Query Text: /.exec(entry);
    if (!head) continue;
    const rest = entry.slice(head.index + head[0].length);
    // The statement's text runs to its parameters, or else to the plan's first node.
    const params = /\n\s*Query Parameters: [^\n]*\n/.exec(rest);
    const node = /\n[ \t]*[A-Z][^\n]*?\s\(cost=/.exec(rest);
    const end = params ? params.index : node ? node.index : rest.length;
    const query = rest.slice(0, end).replace(/\s+/g, ' ').trim();
    if (query.includes('/* bench */')) continue;
    // The plan starts at its first node: a long parameter list may have been broken over lines.
    const plan = node ? rest.slice(node.index + 1) : rest.slice(end + 1);
    const key = query.slice(0, 120);
    const ms = Number(head[1]);
    const seen = byQuery.get(key) ?? { count: 0, max_ms: 0, plan: '' };
    seen.count++;
    if (ms > seen.max_ms) Object.assign(seen, { max_ms: ms, plan: plan.replace(/^\t/gm, '  ').trimEnd() });
    byQuery.set(key, seen);
  }
  return [...byQuery].map(([query, v]) => ({ query, ...v })).sort((a, b) => b.count * b.max_ms - a.count * a.max_ms).slice(0, 6);
}

type Run = Awaited<ReturnType<typeof expiryRun>>;
interface Report {
  bench: string;
  machine: { cores: number; load_before: number; load_after: number; node: string; postgres: string };
  database: { source: string; fsync: string; synchronous_commit: string };
  settings: Record<string, unknown>;
  runs: {
    via_api?: Run & { created_through_api: Awaited<ReturnType<typeof ordersThroughApi>> };
    burst?: Run;
    ceiling?: Awaited<ReturnType<typeof ceilingRun>>;
    fairness?: { alone: Run; beside: Run; p99_ratio: number; target_met: boolean };
    expiry?: Run;
  };
}

function text(r: Report): string {
  const cpu = (c: Run['cpu']) =>
    Object.entries(c.percent_of_one_core).filter(([k]) => k !== 'autocannon').map(([k, v]) => `${k} ${v ?? '?'}%`).join(', ') + `; machine ${c.machine_busy_percent}% busy`;
  const line = (x: Run) => [
    `  ${x.orders} orders over ${x.merchants} merchant(s): all ${x.expired} EXPIRED ${(x.expired_ms / 1000).toFixed(1)} s after the expiry line started (${x.expired_per_s}/s)`,
    `  ${x.delivered} delivered, ${x.lost} lost, ${x.duplicates} duplicated; ${x.deliveries_per_s} deliveries/s, the last ${x.last_arrival_s} s after the first event`,
    `  lag (event → arrival) p50 ${x.lag_ms.p50} ms, p90 ${x.lag_ms.p90} ms, p99 ${x.lag_ms.p99} ms, max ${x.lag_ms.max} ms`,
    ...(x.slow_port ? [`  the broken receiver got ${x.slow_port.requests} requests for ${x.slow_port.ids} deliveries meanwhile`] : []),
    `  cpu ${cpu(x.cpu)}`,
    ...(x.logged.worker || x.logged.scheduler ? [`  LOGGED worker ${x.logged.worker} lines, scheduler ${x.logged.scheduler}; last: ${x.logged.last}`] : []),
    ...(x.plans ? x.plans.flatMap((p) => [`  slow: ${p.count}× up to ${p.max_ms} ms  ${p.query}`, ...p.plan.split('\n').map((l) => `      ${l}`)]) : []),
    ...(x.statements ? ['  statements (per delivery, mean ms, rows per call):', ...x.statements.map((q) => `    ${q.per_delivery.toFixed(3).padStart(7)}× ${q.mean_ms.toFixed(3).padStart(8)} ms ${String(q.rows_per_call).padStart(6)}  ${q.query}`)] : []),
  ];
  const out = [
    'webhooks bench: order.expired webhooks from a burst of overdue orders, through the scheduler and webhook worker processes, to local receivers',
    `machine   ${r.machine.cores} cores (1-min load ${r.machine.load_before} at start, ${r.machine.load_after} at end${r.machine.load_before > r.machine.cores ? ': BUSY, figures unreliable' : ''}), Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}`,
    `database  ${r.database.source}: fsync=${r.database.fsync} synchronous_commit=${r.database.synchronous_commit}${durabilityNote(r.database)}`,
    `settings  ${JSON.stringify(r.settings)}`,
    '',
  ];
  if (r.runs.via_api) {
    const x = r.runs.via_api;
    const c = x.created_through_api;
    out.push(
      `via API (orders made through the API, no ANALYZE, autovacuum at its defaults, the expiry line held back): target ≥ ${TARGET_RATE}/s and p99 ≤ ${TARGET_P99_MS / 1000} s: ${x.target_met ? 'MET' : 'missed'}`,
      `  ${c.created} orders made in ${c.seconds} s (${c.rate_per_s}/s; ${c.non_2xx} non-2xx, ${c.errors} errors), ${c.pending} of them PENDING when the line started`,
      ...line(x),
    );
  }
  if (r.runs.burst) {
    const x = r.runs.burst;
    out.push(`burst (one merchant, signed, one fast receiver): target ≥ ${TARGET_RATE}/s and p99 ≤ ${TARGET_P99_MS / 1000} s: ${x.target_met ? 'MET' : 'missed'}`, ...line(x));
  }
  if (r.runs.ceiling) {
    const c = r.runs.ceiling;
    out.push(
      `ceiling (one Node process, ${c.concurrency} in flight, the same ${c.sent} bodies and headers to the same receiver): ${c.deliveries_per_s} deliveries/s in ${c.elapsed_ms} ms, ${c.non2xx} non-2xx, ${c.errors} errors`,
      `  ratio ${c.ratio} (Kasir ÷ ceiling); cpu ${cpu(c.cpu)}`,
    );
  }
  if (r.runs.expiry) {
    const x = r.runs.expiry;
    out.push('', `expiry burst: all EXPIRED within ${TARGET_EXPIRY_MS / 1000} s: ${x.target_met ? 'MET' : 'missed'}`, ...line(x));
  }
  if (r.runs.fairness) {
    const f = r.runs.fairness;
    out.push('', `fairness: the fast merchants' lag p99 beside a broken one ÷ alone = ${f.p99_ratio} (target ≤ ${TARGET_FAIRNESS}): ${f.target_met ? 'MET' : 'missed'}`);
    out.push(`${f.alone.label}:`, ...line(f.alone), `${f.beside.label}:`, ...line(f.beside));
  }
  return `${out.join('\n')}\n`;
}
