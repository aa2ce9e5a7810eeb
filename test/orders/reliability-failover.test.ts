// Failover between QRIS vendors (spec 4.2 rules 5, 6, 8; DESIGN 3 "Create order"): Kasir moves
// to the next vendor only when the first one surely produced nothing usable (4xx, an unusable
// QRIS, connection refused). An unknown outcome (5xx, no answer) is reconciled at the first
// vendor and never sent to the second, which could otherwise issue a second payable QR.
// Two simulator processes, `sima` then `simb` in route priority order.
import t from 'tap';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { attemptsOf, createJobsOf, lookupOrders, newKey, orderBody, postOrder, qrAt } from '../helpers/reliability.ts';
import { clearFaults, setFaults } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { vendors: ['sima', 'simb'] });
const [sima, simb] = stack.sims;
const { url } = stack.api;

async function freshMerchant() {
  return makeMerchant(stack.api.ctx);
}

async function clearAll() {
  await Promise.all(stack.sims.map((s) => clearFaults(s.url)));
}

/** The order was issued by `issuer`'s QR, and `other` has no QR for its reference. */
type Assert = Pick<typeof t, 'equal' | 'not' | 'same' | 'ok'>;

async function assertIssuedBy(t: Assert, order: any, issuer: typeof sima, other: typeof simb) {
  const at = await qrAt(issuer, order.ref_code);
  t.equal(at.status, 200, `${issuer.code} holds a QR for the order's reference`);
  t.equal(at.body.qris_string, order.qris_string, `the order's QRIS is the one ${issuer.code} issued`);
  t.equal(at.body.amount, order.amount, `${issuer.code}'s QR carries the order amount`);
  const elsewhere = await qrAt(other, order.ref_code);
  t.equal(elsewhere.status, 404, `${other.code} has no QR for the order's reference`);
  t.equal(elsewhere.body?.error?.code, 'QR_NOT_FOUND');
}

t.test('a 4xx rejection at the first vendor fails over to the second', async (t) => {
  t.teardown(clearAll);
  await setFaults(sima.url, { op: 'createQris', mode: 'reject', status: 422 });
  const merchant = await freshMerchant();
  const body = orderBody('FO-REJ');

  const res = await postOrder(url, merchant.api_key, body, newKey());
  t.equal(res.status, 201, res.text);
  const order = res.json.data;
  t.equal(order.status, 'PENDING');
  await assertIssuedBy(t, order, simb, sima);

  const read = await call(url, { path: `/v1/orders/${order.ref_code}`, headers: { 'x-api-key': merchant.api_key } });
  t.equal(read.status, 200);
  t.equal(read.json.data.qris_string, order.qris_string, 'the stored order carries the second vendor QRIS');

  const jobs = await eventually(async () => {
    const rows = await createJobsOf(stack.api.ctx.pool, order.id);
    return rows.every((j) => j.state !== 'active') ? rows : undefined;
  }, 'the order-create job to settle');
  t.same(jobs, [{ state: 'completed', retry_count: 0 }], 'the failover happened within one run of the job');
});

t.test('an unusable QRIS from the first vendor fails over to the second', async (t) => {
  t.teardown(clearAll);
  await setFaults(sima.url, { op: 'createQris', mode: 'bad_qris' });
  const merchant = await freshMerchant();
  const body = orderBody('FO-BAD');

  const res = await postOrder(url, merchant.api_key, body, newKey());
  t.equal(res.status, 201, res.text);
  const order = res.json.data;
  t.equal(order.status, 'PENDING');
  const fromB = await qrAt(simb, order.ref_code);
  t.equal(fromB.status, 200, 'simb holds the QR');
  t.equal(order.qris_string, fromB.body.qris_string, "the order's QRIS is simb's, not sima's corrupted one");
  const [attempt] = await attemptsOf(stack.api.ctx.pool, merchant.merchant_id, body.merchant_order_id);
  t.same(attempt.vendors_tried, ['sima', 'simb'], 'sima answered first, with an unusable QRIS');
  t.equal(attempt.vendor_code, 'simb', 'the order is at simb');
});

