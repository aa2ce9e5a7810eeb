// The OpenAPI document (api/openapi/document.ts) against the running system: every route
// Express has mounted is documented and every documented operation is mounted; real answers
// (successes and errors, V1 and legacy, and a webhook) validate against the documented zod
// schemas of their operation and status, and against the generated JSON itself; each list's
// documented default and maximum limit are what the API applies; the document passes Redocly's
// structural rules for OpenAPI 3.1; the committed docs/openapi.json, the client types generated
// from it (docs/client/schema.d.ts), the Postman collection and the webhook catalogue
// (docs/webhook-events.md) are as generated; each real webhook matches its catalogued event; /openapi.json
// and /docs are served without an API key, and the page renders offline in headless Chromium
// when one is installed.
import t from 'tap';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { createApp } from '../../api/app.ts';
import { errorsOf, openApiDocument, openApiPath, openApiText, operations, requestExample, responseSchemaOf, webhooks, type Method } from '../../api/openapi/document.ts';
import { adjustWallet } from '../../db/ledger.ts';
import { findBankByShortCode } from '../../db/master-data.ts';
import { setLegacyPublicKey, setSettlementAccount, type ProvisionedMerchant } from '../../db/merchants.ts';
import { runSettlements } from '../../db/settlements.ts';
import { makeMerchant } from '../helpers/factories.ts';
import { call, eventually, type TestResponse } from '../helpers/http.ts';
import { paidOrder } from '../helpers/money.ts';
import { simulatePay, startCallbackReceiver } from '../helpers/simulator.ts';
import { startStack } from '../helpers/stack.ts';
import { generatedFiles, postmanCollection } from '../../scripts/openapi.ts';
import { issueKey, makeUser } from '../helpers/team.ts';

const ROOT = new URL('../../', import.meta.url);

interface MountedRoute {
  method: string;
  path: string;
}

/**
 * Mounted routes that are not in the API reference, and why. Exact entries must be mounted
 * (a stale one fails); the prefix covers the checkout page's routes. Operator metrics are served
 * on their own listener (METRICS_PORT), never by this app: mounting them here fails the test.
 */
const EXCLUDED: { method: string; path: string; prefix?: true; why: string }[] = [
  { method: 'get', path: '/qr/:file', why: 'the PNG behind an order\'s qr_url: a URL the API hands out, not an endpoint to call' },
  { method: 'get', path: '/assets/ewallets/:file', why: 'the logo behind an e-wallet\'s logo_url' },
  { method: 'post', path: '/callbacks/:vendor', why: 'vendor-facing: each gateway\'s own body and signature (docs/simulator.md, docs/vendors/), not the merchant API' },
  { method: 'post', path: '/callbacks/:vendor/*path', why: 'vendor-facing: a gateway\'s own sub-paths (SNAP notify and token, docs/vendors/snap.md)' },
  { method: 'get', path: '/openapi.json', why: 'this document' },
  { method: 'get', path: '/docs', why: 'the reference page' },
  { method: 'get', path: '/docs/init.js', why: 'the reference page\'s script' },
  { method: '*', path: '/pay/', prefix: true, why: 'the hosted checkout page for payers (its URL is the order\'s checkout_url)' },
];

const excluded = (r: MountedRoute) =>
  EXCLUDED.some((e) => (e.method === '*' || e.method === r.method) && (e.prefix ? r.path.startsWith(e.path) : r.path === e.path));

interface Layer {
  route?: { path: unknown; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
  rawPath?: unknown;
}

/** Express 5 (router 2): routes are layers with a `route`; app.use(router) layers hold the router's own stack. */
function mountedRoutes(stack: Layer[], prefix = ''): MountedRoute[] {
  const routes: MountedRoute[] = [];
  for (const layer of stack) {
    if (layer.route) {
      if (typeof layer.route.path !== 'string') throw new Error(`route path ${String(layer.route.path)} is not a string`);
      for (const method of Object.keys(layer.route.methods)) {
        if (method === '_all') throw new Error(`${layer.route.path} is mounted for every method`);
        routes.push({ method, path: prefix + layer.route.path });
      }
    } else if (layer.handle?.stack) {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      routes.push(...mountedRoutes(layer.handle.stack, prefix + mount));
    }
  }
  return routes;
}

const key = (r: MountedRoute) => `${r.method.toUpperCase()} ${r.path}`;

const stack = await startStack(t, { groups: ['vendor', 'webhook', 'csv'] });
const ctx = stack.api.ctx;
const url = stack.api.url;

/** Which documented answers the test saw, for the summary at the end. */
const seen = new Set<string>();

function operation(method: Method, path: string) {
  const op = operations.find((o) => o.method === method && o.path === path);
  if (!op) throw new Error(`${method.toUpperCase()} ${path} is not documented`);
  return op;
}

interface Document {
  paths: Record<string, Record<string, { responses: Record<string, Reply> }>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, Reply> };
}
type Reply = { $ref?: string; content?: Record<string, { schema?: unknown }> };

/**
 * A real webhook against the catalogue entry of its event (X-Kasir-Event): the zod schema and the
 * generated JSON of docs/openapi.json's `webhooks`; a V1 body names the same event and carries
 * the delivery id (webhook-id) as event_id.
 */
