// Disbursements bench: POST /v1/disbursements through the real API process, next to the
// Express 5 + one INSERT ceiling measured in the same run, and issue 9's one-wallet race.
//
//   npm run bench -- disbursements [--connections 10,25,50] [--duration 15] [--warmup 3] [--pool 10]
//                                  [--merchants 1] [--worker] [--race 1000] [--afford 100] [--race-only]
//                                  [--ephemeral] [--stats] [--json]
//
// Processes (children, as the Procfile runs them): the API (api/server.ts) and the ceiling
// (scripts/bench/ceiling.ts). By default no disbursement worker runs: the create answers once its
// transaction commits and the worker's vendor I/O comes after, so this measures the create path
// alone. --worker adds the simulator (routed for BANK) and the `disbursement` worker group, which
// send every created disbursement while the load runs and compete for the same cores.
//
// The race runs first, on its own merchant: a wallet funded with exactly afford × (amount + fee),
// `race` connections opened beforehand, then one POST on each at once. It must end with exactly
// `afford` 201s, every other answer 422 INSUFFICIENT_BALANCE, GET /v1/balance 0, `afford` rows
// and a clean ledger audit; otherwise the bench prints the facts and exits 1.
//
// Throughput: `merchants` WALLET merchants, each funded through the ledger far beyond the run and
// with its daily limit raised. Every request carries a unique idempotency_key, a BCA destination
// and a small amount, round-robin over the merchants (one merchant: every create queues on the
// same wallet lock). For each connection count: disbursements (warm-up, measured), then the
// ceiling (same). Every non-2xx is counted by status and error code, and fails the target.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import type pg from 'pg';
import { defaultBrand } from '../../db/brands.ts';
import { adjustWallet, auditLedger } from '../../db/ledger.ts';
import { createMerchant, getMoneySettings, setMoneySettings, type ProvisionedMerchant } from '../../db/merchants.ts';
import type { Pool } from '../../db/pool.ts';
import type { Sealer } from '../../db/secrets.ts';
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
  positive,
  startChild,
  startSimulatorVendor,
  VENDOR,
} from './session.ts';

