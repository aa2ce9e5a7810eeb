// SNAP BI through the real processes: the API, the vendor, disbursement and webhook workers as
// child processes, the simulator process speaking SNAP (test/helpers/snap.ts), webhooks to a
// real receiver, the ops CLI for settlements and the audit. Every money test ends with the
// ledger audit.
import { createHash, sign } from 'node:crypto';
import t from 'tap';
import { z } from 'zod';
import { setRoute, upsertVendor } from '../../db/vendors.ts';
import { sql } from '../../db/pool.ts';
import { periodOf } from '../../db/settlements.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, setFaults, simulatePay, startCallbackReceiver, startSimulatorProcess } from '../helpers/simulator.ts';
import { SNAP_ACCOUNT, snapAdmin, snapKeyFiles, snapKeys, snapSimulatorEnv, snapVendor, startSnapStack } from '../helpers/snap.ts';

const stack = await startSnapStack(t, { groups: ['vendor', 'disbursement', 'webhook'] });
const admin = snapAdmin(stack.sim.url);
const pool = stack.api.ctx.pool;
type M = Awaited<ReturnType<typeof makeMerchant>>;

t.beforeEach(() => clearFaults(stack.sim.url));

const m = merchantApi(stack, 'SNAP');
const { orderBody, createOrder, getOrder, fetchStatus, orderReaches, fund, disburse, disbursementReaches } = m;
const paidByQuery = (merchant: M, amount: number) => m.paidByQuery(merchant, amount);
// Paid to the holder the bank names (the simulator's holder of the number): a name check passes.
const bank = (amount: number, account: string) => ({ ...bankPayout(amount, account), account_name: accountHolder(account) ?? 'Nobody' });

async function calls(path: string) {
  return (await admin.stats()).calls[path] ?? 0;
}

t.test('twenty concurrent order creates share one token; the provider expires it, one refresh serves them all', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  t.equal((await admin.stats()).token_requests, 0, 'a fresh vendor worker holds no token yet');
  const first = await Promise.all(Array.from({ length: 20 }, () => createOrder(merchant, 10_000)));
  t.same(first.map((r) => r.status), Array(20).fill(201), 'every order created');
  t.equal((await admin.stats()).token_requests, 1, 'exactly one token request for twenty concurrent generates');

  await admin.expireTokens();
  const second = await Promise.all(Array.from({ length: 20 }, () => createOrder(merchant, 10_000)));
  t.same(second.map((r) => r.status), Array(20).fill(201), 'every order created after the expiry');
  const stats = await admin.stats();
  t.equal(stats.token_requests, 2, 'one refresh for all twenty');
  t.ok((stats.rejected['Invalid Token (B2B)'] ?? 0) >= 1, 'the expired token was refused at least once');
  t.equal(stats.calls['/v1.0/qr/qr-mpm-generate'], 40, 'forty generates went through: each refused one was sent again with the new token');
});

