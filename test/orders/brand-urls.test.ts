// Brand-aware order URLs: checkout_url and qr_url are on the domain of the merchant's brand
// (the brand every order of the merchant is created under: its key works on no other domain),
// in every V1 answer, the stored Idempotency-Key answer the vendor worker renders included;
// the default brand keeps PUBLIC_BASE_URL. Following the URL shows the brand's checkout page.
import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import { brandBaseUrl } from '../../db/brands.ts';
import { makeBrand, makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { startStack } from '../helpers/stack.ts';

t.test('brandBaseUrl: PUBLIC_BASE_URL for the default brand, else its host swapped for the brand domain', async (t) => {
  t.equal(brandBaseUrl('https://api.kasir.example', { domain: 'localhost', is_default: true }), 'https://api.kasir.example');
  t.equal(brandBaseUrl('https://api.kasir.example', { domain: 'pay.toko.example', is_default: false }), 'https://pay.toko.example');
  t.equal(brandBaseUrl('http://127.0.0.1:3000', { domain: 'pay.toko.example', is_default: false }), 'http://pay.toko.example:3000', 'scheme and port kept');
  t.equal(brandBaseUrl('https://edge.example/kasir', { domain: 'pay.toko.example', is_default: false }), 'https://pay.toko.example/kasir', 'path prefix kept');
  t.equal(brandBaseUrl('https://api.kasir.example', { domain: 'not a host', is_default: false }), 'https://api.kasir.example', 'no URL can hold it: PUBLIC_BASE_URL');
  t.equal(brandBaseUrl('https://api.kasir.example', { domain: 'evil.example/x', is_default: false }), 'https://api.kasir.example');
});

t.test('orders of a branded merchant link to its brand domain; the default brand keeps PUBLIC_BASE_URL', async (t) => {
  const stack = await startStack(t, { groups: ['vendor'] });
  const port = new URL(stack.api.url).port;
  const publicBase = stack.env.PUBLIC_BASE_URL;
  const brand = await makeBrand(stack.api.ctx);
  const branded = await makeMerchant(stack.api.ctx, { brandId: brand.id });
  const plain = await makeMerchant(stack.api.ctx);
  const brandBase = `http://${brand.domain}:${port}`;
  const onBrand = (extra: Record<string, string> = {}) => ({ 'x-api-key': branded.api_key, host: `${brand.domain}:${port}`, ...extra });
  const order = (id: string) => ({ merchant_order_id: id, amount: 25_000, payment_method: 'QRIS' });
  const urls = (data: { ref_code: string; checkout_url: string; qr_url: string }, base: string) => {
    t.equal(data.checkout_url, `${base}/pay/${data.ref_code}`, `checkout_url on ${base}`);
    t.match(data.qr_url, new RegExp(`^${base.replaceAll('.', '\\.')}/qr/[^/]+\\.png$`), `qr_url on ${base}`);
  };

  // With an Idempotency-Key the 201 is the answer the vendor worker stored; without, the API's.
  const key = randomUUID();
  const body = order(`BR-${randomBytes(4).toString('hex')}`);
  const keyed = await call(stack.api.url, { path: '/v1/orders', headers: onBrand({ 'idempotency-key': key }), body });
  t.equal(keyed.status, 201, keyed.text);
  urls(keyed.json.data, brandBase);
  const replay = await call(stack.api.url, { path: '/v1/orders', headers: onBrand({ 'idempotency-key': key }), body });
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(replay.text, keyed.text, 'the replay is the same bytes');
  const unkeyed = await call(stack.api.url, { path: '/v1/orders', headers: onBrand(), body: order(`BR-${randomBytes(4).toString('hex')}`) });
  t.equal(unkeyed.status, 201, unkeyed.text);
  urls(unkeyed.json.data, brandBase);
  const existing = await call(stack.api.url, { path: '/v1/orders', headers: onBrand(), body });
  t.equal(existing.status, 200, 'the same merchant_order_id: the existing order');
  urls(existing.json.data, brandBase);

  const ref = keyed.json.data.ref_code;
  urls((await call(stack.api.url, { path: `/v1/orders/${ref}`, headers: onBrand() })).json.data, brandBase);
  for (const listed of (await call(stack.api.url, { path: '/v1/orders', headers: onBrand() })).json.data) urls(listed, brandBase);
  urls((await call(stack.api.url, { method: 'POST', path: `/v1/orders/${ref}/fetch-status`, headers: onBrand() })).json.data, brandBase);

  // The payer's browser on the brand domain (here: 127.0.0.1 with that Host) gets the brand's page and QR.
  const checkout = new URL(keyed.json.data.checkout_url);
  const page = await call(stack.api.url, { path: checkout.pathname, headers: { host: checkout.host } });
  t.equal(page.status, 200);
  t.ok(page.text.includes(brand.name), 'the checkout page in the brand');
  const qr = new URL(keyed.json.data.qr_url);
  const png = await call(stack.api.url, { path: qr.pathname, headers: { host: qr.host } });
  t.equal(png.status, 200);
  t.match(png.headers['content-type'], /^image\/png/);

  // The default brand: PUBLIC_BASE_URL, whatever host the request used.
  const mine = await call(stack.api.url, { path: '/v1/orders', headers: { 'x-api-key': plain.api_key, 'idempotency-key': randomUUID() }, body: order(`PL-${randomBytes(4).toString('hex')}`) });
  t.equal(mine.status, 201, mine.text);
  urls(mine.json.data, publicBase);
  const viaOtherHost = await call(stack.api.url, { path: `/v1/orders/${mine.json.data.ref_code}`, headers: { 'x-api-key': plain.api_key, host: 'unknown.example.test' } });
  urls(viaOtherHost.json.data, publicBase);
});
