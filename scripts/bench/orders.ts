// Orders bench: POST /v1/orders throughput and latency through the whole stack, as production
// runs it, next to three ceilings measured in the same run on the same machine and database:
// - the pg-boss ceiling (scripts/bench/pgboss-ceiling.ts), which the target is about: the
//   smallest program of the design's shape with pg-boss in it (the API inserts the order and
//   sends a pg-boss job in one transaction, one worker fetches with pg-boss, calls an HTTP stub
//   and confirms, the API answers once woken by NOTIFY);
// - the queue-table ceiling (scripts/bench/design-ceiling.ts): the same shape with a plain
//   table as the queue (FOR UPDATE SKIP LOCKED), the bound without pg-boss;
// - Express + one INSERT (scripts/bench/ceiling.ts).
//
//   npm run bench -- orders [--connections 10,25,50] [--duration 15] [--warmup 3]
//                           [--pool 10] [--worker-pool 20] [--ephemeral] [--stats] [--json]
//                           [--orders-only] [--as-started]
//
// --as-started runs Kasir's side as `npm start` does: LOG_LEVEL info, the simulator journaling
// to a state file, every Procfile line running, the default pool sizes (the ceilings unchanged).
//
// Processes (each a child, as the Procfile runs it): the API (api/server.ts), the simulator
// gateway (gateways/simulator/server.ts, no injected latency), the `vendor` worker group
// (workers/run.ts vendor), and the ceiling (scripts/bench/ceiling.ts: Express 5, one INSERT per
// request). The simulator is registered as a vendor and the platform's default QRIS route, and
// one merchant without a webhook secret is created, directly through db/.
//
// For each connection count: orders (warm-up, then the measured run), then the ceiling (same).
// autocannon runs in this process; every request carries a unique merchant_order_id and
// Idempotency-Key. Around each measured run it samples the CPU of every process (/proc), and for
// orders reads where each create's time went from the rows' own timestamps (database clock).
// --stats runs on a cluster with pg_stat_statements and counts statements per created order.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type pg from 'pg';
import { defaultBrand } from '../../db/brands.ts';
import { createMerchant } from '../../db/merchants.ts';
import { setRoute } from '../../db/vendors.ts';
import { freePort } from '../lib/cluster.ts';
import { startCpuSample, type Probe } from './cpu.ts';
import { durabilityNote, runFacts } from './database.ts';
import type { BenchProcess } from './processes.ts';
import {
  closeSession,
  countsStatements,
  cpuProbes,
  diff,
  loadOptions,
  loadSettings,
  logCounts,
  MARK,
  omit,
  openSession,
  startChild,
  startSimulatorVendor,
  VENDOR,
} from './session.ts';

/**
 * Issue 40's target, at c=25 (it raised issue 32's 0.7): orders at ≥ 0.85 of the pg-boss
 * ceiling, p99 ≤ 2 × its p99, and ≤ 2.2 ms of the machine's CPU per order, every process counted.
 */
const TARGET_RATIO = 0.85;
const TARGET_P99_FACTOR = 2;
const TARGET_CPU_MS_PER_ORDER = 2.2;

