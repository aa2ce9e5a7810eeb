// The legacy order API (spec 2.8, 4.10, 5.3, 7, 9; DESIGN.md 6 "Legacy errors" and "Legacy
// query bodies") through the real HTTP server, Postgres, the vendor/webhook workers and the
// simulator gateway: SHA-512 signatures, the {code, message, data} envelope with the HTTP
// status equal to code, WIB timestamps, the order namespace shared with V1, and the legacy
// webhook shape.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import t from 'tap';
import { setMerchantStatus, type ProvisionedMerchant } from '../../db/merchants.ts';
import { removeRoute, setRoute } from '../../db/vendors.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually, type TestResponse } from '../helpers/http.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t);
const ctx = stack.api.ctx;

type Test = Pick<typeof t, 'equal' | 'strictSame'>;

const DATA_FIELDS = [
  'customerEmail',
  'customerName',
  'customerPhone',
  'notifyUrl',
  'orderId',
  'paidAt',
  'qrString',
  'refCode',
  'returnUrl',
  'status',
  'totalAmount',
  'transactionTime',
];

function sha512(text: string): string {
  return createHash('sha512').update(text, 'utf8').digest('hex');
}

function createSignature(m: ProvisionedMerchant, orderId: string, totalAmount: unknown): string {
  return sha512(`${m.legacy_client_id}|${orderId}|${totalAmount}|${m.legacy_client_secret}`);
}

function querySignature(m: ProvisionedMerchant, orderId: string): string {
  return sha512(`${m.legacy_client_id}|${orderId}|${m.legacy_client_secret}`);
}

function newOrderId(prefix = 'LGC'): string {
  return `${prefix}-${randomBytes(5).toString('hex').toUpperCase()}`;
}

/** WIB (Asia/Jakarta, UTC+7, no DST) wall time "YYYY-MM-DD HH:MM:SS" of an ISO instant. */
const jakarta = new Intl.DateTimeFormat('sv-SE', {
  timeZone: 'Asia/Jakarta',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});
function wibOf(iso: string): string {
  return jakarta.format(new Date(iso));
}

const WIB_FORMAT = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/** A signed, valid create body; `overrides` replace fields (undefined removes one) without re-signing. */
function createBody(m: ProvisionedMerchant, orderId: string, totalAmount: number, overrides: Record<string, unknown> = {}) {
  const body: Record<string, unknown> = {
    clientId: m.legacy_client_id,
    orderId,
    totalAmount,
    paymentType: 'QRIS',
    signature: createSignature(m, orderId, totalAmount),
    customerName: 'Budi Santoso',
    customerEmail: 'budi@example.com',
    customerPhone: '6281234567890',
    ...overrides,
  };
  for (const [key, value] of Object.entries(overrides)) if (value === undefined) delete body[key];
  return body;
}

/** POSTs to a legacy path; every legacy answer must carry the envelope with HTTP status = code. */
async function legacy(t: Test, path: string, body: unknown): Promise<TestResponse> {
  const res = await call(stack.api.url, { path, body });
  t.equal(res.json?.code, res.status, `${path}: HTTP status equals the envelope code`);
  return res;
}

function legacyCreate(t: Test, body: unknown) {
  return legacy(t, '/api/order/create', body);
}

function legacyQuery(t: Test, m: ProvisionedMerchant, orderId: string, signature = querySignature(m, orderId)) {
  return legacy(t, '/api/order/query', { clientId: m.legacy_client_id, orderId, signature });
}

function v1(m: ProvisionedMerchant, path: string, body?: unknown) {
  return call(stack.api.url, { path, headers: { 'x-api-key': m.api_key }, body });
}

async function v1Order(m: ProvisionedMerchant, refCode: string) {
  const res = await v1(m, `/v1/orders/${encodeURIComponent(refCode)}`);
  if (res.status !== 200) throw new Error(`GET /v1/orders/${refCode}: ${res.status} ${res.text}`);
  return res.json.data;
}

