// A vendor's word moves only what that vendor holds. The records here are held by the built-in
// simulator `sim` (a real process, through the real workers): an order waiting for its payer, a
// disbursement and a settlement payout in flight, a refund pending. Every other kind of vendor
// is registered beside it with valid credentials of its own (another simulator, Xendit,
// Midtrans with Iris, SNAP with RSA and with HMAC notifies) and says, correctly signed, that
// those records are paid, failed or refunded: nothing changes, each word is recorded as a
// conflict (ops vendor:conflicts), counted, and answered 2xx. The holder's own word still
// applies, a disabled holder's too, a removed vendor's is refused, and a final word against a
// final state is recorded as a contradiction. Ends with the ledger audit.
import t from 'tap';
import { createHash, createHmac, randomUUID, sign } from 'node:crypto';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { registry } from '../../db/metrics.ts';
import { completeRefund } from '../../db/refunds.ts';
import { upsertVendor } from '../../db/vendors.ts';
import { createMidtransGateway } from '../../gateways/midtrans/connector.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { midtransAdmin, midtransVendor, startMidtransSimulatorInProcess } from '../helpers/midtrans.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { simulatorSignature } from '../helpers/order-lifecycle.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, setFaults, simulatePay } from '../helpers/simulator.ts';
import { SNAP_ACCOUNT, snapKeys, snapVendor } from '../helpers/snap.ts';
import { startStack } from '../helpers/stack.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { XENDIT_ACCOUNT, xenditVendor } from '../helpers/xendit.ts';

const stack = await startStack(t, { groups: ['vendor', 'disbursement', 'webhook'] });
const pool = stack.api.ctx.pool;
const sealer = stack.api.ctx.sealer;
const api = stack.api.url;
const m = merchantApi(stack, 'BIND');
type M = Awaited<ReturnType<typeof makeMerchant>>;

// ---------------------------------------------------------------- the other vendors

const SIM2_SECRET = 'another-simulator-account-secret';
await upsertVendor(pool, sealer, { code: 'sim2', kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: { secret: SIM2_SECRET } });
const xnd = xenditVendor('http://127.0.0.1:1', 'xnd');
await upsertVendor(pool, sealer, { code: 'xnd', kind: 'xendit', baseUrl: xnd.baseUrl, credentials: xnd.credentials });
// A Midtrans account of its own (the simulator's dialects, in this process): its notifications
// are authentic, and the status Kasir re-reads there says what the attacker made it say.
const midtransAccount = await startMidtransSimulatorInProcess();
t.teardown(() => midtransAccount.stop());
const mt = midtransVendor(midtransAccount.url, {}, 'mt');
await upsertVendor(pool, sealer, { code: 'mt', kind: 'midtrans', baseUrl: mt.baseUrl, credentials: mt.credentials });
await midtransAdmin(midtransAccount.url).setIrisNotifyUrl(`${api}/callbacks/mt`);
const mtClient = createMidtransGateway(mt);
for (const [code, signature] of [['snapr', 'rsa'], ['snaph', 'hmac']] as const) {
  const v = snapVendor('http://127.0.0.1:1', { notifySignature: signature }, code);
  await upsertVendor(pool, sealer, { code, kind: 'snap', baseUrl: v.baseUrl, credentials: v.credentials });
}

// ---------------------------------------------------------------- signed words, per vendor kind

const post = (path: string, headers: Record<string, string>, body: string) => call(api, { path, headers: { 'content-type': 'application/json', ...headers }, body });

const simulatorWord = (secret: string, code: string, body: object) => {
  const raw = JSON.stringify(body);
  return post(`/callbacks/${code}`, simulatorSignature(secret, raw), raw);
};
const sim2 = {
  paid: (ref: string, amount: number) =>
    simulatorWord(SIM2_SECRET, 'sim2', { event_id: `evt_${randomUUID()}`, type: 'qris.paid', reference: ref, id: `qr_${randomUUID()}`, amount, paid_at: new Date().toISOString(), rrn: '990000000001' }),
  payout: (reference: string, status: 'SUCCESS' | 'FAILED') =>
    simulatorWord(SIM2_SECRET, 'sim2', { event_id: `evt_${randomUUID()}`, type: 'disbursement.updated', reference, id: `dsb_${randomUUID()}`, status, failure_reason: status === 'FAILED' ? 'FORGED' : null }),
};