function matchesCatalogue(t: Pick<typeof import('tap').default, 'ok' | 'equal'>, hook: { json: unknown; headers: Record<string, unknown> }) {
  const event = String(hook.headers['x-kasir-event']);
  const entry = webhooks[event];
  if (!t.ok(entry, `${event} is catalogued`)) return;
  const parsed = entry.schema.safeParse(hook.json);
  t.ok(parsed.success, `the ${event} webhook matches its catalogued body${parsed.success ? '' : `:\n${z.prettifyError(parsed.error)}`}`);
  const doc = openApiDocument() as unknown as { webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }> };
  const json = doc.webhooks[event].post.requestBody.content['application/json'].schema;
  const generated = z.fromJSONSchema({ ...toDefs(json), $defs: toDefs((doc as unknown as Document).components.schemas) });
  t.ok(generated.safeParse(hook.json).success, `the ${event} webhook matches docs/openapi.json`);
  const body = hook.json as { event?: string; event_id?: string };
  if (body.event !== undefined) {
    t.equal(body.event, event, `${event}: the body names the header's event`);
    t.equal(body.event_id, hook.headers['webhook-id'], `${event}: event_id is the webhook-id`);
  }
}

const toDefs = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"#/$defs/'));
const documentedSchemas = new Map<string, z.ZodType | null>();

/**
 * The JSON Schema docs/openapi.json gives an answer, its shared responses and components
 * resolved, as zod (z.fromJSONSchema): the generated JSON itself is checked against real answers,
 * not only the zod schemas it was generated from.
 */
function documentedSchema(method: Method, path: string, status: number): z.ZodType | null {
  const key = `${method} ${path} ${status}`;
  if (documentedSchemas.has(key)) return documentedSchemas.get(key)!;
  const doc = openApiDocument() as unknown as Document;
  let reply = doc.paths[openApiPath(path)]?.[method]?.responses[status];
  if (reply?.$ref) reply = doc.components.responses[reply.$ref.replace('#/components/responses/', '')];
  const json = reply?.content?.['application/json']?.schema;
  const schema = json ? z.fromJSONSchema({ ...toDefs(json), $defs: toDefs(doc.components.schemas) }) : null;
  documentedSchemas.set(key, schema);
  return schema;
}

/** The answer validates against the schema the document gives its operation and status. */
function conforms(tt: Pick<typeof t, 'ok' | 'fail'>, method: Method, path: string, res: TestResponse): void {
  const op = operation(method, path);
  const name = `${method.toUpperCase()} ${path} ${res.status}`;
  const media = op.responses[res.status]?.media;
  if (media) {
    tt.ok(String(res.headers['content-type']).startsWith(media.type), `${name} is ${media.type}`);
    seen.add(`${method} ${path} ${res.status}`);
    return;
  }
  const schema = responseSchemaOf(op, res.status);
  if (!schema) {
    tt.fail(`${name} is an answer the document does not list: ${res.text.slice(0, 500)}`);
    return;
  }
  const parsed = schema.safeParse(res.json);
  tt.ok(parsed.success, `${name} matches its documented schema${parsed.success ? '' : `:\n${z.prettifyError(parsed.error)}\n${res.text.slice(0, 1000)}`}`);
  const fromJson = documentedSchema(method, path, res.status)?.safeParse(res.json);
  tt.ok(fromJson?.success, `${name} matches docs/openapi.json${fromJson?.success !== false ? '' : `:\n${z.prettifyError(fromJson.error)}`}`);
  seen.add(`${method} ${path} ${res.status}`);
}

function v1(apiKey: string | null, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  return call(url, { path, method: init.method, body: init.body, headers: { ...(apiKey ? { 'x-api-key': apiKey } : {}), ...init.headers } });
}

t.test('every mounted route is documented and every documented operation is mounted', async (t) => {
  const app = createApp(ctx) as unknown as { router: { stack: Layer[] } };
  const mounted = mountedRoutes(app.router.stack);
  t.ok(mounted.length > 30, `found ${mounted.length} mounted routes`);
  for (const e of EXCLUDED.filter((x) => !x.prefix)) {
    t.ok(mounted.some((r) => r.method === e.method && r.path === e.path), `excluded ${e.method.toUpperCase()} ${e.path} is mounted (${e.why})`);
  }
  const api = mounted.filter((r) => !excluded(r)).map(key).sort();
  const documented = operations.map((o) => key(o)).sort();
  t.same([...new Set(documented)].length, documented.length, 'no operation is documented twice');
  t.same(api.filter((r) => !documented.includes(r)), [], 'mounted but not documented');
  t.same(documented.filter((r) => !api.includes(r)), [], 'documented but not mounted');

  const doc = openApiDocument() as { paths: Record<string, Record<string, unknown>> };
  t.same(Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)).sort(),
    operations.map((o) => `${o.method.toUpperCase()} ${openApiPath(o.path)}`).sort(), 'the document\'s paths are the operations');
});

