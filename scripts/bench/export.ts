// Export bench: how fast one real csv worker process builds an orders export, and how much
// memory it takes, at several sizes. For each size a merchant's orders are grown to that many
// (bulk inserts, scripts/lib/synthetic-orders.ts), a fresh csv worker is started (so its peak
// RSS is this export's alone), the export is requested as the API does (db/exports.ts), and the
// worker's VmHWM and VmRSS are read from /proc once it completes. Build time is the export's own
// started_at → completed_at (database clock): claim, the COPY that writes the CSV, chunk writes and commit.
//
// With --profits it then times GET /v1/reports/profits's statement over the current WIB month,
// once the merchant's PAID orders have their ORDER_PAYMENT transfers and fee postings (written
// set-based here: a throwaway ledger for timing, not a balanced one).
//
//   npm run bench -- export [--rows 100000,300000,1000000] [--profits] [--ephemeral] [--json]
import os from 'node:os';
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { defaultBrand } from '../../db/brands.ts';
import { requestExport } from '../../db/exports.ts';
import { sumProfits } from '../../db/reports.sql.ts';
import { createMerchant } from '../../db/merchants.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { startBoss } from '../../db/queue.ts';
import { createSealer, newMasterKey } from '../../db/secrets.ts';
import { backfillPaymentTotals, openLedgerAccounts } from '../lib/bench-ledger.ts';
import { insertSyntheticOrders } from '../lib/synthetic-orders.ts';
import { benchDatabase, databaseOptions, durableFrom } from './database.ts';
import { startWorker } from './worker.ts';

const TIMEOUT_MS = 600_000;

interface Run {
  rows: number;
  build_ms: number;
  rows_per_s: number;
  file_mb: number;
  chunks: number;
  worker_idle_rss_mb: number;
  worker_peak_rss_mb: number;
  load_at_start: number;
}

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      rows: { type: 'string', default: '100000,300000,1000000' },
      profits: { type: 'boolean', default: false },
      ...databaseOptions,
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const sizes = values.rows.split(',').map((v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw Object.assign(new Error('--rows must be positive integers, comma-separated'), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
    return n;
  }).sort((a, b) => a - b);

  const loadBefore = Number(os.loadavg()[0].toFixed(2));
  const db = await benchDatabase({ durable: durableFrom(values) });
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => undefined);
  let pool: Pool | null = null;
  let boss: PgBoss | null = null;
  try {
    await client.connect();
    pool = await createPool(db.url, { size: 2 });
    boss = await startBoss(db.url, { role: 'sender', poolSize: 2 });
    const sealer = createSealer(newMasterKey());
    const merchant = await createMerchant(pool, sealer, {
      name: 'Export bench', settlementType: 'WALLET', brandId: (await defaultBrand(pool)).id, webhookSecret: null, notifyUrl: null,
    });

    const runs: Run[] = [];
    let have = 0;
    for (const size of sizes) {
      await insertSyntheticOrders((text, params) => client.query(text, params), merchant.merchant_id, size - have, have);
      have = size;
      await client.query('analyze orders');
      const worker = await startWorker('csv', db.url);
      try {
        await delay(1000); // let start-up settle: the idle figure is the process before any export
        const idle = await memoryOf(worker.child.pid!);
        const loadAtStart = Number(os.loadavg()[0].toFixed(2));
        const requested = await requestExport(pool, boss, { id: merchant.merchant_id, settlement_type: 'WALLET' }, { type: 'orders', dateFrom: null, dateTo: null });
        const done = await completion(client, requested.id);
        const peak = await memoryOf(worker.child.pid!);
        if (done.row_count !== size) throw new Error(`export has ${done.row_count} rows, ${size} expected`);
        runs.push({
          rows: size,
          build_ms: Math.round(done.build_ms),
          rows_per_s: Math.round(size / (done.build_ms / 1000)),
          file_mb: Number((done.byte_count / 1e6).toFixed(1)),
          chunks: done.chunks,
          worker_idle_rss_mb: Math.round(idle.rss / 1024),
          worker_peak_rss_mb: Math.round(peak.hwm / 1024),
          load_at_start: loadAtStart,
        });
      } finally {
        await worker.stop();
      }
    }

    const profits = values.profits ? await timeProfits(client, pool, merchant.merchant_id) : null;
    const report = {
      bench: 'export',
      machine: { cores: os.availableParallelism(), load_before: loadBefore, node: process.version, postgres: db.settings.server_version },
      pg_copy_streams: await packageVersion('pg-copy-streams'),
      database: { source: db.source, fsync: db.settings.fsync, synchronous_commit: db.settings.synchronous_commit },
      runs,
      profits,
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await boss?.stop({ graceful: false });
    await pool?.end();
    await client.end().catch(() => undefined);
    await db.release();
  }
}

