import t from 'tap';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { sql } from '../../db/pool.ts';
import { hashApiKey } from '../../db/secrets.ts';
import { call } from '../helpers/http.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { makeBrand, makeMerchant } from '../helpers/factories.ts';
import { setMerchantStatus } from '../../db/merchants.ts';

const api = await startApi(t, testConfig(await testDatabase(t)));
// An authenticated request to an unknown /v1 path is 404: it got past authentication.
const probe = (headers: Record<string, string>, path = '/v1/probe') => call(api.url, { path, headers });

t.test('a valid key authenticates', async (t) => {
  const merchant = await makeMerchant(api.ctx);
  const res = await probe({ 'x-api-key': merchant.api_key });
  t.equal(res.status, 404);
  t.equal(res.json.error.code, 'NOT_FOUND');
});

t.test('missing key is 401 UNAUTHORIZED naming the X-API-Key header', async (t) => {
  const res = await probe({});
  t.equal(res.status, 401);
  t.same(res.json, { success: false, error: { code: 'UNAUTHORIZED', message: 'Missing API key: send it in the X-API-Key header', request_id: res.headers['x-request-id'] } });
});

t.test('each refusal names its fix: Bearer instead of X-API-Key, a malformed key, an unknown key', async (t) => {
  const merchant = await makeMerchant(api.ctx);
  const bearer = await probe({ authorization: `Bearer ${merchant.api_key}` });
  t.equal(bearer.status, 401);
  t.equal(bearer.json.error.code, 'UNAUTHORIZED');
  t.match(bearer.json.error.message, /^API keys go in the X-API-Key header, not Authorization/);
  const malformed = await probe({ 'x-api-key': 'sk_live_123' });
  t.match(malformed.json.error.message, /^X-API-Key is not an API key: expected 64 hex characters/);
  const unknown = await probe({ 'x-api-key': 'f'.repeat(64) });
  t.match(unknown.json.error.message, /^Invalid API key: the X-API-Key header matches no active key/);
  const brand = await makeBrand(api.ctx);
  const offBrand = await probe({ 'x-api-key': merchant.api_key, host: brand.domain });
  t.equal(offBrand.json.error.message, unknown.json.error.message, 'another brand\'s key reads as unknown');
});

t.test('new keys are 64 hex characters (spec 5.1); keys issued with the kasir_sk_ prefix or bare keep working', async (t) => {
  const merchant = await makeMerchant(api.ctx);
  t.match(merchant.api_key, /^[0-9a-f]{64}$/, 'the spec\'s form: 64 lowercase hex characters, nothing else');
  t.equal((await probe({ 'x-api-key': merchant.api_key })).status, 404, 'the new key authenticates');
  t.equal((await probe({ 'x-api-key': merchant.api_key.toUpperCase() })).status, 404, 'in either case');

  // A key an earlier release issued: kasir_sk_ + 64 hex, its digest taken over the whole string.
  const prefixed = `kasir_sk_${randomBytes(32).toString('hex')}`;
  await api.ctx.pool.query(sql.unsafe`update merchants set api_key_hash = ${sql.binary(hashApiKey(prefixed))} where id = ${merchant.merchant_id}`);
  t.equal((await probe({ 'x-api-key': prefixed })).status, 404, 'a kasir_sk_ key keeps working as issued');
  t.equal((await probe({ 'x-api-key': prefixed.slice('kasir_sk_'.length) })).status, 401, 'its hex part alone is another key');
  t.equal((await probe({ 'x-api-key': merchant.api_key })).status, 401, 'the replaced key is gone');

  const bare = randomBytes(32).toString('hex');
  await api.ctx.pool.query(sql.unsafe`update merchants set api_key_hash = ${sql.binary(hashApiKey(bare))} where id = ${merchant.merchant_id}`);
  t.equal((await probe({ 'x-api-key': bare })).status, 404, 'a key of 64 bare hex characters authenticates');
  t.equal((await probe({ 'x-api-key': `kasir_sk_${bare}` })).status, 401, 'the prefix is part of the keys that had it, not added to others');
});