t.test('the document is well formed, committed as generated, and served without a key', async (t) => {
  const doc = openApiDocument() as Record<string, any>;
  t.equal(doc.openapi, '3.1.1');
  t.equal(doc.info.version, '1.0.0', 'spec 9: interface description version 1.0.0');
  const refs: string[] = [];
  (function walk(value: unknown) {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (k === '$ref') refs.push(String(v));
        else walk(v);
      }
    }
  })(doc);
  t.ok(refs.length > 0, 'records are referenced as components');
  const resolves = (ref: string) => {
    const [, kind, name] = /^#\/components\/(schemas|responses)\/([^/]+)$/.exec(ref) ?? [];
    return Boolean(kind && doc.components[kind][name]);
  };
  t.same(refs.filter((r) => !resolves(r)), [], 'every $ref resolves');
  t.notOk(openApiText().includes('"$schema"'), 'no per-schema dialect markers');
  for (const op of operations.filter((o) => (o.auth ?? 'apiKey') === 'apiKey')) {
    const codes = [...errorsOf(op).values()].flat();
    t.ok(codes.includes('UNAUTHORIZED') && codes.includes('MERCHANT_INACTIVE'), `${key(op)} lists the authentication errors`);
  }

  // Redocly's structural rules (the OpenAPI 3.1 schema of every object) and $ref resolution.
  const lint = await createConfig({ rules: { struct: 'error', 'no-unresolved-refs': 'error' } } as Parameters<typeof createConfig>[0]);
  const problems = await lintFromString({ source: openApiText(), absoluteRef: '/openapi.json', config: lint });
  t.same(problems.map((p) => `${p.message} at ${p.location[0]?.pointer}`), [], 'a valid OpenAPI 3.1 document');

  const committed = await readFile(new URL('docs/openapi.json', ROOT), 'utf8');
  t.ok(committed === openApiText(), 'docs/openapi.json is the generated document (run `npm run openapi`)');
  const instant = JSON.stringify((doc.components.schemas.Instant as { pattern: string }).pattern);
  t.equal(openApiText().split(instant).length - 1, 1, 'a shared format is written once, under components');
  t.ok(Object.keys(doc.components.responses).length > 0, 'error answers given by several operations are shared responses');

  const served = await call(url, { path: '/openapi.json' });
  t.equal(served.status, 200, 'no API key needed');
  t.match(served.headers['content-type'], /^application\/json/);
  t.ok(served.text === openApiText(), 'GET /openapi.json serves the same bytes');

  const page = await call(url, { path: '/docs' });
  t.equal(page.status, 200);
  t.match(page.headers['content-type'], /^text\/html/);
  t.match(page.headers['content-security-policy'], /script-src 'self'/);
  const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  t.ok(assets.length >= 3 && assets.every((a) => a.startsWith('/docs/')), `the page loads only local files: ${assets.join(', ')}`);
  for (const asset of assets) {
    const res = await call(url, { path: asset });
    t.equal(res.status, 200, `${asset} is served`);
  }
  const init = await call(url, { path: '/docs/init.js' });
  t.match(init.text, /url: '\/openapi\.json'/, 'the page points at /openapi.json');
  t.match(init.text, /validatorUrl: null/, 'nothing is sent to an online validator');
  for (const path of ['/docs/package.json', '/docs/index.html', '/docs/swagger-initializer.js', '/docs/../package.json']) {
    t.equal((await call(url, { path })).status, 404, `${path} is not served`);
  }
});

t.test('the client types, the Postman collection and the webhook catalogue are committed as generated', async (t) => {
  const files = await generatedFiles();
  t.same(Object.keys(files).sort(), [
    'docs/client/package.json', 'docs/client/schema.d.ts',
    'docs/kasir.postman_collection.json', 'docs/openapi.json', 'docs/webhook-events.md',
  ]);
  for (const [path, text] of Object.entries(files)) {
    t.ok(await readFile(new URL(path, ROOT), 'utf8') === text, `${path} is as generated (run \`npm run openapi\`)`);
  }
  t.ok(files['docs/kasir.postman_collection.json'] === await postmanCollection(), 'the collection is the same on every run');

  const types = files['docs/client/schema.d.ts'];
  for (const op of operations) t.ok(types.includes(`"${openApiPath(op.path)}": {`), `the client types have ${key(op)}`);
  const collection = JSON.parse(files['docs/kasir.postman_collection.json']) as { item: { item: { request: { method: string } }[] }[] };
  t.equal(collection.item.flatMap((folder) => folder.item).length, operations.length, 'the collection has one request per operation');
  t.notMatch(files['docs/kasir.postman_collection.json'], /"(id|_postman_id)":/, 'no random ids');
});

t.test('each list applies the documented default and maximum limit', async (t) => {
  const merchant = await makeMerchant(ctx);
  for (const op of operations.filter((o) => o.query?.limit && !o.path.includes(':'))) {
    const limit = z.toJSONSchema(op.query!.limit, { io: 'input' }) as { default: number; maximum: number };
    const byDefault = await v1(merchant.api_key, op.path);
    t.equal(byDefault.json?.meta?.limit, limit.default, `${key(op)}: default limit ${limit.default}`);
    conforms(t, op.method, op.path, byDefault);
    const most = await v1(merchant.api_key, `${op.path}?limit=${limit.maximum}`);
    t.equal(most.json?.meta?.limit, limit.maximum, `${key(op)}: limit ${limit.maximum} accepted`);
    const over = await v1(merchant.api_key, `${op.path}?limit=${limit.maximum + 1}`);
    t.equal(over.status, 400, `${key(op)}: limit ${limit.maximum + 1} refused`);
    conforms(t, op.method, op.path, over);
  }
});

