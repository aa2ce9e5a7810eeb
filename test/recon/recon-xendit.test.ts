// Reconciliation of a day with Xendit, read through its Transactions API (GET /transactions,
// paged), against the simulator's Xendit dialect as a process, with the API, the vendor and
// disbursement workers and `ops recon:run`. The money faults make each kind of difference the way
// Xendit would: a dropped qr.payment callback (repaired through the callback path after Xendit's
// own read of the QR), a payout in flight that Xendit finished (repaired), a payout accepted and
// lost, one paid with another amount, a refund made twice (left for a person). Fees as Xendit
// reports them (xendit_fee + VAT) against the cost Kasir assumes. Every money test ends with the
// ledger audit.
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { reconWindow, wibDay } from '../../db/recon.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, setFaults, simulatePay } from '../helpers/simulator.ts';
import { startVendorStack } from '../helpers/vendor-stack.ts';
import { XENDIT_ACCOUNT, xenditDialectVendor, xenditStats } from '../helpers/xendit.ts';

const stack = await startVendorStack(t, [xenditDialectVendor('xendit')], { env: { DISBURSEMENT_RECONCILE_DELAY_SECONDS: '3600' } });
const xendit = stack.sims[0].url;
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'XRC');
const day = wibDay(new Date());
const merchant = await makeMerchant(stack.api.ctx);
await m.fund(merchant, 5_000_000);
t.beforeEach(() => clearFaults(xendit));

async function reconRun(): Promise<{ run: any; open: any[] }> {
  const res = await ops(stack.env, 'recon:run', '--vendor', 'xendit', '--date', day, '--json');
  if (res.code !== 0) throw new Error(`recon:run: ${res.code} ${res.stdout} ${res.stderr}`);
  return JSON.parse(res.stdout);
}
const differencesOf = (reference: string) => pool.any(sql.unsafe`select * from recon_differences where vendor_code = 'xendit' and day = ${day}::date and reference = ${reference}`);
const disbursementStatus = (id: string) => pool.oneFirst(sql.unsafe`select status from disbursements where id = ${id}`);
const inFlight = (id: string) => eventually(async () => ((await disbursementStatus(id)) === 'ON_PROCESS' ? true : undefined), `${id} ON_PROCESS`);

t.test('a clean day through GET /transactions: matched and summed, fees compared', async (t) => {
  const ref = await m.paid(merchant, 300_000);
  const payout = (await m.disburse(merchant, bankPayout(100_000, '1234571111'))).json.data;
  await m.disbursementReaches(merchant, payout.id, 'SUCCESS');
  const cost = await ops(stack.env, 'recon:set-cost', '--vendor', 'xendit', '--payment-bps', '70', '--payout', '2500');
  t.equal(cost.code, 0, cost.stderr);
  const { run, open } = await reconRun();
  t.match(run, { status: 'COMPLETED', source: 'list' });
  t.same(open, []);
  t.match(run.matched, { PAYMENT: { count: 1, amount: 300_000 }, PAYOUT: { count: 1, amount: 100_000 } });
  // Xendit charges its fee plus 11 % VAT on it; Kasir assumed the fee alone.
  t.match(run.fees.PAYMENT, { lines: 1, vendor_fee: 2100 + 231, assumed_fee: 2100, difference: 231, lines_differing: 1 });
  t.match(run.fees.PAYOUT, { lines: 1, vendor_fee: 2500 + 275, assumed_fee: 2500, difference: 275 });
  t.ok((await xenditStats(xendit)).calls['GET /transactions'] >= 1, 'read through the Transactions API');
  t.same(await differencesOf(ref), []);
  await ledgerAudit(t, stack.env);
});

t.test('paged: more transactions than one page of 50', async (t) => {
  const refs = [];
  for (let i = 0; i < 55; i++) {
    const created = await m.createOrder(merchant, 10_000 + i);
    refs.push(created.json.data.ref_code as string);
  }
  await Promise.all(refs.map((reference) => simulatePay(xendit, { reference })));
  await Promise.all(refs.map((ref) => m.orderReaches(merchant, ref, 'PAID', 20_000)));
  const before = (await xenditStats(xendit)).calls['GET /transactions'] ?? 0;
  // Every payment Kasir holds paid at Xendit in the day, these 55 and whatever ran before.
  const { dayStart, dayEnd } = reconWindow(day);
  const paidInDay = (await pool.oneFirst(sql.unsafe`
    select count(*)::int from orders where vendor_code = 'xendit' and status in ('PAID', 'REFUNDED')
      and paid_at >= ${dayStart.toISOString()} and paid_at < ${dayEnd.toISOString()}`)) as number;
  const { run, open } = await reconRun();
  t.same(open, []);
  t.ok(paidInDay >= refs.length);
  t.equal(run.matched.PAYMENT.count, paidInDay, 'every payment of the day matched');
  t.equal(await pool.oneFirst(sql.unsafe`select count(*)::int from recon_differences where reference = any(${sql.array(refs, 'text')})`), 0, 'none of them differs');
  t.ok((await xenditStats(xendit)).calls['GET /transactions'] - before >= 2, 'more than one page read');
});

