// Failed authentication is throttled per client network: past the limit, an address that keeps
// failing is answered 429 with Retry-After instead of 401 until its window ends, while a valid
// credential is never throttled (behind a load balancer without TRUST_PROXY everyone shares one
// address). API keys and legacy signatures share a budget; vendor callbacks have one of their
// own, the same for every code (known or made up, so it tells no code from another), and only a
// callback whose signature fails counts (an authentic one Kasir does not act on, or cannot
// check now, does not). Addresses count by network (IPv6 by /64, every spelling of an address
// as one) in a bounded map that drops windows under the limit before spent ones, so a spent
// budget cannot be bought back by flooding it. TRUST_PROXY decides whose X-Forwarded-For counts.
// Windows end by an injected clock, never by waiting.
// A per-key request limit is the operator's to set. Each API here has its own limits.
import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import { registry } from '../../db/metrics.ts';
import { upsertVendor } from '../../db/vendors.ts';
import { clientNetwork, createWindowCounter } from '../../api/http/auth-throttle.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { simulatorSignature } from '../helpers/order-lifecycle.ts';
import { snapKeys, snapVendor } from '../helpers/snap.ts';

const databaseUrl = await testDatabase(t);
const WRONG = 'f'.repeat(64);

const refusals = async (scheme: string, reason: string) =>
  (await registry.getSingleMetric('kasir_auth_refusals_total')!.get()).values.find((v) => v.labels.scheme === scheme && v.labels.reason === reason)?.value ?? 0;

/** A sim vendor whose callbacks this test signs: authentic, about no order (answered 200 "unknown"). */
const SIM_SECRET = 'throttle-test-sim-secret';
function authenticCallback(apiUrl: string, code = 'sim') {
  const body = JSON.stringify({ event_id: `evt_${randomUUID()}`, type: 'qris.paid', reference: 'ORD-0-NOSUCH', id: 'qr_1', amount: 1000, paid_at: new Date().toISOString(), rrn: '1' });
  return call(apiUrl, { path: `/callbacks/${code}`, headers: { 'content-type': 'application/json', ...simulatorSignature(SIM_SECRET, body) }, body });
}
const forgedCallback = (apiUrl: string, code = 'sim', headers: Record<string, string> = {}) =>
  call(apiUrl, { path: `/callbacks/${code}`, headers: { 'content-type': 'application/json', ...simulatorSignature('not-the-secret', '{}'), ...headers }, body: '{}' });

t.test('an address that keeps failing gets 429 with Retry-After on its failures; a valid key from it is never throttled', async (t) => {
  // A long window: every request below falls in it however slow the machine (its end is the counter test's).
  const api = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '5', AUTH_FAILURE_WINDOW_SECONDS: '3600' }));
  await upsertVendor(api.ctx.pool, api.ctx.sealer, { code: 'sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: { secret: SIM_SECRET } });
  const merchant = await makeMerchant(api.ctx);
  const before = { invalid: await refusals('api_key', 'invalid'), throttled: await refusals('api_key', 'throttled') };
  for (let i = 0; i < 4; i++) t.equal((await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG } })).status, 401);
  // The budget is shared: a wrong legacy signature is the fifth failure.
  const legacy = await call(api.url, { path: '/api/order/query', body: { clientId: 'nobody', orderId: 'x', signature: 'y' } });
  t.equal(legacy.status, 401);
  const wrong = await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG } });
  t.equal(wrong.status, 429, 'the next wrong key waits');
  t.equal(wrong.json?.error?.code, 'TOO_MANY_REQUESTS');
  const retryAfter = Number(wrong.headers['retry-after']);
  t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600, `Retry-After in seconds, until the window ends (${retryAfter})`);
  const legacyThrottled = await call(api.url, { path: '/api/order/query', body: { clientId: 'nobody', orderId: 'x', signature: 'y' } });
  t.same([legacyThrottled.status, legacyThrottled.json], [429, { code: 429, message: 'Too Many Requests', data: null }], 'the legacy envelope');

  const good = await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': merchant.api_key } });
  t.equal(good.status, 200, 'a good key from the same address is served');
  const goodLegacy = await call(api.url, {
    path: '/api/order/query',
    body: { clientId: merchant.legacy_client_id, orderId: 'NOSUCH', signature: createHash('sha512').update(`${merchant.legacy_client_id}|NOSUCH|${merchant.legacy_client_secret}`).digest('hex') },
  });
  t.equal(goodLegacy.status, 404, 'a correctly signed legacy request is served (its order does not exist)');
  t.equal((await authenticCallback(api.url)).status, 200, 'an authentic vendor callback is served');
  t.equal((await forgedCallback(api.url)).status, 401, 'callbacks have their own budget: a bad one is refused, not throttled');
  t.equal(await refusals('api_key', 'invalid') - before.invalid, 4);
  t.ok(await refusals('api_key', 'throttled') - before.throttled >= 1, 'throttled refusals counted');
  t.equal((await call(api.url, { method: 'GET', path: '/healthz' })).status, 200, 'unauthenticated routes are not throttled');
});

