// The ledger through the whole stack: paid orders credit WALLET merchants amount − MDR and
// accrue for MANUAL ones, exactly once; operator adjustments; the audit catches tampering;
// the migration posts orders paid before the ledger existed.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { adjustWallet, auditLedger, postTransfer, InsufficientFunds } from '../../db/ledger.ts';
import { mdrOf } from '../../db/money-rules.ts';
import { migrate } from '../../db/migrate.ts';
import { sql } from '../../db/pool.ts';
import { recountProfits, sumProfits } from '../../db/reports.sql.ts';
import { call } from '../helpers/http.ts';
import { emptyDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { balanceOf, ledgerAudit, paidOrder } from '../helpers/money.ts';
import { xSignature } from '../helpers/order-lifecycle.ts';
import { ops } from '../helpers/processes.ts';
import { simulatePay } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

t.test('mdrOf: basis points rounded half up, exact for the largest QRIS amount', async (t) => {
  t.equal(mdrOf(150_000, 70), 1_050);
  t.equal(mdrOf(1, 70), 0, '0.007 rounds down');
  t.equal(mdrOf(71, 70), 0, '0.497 rounds down');
  t.equal(mdrOf(72, 70), 1, '0.504 rounds up');
  t.equal(mdrOf(5_000, 1), 1, 'exactly half rounds up');
  t.equal(mdrOf(14_999, 1), 1, '1.4999 rounds down');
  t.equal(mdrOf(9_999_999_999_999, 70), 70_000_000_000, '69,999,999,999.993 rounds up');
  t.equal(mdrOf(9_999_999_999_999, 9_999), 9_998_999_999_999, 'exact past 2^53 (a float product would not be)');
  t.equal(mdrOf(9_999_999_999_999, 10_000), 9_999_999_999_999, '100% of the largest amount');
  t.equal(mdrOf(100, 0), 0);
  t.throws(() => mdrOf(1.5, 70), RangeError);
  t.throws(() => mdrOf(100, 10_001), RangeError);
});

t.test('payments credit the ledger exactly once', async (t) => {
  const stack = await startStack(t);
  const wallet = await makeMerchant(stack.api.ctx, { settlement: 'WALLET' });
  const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });

  const first = await paidOrder(stack, wallet, 150_000);
  await paidOrder(stack, wallet, 72);
  t.equal(await balanceOf(stack, wallet), 150_000 - 1_050 + 72 - 1, 'WALLET merchant credited amount − MDR per order');

  // The gateway reports the same payment again (a replayed callback with a new event id is
  // still the same payment): nothing moves.
  const again = await simulatePay(stack.sim.url, { reference: first.ref_code, force: true });
  t.ok([200, 409].includes(again.status), 'the simulator took or refused the repeat');
  const pool = stack.api.ctx.pool;
  const transfers = await pool.oneFirst(sql.unsafe`select count(*)::int from ledger_transfers where reference_id = ${first.id}`);
  t.equal(transfers, 1, 'one payment transfer per order');

  const history = await call(stack.api.url, { path: '/v1/balance-history?limit=1', headers: { 'x-api-key': wallet.api_key } });
  t.equal(history.status, 200);
  t.same(history.json.meta, { page: 1, limit: 1, total: 2, total_pages: 2 });
  const latest = history.json.data[0];
  t.match(latest, { type: 'ORDER_PAYMENT', amount: 71, balance_before: 148_950, balance_after: 149_021, reference_type: 'ORDER' });
  const one = await call(stack.api.url, { path: `/v1/balance-history/${latest.id}`, headers: { 'x-api-key': wallet.api_key } });
  t.same(one.json.data, latest, 'a movement reads back by id');
  const bad = await call(stack.api.url, { path: '/v1/balance-history/not-a-uuid', headers: { 'x-api-key': wallet.api_key } });
  t.equal(bad.json.error.code, 'INVALID_ID');
  const other = await makeMerchant(stack.api.ctx, { settlement: 'WALLET' });
  const foreign = await call(stack.api.url, { path: `/v1/balance-history/${latest.id}`, headers: { 'x-api-key': other.api_key } });
  t.equal(foreign.status, 404, "another merchant's movement is 404");
  t.equal(await balanceOf(stack, other), 0, 'a merchant with no movements has balance 0');

  await paidOrder(stack, manual, 200_000);
  const manualBalance = await call(stack.api.url, { path: '/v1/balance', headers: { 'x-api-key': manual.api_key } });
  t.equal(manualBalance.status, 403);
  t.equal(manualBalance.json.error.code, 'NOT_WALLET_MERCHANT');
  const manualHistory = await call(stack.api.url, { path: '/v1/balance-history', headers: { 'x-api-key': manual.api_key } });
  t.equal(manualHistory.json.error.code, 'NOT_WALLET_MERCHANT');
  const accrued = await pool.oneFirst(sql.unsafe`
    select balance from ledger_accounts where merchant_id = ${manual.merchant_id} and kind = 'SETTLEMENT_ACCRUAL'`);
  t.equal(accrued, 200_000 - 1_400, 'MANUAL merchant accrues amount − MDR for settlement');
  const fees = await pool.oneFirst(sql.unsafe`
    select sum(balance)::bigint from ledger_accounts where kind = 'FEE_REVENUE'`);
  t.equal(fees, 1_050 + 1 + 1_400, 'MDR booked to fee revenue');

  await ledgerAudit(t, stack.env);
});