/** The issue's target: disbursements at ≥ 50% of the ceiling's throughput, with no failures. */
const TARGET_RATIO = 0.5;
/** Small, and under any review threshold: 10,000 to 10,999 Rupiah. */
const AMOUNT = 10_000;
/** Throughput merchants: Rp 10^12 each (80 million disbursements), daily limit above it. */
const FLOAT = 1_000_000_000_000;
const DAILY_LIMIT = 10 * FLOAT;
const SETTLE_TIMEOUT_MS = 120_000;

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      ...loadOptions,
      merchants: { type: 'string', default: '1' },
      worker: { type: 'boolean', default: false },
      race: { type: 'string', default: '1000' },
      afford: { type: 'string', default: '100' },
      'race-only': { type: 'boolean', default: false },
    } as const,
    strict: true,
  });
  const { connections, duration, warmup, apiPool, workerPool } = loadSettings(values, !values['race-only']);
  const merchantCount = positive('merchants', values.merchants);
  const raceSize = positive('race', values.race);
  const afford = positive('afford', values.afford);
  if (afford > raceSize) throw Object.assign(new Error('--afford must not exceed --race'), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });

  const session = await openSession(values);
  const { db, pool, sealer, client, common } = session;
  let failure: string | null = null;
  try {
    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;

    let ownRoute = false;
    if (values.worker) {
      // The vendor confirms each transfer by callback 100 ms after accepting it (as the tests run it).
      await startSimulatorVendor(session, { SIMULATOR_DISBURSE_DELAY_MS: '100' });
      ownRoute = db.source === 'DATABASE_URL';
    }

    const brandId = (await defaultBrand(pool)).id;
    const raceMerchant = await walletMerchant(pool, sealer, brandId, 'Bench Race Merchant');
    const raceSettings = await getMoneySettings(pool, raceMerchant.merchant_id);
    const raceFunds = afford * (AMOUNT + raceSettings.fee_bank);
    await fund(pool, raceMerchant.merchant_id, raceFunds);
    const merchants: ProvisionedMerchant[] = [];
    for (let i = 0; i < (connections.length ? merchantCount : 0); i++) {
      const m = await walletMerchant(pool, sealer, brandId, `Bench Merchant ${i + 1}`);
      await setMoneySettings(pool, m.merchant_id, { daily_disbursement_limit: DAILY_LIMIT });
      await fund(pool, m.merchant_id, FLOAT);
      merchants.push(m);
    }
    // A throwaway cluster routes BANK to the simulator by default; a DATABASE_URL server keeps its
    // default routes, and only the bench's merchants are routed.
    if (values.worker) {
      for (const m of ownRoute ? [raceMerchant, ...merchants] : [null]) {
        await setRoute(pool, { merchantId: m?.merchant_id ?? null, method: 'BANK', vendorCode: VENDOR, priority: 10 });
      }
    }

    await startChild(session, 'api', 'api/server.ts', [], { ...common, HOST: '127.0.0.1', PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl, DB_POOL_SIZE: String(apiPool) });
    if (values.worker) {
      // PUBLIC_BASE_URL: the callback address the worker gives the vendor (the API's).
      await startChild(session, 'disbursement worker', 'workers/run.ts', ['disbursement'], { ...common, PUBLIC_BASE_URL: apiUrl, DB_POOL_SIZE: String(workerPool) });
    }
    const ceiling = connections.length ? await startChild(session, 'ceiling', 'scripts/bench/ceiling.ts', [], { DATABASE_URL: db.url, PORT: '0', DB_POOL_SIZE: String(apiPool) }) : null;

    const race = await runRace({ apiUrl, apiKey: raceMerchant.api_key, merchantId: raceMerchant.merchant_id, size: raceSize, afford, funds: raceFunds, fee: raceSettings.fee_bank, pool, client, worker: values.worker });
    if (!race.holds) failure = 'race: the facts above do not hold';

    const bench: Bench = {
      client,
      merchants,
      runId: randomBytes(3).toString('hex'),
      duration,
      warmup,
      probes: await cpuProbes(session, { api: 'api', worker: 'disbursement worker', simulator: 'simulator', ceiling: 'ceiling' }),
      stats: await countsStatements(client),
      worker: values.worker,
      logs: session.processes,
    };
    const runs = [];
    for (const c of connections) {
      const disbursements = await measure(bench, 'disbursements', apiUrl, c);
      const ceil = await measure(bench, 'ceiling', `http://127.0.0.1:${(ceiling!.ready as { port: number }).port}`, c);
      const ratio = Number((disbursements.rps / ceil.rps).toFixed(3));
      runs.push({ connections: c, disbursements, ceiling: ceil, ratio, target_met: ratio >= TARGET_RATIO && disbursements.non2xx === 0 && disbursements.errors === 0 });
    }
    const audit = connections.length ? await auditLedger(pool) : null;
    if (audit && !audit.ok) failure = `${failure ? `${failure}; ` : ''}the ledger audit after the throughput runs found problems`;

    const report = {
      bench: 'disbursements',
      ...runFacts(db, session.loadBefore),
      settings: {
        duration_s: duration,
        warmup_s: warmup,
        api_db_pool: apiPool,
        ceiling_db_pool: apiPool,
        worker: values.worker ? { group: 'disbursement', db_pool: workerPool, vendor: 'simulator, callback after 100 ms' } : null,
        merchants: merchantCount,
        amount: `${AMOUNT}–${AMOUNT + 999} BANK (BCA), fee ${raceSettings.fee_bank}`,
        target: { ratio: TARGET_RATIO },
      },
      race,
      runs,
      final_audit: audit && { ok: audit.ok, accounts: audit.accounts, transfers: audit.transfers, postings: audit.postings, problems: audit.problems.slice(0, 10) },
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await closeSession(session);
  }
  // After the report and the cleanup: scripts/bench.ts turns this into exit code 1.
  if (failure) throw new Error(failure);
}