/** CPU milliseconds per answered request, every sampled process counted: shares of one core at a rate. */
function cpuMsPerOrder(m: { rps: number; cpu: { percent_of_one_core: Record<string, number | null | undefined> } }): number | null {
  if (!m.rps) return null;
  const percent = Object.values(m.cpu.percent_of_one_core).reduce<number>((a, v) => a + (v ?? 0), 0);
  return Number(((percent * 10) / m.rps).toFixed(2));
}
const SETTLE_TIMEOUT_MS = 60_000;
const SETTLE_QUIET_MS = 500;

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { ...loadOptions, 'orders-only': { type: 'boolean', default: false }, 'as-started': { type: 'boolean', default: false } } as const,
    strict: true,
  });
  const { connections, duration, warmup, apiPool, workerPool } = loadSettings(values);
  const asStarted = values['as-started'];
  const session = await openSession(values);
  const { db, pool, sealer, client } = session;
  // --as-started: Kasir's processes as `npm start` runs them (scripts/dev.ts): its default log
  // level (info: a line per request), every Procfile line running, each with the default pool
  // size, and the simulator journaling its state to a file.
  const common = asStarted ? { ...session.common, LOG_LEVEL: 'info' } : session.common;
  const poolOf = (size: number): Record<string, string> => (asStarted ? {} : { DB_POOL_SIZE: String(size) });
  const journalDir = asStarted ? await mkdtemp(`${tmpdir()}/kasir-bench-journal-`) : null;
  try {
    // The simulator, registered as the vendor of every order the bench makes.
    // (At info it logs a line per QR to stderr: read and counted here, as a terminal would take them.)
    await startSimulatorVendor(session, journalDir ? { LOG_LEVEL: 'info', SIMULATOR_STATE_FILE: `${journalDir}/simulator-state.jsonl` } : {}, asStarted);
    const merchant = await createMerchant(pool, sealer, {
      name: 'Bench Merchant',
      settlementType: 'MANUAL',
      brandId: (await defaultBrand(pool)).id,
      webhookSecret: null, // no X-Signature to compute
      notifyUrl: null,
    });
    // The platform default route on a throwaway cluster (as npm start and the tests do); on a
    // DATABASE_URL server, the merchant's own route, so the server's default routes stay as they are.
    const ownRoute = db.source === 'DATABASE_URL';
    await setRoute(pool, { merchantId: ownRoute ? merchant.merchant_id : null, method: 'QRIS', vendorCode: VENDOR, priority: 10 });

    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    await startChild(session, 'api', 'api/server.ts', [], { ...common, HOST: '127.0.0.1', PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl, ...poolOf(apiPool) });
    await startChild(session, 'vendor worker', 'workers/run.ts', ['vendor'], { ...common, ...poolOf(workerPool) });
    if (asStarted) {
      for (const group of ['disbursement', 'webhook', 'scheduler', 'csv']) await startChild(session, `${group} worker`, 'workers/run.ts', [group], common);
    }
    const ceiling = values['orders-only'] ? null : await startChild(session, 'ceiling', 'scripts/bench/ceiling.ts', [], { DATABASE_URL: db.url, PORT: '0', DB_POOL_SIZE: String(apiPool) });
    const ceilingUrl = ceiling ? `http://127.0.0.1:${(ceiling.ready as { port: number }).port}` : null;
    // The design ceiling (scripts/bench/design-ceiling.ts): web, worker and vendor stub, pooled like Kasir's.
    let designUrl: string | null = null;
    let pgbossUrl: string | null = null;
    if (!values['orders-only']) {
      const port = (p: { ready: unknown }) => (p.ready as { port: number }).port;
      const stub = await startChild(session, 'design stub', 'scripts/bench/design-ceiling.ts', ['stub'], { PORT: '0' });
      const web = await startChild(session, 'design web', 'scripts/bench/design-ceiling.ts', ['web'], { DATABASE_URL: db.url, PORT: '0', DB_POOL_SIZE: String(apiPool) });
      await startChild(session, 'design worker', 'scripts/bench/design-ceiling.ts', ['worker'], { DATABASE_URL: db.url, DB_POOL_SIZE: String(workerPool), STUB_URL: `http://127.0.0.1:${port(stub)}` });
      designUrl = `http://127.0.0.1:${port(web)}`;
      const bossWeb = await startChild(session, 'pgboss web', 'scripts/bench/pgboss-ceiling.ts', ['web'], { DATABASE_URL: db.url, PORT: '0', DB_POOL_SIZE: String(apiPool) });
      await startChild(session, 'pgboss worker', 'scripts/bench/pgboss-ceiling.ts', ['worker'], { DATABASE_URL: db.url, DB_POOL_SIZE: String(workerPool), STUB_URL: `http://127.0.0.1:${port(stub)}` });
      pgbossUrl = `http://127.0.0.1:${port(bossWeb)}`;
    }
    const probes = await cpuProbes(session, {
      api: 'api',
      worker: 'vendor worker',
      simulator: 'simulator',
      ceiling: 'ceiling',
      design_web: 'design web',
      design_worker: 'design worker',
      design_stub: 'design stub',
      pgboss_web: 'pgboss web',
      pgboss_worker: 'pgboss worker',
    });

    const runId = randomBytes(3).toString('hex');
    const headers = { 'content-type': 'application/json', 'x-api-key': merchant.api_key };
    await smokeTest(apiUrl, headers, `${runId}-smoke`);

    const stats = await countsStatements(client);
    const bench: Bench = { client, headers, runId, duration, warmup, probes, stats, merchantId: merchant.merchant_id, logs: session.processes };
    const runs = [];
    for (const c of connections) {
      const orders = await measure(bench, 'orders', apiUrl, c);
      const ceil = ceilingUrl ? await measure(bench, 'ceiling', ceilingUrl, c) : null;
      const design = designUrl ? await measure(bench, 'design', designUrl, c) : null;
      const pgboss = pgbossUrl ? await measure(bench, 'pgboss', pgbossUrl, c) : null;
      const ratio = pgboss ? Number((orders.rps / pgboss.rps).toFixed(3)) : null;
      runs.push({
        connections: c,
        orders,
        pgboss,
        design,
        ceiling: ceil,
        /** orders ÷ the pg-boss ceiling: what the target is about. */
        ratio,
        /** orders ÷ the queue-table ceiling. */
        design_ratio: design ? Number((orders.rps / design.rps).toFixed(3)) : null,
        /** orders ÷ Express + one INSERT: the second figure. */
        insert_ratio: ceil ? Number((orders.rps / ceil.rps).toFixed(3)) : null,
        /** The machine's CPU per order, every process of the orders run counted. */
        cpu_ms_per_order: cpuMsPerOrder(orders),
        target_met:
          ratio !== null &&
          ratio >= TARGET_RATIO &&
          orders.latency_ms.p99 <= TARGET_P99_FACTOR * pgboss!.latency_ms.p99 &&
          (cpuMsPerOrder(orders) ?? Infinity) <= TARGET_CPU_MS_PER_ORDER &&
          orders.non2xx === 0,
      });
    }

    const report = {
      bench: 'orders',
      ...runFacts(db, session.loadBefore),
      settings: {
        duration_s: duration,
        warmup_s: warmup,
        api_db_pool: apiPool,
        worker_db_pool: workerPool,
        ceiling_db_pool: apiPool,
        route: ownRoute ? 'merchant route' : 'default QRIS route',
        as_started: asStarted,
        target: { ratio_to_pgboss_ceiling: TARGET_RATIO, p99_factor: TARGET_P99_FACTOR, cpu_ms_per_order: TARGET_CPU_MS_PER_ORDER },
      },
      runs,
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await closeSession(session);
    if (journalDir) await rm(journalDir, { recursive: true, force: true });
  }
}

