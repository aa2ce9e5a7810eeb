// Settlements through the whole stack: orders paid through the API and the simulator (V1 and
// legacy), refunds through the API and the vendor worker, settlements built by the ops CLI and
// by a real scheduler process (killed mid-run), payouts through a real disbursement worker to
// the simulator and back through its callbacks, webhooks to a real receiver, reads over HTTP.
// Every test ends with the ledger audit.
import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { paymentTerms, postOrderPayment } from '../../db/ledger.ts';
import { setSettlementAccount, type ProvisionedMerchant } from '../../db/merchants.ts';
import { findBankByShortCode } from '../../db/master-data.ts';
import { sql, type Pool } from '../../db/pool.ts';
import { sendJob } from '../../db/queue.ts';
import { listSettlementDeliveries } from '../../db/webhooks.ts';
import { randomSuffix } from '../../db/ref-codes.ts';
import { periodOf, runSettlements, settlementDateAt } from '../../db/settlements.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { ledgerAudit, paidOrder } from '../helpers/money.ts';
import { simulatorSignature } from '../helpers/order-lifecycle.ts';
import { ops, startWorkerGroup } from '../helpers/processes.ts';
import { clearFaults, setFaults, simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

const FIELDS = [
  'id', 'ref_code', 'settlement_date', 'period_start', 'period_end', 'gross_amount', 'mdr_total', 'platform_fee',
  'aggregator_fee', 'refund_total', 'disbursement_fee', 'net_payout', 'order_count', 'bank_id', 'bank_short_code', 'account_number',
  'account_name', 'status', 'created_at', 'updated_at',
];

type M = ProvisionedMerchant;

const DAY_MS = 86_400_000;
/** The WIB calendar day of an instant. */
const wibDate = (at: Date) => new Date(at.getTime() + 7 * 3600_000).toISOString().slice(0, 10);
const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);
const wibNoon = (date: string) => new Date(`${date}T12:00:00+07:00`);

async function manualMerchant(stack: Stack, options: { notifyUrl?: string; account?: string | null } = {}) {
  const merchant = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL', notifyUrl: options.notifyUrl ?? null });
  if (options.account !== null) await setAccount(stack, merchant, options.account ?? '1234567890');
  return merchant;
}

async function setAccount(stack: Stack, merchant: M, accountNumber: string) {
  const res = await ops(stack.env, 'merchant:set-settlement-account', '--merchant', merchant.merchant_id, '--bank', 'BCA',
    '--account-number', accountNumber, '--account-name', 'PT Toko Maju', '--json');
  if (res.code !== 0) throw new Error(`set-settlement-account: ${res.stdout} ${res.stderr}`);
}

/** `ops settlements:run --date D [--merchant ID] --json`, parsed. */
async function runDay(stack: Stack, date: string, merchant?: M) {
  const res = await ops(stack.env, 'settlements:run', '--date', date, ...(merchant ? ['--merchant', merchant.merchant_id] : []), '--json');
  const report = JSON.parse(res.stdout || '{}');
  if (res.code !== 0) throw new Error(`settlements:run ${date}: ${res.code} ${res.stdout} ${res.stderr}`);
  return report;
}

function getSettlement(stack: Stack, merchant: M, id: string) {
  return call(stack.api.url, { path: `/v1/settlements/${id}`, headers: { 'x-api-key': merchant.api_key } });
}

function listSettlements(stack: Stack, merchant: M, query = '') {
  return call(stack.api.url, { path: `/v1/settlements${query}`, headers: { 'x-api-key': merchant.api_key } });
}

function settlementReaches(stack: Stack, merchant: M, id: string, status: string, deadlineMs = 15_000) {
  return eventually(async () => {
    const res = await getSettlement(stack, merchant, id);
    return res.json?.data?.status === status ? res.json.data : undefined;
  }, `settlement ${id} to become ${status}`, deadlineMs);
}

async function orderOf(stack: Stack, merchant: M, ref: string) {
  return (await call(stack.api.url, { path: `/v1/orders/${ref}`, headers: { 'x-api-key': merchant.api_key } })).json.data;
}

