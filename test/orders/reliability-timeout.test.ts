// Unknown create outcomes at the only vendor (spec 4.2 rules 1, 3, 5, 8; DESIGN 3 "Create
// order", DESIGN 6 "Idempotency-Key"): the merchant gets 409 ORDER_PENDING_CONFIRMATION, every
// create for the id gets 409 while it is unresolved, and order-reconcile asks the vendor what
// it did. Found → the order (listed, and given to a retry with the same key and body). Not
// found → the attempt fails and the same key and body create the order anew. Concurrent
// identical creates make one order and one QR.
import t from 'tap';
import { eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { attemptsOf, lookupOrders, newKey, orderBody, postOrder, qrAt } from '../helpers/reliability.ts';
import { clearFaults, setFaults } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t);
const { sim } = stack;
const { url } = stack.api;
const pool = stack.api.ctx.pool;
const VENDOR_TIMEOUT_MS = Number(stack.env.VENDOR_TIMEOUT_MS);
const DEADLINE_MS = Number(stack.env.ORDER_CREATE_DEADLINE_MS);

t.test('vendor timeout (the vendor did the work): 409, 409 while unresolved, then reconciled to the order', async (t) => {
  t.teardown(() => clearFaults(sim.url));
  await setFaults(sim.url, [
    { op: 'createQris', mode: 'timeout', count: 1 },
    // Holds reconciliation's first query a second (under VENDOR_TIMEOUT_MS), so the attempt is
    // surely still unresolved while the next requests are made.
    { op: 'queryQris', mode: 'latency', latency_ms: 1000, count: 1 },
  ]);
  const merchant = await makeMerchant(stack.api.ctx);
  const body = orderBody('TMO');
  const key = newKey();

  const started = Date.now();
  const res = await postOrder(url, merchant.api_key, body, key);
  const elapsed = Date.now() - started;
  t.equal(res.status, 409, res.text);
  t.equal(res.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
  t.ok(elapsed >= VENDOR_TIMEOUT_MS, `the API waited for the vendor call to time out (${elapsed} ms)`);
  t.comment(`409 after ${elapsed} ms (VENDOR_TIMEOUT_MS ${VENDOR_TIMEOUT_MS}, deadline ${DEADLINE_MS})`);

  // Still unresolved (order-reconcile starts ORDER_RECONCILE_DELAY_SECONDS after the timeout at
  // the earliest, and its query is held a second): any other create for the id is 409, with
  // another key or none.
  const otherKey = await postOrder(url, merchant.api_key, body, newKey());
  t.equal(otherKey.status, 409, `another key while unresolved: ${otherKey.text}`);
  t.equal(otherKey.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
  const noKey = await postOrder(url, merchant.api_key, body);
  t.equal(noKey.status, 409, `no key while unresolved: ${noKey.text}`);
  t.equal(noKey.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
  const [attempt] = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
  t.equal(attempt.status, 'CREATING', 'those answers were given while the attempt was unresolved');

  // Spec 4.2 rule 8: the client reconciles through the lookup before retrying.
  const listed = await eventually(async () => {
    const orders = await lookupOrders(url, merchant.api_key, body.merchant_order_id);
    return orders.length > 0 ? orders : undefined;
  }, 'order-reconcile to confirm the order', 20_000);
  t.comment(`order listed ${Date.now() - started} ms after the POST`);
  t.equal(listed.length, 1, 'one order holds the merchant_order_id');
  const order = listed[0];
  t.equal(order.status, 'PENDING');
  t.equal(order.ref_code, attempt.ref_code, 'it is the attempt the vendor timed out on');
  const atVendor = await qrAt(sim, order.ref_code);
  t.equal(atVendor.status, 200, 'the simulator holds the QR it made before timing out');
  t.equal(order.qris_string, atVendor.body.qris_string, "the order carries the simulator's QRIS");

  const retry = await postOrder(url, merchant.api_key, body, key);
  t.equal(retry.status, 201, `the same key and body get the order: ${retry.text}`);
  t.same(retry.json.data, order, 'the retry answers with that same order');

  const existing = await postOrder(url, merchant.api_key, body);
  t.equal(existing.status, 200, `without a key the existing order is returned: ${existing.text}`);
  t.equal(existing.headers['idempotent-replayed'], undefined);
  t.same(existing.json.data, order);

  t.equal((await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id)).length, 1, 'no other attempt was ever made');
});

t.test('5xx (the vendor did not do the work): 409, reconcile finds nothing, the same key and body then create the order', async (t) => {
  t.teardown(() => clearFaults(sim.url));
  await setFaults(sim.url, { op: 'createQris', mode: 'error', status: 503, count: 1 });
  const merchant = await makeMerchant(stack.api.ctx);
  const body = orderBody('ERR');
  const key = newKey();

  const started = Date.now();
  const res = await postOrder(url, merchant.api_key, body, key);
  t.equal(res.status, 409, res.text);
  t.equal(res.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
  const [attempt] = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
  t.equal((await qrAt(sim, attempt.ref_code)).status, 404, 'the 5xx made no QR');

  const failed = await eventually(async () => {
    const [a] = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
    return a.status !== 'CREATING' ? a : undefined;
  }, 'order-reconcile to resolve the attempt', 20_000);
  t.comment(`attempt resolved ${Date.now() - started} ms after the POST`);
  t.equal(failed.status, 'FAILED', 'the vendor has no record of the create: the attempt fails');
  t.equal(failed.failure_code, 'VENDOR_ERROR');
  t.same(await lookupOrders(url, merchant.api_key, body.merchant_order_id), [], 'a failed attempt is never listed');

  const retry = await postOrder(url, merchant.api_key, body, key);
  t.equal(retry.status, 201, `the id was freed: the retry creates the order: ${retry.text}`);
  const order = retry.json.data;
  t.equal(order.status, 'PENDING');
  t.not(order.ref_code, attempt.ref_code, 'a new attempt with its own reference');
  const atVendor = await qrAt(sim, order.ref_code);
  t.equal(atVendor.status, 200, 'the simulator holds the new QR');
  t.equal(order.qris_string, atVendor.body.qris_string);
  t.equal((await qrAt(sim, attempt.ref_code)).status, 404, 'still nothing for the failed reference');
  const listed = await lookupOrders(url, merchant.api_key, body.merchant_order_id);
  t.same(listed.map((o) => o.id), [order.id], 'exactly one order holds the id');

  const replay = await postOrder(url, merchant.api_key, body, key);
  t.equal(replay.status, 201, 'the key now replays the created order');
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(replay.text, retry.text, 'byte for byte');
});

t.test('two concurrent identical creates while the vendor is slow: one order, one QR', async (t) => {
  t.teardown(() => clearFaults(sim.url));
  await setFaults(sim.url, { op: 'createQris', mode: 'latency', latency_ms: 500 });
  const merchant = await makeMerchant(stack.api.ctx);

  t.test('same Idempotency-Key and body: both get the one order', async (t) => {
    const body = orderBody('CONC-KEY');
    const key = newKey();
    const [a, b] = await Promise.all([postOrder(url, merchant.api_key, body, key), postOrder(url, merchant.api_key, body, key)]);
    t.equal(a.status, 201, a.text);
    t.equal(b.status, 201, b.text);
    t.equal(a.json.data.id, b.json.data.id, 'the same order');
    t.equal(a.text, b.text, 'the same bytes');
    const attempts = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
    t.equal(attempts.length, 1, 'one create attempt, so one reference at the vendor');
    const atVendor = await qrAt(sim, a.json.data.ref_code);
    t.equal(atVendor.status, 200);
    t.equal(atVendor.body.qris_string, a.json.data.qris_string, 'the one QR is the order QR');
  });

  t.test('no key: one gets the order, the other 409 while it is being created', async (t) => {
    const body = orderBody('CONC-NOKEY');
    const answers = await Promise.all([postOrder(url, merchant.api_key, body), postOrder(url, merchant.api_key, body)]);
    const statuses = answers.map((r) => r.status).sort();
    t.same(statuses, [201, 409], answers.map((r) => r.text).join('\n'));
    const created = answers.find((r) => r.status === 201)!;
    const other = answers.find((r) => r.status === 409);
    t.equal(other?.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
    const attempts = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
    t.equal(attempts.length, 1, 'one create attempt');
    t.same(
      (await lookupOrders(url, merchant.api_key, body.merchant_order_id)).map((o) => o.id),
      [created.json.data.id],
      'one order holds the id',
    );
    const atVendor = await qrAt(sim, created.json.data.ref_code);
    t.equal(atVendor.body.qris_string, created.json.data.qris_string, 'the one QR is the order QR');
  });
});