/** The merchant's visible orders holding this merchant_order_id (V1 list, exact filter). */
async function v1OrdersById(m: ProvisionedMerchant, merchantOrderId: string) {
  const res = await v1(m, `/v1/orders?merchant_order_id=${encodeURIComponent(merchantOrderId)}`);
  if (res.status !== 200) throw new Error(`GET /v1/orders: ${res.status} ${res.text}`);
  return res.json;
}

function envelope(code: number, message: string) {
  return { code, message, data: null };
}

const ORDER_ID_USED = envelope(400, 'Order ID already used');
const INVALID_PARAMETERS = envelope(400, 'Invalid request parameters');
const INVALID_SIGNATURE = envelope(401, 'Invalid Signature');
const INVALID_CLIENT = envelope(401, 'Invalid Client ID');
const SETTING_INVALID = envelope(400, 'Merchant setting is not Valid');
const notFound = (orderId: string) => envelope(404, `Order with orderId ${orderId} not found.`);

/** Nothing of an order with this id became visible (no partial write). */
async function assertNoOrder(t: Test, m: ProvisionedMerchant, orderId: string) {
  const query = await legacyQuery(t, m, orderId);
  t.strictSame(query.json, notFound(orderId), `no legacy order ${orderId}`);
  const list = await v1OrdersById(m, orderId);
  t.equal(list.meta.total, 0, `no V1 order ${orderId}`);
}

t.test('create answers 200 with the legacy order, the same order V1 reads by its refCode', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const before = Date.now();
  const res = await legacyCreate(
    t,
    createBody(m, orderId, 150000, {
      notifyUrl: 'https://merchant.example.com/hooks/kasir',
      returnUrl: 'https://merchant.example.com/thanks',
    }),
  );
  const after = Date.now();
  t.equal(res.status, 200);
  t.equal(res.json.code, 200);
  t.equal(res.json.message, 'Success');
  const data = res.json.data;
  t.strictSame(Object.keys(data).sort(), DATA_FIELDS, 'exactly the spec 2.8 fields');
  t.match(data.refCode, /^ORD-\d+-[A-Z0-9]+$/, 'refCode is an ORD- ref code');
  t.match(data.transactionTime, WIB_FORMAT, 'transactionTime is YYYY-MM-DD HH:MM:SS');
  t.ok(Number.isInteger(data.totalAmount), 'totalAmount is an integer');

  // legacy refCode IS the V1 ref_code: the same order through V1
  const order = await v1Order(m, data.refCode);
  t.equal(order.ref_code, data.refCode);
  t.equal(order.merchant_order_id, orderId);
  t.strictSame(res.json, {
    code: 200,
    message: 'Success',
    data: {
      refCode: order.ref_code,
      transactionTime: wibOf(order.created_at),
      orderId,
      totalAmount: 150000,
      customerName: 'Budi Santoso',
      customerEmail: 'budi@example.com',
      customerPhone: '6281234567890',
      notifyUrl: 'https://merchant.example.com/hooks/kasir',
      returnUrl: 'https://merchant.example.com/thanks',
      status: 'PENDING',
      paidAt: null,
      qrString: order.qris_string,
    },
  });
  t.match(data.qrString, /^000201/, 'qrString is QRIS data');
  t.ok(data.qrString.includes(`54061500005802ID`), 'the QRIS carries the amount (tag 54)');
  // WIB is UTC+7: the wall time is the creation instant shifted by 7 hours, not the UTC time
  const asWib = Date.parse(`${data.transactionTime.replace(' ', 'T')}Z`) - 7 * 3600_000;
  t.ok(asWib >= Math.floor(before / 1000) * 1000 - 1000 && asWib <= after + 1000, 'transactionTime is now, in WIB');
  t.equal(order.amount, 150000);
  t.equal(order.status, 'PENDING');
  t.equal(order.customer_name, 'Budi Santoso');
  t.equal(order.customer_phone, '6281234567890');
  t.equal(Date.parse(order.expires_at) - Date.parse(order.created_at), 60 * 60_000, 'the default 60-minute lifetime');
});

