// Settlement bench: how long one settlement build takes over one merchant's period of many paid
// orders (db/settlements.ts buildSettlement, exactly as the scheduler and ops call it), and what
// a cancel (which frees every order again) costs. The orders and their ledger payments are
// written set-based (a few statements, the same rows postOrderPayment writes one at a time, the
// balance chains in payment order), and the ledger audit must be clean at the end.
//
// Rounds: build, then cancel and build again (the same orders), so each round after the first
// runs on a table carrying the previous rounds' dead row versions, as a rebuilt day would.
//
//   npm run bench -- settlements [--orders 100000] [--rounds 3] [--ephemeral] [--json]
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { defaultBrand } from '../../db/brands.ts';
import { auditLedger, lockMerchantAccounts } from '../../db/ledger.ts';
import { findBankByShortCode } from '../../db/master-data.ts';
import { createMerchant, setSettlementAccount } from '../../db/merchants.ts';
import { createPool, sql, type Pool } from '../../db/pool.ts';
import { startBoss } from '../../db/queue.ts';
import { createSealer } from '../../db/secrets.ts';
import { buildSettlement, cancelSettlement, periodOf } from '../../db/settlements.ts';
import { benchDatabase, databaseOptions, durableFrom } from './database.ts';

const SETTLEMENT_DATE = '2026-11-20';
const MDR_BPS = 70;

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      orders: { type: 'string', default: '100000' },
      rounds: { type: 'string', default: '3' },
      ...databaseOptions,
      json: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const orders = positive('orders', values.orders);
  const rounds = positive('rounds', values.rounds);
  const loadBefore = Number(os.loadavg()[0].toFixed(2));
  const db = await benchDatabase({ durable: durableFrom(values) });
  const pool = await createPool(db.url, { size: 4, name: 'bench-settlements' });
  const boss = await startBoss(db.url, { role: 'sender', poolSize: 2 });
  try {
    const merchantId = await manualMerchant(pool);
    const seedStarted = performance.now();
    const seeded = await seedPaidOrders(pool, merchantId, orders);
    const seedMs = performance.now() - seedStarted;
    // Statistics as autovacuum keeps them on a live database (the tables just grew by 100,000s).
    await pool.query(sql.unsafe`analyze orders`);
    await pool.query(sql.unsafe`analyze ledger_transfers`);
    await pool.query(sql.unsafe`analyze ledger_postings`);

    const results = [];
    for (let round = 1; round <= rounds; round++) {
      const started = performance.now();
      const built = await buildSettlement(pool, boss, { merchantId, settlementDate: SETTLEMENT_DATE, cutoffHour: 0 });
      const buildMs = performance.now() - started;
      if (built.status !== 'created') throw new Error(`round ${round}: build ${built.status}`);
      const s = built.settlement;
      if (s.order_count !== orders || s.gross_amount !== seeded.gross || s.mdr_total !== seeded.mdr) {
        throw new Error(`round ${round}: settlement ${s.order_count} orders, ${s.gross_amount} gross, ${s.mdr_total} MDR; seeded ${orders}, ${seeded.gross}, ${seeded.mdr}`);
      }
      let cancelMs: number | null = null;
      if (round < rounds) {
        const cancelStarted = performance.now();
        await cancelSettlement(pool, boss, s.id, 'bench round');
        cancelMs = performance.now() - cancelStarted;
      }
      results.push({ round, build_ms: Math.round(buildMs), orders_per_s: Math.round(orders / (buildMs / 1000)), cancel_ms: cancelMs === null ? null : Math.round(cancelMs), net_payout: s.net_payout });
    }

    const auditStarted = performance.now();
    const audit = await auditLedger(pool);
    const auditMs = performance.now() - auditStarted;
    if (!audit.ok) throw new Error(`ledger audit: ${JSON.stringify(audit.problems.slice(0, 5))}`);

    const report = {
      bench: 'settlements',
      machine: { cores: os.availableParallelism(), load_before: loadBefore, node: process.version, postgres: db.settings.server_version },
      database: { source: db.source, fsync: db.settings.fsync, synchronous_commit: db.settings.synchronous_commit },
      orders,
      gross_amount: seeded.gross,
      mdr_total: seeded.mdr,
      seed_ms: Math.round(seedMs),
      rounds: results,
      audit: { ok: audit.ok, postings: audit.postings, ms: Math.round(auditMs) },
    };
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : text(report));
  } finally {
    await boss.stop({ graceful: false });
    await pool.end();
    await db.release();
  }
}

async function manualMerchant(pool: Pool): Promise<string> {
  const sealer = createSealer(randomBytes(32).toString('hex'));
  const brand = await defaultBrand(pool);
  const { merchant_id } = await createMerchant(pool, sealer, { name: 'Bench Toko', settlementType: 'MANUAL', brandId: brand.id, webhookSecret: null, notifyUrl: null });
  const bank = await findBankByShortCode(pool, 'BCA');
  if (!bank) throw new Error('bank BCA is missing from master data');
  await setSettlementAccount(pool, merchant_id, { bankId: bank.id, accountNumber: '1234567890', accountName: 'PT Bench' });
  return merchant_id;
}