t.test('real V1 answers match the documented schemas', async (t) => {
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  // Its default notify URL takes every webhook of the test: payments, refunds, the export.
  const merchant = await makeMerchant(ctx, { notifyUrl: receiver.url });
  const k = merchant.api_key;

  conforms(t, 'get', '/healthz', await call(url, { path: '/healthz' }));
  conforms(t, 'get', '/v1/brand', await call(url, { path: '/v1/brand' }));

  // Orders: create (201, replay, 200 existing), read, list, filter, events, fetch-status.
  const orderBody = JSON.stringify({
    merchant_order_id: `OAS-${randomBytes(4).toString('hex')}`, amount: 150_000, payment_method: 'QRIS', customer_name: 'Budi',
    customer_phone: '081234567890', notify_url: receiver.url, return_url: 'https://shop.example/done', metadata: { cart: [1, 2], note: 'x' },
  });
  const created = await v1(k, '/v1/orders', { body: orderBody, headers: { 'idempotency-key': randomUUID() } });
  t.equal(created.status, 201, created.text);
  conforms(t, 'post', '/v1/orders', created);
  const ref = created.json.data.ref_code;
  conforms(t, 'post', '/v1/orders', await v1(k, '/v1/orders', { body: orderBody }));
  conforms(t, 'get', '/v1/orders/:ref_code', await v1(k, `/v1/orders/${ref}`));
  conforms(t, 'get', '/v1/orders', await v1(k, '/v1/orders'));
  conforms(t, 'get', '/v1/orders', await v1(k, `/v1/orders?merchant_order_id=${encodeURIComponent(created.json.data.merchant_order_id)}`));
  conforms(t, 'get', '/v1/orders/:ref_code/events', await v1(k, `/v1/orders/${ref}/events`));
  conforms(t, 'post', '/v1/orders/:ref_code/fetch-status', await v1(k, `/v1/orders/${ref}/fetch-status`, { method: 'POST' }));

  // A paid order, a refund, and the webhooks they send.
  const paid = await paidOrder(stack, merchant, 200_000);
  const refunded = await v1(k, `/v1/orders/${paid.ref_code}/refund`, { body: { amount: 1_000, reason: 'one item' } });
  t.equal(refunded.status, 201, refunded.text);
  conforms(t, 'post', '/v1/orders/:ref_code/refund', refunded);
  conforms(t, 'get', '/v1/orders/:ref_code/events', await v1(k, `/v1/orders/${paid.ref_code}/events`));
  conforms(t, 'get', '/v1/orders/:ref_code/refunds', await v1(k, `/v1/orders/${paid.ref_code}/refunds`));
  conforms(t, 'get', '/v1/refunds', await v1(k, '/v1/refunds?date_from=2026-01-01'));
  conforms(t, 'get', '/v1/refunds/:id', await v1(k, `/v1/refunds/${refunded.json.data.ref_code}`));

  // Wallet: balance, movements, disbursements.
  await ctx.pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 1_000_000, reason: 'test float' }));
  conforms(t, 'get', '/v1/balance', await v1(k, '/v1/balance'));
  const movements = await v1(k, '/v1/balance-history');
  conforms(t, 'get', '/v1/balance-history', movements);
  conforms(t, 'get', '/v1/balance-history/:id', await v1(k, `/v1/balance-history/${movements.json.data[0].id}`));
  const disbursed = await v1(k, '/v1/disbursements', {
    body: { idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi Santoso', amount: 50_000 },
  });
  t.equal(disbursed.status, 201, disbursed.text);
  conforms(t, 'post', '/v1/disbursements', disbursed);
  conforms(t, 'post', '/v1/disbursements', await v1(k, '/v1/disbursements', {
    body: { idempotency_key: randomUUID(), channel: 'EWALLET', ewallet_provider: 'OVO', ewallet_phone: '081234567890', amount: 20_000 },
  }));
  conforms(t, 'get', '/v1/disbursements/:id', await v1(k, `/v1/disbursements/${disbursed.json.data.ref_code}`));
  conforms(t, 'get', '/v1/disbursements', await v1(k, '/v1/disbursements'));
  const boundary = `kasir-${randomBytes(6).toString('hex')}`;
  const csv = 'channel,bank_short_code,account_number,account_name,ewallet_provider,ewallet_phone,amount,notify_url\r\n'
    + 'BANK,BCA,1234567890,Budi,,,10000,\r\n,,,,,,,\r\nBANK,NOPE,1234567890,Budi,,,10000,\r\n';
  const multipart = Buffer.from([
    `--${boundary}`, 'Content-Disposition: form-data; name="idempotency_prefix"', '', `oas-${randomBytes(3).toString('hex')}`,
    `--${boundary}`, 'Content-Disposition: form-data; name="file"; filename="payroll.csv"', 'Content-Type: text/csv', '', csv,
    `--${boundary}--`, '',
  ].join('\r\n'));
  const imported = await v1(k, '/v1/disbursements/import', { body: multipart, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });
  t.same(imported.json?.data?.results?.map((r: { status: string }) => r.status), ['ACCEPTED', 'SKIPPED', 'REFUSED'], imported.text.slice(0, 300));
  conforms(t, 'post', '/v1/disbursements/import', imported);
  conforms(t, 'get', '/v1/disbursements/imports', await v1(k, '/v1/disbursements/imports'));
  conforms(t, 'get', '/v1/disbursements/imports/:id', await v1(k, `/v1/disbursements/imports/${imported.json.data.import_id}`));

  // Master data.
  conforms(t, 'get', '/v1/banks', await v1(k, '/v1/banks'));
  conforms(t, 'get', '/v1/ewallets', await v1(k, '/v1/ewallets'));

  // Beneficiaries.
  const saved = await v1(k, '/v1/beneficiaries', { body: { channel: 'BANK', bank_short_code: 'BNI', account_number: '9876543210', is_default: true } });
  t.equal(saved.status, 201, saved.text);
  conforms(t, 'post', '/v1/beneficiaries', saved);
  conforms(t, 'get', '/v1/beneficiaries', await v1(k, '/v1/beneficiaries'));
  conforms(t, 'get', '/v1/beneficiaries/:id', await v1(k, `/v1/beneficiaries/${saved.json.data.id}`));
  conforms(t, 'post', '/v1/beneficiaries/:id/verify', await v1(k, `/v1/beneficiaries/${saved.json.data.id}/verify`, { method: 'POST' }));
  conforms(t, 'delete', '/v1/beneficiaries/:id', await v1(k, `/v1/beneficiaries/${saved.json.data.id}`, { method: 'DELETE' }));

  // Team.
  const added = await v1(k, '/v1/my/users', { body: { full_name: 'Siti', email: `siti.${randomBytes(3).toString('hex')}@example.test`, phone_number: '0812 3456 7890', role: 'viewer' } });
  t.equal(added.status, 201, added.text);
  conforms(t, 'post', '/v1/my/users', added);
  conforms(t, 'get', '/v1/my/users', await v1(k, '/v1/my/users'));
  conforms(t, 'patch', '/v1/my/users/:user_id/role', await v1(k, `/v1/my/users/${added.json.data.id}/role`, { method: 'PATCH', body: { role: 'finance' } }));
  conforms(t, 'delete', '/v1/my/users/:user_id/role', await v1(k, `/v1/my/users/${added.json.data.id}/role`, { method: 'DELETE' }));

  // Reports.
  conforms(t, 'get', '/v1/reports/profits', await v1(k, '/v1/reports/profits'));
  const exported = await v1(k, '/v1/reports/export', { body: { type: 'orders', date_from: '2026-01-01' } });
  t.equal(exported.status, 201, exported.text);
  conforms(t, 'post', '/v1/reports/export', exported);
  conforms(t, 'get', '/v1/reports/exports', await v1(k, '/v1/reports/exports'));
  await eventually(async () => {
    const list = await v1(k, '/v1/reports/exports');
    return list.json?.data?.find((e: { id: string }) => e.id === exported.json.data.id)?.status === 'COMPLETED' ? true : undefined;
  }, 'the export to complete');
  conforms(t, 'get', '/v1/reports/exports', await v1(k, '/v1/reports/exports'));
  conforms(t, 'get', '/v1/reports/exports/:id', await v1(k, `/v1/reports/exports/${exported.json.data.id}`));
  conforms(t, 'get', '/v1/reports/exports/:id', await v1(k, `/v1/reports/exports/${randomUUID()}`));
  conforms(t, 'get', '/v1/reports/exports/:id/download', await v1(k, `/v1/reports/exports/${exported.json.data.id}/download`));
  conforms(t, 'get', '/v1/reports/exports/:id/download', await v1(k, `/v1/reports/exports/${randomUUID()}/download`));

  // The order webhooks: order.paid of the order created above once paid, and the refund's.
  const pay = await simulatePay(stack.sim.url, { reference: ref });
  t.equal(pay.status, 200, JSON.stringify(pay.body));
  await eventually(async () => {
    const events = receiver.received.map((h) => h.headers['x-kasir-event']);
    return events.includes('export.completed') && receiver.received.some((h) => h.json?.ref_code === ref) ? true : undefined;
  }, 'the export.completed webhook and the order\'s order.paid');
  const events = new Set(receiver.received.map((h) => String(h.headers['x-kasir-event'])));
  t.ok(['order.paid', 'order.partially_refunded', 'export.completed'].every((e) => events.has(e)), `webhooks of payments, refunds and exports arrived: ${[...events].join(', ')}`);
  for (const hook of receiver.received) matchesCatalogue(t, hook);

  // The webhooks just sent, as the merchant reads them, and a resend.
  const deliveries = await v1(k, '/v1/webhook-deliveries');
  t.ok(deliveries.json?.data?.length > 0, deliveries.text);
  conforms(t, 'get', '/v1/webhook-deliveries', deliveries);
  const delivery = deliveries.json.data[0].id;
  conforms(t, 'get', '/v1/webhook-deliveries/:id', await v1(k, `/v1/webhook-deliveries/${delivery}`));
  conforms(t, 'post', '/v1/webhook-deliveries/:id/resend', await v1(k, `/v1/webhook-deliveries/${delivery}/resend`, { method: 'POST' }));
  conforms(t, 'get', '/v1/webhook-deliveries/:id', await v1(k, `/v1/webhook-deliveries/${randomUUID()}`));
});

