// Xendit end to end: the real API and worker processes, the simulator process speaking Xendit
// (and a second, native simulator vendor behind it for failover and name checks), webhooks to
// a real receiver and the ops CLI. Every money test ends with the ledger audit.
import t from 'tap';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { accountHolder } from '../../gateways/simulator/magic.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { bankPayout, merchantApi } from '../helpers/merchant-api.ts';
import { balanceOf, ledgerAudit } from '../helpers/money.ts';
import { ops } from '../helpers/processes.ts';
import { clearFaults, setFaults, simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { nativeSimulatorVendor, startVendorStack } from '../helpers/vendor-stack.ts';
import { XENDIT_ACCOUNT, xenditDialectVendor, xenditStats } from '../helpers/xendit.ts';

const stack = await startVendorStack(t, [
  xenditDialectVendor('xendit'),
  nativeSimulatorVendor('sim'),
]);
const xendit = stack.sims[0].url;
const native = stack.sims[1].url;
const pool = stack.api.ctx.pool;
const m = merchantApi(stack, 'XND');

t.beforeEach(async () => {
  await clearFaults(xendit);
  await clearFaults(native);
});

async function calls(route: string) {
  return (await xenditStats(xendit)).calls[route] ?? 0;
}

const vendorOf = (ref: string) => pool.oneFirst(sql.unsafe`select vendor_code from orders where ref_code = ${ref}`);

t.test('QRIS: create, pay, qr.payment callback (delivered twice), PAID once, credited, one webhook', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
  const created = await m.createOrder(merchant, 100_000);
  t.equal(created.status, 201, created.text);
  const order = created.json.data;
  t.match(order.qris_string, /^000201/, 'the qr_string of POST /qr_codes');
  t.equal(await vendorOf(order.ref_code), 'xendit');
  t.equal((await simulatePay(xendit, { reference: order.ref_code }, { 'x-sim-fault': 'duplicate_callback' })).status, 200);
  await m.orderReaches(merchant, order.ref_code, 'PAID');
  t.equal(await balanceOf(stack, merchant), 99_300, 'credited amount − MDR');
  const [hook] = await receiver.waitFor(1, 10_000);
  t.match(hook.json, { ref_code: order.ref_code, status: 'PAID' });
  // The second delivery of the same qr.payment is recognised by its payment id.
  const payment = await eventually(async () => {
    const rows = await pool.any(sql.unsafe`select event_id from vendor_callbacks where vendor_code = 'xendit' and reference = ${order.ref_code}`);
    return rows.length === 1 ? rows : undefined;
  }, 'one recorded callback');
  t.match((payment[0] as { event_id: string }).event_id, /^xendit:qrpy_/);
  const paidEvents = await pool.oneFirst(sql.unsafe`select count(*)::int from order_events e join orders o on o.id = e.order_id where o.ref_code = ${order.ref_code} and e.event = 'order.paid'`);
  t.equal(paidEvents, 1, 'PAID once');
  t.equal(receiver.received.length, 1, 'one order.paid webhook');
  await ledgerAudit(t, stack.env);
});

t.test('a callback with a wrong or missing token is refused (401) and recorded nowhere', async (t) => {
  const body = JSON.stringify({ event: 'qr.payment', api_version: '2022-07-31', data: { id: 'qrpy_forged', qr_id: 'qr_x', reference_id: 'ORD-NOPE', amount: 1000, status: 'SUCCEEDED', created: new Date().toISOString() } });
  const before = await pool.oneFirst(sql.unsafe`select count(*)::int from vendor_callbacks`);
  const tokens: Record<string, string>[] = [{ 'x-callback-token': `${XENDIT_ACCOUNT.callbackToken}x` }, {}, { 'x-callback-token': XENDIT_ACCOUNT.callbackToken.slice(0, -1) }];
  for (const headers of tokens) {
    const res = await call(stack.api.url, { path: '/callbacks/xendit', headers: { 'content-type': 'application/json', ...headers }, body });
    t.equal(res.status, 401);
    t.equal(res.json?.error?.code, 'INVALID_SIGNATURE');
  }
  t.equal(await pool.oneFirst(sql.unsafe`select count(*)::int from vendor_callbacks`), before, 'nothing recorded');
  // An authentic event Kasir does not act on is acknowledged, so Xendit stops retrying it.
  const other = await call(stack.api.url, {
    path: '/callbacks/xendit',
    headers: { 'content-type': 'application/json', 'x-callback-token': XENDIT_ACCOUNT.callbackToken },
    body: JSON.stringify({ event: 'payout.reversed', data: { id: 'disb-x', reference_id: 'DSB-X', status: 'REVERSED' } }),
  });
  t.equal(other.status, 200, other.text);
});

