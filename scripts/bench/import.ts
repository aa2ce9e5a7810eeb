// Import bench: POST /v1/disbursements/import of a 100,000-row CSV through the API process, and
// what the import does to the API's other requests (GET /v1/balance latency during the import,
// against the same load just before it) and to the same merchant's payment credits (how long a
// paid order's callback takes while the import runs: the wallet lock is what it can wait on).
//
//   npm run bench -- import [--rows 100000] [--connections 10] [--rate 200] [--baseline 5] [--pool 20]
//                           [--credit-every 200] [--disburse-every 200] [--ephemeral] [--json]
//
// Processes: the API (api/server.ts, as the Procfile runs it; its piscina thread parses the
// CSV). No disbursement worker: the import's work ends when its jobs are queued. One WALLET
// merchant is created and funded directly through db/ (an operator adjustment), with limits
// raised so that every row is accepted. The file is 90% BANK rows and 10% EWALLET rows over
// several banks, amounts between 10,000 and 99,999. A 1,000-row import warms the API up first
// (its worker thread, its prepared statements); the measured import has its own prefix.
// After the import: the rows, debits and jobs are counted and the ledger audit is run.
//
// Payment credits: the merchant's orders are made PENDING up front (db/, as the order worker
// leaves them), and while the import runs the bench pays one every --credit-every ms, one at a
// time, through the API's real callback path: a signed `qris.paid` callback of a simulator-kind
// vendor registered for the bench (POST /callbacks/<code>: the callback record, the order PAID,
// the ORDER_PAYMENT transfer into the WALLET). Each callback's answer time is that credit's wait
// plus its own work (~5-20 ms alone, measured before the import). Beside them, the same
// merchant's single disbursements (POST /v1/disbursements, one at a time every
// --disburse-every ms), which take the same lock; the wallet is funded for them as well, so the
// file is still accepted whole.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { defaultBrand } from '../../db/brands.ts';
import { adjustWallet, auditLedger } from '../../db/ledger.ts';
import { createMerchant, setMoneySettings } from '../../db/merchants.ts';
import { insertOrder } from '../../db/orders.sql.ts';
import { createPool, sql, type Pool } from '../../db/pool.ts';
import { newRefCodes } from '../../db/ref-codes.ts';
import { createSealer, newMasterKey } from '../../db/secrets.ts';
import { upsertVendor } from '../../db/vendors.ts';
import { freePort } from '../lib/cluster.ts';
import { processTicks, startCpuSample, treeTicks, parentPid } from './cpu.ts';
import { benchDatabase, databaseOptions, durableFrom, runFacts } from './database.ts';
import { startProcess, type BenchProcess } from './processes.ts';