interface Bench {
  client: pg.Client;
  headers: Record<string, string>;
  runId: string;
  duration: number;
  warmup: number;
  probes: Record<string, Probe>;
  stats: boolean;
  merchantId: string;
  logs: BenchProcess[];
}

function orderBody(id: string, n: number): string {
  return JSON.stringify({
    merchant_order_id: id,
    amount: 10_000 + (n % 90_000),
    payment_method: 'QRIS',
    customer_name: 'Bench Customer',
    customer_email: 'bench@example.com',
  });
}

/** One order before any load: the stack must answer 201, or there is nothing to measure. */
async function smokeTest(apiUrl: string, headers: Record<string, string>, id: string) {
  const response = await fetch(`${apiUrl}/v1/orders`, { method: 'POST', headers: { ...headers, 'idempotency-key': id }, body: orderBody(id, 0) });
  if (response.status !== 201) throw new Error(`smoke test: POST /v1/orders answered ${response.status}: ${await response.text()}`);
}

/** autocannon against POST /v1/orders, each request with a fresh merchant_order_id and key. */
function load(url: string, headers: Record<string, string>, connections: number, duration: number, prefix: string) {
  let n = 0;
  return autocannon({
    url,
    connections,
    duration,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: '/v1/orders',
        setupRequest: (request) => {
          const id = `${prefix}-${++n}`;
          return { ...request, headers: { ...headers, 'idempotency-key': id }, body: orderBody(id, n) };
        },
      },
    ],
  });
}

const DESIGN_PROBES = ['design_web', 'design_worker'];
const PGBOSS_PROBES = ['pgboss_web', 'pgboss_worker'];
const KASIR_PROBES = ['api', 'worker', 'simulator'];

