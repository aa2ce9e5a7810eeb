// Crash safety of the vendor worker (DESIGN 3 "Create order", DESIGN 7 "Crash safety"): a
// create queued while no vendor worker runs is not lost, and a worker killed in the middle of
// a vendor call leaves a job that another worker picks up once its heartbeat is stale (long
// before the job's expiry: the same path a Postgres crash under a running job takes); the retried job
// asks the vendor it had called (idempotent on our reference) before anything else, so the
// order ends PENDING with exactly one QR.
//
// This stack starts without the vendor group; the test starts and kills vendor workers itself.
// VENDOR_TIMEOUT_MS is raised above the injected 3 s latency so that the in-flight call would
// succeed if the worker lived: the only way the order resolves is the retried job, not
// order-reconcile after a vendor timeout.
import t from 'tap';
import { eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startWorkerGroup } from '../helpers/processes.ts';
import { attemptsOf, createJobsOf, faultRules, lookupOrders, newKey, orderBody, postOrder, qrAt } from '../helpers/reliability.ts';
import { clearFaults, setFaults } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const DEADLINE_MS = 800;
const stack = await startStack(t, {
  groups: ['webhook', 'scheduler'],
  // The production expiry (120 s), not the test config's 5 s: recovery must come from the
  // heartbeat (10 s) and the supervision pass (1 s in tests), within the 30 s the test waits.
  env: { ORDER_CREATE_DEADLINE_MS: String(DEADLINE_MS), VENDOR_TIMEOUT_MS: '5000', ORDER_CREATE_JOB_EXPIRE_SECONDS: '120' },
});
const { sim } = stack;
const { url } = stack.api;
const pool = stack.api.ctx.pool;

t.test('a create queued while no vendor worker runs is processed once one starts', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const body = orderBody('CRASH-QUEUED');
  const key = newKey();

  const started = Date.now();
  const res = await postOrder(url, merchant.api_key, body, key);
  const elapsed = Date.now() - started;
  t.equal(res.status, 409, res.text);
  t.equal(res.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
  t.ok(elapsed >= DEADLINE_MS, `answered at the deadline (${elapsed} ms)`);
  const [attempt] = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
  t.equal(attempt.status, 'CREATING');
  t.same(attempt.vendors_tried, [], 'no vendor was called');
  t.same((await createJobsOf(pool, attempt.id)).map((j) => j.state), ['created'], 'the order-create job waits in the queue');
  t.same(await lookupOrders(url, merchant.api_key, body.merchant_order_id), [], 'nothing listed yet');

  const worker = await startWorkerGroup(t, 'vendor', stack.env);
  const listed = await eventually(async () => {
    const orders = await lookupOrders(url, merchant.api_key, body.merchant_order_id);
    return orders.length > 0 ? orders : undefined;
  }, 'the queued create to be processed');
  t.equal(listed.length, 1);
  const order = listed[0];
  t.equal(order.status, 'PENDING');
  t.equal(order.ref_code, attempt.ref_code, 'the queued attempt became the order');
  const atVendor = await qrAt(sim, order.ref_code);
  t.equal(atVendor.status, 200);
  t.equal(order.qris_string, atVendor.body.qris_string);

  const jobs = await eventually(async () => {
    const rows = await createJobsOf(pool, attempt.id);
    return rows.every((j) => j.state !== 'active') ? rows : undefined;
  }, 'the job to settle');
  t.same(jobs, [{ state: 'completed', retry_count: 0 }], 'the queued job completed on its first run');

  const retry = await postOrder(url, merchant.api_key, body, key);
  t.equal(retry.status, 201, retry.text);
  t.same(retry.json.data, order, 'the retry with the same key and body gets the order');

  await worker.stop(); // SIGTERM: the next test brings its own workers
});

t.test('a vendor worker killed mid-call: the job is retried once its heartbeat is stale and the order ends with one QR', async (t) => {
  t.teardown(() => clearFaults(sim.url));
  // The job keeps the production expiry (120 s); its heartbeat (10 s) is what gives it back.

  await setFaults(sim.url, { op: 'createQris', mode: 'latency', latency_ms: 3000, count: 1 });
  const merchant = await makeMerchant(stack.api.ctx);
  const body = orderBody('CRASH-KILL');
  const key = newKey();
  const first = await startWorkerGroup(t, 'vendor', stack.env);

  const posted = postOrder(url, merchant.api_key, body, key);
  // Kill only once the create is at the simulator (its count-1 latency rule is used up), sleeping
  // out the latency: the vendor will do the work, and nobody is left to hear about it.
  await eventually(async () => ((await faultRules(sim)).length === 0 ? true : undefined), 'the create to reach the simulator');
  const [calling] = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
  t.equal(calling.pending_vendor, 'sim', 'the worker recorded the vendor it was calling');
  await first.stop('SIGKILL');
  t.equal(first.child.signalCode, 'SIGKILL', 'the worker was killed');

  const res = await posted;
  t.equal(res.status, 409, res.text);
  t.equal(res.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
  const [orphaned] = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
  t.equal(orphaned.status, 'CREATING', 'the kill left the attempt unresolved');
  t.equal(orphaned.pending_vendor, 'sim');
  t.same(await createJobsOf(pool, calling.id), [{ state: 'active', retry_count: 0 }], "the job is still held by the dead worker");

  const started = Date.now();
  await startWorkerGroup(t, 'vendor', stack.env);
  const listed = await eventually(
    async () => {
      const orders = await lookupOrders(url, merchant.api_key, body.merchant_order_id);
      return orders.length > 0 ? orders : undefined;
    },
    'the abandoned job to be retried by the new worker (heartbeat, not expiry)',
    30_000,
  );
  t.comment(`recovered ${Date.now() - started} ms after the new worker started`);
  t.equal(listed.length, 1, 'one order');
  const order = listed[0];
  t.equal(order.status, 'PENDING');
  t.equal(order.ref_code, calling.ref_code, 'the attempt the killed worker was creating');
  const atVendor = await qrAt(sim, order.ref_code);
  t.equal(atVendor.status, 200, 'the simulator holds the QR');
  t.equal(order.qris_string, atVendor.body.qris_string, 'and it is the order QR');
  const attempts = await attemptsOf(pool, merchant.merchant_id, body.merchant_order_id);
  t.equal(attempts.length, 1, 'no second attempt, so no second reference at the vendor');
  t.same(attempts[0].vendors_tried, ['sim'], 'the vendor list was not walked twice');
  // The job settles just after the transaction that confirmed the order.
  const jobs = await eventually(async () => {
    const rows = await createJobsOf(pool, calling.id);
    return rows.every((j) => j.state !== 'active') ? rows : undefined;
  }, 'the retried job to settle');
  t.same(jobs, [{ state: 'completed', retry_count: 1 }], 'the same job finished on its retry');

  const retry = await postOrder(url, merchant.api_key, body, key);
  t.equal(retry.status, 201, retry.text);
  t.same(retry.json.data, order, 'the retry with the same key and body gets the order');
});