t.test('a settlement matches the documented schema', async (t) => {
  const merchant = await makeMerchant(ctx, { settlement: 'MANUAL' });
  const bca = (await findBankByShortCode(ctx.pool, 'BCA'))!;
  await setSettlementAccount(ctx.pool, merchant.merchant_id, { bankId: bca.id, accountNumber: '1234567890', accountName: 'PT Toko' });
  await paidOrder(stack, merchant, 100_000);
  const today = new Date(Date.now() + 7 * 3600_000).toISOString().slice(0, 10);
  await runSettlements(ctx.pool, ctx.boss, { settlementDate: today, cutoffHour: 0, merchantId: merchant.merchant_id });
  const list = await v1(merchant.api_key, '/v1/settlements');
  t.equal(list.json?.data?.length, 1, list.text);
  conforms(t, 'get', '/v1/settlements', list);
  conforms(t, 'get', '/v1/settlements/:id', await v1(merchant.api_key, `/v1/settlements/${list.json.data[0].id}`));
  t.ok(webhooks['settlement.pending'].schema.safeParse({ ...list.json.data[0], event: 'settlement.pending', event_id: randomUUID(), event_created_at: new Date().toISOString() }).success,
    'the settlement webhook body is the record plus the event, its id and time');
});

t.test('V1 errors are documented for the operation that answers them', async (t) => {
  const wallet = await makeMerchant(ctx);
  const manual = await makeMerchant(ctx, { settlement: 'MANUAL' });
  const k = wallet.api_key;
  conforms(t, 'get', '/v1/orders', await v1(null, '/v1/orders'));
  conforms(t, 'get', '/v1/orders', await v1('f'.repeat(64), '/v1/orders'));
  conforms(t, 'get', '/v1/orders/:ref_code', await v1(k, '/v1/orders/ORD-1-NOPE'));
  conforms(t, 'post', '/v1/orders', await v1(k, '/v1/orders', { body: '{"amount":' }));
  conforms(t, 'post', '/v1/orders', await v1(k, '/v1/orders', { body: { merchant_order_id: 'x', amount: 0, payment_method: 'QRIS' } }));
  conforms(t, 'post', '/v1/orders', await v1(k, '/v1/orders', { body: { merchant_order_id: 'x', amount: 10, payment_method: 'CARD' } }));
  conforms(t, 'post', '/v1/orders/:ref_code/refund', await v1(k, '/v1/orders/ORD-1-NOPE/refund', { body: {} }));
  conforms(t, 'get', '/v1/orders/:ref_code/refunds', await v1(k, '/v1/orders/ORD-1-NOPE/refunds'));
  conforms(t, 'get', '/v1/refunds', await v1(k, '/v1/refunds?status=DONE'));
  conforms(t, 'get', '/v1/refunds/:id', await v1(k, '/v1/refunds/not-a-uuid'));
  conforms(t, 'get', '/v1/refunds/:id', await v1(k, `/v1/refunds/${randomUUID()}`));
  conforms(t, 'get', '/v1/balance', await v1(manual.api_key, '/v1/balance'));
  conforms(t, 'post', '/v1/disbursements', await v1(k, '/v1/disbursements', {
    body: { idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi', amount: 5_000_000 },
  }));
  conforms(t, 'post', '/v1/disbursements', await v1(k, '/v1/disbursements', {
    body: { idempotency_key: randomUUID(), channel: 'BANK', bank_short_code: 'NOPE', account_number: '1234567890', account_name: 'Budi', amount: 10_000 },
  }));
  conforms(t, 'get', '/v1/disbursements/:id', await v1(k, '/v1/disbursements/DSB-1-NOPE'));
  conforms(t, 'get', '/v1/beneficiaries/:id', await v1(k, '/v1/beneficiaries/not-a-uuid'));
  conforms(t, 'post', '/v1/beneficiaries/:id/verify', await v1(k, `/v1/beneficiaries/${randomUUID()}/verify`, { method: 'POST' }));
  conforms(t, 'get', '/v1/disbursements/imports/:id', await v1(k, `/v1/disbursements/imports/${randomUUID()}`));
  conforms(t, 'get', '/v1/disbursements/imports', await v1(manual.api_key, '/v1/disbursements/imports'));
  conforms(t, 'get', '/v1/settlements/:id', await v1(k, `/v1/settlements/${randomUUID()}`));
  conforms(t, 'patch', '/v1/my/users/:user_id/role', await v1(k, `/v1/my/users/${randomUUID()}/role`, { method: 'PATCH', body: { role: 'ops' } }));
  conforms(t, 'get', '/v1/reports/profits', await v1(k, '/v1/reports/profits?date_from=yesterday'));
  conforms(t, 'post', '/v1/disbursements/import', await v1(k, '/v1/disbursements/import', { body: { not: 'multipart' } }));

  const viewer = await issueKey(stack, (await makeUser(stack, k, 'viewer')).id);
  const refused = await v1(viewer.api_key, '/v1/orders', { body: { merchant_order_id: 'x', amount: 10, payment_method: 'QRIS' } });
  t.equal(refused.json?.error?.code, 'FORBIDDEN');
  conforms(t, 'post', '/v1/orders', refused);
});

interface LegacyMerchant extends ProvisionedMerchant {
  privateKey: KeyObject;
}

t.test('legacy answers match the documented schemas', async (t) => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const merchant: LegacyMerchant = { ...(await makeMerchant(ctx)), privateKey };
  await setLegacyPublicKey(ctx.pool, merchant.merchant_id, publicKey.export({ type: 'spki', format: 'pem' }).toString());
  await ctx.pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 500_000, reason: 'test float' }));
  const sha512 = (text: string) => createHash('sha512').update(text).digest('hex');
  const id = merchant.legacy_client_id;
  const secret = merchant.legacy_client_secret;

  const orderId = `LGC-${randomBytes(4).toString('hex')}`;
  const create = (signature: string) => call(url, {
    path: '/api/order/create',
    body: { clientId: id, orderId, totalAmount: 25_000, paymentType: 'QRIS', signature, customerName: 'Budi', customerEmail: 'budi@example.com', customerPhone: '6281234567890' },
  });
  conforms(t, 'post', '/api/order/create', await create('0'.repeat(128)));
  const created = await create(sha512(`${id}|${orderId}|25000|${secret}`));
  t.equal(created.status, 200, created.text);
  conforms(t, 'post', '/api/order/create', created);
  conforms(t, 'post', '/api/order/create', await create(sha512(`${id}|${orderId}|25000|${secret}`)));
  conforms(t, 'post', '/api/order/query', await call(url, { path: '/api/order/query', body: { clientId: id, orderId, signature: sha512(`${id}|${orderId}|${secret}`) } }));
  conforms(t, 'post', '/api/order/query', await call(url, { path: '/api/order/query', body: { clientId: id, orderId: 'NOPE', signature: sha512(`${id}|NOPE|${secret}`) } }));

  const signed = (endpoint: string, body: Record<string, unknown>) => {
    const raw = Buffer.from(JSON.stringify({ clientId: id, ...body }));
    const hash = createHash('sha256').update(raw).digest('hex');
    const signature = sign('sha256', Buffer.from(`${id}|${secret}|${hash}`), privateKey).toString('base64');
    return call(url, { path: `/api/disbursement/${endpoint}`, headers: { 'X-SIGNATURE': signature }, body: raw });
  };
  conforms(t, 'post', '/api/disbursement/get-balance', await signed('get-balance', {}));
  const bank = await signed('create', { orderId: `LD-${randomBytes(4).toString('hex')}`, bankCode: 'BCA', accountNumber: '1234567890', accountName: 'Budi', requestAmount: 10_000 });
  t.equal(bank.status, 200, bank.text);
  conforms(t, 'post', '/api/disbursement/create', bank);
  conforms(t, 'post', '/api/disbursement/create-ewallet', await signed('create-ewallet', { orderId: `LE-${randomBytes(4).toString('hex')}`, ewalletCode: 'OVO', accountNumber: '081234567890', requestAmount: 10_000 }));
  conforms(t, 'post', '/api/disbursement/create-ewallet', await signed('create-ewallet', { orderId: `LE-${randomBytes(4).toString('hex')}`, ewalletCode: 'DANA', accountNumber: '081234567890', requestAmount: 10_000 }));
  conforms(t, 'post', '/api/disbursement/query', await signed('query', { orderId: bank.json.data.orderId }));
  conforms(t, 'post', '/api/disbursement/query', await signed('query', { orderId: 'NOPE' }));
  const unsigned = await call(url, { path: '/api/disbursement/get-balance', body: { clientId: id } });
  t.equal(unsigned.status, 401);
  conforms(t, 'post', '/api/disbursement/get-balance', unsigned);
});

