// Reading V1 orders (spec 4.2, 2.1, 8; DESIGN 5 and 6): the list with pagination, one order,
// its event timeline, fetch-status against the vendor, and the public QR image.
import { randomBytes } from 'node:crypto';
import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import t from 'tap';
import { registry } from '../../db/metrics.ts';
import { call, eventually } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { simulatePay, simulatorRequest } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';
import { ORDER_FIELDS, isIsoZ, orderApi, uniqueId } from '../helpers/v1-orders.ts';

// jsqr is CommonJS typed as an ES module: its function sits on `default` either way.
const jsQR = jsqr.default;

const stack = await startStack(t);
const ctx = stack.api.ctx;
const api = orderApi(stack);
type Tt = Pick<typeof t, 'equal' | 'ok' | 'type' | 'match' | 'strictSame'>;

async function createOrder(apiKey: string, extra: Record<string, unknown> = {}) {
  const res = await api.create(apiKey, { merchant_order_id: uniqueId(), amount: 25_000, payment_method: 'QRIS', ...extra });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.data;
}

/** Creates `n` orders, `parallel` at a time; returns them in creation order of their batches. */
async function createOrders(apiKey: string, n: number, parallel = 5) {
  const out: any[] = [];
  for (let i = 0; i < n; i += parallel) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, () => createOrder(apiKey)))));
  }
  return out;
}

function errorIs(t: Tt, res: { status: number; json: any }, status: number, code: string, what: string) {
  t.equal(res.status, status, `${what}: HTTP ${status}`);
  t.equal(res.json?.success, false, `${what}: success false`);
  t.equal(res.json?.error?.code, code, `${what}: ${code}`);
}

/** Newest first: created_at descending (ties broken consistently). */
function isNewestFirst(orders: Array<{ created_at: string }>): boolean {
  return orders.every((o, i) => i === 0 || Date.parse(orders[i - 1].created_at) >= Date.parse(o.created_at));
}