async function walletMerchant(pool: Pool, sealer: Sealer, brandId: string, name: string) {
  return createMerchant(pool, sealer, { name, settlementType: 'WALLET', brandId, webhookSecret: null, notifyUrl: null });
}

/** Credits the wallet as an operator would (`ops ledger:adjust`): one ADJUSTMENT transfer. */
async function fund(pool: Pool, merchantId: string, amount: number) {
  await pool.transaction((tx) => adjustWallet(tx, { merchantId, adjustmentId: randomUUID(), amount, reason: 'bench float' }));
}

function disbursementBody(key: string, amount: number): string {
  return JSON.stringify({
    idempotency_key: key,
    channel: 'BANK',
    bank_short_code: 'BCA',
    account_number: '1234567890',
    account_name: 'Bench Beneficiary',
    amount,
  });
}

interface Answer {
  status: number;
  code: string | null;
  json: { data?: { balance?: number }; error?: { code?: string } } | null;
}

/** One request on the given agent (keep-alive), with its status, body and error code. */
function send(agent: http.Agent, url: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { agent, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let json: Answer['json'] = null;
        try {
          json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          json = null;
        }
        resolve({ status: res.statusCode ?? 0, code: json?.error?.code ?? null, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface RaceInput {
  apiUrl: string;
  apiKey: string;
  merchantId: string;
  size: number;
  afford: number;
  funds: number;
  fee: number;
  pool: Pool;
  client: pg.Client;
  worker: boolean;
}

/**
 * `size` POSTs on one wallet that can afford `afford` of them. The connections are opened first
 * (one GET /v1/balance each, which also proves the funding), so the POSTs are all written within
 * a few milliseconds; the race's time runs from the first write to the last answer.
 */
async function runRace(r: RaceInput) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: r.size, maxFreeSockets: r.size });
  const headers = { 'content-type': 'application/json', 'x-api-key': r.apiKey };
  try {
    const warm = await Promise.all(Array.from({ length: r.size }, () => send(agent, r.apiUrl, 'GET', '/v1/balance', headers)));
    const warmWrong = warm.filter((a) => a.status !== 200 || a.json?.data?.balance !== r.funds).length;
    const open = Object.values(agent.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);

    const sessionsBefore = await sessions(r.client);
    const started = performance.now();
    const times: number[] = [];
    const answers = await Promise.all(
      Array.from({ length: r.size }, (_, i) =>
        send(agent, r.apiUrl, 'POST', '/v1/disbursements', headers, disbursementBody(`race-${i}-${randomUUID()}`, AMOUNT)).then((a) => {
          times.push(performance.now() - started);
          return a;
        }),
      ),
    );
    const elapsedMs = performance.now() - started;
    const after = await send(agent, r.apiUrl, 'GET', '/v1/balance', headers);

    const outcomes: Record<string, number> = {};
    for (const a of answers) {
      const key = a.code ? `${a.status} ${a.code}` : String(a.status);
      outcomes[key] = (outcomes[key] ?? 0) + 1;
    }
    const accepted = answers.filter((a) => a.status === 201).length;
    const insufficient = answers.filter((a) => a.status === 422 && a.code === 'INSUFFICIENT_BALANCE').length;
    const { rows } = await r.client.query<{ n: number; debited: string }>(
      `${MARK} select count(*)::int as n, coalesce(sum(total_debit), 0)::text as debited from disbursements where merchant_id = $1`,
      [r.merchantId],
    );
    const audit = await auditLedger(r.pool);
    // Backends flush their statistics at most once a second, or after 10 s idle: wait that out.
    await delay(11_000);
    const newSessions = (await sessions(r.client)) - sessionsBefore;
    const balance = after.status === 200 ? (after.json?.data?.balance ?? null) : null;
    times.sort((a, b) => a - b);
    const at = (q: number) => round1(times[Math.min(times.length - 1, Math.floor(q * times.length))]);
    const facts = {
      [`${r.afford} accepted (201)`]: accepted === r.afford,
      [`${r.size - r.afford} INSUFFICIENT_BALANCE (422)`]: insufficient === r.size - r.afford,
      'balance 0 (GET /v1/balance)': balance === 0,
      [`${r.afford} disbursement rows debiting ${r.funds}`]: rows[0].n === r.afford && Number(rows[0].debited) === r.funds,
      'ledger audit clean': audit.ok,
    };
    return {
      requests: r.size,
      afford: r.afford,
      funded: r.funds,
      per_disbursement: AMOUNT + r.fee,
      worker_running: r.worker,
      connections_open: open,
      /** Postgres sessions opened during the race, by every client (the API's pool is DB_POOL_SIZE). */
      new_sessions: newSessions,
      warmup_wrong: warmWrong,
      elapsed_ms: round1(elapsedMs),
      answer_ms: { p50: at(0.5), p99: at(0.99), max: round1(times.at(-1) ?? 0) },
      outcomes,
      accepted,
      insufficient_balance: insufficient,
      balance,
      rows: rows[0].n,
      debited: Number(rows[0].debited),
      audit: { ok: audit.ok, accounts: audit.accounts, transfers: audit.transfers, postings: audit.postings, problems: audit.problems.slice(0, 10) },
      facts,
      holds: warmWrong === 0 && Object.values(facts).every(Boolean),
    };
  } finally {
    agent.destroy();
  }
}

/** Sessions ever opened on the bench database (pg_stat_database, flushed lazily by backends). */
async function sessions(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ n: string }>(`${MARK} select sessions::text as n from pg_stat_database where datname = current_database()`);
  return Number(rows[0].n);
}

