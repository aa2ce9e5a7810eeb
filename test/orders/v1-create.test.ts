// POST /v1/orders (spec 4.2, 5.2, 7, 8; DESIGN 3 and 6), through the real HTTP server, a real
// Postgres, the real vendor worker process and the simulator gateway.
import { createHmac, randomBytes } from 'node:crypto';
import t from 'tap';
import { removeRoute, setRoute, setVendorEnabled, upsertVendor } from '../../db/vendors.ts';
import { parseQris } from '../../gateways/qris.ts';
import { call } from '../helpers/http.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { simulatorRequest } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';
import {
  ORDER_FIELDS,
  REF_CODE,
  UUID,
  attemptsOf,
  countCreateQris,
  isIsoZ,
  orderApi,
  rowCounts,
  uniqueId,
} from '../helpers/v1-orders.ts';

const stack = await startStack(t);
const ctx = stack.api.ctx;
const api = orderApi(stack);
const MINUTE = 60_000;
type Tt = Pick<typeof t, 'equal' | 'ok' | 'type' | 'match' | 'strictSame'>;

const hmacHex = (key: Buffer, body: string | Buffer) => createHmac('sha256', key).update(body).digest('hex');

/** Asserts the list lookup by merchant_order_id finds exactly `count` orders; returns them. */
async function listed(t: Tt, apiKey: string, merchantOrderId: string, count: number, what = `${count} order(s) for ${merchantOrderId}`) {
  const res = await api.byMerchantOrderId(apiKey, merchantOrderId);
  t.equal(res.status, 200, `${what}: list answers 200`);
  t.equal(res.json?.meta?.total, count, what);
  t.equal(res.json?.data?.length, count, `${what}: data length`);
  return res.json?.data ?? [];
}

function errorIs(t: Tt, res: { status: number; json: any }, status: number, code: string, what: string) {
  t.equal(res.status, status, `${what}: HTTP ${status}`);
  t.equal(res.json?.success, false, `${what}: success false`);
  t.equal(res.json?.error?.code, code, `${what}: ${code}`);
  t.type(res.json?.error?.message, 'string', `${what}: message is a string`);
}

t.test('201: the created order has every field of spec 2.2 with the stated types', async (t) => {
  const merchant = await makeMerchant(ctx);
  const metadata = {
    cart: { items: [{ sku: 'KOPI-1', qty: 2, price: 25_000, tags: ['hot', 'large'] }, { sku: 'ROTI', qty: 1, price: 100_000, tags: [] }] },
    customer: { tier: 'gold', note: 'Tolong antar ke lantai 3 — terima kasih 🙏', 名前: '山田', nested: { deep: { deeper: [1, [2, [3]], null, true, false] } } },
    empty: {},
    flag: false,
    nothing: null,
    ratio: 0.25,
  };
  const body = {
    merchant_order_id: uniqueId('FULL'),
    amount: 150_000,
    payment_method: 'QRIS',
    customer_name: 'Budi Santoso',
    customer_email: 'budi@example.com',
    customer_phone: '+62 812-3456-7890',
    notify_url: 'http://127.0.0.1:9/hooks/kasir',
    return_url: 'https://shop.example.com/thanks?order=1',
    metadata,
  };
  const before = Date.now();
  const res = await api.create(merchant.api_key, body);
  const after = Date.now();

  t.equal(res.status, 201);
  t.match(String(res.headers['content-type']), /^application\/json/);
  t.equal(res.headers['idempotent-replayed'], undefined, 'a first answer is not marked replayed');
  t.equal(res.json.success, true);
  const o = res.json.data;
  t.strictSame(Object.keys(o).sort(), ORDER_FIELDS, 'exactly the spec 2.2 fields plus metadata, customer_email, notify_url, return_url, checkout_url');

  t.match(o.id, UUID, 'id is a UUID');
  t.match(o.ref_code, REF_CODE, 'ref_code is ORD-<digits>-<suffix>');
  t.equal(o.merchant_order_id, body.merchant_order_id);
  t.ok(Number.isInteger(o.amount), 'amount is an integer');
  t.equal(o.amount, 150_000, 'amount in whole rupiah, never ×100');
  t.equal(o.status, 'PENDING');

  const qris = parseQris(o.qris_string);
  t.ok(qris.ok, `qris_string is a valid QRIS${qris.ok ? '' : `: ${qris.error}`}`);
  if (qris.ok) {
    t.equal(qris.tags.get('54'), '150000', 'QRIS tag 54 carries the amount');
    t.equal(qris.amount, 150_000);
    t.equal(qris.dynamic, true, 'a dynamic QR (one payment, one amount)');
  }

  const qrUrl = new URL(o.qr_url); // throws unless absolute
  t.match(qrUrl.protocol, /^https?:$/, 'qr_url is an http(s) URL');
  t.equal(qrUrl.origin, new URL(stack.api.url).origin, 'qr_url points at the service');
  t.equal(o.checkout_url, `${stack.api.url}/pay/${o.ref_code}`, 'checkout_url is the hosted checkout page (PUBLIC_BASE_URL/pay/<ref_code>)');

  t.ok(isIsoZ(o.created_at), 'created_at is ISO 8601 UTC with Z');
  const created = Date.parse(o.created_at);
  t.ok(created >= before - 2000 && created <= after + 2000, 'created_at is now');
  t.ok(isIsoZ(o.expires_at), 'expires_at is ISO 8601 UTC with Z');
  const expires = Date.parse(o.expires_at);
  t.ok(expires >= before + 60 * MINUTE - 2000 && expires <= after + 60 * MINUTE + 2000, `expires_at ≈ now + 60 min by default (${o.expires_at})`);

  t.equal(o.paid_at, null);
  t.equal(o.is_settled, false);
  t.equal(o.vendor_rrn, null);
  t.equal(o.customer_name, 'Budi Santoso');
  t.equal(o.customer_email, 'budi@example.com');
  t.equal(o.customer_phone, '6281234567890', 'customer_phone normalised to 62…');
  t.equal(o.notify_url, body.notify_url);
  t.equal(o.return_url, body.return_url);
  t.strictSame(o.metadata, metadata, 'metadata returned as-is: nested objects, arrays, unicode, null, booleans, fractions');

  // Stored, not just echoed: a later read returns the same order.
  const read = await api.get(merchant.api_key, `/v1/orders/${o.ref_code}`);
  t.equal(read.status, 200);
  t.strictSame(read.json.data, o, 'GET returns the order exactly as created');
});

