// A payment callback authenticated only by a secret the account holder can read too is a hint
// (api/payment-hints.ts): Kasir credits what the vendor's own read of the order's stored QR
// shows. Against the simulator process speaking Xendit (its static x-callback-token, which any
// merchant with its own Xendit account on a route reads in its dashboard) and the native
// simulator (a shared HMAC secret), with the real API and workers: forged callbacks for unpaid
// orders and a genuine payment replayed under another order move no money and are recorded
// UNCONFIRMED, the genuine payment beside them is credited, a read that fails answers 503 and the
// retry credits once; a vendor disabled after the worker cached its routes is handed no order.
// Ends with the ledger audit.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { sql } from '../../db/pool.ts';
import { setRoute } from '../../db/vendors.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { merchantApi } from '../helpers/merchant-api.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { simulatorSignature } from '../helpers/order-lifecycle.ts';
import { clearFaults, setFaults, simulatePay } from '../helpers/simulator.ts';
import { nativeSimulatorVendor, NATIVE_SIMULATOR_SECRET, startVendorStack } from '../helpers/vendor-stack.ts';
import { XENDIT_ACCOUNT, xenditDialectVendor } from '../helpers/xendit.ts';

const stack = await startVendorStack(t, [
  xenditDialectVendor('xendit'),
  nativeSimulatorVendor('sim'),
]);
const xendit = stack.sims[0].url;
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'HINT');
t.beforeEach(async () => {
  await clearFaults(xendit);
  await clearFaults(stack.sims[1].url);
});

const orderRow = (ref: string) =>
  pool.one(sql.unsafe`select status, vendor_code, vendor_order_id, paid_at from orders where ref_code = ${ref}`) as Promise<{ status: string; vendor_code: string; vendor_order_id: string; paid_at: Date | null }>;
const unconfirmed = (ref: string) => pool.any(sql.unsafe`select vendor_code, detail from vendor_conflicts where kind = 'UNCONFIRMED' and reference = ${ref} order by id`) as Promise<Array<{ vendor_code: string; detail: Record<string, unknown> }>>;

/** A qr.payment callback as Xendit posts it, with the account's token. */
function xenditPayment(data: { id?: string; qr_id: string; reference_id: string; amount: number }) {
  const body = JSON.stringify({
    event: 'qr.payment',
    api_version: 'v2',
    business_id: 'kasir-test-business',
    created: new Date().toISOString(),
    data: { id: data.id ?? `qrpy_${randomUUID()}`, qr_id: data.qr_id, reference_id: data.reference_id, amount: data.amount, currency: 'IDR', status: 'SUCCEEDED', created: new Date().toISOString(), payment_detail: { receipt_id: '123456789012' } },
  });
  return call(stack.api.url, { path: '/callbacks/xendit', headers: { 'content-type': 'application/json', 'x-callback-token': XENDIT_ACCOUNT.callbackToken }, body });
}

/** The payment Xendit holds for a QR, read as Kasir reads it (GET /qr_codes/{id}/payments). */
async function xenditPaymentOf(qrId: string): Promise<{ id: string; amount: number }> {
  const res = await fetch(`${xendit}/xendit/qr_codes/${qrId}/payments`, {
    headers: { authorization: `Basic ${Buffer.from(`${XENDIT_ACCOUNT.secretKey}:`).toString('base64')}`, 'api-version': '2022-07-31' },
  });
  const body = (await res.json()) as { data: Array<{ id: string; amount: number }> };
  return body.data[0];
}

t.test('Xendit: forged callbacks for an unpaid order move nothing and are recorded; the genuine payment is credited', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await m.createOrder(merchant, 250_000);
  t.equal(created.status, 201, created.text);
  const ref = created.json.data.ref_code as string;
  const qrId = (await orderRow(ref)).vendor_order_id;

  // A made-up qr_id, and the order's own qr_id while Xendit holds no payment for it.
  const forged = await xenditPayment({ qr_id: `qr_${randomUUID()}`, reference_id: ref, amount: 250_000 });
  t.equal(forged.status, 200, forged.text);
  t.equal((await xenditPayment({ qr_id: qrId, reference_id: ref, amount: 250_000 })).status, 200);
  t.match(await orderRow(ref), { status: 'PENDING', vendor_order_id: qrId, paid_at: null }, 'not paid, its QR id untouched');
  t.equal(await balanceOf(stack, merchant), 0, 'nothing credited');
  t.match(await unconfirmed(ref), [
    { vendor_code: 'xendit', detail: { why: 'OTHER_QR', order_qr: qrId } },
    { vendor_code: 'xendit', detail: { why: 'NOT_PAID', read_status: 'PENDING' } },
  ]);

  // Control: the payer pays, Xendit's own callback comes and is confirmed by the read.
  t.equal((await simulatePay(xendit, { reference: ref })).status, 200);
  await m.orderReaches(merchant, ref, 'PAID');
  t.equal(await balanceOf(stack, merchant), 250_000 - 1750, 'the genuine payment credited, once');
  await ledgerAudit(t, stack.env);
});