t.test('partial refunds: each PENDING at Xendit, then completed by its qr.refund callback (matched by Xendit\'s refund id); never sent twice', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const ref = await m.paidByQuery(merchant, 100_000, xendit);
  const before = await calls('POST /qr_codes/payments/:paymentId/refunds');
  const first = await m.refund(merchant, ref, { amount: 30_000, reason: 'one item out of stock' });
  t.equal(first.status, 201, first.text);
  const second = await m.refund(merchant, ref, { amount: 20_000 });
  t.equal(second.status, 201, second.text);
  await m.refundReaches(first.json.data.id, 'SUCCEEDED');
  await m.refundReaches(second.json.data.id, 'SUCCEEDED');
  t.equal((await calls('POST /qr_codes/payments/:paymentId/refunds')) - before, 2, 'one POST per refund');
  const ids = await pool.anyFirst(sql.unsafe`select vendor_refund_id from refunds where id in (${first.json.data.id}, ${second.json.data.id})`);
  const made = (await xenditStats(xendit)).refunds.filter((r) => ids.includes(r.id));
  t.same(made.map((r) => [r.refund_amount, r.status]).sort(), [[20_000, 'SUCCEEDED'], [30_000, 'SUCCEEDED']], "each stored under Xendit's own id");
  const sources = await pool.anyFirst(sql.unsafe`select e.source from order_events e join orders o on o.id = e.order_id where o.ref_code = ${ref} and e.event = 'refund.succeeded'`);
  t.same(sources, ['callback:xendit', 'callback:xendit'], 'completed by the qr.refund callbacks, which carry no Kasir reference');
  t.equal(await balanceOf(stack, merchant), 99_300 - 50_000, 'both debited once');
  t.equal((await m.getOrder(merchant, ref)).json.data.status, 'PAID', 'partly refunded: still PAID');
  await ledgerAudit(t, stack.env);
});

t.test('a refund Xendit fails by callback is FAILED and its money returned', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const ref = await m.paidByQuery(merchant, 50_000, xendit);
  // Xendit's test mode fails a refund of 20300 with INELIGIBLE_TRANSACTION, by callback.
  const refund = await m.refund(merchant, ref, { amount: 20_300 });
  t.equal(refund.status, 201, refund.text);
  await m.refundReaches(refund.json.data.id, 'FAILED');
  t.equal(await pool.oneFirst(sql.unsafe`select failure_reason from refunds where id = ${refund.json.data.id}`), 'INELIGIBLE_TRANSACTION');
  t.equal(await balanceOf(stack, merchant), 49_650, 'the held amount returned');
  await ledgerAudit(t, stack.env);
});

t.test('payouts: a bank payout SUCCEEDED, an e-wallet payout SUCCEEDED, a failed one reversed', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await m.fund(merchant, 1_000_000);
  const ok = await m.disburse(merchant, bankPayout(150_000, '1234567890'));
  t.equal(ok.status, 201, ok.text);
  const wallet = await m.disburse(merchant, { channel: 'EWALLET', ewallet_provider: 'DANA', ewallet_phone: '081234567890', amount: 50_000 });
  t.equal(wallet.status, 201, wallet.text);
  const bad = await m.disburse(merchant, bankPayout(100_000, '1234560000'));
  t.equal(bad.status, 201, bad.text);
  const done = await m.disbursementReaches(merchant, ok.json.data.id, 'SUCCESS');
  t.match(done.vendor_disbursement_id, /^disb-/, "Xendit's payout id");
  await m.disbursementReaches(merchant, wallet.json.data.id, 'SUCCESS');
  await m.disbursementReaches(merchant, bad.json.data.id, 'FAILED');
  t.equal(await pool.oneFirst(sql.unsafe`select failure_reason from disbursements where id = ${bad.json.data.id}`), 'INVALID_DESTINATION', "Xendit's failure_code");
  t.equal(await balanceOf(stack, merchant), 1_000_000 - ok.json.data.total_debit - wallet.json.data.total_debit, 'the failed one returned in full');
  await ledgerAudit(t, stack.env);
});