async function measure(b: Bench, target: 'orders' | 'ceiling' | 'design' | 'pgboss', url: string, connections: number) {
  const tag = `${b.runId}-${target[0]}${connections}`;
  await load(url, b.headers, connections, b.warmup, `${tag}w`);
  await settle(b.client);
  // Current statistics, as autovacuum keeps them on a live database: the tables just grew from
  // nothing (see the queue bench for what stale statistics do to pg-boss's statements).
  await b.client.query(`${MARK} analyze`);
  if (b.stats) await b.client.query(`${MARK} select pg_stat_statements_reset()`);

  const logsBefore = logCounts(b.logs);
  const others = {
    orders: ['ceiling', 'design_stub', ...DESIGN_PROBES, ...PGBOSS_PROBES],
    ceiling: [...KASIR_PROBES, 'design_stub', ...DESIGN_PROBES, ...PGBOSS_PROBES],
    design: [...KASIR_PROBES, 'ceiling', ...PGBOSS_PROBES],
    pgboss: [...KASIR_PROBES, 'ceiling', ...DESIGN_PROBES],
  }[target];
  const cpu = startCpuSample(omit(b.probes, ...others));
  const result = await load(url, b.headers, connections, b.duration, `${tag}m`);
  const cpuUse = cpu.stop();
  const unsettled = await settle(b.client);

  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  const completed = Object.values(statuses).reduce((a, b) => a + b, 0);
  const measured = {
    connections,
    requests: completed,
    rps: Math.round(completed / result.duration),
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, mean: Number(result.latency.mean.toFixed(1)) },
    non2xx: result.non2xx,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    cpu: cpuUse,
    /** Lines each process logged (LOG_LEVEL=warn) during the measured run and its tail. */
    log_lines: diff(logCounts(b.logs), logsBefore),
  };
  const logSample = Object.fromEntries(
    b.logs.filter((p) => measured.log_lines[p.name]).map((p) => [p.name, (p.lastLines().at(-1) ?? '').slice(0, 300)]),
  );
  if (target !== 'orders') return { ...measured, log_sample: logSample, breakdown: null, statements: null, unsettled };
  return {
    ...measured,
    log_sample: logSample,
    unsettled,
    breakdown: await breakdown(b.client, b.merchantId, `${tag}m-%`),
    statements: b.stats ? await statements(b.client, b.merchantId, `${tag}m-%`) : null,
  };
}

/**
 * Waits until no order attempt is left CREATING (the load's tail); returns how many were left.
 * Requests cut off when the load stops may still be inside the API, their transaction not yet
 * committed (so not counted): zero must be seen on two polls SETTLE_QUIET_MS apart.
 */
async function settle(client: pg.Client): Promise<number> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let zeros = 0;
  for (;;) {
    // The partial index orders_creating_idx makes this cheap whatever the table's size.
    const { rows } = await client.query<{ n: number }>(`${MARK} select count(*)::int as n from orders where status = 'CREATING'`);
    zeros = rows[0].n === 0 ? zeros + 1 : 0;
    if (zeros === 2 || Date.now() > deadline) return rows[0].n;
    await delay(zeros ? SETTLE_QUIET_MS : 100);
  }
}

/**
 * Where each create's time went, from timestamps the database itself wrote (one clock):
 *   order.created_at = job.created_on   the API's create transaction (now() at its start)
 *   job.started_on                      the vendor worker's fetch claimed the job
 *   'order.created' event created_at    the worker's confirming statement
 * so pickup = started_on − created_on, and worker = confirm − started_on (the job's data
 * loads, the vendor call, and the wait for the rest of its batch's connections).
 */
