// The document's request schemas against the server's validators, so the two cannot drift: for
// each field a fuzzer found looser in the document than in the server (issue 37), values at the
// schema's edges (just over maxLength, off-pattern, blank, a channel's field missing) are judged
// by the document (ajv, draft 2020-12 with formats, on docs/openapi.json itself) and by the
// running server, and the two verdicts must agree: the server refuses a body's shape (400)
// exactly when the document does. A body the validators pass may still be refused later for
// the merchant's state (no balance, unknown beneficiary): that is not a 400 of shape.
import t, { type Test } from 'tap';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { normalizePhone, PHONE_PATTERN } from '../../api/http/phone.ts';
import { setLegacyPublicKey } from '../../db/merchants.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, type TestResponse } from '../helpers/http.ts';
import { startStack } from '../helpers/stack.ts';

const doc = JSON.parse(await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as Record<string, any>;
const ajv = new Ajv2020({ strict: false, allErrors: false });
addFormats.default(ajv);
ajv.addSchema(doc, 'openapi');

const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

/** The document's verdict on a JSON body of `method path`. */
function documentAccepts(method: string, path: string, body: unknown): boolean {
  const validate = ajv.getSchema(`openapi#/${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}`);
  if (!validate) throw new Error(`no request body schema for ${method} ${path}`);
  return validate(body) as boolean;
}

/** The document's verdict on a path parameter. */
function documentAcceptsParam(method: string, path: string, name: string, value: string): boolean {
  const index = (doc.paths[path][method].parameters as { name: string; in: string }[]).findIndex((p) => p.name === name && p.in === 'path');
  const validate = ajv.getSchema(`openapi#/${pointer('paths', path, method, 'parameters', String(index), 'schema')}`)!;
  return validate(value) as boolean;
}

/** V1 codes that refuse a request's shape: what the document's schema stands for. */
const SHAPE_CODES = new Set(['INVALID_BODY', 'INVALID_ID', 'MISSING_BANK_INFO', 'MISSING_EWALLET_INFO']);
const serverAccepts = (res: TestResponse) => !(res.status === 400 && SHAPE_CODES.has(res.json?.error?.code));

const stack = await startStack(t, { groups: ['vendor'] });
const ctx = stack.api.ctx;
const url = stack.api.url;
const merchant = await makeMerchant(ctx);
const headers = { 'x-api-key': merchant.api_key };
const tag = () => randomBytes(4).toString('hex');

const SEP = ' ';
const PHONES = [
  '', '081234567890', '+62 812-3456-7890', '62 (812) 3456.7890', '8123456789', '812345678', '81234567',
  '08123456789012', '0812345678901', '62081234567', '0012345678', '+0812345678', '6-2-8-1-2-3-4-5-6-7-8-9',
  '123456789', '08123abc789', '++6281234567', ' 081234567890 ', '   ', '62 812 3456 7890'.padEnd(64, SEP), '62 812 3456 7890'.padEnd(65, SEP),
];
const URLS = [
  '', 'https://shop.example.com/kasir/webhook', 'http://shop.example.com', 'HTTPS://Shop.Example.com:8443/hook?x=1#f',
  'ftp://shop.example.com/hook', 'https://user:pw@shop.example.com/hook', 'https://user@shop.example.com/', 'http:shop.example.com/hook',
  'https://shop.example.com/a b', 'not a url', 'https://', 'https:///path', 'https://shop.example.com/' + 'a'.repeat(2048 - 25),
  'https://shop.example.com/' + 'a'.repeat(2048 - 24), ' https://shop.example.com/hook',
];
const EMAILS = [
  'siti@example.com', 'siti@shop-.example.com', 'siti@-shop.example.com', 'siti@shop.example-', 'siti.rahma+team@shop-1.example.co.id',
  'siti@example.c', 'siti@@example.com', '.siti@example.com', 'siti..r@example.com', 'siti@example..com', `s@${'a'.repeat(64)}.com`,
  `s@${'a'.repeat(63)}.com`,
];

t.test('the phone pattern the document shows is exactly what normalizePhone takes', async (t) => {
  for (const value of PHONES) t.equal(PHONE_PATTERN.test(value), value === '' || normalizePhone(value) !== null, JSON.stringify(value));
});

/** Asserts the document and the server agree on every case; returns how many each accepted. */
async function agree(t: Test, what: string, cases: [string, unknown][], send: (body: any) => Promise<TestResponse>, method: string, path: string) {
  let accepted = 0;
  for (const [name, body] of cases) {
    const documented = documentAccepts(method, path, body);
    const res = await send(body);
    t.equal(serverAccepts(res), documented, `${what} ${name}: the document ${documented ? 'accepts' : 'refuses'}, so must the server (${res.status} ${res.text.slice(0, 160)})`);
    if (documented) accepted++;
  }
  t.ok(accepted > 0 && accepted < cases.length, `${what}: both verdicts are exercised`);
}

t.test('POST /v1/orders: customer_phone, notify_url, customer_email', async (t) => {
  const order = (extra: Record<string, unknown>) => ({ merchant_order_id: `DRIFT-${tag()}`, amount: 10_000, payment_method: 'QRIS', ...extra });
  const cases: [string, unknown][] = [
    ...PHONES.map((v) => [`customer_phone ${JSON.stringify(v)}`, order({ customer_phone: v })] as [string, unknown]),
    ...URLS.map((v) => [`notify_url ${JSON.stringify(v.slice(0, 60))} (${v.length})`, order({ notify_url: v })] as [string, unknown]),
    ...EMAILS.map((v) => [`customer_email ${JSON.stringify(v)}`, order({ customer_email: v })] as [string, unknown]),
  ];
  await agree(t, 'order', cases, (body) => call(url, { path: '/v1/orders', headers, body }), 'post', '/v1/orders');
});

t.test('POST /v1/my/users: email and phone_number', async (t) => {
  const user = (extra: Record<string, unknown>) => ({ full_name: 'Siti Rahma', email: `siti-${tag()}@example.com`, role: 'ops', ...extra });
  const cases: [string, unknown][] = [
    ...EMAILS.map((v) => [`email ${JSON.stringify(v)}`, user({ email: v.replace('siti', `siti${tag()}`) })] as [string, unknown]),
    ...PHONES.map((v) => [`phone_number ${JSON.stringify(v)}`, user({ phone_number: v })] as [string, unknown]),
  ];
  await agree(t, 'team user', cases, (body) => call(url, { path: '/v1/my/users', headers, body }), 'post', '/v1/my/users');
});

t.test('POST /v1/disbursements: the fields each channel needs, ewallet_phone, notify_url', async (t) => {
  // No balance: a body the validators pass ends 422 INSUFFICIENT_BALANCE (or 404 for an unknown
  // beneficiary) and moves nothing.
  const bank = { channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso' };
  const ewallet = { channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '081234567890' };
  const pay = (to: Record<string, unknown>) => ({ idempotency_key: `drift-${tag()}`, amount: 10_000, ...to });
  const without = (o: Record<string, unknown>, k: string) => Object.fromEntries(Object.entries(o).filter(([key]) => key !== k));
  const cases: [string, unknown][] = [
    ['BANK, complete', pay(bank)],
    ...Object.keys(bank).map((k) => [`BANK without ${k}`, pay(without(bank, k))] as [string, unknown]),
    ...['bank_short_code', 'account_number', 'account_name'].map((k) => [`BANK with blank ${k}`, pay({ ...bank, [k]: '  ' })] as [string, unknown]),
    ['BANK with the e-wallet\'s fields', pay({ ...ewallet, channel: 'BANK' })],
    ['EWALLET, complete', pay(ewallet)],
    ...Object.keys(ewallet).map((k) => [`EWALLET without ${k}`, pay(without(ewallet, k))] as [string, unknown]),
    ['EWALLET with blank ewallet_provider', pay({ ...ewallet, ewallet_provider: ' ' })],
    ['EWALLET with the bank\'s fields', pay({ ...bank, channel: 'EWALLET' })],
    ['a beneficiary_id alone', pay({ beneficiary_id: randomUUID() })],
    ['nothing of a destination', pay({})],
    ...PHONES.filter((v) => v.trim()).map((v) => [`ewallet_phone ${JSON.stringify(v)}`, pay({ ...ewallet, ewallet_phone: v })] as [string, unknown]),
    ...URLS.map((v) => [`notify_url ${JSON.stringify(v.slice(0, 60))} (${v.length})`, pay({ ...bank, notify_url: v })] as [string, unknown]),
  ];
  await agree(t, 'disbursement', cases, (body) => call(url, { path: '/v1/disbursements', headers, body }), 'post', '/v1/disbursements');
});

t.test('POST /v1/beneficiaries: the fields each channel needs', async (t) => {
  const bank = { bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso' };
  const cases: [string, unknown][] = [
    ['BANK, complete', { channel: 'BANK', ...bank }],
    ['BANK without account_name (the bank names the holder)', { channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567891' }],
    ['BANK without bank_short_code', { channel: 'BANK', account_number: '1234567892' }],
    ['BANK without account_number', { channel: 'BANK', bank_short_code: 'BCA' }],
    ['BANK with a blank account_number', { channel: 'BANK', bank_short_code: 'BCA', account_number: '' }],
    ['EWALLET, complete', { channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '081234567893' }],
    ['EWALLET without ewallet_phone', { channel: 'EWALLET', ewallet_provider: 'OVO' }],
    ['EWALLET with an off-pattern ewallet_phone', { channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '12345' }],
    ['EWALLET with the bank\'s fields', { channel: 'EWALLET', ...bank }],
  ];
  await agree(t, 'beneficiary', cases, (body) => call(url, { path: '/v1/beneficiaries', headers: { ...headers, 'idempotency-key': randomUUID() }, body }), 'post', '/v1/beneficiaries');
});

t.test('GET /v1/refunds/{id}: the pattern of the id', async (t) => {
  const ids = [randomUUID(), randomUUID().toUpperCase(), 'RFD-1764300000-AB12', 'RFD-1-a', 'RFD--X', 'ORD-1-AB', 'not-an-id', `${randomUUID()}x`];
  for (const id of ids) {
    const documented = documentAcceptsParam('get', '/v1/refunds/{id}', 'id', id);
    const res = await call(url, { path: `/v1/refunds/${encodeURIComponent(id)}`, headers });
    t.equal(serverAccepts(res), documented, `${id}: the document ${documented ? 'accepts' : 'refuses'} (${res.status} ${res.json?.error?.code})`);
  }
});

t.test('legacy create bodies: paymentType, notifyUrl, the e-wallet accountNumber', async (t) => {
  // A legacy refusal of shape is 400 "Invalid request parameters" (or, for another paymentType,
  // "Merchant setting is not Valid"); signed, so nothing else is refused first.
  const legacyShape = new Set(['Invalid request parameters', 'Merchant setting is not Valid']);
  const legacyAccepts = (res: TestResponse) => !(res.status === 400 && legacyShape.has(res.json?.message));
  const id = merchant.legacy_client_id;
  const secret = merchant.legacy_client_secret;
  const orderCases: [string, Record<string, unknown>][] = [
    ['paymentType QRIS', { paymentType: 'QRIS' }],
    ['paymentType OVO', { paymentType: 'OVO' }],
    ['paymentType qris', { paymentType: 'qris' }],
    ...URLS.filter((v) => v.length < 200).map((v) => [`notifyUrl ${JSON.stringify(v)}`, { paymentType: 'QRIS', notifyUrl: v }] as [string, Record<string, unknown>]),
  ];
  for (const [name, extra] of orderCases) {
    const orderId = `LDRIFT-${tag()}`;
    const signature = createHash('sha512').update(`${id}|${orderId}|25000|${secret}`).digest('hex');
    const body = { clientId: id, orderId, totalAmount: 25_000, customerName: 'Budi', signature, ...extra };
    const documented = documentAccepts('post', '/api/order/create', body);
    const res = await call(url, { path: '/api/order/create', body });
    t.equal(legacyAccepts(res), documented, `legacy order ${name}: the document ${documented ? 'accepts' : 'refuses'} (${res.status} ${res.text.slice(0, 120)})`);
  }

  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await setLegacyPublicKey(ctx.pool, merchant.merchant_id, publicKey.export({ type: 'spki', format: 'pem' }).toString());
  for (const accountNumber of ['081234567890', '080', '0812345678', '081234567', '08123456789012', '0812345678901', '62812345678', '08123-4567']) {
    const body = { clientId: id, orderId: `LE-${tag()}`, ewalletCode: 'OVO', accountNumber, requestAmount: 25_000 };
    const raw = Buffer.from(JSON.stringify(body));
    const hash = createHash('sha256').update(raw).digest('hex');
    const signature = sign('sha256', Buffer.from(`${id}|${secret}|${hash}`), privateKey).toString('base64');
    const documented = documentAccepts('post', '/api/disbursement/create-ewallet', body);
    const res = await call(url, { path: '/api/disbursement/create-ewallet', headers: { 'X-SIGNATURE': signature }, body: raw });
    t.equal(legacyAccepts(res), documented, `legacy e-wallet accountNumber ${accountNumber}: the document ${documented ? 'accepts' : 'refuses'} (${res.status} ${res.text.slice(0, 120)})`);
  }
});