/**
 * `count` PAID orders of the merchant spread over the settlement day, V1 and legacy mixed, each
 * with its ORDER_PAYMENT transfer (clearing −amount, accrual +amount − MDR, fee revenue +MDR,
 * MDR rounded half up as mdrOf does), postings chained per account in payment order, and the
 * accounts' balances and versions set to their postings.
 */
async function seedPaidOrders(pool: Pool, merchantId: string, count: number) {
  const { periodStart } = periodOf(SETTLEMENT_DATE, 0);
  return pool.transaction(async (tx) => {
    const accounts = await lockMerchantAccounts(tx, merchantId, ['VENDOR_CLEARING', 'SETTLEMENT_ACCRUAL', 'FEE_REVENUE']);
    const [clearing, accrual, fee] = ['VENDOR_CLEARING', 'SETTLEMENT_ACCRUAL', 'FEE_REVENUE'].map((k) => accounts.get(k as never)!.id);
    await tx.query(sql.unsafe`
      insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, mdr_amount, status, qr_token, paid_at, created_at, updated_at, manual_settlement)
      select gen_random_uuid(), ${merchantId}, 'ORD-' || (1763600000 + i) || '-BENCH' || lpad(i::text, 7, '0'), 'BENCH-' || i,
             case when i % 5 = 0 then 'LEGACY' else 'V1' end, a.amount, (a.amount * ${MDR_BPS} + 5000) / 10000, 'PAID', 'bench-' || i,
             ${sql.timestamp(periodStart)} + make_interval(secs => i * 86000.0 / ${count}),
             ${sql.timestamp(periodStart)}, now(), true
      from generate_series(1, ${count}) as i, lateral (select 1000 + (i * 7919) % 500000 as amount) a`);
    await tx.query(sql.unsafe`
      insert into ledger_transfers (merchant_id, kind, reference_type, reference_id, ref_code, description, created_at)
      select ${merchantId}, 'ORDER_PAYMENT', 'ORDER', o.id, o.ref_code,
             'QRIS payment ' || o.ref_code || ' (MDR ' || (o.amount * ${MDR_BPS} + 5000) / 10000 || ')', o.paid_at
      from orders o where o.merchant_id = ${merchantId}`);
    await tx.query(sql.unsafe`
      with legs as (
        select t.id as transfer_id, t.created_at, o.paid_at, o.id as order_id, k.leg,
               case k.leg when 1 then ${clearing}::bigint when 2 then ${accrual}::bigint else ${fee}::bigint end as account_id,
               case k.leg when 1 then -o.amount
                          when 2 then o.amount - (o.amount * ${MDR_BPS} + 5000) / 10000
                          else (o.amount * ${MDR_BPS} + 5000) / 10000 end as amount
        from orders o
        join ledger_transfers t on t.kind = 'ORDER_PAYMENT' and t.reference_id = o.id
        cross join (values (1), (2), (3)) as k(leg)
        where o.merchant_id = ${merchantId}
      ), chained as (
        select legs.*, sum(amount) over (partition by account_id order by paid_at, order_id rows unbounded preceding) as after
        from legs
      )
      insert into ledger_postings (transfer_id, account_id, amount, balance_before, balance_after, created_at)
      select transfer_id, account_id, amount, after - amount, after, created_at
      from chained order by paid_at, order_id, leg`);
    await tx.query(sql.unsafe`
      update ledger_accounts a set balance = s.total, version = s.n
      from (select account_id, sum(amount)::bigint as total, count(*)::int as n from ledger_postings
            where account_id = any(${sql.array([clearing, accrual, fee], 'int8')}) group by account_id) s
      where a.id = s.account_id`);
    return tx.one(sql.type(z.object({ gross: z.number(), mdr: z.number() }))`
      select coalesce(sum(amount), 0)::bigint as gross, coalesce(sum((amount * ${MDR_BPS} + 5000) / 10000), 0)::bigint as mdr
      from orders where merchant_id = ${merchantId}`);
  });
}

function positive(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw Object.assign(new Error(`--${name} must be a positive integer`), { code: 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' });
  return n;
}

type Report = {
  orders: number;
  machine: { cores: number; load_before: number; node: string; postgres: string };
  database: { source: string; fsync: string; synchronous_commit: string };
  seed_ms: number;
  rounds: { round: number; build_ms: number; orders_per_s: number; cancel_ms: number | null; net_payout: number }[];
  audit: { ok: boolean; postings: number; ms: number };
};

function text(r: Report): string {
  return [
    `settlement build over ${r.orders.toLocaleString('en')} paid orders of one merchant and day`,
    `machine: ${r.machine.cores} cores, load ${r.machine.load_before}, node ${r.machine.node}, postgres ${r.machine.postgres}`,
    `database: ${r.database.source} (fsync ${r.database.fsync}, synchronous_commit ${r.database.synchronous_commit})`,
    `seeded in ${r.seed_ms} ms`,
    ...r.rounds.map((x) => `round ${x.round}: build ${x.build_ms} ms (${x.orders_per_s.toLocaleString('en')} orders/s)${x.cancel_ms === null ? '' : `, cancel ${x.cancel_ms} ms`}`),
    `ledger audit ${r.audit.ok ? 'clean' : 'BROKEN'} over ${r.audit.postings.toLocaleString('en')} postings in ${r.audit.ms} ms`,
    '',
  ].join('\n');
}