t.test('customerEmail, customerPhone, notifyUrl and returnUrl may be omitted (null in the answer)', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const res = await legacyCreate(t, createBody(m, orderId, 25000, { customerEmail: undefined, customerPhone: undefined }));
  t.equal(res.status, 200);
  t.equal(res.json.data.orderId, orderId);
  t.equal(res.json.data.totalAmount, 25000);
  t.equal(res.json.data.customerEmail, null);
  t.equal(res.json.data.customerPhone, null);
  t.equal(res.json.data.notifyUrl, null);
  t.equal(res.json.data.returnUrl, null);
  t.equal(res.json.data.status, 'PENDING');
});

t.test('a wrong signature is 401 Invalid Signature and creates nothing', async (t) => {
  const m = await makeMerchant(ctx);
  const other = await makeMerchant(ctx);
  const orderId = newOrderId();
  const cases: Array<[string, string]> = [
    ['signed over another amount', createSignature(m, orderId, 150001)],
    ['signed over another orderId', createSignature(m, `${orderId}X`, 150000)],
    ['signed with another merchant secret', sha512(`${m.legacy_client_id}|${orderId}|150000|${other.legacy_client_secret}`)],
    ['not hex at all', 'not-a-signature'],
    ['the query formula', querySignature(m, orderId)],
  ];
  for (const [what, signature] of cases) {
    const res = await legacyCreate(t, createBody(m, orderId, 150000, { signature }));
    t.equal(res.status, 401, what);
    t.strictSame(res.json, INVALID_SIGNATURE, what);
  }
  await assertNoOrder(t, m, orderId);
});

t.test('an unknown clientId is 401 Invalid Client ID', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const body = createBody(m, orderId, 10000, { clientId: 'KSR0000000000000000' });
  body.signature = sha512(`KSR0000000000000000|${orderId}|10000|${m.legacy_client_secret}`);
  const res = await legacyCreate(t, body);
  t.equal(res.status, 401);
  t.strictSame(res.json, INVALID_CLIENT);
  const query = await legacy(t, '/api/order/query', {
    clientId: 'KSR0000000000000000',
    orderId,
    signature: sha512(`KSR0000000000000000|${orderId}|${m.legacy_client_secret}`),
  });
  t.equal(query.status, 401);
  t.strictSame(query.json, INVALID_CLIENT);
  await assertNoOrder(t, m, orderId);
});

t.test('an inactive merchant clientId is 401 Invalid Client ID, for create and query', async (t) => {
  const m = await makeMerchant(ctx);
  const existing = newOrderId();
  t.equal((await legacyCreate(t, createBody(m, existing, 10000))).status, 200, 'works while ACTIVE');
  await setMerchantStatus(ctx.pool, m.merchant_id, 'SUSPENDED');

  const orderId = newOrderId();
  const created = await legacyCreate(t, createBody(m, orderId, 10000));
  t.equal(created.status, 401);
  t.strictSame(created.json, INVALID_CLIENT, 'create by a SUSPENDED merchant');
  const queried = await legacyQuery(t, m, existing);
  t.equal(queried.status, 401);
  t.strictSame(queried.json, INVALID_CLIENT, 'query by a SUSPENDED merchant');

  const disabled = await makeMerchant(ctx, { status: 'DISABLED' });
  const res = await legacyCreate(t, createBody(disabled, newOrderId(), 10000));
  t.strictSame(res.json, INVALID_CLIENT, 'create by a DISABLED merchant');

  await setMerchantStatus(ctx.pool, m.merchant_id, 'ACTIVE');
  t.equal((await legacyQuery(t, m, orderId)).status, 404, 'the refused create left no order behind');
});