t.test('GET /v1/orders', async (t) => {
  t.test('newest first', async (t) => {
    const merchant = await makeMerchant(ctx);
    const first = await createOrder(merchant.api_key);
    const second = await createOrder(merchant.api_key);
    const third = await createOrder(merchant.api_key);
    const res = await api.get(merchant.api_key, '/v1/orders');
    t.equal(res.status, 200);
    t.strictSame(res.json.data.map((o: any) => o.id), [third.id, second.id, first.id], 'the most recent order comes first');
    t.strictSame(res.json.data[0], third, 'list entries are whole orders, as created');
    for (const o of res.json.data) t.strictSame(Object.keys(o).sort(), ORDER_FIELDS);
  });

  t.test('pagination meta exactly as spec 8; every order on exactly one page', async (t) => {
    const merchant = await makeMerchant(ctx);
    const created = await createOrders(merchant.api_key, 25);
    const allIds = created.map((o) => o.id).sort();

    const def = await api.get(merchant.api_key, '/v1/orders');
    t.equal(def.status, 200);
    t.strictSame(Object.keys(def.json).sort(), ['data', 'meta', 'success'], 'list envelope {success, data, meta}');
    t.strictSame(def.json.meta, { page: 1, limit: 20, total: 25, total_pages: 2 }, 'default page 1, limit 20');
    t.equal(def.json.data.length, 20);
    t.ok(isNewestFirst(def.json.data), 'page 1 newest first');

    const page2 = await api.get(merchant.api_key, '/v1/orders?page=2');
    t.strictSame(page2.json.meta, { page: 2, limit: 20, total: 25, total_pages: 2 });
    t.equal(page2.json.data.length, 5, 'the last page holds the rest');
    const both = [...def.json.data, ...page2.json.data];
    t.ok(isNewestFirst(both), 'page 2 continues where page 1 stopped');
    t.strictSame(both.map((o) => o.id).sort(), allIds, 'pages 1 and 2 hold every order once');

    const beyond = await api.get(merchant.api_key, '/v1/orders?page=3');
    t.equal(beyond.status, 200, 'a page beyond the end is not an error');
    t.strictSame(beyond.json.data, [], 'and is empty');
    t.strictSame(beyond.json.meta, { page: 3, limit: 20, total: 25, total_pages: 2 }, 'with the correct meta');
    const far = await api.get(merchant.api_key, '/v1/orders?page=999&limit=100');
    t.strictSame(far.json, { success: true, data: [], meta: { page: 999, limit: 100, total: 25, total_pages: 1 } });

    const byTen: any[] = [];
    for (const page of [1, 2, 3]) {
      const res = await api.get(merchant.api_key, `/v1/orders?page=${page}&limit=10`);
      t.strictSame(res.json.meta, { page, limit: 10, total: 25, total_pages: 3 }, `limit 10, page ${page}`);
      t.equal(res.json.data.length, page < 3 ? 10 : 5);
      byTen.push(...res.json.data);
    }
    const hundred = await api.get(merchant.api_key, '/v1/orders?limit=100');
    t.strictSame(hundred.json.meta, { page: 1, limit: 100, total: 25, total_pages: 1 }, 'limit 100 (the maximum) is accepted');
    t.strictSame(byTen.map((o) => o.id), hundred.json.data.map((o: any) => o.id), 'pages of 10 concatenate to the same order as one page of 100');
    t.ok(isNewestFirst(hundred.json.data));

    const one = await api.get(merchant.api_key, '/v1/orders?limit=1&page=25');
    t.strictSame(one.json.meta, { page: 25, limit: 1, total: 25, total_pages: 25 }, 'limit 1 (the minimum)');
    t.equal(one.json.data[0]?.id, hundred.json.data[24].id, 'the last page holds the oldest order');

    for (const res of [def, page2, beyond, hundred, one]) {
      for (const key of ['page', 'limit', 'total', 'total_pages']) t.ok(Number.isInteger(res.json.meta[key]), `meta.${key} is an integer`);
    }
  });

  t.test('a page or limit out of range or not an integer is 400 INVALID_BODY naming the parameter', async (t) => {
    const merchant = await makeMerchant(ctx);
    await createOrder(merchant.api_key);
    const cases: Array<[string, string]> = [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=1.5', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=', 'limit'],
      ['page=0', 'page'],
      ['page=-1', 'page'],
      ['page=abc', 'page'],
      ['page=1.5', 'page'],
      ['page=1&page=2', 'page'],
    ];
    for (const [query, name] of cases) {
      const res = await api.get(merchant.api_key, `/v1/orders?${query}`);
      errorIs(t, res, 400, 'INVALID_BODY', query);
      t.match(res.json?.error?.message, name, `${query}: the message names ${name}`);
    }
  });

  t.test('merchant_order_id is an exact filter, and another merchant’s orders are never listed', async (t) => {
    const a = await makeMerchant(ctx);
    const b = await makeMerchant(ctx);
    const stem = `EX-${randomBytes(4).toString('hex').toUpperCase()}`;
    const exact = await createOrder(a.api_key, { merchant_order_id: `${stem}-1` });
    const longer = await createOrder(a.api_key, { merchant_order_id: `${stem}-10` });
    const odd = await createOrder(a.api_key, { merchant_order_id: `${stem} & co/ü?=%` });
    const theirs = await createOrder(b.api_key, { merchant_order_id: `${stem}-1` });

    const hit = await api.byMerchantOrderId(a.api_key, `${stem}-1`);
    t.equal(hit.status, 200);
    t.strictSame(hit.json.data.map((o: any) => o.id), [exact.id], 'only the exact match, not the longer id, not the other merchant’s');
    t.strictSame(hit.json.meta, { page: 1, limit: 20, total: 1, total_pages: 1 }, 'the filtered list has its own meta');
    t.strictSame(hit.json.data[0], exact);

    for (const probe of [stem, `${stem}-`, `${stem}-%`, `${stem}-_`, `${stem.toLowerCase()}-1`, ` ${stem}-1`]) {
      const res = await api.byMerchantOrderId(a.api_key, probe);
      t.equal(res.status, 200);
      t.equal(res.json.meta.total, 0, `"${probe}" matches nothing (no prefix, pattern or case-insensitive match)`);
    }
    const special = await api.byMerchantOrderId(a.api_key, `${stem} & co/ü?=%`);
    t.strictSame(special.json.data.map((o: any) => o.id), [odd.id], 'an id with URL-special characters is found by its exact value');

    const listA = await api.get(a.api_key, '/v1/orders?limit=100');
    t.strictSame(listA.json.data.map((o: any) => o.id).sort(), [exact.id, longer.id, odd.id].sort(), 'A sees only its own orders');
    t.equal(listA.json.meta.total, 3);
    const listB = await api.get(b.api_key, '/v1/orders?limit=100');
    t.strictSame(listB.json.data.map((o: any) => o.id), [theirs.id], 'B sees only its own');
    const bFilter = await api.byMerchantOrderId(b.api_key, `${stem}-10`);
    t.equal(bFilter.json.meta.total, 0, 'B cannot find A’s merchant_order_id');
  });

  t.test('a filter value that cannot match anything (NUL) is an empty list or a 400, never a 500', async (t) => {
    const merchant = await makeMerchant(ctx);
    const res = await api.get(merchant.api_key, '/v1/orders?merchant_order_id=%00');
    t.ok(res.status === 200 || res.status === 400, `answered ${res.status}: ${res.text}`);
    if (res.status === 200) t.equal(res.json.meta.total, 0);
    else t.equal(res.json.error.code, 'INVALID_BODY');
  });

  t.test('the list needs an API key', async (t) => {
    errorIs(t, await call(stack.api.url, { path: '/v1/orders' }), 401, 'UNAUTHORIZED', 'no key');
  });
});