/** A legacy order (POST /api/order/create, SHA-512 signed) paid at the simulator. */
async function legacyPaidOrder(stack: Stack, merchant: M, amount: number): Promise<{ ref_code: string }> {
  const orderId = `LGC-${randomSuffix(8)}`;
  const signature = createHash('sha512').update(`${merchant.legacy_client_id}|${orderId}|${amount}|${merchant.legacy_client_secret}`).digest('hex');
  const res = await call(stack.api.url, {
    path: '/api/order/create',
    body: { clientId: merchant.legacy_client_id, orderId, totalAmount: amount, paymentType: 'QRIS', signature, customerName: 'Budi Santoso' },
  });
  if (res.status !== 200) throw new Error(`legacy create: ${res.status} ${res.text}`);
  const ref: string = res.json.data.refCode;
  const paid = await simulatePay(stack.sim.url, { reference: ref });
  if (paid.status !== 200) throw new Error(`simulate pay: ${paid.status}`);
  await eventually(async () => ((await orderOf(stack, merchant, ref))?.status === 'PAID' ? true : undefined), `legacy ${ref} PAID`);
  return { ref_code: ref };
}

function refund(stack: Stack, merchant: M, ref: string, body: Record<string, unknown> = {}) {
  return call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: { 'x-api-key': merchant.api_key }, body });
}

function refundReaches(stack: Stack, id: string, status: string) {
  return eventually(async () => {
    const row = await stack.api.ctx.pool.maybeOneFirst(sql.unsafe`select status from refunds where id = ${id}`);
    return row === status ? true : undefined;
  }, `refund ${id} to become ${status}`, 15_000);
}

/** Moves an order's payment time (the callback came late, or on another day). */
async function setPaidAt(stack: Stack, ref: string, paidAt: Date) {
  await stack.api.ctx.pool.query(sql.unsafe`update orders set paid_at = ${paidAt.toISOString()} where ref_code = ${ref}`);
}

async function balances(pool: Pool, merchantId: string) {
  const rows = await pool.any(sql.type(z.object({ kind: z.string(), balance: z.number() }))`
    select kind, balance from ledger_accounts where merchant_id = ${merchantId}`);
  return Object.fromEntries(rows.map((r) => [r.kind, r.balance])) as Record<string, number>;
}

/** A PAID order with its ledger payment, written directly (for volume: hundreds of merchants). */
async function seedPaidOrder(pool: Pool, merchantId: string, amount: number, paidAt: Date) {
  const id = randomUUID();
  const refCode = `ORD-${Math.floor(Date.now() / 1000)}-${randomSuffix()}`;
  await pool.transaction(async (tx) => {
    const terms = await paymentTerms(tx, { merchant_id: merchantId, amount });
    await tx.query(sql.unsafe`
      insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, mdr_amount, status, qr_token, paid_at, manual_settlement)
      select ${id}, ${merchantId}, ${refCode}, ${`SEED-${randomSuffix()}`}, 'V1', ${amount}, ${terms.mdr}, 'PAID', ${randomSuffix(20)}, ${paidAt.toISOString()},
             m.settlement_type = 'MANUAL'
      from merchants m where m.id = ${merchantId}`);
    await postOrderPayment(tx, { id, merchant_id: merchantId, ref_code: refCode, amount }, terms);
  });
  return { id, ref_code: refCode };
}

/** A payout's final word from the simulator vendor `sim`, signed with its secret, to Kasir's callback route. */
function simPayoutWord(stack: Stack, reference: string, status: 'SUCCESS' | 'FAILED') {
  const raw = JSON.stringify({ event_id: `evt_${randomUUID()}`, type: 'disbursement.updated', reference, id: `dsb_${randomUUID()}`, status, failure_reason: status === 'FAILED' ? 'ACCOUNT_CLOSED' : null });
  return call(stack.api.url, { path: '/callbacks/sim', headers: { 'content-type': 'application/json', ...simulatorSignature(stack.sim.secret, raw) }, body: raw });
}

const settlementHooks = <H extends { json: any }>(received: H[]) => received.filter((h) => String(h.json?.event).startsWith('settlement.'));

t.test('periods: the WIB day ending at the cut-off, and the day a run builds', async (t) => {
  t.same(periodOf('2026-11-21', 0), { periodStart: new Date('2026-11-20T17:00:00Z'), periodEnd: new Date('2026-11-21T17:00:00Z') }, 'midnight to midnight WIB');
  t.same(periodOf('2026-11-21', 18), { periodStart: new Date('2026-11-20T11:00:00Z'), periodEnd: new Date('2026-11-21T11:00:00Z') }, '18:00 to 18:00 WIB, closing on the day');
  t.equal(settlementDateAt(new Date('2026-11-21T17:00:30Z'), 0), '2026-11-21', 'just after midnight WIB: the day that ended');
  t.equal(settlementDateAt(new Date('2026-11-21T16:59:59Z'), 0), '2026-11-20', 'just before midnight WIB: the day before');
  t.equal(settlementDateAt(new Date('2026-11-21T11:05:00Z'), 18), '2026-11-21', 'just after 18:00 WIB with cut-off 18');
  t.equal(settlementDateAt(new Date('2026-11-21T10:55:00Z'), 18), '2026-11-20');
});

