// Reconciliation of a day with Midtrans: Core read again order by order (it has no list Kasir's
// server key can read) with the refunds each status lists, Iris payouts read one by one and its
// statement of the day; against the simulator's Midtrans and Iris dialects as a process, with the
// API, vendor and disbursement workers and `ops recon:run`. A dropped payment notification (also
// of an order created the day before and paid in the day) and a dropped final Iris notification
// are repaired after Midtrans's own reads; the ledger audit is clean after each.
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { reconWindow, wibDay } from '../../db/recon.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { midtransAdmin, startMidtransStack } from '../helpers/midtrans.ts';
import { ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, setFaults, simulatePay } from '../helpers/simulator.ts';

const stack = await startMidtransStack(t, { groups: ['vendor', 'disbursement'], env: { DISBURSEMENT_RECONCILE_DELAY_SECONDS: '3600' } });
const pool = stack.api.ctx.pool;
const admin = midtransAdmin(stack.sim.url);
const m = merchantApi(stack, 'MRC');
const day = wibDay(new Date());
const merchant = await makeMerchant(stack.api.ctx);
await m.fund(merchant, 5_000_000);
t.beforeEach(() => clearFaults(stack.sim.url));

async function reconRun(): Promise<{ run: any; open: any[] }> {
  const res = await ops(stack.env, 'recon:run', '--vendor', 'midtrans', '--date', day, '--json');
  if (res.code !== 0) throw new Error(`recon:run: ${res.code} ${res.stdout} ${res.stderr}`);
  return JSON.parse(res.stdout);
}
const differencesOf = (reference: string) => pool.any(sql.unsafe`select * from recon_differences where vendor_code = 'midtrans' and day = ${day}::date and reference = ${reference}`);
const disbursementStatus = (id: string) => pool.oneFirst(sql.unsafe`select status from disbursements where id = ${id}`);
/**
 * Midtrans notifies a new charge's `pending` status too, and Kasir re-reads the status to act on
 * it: paid before that re-read, the order would be paid through the notification after all.
 * Waits until Kasir has recorded it (the re-read is done); the payment's own notification is the
 * one the tests drop.
 */
const pendingNoted = (ref: string) =>
  eventually(
    async () => ((await pool.maybeOneFirst(sql.unsafe`select event_id from vendor_callbacks where vendor_code = 'midtrans' and reference = ${ref} and type = 'noted'`)) ? true : undefined),
    `the pending notification of ${ref} answered`,
    30_000,
  );

t.test('a clean day: orders read one by one, refunds from their statuses, payouts from Iris', async (t) => {
  const paid = await m.paid(merchant, 200_000);
  const refund = (await m.refund(merchant, paid, { amount: 30_000 })).json.data;
  await m.refundReaches(refund.id, 'SUCCEEDED');
  const unpaid = (await m.createOrder(merchant, 90_000)).json.data.ref_code;
  const payout = (await m.disburse(merchant, bankPayout(100_000, '1234581111'))).json.data;
  await m.disbursementReaches(merchant, payout.id, 'SUCCESS');
  // Refused by the bank after approval: Iris's statement has its debit and the Refund credit.
  const refused = (await m.disburse(merchant, bankPayout(60_000, '1234580000'))).json.data;
  await m.disbursementReaches(merchant, refused.id, 'FAILED');
  const before = (await admin.stats()).calls['GET /v2/:id/status'] ?? 0;

  const { run, open } = await reconRun();
  t.match(run, { status: 'COMPLETED', source: 'records+statement' });
  t.same(open, [], 'no differences');
  t.match(run.matched, { PAYMENT: { count: 1, amount: 200_000 }, REFUND: { count: 1, amount: 30_000 }, PAYOUT: { count: 1, amount: 100_000 } });
  t.ok((await admin.stats()).calls['GET /v2/:id/status'] - before >= 2, 'each order of the day read again');
  t.same(await differencesOf(unpaid), [], 'an unpaid order Midtrans also holds unpaid is no difference');
  t.ok((await admin.irisStats()).calls['GET /api/v1/statements'] >= 1, "Iris's statement read (its dates in a JSON body, as the dialect requires)");
  t.same(await differencesOf(refused.ref_code), [], 'a payout debited and sent back by the bank (Refund credit) is no difference');
  await ledgerAudit(t, stack.env);
});

t.test('a dropped payment notification: repaired after the status read', async (t) => {
  const ref = (await m.createOrder(merchant, 125_000)).json.data.ref_code;
  await pendingNoted(ref);
  t.equal((await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  const { run } = await reconRun();
  t.match(await differencesOf(ref), [{ kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYMENT', status: 'REPAIRED', repaired_run_id: run.id }]);
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PAID');
  await ledgerAudit(t, stack.env);
});

t.test('an order created the day before and paid in the day, its notification lost: read and repaired by the day’s run', async (t) => {
  const ref = (await m.createOrder(merchant, 95_000)).json.data.ref_code;
  await pendingNoted(ref);
  // Created at 22:00 WIB the day before; its lifetime (an hour from its real creation) reaches into the day.
  const createdAt = new Date(reconWindow(day).dayStart.getTime() - 2 * 3600_000);
  await pool.query(sql.unsafe`update orders set created_at = ${createdAt.toISOString()} where ref_code = ${ref}`);
  t.equal((await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  const { run } = await reconRun();
  t.match(await differencesOf(ref), [{ kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYMENT', status: 'REPAIRED', repaired_run_id: run.id }]);
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PAID');
  await ledgerAudit(t, stack.env);
});

t.test('an Iris payout whose final notification never came: completed after its read', async (t) => {
  await setFaults(stack.sim.url, { op: 'callback', mode: 'drop_callback', count: 1 });
  const p = (await m.disburse(merchant, bankPayout(75_000, '1234582222'))).json.data;
  await eventually(async () => ((await admin.irisStats()).payouts?.some((x) => x.notes === p.ref_code && x.status === 'completed') ? true : undefined), 'Iris completed it');
  t.equal(await disbursementStatus(p.id), 'ON_PROCESS', 'Kasir never heard');
  const { run } = await reconRun();
  t.match(await differencesOf(p.ref_code), [{ kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYOUT', status: 'REPAIRED', repaired_run_id: run.id }]);
  t.equal(await disbursementStatus(p.id), 'SUCCESS');
  await ledgerAudit(t, stack.env);
});