/** Issue 17's targets: 100,000 rows in at most 10 s; a same-merchant payment credit waits at most 1 s. */
const TARGET_SECONDS = 10;
const TARGET_CREDIT_MS = 1_000;
/** The vendor the bench's payment callbacks come from, and the most orders it pays in one run. */
const CALLBACK_VENDOR = 'benchpay';
const CREDIT_ORDERS = 400;
const CREDIT_AMOUNT = 10_000;
/** Single disbursements during the import: at most this many, of this amount (BANK fee 2,500 on top). */
const SINGLE_MAX = 400;
const SINGLE_AMOUNT = 10_000;
const BANKS = ['BCA', 'BNI', 'BRI', 'MANDIRI'];
const EWALLETS = ['OVO', 'DANA', 'GOPAY'];
const HEADER = 'channel,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,amount,notify_url';

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      rows: { type: 'string', default: '100000' },
      connections: { type: 'string', default: '10' },
      rate: { type: 'string', default: '200' },
      baseline: { type: 'string', default: '5' },
      pool: { type: 'string', default: '20' },
      'credit-every': { type: 'string', default: '200' },
      'disburse-every': { type: 'string', default: '200' },
      ...databaseOptions,
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const rows = positive('rows', values.rows);
  const connections = positive('connections', values.connections);
  const rate = positive('rate', values.rate);
  const baseline = positive('baseline', values.baseline);
  const apiPool = positive('pool', values.pool);
  const creditEvery = positive('credit-every', values['credit-every']);
  const disburseEvery = positive('disburse-every', values['disburse-every']);

  const loadBefore = Number(os.loadavg()[0].toFixed(2));
  const db = await benchDatabase({ durable: durableFrom(values) });
  const masterKey = newMasterKey();
  const sealer = createSealer(masterKey);
  const pool = await createPool(db.url, { size: 2, name: 'bench' });
  const processes: BenchProcess[] = [];
  try {
    const merchant = await createMerchant(pool, sealer, {
      name: 'Bench Payroll',
      settlementType: 'WALLET',
      brandId: (await defaultBrand(pool)).id,
      webhookSecret: null,
      notifyUrl: null,
    });
    await setMoneySettings(pool, merchant.merchant_id, { daily_disbursement_limit: 1e13 });
    const file = payroll(rows);
    const warmup = payroll(1_000);
    await pool.transaction((tx) =>
      adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: file.totalDebit + warmup.totalDebit + (SINGLE_MAX + 5) * (SINGLE_AMOUNT + 2_500), reason: 'bench float' }));
    const callbackSecret = randomBytes(32).toString('hex');
    await upsertVendor(pool, sealer, { code: CALLBACK_VENDOR, kind: 'simulator', baseUrl: 'http://127.0.0.1:9', credentials: { secret: callbackSecret } });
    const orders = await pendingOrders(pool, merchant.merchant_id, CREDIT_ORDERS);

    const port = await freePort();
    const api = await startProcess(
      'api',
      'api/server.ts',
      [],
      { DATABASE_URL: db.url, KASIR_MASTER_KEY: masterKey, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), DB_POOL_SIZE: String(apiPool) },
      'ipc',
    );
    processes.push(api);
    const url = `http://127.0.0.1:${port}`;
    const runId = randomBytes(3).toString('hex');

    const warm = await upload(url, merchant.api_key, warmup.csv, `${runId}-warmup`);
    if (warm.accepted !== 1_000) throw new Error(`warm-up import accepted ${warm.accepted} of 1000 rows`);
    const quiet = await balanceLoad(url, merchant.api_key, connections, rate, baseline);
    const pay = (ref: string) => payByCallback(url, callbackSecret, ref);
    const alone: number[] = [];
    for (const ref of orders.splice(0, 5)) alone.push(await pay(ref));
    const disburse = () => disburseOnce(url, merchant.api_key);
    const aloneSingles: number[] = [];
    for (let i = 0; i < 5; i++) aloneSingles.push(await disburse());

    const postmaster = parentPid((await pool.oneFirst(sql.unsafe`select pg_backend_pid()`)) as number);
    const cpu = startCpuSample({ api: () => processTicks(api.pid), postgres: () => (postmaster === null ? null : treeTicks(postmaster)) });
    const during = balanceLoad(url, merchant.api_key, connections, rate, 600);
    const started = performance.now();
    const importing = upload(url, merchant.api_key, file.csv, `${runId}-payroll`);
    const credits = creditLoop(importing, orders, pay, creditEvery);
    const singles = creditLoop(importing, Array.from({ length: SINGLE_MAX }, String), disburse, disburseEvery);
    const result = await importing;
    const seconds = (performance.now() - started) / 1000;
    during.stop();
    const busy = await during;
    const creditTimes = await credits;
    const singleTimes = await singles;
    const cpuUse = cpu.stop();

    const counts = await pool.one(sql.unsafe`
      select (select count(*)::int from disbursements where merchant_id = ${merchant.merchant_id}) as disbursements,
             (select count(*)::int from disbursements where merchant_id = ${merchant.merchant_id} and import_id is null) as singles,
             (select count(*)::int from ledger_transfers where merchant_id = ${merchant.merchant_id} and kind = 'DISBURSEMENT') as debits,
             (select count(*)::int from ledger_transfers where merchant_id = ${merchant.merchant_id} and kind = 'DISBURSEMENT_IMPORT') as import_debits,
             (select count(*)::int from orders where merchant_id = ${merchant.merchant_id} and status = 'PAID') as paid_orders,
             (select count(*)::int from pgboss.job where name = 'disbursement-execute') as jobs`);
    const audit = await auditLedger(pool);

    const report = {
      bench: 'import',
      ...runFacts(db, loadBefore),
      settings: {
        rows, file_bytes: Buffer.byteLength(file.csv), balance_connections: connections, balance_rate: rate, api_db_pool: apiPool,
        credit_every_ms: creditEvery, disburse_every_ms: disburseEvery, target_s: TARGET_SECONDS, target_credit_ms: TARGET_CREDIT_MS,
      },
      import: {
        seconds: Number(seconds.toFixed(2)),
        rows_per_second: Math.round(rows / seconds),
        status: result.status,
        accepted: result.accepted,
        refused: result.refused,
        response_bytes: result.bytes,
        target_met: result.status === 200 && result.accepted === rows && seconds <= TARGET_SECONDS,
      },
      payment_credits: {
        alone_ms: stats(alone),
        during_import_ms: stats(creditTimes),
        target_met: creditTimes.length > 0 && Math.max(...creditTimes) <= TARGET_CREDIT_MS,
      },
      single_disbursements: {
        alone_ms: stats(aloneSingles),
        during_import_ms: stats(singleTimes),
        target_met: singleTimes.length > 0 && Math.max(...singleTimes) <= TARGET_CREDIT_MS,
      },
      written: { ...(counts as object), ledger_audit_problems: audit.problems.length },
      balance_before_import: summary(quiet),
      balance_during_import: summary(busy),
      cpu: cpuUse,
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    for (const p of processes) await p.stop();
    await pool.end();
    await db.release();
  }
}