interface Bench {
  client: pg.Client;
  merchants: ProvisionedMerchant[];
  runId: string;
  duration: number;
  warmup: number;
  probes: Record<string, Probe>;
  stats: boolean;
  worker: boolean;
  logs: BenchProcess[];
}

/**
 * autocannon against POST /v1/disbursements, each request with a fresh idempotency_key, round-robin
 * over the merchants' API keys; non-2xx answers are tallied by status and error code.
 */
function load(url: string, merchants: ProvisionedMerchant[], connections: number, duration: number, prefix: string, codes: Record<string, number>) {
  let n = 0;
  const keys = merchants.length ? merchants.map((m) => m.api_key) : ['ceiling'];
  return autocannon({
    url,
    connections,
    duration,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: '/v1/disbursements',
        setupRequest: (request) => {
          const i = ++n;
          return {
            ...request,
            headers: { 'content-type': 'application/json', 'x-api-key': keys[i % keys.length] },
            body: disbursementBody(`${prefix}-${i}`, AMOUNT + (i % 1000)),
          };
        },
        onResponse: (status, body) => {
          if (status >= 200 && status < 300) return;
          let code = '';
          try {
            code = (JSON.parse(body) as { error?: { code?: string } }).error?.code ?? '';
          } catch {
            code = '';
          }
          const key = code ? `${status} ${code}` : String(status);
          codes[key] = (codes[key] ?? 0) + 1;
        },
      },
    ],
  });
}

