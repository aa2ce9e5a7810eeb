// Reconciliation of a day with the simulator gateway, through real processes: the API, the vendor,
// disbursement and csv worker groups, the simulator as a process, and `ops recon:*` as an
// operator runs it. Each kind of difference is made the way it happens (the simulator's faults: a
// dropped callback, a lost payout, a double refund, a changed amount; an operator's wrong final
// word; a payment Kasir never asked for), found by a run, and repaired only where the rules allow:
// a lost payment callback, a payout still in flight that the vendor reports final; a repair that
// finds the record already final as the vendor reports (its callback came while the run compared)
// leaves no difference. The ledger audit is clean after every repair; a rerun replaces the day's
// open differences and keeps what a person resolved; the run's differences come out as CSV
// through the export machinery; the daily job reconciles every vendor not removed.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sql } from '../../db/pool.ts';
import { wibDay } from '../../db/recon.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { sendJob } from '../../db/queue.ts';
import { setVendorEnabled } from '../../db/vendors.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { simulatorSignature } from '../helpers/order-lifecycle.ts';
import { ops, startWorkerGroup } from '../helpers/processes.ts';
import { faultRules } from '../helpers/reliability.ts';
import { clearFaults, setFaults, simulatePay, simulatorRequest } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

// Payouts stay in flight until their callback comes (no reconcile poll within the test), so a
// dropped callback leaves one ON_PROCESS for reconciliation to find.
const stack = await startStack(t, { groups: ['vendor', 'disbursement', 'csv'], env: { DISBURSEMENT_RECONCILE_DELAY_SECONDS: '3600' } });
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'RECON');
const day = wibDay(new Date());
const merchant = await makeMerchant(stack.api.ctx);
await m.fund(merchant, 5_000_000);

interface Difference {
  id: string;
  kind: string;
  subject: string;
  reference: string | null;
  status: string;
  repair: string | null;
  kasir_amount: number | null;
  vendor_amount: number | null;
  run_id: string;
  repaired_run_id: string | null;
}

async function reconRun(): Promise<{ run: any; open: Difference[] }> {
  const res = await ops(stack.env, 'recon:run', '--vendor', 'sim', '--date', day, '--json');
  if (res.code !== 0) throw new Error(`recon:run: ${res.code} ${res.stdout} ${res.stderr}`);
  return JSON.parse(res.stdout);
}

const differencesOf = (reference: string) =>
  pool.any(sql.unsafe`select * from recon_differences where vendor_code = 'sim' and day = ${day}::date and reference = ${reference}`) as Promise<readonly Difference[]>;

const disbursementStatus = (id: string) => pool.oneFirst(sql.unsafe`select status from disbursements where id = ${id}`);
const inFlight = (id: string) => eventually(async () => ((await disbursementStatus(id)) === 'ON_PROCESS' ? true : undefined), `${id} ON_PROCESS`);
/** A payout the simulator has settled (its native read says so), whatever Kasir heard. */
const settledAtVendor = (reference: string, status: string) =>
  eventually(async () => {
    const res = await simulatorRequest(stack.sim.url, stack.sim.secret, 'GET', `/v1/disbursements/${reference}`);
    return res.body?.status === status ? true : undefined;
  }, `${reference} ${status} at the simulator`);

/**
 * Fault rules are the simulator's, for whatever callback comes next (it cannot aim one at a
 * reference). Before a drop_callback rule meant for the next payout's callback is set, this
 * waits until no payout Kasir sent is still to settle there (and none is waiting to be sent), so
 * no other callback can be the one it takes. Payments' callbacks are made when the payer pays.
 */
async function noCallbackOwed() {
  await eventually(async () => {
    const open = (await pool.any(sql.unsafe`select ref_code, status from disbursements where status in ('PENDING', 'ON_PROCESS')`)) as readonly { ref_code: string; status: string }[];
    for (const d of open) {
      if (d.status === 'PENDING') return undefined;
      const res = await simulatorRequest(stack.sim.url, stack.sim.secret, 'GET', `/v1/disbursements/${d.ref_code}`);
      if (res.body?.status === 'PROCESSING') return undefined;
    }
    return true;
  }, 'no payout left to settle at the simulator', 30_000);
}