const xenditWord = (body: object) => post('/callbacks/xnd', { 'x-callback-token': XENDIT_ACCOUNT.callbackToken }, JSON.stringify(body));
const xendit = {
  paid: (ref: string, amount: number) =>
    xenditWord({ event: 'qr.payment', data: { id: `qrpy_${randomUUID()}`, qr_id: `qr_${randomUUID()}`, reference_id: ref, amount, status: 'SUCCEEDED', created: new Date().toISOString(), payment_detail: { receipt_id: '990000000002' } } }),
  payout: (reference: string, status: 'SUCCEEDED' | 'FAILED') =>
    xenditWord({ event: status === 'SUCCEEDED' ? 'payout.succeeded' : 'payout.failed', data: { id: `disb_${randomUUID()}`, reference_id: reference, amount: 10_000, status, failure_code: status === 'FAILED' ? 'FORGED' : null } }),
  refund: (refundRef: string, status: 'SUCCEEDED' | 'FAILED') =>
    xenditWord({ event: 'qr.refund', data: { id: `rfd_${randomUUID()}`, status, refund_amount: 10_000, failure_code: status === 'FAILED' ? 'FORGED' : null, metadata: { kasir_refund_reference: refundRef } } }),
};

const jakartaNow = () => `${new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;
const SNAP_NOTIFY = '/v1.0/qr/qr-mpm-notify';
const snapNotify = (ref: string, amount: number) =>
  JSON.stringify({ originalReferenceNo: `A1${randomUUID().slice(0, 8)}`, originalPartnerReferenceNo: ref, latestTransactionStatus: '00', amount: { value: `${amount}.00`, currency: 'IDR' } });
const snap = {
  /** Signed with the provider's RSA key, as an RSA-notify provider does. */
  async rsaPaid(ref: string, amount: number) {
    const raw = snapNotify(ref, amount);
    const ts = jakartaNow();
    const signature = sign('sha256', Buffer.from(`POST:${SNAP_NOTIFY}:${createHash('sha256').update(raw).digest('hex')}:${ts}`), snapKeys().providerPrivatePem).toString('base64');
    return post(`/callbacks/snapr${SNAP_NOTIFY}`, { 'x-timestamp': ts, 'x-signature': signature }, raw);
  },
  /** A token fetched from Kasir first, then the HMAC signature, as an HMAC-notify provider does. */
  async hmacPaid(ref: string, amount: number) {
    const ts = jakartaNow();
    const tokenSignature = sign('sha256', Buffer.from(`${SNAP_ACCOUNT.clientKey}|${ts}`), snapKeys().providerPrivatePem).toString('base64');
    const token = await post('/callbacks/snaph/v1.0/access-token/b2b', { 'x-timestamp': ts, 'x-client-key': SNAP_ACCOUNT.clientKey, 'x-signature': tokenSignature }, '{"grantType":"client_credentials"}');
    if (token.status !== 200) throw new Error(`SNAP token: ${token.status} ${token.text}`);
    const accessToken = token.json.accessToken as string;
    const raw = snapNotify(ref, amount);
    const signed = `POST:${SNAP_NOTIFY}:${accessToken}:${createHash('sha256').update(raw).digest('hex')}:${ts}`;
    const signature = createHmac('sha512', SNAP_ACCOUNT.clientSecret).update(signed).digest('base64');
    return post(`/callbacks/snaph${SNAP_NOTIFY}`, { 'x-timestamp': ts, authorization: `Bearer ${accessToken}`, 'x-signature': signature }, raw);
  },
};

/** Midtrans: the attacker's own account makes the status say so; its notification does the rest. */
const midtrans = {
  async paid(ref: string, amount: number) {
    const created = await mtClient.createQris({ reference: ref, amount, expiresAt: null, merchantName: 'X', merchantCity: 'JAKARTA', callbackUrl: `${api}/callbacks/mt` });
    if (created.kind !== 'ok') throw new Error(`charge at the attacker's account: ${created.reason}`);
    const paid = await simulatePay(midtransAccount.url, { reference: ref });
    if (paid.status !== 200) throw new Error(`pay: ${paid.status}`);
    return created.value.vendorOrderId;
  },
  async refund(orderRef: string, refundRef: string, amount: number) {
    const vendorOrderId = await this.paid(orderRef, amount);
    const refunded = await mtClient.refund({ reference: orderRef, vendorOrderId, refundReference: refundRef, amount });
    if (refunded.kind !== 'ok') throw new Error(`refund at the attacker's account: ${refunded.reason}`);
  },
  /** An Iris payout whose notes name Kasir's reference; account ...0000 fails, others complete. */
  async payout(reference: string, outcome: 'SUCCESS' | 'FAILED') {
    const sent = await mtClient.disburse({
      reference, channel: 'BANK', bankCode: 'BCA', ewalletCode: null, accountNumber: outcome === 'FAILED' ? '1234560000' : '1234561111', accountName: accountHolder(outcome === 'FAILED' ? '1234560000' : '1234561111')!, amount: 10_000, callbackUrl: `${api}/callbacks/mt`,
    });
    if (sent.kind !== 'ok') throw new Error(`payout at the attacker's Iris: ${sent.reason}`);
  },
};