t.test('a 5xx at the first vendor is an unknown outcome: 409, reconciled there, never sent to the second', async (t) => {
  t.teardown(clearAll);
  await setFaults(sima.url, { op: 'createQris', mode: 'error', status: 500, count: 1 });
  const merchant = await freshMerchant();
  const body = orderBody('FO-5XX');
  const key = newKey();

  const res = await postOrder(url, merchant.api_key, body, key);
  t.equal(res.status, 409, res.text);
  t.equal(res.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');

  const [attempt] = await attemptsOf(stack.api.ctx.pool, merchant.merchant_id, body.merchant_order_id);
  t.same(attempt.vendors_tried, ['sima'], 'only the first vendor was called');
  t.equal((await qrAt(simb, attempt.ref_code)).status, 404, 'simb never saw the reference');
  t.same(await lookupOrders(url, merchant.api_key, body.merchant_order_id), [], 'an unresolved attempt is not listed');

  // The 5xx did no work, so reconciliation at sima finds nothing and fails the attempt there.
  const failed = await eventually(async () => {
    const [a] = await attemptsOf(stack.api.ctx.pool, merchant.merchant_id, body.merchant_order_id);
    return a.status === 'FAILED' ? a : undefined;
  }, 'reconciliation to fail the attempt');
  t.same(failed.vendors_tried, ['sima'], 'reconciliation did not fail over either');
  t.equal((await qrAt(simb, attempt.ref_code)).status, 404, 'simb still never saw the reference');
  t.equal((await qrAt(sima, attempt.ref_code)).status, 404, 'sima has no QR for the failed attempt');

  // Rule 8: the client retries with the same key and body, and gets a new order.
  const retry = await postOrder(url, merchant.api_key, body, key);
  t.equal(retry.status, 201, retry.text);
  t.not(retry.json.data.ref_code, attempt.ref_code, 'the retry is a new attempt');
  await assertIssuedBy(t, retry.json.data, sima, simb);
  const listed = await lookupOrders(url, merchant.api_key, body.merchant_order_id);
  t.same(listed.map((o) => o.ref_code), [retry.json.data.ref_code], 'exactly one order holds the merchant_order_id');
});

t.test('no answer from the first vendor (it did the work): 409, then the order from the first vendor, never the second', async (t) => {
  t.teardown(clearAll);
  await setFaults(sima.url, { op: 'createQris', mode: 'timeout', count: 1 });
  const merchant = await freshMerchant();
  const body = orderBody('FO-TMO');
  const key = newKey();

  const res = await postOrder(url, merchant.api_key, body, key);
  t.equal(res.status, 409, res.text);
  t.equal(res.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');

  const listed = await eventually(async () => {
    const orders = await lookupOrders(url, merchant.api_key, body.merchant_order_id);
    return orders.length > 0 ? orders : undefined;
  }, 'the reconciled order to be listed');
  t.equal(listed.length, 1);
  t.equal(listed[0].status, 'PENDING');
  await assertIssuedBy(t, listed[0], sima, simb);
  const attempts = await attemptsOf(stack.api.ctx.pool, merchant.merchant_id, body.merchant_order_id);
  t.same(attempts.map((a) => a.vendors_tried), [['sima']], 'one attempt, and only sima was ever called');

  const retry = await postOrder(url, merchant.api_key, body, key);
  t.equal(retry.status, 201, retry.text);
  t.same(retry.json.data, listed[0], 'the retry gets the reconciled order');
});

t.test('every vendor rejects: 503 VENDOR_ERROR, and the merchant_order_id can be retried once they recover', async (t) => {
  t.teardown(clearAll);
  await setFaults(sima.url, { op: 'createQris', mode: 'reject' });
  await setFaults(simb.url, { op: 'createQris', mode: 'reject', status: 400 });
  const merchant = await freshMerchant();
  const body = orderBody('FO-ALL');
  const key = newKey();

  const res = await postOrder(url, merchant.api_key, body, key);
  t.equal(res.status, 503, res.text);
  t.equal(res.json?.success, false);
  t.equal(res.json?.error?.code, 'VENDOR_ERROR');
  const [attempt] = await attemptsOf(stack.api.ctx.pool, merchant.merchant_id, body.merchant_order_id);
  t.same(attempt.vendors_tried, ['sima', 'simb'], 'both vendors were tried, in route order');
  t.same(await lookupOrders(url, merchant.api_key, body.merchant_order_id), [], 'no order holds the id');

  const again = await postOrder(url, merchant.api_key, body, key);
  t.equal(again.status, 503, 'a retry while the vendors still reject is 503 again, not a replay of anything stored');
  t.equal(again.json?.error?.code, 'VENDOR_ERROR');

  await clearAll();
  const retry = await postOrder(url, merchant.api_key, body, key);
  t.equal(retry.status, 201, retry.text);
  t.equal(retry.json.data.merchant_order_id, body.merchant_order_id);
  await assertIssuedBy(t, retry.json.data, sima, simb);
  const listed = await lookupOrders(url, merchant.api_key, body.merchant_order_id);
  t.same(listed.map((o) => o.id), [retry.json.data.id], 'the retry is the one order for the id');

  const noKey = await postOrder(url, merchant.api_key, body);
  t.equal(noKey.status, 200, 'without a key the same id now returns the existing order');
  t.equal(noKey.json.data.id, retry.json.data.id);
});

// Last: it stops sima for good.
t.test('the first vendor is down (connection refused): the second issues the order', async (t) => {
  const stopped = await sima.stop();
  t.ok(stopped.code !== null || stopped.signal !== null, 'sima has exited');
  const merchant = await freshMerchant();
  const body = orderBody('FO-DOWN');

  const res = await postOrder(url, merchant.api_key, body, newKey());
  t.equal(res.status, 201, res.text);
  const order = res.json.data;
  t.equal(order.status, 'PENDING');
  const fromB = await qrAt(simb, order.ref_code);
  t.equal(fromB.status, 200, 'simb holds the QR');
  t.equal(order.qris_string, fromB.body.qris_string, "the order's QRIS is simb's");
  const [attempt] = await attemptsOf(stack.api.ctx.pool, merchant.merchant_id, body.merchant_order_id);
  t.same(attempt.vendors_tried, ['sima', 'simb'], 'sima was tried first');
  t.equal(attempt.vendor_code, 'simb');
});
