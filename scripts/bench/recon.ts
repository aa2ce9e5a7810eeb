// Reconciliation bench: one run of a vendor's day (workers/recon-run.ts reconcileDay, exactly as
// `ops recon:run` and the daily job call it) over a day of 10,000 orders and 2,000 payouts at the
// simulator gateway, a process of its own read over HTTP through its report (GET
// /v1/reports/lines, paged). Target: under a minute (issue 30).
//
// The simulator holds the day as it would after real traffic: each QR created and paid through
// its API, each payout created through its API and settled (callbacks go to a local receiver that
// answers 200). Kasir's side is written set-based (the same rows, without the traffic): the
// orders PAID, the disbursements SUCCESS with their payout references. A few differences are
// planted so the run does more than match: orders paid at the vendor but PENDING in Kasir (lost
// callbacks: repaired, each after a per-record read), payouts Kasir holds that the vendor never
// got, payouts whose amount Kasir holds otherwise, payments Kasir never asked for. The run is
// made twice: the first finds and repairs, the rerun replaces the day's open differences.
//
//   npm run bench -- recon [--orders 10000] [--payouts 2000] [--ephemeral] [--json]
import { createHmac, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { defaultBrand } from '../../db/brands.ts';
import { logger } from '../../db/logger.ts';
import { findBankByShortCode } from '../../db/master-data.ts';
import { createMerchant } from '../../db/merchants.ts';
import { sql } from '../../db/pool.ts';
import { startBoss } from '../../db/queue.ts';
import { wibDay } from '../../db/recon.ts';
import { listDifferences } from '../../db/recon.sql.ts';
import { getVendor } from '../../db/vendors.ts';
import { reconcileDay } from '../../workers/recon-run.ts';
import { databaseOptions, durableFrom } from './database.ts';
import { closeSession, openSession, startSimulatorVendor, VENDOR } from './session.ts';

const PLANTED = { lostCallbacks: 10, lostPayouts: 5, changedAmounts: 5, foreign: 5 };
const CONCURRENCY = 32;

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      orders: { type: 'string', default: '10000' },
      payouts: { type: 'string', default: '2000' },
      ...databaseOptions,
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  // The run logs each difference at warn: the report says what the bench needs to know.
  logger.level = 'error';
  const orders = positive('orders', values.orders);
  const payouts = positive('payouts', values.payouts);
  const session = await openSession({ durable: durableFrom(values), stats: false });
  const { pool, sealer } = session;
  // Callbacks of the seeding land here and are dropped: Kasir's side is written directly.
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end());
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const callbackUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks/${VENDOR}`;
  const boss = await startBoss(session.db.url, { role: 'sender', poolSize: 2 });
  try {
    const sim = await startSimulatorVendor(session, { SIMULATOR_DISBURSE_DELAY_MS: '10' });
    const simUrl = (sim.ready as RegExpExecArray)[1];
    const secret = await simSecret(session);
    const day = wibDay(new Date());
    const merchant = await createMerchant(pool, sealer, { name: 'Bench Toko', settlementType: 'WALLET', brandId: (await defaultBrand(pool)).id, webhookSecret: null, notifyUrl: null });
    const bank = await findBankByShortCode(pool, 'BCA');
    if (!bank) throw new Error('bank BCA is missing from master data');

    // ---- the vendor's day, through the simulator's API
    const seedStarted = performance.now();
    const signed = (method: string, path: string, body: unknown) => {
      const raw = JSON.stringify(body);
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = createHmac('sha256', secret).update(`${timestamp}.${raw}`).digest('hex');
      return fetch(simUrl + path, { method, body: raw, headers: { 'content-type': 'application/json', 'x-sim-timestamp': timestamp, 'x-sim-signature': signature } });
    };
    const orderRef = (i: number) => `ORD-RB${String(i).padStart(7, '0')}`;
    const payoutRef = (i: number) => `DSB-RB${String(i).padStart(7, '0')}`;
    const amountOf = (i: number) => 10_000 + ((i * 7919) % 490_000);
    await inParallel(orders + PLANTED.foreign, async (i) => {
      const reference = i < orders ? orderRef(i) : `FOREIGN-RB${i}`;
      const created = await signed('POST', '/v1/qris', { reference, amount: amountOf(i), callback_url: callbackUrl });
      if (created.status !== 201) throw new Error(`seed QR ${reference}: ${created.status} ${await created.text()}`);
      const paid = await fetch(`${simUrl}/simulate/pay`, { method: 'POST', body: JSON.stringify({ reference }) });
      if (paid.status !== 200) throw new Error(`seed pay ${reference}: ${paid.status} ${await paid.text()}`);
      await paid.arrayBuffer();
    });
    // The last lostPayouts payouts never reach the vendor; changedAmounts before them are paid 1,000 more.
    const sentPayouts = payouts - PLANTED.lostPayouts;
    await inParallel(sentPayouts, async (i) => {
      const extra = i >= sentPayouts - PLANTED.changedAmounts ? 1000 : 0;
      const res = await signed('POST', '/v1/disbursements', {
        reference: payoutRef(i), channel: 'BANK', bank_code: 'BCA', account_number: '1234567890', account_name: 'PT Bench', amount: amountOf(i) + extra, callback_url: callbackUrl,
      });
      if (res.status !== 201) throw new Error(`seed payout ${payoutRef(i)}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    });

    // ---- Kasir's side of the same day
    await pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`
        insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, qr_token, vendor_code, vendor_order_id,
                            paid_at, expires_at, created_at, updated_at)
        select gen_random_uuid(), ${merchant.merchant_id}, 'ORD-RB' || lpad(i::text, 7, '0'), 'RB-' || i, 'V1', 10000 + (i * 7919) % 490000,
               case when i < ${PLANTED.lostCallbacks} then 'PENDING' else 'PAID' end, 'rb-' || i, ${VENDOR}, null,
               case when i < ${PLANTED.lostCallbacks} then null else now() end, now() + interval '1 hour', now(), now()
        from generate_series(0, ${orders - 1}) as i`);
      await tx.query(sql.unsafe`
        insert into disbursements (id, merchant_id, ref_code, idempotency_key, api, channel, bank_id, bank_short_code, bank_name,
                                   account_number, account_name, request_amount, fee, total_debit, status, wib_date, vendor_code,
                                   vendors_tried, requested_at, completed_at, created_at, updated_at)
        select gen_random_uuid(), ${merchant.merchant_id}, 'DSB-RB' || lpad(i::text, 7, '0'), 'rb-' || i, 'V1', 'BANK', ${bank.id}, 'BCA',
               ${bank.name}, '1234567890', 'PT Bench', 10000 + (i * 7919) % 490000, 2500, 10000 + (i * 7919) % 490000 + 2500,
               case when i >= ${sentPayouts} then 'ON_PROCESS' else 'SUCCESS' end, ${day}::date, ${VENDOR}, array[${VENDOR}],
               now(), case when i >= ${sentPayouts} then null else now() end, now(), now()
        from generate_series(0, ${payouts - 1}) as i`);
      await tx.query(sql.unsafe`
        insert into payout_references (reference, kind, payout_id, created_at)
        select ref_code, 'DISBURSEMENT', id, now() from disbursements where merchant_id = ${merchant.merchant_id}`);
    });
    await pool.query(sql.unsafe`analyze orders`);
    await pool.query(sql.unsafe`analyze disbursements`);
    await pool.query(sql.unsafe`analyze payout_references`);
    const seedMs = performance.now() - seedStarted;

    // ---- the runs
    const deps = { pool, boss, sealer, vendorTimeoutMs: 10_000 };
    const runs = [];
    for (const label of ['first', 'rerun']) {
      const started = performance.now();
      const r = await reconcileDay(deps, VENDOR, day, 'operator');
      const ms = Math.round(performance.now() - started);
      if (r.status !== 'COMPLETED') throw new Error(`${label} run ${r.status}: ${r.error}`);
      runs.push({ run: label, ms, vendor_lines: r.vendor_lines!, kasir_records: r.kasir_records!, matched: r.matched!, new_differences: r.new_differences!, open: r.open_differences!, repaired: r.repaired! });
    }
    const open = await listDifferences(pool, { vendorCode: VENDOR, day, status: 'OPEN' }, 1000);
    const byKind = Object.fromEntries([...new Set(open.map((d) => d.kind))].map((k) => [k, open.filter((d) => d.kind === k).length]));
    const expected = { PAID_IN_KASIR_ONLY: PLANTED.lostPayouts, AMOUNT_DIFFERS: PLANTED.changedAmounts, NO_KASIR_RECORD: PLANTED.foreign };
    const found = runs[0].repaired === PLANTED.lostCallbacks && Object.entries(expected).every(([k, n]) => byKind[k] === n);
    const report = {
      bench: 'recon',
      machine: { cores: os.availableParallelism(), load_before: session.loadBefore, node: process.version, postgres: session.db.settings.server_version },
      database: { source: session.db.source, fsync: session.db.settings.fsync, synchronous_commit: session.db.settings.synchronous_commit },
      orders,
      payouts,
      planted: PLANTED,
      seed_ms: Math.round(seedMs),
      runs,
      open_by_kind: byKind,
      planted_found: found,
      target_ms: 60_000,
      met: found && runs.every((r) => r.ms < 60_000),
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await boss.stop({ graceful: false });
    receiver.closeAllConnections();
    receiver.close();
    await closeSession(session);
  }
}

