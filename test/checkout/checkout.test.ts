// The hosted checkout page (GET /pay/<ref_code>) in a real headless Chromium, driven by
// playwright-core: the amount and merchant, a QR that decodes (from a screenshot of the
// element, as a phone's camera sees it) to the order's qris_string, payment through the
// simulator with that very string turning the page to Paid and then on to return_url, expiry
// by the scheduler turning it to Expired, and the 404 page. Plus, over plain HTTP: the
// security headers, what the page leaves out, brand by Host, the status endpoint and the
// redirect rule. Screenshots of each state go to this file's tap output folder
// (.tap/fixtures/test-checkout-checkout.test.ts/). Chromium is Debian's (`.ci/run` installs
// it): without it this file fails, it never skips.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import jsqr from 'jsqr';
import { chromium, type Page } from 'playwright-core';
import { PNG } from 'pngjs';
import t from 'tap';
import { defaultBrand } from '../../db/brands.ts';
import { sql } from '../../db/pool.ts';
import { makeBrand, makeMerchant } from '../helpers/factories.ts';
import { call } from '../helpers/http.ts';
import { createOrder, makeOverdue, orderReaches, type Merchant } from '../helpers/order-lifecycle.ts';
import { simulatePay } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';

const jsQR = jsqr.default;
// Functions passed to page.waitForFunction run in the page; the project's lib has no DOM types.
declare const document: { getElementById(id: string): { complete?: boolean; naturalWidth?: number; textContent: string | null } | null };

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (apt-get install chromium; .ci/run does) or set CHROMIUM_PATH`);
}
// The flags this machine kind needs (closed network: no background connections or updates).
// playwright-core gives every launch a fresh, empty profile directory of its own.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Playwright's wait for any one DOM state; the page polls every 2 s and redirects 3 s after Paid. */
const STATE_TIMEOUT_MS = 15_000;

const stack = await startStack(t);
const pool = stack.api.ctx.pool;
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
t.teardown(() => browser.close());

const shots = t.testdirName;
await mkdir(shots, { recursive: true });
t.comment(`screenshots in ${shots}`);

let seq = 0;
const orderId = () => `PAY-${process.pid}-${Date.now()}-${++seq}`;

async function newOrder(merchant: Merchant, body: Record<string, unknown>) {
  const res = await createOrder(stack, merchant, { merchant_order_id: orderId(), ...body });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.data;
}

interface Tt {
  teardown(fn: () => unknown): void;
}

/** A fresh browser context (no shared cookies or cache) whose script errors and CSP reports are collected. */
async function openPage(t: Tt, locale = 'en-US'): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 420, height: 860 }, deviceScaleFactor: 2, locale });
  context.setDefaultTimeout(STATE_TIMEOUT_MS);
  t.teardown(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()} (${msg.location().url})`);
  });
  return { page, problems };
}

/** The QR as rendered on the page, decoded from a screenshot of the <img> element. */
async function decodeShownQr(page: Page): Promise<string | undefined> {
  await page.waitForFunction(() => {
    const img = document.getElementById('qr');
    return img !== null && img.complete === true && (img.naturalWidth ?? 0) > 0;
  });
  const image = PNG.sync.read(await page.locator('#qr').screenshot());
  return jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data;
}

function heading(page: Page, name: string) {
  return page.getByRole('heading', { name, exact: true });
}

interface Visit {
  url: string;
  headers: IncomingHttpHeaders;
}