t.test('the formula over V1 and legacy orders with partial and full refunds; paid out to PAID with webhooks', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'disbursement', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await manualMerchant(stack, { notifyUrl: receiver.url });

  const a = await paidOrder(stack, merchant, 100_000); // MDR 700
  const b = await paidOrder(stack, merchant, 250_000); // MDR 1,750
  const c = await legacyPaidOrder(stack, merchant, 50_000); // MDR 350
  const d = await legacyPaidOrder(stack, merchant, 33_333); // MDR 233.331 → 233
  const gross = 433_333;
  const mdr = 3_033;
  t.equal((await balances(stack.api.ctx.pool, merchant.merchant_id)).SETTLEMENT_ACCRUAL, gross - mdr, 'accrued amount − MDR');

  const partial = await refund(stack, merchant, b.ref_code, { amount: 40_000, reason: 'one item returned' });
  t.equal(partial.status, 201, partial.text);
  const full = await refund(stack, merchant, c.ref_code);
  t.equal(full.status, 201, full.text);
  t.equal(full.json.data.amount, 50_000, 'a full refund of the legacy order');
  await refundReaches(stack, partial.json.data.id, 'SUCCEEDED');
  await refundReaches(stack, full.json.data.id, 'SUCCEEDED');
  t.equal((await orderOf(stack, merchant, c.ref_code)).status, 'REFUNDED');

  // A run builds a day that has ended: the four payments move to yesterday noon (WIB).
  const date = addDays(wibDate(new Date()), -1);
  for (const order of [a, b, c, d]) await setPaidAt(stack, order.ref_code, wibNoon(date));
  const report = await runDay(stack, date);
  t.equal(report.created, 1, 'one settlement built');
  const built = report.results.find((r: any) => r.merchant_id === merchant.merchant_id);
  t.equal(built.status, 'created');

  const res = await getSettlement(stack, merchant, built.settlement.id);
  t.equal(res.status, 200);
  const s = res.json.data;
  t.same(Object.keys(s).sort(), [...FIELDS].sort(), 'exactly the spec 2.5 fields');
  const bca = await findBankByShortCode(stack.api.ctx.pool, 'BCA');
  t.match(s, {
    ref_code: new RegExp(`^STL-${date.replaceAll('-', '')}-\\d+$`),
    settlement_date: date,
    period_start: periodOf(date, 0).periodStart.toISOString(),
    period_end: periodOf(date, 0).periodEnd.toISOString(),
    gross_amount: gross,
    mdr_total: mdr,
    platform_fee: 0,
    aggregator_fee: 0,
    refund_total: 90_000,
    disbursement_fee: 2_500,
    net_payout: gross - mdr - 90_000 - 2_500,
    order_count: 4,
    bank_id: bca!.id,
    bank_short_code: 'BCA',
    account_number: '1234567890',
    account_name: 'PT Toko Maju',
  });
  t.equal(s.net_payout, s.gross_amount - s.mdr_total - s.refund_total - s.disbursement_fee, 'net = gross − mdr − refunds − fee');
  for (const order of [a, b, c, d]) t.equal((await orderOf(stack, merchant, order.ref_code)).is_settled, true, `${order.ref_code} is settled`);

  const paid = await settlementReaches(stack, merchant, s.id, 'PAID');
  t.ok(Date.parse(paid.updated_at) >= Date.parse(paid.created_at));
  const money = await balances(stack.api.ctx.pool, merchant.merchant_id);
  t.equal(money.SETTLEMENT_ACCRUAL, 0, 'the accrual was emptied into the payout');
  t.equal(money.SETTLEMENTS_IN_FLIGHT, 0, 'nothing left in flight once PAID');
  t.equal(money.FEE_REVENUE, mdr + 2_500, 'MDR and the transfer fee are revenue');

  const hooks = settlementHooks(await eventually(async () => {
    const got = settlementHooks(receiver.received);
    return got.length >= 3 ? receiver.received : undefined;
  }, 'three settlement webhooks'));
  t.same((await listSettlementDeliveries(stack.api.ctx.pool, s.id)).map((d) => d.event), ['settlement.pending', 'settlement.processing', 'settlement.paid']);
  t.same(hooks.map((h) => h.json.event).sort(), ['settlement.paid', 'settlement.pending', 'settlement.processing'], 'each delivered');
  const paidHook = hooks.find((h) => h.json.event === 'settlement.paid')!;
  t.same(Object.keys(paidHook.json).sort(), [...FIELDS, 'event', 'event_created_at', 'event_id'].sort(), 'webhook: the V1 object plus the event, its id and time');
  t.equal(paidHook.json.event_id, paidHook.headers['webhook-id'], 'event_id is the delivery id (webhook-id)');
  t.ok(Math.abs(Date.parse(paidHook.json.event_created_at) - Date.now()) < 60_000 && paidHook.json.event_created_at.endsWith('Z'), 'event_created_at: ISO 8601 UTC, now');
  t.match(paidHook.json, { id: s.id, status: 'PAID', net_payout: s.net_payout });

  const rerun = await runDay(stack, date);
  t.equal(rerun.created, 0, 'a rerun of a settled day builds nothing');
  await ledgerAudit(t, stack.env);
});