t.test('optional strings that are not given are null, metadata too', async (t) => {
  const merchant = await makeMerchant(ctx);
  const res = await api.create(merchant.api_key, { merchant_order_id: uniqueId(), amount: 1, payment_method: 'QRIS' });
  t.equal(res.status, 201);
  const o = res.json.data;
  t.strictSame(Object.keys(o).sort(), ORDER_FIELDS);
  for (const field of ['customer_name', 'customer_email', 'customer_phone', 'notify_url', 'return_url', 'metadata']) {
    t.equal(o[field], null, `${field} is null`);
  }
  t.equal(o.amount, 1, 'the minimum amount of 1 is accepted');
  const qris = parseQris(o.qris_string);
  t.ok(qris.ok && qris.tags.get('54') === '1', 'QRIS tag 54 is 1');
});

t.test('metadata is returned as sent (spec 2.2): key order, integer-like keys, numbers and escapes as written', async (t) => {
  const merchant = await makeMerchant(ctx);
  // What each metadata text must come back as: the merchant's text, whitespace between tokens
  // dropped. JSON.parse alone would reorder "2" before "b" and round the 20-digit number; jsonb
  // would sort the keys and rewrite 1.50 and \u00e9.
  const cases: Array<[what: string, sent: string, returned: string]> = [
    ['the cart of the issue', '{"cart":[{"sku":"A1","qty":2}]}', '{"cart":[{"sku":"A1","qty":2}]}'],
    ['integer-like keys after others', '{"b":1,"2":2,"a":{"10":"x","1":"y"}}', '{"b":1,"2":2,"a":{"10":"x","1":"y"}}'],
    ['longer keys before shorter ones', '{"zeta":1,"yy":2,"x":3}', '{"zeta":1,"yy":2,"x":3}'],
    ['numbers as written', '{"big":12345678901234567890,"price":1.50,"exp":1E3,"neg":-0}', '{"big":12345678901234567890,"price":1.50,"exp":1E3,"neg":-0}'],
    ['escapes as written', '{"name":"caf\\u00e9 \\"ok\\" \\/ \\\\","emoji":"🙏"}', '{"name":"caf\\u00e9 \\"ok\\" \\/ \\\\","emoji":"🙏"}'],
    ['whitespace between tokens dropped, inside strings kept', '{ "note" : "a  b\\tc" ,\n  "list" : [ 1 , { "k" : [ ] } ] , "e" : { } }', '{"note":"a  b\\tc","list":[1,{"k":[]}],"e":{}}'],
  ];
  for (const [what, sent, returned] of cases) {
    const moid = uniqueId('META');
    // metadata first and last in the body, so its position in the body cannot matter
    const raw = `{"metadata":${sent},"merchant_order_id":"${moid}","amount":5000,"payment_method":"QRIS"}`;
    const expected = `"metadata":${returned},"created_at"`;
    const created = await api.create(merchant.api_key, raw, { 'idempotency-key': `meta-${moid}` });
    t.equal(created.status, 201, `${what}: 201`);
    t.ok(created.text.includes(expected), `${what}: the 201 carries ${returned} (got ${/"metadata":.*,"created_at"/.exec(created.text)?.[0]})`);
    t.strictSame(created.json.data.metadata, JSON.parse(sent), `${what}: the same value`);

    const replay = await api.create(merchant.api_key, raw, { 'idempotency-key': `meta-${moid}` });
    t.equal(replay.headers['idempotent-replayed'], 'true', `${what}: replayed`);
    t.ok(replay.raw.equals(created.raw), `${what}: the replay is byte-identical`);
    const existing = await api.create(merchant.api_key, `{"merchant_order_id":"${moid}","amount":5000,"payment_method":"QRIS"}`);
    t.equal(existing.status, 200, `${what}: the existing order (200)`);
    t.ok(existing.text.includes(expected), `${what}: the 200 for the existing order carries it too`);
    const read = await api.get(merchant.api_key, `/v1/orders/${created.json.data.ref_code}`);
    t.ok(read.text.includes(expected), `${what}: GET /v1/orders/{ref_code} carries it`);
    const list = await api.byMerchantOrderId(merchant.api_key, moid);
    t.ok(list.text.includes(expected), `${what}: GET /v1/orders carries it`);
  }

  // The last "metadata" member is the one JSON.parse keeps; the stored text follows it.
  const moid = uniqueId('META');
  const twice = await api.create(merchant.api_key, `{"metadata":{"first":1},"merchant_order_id":"${moid}","amount":5000,"payment_method":"QRIS","metadata":{"z":1,"0":0}}`);
  t.equal(twice.status, 201);
  t.ok(twice.text.includes('"metadata":{"z":1,"0":0},"created_at"'), 'a repeated metadata member: the last one, as sent');
  const nulled = await api.create(merchant.api_key, `{"metadata":{"first":1},"merchant_order_id":"${uniqueId('META')}","amount":5000,"payment_method":"QRIS","metadata":null}`);
  t.equal(nulled.status, 201);
  t.equal(nulled.json.data.metadata, null, 'a repeated metadata member ending in null: null');
});