/** `n` orders of the merchant, PENDING as the order worker leaves them; their ref_codes. */
async function pendingOrders(pool: Pool, merchantId: string, n: number): Promise<string[]> {
  const refs = newRefCodes('ORD', n);
  for (const ref of refs) {
    await insertOrder(pool, {
      id: randomUUID(), merchantId, refCode: ref, merchantOrderId: ref, api: 'V1', amount: CREDIT_AMOUNT, customerName: null,
      customerEmail: null, customerPhone: null, notifyUrl: null, returnUrl: null, metadataJson: null, expireMinutes: 60, qrToken: ref,
    });
  }
  await pool.query(sql.unsafe`update orders set status = 'PENDING' where merchant_id = ${merchantId} and status = 'CREATING'`);
  return refs;
}

/** Pays an order as its vendor would: a signed qris.paid callback to the API; resolves with the answer time in ms. */
async function payByCallback(url: string, secret: string, ref: string): Promise<number> {
  const body = JSON.stringify({ event_id: randomUUID(), type: 'qris.paid', reference: ref, id: `V-${ref}`, amount: CREDIT_AMOUNT, paid_at: new Date().toISOString(), rrn: randomBytes(6).toString('hex') });
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  const started = performance.now();
  const res = await fetch(`${url}/callbacks/${CALLBACK_VENDOR}`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-sim-timestamp': timestamp, 'x-sim-signature': signature }, body,
  });
  const answer = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200 || !answer.includes('"paid"')) throw new Error(`payment callback for ${ref}: ${res.status} ${answer.slice(0, 300)}`);
  return ms;
}

/** A single BANK disbursement through the API; resolves with its answer time in ms. */
async function disburseOnce(url: string, apiKey: string): Promise<number> {
  const body = JSON.stringify({ idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Bench Single', amount: SINGLE_AMOUNT });
  const started = performance.now();
  const res = await fetch(`${url}/v1/disbursements`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body });
  const answer = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 201) throw new Error(`single disbursement: ${res.status} ${answer.slice(0, 300)}`);
  return ms;
}

/** One call at a time, every `every` ms, until the import answers (a call still waiting then counts too). */
async function creditLoop(importing: Promise<unknown>, refs: string[], pay: (ref: string) => Promise<number>, every: number): Promise<number[]> {
  let done = false;
  void importing.finally(() => (done = true)).catch(() => {});
  const times: number[] = [];
  while (!done && refs.length) {
    const next = performance.now() + every;
    times.push(await pay(refs.shift()!));
    const rest = next - performance.now();
    if (rest > 0 && !done) await new Promise((resolve) => setTimeout(resolve, rest));
  }
  return times;
}

function stats(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]) : null);
  return { count: sorted.length, p50: at(0.5), p90: at(0.9), max: sorted.length ? Math.round(sorted.at(-1)!) : null };
}

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw Object.assign(new Error(`--${name} must be a positive integer`), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  return n;
}

/** A payroll file of `rows` rows and the total it debits (BANK fee 2,500, EWALLET fee 1,000). */
function payroll(rows: number): { csv: string; totalDebit: number } {
  const lines = [HEADER];
  let totalDebit = 0;
  for (let i = 0; i < rows; i++) {
    const amount = 10_000 + ((i * 7_919) % 90_000);
    if (i % 10 === 9) {
      lines.push(`EWALLET,,,,${EWALLETS[i % EWALLETS.length]},0812${String(10_000_000 + i).slice(-8)},${amount},`);
      totalDebit += amount + 1_000;
    } else {
      lines.push(`BANK,${BANKS[i % BANKS.length]},${String(1_000_000_000 + i)},"Employee ${i}, Payroll",,,${amount},`);
      totalDebit += amount + 2_500;
    }
  }
  return { csv: `${lines.join('\r\n')}\r\n`, totalDebit };
}