async function measure(b: Bench, target: 'disbursements' | 'ceiling', url: string, connections: number) {
  const tag = `${b.runId}-${target === 'disbursements' ? 'd' : 'c'}${connections}`;
  await load(url, b.merchants, connections, b.warmup, `${tag}w`, {});
  await settle(b);
  await b.client.query(`${MARK} analyze`);
  const rowsBefore = target === 'disbursements' ? await todayRows(b) : null;
  if (b.stats) await b.client.query(`${MARK} select pg_stat_statements_reset()`);

  const logsBefore = logCounts(b.logs);
  const cpu = startCpuSample(target === 'disbursements' ? omit(b.probes, 'ceiling') : omit(b.probes, 'api', 'worker', 'simulator'));
  const codes: Record<string, number> = {};
  const result = await load(url, b.merchants, connections, b.duration, `${tag}m`, codes);
  const cpuUse = cpu.stop();
  const unsettled = await settle(b);

  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, s.count]));
  const completed = Object.values(statuses).reduce((a, c) => a + c, 0);
  const cpuMs = Object.fromEntries(
    Object.entries(cpuUse.percent_of_one_core).map(([k, v]) => [k, v === null || !completed ? null : Number(((v / 100) * cpuUse.seconds * 1000 / completed).toFixed(3))]),
  );
  const measured = {
    connections,
    requests: completed,
    rps: Math.round(completed / result.duration),
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, mean: Number(result.latency.mean.toFixed(1)) },
    non2xx: result.non2xx,
    statuses,
    error_codes: codes,
    errors: result.errors,
    timeouts: result.timeouts,
    cpu: cpuUse,
    /** CPU time per answered request, per process (ms). */
    cpu_ms_per_request: cpuMs,
    log_lines: diff(logCounts(b.logs), logsBefore),
  };
  const logSample = Object.fromEntries(b.logs.filter((p) => measured.log_lines[p.name]).map((p) => [p.name, (p.lastLines().at(-1) ?? '').slice(0, 300)]));
  if (target === 'ceiling') return { ...measured, log_sample: logSample, unsettled: null, daily_sum: null, statements: null };
  return {
    ...measured,
    log_sample: logSample,
    /** Disbursements the worker had not finished within SETTLE_TIMEOUT_MS (--worker only). */
    unsettled,
    daily_sum: { rows_before: rowsBefore, ...(await dailySum(b)) },
    statements: b.stats ? await statements(b.client, `${tag}m-%`, b.worker) : null,
  };
}

/**
 * Lets the load's tail finish: without the worker, the requests cut off when autocannon stopped
 * (their transactions commit within milliseconds); with it, until every bench disbursement is
 * final, so a run's backlog does not compete with the next one. Returns how many were left.
 */
async function settle(b: Bench): Promise<number> {
  await delay(500);
  if (!b.worker) return 0;
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const { rows } = await b.client.query<{ n: number }>(
      `${MARK} select count(*)::int as n from disbursements where status in ('PENDING', 'ON_PROCESS')`,
    );
    if (rows[0].n === 0 || Date.now() > deadline) return rows[0].n;
    await delay(250);
  }
}

/** The first merchant's disbursements counted by today's daily-sum. */
async function todayRows(b: Bench): Promise<number> {
  const { rows } = await b.client.query<{ n: number }>(
    `${MARK} select count(*)::int as n from disbursements where merchant_id = $1 and wib_date = (now() at time zone 'Asia/Jakarta')::date and status not in ('FAILED', 'REJECTED')`,
    [b.merchants[0].merchant_id],
  );
  return rows[0].n;
}

/**
 * The create's daily-limit read after the run, for the first merchant: the running total of
 * migration 020 (one row by primary key, whatever the day's count; it runs under the wallet
 * lock, so its time is part of every create's lock hold), and how many rows the day holds.
 */
async function dailySum(b: Bench) {
  const { rows } = await b.client.query<{ 'QUERY PLAN': { 'Execution Time': number; Plan: { 'Node Type': string } }[] }>(
    `${MARK} explain (analyze, format json)
     select total from disbursement_daily_totals where merchant_id = $1 and wib_date = (now() at time zone 'Asia/Jakarta')::date`,
    [b.merchants[0].merchant_id],
  );
  const plan = rows[0]['QUERY PLAN'][0];
  return { rows_after: await todayRows(b), scan: plan.Plan['Node Type'], execution_ms: round3(plan['Execution Time']) };
}