t.test('missing or invalid fields are 400 Invalid request parameters and create nothing', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const cases: Array<[string, Record<string, unknown>]> = [
    ['no customerName', { customerName: undefined }],
    ['empty customerName', { customerName: '' }],
    ['totalAmount as a string', { totalAmount: '100', signature: createSignature(m, orderId, '100') }],
    ['totalAmount 0', { totalAmount: 0, signature: createSignature(m, orderId, 0) }],
    ['negative totalAmount', { totalAmount: -5000, signature: createSignature(m, orderId, -5000) }],
    ['fractional totalAmount', { totalAmount: 100.5, signature: createSignature(m, orderId, 100.5) }],
    ['no totalAmount', { totalAmount: undefined }],
    ['customerPhone starting 08', { customerPhone: '081234567890' }],
    ['customerPhone not numeric', { customerPhone: '62-812-3456-7890' }],
    ['bad customerEmail', { customerEmail: 'budi-at-example' }],
    ['no orderId', { orderId: undefined }],
    ['no clientId', { clientId: undefined }],
    ['no signature', { signature: undefined }],
    ['no paymentType', { paymentType: undefined }],
    ['notifyUrl into a private network', { notifyUrl: 'http://10.0.0.7/hook' }],
    ['notifyUrl not a URL', { notifyUrl: 'not a url' }],
  ];
  for (const [what, overrides] of cases) {
    const res = await legacyCreate(t, createBody(m, orderId, 10000, overrides));
    t.equal(res.status, 400, what);
    t.strictSame(res.json, INVALID_PARAMETERS, what);
  }
  await assertNoOrder(t, m, orderId);
});

t.test('a paymentType other than QRIS is 400 Merchant setting is not Valid', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const res = await legacyCreate(t, createBody(m, orderId, 10000, { paymentType: 'VA' }));
  t.equal(res.status, 400);
  t.strictSame(res.json, SETTING_INVALID);
  await assertNoOrder(t, m, orderId);
});

t.test('a body that is not a JSON object gets the legacy 400 envelope', async (t) => {
  for (const path of ['/api/order/create', '/api/order/query']) {
    for (const [what, body] of [
      ['malformed JSON', '{"clientId": "KSR1",'],
      ['a JSON array', '[]'],
      ['JSON null', 'null'],
      ['an empty body', Buffer.alloc(0)],
    ] as const) {
      const res = await legacy(t, path, body);
      t.equal(res.status, 400, `${path}: ${what}`);
      t.strictSame(res.json, INVALID_PARAMETERS, `${path}: ${what}`);
    }
  }
});

t.test('reusing an orderId is 400 Order ID already used, whatever the amount', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const first = await legacyCreate(t, createBody(m, orderId, 50000));
  t.equal(first.status, 200);

  const same = await legacyCreate(t, createBody(m, orderId, 50000));
  t.equal(same.status, 400);
  t.strictSame(same.json, ORDER_ID_USED, 'same amount');
  const different = await legacyCreate(t, createBody(m, orderId, 75000));
  t.equal(different.status, 400);
  t.strictSame(different.json, ORDER_ID_USED, 'different amount');

  const query = await legacyQuery(t, m, orderId);
  t.strictSame(query.json, first.json, 'the first order is untouched');
  t.equal((await v1OrdersById(m, orderId)).meta.total, 1, 'still one order');
});

t.test('concurrent creates of one orderId make exactly one order', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const results = await Promise.all(
    [40000, 40000, 40000, 41000, 42000].map((amount) => call(stack.api.url, { path: '/api/order/create', body: createBody(m, orderId, amount) })),
  );
  const ok = results.filter((r) => r.status === 200);
  t.equal(ok.length, 1, 'one create succeeds');
  for (const r of results.filter((r) => r.status !== 200)) {
    t.equal(r.status, 400);
    t.strictSame(r.json, ORDER_ID_USED, 'the others are told the id is used');
  }
  const list = await v1OrdersById(m, orderId);
  t.equal(list.meta.total, 1, 'one order exists');
  t.equal(list.data[0].ref_code, ok[0].json.data.refCode);
});