const chromiumPath = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

t.test('the reference page renders offline in headless Chromium', { skip: chromiumPath ? false : 'no Chromium installed (set CHROMIUM_PATH)' }, async (t) => {
  const executablePath = chromiumPath!;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const outside: string[] = [];
  const problems: string[] = [];
  await page.route('**/*', (route) => {
    if (route.request().url().startsWith(url)) return route.continue();
    outside.push(route.request().url());
    return route.abort();
  });
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); });
  await page.goto(`${url}/docs`);
  await page.locator('.opblock-summary-path', { hasText: '/v1/orders/{ref_code}/refund' }).first().waitFor({ timeout: 15_000 });
  t.equal(await page.locator('.opblock').count(), operations.length + Object.keys(webhooks).length, 'every operation and webhook is listed');
  t.match(await page.locator('.info .title').innerText(), /Kasir merchant payment API/);
  t.same(outside, [], 'nothing is fetched from another origin');
  t.same(problems, [], 'no script errors or CSP refusals');
});

t.test('every request body example in the document is accepted by the running server', async (t) => {
  // What a client (or a property-based fuzzer) builds from the document: each field's example,
  // the required ones all present. Path parameters name real resources; legacy bodies are left
  // out (their signature fields cannot have an example that verifies).
  const receiver = await startCallbackReceiver();
  t.teardown(() => receiver.close());
  const merchant = await makeMerchant(ctx, { notifyUrl: receiver.url });
  await ctx.pool.transaction((tx) => adjustWallet(tx, { merchantId: merchant.merchant_id, adjustmentId: randomUUID(), amount: 1_000_000, reason: 'test float' }));
  const paid = await paidOrder(stack, merchant, 200_000);
  const user = await makeUser(stack, merchant.api_key, 'viewer');
  const params: Record<string, string> = { ref_code: paid.ref_code, user_id: user.id };
  let sent = 0;
  for (const op of operations.filter((o) => o.path.startsWith('/v1/') && o.body && !o.body.multipart)) {
    const { body, missing } = requestExample(op);
    t.same(missing, [], `${key(op)}: every required field has an example`);
    const res = await v1(merchant.api_key, op.path.replace(/:([a-z_]+)/g, (_, name: string) => params[name]), { method: op.method.toUpperCase(), body });
    t.ok(res.status >= 200 && res.status < 300, `${key(op)}: the document's example ${JSON.stringify(body)} is accepted: ${res.status} ${res.text.slice(0, 300)}`);
    conforms(t, op.method, op.path, res);
    sent++;
  }
  t.equal(sent, 8, 'every V1 JSON body');
});