t.test('the secret-scanner rule README.md gives finds a key by its context, not a bare digest', async (t) => {
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  const rule = /for gitleaks a custom rule with the regex\s+`([^`]+)`/.exec(readme)?.[1];
  t.ok(rule, 'README.md gives the rule');
  const pattern = new RegExp(rule!.replace(/^\(\?i\)/, ''), 'i');
  const key = (await makeMerchant(api.ctx)).api_key;
  for (const line of [`curl -H "X-API-Key: ${key}" $API/v1/balance`, `KASIR_API_KEY=${key}`, `{"X-API-Key": "${key}"}`, `kasir_api_key: '${key}'`]) {
    t.equal(pattern.exec(line)?.[1], key, line.replace(key, '<key>'));
  }
  t.notOk(pattern.test(`sha256 ${createHash('sha256').update('a release tarball').digest('hex')}`), 'a digest with no key context is not a finding');
});

t.test('X-Signature refusals say the expected form', async (t) => {
  const secret = 'whsec_dGVzdC1zZWNyZXQtdGVzdC1zZWNyZXQ=';
  const merchant = await makeMerchant(api.ctx, { webhookSecret: secret });
  const body = JSON.stringify({ merchant_order_id: 'INV-SIG', amount: 10_000, payment_method: 'QRIS' });
  const hex = createHmac('sha256', secret).update(body).digest('hex');
  const send = (signature?: string) => call(api.url, {
    path: '/v1/orders', body, headers: { 'x-api-key': merchant.api_key, ...(signature === undefined ? {} : { 'x-signature': signature }) },
  });
  const cases: [string | undefined, RegExp][] = [
    [undefined, /^X-Signature is required for this merchant: sha256=<64 lowercase hex characters/],
    [hex, /^X-Signature lacks the sha256= prefix: expected sha256=<64 lowercase hex characters: HMAC-SHA256 of the raw body, keyed with the webhook secret>$/],
    [`sha256=${hex.toUpperCase()}`, /^X-Signature must be lowercase/],
    [`sha256=${createHmac('sha256', secret).update(body).digest('base64')}`, /^X-Signature is base64; expected hex/],
    ['signed', /^X-Signature is not in the expected form: expected sha256=/],
    [`sha256=${'0'.repeat(64)}`, /^X-Signature does not match the request body: expected sha256=<64 lowercase hex characters.*Sign the exact bytes sent/],
  ];
  for (const [signature, message] of cases) {
    const res = await send(signature);
    t.equal(res.status, 401, String(signature));
    t.equal(res.json?.error?.code, 'INVALID_SIGNATURE');
    t.match(res.json?.error?.message, message, String(signature));
  }
});

t.test('a wrong key, a malformed key and a one-character change are 401', async (t) => {
  const merchant = await makeMerchant(api.ctx);
  const flipped = merchant.api_key.slice(0, -1) + (merchant.api_key.endsWith('0') ? '1' : '0');
  for (const key of ['f'.repeat(64), 'not-a-key', flipped, merchant.api_key + '00']) {
    const res = await probe({ 'x-api-key': key });
    t.equal(res.status, 401, key);
    t.equal(res.json.error.code, 'UNAUTHORIZED');
  }
});

t.test('a key in the query string is never accepted', async (t) => {
  const merchant = await makeMerchant(api.ctx);
  for (const name of ['api_key', 'apiKey', 'x-api-key']) {
    const res = await probe({}, `/v1/probe?${name}=${merchant.api_key}`);
    t.equal(res.status, 401, name);
    t.equal(res.json.error.code, 'UNAUTHORIZED');
  }
  // Even alongside a valid header: a key that travelled in a URL is compromised.
  const both = await probe({ 'x-api-key': merchant.api_key }, `/v1/probe?api_key=${merchant.api_key}`);
  t.equal(both.status, 401);
});

t.test('suspended and disabled merchants are 403 MERCHANT_INACTIVE', async (t) => {
  for (const status of ['SUSPENDED', 'DISABLED'] as const) {
    const merchant = await makeMerchant(api.ctx);
    await setMerchantStatus(api.ctx.pool, merchant.merchant_id, status);
    const res = await probe({ 'x-api-key': merchant.api_key });
    t.equal(res.status, 403, status);
    t.equal(res.json.error.code, 'MERCHANT_INACTIVE');
    await setMerchantStatus(api.ctx.pool, merchant.merchant_id, 'ACTIVE');
    t.equal((await probe({ 'x-api-key': merchant.api_key })).status, 404, 'reactivated');
  }
});

t.test("a merchant key used on another brand's domain is 401", async (t) => {
  const brand = await makeBrand(api.ctx);
  const branded = await makeMerchant(api.ctx, { brandId: brand.id });
  const plain = await makeMerchant(api.ctx);
  const onBrand = await probe({ 'x-api-key': branded.api_key, host: `${brand.domain}:443` });
  t.equal(onBrand.status, 404, 'own domain authenticates');
  const offBrand = await probe({ 'x-api-key': branded.api_key, host: 'localhost' });
  t.equal(offBrand.status, 401, 'default domain refuses a branded key');
  const intruder = await probe({ 'x-api-key': plain.api_key, host: brand.domain });
  t.equal(intruder.status, 401, "brand domain refuses another brand's key");
  t.equal(intruder.json.error.code, 'UNAUTHORIZED');
});

t.test('/v1/brand and /healthz need no key', async (t) => {
  t.equal((await call(api.url, { path: '/v1/brand' })).status, 200);
  t.equal((await call(api.url, { path: '/healthz' })).status, 200);
});
