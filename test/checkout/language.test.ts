// The checkout page's language: Bahasa Indonesia by default (its payers'), English when the
// payer's browser ranks English above Indonesian (Accept-Language) or, for a browser that names
// neither, when the brand chose English (brand:create --checkout-language,
// brand:set-checkout-language). Over HTTP for the page Kasir serves, and the rendering of each
// state in both languages.
import t from 'tap';
import { checkoutPage, pageLanguage, type CheckoutView } from '../../api/checkout/page.ts';
import { startApi } from '../helpers/api.ts';
import { testConfig, testEnv } from '../helpers/config.ts';
import { testDatabase } from '../helpers/db.ts';
import { call } from '../helpers/http.ts';
import { makeBrand } from '../helpers/factories.ts';
import { ops } from '../helpers/processes.ts';

t.test('Accept-Language picks Indonesian or English; anything else is the brand\'s choice', (t) => {
  t.equal(pageLanguage(undefined, 'id'), 'id', 'no header: Bahasa Indonesia');
  t.equal(pageLanguage('', 'en'), 'en', 'no header: the brand\'s English');
  t.equal(pageLanguage('en-US,en;q=0.9', 'id'), 'en');
  t.equal(pageLanguage('id-ID,id;q=0.9,en-US;q=0.8,en;q=0.7', 'en'), 'id');
  t.equal(pageLanguage('en;q=0.5, id;q=0.8', 'en'), 'id', 'by q, not by order');
  t.equal(pageLanguage('fr-FR,fr;q=0.9', 'id'), 'id', 'neither: the brand\'s');
  t.equal(pageLanguage('fr-FR,fr;q=0.9', 'en'), 'en');
  t.equal(pageLanguage('in-ID', 'en'), 'id', '"in" is the old code for Indonesian');
  t.equal(pageLanguage('en;q=0, id;q=0.1', 'en'), 'id', 'q=0 means not English');
  t.equal(pageLanguage('ms-MY, jv;q=0.9, *;q=0.1', 'id'), 'id');
  t.end();
});

t.test('every state of the page in both languages', (t) => {
  const view: CheckoutView = {
    brand: { name: 'Kasir', logoUrl: null, supportEmail: 'help@kasir.example' },
    assets: { script: '/s.js', style: '/s.css', icon: '/i.svg' },
    ref: 'ORD-1-ABC', merchantName: 'Toko <b>Budi</b>', amountText: 'Rp150.000', status: 'PENDING', qrPath: '/qr/x.png',
    expiresAt: '2026-11-21T08:30:00.000Z', expiresInMs: 60_000, statusPath: '/pay/ORD-1-ABC/status', returnPath: '/pay/ORD-1-ABC/return',
  };
  const id = checkoutPage(view, 'id');
  for (const text of ['<html lang="id">', 'Menunggu pembayaran', 'Pindai dengan aplikasi', 'Berakhir dalam', '<h1>Lunas</h1>', 'pembayaran Anda kepada Toko &#60;b&#62;Budi&#60;/b&#62; telah selesai',
    'Lanjutkan', '<h1>Kedaluwarsa</h1>', 'Referensi', 'Ada pertanyaan tentang pembayaran?', '<title>Bayar Rp150.000 ke Toko &#60;b&#62;Budi&#60;/b&#62; · Kasir</title>']) {
    t.ok(id.includes(text), `id: ${text}`);
  }
  t.notMatch(id, /Waiting|Paid<|Expired|Reference|Scan with/, 'no English left');
  const en = checkoutPage(view, 'en');
  for (const text of ['<html lang="en">', 'Waiting for payment', 'Expires in', '<h1>Paid</h1>', '<h1>Expired</h1>', 'Reference', 'Questions about a payment?']) {
    t.ok(en.includes(text), `en: ${text}`);
  }
  t.notMatch(id, /<b>Budi/, 'the merchant name stays text in both');
  t.end();
});

t.test('the page Kasir serves: Indonesian by default, English by Accept-Language or the brand', async (t) => {
  const databaseUrl = await testDatabase(t);
  const api = await startApi(t, testConfig(databaseUrl));
  const page = (headers: Record<string, string> = {}) => call(api.url, { path: '/pay/ORD-1700000000-0000000000', headers });
  const plain = await page();
  t.equal(plain.status, 404);
  t.match(plain.text, /<html lang="id">/);
  t.match(plain.text, /<h1>Pembayaran tidak ditemukan<\/h1>/);
  t.equal(plain.headers['content-language'], 'id');
  t.match(String(plain.headers.vary), /Accept-Language/, 'caches keep the languages apart');
  const english = await page({ 'accept-language': 'en-GB,en;q=0.9' });
  t.match(english.text, /<h1>Payment not found<\/h1>/);
  t.equal(english.headers['content-language'], 'en');

  const brand = await makeBrand(api.ctx);
  const env = testEnv(databaseUrl);
  const set = await ops(env, 'brand:set-checkout-language', '--domain', brand.domain, '--language', 'en');
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, /checkout page in English/);
  // The brand cache lasts a few seconds; a fresh process reads the brand as set.
  const fresh = await startApi(t, testConfig(databaseUrl));
  const branded = await call(fresh.url, { path: '/pay/ORD-1700000000-0000000000', headers: { host: brand.domain, 'accept-language': 'fr-FR' } });
  t.match(branded.text, /<h1>Payment not found<\/h1>/, 'a browser naming neither gets the brand\'s English');
  const indonesian = await call(fresh.url, { path: '/pay/ORD-1700000000-0000000000', headers: { host: brand.domain, 'accept-language': 'id' } });
  t.match(indonesian.text, /Pembayaran tidak ditemukan/, 'a browser asking for Indonesian gets it on an English brand');
  const created = await ops(env, 'brand:create', '--domain', 'en.kasir.example', '--name', 'Kasir EN', '--checkout-language', 'en', '--json');
  t.equal(created.code, 0, created.stderr);
  t.equal(JSON.parse(created.stdout).checkout_language, 'en');
  const wrong = await ops(env, 'brand:set-checkout-language', '--domain', brand.domain, '--language', 'jv');
  t.match(wrong.stderr, /take id \(Bahasa Indonesia\) or en \(English\)/);
});