t.test('reruns create nothing twice; a late payment lands in the next day; a refund failing after it was counted is given back', async (t) => {
  const stack = await startStack(t, { groups: ['disbursement', 'webhook'] });
  let vendor = await startWorkerGroup(t, 'vendor', stack.env);
  const merchant = await manualMerchant(stack);
  // Two days that have both ended (a run refuses a day still running): "yesterday" is the day
  // before "today", which is itself yesterday (WIB).
  const today = addDays(wibDate(new Date()), -1);
  const yesterday = addDays(today, -1);

  const a = await paidOrder(stack, merchant, 100_000);
  const late = await paidOrder(stack, merchant, 60_000);
  const c = await paidOrder(stack, merchant, 20_000);
  await setPaidAt(stack, a.ref_code, wibNoon(yesterday));
  await setPaidAt(stack, c.ref_code, wibNoon(today));
  // Refunds now stay PENDING: no vendor worker sends them.
  await vendor.stop();
  const pending = await refund(stack, merchant, a.ref_code, { amount: 10_000 });
  t.equal(pending.status, 201, pending.text);

  const first = await runDay(stack, yesterday);
  t.equal(first.created, 1);
  const s1 = first.results[0].settlement;
  t.match(s1, { order_count: 1, gross_amount: 100_000, mdr_total: 700, refund_total: 10_000, net_payout: 100_000 - 700 - 10_000 - 2_500 });
  const again = await runDay(stack, yesterday, merchant);
  t.match(again, { created: 0, existing: 1 }, 'the rerun finds the settlement');
  t.equal(again.results[0].settlement.id, s1.id);

  // The callback of `late` was paid yesterday but only arrived after yesterday's run.
  await setPaidAt(stack, late.ref_code, wibNoon(yesterday));
  const third = await runDay(stack, yesterday);
  t.match(third, { created: 0 }, 'still nothing new for yesterday');
  t.equal((await orderOf(stack, merchant, late.ref_code)).is_settled, false, 'the late payment waits for the next settlement');
  const count = await stack.api.ctx.pool.oneFirst(sql.unsafe`
    select count(*)::int from settlements where merchant_id = ${merchant.merchant_id} and settlement_date = ${yesterday}`);
  t.equal(count, 1, 'one settlement for the day');

  // The counted refund fails at the vendor: its amount goes back to the accrual...
  await setFaults(stack.sim.url, { op: 'refund', mode: 'reject', count: 1 });
  vendor = await startWorkerGroup(t, 'vendor', stack.env);
  await refundReaches(stack, pending.json.data.id, 'FAILED');

  // ...and today's settlement gives it back, with the late payment and today's order.
  const next = await runDay(stack, today);
  const s2 = next.results[0].settlement;
  t.match(s2, { order_count: 2, gross_amount: 80_000, mdr_total: 420 + 140, refund_total: -10_000, net_payout: 80_000 - 560 + 10_000 - 2_500 });
  const refundRow = await stack.api.ctx.pool.one(sql.unsafe`
    select settlement_id, reversal_settlement_id from refunds where id = ${pending.json.data.id}`);
  t.same(refundRow, { settlement_id: s1.id, reversal_settlement_id: s2.id }, 'counted by the first, given back by the second');
  for (const order of [late, c]) t.equal((await orderOf(stack, merchant, order.ref_code)).is_settled, true);

  await settlementReaches(stack, merchant, s1.id, 'PAID');
  await settlementReaches(stack, merchant, s2.id, 'PAID');
  t.equal((await balances(stack.api.ctx.pool, merchant.merchant_id)).SETTLEMENT_ACCRUAL, 0, 'everything owed was paid out');
  await ledgerAudit(t, stack.env);
});