t.test('expire_minutes sets expires_at; 0 means no expiry', async (t) => {
  const merchant = await makeMerchant(ctx);
  for (const minutes of [5, 10_080]) {
    const before = Date.now();
    const res = await api.create(merchant.api_key, { merchant_order_id: uniqueId(), amount: 20_000, payment_method: 'QRIS', expire_minutes: minutes });
    const after = Date.now();
    t.equal(res.status, 201, `expire_minutes ${minutes} accepted`);
    const expires = Date.parse(res.json.data.expires_at);
    t.ok(isIsoZ(res.json.data.expires_at), 'expires_at is ISO Z');
    t.ok(
      expires >= before + minutes * MINUTE - 2000 && expires <= after + minutes * MINUTE + 2000,
      `expires_at ≈ now + ${minutes} min (${res.json.data.expires_at})`,
    );
  }
  const none = await api.create(merchant.api_key, { merchant_order_id: uniqueId(), amount: 20_000, payment_method: 'QRIS', expire_minutes: 0 });
  t.equal(none.status, 201);
  t.equal(none.json.data.expires_at, null, 'expire_minutes 0 → expires_at null');
  t.equal(none.json.data.status, 'PENDING');
  const read = await api.get(merchant.api_key, `/v1/orders/${none.json.data.ref_code}`);
  t.equal(read.json.data.expires_at, null, 'stored without expiry');
});

t.test('customer_phone is normalised to 62… from every accepted form', async (t) => {
  const merchant = await makeMerchant(ctx);
  const forms: Array<[string, string]> = [
    ['08123456789', '628123456789'],
    ['8123456789', '628123456789'],
    ['+628123456789', '628123456789'],
    ['628123456789', '628123456789'],
    ['0812-3456-789', '628123456789'],
    ['+62 812 3456 7890', '6281234567890'],
  ];
  for (const [input, stored] of forms) {
    const res = await api.create(merchant.api_key, { merchant_order_id: uniqueId(), amount: 10_000, payment_method: 'QRIS', customer_phone: input });
    t.equal(res.status, 201, `${input} accepted`);
    t.equal(res.json.data.customer_phone, stored, `${input} → ${stored}`);
  }
});

t.test('a 255-character merchant_order_id is accepted and kept intact', async (t) => {
  const merchant = await makeMerchant(ctx);
  const id = `L${randomBytes(127).toString('hex')}`;
  t.equal(id.length, 255);
  const res = await api.create(merchant.api_key, { merchant_order_id: id, amount: 5000, payment_method: 'QRIS' });
  t.equal(res.status, 201);
  t.equal(res.json.data.merchant_order_id, id);
  const [found] = await listed(t, merchant.api_key, id, 1);
  t.equal(found?.id, res.json.data.id);
});