t.test('the document says what the server enforces where a fuzzer found it looser', async (t) => {
  const doc = openApiDocument() as Record<string, any>;
  const merchant = await makeMerchant(ctx);
  const body = (path: string) => doc.paths[path].post.requestBody.content['application/json'].schema;
  t.same(body('/v1/disbursements').anyOf.map((b: { required: string[] }) => b.required),
    [['beneficiary_id'], ['channel', 'bank_short_code', 'account_number', 'account_name'], ['channel', 'ewallet_provider', 'ewallet_phone']],
    'a beneficiary_id, or a channel with the fields it needs');
  const noChannel = await v1(merchant.api_key, '/v1/disbursements', { body: { idempotency_key: randomUUID(), bank_short_code: 'BCA', account_number: '1234567890', account_name: 'Budi', amount: 10_000 } });
  t.match(noChannel.json?.error, { code: 'INVALID_BODY', message: /^channel: is required without beneficiary_id/ }, '...as the server says');
  t.same(body('/v1/orders').properties.payment_method.enum, ['QRIS'], 'payment_method is an enum');
  t.equal(body('/v1/my/users').properties.email.format, 'email', 'a team user\'s email has a format');
  const day = new RegExp(doc.components.schemas.Day.pattern);
  t.ok(day.test('1900-01-01') && day.test('9999-12-31'), 'Day: 1900 to 9999');
  t.notOk(day.test('1899-12-31') || day.test('0001-01-01'), 'Day: not before 1900');
  const early = await v1(merchant.api_key, '/v1/refunds?date_from=0001-01-01');
  t.equal(early.json?.error?.message, 'date_from: must be a date as YYYY-MM-DD from 1900-01-01 to 9999-12-31; got the string "0001-01-01"', 'the server names the range');
});

