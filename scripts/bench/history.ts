// History bench: a synthetic year of an installation (scripts/bench/history-load.ts), then every
// merchant read timed through a real API process over HTTP, for the big merchant and a small
// one, at concurrency 1 and 10; the orders export of a month and of the year through a real csv
// worker; the ledger audit (the statement, and `ops ledger:audit` as an operator runs it); and the
// storage: bytes per paid order in tables and indexes, WAL per paid order (orders created through
// the API and paid at the simulator), and the yearly size at 100 orders/s.
//
// Default: one merchant with 1,000,000 orders in an installation of ~1.2 million (a merchant of
// 2,000 and merchants of ~10,000 beside it). Each read is requested --requests times per
// concurrency, or until --budget seconds have passed (a read that takes 30 s is still measured,
// only fewer times). Plain timed requests, not autocannon: the table gives p95, and a slow read
// needs a deadline of its own rather than a fixed duration.
//
// --rounds N times everything after the load N times on the same loaded year (a load of a
// million orders takes ten minutes; the rounds are the repeat runs a figure is quoted from).
//
//   npm run bench -- history [--orders 1000000] [--requests 20] [--budget 20] [--rounds 1] [--ephemeral] [--json]
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { defaultBrand } from '../../db/brands.ts';
import { auditLedger } from '../../db/ledger.ts';
import { findBankByShortCode } from '../../db/master-data.ts';
import { createMerchant } from '../../db/merchants.ts';
import { createPool } from '../../db/pool.ts';
import { setRoute } from '../../db/vendors.ts';
import { freePort } from '../lib/cluster.ts';
import { ROOT } from '../lib/local.ts';
import { databaseOptions, runFacts } from './database.ts';
import { analyze, loadYear, type LoadMerchant } from './history-load.ts';
import { closeSession, openSession, positive, startChild, startSimulatorVendor, VENDOR, type Session } from './session.ts';
import { startWorker } from './worker.ts';

const SMALL_ORDERS = 2_000;
/** Orders of each filler merchant: the installation is the big merchant plus ~20 % more. */
const FILLER_ORDERS = 10_000;
const CONCURRENCY = [1, 10];
/** Orders created and paid through the API for the WAL figure. */
const WAL_ORDERS = 500;
const EXPORT_TIMEOUT_MS = 900_000;

interface Timing {
  call: string;
  merchant: 'big' | 'small' | 'empty';
  concurrency: number;
  requests: number;
  status: string;
  p50_ms: number;
  p95_ms: number;
  max_ms: number;
}