t.test('Idempotency-Key', async (t) => {
  t.test('same key and byte-identical body: the original 201 is replayed byte for byte, one order', async (t) => {
    const merchant = await makeMerchant(ctx);
    const moid = uniqueId('IDEM');
    const raw = `{ "merchant_order_id": "${moid}",  "amount": 75000, "payment_method": "QRIS", "metadata": {"a": [1, 2]} }`;
    const headers = { 'idempotency-key': `key-${moid}` };
    const first = await api.create(merchant.api_key, raw, headers);
    t.equal(first.status, 201);
    t.equal(first.headers['idempotent-replayed'], undefined, 'the first answer is not a replay');
    for (const n of [1, 2]) {
      const again = await api.create(merchant.api_key, raw, headers);
      t.equal(again.status, 201, `replay ${n} keeps status 201 (spec 4.2 rule 1)`);
      t.equal(again.headers['idempotent-replayed'], 'true', `replay ${n} carries Idempotent-Replayed: true`);
      t.ok(again.raw.equals(first.raw), `replay ${n} is byte-identical to the original`);
    }
    await listed(t, merchant.api_key, moid, 1, 'exactly one order exists');
    t.equal((await attemptsOf(stack, merchant.merchant_id, moid)).length, 1, 'and one attempt was ever made');
  });

  t.test('same key with a body differing by one byte is 400 IDEMPOTENCY_KEY_REUSED', async (t) => {
    const merchant = await makeMerchant(ctx);
    const moid = uniqueId('IDEM');
    const raw = JSON.stringify({ merchant_order_id: moid, amount: 75_000, payment_method: 'QRIS' });
    const headers = { 'idempotency-key': `key-${moid}` };
    const first = await api.create(merchant.api_key, raw, headers);
    t.equal(first.status, 201);

    const variants: Array<[string, string]> = [
      ['one trailing space', `${raw} `],
      ['one space inside', raw.replace('"amount":', '"amount": ')],
      ['same JSON, keys reordered', JSON.stringify({ amount: 75_000, merchant_order_id: moid, payment_method: 'QRIS' })],
      ['another amount', JSON.stringify({ merchant_order_id: moid, amount: 75_001, payment_method: 'QRIS' })],
    ];
    for (const [what, body] of variants) {
      const res = await api.create(merchant.api_key, body, headers);
      errorIs(t, res, 400, 'IDEMPOTENCY_KEY_REUSED', what);
      t.equal(res.headers['idempotent-replayed'], undefined, `${what}: not a replay`);
    }
    // Another merchant_order_id under the used key: refused, and nothing is created for it.
    const other = uniqueId('IDEM');
    const res = await api.create(merchant.api_key, { merchant_order_id: other, amount: 75_000, payment_method: 'QRIS' }, headers);
    errorIs(t, res, 400, 'IDEMPOTENCY_KEY_REUSED', 'a new order under a used key');
    await listed(t, merchant.api_key, other, 0, 'no order for the refused merchant_order_id');
    t.equal((await attemptsOf(stack, merchant.merchant_id, other)).length, 0, 'not even an attempt');

    const replay = await api.create(merchant.api_key, raw, headers);
    t.equal(replay.status, 201, 'the original body still replays');
    t.ok(replay.raw.equals(first.raw), 'byte for byte');
    await listed(t, merchant.api_key, moid, 1);
  });

  t.test('keys belong to one merchant: another merchant may use the same key and merchant_order_id', async (t) => {
    const a = await makeMerchant(ctx);
    const b = await makeMerchant(ctx);
    const moid = uniqueId('SHARED');
    const headers = { 'idempotency-key': 'the-same-key' };
    const ra = await api.create(a.api_key, { merchant_order_id: moid, amount: 10_000, payment_method: 'QRIS' }, headers);
    const rb = await api.create(b.api_key, { merchant_order_id: moid, amount: 20_000, payment_method: 'QRIS' }, headers);
    t.equal(ra.status, 201);
    t.equal(rb.status, 201, 'not IDEMPOTENCY_KEY_REUSED nor MERCHANT_ORDER_ID_REUSED');
    t.not(rb.json.data.id, ra.json.data.id);
    t.equal(rb.json.data.amount, 20_000);
    t.equal(rb.headers['idempotent-replayed'], undefined);
  });

  t.test('a new key on a confirmed merchant_order_id with the same amount answers 200 with the existing order', async (t) => {
    const merchant = await makeMerchant(ctx);
    const moid = uniqueId('EXIST');
    const first = await api.create(merchant.api_key, { merchant_order_id: moid, amount: 42_000, payment_method: 'QRIS' }, { 'idempotency-key': `k1-${moid}` });
    t.equal(first.status, 201);

    const rawSecond = JSON.stringify({ merchant_order_id: moid, amount: 42_000, payment_method: 'QRIS', customer_name: 'Another attempt' });
    const second = await api.create(merchant.api_key, rawSecond, { 'idempotency-key': `k2-${moid}` });
    t.equal(second.status, 200, 'spec 4.2 rule 3: 200');
    t.equal(second.json.success, true);
    t.equal(second.json.data.id, first.json.data.id, 'the existing order');
    t.equal(second.json.data.ref_code, first.json.data.ref_code);
    t.equal(second.json.data.customer_name, null, 'the existing order as it was created, not the new body');
    t.equal(second.headers['idempotent-replayed'], undefined, 'a 200 for an existing order is not a replay');

    const noKey = await api.create(merchant.api_key, { merchant_order_id: moid, amount: 42_000, payment_method: 'QRIS' });
    t.equal(noKey.status, 200, 'without a key as well');
    t.equal(noKey.json.data.id, first.json.data.id);

    const replay = await api.create(merchant.api_key, rawSecond, { 'idempotency-key': `k2-${moid}` });
    t.equal(replay.status, 200, 'a replay of the 200 under its key is 200 too');
    t.equal(replay.headers['idempotent-replayed'], 'true');
    t.ok(replay.raw.equals(second.raw), 'byte for byte');

    await listed(t, merchant.api_key, moid, 1, 'still one order');
    t.equal((await attemptsOf(stack, merchant.merchant_id, moid)).length, 1, 'one attempt ever');
  });

  t.test('a different amount on a known merchant_order_id is 400 MERCHANT_ORDER_ID_REUSED, with or without a key', async (t) => {
    const merchant = await makeMerchant(ctx);
    const moid = uniqueId('AMT');
    const first = await api.create(merchant.api_key, { merchant_order_id: moid, amount: 30_000, payment_method: 'QRIS' });
    t.equal(first.status, 201);
    const withKey = await api.create(merchant.api_key, { merchant_order_id: moid, amount: 30_001, payment_method: 'QRIS' }, { 'idempotency-key': `k-${moid}` });
    errorIs(t, withKey, 400, 'MERCHANT_ORDER_ID_REUSED', 'with a new key');
    const withoutKey = await api.create(merchant.api_key, { merchant_order_id: moid, amount: 29_999, payment_method: 'QRIS' });
    errorIs(t, withoutKey, 400, 'MERCHANT_ORDER_ID_REUSED', 'without a key');
    const [only] = await listed(t, merchant.api_key, moid, 1);
    t.equal(only?.amount, 30_000, 'the order keeps its amount');
    t.equal(only?.id, first.json.data.id);
  });
});