// ---------------------------------------------------------------- what is recorded

const conflicts = (reference: string) =>
  pool.any(sql.type(z.object({ kind: z.string(), vendor_code: z.string(), record_type: z.string(), record_vendor: z.string().nullable(), vendor_status: z.string() }))`
    select kind, vendor_code, record_type, record_vendor, vendor_status from vendor_conflicts where reference = ${reference} order by id`);

const conflictMetric = async (vendor: string, kind: string) =>
  (await registry.getSingleMetric('kasir_vendor_conflicts_total')!.get()).values.find((v) => v.labels.vendor === vendor && v.labels.kind === kind)?.value ?? 0;

/** Waits until `vendor`'s word on `reference` has been recorded as a conflict (some senders are asynchronous). */
async function conflictRecorded(reference: string, vendor: string, kind = 'NOT_ITS_RECORD') {
  return eventually(async () => ((await conflicts(reference)).find((c) => c.vendor_code === vendor && c.kind === kind)), `${vendor}'s ${kind} on ${reference}`, 15_000);
}

const statusOf = (table: 'orders' | 'disbursements' | 'settlements' | 'refunds', id: string) =>
  pool.oneFirst(sql.type(z.object({ status: z.string() }))`select status from ${sql.identifier([table])} where id = ${id}`);

// ---------------------------------------------------------------- the records `sim` holds

const walletMerchant = await makeMerchant(stack.api.ctx);
await m.fund(walletMerchant, 1_000_000);
const createdOrder = await m.createOrder(walletMerchant, 150_000);
if (createdOrder.status !== 201) throw new Error(createdOrder.text);
const order = { id: createdOrder.json.data.id as string, ref: createdOrder.json.data.ref_code as string, amount: 150_000 };

const sentPayout = await m.disburse(walletMerchant, bankPayout(100_000, '1234567777')); // ...7777 stays in flight at the simulator
if (sentPayout.status !== 201) throw new Error(sentPayout.text);
const disbursement = { id: sentPayout.json.data.id as string, ref: sentPayout.json.data.ref_code as string };
await eventually(
  async () => ((await pool.maybeOneFirst(sql.unsafe`select vendor_disbursement_id from disbursements where id = ${disbursement.id} and status = 'ON_PROCESS'`)) ? true : undefined),
  'the disbursement accepted by sim',
);

