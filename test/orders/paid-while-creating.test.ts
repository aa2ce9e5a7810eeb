// An order paid before Kasir has confirmed its create (DESIGN 3 "Payment"): a payer pays at once
// and the vendor's callback comes while the attempt is still CREATING, or Kasir has given the
// attempt up (FAILED). The order becomes PAID and is held from then on by the vendor that reported
// the payment: its refunds go to that vendor, that vendor's reconciliation reads it as its own
// (no false "paid at the vendor only"), and a late confirmation of the create from that vendor
// completes the order's vendor fields without changing its status. Real processes: the API, the
// vendor workers, the simulator (two vendor codes on it, the first refusing creates), ops.
import t from 'tap';
import { z } from 'zod';
import { migrate } from '../../db/migrate.ts';
import { confirmOrder } from '../../db/orders.ts';
import { findOrderById } from '../../db/orders.sql.ts';
import { sql } from '../../db/pool.ts';
import { wibDay } from '../../db/recon.ts';
import { setRoute, upsertVendor } from '../../db/vendors.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { eventually } from '../helpers/http.ts';
import { merchantApi } from '../helpers/merchant-api.ts';
import { ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { attemptsOf, orderBody, postOrder } from '../helpers/reliability.ts';
import { clearFaults, setFaults, simulatePay, simulatorRequest } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['vendor'] });
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'PWC');
// A second vendor code on the same simulator account: Kasir calls `sim` first, then `simb`.
await upsertVendor(pool, stack.api.ctx.sealer, { code: 'simb', kind: 'simulator', baseUrl: stack.sim.url, credentials: { secret: stack.sim.secret } });

const holder = z.object({ status: z.string(), vendor_code: z.string().nullable(), pending_vendor: z.string().nullable(), vendors_tried: z.array(z.string()), vendor_order_id: z.string().nullable() });
/** The simulator's QR for a reference, read past the fault rules (a header fault of no effect overrides them). */
const qrAt = (reference: string) => simulatorRequest(stack.sim.url, stack.sim.secret, 'GET', `/v1/qris/${reference}`, undefined, { 'x-sim-fault': 'latency;latency_ms=0' });
let paidRef = '';
const orderRow = (ref: string) => pool.one(sql.type(holder)`select status, vendor_code, pending_vendor, vendors_tried, vendor_order_id from orders where ref_code = ${ref}`);

t.test('paid while CREATING after another vendor refused it: held by the payer’s vendor, refundable, reconciled as its own', async (t) => {
  t.teardown(() => clearFaults(stack.sim.url));
  const merchant = await makeMerchant(stack.api.ctx);
  await setRoute(pool, { merchantId: merchant.merchant_id, method: 'QRIS', vendorCode: 'sim', priority: 1 });
  await setRoute(pool, { merchantId: merchant.merchant_id, method: 'QRIS', vendorCode: 'simb', priority: 2 });
  await setFaults(stack.sim.url, [
    // `sim` surely refuses; `simb` makes the QR and never answers (the create's outcome is unknown).
    { op: 'createQris', mode: 'reject', count: 1 },
    { op: 'createQris', mode: 'timeout', count: 1 },
    // order-reconcile cannot read the QR until the payment is in, so the attempt stays CREATING.
    { op: 'queryQris', mode: 'error' },
  ]);
  const body = orderBody('PWC', 180_000);
  const answered = postOrder(stack.api.url, merchant.api_key, body);
  const attempt = await eventually(async () => {
    const [a] = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
    return a?.pending_vendor === 'simb' && (await qrAt(a.ref_code)).status === 200 ? a : undefined;
  }, 'the attempt pending at simb, its QR made');
  t.equal(attempt.status, 'CREATING');
  t.same(attempt.vendors_tried, ['sim', 'simb']);

  t.equal((await simulatePay(stack.sim.url, { reference: attempt.ref_code })).status, 200, 'the payer pays at once');
  // The callback is a hint that Kasir confirms by reading simb's QR (docs/callbacks.md): the
  // reads work again now that the payment is in, and the callback's retry or the reconcile pays it.
  await clearFaults(stack.sim.url);
  const paid = await eventually(async () => {
    const row = await orderRow(attempt.ref_code);
    return row.status === 'PAID' ? row : undefined;
  }, 'the callback to make it PAID', 40_000);
  t.equal(paid.vendor_code, 'simb', 'held by the vendor whose callback paid it');
  paidRef = attempt.ref_code;
  t.equal(paid.pending_vendor, null);
  t.ok(paid.vendor_order_id, "the vendor's id for the payment is kept");
  await answered;
  await clearFaults(stack.sim.url);

  // A late confirmation of the create: from the holder it fills what the order lacks, its status
  // stays; from any other vendor it changes nothing.
  const row = (await findOrderById(pool, attempt.id))!;
  const qr = (await qrAt(attempt.ref_code)).body;
  t.notOk(await confirmOrder(pool, row, { vendorCode: 'sim', vendorOrderId: 'other-id', qrisString: 'other-qris' }, 'vendor-worker', stack.env.PUBLIC_BASE_URL));
  t.equal((await findOrderById(pool, attempt.id))!.qris_string, null, "another vendor's confirmation is not taken");
  t.notOk(await confirmOrder(pool, row, { vendorCode: 'simb', vendorOrderId: qr.id, qrisString: qr.qris_string }, 'vendor-worker', stack.env.PUBLIC_BASE_URL), 'not a confirmation: the order is no attempt any more');
  const confirmed = (await findOrderById(pool, attempt.id))!;
  t.match(confirmed, { status: 'PAID', vendor_code: 'simb', qris_string: qr.qris_string, vendor_order_id: paid.vendor_order_id });
  t.equal((await pool.oneFirst(sql.unsafe`select count(*)::int from order_events where order_id = ${attempt.id} and event = 'order.created'`)), 1, 'created once');

  const refund = await m.refund(merchant, attempt.ref_code, { amount: 50_000 });
  t.equal(refund.status, 201, refund.text);
  await m.refundReaches(refund.json.data.id, 'SUCCEEDED');
  t.equal(await pool.oneFirst(sql.unsafe`select vendor_code from refunds where id = ${refund.json.data.id}`), 'simb', 'refunded through the vendor holding the payment');

  const recon = await ops(stack.env, 'recon:run', '--vendor', 'simb', '--date', wibDay(new Date()), '--json');
  t.equal(recon.code, 0, recon.stderr);
  const { run } = JSON.parse(recon.stdout);
  t.same(await pool.anyFirst(sql.unsafe`select kind from recon_differences where reference = ${attempt.ref_code}`), [], 'no difference for the payment');
  t.match(run.matched, { PAYMENT: { count: 1, amount: 180_000 }, REFUND: { count: 1, amount: 50_000 } }, "the day's payment and refund at simb matched");
  await ledgerAudit(t, stack.env);
});

t.test('migration 028 names the vendor of orders paid that way before, from the event that paid them', async (t) => {
  t.ok(paidRef, 'the order of the test before');
  // As the code before it left such an order.
  await pool.query(sql.unsafe`update orders set vendor_code = null where ref_code = ${paidRef}`);
  await pool.query(sql.unsafe`delete from kasir_migrations where id = 28`);
  t.same(await migrate(stack.env.DATABASE_URL), ['028_paid_attempt_holders']);
  t.equal((await orderRow(paidRef)).vendor_code, 'simb', 'the vendor of its order.paid event (callback:simb)');
});