t.test('behind one load balancer without TRUST_PROXY, a stranger guessing keys locks nobody out', async (t) => {
  // Every request here comes from 127.0.0.1, as every request behind a balancer comes from it.
  const api = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '20' }));
  await upsertVendor(api.ctx.pool, api.ctx.sealer, { code: 'sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: { secret: SIM_SECRET } });
  const merchant = await makeMerchant(api.ctx);
  for (let i = 0; i < 40; i++) await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG } });
  for (let i = 0; i < 40; i++) await forgedCallback(api.url);
  t.equal((await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': merchant.api_key } })).status, 200, 'valid keys');
  for (let i = 0; i < 5; i++) t.equal((await authenticCallback(api.url)).status, 200, 'the vendor’s real callbacks');
});

t.test('callbacks: one budget for every code; authentic callbacks Kasir does not act on, or cannot check now, never count', async (t) => {
  const api = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '3' }));
  const { pool, sealer } = api.ctx;
  await upsertVendor(pool, sealer, { code: 'sim', kind: 'simulator', baseUrl: 'http://127.0.0.1:1', credentials: { secret: SIM_SECRET } });
  await upsertVendor(pool, sealer, { code: 'xt', kind: 'xendit', baseUrl: 'http://127.0.0.1:1', credentials: { secretKey: 'xnd_development_throttle', callbackToken: 'throttle-callback-token' } });
  // A Midtrans vendor whose status and Iris payouts cannot be read (nothing listens there).
  await upsertVendor(pool, sealer, {
    code: 'md',
    kind: 'midtrans',
    baseUrl: 'http://127.0.0.1:1',
    credentials: { serverKey: 'SB-Mid-server-throttle', qrisAcquirer: 'gopay', irisBaseUrl: 'http://127.0.0.1:1', irisCreatorKey: 'IRIS-c-throttle', irisApproverKey: 'IRIS-a-throttle', irisMerchantKey: 'IRIS-m-throttle' },
  });

  for (let i = 0; i < 6; i++) {
    // Noted: an event Kasir does not act on.
    const noted = await call(api.url, { path: '/callbacks/xt', headers: { 'content-type': 'application/json', 'x-callback-token': 'throttle-callback-token' }, body: JSON.stringify({ event: 'payout.reversed', data: { id: `d${i}`, status: 'REVERSED' } }) });
    t.equal(noted.status, 200, 'an authentic event Kasir does not act on: 200');
    // Iris during an outage: authentic, but the payout cannot be read now.
    const raw = JSON.stringify({ reference_no: `ref${i}`, status: 'completed' });
    const iris = await call(api.url, { path: '/callbacks/md', headers: { 'content-type': 'application/json', 'iris-signature': createHash('sha512').update(raw + 'IRIS-m-throttle').digest('hex') }, body: raw });
    t.equal(iris.status, 503, 'an authentic Iris notification that cannot be checked now: 503, so Iris sends it again');
    // A Midtrans payment notification whose status cannot be re-read.
    const note = { order_id: `ORD-${i}`, status_code: '200', gross_amount: '1000.00', transaction_status: 'settlement' };
    const signature = createHash('sha512').update(`${note.order_id}${note.status_code}${note.gross_amount}SB-Mid-server-throttle`).digest('hex');
    const payment = await call(api.url, { path: '/callbacks/md', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...note, signature_key: signature }) });
    t.equal(payment.status, 503, 'a Midtrans notification whose status cannot be re-read: 503');
  }
  // None of those 18 counted: the budget of 3 has room for three forged callbacks still.
  for (const code of ['xt', 'md']) t.equal((await forgedCallback(api.url, code)).status, 401, `${code}: a forged one is a plain 401`);
  // An unknown code is counted like a bad signature, in the same budget, and answered like one.
  t.equal((await forgedCallback(api.url, 'nosuch')).status, 401, 'the third failure, at a code no vendor holds');
  t.equal((await forgedCallback(api.url, 'sim')).status, 429, 'the fourth: the callbacks’ budget is spent');
  for (const code of ['xt', 'nosuch', 'other-made-up']) {
    t.equal((await forgedCallback(api.url, code)).status, 429, `${code}: the same budget, whether a vendor holds the code or not`);
  }
  t.equal((await authenticCallback(api.url, 'sim')).status, 200, 'authentic callbacks still pass');
  t.equal((await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG } })).status, 401, 'the API keys’ budget is its own');
});

t.test('callbacks: SNAP token requests with a bad signature count against the callbacks’ budget', async (t) => {
  const api = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '3' }));
  const snap = snapVendor('http://127.0.0.1:1', { notifySignature: 'hmac' }, 'sn');
  await upsertVendor(api.ctx.pool, api.ctx.sealer, { code: 'sn', kind: 'snap', baseUrl: snap.baseUrl, credentials: snap.credentials });
  const ts = `${new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 19)}+07:00`;
  const tokenRequest = () =>
    call(api.url, { path: '/callbacks/sn/v1.0/access-token/b2b', headers: { 'content-type': 'application/json', 'x-timestamp': ts, 'x-client-key': 'kasir-test-client-key', 'x-signature': 'bm90IGEgc2lnbmF0dXJl' }, body: '{"grantType":"client_credentials"}' });
  for (let i = 0; i < 3; i++) t.equal((await tokenRequest()).status, 401, 'a token request with a bad signature');
  t.equal((await tokenRequest()).status, 429, 'counted: the fourth is throttled');
  t.ok(snapKeys().providerPublicPem, 'the vendor holds the provider key the requests fail against');
});