t.test(
  'QRIS: create, pay, the provider notifies Kasir, PAID, credited, webhook',
  async (t) => {
    const receiver = await startCallbackReceiver();
    t.teardown(() => receiver.close());
    const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
    const created = await createOrder(merchant, 100_000);
    t.equal(created.status, 201, created.text);
    const ref = created.json.data.ref_code;
    t.equal((await simulatePay(stack.sim.url, { reference: ref })).status, 200);
    const paid = await orderReaches(merchant, ref, 'PAID');
    t.match(paid, { ref_code: ref, status: 'PAID', amount: 100_000 });
    t.equal(await balanceOf(stack, merchant), 99_300, 'credited amount − MDR');
    const [hook] = await receiver.waitFor(1, 10_000);
    t.match(hook.json, { ref_code: ref, status: 'PAID' });
    const events = await pool.anyFirst(sql.unsafe`select source from order_events e join orders o on o.id = e.order_id where o.ref_code = ${ref} and e.event = 'order.paid'`);
    t.same(events, [`callback:${stack.code}`], 'PAID by the notify');
    t.same((await admin.stats()).notify_answers, { '2005200': 1 }, 'Kasir answered the notify 2005200');

    // The provider sends it again (its retry): the same event, acknowledged, nothing twice.
    const notifyUrl = `${stack.api.url}/callbacks/${stack.code}/v1.0/qr/qr-mpm-notify`;
    const vendorOrderId = (await pool.oneFirst(sql.unsafe`select vendor_order_id from orders where ref_code = ${ref}`)) as string;
    const signed = (body: object, key = snapKeys().providerPrivatePem) => {
      const raw = JSON.stringify(body);
      const ts = `${new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;
      const hash = createHash('sha256').update(raw).digest('hex');
      const signature = sign('sha256', Buffer.from(`POST:/v1.0/qr/qr-mpm-notify:${hash}:${ts}`), key).toString('base64');
      return call(stack.api.url, { path: new URL(notifyUrl).pathname, headers: { 'content-type': 'application/json', 'x-timestamp': ts, 'x-signature': signature }, body: raw });
    };
    const paidNotify = { originalReferenceNo: vendorOrderId, originalPartnerReferenceNo: ref, latestTransactionStatus: '00', amount: { value: '100000.00', currency: 'IDR' } };
    const again = await signed(paidNotify);
    t.same([again.status, again.json], [200, { responseCode: '2005200', responseMessage: 'Successful' }], 'a repeat: 2005200');
    const unknownRef = await signed({ ...paidNotify, originalReferenceNo: 'A1OTHER', originalPartnerReferenceNo: 'ORD-0-NOSUCHORDER' });
    t.same([unknownRef.status, unknownRef.json?.responseCode], [404, '4045201'], 'no such order: 4045201');
    const forged = await signed(paidNotify, snapKeys().kasirPrivatePem);
    t.same([forged.status, forged.json?.responseCode], [401, '4015200'], 'signed by another key: 4015200');
    // CONFORMANCE S-W4: a correctly signed 06 is authentic (acknowledged), and a paid order stays paid.
    const six = await signed({ originalReferenceNo: vendorOrderId, latestTransactionStatus: '06', transactionStatusDesc: 'Failed' });
    t.same([six.status, six.json?.responseCode], [200, '2005200'], 'a signed 06: 2005200, never "Invalid Signature"');
    t.equal((await getOrder(merchant, ref)).json.data.status, 'PAID', 'the payment stands');
    t.equal(await balanceOf(stack, merchant), 99_300, 'credited once');
    await ledgerAudit(t, stack.env);
  },
);

// Issue 29, a newcomer's finding: entered account details whose inquiry names another holder
// were paid under the bank's name. Now refused (FAILED, debit returned, no other vendor asked)
// unless the request accepts the mismatch.
t.test('a disbursement to entered details whose bank names another holder is FAILED, unless accepted', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(merchant, 1_000_000);
  const transfers = await calls('/v1.0/transfer-interbank');
  const refused = await disburse(merchant, { ...bankPayout(200_000, '1234567890'), account_name: 'Budi Santoso' }); // the bank says NUR HIDAYAH
  t.equal(refused.status, 201, refused.text);
  await disbursementReaches(merchant, refused.json.data.id, 'FAILED');
  t.equal(await pool.oneFirst(sql.unsafe`select failure_reason from disbursements where id = ${refused.json.data.id}`), 'ACCOUNT_NAME_MISMATCH');
  t.equal(await calls('/v1.0/transfer-interbank'), transfers, 'no transfer sent');
  t.equal(await balanceOf(stack, merchant), 1_000_000, 'the debit returned');
  const accepted = await disburse(merchant, { ...bankPayout(200_000, '1234567890'), account_name: 'Budi Santoso', accept_name_mismatch: true });
  await disbursementReaches(merchant, accepted.json.data.id, 'SUCCESS', 20_000);
  t.equal(await balanceOf(stack, merchant), 1_000_000 - accepted.json.data.total_debit, 'paid once, on the request\'s word');
  await ledgerAudit(t, stack.env);
});

// Issue 29 findings 3 and 4: notifies without originalPartnerReferenceNo (the dialect leaves it
// out, as Finpay may and Netzme does) and with statuses other than 00 are authentic.
t.test('notifies other than 00 are acknowledged; a canceled, failed, expired or rejected QR expires its PENDING order', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const orderOf = async () => {
    const created = await createOrder(merchant, 40_000);
    t.equal(created.status, 201, created.text);
    return created.json.data.ref_code as string;
  };
  const answersBefore = (await admin.stats()).notify_answers['2005200'] ?? 0;

  const pending = await orderOf();
  await admin.close(pending, '03');
  const canceled = await orderOf();
  await admin.close(canceled, '05');
  const failed = await orderOf();
  await admin.close(failed, '06');
  await orderReaches(merchant, canceled, 'EXPIRED');
  await orderReaches(merchant, failed, 'EXPIRED');
  await eventually(async () => ((await admin.stats()).notify_answers['2005200'] ?? 0) - answersBefore === 3 || undefined, 'three notifies acknowledged 2005200');
  t.equal((await admin.stats()).notify_answers['4015200'], undefined, 'none answered "Invalid Signature"');
  t.equal((await getOrder(merchant, pending)).json.data.status, 'PENDING', '03 (pending) changes nothing');
  const hooks = await receiver.waitFor(2, 10_000);
  t.same(hooks.map((h) => [h.json.ref_code, h.json.status]).sort(), [[canceled, 'EXPIRED'], [failed, 'EXPIRED']].sort(), 'order.expired webhooks');
  const detail = await pool.oneFirst(sql.unsafe`select e.detail->>'vendor' from order_events e join orders o on o.id = e.order_id where o.ref_code = ${canceled} and e.event = 'order.expired'`);
  t.match(detail, /^CANCELLED: latestTransactionStatus 05 Canceled/);
  await ledgerAudit(t, stack.env);
});

t.test(
  'QRIS with an HMAC-notify provider: it fetches a token from Kasir, notifies with it, PAID',
  async (t) => {
    // A second provider for one merchant, signing notifies with HMAC and a token from Kasir.
    const code = 'snaph';
    const sim = await startSimulatorProcess({
      SIMULATOR_CODE: code,
      ...snapSimulatorEnv({ SIMULATOR_SNAP_NOTIFY_SIGNATURE: 'hmac', SIMULATOR_SNAP_NOTIFY_URL: `${stack.api.url}/callbacks/${code}/v1.0/qr/qr-mpm-notify` }),
    });
    t.teardown(() => sim.stop());
    const vendor = snapVendor(sim.url, { notifySignature: 'hmac' }, code);
    await upsertVendor(pool, stack.api.ctx.sealer, { code, kind: 'snap', baseUrl: vendor.baseUrl, credentials: vendor.credentials });
    const merchant = await makeMerchant(stack.api.ctx);
    await setRoute(pool, { merchantId: merchant.merchant_id, method: 'QRIS', vendorCode: code, priority: 10 });
    const created = await createOrder(merchant, 50_000);
    t.equal(created.status, 201, created.text);
    const ref = created.json.data.ref_code;
    t.equal((await simulatePay(sim.url, { reference: ref })).status, 200);
    await orderReaches(merchant, ref, 'PAID');
    t.same((await snapAdmin(sim.url).stats()).notify_answers, { '2005200': 1 }, 'answered 2005200');
    t.equal(await balanceOf(stack, merchant), 49_650, 'credited amount − MDR');
    await ledgerAudit(t, stack.env);
  },
);

t.test('QRIS: create, pay, the query (fetch-status) says PAID, credited, webhook; refund through the provider', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const created = await createOrder(merchant, 100_000);
  t.equal(created.status, 201, created.text);
  const order = created.json.data;
  t.match(order, { status: 'PENDING', amount: 100_000 });
  t.match(order.qris_string, /^000201/, 'the QR from qr-mpm-generate');
  const ref = order.ref_code;
  t.equal((await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'drop_callback' })).status, 200);
  const res = await fetchStatus(merchant, ref);
  t.equal(res.json.data.status, 'PAID', 'latestTransactionStatus 00 from qr-mpm-query');
  t.equal(await balanceOf(stack, merchant), 99_300, 'credited amount − MDR');
  const [hook] = await receiver.waitFor(1, 10_000);
  t.match(hook.json, { ref_code: ref, status: 'PAID' });

  const before = await calls('/v1.0/qr/qr-mpm-refund');
  const refund = await call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: { 'x-api-key': merchant.api_key }, body: { amount: 40_000, reason: 'one item out of stock' } });
  t.equal(refund.status, 201, refund.text);
  await eventually(async () => ((await pool.maybeOneFirst(sql.unsafe`select status from refunds where id = ${refund.json.data.id}`)) === 'SUCCEEDED' ? true : undefined), 'refund SUCCEEDED');
  t.equal((await calls('/v1.0/qr/qr-mpm-refund')) - before, 1, 'one qr-mpm-refund');
  t.equal(await balanceOf(stack, merchant), 59_300, 'the refund is debited');
  await ledgerAudit(t, stack.env);
});

t.test('a bank disbursement: account inquiry, interbank transfer, transfer status, SUCCESS', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(merchant, 500_000);
  const before = { inquiry: await calls('/v1.0/account-inquiry-external'), transfer: await calls('/v1.0/transfer-interbank'), status: await calls('/v1.0/transfer/status') };
  const res = await disburse(merchant, bank(150_000, '1234567890'));
  t.equal(res.status, 201, res.text);
  const d = res.json.data;
  t.equal(await balanceOf(stack, merchant), 500_000 - d.total_debit, 'total debit held at creation');
  const done = await disbursementReaches(merchant, d.id, 'SUCCESS');
  t.match(done.vendor_disbursement_id, /^T[0-9A-F]{16}$/, "the provider's referenceNo");
  t.equal((await calls('/v1.0/account-inquiry-external')) - before.inquiry, 1, 'one inquiry');
  t.equal((await calls('/v1.0/transfer-interbank')) - before.transfer, 1, 'one transfer');
  t.ok((await calls('/v1.0/transfer/status')) - before.status >= 1, 'the status inquiry made it final');
  t.equal(await balanceOf(stack, merchant), 500_000 - d.total_debit);
  await ledgerAudit(t, stack.env);
});

t.test('a disbursement the bank fails is FAILED and its debit reversed', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(merchant, 300_000);
  const res = await disburse(merchant, bank(100_000, '1234560000'));
  t.equal(res.status, 201, res.text);
  t.ok((await balanceOf(stack, merchant)) < 300_000, 'debited at creation');
  const done = await disbursementReaches(merchant, res.json.data.id, 'FAILED');
  t.match(done, { status: 'FAILED' });
  t.equal(await balanceOf(stack, merchant), 300_000, 'the whole debit returned');
  await ledgerAudit(t, stack.env);
});

t.test('an e-wallet payout is refused by the SNAP adapter before anything is sent; FAILED and reversed', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(merchant, 300_000);
  const before = await calls('/v1.0/transfer-interbank');
  const res = await disburse(merchant, { channel: 'EWALLET', ewallet_provider: 'DANA', ewallet_phone: '081234567890', amount: 50_000 });
  t.equal(res.status, 201, res.text);
  await disbursementReaches(merchant, res.json.data.id, 'FAILED');
  t.equal(await calls('/v1.0/transfer-interbank'), before, 'nothing sent');
  t.equal(await balanceOf(stack, merchant), 300_000);
  await ledgerAudit(t, stack.env);
});

t.test('a settlement payout goes out as an interbank transfer under its reference and is PAID', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx, { settlement: 'MANUAL' });
  const set = await ops(stack.env, 'merchant:set-settlement-account', '--merchant', merchant.merchant_id, '--bank', 'BCA', '--account-number', '1234567890', '--account-name', accountHolder('1234567890')!, '--json');
  t.equal(set.code, 0, set.stderr);
  await paidByQuery(merchant, 200_000);
  // A run builds a day that has ended: the payment moves to yesterday noon (WIB).
  const date = new Date(Date.now() + 7 * 3600_000 - 86_400_000).toISOString().slice(0, 10);
  await pool.query(sql.unsafe`update orders set paid_at = ${`${date}T12:00:00+07:00`} where merchant_id = ${merchant.merchant_id} and status = 'PAID'`);
  t.ok(periodOf(date, 0).periodEnd <= new Date(), 'yesterday (WIB) has ended');
  const run = await ops(stack.env, 'settlements:run', '--date', date, '--merchant', merchant.merchant_id, '--json');
  t.equal(run.code, 0, run.stderr);
  const built = JSON.parse(run.stdout).results.find((r: any) => r.merchant_id === merchant.merchant_id);
  t.equal(built?.status, 'created', run.stdout);
  const id = built.settlement.id;
  const paid = await eventually(async () => {
    const res = await call(stack.api.url, { path: `/v1/settlements/${id}`, headers: { 'x-api-key': merchant.api_key } });
    return res.json?.data?.status === 'PAID' ? res.json.data : undefined;
  }, 'settlement PAID', 20_000);
  const reference = await pool.oneFirst(sql.unsafe`select reference from payout_references where payout_id = ${id}`);
  t.match(reference, new RegExp(`^${paid.ref_code}`), 'sent under the settlement payout reference');
  t.ok((await calls('/v1.0/transfer-interbank')) >= 1);
  await ledgerAudit(t, stack.env);
});

t.test('ops: vendor:add --kind snap with key files, vendor:check fetches a token and says OK or why not', async (t) => {
  const files = snapKeyFiles();
  const add = (code: string, privateKeyFile: string) =>
    ops(stack.env, 'vendor:add', '--code', code, '--kind', 'snap', '--base-url', `${stack.sim.url}/snap`, '--partner-id', SNAP_ACCOUNT.partnerId,
      '--client-key', SNAP_ACCOUNT.clientKey, '--client-secret', SNAP_ACCOUNT.clientSecret, '--private-key-file', privateKeyFile,
      '--provider-public-key-file', files.providerPublic, '--channel-id', SNAP_ACCOUNT.channelId, '--merchant-id', SNAP_ACCOUNT.merchantId,
      '--bank-branch-code', '0000', '--source-account-no', '0000000000', '--json');
  const added = await add('snap-cli', files.kasirPrivate);
  t.equal(added.code, 0, added.stderr);
  const before = (await admin.stats()).token_requests;
  const ok = await ops(stack.env, 'vendor:check', '--code', 'snap-cli', '--json');
  t.equal(ok.code, 0, ok.stdout + ok.stderr);
  t.match(JSON.parse(ok.stdout), { code: 'snap-cli', kind: 'snap', ok: true, detail: /access token issued/ });
  t.equal((await admin.stats()).token_requests - before, 1, 'one token request');

  t.equal((await add('snap-cli-bad', files.providerPrivate)).code, 0, 'a key the provider never registered');
  const bad = await ops(stack.env, 'vendor:check', '--code', 'snap-cli-bad');
  t.equal(bad.code, 1);
  t.match(bad.stdout, /snap-cli-bad \(snap\): NOT OK — access token refused: HTTP 401 4017300 Unauthorized\. Signature/);

  // The token proves the key pair only: a wrong client secret (which signs every service call)
  // got a token and then failed every query. The check signs a query of each kind too.
  t.match(JSON.parse(ok.stdout).detail, /QR query signed and answered.*transfer status signed and answered/);
  const wrongSecret = await ops(stack.env, 'vendor:add', '--code', 'snap-cli-secret', '--kind', 'snap', '--base-url', `${stack.sim.url}/snap`, '--partner-id', SNAP_ACCOUNT.partnerId,
    '--client-key', SNAP_ACCOUNT.clientKey, '--client-secret', 'not-the-client-secret-0123456789', '--private-key-file', files.kasirPrivate,
    '--provider-public-key-file', files.providerPublic, '--channel-id', SNAP_ACCOUNT.channelId, '--merchant-id', SNAP_ACCOUNT.merchantId,
    '--bank-branch-code', '0000', '--source-account-no', '0000000000');
  t.equal(wrongSecret.code, 0, wrongSecret.stderr);
  const secretChecked = await ops(stack.env, 'vendor:check', '--code', 'snap-cli-secret');
  t.equal(secretChecked.code, 1, secretChecked.stdout);
  t.match(secretChecked.stdout, /snap-cli-secret \(snap\): NOT OK — QR query \(payment confirmation\): /);
});

t.test('unknown outcomes at the provider', async (t) => {
  t.test('generate times out (the QR was made): the query cannot return it, the attempt fails; a retry creates the order', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await setFaults(stack.sim.url, { op: 'createQris', mode: 'timeout', count: 1 });
    const body = orderBody(25_000);
    const first = await call(stack.api.url, { path: '/v1/orders', headers: { 'x-api-key': merchant.api_key }, body });
    t.equal(first.status, 409, first.text);
    t.equal(first.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
    const attempt = await pool.one(sql.type(z.object({ id: z.string(), ref_code: z.string() }))`select id, ref_code from orders where merchant_id = ${merchant.merchant_id} and merchant_order_id = ${body.merchant_order_id}`);
    await eventually(async () => ((await pool.oneFirst(sql.unsafe`select status from orders where id = ${attempt.id}`)) === 'FAILED' ? true : undefined), 'the attempt FAILED', 20_000);
    const retry = await call(stack.api.url, { path: '/v1/orders', headers: { 'x-api-key': merchant.api_key }, body });
    t.equal(retry.status, 201, retry.text);
    t.not(retry.json.data.ref_code, attempt.ref_code, 'a new attempt under a new reference');
    await ledgerAudit(t, stack.env);
  });

  t.test('generate answers 5xx (nothing made): the query finds nothing, the attempt fails', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await setFaults(stack.sim.url, { op: 'createQris', mode: 'error', status: 502, count: 1 });
    const body = orderBody(26_000);
    const first = await call(stack.api.url, { path: '/v1/orders', headers: { 'x-api-key': merchant.api_key }, body });
    t.equal(first.status, 409, first.text);
    const attempt = await pool.one(sql.type(z.object({ id: z.string() }))`select id from orders where merchant_id = ${merchant.merchant_id} and merchant_order_id = ${body.merchant_order_id}`);
    await eventually(async () => ((await pool.oneFirst(sql.unsafe`select status from orders where id = ${attempt.id}`)) === 'FAILED' ? true : undefined), 'the attempt FAILED', 20_000);
    await ledgerAudit(t, stack.env);
  });

  t.test('transfer answers 5xx: the status says not found, sent again, SUCCESS, one transfer made', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await setFaults(stack.sim.url, { op: 'disburse', mode: 'error', count: 1 });
    const before = await calls('/v1.0/transfer-interbank');
    const res = await disburse(merchant, bank(80_000, '1234567890'));
    t.equal(res.status, 201, res.text);
    await disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 25_000);
    t.equal((await calls('/v1.0/transfer-interbank')) - before, 2, 'the refused one and the one that went through');
    await ledgerAudit(t, stack.env);
  });

  t.test('transfer times out (the transfer was made): the status finds it, SUCCESS, never sent twice', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await setFaults(stack.sim.url, { op: 'disburse', mode: 'timeout', count: 1 });
    const before = await calls('/v1.0/transfer-interbank');
    const res = await disburse(merchant, bank(90_000, '1234567890'));
    t.equal(res.status, 201, res.text);
    await disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 25_000);
    t.equal((await calls('/v1.0/transfer-interbank')) - before, 1, 'one transfer');
    await ledgerAudit(t, stack.env);
  });

  t.test('the status inquiry answers 5xx: reconciliation asks again, SUCCESS', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await setFaults(stack.sim.url, { op: 'queryDisbursement', mode: 'error', count: 1 });
    const res = await disburse(merchant, bank(70_000, '1234567890'));
    await disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 30_000);
    await ledgerAudit(t, stack.env);
  });

  // QR MPM has no refund query, and the standard's payment query lists no refunds: a refund
  // whose answer was lost is settled by the query only when it refunded the whole payment;
  // otherwise it waits for an operator, and is never sent again on its own.
  const refundOf = (id: string) => pool.one(sql.type(z.object({ status: z.string(), unresolved: z.boolean() }))`select status, unresolved_at is not null as unresolved from refunds where id = ${id}`);

  t.test('a whole refund times out (it was made): the query says refunded (04), SUCCEEDED, one refund call', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await paidByQuery(merchant, 100_000);
    await fund(merchant, 700);
    await setFaults(stack.sim.url, { op: 'refund', mode: 'timeout', count: 1 });
    const before = await calls('/v1.0/qr/qr-mpm-refund');
    const refund = await call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: { 'x-api-key': merchant.api_key }, body: {} });
    t.equal(refund.status, 201, refund.text);
    await eventually(async () => ((await refundOf(refund.json.data.id)).status === 'SUCCEEDED' ? true : undefined), 'refund SUCCEEDED', 30_000);
    t.equal((await calls('/v1.0/qr/qr-mpm-refund')) - before, 1, 'never sent again');
    t.equal(await balanceOf(stack, merchant), 0, 'debited once');
    await ledgerAudit(t, stack.env);
  });

  t.test('a partial refund times out (it was made): no read can tell, it waits for an operator; one refund call', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await paidByQuery(merchant, 100_000);
    await setFaults(stack.sim.url, { op: 'refund', mode: 'timeout', count: 1 });
    const before = await calls('/v1.0/qr/qr-mpm-refund');
    const refund = await call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/refund`, headers: { 'x-api-key': merchant.api_key }, body: { amount: 30_000 } });
    t.equal(refund.status, 201, refund.text);
    await eventually(async () => ((await refundOf(refund.json.data.id)).unresolved ? true : undefined), 'refund unresolved', 30_000);
    t.equal((await calls('/v1.0/qr/qr-mpm-refund')) - before, 1, 'never sent again');
    const settled = await ops(stack.env, 'refunds:settle', '--ref', refund.json.data.ref_code, '--outcome', 'SUCCEEDED', '--reason', 'the provider confirms it', '--evidence', 'provider ticket 77');
    t.equal(settled.code, 0, settled.stdout + settled.stderr);
    t.same(await refundOf(refund.json.data.id), { status: 'SUCCEEDED', unresolved: true });
    t.equal(await balanceOf(stack, merchant), 99_300 - 30_000, 'debited once');
    await ledgerAudit(t, stack.env);
  });
});