interface Caller {
  url: string;
  budgetMs: number;
  requests: number;
}

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      orders: { type: 'string', default: '1000000' },
      requests: { type: 'string', default: '20' },
      budget: { type: 'string', default: '20' },
      rounds: { type: 'string', default: '1' },
      ...databaseOptions,
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const bigOrders = positive('orders', values.orders);
  const requests = positive('requests', values.requests);
  const budgetMs = positive('budget', values.budget) * 1000;
  const roundCount = positive('rounds', values.rounds);
  const log = (line: string) => process.stderr.write(`${line}\n`);

  const s = await openSession({ ephemeral: values.ephemeral, durable: values.durable, stats: false });
  try {
    await startSimulatorVendor(s);
    await setRoute(s.pool, { merchantId: null, method: 'QRIS', vendorCode: VENDOR, priority: 10 });
    const newMerchant = async (name: string) =>
      createMerchant(s.pool, s.sealer, { name, settlementType: 'WALLET', brandId: (await defaultBrand(s.pool)).id, webhookSecret: null, notifyUrl: null });
    const big = await newMerchant('Toko Besar');
    const small = await newMerchant('Toko Kecil');
    const fillerCount = Math.max(0, Math.round((bigOrders * 0.2 - SMALL_ORDERS) / FILLER_ORDERS));
    const merchants: LoadMerchant[] = [{ id: big.merchant_id, orders: bigOrders }, { id: small.merchant_id, orders: SMALL_ORDERS }];
    for (let i = 0; i < fillerCount; i++) merchants.push({ id: (await newMerchant(`Toko ${i}`)).merchant_id, orders: FILLER_ORDERS });

    // Load, analyze, and prove the ledger with the audit statement itself (no request timeout).
    const bank = await findBankByShortCode(s.pool, 'BCA');
    if (!bank) throw new Error('bank BCA is missing from master data');
    const loadStarted = performance.now();
    await loadYear({ client: s.client, vendorCode: VENDOR, bank, end: new Date() }, merchants, log);
    const loadMs = performance.now() - loadStarted;
    log('vacuum (analyze)');
    const analyzeStarted = performance.now();
    await analyze(s.client);
    const analyzeMs = performance.now() - analyzeStarted;
    const audit = await auditStatement(s);
    log(`ledger audit ${audit.ok ? 'clean' : 'BROKEN'} in ${audit.ms} ms`);
    if (!audit.ok) throw new Error(`the loaded year fails the ledger audit: ${JSON.stringify(audit.problems)}`);
    // What the scheduler's retention pass would have retired by now (the year's webhook bodies and
    // attempts, callback payloads past their windows), as an operator runs it, then vacuumed as
    // autovacuum would: the reads below see the operational tables as a live installation has them.
    log('ops retention:run');
    const retention = await timeOps(s, ['retention:run']);
    log(`retention: exit ${retention.exit_code} in ${retention.ms} ms: ${retention.said}`);
    await analyze(s.client);
    const counts = await rowCounts(s);
    const sizes = await tableSizes(s, counts.paid_orders);

    // The API as the Procfile runs it, a csv worker for exports, the vendor worker for creates.
    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    await startChild(s, 'api', 'api/server.ts', [], { ...s.common, HOST: '127.0.0.1', PORT: String(apiPort), PUBLIC_BASE_URL: apiUrl });
    await startChild(s, 'vendor worker', 'workers/run.ts', ['vendor'], { ...s.common, PUBLIC_BASE_URL: apiUrl });
    const empty = await newMerchant('Toko Baru');
    const caller: Caller = { url: apiUrl, budgetMs, requests };
    const keys = { big: big.api_key, small: small.api_key, empty: empty.api_key };

    const rounds: Round[] = [];
    for (let round = 1; round <= roundCount; round++) {
      const timings: Timing[] = [];
      for (const who of ['big', 'small'] as const) {
        const merchantId = who === 'big' ? big.merchant_id : small.merchant_id;
        for (const c of CONCURRENCY) {
          log(`round ${round}: reads of the ${who} merchant at concurrency ${c}`);
          timings.push(...(await timeReads(s, caller, keys[who], merchantId, who, c)));
        }
      }
        for (const c of CONCURRENCY) timings.push(...(await timeCreates(caller, keys, c)));
      const exports = [];
      for (const period of ['month', 'year'] as const) {
        log(`round ${round}: orders export of the big merchant: ${period}`);
        exports.push(await timeExport(s, apiUrl, big.api_key, period));
      }
      // A day of the vendor (yesterday in WIB: ~1/365 of the loaded orders) as an operator reruns
      // it. The simulator holds none of the loaded orders, so every one is a difference: the
      // record-by-record passes at their most expensive.
      const yesterday = new Date(Date.now() + 7 * 3_600_000 - 86_400_000).toISOString().slice(0, 10);
      const ops = [
        await timeOps(s, ['ledger:audit']),
        await timeOps(s, ['ledger:audit', '--full']),
        await timeOps(s, ['recon:run', '--vendor', VENDOR, '--date', yesterday]),
      ];
      rounds.push({ round, timings, exports, ops });
    }
    log('WAL per paid order');
    const wal = await walPerPaidOrder(s, apiUrl, empty.api_key, (s.processes.find((p) => p.name === 'simulator')!.ready as RegExpExecArray)[1]);

    const report = {
      bench: 'history',
      ...runFacts(s.db, s.loadBefore),
      loaded: { merchants: merchants.length, big_orders: bigOrders, small_orders: SMALL_ORDERS, ...counts, load_ms: Math.round(loadMs), analyze_ms: Math.round(analyzeMs) },
      audit: { ok: audit.ok, ms: audit.ms, postings: audit.postings },
      retention,
      rounds,
      sizes: {
        ...sizes,
        wal_bytes_per_paid_order: wal.bytes_per_order,
        wal_orders: wal.orders,
        wal_full_page_images_per_order: wal.full_page_images_per_order,
        yearly_gb_at_100_orders_per_s: Number(((sizes.bytes_per_paid_order * 100 * 86_400 * 365) / 1e9).toFixed(0)),
        yearly_wal_gb_at_100_orders_per_s: Number(((wal.bytes_per_order * 100 * 86_400 * 365) / 1e9).toFixed(0)),
      },
      not_measured: ["a day's reconciliation against a vendor holding the day: the simulator holds none of the loaded orders, so recon:run above reports every one of them missing"],
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await closeSession(s);
  }
}

