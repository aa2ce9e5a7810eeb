// Midtrans through the real processes: the API, the vendor, disbursement and webhook workers as
// child processes, the simulator process speaking Midtrans and Iris (test/helpers/midtrans.ts),
// notifications to Kasir's POST /callbacks/<code>, webhooks to a real receiver. Every money test
// ends with the ledger audit.
import { createHash, randomUUID } from 'node:crypto';
import t from 'tap';
import { z } from 'zod';
import { setMoneySettings } from '../../db/merchants.ts';
import { sql } from '../../db/pool.ts';
import { sendJob } from '../../db/queue.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { MIDTRANS_ACCOUNT, midtransAdmin, startMidtransStack } from '../helpers/midtrans.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, setFaults, simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';

const stack = await startMidtransStack(t);
const admin = midtransAdmin(stack.sim.url);
const pool = stack.api.ctx.pool;
type M = Awaited<ReturnType<typeof makeMerchant>>;

t.beforeEach(() => clearFaults(stack.sim.url));

const m = merchantApi(stack, 'MT');
const { orderBody, createOrder, getOrder, orderReaches, fund, disburse, disbursementReaches, refundReaches } = m;
const paidOrder = (merchant: M, amount: number) => m.paid(merchant, amount);
// Paid to the holder the bank names (the simulator's holder of the number): a name check passes.
const bank = (amount: number, account: string) => ({ ...bankPayout(amount, account), account_name: accountHolder(account) ?? 'Nobody' });
const refund = (merchant: M, ref: string, amount: number) => m.refund(merchant, ref, { amount });
const callbacksFor = (reference: string) => pool.anyFirst(sql.unsafe`select event_id from vendor_callbacks where reference = ${reference} order by event_id`);

t.test('QRIS: create, pay, Midtrans notifies Kasir, PAID, credited, webhook; repeats and forgeries change nothing', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const created = await createOrder(merchant, 100_000);
  t.equal(created.status, 201, created.text);
  const ref = created.json.data.ref_code;
  t.match(created.json.data.qris_string, /^000201/, 'the qr_string of the charge');
  t.equal((await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'duplicate_callback' })).status, 200);
  const paid = await orderReaches(merchant, ref, 'PAID');
  t.match(paid, { ref_code: ref, amount: 100_000 });
  // Midtrans's QRIS notification and status carry no RRN: a reconciliation field is null, never "".
  t.equal(paid.vendor_rrn, null, 'vendor_rrn null, not an empty string');
  t.equal(await balanceOf(stack, merchant), 99_300, 'credited amount − MDR');
  const [hook] = await receiver.waitFor(1, 10_000);
  t.match(hook.json, { ref_code: ref, status: 'PAID' });
  const events = await pool.anyFirst(sql.unsafe`select source from order_events e join orders o on o.id = e.order_id where o.ref_code = ${ref} and e.event = 'order.paid'`);
  t.same(events, [`callback:${stack.code}`], 'PAID by the notification');
  const stats = await eventually(async () => {
    const s = await admin.stats();
    return s.notified.filter((n) => n.startsWith(ref)).length === 2 && (s.notify_answers['200'] ?? 0) >= 3 ? s : undefined;
  }, 'pending + two settlement notifications answered');
  t.same(Object.keys(stats.notify_answers), ['200'], 'every notification answered 200, the pending one included');
  const transactionId = (await pool.oneFirst(sql.unsafe`select vendor_order_id from orders where ref_code = ${ref}`)) as string;
  // The pending notification is re-read like any other: if the payment is already there, it
  // carries the payment (then there is no pending event), else it is noted.
  const recorded = await callbacksFor(ref);
  t.same(recorded.filter((e) => e !== `midtrans:${transactionId}:pending`), [`midtrans:${transactionId}:settlement`], 'one payment event for three deliveries');

  // A forged notification (another server key): 401, recorded nowhere.
  const forged = { order_id: ref, status_code: '200', gross_amount: '100000.00', transaction_status: 'settlement', transaction_id: randomUUID() };
  const signature = createHash('sha512').update(`${ref}200100000.00SB-Mid-server-forger`).digest('hex');
  const res = await call(stack.api.url, { path: `/callbacks/${stack.code}`, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...forged, signature_key: signature }) });
  t.equal(res.status, 401, res.text);
  t.same(await callbacksFor(ref), recorded, 'nothing more recorded');
  t.equal(await balanceOf(stack, merchant), 99_300, 'credited once');
  await ledgerAudit(t, stack.env);
});