t.test('matched lines are summed, and a clean day has nothing to say', async (t) => {
  const ref = await m.paid(merchant, 120_000);
  const payout = (await m.disburse(merchant, bankPayout(80_000, '1234561111'))).json.data;
  await m.disbursementReaches(merchant, payout.id, 'SUCCESS');
  const { run, open } = await reconRun();
  t.equal(run.status, 'COMPLETED');
  t.equal(run.source, 'list');
  t.same(open, [], 'no differences');
  t.ok(run.matched.PAYMENT.count >= 1 && run.matched.PAYMENT.amount >= 120_000, 'the payment is matched and summed');
  t.ok(run.matched.PAYOUT.count >= 1 && run.matched.PAYOUT.amount >= 80_000, 'the payout is matched and summed');
  t.same(await differencesOf(ref), []);
  await ledgerAudit(t, stack.env);
});

t.test('a dropped payment callback: paid at the vendor only, repaired as the callback, recorded with the run', async (t) => {
  const created = await m.createOrder(merchant, 150_000);
  const ref: string = created.json.data.ref_code;
  const paid = await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'drop_callback' });
  t.equal(paid.status, 200);
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PENDING', 'Kasir never heard of the payment');
  const before = await balanceOf(stack, merchant);

  const { run } = await reconRun();
  const [d] = await differencesOf(ref);
  t.match(d, { kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYMENT', status: 'REPAIRED', kasir_amount: 150_000, vendor_amount: 150_000, repaired_run_id: run.id });
  t.match(d.repair, /applied as sim's payment callback/);
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PAID', 'the order is PAID');
  t.equal(await balanceOf(stack, merchant), before + 150_000 - 1050, 'the wallet has the payment less its MDR');
  t.ok(run.repaired >= 1);
  const source = await pool.oneFirst(sql.unsafe`select source from order_events e join orders o on o.id = e.order_id where o.ref_code = ${ref} and e.event = 'order.paid'`);
  t.equal(source, 'reconcile:sim', 'applied through the callback path, bound to the vendor');
  await ledgerAudit(t, stack.env);
});

t.test('a repair racing the callback: the order paid meanwhile, as the vendor reports, leaves no difference', async (t) => {
  const ref: string = (await m.createOrder(merchant, 135_000)).json.data.ref_code;
  const paid = await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'drop_callback' });
  t.equal(paid.status, 200);
  // The run's confirming read of this order is held 3 s (the run waits up to VENDOR_TIMEOUT_MS, longer here).
  await setFaults(stack.sim.url, { op: 'queryQris', mode: 'latency', latency_ms: 3000, count: 1 });
  const running = ops({ ...stack.env, VENDOR_TIMEOUT_MS: '60000' }, 'recon:run', '--vendor', 'sim', '--date', day, '--json');
  // The rule goes once the read has begun: the run has compared the day and found the order unpaid.
  await eventually(async () => ((await faultRules(stack.sim)).length === 0 ? true : undefined), "the run's read of the order", 60_000);
  // Meanwhile the vendor's callback comes (a retry of the one the payer's payment made).
  const raw = JSON.stringify({ event_id: `evt_${randomUUID()}`, type: 'qris.paid', reference: ref, id: paid.body.id, amount: 135_000, paid_at: paid.body.paid_at, rrn: paid.body.rrn });
  const callback = await call(stack.api.url, { path: '/callbacks/sim', headers: { 'content-type': 'application/json', ...simulatorSignature(stack.sim.secret, raw) }, body: raw });
  t.equal(callback.json?.data?.result, 'paid', 'the callback paid it while the run read it');
  const res = await running;
  t.equal(res.code, 0, res.stderr);
  t.same(await differencesOf(ref), [], 'no difference: the order is paid as the vendor reports');
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PAID');
  t.equal(await pool.oneFirst(sql.unsafe`select count(*)::int from order_events e join orders o on o.id = e.order_id where o.ref_code = ${ref} and e.event = 'order.paid'`), 1, 'paid once');
  await ledgerAudit(t, stack.env);
});