t.test('operator adjustments and fees through the ops CLI', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const credit = await ops(stack.env, 'ledger:adjust', '--merchant', merchant.merchant_id, '--amount', '50000', '--reason', 'goodwill credit', '--json');
  t.equal(credit.code, 0, credit.stderr);
  t.equal(JSON.parse(credit.stdout).balance, 50_000);
  const overdraw = await ops(stack.env, 'ledger:adjust', '--merchant', merchant.merchant_id, '--amount=-50001', '--reason', 'too much', '--json');
  t.equal(overdraw.code, 1, 'a debit beyond the balance is refused');
  t.match(JSON.parse(overdraw.stdout).error, /holds 50000/);
  const debit = await ops(stack.env, 'ledger:adjust', '--merchant', merchant.merchant_id, '--amount=-20000', '--reason', 'chargeback', '--json');
  t.equal(JSON.parse(debit.stdout).balance, 30_000);
  const history = await call(stack.api.url, { path: '/v1/balance-history', headers: { 'x-api-key': merchant.api_key } });
  t.match(history.json.data, [
    { type: 'ADJUSTMENT', amount: -20_000, balance_before: 50_000, balance_after: 30_000, description: 'chargeback' },
    { type: 'ADJUSTMENT', amount: 50_000, balance_before: 0, balance_after: 50_000, description: 'goodwill credit' },
  ]);
  const bad = await ops(stack.env, 'ledger:adjust', '--merchant', merchant.merchant_id, '--amount', '1.5', '--reason', 'x x x');
  t.equal(bad.code, 64, 'a fractional amount is refused as bad input');

  const fees = await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--mdr-bps', '100', '--fee-bank', '3000', '--review-threshold', '5000000', '--json');
  t.equal(fees.code, 0, fees.stderr);
  t.match(JSON.parse(fees.stdout), { mdr_bps: 100, fee_bank: 3000, fee_ewallet: 1000, disbursement_limit: 100_000_000, daily_disbursement_limit: 500_000_000, review_threshold: 5_000_000 });
  const off = await ops(stack.env, 'merchant:set-fees', '--merchant', merchant.merchant_id, '--review-threshold', 'off', '--json');
  t.match(JSON.parse(off.stdout), { mdr_bps: 100, fee_bank: 3000, review_threshold: null });

  await ledgerAudit(t, stack.env);
});