/** pg_stat_statements since the reset before the measured run, per disbursement created in it. */
async function statements(client: pg.Client, like: string, worker: boolean) {
  const { rows: count } = await client.query<{ n: number }>(`${MARK} select count(*)::int as n from disbursements where idempotency_key like $1`, [like]);
  const created = count[0].n;
  const { rows } = await client.query<{ query: string; calls: string; total_ms: number }>(
    `${MARK}
     select query, calls, total_exec_time as total_ms
       from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query not like '${MARK}%'
      order by calls desc`,
  );
  const per = (v: number) => Number((v / created).toFixed(2));
  const all = rows.map((r) => {
    const q = r.query.replace(/\s+/g, ' ').trim();
    return {
      // Foreign-key checks Postgres runs inside another statement: not round trips.
      internal: /^select .* from only .* for key share of x$/i.test(q),
      per_create: per(Number(r.calls)),
      exec_ms_per_create: Number((r.total_ms / created).toFixed(3)),
      mean_ms: Number((r.total_ms / Number(r.calls)).toFixed(3)),
      query: q.slice(0, 110),
    };
  });
  return {
    created,
    /** With --worker these include the worker's, the simulator callbacks' and pg-boss's own. */
    includes_worker: worker,
    /** Statements sent per disbursement created (round trips; foreign-key checks not counted). */
    per_create: Number(all.filter((s) => !s.internal).reduce((a, s) => a + s.per_create, 0).toFixed(2)),
    exec_ms_per_create: Number(all.reduce((a, s) => a + s.exec_ms_per_create, 0).toFixed(3)),
    top: all.filter((s) => s.per_create >= 0.01),
  };
}

const round1 = (v: number) => Number(Number(v).toFixed(1));
const round3 = (v: number) => Number(Number(v).toFixed(3));

type Measured = Awaited<ReturnType<typeof measure>>;
type Report = {
  machine: { cores: number; load_before: number; load_after: number; node: string; postgres: string };
  database: { source: string; fsync: string; synchronous_commit: string };
  settings: { duration_s: number; warmup_s: number; api_db_pool: number; worker: { db_pool: number; vendor: string } | null; merchants: number; amount: string };
  race: Awaited<ReturnType<typeof runRace>>;
  runs: { connections: number; disbursements: Measured; ceiling: Measured; ratio: number; target_met: boolean }[];
  final_audit: { ok: boolean; accounts: number; transfers: number; postings: number } | null;
};