async function breakdown(client: pg.Client, merchantId: string, like: string) {
  const { rows } = await client.query(
    `${MARK}
     with t as (
       select o.status, j.retry_count, j.state as job_state,
              extract(epoch from j.started_on - j.created_on) * 1000 as pickup,
              extract(epoch from e.created_at - j.started_on) * 1000 as worker,
              extract(epoch from e.created_at - j.created_on) * 1000 as to_confirm,
              j.started_on
         from orders o
         join pgboss.job j on j.name = 'order-create' and j.data->>'order_id' = o.id::text
         left join order_events e on e.order_id = o.id and e.event = 'order.created'
        where o.merchant_id = $1 and o.merchant_order_id like $2
     )
     select count(*)::int as orders,
            count(*) filter (where status = 'PENDING')::int as pending,
            -- A job whose handler failed waits in 'retry' (retry_count 0) until it runs again.
            count(*) filter (where retry_count > 0 or job_state in ('retry', 'failed'))::int as retried,
            count(distinct started_on)::int as fetches,
            -- A retried job's started_on is its last fetch's: only first runs say how long pickup took.
            percentile_disc(array[0.5, 0.99]) within group (order by pickup) filter (where retry_count = 0) as pickup,
            percentile_disc(array[0.5, 0.99]) within group (order by worker) filter (where retry_count = 0) as worker,
            percentile_disc(array[0.5, 0.99]) within group (order by to_confirm) as to_confirm
       from t`,
    [merchantId, like],
  );
  const r = rows[0] as { orders: number; pending: number; retried: number; fetches: number; pickup: number[] | null; worker: number[] | null; to_confirm: number[] | null };
  const pair = (v: number[] | null) => (v ? { p50: round1(v[0]), p99: round1(v[1]) } : null);
  return {
    orders: r.orders,
    pending: r.pending,
    /** Jobs that ran more than once (a handler failure, or an expiry): each is a wasted fetch and run. */
    retried_jobs: r.retried,
    fetches: r.fetches,
    mean_batch: r.fetches ? Number((r.orders / r.fetches).toFixed(1)) : null,
    pickup_ms: pair(r.pickup),
    worker_ms: pair(r.worker),
    to_confirm_ms: pair(r.to_confirm),
  };
}

/** pg_stat_statements since the reset before the measured run, per order created in it. */
async function statements(client: pg.Client, merchantId: string, like: string) {
  const { rows: count } = await client.query<{ n: number }>(
    `${MARK} select count(*)::int as n from orders where merchant_id = $1 and merchant_order_id like $2`,
    [merchantId, like],
  );
  const orders = count[0].n;
  const { rows } = await client.query<{ query: string; calls: string; total_ms: number; plans: string; plan_ms: number; rows: string }>(
    `${MARK}
     select query, calls, total_exec_time as total_ms, plans, total_plan_time as plan_ms, rows
       from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query not like '${MARK}%'
      order by calls desc`,
  );
  const per = (v: number) => Number((v / orders).toFixed(2));
  const all = rows.map((r) => ({
    side: sideOf(r.query),
    per_order: per(Number(r.calls)),
    exec_ms_per_order: Number((r.total_ms / orders).toFixed(3)),
    mean_ms: Number((r.total_ms / Number(r.calls)).toFixed(3)),
    /** Plans made per call (1: planned every time; near 0: a prepared statement's cached plan). */
    plans_per_call: Number((Number(r.plans) / Number(r.calls)).toFixed(2)),
    plan_ms_per_order: Number((r.plan_ms / orders).toFixed(3)),
    query: r.query.replace(/\s+/g, ' ').trim().slice(0, 110),
  }));
  const sum = (side?: string) =>
    Number(all.filter((s) => (side ? s.side === side : s.side !== 'internal')).reduce((a, s) => a + s.per_order, 0).toFixed(2));
  return {
    orders,
    /** Statements sent per order created (round trips; foreign-key checks are not counted). */
    per_order: { total: sum(), api: sum('api'), worker: sum('worker'), other: sum('?') },
    exec_ms_per_order: Number((all.reduce((a, s) => a + s.exec_ms_per_order, 0)).toFixed(3)),
    plan_ms_per_order: Number((all.reduce((a, s) => a + s.plan_ms_per_order, 0)).toFixed(3)),
    top: all.filter((s) => s.per_order >= 0.01),
  };
}

/**
 * Which process sends a statement on the create path, by its text; 'internal' marks the foreign-key
 * checks Postgres runs inside another statement (not round trips).
 */
