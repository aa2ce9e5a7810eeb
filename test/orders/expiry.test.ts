// Order expiry (spec 3.1, 8: PENDING → EXPIRED within 30 s after the lifetime ends), run by the
// scheduler worker's sweep (EXPIRY_SWEEP_INTERVAL_MS=300 in tests). Deadlines are moved into the
// past in SQL rather than waited for; every deadline below is well under the 30 s allowed.
import t from 'tap';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startWorkerGroup, type Proc } from '../helpers/processes.ts';
import { startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';
import { ISO_Z, createOrder, getEvents, getOrder, makeOverdue, orderReaches, type Merchant } from '../helpers/order-lifecycle.ts';

/** Well under the 30 s of the contract, and many sweep intervals long. */
const EXPIRY_DEADLINE_MS = 10_000;

// The scheduler runs as its own process here so a test can kill it and start another.
const stack = await startStack(t, { groups: ['vendor', 'webhook'] });
// Every scheduler is owned by the file (not the subtest that starts it), so it outlives that subtest.
const file = t;
let scheduler: Proc = await startWorkerGroup(file, 'scheduler', stack.env);
const pool = stack.api.ctx.pool;

let seq = 0;
const orderId = (prefix: string) => `${prefix}-${Date.now()}-${++seq}`;

async function newOrder(merchant: Merchant, body: Record<string, unknown> = {}) {
  const res = await createOrder(stack, merchant, { merchant_order_id: orderId('EXP'), amount: 25_000, ...body });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.data as { id: string; ref_code: string; merchant_order_id: string; amount: number; status: string; expires_at: string | null; created_at: string };
}

const byMerchant = (merchant: Merchant) => sql.fragment`o.merchant_id = ${merchant.merchant_id}`;

function countOrders(merchant: Merchant, status: string) {
  return pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from orders o where ${byMerchant(merchant)} and o.status = ${status}`);
}

/** EXPIRED events of the merchant's orders: all of them, and how many orders have one. */
function countExpiredEvents(merchant: Merchant) {
  return pool.one(sql.type(z.object({ events: z.number(), orders: z.number() }))`
    select count(*)::int as events, count(distinct e.order_id)::int as orders
    from order_events e join orders o on o.id = e.order_id
    where ${byMerchant(merchant)} and e.status = 'EXPIRED' and e.source = 'scheduler'`);
}

function allExpired(merchant: Merchant, what: string) {
  return eventually(async () => ((await countOrders(merchant, 'PENDING')) === 0 ? true : undefined), what, EXPIRY_DEADLINE_MS);
}

t.test('a PENDING order past expires_at becomes EXPIRED with a scheduler event and an order.expired webhook', async (t) => {
  const hook = await startCallbackReceiver();
  t.teardown(() => hook.close());
  const merchant = await makeMerchant(stack.api.ctx);
  const created = await newOrder(merchant, { notify_url: hook.url });
  const bystander = await newOrder(merchant, { notify_url: hook.url });
  t.equal(created.status, 'PENDING');
  t.match(created.expires_at, ISO_Z);
  t.equal(Date.parse(created.expires_at!) - Date.parse(created.created_at), 60 * 60_000, 'expire_minutes defaults to 60');

  await makeOverdue(stack, [created.ref_code]);
  const started = Date.now();
  const expired = await orderReaches(stack, merchant, created.ref_code, 'EXPIRED', EXPIRY_DEADLINE_MS);
  t.comment(`expired ${Date.now() - started} ms after its deadline passed`);
  t.equal(expired.paid_at, null);

  const events = await getEvents(stack, merchant, created.ref_code);
  t.strictSame(events.map((e) => e.status), ['PENDING', 'EXPIRED'], 'timeline PENDING → EXPIRED');
  t.equal(events[1].source, 'scheduler', 'the EXPIRED event comes from the scheduler');
  t.equal(events[1].event, 'order.expired');

  const [webhook] = await hook.waitFor(1, 10_000);
  t.strictSame(
    webhook.json,
    {
      ref_code: created.ref_code, merchant_order_id: created.merchant_order_id, amount: 25_000, status: 'EXPIRED', event: 'order.expired', paid_at: null,
      event_id: webhook.headers['webhook-id'], event_created_at: webhook.json.event_created_at,
    },
    'order.expired webhook with status EXPIRED and paid_at null',
  );
  t.match(webhook.json.event_created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'with the time of the event');

  const untouched = await getOrder(stack, merchant, bystander.ref_code);
  t.equal(untouched.status, 'PENDING', 'an order whose deadline has not passed stays PENDING');
  t.equal(hook.received.length, 1, 'and gets no webhook');
});

/** Copies one real order's row `n` times with fresh ids, ref codes, QR tokens and merchant order ids. */
async function cloneOrder(ref: string, n: number, tag: string) {
  await pool.query(sql.unsafe`
    insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, payment_method, status,
                        customer_name, customer_email, customer_phone, notify_url, return_url, metadata,
                        expires_at, qris_string, qr_token, vendor_code, vendor_order_id, vendors_tried,
                        created_at, updated_at)
    select gen_random_uuid(), o.merchant_id, 'ORD-' || (extract(epoch from now()) * 1000)::bigint || '-' || ${tag} || lpad(g::text, 6, '0'),
           o.merchant_order_id || '-' || g, o.api, o.amount, o.payment_method, 'PENDING',
           o.customer_name, o.customer_email, o.customer_phone, o.notify_url, o.return_url, o.metadata,
           o.expires_at, o.qris_string, md5(o.qr_token || ${tag} || g), o.vendor_code, o.vendor_order_id || '-' || g, o.vendors_tried,
           o.created_at, o.updated_at
    from orders o, generate_series(1, ${n}) g
    where o.ref_code = ${ref}`);
}

t.test('3000 overdue orders all expire within the deadline, one EXPIRED event each', async (t) => {
  const TOTAL = 3000;
  const merchant = await makeMerchant(stack.api.ctx);
  const real = await Promise.all([1, 2, 3].map(() => newOrder(merchant)));
  await cloneOrder(real[0].ref_code, TOTAL - real.length, 'BULK');
  t.equal(await countOrders(merchant, 'PENDING'), TOTAL, `${TOTAL} PENDING orders`);

  await pool.query(sql.unsafe`update orders o set expires_at = now() - interval '1 second' where ${byMerchant(merchant)}`);
  const started = Date.now();
  await allExpired(merchant, `all ${TOTAL} orders to expire`);
  t.comment(`${TOTAL} orders expired in ${Date.now() - started} ms`);

  t.equal(await countOrders(merchant, 'EXPIRED'), TOTAL, 'all EXPIRED');
  t.strictSame(await countExpiredEvents(merchant), { events: TOTAL, orders: TOTAL }, `${TOTAL} EXPIRED events, one per order`);
  // The kept counts (meta.total of the order list) moved with the batches, once per order.
  const kept = await pool.any(sql.type(z.object({ status: z.string(), n: z.number() }))`
    select status, sum(n)::int as n from order_counts where merchant_id = ${merchant.merchant_id} group by status having sum(n) <> 0 order by status`);
  t.strictSame(kept.map((k) => ({ ...k })), [{ status: 'EXPIRED', n: TOTAL }], 'the kept counts say all EXPIRED, none PENDING');
  for (const order of real) {
    t.equal((await getOrder(stack, merchant, order.ref_code)).status, 'EXPIRED', `${order.ref_code} reads EXPIRED through the API`);
    t.strictSame((await getEvents(stack, merchant, order.ref_code)).map((e) => e.status), ['PENDING', 'EXPIRED']);
  }
});

t.test('a killed scheduler loses nothing: overdue orders expire once a new scheduler process starts', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  await scheduler.stop('SIGKILL');
  t.equal(scheduler.child.signalCode, 'SIGKILL', 'the scheduler process was killed');

  const orders = await Promise.all([1, 2, 3].map(() => newOrder(merchant)));
  const refs = orders.map((o) => o.ref_code);
  await makeOverdue(stack, refs);
  // Nothing else expires orders: with no scheduler running they stay PENDING past several
  // sweep intervals. (A negative can only be observed by waiting.)
  await new Promise((resolve) => setTimeout(resolve, 1000));
  for (const ref of refs) t.equal((await getOrder(stack, merchant, ref)).status, 'PENDING', `${ref} still PENDING while no scheduler runs`);

  scheduler = await startWorkerGroup(file, 'scheduler', stack.env);
  t.not(scheduler.child.pid, undefined);
  for (const ref of refs) {
    await orderReaches(stack, merchant, ref, 'EXPIRED', EXPIRY_DEADLINE_MS);
    const events = await getEvents(stack, merchant, ref);
    t.strictSame(events.map((e) => [e.status, e.source]).slice(1), [['EXPIRED', 'scheduler']], `${ref} expired once, by the scheduler`);
  }
});

t.test('a scheduler killed mid-sweep: every order still expires exactly once', async (t) => {
  const TOTAL = 5000;
  const merchant = await makeMerchant(stack.api.ctx);
  const seed = await newOrder(merchant);
  await cloneOrder(seed.ref_code, TOTAL - 1, 'KILL');
  await pool.query(sql.unsafe`update orders o set expires_at = now() - interval '1 second' where ${byMerchant(merchant)}`);
  // Kill it as soon as its first batch has committed, while later batches are (likely) in
  // flight: what it committed stays, the rest rolls back and is left for the next process.
  while ((await countOrders(merchant, 'EXPIRED')) === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await scheduler.stop('SIGKILL');
  t.comment(`killed with ${await countOrders(merchant, 'EXPIRED')} of ${TOTAL} expired`);
  scheduler = await startWorkerGroup(file, 'scheduler', stack.env);
  await allExpired(merchant, `all ${TOTAL} orders to expire`);
  t.equal(await countOrders(merchant, 'EXPIRED'), TOTAL);
  t.strictSame(await countExpiredEvents(merchant), { events: TOTAL, orders: TOTAL }, 'exactly one EXPIRED event per order');
});

t.test('an order with expire_minutes 0 never expires', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const forever = await newOrder(merchant, { expire_minutes: 0 });
  t.equal(forever.expires_at, null, 'expires_at is null');
  // Even an ancient one: no deadline is derived from its age.
  await pool.query(sql.unsafe`update orders set created_at = now() - interval '30 days' where ref_code = ${forever.ref_code}`);

  // A companion order that does expire proves sweeps have run since.
  const mortal = await newOrder(merchant, { expire_minutes: 1 });
  t.equal(Date.parse(mortal.expires_at!) - Date.parse(mortal.created_at), 60_000, 'expire_minutes 1 is one minute');
  await makeOverdue(stack, [mortal.ref_code]);
  await orderReaches(stack, merchant, mortal.ref_code, 'EXPIRED', EXPIRY_DEADLINE_MS);

  const after = await getOrder(stack, merchant, forever.ref_code);
  t.equal(after.status, 'PENDING', 'still PENDING after the sweep');
  t.equal(after.expires_at, null);
  t.strictSame((await getEvents(stack, merchant, forever.ref_code)).map((e) => e.status), ['PENDING']);
});