function text(r: Report): string {
  const s = r.settings;
  const lines = [
    'disbursements bench: POST /v1/disbursements through the api, vs Express 5 + one INSERT; one-wallet race',
    `machine   ${r.machine.cores} cores (1-min load ${r.machine.load_before} at start, ${r.machine.load_after} at end` +
      `${r.machine.load_before > r.machine.cores ? ': BUSY, figures unreliable' : ''}), Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}`,
    `database  ${r.database.source}: fsync=${r.database.fsync} synchronous_commit=${r.database.synchronous_commit}` +
      durabilityNote(r.database),
    `settings  ${s.duration_s} s measured after ${s.warmup_s} s warm-up; DB_POOL_SIZE api ${s.api_db_pool} (ceiling the same); ` +
      `${s.merchants} merchant wallet${s.merchants > 1 ? 's' : ''}; amount ${s.amount}; ` +
      (s.worker ? `disbursement worker running (DB_POOL_SIZE ${s.worker.db_pool}; ${s.worker.vendor})` : 'create path only (no disbursement worker)'),
    '',
  ];
  const race = r.race;
  lines.push(
    `race      ${race.requests} concurrent POSTs on one wallet funded with ${race.funded} = ${race.afford} × ${race.per_disbursement}` +
      ` (${race.connections_open} connections open beforehand; ${race.new_sessions} Postgres sessions opened during the race${race.warmup_wrong ? `, ${race.warmup_wrong} warm-up balances WRONG` : ''}` +
      `${race.worker_running ? ', worker running' : ''})`,
    `          ${race.elapsed_ms} ms from the first write to the last answer; answers at p50 ${race.answer_ms.p50} / p99 ${race.answer_ms.p99} ms`,
    `          answers: ${Object.entries(race.outcomes).map(([k, n]) => `${n}× ${k}`).join(', ')}; balance after ${race.balance}; ` +
      `${race.rows} rows debiting ${race.debited}; audit ${race.audit.ok ? 'OK' : 'BROKEN'} (${race.audit.accounts} accounts, ${race.audit.transfers} transfers, ${race.audit.postings} postings)`,
    ...Object.entries(race.facts).map(([fact, ok]) => `          ${ok ? 'ok  ' : 'FAIL'} ${fact}`),
    ...race.audit.problems.map((p) => `          audit: ${p.check} ${p.subject}: ${p.detail}`),
    `          race ${race.holds ? 'HOLDS' : 'FAILED'}`,
    '',
  );
  const cpu = (m: Measured) =>
    Object.entries(m.cpu_ms_per_request)
      .map(([k, v]) => `${k} ${v ?? '?'}`)
      .join(', ') + ` ms per request; machine ${m.cpu.machine_busy_percent}% busy`;
  const codes = (m: Measured) =>
    Object.entries(m.error_codes)
      .map(([code, n]) => `${n}× ${code}`)
      .concat(m.errors ? [`${m.errors} socket errors`] : [], m.timeouts ? [`${m.timeouts} timeouts`] : [])
      .join(', ') || 'none';
  for (const run of r.runs) {
    const d = run.disbursements;
    const c = run.ceiling;
    lines.push(
      `c=${run.connections}`,
      `  disburse ${String(d.rps).padStart(6)} req/s  p50 ${d.latency_ms.p50} ms  p99 ${d.latency_ms.p99} ms  max ${d.latency_ms.max} ms  (${d.requests} answered)  non-2xx: ${codes(d)}`,
      `  ceiling  ${String(c.rps).padStart(6)} req/s  p50 ${c.latency_ms.p50} ms  p99 ${c.latency_ms.p99} ms  max ${c.latency_ms.max} ms  (${c.requests} answered)  non-2xx: ${codes(c)}`,
      `  ratio    ${run.ratio}  (target ≥ ${TARGET_RATIO} with no failure: ${run.target_met ? 'MET' : 'missed'})`,
      `  cpu      disbursements: ${cpu(d)}`,
      `           ceiling: ${cpu(c)}`,
    );
    const logged = Object.entries(d.log_lines).map(([k, n]) => `${k} ${n}`).join(', ');
    if (logged) {
      lines.push(`  LOGGED   warnings or errors during the disbursements run: ${logged} lines; last:`);
      for (const [k, line] of Object.entries(d.log_sample)) lines.push(`           ${k}: ${line}`);
    }
    if (d.unsettled) lines.push(`  UNSETTLED ${d.unsettled} disbursements still PENDING or ON_PROCESS ${SETTLE_TIMEOUT_MS / 1000} s after the run`);
    if (d.daily_sum) {
      lines.push(
        `  daily    the first merchant's day held ${d.daily_sum.rows_before} disbursements at the start of the run and ` +
          `${d.daily_sum.rows_after} at its end; the limit check reads one running-total row (${d.daily_sum.scan}, ${d.daily_sum.execution_ms} ms)`,
      );
    }
    const st = d.statements;
    if (st) {
      lines.push(
        `  stmts    ${st.per_create} statements (round trips) per create${st.includes_worker ? ' (worker and callbacks included)' : ''}; ` +
          `${st.exec_ms_per_create} ms of execution per create (${st.created} created)`,
        ...st.top.map((q) => `           ${q.internal ? 'fk-check' : '        '} ${q.per_create.toFixed(2).padStart(5)}×  ${q.mean_ms.toFixed(3).padStart(7)} ms  ${q.query}`),
      );
    }
    lines.push('');
  }
  if (r.final_audit) {
    const a = r.final_audit;
    lines.push(`audit     after the throughput runs: ${a.ok ? 'OK' : 'BROKEN'} (${a.accounts} accounts, ${a.transfers} transfers, ${a.postings} postings)`, '');
  }
  return lines.join('\n');
}
