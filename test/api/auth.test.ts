import t from 'tap';
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

t.test('missing key is 401 UNAUTHORIZED', async (t) => {
  const res = await probe({});
  t.equal(res.status, 401);
  t.same(res.json, { success: false, error: { code: 'UNAUTHORIZED', message: 'Missing or invalid API key', request_id: res.headers['x-request-id'] } });
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