/** The simulator's secret, from the vendor row the session registered (sealed like every vendor's). */
async function simSecret(session: Awaited<ReturnType<typeof openSession>>): Promise<string> {
  const vendor = await getVendor(session.pool, session.sealer, VENDOR);
  return z.string().parse(vendor?.credentials.secret);
}

async function inParallel(count: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw Object.assign(new Error(`--${name} must be a positive integer`), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  return n;
}

type Report = {
  orders: number;
  payouts: number;
  machine: { cores: number; load_before: number; node: string; postgres: string };
  database: { source: string; fsync: string; synchronous_commit: string };
  seed_ms: number;
  runs: { run: string; ms: number; vendor_lines: number; kasir_records: number; new_differences: number; open: number; repaired: number }[];
  open_by_kind: Record<string, number>;
  planted_found: boolean;
  met: boolean;
};

function text(r: Report): string {
  return [
    `reconciliation of one day at the simulator: ${r.orders.toLocaleString('en')} orders, ${r.payouts.toLocaleString('en')} payouts`,
    `machine: ${r.machine.cores} cores, load ${r.machine.load_before}, node ${r.machine.node}, postgres ${r.machine.postgres}`,
    `database: ${r.database.source} (fsync ${r.database.fsync}, synchronous_commit ${r.database.synchronous_commit})`,
    `seeded in ${r.seed_ms} ms (through the simulator's API, Kasir's rows set-based)`,
    ...r.runs.map((x) => `${x.run}: ${x.ms} ms, ${x.vendor_lines.toLocaleString('en')} vendor lines, ${x.kasir_records.toLocaleString('en')} Kasir records, ${x.new_differences} new differences, ${x.open} open, ${x.repaired} repaired`),
    `open differences by kind: ${JSON.stringify(r.open_by_kind)}; planted ones found: ${r.planted_found ? 'yes' : 'NO'}`,
    `target: under 60,000 ms: ${r.met ? 'MET' : 'NOT MET'}`,
    '',
  ].join('\n');
}