t.test('a payout in flight that the vendor reports final is completed; SUCCESS and FAILED alike', async (t) => {
  await noCallbackOwed();
  await setFaults(stack.sim.url, { op: 'callback', mode: 'drop_callback', count: 1 });
  const ok = (await m.disburse(merchant, bankPayout(60_000, '1234562222'))).json.data;
  await inFlight(ok.id);
  await settledAtVendor(ok.ref_code, 'SUCCESS');
  await noCallbackOwed();
  await setFaults(stack.sim.url, { op: 'callback', mode: 'drop_callback', count: 1 });
  const bad = (await m.disburse(merchant, bankPayout(40_000, '1234560000'))).json.data;
  await inFlight(bad.id);
  await settledAtVendor(bad.ref_code, 'FAILED');
  await clearFaults(stack.sim.url);
  const before = await balanceOf(stack, merchant);

  const { run } = await reconRun();
  t.match(await differencesOf(ok.ref_code), [{ kind: 'PAID_AT_VENDOR_ONLY', subject: 'PAYOUT', status: 'REPAIRED', repaired_run_id: run.id }]);
  t.match(await differencesOf(bad.ref_code), [{ kind: 'STATUS_DIFFERS', subject: 'PAYOUT', status: 'REPAIRED', repaired_run_id: run.id }]);
  t.equal(await disbursementStatus(ok.id), 'SUCCESS');
  t.equal(await disbursementStatus(bad.id), 'FAILED');
  t.equal(await balanceOf(stack, merchant), before + bad.total_debit, 'the failed payout returned its debit, once');
  await ledgerAudit(t, stack.env);
});

t.test('a payout the vendor lost: paid in Kasir only, left for a person', async (t) => {
  await setFaults(stack.sim.url, { op: 'disburse', mode: 'lost_payout', count: 1 });
  const lost = (await m.disburse(merchant, bankPayout(70_000, '1234563333'))).json.data;
  await inFlight(lost.id);
  const { open } = await reconRun();
  t.match(await differencesOf(lost.ref_code), [{ kind: 'PAID_IN_KASIR_ONLY', subject: 'PAYOUT', status: 'OPEN', kasir_amount: 70_000, vendor_amount: null }]);
  t.ok(open.some((d) => d.reference === lost.ref_code), 'listed as open');
  t.equal(await disbursementStatus(lost.id), 'ON_PROCESS', 'nothing automatic: the money stays held');
  await ledgerAudit(t, stack.env);
});

t.test('a payout paid with another amount: amount differs, left for a person', async (t) => {
  await setFaults(stack.sim.url, { op: 'disburse', mode: 'changed_amount', count: 1 });
  const changed = (await m.disburse(merchant, bankPayout(90_000, '1234564444'))).json.data;
  await m.disbursementReaches(merchant, changed.id, 'SUCCESS');
  await reconRun();
  t.match(await differencesOf(changed.ref_code), [{ kind: 'AMOUNT_DIFFERS', subject: 'PAYOUT', status: 'OPEN', kasir_amount: 90_000, vendor_amount: 91_000, repair: null }]);
  await ledgerAudit(t, stack.env);
});

t.test('a refund sent twice: paid out twice, left for a person', async (t) => {
  const ref = await m.paid(merchant, 200_000);
  await setFaults(stack.sim.url, { op: 'refund', mode: 'double_refund', count: 1 });
  const refund = (await m.refund(merchant, ref, { amount: 50_000 })).json.data;
  await m.refundReaches(refund.id, 'SUCCEEDED');
  await reconRun();
  t.match(await differencesOf(refund.ref_code), [{ kind: 'PAID_TWICE', subject: 'REFUND', status: 'OPEN', kasir_amount: 50_000, vendor_amount: 100_000 }]);
  t.equal(await pool.oneFirst(sql.unsafe`select status from refunds where id = ${refund.id}`), 'SUCCEEDED', 'nothing automatic');
  await ledgerAudit(t, stack.env);
});