t.test('a V1 order id is used for legacy, and V1 sees it with its own rules', async (t) => {
  const m = await makeMerchant(ctx);

  t.test('a V1 merchant_order_id used as a legacy orderId is Order ID already used', async (t) => {
    const orderId = newOrderId('V1');
    const created = await v1(m, '/v1/orders', { merchant_order_id: orderId, amount: 60000, payment_method: 'QRIS' });
    t.equal(created.status, 201);
    for (const amount of [60000, 61000]) {
      const res = await legacyCreate(t, createBody(m, orderId, amount));
      t.equal(res.status, 400, `amount ${amount}`);
      t.strictSame(res.json, ORDER_ID_USED, `amount ${amount}`);
    }
    const list = await v1OrdersById(m, orderId);
    t.equal(list.meta.total, 1);
    t.equal(list.data[0].ref_code, created.json.data.ref_code, 'the V1 order is untouched');
  });

  t.test('a legacy orderId used as a V1 merchant_order_id: same amount 200 existing, else MERCHANT_ORDER_ID_REUSED', async (t) => {
    const orderId = newOrderId();
    const created = await legacyCreate(t, createBody(m, orderId, 70000));
    t.equal(created.status, 200);
    const refCode = created.json.data.refCode;

    const same = await v1(m, '/v1/orders', { merchant_order_id: orderId, amount: 70000, payment_method: 'QRIS' });
    t.equal(same.status, 200, 'the existing order, not a new one');
    t.equal(same.json.success, true);
    t.equal(same.json.data.ref_code, refCode);
    t.equal(same.json.data.merchant_order_id, orderId);
    t.equal(same.json.data.amount, 70000);
    t.equal(same.json.data.status, 'PENDING');
    t.equal(same.json.data.qris_string, created.json.data.qrString);

    const different = await v1(m, '/v1/orders', { merchant_order_id: orderId, amount: 70001, payment_method: 'QRIS' });
    t.equal(different.status, 400);
    t.equal(different.json.success, false);
    t.equal(different.json.error.code, 'MERCHANT_ORDER_ID_REUSED');

    const list = await v1OrdersById(m, orderId);
    t.equal(list.meta.total, 1, 'still the one legacy order');
    t.equal(list.data[0].ref_code, refCode);
  });

  t.test('a V1-created order is found by the legacy query, in the legacy shape', async (t) => {
    const orderId = newOrderId('V1');
    const created = await v1(m, '/v1/orders', {
      merchant_order_id: orderId,
      amount: 88000,
      payment_method: 'QRIS',
      customer_name: 'Siti Aminah',
      customer_email: 'siti@example.com',
      customer_phone: '0812-3456-7891',
      notify_url: 'https://merchant.example.com/v1-hook',
      return_url: 'https://merchant.example.com/v1-return',
    });
    t.equal(created.status, 201);
    const order = created.json.data;
    const res = await legacyQuery(t, m, orderId);
    t.equal(res.status, 200);
    t.strictSame(res.json, {
      code: 200,
      message: 'Success',
      data: {
        refCode: order.ref_code,
        transactionTime: wibOf(order.created_at),
        orderId,
        totalAmount: 88000,
        customerName: 'Siti Aminah',
        customerEmail: 'siti@example.com',
        customerPhone: '6281234567891',
        notifyUrl: 'https://merchant.example.com/v1-hook',
        returnUrl: 'https://merchant.example.com/v1-return',
        status: 'PENDING',
        paidAt: null,
        qrString: order.qris_string,
      },
    });
  });

  t.test('a legacy-created order is found by V1, by ref_code and by merchant_order_id', async (t) => {
    const orderId = newOrderId();
    const created = await legacyCreate(t, createBody(m, orderId, 99000));
    t.equal(created.status, 200);
    const data = created.json.data;
    const list = await v1OrdersById(m, orderId);
    t.equal(list.meta.total, 1);
    t.equal(list.data[0].ref_code, data.refCode);
    t.equal(list.data[0].amount, 99000);
    t.equal(list.data[0].status, 'PENDING');
    t.equal(list.data[0].qris_string, data.qrString);
    const order = await v1Order(m, data.refCode);
    t.equal(order.merchant_order_id, orderId);
    t.equal(order.customer_email, 'budi@example.com');
  });
});

