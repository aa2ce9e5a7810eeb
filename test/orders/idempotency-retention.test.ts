// Idempotency keys are kept IDEMPOTENCY_KEY_TTL_HOURS (default 48, at least 24), then deleted by
// the scheduler's sweep in bounded batches (workers/idempotency-sweep.ts). Keys are aged by
// moving created_at back in SQL; the sweeping is done by real scheduler processes.
import t from 'tap';
import { z } from 'zod';
import { sql } from '../../db/pool.ts';
import { deleteIdempotencyKeysOlderThan } from '../../db/orders.sql.ts';
import { eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { startWorkerGroup } from '../helpers/processes.ts';
import { startStack } from '../helpers/stack.ts';
import { orderApi, uniqueId } from '../helpers/v1-orders.ts';

// No scheduler yet: each test starts its own after ageing the keys, so its first pass sees them.
const stack = await startStack(t, { groups: ['vendor'] });
const pool = stack.api.ctx.pool;
const api = orderApi(stack);

const keyRow = z.object({ key: z.string() });
const remainingKeys = async (merchantId: string) =>
  [...(await pool.anyFirst(sql.type(keyRow)`select key from idempotency_keys where merchant_id = ${merchantId}`))].sort();

const orderState = z.object({ id: z.string(), ref_code: z.string(), status: z.string(), amount: z.number(), updated_at: z.date() });
const ordersOf = (merchantId: string) =>
  pool.any(sql.type(orderState)`select id, ref_code, status, amount, updated_at from orders where merchant_id = ${merchantId} order by id`);

/** Makes a key `interval` old. */
async function age(merchantId: string, key: string, interval: string) {
  await pool.query(sql.unsafe`
    update idempotency_keys set created_at = now() - ${interval}::interval
    where merchant_id = ${merchantId} and key = ${key}`);
}

interface Keyed {
  key: string;
  raw: string;
  first: { raw: Buffer; json: any };
}

async function keyedOrder(apiKey: string, label: string): Promise<Keyed> {
  const moid = uniqueId(label);
  const raw = JSON.stringify({ merchant_order_id: moid, amount: 12_000, payment_method: 'QRIS', metadata: { label } });
  const key = `${label}-${moid}`;
  const res = await api.create(apiKey, raw, { 'idempotency-key': key });
  if (res.status !== 201) throw new Error(`create ${label}: ${res.status} ${res.text}`);
  return { key, raw, first: res };
}

type Tt = Pick<typeof t, 'equal' | 'ok'>;

async function replays(t: Tt, apiKey: string, k: Keyed, what: string) {
  const again = await api.create(apiKey, k.raw, { 'idempotency-key': k.key });
  t.equal(again.status, 201, `${what}: replay answers 201`);
  t.equal(again.headers['idempotent-replayed'], 'true', `${what}: marked Idempotent-Replayed`);
  t.ok(again.raw.equals(k.first.raw), `${what}: byte-identical to the first answer`);
}

// Runs first, while no other key in this database is old: the statement is not per merchant.
t.test('one sweep statement deletes at most its batch, oldest first', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const owner = await keyedOrder(merchant.api_key, 'BATCH');
  await pool.query(sql.unsafe`
    insert into idempotency_keys (merchant_id, key, request_hash, order_id, created_at)
    select ${merchant.merchant_id}, 'B-' || lpad(n::text, 3, '0'), '\\x00'::bytea, ${owner.first.json.data.id},
           now() - interval '100 hours' - make_interval(mins => n)
    from generate_series(1, 5) n`);
  t.equal(await deleteIdempotencyKeysOlderThan(pool, 48, 2), 2, 'a statement with a batch of 2 deletes 2');
  t.strictSame(await remainingKeys(merchant.merchant_id), ['B-001', 'B-002', 'B-003', owner.key].sort(), 'the two oldest went first');
  t.equal(await deleteIdempotencyKeysOlderThan(pool, 48, 2), 2);
  t.equal(await deleteIdempotencyKeysOlderThan(pool, 48, 2), 1, 'fewer than the batch: the sweep stops here');
  t.strictSame(await remainingKeys(merchant.merchant_id), [owner.key], 'only the key inside the TTL is left');
});

t.test('the scheduler deletes keys past the TTL, keeps younger ones replaying, and leaves orders alone', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const expired = await keyedOrder(merchant.api_key, 'OLD');
  const nearEdge = await keyedOrder(merchant.api_key, 'EDGE');
  const fresh = await keyedOrder(merchant.api_key, 'FRESH');
  await age(merchant.merchant_id, expired.key, '48 hours 1 minute');
  await age(merchant.merchant_id, nearEdge.key, '47 hours 59 minutes');
  // A backlog of 2,500 more expired keys on the old order: three statements of 1,000 rows
  // (a sweep that stopped after one batch would leave 1,500 behind until its next pass).
  await pool.query(sql.unsafe`
    insert into idempotency_keys (merchant_id, key, request_hash, order_id, response_status, response_body, created_at)
    select ${merchant.merchant_id}, 'BULK-' || lpad(n::text, 5, '0'), '\\x00'::bytea, ${expired.first.json.data.id}, 201, '{}',
           now() - interval '60 hours'
    from generate_series(1, 2500) n`);
  const ordersBefore = await ordersOf(merchant.merchant_id);
  t.equal(ordersBefore.length, 3);

  const scheduler = await startWorkerGroup(t, 'scheduler', stack.env); // default TTL: 48 h
  const left = await eventually(
    async () => {
      const keys = await remainingKeys(merchant.merchant_id);
      return keys.length <= 2 ? keys : undefined;
    },
    'the expired keys to be deleted',
    15_000,
  );
  t.strictSame(left, [nearEdge.key, fresh.key].sort(), 'the 48 h 1 min and the 60 h keys are gone; 47 h 59 min and fresh ones remain');
  t.strictSame(await ordersOf(merchant.merchant_id), ordersBefore, 'every order is untouched (same rows, status and updated_at)');
  await replays(t, merchant.api_key, nearEdge, 'a key 47 h 59 min old');
  await replays(t, merchant.api_key, fresh, 'a fresh key');

  // Past its TTL the key is forgotten, not the order: the same request is answered by
  // merchant_order_id (spec 4.2 rule 3), and no second order is created.
  const late = await api.create(merchant.api_key, expired.raw, { 'idempotency-key': expired.key });
  t.equal(late.status, 200, 'the expired key and body again: 200 with the existing order');
  t.equal(late.json?.data?.id, expired.first.json.data.id, 'the same order');
  t.equal(late.headers['idempotent-replayed'], undefined, 'not a replay');
  t.equal((await ordersOf(merchant.merchant_id)).length, 3, 'no new order');

  // A scheduler configured with the minimum TTL (24 h) takes the 47 h key too, never the fresh one.
  await scheduler.stop();
  await startWorkerGroup(t, 'scheduler', { ...stack.env, IDEMPOTENCY_KEY_TTL_HOURS: '24' });
  const afterShorterTtl = await eventually(
    async () => {
      const keys = await remainingKeys(merchant.merchant_id);
      return keys.includes(nearEdge.key) ? undefined : keys;
    },
    'the 47 h key to be deleted under a 24 h TTL',
    15_000,
  );
  t.strictSame(afterShorterTtl, [expired.key, fresh.key].sort(), 'the fresh key (and the one just re-used) remain');
  await replays(t, merchant.api_key, fresh, 'the fresh key under a 24 h TTL');
});
