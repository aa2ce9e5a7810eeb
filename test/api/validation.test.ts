// V1 body validation (api/http/validate.ts): every message says what the field must be and what
// was received, derived from zod's issue codes in one place; a field sent with the wrong type is
// never reported as missing; unknown fields are refused and named, with the known field meant.
// The walk covers every V1 body schema of the OpenAPI document, in process and over HTTP.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { operations } from '../../api/openapi/document.ts';
import { bodyProblems, closestName, fieldSchema } from '../../api/http/validate.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';

const api = await startApi(t, testConfig(await testDatabase(t)));
const merchant = await makeMerchant(api.ctx);

/** Every V1 JSON body the document lists, with a path that reaches its validation. */
const bodies = operations
  .filter((op) => op.path.startsWith('/v1/') && op.body && !op.body.multipart)
  .map((op) => ({
    name: `${op.method.toUpperCase()} ${op.path}`,
    method: op.method.toUpperCase(),
    path: op.path.replace(':ref_code', 'ORD-1-NOPE').replace(':user_id', randomUUID()),
    schema: op.body!.schema,
    shape: (fieldSchema(op.body!.schema, []) as z.ZodObject).shape as Record<string, z.ZodType>,
  }));

/** Values of every JSON type, the wrong one for most fields. */
const WRONG: unknown[] = ['150000', 1500.5, 7, true, null, {}, [1]];

const accepts = (schema: z.ZodType, field: string, value: unknown) =>
  !(schema.safeParse({ [field]: value }).error?.issues ?? []).some((i) => i.path[0] === field || (i.code === 'unrecognized_keys'));

t.test('the walk covers every V1 body', async (t) => {
  t.same(bodies.map((b) => b.name).sort(), [
    'PATCH /v1/my/users/:user_id/role', 'POST /v1/beneficiaries', 'POST /v1/disbursements', 'POST /v1/my/users',
    'POST /v1/orders', 'POST /v1/orders/:ref_code/refund', 'POST /v1/reports/export', 'POST /v1/webhook-deliveries/samples',
  ]);
});

t.test('a field of the wrong type is reported as what it must be, with what was received, never as missing', async (t) => {
  let checked = 0;
  for (const body of bodies) {
    for (const field of Object.keys(body.shape)) {
      for (const value of WRONG) {
        if (accepts(body.schema, field, value)) continue;
        checked++;
        const problems = bodyProblems(body.schema, { [field]: value });
        const own = problems.filter((p) => p.startsWith(`${field}: `));
        t.equal(own.length, 1, `${body.name} ${field}=${JSON.stringify(value)}: one message for the field (${problems.join(' | ')})`);
        t.notMatch(own[0], /is required/, `${body.name} ${field}=${JSON.stringify(value)}: not "is required"`);
        t.match(own[0], /^[a-z_]+: must .+; got .+/, `${body.name} ${field}=${JSON.stringify(value)}: ${own[0]}`);
      }
    }
  }
  t.ok(checked > 100, `${checked} wrong values checked`);
});

t.test('over HTTP too: no answer says a present field is required', async (t) => {
  for (const body of bodies) {
    for (const field of Object.keys(body.shape)) {
      for (const value of WRONG) {
        if (accepts(body.schema, field, value)) continue;
        const res = await call(api.url, { method: body.method, path: body.path, headers: { 'x-api-key': merchant.api_key }, body: { [field]: value } });
        t.equal(res.status, 400, `${body.name} ${field}=${JSON.stringify(value)}: ${res.text}`);
        t.notMatch(res.json?.error?.message, new RegExp(`^${field}: is required`), `${body.name} ${field}=${JSON.stringify(value)}: ${res.json?.error?.message}`);
      }
    }
  }
});