/** auditLedger (what ops ledger:audit runs) on a pool without the request statement limit. */
async function auditStatement(s: Session) {
  const pool = await createPool(s.db.url, { size: 4, name: 'bench-audit', throughPooler: true });
  try {
    const started = performance.now();
    const report = await auditLedger(pool);
    return { ok: report.ok, postings: report.postings, problems: report.problems.slice(0, 5), ms: Math.round(performance.now() - started) };
  } finally {
    await pool.end();
  }
}

async function rowCounts(s: Session) {
  const { rows } = await s.client.query<Record<string, string>>(
    `select (select count(*) from orders) as orders,
            (select count(*) from orders where status in ('PAID', 'REFUNDED')) as paid_orders,
            (select count(*) from order_events) as order_events,
            (select count(*) from refunds) as refunds,
            (select count(*) from disbursements) as disbursements,
            (select count(*) from ledger_transfers) as ledger_transfers,
            (select count(*) from ledger_postings) as ledger_postings,
            (select count(*) from webhook_deliveries) as webhook_deliveries,
            (select count(*) from webhook_attempts) as webhook_attempts,
            (select count(*) from vendor_callbacks) as vendor_callbacks`,
  );
  return Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)])) as Record<string, number> & { paid_orders: number };
}

/** Every table of Kasir's schema with its indexes (and TOAST), per paid order. */
async function tableSizes(s: Session, paidOrders: number) {
  await s.client.query('checkpoint');
  const { rows } = await s.client.query<{ name: string; bytes: string }>(
    `select c.relname as name, pg_total_relation_size(c.oid) as bytes
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = current_schema() and c.relkind in ('r', 'p') and c.relispartition = false
     order by pg_total_relation_size(c.oid) desc`,
  );
  const total = rows.reduce((sum, r) => sum + Number(r.bytes), 0);
  return {
    total_mb: Math.round(total / 1e6),
    bytes_per_paid_order: Math.round(total / paidOrders),
    by_table: rows.slice(0, 10).map((r) => ({ table: r.name, mb: Math.round(Number(r.bytes) / 1e6), bytes_per_paid_order: Math.round(Number(r.bytes) / paidOrders) })),
  };
}