// A refund held PENDING: the simulator answers its refunds 500 (unknown), so it is retried.
await setFaults(stack.sim.url, { op: 'refund', mode: 'error' });
const paidRef = await m.paid(walletMerchant, 80_000);
const askedRefund = await m.refund(walletMerchant, paidRef, { amount: 30_000 });
if (askedRefund.status !== 201) throw new Error(askedRefund.text);
const refund = { id: askedRefund.json.data.id as string, ref: askedRefund.json.data.ref_code as string, orderRef: paidRef };

// A settlement payout in flight: yesterday's MANUAL takings paid out to an account ...7777.
const manual = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
const account = await ops(stack.env, 'merchant:set-settlement-account', '--merchant', manual.merchant_id, '--bank', 'BCA', '--account-number', '9876547777', '--account-name', 'PT Toko Maju');
if (account.code !== 0) throw new Error(account.stderr);
const takings = await m.paid(manual, 200_000);
const yesterday = new Date(Date.now() + 7 * 3600_000 - 86_400_000).toISOString().slice(0, 10);
await pool.query(sql.unsafe`update orders set paid_at = ${`${yesterday}T12:00:00+07:00`} where ref_code = ${takings}`);
const run = await ops(stack.env, 'settlements:run', '--date', yesterday, '--merchant', manual.merchant_id, '--json');
if (run.code !== 0) throw new Error(run.stderr);
const settlementId: string = JSON.parse(run.stdout).results[0].settlement.id;
const settlement = await eventually(
  async () =>
    pool.maybeOne(sql.type(z.object({ id: z.string(), ref_code: z.string() }))`
      select id, ref_code from settlements where id = ${settlementId} and status = 'PROCESSING' and vendor_disbursement_id is not null`).then((row) => row ?? undefined),
  'the settlement payout accepted by sim',
);
const settlementRef = settlement.ref_code; // the first attempt goes out under the ref_code itself

const balanceBefore = await balanceOf(stack, walletMerchant);

// ---------------------------------------------------------------- the matrix

interface Cell {
  vendor: string;
  record: 'order' | 'disbursement' | 'settlement payout' | 'refund';
  reference: string;
  say(): Promise<unknown>;
  /** The vendor's word cannot name Kasir's record at all: looked up among its own records, it finds none. */
  unnamed?: true;
}

const cells: Cell[] = [
  { vendor: 'sim2', record: 'order', reference: order.ref, say: () => sim2.paid(order.ref, order.amount) },
  { vendor: 'xnd', record: 'order', reference: order.ref, say: () => xendit.paid(order.ref, order.amount) },
  { vendor: 'mt', record: 'order', reference: order.ref, say: async () => void (await midtrans.paid(order.ref, order.amount)) },
  { vendor: 'snapr', record: 'order', reference: order.ref, say: () => snap.rsaPaid(order.ref, order.amount) },
  { vendor: 'snaph', record: 'order', reference: order.ref, say: () => snap.hmacPaid(order.ref, order.amount) },
  { vendor: 'sim2', record: 'disbursement', reference: disbursement.ref, say: () => sim2.payout(disbursement.ref, 'FAILED') },
  { vendor: 'xnd', record: 'disbursement', reference: disbursement.ref, say: () => xendit.payout(disbursement.ref, 'FAILED') },
  { vendor: 'mt', record: 'disbursement', reference: disbursement.ref, say: () => midtrans.payout(disbursement.ref, 'FAILED') },
  { vendor: 'sim2', record: 'settlement payout', reference: settlementRef, say: () => sim2.payout(settlementRef, 'FAILED') },
  { vendor: 'xnd', record: 'settlement payout', reference: settlementRef, say: () => xendit.payout(settlementRef, 'FAILED') },
  { vendor: 'mt', record: 'settlement payout', reference: settlementRef, say: () => midtrans.payout(settlementRef, 'SUCCESS') },
  // Xendit's refund events carry Xendit's own refund id, never Kasir's reference (metadata is not
  // echoed): the word is looked up among Xendit's refunds and names nothing of sim's.
  { vendor: 'xnd', record: 'refund', reference: refund.ref, say: () => xendit.refund(refund.ref, 'FAILED'), unnamed: true },
  // Another Midtrans account made to hold the victim's order id and refund key: the re-read names
  // the right order, and only the binding stops it.
  { vendor: 'mt', record: 'refund', reference: refund.ref, say: () => midtrans.refund(refund.orderRef, refund.ref, 30_000) },
  // The native simulator protocol has no refund callback, and SNAP notifies payments only: those
  // vendors cannot say anything about a refund.
];