t.test("Xendit: a genuine payment of X replayed under Y's ref pays nothing for Y and leaves Y's QR id", async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const x = (await m.createOrder(merchant, 40_000)).json.data.ref_code as string;
  const y = (await m.createOrder(merchant, 40_000)).json.data.ref_code as string;
  t.equal((await simulatePay(xendit, { reference: x })).status, 200);
  await m.orderReaches(merchant, x, 'PAID');
  const xQr = (await orderRow(x)).vendor_order_id;
  const yQr = (await orderRow(y)).vendor_order_id;
  const payment = await xenditPaymentOf(xQr);
  // X's payment as Xendit sent it, with Y's reference (and, so it is not taken for a repeat, a new id).
  t.equal((await xenditPayment({ qr_id: xQr, reference_id: y, amount: payment.amount })).status, 200);
  t.equal((await xenditPayment({ id: payment.id, qr_id: xQr, reference_id: y, amount: payment.amount })).status, 200);
  t.match(await orderRow(y), { status: 'PENDING', vendor_order_id: yQr });
  t.match(await orderRow(x), { status: 'PAID', vendor_order_id: xQr });
  t.equal(await balanceOf(stack, merchant), 40_000 - 280, 'X credited once, Y nothing');
  t.match(await unconfirmed(y), [{ detail: { why: 'OTHER_QR', callback_qr: xQr, order_qr: yQr } }]);
  await ledgerAudit(t, stack.env);
});

t.test('Xendit: the read failing answers 503; the callback sent again credits once', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const ref = (await m.createOrder(merchant, 60_000)).json.data.ref_code as string;
  // Paid at Xendit, its own callback lost: the test sends it.
  t.equal((await simulatePay(xendit, { reference: ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  const qrId = (await orderRow(ref)).vendor_order_id;
  const payment = await xenditPaymentOf(qrId);
  await setFaults(xendit, { op: 'queryQris', mode: 'error', status: 503, count: 1 });
  const first = await xenditPayment({ id: payment.id, qr_id: qrId, reference_id: ref, amount: 60_000 });
  t.equal(first.status, 503, first.text);
  t.equal((await orderRow(ref)).status, 'PENDING');
  for (let i = 0; i < 2; i++) t.equal((await xenditPayment({ id: payment.id, qr_id: qrId, reference_id: ref, amount: 60_000 })).status, 200);
  t.equal((await orderRow(ref)).status, 'PAID');
  t.equal(await balanceOf(stack, merchant), 60_000 - 420, 'credited once');
  t.same(await unconfirmed(ref), []);
  await ledgerAudit(t, stack.env);
});

t.test('simulator (shared HMAC): a signed callback for an unpaid order moves nothing and is recorded', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await setRoute(pool, { merchantId: merchant.merchant_id, method: 'QRIS', vendorCode: 'sim', priority: 1 });
  const ref = (await m.createOrder(merchant, 30_000)).json.data.ref_code as string;
  const order = await orderRow(ref);
  t.equal(order.vendor_code, 'sim');
  const body = JSON.stringify({ event_id: randomUUID(), type: 'qris.paid', reference: ref, id: order.vendor_order_id, amount: 30_000, paid_at: new Date().toISOString(), rrn: '000000000001' });
  const res = await call(stack.api.url, { path: '/callbacks/sim', headers: { 'content-type': 'application/json', ...simulatorSignature(NATIVE_SIMULATOR_SECRET, body) }, body });
  t.equal(res.status, 200, res.text);
  t.equal((await orderRow(ref)).status, 'PENDING');
  t.match(await unconfirmed(ref), [{ vendor_code: 'sim', detail: { why: 'NOT_PAID', read_status: 'PENDING' } }]);
  t.equal((await simulatePay(stack.sims[1].url, { reference: ref })).status, 200);
  await m.orderReaches(merchant, ref, 'PAID');
  t.equal(await balanceOf(stack, merchant), 30_000 - 210);
  await ledgerAudit(t, stack.env);
});

t.test('a vendor disabled after the worker cached its routes is handed no order', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  // The worker reads (and caches) the routes: xendit first.
  const before = await m.createOrder(merchant, 11_000);
  t.equal((await orderRow(before.json.data.ref_code)).vendor_code, 'xendit');
  // Disabled in the table, as another node's operator would, inside the routes' cache time.
  await pool.query(sql.unsafe`update vendors set enabled = false where code = 'xendit'`);
  t.teardown(() => pool.query(sql.unsafe`update vendors set enabled = true where code = 'xendit'`));
  const after = await m.createOrder(merchant, 12_000);
  t.equal(after.status, 201, after.text);
  const row = await orderRow(after.json.data.ref_code);
  t.equal(row.vendor_code, 'sim', 'the next routed vendor took it');
  const tried = await pool.oneFirst(sql.unsafe`select vendors_tried from orders where ref_code = ${after.json.data.ref_code}`);
  t.same(tried, ['sim'], 'xendit was never marked pending');
});