t.test('a name check: Xendit has no inquiry, so the next routed vendor answers it', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const res = await call(stack.api.url, { path: '/v1/beneficiaries', headers: { 'x-api-key': merchant.api_key }, body: { channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: accountHolder('1234567890') } });
  t.equal(res.status, 201, res.text);
  const verified = await eventually(async () => {
    const got = await call(stack.api.url, { path: `/v1/beneficiaries/${res.json.data.id}`, headers: { 'x-api-key': merchant.api_key } });
    return got.json?.data?.verification_status === 'VERIFIED' ? got.json.data : undefined;
  }, 'VERIFIED');
  t.equal(verified.verified_name, accountHolder('1234567890'));
});

t.test('failover: Xendit rate-limits every create (429), orders go to the next vendor, and come back once it recovers', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await setFaults(xendit, { op: 'createQris', mode: 'reject', status: 429 });
  const during = await m.createOrder(merchant, 40_000);
  t.equal(during.status, 201, during.text);
  t.equal(await vendorOf(during.json.data.ref_code), 'sim', 'a 429 is failed: Xendit did nothing, the next vendor took it');
  t.equal((await simulatePay(native, { reference: during.json.data.ref_code })).status, 200);
  await m.orderReaches(merchant, during.json.data.ref_code, 'PAID');
  await clearFaults(xendit);
  const after = await m.createOrder(merchant, 40_000);
  t.equal(after.status, 201, after.text);
  t.equal(await vendorOf(after.json.data.ref_code), 'xendit', 'back to Xendit');
  await ledgerAudit(t, stack.env);
});