t.test('QRIS: a lost notification; fetch-status asks Midtrans and the order is PAID', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await createOrder(merchant, 40_000);
  const ref = created.json.data.ref_code;
  await simulatePay(stack.sim.url, { reference: ref }, { 'x-sim-fault': 'drop_callback' });
  const res = await call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/fetch-status`, headers: { 'x-api-key': merchant.api_key } });
  t.equal(res.json?.data?.status, 'PAID', res.text);
  t.equal(await balanceOf(stack, merchant), 39_720);
  await ledgerAudit(t, stack.env);
});

t.test('partial refunds: two refunds through Midtrans, each once, the order stays PAID', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const ref = await paidOrder(merchant, 100_000);
  const first = await refund(merchant, ref, 30_000);
  t.equal(first.status, 201, first.text);
  await refundReaches(first.json.data.id, 'SUCCEEDED');
  const second = await refund(merchant, ref, 20_000);
  t.equal(second.status, 201, second.text);
  await refundReaches(second.json.data.id, 'SUCCEEDED');
  t.equal(await balanceOf(stack, merchant), 99_300 - 50_000, 'both refunds debited');
  t.equal((await admin.stats()).calls['POST /v2/:id/refund'] >= 2, true);
  await eventually(async () => ((await admin.stats()).notified.filter((n) => n === `${ref}:partial_refund`).length === 2 ? true : undefined), 'two refund notifications');
  const refundRefs = await pool.anyFirst(sql.unsafe`select ref_code from refunds where id in (${first.json.data.id}, ${second.json.data.id})`);
  await eventually(
    async () => ((await pool.oneFirst(sql.unsafe`select count(*)::int from vendor_callbacks where type = 'refund.updated' and reference in (${refundRefs[0] as string}, ${refundRefs[1] as string})`)) === 2 ? true : undefined),
    'their refund.updated events recorded, by refund reference',
  );
  t.equal(await balanceOf(stack, merchant), 49_300, 'the notifications changed nothing twice');
  await ledgerAudit(t, stack.env);
});

t.test('a payout through Iris: created, approved, completed by the notification, SUCCESS', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(merchant, 500_000);
  const res = await disburse(merchant, bank(150_000, '1234567890'));
  t.equal(res.status, 201, res.text);
  const d = res.json.data;
  const done = await disbursementReaches(merchant, d.id, 'SUCCESS');
  const payout = (await admin.irisStats()).payouts!.find((p) => p.notes === d.ref_code);
  t.match(payout, { status: 'completed', amount: 150_000 }, 'notes carry Kasir reference');
  t.equal(done.vendor_disbursement_id, payout!.reference_no, "Iris's reference_no recorded");
  t.equal(await balanceOf(stack, merchant), 500_000 - d.total_debit);
  await ledgerAudit(t, stack.env);
});

t.test('a payout the bank fails is FAILED by the notification and its debit reversed', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(merchant, 300_000);
  const res = await disburse(merchant, bank(100_000, '1234560000'));
  t.equal(res.status, 201, res.text);
  t.match(await disbursementReaches(merchant, res.json.data.id, 'FAILED'), { status: 'FAILED' });
  t.equal(await balanceOf(stack, merchant), 300_000, 'the whole debit returned');
  await ledgerAudit(t, stack.env);
});

t.test('an Iris account that approves on its own: created processed or completed, nothing approved, paid once', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await fund(merchant, 400_000);
  const approvals = async () => (await admin.irisStats()).calls['POST /api/v1/payouts/approve'] ?? 0;
  const before = await approvals();
  let debited = 0;
  // …5555: Iris answers `processed` (settles later); …3333: `completed` (paid at once).
  for (const account of ['1234565555', '1234563333']) {
    const res = await disburse(merchant, bank(90_000, account));
    t.equal(res.status, 201, res.text);
    debited += res.json.data.total_debit;
    const done = await disbursementReaches(merchant, res.json.data.id, 'SUCCESS');
    const made = (await admin.irisStats()).payouts!.filter((p) => p.notes === res.json.data.ref_code);
    t.match(made, [{ status: 'completed', amount: 90_000, reference_no: done.vendor_disbursement_id }], `${account}: one payout at Iris`);
  }
  t.equal(await approvals(), before, 'no approval asked for a payout Iris approved itself');
  t.equal(await balanceOf(stack, merchant), 400_000 - debited, 'each debited once');
  await ledgerAudit(t, stack.env);
});

t.test('a beneficiary name check through Iris account validation', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const headers = { 'x-api-key': merchant.api_key };
  const good = await call(stack.api.url, { path: '/v1/beneficiaries', headers, body: { channel: 'BANK', bank_short_code: 'MANDIRI', account_number: '1380011819286', account_name: accountHolder('1380011819286') } });
  t.equal(good.status, 201, good.text);
  const verified = await eventually(async () => {
    const r = await call(stack.api.url, { path: `/v1/beneficiaries/${good.json.data.id}`, headers });
    return r.json?.data?.verification_status === 'VERIFIED' ? r.json.data : undefined;
  }, 'VERIFIED');
  t.match(verified.verified_name, /^[A-Z]+ [A-Z]+$/, "the bank's name for the account");
  const bad = await call(stack.api.url, { path: '/v1/beneficiaries', headers, body: { channel: 'BANK', bank_short_code: 'BCA', account_number: '1234569999', account_name: 'Nobody' } });
  await eventually(async () => {
    const r = await call(stack.api.url, { path: `/v1/beneficiaries/${bad.json.data.id}`, headers });
    return r.json?.data?.verification_status === 'FAILED' ? true : undefined;
  }, 'FAILED');
  t.ok((await admin.irisStats()).calls['GET /api/v1/account_validation'] >= 2);
});

t.test('ops: vendor:add --kind midtrans, vendor:check says OK or why not', async (t) => {
  const add = (code: string, serverKey: string) =>
    ops(stack.env, 'vendor:add', '--sandbox', '--code', code, '--kind', 'midtrans', '--base-url', `${stack.sim.url}/midtrans`, '--server-key', serverKey,
      '--iris-base-url', `${stack.sim.url}/iris`, '--iris-creator-key', MIDTRANS_ACCOUNT.irisCreatorKey, '--iris-approver-key', MIDTRANS_ACCOUNT.irisApproverKey,
      '--iris-merchant-key', MIDTRANS_ACCOUNT.irisMerchantKey, '--iris-approver-totp-secret', MIDTRANS_ACCOUNT.irisApproverTotpSecret, '--json');
  t.equal((await add('mt-cli', MIDTRANS_ACCOUNT.serverKey)).code, 0);
  const good = await ops(stack.env, 'vendor:check', '--code', 'mt-cli', '--json');
  t.equal(good.code, 0, good.stdout + good.stderr);
  t.match(JSON.parse(good.stdout), { ok: true, detail: /server key accepted/ });
  t.notMatch(JSON.parse(good.stdout).detail, /no approver TOTP secret/, 'the approver secret is configured');
  t.match(JSON.parse(good.stdout).detail, /Iris statement read \(today: \d+ lines\)/, 'the statement reconciliation reads is read too');
  t.notMatch(good.stdout + good.stderr, MIDTRANS_ACCOUNT.serverKey, 'the key is never printed');
  const stored = JSON.stringify(await pool.oneFirst(sql.unsafe`select row_to_json(v)::text from vendors v where code = 'mt-cli'`));
  t.notMatch(stored, MIDTRANS_ACCOUNT.irisApproverTotpSecret, 'the TOTP secret is stored sealed with the other credentials');
  const lowercase = await ops(stack.env, 'vendor:add', '--code', 'mt-cli-otp', '--kind', 'midtrans', '--base-url', `${stack.sim.url}/midtrans`, '--server-key', MIDTRANS_ACCOUNT.serverKey,
    '--iris-approver-totp-secret', 'not-base32');
  t.not(lowercase.code, 0, 'a TOTP secret that is not base32 is refused');
  t.match(lowercase.stderr, /iris-approver-totp-secret: base32/);
  t.equal((await add('mt-cli-bad', 'SB-Mid-server-wrong-key')).code, 0);
  const bad = await ops(stack.env, 'vendor:check', '--code', 'mt-cli-bad');
  t.equal(bad.code, 1);
  t.match(bad.stdout, /NOT OK — server key refused: HTTP 401/);
});

t.test('unknown outcomes at Midtrans', async (t) => {
  t.test('charge times out (it was made): the status has no QR to show, the attempt fails; a retry creates the order', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await setFaults(stack.sim.url, { op: 'createQris', mode: 'timeout', count: 1 });
    const body = orderBody(25_000);
    const first = await createOrder(merchant, 0, body);
    t.equal(first.status, 409, first.text);
    const attempt = await pool.one(sql.type(z.object({ id: z.string(), ref_code: z.string() }))`select id, ref_code from orders where merchant_id = ${merchant.merchant_id} and merchant_order_id = ${body.merchant_order_id}`);
    await eventually(async () => ((await pool.oneFirst(sql.unsafe`select status from orders where id = ${attempt.id}`)) === 'FAILED' ? true : undefined), 'the attempt FAILED', 20_000);
    const retry = await createOrder(merchant, 0, body);
    t.equal(retry.status, 201, retry.text);
    t.not(retry.json.data.ref_code, attempt.ref_code);
    await ledgerAudit(t, stack.env);
  });

  t.test('charge answers 5xx (nothing made): the status says 404, the attempt fails', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await setFaults(stack.sim.url, { op: 'createQris', mode: 'error', status: 502, count: 1 });
    const body = orderBody(26_000);
    t.equal((await createOrder(merchant, 0, body)).status, 409);
    const attempt = await pool.one(sql.type(z.object({ id: z.string() }))`select id from orders where merchant_id = ${merchant.merchant_id} and merchant_order_id = ${body.merchant_order_id}`);
    await eventually(async () => ((await pool.oneFirst(sql.unsafe`select status from orders where id = ${attempt.id}`)) === 'FAILED' ? true : undefined), 'the attempt FAILED', 20_000);
    await ledgerAudit(t, stack.env);
  });

  // The rule on unclear answers: the retry reads the order's status (refunds[] by refund_key)
  // before it may send again.
  const refundPosts = async () => (await admin.stats()).calls['POST /v2/:id/refund'] ?? 0;
  const statusAtMidtrans = async (ref: string): Promise<any> =>
    (await fetch(`${stack.sim.url}/midtrans/v2/${ref}/status`, { headers: { authorization: `Basic ${Buffer.from(`${MIDTRANS_ACCOUNT.serverKey}:`).toString('base64')}` } })).json();

  t.test('refund times out (it was made): the retry reads it by refund_key in the status, SUCCEEDED, one POST', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await paidOrder(merchant, 100_000);
    await setFaults(stack.sim.url, { op: 'refund', mode: 'timeout', count: 1 });
    const before = await refundPosts();
    const res = await refund(merchant, ref, 30_000);
    t.equal(res.status, 201, res.text);
    await refundReaches(res.json.data.id, 'SUCCEEDED', 30_000);
    t.equal((await refundPosts()) - before, 1, 'never sent again');
    t.equal((await statusAtMidtrans(ref)).refunds.length, 1, 'one refund at Midtrans');
    t.equal(await balanceOf(stack, merchant), 99_300 - 30_000, 'debited once');
    await ledgerAudit(t, stack.env);
  });

  t.test('refund times out and stays in flight: the re-send answered 406 is never failed, nothing re-credited; done once when Midtrans lists it', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await paidOrder(merchant, 100_000);
    await admin.refundHold(1);
    await setFaults(stack.sim.url, { op: 'refund', mode: 'timeout', count: 1 });
    const before = await refundPosts();
    const res = await refund(merchant, ref, 30_000);
    t.equal(res.status, 201, res.text);
    const id = res.json.data.id;
    const reason = await eventually(() => pool.maybeOneFirst(sql.unsafe`select unresolved_reason from refunds where id = ${id} and unresolved_at is not null`).then((r) => r ?? undefined), 'unresolved', 30_000);
    t.match(reason, /406/, 'the re-send was refused 406 (key in use): left for an operator, not failed');
    t.equal((await refundPosts()) - before, 2, 'the first and one re-send under the same refund_key');
    t.equal((await statusAtMidtrans(ref)).refunds, undefined, 'Midtrans lists nothing while in flight');
    t.match(await pool.one(sql.unsafe`select status from refunds where id = ${id}`), { status: 'PENDING' }, 'never FAILED');
    t.equal(await balanceOf(stack, merchant), 99_300 - 30_000, 'the merchant is not re-credited');
    await admin.refundRelease();
    await refundReaches(id, 'SUCCEEDED', 30_000);
    t.equal((await statusAtMidtrans(ref)).refunds.length, 1, 'one refund at Midtrans');
    t.equal(await balanceOf(stack, merchant), 99_300 - 30_000, 'debited once');
    await ledgerAudit(t, stack.env);
  });

  t.test('refund answers 5xx (nothing made): the status proves it absent, sent again under the same refund_key, SUCCEEDED once', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await paidOrder(merchant, 100_000);
    await setFaults(stack.sim.url, { op: 'refund', mode: 'error', count: 1 });
    const before = await refundPosts();
    const res = await refund(merchant, ref, 20_000);
    t.equal(res.status, 201, res.text);
    await refundReaches(res.json.data.id, 'SUCCEEDED', 30_000);
    t.equal((await refundPosts()) - before, 2, 'the refused one and the one after the read');
    // The approved refund is in flight at Midtrans for SIMULATOR_DISBURSE_DELAY_MS before its
    // status lists it: wait for the listing, then count.
    const listed = await eventually(async () => ((await statusAtMidtrans(ref)).refunds?.length > 0 ? (await statusAtMidtrans(ref)).refunds : undefined), 'the refund listed by the status', 30_000);
    t.equal(listed.length, 1, 'one refund at Midtrans');
    t.equal(await balanceOf(stack, merchant), 99_300 - 20_000, 'debited once');
    await ledgerAudit(t, stack.env);
  });

  t.test('payout create times out (Iris made it): the re-send with the same X-Idempotency-Key recovers it, paid once, never failed over', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await setFaults(stack.sim.url, { op: 'disburse', mode: 'timeout', count: 1 });
    const res = await disburse(merchant, bank(80_000, '1234567890'));
    await disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 25_000);
    const made = (await admin.irisStats()).payouts!.filter((p) => p.notes === res.json.data.ref_code);
    t.equal(made.length, 1, 'one payout at Iris');
    t.equal(await balanceOf(stack, merchant), 300_000 - res.json.data.total_debit);
    await ledgerAudit(t, stack.env);
  });

  t.test('approval answers 5xx (not approved): the payout is rejected, FAILED and reversed', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await admin.approveFault('error');
    const res = await disburse(merchant, bank(70_000, '1234567890'));
    await disbursementReaches(merchant, res.json.data.id, 'FAILED', 25_000);
    t.match((await admin.irisStats()).payouts!.find((p) => p.notes === res.json.data.ref_code), { status: 'rejected' });
    t.equal(await balanceOf(stack, merchant), 300_000);
    await ledgerAudit(t, stack.env);
  });

  t.test('approval times out (it was approved): the read finds it approved, the notification completes it, paid once', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await admin.approveFault('timeout');
    const res = await disburse(merchant, bank(60_000, '1234567890'));
    await disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 25_000);
    const made = (await admin.irisStats()).payouts!.filter((p) => p.notes === res.json.data.ref_code);
    t.same(made.map((p) => p.status), ['completed'], 'one payout');
    t.equal(await balanceOf(stack, merchant), 300_000 - res.json.data.total_debit);
    await ledgerAudit(t, stack.env);
  });

  t.test('Iris notifications duplicated and out of order change nothing twice', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await setFaults(stack.sim.url, [{ op: 'callback', mode: 'duplicate_callback', count: 1 }]);
    const res = await disburse(merchant, bank(50_000, '1234567890'));
    await disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 25_000);
    const referenceNo = (await admin.irisStats()).payouts!.find((p) => p.notes === res.json.data.ref_code)!.reference_no;
    await eventually(async () => ((await admin.irisStats()).notified.filter((n) => n === `${referenceNo}:completed`).length >= 1 && (await callbacksFor(res.json.data.ref_code)).length === 1 ? true : undefined), 'recorded once');
    t.equal(await balanceOf(stack, merchant), 300_000 - res.json.data.total_debit, 'debited once');
    await ledgerAudit(t, stack.env);
  });

  t.test('every Iris notification lost: reconciliation reads the payout by its reference_no, SUCCESS, paid once', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await setFaults(stack.sim.url, { op: 'callback', mode: 'drop_callback' });
    const res = await disburse(merchant, bank(60_000, '1234567890'));
    t.equal(res.status, 201, res.text);
    const done = await disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 30_000);
    t.same(await callbacksFor(res.json.data.ref_code), [], 'no notification reached Kasir');
    const payouts = (await admin.irisStats()).payouts!.filter((p) => p.notes === res.json.data.ref_code);
    t.equal(payouts.length, 1, 'one payout at Iris');
    t.equal(done.vendor_disbursement_id, payouts[0].reference_no);
    t.equal(await balanceOf(stack, merchant), 300_000 - res.json.data.total_debit, 'debited once');
    await ledgerAudit(t, stack.env);
  });

  t.test('a signed Iris "failed" for a payout Iris still processes: 503, nothing reversed (only the read moves money)', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    // An account ending 7777 stays approved (in process) at the simulator's Iris.
    const res = await disburse(merchant, bank(40_000, '1234567777'));
    t.equal(res.status, 201, res.text);
    const payout = await eventually(async () => (await admin.irisStats()).payouts!.find((p) => p.notes === res.json.data.ref_code && p.status === 'approved'), 'approved at Iris');
    // Signed with the merchant key, as a merchant with its own Iris account on a route could.
    const body = JSON.stringify({ reference_no: payout.reference_no, amount: '40000.00', status: 'failed', error_code: '002', updated_at: new Date().toISOString() });
    const forged = await call(stack.api.url, { path: `/callbacks/${stack.code}`, headers: { 'content-type': 'application/json', 'iris-signature': createHash('sha512').update(`${body}${MIDTRANS_ACCOUNT.irisMerchantKey}`).digest('hex') }, body });
    t.equal(forged.status, 503, 'answered so that Iris would retry; not applied');
    t.equal(await pool.oneFirst(sql.unsafe`select status from disbursements where id = ${res.json.data.id}`), 'ON_PROCESS', 'still in flight');
    t.equal(await balanceOf(stack, merchant), 300_000 - res.json.data.total_debit, 'the debit stays: nothing put back');
    await ledgerAudit(t, stack.env);
  });

  // The rule on unclear answers, where no read can help: Iris finds payouts by its reference_no
  // only, and a worker that stopped between claiming Iris and storing Iris's answer holds none.
  t.test('a payout in flight at Iris without a reference_no is unresolvable: it waits for an operator, who settles it', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await fund(merchant, 300_000);
    await setMoneySettings(pool, merchant.merchant_id, { review_threshold: 1 });
    const res = await disburse(merchant, bank(40_000, '1234567890'));
    t.equal(res.json.data.status, 'IN_REVIEW', res.text);
    const id = res.json.data.id;
    // What a claim leaves when the process dies during the call: in flight at Iris, call pending.
    await pool.query(sql.unsafe`
      update disbursements set status = 'ON_PROCESS', vendor_code = ${stack.code}, vendor_call_pending = true, vendors_tried = ${sql.array([stack.code], 'text')}
      where id = ${id}`);
    // What is sent: Iris's writes. Reads may still come from an earlier subtest's payout in
    // flight (its retry reads it by its own reference), and move nothing.
    const irisCalls = async () => Object.entries((await admin.irisStats()).calls).filter(([call]) => call.startsWith('POST ')).reduce((a, [, n]) => a + n, 0);
    const before = await irisCalls();
    await sendJob(stack.api.ctx.boss, 'disbursement-reconcile', { disbursement_id: id });
    const reason = await eventually(() => pool.maybeOneFirst(sql.unsafe`select unresolved_reason from disbursements where id = ${id} and unresolved_at is not null`).then((r) => r ?? undefined), 'unresolved', 20_000);
    t.match(reason, /reference_no only/);
    t.equal(await irisCalls(), before, 'nothing sent to Iris, nor anywhere else');
    t.equal(await pool.oneFirst(sql.unsafe`select status from disbursements where id = ${id}`), 'ON_PROCESS', 'the money stays in flight');
    const listed = JSON.parse((await ops(stack.env, 'unresolved:list', '--json')).stdout);
    t.match(listed.filter((r: { ref_code: string }) => r.ref_code === res.json.data.ref_code), [{ kind: 'DISBURSEMENT', vendor_code: stack.code, amount: 40_000 }]);
    const settled = await ops(stack.env, 'payouts:settle', '--ref', res.json.data.ref_code, '--outcome', 'FAILED', '--reason', 'no such payout in the Iris dashboard', '--evidence', 'Iris dashboard search');
    t.equal(settled.code, 0, settled.stdout + settled.stderr);
    await disbursementReaches(merchant, id, 'FAILED');
    t.equal(await balanceOf(stack, merchant), 300_000, 'the debit returned once');
    await ledgerAudit(t, stack.env);
  });

  t.test('a forged Iris notification is refused (401) and recorded nowhere', async (t) => {
    const body = JSON.stringify({ reference_no: 'abc', amount: '10000.00', status: 'completed', updated_at: '2026-01-01T00:00:00Z' });
    const res = await call(stack.api.url, { path: `/callbacks/${stack.code}`, headers: { 'content-type': 'application/json', 'iris-signature': createHash('sha512').update(`${body}IRIS-merchant-forger`).digest('hex') }, body });
    t.equal(res.status, 401, res.text);
    t.equal(((await pool.anyFirst(sql.unsafe`select event_id from vendor_callbacks where event_id like 'iris:abc:%'`)) as unknown[]).length, 0);
  });
});

t.test('fields Midtrans does not sign are not believed', async (t) => {
  const notifyUrl = `/callbacks/${stack.code}`;
  /** A notification signed with the account's server key over order_id + status_code + gross_amount, the rest as given. */
  const signedNotification = (fields: { order_id: string; status_code: string; gross_amount: string } & Record<string, unknown>) =>
    call(stack.api.url, {
      path: notifyUrl,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...fields, signature_key: createHash('sha512').update(`${fields.order_id}${fields.status_code}${fields.gross_amount}${MIDTRANS_ACCOUNT.serverKey}`).digest('hex') }),
    });

  t.test('a signed pending notification edited to settlement: acted on only through the re-read; a failed re-read is 503', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const created = await createOrder(merchant, 60_000);
    const ref = created.json.data.ref_code;
    // The pending notification Midtrans signed, with its status edited (the signature does not cover it).
    const edited = { order_id: ref, status_code: '201', gross_amount: '60000.00', transaction_status: 'settlement', transaction_id: randomUUID(), settlement_time: '2026-01-01 10:00:00' };
    for (const rule of [{ op: 'queryQris', mode: 'error' }, { op: 'queryQris', mode: 'reject', status: 429 }, { op: 'queryQris', mode: 'reject', status: 400 }]) {
      await setFaults(stack.sim.url, rule);
      const res = await signedNotification(edited);
      t.equal(res.status, 503, `status re-read answered ${rule.mode} ${rule.status ?? 500}: 503, so Midtrans sends it again`);
      await clearFaults(stack.sim.url);
    }
    t.equal((await getOrder(merchant, ref)).json.data.status, 'PENDING', 'the order is not paid on the notification’s word');
    const reread = await signedNotification(edited);
    t.equal(reread.status, 200, 'Midtrans answers the re-read: the notification is noted');
    t.equal((await getOrder(merchant, ref)).json.data.status, 'PENDING', 'the re-read says pending, and that is what counts');
    t.equal(await balanceOf(stack, merchant), 0);
    await ledgerAudit(t, stack.env);
  });

  t.test("refunds come from the re-read only, and only the order's own: another merchant's pending refund is untouched", async (t) => {
    // Merchant A: a paid order with a refund Midtrans made.
    const a = await makeMerchant(stack.api.ctx);
    const orderA = await paidOrder(a, 100_000);
    const refundA = await refund(a, orderA, 30_000);
    await refundReaches(refundA.json.data.id, 'SUCCEEDED');
    // Merchant B: a refund that never reached Midtrans (its refund calls answer 500), PENDING.
    const b = await makeMerchant(stack.api.ctx);
    const orderB = await paidOrder(b, 50_000);
    await setFaults(stack.sim.url, { op: 'refund', mode: 'error' });
    const refundB = await refund(b, orderB, 20_000);
    t.equal(refundB.status, 201, refundB.text);
    const refB: string = refundB.json.data.ref_code;
    const balanceB = await balanceOf(stack, b);

    // A notification signed for A's order (its current status), naming B's refund in the unsigned body.
    const edited = { order_id: orderA, status_code: '200', gross_amount: '100000.00', transaction_status: 'partial_refund', refund_key: refB, transaction_id: randomUUID() };
    const res = await signedNotification(edited);
    t.equal(res.status, 200, res.text);
    t.equal(await pool.oneFirst(sql.unsafe`select status from refunds where id = ${refundB.json.data.id}`), 'PENDING', "B's refund is not completed by A's notification");

    // Even a refund Midtrans does list under A's order completes nothing of another order's.
    const auth = `Basic ${Buffer.from(`${MIDTRANS_ACCOUNT.serverKey}:`).toString('base64')}`;
    const listed = await fetch(`${stack.sim.url}/midtrans/v2/${orderA}/refund`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json', 'x-sim-fault': 'latency;latency_ms=0' },
      body: JSON.stringify({ refund_key: refB, amount: 1_000 }),
    });
    t.equal(listed.status, 200, 'Midtrans lists a refund keyed like B’s under A’s order');
    const conflict = await eventually(
      async () => (await pool.maybeOne(sql.type(z.object({ kind: z.string(), vendor_code: z.string() }))`select kind, vendor_code from vendor_conflicts where reference = ${refB}`)) ?? undefined,
      'the notification of that refund recorded as a conflict',
    );
    t.same(conflict, { kind: 'NOT_ITS_RECORD', vendor_code: stack.code }, 'a refund of another order: recorded, not applied');
    t.equal(await pool.oneFirst(sql.unsafe`select status from refunds where id = ${refundB.json.data.id}`), 'PENDING');
    t.equal(await balanceOf(stack, b), balanceB, "B's money did not move");
    await ledgerAudit(t, stack.env);
  });
});