async function upload(url: string, apiKey: string, csv: string, prefix: string) {
  const form = new FormData();
  form.set('file', new Blob([csv], { type: 'text/csv' }), 'payroll.csv');
  form.set('idempotency_prefix', prefix);
  const res = await fetch(`${url}/v1/disbursements/import`, { method: 'POST', headers: { 'x-api-key': apiKey }, body: form });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`import answered ${res.status}: ${body.slice(0, 500)}`);
  const data = JSON.parse(body).data;
  return { status: res.status, accepted: data.accepted as number, refused: data.refused as number, bytes: Buffer.byteLength(body) };
}

/** GET /v1/balance at a steady `rate` per second (a dashboard's polling, not a flood), as autocannon paces it. */
function balanceLoad(url: string, apiKey: string, connections: number, rate: number, duration: number) {
  const options: autocannon.Options & { overallRate: number } = { url: `${url}/v1/balance`, connections, overallRate: rate, duration, timeout: 30, headers: { 'x-api-key': apiKey } };
  return autocannon(options);
}

function summary(r: autocannon.Result) {
  const completed = Object.values(r.statusCodeStats).reduce((a, s) => a + s.count, 0);
  return {
    seconds: Number(((r.finish.getTime() - r.start.getTime()) / 1000).toFixed(1)),
    requests: completed,
    rps: Math.round(completed / ((r.finish.getTime() - r.start.getTime()) / 1000)),
    latency_ms: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

function text(r: any): string {
  const lat = (s: any) => `p50 ${s.latency_ms.p50} ms, p90 ${s.latency_ms.p90} ms, p99 ${s.latency_ms.p99} ms, max ${s.latency_ms.max} ms (${s.rps} rps, ${s.non2xx} non-2xx, ${s.errors} errors)`;
  return [
    `import bench: ${r.settings.rows} rows (${(r.settings.file_bytes / 1024 / 1024).toFixed(1)} MiB), ${r.machine.cores} cores, Node ${r.machine.node}, PostgreSQL ${r.machine.postgres} (${r.database.source}, fsync ${r.database.fsync}); load average ${r.machine.load_before} before, ${r.machine.load_after} after`,
    `  import:  ${r.import.seconds} s (${r.import.rows_per_second} rows/s), ${r.import.accepted} accepted, ${r.import.refused} refused, response ${(r.import.response_bytes / 1024 / 1024).toFixed(1)} MiB; target ≤ ${r.settings.target_s} s ${r.import.target_met ? 'met' : 'NOT met'}`,
    `  same-merchant payment credits (a signed callback every ${r.settings.credit_every_ms} ms, one at a time): alone p50 ${r.payment_credits.alone_ms.p50} ms; during the import ${r.payment_credits.during_import_ms.count}, p50 ${r.payment_credits.during_import_ms.p50} ms, p90 ${r.payment_credits.during_import_ms.p90} ms, max ${r.payment_credits.during_import_ms.max} ms; target ≤ ${r.settings.target_credit_ms} ms ${r.payment_credits.target_met ? 'met' : 'NOT met'}`,
    `  same-merchant single disbursements (POST /v1/disbursements every ${r.settings.disburse_every_ms} ms, one at a time): alone p50 ${r.single_disbursements.alone_ms.p50} ms; during the import ${r.single_disbursements.during_import_ms.count}, p50 ${r.single_disbursements.during_import_ms.p50} ms, p90 ${r.single_disbursements.during_import_ms.p90} ms, max ${r.single_disbursements.during_import_ms.max} ms; ≤ ${r.settings.target_credit_ms} ms ${r.single_disbursements.target_met ? 'met' : 'NOT met'}`,
    `  written: ${r.written.disbursements} disbursements (${r.written.singles} single), ${r.written.debits} per-row debits, ${r.written.import_debits} import debits, ${r.written.jobs} jobs, ${r.written.paid_orders} paid orders; ledger audit problems ${r.written.ledger_audit_problems}`,
    `  GET /v1/balance at ${r.settings.balance_rate}/s over ${r.settings.balance_connections} connections, before: ${lat(r.balance_before_import)}`,
    `  GET /v1/balance, during the import: ${lat(r.balance_during_import)}`,
    `  CPU during the import (% of one core): api ${r.cpu.percent_of_one_core.api}, postgres ${r.cpu.percent_of_one_core.postgres}; machine busy ${r.cpu.machine_busy_percent}%`,
    '',
  ].join('\n');
}