t.test('concurrent transfers on one wallet never overdraw and never deadlock', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  await pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 10_000, reason: 'float' }));
  const debit = () =>
    pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: -1_000, reason: 'debit' }));
  const feeMove = () =>
    pool.transaction((tx) =>
      postTransfer(tx, {
        merchantId: merchant.merchant_id,
        kind: 'ADJUSTMENT',
        reference: { type: 'ADJUSTMENT', id: randomUUID(), refCode: null },
        description: 'fee move',
        legs: { FEE_REVENUE: 1, ADJUSTMENTS: -1 },
      }));
  const debits = Array.from({ length: 20 }, debit);
  const moves = Array.from({ length: 20 }, feeMove);
  const results = await Promise.allSettled(debits);
  await Promise.all(moves);
  const refused = results.filter((r) => r.status === 'rejected');
  t.equal(refused.length, 10, 'ten of twenty debits of 1,000 fit in 10,000');
  t.ok(refused.every((r) => (r as PromiseRejectedResult).reason instanceof InsufficientFunds), 'the rest are InsufficientFunds');
  t.equal(await balanceOf(stack, merchant), 0);
  const report = await auditLedger(pool);
  t.ok(report.ok, 'audit clean');
  await ledgerAudit(t, stack.env);
});

t.test('the audit fails on a tampered balance, an unbalanced transfer and an unposted payment', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  await pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 500, reason: 'seed' }));
  await ledgerAudit(t, stack.env);

  await pool.query(sql.unsafe`update ledger_accounts set balance = balance + 1 where merchant_id = ${merchant.merchant_id} and kind = 'WALLET'`);
  const tampered = await ops(stack.env, 'ledger:audit', '--json');
  t.equal(tampered.code, 1, 'exit 1');
  t.match(JSON.parse(tampered.stdout), { ok: false, problems: [{ check: 'account_balance' }] });
  await pool.query(sql.unsafe`update ledger_accounts set balance = balance - 1 where merchant_id = ${merchant.merchant_id} and kind = 'WALLET'`);

  await t.rejects(pool.query(sql.unsafe`delete from ledger_postings`), /append-only/, 'postings cannot be deleted');
  await t.rejects(pool.query(sql.unsafe`update ledger_postings set amount = amount + 1`), /append-only/, 'postings cannot be edited');

  // A paid order with no payment transfer (as if posted by code that bypassed the ledger).
  await pool.query(sql.unsafe`alter table ledger_postings disable trigger ledger_postings_append_only`);
  await pool.query(sql.unsafe`delete from ledger_postings where amount = -500`);
  await pool.query(sql.unsafe`alter table ledger_postings enable trigger ledger_postings_append_only`);
  // History already proved by the audits above is for --full to re-prove.
  const unbalanced = JSON.parse((await ops(stack.env, 'ledger:audit', '--full', '--json')).stdout);
  t.ok(unbalanced.problems.some((p: any) => p.check === 'transfer_sum'), 'a transfer that does not sum to zero is reported');
});

