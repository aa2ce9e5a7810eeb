// The confirmation's notification carries the answer it stored for the Idempotency-Key
// (db/orders.sql.ts confirmAttempt), so the API sends it without reading it back: "<id>\n<answer>"
// for a keyed create, "<id>" for a keyless one and for an answer too long for NOTIFY. The API
// answers a keyed create with exactly the stored bytes either way.
import t from 'tap';
import pg from 'pg';
import { sql } from '../../db/pool.ts';
import { ORDER_OUTCOME_CHANNEL, parseOutcome } from '../../db/orders.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';
import { newKey, orderBody } from '../helpers/reliability.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['vendor'] });
const pool = stack.api.ctx.pool;
const merchant = await makeMerchant(stack.api.ctx);

const listener = new pg.Client({ connectionString: stack.env.DATABASE_URL });
await listener.connect();
t.teardown(() => listener.end());
const heard: string[] = [];
listener.on('notification', (m) => m.channel === ORDER_OUTCOME_CHANNEL && heard.push(m.payload ?? ''));
await listener.query(`listen ${ORDER_OUTCOME_CHANNEL}`);

const create = (body: object, key?: string) =>
  call(stack.api.url, { path: '/v1/orders', headers: { 'x-api-key': merchant.api_key, ...(key ? { 'idempotency-key': key } : {}) }, body });

/** The notification about the order with this id. */
const notificationOf = (id: string) =>
  eventually(async () => heard.map(parseOutcome).find((n) => n.orderId === id), `the outcome notification of ${id}`);

t.test('a keyed create: the notification carries the stored answer, which is what the API sent', async (t) => {
  const res = await create(orderBody('NOTIFY-KEYED'), newKey());
  t.equal(res.status, 201, res.text);
  const heardOf = await notificationOf(res.json.data.id);
  const stored = await pool.oneFirst(sql.unsafe`select response_body from idempotency_keys where order_id = ${res.json.data.id}`);
  t.equal(heardOf.storedAnswer, stored, 'the notification carries the stored answer');
  t.equal(res.text, stored, 'the API answered with exactly those bytes');
});

t.test('a keyless create: the notification carries the id alone', async (t) => {
  const res = await create(orderBody('NOTIFY-PLAIN'));
  t.equal(res.status, 201, res.text);
  t.same(await notificationOf(res.json.data.id), { orderId: res.json.data.id, storedAnswer: null });
});

t.test('an answer too long for NOTIFY: the id alone, and the API reads the answer back', async (t) => {
  const body = { ...orderBody('NOTIFY-LONG'), metadata: { note: 'x'.repeat(9_000) } };
  const res = await create(body, newKey());
  t.equal(res.status, 201, res.text);
  t.ok(Buffer.byteLength(res.text) > 8_000, 'the answer is longer than a NOTIFY payload');
  t.same(await notificationOf(res.json.data.id), { orderId: res.json.data.id, storedAnswer: null });
  const stored = await pool.oneFirst(sql.unsafe`select response_body from idempotency_keys where order_id = ${res.json.data.id}`);
  t.equal(res.text, stored, 'the stored answer, read back');
});