t.test("an operator's wrong final word: final status differs, never overwritten", async (t) => {
  await noCallbackOwed();
  await setFaults(stack.sim.url, { op: 'callback', mode: 'drop_callback', count: 1 });
  const p = (await m.disburse(merchant, bankPayout(30_000, '1234565555'))).json.data;
  await inFlight(p.id);
  await settledAtVendor(p.ref_code, 'SUCCESS');
  const settled = await ops(stack.env, 'payouts:settle', '--ref', p.ref_code, '--outcome', 'FAILED', '--reason', 'believed lost');
  t.equal(settled.code, 0, settled.stderr);
  await reconRun();
  t.match(await differencesOf(p.ref_code), [{ kind: 'STATUS_DIFFERS', subject: 'PAYOUT', status: 'OPEN', kasir_amount: 30_000, vendor_amount: 30_000 }]);
  t.equal(await disbursementStatus(p.id), 'FAILED', "Kasir's final word stays until a person acts");
  await ledgerAudit(t, stack.env);
});

t.test('a payment Kasir never asked for: a vendor line with no Kasir record', async (t) => {
  const foreign = `FOREIGN-${randomUUID().slice(0, 8)}`;
  const qr = await simulatorRequest(stack.sim.url, stack.sim.secret, 'POST', '/v1/qris', { reference: foreign, amount: 25_000, callback_url: 'http://127.0.0.1:9/none' });
  t.equal(qr.status, 201);
  t.equal((await simulatePay(stack.sim.url, { reference: foreign }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  await reconRun();
  t.match(await differencesOf(foreign), [{ kind: 'NO_KASIR_RECORD', subject: 'PAYMENT', status: 'OPEN', kasir_amount: null, vendor_amount: 25_000 }]);
});

t.test('a rerun replaces the open differences, keeps resolutions and repairs; show, resolve, CSV', async (t) => {
  const first = await reconRun();
  const second = await reconRun();
  t.equal(second.run.new_differences, 0, 'nothing new on a rerun');
  t.equal(second.run.repaired, 0, 'nothing repaired twice');
  t.same(second.open.map((d) => d.id).sort(), first.open.map((d) => d.id).sort(), 'the same open differences, the same rows');
  const kinds = new Set(second.open.map((d) => d.kind));
  for (const kind of ['PAID_IN_KASIR_ONLY', 'AMOUNT_DIFFERS', 'STATUS_DIFFERS', 'PAID_TWICE', 'NO_KASIR_RECORD']) t.ok(kinds.has(kind), `${kind} open`);

  const target = second.open.find((d) => d.kind === 'PAID_TWICE')!;
  const resolved = await ops(stack.env, 'recon:resolve', '--id', target.id, '--note', 'payer returned the second refund by bank transfer', '--json');
  t.equal(resolved.code, 0, resolved.stderr);
  t.match(JSON.parse(resolved.stdout), { status: 'RESOLVED', resolution_note: 'payer returned the second refund by bank transfer' });
  const again = await ops(stack.env, 'recon:resolve', '--id', target.id, '--note', 'twice');
  t.not(again.code, 0, 'a resolved difference cannot be resolved again');
  const noNote = await ops(stack.env, 'recon:resolve', '--id', target.id);
  t.equal(noNote.code, 64, 'a resolution needs a note');

  const third = await reconRun();
  t.notOk(third.open.some((d) => d.id === target.id), 'a rerun does not reopen what a person resolved');
  t.equal((await pool.oneFirst(sql.unsafe`select status from recon_differences where id = ${target.id}`)), 'RESOLVED');

  const shown = await ops(stack.env, 'recon:show', '--open', '--json');
  t.equal(shown.code, 0, shown.stderr);
  t.same(JSON.parse(shown.stdout).differences.map((d: Difference) => d.id).sort(), third.open.map((d) => d.id).sort(), 'recon:show --open lists the open ones');
  const text = await ops(stack.env, 'recon:show', '--vendor', 'sim', '--date', day);
  t.match(text.stdout, /paid at the vendor but not in Kasir/);
  t.match(text.stdout, /REPAIRED/);

  const csv = await ops(stack.env, 'recon:export', '--run', third.run.id, '--json');
  t.equal(csv.code, 0, csv.stderr);
  const exported = JSON.parse(csv.stdout);
  const rows = exported.csv.trim().split('\n');
  t.equal(rows[0], 'id,vendor_code,day,kind,kind_label,subject,reference,vendor_reference,merchant_id,kasir_amount,vendor_amount,kasir_status,vendor_status,detail,status,repair,resolution_note,run_id,repaired_run_id,created_at,resolved_at');
  const all = (await pool.oneFirst(sql.unsafe`select count(*)::int from recon_differences where vendor_code = 'sim' and day = ${day}::date`)) as number;
  t.equal(exported.rows, all, 'one row per difference of the day, repaired and resolved ones included');
  t.equal(rows.length, all + 1);
  t.ok(rows.some((r: string) => r.includes('paid out twice') && r.includes('RESOLVED')));
  await ledgerAudit(t, stack.env);
});

t.test('fees: what the vendor reports against what Kasir assumes', async (t) => {
  const set = await ops(stack.env, 'recon:set-cost', '--vendor', 'sim', '--payment-bps', '60', '--payout', '2500', '--json');
  t.equal(set.code, 0, set.stderr);
  t.match(JSON.parse(set.stdout), { cost_payment_bps: 60, cost_payout: 2500, cost_refund: null });
  const { run } = await reconRun();
  const payments = run.fees.PAYMENT;
  t.ok(payments.lines >= 1);
  t.ok(payments.vendor_fee > payments.assumed_fee, 'the simulator charges 0.7 %, Kasir assumed 0.6 %');
  t.equal(payments.difference, payments.vendor_fee - payments.assumed_fee);
  t.equal(payments.lines_differing, payments.lines);
  t.equal(run.fees.PAYOUT.difference, 0, 'payout fees as assumed');
  t.equal(run.fees.REFUND?.assumed_fee, undefined, 'no assumption, no comparison');
});

t.test('the daily job reconciles every vendor not removed, a disabled one too; the open differences gauge', async (t) => {
  const scheduler = await startWorkerGroup(t, 'scheduler', { ...stack.env, METRICS_PORT: '0' });
  // A disabled vendor takes no new work but still holds records: it is reconciled all the same.
  t.equal((await ops(stack.env, 'vendor:disable', '--code', 'sim')).code, 0);
  t.teardown(() => setVendorEnabled(pool, 'sim', true));
  t.match(await stack.api.ctx.boss.getSchedules('recon-run'), [{ cron: '0 2 * * *', timezone: 'Asia/Jakarta' }], 'scheduled at 02:00 WIB, after the settlement run');
  // As the schedule sends it, without a vendor (a day is given: the schedule's own, yesterday, is empty here).
  await sendJob(stack.api.ctx.boss, 'recon-run', { day });
  const run = await eventually(
    async () => (await pool.maybeOne(sql.unsafe`select vendor_code, day::text, status, open_differences from recon_runs where trigger = 'schedule' and status <> 'RUNNING'`)) ?? undefined,
    'the scheduled run',
    60_000,
  );
  t.match(run, { vendor_code: 'sim', day, status: 'COMPLETED' });

  const open = (await pool.any(sql.unsafe`select kind, count(*)::int as n from recon_differences where status = 'OPEN' group by kind`)) as readonly { kind: string; n: number }[];
  const metrics = await eventually(async () => {
    const res = await call(`http://127.0.0.1:${scheduler.message.metricsPort}`, { path: '/metrics' });
    return res.text.includes('kasir_recon_open_differences{') ? res.text : undefined;
  }, 'the gauge');
  for (const kind of ['PAID_AT_VENDOR_ONLY', 'PAID_IN_KASIR_ONLY', 'AMOUNT_DIFFERS', 'STATUS_DIFFERS', 'PAID_TWICE', 'NO_KASIR_RECORD']) {
    const n = open.find((o) => o.kind === kind)?.n ?? 0;
    t.match(metrics, new RegExp(`^kasir_recon_open_differences\\{vendor="sim",kind="${kind}"\\} ${n}$`, 'm'), `${kind}: ${n} open`);
  }
});