t.test('ops: vendor:add --kind xendit, vendor:check proves each permission the key needs or says which is missing', async (t) => {
  const add = (code: string, key: string) =>
    ops(stack.env, 'vendor:add', '--sandbox', '--code', code, '--kind', 'xendit', '--base-url', `${xendit}/xendit`, '--secret-key', key, '--callback-token', XENDIT_ACCOUNT.callbackToken, '--json');
  t.equal((await add('xendit-cli', XENDIT_ACCOUNT.secretKey)).code, 0);
  const good = await ops(stack.env, 'vendor:check', '--code', 'xendit-cli', '--json');
  t.equal(good.code, 0, good.stdout + good.stderr);
  t.match(JSON.parse(good.stdout), { code: 'xendit-cli', kind: 'xendit', ok: true, detail: /balance read/ });
  t.equal((await add('xendit-bad', 'xnd_development_not_this_one')).code, 0);
  const bad = await ops(stack.env, 'vendor:check', '--code', 'xendit-bad');
  t.equal(bad.code, 1);
  t.match(bad.stdout, /xendit-bad \(xendit\): NOT OK — HTTP 401 INVALID_API_KEY/);
  t.notMatch(bad.stdout + bad.stderr, /xnd_development_not_this_one/, 'the key is never printed');

  // Every permission Kasir's key will use is probed, not the balance alone: a key made without
  // Transaction read (or Money-out write) fails the check, naming what to grant.
  t.match(JSON.parse(good.stdout).detail, /transactions list.*QR code read.*QR code create.*payout read.*payout create/, 'six probes, each proved');
  const withdraw = (withdrawn: string[]) => fetch(`${xendit}/xendit/admin/permissions`, { method: 'POST', body: JSON.stringify({ withdrawn }) });
  t.equal((await withdraw(['Transaction: Read', 'Money-out: Write'])).status, 200);
  t.teardown(async () => void (await withdraw([])));
  const partial = await ops(stack.env, 'vendor:check', '--code', 'xendit-cli', '--json');
  t.equal(partial.code, 1, 'a key missing a permission fails the check');
  const said = JSON.parse(partial.stdout);
  t.equal(said.ok, false);
  t.match(said.detail, /transactions list \(daily reconciliation\): HTTP 403 REQUEST_FORBIDDEN_ERROR; grant the key "Transaction: Read"/);
  t.match(said.detail, /payout create: HTTP 403 REQUEST_FORBIDDEN_ERROR; grant the key "Money-out: Write"/);
  t.notMatch(said.detail, /Balance: Read"/, 'what the key may do is not listed as missing');
  t.equal((await withdraw([])).status, 200);
  t.equal((await ops(stack.env, 'vendor:check', '--code', 'xendit-cli')).code, 0, 'granted again: OK');

  // simulate:pay pays a QR the Xendit dialect made, as it does the built-in simulator's.
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await m.createOrder(merchant, 30_000);
  const paid = await ops(stack.env, 'simulate:pay', '--ref', created.json.data.ref_code);
  t.equal(paid.code, 0, paid.stderr);
  t.match(paid.stdout, /paid ORD-\S+ at xendit/);
  await m.orderReaches(merchant, created.json.data.ref_code, 'PAID');
});

t.test('unknown outcomes at Xendit', async (t) => {
  t.test('QR create times out (the QR was made): Xendit cannot find it by reference, the attempt fails; a retry creates the order', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await setFaults(xendit, { op: 'createQris', mode: 'timeout', count: 1 });
    const body = m.orderBody(25_000);
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

  t.test('QR create answers 500 SERVER_ERROR (test-mode amount 10102): never sent elsewhere, the attempt fails', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const body = m.orderBody(10_102);
    const first = await call(stack.api.url, { path: '/v1/orders', headers: { 'x-api-key': merchant.api_key }, body });
    t.equal(first.status, 409, first.text);
    const attempt = await pool.one(sql.type(z.object({ id: z.string() }))`select id from orders where merchant_id = ${merchant.merchant_id} and merchant_order_id = ${body.merchant_order_id}`);
    await eventually(async () => ((await pool.oneFirst(sql.unsafe`select status from orders where id = ${attempt.id}`)) === 'FAILED' ? true : undefined), 'the attempt FAILED', 20_000);
    t.equal(await pool.oneFirst(sql.unsafe`select vendor_code from orders where id = ${attempt.id}`), null, 'no other vendor was asked');
  });

  t.test('payout answers 5xx (nothing done): not found by reference, sent again under the same key, SUCCESS, one payout', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await m.fund(merchant, 300_000);
    await setFaults(xendit, { op: 'disburse', mode: 'error', count: 1 });
    const before = await calls('POST /v2/payouts');
    const res = await m.disburse(merchant, bankPayout(80_000, '1234567890'));
    t.equal(res.status, 201, res.text);
    await m.disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 25_000);
    t.equal((await calls('POST /v2/payouts')) - before, 2, 'the failed one and the one that went through');
    await ledgerAudit(t, stack.env);
  });

  t.test('payout times out (it was made): found by reference, SUCCESS, never sent twice', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await m.fund(merchant, 300_000);
    await setFaults(xendit, { op: 'disburse', mode: 'timeout', count: 1 });
    const before = await calls('POST /v2/payouts');
    const res = await m.disburse(merchant, bankPayout(90_000, '1234567890'));
    t.equal(res.status, 201, res.text);
    await m.disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 25_000);
    t.equal((await calls('POST /v2/payouts')) - before, 1, 'one payout');
    await ledgerAudit(t, stack.env);
  });

  // Issue 29 finding 1: Xendit's QR refund endpoint documents only `amount` (no idempotency
  // key, no metadata echoed, no lookup by Kasir's reference), so a refund is POSTed once and
  // found again only by the id Xendit answered with.
  const refundPosts = () => calls('POST /qr_codes/payments/:paymentId/refunds');
  const unresolvedOf = (id: string) => pool.maybeOneFirst(sql.unsafe`select unresolved_reason from refunds where id = ${id} and unresolved_at is not null`);

  t.test('refund times out (it was made): never POSTed again; it waits for an operator, who settles it', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await m.paidByQuery(merchant, 100_000, xendit);
    await setFaults(xendit, { op: 'refund', mode: 'timeout', count: 1 });
    const before = await refundPosts();
    const refund = await m.refund(merchant, ref, { amount: 30_000 });
    t.equal(refund.status, 201, refund.text);
    const reason = await eventually(() => unresolvedOf(refund.json.data.id).then((r) => r ?? undefined), 'the refund unresolved', 40_000);
    t.match(reason, /never answered/);
    t.equal((await refundPosts()) - before, 1, 'one POST: a second would be a second refund');
    t.equal(await pool.oneFirst(sql.unsafe`select status from refunds where id = ${refund.json.data.id}`), 'PENDING', 'its money stays held');
    const listed = await ops(stack.env, 'unresolved:list', '--json');
    t.equal(listed.code, 0, listed.stderr);
    t.match(JSON.parse(listed.stdout), [{ kind: 'REFUND', ref_code: refund.json.data.ref_code, vendor_code: 'xendit', amount: 30_000 }]);
    // Xendit made it (its dashboard shows it): the operator settles it with that evidence.
    const made = (await xenditStats(xendit)).refunds.find((r) => r.refund_amount === 30_000 && r.status === 'SUCCEEDED');
    t.ok(made, 'Xendit did make it, and completed it');
    const settled = await ops(stack.env, 'refunds:settle', '--ref', refund.json.data.ref_code, '--outcome', 'SUCCEEDED', '--reason', 'on the Xendit dashboard', '--evidence', `refund ${made!.id}`, '--vendor-id', made!.id);
    t.equal(settled.code, 0, settled.stdout + settled.stderr);
    await m.refundReaches(refund.json.data.id, 'SUCCEEDED');
    t.equal((await refundPosts()) - before, 1, 'still one POST');
    t.equal(await balanceOf(stack, merchant), 99_300 - 30_000, 'debited once');
    t.same(JSON.parse((await ops(stack.env, 'unresolved:list', '--json')).stdout), [], 'nothing waits any more');
    await ledgerAudit(t, stack.env);
  });

  t.test('refund answers 5xx (nothing made): no read can prove that either; the operator, shown no refund at Xendit, sends it again', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await m.paidByQuery(merchant, 100_000, xendit);
    await setFaults(xendit, { op: 'refund', mode: 'error', count: 1 });
    const before = await refundPosts();
    const refund = await m.refund(merchant, ref, { amount: 25_000 });
    t.equal(refund.status, 201, refund.text);
    await eventually(() => unresolvedOf(refund.json.data.id).then((r) => r ?? undefined), 'the refund unresolved', 40_000);
    t.equal((await refundPosts()) - before, 1, 'not sent again by itself');
    const refused = await ops(stack.env, 'refunds:resend', '--ref', 'RFD-1-NOPE', '--evidence', 'nothing at Xendit');
    t.equal(refused.code, 1);
    const resent = await ops(stack.env, 'refunds:resend', '--ref', refund.json.data.ref_code, '--evidence', 'no refund on the Xendit dashboard');
    t.equal(resent.code, 0, resent.stdout + resent.stderr);
    await m.refundReaches(refund.json.data.id, 'SUCCEEDED', 40_000);
    t.equal((await refundPosts()) - before, 2, 'sent once more, on the operator\'s word');
    t.equal((await xenditStats(xendit)).refunds.filter((r) => r.refund_amount === 25_000).length, 1, 'one refund at Xendit');
    t.equal(await balanceOf(stack, merchant), 99_300 - 25_000, 'debited once');
    await ledgerAudit(t, stack.env);
  });

  t.test('refund PENDING and its callback lost: the retry reads it by Xendit\'s id, SUCCEEDED, one POST', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    const ref = await m.paidByQuery(merchant, 100_000, xendit);
    await setFaults(xendit, { op: 'callback', mode: 'drop_callback', count: 1 });
    const before = await refundPosts();
    const refund = await m.refund(merchant, ref, { amount: 15_000 });
    t.equal(refund.status, 201, refund.text);
    await m.refundReaches(refund.json.data.id, 'SUCCEEDED', 40_000);
    t.equal((await refundPosts()) - before, 1, 'one POST');
    t.equal((await xenditStats(xendit)).calls['GET /qr_codes/payments/:paymentId/refunds/:refundId'] > 0, true, 'read by its id');
    const source = await pool.oneFirst(sql.unsafe`select e.source from order_events e join orders o on o.id = e.order_id where o.ref_code = ${ref} and e.event = 'refund.succeeded'`);
    t.equal(source, 'reconcile:xendit');
    t.equal(await balanceOf(stack, merchant), 99_300 - 15_000, 'debited once');
    await ledgerAudit(t, stack.env);
  });
});