/** Every merchant read, as its back office calls it. */
async function timeReads(s: Session, caller: Caller, key: string, merchantId: string, who: 'big' | 'small', c: number): Promise<Timing[]> {
  const first = await getJson(caller.url, key, '/v1/orders?limit=20');
  const totalPages = Math.max(1, Number((first.body as { meta?: { total_pages?: number } }).meta?.total_pages ?? 1));
  const { rows } = await s.client.query<{ ref_code: string; merchant_order_id: string }>(
    `select ref_code, merchant_order_id from orders where merchant_id = $1 and status = 'PAID' order by created_at limit 1 offset $2`,
    [merchantId, who === 'big' ? 1000 : 100],
  );
  const order = rows[0];
  const today = new Date(Date.now() + 7 * 3_600_000).toISOString().slice(0, 10);
  const monthAgo = new Date(Date.now() + 7 * 3_600_000 - 30 * 86_400_000).toISOString().slice(0, 10);
  const yearAgo = new Date(Date.now() + 7 * 3_600_000 - 364 * 86_400_000).toISOString().slice(0, 10);
  const paths: [string, string][] = [
    ['GET /v1/orders page 1', '/v1/orders?limit=20'],
    ['GET /v1/orders middle page', `/v1/orders?limit=20&page=${Math.ceil(totalPages / 2)}`],
    ['GET /v1/orders last page', `/v1/orders?limit=20&page=${totalPages}`],
    ['GET /v1/orders?status=PAID', '/v1/orders?limit=20&status=PAID'],
    ['GET /v1/orders?date_from= (30 days)', `/v1/orders?limit=20&date_from=${monthAgo}&date_to=${today}`],
    ['GET /v1/orders/{ref}', `/v1/orders/${order.ref_code}`],
    ['GET /v1/orders/{ref}/events', `/v1/orders/${order.ref_code}/events`],
    ['GET /v1/orders?merchant_order_id=', `/v1/orders?merchant_order_id=${encodeURIComponent(order.merchant_order_id)}`],
    ['GET /v1/balance', '/v1/balance'],
    ['GET /v1/balance-history page 1', '/v1/balance-history?limit=20'],
    ['GET /v1/balance-history?type= (payouts)', '/v1/balance-history?limit=20&type=DISBURSEMENT'],
    ['GET /v1/balance-history?type= (payments)', '/v1/balance-history?limit=20&type=ORDER_PAYMENT'],
    ['GET /v1/balance-history?type= last 30 days', `/v1/balance-history?limit=20&type=ORDER_PAYMENT&date_from=${monthAgo}&date_to=${today}`],
    ['GET /v1/balance-history last 30 days', `/v1/balance-history?limit=20&date_from=${monthAgo}&date_to=${today}`],
    ['GET /v1/reports/profits this month', '/v1/reports/profits'],
    ['GET /v1/reports/profits 365 days', `/v1/reports/profits?date_from=${yearAgo}&date_to=${today}`],
    ['GET /v1/webhook-deliveries page 1', '/v1/webhook-deliveries?limit=20'],
    ['GET /v1/disbursements?status=', '/v1/disbursements?limit=20&status=FAILED'],
    ['GET /v1/refunds', '/v1/refunds?limit=20'],
    ['GET /v1/settlements', '/v1/settlements?limit=20'],
  ];
  const timings: Timing[] = [];
  for (const [call, path] of paths) timings.push(await timeCall(caller, key, who, c, call, () => path));
  // A cursor, where the orders list offers one (any meta field naming a cursor, on a page asked
  // for with an empty `cursor=`, which starts a walk): walk it.
  const walk = await getJson(caller.url, key, '/v1/orders?limit=20&cursor=');
  const cursorField = Object.keys((walk.body as { meta?: object }).meta ?? {}).find((k) => /cursor/i.test(k));
  if (cursorField) {
    const cursors: string[] = [];
    let next = (walk.body as { meta: Record<string, string | null> }).meta[cursorField];
    for (let i = 0; i < Math.min(50, totalPages - 1) && next; i++) {
      cursors.push(next);
      next = ((await getJson(caller.url, key, `/v1/orders?limit=20&cursor=${encodeURIComponent(next)}`)).body as { meta: Record<string, string | null> }).meta[cursorField];
    }
    let i = 0;
    if (cursors.length) timings.push(await timeCall(caller, key, who, c, `GET /v1/orders?cursor= (${cursorField})`, () => `/v1/orders?limit=20&cursor=${encodeURIComponent(cursors[i++ % cursors.length])}`));
  }
  return timings;
}

/**
 * POST /v1/orders, each with its own merchant_order_id: the big merchant's against an empty
 * one's, interleaved (each caller alternates), so both see the same machine and the same caches.
 */