t.test('FAILED payouts: retried as a new attempt, or cancelled and the day rebuilt; PROCESSING cannot be cancelled', async (t) => {
  const stack = await startStack(t, { groups: ['vendor', 'disbursement', 'webhook'] });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const date = addDays(wibDate(new Date()), -1);
  const paidYesterday = async (m: M, amount: number) => {
    const order = await paidOrder(stack, m, amount);
    await setPaidAt(stack, order.ref_code, wibNoon(date));
    return order;
  };

  // A transfer the vendor refuses outright: FAILED, then an operator's retry pays it.
  const x = await manualMerchant(stack);
  await paidYesterday(x, 100_000);
  await setFaults(stack.sim.url, { op: 'disburse', mode: 'reject', count: 1 });
  const sx = (await runDay(stack, date, x)).results[0].settlement;
  const failed = await settlementReaches(stack, x, sx.id, 'FAILED');
  t.equal(failed.net_payout, 100_000 - 700 - 2_500);
  t.equal((await balances(stack.api.ctx.pool, x.merchant_id)).SETTLEMENTS_IN_FLIGHT, 100_000 - 700, 'a FAILED payout stays in flight');
  await clearFaults(stack.sim.url);
  const retried = await ops(stack.env, 'settlements:retry', '--id', sx.id, '--json');
  t.equal(retried.code, 0, retried.stderr);
  t.match(JSON.parse(retried.stdout), { status: 'PENDING' });
  await settlementReaches(stack, x, sx.id, 'PAID');
  const attempt = await stack.api.ctx.pool.oneFirst(sql.unsafe`select payout_attempt from settlements where id = ${sx.id}`);
  t.equal(attempt, 2, 'the retry went out under a new vendor reference');
  // The vendor then says it paid the first attempt after all: the money may have gone out twice.
  // Nothing moves; it is recorded as a contradiction for an operator, logged and counted.
  const settled = await balances(stack.api.ctx.pool, x.merchant_id);
  const firstPaid = await simPayoutWord(stack, sx.ref_code, 'SUCCESS');
  t.same([firstPaid.status, firstPaid.json?.data?.result], [200, 'contradicted'], 'a payment of the attempt Kasir retried');
  const conflict = await stack.api.ctx.pool.maybeOne(sql.unsafe`select kind, vendor_code, record_type, record_vendor, kasir_status, vendor_status, detail from vendor_conflicts where reference = ${sx.ref_code}`);
  t.match(conflict, { kind: 'CONTRADICTION', vendor_code: 'sim', record_type: 'SETTLEMENT', record_vendor: 'sim', kasir_status: 'FAILED', vendor_status: 'SUCCESS', detail: { attempt: 1, current_attempt: 2, current_reference: `${sx.ref_code}-2`, current_status: 'PAID' } });
  const listed = JSON.parse((await ops(stack.env, 'vendor:conflicts', '--kind', 'CONTRADICTION', '--json')).stdout).conflicts as Array<{ reference: string }>;
  t.ok(listed.some((c) => c.reference === sx.ref_code), 'listed by vendor:conflicts');
  const firstFailed = await simPayoutWord(stack, sx.ref_code, 'FAILED');
  t.equal(firstFailed.json?.data?.result, 'already_final', 'its failure agrees with Kasir');
  t.equal(await stack.api.ctx.pool.oneFirst(sql.unsafe`select count(*)::int from vendor_conflicts where reference = ${sx.ref_code}`), 1, 'recorded once');
  t.same(await balances(stack.api.ctx.pool, x.merchant_id), settled, 'nothing moved');
  const never = await simPayoutWord(stack, `${sx.ref_code}-3`, 'SUCCESS');
  t.equal(never.json?.data?.result, 'unknown', 'an attempt never sent is unknown');
  const again = await ops(stack.env, 'settlements:retry', '--id', sx.id);
  t.equal(again.code, 1, 'a PAID settlement cannot be retried');
  const unknownId = '00000000-0000-4000-8000-000000000000';
  const many = await ops(stack.env, 'settlements:retry', '--id', sx.id, '--id', unknownId, '--json');
  t.equal(many.code, 1, 'many ids in one call: exit 1 when any is skipped');
  const manyOut = JSON.parse(many.stdout) as { retried: unknown[]; skipped: { id: string; reason: string }[] };
  t.same(manyOut.retried, [], 'nothing retried');
  t.same(manyOut.skipped.map((s) => s.id), [sx.id, unknownId], 'each id skipped, in the order given');
  t.match(manyOut.skipped[0].reason, /is PAID: only FAILED settlements can be retried/, 'with the refusal as its reason');
  t.equal(manyOut.skipped[1].reason, `no settlement ${unknownId}`);
  const cancelPaid = await ops(stack.env, 'settlements:cancel', '--id', sx.id);
  t.equal(cancelPaid.code, 1, 'nor cancelled');
  t.match(cancelPaid.stderr, /only PENDING or FAILED/);

  // A closed account (the simulator fails numbers ending 0000): cancel, fix the account, rebuild.
  const y = await manualMerchant(stack, { notifyUrl: receiver.url, account: '1234560000' });
  const o1 = await paidYesterday(y, 70_000);
  const o2 = await paidYesterday(y, 30_000);
  const sy = (await runDay(stack, date, y)).results[0].settlement;
  await settlementReaches(stack, y, sy.id, 'FAILED');
  const cancelled = await ops(stack.env, 'settlements:cancel', '--id', sy.id, '--reason', 'account closed', '--json');
  t.equal(cancelled.code, 0, cancelled.stderr);
  t.match(JSON.parse(cancelled.stdout), { status: 'CANCELLED', released: { orders: 2 } });
  for (const order of [o1, o2]) t.equal((await orderOf(stack, y, order.ref_code)).is_settled, false, 'cancelling frees the orders');
  t.match(await balances(stack.api.ctx.pool, y.merchant_id), { SETTLEMENT_ACCRUAL: 100_000 - 700, SETTLEMENTS_IN_FLIGHT: 0 }, 'the money is back in the accrual');
  await setAccount(stack, y, '9876543210');
  const rebuilt = (await runDay(stack, date, y)).results[0];
  t.equal(rebuilt.status, 'created', 'the day is built again');
  t.not(rebuilt.settlement.id, sy.id);
  t.match(rebuilt.settlement, { order_count: 2, gross_amount: 100_000, account_number: '9876543210' });
  await settlementReaches(stack, y, rebuilt.settlement.id, 'PAID');
  const hooks = settlementHooks(await eventually(async () =>
    settlementHooks(receiver.received).length >= 7 ? receiver.received : undefined, 'seven settlement webhooks'));
  // Deliveries run concurrently: the outbox holds the order, the receiver the arrivals.
  const outbox = async (id: string) => (await listSettlementDeliveries(stack.api.ctx.pool, id)).map((d) => d.event);
  const received = (id: string) => hooks.filter((h) => h.json.id === id).map((h) => h.json.event).sort();
  t.same(await outbox(sy.id), ['settlement.pending', 'settlement.processing', 'settlement.failed', 'settlement.cancelled']);
  t.same(received(sy.id), [...(await outbox(sy.id))].sort(), 'each delivered');
  t.same(await outbox(rebuilt.settlement.id), ['settlement.pending', 'settlement.processing', 'settlement.paid']);
  t.same(received(rebuilt.settlement.id), [...(await outbox(rebuilt.settlement.id))].sort(), 'each delivered');

  // A transfer the vendor never finishes (account ending 7777) stays PROCESSING: no cancel.
  const z = await manualMerchant(stack, { account: '1234567777' });
  await paidYesterday(z, 50_000);
  const sz = (await runDay(stack, date, z)).results[0].settlement;
  await settlementReaches(stack, z, sz.id, 'PROCESSING');
  const refused = await ops(stack.env, 'settlements:cancel', '--id', sz.id);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /is PROCESSING/);
  await ledgerAudit(t, stack.env);
});