// Issue 36 finding 3: a payout Xendit reverses after it succeeded (payout.reversed: the bank
// bounced it and the money is back in the platform's Xendit balance) returns the merchant's
// debit through the ledger, once, and only when Xendit's own read of the payout shows REVERSED.
t.test('payouts reversed by Xendit after success', async (t) => {
  const returned = (id: string) => pool.oneFirst(sql.unsafe`select count(*)::int from ledger_transfers where kind = 'DISBURSEMENT_RETURNED' and reference_id = ${id}`);
  const referenceOf = (id: string) => pool.oneFirst(sql.unsafe`select reference from payout_references where payout_id = ${id}`) as Promise<string>;
  const reversal = (data: Record<string, unknown>) =>
    call(stack.api.url, {
      path: '/callbacks/xendit',
      headers: { 'content-type': 'application/json', 'x-callback-token': XENDIT_ACCOUNT.callbackToken },
      body: JSON.stringify({ event: 'payout.reversed', business_id: 'b', created: new Date().toISOString(), data: { currency: 'IDR', status: 'REVERSED', ...data } }),
    });

  t.test('reversed (account …6666): FAILED with REVERSED, the debit back once with its webhook; the callback again moves nothing', async (t) => {
    const receiver = await startCallbackReceiver();
    t.teardown(() => receiver.close());
    const merchant = await makeMerchant(stack.api.ctx, { notifyUrl: receiver.url });
    await m.fund(merchant, 1_000_000);
    const res = await m.disburse(merchant, bankPayout(150_000, '1234566666'));
    t.equal(res.status, 201, res.text);
    const d = res.json.data;
    const failed = await m.disbursementReaches(merchant, d.id, 'FAILED', 25_000);
    t.equal(failed.failure_reason, 'REVERSED', 'the spec has no status for it: FAILED, saying why');
    const events = await pool.any(sql.unsafe`select status, source from disbursement_events where disbursement_id = ${d.id} order by id`);
    t.match(events.slice(-2), [{ status: 'SUCCESS', source: 'callback:xendit' }, { status: 'FAILED', source: 'callback:xendit' }], 'delivered, then reversed');
    t.equal(await balanceOf(stack, merchant), 1_000_000, 'the whole debit (amount and fee) back in the wallet');
    t.equal(await returned(d.id), 1, 'one DISBURSEMENT_RETURNED');
    const hook = await eventually(async () => receiver.received.find((h) => h.json?.id === d.id && h.json?.event === 'disbursement.failed'), 'the disbursement.failed webhook');
    t.match(hook.json, { status: 'FAILED', failure_reason: 'REVERSED' });
    const webhooks = () => pool.anyFirst(sql.unsafe`select event from webhook_deliveries where disbursement_id = ${d.id} order by created_at, event`);
    t.same((await webhooks()).filter((e) => e === 'disbursement.success' || e === 'disbursement.failed').sort(), ['disbursement.failed', 'disbursement.success'], 'one webhook per status');
    const hooksBefore = (await webhooks()).length;

    // Xendit delivers the callback again (and again): recognised, nothing moves twice.
    const again = { id: failed.vendor_disbursement_id, reference_id: await referenceOf(d.id), amount: 150_000 };
    for (let i = 0; i < 2; i++) t.equal((await reversal(again)).status, 200);
    t.equal(await balanceOf(stack, merchant), 1_000_000, 'credited once');
    t.equal(await returned(d.id), 1, 'still one DISBURSEMENT_RETURNED');
    t.equal((await webhooks()).length, hooksBefore, 'no further webhook');
    await ledgerAudit(t, stack.env);
  });

  t.test('a forged payout.reversed (Xendit\'s read shows the payout SUCCEEDED) moves nothing and is recorded UNCONFIRMED', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await m.fund(merchant, 500_000);
    const res = await m.disburse(merchant, bankPayout(120_000, '1234567890'));
    t.equal(res.status, 201, res.text);
    const done = await m.disbursementReaches(merchant, res.json.data.id, 'SUCCESS');
    const balance = await balanceOf(stack, merchant);
    const reference = await referenceOf(done.id);
    // The token is the account holder's to read: anyone holding it can name a real payout.
    const forged = await reversal({ id: done.vendor_disbursement_id, reference_id: reference, amount: 120_000 });
    t.equal(forged.status, 200, forged.text);
    t.equal(forged.json?.data?.result, 'unconfirmed');
    t.equal(await pool.oneFirst(sql.unsafe`select status from disbursements where id = ${done.id}`), 'SUCCESS');
    t.equal(await balanceOf(stack, merchant), balance, 'nothing credited');
    t.equal(await returned(done.id), 0);
    const conflict = await pool.one(sql.unsafe`select kind, record_type, vendor_status, detail from vendor_conflicts where record_id = ${done.id}`);
    t.match(conflict, { kind: 'UNCONFIRMED', record_type: 'DISBURSEMENT', vendor_status: 'REVERSED', detail: { why: 'NOT_REVERSED', read_status: 'SUCCESS' } });
    // Naming another payout id than the one Xendit holds under the reference: the same.
    const other = await reversal({ id: 'disb-not-this-one', reference_id: reference, amount: 120_000 });
    t.equal(other.json?.data?.result, 'unconfirmed');
    t.equal(await balanceOf(stack, merchant), balance, 'still nothing credited');
    await ledgerAudit(t, stack.env);
  });

  t.test('a reversal Kasir cannot confirm now (Xendit\'s read fails) is answered 503, so Xendit sends it again', async (t) => {
    const merchant = await makeMerchant(stack.api.ctx);
    await m.fund(merchant, 500_000);
    const res = await m.disburse(merchant, bankPayout(60_000, '1234567890'));
    const done = await m.disbursementReaches(merchant, res.json.data.id, 'SUCCESS');
    await setFaults(xendit, { op: 'queryDisbursement', mode: 'error' });
    const answer = await reversal({ id: done.vendor_disbursement_id, reference_id: await referenceOf(done.id), amount: 60_000 });
    t.equal(answer.status, 503, answer.text);
    t.equal(await returned(done.id), 0);
    await ledgerAudit(t, stack.env);
  });
});