t.test('a dropped qr.payment callback: repaired after Xendit\'s read of the QR', async (t) => {
  const created = await m.createOrder(merchant, 175_000);
  const ref: string = created.json.data.ref_code;
  t.equal((await simulatePay(xendit, { reference: ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  const { run } = await reconRun();
  t.match(await differencesOf(ref), [{ kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYMENT', status: 'REPAIRED', repaired_run_id: run.id }]);
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PAID');
  await ledgerAudit(t, stack.env);
});

t.test('a payout Xendit finished whose callback never came: completed', async (t) => {
  await setFaults(xendit, { op: 'callback', mode: 'drop_callback', count: 1 });
  const p = (await m.disburse(merchant, bankPayout(55_000, '1234572222'))).json.data;
  await inFlight(p.id);
  await eventually(async () => {
    const { run } = await reconRun();
    return run.repaired >= 1 ? true : undefined;
  }, 'the payout repaired once Xendit has finished it');
  t.match(await differencesOf(p.ref_code), [{ kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYOUT', status: 'REPAIRED' }]);
  t.equal(await disbursementStatus(p.id), 'SUCCESS');
  await ledgerAudit(t, stack.env);
});

t.test('a payout Xendit lost, one it paid with another amount, a refund it made twice: left for a person', async (t) => {
  await setFaults(xendit, { op: 'disburse', mode: 'lost_payout', count: 1 });
  const lost = (await m.disburse(merchant, bankPayout(65_000, '1234573333'))).json.data;
  await inFlight(lost.id);
  await setFaults(xendit, { op: 'disburse', mode: 'changed_amount', count: 1 });
  const changed = (await m.disburse(merchant, bankPayout(45_000, '1234574444'))).json.data;
  await m.disbursementReaches(merchant, changed.id, 'SUCCESS');
  const ref = await m.paid(merchant, 250_000);
  await setFaults(xendit, { op: 'refund', mode: 'double_refund', count: 1 });
  const refund = (await m.refund(merchant, ref, { amount: 40_000 })).json.data;
  await m.refundReaches(refund.id, 'SUCCEEDED');
  // Both of Xendit's refunds are final (each by its own deadline) before the day is read.
  await eventually(async () => ((await xenditStats(xendit)).refunds.filter((r) => r.refund_amount === 40_000 && r.status === 'SUCCEEDED').length === 2 ? true : undefined), 'both refunds done');

  await reconRun();
  t.match(await differencesOf(lost.ref_code), [{ kind: 'PAID_IN_KASIR_ONLY', status: 'OPEN', kasir_amount: 65_000 }]);
  t.match(await differencesOf(changed.ref_code), [{ kind: 'AMOUNT_DIFFERS', status: 'OPEN', kasir_amount: 45_000, vendor_amount: 46_000 }]);
  t.match(await differencesOf(refund.ref_code), [{ kind: 'PAID_TWICE', subject: 'REFUND', status: 'OPEN', kasir_amount: 40_000, vendor_amount: 80_000 }]);
  t.equal(await disbursementStatus(lost.id), 'ON_PROCESS', 'nothing automatic');
  await ledgerAudit(t, stack.env);
});

// Issue 36 finding 5: Xendit writes a payment refunded in full within 24 h as VOIDED (and lists no
// REFUND for it), and a payout that bounced after success as REVERSED. Both moved money both
// ways; neither is a difference once Kasir's books show the same.
t.test('a payment VOIDED by its full refund reads as paid and refunded; a payout REVERSED and returned matches', async (t) => {
  const ref = await m.paid(merchant, 120_000);
  const refund = (await m.refund(merchant, ref, { amount: 120_000, reason: 'cancelled' })).json.data;
  await m.refundReaches(refund.id, 'SUCCEEDED');
  const bounced = (await m.disburse(merchant, bankPayout(35_000, '1234576666'))).json.data;
  await m.disbursementReaches(merchant, bounced.id, 'FAILED', 25_000);

  // What Xendit's Transactions API shows for them.
  const listed = await fetch(`${xendit}/xendit/transactions?limit=50&reference_id=${encodeURIComponent(ref)}`, {
    headers: { authorization: `Basic ${Buffer.from(`${XENDIT_ACCOUNT.secretKey}:`).toString('base64')}` },
  }).then((r) => r.json() as Promise<{ data: Array<{ type: string; status: string; reference_id: string }> }>);
  t.same(listed.data.map((x) => [x.type, x.status]), [['PAYMENT', 'VOIDED']], 'the payment VOIDED, no REFUND line');

  const { run } = await reconRun();
  t.same(await differencesOf(ref), [], 'the payment is no difference');
  t.same(await differencesOf(refund.ref_code), [], 'nor its refund');
  t.same(await differencesOf(bounced.ref_code), [], 'nor the reversed payout Kasir returned');
  t.ok(run.matched.REFUND.count >= 1, 'the refund matched');
  await ledgerAudit(t, stack.env);
});