t.test('the full audit proves the profits report\'s kept day totals against the records', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'disbursement'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  const order = await paidOrder(stack, merchant, 80_000);
  const today = new Date(Date.now() + 7 * 3_600_000).toISOString().slice(0, 10);
  const report = () => sumProfits(pool, merchant.merchant_id, today, today);
  t.strictSame(await report(), await recountProfits(pool, merchant.merchant_id, today, today), 'the payment counted once, with its MDR');
  t.match(await report(), { order_count: 1, gross_amount: 80_000, mdr_total: mdrOf(80_000, 70) });
  const full = async () => {
    const res = await ops(stack.env, 'ledger:audit', '--full', '--json');
    return { code: res.code, report: JSON.parse(res.stdout) };
  };
  t.match(await full(), { code: 0, report: { ok: true } });

  await pool.query(sql.unsafe`update profit_daily_totals set gross_amount = gross_amount + 1 where merchant_id = ${merchant.merchant_id} and order_count = 1`);
  const tampered = await full();
  t.equal(tampered.code, 1, 'a kept total that is not the records\' own fails the audit');
  t.match(tampered.report.problems, [{ check: 'profit_totals', subject: `${merchant.merchant_id} ${today}` }]);
  await pool.query(sql.unsafe`update profit_daily_totals set gross_amount = gross_amount - 1 where merchant_id = ${merchant.merchant_id} and order_count = 1`);

  // A paid order's time corrected to another WIB day moves it there, MDR and all.
  await pool.query(sql.unsafe`update orders set paid_at = '2026-01-31T17:30:00Z' where id = ${order.id}`);
  t.match(await sumProfits(pool, merchant.merchant_id, '2026-02-01', '2026-02-01'), { order_count: 1, gross_amount: 80_000, mdr_total: mdrOf(80_000, 70) });
  t.match(await report(), { order_count: 0, gross_amount: 0, mdr_total: 0 });
  t.match(await full(), { code: 0, report: { ok: true } });
});