t.test('another merchant uses the same orderId independently', async (t) => {
  const a = await makeMerchant(ctx);
  const b = await makeMerchant(ctx);
  const orderId = newOrderId();
  const onlyA = newOrderId();

  const forA = await legacyCreate(t, createBody(a, orderId, 30000));
  t.equal(forA.status, 200);
  const forB = await legacyCreate(t, createBody(b, orderId, 45000));
  t.equal(forB.status, 200, 'B is not told the id is used');
  t.not(forB.json.data.refCode, forA.json.data.refCode, 'two distinct orders');
  t.equal(forB.json.data.totalAmount, 45000);

  t.strictSame((await legacyQuery(t, a, orderId)).json, forA.json, "A's query finds A's order");
  t.strictSame((await legacyQuery(t, b, orderId)).json, forB.json, "B's query finds B's order");

  t.equal((await legacyCreate(t, createBody(a, onlyA, 1000))).status, 200);
  t.strictSame((await legacyQuery(t, b, onlyA)).json, notFound(onlyA), "B cannot see A's order");
  const v1ForB = await v1(b, '/v1/orders', { merchant_order_id: onlyA, amount: 2000, payment_method: 'QRIS' });
  t.equal(v1ForB.status, 201, "A's id is free in B's namespace for V1 too");
});

t.test('query answers the order, 404 for an unknown orderId, 401 for a bad signature', async (t) => {
  const m = await makeMerchant(ctx);
  const orderId = newOrderId();
  const created = await legacyCreate(t, createBody(m, orderId, 12345, { notifyUrl: 'https://merchant.example.com/h' }));
  t.equal(created.status, 200);

  const found = await legacyQuery(t, m, orderId);
  t.equal(found.status, 200);
  t.strictSame(found.json, created.json, 'the same order, as created');

  const unknown = newOrderId();
  const missing = await legacyQuery(t, m, unknown);
  t.equal(missing.status, 404);
  t.strictSame(missing.json, notFound(unknown));

  for (const [what, signature] of [
    ['the create formula', createSignature(m, orderId, 12345)],
    ['another orderId', querySignature(m, unknown)],
    ['garbage', 'abc'],
  ] as const) {
    const res = await legacyQuery(t, m, orderId, signature);
    t.equal(res.status, 401, what);
    t.strictSame(res.json, INVALID_SIGNATURE, what);
  }

  const noSignature = await legacy(t, '/api/order/query', { clientId: m.legacy_client_id, orderId });
  t.equal(noSignature.status, 400);
  t.strictSame(noSignature.json, INVALID_PARAMETERS, 'a query without signature');
});