t.test('GET /v1/orders/{ref_code}', async (t) => {
  const a = await makeMerchant(ctx);
  const b = await makeMerchant(ctx);
  const order = await createOrder(a.api_key, { customer_name: 'Siti', metadata: { k: ['v'] } });

  const res = await api.get(a.api_key, `/v1/orders/${order.ref_code}`);
  t.equal(res.status, 200);
  t.strictSame(Object.keys(res.json).sort(), ['data', 'success'], '{success, data} without meta');
  t.strictSame(res.json.data, order, 'the order as created');

  const unknown = await api.get(a.api_key, `/v1/orders/ORD-1700000000-ZZZZZZZZZZ`);
  errorIs(t, unknown, 404, 'ORDER_NOT_FOUND', 'an unknown ref_code');
  errorIs(t, await api.get(b.api_key, `/v1/orders/${order.ref_code}`), 404, 'ORDER_NOT_FOUND', 'another merchant’s ref_code (404, not 403)');
  errorIs(t, await api.get(a.api_key, `/v1/orders/${order.id}`), 404, 'ORDER_NOT_FOUND', 'the id is not a ref_code');
  errorIs(t, await api.get(a.api_key, `/v1/orders/${'X'.repeat(300)}`), 404, 'ORDER_NOT_FOUND', 'an overlong ref_code');
  errorIs(t, await api.get(a.api_key, '/v1/orders/ORD-1%00'), 404, 'ORDER_NOT_FOUND', 'a ref_code with a NUL');
  errorIs(t, await call(stack.api.url, { path: `/v1/orders/${order.ref_code}` }), 401, 'UNAUTHORIZED', 'no key');
});