t.test('a spent budget cannot be bought back by flooding the counter with new keys', async (t) => {
  let now = 0;
  const counter = createWindowCounter(3, 60, () => now, 100);
  for (let i = 0; i < 3; i++) counter.add('callback|4:203.0.113.9');
  t.ok(counter.waitFor('callback|4:203.0.113.9') > 0, 'spent');
  for (let i = 0; i < 10_000; i++) counter.add(`callback-${i}|4:203.0.113.9`);
  t.equal(counter.size, 100, 'still bounded');
  t.ok(counter.waitFor('callback|4:203.0.113.9') > 0, 'the spent window outlives 10,000 new ones: windows under the limit go first');
  t.equal(counter.waitFor('callback-0|4:203.0.113.9'), 0, 'the oldest windows under the limit were dropped');

  // Only when every window held is spent does a spent one go, the oldest first.
  for (let k = 0; k < 100; k++) for (let i = 0; i < 3; i++) counter.add(`spent-${k}`);
  t.equal(counter.waitFor('callback|4:203.0.113.9'), 0, 'pushed out by 100 budgets spent after it');
  t.ok(counter.waitFor('spent-99') > 0);

  // A spent window whose time is up goes before any window still counting.
  const timed = createWindowCounter(2, 60, () => now, 3);
  timed.add('a');
  timed.add('a');
  now += 61_000;
  timed.add('b');
  timed.add('c');
  timed.add('d');
  t.equal(timed.size, 3);
  for (const key of ['b', 'c', 'd']) {
    timed.add(key);
    t.ok(timed.waitFor(key) > 0, `${key} was kept`);
  }
});

t.test('addresses are counted by network: IPv6 by /64, every spelling of one address as one', async (t) => {
  t.equal(clientNetwork('203.0.113.9'), '4:203.0.113.9');
  t.equal(clientNetwork('::ffff:203.0.113.9'), '4:203.0.113.9', 'IPv4-mapped IPv6 is the IPv4 address');
  t.equal(clientNetwork('::ffff:cb00:7109'), '4:203.0.113.9', 'in hex too');
  t.equal(clientNetwork('2001:db8::1'), '6:2001:db8:0:0::/64');
  t.equal(clientNetwork('2001:DB8:0:0:ffff:1:2:3'), '6:2001:db8:0:0::/64', 'upper case, another host of the /64');
  t.equal(clientNetwork('2001:0db8:0000:0000::9%eth0'), '6:2001:db8:0:0::/64', 'leading zeros and a zone');
  t.equal(clientNetwork('2001:db8:0:1::1'), '6:2001:db8:0:1::/64', 'the next /64 is another network');

  const api = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: 'loopback' }));
  const from = (ip: string) => call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG, 'x-forwarded-for': ip } });
  for (const ip of ['2001:db8:aa::1', '2001:db8:aa::2', '2001:DB8:AA:0::3']) t.equal((await from(ip)).status, 401);
  t.equal((await from('2001:db8:aa:0:1234:5678:9abc:def0')).status, 429, 'a fourth address of the same /64 is throttled');
  t.equal((await from('2001:db8:bb::1')).status, 401, 'another /64 is not');
  for (const ip of ['198.51.100.7', '::ffff:198.51.100.7', '::ffff:c633:6407']) t.equal((await from(ip)).status, 401);
  t.equal((await from('198.51.100.7')).status, 429, 'three spellings of one IPv4 address share its budget');
});

t.test('the counter keeps at most its bound, dropping the oldest windows first', async (t) => {
  let now = 0;
  const counter = createWindowCounter(2, 60, () => now, 100);
  for (let i = 0; i < 1000; i++) counter.add(`k${i}`);
  t.equal(counter.size, 100, 'bounded');
  t.equal(counter.waitFor('k999'), 0);
  counter.add('k999');
  t.ok(counter.waitFor('k999') > 0, 'the newest windows are kept');
  counter.add('k0');
  t.equal(counter.waitFor('k0'), 0, 'the oldest were dropped (k0 starts over)');
  now = 61_000;
  t.equal(counter.waitFor('k999'), 0, 'a window ends');
});

t.test('a CORS preflight is not a failed authentication', async (t) => {
  const api = await startApi(t, testConfig(databaseUrl, { AUTH_FAILURE_LIMIT: '2' }));
  for (let i = 0; i < 5; i++) await call(api.url, { method: 'OPTIONS', path: '/v1/balance' });
  t.equal((await call(api.url, { method: 'GET', path: '/v1/balance', headers: { 'x-api-key': WRONG } })).status, 401, 'preflights spent nothing');
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
