// The create's one statement (db/orders.sql.ts insertOrderAndQueue with db/job-insert.ts): the
// job it writes is the job pg-boss's own send writes, column for column; its wake-up reaches
// pg-boss's channel at commit; and when any part does nothing, nothing at all is written.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import pg from 'pg';
import { notifyChannelSql } from 'pg-boss/dist/plans.js';
import { jobsFor } from '../../db/job-insert.ts';
import { insertOrderAndQueue, type NewOrder } from '../../db/orders.sql.ts';
import type { Db } from '../../db/pool.ts';
import { sendJob } from '../../db/queue.ts';
import { queueTestbed } from '../helpers/db.ts';
import { newAttempt } from '../helpers/factories.ts';

const { url, pool, boss, client, merchantId } = await queueTestbed(t);

const order = (merchantOrderId?: string): NewOrder => newAttempt(merchantId, merchantOrderId);
const key = () => ({ merchantId, key: randomUUID(), requestHash: Buffer.alloc(32, 7) });
const create = async (o: NewOrder, k: ReturnType<typeof key> | null, db: Db = pool) =>
  insertOrderAndQueue(db, k, o, (await jobsFor(boss, 'order-create'))('inserted', [{ order_id: o.id, merchant_id: merchantId }]));
/** The order-create jobs holding this order id. */
const jobsOf = async (orderId: string) =>
  (await client.query(`select * from pgboss.job where name = 'order-create' and data->>'order_id' = $1`, [orderId])).rows;
const countOf = async (table: string, where: string, value: string) =>
  Number((await client.query(`select count(*) from ${table} where ${where} = $1`, [value])).rows[0].count);

t.test("writes the CREATING order, the key's claim and the job pg-boss's send would write", async (t) => {
  const o = order();
  const k = key();
  t.equal(await create(o, k), o.id, "the order's id is returned");
  t.equal((await client.query(`select status from orders where id = $1`, [o.id])).rows[0]?.status, 'CREATING');
  const held = (await client.query(`select order_id from idempotency_keys where merchant_id = $1 and key = $2`, [merchantId, k.key])).rows;
  t.same(held, [{ order_id: o.id }], 'the key names the order');

  const [ours] = await jobsOf(o.id);
  t.ok(ours, 'the job is queued');
  const otherId = randomUUID();
  await sendJob(boss, 'order-create', { order_id: otherId, merchant_id: merchantId });
  const [theirs] = await jobsOf(otherId);
  const differ = ['id', 'data', 'created_on', 'start_after', 'keep_until'];
  for (const column of Object.keys(theirs).filter((c) => !differ.includes(c))) {
    t.same(ours[column], theirs[column], `${column} as pg-boss's send writes it`);
  }
  t.same(ours.data, { order_id: o.id, merchant_id: merchantId }, 'the data is the payload');
  t.ok(ours.start_after.getTime() <= Date.now() + 1000, 'due now');
  const retention = (theirs.keep_until.getTime() - theirs.start_after.getTime()) / 1000;
  t.equal((ours.keep_until.getTime() - ours.start_after.getTime()) / 1000, retention, "kept as long as the queue's retention says");
});

t.test("wakes the queue's workers on pg-boss's channel when it commits", async (t) => {
  const channel = (await client.query(`select ${notifyChannelSql('pgboss')} as channel`)).rows[0].channel as string;
  const listener = new pg.Client({ connectionString: url });
  await listener.connect();
  t.teardown(() => listener.end());
  const heard: string[] = [];
  const woken = new Promise<void>((resolve) =>
    listener.on('notification', (n) => {
      heard.push(n.payload ?? '');
      resolve();
    }),
  );
  await listener.query(`listen "${channel}"`);
  await create(order(), key());
  await woken;
  t.same(heard, ['order-create'], "pg-boss's payload: the queue's name");
});

t.test('a key already held: no order, no job, and the key unchanged', async (t) => {
  const k = key();
  const first = order();
  await create(first, k);
  const second = order();
  t.equal(await create(second, k), null, 'nothing is returned');
  t.equal(await countOf('orders', 'id', second.id), 0, 'no order');
  t.same(await jobsOf(second.id), [], 'no job');
  const held = (await client.query(`select order_id from idempotency_keys where merchant_id = $1 and key = $2`, [merchantId, k.key])).rows;
  t.same(held, [{ order_id: first.id }], 'the key still names the first order');
});

t.test('a live order holding the merchant_order_id: no order, no job, and no claim of the new key', async (t) => {
  const first = order();
  await create(first, key());
  const again = order(first.merchantOrderId);
  const k = key();
  t.equal(await create(again, k), null, 'nothing is returned');
  t.equal(await countOf('orders', 'id', again.id), 0, 'no order');
  t.same(await jobsOf(again.id), [], 'no job');
  t.equal(await countOf('idempotency_keys', 'key', k.key), 0, 'the key is not claimed');
});

t.test('without a key: the order and its job, or, for a held merchant_order_id, nothing', async (t) => {
  const o = order();
  t.equal(await create(o, null), o.id);
  t.equal((await jobsOf(o.id)).length, 1, 'one job');
  const again = order(o.merchantOrderId);
  t.equal(await create(again, null), null);
  t.equal(await countOf('orders', 'id', again.id), 0, 'no order');
  t.same(await jobsOf(again.id), [], 'no job');
});

t.test('racing another create of the same merchant_order_id: nothing written, and no error', async (t) => {
  // The other create holds its uncommitted order; this one claims its key (the order is not yet
  // visible), waits on the merchant_order_id, and finds it taken once the other commits.
  const merchantOrderId = `INV-${randomUUID()}`;
  const first = order(merchantOrderId);
  const second = order(merchantOrderId);
  const k = key();
  let commit!: () => void;
  const committing = new Promise<void>((resolve) => (commit = resolve));
  let inserted!: () => void;
  const firstInserted = new Promise<void>((resolve) => (inserted = resolve));
  const firstDone = pool.transaction(async (tx) => {
    await create(first, null, tx);
    inserted();
    await committing;
  });
  await firstInserted;
  const secondDone = create(second, k);
  const waiting = async () =>
    Number((await client.query(`select count(*) from pg_stat_activity where wait_event_type = 'Lock' and query like '%claimed as%'`)).rows[0].count) > 0;
  for (const deadline = Date.now() + 10_000; !(await waiting()); ) {
    if (Date.now() > deadline) throw new Error('the second create never waited on the first');
    await new Promise((resolve) => setImmediate(resolve));
  }
  commit();
  await firstDone;
  t.equal(await secondDone, null, 'null: the caller takes the full create');
  t.equal(await countOf('orders', 'id', second.id), 0, 'no order');
  t.same(await jobsOf(second.id), [], 'no job');
  t.equal(await countOf('idempotency_keys', 'key', k.key), 0, 'the key is not claimed');
  t.equal((await jobsOf(first.id)).length, 1, "the other create's order has its job");
});