/** The merchant's "thank you" page: a tiny local server recording who arrived. */
async function startReturnSite(t: Tt): Promise<{ base: string; visits: Visit[] }> {
  const visits: Visit[] = [];
  const server = createServer((req, res) => {
    visits.push({ url: req.url ?? '', headers: req.headers });
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end('<!doctype html><title>Shop</title><h1>Thanks for shopping</h1>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, visits };
}

t.test('pending → paid: amount and a scannable QR; paying turns the page to Paid and leads to return_url', async (t) => {
  const shop = await startReturnSite(t);
  const merchant = await makeMerchant(stack.api.ctx);
  const merchantName = await pool.oneFirst(sql.unsafe`select name from merchants where id = ${merchant.merchant_id}`);
  const returnUrl = `${shop.base}/thanks?order=A-1`;
  const order = await newOrder(merchant, {
    amount: 150_000,
    return_url: returnUrl,
    customer_name: 'Budi Santoso',
    customer_email: 'budi@example.com',
    customer_phone: '081234567890',
    metadata: { cart: 'secret-cart-id' },
  });
  t.equal(order.checkout_url, `${stack.api.url}/pay/${order.ref_code}`, 'the order carries its checkout_url');

  const { page, problems } = await openPage(t);
  const response = await page.goto(order.checkout_url);
  t.equal(response?.status(), 200);
  t.equal(await page.locator('#amount').textContent(), 'Rp150.000', 'amount in Rupiah formatting');
  t.equal(await page.locator('#merchant').textContent(), merchantName, 'the merchant name');
  await heading(page, 'Waiting for payment').waitFor();
  t.equal(await page.locator('#reference').textContent(), order.ref_code);

  const scanned = await decodeShownQr(page);
  t.equal(scanned, order.qris_string, 'the QR on the page decodes to the order qris_string');

  const countdown = page.locator('#countdown');
  const first = (await countdown.textContent()) ?? '';
  t.match(first, /^(1:00:00|59:[0-5]\d)$/, `countdown to expires_at (${first})`);
  t.equal(await countdown.getAttribute('datetime'), order.expires_at);
  await page.waitForFunction((shown) => document.getElementById('countdown')?.textContent !== shown, first);
  t.pass(`the countdown ticks (${first} → ${await countdown.textContent()})`);
  await page.screenshot({ path: `${shots}/1-pending.png`, fullPage: true });

  // The payer's app pays exactly what it scanned off the screen.
  const paid = await simulatePay(stack.sim.url, { qris_string: scanned });
  t.equal(paid.status, 200, `simulator pays the scanned QR: ${JSON.stringify(paid.body)}`);
  await heading(page, 'Paid').waitFor();
  t.equal(await page.locator('#qr').isVisible(), false, 'the QR is gone once paid');
  t.equal(await page.locator('#return-link').getAttribute('href'), `/pay/${order.ref_code}/return`);
  await page.screenshot({ path: `${shots}/2-paid.png`, fullPage: true });

  await page.waitForURL((url) => url.href === returnUrl, { timeout: STATE_TIMEOUT_MS });
  await heading(page, 'Thanks for shopping').waitFor();
  await page.screenshot({ path: `${shots}/3-returned.png`, fullPage: true });
  const arrivals = shop.visits.filter((v) => v.url !== '/favicon.ico');
  t.strictSame(arrivals.map((v) => v.url), ['/thanks?order=A-1'], 'the browser arrived at return_url once');
  t.equal(arrivals[0]?.headers.referer, undefined, 'no Referer (the checkout URL is the capability)');

  const status = await call(stack.api.url, { path: `/pay/${order.ref_code}/status` });
  t.equal(status.status, 200);
  t.strictSame(Object.keys(status.json).sort(), ['expires_at', 'paid_at', 'status']);
  t.equal(status.json.status, 'PAID');
  t.match(status.json.paid_at, /^\d{4}-\d\d-\d\dT/);
  t.equal(status.json.expires_at, order.expires_at);
  t.equal(status.headers['cache-control'], 'no-store');

  t.strictSame(problems, [], 'no script errors or CSP violations');
});

t.test('pending → expired: the scheduler expires the order and the page shows Expired', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await newOrder(merchant, { amount: 25_000, expire_minutes: 5 });
  const { page, problems } = await openPage(t);
  await page.goto(order.checkout_url);
  await heading(page, 'Waiting for payment').waitFor();
  t.match(await page.locator('#countdown').textContent(), /^[45]:[0-5]\d$/);

  await makeOverdue(stack, [order.ref_code]);
  await orderReaches(stack, merchant, order.ref_code, 'EXPIRED');
  await heading(page, 'Expired').waitFor();
  t.equal(await page.locator('#qr').isVisible(), false, 'no QR to pay once expired');
  t.equal(await page.locator('#countdown').isVisible(), false, 'no countdown once expired');
  t.equal(await page.locator('#amount').textContent(), 'Rp25.000');
  await page.screenshot({ path: `${shots}/4-expired.png`, fullPage: true });

  const status = await call(stack.api.url, { path: `/pay/${order.ref_code}/status` });
  t.strictSame(status.json, { status: 'EXPIRED', paid_at: null, expires_at: status.json.expires_at });

  // A fresh load renders the state on the server, before any script runs.
  const reloaded = await call(stack.api.url, { path: `/pay/${order.ref_code}` });
  t.match(reloaded.text, /<main id="checkout" class="card" data-status="EXPIRED"/);
  t.strictSame(problems, []);
});

t.test('no expiry: no countdown; the merchant name is text, never markup', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const hostile = `<img src=x onerror="window.pwned=1">"Kopi" & Co`;
  await pool.query(sql.unsafe`update merchants set name = ${hostile} where id = ${merchant.merchant_id}`);
  const order = await newOrder(merchant, { amount: 1_250_000, expire_minutes: 0 });
  t.equal(order.expires_at, null);

  const { page, problems } = await openPage(t);
  await page.goto(order.checkout_url);
  await heading(page, 'Waiting for payment').waitFor();
  t.equal(await page.locator('#amount').textContent(), 'Rp1.250.000');
  t.equal(await page.locator('#merchant').textContent(), hostile, 'shown as the literal name');
  t.equal(await page.locator('#countdown').count(), 0, 'no countdown without expires_at');
  t.equal(await page.evaluate(() => (globalThis as { pwned?: unknown }).pwned), undefined, 'nothing in the name ran');
  t.equal(await page.locator('main img').count(), 1, 'the only image in the card is the QR');
  t.equal(await decodeShownQr(page), order.qris_string);
  await page.screenshot({ path: `${shots}/5-no-expiry.png`, fullPage: true });

  const status = await call(stack.api.url, { path: `/pay/${order.ref_code}/status` });
  t.strictSame(status.json, { status: 'PENDING', paid_at: null, expires_at: null });
  t.strictSame(problems, []);
});

t.test('a browser in Indonesian gets the page in Bahasa Indonesia', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await newOrder(merchant, { amount: 150_000 });
  const { page, problems } = await openPage(t, 'id-ID');
  await page.goto(order.checkout_url);
  await heading(page, 'Menunggu pembayaran').waitFor();
  t.equal(await page.locator('html').getAttribute('lang'), 'id');
  t.match(await page.locator('.countdown').textContent(), /^Berakhir dalam \d+:\d{2}/);
  t.equal(await decodeShownQr(page), order.qris_string);
  await page.screenshot({ path: `${shots}/7-pending-id.png`, fullPage: true });
  t.strictSame(problems, []);
});