t.test('a paid legacy order: query shows PAID with paidAt in WIB, the webhook is the signed legacy shape', async (t) => {
  const secret = `legacy-hook-${randomBytes(8).toString('hex')}`;
  const m = await makeMerchant(ctx, { webhookSecret: secret });
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const orderId = newOrderId();
  const created = await legacyCreate(t, createBody(m, orderId, 215000, { notifyUrl: receiver.url }));
  t.equal(created.status, 200);
  const data = created.json.data;

  const paid = await simulatePay(stack.sim.url, { qris_string: data.qrString });
  t.equal(paid.status, 200, 'the payer pays the legacy QR as scanned');
  t.equal(paid.body.reference, data.refCode);

  await eventually(async () => {
    const res = await call(stack.api.url, { path: '/api/order/query', body: { clientId: m.legacy_client_id, orderId, signature: querySignature(m, orderId) } });
    return res.json?.data?.status === 'PAID' ? res : undefined;
  }, 'the legacy query to show PAID');
  const query = await legacyQuery(t, m, orderId);
  t.equal(query.status, 200);
  const order = await v1Order(m, data.refCode);
  t.equal(order.status, 'PAID');
  t.match(query.json.data.paidAt, WIB_FORMAT, 'paidAt is YYYY-MM-DD HH:MM:SS');
  t.strictSame(query.json, {
    code: 200,
    message: 'Success',
    data: { ...data, status: 'PAID', paidAt: wibOf(order.paid_at) },
  });

  const [hook] = await receiver.waitFor(1, 10_000);
  t.strictSame(
    hook.json,
    { refCode: data.refCode, orderId, totalAmount: 215000, status: 'PAID', paidAt: wibOf(order.paid_at) },
    'exactly the legacy webhook fields, paidAt in WIB',
  );
  t.equal(hook.headers['x-signature'], `sha256=${createHmac('sha256', secret).update(hook.body).digest('hex')}`, 'X-Signature over the raw body');
  const id = String(hook.headers['webhook-id']);
  const timestamp = String(hook.headers['webhook-timestamp']);
  t.ok(id.length > 0 && /^\d+$/.test(timestamp), 'Standard Webhooks id and timestamp');
  t.equal(
    hook.headers['webhook-signature'],
    `v1,${createHmac('sha256', secret).update(`${id}.${timestamp}.${hook.body.toString('utf8')}`).digest('base64')}`,
    'Standard Webhooks signature',
  );
});

t.test('a merchant without a webhook secret gets the legacy webhook unsigned', async (t) => {
  const m = await makeMerchant(ctx);
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const orderId = newOrderId();
  const created = await legacyCreate(t, createBody(m, orderId, 5000, { notifyUrl: receiver.url }));
  t.equal(created.status, 200);
  const paid = await simulatePay(stack.sim.url, { reference: created.json.data.refCode });
  t.equal(paid.status, 200);

  const [hook] = await receiver.waitFor(1, 10_000);
  const order = await v1Order(m, created.json.data.refCode);
  t.strictSame(hook.json, { refCode: order.ref_code, orderId, totalAmount: 5000, status: 'PAID', paidAt: wibOf(order.paid_at) });
  t.equal(hook.headers['x-signature'], undefined, 'no X-Signature');
  t.equal(hook.headers['webhook-signature'], undefined, 'no webhook-signature');
});

t.test('with no QRIS vendor routed, create is 400 Merchant setting is not Valid and frees the orderId', async (t) => {
  const second = await startStack(t, { groups: ['vendor'] });
  const pool = second.api.ctx.pool;
  t.equal(await removeRoute(pool, { merchantId: null, method: 'QRIS', vendorCode: second.sim.code }), true, 'the default route is gone');
  const m = await makeMerchant(second.api.ctx);
  const orderId = newOrderId();
  const body = createBody(m, orderId, 20000);

  const res = await call(second.api.url, { path: '/api/order/create', body });
  t.equal(res.status, 400);
  t.strictSame(res.json, SETTING_INVALID);
  const query = await call(second.api.url, { path: '/api/order/query', body: { clientId: m.legacy_client_id, orderId, signature: querySignature(m, orderId) } });
  t.equal(query.status, 404);
  t.strictSame(query.json, notFound(orderId), 'no order was left behind');

  await setRoute(pool, { merchantId: null, method: 'QRIS', vendorCode: second.sim.code, priority: 10 });
  const retried = await call(second.api.url, { path: '/api/order/create', body });
  t.equal(retried.status, 200, 'the same orderId can be used once a vendor is routed');
  t.equal(retried.json.data.orderId, orderId);
  t.equal(retried.json.data.status, 'PENDING');
});
