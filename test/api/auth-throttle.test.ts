// Failed authentication is throttled per client address (one budget for V1 keys, legacy
// signatures and vendor callbacks): past the limit the address gets 429 with Retry-After, even
// with a good key, until its window ends. TRUST_PROXY decides whose X-Forwarded-For counts. A
// per-key request limit is the operator's to set. Each API here has its own limits.
import t from 'tap';
import { registry } from '../../db/metrics.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually } from '../helpers/http.ts';

const databaseUrl = await testDatabase(t);
const WRONG = 'f'.repeat(64);

const refusals = async (scheme: string, reason: string) =>
  (await registry.getSingleMetric('kasir_auth_refusals_total')!.get()).values.find((v) => v.labels.scheme === scheme && v.labels.reason === reason)?.value ?? 0;

t.test('an address that keeps failing gets 429 with Retry-After, whatever it sends, until its window ends', async (t) => {
  const api = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '5', AUTH_FAILURE_WINDOW_SECONDS: '2' }));
  const merchant = await makeMerchant(api.ctx);
  const before = { invalid: await refusals('api_key', 'invalid'), throttled: await refusals('api_key', 'throttled') };
  for (let i = 0; i < 4; i++) t.equal((await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG } })).status, 401);
  // The budget is shared: a wrong legacy signature is the fifth failure.
  const legacy = await call(api.url, { path: '/api/order/query', body: { clientId: 'nobody', orderId: 'x', signature: 'y' } });
  t.equal(legacy.status, 401);
  const good = await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': merchant.api_key } });
  t.equal(good.status, 429, 'a good key from the same address waits too');
  t.equal(good.json?.error?.code, 'TOO_MANY_REQUESTS');
  t.match(good.headers['retry-after'], /^[12]$/, 'Retry-After in seconds');
  const legacyThrottled = await call(api.url, { path: '/api/order/query', body: { clientId: 'nobody', orderId: 'x', signature: 'y' } });
  t.same([legacyThrottled.status, legacyThrottled.json], [429, { code: 429, message: 'Too Many Requests', data: null }], 'the legacy envelope');
  t.equal((await call(api.url, { path: '/callbacks/sim', body: { any: 1 } })).status, 429, 'vendor callbacks too');
  t.equal(await refusals('api_key', 'invalid') - before.invalid, 4);
  t.ok(await refusals('api_key', 'throttled') - before.throttled >= 1, 'throttled refusals counted');
  t.equal((await call(api.url, { method: 'GET', path: '/healthz' })).status, 200, 'unauthenticated routes are not throttled');
  // The window ends: the good key works again (polled, no fixed sleep).
  await eventually(async () => ((await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': merchant.api_key } })).status === 200 ? true : undefined), 'the window to end', 5_000);
});

t.test('TRUST_PROXY: failures count against the forwarded client, not the proxy', async (t) => {
  const trusting = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: 'loopback' }));
  const from = (ip: string) => call(trusting.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG, 'x-forwarded-for': ip } });
  for (let i = 0; i < 3; i++) t.equal((await from('203.0.113.7')).status, 401);
  t.equal((await from('203.0.113.7')).status, 429, 'that client is throttled');
  t.equal((await from('198.51.100.9')).status, 401, 'another client behind the same proxy is not');

  const direct = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '3' }));
  const spoofed = (ip: string) => call(direct.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG, 'x-forwarded-for': ip } });
  for (let i = 0; i < 3; i++) await spoofed(`192.0.2.${i}`);
  t.equal((await spoofed('192.0.2.200')).status, 429, 'without TRUST_PROXY a made-up X-Forwarded-For changes nothing');
});

t.test('API_KEY_REQUESTS_PER_MINUTE: past it a key waits; other keys do not', async (t) => {
  const api = await startApi(t, testConfig(databaseUrl, { API_KEY_REQUESTS_PER_MINUTE: '3' }));
  const [a, b] = [await makeMerchant(api.ctx), await makeMerchant(api.ctx)];
  const balance = (key: string) => call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': key } });
  for (let i = 0; i < 3; i++) t.equal((await balance(a.api_key)).status, 200);
  const over = await balance(a.api_key);
  t.equal(over.status, 429);
  t.ok(Number(over.headers['retry-after']) >= 1 && Number(over.headers['retry-after']) <= 60);
  t.equal((await balance(b.api_key)).status, 200, 'another key has its own budget');
});