t.test("another vendor's valid word on sim's records changes nothing, is recorded, counted and answered 2xx", async (t) => {
  for (const cell of cells) {
    t.test(`${cell.vendor} on the ${cell.record}`, async (t) => {
      const counted = await conflictMetric(cell.vendor, 'NOT_ITS_RECORD');
      const answer = (await cell.say()) as { status: number; text: string } | undefined;
      if (answer) t.ok(answer.status >= 200 && answer.status < 300, `answered 2xx (${answer.status} ${answer.text})`);
      if (cell.unnamed) return void t.match(answer?.text, /"result":"unknown"/, 'names no record of Kasir\'s');
      const conflict = await conflictRecorded(cell.reference, cell.vendor);
      t.equal(conflict.record_vendor, 'sim', 'recorded with the record’s own vendor');
      t.ok((await conflictMetric(cell.vendor, 'NOT_ITS_RECORD')) > counted, 'counted in kasir_vendor_conflicts_total');
    });
  }
  t.test("the Midtrans account's notifications were all answered 200", async (t) => {
    const admin = midtransAdmin(midtransAccount.url);
    t.same(Object.keys((await admin.stats()).notify_answers), ['200'], 'payment and refund notifications');
    t.same(Object.keys((await admin.irisStats()).notify_answers), ['200'], 'Iris notifications');
  });
  t.test('every record is as it was', async (t) => {
    t.equal(await statusOf('orders', order.id), 'PENDING');
    t.equal(await statusOf('disbursements', disbursement.id), 'ON_PROCESS');
    t.equal(await statusOf('settlements', settlementId), 'PROCESSING');
    t.equal(await statusOf('refunds', refund.id), 'PENDING');
    t.equal(await balanceOf(stack, walletMerchant), balanceBefore, 'the wallet did not move');
  });
  t.test('an operator lists them', async (t) => {
    const listed = await ops(stack.env, 'vendor:conflicts', '--kind', 'not_its_record', '--json');
    t.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout).conflicts as Array<{ vendor_code: string; reference: string; record_vendor: string }>;
    for (const cell of cells.filter((c) => !c.unnamed)) t.ok(rows.some((r) => r.vendor_code === cell.vendor && r.reference === cell.reference && r.record_vendor === 'sim'), `${cell.vendor} on the ${cell.record} is listed`);
    const text = await ops(stack.env, 'vendor:conflicts', '--vendor', 'xnd');
    t.match(text.stdout, new RegExp(`NOT_ITS_RECORD\\s+xnd\\s+DISBURSEMENT\\s+${disbursement.ref} kasir=ON_PROCESS vendor=FAILED holder=sim via callback:xnd`));
  });
});