function sideOf(query: string): 'api' | 'worker' | 'internal' | '?' {
  const q = query.replace(/\s+/g, ' ').trim().toLowerCase();
  if (/^select .* from only .* for key share of x$/.test(q)) return 'internal';
  // Only the API's create opens a transaction on this path (the worker's statements autocommit).
  if (/^(start transaction|begin|commit|rollback)$/.test(q)) return 'api';
  if (/where api_key_hash =|^insert into idempotency_keys|^insert into orders|^select request_hash, .* from idempotency_keys|^with ins as \( insert into pgboss\./.test(q)) {
    return 'api';
  }
  if (/^select id, merchant_id, ref_code, .* from orders where id = \$1$|from vendor_routes|^with confirmed as|set pending_vendor|from merchants where id =|^with next as \( select j\.id from pgboss|json_to_recordset/.test(q)) {
    return 'worker';
  }
  return '?';
}

const round1 = (v: number) => Number(Number(v).toFixed(1));

type Report = {
  machine: { cores: number; load_before: number; load_after: number; node: string; postgres: string };
  database: { source: string; fsync: string; synchronous_commit: string };
  settings: { duration_s: number; warmup_s: number; api_db_pool: number; worker_db_pool: number; route: string; as_started: boolean };
  runs: {
    connections: number;
    orders: Awaited<ReturnType<typeof measure>>;
    pgboss: Awaited<ReturnType<typeof measure>> | null;
    design: Awaited<ReturnType<typeof measure>> | null;
    ceiling: Awaited<ReturnType<typeof measure>> | null;
    ratio: number | null;
    design_ratio: number | null;
    insert_ratio: number | null;
    cpu_ms_per_order: number | null;
    target_met: boolean;
  }[];
};

function text(r: Report): string {
  const lines = [
    `orders bench: POST /v1/orders through api + vendor worker + simulator, vs the pg-boss ceiling (web + pg-boss + worker + HTTP stub), the queue-table ceiling (the same with a table as the queue) and Express 5 + one INSERT`,
    `machine   ${r.machine.cores} cores (1-min load ${r.machine.load_before} at start, ${r.machine.load_after} at end` +
      `${r.machine.load_before > r.machine.cores ? ': BUSY, figures unreliable' : ''}), Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}`,
    `database  ${r.database.source}: fsync=${r.database.fsync} synchronous_commit=${r.database.synchronous_commit}` +
      durabilityNote(r.database),
    `settings  ${r.settings.duration_s} s measured after ${r.settings.warmup_s} s warm-up; DB_POOL_SIZE api ${r.settings.api_db_pool} ` +
      `(ceiling the same), vendor worker ${r.settings.worker_db_pool}; ${r.settings.route}`,
    ...(r.settings.as_started
      ? ['as-started Kasir as npm start runs it: LOG_LEVEL info, simulator journal, all seven Procfile lines, default pool sizes (20; the ceilings keep the figures above)']
      : []),
    '',
  ];
  // CPU milliseconds per answered request: a share of one core at a rate. Far less sensitive to a
  // busy machine than the rate itself, so runs on a shared machine still compare.
  const msPer = (percent: number, rps: number) => (rps ? ((percent * 10) / rps).toFixed(2) : '?');
  const cpu = (m: { rps: number; cpu: ReturnType<ReturnType<typeof startCpuSample>['stop']> }) => {
    const shares = Object.entries(m.cpu.percent_of_one_core);
    const total = shares.reduce((a, [, v]) => a + (v ?? 0), 0);
    return (
      shares.map(([k, v]) => `${k} ${v ?? '?'}% = ${v === undefined || v === null ? '?' : msPer(v, m.rps)} ms/order (sys ${m.cpu.system_percent_of_one_core[k] ?? '?'})`).join(', ') +
      `; all ${msPer(total, m.rps)} ms/order; machine ${m.cpu.machine_busy_percent}% busy`
    );
  };
  const codes = (m: { statuses: Record<string, number>; errors: number; timeouts: number }) =>
    Object.entries(m.statuses)
      .filter(([code]) => !code.startsWith('2'))
      .map(([code, n]) => `${n}×${code}`)
      .concat(m.errors ? [`${m.errors} errors`] : [], m.timeouts ? [`${m.timeouts} timeouts`] : [])
      .join(' ') || 'none';
  for (const run of r.runs) {
    const o = run.orders;
    lines.push(
      `c=${run.connections}`,
      `  orders   ${String(o.rps).padStart(6)} req/s  p50 ${o.latency_ms.p50} ms  p99 ${o.latency_ms.p99} ms  max ${o.latency_ms.max} ms  non-2xx: ${codes(o)}`,
    );
    if (run.pgboss) {
      const g = run.pgboss;
      lines.push(
        `  pg-boss  ${String(g.rps).padStart(6)} req/s  p50 ${g.latency_ms.p50} ms  p99 ${g.latency_ms.p99} ms  max ${g.latency_ms.max} ms  non-2xx: ${codes(g)}`,
        `  ratio    ${run.ratio}  (orders ÷ pg-boss ceiling; target ≥ ${TARGET_RATIO} with orders p99 ≤ ${TARGET_P99_FACTOR} × its p99 = ${TARGET_P99_FACTOR * g.latency_ms.p99} ms and ≤ ${TARGET_CPU_MS_PER_ORDER} ms of CPU per order (${run.cpu_ms_per_order ?? '?'}): ${run.target_met ? 'MET' : 'missed'})`,
      );
    }
    if (run.design) {
      const d = run.design;
      lines.push(
        `  table    ${String(d.rps).padStart(6)} req/s  p50 ${d.latency_ms.p50} ms  p99 ${d.latency_ms.p99} ms  max ${d.latency_ms.max} ms  non-2xx: ${codes(d)}`,
        `  ratio    ${run.design_ratio}  (orders ÷ queue-table ceiling)`,
      );
    }
    if (run.ceiling) {
      const c = run.ceiling;
      lines.push(
        `  insert   ${String(c.rps).padStart(6)} req/s  p50 ${c.latency_ms.p50} ms  p99 ${c.latency_ms.p99} ms  max ${c.latency_ms.max} ms  non-2xx: ${codes(c)}`,
        `  ratio    ${run.insert_ratio}  (orders ÷ Express + one INSERT)`,
      );
    }
    lines.push(`  cpu      orders: ${cpu(o)}`);
    const logged = Object.entries(o.log_lines).map(([k, n]) => `${k} ${n}`).join(', ');
    if (logged) {
      lines.push(`  LOGGED   warnings or errors during the orders run: ${logged} lines; last:`);
      for (const [k, line] of Object.entries(o.log_sample)) lines.push(`           ${k}: ${line}`);
    }
    if (run.pgboss) lines.push(`           pg-boss: ${cpu(run.pgboss)}`);
    if (run.design) lines.push(`           table: ${cpu(run.design)}`);
    if (run.ceiling) lines.push(`           insert: ${cpu(run.ceiling)}`);
    const b = o.breakdown;
    if (b) {
      lines.push(
        `  creates  ${b.orders} attempts (${b.pending} PENDING${o.unsettled ? `, ${o.unsettled} still CREATING` : ''}); ` +
          `${b.fetches} worker fetches, mean batch ${b.mean_batch}` +
          (b.retried_jobs ? `; ${b.retried_jobs} jobs FAILED or RETRIED (see the worker's log)` : ''),
        `           api tx start → job fetched (pickup) p50 ${b.pickup_ms?.p50} / p99 ${b.pickup_ms?.p99} ms; ` +
          `fetched → confirmed (worker) p50 ${b.worker_ms?.p50} / p99 ${b.worker_ms?.p99} ms; ` +
          `api tx start → confirmed p50 ${b.to_confirm_ms?.p50} / p99 ${b.to_confirm_ms?.p99} ms`,
      );
    }
    const s = o.statements;
    if (s) {
      lines.push(
        `  stmts    ${s.per_order.total} statements (round trips) per order: api ${s.per_order.api}, worker ${s.per_order.worker}, other ${s.per_order.other}; ` +
          `${s.exec_ms_per_order} ms of execution and ${s.plan_ms_per_order} ms of planning per order`,
        ...s.top.map(
          (q) => `           ${q.side.padEnd(8)} ${q.per_order.toFixed(2).padStart(5)}×  ${q.mean_ms.toFixed(3).padStart(7)} ms  plans ${q.plans_per_call.toFixed(2)}/call  ${q.query}`,
        ),
      );
    }
    lines.push('');
  }
  return lines.join('\n');
}