t.test('GET /v1/orders/{ref_code}/events: the status timeline, oldest first, PENDING then PAID', async (t) => {
  const a = await makeMerchant(ctx);
  const b = await makeMerchant(ctx);
  const order = await createOrder(a.api_key);

  const pending = await api.get(a.api_key, `/v1/orders/${order.ref_code}/events`);
  t.equal(pending.status, 200);
  t.strictSame(Object.keys(pending.json).sort(), ['data', 'success'], 'a list without meta');
  t.equal(pending.json.data.length, 1, 'one event after creation');
  t.equal(pending.json.data[0]?.status, 'PENDING');

  const paid = await simulatePay(stack.sim.url, { reference: order.ref_code });
  t.equal(paid.status, 200, 'the simulated payer paid');
  const after = await eventually(async () => {
    const res = await api.get(a.api_key, `/v1/orders/${order.ref_code}`);
    return res.json.data.status === 'PAID' ? res.json.data : undefined;
  }, 'the order to become PAID');
  t.equal(after.vendor_rrn, paid.body.rrn);
  t.equal(after.paid_at, paid.body.paid_at);

  const res = await api.get(a.api_key, `/v1/orders/${order.ref_code}/events`);
  t.equal(res.status, 200);
  const events = res.json.data;
  t.strictSame(events.map((e: any) => e.status), ['PENDING', 'PAID'], 'PENDING then PAID');
  for (const e of events) {
    t.strictSame(Object.keys(e).sort(), ['created_at', 'event', 'late', 'refund_amount', 'refund_ref_code', 'refundable_amount', 'refunded_amount', 'source', 'status'],
      'each event is {status, event, source, created_at} plus the refund fields and late');
    t.equal(e.late, false, 'a payment in time is not late');
    t.strictSame([e.refund_ref_code, e.refund_amount, e.refunded_amount, e.refundable_amount], [null, null, null, null], 'null on an event that is not a refund\'s');
    t.ok(typeof e.event === 'string' && e.event.length > 0, 'event is a non-empty string');
    t.ok(typeof e.source === 'string' && e.source.length > 0, 'source is a non-empty string');
    t.ok(isIsoZ(e.created_at), 'created_at is ISO 8601 UTC');
  }
  t.equal(events[1]?.event, 'order.paid', 'the payment event is order.paid');
  t.ok(Date.parse(events[0].created_at) <= Date.parse(events[1].created_at), 'oldest first');

  errorIs(t, await api.get(b.api_key, `/v1/orders/${order.ref_code}/events`), 404, 'ORDER_NOT_FOUND', 'another merchant’s order');
  errorIs(t, await api.get(a.api_key, '/v1/orders/ORD-1700000000-ZZZZZZZZZZ/events'), 404, 'ORDER_NOT_FOUND', 'an unknown order');
});

t.test('POST /v1/orders/{ref_code}/fetch-status', async (t) => {
  t.test('returns the current order', async (t) => {
    const merchant = await makeMerchant(ctx);
    const order = await createOrder(merchant.api_key);
    const res = await api.post(merchant.api_key, `/v1/orders/${order.ref_code}/fetch-status`);
    t.equal(res.status, 200);
    t.equal(res.json.success, true);
    t.strictSame(res.json.data, order, 'an unpaid order comes back unchanged, PENDING');
  });

  t.test('a payment whose callback was dropped is found by asking the vendor', async (t) => {
    const merchant = await makeMerchant(ctx);
    const order = await createOrder(merchant.api_key);
    const control = await createOrder(merchant.api_key);

    const paid = await simulatePay(stack.sim.url, { reference: order.ref_code }, { 'X-Sim-Fault': 'drop_callback' });
    t.equal(paid.status, 200, 'paid at the simulator, callback dropped');
    const atVendor = await simulatorRequest(stack.sim.url, stack.sim.secret, 'GET', `/v1/qris/${order.ref_code}`);
    t.equal(atVendor.body.status, 'PAID', 'the vendor knows it is paid');

    // A later payment's callback arriving proves callbacks flow; the dropped one never came.
    const controlPaid = await simulatePay(stack.sim.url, { reference: control.ref_code });
    t.equal(controlPaid.status, 200);
    await eventually(async () => {
      const res = await api.get(merchant.api_key, `/v1/orders/${control.ref_code}`);
      return res.json.data.status === 'PAID' ? true : undefined;
    }, 'the control order to become PAID by its callback');
    const still = await api.get(merchant.api_key, `/v1/orders/${order.ref_code}`);
    t.equal(still.json.data.status, 'PENDING', 'without the callback Kasir still says PENDING');
    t.equal(still.json.data.paid_at, null);

    const fetched = await api.post(merchant.api_key, `/v1/orders/${order.ref_code}/fetch-status`);
    t.equal(fetched.status, 200);
    t.equal(fetched.json.data.status, 'PAID', 'fetch-status asked the vendor and answers PAID');
    t.equal(fetched.json.data.vendor_rrn, paid.body.rrn, 'with the vendor’s RRN');
    t.equal(fetched.json.data.paid_at, paid.body.paid_at, 'and the vendor’s payment time');
    t.strictSame(Object.keys(fetched.json.data).sort(), ORDER_FIELDS, 'the answer is a whole order');

    const read = await api.get(merchant.api_key, `/v1/orders/${order.ref_code}`);
    t.equal(read.json.data.status, 'PAID', 'GET says PAID afterwards');
    t.equal(read.json.data.vendor_rrn, paid.body.rrn);
    t.equal(read.json.data.paid_at, paid.body.paid_at);
    t.ok(isIsoZ(read.json.data.paid_at));
    const events = await api.get(merchant.api_key, `/v1/orders/${order.ref_code}/events`);
    t.strictSame(events.json.data.map((e: any) => e.status), ['PENDING', 'PAID'], 'the timeline records the payment once');

    const again = await api.post(merchant.api_key, `/v1/orders/${order.ref_code}/fetch-status`);
    t.equal(again.json.data.status, 'PAID', 'asking again changes nothing');
    const eventsAgain = await api.get(merchant.api_key, `/v1/orders/${order.ref_code}/events`);
    t.equal(eventsAgain.json.data.length, 2, 'no second PAID event');
  });

  t.test('unknown and foreign orders are 404 ORDER_NOT_FOUND', async (t) => {
    const a = await makeMerchant(ctx);
    const b = await makeMerchant(ctx);
    const order = await createOrder(a.api_key);
    errorIs(t, await api.post(a.api_key, '/v1/orders/ORD-1700000000-ZZZZZZZZZZ/fetch-status'), 404, 'ORDER_NOT_FOUND', 'unknown');
    errorIs(t, await api.post(b.api_key, `/v1/orders/${order.ref_code}/fetch-status`), 404, 'ORDER_NOT_FOUND', 'another merchant’s');
  });
});