t.test('an unknown ref code is a 404 page', async (t) => {
  const { page, problems } = await openPage(t);
  const unknown = `${stack.api.url}/pay/ORD-1700000000-0000000000`;
  const response = await page.goto(unknown);
  t.equal(response?.status(), 404);
  await heading(page, 'Payment not found').waitFor();
  await page.screenshot({ path: `${shots}/6-not-found.png`, fullPage: true });
  // Chromium logs the 404 of the document itself; nothing else may go wrong.
  t.strictSame(problems.filter((p) => !p.endsWith(`status of 404 (Not Found) (${unknown})`)), []);

  for (const path of ['/pay/ORD-1700000000-0000000000', '/pay/%3Cscript%3E', `/pay/${'A'.repeat(65)}`, '/pay/ORD-1/return']) {
    const res = await call(stack.api.url, { path });
    t.equal(res.status, 404, path);
    t.match(String(res.headers['content-type']), /^text\/html/, `${path}: an HTML page`);
    t.notMatch(res.text, /<script/i, `${path}: no script on the 404 page`);
  }
  const status = await call(stack.api.url, { path: '/pay/ORD-1700000000-0000000000/status' });
  t.equal(status.status, 404);
  t.equal(status.json.error.code, 'NOT_FOUND');
  const asset = await call(stack.api.url, { path: '/pay/assets/nope.js' });
  t.equal(asset.status, 404);
});