t.test('the issue\'s cases, word for word', async (t) => {
  const order = (extra: Record<string, unknown>) => call(api.url, {
    path: '/v1/orders', headers: { 'x-api-key': merchant.api_key },
    body: { merchant_order_id: `INV-${randomUUID()}`, amount: 150_000, payment_method: 'QRIS', ...extra },
  });
  const cases: [Record<string, unknown>, string][] = [
    [{ amount: '150000' }, 'amount: must be an integer number of Rupiah; got the string "150000"'],
    [{ amount: 1500.5 }, 'amount: must be an integer number of Rupiah; got the number 1500.5'],
    [{ amount: 0 }, 'amount: must be at least 1; got the number 0'],
    [{ amount: 10_000_000_000_000 }, 'amount: must be at most 9999999999999; got the number 10000000000000'],
    [{ amount: 1e20 }, 'amount: must be at most 9999999999999; got the number 100000000000000000000'],
    [{ customer_email: 'budi' }, 'customer_email: must be an e-mail address; got the string "budi"'],
    [{ return_url: 'ftp://shop.example' }, 'return_url: must be an http(s) URL; got the string "ftp://shop.example"'],
    [{ metadata: [1, 2] }, 'metadata: must be an object; got an array'],
    [{ expire_minutes: 20_000 }, 'expire_minutes: must be at most 10080; got the number 20000'],
    [{ currency: 'IDR' }, 'Received unknown parameter: currency. Amounts are whole Rupiah; no currency is sent'],
    [{ merchantOrderId: 'x' }, 'Received unknown parameter: merchantOrderId (did you mean merchant_order_id?)'],
  ];
  for (const [extra, message] of cases) {
    const res = await order(extra);
    t.equal(res.status, 400, JSON.stringify(extra));
    t.same({ code: res.json?.error?.code, message: res.json?.error?.message }, { code: 'INVALID_BODY', message }, JSON.stringify(extra));
  }
  const absent = await call(api.url, { path: '/v1/orders', headers: { 'x-api-key': merchant.api_key }, body: { merchant_order_id: 'INV-1', payment_method: 'QRIS' } });
  t.equal(absent.json?.error?.message, 'amount: is required', 'a field that is absent is required');
  const array = await call(api.url, { path: '/v1/orders', headers: { 'x-api-key': merchant.api_key }, body: [1] });
  t.equal(array.json?.error?.message, 'Request body must be a JSON object; got an array');
});

t.test('unknown fields are refused before anything else, with the known field meant', async (t) => {
  const res = await call(api.url, {
    path: '/v1/disbursements', headers: { 'x-api-key': merchant.api_key },
    body: { idempotency_key: randomUUID(), channel: 'BANK', bank_code: 'BCA', account_number: '1234567890', account_name: 'Budi', amount: 10_000 },
  });
  t.equal(res.status, 400);
  t.same(res.json?.error?.code, 'INVALID_BODY');
  t.equal(res.json?.error?.message, 'Received unknown parameter: bank_code (did you mean bank_short_code?)', 'not MISSING_BANK_INFO');
  const two = await call(api.url, {
    path: '/v1/orders/ORD-1-NOPE/refund', headers: { 'x-api-key': merchant.api_key }, body: { amount: 1, reason: 'x', notes: 'y', ammount: 2 },
  });
  t.equal(two.json?.error?.message, 'Received unknown parameters: notes, ammount (did you mean amount?)');
  const nothing = await call(api.url, { path: '/v1/my/users', headers: { 'x-api-key': merchant.api_key }, body: { full_name: 'Siti', email: 'siti@example.test', role: 'ops', password: 'x' } });
  t.equal(nothing.json?.error?.message, 'Received unknown parameter: password', 'no suggestion when nothing is close');
});

t.test('close names: typos, separators, case, a word added or left out', (t) => {
  const known = ['merchant_order_id', 'amount', 'payment_method', 'customer_phone', 'notify_url', 'bank_short_code', 'ewallet_phone', 'expire_minutes'];
  t.equal(closestName('ammount', known), 'amount');
  t.equal(closestName('amuont', known), 'amount');
  t.equal(closestName('paymentMethod', known), 'payment_method');
  t.equal(closestName('notifyUrl', known), 'notify_url');
  t.equal(closestName('bank_code', known), 'bank_short_code');
  t.equal(closestName('merchant_order', known), 'merchant_order_id');
  t.equal(closestName('expiry_minutes', known), 'expire_minutes');
  t.equal(closestName('currency', known), null);
  t.equal(closestName('password', known), null);
  t.equal(closestName('id', known), null);
  t.end();
});

t.test('BANK_NOT_FOUND names the code sent and points to GET /v1/banks; an unknown e-wallet to GET /v1/ewallets', async (t) => {
  const headers = { 'x-api-key': merchant.api_key };
  const payout = await call(api.url, {
    path: '/v1/disbursements', headers,
    body: { idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCX', account_number: '1234567890', account_name: 'Budi', amount: 10_000 },
  });
  t.equal(payout.status, 400);
  t.same(payout.json?.error?.code, 'BANK_NOT_FOUND');
  t.equal(payout.json?.error?.message, 'bank_short_code: no bank has the short code "BCX"; GET /v1/banks lists the enabled banks and their short codes');
  const saved = await call(api.url, { path: '/v1/beneficiaries', headers, body: { channel: 'BANK', bank_short_code: 'BCX', account_number: '1234567890' } });
  t.equal(saved.json?.error?.code, 'BANK_NOT_FOUND');
  t.match(saved.json?.error?.message, /GET \/v1\/banks/);
  const wallet = await call(api.url, {
    path: '/v1/disbursements', headers,
    body: { idempotency_key: randomUUID(), channel: 'EWALLET', ewallet_provider: 'PAYPAL', ewallet_phone: '081234567890', amount: 10_000 },
  });
  t.equal(wallet.json?.error?.message, 'ewallet_provider: no enabled e-wallet has the code "PAYPAL"; GET /v1/ewallets lists them');
});