t.test('GET /qr/<token>.png: the QR image, public and cacheable', async (t) => {
  const merchant = await makeMerchant(ctx);
  const order = await createOrder(merchant.api_key, { amount: 1_234_567 });
  const path = new URL(order.qr_url).pathname;

  const res = await call(stack.api.url, { path }); // no API key
  t.equal(res.status, 200, 'served without an API key');
  t.match(String(res.headers['content-type']), /^image\/png/);
  t.strictSame([...res.raw.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
  const image = PNG.sync.read(res.raw);
  const decoded = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
  t.equal(decoded?.data, order.qris_string, 'the image decodes to exactly the order’s qris_string');

  const cacheControl = String(res.headers['cache-control'] ?? '');
  t.match(cacheControl, /max-age=\d+/, `Cache-Control with a max-age (${cacheControl})`);
  t.notMatch(cacheControl, /no-store|no-cache|private/, 'publicly cacheable');
  t.ok(res.headers.etag, 'an ETag');

  // Rendered once and kept: more requests, concurrent or not, render nothing more.
  const renders = async () => (await registry.getSingleMetric('kasir_qr_renders_total')!.get()).values[0]?.value ?? 0;
  const rendered = await renders();
  const again = await Promise.all(Array.from({ length: 16 }, () => call(stack.api.url, { path })));
  for (const r of [...again, await call(stack.api.url, { path })]) t.same(r.raw, res.raw, 'the same image');
  t.equal(await renders(), rendered, 'no more renders for a token already rendered');
  const revalidated = await call(stack.api.url, { path, headers: { 'if-none-match': String(res.headers.etag) } });
  t.equal(revalidated.status, 304, 'a browser holding it is told it has not changed');
  const other = await createOrder(merchant.api_key, { amount: 7_654 });
  await Promise.all(Array.from({ length: 8 }, () => call(stack.api.url, { path: new URL(other.qr_url).pathname })));
  t.equal(await renders(), rendered + 1, 'eight concurrent first requests for a new token: one render');

  const madeUp = await call(stack.api.url, { path: `/qr/${randomBytes(18).toString('base64url')}.png` });
  t.equal(madeUp.status, 404, 'a made-up token is 404');
  t.equal(madeUp.json?.success, false);
  for (const bad of ['/qr/x.png', `/qr/${path.slice(4, -4)}.jpg`, `/qr/${path.slice(4, -4)}`]) {
    t.equal((await call(stack.api.url, { path: bad })).status, 404, `${bad} is 404`);
  }
});