t.test('concurrency', async (t) => {
  t.test('10 parallel identical requests with one key: one order, one QR at the vendor, all answered with it', async (t) => {
    const merchant = await makeMerchant(ctx);
    const moid = uniqueId('RACE');
    const raw = JSON.stringify({ merchant_order_id: moid, amount: 88_000, payment_method: 'QRIS' });
    const { result: responses, calls } = await countCreateQris(stack.sim.url, () =>
      Promise.all(Array.from({ length: 10 }, () => api.create(merchant.api_key, raw, { 'idempotency-key': `race-${moid}` }))),
    );
    t.strictSame(responses.map((r) => r.status), Array(10).fill(201), 'all ten answer 201');
    const ids = new Set(responses.map((r) => r.json?.data?.id));
    t.equal(ids.size, 1, 'all ten carry the same order');
    t.ok(responses.every((r) => r.raw.equals(responses[0].raw)), 'with identical bytes');

    const [order] = await listed(t, merchant.api_key, moid, 1, 'exactly one order');
    t.equal(order?.id, [...ids][0]);
    const attempts = await attemptsOf(stack, merchant.merchant_id, moid);
    t.equal(attempts.length, 1, 'one attempt (one ref_code) was ever made');
    t.equal(calls, 1, 'the simulator was asked for exactly one QR');
    for (const attempt of attempts) {
      const atVendor = await simulatorRequest(stack.sim.url, stack.sim.secret, 'GET', `/v1/qris/${attempt.ref_code}`);
      t.equal(atVendor.status, 200, `the vendor holds the QR of ${attempt.ref_code}`);
      t.equal(atVendor.body.qris_string, order?.qris_string, 'and it is the order’s QR');
    }
  });

  t.test('10 parallel identical requests without a key: one order; the others get 201, 409 or 200', async (t) => {
    const merchant = await makeMerchant(ctx);
    const moid = uniqueId('RACE');
    const body = { merchant_order_id: moid, amount: 66_000, payment_method: 'QRIS' };
    const { result: responses, calls } = await countCreateQris(stack.sim.url, () =>
      Promise.all(Array.from({ length: 10 }, () => api.create(merchant.api_key, body))),
    );
    const statuses = responses.map((r) => r.status);
    t.ok(statuses.every((s) => s === 201 || s === 200 || s === 409), `only 201/200/409: ${statuses.join(',')}`);
    t.ok(statuses.includes(201), 'one of them created the order');
    for (const r of responses.filter((r) => r.status === 409)) t.equal(r.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
    const ids = new Set(responses.filter((r) => r.status < 300).map((r) => r.json?.data?.id));
    t.equal(ids.size, 1, 'every success names the same order');

    const [order] = await listed(t, merchant.api_key, moid, 1, 'exactly one order');
    t.equal(order?.id, [...ids][0]);
    t.equal((await attemptsOf(stack, merchant.merchant_id, moid)).length, 1, 'one attempt');
    t.equal(calls, 1, 'one QR asked of the simulator');

    // The reconciling retry rule 8 prescribes finds that order.
    const retry = await api.create(merchant.api_key, body);
    t.equal(retry.status, 200);
    t.equal(retry.json.data.id, order?.id);
  });

  t.test('10 parallel requests on one merchant_order_id, each with its own key: one order, never a 500', async (t) => {
    // A key claimed by a create that then finds the merchant_order_id taken must not be left
    // behind, nor fail the request: each answers as the spec's rules say.
    const merchant = await makeMerchant(ctx);
    const moid = uniqueId('RACE');
    const body = { merchant_order_id: moid, amount: 77_000, payment_method: 'QRIS' };
    const keys = Array.from({ length: 10 }, (_, i) => `race-${moid}-${i}`);
    const { result: responses, calls } = await countCreateQris(stack.sim.url, () =>
      Promise.all(keys.map((key) => api.create(merchant.api_key, body, { 'idempotency-key': key }))),
    );
    const statuses = responses.map((r) => r.status);
    t.ok(statuses.every((s) => s === 201 || s === 200 || s === 409), `only 201/200/409: ${statuses.join(',')}`);
    t.equal(statuses.filter((s) => s === 201).length, 1, 'one of them created the order');
    for (const r of responses.filter((r) => r.status === 409)) t.equal(r.json?.error?.code, 'ORDER_PENDING_CONFIRMATION');
    const [order] = await listed(t, merchant.api_key, moid, 1, 'exactly one order');
    t.ok(responses.filter((r) => r.status < 300).every((r) => r.json?.data?.id === order?.id), 'every success names it');
    t.equal((await attemptsOf(stack, merchant.merchant_id, moid)).length, 1, 'one attempt');
    t.equal(calls, 1, 'one QR asked of the simulator');

    // Each key's retry now answers with that order (a 409's key was not kept: it runs again).
    for (const key of keys) {
      const again = await api.create(merchant.api_key, body, { 'idempotency-key': key });
      t.ok(again.status === 200 || again.status === 201, `key ${key.slice(-2)}: ${again.status}`);
      t.equal(again.json?.data?.id, order?.id, `key ${key.slice(-2)} names the order`);
    }
  });
});

t.test('X-Signature (spec 5.2)', async (t) => {
  const signedBody = (moid: string) => `{"merchant_order_id":"${moid}", "amount":12500,  "payment_method":"QRIS"}`;

  t.test('a whsec_ secret: absent or wrong is 401 INVALID_SIGNATURE; HMAC keyed with the secret string as given is 201', async (t) => {
    const decoded = randomBytes(32);
    const secret = `whsec_${decoded.toString('base64')}`;
    const key = Buffer.from(secret, 'utf8');
    const merchant = await makeMerchant(ctx, { webhookSecret: secret });
    const moid = uniqueId('SIG');
    const raw = signedBody(moid);
    const good = `sha256=${hmacHex(key, raw)}`;

    const wrongs: Array<[string, Record<string, string>]> = [
      ['absent', {}],
      ['empty', { 'x-signature': '' }],
      ['of another body', { 'x-signature': `sha256=${hmacHex(key, `${raw} `)}` }],
      ['keyed with the base64-decoded bytes after whsec_ (the Standard Webhooks key, not the spec 5.2 one)', { 'x-signature': `sha256=${hmacHex(decoded, raw)}` }],
      ['with another key', { 'x-signature': `sha256=${hmacHex(randomBytes(32), raw)}` }],
      ['garbage', { 'x-signature': 'sha256=zz' }],
    ];
    for (const [what, headers] of wrongs) {
      const res = await api.create(merchant.api_key, raw, headers);
      errorIs(t, res, 401, 'INVALID_SIGNATURE', `signature ${what}`);
    }
    await listed(t, merchant.api_key, moid, 0, 'no order from the refused requests');

    const ok = await api.create(merchant.api_key, raw, { 'x-signature': good, 'idempotency-key': `sig-${moid}` });
    t.equal(ok.status, 201, 'sha256=<hex HMAC of the exact raw bytes> is accepted');
    t.equal(ok.json.data.merchant_order_id, moid);

    // The signature guards every request, replays included.
    const unsignedReplay = await api.create(merchant.api_key, raw, { 'idempotency-key': `sig-${moid}` });
    errorIs(t, unsignedReplay, 401, 'INVALID_SIGNATURE', 'an unsigned replay');
    const signedReplay = await api.create(merchant.api_key, raw, { 'x-signature': good, 'idempotency-key': `sig-${moid}` });
    t.equal(signedReplay.status, 201);
    t.ok(signedReplay.raw.equals(ok.raw));
    await listed(t, merchant.api_key, moid, 1);
  });

  t.test('a plain secret keys the HMAC with its UTF-8 bytes', async (t) => {
    const secret = 'pl4in-secret-20chars';
    t.equal(secret.length, 20);
    const merchant = await makeMerchant(ctx, { webhookSecret: secret });
    const moid = uniqueId('SIG');
    const raw = signedBody(moid);
    const absent = await api.create(merchant.api_key, raw);
    errorIs(t, absent, 401, 'INVALID_SIGNATURE', 'absent');
    t.match(absent.json.error.message, /^X-Signature is required for this merchant/, 'absent says it is required, not that it does not match');
    const wrong = await api.create(merchant.api_key, raw, { 'x-signature': `sha256=${'0'.repeat(64)}` });
    errorIs(t, wrong, 401, 'INVALID_SIGNATURE', 'wrong');
    t.match(wrong.json.error.message, /^X-Signature does not match the request body: expected sha256=/, 'wrong says it does not match, and the form expected');
    const ok = await api.create(merchant.api_key, raw, { 'x-signature': `sha256=${hmacHex(Buffer.from(secret, 'utf8'), raw)}` });
    t.equal(ok.status, 201);
    await listed(t, merchant.api_key, moid, 1);
  });

  t.test('a merchant without a secret needs no X-Signature', async (t) => {
    const merchant = await makeMerchant(ctx);
    const res = await api.create(merchant.api_key, signedBody(uniqueId('SIG')));
    t.equal(res.status, 201);
  });
});

t.test('invalid requests are 400 naming the field, and write nothing', async (t) => {
  const merchant = await makeMerchant(ctx);
  const base = { merchant_order_id: uniqueId('BAD'), amount: 10_000, payment_method: 'QRIS' };
  const without = (field: keyof typeof base) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== field));
  const cases: Array<[what: string, body: unknown, code: string, field: string | null]> = [
    ['missing merchant_order_id', without('merchant_order_id'), 'INVALID_BODY', 'merchant_order_id'],
    ['empty merchant_order_id', { ...base, merchant_order_id: '' }, 'INVALID_BODY', 'merchant_order_id'],
    ['256-character merchant_order_id', { ...base, merchant_order_id: 'X'.repeat(256) }, 'INVALID_BODY', 'merchant_order_id'],
    ['numeric merchant_order_id', { ...base, merchant_order_id: 12345 }, 'INVALID_BODY', 'merchant_order_id'],
    ['missing amount', without('amount'), 'INVALID_BODY', 'amount'],
    ['amount 0', { ...base, amount: 0 }, 'INVALID_BODY', 'amount'],
    ['amount -5', { ...base, amount: -5 }, 'INVALID_BODY', 'amount'],
    ['amount 1.5', { ...base, amount: 1.5 }, 'INVALID_BODY', 'amount'],
    ['amount "1000"', { ...base, amount: '1000' }, 'INVALID_BODY', 'amount'],
    ['amount null', { ...base, amount: null }, 'INVALID_BODY', 'amount'],
    ['amount 1e14', `{"merchant_order_id":"${base.merchant_order_id}","amount":1e14,"payment_method":"QRIS"}`, 'INVALID_BODY', 'amount'],
    ['missing payment_method', without('payment_method'), 'INVALID_BODY', 'payment_method'],
    ['payment_method VA', { ...base, payment_method: 'VA' }, 'UNSUPPORTED_PAYMENT_METHOD', null],
    ['body []', '[]', 'INVALID_BODY', null],
    ['body "x"', '"x"', 'INVALID_BODY', null],
    ['body null', 'null', 'INVALID_BODY', null],
    ['malformed JSON', `{"merchant_order_id":"${base.merchant_order_id}","amount":10000,`, 'INVALID_JSON', null],
    ['customer_phone letters', { ...base, customer_phone: 'call me' }, 'INVALID_BODY', 'customer_phone'],
    ['customer_phone too short', { ...base, customer_phone: '0812' }, 'INVALID_BODY', 'customer_phone'],
    ['customer_phone foreign', { ...base, customer_phone: '+1 415 555 0100' }, 'INVALID_BODY', 'customer_phone'],
    ['notify_url ftp://x', { ...base, notify_url: 'ftp://x' }, 'INVALID_BODY', 'notify_url'],
    ['notify_url private IP', { ...base, notify_url: 'http://10.0.0.1/hook' }, 'INVALID_BODY', 'notify_url'],
    ['notify_url metadata IP', { ...base, notify_url: 'http://169.254.169.254/' }, 'INVALID_BODY', 'notify_url'],
    ['notify_url not a URL', { ...base, notify_url: 'not a url' }, 'INVALID_BODY', 'notify_url'],
    ['expire_minutes -1', { ...base, expire_minutes: -1 }, 'INVALID_BODY', 'expire_minutes'],
    ['expire_minutes 10081', { ...base, expire_minutes: 10_081 }, 'INVALID_BODY', 'expire_minutes'],
    ['expire_minutes 1.5', { ...base, expire_minutes: 1.5 }, 'INVALID_BODY', 'expire_minutes'],
    ['metadata a string', { ...base, metadata: 'x' }, 'INVALID_BODY', 'metadata'],
    ['metadata an array', { ...base, metadata: [1, 2] }, 'INVALID_BODY', 'metadata'],
  ];
  for (const [index, [what, body, code, field]] of cases.entries()) {
    const res = await api.create(merchant.api_key, typeof body === 'string' ? body : JSON.stringify(body), { 'idempotency-key': `bad-${index}` });
    errorIs(t, res, 400, code, what);
    t.strictSame(Object.keys(res.json?.error ?? {}).sort(), ['code', 'message', 'request_id'], `${what}: error envelope`);
    if (field) t.match(res.json?.error?.message, field, `${what}: the message names ${field}`);
  }

  await listed(t, merchant.api_key, base.merchant_order_id, 0, 'no order for the refused merchant_order_id');
  const all = await api.get(merchant.api_key, '/v1/orders');
  t.equal(all.json.meta.total, 0, 'the merchant has no orders');
  t.strictSame(await rowCounts(stack, merchant.merchant_id), { orders: 0, keys: 0 }, 'no attempt rows and no idempotency keys: no partial writes');

  // The keys those requests carried were not burnt: a valid request under one of them creates.
  const valid = await api.create(merchant.api_key, base, { 'idempotency-key': 'bad-0' });
  t.equal(valid.status, 201, 'a key used on a rejected request is still free');
});