t.test('a caller Kasir cannot verify gets the same answer under a SNAP vendor code and a made-up one (codes cannot be enumerated)', async (t) => {
  const ts = `${new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;
  const body = JSON.stringify({ originalReferenceNo: 'A1X', latestTransactionStatus: '00', amount: { value: '1000.00', currency: 'IDR' } });
  const probes: Array<{ path: string; headers: Record<string, string>; body: string }> = [
    { path: '/v1.0/qr/qr-mpm-notify', headers: { 'content-type': 'application/json', 'x-timestamp': ts, 'x-signature': 'bm90LWEtc2lnbmF0dXJl' }, body },
    { path: '/v1.0/access-token/b2b', headers: { 'content-type': 'application/json', 'x-timestamp': ts, 'x-client-key': 'someone', 'x-signature': 'bm90LWEtc2lnbmF0dXJl' }, body: '{"grantType":"client_credentials"}' },
    { path: '/v1.0/access-token/b2b', headers: { 'content-type': 'application/json' }, body: '{}' },
    { path: '/v1.0/no/such/service', headers: { 'content-type': 'application/json' }, body: '{}' },
    { path: '', headers: { 'content-type': 'application/json' }, body },
  ];
  for (const probe of probes) {
    const answers: Array<[number, unknown]> = [];
    for (const code of [stack.code, 'nosuchvendor']) {
      const res = await call(stack.api.url, { path: `/callbacks/${code}${probe.path}`, headers: probe.headers, body: probe.body });
      const { request_id: _, ...error } = (res.json?.error ?? {}) as Record<string, unknown>;
      answers.push([res.status, res.json?.error ? { error } : res.json]);
    }
    t.same(answers[0], answers[1], `${probe.path || '/callbacks/<code>'}: ${JSON.stringify(answers[0])}`);
    t.ok(answers[0][0] >= 400, 'refused');
  }
});
