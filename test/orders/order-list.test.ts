// GET /v1/orders at any size (issue 35): the status and created-date filters, an exact total
// kept as orders change status, the older half of the list found from its oldest end, and a
// cursor walk that lists every order exactly once while new orders arrive.
import t from 'tap';
import { z } from 'zod';
import { rawQuery, sql } from '../../db/pool.ts';
import { insertSyntheticOrders } from '../../scripts/lib/synthetic-orders.ts';
import { eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { simulatePay } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';
import { orderApi, uniqueId } from '../helpers/v1-orders.ts';

const stack = await startStack(t);
const ctx = stack.api.ctx;
const api = orderApi(stack);

async function createOrder(apiKey: string) {
  const res = await api.create(apiKey, { merchant_order_id: uniqueId(), amount: 25_000, payment_method: 'QRIS' });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.data;
}

async function createOrders(apiKey: string, n: number) {
  const out: any[] = [];
  for (let i = 0; i < n; i += 5) out.push(...(await Promise.all(Array.from({ length: Math.min(5, n - i) }, () => createOrder(apiKey)))));
  return out;
}

async function pay(apiKey: string, order: { ref_code: string }) {
  const paid = await simulatePay(stack.sim.url, { reference: order.ref_code });
  if (paid.status !== 200) throw new Error(`pay failed: ${paid.status}`);
  await eventually(async () => ((await api.get(apiKey, `/v1/orders/${order.ref_code}`)).json.data.status === 'PAID' ? true : undefined), 'the order to become PAID');
}

/** Every page of `query`, by page number. */
async function allPages(apiKey: string, query: string) {
  const first = await api.get(apiKey, `/v1/orders?${query}`);
  const rows = [...first.json.data];
  for (let page = 2; page <= first.json.meta.total_pages; page++) rows.push(...(await api.get(apiKey, `/v1/orders?${query}&page=${page}`)).json.data);
  return { rows, meta: first.json.meta };
}

t.test('status filters the list, and its total follows the orders as they change status', async (t) => {
  const merchant = await makeMerchant(ctx);
  const orders = await createOrders(merchant.api_key, 5);
  await pay(merchant.api_key, orders[1]);
  await pay(merchant.api_key, orders[3]);

  const paid = await api.get(merchant.api_key, '/v1/orders?status=PAID');
  t.equal(paid.status, 200);
  t.strictSame(paid.json.data.map((o: any) => o.id).sort(), [orders[3].id, orders[1].id].sort(), 'only the PAID orders');
  t.strictSame(paid.json.meta, { page: 1, limit: 20, total: 2, total_pages: 1 });
  const pending = await api.get(merchant.api_key, '/v1/orders?status=PENDING');
  t.strictSame(pending.json.data.map((o: any) => o.id).sort(), [orders[0].id, orders[2].id, orders[4].id].sort());
  t.equal(pending.json.meta.total, 3, 'a payment moved two orders from the PENDING total to the PAID one');
  t.equal((await api.get(merchant.api_key, '/v1/orders')).json.meta.total, 5, 'the whole list still counts five');
  t.equal((await api.get(merchant.api_key, '/v1/orders?status=EXPIRED')).json.meta.total, 0);

  for (const bad of ['paid', 'CREATING', 'FAILED', '']) {
    const res = await api.get(merchant.api_key, `/v1/orders?status=${bad}`);
    t.equal(res.status, 400, `status=${bad} is refused`);
    t.equal(res.json.error.code, 'INVALID_BODY');
    t.match(res.json.error.message, /^status: must be one of PENDING, PAID, EXPIRED, REFUNDED/);
  }
});

t.test('a statement that inserts or deletes many orders moves the totals by its rows, once', async (t) => {
  const merchant = await makeMerchant(ctx);
  await createOrders(merchant.api_key, 2);
  const run = (text: string, values: unknown[]) => ctx.pool.query(rawQuery(text, values));
  await insertSyntheticOrders(run, merchant.merchant_id, 3_000); // one statement: 2,700 PAID, 300 EXPIRED
  const total = async (query = '') => (await api.get(merchant.api_key, `/v1/orders${query}`)).json.meta.total;
  t.equal(await total(), 3_002, 'the two the API made and the 3,000 of the statement');
  t.equal(await total('?status=PAID'), 2_700);
  t.equal(await total('?status=EXPIRED'), 300);
  t.equal(await total('?status=PENDING'), 2);
  const stored = await ctx.pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from orders where merchant_id = ${merchant.merchant_id} and status = 'EXPIRED'`);
  await ctx.pool.query(sql.unsafe`delete from orders where merchant_id = ${merchant.merchant_id} and status = 'EXPIRED'`);
  t.equal(stored, 300);
  t.equal(await total('?status=EXPIRED'), 0, 'one delete statement took its 300 rows off');
  t.equal(await total(), 2_702);
});

t.test('date_from and date_to keep the orders created on those WIB days', async (t) => {
  const merchant = await makeMerchant(ctx);
  const orders = await createOrders(merchant.api_key, 4);
  // Orders made through the API are made now: move three of them to earlier WIB days.
  const days = ['2026-03-01 23:30', '2026-03-02 00:10', '2026-03-05 12:00'];
  for (const [i, day] of days.entries()) {
    await ctx.pool.query(sql.unsafe`update orders set created_at = (${day}::timestamp at time zone 'Asia/Jakarta') where id = ${orders[i].id}`);
  }
  const ids = async (query: string) => (await allPages(merchant.api_key, query)).rows.map((o: any) => o.id);
  t.strictSame(await ids('date_from=2026-03-02&date_to=2026-03-05'), [orders[2].id, orders[1].id], 'days inclusive, WIB (00:10 WIB on the 2nd is the 1st in UTC)');
  t.strictSame(await ids('date_to=2026-03-01'), [orders[0].id]);
  t.strictSame(await ids('date_from=2026-03-02&status=PENDING'), [orders[3].id, orders[2].id, orders[1].id]);
  const meta = (await allPages(merchant.api_key, 'date_from=2026-03-02&date_to=2026-03-05&limit=1')).meta;
  t.strictSame(meta, { page: 1, limit: 1, total: 2, total_pages: 2 }, 'the total counts the period');
  const reversed = await api.get(merchant.api_key, '/v1/orders?date_from=2026-03-05&date_to=2026-03-02');
  t.equal(reversed.status, 400);
  t.match(reversed.json.error.message, /date_from: must not be after date_to/);
  const notDay = await api.get(merchant.api_key, '/v1/orders?date_from=2026-02-30');
  t.equal(notDay.status, 400);
  t.match(notDay.json.error.message, /^date_from:/);
});

t.test('every page by number holds the orders in order, the older half (found from the oldest end) included', async (t) => {
  const merchant = await makeMerchant(ctx);
  const orders = await createOrders(merchant.api_key, 23);
  const expected = (await api.get(merchant.api_key, '/v1/orders?limit=100')).json.data.map((o: any) => o.id);
  t.equal(expected.length, 23);
  t.strictSame([...expected].sort(), orders.map((o) => o.id).sort());
  for (const limit of [3, 5, 7]) {
    const { rows, meta } = await allPages(merchant.api_key, `limit=${limit}`);
    t.equal(meta.total_pages, Math.ceil(23 / limit));
    t.strictSame(rows.map((o: any) => o.id), expected, `limit ${limit}: pages 1-${meta.total_pages} list every order once, newest first`);
  }
  const beyond = await api.get(merchant.api_key, '/v1/orders?limit=5&page=6');
  t.strictSame(beyond.json.data, [], 'a page past the end is empty');
});

t.test('a cursor walk lists every order exactly once while new orders arrive', async (t) => {
  const merchant = await makeMerchant(ctx);
  const before = await createOrders(merchant.api_key, 12);
  const seen: string[] = [];
  const arrived: string[] = [];
  let res = await api.get(merchant.api_key, '/v1/orders?limit=5&cursor=');
  t.equal(res.status, 200);
  t.strictSame(Object.keys(res.json.meta).sort(), ['limit', 'next_cursor', 'page', 'total', 'total_pages'], 'a walk\'s meta adds next_cursor');
  const pages: number[] = [];
  for (;;) {
    seen.push(...res.json.data.map((o: any) => o.id));
    pages.push(res.json.meta.page);
    // Orders keep arriving during the walk: they are newer than anything it has left to read.
    arrived.push((await createOrder(merchant.api_key)).id);
    if (res.json.meta.next_cursor === null) break;
    t.match(res.json.meta.next_cursor, /^[A-Za-z0-9_-]+$/, 'an opaque URL-safe cursor');
    res = await api.get(merchant.api_key, `/v1/orders?limit=5&cursor=${res.json.meta.next_cursor}`);
    t.equal(res.status, 200);
  }
  t.strictSame([...seen].sort(), before.map((o) => o.id).sort(), 'every order that existed when the walk began, each once');
  t.equal(new Set(seen).size, seen.length, 'no order twice');
  t.strictSame(pages, [1, 2, 3], 'the cursor carries the page number');
  const total = (await api.get(merchant.api_key, '/v1/orders')).json.meta.total;
  t.equal(total, before.length + arrived.length, 'the exact total counts the arrivals');

  const plain = await api.get(merchant.api_key, '/v1/orders?limit=5');
  t.strictSame(Object.keys(plain.json.meta).sort(), ['limit', 'page', 'total', 'total_pages'], 'without cursor the meta is spec 8\'s');

  const filtered = await api.get(merchant.api_key, '/v1/orders?limit=100&cursor=&status=PAID');
  t.strictSame(filtered.json.data, [], 'a walk takes the filters');
  t.equal(filtered.json.meta.next_cursor, null);

  for (const bad of ['abc', 'MTox', Buffer.from("1:1:x' or 1=1").toString('base64url'), '%00']) {
    const r = await api.get(merchant.api_key, `/v1/orders?cursor=${bad}`);
    t.equal(r.status, 400, `cursor=${bad} is refused`);
    t.match(r.json.error.message, /^cursor:/);
  }
  const both = await api.get(merchant.api_key, `/v1/orders?page=2&cursor=`);
  t.equal(both.status, 400, 'page and cursor together are refused');
  t.match(both.json.error.message, /^page:/);
});