async function timeCreates(caller: Caller, keys: { big: string; empty: string }, c: number): Promise<Timing[]> {
  let n = 0;
  const prefix = `hist-${c}-${Date.now()}`;
  const create = (who: 'big' | 'empty') => () => {
    const id = `${prefix}-${who}-${++n}`;
    return fetch(`${caller.url}/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keys[who], 'idempotency-key': id },
      body: JSON.stringify({ merchant_order_id: id, amount: 10_000 + n, payment_method: 'QRIS' }),
    });
  };
  const [big, empty] = await timePaired(caller, c, 'POST /v1/orders', create('big'), create('empty'));
  return [
    { ...big, merchant: 'big' },
    { ...empty, merchant: 'empty' },
  ];
}

/** Two kinds of request timed side by side: `c` callers, each alternating between them. */
async function timePaired(caller: Caller, c: number, call: string, a: () => Promise<Response>, b: () => Promise<Response>): Promise<[Timing, Timing]> {
  const deadline = Date.now() + caller.budgetMs;
  const ms: [number[], number[]] = [[], []];
  const statuses = [new Map<number, number>(), new Map<number, number>()];
  let issued = 0;
  await Promise.all(
    Array.from({ length: c }, async (_, caller_i) => {
      let turn = caller_i % 2;
      while (issued < caller.requests * c * 2 && (ms[0].length + ms[1].length === 0 || Date.now() < deadline)) {
        issued++;
        const started = performance.now();
        const response = await (turn === 0 ? a() : b());
        await response.arrayBuffer();
        ms[turn].push(performance.now() - started);
        statuses[turn].set(response.status, (statuses[turn].get(response.status) ?? 0) + 1);
        turn = 1 - turn;
      }
    }),
  );
  return [summary(call, 'big', c, ms[0], statuses[0]), summary(call, 'empty', c, ms[1], statuses[1])];
}

function timeCall(caller: Caller, key: string, who: 'big' | 'small', c: number, call: string, path: () => string): Promise<Timing> {
  return timeRequests(caller, c, call, who, () => fetch(`${caller.url}${path()}`, { headers: { 'x-api-key': key } }));
}

/** `c` callers in parallel, each requesting one after another, until --requests are done or the budget is spent. */
async function timeRequests(caller: Caller, c: number, call: string, who: Timing['merchant'], request: () => Promise<Response>): Promise<Timing> {
  const deadline = Date.now() + caller.budgetMs;
  const ms: number[] = [];
  const statuses = new Map<number, number>();
  let issued = 0;
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (issued < caller.requests * c && (ms.length === 0 || Date.now() < deadline)) {
        issued++;
        const started = performance.now();
        const response = await request();
        await response.arrayBuffer();
        ms.push(performance.now() - started);
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    }),
  );
  return summary(call, who, c, ms, statuses);
}

function summary(call: string, who: Timing['merchant'], c: number, ms: number[], statuses: Map<number, number>): Timing {
  ms.sort((a, b) => a - b);
  const at = (q: number) => Math.round(ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)]);
  return {
    call,
    merchant: who,
    concurrency: c,
    requests: ms.length,
    status: [...statuses].map(([code, count]) => (statuses.size === 1 ? String(code) : `${code}×${count}`)).join(' '),
    p50_ms: at(0.5),
    p95_ms: at(0.95),
    max_ms: Math.round(ms[ms.length - 1]),
  };
}

async function getJson(url: string, key: string, path: string) {
  const response = await fetch(`${url}${path}`, { headers: { 'x-api-key': key } });
  return { status: response.status, body: (await response.json()) as unknown };
}

/** An orders export of the last month or the whole year through a fresh csv worker: build time, rows/s, the worker's peak RSS. */
async function timeExport(s: Session, apiUrl: string, key: string, period: 'month' | 'year') {
  const wib = (ms: number) => new Date(ms + 7 * 3_600_000).toISOString().slice(0, 10);
  const body = { type: 'orders', date_from: wib(Date.now() - (period === 'month' ? 30 : 364) * 86_400_000), date_to: wib(Date.now()) };
  const worker = await startWorker('csv', s.db.url);
  try {
    const started = performance.now();
    const response = await fetch(`${apiUrl}/v1/reports/export`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`POST /v1/reports/export answered ${response.status}: ${await response.text()}`);
    const { data } = (await response.json()) as { data: { id: string } };
    const deadline = Date.now() + EXPORT_TIMEOUT_MS;
    for (;;) {
      const { rows } = await s.client.query<{ status: string; error: string | null; row_count: number | null; build_ms: number | null }>(
        `select status, error, row_count, extract(epoch from completed_at - started_at) * 1000 as build_ms from exports where id = $1`,
        [data.id],
      );
      const e = rows[0];
      if (e.status === 'COMPLETED' || e.status === 'FAILED') {
        const wallMs = performance.now() - started;
        const peak = await peakRss(worker.child.pid!);
        const rowsOut = Number(e.row_count ?? 0);
        return {
          period,
          ...body,
          status: e.status,
          error: e.error,
          rows: rowsOut,
          build_ms: Math.round(Number(e.build_ms ?? wallMs)),
          wall_ms: Math.round(wallMs),
          rows_per_s: Math.round(rowsOut / (Number(e.build_ms ?? wallMs) / 1000)),
          worker_peak_rss_mb: peak,
        };
      }
      if (Date.now() > deadline) throw new Error(`export still ${e.status} after ${EXPORT_TIMEOUT_MS} ms`);
      await delay(200);
    }
  } finally {
    await worker.stop();
  }
}

async function peakRss(pid: number): Promise<number | null> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => null);
  const kb = status && /^VmHWM:\s+(\d+) kB/m.exec(status);
  return kb ? Math.round(Number(kb[1]) / 1024) : null;
}

/** An ops command as an operator runs it (`node scripts/ops.ts …`): wall time, exit code, its last line. */
async function timeOps(s: Session, args: string[]) {
  const started = performance.now();
  const child = spawn(process.execPath, [`${ROOT}scripts/ops.ts`, ...args], { cwd: ROOT, env: { ...process.env, ...s.common }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  // What it printed first (recon:run's run line comes before its differences), else its last log line.
  const said = out.trim() ? out.trim().split('\n')[0] : (err.trim().split('\n').at(-1) ?? '');
  return { command: `ops ${args.join(' ')}`, exit_code: code, ms: Math.round(performance.now() - started), said: said.slice(0, 200) };
}

/**
 * WAL written per paid order: WAL_ORDERS orders created through the API (10 at a time) and paid
 * at the simulator, its callbacks crediting them, measured between pg_current_wal_lsn readings.
 * (The merchant has no notify_url: no webhook deliveries are written for these orders.)
 */
async function walPerPaidOrder(s: Session, apiUrl: string, key: string, simUrl: string) {
  const lsn = async () => (await s.client.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0].lsn;
  // Full-page images (the first change of a page after a checkpoint) are most of a short
  // measurement's WAL; counted so the figure can be read with that in mind.
  const fullPageImages = async () => Number((await s.client.query<{ n: string }>('select wal_fpi as n from pg_stat_wal')).rows[0].n);
  await s.client.query('checkpoint');
  const fpiBefore = await fullPageImages();
  const before = await lsn();
  const prefix = `wal-${Date.now()}`;
  const refs: string[] = [];
  let n = 0;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (n < WAL_ORDERS) {
        const id = `${prefix}-${++n}`;
        const response = await fetch(`${apiUrl}/v1/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key, 'idempotency-key': id },
          body: JSON.stringify({ merchant_order_id: id, amount: 25_000, payment_method: 'QRIS' }),
        });
        const created = (await response.json()) as { data?: { ref_code: string } };
        if (response.status !== 201 || !created.data) throw new Error(`POST /v1/orders answered ${response.status}: ${JSON.stringify(created)}`);
        refs.push(created.data.ref_code);
        const paid = await fetch(`${simUrl}/simulate/pay`, { method: 'POST', body: JSON.stringify({ reference: created.data.ref_code }) });
        if (paid.status !== 200) throw new Error(`simulator pay ${created.data.ref_code}: ${paid.status} ${await paid.text()}`);
        await paid.arrayBuffer();
      }
    }),
  );
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { rows } = await s.client.query<{ n: string }>(`select count(*) as n from orders where ref_code = any($1) and status = 'PAID'`, [refs]);
    if (Number(rows[0].n) === refs.length) break;
    if (Date.now() > deadline) throw new Error(`only ${rows[0].n} of ${refs.length} orders PAID after 120 s`);
    await delay(200);
  }
  const after = await lsn();
  const fpiAfter = await fullPageImages();
  const { rows } = await s.client.query<{ bytes: string }>('select pg_wal_lsn_diff($1, $2) as bytes', [after, before]);
  return { orders: refs.length, bytes_per_order: Math.round(Number(rows[0].bytes) / refs.length), full_page_images_per_order: Number(((fpiAfter - fpiBefore) / refs.length).toFixed(1)) };
}