t.test("the holder's own word applies, also once it is disabled; a removed vendor's is refused", async (t) => {
  t.equal((await ops(stack.env, 'vendor:disable', '--code', 'sim')).code, 0);
  t.teardown(async () => {
    await ops(stack.env, 'vendor:add', '--code', 'sim', '--kind', 'simulator', '--base-url', stack.sim.url, '--secret', stack.sim.secret);
  });
  // The payer paid at the simulator (its own callback lost); the simulator's word names the
  // order's own QR, and its read of that QR shows the payment (api/payment-hints.ts).
  t.equal((await simulatePay(stack.sim.url, { reference: order.ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  const qrId = await pool.oneFirst(sql.unsafe`select vendor_order_id from orders where id = ${order.id}`);
  const paid = await simulatorWord(stack.sim.secret, 'sim', { event_id: `evt_${randomUUID()}`, type: 'qris.paid', reference: order.ref, id: qrId, amount: order.amount, paid_at: new Date().toISOString(), rrn: '990000000009' });
  t.same([paid.status, paid.json?.data?.result], [200, 'paid'], "a disabled vendor's word on an order it holds applies");
  t.equal(await statusOf('orders', order.id), 'PAID');

  t.equal((await ops(stack.env, 'vendor:remove', '--code', 'sim2', '--force')).code, 0);
  const removed = await sim2.paid(order.ref, order.amount);
  t.same([removed.status, removed.json?.error?.code], [401, 'INVALID_SIGNATURE'], "a removed vendor's callbacks are refused like a bad signature");
});

t.test('a final word against a final state is recorded as a contradiction, listed and counted; nothing moves', async (t) => {
  // The Iris case: Kasir holds a payout FAILED (the debit is back in the wallet); the vendor then says it paid.
  const failing = await m.disburse(walletMerchant, bankPayout(50_000, '1234560000'));
  const failed = await m.disbursementReaches(walletMerchant, failing.json.data.id, 'FAILED');
  const balance = await balanceOf(stack, walletMerchant);
  const counted = await conflictMetric('sim', 'CONTRADICTION');
  const late = await simulatorWord(stack.sim.secret, 'sim', { event_id: `evt_${randomUUID()}`, type: 'disbursement.updated', reference: failed.ref_code, id: `dsb_${randomUUID()}`, status: 'SUCCESS' });
  t.same([late.status, late.json?.data?.result], [200, 'contradicted']);
  t.match(await conflicts(failed.ref_code), [{ kind: 'CONTRADICTION', vendor_code: 'sim', record_type: 'DISBURSEMENT', vendor_status: 'SUCCESS' }]);
  t.equal(await conflictMetric('sim', 'CONTRADICTION'), counted + 1);
  t.equal(await balanceOf(stack, walletMerchant), balance, 'nothing moves: an operator decides');

  // The reverse: SUCCESS at Kasir, then FAILED from the vendor.
  const paying = await m.disburse(walletMerchant, bankPayout(20_000, '1234561234'));
  const succeeded = await m.disbursementReaches(walletMerchant, paying.json.data.id, 'SUCCESS');
  const reversed = await simulatorWord(stack.sim.secret, 'sim', { event_id: `evt_${randomUUID()}`, type: 'disbursement.updated', reference: succeeded.ref_code, id: `dsb_${randomUUID()}`, status: 'FAILED', failure_reason: 'RETURNED' });
  t.equal(reversed.json?.data?.result, 'contradicted');
  // The same final word again is only a repeat.
  const again = await simulatorWord(stack.sim.secret, 'sim', { event_id: `evt_${randomUUID()}`, type: 'disbursement.updated', reference: succeeded.ref_code, id: `dsb_${randomUUID()}`, status: 'SUCCESS' });
  t.equal(again.json?.data?.result, 'already_final');

  // A refund Kasir failed (the vendor refused it), which the vendor later says it made.
  await clearFaults(stack.sim.url);
  await setFaults(stack.sim.url, { op: 'refund', mode: 'reject', status: 400 });
  const refundOrder = await m.paid(walletMerchant, 40_000);
  const asked = await m.refund(walletMerchant, refundOrder, { amount: 10_000 });
  await m.refundReaches(asked.json.data.id, 'FAILED');
  const said = await pool.transaction((tx) => completeRefund(tx, stack.api.ctx.boss, asked.json.data.id, { status: 'SUCCEEDED', vendorRefundId: 'rfd_late' }, { vendor: 'sim', via: 'reconcile' }));
  t.equal(said, 'contradicted');
  t.equal(await statusOf('refunds', asked.json.data.id), 'FAILED');

  const listed = JSON.parse((await ops(stack.env, 'vendor:conflicts', '--kind', 'CONTRADICTION', '--json')).stdout).conflicts as Array<{ reference: string }>;
  t.same(new Set(listed.map((c) => c.reference)), new Set([failed.ref_code, succeeded.ref_code, asked.json.data.ref_code]), 'all three listed');
  await ledgerAudit(t, stack.env);
});