// Issue 36 finding 4: any 409 on a payout re-send means Xendit already has it.
t.test('payout still in progress (account …4090): 5xx, not listed, the re-send meets 409 IDEMPOTENCY_KEY_IN_PROGRESS: read back, never failed over, paid once', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await m.fund(merchant, 300_000);
  const before = await calls('POST /v2/payouts');
  const res = await m.disburse(merchant, bankPayout(70_000, '1234564090'));
  t.equal(res.status, 201, res.text);
  const done = await m.disbursementReaches(merchant, res.json.data.id, 'SUCCESS', 30_000);
  t.equal(await pool.oneFirst(sql.unsafe`select vendor_code from disbursements where id = ${done.id}`), 'xendit', 'never sent to the next vendor');
  t.equal((await calls('POST /v2/payouts')) - before, 2, 'the first POST and its re-send under the same key');
  const stats = (await (await fetch(`${xendit}/xendit/admin/stats`)).json()) as { conflicts?: Record<string, number> };
  t.ok((stats.conflicts?.IDEMPOTENCY_KEY_IN_PROGRESS ?? 0) >= 1, 'the re-send was answered 409 IDEMPOTENCY_KEY_IN_PROGRESS');
  t.equal(await pool.oneFirst(sql.unsafe`select vendors_tried from disbursements where id = ${done.id}`).then((v) => (v as string[]).join(',')), 'xendit');
  t.equal(await balanceOf(stack, merchant), 300_000 - res.json.data.total_debit, 'debited once');
  await ledgerAudit(t, stack.env);
});
