// The vendor worker marks and confirms the attempts it fetched together in shared statements
// (db/coalesce.ts; loadAndMarkVendorPending, confirmAttempts): each attempt still gets its own
// answer, event, stored idempotent response and count, and an attempt asked for twice in one
// batch is marked once. Real processes: the API, the vendor worker, the simulator.
import t from 'tap';
import { z } from 'zod';
import { loadAndMarkVendorPending } from '../../db/orders.sql.ts';
import { sql } from '../../db/pool.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { newKey, orderBody, postOrder } from '../helpers/reliability.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['vendor'] });
const pool = stack.api.ctx.pool;

t.test('sixty orders created at once: each answered with its own order, one event, its key answered, counted once', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const bodies = Array.from({ length: 60 }, () => ({ body: orderBody('BATCH', 10_000 + Math.floor(Math.random() * 90_000)), key: newKey() }));
  const answers = await Promise.all(bodies.map(({ body, key }) => postOrder(stack.api.url, merchant.api_key, body, key)));
  t.same(answers.map((a) => a.status), bodies.map(() => 201), 'every create answered 201');
  answers.forEach((a, i) => {
    const data = (a.json as { data: { merchant_order_id: string; amount: number; status: string; qris_string: string } }).data;
    if (data.merchant_order_id !== bodies[i].body.merchant_order_id || data.amount !== bodies[i].body.amount || data.status !== 'PENDING' || !data.qris_string) {
      t.fail(`answer ${i} is not its own order: ${JSON.stringify(data)}`);
    }
  });
  t.pass('each answer is the order it asked for, PENDING with its QR');

  const rows = await pool.any(sql.type(z.object({ merchant_order_id: z.string(), status: z.string(), events: z.number(), key_status: z.number().nullable(), key_body: z.string().nullable() }))`
    select o.merchant_order_id, o.status,
           (select count(*) from order_events e where e.order_id = o.id and e.event = 'order.created')::int as events,
           k.response_status as key_status, k.response_body as key_body
    from orders o left join idempotency_keys k on k.order_id = o.id
    where o.merchant_id = ${merchant.merchant_id}`);
  t.equal(rows.length, 60, 'sixty orders, no more');
  t.ok(rows.every((r) => r.status === 'PENDING' && r.events === 1), 'each PENDING with exactly one order.created event');
  t.ok(rows.every((r) => r.key_status === 201 && r.key_body?.includes(r.merchant_order_id)), "each key's stored 201 is its own order");
  const counted = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select coalesce(sum(n), 0)::int as n from order_counts where merchant_id = ${merchant.merchant_id} and status = 'PENDING'`);
  t.equal(counted, 60, 'the PENDING count moved once per order');

  // Each job was completed by its confirmation's statement (db/job-complete.ts): pg-boss's clock
  // and the order's are one transaction's only if they committed together.
  const jobs = await pool.any(sql.type(z.object({ state: z.string(), output: z.unknown(), same_commit: z.boolean() }))`
    select j.state, j.output, j.completed_on = o.updated_at as same_commit
    from orders o join pgboss.job j on j.name = 'order-create' and j.data->>'order_id' = o.id::text
    where o.merchant_id = ${merchant.merchant_id}`);
  t.equal(jobs.length, 60, 'one job per order');
  t.ok(jobs.every((j) => j.state === 'completed' && j.same_commit), 'each completed in the transaction that confirmed its order');
  t.ok(jobs.every((j) => JSON.stringify(j.output) === '{"confirmed":"sim"}'), "each job's output names the vendor");

  // Replays answer the stored confirmation.
  const again = await postOrder(stack.api.url, merchant.api_key, bodies[7].body, bodies[7].key);
  t.equal(again.status, 201);
  t.equal((again.json as { data: { merchant_order_id: string } }).data.merchant_order_id, bodies[7].body.merchant_order_id, 'a replay answers the stored confirmation');
});

t.test("a fresh attempt's mark leaves updated_at as the insert set it, so it can be a HOT update", async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const id = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, payment_method, status, qr_token)
    values (gen_random_uuid(), ${merchant.merchant_id}, ${`ORD-HOT-${Date.now()}`}, ${`hot-${Date.now()}`}, 'V1', 25000, 'QRIS', 'CREATING', ${`tok-hot-${Date.now()}`})
    returning id`);
  const before = await pool.oneFirst(sql.type(z.object({ at: z.date() }))`select updated_at as at from orders where id = ${id}`);
  // Room on the row's page for its new version (the updates of the tests before may have used it).
  await pool.query(sql.unsafe`vacuum orders`);
  const hot = await pool.transaction(async (tx) => {
    const [marked] = await loadAndMarkVendorPending(tx, [{ id, vendorCode: 'sim' }]);
    t.equal(marked?.pending_vendor, 'sim', 'marked');
    return tx.oneFirst(sql.type(z.object({ n: z.number() }))`select pg_stat_get_xact_tuples_hot_updated('orders'::regclass)::int as n`);
  });
  t.equal(hot, 1, 'written as a HOT update: no new index entries');
  const after = await pool.oneFirst(sql.type(z.object({ at: z.date() }))`select updated_at as at from orders where id = ${id}`);
  t.equal(after.getTime(), before.getTime(), 'updated_at unchanged');
});

t.test('an attempt asked for twice in one mark batch is marked for the first asker only', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  // An attempt left CREATING with no vendor pending: as the API inserts it, before the worker.
  const id = await pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    insert into orders (id, merchant_id, ref_code, merchant_order_id, api, amount, payment_method, status, qr_token)
    values (gen_random_uuid(), ${merchant.merchant_id}, ${`ORD-BATCH-${Date.now()}`}, ${`twice-${Date.now()}`}, 'V1', 25000, 'QRIS', 'CREATING', ${`tok-${Date.now()}`})
    returning id`);
  const [first, second] = await loadAndMarkVendorPending(pool, [{ id, vendorCode: 'sim' }, { id, vendorCode: 'sim' }]);
  t.equal(first?.id, id, 'the first asker gets the attempt');
  t.equal(first?.pending_vendor, 'sim', 'pending at the vendor');
  t.equal(second, null, 'the second gets null (it goes the long way)');
  const [again] = await loadAndMarkVendorPending(pool, [{ id, vendorCode: 'sim' }]);
  t.equal(again, null, 'a later batch does not mark it again');
  const tried = await pool.oneFirst(sql.type(z.object({ v: z.array(z.string()) }))`select vendors_tried as v from orders where id = ${id}`);
  t.same(tried, ['sim'], 'tried once');
});