t.test('the fee kept on a paid order is its payment\'s FEE_REVENUE leg: the audits prove it, the fill command keeps it for older orders', async (t) => {
  const stack = await startStack(t, { groups: ['vendor'] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  const kept = async (id: string) => (await pool.query(sql.unsafe`select mdr_amount from orders where id = ${id}`)).rows[0] as { mdr_amount: number | null };
  const audit = async (...args: string[]) => JSON.parse((await ops(stack.env, 'ledger:audit', ...args, '--json')).stdout);

  const first = await paidOrder(stack, merchant, 80_000);
  t.equal(Number((await kept(first.id)).mdr_amount), mdrOf(80_000, 70), 'the MDR the payment charged, kept on the order');
  await ledgerAudit(t, stack.env);

  // Incremental: a payment since the last clean audit whose order keeps another fee.
  const second = await paidOrder(stack, merchant, 50_000);
  await pool.query(sql.unsafe`update orders set mdr_amount = mdr_amount + 1 where id = ${second.id}`);
  t.match(await audit(), { ok: false, mode: 'INCREMENTAL', problems: [{ check: 'order_mdr', subject: second.ref_code }] }, 'the incremental audit finds it');
  t.match((await audit('--full')).problems, [{ check: 'order_mdr', subject: second.ref_code, detail: /keeps MDR 351, its payment .* charged 350/ }], 'so does the full one');

  // None kept (paid before migration 105) is no difference; ledger:fill-order-fees fills it from the ledger.
  await pool.query(sql.unsafe`update orders set mdr_amount = null where id in (${first.id}, ${second.id})`);
  t.match(await audit('--full'), { ok: true }, 'a paid order keeping no fee yet passes');
  const fill = await ops(stack.env, 'ledger:fill-order-fees', '--batch', '1', '--json');
  t.equal(fill.code, 0, fill.stderr);
  t.match(JSON.parse(fill.stdout), { filled: 2 }, 'both filled, one order per statement');
  t.equal(Number((await kept(first.id)).mdr_amount), mdrOf(80_000, 70));
  t.equal(Number((await kept(second.id)).mdr_amount), mdrOf(50_000, 70));
  t.match(JSON.parse((await ops(stack.env, 'ledger:fill-order-fees', '--json')).stdout), { filled: 0 }, 'a rerun fills nothing');

  // A fee on an order no payment was posted for.
  const body = JSON.stringify({ merchant_order_id: `FEE-${randomUUID()}`, amount: 20_000, payment_method: 'QRIS' });
  const headers: Record<string, string> = { 'x-api-key': merchant.api_key };
  if (merchant.webhook_secret) headers['x-signature'] = xSignature(merchant.webhook_secret, body);
  const pending = await call(stack.api.url, { path: '/v1/orders', headers, body });
  t.equal(pending.status, 201);
  await pool.query(sql.unsafe`update orders set mdr_amount = 140 where id = ${pending.json.data.id}`);
  t.match((await audit('--full')).problems, [{ check: 'order_mdr', subject: pending.json.data.ref_code, detail: /no ledger payment, yet MDR 140/ }]);
  await pool.query(sql.unsafe`update orders set mdr_amount = null where id = ${pending.json.data.id}`);
  t.match(await audit('--full'), { ok: true });
});

t.test('a merchant\'s settlement type is fixed: its orders were credited and are settled by it', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const pool = stack.api.ctx.pool;
  const refusal = await pool.query(sql.unsafe`update merchants set settlement_type = 'WALLET' where id = ${merchant.merchant_id}`).then(() => null, (e: Error) => e);
  t.match(String((refusal?.cause as Error | undefined)?.message ?? refusal?.message), /settlement_type is fixed/, 'MANUAL to WALLET is refused');
  await pool.query(sql.unsafe`update merchants set settlement_type = 'MANUAL', name = 'Renamed' where id = ${merchant.merchant_id}`);
  t.pass('an update that keeps the type goes through');
});

t.test('the audit checkpoint: the incremental audit finds a corrupted posting made after it, --full one from before it', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const merchant = await makeMerchant(stack.api.ctx);
  const pool = stack.api.ctx.pool;
  const adjust = (amount: number) =>
    pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount, reason: 'seed' }));
  const audit = async (...flags: string[]) => {
    const res = await ops(stack.env, 'ledger:audit', ...flags, '--json');
    return { code: res.code, stderr: res.stderr, report: JSON.parse(res.stdout) };
  };
  // Postings are append-only; corrupting one takes the trigger off (as a superuser could).
  const corrupt = async (statement: ReturnType<typeof sql.unsafe>) => {
    await pool.query(sql.unsafe`alter table ledger_postings disable trigger ledger_postings_append_only`);
    await pool.query(statement);
    await pool.query(sql.unsafe`alter table ledger_postings enable trigger ledger_postings_append_only`);
  };
  const wallet = sql.unsafe`(select id from ledger_accounts where merchant_id = ${merchant.merchant_id} and kind = 'WALLET')`;

  await adjust(500);
  const first = await audit();
  t.match(first, { code: 0, report: { ok: true, mode: 'FULL' } }, 'with no clean audit yet, the audit is a full one');
  t.match(await audit(), { code: 0, report: { ok: true, mode: 'INCREMENTAL', merchants: 0 } }, 'then incremental: nothing changed since');

  // After the checkpoint: a posting whose balance chain is broken (its arithmetic kept).
  await adjust(300);
  await corrupt(sql.unsafe`update ledger_postings set balance_before = balance_before + 1, balance_after = balance_after + 1
    where account_id = ${wallet} and amount = 300`);
  const after = await audit();
  t.equal(after.code, 1, 'the incremental audit exits 1');
  t.match(after.report, { ok: false, mode: 'INCREMENTAL', merchants: 1 });
  t.ok(after.report.problems.some((p: any) => p.check === 'balance_chain'), 'and names the broken chain');
  await corrupt(sql.unsafe`update ledger_postings set balance_before = balance_before - 1, balance_after = balance_after - 1
    where account_id = ${wallet} and amount = 300`);
  t.match(await audit(), { code: 0, report: { ok: true, mode: 'INCREMENTAL', merchants: 1 } }, 'repaired: clean, and the checkpoint moves past it');

  // Before the checkpoint: the first posting's amount (and balance_after) changed.
  await corrupt(sql.unsafe`update ledger_postings set amount = 501, balance_after = 501 where account_id = ${wallet} and amount = 500`);
  t.match(await audit(), { code: 0, report: { ok: true, mode: 'INCREMENTAL', merchants: 0 } }, 'proved history is not read again incrementally');
  const full = await audit('--full');
  t.equal(full.code, 1, '--full exits 1');
  t.match(full.report, { ok: false, mode: 'FULL' });
  const checks = new Set(full.report.problems.map((p: any) => p.check));
  t.ok(checks.has('account_balance') && checks.has('transfer_sum') && checks.has('balance_chain'), `--full finds it: ${[...checks].join(', ')}`);
  t.match(full.stderr, /ledger:audit \d+\/\d+ merchants, \d+ problems/, 'progress on stderr');
  t.equal((await ops(stack.env, 'ledger:audit', '--statement-timeout-seconds', '5')).code, 64, 'a statement limit goes with --full only');
});