type Round = {
  round: number;
  timings: Timing[];
  exports: Awaited<ReturnType<typeof timeExport>>[];
  ops: Awaited<ReturnType<typeof timeOps>>[];
};

type Report = {
  machine: { cores: number; load_before: number; load_after: number; node: string; postgres: string };
  database: { source: string; fsync: string; synchronous_commit: string };
  loaded: Record<string, number>;
  audit: { ok: boolean; ms: number; postings: number };
  retention: Awaited<ReturnType<typeof timeOps>>;
  rounds: Round[];
  sizes: Awaited<ReturnType<typeof tableSizes>> & Record<string, unknown>;
  not_measured: string[];
};

function text(r: Report): string {
  const l = r.loaded;
  return [
    `history bench: a synthetic year of ${l.orders.toLocaleString('en')} orders in ${l.merchants} merchants (the big one ${l.big_orders.toLocaleString('en')}), read through the API`,
    `machine   ${r.machine.cores} cores, load ${r.machine.load_before} → ${r.machine.load_after}${r.machine.load_before > r.machine.cores ? ' (BUSY: figures unreliable)' : ''}, Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}`,
    `database  ${r.database.source}: fsync=${r.database.fsync} synchronous_commit=${r.database.synchronous_commit}`,
    `loaded    in ${Math.round(l.load_ms / 1000)} s (vacuum analyze ${Math.round(l.analyze_ms / 1000)} s): ${l.paid_orders.toLocaleString('en')} paid orders, ${l.order_events.toLocaleString('en')} events, ` +
      `${l.refunds.toLocaleString('en')} refunds, ${l.disbursements.toLocaleString('en')} payouts, ${l.ledger_postings.toLocaleString('en')} postings, ` +
      `${l.webhook_deliveries.toLocaleString('en')} webhook deliveries, ${l.vendor_callbacks.toLocaleString('en')} vendor callbacks`,
    `audit     ledger ${r.audit.ok ? 'clean' : 'BROKEN'} (auditLedger, no statement limit): ${r.audit.postings.toLocaleString('en')} postings in ${r.audit.ms} ms`,
    `retention ${r.retention.command}: exit ${r.retention.exit_code} in ${r.retention.ms} ms: ${r.retention.said}`,
    ...r.rounds.flatMap((round) => roundText(round, r.rounds.length)),
    '',
    `sizes     ${r.sizes.total_mb} MB in tables and indexes: ${r.sizes.bytes_per_paid_order} bytes per paid order; WAL ${r.sizes.wal_bytes_per_paid_order} bytes per paid order (${r.sizes.wal_orders} orders created and paid through the API right after a checkpoint, ${r.sizes.wal_full_page_images_per_order} full-page images per order)`,
    `          at 100 orders/s a year: ${r.sizes.yearly_gb_at_100_orders_per_s} GB of tables and indexes, ${r.sizes.yearly_wal_gb_at_100_orders_per_s} GB of WAL`,
    ...r.sizes.by_table.map((t) => `          ${t.table.padEnd(28)} ${String(t.mb).padStart(6)} MB  ${String(t.bytes_per_paid_order).padStart(6)} B/paid order`),
    ...r.not_measured.map((m) => `not measured: ${m}`),
    '',
  ].join('\n');
}