t.test('over HTTP: security headers, nothing beyond merchant and amount, brand by Host, the redirect rule', async (t) => {
  const merchant = await makeMerchant(stack.api.ctx);
  const order = await newOrder(merchant, {
    amount: 75_000,
    customer_name: 'Siti Aminah',
    customer_email: 'siti@example.com',
    customer_phone: '081298765432',
    notify_url: 'https://hooks.example.com/kasir',
    return_url: 'https://shop.example.com/thanks?token=merchant-side-token',
    metadata: { internal: 'do-not-show' },
  });
  const path = `/pay/${order.ref_code}`;
  const res = await call(stack.api.url, { path });
  t.equal(res.status, 200);
  t.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/);
  const csp = String(res.headers['content-security-policy']);
  t.equal(
    csp,
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    'strict CSP: own origin only, no inline code',
  );
  t.equal(res.headers['referrer-policy'], 'no-referrer');
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(res.headers['x-content-type-options'], 'nosniff');
  t.equal(res.headers['x-frame-options'], 'DENY');
  t.notMatch(res.text, /<script>|<style>|\son\w+=/i, 'no inline script, style or handlers');
  for (const secret of ['Siti', 'siti@example.com', '6281298765432', 'hooks.example.com', 'shop.example.com', 'merchant-side-token', 'do-not-show', order.merchant_order_id, order.id, order.qris_string]) {
    t.notOk(res.text.includes(secret), `the page does not carry ${secret}`);
  }
  t.ok(res.text.includes('Rp75.000'));

  for (const asset of [/src="(\/pay\/assets\/checkout\.js\?v=[\w-]+)"/, /href="(\/pay\/assets\/checkout\.css\?v=[\w-]+)"/, /href="(\/pay\/assets\/favicon\.svg\?v=[\w-]+)"/]) {
    const assetPath = asset.exec(res.text)?.[1];
    t.ok(assetPath, `the page links ${asset}`);
    const served = await call(stack.api.url, { path: assetPath ?? '/' });
    t.equal(served.status, 200, `${assetPath} is served by Kasir`);
    t.match(String(served.headers['cache-control']), /immutable/);
  }

  const fallback = await defaultBrand(pool);
  t.ok(res.text.includes(fallback.name), 'an unknown host gets the default brand');
  const brand = await makeBrand(stack.api.ctx);
  const branded = await call(stack.api.url, { path, headers: { host: `${brand.domain.toUpperCase()}:443` } });
  t.equal(branded.status, 200);
  t.ok(branded.text.includes(`<img class="logo" src="${brand.logo_url}" alt="${brand.name}">`), 'the brand logo');
  t.ok(branded.text.includes(`mailto:${brand.support_email}`), 'the brand support e-mail');
  t.match(String(branded.headers['content-security-policy']), `img-src 'self' https://${brand.domain};`, 'the logo host, and only it, joins img-src');

  const early = await call(stack.api.url, { path: `${path}/return` });
  t.equal(early.status, 303);
  t.equal(early.headers.location, path, 'an unpaid order never leaves for return_url');

  const paid = await simulatePay(stack.sim.url, { reference: order.ref_code });
  t.equal(paid.status, 200);
  await orderReaches(stack, merchant, order.ref_code, 'PAID');
  const back = await call(stack.api.url, { path: `${path}/return` });
  t.equal(back.status, 303);
  t.equal(back.headers.location, 'https://shop.example.com/thanks?token=merchant-side-token', 'a paid order goes to return_url');
  const paidPage = await call(stack.api.url, { path });
  t.match(paidPage.text, /data-status="PAID"/);
  t.ok(paidPage.text.includes(`href="${path}/return"`), 'the paid page links the way back');
});