t.test('the ledger migration posts orders paid before it existed', async (t) => {
  const url = await emptyDatabase(t);
  const all = (await readdir(new URL('../../db/migrations/', import.meta.url))).filter((f) => f.endsWith('.sql')).sort();
  const before = await mkdtemp(`${tmpdir()}/kasir-mig-`);
  t.teardown(() => rm(before, { recursive: true, force: true }));
  for (const file of all.filter((f) => Number(f.slice(0, 3)) < 6)) await cp(new URL(`../../db/migrations/${file}`, import.meta.url), `${before}/${file}`);
  await migrate(url, pathToFileURL(`${before}/`));

  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  const brand = (await client.query('select id from brands where is_default')).rows[0].id;
  const merchants = [];
  for (const type of ['WALLET', 'MANUAL']) {
    merchants.push((await client.query(
      `insert into merchants (brand_id, name, settlement_type, api_key_hash, legacy_client_id, legacy_client_secret_enc)
       values ($1, 'Old', $2, sha256(random()::text::bytea), 'C' || md5(random()::text), '\\x00') returning id`, [brand, type])).rows[0].id);
  }
  const orders: Array<[string, number, string]> = [
    [merchants[0], 150_000, 'PAID'], [merchants[0], 72, 'PAID'], [merchants[0], 99_000, 'PENDING'],
    [merchants[0], 10_000, 'REFUNDED'], [merchants[1], 200_000, 'PAID'], [merchants[1], 5_000, 'EXPIRED'],
  ];
  for (const [i, [merchant, amount, status]] of orders.entries()) {
    await client.query(
      `insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, status, qr_token, paid_at)
       values (gen_random_uuid(), $1, 'ORD-1-' || $2::text, 'M' || $2::text, 'V1', $3, $4::text, md5($2::text), case when $4::text in ('PAID','REFUNDED') then now() - make_interval(mins => $2::int) end)`,
      [merchant, i, amount, status]);
  }
  await migrate(url);
  const wallet = (await client.query(`select balance, version from ledger_accounts where merchant_id = $1 and kind = 'WALLET'`, [merchants[0]])).rows[0];
  t.same(wallet, { balance: String(150_000 - 1_050 + 72 - 1 + 10_000 - 70), version: '3' }, 'WALLET merchant credited for every paid order');
  const accrual = (await client.query(`select balance from ledger_accounts where merchant_id = $1 and kind = 'SETTLEMENT_ACCRUAL'`, [merchants[1]])).rows[0];
  t.equal(accrual.balance, String(200_000 - 1_400), 'MANUAL merchant accrued');
  const { createPool } = await import('../../db/pool.ts');
  const pool = await createPool(url, { size: 1 });
  t.teardown(() => pool.end());
  const report = await auditLedger(pool);
  t.same(report.problems, [], 'the backfilled ledger passes the audit (chains, sums, coverage)');
  t.equal(report.transfers, 4);
  for (const merchant of merchants) {
    const kept = await sumProfits(pool, merchant, '2000-01-01', '2100-12-31');
    t.strictSame(kept, await recountProfits(pool, merchant, '2000-01-01', '2100-12-31'), 'the profits totals were backfilled from the records');
  }
  t.match(await sumProfits(pool, merchants[0], '2000-01-01', '2100-12-31'), { order_count: 3, gross_amount: 160_072 });
});