t.test('strings Postgres cannot store (NUL) are refused as 400, never a 500', async (t) => {
  const merchant = await makeMerchant(ctx);
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['merchant_order_id', { merchant_order_id: `NUL\u0000${uniqueId()}`, amount: 10_000, payment_method: 'QRIS' }, 'merchant_order_id'],
    ['customer_name', { merchant_order_id: uniqueId(), amount: 10_000, payment_method: 'QRIS', customer_name: 'Bu\u0000di' }, 'customer_name'],
    ['metadata', { merchant_order_id: uniqueId(), amount: 10_000, payment_method: 'QRIS', metadata: { note: 'a\u0000b' } }, 'metadata'],
  ];
  for (const [what, body, field] of cases) {
    const res = await api.create(merchant.api_key, body);
    errorIs(t, res, 400, 'INVALID_BODY', `NUL in ${what}`);
    t.match(res.json?.error?.message, field, `the message names ${field}`);
  }
  t.strictSame(await rowCounts(stack, merchant.merchant_id), { orders: 0, keys: 0 }, 'nothing written');
});

t.test('503 NO_VENDOR when no gateway is routed; the failed attempt frees the merchant_order_id', async (t) => {
  t.test('a merchant routed only to a disabled vendor', async (t) => {
    const merchant = await makeMerchant(ctx);
    await upsertVendor(ctx.pool, ctx.sealer, { code: 'sim-off', kind: 'simulator', baseUrl: stack.sim.url, credentials: { secret: stack.sim.secret } });
    await setVendorEnabled(ctx.pool, 'sim-off', false);
    // A merchant's own routes replace the platform default (db/vendors.ts routeVendors).
    await setRoute(ctx.pool, { merchantId: merchant.merchant_id, method: 'QRIS', vendorCode: 'sim-off', priority: 10 });

    const moid = uniqueId('NOV');
    const raw = JSON.stringify({ merchant_order_id: moid, amount: 15_000, payment_method: 'QRIS' });
    const headers = { 'idempotency-key': `nov-${moid}` };
    const { result: refused, calls } = await countCreateQris(stack.sim.url, () => api.create(merchant.api_key, raw, headers));
    errorIs(t, refused, 503, 'NO_VENDOR', 'no enabled vendor');
    t.equal(calls, 0, 'no vendor was called');
    const bare = uniqueId('NOV');
    errorIs(t, await api.create(merchant.api_key, { merchant_order_id: bare, amount: 15_000, payment_method: 'QRIS' }), 503, 'NO_VENDOR', 'without a key');
    await listed(t, merchant.api_key, moid, 0, 'a failed attempt is not an order');

    t.ok(await removeRoute(ctx.pool, { merchantId: merchant.merchant_id, method: 'QRIS', vendorCode: 'sim-off' }));
    const retry = await api.create(merchant.api_key, raw, headers);
    t.equal(retry.status, 201, 'the same key and body succeed once a vendor is routed (rule 8 retry)');
    t.equal(retry.headers['idempotent-replayed'], undefined, 'the 503 was not stored as the key’s answer');
    t.equal(retry.json.data.merchant_order_id, moid);
    const bareRetry = await api.create(merchant.api_key, { merchant_order_id: bare, amount: 15_000, payment_method: 'QRIS' });
    t.equal(bareRetry.status, 201, 'and without a key');
    await listed(t, merchant.api_key, moid, 1);
    const again = await api.create(merchant.api_key, raw, headers);
    t.equal(again.status, 201);
    t.equal(again.headers['idempotent-replayed'], 'true', 'the success is what the key now replays');
    t.ok(again.raw.equals(retry.raw));
  });

  t.test('no platform default route at all (a separate stack)', async (t) => {
    const lone = await startStack(t);
    const loneApi = orderApi(lone);
    const merchant = await makeMerchant(lone.api.ctx);
    t.ok(await removeRoute(lone.api.ctx.pool, { merchantId: null, method: 'QRIS', vendorCode: lone.sim.code }), 'default route removed');
    const moid = uniqueId('NOV');
    const body = { merchant_order_id: moid, amount: 15_000, payment_method: 'QRIS' };
    errorIs(t, await loneApi.create(merchant.api_key, body), 503, 'NO_VENDOR', 'no gateway configured');
    const list = await loneApi.byMerchantOrderId(merchant.api_key, moid);
    t.equal(list.json.meta.total, 0, 'no order');

    await setRoute(lone.api.ctx.pool, { merchantId: null, method: 'QRIS', vendorCode: lone.sim.code, priority: 10 });
    const retry = await loneApi.create(merchant.api_key, body);
    t.equal(retry.status, 201, 'the same merchant_order_id succeeds once the route is back');
    t.equal(retry.json.data.status, 'PENDING');
  });
});

t.test('authentication applies to order creation', async (t) => {
  const body = { merchant_order_id: uniqueId('AUTH'), amount: 10_000, payment_method: 'QRIS' };
  const none = await call(stack.api.url, { method: 'POST', path: '/v1/orders', body });
  errorIs(t, none, 401, 'UNAUTHORIZED', 'no X-API-Key');
  errorIs(t, await api.create('f'.repeat(64), body), 401, 'UNAUTHORIZED', 'an unknown key');
  const suspended = await makeMerchant(ctx, { status: 'SUSPENDED' });
  errorIs(t, await api.create(suspended.api_key, body), 403, 'MERCHANT_INACTIVE', 'a suspended merchant');
  t.strictSame(await rowCounts(stack, suspended.merchant_id), { orders: 0, keys: 0 }, 'nothing written for it');
});