t.test('a scheduler killed mid-run: the rerun and the retried job leave exactly one settlement per merchant', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const pool = stack.api.ctx.pool;
  const yesterday = addDays(wibDate(new Date()), -1);
  const MERCHANTS = 300;
  const bca = (await findBankByShortCode(pool, 'BCA'))!;
  const ids: string[] = [];
  for (let i = 0; i < MERCHANTS; i++) {
    const m = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
    await setSettlementAccount(pool, m.merchant_id, { bankId: bca.id, accountNumber: '1234567890', accountName: 'PT Toko' });
    await seedPaidOrder(pool, m.merchant_id, 100_000 + i, wibNoon(yesterday));
    ids.push(m.merchant_id);
  }
  const built = () => pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from settlements where settlement_date = ${yesterday}`);

  const scheduler = await startWorkerGroup(t, 'scheduler', stack.env);
  const schedule = await stack.api.ctx.boss.getSchedules('settlement-run');
  t.match(schedule, [{ cron: '0 0 * * *', timezone: 'Asia/Jakarta' }], 'the daily run is scheduled at midnight WIB');
  const jobId = await sendJob(stack.api.ctx.boss, 'settlement-run', { settlement_date: yesterday });
  await eventually(async () => ((await built()) >= 5 ? true : undefined), 'the run to start', 20_000);
  await scheduler.stop('SIGKILL');
  const before = await built();
  t.ok(before < MERCHANTS, `killed mid-run (${before} of ${MERCHANTS} built)`);

  await startWorkerGroup(t, 'scheduler', stack.env);
  const rerun = await runDay(stack, yesterday);
  t.equal(rerun.created, MERCHANTS - before, 'the rerun builds the merchants the run did not reach');
  const perMerchant = await pool.any(sql.type(z.object({ merchant_id: z.string(), n: z.number() }))`
    select merchant_id, count(*)::int as n from settlements where settlement_date = ${yesterday} group by merchant_id`);
  t.equal(perMerchant.length, MERCHANTS, 'every merchant has a settlement');
  t.ok(perMerchant.every((r) => r.n === 1), 'exactly one each');

  // pg-boss notices the dead worker (heartbeat) and runs the job again: it finds every settlement.
  await eventually(async () => {
    const [job] = await stack.api.ctx.boss.findJobs('settlement-run', { id: jobId! });
    return job?.state === 'completed' ? job : undefined;
  }, 'the killed run to be retried to completion', 60_000);
  t.equal(await built(), MERCHANTS, 'the retried run created nothing twice');
  const unsettled = await pool.oneFirst(sql.unsafe`
    select count(*)::int from orders where merchant_id = any(${sql.array(ids, 'uuid')}) and not is_settled`);
  t.equal(unsettled, 0, 'every order is settled once');

  // The job the schedule sends carries no date: it builds the day that had just closed when it was sent.
  const late = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  await setSettlementAccount(pool, late.merchant_id, { bankId: bca.id, accountNumber: '1234567890', accountName: 'PT Toko' });
  await seedPaidOrder(pool, late.merchant_id, 80_000, wibNoon(yesterday));
  await sendJob(stack.api.ctx.boss, 'settlement-run', {});
  const scheduled = await eventually(async () => (await pool.maybeOne(sql.type(z.object({ settlement_date: z.string(), order_count: z.number() }))`
    select settlement_date, order_count from settlements where merchant_id = ${late.merchant_id}`)) ?? undefined, 'the scheduled run', 20_000);
  t.same(scheduled, { settlement_date: yesterday, order_count: 1 }, 'a dateless run builds yesterday (WIB)');

  // A day still running (today, or any later day) is refused by the command and by a job sent
  // for it: building it would settle part of the day.
  const today = wibDate(new Date());
  const early = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  await setSettlementAccount(pool, early.merchant_id, { bankId: bca.id, accountNumber: '1234567890', accountName: 'PT Toko' });
  await seedPaidOrder(pool, early.merchant_id, 40_000, new Date());
  for (const day of [today, addDays(today, 1), addDays(today, 400)]) {
    const res = await ops(stack.env, 'settlements:run', '--date', day, '--merchant', early.merchant_id);
    t.equal(res.code, 1, `settlements:run ${day} is refused`);
    t.match(res.stderr, new RegExp(`settlement day ${day} has not ended`));
  }
  const refusedJob = await sendJob(stack.api.ctx.boss, 'settlement-run', { settlement_date: today, merchant_id: early.merchant_id });
  const finished = await eventually(async () => {
    const [job] = await stack.api.ctx.boss.findJobs('settlement-run', { id: refusedJob! });
    return job?.state === 'completed' ? job : undefined;
  }, 'the job for today to finish', 20_000);
  t.match(finished.output, { refused: 'day_not_ended' }, 'the job refuses today without retrying');
  const earlyCount = await pool.oneFirst(sql.unsafe`select count(*)::int from settlements where merchant_id = ${early.merchant_id}`);
  t.equal(earlyCount, 0, 'nothing built for a day still running');
  await ledgerAudit(t, stack.env);
});

t.test('reads: pagination, INVALID_ID, another merchant 404; skipped merchants; WALLET merchants have none', async (t) => {
  const stack = await startStack(t, { groups: [] });
  const pool = stack.api.ctx.pool;
  const merchant = await manualMerchant(stack);
  const other = await manualMerchant(stack);
  const today = wibDate(new Date());
  const dates = Array.from({ length: 12 }, (_, i) => addDays(today, i - 12));
  for (const date of dates) {
    await seedPaidOrder(pool, merchant.merchant_id, 10_000, wibNoon(date));
    await runSettlements(pool, stack.api.ctx.boss, { settlementDate: date, cutoffHour: 0, merchantId: merchant.merchant_id });
  }
  await seedPaidOrder(pool, other.merchant_id, 10_000, wibNoon(dates[0]));
  const otherRun = await runDay(stack, dates[0], other);
  const otherId = otherRun.results[0].settlement.id;

  const page1 = await listSettlements(stack, merchant);
  t.equal(page1.status, 200);
  t.same(page1.json.meta, { page: 1, limit: 10, total: 12, total_pages: 2 }, 'default limit 10');
  t.same(page1.json.data.map((s: any) => s.settlement_date), [...dates].reverse().slice(0, 10), 'newest first');
  t.same(Object.keys(page1.json.data[0]).sort(), [...FIELDS].sort());
  const page2 = await listSettlements(stack, merchant, '?page=2&limit=10');
  t.equal(page2.json.data.length, 2);
  const big = await listSettlements(stack, merchant, '?limit=100');
  t.equal(big.json.data.length, 12, 'limit up to 100');
  for (const query of ['?limit=101', '?limit=0', '?page=0', '?page=x']) {
    const bad = await listSettlements(stack, merchant, query);
    t.equal(bad.status, 400, query);
    t.equal(bad.json.error.code, 'INVALID_BODY', query);
  }
  const one = await getSettlement(stack, merchant, page1.json.data[0].id);
  t.same(one.json.data, page1.json.data[0], 'one settlement reads as listed');
  t.match(one.json.data, { settlement_date: dates[11], order_count: 1, gross_amount: 10_000, mdr_total: 70, net_payout: 10_000 - 70 - 2_500 });
  t.match(one.json.data.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

  const invalid = await getSettlement(stack, merchant, 'not-a-uuid');
  t.equal(invalid.status, 400);
  t.equal(invalid.json.error.code, 'INVALID_ID');
  const missing = await getSettlement(stack, merchant, randomUUID());
  t.equal(missing.status, 404);
  t.equal(missing.json.error.code, 'NOT_FOUND');
  const foreign = await getSettlement(stack, merchant, otherId);
  t.equal(foreign.status, 404, "another merchant's settlement is not found");
  t.equal(foreign.json.error.code, 'NOT_FOUND');
  const upper = await getSettlement(stack, other, otherId.toUpperCase());
  t.equal(upper.status, 200, 'UUIDs in any case');

  const wallet = await makeMerchant(stack.api.ctx, { settlement: 'WALLET' });
  const none = await listSettlements(stack, wallet);
  t.equal(none.status, 200);
  t.same(none.json, { success: true, data: [], meta: { page: 1, limit: 10, total: 0, total_pages: 0 } });
  const unauthenticated = await call(stack.api.url, { path: '/v1/settlements' });
  t.equal(unauthenticated.status, 401);

  // No account: skipped with a reason. A net payout that would not be positive: nothing built.
  const noAccount = await manualMerchant(stack, { account: null });
  const yesterday = addDays(today, -1);
  await seedPaidOrder(pool, noAccount.merchant_id, 50_000, wibNoon(yesterday));
  const tiny = await manualMerchant(stack);
  const small = await seedPaidOrder(pool, tiny.merchant_id, 2_000, wibNoon(yesterday));
  const run = await runDay(stack, yesterday);
  const result = (m: M) => run.results.find((r: any) => r.merchant_id === m.merchant_id);
  t.match(result(noAccount), { status: 'skipped', reason: 'no_settlement_account' });
  t.match(result(tiny), { status: 'skipped', reason: 'net_payout_not_positive', detail: { gross_amount: 2_000, mdr_total: 14, disbursement_fee: 2_500 } });
  t.equal((await orderOf(stack, tiny, small.ref_code)).is_settled, false, 'its order waits for a later day');
  await ledgerAudit(t, stack.env);
});
