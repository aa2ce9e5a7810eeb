import t from 'tap';
import { call } from '../helpers/http.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';

const api = await startApi(t, testConfig(await testDatabase(t), { BODY_LIMIT: '1kb' }));
const merchant = await makeMerchant(api.ctx);
const auth = { 'x-api-key': merchant.api_key };

t.test('malformed JSON is 400 INVALID_JSON in the V1 envelope', async (t) => {
  const res = await call(api.url, { path: '/v1/orders', headers: auth, body: '{"amount": 1,' });
  t.equal(res.status, 400);
  t.same(res.json, { success: false, error: { code: 'INVALID_JSON', message: res.json.error.message, request_id: res.headers['x-request-id'] } });
  t.equal(res.json.error.code, 'INVALID_JSON');
  t.equal(res.json.error.message, 'Request body is not valid JSON: Expected double-quoted property name at line 1, column 14', 'says where and why');
  const lines = await call(api.url, { path: '/v1/orders', headers: auth, body: '{\n  "amount": 1\n  "payment_method": "QRIS"\n}' });
  t.equal(lines.json.error.message, 'Request body is not valid JSON: Expected \',\' or \'}\' after property value at line 3, column 3');
  const token = await call(api.url, { path: '/v1/orders', headers: auth, body: '{"amount": tru}' });
  t.equal(token.json.error.message, 'Request body is not valid JSON: Unexpected token \'}\' at line 1, column 15', 'a position V8 does not give is found, and the body is not echoed');
});

t.test('a known path with another method is 405 with Allow; an unknown path stays 404', async (t) => {
  const cases: [string, string, string][] = [
    ['PUT', '/v1/orders', 'GET, HEAD, POST'],
    ['DELETE', '/v1/orders/ORD-1-NOPE', 'GET, HEAD'],
    ['GET', '/v1/reports/export', 'POST'],
    ['PUT', '/v1/my/users/3f0c2a8e-5b7d-4c1e-9a6f-2d8b7e4c1a90/role', 'DELETE, PATCH'],
  ];
  for (const [method, path, allow] of cases) {
    const res = await call(api.url, { method, path, headers: auth });
    t.equal(res.status, 405, `${method} ${path}`);
    t.equal(res.headers.allow, allow, `${method} ${path}: Allow`);
    t.equal(res.json.error.code, 'METHOD_NOT_ALLOWED');
    t.equal(res.json.error.message, `${path} does not take ${method}; it takes ${allow}`);
  }
  const unknown = await call(api.url, { method: 'PUT', path: '/v1/nothing', headers: auth });
  t.equal(unknown.status, 404);
  t.notOk(unknown.headers.allow);
  const legacy = await call(api.url, { method: 'GET', path: '/api/order/create' });
  t.equal(legacy.status, 405, 'a legacy path answers a wrong method 405 too');
  t.same(legacy.json, { code: 405, message: 'Method Not Allowed', data: null }, 'in the legacy envelope');
  t.equal(legacy.headers.allow, 'POST');
  const legacyUnknown = await call(api.url, { method: 'POST', path: '/api/order/nothing' });
  t.equal(legacyUnknown.status, 404, 'an unknown legacy path keeps its Not Found');
  t.same(legacyUnknown.json, { code: 404, message: 'Not Found', data: null });
  t.notOk(legacyUnknown.headers.allow);
});

t.test('an error body carries the request id: the one the caller sent, or the one Kasir made', async (t) => {
  const made = await call(api.url, { path: '/v1/orders/ORD-0-NOPE', headers: auth });
  t.equal(made.status, 404);
  t.match(made.json.error.request_id, /^[0-9a-f-]{36}$/, 'a fresh id');
  t.equal(made.json.error.request_id, made.headers['x-request-id'], 'the same as X-Request-Id');
  const sent = await call(api.url, { path: '/v1/orders/ORD-0-NOPE', headers: { ...auth, 'x-request-id': 'merchant-trace-42' } });
  t.equal(sent.json.error.request_id, 'merchant-trace-42', "the caller's own id");
});

t.test('malformed JSON is refused whatever the Content-Type says', async (t) => {
  const res = await call(api.url, { path: '/v1/orders', headers: { ...auth, 'content-type': 'text/plain' }, body: 'not json' });
  t.equal(res.status, 400);
  t.equal(res.json.error.code, 'INVALID_JSON');
});

t.test('an unknown route is 404 with the envelope', async (t) => {
  const res = await call(api.url, { path: '/v1/no-such-thing', headers: auth });
  t.equal(res.status, 404);
  t.equal(res.json.success, false);
  t.equal(res.json.error.code, 'NOT_FOUND');
  t.match(res.json.error.message, /GET \/v1\/no-such-thing/);
});

t.test('an unknown non-v1 route is 404 with the envelope', async (t) => {
  const res = await call(api.url, { path: '/nowhere' });
  t.equal(res.status, 404);
  t.equal(res.json.error.code, 'NOT_FOUND');
});

t.test('an oversize body is refused with 413 before it is parsed', async (t) => {
  const res = await call(api.url, { path: '/v1/orders', headers: auth, body: { pad: 'x'.repeat(2048) } });
  t.equal(res.status, 413);
  t.equal(res.json.success, false);
  t.equal(res.json.error.code, 'INVALID_BODY');
  t.match(res.json.error.message, /1kb/);
});

t.test('legacy paths answer in the legacy envelope', async (t) => {
  const bad = await call(api.url, { path: '/api/order/create', body: '{nope' });
  t.equal(bad.status, 400);
  t.same(bad.json, { code: 400, message: 'Invalid request parameters', data: null });
  const missing = await call(api.url, { path: '/api/nothing-here', method: 'POST', body: {} });
  t.equal(missing.status, 404);
  t.equal(missing.json.code, 404);
});

t.test('every response carries a request id, and a sane caller id is echoed', async (t) => {
  const fresh = await call(api.url, { path: '/v1/brand' });
  t.match(fresh.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const given = await call(api.url, { path: '/v1/brand', headers: { 'x-request-id': 'trace-123' } });
  t.equal(given.headers['x-request-id'], 'trace-123');
});
