// Headers on every API answer (api/http/response-headers.ts): JSON answers — V1 data and errors,
// legacy answers and errors, 404s, health — carry X-Content-Type-Options: nosniff and
// Cache-Control: no-store, and Strict-Transport-Security when PUBLIC_BASE_URL is https; the
// routes that serve cacheable things keep their own Cache-Control.
import t from 'tap';
import { createHash } from 'node:crypto';
import { call, type TestResponse } from '../helpers/http.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';

const databaseUrl = await testDatabase(t);
const [secure, plain] = await Promise.all([
  startApi(t, testConfig(databaseUrl, { PUBLIC_BASE_URL: 'https://pay.example.com' })),
  startApi(t, testConfig(databaseUrl, { PUBLIC_BASE_URL: 'http://127.0.0.1:3000' })),
]);
const merchant = await makeMerchant(secure.ctx);
const key = { 'x-api-key': merchant.api_key };

const sha512 = (text: string) => createHash('sha512').update(text, 'utf8').digest('hex');
const legacyQuery = {
  clientId: merchant.legacy_client_id,
  orderId: 'NO-SUCH-ORDER',
  signature: sha512(`${merchant.legacy_client_id}|NO-SUCH-ORDER|${merchant.legacy_client_secret}`),
};

/** Every kind of JSON answer, each with the status it must have. */
const JSON_ANSWERS: [string, number, Parameters<typeof call>[1]][] = [
  ['health', 200, { path: '/healthz' }],
  ['V1 data', 200, { path: '/v1/brand', headers: key }],
  ['V1 page', 200, { path: '/v1/orders', headers: key }],
  ['V1 401', 401, { path: '/v1/orders' }],
  ['V1 validation error', 400, { path: '/v1/orders', headers: key, body: { amount: 'lots' } }],
  ['V1 malformed JSON', 400, { path: '/v1/orders', headers: key, body: '{"amount":' }],
  ['V1 unknown route 404', 404, { path: '/v1/no-such-thing', headers: key }],
  ['unknown path 404', 404, { path: '/nowhere' }],
  ['unknown QR 404', 404, { path: '/qr/AAAAAAAAAAAAAAAAAAAA.png' }],
  ['legacy answer', 404, { path: '/api/order/query', body: legacyQuery }],
  ['legacy error', 401, { path: '/api/order/query', body: { ...legacyQuery, signature: 'x'.repeat(128) } }],
  ['legacy disbursement error', 400, { path: '/api/disbursement/get-balance', body: {} }],
  ['checkout status 404', 404, { path: '/pay/NO-SUCH-REF/status' }],
];

function jsonHeaders(tt: Pick<typeof t, 'equal' | 'match'>, res: TestResponse, what: string) {
  tt.match(String(res.headers['content-type']), /^application\/json/, `${what}: JSON`);
  tt.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  tt.equal(res.headers['cache-control'], 'no-store', `${what}: no-store`);
}

t.test('every JSON answer is nosniff and no-store, with HSTS when the public base URL is https', async (t) => {
  for (const [what, status, req] of JSON_ANSWERS) {
    const res = await call(secure.url, req);
    t.equal(res.status, status, `${what}: ${status}`);
    jsonHeaders(t, res, what);
    t.equal(res.headers['strict-transport-security'], 'max-age=31536000', `${what}: HSTS`);
  }
});

t.test('no HSTS when the public base URL is plain http; the rest the same', async (t) => {
  for (const [what, status, req] of JSON_ANSWERS) {
    const res = await call(plain.url, req);
    t.equal(res.status, status, `${what}: ${status}`);
    jsonHeaders(t, res, what);
    t.equal(res.headers['strict-transport-security'], undefined, `${what}: no HSTS`);
  }
});

t.test('cacheable answers keep their own Cache-Control', async (t) => {
  const cases: [string, Parameters<typeof call>[1], string][] = [
    ['master data (private, an hour)', { path: '/v1/banks', headers: key }, 'private, max-age=3600'],
    ['checkout asset (content-hashed)', { path: '/pay/assets/checkout.js' }, 'public, max-age=31536000, immutable'],
    ['OpenAPI document', { path: '/openapi.json' }, 'no-cache'],
    ['docs page', { path: '/docs' }, 'no-cache'],
    ['docs static file (express.static maxAge)', { path: '/docs/swagger-ui.css' }, 'public, max-age=86400'],
    ['checkout page 404', { path: '/pay/NO-SUCH-REF' }, 'no-store'],
  ];
  for (const [what, req, cacheControl] of cases) {
    const res = await call(secure.url, req);
    t.ok(res.status === 200 || res.status === 404, `${what}: ${res.status}`);
    t.equal(res.headers['cache-control'], cacheControl, `${what}: ${cacheControl}`);
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  }
  const page = await call(secure.url, { path: '/pay/NO-SUCH-REF' });
  t.equal(page.headers['x-frame-options'], 'DENY', "the checkout page's own headers stay");
  t.match(String(page.headers['content-security-policy']), /frame-ancestors 'none'/);
});
