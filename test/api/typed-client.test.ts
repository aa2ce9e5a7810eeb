// The merchant-facing typed client (docs/client/index.ts, types generated from the OpenAPI
// document) against a running Kasir: an order created, read, listed and paid through it; a
// validation error arrives as the typed error envelope; with a webhook secret the client signs
// POST /v1/orders over the bytes it sends; the legacy helpers sign an order query (SHA-512) and
// a disbursement call (RSA X-SIGNATURE) that Kasir accepts, and a wrong key is refused.
import t from 'tap';
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import {
  createKasirClient, legacyOrderQuerySignature, signedLegacyCall, type LegacyCredentials, type Schemas,
} from '../../docs/client/index.ts';
import { adjustWallet } from '../../db/ledger.ts';
import { setLegacyPublicKey } from '../../db/merchants.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { eventually } from '../helpers/http.ts';
import { simulatePay } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const stack = await startStack(t, { groups: ['vendor'] });
const ctx = stack.api.ctx;
const baseUrl = stack.api.url;

const orderBody = (amount: number) => ({
  merchant_order_id: `TC-${randomBytes(4).toString('hex')}`, amount, payment_method: 'QRIS' as const, customer_name: 'Budi Santoso',
});

t.test('an order is created, read, listed and paid through the typed client', async (t) => {
  const merchant = await makeMerchant(ctx);
  const kasir = createKasirClient({ baseUrl, apiKey: merchant.api_key });
  const body = orderBody(150_000);

  const created = await kasir.POST('/v1/orders', { body, params: { header: { 'Idempotency-Key': randomUUID() } } });
  t.equal(created.response.status, 201, JSON.stringify(created.error));
  const order: Schemas['Order'] = created.data!.data;
  t.match(order, { merchant_order_id: body.merchant_order_id, amount: 150_000, status: 'PENDING', refundable_amount: 0 });
  t.match(order.ref_code, /^ORD-/);

  const read = await kasir.GET('/v1/orders/{ref_code}', { params: { path: { ref_code: order.ref_code } } });
  t.equal(read.response.status, 200);
  t.same(read.data?.data, order, 'the order reads back as created');

  const listed = await kasir.GET('/v1/orders', { params: { query: { merchant_order_id: body.merchant_order_id } } });
  t.equal(listed.response.status, 200);
  t.same(listed.data?.data.map((o) => o.ref_code), [order.ref_code], 'the exact lookup finds it');
  t.match(listed.data?.meta, { page: 1, limit: 20, total: 1, total_pages: 1 });

  const paid = await simulatePay(stack.sim.url, { reference: order.ref_code });
  t.equal(paid.status, 200, JSON.stringify(paid.body));
  const settled = await eventually(async () => {
    const { data } = await kasir.GET('/v1/orders/{ref_code}', { params: { path: { ref_code: order.ref_code } } });
    return data?.data.status === 'PAID' ? data.data : undefined;
  }, 'the order to be PAID');
  t.equal(settled.refundable_amount, 150_000, 'a paid order is refundable in full');
});

t.test('errors arrive as the typed envelope', async (t) => {
  const merchant = await makeMerchant(ctx);
  const kasir = createKasirClient({ baseUrl, apiKey: merchant.api_key });

  const invalid = await kasir.POST('/v1/orders', { body: { ...orderBody(150_000), amount: 0 } });
  t.equal(invalid.response.status, 400);
  t.equal(invalid.data, undefined);
  t.equal(invalid.error?.success, false);
  t.equal(invalid.error?.error.code, 'INVALID_BODY', String(invalid.error?.error.message));

  const missing = await kasir.GET('/v1/orders/{ref_code}', { params: { path: { ref_code: 'ORD-1-NOPE' } } });
  t.equal(missing.response.status, 404);
  t.equal(missing.error?.error.code, 'ORDER_NOT_FOUND');

  const anonymous = createKasirClient({ baseUrl });
  const refused = await anonymous.GET('/v1/orders');
  t.equal(refused.response.status, 401);
  t.equal(refused.error?.error.code, 'UNAUTHORIZED', 'without apiKey no X-API-Key is sent');
});

t.test('with a webhook secret the client signs order creation', async (t) => {
  const webhookSecret = `whsec_${randomBytes(16).toString('hex')}`;
  const merchant = await makeMerchant(ctx, { webhookSecret });

  const unsigned = await createKasirClient({ baseUrl, apiKey: merchant.api_key }).POST('/v1/orders', { body: orderBody(20_000) });
  t.equal(unsigned.error?.error.code, 'INVALID_SIGNATURE', 'the merchant requires a signature');

  const wrong = await createKasirClient({ baseUrl, apiKey: merchant.api_key, webhookSecret: 'not-the-secret' }).POST('/v1/orders', { body: orderBody(20_000) });
  t.equal(wrong.error?.error.code, 'INVALID_SIGNATURE', 'a signature under another secret is refused');

  const signed = await createKasirClient({ baseUrl, apiKey: merchant.api_key, webhookSecret }).POST('/v1/orders', { body: orderBody(20_000) });
  t.equal(signed.response.status, 201, JSON.stringify(signed.error));
});

t.test('legacy calls signed with the helpers are accepted', async (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const merchant = await makeMerchant(ctx);
  await setLegacyPublicKey(ctx.pool, merchant.merchant_id, publicKey.export({ type: 'spki', format: 'pem' }).toString());
  await ctx.pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 500_000, reason: 'test float' }));
  const credentials: LegacyCredentials = {
    clientId: merchant.legacy_client_id,
    clientSecret: merchant.legacy_client_secret,
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
  const kasir = createKasirClient({ baseUrl, apiKey: merchant.api_key });

  const balance = await kasir.POST('/api/disbursement/get-balance', signedLegacyCall(credentials, { clientId: credentials.clientId }));
  t.equal(balance.response.status, 200, JSON.stringify(balance.error));
  t.same(balance.data, { code: 200, message: 'Success', data: { clientId: credentials.clientId, balance: '500000.00' } });

  const orderId = `LGC-${randomBytes(4).toString('hex')}`;
  const paid = await kasir.POST('/api/disbursement/create', signedLegacyCall(credentials, {
    clientId: credentials.clientId, orderId, bankCode: 'BCA', accountNumber: '1234567890', accountName: 'Budi Santoso', requestAmount: 10_000,
  }));
  t.equal(paid.response.status, 200, JSON.stringify(paid.error));
  t.equal(paid.data?.data.orderId, orderId);
  t.equal(paid.data?.data.requestAmount, '10000.00');

  const { privateKey: another } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forged = await kasir.POST('/api/disbursement/get-balance', signedLegacyCall({ ...credentials, privateKey: another }, { clientId: credentials.clientId }));
  t.equal(forged.response.status, 401);
  t.equal(forged.error?.message, 'Invalid X-SIGNATURE', 'a signature by another key is refused');

  // A V1 order queried through the legacy API with the SHA-512 signature helper.
  const created = await kasir.POST('/v1/orders', { body: orderBody(30_000) });
  t.equal(created.response.status, 201, JSON.stringify(created.error));
  const ref = created.data!.data;
  const query = await kasir.POST('/api/order/query', {
    body: { clientId: credentials.clientId, orderId: ref.merchant_order_id, signature: legacyOrderQuerySignature(credentials, ref.merchant_order_id) },
  });
  t.equal(query.response.status, 200, JSON.stringify(query.error));
  t.match(query.data?.data, { refCode: ref.ref_code, orderId: ref.merchant_order_id, totalAmount: 30_000 });
});