function roundText(round: Round, of: number): string[] {
  const rows = new Map<string, Timing[]>();
  for (const t of round.timings) rows.set(t.call, [...(rows.get(t.call) ?? []), t]);
  const cell = (t: Timing | undefined) => (t ? `${t.p50_ms} / ${t.p95_ms}${t.status === '200' || t.status === '201' ? '' : ` [${t.status}]`}` : '–');
  const find = (ts: Timing[], who: string, c: number) => ts.find((t) => t.merchant === who && t.concurrency === c);
  return [
    '',
    `${of > 1 ? `round ${round.round} of ${of}: ` : ''}p50 / p95 ms [status when not 2xx]   big c=1 | big c=10 | small c=1 | small c=10`,
    ...[...rows].map(([call, ts]) => {
      const cols = call === 'POST /v1/orders' ? [find(ts, 'big', 1), find(ts, 'big', 10), find(ts, 'empty', 1), find(ts, 'empty', 10)] : [find(ts, 'big', 1), find(ts, 'big', 10), find(ts, 'small', 1), find(ts, 'small', 10)];
      return `${(call === 'POST /v1/orders' ? 'POST /v1/orders (small = empty merchant)' : call).padEnd(42)} ${cols.map((t) => cell(t).padEnd(16)).join(' ')}`;
    }),
    '',
    ...round.exports.map((e) => `export    ${e.period} (${e.date_from}..${e.date_to}): ${e.status}${e.error ? ` ${e.error}` : ''}, ${e.rows.toLocaleString('en')} rows in ${e.build_ms} ms (${e.rows_per_s.toLocaleString('en')} rows/s), csv worker peak RSS ${e.worker_peak_rss_mb ?? '?'} MB`),
    ...round.ops.map((o) => `ops       ${o.command}: exit ${o.exit_code} in ${o.ms} ms: ${o.said}`),
  ];
}