/** Posts the merchant's PAID orders in bulk, then runs the profits statement three times. */
async function timeProfits(client: pg.Client, pool: Pool, merchantId: string) {
  await openLedgerAccounts(client, merchantId);
  await client.query(
    `insert into ledger_transfers (merchant_id, kind, reference_type, reference_id, ref_code)
     select merchant_id, 'ORDER_PAYMENT', 'ORDER', id, ref_code from orders where merchant_id = $1 and status = 'PAID'`,
    [merchantId],
  );
  await client.query(
    `insert into ledger_postings (transfer_id, account_id, amount, balance_before, balance_after)
     select t.id, a.id, (o.amount * 70 + 5000) / 10000, 0, (o.amount * 70 + 5000) / 10000
     from ledger_transfers t join orders o on o.id = t.reference_id
     join ledger_accounts a on a.merchant_id = t.merchant_id and a.kind = 'FEE_REVENUE'
     where t.merchant_id = $1`,
    [merchantId],
  );
  await backfillPaymentTotals(client);
  await client.query('analyze');
  const wib = new Date(Date.now() + 7 * 3_600_000).toISOString();
  const from = `${wib.slice(0, 8)}01`;
  const to = new Date(Date.UTC(Number(wib.slice(0, 4)), Number(wib.slice(5, 7)), 0)).toISOString().slice(0, 10);
  const ms: number[] = [];
  let orders = 0;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    orders = (await sumProfits(pool, merchantId, from, to)).order_count;
    ms.push(Math.round(performance.now() - started));
  }
  return { date_from: from, date_to: to, paid_orders_in_month: orders, ms };
}

/** The process's peak (VmHWM) and current (VmRSS) resident set, in kB. */
async function memoryOf(pid: number): Promise<{ hwm: number; rss: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { hwm: kb('VmHWM'), rss: kb('VmRSS') };
}

async function completion(client: pg.Client, id: string) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const { rows } = await client.query<{ status: string; error: string | null; row_count: number; byte_count: string; build_ms: number; chunks: number }>(
      `select status, error, row_count, byte_count, extract(epoch from completed_at - started_at) * 1000 as build_ms,
              (select count(*)::int from export_chunks where export_id = e.id) as chunks
       from exports e where id = $1`,
      [id],
    );
    const e = rows[0];
    if (e.status === 'COMPLETED') return { ...e, build_ms: Number(e.build_ms), byte_count: Number(e.byte_count) };
    if (e.status === 'FAILED') throw new Error(`export failed: ${e.error}`);
    if (Date.now() > deadline) throw new Error(`export still ${e.status} after ${TIMEOUT_MS} ms`);
    await delay(100);
  }
}

function text(r: {
  machine: { cores: number; load_before: number; node: string; postgres: string };
  pg_copy_streams: string;
  database: { source: string; fsync: string; synchronous_commit: string };
  runs: Run[];
  profits: Awaited<ReturnType<typeof timeProfits>> | null;
}): string {
  return [
    `export bench: orders export built by one csv worker process (a fresh one per size), Postgres writes the CSV (COPY), read with pg-copy-streams ${r.pg_copy_streams}`,
    `machine   ${r.machine.cores} cores (1-min load ${r.machine.load_before} at start` +
      `${r.machine.load_before > r.machine.cores ? ': BUSY, figures unreliable' : ''}), Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}`,
    `database  ${r.database.source}: fsync=${r.database.fsync} synchronous_commit=${r.database.synchronous_commit}`,
    ...r.runs.map(
      (x) =>
        `${String(x.rows).padStart(9)} rows  ${String(x.rows_per_s).padStart(7)} rows/s (${x.build_ms} ms)  ` +
        `file ${x.file_mb} MB in ${x.chunks} chunks  worker RSS idle ${x.worker_idle_rss_mb} MB, peak ${x.worker_peak_rss_mb} MB` +
        `  (load ${x.load_at_start})`,
    ),
    ...(r.profits
      ? [`profits   ${r.profits.date_from}..${r.profits.date_to}, ${r.profits.paid_orders_in_month} paid orders: ${r.profits.ms.join(' / ')} ms`]
      : []),
    '',
  ].join('\n');
}

async function packageVersion(name: string): Promise<string> {
  const { ROOT } = await import('../lib/local.ts');
  return (JSON.parse(await readFile(`${ROOT}node_modules/${name}/package.json`, 'utf8')) as { version: string }).version;
}