t.test('links walk create → read → act: each names an operation and fills its path parameters', async (t) => {
  const doc = openApiDocument() as Record<string, any>;
  const byId = new Map<string, { path: string; op: any }>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const op of Object.values(item)) byId.set(op.operationId, { path, op });
  }
  const linked = (path: string, status: string) => Object.entries(doc.paths[path].post.responses[status].links ?? {}) as [string, any][];
  const chains: [string, string, string[]][] = [
    ['/v1/orders', '201', ['getV1OrdersRefCode', 'postV1OrdersRefCodeRefund']],
    ['/v1/orders', '200', ['getV1OrdersRefCode', 'postV1OrdersRefCodeRefund']],
    ['/v1/orders/{ref_code}/refund', '201', ['getV1RefundsId']],
    ['/v1/disbursements', '201', ['getV1DisbursementsId']],
    ['/v1/beneficiaries', '201', ['getV1BeneficiariesId', 'postV1Disbursements']],
    ['/v1/reports/export', '201', ['getV1ReportsExportsId', 'getV1ReportsExportsIdDownload']],
  ];
  for (const [path, status, targets] of chains) {
    const links = linked(path, status);
    for (const target of targets) t.ok(links.some(([, l]) => l.operationId === target), `POST ${path} ${status} links to ${target}`);
    for (const [name, link] of links) {
      const found = byId.get(link.operationId);
      t.ok(found, `${name}: ${link.operationId} exists`);
      const wanted = [...found!.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      t.same(Object.keys(link.parameters ?? {}).sort(), wanted, `${name} fills every path parameter of ${found!.path}`);
      for (const expression of Object.values(link.parameters ?? {})) t.match(expression, /^\$response\.body#\/data\/(id|ref_code)$/, `${name}: from the created record`);
    }
  }
});

t.test('summary', async (t) => {
  const unsampled = operations.filter((o) => ![...seen].some((s) => s.startsWith(`${o.method} ${o.path} 2`)));
  t.comment(`answers validated: ${seen.size}; operations without a sampled success: ${unsampled.map((o) => key(o)).join(', ') || 'none'}`);
  t.pass();
});
